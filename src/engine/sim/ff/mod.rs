//! Steady-state fast-forward: retiring whole CTAs analytically while every running
//! application is in a steady state, instead of simulating millions of identical cycles.
//!
//! Where to look: this file holds the state, the measuring (`ff_window`, `ff_span`,
//! `ff_rate`) and the jump itself (`ff_jump`); `plan` chooses a jump (candidate waves per
//! application, what limits them, alignment of co-runners, the pre-ageing jump); `age`
//! holds aged mode's random walk, prefix credit and end-point correction; `hist` the
//! snapshots spans are found in (and how many are kept); `pass` retires
//! whole relaunches of an application running alone in a window or budget run (a jump
//! made at a pass boundary, where nothing of it is resident); `corun` skips the same time
//! for several applications relaunching side by side, each at the rate of its last
//! passes, calling the controller's epochs it crosses with the view those rates give.
//!
//! **Measuring.** Every `window` cycles (engine time; a probe taken in the main loop,
//! not a queued event, so measuring alone changes nothing) the run takes a
//! snapshot: each application's live counters, its running kernel launch, its resident
//! CTAs and its next undispatched block, and the SMs' idle scheduler cycles. A hook
//! (arrival, departure, last CTA dispatched, epoch, sample), a change of running kernels or
//! of resident CTA counts starts the history afresh. The history (`hist`) keeps at most
//! 512 snapshots; while it holds too few waves to find a span in, a full history is
//! thinned (every other snapshot dropped, the spacing doubled) rather than losing its
//! oldest, so waves of any length are measured.
//!
//! **Steady state.** The shortest recent span of at least `windows` windows that starts
//! after the launch's first wave has turned over (`2R` blocks dispatched, `R` being the
//! application's resident CTA count: no cold start in it), whose two halves each saw
//! every running application complete `waves` waves of CTAs (2 by default: a wave's
//! time varies by a few percent from one to the next), with resident CTA
//! counts unchanged throughout, and in which,
//! between the two halves and for every running application, IPC and DRAM bytes per
//! cycle differ by at most `tolerance` (relative), the L1 and L2 hit rates by at most
//! `tolerance` (absolute), the stall mix (short RAW, long memory, unit busy, barrier,
//! idle) by at most `2 × tolerance` and the pipeline-busy mix by unit kind (the executed
//! instruction mix) by at most `tolerance` in total-variation distance. Nothing may be
//! pending that a jump would step over unseen: no controller sample in flight, no
//! time slicing or paused application, no saved CTA contexts, no persistent workers
//! (their blocks are pulled through atomics), no application halted but not yet released.
//!
//! **The jump.** Whole waves are skipped: each running application retires the next
//! `n × R` undispatched CTAs of its launch without simulating them (the dispatcher's
//! next block moves past them). Skipping whole waves keeps the shape of the kernel's
//! end (how many CTAs the last wave holds) as it was, so tail effects are simulated, and
//! whatever is resident keeps running with its warm caches, DRAM queues and pending
//! events untouched. The time the skipped CTAs would have taken is their exact warp
//! instruction count (from the source's stream lengths, nothing decoded) divided by the
//! application's IPC measured between two of its CTA completions a whole number of
//! waves apart within the span (the same phase of the wave cycle: a kernel whose CTAs
//! run in lockstep waves is measured without a phase bias). Co-running applications must skip spans of equal
//! length: their wave counts are chosen so that every application's skipped time is
//! within 1% of the others'. Counters advance with the skipped work: warp instructions
//! exactly; thread instructions, pipeline-busy cycles, L1/L2 accesses and hits, NoC and
//! DRAM traffic, row hits and FLOPs in proportion to instructions at the span's ratios;
//! stall cycles and idle SM cycles in proportion to time; CTAs by the count; warp-cycles
//! through the occupancy samples the jump takes.
//!
//! **Where it must not jump.** A jump never crosses: the last wave of a launch (at least
//! `R` blocks stay undispatched, so the last wave and the drain run in detail); a change
//! in the instruction stream — every skipped block's instruction count must lie within
//! 10% of the range seen in the blocks dispatched during the span, and up to 32 evenly
//! spaced skipped blocks have their first warp decoded and their opcode-unit mix compared
//! with that of the span's blocks (a block that differs ends the jump before it, "phase");
//! an application's budget (minus two windows of its instructions); and any pending
//! event that is anchored in absolute time — an arrival or relaunch, a controller epoch
//! or sample, a time slice, the end of the window or the cycle cap —
//! minus two windows. Detailed simulation always resumes before whatever breaks the
//! steady state. Nor is a jump taken that would be shorter than the span it was measured
//! over: the state a jump leaves behind (resident CTAs in the phases of its start) costs
//! the detailed run after it about the same whatever the jump's length, so a short jump
//! errs the most for what it saves (SiM's FD ×8 on the A100: one 2-wave jump up to the
//! tail, −4.3%). The exception is a *passive* controller's epochs
//! (`Controller::epoch_passive`: Warped-Slicer's, which only watch for a sustained IPC
//! change of 50%, far beyond the steady-state tolerance): an epoch that returns no action
//! neither restarts the measurement nor stops a jump; it stays where it is in engine
//! time, so the first epoch after a jump sees the jump's work in its interval.
//!
//! **Time.** The engine's clock does not move: SM clocks, warp and pipeline state, cache
//! fill times, DRAM timing and pending events stay exactly as they are. Instead the run
//! keeps an offset (`Engine::off`, the cycles skipped so far): every time it records
//! (kernel and application start and end, occupancy samples, reconfigurations, the end of
//! the run, the `View` controllers read) is engine time plus the offset, and the pending
//! absolute-time events above are moved `J` cycles earlier in engine time at each jump
//! (as is the window's end). Everything is integer and in fixed order: deterministic.
//! Known approximations: per-SM instruction counts in the controller `View` do not grow
//! during a jump; occupancy samples (`sample_every`) that fall in a jump are taken at its
//! start, with the resident warps of then (steady by definition).
//!
//! **What a plain jump does not age.** Resident CTAs, caches and DRAM state are those of
//! the jump's start, so after a jump the run resumes in a state as old as its *detailed*
//! time, not its absolute time. Where a launch's state keeps evolving over millions of
//! cycles the detailed spans after a jump still see the young state and the jump
//! extrapolates it. Measured (BENCHMARKS.md, "why long runs drift"): knn and bfs ×20
//! lose DRAM row-buffer locality for 2–3 M cycles in detail (IPC −4%) because their CTAs
//! start in lockstep and drift apart (a run whose first wave starts staggered has the
//! old rate from its start), while a plain fast-forwarded run keeps the lockstep.
//!
//! **Aged jumps** (`FastForward::age`, `--ff-age true`; off by default) model that drift:
//! - *Ageing.* A jump over `n` waves moves every resident slot's phase by the random walk
//!   its next `n` blocks' durations would make: a normal step of variance `n` times that
//!   of the CTA durations seen in the span (hashed, so deterministic), wrapped to one mean
//!   duration, the smallest step as zero. A phase moves forward only: the slot's next
//!   block of that launch starts part-way into every warp's stream (all warps pass the
//!   same barriers; `Sm::start_block_from`), and the skipped prefix is retired
//!   analytically (warp instructions exactly, the other counters at the span's ratios).
//!   The jump holds back as many whole blocks as the phases add up to
//!   (`FfJump::held_back`), so the skipped time stays what it measured.
//! - *Progress curve.* A phase is a fraction of a block's time; the prefix is the
//!   fraction of its instructions a block has issued by then, read from the curve the
//!   span's blocks traced (every window, up to 128 resident blocks started whole report
//!   the instructions their warps issued; each sample's time is a fraction of its own
//!   block's duration, once it completes — of the mean, the blocks still resident late
//!   would be the slow ones only). A stream whose beginning is slower than its end
//!   (`tests/fast_forward.rs`'s per-warp phase change: memory-bound, then compute-bound)
//!   issues less early: taken as a fraction of instructions the phase was −2.56%, with
//!   the curve −1.17%.
//!   Slots already out of step are left alone (the resultant of their phases, time since
//!   start over the mean duration, is within [`SPREAD`] standard errors of uniform
//!   phases'): a random walk leaves uniform phases uniform. Prefixes are kept per CTA
//!   slot: kept per SM, a block started nearly at its end freed its slot at once and took
//!   the SM's other prefixes too, so its neighbours stayed in step (slate/tr ×40: the
//!   phase resultant stayed at ~5 after a fully randomising walk, against ~0.9 in the
//!   detailed run, and the run was +4.5%).
//! - *Midpoint.* Before a launch's first jump of at least 16 waves, if its slots are still
//!   in step and were seen to drift apart (a measured drift above zero, below), a
//!   one-wave jump ages the state by half of it; the long jump then measures its rate at
//!   the age of its midpoint, not its start, and ages by the rest. Slots that keep in
//!   step have no drift to age, and the pre-ageing jump's second span would only cost
//!   time (slate/tr x40 on qv100: one long jump, 12.9x at -0.56%, against 6.7x at
//!   +0.26%).
//! - *Measured drift.* The walk's variance is scaled by how fast the slots were seen to
//!   drift apart in detail before the launch's first aged jump: the decay per wave of
//!   their phase resultant, from the first snapshot after the first wave turned over,
//!   against the walk's `exp(-2π²·var/mean²)`, in [0, 1] (`age::ff_drift`). On a GPU
//!   where the lockstep holds (slate/tr ×40 on qv100: resultant 0.85 → 0.86 over four
//!   waves) the state is not aged; the full walk there was +2.4% (mvp ×40: +3.0%).
//! - *Settling.* A span starts only once the first two waves dispatched after the
//!   launch's last jump have been (`FfState::settle`): until then the blocks resident
//!   across the jump run beside blocks far from them in the grid, sharing no DRAM rows or
//!   L2 lines, and the slots' aged blocks run their suffixes, which issue more slowly
//!   than whole blocks (a stream started part-way pays its start-up again). Waiting for
//!   one wave only, those suffixes were still running in the span's first half and every
//!   ugpu kernel that was aged ended slow (×40: bh +2.79%, convs +2.20%, lbm +1.83%;
//!   with two, +1.26%, +1.21%, +0.60%; BENCHMARKS.md).
//! - *Room to pay.* A jump followed within three mean block durations by an event the
//!   run stops or hooks at (a window's end, an epoch, a sample, a budget) does not age:
//!   the aged blocks would not start before it, and the held-back work would be missing
//!   from the count.
//! - *End-point correction.* When the next steady span (same launch, the jump not ended
//!   by a phase change, the tail or a budget) measures the rate the skipped work ended
//!   at, the jump's time becomes the trapezoid of the two rates, over all the work the
//!   jump paid for (the held-back blocks too); the offset, the anchored events and the
//!   time-proportional counters follow.
//!
//! Every span has `waves` waves per half, after a jump too: knn, lbm and others swing
//! by ±3% over a few waves in detail, so a span of one wave per half (tried) measured a
//! rate up to 3% off.
//!
//! Measured (BENCHMARKS.md, "Prefixes by the progress curve"): at stride 32, on seven
//! suite kernels with grids ×40 (2.6–13.1 M cycles) aged jumps are within 1.51% at
//! 11–19× (plain jumps at stride 8, the default: up to 5.2% at 5.5–7.0×); with grids
//! ×20 within 1.92%; four of those kernels ×40 on qv100 and gpgpusim-60sm within 1.59%
//! (plain 2.62%); 39 other suite kernels with grids ×10: largest 2.36%, mean 0.53%
//! (plain 2.25%, 0.58%). `gpumodel run` uses them by default for one application run to
//! completion; they are not the engine's default (`FastForward::default()`), nor the CLI's
//! elsewhere, because on window and budget runs a
//! jump that ends at the window or budget cannot age (no room to pay), so at stride 32
//! it extrapolates the young state further than plain jumps at stride 8 do (knn ×20 on
//! 8 SMs, 2 M-cycle window: +2.69% against −0.33%), and on three Warped-Slicer pairs at
//! the paper's scale (2 M-cycle budgets, five policies) slowdowns were up to 5.39% off
//! (mm+knn, Even), plain at stride 8 2.24%.

mod age;
mod corun;
mod hist;
mod pass;
mod plan;

use super::*;
use crate::engine::config::FastForward;
use crate::engine::sm::Cta;
use crate::engine::stats::{FfJump, FfStats, StallStack};
use crate::trace::synth::rng::{hash2, mix64, unit_f64};
use crate::trace::DynInst;
use hist::{History, Snap};
use plan::Plan;

/// Skipped blocks whose first warp is decoded for the mix check, and span blocks decoded
/// for the reference mix.
const MIX_SAMPLES: u32 = 32;
const REF_SAMPLES: u32 = 16;
/// Largest total-variation distance between a skipped block's unit mix and the span's.
const MIX_TOLERANCE: f64 = 0.1;
/// Co-running applications' skipped times agree within this fraction.
const ALIGN: f64 = 0.01;
/// Resident phases whose resultant is below this many times `sqrt(count)` count as out
/// of step already (uniform phases give about 0.89).
const SPREAD: f64 = 3.0;
/// Aged blocks need this many mean block durations after a jump before the next event.
const AGE_ROOM: f64 = 3.0;
/// Fewest waves in a jump that is preceded by a pre-ageing jump.
const PRE_AGE_MIN: usize = 16;

/// Fast-forward state of one run.
pub(super) struct FfState {
    pub(super) cfg: FastForward,
    /// Engine time of the next snapshot (the end of the current measurement window).
    /// Snapshots are not events in the queue: the queue's next event is how far an SM
    /// may run ahead, and a probe that shortened it would change what it measures.
    pub(super) next: u64,
    /// A hook ran since the last snapshot.
    pub(super) dirty: bool,
    /// Controller samples requested and not yet delivered.
    pub(super) samples_pending: u32,
    hist: History,
    /// Per application, (time, warp instructions so far, the CTA's duration) at each CTA
    /// completion since the history restarted.
    done: Vec<Vec<(u64, u64, u64)>>,
    /// Per SM, the prefixes (launch, CTA slot, millionths of each warp's stream) that
    /// the next block of that launch placed in that slot skips: the last jump's ageing.
    /// (Per slot, not per SM: a block started nearly at its end frees its slot at once,
    /// and would otherwise take the SM's other prefixes too, leaving its neighbours in
    /// step.)
    prefix: Vec<Vec<(u32, u32, u32)>>,
    /// Per application, the counter deltas of the last jump's span: skipped prefixes are
    /// credited at its ratios.
    ratios: Vec<Option<Counters>>,
    /// Per application, warp instructions of aged prefixes credited so far.
    prefixed: Vec<u64>,
    /// Per application, waves its state was aged beyond its time (by a pre-ageing jump).
    ahead: Vec<usize>,
    /// Per application, what its last jump left for its launch.
    jumped: Vec<Option<Jumped>>,
    /// The last jump, until the next steady span measures the rate it ended at.
    last: Option<Last>,
    /// Aged mode: the first snapshot since the history restarted at which every running
    /// launch's first wave had turned over, as its time and the start times of the CTAs
    /// then resident (launch, start): how far in step they were.
    base: Option<(u64, Vec<(u32, u64)>)>,
    /// Aged mode: progress samples of resident CTAs started whole, since the history
    /// restarted: (snapshot time, launch, cycles since the block started, fraction of its
    /// warp instructions issued). A prefix is placed by the progress curve they trace.
    prog: std::collections::VecDeque<ProgSample>,
    /// Aged mode: durations of the blocks started whole that completed since the
    /// history restarted, by (launch, block): a progress sample's time is a fraction of
    /// its own block's duration (of the mean, the blocks still resident late in their
    /// time would be the slow ones only).
    whole: std::collections::BTreeMap<(u32, u32), u64>,
    /// Idle scheduler cycles of the skipped time (added to the GPU's idle stalls).
    idle: u64,
    /// Per application, its state at the ends of its last passes over its kernels
    /// (launch-level jumps, `pass`).
    marks: Vec<Vec<pass::PassMark>>,
    /// Controller actions applied so far (a co-run regime ends at each).
    pub(super) acts: u64,
    /// Actions of a controller epoch a co-run jump ended at, to apply at the next hooks.
    pub(super) pending: Vec<crate::engine::config::Action>,
    pub(super) stats: FfStats,
}

/// One resident block's progress at a snapshot (aged mode).
struct ProgSample {
    /// The snapshot's time.
    t: u64,
    krun: u32,
    block: u32,
    /// Cycles since the block started.
    age: u64,
    /// Fraction of its warp instructions issued.
    frac: f32,
}

/// What an application's last jump left for the launch it jumped in.
#[derive(Clone, Copy)]
struct Jumped {
    /// The launch (a launch jumped once is not pre-aged again).
    krun: usize,
    /// Aged mode: the block from which a span may start, two waves past the jump, once
    /// the CTAs resident across it (blocks from before the skipped ones, sharing DRAM
    /// rows and L2 lines with none of the new ones) and the aged blocks that followed
    /// them have been replaced.
    settle: u32,
    /// Aged mode: the fraction of the duration-variance random walk the launch's slots
    /// were measured to follow in detail, from its first aged jump (`age::ff_drift`).
    drift: Option<f64>,
}

/// A jump awaiting its end-point correction: its length, the span it was measured over
/// (cycles, and the GPU's idle scheduler cycles in it), and each application's part.
struct Last {
    j: u64,
    dt: u64,
    idle: u64,
    apps: Vec<LastApp>,
}

/// One application's part of a [`Last`] jump.
struct LastApp {
    app: usize,
    /// The launch it ran.
    krun: usize,
    /// Warp instructions whose time the jump paid (the skipped blocks and the held-back
    /// ones standing for the aged prefixes), and the rate used (`insts / cycles`).
    skipped: u64,
    insts: u64,
    cycles: u64,
    /// Stall counters of the span (the time-proportional ones a correction rescales).
    stalls: StallStack,
}

impl FfState {
    pub(super) fn new(cfg: FastForward) -> FfState {
        FfState {
            next: cfg.window.max(1),
            cfg,
            dirty: false,
            samples_pending: 0,
            hist: History::new(),
            done: Vec::new(),
            prefix: Vec::new(),
            ratios: Vec::new(),
            last: None,
            base: None,
            prog: std::collections::VecDeque::new(),
            whole: std::collections::BTreeMap::new(),
            prefixed: Vec::new(),
            ahead: Vec::new(),
            jumped: Vec::new(),
            idle: 0,
            marks: Vec::new(),
            acts: 0,
            pending: Vec::new(),
            stats: FfStats::default(),
        }
    }

    /// CTA `c` of application `app` completed at `t`, with `insts` warp instructions
    /// retired so far (those of aged prefixes are left out: rates are of simulated work).
    pub(super) fn completed(&mut self, app: usize, t: u64, insts: u64, c: &Cta) {
        let dur = t.saturating_sub(c.start);
        if self.cfg.age && !c.prefixed {
            self.whole.insert((c.krun, c.block), dur);
        }
        if self.done.len() <= app {
            self.done.resize(app + 1, Vec::new());
        }
        if self.prefixed.len() <= app {
            self.prefixed.resize(app + 1, 0);
        }
        self.done[app].push((t, insts - self.prefixed[app], dur));
    }

    /// The prefix (millionths) the next block of launch `k` placed in slot `slot` of SM
    /// `s` skips.
    pub(super) fn take_prefix(&mut self, s: usize, slot: usize, k: u32) -> u32 {
        let Some(q) = self.prefix.get_mut(s) else {
            return 0;
        };
        match q.iter().position(|&(x, c, _)| x == k && c as usize == slot) {
            Some(i) => q.remove(i).2,
            None => 0,
        }
    }

    /// What application `a`'s last jump left, if it jumped in launch `k`.
    fn jumped_in(&self, a: usize, k: usize) -> Option<Jumped> {
        self.jumped
            .get(a)
            .copied()
            .flatten()
            .filter(|j| j.krun == k)
    }

    fn restart(&mut self) {
        self.hist.clear();
        self.prog.clear();
        self.whole.clear();
        for d in &mut self.done {
            d.clear();
        }
    }
}

fn mul_div(x: u64, num: u64, den: u64) -> u64 {
    (x as u128 * num as u128 / den.max(1) as u128) as u64
}

fn rel(a: f64, b: f64) -> f64 {
    let m = a.abs().max(b.abs());
    if m < 1e-12 {
        0.0
    } else {
        (a - b).abs() / m
    }
}

/// Total-variation distance between two count vectors taken as distributions.
fn tv(a: &[u64], b: &[u64]) -> f64 {
    let (sa, sb) = (a.iter().sum::<u64>(), b.iter().sum::<u64>());
    if sa == 0 || sb == 0 {
        return if sa == sb { 0.0 } else { 1.0 };
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 / sa as f64 - y as f64 / sb as f64).abs())
        .sum::<f64>()
        / 2.0
}

fn stall_vec(c: &Counters) -> [u64; 5] {
    let s = &c.stalls;
    [s.short_raw, s.long_memory, s.unit_busy, s.barrier, s.idle]
}

/// `b - a`, field by field, for the counters the stability test and the jump use.
fn delta(a: &Counters, b: &Counters) -> Counters {
    let mut d = Counters {
        warp_insts: b.warp_insts - a.warp_insts,
        thread_insts: b.thread_insts - a.thread_insts,
        l1_accesses: b.l1_accesses - a.l1_accesses,
        l1_hits: b.l1_hits - a.l1_hits,
        l2_accesses: b.l2_accesses - a.l2_accesses,
        l2_hits: b.l2_hits - a.l2_hits,
        noc_bytes: b.noc_bytes - a.noc_bytes,
        dram_reads: b.dram_reads - a.dram_reads,
        dram_writes: b.dram_writes - a.dram_writes,
        dram_bytes: b.dram_bytes - a.dram_bytes,
        row_hits: b.row_hits - a.row_hits,
        ctas_done: b.ctas_done - a.ctas_done,
        warp_cycles: b.warp_cycles - a.warp_cycles,
        sp_flops: b.sp_flops - a.sp_flops,
        ..Counters::default()
    };
    for i in 0..9 {
        d.unit_busy[i] = b.unit_busy[i] - a.unit_busy[i];
    }
    let (x, y) = (&a.stalls, &b.stalls);
    d.stalls = StallStack {
        short_raw: y.short_raw - x.short_raw,
        long_memory: y.long_memory - x.long_memory,
        unit_busy: y.unit_busy - x.unit_busy,
        barrier: y.barrier - x.barrier,
        idle: y.idle - x.idle,
    };
    d
}

/// Whether two halves of a span (counter deltas over `c1` and `c2` cycles) are alike.
fn steady(d1: &Counters, c1: u64, d2: &Counters, c2: u64, tol: f64) -> bool {
    let per = |x: u64, c: u64| x as f64 / c.max(1) as f64;
    let hit = |h: u64, a: u64| if a == 0 { 0.0 } else { h as f64 / a as f64 };
    rel(per(d1.warp_insts, c1), per(d2.warp_insts, c2)) <= tol
        && rel(per(d1.dram_bytes, c1), per(d2.dram_bytes, c2)) <= tol
        && (hit(d1.l1_hits, d1.l1_accesses) - hit(d2.l1_hits, d2.l1_accesses)).abs() <= tol
        && (hit(d1.l2_hits, d1.l2_accesses) - hit(d2.l2_hits, d2.l2_accesses)).abs() <= tol
        && tv(&stall_vec(d1), &stall_vec(d2)) <= 2.0 * tol
        && tv(&d1.unit_busy, &d2.unit_busy) <= tol
}

/// Events anchored in absolute time that a jump must not cross (they move when the
/// engine skips time). Occupancy samples (`next_tick`) are anchored too, but a jump takes the
/// ones it crosses itself.
fn anchored(e: &Ev) -> bool {
    matches!(
        e,
        Ev::Launch(_) | Ev::Epoch | Ev::Sample(_) | Ev::Slice | Ev::End
    )
}

/// [`anchored`], less a passive controller's epochs (`Controller::epoch_passive`), which
/// a jump crosses: they stay where they are in engine time.
fn blocking(e: &Ev, passive: bool) -> bool {
    anchored(e) && !(passive && *e == Ev::Epoch)
}

impl Engine<'_, '_> {
    /// Idle scheduler cycles fast-forward skipped.
    pub(super) fn ff_idle(&self) -> u64 {
        self.ff.as_ref().map_or(0, |f| f.idle)
    }

    fn ff_snap(&self, t: u64) -> Snap {
        let n = self.apps.len();
        Snap {
            t,
            ctr: self.ctr.clone(),
            krun: self.rt.iter().map(|r| r.krun).collect(),
            live: (0..n)
                .map(|a| self.rt[a].krun.map_or(0, |k| self.kruns[k].live))
                .collect(),
            next_block: (0..n)
                .map(|a| self.rt[a].krun.map_or(0, |k| self.kruns[k].next_block))
                .collect(),
            idle: self.sms.iter().map(|s| s.idle).sum(),
        }
    }

    /// The end of a measurement window: a snapshot, and a jump when the span is steady.
    pub(super) fn ff_window(&mut self, t: u64) -> Result<()> {
        let snap = self.ff_snap(t);
        let f = self.ff.as_ref().expect("snapshots only with fast-forward");
        let reset = f.dirty
            || f.hist
                .last()
                .is_some_and(|s| s.krun != snap.krun || s.live != snap.live);
        // Aged mode: the base is taken once every running launch's first wave has
        // turned over.
        let turned = || {
            (0..self.apps.len()).all(|a| {
                self.rt[a]
                    .krun
                    .is_none_or(|k| self.kruns[k].next_block >= 2 * self.kruns[k].live)
            })
        };
        let base = (f.cfg.age && (reset || f.base.is_none()) && turned()).then(|| {
            self.resident_ctas()
                .map(|c| (c.krun, c.start))
                .collect::<Vec<_>>()
        });
        let prog = f.cfg.age.then(|| self.ff_progress(t));
        let f = self.ff.as_mut().expect("snapshots only with fast-forward");
        f.dirty = false;
        if reset {
            f.restart();
            f.base = None;
        }
        if let Some(b) = base {
            f.base = Some((t, b));
        }
        let w = f.cfg.window.max(1);
        f.hist.push(snap, w, f.cfg.waves, &mut f.prog);
        f.prog.extend(prog.into_iter().flatten());
        f.next = t + w;
        if self.ff.as_ref().is_some_and(|f| f.last.is_some()) {
            let rates = self.ff_eligible(t).and_then(|running| {
                let span = self.ff_span(&running)?;
                running
                    .iter()
                    .map(|&a| self.ff_rate(a, span).map(|(i, c)| (a, i, c)))
                    .collect::<Option<Vec<_>>>()
            });
            if let Some(rates) = rates {
                self.ff_correct(t, &rates);
            }
        }
        if let Some(plan) = self.ff_plan(t)? {
            self.ff_jump(t, &plan);
        }
        Ok(())
    }

    /// Whether nothing forbids a jump now, and the running applications.
    fn ff_eligible(&self, t: u64) -> Option<Vec<usize>> {
        let f = self.ff.as_ref()?;
        if self.cfg.placement.time_slicing
            || self.context.is_some()
            || f.samples_pending > 0
            || !self.halts.is_empty()
            || self.paused.iter().any(|&p| p > t)
        {
            return None;
        }
        let mut running = Vec::new();
        for a in 0..self.apps.len() {
            if let Some(k) = self.rt[a].krun {
                let kr = &self.kruns[k];
                if self.apps[a].persistent.is_some() || !kr.saved.is_empty() || kr.live == 0 {
                    return None;
                }
                running.push(a);
            }
        }
        (!running.is_empty()).then_some(running)
    }

    /// Whether a span may start at snapshot `s` for application `a`: the launch's first
    /// wave has turned over (no cold start in it), and in aged mode so has the first wave
    /// after its last jump.
    fn ff_settled(&self, a: usize, s: usize, l: usize) -> bool {
        let Some(f) = self.ff.as_ref() else {
            return false;
        };
        let (h, wave) = (&f.hist, f.hist[l].live[a]);
        let next = h[s].next_block[a];
        next as u64 >= 2 * wave as u64
            && match h[s].krun[a].and_then(|k| f.jumped_in(a, k)) {
                Some(j) if f.cfg.age => next >= j.settle,
                _ => true,
            }
    }

    /// A steady span `(s, m, l)` of snapshot indices (start, middle, last), if any.
    fn ff_span(&self, running: &[usize]) -> Option<(usize, usize, usize)> {
        let f = self.ff.as_ref()?;
        let h = &f.hist;
        let l = h.len().checked_sub(1)?;
        let k = f.cfg.windows.max(2) as usize;
        let done = |a: usize, i: usize, j: usize| h[j].ctr[a].ctas_done - h[i].ctr[a].ctas_done;
        for s in (0..l).rev() {
            // (The history restarts whenever resident counts change.)
            if l - s < k {
                continue;
            }
            let m = s + (l - s) / 2;
            // The span starts once the launch's first wave has turned over (no cold
            // start in it), and each half sees a wave of completions.
            let halves = f.cfg.waves.max(1) as u64;
            if running.iter().all(|&a| {
                let wave = h[l].live[a] as u64;
                self.ff_settled(a, s, l)
                    && done(a, s, m) >= halves * wave
                    && done(a, m, l) >= halves * wave
            }) {
                let tol = f.cfg.tolerance;
                let ok = running.iter().all(|&a| {
                    let d1 = delta(&h[s].ctr[a], &h[m].ctr[a]);
                    let d2 = delta(&h[m].ctr[a], &h[l].ctr[a]);
                    steady(&d1, h[m].t - h[s].t, &d2, h[l].t - h[m].t, tol)
                });
                return ok.then_some((s, m, l));
            }
        }
        None
    }

    /// Application `a`'s rate over a steady span, as (warp instructions, cycles): between
    /// two CTA completions a whole number of waves apart, the last one and the earliest
    /// within the span (the same phase of the wave cycle, so a kernel whose CTAs run in
    /// lockstep waves is measured without bias).
    fn ff_rate(&self, a: usize, span: (usize, usize, usize)) -> Option<(u64, u64)> {
        let f = self.ff.as_ref()?;
        let (s, _, l) = span;
        let h = &f.hist;
        let wave = self.kruns[self.rt[a].krun?].live;
        let d = delta(&h[s].ctr[a], &h[l].ctr[a]);
        if d.warp_insts == 0 || wave == 0 {
            return None;
        }
        let done = f.done.get(a).map_or(&[][..], |v| &v[..]);
        let first = done.partition_point(|&(t, _, _)| t < h[s].t);
        let &(t1, i1, _) = done.last()?;
        let waves_seen = (done.len() - 1).saturating_sub(first) / wave as usize;
        if waves_seen == 0 {
            return None;
        }
        let (t0, i0, _) = done[done.len() - 1 - waves_seen * wave as usize];
        let (insts, cycles) = (i1 - i0, t1 - t0);
        (insts > 0 && cycles > 0).then_some((insts, cycles))
    }

    /// Applies a jump of `j` cycles at engine time `t`.
    fn ff_jump(&mut self, t: u64, plan: &Plan) {
        let Plan {
            parts,
            waves,
            j,
            why,
            span: (s, l),
            age,
            pre,
        } = plan;
        let (j, why) = (*j, *why);
        // Ageing first (it reads the resident CTAs and the span's durations): each
        // application's aged prefixes add up to about `m` blocks' work, which the jump
        // then leaves undispatched so that the skipped work stays what it measured.
        let nth = self.ff.as_ref().map_or(0, |f| f.stats.jumps.len() as u64);
        let (ts, tl) = {
            let f = self.ff.as_ref().expect("fast-forward");
            (f.hist[*s].t, f.hist[*l].t)
        };
        // Cycles between the jump's end and the next event the run stops or hooks at.
        let passive = self.ctl.epoch_passive();
        let rest = self
            .heap
            .earliest(|e| blocking(e, passive))
            .map_or(u64::MAX, |at| at.saturating_sub(t + j));
        let rest = match &self.cfg.mode {
            RunMode::Budget(_) if why == "budget" => 0,
            _ => rest,
        };
        let mut ages = Vec::new();
        for ((p, &n), &g) in parts.iter().zip(waves).zip(age) {
            let k = self.rt[p.app].krun.expect("running");
            let on = self.ff.as_ref().is_some_and(|f| f.cfg.age);
            let (walk, drift) = if on && g > 0 {
                self.ff_age(p.app, k, g, (ts, tl), nth, (t, rest))
            } else {
                (Vec::new(), None)
            };
            let whole = n as u32 * p.wave;
            let frac: f64 = walk.iter().map(|w| w.phase).sum();
            let back = (frac.round() as u32).min(whole.saturating_sub(1));
            let kr = &self.kruns[k];
            let held: u64 = (0..back)
                .map(|i| self.block_len(k, kr.next_block + whole - back + i))
                .sum();
            ages.push((k, walk, back, held, drift));
        }
        let f = self.ff.as_mut().expect("fast-forward");
        if f.ratios.len() < self.apps.len() {
            f.ratios.resize(self.apps.len(), None);
        }
        if f.prefix.len() < self.sms.len() {
            f.prefix.resize(self.sms.len(), Vec::new());
        }
        if f.ahead.len() < self.apps.len() {
            f.ahead.resize(self.apps.len(), 0);
            f.jumped.resize(self.apps.len(), None);
        }
        for ((p, &n), &g) in parts.iter().zip(waves).zip(age) {
            let a = p.app;
            f.ahead[a] = if *pre {
                g.saturating_sub(n)
            } else {
                f.ahead[a].saturating_sub(n)
            };
        }
        let mut ctas = vec![0u32; self.apps.len()];
        let mut insts = vec![0u64; self.apps.len()];
        let mut aged = vec![0u32; self.apps.len()];
        let mut held_back = vec![0u32; self.apps.len()];
        let (h0, hl) = (&f.hist[*s], &f.hist[*l]);
        let dt = hl.t - h0.t;
        let mut last = Last {
            j,
            dt,
            idle: hl.idle - h0.idle,
            apps: Vec::new(),
        };
        for ((p, &n), (k, walk, back, held, drift)) in parts.iter().zip(waves).zip(ages) {
            let a = p.app;
            let m = n as u32 * p.wave - back;
            let i = p.cum[n] - held;
            let d = delta(&h0.ctr[a], &hl.ctr[a]);
            for q in f.prefix.iter_mut() {
                q.retain(|&(x, _, _)| x as usize != k);
            }
            aged[a] = walk.len() as u32;
            held_back[a] = back;
            for w in walk {
                if w.ppm > 0 {
                    f.prefix[w.sm].push((k as u32, w.slot as u32, w.ppm));
                }
            }
            f.ratios[a] = Some(d.clone());
            last.apps.push(LastApp {
                app: a,
                krun: k,
                skipped: p.cum[n],
                insts: p.insts,
                cycles: p.cycles,
                stalls: d.stalls,
            });
            let by_t = |x: u64| mul_div(x, j, dt);
            let c = &mut self.ctr[a];
            credit_insts(c, &d, i);
            c.ctas_done += m as u64;
            c.stalls.short_raw += by_t(d.stalls.short_raw);
            c.stalls.long_memory += by_t(d.stalls.long_memory);
            c.stalls.unit_busy += by_t(d.stalls.unit_busy);
            c.stalls.barrier += by_t(d.stalls.barrier);
            c.stalls.idle += by_t(d.stalls.idle);
            self.kruns[k].next_block += m;
            // The drift measured at the launch's first aged jump is kept for its later ones.
            let kept = f.jumped_in(a, k).and_then(|j| j.drift);
            f.jumped[a] = Some(Jumped {
                krun: k,
                settle: self.kruns[k].next_block + 2 * self.kruns[k].live,
                drift: drift.or(kept),
            });
            ctas[a] = m;
            insts[a] = i;
        }
        f.idle += mul_div(hl.idle - h0.idle, j, dt);
        // A jump that ends where the stream changes, at the tail or at a budget has no
        // steady span of the same work after it to correct it by.
        f.last = (f.cfg.age && matches!(why, "event" | "align" | "age")).then_some(last);
        f.stats.cycles += j;
        f.stats.jumps.push(FfJump {
            at: t + self.off,
            cycles: j,
            ctas,
            warp_insts: insts,
            aged,
            held_back,
            ended_by: why.to_string(),
            passes: 0,
            corun: false,
        });
        f.restart();
        // Occupancy samples in the skipped time see the resident warps of now (steady).
        for at in self.ff_ticks(t, j) {
            self.sample(at);
        }
        self.ff_shift(t, j);
    }

    /// The occupancy samples due in a jump of `j` cycles at engine time `t` (engine
    /// times, for the caller to take); the next one is then due where they left off.
    fn ff_ticks(&mut self, t: u64, j: u64) -> Vec<u64> {
        let every = self.cfg.sample_every.max(1);
        let mut due = Vec::new();
        while self.next_tick < t + j {
            due.push(self.next_tick);
            self.next_tick += every;
        }
        due
    }

    /// Records a jump of `j` cycles at engine time `t` in the offset: the window's end
    /// and the absolute-time events come `j` cycles sooner in engine time (all lie beyond
    /// the jump and its margin).
    fn ff_shift(&mut self, t: u64, j: u64) {
        self.off += j;
        self.end -= j;
        self.ff_retime(t, |at| at - j);
    }

    /// Moves everything anchored in absolute time, the blocking events and the next
    /// occupancy sample, to the engine time `f` gives it (never before `t`).
    fn ff_retime(&mut self, t: u64, f: impl Fn(u64) -> u64) {
        if self.next_tick != INF {
            self.next_tick = f(self.next_tick).max(t);
        }
        let passive = self.ctl.epoch_passive();
        self.heap
            .retime(t, |at, e| if blocking(&e, passive) { f(at) } else { at });
    }
}

/// Credits `n` warp instructions retired without simulation, and the counters that go
/// with instructions at the ratios of the span deltas `d`.
fn credit_insts(c: &mut Counters, d: &Counters, n: u64) {
    let by_i = |x: u64| mul_div(x, n, d.warp_insts);
    c.warp_insts += n;
    c.thread_insts += by_i(d.thread_insts);
    for u in 0..9 {
        c.unit_busy[u] += by_i(d.unit_busy[u]);
    }
    c.l1_accesses += by_i(d.l1_accesses);
    c.l1_hits += by_i(d.l1_hits);
    c.l2_accesses += by_i(d.l2_accesses);
    c.l2_hits += by_i(d.l2_hits);
    c.noc_bytes += by_i(d.noc_bytes);
    c.dram_reads += by_i(d.dram_reads);
    c.dram_writes += by_i(d.dram_writes);
    c.dram_bytes += by_i(d.dram_bytes);
    c.row_hits += by_i(d.row_hits);
    c.sp_flops += by_i(d.sp_flops);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_taken_only_by_its_own_slot() {
        // A block started near its end frees its slot at once; the slot's next block
        // must not take a neighbour's prefix (kept per SM, they did: slate/tr x40 stayed
        // in step after a fully randomising walk, +4.5%).
        let mut f = FfState::new(FastForward::default());
        f.prefix = vec![vec![(7, 0, 980_000), (7, 1, 150_000), (7, 2, 500_000)]];
        assert_eq!(f.take_prefix(0, 0, 7), 980_000);
        assert_eq!(f.take_prefix(0, 0, 7), 0, "slot 0 had one prefix");
        assert_eq!(
            f.take_prefix(0, 2, 3),
            0,
            "another launch's block takes none"
        );
        assert_eq!(f.take_prefix(0, 2, 7), 500_000);
        assert_eq!(f.take_prefix(0, 1, 7), 150_000);
        assert_eq!(f.take_prefix(1, 1, 7), 0, "an SM without prefixes");
    }
}
