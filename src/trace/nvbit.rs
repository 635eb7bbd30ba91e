//! NVBit example-tool logs: `mem_trace` (LAUNCH and access lines, NVBit ≤1.4 and ≥1.5
//! forms, optional `- pc N -` field of derived tools) and `instr_count`/`opcode_hist`.
//!
//! `mem_trace` records only memory instructions, with 32 addresses per line and no active
//! mask: a lane is taken as active when its address is non-zero. Lines are grouped per
//! (kernel, CTA, hardware warp slot); warps are numbered by slot order within their CTA.
//! Other program output in the log is counted, not parsed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::trace::accel::{EncCta, EncWarp};
use crate::trace::enc::EncKernel;
use crate::trace::gmt::codec::Encoder;
use crate::trace::inst::{reg, KernelInfo, MAX_SRC};
use crate::trace::isa::IsaGen;
use crate::trace::statics::{RawStatic, StaticBuilder};

/// SASS generation assumed for `mem_trace` opcodes (the log does not say).
pub const ASSUMED_BINARY_VERSION: u32 = 80;

/// Registers per thread assumed when a log has no LAUNCH line.
pub const INFERRED_NREGS: u32 = 32;

/// What a `mem_trace` log held.
pub struct MemTrace {
    pub kernels: Vec<EncKernel>,
    pub access_lines: u64,
    /// Lines that are neither LAUNCH nor access lines (the application's own output).
    pub other_lines: u64,
}

struct OpenKernel {
    info: KernelInfo,
    /// No LAUNCH line preceded the accesses: grid and block are inferred at the end.
    inferred: bool,
    statics: StaticBuilder,
    /// CTA → (CTA coordinates, warp slot → encoder and its bytes), keyed by `(z, y, x)`: the launch order of the blocks for any grid, and distinct
    /// blocks never share a key (a linear index over an inferred grid could collide).
    ctas: BTreeMap<(u32, u32, u32), ([u32; 3], WarpStreams)>,
}

type WarpStreams = BTreeMap<u32, (Encoder, Vec<u8>)>;

impl OpenKernel {
    fn finish(mut self) -> EncKernel {
        if self.inferred {
            let mut grid = [1u32; 3];
            let mut warps = 1;
            for (id, ws) in self.ctas.values() {
                for k in 0..3 {
                    grid[k] = grid[k].max(id[k] + 1);
                }
                warps = warps.max(ws.len() as u32);
            }
            self.info.grid = grid;
            self.info.block = [(warps * 32).min(1024), 1, 1];
        }
        let ctas = self
            .ctas
            .into_values()
            .map(|(id, warps)| EncCta {
                id,
                warps: warps
                    .into_values()
                    .map(|(enc, bytes)| EncWarp {
                        insts: enc.count,
                        bytes,
                    })
                    .collect(),
            })
            .collect();
        EncKernel::new(self.info, self.statics.into_table(), ctas)
    }
}

fn dim3(s: &str) -> Option<[u32; 3]> {
    let v: Vec<u32> = s
        .trim()
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// Splits `key value` fields of a ` - `-separated record.
fn field<'a>(parts: &[&'a str], key: &str) -> Option<&'a str> {
    parts
        .iter()
        .find_map(|p| p.trim().strip_prefix(key).map(str::trim))
}

fn parse_launch(rest: &str) -> std::result::Result<KernelInfo, String> {
    let parts: Vec<&str> = rest.split(" - ").collect();
    let name = field(&parts, "Kernel name ")
        .or_else(|| field(&parts, "Kernel "))
        .ok_or("expected 'Kernel name NAME'")?;
    let grid = field(&parts, "grid size ")
        .and_then(dim3)
        .ok_or("expected 'grid size X,Y,Z'")?;
    let block = field(&parts, "block size ")
        .and_then(dim3)
        .ok_or("expected 'block size X,Y,Z'")?;
    let nregs = field(&parts, "nregs ")
        .and_then(|v| v.parse().ok())
        .ok_or("expected 'nregs N'")?;
    let shmem = field(&parts, "shmem ")
        .and_then(|v| v.parse().ok())
        .ok_or("expected 'shmem N'")?;
    let stream_id = field(&parts, "cuda stream id ")
        .and_then(|v| v.parse().ok())
        .ok_or("expected 'cuda stream id N'")?;
    if grid.contains(&0) || block.contains(&0) || block.iter().product::<u32>() > 1024 {
        return Err(format!("impossible launch: grid {grid:?}, block {block:?}"));
    }
    Ok(KernelInfo {
        name: name.to_string(),
        grid,
        block,
        nregs,
        shmem,
        stream_id,
        binary_version: ASSUMED_BINARY_VERSION,
        ..Default::default()
    })
}

/// One `CTA x,y,z - warp N - [pc P -] OPCODE - 32 addresses` line of a `mem_trace` log.
struct AccessLine<'a> {
    cta: [u32; 3],
    warp: u32,
    pc: Option<u32>,
    opcode: &'a str,
    addrs: [u64; 32],
}

/// Parses the access line `body` (line `n` of `path`; its prefixes already removed).
fn parse_access<'a>(body: &'a str, path: &Path, n: u64) -> Result<AccessLine<'a>> {
    let parts: Vec<&str> = body.split(" - ").collect();
    let bad = |what: &str| Error::at_line(path, n, format!("expected {what}"));
    let cta = parts
        .first()
        .and_then(|p| p.strip_prefix("CTA "))
        .and_then(dim3)
        .ok_or_else(|| bad("'CTA x,y,z'"))?;
    let warp: u32 = parts
        .get(1)
        .and_then(|p| p.strip_prefix("warp "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| bad("'warp N'"))?;
    let mut idx = 2;
    let mut pc = None;
    if let Some(v) = parts
        .get(idx)
        .and_then(|p| p.strip_prefix("pc ").or_else(|| p.strip_prefix("PC ")))
    {
        let v = v.trim();
        pc = Some(
            match v.strip_prefix("0x") {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            }
            .ok_or_else(|| bad("a numeric pc"))?,
        );
        idx += 1;
    }
    let opcode = parts
        .get(idx)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("an opcode"))?;
    let addr_text = parts[idx + 1..].join(" - ");
    let mut addrs = [0u64; 32];
    let mut count = 0;
    for tok in addr_text.split_ascii_whitespace() {
        if count == 32 {
            return Err(bad("exactly 32 addresses (found more)"));
        }
        addrs[count] = tok
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("hex addresses 0x..."))?;
        count += 1;
    }
    if count != 32 {
        return Err(bad(&format!("32 addresses, found {count}")));
    }
    Ok(AccessLine {
        cta,
        warp,
        pc,
        opcode,
        addrs,
    })
}

/// Parses a `mem_trace` log.
pub fn parse_mem_trace(path: &Path, lenient: bool) -> Result<MemTrace> {
    let bytes = crate::trace::input::read_all(path)?;
    let gen = IsaGen::from_binary_version(ASSUMED_BINARY_VERSION).expect("valid constant");
    let mut kernels = Vec::new();
    let mut cur: Option<OpenKernel> = None;
    let (mut access_lines, mut other_lines) = (0u64, 0u64);
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            other_lines += 1;
            continue;
        };
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let body = line.strip_prefix("MEMTRACE: ").unwrap_or(line);
        // ≥1.5 lines start with the context; drop it.
        let body = match body.strip_prefix("CTX ") {
            Some(r) => r.split_once(" - ").map(|x| x.1).unwrap_or(""),
            None => body,
        };
        let is_memtrace = line.starts_with("MEMTRACE: ");
        if body.starts_with("LAUNCH - ")
            || (body.starts_with("Kernel ") && body.contains(" - grid size "))
        {
            let info = parse_launch(body.strip_prefix("LAUNCH - ").unwrap_or(body))
                .map_err(|m| Error::at_line(path, n, m))?;
            if let Some(k) = cur.take() {
                kernels.push(k.finish());
            }
            let mut info = info;
            info.id = kernels.len() as u32 + 1;
            info.origin = path.display().to_string();
            cur = Some(OpenKernel {
                info,
                inferred: false,
                statics: StaticBuilder::new(gen, lenient),
                ctas: BTreeMap::new(),
            });
            continue;
        }
        let body = match body.strip_prefix("grid_launch_id ") {
            Some(r) => r.split_once(" - ").map(|x| x.1).unwrap_or(""),
            None => body,
        };
        if !body.starts_with("CTA ") {
            if is_memtrace {
                return Err(Error::at_line(
                    path,
                    n,
                    "expected a LAUNCH line or 'CTA x,y,z - warp N - OPCODE - addresses'",
                ));
            }
            other_lines += 1;
            continue;
        }
        let k = cur.get_or_insert_with(|| OpenKernel {
            info: KernelInfo {
                name: "unknown (no LAUNCH line)".into(),
                id: 1,
                grid: [u32::MAX; 3],
                block: [32, 1, 1],
                nregs: INFERRED_NREGS,
                binary_version: ASSUMED_BINARY_VERSION,
                origin: path.display().to_string(),
                ..Default::default()
            },
            inferred: true,
            statics: StaticBuilder::new(gen, lenient),
            ctas: BTreeMap::new(),
        });
        let AccessLine {
            cta,
            warp,
            pc,
            opcode,
            addrs,
        } = parse_access(body, path, n)?;
        if cta.iter().zip(k.info.grid).any(|(&c, g)| c >= g) {
            return Err(Error::at_line(
                path,
                n,
                format!("CTA {cta:?} is outside the launch grid {:?}", k.info.grid),
            ));
        }
        let mut mask = 0u32;
        let mut active = [0u64; 32];
        let mut na = 0;
        for (l, &a) in addrs.iter().enumerate() {
            if a != 0 {
                mask |= 1 << l;
                active[na] = a;
                na += 1;
            }
        }
        let pc = match pc {
            Some(p) => p,
            None => {
                // No PC in the log: one static instruction per distinct opcode.
                let known = k.statics.table().opcodes.iter().position(|o| o == opcode);
                16 * known.unwrap_or(k.statics.table().opcodes.len()) as u32
            }
        };
        let sidx = k
            .statics
            .intern(&RawStatic {
                pc,
                opcode: opcode.as_bytes(),
                dst: reg::NONE,
                src: [reg::NONE; MAX_SRC],
                nsrc: 0,
                imm: 0,
                imm2: 0,
                has_mem: true,
            })
            .map_err(|m| Error::at_line(path, n, m.to_string()))?;
        let key = (cta[2], cta[1], cta[0]);
        let (_, warps) = k.ctas.entry(key).or_insert_with(|| (cta, BTreeMap::new()));
        let (enc, buf) = warps
            .entry(warp)
            .or_insert_with(|| (Encoder::new(), Vec::new()));
        enc.push(buf, sidx, mask, &active[..na]);
        access_lines += 1;
    }
    if let Some(k) = cur.take() {
        kernels.push(k.finish());
    }
    Ok(MemTrace {
        kernels,
        access_lines,
        other_lines,
    })
}

/// One kernel's `instr_count`/`opcode_hist` record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KernelCounts {
    pub id: u64,
    pub name: String,
    pub thread_blocks: u64,
    pub kernel_insts: u64,
    pub total_insts: u64,
    /// `opcode_hist` lines (empty for `instr_count`).
    pub opcodes: Vec<(String, u64)>,
}

/// Parses `instr_count` / `opcode_hist` output.
pub fn parse_counts(path: &Path) -> Result<Vec<KernelCounts>> {
    let bytes = crate::trace::input::read_all(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out: Vec<KernelCounts> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if let Some(rest) = line.strip_prefix("kernel ") {
            let bad = |w: &str| {
                Error::at_line(path, n, format!("expected 'kernel N - NAME - #thread-blocks N,  kernel instructions N, total instructions N' ({w})"))
            };
            let (id, rest) = rest.split_once(" - ").ok_or_else(|| bad("id"))?;
            let (name, rest) = rest
                .rsplit_once(" - #thread-blocks ")
                .ok_or_else(|| bad("#thread-blocks"))?;
            let (tbs, rest) = rest.split_once(',').ok_or_else(|| bad("comma"))?;
            let ki = rest
                .trim()
                .strip_prefix("kernel instructions ")
                .ok_or_else(|| bad("kernel instructions"))?;
            let (ki, ti) = ki.split_once(',').ok_or_else(|| bad("comma"))?;
            let ti = ti
                .trim()
                .strip_prefix("total instructions ")
                .ok_or_else(|| bad("total instructions"))?;
            let num = |s: &str, w: &str| s.trim().parse::<u64>().map_err(|_| bad(w));
            out.push(KernelCounts {
                id: num(id, "id")?,
                name: name.to_string(),
                thread_blocks: num(tbs, "#thread-blocks")?,
                kernel_insts: num(ki, "kernel instructions")?,
                total_insts: num(ti, "total instructions")?,
                opcodes: Vec::new(),
            });
        } else if let Some((op, cnt)) = line.strip_prefix("  ").and_then(|l| l.split_once(" = ")) {
            let k = out.last_mut().ok_or_else(|| {
                Error::at_line(path, n, "opcode count before any 'kernel N - ...' line")
            })?;
            let c = cnt.trim().parse().map_err(|_| {
                Error::at_line(
                    path,
                    n,
                    format!("expected '  OPCODE = COUNT', found '{}'", line.trim()),
                )
            })?;
            k.opcodes.push((op.trim().to_string(), c));
        }
    }
    if out.is_empty() {
        return Err(Error::input(path, None, "no 'kernel N - NAME - #thread-blocks ...' line found (expected instr_count/opcode_hist output)"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_forms() {
        let new = "Kernel pc 0x00007faedadc0200 - Kernel name kernel_info - grid launch id 1 - grid size 1,1,1 - block size 1,1,1 - nregs 20 - shmem 0 - cuda stream id 94618018363472";
        let k = parse_launch(new).unwrap();
        assert_eq!(
            (k.name.as_str(), k.nregs, k.stream_id),
            ("kernel_info", 20, 94618018363472)
        );
        let old = "Kernel vecadd - grid size 4,1,1 - block size 128,1,1 - nregs 16 - shmem 0 - cuda stream id 0";
        assert_eq!(parse_launch(old).unwrap().grid, [4, 1, 1]);
    }

    #[test]
    fn blocks_of_an_inferred_grid_never_collide() {
        // Without a LAUNCH line, (2^20, 0, 0) and (0, 1, 0) were one block.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("mem_trace.log");
        let addrs = (0..32)
            .map(|i| format!("0x{:x}", 0x1000 + 4 * i))
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(
            &p,
            format!(
                "CTA 1048576,0,0 - warp 0 - LDG.E - {addrs}\nCTA 0,1,0 - warp 0 - LDG.E - {addrs}\n"
            ),
        )
        .unwrap();
        let t = parse_mem_trace(&p, false).unwrap();
        assert_eq!(t.kernels.len(), 1);
        use crate::trace::KernelSource;
        assert_eq!(t.kernels[0].num_ctas(), 2);
    }
}
