//! AnnData `.h5ad` and 10x Genomics (Cell Ranger v3+) `.h5` files as inputs
//! (feature `hdf5`), read with the system HDF5 library into a
//! [`SparseTable`].
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
//! indices of 32 or 64 bits. The file is read when the query is planned:
//! what the read holds at once (the arrays as stored, a matrix by cell's
//! values a block at a time, and the arrays as grouped by gene, which
//! [`grouping`] makes) is reserved in the session's memory pool first, and
//! the grouped arrays stay reserved for as long as the table lives.
//!
//! Every problem (a missing file, not an HDF5 file, a missing group or
//! dataset, a wrong shape or type, an index out of range, `indptr` not
//! ascending, a value not finite) is a `DataFusionError` naming the file
//! and the dataset.

use std::fmt::Display;
use std::path::Path;

use datafusion::arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
use datafusion::error::{DataFusionError, Result};
use hdf5::types::{
    FixedAscii, FixedUnicode, FloatSize, H5Type, IntSize, TypeDescriptor, VarLenAscii,
    VarLenUnicode,
};
use hdf5::{Container, LocationType};
use hdf5_metno as hdf5;

use self::grouping::Grid;
use super::h5_kind::Hdf5Kind;
use super::plan_error;
use super::sparse_table::SparseTable;
use crate::memory::{QueryMemory, Reservation, ZeroBytes, try_zeroed};

/// Bytes an id takes besides its text while it is read (its `String`, the
/// allocation's rounding and header).
const ID_BYTES: usize = 48;

/// Reads the HDF5 file at `path` (of the kind its name says; `what` names
/// it in messages: `h5ad file 'x.h5ad'`) as a sparse table, its memory
/// reserved in `memory`.
pub(crate) fn read(
    path: &Path,
    kind: Hdf5Kind,
    what: &str,
    memory: &QueryMemory,
) -> Result<SparseTable> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(plan_error(format!("cannot open {what}: {e}")));
    }
    let file = hdf5::File::open(path).map_err(|e| {
        plan_error(format!(
            "cannot open {what} as an HDF5 file ({e}); is it an HDF5 file?"
        ))
    })?;
    let h5 = H5 { file, what };
    let parts = match kind {
        Hdf5Kind::Tenx if h5.file.link_exists("matrix") || !h5.file.link_exists("X") => {
            h5.tenx(memory)?
        }
        Hdf5Kind::Tenx | Hdf5Kind::AnnData => h5.anndata(memory)?,
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
    file: hdf5::File,
    what: &'a str,
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

/// A string of fixed length, as bytes.
trait Fixed: H5Type {
    fn bytes(&self) -> &[u8];
}

impl<const N: usize> Fixed for FixedAscii<N> {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<const N: usize> Fixed for FixedUnicode<N> {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Strings of fixed length (at most `T`'s) as bytes.
fn fixed<T: Fixed>(c: &Container) -> Result<Vec<Vec<u8>>, String> {
    let strings = c.read_raw::<T>().map_err(|e| e.to_string())?;
    Ok(strings.iter().map(|s| s.bytes().to_vec()).collect())
}

/// Every string of a dataset or attribute (variable or fixed length, ASCII
/// or UTF-8); an error message when it holds something else.
fn strings_of(c: &Container) -> Result<Vec<String>, String> {
    let descriptor = c
        .dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(|e| e.to_string())?;
    let bytes = match descriptor {
        TypeDescriptor::VarLenUnicode => {
            let s = c.read_raw::<VarLenUnicode>().map_err(|e| e.to_string())?;
            return Ok(s.iter().map(|s| s.as_str().to_string()).collect());
        }
        TypeDescriptor::VarLenAscii => {
            let s = c.read_raw::<VarLenAscii>().map_err(|e| e.to_string())?;
            return Ok(s.iter().map(|s| s.as_str().to_string()).collect());
        }
        TypeDescriptor::FixedAscii(n) => match n {
            0..=16 => fixed::<FixedAscii<16>>(c)?,
            17..=64 => fixed::<FixedAscii<64>>(c)?,
            65..=256 => fixed::<FixedAscii<256>>(c)?,
            257..=1024 => fixed::<FixedAscii<1024>>(c)?,
            _ => {
                return Err(format!(
                    "strings of {n} bytes are longer than ids can be (1024)"
                ));
            }
        },
        TypeDescriptor::FixedUnicode(n) => match n {
            0..=16 => fixed::<FixedUnicode<16>>(c)?,
            17..=64 => fixed::<FixedUnicode<64>>(c)?,
            65..=256 => fixed::<FixedUnicode<256>>(c)?,
            257..=1024 => fixed::<FixedUnicode<1024>>(c)?,
            _ => {
                return Err(format!(
                    "strings of {n} bytes are longer than ids can be (1024)"
                ));
            }
        },
        other => return Err(format!("expected strings, got {other}")),
    };
    bytes
        .into_iter()
        .map(|b| String::from_utf8(b).map_err(|e| format!("a string is not UTF-8 ({e})")))
        .collect()
}

/// Whether integers of type `t` need 64 bits (else 32 hold them); an error
/// message for a type that is not an integer.
fn wide_ints(t: &TypeDescriptor) -> Result<bool, String> {
    match t {
        TypeDescriptor::Integer(IntSize::U1 | IntSize::U2 | IntSize::U4)
        | TypeDescriptor::Unsigned(IntSize::U1 | IntSize::U2) => Ok(false),
        TypeDescriptor::Integer(IntSize::U8)
        | TypeDescriptor::Unsigned(IntSize::U4 | IntSize::U8) => Ok(true),
        other => Err(format!("expected integers, got {other}")),
    }
}

/// Whether values of type `t` need f64 (else f32 holds them exactly); an
/// error message for a type that is not a number.
fn wide_floats(t: &TypeDescriptor) -> Result<bool, String> {
    match t {
        TypeDescriptor::Float(FloatSize::U4)
        | TypeDescriptor::Integer(IntSize::U1 | IntSize::U2)
        | TypeDescriptor::Unsigned(IntSize::U1 | IntSize::U2) => Ok(false),
        TypeDescriptor::Float(FloatSize::U8)
        | TypeDescriptor::Integer(IntSize::U4 | IntSize::U8)
        | TypeDescriptor::Unsigned(IntSize::U4 | IntSize::U8) => Ok(true),
        other => Err(format!("expected numbers, got {other}")),
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
    /// nothing is.
    fn kind_of(&self, name: &str) -> Option<LocationType> {
        if !self.file.link_exists(name) {
            return None;
        }
        self.file.loc_type_by_name(name).ok()
    }

    /// The group `name`.
    fn group(&self, name: &str) -> Result<hdf5::Group> {
        match self.kind_of(name) {
            None => Err(self.error(name, "no such group")),
            Some(LocationType::Group) => self.file.group(name).map_err(|e| self.error(name, e)),
            Some(other) => Err(self.error(name, format!("expected a group, found a {other:?}"))),
        }
    }

    /// The dataset `name`, of `ndim` dimensions.
    fn dataset(&self, name: &str, ndim: usize) -> Result<hdf5::Dataset> {
        let ds = match self.kind_of(name) {
            None => return Err(self.error(name, "no such dataset")),
            Some(LocationType::Dataset) => {
                self.file.dataset(name).map_err(|e| self.error(name, e))?
            }
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

    /// The strings of the 1-D dataset `name`.
    fn strings(&self, name: &str) -> Result<Vec<String>> {
        let ds = self.dataset(name, 1)?;
        strings_of(&ds).map_err(|e| self.error(name, e))
    }

    /// The integers of the container `c` (named `name`), as i64.
    fn ints(&self, name: &str, c: &Container) -> Result<Vec<i64>> {
        let t = c
            .dtype()
            .and_then(|t| t.to_descriptor())
            .map_err(|e| self.error(name, e))?;
        wide_ints(&t).map_err(|e| self.error(name, e))?;
        c.read_raw::<i64>().map_err(|e| self.error(name, e))
    }

    /// The type of the dataset `ds` (named `name`).
    fn type_of(&self, name: &str, ds: &hdf5::Dataset) -> Result<TypeDescriptor> {
        ds.dtype()
            .and_then(|t| t.to_descriptor())
            .map_err(|e| self.error(name, e))
    }

    /// The 1-D dataset `name` of indices.
    fn indices(&self, name: &str, ds: &hdf5::Dataset, wide: bool) -> Result<Ints> {
        Ok(if wide {
            Ints::Wide(self.read_all(name, ds)?)
        } else {
            Ints::Narrow(self.read_all(name, ds)?)
        })
    }

    /// The dataset `name` of values, any shape, in storage order.
    fn values(&self, name: &str, ds: &hdf5::Dataset, wide: bool) -> Result<Floats> {
        Ok(if wide {
            Floats::Wide(self.read_all(name, ds)?)
        } else {
            Floats::Narrow(self.read_all(name, ds)?)
        })
    }

    /// All elements of the dataset `ds` (named `name`), in storage order,
    /// read into fresh memory ([`try_zeroed`]: huge pages for large arrays,
    /// so that the copy out of the file does not fault on every 4 KiB).
    fn read_all<T: hdf5::H5Type + ZeroBytes>(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
    ) -> Result<Vec<T>> {
        let mut out = try_zeroed(ds.size(), &format!("values of {name}"))?;
        ds.read_into_raw(&mut out)
            .map_err(|e| self.error(name, e))?;
        Ok(out)
    }

    /// The index of the AnnData dataframe `group` (`var` or `obs`).
    fn anndata_index(&self, group: &str) -> Result<Vec<String>> {
        if self.kind_of(group) == Some(LocationType::Dataset) {
            return Err(self.error(
                group,
                "a compound dataset (the AnnData layout before anndata 0.7) is not read; \
                 save the file again with a recent anndata (adata.write_h5ad)",
            ));
        }
        let g = self.group(group)?;
        let column = match g.attr("_index") {
            Ok(attr) => strings_of(&attr)
                .ok()
                .and_then(|s| s.into_iter().next())
                .ok_or_else(|| self.error(group, "its attribute '_index' is not a string"))?,
            Err(_) => "_index".to_string(),
        };
        self.strings(&format!("{group}/{column}"))
    }

    /// An AnnData file's `X`.
    fn anndata(&self, memory: &QueryMemory) -> Result<Parts> {
        if !self.file.link_exists("X") {
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
        if self.kind_of("X") == Some(LocationType::Dataset) {
            let ds = self.dataset("X", 2)?;
            let shape = ds.shape();
            if shape != [cells.len(), genes.len()] {
                return Err(self.error(
                    "X",
                    format!(
                        "shape {shape:?}, but obs has {} cells and var {} genes",
                        cells.len(),
                        genes.len()
                    ),
                ));
            }
            let t = self.type_of("X", &ds)?;
            let wide = wide_floats(&t).map_err(|e| self.error("X", e))?;
            reservation.try_grow(ds.size().saturating_mul(if wide { 8 } else { 4 }))?;
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
        let attr = |names: &[&str]| names.iter().find_map(|n| x.attr(n).ok());
        let encoding = attr(&["encoding-type", "h5sparse_format"])
            .and_then(|a| strings_of(&a).ok())
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
            Some(a) => self.ints("X (attribute shape)", &a)?,
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
        if !self.file.link_exists("matrix") {
            let v2 = self
                .file
                .member_names()
                .unwrap_or_default()
                .into_iter()
                .find(|g| self.file.link_exists(&format!("{g}/genes")));
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
