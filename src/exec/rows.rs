//! The rows of the batch a partition is building ([`RowBuilder`]): one
//! column of values each, the optional ones (`p_value`, `q_value`, `n`)
//! filled only when the query reads them, and turned into Arrow columns of
//! the projection when the batch is emitted.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::error::Result;

use crate::kernel::PairNumerator;
use crate::schema::pair_column;

/// The rows of one batch, column by column.
#[derive(Debug, Default)]
pub(super) struct RowBuilder {
    gene_i: Vec<u32>,
    gene_j: Vec<u32>,
    tau: Vec<f64>,
    p_value: Vec<f64>,
    q_value: Vec<f64>,
    /// Whether each row's tau (and p-value) is non-null.
    valid: Vec<bool>,
    /// Samples each row's pair shares, when the query reads `n`.
    n: Vec<i64>,
    /// The query reads the `p_value` column (filters aside).
    keep_p: bool,
    /// The query reads the `q_value` column (filters aside).
    keep_q: bool,
    /// The query reads the `n` column.
    keep_n: bool,
}

impl RowBuilder {
    /// No rows yet; `p_value`, `q_value` and `n` are kept as `keep` says.
    pub(super) fn new([keep_p, keep_q, keep_n]: [bool; 3]) -> Self {
        Self {
            keep_p,
            keep_q,
            keep_n,
            ..Self::default()
        }
    }

    /// The query reads the `p_value` column.
    pub(super) fn keeps_p(&self) -> bool {
        self.keep_p
    }

    /// The query reads the `q_value` column.
    pub(super) fn keeps_q(&self) -> bool {
        self.keep_q
    }

    /// Rows built.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.tau.len()
    }

    /// No row built.
    pub(super) fn is_empty(&self) -> bool {
        self.tau.is_empty()
    }

    /// One row: the pair `(i, j)`, its `tau` (null unless `valid`), `n`
    /// shared samples; its p- and q-value computed (by `p` and `q`) only
    /// when the query reads them.
    #[inline(always)]
    pub(super) fn push(
        &mut self,
        (i, j): (u32, u32),
        tau: f64,
        valid: bool,
        n: usize,
        p: impl FnOnce() -> f64,
        q: impl FnOnce() -> f64,
    ) {
        self.gene_i.push(i);
        self.gene_j.push(j);
        self.tau.push(tau);
        self.valid.push(valid);
        if self.keep_p {
            self.p_value.push(p());
        }
        if self.keep_q {
            self.q_value.push(q());
        }
        if self.keep_n {
            self.n.push(n as i64);
        }
    }

    /// A row of a run whose rows share their validity and `n` (given once
    /// for the run, [`RowBuilder::end_run`]); its q-value computed by `q`
    /// only when the query reads it. A run reads no p-value.
    #[inline(always)]
    pub(super) fn push_in_run(&mut self, (i, j): (u32, u32), tau: f64, q: impl FnOnce() -> f64) {
        self.gene_i.push(i);
        self.gene_j.push(j);
        self.tau.push(tau);
        if self.keep_q {
            self.q_value.push(q());
        }
    }

    /// Every pair of `pairs` a row of a run (see
    /// [`RowBuilder::push_in_run`]), with the tau `tau` gives it; for a
    /// query that reads no q-value.
    #[inline(always)]
    pub(super) fn extend_run(
        &mut self,
        pairs: &[PairNumerator],
        tau: impl Fn(&PairNumerator) -> f64,
    ) {
        debug_assert!(!self.keep_q);
        self.gene_i.extend(pairs.iter().map(|p| p.i));
        self.gene_j.extend(pairs.iter().map(|p| p.j));
        self.tau.extend(pairs.iter().map(tau));
    }

    /// Ends a run that began when the builder held `before` rows: its rows
    /// are `valid` (or not) and share `n` samples.
    pub(super) fn end_run(&mut self, before: usize, valid: bool, n: usize) {
        let added = self.len() - before;
        self.valid.resize(self.valid.len() + added, valid);
        if self.keep_n {
            self.n.resize(self.n.len() + added, n as i64);
        }
    }

    /// The columns of `projection` (positions of [`pair_column`]), the
    /// gene columns made of the rows' gene positions by `gene`; the builder
    /// is then empty.
    pub(super) fn take_columns(
        &mut self,
        projection: &[usize],
        mut gene: impl FnMut(Vec<u32>) -> Result<ArrayRef>,
    ) -> Result<Vec<ArrayRef>> {
        let nulls = if self.valid.iter().all(|&v| v) {
            None
        } else {
            Some(NullBuffer::from(self.valid.as_slice()))
        };
        let float = |values: &mut Vec<f64>| -> ArrayRef {
            Arc::new(Float64Array::new(
                std::mem::take(values).into(),
                nulls.clone(),
            ))
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(projection.len());
        for &c in projection {
            columns.push(match c {
                pair_column::GENE_I => gene(std::mem::take(&mut self.gene_i))?,
                pair_column::GENE_J => gene(std::mem::take(&mut self.gene_j))?,
                pair_column::P_VALUE => float(&mut self.p_value),
                pair_column::Q_VALUE => float(&mut self.q_value),
                pair_column::N => Arc::new(Int64Array::from(std::mem::take(&mut self.n))),
                _ => float(&mut self.tau),
            });
        }
        self.gene_i.clear();
        self.gene_j.clear();
        self.tau.clear();
        self.p_value.clear();
        self.q_value.clear();
        self.valid.clear();
        self.n.clear();
        Ok(columns)
    }
}
