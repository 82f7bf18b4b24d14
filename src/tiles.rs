//! Tiling of the all-pairs gene matrix into an upper triangle of square
//! tiles, numbered with the bijective job ids of the LightPCC paper.
//!
//! The upper triangle (diagonal included) of a `w × w` tile matrix is
//! numbered row by row:
//!
//! * `F(y) = y(2w - y + 1) / 2` is the id of the first job in row `y`;
//! * `J(y, x) = F(y) + x - y` for `0 <= y <= x < w`.
//!
//! The inverse uses the closed-form floating-point estimate
//! `y = ceil(w - 0.5 - sqrt(w² + w + 0.25 - 2(J + 1)))` followed by an exact
//! integer correction, so it is exact for every `w` whose job count fits in a
//! `u64` (roughly `w < 6.07e9`).

use std::ops::Range;

/// `F(y)` computed exactly in `u128`.
fn row_start_wide(w: u64, y: u64) -> u128 {
    let (w, y) = (u128::from(w), u128::from(y));
    // y(2w - y + 1) is always even; saturate so y > 2w + 1 cannot underflow.
    (y * (2 * w + 1).saturating_sub(y)) / 2
}

/// Narrows a `u128` to `u64`, saturating instead of wrapping.
fn narrow(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// F(y): id of the first job in row y of a w×w upper triangle.
///
/// Valid for `y <= w`; `job_row_start(w, w)` equals [`job_count`]`(w)`.
pub fn job_row_start(w: u64, y: u64) -> u64 {
    debug_assert!(y <= w, "row {y} out of range for width {w}");
    narrow(row_start_wide(w, y))
}

/// J(y, x), requires y <= x < w.
pub fn job_id(w: u64, y: u64, x: u64) -> u64 {
    debug_assert!(
        y <= x && x < w,
        "({y}, {x}) not in the upper triangle of width {w}"
    );
    narrow(row_start_wide(w, y) + u128::from(x.saturating_sub(y)))
}

/// Inverse of job_id: (y, x) for 0 <= j < w(w+1)/2. Float estimate + exact integer correction.
///
/// Out-of-range ids (which includes every id when `w == 0`) do not panic in
/// release builds, but the returned coordinates are meaningless.
pub fn job_coords(w: u64, j: u64) -> (u64, u64) {
    debug_assert!(
        u128::from(j) < row_start_wide(w, w),
        "job {j} out of range for width {w}"
    );
    if w == 0 {
        return (0, 0);
    }
    let jw = u128::from(j);
    // y = ceil(w - 0.5 - sqrt((w + 0.5)² - 2(j + 1)))
    //   = ceil((2w - 1 - sqrt(D)) / 2) with D = (2w + 1)² - 8(j + 1).
    // D is formed exactly in integers, so the only rounding is in the
    // conversion to f64 and the square root: the estimate is off by at most
    // one row, which the integer loops below fix.
    let two_w1 = 2 * u128::from(w) + 1;
    let disc = (two_w1 * two_w1).saturating_sub(8 * (jw + 1));
    let est = ((2.0 * w as f64 - 1.0 - (disc as f64).sqrt()) / 2.0).ceil();
    // `as` saturates (negative and NaN map to 0), so this cannot panic.
    let mut y = (est as u64).min(w - 1);
    while y > 0 && row_start_wide(w, y) > jw {
        y -= 1;
    }
    while y + 1 < w && row_start_wide(w, y + 1) <= jw {
        y += 1;
    }
    let x = narrow((jw + u128::from(y)).saturating_sub(row_start_wide(w, y)));
    (y, x)
}

/// Number of jobs: w(w+1)/2.
pub fn job_count(w: u64) -> u64 {
    narrow(row_start_wide(w, w))
}

/// The tiled upper triangle of an m-gene pair matrix.
///
/// Genes are cut into `w = ceil(m / q)` blocks of `q` consecutive genes (the
/// last block may be shorter). Tile `(y, x)` with `y <= x` holds the gene
/// pairs `(i, j)`, `i < j`, with `i` in block `y` and `j` in block `x`, so
/// every unordered pair of distinct genes lies in exactly one tile. Tiles are
/// identified by their job id (see [`job_id`]).
///
/// With `m == 0` there are no tiles; with `m == 1` there is one tile holding
/// no pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileGrid {
    /// Number of genes.
    m: u64,
    /// Tile edge, in genes (at least 1).
    q: u64,
    /// Tiles per side: `ceil(m / q)`.
    w: u64,
}

impl TileGrid {
    /// Tiles `m` genes into blocks of `q` genes; `q == 0` is treated as 1.
    ///
    /// q >= 1 (clamp 0 to 1). m may be 0 or 1: with `m == 0` there are no
    /// tiles, with `m == 1` one tile holding no pairs.
    pub fn new(m: usize, q: usize) -> Self {
        let m = m as u64;
        let q = q.max(1) as u64;
        Self {
            m,
            q,
            w: m.div_ceil(q),
        }
    }

    /// Number of genes `m`.
    pub fn genes(&self) -> usize {
        self.m as usize
    }

    /// Tile edge `q`, in genes.
    pub fn tile_size(&self) -> usize {
        self.q as usize
    }

    /// Tiles per side: `w = ceil(m / q)`.
    pub fn width(&self) -> u64 {
        self.w
    }

    /// Number of tiles: [`job_count`]`(w)`.
    pub fn num_tiles(&self) -> u64 {
        job_count(self.w)
    }

    /// Number of distinct gene pairs: `m(m-1)/2`.
    pub fn total_pairs(&self) -> u64 {
        narrow(pairs_below(self.m, self.m))
    }

    /// `(y, x)` tile coordinates of a tile id (see [`job_coords`]).
    pub fn coords(&self, tile: u64) -> (u64, u64) {
        job_coords(self.w, tile)
    }

    /// Gene range `block*q .. min((block+1)*q, m)`, clamped to `m`.
    fn block(&self, block: u64) -> Range<usize> {
        let start = block.saturating_mul(self.q).min(self.m);
        let end = block.saturating_add(1).saturating_mul(self.q).min(self.m);
        start as usize..end as usize
    }

    /// Gene rows of the tile.
    pub fn rows(&self, tile: u64) -> Range<usize> {
        self.block(self.coords(tile).0)
    }

    /// Gene columns of the tile.
    pub fn cols(&self, tile: u64) -> Range<usize> {
        self.block(self.coords(tile).1)
    }

    /// Number of `i < j` gene pairs the tile holds.
    pub fn pairs_in_tile(&self, tile: u64) -> u64 {
        let (y, x) = self.coords(tile);
        let s = self.block(y).len() as u64;
        if y == x {
            narrow(pairs_below(s, s))
        } else {
            narrow(u128::from(s) * self.block(x).len() as u128)
        }
    }

    /// Number of pairs held by tiles with id < tile (tile may equal num_tiles).
    ///
    /// O(1) closed form; ids past `num_tiles` give [`TileGrid::total_pairs`].
    pub fn pairs_before(&self, tile: u64) -> u64 {
        if tile >= self.num_tiles() {
            return self.total_pairs();
        }
        let (y, x) = self.coords(tile);
        let rows = self.block(y);
        // All pairs whose row gene lies in blocks 0..y.
        let mut sum = pairs_below(self.m, rows.start as u64);
        if x > y {
            // Row y, tiles (y, y) ..= (y, x - 1): the diagonal tile, then the
            // full column blocks y+1 .. x, i.e. genes (y+1)q .. xq.
            let s = rows.len() as u128;
            let s64 = rows.len() as u64;
            sum += pairs_below(s64, s64);
            let col_start = self.block(y + 1).start as u128;
            let col_end = self.block(x).start as u128;
            sum += s * (col_end - col_start);
        }
        narrow(sum)
    }

    /// Split [0, num_tiles) into exactly `parts` contiguous, in-order ranges
    /// balanced by pair count.
    ///
    /// Boundary `k` is the smallest tile id `t` with
    /// `pairs_before(t) >= ceil(k * total_pairs / parts)`, found by binary
    /// search. Each range then holds fewer than
    /// `ceil(total_pairs / parts) + max_tile_pairs` pairs. Some ranges may be
    /// empty (e.g. when there are fewer tiles than parts). `parts == 0` is
    /// treated as 1.
    pub fn balanced_ranges(&self, parts: usize) -> Vec<Range<u64>> {
        let parts = parts.max(1);
        let n = self.num_tiles();
        let total = u128::from(self.total_pairs());
        let p = parts as u128;
        let mut out = Vec::with_capacity(parts);
        let mut start = 0u64;
        for k in 1..=parts {
            let end = if k == parts {
                n
            } else {
                let target = narrow((k as u128 * total).div_ceil(p));
                self.first_tile_reaching(target, start, n)
            };
            out.push(start..end);
            start = end;
        }
        out
    }

    /// Smallest `t` in `lo..=hi` with `pairs_before(t) >= target`
    /// (`hi` if none is smaller).
    fn first_tile_reaching(&self, target: u64, mut lo: u64, mut hi: u64) -> u64 {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.pairs_before(mid) >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// `sum_{i < r} (m - 1 - i)` for `r = min(r, m)`: the number of pairs
/// `i < j < m` whose smaller gene is below `r`.
fn pairs_below(m: u64, r: u64) -> u128 {
    let r = u128::from(r.min(m));
    let m = u128::from(m);
    if r == 0 {
        return 0;
    }
    r * (m - 1) - r * (r - 1) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64 PRNG.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform-ish in `0..n` (n > 0).
        fn below(&mut self, n: u64) -> u64 {
            ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
        }
    }

    /// Reference inverse by binary search on the exact row starts.
    fn coords_ref(w: u64, j: u64) -> (u64, u64) {
        let (mut lo, mut hi) = (0u64, w - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if job_row_start(w, mid) <= j {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        (lo, j - job_row_start(w, lo) + lo)
    }

    fn check_bijection_exhaustive(w: u64) {
        let mut expected = 0u64;
        for y in 0..w {
            assert_eq!(job_row_start(w, y), expected);
            for x in y..w {
                assert_eq!(job_id(w, y, x), expected, "w={w} y={y} x={x}");
                assert_eq!(job_coords(w, expected), (y, x), "w={w} j={expected}");
                expected += 1;
            }
        }
        assert_eq!(expected, job_count(w));
        assert_eq!(job_row_start(w, w), job_count(w));
    }

    /// Every row's first two and last two ids (the whole row when shorter).
    fn check_row_edges(w: u64) {
        for y in 0..w {
            let start = job_row_start(w, y);
            assert_eq!(job_row_start(w, y + 1) - start, w - y, "w={w} y={y}");
            for x in [y, y + 1, w.saturating_sub(2), w - 1] {
                if x >= y && x < w {
                    let j = start + (x - y);
                    assert_eq!(job_id(w, y, x), j, "w={w} y={y} x={x}");
                    assert_eq!(job_coords(w, j), (y, x), "w={w} j={j}");
                }
            }
        }
        assert_eq!(job_row_start(w, w), job_count(w));
    }

    /// Every id of every width up to 300 (4.5 million ids); for widths up to
    /// 2,000, the ids at each row's edges. `job_coords` settles the row with
    /// exact integer comparisons after its float estimate, so an id comes out
    /// wrong only if those comparisons do, and they can only go wrong at a
    /// row's edges, where the estimate lands beside the boundary. The random
    /// tests below cover large widths.
    #[test]
    fn job_bijection_exhaustive() {
        use rayon::prelude::*;
        assert_eq!(job_count(0), 0);
        (1..=300u64)
            .into_par_iter()
            .for_each(check_bijection_exhaustive);
        (1..=2000u64).into_par_iter().for_each(check_row_edges);
    }

    fn check_id(w: u64, j: u64) {
        let (y, x) = job_coords(w, j);
        assert!(y <= x && x < w, "w={w} j={j} -> ({y}, {x})");
        assert_eq!(job_id(w, y, x), j, "w={w} j={j}");
        assert_eq!((y, x), coords_ref(w, j), "w={w} j={j}");
    }

    #[test]
    fn job_ids_large_widths() {
        let mut rng = Rng(0x1234_5678);
        let mut widths = vec![
            1u64,
            2,
            3,
            1 << 20,
            (1 << 31) + 7,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            6_000_000_000,
            6_074_000_999, // largest w whose job count fits in u64
        ];
        for _ in 0..40 {
            widths.push(1 + rng.below(1 << 32));
        }
        for _ in 0..10 {
            widths.push(1 + rng.below(1 << 16));
        }
        assert!(job_count(6_074_000_999) > job_count(6_074_000_998));
        assert!(
            u128::from(job_count(6_074_000_999)) == row_start_wide(6_074_000_999, 6_074_000_999)
        );
        for &w in &widths {
            let count = job_count(w);
            assert_eq!(u128::from(count), u128::from(w) * u128::from(w + 1) / 2);
            check_id(w, 0);
            check_id(w, count - 1);
            assert_eq!(job_coords(w, 0), (0, 0));
            assert_eq!(job_coords(w, count - 1), (w - 1, w - 1));
            // Row boundaries.
            let mut ys = vec![0, 1 % w, w / 2, w - 1, w.saturating_sub(2)];
            for _ in 0..200 {
                ys.push(rng.below(w));
            }
            for y in ys {
                let f = job_row_start(w, y);
                assert_eq!(job_coords(w, f), (y, y), "w={w} y={y}");
                let last = job_row_start(w, y + 1) - 1;
                assert_eq!(job_coords(w, last), (y, w - 1), "w={w} y={y}");
                if f > 0 {
                    assert_eq!(job_coords(w, f - 1), (y - 1, w - 1));
                }
                check_id(w, f);
                check_id(w, last);
            }
            for _ in 0..2000 {
                check_id(w, rng.below(count));
            }
        }
    }

    fn brute_grids() -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for m in 0..=23 {
            for q in 0..=m + 2 {
                v.push((m, q));
            }
        }
        v.extend([
            (100, 7),
            (100, 10),
            (101, 10),
            (257, 16),
            (1000, 1),
            (999, 33),
        ]);
        v
    }

    #[test]
    fn pairs_sum_and_prefix() {
        for (m, q) in brute_grids() {
            let g = TileGrid::new(m, q);
            assert_eq!(g.genes(), m);
            assert_eq!(g.tile_size(), q.max(1));
            assert_eq!(g.width(), (m as u64).div_ceil(q.max(1) as u64));
            let total = (m * m.saturating_sub(1) / 2) as u64;
            assert_eq!(g.total_pairs(), total);
            let mut acc = 0u64;
            for t in 0..g.num_tiles() {
                assert_eq!(g.pairs_before(t), acc, "m={m} q={q} t={t}");
                let (r, c) = (g.rows(t), g.cols(t));
                let expected = if g.coords(t).0 == g.coords(t).1 {
                    assert_eq!(r, c);
                    r.len() * r.len().saturating_sub(1) / 2
                } else {
                    r.len() * c.len()
                };
                assert_eq!(g.pairs_in_tile(t), expected as u64);
                acc += g.pairs_in_tile(t);
            }
            assert_eq!(acc, total, "m={m} q={q}");
            assert_eq!(g.pairs_before(g.num_tiles()), total);
            assert_eq!(g.pairs_before(g.num_tiles() + 5), total);
        }
        assert_eq!(TileGrid::new(0, 4).num_tiles(), 0);
        assert_eq!(TileGrid::new(1, 4).num_tiles(), 1);
        assert_eq!(TileGrid::new(1, 4).pairs_in_tile(0), 0);
    }

    #[test]
    fn every_pair_in_exactly_one_tile() {
        for (m, q) in brute_grids() {
            if m > 300 {
                continue;
            }
            let g = TileGrid::new(m, q);
            let mut seen = vec![0u32; m * m];
            for t in 0..g.num_tiles() {
                let (y, x) = g.coords(t);
                let mut n = 0u64;
                for i in g.rows(t) {
                    for j in g.cols(t) {
                        if y == x && j <= i {
                            continue;
                        }
                        assert!(i < j, "m={m} q={q} tile {t}: ({i}, {j})");
                        seen[i * m + j] += 1;
                        n += 1;
                    }
                }
                assert_eq!(n, g.pairs_in_tile(t));
            }
            for i in 0..m {
                for j in 0..m {
                    let want = u32::from(i < j);
                    assert_eq!(seen[i * m + j], want, "m={m} q={q} pair ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn pairs_before_large_closed_form() {
        let mut rng = Rng(42);
        // m = 10^6 with q = 1: 5e11 tiles, so no brute force; check that
        // pairs_before is monotone and consistent with pairs_in_tile.
        for (m, q) in [(1_000_000usize, 1usize), (1_000_000, 37), (123_457, 64)] {
            let g = TileGrid::new(m, q);
            let n = g.num_tiles();
            assert_eq!(g.pairs_before(0), 0);
            assert_eq!(g.pairs_before(n), g.total_pairs());
            assert_eq!(
                g.pairs_before(n - 1) + g.pairs_in_tile(n - 1),
                g.total_pairs()
            );
            for _ in 0..10_000 {
                let t = rng.below(n);
                assert_eq!(
                    g.pairs_before(t) + g.pairs_in_tile(t),
                    g.pairs_before(t + 1),
                    "m={m} q={q} t={t}"
                );
            }
            // Row starts: all pairs with row gene below y*q, i.e.
            // sum_{i<r} (m-1-i) = r(m-1) - r(r-1)/2.
            let w = g.width();
            for y in [0, 1, 2, w / 2, w - 2, w - 1, rng.below(w), rng.below(w)] {
                let r = (y * q as u64).min(m as u64);
                let below = r * (m as u64 - 1) - r * r.saturating_sub(1) / 2;
                assert_eq!(
                    g.pairs_before(job_row_start(w, y)),
                    below,
                    "m={m} q={q} y={y}"
                );
            }
            let ranges = g.balanced_ranges(64);
            assert_eq!(ranges.len(), 64);
            assert_eq!(ranges.last().unwrap().end, n);
        }
    }

    fn check_ranges(g: &TileGrid, parts: usize) {
        let ranges = g.balanced_ranges(parts);
        assert_eq!(ranges.len(), parts.max(1));
        let mut next = 0u64;
        for r in &ranges {
            assert_eq!(r.start, next);
            assert!(r.start <= r.end);
            next = r.end;
        }
        assert_eq!(next, g.num_tiles());
        let max_tile = (0..g.num_tiles())
            .map(|t| g.pairs_in_tile(t))
            .max()
            .unwrap_or(0);
        let total = g.total_pairs();
        let p = parts.max(1) as u64;
        let mut sum = 0u64;
        for r in &ranges {
            let pairs: u64 = r.clone().map(|t| g.pairs_in_tile(t)).sum();
            assert_eq!(pairs, g.pairs_before(r.end) - g.pairs_before(r.start));
            // pairs - total/parts <= max_tile, in integers.
            assert!(
                pairs * p <= total + max_tile * p,
                "{g:?} parts={parts} range {r:?} pairs={pairs} max_tile={max_tile}"
            );
            sum += pairs;
        }
        assert_eq!(sum, total);
    }

    #[test]
    fn balanced_ranges_properties() {
        for (m, q) in brute_grids() {
            let g = TileGrid::new(m, q);
            for parts in 0..=8 {
                check_ranges(&g, parts);
            }
            check_ranges(&g, 100);
        }
        // Balance by pairs, not tiles: with q = 1, diagonal tiles are empty
        // and early rows are long, so equal tile counts would be unbalanced.
        let g = TileGrid::new(200, 1);
        let ranges = g.balanced_ranges(4);
        let pairs: Vec<u64> = ranges
            .iter()
            .map(|r| g.pairs_before(r.end) - g.pairs_before(r.start))
            .collect();
        let ideal = g.total_pairs() / 4;
        for p in pairs {
            assert!(p.abs_diff(ideal) <= 1, "{p} vs {ideal}");
        }
    }
}
