//! A warp's global accesses coalesced into 32-byte sectors of lines (`coalesce`, with its
//! closed form for consecutive lanes `contiguous_into` and the lane walk `coalesce_lanes`),
//! the lanes of an atomic that a slice's unit serialises (`same_address_lanes`), and the
//! sectors a store writes only in part (`partial_sectors`).

use smallvec::SmallVec;

/// Splits a warp access into (line, sector mask) pairs in first-touch order; returns how
/// many were written to `out`.
pub fn coalesce(
    addrs: &[u64],
    width: u8,
    line_bytes: u64,
    sector_bytes: u64,
    out: &mut Vec<(u64, u8, u32)>,
) {
    out.clear();
    let w = width.max(1) as u64;
    let (lb, sb) = (line_bytes.max(1), sector_bytes.max(1));
    if lb.is_power_of_two()
        && sb.is_power_of_two()
        && contiguous_into(addrs, w, lb.trailing_zeros(), sb.trailing_zeros(), out)
    {
        return;
    }
    coalesce_lanes(addrs, w, lb, sb, out);
}

/// For an atomic or reduction coalesced into `lines` (as [`coalesce`] gives them): per
/// line, the read-modify-writes its update needs in turn at a slice's atomic unit, which
/// updates one sector a cycle (all the words of it that lanes name) and the lanes that name
/// the same word one after another: the sum over the line's sectors of the most lanes with
/// one address in that sector. Written to `out`, one entry per line, at least 1.
#[cold]
#[inline(never)]
pub fn same_address_lanes(
    addrs: &[u64],
    line_bytes: u64,
    sector_bytes: u64,
    lines: &[(u64, u8, u32)],
    out: &mut Vec<u32>,
) {
    out.clear();
    out.resize(lines.len(), 0);
    let mut v: SmallVec<[u64; 32]> = addrs.iter().copied().collect();
    v.sort_unstable();
    let (lb, sb) = (line_bytes.max(1), sector_bytes.max(1));
    // The sector of the previous run of equal addresses, its line's entry and its most.
    let mut cur: Option<(u64, usize, u32)> = None;
    for run in v.chunk_by(|a, b| a == b) {
        let (sector, n) = (run[0] / sb, run.len() as u32);
        match &mut cur {
            Some((s, _, most)) if *s == sector => *most = (*most).max(n),
            _ => {
                if let Some((_, i, most)) = cur {
                    out[i] += most;
                }
                let line = run[0] / lb;
                cur = lines
                    .iter()
                    .position(|e| e.0 == line)
                    .map(|i| (sector, i, n));
            }
        }
    }
    if let Some((_, i, most)) = cur {
        out[i] += most;
    }
    for x in out.iter_mut() {
        *x = (*x).max(1);
    }
}

/// For a store coalesced into `lines` (as [`coalesce`] gives them): per line, the mask of
/// the sectors whose bytes its lanes (each `width` bytes at its address) write only in part.
/// Written to `out`, one entry per line. Sectors of more than 64 bytes are not tracked
/// (0: none of the models has one).
#[cold]
#[inline(never)]
pub fn partial_sectors(
    addrs: &[u64],
    width: u8,
    line_bytes: u64,
    sector_bytes: u64,
    lines: &[(u64, u8, u32)],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.resize(lines.len(), 0);
    let (lb, sb, w) = (line_bytes.max(1), sector_bytes.max(1), width.max(1) as u64);
    if sb > 64 {
        return;
    }
    // (sector, the bytes of it written), in first-touch order.
    let mut cov: SmallVec<[(u64, u64); 32]> = SmallVec::new();
    for &a in addrs {
        let end = a.saturating_add(w - 1);
        let mut b = a;
        loop {
            let sec = b / sb;
            let base = sec * sb;
            let hi = end.min(base.saturating_add(sb - 1));
            let (lo, n) = (b - base, hi - b + 1);
            let bits = if n >= 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << lo
            };
            match cov.iter_mut().rev().find(|e| e.0 == sec) {
                Some(e) => e.1 |= bits,
                None => cov.push((sec, bits)),
            }
            if hi >= end {
                break;
            }
            b = hi + 1;
        }
    }
    let full = if sb >= 64 { u64::MAX } else { (1u64 << sb) - 1 };
    for &(sec, bits) in &cov {
        if bits & full == full {
            continue;
        }
        let (line, idx) = (sec * sb / lb, (sec * sb % lb) / sb);
        if let Some(i) = lines.iter().position(|e| e.0 == line) {
            out[i] |= 1u8 << idx.min(7);
        }
    }
}

/// [`coalesce`] lane by lane, for any access pattern (appends to `out`).
fn coalesce_lanes(addrs: &[u64], w: u64, lb: u64, sb: u64, out: &mut Vec<(u64, u8, u32)>) {
    // Shifts when the sizes are powers of two (always, on real GPUs), divisions otherwise.
    let pow2 = lb.is_power_of_two() && sb.is_power_of_two();
    let ss = sb.trailing_zeros();
    let per_line = lb.trailing_zeros().saturating_sub(ss);
    let sector_of = |a: u64| if pow2 { a >> ss } else { a / sb };
    let split = |sec: u64| {
        if pow2 {
            (sec >> per_line, sec & ((1u64 << per_line) - 1))
        } else {
            (sec * sb / lb, (sec * sb % lb) / sb)
        }
    };
    // The sector the previous lane ended in, and its entry in `out`.
    let mut last: Option<(u64, usize)> = None;
    for &a in addrs {
        // (`w - 1` first: a lane may end at the last byte of the address space; one that
        // would run past it is cut there.)
        let (first, end) = (sector_of(a), sector_of(a.saturating_add(w - 1)));
        // Lanes usually stay within the previous lane's sector: one more lane there.
        if let Some((sec, i)) = last {
            if first == sec && end == sec {
                out[i].2 += 1;
                continue;
            }
        }
        let mut counted = false;
        for sec in first..=end {
            let (line, idx) = split(sec);
            let bit = 1u8 << idx.min(7);
            // Lanes usually continue the line of the previous lane.
            let hit = match out.last() {
                Some(e) if e.0 == line => Some(out.len() - 1),
                _ => out.iter().rposition(|e| e.0 == line),
            };
            let i = match hit {
                Some(i) => {
                    let e = &mut out[i];
                    e.1 |= bit;
                    if !counted {
                        e.2 += 1;
                    }
                    i
                }
                None => {
                    out.push((line, bit, if counted { 0 } else { 1 }));
                    out.len() - 1
                }
            };
            last = Some((sec, i));
            counted = true;
        }
    }
}

/// [`coalesce`] for lanes that access consecutive `w`-byte elements (lane `i` at
/// `addrs[0] + i·w`, the streaming pattern), in closed form: the covered byte range gives
/// the lines and their sector masks, and each lane counts in the line where it starts.
/// Returns false, writing nothing, when the lanes are not such a run. Line and sector sizes
/// are `1 << line_shift` and `1 << sector_shift`.
fn contiguous_into(
    addrs: &[u64],
    w: u64,
    line_shift: u32,
    sector_shift: u32,
    out: &mut Vec<(u64, u8, u32)>,
) -> bool {
    let Some(&a0) = addrs.first() else {
        return false;
    };
    // Most other patterns already differ at the second lane: no pass for them.
    if addrs.get(1).is_some_and(|&a1| a1 != a0.wrapping_add(w)) {
        return false;
    }
    let n = addrs.len() as u64;
    // The last byte must not overflow; below that bound one branch-free pass checks the run.
    let Some(last) = (n * w).checked_sub(1).and_then(|x| a0.checked_add(x)) else {
        return false;
    };
    let mut off = 0u64;
    let mut a = a0;
    for &x in addrs {
        off |= x ^ a;
        a = a.wrapping_add(w);
    }
    if off != 0 {
        return false;
    }
    let per_line = line_shift.saturating_sub(sector_shift);
    let (first_line, last_line) = (a0 >> line_shift, last >> line_shift);
    let mut started = 0u64;
    for line in first_line..=last_line {
        // The run's bytes in this line, inclusive (no `+ 1`: the last line may end at 2^64).
        let lo = (line << line_shift).max(a0);
        let hi = ((line << line_shift) | ((1u64 << line_shift) - 1)).min(last);
        let (s0, s1) = (lo >> sector_shift, hi >> sector_shift);
        let mut mask = 0u8;
        for sec in s0..=s1 {
            mask |= 1u8 << (sec & ((1u64 << per_line) - 1)).min(7);
        }
        // Lanes starting before the end of this line, less those counted in earlier lines.
        let upto = ((hi - a0) / w + 1).min(n);
        out.push((line, mask, (upto - started) as u32));
        started = upto;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The atomic unit updates a sector's named words in one step and the lanes that
    /// name one word in turn: a line's count sums, over its sectors, the largest group of
    /// equal addresses.
    #[test]
    fn same_address_lanes_counts_per_sector_and_word() {
        let (lb, sb) = (128u64, 32u64);
        let mut lines = Vec::new();
        let mut out = Vec::new();
        let mut count = |addrs: &[u64]| {
            coalesce(addrs, 4, lb, sb, &mut lines);
            same_address_lanes(addrs, lb, sb, &lines, &mut out);
            lines
                .iter()
                .map(|e| e.0)
                .zip(out.iter().copied())
                .collect::<Vec<_>>()
        };
        // 32 lanes on the 32 words of one line: its 4 sectors, one step each.
        let distinct: Vec<u64> = (0..32).map(|l| 0x1000 + 4 * l).collect();
        assert_eq!(count(&distinct), vec![(0x1000 / lb, 4)]);
        // 8 lanes on the 8 words of one sector: one step.
        let sector: Vec<u64> = (0..8).map(|l| 0x1000 + 4 * l).collect();
        assert_eq!(count(&sector), vec![(0x1000 / lb, 1)]);
        // 32 lanes on one word: 32 in turn.
        assert_eq!(count(&[0x2000u64; 32]), vec![(0x2000 / lb, 32)]);
        // Two lines: 3 lanes on one word of the first; on the second, 5 on one word beside
        // two other words of its sector (5) and one lane in another sector (1).
        let mixed: Vec<u64> = [0x3000u64; 3]
            .into_iter()
            .chain([0x3084u64; 5])
            .chain([0x3088, 0x308c, 0x30c0])
            .collect();
        assert_eq!(count(&mixed), vec![(0x3000 / lb, 3), (0x3080 / lb, 6)]);
    }

    /// The closed form for consecutive lanes gives what the lane-by-lane walk gives.
    #[test]
    fn contiguous_runs_coalesce_like_the_lane_walk() {
        let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1du64);
        let mut next = || rng.next_u64();
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        let mut taken = 0;
        for _ in 0..20_000 {
            let w = [1u64, 2, 4, 8, 12, 16, 32][(next() % 7) as usize];
            let n = 1 + next() % 32;
            let a0 = if next() % 16 == 0 {
                u64::MAX - next() % 512
            } else {
                next() % 100_000
            };
            let a: Vec<u64> = (0..n).map(|i| a0.wrapping_add(i * w)).collect();
            let sizes = [(128u64, 32u64), (64, 32), (128, 128), (256, 16)];
            let (line, sector) = sizes[(next() % 4) as usize];
            fast.clear();
            let (ls, ss) = (line.trailing_zeros(), sector.trailing_zeros());
            if contiguous_into(&a, w, ls, ss, &mut fast) {
                slow.clear();
                coalesce_lanes(&a, w, line, sector, &mut slow);
                assert_eq!(
                    fast, slow,
                    "a0 {a0} n {n} w {w} line {line} sector {sector}"
                );
                taken += 1;
            } else {
                assert!(fast.is_empty());
            }
        }
        assert!(taken > 15_000, "closed form taken {taken} times");
    }

    #[test]
    fn coalescing_counts_lines_and_sectors() {
        let mut out = Vec::new();
        let a: Vec<u64> = (0..32).map(|i| 0x1000 + i * 4).collect();
        coalesce(&a, 4, 128, 32, &mut out);
        assert_eq!(out, vec![(0x1000 / 128, 0b1111, 32)]);
        let a: Vec<u64> = (0..32).map(|i| 0x1000 + i * 16).collect();
        coalesce(&a, 16, 128, 32, &mut out);
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|e| e.1 == 0b1111 && e.2 == 8));
        let a: Vec<u64> = (0..32).map(|i| i * 4096).collect();
        coalesce(&a, 4, 128, 32, &mut out);
        assert_eq!(out.len(), 32);
    }
}
