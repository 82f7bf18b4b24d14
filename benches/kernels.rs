//! Per-pair kernel throughput, every kernel in the same run.
//!
//! ```text
//! cargo bench --bench kernels                 # n = 57, 128, 310, 1000
//! cargo bench --bench kernels -- 57 310       # chosen n
//! cargo bench --bench kernels -- 5000 vse bitset   # chosen n and kernels
//! cargo bench --bench kernels -- 57 missing=0.1     # 10 % of values missing
//! cargo bench --bench kernels -- 2000 zeros=0.5     # half the values 0 (counts)
//! cargo bench --bench kernels -- 20000 zeros=0.95 vse zero   # single-cell-like
//! cargo bench --bench kernels -- 310 levels=2 bitset  # ties from 2n levels
//! ```
//!
//! For each n: 48 random genes (no ties, and with ties: values from n/4
//! levels, or F·n with `levels=F`: `levels=2` gives about n/4 tied pairs
//! per gene, as data rounded to a few digits has; with `missing=F` each value is missing with probability F, with
//! `zeros=F` it is 0 with probability F, as in count data), all
//! 1,128 pairs per round, rounds repeated for ~0.4 s of the thread's CPU
//! time per kernel and instruction set. Prints pairs per CPU-second (per
//! core, so other processes on a shared machine take less off the numbers
//! than with wall time) and the ratios to naive and GSE.

use std::hint::black_box;
use std::time::Duration;

use std::sync::Arc;

use datafusion_kendall::kernel::bitset::BitPlanes;
use datafusion_kendall::kernel::isa::Isa;
use datafusion_kendall::kernel::{KernelKind, PairKernel, PairNumerator};
use datafusion_kendall::rank::RankedMatrix;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const GENES: usize = 48;

fn matrix(n: usize, ties: bool, spread: f64, missing: f64, zeros: f64, seed: u64) -> RankedMatrix {
    let mut rng = SmallRng::seed_from_u64(seed);
    let levels = ((n as f64 * spread) as u32).max(2);
    let values: Vec<f64> = (0..GENES * n)
        .map(|_| {
            if rng.random_bool(missing) {
                f64::NAN
            } else if rng.random_bool(zeros) {
                0.0
            } else if ties {
                f64::from(rng.random_range(0..levels))
            } else {
                rng.random()
            }
        })
        .collect();
    RankedMatrix::from_values(GENES, n, &values)
}

/// Pairs per second of `kernel` over all pairs of `m`, through the block
/// interface the execution plan uses (rows of 4 against all columns).
fn throughput(mut kernel: PairKernel, m: &RankedMatrix) -> f64 {
    let mut out: Vec<PairNumerator> = Vec::with_capacity(m.genes() * m.genes());
    let all_rows: Vec<u32> = (0..m.genes() as u32).collect();
    let mut round = |kernel: &mut PairKernel| {
        out.clear();
        for rows in all_rows.chunks(4) {
            kernel.block(m, rows, 0..m.genes(), &mut out);
        }
        black_box(&out);
    };
    round(&mut kernel); // warm up
    let pairs_per_round = (m.genes() * (m.genes() - 1) / 2) as f64;
    // Reading the thread's CPU clock is a system call: at n = 57 a round
    // takes about 8 µs, so it is read once per batch of rounds lasting
    // about 10 ms, not after every round.
    let started = thread_cpu_time();
    let (mut rounds, mut batch) = (0u64, 1u64);
    loop {
        for _ in 0..batch {
            round(&mut kernel);
        }
        rounds += batch;
        let elapsed = thread_cpu_time() - started;
        if elapsed >= Duration::from_millis(400) {
            return rounds as f64 * pairs_per_round / elapsed.as_secs_f64();
        }
        let per_round = elapsed.as_secs_f64() / rounds as f64;
        batch = ((0.01 / per_round.max(1e-9)) as u64).clamp(1, 1 << 20);
    }
}

/// CPU time this thread has run: unlike wall time, not inflated while other
/// processes hold the core.
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let probability = |name: &str| -> f64 {
        args.iter()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
            .map_or(0.0, |f| f.parse().expect("takes a probability"))
    };
    let (missing, zeros) = (probability("missing"), probability("zeros"));
    let spread = args
        .iter()
        .find_map(|a| a.strip_prefix("levels="))
        .map_or(0.25, |f| f.parse().expect("levels=F takes a number"));
    // Kernel names among the arguments restrict the run to those kernels.
    let only: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["naive", "gse", "vse", "bitset", "zero"].contains(a))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![57, 128, 310, 1000]
    } else {
        sizes
    };
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|i| i.is_available()).collect();
    println!("| n | ties | kernel | simd | pairs/s | vs naive | vs gse |");
    println!("|---:|:---:|:---|:---|---:|---:|---:|");
    for &n in &sizes {
        for ties in [false, true] {
            let m = matrix(n, ties, spread, missing, zeros, n as u64);
            let mut runs: Vec<(KernelKind, Isa)> = vec![
                (KernelKind::Naive, Isa::Scalar),
                (KernelKind::Gse, Isa::Scalar),
            ];
            for kind in [KernelKind::Vse, KernelKind::Bitset] {
                runs.extend(isas.iter().map(|&isa| (kind, isa)));
            }
            // Scalar code; its VSE fallback (missing values) on the best ISA.
            runs.push((KernelKind::Zero, isas[0]));
            runs.retain(|(kind, _)| only.is_empty() || only.contains(&kind.to_string().as_str()));
            // Bit-planes only when the bitset kernel runs (GBs at large n).
            let planes = runs
                .iter()
                .any(|(kind, _)| *kind == KernelKind::Bitset)
                .then(|| Arc::new(BitPlanes::build(&m)));
            // Measure everything first, so each row has both ratios.
            let rates: Vec<f64> = runs
                .iter()
                .map(|&(kind, isa)| {
                    throughput(PairKernel::new(kind, n, isa, planes.clone()).unwrap(), &m)
                })
                .collect();
            let rate_of = |want: KernelKind| {
                runs.iter()
                    .zip(&rates)
                    .find(|((kind, _), _)| *kind == want)
                    .map(|(_, &rate)| rate)
            };
            let ratio = |rate: f64, base: Option<f64>| {
                base.map_or("-".to_string(), |b| format!("{:.2}x", rate / b))
            };
            for (&(kind, isa), &rate) in runs.iter().zip(&rates) {
                let simd = if matches!(kind, KernelKind::Naive | KernelKind::Gse | KernelKind::Zero)
                {
                    "-"
                } else {
                    isa.name()
                };
                println!(
                    "| {n} | {} | {kind} | {simd} | {rate:.3e} | {} | {} |",
                    if ties { "yes" } else { "no" },
                    ratio(rate, rate_of(KernelKind::Naive)),
                    ratio(rate, rate_of(KernelKind::Gse)),
                );
            }
        }
    }
}

/// Wall time since the first call, where there is no thread CPU clock.
#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}
