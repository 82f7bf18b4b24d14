//! Memory is accounted in DataFusion's memory pool: input values, ranks and
//! bit-planes are reserved before they are allocated and released when no
//! longer needed, so `SET datafusion.runtime.memory_limit` governs them.

use std::fmt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, Float64Array, StringArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::Result;
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation, UnboundedMemoryPool,
};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::physical_plan::collect;
use datafusion::prelude::{SessionConfig, SessionContext};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::{assert_contains, batch, error, run};

/// A pool without a limit that records every change: (consumer, signed
/// change, total reserved after it).
#[derive(Debug, Default)]
struct RecordingPool {
    inner: UnboundedMemoryPool,
    events: Mutex<Vec<(String, i64, usize)>>,
    peak: AtomicUsize,
}

impl RecordingPool {
    fn record(&self, r: &MemoryReservation, change: i64) {
        let total = self.inner.reserved();
        self.peak.fetch_max(total, Ordering::Relaxed);
        self.events
            .lock()
            .unwrap()
            .push((r.consumer().name().to_string(), change, total));
    }

    /// Net bytes reserved by consumers whose name starts with `prefix`,
    /// after each of the first `k` events.
    fn held_by(&self, prefix: &str, k: usize) -> i64 {
        self.events.lock().unwrap()[..k]
            .iter()
            .filter(|e| e.0.starts_with(prefix))
            .map(|e| e.1)
            .sum()
    }
}

impl fmt::Display for RecordingPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "recording")
    }
}

impl MemoryPool for RecordingPool {
    fn name(&self) -> &str {
        "recording"
    }

    fn grow(&self, r: &MemoryReservation, additional: usize) {
        self.inner.grow(r, additional);
        self.record(r, additional as i64);
    }

    fn shrink(&self, r: &MemoryReservation, shrink: usize) {
        self.inner.shrink(r, shrink);
        self.record(r, -(shrink as i64));
    }

    fn try_grow(&self, r: &MemoryReservation, additional: usize) -> Result<()> {
        self.inner.try_grow(r, additional)?;
        self.record(r, additional as i64);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Infinite
    }

    fn register(&self, _consumer: &MemoryConsumer) {}
}

/// A genes_as_rows file of random values: genes `G0..`, samples `s0..`, in
/// one row group.
fn write_random(path: &Path, genes: usize, samples: usize) {
    write_random_groups(path, genes, samples, genes.max(1));
}

/// [`write_random`] in row groups of `group_rows` rows (a Parquet reader
/// holds one row group at a time, which the scan reserves).
fn write_random_groups(path: &Path, genes: usize, samples: usize, group_rows: usize) {
    let mut rng = SmallRng::seed_from_u64(genes as u64 * 31 + samples as u64);
    let mut columns: Vec<(String, Arc<dyn Array>)> = vec![(
        "gene".into(),
        Arc::new(StringArray::from_iter_values(
            (0..genes).map(|g| format!("G{g}")),
        )),
    )];
    for s in 0..samples {
        columns.push((
            format!("s{s}"),
            Arc::new(Float64Array::from_iter_values(
                (0..genes).map(|_| rng.random::<f64>()),
            )),
        ));
    }
    let all = batch(
        columns
            .iter()
            .map(|(n, c)| (n.as_str(), Arc::clone(c)))
            .collect(),
    );
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, all.schema(), Some(properties)).unwrap();
    writer.write(&all).unwrap();
    writer.close().unwrap();
}

fn ctx_with_pool(pool: Arc<dyn MemoryPool>, partitions: usize) -> SessionContext {
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(pool)
        .build_arc()
        .unwrap();
    let config = datafusion_kendall::with_kendall_options(
        SessionConfig::new().with_target_partitions(partitions),
    );
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    datafusion_kendall::register(&ctx).unwrap();
    ctx
}

/// Values, ranks and planes are reserved while they exist; the values are
/// released once ranked (before the planes are built), and everything once
/// the last partition ends, although the plan itself is still alive.
#[tokio::test]
async fn memory_is_reserved_while_used_and_released_by_the_last_partition() {
    let (genes, samples) = (300usize, 30usize);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.parquet");
    write_random(&path, genes, samples);
    let pool = Arc::new(RecordingPool::default());
    let ctx = ctx_with_pool(Arc::clone(&pool) as Arc<dyn MemoryPool>, 2);
    run(&ctx, "SET kendall.kernel = 'bitset'").await.unwrap();
    let df = ctx
        .sql(&format!(
            "SELECT * FROM kendall_all_pairs('{}')",
            path.display()
        ))
        .await
        .unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, genes * (genes - 1) / 2);

    let shape = format!("({genes} genes x {samples} samples)");
    let values = format!("kendall_all_pairs: input values {shape}");
    let ranks = format!("kendall_all_pairs: ranks and sample orders {shape}");
    let planes = format!("kendall_all_pairs: bit-planes {shape}");
    let events = pool.events.lock().unwrap().clone();
    for name in [&values, &ranks, &planes] {
        assert!(
            events.iter().any(|e| &e.0 == name && e.1 > 0),
            "{name} never reserved: {events:?}"
        );
    }
    // At least the values and the ranks and orders were held at once.
    let bytes = genes * samples;
    assert!(pool.peak.load(Ordering::Relaxed) >= bytes * 8 + bytes * 8);
    // When the planes are first reserved, the values are released.
    let first_planes = events
        .iter()
        .position(|e| e.0 == planes && e.1 > 0)
        .unwrap();
    assert_eq!(pool.held_by(&values, first_planes), 0, "{events:?}");
    assert!(pool.held_by(&ranks, first_planes) >= (bytes * 8) as i64);
    // The streams are done: nothing is held, though `plan` still lives.
    assert_eq!(pool.reserved(), 0, "{events:?}");
    drop(plan);
}

/// A memory limit too small for the input is a "Resources exhausted" error
/// naming what needed the memory, not an OS kill.
#[tokio::test]
async fn a_small_memory_limit_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.parquet");
    write_random(&path, 2000, 100);
    let ctx = crate::common::ctx(2);
    let msg = error(
        &ctx,
        &format!(
            "SET datafusion.runtime.memory_limit = '1M'; \
             SELECT count(*) FROM kendall_all_pairs('{}')",
            path.display()
        ),
    )
    .await;
    assert_contains(
        &msg,
        &[
            "Resources exhausted",
            &format!(
                "the input values (2000 genes x 100 samples) of '{}' need 1600000 more bytes",
                path.display()
            ),
            "datafusion.runtime.memory_limit",
        ],
    );
}

/// The bit-planes may take no more than the pool can grant besides the
/// ranks: `auto` then chooses a sorting kernel, a forced `bitset` is refused
/// naming the pool; with room enough, `auto` keeps the bitset kernel.
#[tokio::test]
async fn bitset_planes_fit_in_what_the_pool_grants() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.parquet");
    // 3.2 MB of values, 3.2 MB of ranks and orders, 11.4 MB of planes
    // (with the lists of tied pairs and the genes' rank scores, 0.8 MB, and
    // 112 bytes of room to start both planes' arrays on a cache line);
    // row groups of 250 rows, so that the
    // reader's (about 0.8 MB) leave room to read the values under 10 MB.
    write_random_groups(&path, 2000, 200, 250);
    let sql = format!("SELECT * FROM kendall_all_pairs('{}')", path.display());
    let explain =
        |limit: &str| format!("SET datafusion.runtime.memory_limit = '{limit}'; EXPLAIN {sql}");
    let ctx = crate::common::ctx(2);
    let plan = pretty_format_batches(&run(&ctx, &explain("10M")).await.unwrap())
        .unwrap()
        .to_string();
    assert!(
        plan.contains("kernel=vse") || plan.contains("kernel=naive"),
        "{plan}"
    );
    let count = format!(
        "SELECT count(*) FROM kendall_all_pairs('{}') WHERE gene_i = 'G0'",
        path.display()
    );
    let counted = run(&ctx, &count).await.unwrap();
    let counted = pretty_format_batches(&counted).unwrap().to_string();
    assert!(counted.contains("1999"), "{counted}");
    let msg = error(&ctx, &format!("SET kendall.kernel = 'bitset'; {sql}")).await;
    assert_contains(
        &msg,
        &[
            "the bitset kernel needs 11440112 bytes of bit-planes for 2000 genes x 200 samples",
            "DataFusion's memory pool can grant",
            "datafusion.runtime.memory_limit",
        ],
    );
    let ctx = crate::common::ctx(2);
    let plan = pretty_format_batches(&run(&ctx, &explain("64M")).await.unwrap())
        .unwrap()
        .to_string();
    assert!(plan.contains("kernel=bitset"), "{plan}");
}

/// Through the shell: a sparse long input and an input over the memory
/// limit end with exit code 1 and a clear message, not an abort (134) or
/// an OS kill.
#[test]
fn the_shell_exits_1_on_inputs_beyond_memory() {
    let bin = env!("CARGO_BIN_EXE_datafusion-kendall");
    let dir = tempfile::tempdir().unwrap();
    let sparse = dir.path().join("sparse.parquet");
    crate::layouts::write_sparse_long(&sparse, 200_000, 20_000);
    let dense = dir.path().join("dense.parquet");
    write_random(&dense, 2000, 100);
    for (sql, expected) in [
        (
            format!(
                "SET kendall.layout = 'long'; SELECT count(*) FROM kendall_all_pairs('{}')",
                sparse.display()
            ),
            "every gene needs one row for every sample",
        ),
        (
            format!(
                "SET datafusion.runtime.memory_limit = '1M'; \
                 SELECT count(*) FROM kendall_all_pairs('{}')",
                dense.display()
            ),
            "Resources exhausted",
        ),
    ] {
        let out = Command::new(bin).args(["-c", &sql]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sql}: {stderr}");
        assert!(stderr.contains(expected), "{sql}: {stderr}");
    }
}

/// The peak RSS (bytes), exit code and stderr of the shell running `sql`,
/// measured by `/usr/bin/time -f %M` (GNU time); `None` without it. (The
/// child's own `ru_maxrss` from this process would not do: Linux carries the
/// high-water mark of the address space a child leaves at `exec` over to it,
/// and a child spawned with `vfork` leaves this test process's.)
fn shell_peak_rss(sql: &str, dir: &Path) -> Option<(u64, Option<i32>, String)> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    let report = dir.join("peak-rss.txt");
    let out = Command::new(time)
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_datafusion-kendall"))
        .args(["-c", sql])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&report).unwrap();
    // The last line is %M (KiB); one before it says how the child ended.
    let kib: u64 = text.lines().last()?.trim().parse().ok()?;
    Some((kib * 1024, out.status.code(), stderr))
}

/// `genes` x `samples` random values as CSV: `gene,s0,...`, then `G0,...`.
fn write_random_csv(path: &Path, genes: usize, samples: usize) {
    use std::io::Write;
    let mut rng = SmallRng::seed_from_u64(7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(out, "gene").unwrap();
    for s in 0..samples {
        write!(out, ",s{s}").unwrap();
    }
    writeln!(out).unwrap();
    for g in 0..genes {
        write!(out, "G{g}").unwrap();
        for _ in 0..samples {
            write!(out, ",{:.6}", rng.random::<f64>()).unwrap();
        }
        writeln!(out).unwrap();
    }
    out.flush().unwrap();
}

/// A 10x directory of `genes` x `cells` counts, a fraction `density` of them
/// non-zero (1 to 20), in MatrixMarket order (cell by cell).
fn write_random_10x(dir: &Path, genes: usize, cells: usize, density: f64) {
    use std::io::Write;
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    let mut entries = Vec::new();
    for c in 1..=cells {
        for g in 1..=genes {
            if rng.random::<f64>() < density {
                entries.push((g, c, rng.random_range(1..=20u32)));
            }
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("matrix.mtx")).unwrap());
    writeln!(out, "%%MatrixMarket matrix coordinate integer general").unwrap();
    writeln!(out, "{genes} {cells} {}", entries.len()).unwrap();
    for (g, c, x) in entries {
        writeln!(out, "{g} {c} {x}").unwrap();
    }
    out.flush().unwrap();
    let ids = |name: &str, prefix: &str, k: usize| {
        let text: String = (0..k).map(|i| format!("{prefix}{i}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    };
    ids("features.tsv", "G", genes);
    ids("barcodes.tsv", "C", cells);
}

/// Peak RSS stays within `memory_limit` x 1.25 + 100 MiB while a query over
/// an input too large for the limit reads what it can and is refused: the
/// Parquet reader's row group, the CSV batches, the 10x entries, gene ids
/// and values are all reserved (or bounded) before they are allocated, and
/// the error names what needed the memory. 40,000 genes x 500 samples
/// (160 MB of values) under 256 MiB, as Parquet (one row group) and CSV;
/// as a 10x directory (10 % non-zero) the matrix is kept sparse, fits, and
/// a gene-targeted query over it runs within the bound. Before the reading was reserved, the
/// Parquet query peaked at 669 MiB (docs/benchmarks/2026-11-25-memory-limit-xeon.md, the `examples/synth.rs` file);
/// it now stops at the reservation of the reader's row group. Full size:
/// the test takes a few seconds, most of it writing the inputs.
#[test]
fn peak_rss_stays_within_the_memory_limit() {
    let (genes, samples) = (40_000usize, 500usize);
    let limit_mib = 256u64;
    let bound = (limit_mib * 5 / 4 + 100) << 20;
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("m.parquet");
    write_random(&parquet, genes, samples);
    let csv = dir.path().join("m.csv");
    write_random_csv(&csv, genes, samples);
    let tenx = dir.path().join("tenx");
    write_random_10x(&tenx, genes, samples, 0.1);
    let set = format!("SET datafusion.runtime.memory_limit = '{limit_mib}M'");
    let cases = [
        (
            format!(
                "SELECT count(*) FROM kendall_all_pairs('{}')",
                parquet.display()
            ),
            "Parquet reader's buffers (the largest row group, 40000 rows",
        ),
        (
            format!(
                "SELECT count(*) FROM kendall_all_pairs('{}') WHERE q_value < 0.05",
                parquet.display()
            ),
            "Parquet reader's buffers",
        ),
        (
            format!(
                "SELECT count(*) FROM kendall_top_partners('{}', 10)",
                parquet.display()
            ),
            "Parquet reader's buffers",
        ),
        (
            format!(
                "SELECT count(*) FROM kendall_all_pairs('{}')",
                csv.display()
            ),
            "kendall_all_pairs: the ",
        ),
        // Kept sparse (2 M non-zero values): it fits, and runs.
        (
            format!(
                "SELECT count(*) FROM kendall_all_pairs('{}') WHERE gene_i = 'G0'",
                tenx.display()
            ),
            "",
        ),
    ];
    for (query, names) in cases {
        let sql = format!("{set}; {query}");
        let Some((peak, code, stderr)) = shell_peak_rss(&sql, dir.path()) else {
            eprintln!("skipped: no /usr/bin/time (GNU time) to measure the peak RSS with");
            return;
        };
        eprintln!("peak RSS {} MiB: {query}\n  {}", peak >> 20, stderr.trim());
        if names.is_empty() {
            assert_eq!(code, Some(0), "{sql}: {stderr}");
        } else {
            assert_eq!(code, Some(1), "{sql}: {stderr}");
            assert_contains(
                &stderr,
                &[
                    "Resources exhausted",
                    names,
                    "need",
                    "datafusion.runtime.memory_limit is 256.0 MiB",
                ],
            );
        }
        assert!(
            peak <= bound,
            "{sql}: peak RSS {} MiB over {} MiB: {stderr}",
            peak >> 20,
            bound >> 20
        );
    }
}
