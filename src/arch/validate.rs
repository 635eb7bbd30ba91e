//! Cross-field validation of a [`GpuSpec`]: combinations no GPU can have (channels not
//! divisible among HBM stacks, bank groups not dividing banks, warps × warp size below the
//! thread limit, carve-outs larger than the unified array, non-power-of-two geometry, ...).

use super::spec::*;
use super::units::{Bytes, Freq};

/// Slowest clock a model may name (any domain).
pub const MIN_CLOCK_HZ: u64 = 10_000_000;
/// Fastest clock a model may name (any domain).
pub const MAX_CLOCK_HZ: u64 = 20_000_000_000;
/// How far (either way) an interconnect, L2 or DRAM clock may be from the core clock.
pub const MAX_CLOCK_RATIO: u64 = 16;
/// Shortest time slice, in core cycles.
pub const MIN_SLICE_CYCLES: u64 = 1000;
// ---------------------------------------------------------------------------------------------
// Validation

#[derive(Default)]
pub(crate) struct Validator {
    pub(crate) issues: Vec<SpecIssue>,
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
    /// Counts the engine sizes arrays by: above `max` a model would allocate without
    /// bound or overflow an internal width, so it is refused before anything is built.
    fn at_most(&mut self, key: &str, v: u64, max: u64) {
        if v > max {
            self.err(
                key,
                format!("{v} is out of range; expected at most {max} (no real GPU comes close)"),
            );
        }
    }
    /// A clock within [`MIN_CLOCK_HZ`, `MAX_CLOCK_HZ`] and within [`MAX_CLOCK_RATIO`]
    /// times the core clock either way.
    fn clock(&mut self, key: &str, hz: u64, core_hz: u64) {
        if !(MIN_CLOCK_HZ..=MAX_CLOCK_HZ).contains(&hz) {
            self.err(
                key,
                format!(
                    "{} is out of range; expected {} to {}",
                    Freq::from_hz(hz),
                    Freq::from_hz(MIN_CLOCK_HZ),
                    Freq::from_hz(MAX_CLOCK_HZ)
                ),
            );
        } else if core_hz > 0
            && (hz > core_hz.saturating_mul(MAX_CLOCK_RATIO)
                || core_hz > hz.saturating_mul(MAX_CLOCK_RATIO))
        {
            self.err(
                key,
                format!(
                    "{} is more than {MAX_CLOCK_RATIO}x away from clocks.core = {}",
                    Freq::from_hz(hz),
                    Freq::from_hz(core_hz)
                ),
            );
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
    pub(crate) fn check(&self, v: &mut Validator) {
        if self.name.trim().is_empty() {
            v.err("name", "must not be empty");
        }

        // Clocks: a clock of a few hertz truncates to zero in the engine's kHz ratios, and
        // domains far apart turn one latency into millions of core cycles. Real GPUs keep
        // every domain within a few times the SM clock.
        let core = self.clocks.core.hz();
        v.clock("clocks.core", core, core);
        v.clock("clocks.icnt", self.clocks.icnt.hz(), core);
        v.clock("clocks.l2", self.clocks.l2.hz(), core);
        v.clock("dram.clock", self.dram.clock.hz(), core);

        let l = &self.launch;
        v.positive(
            "launch.max_concurrent_kernels",
            l.max_concurrent_kernels as u64,
        );

        self.check_sm(v);
        self.check_sm_storage(v);
        self.check_units(v);
        self.check_l1(v);
        self.check_l2_noc(v);
        self.check_dram(v);
        self.check_dram_timing(v);
        self.check_reconfig(v);
    }

    /// SM limits: counts, the ranges that bound the engine's state, the operand collector.
    fn check_sm(&self, v: &mut Validator) {
        // SM limits
        let sm = &self.sm;
        v.positive("sm.count", sm.count as u64);
        v.pow2("sm.warp_size", sm.warp_size as u64);
        v.positive("sm.max_warps", sm.max_warps as u64);
        v.positive("sm.max_ctas", sm.max_ctas as u64);
        v.positive("sm.schedulers", sm.schedulers as u64);
        v.positive("sm.issue_width", sm.issue_width as u64);
        v.positive("sm.max_threads_per_cta", sm.max_threads_per_cta as u64);
        // Ranges that bound the engine's state (every array is sized by these).
        v.at_most("sm.count", sm.count as u64, 4096);
        v.at_most("sm.max_warps", sm.max_warps as u64, 256);
        v.at_most("sm.max_ctas", sm.max_ctas as u64, 256);
        v.at_most("sm.max_threads", sm.max_threads as u64, 8192);
        v.at_most("sm.schedulers", sm.schedulers as u64, 16);
        v.at_most("sm.issue_width", sm.issue_width as u64, 8);
        if let Some(oc) = &sm.operand_collector {
            // Sub-cores split the collector units and banks among the schedulers.
            let per = |n: u32| {
                !sm.sub_cores
                    || (sm.schedulers > 0 && n >= sm.schedulers && n.is_multiple_of(sm.schedulers))
            };
            if !per(oc.units) {
                v.err(
                    "sm.operand_collector.units",
                    format!(
                        "{} collector units do not divide among {} schedulers (at least one each)",
                        oc.units, sm.schedulers
                    ),
                );
            }
            if !per(oc.register_banks) {
                v.err(
                    "sm.operand_collector.register_banks",
                    format!(
                        "{} register banks do not divide among {} schedulers (at least one each)",
                        oc.register_banks, sm.schedulers
                    ),
                );
            }
            v.positive("sm.operand_collector.units", oc.units as u64);
            v.positive(
                "sm.operand_collector.register_banks",
                oc.register_banks as u64,
            );
            v.at_most("sm.operand_collector.units", oc.units as u64, 256);
            v.at_most(
                "sm.operand_collector.register_banks",
                oc.register_banks as u64,
                256,
            );
            v.positive(
                "sm.operand_collector.port_throughput",
                oc.port_throughput as u64,
            );
            v.at_most(
                "sm.operand_collector.port_throughput",
                oc.port_throughput as u64,
                8,
            );
            if sm.pipeline_latency.0 < 3 {
                v.err(
                    "sm.pipeline_latency",
                    format!(
                        "{} cycles cannot hold the operand collector's 3 (issue, collect, dispatch)",
                        sm.pipeline_latency.0
                    ),
                );
            }
        }
        v.at_most("dram.channels", self.dram.channels as u64, 1024);
        v.at_most("dram.banks", self.dram.banks as u64, 256);
        v.at_most(
            "l2.slices_per_channel",
            self.l2.slices_per_channel as u64,
            64,
        );
        v.at_most("l2.assoc", self.l2.assoc as u64, 1024);
        v.at_most("l1d.assoc", self.l1d.assoc as u64, 1024);
        v.at_most("l2.mshrs", self.l2.mshrs as u64, 1 << 16);
        v.at_most("l1d.mshrs", self.l1d.mshrs as u64, 1 << 16);
        // Bounded queues are allocated at their depth (`mem::noc::Credits`); 2^20 entries
        // already behaves as unbounded on any workload.
        v.at_most("l1d.miss_queue", self.l1d.miss_queue as u64, 1 << 20);
        v.at_most("l2.miss_queue", self.l2.miss_queue as u64, 1 << 20);
        v.at_most("l2.dram_queue", self.l2.dram_queue as u64, 1 << 20);
        v.at_most("l2.input_queue", self.l2.input_queue as u64, 1 << 20);
        v.at_most("noc.buffer", self.noc.buffer as u64, 1 << 20);
        for k in UnitKind::ALL {
            v.at_most(
                &format!("units.{k}.count"),
                self.units.get(k).count as u64,
                64,
            );
        }
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
    }

    /// The register file and shared memory of an SM.
    fn check_sm_storage(&self, v: &mut Validator) {
        let sm = &self.sm;
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
    }

    /// Functional units.
    fn check_units(&self, v: &mut Validator) {
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
                    // Real pipes start a warp instruction every 1 to 64 cycles; far beyond
                    // that a run spends its time stepping through idle cycles.
                    v.at_most(&format!("{key}.initiation"), u.initiation.0, 1024);
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
    }

    /// L1D and the shared-memory carve-out.
    fn check_l1(&self, v: &mut Validator) {
        let sm = &self.sm;
        let s = &sm.shared;
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
    }

    /// L2 and the NoC.
    fn check_l2_noc(&self, v: &mut Validator) {
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
        if l2.set_index == SetIndex::Ipoly {
            let sets = l2.sets();
            if !sets.is_power_of_two() || !(2..=256).contains(&sets) {
                v.err(
                    "l2.set_index",
                    format!("\"ipoly\" needs a power-of-two set count from 2 to 256; the slice has {sets} sets"),
                );
            }
        }
        if let Some(port) = l2.port {
            v.positive("l2.port", port.0);
            if port.0 > l2.line.0 {
                v.err(
                    "l2.port",
                    format!("port {port} is wider than the line {}", l2.line),
                );
            }
        }

        // NoC
        let n = &self.noc;
        v.positive("noc.flit", n.flit.0);
        v.positive("noc.port_width", n.port_width.0);
        if n.subnets != 2 {
            v.err(
                "noc.subnets",
                "only 2 is modelled (separate request and reply networks)",
            );
        }
        v.positive("noc.buffer", n.buffer as u64);
    }

    /// DRAM: channels, stacks, banks and queues.
    fn check_dram(&self, v: &mut Validator) {
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
        if d.refresh {
            v.positive("dram.timing.tREFI", d.timing.t_refi.0);
            v.positive("dram.timing.tRFC", d.timing.t_rfc.0);
            if d.timing.t_rfc.0 >= d.timing.t_refi.0 {
                v.err(
                    "dram.timing.tRFC",
                    "must be shorter than tREFI with dram.refresh (the banks would never be free)",
                );
            }
        }
        if d.page_policy != PagePolicy::Open {
            v.err(
                "dram.page_policy",
                "only \"open\" is modelled (rows stay open until a conflict needs the bank)",
            );
        }
        if d.scheduler != DramScheduler::FrFcfs {
            v.err(
                "dram.scheduler",
                "only \"fr-fcfs\" is modelled (the engine has no plain FCFS scheduler)",
            );
        }
        if d.kind == DramKind::Gddr6 {
            // JESD250: each 16-bit channel moves 2 B per pin-pair transfer, 16 transfers a
            // burst, 4 transfers per command clock (WCK = 2 x CK, DDR), bank groups.
            if d.data_rate != 4 {
                v.err(
                    "dram.data_rate",
                    "gddr6 transfers 4 data words per command clock",
                );
            }
            if d.burst_length != 16 {
                v.err("dram.burst_length", "gddr6 has a burst length of 16");
            }
            if d.bank_groups < 2 {
                v.err("dram.bank_groups", "gddr6 banks are in bank groups (4)");
            }
        }
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
    }

    /// DRAM timings and the address mapping.
    fn check_dram_timing(&self, v: &mut Validator) {
        let d = &self.dram;
        let t = &d.timing;
        // Every timing, and whether it must be positive. JEDEC timings are tens to hundreds
        // of command cycles; a timing of a million makes every access a million cycles,
        // which the channel steps through, so each is at most 4096.
        for (k, c, positive) in [
            ("tRCD", t.t_rcd, true),
            ("tRP", t.t_rp, true),
            ("tRAS", t.t_ras, true),
            ("tRC", t.t_rc, true),
            ("tCL", t.t_cl, true),
            ("tWL", t.t_wl, false),
            ("tCCDS", t.t_ccd_s, true),
            ("tCCDL", t.t_ccd_l, false),
            ("tRRDS", t.t_rrd_s, false),
            ("tRRDL", t.t_rrd_l, false),
            ("tFAW", t.t_faw, false),
            ("tWTRS", t.t_wtr_s, false),
            ("tWTRL", t.t_wtr_l, false),
            ("tRTP", t.t_rtp, false),
            ("tWR", t.t_wr, false),
        ] {
            let key = format!("dram.timing.{k}");
            if positive {
                v.positive(&key, c.0);
            }
            v.at_most(&key, c.0, 4096);
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
        if let Some(bits) = &m.bank_bits {
            check_bank_bits(v, d, bits);
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
    }

    /// Reconfiguration costs and address translation.
    fn check_reconfig(&self, v: &mut Validator) {
        // Reconfiguration
        let rc = &self.reconfig;
        // Every slice is an engine event and a context switch: a slice of a few cycles
        // would spend the run switching (or, shorter than a cycle, never advance).
        let slice = self.clocks.core.cycles_in(rc.time_slice);
        if slice < MIN_SLICE_CYCLES {
            v.err(
                "reconfig.time_slice",
                format!(
                    "{} is {slice} core cycles at clocks.core = {}; expected at least \
                     {MIN_SLICE_CYCLES} cycles (real time slices are milliseconds)",
                    rc.time_slice, self.clocks.core
                ),
            );
        }
        v.pow2("reconfig.page_size", rc.page_size.0);
        v.positive(
            "reconfig.context_save_bandwidth",
            rc.context_save_bandwidth.0,
        );
        v.positive(
            "reconfig.migration_commands_per_page",
            rc.migration_commands_per_page as u64,
        );

        // Address translation
        let tr = &self.translation;
        v.pow2("translation.page_size", tr.page_size.0);
        for (k, entries, assoc) in [
            ("translation.l1_assoc", tr.l1_entries, tr.l1_assoc),
            ("translation.l2_assoc", tr.l2_entries, tr.l2_assoc),
        ] {
            if assoc == 0 || entries == 0 || entries % assoc != 0 {
                v.err(
                    k,
                    format!(
                        "{assoc} ways must be positive and divide the {entries} entries \
                         (entries = sets x ways)"
                    ),
                );
            }
        }
        v.positive("translation.walkers", tr.walkers as u64);
        // (Each TLB entry and walker is allocated; a GH100's L2 TLB holds thousands of
        // entries, its walkers are a handful.)
        v.at_most("translation.l1_entries", tr.l1_entries as u64, 1 << 16);
        v.at_most("translation.l2_entries", tr.l2_entries as u64, 1 << 20);
        v.at_most("translation.walkers", tr.walkers as u64, 1 << 12);
        v.positive("translation.walk_levels", tr.walk_levels as u64);
        if tr.walk_levels > 8 {
            v.err(
                "translation.walk_levels",
                format!(
                    "{} levels; expected at most 8 (a radix page table)",
                    tr.walk_levels
                ),
            );
        }
        if tr.walk_fill == 0 || tr.walk_fill > 512 {
            v.err(
                "translation.walk_fill",
                format!(
                    "{} pages; expected 1 to 512 (the entries of one page-table read)",
                    tr.walk_fill
                ),
            );
        }
        if tr.page_size.0 < 4096 {
            v.err(
                "translation.page_size",
                format!("{}; expected at least 4 KiB", tr.page_size),
            );
        }
    }
}

/// `dram.mapping.bank_bits`: one distinct bit per bank-index bit, all below the row (the
/// row size's column bits plus the bank bits), so every bank and column is reachable and
/// two addresses of a channel never share a place.
fn check_bank_bits(v: &mut Validator, d: &Dram, bits: &[u32]) {
    const KEY: &str = "dram.mapping.bank_bits";
    if !d.banks.is_power_of_two() {
        v.err(
            KEY,
            format!("needs a power-of-two dram.banks (it is {})", d.banks),
        );
        return;
    }
    let want = d.banks.trailing_zeros() as usize;
    if want > crate::mem::map::BankBits::MAX_BITS {
        v.err(
            KEY,
            format!(
                "supports at most {} banks ({} bits); dram.banks is {}",
                1u64 << crate::mem::map::BankBits::MAX_BITS,
                crate::mem::map::BankBits::MAX_BITS,
                d.banks
            ),
        );
        return;
    }
    if bits.len() != want {
        v.err(
            KEY,
            format!(
                "has {} bits; expected {want}, one per bit of a bank index ({} banks)",
                bits.len(),
                d.banks
            ),
        );
        return;
    }
    let top = u64::from(d.row_size.0.max(1).trailing_zeros()) + want as u64;
    let mut seen = std::collections::BTreeSet::new();
    for &b in bits {
        if b >= crate::mem::map::BankBits::MAX_BIT {
            v.err(
                KEY,
                format!(
                    "bit {b} is past an address's bits (expected below {})",
                    crate::mem::map::BankBits::MAX_BIT
                ),
            );
        } else if u64::from(b) >= top {
            v.err(
                KEY,
                format!(
                    "bit {b} is above the row: with {} rows and {} banks the bank bits lie below bit {top}",
                    d.row_size, d.banks
                ),
            );
        } else if !seen.insert(b) {
            v.err(KEY, format!("bit {b} is listed twice"));
        }
    }
}
