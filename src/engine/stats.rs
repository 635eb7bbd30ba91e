//! What a run measured: live per-application [`Counters`] (read by controllers at hooks)
//! and the final [`RunStats`] (per application, per kernel, GPU-wide), serialised as JSON
//! with a schema version and the effective GPU model.

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;

/// Version of the `RunStats` JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Scheduler cycles in which nothing issued, by the reason of the most-ready warp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallStack {
    /// Waiting on a short-latency (ALU/SFU/shared-memory) result.
    pub short_raw: u64,
    /// Waiting on a global/local memory load or an atomic's return.
    pub long_memory: u64,
    /// Operands ready but the functional unit (or LSU) was busy.
    pub unit_busy: u64,
    /// Waiting at a CTA barrier.
    pub barrier: u64,
    /// The scheduler had no warp at all.
    pub idle: u64,
}

impl StallStack {
    pub fn total(&self) -> u64 {
        self.short_raw + self.long_memory + self.unit_busy + self.barrier + self.idle
    }
    pub fn add(&mut self, o: &StallStack) {
        self.short_raw += o.short_raw;
        self.long_memory += o.long_memory;
        self.unit_busy += o.unit_busy;
        self.barrier += o.barrier;
        self.idle += o.idle;
    }
}

/// Live counters of one application (or of the whole GPU).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub warp_insts: u64,
    pub thread_insts: u64,
    /// Pipeline-busy cycles per unit kind (initiation intervals consumed), indexed like
    /// `trace::Unit`.
    pub unit_busy: [u64; 9],
    pub stalls: StallStack,
    pub l1_accesses: u64,
    pub l1_hits: u64,
    /// Sector requests to the L2 (lanes for atomics), reads and writes.
    pub l2_accesses: u64,
    /// Of those, the ones the L2 held: reads of valid sectors (or of sectors whose fetch
    /// time was known), writes to already valid sectors, atomics on a present line. A write
    /// to a sector not yet valid is a miss, as Accel-Sim counts it (lazy fetch on read).
    pub l2_hits: u64,
    pub noc_bytes: u64,
    pub dram_reads: u64,
    pub dram_writes: u64,
    pub dram_bytes: u64,
    pub row_hits: u64,
    pub ctas_done: u64,
    /// Sum over time of resident warps (warp-cycles), sampled at events.
    pub warp_cycles: u64,
    /// Single-precision floating-point operations (FFMA counts 2), nvprof's
    /// `flop_count_sp`.
    #[serde(default)]
    pub sp_flops: u64,
    /// Pages moved between channels by channel-set changes (remapped for free under
    /// `Migration::None`): under the `stack-page` page table when an access finds them
    /// waiting to move (on demand), otherwise at the change; absent from the JSON when
    /// zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pages_migrated: u64,
    /// Migration-engine cycles of this application's on-demand page migrations (the
    /// per-page cost summed; accesses to a migrating page wait for it); absent from the
    /// JSON when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migration_cycles: u64,
    /// Cycles this application was stopped by the fixed part of channel-set changes
    /// (driver delay, TLB shootdown and cache flush); absent from the JSON when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migration_pause_cycles: u64,
    /// SM-cycles its SMs were blocked saving the context of its preempted CTAs when SMs
    /// were taken from it by a context switch; absent from the JSON when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switch_sm_cycles: u64,
    /// Time slicing: the context switches that handed it the GPU, and the cycles they took
    /// (from the switch until every SM was free again: the fixed overhead, the outgoing
    /// context's save and its own restore); absent from the JSON when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slice_switches: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slice_switch_cycles: u64,
    /// Address translation (`translation.enabled`; absent from the JSON when zero): L1 TLB
    /// lookups (one per line a global access touches) and misses, L2 TLB lookups and
    /// misses, and page-table walks started (an L2 TLB miss; a miss to a page whose walk
    /// is in flight waits for it instead).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tlb_l1_accesses: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tlb_l1_misses: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tlb_l2_accesses: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tlb_l2_misses: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub walks: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Counters {
    pub fn add(&mut self, o: &Counters) {
        self.warp_insts += o.warp_insts;
        self.thread_insts += o.thread_insts;
        for i in 0..9 {
            self.unit_busy[i] += o.unit_busy[i];
        }
        self.stalls.add(&o.stalls);
        self.l1_accesses += o.l1_accesses;
        self.l1_hits += o.l1_hits;
        self.l2_accesses += o.l2_accesses;
        self.l2_hits += o.l2_hits;
        self.noc_bytes += o.noc_bytes;
        self.dram_reads += o.dram_reads;
        self.dram_writes += o.dram_writes;
        self.dram_bytes += o.dram_bytes;
        self.row_hits += o.row_hits;
        self.ctas_done += o.ctas_done;
        self.warp_cycles += o.warp_cycles;
        self.sp_flops += o.sp_flops;
        self.pages_migrated += o.pages_migrated;
        self.migration_cycles += o.migration_cycles;
        self.migration_pause_cycles += o.migration_pause_cycles;
        self.switch_sm_cycles += o.switch_sm_cycles;
        self.slice_switches += o.slice_switches;
        self.slice_switch_cycles += o.slice_switch_cycles;
        self.tlb_l1_accesses += o.tlb_l1_accesses;
        self.tlb_l1_misses += o.tlb_l1_misses;
        self.tlb_l2_accesses += o.tlb_l2_accesses;
        self.tlb_l2_misses += o.tlb_l2_misses;
        self.walks += o.walks;
    }
}

/// One kernel launch of an application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelStats {
    pub name: String,
    pub app: usize,
    /// Index in the application's kernel list.
    pub kernel: usize,
    /// Pass over the application's kernels (relaunches count up from 0).
    pub pass: u32,
    pub arrival: u64,
    pub start: u64,
    pub end: u64,
    pub cycles: u64,
    pub warp_insts: u64,
    pub thread_insts: u64,
    pub ipc: f64,
    pub ctas: u64,
}

/// Derived rates of one application or of the GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Warp instructions per cycle (whole GPU).
    pub ipc: f64,
    /// Thread instructions per cycle.
    pub thread_ipc: f64,
    /// Issue-slot utilisation: issued warp instructions / scheduler issue slots.
    pub isu: f64,
    /// Busy fraction of each unit kind's pipelines (by `trace::Unit` name).
    pub unit_util: Vec<(String, f64)>,
    pub l1_hit_rate: f64,
    pub l2_hit_rate: f64,
    /// L1 misses (sector requests) per thousand warp instructions.
    pub l1_mpki: f64,
    /// L2 misses per thousand warp instructions.
    pub l2_mpki: f64,
    /// DRAM bytes per core cycle, and as a fraction of the model's peak.
    pub dram_bytes_per_cycle: f64,
    pub dram_util: f64,
    pub noc_bytes_per_cycle: f64,
    pub row_hit_rate: f64,
    /// Mean resident warps per SM.
    pub mean_warps_per_sm: f64,
    /// Address translation (absent when it is off): L1 TLB misses per L1 TLB lookup, L2
    /// TLB misses per L2 TLB lookup, page-table walks.
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub tlb_l1_miss_rate: f64,
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub tlb_l2_miss_rate: f64,
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub walks: f64,
}

fn is_zero_f(v: &f64) -> bool {
    *v == 0.0
}

/// Results of one application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppStats {
    pub name: String,
    pub arrival: u64,
    /// First CTA dispatched.
    pub start: u64,
    /// Completion (or when the instruction budget was reached).
    pub end: u64,
    pub cycles: u64,
    /// Passes completed over the kernel sequence.
    pub passes: u32,
    pub counters: Counters,
    pub rates: Rates,
    pub kernels: Vec<KernelStats>,
}

/// One occupancy sample: resident warps of each application over the GPU and which SMs it
/// holds at least one CTA on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub cycle: u64,
    pub warps: Vec<u32>,
    pub sms: Vec<u32>,
}

/// A reconfiguration that happened during the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconfigEvent {
    pub cycle: u64,
    pub what: String,
}

/// Everything a run produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub schema_version: u32,
    /// Cycle at which the run ended.
    pub cycles: u64,
    pub apps: Vec<AppStats>,
    pub gpu: Counters,
    pub gpu_rates: Rates,
    pub timeline: Vec<Sample>,
    pub reconfigs: Vec<ReconfigEvent>,
    /// Simulated events (SM steps, DRAM decisions, hooks): a cost measure.
    pub events: u64,
    /// The effective GPU model.
    pub model: GpuSpec,
    /// What steady-state fast-forward skipped (absent when it was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<FfStats>,
}

/// Steady-state fast-forward over a run: every jump and the cycles it skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FfStats {
    /// Cycles advanced analytically (the rest were simulated).
    pub cycles: u64,
    pub jumps: Vec<FfJump>,
    /// Warp instructions retired analytically as the prefixes of aged CTAs (blocks
    /// started part-way after a jump; see `engine::sim::ff`).
    #[serde(default)]
    pub prefix_insts: u64,
}

/// One fast-forward jump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FfJump {
    /// Cycle the jump started at.
    pub at: u64,
    pub cycles: u64,
    /// CTAs retired without being simulated, per application.
    pub ctas: Vec<u32>,
    /// Warp instructions those CTAs held, per application.
    pub warp_insts: Vec<u64>,
    /// Resident CTAs whose slots' next block starts part-way (the jump's ageing), per
    /// application.
    #[serde(default)]
    pub aged: Vec<u32>,
    /// Blocks of the skipped waves left undispatched because the aged prefixes add up to
    /// their work, per application (`ctas + held_back` is whole waves).
    #[serde(default)]
    pub held_back: Vec<u32>,
    /// What limited the jump: `tail` (the last wave is simulated), `budget`, `phase`
    /// (the skipped CTAs' instruction stream differs from the measured ones), `event`
    /// (an arrival, a controller epoch or sample, a slice, an occupancy sample, the end of
    /// the window or the cycle cap), `align` (co-running applications' waves), or, for a
    /// launch-level jump, `records` (the cap on kernel records).
    pub ended_by: String,
    /// Whole passes over the application's kernels (relaunches) the jump retired: a
    /// launch-level jump, made at a pass boundary (`ctas` and `warp_insts` are those
    /// passes'); absent for a jump over waves of CTAs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub passes: u64,
    /// A co-run jump: every active application skipped the same time at the rate of
    /// its last passes in the current regime (whole passes as kernel records, the rest
    /// as counters only; `passes` counts those of the application at whose pass
    /// boundary it was made). Absent for other jumps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corun: bool,
    /// A co-run jump: per application, how far its warp-instruction rates over the two
    /// halves of the span it was measured over differ, in basis points of their mean (0
    /// for one credited nothing). An indicator of how well that span stands for the
    /// skipped time, not a bound: a rate that swings with the co-runners' phase from one
    /// half to the other is credited from a span that may not be its long-run mean.
    /// Absent for other jumps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_bp: Vec<u32>,
}

impl RunStats {
    pub fn app(&self, name: &str) -> Option<&AppStats> {
        self.apps.iter().find(|a| a.name == name)
    }
}

/// Computes the derived rates of counters over `cycles` on `spec`.
pub fn rates(c: &Counters, cycles: u64, spec: &GpuSpec) -> Rates {
    let cyc = cycles.max(1) as f64;
    let wi = c.warp_insts as f64;
    let slots = cyc * spec.sm.count as f64 * spec.sm.schedulers as f64 * spec.sm.issue_width as f64;
    let per = |x: u64| {
        if wi > 0.0 {
            x as f64 * 1000.0 / wi
        } else {
            0.0
        }
    };
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let peak = spec.dram_bytes_per_cycle();
    let unit_util = crate::trace::Unit::ALL
        .iter()
        .map(|u| {
            let k = crate::arch::UnitKind::ALL[*u as usize];
            let pipes = spec.units.get(spec.units.pipe_of(k)).count.max(1) as f64;
            (
                u.name().to_string(),
                c.unit_busy[*u as usize] as f64 / (cyc * pipes * spec.sm.count as f64),
            )
        })
        .collect();
    Rates {
        ipc: wi / cyc,
        thread_ipc: c.thread_insts as f64 / cyc,
        isu: wi / slots,
        unit_util,
        l1_hit_rate: ratio(c.l1_hits, c.l1_accesses),
        l2_hit_rate: ratio(c.l2_hits, c.l2_accesses),
        l1_mpki: per(c.l1_accesses - c.l1_hits.min(c.l1_accesses)),
        l2_mpki: per(c.l2_accesses - c.l2_hits.min(c.l2_accesses)),
        dram_bytes_per_cycle: c.dram_bytes as f64 / cyc,
        dram_util: if peak > 0.0 {
            c.dram_bytes as f64 / cyc / peak
        } else {
            0.0
        },
        noc_bytes_per_cycle: c.noc_bytes as f64 / cyc,
        row_hit_rate: ratio(c.row_hits, c.dram_reads + c.dram_writes),
        mean_warps_per_sm: c.warp_cycles as f64 / cyc / spec.sm.count as f64,
        tlb_l1_miss_rate: ratio(c.tlb_l1_misses, c.tlb_l1_accesses),
        tlb_l2_miss_rate: ratio(c.tlb_l2_misses, c.tlb_l2_accesses),
        walks: c.walks as f64,
    }
}
