//! Integration tests of the hybrid engine (`gpumodel::engine`) against analytic expectations
//! computed from the GPU model's own fields: unloaded latencies, DRAM bandwidth and row
//! behaviour, issue limits, interference between co-runners, determinism, and one test per
//! sharing mechanism (masks, quotas, fractions, dispatch order, channel sets, runtime
//! reconfiguration, persistent threads, time slicing, hooks, kernel sequences, arrivals,
//! run modes).
//!
//! Every kernel is hand-built (tests/common/engine_kit.rs) on a QV100 model shrunk to a few
//! SMs and channels, so the whole file runs in seconds in release mode. Each tolerance is
//! stated and justified where it is used.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::engine_kit::*;
use gpumodel::arch::GpuSpec;
use gpumodel::engine::{
    Action, DispatchOrder, Handover, Hook, Migration, Persistent, RunConfig, RunMode, RunStats,
};

// ---------------------------------------------------------------------------------------------
// 1. Unloaded latency
// ---------------------------------------------------------------------------------------------

/// Core cycles of the configured crossbar latency (icnt clock).
fn noc_lat(spec: &GpuSpec) -> u64 {
    to_core(spec, spec.clocks.icnt.hz(), spec.noc.latency.0)
}

/// Core cycles to push one flit through a port (ceil(flit / port width) icnt cycles). A
/// one-sector request or reply (32 B + header) fits in one 40 B flit.
fn flit_time(spec: &GpuSpec) -> u64 {
    to_core(
        spec,
        spec.clocks.icnt.hz(),
        spec.noc.flit.0.div_ceil(spec.noc.port_width.0),
    )
}

/// Unloaded L2 hit latency expected from the model, without port serialisation: L1 miss ->
/// noc.latency -> l2.latency (L2 clock) -> noc.latency. The test adds at most one flit time
/// per crossing on top.
fn expected_l2_hit(spec: &GpuSpec) -> u64 {
    2 * noc_lat(spec) + to_core(spec, spec.clocks.l2.hz(), spec.l2.latency.0)
}

/// Unloaded DRAM latency of a first access to a closed bank: the L2 path, the fixed DRAM
/// latency (dram.latency, counted in the L2 clock like Accel-Sim's -dram_latency), then
/// ACT -> tRCD -> column -> tCL -> one burst, all in the DRAM command clock.
fn expected_dram(spec: &GpuSpec) -> u64 {
    let t = &spec.dram.timing;
    expected_l2_hit(spec)
        + to_core(spec, spec.clocks.l2.hz(), spec.dram.latency.0)
        + to_core(
            spec,
            spec.dram.clock.hz(),
            t.t_rcd.0 + t.t_cl.0 + spec.dram.burst_cycles(),
        )
}

/// Cycles of a one-warp kernel (start of its only CTA to its EXIT).
fn one_warp_cycles(spec: &GpuSpec, k: std::sync::Arc<dyn gpumodel::trace::KernelSource>) -> u64 {
    let s = alone(spec, &app("lat", vec![k]));
    assert_eq!(s.apps[0].kernels.len(), 1);
    s.apps[0].kernels[0].cycles
}

/// A single warp: `LDG R2 <- [x]` (one sector, cold: goes to DRAM), then a dependent FFMA,
/// then EXIT. The FFMA issues when the load's data is in the register file and EXIT the
/// cycle after, so cycles = DRAM latency + 1.
fn cold_load() -> std::sync::Arc<dyn gpumodel::trace::KernelSource> {
    single_warp("cold", |k| {
        k.ldg(2, 0, &one_sector(BUF));
        k.ffma(3, 2, 2, 2);
    })
}

#[test]
fn unloaded_dram_latency() {
    for extra in [&[][..], &["clocks.l2=566 MHz", "clocks.icnt=566 MHz"][..]] {
        let spec = tiny_with(2, 2, extra);
        let got = one_warp_cycles(&spec, cold_load()) - 1;
        let lo = expected_dram(&spec);
        // Tolerance: one flit time per crossbar crossing (serialisation), two clock-domain
        // crossings (core -> DRAM clock at the channel, DRAM -> core for the data) that may
        // each round up by one DRAM cycle, plus the pipeline latency as dispatch slack;
        // nothing else can add time to an unloaded access.
        let hi = lo
            + 2 * flit_time(&spec)
            + to_core(&spec, spec.dram.clock.hz(), 2)
            + spec.sm.pipeline_latency.0;
        assert!(
            (lo..=hi).contains(&got),
            "{extra:?}: DRAM load latency {got}, expected {lo}..={hi} (L2 path {} + dram.latency + tRCD + tCL + burst)",
            expected_l2_hit(&spec)
        );
    }
}

#[test]
fn unloaded_l1_hit_latency() {
    let spec = tiny(2, 2);
    let base = one_warp_cycles(&spec, cold_load());
    // Pointer chase: the second load's address register is the first load's result, and it
    // reads the same sector, which the first load brought into the L1.
    let chase = single_warp("chase-l1", |k| {
        k.ldg(2, 0, &one_sector(BUF));
        k.ldg(4, 2, &one_sector(BUF + 4));
        k.ffma(3, 4, 4, 4);
    });
    let hit = one_warp_cycles(&spec, chase) - base;
    let lo = spec.l1d.hit_latency.0;
    // Tolerance: at most the SM pipeline latency plus the LSU's own latency on top of the
    // configured L1 hit latency (operand collection / writeback).
    let hi = lo + spec.sm.pipeline_latency.0 + spec.units.mem.latency.0;
    assert!(
        (lo..=hi).contains(&hit),
        "L1 hit latency {hit}, expected {lo}..={hi}"
    );
}

#[test]
fn unloaded_l2_hit_latency() {
    for extra in [&[][..], &["clocks.l2=566 MHz", "clocks.icnt=566 MHz"][..]] {
        let spec = tiny_with(2, 2, extra);
        let base = one_warp_cycles(&spec, cold_load());
        // Same chase with loads that bypass the L1 (.STRONG.GPU): the second one hits the L2
        // line the first one filled.
        let chase = single_warp("chase-l2", |k| {
            k.inst("LDG.E.STRONG.GPU", r(2), &[r(0)], &one_sector(BUF));
            k.inst("LDG.E.STRONG.GPU", r(4), &[r(2)], &one_sector(BUF + 4));
            k.ffma(3, 4, 4, 4);
        });
        let got = one_warp_cycles(&spec, chase) - base;
        let lo = expected_l2_hit(&spec);
        // Tolerance: one flit time per crossing (port serialisation) plus the pipeline
        // latency as dispatch slack; queueing cannot occur (one request in flight).
        let hi = lo + 2 * flit_time(&spec) + spec.sm.pipeline_latency.0;
        assert!(
            (lo..=hi).contains(&got),
            "{extra:?}: L2 hit latency {got}, expected {lo}..={hi} (2 x noc.latency {} + l2.latency)",
            noc_lat(&spec)
        );
    }
}

/// The L1 is flushed at kernel end (qv100: l1d.flush_at_kernel_end = true): a second kernel
/// re-reading what the first one loaded misses the L1 and hits the L2.
#[test]
fn l1_flushed_between_kernels() {
    let spec = tiny(2, 2);
    assert!(spec.l1d.flush_at_kernel_end);
    let s = alone(&spec, &app("two", vec![cold_load(), cold_load()]));
    let k = &s.apps[0].kernels;
    assert_eq!(k.len(), 2);
    let got = k[1].cycles - 1;
    let lo = expected_l2_hit(&spec);
    assert!(
        (lo..=lo + 2 * flit_time(&spec) + spec.sm.pipeline_latency.0).contains(&got),
        "second kernel's load took {got} cycles: expected an L2 hit ({lo}); {} means it hit a stale L1 line",
        spec.l1d.hit_latency.0
    );
    assert_eq!(
        s.apps[0].counters.l1_hits, 0,
        "no L1 hits expected across a flush"
    );
}

/// A warp may not retire (nor its CTA and kernel complete) while its loads are in flight:
/// their destination registers are still to be written. One warp: `LDG; EXIT` with the
/// loaded value never used.
#[test]
fn kernel_end_waits_for_outstanding_loads() {
    let spec = tiny(2, 2);
    let k = single_warp("unused-load", |k| {
        k.ldg(2, 0, &one_sector(BUF));
    });
    let s = alone(&spec, &app("u", vec![k]));
    assert_eq!(s.gpu.dram_reads, 1);
    assert!(
        s.cycles >= expected_dram(&spec),
        "kernel ended at {} with its load still in flight (DRAM latency >= {})",
        s.cycles,
        expected_dram(&spec)
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Streaming bandwidth
// ---------------------------------------------------------------------------------------------

#[test]
fn streaming_reaches_peak_dram_bandwidth() {
    // 8 SMs x 64 warps x 4 loads in flight each is far more than the ~96 B/cycle x ~400
    // cycles of bandwidth-delay product of 4 channels.
    let spec = tiny(8, 4);
    let k = stream("stream", 32, 16, 64, BUF);
    let s = alone(&spec, &app("stream", vec![k]));
    let peak = peak_bytes_per_cycle(&spec);
    let bytes = s.gpu.dram_bytes;
    assert_eq!(
        bytes,
        32 * 16 * 64 * 128,
        "every byte streamed comes from DRAM once"
    );
    let bw = bytes as f64 / s.cycles as f64;
    // Every warp consumes its last loads before EXIT, so the kernel's cycles cover all of
    // its DRAM traffic. >= 85%: the ramp-up (first latency, ~300 cycles) and tail are < 2%
    // of ~45k cycles;
    // the rest is row misses and bank-group turnarounds, which FR-FCFS on a sequential
    // stream should mostly hide. <= 100%: nothing may beat the data-bus peak.
    assert!(
        bw >= 0.85 * peak,
        "stream reached {bw:.1} B/cycle, {:.1}% of peak {peak:.1}",
        100.0 * bw / peak
    );
    assert!(
        bw <= peak * 1.000001,
        "stream exceeds the peak: {bw} > {peak}"
    );
    assert!(s.gpu_rates.dram_util <= 1.0 + 1e-9);
}

// ---------------------------------------------------------------------------------------------
// 3. Issue limits and latency hiding
// ---------------------------------------------------------------------------------------------

/// IPC of `mix` with `q` CTAs of 4 warps per SM (one warp per scheduler per CTA).
fn ipc_at(spec: &GpuSpec, mix: &str, q: u32) -> f64 {
    let sms = spec.sm.count;
    // 24 CTAs per SM: whole waves for every q tested (1, 2, 3, 4, 8), so no partial last
    // wave lowers the mean IPC.
    let k = compute(mix, 24 * sms, 4, 300, 2, mix);
    let mut cfg = completion(1);
    cfg.placement.apps[0].cta_quota = Some(vec![q; sms as usize]);
    let s = run(spec, &[app(mix, vec![k])], &cfg);
    assert_eq!(s.gpu.warp_insts, 24 * sms as u64 * 4 * 301);
    s.gpu.warp_insts as f64 / s.cycles as f64
}

#[test]
fn ipc_bounded_rises_and_saturates() {
    let spec = tiny(2, 2);
    let sms = spec.sm.count as f64;
    let bound = spec.sm.schedulers as f64 * spec.sm.issue_width as f64 * sms;
    // Two chains per warp, FFMA and IADD3 alternating: each instruction waits for the one two
    // before it (latency = unit latency + pipeline latency = 6), so one warp issues 2 per 6
    // cycles; 3 warps per scheduler fill its issue slot, and the FP32 and INT pipes (one per
    // scheduler each, initiation 2) together also allow 1 per cycle.
    let lat = (spec.units.fp32.latency.0 + spec.sm.pipeline_latency.0) as f64;
    let qs = [1u32, 2, 3, 4, 8];
    let ipcs: Vec<f64> = qs.iter().map(|&q| ipc_at(&spec, "ffma+int", q)).collect();
    for (q, ipc) in qs.iter().zip(&ipcs) {
        assert!(
            *ipc <= bound + 1e-9,
            "q={q}: IPC {ipc} above the issue bound {bound}"
        );
        // Expected: min(1, 2q / lat) per scheduler. Tolerance 15% below (CTA ramp-up, the
        // drain of each wave, scheduling order at the knee) and 5% above (nothing should
        // beat it; allow rounding).
        let exp = bound * (2.0 * *q as f64 / lat).min(1.0);
        assert!(
            *ipc >= 0.85 * exp && *ipc <= 1.05 * exp,
            "q={q}: IPC {ipc:.3}, expected ~{exp:.3} (all: {ipcs:?})"
        );
    }
    assert!(
        ipcs[1] > 1.5 * ipcs[0],
        "IPC must rise with warps: {ipcs:?}"
    );
    assert!(
        (ipcs[4] / ipcs[3] - 1.0).abs() < 0.05,
        "IPC must saturate: {ipcs:?}"
    );

    // FFMA only: saturates at the FP32 pipes' throughput, count / initiation per SM, below
    // the issue bound.
    let fp = &spec.units.fp32;
    let fp_bound = fp.count as f64 / fp.initiation.0 as f64 * sms;
    // ipc_at counts the one EXIT per 300 FFMAs too: take it out.
    let f8 = ipc_at(&spec, "ffma", 8) * 300.0 / 301.0;
    assert!(
        f8 <= fp_bound + 1e-9 && f8 >= 0.85 * fp_bound,
        "FFMA-only IPC {f8}, FP32 bound {fp_bound}"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. DRAM rows
// ---------------------------------------------------------------------------------------------

/// One warp issuing 1-sector loads at `addrs` (8 destination registers, so up to 8 in
/// flight, all consumed before EXIT), on a one-channel GPU so every access lands in the
/// same channel.
fn row_kernel(name: &str, addrs: &[u64]) -> std::sync::Arc<dyn gpumodel::trace::KernelSource> {
    single_warp(name, |k| {
        for (i, &a) in addrs.iter().enumerate() {
            k.ldg(2 + (i % 8) as u16, 0, &one_sector(a));
        }
        consume(k, 2, 8);
    })
}

fn row_hit_rate(s: &RunStats) -> f64 {
    s.gpu.row_hits as f64 / (s.gpu.dram_reads + s.gpu.dram_writes) as f64
}

/// Bytes between two rows of the same bank of channel 0 on a one-channel GPU: the address
/// map puts columns first, then banks, then rows (src/mem/map.rs).
fn same_bank_next_row(spec: &GpuSpec) -> u64 {
    spec.dram.row_size.0 * spec.dram.banks as u64
}

#[test]
fn dram_sequential_row_beats_row_jumping() {
    let spec = tiny(1, 1);
    let n = 64u64;
    let sector = spec.l2.sector.0;
    assert!(n * sector <= spec.dram.row_size.0);
    let seq: Vec<u64> = (0..n).map(|i| BUF + i * sector).collect();
    let jump: Vec<u64> = (0..n)
        .map(|i| BUF + i * same_bank_next_row(&spec))
        .collect();
    let a = alone(&spec, &app("seq", vec![row_kernel("seq", &seq)]));
    let b = alone(&spec, &app("jump", vec![row_kernel("jump", &jump)]));
    assert_eq!(a.gpu.dram_reads, n);
    assert_eq!(b.gpu.dram_reads, n);
    // Analytic: sequential = one activation then hits (63/64); jumping = every access opens
    // a new row (0). Tolerance: 0.1 either way.
    let (ra, rb) = (row_hit_rate(&a), row_hit_rate(&b));
    assert!(
        ra >= (n - 1) as f64 / n as f64 - 0.1,
        "sequential row-hit rate {ra}"
    );
    assert!(rb <= 0.1, "row-jumping row-hit rate {rb}");
    assert!(
        a.cycles < b.cycles,
        "sequential {} cycles vs jumping {}",
        a.cycles,
        b.cycles
    );
    // Jumping: successive ACTs to one bank are at least tRC apart.
    let trc = to_core(
        &spec,
        spec.dram.clock.hz(),
        spec.dram.timing.t_rc.0 * (n - 1),
    );
    assert!(
        b.cycles >= trc,
        "jumping took {} cycles, tRC bound {trc}",
        b.cycles
    );
}

/// 8 warps of 8 one-sector loads to two rows of one bank; `interleave`: warp w's i-th load
/// goes to row (w + i) mod 2 (the queue alternates rows), else warps 0-3 use row A and 4-7
/// row B.
fn two_row_kernel(
    spec: &GpuSpec,
    interleave: bool,
) -> std::sync::Arc<dyn gpumodel::trace::KernelSource> {
    let stride = same_bank_next_row(spec);
    let sector = spec.l2.sector.0;
    let mut k = KernelBuilder::new("frfcfs", 8 * 32, 32, 0);
    for w in 0..8u64 {
        for i in 0..8u64 {
            let row = if interleave { (w + i) % 2 } else { w / 4 };
            let col = (w * 8 + i) % 64;
            k.ldg(
                2 + i as u16,
                0,
                &one_sector(BUF + row * stride + col * sector),
            );
        }
        consume(&mut k, 2, 8);
        k.end_warp();
    }
    k.end_cta();
    k.build()
}

#[test]
fn dram_fr_fcfs_prefers_row_hits() {
    // 8 warps on one SM, all issuing at once, alternating between row A and row B of one
    // bank: the channel queue holds requests of both rows interleaved. FCFS would alternate
    // rows (~0 hits); FR-FCFS serves the open row's requests first, about one activation
    // per row switch of the whole queue, as if the traffic were grouped by row.
    let spec = tiny(1, 1);
    let s = alone(&spec, &app("mixed", vec![two_row_kernel(&spec, true)]));
    let g = alone(&spec, &app("grouped", vec![two_row_kernel(&spec, false)]));
    assert_eq!(s.gpu.dram_reads, 64);
    // Tolerance: >= 50% hits (FCFS: ~0), within 0.1 of the grouped traffic, and no more than
    // 10% slower than it.
    let (rh, rg) = (row_hit_rate(&s), row_hit_rate(&g));
    assert!(
        rh >= 0.5,
        "interleaved two-row traffic: row-hit rate {rh:.2}, FR-FCFS should batch row hits"
    );
    assert!(rh >= rg - 0.1, "interleaved {rh:.2} vs grouped {rg:.2}");
    assert!(
        s.cycles as f64 <= 1.1 * g.cycles as f64,
        "interleaved {} cycles vs grouped {}",
        s.cycles,
        g.cycles
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Cache interference
// ---------------------------------------------------------------------------------------------

#[test]
fn co_runners_on_one_sm_raise_l1_miss_rates() {
    // One SM; each kernel is one CTA of 8 warps sweeping its own 80 KiB six times. 80 KiB fits
    // the 128 KiB L1 (miss rate 1/6 alone: the first sweep); 2 x 80 KiB does not: at most
    // 128 of the 160 KiB can be resident, so in every later round of the two sweeps at least
    // the 32 KiB that are not resident must miss (>= 20% of the accesses), and the combined
    // miss rate is >= (1 + 5 x 0.2) / 6 = 1/3. (Unsynchronised sweeps under LRU need not
    // miss always: one app's fast, hitting phase can keep its lines young.)
    let spec = tiny(1, 1);
    let ws = 80 * 1024;
    assert!(ws < spec.l1d.size.0 && 2 * ws > spec.l1d.size.0);
    let ka = sweep("a", 1, 8, ws, 6, BUF);
    let kb = sweep("b", 1, 8, ws, 6, BUF + BUF_STRIDE);
    let miss = |c: &gpumodel::engine::Counters| 1.0 - c.l1_hits as f64 / c.l1_accesses as f64;
    let a_alone = miss(&alone(&spec, &app("a", vec![ka.clone()])).apps[0].counters);
    let b_alone = miss(&alone(&spec, &app("b", vec![kb.clone()])).apps[0].counters);
    let both = run(
        &spec,
        &[app("a", vec![ka]), app("b", vec![kb])],
        &completion(2),
    );
    // Both must really have shared the SM.
    assert!(
        both.apps[1].start < both.apps[0].end,
        "the two CTAs did not overlap"
    );
    let (a_tog, b_tog) = (miss(&both.apps[0].counters), miss(&both.apps[1].counters));
    let mut sum = both.apps[0].counters.clone();
    sum.add(&both.apps[1].counters);
    // Combined: >= 1/3 less 10% slack (rounds of the two apps are not aligned).
    assert!(
        miss(&sum) >= 0.3,
        "combined L1 miss rate {:.3} below the capacity bound 1/3",
        miss(&sum)
    );
    // Alone: 1/6 +- 0.05 (compulsory misses only). Together: each app clearly worse (at
    // least +0.1 and 2x).
    for (n, al, to) in [("a", a_alone, a_tog), ("b", b_alone, b_tog)] {
        assert!(
            (al - 1.0 / 6.0).abs() < 0.05,
            "{n} alone: L1 miss rate {al:.3}, expected 1/6"
        );
        assert!(
            to >= al + 0.1 && to >= 2.0 * al,
            "{n}: L1 miss rate alone {al:.3}, together {to:.3}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Compute + memory vs memory + memory
// ---------------------------------------------------------------------------------------------

fn even_split(n: usize) -> RunConfig {
    let mut cfg = completion(n);
    for p in &mut cfg.placement.apps {
        p.fraction = Some(1.0 / n as f64);
    }
    cfg
}

#[test]
fn compute_memory_corun_interferes_less_than_memory_memory() {
    let spec = tiny(4, 4);
    let mem_a = app("memA", vec![stream("memA", 16, 8, 64, BUF)]);
    let mem_b = app("memB", vec![stream("memB", 16, 8, 64, BUF + BUF_STRIDE)]);
    let comp = app("comp", vec![compute("comp", 8, 8, 1500, 4, "ffma+int")]);
    let t = |a: &gpumodel::engine::AppSpec| alone(&spec, a).apps[0].cycles as f64;
    let (ta, tb, tc) = (t(&mem_a), t(&mem_b), t(&comp));
    let mm = run(&spec, &[mem_a.clone(), mem_b], &even_split(2));
    let cm = run(&spec, &[comp, mem_a], &even_split(2));
    let mm_sd = [mm.apps[0].cycles as f64 / ta, mm.apps[1].cycles as f64 / tb];
    let cm_sd = [cm.apps[0].cycles as f64 / tc, cm.apps[1].cycles as f64 / ta];
    // Memory + memory: two DRAM-bound kernels share the bandwidth: each ~2x (at least 1.5).
    assert!(
        mm_sd.iter().all(|&x| x >= 1.5),
        "memory+memory slowdowns {mm_sd:?}"
    );
    // Compute + memory: different bottlenecks, each slowed clearly less than either
    // memory+memory partner (strict ordering, plus the compute kernel below 1.5: it keeps
    // its issue slots except the few the loads take).
    let worst_cm = cm_sd.iter().cloned().fold(0.0, f64::max);
    let best_mm = mm_sd.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(
        worst_cm < best_mm,
        "compute+memory {cm_sd:?} vs memory+memory {mm_sd:?}"
    );
    assert!(
        cm_sd[0] < 1.5,
        "compute kernel slowed {:.2}x by a memory co-runner",
        cm_sd[0]
    );
}

// ---------------------------------------------------------------------------------------------
// 7. Determinism
// ---------------------------------------------------------------------------------------------

fn determinism_workload() -> (GpuSpec, Vec<gpumodel::engine::AppSpec>, RunConfig) {
    let spec = tiny(4, 4);
    let mut b = app(
        "sfu",
        vec![
            compute("sfu", 8, 4, 200, 2, "sfu"),
            stream("s2", 8, 4, 32, BUF + BUF_STRIDE),
        ],
    );
    b.arrival = 700;
    let apps = vec![
        app("mem", vec![stream("mem", 16, 8, 32, BUF)]),
        b,
        app("fp", vec![compute("fp", 8, 4, 300, 2, "ffma+int")]),
    ];
    let mut cfg = completion(3);
    cfg.placement.order = DispatchOrder::RoundRobin;
    cfg.placement.apps[0].fraction = Some(0.5);
    cfg.sample_every = 250;
    (spec, apps, cfg)
}

fn json_of_run() -> String {
    let (spec, apps, cfg) = determinism_workload();
    serde_json::to_string(&run(&spec, &apps, &cfg)).unwrap()
}

#[test]
fn deterministic_across_runs_and_thread_pools() {
    let first = json_of_run();
    assert_eq!(first, json_of_run(), "two runs differ");
    let p1 = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    assert_eq!(first, p1.install(json_of_run), "differs in a 1-thread pool");
    let p2 = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (x, y) = p2.install(|| rayon::join(json_of_run, json_of_run));
    assert_eq!(first, x, "differs in a 2-thread pool");
    assert_eq!(first, y, "differs when run concurrently in a 2-thread pool");
}

// ---------------------------------------------------------------------------------------------
// 8. Mechanisms
// ---------------------------------------------------------------------------------------------

type Log<T> = Rc<RefCell<Vec<T>>>;

fn log<T>() -> Log<T> {
    Rc::new(RefCell::new(Vec::new()))
}

#[test]
fn sm_masks_confine_apps() {
    let spec = tiny(4, 4);
    let masks = [
        vec![true, true, false, false],
        vec![false, false, true, true],
    ];
    let apps = [
        app("a", vec![compute("a", 32, 4, 200, 2, "ffma+int")]),
        app("b", vec![stream("b", 32, 4, 32, BUF)]),
    ];
    let mut cfg = completion(2);
    cfg.sample_every = 300;
    for (i, m) in masks.iter().enumerate() {
        cfg.placement.apps[i].sms = Some(m.clone());
    }
    let seen = log::<(usize, usize, u32)>();
    let s2 = seen.clone();
    let mut c = ctl(Some(200), move |h, v, _| {
        if h == Hook::Epoch {
            for (a, av) in v.apps.iter().enumerate() {
                for (sm, &n) in av.ctas.iter().enumerate() {
                    s2.borrow_mut().push((a, sm, n));
                }
            }
        }
    });
    let s = run_ctl(&spec, &apps, &cfg, &mut c);
    let seen = seen.borrow();
    assert!(!seen.is_empty());
    for &(a, sm, n) in seen.iter() {
        if !masks[a][sm] {
            assert_eq!(n, 0, "app {a} has {n} CTAs on SM {sm} outside its mask");
        }
    }
    for (a, mask) in masks.iter().enumerate() {
        for (sm, &on) in mask.iter().enumerate() {
            if on {
                assert!(
                    seen.iter().any(|&(x, y, n)| x == a && y == sm && n > 0),
                    "app {a} never used SM {sm}"
                );
            }
        }
    }
    assert!(!s.timeline.is_empty());
    for smp in &s.timeline {
        assert!(
            smp.sms.iter().all(|&n| n <= 2),
            "sample {smp:?}: more SMs than the mask allows"
        );
    }
}

#[test]
fn cta_quota_never_exceeded_and_reached() {
    let spec = tiny(4, 4);
    let quota = vec![1u32, 2, 3, 5];
    let mut cfg = completion(1);
    cfg.placement.apps[0].cta_quota = Some(quota.clone());
    let seen = log::<Vec<u32>>();
    let s2 = seen.clone();
    let mut c = ctl(Some(100), move |h, v, _| {
        if h == Hook::Epoch {
            s2.borrow_mut().push(v.apps[0].ctas.clone());
        }
    });
    let k = compute("q", 64, 4, 200, 2, "ffma+int");
    let total = k.total_warp_insts();
    let s = run_ctl(&spec, &[app("q", vec![k])], &cfg, &mut c);
    assert_eq!(s.gpu.warp_insts, total);
    let seen = seen.borrow();
    let mut max = vec![0u32; 4];
    for v in seen.iter() {
        for sm in 0..4 {
            assert!(
                v[sm] <= quota[sm],
                "SM {sm}: {} CTAs above quota {}",
                v[sm],
                quota[sm]
            );
            max[sm] = max[sm].max(v[sm]);
        }
    }
    assert_eq!(
        max, quota,
        "the quota should be filled (64 CTAs is many waves)"
    );
}

#[test]
fn resource_fraction_even_split() {
    let spec = tiny(2, 2);
    // CTAs of 128 threads, 32 registers, 8 KiB shared memory: per SM half of the shared
    // memory (48 KiB) allows 6, half of warps/threads/registers 8, half the CTA slots 16.
    let mk = |name: &str, base: u64| {
        let mut k = KernelBuilder::new(name, 128, 32, 8192);
        for c in 0..48u64 {
            for w in 0..4u64 {
                for j in 0..40 {
                    k.ffma(2 + (j % 2) as u16, 2 + (j % 2) as u16, 9, 9);
                }
                k.ldg(5, 0, &coalesced(base + (c * 4 + w) * 128));
                k.end_warp();
            }
            k.end_cta();
        }
        k.build()
    };
    let apps = [
        app("a", vec![mk("a", BUF)]),
        app("b", vec![mk("b", BUF + BUF_STRIDE)]),
    ];
    let cfg = even_split(2);
    let seen = log::<(usize, u32)>();
    let s2 = seen.clone();
    let mut c = ctl(Some(50), move |h, v, _| {
        if h == Hook::Epoch {
            for (a, av) in v.apps.iter().enumerate() {
                for &n in &av.ctas {
                    s2.borrow_mut().push((a, n));
                }
            }
        }
    });
    run_ctl(&spec, &apps, &cfg, &mut c);
    let sm = &spec.sm;
    let half = |x: u64| x / 2;
    let seen = seen.borrow();
    for &(a, n) in seen.iter() {
        let n = n as u64;
        assert!(
            n * 4 <= half(sm.max_warps as u64),
            "app {a}: {n} CTAs exceed half the warps"
        );
        assert!(n * 128 <= half(sm.max_threads as u64), "app {a}: threads");
        assert!(
            n * 128 * 32 <= half(sm.registers.per_sm as u64),
            "app {a}: registers"
        );
        assert!(
            n * 8192 <= half(sm.shared.per_sm.0),
            "app {a}: {n} CTAs exceed half the shared memory"
        );
        assert!(n <= half(sm.max_ctas as u64), "app {a}: CTA slots");
    }
    for a in 0..2 {
        let mx = seen.iter().filter(|x| x.0 == a).map(|x| x.1).max().unwrap();
        assert_eq!(mx, 6, "app {a}: shared memory (half = 6 CTAs) should bind");
    }
}

/// Two compute apps of many CTAs (several waves); returns the run and the cycle at which
/// app 0's LastCtaDispatched fired, plus per-epoch CTA counts.
fn dispatch_run(order: DispatchOrder) -> (RunStats, u64, Vec<Vec<Vec<u32>>>) {
    let spec = tiny(4, 4);
    let apps = [
        app("a", vec![compute("a", 96, 8, 150, 2, "ffma+int")]),
        app("b", vec![compute("b", 96, 8, 150, 2, "ffma+int")]),
    ];
    let mut cfg = completion(2);
    cfg.placement.order = order;
    let last = Rc::new(RefCell::new(u64::MAX));
    let epochs = log::<Vec<Vec<u32>>>();
    let (l2, e2) = (last.clone(), epochs.clone());
    let mut c = ctl(Some(100), move |h, v, _| match h {
        Hook::LastCtaDispatched { app: 0, .. } => *l2.borrow_mut() = v.now,
        Hook::Epoch => e2
            .borrow_mut()
            .push(v.apps.iter().map(|a| a.ctas.clone()).collect()),
        _ => {}
    });
    let s = run_ctl(&spec, &apps, &cfg, &mut c);
    let l = *last.borrow();
    let e = epochs.borrow().clone();
    (s, l, e)
}

#[test]
fn dispatch_left_over_serves_first_kernel_first() {
    let (s, last0, epochs) = dispatch_run(DispatchOrder::LeftOver);
    assert!(last0 != u64::MAX);
    // Left-Over: app 1 gets nothing while app 0 still has CTAs to dispatch.
    assert!(
        s.apps[1].start >= last0,
        "app b started at {} before a's last CTA was dispatched at {last0}",
        s.apps[1].start
    );
    assert!(s.apps[1].start > 0);
    assert_eq!(s.apps[0].start, 0);
    let before: Vec<_> = epochs
        .iter()
        .take_while(|e| e[1].iter().all(|&n| n == 0))
        .collect();
    assert!(!before.is_empty());
    for e in &before {
        // Meanwhile app 0 fills every SM (8 CTAs of 8 warps = 64 warps).
        assert!(
            e[0].iter().all(|&n| n == 8),
            "app a should fill every SM: {:?}",
            e[0]
        );
    }
}

#[test]
fn dispatch_round_robin_alternates_kernels() {
    let (s, last0, epochs) = dispatch_run(DispatchOrder::RoundRobin);
    assert_eq!(s.apps[0].start, 0);
    assert_eq!(
        s.apps[1].start, 0,
        "round robin: both kernels get CTAs at once"
    );
    assert!(last0 > 0);
    let first = &epochs[0];
    let (a, b): (u32, u32) = (first[0].iter().sum(), first[1].iter().sum());
    // Turns of one CTA each: GPU-wide counts differ by at most one.
    assert!(a.abs_diff(b) <= 1, "round robin: {a} vs {b} resident CTAs");
}

#[test]
fn dispatch_round_robin_interleaves_on_each_sm() {
    // Round robin over kernels is per SM in GPGPU-Sim: each SM's dispatcher alternates, so
    // both kernels end up on every SM (intra-SM sharing), 4 + 4 CTAs each.
    let (_, _, epochs) = dispatch_run(DispatchOrder::RoundRobin);
    let first = &epochs[0];
    for sm in 0..4 {
        assert!(
            first[0][sm] > 0 && first[1][sm] > 0,
            "SM {sm}: CTAs a={} b={} (all SMs: a={:?} b={:?})",
            first[0][sm],
            first[1][sm],
            first[0],
            first[1]
        );
    }
}

#[test]
fn channel_subset_lowers_bandwidth() {
    let spec = tiny(8, 4);
    let k = stream("s", 32, 16, 32, BUF);
    let all = alone(&spec, &app("s", vec![k.clone()]));
    let mut cfg = completion(1);
    cfg.placement.apps[0].channels = Some(vec![1]);
    let one = run(&spec, &[app("s", vec![k])], &cfg);
    let bw = |s: &RunStats| s.gpu.dram_bytes as f64 / s.cycles as f64;
    let peak1 = peak_bytes_per_cycle(&spec) / spec.dram.channels as f64;
    assert_eq!(all.gpu.dram_bytes, one.gpu.dram_bytes);
    // One channel can never exceed its own peak; with all four, bandwidth must be well above
    // one channel's (at least 2x; ideal 4x).
    assert!(
        bw(&one) <= peak1 * 1.000001,
        "one channel: {} B/cycle > its peak {peak1}",
        bw(&one)
    );
    assert!(
        bw(&all) >= 2.0 * bw(&one),
        "all channels {} vs one {}",
        bw(&all),
        bw(&one)
    );
}

/// Runs a 2-wave, quota-1 compute kernel on 4 SMs; at `at` takes SMs 2 and 3 away with
/// `handover`. Returns the run and per-epoch CTA counts of the app.
fn remap_run(spec: &GpuSpec, handover: Handover, at: u64) -> (RunStats, Vec<(u64, Vec<u32>)>) {
    let a = app("r", vec![compute("r", 8, 4, 1200, 2, "ffma+int")]);
    let mut cfg = completion(1);
    cfg.placement.apps[0].cta_quota = Some(vec![1; 4]);
    let seen = log::<(u64, Vec<u32>)>();
    let s2 = seen.clone();
    let mut c = ctl(Some(100), move |h, v, acts| match h {
        Hook::Start => acts.push(Action::Sample { at, id: 1 }),
        Hook::Sample { id: 1 } => acts.push(Action::SetSms {
            app: 0,
            sms: vec![true, true, false, false],
            handover,
        }),
        Hook::Epoch => s2.borrow_mut().push((v.now, v.apps[0].ctas.clone())),
        _ => {}
    });
    let s = run_ctl(spec, &[a], &cfg, &mut c);
    let v = seen.borrow().clone();
    (s, v)
}

#[test]
fn set_sms_drain_and_switch() {
    let spec = tiny(4, 2);
    let free = tiny_with(
        4,
        2,
        &[
            "reconfig.context_switch_overhead=0",
            "reconfig.context_save_bandwidth=1 GiB",
        ],
    );
    // Alone: 2 waves of 4 CTAs of ~T cycles each. Take SMs 2, 3 away in the middle of wave 1.
    let mut base_cfg = completion(1);
    base_cfg.placement.apps[0].cta_quota = Some(vec![1; 4]);
    let base = run(
        &spec,
        &[app("r", vec![compute("r", 8, 4, 1200, 2, "ffma+int")])],
        &base_cfg,
    );
    let at = base.cycles / 4;

    let (drain, dv) = remap_run(&spec, Handover::Drain, at);
    let (switch, sv) = remap_run(&spec, Handover::Switch, at);
    let (switch_free, _) = remap_run(&free, Handover::Switch, at);
    for s in [&drain, &switch, &switch_free] {
        assert_eq!(
            s.gpu.warp_insts, base.gpu.warp_insts,
            "every instruction runs exactly once"
        );
        assert_eq!(s.reconfigs.len(), 1, "{:?}", s.reconfigs);
        assert_eq!(s.reconfigs[0].cycle, at);
    }
    assert!(
        switch.reconfigs[0].what.contains("Switch"),
        "{:?}",
        switch.reconfigs
    );
    assert!(
        drain.reconfigs[0].what.contains("Drain"),
        "{:?}",
        drain.reconfigs
    );

    // Drain: the CTAs on SMs 2 and 3 keep running after the remap, then no CTA is placed
    // there again.
    let after: Vec<_> = dv.iter().filter(|(t, _)| *t > at).collect();
    assert!(
        after[0].1[2] == 1 && after[0].1[3] == 1,
        "drain must let running CTAs finish: {:?}",
        after[0]
    );
    let mut gone = false;
    for (t, c) in &after {
        if c[2] == 0 && c[3] == 0 {
            gone = true;
        } else {
            assert!(
                !gone,
                "at {t}: a CTA placed on a taken SM after it drained: {c:?}"
            );
        }
    }
    assert!(gone);
    // Switch: they leave at once.
    let after: Vec<_> = sv.iter().filter(|(t, _)| *t > at).collect();
    for (t, c) in &after {
        assert!(
            c[2] == 0 && c[3] == 0,
            "at {t}: switch left CTAs on taken SMs: {c:?}"
        );
    }

    // A switch costs the restore of the preempted contexts (overhead + registers and
    // shared memory at the save bandwidth), which sits on the critical path here (the saved
    // CTAs are restored onto SMs 0/1 when wave 1 ends there).
    let occ = gpumodel::arch::occupancy(&spec, &gpumodel::arch::Launch::new(128, 32, 0)).unwrap();
    let ctx = occ.regs_per_cta as u64 * 4;
    let cost = |s: &GpuSpec| {
        let r = &s.reconfig;
        r.context_switch_overhead.0 + ctx.div_ceil(r.context_save_bandwidth.0)
    };
    // The "free" model still moves the bytes in one cycle.
    let restore = cost(&spec) - cost(&free);
    let delta = switch.apps[0].end - switch_free.apps[0].end;
    assert!(switch.apps[0].end > switch_free.apps[0].end);
    // Tolerance: at least one restore; at most two (the two restores overlap on two SMs) plus
    // a few hundred cycles of rescheduling noise.
    assert!(
        delta >= restore && delta <= 2 * restore + 300,
        "switch cost {delta}, one restore = {restore}"
    );
}

#[test]
fn set_channels_copy_pauses_longer_than_pagemove() {
    // Four channels on four stacks (one each): PageMove's parallelism (stacks x bank groups)
    // is as in the UGPU configuration.
    let spec = tiny_with(4, 4, &["dram.stacks=4"]);
    let k = stream("s", 16, 8, 64, BUF); // 1 MiB: 256 pages of 4 KiB over 4 channels
    let a = app("s", vec![k]);
    let at = alone(&spec, &a).cycles / 2;
    let go = |m: Migration| {
        let mut c = ctl(None, move |h, _, acts| match h {
            Hook::Start => acts.push(Action::Sample { at, id: 3 }),
            Hook::Sample { id: 3 } => acts.push(Action::SetChannels {
                app: 0,
                channels: vec![0, 1],
                migration: m,
            }),
            _ => {}
        });
        run_ctl(&spec, std::slice::from_ref(&a), &completion(1), &mut c)
    };
    let (none, copy, pm) = (
        go(Migration::None),
        go(Migration::Copy),
        go(Migration::PageMove),
    );
    for (s, what) in [(&none, "None"), (&copy, "Copy"), (&pm, "PageMove")] {
        assert_eq!(s.reconfigs.len(), 1);
        assert!(s.reconfigs[0].what.contains(what), "{:?}", s.reconfigs);
    }
    // Both real migrations pause the app at least the driver delay + flush; Copy moves every
    // page through the controllers (2 x 4 KiB per page on the data buses) while PageMove
    // issues parallel in-stack commands, so Copy ends later.
    let fixed = spec.reconfig.driver_delay.0 + spec.reconfig.flush.0;
    let (e0, ec, ep) = (none.apps[0].end, copy.apps[0].end, pm.apps[0].end);
    assert!(
        ep >= e0 + fixed / 2,
        "PageMove {ep} vs None {e0}: pause below the fixed cost {fixed}"
    );
    assert!(
        ec > ep,
        "Copy ended at {ec}, PageMove at {ep}: copy should pause longer"
    );
}

#[test]
fn persistent_workers_run_every_block_and_shrink_at_task_boundaries() {
    let spec = tiny(4, 2);
    let k = compute("p", 64, 4, 200, 2, "ffma+int");
    let total = k.total_warp_insts();
    let mut a = app("p", vec![k]);
    a.persistent = Some(Persistent {
        workers_per_sm: 2,
        task_blocks: 4,
    });
    // Without reconfiguration: every logical block runs once, never more than 2 workers/SM.
    let seen = log::<(u64, Vec<u32>)>();
    let s2 = seen.clone();
    let mut c = ctl(Some(50), move |h, v, _| {
        if h == Hook::Epoch {
            s2.borrow_mut().push((v.now, v.apps[0].ctas.clone()));
        }
    });
    let s = run_ctl(&spec, std::slice::from_ref(&a), &completion(1), &mut c);
    assert_eq!(
        s.apps[0].counters.warp_insts, total,
        "all logical blocks execute exactly once"
    );
    assert_eq!(s.apps[0].counters.ctas_done, 64);
    assert!(seen.borrow().iter().all(|(_, c)| c.iter().all(|&n| n <= 2)));
    assert!(seen.borrow().iter().any(|(_, c)| c.iter().all(|&n| n == 2)));
    // One block ~ 200 instructions at 2 per 6 cycles per warp ~ 600+ cycles; a task (4
    // blocks) ~ 2400+ cycles.
    let at = 300;
    let seen = log::<(u64, Vec<u32>)>();
    let s2 = seen.clone();
    let mut c = ctl(Some(50), move |h, v, acts| match h {
        Hook::Start => acts.push(Action::Sample { at, id: 9 }),
        Hook::Sample { id: 9 } => acts.push(Action::SetWorkers { app: 0, per_sm: 1 }),
        Hook::Epoch => s2.borrow_mut().push((v.now, v.apps[0].ctas.clone())),
        _ => {}
    });
    let r = run_ctl(&spec, std::slice::from_ref(&a), &completion(1), &mut c);
    assert_eq!(
        r.apps[0].counters.warp_insts, total,
        "every block still runs once"
    );
    assert!(
        r.apps[0].end > s.apps[0].end,
        "fewer workers must take longer"
    );
    let seen = seen.borrow();
    // Right after the request the second workers are mid-task: they stay.
    let soon = seen.iter().find(|(t, _)| *t > at).unwrap();
    assert!(
        soon.1.iter().all(|&n| n == 2),
        "workers must finish their task first: {soon:?}"
    );
    // One task later (4 blocks; generous: 6000 cycles), one worker per SM at most.
    for (t, c) in seen.iter().filter(|(t, _)| *t > at + 6000) {
        assert!(
            c.iter().all(|&n| n <= 1),
            "at {t}: {c:?} workers after SetWorkers 1"
        );
    }
}

#[test]
fn time_slicing_shares_the_gpu_in_turns() {
    let spec = tiny_with(2, 2, &["reconfig.time_slice=5 us"]);
    let slice = spec.clocks.core.cycles_in(spec.reconfig.time_slice);
    let a = app("a", vec![compute("a", 16, 8, 1500, 4, "ffma+int")]);
    let b = app("b", vec![compute("b", 16, 8, 1500, 4, "ffma+int")]);
    let (ta, tb) = (alone(&spec, &a).cycles, alone(&spec, &b).cycles);
    assert!(ta > 2 * slice, "each app must span several slices");
    let mut cfg = completion(2);
    cfg.placement.time_slicing = true;
    let s = run(&spec, &[a, b], &cfg);
    let switches = s
        .reconfigs
        .iter()
        .filter(|r| r.what.contains("time slice"))
        .count() as u64;
    assert!(switches >= 2, "context switches: {:?}", s.reconfigs);
    // Issue-bound apps taking turns: each takes longer than alone, and together they need
    // about the sum (>= 90% of it; the tail of one app runs alone at full speed).
    assert!(s.apps[0].cycles > ta && s.apps[1].cycles > tb);
    assert!(
        s.cycles as f64 >= 0.9 * (ta + tb) as f64,
        "makespan {} vs alone {ta} + {tb}",
        s.cycles
    );
    // Switches happen at slice boundaries.
    for r in s.reconfigs.iter().filter(|r| r.what.contains("time slice")) {
        assert_eq!(
            r.cycle % slice,
            0,
            "switch at {} not on a {slice}-cycle boundary",
            r.cycle
        );
    }
}

/// A context whose application has finished gives the GPU up at once: with a slice far
/// longer than both apps, the second app still finishes about when it would after the
/// first, not at the end of the first's slice.
#[test]
fn time_slicing_hands_over_when_a_context_goes_idle() {
    let spec = tiny_with(2, 2, &["reconfig.time_slice=10 ms"]);
    let slice = spec.clocks.core.cycles_in(spec.reconfig.time_slice);
    let a = app("a", vec![compute("a", 8, 4, 200, 2, "ffma+int")]);
    let b = app("b", vec![compute("b", 8, 4, 200, 2, "ffma+int")]);
    let (ta, tb) = (alone(&spec, &a).cycles, alone(&spec, &b).cycles);
    assert!(
        ta + tb < slice / 10,
        "apps must be much shorter than a slice"
    );
    let mut cfg = completion(2);
    cfg.placement.time_slicing = true;
    let s = run(&spec, &[a, b], &cfg);
    let switches: Vec<_> = s
        .reconfigs
        .iter()
        .filter(|r| r.what.contains("time slice"))
        .collect();
    assert_eq!(switches.len(), 1, "{switches:?}");
    assert_eq!(
        switches[0].cycle, s.apps[0].end,
        "hand-over when a finishes"
    );
    // b waits for a and a context switch (overhead + context bytes), never for the slice.
    let overhead = spec.reconfig.context_switch_overhead.0;
    assert!(s.apps[1].end >= ta + tb, "{} vs {ta} + {tb}", s.apps[1].end);
    assert!(
        s.apps[1].end < ta + tb + 4 * overhead + tb,
        "b ended at {} (a alone {ta}, b alone {tb}, slice {slice})",
        s.apps[1].end
    );
}

#[test]
fn hooks_fire_when_they_should() {
    let spec = tiny(2, 2);
    let k0 = compute("k0", 8, 4, 200, 2, "ffma+int");
    let k1 = stream("k1", 8, 4, 16, BUF);
    let mut b = app("b", vec![compute("k2", 4, 4, 100, 2, "ffma+int")]);
    b.arrival = 3000;
    let apps = [app("a", vec![k0, k1]), b];
    let epoch = 500;
    let hooks = log::<(Hook, u64)>();
    let h2 = hooks.clone();
    let mut c = ctl(Some(epoch), move |h, v, acts| {
        if h == Hook::Start {
            acts.push(Action::Sample { at: 1234, id: 7 });
        }
        h2.borrow_mut().push((h, v.now));
    });
    let s = run_ctl(&spec, &apps, &completion(2), &mut c);
    let hooks = hooks.borrow();
    assert_eq!(hooks[0], (Hook::Start, 0));
    let samples: Vec<_> = hooks
        .iter()
        .filter(|h| matches!(h.0, Hook::Sample { .. }))
        .collect();
    assert_eq!(samples, vec![&(Hook::Sample { id: 7 }, 1234)]);
    let epochs: Vec<u64> = hooks
        .iter()
        .filter(|h| h.0 == Hook::Epoch)
        .map(|h| h.1)
        .collect();
    assert!(
        epochs.len() as u64 >= s.cycles / epoch - 1,
        "epochs {epochs:?} over {} cycles",
        s.cycles
    );
    for (i, &t) in epochs.iter().enumerate() {
        assert_eq!(t, (i as u64 + 1) * epoch, "epoch {i} at {t}");
    }
    let at = |want: Hook| -> u64 {
        let v: Vec<u64> = hooks.iter().filter(|h| h.0 == want).map(|h| h.1).collect();
        assert_eq!(v.len(), 1, "{want:?} fired {} times", v.len());
        v[0]
    };
    for (a, st) in s.apps.iter().enumerate() {
        for k in &st.kernels {
            let arr = at(Hook::KernelArrival {
                app: a,
                kernel: k.kernel,
            });
            let last = at(Hook::LastCtaDispatched {
                app: a,
                kernel: k.kernel,
            });
            let dep = at(Hook::KernelDeparture {
                app: a,
                kernel: k.kernel,
            });
            assert_eq!(arr, k.arrival, "app {a} kernel {}: arrival hook", k.kernel);
            assert_eq!(dep, k.end, "app {a} kernel {}: departure hook", k.kernel);
            assert!(
                arr <= last && last <= dep,
                "app {a} kernel {}: {arr} <= {last} <= {dep}",
                k.kernel
            );
        }
    }
    assert_eq!(at(Hook::KernelArrival { app: 1, kernel: 0 }), 3000);
}

#[test]
fn app_kernels_run_in_stream_order() {
    let spec = tiny_with(2, 2, &["launch.kernel_latency=500"]);
    let a = app(
        "seq",
        vec![
            stream("k0", 8, 4, 16, BUF),
            compute("k1", 8, 4, 100, 2, "ffma+int"),
            stream("k2", 4, 4, 8, BUF),
        ],
    );
    let other = app("other", vec![compute("o", 64, 4, 300, 2, "ffma+int")]);
    let s = run(&spec, &[a, other], &completion(2));
    let k = &s.apps[0].kernels;
    assert_eq!(
        k.iter().map(|x| x.kernel).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for w in k.windows(2) {
        assert!(
            w[1].start >= w[0].end + 500,
            "kernel {} starts at {}, kernel {} ended at {} (+500 launch latency)",
            w[1].kernel,
            w[1].start,
            w[0].kernel,
            w[0].end
        );
        assert_eq!(w[1].arrival, w[0].end + 500);
    }
    assert_eq!(s.apps[0].end, k[2].end);
}

#[test]
fn arrival_times_respected() {
    let spec = tiny(2, 2);
    let mut b = app("late", vec![compute("l", 8, 4, 100, 2, "ffma+int")]);
    b.arrival = 12_345;
    let a = app("early", vec![compute("e", 4, 4, 100, 2, "ffma+int")]);
    let s = run(&spec, &[a, b], &completion(2));
    let late = &s.apps[1];
    assert_eq!(late.arrival, 12_345);
    assert!(late.start >= 12_345, "start {}", late.start);
    assert_eq!(late.kernels[0].arrival, 12_345);
    assert!(late.kernels[0].start >= 12_345);
    // The GPU is idle by then (the early app is short), so it starts at once.
    assert!(s.apps[0].end < 12_345);
    assert_eq!(late.start, 12_345);
    assert_eq!(late.cycles, late.end - 12_345);
}

#[test]
fn run_mode_completion() {
    let spec = tiny(2, 2);
    let apps = [
        app("a", vec![compute("a", 8, 4, 100, 2, "ffma+int")]),
        app("b", vec![stream("b", 8, 4, 16, BUF)]),
    ];
    let s = run(&spec, &apps, &completion(2));
    for (i, a) in apps.iter().enumerate() {
        assert_eq!(s.apps[i].passes, 1);
        assert_eq!(s.apps[i].counters.warp_insts, a.warp_insts());
        assert_eq!(s.apps[i].kernels.len(), 1);
    }
    assert_eq!(s.cycles, s.apps.iter().map(|a| a.end).max().unwrap());
}

#[test]
fn run_mode_budget() {
    let spec = tiny(2, 2);
    let apps = [
        app("a", vec![compute("a", 8, 4, 100, 2, "ffma+int")]),
        app("b", vec![stream("b", 8, 4, 16, BUF)]),
    ];
    let budgets = vec![apps[0].warp_insts() * 5 / 2, apps[1].warp_insts() / 2];
    let mut cfg = completion(2);
    cfg.mode = RunMode::Budget(budgets.clone());
    let trace = log::<(u64, Vec<u64>)>();
    let t2 = trace.clone();
    let mut c = ctl(Some(20), move |h, v, _| {
        if h == Hook::Epoch {
            t2.borrow_mut().push((
                v.now,
                v.apps.iter().map(|a| a.counters.warp_insts).collect(),
            ));
        }
    });
    let s = run_ctl(&spec, &apps, &cfg, &mut c);
    let trace = trace.borrow();
    for (i, b) in budgets.iter().enumerate() {
        let st = &s.apps[i];
        assert!(
            st.counters.warp_insts >= *b,
            "app {i}: {} < budget {b}",
            st.counters.warp_insts
        );
        // `end` is when the budget was reached: after the last epoch that saw fewer
        // instructions, no later than the first epoch that saw enough.
        let before = trace
            .iter()
            .filter(|(_, w)| w[i] < *b)
            .map(|x| x.0)
            .max()
            .unwrap_or(0);
        let after = trace.iter().filter(|(_, w)| w[i] >= *b).map(|x| x.0).min();
        assert!(
            st.end >= before,
            "app {i}: end {} before an epoch at {before} that had not reached the budget",
            st.end
        );
        if let Some(a) = after {
            assert!(
                st.end <= a,
                "app {i}: end {} after the epoch at {a} that saw the budget reached",
                st.end
            );
        }
    }
    // App a needs 2.5 passes: it relaunched.
    assert!(s.apps[0].passes >= 2, "passes {}", s.apps[0].passes);
    assert!(s.apps[0].kernels.len() >= 3);
}

#[test]
fn run_mode_window() {
    let spec = tiny(2, 2);
    let a = app("a", vec![compute("a", 8, 4, 100, 2, "ffma+int")]);
    let t = alone(&spec, &a).cycles;
    let w = 5 * t;
    let mut cfg = completion(1);
    cfg.mode = RunMode::Window(w);
    let s = run(&spec, std::slice::from_ref(&a), &cfg);
    assert_eq!(s.cycles, w, "the run stops at the window");
    // ~5 passes fit (relaunches on a warm GPU may differ slightly): at least 3.
    assert!(s.apps[0].passes >= 3, "passes {}", s.apps[0].passes);
    assert!(s.apps[0].counters.warp_insts >= 3 * a.warp_insts());
    assert!(s.apps[0].kernels.iter().all(|k| k.end <= w));
}

/// Every instruction of a real trace is simulated, including those after a predicated EXIT
/// in the middle of a warp's stream (BFS: out-of-range lanes leave early, the rest go on),
/// and on every bundled model that has the units the kernel needs.
#[test]
fn real_trace_runs_every_instruction() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/samples/bfs_v3_sm80");
    let app = gpumodel::trace::app::open_app(&dir, &Default::default()).unwrap();
    let total: u64 = app.kernels.iter().map(|k| k.total_warp_insts()).sum();
    assert_eq!(total, 1799);
    let apps = [gpumodel::engine::AppSpec::new("bfs", app.kernels.clone())];
    for model in ["qv100", "a100", "h100"] {
        let spec = GpuSpec::builtin(model).unwrap();
        let s = run(&spec, &apps, &completion(1));
        assert_eq!(s.apps[0].counters.warp_insts, total, "{model}");
        assert!(s.cycles > 0 && s.apps[0].counters.ctas_done == 8, "{model}");
    }
}
