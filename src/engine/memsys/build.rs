//! Building the memory hierarchy of one run from a GPU model: clock conversions of the
//! latencies, the L1/L2 cache geometries, crossbar ports, DRAM timing and channels, the
//! address map, the page-table state of `stack-page` and the TLBs.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::bulk::Later;
use super::lsu::Lsu;
use super::migrate::PageCost;
use super::slab::Slab;
use super::translate::Translation;
use super::{cycles_to, Latencies, MemSys, PORT_WINDOW};
use crate::arch::{GpuSpec, SetIndex as SpecIndex, WritePolicy};
use crate::mem::cache::{Cache, CacheConfig, SetIndex, Stall};
use crate::mem::calendar::Calendar;
use crate::mem::dram::{Channel, DramChannelConfig, DramTiming, Refresh};
use crate::mem::frames::Frames;
use crate::mem::map::{AddressMap, ChannelSet, MapConfig};
use crate::mem::noc::{Crossbar, NocConfig};
use crate::mem::pages::PageSet;

/// The clock rates of one run in kHz.
#[derive(Clone, Copy)]
struct Khz {
    core: u64,
    l2: u64,
    icnt: u64,
    dram: u64,
}

impl Khz {
    fn of(spec: &GpuSpec) -> Khz {
        Khz {
            core: spec.clocks.core.hz() / 1000,
            l2: spec.clocks.l2.hz() / 1000,
            icnt: spec.clocks.icnt.hz() / 1000,
            dram: spec.dram.clock.hz() / 1000,
        }
    }
}

impl MemSys {
    pub fn new(spec: &GpuSpec, l1_assoc: u32, apps: usize) -> MemSys {
        let khz = Khz::of(spec);
        let (core_khz, dram_khz) = (khz.core, khz.dram);
        let lat = latencies(spec, khz);
        let l1 = &spec.l1d;
        let l1_cfg = l1_config(spec, l1_assoc);
        let l2 = &spec.l2;
        let l2_cfg = l2_config(spec);
        let sms = spec.sm.count as usize;
        let nch = spec.dram.channels;
        let slices = (nch * l2.slices_per_channel) as usize;
        let l2_port_bytes = l2
            .port
            .map_or(1, |p| (p.0 * khz.l2 / core_khz.max(1)).max(1));
        let noc = noc_config(spec, khz, lat.noc);
        let d = &spec.dram;
        let t = &d.timing;
        let ch_cfg = channel_config(spec, khz, l2_port_bytes);
        let mut m = MemSys {
            lat,
            line_bytes: l1.line.0.max(l2.line.0),
            l2_part: l2.set_address == crate::arch::SetAddress::Partition
                && l2.set_index != SpecIndex::Ipoly,
            sector_bytes: l2.sector.0,
            access_bytes: d.access_bytes().max(1),
            l1_banks: l1.banks.clamp(1, 64),
            atomic_init: l2.atomic_initiation.0,
            queue_cap: d.queue as usize
                + (l2.miss_queue as usize + l2.dram_queue as usize)
                    * l2.slices_per_channel as usize,
            l1_write_back: l1_cfg.write_back,
            store_acks: spec.sm.exit_waits_for_stores,
            l1: (0..sms)
                .map(|_| {
                    let mut c = Cache::new(l1_cfg);
                    c.set_sector_mshrs(l1.request_unit == crate::arch::RequestUnit::Sector);
                    c
                })
                .collect(),
            l2: (0..slices).map(|_| Cache::new(l2_cfg)).collect(),
            atom: vec![crate::mem::calendar::Calendar::new(1, 1 << 15); slices],
            req: Crossbar::new(noc, sms, slices),
            rep: Crossbar::new(noc, slices, sms),
            chans: (0..nch)
                .map(|c| {
                    let mut ch = Channel::new(ch_cfg);
                    ch.stagger_refresh(c as usize, nch as usize);
                    ch
                })
                .collect(),
            chan_sched: vec![u64::MAX; nch as usize],
            map: address_map(spec),
            slices_per_channel: l2.slices_per_channel,
            sets: vec![ChannelSet::all(nch); apps],
            fills: Slab::new(),
            l2fills: Slab::new(),
            slice_free: vec![0; slices],
            slice_in: vec![crate::mem::noc::Credits::new(l2.input_queue); slices],
            l2_port: match l2.port {
                Some(_) => vec![Calendar::new(l2_port_bytes as u32, PORT_WINDOW); slices],
                None => Vec::new(),
            },
            l2_port_bytes,
            held_take_port: l2.port.is_some() && l2.held_reads_take_port,
            fetch_partial: l2.partial_write == crate::arch::PartialWrite::Fetch
                && l2.write_policy == WritePolicy::WriteBack,
            deferred: (0..slices).map(|_| VecDeque::new()).collect(),
            held: vec![Stall::Other; slices],
            unresolved: vec![0; slices],
            last_arrival: vec![0; nch as usize],
            lsu: Lsu::new(
                l1.on_mshr_full == crate::arch::MshrFull::Stall,
                l1.miss_queue,
                l1.request_unit == crate::arch::RequestUnit::Sector,
                (l1.banks, l1.bank_queue),
                sms,
            ),
            lsu_events: Vec::new(),
            core_khz,
            dram_khz,
            pages: vec![PageSet::default(); apps],
            last_page: vec![u64::MAX; apps],
            page_bytes: spec.reconfig.page_size.0.max(1),
            stacks: d.stacks,
            bank_groups: d.bank_groups,
            frames: (d.mapping.scheme == crate::arch::MapScheme::StackPage)
                .then(|| d.stacks.max(1))
                .filter(|&s| nch / s > 0)
                .map(|s| Frames::new(apps, nch / s)),
            // (Every stack-page application starts on all channels: paged when they form
            // whole stacks.)
            paged: vec![
                d.mapping.scheme == crate::arch::MapScheme::StackPage
                    && ChannelSet::all(nch)
                        .stack_indices(d.stacks.max(1), nch / d.stacks.max(1))
                        .is_some();
                apps
            ],
            pending: vec![FxHashMap::default(); apps],
            inflight: vec![FxHashMap::default(); apps],
            inflight_until: vec![0; apps],
            engine_free: Vec::new(),
            page_cost: [PageCost::default(); 4],
            per_stack: 1,
            covered: 1,
            later: Later::new(nch as usize),
            chan_events: Vec::new(),
            resolved: Vec::new(),
            tlb: None,
        };
        // A page-table read that misses the L2: request and reply crossings, the L2 and
        // DRAM-side latencies and an unloaded row miss (activate, read, burst).
        let miss = 2 * lat.noc
            + lat.l2
            + lat.dram_extra
            + cycles_to(dram_khz, core_khz, t.t_rcd.0 + t.t_cl.0 + d.burst_cycles());
        m.tlb = Translation::new(spec, sms, miss);
        m.set_page_costs(spec);
        m
    }
}

/// The fixed latencies in core cycles.
fn latencies(spec: &GpuSpec, khz: Khz) -> Latencies {
    Latencies {
        l1_hit: spec.l1d.hit_latency.0,
        l1_miss: spec.l1d.miss_latency.0,
        noc: cycles_to(khz.icnt, khz.core, spec.noc.latency.0),
        l2: cycles_to(khz.l2, khz.core, spec.l2.latency.0),
        dram_extra: cycles_to(khz.l2, khz.core, spec.dram.latency.0),
    }
}

/// An SM's L1 data cache with `assoc` ways.
fn l1_config(spec: &GpuSpec, assoc: u32) -> CacheConfig {
    let l1 = &spec.l1d;
    CacheConfig {
        sets: l1.sets() as u32,
        ways: assoc.max(1),
        line_bytes: l1.line.0 as u32,
        sector_bytes: l1.sector.0 as u32,
        mshrs: l1.mshrs,
        mshr_merge: l1.mshr_merge,
        index: SetIndex::Linear,
        strip: None,
        write_back: l1.write_policy == WritePolicy::WriteBack,
    }
}

/// One L2 slice.
fn l2_config(spec: &GpuSpec) -> CacheConfig {
    let l2 = &spec.l2;
    CacheConfig {
        sets: l2.sets() as u32,
        ways: l2.assoc,
        line_bytes: l2.line.0 as u32,
        sector_bytes: l2.sector.0 as u32,
        mshrs: l2.mshrs,
        mshr_merge: l2.mshr_merge,
        index: match l2.set_index {
            SpecIndex::Linear => SetIndex::Linear,
            SpecIndex::Xor => SetIndex::Xor,
            SpecIndex::Ipoly => SetIndex::Ipoly,
        },
        strip: (l2.set_index == SpecIndex::Ipoly).then(|| {
            let lines = (spec.dram.mapping.interleave.0 / l2.line.0.max(1)).max(1);
            (
                lines as u32,
                match spec.dram.mapping.scheme {
                    // (The slice is chosen below the channel's bits: not stripped.)
                    crate::arch::MapScheme::Ipoly => spec.dram.channels,
                    _ => spec.dram.channels * l2.slices_per_channel,
                },
            )
        }),
        write_back: l2.write_policy == WritePolicy::WriteBack,
    }
}

/// Either crossbar, with its latency `noc` in core cycles.
fn noc_config(spec: &GpuSpec, khz: Khz, noc: u64) -> NocConfig {
    // Port bandwidth in bytes per core cycle.
    let port = (spec.noc.port_width.0 * khz.icnt / khz.core.max(1)).max(1);
    NocConfig {
        latency: noc,
        port_bytes_per_cycle: port,
        flit_bytes: spec.noc.flit.0,
        fifo: spec.noc.kind == crate::arch::NocKind::FifoCrossbar,
        buffer: spec.noc.buffer,
    }
}

/// One DRAM channel; an L2 slice's port writes `l2_port_bytes` a core cycle.
fn channel_config(spec: &GpuSpec, khz: Khz, l2_port_bytes: u64) -> DramChannelConfig {
    let d = &spec.dram;
    let t = &d.timing;
    let timing = DramTiming {
        t_rcd: t.t_rcd.0,
        t_rp: t.t_rp.0,
        t_ras: t.t_ras.0,
        t_rc: t.t_rc.0,
        t_cl: t.t_cl.0,
        t_wl: t.t_wl.0,
        t_ccd_s: t.t_ccd_s.0,
        t_ccd_l: t.t_ccd_l.0,
        t_rrd_s: t.t_rrd_s.0,
        t_rrd_l: t.t_rrd_l.0,
        t_faw: t.t_faw.0,
        t_wtr_s: t.t_wtr_s.0,
        t_wtr_l: t.t_wtr_l.0,
        t_rtp: t.t_rtp.0,
        t_wr: t.t_wr.0,
        burst: d.burst_cycles(),
    };
    DramChannelConfig {
        timing,
        banks: d.banks,
        bank_groups: d.bank_groups,
        queue_depth: d.queue as usize,
        refresh: d.refresh.then_some(Refresh {
            t_refi: t.t_refi.0,
            t_rfc: t.t_rfc.0,
        }),
        dual_bus: d.dual_bus,
        return_queue: d.return_queue as usize,
        // One access leaves the return queue a DRAM cycle, and no faster than the
        // slice's port writes it (without an L2 port model, one a DRAM cycle).
        return_gap: spec.l2.port.map_or(1, |_| {
            cycles_to(
                khz.core,
                khz.dram,
                d.access_bytes().max(1).div_ceil(l2_port_bytes),
            )
            .max(1)
        }),
    }
}

/// The address map of the model's channels, slices, banks and mapping scheme.
fn address_map(spec: &GpuSpec) -> AddressMap {
    let d = &spec.dram;
    AddressMap::new(MapConfig {
        channels: d.channels,
        slices_per_channel: spec.l2.slices_per_channel,
        banks: d.banks,
        bank_groups: d.bank_groups,
        interleave: d.mapping.interleave.0,
        row_bytes: d.row_size.0,
        scheme: match d.mapping.scheme {
            crate::arch::MapScheme::Linear => crate::mem::map::Scheme::Linear,
            crate::arch::MapScheme::Xor => crate::mem::map::Scheme::Xor,
            crate::arch::MapScheme::Ipoly => crate::mem::map::Scheme::Ipoly,
            crate::arch::MapScheme::StackPage => crate::mem::map::Scheme::StackPage {
                stacks: d.stacks,
                stack_interleave: d.mapping.stack_interleave.map_or(1, |b| b.0),
            },
        },
        // (Validated: at most 8 bits, each below 63.)
        bank_bits: d.mapping.bank_bits.as_deref().map(|b| {
            crate::mem::map::BankBits::new(b).expect("dram.mapping.bank_bits is validated")
        }),
    })
}
