//! Listed pairs of two in-memory sparse matrices, computed straight into
//! an array of taus aligned with the list, without a query.
//!
//! The engine of `kendall_candidate_pairs('pairs', 'x', 'y')`: the two
//! matrices stacked on their shared samples, ranked once, the kernel
//! decided for their shape and data (rank sums for two-valued features),
//! the distinct pairs split into equal runs, one thread per run. What a
//! query adds on top — planning, a table of rows, their gene columns, and
//! finding each listed pair's row again — is left out: this is the form a
//! caller holding the matrices and the pairs as positions wants
//! (`batch_kendall_tau` in Python). The taus are the query's, bit for bit.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::Array;
use datafusion::error::{DataFusionError, Result};
use rayon::slice::ParallelSliceMut;

use super::config::ScanConfig;
use super::prepare::{Prepared, Shared, prepare_loaded};
use crate::error::{Panicked, data_error, panicked};
use crate::input::pair_list::ListedPairs;
use crate::input::sparse_table::SparseTable;
use crate::input::stack::stack;
use crate::kernel::{PairKernel, PairNumerator, tau};
use crate::memory::QueryMemory;
use crate::options::KendallOptions;
use crate::rank::RankedMatrix;
use crate::schema::CANDIDATE_PAIRS;
use crate::work::MAX_BLOCK_PAIRS;

/// Kendall's tau of the listed pairs `(x feature first[k], y feature
/// second[k])`, as `kendall_candidate_pairs` computes them over `x`'s and
/// `y`'s shared samples (matched by id), under `options` (the variant, the
/// kernel, `min_periods`), on `partitions` threads (`None`: one per core, as
/// a query's default): `tau[k]` for pair `k`,
/// NaN where it is undefined (a constant feature, too few samples). A pair
/// listed twice is computed once.
///
/// Stops with an error soon after `stop` is set (checked between blocks
/// of pairs). Errors name the argument: a position outside its matrix,
/// lists of different lengths, fewer than 2 shared samples.
pub fn cross_listed_tau(
    x: &SparseTable,
    y: &SparseTable,
    (first, second): (&[u32], &[u32]),
    options: &KendallOptions,
    partitions: Option<usize>,
    stop: &AtomicBool,
) -> Result<Vec<f64>> {
    if first.len() != second.len() {
        return Err(DataFusionError::Execution(format!(
            "the pairs' two sides differ in length: {} first and {} second positions",
            first.len(),
            second.len()
        )));
    }
    for (side, positions, bound) in [("first", first, x.genes()), ("second", second, y.genes())] {
        if let Some(&bad) = positions.iter().find(|&&p| p as usize >= bound) {
            return Err(DataFusionError::Execution(format!(
                "a {side} position ({bad}) is outside its matrix's {bound} features"
            )));
        }
    }
    if first.is_empty() {
        return Ok(Vec::new());
    }
    let memory = QueryMemory::unbounded("the matrices of the listed pairs");
    let left = x.matrix(&memory, "x")?;
    let right = y.matrix(&memory, "y")?;
    let (left_genes, right_genes) = (left.genes.len(), right.genes.len());
    let matrix = stack(left, "x", right, "y", &memory)?;
    let (listed, slots) = distinct_pairs(first, second, left_genes);
    let shared = Shared {
        cross: Some((left_genes, right_genes)),
        listed: Some(Arc::new(listed)),
        propagate: false,
    };
    let mut config = ScanConfig::of_options(CANDIDATE_PAIRS, options, None, None)?;
    config.partitions = partitions
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let prepared = prepare_loaded(matrix, &shared, &config, (false, false), &memory)?;
    let distinct = compute(&prepared, &config, stop)?;
    Ok(match slots {
        Some(slots) => slots.iter().map(|&s| distinct[s as usize]).collect(),
        None => distinct,
    })
}

/// The distinct pairs of `(first, second)` as a candidate list over the
/// stacked matrix (`second` after the `left` features), sorted, and where
/// that is not the listed order or pairs repeat, each listed pair's
/// position in it.
fn distinct_pairs(first: &[u32], second: &[u32], left: usize) -> (ListedPairs, Option<Vec<u32>>) {
    let key = |k: usize| (u64::from(first[k]) << 32) | u64::from(second[k]);
    let ordered = (1..first.len()).all(|k| key(k - 1) < key(k));
    let push = |list: &mut ListedPairs, k: usize| {
        list.first.push(first[k]);
        list.second.push(second[k] + left as u32);
    };
    let mut list = ListedPairs::default();
    if ordered {
        // The usual case (pairs written gene by gene): the list as it is.
        list.first.reserve_exact(first.len());
        list.second.reserve_exact(first.len());
        (0..first.len()).for_each(|k| push(&mut list, k));
        return (list, None);
    }
    let mut order: Vec<u32> = (0..first.len() as u32).collect();
    order.par_sort_unstable_by_key(|&k| key(k as usize));
    let mut slots = vec![0u32; first.len()];
    let mut last = None;
    for &k in &order {
        let k = k as usize;
        if last != Some(key(k)) {
            push(&mut list, k);
            last = Some(key(k));
        }
        slots[k] = (list.len() - 1) as u32;
    }
    (list, Some(slots))
}

/// Every listed pair of `prepared` computed, one thread per partition, each
/// writing its run of the list's taus.
pub(super) fn compute(
    prepared: &Prepared,
    config: &ScanConfig,
    stop: &AtomicBool,
) -> Result<Vec<f64>> {
    let ranges = prepared
        .work
        .listed_ranges()
        .ok_or_else(|| DataFusionError::Internal("listed pairs without a listed split".into()))?;
    let total = ranges.last().map_or(0, |r| r.end);
    let mut taus = vec![f64::NAN; total];
    let mut parts = Vec::with_capacity(ranges.len());
    let mut rest = taus.as_mut_slice();
    for range in ranges {
        let (part, tail) = rest.split_at_mut(range.len());
        parts.push((range.clone(), part));
        rest = tail;
    }
    std::thread::scope(|scope| {
        let threads: Vec<_> = parts
            .into_iter()
            .enumerate()
            .map(|(p, (range, out))| {
                scope.spawn(move || compute_part(prepared, config, p, range, out, stop))
            })
            .collect();
        threads.into_iter().try_for_each(|t| {
            t.join().map_err(|payload| {
                data_error(panicked(
                    Panicked::Computing("the listed pairs"),
                    payload.as_ref(),
                ))
            })?
        })
    })?;
    Ok(taus)
}

/// Partition `p`'s pairs (the list's `range`) into `out`.
fn compute_part(
    prepared: &Prepared,
    config: &ScanConfig,
    p: usize,
    range: Range<usize>,
    out: &mut [f64],
    stop: &AtomicBool,
) -> Result<()> {
    let m = &prepared.matrix;
    let kernel = PairKernel::new(
        prepared.kernel,
        m.samples(),
        config.kernel.isa,
        prepared.planes.clone(),
    )?;
    let mut kernel = match config.kernel.rank_sums() {
        true => kernel.with_rank_sums(),
        false => kernel,
    };
    let mut cursor = prepared.work.cursor(p);
    let mut block = Vec::new();
    let mut done = 0;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(DataFusionError::Execution(
                "the computation of the listed pairs was stopped".into(),
            ));
        }
        block.clear();
        if !cursor.compute_next(&prepared.work, m, MAX_BLOCK_PAIRS, &mut kernel, &mut block) {
            break;
        }
        for (slot, pair) in out[done..done + block.len()].iter_mut().zip(&block) {
            *slot = pair_tau(m, config, pair);
        }
        done += block.len();
    }
    if done != range.len() {
        return Err(DataFusionError::Internal(format!(
            "partition {p} computed {done} of its {} listed pairs",
            range.len()
        )));
    }
    Ok(())
}

/// The tau of a computed pair, as a query's row has it: over the samples
/// both features have, NaN below `min_periods` of them.
fn pair_tau(m: &RankedMatrix, config: &ScanConfig, p: &PairNumerator) -> f64 {
    let (i, j) = (p.i as usize, p.j as usize);
    let stats = m.pair_stats(i, j);
    match stats.n >= config.min_periods {
        true => tau(config.variant, p.s, stats.n, stats.u, stats.v),
        false => f64::NAN,
    }
}
