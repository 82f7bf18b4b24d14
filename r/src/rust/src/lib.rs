//! The Rust half of the R package `datafusion.kendall` (in `r/`), built on
//! [savvy](https://github.com/yutannihilation/savvy): SQL with the
//! datafusion-kendall table functions over files and R data frames
//! ([`kd_sql`]), and `cor(method = "kendall")` as a matrix ([`kd_cor`]).
//!
//! Queries run on this library's tokio runtime while R's main thread waits
//! in [`wait`]: it checks for Ctrl-C every 100 ms (cancelling the query, which
//! stops within a kernel chunk of about 10 ms) and prints progress. R's API
//! is only ever called from R's main thread.

mod convert;
mod interrupt;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::{ExecutionPlan, collect, execute_stream};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;
use futures::StreamExt;
use savvy::{ListSexp, OwnedLogicalSexp, OwnedRealSexp, Sexp, StringSexp, savvy};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// The message of the error a Ctrl-C turns into; the R side turns it into an
/// `interrupt` condition.
const INTERRUPTED: &str = "datafusion.kendall: interrupted";

/// This library's tokio runtime, on which every query runs.
fn runtime() -> savvy::Result<&'static Runtime> {
    static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            datafusion_kendall::pace::runtime_builder()
                .thread_name("datafusion-kendall-r")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| savvy::Error::new(format!("datafusion.kendall: no tokio runtime: {e}")))
}

/// A DataFusion error as R shows it.
fn r_error(e: DataFusionError) -> savvy::Error {
    savvy::Error::new(e.to_string())
}

/// The plan a running query executes, for its progress line.
type SharedPlan = Arc<Mutex<Option<Arc<dyn ExecutionPlan>>>>;

/// Waits for `task` on R's main thread: every 100 ms checks for Ctrl-C
/// (then cancels the task and returns at once) and, with
/// `progress`, after the first second prints the pairs computed so far
/// (`plan`) on one console line, cleared at the end.
fn wait<T: Send + 'static>(
    mut task: JoinHandle<Result<T>>,
    plan: &SharedPlan,
    progress: bool,
) -> savvy::Result<T> {
    let rt = runtime()?;
    let start = Instant::now();
    let mut shown = false;
    let clear = |shown: bool| {
        if shown {
            savvy::io::r_eprint(&format!("\r{:60}\r", ""), false);
        }
    };
    loop {
        let done = rt
            .block_on(async { tokio::time::timeout(Duration::from_millis(100), &mut task).await });
        match done {
            Ok(Ok(result)) => {
                clear(shown);
                return result.map_err(r_error);
            }
            Ok(Err(join)) => {
                clear(shown);
                return Err(savvy::Error::new(format!(
                    "datafusion.kendall: the query stopped unexpectedly: {join}"
                )));
            }
            Err(_elapsed) => {}
        }
        if interrupt::pending() {
            // Cancelled: its partitions stop at their next step (the task
            // owns everything it uses, nothing of R's), while R goes on.
            task.abort();
            clear(shown);
            return Err(savvy::Error::new(INTERRUPTED));
        }
        if progress && start.elapsed() >= Duration::from_secs(1) {
            let current = plan.lock().ok().and_then(|p| p.clone());
            if let Some(plan) = current
                && let Some(p) = datafusion_kendall::exec::plan_progress(&plan)
            {
                let line = match p.total {
                    Some(total) if total > 0 => format!(
                        "kendall: {} of {} pairs ({:.0} %), {:.0} s",
                        p.done,
                        total,
                        100.0 * p.done as f64 / total as f64,
                        start.elapsed().as_secs_f64()
                    ),
                    _ => format!(
                        "kendall: reading the input, {:.0} s",
                        start.elapsed().as_secs_f64()
                    ),
                };
                savvy::io::r_eprint(&format!("\r{line:60}"), false);
                shown = true;
            }
        }
    }
}

/// A session with the table functions and the `kendall.*` options, `options`
/// set (names `kendall.variant`, `datafusion.execution.batch_size`, ...);
/// files can be named as tables (`SELECT * FROM 'expr.parquet'`), as in the
/// shell.
fn context(options: &[(String, String)]) -> Result<SessionContext> {
    let ctx = datafusion_kendall::new_context()?.enable_url_table();
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        let config = state.config_mut().options_mut();
        for (k, v) in options {
            config.set(k, v)?;
        }
    }
    Ok(ctx)
}

/// Runs every statement of `sql` in order and returns the last one's rows.
async fn run_statements(
    ctx: SessionContext,
    sql: String,
    plan_slot: SharedPlan,
) -> Result<(Vec<RecordBatch>, datafusion::arrow::datatypes::SchemaRef)> {
    let statements = DFParser::parse_sql(&sql)?;
    if statements.is_empty() {
        return Err(DataFusionError::Plan("no SQL statement given".into()));
    }
    let mut last = None;
    for statement in statements {
        let logical = ctx.state().statement_to_plan(statement).await?;
        let df = ctx.execute_logical_plan(logical).await?;
        let plan = df.create_physical_plan().await?;
        if let Ok(mut slot) = plan_slot.lock() {
            *slot = Some(Arc::clone(&plan));
        }
        let schema = plan.schema();
        let batches = collect(plan, ctx.task_ctx()).await?;
        last = Some((batches, schema));
    }
    last.ok_or_else(|| DataFusionError::Plan("no SQL statement given".into()))
}

/// Runs `sql` (one or more statements separated by `;`) with the data frames
/// `tables` registered under `names`, the session options `option_values`
/// named by `option_names`; returns the last statement's rows as a named
/// list of columns (the R side makes it a data frame).
#[savvy]
fn kd_sql(
    sql: &str,
    names: StringSexp,
    tables: ListSexp,
    option_names: StringSexp,
    option_values: StringSexp,
    progress: bool,
) -> savvy::Result<Sexp> {
    let options: Vec<(String, String)> = option_names
        .iter()
        .zip(option_values.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let ctx = context(&options).map_err(r_error)?;
    for (name, table) in names.iter().zip(tables.values_iter()) {
        let batch = convert::data_frame_to_batch(name, table)?;
        let mem = MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(r_error)?;
        ctx.register_table(name, Arc::new(mem)).map_err(r_error)?;
    }
    let plan: SharedPlan = Arc::default();
    let task = runtime()?.spawn(run_statements(ctx, sql.to_string(), Arc::clone(&plan)));
    let (batches, schema) = wait(task, &plan, progress)?;
    convert::batches_to_list(&schema, &batches)
}

/// `cor(x, y, method = "kendall")` of the numeric (double) matrices `x` and
/// `y` (samples in rows, genes in columns; `y` may be `NULL`), as a
/// `ncol(x) x ncol(y)` matrix with `NA` where tau is undefined. `pairwise`:
/// each pair uses the samples both have (`use = "pairwise.complete.obs"`);
/// else a pair with a missing value is `NA` (`use = "everything"`). The
/// attribute `zero_sd` says whether some pair was `NA` because a gene was
/// constant (R then warns "the standard deviation is zero").
#[savvy]
fn kd_cor(x: Sexp, y: Sexp, pairwise: bool, variant: &str, progress: bool) -> savvy::Result<Sexp> {
    let (xv, n, m) = convert::real_matrix("x", &x)?;
    let yv = if y.is_null() {
        None
    } else {
        let (yv, ny, k) = convert::real_matrix("y", &y)?;
        if ny != n {
            return Err(savvy::Error::new("incompatible dimensions"));
        }
        Some((yv, k))
    };
    let cols = yv.as_ref().map_or(m, |(_, k)| *k);
    let options = vec![
        ("kendall.variant".to_string(), variant.to_string()),
        (
            "kendall.missing".to_string(),
            if pairwise { "pairwise" } else { "propagate" }.to_string(),
        ),
        ("kendall.gene_ids".to_string(), "dictionary".to_string()),
        // Fewer, larger batches: less per-batch work in the fill loop.
        (
            "datafusion.execution.batch_size".to_string(),
            (1 << 20).to_string(),
        ),
    ];
    let ctx = context(&options).map_err(r_error)?;
    let (x_batch, mut has_na) = convert::matrix_to_gene_rows(xv, n, m, 'x').map_err(r_error)?;
    ctx.register_table("x", Arc::new(mem_table(x_batch)?))
        .map_err(r_error)?;
    let sql = if let Some((yv, k)) = &yv {
        let (y_batch, y_na) = convert::matrix_to_gene_rows(yv, n, *k, 'y').map_err(r_error)?;
        has_na.extend(y_na);
        ctx.register_table("y", Arc::new(mem_table(y_batch)?))
            .map_err(r_error)?;
        "SELECT gene_i, gene_j, tau FROM kendall_cross_pairs('x', 'y')"
    } else {
        "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('x')"
    };

    let na = <f64 as savvy::NotAvailableValue>::na();
    let mut values = vec![na; m * cols];
    if yv.is_none() {
        for g in 0..m {
            // The diagonal: R gives 1, or with `pairwise` NA for a gene
            // with fewer than 2 distinct values.
            let column = &xv[g * n..(g + 1) * n];
            let one = !pairwise || two_distinct(column);
            values[g * m + g] = if one { 1.0 } else { na };
        }
    }
    let mut target = Target {
        values,
        rows: m,
        cross: yv.is_some(),
        pairwise,
        has_na,
        na,
    };
    let plan: SharedPlan = Arc::default();
    let slot = Arc::clone(&plan);
    let task = runtime()?.spawn(async move {
        let df = ctx.sql(sql).await?;
        let physical = df.create_physical_plan().await?;
        if let Ok(mut s) = slot.lock() {
            *s = Some(Arc::clone(&physical));
        }
        let mut stream = execute_stream(physical, ctx.task_ctx())?;
        let mut fill = Filler::default();
        while let Some(batch) = stream.next().await {
            fill.batch(&mut target, &batch?)?;
        }
        Ok((target.values, fill.zero_sd))
    });
    let (values, zero_sd) = wait(task, &plan, progress)?;
    let mut out = OwnedRealSexp::try_from_slice(&values)?;
    drop(values);
    out.set_attrib(
        "zero_sd",
        OwnedLogicalSexp::try_from_scalar(zero_sd)?.into(),
    )?;
    Ok(out.into())
}

fn mem_table(batch: RecordBatch) -> savvy::Result<MemTable> {
    MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(r_error)
}

/// Whether `v` has two distinct non-missing values.
fn two_distinct(v: &[f64]) -> bool {
    let mut first = None;
    for &x in v.iter().filter(|x| !x.is_nan()) {
        match first {
            None => first = Some(x),
            Some(f) if f != x => return true,
            _ => {}
        }
    }
    false
}

/// The matrix `kd_cor` fills, owned by its task until it returns it (a
/// cancelled task drops it: nothing of R's is written from another thread).
struct Target {
    /// The `rows x cols` column-major doubles, R's `NA` where no tau is.
    values: Vec<f64>,
    rows: usize,
    cross: bool,
    pairwise: bool,
    /// Whether each gene (x's, then y's) has a missing value.
    has_na: Vec<bool>,
    /// R's `NA` (a NaN with R's payload).
    na: f64,
}

/// Writes pair rows into a [`Target`].
#[derive(Default)]
struct Filler {
    /// Gene index of each dictionary value, for the dictionary last seen.
    cache: Option<(usize, Vec<usize>)>,
    zero_sd: bool,
}

impl Filler {
    /// The gene index of each value of `dictionary` (`x12` -> 12, `y3` -> 3).
    fn indices(&mut self, dictionary: &Arc<dyn Array>) -> Result<&[usize]> {
        let key = Arc::as_ptr(dictionary) as *const () as usize;
        if self.cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let names = dictionary.as_string::<i32>();
            let indices = names
                .iter()
                .map(|n| {
                    n.and_then(|n| n.get(1..)?.parse::<usize>().ok())
                        .ok_or_else(|| DataFusionError::Internal(format!("gene id {n:?}")))
                })
                .collect::<Result<Vec<_>>>()?;
            self.cache = Some((key, indices));
        }
        Ok(&self.cache.as_ref().map(|(_, v)| v).expect("just set")[..])
    }

    fn batch(&mut self, t: &mut Target, batch: &RecordBatch) -> Result<()> {
        let gi = batch.column(0).as_dictionary::<Int32Type>();
        let gj = batch.column(1).as_dictionary::<Int32Type>();
        if !matches!(gi.values().data_type(), DataType::Utf8) {
            return Err(DataFusionError::Internal("gene ids not Utf8".into()));
        }
        let tau = batch.column(2).as_primitive::<Float64Type>();
        let ii: Vec<usize> = {
            let map = self.indices(gi.values())?;
            gi.keys()
                .values()
                .iter()
                .map(|&k| map[k as usize])
                .collect()
        };
        let jj: Vec<usize> = {
            let map = self.indices(gj.values())?;
            gj.keys()
                .values()
                .iter()
                .map(|&k| map[k as usize])
                .collect()
        };
        let na = t.na;
        let m = t.rows;
        for r in 0..batch.num_rows() {
            let (i, j) = (ii[r], jj[r]);
            let v = if tau.is_null(r) {
                f64::NAN
            } else {
                tau.value(r)
            };
            let v = if v.is_nan() {
                let (a, b) = if t.cross { (i, m + j) } else { (i, j) };
                if t.pairwise || !(t.has_na[a] || t.has_na[b]) {
                    self.zero_sd = true;
                }
                na
            } else {
                v
            };
            let out_of_range = || DataFusionError::Internal("pair out of range".into());
            *t.values.get_mut(i + j * m).ok_or_else(out_of_range)? = v;
            if !t.cross {
                *t.values.get_mut(j + i * m).ok_or_else(out_of_range)? = v;
            }
        }
        Ok(())
    }
}
