//! Sharing policies: the max-min solvers against brute force, Warped-Slicer's fallback rule,
//! every policy end to end on a small GPU, determinism of a study, and `analyze`'s errors.

mod common;

use std::path::Path;

use gpumodel::policy::partition::{brute_force, ilp, water_fill, Need, Problem};
use gpumodel::policy::warped_slicer::{choose, Choice};
use gpumodel::policy::{execute, PolicySpec, Workload, WsParams};
use gpumodel::study::{self, Mode, Setup, Task};
use proptest::prelude::*;

/// Non-decreasing curves of length 1..=6 with plateaus, CTA footprints and an SM that
/// holds at least one CTA of each kernel.
fn problems() -> impl Strategy<Value = Problem> {
    (2usize..=3)
        .prop_flat_map(|k| {
            (
                prop::collection::vec(prop::collection::vec(0u8..4, 1..=6), k),
                prop::collection::vec((1u64..5, 0u64..4), k),
                0u64..10,
            )
        })
        .prop_map(|(steps, needs, slack)| {
            let perf: Vec<Vec<f64>> = steps
                .iter()
                .map(|s| {
                    let mut acc = 1.0;
                    s.iter()
                        .map(|&d| {
                            acc += d as f64;
                            acc
                        })
                        .collect()
                })
                .collect();
            let need: Vec<Need> = needs.iter().map(|&(r, m)| [0, 0, r, m, 1]).collect();
            let regs: u64 = need.iter().map(|n| n[2]).sum::<u64>() + slack;
            let smem: u64 = need.iter().map(|n| n[3]).sum::<u64>() + slack;
            Problem {
                perf,
                need,
                cap: [0, 0, regs, smem, 8],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// On monotone curves water filling (Algorithm 1) is an exact max-min solver: its
    /// minimum equals brute force's, and so does the ILP's.
    #[test]
    fn water_filling_and_ilp_equal_brute_force(pb in problems()) {
        let b = brute_force(&pb).unwrap();
        let w = water_fill(&pb).unwrap();
        let i = ilp(&pb).unwrap();
        prop_assert!(pb.fits(&w.ctas) && pb.fits(&i.ctas));
        prop_assert!((w.min_perf() - b.min_perf()).abs() < 1e-9, "water {:?} brute {:?}", w, b);
        prop_assert!((i.min_perf() - b.min_perf()).abs() < 1e-9, "ilp {:?} brute {:?}", i, b);
    }
}

#[test]
fn ilp_equals_brute_force_on_non_monotone_curves() {
    // Cache-sensitive curves (performance falls past a point) where greedy filling may
    // stop early; the ILP stays exact.
    let pb = Problem {
        perf: vec![
            vec![0.2, 0.5, 1.0, 0.6, 0.4],
            vec![0.3, 0.9, 0.5, 1.0],
            vec![1.0, 0.8, 0.6],
        ],
        need: vec![[0, 0, 0, 0, 1]; 3],
        cap: [0, 0, 0, 0, 8],
    };
    assert_eq!(
        ilp(&pb).unwrap().min_perf(),
        brute_force(&pb).unwrap().min_perf()
    );
}

#[test]
fn fallback_to_spatial_when_a_kernel_loses_more_than_its_share() {
    let need = vec![[0, 0, 0, 0, 1]; 2];
    let cap = [0, 0, 0, 0, 4];
    let p = WsParams::default();
    // Both scale linearly to 4 CTAs: any split of 4 slots keeps ≤ 3/4 of one and ≤ 1/4 of
    // the other, or 1/2 each: (2,2) loses 50% < 60% → intra-SM.
    let lin = vec![vec![1.0, 2.0, 3.0, 4.0]; 2];
    assert!(matches!(choose(&lin, &need, cap, &p), Choice::Intra(ref x) if x.ctas == vec![2, 2]));
    // With 3 slots (2,1) leaves one kernel at 1/4 of its peak: loses 75% > 60% → spatial.
    let c = choose(&lin, &need, [0, 0, 0, 0, 3], &p);
    assert!(
        matches!(c, Choice::Spatial(ref why) if why.contains("loses more than 60%")),
        "{c:?}"
    );
    // Three kernels: the limit is 40%.
    let three = vec![vec![1.0, 1.0, 1.0]; 3];
    assert!(matches!(
        choose(&three, &[need[0]; 3], cap, &p),
        Choice::Intra(_)
    ));
    // Nothing fits: spatial, with the reason.
    let big = vec![[0, 0, 0, 40, 1]; 2];
    let c = choose(&lin, &big, [0, 0, 0, 64, 8], &p);
    assert!(
        matches!(c, Choice::Spatial(ref why) if why.contains("does not fit")),
        "{c:?}"
    );
}

fn quick_ws() -> WsParams {
    WsParams {
        warmup: 1000,
        sample: 1000,
        settle: 200,
        ..WsParams::default()
    }
}

/// Every policy of `all` that runs budget workloads (`pt` runs kernels once only).
fn all_policies() -> Vec<PolicySpec> {
    PolicySpec::all_names()
        .iter()
        // The persistent-thread policies run kernels once (completion mode only).
        .filter(|n| !["pt", "sim", "slate"].contains(n))
        .map(|n| match PolicySpec::from_name(n).unwrap() {
            PolicySpec::WarpedSlicer(_) => PolicySpec::WarpedSlicer(quick_ws()),
            PolicySpec::WsIlp(_) => PolicySpec::WsIlp(quick_ws()),
            p => p,
        })
        .collect()
}

/// Every policy runs a compute + memory pair to its budgets; partitions are reported; the
/// oracle is at least as good as every fixed plan it contains.
#[test]
fn every_policy_runs_a_pair_to_its_budgets() {
    let spec = common::fermi_ws(4);
    let tick = |_: usize, _: usize| {};
    let setup = Setup {
        spec: &spec,
        mode: Mode::Budget { window: 15_000 },
        max_cycles: 10_000_000,
        fast_forward: None,
        progress: &tick,
    };
    let benches = study::load(
        &setup,
        vec![
            ("mm".into(), "compute".into(), common::ws_app("mm")),
            ("blk".into(), "memory".into(), common::ws_app("blk")),
        ],
    )
    .unwrap();
    let task = Task::new(
        vec!["mm".into(), "blk".into()],
        "c+m".into(),
        all_policies(),
    );
    let w = &study::run_tasks(&setup, &benches, std::slice::from_ref(&task)).unwrap()[0];
    assert_eq!(w.runs.len(), all_policies().len());
    for r in &w.runs {
        for (a, b) in r.apps.iter().zip(&benches) {
            assert!(
                a.warp_insts >= b.alone.warp_insts,
                "{} {}",
                r.policy,
                a.name
            );
            assert!(
                a.progress > 0.0 && a.progress <= 1.2,
                "{} {} {}",
                r.policy,
                a.name,
                a.progress
            );
        }
        assert!(
            r.summary.stp > 0.5 && r.summary.stp < 2.5,
            "{}: {:?}",
            r.policy,
            r.summary
        );
    }
    let even = w.run("even").unwrap();
    assert!(even
        .ctas
        .as_ref()
        .is_some_and(|c| c.iter().all(|&x| x >= 1)));
    let ws = w.run("warped-slicer").unwrap();
    assert!(ws.partition == "spatial" || ws.ctas.is_some(), "{ws:?}");
    assert!(
        ws.log.iter().any(|l| l.contains("sampled IPC")),
        "{:?}",
        ws.log
    );
    let oracle = w.run("oracle").unwrap();
    assert!(oracle.runs > 2);
    for p in ["left-over", "spatial"] {
        assert!(oracle.summary.combined_ipc >= w.run(p).unwrap().summary.combined_ipc - 1e-9);
    }
}

/// The same workload twice: identical results, bit for bit.
#[test]
fn policies_are_deterministic() {
    let spec = common::fermi_ws(4);
    let apps = [common::ws_app("hot"), common::ws_app("nn")];
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: gpumodel::engine::RunMode::Budget(vec![60_000, 60_000]),
    };
    for p in [
        PolicySpec::WarpedSlicer(quick_ws()),
        PolicySpec::Fcfs(Default::default()),
    ] {
        let a = execute(p.build().as_ref(), &w, 10_000_000).unwrap();
        let b = execute(p.build().as_ref(), &w, 10_000_000).unwrap();
        assert_eq!(
            serde_json::to_string(&a.stats).unwrap(),
            serde_json::to_string(&b.stats).unwrap()
        );
        assert_eq!(a.log, b.log);
    }
}

/// A whole (tiny) study file, run twice: the same metrics.json bytes.
#[test]
fn a_study_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/warped-slicer");
    let text = format!(
        r#"name = "tiny"
gpu = "fermi-ws"
window = 8000
curve_window = 3000
policies = ["left-over", "even", "warped-slicer"]
[params.warped-slicer]
warmup = 1000
sample = 1000
[[benches]]
name = "dxt"
path = "{t}/dxt.toml"
class = "compute"
[[benches]]
name = "knn"
path = "{t}/knn.toml"
class = "memory"
[[groups]]
name = "c+m"
kind = "cross"
a = ["dxt"]
b = ["knn"]
"#,
        t = traces.display()
    );
    let path = dir.path().join("study.toml");
    std::fs::write(&path, text).unwrap();
    let none = |_: &str, _: usize, _: usize| {};
    let a = study::run_study(&path, &none).unwrap();
    let b = study::run_study(&path, &none).unwrap();
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    assert_eq!(a.workloads.len(), 1);
    assert_eq!(a.curves.len(), 2);
    assert!(a.curves.iter().all(|c| c.points.iter().any(|p| p.1 == 1.0)));
}

#[test]
fn a_study_file_with_an_unknown_benchmark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "name = \"x\"\ngpu = \"fermi-ws\"\nwindow = 10\npolicies = [\"even\"]\nbenches = []\n[[groups]]\nname = \"g\"\nkind = \"within\"\na = [\"nope\", \"x\"]\n",
    )
    .unwrap();
    let e = study::run_study(&path, &|_, _, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.toml") && e.contains("`nope`"), "{e}");
}

#[test]
fn analyze_rejects_bad_arguments_clearly() {
    let cases: [(&[&str], &str); 4] = [
        (&["analyze", "--apps", "hot"], "at least two"),
        (
            &["analyze", "--apps", "hot,lbm", "--policies", "fastest"],
            "unknown policy `fastest`",
        ),
        (&["analyze", "--apps", "hot,nosuchapp"], "nosuchapp"),
        (
            &["analyze", "--apps", "hot,lbm", "--window", "0"],
            "--window",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = common::cli(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Even on two kernels that each need more than half an SM's shared memory is infeasible:
/// a clear error, not a run that never places a CTA.
#[test]
fn analyze_reports_an_infeasible_even_split() {
    let dir = tempfile::tempdir().unwrap();
    let hot = std::fs::read_to_string(common::ws_bench("hot")).unwrap();
    let big = hot.replace("smem           = \"3 KiB\"", "smem           = \"30 KiB\"");
    assert_ne!(big, hot, "the HOT spec changed: update this test");
    let p = dir.path().join("bigsmem.toml");
    std::fs::write(&p, big).unwrap();
    let ps = p.to_string_lossy().to_string();
    let apps = format!("{ps},{ps}");
    let out = dir.path().join("out");
    let (code, _, err) = common::cli(&[
        "analyze",
        "-q",
        "--apps",
        &apps,
        "--policies",
        "even",
        "--window",
        "2000",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not fit in 1/2 of an SM"), "{err}");
}

/// Warped-Slicer §IV-B: a sustained IPC change re-samples only the kernels whose IPC
/// changed; every other kernel's curve in the next partition is the one it had before.
#[test]
fn a_phase_change_resamples_only_the_changed_kernels() {
    let spec = common::fermi_ws(4);
    let mut kept = 0;
    for (x, y) in [("hot", "nn"), ("mm", "lbm"), ("blk", "knn"), ("dxt", "mvp")] {
        let apps = [common::ws_app(x), common::ws_app(y)];
        let w = Workload {
            spec: &spec,
            apps: &apps,
            mode: gpumodel::engine::RunMode::Budget(vec![150_000, 150_000]),
        };
        let p = WsParams {
            resample_change: 0.15,
            resample_epochs: 1,
            max_resamples: 6,
            ..quick_ws()
        };
        let o = execute(PolicySpec::WarpedSlicer(p).build().as_ref(), &w, 20_000_000).unwrap();
        let mut prev: Option<Vec<String>> = None;
        let mut changed: Option<Vec<usize>> = None;
        for l in &o.log {
            if let Some(rest) = l.split("sustained IPC change of ").nth(1) {
                let list = rest.split(':').next().unwrap();
                changed = Some(
                    list.split(", ")
                        .map(|s| s.trim_start_matches("app ").parse().unwrap())
                        .collect(),
                );
            } else if l.contains("sampled IPC per CTA count") {
                let curves: Vec<String> = l
                    .split('[')
                    .skip(1)
                    .map(|s| s.split(']').next().unwrap().to_string())
                    .collect();
                if let (Some(p), Some(ch)) = (&prev, changed.take()) {
                    for a in 0..curves.len().min(p.len()) {
                        if !ch.contains(&a) {
                            assert_eq!(
                                curves[a], p[a],
                                "{x}+{y}: app {a} was re-sampled: {:?}",
                                o.log
                            );
                            kept += 1;
                        }
                    }
                }
                prev = Some(curves);
            }
        }
    }
    assert!(kept > 0, "no phase change left a kernel's curve alone");
}
