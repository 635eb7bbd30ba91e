//! The driver's only source of randomness: SplitMix64, seeded from `--seed` and the
//! execution's index, so that every generated case can be regenerated from those two numbers.

/// SplitMix64 (Steele, Lea & Flood 2014): 64 bits of state, full period, good mixing.
pub struct Rng(u64);

impl Rng {
    /// The generator for execution `index` of a run seeded with `seed`.
    pub fn for_case(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next_u64() % den < num
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// An index into `weights`, drawn in proportion to them.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| w as u64).sum();
        let mut x = self.next_u64() % total.max(1);
        for (i, &w) in weights.iter().enumerate() {
            if x < w as u64 {
                return i;
            }
            x -= w as u64;
        }
        weights.len() - 1
    }

    /// A small count, 1 most often: 1 + a geometric number of extra steps, at most `max`.
    pub fn small_count(&mut self, max: usize) -> usize {
        let mut n = 1;
        while n < max && self.chance(1, 2) {
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_seed_same_stream_and_cases_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_case(1, 7).next_u64()).collect();
        assert!(a.iter().all(|&x| x == a[0]));
        assert_ne!(
            Rng::for_case(1, 7).next_u64(),
            Rng::for_case(1, 8).next_u64()
        );
        let mut r = Rng(3);
        for _ in 0..1000 {
            assert!(r.below(5) < 5);
            assert!(r.weighted(&[0, 3, 0]) == 1);
        }
    }
}
