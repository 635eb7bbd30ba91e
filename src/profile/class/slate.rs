//! Slate compute / memory intensity levels L / M / H (Allen et al., CLUSTER 2019; seed
//! `003_…`, §III-B2 and Tables I–II). The label is `"<c>_C/<m>_M"`, e.g. `"M_C/M_M"`.
//!
//! The paper gives no numeric thresholds: Table I is a pairing policy over the levels, and
//! the levels of its five benchmarks come with their `nvprof` profile (Table II, Titan Xp:
//! peak 547.7 GB/s, 12.15 TFLOP/s FP32). We place the level boundaries between Table II's
//! groups, as fractions of the model's peaks:
//! * memory intensity = global load + store throughput (Table II: "the sum of the global
//!   load and global store bandwidth") / peak DRAM bandwidth. Table II: L 0.13 (RG),
//!   M 0.62–0.74 (GS, BS, MM), H 1.04 (TR) → L below [`MEM_LOW`] = 0.35, H from
//!   [`MEM_HIGH`] = 0.90.
//! * compute intensity = FP32 flop rate / peak FP32 rate, approximated by the busy fraction
//!   of the FP32 pipes (exact for an FFMA stream). Table II: L 0.0000–0.0016 (TR, RG, GS),
//!   M 0.013 (BS), H 0.126 (MM) → L below [`COMPUTE_LOW`] = 0.005, H from
//!   [`COMPUTE_HIGH`] = 0.05 (near the geometric midpoints).

use serde::{Deserialize, Serialize};

use crate::profile::metrics::Metrics;

pub const MEM_LOW: f64 = 0.35;
pub const MEM_HIGH: f64 = 0.90;
pub const COMPUTE_LOW: f64 = 0.005;
pub const COMPUTE_HIGH: f64 = 0.05;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlateThresholds {
    pub mem_low: f64,
    pub mem_high: f64,
    pub compute_low: f64,
    pub compute_high: f64,
}

impl Default for SlateThresholds {
    fn default() -> Self {
        SlateThresholds {
            mem_low: MEM_LOW,
            mem_high: MEM_HIGH,
            compute_low: COMPUTE_LOW,
            compute_high: COMPUTE_HIGH,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    L,
    M,
    H,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::L => "L",
            Level::M => "M",
            Level::H => "H",
        }
    }
    fn of(v: f64, low: f64, high: f64) -> Level {
        if v < low {
            Level::L
        } else if v < high {
            Level::M
        } else {
            Level::H
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlateLabel {
    pub class: String,
    pub compute: Level,
    pub memory: Level,
    /// FP32 rate / peak and global throughput / peak DRAM bandwidth.
    pub compute_frac: f64,
    pub memory_frac: f64,
    pub why: String,
}

pub fn classify(m: &Metrics, t: &SlateThresholds) -> SlateLabel {
    let mem = m.global_bw / m.dram_bw_max.max(1.0);
    let cmp = m.fp32_util;
    let memory = Level::of(mem, t.mem_low, t.mem_high);
    let compute = Level::of(cmp, t.compute_low, t.compute_high);
    SlateLabel {
        class: format!("{}_C/{}_M", compute.name(), memory.name()),
        compute,
        memory,
        compute_frac: cmp,
        memory_frac: mem,
        why: format!(
            "FP32 pipes {:.4} busy (L < {}, H >= {}); global throughput {:.3}·peak DRAM (L < {}, H >= {})",
            cmp, t.compute_low, t.compute_high, mem, t.mem_low, t.mem_high
        ),
    }
}
