//! R vectors to Arrow arrays and back, value by value from R's memory (no
//! text in between).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowNativeType, DataType, Field, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Schema, SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::error::Result;
use savvy::{
    NotAvailableValue, OwnedIntegerSexp, OwnedListSexp, OwnedLogicalSexp, OwnedRealSexp,
    OwnedStringSexp, Sexp, TypedSexp,
};

/// The doubles of a numeric matrix and its dimensions (rows, columns).
pub fn real_matrix<'a>(what: &str, x: &'a Sexp) -> savvy::Result<(&'a [f64], usize, usize)> {
    let dim = x
        .get_dim()
        .filter(|d| d.len() == 2)
        .ok_or_else(|| savvy::Error::new(format!("'{what}' must be a matrix")))?;
    let (rows, cols) = (dim[0] as usize, dim[1] as usize);
    if !x.is_real() {
        return Err(savvy::Error::new(format!(
            "'{what}' must be a double matrix"
        )));
    }
    let real = savvy::RealSexp(x.0);
    let data = real.as_slice();
    if data.len() != rows * cols {
        return Err(savvy::Error::new(format!("'{what}': dim does not match")));
    }
    // SAFETY: the doubles belong to the R vector `x`, which R keeps alive
    // (and unchanged) for the whole call `'a` borrows it for; `real` is only
    // a second handle to it.
    let values = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
    Ok((values, rows, cols))
}

/// A column-major `n x m` matrix (samples x genes) as a genes-as-rows batch:
/// a gene id column `gene` (`<prefix><index>`), then one Float64 column per
/// sample (`s0`, `s1`, ...; R's NA and NaN are NaN, which the engine reads as
/// missing). Also says which genes have a missing value.
pub fn matrix_to_gene_rows(
    values: &[f64],
    n: usize,
    m: usize,
    prefix: char,
) -> Result<(RecordBatch, Vec<bool>)> {
    let ids = StringArray::from_iter_values((0..m).map(|g| format!("{prefix}{g}")));
    let mut fields = vec![Field::new("gene", DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(ids)];
    for s in 0..n {
        fields.push(Field::new(format!("s{s}"), DataType::Float64, false));
        let column: Vec<f64> = (0..m).map(|g| values[g * n + s]).collect();
        columns.push(Arc::new(Float64Array::from(column)));
    }
    let has_na = (0..m)
        .map(|g| values[g * n..(g + 1) * n].iter().any(|v| v.is_nan()))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    Ok((batch, has_na))
}

fn err(msg: String) -> savvy::Error {
    savvy::Error::new(msg)
}

/// A validity buffer from per-row validity, or none when all are valid.
fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    if valid.iter().all(|&v| v) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

/// Classes of a data frame's columns whose values are what their vectors
/// hold (`integer64` is converted from its bits, see [`integer64`]); a
/// column of any other class (a date, a time, a unit) is refused rather
/// than read as its storage.
const KNOWN_CLASSES: [&str; 5] = ["factor", "ordered", "AsIs", "integer64", "noquote"];

/// bit64's `integer64`: a double vector whose 8 bytes each hold a 64-bit
/// integer (`NA` is the smallest one), as an Int64 array.
fn integer64(bits: &[f64]) -> Int64Array {
    bits.iter()
        .map(|x| {
            let v = x.to_bits() as i64;
            (v != i64::MIN).then_some(v)
        })
        .collect()
}

/// An R data frame (a named list of equal-length vectors) as one record
/// batch: doubles as Float64 (R's `NA` as null, `NaN` kept), integers as
/// Int32, bit64's `integer64` as Int64, logicals as Boolean, strings and
/// factors as Utf8; a column of another class is an error naming it.
pub fn data_frame_to_batch(name: &str, df: Sexp) -> savvy::Result<RecordBatch> {
    let TypedSexp::List(list) = df.into_typed() else {
        return Err(err(format!("'{name}' must be a data frame")));
    };
    let names = list.names_iter().collect::<Vec<_>>();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut rows = None;
    for (i, value) in list.values_iter().enumerate() {
        let col = names.get(i).copied().unwrap_or("");
        if col.is_empty() || col.is_na() {
            return Err(err(format!("'{name}': column {} has no name", i + 1)));
        }
        if names[..i].contains(&col) {
            return Err(err(format!(
                "'{name}': the column name '{col}' is used twice"
            )));
        }
        let class = value.get_class().unwrap_or_default();
        let type_name = value.get_human_readable_type_name();
        let levels = value.get_attrib("levels")?;
        if let Some(c) = class.iter().find(|c| !KNOWN_CLASSES.contains(c)) {
            return Err(err(format!(
                "'{name}': column '{col}' is of class {c}, which is not converted (its values \
                 could be read as something else); convert it with as.numeric() or \
                 as.character() first"
            )));
        }
        let array: ArrayRef = match value.into_typed() {
            TypedSexp::Real(v) if class.contains(&"integer64") => Arc::new(integer64(v.as_slice())),
            TypedSexp::Real(v) => {
                let s = v.as_slice();
                let valid = s.iter().map(|x| !x.is_na()).collect();
                Arc::new(Float64Array::new(s.to_vec().into(), nulls(valid)))
            }
            TypedSexp::Integer(v) if class.contains(&"factor") => {
                let labels: Vec<&str> = match levels.map(|l| l.into_typed()) {
                    Some(TypedSexp::String(l)) => l.iter().collect(),
                    _ => return Err(err(format!("'{name}': factor '{col}' has no levels"))),
                };
                let strings = v
                    .as_slice()
                    .iter()
                    .map(|&k| {
                        if k.is_na() {
                            Ok(None)
                        } else {
                            labels
                                .get((k as usize).wrapping_sub(1))
                                .map(|l| Some(*l))
                                .ok_or_else(|| err(format!("'{name}': bad factor '{col}'")))
                        }
                    })
                    .collect::<savvy::Result<Vec<_>>>()?;
                Arc::new(StringArray::from(strings))
            }
            TypedSexp::Integer(v) => {
                let s = v.as_slice();
                let valid = s.iter().map(|x| !x.is_na()).collect();
                Arc::new(Int32Array::new(s.to_vec().into(), nulls(valid)))
            }
            TypedSexp::Logical(v) => Arc::new(BooleanArray::from(
                v.as_slice_raw()
                    .iter()
                    .map(|&b| (!b.is_na()).then_some(b != 0))
                    .collect::<Vec<_>>(),
            )),
            TypedSexp::String(v) => Arc::new(StringArray::from(
                v.iter()
                    .map(|s| (!s.is_na()).then_some(s))
                    .collect::<Vec<_>>(),
            )),
            _ => {
                return Err(err(format!(
                    "'{name}': column '{col}' is a {type_name}; columns must be numeric, integer, \
                     logical, character or factor"
                )));
            }
        };
        match rows {
            None => rows = Some(array.len()),
            Some(r) if r != array.len() => {
                return Err(err(format!(
                    "'{name}': columns of different lengths ({r} and {})",
                    array.len()
                )));
            }
            _ => {}
        }
        fields.push(Field::new(col, array.data_type().clone(), true));
        columns.push(array);
    }
    if columns.is_empty() {
        return Err(err(format!("'{name}' has no columns")));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// A column of record batches as an R vector.
fn column_to_r(field: &Field, arrays: &[ArrayRef]) -> savvy::Result<Sexp> {
    let len: usize = arrays.iter().map(|a| a.len()).sum();
    match field.data_type() {
        DataType::Float64
        | DataType::Float32
        | DataType::Int64
        | DataType::UInt32
        | DataType::UInt64 => {
            let mut out = OwnedRealSexp::new(len)?;
            let slice = out.as_mut_slice();
            let mut at = 0;
            for a in arrays {
                let a = cast(a, &DataType::Float64)?;
                let a = a.as_primitive::<Float64Type>();
                for i in 0..a.len() {
                    slice[at] = if a.is_null(i) { f64::na() } else { a.value(i) };
                    at += 1;
                }
            }
            Ok(out.into())
        }
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => {
            let mut out = OwnedIntegerSexp::new(len)?;
            let slice = out.as_mut_slice();
            let mut at = 0;
            for a in arrays {
                let a = cast(a, &DataType::Int32)?;
                let a = a.as_primitive::<Int32Type>();
                for i in 0..a.len() {
                    slice[at] = if a.is_null(i) { i32::na() } else { a.value(i) };
                    at += 1;
                }
            }
            Ok(out.into())
        }
        DataType::Boolean => {
            let mut out = OwnedLogicalSexp::new(len)?;
            let mut at = 0;
            for a in arrays {
                let a = a.as_boolean();
                for i in 0..a.len() {
                    if a.is_null(i) {
                        out.set_na(at)?;
                    } else {
                        out.set_elt(at, a.value(i))?;
                    }
                    at += 1;
                }
            }
            Ok(out.into())
        }
        DataType::Dictionary(_, value) if value.as_ref() == &DataType::Utf8 => {
            dictionary_to_factor(arrays, len)
        }
        _ => {
            let mut out = OwnedStringSexp::new(len)?;
            let mut at = 0;
            for a in arrays {
                let a = cast(a, &DataType::Utf8)?;
                let a = a.as_string::<i32>();
                for i in 0..a.len() {
                    if a.is_null(i) {
                        out.set_na(at)?;
                    } else {
                        out.set_elt(at, a.value(i))?;
                    }
                    at += 1;
                }
            }
            Ok(out.into())
        }
    }
}

/// Dictionary-encoded strings (the engine's gene ids) as an R factor whose
/// levels are the distinct values in order of first appearance in the
/// dictionaries (for the engine: the input's gene order).
fn dictionary_to_factor(arrays: &[ArrayRef], len: usize) -> savvy::Result<Sexp> {
    let mut levels: Vec<String> = Vec::new();
    let mut level_of: HashMap<String, i32> = HashMap::new();
    let mut codes = OwnedIntegerSexp::new(len)?;
    let slice = codes.as_mut_slice();
    let mut at = 0;
    let mut cache: Option<(usize, Vec<i32>)> = None;
    for a in arrays {
        let keys: Vec<Option<usize>> = match a.data_type() {
            DataType::Dictionary(k, _) => match k.as_ref() {
                DataType::Int8 => keys_of::<Int8Type>(a),
                DataType::Int16 => keys_of::<Int16Type>(a),
                DataType::Int32 => keys_of::<Int32Type>(a),
                DataType::Int64 => keys_of::<Int64Type>(a),
                DataType::UInt8 => keys_of::<UInt8Type>(a),
                DataType::UInt16 => keys_of::<UInt16Type>(a),
                DataType::UInt32 => keys_of::<UInt32Type>(a),
                DataType::UInt64 => keys_of::<UInt64Type>(a),
                _ => return Err(err("unsupported dictionary key type".into())),
            },
            _ => return Err(err("expected a dictionary column".into())),
        };
        let values = a.as_any_dictionary().values();
        let key = Arc::as_ptr(values) as *const () as usize;
        if cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let strings = values.as_string::<i32>();
            let map = strings
                .iter()
                .map(|s| {
                    let s = s.unwrap_or("NA");
                    *level_of.entry(s.to_string()).or_insert_with(|| {
                        levels.push(s.to_string());
                        levels.len() as i32
                    })
                })
                .collect();
            cache = Some((key, map));
        }
        let map = &cache.as_ref().expect("just set").1;
        for k in keys {
            slice[at] = k.map_or(i32::na(), |k| map[k]);
            at += 1;
        }
    }
    let mut codes = codes;
    let levels: OwnedStringSexp = levels.as_slice().try_into()?;
    codes.set_attrib("levels", levels.into())?;
    codes.set_class(["factor"])?;
    Ok(codes.into())
}

fn keys_of<K: datafusion::arrow::datatypes::ArrowDictionaryKeyType>(
    a: &ArrayRef,
) -> Vec<Option<usize>> {
    let d = a.as_dictionary::<K>();
    d.keys().iter().map(|k| k.map(|k| k.as_usize())).collect()
}

/// Record batches as a named list of R vectors (one per column).
pub fn batches_to_list(schema: &SchemaRef, batches: &[RecordBatch]) -> savvy::Result<Sexp> {
    let mut out = OwnedListSexp::new(schema.fields().len(), true)?;
    for (c, field) in schema.fields().iter().enumerate() {
        let arrays: Vec<ArrayRef> = batches.iter().map(|b| Arc::clone(b.column(c))).collect();
        let value = column_to_r(field, &arrays)?;
        out.set_name_and_value(c, field.name(), value)?;
    }
    Ok(out.into())
}
