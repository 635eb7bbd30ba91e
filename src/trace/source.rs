//! The one interface through which the engine reads kernels: [`KernelSource`].
//!
//! `.gmt` files, the procedural synthetic generator and in-memory kernels (tests) all
//! implement it. A source gives random access to CTAs and a forward stream per warp, so a
//! run never needs more than the resident warps' cursors in memory.

use super::inst::{DynInst, KernelInfo, StaticTable};
use crate::error::DecodeError;

/// A CTA present in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtaInfo {
    /// CTA coordinates (`blockIdx`).
    pub id: [u32; 3],
    /// Warps recorded for this CTA.
    pub warps: u32,
}

/// A forward cursor over one warp's dynamic instructions.
pub trait WarpStream: Send {
    /// Writes the next instruction into `out`; `Ok(false)` at the end of the stream.
    fn next_inst(&mut self, out: &mut DynInst) -> Result<bool, DecodeError>;
    /// Total instructions in the stream (known up front for every source).
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Decodes ahead, into `out`, the next instructions that carry no addresses, as
    /// (static index, active mask), and returns how many: it stops before the first that
    /// carries addresses, at the end of the stream, or before bad input (which the next
    /// [`WarpStream::next_inst`] then reports). The instructions it returns are consumed:
    /// `next_inst` goes on after them. A source may always return 0 (the default).
    fn next_plain(&mut self, out: &mut [(u32, u32)]) -> usize {
        let _ = out;
        0
    }
}

/// A kernel the engine can run.
pub trait KernelSource: Send + Sync {
    fn info(&self) -> &KernelInfo;
    fn statics(&self) -> &StaticTable;
    /// CTAs present (an excerpt may hold fewer than the grid).
    fn num_ctas(&self) -> u32;
    fn cta(&self, index: u32) -> CtaInfo;
    /// Instruction count of a warp without decoding it.
    fn warp_len(&self, cta: u32, warp: u32) -> u64;
    fn warp(&self, cta: u32, warp: u32) -> Box<dyn WarpStream + '_>;

    /// The file this kernel's streams are read from, for errors found while decoding
    /// them (a `.gmt` names itself; other sources their [`KernelInfo::origin`]).
    fn input(&self) -> &str {
        &self.info().origin
    }

    /// Total dynamic warp instructions of the kernel.
    fn total_warp_insts(&self) -> u64 {
        (0..self.num_ctas())
            .map(|c| {
                let n = self.cta(c).warps;
                (0..n).map(|w| self.warp_len(c, w)).sum::<u64>()
            })
            .sum()
    }
}

/// Per launch, the index of the first launch of the same kernel: a trace file that a list
/// launches again is one shared source (`trace::app::open_app` parses it once), and what is
/// derived from a kernel alone — its statistics, its text, its `.gmt` sections — is made once
/// and used again. Two launches are the same kernel when they are the same object.
pub fn first_launches(kernels: &[&dyn KernelSource]) -> Vec<usize> {
    let mut first: std::collections::HashMap<*const (), usize> = Default::default();
    kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            *first
                .entry((*k as *const dyn KernelSource).cast::<()>())
                .or_insert(i)
        })
        .collect()
}

/// A kernel held fully decoded in memory: used by tests, by the text writer round trip
/// and for small traces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemKernel {
    pub info: KernelInfo,
    pub statics: StaticTable,
    pub ctas: Vec<MemCta>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemCta {
    pub id: [u32; 3],
    pub warps: Vec<Vec<DynInst>>,
}

impl MemKernel {
    /// Decodes any source completely (tests and small kernels only).
    pub fn from_source(src: &dyn KernelSource) -> Result<MemKernel, DecodeError> {
        let mut ctas = Vec::with_capacity(src.num_ctas() as usize);
        for c in 0..src.num_ctas() {
            let info = src.cta(c);
            let mut warps = Vec::with_capacity(info.warps as usize);
            for w in 0..info.warps {
                let mut s = src.warp(c, w);
                let mut v = Vec::with_capacity(s.len() as usize);
                let mut d = DynInst::default();
                while s.next_inst(&mut d)? {
                    v.push(d.clone());
                }
                warps.push(v);
            }
            ctas.push(MemCta { id: info.id, warps });
        }
        Ok(MemKernel {
            info: src.info().clone(),
            statics: src.statics().clone(),
            ctas,
        })
    }
}

struct VecStream<'a> {
    insts: &'a [DynInst],
    pos: usize,
}

impl WarpStream for VecStream<'_> {
    fn next_inst(&mut self, out: &mut DynInst) -> Result<bool, DecodeError> {
        match self.insts.get(self.pos) {
            Some(d) => {
                out.sidx = d.sidx;
                out.mask = d.mask;
                out.n = d.n;
                out.stride = d.stride;
                out.addrs[..d.n as usize].copy_from_slice(d.addrs());
                self.pos += 1;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn len(&self) -> u64 {
        self.insts.len() as u64
    }
}

impl KernelSource for MemKernel {
    fn info(&self) -> &KernelInfo {
        &self.info
    }
    fn statics(&self) -> &StaticTable {
        &self.statics
    }
    fn num_ctas(&self) -> u32 {
        self.ctas.len() as u32
    }
    fn cta(&self, index: u32) -> CtaInfo {
        let c = &self.ctas[index as usize];
        CtaInfo {
            id: c.id,
            warps: c.warps.len() as u32,
        }
    }
    fn warp_len(&self, cta: u32, warp: u32) -> u64 {
        self.ctas[cta as usize].warps[warp as usize].len() as u64
    }
    fn warp(&self, cta: u32, warp: u32) -> Box<dyn WarpStream + '_> {
        Box::new(VecStream {
            insts: &self.ctas[cta as usize].warps[warp as usize],
            pos: 0,
        })
    }
}

/// One host-to-device copy recorded in a command list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Memcpy {
    pub addr: u64,
    pub bytes: u64,
}

/// A command of an application, in stream order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Command {
    MemcpyHtoD(Memcpy),
    /// Launch of the kernel with this index in the application's kernel list.
    Kernel(u32),
}
