//! Per-pair kernel throughput, every kernel in the same run.
//!
//! ```text
//! cargo bench --bench kernels                 # n = 57, 128, 310, 1000
//! cargo bench --bench kernels -- 57 310       # chosen n
//! ```
//!
//! For each n: 48 random genes (no ties, and with ties: values from n/4
//! levels), all 1,128 pairs per round, rounds repeated for ~0.5 s per kernel.
//! Prints pairs/s per kernel and the ratio to naive. Ratios are what hold on
//! a shared machine; absolute numbers move with its load.

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use datafusion_kendall::input::RankedMatrix;
use datafusion_kendall::kernel::bitset::BitPlanes;
use datafusion_kendall::kernel::isa::Isa;
use datafusion_kendall::kernel::{KernelKind, PairKernel, PairNumerator};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const GENES: usize = 48;
const KERNELS: [KernelKind; 2] = [KernelKind::Naive, KernelKind::Gse];

fn matrix(n: usize, ties: bool, seed: u64) -> RankedMatrix {
    let mut rng = SmallRng::seed_from_u64(seed);
    let levels = (n / 4).max(2) as u32;
    let values: Vec<f64> = (0..GENES * n)
        .map(|_| {
            if ties {
                f64::from(rng.random_range(0..levels))
            } else {
                rng.random()
            }
        })
        .collect();
    RankedMatrix::from_values(GENES, n, &values)
}

/// Pairs per second of `kind` over all pairs of `m`.
fn throughput(kind: KernelKind, m: &RankedMatrix) -> f64 {
    let mut kernel = PairKernel::new(kind, m.samples());
    let round = |kernel: &mut PairKernel| {
        let mut acc = 0i64;
        for i in 0..m.genes() {
            for j in i + 1..m.genes() {
                acc = acc.wrapping_add(kernel.numerator(m, i, j));
            }
        }
        black_box(acc);
    };
    round(&mut kernel); // warm up
    let pairs_per_round = (m.genes() * (m.genes() - 1) / 2) as f64;
    let started = Instant::now();
    let mut rounds = 0u64;
    while started.elapsed() < Duration::from_millis(500) {
        round(&mut kernel);
        rounds += 1;
    }
    rounds as f64 * pairs_per_round / started.elapsed().as_secs_f64()
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![57, 128, 310, 1000]
    } else {
        sizes
    };
    println!("| n | ties | kernel | pairs/s | vs naive |");
    println!("|---:|:---:|:---|---:|---:|");
    for &n in &sizes {
        for ties in [false, true] {
            let m = matrix(n, ties, n as u64);
            let naive = throughput(KernelKind::Naive, &m);
            for kind in KERNELS {
                let rate = if kind == KernelKind::Naive {
                    naive
                } else {
                    throughput(kind, &m)
                };
                println!(
                    "| {n} | {} | {kind} | {rate:.3e} | {:.2}x |",
                    if ties { "yes" } else { "no" },
                    rate / naive
                );
            }
        }
    }
}
