//! Sorting keys with their entries: [`sort_keys`], used to rank a gene's
//! values (`rank/sparse.rs`) and to order a candidate list's
//! p-values (`stats/fdr.rs`).

use std::ops::Range;

use rayon::prelude::*;

/// Sorts `(key, entry)` pairs whose entries ascend as given by key, ties
/// in entry order: the order of `sort_unstable` on the pairs.
///
/// Most significant bits first: the keys are dealt (stably, so entries
/// stay ascending within a bucket) into about one bucket per four keys by the
/// highest bits in which they differ, and each bucket is sorted the same
/// way, down to a few keys, which are sorted by insertion. Spread keys take
/// two passes where a least-significant-byte radix sort of 64-bit keys
/// takes up to eight (a gene's values share their sign and exponent bytes,
/// rarely more); crowded keys (many near one value, a few far away) take
/// one more pass per crowded level, each on fewer bits.
pub fn sort_keys(keys: &mut [(u64, u32)]) {
    let mut scratch = vec![(0u64, 0u32); keys.len()];
    sort_bucket(keys, &mut scratch, deals_in_parallel(keys.len()));
}

/// Whether a sort of `n` keys deals its buckets to rayon's threads (a
/// gene's keys are sorted on one thread, many genes at once; a list of
/// millions of p-values alone).
fn deals_in_parallel(n: usize) -> bool {
    n >= 1 << 16
}

/// [`sort_keys`] of `keys`, `scratch` as long.
fn sort_bucket(keys: &mut [(u64, u32)], scratch: &mut [(u64, u32)], parallel: bool) {
    let n = keys.len();
    if n <= 32 {
        // Insertion sort: a bucket of tied keys (entries already
        // ascending) costs one comparison per pair.
        for q in 1..n {
            let item = keys[q];
            let mut at = q;
            while at > 0 && keys[at - 1] > item {
                keys[at] = keys[at - 1];
                at -= 1;
            }
            keys[at] = item;
        }
        return;
    }
    let (lo, hi) = keys.iter().fold((u64::MAX, 0), |(lo, hi), &(key, _)| {
        (lo.min(key), hi.max(key))
    });
    // Bits below the prefix every key shares.
    let spread = 64 - (lo ^ hi).leading_zeros();
    if spread == 0 {
        // One key: entries already ascend.
        return;
    }
    // About one bucket per four keys (2^5 .. 2^16 of them).
    let width = (usize::BITS - n.leading_zeros())
        .saturating_sub(2)
        .clamp(5, 16)
        .min(spread);
    let shift = spread - width;
    let buckets = 1usize << width;
    let bucket = |key: u64| ((key >> shift) as usize) & (buckets - 1);
    let mut start = vec![0usize; buckets + 1];
    for &(key, _) in keys.iter() {
        start[bucket(key) + 1] += 1;
    }
    for d in 0..buckets {
        start[d + 1] += start[d];
    }
    let mut next = start.clone();
    for &(key, entry) in keys.iter() {
        let d = bucket(key);
        scratch[next[d]] = (key, entry);
        next[d] += 1;
    }
    keys.copy_from_slice(scratch);
    if parallel {
        // The buckets are disjoint: sorted on rayon's threads.
        let ranges: Vec<Range<usize>> = (0..buckets).map(|d| start[d]..start[d + 1]).collect();
        split_mut(keys, &ranges)
            .into_par_iter()
            .zip(split_mut(scratch, &ranges))
            .filter(|(part, _)| part.len() > 1)
            .for_each(|(part, room)| sort_bucket(part, room, false));
        return;
    }
    for d in 0..buckets {
        let range = start[d]..start[d + 1];
        if range.len() > 1 {
            sort_bucket(&mut keys[range.clone()], &mut scratch[range], false);
        }
    }
}

/// `data` cut into one mutable slice per range (consecutive ranges covering
/// it from the start).
pub(crate) fn split_mut<'a, T>(mut data: &'a mut [T], ranges: &[Range<usize>]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(ranges.len());
    for range in ranges {
        let (part, rest) = std::mem::take(&mut data).split_at_mut(range.len());
        parts.push(part);
        data = rest;
    }
    parts
}

/// Genes `0..genes` cut into `parts` (at most `genes`, at least 1)
/// consecutive ranges of about equal entries, gene `g`'s entries being
/// `start[g]..start[g + 1]` (`start` ascending from 0, `genes + 1` long):
/// range `k` is `bounds[k]..bounds[k + 1]`, from 0 to `genes`. How work on
/// entries grouped by gene is shared among rayon's threads.
pub(crate) fn balanced_bounds<T>(start: &[T], parts: usize) -> Vec<usize>
where
    T: Copy + PartialOrd + TryFrom<usize> + TryInto<usize>,
{
    let genes = start.len().saturating_sub(1);
    let parts = parts.clamp(1, genes.max(1));
    let total = start.last().and_then(|&s| s.try_into().ok()).unwrap_or(0);
    let total = total.max(1);
    let mut bounds = vec![0usize];
    for t in 1..parts {
        let at = T::try_from(total * t / parts)
            .map_or(genes, |target| start.partition_point(|&s| s < target))
            .min(genes);
        bounds.push(at.max(bounds[t - 1]));
    }
    bounds.push(genes);
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucketed_keys_equal_a_comparison_sort() {
        let mut rng = crate::test_rng::XorShift::new(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.next_u64();
        let cases = [
            (5usize, 3u64),
            (300, 7),
            (1000, u64::MAX),
            (5000, 1 << 40),
            (5000, 1),
            (5000, 2),
            (70_000, 1 << 20),
            (4000, 3000),
        ];
        for (n, spread) in cases.into_iter().chain([(300_000, 1 << 50), (200_000, 9)]) {
            let mut keys: Vec<(u64, u32)> = (0..n as u32)
                .map(|q| {
                    let x = next();
                    // Some keys share their high bytes, some are tied.
                    let key = if spread == u64::MAX {
                        x
                    } else if q % 3 == 0 {
                        // A third of the keys crowded into a few buckets.
                        (1 << 62) + x % spread.min(5)
                    } else {
                        (1 << 62) + x % spread
                    };
                    (key, q)
                })
                .collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            sort_keys(&mut keys);
            assert_eq!(keys, expected, "n {n}");
        }
    }
}
