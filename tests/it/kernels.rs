//! Every kernel against the naive oracle, on random inputs with and without
//! ties and missing values, n from 2 to 2,000.

use std::sync::Arc;

use datafusion_kendall::kernel::bitset::BitPlanes;
use datafusion_kendall::kernel::isa::Isa;
use datafusion_kendall::kernel::{KernelKind, PairKernel, PairNumerator, naive, pair_count};
use datafusion_kendall::rank::RankedMatrix;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A genes × n matrix; `levels` = None gives distinct values, Some(k)
/// draws from k values (ties).
fn random_matrix(rng: &mut SmallRng, genes: usize, n: usize, levels: Option<u32>) -> Vec<f64> {
    (0..genes * n)
        .map(|_| match levels {
            None => rng.random::<f64>(),
            Some(k) => f64::from(rng.random_range(0..k)),
        })
        .collect()
}

/// S recomputed from the definition on the raw values.
fn s_from_values(x: &[f64], y: &[f64]) -> i64 {
    let mut s = 0i64;
    for a in 0..x.len() {
        for b in a + 1..x.len() {
            let sx = (x[b] - x[a]).signum() * f64::from(u8::from(x[b] != x[a]));
            let sy = (y[b] - y[a]).signum() * f64::from(u8::from(y[b] != y[a]));
            s += (sx * sy) as i64;
        }
    }
    s
}

/// Every kernel on every available instruction set.
fn all_kernels(m: &RankedMatrix) -> Vec<PairKernel> {
    let n = m.samples();
    let planes = Arc::new(BitPlanes::build(m));
    let mut kernels = vec![
        PairKernel::new(KernelKind::Naive, n, Isa::Scalar, None).unwrap(),
        PairKernel::new(KernelKind::Gse, n, Isa::Scalar, None).unwrap(),
    ];
    for isa in Isa::ALL.into_iter().filter(|isa| isa.is_available()) {
        kernels
            .push(PairKernel::new(KernelKind::Bitset, n, isa, Some(Arc::clone(&planes))).unwrap());
        kernels.push(PairKernel::new(KernelKind::Vse, n, isa, None).unwrap());
    }
    kernels
}

/// The values of genes `i` and `j` at the samples where both are present.
fn shared(values: &[f64], n: usize, i: usize, j: usize) -> (Vec<f64>, Vec<f64>) {
    (0..n)
        .map(|a| (values[i * n + a], values[j * n + a]))
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .unzip()
}

fn check_all_kernels(values: &[f64], genes: usize, n: usize, what: &str) {
    let m = RankedMatrix::from_values(genes, n, values);
    let oracle = |i: usize, j: usize| {
        if m.any_gaps() {
            let (x, y) = shared(values, n, i, j);
            s_from_values(&x, &y)
        } else {
            naive::numerator(m.ranks(i), m.ranks(j))
        }
    };
    for (k, mut kernel) in all_kernels(&m).into_iter().enumerate() {
        // Single pairs, both argument orders.
        for i in 0..genes {
            for j in 0..genes {
                if i != j {
                    let s = kernel.numerator(&m, i, j);
                    assert_eq!(
                        s,
                        oracle(i, j),
                        "kernel #{k} {:?}: {what}, n={n}, genes {i},{j}",
                        kernel.kind()
                    );
                    assert!(s.unsigned_abs() <= pair_count(n));
                }
            }
        }
        // Blocks: every pair j > i exactly once.
        let mut out: Vec<PairNumerator> = Vec::new();
        let rows: Vec<u32> = (0..genes as u32).collect();
        kernel.block(&m, &rows, 0..genes, &mut out);
        assert_eq!(out.len(), genes * (genes - 1) / 2, "kernel #{k}");
        for p in out {
            assert!(p.i < p.j);
            assert_eq!(
                p.s,
                oracle(p.i as usize, p.j as usize),
                "kernel #{k} block: {what}, n={n}"
            );
        }
    }
}

#[test]
fn naive_oracle_matches_definition_on_raw_values() {
    let mut rng = SmallRng::seed_from_u64(1);
    for n in [2, 3, 5, 17, 57, 100] {
        for levels in [None, Some(2), Some(5)] {
            let v = random_matrix(&mut rng, 2, n, levels);
            let m = RankedMatrix::from_values(2, n, &v);
            assert_eq!(
                naive::numerator(m.ranks(0), m.ranks(1)),
                s_from_values(&v[..n], &v[n..])
            );
        }
    }
}

#[test]
fn kernels_agree_small_n_with_and_without_ties() {
    let mut rng = SmallRng::seed_from_u64(2);
    for n in 2..=70 {
        for levels in [None, Some(2), Some(3), Some(n as u32 / 2 + 1)] {
            let v = random_matrix(&mut rng, 4, n, levels);
            check_all_kernels(&v, 4, n, &format!("levels={levels:?}"));
        }
    }
}

#[test]
fn kernels_agree_large_n() {
    let mut rng = SmallRng::seed_from_u64(3);
    for n in [127, 128, 129, 310, 1000, 2000] {
        for levels in [None, Some(4), Some(50)] {
            let v = random_matrix(&mut rng, 3, n, levels);
            check_all_kernels(&v, 3, n, &format!("levels={levels:?}"));
        }
    }
}

#[test]
fn kernels_agree_on_constant_sorted_and_reversed_genes() {
    for n in [2, 16, 17, 57, 310] {
        let mut v = Vec::new();
        v.extend((0..n).map(|k| k as f64)); // ascending
        v.extend((0..n).map(|k| -(k as f64))); // descending
        v.extend(std::iter::repeat_n(3.5, n)); // constant
        v.extend((0..n).map(|k| (k / 3) as f64)); // ascending with ties
        v.extend((0..n).map(|k| ((n - k) / 2) as f64)); // descending with ties
        check_all_kernels(&v, 5, n, "structured");
        let m = RankedMatrix::from_values(5, n, &v);
        let n0 = pair_count(n) as i64;
        assert_eq!(naive::numerator(m.ranks(0), m.ranks(1)), -n0);
        assert_eq!(naive::numerator(m.ranks(0), m.ranks(2)), 0);
    }
}

#[test]
fn kernels_agree_when_tie_free_and_tied_genes_mix() {
    // Genes 0..4 have no ties, 4..9 have ties: the bitset kernel's tie-free
    // row groups then meet tied columns, and mixed groups occur.
    let mut rng = SmallRng::seed_from_u64(4);
    for n in [5, 57, 64, 65, 310] {
        let mut v = random_matrix(&mut rng, 4, n, None);
        v.extend(random_matrix(&mut rng, 5, n, Some(3)));
        check_all_kernels(&v, 9, n, "mixed");
    }
}

#[test]
fn kernels_agree_with_missing_values() {
    let mut rng = SmallRng::seed_from_u64(5);
    for n in [2, 3, 17, 57, 64, 65, 130, 310, 1000] {
        for levels in [None, Some(3), Some(40)] {
            for rate in [0.01, 0.1, 0.5] {
                let genes = 7;
                let mut v = random_matrix(&mut rng, genes, n, levels);
                // Gene 0 stays complete, gene 1 loses everything but one
                // value, gene 2 everything.
                for (k, x) in v.iter_mut().enumerate().skip(n) {
                    let gene = k / n;
                    if (gene == 1 && k % n != n / 2)
                        || gene == 2
                        || (gene > 2 && rng.random_bool(rate))
                    {
                        *x = f64::NAN;
                    }
                }
                check_all_kernels(&v, genes, n, &format!("levels={levels:?} missing={rate}"));
            }
        }
    }
}

/// Over 65,535 samples VSE cannot pack two gene-wide ranks into a u32, even
/// for a pair sharing fewer samples: its missing-value path must not try.
#[test]
fn vse_with_missing_values_beyond_u32_packing() {
    let mut rng = SmallRng::seed_from_u64(6);
    // 30 % of the values tie at 0 (so many ties make VSE pack keys), the
    // others are distinct. Genes 1 and 2 lose half their values: each keeps
    // ~70,000 distinct ranks, but they share only ~50,000 samples, few
    // enough to pack were the ranks not too wide.
    let (genes, n) = (3, 200_000);
    let mut v = random_matrix(&mut rng, genes, n, None);
    for (k, x) in v.iter_mut().enumerate() {
        if rng.random_bool(0.3) {
            *x = 0.0;
        }
        if k >= n && rng.random_bool(0.5) {
            *x = f64::NAN;
        }
    }
    let m = RankedMatrix::from_values(genes, n, &v);
    let mut gse = PairKernel::new(KernelKind::Gse, n, Isa::Scalar, None).unwrap();
    for isa in Isa::ALL.into_iter().filter(|isa| isa.is_available()) {
        let mut vse = PairKernel::new(KernelKind::Vse, n, isa, None).unwrap();
        for (i, j) in [(0, 1), (1, 2), (2, 0)] {
            assert_eq!(
                vse.numerator(&m, i, j),
                gse.numerator(&m, i, j),
                "{isa} {i},{j}"
            );
        }
    }
}

/// A genes × n matrix of distinct values except that each value is, with
/// probability `p`, one of three shared values: a few groups of ties per
/// gene, so pairs take the bit-plane kernel's one-popcount path (few tied
/// pairs to check) or its two-popcount one (many), depending on `p`.
fn few_ties_matrix(rng: &mut SmallRng, genes: usize, n: usize, p: f64) -> Vec<f64> {
    (0..genes * n)
        .map(|_| {
            if rng.random_bool(p) {
                f64::from(rng.random_range(0..3u32)) - 5.0
            } else {
                rng.random::<f64>()
            }
        })
        .collect()
}

#[test]
fn kernels_agree_with_few_and_many_tied_pairs() {
    let mut rng = SmallRng::seed_from_u64(6);
    for n in [4, 57, 64, 65, 310, 1000] {
        for p in [0.005, 0.02, 0.05, 0.1, 0.3, 0.7] {
            // Tie-free genes too, so groups mix the paths.
            let mut v = few_ties_matrix(&mut rng, 6, n, p);
            v.extend(random_matrix(&mut rng, 2, n, None));
            check_all_kernels(&v, 8, n, &format!("few ties p={p}"));
        }
    }
}

#[test]
fn kernels_agree_around_the_harley_seal_thresholds() {
    // Plane lengths (multiples of 8 words) from 112 to 304 words: both
    // sides of the AVX2 Harley–Seal thresholds (64 vectors: 256 words for
    // one counted stream, 128 for the two of the tied formula) and lengths
    // that leave a partial 16-vector block.
    let mut rng = SmallRng::seed_from_u64(7);
    for n in 120..=196 {
        for levels in [None, Some(n as u32 / 4), Some(3)] {
            let v = random_matrix(&mut rng, 3, n, levels);
            check_all_kernels(&v, 3, n, &format!("levels={levels:?}"));
        }
        let v = few_ties_matrix(&mut rng, 3, n, 0.05);
        check_all_kernels(&v, 3, n, "few ties");
    }
}
