//! Accel-Sim `.traceg` reader: header, dialect detection, and a parallel, memory-bounded
//! body parse that streams encoded thread blocks into a [`CtaSink`].
//!
//! The body is cut into chunks of whole thread blocks; batches of chunks are parsed on the
//! rayon pool and merged in file order, so the result is identical for any thread count
//! and memory is bounded by the batch size, not the trace size.

pub mod body;
pub mod header;
pub mod line;
mod quick;
mod seen;

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

pub use body::{EncCta, EncWarp};
pub use header::{parse_header, Header};

use crate::error::{Error, Result};
use crate::trace::gmt::codec::{Decoder, Encoder};
use crate::trace::input::{self, Chunker, Input};
use crate::trace::inst::{flags, DynInst, KernelInfo, StaticTable};
use crate::trace::statics::StaticBuilder;

/// Knobs of a trace parse.
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// Treat opcodes missing from the ISA table as integer ALU ops (counted) instead of failing.
    pub lenient_opcodes: bool,
    /// Target bytes of text per parallel chunk.
    pub chunk_bytes: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            lenient_opcodes: false,
            chunk_bytes: 4 << 20,
        }
    }
}

/// Receives a kernel's thread blocks in file order, with streams indexing the kernel's final
/// static table.
pub trait CtaSink {
    fn cta(&mut self, cta: EncCta) -> Result<()>;
}

/// Collects CTAs in memory (small traces, tests).
#[derive(Default)]
pub struct VecSink(pub Vec<EncCta>);

impl CtaSink for VecSink {
    fn cta(&mut self, cta: EncCta) -> Result<()> {
        self.0.push(cta);
        Ok(())
    }
}

/// Summary of one parsed kernel file.
#[derive(Clone, Debug)]
pub struct KernelParse {
    pub info: KernelInfo,
    pub statics: StaticTable,
    pub format_line: String,
    pub ctas: u64,
    pub warps: u64,
    pub warp_insts: u64,
    /// Lines in the (decompressed) file.
    pub lines: u64,
    /// Bytes of (decompressed) text.
    pub text_bytes: u64,
    pub unknown_opcodes: Vec<String>,
    pub unknown_header_keys: Vec<String>,
}

/// Rewrites a stream's static indices through `remap`.
pub fn remap_stream(
    w: &EncWarp,
    local: &StaticTable,
    remap: &[u32],
) -> std::result::Result<EncWarp, crate::error::DecodeError> {
    let mut dec = Decoder::new(&w.bytes, w.insts);
    let mut enc = Encoder::new();
    let mut out = Vec::with_capacity(w.bytes.len());
    let mut d = DynInst::default();
    let is_mem = |s: u32| {
        local
            .insts
            .get(s as usize)
            .map(|s| s.flags & flags::HAS_MEM != 0)
    };
    while dec.next(&mut d, is_mem)? {
        enc.push(&mut out, remap[d.sidx as usize], d.mask, d.addrs());
    }
    Ok(EncWarp {
        insts: enc.count,
        bytes: out,
    })
}

/// Parses one `.traceg` (plain, `.gz` or `.xz`), streaming its thread blocks into `sink`.
/// `progress` is called with the number of text bytes consumed so far.
pub fn read_traceg(
    path: &Path,
    opts: &ParseOptions,
    sink: &mut dyn CtaSink,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<KernelParse> {
    let mut input = input::open(path)?;
    let prefix = input::read_prefix(&mut input, 1 << 20, path)?;
    let hdr = {
        let head: &[u8] = match &input {
            Input::Mapped(m) => &m[..],
            Input::Stream(_) => &prefix,
        };
        parse_header(head, path)?
    };
    let ctx = body::BodyCtx {
        dialect: hdr.dialect,
        gen: hdr.gen,
        lenient: opts.lenient_opcodes,
        grid: hdr.info.grid,
        warps_per_cta: hdr.info.warps_per_cta(),
    };
    let mut chunker = Chunker::new(
        path,
        &mut input,
        hdr.body_offset,
        b"#BEGIN_TB",
        opts.chunk_bytes,
    );
    if !prefix.is_empty() {
        chunker.prepend(&prefix[hdr.body_offset..]);
    }
    chunker.set_line(hdr.body_line);
    drop(prefix);

    let mut global = StaticBuilder::new(hdr.gen, opts.lenient_opcodes);
    let mut line = hdr.body_line;
    let mut text_bytes = hdr.body_offset as u64;
    let (mut ctas, mut warps, mut insts) = (0u64, 0u64, 0u64);
    // Each block's coordinates and the line that named them: a block listed twice would
    // otherwise be merged or run twice, silently.
    let mut seen: HashMap<[u32; 3], u64> = HashMap::new();
    let batch = rayon::current_num_threads().max(1) * 2;
    loop {
        let mut chunks = Vec::with_capacity(batch);
        while chunks.len() < batch {
            match chunker.next_chunk()? {
                Some(c) => chunks.push(c),
                None => break,
            }
        }
        if chunks.is_empty() {
            break;
        }
        let results: Vec<_> = chunks
            .par_iter()
            .map(|c| body::parse_chunk(c, &ctx))
            .collect();
        for (chunk, res) in chunks.iter().zip(results) {
            let r = res.map_err(|(rel, msg)| Error::at_line(path, line + rel, msg))?;
            let remap = global
                .merge(&r.statics)
                .map_err(|m| Error::at_line(path, line, m.to_string()))?;
            let identity = remap.iter().enumerate().all(|(i, &g)| i as u32 == g);
            for (cta, at) in r.ctas.into_iter().zip(r.cta_lines) {
                let at = line + at;
                if let Some(first) = seen.insert(cta.id, at) {
                    let [x, y, z] = cta.id;
                    return Err(Error::at_line(
                        path,
                        at,
                        format!(
                            "thread block {x},{y},{z} appears twice (first at line {first}); \
                             expected each block of the grid once"
                        ),
                    ));
                }
                let cta = if identity {
                    cta
                } else {
                    EncCta {
                        id: cta.id,
                        warps: cta
                            .warps
                            .iter()
                            .map(|w| remap_stream(w, &r.statics, &remap))
                            .collect::<std::result::Result<_, _>>()
                            .map_err(|e| e.into_input(path))?,
                    }
                };
                ctas += 1;
                warps += cta.warps.len() as u64;
                insts += cta.warps.iter().map(|w| w.insts).sum::<u64>();
                sink.cta(cta)?;
            }
            line += r.lines;
            text_bytes += chunk.len() as u64;
        }
        drop(chunks);
        chunker.release_consumed();
        progress(text_bytes);
    }
    Ok(KernelParse {
        info: hdr.info,
        unknown_opcodes: global.unknown_opcodes.clone(),
        statics: global.into_table(),
        format_line: hdr.format_line,
        ctas,
        warps,
        warp_insts: insts,
        lines: line - 1,
        text_bytes,
        unknown_header_keys: hdr.unknown_keys,
    })
}
