//! IPoly hashing (Rau, "Pseudo-randomly interleaved memory", ISCA 1991), as GPGPU-Sim uses
//! it for L2 set indices and memory-partition selection: the index of an address `x` among
//! `2^d` sets is the remainder of `x`, read as a polynomial over GF(2), divided by an
//! irreducible polynomial of degree `d`. Every power-of-two stride then spreads over all
//! sets. The remainder is linear in `x`, so it is the XOR of one table lookup per byte.

/// Irreducible polynomials over GF(2) by degree (bit i = coefficient of x^i).
const POLY: [u64; 9] = [
    0,
    0b11,
    0b111,
    0b1011,
    0b1_0011,
    0b10_0101,
    0b100_0011,
    0b1000_0011,
    0x11B,
];

/// Address bytes hashed (bits above 48 are not physical addresses).
const BYTES: usize = 6;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ipoly {
    /// `tables[j][b]` = `(b << 8j) mod P`.
    tables: Box<[[u8; 256]; BYTES]>,
}

/// `x mod p` over GF(2), `p` of degree `d`.
fn gf2_rem(mut x: u64, p: u64, d: u32) -> u64 {
    while x >> d != 0 {
        let top = 63 - x.leading_zeros();
        x ^= p << (top - d);
    }
    x
}

impl Ipoly {
    /// The hash onto `n` indices, if `n` is a power of two from 2 to 256.
    pub fn new(n: u64) -> Option<Ipoly> {
        if !n.is_power_of_two() || !(2..=256).contains(&n) {
            return None;
        }
        let d = n.trailing_zeros();
        let p = POLY[d as usize];
        let mut tables = Box::new([[0u8; 256]; BYTES]);
        // The remainder is linear over GF(2): a byte's is the XOR of its set bits'. (One
        // division per bit instead of per byte value: a run builds one table per L2 slice.)
        for (j, t) in tables.iter_mut().enumerate() {
            let bit: [u8; 8] = std::array::from_fn(|k| gf2_rem(1 << (8 * j + k), p, d) as u8);
            for b in 1..256usize {
                t[b] = t[b & (b - 1)] ^ bit[b.trailing_zeros() as usize];
            }
        }
        Some(Ipoly { tables })
    }

    /// The index of `x` (below `n`).
    #[inline]
    pub fn hash(&self, x: u64) -> u64 {
        let mut r = 0u8;
        for (j, t) in self.tables.iter().enumerate() {
            r ^= t[(x >> (8 * j)) as usize & 0xff];
        }
        r as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_hash_is_the_polynomial_remainder() {
        let mut s = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
        for d in 1..=8u32 {
            let h = Ipoly::new(1 << d).unwrap();
            for _ in 0..2000 {
                let x = s.next_u64() & ((1 << 48) - 1);
                assert_eq!(h.hash(x), gf2_rem(x, POLY[d as usize], d));
            }
        }
    }

    /// The point of IPoly: any power-of-two stride visits every index equally often.
    #[test]
    fn power_of_two_strides_spread_evenly() {
        for n in [16u64, 32, 64] {
            let h = Ipoly::new(n).unwrap();
            for shift in 0..20 {
                let mut count = vec![0u32; n as usize];
                for i in 0..n * 8 {
                    count[h.hash(i << shift) as usize] += 1;
                }
                assert!(
                    count.iter().all(|&c| c == 8),
                    "n {n} stride 2^{shift}: {count:?}"
                );
            }
        }
    }

    #[test]
    fn only_powers_of_two() {
        assert!(Ipoly::new(12).is_none());
        assert!(Ipoly::new(1).is_none());
        assert!(Ipoly::new(512).is_none());
    }
}
