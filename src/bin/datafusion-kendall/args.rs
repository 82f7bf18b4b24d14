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
  -h, --help             Print this help
  -V, --version          Print the version

With no -c or -f, reads statements (ending with ';') from standard input, with
line editing and history when it is a terminal. Shell commands: \\? help,
\\q quit, \\d list tables, \\d NAME describe a table. SHOW ALL lists every
setting (kendall.* included); SHOW ALL VERBOSE adds their descriptions.
Ctrl-C cancels the running query (and keeps the session); Ctrl-D quits.

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
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Run(Args),
    Help,
    Version,
}

/// Rows the table format shows by default (as datafusion-cli).
pub const DEFAULT_MAXROWS: usize = 40;

/// Parses the arguments after the program name.
pub fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let mut parsed = Args {
        sources: Vec::new(),
        format: Format::Table,
        maxrows: Some(DEFAULT_MAXROWS),
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
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Parsed::Run(parsed))
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
        assert!(parse(&["--maxrows", "-1"]).unwrap_err().contains("--maxrows"));
        assert_eq!(run(&["--format", "tsv"]).format, Format::Tsv);
    }
}
