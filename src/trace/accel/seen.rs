//! Instruction lines seen before in one chunk, by their bytes. Most lines of a trace repeat
//! verbatim: every warp of a kernel runs the same arithmetic instructions with the same
//! registers, so the same text recurs once per warp. A line whose bytes equal a line parsed
//! earlier has the same parse (the reader is a pure function of the line and the header's
//! dialect, both fixed within a chunk) and the same static index, so it skips the reader
//! and the static table. Lines with addresses repeat too where the addresses are the
//! thread block's own (shared memory), so they are kept with their addresses.

/// Slots of the direct-mapped table (a power of two). A kernel has hundreds of static
/// instructions; a slot's collision only costs a re-parse.
const SLOTS: usize = 4096;

/// One remembered line: its bytes and what they parse to (its addresses are the first
/// `n_addrs` of its slot in [`Seen::addrs`]).
#[derive(Clone, Copy)]
struct Entry<'a> {
    line: &'a [u8],
    sidx: u32,
    mask: u32,
    n_addrs: u8,
}

/// The table: a slot per hash of the line's length and its first and last bytes.
pub(super) struct Seen<'a> {
    slots: Vec<Option<Entry<'a>>>,
    /// Per slot, the addresses of its line (allocated with the first line that has any).
    addrs: Vec<[u64; 32]>,
}

/// The slot of `line` (at least 8 bytes long).
#[inline(always)]
fn slot(line: &[u8]) -> usize {
    let n = line.len();
    let word = |i: usize| u64::from_le_bytes(line[i..i + 8].try_into().unwrap_or([0; 8]));
    let head = word(0);
    let mid = word((n - 8).min(8));
    let tail = word(n - 8);
    let h = (head ^ mid.rotate_left(21) ^ tail.rotate_left(43) ^ n as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

impl<'a> Seen<'a> {
    pub(super) fn new() -> Self {
        Seen {
            slots: vec![None; SLOTS],
            addrs: Vec::new(),
        }
    }

    /// The static index, mask and addresses of `line` if a line with the same bytes was
    /// kept.
    #[inline(always)]
    pub(super) fn get(&self, line: &[u8]) -> Option<(u32, u32, &[u64])> {
        if line.len() < 8 {
            return None;
        }
        let k = slot(line);
        match self.slots[k] {
            Some(e) if e.line == line => {
                let a: &[u64] = match e.n_addrs {
                    0 => &[],
                    n => &self.addrs[k][..n as usize],
                };
                Some((e.sidx, e.mask, a))
            }
            _ => None,
        }
    }

    /// Keeps `line`, which parsed to static `sidx` with mask `mask` and addresses `addrs`
    /// (at most 32, one per lane).
    #[inline(always)]
    pub(super) fn keep(&mut self, line: &'a [u8], sidx: u32, mask: u32, addrs: &[u64]) {
        if line.len() < 8 || addrs.len() > 32 {
            return;
        }
        let k = slot(line);
        if !addrs.is_empty() {
            if self.addrs.is_empty() {
                self.addrs = vec![[0; 32]; SLOTS];
            }
            self.addrs[k][..addrs.len()].copy_from_slice(addrs);
        }
        self.slots[k] = Some(Entry {
            line,
            sidx,
            mask,
            n_addrs: addrs.len() as u8,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_hit_and_others_miss() {
        let mut s = Seen::new();
        let a = b"00c0 ffffffff 1 R12 FFMA 3 R12 R5 R6 0".to_vec();
        let b = b"00c0 ffffffff 1 R12 FFMA 3 R12 R5 R7 0".to_vec();
        let none: &[u64] = &[];
        assert_eq!(s.get(&a), None);
        s.keep(&a, 7, u32::MAX, &[]);
        assert_eq!(s.get(&a.clone()), Some((7, u32::MAX, none)));
        assert_eq!(s.get(&b), None);
        // Short lines are never kept.
        s.keep(b"0 f 0", 1, 15, &[]);
        assert_eq!(s.get(b"0 f 0"), None);
        // A later line in the same slot replaces the earlier one, addresses and all.
        let c = b"0020 00000003 1 R2 LDS 1 R4 4 2 0x10 4".to_vec();
        s.keep(&c, 9, 3, &[0x10, 0x14]);
        assert_eq!(s.get(&c), Some((9, 3, &[0x10u64, 0x14][..])));
        s.keep(&c, 9, 3, &[]);
        assert_eq!(s.get(&c), Some((9, 3, none)));
    }
}
