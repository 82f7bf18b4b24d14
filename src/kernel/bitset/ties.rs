//! Lists of tied sample pairs: `n3` on the one-popcount path, and the
//! correction that lets tied genes take the tie-free XOR path.
//!
//! `n3`, the sample pairs tied in both genes of a pair, is what the
//! one-popcount path needs besides its popcount (see [`super::Path`]). Walking
//! the tie groups of the gene with fewer tied pairs and looking each pair up
//! in the other gene ([`RankedMatrix::tied_in_both`]) branches on every
//! group's size and loads the group bounds and the sample order on the way.
//! Here each gene with few tied pairs lists them once, packed as
//! `a << 16 | b` (a < b), so that `n3` is one branch-free pass of two rank
//! loads and a comparison per pair.
//!
//! The same lists let two tied genes skip their U planes altogether
//! ([`TiedPairs::xor_corrections4`]): `n0 - 2·pc(Gu ^ Gv)` is `S` as if every
//! pair tied in a gene were ordered "not greater" in it, and the pairs it
//! counts wrongly are exactly the listed ones.

use datafusion::error::Result;

use crate::memory::try_with_capacity;
use crate::rank::RankedMatrix;

/// The samples `(a, b)` of a listed pair `a << 16 | b`.
#[inline(always)]
fn samples_of(p: u32) -> (usize, usize) {
    ((p >> 16) as usize, (p & 0xffff) as usize)
}

/// `#{r_b > r_a}` over `pairs` (each `a << 16 | b`) in ranks `r`.
///
/// # Safety
/// Every sample index of the pairs is below `r.len()` (no bounds checks:
/// they were a third of the loop's instructions).
unsafe fn ups(pairs: &[u32], r: &[u32]) -> u32 {
    // Fits u32: a list has fewer than 2^32 pairs (samples <= 2^16).
    let mut up = 0u32;
    for &p in pairs {
        let (a, b) = samples_of(p);
        // SAFETY: the caller guarantees the indices.
        let (a, b) = unsafe { (*r.get_unchecked(a), *r.get_unchecked(b)) };
        up += u32::from(b > a);
    }
    up
}

/// Per lane k, `#{r_b > r_a} - #{r_b < r_a}` over `pairs` in the lane-k
/// ranks of `ranks4`. Written per lane so that the compiler makes each
/// step one 4-lane load, compare and add (SSE2).
///
/// # Safety
/// Every sample index of the pairs is below `ranks4.len()`.
unsafe fn signs4(pairs: &[u32], ranks4: &[[i32; 4]]) -> [i32; 4] {
    let mut acc = [0i32; 4];
    for &p in pairs {
        let (a, b) = samples_of(p);
        // SAFETY: the caller guarantees the indices.
        let (a, b) = unsafe { (ranks4.get_unchecked(a), ranks4.get_unchecked(b)) };
        for k in 0..4 {
            acc[k] += i32::from(b[k] > a[k]) - i32::from(b[k] < a[k]);
        }
    }
    acc
}

/// The ranks of four genes interleaved by sample (`out[s][k]` = rank of
/// sample s in `rows[k]`), as [`TiedPairs::xor_corrections4`] reads them.
/// Ranks of listed genes are below 2^16, so they fit i32 lanes.
pub fn interleave4(m: &RankedMatrix, rows: [usize; 4], out: &mut Vec<[i32; 4]>) {
    let ranks = rows.map(|g| m.ranks(g));
    out.clear();
    out.extend((0..m.samples()).map(|s| ranks.map(|r| r[s] as i32)));
}

/// The tied sample pairs of every gene with at most `cap` of them.
#[derive(Debug, Default)]
pub struct TiedPairs {
    /// Gene `g`'s pairs are `pairs[start[g]..start[g + 1]]`: all
    /// [`RankedMatrix::tie_pairs`] of them for a listed gene, none for one
    /// that is not listed.
    start: Vec<usize>,
    pairs: Vec<u32>,
    /// Samples of the matrix the lists were built from (every listed
    /// index is below it).
    samples: usize,
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
                        // Ordered by sample (a < b): the correction reads
                        // the pair's orientation in the other gene.
                        pairs.extend(group[k + 1..].iter().map(|&b| a.min(b) << 16 | a.max(b)));
                    }
                }
            }
            start.push(pairs.len());
        }
        Ok(Self {
            start,
            pairs,
            samples: m.samples(),
        })
    }

    /// Bytes the lists take at most for `genes` genes with `cap` pairs each.
    pub fn max_bytes(genes: usize, cap: u64) -> u64 {
        genes as u64 * cap * 4
    }

    /// Whether gene `g` (of the matrix the lists were built from) is listed:
    /// it has no missing values and all its tied pairs are in its list
    /// (none for a gene without ties).
    #[inline]
    pub fn listed(&self, m: &RankedMatrix, g: usize) -> bool {
        !m.has_gaps(g) && self.list(g).len() as u64 == m.tie_pairs(g)
    }

    /// Gene `g`'s list (empty for a gene that is not listed).
    #[inline]
    fn list(&self, g: usize) -> &[u32] {
        &self.pairs[self.start[g]..self.start[g + 1]]
    }

    /// What turns the tie-free formula into `S` for two [listed](Self::listed)
    /// genes u and v, for four rows u = `rows[k]` and one column v = `j`:
    /// `S = n0 - 2·pc(Gu ^ Gv) + Σ_{(a,b)∈Tu} (2·[v_b > v_a] - 1) + Σ_{(a,b)∈Tv} sgn(u_b - u_a)`
    /// over their lists Tu and Tv of tied sample pairs (a < b).
    ///
    /// Proof: write σ(x) = 2·x - 1 for a bit x. Over all n0 pairs,
    /// `Σ σ(Gu)·σ(Gv) = n0 - 2·pc(Gu ^ Gv)`, and σ(G) is the pair's sign in
    /// the gene except on its tied pairs, where G is 0 (σ = -1) but the sign
    /// is 0. So `S = n0 - 2·pc(Gu ^ Gv) - Σ_{Tu ∪ Tv} σ(Gu)·σ(Gv)`. On Tu,
    /// `-σ(Gu)·σ(Gv) = σ(Gv) = 2·[v_b > v_a] - 1`; on Tv outside Tu,
    /// `-σ(Gu)·σ(Gv) = σ(Gu) = sgn(u_b - u_a)` (u is not tied there), and
    /// `sgn(u_b - u_a) = 0` on Tv ∩ Tu, which the first sum already holds.
    ///
    /// One rank comparison per listed pair, instead of a U plane per gene
    /// and the logic operations and second popcount it costs per word. The
    /// rows' ranks come interleaved by sample in `ranks4` ([`interleave4`]),
    /// so the column's list is read once for the four rows, one 4-lane
    /// comparison per listed pair. (AVX2 gathers of the ranks, 8 pairs per
    /// step, were 3–7 % faster on an AMD EPYC Zen 4 than scalar loads for
    /// the rows' lists: too little for an instruction that microcode
    /// mitigations make several times slower on many Intel cores.)
    #[inline]
    pub fn xor_corrections4(
        &self,
        m: &RankedMatrix,
        rows: [usize; 4],
        ranks4: &[[i32; 4]],
        j: usize,
    ) -> [i64; 4] {
        let rj = m.ranks(j);
        let n = self.samples;
        assert!(
            rj.len() == n && ranks4.len() == n,
            "lists of another matrix"
        );
        // SAFETY: listed sample indices are below n, the length of both
        // rank slices (asserted above).
        let signs = unsafe { signs4(self.list(j), ranks4) };
        std::array::from_fn(|k| {
            let ti = self.list(rows[k]);
            // SAFETY: as above: indices below n == rj.len().
            let up = unsafe { ups(ti, rj) };
            2 * i64::from(up) - ti.len() as i64 + i64::from(signs[k])
        })
    }

    /// [`TiedPairs::xor_corrections4`] for one pair, lane by lane: the
    /// reference the tests hold it to.
    #[cfg(test)]
    pub fn xor_correction(&self, m: &RankedMatrix, i: usize, j: usize) -> i64 {
        let (ti, tj) = (self.list(i), self.list(j));
        let (ri, rj) = (m.ranks(i), m.ranks(j));
        let sign = |p: u32| {
            let (a, b) = samples_of(p);
            i64::from(ri[b] > ri[a]) - i64::from(ri[b] < ri[a])
        };
        let up = |p: u32| {
            let (a, b) = samples_of(p);
            2 * i64::from(rj[b] > rj[a]) - 1
        };
        ti.iter().map(|&p| up(p)).sum::<i64>() + tj.iter().map(|&p| sign(p)).sum::<i64>()
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
        let listed = self.list(u);
        if listed.len() as u64 != m.tie_pairs(u) {
            return m.tied_in_both(i, j); // not listed: too many tied pairs
        }
        let rv = m.ranks(v);
        listed
            .iter()
            .map(|&p| {
                let (a, b) = samples_of(p);
                u64::from(rv[a] == rv[b])
            })
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

    /// The XOR path with the lists' correction gives the oracle's `S` for
    /// every pair of listed genes, with few and with many ties.
    #[test]
    fn xor_correction_gives_s() {
        use super::super::BitPlanes;
        use crate::kernel::naive;
        let mut next = super::super::tests::lcg(0x05ee_d0f7_a1e5);
        for n in [2usize, 3, 5, 63, 64, 65, 131, 310] {
            for levels in [1u64, 2, 7, 40, (n * n / 8) as u64 + 1, 1 << 31] {
                let genes = 6;
                let values: Vec<f64> = (0..genes * n).map(|_| next(levels) as f64).collect();
                let m = RankedMatrix::from_values(genes, n, &values);
                let planes = BitPlanes::build(&m);
                let lists = TiedPairs::try_build(&m, u64::MAX).unwrap();
                let n0 = m.n0() as i64;
                for i in 0..genes {
                    assert!(lists.listed(&m, i));
                    for j in 0..genes {
                        let xor: i64 = (planes.g(i).iter().zip(planes.g(j)))
                            .map(|(a, b)| i64::from((a ^ b).count_ones()))
                            .sum();
                        let s = naive::numerator(m.ranks(i), m.ranks(j));
                        let what = format!("n={n} levels={levels} {i} {j}");
                        assert_eq!(n0 - 2 * xor + lists.xor_correction(&m, i, j), s, "{what}");
                        // Four rows at once: i in every lane but one.
                        let rows = [i, (i + 1) % genes, i, i];
                        let mut ranks4 = Vec::new();
                        interleave4(&m, rows, &mut ranks4);
                        let four = lists.xor_corrections4(&m, rows, &ranks4, j);
                        assert_eq!(n0 - 2 * xor + four[0], s, "four rows, {what}");
                        assert_eq!(four[2..], four[..1].repeat(2), "{what}");
                        let other = lists.xor_correction(&m, rows[1], j);
                        assert_eq!(four[1], other, "second lane, {what}");
                    }
                }
            }
        }
    }
}
