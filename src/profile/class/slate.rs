//! Slate compute / memory intensity levels L / M / H (Allen et al., IPDPS 2019; seed
//! `003_…`, §III-B2 and Tables I–II): the one classifier both the `slate` policy and the
//! profile's class labels use. The label is `"<c>_C/<m>_M"`, e.g. `"M_C/M_M"`.
//!
//! The measures are Table II's (nvprof on the solo run):
//! * compute intensity = single-precision FLOP/s (`flop_count_sp` over the kernel time,
//!   FFMA counting two) / the model's peak FP32 FLOP/s;
//! * memory intensity = global load + store throughput ("the sum of the global load and
//!   global store bandwidth") / peak DRAM bandwidth; we count the L2 load + store bytes
//!   (the Titan Xp does not cache global accesses in L1 by default, so nvprof's
//!   `gld_throughput + gst_throughput` is the traffic the SMs send to the L2).
//!
//! The paper gives no numeric thresholds: Table I is a pairing policy over the levels, and
//! the levels of its five benchmarks come with their profile (Table II, Titan Xp: peak
//! 547.7 GB/s, 12.15 TFLOP/s FP32). The boundaries sit in the gaps between Table II's
//! groups, as fractions of the model's peaks:
//! * compute: L 0.0000–0.0016 (TR, RG, GS), M 0.013 (BS), H 0.126 (MM) → L below
//!   [`COMPUTE_LOW`] = 0.01, H from [`COMPUTE_HIGH`] = 0.10;
//! * memory: L 0.13 (RG), M 0.62–0.74 (GS, BS, MM), H 1.04 (TR) → L below [`MEM_LOW`] =
//!   0.25, H from [`MEM_HIGH`] = 0.90.
//!
//! Any boundary in those gaps reproduces Table II; these are the ones that also give the
//! engine's own profiles of the suite Table II's labels (`reports/slate/README.md`).

use serde::{Deserialize, Serialize};

pub use crate::profile::metrics::slate_intensities as intensities;
use crate::profile::metrics::Metrics;

pub const MEM_LOW: f64 = 0.25;
pub const MEM_HIGH: f64 = 0.90;
pub const COMPUTE_LOW: f64 = 0.01;
pub const COMPUTE_HIGH: f64 = 0.10;

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

/// Low, medium or high intensity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "L" => Some(Level::L),
            "M" => Some(Level::M),
            "H" => Some(Level::H),
            _ => None,
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
    /// FP32 FLOP/s / peak and global load + store throughput / peak DRAM bandwidth.
    pub compute_frac: f64,
    pub memory_frac: f64,
    pub why: String,
}

/// The levels `(compute, memory)` of intensities `(compute, memory)`.
pub fn levels((c, m): (f64, f64), t: &SlateThresholds) -> (Level, Level) {
    (
        Level::of(c, t.compute_low, t.compute_high),
        Level::of(m, t.mem_low, t.mem_high),
    )
}

pub fn classify(m: &Metrics, t: &SlateThresholds) -> SlateLabel {
    let (cmp, mem) = m.slate;
    let (compute, memory) = levels(m.slate, t);
    SlateLabel {
        class: format!("{}_C/{}_M", compute.name(), memory.name()),
        compute,
        memory,
        compute_frac: cmp,
        memory_frac: mem,
        why: format!(
            "FP32 FLOP/s {:.4}·peak (L < {}, H >= {}); global load + store {:.3}·peak DRAM (L < {}, H >= {})",
            cmp, t.compute_low, t.compute_high, mem, t.mem_low, t.mem_high
        ),
    }
}
