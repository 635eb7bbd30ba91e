//! A kernel held in memory in the `.gmt` stream encoding (about a tenth of its text size):
//! what a text trace becomes when it is inspected or run without converting to a file.

use crate::trace::accel::{CtaSink, EncCta};
use crate::trace::gmt::codec::EncodedWarp;
use crate::trace::inst::{flags, KernelInfo, StaticTable};
use crate::trace::source::{CtaInfo, KernelSource, WarpStream};

#[derive(Clone, Debug, Default)]
pub struct EncKernel {
    pub info: KernelInfo,
    pub statics: StaticTable,
    pub ctas: Vec<EncCta>,
    has_mem: Vec<bool>,
}

impl EncKernel {
    pub fn new(info: KernelInfo, statics: StaticTable, ctas: Vec<EncCta>) -> EncKernel {
        let has_mem = statics
            .insts
            .iter()
            .map(|s| s.has(flags::HAS_MEM))
            .collect();
        EncKernel {
            info,
            statics,
            ctas,
            has_mem,
        }
    }
}

/// Collects CTAs for an [`EncKernel`].
#[derive(Default)]
pub struct EncSink(pub Vec<EncCta>);

impl CtaSink for EncSink {
    fn cta(&mut self, cta: EncCta) -> crate::error::Result<()> {
        self.0.push(cta);
        Ok(())
    }
}

impl KernelSource for EncKernel {
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
        self.ctas[cta as usize].warps[warp as usize].insts
    }
    fn warp(&self, cta: u32, warp: u32) -> Box<dyn WarpStream + '_> {
        let w = &self.ctas[cta as usize].warps[warp as usize];
        Box::new(EncodedWarp::new(&w.bytes, w.insts, &self.has_mem))
    }
}
