//! Dictionary-typed gene columns (`kendall.gene_ids = 'dictionary'`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, DictionaryArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::error::{DataFusionError, Result};

/// Dictionary-typed gene columns: the distinct gene names, and each gene
/// position's key into them. Positions and keys differ only when names
/// repeat (kendall_cross_pairs over two matrices sharing genes): a
/// dictionary with repeated values is valid Arrow, but pandas and others
/// take a key for a name.
#[derive(Debug)]
pub(super) struct GeneDictionary {
    values: ArrayRef,
    /// The key of each gene position; `None` when it is the position.
    keys: Option<Vec<i32>>,
}

impl GeneDictionary {
    pub(super) fn new(genes: &StringArray) -> Result<Self> {
        if i32::try_from(genes.len()).is_err() {
            return Err(DataFusionError::Execution(format!(
                "kendall.gene_ids = 'dictionary' holds at most {} genes, got {}",
                i32::MAX,
                genes.len()
            )));
        }
        let mut seen: std::collections::HashMap<&str, i32> =
            std::collections::HashMap::with_capacity(genes.len());
        let mut distinct: Vec<&str> = Vec::new();
        let keys: Vec<i32> = (0..genes.len())
            .map(|g| {
                let name = genes.value(g);
                *seen.entry(name).or_insert_with(|| {
                    distinct.push(name);
                    (distinct.len() - 1) as i32
                })
            })
            .collect();
        if distinct.len() == genes.len() {
            return Ok(Self {
                values: Arc::new(genes.clone()),
                keys: None,
            });
        }
        Ok(Self {
            values: Arc::new(StringArray::from_iter_values(distinct)),
            keys: Some(keys),
        })
    }

    /// The dictionary column of gene positions `indices`.
    pub(super) fn column(&self, indices: Vec<u32>) -> Result<ArrayRef> {
        let keys: Int32Array = match &self.keys {
            Some(map) => indices.iter().map(|&g| map[g as usize]).collect(),
            // Positions fit i32 (checked in `new`): the same bits, no copy.
            None => {
                let len = indices.len();
                let buffer = datafusion::arrow::buffer::Buffer::from_vec(indices);
                Int32Array::new(
                    datafusion::arrow::buffer::ScalarBuffer::new(buffer, 0, len),
                    None,
                )
            }
        };
        Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
            keys,
            Arc::clone(&self.values),
        )?))
    }
}
