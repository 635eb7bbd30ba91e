//! A hand-written reader of the common Accel-Sim instruction lines (no `tb`/warp prefix,
//! no line number, no `Val|NoVal` tail): the same grammar and values as the nom grammar
//! of [`super::line`], a byte at a time, without its combinators. It only ever accepts
//! what that grammar accepts, with the same result; on anything else (another dialect, a
//! malformed or out-of-range field) it gives up and the caller runs the nom grammar,
//! which names the field in its error.

use super::line::{Dialect, InstLine};
use crate::trace::inst::{reg, MAX_SRC};

/// A blank (the grammar's separators: space, tab, carriage return) in [`CLASS`].
const SP: u8 = 0x40;
/// Per byte: its hex digit value (0-15), [`SP`] for a blank, 0x80 otherwise.
const CLASS: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t[b' ' as usize] = SP;
    t[b'\t' as usize] = SP;
    t[b'\r' as usize] = SP;
    t
};

/// A position in one line. Each of the grammar's fields is a whole blank-separated
/// token: its parsers never read a blank, and it requires a blank or the line's end after
/// what they read.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    fn class(&self, i: usize) -> u8 {
        CLASS[self.b[i] as usize]
    }

    /// Skips blanks; false at the end of the line.
    #[inline(always)]
    fn skip(&mut self) -> bool {
        while self.i < self.b.len() {
            if self.class(self.i) != SP {
                return true;
            }
            self.i += 1;
        }
        false
    }

    /// The field ends at `i`: the line's end or a blank.
    #[inline(always)]
    fn ends_at(&self, i: usize) -> bool {
        i >= self.b.len() || self.class(i) == SP
    }

    /// A whole field of 1 to `max` digits of base `base` (10 or 16) from `i` on: taken
    /// (the cursor moved past it) when the field ends there, `None` otherwise. The value
    /// is exact for up to 16 hex or 19 decimal digits.
    #[inline(always)]
    fn take(&mut self, mut i: usize, base: u8, max: usize) -> Option<u64> {
        let start = i;
        let mut v = 0u64;
        while i < self.b.len() {
            let c = self.class(i);
            if c >= base {
                break;
            }
            v = v.wrapping_mul(base as u64).wrapping_add(c as u64);
            i += 1;
        }
        if i == start || i - start > max || !self.ends_at(i) {
            return None;
        }
        self.i = i;
        Some(v)
    }

    /// An optional `0x`, then 1 to 16 hex digits.
    #[inline(always)]
    fn hex(&mut self) -> Option<u64> {
        self.skip();
        let mut i = self.i;
        if self.b[i..].starts_with(b"0x") {
            i += 2;
        }
        self.take(i, 16, 16)
    }

    /// The all-lanes mask `ffffffff` (most lines' mask) as its own field: read at once.
    #[inline(always)]
    fn full_mask(&mut self) -> bool {
        self.skip();
        let e = self.i + 8;
        if self.b[self.i..].starts_with(b"ffffffff") && self.ends_at(e) {
            self.i = e;
            return true;
        }
        false
    }

    /// 1 to 19 decimal digits from `i` (longer runs are left to the nom grammar) ending
    /// the field.
    #[inline(always)]
    fn digits(&mut self, i: usize) -> Option<u64> {
        // One digit, then the field's end (counts, widths, low register numbers).
        if i < self.b.len() {
            let c = self.class(i);
            if c < 10 && self.ends_at(i + 1) {
                self.i = i + 1;
                return Some(c as u64);
            }
        }
        self.take(i, 10, 19)
    }

    /// An unsigned decimal that fits 32 bits.
    #[inline(always)]
    fn dec_u32(&mut self) -> Option<u32> {
        self.skip();
        u32::try_from(self.digits(self.i)?).ok()
    }

    /// An optionally signed decimal that fits 64 bits. (The most negative value is left
    /// to the nom grammar.)
    #[inline(always)]
    fn dec_i64(&mut self) -> Option<i64> {
        if !self.skip() {
            return None;
        }
        let (neg, i) = match self.b[self.i] {
            b'-' => (true, self.i + 1),
            b'+' => (false, self.i + 1),
            _ => (false, self.i),
        };
        let v = i64::try_from(self.digits(i)?).ok()?;
        Some(if neg { -v } else { v })
    }

    /// `R`/`UR`/`P`/`UP` and a register number.
    #[inline(always)]
    fn register(&mut self) -> Option<u16> {
        self.skip();
        let (kind, len) = match self.b[self.i..] {
            [b'R', ..] => (reg::KIND_R, 1),
            [b'P', ..] => (reg::KIND_P, 1),
            [b'U', b'R', ..] => (reg::KIND_UR, 2),
            [b'U', b'P', ..] => (reg::KIND_UP, 2),
            _ => return None,
        };
        let n = self.digits(self.i + len)?;
        (n <= reg::NUM_MASK as u64).then(|| reg::encode(kind, n as u16))
    }

    /// A run of non-blanks (at least one).
    #[inline(always)]
    fn token(&mut self) -> Option<&'a [u8]> {
        if !self.skip() {
            return None;
        }
        let start = self.i;
        while self.i < self.b.len() && self.class(self.i) != SP {
            self.i += 1;
        }
        Some(&self.b[start..self.i])
    }

    /// Something other than blanks follows.
    #[inline(always)]
    fn token_ahead(&mut self) -> bool {
        self.skip()
    }
}

/// Parses `line` into `out` as [`super::line::parse_line_into`] would, if it is in the
/// common form; `None` (with `out` partly written) otherwise.
#[inline]
pub(super) fn parse<'a>(line: &'a [u8], d: &Dialect, out: &mut InstLine<'a>) -> Option<()> {
    if d.prefix || d.lineinfo || d.vals {
        return None;
    }
    let mut c = Cur { b: line, i: 0 };
    let pc = u32::try_from(c.hex()?).ok()?;
    let mask = if c.full_mask() {
        u32::MAX
    } else {
        u32::try_from(c.hex()?).ok()?
    };
    let dst = match c.dec_u32()? {
        0 => reg::NONE,
        1 => c.register()?,
        _ => return None,
    };
    let opcode = c.token()?;
    if !opcode[0].is_ascii_uppercase() {
        return None;
    }
    let nsrc = c.dec_u32()? as usize;
    if nsrc > MAX_SRC {
        return None;
    }
    let mut src = [reg::NONE; MAX_SRC];
    for s in src.iter_mut().take(nsrc) {
        *s = c.register()?;
    }
    let mem_width = c.dec_u32()?;
    out.set_head(pc, mask, dst, opcode, (src, nsrc as u8), mem_width);
    if mem_width > 0 {
        addresses(&mut c, mask, out)?;
    }
    if d.imms >= 1 && c.token_ahead() {
        out.imm = i32::try_from(c.dec_i64()?).ok()?;
    }
    if d.imms >= 2 && c.token_ahead() {
        out.imm2 = i32::try_from(c.dec_i64()?).ok()?;
    }
    (!c.token_ahead()).then_some(())
}

/// The address block of a memory instruction with active mask `mask`: mode 0 (one hex
/// address per active lane), 1 (base and stride) or 2 (base and deltas).
#[inline]
fn addresses(c: &mut Cur<'_>, mask: u32, out: &mut InstLine<'_>) -> Option<()> {
    let k = mask.count_ones() as usize;
    match c.dec_u32()? {
        0 => {
            for a in out.addrs.iter_mut().take(k) {
                *a = c.hex()?;
            }
        }
        1 => {
            let base = c.hex()?;
            let stride = c.dec_i64()?;
            for (l, a) in out.addrs.iter_mut().take(k).enumerate() {
                *a = base.wrapping_add((stride as u64).wrapping_mul(l as u64));
            }
        }
        2 => {
            let base = c.hex()?;
            if k > 0 {
                out.addrs[0] = base;
            }
            for l in 1..k {
                let delta = c.dec_i64()?;
                out.addrs[l] = out.addrs[l - 1].wrapping_add(delta as u64);
            }
        }
        _ => return None,
    }
    out.n_addrs = k as u8;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of a parsed line, comparable.
    type Key = (
        (u32, u32, u16),
        Vec<u8>,
        Vec<u16>,
        u32,
        Vec<u64>,
        (i32, i32),
    );

    fn key(l: &InstLine<'_>) -> Key {
        (
            (l.pc, l.mask, l.dst),
            l.opcode.to_vec(),
            l.src[..l.nsrc as usize].to_vec(),
            l.mem_width,
            l.addrs[..l.n_addrs as usize].to_vec(),
            (l.imm, l.imm2),
        )
    }

    /// What the nom grammar alone makes of `line`.
    fn nom(line: &[u8], d: &Dialect) -> Option<InstLine<'static>> {
        let line: &'static [u8] = Box::leak(line.to_vec().into_boxed_slice());
        let mut out = InstLine::empty();
        super::super::line::parse_fields_for_test(line, d, &mut out).then_some(out)
    }

    fn check(line: &[u8], d: &Dialect) -> bool {
        let mut q = InstLine::empty();
        let got = parse(line, d, &mut q);
        let want = nom(line, d);
        if got.is_some() {
            let w = want.unwrap_or_else(|| {
                panic!(
                    "quick accepts what nom rejects: {}",
                    String::from_utf8_lossy(line)
                )
            });
            assert_eq!(key(&q), key(&w), "{}", String::from_utf8_lossy(line));
        }
        got.is_some()
    }

    #[test]
    fn common_lines_take_the_quick_path() {
        let d = Dialect::default();
        let v5 = Dialect { imms: 2, ..d };
        for l in [
            &b"0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0 "[..],
            b"00c0 ffffffff 1 R12 FFMA 3 R12 R5 R6 0",
            b"01d0 6190a142 1 R14 LDG.E.U8 1 R14 1 2 0x7fc84152273c 1488 576 -2866 2843 -1699 294 -954 1434 -1860 ",
            b"0070 ffffffff 1 R8 LDG.E.SYS 1 R2 4 1 0x7f2000000000 4",
            b"0070 0000000f 0 STG.E 2 UR2 P0 4 0 0x10 0x20 0xffffffffffffffff 0x1 ",
            b"01f0 00000000 1 UP7 LDG.E 1 R4 4 1 0x0 -8 ",
            b"\t0000\tffffffff 0 EXIT 0 0\r",
        ] {
            assert!(check(l, &d), "{}", String::from_utf8_lossy(l));
        }
        assert!(check(b"00e0 0000ffff 1 R2 IADD3 2 R7 R255 0 -1 +7", &v5));
        assert!(check(b"00e0 0000ffff 1 R2 IADD3 2 R7 R255 0", &v5));
    }

    #[test]
    fn never_accepts_what_the_grammar_rejects() {
        let d = Dialect::default();
        let v5 = Dialect { imms: 2, ..d };
        // Every field malformed or out of range in turn: the quick reader declines or
        // agrees with the grammar.
        for l in [
            &b"00zz ffffffff 0 EXIT 0 0 "[..],
            b"100000000 ffffffff 0 EXIT 0 0",
            b"0 1ffffffff 0 EXIT 0 0",
            b"0 0x 0 EXIT 0 0",
            b"0 11112222333344445 0 EXIT 0 0",
            b"0 f 2 R1 EXIT 0 0",
            b"0 f 1 X1 EXIT 0 0",
            b"0 f 1 R16384 EXIT 0 0",
            b"0 f 1 R16383 EXIT 0 0",
            b"0 f 1 R70000 EXIT 0 0",
            b"0 f 1 UX1 EXIT 0 0",
            b"0 f 1 R1a EXIT 0 0",
            b"0 f 0 exit 0 0",
            b"0 f 0 EXIT 7 R1 R2 R3 R4 R5 R6 R7 0",
            b"0 f 0 EXIT 1 R1",
            b"0 f 0 EXIT 0 4294967296",
            b"0 f 0 EXIT 0 4294967295 0 0x1 0x2 0x3 0x4",
            b"0 f 0 LDG 0 4 0 0x1 0x2 0x3",
            b"0 f 0 LDG 0 4 3 0x1",
            b"0 f 0 LDG 0 4 1 0x1",
            b"0 f 0 LDG 0 4 1 0x1 9223372036854775808",
            b"0 f 0 LDG 0 4 2 0x1 -9223372036854775808 1 1",
            b"0 f 0 LDG 0 4 2 0x1 - 1 1",
            b"0 f 0 EXIT 0 0 7",
            b"0 f 0 EXIT 0 0 -2147483649",
            b"0 f 0 EXIT 0 0 2147483647 -2147483648 1",
            b"",
            b"0",
        ] {
            check(l, &d);
            check(l, &v5);
        }
    }

    #[test]
    fn random_lines_agree_with_the_grammar() {
        let pieces: [&[u8]; 24] = [
            b"0",
            b"1",
            b"2",
            b"4",
            b"f",
            b"0x",
            b"ffffffff",
            b"R1",
            b"UR4",
            b"P0",
            b"UP2",
            b"R255",
            b"FFMA",
            b"LDG.E",
            b"-3",
            b"+2",
            b"0x7f00",
            b"x",
            b" ",
            b"\t",
            b"32",
            b"99999999999999999999",
            b"-",
            b"1a",
        ];
        let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
        let d = Dialect::default();
        let v5 = Dialect { imms: 2, ..d };
        let mut accepted = 0;
        for _ in 0..20_000 {
            // A valid head, then a random tail.
            let mut l = if rng.next_u64().is_multiple_of(2) {
                b"00f0 0000000f 1 R3 LDG.E 2 R4 UR1 4".to_vec()
            } else {
                b"00f0 0000000f 1 R3 FFMA 2 R4 UR1 0".to_vec()
            };
            let n = rng.next_u64() % 8;
            for _ in 0..n {
                l.push(b' ');
                l.extend_from_slice(pieces[(rng.next_u64() % 24) as usize]);
            }
            accepted += check(&l, &d) as u32 + check(&l, &v5) as u32;
        }
        assert!(accepted > 100, "{accepted}");
    }
}
