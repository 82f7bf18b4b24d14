//! GSE, the generic sorting-enabled kernel: Knight's O(n log n) algorithm
//! with exact tie handling.
//!
//! 1. Order the samples by `(u, v)`. The order by `u` depends only on gene
//!    `u`, so it is computed once per gene ([`RankedMatrix::order`]); per
//!    pair only the runs of tied `u` are sorted by `v`, while counting the
//!    joint ties `n3`.
//! 2. Merge-sort the resulting `v` sequence, counting discordant pairs: each
//!    time an element of the right run overtakes the left run, the left
//!    run's remaining length is added (strict inversions only, so pairs tied
//!    in `v`, and pairs tied in `u` which step 1 already put in `v` order,
//!    never count).
//! 3. `S = n0 - n1 - n2 + n3 - 2·nd`, with `n1`, `n2` from the per-gene tie
//!    statistics.
//!
//! A pair with missing values ([`Gse::numerator_complete`]) is counted the
//! same way on the samples both genes have, with `n0`, `n1`, `n2` recounted
//! on them: the slow path every sorting kernel shares.

use crate::rank::RankedMatrix;
use crate::rank::pair_count;

/// Runs shorter than this are sorted by insertion, counting shifts.
const INSERTION_RUN: usize = 16;

/// Scratch space for the GSE kernel; reused across pairs.
#[derive(Debug, Default)]
pub struct Gse {
    seq: Vec<u32>,
    tmp: Vec<u32>,
    /// `u` along `seq`, for pairs with missing values.
    keys: Vec<u32>,
}

impl Gse {
    /// Scratch for vectors of `samples` values (grows on demand).
    pub fn new(samples: usize) -> Self {
        Self {
            seq: Vec::with_capacity(samples),
            tmp: Vec::with_capacity(samples),
            keys: Vec::new(),
        }
    }

    /// The numerator `S = nc - nd` of genes `i` (as `u`) and `j` (as `v`).
    pub fn numerator(&mut self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        let v = m.ranks(j);
        self.seq.clear();
        self.seq.extend(m.order(i).iter().map(|&k| v[k as usize]));
        let n3 = if m.tie_pairs(i) > 0 {
            let u = m.ranks(i);
            let order = m.order(i);
            sort_tie_runs(|p| u[order[p] as usize], &mut self.seq).1
        } else {
            0
        };
        self.tmp.resize(self.seq.len(), 0);
        let nd = count_inversions_to(&mut self.seq, &mut self.tmp).0;
        let s = i128::from(m.n0()) - i128::from(m.tie_pairs(i)) - i128::from(m.tie_pairs(j))
            + i128::from(n3)
            - 2 * i128::from(nd);
        s as i64
    }

    /// The numerator of genes `i` and `j` over the samples where both have a
    /// value: those samples are gathered in `i`'s order and counted as
    /// above, with `n0`, `n1` and `n2` recounted on them.
    pub fn numerator_complete(&mut self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        m.shared_ranks(i, j, &mut self.keys, &mut self.seq);
        let n = self.seq.len();
        let keys = &self.keys;
        let (n1, n3) = sort_tie_runs(|p| keys[p], &mut self.seq);
        self.tmp.resize(n, 0);
        let (nd, in_tmp) = count_inversions_to(&mut self.seq, &mut self.tmp);
        let sorted = if in_tmp { &self.tmp } else { &self.seq };
        let n2 = tie_pairs_sorted(sorted);
        let s = i128::from(pair_count(n)) - i128::from(n1) - i128::from(n2) + i128::from(n3)
            - 2 * i128::from(nd);
        s as i64
    }
}

/// Sorts each run of equal `u` (positions `p` with the same `u(p)`, which
/// must be ascending) of `seq` ascending; returns the tied pairs of `u`,
/// `n1`, and the joint ties `n3`.
fn sort_tie_runs(u: impl Fn(usize) -> u32, seq: &mut [u32]) -> (u64, u64) {
    let n = seq.len();
    let (mut n1, mut n3) = (0u64, 0u64);
    let mut start = 0;
    while start < n {
        let rank = u(start);
        let mut end = start + 1;
        while end < n && u(end) == rank {
            end += 1;
        }
        if end - start > 1 {
            n1 += pair_count(end - start);
            let run = &mut seq[start..end];
            if run.len() <= INSERTION_RUN {
                insertion_sort(run);
            } else {
                run.sort_unstable();
            }
            n3 += tie_pairs_sorted(run);
        }
        start = end;
    }
    (n1, n3)
}

/// `Σ t(t-1)/2` over the runs of equal values of a sorted slice.
fn tie_pairs_sorted(sorted: &[u32]) -> u64 {
    let mut pairs = 0u64;
    let mut run = 1u64;
    for w in sorted.windows(2) {
        if w[0] == w[1] {
            pairs += run;
            run += 1;
        } else {
            run = 1;
        }
    }
    pairs
}

/// Sorts `a` ascending and returns its number of strict inversions
/// (`a < b` positions with `a[a] > a[b]`). `tmp` must be as long as `a`.
pub fn count_inversions(a: &mut [u32], tmp: &mut [u32]) -> u64 {
    let (inversions, in_tmp) = count_inversions_to(a, tmp);
    if in_tmp {
        a.copy_from_slice(tmp);
    }
    inversions
}

/// [`count_inversions`], leaving the sorted values in `a` or, when the
/// returned flag is set, in `tmp`.
fn count_inversions_to(a: &mut [u32], tmp: &mut [u32]) -> (u64, bool) {
    let n = a.len();
    debug_assert_eq!(tmp.len(), n);
    let mut inversions = 0u64;
    for run in a.chunks_mut(INSERTION_RUN) {
        inversions += insertion_sort(run);
    }
    let mut width = INSERTION_RUN;
    let mut in_tmp = false;
    let (mut src, mut dst) = (a, tmp);
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (left, right) = src[start..end].split_at(mid - start);
            inversions += merge_counting(left, right, &mut dst[start..end]);
            start = end;
        }
        std::mem::swap(&mut src, &mut dst);
        in_tmp = !in_tmp;
        width *= 2;
    }
    (inversions, in_tmp)
}

/// Insertion sort that returns the number of shifts (= strict inversions).
pub(crate) fn insertion_sort<T: Copy + Ord>(a: &mut [T]) -> u64 {
    let mut shifts = 0u64;
    for k in 1..a.len() {
        let x = a[k];
        let mut p = k;
        while p > 0 && a[p - 1] > x {
            a[p] = a[p - 1];
            p -= 1;
        }
        a[p] = x;
        shifts += (k - p) as u64;
    }
    shifts
}

/// Merges two sorted runs into `out`, returning the pairs (l in `left`,
/// r in `right`) with l > r.
fn merge_counting(left: &[u32], right: &[u32], out: &mut [u32]) -> u64 {
    let (mut i, mut j, mut k) = (0, 0, 0);
    let mut inversions = 0u64;
    while i < left.len() && j < right.len() {
        if right[j] < left[i] {
            out[k] = right[j];
            j += 1;
            inversions += (left.len() - i) as u64;
        } else {
            out[k] = left[i];
            i += 1;
        }
        k += 1;
    }
    out[k..k + left.len() - i].copy_from_slice(&left[i..]);
    k += left.len() - i;
    out[k..].copy_from_slice(&right[j..]);
    inversions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_inversions(a: &[u32]) -> u64 {
        let mut c = 0;
        for x in 0..a.len() {
            for y in x + 1..a.len() {
                c += u64::from(a[x] > a[y]);
            }
        }
        c
    }

    #[test]
    fn inversions_match_brute_force() {
        let mut rng = crate::test_rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        for n in 0..300 {
            for modulus in [2u32, 7, 1000] {
                let mut a: Vec<u32> = (0..n)
                    .map(|_| rng.below(u64::from(modulus)) as u32)
                    .collect();
                let expected = brute_inversions(&a);
                let mut sorted = a.clone();
                sorted.sort_unstable();
                let mut tmp = vec![0; n];
                assert_eq!(count_inversions(&mut a, &mut tmp), expected, "n={n}");
                assert_eq!(a, sorted, "n={n}");
            }
        }
    }

    #[test]
    fn tie_pairs_of_runs() {
        assert_eq!(tie_pairs_sorted(&[]), 0);
        assert_eq!(tie_pairs_sorted(&[1, 1, 1, 2, 3, 3]), 3 + 1);
    }
}
