//! Command-line arguments of the shell, defined once with clap: parsing,
//! errors (naming the flag, with "did you mean" suggestions), `--help`,
//! `--version` and the `completions` scripts all come from these
//! definitions. The cluster subcommands' flags are those of the library's
//! `SchedulerOptions` and `ExecutorOptions`.

use std::ffi::OsString;

use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
#[cfg(feature = "ballista")]
use datafusion_kendall::ballista::process::{ExecutorOptions, SchedulerOptions};

/// Without the `ballista` feature the cluster subcommands take any
/// arguments and say how to get them.
#[cfg(not(feature = "ballista"))]
#[derive(Debug, clap::Args)]
struct NoBallista {
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    _args: Vec<String>,
}
#[cfg(not(feature = "ballista"))]
type SchedulerOptions = NoBallista;
#[cfg(not(feature = "ballista"))]
type ExecutorOptions = NoBallista;

/// Rows the table format shows by default (as datafusion-cli).
pub const DEFAULT_MAXROWS: usize = 40;

/// The text after the options in `--help`.
const AFTER_HELP: &str = "\
With no -c or -f, reads statements (ending with ';') from standard input, with
line editing and history when it is a terminal. Shell commands: \\? help,
\\q quit, \\d list tables, \\d NAME describe a table. SHOW ALL lists every
setting (kendall.* included); SHOW ALL VERBOSE adds their descriptions.
Ctrl-C cancels the running query (and keeps the session); Ctrl-D quits.

Example:
  datafusion-kendall -c \"SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') \\
      WHERE abs(tau) >= 0.8 ORDER BY tau DESC LIMIT 10\"";

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "datafusion-kendall",
    bin_name = "datafusion-kendall",
    version,
    about = "A SQL shell with the kendall_all_pairs table function",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// The shell's own flags.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Run SQL (one or more statements); repeatable, in order with --file
    #[arg(
        short = 'c',
        long = "command",
        value_name = "SQL",
        allow_hyphen_values = true
    )]
    commands: Vec<String>,
    /// Run the SQL statements in FILE; repeatable
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        allow_hyphen_values = true
    )]
    files: Vec<String>,
    /// Output format
    #[arg(long, value_enum, ignore_case = true, default_value_t = Format::Table)]
    format: Format,
    /// Rows shown by the table format (`inf` for all); the query still runs
    /// to the end and the total is reported
    #[arg(long, value_name = "N|inf", default_value_t = MaxRows(Some(DEFAULT_MAXROWS)),
          value_parser = parse_maxrows, allow_negative_numbers = true)]
    maxrows: MaxRows,
    /// Print results only: no row counts, timings, COPY counts or progress bar
    #[arg(short, long)]
    quiet: bool,
    /// DataFusion target partitions [default: number of cores]
    #[arg(short, long, value_name = "N", value_parser = parse_positive,
          allow_negative_numbers = true)]
    partitions: Option<usize>,
    /// Run queries on the Ballista cluster whose scheduler is at URL
    /// (df://host:port); needs the `ballista` feature
    #[arg(long, value_name = "URL")]
    remote: Option<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// A Ballista scheduler that knows kendall_all_pairs' plans (cargo feature `ballista`)
    Scheduler(SchedulerOptions),
    /// A Ballista executor that runs kendall_all_pairs' tasks (cargo feature `ballista`)
    Executor(ExecutorOptions),
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// How result rows are written to standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table of at most `--maxrows` rows.
    Table,
    /// Comma-separated values with a header, streamed.
    Csv,
    /// Tab-separated values with a header, streamed.
    Tsv,
    /// One JSON array of objects, streamed.
    Json,
    /// One JSON object per line, streamed.
    #[value(name = "ndjson", alias = "nd-json")]
    NdJson,
}

/// `--maxrows`: a count, or `None` for all rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MaxRows(Option<usize>);

impl std::fmt::Display for MaxRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("inf"),
        }
    }
}

fn parse_maxrows(v: &str) -> Result<MaxRows, String> {
    match v.to_ascii_lowercase().as_str() {
        "inf" | "none" | "all" => Ok(MaxRows(None)),
        n => n
            .parse()
            .map(|n| MaxRows(Some(n)))
            .map_err(|_| "must be a whole number or 'inf'".to_string()),
    }
}

fn parse_positive(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| "must be a positive integer".to_string())
}

/// Where SQL comes from.
#[derive(Debug)]
pub enum Source {
    /// `-c SQL`.
    Command(String),
    /// `-f FILE`.
    File(String),
}

/// Parsed arguments of a shell run.
#[derive(Debug)]
pub struct Args {
    /// `-c` and `-f` in the order given.
    pub sources: Vec<Source>,
    pub format: Format,
    /// Rows the table format shows; `None` for all.
    pub maxrows: Option<usize>,
    pub quiet: bool,
    pub partitions: Option<usize>,
    /// `--remote`: a Ballista scheduler's URL.
    pub remote: Option<String>,
}

/// What the command line asks for (`--help` and `--version` are answered
/// by clap, as an `Err` whose `exit` prints them).
#[derive(Debug)]
pub enum Parsed {
    Run(Args),
    /// `completions SHELL`.
    Completions(clap_complete::Shell),
    /// `scheduler ...`.
    #[cfg(feature = "ballista")]
    Scheduler(SchedulerOptions),
    /// `executor ...`.
    #[cfg(feature = "ballista")]
    Executor(ExecutorOptions),
}

/// Parses the command line, program name first (as `std::env::args_os`).
pub fn parse_args<I, T>(args: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let invalid = |msg: String| command().error(clap::error::ErrorKind::ValueValidation, msg);
    match cli.command {
        None => Ok(Parsed::Run(Args {
            sources: sources(&matches),
            format: cli.run.format,
            maxrows: cli.run.maxrows.0,
            quiet: cli.run.quiet,
            partitions: cli.run.partitions,
            remote: cli.run.remote,
        })),
        Some(Command::Completions { shell }) => Ok(Parsed::Completions(shell)),
        #[cfg(feature = "ballista")]
        Some(Command::Scheduler(o)) => match o.validate() {
            Ok(()) => Ok(Parsed::Scheduler(o)),
            Err(e) => Err(invalid(format!("scheduler: {e}"))),
        },
        #[cfg(feature = "ballista")]
        Some(Command::Executor(o)) => match o.validate() {
            Ok(()) => Ok(Parsed::Executor(o)),
            Err(e) => Err(invalid(format!("executor: {e}"))),
        },
        #[cfg(not(feature = "ballista"))]
        Some(Command::Scheduler(_) | Command::Executor(_)) => Err(invalid(
            "this build has no Ballista support: build with \
             `cargo build --release --features ballista`"
                .to_string(),
        )),
    }
}

/// The command line's definition. The cluster subcommands' flags take
/// negative numbers as values, so that `--bind-port -5` is refused as a bad
/// value of `--bind-port`, not as an unknown flag `-5`.
fn command() -> clap::Command {
    Cli::command().mut_subcommands(|c| c.allow_negative_numbers(true))
}

/// `-c` and `-f` values in the order they were given.
fn sources(matches: &ArgMatches) -> Vec<Source> {
    let mut sources = Vec::new();
    for (id, make) in [
        ("commands", Source::Command as fn(String) -> Source),
        ("files", Source::File),
    ] {
        if let (Some(at), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id)) {
            sources.extend(at.zip(values.cloned().map(make)));
        }
    }
    sources.sort_by_key(|(at, _)| *at);
    sources.into_iter().map(|(_, s)| s).collect()
}

/// Writes the completion script for `shell` to standard output (a closed
/// pipe ends it quietly).
pub fn print_completions(shell: clap_complete::Shell) {
    use std::io::Write;
    let mut command = command();
    let name = command.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    let _ = std::io::stdout().write_all(&script);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Parsed, String> {
        parse_args(std::iter::once("datafusion-kendall").chain(args.iter().copied()))
            .map_err(|e| e.to_string())
    }

    fn run(args: &[&str]) -> Args {
        match parse(args).unwrap() {
            Parsed::Run(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[cfg(not(feature = "ballista"))]
    #[test]
    fn cluster_subcommands_need_the_feature() {
        let err = parse(&["scheduler", "--bind-port", "1"]).unwrap_err();
        assert!(err.contains("--features ballista"), "{err}");
    }

    #[test]
    fn definitions_are_consistent() {
        command().debug_assert();
    }

    #[test]
    fn parses_flags() {
        let a = run(&[
            "-c",
            "SELECT 1",
            "--format=csv",
            "-q",
            "-f",
            "x.sql",
            "-p",
            "3",
            "--command=-- a comment\nSELECT 2",
        ]);
        assert_eq!(a.format, Format::Csv);
        assert!(a.quiet);
        assert_eq!(a.partitions, Some(3));
        assert_eq!(a.maxrows, Some(DEFAULT_MAXROWS));
        assert!(matches!(&a.sources[0], Source::Command(s) if s == "SELECT 1"));
        assert!(matches!(&a.sources[1], Source::File(s) if s == "x.sql"));
        assert!(matches!(&a.sources[2], Source::Command(s) if s.starts_with("-- a")));
        let err = parse(&["--format", "xml"]).unwrap_err();
        assert!(err.contains("'xml'") && err.contains("--format"), "{err}");
        assert!(err.contains("table, csv, tsv, json, ndjson"), "{err}");
        let err = parse(&["-c"]).unwrap_err();
        assert!(
            err.contains("a value is required for '--command <SQL>'"),
            "{err}"
        );
        let err = parse(&["-p", "0"]).unwrap_err();
        assert!(
            err.contains("--partitions <N>") && err.contains("positive"),
            "{err}"
        );
        assert_eq!(run(&["--maxrows", "inf"]).maxrows, None);
        assert_eq!(run(&["--maxrows=7"]).maxrows, Some(7));
        let err = parse(&["--maxrows", "-1"]).unwrap_err();
        assert!(err.contains("--maxrows") && err.contains("'inf'"), "{err}");
        assert_eq!(run(&["--format", "TSV"]).format, Format::Tsv);
        assert_eq!(run(&["--format", "nd-json"]).format, Format::NdJson);
        assert_eq!(
            run(&["--remote", "df://127.0.0.1:50050"]).remote.as_deref(),
            Some("df://127.0.0.1:50050")
        );
        let err = parse(&["--quite"]).unwrap_err();
        assert!(
            err.contains("'--quite'") && err.contains("'--quiet'"),
            "{err}"
        );
        assert!(matches!(
            parse(&["completions", "zsh"]),
            Ok(Parsed::Completions(clap_complete::Shell::Zsh))
        ));
        assert!(
            parse(&["completions", "tcsh"])
                .unwrap_err()
                .contains("bash")
        );
    }

    #[test]
    fn help_and_version_come_from_the_definitions() {
        let help = Cli::command().render_help().to_string();
        for needle in [
            "-c, --command <SQL>",
            "--maxrows <N|inf>",
            "[default: 40]",
            "[possible values: table, csv, tsv, json, ndjson]",
            "scheduler",
            "completions",
            "\\q quit",
        ] {
            assert!(help.contains(needle), "{needle}:\n{help}");
        }
        for (flag, kind) in [
            ("--help", clap::error::ErrorKind::DisplayHelp),
            ("-V", clap::error::ErrorKind::DisplayVersion),
        ] {
            let e = parse_args(["datafusion-kendall", flag]).unwrap_err();
            assert_eq!(e.kind(), kind);
        }
    }
}

#[cfg(all(test, feature = "ballista"))]
mod cluster_tests {
    use datafusion_kendall::ballista::process::{
        DEFAULT_EXECUTOR_TIMEOUT_SECONDS, DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS,
        DEFAULT_HEARTBEAT_INTERVAL_SECONDS, ExecutorOptions, SchedulerOptions,
    };

    use super::{Parsed, parse_args};

    fn parse(args: &[&str]) -> Result<Parsed, String> {
        parse_args(std::iter::once("datafusion-kendall").chain(args.iter().copied()))
            .map_err(|e| e.to_string())
    }

    /// `SUB --help`, its whitespace collapsed (clap wraps lines).
    fn help(sub: &str) -> String {
        let help = parse_args(["datafusion-kendall", sub, "--help"])
            .unwrap_err()
            .to_string();
        help.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn parses_cluster_subcommands() {
        let Ok(Parsed::Scheduler(s)) = parse(&[
            "scheduler",
            "--bind-host",
            "0.0.0.0",
            "--bind-port=50060",
            "--executor-timeout-seconds",
            "20",
        ]) else {
            panic!("scheduler not parsed");
        };
        assert_eq!((s.bind_host.as_str(), s.bind_port), ("0.0.0.0", 50060));
        assert_eq!(s.executor_timeout_seconds, 20);
        let Ok(Parsed::Executor(e)) = parse(&[
            "executor",
            "--scheduler-port",
            "50060",
            "--bind-port",
            "50061",
            "--bind-grpc-port",
            "50062",
            "--concurrent-tasks",
            "1",
        ]) else {
            panic!("executor not parsed");
        };
        assert_eq!(
            (e.scheduler_port, e.bind_port, e.bind_grpc_port),
            (50060, 50061, 50062)
        );
        assert_eq!(e.concurrent_tasks, 1);
        assert_eq!(e.heartbeat_interval_seconds, 2);
        let err = parse(&["executor", "--bind-port", "x"]).unwrap_err();
        assert!(
            err.contains("invalid value 'x' for '--bind-port <PORT>'"),
            "{err}"
        );
        let err = parse(&["scheduler", "--bogus", "1"]).unwrap_err();
        assert!(err.contains("unexpected argument '--bogus'"), "{err}");
        let err = parse(&["executor", "--bind-prot", "1"]).unwrap_err();
        assert!(err.contains("'--bind-port'"), "{err}");
    }

    /// With no flags, the options are exactly the documented defaults.
    #[test]
    fn defaults_are_the_options_defaults() {
        let Ok(Parsed::Scheduler(s)) = parse(&["scheduler"]) else {
            panic!("scheduler not parsed");
        };
        assert_eq!(s, SchedulerOptions::default());
        // The defaults docs/cluster.md states.
        assert_eq!(
            (s.bind_host.as_str(), s.bind_port, s.external_host.as_str()),
            ("127.0.0.1", 50050, "localhost")
        );
        assert_eq!(s.executor_timeout_seconds, DEFAULT_EXECUTOR_TIMEOUT_SECONDS);
        assert_eq!(s.expire_dead_executor_interval_seconds, 2);
        assert_eq!(
            (s.task_max_failures, s.no_executors_grace_period_seconds),
            (4, None)
        );
        let Ok(Parsed::Executor(e)) = parse(&["executor"]) else {
            panic!("executor not parsed");
        };
        assert_eq!(e, ExecutorOptions::default());
        assert_eq!(
            (
                e.scheduler_host.as_str(),
                e.scheduler_port,
                e.bind_port,
                e.bind_grpc_port
            ),
            ("localhost", 50050, 50051, 50052)
        );
        assert_eq!(
            (e.external_host.as_deref(), e.work_dir.as_deref()),
            (None, None)
        );
        assert_eq!(
            e.heartbeat_interval_seconds,
            DEFAULT_HEARTBEAT_INTERVAL_SECONDS
        );
        assert!(e.concurrent_tasks >= 1);
        let scheduler = help("scheduler");
        for needle in [
            "--bind-port <PORT>".to_string(),
            "[default: 50050]".to_string(),
            format!("[default: {DEFAULT_EXECUTOR_TIMEOUT_SECONDS}]"),
            format!("timeout [default: {DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS}]"),
            format!("(default {DEFAULT_HEARTBEAT_INTERVAL_SECONDS} s)"),
            "[default: the executor timeout]".to_string(),
        ] {
            assert!(scheduler.contains(&needle), "{needle}:\n{scheduler}");
        }
        let executor = help("executor");
        for needle in [
            "--executor-heartbeat-interval-seconds <S>".to_string(),
            format!("[default: {DEFAULT_HEARTBEAT_INTERVAL_SECONDS}]"),
            "[default: 50051]".to_string(),
            "[default: 50052]".to_string(),
        ] {
            assert!(executor.contains(&needle), "{needle}:\n{executor}");
        }
    }

    /// The liveness flags: parsed values, and clear errors for values that
    /// cannot work.
    #[test]
    fn parses_liveness_flags() {
        let Ok(Parsed::Scheduler(s)) = parse(&[
            "scheduler",
            "--executor-timeout-seconds=30",
            "--expire-dead-executor-interval-seconds",
            "5",
            "--no-executors-grace-period-seconds",
            "0",
            "--task-max-failures",
            "2",
        ]) else {
            panic!("scheduler not parsed");
        };
        assert_eq!(
            (
                s.executor_timeout_seconds,
                s.expire_dead_executor_interval_seconds,
                s.no_executors_grace_period_seconds,
                s.task_max_failures
            ),
            (30, 5, Some(0), 2)
        );
        let Ok(Parsed::Executor(e)) =
            parse(&["executor", "--executor-heartbeat-interval-seconds", "7"])
        else {
            panic!("executor not parsed");
        };
        assert_eq!(e.heartbeat_interval_seconds, 7);
        for (args, needle) in [
            (
                &["scheduler", "--executor-timeout-seconds", "0"][..],
                "--executor-timeout-seconds must be more than the executors' heartbeat",
            ),
            (
                &["scheduler", "--executor-timeout-seconds", "2"],
                "healthy executors would be declared dead",
            ),
            (
                &["scheduler", "--executor-timeout-seconds", "ten"],
                "invalid value 'ten' for '--executor-timeout-seconds <S>'",
            ),
            (
                &["scheduler", "--executor-timeout-seconds", "-5"],
                "invalid value '-5' for '--executor-timeout-seconds <S>'",
            ),
            (
                &["scheduler", "--expire-dead-executor-interval-seconds", "0"],
                "--expire-dead-executor-interval-seconds must be at least 1",
            ),
            (
                &["scheduler", "--expire-dead-executor-interval-seconds", "10"],
                "--executor-timeout-seconds (10) must be more than --expire-dead-executor-interval-seconds (10)",
            ),
            (
                &["scheduler", "--no-executors-grace-period-seconds", "1.5"],
                "invalid value '1.5' for '--no-executors-grace-period-seconds <S>'",
            ),
            (
                &["scheduler", "--task-max-failures", "0"],
                "--task-max-failures must be at least 1",
            ),
            (
                &["executor", "--executor-heartbeat-interval-seconds", "0"],
                "--executor-heartbeat-interval-seconds must be at least 1",
            ),
            (
                &["executor", "--executor-heartbeat-interval-seconds"],
                "a value is required for '--executor-heartbeat-interval-seconds <S>'",
            ),
        ] {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
