//! Shared-memory bank conflicts: how many distinct words the busiest bank serves for one
//! warp's access (`bank_degree`), in closed form for the usual patterns (`strided_degree`,
//! `two_runs_degree`) and by counting otherwise.

/// Bank-conflict degree of lanes whose words form an ascending arithmetic progression (the
/// usual shared-memory pattern), in closed form. A broadcast (word stride 0) touches only
/// one lane's `per` consecutive words: at most ⌈per / banks⌉ to a bank. For single-word
/// lanes with word stride `d`, lanes `i` and `j` share a bank iff `(i - j)·d ≡ 0 (mod
/// banks)`, i.e. iff `p` divides `i - j` with `p = banks / gcd(d, banks)`, so a bank serves
/// at most ⌈n / p⌉ distinct words. Wide lanes (`per` words each) at a word stride of at
/// most `per` cover one contiguous run of words. `None` for other patterns (wide lanes with
/// gaps between them, or no progression). A `stride` hint of whole words (see
/// [`bank_degree`]) vouches for the progression without a pass over the lanes.
fn strided_degree(addrs: &[u64], stride: Option<u64>, banks: u64, per: u64) -> Option<u32> {
    let (&a0, &a1) = (addrs.first()?, addrs.get(1)?);
    let (w0, w1) = (a0 / 4, a1 / 4);
    let d = w1.checked_sub(w0)?;
    if per > 1 && d > per {
        return None;
    }
    // Lanes `a0 + i·s` with `s` a multiple of 4 are words `w0 + i·s/4`, and `s/4 == d`.
    if stride.is_none_or(|s| s % 4 != 0) {
        // The last lane's word must not overflow (then no lane past it could match); below
        // that bound the check is one branch-free pass (it vectorises).
        (addrs.len() as u64 - 1).checked_mul(d)?.checked_add(w0)?;
        let mut off = 0u64;
        let mut w = w0;
        for &a in addrs {
            off |= (a / 4) ^ w;
            w = w.wrapping_add(d);
        }
        if off != 0 {
            return None;
        }
    }
    if d == 0 {
        return Some(per.div_ceil(banks) as u32);
    }
    if per > 1 {
        // Wide lanes that touch or overlap (0 < d <= per): together one contiguous run of
        // words, spread over the banks round-robin.
        let words = (addrs.len() as u64 - 1) * d + per;
        return Some(words.div_ceil(banks) as u32);
    }
    let p = if banks.is_power_of_two() {
        // gcd(d, 2^k) = 2^min(tz(d), k): no divisions.
        banks >> d.trailing_zeros().min(banks.trailing_zeros())
    } else {
        let (mut x, mut y) = (d % banks, banks);
        while x != 0 {
            (x, y) = (y % x, x);
        }
        banks / y
    };
    Some((addrs.len() as u64).div_ceil(p) as u32)
}

/// Shared-memory bank-conflict degree: the most distinct 4-byte words any bank serves.
/// `stride` is the producer's hint ([`DynInst::stride`](crate::trace::DynInst::stride)):
/// `Some(s)` when the lanes are known to be `addrs[0] + i·s`, which spares the check.
pub fn bank_degree(addrs: &[u64], stride: Option<u64>, width: u8, banks: u32) -> u32 {
    let b = banks.clamp(1, 64) as u64;
    // Banks are a power of two on every GPU: a mask instead of a division per word.
    let bank_of = |w: u64| {
        if b.is_power_of_two() {
            (w & (b - 1)) as usize
        } else {
            (w % b) as usize
        }
    };
    let per = (width.max(1) as u64).div_ceil(4);
    if let Some(deg) = strided_degree(addrs, stride, b, per) {
        return deg;
    }
    if let Some(deg) = two_runs_degree(addrs, b, per) {
        return deg;
    }
    // Fast path: no two distinct words share a bank (the common, conflict-free case).
    let mut seen = [u64::MAX; 64];
    let mut clash = false;
    'lanes: for &a in addrs {
        for k in 0..per {
            let w = a / 4 + k;
            let slot = &mut seen[bank_of(w)];
            if *slot == u64::MAX {
                *slot = w;
            } else if *slot != w {
                clash = true;
                break 'lanes;
            }
        }
    }
    if !clash {
        return 1;
    }
    // Small conflicts: up to 4 distinct words per bank, tracked per bank.
    let mut words4 = [[u64::MAX; 4]; 64];
    let mut cnt = [0u8; 64];
    let mut deg = 1u32;
    let mut overflow = false;
    'outer: for &a in addrs {
        for k in 0..per {
            let w = a / 4 + k;
            let bi = bank_of(w);
            let n = cnt[bi] as usize;
            if words4[bi][..n].contains(&w) {
                continue;
            }
            if n == 4 {
                overflow = true;
                break 'outer;
            }
            words4[bi][n] = w;
            cnt[bi] += 1;
            deg = deg.max(n as u32 + 1);
        }
    }
    if !overflow {
        return deg;
    }
    // Every word of every lane (up to 32 lanes of up to 64 words: no truncation).
    let mut words: Vec<u64> = Vec::with_capacity(addrs.len() * per as usize);
    for &a in addrs {
        words.extend((0..per).map(|k| a / 4 + k));
    }
    let ws = &mut words[..];
    ws.sort_unstable();
    let mut count = [0u32; 64];
    let mut prev = u64::MAX;
    let mut deg = 1;
    for &w in ws.iter() {
        if w != prev {
            let c = &mut count[bank_of(w)];
            *c += 1;
            deg = deg.max(*c);
            prev = w;
        }
    }
    deg
}

/// Bank-conflict degree of lanes whose words form one or two disjoint contiguous runs, in
/// closed form: a progression of touching or overlapping lanes, possibly wrapped around the
/// end of a window (as the synthetic stream's shared accesses wrap). Within a run each
/// lane's first word is at most `per` words after the previous lane's (and not before it),
/// so the run covers every word from its first lane's to its last lane's end. A run of `L`
/// words puts ⌊L / banks⌋ on each bank and one more on the `L mod banks` banks from its
/// first word's on (cyclically); two runs add up, and the banks with one more of each
/// coincide somewhere iff one of those arcs holds the other's first bank; two runs that
/// share words are their union, one run. `None` for other patterns (more runs).
fn two_runs_degree(addrs: &[u64], banks: u64, per: u64) -> Option<u32> {
    let w0 = addrs.first()? / 4;
    // (first word, end word) of each run; words are below 2^62, so `+ per` cannot overflow.
    let mut runs = [(w0, w0 + per); 2];
    let mut second = false;
    let mut prev = w0;
    for &a in &addrs[1..] {
        let w = a / 4;
        if w >= prev && w - prev <= per {
            runs[second as usize].1 = w + per;
        } else if second {
            return None;
        } else {
            second = true;
            runs[1] = (w, w + per);
        }
        prev = w;
    }
    let [(s0, e0), (s1, e1)] = runs;
    let (l0, l1) = (e0 - s0, e1 - s1);
    if !second {
        return Some(l0.div_ceil(banks) as u32);
    }
    if e0 > s1 && e1 > s0 {
        // Runs that share words (two half-warps reading the same tile row): their union
        // is one run, and a word counts once however many lanes read it.
        let l = e0.max(e1) - s0.min(s1);
        return Some(l.div_ceil(banks) as u32);
    }
    let (m0, m1) = (l0 % banks, l1 % banks);
    let extra = if m0 == 0 || m1 == 0 {
        (m0 + m1 > 0) as u64
    } else {
        let (b0, b1) = (s0 % banks, s1 % banks);
        let meet = (b1 + banks - b0) % banks < m0 || (b0 + banks - b1) % banks < m1;
        1 + meet as u64
    };
    Some((l0 / banks + l1 / banks + extra) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bank-conflict degree by brute force: the most distinct words (`per` per lane) that
    /// any bank serves.
    fn count_degree(a: &[u64], per: u64, banks: u64) -> u32 {
        let mut words: Vec<u64> = a
            .iter()
            .flat_map(|x| (0..per).map(move |k| x / 4 + k))
            .collect();
        words.sort_unstable();
        words.dedup();
        let mut n = vec![0u32; banks as usize];
        for w in words {
            n[(w % banks) as usize] += 1;
        }
        n.into_iter().max().unwrap_or(0).max(1)
    }

    #[test]
    fn bank_conflicts() {
        let a: Vec<u64> = (0..32).map(|i| i * 4).collect();
        assert_eq!(bank_degree(&a, None, 4, 32), 1);
        let a: Vec<u64> = (0..32).map(|i| i * 128).collect();
        assert_eq!(bank_degree(&a, None, 4, 32), 32);
        let a = vec![64u64; 32];
        assert_eq!(bank_degree(&a, None, 4, 32), 1, "broadcast");
        let a: Vec<u64> = (0..32).map(|i| i * 16).collect();
        assert_eq!(bank_degree(&a, None, 16, 32), 4);
    }

    /// The closed form for strided lanes agrees with counting distinct words per bank.
    #[test]
    fn wide_bank_degree_matches_counting() {
        for banks in [2u64, 4, 16, 32] {
            for width in [8u8, 16, 32, 64] {
                for stride in [0u64, 4, 8, 12, 16, 20, 32, 64, 256] {
                    for (n, base) in [(1u64, 4096), (5, 4096), (32, 4096), (32, 4098)] {
                        let a: Vec<u64> = (0..n).map(|i| base + i * stride).collect();
                        let per = (width as u64).div_ceil(4);
                        assert_eq!(
                            bank_degree(&a, None, width, banks as u32),
                            count_degree(&a, per, banks),
                            "banks {banks} width {width} stride {stride} n {n}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn strided_bank_degree_matches_counting() {
        let count = |a: &[u64], banks: u64| count_degree(a, 1, banks);
        for banks in [16u64, 32, 24] {
            for n in [2usize, 7, 31, 32] {
                for stride in [0u64, 1, 2, 3, 4, 5, 8, 12, 16, 33, 64, 100, 128, 129] {
                    for base in [0u64, 4, 1000, 4096 + 8] {
                        let a: Vec<u64> = (0..n as u64).map(|i| base + i * stride).collect();
                        let want = count(&a, banks);
                        assert_eq!(
                            bank_degree(&a, None, 4, banks as u32),
                            want,
                            "banks {banks} n {n} stride {stride} base {base}"
                        );
                    }
                }
            }
        }
    }

    /// Wrapped progressions, broken runs and hinted progressions agree with counting.
    #[test]
    fn run_bank_degree_matches_counting() {
        let mut rng = crate::testing::XorShift(0x6a09_e667_f3bc_c908u64);
        let mut next = || rng.next_u64();
        for _ in 0..20_000 {
            let width = [4u8, 8, 12, 16, 32][(next() % 5) as usize];
            let per = (width as u64).div_ceil(4);
            let banks = [32u64, 16, 24, 1][(next() % 4) as usize];
            let n = 1 + next() % 32;
            // A window of `size` bytes, lanes `step` apart from `cur`, wrapping.
            let size = 4 * (1 + next() % 2048);
            let step = [0, 4, 8, 12, 16, 32, 64, 128][(next() % 8) as usize] % size;
            let base = 4 * (next() % 4096);
            let mut cur = 4 * (next() % (size / 4));
            let mut a = Vec::new();
            for _ in 0..n {
                a.push(base + cur);
                cur = (cur + step) % size;
            }
            if next() % 4 == 0 {
                // Something off the pattern.
                let i = (next() % n) as usize;
                a[i] = 4 * (next() % 8192) + next() % 4;
            }
            let want = count_degree(&a, per, banks);
            assert_eq!(
                bank_degree(&a, None, width, banks as u32),
                want,
                "{a:?} width {width} banks {banks}"
            );
            let p: Vec<u64> = (0..n).map(|i| base + i * step).collect();
            assert_eq!(
                bank_degree(&p, Some(step), width, banks as u32),
                count_degree(&p, per, banks),
                "{p:?} width {width} banks {banks}"
            );
        }
    }

    /// Two runs of touching lanes that share words (half-warps reading the same or an
    /// overlapping tile row) agree with counting.
    #[test]
    fn overlapping_runs_match_counting() {
        let mut rng = crate::testing::XorShift(0xbb67_ae85_84ca_a73bu64);
        let mut next = || rng.next_u64();
        for _ in 0..20_000 {
            let width = [4u8, 8, 16][(next() % 3) as usize];
            let per = (width as u64).div_ceil(4);
            let banks = [32u64, 16, 24][(next() % 3) as usize];
            // Lanes `step` bytes apart (touching: `step <= width`), the second run starting
            // `back` bytes before the first run's end.
            let step = (width as u64 / 4) * [0u64, 1][(next() % 2) as usize] * 4;
            let n0 = 1 + next() % 31;
            let n1 = 1 + next() % (32 - n0);
            let base = 4 * (next() % 4096);
            let mut a: Vec<u64> = (0..n0).map(|i| base + i * step).collect();
            let end = base + (n0 - 1) * step + width as u64;
            let back = 4 * (1 + next() % ((end - base) / 4));
            a.extend((0..n1).map(|i| end - back + i * step));
            assert_eq!(
                bank_degree(&a, None, width, banks as u32),
                count_degree(&a, per, banks),
                "{a:?} width {width} banks {banks}"
            );
        }
        // The trace's pattern: two half-warps of 16-byte lanes reading the same 256 bytes.
        let a: Vec<u64> = (0..32).map(|i| 0xb00 + (i % 16) * 16).collect();
        assert_eq!(two_runs_degree(&a, 32, 4), Some(2));
        assert_eq!(bank_degree(&a, None, 16, 32), 2);
    }
}
