//! A small deterministic generator for the unit tests (xorshift64), one
//! for every test that draws its data by xorshift, seeded so that a
//! failure repeats.

/// Marsaglia's xorshift64 (shifts 13, 7, 17), from a non-zero seed.
pub(crate) struct XorShift(u64);

impl XorShift {
    /// The generator from `seed` (non-zero).
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64-bit value.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next value modulo `k` (`k > 0`).
    pub(crate) fn below(&mut self, k: u64) -> u64 {
        self.next_u64() % k
    }

    /// Shuffles `a` (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, a: &mut [T]) {
        for k in (1..a.len()).rev() {
            a.swap(k, self.below(k as u64 + 1) as usize);
        }
    }
}
