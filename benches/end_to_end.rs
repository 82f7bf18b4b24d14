//! End-to-end throughput of `kendall_all_pairs` through SQL.
//!
//! ```text
//! cargo bench --bench end_to_end -- FILE [FILE ...]
//! ```
//!
//! For each file, kernel (naive, gse, vse, bitset) and partition count (1,
//! all cores): `SELECT count(*) FROM kendall_all_pairs(FILE) [WHERE ...]` —
//! no row kept beyond the count — timed once, including reading and ranking
//! the input. Prints the pairs the scan computed (its `pairs_computed`
//! metric: all of them, or those a gene filter touches), pairs/s and the
//! speed-up over the first partition count. Options: `--kernels naive,gse`,
//! `--partitions 1,2`, `--tile-sizes 256` (comma lists),
//! `--where "abs(tau) >= 0.8"`.

use std::time::Instant;

use std::sync::Arc;

use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};

struct Args {
    files: Vec<String>,
    kernels: Vec<String>,
    partitions: Vec<usize>,
    tile_sizes: Vec<usize>,
    filter: Option<String>,
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

fn parse() -> Args {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut a = Args {
        files: Vec::new(),
        kernels: ["naive", "gse", "vse", "bitset", "zero"]
            .map(String::from)
            .to_vec(),
        partitions: if cores > 1 { vec![1, cores] } else { vec![1] },
        tile_sizes: vec![datafusion_kendall::options::DEFAULT_TILE_SIZE],
        filter: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => {}
            "--kernels" => a.kernels = list(&it.next().unwrap_or_default()),
            "--partitions" => a.partitions = list(&it.next().unwrap_or_default()),
            "--tile-sizes" => a.tile_sizes = list(&it.next().unwrap_or_default()),
            "--where" => a.filter = it.next(),
            file => a.files.push(file.to_string()),
        }
    }
    if a.files.is_empty() {
        a.files.push("data/demo_expression.parquet".into());
    }
    a
}

/// Runs the count; returns (rows kept, pairs computed, seconds).
async fn count(ctx: &SessionContext, file: &str, filter: Option<&str>) -> (u64, u64, f64) {
    let filter = filter.map(|f| format!(" WHERE {f}")).unwrap_or_default();
    let started = Instant::now();
    let plan = ctx
        .sql(&format!(
            "SELECT count(*) FROM kendall_all_pairs('{file}'){filter}"
        ))
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    let secs = started.elapsed().as_secs_f64();
    let pairs = pairs_computed(&plan).expect("a KendallExec in the plan");
    let c = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .unwrap()
        .value(0);
    (c as u64, pairs as u64, secs)
}

/// The `pairs_computed` metric of the plan's `KendallExec`.
fn pairs_computed(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    if plan.name() == "KendallExec" {
        return plan
            .metrics()?
            .sum_by_name("pairs_computed")
            .map(|v| v.as_usize());
    }
    plan.children().into_iter().find_map(pairs_computed)
}

#[tokio::main]
async fn main() {
    let args = parse();
    if let Some(f) = &args.filter {
        println!("filter: WHERE {f}");
    }
    println!(
        "| file | kernel | tile | partitions | pairs | rows | seconds | pairs/s | vs 1 partition |"
    );
    println!("|:---|:---|---:|---:|---:|---:|---:|---:|---:|");
    for file in &args.files {
        for kernel in &args.kernels {
            for &tile in &args.tile_sizes {
                let mut single = None;
                for &p in &args.partitions {
                    let config = datafusion_kendall::with_kendall_options(
                        SessionConfig::new().with_target_partitions(p),
                    );
                    let ctx = SessionContext::new_with_config(config);
                    datafusion_kendall::register(&ctx).unwrap();
                    for set in [
                        format!("SET kendall.kernel = '{kernel}'"),
                        format!("SET kendall.tile_size = {tile}"),
                    ] {
                        ctx.sql(&set).await.unwrap().collect().await.unwrap();
                    }
                    let (rows, pairs, secs) = count(&ctx, file, args.filter.as_deref()).await;
                    let rate = pairs as f64 / secs;
                    let base = *single.get_or_insert(rate);
                    println!(
                        "| {file} | {kernel} | {tile} | {p} | {pairs} | {rows} | {secs:.3} | {rate:.3e} | {:.2}x |",
                        rate / base
                    );
                }
            }
        }
    }
}
