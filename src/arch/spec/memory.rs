//! The memory hierarchy's tables of a [`super::GpuSpec`]: `[l1d]`, `[l2]`, `[noc]`, `[dram]`
//! (with `[dram.timing]` and `[dram.mapping]`) and `[translation]`, with their enums and the
//! serde defaults that let results written before a key existed load unchanged.

use serde::{Deserialize, Serialize};

use crate::arch::units::{Bytes, Cycles, Freq};

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

/// Which address of a line an L2 slice's `linear` or `xor` set index is taken from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SetAddress {
    /// The line's address within its slice's share of memory: the bits that chose the
    /// channel, the stack and the slice removed (GPGPU-Sim indexes its L2 with
    /// `partition_address`). Every set of a slice is reachable whatever the mapping.
    #[default]
    Partition,
    /// The whole line address. Where the mapping takes the channel or stack from bits that
    /// the set index also uses, a slice reaches only some of its sets (set camping).
    Full,
}

impl SetAddress {
    fn is_partition(&self) -> bool {
        *self == SetAddress::Partition
    }
}

/// What a write costs when it lands in a sector the L2 slice does not hold and covers only
/// part of it (fewer than the sector's bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartialWrite {
    /// The written sector becomes valid with no DRAM read (GPGPU-Sim's lazy fetch on read,
    /// the `dl2` of every Accel-Sim configuration).
    #[default]
    Validate,
    /// The sector is read from DRAM beside the write (a GH100 reads 32 B for each 8-byte
    /// store into an absent sector: `reports/hw/h200_gups_variants_ncu.txt`).
    Fetch,
}

impl PartialWrite {
    fn is_validate(&self) -> bool {
        *self == PartialWrite::Validate
    }
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
    /// What a load that misses does when every MSHR is busy (default `stall`).
    #[serde(default)]
    pub on_mshr_full: MshrFull,
    /// What one MSHR entry and one `miss_queue` entry hold (default `line`: a line's
    /// missing sectors together). `sector`: one sector, as GPGPU-Sim's sectored L1 keeps
    /// them (`mshr_addr` is sector-aligned, and the miss queue sends one 32 B request a
    /// cycle), so `mshrs` bounds the sectors in flight.
    #[serde(default, skip_serializing_if = "RequestUnit::is_line")]
    pub request_unit: RequestUnit,
    /// Stages of each L1 bank's latency queue (GPGPU-Sim's `l1_latency_queue`, one a bank,
    /// `-gpgpu_l1_latency` deep). With it, an access whose miss finds the miss queue full
    /// blocks only its banks (later accesses to them wait behind it, head of line), and the
    /// load/store unit stalls only when an access finds its bank's queue full. 0 (the
    /// default): no such queues; a full miss queue holds the whole unit.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub bank_queue: u32,
    /// Core cycles from an access entering the L1 until its miss (a load's, or a
    /// write-through store's) leaves for the L2: GPGPU-Sim looks an access up only when it
    /// leaves its bank's latency queue (`l1_latency_queue`, `-gpgpu_l1_latency` stages), so
    /// a miss pays the hit latency before its request goes out. 0 (the default): it goes
    /// out at once, for models whose load latencies were measured end to end (a pointer
    /// chase already includes the lookup). Loads that bypass the L1 and atomics never
    /// enter it.
    #[serde(default, skip_serializing_if = "is_zero_cycles")]
    pub miss_latency: Cycles,
}

fn is_zero_cycles(v: &Cycles) -> bool {
    v.0 == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// What an L1 load miss does when every MSHR of the L1 is busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MshrFull {
    /// It goes to the L2 without an MSHR (not merged, not filled into the L1): an SM's
    /// outstanding misses are not bounded by its MSHRs. An explicit option only.
    Bypass,
    /// It holds the SM's load/store unit until an MSHR frees, and the SM's later loads wait
    /// behind it (in order): an SM has at most `mshrs` lines in flight, as on hardware and
    /// in GPGPU-Sim (a reservation fail holds the LD/ST unit). The default.
    #[default]
    Stall,
}

/// What one L1 MSHR entry and one miss-queue entry hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestUnit {
    /// A line's missing sectors together.
    #[default]
    Line,
    /// One sector: a miss of k sectors takes k entries and leaves the queue over k cycles.
    Sector,
}

impl RequestUnit {
    fn is_line(&self) -> bool {
        *self == RequestUnit::Line
    }
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
    /// Requests the queue between a slice and its DRAM channel holds (GPGPU-Sim's
    /// `L2_dram` queue, the second field of `-gpgpu_dram_partition_queues`): a miss leaves
    /// the slice's `miss_queue` into it, and the channel's scheduler queue takes from it.
    /// With the miss queue and the channel's `dram.queue` it is the buffering a channel's
    /// backlog fills before the slice's input stalls. Absent or 0: no such queue (the
    /// engine before 2026-12-01).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub dram_queue: u32,
    /// Requests a slice's input queue holds (GPGPU-Sim's `icnt_L2` queue, the first field of
    /// `-gpgpu_dram_partition_queues`): a request leaves the crossbar's output buffer only
    /// when the queue has room, so a slice that cannot keep up fills the crossbar behind it.
    /// (Absent from results written before issue 45: read as effectively unbounded.)
    #[serde(default = "unbounded_input_queue")]
    pub input_queue: u32,
    pub write_policy: WritePolicy,
    pub set_index: SetIndex,
    /// The address a `linear` or `xor` set index is computed on (default `partition`).
    /// `ipoly` always hashes the address with the channel and slice bits taken out, as
    /// before this key existed.
    #[serde(default, skip_serializing_if = "SetAddress::is_partition")]
    pub set_address: SetAddress,
    /// Core cycles the slice's atomic unit (ROP) is busy per lane operation of an atomic or
    /// reduction; operations on one slice are serialised.
    pub atomic_initiation: Cycles,
    /// Bytes the slice's tag/data port moves per L2 cycle: a request for n sectors holds
    /// it n × sector / port cycles, so a slice serves at most port bytes a cycle. Absent:
    /// not modelled (the slice is limited only by its crossbar ports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<Bytes>,
    /// Whether a read held at the slice's input (no free MSHR, its line's merge limit, a
    /// set awaiting fills) and the reads held behind it take the `port` for their sectors
    /// when they are served, as every other read does (GPGPU-Sim serves one sector a cycle
    /// whatever waited). `false`: a slice serves its held reads all at once when the fill
    /// they wait for resolves (the engine before 2026-11-29). No effect without `port`.
    #[serde(default = "held_reads_take_port", skip_serializing_if = "is_true")]
    pub held_reads_take_port: bool,
    /// What a store into an absent sector that it covers only in part costs a write-back
    /// L2: `validate` (no DRAM read, the default) or `fetch` (the sector read from DRAM).
    #[serde(default, skip_serializing_if = "PartialWrite::is_validate")]
    pub partial_write: PartialWrite,
}

fn held_reads_take_port() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
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
    /// Every port moves `port_width` bytes a cycle, and a packet takes the earliest cycles
    /// its input and its output have room (an output-queued switch, no head-of-line
    /// blocking).
    Crossbar,
    /// An input-queued crossbar whose inputs are FIFO queues, as GPGPU-Sim's local
    /// crossbar (`-network_mode 2`): packets occupy whole flits and cut through, and a
    /// packet leaves its input only once the one ahead of it has been taken by its output
    /// (head-of-line blocking).
    FifoCrossbar,
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
    /// GDDR6: 16-bit channels, burst 16 at 4 data transfers per command clock (so 32 B
    /// per access over 4 command cycles), banks in bank groups.
    Gddr6,
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
    /// First-ready FCFS: row hits first, then the oldest request (`mem::dram`).
    FrFcfs,
    /// Plain FCFS: accepted by the schema but not modelled, so validation rejects it.
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
    /// Separate row and column command buses (HBM); without them one command (row or
    /// column) per command-clock cycle.
    pub dual_bus: bool,
    /// All-bank refresh every `timing.tREFI` for `timing.tRFC`, channel `c` of `C` offset by
    /// `c * tREFI / C` (GPGPU-Sim has none).
    /// (Absent from results written before issue 45: read as off.)
    #[serde(default)]
    pub refresh: bool,
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
    /// Average refresh interval (all-bank REF to REF).
    #[serde(rename = "tREFI", default)]
    pub t_refi: Cycles,
    /// All-bank refresh cycle time (REF → next ACT).
    #[serde(rename = "tRFC", default)]
    pub t_rfc: Cycles,
}

/// Physical address → channel mapping scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapScheme {
    /// Consecutive `interleave`-byte chunks go to consecutive channels.
    Linear,
    /// Like linear, with the chunk index XOR-folded (bits 7 and 13 places up) before it is
    /// taken modulo the channel count: power-of-two strides spread over the channels.
    Xor,
    /// Like linear, with the channel chosen by GPGPU-Sim's IPoly hash of the chunk index
    /// (`crate::mem::ipoly`; a power-of-two channel count up to 256, else as `xor`).
    Ipoly,
    /// UGPU/PageMove (seed 004, Fig. 8): `stack_interleave`-byte chunks rotate over the
    /// stacks, and the channel inside a stack changes every `interleave` bytes (a page), so
    /// a page spreads over the same channel index of every stack and can be migrated
    /// within each stack.
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
    /// The bits of an address within its channel that form the bank index, lowest first
    /// (GPGPU-Sim's `B` positions in `-gpgpu_mem_addr_mapping` once the channel bits are
    /// taken out); the other bits below the row are the column. Absent: a channel's rows
    /// follow one another bank by bank. Either way consecutive bank indices alternate bank
    /// groups (GPGPU-Sim's `-dram_bnkgrp_indexing_policy 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_bits: Option<Vec<u32>>,
}

/// Address translation: a per-SM L1 TLB, a shared L2 TLB and page-table walkers (see
/// `engine::memsys::translate`). Latencies are core cycles; `l1_latency` and `l2_latency`
/// are what a lookup adds to a global access's issue time (an L1 TLB hit that the
/// measured load latencies already include is 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Translation {
    /// Whether global accesses are translated at all (`false`: as GPGPU-Sim, no TLB).
    pub enabled: bool,
    /// Translation page size (one TLB entry covers one page).
    pub page_size: Bytes,
    /// Entries and associativity of each SM's L1 TLB (`l1_assoc = l1_entries`: fully
    /// associative).
    pub l1_entries: u32,
    pub l1_assoc: u32,
    /// Cycles an L1 TLB hit adds to an access.
    pub l1_latency: Cycles,
    /// Cycles each L1 TLB miss holds its SM's miss port: an SM sends at most one miss to
    /// the L2 TLB every this many cycles (the per-SM translation throughput).
    #[serde(default)]
    pub l1_miss_interval: Cycles,
    /// Entries and associativity of the shared L2 TLB.
    pub l2_entries: u32,
    pub l2_assoc: u32,
    /// Cycles an L2 TLB lookup adds after an L1 TLB miss.
    pub l2_latency: Cycles,
    /// Page-table walks in flight at most (GPU-wide).
    pub walkers: u32,
    /// Dependent page-table reads per walk (levels of the page table walked).
    pub walk_levels: u32,
    /// Pages whose translations one walk installs in the L2 TLB: the walked page's aligned
    /// group of this many consecutive pages, whose last-level entries arrive in the walk's
    /// one last read. 1 (absent): the walked page only.
    #[serde(default = "one_page")]
    pub walk_fill: u32,
    /// Cycles an L1 TLB miss holds its SM's miss port when the L2 TLB has no valid
    /// translation for it yet (it walks, or waits for its group's walk in flight), in place
    /// of `l1_miss_interval`. 0 (absent): `l1_miss_interval`.
    #[serde(default)]
    pub l2_miss_interval: Cycles,
    /// The walkers cache the entries of the levels above the last (a page-walk cache): once
    /// an upper-level line has been read, later walks take it from there and read only the
    /// last level from memory. `false` (absent): every level is read every walk.
    #[serde(default)]
    pub walk_cache: bool,
}

/// `translation.walk_fill` of models written before it existed: a walk installs its own page.
fn one_page() -> u32 {
    1
}

/// `l2.input_queue` of results written before issue 45 (no bound then).
fn unbounded_input_queue() -> u32 {
    1 << 20
}

impl Default for Translation {
    /// Off (results written before issue 45 have no `[translation]`); the geometry is a
    /// valid placeholder.
    fn default() -> Self {
        Translation {
            enabled: false,
            page_size: Bytes(2 << 20),
            l1_entries: 16,
            l1_assoc: 16,
            l1_latency: Cycles(0),
            l1_miss_interval: Cycles(0),
            l2_entries: 4096,
            l2_assoc: 16,
            l2_latency: Cycles(0),
            walkers: 1,
            walk_levels: 1,
            walk_fill: 1,
            l2_miss_interval: Cycles(0),
            walk_cache: false,
        }
    }
}
