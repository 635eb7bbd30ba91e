//! Helpers shared by the unit tests.

/// Marsaglia's xorshift64 (shifts 13, 7, 17): a tiny deterministic generator for the
/// randomised checks of fast paths against their reference implementations.
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    /// The next state (never 0 for a non-zero seed).
    pub(crate) fn next_u64(&mut self) -> u64 {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }
}
