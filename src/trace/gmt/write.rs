//! Streaming `.gmt` writer: warp streams go to disk as they arrive; a kernel's tables are
//! written when the kernel ends; the TOC and header last. Output goes through
//! [`crate::output`]: a fresh temporary file renamed into place, so a failed conversion
//! never leaves a half-written `.gmt` (nor its temporary file), and links, special files
//! and the command's own inputs are never replaced.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::output::{Guard, Pending};

use super::codec::Encoder;
use super::{CtaRec, FileHeader, KernelToc, Section, Toc, WarpRec, HEADER_LEN, MAGIC, VERSION};
use crate::error::{Error, Result};
use crate::trace::accel::{CtaSink, EncCta};
use crate::trace::inst::{DynInst, KernelInfo, StaticTable};
use crate::trace::source::{Command, KernelSource};

/// Bytes of warp index a kernel being written keeps in memory per warp.
pub const INDEX_BYTES_PER_WARP: u64 = std::mem::size_of::<WarpRec>() as u64;

/// Most warps one kernel of a `.gmt` may have: 2^25 warps keep at most
/// 2^25 × [`INDEX_BYTES_PER_WARP`] = 768 MiB of index in memory while it is written.
pub const MAX_WARPS: u64 = 1 << 25;

/// Most bytes one thread block's encoded streams may take: a block is held whole in memory
/// while it is written (the same bound as a streamed Accel-Sim block).
pub const MAX_CTA_BYTES: usize = 256 << 20;

struct CurKernel {
    stream_start: u64,
    ctas: Vec<CtaRec>,
    warps: Vec<WarpRec>,
    insts: u64,
}

pub struct GmtWriter {
    /// `None` once finished.
    out: Option<Pending>,
    tmp: PathBuf,
    pos: u64,
    kernels: Vec<KernelToc>,
    cur: Option<CurKernel>,
}

impl GmtWriter {
    pub fn create(path: &Path) -> Result<GmtWriter> {
        Self::create_guarded(path, &Guard::new())
    }

    /// [`GmtWriter::create`], refusing to replace any of `guard`'s inputs.
    pub fn create_guarded(path: &Path, guard: &Guard) -> Result<GmtWriter> {
        let p = guard.create(path)?;
        let mut w = GmtWriter {
            tmp: p.tmp_path().to_path_buf(),
            out: Some(p),
            pos: 0,
            kernels: Vec::new(),
            cur: None,
        };
        w.write(&[0u8; HEADER_LEN])?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Usage("write after finish".into()))?;
        out.writer()
            .write_all(b)
            .map_err(|e| Error::io(&self.tmp, e))?;
        self.pos += b.len() as u64;
        Ok(())
    }

    fn align8(&mut self) -> Result<()> {
        let pad = (8 - (self.pos % 8) as usize) % 8;
        self.write(&[0u8; 8][..pad])
    }

    /// Starts a kernel; its CTAs follow through [`CtaSink::cta`].
    pub fn begin_kernel(&mut self) -> Result<()> {
        if self.cur.is_some() {
            return Err(Error::Usage("begin_kernel while a kernel is open".into()));
        }
        self.align8()?;
        self.cur = Some(CurKernel {
            stream_start: self.pos,
            ctas: Vec::new(),
            warps: Vec::new(),
            insts: 0,
        });
        Ok(())
    }

    /// Ends the open kernel, writing its tables.
    pub fn end_kernel(&mut self, info: KernelInfo, statics: &StaticTable) -> Result<()> {
        let cur = self
            .cur
            .take()
            .ok_or_else(|| Error::Usage("end_kernel without begin_kernel".into()))?;
        let streams = Section {
            offset: cur.stream_start,
            count: self.pos - cur.stream_start,
        };
        self.align8()?;
        let st = Section {
            offset: self.pos,
            count: statics.insts.len() as u64,
        };
        self.write(bytemuck::cast_slice(&statics.insts))?;
        self.align8()?;
        let ct = Section {
            offset: self.pos,
            count: cur.ctas.len() as u64,
        };
        self.write(bytemuck::cast_slice(&cur.ctas))?;
        let wt = Section {
            offset: self.pos,
            count: cur.warps.len() as u64,
        };
        self.write(bytemuck::cast_slice(&cur.warps))?;
        self.kernels.push(KernelToc {
            info,
            opcodes: statics.opcodes.clone(),
            streams,
            statics: st,
            ctas: ct,
            warps: wt,
            warp_insts: cur.insts,
        });
        Ok(())
    }

    /// Launches kernel `i` of this file again: a TOC entry naming the same sections, so a
    /// kernel that a list launches many times is stored once (a list launching one 70 KB
    /// trace 10 001 times wrote 700 MB of copies).
    pub fn repeat_kernel(&mut self, i: usize) -> Result<()> {
        if self.cur.is_some() {
            return Err(Error::Usage("repeat_kernel while a kernel is open".into()));
        }
        let k = self
            .kernels
            .get(i)
            .cloned()
            .ok_or_else(|| Error::Usage(format!("repeat_kernel: no kernel {i} written yet")))?;
        self.kernels.push(k);
        Ok(())
    }

    /// Encodes a whole kernel from any source (synthetic kernels, decoded traces).
    /// A kernel of more than [`MAX_WARPS`] warps is refused before anything is encoded:
    /// its warp index alone would not fit the memory bound.
    pub fn add_source(&mut self, src: &dyn KernelSource) -> Result<()> {
        let warps = src.num_ctas() as u64 * src.info().warps_per_cta() as u64;
        if warps > MAX_WARPS {
            return Err(Error::input(
                Path::new(src.input()),
                None,
                format!(
                    "kernel `{}` has {warps} warps; a .gmt holds at most {MAX_WARPS} per \
                     kernel (its warp index takes {INDEX_BYTES_PER_WARP} B a warp, kept in \
                     memory while writing): reduce the grid, or simulate the spec directly \
                     (`gpumodel run`) without converting it",
                    src.info().name
                ),
            ));
        }
        self.begin_kernel()?;
        let statics = src.statics();
        let mut d = DynInst::default();
        let mut buf = Vec::new();
        for c in 0..src.num_ctas() {
            let cta = src.cta(c);
            let mut warps = Vec::with_capacity(cta.warps as usize);
            let mut cta_bytes = 0usize;
            for w in 0..cta.warps {
                let mut s = src.warp(c, w);
                let mut enc = Encoder::new();
                buf.clear();
                while s.next_inst(&mut d).map_err(|e| e.into_input(src.input()))? {
                    if cta_bytes + buf.len() > MAX_CTA_BYTES {
                        return Err(Error::input(
                            Path::new(src.input()),
                            None,
                            format!(
                                "kernel `{}`: thread block {:?} encodes to more than {} MiB (a block is \
                                 held whole while it is written); reduce its loop trips or \
                                 simulate the spec directly (`gpumodel run`)",
                                src.info().name,
                                cta.id,
                                MAX_CTA_BYTES >> 20
                            ),
                        ));
                    }
                    let is_mem = statics
                        .insts
                        .get(d.sidx as usize)
                        .map(|s| s.has(crate::trace::inst::flags::HAS_MEM))
                        .unwrap_or(false);
                    enc.push(
                        &mut buf,
                        d.sidx,
                        d.mask,
                        if is_mem { d.addrs() } else { &[] },
                    );
                }
                cta_bytes += buf.len();
                warps.push(crate::trace::accel::EncWarp {
                    insts: enc.count,
                    bytes: buf.clone(),
                });
            }
            self.cta(EncCta { id: cta.id, warps })?;
        }
        self.end_kernel(src.info().clone(), statics)
    }

    /// Writes the TOC and header and moves the file into place.
    pub fn finish(mut self, app: &str, commands: Vec<Command>) -> Result<u64> {
        if self.cur.is_some() {
            return Err(Error::Usage("finish with an open kernel".into()));
        }
        self.align8()?;
        let toc = Toc {
            schema: VERSION,
            app: app.to_string(),
            commands,
            kernels: std::mem::take(&mut self.kernels),
        };
        let json = serde_json::to_vec(&toc).map_err(|e| Error::Usage(e.to_string()))?;
        let toc_offset = self.pos;
        self.write(&json)?;
        let header = FileHeader {
            magic: MAGIC,
            version: VERSION,
            header_len: HEADER_LEN as u32,
            toc_offset,
            toc_len: json.len() as u64,
            file_len: self.pos,
            reserved: [0; 3],
        };
        let len = self.pos;
        let tmp = self.tmp.clone();
        let mut out = self
            .out
            .take()
            .ok_or_else(|| Error::Usage("finish called twice".into()))?;
        let w = out.writer();
        w.flush().map_err(|e| Error::io(&tmp, e))?;
        let f = w.get_mut();
        f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytemuck::bytes_of(&header))
            .map_err(|e| Error::io(&tmp, e))?;
        out.commit()?;
        Ok(len)
    }
}

impl CtaSink for GmtWriter {
    fn cta(&mut self, cta: EncCta) -> Result<()> {
        let Some(cur) = self.cur.as_ref() else {
            return Err(Error::Usage("CTA outside a kernel".into()));
        };
        let first_warp = cur.warps.len() as u64;
        let stream_start = cur.stream_start;
        let mut recs = Vec::with_capacity(cta.warps.len());
        for w in &cta.warps {
            recs.push(WarpRec {
                offset: self.pos - stream_start,
                bytes: w.bytes.len() as u64,
                insts: w.insts,
            });
            self.write(&w.bytes)?;
        }
        let cur = self.cur.as_mut().expect("checked above");
        cur.insts += recs.iter().map(|r| r.insts).sum::<u64>();
        cur.warps.extend(recs);
        cur.ctas.push(CtaRec {
            id: cta.id,
            warps: cta.warps.len() as u32,
            first_warp,
        });
        Ok(())
    }
}

impl Drop for GmtWriter {
    fn drop(&mut self) {
        // A writer dropped before `finish` (an error) removes its temporary file.
        if self.out.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
