//! Instruction lines seen before in one chunk, by their bytes. Most lines of a trace repeat
//! verbatim: every warp of a kernel runs the same arithmetic instructions with the same
//! registers, so the same text recurs once per warp. A line whose bytes equal a line parsed
//! earlier has the same parse (the reader is a pure function of the line and the header's
//! dialect, both fixed within a chunk) and the same static index, so it skips the reader
//! and the static table. Only lines without addresses are kept: they are the ones that
//! repeat, and their whole parse is the static index and the mask.

/// Slots of the direct-mapped table (a power of two). A kernel has hundreds of static
/// instructions; a slot's collision only costs a re-parse.
const SLOTS: usize = 4096;

/// One remembered line: its bytes and what they parse to.
#[derive(Clone, Copy)]
struct Entry<'a> {
    line: &'a [u8],
    sidx: u32,
    mask: u32,
}

/// The table: a slot per hash of the line's length and its first and last bytes.
pub(super) struct Seen<'a> {
    slots: Vec<Option<Entry<'a>>>,
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
        }
    }

    /// The static index and mask of `line` if a line with the same bytes was kept.
    #[inline(always)]
    pub(super) fn get(&self, line: &[u8]) -> Option<(u32, u32)> {
        if line.len() < 8 {
            return None;
        }
        match self.slots[slot(line)] {
            Some(e) if e.line == line => Some((e.sidx, e.mask)),
            _ => None,
        }
    }

    /// Keeps `line`, which parsed to static `sidx` with mask `mask` and no addresses.
    #[inline(always)]
    pub(super) fn keep(&mut self, line: &'a [u8], sidx: u32, mask: u32) {
        if line.len() >= 8 {
            self.slots[slot(line)] = Some(Entry { line, sidx, mask });
        }
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
        assert_eq!(s.get(&a), None);
        s.keep(&a, 7, u32::MAX);
        assert_eq!(s.get(&a.clone()), Some((7, u32::MAX)));
        assert_eq!(s.get(&b), None);
        // Short lines are never kept.
        s.keep(b"0 f 0", 1, 15);
        assert_eq!(s.get(b"0 f 0"), None);
        // A later line in the same slot replaces the earlier one.
        s.keep(&b, 9, 3);
        assert_eq!(s.get(&b), Some((9, 3)));
    }
}
