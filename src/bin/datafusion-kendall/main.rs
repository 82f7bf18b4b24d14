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
mod print;
mod progress;
mod repl;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use futures::StreamExt;

use args::{Args, Format, Parsed, Source, USAGE};
use print::{Printed, Stdout, print_stream};
use progress::ProgressBar;

/// Exit code after Ctrl-C, as shells report a process ended by SIGINT.
const EXIT_INTERRUPTED: u8 = 130;

#[tokio::main]
async fn main() -> ExitCode {
    let args = match args::parse_args(std::env::args().skip(1)) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("datafusion-kendall {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("error: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut config = datafusion_kendall::with_kendall_options(SessionConfig::new())
        // SHOW ALL, SHOW TABLES, \d and information_schema.df_settings.
        .with_information_schema(true);
    if let Some(p) = args.partitions {
        config = config.with_target_partitions(p);
    }
    // Plain file paths work as table names (`SELECT * FROM 'net.parquet'`).
    let ctx = SessionContext::new_with_config(config).enable_url_table();
    if let Err(e) = datafusion_kendall::register(&ctx) {
        eprintln!("Error: {e}");
        return ExitCode::FAILURE;
    }
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
                     running wrote no file."
                );
                ExitCode::from(EXIT_INTERRUPTED)
            }
            Stop::BrokenPipe => ExitCode::SUCCESS,
        }
    }
}

/// A session and how to print its results.
pub struct Shell {
    ctx: SessionContext,
    format: Format,
    maxrows: Option<usize>,
    quiet: bool,
    out: Stdout,
}

impl Shell {
    fn new(ctx: SessionContext, args: &Args) -> Self {
        Shell {
            ctx,
            format: args.format,
            maxrows: args.maxrows,
            quiet: args.quiet,
            out: Stdout::default(),
        }
    }

    /// Runs every statement of `sql` in order, printing each result; Ctrl-C
    /// cancels the statement running (dropping its stream stops the query).
    pub async fn run(&self, sql: &str) -> Result<(), Stop> {
        let statements = DFParser::parse_sql(sql)?;
        for statement in statements {
            tokio::select! {
                result = self.run_statement(statement) => result?,
                _ = tokio::signal::ctrl_c() => return Err(Stop::Interrupted),
            }
        }
        Ok(())
    }

    async fn run_statement(
        &self,
        statement: datafusion::sql::parser::Statement,
    ) -> Result<(), Stop> {
        let started = Instant::now();
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
                self.maxrows,
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
