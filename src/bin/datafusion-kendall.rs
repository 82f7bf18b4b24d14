//! `datafusion-kendall`: a SQL shell with `kendall_all_pairs` registered.
//!
//! ```text
//! datafusion-kendall -c "SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') LIMIT 5"
//! datafusion-kendall -f sql/network_export.sql
//! datafusion-kendall            # interactive: statements end with ';'
//! ```

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::json::ArrayWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use futures::StreamExt;

const USAGE: &str = "\
datafusion-kendall: SQL with the kendall_all_pairs table function

Usage: datafusion-kendall [OPTIONS]

Options:
  -c, --command SQL      Run SQL (one or more statements); repeatable
  -f, --file FILE        Run the SQL statements in FILE; repeatable
      --format FORMAT    Output format: table (default), csv or json
  -q, --quiet            Do not print row counts and timings
  -p, --partitions N     DataFusion target partitions (default: number of cores)
  -h, --help             Print this help
  -V, --version          Print the version

With no -c or -f, reads statements (ending with ';') from standard input;
\\q or quit leaves the shell.

Example:
  datafusion-kendall -c \"SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') \\
      WHERE abs(tau) >= 0.8 ORDER BY tau DESC LIMIT 10\"";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Csv,
    Json,
}

#[derive(Debug)]
enum Source {
    Command(String),
    File(String),
}

#[derive(Debug)]
struct Args {
    sources: Vec<Source>,
    format: Format,
    quiet: bool,
    partitions: Option<usize>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> std::result::Result<Option<Args>, String> {
    let mut parsed = Args {
        sources: Vec::new(),
        format: Format::Table,
        quiet: false,
        partitions: None,
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
                    "json" => Format::Json,
                    other => return Err(format!("unknown format '{other}' (table, csv, json)")),
                }
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
            "-h" | "--help" => return Ok(None),
            "-V" | "--version" => {
                println!("datafusion-kendall {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Some(parsed))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("error: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut config = datafusion_kendall::with_kendall_options(SessionConfig::new());
    if let Some(p) = args.partitions {
        config = config.with_target_partitions(p);
    }
    // Plain file paths work as table names (`SELECT * FROM 'net.parquet'`).
    let ctx = SessionContext::new_with_config(config).enable_url_table();
    if let Err(e) = datafusion_kendall::register(&ctx) {
        eprintln!("Error: {e}");
        return ExitCode::FAILURE;
    }
    let shell = Shell {
        ctx,
        format: args.format,
        quiet: args.quiet,
    };
    if args.sources.is_empty() {
        return shell.interactive().await;
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
        if let Err(e) = shell.run(&sql).await {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

struct Shell {
    ctx: SessionContext,
    format: Format,
    quiet: bool,
}

impl Shell {
    /// Runs every statement of `sql` in order, printing each result.
    async fn run(&self, sql: &str) -> Result<()> {
        let statements = DFParser::parse_sql(sql)?;
        for statement in statements {
            let started = Instant::now();
            let plan = self.ctx.state().statement_to_plan(statement).await?;
            let df = self.ctx.execute_logical_plan(plan).await?;
            let schema = df.schema().inner().clone();
            let mut stream = df.execute_stream().await?;
            let mut out = std::io::stdout().lock();
            let mut rows = 0usize;
            match self.format {
                Format::Table => {
                    let mut batches: Vec<RecordBatch> = Vec::new();
                    while let Some(batch) = stream.next().await {
                        let batch = batch?;
                        rows += batch.num_rows();
                        batches.push(batch);
                    }
                    if !schema.fields().is_empty() {
                        if batches.is_empty() {
                            batches.push(RecordBatch::new_empty(schema.clone()));
                        }
                        writeln!(out, "{}", pretty_format_batches(&batches)?)?;
                    }
                }
                Format::Csv => {
                    let mut writer = CsvWriterBuilder::new().with_header(true).build(&mut out);
                    while let Some(batch) = stream.next().await {
                        let batch = batch?;
                        rows += batch.num_rows();
                        writer.write(&batch)?;
                    }
                }
                Format::Json => {
                    let mut writer = ArrayWriter::new(&mut out);
                    while let Some(batch) = stream.next().await {
                        let batch = batch?;
                        rows += batch.num_rows();
                        writer.write(&batch)?;
                    }
                    writer.finish()?;
                    writeln!(out)?;
                }
            }
            out.flush()?;
            if !self.quiet && !schema.fields().is_empty() {
                eprintln!(
                    "{rows} row(s) fetched. Elapsed {:.3} seconds.",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        Ok(())
    }

    /// Reads statements from standard input until EOF or `\q`.
    async fn interactive(&self) -> ExitCode {
        let stdin = std::io::stdin();
        let tty = stdin.is_terminal();
        if tty {
            eprintln!(
                "datafusion-kendall {}: statements end with ';', \\q quits.",
                env!("CARGO_PKG_VERSION")
            );
        }
        let mut buffer = String::new();
        let mut failed = false;
        let mut lines = stdin.lock().lines();
        loop {
            if tty {
                eprint!(
                    "{}",
                    if buffer.is_empty() {
                        "kendall> "
                    } else {
                        "      -> "
                    }
                );
            }
            let line = match lines.next() {
                Some(Ok(line)) => line,
                Some(Err(e)) => {
                    eprintln!("Error: {e}");
                    return ExitCode::FAILURE;
                }
                None => break,
            };
            let trimmed = line.trim();
            if buffer.is_empty() && matches!(trimmed, "\\q" | "quit" | "exit") {
                break;
            }
            buffer.push_str(&line);
            buffer.push('\n');
            if trimmed.ends_with(';') {
                failed |= self.report(&std::mem::take(&mut buffer)).await;
            }
        }
        if !buffer.trim().is_empty() {
            failed |= self.report(&buffer).await;
        }
        if failed && !tty {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }

    /// Runs `sql`, printing an error instead of returning it; true on error.
    async fn report(&self, sql: &str) -> bool {
        match self.run(sql).await {
            Ok(()) => false,
            Err(e) => {
                eprintln!("Error: {e}");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_flags() {
        let a = parse(&[
            "-c",
            "SELECT 1",
            "--format=csv",
            "-q",
            "-f",
            "x.sql",
            "-p",
            "3",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.format, Format::Csv);
        assert!(a.quiet);
        assert_eq!(a.partitions, Some(3));
        assert!(matches!(&a.sources[0], Source::Command(s) if s == "SELECT 1"));
        assert!(matches!(&a.sources[1], Source::File(s) if s == "x.sql"));
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--format", "xml"]).unwrap_err().contains("xml"));
        assert!(parse(&["-c"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["-p", "0"]).is_err());
    }
}
