//! How a partition walks its pairs: the blocks it hands to the kernel.
//!
//! All pairs: the partition's contiguous range of tile ids, each tile in
//! blocks of up to [`BLOCK_ROWS`] rows × columns, rows without ties first (so
//! the bitset kernel's tie-free path covers every pair it can). Gene-targeted
//! queries (all or cross pairs): only the pairs that touch the anchor genes
//! of a pushed-down gene filter, cut into runs so that every partition gets
//! the same number of pairs (within one). Candidate lists: the listed pairs, sorted by their
//! first gene, a contiguous run of them per partition, in blocks of one
//! first gene against its listed partners. The caller sizes each block by the pairs it may take
//! (see `exec`'s pacing), so one block never holds a poll for long.

use std::ops::Range;
use std::sync::Arc;

use crate::gene_filter::Side;
use crate::input::ListedPairs;
use crate::kernel::{PairKernel, PairNumerator};
use crate::rank::RankedMatrix;
use crate::tiles::TileGrid;

/// Rows computed per kernel call at most (the bitset kernel's register block).
pub const BLOCK_ROWS: usize = 4;

/// Columns of one block at most.
pub const MAX_BLOCK_COLS: usize = 1024;

/// Pairs of one block at most.
pub const MAX_BLOCK_PAIRS: usize = BLOCK_ROWS * MAX_BLOCK_COLS;

/// A run of a gene-targeted query's pairs: `(gene, j)` for `j` in `span`
/// (`I` side, all `j > gene`), or `(i, gene)` for the `i` in `span` that are
/// not themselves `I` anchors (`J` side, all `i < gene`; the others are
/// counted by their `I` run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnchorRun {
    /// The anchor gene.
    pub gene: u32,
    /// Whether `gene` is the pair's `gene_i` or `gene_j`.
    pub side: Side,
    /// First partner position.
    pub start: u32,
    /// One past the last partner position.
    pub end: u32,
}

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
    /// Every pair of a left gene (positions `0..left`) with a right gene
    /// (`left..left + right`), numbered `t = i·right + (j − left)`: a
    /// contiguous range of those numbers per partition.
    Cross {
        /// Left genes.
        left: usize,
        /// Right genes.
        right: usize,
        /// Pair numbers of each partition.
        ranges: Vec<Range<u64>>,
    },
    /// The pairs of a candidate list: a contiguous range of them per
    /// partition.
    Listed {
        /// The pairs.
        pairs: Arc<ListedPairs>,
        /// Positions in `pairs` of each partition.
        ranges: Vec<Range<usize>>,
        /// Each listed pair's numerator, when an earlier pass over the
        /// list (the q-values' counting pass) kept them: read, not
        /// computed again.
        numerators: Option<Arc<Vec<i32>>>,
    },
    /// Only pairs touching anchor genes.
    Anchors {
        /// Per partition, the runs it computes.
        parts: Vec<Vec<AnchorRun>>,
        /// Genes that are `I` anchors.
        anchor_i: Vec<bool>,
        /// `free_before[k]`: genes in `0..k` that are not `I` anchors.
        free_before: Vec<u32>,
        /// Pairs over all partitions.
        total: u64,
    },
}

/// The runs of pairs touching anchor genes, before they are split (see
/// [`WorkSplit::anchors`]).
struct AnchorWalk {
    /// Genes that are `I` anchors.
    is_i: Vec<bool>,
    /// `free_before[k]`: genes in `0..k` that are not `I` anchors.
    free_before: Vec<u32>,
    /// An anchor's partners each, none empty.
    runs: Vec<AnchorRun>,
    /// Pairs over all runs.
    total: u64,
}

impl AnchorWalk {
    fn new(genes: usize, anchor_i: &[u32], anchor_j: &[u32], cross: Option<usize>) -> Self {
        debug_assert!(cross.is_none_or(|left| {
            anchor_i.iter().all(|&g| (g as usize) < left)
                && anchor_j.iter().all(|&g| (g as usize) >= left)
        }));
        let mut is_i = vec![false; genes];
        for &g in anchor_i {
            is_i[g as usize] = true;
        }
        let mut free_before = Vec::with_capacity(genes + 1);
        free_before.push(0u32);
        for &x in &is_i {
            free_before.push(free_before.last().unwrap() + u32::from(!x));
        }
        // An `I` anchor's partners: the genes after it (the right genes of
        // cross pairs); a `J` anchor's: those before it (the left genes).
        let runs = anchor_i
            .iter()
            .map(|&g| AnchorRun {
                gene: g,
                side: Side::I,
                start: cross.map_or(g + 1, |left| left as u32),
                end: genes as u32,
            })
            .chain(anchor_j.iter().map(|&g| AnchorRun {
                gene: g,
                side: Side::J,
                start: 0,
                end: cross.map_or(g, |left| left as u32),
            }));
        let runs: Vec<AnchorRun> = runs.filter(|r| run_pairs(r, &free_before) > 0).collect();
        let total = runs.iter().map(|r| run_pairs(r, &free_before)).sum();
        AnchorWalk {
            is_i,
            free_before,
            runs,
            total,
        }
    }
}

/// The pairs of a run: an `I` anchor's partners after `start`, a `J`
/// anchor's that are not `I` anchors (their pairs are theirs).
fn run_pairs(r: &AnchorRun, free_before: &[u32]) -> u64 {
    match r.side {
        Side::I => u64::from(r.end.saturating_sub(r.start)),
        Side::J => u64::from(free_before[r.end as usize] - free_before[r.start as usize]),
    }
}

impl WorkSplit {
    /// All pairs of `genes` genes in tiles of `tile_size`, over `partitions`.
    pub fn tiles(genes: usize, tile_size: usize, partitions: usize) -> Self {
        let grid = TileGrid::new(genes, tile_size);
        let ranges = grid.balanced_ranges(partitions);
        WorkSplit::Tiles { grid, ranges }
    }

    /// The pairs touching `anchor_i` as `gene_i` or `anchor_j` as `gene_j`
    /// (gene positions): partition `p` of `P` gets the pairs
    /// `[T·p/P, T·(p+1)/P)` of the `T` in order, an anchor's pairs cut
    /// into runs where a share ends. The pairs are those of the upper
    /// triangle, or with `cross = Some(left)` those of the left genes
    /// `0..left` with the right genes `left..genes` (then `anchor_i` must
    /// be left genes and `anchor_j` right ones).
    pub fn anchors(
        genes: usize,
        anchor_i: &[u32],
        anchor_j: &[u32],
        cross: Option<usize>,
        partitions: usize,
    ) -> Self {
        let AnchorWalk {
            is_i,
            free_before,
            runs,
            total,
        } = AnchorWalk::new(genes, anchor_i, anchor_j, cross);
        let pairs_of = |r: &AnchorRun| run_pairs(r, &free_before);
        let partitions = partitions.max(1);
        // Where partition p's share starts.
        let bound = |p: usize| ((u128::from(total) * p as u128) / partitions as u128) as u64;
        let mut parts: Vec<Vec<AnchorRun>> = vec![Vec::new(); partitions];
        let (mut p, mut done) = (0usize, 0u64);
        for mut run in runs {
            let mut left = pairs_of(&run);
            while left > 0 {
                while p + 1 < partitions && bound(p + 1) <= done {
                    p += 1;
                }
                let take = if p + 1 == partitions {
                    left
                } else {
                    left.min(bound(p + 1) - done)
                };
                // The position after the first `take` pairs of the run.
                let cut = match run.side {
                    Side::I => run.start + take as u32,
                    Side::J => {
                        let target = free_before[run.start as usize] + take as u32;
                        free_before.partition_point(|&x| x < target) as u32
                    }
                };
                parts[p].push(AnchorRun { end: cut, ..run });
                run.start = cut;
                left -= take;
                done += take;
            }
        }
        WorkSplit::Anchors {
            parts,
            anchor_i: is_i,
            free_before,
            total,
        }
    }

    /// How many pairs [`WorkSplit::anchors`] walks for these anchors (each
    /// once).
    pub fn anchor_pairs(
        genes: usize,
        anchor_i: &[u32],
        anchor_j: &[u32],
        cross: Option<usize>,
    ) -> u64 {
        AnchorWalk::new(genes, anchor_i, anchor_j, cross).total
    }

    /// The `left × right` pairs of two gene sets stacked left first, split
    /// into `partitions` ranges of equal pair counts (within one).
    pub fn cross(left: usize, right: usize, partitions: usize) -> Self {
        let total = left as u64 * right as u64;
        let partitions = partitions.max(1) as u64;
        let bound = |p: u64| ((u128::from(total) * u128::from(p)) / u128::from(partitions)) as u64;
        let ranges = (0..partitions).map(|p| bound(p)..bound(p + 1)).collect();
        WorkSplit::Cross {
            left,
            right,
            ranges,
        }
    }

    /// The listed `pairs`, split into `partitions` runs of equal pair
    /// counts (within one).
    pub fn listed(pairs: Arc<ListedPairs>, partitions: usize) -> Self {
        let (total, partitions) = (pairs.len(), partitions.max(1));
        let bound = |p: usize| ((total as u128 * p as u128) / partitions as u128) as usize;
        let ranges = (0..partitions).map(|p| bound(p)..bound(p + 1)).collect();
        WorkSplit::Listed {
            pairs,
            ranges,
            numerators: None,
        }
    }

    /// This split, with the numerators of its listed pairs already known
    /// (`numerators[k]` of pair `k`): the cursors read them instead of
    /// computing them. No change to other splits, or if the count differs.
    pub fn with_numerators(mut self, known: Arc<Vec<i32>>) -> Self {
        if let WorkSplit::Listed {
            pairs, numerators, ..
        } = &mut self
            && known.len() == pairs.len()
        {
            *numerators = Some(known);
        }
        self
    }

    /// The positions in the candidate list of each partition's pairs (a
    /// listed split only).
    pub fn listed_ranges(&self) -> Option<&[Range<usize>]> {
        match self {
            WorkSplit::Listed { ranges, .. } => Some(ranges),
            _ => None,
        }
    }

    /// Pairs over all partitions (for progress displays).
    pub fn total_pairs(&self) -> u64 {
        match self {
            WorkSplit::Listed { pairs, .. } => pairs.len() as u64,
            WorkSplit::Tiles { grid, .. } => grid.total_pairs(),
            WorkSplit::Cross { left, right, .. } => *left as u64 * *right as u64,
            WorkSplit::Anchors { total, .. } => *total,
        }
    }

    /// A cursor over partition `p`'s pairs.
    pub fn cursor(&self, p: usize) -> PairCursor {
        let walk = match self {
            WorkSplit::Tiles { ranges, .. } => Walk::Tiles {
                tiles: ranges[p].clone(),
                cols: 0..0,
                group: 0..0,
            },
            WorkSplit::Cross { ranges, .. } => Walk::Cross {
                pairs: ranges[p].clone(),
            },
            WorkSplit::Listed { ranges, .. } => Walk::Listed {
                pairs: ranges[p].clone(),
            },
            WorkSplit::Anchors { parts, .. } => Walk::Anchors {
                runs: parts[p].clone(),
                run: 0,
            },
        };
        PairCursor {
            walk,
            rows: Vec::new(),
            next: 0,
            listed_start: None,
        }
    }
}

#[derive(Debug)]
enum Walk {
    Tiles {
        tiles: Range<u64>,
        cols: Range<usize>,
        /// The current row group (positions in `rows`).
        group: Range<usize>,
    },
    Anchors {
        runs: Vec<AnchorRun>,
        run: usize,
    },
    Cross {
        /// Pair numbers still to visit.
        pairs: Range<u64>,
    },
    Listed {
        /// Positions of listed pairs still to visit.
        pairs: Range<usize>,
    },
}

/// Walks one partition's pairs block by block.
#[derive(Debug)]
pub struct PairCursor {
    walk: Walk,
    /// Row genes of the current tile (tiles) or block (anchors).
    rows: Vec<u32>,
    /// Next column (tiles, `I` runs) or row (`J` runs) to visit.
    next: usize,
    /// Position in the candidate list of the last block's first pair.
    listed_start: Option<usize>,
}

impl PairCursor {
    /// Computes the numerators of the next block of at most `max_pairs`
    /// pairs with `kernel`, appended to `out`; `false` when the partition
    /// is done. Listed pairs come as one first gene against a run of its
    /// partners; the other walks as [`PairCursor::next_block`]'s blocks.
    pub fn compute_next(
        &mut self,
        split: &WorkSplit,
        m: &RankedMatrix,
        max_pairs: usize,
        kernel: &mut PairKernel,
        out: &mut Vec<PairNumerator>,
    ) -> bool {
        if let (
            Walk::Listed { pairs },
            WorkSplit::Listed {
                pairs: list,
                numerators,
                ..
            },
        ) = (&mut self.walk, split)
        {
            if Range::is_empty(pairs) {
                return false;
            }
            let start = pairs.start;
            let first = list.first[start];
            let most = (start + max_pairs.clamp(1, MAX_BLOCK_PAIRS)).min(pairs.end);
            let end = start + list.first[start..most].partition_point(|&g| g == first);
            match numerators {
                Some(known) => {
                    out.extend(list.second[start..end].iter().zip(&known[start..end]).map(
                        |(&j, &s)| PairNumerator {
                            i: first,
                            j,
                            s: i64::from(s),
                        },
                    ))
                }
                None => kernel.listed(m, first, &list.second[start..end], out),
            }
            pairs.start = end;
            self.listed_start = Some(start);
            return true;
        }
        match self.next_block(split, m, max_pairs) {
            Some((rows, cols)) => {
                kernel.block(m, &self.rows[rows], cols, out);
                true
            }
            None => false,
        }
    }

    /// The next block of at most `max_pairs` pairs (at least one row and one
    /// column; a tile's row group is sized when it starts): rows (positions
    /// in [`PairCursor::rows`]) and columns, or `None` when the partition is
    /// done. Every pair `(i, j)` of a block with `j > i` belongs to the
    /// partition, exactly once over all blocks.
    pub fn next_block(
        &mut self,
        split: &WorkSplit,
        m: &RankedMatrix,
        max_pairs: usize,
    ) -> Option<(Range<usize>, Range<usize>)> {
        let max_pairs = max_pairs.clamp(1, MAX_BLOCK_PAIRS);
        match (&mut self.walk, split) {
            (Walk::Tiles { tiles, cols, group }, WorkSplit::Tiles { grid, .. }) => loop {
                if Range::is_empty(group) && group.end < self.rows.len() {
                    // A new row group, as tall as the block size allows.
                    let height = max_pairs.min(BLOCK_ROWS);
                    *group = group.end..(group.end + height).min(self.rows.len());
                    self.next = 0;
                }
                if !Range::is_empty(group) {
                    let rows = group.clone();
                    // Diagonal tiles hold only j > i: skip columns no row needs.
                    let lowest = self.rows[rows.clone()]
                        .iter()
                        .min()
                        .map_or(0, |&i| i as usize);
                    let start = self.next.max(cols.start).max(lowest + 1);
                    if start < cols.end {
                        let width = (max_pairs / rows.len()).clamp(1, MAX_BLOCK_COLS);
                        let block = start..(start + width).min(cols.end);
                        self.next = block.end;
                        return Some((rows, block));
                    }
                    *group = rows.end..rows.end;
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
                *group = 0..0;
                self.next = 0;
            },
            (Walk::Cross { pairs }, WorkSplit::Cross { left, right, .. }) => {
                if pairs.is_empty() {
                    return None;
                }
                // One left gene against a run of right genes.
                let right = *right as u64;
                let (i, c) = (pairs.start / right, pairs.start % right);
                let take = (max_pairs as u64)
                    .min(right - c)
                    .min(pairs.end - pairs.start);
                pairs.start += take;
                self.rows.clear();
                self.rows.push(i as u32);
                let first = *left + c as usize;
                Some((0..1, first..first + take as usize))
            }
            (Walk::Anchors { runs, run }, WorkSplit::Anchors { anchor_i, .. }) => loop {
                let r = *runs.get(*run)?;
                let (g, start, end) = (r.gene as usize, r.start as usize, r.end as usize);
                let from = self.next.max(start);
                match r.side {
                    Side::I => {
                        if from < end {
                            let block = from..(from + max_pairs).min(end);
                            self.next = block.end;
                            self.rows.clear();
                            self.rows.push(g as u32);
                            return Some((0..1, block));
                        }
                    }
                    Side::J => {
                        self.rows.clear();
                        self.next = from;
                        while self.next < end && self.rows.len() < max_pairs {
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
                *run += 1;
                self.next = 0;
            },
            _ => None,
        }
    }

    /// The position in the candidate list of the first pair of the last
    /// block [`PairCursor::compute_next`] computed (`None` for other walks):
    /// a listed pair's place, for what is kept per listed pair.
    pub fn listed_start(&self) -> Option<usize> {
        self.listed_start
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

    /// The pairs of each partition, in blocks of a size cycling through
    /// 1, 2, 3, 5, 8 and 13 pairs.
    fn visit_parts(split: &WorkSplit, m: &RankedMatrix, parts: usize) -> Vec<Vec<(u32, u32)>> {
        let sizes = [1usize, 2, 3, 5, 8, 13];
        (0..parts)
            .map(|p| {
                let mut pairs = Vec::new();
                let mut c = split.cursor(p);
                let mut k = 0;
                while let Some((rows, cols)) = c.next_block(split, m, sizes[k % sizes.len()]) {
                    // A tile's row group is set when it starts: a later,
                    // smaller size still gets one column of each row.
                    let most = sizes[k % sizes.len()].max(BLOCK_ROWS);
                    k += 1;
                    assert!(!rows.is_empty() && !cols.is_empty());
                    assert!(rows.len() * cols.len() <= most);
                    for &i in &c.rows()[rows] {
                        for j in cols.clone() {
                            if j > i as usize {
                                pairs.push((i, j as u32));
                            }
                        }
                    }
                }
                pairs
            })
            .collect()
    }

    fn visit(split: &WorkSplit, m: &RankedMatrix, parts: usize) -> Vec<(u32, u32)> {
        visit_parts(split, m, parts).concat()
    }

    #[test]
    fn cross_visits_every_left_right_pair_once_balanced() {
        let (left, right) = (9usize, 5usize);
        let values: Vec<f64> = (0..(left + right) * 3).map(|k| (k % 5) as f64).collect();
        let m = RankedMatrix::from_values(left + right, 3, &values);
        for parts in [1, 2, 3, 4, 7, 50] {
            let split = WorkSplit::cross(left, right, parts);
            let visited = visit_parts(&split, &m, parts);
            let sizes: Vec<usize> = visited.iter().map(Vec::len).collect();
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "parts {parts}: {sizes:?}");
            let mut pairs = visited.concat();
            pairs.sort();
            let all: Vec<(u32, u32)> = (0..left as u32)
                .flat_map(|i| (left as u32..(left + right) as u32).map(move |j| (i, j)))
                .collect();
            assert_eq!(pairs, all, "parts {parts}");
            assert_eq!(split.total_pairs(), (left * right) as u64);
        }
    }

    #[test]
    fn listed_pairs_are_visited_once_in_runs_of_one_first_gene() {
        let values: Vec<f64> = (0..8 * 3).map(|k| (k % 5) as f64).collect();
        let m = RankedMatrix::from_values(8, 3, &values);
        let mut kernel = PairKernel::new(
            crate::kernel::KernelKind::Naive,
            3,
            crate::kernel::isa::Isa::Scalar,
            None,
        )
        .unwrap();
        let pairs = ListedPairs {
            first: vec![0, 0, 0, 2, 5, 5, 7],
            second: vec![1, 3, 6, 1, 0, 4, 2],
            lines: Vec::new(),
        };
        let listed: Vec<(u32, u32)> = pairs
            .first
            .iter()
            .copied()
            .zip(pairs.second.iter().copied())
            .collect();
        for parts in [1usize, 2, 3, 7, 10] {
            let split = WorkSplit::listed(Arc::new(pairs.clone()), parts);
            assert_eq!(split.total_pairs(), 7);
            let mut seen = Vec::new();
            let mut sizes = Vec::new();
            for p in 0..parts {
                let mut cursor = split.cursor(p);
                let mut out = Vec::new();
                let mut got = 0;
                while cursor.compute_next(&split, &m, 2, &mut kernel, &mut out) {
                    // A block: one first gene, at most 2 pairs.
                    let block = &out[got..];
                    assert!(!block.is_empty() && block.len() <= 2, "{block:?}");
                    assert!(block.iter().all(|q| q.i == block[0].i));
                    got = out.len();
                }
                sizes.push(out.len());
                seen.extend(out.iter().map(|q| (q.i, q.j)));
            }
            assert_eq!(seen, listed, "parts {parts}");
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "parts {parts}: {sizes:?}");
        }
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
                let split = WorkSplit::anchors(9, &ai, &aj, None, parts);
                let pairs = visit(&split, &m, parts);
                let unique: BTreeSet<_> = pairs.iter().copied().collect();
                assert_eq!(unique.len(), pairs.len(), "duplicates");
                let expected: BTreeSet<(u32, u32)> = (0..9)
                    .flat_map(|i| (i + 1..9).map(move |j| (i, j)))
                    .filter(|(i, j)| ai.contains(i) || aj.contains(j))
                    .collect();
                assert_eq!(unique, expected, "{ai:?} {aj:?} parts {parts}");
                assert_eq!(
                    WorkSplit::anchor_pairs(9, &ai, &aj, None),
                    expected.len() as u64
                );
            }
        }
    }

    #[test]
    fn cross_anchors_visit_exactly_the_touching_left_right_pairs_balanced() {
        let (left, right) = (7u32, 9u32);
        let genes = (left + right) as usize;
        let m = RankedMatrix::from_values(genes, 2, &vec![0.0; genes * 2]);
        for (ai, aj) in [
            (vec![2u32], vec![]),
            (vec![], vec![7u32]),
            (vec![0, 6], vec![8, 15]),
            (vec![3], vec![10]),
            (vec![0, 1, 2, 3, 4, 5, 6], vec![7]),
        ] {
            for parts in [1usize, 2, 3, 4, 7, 40] {
                let split = WorkSplit::anchors(genes, &ai, &aj, Some(left as usize), parts);
                let visited = visit_parts(&split, &m, parts);
                let pairs = visited.concat();
                let unique: BTreeSet<_> = pairs.iter().copied().collect();
                assert_eq!(unique.len(), pairs.len(), "duplicates");
                let expected: BTreeSet<(u32, u32)> = (0..left)
                    .flat_map(|i| (left..left + right).map(move |j| (i, j)))
                    .filter(|(i, j)| ai.contains(i) || aj.contains(j))
                    .collect();
                assert_eq!(unique, expected, "{ai:?} {aj:?} parts {parts}");
                assert_eq!(split.total_pairs(), expected.len() as u64);
                assert_eq!(
                    WorkSplit::anchor_pairs(genes, &ai, &aj, Some(left as usize)),
                    expected.len() as u64
                );
                let total = pairs.len();
                let (lo, hi) = (total / parts, total.div_ceil(parts));
                assert!(
                    visited.iter().all(|v| v.len() >= lo && v.len() <= hi),
                    "{ai:?} {aj:?} over {parts}"
                );
            }
        }
    }

    #[test]
    fn anchor_pairs_are_shared_evenly() {
        let genes = 200;
        let m = RankedMatrix::from_values(genes, 2, &vec![0.0; genes * 2]);
        for (ai, aj) in [
            (vec![57u32], vec![57u32]),
            (vec![3, 150], vec![0, 199]),
            (vec![], vec![199]),
            (vec![10], vec![]),
        ] {
            for parts in [1usize, 2, 3, 4, 7, 16] {
                let split = WorkSplit::anchors(genes, &ai, &aj, None, parts);
                let per: Vec<usize> = visit_parts(&split, &m, parts)
                    .iter()
                    .map(Vec::len)
                    .collect();
                let total: usize = per.iter().sum();
                assert_eq!(total as u64, split.total_pairs(), "{ai:?} {aj:?}");
                // Every partition within one pair of the mean.
                let (lo, hi) = (total / parts, total.div_ceil(parts));
                assert!(
                    per.iter().all(|&n| n >= lo && n <= hi),
                    "{ai:?} {aj:?} over {parts}: {per:?}"
                );
            }
        }
    }
}
