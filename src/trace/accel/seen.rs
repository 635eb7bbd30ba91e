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

/// Bytes of a line's start that pick its slot: a line shorter than this is never kept.
const KEY: usize = 16;

/// One remembered line: its bytes (as in the file, between two newlines) and what they
/// parse to (its addresses are the first `n_addrs` of its slot in [`Seen::addrs`]).
#[derive(Clone, Copy)]
struct Entry<'a> {
    line: &'a [u8],
    sidx: u32,
    mask: u32,
    n_addrs: u8,
}

/// The table: a slot per hash of a line's first [`KEY`] bytes (program counter and mask),
/// so that a line is looked up before its end is found.
pub(super) struct Seen<'a> {
    slots: Vec<Option<Entry<'a>>>,
    /// Per slot, the addresses of its line (allocated with the first line that has any).
    addrs: Vec<[u64; 32]>,
}

/// The slot of a line starting with `head`.
#[inline(always)]
fn slot(head: &[u8; KEY]) -> usize {
    let a = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8]));
    let b = u64::from_le_bytes(head[8..].try_into().unwrap_or([0; 8]));
    let h = (a ^ b.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

/// The first [`KEY`] bytes of `b` from `pos`, if there are that many.
#[inline(always)]
fn head(b: &[u8], pos: usize) -> Option<&[u8; KEY]> {
    b.get(pos..pos.checked_add(KEY)?)?.try_into().ok()
}

impl<'a> Seen<'a> {
    pub(super) fn new() -> Self {
        Seen {
            slots: vec![None; SLOTS],
            addrs: Vec::new(),
        }
    }

    /// If the line of `bytes` that starts at `pos` (and ends at the next newline or the
    /// end) equals a kept line: its length, static index, mask and addresses.
    #[inline(always)]
    pub(super) fn get_at(&self, bytes: &[u8], pos: usize) -> Option<(usize, u32, u32, &[u64])> {
        let k = slot(head(bytes, pos)?);
        let e = self.slots[k]?;
        let end = pos + e.line.len();
        if bytes.get(pos..end)? != e.line || bytes.get(end).is_some_and(|&c| c != b'\n') {
            return None;
        }
        let a: &[u64] = match e.n_addrs {
            0 => &[],
            n => &self.addrs[k][..n as usize],
        };
        Some((e.line.len(), e.sidx, e.mask, a))
    }

    /// Keeps `line` (its bytes between two newlines), which parsed to static `sidx` with
    /// mask `mask` and addresses `addrs` (at most 32, one per lane).
    #[inline(always)]
    pub(super) fn keep(&mut self, line: &'a [u8], sidx: u32, mask: u32, addrs: &[u64]) {
        let Some(h) = head(line, 0) else { return };
        if addrs.len() > 32 {
            return;
        }
        let k = slot(h);
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
        let a = b"00c0 ffffffff 1 R12 FFMA 3 R12 R5 R6 0";
        let b = b"00c0 ffffffff 1 R12 FFMA 3 R12 R5 R7 0";
        let none: &[u64] = &[];
        let text = [&a[..], b"\n", &b[..], b"\n", &a[..], b" \n", &a[..]].concat();
        assert_eq!(s.get_at(&text, 0), None);
        s.keep(a, 7, u32::MAX, &[]);
        // The same bytes up to a newline or the end: a hit, wherever they are.
        assert_eq!(s.get_at(&text, 0), Some((a.len(), 7, u32::MAX, none)));
        let last = text.len() - a.len();
        assert_eq!(s.get_at(&text, last), Some((a.len(), 7, u32::MAX, none)));
        // Another line with the same start, and the same line with a trailing blank.
        assert_eq!(s.get_at(&text, a.len() + 1), None);
        assert_eq!(s.get_at(&text, 2 * a.len() + 2), None);
        // Lines shorter than the key are never kept.
        s.keep(b"0 f 0 EXIT 0 0", 1, 15, &[]);
        assert_eq!(s.get_at(b"0 f 0 EXIT 0 0", 0), None);
        // A later line in the same slot replaces the earlier one, addresses and all.
        let c = b"0020 00000003 1 R2 LDS 1 R4 4 2 0x10 4";
        s.keep(c, 9, 3, &[0x10, 0x14]);
        assert_eq!(s.get_at(c, 0), Some((c.len(), 9, 3, &[0x10u64, 0x14][..])));
        s.keep(c, 9, 3, &[]);
        assert_eq!(s.get_at(c, 0), Some((c.len(), 9, 3, none)));
    }
}
