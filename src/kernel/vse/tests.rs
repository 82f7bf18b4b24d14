//! Tests of the VSE kernel: every instruction set and packing against a
//! naive oracle.
use super::*;

/// `fn $name(isa, seq, tmp) -> u64`: sorts `seq` and counts its strict
/// inversions with `isa`'s merge sort in the `$t` counting layout (values
/// with the top bit set take the scalar path).
macro_rules! count_inversions_in {
    ($name:ident, $t:ty, $sentinel:expr, $layout:ident) => {
        fn $name(isa: Isa, seq: &mut [$t], tmp: &mut [$t]) -> u64 {
            assert!(isa.is_available() && tmp.len() == seq.len());
            let n = seq.len();
            if n < 2 {
                return 0;
            }
            if isa == Isa::Scalar || seq.iter().any(|&x| x > <$t>::MAX >> 1) {
                let (count, in_tmp) = scalar::count(seq, tmp);
                if in_tmp {
                    seq.copy_from_slice(tmp);
                }
                return count;
            }
            let mut a: Vec<$t> = seq.iter().map(|&x| x << 1).collect();
            a.resize(padded(n), $sentinel);
            let mut b = vec![0; a.len()];
            let (count, in_tmp) = Ops::new(isa).$layout(&mut a, &mut b);
            let sorted = if in_tmp { &b[..n] } else { &a[..n] };
            for (s, &x) in seq.iter_mut().zip(sorted) {
                *s = x >> 1;
            }
            count
        }
    };
}

use crate::test_rng::XorShift as Rng;

count_inversions_in!(count_inversions, u32, SENTINEL_COUNT_U32, count_u32);
count_inversions_in!(count_inversions_u64, u64, SENTINEL_COUNT_U64, count_u64);

/// Dense ranks of `x` (0 for the smallest distinct value).
fn dense_ranks(x: &[u32]) -> Vec<u32> {
    let mut distinct = x.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    x.iter()
        .map(|v| distinct.binary_search(v).unwrap() as u32)
        .collect()
}

/// A random dense rank vector with values drawn from `levels` levels
/// (`levels >= n` gives a permutation, without ties).
fn random_ranks(rng: &mut Rng, n: usize, levels: usize) -> Vec<u32> {
    if levels >= n {
        let mut p: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut p);
        p
    } else {
        let x: Vec<u32> = (0..n).map(|_| rng.below(levels as u64) as u32).collect();
        dense_ranks(&x)
    }
}

/// Sample indices sorted by (rank, index).
fn order_of(u: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..u.len() as u32).collect();
    order.sort_by_key(|&k| (u[k as usize], k));
    order
}

/// `Σ t(t-1)/2` over the tie groups of `u`.
fn tie_pairs(u: &[u32]) -> u64 {
    let mut s = u.to_vec();
    s.sort_unstable();
    tie_pairs_sorted(&s)
}

/// The O(n²) oracle: `Σ_{a<b} sign(u_b - u_a)·sign(v_b - v_a)`.
fn naive(u: &[u32], v: &[u32]) -> i64 {
    let mut s = 0i64;
    for a in 0..u.len() {
        for b in a + 1..u.len() {
            let su = i64::from(u[b] > u[a]) - i64::from(u[b] < u[a]);
            let sv = i64::from(v[b] > v[a]) - i64::from(v[b] < v[a]);
            s += su * sv;
        }
    }
    s
}

/// Strict inversions by brute force.
fn brute_inversions<T: Ord>(a: &[T]) -> u64 {
    let mut c = 0;
    for x in 0..a.len() {
        for y in x + 1..a.len() {
            c += u64::from(a[x] > a[y]);
        }
    }
    c
}

/// Strict inversions by a plain top-down merge sort (sorts `a`).
fn merge_sort_inversions<T: Ord + Copy>(a: &mut [T]) -> u64 {
    let n = a.len();
    if n < 2 {
        return 0;
    }
    let (l, r) = a.split_at_mut(n / 2);
    let mut c = merge_sort_inversions(l) + merge_sort_inversions(r);
    let mut out = Vec::with_capacity(n);
    let (mut i, mut j) = (0, 0);
    while i < l.len() && j < r.len() {
        if r[j] < l[i] {
            out.push(r[j]);
            j += 1;
            c += (l.len() - i) as u64;
        } else {
            out.push(l[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&l[i..]);
    out.extend_from_slice(&r[j..]);
    a.copy_from_slice(&out);
    c
}

/// Knight's algorithm, written plainly: the reference for large n.
fn knight(u: &[u32], v: &[u32]) -> i64 {
    let mut pairs: Vec<(u32, u32)> = u.iter().copied().zip(v.iter().copied()).collect();
    pairs.sort_unstable();
    let n3 = tie_pairs_sorted(&pairs);
    let mut seq: Vec<u32> = pairs.iter().map(|p| p.1).collect();
    let nd = merge_sort_inversions(&mut seq);
    finish(u.len(), tie_pairs(u), tie_pairs(v), n3, nd)
}

fn isas() -> Vec<Isa> {
    Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
}

/// Every available instruction set, with u32 and forced u64 packing.
fn kernels(n: usize) -> Vec<Vse> {
    let mut out = Vec::new();
    for isa in isas() {
        for force_u64 in [false, true] {
            for packed_ties in [None, Some(false), Some(true)] {
                if force_u64 && packed_ties.is_some() {
                    continue;
                }
                let mut vse = Vse::new(isa, n);
                vse.force_u64 = force_u64;
                vse.packed_ties = packed_ties;
                out.push(vse);
            }
        }
    }
    out
}

fn check_pair(kernels: &mut [Vse], u: &[u32], v: &[u32], expected: i64, what: &str) {
    let order = order_of(u);
    let (n1, n2) = (tie_pairs(u), tie_pairs(v));
    for vse in kernels {
        let label = format!(
            "{what}, n={}, isa={}, u64={}, packed ties={:?}",
            u.len(),
            vse.isa().name(),
            vse.force_u64,
            vse.packed_ties
        );
        assert_eq!(vse.numerator(u, &order, n1, v, n2), expected, "{label}");
        assert_eq!(
            vse.numerator_unamortised(u, n1, v, n2),
            expected,
            "unamortised {label}"
        );
    }
}

#[test]
fn numerator_matches_naive() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let sizes = (2..=70).chain([127, 128, 129, 310, 1000]);
    for n in sizes {
        let mut ks = kernels(n);
        for levels in [n, 2, 3, 5, n / 4 + 1, n / 2 + 1] {
            for _ in 0..if n <= 70 { 3 } else { 2 } {
                let u = random_ranks(&mut rng, n, levels);
                let v = random_ranks(&mut rng, n, levels.max(n / 3));
                check_pair(&mut ks, &u, &v, naive(&u, &v), "random");
                let w = random_ranks(&mut rng, n, levels);
                check_pair(&mut ks, &w, &u, naive(&w, &u), "random ties");
            }
        }
    }
}

#[test]
fn special_inputs() {
    let mut rng = Rng::new(42);
    for n in [
        2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 310, 1000,
    ] {
        let mut ks = kernels(n);
        let up: Vec<u32> = (0..n as u32).collect();
        let down: Vec<u32> = up.iter().rev().copied().collect();
        let flat = vec![0u32; n];
        let perm = random_ranks(&mut rng, n, n);
        // long runs of ties: 2 and 3 levels in blocks
        let blocks: Vec<u32> = (0..n).map(|k| (k * 3 / n) as u32).collect();
        let halves: Vec<u32> = (0..n).map(|k| u32::from(k >= n / 2)).collect();
        let cases: [(&[u32], &[u32], &str); 11] = [
            (&up, &up, "identical"),
            (&up, &down, "reversed"),
            (&down, &up, "reversed u"),
            (&flat, &perm, "constant u"),
            (&perm, &flat, "constant v"),
            (&flat, &flat, "both constant"),
            (&blocks, &perm, "long u runs"),
            (&blocks, &down, "long u runs, v reversed"),
            (&halves, &blocks, "long runs both"),
            (&perm, &perm, "same permutation"),
            (&halves, &down, "halves"),
        ];
        for (u, v, what) in cases {
            check_pair(&mut ks, u, v, naive(u, v), what);
        }
    }
}

#[test]
fn short_vectors() {
    for isa in isas() {
        let mut vse = Vse::new(isa, 0);
        assert_eq!(vse.numerator(&[], &[], 0, &[], 0), 0);
        assert_eq!(vse.numerator(&[0], &[0], 0, &[0], 0), 0);
        assert_eq!(vse.numerator_unamortised(&[0], 0, &[0], 0), 0);
        assert_eq!(vse.numerator(&[0, 1], &[0, 1], 0, &[1, 0], 0), -1);
        // u = (1,2,3,4), v = (1,3,2,4): 5 concordant, 1 discordant
        let u = [0, 1, 2, 3];
        let v = [0, 2, 1, 3];
        assert_eq!(vse.numerator(&u, &[0, 1, 2, 3], 0, &v, 0), 4);
        assert_eq!(vse.numerator_unamortised(&u, 0, &v, 0), 4);
    }
}

#[test]
#[should_panic(expected = "out of range")]
fn bad_order_panics() {
    let n = 40;
    let mut order: Vec<u32> = (0..n as u32).collect();
    order[20] = 1000;
    let u: Vec<u32> = (0..n as u32).collect();
    Vse::new(Isa::detect(), n).numerator(&u, &order, 0, &u, 0);
}

#[test]
fn count_inversions_matches_brute_force() {
    let mut rng = Rng::new(7);
    for n in 0..300 {
        for modulus in [2u64, 7, 1000, 1 << 31, 1 << 32] {
            let a: Vec<u32> = (0..n).map(|_| rng.below(modulus) as u32).collect();
            let expected = brute_inversions(&a);
            let mut sorted = a.clone();
            sorted.sort_unstable();
            for isa in isas() {
                let mut seq = a.clone();
                let mut tmp = vec![0; n];
                let got = count_inversions(isa, &mut seq, &mut tmp);
                assert_eq!(got, expected, "n={n} mod={modulus} isa={}", isa.name());
                assert_eq!(seq, sorted, "n={n} mod={modulus} isa={}", isa.name());
            }
        }
    }
}

#[test]
fn count_inversions_u64_matches_brute_force() {
    let mut rng = Rng::new(11);
    for n in 0..200 {
        for modulus in [0u64, 3, 1000, 1 << 40, 1 << 63] {
            let a: Vec<u64> = (0..n)
                .map(|_| match modulus {
                    0 => rng.next_u64(),
                    m => rng.below(m),
                })
                .collect();
            let expected = brute_inversions(&a);
            let mut sorted = a.clone();
            sorted.sort_unstable();
            for isa in isas() {
                let mut seq = a.clone();
                let mut tmp = vec![0; n];
                let got = count_inversions_u64(isa, &mut seq, &mut tmp);
                assert_eq!(got, expected, "n={n} mod={modulus} isa={}", isa.name());
                assert_eq!(seq, sorted, "n={n} mod={modulus} isa={}", isa.name());
            }
        }
    }
}

#[test]
fn sorting_full_range_keys() {
    let mut rng = Rng::new(5);
    for isa in isas() {
        for n in [16, 32, 48, 64, 80, 320, 1008] {
            let a: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32 | (1 << 31)).collect();
            let mut buf = a.clone();
            let mut tmp = vec![0; n];
            let in_tmp = Ops::new(isa).sort_u32(&mut buf, &mut tmp);
            let mut sorted = a.clone();
            sorted.sort_unstable();
            assert_eq!(if in_tmp { &tmp } else { &buf }, &sorted, "{}", isa.name());
            let a: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let mut buf = a.clone();
            let mut tmp = vec![0; n];
            let in_tmp = Ops::new(isa).sort_u64(&mut buf, &mut tmp);
            let mut sorted = a.clone();
            sorted.sort_unstable();
            assert_eq!(if in_tmp { &tmp } else { &buf }, &sorted, "{}", isa.name());
        }
    }
}

#[test]
fn large_n_u64_path() {
    let n = 70_000;
    let mut rng = Rng::new(3);
    let a: Vec<u64> = (0..n).map(|_| rng.below(n as u64)).collect();
    let mut reference = a.clone();
    let expected = merge_sort_inversions(&mut reference);
    for isa in isas() {
        let mut seq = a.clone();
        let mut tmp = vec![0; n];
        assert_eq!(
            count_inversions_u64(isa, &mut seq, &mut tmp),
            expected,
            "{}",
            isa.name()
        );
        assert_eq!(seq, reference);
    }
    // numerator beyond u32 packing: a pair without and a pair with ties
    let pairs = [
        (random_ranks(&mut rng, n, n), random_ranks(&mut rng, n, n)),
        (
            random_ranks(&mut rng, n, 50),
            random_ranks(&mut rng, n, 2000),
        ),
    ];
    for (u, v) in &pairs {
        let expected = knight(u, v);
        let order = order_of(u);
        let (n1, n2) = (tie_pairs(u), tie_pairs(v));
        for isa in isas() {
            let mut vse = Vse::new(isa, n);
            assert_eq!(
                vse.numerator(u, &order, n1, v, n2),
                expected,
                "{}",
                isa.name()
            );
            assert_eq!(
                vse.numerator_unamortised(u, n1, v, n2),
                expected,
                "{}",
                isa.name()
            );
            vse.force_u64 = true;
            assert_eq!(
                vse.numerator(u, &order, n1, v, n2),
                expected,
                "{}",
                isa.name()
            );
        }
    }
}
