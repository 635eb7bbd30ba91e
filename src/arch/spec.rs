//! [`GpuSpec`]: a GPU model as loaded from `models/*.toml`.
//!
//! The file mirrors the hardware tree: `[clocks]`, `[launch]`, `[sm]` (with
//! `[sm.registers]` and `[sm.shared]`), `[units.<kind>]` for each functional-unit kind, `[l1d]`,
//! `[l2]`, `[noc]`, `[dram]` (with `[dram.timing]` and `[dram.mapping]`) `[reconfig]`
//! (costs of moving SMs, contexts and pages between applications) and `[translation]` (TLBs
//! and page-table walkers). Every table rejects
//! unknown keys; sizes, clocks and durations carry units (see [`super::units`]); loading runs
//! [`GpuSpec::validate`] so impossible combinations are rejected with the key that is wrong.
//!
//! This file holds the top level, the SM and its units, and `[reconfig]`; the memory
//! hierarchy's tables are in `spec/memory.rs` (re-exported here).
//!
//! Clock domains of latencies: `sm.*`, `units.*`, `l1d.hit_latency`, `launch.*` and
//! `reconfig.*` cycles are core cycles; `noc.latency` interconnect cycles; `l2.latency` and
//! `dram.latency` L2 cycles; `dram.timing.*` DRAM command-clock cycles.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::units::{Bytes, Cycles, Freq, Time};

mod memory;
pub use memory::*;

/// The bundled models, compiled in so `--gpu qv100` works from any directory.
pub(crate) const BUILTINS: &[(&str, &str)] = &[
    ("qv100", include_str!("../../models/qv100.toml")),
    ("fermi-ws", include_str!("../../models/fermi-ws.toml")),
    (
        "gpgpusim-60sm",
        include_str!("../../models/gpgpusim-60sm.toml"),
    ),
    ("k40c", include_str!("../../models/k40c.toml")),
    ("titanxp", include_str!("../../models/titanxp.toml")),
    (
        "ugpu-80sm-hbm",
        include_str!("../../models/ugpu-80sm-hbm.toml"),
    ),
    ("a100", include_str!("../../models/a100.toml")),
    ("h100", include_str!("../../models/h100.toml")),
    ("rtx3070", include_str!("../../models/rtx3070.toml")),
];

/// A complete GPU model. Plain data: `Clone + PartialEq + Serialize`, so results can embed
/// the effective model and a saved model reloads to an equal value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Short identifier (the file stem for bundled models).
    pub name: String,
    /// One line saying what the model is and where it comes from.
    pub description: String,
    pub clocks: Clocks,
    pub launch: LaunchCosts,
    pub sm: Sm,
    pub units: FuncUnits,
    pub l1d: L1d,
    pub l2: L2,
    pub noc: Noc,
    pub dram: Dram,
    pub reconfig: Reconfig,
    /// (Absent from results written before issue 45: read as off.)
    #[serde(default)]
    pub translation: Translation,
}

impl GpuSpec {
    /// Peak DRAM bandwidth in bytes per core-clock cycle.
    pub fn dram_bytes_per_cycle(&self) -> f64 {
        self.dram.peak_bytes_per_sec() as f64 / self.clocks.core.hz().max(1) as f64
    }
}

/// Clock domains other than DRAM (`dram.clock`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clocks {
    /// SM clock; simulated time is counted in these cycles.
    pub core: Freq,
    /// Interconnect clock.
    pub icnt: Freq,
    /// L2 / memory-partition clock.
    pub l2: Freq,
}

/// Fixed costs of launching work (core cycles).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchCosts {
    /// Delay between a kernel becoming ready and its first CTA being dispatched.
    pub kernel_latency: Cycles,
    /// Delay to dispatch one CTA onto an SM.
    pub cta_latency: Cycles,
    /// Kernels that may be resident on the GPU at once.
    pub max_concurrent_kernels: u32,
}

/// Warp scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// Greedy-then-oldest.
    Gto,
    /// Loose round-robin.
    Lrr,
}

/// One streaming multiprocessor and its per-SM limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sm {
    /// Number of SMs.
    pub count: u32,
    pub warp_size: u32,
    /// Resident threads per SM.
    pub max_threads: u32,
    /// Resident warps per SM.
    pub max_warps: u32,
    /// Resident CTAs (thread blocks) per SM.
    pub max_ctas: u32,
    pub max_threads_per_cta: u32,
    /// Warp schedulers per SM.
    pub schedulers: u32,
    /// Instructions one scheduler may issue per cycle (from one warp).
    pub issue_width: u32,
    /// With `issue_width > 1`: the instructions issued together must go to different units.
    pub issue_different_units_only: bool,
    /// Sub-core model (Volta+): each scheduler owns its slice of units and registers.
    pub sub_cores: bool,
    pub scheduler: SchedPolicy,
    /// The schedulers take turns to issue first: in cycle `t`, scheduler `t mod schedulers`
    /// goes first, then the next ones in order — GPGPU-Sim's `Issue_Prio`. Which one goes
    /// first decides which instruction of a cycle is the oldest where age arbitrates (the
    /// operand collector's allocation). Off: scheduler 0 first in every cycle.
    #[serde(default)]
    pub rotate_issue_priority: bool,
    /// Cycles from issue to a result being usable beyond the unit's own `latency`
    /// (operand collection, dispatch and write-back stages), core cycles.
    pub pipeline_latency: Cycles,
    /// The operand collector between issue and the units (GPGPU-Sim's register-file front
    /// end: collector units, register banks, one dispatch register per unit). Absent: not
    /// simulated, its cost folded into `pipeline_latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operand_collector: Option<OperandCollector>,
    /// A warp exits only once its global stores are acknowledged (the L2 slice sends a
    /// header-sized ack on the reply network when it takes each store, no sooner than an
    /// unloaded round trip), holding its CTA's slot until then — GPGPU-Sim's warp is not
    /// done before its `stores_done`. Off: stores are fire-and-forget.
    #[serde(default)]
    pub exit_waits_for_stores: bool,
    /// A CTA takes the first aligned block of free warp slots (block size = its warps),
    /// held until the whole CTA exits — GPGPU-Sim's `find_available_hwtid`; the slot fixes
    /// the warp's scheduler (slot mod schedulers). Off: the lowest free slots, including
    /// those of warps that finished while their CTA runs on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cta_warp_blocks: bool,
    pub registers: RegFile,
    pub shared: SharedMem,
}

/// The operand collector, as GPGPU-Sim models it: an issued instruction waits in an
/// instruction register (one per unit kind) until a collector unit is free, reads its
/// source registers there from the register banks (each bank serves `port_throughput`
/// reads a cycle; two sources in one bank take turns; warp `w`'s register `r` is in bank
/// `(r + 1 + w) mod banks`), then waits in its unit's dispatch register until the unit
/// accepts it. Collector units are shared by all unit kinds, so instructions waiting for a
/// busy unit can hold up issue to an idle one. On sub-core SMs each scheduler has its own
/// share of the units and banks. Issue to the unit takes 3 of `pipeline_latency`'s cycles
/// when nothing waits. See `engine::sm::collector` for the rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperandCollector {
    /// Collector units per SM, split evenly among the schedulers.
    pub units: u32,
    /// Register banks per SM, split evenly among the schedulers.
    pub register_banks: u32,
    /// Reads one bank serves per cycle.
    pub port_throughput: u32,
    /// Results' write-backs take their register bank for a step ahead of reads, as
    /// GPGPU-Sim's `writeback` does (`models/CALIBRATION.md`, "Register-file write-backs in
    /// the collector"). Off unless set.
    #[serde(default)]
    pub write_back_conflicts: bool,
    /// Memory instructions pass the collector too: each takes a collector unit of its
    /// scheduler, reads its operands there and holds the unit until the SM's one load/store
    /// unit takes it, so a backed-up memory pipeline starves the arithmetic of units, as in
    /// GPGPU-Sim (`models/CALIBRATION.md`, "Memory instructions in the collector"). Off
    /// unless set.
    #[serde(default)]
    pub memory: bool,
}

/// Register file and its allocation rule.
///
/// Registers per warp = `round_up(round_up(regs_per_thread, thread_granularity) × warp_size,
/// warp_alloc_unit)`; warps are allocated within each of `partitions` equal slices of the
/// register file. The CUDA occupancy calculator (Kepler–Hopper) is `thread_granularity = 1,
/// warp_alloc_unit = 256, partitions = 4`; GPGPU-Sim/Accel-Sim is `thread_granularity = 4,
/// warp_alloc_unit = 1, partitions = 1` (it rounds registers per thread to a multiple of 4
/// and the CTA to whole warps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegFile {
    /// 32-bit registers per SM.
    pub per_sm: u32,
    /// Registers one CTA may use.
    pub per_cta: u32,
    pub max_per_thread: u32,
    pub thread_granularity: u32,
    pub warp_alloc_unit: u32,
    pub partitions: u32,
}

/// Shared memory (scratchpad) limits and allocation rule: a CTA is charged
/// `round_up(smem + reserved_per_cta, alloc_unit)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedMem {
    /// Shared memory available to CTAs of one SM (the largest carve-out when unified).
    pub per_sm: Bytes,
    /// Largest allocation of one CTA.
    pub per_cta: Bytes,
    pub alloc_unit: Bytes,
    /// Per-CTA system reservation (1 KiB on compute capability 8.x/9.x).
    pub reserved_per_cta: Bytes,
    pub banks: u32,
    /// Access latency in core cycles.
    pub latency: Cycles,
}

/// Functional-unit kinds, in the same order as `trace::Unit` so the engine can map by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    Int,
    Fp32,
    Fp64,
    Sfu,
    Tensor,
    Branch,
    Tex,
    Uniform,
    Mem,
}

impl UnitKind {
    pub const ALL: [UnitKind; 9] = [
        UnitKind::Int,
        UnitKind::Fp32,
        UnitKind::Fp64,
        UnitKind::Sfu,
        UnitKind::Tensor,
        UnitKind::Branch,
        UnitKind::Tex,
        UnitKind::Uniform,
        UnitKind::Mem,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnitKind::Int => "int",
            UnitKind::Fp32 => "fp32",
            UnitKind::Fp64 => "fp64",
            UnitKind::Sfu => "sfu",
            UnitKind::Tensor => "tensor",
            UnitKind::Branch => "branch",
            UnitKind::Tex => "tex",
            UnitKind::Uniform => "uniform",
            UnitKind::Mem => "mem",
        }
    }
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One kind of functional unit per SM: `count` pipelines, each accepting a warp instruction
/// every `initiation` cycles, whose result is ready `latency` cycles after issue. Throughput
/// per SM is `count / initiation` warp instructions per cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FuncUnit {
    /// Pipelines per SM; 0 when the kind has no hardware of its own (see `shares`) or does
    /// not exist on this GPU (such instructions are then an error for the engine).
    pub count: u32,
    pub latency: Cycles,
    pub initiation: Cycles,
    /// This kind issues to the pipelines of another kind (e.g. Fermi/Kepler run integer
    /// instructions on the FP32 cores); `count` must then be 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares: Option<UnitKind>,
}

/// The functional units of one SM, one table per [`UnitKind`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FuncUnits {
    pub int: FuncUnit,
    pub fp32: FuncUnit,
    pub fp64: FuncUnit,
    pub sfu: FuncUnit,
    pub tensor: FuncUnit,
    pub branch: FuncUnit,
    pub tex: FuncUnit,
    pub uniform: FuncUnit,
    /// Load/store unit (address generation and issue to L1/shared; the cache and
    /// shared-memory latencies are in `[l1d]` and `[sm.shared]`).
    pub mem: FuncUnit,
}

impl FuncUnits {
    pub fn get(&self, k: UnitKind) -> &FuncUnit {
        match k {
            UnitKind::Int => &self.int,
            UnitKind::Fp32 => &self.fp32,
            UnitKind::Fp64 => &self.fp64,
            UnitKind::Sfu => &self.sfu,
            UnitKind::Tensor => &self.tensor,
            UnitKind::Branch => &self.branch,
            UnitKind::Tex => &self.tex,
            UnitKind::Uniform => &self.uniform,
            UnitKind::Mem => &self.mem,
        }
    }
    pub fn get_mut(&mut self, k: UnitKind) -> &mut FuncUnit {
        match k {
            UnitKind::Int => &mut self.int,
            UnitKind::Fp32 => &mut self.fp32,
            UnitKind::Fp64 => &mut self.fp64,
            UnitKind::Sfu => &mut self.sfu,
            UnitKind::Tensor => &mut self.tensor,
            UnitKind::Branch => &mut self.branch,
            UnitKind::Tex => &mut self.tex,
            UnitKind::Uniform => &mut self.uniform,
            UnitKind::Mem => &mut self.mem,
        }
    }
    /// The kind whose pipelines instructions of `k` occupy (`k` itself unless it `shares`).
    pub fn pipe_of(&self, k: UnitKind) -> UnitKind {
        self.get(k).shares.unwrap_or(k)
    }
    /// Whether instructions of kind `k` can execute on this GPU.
    pub fn available(&self, k: UnitKind) -> bool {
        self.get(self.pipe_of(k)).count > 0
    }
}

/// Costs of runtime reconfiguration: SM handover by context switch, GPU time slicing and
/// page migration between channels (UGPU/PageMove).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconfig {
    /// Fixed cost to stop an SM's CTAs and start saving their context (core cycles); the
    /// context bytes themselves go through the memory system.
    pub context_switch_overhead: Cycles,
    /// Bytes of context one SM saves or restores per core cycle at most.
    pub context_save_bandwidth: Bytes,
    /// Length of a time slice when contexts of different processes time-share the GPU.
    pub time_slice: Time,
    /// Fixed cost of a time-slice switch between processes' contexts (the driver's and
    /// scheduler's part; the context bytes still go through the memory system), when it
    /// is not `context_switch_overhead` (absent: it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_switch_overhead: Option<Time>,
    /// Page size used for channel-restricted allocation and migration.
    pub page_size: Bytes,
    /// Driver/OS software delay per migration batch (core cycles).
    pub driver_delay: Cycles,
    /// Latency of one PageMove MIGRATION command (core cycles).
    pub migration_command: Cycles,
    /// MIGRATION commands per page (spread over bank groups and stacks).
    pub migration_commands_per_page: u32,
    /// TLB shootdown and cache flush after a migration batch (core cycles).
    pub flush: Cycles,
}

/// One problem found by [`GpuSpec::validate`]: the dotted key it is about and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecIssue {
    pub key: String,
    pub msg: String,
}

impl fmt::Display for SpecIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.msg)
    }
}
