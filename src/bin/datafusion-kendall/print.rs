//! Writing a result stream to standard output: a table capped at
//! `--maxrows` rows (printed as soon as they are there, the rest counted),
//! or csv/tsv/json/ndjson streamed batch by batch, in flat memory.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::{ArrayWriter, LineDelimitedWriter};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;

use crate::args::Format;
use crate::progress::ProgressBar;

/// Standard output that remembers a closed pipe (`| head`), so that the
/// shell can end quietly instead of reporting the write error.
#[derive(Clone, Default)]
pub struct Stdout {
    broken: Arc<AtomicBool>,
}

impl Stdout {
    /// Whether a write found the reading end of the pipe closed.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    fn check<T>(&self, result: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &result
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.broken.store(true, Ordering::Relaxed);
        }
        result
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check(io::stdout().lock().write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.check(io::stdout().lock().flush())
    }
}

/// What was printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Printed {
    /// Rows the query returned.
    pub rows: usize,
    /// Rows shown (fewer than `rows` when the table was capped).
    pub shown: usize,
}

/// Prints every row of `stream` to `out` in `format`; the table format
/// shows at most `maxrows` rows (all when `None`) and counts the rest.
/// Erases `progress` while it writes.
pub async fn print_stream(
    mut stream: SendableRecordBatchStream,
    schema: SchemaRef,
    format: Format,
    maxrows: Option<usize>,
    progress: Option<&ProgressBar>,
    out: &mut Stdout,
) -> Result<Printed> {
    // Output is written with the bar erased, which is drawn again after.
    let suspend = |write: &mut dyn FnMut() -> Result<()>| match progress {
        Some(p) => p.suspend(write),
        None => write(),
    };
    match format {
        Format::Table => {
            let mut rows = 0usize;
            let limit = maxrows.unwrap_or(usize::MAX);
            let mut head: Vec<RecordBatch> = Vec::new();
            let mut printed = false;
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                if rows < limit {
                    let take = batch.num_rows().min(limit - rows);
                    head.push(batch.slice(0, take));
                }
                rows += batch.num_rows();
                if !printed && rows >= limit {
                    // The rows to show are there: show them now, then count.
                    suspend(&mut || print_table(&schema, &mut head, out))?;
                    printed = true;
                }
            }
            if !printed {
                suspend(&mut || print_table(&schema, &mut head, out))?;
            }
            Ok(Printed {
                rows,
                shown: rows.min(limit),
            })
        }
        Format::Csv | Format::Tsv => {
            let delimiter = if format == Format::Csv { b',' } else { b'\t' };
            let mut writer = CsvWriterBuilder::new()
                .with_header(true)
                .with_delimiter(delimiter)
                .build(out.clone());
            let rows = write_each(stream, suspend, |b| Ok(writer.write(b)?)).await?;
            out.flush()?;
            Ok(Printed { rows, shown: rows })
        }
        Format::Json => {
            let mut writer = ArrayWriter::new(out.clone());
            let rows = write_each(stream, suspend, |b| Ok(writer.write(b)?)).await?;
            writer.finish()?;
            writeln!(out)?;
            out.flush()?;
            Ok(Printed { rows, shown: rows })
        }
        Format::NdJson => {
            let mut writer = LineDelimitedWriter::new(out.clone());
            let rows = write_each(stream, suspend, |b| Ok(writer.write(b)?)).await?;
            writer.finish()?;
            out.flush()?;
            Ok(Printed { rows, shown: rows })
        }
    }
}

/// Hands every batch of `stream` to `write` as it arrives (through
/// `suspend`, which erases the progress bar meanwhile); returns the rows
/// written.
async fn write_each(
    mut stream: SendableRecordBatchStream,
    suspend: impl Fn(&mut dyn FnMut() -> Result<()>) -> Result<()>,
    mut write: impl FnMut(&RecordBatch) -> Result<()>,
) -> Result<usize> {
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows();
        suspend(&mut || write(&batch))?;
    }
    Ok(rows)
}

/// Prints `batches` as an aligned table (an empty one with the header when
/// there are no rows); nothing for a statement without columns.
fn print_table(schema: &SchemaRef, batches: &mut Vec<RecordBatch>, out: &mut Stdout) -> Result<()> {
    if schema.fields().is_empty() {
        return Ok(());
    }
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(Arc::clone(schema)));
    }
    writeln!(out, "{}", pretty_format_batches(batches)?)?;
    out.flush()?;
    batches.clear();
    Ok(())
}
