//! Lists of tied sample pairs, for `n3` on the one-popcount path.
//!
//! `n3`, the sample pairs tied in both genes of a pair, is what the
//! one-popcount path needs besides its popcount (see [`super::Path`]). Walking
//! the tie groups of the gene with fewer tied pairs and looking each pair up
//! in the other gene ([`RankedMatrix::tied_in_both`]) branches on every
//! group's size and loads the group bounds and the sample order on the way.
//! Here each gene with few tied pairs lists them once, packed as
//! `a << 16 | b`, so that `n3` is one branch-free pass of two rank loads and
//! a comparison per pair.

use datafusion::error::Result;

use crate::input::RankedMatrix;
use crate::memory::try_with_capacity;

/// The tied sample pairs of every gene with at most `cap` of them.
#[derive(Debug, Default)]
pub struct TiedPairs {
    /// Gene `g`'s pairs are `pairs[start[g]..start[g + 1]]`: all
    /// [`RankedMatrix::tie_pairs`] of them for a listed gene, none for one
    /// that is not listed.
    start: Vec<usize>,
    pairs: Vec<u32>,
}

impl TiedPairs {
    /// Lists the tied pairs of every gene of `m` without missing values
    /// that has at most `cap` of them; none when `m` has more than 65,536
    /// samples (a sample index must fit 16 bits). Allocates fallibly.
    pub fn try_build(m: &RankedMatrix, cap: u64) -> Result<Self> {
        let listed = |g: usize| m.samples() <= 1 << 16 && !m.has_gaps(g) && m.tie_pairs(g) <= cap;
        let total: u64 = (0..m.genes())
            .filter(|&g| listed(g))
            .map(|g| m.tie_pairs(g))
            .sum();
        let mut pairs = try_with_capacity(total as usize, "tied sample pairs")?;
        let mut start = try_with_capacity(m.genes() + 1, "tied sample pairs")?;
        start.push(0);
        for g in 0..m.genes() {
            if listed(g) {
                for group in m.tie_groups(g) {
                    for (k, &a) in group.iter().enumerate() {
                        pairs.extend(group[k + 1..].iter().map(|&b| a << 16 | b));
                    }
                }
            }
            start.push(pairs.len());
        }
        Ok(Self { start, pairs })
    }

    /// Bytes the lists take at most for `genes` genes with `cap` pairs each.
    pub fn max_bytes(genes: usize, cap: u64) -> u64 {
        genes as u64 * cap * 4
    }

    /// Sample pairs tied in both `i` and `j` (genes without missing values):
    /// from the list of the one with fewer tied pairs when it has one, else
    /// by [`RankedMatrix::tied_in_both`].
    #[inline]
    pub fn n3(&self, m: &RankedMatrix, i: usize, j: usize) -> u64 {
        let (u, v) = if m.tie_pairs(i) <= m.tie_pairs(j) {
            (i, j)
        } else {
            (j, i)
        };
        let listed = &self.pairs[self.start[u]..self.start[u + 1]];
        if listed.len() as u64 != m.tie_pairs(u) {
            return m.tied_in_both(i, j); // not listed: too many tied pairs
        }
        let rv = m.ranks(v);
        listed
            .iter()
            .map(|&p| u64::from(rv[(p >> 16) as usize] == rv[(p & 0xffff) as usize]))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n3` from the lists equals `tied_in_both`, for listed and unlisted
    /// genes alike.
    #[test]
    fn lists_count_what_the_groups_count() {
        let mut next = super::super::tests::lcg(0x0123_4567_89ab_cdef);
        for n in [2usize, 5, 64, 131, 310] {
            for levels in [2u64, 7, 40, 1 << 31] {
                let genes = 6;
                let values: Vec<f64> = (0..genes * n).map(|_| next(levels) as f64).collect();
                let m = RankedMatrix::from_values(genes, n, &values);
                for cap in [0u64, 20, u64::MAX] {
                    let lists = TiedPairs::try_build(&m, cap).unwrap();
                    for i in 0..genes {
                        for j in 0..genes {
                            assert_eq!(
                                lists.n3(&m, i, j),
                                m.tied_in_both(i, j),
                                "n={n} levels={levels} cap={cap} {i} {j}"
                            );
                        }
                    }
                }
            }
        }
    }
}
