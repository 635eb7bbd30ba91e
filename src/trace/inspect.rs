//! Static characterisation of a kernel straight from its instruction stream (no timing):
//! instruction mix, memory spaces, coalescing, footprint, strides. Used by `inspect`.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::DecodeError;
use crate::trace::hll::DistinctCounter;
use crate::trace::inst::{DynInst, MemOp, MemSpace, Unit};
use crate::trace::source::KernelSource;

pub const SECTOR: u64 = 32;
pub const LINE: u64 = 128;

/// Lane-to-lane address stride classes of memory requests.
pub const STRIDE_BUCKETS: [&str; 6] = ["broadcast", "unit", "2-4x", "5-32x", ">32x", "irregular"];

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KernelStats {
    pub ctas: u64,
    pub warps: u64,
    pub warp_insts: u64,
    /// Sum of active lanes over all warp instructions.
    pub thread_insts: u64,
    /// Warp instructions with an all-zero mask.
    pub masked_off: u64,
    pub by_unit: BTreeMap<String, u64>,
    /// Memory warp instructions by `space/op`, e.g. `global/load`.
    pub mem_by_space: BTreeMap<String, u64>,
    /// Global/local memory requests with at least one active lane.
    pub gmem_requests: u64,
    /// 32-byte sectors those requests touch (distinct per request).
    pub gmem_sectors: u64,
    pub sectors_per_request: f64,
    /// Distinct 128-byte lines touched by global/local accesses: exact up to
    /// [`DistinctCounter::LIMIT`] lines, a HyperLogLog estimate (±~1%) past it.
    pub footprint_lines: u64,
    pub footprint_bytes: u64,
    /// `footprint_lines` is an estimate (more lines than the exact count's limit).
    pub footprint_approx: bool,
    pub stride_hist: BTreeMap<String, u64>,
}

#[derive(Default)]
struct Acc {
    s: KernelStats,
    units: [u64; Unit::COUNT],
    lines: DistinctCounter,
    strides: [u64; 6],
}

fn stride_bucket(addrs: &[u64], width: u64) -> usize {
    if addrs.len() < 2 {
        return 0;
    }
    let st = addrs[1].wrapping_sub(addrs[0]) as i64;
    if !addrs
        .windows(2)
        .all(|w| w[1].wrapping_sub(w[0]) as i64 == st)
    {
        return 5;
    }
    let w = width.max(1) as i64;
    match st.unsigned_abs() as i64 {
        0 => 0,
        s if s == w => 1,
        s if s <= 4 * w => 2,
        s if s <= 32 * w => 3,
        _ => 4,
    }
}

/// Scans every warp of a kernel (CTAs in parallel; the result does not depend on the thread
/// count).
pub fn kernel_stats(src: &dyn KernelSource) -> Result<KernelStats, DecodeError> {
    kernel_stats_with(src, &|| {})
}

/// [`kernel_stats`], calling `cta_done` as each thread block is scanned (a progress bar).
pub fn kernel_stats_with(
    src: &dyn KernelSource,
    cta_done: &(dyn Fn() + Sync),
) -> Result<KernelStats, DecodeError> {
    let st = src.statics();
    let acc = (0..src.num_ctas())
        .into_par_iter()
        .map(|c| -> Result<Acc, DecodeError> {
            let mut a = Acc::default();
            let cta = src.cta(c);
            a.s.ctas = 1;
            a.s.warps = cta.warps as u64;
            let mut d = DynInst::default();
            let mut sectors: Vec<u64> = Vec::with_capacity(128);
            for w in 0..cta.warps {
                let mut s = src.warp(c, w);
                while s.next_inst(&mut d)? {
                    let si = &st.insts[d.sidx as usize];
                    a.s.warp_insts += 1;
                    a.s.thread_insts += d.mask.count_ones() as u64;
                    if d.mask == 0 {
                        a.s.masked_off += 1;
                    }
                    a.units[si.unit as usize] += 1;
                    if si.mem_op() == MemOp::None {
                        continue;
                    }
                    *a.s.mem_by_space
                        .entry(format!("{}/{}", si.space().name(), si.mem_op().name()))
                        .or_default() += 1;
                    if !matches!(
                        si.space(),
                        MemSpace::Global | MemSpace::Local | MemSpace::Generic
                    ) || d.n == 0
                    {
                        continue;
                    }
                    a.s.gmem_requests += 1;
                    sectors.clear();
                    let width = si.width.max(1) as u64;
                    for &addr in d.addrs() {
                        let first = addr / SECTOR;
                        let last = (addr + width - 1) / SECTOR;
                        for sct in first..=last {
                            sectors.push(sct);
                        }
                        a.lines.insert(addr / LINE);
                    }
                    sectors.sort_unstable();
                    sectors.dedup();
                    a.s.gmem_sectors += sectors.len() as u64;
                    a.strides[stride_bucket(d.addrs(), width)] += 1;
                }
            }
            cta_done();
            Ok(a)
        })
        .try_reduce(Acc::default, |mut x, y| {
            x.s.ctas += y.s.ctas;
            x.s.warps += y.s.warps;
            x.s.warp_insts += y.s.warp_insts;
            x.s.thread_insts += y.s.thread_insts;
            x.s.masked_off += y.s.masked_off;
            x.s.gmem_requests += y.s.gmem_requests;
            x.s.gmem_sectors += y.s.gmem_sectors;
            for (k, v) in y.s.mem_by_space {
                *x.s.mem_by_space.entry(k).or_default() += v;
            }
            for i in 0..Unit::COUNT {
                x.units[i] += y.units[i];
            }
            for i in 0..6 {
                x.strides[i] += y.strides[i];
            }
            x.lines.merge(y.lines);
            Ok(x)
        })?;
    let mut s = acc.s;
    for u in Unit::ALL {
        if acc.units[u as usize] > 0 {
            s.by_unit
                .insert(u.name().to_string(), acc.units[u as usize]);
        }
    }
    for (i, name) in STRIDE_BUCKETS.iter().enumerate() {
        if acc.strides[i] > 0 {
            s.stride_hist.insert(name.to_string(), acc.strides[i]);
        }
    }
    (s.footprint_lines, s.footprint_approx) = acc.lines.count();
    s.footprint_bytes = s.footprint_lines * LINE;
    s.sectors_per_request = if s.gmem_requests > 0 {
        s.gmem_sectors as f64 / s.gmem_requests as f64
    } else {
        0.0
    };
    Ok(s)
}
