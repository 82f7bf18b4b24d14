//! The portable reference path: the same bottom-up structure as the SIMD
//! paths (sorted blocks, then merge passes), with insertion-sorted blocks and
//! branch-free scalar merges. It compares whole values, so it needs no tags
//! and accepts any values, padded or not.

use super::{Isa, Ops, merge_passes};
use crate::kernel::gse::insertion_sort as insertion_count;

/// Elements per insertion-sorted block (one AVX-512 register of u32).
const BLOCK: usize = 16;

/// Merges the sorted runs `left` and `right` into `out` without branches on
/// the data, returning the pairs (l in `left`, r in `right`) with `l > r`
/// when `COUNT`.
fn merge<T: Copy + Ord, const COUNT: bool>(left: &[T], right: &[T], out: &mut [T]) -> u64 {
    let (nl, nr) = (left.len(), right.len());
    assert_eq!(out.len(), nl + nr);
    let (mut i, mut j) = (0, 0);
    let mut inversions = 0u64;
    while i < nl && j < nr {
        let (l, r) = (left[i], right[j]);
        let take_right = r < l;
        out[i + j] = if take_right { r } else { l };
        if COUNT {
            inversions += u64::from(take_right) * (nl - i) as u64;
        }
        i += usize::from(!take_right);
        j += usize::from(take_right);
    }
    out[i + j..nl + j].copy_from_slice(&left[i..]);
    out[nl + j..].copy_from_slice(&right[j..]);
    inversions
}

/// Sorts `buf` (any length) counting its strict inversions; the result ends
/// in `buf`, or in `tmp` when the flag is set.
pub(super) fn count<T: Copy + Ord>(buf: &mut [T], tmp: &mut [T]) -> (u64, bool) {
    let mut inversions = 0u64;
    for block in buf.chunks_mut(BLOCK) {
        inversions += insertion_count(block);
    }
    let (merged, in_tmp) = merge_passes(buf, tmp, BLOCK, merge::<T, true>);
    (inversions + merged, in_tmp)
}

/// Sorts `buf` (any length); the result ends in `buf`, or in `tmp` when it
/// returns `true`.
pub(super) fn sort<T: Copy + Ord>(buf: &mut [T], tmp: &mut [T]) -> bool {
    for block in buf.chunks_mut(BLOCK) {
        insertion_count(block);
    }
    merge_passes(buf, tmp, BLOCK, merge::<T, false>).1
}

/// Insertion-sorts every block of `buf`; returns the block length.
pub(super) fn sort_blocks<T: Copy + Ord>(buf: &mut [T]) -> usize {
    for block in buf.chunks_mut(BLOCK) {
        insertion_count(block);
    }
    BLOCK
}

/// `out[k] = u[order[k]] << 16 | v[order[k]]`. Panics if an index is out of
/// range.
pub(super) fn gather_packed(u: &[u32], v: &[u32], order: &[u32], out: &mut [u32]) {
    for (o, &k) in out.iter_mut().zip(order) {
        *o = (lookup(u, k) << 16) | lookup(v, k);
    }
}

/// `out[k] = values[order[k]]`, doubled when `SHIFT`. Panics if an index is
/// out of range.
pub(super) fn gather<const SHIFT: bool>(values: &[u32], order: &[u32], out: &mut [u32]) {
    for (o, &k) in out.iter_mut().zip(order) {
        *o = lookup(values, k) << u32::from(SHIFT);
    }
}

/// No equal-neighbour bits: the caller sets them all.
fn equal_neighbours(_: &[u32], _: &mut [u64]) -> usize {
    0
}

/// The portable paths (see [`Ops`]): they need no CPU feature.
pub(super) const OPS: Ops = Ops {
    isa: Isa::Scalar,
    count_u32: count::<u32>,
    count_u64: count::<u64>,
    sort_u32: sort::<u32>,
    sort_u64: sort::<u64>,
    sort_blocks_u32: sort_blocks::<u32>,
    gather: gather::<false>,
    gather_shifted: gather::<true>,
    gather_packed,
    equal_neighbours,
};

/// `values[k]`; panics with a clear message if `k` is out of range.
#[inline]
pub(super) fn lookup(values: &[u32], k: u32) -> u32 {
    *values
        .get(k as usize)
        .expect("sample order index out of range")
}
