//! The names users see: the SQL names of the table functions, their output
//! columns (names, positions and types) and how gene ids are typed.
//!
//! Everything else reads these from here: the filters that are pushed down
//! (`tau`, `p_value`, `q_value`, the gene columns), the streams that build
//! the columns by position, the codec, the FFI and the Python package.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// SQL name of the all-pairs table function.
pub const ALL_PAIRS: &str = "kendall_all_pairs";

/// SQL name of the top-partners table function.
pub const TOP_PARTNERS: &str = "kendall_top_partners";

/// SQL name of the cross-matrix table function.
pub const CROSS_PAIRS: &str = "kendall_cross_pairs";

/// SQL name of the candidate-list table function.
pub const CANDIDATE_PAIRS: &str = "kendall_candidate_pairs";

/// SQL name of the table function giving a candidate list's taus line by
/// line, in its order.
pub const CANDIDATE_TAUS: &str = "kendall_candidate_taus";

/// The first gene of a pair (`gene_i < gene_j` in input order).
pub const GENE_I: &str = "gene_i";
/// The second gene of a pair.
pub const GENE_J: &str = "gene_j";
/// Kendall's tau of the pair.
pub const TAU: &str = "tau";
/// The pair's p-value.
pub const P_VALUE: &str = "p_value";
/// Samples the pair shares.
pub const N: &str = "n";
/// The p-value adjusted for the false discovery rate over all pairs.
pub const Q_VALUE: &str = "q_value";
/// Grouped samples (`kendall.groups`): the group a row's pair was computed in.
pub const GROUP: &str = "group";
/// Top partners: the gene whose partners a row lists.
pub const GENE: &str = "gene";
/// Top partners: one of the gene's strongest partners.
pub const PARTNER: &str = "partner";
/// Top partners: 1 for the strongest partner.
pub const RANK: &str = "rank";
/// Candidate taus: the line (row) of the candidate list, from 1.
pub const LINE: &str = "line";

/// Positions of the columns of [`pair_schema`].
pub mod pair_column {
    /// `gene_i`.
    pub const GENE_I: usize = 0;
    /// `gene_j`.
    pub const GENE_J: usize = 1;
    /// `tau`.
    pub const TAU: usize = 2;
    /// `p_value`.
    pub const P_VALUE: usize = 3;
    /// `n`.
    pub const N: usize = 4;
    /// `q_value`.
    pub const Q_VALUE: usize = 5;
}

/// Positions of the columns of [`top_partners_schema`].
pub mod top_column {
    /// `gene`.
    pub const GENE: usize = 0;
    /// `partner`.
    pub const PARTNER: usize = 1;
    /// `tau`.
    pub const TAU: usize = 2;
    /// `rank`.
    pub const RANK: usize = 3;
    /// `p_value`.
    pub const P_VALUE: usize = 4;
    /// `n`.
    pub const N: usize = 5;
}

/// The output schema of the pair functions (`kendall_all_pairs`,
/// `kendall_cross_pairs`): `gene_i`, `gene_j` (non-null, typed as
/// `gene_ids` says), `tau` and `p_value` (Float64; NULL when the pair shares
/// fewer than `kendall.min_periods` samples), `n` (Int64, the samples the
/// pair shares) and `q_value` (Float64, the p-value adjusted for the false
/// discovery rate over all pairs of the input, see [`crate::stats::fdr`]; NULL
/// when `p_value` is). `p_value`, `n` and `q_value` are computed only when a
/// query reads them.
pub fn pair_schema(gene_ids: GeneIds) -> SchemaRef {
    let gene = gene_ids.data_type();
    Arc::new(Schema::new(vec![
        Field::new(GENE_I, gene.clone(), false),
        Field::new(GENE_J, gene, false),
        Field::new(TAU, DataType::Float64, true),
        Field::new(P_VALUE, DataType::Float64, true),
        Field::new(N, DataType::Int64, false),
        Field::new(Q_VALUE, DataType::Float64, true),
    ]))
}

/// The output schema of `kendall_top_partners`: `gene`, `partner`
/// (non-null strings), `tau` (Float64), `rank` (Int64, 1 for the strongest
/// partner), `p_value` (Float64) and `n` (Int64, the samples the pair
/// shares). `p_value` and `n` are computed only when a query reads them.
pub fn top_partners_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(GENE, DataType::Utf8, false),
        Field::new(PARTNER, DataType::Utf8, false),
        Field::new(TAU, DataType::Float64, false),
        Field::new(RANK, DataType::Int64, false),
        Field::new(P_VALUE, DataType::Float64, true),
        Field::new(N, DataType::Int64, false),
    ]))
}

/// Positions of the columns of [`candidate_taus_schema`].
pub mod line_column {
    /// `line`.
    pub const LINE: usize = 0;
    /// `tau`.
    pub const TAU: usize = 1;
}

/// The output schema of `kendall_candidate_taus`: `line` (Int64, the
/// candidate list's row, from 1, in the list's order) and `tau` (Float64:
/// the pair's tau as `kendall_candidate_pairs` computes it, NaN where it is
/// undefined or the pair shares fewer than `kendall.min_periods` samples,
/// NULL where the line names no pair of the matrices).
pub fn candidate_taus_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(LINE, DataType::Int64, false),
        Field::new(TAU, DataType::Float64, true),
    ]))
}

/// `schema` with a leading non-null `group` column (Utf8): the output of a
/// call with grouped samples (`kendall.groups`), one group's rows after
/// another's.
pub fn grouped(schema: &Schema) -> SchemaRef {
    let mut fields = vec![Arc::new(Field::new(GROUP, DataType::Utf8, false))];
    fields.extend(schema.fields().iter().cloned());
    Arc::new(Schema::new(fields))
}

crate::option_enum::option_enum! {
    /// How the gene columns of the pair output are typed (`SET kendall.gene_ids`).
    pub enum GeneIds: "kendall.gene_ids" {
        /// Strings (`Utf8`), each row its own copy of both names.
        #[default]
        String = "string",
        /// `Dictionary(Int32, Utf8)`: each row holds two 4-byte keys into the
        /// distinct gene names, which every batch shares. Smaller and faster for
        /// large outputs and for hosts that keep them as categories (pandas,
        /// which takes signed keys only).
        Dictionary = "dictionary",
    }
}

impl GeneIds {
    /// The Arrow type of a gene column.
    pub fn data_type(self) -> DataType {
        match self {
            GeneIds::String => DataType::Utf8,
            GeneIds::Dictionary => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
        }
    }
}
