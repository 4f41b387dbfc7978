//! A small deterministic generator (xorshift64) for the unit tests' random instances.

/// Xorshift64; the seed must not be 0.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (`n` > 0). (The loom build runs only the model tests, which use none.)
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
