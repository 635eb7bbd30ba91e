//! [`GpuSpec`]: a GPU model as loaded from `models/*.toml`.
//!
//! The file mirrors the hardware tree: `[clocks]`, `[launch]`, `[sm]` (with
//! `[sm.registers]` and `[sm.shared]`), `[units.<kind>]` for each functional-unit kind, `[l1d]`,
//! `[l2]`, `[noc]`, `[dram]` (with `[dram.timing]` and `[dram.mapping]`) and `[reconfig]`
//! (costs of moving SMs, contexts and pages between applications). Every table rejects
//! unknown keys; sizes, clocks and durations carry units (see [`super::units`]); loading runs
//! [`GpuSpec::validate`] so impossible combinations are rejected with the key that is wrong.
//!
//! Clock domains of latencies: `sm.*`, `units.*`, `l1d.hit_latency`, `launch.*` and
//! `reconfig.*` cycles are core cycles; `noc.latency` interconnect cycles; `l2.latency` and
//! `dram.latency` L2 cycles; `dram.timing.*` DRAM command-clock cycles.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::units::{Bytes, Cycles, Freq, Time};
use crate::error::Error;

/// The bundled models, compiled in so `--gpu qv100` works from any directory.
const BUILTINS: &[(&str, &str)] = &[
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
    pub registers: RegFile,
    pub shared: SharedMem,
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

/// Cache write policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    WriteThrough,
    WriteBack,
}

/// How a cache picks the set (and the L2 the slice) of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SetIndex {
    Linear,
    Xor,
    Ipoly,
}

/// Per-SM L1 data cache. With a non-empty `carveout` list the L1D and shared memory share
/// `size` bytes (Volta+): the shared-memory carve-out is the smallest option that holds the
/// resident CTAs' shared memory and the L1D gets the rest, its ways scaled (sets fixed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L1d {
    /// Capacity with no shared-memory carve-out (the unified size when `carveout` is set).
    pub size: Bytes,
    pub line: Bytes,
    pub sector: Bytes,
    /// Ways at `size`.
    pub assoc: u32,
    /// Hit latency in core cycles.
    pub hit_latency: Cycles,
    pub mshrs: u32,
    /// Requests merged into one MSHR entry.
    pub mshr_merge: u32,
    pub miss_queue: u32,
    pub banks: u32,
    pub write_policy: WritePolicy,
    /// Whether global loads are cached (Kepler GK110 and Pascal GP102 cache only local
    /// memory and `ld.global.nc` by default).
    pub cache_global: bool,
    /// The L1D is invalidated when a kernel ends.
    pub flush_at_kernel_end: bool,
    /// Shared-memory carve-out options, ascending; empty = dedicated shared memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carveout: Vec<Bytes>,
}

impl L1d {
    pub fn sets(&self) -> u64 {
        self.size.0 / (self.line.0 * self.assoc as u64).max(1)
    }
    pub fn is_unified(&self) -> bool {
        !self.carveout.is_empty()
    }
}

/// L2 cache: `slices_per_channel` slices in front of every DRAM channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2 {
    pub slices_per_channel: u32,
    pub size_per_slice: Bytes,
    pub line: Bytes,
    pub sector: Bytes,
    pub assoc: u32,
    /// Hit latency (ROP latency in GPGPU-Sim), L2 cycles.
    pub latency: Cycles,
    pub mshrs: u32,
    pub mshr_merge: u32,
    pub miss_queue: u32,
    pub write_policy: WritePolicy,
    pub set_index: SetIndex,
}

impl L2 {
    pub fn sets(&self) -> u64 {
        self.size_per_slice.0 / (self.line.0 * self.assoc as u64).max(1)
    }
}

/// Interconnect topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NocKind {
    Crossbar,
}

/// SM ↔ memory-partition network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noc {
    pub kind: NocKind,
    /// Traversal latency, interconnect cycles.
    pub latency: Cycles,
    pub flit: Bytes,
    /// Bytes one port moves per interconnect cycle.
    pub port_width: Bytes,
    /// Independent networks (e.g. 2: requests and replies).
    pub subnets: u32,
    /// Buffer entries (flits) per port.
    pub buffer: u32,
}

/// DRAM technology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DramKind {
    Gddr5,
    Gddr5x,
    Hbm,
    Hbm2,
    Hbm3,
}

impl DramKind {
    /// HBM generations are stacked: channels belong to stacks.
    pub fn is_stacked(self) -> bool {
        matches!(self, DramKind::Hbm | DramKind::Hbm2 | DramKind::Hbm3)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DramScheduler {
    FrFcfs,
    Fcfs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PagePolicy {
    Open,
    Closed,
}

/// DRAM channels (one memory controller each).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dram {
    pub kind: DramKind,
    /// Command clock.
    pub clock: Freq,
    /// Data transfers per pin per command-clock cycle (2 = DDR, 4 = GDDR5 "QDR").
    pub data_rate: u32,
    pub channels: u32,
    /// HBM stacks the channels are split among (0 for GDDR).
    #[serde(default)]
    pub stacks: u32,
    pub chips_per_channel: u32,
    /// Data bus width of one channel (all its chips).
    pub bus_width: Bytes,
    pub burst_length: u32,
    /// Banks per channel.
    pub banks: u32,
    /// Bank groups per channel (1 = none).
    pub bank_groups: u32,
    /// Row (page) size of one bank across the channel.
    pub row_size: Bytes,
    pub scheduler: DramScheduler,
    pub page_policy: PagePolicy,
    /// Scheduler queue entries per channel.
    pub queue: u32,
    pub return_queue: u32,
    /// Fixed extra latency of the memory-partition pipeline, L2 cycles.
    pub latency: Cycles,
    /// Separate row and column command buses (HBM).
    pub dual_bus: bool,
    pub timing: DramTiming,
    pub mapping: AddrMapping,
}

impl Dram {
    /// Bytes moved by one column access (`bus_width × burst_length`).
    pub fn access_bytes(&self) -> u64 {
        self.bus_width.0 * self.burst_length as u64
    }
    /// Command cycles one access occupies the data bus.
    pub fn burst_cycles(&self) -> u64 {
        (self.burst_length as u64).div_ceil(self.data_rate.max(1) as u64)
    }
    /// Peak bandwidth in bytes per second over all channels.
    pub fn peak_bytes_per_sec(&self) -> u64 {
        self.channels as u64 * self.bus_width.0 * self.data_rate as u64 * self.clock.hz()
    }
    pub fn channels_per_stack(&self) -> Option<u32> {
        (self.stacks > 0).then(|| self.channels / self.stacks)
    }
}

/// DRAM timing constraints in command-clock cycles. A value of 0 means "not modelled"
/// (e.g. `tFAW` in GPGPU-Sim-derived models).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramTiming {
    /// ACT → READ/WRITE, same bank.
    #[serde(rename = "tRCD")]
    pub t_rcd: Cycles,
    /// PRE → ACT, same bank.
    #[serde(rename = "tRP")]
    pub t_rp: Cycles,
    /// ACT → PRE, same bank.
    #[serde(rename = "tRAS")]
    pub t_ras: Cycles,
    /// ACT → ACT, same bank.
    #[serde(rename = "tRC")]
    pub t_rc: Cycles,
    /// READ → data (CAS latency).
    #[serde(rename = "tCL")]
    pub t_cl: Cycles,
    /// WRITE → data.
    #[serde(rename = "tWL")]
    pub t_wl: Cycles,
    /// Column → column, different bank groups.
    #[serde(rename = "tCCDS")]
    pub t_ccd_s: Cycles,
    /// Column → column, same bank group.
    #[serde(rename = "tCCDL")]
    pub t_ccd_l: Cycles,
    /// ACT → ACT, different bank groups.
    #[serde(rename = "tRRDS")]
    pub t_rrd_s: Cycles,
    /// ACT → ACT, same bank group.
    #[serde(rename = "tRRDL")]
    pub t_rrd_l: Cycles,
    /// Window holding at most four ACTs (0 = not modelled).
    #[serde(rename = "tFAW")]
    pub t_faw: Cycles,
    /// End of write data → READ, different bank groups.
    #[serde(rename = "tWTRS")]
    pub t_wtr_s: Cycles,
    /// End of write data → READ, same bank group.
    #[serde(rename = "tWTRL")]
    pub t_wtr_l: Cycles,
    /// READ → PRE.
    #[serde(rename = "tRTP")]
    pub t_rtp: Cycles,
    /// End of write data → PRE (write recovery).
    #[serde(rename = "tWR")]
    pub t_wr: Cycles,
}

/// Physical address → channel mapping scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapScheme {
    /// Consecutive `interleave`-byte chunks go to consecutive channels.
    Linear,
    /// Like linear, with the channel index hashed by an irreducible polynomial (GPGPU-Sim
    /// IPoly) over the higher address bits.
    Ipoly,
    /// UGPU/PageMove: `stack_interleave`-byte chunks rotate over stacks, and the channel
    /// inside a stack changes every `interleave` bytes (a page), so a page stays in one
    /// channel of each stack and can be migrated within a stack.
    StackPage,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddrMapping {
    pub scheme: MapScheme,
    /// Channel interleave granularity.
    pub interleave: Bytes,
    /// Stack interleave granularity (`stack-page` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_interleave: Option<Bytes>,
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

// ---------------------------------------------------------------------------------------------
// Loading

impl GpuSpec {
    /// Names of the bundled models.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTINS.iter().map(|(n, _)| *n)
    }

    /// A bundled model by name (`qv100`, `k40c`, ...).
    pub fn builtin(name: &str) -> Result<GpuSpec, Error> {
        match BUILTINS.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => GpuSpec::from_toml_str(text, format!("models/{n}.toml")),
            None => Err(Error::Usage(format!(
                "unknown built-in GPU model `{name}`; available: {}",
                GpuSpec::builtin_names().collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Reads and validates a model file.
    pub fn load(path: impl AsRef<Path>) -> Result<GpuSpec, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        GpuSpec::from_toml_str(&text, path)
    }

    /// A bundled model name, or a path to a `.toml` file. Names without a path separator or
    /// `.toml` suffix are looked up among the bundled models only.
    pub fn resolve(name_or_path: &str) -> Result<GpuSpec, Error> {
        let looks_like_path = name_or_path.contains('/')
            || name_or_path.contains(std::path::MAIN_SEPARATOR)
            || name_or_path.ends_with(".toml");
        if looks_like_path {
            return GpuSpec::load(name_or_path);
        }
        if BUILTINS.iter().any(|(n, _)| *n == name_or_path) {
            return GpuSpec::builtin(name_or_path);
        }
        if Path::new(name_or_path).is_file() {
            return GpuSpec::load(name_or_path);
        }
        Err(Error::Usage(format!(
            "unknown GPU model `{name_or_path}`: not a built-in model ({}) nor a .toml file",
            GpuSpec::builtin_names().collect::<Vec<_>>().join(", ")
        )))
    }

    /// Parses and validates a model from TOML text; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: impl AsRef<Path>) -> Result<GpuSpec, Error> {
        parse_spec(text, true).map_err(|(loc_line, msg)| Error::input(path.as_ref(), loc_line, msg))
    }

    /// The model as TOML (the effective model, after overrides). Reloads to an equal spec.
    pub fn to_toml_string(&self) -> String {
        // Serialising plain data with string/integer/bool leaves cannot fail; keep a
        // readable fallback rather than panicking.
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot serialise model: {e}\n"))
    }

    /// Applies one `key=value` override (e.g. `l2.size_per_slice=128 KiB`) and re-validates.
    pub fn apply_override(&mut self, kv: &str) -> Result<(), Error> {
        *self = self.with_overrides(&[kv])?;
        Ok(())
    }

    /// A copy with all `key=value` overrides applied together, then deserialised and
    /// validated like a file (so a combination such as `dram.channels=40` plus
    /// `dram.stacks=5` is checked as a whole). Values are TOML (`128`, `true`, `"gto"`,
    /// `["0 KiB", "8 KiB"]`) or, when they do not parse as TOML, a bare string (`128 KiB`).
    pub fn with_overrides<S: AsRef<str>>(&self, sets: &[S]) -> Result<GpuSpec, Error> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let all = sets
            .iter()
            .map(|s| s.as_ref())
            .collect::<Vec<_>>()
            .join(" ");
        let usage = |msg: String| Error::Usage(format!("--set {all}: {msg}"));
        let mut root = toml::Table::try_from(self)
            .map_err(|e| usage(format!("cannot represent the model: {e}")))?;
        for kv in sets {
            let kv = kv.as_ref();
            let (key, raw) = kv.split_once('=').ok_or_else(|| {
                usage(format!(
                    "`{kv}` is not of the form key=value (e.g. l2.size_per_slice=128 KiB)"
                ))
            })?;
            let key = key.trim();
            let parts: Vec<&str> = key.split('.').map(str::trim).collect();
            if key.is_empty()
                || parts.iter().any(|p| {
                    p.is_empty()
                        || !p
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                })
            {
                return Err(usage(format!(
                    "`{key}` is not a dotted key such as dram.timing.tRCD"
                )));
            }
            let value = parse_override_value(raw);
            set_path(&mut root, &parts, value).map_err(usage)?;
        }
        let text = toml::to_string(&root)
            .map_err(|e| usage(format!("cannot represent the overridden model: {e}")))?;
        parse_spec(&text, false).map_err(|(_, msg)| usage(msg))
    }

    /// Cross-field checks. Returns every problem found (empty = valid).
    pub fn issues(&self) -> Vec<SpecIssue> {
        let mut v = Validator::default();
        self.check(&mut v);
        v.issues
    }

    /// Cross-field checks; the first error names the key (see [`GpuSpec::issues`] for all).
    pub fn validate(&self) -> Result<(), SpecIssue> {
        match self.issues().into_iter().next() {
            Some(i) => Err(i),
            None => Ok(()),
        }
    }

    /// Total L2 slices.
    pub fn l2_slices(&self) -> u32 {
        self.dram
            .channels
            .saturating_mul(self.l2.slices_per_channel)
    }

    /// Total L2 capacity.
    pub fn l2_size(&self) -> Bytes {
        Bytes(self.l2.size_per_slice.0 * self.l2_slices() as u64)
    }

    /// Registers one warp is charged with for `regs_per_thread` (allocation rule of
    /// [`RegFile`]).
    pub fn regs_per_warp(&self, regs_per_thread: u32) -> u64 {
        let r = &self.sm.registers;
        let per_thread = round_up(regs_per_thread as u64, r.thread_granularity.max(1) as u64);
        round_up(
            per_thread * self.sm.warp_size as u64,
            r.warp_alloc_unit.max(1) as u64,
        )
    }

    /// Shared memory one CTA is charged with (allocation unit and reservation applied); 0 when
    /// it uses none and nothing is reserved.
    pub fn smem_per_cta_allocated(&self, smem_per_cta: u64) -> u64 {
        let s = &self.sm.shared;
        let need = smem_per_cta + s.reserved_per_cta.0;
        round_up(need, s.alloc_unit.0.max(1))
    }
}

pub(crate) fn round_up(x: u64, unit: u64) -> u64 {
    if unit <= 1 {
        x
    } else {
        x.div_ceil(unit).saturating_mul(unit)
    }
}

fn parse_override_value(raw: &str) -> toml::Value {
    let raw = raw.trim();
    if let Ok(mut t) = format!("v = {raw}").parse::<toml::Table>() {
        if let Some(v) = t.remove("v") {
            return v;
        }
    }
    toml::Value::String(raw.to_string())
}

fn set_path(root: &mut toml::Table, parts: &[&str], value: toml::Value) -> Result<(), String> {
    let Some((last, head)) = parts.split_last() else {
        return Err("empty key".into());
    };
    let mut t = root;
    for (i, p) in head.iter().enumerate() {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => {
                return Err(format!(
                    "`{}` is a value, not a table, so `{}` cannot be set",
                    head[..=i].join("."),
                    parts.join(".")
                ))
            }
        };
    }
    if matches!(t.get(*last), Some(toml::Value::Table(_)))
        && !matches!(value, toml::Value::Table(_))
    {
        return Err(format!(
            "`{}` is a table; set one of its keys instead (e.g. {}.<key>=...)",
            parts.join("."),
            parts.join(".")
        ));
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Deserialises and validates; on error returns (line, message naming the key).
fn parse_spec(text: &str, with_lines: bool) -> Result<GpuSpec, (Option<u64>, String)> {
    let line_of = |span: Option<std::ops::Range<usize>>| -> Option<u64> {
        if !with_lines {
            return None;
        }
        span.map(|s| line_at(text, s.start))
    };
    let spec: GpuSpec = match toml::from_str(text) {
        Ok(s) => s,
        Err(e) => {
            let span = e.span();
            let key = span.clone().and_then(|s| key_at(text, s));
            let msg = match key {
                Some(k) => format!("key `{k}`: {}", e.message()),
                None => format!("invalid model: {}", e.message()),
            };
            return Err((line_of(span), msg));
        }
    };
    let issues = spec.issues();
    if let Some(first) = issues.first() {
        let line = if with_lines {
            line_of_key(text, &first.key)
        } else {
            None
        };
        let mut msg = first.to_string();
        if issues.len() > 1 {
            let rest: Vec<String> = issues[1..].iter().map(|i| i.to_string()).collect();
            msg.push_str(&format!(" (and {} more: {})", rest.len(), rest.join("; ")));
        }
        return Err((line, msg));
    }
    Ok(spec)
}

fn line_at(text: &str, offset: usize) -> u64 {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64
        + 1
}

/// The dotted key whose key or value span contains `span.start` (the innermost one).
fn key_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut best: Option<(usize, String)> = None;
    find_key(doc.get_ref(), "", &span, &mut best);
    best.map(|(_, k)| k)
}

fn contains(outer: &std::ops::Range<usize>, inner: &std::ops::Range<usize>) -> bool {
    if inner.start == inner.end {
        outer.start <= inner.start && inner.start <= outer.end
    } else {
        outer.start <= inner.start && inner.start < outer.end
    }
}

fn find_key(
    table: &toml::de::DeTable<'_>,
    prefix: &str,
    span: &std::ops::Range<usize>,
    best: &mut Option<(usize, String)>,
) {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        for s in [k.span(), v.span()] {
            if contains(&s, span) {
                let len = s.end - s.start;
                let better = match best {
                    None => true,
                    Some((l, p)) => len < *l || (len == *l && path.len() > p.len()),
                };
                if better {
                    *best = Some((len, path.clone()));
                }
            }
        }
        if let Some(inner) = v.get_ref().as_table() {
            find_key(inner, &path, span, best);
        }
    }
}

/// Line of a dotted key in the text (the key itself, or the closest enclosing table).
fn line_of_key(text: &str, key: &str) -> Option<u64> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut line = None;
    for part in key.split('.') {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == part)?;
        line = Some(line_at(text, k.span().start));
        match v.get_ref().as_table() {
            Some(t) => table = t,
            None => break,
        }
    }
    line
}

// ---------------------------------------------------------------------------------------------
// Validation

#[derive(Default)]
struct Validator {
    issues: Vec<SpecIssue>,
}

impl Validator {
    fn err(&mut self, key: &str, msg: impl Into<String>) {
        self.issues.push(SpecIssue {
            key: key.to_string(),
            msg: msg.into(),
        });
    }
    fn positive(&mut self, key: &str, v: u64) {
        if v == 0 {
            self.err(key, "must be at least 1");
        }
    }
    fn pow2(&mut self, key: &str, v: u64) {
        if !v.is_power_of_two() {
            self.err(key, format!("must be a power of two, got {v}"));
        }
    }
    fn cache(
        &mut self,
        prefix: &str,
        size: Bytes,
        line: Bytes,
        sector: Bytes,
        assoc: u32,
        mshrs: u32,
    ) {
        let k = |s: &str| format!("{prefix}.{s}");
        self.pow2(&k("line"), line.0);
        self.pow2(&k("sector"), sector.0);
        if sector.0 > line.0 {
            self.err(
                &k("sector"),
                format!("sector {sector} is larger than the line {line}"),
            );
        }
        self.positive(&k("assoc"), assoc as u64);
        self.positive(&k("mshrs"), mshrs as u64);
        let way_bytes = line.0 * assoc as u64;
        if way_bytes > 0 && line.0 > 0 && (size.0 < way_bytes || !size.0.is_multiple_of(way_bytes))
        {
            self.err(
                &k(if prefix == "l2" {
                    "size_per_slice"
                } else {
                    "size"
                }),
                format!("{size} is not a whole number of sets of {assoc} ways x {line} lines"),
            );
        }
    }
}

impl GpuSpec {
    fn check(&self, v: &mut Validator) {
        if self.name.trim().is_empty() {
            v.err("name", "must not be empty");
        }

        let l = &self.launch;
        v.positive(
            "launch.max_concurrent_kernels",
            l.max_concurrent_kernels as u64,
        );

        // SM limits
        let sm = &self.sm;
        v.positive("sm.count", sm.count as u64);
        v.pow2("sm.warp_size", sm.warp_size as u64);
        v.positive("sm.max_warps", sm.max_warps as u64);
        v.positive("sm.max_ctas", sm.max_ctas as u64);
        v.positive("sm.schedulers", sm.schedulers as u64);
        v.positive("sm.issue_width", sm.issue_width as u64);
        v.positive("sm.max_threads_per_cta", sm.max_threads_per_cta as u64);
        if sm.max_threads < sm.warp_size {
            v.err(
                "sm.max_threads",
                format!(
                    "{} threads per SM is less than one warp ({})",
                    sm.max_threads, sm.warp_size
                ),
            );
        }
        if (sm.max_warps as u64) * (sm.warp_size as u64) < sm.max_threads as u64 {
            v.err(
                "sm.max_warps",
                format!(
                    "{} warps x {} threads cannot hold sm.max_threads = {}",
                    sm.max_warps, sm.warp_size, sm.max_threads
                ),
            );
        }
        if sm.max_threads_per_cta > sm.max_threads {
            v.err(
                "sm.max_threads_per_cta",
                format!(
                    "{} exceeds sm.max_threads = {}",
                    sm.max_threads_per_cta, sm.max_threads
                ),
            );
        }
        if sm.schedulers > 0 && !sm.max_warps.is_multiple_of(sm.schedulers) {
            v.err(
                "sm.schedulers",
                format!(
                    "{} warps per SM do not divide among {} schedulers",
                    sm.max_warps, sm.schedulers
                ),
            );
        }

        let r = &sm.registers;
        v.positive("sm.registers.per_sm", r.per_sm as u64);
        v.positive("sm.registers.per_cta", r.per_cta as u64);
        v.positive("sm.registers.max_per_thread", r.max_per_thread as u64);
        v.positive(
            "sm.registers.thread_granularity",
            r.thread_granularity as u64,
        );
        v.positive("sm.registers.warp_alloc_unit", r.warp_alloc_unit as u64);
        v.positive("sm.registers.partitions", r.partitions as u64);
        if r.per_cta > r.per_sm {
            v.err(
                "sm.registers.per_cta",
                format!("{} exceeds sm.registers.per_sm = {}", r.per_cta, r.per_sm),
            );
        }
        if r.partitions > 0 && !r.per_sm.is_multiple_of(r.partitions) {
            v.err(
                "sm.registers.partitions",
                format!(
                    "{} registers do not split into {} equal partitions",
                    r.per_sm, r.partitions
                ),
            );
        }

        let s = &sm.shared;
        v.positive("sm.shared.alloc_unit", s.alloc_unit.0);
        v.positive("sm.shared.banks", s.banks as u64);
        if s.per_cta > s.per_sm {
            v.err(
                "sm.shared.per_cta",
                format!("{} exceeds sm.shared.per_sm = {}", s.per_cta, s.per_sm),
            );
        }

        // Functional units
        for k in UnitKind::ALL {
            let u = self.units.get(k);
            let key = format!("units.{k}");
            match u.shares {
                Some(t) => {
                    let target = self.units.get(t);
                    if t == k {
                        v.err(
                            &format!("{key}.shares"),
                            "a unit cannot share its own pipelines",
                        );
                    } else if target.shares.is_some() {
                        v.err(
                            &format!("{key}.shares"),
                            format!(
                                "units.{t} itself shares another unit; point at the owning unit"
                            ),
                        );
                    } else if target.count == 0 {
                        v.err(&format!("{key}.shares"), format!("units.{t} has count = 0"));
                    }
                    if u.count != 0 {
                        v.err(
                            &format!("{key}.count"),
                            format!("must be 0 when the unit shares units.{t}'s pipelines"),
                        );
                    }
                }
                None => {
                    if u.count > 0 && u.initiation.0 == 0 {
                        v.err(&format!("{key}.initiation"), "must be at least 1 cycle");
                    }
                }
            }
            if self.units.available(k) && u.latency.0 == 0 {
                v.err(&format!("{key}.latency"), "must be at least 1 cycle");
            }
        }
        for k in [
            UnitKind::Int,
            UnitKind::Fp32,
            UnitKind::Branch,
            UnitKind::Mem,
        ] {
            if !self.units.available(k) {
                v.err(
                    &format!("units.{k}.count"),
                    "every GPU needs this unit: give it a count or `shares` another unit",
                );
            }
        }

        // L1D and shared carve-out
        let l1 = &self.l1d;
        v.cache("l1d", l1.size, l1.line, l1.sector, l1.assoc, l1.mshrs);
        v.positive("l1d.banks", l1.banks as u64);
        if l1.is_unified() {
            if !l1.carveout.windows(2).all(|w| w[0] < w[1]) {
                v.err("l1d.carveout", "options must be strictly ascending");
            }
            if let Some(big) = l1.carveout.iter().find(|c| **c > l1.size) {
                v.err(
                    "l1d.carveout",
                    format!(
                        "option {big} is larger than the unified size l1d.size = {}",
                        l1.size
                    ),
                );
            }
            let max = l1.carveout.last().copied().unwrap_or_default();
            if s.per_sm > max {
                v.err(
                    "sm.shared.per_sm",
                    format!("{} exceeds the largest l1d.carveout option {max}", s.per_sm),
                );
            }
            let set_bytes = l1.sets() * l1.line.0;
            if set_bytes > 0 {
                for c in &l1.carveout {
                    if c.0 <= l1.size.0 && !(l1.size.0 - c.0).is_multiple_of(set_bytes) {
                        v.err(
                            "l1d.carveout",
                            format!(
                                "with carve-out {c} the L1D left ({}) is not a whole number of ways ({} sets x {})",
                                Bytes(l1.size.0 - c.0),
                                l1.sets(),
                                l1.line
                            ),
                        );
                    }
                }
            }
        }

        // L2
        let l2 = &self.l2;
        v.positive("l2.slices_per_channel", l2.slices_per_channel as u64);
        v.cache(
            "l2",
            l2.size_per_slice,
            l2.line,
            l2.sector,
            l2.assoc,
            l2.mshrs,
        );

        // NoC
        let n = &self.noc;
        v.positive("noc.flit", n.flit.0);
        v.positive("noc.port_width", n.port_width.0);
        v.positive("noc.subnets", n.subnets as u64);
        v.positive("noc.buffer", n.buffer as u64);

        // DRAM
        let d = &self.dram;
        v.positive("dram.channels", d.channels as u64);
        v.positive("dram.data_rate", d.data_rate as u64);
        v.positive("dram.chips_per_channel", d.chips_per_channel as u64);
        v.positive("dram.bus_width", d.bus_width.0);
        v.positive("dram.burst_length", d.burst_length as u64);
        v.positive("dram.banks", d.banks as u64);
        v.positive("dram.bank_groups", d.bank_groups as u64);
        v.positive("dram.queue", d.queue as u64);
        v.positive("dram.return_queue", d.return_queue as u64);
        if d.kind.is_stacked() {
            if d.stacks == 0 {
                v.err(
                    "dram.stacks",
                    format!("{:?} memory needs at least one stack", d.kind),
                );
            } else if !d.channels.is_multiple_of(d.stacks) {
                v.err(
                    "dram.channels",
                    format!(
                        "{} channels do not divide evenly among {} HBM stacks (dram.stacks)",
                        d.channels, d.stacks
                    ),
                );
            }
        } else if d.stacks != 0 {
            v.err(
                "dram.stacks",
                format!("{:?} is not stacked memory; stacks must be 0", d.kind),
            );
        }
        if d.bank_groups > 0 && !d.banks.is_multiple_of(d.bank_groups) {
            v.err(
                "dram.bank_groups",
                format!(
                    "{} bank groups do not divide {} banks",
                    d.bank_groups, d.banks
                ),
            );
        }
        v.pow2("dram.row_size", d.row_size.0);
        if d.row_size.0 < d.access_bytes() {
            v.err(
                "dram.row_size",
                format!(
                    "{} is smaller than one access ({} bus x burst {})",
                    d.row_size, d.bus_width, d.burst_length
                ),
            );
        }
        let t = &d.timing;
        for (k, c) in [
            ("tRCD", t.t_rcd),
            ("tRP", t.t_rp),
            ("tRAS", t.t_ras),
            ("tRC", t.t_rc),
            ("tCL", t.t_cl),
            ("tCCDS", t.t_ccd_s),
        ] {
            v.positive(&format!("dram.timing.{k}"), c.0);
        }
        if t.t_rc < t.t_ras {
            v.err(
                "dram.timing.tRC",
                format!("tRC ({}) is shorter than tRAS ({})", t.t_rc.0, t.t_ras.0),
            );
        }
        for (long, short, kl, ks) in [
            (t.t_ccd_l, t.t_ccd_s, "tCCDL", "tCCDS"),
            (t.t_rrd_l, t.t_rrd_s, "tRRDL", "tRRDS"),
            (t.t_wtr_l, t.t_wtr_s, "tWTRL", "tWTRS"),
        ] {
            if long < short {
                v.err(
                    &format!("dram.timing.{kl}"),
                    format!(
                        "same-bank-group {kl} ({}) is shorter than {ks} ({})",
                        long.0, short.0
                    ),
                );
            }
        }
        let m = &d.mapping;
        v.pow2("dram.mapping.interleave", m.interleave.0);
        if m.interleave.0 < d.access_bytes() {
            v.err(
                "dram.mapping.interleave",
                format!(
                    "{} is smaller than one DRAM access ({} B)",
                    m.interleave,
                    d.access_bytes()
                ),
            );
        }
        match (m.scheme, m.stack_interleave) {
            (MapScheme::StackPage, None) => v.err(
                "dram.mapping.stack_interleave",
                "required by scheme = \"stack-page\"",
            ),
            (MapScheme::StackPage, Some(si)) => {
                v.pow2("dram.mapping.stack_interleave", si.0);
                if !d.kind.is_stacked() {
                    v.err(
                        "dram.mapping.scheme",
                        "\"stack-page\" needs stacked (HBM) memory",
                    );
                } else if si.0.saturating_mul(d.stacks as u64) > m.interleave.0 {
                    v.err(
                        "dram.mapping.stack_interleave",
                        format!(
                            "{si} x {} stacks exceeds the channel interleave {}",
                            d.stacks, m.interleave
                        ),
                    );
                }
            }
            (_, Some(_)) => v.err(
                "dram.mapping.stack_interleave",
                "only used by scheme = \"stack-page\"",
            ),
            (_, None) => {}
        }

        // Reconfiguration
        let rc = &self.reconfig;
        v.pow2("reconfig.page_size", rc.page_size.0);
        v.positive(
            "reconfig.context_save_bandwidth",
            rc.context_save_bandwidth.0,
        );
        v.positive(
            "reconfig.migration_commands_per_page",
            rc.migration_commands_per_page as u64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load() {
        for n in GpuSpec::builtin_names() {
            let s = GpuSpec::builtin(n).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(s.name, n);
        }
    }

    #[test]
    fn units_get_mut_matches_get() {
        let mut s = GpuSpec::builtin("qv100").expect("qv100");
        for k in UnitKind::ALL {
            s.units.get_mut(k).count = 7;
            assert_eq!(s.units.get(k).count, 7);
        }
    }

    #[test]
    fn key_lookup() {
        let text = "name = \"x\"\n[l1d]\nsize = \"3 ms\"\n[dram.timing]\ntRCD = 1\n";
        assert_eq!(key_at(text, 24..30).as_deref(), Some("l1d.size"));
        assert_eq!(line_of_key(text, "dram.timing.tRCD"), Some(5));
        assert_eq!(line_of_key(text, "l1d"), Some(2));
    }
}
