//! Counter-based hashing: every random choice is a pure function of `(seed, what, where)`,
//! so any warp's stream can be generated on its own, in any order, with no state.

/// The splitmix64 finaliser: a bijective 64-bit mix.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const K1: u64 = 0x9e37_79b9_7f4a_7c15;
const K2: u64 = 0xd1b5_4a32_d192_ed03;

/// Hash of a salt and two counters.
#[inline(always)]
pub fn hash2(salt: u64, a: u64, b: u64) -> u64 {
    mix64(salt ^ mix64(a.wrapping_mul(K1).wrapping_add(b.wrapping_mul(K2)) ^ 0x5851_f42d_4c95_7f2d))
}

/// Derived hash for a small index `q` under a per-instruction hash `h`.
#[inline(always)]
pub fn sub(h: u64, q: u64) -> u64 {
    mix64(h ^ q.wrapping_add(1).wrapping_mul(K1))
}

/// Uniform integer in `0..n` from a 64-bit hash (Lemire's multiply-shift; `n > 0`).
#[inline(always)]
pub fn below(h: u64, n: u64) -> u64 {
    ((h as u128 * n as u128) >> 64) as u64
}

/// Uniform float in `[0, 1)` from a hash.
#[inline(always)]
pub fn unit_f64(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_uniform_enough() {
        let n = 10;
        let mut hist = [0u32; 10];
        for i in 0..100_000u64 {
            hist[below(hash2(7, i, 3), n) as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
        assert_ne!(hash2(1, 2, 3), hash2(1, 3, 2));
    }
}
