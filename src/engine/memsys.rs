//! The memory hierarchy of one run, wired together: per-SM L1D, the request and reply
//! crossbars, L2 slices with their atomic units, DRAM channels, and address mapping with
//! per-application channel sets. It knows SMs only by index and loads only by
//! [`LoadRef`]: a load whose data time is known when it is sent gets that time back at once;
//! one that waits on DRAM is parked in a fill record and reported in [`MemSys::resolved`]
//! when the channel schedules it.
//!
//! Times are core cycles; DRAM channels run in their own command clock and are converted at
//! the boundary. Requests are handled at line granularity with sector masks.
//!
//! Under the `stack-page` mapping an application's accesses go through the page table of
//! [`crate::mem::frames`] (when its channel set is the same indices in every stack), and
//! [`MemSys::migrate`] moves real pages on demand: the table changes at once, each moved
//! page migrates when it is next accessed (at its L2 slice, `MemSys::page_ready`) and
//! that access waits for it (seed 004 §4.4); that code lives in `memsys/migrate.rs`.
//!
//! Where to look: [`MemSys::new`] (the hierarchy built from a model) is in `memsys/build.rs`;
//! loads (`load`, `load_l1`, `miss`, `fetch`), stores, atomics, the slice's timing
//! (`at_slice`) and a load's answer (`finish_fill`) are here, in that order; the DRAM side
//! (`dram_read`, `writeback`, `push_dram`, `run_channel`, `complete`) is
//! `memsys/dram_side.rs`; an L2 slice's held input is `memsys/slice_input.rs`, context save/restore
//! and eager migration's page copies as traffic `memsys/bulk.rs`, the L1 MSHR stall
//! `memsys/lsu.rs`, fill records `memsys/slab.rs`, page migration `memsys/migrate.rs`,
//! address translation (TLBs and page walks, first in `load`, `store` and `atomic`)
//! `memsys/translate.rs`.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::arch::GpuSpec;
use crate::engine::config::Migration;
use crate::engine::stats::Counters;
use crate::mem::cache::{At, Cache, Read, Stall, Write, UNKNOWN};
use crate::mem::calendar::Calendar;
use crate::mem::dram::{Channel, Completion, DramRequest};
use crate::mem::frames::Frames;
use crate::mem::map::{AddressMap, ChannelSet, ChannelSetError, Location};
use crate::mem::noc::Crossbar;
use crate::mem::pages::PageSet;

mod build;
mod bulk;
mod dram_side;
pub use bulk::{Chain, Step};
mod lsu;
mod migrate;
mod slab;
mod slice_input;
mod translate;

use bulk::Later;
use lsu::Lsu;
pub use migrate::Migrated;
use migrate::{PageCost, PendingMove};
use slab::Slab;
use slice_input::Deferred;
use translate::Translation;

/// A load waiting for data: SM, warp slot, pending-load slot and the warp's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadRef {
    pub sm: u16,
    pub warp: u16,
    pub slot: u8,
    pub gen: u32,
}

/// The lanes of an atomic or reduction on one line: `lanes` of them (its reply carries a
/// word per lane; its accesses count per lane), of which the slice's atomic unit
/// serialises `serial`: the most lanes that update one address (lanes on distinct words of
/// the line are one vector operation; lanes on the same word read-modify-write it in turn).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Atomic {
    pub lanes: u32,
    pub serial: u32,
}

impl Atomic {
    /// Not an atomic.
    pub const NONE: Atomic = Atomic {
        lanes: 0,
        serial: 0,
    };
    /// One lane (a single counter update).
    pub const ONE: Atomic = Atomic {
        lanes: 1,
        serial: 1,
    };
}

/// An L1-side fill waiting on an L2 miss.
struct Fill {
    sm: u16,
    line: u64,
    slice: u32,
    in_l1: bool,
    atomic_lanes: u32,
    /// Lane operations the slice's atomic unit serialises (see [`Atomic::serial`]).
    atomic_serial: u32,
    bytes: u64,
    /// The data cannot reach the SM before this (an access to a page still migrating
    /// on demand; 0 otherwise).
    not_before: u64,
    /// Usually one: inline, so finishing the fill costs no extra cache miss.
    waiters: SmallVec<[LoadRef; 1]>,
}

/// An L2 line being fetched from DRAM.
struct L2Fill {
    /// The application whose miss started the fetch (its DRAM row hits are counted there).
    app: u16,
    slice: u32,
    line: u64,
    /// Its set key in the slice ([`At::key`]).
    key: u64,
    in_l2: bool,
    remaining: u32,
    done: u64,
    /// Usually one L1 fill: inline, like [`Fill::waiters`].
    waiters: SmallVec<[u32; 2]>,
}

const WRITE_FLAG: u64 = 1 << 63;

const HEADER: u64 = 8;
/// Cycles ahead an L2 port calendar covers (a backlog beyond it serialises after it).
pub const PORT_WINDOW: usize = 1 << 14;

/// Fixed latencies of the hierarchy in core cycles, derived from the model.
#[derive(Clone, Copy, Debug)]
pub struct Latencies {
    pub l1_hit: u64,
    /// From an access entering the L1 to its miss leaving (`l1d.miss_latency`).
    pub l1_miss: u64,
    pub noc: u64,
    pub l2: u64,
    pub dram_extra: u64,
}

pub struct MemSys {
    pub lat: Latencies,
    line_bytes: u64,
    /// The L2's `linear`/`xor` set index is taken on a line's offset within its slice
    /// ([`Location::part`]; `l2.set_address = "partition"`), not on the line (`ipoly`
    /// strips the channel bits itself, see `build::l2_config`).
    l2_part: bool,
    sector_bytes: u64,
    access_bytes: u64,
    /// L1 banks per SM (at most 64).
    l1_banks: u32,
    atomic_init: u64,
    /// Requests a channel holds before its L2 slices stall: DRAM queue + L2 miss queues.
    queue_cap: usize,
    l1_write_back: bool,
    /// Warps wait for their stores' acknowledgements (`sm.exit_waits_for_stores`): the
    /// slices then send them on the reply network.
    store_acks: bool,
    pub l1: Vec<Cache>,
    l2: Vec<Cache>,
    atom: Vec<crate::mem::calendar::Calendar>,
    req: Crossbar,
    rep: Crossbar,
    chans: Vec<Channel>,
    chan_sched: Vec<u64>,
    map: AddressMap,
    slices_per_channel: u32,
    sets: Vec<ChannelSet>,
    fills: Slab<Fill>,
    l2fills: Slab<L2Fill>,
    /// Per L2 slice: its input accepts nothing before this (a request that found no MSHR
    /// or hit its line's merge limit blocks the requests behind it until it retries).
    slice_free: Vec<u64>,
    /// Per L2 slice: its input queue (`l2.input_queue`), known by when the slice took each
    /// request from it.
    slice_in: Vec<crate::mem::noc::Credits>,
    /// Per L2 slice: its tag/data port, in bytes per core cycle (empty: not modelled).
    l2_port: Vec<Calendar>,
    /// Bytes an L2 port moves per core cycle.
    l2_port_bytes: u64,
    /// Whether reads held at a slice's input take its port when served (`l2.held_reads_take_port`,
    /// with a port).
    held_take_port: bool,
    /// Whether a store into an absent sector that it covers only in part reads the sector
    /// from DRAM (`l2.partial_write = "fetch"`, write-back L2).
    fetch_partial: bool,
    /// Per L2 slice: requests waiting at its input for a fill whose time is not known yet,
    /// in arrival order (retried when one of the slice's DRAM fills resolves).
    deferred: Vec<VecDeque<Deferred>>,
    /// Per L2 slice: why the first request in `deferred` last stalled (its retry is skipped
    /// while [`Cache::stalls_again`] says it would stall the same way).
    held: Vec<Stall>,
    /// Per L2 slice: its fills still waiting on DRAM with no known time.
    unresolved: Vec<u32>,
    /// Last DRAM arrival pushed per channel (pushes must not go back in time).
    last_arrival: Vec<u64>,
    /// The SMs' load/store units, when a miss finding every L1 MSHR busy holds them
    /// (`l1d.on_mshr_full = "stall"`; see [`lsu`]).
    lsu: Lsu,
    /// Release events of held loads to schedule: (core time, SM); the engine calls
    /// [`Self::release_held`] then.
    pub lsu_events: Vec<(u64, u32)>,
    core_khz: u64,
    dram_khz: u64,
    /// Pages each application has touched (for migration costs).
    pages: Vec<PageSet>,
    /// Per application, the page last added to `pages` (most accesses repeat it: no hash).
    last_page: Vec<u64>,
    page_bytes: u64,
    stacks: u32,
    bank_groups: u32,
    /// `stack-page` only: the page table (see [`crate::mem::frames`]).
    frames: Option<Frames>,
    /// Per application: its set holds the same channel indices in every stack, so its
    /// accesses go through `frames` (other sets keep the scheme's pure mapping).
    paged: Vec<bool>,
    /// Per application: pages waiting to migrate on their next access (empty for most
    /// applications: checked first on the hot path).
    pending: Vec<FxHashMap<u64, PendingMove>>,
    /// Per application: pages whose on-demand migration has started, with the time it
    /// completes (an access before then waits for it), and the latest such time (the map
    /// is emptied once an access comes after it).
    inflight: Vec<FxHashMap<u64, u64>>,
    inflight_until: Vec<u64>,
    /// Per channel index (one channel of every stack): when the migrations it takes part
    /// in, as source or destination, are done. A page moves between two indices with
    /// their bank groups; moves between disjoint pairs of indices proceed in parallel.
    engine_free: Vec<u64>,
    /// Per-page cost by migration mode (indexed by [`mode`]), and the channel indices per
    /// stack and stacks a page covers (`stack-page` only).
    page_cost: [PageCost; 4],
    per_stack: u32,
    covered: u32,
    /// DRAM requests of bulk traffic generated ahead of time (see [`bulk`]).
    later: Later,
    /// Channel events to schedule: (core time, channel).
    pub chan_events: Vec<(u64, u32)>,
    /// Loads whose data time became known: (load, time).
    pub resolved: Vec<(LoadRef, u64)>,
    /// Address translation (`translation.enabled`; see [`translate`]).
    tlb: Option<Translation>,
}

fn cycles_to(from_khz: u64, to_khz: u64, c: u64) -> u64 {
    // The 64-bit product almost always fits; the 128-bit division is a slow library call.
    match c.checked_mul(to_khz) {
        Some(p) => p.div_ceil(from_khz.max(1)),
        None => ((c as u128 * to_khz as u128).div_ceil(from_khz.max(1) as u128)) as u64,
    }
}

impl MemSys {
    pub fn line_bytes(&self) -> u64 {
        self.line_bytes
    }
    pub fn sector_bytes(&self) -> u64 {
        self.sector_bytes
    }

    /// The L1 bank an access to `sectors` of `line` goes to: banks interleave by sector
    /// (GPGPU-Sim's `-gpgpu_l1_banks_byte_interleaving` 32, linear hashing), and an access
    /// is addressed by its first sector when it lies in one half of the line (the
    /// coalescer shrinks it to 32 or 64 B), else by the line.
    #[inline]
    pub fn l1_bank(&self, line: u64, sectors: u8) -> u32 {
        if self.l1_banks <= 1 {
            return 0;
        }
        let per_line = self.line_bytes / self.sector_bytes.max(1);
        let half = (per_line / 2) as u32;
        let low = ((1u32 << half) - 1) as u8;
        let first = if half > 0 && sectors & low != 0 && sectors & !low != 0 {
            0
        } else {
            sectors.trailing_zeros().min(7) as u64
        };
        ((line * per_line + first) % self.l1_banks as u64) as u32
    }

    fn to_core(&self, d: u64) -> u64 {
        cycles_to(self.dram_khz, self.core_khz, d)
    }
    fn to_dram(&self, c: u64) -> u64 {
        cycles_to(self.core_khz, self.dram_khz, c)
    }

    /// Records that `app` touched the page of `line` (for migration costs).
    #[inline]
    fn touch_page(&mut self, app: usize, line: u64) {
        let page = line * self.line_bytes / self.page_bytes;
        if line * self.line_bytes >= translate::PT_BASE {
            // A page-table read of a walk: driver memory, not the application's pages.
            return;
        }
        if self.last_page[app] != page {
            self.last_page[app] = page;
            self.pages[app].insert(page);
        }
    }

    /// Sets the channels `app`'s pages map into (before it touches any).
    pub fn set_channels(&mut self, app: usize, ids: Vec<u32>) -> Result<(), ChannelSetError> {
        self.sets[app] = ChannelSet::new(ids, self.map.config().channels)?;
        if let (_, Some(idx)) = self.page_table(app) {
            // (No page touched yet: nothing moves.)
            self.frames.as_mut().unwrap().remap(app, &idx);
        }
        Ok(())
    }

    #[inline]
    fn slice_of(&mut self, app: usize, line: u64) -> (u32, Location) {
        let addr = line * self.line_bytes;
        let loc = if self.paged[app] {
            let f = self.frames.as_mut().expect("paged apps have a page table");
            let (idx, frame) = f.locate(app, addr / self.page_bytes);
            self.map.locate_page(addr, idx, frame, self.page_bytes)
        } else {
            self.map.locate(addr, &self.sets[app])
        };
        (self.slice_id(&loc), loc)
    }

    /// `line` as its L2 slice indexes it (see [`MemSys::l2_part`]); `loc` is its location.
    #[inline(always)]
    fn l2_at(&self, line: u64, loc: &Location) -> At {
        At {
            line,
            key: if self.l2_part {
                loc.part / self.line_bytes
            } else {
                line
            },
        }
    }

    /// `app`'s page table (`stack-page` only), for tests and reports.
    pub fn frames(&self) -> Option<&Frames> {
        self.frames.as_ref()
    }

    /// The location of `app`'s byte `addr` (allocating its page on first touch under the
    /// `stack-page` page table).
    pub fn locate(&mut self, app: usize, addr: u64) -> Location {
        self.slice_of(app, addr / self.line_bytes).1
    }

    /// The L2 slice (across all channels) that `loc` belongs to.
    fn slice_id(&self, loc: &Location) -> u32 {
        loc.channel * self.slices_per_channel + loc.slice
    }

    /// A global/local load of `sectors` of `line` issued by `sm` at `t`. Returns the time the
    /// data is in the register file, or `None` when it waits on DRAM or on an L1 MSHR
    /// (reported later in [`Self::resolved`]).
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        bypass_l1: bool,
        w: LoadRef,
        ctrs: &mut [Counters],
    ) -> Option<u64> {
        // (Not before the unit takes it: see `lsu`.)
        let t = t.max(self.lsu_free(sm));
        let t = self.translate(sm, app, line, t, &mut ctrs[app]);
        let ctr = &mut ctrs[app];
        ctr.l1_accesses += sectors.count_ones() as u64;
        if bypass_l1 {
            return self.miss(sm, app, line, sectors, t, false, false, Some(w), ctr);
        }
        self.through_banks(sm, line, sectors, t, |m, t| {
            if m.lsu.hold {
                m.load_in_order(sm, app, line, sectors, t, w, ctrs)
            } else {
                m.load_l1_or_around(sm, app, line, sectors, t, t, w, &mut ctrs[app])
            }
        })
    }

    /// Runs `access` at the time the access reaches its L1 banks' heads (`t` without bank
    /// queues), then lets it leave them.
    #[inline]
    fn through_banks<R>(
        &mut self,
        sm: usize,
        line: u64,
        sectors: u8,
        t: u64,
        access: impl FnOnce(&mut Self, u64) -> R,
    ) -> R {
        if !self.lsu.banked() {
            return access(self, t);
        }
        let slot = self.bank_enter(sm, line, sectors, t);
        let got = access(self, slot.head);
        self.bank_leave(sm, slot);
        got
    }

    /// The L1 part of a load at `t` that entered the L1 at `entered` (earlier when it was
    /// held at the unit): `Some(result)` as for [`Self::load`], `None` when it missed and
    /// every MSHR was busy (nothing was sent). A stall for another reason (its line's merge
    /// limit, a set whose every way awaits a fill) sends it around the L1. A miss leaves
    /// `l1d.miss_latency` after it entered, and not before `t`.
    #[allow(clippy::too_many_arguments)]
    fn load_l1(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        entered: u64,
        w: LoadRef,
        ctr: &mut Counters,
    ) -> Option<Option<u64>> {
        let n = sectors.count_ones() as u64;
        Some(match self.l1[sm].read(line, sectors, t) {
            Read::Hit => {
                ctr.l1_hits += n;
                Some(t + self.lat.l1_hit)
            }
            Read::Merged { ready, tag } => {
                ctr.l1_hits += n;
                if ready != UNKNOWN {
                    return Some(Some(ready.max(t + self.lat.l1_hit)));
                }
                if let Some(f) = self.fills.get_mut(tag) {
                    f.waiters.push(w);
                    return Some(None);
                }
                // The fill record is gone (resolved meanwhile): treat as a fresh miss.
                let out = self.miss_leaves(t, entered);
                self.miss(sm, app, line, sectors, out, false, true, Some(w), ctr)
            }
            Read::Miss { fetch, .. } => {
                let out = self.miss_leaves(t, entered);
                self.miss(sm, app, line, fetch, out, true, true, Some(w), ctr)
            }
            Read::Stall if self.l1[sm].mshrs_short(t, sectors) => return None,
            Read::Stall => {
                let out = self.miss_leaves(t, entered);
                self.miss(sm, app, line, sectors, out, false, true, Some(w), ctr)
            }
        })
    }

    /// When a miss of an access that entered the L1 at `entered`, looked up at `t`, leaves
    /// it: `l1d.miss_latency` after it entered (the lookup at the end of the L1's latency
    /// queue), and not before `t` (a miss held for an MSHR leaves at its release).
    #[inline]
    fn miss_leaves(&self, t: u64, entered: u64) -> u64 {
        t.max(entered + self.lat.l1_miss)
    }

    /// [`Self::load_l1`], a miss that finds every MSHR busy going to the L2 without one.
    #[allow(clippy::too_many_arguments)]
    fn load_l1_or_around(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        entered: u64,
        w: LoadRef,
        ctr: &mut Counters,
    ) -> Option<u64> {
        self.load_l1(sm, app, line, sectors, t, entered, w, ctr)
            .unwrap_or_else(|| {
                let out = self.miss_leaves(t, entered);
                self.miss(sm, app, line, sectors, out, false, true, Some(w), ctr)
            })
    }

    #[allow(clippy::too_many_arguments)]
    fn miss(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        in_l1: bool,
        mq: bool,
        w: Option<LoadRef>,
        ctr: &mut Counters,
    ) -> Option<u64> {
        match self.fetch(sm, app, line, sectors, t, Atomic::NONE, in_l1, mq, ctr) {
            Ok(ready) => {
                if in_l1 {
                    self.l1[sm].set_fill(line, ready, 0);
                }
                Some(ready)
            }
            Err(f) => {
                if in_l1 {
                    self.l1[sm].set_fill(line, UNKNOWN, f);
                }
                if let (Some(w), Some(fill)) = (w, self.fills.get_mut(f)) {
                    fill.waiters.push(w);
                }
                None
            }
        }
    }

    /// Sends a read (or atomic) for `line` to its L2 slice, through the SM's L1 miss queue
    /// with `mq`. `Ok(time)` when the reply time is known now, `Err(fill)` when it waits on
    /// DRAM.
    #[allow(clippy::too_many_arguments)]
    fn fetch(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        t: u64,
        atomic: Atomic,
        in_l1: bool,
        mq: bool,
        ctr: &mut Counters,
    ) -> Result<u64, u32> {
        let atomic_lanes = atomic.lanes;
        self.touch_page(app, line);
        let n = sectors.count_ones() as u64;
        let (sid, loc) = self.slice_of(app, line);
        // A read returns its sectors; an atomic returns one word per lane.
        let bytes = if atomic_lanes > 0 {
            HEADER + (4 * atomic_lanes as u64).min(n * self.sector_bytes)
        } else {
            HEADER + n * self.sector_bytes
        };
        ctr.noc_bytes += HEADER + bytes;
        // Atomics count per lane, other requests per sector (accesses and hits alike).
        let count = if atomic_lanes > 0 {
            atomic_lanes as u64
        } else {
            n
        };
        ctr.l2_accesses += count;
        let arrive = self.inject(sm, sid, HEADER, n, t, mq);
        let tl = self.at_slice(sid, loc.channel, n, arrive);
        self.queue_at_slice(sid, arrive, tl);
        // A page still migrating: the reply leaves the slice once the page is ready.
        let hold = match self.page_ready(app, line, tl, ctr) {
            0 => 0,
            r => r + self.lat.noc,
        };
        let r = self.fetch_at(
            sm, app, line, sectors, sid, loc, tl, atomic, in_l1, bytes, count, ctr,
        );
        if hold == 0 {
            return r;
        }
        match r {
            Ok(ready) => Ok(ready.max(hold)),
            Err(f) => {
                if let Some(fill) = self.fills.get_mut(f) {
                    fill.not_before = hold;
                }
                Err(f)
            }
        }
    }

    /// [`Self::fetch`] from the slice on: the request is served at `tl`.
    #[allow(clippy::too_many_arguments)]
    fn fetch_at(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        sid: u32,
        loc: Location,
        tl: u64,
        atomic: Atomic,
        in_l1: bool,
        bytes: u64,
        count: u64,
        ctr: &mut Counters,
    ) -> Result<u64, u32> {
        if !self.deferred[sid as usize].is_empty() {
            // Behind a request that is waiting at the slice's input.
            let f = self.new_fill(sm, line, sid, in_l1, atomic, bytes);
            self.defer(sid, f, app, sectors, tl);
            return Err(f);
        }
        let at = self.l2_at(line, &loc);
        let Some((tl, read)) = self.l2_read(sid, at, sectors, tl) else {
            let f = self.new_fill(sm, line, sid, in_l1, atomic, bytes);
            if self.unresolved[sid as usize] > 0 {
                // (The first request held at the slice.)
                self.held[sid as usize] = self.l2[sid as usize].last_stall();
                self.defer(sid, f, app, sectors, tl);
            } else {
                self.fetch_around(f, app, loc, line, sectors, tl, ctr);
            }
            return Err(f);
        };
        match self.take(loc, app, at, tl, read, count, ctr) {
            Ok(mut ready) => {
                if atomic.lanes > 0 {
                    ready = self.atomic_op(sid, ready, atomic.serial);
                }
                Ok(self.rep.send_ahead(sid as usize, sm, bytes, tl, ready))
            }
            Err(g) => {
                let f = self.new_fill(sm, line, sid, in_l1, atomic, bytes);
                self.l2fills.get_mut(g).unwrap().waiters.push(f);
                Err(f)
            }
        }
    }

    /// `serial` lane operations in slice `sid`'s atomic unit from `ready` on; returns when
    /// the last is done.
    fn atomic_op(&mut self, sid: u32, ready: u64, serial: u32) -> u64 {
        let cycles = (serial as u64 * self.atomic_init).clamp(1, u32::MAX as u64) as u32;
        self.atom[sid as usize].reserve(ready, cycles)
    }

    #[allow(clippy::too_many_arguments)]
    fn new_fill(
        &mut self,
        sm: usize,
        line: u64,
        slice: u32,
        in_l1: bool,
        atomic: Atomic,
        bytes: u64,
    ) -> u32 {
        self.fills.insert(Fill {
            sm: sm as u16,
            line,
            slice,
            in_l1,
            atomic_lanes: atomic.lanes,
            atomic_serial: atomic.serial,
            bytes,
            not_before: 0,
            waiters: SmallVec::new(),
        })
    }

    /// Whether stores need [`crate::engine::ops::partial_sectors`] (`l2.partial_write =
    /// "fetch"`).
    #[inline]
    pub fn fetches_partial_writes(&self) -> bool {
        self.fetch_partial
    }

    /// A global/local store of `sectors` of `line` at `t`, of which it writes `partial`
    /// only in part; returns when its acknowledgement reaches the SM (the warp cannot exit
    /// before), or `t` when a write-back L1 absorbs it.
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        partial: u8,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let t = t.max(self.lsu_free(sm));
        let t = self.translate(sm, app, line, t, ctr);
        self.through_banks(sm, line, sectors, t, |m, t| {
            m.store_l1(sm, app, line, sectors, partial, t, ctr)
        })
    }

    /// [`Self::store`] from the L1 on, at `t`.
    #[allow(clippy::too_many_arguments)]
    fn store_l1(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        partial: u8,
        t: u64,
        ctr: &mut Counters,
    ) -> u64 {
        let n = sectors.count_ones() as u64;
        ctr.l1_accesses += n;
        if let Write::Absorbed { present, .. } = self.l1[sm].write(line, sectors, t) {
            if self.l1_write_back {
                ctr.l1_hits += present.count_ones() as u64;
                return t;
            }
        }
        self.touch_page(app, line);
        let (sid, loc) = self.slice_of(app, line);
        let bytes = HEADER + n * self.sector_bytes;
        ctr.noc_bytes += bytes + HEADER;
        ctr.l2_accesses += n;
        // A write-through store leaves the L1 as a miss does.
        let arrive = self.inject(sm, sid, bytes, n, self.miss_leaves(t, t), true);
        let tl = self.at_slice(sid, loc.channel, n, arrive);
        self.queue_at_slice(sid, arrive, tl);
        // A page still migrating: acknowledged once the page is ready.
        let hold = match self.page_ready(app, line, tl, ctr) {
            0 => 0,
            r => r + self.lat.noc,
        };
        let at = self.l2_at(line, &loc);
        let present = self.write_l2(app, sid, at, sectors, tl, ctr, Self::push_dram);
        // Written in part and absent: with `fetch`, the slice reads those sectors (the
        // request's only cost: the write does not wait for them).
        let fetch = partial & sectors & !present;
        if fetch != 0 && self.fetch_partial {
            let k = self.accesses_for(fetch);
            ctr.dram_reads += k as u64;
            ctr.dram_bytes += k as u64 * self.access_bytes;
            self.push_dram(
                loc,
                WRITE_FLAG | app as u64,
                false,
                k,
                tl + self.lat.dram_extra,
            );
        }
        // The slice acknowledges the write once it has taken it (GPGPU-Sim's WRITE_ACK, a
        // header-sized packet on the reply network): the warp's stores are done when it is
        // back, so a store that queued at a busy slice, or whose acknowledgement queued
        // behind a co-runner's replies, holds its warp's exit that much longer.
        // (Never before the unloaded round trip: `tl` is at least the L1 lookup, a hop and
        // the L2 latency after `t`, and the reply is another hop.) Without waiting warps no
        // ack is sent.
        if !self.store_acks {
            return (t + self.lat.l1_miss + 2 * self.lat.noc + self.lat.l2).max(hold);
        }
        self.rep
            .send_ahead(sid as usize, sm, HEADER, t, tl)
            .max(hold)
    }

    /// Writes `sectors` of `app`'s `line` into L2 slice `sid` at `t`, counting the sectors
    /// already present as hits, and returns those (all of `sectors` through a write-through
    /// L2, which fetches nothing). What leaves the slice for DRAM (a dirty line the
    /// write-back L2 evicts, or the write itself through a write-through L2) is queued by
    /// `push` (see [`Self::write_dram`]).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn write_l2(
        &mut self,
        app: usize,
        sid: u32,
        at: At,
        sectors: u8,
        t: u64,
        ctr: &mut Counters,
        push: impl Fn(&mut Self, Location, u64, bool, u32, u64) + Copy,
    ) -> u8 {
        let line = at.line;
        match self.l2[sid as usize].write(at, sectors, t) {
            Write::Absorbed { evicted, present } => {
                ctr.l2_hits += present.count_ones() as u64;
                if let Some((el, dirty)) = evicted {
                    self.write_dram(app, el, dirty, t, ctr, push);
                }
                present
            }
            Write::Through => {
                self.write_dram(app, line, sectors, t, ctr, push);
                sectors
            }
        }
    }

    /// An atomic or reduction on `atomic.lanes` lanes of `line` at `t`: bypasses the L1
    /// and is serialised in the slice's atomic unit. With `w`, the result returns to a register.
    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &mut self,
        sm: usize,
        app: usize,
        line: u64,
        sectors: u8,
        atomic: Atomic,
        t: u64,
        w: Option<LoadRef>,
        ctr: &mut Counters,
    ) -> Option<u64> {
        let t = t.max(self.lsu_free(sm));
        let t = self.translate(sm, app, line, t, ctr);
        ctr.l1_accesses += sectors.count_ones() as u64;
        let lanes = atomic.lanes.max(1);
        let atomic = Atomic {
            lanes,
            serial: atomic.serial.clamp(1, lanes),
        };
        let r = self.fetch(sm, app, line, sectors, t, atomic, false, false, ctr);
        let (sid, loc) = self.slice_of(app, line);
        let at = self.l2_at(line, &loc);
        if let Write::Absorbed {
            evicted: Some((el, d)),
            ..
        } = self.l2[sid as usize].write(at, sectors, t)
        {
            self.writeback(app, el, d, t, ctr);
        }
        match r {
            Ok(ready) => Some(ready),
            Err(f) => {
                if let (Some(w), Some(fill)) = (w, self.fills.get_mut(f)) {
                    fill.waiters.push(w);
                }
                None
            }
        }
    }

    /// When slice `sid` (of `channel`) starts serving an access to `n` sectors whose request
    /// crossed the network by `arrive`: after the L2 latency, any head-of-line delay of a
    /// backed-up channel or of a request held at the slice's input, and its turn at the
    /// slice's port, which moves `l2.port` bytes a cycle in arrival order of the calls.
    fn at_slice(&mut self, sid: u32, channel: u32, n: u64, arrive: u64) -> u64 {
        let t = arrive + self.lat.l2 + self.backpressure(channel);
        let t = t.max(self.slice_free[sid as usize]);
        let Some(cal) = self.l2_port.get_mut(sid as usize) else {
            return t;
        };
        let bytes = n.max(1) * self.sector_bytes;
        let end = cal.reserve(t, bytes.min(u32::MAX as u64) as u32);
        end - self.port_cycles(n)
    }

    /// Cycles an access to `n` sectors holds an L2 slice's port (`l2.port` bytes a cycle).
    #[inline]
    pub(super) fn port_cycles(&self, n: u64) -> u64 {
        (n.max(1) * self.sector_bytes).div_ceil(self.l2_port_bytes)
    }

    /// A request that reached slice `sid`'s side of the crossbar at `arrive` and that the
    /// slice serves at `tl`: it leaves the crossbar's output buffer once the slice's input
    /// queue has room (the request `l2.input_queue` ahead of it was taken), and the queue
    /// when the slice takes it (`tl` less the L2 latency).
    fn queue_at_slice(&mut self, sid: u32, arrive: u64, tl: u64) {
        let q = &mut self.slice_in[sid as usize];
        if !q.bounded() {
            return;
        }
        let room = q.room(1);
        q.push(1, tl - self.lat.l2);
        if room > arrive {
            self.req.taken(sid as usize, room);
        }
    }

    fn finish_fill(&mut self, id: u32, t: u64) {
        let Some(f) = self.fills.remove(id) else {
            return;
        };
        let mut ready = t;
        if f.atomic_lanes > 0 {
            ready = self.atomic_op(f.slice, ready, f.atomic_serial);
        }
        // (After an atomic unit's backlog the reply is computed ahead of `t`.)
        let arrive = self
            .rep
            .send_ahead(f.slice as usize, f.sm as usize, f.bytes, t, ready)
            .max(f.not_before);
        if f.in_l1 {
            self.l1[f.sm as usize].resolve(f.line, id, arrive);
        }
        self.resolved.extend(f.waiters.iter().map(|&w| (w, arrive)));
        if f.in_l1 && self.lsu.holds(f.sm as usize) {
            // An MSHR of this L1 now has a known free time.
            self.schedule_release(f.sm as usize, arrive);
        }
    }

    /// Flushes an SM's L1 (kernel end).
    pub fn flush_l1(&mut self, sm: usize, now: u64) {
        self.l1[sm].flush(now);
    }
}
