//! Missing values: what a null or NaN in the input means
//! (`SET kendall.missing = 'pairwise' | 'complete' | 'propagate' | 'error'`).

use datafusion::arrow::array::{Array, Float64Array};
use datafusion::error::Result;

use crate::error::data_error;

crate::option_enum::option_enum! {
    /// How null and NaN values are treated (`SET kendall.missing = ...`).
    pub enum MissingValues: "kendall.missing" {
        /// Each pair of genes uses the samples where both have a value (pandas'
        /// `corr`, R's `use = "pairwise.complete.obs"`). The default.
        #[default]
        Pairwise = "pairwise",
        /// Listwise deletion (R's `use = "complete.obs"`): a sample missing
        /// in any gene is dropped for every pair, before ranking.
        Complete = "complete" | "complete.obs",
        /// scipy's `nan_policy = 'propagate'`: a pair in which either gene
        /// has a missing value gets NaN tau and p-value (not NULL).
        Propagate = "propagate",
        /// A null or NaN value is an error naming the gene and sample.
        Error = "error",
    }
}

/// Value `r` of `column`: a number, or NaN for a missing (null or NaN)
/// value when `missing` is pairwise. Infinite values, and missing ones under
/// `'error'`, are refused; `what` names the gene and sample for the error.
pub(super) fn checked_value(
    column: &Float64Array,
    r: usize,
    missing: MissingValues,
    what: impl Fn() -> String,
) -> Result<f64> {
    let x = column.value(r);
    let null = column.is_null(r);
    if !null && x.is_finite() {
        return Ok(x);
    }
    if !null && x.is_infinite() {
        return Err(data_error(format!(
            "{} has an infinite value; Kendall's tau needs finite values (write it as null to \
             treat it as missing)",
            what()
        )));
    }
    missing_value(null, missing, what)
}

/// A missing value (null, or NaN when `null` is false): NaN when `missing`
/// is pairwise, else an error naming `what`.
pub(super) fn missing_value(
    null: bool,
    missing: MissingValues,
    what: impl Fn() -> String,
) -> Result<f64> {
    match missing {
        MissingValues::Pairwise | MissingValues::Complete | MissingValues::Propagate => {
            Ok(f64::NAN)
        }
        MissingValues::Error => Err(data_error(format!(
            "{} has a {} value and kendall.missing = 'error'; SET kendall.missing = 'pairwise' \
             to use, for each pair, the samples both genes have",
            what(),
            if null { "null" } else { "NaN" }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_by_policy() {
        let column = Float64Array::from(vec![Some(1.5), None, Some(f64::NAN), Some(f64::INFINITY)]);
        let what = || "gene 'g'".to_string();
        let pairwise = |r| checked_value(&column, r, MissingValues::Pairwise, what);
        assert_eq!(pairwise(0).unwrap(), 1.5);
        assert!(pairwise(1).unwrap().is_nan());
        assert!(pairwise(2).unwrap().is_nan());
        let err = pairwise(3).unwrap_err().to_string();
        assert!(err.contains("gene 'g' has an infinite value"), "{err}");
        let err = checked_value(&column, 1, MissingValues::Error, what)
            .unwrap_err()
            .to_string();
        assert!(err.contains("gene 'g' has a null value"), "{err}");
        assert!(err.contains("kendall.missing = 'pairwise'"), "{err}");
        let err = checked_value(&column, 2, MissingValues::Error, what)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a NaN value"), "{err}");
        assert_eq!(
            "Error".parse::<MissingValues>().unwrap(),
            MissingValues::Error
        );
        assert!("drop".parse::<MissingValues>().is_err());
        for policy in [MissingValues::Complete, MissingValues::Propagate] {
            assert!(checked_value(&column, 1, policy, what).unwrap().is_nan());
        }
        assert_eq!(
            "complete.obs".parse::<MissingValues>().unwrap(),
            MissingValues::Complete
        );
    }
}
