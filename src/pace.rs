//! Pacing a partition's work against the poll budget by measured cost.
//!
//! What a pair costs varies by orders of magnitude: tens of nanoseconds for
//! the bitset kernel at n = 57, milliseconds for the naive kernel at
//! n = 20,000, tens of milliseconds when an exact p-value distribution has to
//! be built for a pair's own number of shared samples. So a stream does not
//! count pairs: it times them. Kernel blocks are sized to take about
//! [`SLICE`] at the rate the last block ran (at most doubling from one block
//! to the next, down to a single pair), and while turning computed pairs into
//! rows the clock is read every so many rows, again spaced about [`SLICE`]
//! apart by the measured rate. A poll therefore ends within about one
//! [`SLICE`], or one pair when a single pair costs more, of its deadline.

use std::time::{Duration, Instant};

use crate::work::MAX_BLOCK_PAIRS;

/// Longest stretch of computation in one poll of a partition's stream.
pub const POLL_BUDGET: Duration = Duration::from_millis(20);

/// Scheduler ticks between a tokio worker's looks at timers, I/O and
/// signals, for the runtimes that run our plans ([`runtime_builder`]).
///
/// A tick is one poll of a task, and a partition's poll computes for up to
/// [`POLL_BUDGET`]: at tokio's default of 61 ticks a worker busy with pairs
/// would see a timer or a Ctrl-C only every 61 × 20 ms = 1.2 s. At 4 it sees
/// them within 80 ms; a look costs microseconds against 20 ms of work.
pub const EVENT_INTERVAL: u32 = 4;

/// A multi-threaded tokio runtime builder (all drivers on) whose workers look
/// at timers, I/O and signals every [`EVENT_INTERVAL`] polls: the runtime
/// the shell, the Python module and the R package run queries on, so that a
/// progress line, a timeout or a Ctrl-C is seen within a fraction of a
/// second while every worker computes pairs.
pub fn runtime_builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().event_interval(EVENT_INTERVAL);
    builder
}

/// Time one kernel block, or the rows between two clock reads, should take.
pub const SLICE: Duration = Duration::from_micros(2_500);

/// Most rows built between two clock reads (each read costs ~20 ns; at
/// 4,096 rows of tens of ns that is well under 1% of the work).
const MAX_ROWS_PER_CHECK: usize = 4096;

/// The pacing state of one stream.
///
/// The per-row count lives in the caller's loop (a local: one increment and
/// one compare per row, in registers); only every [`Pacer::rows_per_check`]
/// rows, or after a costly one, does the caller come here to read the clock.
/// Counting in this struct instead, behind `&mut self`, kept the count in
/// memory and slowed the bitset path by about 10%.
#[derive(Debug)]
pub struct Pacer {
    /// Pairs the next kernel block may take.
    block_pairs: usize,
    /// Rows to build between two clock reads.
    rows_per_check: usize,
    /// When the clock was last read for rows (or a block ended).
    since: Instant,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    /// Starts small: one pair per block, a clock read per row; both grow
    /// as fast as the measurements allow.
    pub fn new() -> Self {
        Self {
            block_pairs: 1,
            rows_per_check: 1,
            since: Instant::now(),
        }
    }

    /// Pairs the next kernel block may take.
    #[inline]
    pub fn block_pairs(&self) -> usize {
        self.block_pairs
    }

    /// Rows to build between two clock reads.
    #[inline]
    pub fn rows_per_check(&self) -> usize {
        self.rows_per_check
    }

    /// Rows are built from `now` on (a poll starts, or a block ended): the
    /// time before is not theirs. Restart the caller's row count.
    #[inline]
    pub fn resume(&mut self, now: Instant) {
        self.since = now;
    }

    /// A kernel block of `pairs` pairs ran from `start` to `end`.
    pub fn block_done(&mut self, pairs: usize, start: Instant, end: Instant) {
        self.block_pairs = next_size(self.block_pairs, pairs, end - start, MAX_BLOCK_PAIRS);
        self.resume(end);
    }

    /// `rows` rows were built since the last read (or [`Pacer::resume`]):
    /// reads the clock, spaces the next read by their measured cost, and
    /// says whether `deadline` has passed. The caller restarts its count.
    pub fn rows_done(&mut self, rows: usize, deadline: Instant) -> bool {
        let now = Instant::now();
        self.rows_per_check = next_size(
            self.rows_per_check,
            rows,
            now - self.since,
            MAX_ROWS_PER_CHECK,
        );
        self.since = now;
        now >= deadline
    }
}

/// How many units fit in [`SLICE`] when `done` units took `took`: at most
/// twice `current` (one slow measurement shrinks at once, growth is
/// cautious), between 1 and `max`.
fn next_size(current: usize, done: usize, took: Duration, max: usize) -> usize {
    let per_unit = took.as_nanos() as f64 / done.max(1) as f64;
    let fit = SLICE.as_nanos() as f64 / per_unit.max(1e-3);
    (fit.min(current.saturating_mul(2) as f64) as usize).clamp(1, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_measured_cost() {
        // Cheap units: doubling up to the cap.
        let mut size = 1;
        for _ in 0..20 {
            size = next_size(size, size, Duration::from_nanos(20 * size as u64), 4096);
        }
        assert_eq!(size, 4096);
        // A unit costing 1 ms: two fit in the slice.
        assert_eq!(next_size(4096, 10, Duration::from_millis(10), 4096), 2);
        // A unit costing more than the slice: one.
        assert_eq!(next_size(64, 1, Duration::from_millis(30), 4096), 1);
        // Nothing measured (0 ns) does not divide by zero.
        assert_eq!(next_size(8, 8, Duration::ZERO, 4096), 16);
    }

    #[test]
    fn row_checks_space_out_and_see_the_deadline() {
        let mut pacer = Pacer::new();
        pacer.resume(Instant::now());
        let far = Instant::now() + Duration::from_secs(3600);
        // Rows costing next to nothing: the spacing doubles to its cap.
        for _ in 0..20 {
            let rows = pacer.rows_per_check();
            assert!(!pacer.rows_done(rows, far));
        }
        assert_eq!(pacer.rows_per_check(), MAX_ROWS_PER_CHECK);
        // One row taking 5 ms: the next read comes after the next row.
        std::thread::sleep(Duration::from_millis(5));
        assert!(!pacer.rows_done(1, far));
        assert_eq!(pacer.rows_per_check(), 1);
        // A passed deadline is reported.
        assert!(pacer.rows_done(1, Instant::now()));
    }
}
