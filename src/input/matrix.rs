//! The expression matrix a load builds: genes, samples and their values.

use datafusion::arrow::array::{Array, StringArray};
use datafusion::error::Result;

use super::sparse::{SPARSE_MAX_DENSITY, SparseValues};
use super::values::ValueBuffer;
use crate::memory::{QueryMemory, Reservation};

/// A loaded and validated expression matrix.
#[derive(Debug)]
pub struct ExpressionMatrix {
    /// Gene ids, in input order; unique and non-null.
    pub genes: StringArray,
    /// Number of samples per gene.
    pub samples: usize,
    /// The values, dense or by gene.
    pub values: MatrixValues,
    /// Sample ids, in column order of the values, where the layout names
    /// its samples (`genes_as_rows`: the column names; `long`: the sample
    /// ids); empty for `genes_as_columns`, whose samples are rows without
    /// names.
    pub sample_ids: Vec<String>,
    /// The memory pool reservation of the values, released with them.
    _reservation: Reservation,
}

/// The values of an [`ExpressionMatrix`]: every value, or only the
/// non-zero ones.
#[derive(Debug)]
pub enum MatrixValues {
    /// genes × samples values, row-major; finite, or NaN where missing.
    Dense {
        /// The values.
        values: Vec<f64>,
        /// Per value, what a 64-bit integer loses as f64 (`integer -
        /// value`, see
        /// [`RankedMatrix::from_exact`](crate::rank::RankedMatrix::from_exact));
        /// empty when every value is exact.
        residuals: Vec<i16>,
    },
    /// The non-zero values by gene, for an input read with absent entries
    /// as zeros that is mostly zeros (no value is missing).
    Sparse(SparseValues),
}

impl ExpressionMatrix {
    pub(super) fn new(
        genes: StringArray,
        samples: usize,
        buffer: ValueBuffer,
        sample_ids: Vec<String>,
    ) -> Self {
        Self {
            genes,
            samples,
            values: MatrixValues::Dense {
                values: buffer.values,
                residuals: buffer.residuals,
            },
            sample_ids,
            _reservation: buffer.reservation,
        }
    }

    /// A matrix from its parts, `values` (and `residuals`) reserved in
    /// `reservation`.
    pub(crate) fn from_parts(
        genes: StringArray,
        sample_ids: Vec<String>,
        values: Vec<f64>,
        residuals: Vec<i16>,
        reservation: Reservation,
    ) -> Self {
        Self {
            genes,
            samples: sample_ids.len(),
            values: MatrixValues::Dense { values, residuals },
            sample_ids,
            _reservation: reservation,
        }
    }

    /// A sparse matrix (see [`sparse`](super::sparse)), reserved in
    /// `reservation`.
    pub(crate) fn from_sparse(
        genes: StringArray,
        sample_ids: Vec<String>,
        values: SparseValues,
        reservation: Reservation,
    ) -> Self {
        debug_assert_eq!(values.stored_zeros(), 0, "a matrix holds no stored zeros");
        Self {
            genes,
            samples: sample_ids.len(),
            values: MatrixValues::Sparse(values),
            sample_ids,
            _reservation: reservation,
        }
    }

    /// A sparse matrix kept sparse up to [`SPARSE_MAX_DENSITY`] non-zero
    /// values, expanded above it (as the long layout holds one); a dense
    /// one as it is.
    pub(crate) fn dense_above_max_density(self, memory: &QueryMemory) -> Result<Self> {
        let cells = self.genes.len() as f64 * self.samples as f64;
        match &self.values {
            MatrixValues::Sparse(s) if s.len() as f64 > SPARSE_MAX_DENSITY * cells => {
                self.into_dense(memory)
            }
            _ => Ok(self),
        }
    }

    /// The matrix with its values dense (a sparse one expanded, its
    /// values reserved in `memory` first); a dense one as it is.
    pub(crate) fn into_dense(self, memory: &QueryMemory) -> Result<Self> {
        let MatrixValues::Sparse(sparse) = &self.values else {
            return Ok(self);
        };
        let cells = self.genes.len().saturating_mul(self.samples);
        let per_value = if sparse.is_exact() { 8 } else { 10 };
        let mut reservation = memory.reserve(
            &format!(
                "input values ({} genes x {} samples)",
                self.genes.len(),
                self.samples
            ),
            0,
        )?;
        reservation.try_grow(cells.saturating_mul(per_value))?;
        let (values, residuals) = sparse.to_dense(self.samples)?;
        Ok(Self::from_parts(
            self.genes,
            self.sample_ids,
            values,
            residuals,
            reservation,
        ))
    }

    /// The matrix on the samples `keep` (positions, ascending) only: one
    /// group's samples (`kendall.groups`). Its values are reserved in
    /// `memory` first; `self` is left as it is.
    pub(crate) fn select_samples(&self, keep: &[u32], memory: &QueryMemory) -> Result<Self> {
        let genes = self.genes.len();
        let what = format!(
            "input values of a group ({genes} genes x {} samples)",
            keep.len()
        );
        let mut reservation = memory.reserve(&what, 0)?;
        let sample_ids: Vec<String> = match self.sample_ids.is_empty() {
            true => Vec::new(),
            false => keep
                .iter()
                .map(|&s| self.sample_ids[s as usize].clone())
                .collect(),
        };
        match &self.values {
            MatrixValues::Dense { values, residuals } => {
                let cells = genes.saturating_mul(keep.len());
                let per_value = if residuals.is_empty() { 8 } else { 10 };
                reservation.try_grow(cells.saturating_mul(per_value))?;
                let n = self.samples;
                let pick = |row: usize, s: u32| row * n + s as usize;
                let values = (0..genes)
                    .flat_map(|g| keep.iter().map(move |&s| pick(g, s)))
                    .map(|at| values[at])
                    .collect();
                let residuals = match residuals.is_empty() {
                    true => Vec::new(),
                    false => (0..genes)
                        .flat_map(|g| keep.iter().map(move |&s| pick(g, s)))
                        .map(|at| residuals[at])
                        .collect(),
                };
                Ok(Self {
                    genes: self.genes.clone(),
                    samples: keep.len(),
                    values: MatrixValues::Dense { values, residuals },
                    sample_ids,
                    _reservation: reservation,
                })
            }
            MatrixValues::Sparse(sparse) => {
                let mut to = vec![u32::MAX; self.samples];
                for (new, &s) in keep.iter().enumerate() {
                    to[s as usize] = new as u32;
                }
                let kept = sparse.remap_samples(&to)?;
                reservation.try_grow(kept.heap_bytes())?;
                Ok(Self {
                    genes: self.genes.clone(),
                    samples: keep.len(),
                    values: MatrixValues::Sparse(kept),
                    sample_ids,
                    _reservation: reservation,
                })
            }
        }
    }
}
