//! The memory of a query, accounted in DataFusion's memory pool.
//!
//! Input values, ranks and orders, and bit-planes are the large allocations
//! of a `kendall_all_pairs` scan. Each is reserved in the session's
//! `MemoryPool` before it is allocated (so `SET datafusion.runtime.memory_limit`
//! governs it and an over-large input ends in a "Resources exhausted" error
//! naming what needed the memory), and the reservation is released with the
//! data. Allocations are fallible ([`try_filled`]), so a size the allocator
//! refuses is an error, never an abort.

use std::ops::Range;
use std::sync::Arc;

use datafusion::common::internal_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation, UnboundedMemoryPool,
};
use rayon::prelude::*;

use crate::sort::split_mut;

/// Reserves the memory of one query's scan of one input in a memory pool.
#[derive(Debug, Clone)]
pub struct QueryMemory {
    pool: Arc<dyn MemoryPool>,
    /// Whose reservations these are: the table function the query called,
    /// or a reader of an input (consumers of the pool are named after it).
    owner: &'static str,
    /// How errors name the input: `'expr.parquet'` or `table 'expr'`.
    path: String,
}

impl QueryMemory {
    /// Reservations of `owner` (the table function the query called, or a
    /// reader) for the input `path` names (quoted, as `'expr.parquet'` or
    /// `table 'expr'`) in `pool` (a query's `TaskContext::memory_pool`).
    pub fn new(pool: Arc<dyn MemoryPool>, owner: &'static str, path: &str) -> Self {
        Self {
            pool,
            owner,
            path: path.to_string(),
        }
    }

    /// Reservations in a pool of its own without a limit (for callers
    /// outside a DataFusion session: tests, benchmarks), named after
    /// `kendall_all_pairs`.
    pub fn unbounded(path: &str) -> Self {
        Self::new(
            Arc::new(UnboundedMemoryPool::default()),
            crate::schema::ALL_PAIRS,
            path,
        )
    }

    /// Whether the pool has a limit (`datafusion.runtime.memory_limit`).
    pub fn is_limited(&self) -> bool {
        pool_available(&self.pool).is_some()
    }

    /// A reservation of `bytes` for `what` (e.g. "input values"), registered
    /// as its own consumer of the pool; a clear "Resources exhausted" error
    /// when the pool cannot grant it.
    pub fn reserve(&self, what: &str, bytes: usize) -> Result<Reservation> {
        let consumer = MemoryConsumer::new(format!("{}: {what}", self.owner));
        let mut reservation = Reservation {
            inner: consumer.register(&self.pool),
            pool: Arc::clone(&self.pool),
            what: what.to_string(),
            path: self.path.clone(),
        };
        reservation.try_grow(bytes)?;
        Ok(reservation)
    }
}

/// Bytes a pool can still grant: its limit minus what is reserved; `None`
/// when the pool has no (known) limit.
pub fn pool_available(pool: &Arc<dyn MemoryPool>) -> Option<usize> {
    match pool.memory_limit() {
        MemoryLimit::Finite(limit) => Some(limit.saturating_sub(pool.reserved())),
        MemoryLimit::Infinite | MemoryLimit::Unknown => None,
    }
}

/// Memory reserved for one kind of data of a query; released when dropped.
#[derive(Debug)]
pub struct Reservation {
    inner: MemoryReservation,
    /// The pool, for its limit in errors.
    pool: Arc<dyn MemoryPool>,
    what: String,
    path: String,
}

impl Reservation {
    /// Bytes reserved.
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// Reserves `bytes` more, or fails with an error naming the data, the
    /// input and the sizes.
    pub fn try_grow(&mut self, bytes: usize) -> Result<()> {
        self.inner.try_grow(bytes).map_err(|e| {
            let detail = match e {
                DataFusionError::ResourcesExhausted(msg) => msg,
                other => other.to_string(),
            };
            let limit = match self.pool.memory_limit() {
                MemoryLimit::Finite(limit) => format!(
                    " (datafusion.runtime.memory_limit is {}, {} of it reserved)",
                    human(limit),
                    human(self.pool.reserved())
                ),
                MemoryLimit::Infinite | MemoryLimit::Unknown => String::new(),
            };
            DataFusionError::ResourcesExhausted(format!(
                "the {} of {} need {bytes} more bytes ({}) than DataFusion's memory \
                 pool can grant{limit}; raise datafusion.runtime.memory_limit or read fewer genes. \
                 {detail}",
                self.what,
                self.path,
                human(bytes)
            ))
        })
    }

    /// Shrinks the reservation to `bytes` (no effect when it holds less).
    pub fn shrink_to(&mut self, bytes: usize) {
        let size = self.inner.size();
        if bytes < size {
            self.inner.shrink(size - bytes);
        }
    }
}

/// `len` copies of `value`, allocated fallibly: an allocator refusal (a size
/// beyond memory) is a "Resources exhausted" error naming `what`, not an abort.
pub fn try_filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    try_extend(&mut v, len, value, what)?;
    Ok(v)
}

/// Zeroed 64-bit words whose first is aligned to a cache line (64 bytes,
/// one AVX-512 register), allocated fallibly as [`try_filled`]: a 512-bit
/// load at a multiple of 8 words from the start never straddles two lines.
/// (An allocator gives large blocks 16 bytes past a page boundary: there
/// every such load would be split across two lines, each a second access
/// to the L1 cache.)
#[derive(Debug)]
pub struct LineAlignedWords {
    /// The words, with up to 7 before the first.
    buf: Vec<u64>,
    /// Where the first is in `buf`.
    at: usize,
    /// How many there are.
    len: usize,
}

impl LineAlignedWords {
    /// Bytes `len` words take, the room to align them included.
    pub const fn bytes_for(len: usize) -> usize {
        (len + 7) * size_of::<u64>()
    }

    /// `len` zero words, the first at a multiple of 64 bytes.
    pub fn try_zeroed(len: usize, what: &str) -> Result<Self> {
        // Written here, as `try_filled` writes them: fresh zeroed pages
        // asked to be huge (`try_zeroed`) held 11–13 MB more at a network
        // job's peak, for no gain in time.
        let buf = try_filled(len + 7, 0u64, what)?;
        // At most 7: `buf` is aligned to 8 bytes.
        let at = buf.as_ptr().align_offset(64).min(7);
        Ok(Self { buf, at, len })
    }

    /// The words.
    #[inline]
    pub fn as_slice(&self) -> &[u64] {
        &self.buf[self.at..self.at + self.len]
    }

    /// The words, to write.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.buf[self.at..self.at + self.len]
    }
}

/// An empty vector with room for `capacity` elements, allocated fallibly
/// (see [`try_filled`]); from `HUGE_PAGES_FROM` bytes on, with huge pages
/// asked for (as [`try_zeroed`]), so that filling it takes one page fault
/// per 2 MiB instead of one per 4 KiB.
pub fn try_with_capacity<T>(capacity: usize, what: &str) -> Result<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(capacity)
        .map_err(|e| refused::<T>(what, capacity, e))?;
    let bytes = capacity * size_of::<T>();
    if bytes >= HUGE_PAGES_FROM {
        advise_huge_pages(v.as_mut_ptr().cast(), bytes);
    }
    Ok(v)
}

/// `ranges.last().end` values written part by part on rayon's threads,
/// never zeroed first: part `k` (of `ranges`, consecutive from 0) is what
/// `part(k)` yields, at least `ranges[k].len()` values (more are not read).
/// Allocated fallibly (see [`try_filled`]), with huge pages from
/// `HUGE_PAGES_FROM` bytes on (as [`try_zeroed`]); its memory is first
/// touched where the values are written. For a large array written whole:
/// memory `calloc` reuses is zeroed first, on one thread, one page fault
/// per 4 KiB (12 ms for 20 MB, measured in a candidate list's query; see
/// `docs/benchmarks/`).
pub fn try_written_in_parts<T, I>(
    ranges: &[Range<usize>],
    what: &str,
    part: impl Fn(usize) -> I + Sync,
) -> Result<Vec<T>>
where
    T: Copy + Send,
    I: Iterator<Item = T>,
{
    let consecutive = ranges
        .iter()
        .zip(ranges.iter().skip(1))
        .all(|(a, b)| a.end == b.start);
    let len = ranges.last().map_or(0, |r| r.end);
    if !consecutive || ranges.first().is_some_and(|r| r.start != 0) {
        return internal_err!("the parts of the {what} do not cover it in order");
    }
    let mut v: Vec<T> = try_with_capacity(len, what)?;
    let slots = &mut v.spare_capacity_mut()[..len];
    let whole = split_mut(slots, ranges)
        .into_par_iter()
        .enumerate()
        .map(|(k, slots)| {
            let mut written = 0;
            for (slot, x) in slots.iter_mut().zip(part(k)) {
                slot.write(x);
                written += 1;
            }
            written == slots.len()
        })
        .all(|whole| whole);
    if !whole {
        return internal_err!("a part of the {what} has fewer values than its range");
    }
    // SAFETY: the capacity is at least `len`; the ranges cover `0..len`
    // one after the other (checked above), `split_mut` hands out each one
    // once, and every slot of every part was written (`whole`).
    unsafe { v.set_len(len) };
    Ok(v)
}

/// Numbers whose value with every byte zero is 0: what [`try_zeroed`]
/// may hand out.
pub trait ZeroBytes: Copy {}
impl ZeroBytes for u8 {}
impl ZeroBytes for i8 {}
impl ZeroBytes for i16 {}
impl ZeroBytes for u16 {}
impl ZeroBytes for u32 {}
impl ZeroBytes for u64 {}
impl ZeroBytes for i32 {}
impl ZeroBytes for i64 {}
impl ZeroBytes for f32 {}
impl ZeroBytes for f64 {}

/// From this many bytes on, [`try_zeroed`] and [`try_written_in_parts`] ask
/// for huge pages.
const HUGE_PAGES_FROM: usize = 8 << 20;

/// `len` zeros, allocated fallibly (see [`try_filled`]) and zeroed by the
/// allocator: memory fresh from the system is zero already, so no pass
/// writes the zeros, and its pages are first touched where the values are
/// written (on rayon's threads, for the ranks). From
/// `HUGE_PAGES_FROM` bytes on, Linux is asked to back it with
/// transparent huge pages (`advise_huge_pages`): one page fault per
/// 2 MiB instead of one per 4 KiB where the values are first written.
pub fn try_zeroed<T: ZeroBytes>(len: usize, what: &str) -> Result<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| {
        DataFusionError::ResourcesExhausted(format!(
            "cannot allocate the {what} ({len} values of {} bytes): too large",
            std::mem::size_of::<T>()
        ))
    })?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(DataFusionError::ResourcesExhausted(format!(
            "cannot allocate the {what} ({len} values of {} bytes)",
            std::mem::size_of::<T>()
        )));
    }
    if layout.size() >= HUGE_PAGES_FROM {
        advise_huge_pages(ptr.cast(), layout.size());
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of
    // `len` values of `T` (so capacity `len`, alignment of `T`), and all
    // `len` of them are initialised: zero bytes are a value of `T`
    // (`ZeroBytes`).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Asks Linux to back the whole pages within `bytes` bytes at `start` with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`; what it does when
/// they are enabled in `madvise` mode, the default of many distributions).
/// A hint: the memory and its contents are unchanged whatever the answer,
/// and elsewhere nothing is done.
fn advise_huge_pages(start: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let first = (start as usize).next_multiple_of(PAGE);
        let end = (start as usize + bytes) / PAGE * PAGE;
        if end > first {
            // SAFETY: `first..end` lies within the allocation at `start`
            // (whole pages of it); MADV_HUGEPAGE changes how its pages are
            // backed, never their contents, and its result is ignored.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

/// Gives the memory of freed allocations back to the system where the
/// allocator keeps it: glibc's `malloc` keeps freed blocks below its mmap
/// threshold (a few MiB once large blocks have come and gone) in its
/// arenas, resident, so a load's transient arrays held in many such blocks
/// (a MatrixMarket file's parsed blocks) would stay in the process's
/// resident memory after they are dropped. `malloc_trim` returns the free
/// pages of every arena; elsewhere nothing is done.
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` hands free pages of the allocator's own arenas
    // back to the system; no live allocation is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn refused<T>(what: &str, len: usize, e: std::collections::TryReserveError) -> DataFusionError {
    DataFusionError::ResourcesExhausted(format!(
        "cannot allocate the {what} ({len} values of {} bytes): {e}",
        std::mem::size_of::<T>()
    ))
}

/// Grows `v` to `len` elements with copies of `value`, allocating fallibly
/// (see [`try_filled`]).
pub fn try_extend<T: Clone>(v: &mut Vec<T>, len: usize, value: T, what: &str) -> Result<()> {
    if len <= v.len() {
        return Ok(());
    }
    v.try_reserve_exact(len - v.len())
        .map_err(|e| refused::<T>(what, len, e))?;
    v.resize(len, value);
    Ok(())
}

/// `bytes` for people: `1.5 GiB`.
pub fn human(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = bytes as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{x:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    #[test]
    fn vectors_written_in_parts_hold_every_part_in_order() {
        // Parts of 0 to 40 values; then two parts of 40 MiB in all, past
        // the huge-page threshold.
        for total_parts in [0usize, 1, 7, 1000] {
            let lens: Vec<usize> = (0..total_parts).map(|k| (k * 7919) % 41).collect();
            let mut ranges = Vec::new();
            let mut at = 0;
            for &len in &lens {
                ranges.push(at..at + len);
                at += len;
            }
            let v: Vec<u32> = try_written_in_parts(&ranges, "test", |k| {
                (0..lens[k]).map(move |q| (k * 100 + q) as u32)
            })
            .unwrap();
            let expected: Vec<u32> = (0..total_parts)
                .flat_map(|k| (0..lens[k]).map(move |q| (k * 100 + q) as u32))
                .collect();
            assert_eq!(v, expected);
        }
        let big: Vec<u16> = try_written_in_parts(&[0..3 << 22, 3 << 22..5 << 22], "test", |k| {
            std::iter::repeat_n(k as u16 + 1, if k == 0 { 3 << 22 } else { 2 << 22 })
        })
        .unwrap();
        assert_eq!(big.len(), 5 << 22);
        assert!(big[..3 << 22].iter().all(|&x| x == 1));
        assert!(big[3 << 22..].iter().all(|&x| x == 2));
        // A part short of its range, or parts out of order: errors.
        let short =
            try_written_in_parts::<u8, _>(&[0..2, 2..5], "test", |k| std::iter::repeat_n(0, 2 - k));
        assert!(short.unwrap_err().to_string().contains("fewer values"));
        let gap =
            try_written_in_parts::<u8, _>(&[0..2, 3..5], "test", |_| std::iter::repeat_n(0, 2));
        assert!(gap.unwrap_err().to_string().contains("do not cover"));
    }

    #[test]
    fn zeroed_vectors_are_zeros_and_refusals_are_errors() {
        let v = try_zeroed::<u32>(1 << 20, "x").unwrap();
        assert_eq!(v.len(), 1 << 20);
        assert!(v.iter().all(|&x| x == 0));
        assert!(try_zeroed::<u16>(0, "x").unwrap().is_empty());
        let err = try_zeroed::<u64>(usize::MAX / 4, "huge things").unwrap_err();
        assert!(err.to_string().contains("huge things"), "{err}");
    }

    #[test]
    fn reservations_are_released_and_refusals_named() {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1000));
        let memory = QueryMemory::new(Arc::clone(&pool), crate::schema::ALL_PAIRS, "'x.parquet'");
        let mut a = memory.reserve("input values", 600).unwrap();
        assert_eq!(pool.reserved(), 600);
        assert_eq!(pool_available(&pool), Some(400));
        let err = memory.reserve("ranks", 500).unwrap_err();
        assert!(
            matches!(err, DataFusionError::ResourcesExhausted(_)),
            "{err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("ranks of 'x.parquet' need 500 more bytes"),
            "{msg}"
        );
        assert!(
            msg.contains(
                "pool can grant (datafusion.runtime.memory_limit is 1000 B, 600 B of it reserved)"
            ),
            "{msg}"
        );
        assert_eq!(pool.reserved(), 600, "a refused reservation holds nothing");
        a.shrink_to(100);
        assert_eq!(pool.reserved(), 100);
        a.try_grow(50).unwrap();
        drop(a);
        assert_eq!(pool.reserved(), 0);
        assert_eq!(pool_available(&QueryMemory::unbounded("y").pool), None);
    }

    #[test]
    fn impossible_allocations_are_errors() {
        let err = try_filled(usize::MAX / 2, 0u64, "test values").unwrap_err();
        assert!(
            err.to_string().contains("cannot allocate the test values"),
            "{err}"
        );
        assert_eq!(try_filled(3, 7u8, "x").unwrap(), vec![7, 7, 7]);
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 29), "1.5 GiB");
    }
}
