//! A HyperLogLog sketch (Flajolet et al. 2007) for counting distinct 64-bit keys in fixed
//! memory, and [`DistinctCounter`], which counts exactly up to a threshold and switches to
//! the sketch past it. Deterministic: the hash is a fixed mix with no random seed, and a
//! sketch's registers depend only on the set of keys added, not their order.

use rustc_hash::FxHashSet;

/// Register index bits: 2^14 registers (16 KiB), standard error 1.04 / sqrt(2^14) ≈ 0.8%.
const P: u32 = 14;
const M: usize = 1 << P;

/// SplitMix64's finaliser: a bijective mix, so distinct keys never collide before the
/// register split.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hll {
    regs: Box<[u8; M]>,
}

impl Default for Hll {
    fn default() -> Self {
        Hll {
            regs: Box::new([0; M]),
        }
    }
}

impl Hll {
    pub fn insert(&mut self, key: u64) {
        let h = mix(key);
        let idx = (h >> (64 - P)) as usize;
        // Rank of the first 1 bit in the remaining 64 - P bits (1-based), capped.
        let rest = h << P;
        let rank = (rest.leading_zeros() + 1).min(64 - P + 1) as u8;
        if rank > self.regs[idx] {
            self.regs[idx] = rank;
        }
    }

    /// The union of two sketches.
    pub fn merge(&mut self, o: &Hll) {
        for (a, &b) in self.regs.iter_mut().zip(o.regs.iter()) {
            *a = (*a).max(b);
        }
    }

    /// Estimated distinct keys: the harmonic-mean estimator with linear counting for the
    /// small range (a 64-bit hash needs no large-range correction at these counts).
    pub fn estimate(&self) -> u64 {
        let m = M as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let (mut sum, mut zeros) = (0.0f64, 0usize);
        for &r in self.regs.iter() {
            sum += 1.0 / (1u64 << r) as f64;
            zeros += (r == 0) as usize;
        }
        let raw = alpha * m * m / sum;
        let e = if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        e.round() as u64
    }
}

/// Distinct keys counted exactly up to `limit`, then approximately by a [`Hll`]: memory
/// stays bounded whatever the input.
#[derive(Clone, Debug)]
pub enum DistinctCounter {
    Exact(FxHashSet<u64>),
    Sketch(Hll),
}

impl Default for DistinctCounter {
    fn default() -> Self {
        DistinctCounter::Exact(FxHashSet::default())
    }
}

impl DistinctCounter {
    /// Keys counted exactly before switching to the sketch (8-16 MiB of set).
    pub const LIMIT: usize = 1 << 20;

    pub fn insert(&mut self, key: u64) {
        match self {
            DistinctCounter::Exact(s) => {
                s.insert(key);
                if s.len() > Self::LIMIT {
                    self.make_sketch();
                }
            }
            DistinctCounter::Sketch(h) => h.insert(key),
        }
    }

    fn make_sketch(&mut self) {
        if let DistinctCounter::Exact(s) = self {
            let mut h = Hll::default();
            for &k in s.iter() {
                h.insert(k);
            }
            *self = DistinctCounter::Sketch(h);
        }
    }

    /// The union with `o`. The result is a sketch exactly when the union has more than
    /// [`Self::LIMIT`] keys, whatever the order of merges.
    pub fn merge(&mut self, o: DistinctCounter) {
        match (&mut *self, o) {
            (DistinctCounter::Exact(a), DistinctCounter::Exact(mut b)) => {
                if a.len() < b.len() {
                    std::mem::swap(a, &mut b);
                }
                a.extend(b);
                if a.len() > Self::LIMIT {
                    self.make_sketch();
                }
            }
            (DistinctCounter::Sketch(a), DistinctCounter::Sketch(b)) => a.merge(&b),
            (DistinctCounter::Sketch(a), DistinctCounter::Exact(b)) => {
                for k in b {
                    a.insert(k);
                }
            }
            (DistinctCounter::Exact(a), DistinctCounter::Sketch(mut b)) => {
                for &k in a.iter() {
                    b.insert(k);
                }
                *self = DistinctCounter::Sketch(b);
            }
        }
    }

    /// The count, and whether it is an estimate.
    pub fn count(&self) -> (u64, bool) {
        match self {
            DistinctCounter::Exact(s) => (s.len() as u64, false),
            DistinctCounter::Sketch(h) => (h.estimate(), true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_err(est: u64, n: u64) -> f64 {
        (est as f64 - n as f64).abs() / n as f64
    }

    #[test]
    fn the_sketch_is_within_3_percent_on_10_million_keys() {
        let mut h = Hll::default();
        // Line addresses of a strided stream: 10 M distinct keys, a fixed pattern.
        for i in 0..10_000_000u64 {
            h.insert(0x7f00_0000_0000 / 128 + i * 3);
        }
        let e = h.estimate();
        assert!(rel_err(e, 10_000_000) < 0.03, "{e}");
        // Adding the same keys again changes nothing.
        let before = h.clone();
        for i in 0..1000u64 {
            h.insert(0x7f00_0000_0000 / 128 + i * 3);
        }
        assert_eq!(h, before);
    }

    #[test]
    fn small_counts_use_linear_counting() {
        for n in [1u64, 100, 10_000, 100_000] {
            let mut h = Hll::default();
            for i in 0..n {
                h.insert(i);
            }
            assert!(rel_err(h.estimate(), n) < 0.03, "{n}: {}", h.estimate());
        }
        assert_eq!(Hll::default().estimate(), 0);
    }

    #[test]
    fn merges_are_unions_in_any_order() {
        let (mut a, mut b) = (Hll::default(), Hll::default());
        for i in 0..300_000u64 {
            a.insert(i);
            b.insert(i + 200_000);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        assert!(rel_err(ab.estimate(), 500_000) < 0.03, "{}", ab.estimate());
    }

    #[test]
    fn the_counter_is_exact_up_to_the_limit_then_a_sketch() {
        let lim = DistinctCounter::LIMIT as u64;
        let mut c = DistinctCounter::default();
        for i in 0..lim {
            c.insert(i);
            c.insert(i);
        }
        assert_eq!(c.count(), (lim, false));
        c.insert(lim);
        let (n, approx) = c.count();
        assert!(approx && rel_err(n, lim + 1) < 0.03, "{n}");
        // Two halves under the limit whose union is over it, merged either way.
        let halves = |lo: u64, hi: u64| {
            let mut c = DistinctCounter::default();
            for i in lo..hi {
                c.insert(i);
            }
            c
        };
        let mut x = halves(0, lim / 2 + 10);
        x.merge(halves(lim / 2, lim + 10));
        let mut y = halves(lim / 2, lim + 10);
        y.merge(halves(0, lim / 2 + 10));
        assert!(x.count().1 && y.count().1);
        assert_eq!(x.count(), y.count());
        // A union that stays under the limit stays exact.
        let mut z = halves(0, 1000);
        z.merge(halves(500, 1500));
        assert_eq!(z.count(), (1500, false));
    }
}
