//! The saved results of `analyze` and `study` (`metrics.json`): per workload, per policy,
//! the multiprogram metrics, each application's progress, the partition chosen and the
//! stall breakdown — everything `report` needs to redraw the figures.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::Summary;
use crate::arch::GpuSpec;

/// Version of the `StudyResults` JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Value of the `kind` field of a model sweep's results.
pub const SWEEP_KIND: &str = "sweep";

fn null_is_infinite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// A study run on every point of a model sweep (`[sweep]` in the study file): one full
/// result set per point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    /// Always [`SWEEP_KIND`].
    pub kind: String,
    pub schema_version: u32,
    pub study: String,
    pub points: Vec<SweepPoint>,
}

/// One point of a sweep: its model overrides and the study's results there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// `key=value` overrides of the study's model (`dram.channels=16`), in key order.
    pub overrides: Vec<String>,
    pub results: StudyResults,
}

impl SweepResults {
    /// The swept keys, in order, with each one's values in order of first appearance.
    pub fn parameters(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for p in &self.points {
            for o in &p.overrides {
                let (k, v) = o.split_once('=').unwrap_or((o.as_str(), ""));
                match out.iter_mut().find(|(key, _)| key == k) {
                    Some((_, vs)) => {
                        if !vs.iter().any(|x| x == v) {
                            vs.push(v.to_string());
                        }
                    }
                    None => out.push((k.to_string(), vec![v.to_string()])),
                }
            }
        }
        out
    }
}

/// Scheduler cycles without issue, by reason (engine stall stack), summed over SMs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stalls {
    pub short_raw: u64,
    pub long_memory: u64,
    pub unit_busy: u64,
    pub barrier: u64,
    pub idle: u64,
}

impl Stalls {
    pub fn total(&self) -> u64 {
        self.short_raw + self.long_memory + self.unit_busy + self.barrier + self.idle
    }
    pub fn add(&mut self, o: &Stalls) {
        self.short_raw += o.short_raw;
        self.long_memory += o.long_memory;
        self.unit_busy += o.unit_busy;
        self.barrier += o.barrier;
        self.idle += o.idle;
    }
    /// `(label, value)` in drawing order.
    pub fn parts(&self) -> [(&'static str, u64); 5] {
        [
            ("short RAW", self.short_raw),
            ("long memory", self.long_memory),
            ("unit busy", self.unit_busy),
            ("barrier", self.barrier),
            ("idle", self.idle),
        ]
    }
}

impl From<crate::engine::StallStack> for Stalls {
    fn from(s: crate::engine::StallStack) -> Stalls {
        Stalls {
            short_raw: s.short_raw,
            long_memory: s.long_memory,
            unit_busy: s.unit_busy,
            barrier: s.barrier,
            idle: s.idle,
        }
    }
}

/// One application in one policy's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppResult {
    pub name: String,
    pub warp_insts: u64,
    /// Cycles from arrival to finish (or to reaching the instruction budget).
    pub cycles: u64,
    pub alone_warp_insts: u64,
    pub alone_cycles: u64,
    /// IPC shared / IPC alone.
    pub progress: f64,
    /// 1 / progress (infinite when the application made no progress; JSON has no
    /// infinity, so that is written as `null` and read back as infinity).
    #[serde(deserialize_with = "null_is_infinite")]
    pub slowdown: f64,
    pub ipc: f64,
    pub l1_miss_rate: f64,
    pub l2_miss_rate: f64,
    pub stalls: Stalls,
}

/// One policy on one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyRun {
    /// Policy name as given (`left-over`, `even`, `warped-slicer`, `oracle`, ...).
    pub policy: String,
    /// The partition the policy used, for tables: `(T1,T2)` CTAs per SM, `spatial`,
    /// `shared` (no partition), or the oracle's winning plan.
    pub partition: String,
    /// CTAs per SM per application when the policy fixed them.
    pub ctas: Option<Vec<u32>>,
    pub summary: Summary,
    pub apps: Vec<AppResult>,
    /// GPU-wide stall breakdown.
    pub stalls: Stalls,
    pub l1_miss_rate: f64,
    pub l2_miss_rate: f64,
    /// Runs the policy needed (the oracle runs every candidate).
    pub runs: usize,
    /// Decisions a runtime policy took, in order (sampling results, repartitions).
    pub log: Vec<String>,
    /// Whole-run measures beside the standard metrics, each under its own name: `makespan`
    /// (last finish − first start, cycles), `ipc` (warp instructions per makespan cycle),
    /// `l2_gbs` (L2 load + store GB/s), `ff_cycles` (cycles advanced analytically by
    /// fast-forward, only when some were), `ff_spread` (with co-run jumps: the largest
    /// fraction by which an application's rate differed between the halves of the span a
    /// jump was credited from, their `spread_bp`), and a paper's own throughput measure when the
    /// study asks for it (`makespan_speedup`: the reference policy's makespan / this one's —
    /// SiM §4.4).
    #[serde(default)]
    pub measures: std::collections::BTreeMap<String, f64>,
}

/// A workload: applications that share the GPU, with every policy's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadResult {
    /// `A+B[+C]`.
    pub name: String,
    pub apps: Vec<String>,
    /// Group the workload belongs to (e.g. `compute+cache`).
    pub category: String,
    pub runs: Vec<PolicyRun>,
}

impl WorkloadResult {
    pub fn run(&self, policy: &str) -> Option<&PolicyRun> {
        self.runs.iter().find(|r| r.policy == policy)
    }
}

/// An application alone: the reference for normalised progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AloneResult {
    pub name: String,
    pub class: String,
    pub warp_insts: u64,
    pub cycles: u64,
    pub ipc: f64,
    pub l2_mpki: f64,
    pub stalls: Stalls,
    /// Issued warp instructions per scheduler-cycle (nvprof's issue-slot utilisation, a
    /// dual-issued pair counting twice), at most 1.
    #[serde(default)]
    pub isu: f64,
    /// Achieved over peak single-precision FLOP/s (FFMA counting two).
    #[serde(default)]
    pub fp32_util: f64,
    /// L2 load + store bytes per cycle over the DRAM peak per cycle.
    #[serde(default)]
    pub mem_intensity: f64,
    /// The class a policy's profile gives it (Slate's `M_C/M_M`, SiM's `low-isu`), if any.
    #[serde(default)]
    pub label: String,
    /// Busy fraction of each functional-unit kind (`int`, `fp32`, `fp64`, `sfu`, `mem`, ...:
    /// issue cycles over pipes × SMs × cycles), by name; empty in results saved before
    /// 2026-11-26.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub units: BTreeMap<String, f64>,
    /// DRAM bytes moved over the model's peak for the run's cycles.
    #[serde(default)]
    pub dram_util: f64,
    /// L2 sector accesses over the slices' peak of one per slice and cycle.
    #[serde(default)]
    pub l2_util: f64,
    /// The SM resources its CTAs hold at full occupancy (SiM Fig. 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spatial: Option<Spatial>,
}

/// Fractions of one SM's resources a kernel's resident CTAs hold at full occupancy: what
/// SiM §2.2 calls spatial resource utilisation (its Fig. 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spatial {
    pub registers: f64,
    pub shared_memory: f64,
    pub threads: f64,
    pub cta_slots: f64,
}

/// One benchmark alone on a GPU slice of `sms` SMs and `channels` memory channels (UGPU
/// Fig. 2–4), against the whole GPU over the same window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SliceRun {
    pub bench: String,
    pub sms: u32,
    pub channels: u32,
    pub ipc: f64,
    /// IPC alone on the whole GPU.
    pub alone_ipc: f64,
}

/// One benchmark alone under a policy's transformation (SiM Fig. 8, Slate Fig. 5–6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoloRun {
    pub bench: String,
    /// The policy, with the parameter varied when a sweep ran it (`slate task_blocks=5`).
    pub variant: String,
    /// The swept value, if any.
    pub value: Option<f64>,
    pub cycles: u64,
    /// Cycles of the untransformed kernel alone.
    pub alone_cycles: u64,
    /// Registers per thread as transformed / as given (largest over the kernels).
    pub regs: u32,
    pub alone_regs: u32,
    /// Worker (or CTA) slots per SM as transformed / as given.
    pub ctas_per_sm: u32,
    pub alone_ctas_per_sm: u32,
    /// The transformed run's cache, DRAM and IPC figures (Slate Table III); absent in older
    /// results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<SoloCounters>,
    /// The same figures of the untransformed kernel alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_counters: Option<SoloCounters>,
}

/// The per-run figures of Slate's Table III: L1 and L2 hit rates, DRAM bytes per core
/// cycle and IPC (warp instructions per cycle) of one application alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoloCounters {
    pub l1_hit_rate: f64,
    pub l2_hit_rate: f64,
    pub dram_bytes_per_cycle: f64,
    pub ipc: f64,
}

impl SoloCounters {
    /// The figures of an application's rates.
    pub fn of(r: &crate::engine::stats::Rates) -> SoloCounters {
        SoloCounters {
            l1_hit_rate: r.l1_hit_rate,
            l2_hit_rate: r.l2_hit_rate,
            dram_bytes_per_cycle: r.dram_bytes_per_cycle,
            ipc: r.ipc,
        }
    }
}

/// Performance against CTAs per SM (every SM holding the same count), alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchCurve {
    pub name: String,
    pub class: String,
    /// Largest CTAs per SM the kernel can hold.
    pub max_ctas: u32,
    /// `(CTAs per SM, IPC normalised to the best point)`.
    pub points: Vec<(u32, f64)>,
    /// CTA counts a policy's profile dropped (SiM §3.5: a point with fewer CTAs is at
    /// least as fast).
    #[serde(default)]
    pub pruned: Vec<u32>,
    /// What one CTA of the benchmark takes of an SM, in `policy::Need` order (threads,
    /// warps, registers, shared memory bytes, CTA slots), so that a partition can be computed
    /// from the curves alone (Warped-Slicer §IV-A check). Absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub need: Option<[u64; 5]>,
}

/// Everything `analyze` or `study` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyResults {
    pub schema_version: u32,
    pub study: String,
    /// The run mode and policy parameters used (the study file as read, or the analyze
    /// arguments).
    pub config: serde_json::Value,
    pub alone: Vec<AloneResult>,
    pub curves: Vec<BenchCurve>,
    pub workloads: Vec<WorkloadResult>,
    /// The effective GPU model.
    pub model: GpuSpec,
    /// The policy normalised figures divide by (empty: `left-over` if it ran, else the
    /// first policy).
    #[serde(default)]
    pub baseline: String,
    /// The policy the headlines compare with every other (none: no headlines).
    #[serde(default)]
    pub proposed: Option<String>,
    /// Benchmarks alone under transformations and sweeps.
    #[serde(default)]
    pub solo: Vec<SoloRun>,
    /// The figure set `report` draws: `warped-slicer` (default), `sim`, `slate` or `ugpu`
    /// (a name of `crate::policy::PolicySpec::figure_set_names`; empty is the default).
    #[serde(default)]
    pub figures: String,
    /// Benchmarks alone on GPU slices (UGPU Fig. 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<SliceRun>,
    /// `study --ff-check N`: fast-forwarded co-run jobs re-run in detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ff_check: Option<FfCheck>,
}

/// Fast-forwarded co-run jobs of a study run again in detail (`study --ff-check N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FfCheck {
    /// Co-run jobs fast-forward skipped cycles in.
    pub eligible: usize,
    /// Of those, how many were re-run in detail (every policy in turn; within each, the job
    /// with the largest `ff_spread` measure first, then evenly spaced).
    pub checked: usize,
    /// Largest |progress fast-forwarded / progress detailed − 1| over their applications.
    pub largest: f64,
    pub runs: Vec<FfCheckRun>,
}

/// One application of a re-run job: its progress (IPC shared / IPC alone) both ways.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FfCheckRun {
    /// The job's index in the study's job list.
    pub job: usize,
    pub workload: String,
    pub policy: String,
    pub app: String,
    pub fast_forward: f64,
    pub detailed: f64,
    /// `fast_forward / detailed − 1`.
    pub diff: f64,
}

impl StudyResults {
    /// The baseline of normalised figures: the recorded one if it ran, else `left-over`
    /// if it ran, else the first policy.
    pub fn baseline(&self) -> String {
        let ran = self.policies();
        [self.baseline.as_str(), "left-over"]
            .into_iter()
            .find(|b| ran.iter().any(|p| p == b))
            .map(str::to_string)
            .or_else(|| ran.first().cloned())
            .unwrap_or_default()
    }

    /// The proposed policy of the headlines, if recorded and run.
    pub fn proposed(&self) -> Option<String> {
        self.proposed
            .clone()
            .filter(|p| self.policies().contains(p))
    }

    /// Policies in the order of first appearance.
    pub fn policies(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in &self.workloads {
            for r in &w.runs {
                if !out.contains(&r.policy) {
                    out.push(r.policy.clone());
                }
            }
        }
        out
    }
    /// Categories in the order of first appearance.
    pub fn categories(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in &self.workloads {
            if !out.contains(&w.category) {
                out.push(w.category.clone());
            }
        }
        out
    }
}
