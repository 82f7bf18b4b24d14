//! How a partition walks its pairs: the blocks it hands to the kernel.
//!
//! All pairs: the partition's contiguous range of tile ids, each tile in
//! blocks of [`BLOCK_ROWS`] rows × up to `block_cols` columns, rows without
//! ties first (so the bitset kernel's tie-free path covers every pair it
//! can). Gene-targeted queries: only the pairs that touch the anchor genes
//! of a pushed-down gene filter, split over partitions by pair count.

use std::ops::Range;

use crate::gene_filter::Side;
use crate::input::RankedMatrix;
use crate::tiles::TileGrid;

/// Rows computed per kernel call (the bitset kernel's register block).
pub const BLOCK_ROWS: usize = 4;

/// The pairs of the whole query, split into partitions.
#[derive(Debug)]
pub enum WorkSplit {
    /// Every pair, by tiles: a contiguous tile-id range per partition.
    Tiles {
        /// The tiled upper triangle.
        grid: TileGrid,
        /// Tile ids of each partition.
        ranges: Vec<Range<u64>>,
    },
    /// Only pairs touching anchor genes.
    Anchors {
        /// Per partition, the anchors it computes: `(g, I)` stands for the
        /// pairs `(g, j)`, `j > g`; `(g, J)` for the pairs `(i, g)`, `i < g`,
        /// whose `i` is not itself an `I` anchor (those are already counted).
        parts: Vec<Vec<(u32, Side)>>,
        /// Genes that are `I` anchors.
        anchor_i: Vec<bool>,
    },
}

impl WorkSplit {
    /// All pairs of `genes` genes in tiles of `tile_size`, over `partitions`.
    pub fn tiles(genes: usize, tile_size: usize, partitions: usize) -> Self {
        let grid = TileGrid::new(genes, tile_size);
        let ranges = grid.balanced_ranges(partitions);
        WorkSplit::Tiles { grid, ranges }
    }

    /// The pairs touching `anchor_i` as `gene_i` or `anchor_j` as `gene_j`
    /// (gene positions), split contiguously over `partitions` by pair count.
    pub fn anchors(genes: usize, anchor_i: &[u32], anchor_j: &[u32], partitions: usize) -> Self {
        let mut is_i = vec![false; genes];
        for &g in anchor_i {
            is_i[g as usize] = true;
        }
        let mut items: Vec<((u32, Side), u64)> = Vec::new();
        for &g in anchor_i {
            items.push(((g, Side::I), (genes - 1 - g as usize) as u64));
        }
        for &g in anchor_j {
            let before = is_i[..g as usize].iter().filter(|&&x| !x).count();
            items.push(((g, Side::J), before as u64));
        }
        let total: u64 = items.iter().map(|(_, p)| p).sum();
        let partitions = partitions.max(1);
        let mut parts: Vec<Vec<(u32, Side)>> = vec![Vec::new(); partitions];
        let mut done = 0u64;
        for (item, pairs) in items {
            // The partition whose share of the pair count this item starts in.
            let p = ((u128::from(done) * partitions as u128) / u128::from(total.max(1))) as usize;
            parts[p.min(partitions - 1)].push(item);
            done += pairs;
        }
        WorkSplit::Anchors {
            parts,
            anchor_i: is_i,
        }
    }

    /// Pairs over all partitions (for progress displays).
    pub fn total_pairs(&self) -> u64 {
        match self {
            WorkSplit::Tiles { grid, .. } => grid.total_pairs(),
            WorkSplit::Anchors { parts, anchor_i } => {
                let genes = anchor_i.len();
                parts
                    .iter()
                    .flatten()
                    .map(|&(g, side)| match side {
                        Side::I => (genes - 1 - g as usize) as u64,
                        Side::J => anchor_i[..g as usize].iter().filter(|&&x| !x).count() as u64,
                    })
                    .sum()
            }
        }
    }

    /// A cursor over partition `p`'s pairs, in blocks of up to `block_cols` columns.
    pub fn cursor(&self, p: usize, block_cols: usize) -> PairCursor {
        let walk = match self {
            WorkSplit::Tiles { ranges, .. } => Walk::Tiles {
                tiles: ranges[p].clone(),
                cols: 0..0,
                group: 0,
            },
            WorkSplit::Anchors { parts, .. } => Walk::Anchors {
                items: parts[p].clone(),
                item: 0,
            },
        };
        PairCursor {
            walk,
            rows: Vec::new(),
            next: 0,
            block_cols: block_cols.max(1),
        }
    }
}

#[derive(Debug)]
enum Walk {
    Tiles {
        tiles: Range<u64>,
        cols: Range<usize>,
        /// Start of the current row group in `rows`.
        group: usize,
    },
    Anchors {
        items: Vec<(u32, Side)>,
        item: usize,
    },
}

/// Walks one partition's pairs block by block.
#[derive(Debug)]
pub struct PairCursor {
    walk: Walk,
    /// Row genes of the current tile (tiles) or block (anchors).
    rows: Vec<u32>,
    /// Next column (tiles, `I` anchors) or row (`J` anchors) to visit.
    next: usize,
    block_cols: usize,
}

impl PairCursor {
    /// The next block: rows (positions in [`PairCursor::rows`]) and columns,
    /// or `None` when the partition is done. Every pair `(i, j)` of a block
    /// with `j > i` belongs to the partition, exactly once over all blocks.
    pub fn next_block(
        &mut self,
        split: &WorkSplit,
        m: &RankedMatrix,
    ) -> Option<(Range<usize>, Range<usize>)> {
        match (&mut self.walk, split) {
            (Walk::Tiles { tiles, cols, group }, WorkSplit::Tiles { grid, .. }) => loop {
                if *group < self.rows.len() {
                    let rows = *group..(*group + BLOCK_ROWS).min(self.rows.len());
                    // Diagonal tiles hold only j > i: skip columns no row needs.
                    let lowest = self.rows[rows.clone()]
                        .iter()
                        .min()
                        .map_or(0, |&i| i as usize);
                    let start = self.next.max(cols.start).max(lowest + 1);
                    if start < cols.end {
                        let block = start..(start + self.block_cols).min(cols.end);
                        self.next = block.end;
                        return Some((rows, block));
                    }
                    *group = rows.end;
                    self.next = 0;
                    continue;
                }
                let tile = tiles.next()?;
                let tile_rows = grid.rows(tile);
                self.rows.clear();
                self.rows
                    .extend(tile_rows.clone().filter(|&i| m.untied(i)).map(|i| i as u32));
                self.rows
                    .extend(tile_rows.filter(|&i| !m.untied(i)).map(|i| i as u32));
                *cols = grid.cols(tile);
                *group = 0;
                self.next = 0;
            },
            (Walk::Anchors { items, item }, WorkSplit::Anchors { anchor_i, .. }) => loop {
                let &(g, side) = items.get(*item)?;
                let g = g as usize;
                match side {
                    Side::I => {
                        let start = self.next.max(g + 1);
                        if start < m.genes() {
                            let block = start..(start + self.block_cols).min(m.genes());
                            self.next = block.end;
                            self.rows.clear();
                            self.rows.push(g as u32);
                            return Some((0..1, block));
                        }
                    }
                    Side::J => {
                        self.rows.clear();
                        while self.next < g && self.rows.len() < self.block_cols {
                            if !anchor_i[self.next] {
                                self.rows.push(self.next as u32);
                            }
                            self.next += 1;
                        }
                        if !self.rows.is_empty() {
                            return Some((0..self.rows.len(), g..g + 1));
                        }
                    }
                }
                *item += 1;
                self.next = 0;
            },
            _ => None,
        }
    }

    /// Row genes, indexed by the ranges [`PairCursor::next_block`] returns.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn visit(split: &WorkSplit, m: &RankedMatrix, parts: usize) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        for p in 0..parts {
            let mut c = split.cursor(p, 3);
            while let Some((rows, cols)) = c.next_block(split, m) {
                for &i in &c.rows()[rows] {
                    for j in cols.clone() {
                        if j > i as usize {
                            pairs.push((i, j as u32));
                        }
                    }
                }
            }
        }
        pairs
    }

    #[test]
    fn tiles_visit_every_pair_once() {
        let values: Vec<f64> = (0..11 * 3).map(|k| (k % 5) as f64).collect();
        let m = RankedMatrix::from_values(11, 3, &values);
        for (tile, parts) in [(1, 1), (3, 2), (4, 5), (20, 3)] {
            let split = WorkSplit::tiles(11, tile, parts);
            let mut pairs = visit(&split, &m, parts);
            pairs.sort();
            let all: Vec<(u32, u32)> = (0..11)
                .flat_map(|i| (i + 1..11).map(move |j| (i, j)))
                .collect();
            assert_eq!(pairs, all, "tile {tile}, parts {parts}");
        }
    }

    #[test]
    fn anchors_visit_exactly_the_touching_pairs() {
        let m = RankedMatrix::from_values(9, 2, &[0.0; 18]);
        for (ai, aj) in [
            (vec![2u32], vec![2u32]),
            (vec![0, 8], vec![5]),
            (vec![], vec![3, 8]),
        ] {
            for parts in [1, 2, 4] {
                let split = WorkSplit::anchors(9, &ai, &aj, parts);
                let pairs = visit(&split, &m, parts);
                let unique: BTreeSet<_> = pairs.iter().copied().collect();
                assert_eq!(unique.len(), pairs.len(), "duplicates");
                let expected: BTreeSet<(u32, u32)> = (0..9)
                    .flat_map(|i| (i + 1..9).map(move |j| (i, j)))
                    .filter(|(i, j)| ai.contains(i) || aj.contains(j))
                    .collect();
                assert_eq!(unique, expected, "{ai:?} {aj:?} parts {parts}");
            }
        }
    }
}
