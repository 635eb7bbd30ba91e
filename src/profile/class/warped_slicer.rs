//! Warped-Slicer kernel types (Xu et al., ISCA 2016; seed `000_…`): the Table II "Type"
//! (compute / memory / L1-cache-sensitive) and the Fig. 3a performance-vs-CTA category
//! (compute non-saturating, compute saturating, memory, L1 cache sensitive).
//!
//! Sources and rules:
//! * Memory: "L2 misses per kilo warp instructions executed (L2 MPKI) is high (≥ 30)"
//!   (§III, seed lines 440–445) — measured on the full-GPU alone run.
//! * L1 cache sensitive: "continue to increase their performance with CTA count up to the
//!   point when the L1 cache is filled up. At that point, adding more CTAs … results in L1
//!   cache thrashing and performance degradation" (§IV, lines 643–648). The paper gives no
//!   number; we require both symptoms on the CTA curve: IPC at the maximum CTA count at
//!   least [`WsThresholds::cache_drop`] below the curve's peak, reached at fewer CTAs, *and*
//!   the L1 hit rate at the maximum at least [`WsThresholds::cache_hit_drop`] (absolute)
//!   below its value at the peak. A cache-sensitive kernel is typed Cache even when its MPKI
//!   is high (MVP: MPKI 89.7, Type Cache; Table II).
//! * Compute saturating vs non-saturating: "performance continues to increase with CTAs but
//!   then it saturates" (IMG) vs "continues to increase" (HOT) (lines 630–637). We call a
//!   curve saturating when it first reaches [`WsThresholds::saturation`] of its peak at no
//!   more than [`WsThresholds::saturation_by`] of the maximum CTA count (the last quarter of
//!   the occupancy range adds less than 5%).

use serde::{Deserialize, Serialize};

use crate::profile::metrics::Metrics;
use crate::profile::Curve;

/// L2 MPKI at or above which a kernel is memory intensive (§III).
pub const MEMORY_MPKI: f64 = 30.0;
/// Relative IPC loss from the peak to the maximum CTA count that marks L1 thrashing.
pub const CACHE_DROP: f64 = 0.05;
/// Absolute L1 hit-rate loss from the peak to the maximum CTA count that must accompany it.
pub const CACHE_HIT_DROP: f64 = 0.05;
/// Fraction of the peak IPC counted as saturated.
pub const SATURATION: f64 = 0.95;
/// Saturated at or before this fraction of the maximum CTA count = compute saturating.
pub const SATURATION_BY: f64 = 0.75;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WsThresholds {
    pub memory_mpki: f64,
    pub cache_drop: f64,
    pub cache_hit_drop: f64,
    pub saturation: f64,
    pub saturation_by: f64,
}

impl Default for WsThresholds {
    fn default() -> Self {
        WsThresholds {
            memory_mpki: MEMORY_MPKI,
            cache_drop: CACHE_DROP,
            cache_hit_drop: CACHE_HIT_DROP,
            saturation: SATURATION,
            saturation_by: SATURATION_BY,
        }
    }
}

/// Table II "Type".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WsType {
    Compute,
    Memory,
    Cache,
}

/// Fig. 3a category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WsCurve {
    ComputeNonSaturating,
    ComputeSaturating,
    Memory,
    Cache,
}

impl WsType {
    pub fn name(self) -> &'static str {
        match self {
            WsType::Compute => "compute",
            WsType::Memory => "memory",
            WsType::Cache => "cache",
        }
    }
}

impl WsCurve {
    pub fn name(self) -> &'static str {
        match self {
            WsCurve::ComputeNonSaturating => "compute-non-saturating",
            WsCurve::ComputeSaturating => "compute-saturating",
            WsCurve::Memory => "memory",
            WsCurve::Cache => "cache",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WsLabel {
    #[serde(rename = "type")]
    pub kind: WsType,
    pub curve: WsCurve,
    /// CTAs per SM at the curve's peak IPC, and the first count reaching `saturation` of it.
    pub peak_ctas: u32,
    pub saturated_ctas: u32,
    pub max_ctas: u32,
    pub why: String,
}

/// Classifies from the alone-run metrics and the CTAs-per-SM curve (points in increasing x).
pub fn classify(m: &Metrics, ctas: &Curve, t: &WsThresholds) -> WsLabel {
    let pts = &ctas.points;
    let max_ctas = pts.last().map_or(0, |p| p.x);
    // First point of the highest IPC (ties go to fewer CTAs).
    let peak = pts
        .iter()
        .fold(None::<&crate::profile::Point>, |b, p| match b {
            Some(b) if b.ipc >= p.ipc => Some(b),
            _ => Some(p),
        });
    let (peak_ipc, peak_ctas, peak_hit) =
        peak.map_or((0.0, 0, 0.0), |p| (p.ipc, p.x, p.l1_hit_rate));
    let saturated_ctas = pts
        .iter()
        .find(|p| p.ipc >= t.saturation * peak_ipc)
        .map_or(max_ctas, |p| p.x);
    let last = pts.last();
    let drop = last.map_or(0.0, |l| {
        if peak_ipc > 0.0 {
            1.0 - l.ipc / peak_ipc
        } else {
            0.0
        }
    });
    let hit_drop = last.map_or(0.0, |l| peak_hit - l.l1_hit_rate);
    let cache = peak_ctas < max_ctas && drop >= t.cache_drop && hit_drop >= t.cache_hit_drop;
    let memory = m.l2_mpki >= t.memory_mpki;
    let saturating = (saturated_ctas as f64) <= t.saturation_by * max_ctas as f64;
    let (kind, curve) = if cache {
        (WsType::Cache, WsCurve::Cache)
    } else if memory {
        (WsType::Memory, WsCurve::Memory)
    } else if saturating {
        (WsType::Compute, WsCurve::ComputeSaturating)
    } else {
        (WsType::Compute, WsCurve::ComputeNonSaturating)
    };
    let why = format!(
        "L2 MPKI {:.1} ({} {}); IPC peaks at {} of {} CTAs/SM, {:.0}% of peak reached at {}; \
         IPC at max {:.1}% below peak, L1 hit rate {:+.3} from peak to max",
        m.l2_mpki,
        if memory { ">=" } else { "<" },
        t.memory_mpki,
        peak_ctas,
        max_ctas,
        t.saturation * 100.0,
        saturated_ctas,
        drop * 100.0,
        -hit_drop,
    );
    WsLabel {
        kind,
        curve,
        peak_ctas,
        saturated_ctas,
        max_ctas,
        why,
    }
}
