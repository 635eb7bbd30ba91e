//! Steady-state fast-forward (`engine::sim::ff`): it must jump where a kernel is steady,
//! land within 2% of the detailed run's cycles, keep every counter consistent, be
//! deterministic, and never hide a phase change, a tail or an imbalanced grid.

mod common;

use std::path::Path;
use std::sync::Arc;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{self, AppSpec, FastForward, FfStats, RunConfig, RunMode, RunStats};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::{KernelSource, MemKernel, MemOp};

/// A memory-and-compute kernel: 256-thread CTAs, 8 per SM of the 4-SM test GPU (a wave of
/// 32 CTAs), `grid` CTAs.
fn spec_text(grid: u32, trips: &str, extra: &str) -> String {
    format!(
        "[kernel]\nname = \"k\"\ngrid = {grid}\nblock = 256\nregs = 32\nseed = 11\n\
         [body]\ntrips = {trips}\nfp32 = 12\nint = 4\n{extra}\
         [[loads]]\ncount = 2\npattern = \"stream\"\n\
         [[loads]]\ncount = 1\npattern = \"random\"\nsectors_per_request = 4\nfootprint = \"8 MiB\"\n\
         [[stores]]\ncount = 1\n"
    )
}

fn synth(text: &str) -> SynthKernel {
    SynthKernel::from_toml_str(text, Path::new("k.toml")).expect("spec")
}

/// The 4-SM test GPU as qv100 was when fast-forward was built (no operand collector, no
/// store acknowledgements, `pipeline_latency` 5, scheduler 0 first every cycle): these
/// tests check fast-forward's rules (what it may skip, what it must simulate, its
/// counters) and its error on a steady kernel. Its error is not robust to the model: on
/// today's qv100 the steady kernel is −4.5% and the per-warp phase change −2.8%, and with
/// only `pipeline_latency` 6 the steady kernel is −6.1% (measured 2026-11-24;
/// BENCHMARKS.md). Those runs drift over the run
/// more than fast-forward's young-state measurement sees — the open part of issue 25.
fn gpu() -> GpuSpec {
    // (Without issue 45's mechanisms: see `ff_spec`.)
    let mut g = common::engine_kit::tiny_with(4, 4, PRE_ENGINE_III);
    g.sm.operand_collector = None;
    g.sm.exit_waits_for_stores = false;
    g.sm.pipeline_latency = gpumodel::arch::Cycles(5);
    g.sm.rotate_issue_priority = false;
    g
}

fn run(spec: &GpuSpec, k: Arc<dyn KernelSource>, ff: bool) -> RunStats {
    let apps = vec![AppSpec::new("k", vec![k])];
    let cfg = RunConfig {
        fast_forward: ff.then(FastForward::default),
        ..RunConfig::completion(1)
    };
    engine::run_static(spec, &apps, &cfg).expect("run")
}

fn err(a: &RunStats, b: &RunStats) -> f64 {
    (b.cycles as f64 - a.cycles as f64).abs() / a.cycles as f64
}

fn skipped(s: &RunStats) -> u64 {
    s.fast_forward.as_ref().map_or(0, |f| f.cycles)
}

fn skipped_ctas(s: &RunStats) -> u64 {
    s.fast_forward
        .as_ref()
        .map_or(0, |f| f.jumps.iter().map(|j| j.ctas[0] as u64).sum())
}

/// Counters that must hold whatever was skipped.
fn consistent(s: &RunStats, k: &dyn KernelSource) {
    let c = &s.apps[0].counters;
    assert_eq!(
        c.warp_insts,
        k.total_warp_insts(),
        "every instruction counted"
    );
    assert_eq!(c.ctas_done, k.num_ctas() as u64, "every CTA counted");
    assert!(c.l1_hits <= c.l1_accesses && c.l2_hits <= c.l2_accesses);
    assert!(c.thread_insts <= 32 * c.warp_insts);
    assert_eq!(s.apps[0].kernels.len(), 1);
    assert_eq!(s.apps[0].kernels[0].warp_insts, c.warp_insts);
    assert_eq!(s.apps[0].end, s.cycles);
}

#[test]
fn a_steady_kernel_is_skipped_within_two_percent() {
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    let d = run(&spec, k.clone(), false);
    let f = run(&spec, k.clone(), true);
    assert!(d.fast_forward.is_none());
    let ff = f.fast_forward.as_ref().expect("fast-forward stats");
    assert!(
        !ff.jumps.is_empty(),
        "a 20-wave steady kernel is fast-forwarded"
    );
    assert!(
        skipped(&f) * 2 > f.cycles,
        "most of it is skipped: {} of {}",
        skipped(&f),
        f.cycles
    );
    for j in &ff.jumps {
        // Whole waves, less the blocks held back for the aged prefixes.
        assert_eq!(
            (j.ctas[0] + j.held_back[0]) % 32,
            0,
            "whole waves are skipped: {j:?}"
        );
        assert!(j.cycles > 0 && j.at < f.cycles);
    }
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    consistent(&f, k.as_ref());
    consistent(&d, k.as_ref());
    // The measured traffic scales with the skipped work: within 5% of the detailed run.
    let (a, b) = (&d.apps[0].counters, &f.apps[0].counters);
    for (x, y, what) in [
        (a.dram_bytes, b.dram_bytes, "DRAM bytes"),
        (a.l2_accesses, b.l2_accesses, "L2 accesses"),
        (a.l1_accesses, b.l1_accesses, "L1 accesses"),
        (a.thread_insts, b.thread_insts, "thread instructions"),
    ] {
        let e = (x as f64 - y as f64).abs() / x as f64;
        assert!(e < 0.05, "{what}: {y} vs {x}");
    }
}

#[test]
fn same_bytes_twice() {
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    same_bytes(&run(&spec, k.clone(), true), &run(&spec, k, true));
}

/// Two runs' results serialise to the same bytes.
fn same_bytes(a: &RunStats, b: &RunStats) {
    assert_eq!(
        serde_json::to_string(a).unwrap(),
        serde_json::to_string(b).unwrap()
    );
}

#[test]
fn off_means_no_field_and_no_change() {
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(96, "4", "")));
    let s = run(&spec, k, false);
    let j = serde_json::to_string(&s).unwrap();
    assert!(
        !j.contains("fast_forward"),
        "the detailed run's JSON is unchanged"
    );
}

/// CTAs from `from` on lose their global memory instructions: a memory-bound first half
/// of the grid, a compute-bound second half (same static code).
fn two_phases(k: &SynthKernel, from: u32) -> MemKernel {
    let mut m = MemKernel::from_source(k).expect("decode");
    let statics = m.statics.insts.clone();
    for c in &mut m.ctas[from as usize..] {
        for w in &mut c.warps {
            w.retain(|d| statics[d.sidx as usize].mem_op == MemOp::None as u8);
        }
    }
    m
}

#[test]
fn a_phase_change_in_the_grid_is_not_skipped_over() {
    let spec = gpu();
    let base = synth(&spec_text(640, "12", ""));
    let k: Arc<dyn KernelSource> = Arc::new(two_phases(&base, 320));
    let d = run(&spec, k.clone(), false);
    let f = run(&spec, k.clone(), true);
    let ff = f.fast_forward.as_ref().expect("stats");
    // The first jump stops at the phase boundary: no skipped CTA lies past block 320
    // before the second phase has been measured.
    let first = ff.jumps.first().expect("the first phase is steady");
    assert_eq!(first.ended_by, "phase", "{:?}", ff.jumps);
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    consistent(&f, k.as_ref());
}

#[test]
fn a_phase_change_within_each_warp_is_measured_not_hidden() {
    // Every warp runs memory-bound for its first half and compute-bound after: the mix
    // changes in time, not across the grid; whole CTAs carry both phases. An aged block
    // starts where the measured progress curve puts its phase: early in its stream, the
    // slow half issuing less per cycle (at the phase taken as a fraction of instructions,
    // the run was -2.56%; with the curve -1.17%; plain jumps +0.83%).
    let spec = gpu();
    let k = half_memory_half_compute();
    let d = run(&spec, k.clone(), false);
    for ff in [aged(), plain()] {
        let f = run_with(&spec, k.clone(), Some(ff));
        assert!(skipped(&f) > 0);
        assert!(
            err(&d, &f) <= 0.02,
            "cycles {} vs {} ({ff:?})",
            f.cycles,
            d.cycles
        );
        consistent(&f, k.as_ref());
        let s = f.fast_forward.as_ref().expect("fast-forward stats");
        if ff.age {
            // The prefixes stand for the time of the blocks held back for them, but hold
            // fewer instructions than those blocks: the slow half comes first.
            let held: u64 = s.jumps.iter().map(|j| j.held_back[0] as u64).sum();
            let per_block = k.total_warp_insts() / k.num_ctas() as u64;
            assert!(held > 0, "{s:?}");
            assert!(
                (s.prefix_insts as f64) < 0.9 * (held * per_block) as f64,
                "prefix instructions {} against {} held back",
                s.prefix_insts,
                held * per_block
            );
        }
    }
}

/// The steady test kernel with every warp's second half stripped of its memory
/// instructions: memory-bound, then compute-bound.
fn half_memory_half_compute() -> Arc<dyn KernelSource> {
    let base = synth(&spec_text(640, "12", ""));
    let mut m = MemKernel::from_source(&base).expect("decode");
    let statics = m.statics.insts.clone();
    for c in &mut m.ctas {
        for w in &mut c.warps {
            let half = w.len() / 2;
            let mut i = 0;
            w.retain(|d| {
                i += 1;
                i <= half || statics[d.sidx as usize].mem_op == MemOp::None as u8
            });
        }
    }
    Arc::new(m)
}

#[test]
fn the_tail_wave_is_simulated() {
    // 20 full waves and a last one a quarter full: that partial wave and the drain run
    // in detail.
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(648, "12", "")));
    let d = run(&spec, k.clone(), false);
    let f = run(&spec, k.clone(), true);
    assert!(skipped(&f) > 0);
    assert!(
        skipped_ctas(&f) + 32 + 8 <= 648,
        "at least the last full wave and the partial one are simulated"
    );
    assert!(f
        .fast_forward
        .as_ref()
        .unwrap()
        .jumps
        .iter()
        .all(|j| j.ended_by == "tail"));
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    consistent(&f, k.as_ref());
}

#[test]
fn an_imbalanced_grid_stays_within_two_percent() {
    // Trip counts drawn per CTA from 4 to 24: CTAs differ up to 6x in length.
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(
        640,
        "[4, 24]",
        "trip_variation = \"cta\"\n",
    )));
    let d = run(&spec, k.clone(), false);
    let f = run(&spec, k.clone(), true);
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    consistent(&f, k.as_ref());
}

#[test]
fn a_short_kernel_is_not_jumped() {
    // Four waves: the first wave's turnover, two measured waves and the kept last wave
    // leave nothing to skip.
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(128, "12", "")));
    let f = run(&spec, k.clone(), true);
    assert_eq!(skipped(&f), 0);
    consistent(&f, k.as_ref());
}

#[test]
fn measuring_without_jumping_changes_nothing() {
    // The snapshots are probes: a run that never jumps is the detailed run, cycle for
    // cycle and counter for counter, however often it measures (they once were queue
    // events, and shortened how far an SM runs ahead: slate/mm on rtx3070 moved 1.6%).
    let spec = ff_spec("rtx3070");
    let k = suite_kernel("traces/slate/mm.toml", 1);
    let d = run(&spec, k.clone(), false);
    for window in [500, 2000] {
        for ff in [plain(), aged()] {
            let f = run_with(&spec, k.clone(), Some(FastForward { window, ..ff }));
            assert_eq!(skipped(&f), 0);
            assert_eq!(f.cycles, d.cycles, "window {window}");
            assert_eq!(
                serde_json::to_string(&f.apps[0].counters).unwrap(),
                serde_json::to_string(&d.apps[0].counters).unwrap(),
                "window {window}"
            );
        }
    }
}

#[test]
fn budget_and_window_runs_respect_their_limits() {
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    let apps = vec![AppSpec::new("k", vec![k.clone()])];
    // A window: the run ends exactly at it, whatever was skipped.
    let w = 400_000;
    let mk = |mode: RunMode, ff: bool| RunConfig {
        mode,
        fast_forward: ff.then(FastForward::default),
        ..RunConfig::completion(1)
    };
    let d = engine::run_static(&spec, &apps, &mk(RunMode::Window(w), false)).unwrap();
    let f = engine::run_static(&spec, &apps, &mk(RunMode::Window(w), true)).unwrap();
    assert_eq!(f.cycles, w);
    let (a, b) = (d.apps[0].counters.warp_insts, f.apps[0].counters.warp_insts);
    assert!(
        (a as f64 - b as f64).abs() / (a as f64) < 0.02,
        "{b} vs {a}"
    );
    // A budget: reached within 2% of the detailed run's time, never overshot by a jump.
    let budget = k.total_warp_insts() * 3 / 4;
    let d = engine::run_static(&spec, &apps, &mk(RunMode::Budget(vec![budget]), false)).unwrap();
    let f = engine::run_static(&spec, &apps, &mk(RunMode::Budget(vec![budget]), true)).unwrap();
    assert!(skipped(&f) > 0);
    let (x, y) = (d.apps[0].end as f64, f.apps[0].end as f64);
    assert!((x - y).abs() / x <= 0.02, "{y} vs {x}");
    let got = f.apps[0].counters.warp_insts;
    assert!(
        got >= budget && got < budget + budget / 50,
        "{got} vs budget {budget}"
    );
}

/// Warped-Slicer's epochs (every `sample` cycles, watching for a phase change) are passive:
/// fast-forward jumps over them once the partition is in place, and lands within 2%.
/// The window and grids leave room for a jump as long as the span it is measured over
/// (two waves per half of both applications). Neither kernel changes phase, so the
/// detailed run must not re-sample either: until issue 47 the reference IPC of the
/// phase-change check was taken two epochs after the partition, while the sampling
/// layout's CTAs still drained (a measured 0.388 warp instructions a cycle against 0.22
/// once drained), and noise around the 50% threshold re-sampled at 28 K and 402 K in
/// detail, never in the jump (which credited a at its drained rate: −8%).
#[test]
fn warped_slicer_epochs_do_not_stop_a_jump() {
    use gpumodel::policy::{execute_with, PolicySpec, Workload};
    let spec = gpu();
    let a: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(1920, "12", "")));
    let b: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(1920, "16", "")));
    let apps = vec![AppSpec::new("a", vec![a]), AppSpec::new("b", vec![b])];
    let mut params = toml::Table::new();
    params.insert("warmup".into(), toml::Value::Integer(2000));
    params.insert("sample".into(), toml::Value::Integer(2000));
    let p = PolicySpec::parse("warped-slicer", &params).unwrap();
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Window(900_000),
    };
    let detailed = execute_with(p.build().as_ref(), &w, 10_000_000, 0, None).unwrap();
    assert!(
        !detailed
            .log
            .iter()
            .any(|l| l.contains("sustained IPC change")),
        "a steady co-run re-sampled: {:?}",
        detailed.log
    );
    let go = |ff: Option<FastForward>| {
        execute_with(p.build().as_ref(), &w, 10_000_000, 0, ff)
            .unwrap()
            .stats
    };
    let d = detailed.stats;
    let f = go(Some(FastForward::default()));
    assert!(d.fast_forward.is_none());
    assert!(skipped(&f) > 0, "no jump over the epochs");
    for (x, y) in d.apps.iter().zip(&f.apps) {
        let (x, y) = (x.counters.warp_insts as f64, y.counters.warp_insts as f64);
        assert!((x - y).abs() / x <= 0.02, "{y} vs {x}");
    }
}

/// `profile` sweeps: the option reaches every run (`fast_forward_cycles` sums what the
/// runs skipped; absent when off), and the alone run stays within 2%.
#[test]
fn profile_sweeps_fast_forward_when_asked() {
    use gpumodel::profile::{profile, ProfileOptions};
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    let app = AppSpec::new("k", vec![k]);
    let opts = |ff: Option<FastForward>| ProfileOptions {
        points: 2,
        fast_forward: ff,
        ..ProfileOptions::default()
    };
    let d = profile(&spec, &app, &opts(None), &|| {}).unwrap();
    let f = profile(&spec, &app, &opts(Some(FastForward::default())), &|| {}).unwrap();
    assert_eq!(d.fast_forward_cycles, None);
    assert!(f.fast_forward_cycles.unwrap() > 0, "no run jumped");
    let (x, y) = (d.alone.cycles as f64, f.alone.cycles as f64);
    assert!((x - y).abs() / x <= 0.02, "{y} vs {x}");
    assert_eq!(d.alone.warp_insts, f.alone.warp_insts);
    assert!(!d.to_json().unwrap().contains("fast_forward"));
}

/// A study file's `grid_scale` and `[fast_forward]`, and the command line's override:
/// the results' copy of the file says what ran; off by override is the detailed study.
#[test]
fn a_study_file_scales_grids_and_fast_forwards() {
    use gpumodel::study::run_study_with;
    let dir = tempfile::tempdir().unwrap();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/warped-slicer");
    let text = |extra: &str| {
        format!(
            "name = \"tiny\"\ngpu = \"fermi-ws\"\ncompletion = true\npolicies = [\"even\"]\n{extra}\n\
             [[benches]]\nname = \"dxt\"\npath = \"{t}/dxt.toml\"\n\
             [[benches]]\nname = \"nn\"\npath = \"{t}/nn.toml\"\n\
             [[groups]]\nname = \"g\"\nkind = \"cross\"\na = [\"dxt\"]\nb = [\"nn\"]\n",
            t = traces.display()
        )
    };
    let write = |name: &str, extra: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text(extra)).unwrap();
        p
    };
    let none = |_: &str, _: usize, _: usize| {};
    let plain = run_study_with(&write("a.toml", ""), None, &none).unwrap();
    let scaled = write("b.toml", "grid_scale = 3\n[fast_forward]\nstride = 4\n");
    let ff = run_study_with(&scaled, None, &none).unwrap();
    let off = run_study_with(&scaled, Some(None), &none).unwrap();
    assert_eq!(ff.config["grid_scale"], 3);
    assert_eq!(ff.config["fast_forward"]["stride"], 4);
    assert!(plain.config.get("grid_scale").is_none());
    // On by default (the engine's plain settings); off is written back as `false`, from the
    // command line as from the file.
    assert_eq!(plain.config["fast_forward"]["stride"], 8);
    assert_eq!(off.config["fast_forward"], false);
    let file_off = run_study_with(&write("d.toml", "fast_forward = false"), None, &none).unwrap();
    assert_eq!(file_off.config["fast_forward"], false);
    // Three times the grid: about three times the work alone.
    for (p, s) in plain.alone.iter().zip(&off.alone) {
        assert_eq!(s.warp_insts, 3 * p.warp_insts, "{}", p.name);
        assert!(s.cycles > 2 * p.cycles, "{}", p.name);
    }
    // Fast-forward: the same work, within 2% of the detailed study's alone times.
    for (d, f) in off.alone.iter().zip(&ff.alone) {
        assert_eq!(d.warp_insts, f.warp_insts, "{}", d.name);
        let (x, y) = (d.cycles as f64, f.cycles as f64);
        assert!((x - y).abs() / x <= 0.02, "{}: {y} vs {x}", d.name);
    }
    let e = run_study_with(&write("c.toml", "grid_scale = 0"), None, &none).unwrap_err();
    assert!(e.to_string().contains("grid_scale"), "{e}");
}

/// `validate --fast-forward`: the detailed figures stay the report's own, and the
/// fast-forwarded ones come beside them.
#[test]
fn validate_reports_fast_forward_beside_detail() {
    use gpumodel::validate::{validate_ff, validate_with};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/validation/qv100-calib");
    let spec = ff_spec("qv100");
    let d = validate_with(&dir, &spec, false).unwrap();
    let f = validate_ff(&dir, &spec, false, Some(FastForward::default())).unwrap();
    assert!(d.fast_forward.is_none());
    assert_eq!(
        serde_json::to_string(&d.kernels).unwrap(),
        serde_json::to_string(&f.kernels).unwrap()
    );
    let x = f.fast_forward.as_ref().expect("fast-forward figures");
    assert!((x.kernel_cycle_mae_pct - d.kernel_cycle_mae_pct).abs() <= 1.0);
    assert!((x.pair_slowdown_mae_pct - d.pair_slowdown_mae_pct).abs() <= 1.0);
    assert!(f.render().contains("with fast-forward"));
}

/// Aged jumps at stride 32 (`--ff-age true --ff-stride 32`), the measured long
/// single-launch setting (BENCHMARKS.md).
fn aged() -> FastForward {
    FastForward {
        age: true,
        stride: 32,
        ..FastForward::default()
    }
}

/// Plain jumps at stride 8 (the default), spelled out: whole waves, the state left as it
/// was.
fn plain() -> FastForward {
    FastForward {
        age: false,
        stride: 8,
        ..FastForward::default()
    }
}

fn run_with(spec: &GpuSpec, k: Arc<dyn KernelSource>, ff: Option<FastForward>) -> RunStats {
    let apps = vec![AppSpec::new("k", vec![k])];
    let cfg = RunConfig {
        fast_forward: ff,
        ..RunConfig::completion(1)
    };
    engine::run_static(spec, &apps, &cfg).expect("run")
}

#[test]
fn aged_jumps_count_every_instruction_and_repeat_exactly() {
    // A steady grid whose CTAs start in step: the slots' next blocks start part-way
    // (their prefixes retired analytically), yet every warp instruction and CTA is counted
    // exactly, whole waves less the held-back blocks are skipped, and the run is the same
    // twice. Measured on this 4-SM GPU: +0.33% (plain jumps -0.66%).
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    let d = run_with(&spec, k.clone(), None);
    let f = run_with(&spec, k.clone(), Some(aged()));
    let ff = f.fast_forward.as_ref().expect("fast-forward stats");
    assert!(
        ff.jumps.iter().any(|j| j.aged[0] > 0) && ff.prefix_insts > 0,
        "the state was aged: {ff:?}"
    );
    for j in &ff.jumps {
        assert_eq!((j.ctas[0] + j.held_back[0]) % 32, 0, "{j:?}");
        assert!(j.held_back[0] <= j.aged[0], "{j:?}");
    }
    consistent(&f, k.as_ref());
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    same_bytes(&f, &run_with(&spec, k, Some(aged())));
}

#[test]
fn aged_jumps_leave_slots_already_out_of_step_alone() {
    // CTAs 1-6x apart in length are out of step within a wave: no slot is aged, and the
    // run is the plain jump's (a random walk leaves uniform phases uniform).
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(
        640,
        "[4, 24]",
        "trip_variation = \"cta\"\n",
    )));
    let f = run_with(&spec, k.clone(), Some(aged()));
    let ff = f.fast_forward.as_ref().expect("fast-forward stats");
    assert!(!ff.jumps.is_empty());
    assert!(
        ff.jumps.iter().all(|j| j.aged[0] == 0) && ff.prefix_insts == 0,
        "{ff:?}"
    );
    let plain = FastForward {
        age: false,
        ..aged()
    };
    assert_eq!(f.cycles, run_with(&spec, k.clone(), Some(plain)).cycles);
    consistent(&f, k.as_ref());
}

/// The mechanisms issue 45 added, off (the bounds made effectively unbounded; L1 entries per
/// line and warp slots lowest-free, as before 2026-12-01): the figures
/// these tests hold were measured without them, and fast-forward's accuracy with them is
/// not yet established. With all of them on, the steady kernel is fast-forwarded 5.9%
/// short (736 884 vs 782 974 cycles); without refresh, translation and launch latencies
/// but with the bounded queues, 2.6% (665 892 vs 683 490); with only the L1 lookup
/// before a miss leaves (`l1d.miss_latency`, qv100's 20), 6.6% (652 909 vs 698 987). The
/// fast-forward work (issue 47) takes that up.
const PRE_ENGINE_III: &[&str] = &[
    "dram.refresh=false",
    "translation.enabled=false",
    "launch.kernel_latency=0",
    "launch.cta_latency=0",
    "l1d.on_mshr_full=\"bypass\"",
    "l1d.banks=1",
    "l1d.miss_queue=1048576",
    "noc.buffer=1048576",
    "l2.input_queue=1048576",
    "l1d.request_unit=\"line\"",
    "sm.cta_warp_blocks=false",
    "l2.dram_queue=0",
    "l1d.miss_latency=0",
];

/// A bundled model with [`PRE_ENGINE_III`] applied.
fn ff_spec(name: &str) -> GpuSpec {
    GpuSpec::builtin(name)
        .unwrap()
        .with_overrides(PRE_ENGINE_III)
        .unwrap()
}

/// A bundled suite kernel with its grid scaled by `scale`.
fn suite_kernel(path: &str, scale: u32) -> Arc<dyn KernelSource> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let mut spec = gpumodel::trace::synth::parse_spec(&text, Path::new(path)).unwrap();
    spec.kernel.grid.0[0] *= scale;
    Arc::new(SynthKernel::from_spec(spec, Path::new(path)).unwrap())
}

/// A suite kernel with its grid scaled, run detailed and with aged jumps on `model`:
/// most of it skipped, every warp instruction counted, cycles within `tol`; the aged
/// run's fast-forward statistics.
fn aged_long_run(model: &str, path: &str, scale: u32, tol: f64) -> FfStats {
    // (Without CTA launch latency, the setting these figures were measured at: with
    // titanxp's 400 cycles (issue 45) the transpose's aged error is 2.7%, a follow-up of
    // the fast-forward work, issue 47.)
    let spec = ff_spec(model)
        .with_overrides(&["launch.cta_latency=0"])
        .unwrap();
    let k = suite_kernel(path, scale);
    let d = run_with(&spec, k.clone(), None);
    let (f, ff) = aged_skipping(&spec, &k, 7);
    assert!(err(&d, &f) <= tol, "cycles {} vs {}", f.cycles, d.cycles);
    ff
}

/// `k` fast-forwarded with aged jumps on `spec`: more than `tenths` tenths of it skipped,
/// every warp instruction counted.
fn aged_skipping(spec: &GpuSpec, k: &Arc<dyn KernelSource>, tenths: u64) -> (RunStats, FfStats) {
    let f = run_with(spec, k.clone(), Some(aged()));
    let ff = f.fast_forward.clone().expect("fast-forward stats");
    assert!(
        ff.cycles * 10 > f.cycles * tenths,
        "most of it skipped: {} of {}",
        ff.cycles,
        f.cycles
    );
    assert_eq!(f.apps[0].counters.warp_insts, k.total_warp_insts());
    (f, ff)
}

#[test]
fn aged_jumps_follow_a_kernel_whose_ctas_drift_apart() {
    // Warped-Slicer's KNN (as bundled before issue 46: tests/data/ff_knn_drift.toml) with
    // 20x its grid (100 waves, 4.6 M cycles): its CTAs start in lockstep and drift apart over
    // 2-3 M cycles, losing DRAM row locality (IPC -4%). Plain jumps extrapolate the young
    // state (-1.96% at stride 8, -2.54% unbounded); aged jumps follow the drift (+0.94%).
    let ff = aged_long_run("fermi-ws", "tests/data/ff_knn_drift.toml", 20, 0.01);
    assert!(ff.jumps.iter().any(|j| j.ended_by == "age"), "{ff:?}");
}

#[test]
fn aged_jumps_follow_a_transpose_whose_ctas_drift_apart() {
    // Slate's transpose with 20x its grid (100 waves on the 30-SM TITAN Xp, 2.8 M
    // cycles): its 240 resident CTAs start in lockstep and desynchronise in detail, which
    // raises its IPC by ~7%. An aged jump must move every slot's phase, by the drift
    // measured in detail before it: +1.52% (plain jumps +1.42%; the per-slot rule itself
    // is tested in `engine::sim::ff`).
    let ff = aged_long_run("titanxp", "traces/slate/tr.toml", 20, 0.02);
    assert!(ff.jumps.iter().any(|j| j.aged[0] > 0), "{ff:?}");
}

/// A window run of one application relaunching a short kernel: once two passes agree,
/// whole passes are retired at the last one's time and counters (launch-level jumps).
#[test]
fn relaunches_are_retired_whole_and_counted() {
    let spec = gpu();
    // Two waves per launch: too short for a jump inside a launch.
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(64, "12", "")));
    let apps = vec![AppSpec::new("k", vec![k.clone()])];
    let w = 2_000_000;
    let mk = |ff: bool| RunConfig {
        mode: RunMode::Window(w),
        sample_every: 1000,
        fast_forward: ff.then(FastForward::default),
        ..RunConfig::completion(1)
    };
    let d = engine::run_static(&spec, &apps, &mk(false)).unwrap();
    let f = engine::run_static(&spec, &apps, &mk(true)).unwrap();
    assert!(d.apps[0].passes >= 20, "{} passes", d.apps[0].passes);
    assert_eq!(f.cycles, w);
    let ff = f.fast_forward.as_ref().expect("stats");
    let jumps: Vec<_> = ff.jumps.iter().filter(|j| j.passes > 0).collect();
    assert!(!jumps.is_empty(), "no launch-level jump: {ff:?}");
    for j in &jumps {
        // Whole passes: every instruction and CTA of each.
        assert_eq!(j.warp_insts[0], j.passes * k.total_warp_insts());
        assert_eq!(j.ctas[0] as u64, j.passes * k.num_ctas() as u64);
        assert_eq!(j.ended_by, "event");
    }
    assert!(
        skipped(&f) * 2 > w,
        "most of the window is skipped: {}",
        skipped(&f)
    );
    // The work in the window within 1% of the detailed run's.
    let (x, y) = (
        d.apps[0].counters.warp_insts as f64,
        f.apps[0].counters.warp_insts as f64,
    );
    assert!((x - y).abs() / x <= 0.01, "{y} vs {x}");
    // Every skipped pass has its kernel record, in order, each whole launch complete.
    let a = &f.apps[0];
    assert_eq!(
        a.kernels.len() as u32,
        a.passes + 1,
        "one record per launch"
    );
    for (i, r) in a.kernels.iter().enumerate() {
        assert_eq!(r.pass as usize, i);
        if i + 1 < a.kernels.len() {
            assert_eq!(r.warp_insts, k.total_warp_insts());
        }
        if i > 0 {
            assert!(r.start >= a.kernels[i - 1].end, "launches in order");
        }
        assert!(r.end <= w);
    }
    let total: u64 = a.kernels.iter().map(|r| r.warp_insts).sum();
    assert_eq!(
        total, a.counters.warp_insts,
        "records add up to the counters"
    );
    // Occupancy samples through the skipped time too, as many as in detail, in order.
    assert_eq!(f.timeline.len(), d.timeline.len());
    assert!(f.timeline.windows(2).all(|p| p[0].cycle < p[1].cycle));
    let occ = |s: &RunStats| s.apps[0].counters.warp_cycles as f64;
    assert!((occ(&d) - occ(&f)).abs() / occ(&d) <= 0.02);
    // Deterministic.
    same_bytes(&f, &engine::run_static(&spec, &apps, &mk(true)).unwrap());
}

/// A budget run: passes are retired up to a pass short of the budget, which is then
/// reached in detail; two applications relaunching side by side are never jumped by
/// whole launches as if alone (only by co-run jumps).
#[test]
fn launch_level_jumps_stop_at_budgets_and_need_a_lone_application() {
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(64, "12", "")));
    let one = vec![AppSpec::new("k", vec![k.clone()])];
    let budget = k.total_warp_insts() * 25 + k.total_warp_insts() / 3;
    let mk = |mode: RunMode, ff: bool| RunConfig {
        mode,
        fast_forward: ff.then(FastForward::default),
        ..RunConfig::completion(1)
    };
    let d = engine::run_static(&spec, &one, &mk(RunMode::Budget(vec![budget]), false)).unwrap();
    let f = engine::run_static(&spec, &one, &mk(RunMode::Budget(vec![budget]), true)).unwrap();
    let ff = f.fast_forward.as_ref().unwrap();
    assert!(ff
        .jumps
        .iter()
        .any(|j| j.passes > 0 && j.ended_by == "budget"));
    let got = f.apps[0].counters.warp_insts;
    assert!(got >= budget && got < budget + k.total_warp_insts() / 10);
    let (x, y) = (d.apps[0].end as f64, f.apps[0].end as f64);
    assert!((x - y).abs() / x <= 0.01, "budget reached at {y} vs {x}");

    let two = vec![
        AppSpec::new("a", vec![k.clone()]),
        AppSpec::new("b", vec![k.clone()]),
    ];
    let mut cfg = mk(RunMode::Window(1_500_000), true);
    cfg.placement = gpumodel::engine::Placement::left_over(2);
    let f = engine::run_static(&spec, &two, &cfg).unwrap();
    assert!(f.apps.iter().all(|a| a.passes >= 5));
    let ff = f.fast_forward.as_ref().unwrap();
    assert!(ff.jumps.iter().all(|j| j.passes == 0 || j.corun), "{ff:?}");

    // A budget run of two: once the small budget is reached, the survivor runs alone,
    // and its passes are retired only from two passes it ran alone.
    let small = k.total_warp_insts() * 2;
    let mut cfg = mk(RunMode::Budget(vec![small, budget]), false);
    cfg.placement = gpumodel::engine::Placement::left_over(2);
    let d = engine::run_static(&spec, &two, &cfg).unwrap();
    cfg.fast_forward = Some(FastForward::default());
    let f = engine::run_static(&spec, &two, &cfg).unwrap();
    let ff = f.fast_forward.as_ref().unwrap();
    let first = f.apps[0].end;
    let pass = ff
        .jumps
        .iter()
        .find(|j| j.passes > 0 && !j.corun)
        .expect("the survivor's passes");
    // Two whole passes alone first (a pass is the jump's length over its count).
    let one = pass.cycles / pass.passes;
    assert!(
        pass.at >= first + one * 19 / 10,
        "jumped at {} with the other ended at {first} (a pass: {one})",
        pass.at
    );
    assert_eq!(pass.warp_insts[0], 0);
    for (x, y) in d.apps.iter().zip(&f.apps) {
        let (x, y) = (x.end as f64, y.end as f64);
        assert!((x - y).abs() / x <= 0.01, "ended at {y} vs {x}");
    }
}

/// Slots seen to keep in step have no drift to age: no pre-ageing jump (and its second
/// measured span) then. Slate's transpose with 40x its grid on qv100 (80 SMs, 75 waves):
/// its CTAs stay in lockstep there (the phase resultant does not decay in detail), so
/// the launch's first jump follows its first span (BENCHMARKS.md; the detailed run takes
/// ~50 s, so only the fast-forwarded one runs here).
#[test]
fn slots_that_keep_in_step_are_not_pre_aged() {
    // (qv100's issue stage as it was when this was measured: with GPGPU-Sim's rotating
    // issue order, or store acknowledgements queued on the reply network, the CTAs do not
    // keep in step, and the property has no case to test.)
    let spec = ff_spec("qv100")
        .with_overrides(&[
            "sm.rotate_issue_priority=false",
            "sm.pipeline_latency=6",
            "sm.operand_collector.write_back_conflicts=false",
            "sm.exit_waits_for_stores=false",
        ])
        .unwrap();
    let k = suite_kernel("traces/slate/tr.toml", 40);
    let (_, ff) = aged_skipping(&spec, &k, 8);
    assert!(ff.jumps.iter().all(|j| j.ended_by != "age"), "{ff:?}");
}

#[test]
fn waves_longer_than_the_history_are_still_measured() {
    // Windows so short that 512 of them hold about three waves: a span (two waves per
    // half, after the first wave's turnover) fits only once the history thins out.
    let spec = gpu();
    let k: Arc<dyn KernelSource> = Arc::new(synth(&spec_text(640, "12", "")));
    let d = run(&spec, k.clone(), false);
    let window = (d.cycles * 3 / 20 / 512).max(1);
    let ff = FastForward { window, ..plain() };
    let f = run_with(&spec, k.clone(), Some(ff));
    let s = f.fast_forward.as_ref().expect("fast-forward stats");
    assert!(
        !s.jumps.is_empty() && skipped(&f) * 2 > f.cycles,
        "a 20-wave steady kernel measured over {window}-cycle windows is skipped: {} of {}",
        skipped(&f),
        f.cycles
    );
    assert!(err(&d, &f) <= 0.02, "cycles {} vs {}", f.cycles, d.cycles);
    consistent(&f, k.as_ref());
    let g = run_with(&spec, k.clone(), Some(ff));
    same_bytes(&f, &g);
}

/// A jump shorter than the span it was measured over is not taken. SiM's FD with its grid
/// ×8 on the A100 is 10.7 waves: the one jump fast-forward found was two waves long, up to
/// the tail, and the run ended 4.3% early (61,777 cycles detailed, 59,110 fast-forwarded):
/// after it the resident CTAs were in the phases of the jump's start and ran the last
/// waves faster than the detailed run's drifted ones. A jump's error of that kind does not
/// shrink with its length, so a short jump saves little and errs the most.
#[test]
fn a_jump_shorter_than_its_span_is_not_taken() {
    let k = suite_kernel("traces/sim/fd.toml", 8);
    assert_eq!(k.num_ctas(), 2304);
    let spec = ff_spec("a100");
    let d = run(&spec, k.clone(), false);
    let f = run(&spec, k.clone(), true);
    consistent(&f, k.as_ref());
    assert!(
        err(&d, &f) <= 0.01,
        "{} cycles fast-forwarded against {} detailed; jumps {:?}",
        f.cycles,
        d.cycles,
        f.fast_forward.as_ref().map(|x| &x.jumps)
    );
}

/// Two kernels for co-runs whose passes are steady over millions of cycles (the random
/// loads of `spec_text` over 8 MiB make a relaunched pass 53 K cycles at first and 89 K
/// after 2 M cycles on the 4-SM GPU: no two-pass measurement sees that drift), with
/// passes of different lengths.
fn co_pair() -> (Arc<dyn KernelSource>, Arc<dyn KernelSource>) {
    let text = |grid: u32, trips: &str| {
        spec_text(grid, trips, "")
            .replace("footprint = \"8 MiB\"", "footprint = \"256 KiB\"")
            .replace("[[stores]]\ncount = 1\n", "")
    };
    (
        Arc::new(synth(&text(64, "12"))),
        Arc::new(synth(&text(96, "16"))),
    )
}

/// Two applications relaunching side by side, with passes of different lengths (their
/// phases drift): co-run jumps skip most of a fixed window, every application's work in
/// it within 2% of the detailed run's, samples through the skipped time, same bytes twice.
#[test]
fn co_running_relaunches_jump_together() {
    let spec = gpu();
    let (a, b) = co_pair();
    let apps = vec![AppSpec::new("a", vec![a]), AppSpec::new("b", vec![b])];
    let w = 3_000_000;
    let mk = |ff: bool| RunConfig {
        mode: RunMode::Window(w),
        sample_every: 1000,
        fast_forward: ff.then(FastForward::default),
        placement: gpumodel::engine::Placement::left_over(2),
        ..RunConfig::completion(2)
    };
    let d = engine::run_static(&spec, &apps, &mk(false)).unwrap();
    let f = engine::run_static(&spec, &apps, &mk(true)).unwrap();
    assert_eq!(f.cycles, w);
    let ff = f.fast_forward.as_ref().expect("stats");
    let co: Vec<_> = ff.jumps.iter().filter(|j| j.corun).collect();
    assert!(!co.is_empty(), "no co-run jump: {ff:?}");
    assert!(skipped(&f) * 2 > w, "skipped only {}", skipped(&f));
    for j in &co {
        assert!(j.warp_insts.iter().all(|&n| n > 0), "both credited: {j:?}");
        // Steady passes: each application's rate alike over the two halves of its span.
        assert_eq!(j.spread_bp.len(), 2, "{j:?}");
        assert!(j.spread_bp.iter().all(|&bp| bp <= 300), "{j:?}");
        assert!(
            matches!(j.ended_by.as_str(), "event" | "stride" | "end"),
            "{j:?}"
        );
    }
    for (x, y) in d.apps.iter().zip(&f.apps) {
        let (p, q) = (x.counters.warp_insts as f64, y.counters.warp_insts as f64);
        assert!((p - q).abs() / p <= 0.02, "{}: {q} vs {p}", x.name);
        // Kernel records stay in pass order.
        assert!(y.kernels.windows(2).all(|k| k[0].pass < k[1].pass));
        assert!(
            y.passes * 100 >= x.passes * 95,
            "{} vs {} passes",
            y.passes,
            x.passes
        );
    }
    assert_eq!(f.timeline.len(), d.timeline.len());
    same_bytes(&f, &engine::run_static(&spec, &apps, &mk(true)).unwrap());
    // `corun_stride` bounds a co-run jump by its measured passes: at 2, every co-run
    // jump is at most twice the span it was measured over, so the window takes more
    // of them, the first ended by the bound; the work stays within 2%.
    let mut c = mk(true);
    c.fast_forward.as_mut().expect("on").corun_stride = 2;
    let s = engine::run_static(&spec, &apps, &c).unwrap();
    let sj: Vec<_> = s
        .fast_forward
        .as_ref()
        .expect("stats")
        .jumps
        .iter()
        .filter(|j| j.corun)
        .collect();
    assert!(
        sj.len() > co.len(),
        "{} vs {} co-run jumps",
        sj.len(),
        co.len()
    );
    assert_eq!(sj[0].ended_by, "stride", "{sj:?}");
    for (x, y) in d.apps.iter().zip(&s.apps) {
        let (p, q) = (x.counters.warp_insts as f64, y.counters.warp_insts as f64);
        assert!(
            (p - q).abs() / p <= 0.02,
            "{}: {q} vs {p} at corun_stride 2",
            x.name
        );
    }
}

/// Two relaunching applications whose joint pattern does not repeat at either one's own
/// pass boundaries: Warped-Slicer's mm and knn under left-over dispatch on fermi-ws repeat
/// every 6 passes of mm and 7 of knn, one of knn's 7 short (it starts while mm waits for
/// slots to relaunch). A co-run jump measures knn over the same cycles as mm, the
/// application it is made for, not over knn's own passes before it, which missed the
/// short one (knn -1.84% in this 5 M-cycle window, -2.02% in 25 M; now -0.74% and
/// -0.29%; mm +0.99% either way: the window's last 120 K cycles run in detail from the
/// joint phase the jump began at).
#[test]
fn a_relaunching_co_runner_is_measured_over_the_same_cycles() {
    let (d, f) = cli_pair("left-over", ["mm", "knn"]);
    let jumps = f["fast_forward"]["jumps"].as_array().expect("jumps");
    assert!(
        jumps.iter().any(|j| j["corun"] == true),
        "no co-run jump: {jumps:?}"
    );
    assert!(f["fast_forward"]["cycles"].as_u64().unwrap() * 2 > CLI_WINDOW);
    assert_apps_within(&d, &f, 0.0125);
}

/// When a co-run jump would leave the window's end less than half the tolerance of the
/// window past a whole pass of the application it is made for, it runs to the end and
/// the run is over; that part pass is credited what the application's last pass did in
/// as many cycles. fermi-ws Warped-Slicer hot + lbm, 5 M cycles: hot -0.08%, lbm -0.02%
/// (with the last 11 K cycles run in detail from a pass boundary, -0.07% and -0.03%).
#[test]
fn a_co_run_jump_may_reach_the_window_end() {
    let (d, f) = cli_pair("warped-slicer", ["hot", "lbm"]);
    let jumps = f["fast_forward"]["jumps"].as_array().expect("jumps");
    let last = jumps.last().expect("a jump");
    assert_eq!(last["ended_by"], "end", "{jumps:?}");
    assert_eq!(
        last["at"].as_u64().unwrap() + last["cycles"].as_u64().unwrap(),
        CLI_WINDOW
    );
    assert_eq!(f["cycles"].as_u64(), Some(CLI_WINDOW));
    assert_apps_within(&d, &f, 0.01);
}

/// A co-run jump that would stop a pass short of the window's end (more than a jump to
/// the end may credit) waits for a co-runner's pass that ends soon and reaches the end.
/// fermi-ws even mm + knn + dxt + mvp, 11 M cycles: the jump at mm's second pass (2.13 M)
/// stopped 0.36 M short of the end; made at dxt's pass 0.25 M later, it runs to the end.
#[test]
fn a_co_run_jump_waits_for_a_pass_that_reaches_the_window_end() {
    let apps = [
        "warped-slicer/mm",
        "warped-slicer/knn",
        "warped-slicer/dxt",
        "warped-slicer/mvp",
    ];
    let (d, f) = cli_both("fermi-ws", "even", 11_000_000, &apps);
    let jumps = f["fast_forward"]["jumps"].as_array().expect("jumps");
    let last = jumps.last().expect("a jump");
    assert_eq!(last["ended_by"], "end", "{jumps:?}");
    assert_eq!(
        last["at"].as_u64().unwrap() + last["cycles"].as_u64().unwrap(),
        11_000_000
    );
    assert_apps_within(&d, &f, 0.01);
}

/// A co-runner whose DRAM traffic is a sliver of the GPU's peak is steady when its
/// passes' time and rate agree, however much that sliver moves with the other's phase:
/// fermi-ws Warped-Slicer dxt beside mvp moves 0.06 bytes a cycle, 11-36% more or less
/// from pass to pass, and no co-run jump was made in this 5 M-cycle window (now one at
/// 2.65 M, 44% skipped, dxt +0.06%, mvp -0.31%).
#[test]
fn a_sliver_of_dram_traffic_does_not_hold_a_co_run_jump_back() {
    let (d, f) = cli_pair("warped-slicer", ["dxt", "mvp"]);
    let skipped = f["fast_forward"]["cycles"].as_u64().unwrap();
    assert!(skipped * 100 > 40 * CLI_WINDOW, "skipped {skipped}");
    assert_apps_within(&d, &f, 0.01);
}

/// A co-runner in one long launch keeps its pass marks across the co-run jumps that
/// retire its blocks: the pass they end is a pass (the jumps' time and blocks in it), so
/// once two such passes agree it is a relaunching part and a jump may cross its
/// launches. gpgpusim-60sm SMRA hs beside spmv (1.6 M-cycle launches), 6 M cycles: every
/// jump stopped short of spmv's last wave (four, the longest 1.38 M cycles, 4.36 M
/// skipped); now the third, at 4.01 M, runs 1.99 M cycles to the end (4.75 M skipped;
/// hs -0.03%, spmv -0.23%).
#[test]
fn a_long_launch_co_runner_is_measured_across_jumps() {
    let apps = ["punyala/hs", "punyala/spmv"];
    let (d, f) = cli_both("gpgpusim-60sm", "smra", 6_000_000, &apps);
    let jumps = f["fast_forward"]["jumps"].as_array().expect("jumps");
    assert!(
        jumps
            .iter()
            .any(|j| j["cycles"].as_u64().unwrap() > 1_700_000),
        "no jump longer than spmv's launch: {jumps:?}"
    );
    assert_apps_within(&d, &f, 0.01);
}

/// A co-runner whose pass time alternates with the other's phase (gpgpusim-60sm bp
/// beside gups under `even`: 1.21 M and 1.28 M cycles) is steady when its last two pairs
/// of passes agree, and is credited over an even number of passes. In this 10 M-cycle
/// window no co-run jump was made; now one at 6.28 M of 2.50 M cycles (bp +0.03%, gups
/// -0.39%).
#[test]
fn a_co_runner_whose_passes_alternate_is_measured_in_pairs() {
    let apps = ["punyala/bp", "punyala/gups"];
    let (d, f) = cli_both("gpgpusim-60sm", "even", 10_000_000, &apps);
    let skipped = f["fast_forward"]["cycles"].as_u64().unwrap();
    assert!(skipped * 100 > 20 * 10_000_000, "skipped {skipped}");
    assert_apps_within(&d, &f, 0.01);
}

/// A co-run jump says, per application, how far its rates over the two halves of the span
/// it was measured over differ (`spread_bp`): small for applications whose passes are
/// steady beside each other, large for one whose rate swings with the co-runner's phase.
/// ugpu cp beside lbm (1 M-cycle epochs, 25 M cycles) is credited from lbm's two passes
/// after the reallocation, over which cp ran at rates 27.5% apart, and came out 5.5% short
/// of the detailed run (BENCHMARKS.md); fermi-ws even hot + lbm, within 0.4%, 1.2%.
#[test]
fn a_co_run_jump_reports_how_far_the_rates_moved_across_its_span() {
    let run = |gpu: &str, share: &str, extra: &[&str], apps: [&str; 2]| {
        let mut args: Vec<String> = ["--gpu", gpu, "--share", share, "--window", "25000000"]
            .iter()
            .chain(extra)
            .map(|a| a.to_string())
            .collect();
        args.push("--fast-forward".into());
        args.extend(apps.map(|a| format!("traces/{a}.toml")));
        let (v, stderr) = cli_run(&args);
        let spread: Vec<u64> = v["fast_forward"]["jumps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["corun"] == true)
            .flat_map(|j| j["spread_bp"].as_array().unwrap().clone())
            .map(|x| x.as_u64().unwrap())
            .collect();
        (spread, stderr)
    };
    let epochs = [
        "--policy-param",
        "ugpu.epoch=1000000",
        "--policy-param",
        "ugpu.profile_cycles=200000",
    ];
    let (cp, line) = run("ugpu-80sm-hbm", "ugpu", &epochs, ["ugpu/lbm", "ugpu/cp"]);
    assert!(cp.len() == 2 && cp[1] > 1000 && cp[0] < cp[1], "{cp:?}");
    assert!(
        line.contains("between the halves of a measured span (cp)"),
        "{line}"
    );
    let (hot, _) = run(
        "fermi-ws",
        "even",
        &[],
        ["warped-slicer/hot", "warped-slicer/lbm"],
    );
    assert!(!hot.is_empty() && hot.iter().all(|&bp| bp < 300), "{hot:?}");
}

/// The window of the command-line co-run tests.
const CLI_WINDOW: u64 = 5_000_000;

/// [`cli_both`] of two Warped-Slicer suite applications on fermi-ws for [`CLI_WINDOW`] cycles:
/// the two `--json`s.
fn cli_pair(share: &str, apps: [&str; 2]) -> (serde_json::Value, serde_json::Value) {
    let apps = apps.map(|a| format!("warped-slicer/{a}"));
    cli_both("fermi-ws", share, CLI_WINDOW, &[&apps[0], &apps[1]])
}

/// `gpumodel run` of the suite applications `apps` (`traces/{app}.toml`) on `gpu` under
/// `share` for a `window`-cycle window, in detail and fast-forwarded: the two `--json`s.
fn cli_both(
    gpu: &str,
    share: &str,
    window: u64,
    apps: &[&str],
) -> (serde_json::Value, serde_json::Value) {
    let mut args: Vec<String> = ["--gpu", gpu, "--share", share, "--window"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    args.push(window.to_string());
    args.extend(apps.iter().map(|a| format!("traces/{a}.toml")));
    let d = cli_run(&args).0;
    args.push("--fast-forward".into());
    (d, cli_run(&args).0)
}

/// `gpumodel run --threads 1 -q ARGS --json FILE` in the crate's root: its JSON and its
/// standard error.
fn cli_run(args: &[String]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--threads", "1", "-q"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, stderr)
}

/// Every application's warp instructions in the fast-forwarded run `f` within `tol` of
/// the detailed run `d`'s.
fn assert_apps_within(d: &serde_json::Value, f: &serde_json::Value, tol: f64) {
    let apps = |v: &serde_json::Value| v["apps"].as_array().unwrap().clone();
    for (x, y) in apps(d).iter().zip(&apps(f)) {
        let p = x["counters"]["warp_insts"].as_f64().unwrap();
        let q = y["counters"]["warp_insts"].as_f64().unwrap();
        assert!((q - p).abs() / p <= tol, "{}: {q} vs {p}", x["name"]);
    }
}

/// A controller whose epochs are not passive: a co-run jump calls the epochs it crosses
/// with the view the measured rates give (their `now` and instruction counts advance),
/// and ends before the first that acts, whose action then takes effect at its own time
/// without a second call.
#[test]
fn co_run_jumps_call_the_epochs_they_cross() {
    use gpumodel::engine::{Action, Controller, Hook, View};
    struct Ticker {
        seen: Vec<(u64, u64)>,
        act_at: u64,
        acted: bool,
    }
    impl Controller for Ticker {
        fn epoch(&self) -> Option<u64> {
            Some(20_000)
        }
        fn on_hook(&mut self, h: Hook, v: &View, acts: &mut Vec<Action>) {
            if h == Hook::Epoch {
                self.seen.push((v.now, v.apps[0].counters.warp_insts));
                if v.now >= self.act_at && !self.acted {
                    self.acted = true;
                    acts.push(Action::SetQuota {
                        app: 1,
                        quota: None,
                    });
                }
            }
        }
    }
    let spec = gpu();
    let (a, b) = co_pair();
    let apps = vec![AppSpec::new("a", vec![a]), AppSpec::new("b", vec![b])];
    let cfg = RunConfig {
        mode: RunMode::Window(3_000_000),
        fast_forward: Some(FastForward::default()),
        placement: gpumodel::engine::Placement::left_over(2),
        ..RunConfig::completion(2)
    };
    let mut c = Ticker {
        seen: Vec::new(),
        act_at: 1_500_000,
        acted: false,
    };
    let f = engine::run(&spec, &apps, &cfg, &mut c).unwrap();
    let ff = f.fast_forward.as_ref().unwrap();
    let mut dc = Ticker {
        seen: Vec::new(),
        act_at: 1_500_000,
        acted: false,
    };
    let detailed = RunConfig {
        fast_forward: None,
        ..cfg.clone()
    };
    let d = engine::run(&spec, &apps, &detailed, &mut dc).unwrap();
    // Every epoch is called once, at the times of the detailed run, with work growing
    // and within 2% of the detailed run's at the end.
    let times = |s: &[(u64, u64)]| s.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(times(&c.seen), times(&dc.seen));
    let (p, q) = (
        dc.seen.last().unwrap().1 as f64,
        c.seen.last().unwrap().1 as f64,
    );
    assert!((p - q).abs() / p <= 0.02, "{q} vs {p}");
    for (i, w) in c.seen.windows(2).enumerate() {
        assert_eq!(w[1].0 - w[0].0, 20_000, "epoch {i}");
        assert!(w[1].1 > w[0].1, "work grows through epoch {i}");
    }
    let ended: Vec<_> = ff.jumps.iter().filter(|j| j.ended_by == "epoch").collect();
    assert_eq!(ended.len(), 1, "{ff:?}");
    // It stops at a whole pass of the longest-pass application before the acting epoch
    // (whose launch is then as far along there as in detail), and the epoch comes in
    // detail, less than that pass later.
    let longest = d
        .apps
        .iter()
        .flat_map(|x| x.kernels.iter().map(|k| k.end - k.start))
        .max()
        .unwrap();
    let end = ended[0].at + ended[0].cycles;
    assert!(
        end <= 1_500_000 && 1_500_000 - end < longest * 21 / 20,
        "ends at {end}, the acting epoch at 1.5 M, passes up to {longest}"
    );
}

/// `study --ff-check N`: fast-forwarded co-run jobs are run again in detail and each
/// application's progress compared; the check names the largest difference. (HOT + LBM
/// under Even jumps once in 1.5 M cycles; DXT + MVP, used before, no longer does since the
/// `xor` fold became one-to-one: no two of its passes agree within the window.)
#[test]
fn a_study_checks_its_fast_forward_against_detail() {
    use gpumodel::study::{run_study_file_checked, StudyOutput};
    let dir = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/warped-slicer");
    let text = format!(
        "name = \"check\"\ngpu = \"fermi-ws\"\nfixed_window = true\nwindow = 1500000\n\
         policies = [\"even\"]\n\
         [[benches]]\nname = \"hot\"\npath = \"{t}/hot.toml\"\n\
         [[benches]]\nname = \"lbm\"\npath = \"{t}/lbm.toml\"\n\
         [[groups]]\nname = \"g\"\nkind = \"cross\"\na = [\"hot\"]\nb = [\"lbm\"]\n",
        t = t.display()
    );
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    let none = |_: &str, _: usize, _: usize| {};
    let (out, check) = run_study_file_checked(&p, None, 1, &none).unwrap();
    let StudyOutput::Study(r) = out else {
        panic!("one point")
    };
    let c = check.expect("asked for");
    assert_eq!((c.eligible, c.checked), (1, 1), "{c:?}");
    assert_eq!(c.runs.len(), 2, "one row per application");
    let run = &r.workloads[0].runs[0];
    for (row, app) in c.runs.iter().zip(&run.apps) {
        assert_eq!(row.app, app.name);
        assert_eq!(row.fast_forward, app.progress, "the study's own figure");
        assert!((row.diff - (row.fast_forward / row.detailed - 1.0)).abs() < 1e-12);
    }
    let worst = c.runs.iter().map(|r| r.diff.abs()).fold(0.0, f64::max);
    assert_eq!(c.largest, worst);
    assert!(c.largest <= 0.02, "{c:?}");
    // The run's co-run jump says how steady its measured span was (`ff_spread`, what the
    // check ranks a policy's jobs by): the two halves of HOT + LBM's span within 10%.
    let spread = run.measures.get("ff_spread").copied();
    assert!(
        spread.is_some_and(|s| (0.0..0.1).contains(&s)),
        "{:?}",
        run.measures
    );
    // Nothing to check when nothing was fast-forwarded.
    let (_, none_checked) = run_study_file_checked(&p, Some(None), 1, &none).unwrap();
    assert_eq!(none_checked.unwrap().checked, 0);
}

/// Two applications side by side on their own SMs, one relaunching a short kernel, the
/// other in one launch longer than the window: a co-run jump skips both, the long one
/// by whole blocks of its launch measured between the other's pass marks, within 2% of
/// the detailed run's work each.
#[test]
fn a_long_launch_beside_a_relaunching_one_is_skipped_by_its_blocks() {
    let spec = gpu();
    // (Compute-heavy and reading a small, L2-resident table: the spec above streams through
    // memory, and its rate drifts by ±7% as the two launches' streams move through the
    // DRAM banks, which no jump measured in 150 K cycles can follow.)
    let text = |grid: u32| {
        format!(
            "[kernel]\nname = \"k\"\ngrid = {grid}\nblock = 256\nregs = 32\nseed = 11\n\
             [body]\ntrips = 12\nfp32 = 24\nint = 4\n\
             [[loads]]\ncount = 1\npattern = \"random\"\nfootprint = \"256 KiB\"\n"
        )
    };
    let short: Arc<dyn KernelSource> = Arc::new(synth(&text(32)));
    let long: Arc<dyn KernelSource> = Arc::new(synth(&text(3200)));
    let apps = vec![
        AppSpec::new("long", vec![long.clone()]),
        AppSpec::new("short", vec![short.clone()]),
    ];
    let w = 3_000_000;
    let mk = |ff: bool| {
        let mut placement = gpumodel::engine::Placement::left_over(2);
        for (a, p) in placement.apps.iter_mut().enumerate() {
            p.sms = Some((0..4).map(|s| s / 2 == a).collect());
        }
        RunConfig {
            mode: RunMode::Window(w),
            placement,
            sample_every: 1000,
            fast_forward: ff.then(FastForward::default),
            ..RunConfig::completion(2)
        }
    };
    let d = engine::run_static(&spec, &apps, &mk(false)).unwrap();
    let f = engine::run_static(&spec, &apps, &mk(true)).unwrap();
    assert_eq!(d.apps[0].passes, 0, "the long launch outlasts the window");
    assert!(d.apps[1].passes >= 10, "{} passes", d.apps[1].passes);
    let ff = f.fast_forward.as_ref().expect("stats");
    let co: Vec<_> = ff.jumps.iter().filter(|j| j.corun).collect();
    assert!(
        co.iter().any(|j| j.ctas[0] > 0 && j.passes > 0),
        "no co-run jump with the long launch's blocks: {ff:?}"
    );
    assert!(skipped(&f) * 2 > w, "skipped {}", skipped(&f));
    // Whole passes of the application whose pass end the jump starts at (its state after
    // the jump is a pass boundary): the jump is that many of its mean pass, unless it
    // reaches the window's end, where the run is over.
    for j in &co {
        assert!(j.passes > 0, "{j:?}");
        assert!(j.ended_by == "end" || j.cycles % j.passes == 0, "{j:?}");
    }
    for (x, y) in d.apps.iter().zip(&f.apps) {
        let (x, y) = (x.counters.warp_insts as f64, y.counters.warp_insts as f64);
        assert!((x - y).abs() / x <= 0.02, "{y} vs {x}");
    }
    // Whole blocks: the long launch's skipped instructions are those of its blocks.
    let blocks: u64 = co.iter().map(|j| u64::from(j.ctas[0])).sum();
    let insts: u64 = co.iter().map(|j| j.warp_insts[0]).sum();
    let per = long.total_warp_insts() / long.num_ctas() as u64;
    assert_eq!(
        insts,
        blocks * per,
        "uniform blocks of {per} warp instructions"
    );
    same_bytes(&f, &engine::run_static(&spec, &apps, &mk(true)).unwrap());
}
