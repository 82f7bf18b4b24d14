//! Listwise deletion (`kendall.missing = 'complete'`): the samples missing
//! in any gene dropped from a loaded matrix, before ranking.

use datafusion::error::Result;

use super::matrix::{ExpressionMatrix, MatrixValues};
use crate::error::data_error;

impl ExpressionMatrix {
    /// Which samples no gene misses (listwise deletion keeps those): all of
    /// them for a sparse matrix, which misses no value.
    pub(crate) fn complete_samples(&self) -> Vec<bool> {
        let n = self.samples;
        let mut keep = vec![true; n];
        if let MatrixValues::Dense { values, .. } = &self.values
            && n > 0
        {
            for row in values.chunks(n) {
                for (k, x) in row.iter().enumerate() {
                    if x.is_nan() {
                        keep[k] = false;
                    }
                }
            }
        }
        keep
    }

    /// Listwise deletion (`kendall.missing = 'complete'`): drops every
    /// sample that is missing (NaN) in any gene, in place; returns how many
    /// samples were dropped. When that drops every sample, an error (R's
    /// `no complete element pairs`) saying what removed them: a gene
    /// missing in every sample, or else a sample and the gene it misses;
    /// `what` names the input(s).
    pub fn keep_complete_samples(&mut self, what: &str) -> Result<usize> {
        let n = self.samples;
        // A sparse matrix has no missing value (see `input::sparse`).
        let MatrixValues::Dense { values, .. } = &self.values else {
            return Ok(0);
        };
        if n == 0 {
            return Ok(0);
        }
        let mut keep = vec![true; n];
        for row in values.chunks(n) {
            for (k, x) in row.iter().enumerate() {
                if x.is_nan() {
                    keep[k] = false;
                }
            }
        }
        let kept: Vec<usize> = (0..n).filter(|&k| keep[k]).collect();
        if kept.is_empty() {
            return Err(self.no_complete_sample(values, what));
        }
        if kept.len() == n {
            return Ok(0);
        }
        let MatrixValues::Dense { values, residuals } = &mut self.values else {
            unreachable!("dense, as matched above");
        };
        // Compacted in place: a value moves only towards the front.
        let mut w = 0;
        for g in 0..values.len() / n {
            for &k in &kept {
                values[w] = values[g * n + k];
                if !residuals.is_empty() {
                    residuals[w] = residuals[g * n + k];
                }
                w += 1;
            }
        }
        values.truncate(w);
        if !residuals.is_empty() {
            residuals.truncate(w);
        }
        if !self.sample_ids.is_empty() {
            self.sample_ids = kept.iter().map(|&k| self.sample_ids[k].clone()).collect();
        }
        self.samples = kept.len();
        Ok(n - kept.len())
    }

    /// The error of a listwise deletion that left no sample of `what`
    /// (whose dense values are `values`).
    fn no_complete_sample(&self, values: &[f64], what: &str) -> datafusion::error::DataFusionError {
        let n = self.samples;
        let rows = || values.chunks(n).enumerate();
        let cause = match rows().find(|(_, row)| row.iter().all(|x| x.is_nan())) {
            Some((g, _)) => format!(
                "gene '{}' is missing in all {n} samples",
                self.genes.value(g)
            ),
            None => {
                let gene = rows()
                    .find(|(_, row)| row[0].is_nan())
                    .map_or(0, |(g, _)| g);
                let sample = match self.sample_ids.first() {
                    Some(id) => format!("sample '{id}'"),
                    None => "the first sample".to_string(),
                };
                format!(
                    "each of the {n} samples is missing in some gene ({sample} in gene '{}')",
                    self.genes.value(gene)
                )
            }
        };
        data_error(format!(
            "no complete element pairs in {what}: kendall.missing = 'complete' drops every \
             sample missing in any gene, and {cause}; leave such genes out, or SET \
             kendall.missing = 'pairwise' to use, for each pair, the samples both genes have"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listwise_deletion_keeps_complete_samples() {
        use datafusion::arrow::array::StringArray;
        let nan = f64::NAN;
        let mut m = ExpressionMatrix::from_parts(
            StringArray::from(vec!["a", "b"]),
            vec!["s0".into(), "s1".into(), "s2".into(), "s3".into()],
            vec![1.0, nan, 3.0, 4.0, 5.0, 6.0, 7.0, nan],
            vec![],
            crate::memory::QueryMemory::unbounded("")
                .reserve("test", 0)
                .unwrap(),
        );
        assert_eq!(m.keep_complete_samples("x").unwrap(), 2);
        assert_eq!(m.samples, 2);
        assert!(
            matches!(&m.values, MatrixValues::Dense { values, .. } if *values == [1.0, 3.0, 5.0, 7.0])
        );
        assert_eq!(m.sample_ids, vec!["s0".to_string(), "s2".to_string()]);
        assert_eq!(m.keep_complete_samples("x").unwrap(), 0);
    }

    /// Case: listwise deletion that removes every sample is R's error
    /// `no complete element pairs`, naming what removed them.
    #[test]
    fn listwise_deletion_that_leaves_no_sample_says_why() {
        use datafusion::arrow::array::StringArray;
        let nan = f64::NAN;
        let matrix = |values: Vec<f64>| {
            ExpressionMatrix::from_parts(
                StringArray::from(vec!["a", "b"]),
                vec!["s0".into(), "s1".into()],
                values,
                vec![],
                crate::memory::QueryMemory::unbounded("")
                    .reserve("test", 0)
                    .unwrap(),
            )
        };
        let err = matrix(vec![1.0, 2.0, nan, nan])
            .keep_complete_samples("'m.csv'")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no complete element pairs in 'm.csv'"),
            "{err}"
        );
        assert!(
            err.contains("gene 'b' is missing in all 2 samples"),
            "{err}"
        );
        let err = matrix(vec![nan, 2.0, 1.0, nan])
            .keep_complete_samples("'m.csv'")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sample 's0' in gene 'a'"), "{err}");
    }
}
