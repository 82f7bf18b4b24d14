//! AnnData `.h5ad` and 10x Genomics (Cell Ranger v3+) `.h5` files as inputs
//! (feature `hdf5`), read into a [`SparseTable`] with `hdf5-reader`, a
//! pure-Rust HDF5 reader (no C library: gzip-compressed datasets are
//! inflated in Rust).
//!
//! **AnnData**: the matrix is `X`, cells as rows (`obs`), genes as columns
//! (`var`): a sparse group (attribute `encoding-type` = `csr_matrix` or
//! `csc_matrix`, attribute `shape`, datasets `data`, `indices`, `indptr`)
//! or a dense 2-D dataset. Gene ids are the `var` index (the dataset of
//! group `var` its `_index` attribute names, `var/_index` by default), cell
//! ids the `obs` index. Layers and `raw` are not read. The pre-0.7 layout
//! (`var` and `obs` as compound datasets) is refused.
//!
//! **10x Genomics** (`filtered_feature_bc_matrix.h5`, Cell Ranger v3 and
//! later): group `matrix` with `shape` (features × barcodes), `data`,
//! `indices` (feature per entry) and `indptr` (per barcode), `barcodes`,
//! and `features/id` (the gene ids, as the first column of a 10x
//! directory's `features.tsv`). Every feature is read, whatever its type.
//! Cell Ranger v2's layout (`/<genome>/genes`) is refused. A `.h5` file with
//! an `X` instead of a `matrix` is read as AnnData.
//!
//! A matrix stored by cell (CSR `X`, every 10x file) is regrouped by gene in
//! memory with a counting sort; a CSC `X` is grouped by gene already (each
//! gene's cells sorted when they are not); a dense `X` keeps its non-zero
//! values. Values of any integer or floating-point type are read as f64,
//! indices of 32 or 64 bits (converted as the HDF5 library converts, a
//! block at a time when the file stores another type). Datasets may be
//! contiguous, compact or chunked, plain or with the filters anndata, h5py
//! and Cell Ranger write (gzip, shuffle, Fletcher-32; szip, n-bit and
//! scale-offset too); a filter the reader lacks (LZ4, Blosc, Zstandard
//! plugins) is an error naming the dataset. The file is read when the
//! query is planned: what the read holds at once (the arrays as stored, a matrix by cell's
//! values a block at a time, and the arrays as grouped by gene, which
//! [`grouping`] makes) is reserved in the session's memory pool first, and
//! the grouped arrays stay reserved for as long as the table lives.
//!
//! Every problem (a missing file, not an HDF5 file, a truncated or corrupt
//! one, a missing group or dataset, a wrong shape or type, an index out of
//! range, `indptr` not ascending, a value not finite) is a
//! `DataFusionError` naming the file and the dataset.

use std::fmt::Display;
use std::ops::Range;
use std::path::Path;

use datafusion::arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
use datafusion::error::{DataFusionError, Result};
use hdf5_reader::{
    Attribute, Dataset, Datatype, H5Type, Hdf5File, SliceInfo, SliceInfoElem, StringSize,
};

use self::grouping::Grid;
use crate::error::plan_error;
use crate::input::sparse_table::SparseTable;
use crate::memory::{QueryMemory, Reservation, ZeroBytes, try_zeroed};

/// Bytes an id takes besides its text while it is read (its `String`, the
/// allocation's rounding and header).
const ID_BYTES: usize = 48;

/// Elements of a dataset stored as another number type than it is read as
/// that are read (and converted) at a time.
const CONVERT_BLOCK: usize = 1 << 20;

/// The longest fixed-length string read as an id, in bytes.
const MAX_FIXED_STRING: u32 = 1024;

/// Reads the HDF5 file at `path` (`what` names it in messages: `h5ad file
/// 'x.h5ad'`) as a sparse table, its memory reserved in `memory`: a 10x
/// Genomics file when `may_be_tenx` (a `.h5` name) and it holds a `matrix`
/// or no `X`, else AnnData.
pub(super) fn read(
    path: &Path,
    may_be_tenx: bool,
    what: &str,
    memory: &QueryMemory,
) -> Result<SparseTable> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(plan_error(format!("cannot open {what}: {e}")));
    }
    let file = Hdf5File::open(path).map_err(|e| {
        plan_error(format!(
            "cannot open {what} as an HDF5 file ({e}); is it an HDF5 file?"
        ))
    })?;
    let h5 = H5 { file, what };
    let parts = if may_be_tenx && (h5.exists("matrix")? || !h5.exists("X")?) {
        h5.tenx(memory)?
    } else {
        h5.anndata(memory)?
    };
    let Parts {
        genes,
        cells,
        offsets,
        indices,
        values,
        reservation,
    } = parts;
    SparseTable::try_new_reserved(
        &StringArray::from(genes),
        &StringArray::from(cells),
        &Int64Array::from(offsets),
        &Int32Array::from(indices),
        &Float64Array::from(values),
        reservation,
    )
    .map_err(|e| match e {
        DataFusionError::Plan(msg) => plan_error(format!("{what}: {msg}")),
        other => other,
    })
}

/// An open file and how messages name it.
struct H5<'a> {
    file: Hdf5File,
    what: &'a str,
}

/// What a name of the file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Group,
    Dataset,
}

/// A matrix as read, grouped by gene: gene `g`'s values are
/// `values[offsets[g]..offsets[g + 1]]` at cells `indices[..]` (ascending).
struct Parts {
    genes: Vec<String>,
    cells: Vec<String>,
    offsets: Vec<i64>,
    indices: Vec<i32>,
    values: Vec<f64>,
    /// The memory of the arrays and ids.
    reservation: Reservation,
}

/// Sparse indices as stored: 32-bit (or narrower) or 64-bit.
enum Ints {
    Narrow(Vec<i32>),
    Wide(Vec<i64>),
}

/// Values as stored: those exact in f32 (32-bit floats, integers of 8 and
/// 16 bits) as f32, the others as f64.
enum Floats {
    Narrow(Vec<f32>),
    Wide(Vec<f64>),
}

/// Calls `$f` with the vectors of an [`Ints`] and a [`Floats`], whatever
/// their widths.
macro_rules! with_widths {
    ($ints:expr, $floats:expr, |$i:ident, $v:ident| $body:expr) => {
        match ($ints, $floats) {
            (Ints::Narrow($i), Floats::Narrow($v)) => $body,
            (Ints::Narrow($i), Floats::Wide($v)) => $body,
            (Ints::Wide($i), Floats::Narrow($v)) => $body,
            (Ints::Wide($i), Floats::Wide($v)) => $body,
        }
    };
}

mod grouping;

/// A number type as stored in a file: integers of 8 to 64 bits, signed or
/// not, and 32- or 64-bit floats (of either byte order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

/// What a datatype is, in messages: `int16`, `float64`, `a string`, ...
fn describe(t: &Datatype) -> String {
    match t {
        Datatype::FixedPoint { size, signed, .. } => {
            format!(
                "{}int{}",
                if *signed { "" } else { "u" },
                u32::from(*size) * 8
            )
        }
        Datatype::FloatingPoint { size, .. } => format!("float{}", u32::from(*size) * 8),
        Datatype::String { .. } => "fixed-length strings".to_string(),
        Datatype::VarLen { .. } => "variable-length data".to_string(),
        Datatype::Compound { .. } => "a compound type".to_string(),
        Datatype::Array { .. } => "an array type".to_string(),
        Datatype::Enum { .. } => "an enumeration".to_string(),
        Datatype::Opaque { .. } => "an opaque type".to_string(),
        Datatype::Reference { .. } => "references".to_string(),
        other => format!("{other:?}"),
    }
}

/// The number type `t` is; an error message for one that is not a number
/// (or one of a width no Rust number has).
fn stored(t: &Datatype) -> Result<Stored, String> {
    Ok(match t {
        Datatype::FixedPoint { size, signed, .. } => match (size, signed) {
            (1, true) => Stored::I8,
            (2, true) => Stored::I16,
            (4, true) => Stored::I32,
            (8, true) => Stored::I64,
            (1, false) => Stored::U8,
            (2, false) => Stored::U16,
            (4, false) => Stored::U32,
            (8, false) => Stored::U64,
            _ => return Err(format!("expected numbers, got {}", describe(t))),
        },
        Datatype::FloatingPoint { size: 4, .. } => Stored::F32,
        Datatype::FloatingPoint { size: 8, .. } => Stored::F64,
        other => return Err(format!("expected numbers, got {}", describe(other))),
    })
}

/// A number a dataset is read as (i32, i64, f32, f64): converted from
/// whichever type the file stores, as the HDF5 library converts.
trait Element: H5Type + ZeroBytes + Send + Sync + 'static {
    /// The stored type read without conversion.
    const STORED: Stored;
    fn from_i64(x: i64) -> Self;
    fn from_u64(x: u64) -> Self;
    fn from_f64(x: f64) -> Self;
}

macro_rules! element {
    ($t:ty, $stored:ident) => {
        impl Element for $t {
            const STORED: Stored = Stored::$stored;
            fn from_i64(x: i64) -> Self {
                x as $t
            }
            fn from_u64(x: u64) -> Self {
                x as $t
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    };
}
element!(i32, I32);
element!(i64, I64);
element!(f32, F32);
element!(f64, F64);

/// `from` (stored as `S`) converted to `T`, into fresh memory.
fn convert<S: Copy, T: Element>(from: &[S], cast: impl Fn(S) -> T, what: &str) -> Result<Vec<T>> {
    let mut out = try_zeroed::<T>(from.len(), what)?;
    for (to, &x) in out.iter_mut().zip(from) {
        *to = cast(x);
    }
    Ok(out)
}

/// Calls `$read::<S>()` for the Rust type `S` of the stored type `$s`,
/// then converts what it gives to `$t`.
macro_rules! via_stored {
    ($s:expr, $t:ty, $what:expr, |$S:ident| $read:expr) => {
        match $s {
            Stored::I8 => {
                type $S = i8;
                convert(&$read, |x| <$t>::from_i64(x.into()), $what)
            }
            Stored::I16 => {
                type $S = i16;
                convert(&$read, |x| <$t>::from_i64(x.into()), $what)
            }
            Stored::I32 => {
                type $S = i32;
                convert(&$read, |x| <$t>::from_i64(x.into()), $what)
            }
            Stored::I64 => {
                type $S = i64;
                convert(&$read, <$t>::from_i64, $what)
            }
            Stored::U8 => {
                type $S = u8;
                convert(&$read, |x| <$t>::from_u64(x.into()), $what)
            }
            Stored::U16 => {
                type $S = u16;
                convert(&$read, |x| <$t>::from_u64(x.into()), $what)
            }
            Stored::U32 => {
                type $S = u32;
                convert(&$read, |x| <$t>::from_u64(x.into()), $what)
            }
            Stored::U64 => {
                type $S = u64;
                convert(&$read, <$t>::from_u64, $what)
            }
            Stored::F32 => {
                type $S = f32;
                convert(&$read, |x| <$t>::from_f64(x.into()), $what)
            }
            Stored::F64 => {
                type $S = f64;
                convert(&$read, <$t>::from_f64, $what)
            }
        }
    };
}

/// Every string of a dataset or attribute's type `t` (variable or fixed
/// length, ASCII or UTF-8) read by `read`; an error message when it holds
/// something else.
fn strings_of(
    t: &Datatype,
    read: impl FnOnce() -> hdf5_reader::error::Result<Vec<String>>,
) -> Result<Vec<String>, String> {
    match t {
        Datatype::String {
            size: StringSize::Fixed(n),
            ..
        } if *n > MAX_FIXED_STRING => Err(format!(
            "strings of {n} bytes are longer than ids can be ({MAX_FIXED_STRING})"
        )),
        Datatype::String { .. } | Datatype::VarLen { .. } => read().map_err(|e| e.to_string()),
        other => Err(format!("expected strings, got {}", describe(other))),
    }
}

/// The strings of the attribute `a`.
fn attr_strings(a: &Attribute) -> Result<Vec<String>, String> {
    strings_of(&a.datatype, || a.read_strings())
}

/// The integers of the attribute `a`, as i64.
fn attr_ints(a: &Attribute) -> Result<Vec<i64>, String> {
    let t = stored(&a.datatype)
        .map_err(|_| format!("expected integers, got {}", describe(&a.datatype)))?;
    let e = |e: hdf5_reader::error::Error| e.to_string();
    Ok(match t {
        Stored::I8 => a
            .read_1d::<i8>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::I16 => a
            .read_1d::<i16>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::I32 => a
            .read_1d::<i32>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::I64 => a.read_1d::<i64>().map_err(e)?,
        Stored::U8 => a
            .read_1d::<u8>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::U16 => a
            .read_1d::<u16>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::U32 => a
            .read_1d::<u32>()
            .map_err(e)?
            .into_iter()
            .map(i64::from)
            .collect(),
        Stored::U64 => a
            .read_1d::<u64>()
            .map_err(e)?
            .into_iter()
            .map(|x| x as i64)
            .collect(),
        Stored::F32 | Stored::F64 => {
            return Err(format!("expected integers, got {}", describe(&a.datatype)));
        }
    })
}

/// Whether integers of type `t` need 64 bits (else 32 hold them); an error
/// message for a type that is not an integer.
fn wide_ints(t: &Datatype) -> Result<bool, String> {
    match stored(t) {
        Ok(Stored::I8 | Stored::I16 | Stored::I32 | Stored::U8 | Stored::U16) => Ok(false),
        Ok(Stored::I64 | Stored::U32 | Stored::U64) => Ok(true),
        _ => Err(format!("expected integers, got {}", describe(t))),
    }
}

/// Whether values of type `t` need f64 (else f32 holds them exactly); an
/// error message for a type that is not a number.
fn wide_floats(t: &Datatype) -> Result<bool, String> {
    match stored(t)? {
        Stored::F32 | Stored::I8 | Stored::I16 | Stored::U8 | Stored::U16 => Ok(false),
        Stored::F64 | Stored::I32 | Stored::I64 | Stored::U32 | Stored::U64 => Ok(true),
    }
}

/// Bytes of the ids.
fn id_bytes(ids: &[String]) -> usize {
    ids.iter().map(|s| s.len() + ID_BYTES).sum()
}

impl H5<'_> {
    /// An error about the object `name` of the file.
    fn error(&self, name: &str, msg: impl Display) -> DataFusionError {
        plan_error(format!("{}, '{name}': {msg}", self.what))
    }

    /// What `name` is in the file (a group, a dataset), `None` when
    /// nothing is (nor is its parent group); an error naming it when a
    /// group on its path cannot be read (a truncated or corrupt file).
    fn kind_of(&self, name: &str) -> Result<Option<Kind>> {
        let unreadable = |e: hdf5_reader::error::Error| {
            self.error(
                name,
                format!("cannot be read ({e}); is the file truncated or corrupt?"),
            )
        };
        let (parent, leaf) = match name.rsplit_once('/') {
            Some((parent, leaf)) => {
                if self.kind_of(parent)? != Some(Kind::Group) {
                    return Ok(None);
                }
                (self.file.group(parent).map_err(unreadable)?, leaf)
            }
            None => (self.file.root_group().map_err(unreadable)?, name),
        };
        let (groups, datasets) = parent.member_names().map_err(unreadable)?;
        Ok(if groups.iter().any(|g| g == leaf) {
            Some(Kind::Group)
        } else if datasets.iter().any(|d| d == leaf) {
            Some(Kind::Dataset)
        } else {
            None
        })
    }

    /// Whether the file has a group or dataset `name`.
    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.kind_of(name)?.is_some())
    }

    /// The group `name`.
    fn group(&self, name: &str) -> Result<hdf5_reader::group::Group> {
        match self.kind_of(name)? {
            None => Err(self.error(name, "no such group")),
            Some(Kind::Group) => self.file.group(name).map_err(|e| self.error(name, e)),
            Some(other) => Err(self.error(name, format!("expected a group, found a {other:?}"))),
        }
    }

    /// The dataset `name`, of `ndim` dimensions.
    fn dataset(&self, name: &str, ndim: usize) -> Result<Dataset> {
        let ds = match self.kind_of(name)? {
            None => return Err(self.error(name, "no such dataset")),
            Some(Kind::Dataset) => self.file.dataset(name).map_err(|e| self.error(name, e))?,
            Some(other) => {
                return Err(self.error(name, format!("expected a dataset, found a {other:?}")));
            }
        };
        if ds.ndim() != ndim {
            return Err(self.error(
                name,
                format!("expected {ndim} dimension(s), found {}", ds.ndim()),
            ));
        }
        Ok(ds)
    }

    /// The number of elements of the dataset `ds` (named `name`).
    fn size(&self, name: &str, ds: &Dataset) -> Result<usize> {
        let n = ds.num_elements().map_err(|e| self.error(name, e))?;
        usize::try_from(n).map_err(|_| self.error(name, format!("{n} elements are too many")))
    }

    /// The strings of the 1-D dataset `name`.
    fn strings(&self, name: &str) -> Result<Vec<String>> {
        let ds = self.dataset(name, 1)?;
        strings_of(ds.dtype(), || ds.read_strings()).map_err(|e| self.error(name, e))
    }

    /// The integers of the dataset `ds` (named `name`), as i64.
    fn ints(&self, name: &str, ds: &Dataset) -> Result<Vec<i64>> {
        wide_ints(ds.dtype()).map_err(|e| self.error(name, e))?;
        self.read_all(name, ds)
    }

    /// The type of the dataset `ds`.
    fn type_of<'d>(&self, ds: &'d Dataset) -> &'d Datatype {
        ds.dtype()
    }

    /// The 1-D dataset `name` of indices.
    fn indices(&self, name: &str, ds: &Dataset, wide: bool) -> Result<Ints> {
        Ok(if wide {
            Ints::Wide(self.read_all(name, ds)?)
        } else {
            Ints::Narrow(self.read_all(name, ds)?)
        })
    }

    /// The dataset `name` of values, any shape, in storage order.
    fn values(&self, name: &str, ds: &Dataset, wide: bool) -> Result<Floats> {
        Ok(if wide {
            Floats::Wide(self.read_all(name, ds)?)
        } else {
            Floats::Narrow(self.read_all(name, ds)?)
        })
    }

    /// All elements of the dataset `ds` (named `name`) as `T`, in storage
    /// order, read into fresh memory ([`try_zeroed`]: huge pages for large
    /// arrays, so that the copy out of the file does not fault on every
    /// 4 KiB). Stored as another number type, they are read as that a
    /// block of rows at a time and converted (as the HDF5 library
    /// converts), so that the stored copy is never all held.
    fn read_all<T: Element>(&self, name: &str, ds: &Dataset) -> Result<Vec<T>> {
        let n = self.size(name, ds)?;
        let what = format!("values of {name} of {}", self.what);
        let s = stored(ds.dtype()).map_err(|e| self.error(name, e))?;
        let mut out = try_zeroed::<T>(n, &what)?;
        if s == T::STORED {
            ds.read_into(&mut out).map_err(|e| self.error(name, e))?;
            return Ok(out);
        }
        let shape = ds.shape().to_vec();
        let (Some(&rows), true) = (shape.first(), n > 0) else {
            return Ok(out);
        };
        let row = n / rows as usize;
        let step = (CONVERT_BLOCK / row).max(1);
        let mut at = 0;
        for r0 in (0..rows as usize).step_by(step) {
            let r1 = (r0 + step).min(rows as usize);
            let block = self.read_rows::<T>(name, ds, s, &shape, r0..r1)?;
            out[at..at + block.len()].copy_from_slice(&block);
            at += block.len();
        }
        Ok(out)
    }

    /// The elements `range` of the 1-D dataset `ds` (named `name`) as `T`.
    fn read_range<T: Element>(
        &self,
        name: &str,
        ds: &Dataset,
        range: Range<usize>,
    ) -> Result<Vec<T>> {
        let s = stored(ds.dtype()).map_err(|e| self.error(name, e))?;
        self.read_rows(name, ds, s, ds.shape(), range)
    }

    /// The rows `rows` (of the first dimension, every element of the
    /// others) of the dataset `ds` (named `name`, of shape `shape`, stored
    /// as `s`), as `T`.
    fn read_rows<T: Element>(
        &self,
        name: &str,
        ds: &Dataset,
        s: Stored,
        shape: &[u64],
        rows: Range<usize>,
    ) -> Result<Vec<T>> {
        let len = rows.len() * shape[1..].iter().product::<u64>() as usize;
        let mut selections = vec![SliceInfoElem::Slice {
            start: rows.start as u64,
            end: rows.end as u64,
            step: 1,
        }];
        selections.extend(shape[1..].iter().map(|&d| SliceInfoElem::Slice {
            start: 0,
            end: d,
            step: 1,
        }));
        let selection = SliceInfo { selections };
        macro_rules! read_as {
            ($t:ty) => {{
                let (block, offset) = ds
                    .read_slice::<$t>(&selection)
                    .map_err(|e| self.error(name, e))?
                    .into_raw_vec_and_offset();
                if block.len() != len || offset.unwrap_or(0) != 0 {
                    return Err(self.error(name, "a block of values read out of shape"));
                }
                block
            }};
        }
        if s == T::STORED {
            return Ok(read_as!(T));
        }
        via_stored!(
            s,
            T,
            &format!("values of {name} of {}", self.what),
            |S| read_as!(S)
        )
    }

    /// The index of the AnnData dataframe `group` (`var` or `obs`).
    fn anndata_index(&self, group: &str) -> Result<Vec<String>> {
        if self.kind_of(group)? == Some(Kind::Dataset) {
            return Err(self.error(
                group,
                "a compound dataset (the AnnData layout before anndata 0.7) is not read; \
                 save the file again with a recent anndata (adata.write_h5ad)",
            ));
        }
        let g = self.group(group)?;
        let column = match g.attribute("_index") {
            Ok(attr) => attr_strings(&attr)
                .ok()
                .and_then(|s| s.into_iter().next())
                .ok_or_else(|| self.error(group, "its attribute '_index' is not a string"))?,
            Err(_) => "_index".to_string(),
        };
        self.strings(&format!("{group}/{column}"))
    }

    /// An AnnData file's `X`.
    fn anndata(&self, memory: &QueryMemory) -> Result<Parts> {
        if !self.exists("X")? {
            return Err(self.error(
                "X",
                "no such group or dataset: the file holds no matrix X (is it an AnnData file?)",
            ));
        }
        let genes = self.anndata_index("var")?;
        let cells = self.anndata_index("obs")?;
        let mut reservation = memory.reserve(
            &format!("matrix X ({} genes x {} cells)", genes.len(), cells.len()),
            id_bytes(&genes) + id_bytes(&cells),
        )?;
        if self.kind_of("X")? == Some(Kind::Dataset) {
            let ds = self.dataset("X", 2)?;
            let shape = ds.shape();
            if shape != [cells.len() as u64, genes.len() as u64] {
                return Err(self.error(
                    "X",
                    format!(
                        "shape {shape:?}, but obs has {} cells and var {} genes",
                        cells.len(),
                        genes.len()
                    ),
                ));
            }
            let wide = wide_floats(self.type_of(&ds)).map_err(|e| self.error("X", e))?;
            reservation.try_grow(
                self.size("X", &ds)?
                    .saturating_mul(if wide { 8 } else { 4 }),
            )?;
            let grid = Grid {
                h5: self,
                name: "X",
                data: "X",
                genes: &genes,
                cells: &cells,
            };
            let (offsets, indices, values) = match self.values("X", &ds, wide)? {
                Floats::Narrow(v) => grid.dense(&v, &mut reservation)?,
                Floats::Wide(v) => grid.dense(&v, &mut reservation)?,
            };
            reservation.shrink_to(
                id_bytes(&genes) + id_bytes(&cells) + Grid::bytes(genes.len(), values.len()),
            );
            return Ok(Parts {
                genes,
                cells,
                offsets,
                indices,
                values,
                reservation,
            });
        }
        let x = self.group("X")?;
        let attr = |names: &[&str]| names.iter().find_map(|n| x.attribute(n).ok());
        let encoding = attr(&["encoding-type", "h5sparse_format"])
            .and_then(|a| attr_strings(&a).ok())
            .and_then(|s| s.into_iter().next())
            .ok_or_else(|| self.error("X", "a group without a string attribute 'encoding-type'"))?;
        let by_cell = match encoding.as_str() {
            "csr_matrix" | "csr" => true,
            "csc_matrix" | "csc" => false,
            other => {
                return Err(self.error(
                    "X",
                    format!("encoding-type '{other}'; expected csr_matrix or csc_matrix"),
                ));
            }
        };
        let shape = match attr(&["shape", "h5sparse_shape"]) {
            Some(a) => attr_ints(&a).map_err(|e| self.error("X (attribute shape)", e))?,
            None => return Err(self.error("X", "no attribute 'shape'")),
        };
        if shape != [cells.len() as i64, genes.len() as i64] {
            return Err(self.error(
                "X",
                format!(
                    "shape {shape:?}, but obs has {} cells and var {} genes",
                    cells.len(),
                    genes.len()
                ),
            ));
        }
        let grid = Grid {
            h5: self,
            name: "X",
            data: "X/data",
            genes: &genes,
            cells: &cells,
        };
        let (offsets, indices, values) = grid.sparse(by_cell, &mut reservation)?;
        Ok(Parts {
            genes,
            cells,
            offsets,
            indices,
            values,
            reservation,
        })
    }

    /// A 10x Genomics file's `matrix`.
    fn tenx(&self, memory: &QueryMemory) -> Result<Parts> {
        if !self.exists("matrix")? {
            let v2 = self
                .file
                .root_group()
                .and_then(|root| root.member_names())
                .map(|(groups, _)| groups)
                .unwrap_or_default()
                .into_iter()
                .find(|g| self.exists(&format!("{g}/genes")).unwrap_or(false));
            return Err(match v2 {
                Some(genome) => self.error(
                    &format!("{genome}/genes"),
                    "Cell Ranger v2's layout (one group per genome) is not read; use a \
                     Cell Ranger v3+ .h5, or the filtered_gene_bc_matrices directory",
                ),
                None => self.error(
                    "matrix",
                    "no such group: not a 10x Genomics (Cell Ranger v3+) .h5 file, nor AnnData \
                     (no X)",
                ),
            });
        }
        let genes = self.strings("matrix/features/id")?;
        let cells = self.strings("matrix/barcodes")?;
        let shape_ds = self.dataset("matrix/shape", 1)?;
        let shape = self.ints("matrix/shape", &shape_ds)?;
        if shape != [genes.len() as i64, cells.len() as i64] {
            return Err(self.error(
                "matrix/shape",
                format!(
                    "{shape:?}, but matrix/features/id has {} features and matrix/barcodes {} \
                     barcodes",
                    genes.len(),
                    cells.len()
                ),
            ));
        }
        let mut reservation = memory.reserve(
            &format!(
                "matrix ({} features x {} barcodes)",
                genes.len(),
                cells.len()
            ),
            id_bytes(&genes) + id_bytes(&cells),
        )?;
        let grid = Grid {
            h5: self,
            name: "matrix",
            data: "matrix/data",
            genes: &genes,
            cells: &cells,
        };
        let (offsets, indices, values) = grid.sparse(true, &mut reservation)?;
        Ok(Parts {
            genes,
            cells,
            offsets,
            indices,
            values,
            reservation,
        })
    }
}
