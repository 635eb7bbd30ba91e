//! What a run is asked to do: the workload (applications as kernel sequences with arrival
//! times, optionally persistent-thread), the run mode, the initial placement (dispatch
//! order, SM masks, CTA quotas, resource fractions, channel sets, time slicing) and the
//! controller interface through which policies reconfigure a run at hook times.

use std::sync::Arc;

use crate::engine::stats::Counters;
use crate::trace::KernelSource;

/// A kernel transformed into persistent workers (SiM §3.4 / Fig. 5, Slate §III-A):
/// `workers_per_sm` worker CTAs per SM pull tasks of `task_blocks` logical blocks from a
/// global counter with one atomic each (through the L2, where the counter lives); a
/// worker checks the preemption flag between tasks and exits when it is raised or the
/// counter has passed the grid. The transformation's resource overheads are inputs (SiM
/// §4.3 measured +23% registers on average and 8 B of shared memory); its time overhead
/// is simulated (the atomics and the worker's exit test), never a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persistent {
    pub workers_per_sm: u32,
    pub task_blocks: u32,
    /// Registers per thread grow by this many percent (rounded up).
    #[serde(default)]
    pub extra_regs_pct: u32,
    /// Shared memory per worker CTA grows by this many bytes.
    #[serde(default)]
    pub extra_shmem: u32,
}

impl Persistent {
    /// `workers_per_sm` workers pulling `task_blocks` blocks per task, no resource overhead.
    pub fn new(workers_per_sm: u32, task_blocks: u32) -> Persistent {
        Persistent {
            workers_per_sm,
            task_blocks,
            extra_regs_pct: 0,
            extra_shmem: 0,
        }
    }

    /// The registers per thread and shared memory per CTA of a kernel needing `nregs` and
    /// `shmem` once transformed.
    pub fn footprint(&self, nregs: u32, shmem: u32) -> (u32, u32) {
        (
            (nregs as u64 * (100 + self.extra_regs_pct as u64)).div_ceil(100) as u32,
            shmem + self.extra_shmem,
        )
    }
}

/// One application: kernels in stream order, arriving at `arrival` (core cycles).
#[derive(Clone)]
pub struct AppSpec {
    pub name: String,
    pub kernels: Vec<Arc<dyn KernelSource>>,
    pub arrival: u64,
    pub persistent: Option<Persistent>,
}

impl AppSpec {
    pub fn new(name: impl Into<String>, kernels: Vec<Arc<dyn KernelSource>>) -> AppSpec {
        AppSpec {
            name: name.into(),
            kernels,
            arrival: 0,
            persistent: None,
        }
    }
    /// Warp instructions of one pass over the application's kernels.
    pub fn warp_insts(&self) -> u64 {
        self.kernels.iter().map(|k| k.total_warp_insts()).sum()
    }
}

/// When a run ends.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// Every application runs its kernels once, to completion.
    Completion,
    /// Each application runs (relaunching its kernel sequence when it ends) until it has
    /// executed its budget of warp instructions (Warped-Slicer §V); the run ends when all
    /// have. An application's finish time is when it reached its budget; it is then halted
    /// and its resources are released to the others.
    Budget(Vec<u64>),
    /// A fixed window of core cycles; applications that finish early relaunch (UGPU).
    Window(u64),
}

/// How the CTA dispatcher chooses among kernels that may place a CTA on an SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchOrder {
    /// On each SM the kernel of the application that arrived first (listing order among
    /// equal arrival times) takes all it can; later ones fill what is left, even while the
    /// first still has CTAs waiting (the order `validate` is calibrated with
    /// against Accel-Sim's concurrent-stream pairs). The strictly in-order hardware rule — a later kernel
    /// starts only after every earlier one has dispatched all its CTAs — is the
    /// `left-over` policy (`policy::baseline::InOrder`), built on this order plus SM masks.
    LeftOver,
    /// Kernels take turns, one CTA each.
    RoundRobin,
}

/// Per-application placement constraints. `None` = unconstrained.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AppPlacement {
    /// SMs the application may use (inter-SM partitioning).
    pub sms: Option<Vec<bool>>,
    /// Most CTAs of the application per SM, per SM (intra-SM partitioning).
    pub cta_quota: Option<Vec<u32>>,
    /// Largest fraction of every SM resource (threads, warps, registers, shared memory, CTA
    /// slots) the application may hold (Even split: 1/K).
    pub fraction: Option<f64>,
    /// Memory channels the application's pages map into (UGPU).
    pub channels: Option<Vec<u32>>,
}

/// Initial placement of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    pub order: DispatchOrder,
    pub apps: Vec<AppPlacement>,
    /// A kernel running alone is spread evenly: at most `ceil(grid / SMs)` CTAs per SM (what
    /// GPGPU-Sim/Accel-Sim do without concurrent kernels).
    pub spread_alone: bool,
    /// Applications time-share the whole GPU (CUDA across processes): one context runs at
    /// a time for `reconfig.time_slice`, switching costs a context save and restore.
    pub time_slicing: bool,
    /// Registers and shared memory are allocated as contiguous ranges, first fit (FCFS
    /// intra-SM allocation, Warped-Slicer Fig. 2a): a freed range between two resident CTAs
    /// only takes a CTA that fits in it.
    #[serde(default)]
    pub contiguous: bool,
}

impl Placement {
    pub fn left_over(apps: usize) -> Placement {
        Placement {
            order: DispatchOrder::LeftOver,
            apps: vec![AppPlacement::default(); apps],
            spread_alone: apps == 1,
            time_slicing: false,
            contiguous: false,
        }
    }
}

/// The default cycle cap ([`RunConfig::max_cycles`]) of runs that go to completion (`run`,
/// profiles, a policy's own solo runs): a run that has not finished by then is an error
/// naming what still runs, never a row of results.
pub const MAX_CYCLES: u64 = 2_000_000_000;

/// Everything a run needs besides the GPU model and the workload.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunConfig {
    pub mode: RunMode,
    pub placement: Placement,
    /// Occupancy samples are taken every this many cycles (0: none).
    pub sample_every: u64,
    /// Safety stop: a run never goes past this many cycles.
    pub max_cycles: u64,
    /// Steady-state fast-forward (`engine::sim::ff`); `None`: every cycle is simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<FastForward>,
}

/// Parameters of steady-state fast-forward (see `engine::sim::ff` for what they mean).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FastForward {
    /// Cycles per measurement window.
    pub window: u64,
    /// Fewest windows a steady span holds (it also holds two waves of CTA completions
    /// of every running application).
    pub windows: u32,
    /// Waves of CTA completions (resident CTA counts) each half of a steady span holds,
    /// for every running application.
    pub waves: u32,
    /// A jump is at most this many times the span it was measured over (0: unbounded):
    /// long runs are measured again between jumps, at other parts of the grid, like a
    /// sampling simulator's periodic samples.
    pub stride: u32,
    /// The same bound for co-run jumps (`ff::corun`), over the longest co-runner's
    /// measured passes (0: unbounded). Larger than `stride`: a co-run jump starts and ends
    /// at a pass boundary of the application it is made for and is measured over whole
    /// passes of every co-runner, so it does not freeze a part-way state as a wave jump
    /// does (BENCHMARKS.md, "Co-run fast-forward at the paper's window").
    pub corun_stride: u32,
    /// Largest relative difference of IPC and DRAM bandwidth between the span's halves.
    pub tolerance: f64,
    /// Aged jumps (off by default: plain jumps leave the state as it was): each jump
    /// ages resident CTAs still in step (every slot's next block starts part-way, by the
    /// random walk of CTA durations the skipped waves would have made, at the point of
    /// its stream the measured progress curve gives), a launch's first long jump is
    /// preceded, where the slots were seen to drift apart, by a one-wave jump that ages
    /// the state by half of it (its rate is measured at the midpoint's age), spans start
    /// one wave after a jump, and a jump's time is corrected by the rate the next steady
    /// span measures (trapezoid). See `engine::sim::ff`.
    pub age: bool,
}

impl Default for FastForward {
    fn default() -> Self {
        FastForward {
            window: 2000,
            windows: 4,
            waves: 2,
            stride: 8,
            corun_stride: 64,
            tolerance: 0.03,
            age: false,
        }
    }
}

/// A meaningless fast-forward setting ([`FastForward::check`]), naming its key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FfSettingError {
    #[error("window must be at least 1 cycle, got 0")]
    Window,
    #[error("windows must be at least 1, got 0")]
    Windows,
    #[error("waves must be at least 1, got 0")]
    Waves,
    #[error("tolerance must be a fraction of at least 0 (e.g. 0.03), got {0}")]
    Tolerance(f64),
}

impl FastForward {
    /// Why a setting is meaningless, naming its key, if one is (study files, queue-study
    /// files and the `--ff-*` flags all go through here). A NaN tolerance would silently
    /// turn every jump off; zero windows or waves would jump on no evidence.
    pub fn check(&self) -> Result<(), FfSettingError> {
        if self.window == 0 {
            return Err(FfSettingError::Window);
        }
        if self.windows == 0 {
            return Err(FfSettingError::Windows);
        }
        if self.waves == 0 {
            return Err(FfSettingError::Waves);
        }
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0) {
            return Err(FfSettingError::Tolerance(self.tolerance));
        }
        Ok(())
    }
}

impl RunConfig {
    pub fn completion(apps: usize) -> RunConfig {
        RunConfig {
            mode: RunMode::Completion,
            placement: Placement::left_over(apps),
            sample_every: 0,
            max_cycles: MAX_CYCLES,
            fast_forward: None,
        }
    }
}

/// How an SM changes hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Handover {
    /// The old owner's CTAs run to completion; no new ones are placed.
    Drain,
    /// The old owner's CTAs are preempted now: their context (registers + shared memory)
    /// is saved through the memory system and restored later on one of its SMs.
    Switch,
}

/// How pages move when an application's channel set changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Migration {
    /// Pages are remapped for free (an offline/static partition).
    None,
    /// Each page is read and written through the memory controllers, the NoC and the L2
    /// (UGPU-Ori, traditional migration; also accepted as `ori`).
    #[serde(alias = "ori")]
    Copy,
    /// Parallel in-stack MIGRATION commands (PageMove).
    PageMove,
    /// The custom `stack-page` mapping (moves stay inside a stack) without PageMove's
    /// crossbar: ordinary READ then WRITE bursts per line over the source and destination
    /// channels of each stack, stacks in parallel (no NoC, no L2).
    Soft,
}

/// A reconfiguration requested by a controller; applied at the hook's time.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    SetSms {
        app: usize,
        sms: Vec<bool>,
        handover: Handover,
    },
    SetQuota {
        app: usize,
        quota: Option<Vec<u32>>,
    },
    SetFraction {
        app: usize,
        fraction: Option<f64>,
    },
    SetChannels {
        app: usize,
        channels: Vec<u32>,
        migration: Migration,
    },
    /// Persistent kernels: target workers per SM; extra workers stop at their next task
    /// boundary, missing ones are launched.
    SetWorkers {
        app: usize,
        per_sm: u32,
    },
    /// Calls the controller back with [`Hook::Sample`] at `at`.
    Sample {
        at: u64,
        id: u32,
    },
    /// Ends the run now.
    Stop,
}

/// Why a controller is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Start,
    KernelArrival { app: usize, kernel: usize },
    KernelDeparture { app: usize, kernel: usize },
    LastCtaDispatched { app: usize, kernel: usize },
    Epoch,
    Sample { id: u32 },
}

/// Live state of one application as a controller sees it.
#[derive(Clone, Debug)]
pub struct AppView {
    pub counters: Counters,
    pub sms: Vec<bool>,
    /// Resident CTAs per SM.
    pub ctas: Vec<u32>,
    /// Warp instructions issued so far on each SM.
    pub sm_insts: Vec<u64>,
    /// Kernel index running now, if any.
    pub kernel: Option<usize>,
    /// Logical blocks of the running kernel not yet started / total.
    pub blocks_left: u32,
    pub blocks_total: u32,
    pub done: bool,
}

/// What a controller reads at a hook.
#[derive(Clone, Debug)]
pub struct View {
    pub now: u64,
    pub apps: Vec<AppView>,
}

/// A runtime policy: called at hooks, answers with actions.
pub trait Controller {
    /// Calls [`Hook::Epoch`] every this many cycles.
    fn epoch(&self) -> Option<u64> {
        None
    }
    /// Whether an epoch that returns no action only watches for a change that a steady
    /// span rules out (Warped-Slicer's phase-change check: a sustained IPC change far
    /// larger than fast-forward's tolerance). Fast-forward then keeps measuring across
    /// such epochs and jumps over them; the epochs keep their period in simulated
    /// (engine) time and the first one after a jump sees the jump's work in its interval.
    fn epoch_passive(&self) -> bool {
        false
    }
    /// Whether the controller takes no action on an application's kernel arrivals and
    /// departures while it runs alone: fast-forward may then retire whole relaunches of
    /// it (launch-level jumps), whose hooks it does not call.
    fn launches_passive(&self) -> bool {
        false
    }
    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>);
}

/// The controller of a static placement: does nothing.
pub struct NoControl;

impl Controller for NoControl {
    fn launches_passive(&self) -> bool {
        true
    }
    fn on_hook(&mut self, _: Hook, _: &View, _: &mut Vec<Action>) {}
}
