//! Command-line arguments of the shell.

/// Help text (`--help`).
pub const USAGE: &str = "\
datafusion-kendall: a SQL shell with the kendall_all_pairs table function

Usage: datafusion-kendall [OPTIONS]

Options:
  -c, --command SQL      Run SQL (one or more statements); repeatable
  -f, --file FILE        Run the SQL statements in FILE; repeatable
      --format FORMAT    Output format: table (default), csv, tsv, json or ndjson
      --maxrows N|inf    Rows shown by the table format (default 40); the query
                         still runs to the end and the total is reported
  -q, --quiet            Print results only: no row counts, timings, COPY counts
                         or progress bar
  -p, --partitions N     DataFusion target partitions (default: number of cores)
      --remote URL       Run queries on the Ballista cluster whose scheduler is
                         at URL (df://host:port); needs the `ballista` feature
  -h, --help             Print this help
  -V, --version          Print the version

With no -c or -f, reads statements (ending with ';') from standard input, with
line editing and history when it is a terminal. Shell commands: \\? help,
\\q quit, \\d list tables, \\d NAME describe a table. SHOW ALL lists every
setting (kendall.* included); SHOW ALL VERBOSE adds their descriptions.
Ctrl-C cancels the running query (and keeps the session); Ctrl-D quits.

Cluster processes (cargo feature `ballista`; `SUBCOMMAND --help` for their options):
  datafusion-kendall scheduler [OPTIONS]   a Ballista scheduler with our codecs
  datafusion-kendall executor [OPTIONS]    a Ballista executor with our codecs

Example:
  datafusion-kendall -c \"SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') \\
      WHERE abs(tau) >= 0.8 ORDER BY tau DESC LIMIT 10\"";

/// How result rows are written to standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    NdJson,
}

/// Where SQL comes from.
#[derive(Debug)]
pub enum Source {
    /// `-c SQL`.
    Command(String),
    /// `-f FILE`.
    File(String),
}

/// Parsed arguments.
#[derive(Debug)]
pub struct Args {
    pub sources: Vec<Source>,
    pub format: Format,
    /// Rows the table format shows; `None` for all.
    pub maxrows: Option<usize>,
    pub quiet: bool,
    pub partitions: Option<usize>,
    /// `--remote`: a Ballista scheduler's URL.
    pub remote: Option<String>,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
    /// `scheduler ...`.
    #[cfg(feature = "ballista")]
    Scheduler(datafusion_kendall::ballista::process::SchedulerOptions),
    /// `executor ...`.
    #[cfg(feature = "ballista")]
    Executor(datafusion_kendall::ballista::process::ExecutorOptions),
    /// `scheduler --help` or `executor --help`.
    SubcommandHelp(&'static str),
}

/// Help text of `scheduler --help`.
pub const SCHEDULER_USAGE: &str = "\
datafusion-kendall scheduler: a Ballista scheduler that knows kendall_all_pairs' plans

Usage: datafusion-kendall scheduler [OPTIONS]

Options (named as ballista-scheduler's):
      --bind-host HOST                   Address to listen on (default 127.0.0.1)
      --bind-port PORT                   Port to listen on (default 50050)
      --external-host HOST               How executors reach it (default localhost)
      --task-max-failures N              Attempts of a task before its query fails
                                         (default 4)

Liveness (our defaults, not Ballista's 180 s / 15 s: a killed executor's
tasks run again elsewhere about 10 s after it died, not 3 minutes):
      --executor-timeout-seconds S       An executor with no heartbeat for S
                                         seconds is dead: it is dropped (and told
                                         to stop) and its tasks, finished ones
                                         whose output it held too, run again on
                                         the others (default 10). Keep it several
                                         times the executors' heartbeat interval
                                         (default 2 s) and more than the check
                                         interval
      --expire-dead-executor-interval-seconds S
                                         How often executors are checked for that
                                         timeout (default 2)
      --no-executors-grace-period-seconds S
                                         Once the last executor is gone, running
                                         queries wait S seconds for one to
                                         (re)register, then fail; 0 fails them at
                                         once (default: the executor timeout)";

/// Help text of `executor --help`.
pub const EXECUTOR_USAGE: &str = "\
datafusion-kendall executor: a Ballista executor that runs kendall_all_pairs' tasks

Usage: datafusion-kendall executor [OPTIONS]

Options (named as ballista-executor's):
      --scheduler-host HOST              The scheduler (default localhost)
      --scheduler-port PORT              Its port (default 50050)
      --bind-host HOST                   Address to listen on (default 127.0.0.1)
      --bind-port PORT                   Arrow Flight port, results are fetched
                                         from it (default 50051)
      --bind-grpc-port PORT              gRPC port (default 50052)
      --external-host HOST               How others reach it (default: bind host)
      --concurrent-tasks N               Task slots (default: number of cores)
      --work-dir DIR                     Where shuffle files go (default: a
                                         temporary directory)
      --executor-heartbeat-interval-seconds S
                                         How often it tells the scheduler it is
                                         alive, also while busy (default 2; keep
                                         it well under the scheduler's
                                         --executor-timeout-seconds, default 10).
                                         After 5 failed heartbeats in a row (no
                                         scheduler for about 5 intervals) the
                                         executor stops itself";

/// Rows the table format shows by default (as datafusion-cli).
pub const DEFAULT_MAXROWS: usize = 40;

/// Parses the arguments after the program name.
pub fn parse_args(args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let mut args = args.peekable();
    match args.peek().map(String::as_str) {
        Some("scheduler") => {
            args.next();
            return parse_scheduler(args);
        }
        Some("executor") => {
            args.next();
            return parse_executor(args);
        }
        _ => {}
    }
    let mut parsed = Args {
        sources: Vec::new(),
        format: Format::Table,
        maxrows: Some(DEFAULT_MAXROWS),
        quiet: false,
        partitions: None,
        remote: None,
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-c" | "--command" => parsed.sources.push(Source::Command(value("--command")?)),
            "-f" | "--file" => parsed.sources.push(Source::File(value("--file")?)),
            "--format" => {
                parsed.format = match value("--format")?.to_ascii_lowercase().as_str() {
                    "table" => Format::Table,
                    "csv" => Format::Csv,
                    "tsv" => Format::Tsv,
                    "json" => Format::Json,
                    "ndjson" | "nd-json" => Format::NdJson,
                    other => {
                        return Err(format!(
                            "unknown format '{other}' (table, csv, tsv, json, ndjson)"
                        ));
                    }
                }
            }
            "--maxrows" => {
                let v = value("--maxrows")?;
                parsed.maxrows = match v.to_ascii_lowercase().as_str() {
                    "inf" | "none" | "all" => None,
                    n => Some(n.parse::<usize>().map_err(|_| {
                        format!("--maxrows must be a whole number or 'inf', got '{v}'")
                    })?),
                };
            }
            "-q" | "--quiet" => parsed.quiet = true,
            "-p" | "--partitions" => {
                let v = value("--partitions")?;
                let n =
                    v.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("--partitions must be a positive integer, got '{v}'")
                    })?;
                parsed.partitions = Some(n);
            }
            "--remote" => parsed.remote = Some(value("--remote")?),
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Parsed::Run(parsed))
}

/// The flags of a subcommand as (flag, value) pairs; `None` for `--help`.
fn flag_values(
    mut args: impl Iterator<Item = String>,
) -> Result<Option<Vec<(String, String)>>, String> {
    let mut pairs = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (flag, value) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), v.to_string()),
            _ if arg.starts_with("--") => {
                let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
                (arg, value)
            }
            _ => return Err(format!("unknown argument '{arg}'")),
        };
        pairs.push((flag, value));
    }
    Ok(Some(pairs))
}

/// `value` of `flag` as a number.
#[cfg_attr(not(feature = "ballista"), allow(dead_code))]
fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} must be a whole number, got '{value}'"))
}

/// Without the `ballista` feature, the cluster subcommands say how to get them.
#[cfg(not(feature = "ballista"))]
const NO_BALLISTA: &str = "this build has no Ballista support: build with \
    `cargo build --release --features ballista`";

fn parse_scheduler(args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let Some(flags) = flag_values(args)? else {
        return Ok(Parsed::SubcommandHelp(SCHEDULER_USAGE));
    };
    #[cfg(feature = "ballista")]
    {
        let mut o = datafusion_kendall::ballista::process::SchedulerOptions::default();
        for (flag, v) in flags {
            match flag.as_str() {
                "--bind-host" => o.bind_host = v,
                "--bind-port" => o.bind_port = number(&flag, &v)?,
                "--external-host" => o.external_host = v,
                "--executor-timeout-seconds" => o.executor_timeout_seconds = number(&flag, &v)?,
                "--expire-dead-executor-interval-seconds" => {
                    o.expire_dead_executor_interval_seconds = number(&flag, &v)?
                }
                "--no-executors-grace-period-seconds" => {
                    o.no_executors_grace_period_seconds = Some(number(&flag, &v)?)
                }
                "--task-max-failures" => o.task_max_failures = number(&flag, &v)?,
                other => return Err(format!("scheduler: unknown option '{other}'")),
            }
        }
        o.validate().map_err(|e| format!("scheduler: {e}"))?;
        Ok(Parsed::Scheduler(o))
    }
    #[cfg(not(feature = "ballista"))]
    {
        let _ = flags;
        Err(NO_BALLISTA.to_string())
    }
}

fn parse_executor(args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let Some(flags) = flag_values(args)? else {
        return Ok(Parsed::SubcommandHelp(EXECUTOR_USAGE));
    };
    #[cfg(feature = "ballista")]
    {
        let mut o = datafusion_kendall::ballista::process::ExecutorOptions::default();
        for (flag, v) in flags {
            match flag.as_str() {
                "--scheduler-host" => o.scheduler_host = v,
                "--scheduler-port" => o.scheduler_port = number(&flag, &v)?,
                "--bind-host" => o.bind_host = v,
                "--bind-port" => o.bind_port = number(&flag, &v)?,
                "--bind-grpc-port" => o.bind_grpc_port = number(&flag, &v)?,
                "--external-host" => o.external_host = Some(v),
                "--concurrent-tasks" => o.concurrent_tasks = number(&flag, &v)?,
                "--work-dir" => o.work_dir = Some(v),
                "--executor-heartbeat-interval-seconds" => {
                    o.heartbeat_interval_seconds = number(&flag, &v)?
                }
                other => return Err(format!("executor: unknown option '{other}'")),
            }
        }
        o.validate().map_err(|e| format!("executor: {e}"))?;
        Ok(Parsed::Executor(o))
    }
    #[cfg(not(feature = "ballista"))]
    {
        let _ = flags;
        Err(NO_BALLISTA.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Parsed, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    fn run(args: &[&str]) -> Args {
        match parse(args).unwrap() {
            Parsed::Run(a) => a,
            other => panic!("{other:?}"),
        }
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
        ]);
        assert_eq!(a.format, Format::Csv);
        assert!(a.quiet);
        assert_eq!(a.partitions, Some(3));
        assert_eq!(a.maxrows, Some(DEFAULT_MAXROWS));
        assert!(matches!(&a.sources[0], Source::Command(s) if s == "SELECT 1"));
        assert!(matches!(&a.sources[1], Source::File(s) if s == "x.sql"));
        assert!(matches!(parse(&["--help"]), Ok(Parsed::Help)));
        assert!(matches!(parse(&["-V"]), Ok(Parsed::Version)));
        assert!(parse(&["--format", "xml"]).unwrap_err().contains("xml"));
        assert!(parse(&["-c"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["-p", "0"]).is_err());
        assert_eq!(run(&["--maxrows", "inf"]).maxrows, None);
        assert_eq!(run(&["--maxrows=7"]).maxrows, Some(7));
        assert!(
            parse(&["--maxrows", "-1"])
                .unwrap_err()
                .contains("--maxrows")
        );
        assert_eq!(run(&["--format", "tsv"]).format, Format::Tsv);
        assert_eq!(
            run(&["--remote", "df://127.0.0.1:50050"]).remote.as_deref(),
            Some("df://127.0.0.1:50050")
        );
    }

    #[test]
    fn parses_cluster_subcommands() {
        assert!(matches!(
            parse(&["scheduler", "--help"]),
            Ok(Parsed::SubcommandHelp(SCHEDULER_USAGE))
        ));
        assert!(matches!(
            parse(&["executor", "-h"]),
            Ok(Parsed::SubcommandHelp(EXECUTOR_USAGE))
        ));
        #[cfg(feature = "ballista")]
        {
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
            assert!(err.contains("--bind-port must be a whole number"), "{err}");
            let err = parse(&["scheduler", "--bogus", "1"]).unwrap_err();
            assert!(err.contains("unknown option '--bogus'"), "{err}");
        }
        #[cfg(not(feature = "ballista"))]
        assert!(
            parse(&["scheduler"])
                .unwrap_err()
                .contains("--features ballista")
        );
    }

    /// The liveness flags: our defaults (also in the help text), parsed
    /// values, and clear errors for values that cannot work.
    #[cfg(feature = "ballista")]
    #[test]
    fn parses_liveness_flags() {
        use datafusion_kendall::ballista::process::{
            DEFAULT_EXECUTOR_TIMEOUT_SECONDS, DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS,
            DEFAULT_HEARTBEAT_INTERVAL_SECONDS,
        };
        let Ok(Parsed::Scheduler(s)) = parse(&["scheduler"]) else {
            panic!("scheduler not parsed");
        };
        assert_eq!(s.executor_timeout_seconds, DEFAULT_EXECUTOR_TIMEOUT_SECONDS);
        assert_eq!(
            s.expire_dead_executor_interval_seconds,
            DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS
        );
        assert_eq!(s.no_executors_grace_period_seconds, None);
        for needle in [
            format!("(default {DEFAULT_EXECUTOR_TIMEOUT_SECONDS})."),
            format!("timeout (default {DEFAULT_EXPIRE_DEAD_EXECUTOR_INTERVAL_SECONDS})"),
            format!("(default {DEFAULT_HEARTBEAT_INTERVAL_SECONDS} s)"),
        ] {
            assert!(SCHEDULER_USAGE.contains(&needle), "{needle}");
        }
        assert!(
            EXECUTOR_USAGE.contains(&format!("(default {DEFAULT_HEARTBEAT_INTERVAL_SECONDS};"))
        );
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
                "--executor-timeout-seconds must be a whole number, got 'ten'",
            ),
            (
                &["scheduler", "--executor-timeout-seconds", "-5"],
                "must be a whole number, got '-5'",
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
                "--no-executors-grace-period-seconds must be a whole number",
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
                "--executor-heartbeat-interval-seconds needs a value",
            ),
        ] {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
