//! Rank transform: each gene once, before any pair is computed.

use rayon::prelude::*;

use crate::kernel::{GeneTies, pair_count};

/// Dense ranks and tie statistics of every gene, the form all kernels read.
///
/// Kendall's tau depends only on the order of values, so each gene's values
/// are replaced by dense ranks (`0..distinct`, equal values equal ranks) and
/// its tie count `Σ t(t-1)/2` is computed here, once.
#[derive(Debug, Clone)]
pub struct RankedMatrix {
    genes: usize,
    samples: usize,
    /// genes × samples, row-major.
    ranks: Vec<u32>,
    /// Per gene, the sample indices in ascending (rank, index) order.
    order: Vec<u32>,
    /// Per gene, the number of tied sample pairs.
    ties: Vec<u64>,
    /// Per gene, the number of distinct values.
    distinct: Vec<u32>,
    /// Per gene, the tie terms of the variance of S.
    variance: Vec<VarianceTerms>,
}

/// Tie terms of one gene in the variance of Kendall's S (Kendall 1970, as
/// scipy and R's `cor.test` use): sums over groups of t equal values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VarianceTerms {
    /// `Σ t(t-1)(t-2)`.
    pub t2: f64,
    /// `Σ t(t-1)(2t+5)`.
    pub t5: f64,
}

impl RankedMatrix {
    /// Ranks a genes × samples row-major matrix of finite values (genes in
    /// parallel). `-0.0` and `0.0` are the same value.
    pub fn from_values(genes: usize, samples: usize, values: &[f64]) -> Self {
        assert_eq!(values.len(), genes * samples, "matrix shape");
        assert!(samples <= u32::MAX as usize, "at most u32::MAX samples");
        let mut ranks = vec![0u32; values.len()];
        let mut order = vec![0u32; values.len()];
        let stats: Vec<(u64, u32, VarianceTerms)> = if samples == 0 {
            vec![(0, 0, VarianceTerms::default()); genes]
        } else {
            ranks
                .par_chunks_mut(samples)
                .zip(order.par_chunks_mut(samples))
                .zip(values.par_chunks(samples))
                .map(|((r, o), x)| rank_gene(x, r, o))
                .collect()
        };
        let mut ties = Vec::with_capacity(genes);
        let mut distinct = Vec::with_capacity(genes);
        let mut variance = Vec::with_capacity(genes);
        for (t, d, v) in stats {
            ties.push(t);
            distinct.push(d);
            variance.push(v);
        }
        Self {
            genes,
            samples,
            ranks,
            order,
            ties,
            distinct,
            variance,
        }
    }

    /// Number of genes.
    pub fn genes(&self) -> usize {
        self.genes
    }

    /// Number of samples per gene.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Number of sample pairs, `n0 = n(n-1)/2`.
    pub fn n0(&self) -> u64 {
        pair_count(self.samples)
    }

    /// Dense ranks of gene `g`.
    #[inline]
    pub fn ranks(&self, g: usize) -> &[u32] {
        &self.ranks[g * self.samples..(g + 1) * self.samples]
    }

    /// Sample indices of gene `g` in ascending (rank, index) order.
    #[inline]
    pub fn order(&self, g: usize) -> &[u32] {
        &self.order[g * self.samples..(g + 1) * self.samples]
    }

    /// Tied sample pairs of gene `g`: `Σ t(t-1)/2` over its groups of equal values.
    #[inline]
    pub fn tie_pairs(&self, g: usize) -> u64 {
        self.ties[g]
    }

    /// Number of distinct values of gene `g`.
    pub fn distinct(&self, g: usize) -> u32 {
        self.distinct[g]
    }

    /// The tie terms of gene `g` in the variance of S (for p-values).
    pub fn variance_terms(&self, g: usize) -> VarianceTerms {
        self.variance[g]
    }

    /// The tie statistics of gene `g` that tau needs.
    #[inline]
    pub fn ties(&self, g: usize) -> GeneTies {
        GeneTies {
            tie_pairs: self.ties[g],
            distinct: self.distinct[g],
        }
    }
}

/// Ranks one gene; returns (tied pairs, distinct values, variance terms).
fn rank_gene(x: &[f64], ranks: &mut [u32], order: &mut [u32]) -> (u64, u32, VarianceTerms) {
    for (k, o) in order.iter_mut().enumerate() {
        *o = k as u32;
    }
    // `+ 0.0` turns -0.0 into 0.0 so that total_cmp treats them as equal;
    // inputs are validated finite, so total_cmp is the numeric order.
    let key = |k: u32| x[k as usize] + 0.0;
    order.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
    let mut rank = 0u32;
    let mut ties = 0u64;
    let mut run = 0u64;
    let mut variance = VarianceTerms::default();
    let mut close_group = |run: u64| {
        let t = (run + 1) as f64;
        variance.t2 += t * (t - 1.0) * (t - 2.0);
        variance.t5 += t * (t - 1.0) * (2.0 * t + 5.0);
    };
    for p in 0..order.len() {
        if p > 0 && key(order[p]) != key(order[p - 1]) {
            close_group(run);
            rank += 1;
            run = 0;
        } else if p > 0 {
            run += 1;
            ties += run;
        }
        ranks[order[p] as usize] = rank;
    }
    let distinct = if order.is_empty() {
        0
    } else {
        close_group(run);
        rank + 1
    };
    (ties, distinct, variance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_ranks_and_ties() {
        let m =
            RankedMatrix::from_values(2, 5, &[3.0, -0.0, 0.0, 3.0, 3.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
        assert_eq!(m.ranks(0), &[1, 0, 0, 1, 1]);
        assert_eq!(m.order(0), &[1, 2, 0, 3, 4]);
        assert_eq!(m.tie_pairs(0), 1 + 3);
        // groups of 2 and 3: t2 = 0 + 6, t5 = 2·1·9 + 3·2·11
        assert_eq!(m.variance_terms(0), VarianceTerms { t2: 6.0, t5: 84.0 });
        assert_eq!(m.distinct(0), 2);
        assert_eq!(m.ranks(1), &[4, 3, 2, 1, 0]);
        assert_eq!(m.tie_pairs(1), 0);
        assert_eq!(m.distinct(1), 5);
        assert_eq!(m.n0(), 10);
    }
}
