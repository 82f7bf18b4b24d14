//! `datafusion-kendall`: a SQL shell with `kendall_all_pairs` registered.
//!
//! ```text
//! datafusion-kendall -c "SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') LIMIT 5"
//! datafusion-kendall -f sql/network_export.sql
//! datafusion-kendall            # interactive: statements end with ';'
//! ```
//!
//! As `datafusion-cli` does: line editing and history, `\q` `\d` `\?`,
//! `SHOW ALL`, a table capped at `--maxrows` rows, csv/tsv/json streamed,
//! Ctrl-C cancels the running query and keeps the session, a closed pipe
//! ends quietly. Beyond it: a progress bar for pair computations, and the
//! first rows of a large result shown as soon as they are there.

mod args;
mod export;
mod print;
mod progress;
mod repl;
mod staging;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use datafusion_kendall::input::OnDemandStores;
use futures::StreamExt;

use args::{Args, Format, Parsed, Source};
use print::{Printed, Stdout, print_stream};
use progress::ProgressBar;
use staging::Staging;

/// Exit code after Ctrl-C, as shells report a process ended by SIGINT.
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    // Our runtime, whose workers see Ctrl-C and the progress bar's ticks
    // within a fraction of a second while they compute pairs.
    match datafusion_kendall::pace::runtime_builder().build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("datafusion-kendall: could not start the tokio runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The shell: a cluster process, or statements from files, `-c` or the
/// terminal.
async fn run() -> ExitCode {
    let args = match args::parse_args(std::env::args_os()) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Completions(shell)) => {
            args::print_completions(shell);
            return ExitCode::SUCCESS;
        }
        #[cfg(feature = "ballista")]
        Ok(Parsed::Scheduler(options)) => {
            return cluster_process(
                "scheduler",
                datafusion_kendall::ballista::process::run_scheduler(options),
            )
            .await;
        }
        #[cfg(feature = "ballista")]
        Ok(Parsed::Executor(options)) => {
            return cluster_process(
                "executor",
                datafusion_kendall::ballista::process::run_executor(options),
            )
            .await;
        }
        // --help and --version (exit code 0, on stdout) and usage errors
        // (exit code 2, naming the flag, on stderr).
        Err(e) => e.exit(),
    };
    let mut config = datafusion_kendall::with_kendall_options(SessionConfig::new())
        // SHOW ALL, SHOW TABLES, \d and information_schema.df_settings.
        .with_information_schema(true);
    if let Some(p) = args.partitions {
        config = config.with_target_partitions(p);
    }
    let ctx = match context(config, args.remote.as_deref()).await {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let shell = Shell::new(ctx, &args);
    if args.sources.is_empty() {
        return repl::run(&shell).await;
    }
    for source in &args.sources {
        let sql = match source {
            Source::Command(sql) => sql.clone(),
            Source::File(path) => match std::fs::read_to_string(path) {
                Ok(sql) => sql,
                Err(e) => {
                    eprintln!("Error: cannot read '{path}': {e}");
                    return ExitCode::FAILURE;
                }
            },
        };
        match shell.run(&sql).await {
            Ok(()) => {}
            Err(stop) => return stop.report(),
        }
    }
    ExitCode::SUCCESS
}

/// The shell's session: local, or (`--remote`) a Ballista cluster's client.
/// Plain file paths work as table names (`SELECT * FROM 'net.parquet'`).
async fn context(
    config: SessionConfig,
    remote: Option<&str>,
) -> datafusion::error::Result<SessionContext> {
    let Some(url) = remote else {
        // Object stores on demand: a `COPY ... TO 's3://...'` or
        // `SELECT * FROM 's3://.../net/'` opens its store as a source does.
        let runtime = RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::new(OnDemandStores::default()))
            .build_arc()?;
        let ctx = SessionContext::new_with_config_rt(config, runtime).enable_url_table();
        datafusion_kendall::register(&ctx)?;
        return Ok(ctx);
    };
    #[cfg(feature = "ballista")]
    {
        let ctx = datafusion_kendall::ballista::remote_context(url, config).await?;
        Ok(ctx.enable_url_table())
    }
    #[cfg(not(feature = "ballista"))]
    Err(DataFusionError::Configuration(format!(
        "--remote {url}: this build has no Ballista support; build with \
         `cargo build --release --features ballista`"
    )))
}

/// Runs a cluster process until it ends; an error if it could not start.
#[cfg(feature = "ballista")]
async fn cluster_process(
    what: &str,
    process: impl std::future::Future<Output = datafusion::error::Result<()>>,
) -> ExitCode {
    match process.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why a statement did not run to its end.
#[derive(Debug)]
pub enum Stop {
    /// It failed.
    Error(DataFusionError),
    /// Ctrl-C cancelled it.
    Interrupted,
    /// Standard output is a closed pipe (`| head`): nothing more to do.
    BrokenPipe,
}

impl From<DataFusionError> for Stop {
    fn from(e: DataFusionError) -> Self {
        Stop::Error(e)
    }
}

impl Stop {
    /// Says what happened on stderr (nothing for a closed pipe) and gives
    /// the exit code of a non-interactive run.
    pub fn report(self) -> ExitCode {
        match self {
            Stop::Error(e) => {
                eprintln!("Error: {e}");
                ExitCode::FAILURE
            }
            Stop::Interrupted => {
                eprintln!(
                    "Query cancelled (Ctrl-C): its output is incomplete; a COPY that was \
                     running left its target as it was."
                );
                ExitCode::from(EXIT_INTERRUPTED)
            }
            Stop::BrokenPipe => ExitCode::SUCCESS,
        }
    }
}

/// Whether `statement` lists settings or schema (`SHOW ...`, `DESCRIBE`).
fn is_listing(statement: &DFStatement) -> bool {
    match statement {
        DFStatement::Statement(s) => matches!(
            **s,
            SqlStatement::ShowVariable { .. }
                | SqlStatement::ShowTables { .. }
                | SqlStatement::ShowColumns { .. }
                | SqlStatement::ShowFunctions { .. }
                | SqlStatement::ExplainTable { .. }
        ),
        _ => false,
    }
}

/// A session and how to print its results.
pub struct Shell {
    ctx: SessionContext,
    format: Format,
    maxrows: Option<usize>,
    quiet: bool,
    out: Stdout,
    /// A client of a cluster (`--remote`): its executors write `COPY`
    /// targets, so relative ones are made absolute here.
    remote: bool,
}

impl Shell {
    fn new(ctx: SessionContext, args: &Args) -> Self {
        Shell {
            ctx,
            format: args.format,
            maxrows: args.maxrows,
            quiet: args.quiet,
            out: Stdout::default(),
            remote: args.remote.is_some(),
        }
    }

    /// Runs every statement of `sql` in order, printing each result; Ctrl-C
    /// cancels the statement running (dropping its stream stops the query).
    pub async fn run(&self, sql: &str) -> Result<(), Stop> {
        let statements = DFParser::parse_sql(sql)?;
        for mut statement in statements {
            export::default_copy_format(&mut statement);
            if self.remote {
                export::absolute_copy_target(&mut statement);
            }
            // Ctrl-C is ours from here on: listening before anything is
            // staged means it never kills the process with a COPY half done.
            let interrupted = tokio::signal::ctrl_c();
            tokio::pin!(interrupted);
            if futures::poll!(&mut interrupted).is_ready() {
                return Err(Stop::Interrupted);
            }
            // A COPY writes under a name it alone owns, moved into place
            // once the query completed (see staging.rs).
            let staging = Staging::begin(&mut statement, &self.ctx).await?;
            let result = tokio::select! {
                result = self.run_statement(statement) => result,
                _ = &mut interrupted => Err(Stop::Interrupted),
            };
            match (staging, &result) {
                (Some(staging), Ok(())) => staging.commit().await?,
                (Some(staging), Err(_)) => {
                    staging.abort().await;
                }
                (None, _) => {}
            }
            result?;
        }
        Ok(())
    }

    async fn run_statement(&self, statement: DFStatement) -> Result<(), Stop> {
        let started = Instant::now();
        // Settings and schemas are shown whole: the cap is for query results,
        // and `kendall.*` sorts after the 150-odd `datafusion.*` settings.
        let maxrows = if is_listing(&statement) {
            None
        } else {
            self.maxrows
        };
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        // COPY and INSERT answer with a count table, which -q hides.
        let counts = matches!(plan, LogicalPlan::Copy(_) | LogicalPlan::Dml(_));
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let physical = df.create_physical_plan().await?;
        let progress = (!self.quiet && std::io::stderr().is_terminal())
            .then(|| ProgressBar::start(&physical))
            .flatten();
        let mut stream = execute_stream(physical, self.ctx.task_ctx())?;
        let printed = if self.quiet && counts {
            while let Some(batch) = stream.next().await {
                batch?;
            }
            Ok(None)
        } else {
            let mut out = self.out.clone();
            print_stream(
                stream,
                Arc::clone(&schema),
                self.format,
                maxrows,
                progress.as_ref(),
                &mut out,
            )
            .await
            .map(Some)
        };
        if let Some(p) = progress {
            p.finish();
        }
        let printed = match printed {
            Err(_) if self.out.is_broken() => return Err(Stop::BrokenPipe),
            other => other?,
        };
        if let Some(Printed { rows, shown }) = printed
            && !self.quiet
            && !schema.fields().is_empty()
        {
            let capped = if shown < rows {
                format!(" ({shown} shown; --maxrows to change)")
            } else {
                String::new()
            };
            eprintln!(
                "{rows} row(s) fetched{capped}. Elapsed {:.3} seconds.",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }
}
