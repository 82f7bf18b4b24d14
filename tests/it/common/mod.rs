//! Helpers shared by the integration tests.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{SessionConfig, SessionContext};

/// A context with `target_partitions` partitions and the crate registered.
pub fn ctx(partitions: usize) -> SessionContext {
    let config = datafusion_kendall::with_kendall_options(
        SessionConfig::new().with_target_partitions(partitions),
    );
    // Plain file paths as table names, as datafusion-cli allows.
    let ctx = SessionContext::new_with_config(config).enable_url_table();
    datafusion_kendall::register(&ctx).unwrap();
    ctx
}

/// Runs `sql` (several statements allowed, separated by ';') and returns the
/// batches of the last one.
pub async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    let mut last = Vec::new();
    for stmt in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        last = ctx.sql(stmt).await?.collect().await?;
    }
    Ok(last)
}

/// The error `sql` (several statements allowed) ends with, as text; panics
/// when it succeeds.
pub async fn error(ctx: &SessionContext, sql: &str) -> String {
    match run(ctx, sql).await {
        Ok(b) => panic!("expected an error for {sql}, got {} batches", b.len()),
        Err(e) => e.to_string(),
    }
}

/// Asserts that `msg` contains every one of `needles`.
pub fn assert_contains(msg: &str, needles: &[&str]) {
    for n in needles {
        assert!(msg.contains(n), "'{n}' missing from: {msg}");
    }
}

/// All rows of a Parquet file as one batch.
pub fn read_parquet(path: impl AsRef<Path>) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// The plan of `EXPLAIN [ANALYZE] <sql>` (pass the whole statement) as text.
pub async fn plan(ctx: &SessionContext, explain: &str) -> String {
    let batches = run(ctx, explain)
        .await
        .unwrap_or_else(|e| panic!("{explain}: {e}"));
    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
}

/// One output row.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub gene_i: String,
    pub gene_j: String,
    pub tau: f64,
}

/// Runs a query returning (gene_i, gene_j, tau) and returns its rows.
pub async fn pairs(ctx: &SessionContext, sql: &str) -> Vec<Pair> {
    let batches = run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        let gi = b.column(0).as_string::<i32>();
        let gj = b.column(1).as_string::<i32>();
        let tau = b.column(2).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            out.push(Pair {
                gene_i: gi.value(r).to_string(),
                gene_j: gj.value(r).to_string(),
                tau: tau.value(r),
            });
        }
    }
    out
}

/// Rows keyed by (gene_i, gene_j), asserting each key appears once.
pub fn by_key(rows: &[Pair]) -> HashMap<(String, String), f64> {
    let mut map = HashMap::new();
    for p in rows {
        let old = map.insert((p.gene_i.clone(), p.gene_j.clone()), p.tau);
        assert!(old.is_none(), "pair {} {} twice", p.gene_i, p.gene_j);
    }
    map
}

/// Reads a reference CSV `gene_i,gene_j,tau[,...]` (NaN written as `nan`).
pub fn reference(path: &str) -> Vec<Pair> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            Pair {
                gene_i: f[0].to_string(),
                gene_j: f[1].to_string(),
                tau: f[2].parse().unwrap(),
            }
        })
        .collect()
}

/// Writes one record batch as a Parquet file.
pub fn write_parquet(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// The first `k` rows of a Parquet file, written to `out`.
pub fn head_parquet(input: &str, k: usize, out: &Path) {
    let all = read_parquet(input);
    write_parquet(out, &all.slice(0, k.min(all.num_rows())));
}

/// A batch from named columns.
/// Column `column` of the first row of `batches`, as an `f64`.
pub fn first_f64(batches: &[RecordBatch], column: usize) -> f64 {
    let values = datafusion::arrow::compute::cast(
        batches[0].column(column),
        &datafusion::arrow::datatypes::DataType::Float64,
    )
    .unwrap();
    values
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Float64Array>()
        .unwrap()
        .value(0)
}

pub fn batch(columns: Vec<(&str, Arc<dyn Array>)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

/// Whether the instruction set named by a `kendall.simd` value may run here
/// (`auto` always): the CPU has it and `KENDALL_MAX_ISA` does not exclude it.
/// When it may not, says on stderr which path is skipped and why (shown with
/// `cargo test -- --nocapture`); the caller then tests the refusal instead.
pub fn simd_available(simd: &str) -> bool {
    use datafusion_kendall::kernel::isa::Isa;
    let Some(isa) = Isa::ALL.into_iter().find(|i| i.name() == simd) else {
        return simd == "auto";
    };
    match isa.unavailable_reason() {
        None => true,
        Some(why) => {
            eprintln!("skipped: the {simd} path ({why}); testing its refusal instead");
            false
        }
    }
}

/// The `KendallExec` of a physical plan (the first found, depth first).
pub fn kendall_exec(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> &datafusion_kendall::exec::KendallExec {
    fn find(
        plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    ) -> Option<&datafusion_kendall::exec::KendallExec> {
        plan.downcast_ref::<datafusion_kendall::exec::KendallExec>()
            .or_else(|| plan.children().into_iter().find_map(find))
    }
    find(plan).expect("no KendallExec in the plan")
}

/// A metric of the `KendallExec` of `plan`, summed over partitions.
pub fn kendall_metric(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    name: &str,
) -> usize {
    use datafusion::physical_plan::ExecutionPlan;
    kendall_exec(plan)
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map_or(0, |v| v.as_usize())
}

/// One output row as exact bits: (gene_i, gene_j, tau bits, p_value bits, n).
pub type RowBits = (String, String, u64, u64, i64);

/// Every pair of `source` under `kernel` as [`sorted_bits`] (`tau`,
/// `p_value`, `n`): two inputs of the same matrix give equal vectors.
pub async fn all_pairs_bits(source: &str, kernel: &str) -> Vec<RowBits> {
    let sql = format!(
        "SET kendall.kernel = '{kernel}'; \
         SELECT gene_i, gene_j, tau, p_value, n FROM kendall_all_pairs('{source}')"
    );
    sorted_bits(
        &run(&ctx(2), &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}")),
    )
}

/// The rows of `batches` (which hold `gene_i`, `gene_j`, `tau`, `p_value`
/// and `n`) as [`RowBits`], sorted: equal vectors mean bit-identical rows,
/// the orientation of each pair included.
pub fn sorted_bits(batches: &[RecordBatch]) -> Vec<RowBits> {
    let mut rows = Vec::new();
    for b in batches {
        let column = |name: &str| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        let (gi, gj) = (column("gene_i"), column("gene_j"));
        let (gi, gj) = (gi.as_string::<i32>(), gj.as_string::<i32>());
        let tau = column("tau").as_primitive::<Float64Type>().clone();
        let p = column("p_value").as_primitive::<Float64Type>().clone();
        let n = column("n")
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .clone();
        for r in 0..b.num_rows() {
            rows.push((
                gi.value(r).to_string(),
                gj.value(r).to_string(),
                tau.value(r).to_bits(),
                p.value(r).to_bits(),
                n.value(r),
            ));
        }
    }
    rows.sort();
    rows
}

/// The rows of `batches` (which hold `gene_i`, `gene_j` and `tau`) as
/// (gene_i, gene_j, tau bits), sorted.
pub fn sorted_tau_bits(batches: &[RecordBatch]) -> Vec<(String, String, u64)> {
    let mut rows = Vec::new();
    for b in batches {
        let column = |name: &str| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        let (gi, gj) = (column("gene_i"), column("gene_j"));
        let (gi, gj) = (gi.as_string::<i32>(), gj.as_string::<i32>());
        let tau = column("tau").as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            rows.push((
                gi.value(r).to_string(),
                gj.value(r).to_string(),
                tau.value(r).to_bits(),
            ));
        }
    }
    rows.sort();
    rows
}

/// CPU time the calling thread has run (wall time where there is no thread
/// CPU clock): unlike wall time, not inflated while other processes hold
/// the core, so a bound on a poll's work holds on a loaded machine.
#[cfg(unix)]
pub fn thread_cpu_time() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// See the unix version.
#[cfg(not(unix))]
pub fn thread_cpu_time() -> std::time::Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// A deterministic generator (splitmix64) of values in `0..levels`.
pub fn draws(seed: u64, n: usize, levels: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % levels) as f64
        })
        .collect()
}
