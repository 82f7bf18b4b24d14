//! A MatrixMarket file and its name files as a sparse table's source (a
//! `MatrixFile`): what a plain `.mtx` file (`mtx_source.rs`) and a 10x
//! directory (`tenx.rs`) both are. The files are read by `mtx.rs`.
//!
//! The file's rows are genes and its columns cells, or the other way round
//! ([`Orientation`]). The genes' names come from a name file (one per
//! line, the first tab-separated field), in its order; the cells' from a
//! second one, or, without one, are the column (row) positions, from 1:
//! `"1"`, `"2"`, ... — so that two matrices without cell names pair their
//! cells by position. A gene or cell without any entry (all zeros) is kept.
//!
//! The header, the size line and the lengths of the name files are checked
//! when the table is made; the entries are read when a query reads the
//! table, grouped by gene as long triples are (`SparseValues::group_runs`,
//! reading the parsed blocks where they are). An entry given twice or a
//! name repeated is an error naming the file.

use std::path::PathBuf;

use datafusion::error::Result;
use rayon::prelude::*;

use super::mtx::{self, Coordinates, error, file_name};
use crate::input::sparse::{RepeatedSample, RunValues, SparseValues, Triples, Zeros};
use crate::input::sparse_table::{FileEntries, MatrixFile, SparseTable};
use crate::memory::QueryMemory;

crate::option_enum::option_enum! {
    /// What the rows of a MatrixMarket file are (`STORED AS MTX` option
    /// `orientation`).
    pub enum Orientation: "orientation" {
        /// Rows are genes (features, peaks), columns cells: scE2G, GEO and
        /// 10x write this (the default).
        #[default]
        GenesByCells = "genes_by_cells",
        /// Rows are cells, columns genes (AnnData's `X`).
        CellsByGenes = "cells_by_genes",
    }
}

/// A MatrixMarket file, its name files and its orientation.
#[derive(Debug, Clone)]
pub struct MatrixFiles {
    /// How messages name the source: `mtx file 'x.mtx'`,
    /// `10x directory 'x/'`.
    pub label: String,
    /// The MatrixMarket file (plain or `.gz`).
    pub matrix: PathBuf,
    /// The name file of its rows, if any.
    pub rows: Option<PathBuf>,
    /// The name file of its columns, if any.
    pub columns: Option<PathBuf>,
    /// What its rows are.
    pub orientation: Orientation,
}

/// The ids of the genes and cells, and the matrix file opened at its
/// first entry.
struct Opened {
    file: mtx::Opened,
    genes: Vec<String>,
    cells: Vec<String>,
}

impl MatrixFiles {
    /// The sparse table over the files, their shape checked now (the
    /// header, the size line and the name files' lengths); its entries are
    /// read each time a query reads it.
    pub fn table(self) -> Result<SparseTable> {
        let opened = self.open()?;
        let shape = (
            opened.genes.len(),
            opened.cells.len(),
            opened.file.header.max_entries(),
        );
        Ok(SparseTable::from_file(Box::new(CheckedFiles {
            files: self,
            shape,
        })))
    }

    /// Whether the file's rows are cells.
    fn transposed(&self) -> bool {
        self.orientation == Orientation::CellsByGenes
    }

    /// Opens the matrix file and reads the names, checking their numbers
    /// against its size line.
    fn open(&self) -> Result<Opened> {
        let roles = if self.transposed() {
            ("cells", "genes")
        } else {
            ("genes", "cells")
        };
        let file = mtx::open(&self.matrix, roles)?;
        let header = file.header;
        let matrix = file_name(&self.matrix);
        let mut names = Vec::with_capacity(2);
        for (path, want, what) in [
            (&self.rows, header.rows, "rows"),
            (&self.columns, header.cols, "columns"),
        ] {
            let Some(path) = path else {
                names.push((1..=want).map(|i| i.to_string()).collect());
                continue;
            };
            let ids = mtx::names(path)?;
            if ids.len() != want {
                return Err(error(format!(
                    "{} has {} lines, but {matrix} (line {}) has {want} {what}",
                    file_name(path),
                    ids.len(),
                    header.size_line
                )));
            }
            names.push(ids);
        }
        let mut cols = names.pop().unwrap_or_default();
        let mut rows = names.pop().unwrap_or_default();
        if self.transposed() {
            std::mem::swap(&mut rows, &mut cols);
        }
        Ok(Opened {
            file,
            genes: rows,
            cells: cols,
        })
    }

    /// An error when a name file names an id twice.
    fn check_unique(&self, opened: &Opened) -> Result<()> {
        let (gene_file, cell_file) = if self.transposed() {
            (&self.columns, &self.rows)
        } else {
            (&self.rows, &self.columns)
        };
        for (ids, file) in [(&opened.genes, gene_file), (&opened.cells, cell_file)] {
            let Some(file) = file else { continue };
            let mut seen = std::collections::HashSet::with_capacity(ids.len());
            if let Some(id) = ids.iter().find(|id| !seen.insert(id.as_str())) {
                return Err(error(format!(
                    "{} names '{id}' twice ({})",
                    file_name(file),
                    self.label
                )));
            }
        }
        Ok(())
    }
}

/// Matrix files, their shape checked: a sparse table's `MatrixFile`.
#[derive(Debug)]
struct CheckedFiles {
    files: MatrixFiles,
    /// Genes, cells and entries (at most), as the files said when checked.
    shape: (usize, usize, usize),
}

/// Bytes a `String` id takes besides its text (its `String` and the
/// allocation's rounding and header).
const ID_BYTES: usize = 48;

impl MatrixFile for CheckedFiles {
    fn name(&self) -> String {
        self.files.label.clone()
    }

    fn describe(&self) -> String {
        format!(
            "{}, matrix={}",
            self.files.label,
            file_name(&self.files.matrix)
        )
    }

    fn shape(&self) -> (usize, usize, usize) {
        self.shape
    }

    /// The files read again (as every source is when loaded), ids checked
    /// unique, the entries parsed (at most 16 bytes each) and grouped by gene
    /// straight into the stored entries (12 bytes each): at the peak both
    /// are held. An entry given twice is an error naming it.
    fn read(&self, memory: &QueryMemory, zeros: Zeros) -> Result<FileEntries> {
        let files = &self.files;
        let opened = files.open()?;
        files.check_unique(&opened)?;
        let Opened { file, genes, cells } = opened;
        let header = file.header;
        let (m, n) = (genes.len(), cells.len());
        let name = file_name(&files.matrix);
        let id_bytes = genes
            .iter()
            .chain(&cells)
            .map(|id| id.len() + ID_BYTES)
            .sum::<usize>();
        let mut read_memory = memory.reserve(
            &format!(
                "entries of {name} ({} values of {m} genes x {n} cells, as read)",
                header.max_entries()
            ),
            id_bytes,
        )?;
        let mut read = file.entries(&files.matrix, &mut read_memory)?;
        if files.transposed() {
            read.runs
                .par_iter_mut()
                .flat_map(|run| run.cells.par_iter_mut())
                .for_each(|(r, c)| (*r, *c) = (*c, *r));
        }
        let mut stored_memory =
            memory.reserve(&format!("non-zero values ({m} genes x {n} cells)"), 0)?;
        let runs: Vec<Triples> = read
            .runs
            .iter()
            .map(|run| Triples {
                cells: &run.cells,
                values: match &run.values {
                    mtx::Values::Each(values) => RunValues::Each(values),
                    mtx::Values::All(value) => RunValues::All(*value),
                },
                residuals: &[],
            })
            .collect();
        let grouped = SparseValues::group_runs((m, n), &runs, zeros, &mut stored_memory)?;
        drop(runs);
        let stored = grouped.map_err(|RepeatedSample { gene }| {
            let cell = repeated_cell(&read, gene);
            error(format!(
                "{name} gives gene '{}', cell '{}' twice ({})",
                genes[gene as usize], cells[cell as usize], files.label
            ))
        })?;
        // The entries as read (at most 16 bytes each) are given back, to
        // the system too (their blocks would stay resident in the
        // allocator's arenas).
        drop((read, read_memory));
        crate::memory::give_back_freed();
        stored_memory.try_grow(id_bytes)?;
        Ok(FileEntries {
            genes,
            samples: cells,
            stored,
            memory: stored_memory,
        })
    }
}

/// A cell that `gene` has two entries for in `read` (it has one).
fn repeated_cell(read: &Coordinates, gene: u32) -> u32 {
    let mut cells: Vec<u32> = read
        .cells()
        .filter(|&(g, _)| g == gene)
        .map(|(_, c)| c)
        .collect();
    cells.sort_unstable();
    cells.windows(2).find(|w| w[0] == w[1]).map_or(0, |w| w[0])
}
