//! The thread-block section of a `.traceg`: `#BEGIN_TB`, `thread block = x,y,z`,
//! (`warp = j`, `insts = n`, n instruction lines)*, `#END_TB`. A chunk of whole thread blocks
//! is parsed independently (so chunks run in parallel) into encoded warp streams that index a
//! chunk-local static table.

use super::line::{parse_line_into, Dialect, InstLine};
use super::seen::Seen;
use crate::trace::gmt::codec::Encoder;
use crate::trace::inst::StaticTable;
use crate::trace::isa::IsaGen;
use crate::trace::statics::{RawStatic, StaticBuilder};

/// One warp's encoded stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncWarp {
    pub insts: u64,
    pub bytes: Vec<u8>,
}

/// One thread block's encoded warps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncCta {
    pub id: [u32; 3],
    pub warps: Vec<EncWarp>,
}

/// What a chunk parse yields.
pub struct ChunkResult {
    pub statics: StaticTable,
    pub unknown_opcodes: Vec<String>,
    pub ctas: Vec<EncCta>,
    /// 0-based line index (within the chunk) of each CTA's `thread block =` line.
    pub cta_lines: Vec<u64>,
    /// Newlines in the chunk.
    pub lines: u64,
    pub inst_lines: u64,
}

/// Static facts the chunk parser checks lines against.
#[derive(Clone, Copy, Debug)]
pub struct BodyCtx {
    pub dialect: Dialect,
    pub gen: IsaGen,
    pub lenient: bool,
    pub grid: [u32; 3],
    pub warps_per_cta: u32,
}

struct OpenWarp {
    index: u32,
    declared: Option<(u64, u64)>, // (count, line of `insts =`)
    enc: Encoder,
    bytes: Vec<u8>,
}

struct OpenCta {
    id: Option<([u32; 3], u64)>,
    warps: Vec<EncWarp>,
    cur: Option<OpenWarp>,
}

/// Error with a 0-based line index within the chunk.
pub type ChunkError = (u64, String);

fn close_warp(cta: &mut OpenCta, line: u64) -> Result<(), ChunkError> {
    if let Some(w) = cta.cur.take() {
        let (declared, at) = w
            .declared
            .ok_or_else(|| (line, format!("warp {} has no 'insts = N' line", w.index)))?;
        if declared != w.enc.count {
            return Err((
                at,
                format!(
                    "warp {} declares insts = {declared} but {} instruction lines follow",
                    w.index, w.enc.count
                ),
            ));
        }
        while cta.warps.len() < w.index as usize {
            cta.warps.push(EncWarp::default());
        }
        cta.warps.push(EncWarp {
            insts: w.enc.count,
            bytes: w.bytes,
        });
    }
    Ok(())
}

fn value_after<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let rest = line.strip_prefix(key)?;
    let rest = rest.trim_ascii_start().strip_prefix(b"=")?;
    Some(rest.trim_ascii())
}

fn dec(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |a, &b| a * 10 + (b - b'0') as u64))
}

/// The coordinates of a `thread block = x,y,z` line `t` (line `this`), inside `grid`.
fn block_id(t: &[u8], this: u64, grid: [u32; 3]) -> Result<[u32; 3], ChunkError> {
    let v = value_after(t, b"thread block")
        .ok_or_else(|| err(this, "expected 'thread block = x,y,z'"))?;
    let mut id = [0u32; 3];
    let parts: Vec<&[u8]> = v.split(|&b| b == b',').collect();
    if parts.len() != 3 {
        return Err((this, "expected 'thread block = x,y,z'".into()));
    }
    for (k, p) in parts.iter().enumerate() {
        let n = dec(p.trim_ascii()).ok_or_else(|| {
            err(
                this,
                "expected 'thread block = x,y,z' with decimal coordinates",
            )
        })?;
        if n >= grid[k] as u64 {
            return Err((
                this,
                format!(
                    "thread block coordinate {n} is outside the grid {:?} of the header",
                    grid
                ),
            ));
        }
        id[k] = n as u32;
    }
    Ok(id)
}

/// A chunk error at `line` with a fixed message.
fn err(line: u64, msg: &str) -> ChunkError {
    (line, msg.to_string())
}

/// A `#BEGIN_TB` or `#END_TB` line `t` (line `this`): opens a block in `cta`, or closes it
/// into `ctas` (and its `thread block` line into `cta_lines`).
#[inline]
fn tb_marker(
    t: &[u8],
    this: u64,
    cta: &mut Option<OpenCta>,
    ctas: &mut Vec<EncCta>,
    cta_lines: &mut Vec<u64>,
) -> Result<(), ChunkError> {
    if t == b"#BEGIN_TB" {
        if cta.is_some() {
            return Err((
                this,
                "expected '#END_TB' before the next '#BEGIN_TB'".into(),
            ));
        }
        *cta = Some(OpenCta {
            id: None,
            warps: Vec::new(),
            cur: None,
        });
    } else if t == b"#END_TB" {
        let Some(mut c) = cta.take() else {
            return Err((this, "'#END_TB' without a matching '#BEGIN_TB'".into()));
        };
        close_warp(&mut c, this)?;
        let (id, at) =
            c.id.ok_or_else(|| err(this, "thread block has no 'thread block = x,y,z' line"))?;
        ctas.push(EncCta { id, warps: c.warps });
        cta_lines.push(at);
    } else {
        return Err((
            this,
            format!(
                "expected '#BEGIN_TB' or '#END_TB', found '{}'",
                String::from_utf8_lossy(&t[..t.len().min(40)])
            ),
        ));
    }
    Ok(())
}

/// A `warp = N` line `t` (line `this`): closes the open warp of `cta` and opens warp N.
#[inline]
fn open_warp(
    t: &[u8],
    this: u64,
    cta: Option<&mut OpenCta>,
    ctx: &BodyCtx,
) -> Result<(), ChunkError> {
    let c = cta.ok_or_else(|| err(this, "'warp' line outside a thread block"))?;
    let v = value_after(t, b"warp")
        .and_then(dec)
        .ok_or_else(|| err(this, "expected 'warp = N'"))?;
    close_warp(c, this)?;
    if v >= ctx.warps_per_cta as u64 {
        return Err((
            this,
            format!(
                "warp {v} does not exist in a block of {} warps (header '-block dim')",
                ctx.warps_per_cta
            ),
        ));
    }
    if (v as usize) < c.warps.len() {
        return Err((
            this,
            format!("warp {v} appears twice or out of order in this thread block"),
        ));
    }
    c.cur = Some(OpenWarp {
        index: v as u32,
        declared: None,
        enc: Encoder::new(),
        bytes: Vec::new(),
    });
    Ok(())
}

/// Parses instruction line `t` (line `this`) into `l` and interns its static part; returns
/// its static index.
#[inline(always)]
fn parse_new_line<'a>(
    t: &'a [u8],
    this: u64,
    ctx: &BodyCtx,
    l: &mut InstLine<'a>,
    statics: &mut StaticBuilder,
) -> Result<u32, ChunkError> {
    // The common line form by hand; every other dialect, and every error message, by the
    // grammar.
    if super::quick::parse(t, &ctx.dialect, l).is_none() {
        parse_line_into(t, &ctx.dialect, l).map_err(|m| (this, m.0))?;
    }
    statics
        .intern(&RawStatic {
            pc: l.pc,
            opcode: l.opcode,
            dst: l.dst,
            src: l.src,
            nsrc: l.nsrc,
            imm: l.imm,
            imm2: l.imm2,
            has_mem: l.mem_width > 0,
        })
        .map_err(|m| (this, m.to_string()))
}

/// Parses a chunk of whole thread blocks.
pub fn parse_chunk(bytes: &[u8], ctx: &BodyCtx) -> Result<ChunkResult, ChunkError> {
    let mut statics = StaticBuilder::new(ctx.gen, ctx.lenient);
    let mut ctas = Vec::new();
    let mut cta_lines = Vec::new();
    let mut cta: Option<OpenCta> = None;
    let mut line_idx = 0u64;
    let mut pos = 0;
    let mut inst_lines = 0u64;
    // One parsed line, reused (its address block is not copied per line).
    let mut l = InstLine::empty();
    let mut seen = Seen::new();
    while pos < bytes.len() {
        // A line met before in this chunk, byte for byte, inside a warp: its parse again.
        if let Some((n, sidx, mask, addrs)) = seen.get_at(bytes, pos) {
            let open = cta.as_mut().and_then(|c| c.cur.as_mut());
            if let Some(w) = open.filter(|w| w.declared.is_some()) {
                w.enc.push(&mut w.bytes, sidx, mask, addrs);
                inst_lines += 1;
                line_idx += 1;
                pos += n + 1;
                continue;
            }
        }
        let end = memchr::memchr(b'\n', &bytes[pos..])
            .map(|e| pos + e)
            .unwrap_or(bytes.len());
        let line = &bytes[pos..end];
        let this = line_idx;
        pos = end + 1;
        line_idx += 1;
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        match t[0] {
            b'#' => tb_marker(t, this, &mut cta, &mut ctas, &mut cta_lines)?,
            b't' => {
                let c = cta.as_mut().ok_or_else(|| {
                    err(this, "'thread block' line outside '#BEGIN_TB'/'#END_TB'")
                })?;
                if c.id.is_some() {
                    return Err((
                        this,
                        "a second 'thread block = x,y,z' line in one '#BEGIN_TB' section".into(),
                    ));
                }
                let id = block_id(t, this, ctx.grid)?;
                c.id = Some((id, this));
            }
            b'c' if t.starts_with(b"cluster") => {
                if cta.is_none() {
                    return Err((this, "'cluster' line outside a thread block".into()));
                }
            }
            b'w' if t.starts_with(b"warp") => open_warp(t, this, cta.as_mut(), ctx)?,
            b'i' if t.starts_with(b"insts") => {
                let w = cta
                    .as_mut()
                    .and_then(|c| c.cur.as_mut())
                    .ok_or_else(|| err(this, "'insts' line before a 'warp = N' line"))?;
                let v = value_after(t, b"insts")
                    .and_then(dec)
                    .ok_or_else(|| err(this, "expected 'insts = N'"))?;
                if w.declared.is_some() {
                    return Err((this, "second 'insts' line for one warp".into()));
                }
                w.declared = Some((v, this));
                w.bytes.reserve((v as usize).min(1 << 20) * 2);
            }
            _ => {
                let w = cta.as_mut().and_then(|c| c.cur.as_mut()).ok_or_else(|| {
                    (
                        this,
                        format!(
                            "instruction line outside a warp: '{}'",
                            String::from_utf8_lossy(&t[..t.len().min(40)])
                        ),
                    )
                })?;
                if w.declared.is_none() {
                    return Err((
                        this,
                        "instruction line before the warp's 'insts = N' line".into(),
                    ));
                }
                inst_lines += 1;
                let sidx = parse_new_line(t, this, ctx, &mut l, &mut statics)?;
                seen.keep(line, sidx, l.mask, &l.addrs[..l.n_addrs as usize]);
                w.enc
                    .push(&mut w.bytes, sidx, l.mask, &l.addrs[..l.n_addrs as usize]);
            }
        }
    }
    if cta.is_some() {
        return Err((
            line_idx.saturating_sub(1),
            "trace ends inside a thread block: expected '#END_TB' (truncated file?)".into(),
        ));
    }
    let unknown_opcodes = statics.unknown_opcodes.clone();
    Ok(ChunkResult {
        statics: statics.into_table(),
        unknown_opcodes,
        ctas,
        cta_lines,
        lines: line_idx,
        inst_lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(imms: u8) -> BodyCtx {
        BodyCtx {
            dialect: Dialect {
                imms,
                ..Dialect::default()
            },
            gen: IsaGen::Volta,
            lenient: false,
            grid: [4, 1, 1],
            warps_per_cta: 2,
        }
    }

    /// A block of `warps` warps, each running `lines`.
    fn block(id: u32, warps: u32, lines: &[&str]) -> String {
        let mut s = format!("#BEGIN_TB\nthread block = {id},0,0\n");
        for w in 0..warps {
            s += &format!("warp = {w}\ninsts = {}\n", lines.len());
            for l in lines {
                s += l;
                s += "\n";
            }
        }
        s + "#END_TB\n"
    }

    /// A line met before is still an error where no warp takes it, at its own line.
    #[test]
    fn a_repeated_line_outside_a_warp_is_still_an_error() {
        let c = ctx(1);
        let l = "0010 ffffffff 1 R8 FFMA 3 R8 R5 R6 0";
        let ok = block(0, 1, &[l, l]);
        // After the block's end (line 7 of the chunk, 0-based).
        let text = ok.clone() + l + "\n";
        let e = parse_chunk(text.as_bytes(), &c).err().unwrap();
        assert_eq!(e.0, 7, "{e:?}");
        assert!(e.1.contains("outside a warp"), "{e:?}");
        // Between a warp's `warp =` and its `insts =` lines.
        let text = ok + "#BEGIN_TB\nthread block = 1,0,0\nwarp = 0\n" + l + "\n";
        let e = parse_chunk(text.as_bytes(), &c).err().unwrap();
        assert_eq!(e.0, 10, "{e:?}");
        assert!(e.1.contains("before the warp's 'insts"), "{e:?}");
    }

    /// Repeated lines (remembered by their bytes) encode exactly as the first time: every
    /// warp of a chunk running the same lines gets the same stream and the table the same
    /// statics as one warp alone; lines that differ in a byte (mask, register, address,
    /// immediate) are their own.
    #[test]
    fn repeated_lines_encode_as_the_first() {
        let lines = [
            "0000 ffffffff 1 R1 MOV 0 0",
            "0010 ffffffff 1 R8 FFMA 3 R8 R5 R6 0",
            "0010 0000ffff 1 R8 FFMA 3 R8 R5 R6 0",
            "0010 ffffffff 1 R8 FFMA 3 R8 R5 R7 0",
            "0020 ffffffff 1 R2 LDG.E 1 R4 4 1 0x7f0000000000 4",
            "0020 ffffffff 1 R2 LDG.E 1 R4 4 1 0x7f0000001000 4",
            "0030 00000000 0 STG.E 2 R4 R2 4 1 0x0 4",
            "0040 ffffffff 1 R3 IADD3 2 R3 R2 0 -1",
            "0040 ffffffff 1 R3 IADD3 2 R3 R2 0 7",
            "0050 ffffffff 0 EXIT 0 0",
        ];
        // Every line twice in a row too: the second of each pair is a hit.
        let twice: Vec<&str> = lines.iter().flat_map(|l| [*l, *l]).collect();
        for imms in [1, 2] {
            let c = ctx(imms);
            let one = parse_chunk(block(0, 1, &twice).as_bytes(), &c).unwrap();
            let text = block(0, 2, &twice) + &block(1, 2, &twice);
            let all = parse_chunk(text.as_bytes(), &c).unwrap();
            assert_eq!(all.statics.insts, one.statics.insts);
            assert_eq!(all.inst_lines, 4 * twice.len() as u64);
            for cta in &all.ctas {
                for w in &cta.warps {
                    assert_eq!(w, &one.ctas[0].warps[0]);
                }
            }
        }
    }
}
