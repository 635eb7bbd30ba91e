//! Zero-copy `.gmt` reader. Opening validates the header, the TOC and every table bound, so
//! that later random access cannot read outside the file; warp streams are decoded from the
//! mapped bytes on demand.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::codec::EncodedWarp;
use super::{CtaRec, FileHeader, KernelToc, Section, Toc, WarpRec, HEADER_LEN, MAGIC, VERSION};
use crate::error::{Error, Result};
use crate::trace::inst::{flags, KernelInfo, StaticInst, StaticTable, MAX_SRC};
use crate::trace::source::{Command, CtaInfo, KernelSource, WarpStream};

/// An open `.gmt` file.
pub struct GmtFile {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
    toc: Toc,
    /// Per TOC entry, the first entry equal to it ([`GmtFile::first_launch`]).
    first: Vec<usize>,
}

fn bad(path: &Path, msg: impl Into<String>) -> Error {
    Error::input(path, None, msg)
}

impl GmtFile {
    pub fn open(path: &Path) -> Result<GmtFile> {
        let f = crate::infile::open_regular(path)?;
        // SAFETY: read-only map; the file must not be truncated while open (ARCHITECTURE.md).
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(path, e))?;
        if map.len() < HEADER_LEN {
            return Err(bad(
                path,
                format!(
                    "{} bytes: too short for a .gmt header (expected at least {HEADER_LEN})",
                    map.len()
                ),
            ));
        }
        let h: FileHeader = bytemuck::pod_read_unaligned(&map[..HEADER_LEN]);
        if h.magic != MAGIC {
            return Err(bad(path, "not a .gmt file (expected the magic bytes 'GPUMGMT'); convert text traces with `gpumodel convert`"));
        }
        if h.version != VERSION {
            return Err(bad(path, format!(".gmt format version {} is not supported (this build reads version {VERSION}); re-run `gpumodel convert`", h.version)));
        }
        if h.file_len != map.len() as u64 {
            return Err(bad(
                path,
                format!(
                    "file is {} bytes but its header says {} (truncated or appended to)",
                    map.len(),
                    h.file_len
                ),
            ));
        }
        let end = h
            .toc_offset
            .checked_add(h.toc_len)
            .filter(|&e| e <= map.len() as u64);
        let Some(end) = end else {
            return Err(bad(path, "table of contents lies outside the file"));
        };
        let toc: Toc = serde_json::from_slice(&map[h.toc_offset as usize..end as usize])
            .map_err(|e| bad(path, format!("corrupt table of contents: {e}")))?;
        // Per entry, the first entry equal to it (keyed by its stream section, then compared
        // whole).
        let mut by_streams: std::collections::HashMap<(u64, u64), usize> = Default::default();
        let mut first = Vec::with_capacity(toc.kernels.len());
        for (i, k) in toc.kernels.iter().enumerate() {
            let f = *by_streams
                .entry((k.streams.offset, k.streams.count))
                .or_insert(i);
            first.push(if f < i && toc.kernels[f] == *k { f } else { i });
        }
        let file = GmtFile {
            path: path.to_path_buf(),
            map: Arc::new(map),
            toc,
            first,
        };
        for (i, k) in file.toc.kernels.iter().enumerate() {
            // A kernel launched again (the same entry as an earlier one) was checked there.
            if file.first_launch(i) == i {
                file.check_kernel(k)
                    .map_err(|m| bad(path, format!("kernel {i}: {m}")))?;
            }
        }
        for c in &file.toc.commands {
            if let Command::Kernel(k) = c {
                if *k as usize >= file.toc.kernels.len() {
                    return Err(bad(
                        path,
                        format!("command list names kernel {k}, which is not in the file"),
                    ));
                }
            }
        }
        Ok(file)
    }

    fn section<T: bytemuck::Pod>(&self, s: &Section) -> std::result::Result<&[T], String> {
        let size = std::mem::size_of::<T>() as u64;
        let bytes = s.count.checked_mul(size).ok_or("table size overflows")?;
        let end = s
            .offset
            .checked_add(bytes)
            .filter(|&e| e <= self.map.len() as u64)
            .ok_or("table lies outside the file")?;
        bytemuck::try_cast_slice(&self.map[s.offset as usize..end as usize])
            .map_err(|e| format!("misaligned table: {e}"))
    }

    fn check_kernel(&self, k: &KernelToc) -> std::result::Result<(), String> {
        let st: &[StaticInst] = self.section(&k.statics)?;
        for (i, s) in st.iter().enumerate() {
            if s.opcode as usize >= k.opcodes.len()
                || s.nsrc as usize > MAX_SRC
                || s.unit > 8
                || s.space > 5
                || s.mem_op > 4
            {
                return Err(format!("static instruction {i} is corrupt"));
            }
        }
        let ctas: &[CtaRec] = self.section(&k.ctas)?;
        let warps: &[WarpRec] = self.section(&k.warps)?;
        let send = k
            .streams
            .offset
            .checked_add(k.streams.count)
            .ok_or("stream section overflows")?;
        if send > self.map.len() as u64 {
            return Err("stream section lies outside the file".into());
        }
        for (i, c) in ctas.iter().enumerate() {
            if c.first_warp
                .checked_add(c.warps as u64)
                .is_none_or(|e| e > warps.len() as u64)
            {
                return Err(format!("CTA {i} points past the warp table"));
            }
        }
        let mut total = 0u64;
        for (i, w) in warps.iter().enumerate() {
            if w.offset
                .checked_add(w.bytes)
                .is_none_or(|e| e > k.streams.count)
            {
                return Err(format!("warp {i} points past the stream section"));
            }
            total = total.saturating_add(w.insts);
        }
        if total != k.warp_insts {
            return Err(format!(
                "warp table sums to {total} instructions but the TOC says {}",
                k.warp_insts
            ));
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn app(&self) -> &str {
        &self.toc.app
    }
    pub fn commands(&self) -> &[Command] {
        &self.toc.commands
    }
    pub fn num_kernels(&self) -> usize {
        self.toc.kernels.len()
    }
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Kernel `i` as a [`KernelSource`]; it keeps the map alive on its own.
    pub fn kernel(&self, i: usize) -> Result<GmtKernel> {
        let k = self.toc.kernels.get(i).ok_or_else(|| {
            bad(
                &self.path,
                format!(
                    "kernel {i} does not exist (the file has {})",
                    self.toc.kernels.len()
                ),
            )
        })?;
        let insts: &[StaticInst] = self.section(&k.statics).map_err(|m| bad(&self.path, m))?;
        let statics = StaticTable {
            insts: insts.to_vec(),
            opcodes: k.opcodes.clone(),
        };
        let has_mem = statics
            .insts
            .iter()
            .map(|s| s.has(flags::HAS_MEM))
            .collect();
        Ok(GmtKernel {
            path: self.path.display().to_string(),
            map: self.map.clone(),
            info: k.info.clone(),
            statics,
            has_mem,
            ctas: k.ctas,
            warps: k.warps,
            streams: k.streams,
            warp_insts: k.warp_insts,
        })
    }

    pub fn kernels(&self) -> Result<Vec<GmtKernel>> {
        (0..self.num_kernels()).map(|i| self.kernel(i)).collect()
    }

    /// The index of the first TOC entry equal to entry `i` (`i` itself when none before
    /// is): a kernel launched again is an entry naming the same sections
    /// ([`super::GmtWriter::repeat_kernel`]).
    fn first_launch(&self, i: usize) -> usize {
        self.first[i]
    }

    /// The kernels in launch order, a kernel launched again shared by its launches (as a
    /// text list's is): what is derived from one kernel is derived once.
    pub fn launches(&self) -> Result<Vec<Arc<GmtKernel>>> {
        let mut out: Vec<Arc<GmtKernel>> = Vec::with_capacity(self.num_kernels());
        for i in 0..self.num_kernels() {
            let f = self.first_launch(i);
            out.push(if f < i {
                out[f].clone()
            } else {
                Arc::new(self.kernel(i)?)
            });
        }
        Ok(out)
    }
}

/// One kernel of a `.gmt` file.
pub struct GmtKernel {
    path: String,
    map: Arc<memmap2::Mmap>,
    info: KernelInfo,
    statics: StaticTable,
    has_mem: Vec<bool>,
    ctas: Section,
    warps: Section,
    streams: Section,
    warp_insts: u64,
}

impl GmtKernel {
    fn cta_rec(&self, i: u32) -> CtaRec {
        let off = self.ctas.offset as usize + i as usize * std::mem::size_of::<CtaRec>();
        bytemuck::pod_read_unaligned(&self.map[off..off + std::mem::size_of::<CtaRec>()])
    }
    fn warp_rec(&self, cta: u32, warp: u32) -> WarpRec {
        let c = self.cta_rec(cta);
        assert!(warp < c.warps, "warp {warp} out of range for CTA {cta}");
        let i = c.first_warp as usize + warp as usize;
        let off = self.warps.offset as usize + i * std::mem::size_of::<WarpRec>();
        bytemuck::pod_read_unaligned(&self.map[off..off + std::mem::size_of::<WarpRec>()])
    }
    /// Bytes of encoded stream data.
    pub fn stream_bytes(&self) -> u64 {
        self.streams.count
    }
}

impl KernelSource for GmtKernel {
    fn info(&self) -> &KernelInfo {
        &self.info
    }
    fn input(&self) -> &str {
        &self.path
    }
    fn statics(&self) -> &StaticTable {
        &self.statics
    }
    fn num_ctas(&self) -> u32 {
        self.ctas.count as u32
    }
    fn cta(&self, index: u32) -> CtaInfo {
        let c = self.cta_rec(index);
        CtaInfo {
            id: c.id,
            warps: c.warps,
        }
    }
    fn warp_len(&self, cta: u32, warp: u32) -> u64 {
        self.warp_rec(cta, warp).insts
    }
    fn warp(&self, cta: u32, warp: u32) -> Box<dyn WarpStream + '_> {
        let w = self.warp_rec(cta, warp);
        let start = (self.streams.offset + w.offset) as usize;
        Box::new(EncodedWarp::new(
            &self.map[start..start + w.bytes as usize],
            w.insts,
            &self.has_mem,
        ))
    }
    fn total_warp_insts(&self) -> u64 {
        self.warp_insts
    }
}
