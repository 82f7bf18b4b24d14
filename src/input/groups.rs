//! Grouped samples (`kendall.groups`): a source of (sample, group) rows,
//! any table, view or file whose first two columns are a sample id and its
//! group's label (strings or integers), and the groups it makes of a loaded
//! matrix's samples.
//!
//! The rules:
//! - samples are matched by name (the matrix's sample ids, an integer id
//!   by its decimal form); the unnamed samples of layout `genes_as_columns`
//!   (its rows) by their row number from 0; a sample the matrix has but no
//!   row names is in no group and left out; a row naming a sample the
//!   matrix lacks counts for nothing;
//! - a sample listed under two labels is in both groups; a row listed
//!   twice counts once; a row whose sample or label is NULL counts for
//!   nothing;
//! - the groups are the distinct labels, in sorted order; a label none of
//!   whose samples the matrix has is a group of 0 samples (its pairs have
//!   `n` = 0 and NaN tau), as is a group of one sample, and not an error.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::error::Result;

use super::pair_list::{NotIds, first_two_ids};
use super::read::InputBatches;
use crate::error::plan_error;
use crate::group_filter::GroupPredicate;
use crate::memory::{QueryMemory, Reservation};

/// Where grouped samples are read from: the source and its two columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupsSpec {
    /// How errors name the source (`table 'cells'`, `'cells.parquet'`).
    pub what: String,
    /// The sample-id and group-label columns.
    pub columns: [String; 2],
}

/// One group of a matrix's samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The group's label, as the `group` column shows it.
    pub label: String,
    /// The matrix's samples in the group (positions, ascending).
    pub samples: Vec<u32>,
}

/// The (sample, group) rows of a groups source, by label.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SampleGroups {
    members: BTreeMap<String, BTreeSet<String>>,
}

impl GroupsSpec {
    /// The groups read from the first two columns of `schema`, which must
    /// hold ids (strings or integers).
    pub fn inspect(what: &str, schema: &Schema) -> Result<Self> {
        let columns = first_two_ids(schema).map_err(|bad| match bad {
            NotIds::Few(n) => plan_error(format!(
                "the groups source {what} (kendall.groups) has {n} column(s); its first two \
                 columns must be a sample id and the sample's group"
            )),
            NotIds::Type(name, t) => plan_error(format!(
                "column '{name}' of the groups source {what} (kendall.groups) has type {t}; \
                 its first two columns must be a sample id and a group label (strings \
                 or integers)"
            )),
        })?;
        Ok(Self {
            what: what.to_string(),
            columns,
        })
    }

    /// Reads the (sample, group) rows from `batches` (the two columns),
    /// reserving what they take in `memory`.
    pub fn read(
        &self,
        batches: InputBatches,
        memory: &QueryMemory,
    ) -> Result<(SampleGroups, Reservation)> {
        let mut reservation = memory.reserve(&format!("groups of {}", self.what), 0)?;
        let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for batch in batches {
            let batch = batch?;
            let samples = cast(batch.column(0), &DataType::Utf8)?;
            let labels = cast(batch.column(1), &DataType::Utf8)?;
            let (samples, labels) = (samples.as_string::<i32>(), labels.as_string::<i32>());
            let bytes = samples.value_data().len() + labels.value_data().len();
            reservation.try_grow(bytes + batch.num_rows() * 2 * std::mem::size_of::<String>())?;
            for k in 0..batch.num_rows() {
                if samples.is_valid(k) && labels.is_valid(k) {
                    members
                        .entry(labels.value(k).to_string())
                        .or_default()
                        .insert(samples.value(k).to_string());
                }
            }
        }
        Ok((SampleGroups { members }, reservation))
    }
}

impl SampleGroups {
    /// The groups of a matrix of `samples` samples named `sample_ids`
    /// (none: named by their number from 0), those `predicate` keeps, in
    /// label order; with `complete`, only the samples it marks (listwise
    /// deletion: the samples no gene misses).
    pub fn of_samples(
        &self,
        samples: usize,
        sample_ids: &[String],
        complete: Option<&[bool]>,
        predicate: Option<&GroupPredicate>,
    ) -> Vec<Group> {
        let kept = |s: usize| complete.is_none_or(|c| c[s]);
        // Samples without names (layout genes_as_columns, `samples` rows):
        // named by their row number from 0.
        let numbers: Vec<String>;
        let ids: &[String] = match sample_ids.is_empty() {
            true => {
                numbers = (0..samples).map(|s| s.to_string()).collect();
                &numbers
            }
            false => sample_ids,
        };
        let position: HashMap<&str, u32> = ids
            .iter()
            .enumerate()
            .filter(|&(s, _)| kept(s))
            .map(|(s, id)| (id.as_str(), s as u32))
            .collect();
        self.members
            .iter()
            .filter(|(label, _)| predicate.is_none_or(|p| p.matches(label)))
            .map(|(label, names)| {
                let mut samples: Vec<u32> = names
                    .iter()
                    .filter_map(|n| position.get(n.as_str()).copied())
                    .collect();
                samples.sort_unstable();
                Group {
                    label: label.clone(),
                    samples,
                }
            })
            .collect()
    }

    /// A groups source from `(sample, label)` rows (tests).
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (sample, label) in rows {
            members
                .entry(label.to_string())
                .or_default()
                .insert(sample.to_string());
        }
        Self { members }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_label_match_samples_by_name() {
        let groups = SampleGroups::from_rows([
            ("s3", "T"),
            ("s1", "B"),
            ("s2", "T"),
            ("s1", "T"),
            ("s1", "B"),
            ("nowhere", "NK"),
        ]);
        let ids: Vec<String> = ["s1", "s2", "s3", "s4"].map(String::from).to_vec();
        let got = groups.of_samples(4, &ids, None, None);
        let want = [("B", vec![0]), ("NK", vec![]), ("T", vec![0, 1, 2])];
        assert_eq!(got.len(), want.len());
        for (g, (label, samples)) in got.iter().zip(want) {
            assert_eq!((g.label.as_str(), &g.samples), (label, &samples));
        }
        // Listwise deletion drops s2 from T; a filter keeps T only.
        let only_t = GroupPredicate::In(BTreeSet::from(["T".to_string()]));
        let got = groups.of_samples(4, &ids, Some(&[true, false, true, true]), Some(&only_t));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].samples, vec![0, 2]);
        // Unnamed samples by number.
        let numbered = SampleGroups::from_rows([("2", "x"), ("0", "x"), ("7", "x")]);
        let got = numbered.of_samples(4, &[], None, None);
        assert_eq!(got[0].samples, vec![0, 2]);
    }
}
