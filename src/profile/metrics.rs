//! The quantities the classifiers read, derived once from the full-GPU alone run and the
//! application's instruction mix, together with the model's peaks they are compared with
//! (peak DRAM bandwidth, peak issue rate). Every bandwidth is in bytes per second of the
//! model's core clock.

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::engine::{AppSpec, AppStats, RunStats};
use crate::error::Result;
use crate::trace::inspect::kernel_stats;

/// Static instruction mix of an application (all kernels, one pass).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    pub warp_insts: u64,
    /// Global/local/generic loads, stores and atomics (warp instructions).
    pub global_mem: u64,
    /// Warp instructions on the compute pipes (int, fp32, fp64, sfu, tensor).
    pub compute: u64,
}

impl Mix {
    /// Scans the application's kernels (each in parallel over its CTAs).
    pub fn of(app: &AppSpec) -> Result<Mix> {
        let mut m = Mix::default();
        for k in &app.kernels {
            let s = kernel_stats(k.as_ref()).map_err(|e| {
                crate::Error::input(&app.name, None, format!("kernel {}: {e}", k.info().name))
            })?;
            m.warp_insts += s.warp_insts;
            m.global_mem += s
                .mem_by_space
                .iter()
                .filter(|(k, _)| {
                    k.starts_with("global/") || k.starts_with("local/") || k.starts_with("generic/")
                })
                .map(|(_, v)| *v)
                .sum::<u64>();
            m.compute += ["int", "fp32", "fp64", "sfu", "tensor"]
                .iter()
                .map(|u| s.by_unit.get(*u).copied().unwrap_or(0))
                .sum::<u64>();
        }
        Ok(m)
    }
}

/// Classifier inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Warp instructions per cycle, whole GPU, alone.
    pub ipc: f64,
    /// Peak warp-instruction issue rate of the GPU: SMs × schedulers × issue width.
    pub ipc_max: f64,
    /// Peak issue rate of one SM: schedulers × issue width.
    pub ipc_max_per_sm: f64,
    pub isu: f64,
    pub l1_hit_rate: f64,
    pub l2_hit_rate: f64,
    /// L2 misses per thousand warp instructions.
    pub l2_mpki: f64,
    /// DRAM bytes per second (reads + writes).
    pub dram_bw: f64,
    /// The model's peak DRAM bandwidth, bytes per second.
    pub dram_bw_max: f64,
    /// Data moved between the L2 and the L1s (L2 sector accesses × sector size), bytes/s.
    pub l2_l1_bw: f64,
    /// Global/local bytes requested by the SMs (L1 sector accesses × sector size), bytes/s:
    /// what `nvprof` reports as global load + store throughput.
    pub global_bw: f64,
    /// L2 accesses per thousand warp instructions, in bytes (sector accesses × sector size).
    pub llc_bytes_per_kinst: f64,
    /// Memory-to-compute ratio: global memory warp instructions / compute warp instructions
    /// (at least one).
    pub mem_to_compute: f64,
    /// Busy fraction of the FP32 pipes (for an FFMA kernel: achieved / peak FP32 flop rate).
    pub fp32_util: f64,
    /// Busy fraction of the busiest compute pipe (int, fp32, fp64, sfu, tensor).
    pub compute_util: f64,
    /// Slate's intensities (compute, memory) of the alone run
    /// ([`slate_intensities`]).
    #[serde(default)]
    pub slate: (f64, f64),
    pub mix: Mix,
}

impl Metrics {
    pub fn new(spec: &GpuSpec, alone: &RunStats, mix: Mix) -> Metrics {
        let a = &alone.apps[0];
        let hz = spec.clocks.core.hz() as f64;
        let secs = a.cycles.max(1) as f64 / hz;
        let c = &a.counters;
        let r = &a.rates;
        let per_sm = (spec.sm.schedulers * spec.sm.issue_width) as f64;
        let util = |n: &str| {
            r.unit_util
                .iter()
                .find(|(u, _)| u == n)
                .map(|(_, v)| *v)
                .unwrap_or(0.0)
        };
        Metrics {
            ipc: r.ipc,
            ipc_max: per_sm * spec.sm.count as f64,
            ipc_max_per_sm: per_sm,
            isu: r.isu,
            l1_hit_rate: r.l1_hit_rate,
            l2_hit_rate: r.l2_hit_rate,
            l2_mpki: r.l2_mpki,
            dram_bw: c.dram_bytes as f64 / secs,
            dram_bw_max: spec.dram.peak_bytes_per_sec() as f64,
            l2_l1_bw: (c.l2_accesses * spec.l2.sector.0) as f64 / secs,
            global_bw: (c.l1_accesses * spec.l1d.sector.0) as f64 / secs,
            llc_bytes_per_kinst: if c.warp_insts > 0 {
                (c.l2_accesses * spec.l2.sector.0) as f64 * 1000.0 / c.warp_insts as f64
            } else {
                0.0
            },
            // A kernel without compute instructions divides by one (stays finite for JSON).
            mem_to_compute: mix.global_mem as f64 / mix.compute.max(1) as f64,
            fp32_util: util("fp32"),
            compute_util: ["int", "fp32", "fp64", "sfu", "tensor"]
                .iter()
                .map(|u| util(u))
                .fold(0.0, f64::max),
            slate: slate_intensities(spec, a),
            mix,
        }
    }
}

/// The two intensities of a solo run, `(compute, memory)`, as fractions of the model's
/// peaks (compute: FP32 throughput over the FP32 peak; memory: L2 traffic over the DRAM peak;
/// the classifier and its thresholds are in `profile::class::slate`).
pub fn slate_intensities(spec: &GpuSpec, a: &AppStats) -> (f64, f64) {
    let cyc = a.cycles.max(1) as f64;
    let fp = &spec.units.fp32;
    let peak_flops = spec.sm.count as f64 * fp.count as f64 * spec.sm.warp_size as f64 * 2.0
        / fp.initiation.0.max(1) as f64;
    let compute = if peak_flops > 0.0 {
        a.counters.sp_flops as f64 / cyc / peak_flops
    } else {
        0.0
    };
    let peak = spec.dram_bytes_per_cycle();
    let bytes = a.counters.l2_accesses as f64 * spec.l2.sector.0 as f64 / cyc;
    (compute, if peak > 0.0 { bytes / peak } else { 0.0 })
}
