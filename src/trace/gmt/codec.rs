//! Compact encoding of one warp's dynamic instruction stream.
//!
//! Per instruction:
//! * a varint `zigzag(sidx - (prev_sidx + 1)) << 1 | mask_changed` — straight-line code
//!   with an unchanged mask costs one byte;
//! * the 4-byte little-endian mask when it changed;
//! * for memory instructions with `n = popcount(mask) > 0` active lanes, an address block:
//!   a mode byte, then the base as a zigzag varint relative to a prediction, then either one
//!   zigzag stride (mode 0: `addr[i] = base + i*stride`) or `n-1` zigzag deltas (mode 1).
//!
//! Mode 2 (followed by a slot byte) repeats the deltas of one of the warp's last
//! [`PATTERNS`] mode-1 blocks, which captures broadcast and tiled shared-memory patterns that
//! recur instruction after instruction.
//!
//! The base prediction is the previous base of the same static instruction, kept in a
//! 32-entry direct-mapped table indexed by `sidx % 32`, so loop iterations over arrays cost
//! a byte or two. Encoder and decoder keep identical tables, and the decoder is bounds-safe:
//! corrupt bytes give a [`DecodeError`], never a panic.

use crate::error::DecodeError;
use crate::trace::inst::DynInst;

const PRED_SLOTS: usize = 32;
/// Recent irregular delta patterns remembered per warp.
pub const PATTERNS: usize = 4;

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[derive(Clone)]
struct Predictor {
    tag: [u32; PRED_SLOTS],
    base: [u64; PRED_SLOTS],
}

impl Predictor {
    fn new() -> Self {
        Predictor {
            tag: [u32::MAX; PRED_SLOTS],
            base: [0; PRED_SLOTS],
        }
    }
    #[inline]
    fn predict(&self, sidx: u32) -> u64 {
        let s = sidx as usize % PRED_SLOTS;
        if self.tag[s] == sidx {
            self.base[s]
        } else {
            0
        }
    }
    #[inline]
    fn update(&mut self, sidx: u32, base: u64) {
        let s = sidx as usize % PRED_SLOTS;
        self.tag[s] = sidx;
        self.base[s] = base;
    }
}

/// Encodes a warp stream; `is_mem(sidx)` tells which statics carry addresses.
#[derive(Clone)]
pub struct Encoder {
    prev_sidx: u32,
    prev_mask: u32,
    pred: Predictor,
    /// Deltas of the last irregular (mode 1) blocks, a ring of [`PATTERNS`].
    last: [Vec<u64>; PATTERNS],
    next_slot: usize,
    pub count: u64,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    pub fn new() -> Self {
        Encoder {
            prev_sidx: u32::MAX,
            prev_mask: u32::MAX,
            pred: Predictor::new(),
            last: Default::default(),
            next_slot: 0,
            count: 0,
        }
    }

    /// Appends one instruction. `addrs` are the active lanes' addresses in lane order and
    /// must have `popcount(mask)` entries for a memory instruction, none otherwise.
    /// (Always inlined: the text reader's loop calls it once a line, and a call costs it
    /// 2% of a compute-bound kernel's run.)
    #[inline(always)]
    pub fn push(&mut self, out: &mut Vec<u8>, sidx: u32, mask: u32, addrs: &[u64]) {
        let delta = sidx as i64 - (self.prev_sidx as i64 + 1);
        let mask_changed = mask != self.prev_mask;
        put_varint(out, (zigzag(delta) << 1) | mask_changed as u64);
        if mask_changed {
            out.extend_from_slice(&mask.to_le_bytes());
        }
        self.prev_sidx = sidx;
        self.prev_mask = mask;
        self.count += 1;
        if addrs.is_empty() {
            return;
        }
        let base = addrs[0];
        let pred = self.pred.predict(sidx);
        self.pred.update(sidx, base);
        let stride = if addrs.len() > 1 {
            addrs[1].wrapping_sub(addrs[0]) as i64
        } else {
            0
        };
        let uniform = addrs
            .windows(2)
            .all(|w| w[1].wrapping_sub(w[0]) as i64 == stride);
        let repeat = if uniform {
            None
        } else {
            self.last.iter().position(|p| {
                p.len() + 1 == addrs.len()
                    && addrs
                        .windows(2)
                        .zip(p)
                        .all(|(w, &d)| w[1].wrapping_sub(w[0]) == d)
            })
        };
        out.push(match (uniform, repeat) {
            (true, _) => 0,
            (false, Some(_)) => 2,
            (false, None) => 1,
        });
        put_varint(out, zigzag(base.wrapping_sub(pred) as i64));
        if uniform {
            put_varint(out, zigzag(stride));
        } else if let Some(slot) = repeat {
            out.push(slot as u8);
        } else {
            let p = &mut self.last[self.next_slot];
            self.next_slot = (self.next_slot + 1) % PATTERNS;
            p.clear();
            for w in addrs.windows(2) {
                let d = w[1].wrapping_sub(w[0]);
                p.push(d);
                put_varint(out, zigzag(d as i64));
            }
        }
    }
}

/// Decodes a stream produced by [`Encoder`]. `mem` says, per static index, whether the
/// instruction carries addresses.
///
/// Laid out in declaration order (`repr(C)`): what every instruction reads comes first, the
/// address predictor last, so decoding an instruction without addresses touches one cache
/// line of the state; the mode-1 patterns (1 KiB) are allocated at a warp's first mode-1
/// block. (An engine keeps a decoder per resident warp, makes one per warp of every CTA it
/// starts, and visits each rarely enough that its state is out of cache.)
#[repr(C)]
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    remaining: u64,
    prev_sidx: u32,
    prev_mask: u32,
    next_slot: usize,
    last_len: [usize; PATTERNS],
    pred: Predictor,
    last: Option<Box<[[u64; 31]; PATTERNS]>>,
}

impl<'a> Decoder<'a> {
    pub fn new(bytes: &'a [u8], insts: u64) -> Self {
        Decoder {
            bytes,
            pos: 0,
            prev_sidx: u32::MAX,
            prev_mask: u32::MAX,
            pred: Predictor::new(),
            last: None,
            last_len: [usize::MAX; PATTERNS],
            next_slot: 0,
            remaining: insts,
        }
    }

    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        // One byte (most values): no loop.
        if let Some(&b) = self.bytes.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u64);
            }
        }
        self.varint_long()
    }

    #[inline(never)]
    fn varint_long(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(DecodeError("stream ends inside a varint".into()));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(DecodeError("varint overflows 64 bits".into()));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(DecodeError("varint longer than 10 bytes".into()));
            }
        }
    }

    /// Decodes the next instruction into `out`. `is_mem` maps a static index to whether it
    /// has an address block (and must reject out-of-range indices by returning `None`).
    #[inline]
    pub fn next(
        &mut self,
        out: &mut DynInst,
        is_mem: impl Fn(u32) -> Option<bool>,
    ) -> Result<bool, DecodeError> {
        if self.remaining == 0 {
            return Ok(false);
        }
        let h = self.varint()?;
        let delta = unzigzag(h >> 1);
        let sidx = (self.prev_sidx as i64 + 1).wrapping_add(delta);
        if !(0..=u32::MAX as i64).contains(&sidx) {
            return Err(DecodeError(format!("static index {sidx} out of range")));
        }
        let sidx = sidx as u32;
        let Some(mem) = is_mem(sidx) else {
            return Err(DecodeError(format!("static index {sidx} out of range")));
        };
        if h & 1 == 1 {
            let Some(b) = self.bytes.get(self.pos..self.pos + 4) else {
                return Err(DecodeError("stream ends inside a mask".into()));
            };
            self.prev_mask = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            self.pos += 4;
        }
        self.prev_sidx = sidx;
        out.sidx = sidx;
        out.mask = self.prev_mask;
        let n = if mem { self.prev_mask.count_ones() } else { 0 };
        out.n = n as u8;
        if n > 0 {
            let Some(&mode) = self.bytes.get(self.pos) else {
                return Err(DecodeError("stream ends before an address block".into()));
            };
            self.pos += 1;
            let base = self
                .pred
                .predict(sidx)
                .wrapping_add(unzigzag(self.varint()?) as u64);
            self.pred.update(sidx, base);
            out.addrs[0] = base;
            out.stride = None;
            match mode {
                0 => {
                    let stride = unzigzag(self.varint()?) as u64;
                    for i in 1..n as usize {
                        out.addrs[i] = out.addrs[i - 1].wrapping_add(stride);
                    }
                    // An ascending run that does not wrap is a progression.
                    let wraps = (n as u64 - 1)
                        .checked_mul(stride)
                        .and_then(|x| base.checked_add(x))
                        .is_none();
                    if !wraps {
                        out.stride = Some(stride);
                    }
                }
                1 => {
                    let slot = self.next_slot;
                    self.next_slot = (slot + 1) % PATTERNS;
                    for i in 1..n as usize {
                        let d = unzigzag(self.varint()?) as u64;
                        out.addrs[i] = out.addrs[i - 1].wrapping_add(d);
                    }
                    // The block's deltas, kept for mode-2 references to it.
                    let last = self
                        .last
                        .get_or_insert_with(|| Box::new([[0; 31]; PATTERNS]));
                    for i in 1..n as usize {
                        last[slot][i - 1] = out.addrs[i].wrapping_sub(out.addrs[i - 1]);
                    }
                    self.last_len[slot] = n as usize - 1;
                }
                2 => {
                    let Some(&slot) = self.bytes.get(self.pos) else {
                        return Err(DecodeError("stream ends inside a pattern reference".into()));
                    };
                    self.pos += 1;
                    let slot = slot as usize;
                    // (A known pattern was written by a mode-1 block: `last` exists.)
                    let last = match &self.last {
                        Some(l) if slot < PATTERNS && self.last_len[slot] == n as usize - 1 => l,
                        _ => {
                            return Err(DecodeError(
                                "reference to an unknown address pattern".into(),
                            ))
                        }
                    };
                    for i in 1..n as usize {
                        out.addrs[i] = out.addrs[i - 1].wrapping_add(last[slot][i - 1]);
                    }
                }
                m => return Err(DecodeError(format!("unknown address mode {m}"))),
            }
        }
        self.remaining -= 1;
        Ok(true)
    }

    /// [`WarpStream::next_plain`](crate::trace::source::WarpStream::next_plain): decodes
    /// into `out` the next instructions without an address block (`is_mem` false, or an
    /// empty mask), leaving the decoder where [`Self::next`] would have left it after them;
    /// stops, with the decoder untouched, before one with addresses or bad input.
    pub fn next_plain(
        &mut self,
        out: &mut [(u32, u32)],
        is_mem: impl Fn(u32) -> Option<bool>,
    ) -> usize {
        let mut k = 0;
        while k < out.len() && self.remaining > 0 {
            let pos = self.pos;
            let Ok(h) = self.varint() else {
                self.pos = pos;
                break;
            };
            let sidx = (self.prev_sidx as i64 + 1).wrapping_add(unzigzag(h >> 1));
            let Some(mem) = u32::try_from(sidx).ok().and_then(&is_mem) else {
                self.pos = pos;
                break;
            };
            let mut mask = self.prev_mask;
            if h & 1 == 1 {
                let Some(b) = self.bytes.get(self.pos..self.pos + 4) else {
                    self.pos = pos;
                    break;
                };
                mask = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                self.pos += 4;
            }
            if mem && mask != 0 {
                self.pos = pos;
                break;
            }
            self.prev_mask = mask;
            self.prev_sidx = sidx as u32;
            self.remaining -= 1;
            out[k] = (sidx as u32, mask);
            k += 1;
        }
        k
    }

    /// True when every byte was consumed (checked after the last instruction).
    pub fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

/// A [`WarpStream`](crate::trace::source::WarpStream) over encoded bytes (a `.gmt` map or
/// an in-memory [`EncKernel`](crate::trace::enc::EncKernel)).
/// (`repr(C)`, cache-line aligned: `has_mem`, `len` and the decoder's per-instruction
/// fields share the first line.)
#[repr(C, align(64))]
pub struct EncodedWarp<'a> {
    has_mem: &'a [bool],
    len: u64,
    dec: Decoder<'a>,
}

impl<'a> EncodedWarp<'a> {
    /// `has_mem[sidx]` tells which static instructions carry addresses.
    pub fn new(bytes: &'a [u8], insts: u64, has_mem: &'a [bool]) -> Self {
        EncodedWarp {
            dec: Decoder::new(bytes, insts),
            has_mem,
            len: insts,
        }
    }
}

impl crate::trace::source::WarpStream for EncodedWarp<'_> {
    #[inline]
    fn next_inst(&mut self, out: &mut DynInst) -> Result<bool, DecodeError> {
        let has_mem = self.has_mem;
        let more = self.dec.next(out, |s| has_mem.get(s as usize).copied())?;
        if !more && !self.dec.at_end() {
            return Err(DecodeError(
                "warp stream has bytes after its last instruction".into(),
            ));
        }
        Ok(more)
    }
    #[inline]
    fn next_plain(&mut self, out: &mut [(u32, u32)]) -> usize {
        let has_mem = self.has_mem;
        self.dec
            .next_plain(out, |s| has_mem.get(s as usize).copied())
    }
    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_mixed() {
        let mem = |s: u32| Some(s.is_multiple_of(3));
        let mut insts = Vec::new();
        for i in 0..200u32 {
            let sidx = (i * 7) % 11;
            let mask = if i % 5 == 0 { 0x0000_ffff } else { u32::MAX };
            let n = if sidx % 3 == 0 { mask.count_ones() } else { 0 };
            let mut d = DynInst {
                sidx,
                mask,
                n: n as u8,
                ..Default::default()
            };
            for l in 0..n as usize {
                d.addrs[l] =
                    (0x7f00_0000_0000 + (i as u64) * 4096 + (l as u64 * 4)) ^ (i as u64 % 7);
            }
            insts.push(d);
        }
        let mut enc = Encoder::new();
        let mut buf = Vec::new();
        for d in &insts {
            enc.push(&mut buf, d.sidx, d.mask, d.addrs());
        }
        let mut dec = Decoder::new(&buf, insts.len() as u64);
        let mut out = DynInst::default();
        for d in &insts {
            assert!(dec.next(&mut out, mem).unwrap());
            assert_eq!(&out, d);
        }
        assert!(!dec.next(&mut out, mem).unwrap());
        assert!(dec.at_end());
    }

    /// The stride mode gives a stride hint when the run ascends without wrapping, and only
    /// then.
    #[test]
    fn stride_mode_hints_only_plain_progressions() {
        let cases: [(u64, u64, bool); 4] = [
            (0x1000, 16, true),
            (0x1000, 0, true),
            (0x1000, 4u64.wrapping_neg(), false),
            (u64::MAX - 40, 4, false),
        ];
        let mut enc = Encoder::new();
        let mut buf = Vec::new();
        let runs: Vec<Vec<u64>> = cases
            .iter()
            .map(|&(a0, s, _)| (0..32).map(|i| a0.wrapping_add(i * s)).collect())
            .collect();
        for (i, r) in runs.iter().enumerate() {
            enc.push(&mut buf, i as u32, u32::MAX, r);
        }
        let mut dec = Decoder::new(&buf, cases.len() as u64);
        let mut out = DynInst::default();
        for (&(_, s, hinted), r) in cases.iter().zip(&runs) {
            assert!(dec.next(&mut out, |_| Some(true)).unwrap());
            assert_eq!(out.addrs(), &r[..]);
            assert_eq!(out.stride, hinted.then_some(s));
        }
    }

    #[test]
    fn repeated_patterns_cost_a_few_bytes() {
        // Half-warp broadcast, as in tiled shared-memory loads.
        let pattern = |base: u64| -> Vec<u64> {
            (0..32)
                .map(|l| base + if l < 16 { 0 } else { 128 })
                .collect()
        };
        let mut enc = Encoder::new();
        let mut buf = Vec::new();
        for i in 0..10u32 {
            enc.push(&mut buf, i, u32::MAX, &pattern(4 * i as u64));
        }
        assert!(buf.len() < 40 + 9 * 4, "{} bytes", buf.len());
        let mut dec = Decoder::new(&buf, 10);
        let mut out = DynInst::default();
        for i in 0..10u32 {
            assert!(dec.next(&mut out, |_| Some(true)).unwrap());
            assert_eq!(out.addrs(), &pattern(4 * i as u64)[..]);
        }
        assert!(dec.at_end());
    }

    /// What a consumer sees: each instruction's (static index, mask, addresses), and the
    /// index of the first error (`None`: the stream ended cleanly).
    type Seen = (Vec<(u32, u32, Vec<u64>)>, Option<usize>);

    /// [`Seen`] decoding one instruction at a time (`batch` 0), or taking the instructions
    /// without addresses `batch` at a time through `next_plain` wherever it offers them (as
    /// an SM's warp slot does).
    fn decode_all(
        buf: &[u8],
        n: u64,
        mem: impl Fn(u32) -> Option<bool> + Copy,
        batch: usize,
    ) -> Seen {
        let mut dec = Decoder::new(buf, n);
        let mut out = DynInst::default();
        let mut ahead = vec![(0u32, 0u32); batch];
        let mut seen = Vec::new();
        loop {
            match dec.next(&mut out, mem) {
                Ok(true) => seen.push((out.sidx, out.mask, out.addrs().to_vec())),
                Ok(false) => return (seen, None),
                Err(_) => {
                    let at = seen.len();
                    return (seen, Some(at));
                }
            }
            if out.n == 0 && batch > 0 {
                let k = dec.next_plain(&mut ahead, mem);
                seen.extend(ahead[..k].iter().map(|&(s, m)| (s, m, Vec::new())));
            }
        }
    }

    /// Decoding instructions without addresses ahead gives the consumer the same
    /// instructions, and the same first error, as decoding one at a time: on a mixed
    /// stream (empty masks on memory instructions included), on every truncation of it and
    /// on random byte corruptions, in batches of 1 to 8.
    #[test]
    fn decoding_ahead_matches_one_at_a_time() {
        let mem = |s: u32| (s < 11).then_some(s.is_multiple_of(3));
        let mut enc = Encoder::new();
        let mut buf = Vec::new();
        let mut count = 0u64;
        for i in 0..120u32 {
            let sidx = (i * 7) % 11;
            let mask = match i % 9 {
                0 => 0,
                1 | 2 => 0x0000_ffff,
                _ => u32::MAX,
            };
            let addrs: Vec<u64> = if mem(sidx) == Some(true) {
                (0..mask.count_ones() as u64)
                    .map(|l| 0x10_0000 + i as u64 * 512 + l * 4 * (1 + i as u64 % 3))
                    .collect()
            } else {
                Vec::new()
            };
            enc.push(&mut buf, sidx, mask, &addrs);
            count += 1;
        }
        let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
        let mut cases: Vec<Vec<u8>> = (0..=buf.len()).map(|l| buf[..l].to_vec()).collect();
        for _ in 0..300 {
            let mut b = buf.clone();
            for _ in 0..1 + rng.next_u64() % 3 {
                let at = (rng.next_u64() % b.len() as u64) as usize;
                b[at] = rng.next_u64() as u8;
            }
            cases.push(b);
        }
        let mut full = 0;
        for b in &cases {
            let want = decode_all(b, count, mem, 0);
            full += (want.1.is_none() && want.0.len() == count as usize) as u32;
            for batch in 1..=8 {
                assert_eq!(decode_all(b, count, mem, batch), want, "batch {batch}");
            }
        }
        assert!(full >= 1, "the intact stream decodes whole");
    }

    #[test]
    fn corrupt_bytes_are_errors() {
        let mut out = DynInst::default();
        let mut dec = Decoder::new(&[0xff, 0xff], 3);
        assert!(dec.next(&mut out, |_| Some(false)).is_err());
        let mut dec = Decoder::new(&[0x08], 1);
        assert!(dec.next(&mut out, |s| (s < 2).then_some(false)).is_err());
    }
}
