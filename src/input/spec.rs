//! What an input is: its layout ([`Layout`], [`Absent`]) and, once its
//! schema is checked, which columns hold what ([`InputSpec`], [`Columns`]).

use datafusion::error::Result;

use super::missing::MissingValues;
use crate::error::plan_error;

crate::option_enum::option_enum! {
    /// How the expression matrix is laid out (`SET kendall.layout = ...`).
    pub enum Layout: "kendall.layout" {
        /// One row per gene, one column per sample (the default).
        #[default]
        GenesAsRows = "genes_as_rows",
        /// One row per sample, one column per gene (AnnData / machine learning).
        GenesAsColumns = "genes_as_columns",
        /// One row per value: gene, sample, value columns (tidy data).
        Long = "long",
    }
}

crate::option_enum::option_enum! {
    /// What a (gene, sample) without a row in a long input means
    /// (`SET kendall.absent = ...`).
    pub enum Absent: "kendall.absent" {
        /// An error naming the gene and the sample (the default): every gene
        /// must have a row for every sample.
        #[default]
        Error = "error",
        /// The value 0: sparse triples (single-cell counts) list only non-zero
        /// values.
        Zero = "zero",
        /// A missing value, as a null would be (see `kendall.missing`).
        Missing = "missing",
    }
}

/// A checked description of the input: which columns to read and what they
/// hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// How messages name the source: `'data/expr.tsv.gz'` or `table 'expr'`.
    pub what: String,
    /// Which columns hold what.
    pub columns: Columns,
    /// The columns of the source's schema the scan reads (indices).
    pub projection: Vec<usize>,
    /// Number of genes, when known before reading (exact row counts from
    /// Parquet footers or a memory table; the columns of genes_as_columns).
    pub genes: Option<usize>,
    /// Number of samples per gene, when known before reading.
    pub samples: Option<usize>,
    /// What a null or NaN value means.
    pub missing: MissingValues,
}

/// The columns of each layout (`SET kendall.layout = ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    /// One row per gene: a gene-id column and one column per sample.
    GenesAsRows {
        /// The gene-id column.
        gene: String,
        /// The sample columns, in source order.
        samples: Vec<String>,
    },
    /// One row per sample, one numeric column per gene (gene ids are the
    /// column names); string columns (sample labels) are ignored.
    GenesAsColumns {
        /// The gene columns, in source order.
        genes: Vec<String>,
    },
    /// One row per (gene, sample) value.
    Long {
        /// The gene-id column.
        gene: String,
        /// The sample-id column.
        sample: String,
        /// The value column.
        value: String,
        /// What a (gene, sample) without a row means.
        absent: Absent,
    },
}

impl InputSpec {
    /// Whether the layout names the samples (every layout but
    /// `genes_as_columns`, whose samples are unnamed rows).
    pub fn names_samples(&self) -> bool {
        !matches!(self.columns, Columns::GenesAsColumns { .. })
    }

    /// The spec with the source's row count, when it is known exactly
    /// before reading (from Parquet footers or a memory table, say): the
    /// genes of genes_as_rows, the samples of genes_as_columns.
    pub fn with_rows(mut self, rows: Option<usize>) -> Result<Self> {
        match self.columns {
            Columns::GenesAsRows { .. } => self.genes = rows,
            Columns::GenesAsColumns { .. } => {
                if let Some(problem) = rows.and_then(|r| too_few_samples(&self.what, r)) {
                    return Err(plan_error(problem));
                }
                self.samples = rows;
            }
            Columns::Long { .. } => {}
        }
        Ok(self)
    }
}

/// What is wrong with a genes_as_columns input of `rows` rows, if anything.
pub(super) fn too_few_samples(what: &str, rows: usize) -> Option<String> {
    (rows < 2).then(|| {
        format!(
            "{what} has {rows} row(s); with layout 'genes_as_columns' rows are samples and Kendall's tau needs at least 2"
        )
    })
}
