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
//! what the read holds at once (the arrays as stored and as regrouped) is
//! reserved in the session's memory pool first, and the regrouped arrays
//! stay reserved for as long as the table lives.
//!
//! Every problem (a missing file, not an HDF5 file, a missing group or
//! dataset, a wrong shape or type, an index out of range, `indptr` not
//! ascending, a value not finite) is a `DataFusionError` naming the file
//! and the dataset.

use std::fmt::Display;
use std::ops::Range;
use std::path::Path;

use datafusion::arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
use datafusion::error::{DataFusionError, Result};
use hdf5::types::{
    FixedAscii, FixedUnicode, FloatSize, H5Type, IntSize, TypeDescriptor, VarLenAscii,
    VarLenUnicode,
};
use hdf5::{Container, LocationType};
use hdf5_metno as hdf5;

use super::h5_kind::Hdf5Kind;
use super::plan_error;
use super::sparse_table::{SparseTable, ascending_within};
use crate::memory::{
    QueryMemory, Reservation, ZeroBytes, try_filled, try_with_capacity, try_zeroed,
};
use crate::sort::split_mut;
use rayon::prelude::*;

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

/// Gene-grouped arrays: offsets, cell indices, values.
type Grouped = (Vec<i64>, Vec<i32>, Vec<f64>);

/// Entries of whole cells that [`regroup`] takes values for at a time.
const REGROUP_BLOCK: usize = 1 << 21;

/// Entries stored by cell (`indptr` over cells, `indices` genes, each in
/// `0..genes`) grouped by gene, each gene's cells ascending: a counting sort
/// on rayon's threads, each taking a range of genes of about equal entries
/// and reading all entries, writing its genes' own part of the output. The
/// values come block by block of whole cells, about `block` entries each:
/// `values(range)` gives those of the entries `range` (read from a file, so
/// that a file's values are never all held at once next to the output).
fn regroup<I: Copy + Into<i64> + Sync, V: Copy + Into<f64> + Sync>(
    indptr: &[i64],
    indices: &[I],
    genes: usize,
    block: usize,
    mut values: impl FnMut(Range<usize>) -> Result<Vec<V>>,
) -> Result<Grouped> {
    // Entries per gene, shifted by one, then summed into each gene's start.
    let mut start = indices
        .par_chunks(1 << 20)
        .fold(
            || vec![0i64; genes + 1],
            |mut counts, chunk| {
                for &i in chunk {
                    counts[Into::<i64>::into(i) as usize + 1] += 1;
                }
                counts
            },
        )
        .reduce(
            || vec![0i64; genes + 1],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    for g in 0..genes {
        start[g + 1] += start[g];
    }
    let mut cells = try_zeroed::<i32>(indices.len(), "HDF5 matrix indices")?;
    let mut out = try_zeroed::<f64>(indices.len(), "HDF5 matrix values")?;
    // Ranges of genes of about equal entries, one per thread.
    let parts = rayon::current_num_threads().clamp(1, genes.max(1));
    let total = indices.len().max(1);
    let mut bounds = vec![0usize];
    for t in 1..parts {
        let target = (total * t / parts) as i64;
        bounds.push(
            start
                .partition_point(|&s| s < target)
                .min(genes)
                .max(bounds[t - 1]),
        );
    }
    bounds.push(genes);
    let entry_ranges: Vec<Range<usize>> = bounds
        .windows(2)
        .map(|w| start[w[0]] as usize..start[w[1]] as usize)
        .collect();
    // Each range's next free slot of each of its genes, across blocks.
    let mut next: Vec<Vec<usize>> = bounds
        .windows(2)
        .map(|w| {
            let base = start[w[0]];
            start[w[0]..w[1]]
                .iter()
                .map(|&s| (s - base) as usize)
                .collect()
        })
        .collect();
    let n = indptr.len() - 1;
    let mut c0 = 0;
    while c0 < n {
        // Whole cells of at most `block` entries (at least one cell).
        let e0 = indptr[c0] as usize;
        let fits = indptr.partition_point(|&e| e as usize <= e0.saturating_add(block));
        let c1 = fits.saturating_sub(1).clamp(c0 + 1, n);
        let e1 = indptr[c1] as usize;
        let x = values(e0..e1)?;
        split_mut(&mut cells, &entry_ranges)
            .into_par_iter()
            .zip(split_mut(&mut out, &entry_ranges))
            .zip(bounds.par_windows(2))
            .zip(next.par_iter_mut())
            .for_each(|(((cells, out), w), next)| {
                let (first, end) = (w[0], w[1]);
                for c in c0..c1 {
                    let span = indptr[c] as usize..indptr[c + 1] as usize;
                    let stored = &x[span.start - e0..span.end - e0];
                    for (&i, &v) in indices[span].iter().zip(stored) {
                        let g = Into::<i64>::into(i) as usize;
                        if (first..end).contains(&g) {
                            let at = &mut next[g - first];
                            cells[*at] = c as i32;
                            out[*at] = v.into();
                            *at += 1;
                        }
                    }
                }
            });
        c0 = c1;
    }
    Ok((start, cells, out))
}

/// Whether every value is finite: a branch-free pass on rayon's threads.
fn all_finite<V: Copy + Into<f64> + Sync>(values: &[V]) -> bool {
    values.par_chunks(1 << 16).all(|chunk| {
        chunk
            .iter()
            .fold(true, |ok, &x| ok & Into::<f64>::into(x).is_finite())
    })
}

/// `values` as f64, converted on rayon's threads into fresh memory.
fn widen(values: &[f32]) -> Result<Vec<f64>> {
    let mut out = try_zeroed::<f64>(values.len(), "HDF5 matrix values")?;
    out.par_chunks_mut(1 << 16)
        .zip(values.par_chunks(1 << 16))
        .for_each(|(to, from)| {
            for (to, &x) in to.iter_mut().zip(from) {
                *to = f64::from(x);
            }
        });
    Ok(out)
}

/// A genes × cells matrix being read from the group or dataset `name`.
struct Grid<'a> {
    h5: &'a H5<'a>,
    /// The group (a sparse matrix) or dataset (a dense one).
    name: &'a str,
    /// The dataset of the values.
    data: &'a str,
    genes: &'a [String],
    cells: &'a [String],
}

impl Grid<'_> {
    /// Bytes of gene-grouped arrays of `genes` genes and `entries` entries.
    fn bytes(genes: usize, entries: usize) -> usize {
        (genes + 1) * 8 + entries.saturating_mul(4 + 8)
    }

    /// An error about the dataset `dataset` of the group.
    fn error(&self, dataset: &str, msg: impl Display) -> DataFusionError {
        self.h5.error(&format!("{}/{dataset}", self.name), msg)
    }

    /// A compressed sparse matrix of the group: compressed by cell
    /// (`by_cell`: `indptr` per cell, `indices` genes) or by gene.
    fn sparse(&self, by_cell: bool, reservation: &mut Reservation) -> Result<Grouped> {
        let path = |d: &str| format!("{}/{d}", self.name);
        let data = self.h5.dataset(&path("data"), 1)?;
        let indices = self.h5.dataset(&path("indices"), 1)?;
        let indptr = self.h5.dataset(&path("indptr"), 1)?;
        let entries = data.size();
        if indices.size() != entries {
            return Err(self.error(
                "indices",
                format!(
                    "{} indices, but data holds {entries} values",
                    indices.size()
                ),
            ));
        }
        let wide_values = wide_floats(&self.h5.type_of(&path("data"), &data)?)
            .map_err(|e| self.error("data", e))?;
        let wide_indices = wide_ints(&self.h5.type_of(&path("indices"), &indices)?)
            .map_err(|e| self.error("indices", e))?;
        let (major, minor) = if by_cell {
            (self.cells.len(), self.genes.len())
        } else {
            (self.genes.len(), self.cells.len())
        };
        if self.cells.len() > i32::MAX as usize {
            return Err(self.error(
                "indices",
                format!(
                    "{} cells are more than can be read (2^31 - 1)",
                    self.cells.len()
                ),
            ));
        }
        // The arrays as stored (values by cell a block at a time), then as
        // grouped by gene: reserved before either is read.
        let value_bytes = if wide_values { 8 } else { 4 };
        let stored_values = if by_cell {
            entries.min(REGROUP_BLOCK)
        } else {
            entries
        };
        let stored = entries.saturating_mul(if wide_indices { 8 } else { 4 })
            + stored_values.saturating_mul(value_bytes)
            + (major + 1) * 8;
        reservation.try_grow(stored)?;
        reservation.try_grow(Self::bytes(self.genes.len(), entries))?;
        let indptr = self.h5.ints(&path("indptr"), &indptr)?;
        self.check_indptr(&indptr, major, entries)?;
        let ints = self.h5.indices(&path("indices"), &indices, wide_indices)?;
        if by_cell {
            let grouped = match &ints {
                Ints::Narrow(i) => self.by_cell(&indptr, i, &data, wide_values, minor),
                Ints::Wide(i) => self.by_cell(&indptr, i, &data, wide_values, minor),
            }?;
            reservation.shrink_to(reservation.size() - stored);
            return Ok(grouped);
        }
        let floats = self.h5.values(&path("data"), &data, wide_values)?;
        let grouped = match (ints, floats) {
            // The arrays as read, when each gene's are already right (as
            // anndata writes a matrix by gene): moved, not copied.
            (Ints::Narrow(i), Floats::Wide(v)) if Self::grouped_as_read(&indptr, &i, &v, minor) => {
                (indptr, i, v)
            }
            // Float32 values (as scanpy writes them) widened on rayon's
            // threads; the indices moved.
            (Ints::Narrow(i), Floats::Narrow(v))
                if Self::grouped_as_read(&indptr, &i, &v, minor) =>
            {
                let v = widen(&v)?;
                (indptr, i, v)
            }
            (ints, floats) => {
                with_widths!(&ints, &floats, |i, v| self.by_gene(&indptr, i, v, minor))?
            }
        };
        reservation.shrink_to(reservation.size() - stored);
        Ok(grouped)
    }

    /// Checks `indptr`: `major + 1` offsets ascending from 0 to `entries`.
    fn check_indptr(&self, indptr: &[i64], major: usize, entries: usize) -> Result<()> {
        if indptr.len() != major + 1 {
            return Err(self.error(
                "indptr",
                format!(
                    "{} offsets, expected {} (one more than the rows)",
                    indptr.len(),
                    major + 1
                ),
            ));
        }
        if indptr[0] != 0 || indptr[major] != entries as i64 {
            return Err(self.error(
                "indptr",
                format!(
                    "runs from {} to {}, expected 0 to {entries} (the number of values)",
                    indptr[0], indptr[major]
                ),
            ));
        }
        if let Some(k) = indptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(self.error(
                "indptr",
                format!(
                    "not ascending: offset {k} is {}, offset {} is {}",
                    indptr[k],
                    k + 1,
                    indptr[k + 1]
                ),
            ));
        }
        Ok(())
    }

    /// The value at entry `k` (of gene `g`, cell `c`), checked finite.
    fn finite<V: Copy + Into<f64>>(
        &self,
        values: &[V],
        k: usize,
        g: usize,
        c: usize,
    ) -> Result<f64> {
        let x: f64 = values[k].into();
        if x.is_finite() {
            Ok(x)
        } else {
            Err(self.h5.error(
                self.data,
                format!(
                    "gene '{}', cell '{}' has the value {x}; the values must be finite",
                    self.genes[g], self.cells[c]
                ),
            ))
        }
    }

    /// Index `k` of `indices`, checked in `0..bound`.
    fn index<I: Copy + Into<i64>>(&self, indices: &[I], k: usize, bound: usize) -> Result<usize> {
        let i: i64 = indices[k].into();
        if (0..bound as i64).contains(&i) {
            Ok(i as usize)
        } else {
            Err(self.error("indices", format!("entry {k} is {i}, outside 0..{bound}")))
        }
    }

    /// Whether arrays stored by gene are grouped as [`Grid::by_gene`]
    /// groups them: each gene's cells ascending within `0..cells`, every
    /// value finite. Branch-free passes on rayon's threads.
    fn grouped_as_read<V: Copy + Into<f64> + Sync>(
        indptr: &[i64],
        indices: &[i32],
        values: &[V],
        cells: usize,
    ) -> bool {
        let genes_ok = (0..indptr.len() - 1)
            .into_par_iter()
            .all(|g| ascending_within(&indices[indptr[g] as usize..indptr[g + 1] as usize], cells));
        genes_ok && all_finite(values)
    }

    /// Entries stored by cell, grouped by gene ([`regroup`], the values of
    /// the dataset `data` read a block of cells at a time, float64 when
    /// `wide`) when every index is in range (checked first, in a
    /// branch-free pass on rayon's threads) and every value finite (each
    /// block checked as read); otherwise entry by entry, to name the first
    /// fault ([`Grid::by_cell_checked`]).
    fn by_cell<I: Copy + Into<i64> + Sync>(
        &self,
        indptr: &[i64],
        indices: &[I],
        data: &hdf5::Dataset,
        wide: bool,
        genes: usize,
    ) -> Result<Grouped> {
        let in_range = indices.par_chunks(1 << 16).all(|chunk| {
            chunk.iter().fold(true, |ok, &i| {
                let i: i64 = i.into();
                ok & (i >= 0) & (i < genes as i64)
            })
        });
        let path = format!("{}/{}", self.name, "data");
        if !in_range {
            let floats = self.h5.values(&path, data, wide)?;
            return match &floats {
                Floats::Narrow(v) => self.by_cell_checked(indptr, indices, v, genes),
                Floats::Wide(v) => self.by_cell_checked(indptr, indices, v, genes),
            };
        }
        if wide {
            self.by_cell_blocks::<I, f64>(indptr, indices, data, &path, genes)
        } else {
            self.by_cell_blocks::<I, f32>(indptr, indices, data, &path, genes)
        }
    }

    /// [`Grid::by_cell`] of indices in range: [`regroup`] of the values of
    /// `data` (named `path`) read as `V` a block at a time, each block
    /// checked to be finite (a value that is not is named).
    fn by_cell_blocks<I: Copy + Into<i64> + Sync, V: hdf5::H5Type + Copy + Into<f64> + Sync>(
        &self,
        indptr: &[i64],
        indices: &[I],
        data: &hdf5::Dataset,
        path: &str,
        genes: usize,
    ) -> Result<Grouped> {
        regroup(indptr, indices, genes, REGROUP_BLOCK, |range| {
            let (block, offset) = data
                .read_slice_1d::<V, _>(range.clone())
                .map_err(|e| self.h5.error(path, e))?
                .into_raw_vec_and_offset();
            if block.len() != range.len() || offset.unwrap_or(0) != 0 {
                return Err(self.h5.error(path, "a block of values read out of shape"));
            }
            if !all_finite(&block) {
                // Named: the first value that is not finite.
                let k = block
                    .iter()
                    .position(|&x| !Into::<f64>::into(x).is_finite())
                    .unwrap_or(0);
                let entry = range.start + k;
                let c = indptr.partition_point(|&e| e as usize <= entry) - 1;
                let g = Into::<i64>::into(indices[entry]) as usize;
                self.finite(&block, k, g, c)?;
            }
            Ok(block)
        })
    }

    /// [`Grid::by_cell`] entry by entry, each index and value checked: the
    /// first fault is named.
    fn by_cell_checked<I: Copy + Into<i64>, V: Copy + Into<f64>>(
        &self,
        indptr: &[i64],
        indices: &[I],
        values: &[V],
        genes: usize,
    ) -> Result<Grouped> {
        let mut start = try_filled(genes + 1, 0i64, "HDF5 matrix offsets")?;
        for k in 0..indices.len() {
            start[self.index(indices, k, genes)? + 1] += 1;
        }
        for g in 0..genes {
            start[g + 1] += start[g];
        }
        let mut next = start.clone();
        let mut cells = try_zeroed::<i32>(indices.len(), "HDF5 matrix indices")?;
        let mut out = try_zeroed::<f64>(indices.len(), "HDF5 matrix values")?;
        for (c, w) in indptr.windows(2).enumerate() {
            let first = w[0] as usize;
            for (k, i) in (first..).zip(&indices[first..w[1] as usize]) {
                // In range: checked by the count above.
                let g = Into::<i64>::into(*i) as usize;
                let at = next[g] as usize;
                cells[at] = c as i32;
                out[at] = self.finite(values, k, g, c)?;
                next[g] += 1;
            }
        }
        Ok((start, cells, out))
    }

    /// Entries stored by gene, each gene's cells sorted when they are not.
    fn by_gene<I: Copy + Into<i64>, V: Copy + Into<f64>>(
        &self,
        indptr: &[i64],
        indices: &[I],
        values: &[V],
        cells: usize,
    ) -> Result<Grouped> {
        let mut at = try_with_capacity(indices.len(), "HDF5 matrix indices")?;
        let mut out = try_with_capacity(indices.len(), "HDF5 matrix values")?;
        let mut scratch: Vec<(i32, f64)> = Vec::new();
        for g in 0..indptr.len() - 1 {
            let range = indptr[g] as usize..indptr[g + 1] as usize;
            for k in range.clone() {
                let c = self.index(indices, k, cells)?;
                at.push(c as i32);
                out.push(self.finite(values, k, g, c)?);
            }
            if !at[range.clone()].is_sorted() {
                scratch.clear();
                scratch.extend(range.clone().map(|k| (at[k], out[k])));
                scratch.sort_by_key(|&(c, _)| c);
                for (k, &(c, x)) in range.zip(&scratch) {
                    at[k] = c;
                    out[k] = x;
                }
            }
        }
        Ok((indptr.to_vec(), at, out))
    }

    /// A dense cells × genes matrix (row-major), its non-zero values
    /// grouped by gene; more reserved in `reservation` as they are counted.
    fn dense<V: Copy + Into<f64>>(
        &self,
        x: &[V],
        reservation: &mut Reservation,
    ) -> Result<Grouped> {
        let (m, n) = (self.genes.len(), self.cells.len());
        let mut start = try_filled(m + 1, 0i64, "HDF5 matrix offsets")?;
        for (k, v) in x.iter().enumerate() {
            if Into::<f64>::into(*v) != 0.0 {
                start[k % m + 1] += 1;
            }
        }
        for g in 0..m {
            start[g + 1] += start[g];
        }
        let entries = start[m] as usize;
        reservation.try_grow(Self::bytes(m, entries))?;
        let mut next = start.clone();
        let mut cells = try_zeroed::<i32>(entries, "HDF5 matrix indices")?;
        let mut out = try_zeroed::<f64>(entries, "HDF5 matrix values")?;
        for c in 0..n {
            for (g, slot) in next[..m].iter_mut().enumerate() {
                let k = c * m + g;
                if Into::<f64>::into(x[k]) == 0.0 {
                    continue;
                }
                let at = *slot as usize;
                cells[at] = c as i32;
                out[at] = self.finite(x, k, g, c)?;
                *slot += 1;
            }
        }
        Ok((start, cells, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix stored by gene is kept as read only when every gene's cells
    /// ascend within range and every value is finite; otherwise it takes
    /// the path that sorts a gene or names the fault.
    #[test]
    fn only_ordered_finite_genes_are_kept_as_read() {
        // Three genes over 4 cells; the second is empty.
        let indptr = [0i64, 2, 2, 5];
        let ok =
            |indices: &[i32], values: &[f64]| Grid::grouped_as_read(&indptr, indices, values, 4);
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(ok(&[0, 3, 0, 1, 2], &values));
        // Out of order, repeated, out of range (above and below).
        assert!(!ok(&[3, 0, 0, 1, 2], &values));
        assert!(!ok(&[0, 3, 0, 1, 1], &values));
        assert!(!ok(&[0, 4, 0, 1, 2], &values));
        assert!(!ok(&[-1, 3, 0, 1, 2], &values));
        // Not finite.
        assert!(!ok(&[0, 3, 0, 1, 2], &[1.0, 2.0, f64::NAN, 4.0, 5.0]));
        assert!(!ok(&[0, 3, 0, 1, 2], &[1.0, 2.0, 3.0, f64::INFINITY, 5.0]));
        // Float32 values alike, and widened exactly.
        let narrow = [1.5f32, 2.0, 3.25, 4.0, 1e-7];
        assert!(Grid::grouped_as_read(&indptr, &[0, 3, 0, 1, 2], &narrow, 4));
        assert!(!Grid::grouped_as_read(
            &indptr,
            &[0, 3, 0, 1, 2],
            &[1.0f32, f32::NAN, 3.0, 4.0, 5.0],
            4
        ));
        let wide = widen(&narrow).unwrap();
        assert!(wide.iter().zip(narrow).all(|(&w, n)| w == f64::from(n)));
    }

    /// Entries by cell regrouped by gene on 1 to 3 threads, their values
    /// taken in blocks of several sizes, equal a plain grouping (each gene's
    /// cells ascending), empty genes and cells included.
    #[test]
    fn regrouped_entries_equal_a_plain_grouping() {
        let (cells, genes) = (300usize, 37usize);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for c in 0..cells {
            // Cells 10..20 empty; gene 5 never present.
            for g in 0..genes {
                if !(10..20).contains(&c) && g != 5 && next() % 4 == 0 {
                    indices.push(g as i32);
                    values.push((next() % 1000) as f32 / 7.0);
                }
            }
            indptr.push(indices.len() as i64);
        }
        let mut want: Vec<Vec<(i32, f64)>> = vec![Vec::new(); genes];
        for c in 0..cells {
            for k in indptr[c] as usize..indptr[c + 1] as usize {
                want[indices[k] as usize].push((c as i32, f64::from(values[k])));
            }
        }
        // Blocks of values: one cell at a time, a few cells, all at once.
        for (threads, block) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (1, 50),
            (2, 50),
            (2, 1 << 20),
            (3, 777),
        ] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut asked = Vec::new();
            let (start, got_cells, got_values) = pool
                .install(|| {
                    regroup(&indptr, &indices, genes, block, |range| {
                        asked.push(range.clone());
                        Ok(values[range].to_vec())
                    })
                })
                .unwrap();
            // Whole cells, in order, each block within its size (or one cell).
            assert_eq!(asked.first().map(|r| r.start), Some(0));
            assert_eq!(asked.last().map(|r| r.end), Some(values.len()));
            assert!(asked.windows(2).all(|w| w[0].end == w[1].start));
            assert!(asked.iter().all(|r| indptr.contains(&(r.start as i64))
                && indptr.contains(&(r.end as i64))));
            let one_cell = |r: &Range<usize>| {
                indptr
                    .windows(2)
                    .any(|w| w[0] as usize == r.start && w[1] as usize == r.end)
            };
            assert!(
                asked.iter().all(|r| r.len() <= block || one_cell(r)),
                "block {block}"
            );
            assert_eq!(start.len(), genes + 1);
            for (g, want) in want.iter().enumerate() {
                let range = start[g] as usize..start[g + 1] as usize;
                let got: Vec<(i32, f64)> = got_cells[range.clone()]
                    .iter()
                    .copied()
                    .zip(got_values[range].iter().copied())
                    .collect();
                assert_eq!(&got, want, "gene {g}, {threads} threads, block {block}");
            }
        }
    }
}
