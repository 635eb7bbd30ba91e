//! nom grammar of one Accel-Sim instruction line (every dialect, see
//! `trace-formats.md` §4.2): `[prefix] [line] PC MASK NDST [DST] OPCODE NSRC [SRC..] [GMMA]
//! MEM [MODE PAYLOAD] [IMM [IMM2]] [Val|NoVal ...]`.
//!
//! Each field failure reports what was expected at that position, so the caller can
//! print `file:line: expected ...`.

use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{i64 as dec_i64, u32 as dec_u32, u64 as dec_u64};
use nom::{IResult, Parser};

use crate::trace::inst::{reg, MAX_SRC};

/// How the instruction lines of a file are laid out, decided from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Dialect {
    /// Tracer version < 3: lines start with `tb_x tb_y tb_z warp`.
    pub prefix: bool,
    /// `-enable lineinfo = 1`: a leading source line number.
    pub lineinfo: bool,
    /// Trailing immediates (0, 1 or 2) per the `#traces format` line.
    pub imms: u8,
    /// v6 `Val|NoVal` register-value tail.
    pub vals: bool,
}

/// One parsed instruction line. Addresses are those of the active lanes, in lane order.
#[derive(Clone, Debug)]
pub struct InstLine<'a> {
    pub pc: u32,
    pub mask: u32,
    pub dst: u16,
    pub opcode: &'a [u8],
    pub src: [u16; MAX_SRC],
    pub nsrc: u8,
    /// Width written in the line (0 = not a memory instruction).
    pub mem_width: u32,
    pub n_addrs: u8,
    pub addrs: [u64; 32],
    pub imm: i32,
    pub imm2: i32,
}

impl<'a> InstLine<'a> {
    /// Writes the fields before the addresses (both readers, `quick` and the grammar):
    /// no addresses and no immediates yet, the address block left as it is.
    #[inline(always)]
    pub(super) fn set_head(
        &mut self,
        pc: u32,
        mask: u32,
        dst: u16,
        opcode: &'a [u8],
        (src, nsrc): ([u16; MAX_SRC], u8),
        mem_width: u32,
    ) {
        self.pc = pc;
        self.mask = mask;
        self.dst = dst;
        self.opcode = opcode;
        self.src = src;
        self.nsrc = nsrc;
        self.mem_width = mem_width;
        self.n_addrs = 0;
        self.imm = 0;
        self.imm2 = 0;
    }
}

type PResult<'a, T> = IResult<&'a [u8], T>;

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r'
}

fn ws(i: &[u8]) -> &[u8] {
    let n = i.iter().take_while(|&&b| is_space(b)).count();
    &i[n..]
}

/// An optional `0x`, then 1 to 16 hex digits (a longer run leaves its 17th digit
/// unparsed, which `field` rejects).
fn hex_u64(i: &[u8]) -> PResult<'_, u64> {
    let j = i.strip_prefix(b"0x").unwrap_or(i);
    let mut v = 0u64;
    let mut n = 0;
    while let Some(&b) = j.get(n).filter(|_| n < 16) {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        v = (v << 4) | d as u64;
        n += 1;
    }
    if n == 0 {
        return Err(nom::Err::Error(nom::error::Error::new(
            j,
            nom::error::ErrorKind::TakeWhileMN,
        )));
    }
    Ok((&j[n..], v))
}

fn register(i: &[u8]) -> PResult<'_, u16> {
    let (i, kind) = nom::branch::alt((
        tag(&b"UR"[..]).map(|_| reg::KIND_UR),
        tag(&b"UP"[..]).map(|_| reg::KIND_UP),
        tag(&b"R"[..]).map(|_| reg::KIND_R),
        tag(&b"P"[..]).map(|_| reg::KIND_P),
    ))
    .parse(i)?;
    let (i, n) = nom::character::complete::u16.parse(i)?;
    if n > reg::NUM_MASK {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::TooLarge,
        )));
    }
    Ok((i, reg::encode(kind, n)))
}

fn token(i: &[u8]) -> PResult<'_, &[u8]> {
    take_while1(|b: u8| !is_space(b)).parse(i)
}

/// Runs `p` on the input after skipping blanks; on failure names the expected field.
fn field<'a, T>(
    i: &'a [u8],
    what: &str,
    mut p: impl Parser<&'a [u8], Output = T, Error = nom::error::Error<&'a [u8]>>,
) -> Result<(&'a [u8], T), String> {
    let i = ws(i);
    match p.parse(i) {
        Ok((rest, v)) if rest.first().is_none_or(|&b| is_space(b)) => Ok((rest, v)),
        _ => Err(expected(i, what)),
    }
}

fn expected(i: &[u8], what: &str) -> String {
    let found = i
        .iter()
        .take_while(|&&b| !is_space(b))
        .take(40)
        .copied()
        .collect::<Vec<u8>>();
    if found.is_empty() {
        format!("expected {what}, found end of line")
    } else {
        format!(
            "expected {what}, found '{}'",
            String::from_utf8_lossy(&found)
        )
    }
}

impl InstLine<'_> {
    /// A line with nothing in it, to parse into.
    pub fn empty() -> Self {
        InstLine {
            pc: 0,
            mask: 0,
            dst: reg::NONE,
            opcode: &[],
            src: [reg::NONE; MAX_SRC],
            nsrc: 0,
            mem_width: 0,
            n_addrs: 0,
            addrs: [0; 32],
            imm: 0,
            imm2: 0,
        }
    }
}

/// An instruction line that does not parse: what was expected and what was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LineError(pub String);

/// Parses one instruction line. The line must not contain its newline.
pub fn parse_line<'a>(line: &'a [u8], d: &Dialect) -> Result<InstLine<'a>, LineError> {
    let mut out = InstLine::empty();
    parse_line_into(line, d, &mut out)?;
    Ok(out)
}

/// [`parse_line`] into `out`, which a caller reuses line after line (no copy of the
/// address block per line). Every field is written; `addrs` beyond `n_addrs` keep
/// whatever they held. (The body reader tries `quick` first and comes here for every
/// other line and for the error message.)
#[inline]
pub fn parse_line_into<'a>(
    line: &'a [u8],
    d: &Dialect,
    out: &mut InstLine<'a>,
) -> Result<(), LineError> {
    parse_fields(line, d, out).map_err(LineError)
}

/// [`parse_line_into`], its message a plain string.
fn parse_fields<'a>(line: &'a [u8], d: &Dialect, out: &mut InstLine<'a>) -> Result<(), String> {
    let mut i = line;
    if d.prefix {
        for what in [
            "thread block x",
            "thread block y",
            "thread block z",
            "warp id",
        ] {
            (i, _) = field(i, what, dec_u32)?;
        }
    }
    if d.lineinfo {
        (i, _) = field(i, "a source line number", dec_u64)?;
    }
    let (i2, pc) = field(i, "PC (hex)", hex_u64)?;
    if pc > u32::MAX as u64 {
        return Err(format!("PC 0x{pc:x} does not fit in 32 bits"));
    }
    let (i2, mask) = field(i2, "active mask (8 hex digits)", hex_u64)?;
    if mask > u32::MAX as u64 {
        return Err(format!("active mask 0x{mask:x} has more than 32 bits"));
    }
    let mask = mask as u32;
    let (mut i, ndst) = field(i2, "destination count (0 or 1)", dec_u32)?;
    if ndst > 1 {
        return Err(format!("expected destination count 0 or 1, found {ndst}"));
    }
    let mut dst = reg::NONE;
    if ndst == 1 {
        (i, dst) = field(i, "destination register (R/UR/P/UP + number)", register)?;
    }
    let (i2, opcode) = field(i, "opcode", token)?;
    if !opcode[0].is_ascii_uppercase() {
        return Err(expected(ws(i), "opcode (upper-case SASS mnemonic)"));
    }
    let (mut i, nsrc) = field(i2, "source count", dec_u32)?;
    if nsrc as usize > MAX_SRC {
        return Err(format!(
            "expected at most {MAX_SRC} source registers, found {nsrc}"
        ));
    }
    let mut src = [reg::NONE; MAX_SRC];
    for s in src.iter_mut().take(nsrc as usize) {
        (i, *s) = field(i, "source register (R/UR/P/UP + number)", register)?;
    }
    if d.vals && memchr::memmem::find(opcode, b"GMMA").is_some() {
        (i, _) = field(i, "GMMA commit-group flag", dec_u32)?;
    }
    let (mut i, mem_width) = field(i, "memory width in bytes (0 = none)", dec_u32)?;
    out.set_head(pc as u32, mask, dst, opcode, (src, nsrc as u8), mem_width);
    if mem_width > 0 {
        let k = mask.count_ones() as usize;
        let (i2, mode) = field(i, "address mode (0, 1 or 2)", dec_u32)?;
        i = i2;
        match mode {
            0 => {
                for a in out.addrs.iter_mut().take(k) {
                    (i, *a) = field(i, "a hex lane address (address mode 0)", hex_u64)?;
                }
            }
            1 => {
                let (i2, base) = field(i, "base address (hex)", hex_u64)?;
                let (i2, stride) = field(i2, "lane stride (signed decimal)", dec_i64)?;
                i = i2;
                for (l, a) in out.addrs.iter_mut().take(k).enumerate() {
                    *a = base.wrapping_add((stride as u64).wrapping_mul(l as u64));
                }
            }
            2 => {
                let (i2, base) = field(i, "base address (hex)", hex_u64)?;
                i = i2;
                if k > 0 {
                    out.addrs[0] = base;
                }
                for l in 1..k {
                    let (i2, delta) =
                        field(i, "an address delta (signed decimal, mode 2)", dec_i64)?;
                    i = i2;
                    out.addrs[l] = out.addrs[l - 1].wrapping_add(delta as u64);
                }
            }
            3 | 4 => {
                return Err(
                    "TMA address modes 3/4 (Hopper UTMA*/UBLK* lines) are not supported".into(),
                )
            }
            m => return Err(format!("expected address mode 0, 1 or 2, found {m}")),
        }
        out.n_addrs = k as u8;
    }
    // Immediates declared by the format line may be missing at the end of a line: some
    // generators (the reference suite's gen.py) declare `immediate` but write none, and
    // Accel-Sim's own parser ignores the tail of most lines. A present token must parse.
    if d.imms >= 1 && !ws(i).is_empty() {
        let (i2, v) = field(i, "immediate (signed decimal)", dec_i64)?;
        out.imm = imm32(v)?;
        i = i2;
    }
    if d.imms >= 2 && !ws(i).is_empty() {
        let (i2, v) = field(i, "second immediate (signed decimal)", dec_i64)?;
        out.imm2 = imm32(v)?;
        i = i2;
    }
    if d.vals {
        i = skip_values(i, ndst + nsrc)?;
    }
    let rest = ws(i);
    if !rest.is_empty() {
        return Err(format!(
            "unexpected trailing '{}' (the '#traces format' line declares {} immediate(s){})",
            String::from_utf8_lossy(&rest[..rest.len().min(40)]),
            d.imms,
            if d.vals { " and a Val|NoVal tail" } else { "" }
        ));
    }
    Ok(())
}

/// The nom grammar alone (the quick reader's tests compare against it).
#[cfg(test)]
pub(super) fn parse_fields_for_test<'a>(
    line: &'a [u8],
    d: &Dialect,
    out: &mut InstLine<'a>,
) -> bool {
    parse_fields(line, d, out).is_ok()
}

fn imm32(v: i64) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("immediate {v} does not fit in 32 bits"))
}

/// Skips the v6 register-value tail: `NoVal`, or `Val` then per operand `1 HEX` / `32 HEX×32`.
fn skip_values(i: &[u8], operands: u32) -> Result<&[u8], String> {
    let (mut i, t) = field(i, "Val or NoVal", token)?;
    match t {
        b"NoVal" => Ok(i),
        b"Val" => {
            for _ in 0..operands {
                let (i2, n) = field(i, "register value count (1 or 32)", dec_u32)?;
                if n != 1 && n != 32 {
                    return Err(format!("expected register value count 1 or 32, found {n}"));
                }
                i = i2;
                for _ in 0..n {
                    (i, _) = field(i, "a hex register value", hex_u64)?;
                }
            }
            Ok(i)
        }
        _ => Err(expected(ws(i), "Val or NoVal")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V3: Dialect = Dialect {
        prefix: false,
        lineinfo: false,
        imms: 0,
        vals: false,
    };

    #[test]
    fn v3_lines() {
        let l = parse_line(b"0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0 ", &V3).unwrap();
        assert_eq!((l.pc, l.mask, l.nsrc), (0, u32::MAX, 2));
        assert_eq!(l.opcode, b"IMAD.MOV.U32");
        let l = parse_line(
            b"01d0 6190a142 1 R14 LDG.E.U8 1 R14 1 2 0x7fc84152273c 1488 576 -2866 2843 -1699 294 -954 1434 -1860 ",
            &V3,
        )
        .unwrap();
        assert_eq!(l.n_addrs, 10);
        assert_eq!(l.addrs[1], 0x7fc84152273c + 1488);
        let l = parse_line(b"01f0 00000000 1 R7 LDG.E 1 R4 4 1 0x0 0 ", &V3).unwrap();
        assert_eq!((l.mem_width, l.n_addrs), (4, 0));
    }

    #[test]
    fn tails() {
        let v5 = Dialect { imms: 1, ..V3 };
        let l = parse_line(b"00e0 0000ffff 1 R2 IADD3 2 R7 R255 0 -1 ", &v5).unwrap();
        assert_eq!(l.imm, -1);
        // A declared but absent immediate reads as 0; a malformed one is an error.
        assert_eq!(
            parse_line(b"00e0 0000ffff 1 R2 IADD3 2 R7 R255 0 ", &v5)
                .unwrap()
                .imm,
            0
        );
        assert!(parse_line(b"00e0 0000ffff 1 R2 IADD3 2 R7 R255 0 x1 ", &v5).is_err());
        let v6 = Dialect {
            imms: 2,
            vals: true,
            ..V3
        };
        let l = parse_line(b"00e0 ffffffff 1 R0 LOP3.LUT 2 R5 R255 0 3 192 NoVal ", &v6).unwrap();
        assert_eq!((l.imm, l.imm2), (3, 192));
        let l = parse_line(
            b"0050 ffffffff 1 R10 IMAD 3 R10 UR4 R3 0 0 0 Val 1 5 1 6 1 7 1 8 ",
            &v6,
        );
        assert!(l.is_ok(), "{l:?}");
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse_line(b"00zz ffffffff 0 EXIT 0 0 ", &V3).unwrap_err();
        assert!(e.0.contains("PC"), "{e}");
        let e = parse_line(b"0000 ffffffff 1 R1 LDG.E 1 R2 4 1 0x10 ", &V3).unwrap_err();
        assert!(e.0.contains("lane stride"), "{e}");
        let e = parse_line(b"0000 ffffffff 0 EXIT 0 0 7", &V3).unwrap_err();
        assert!(e.0.contains("trailing"), "{e}");
    }
}
