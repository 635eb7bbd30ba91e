//! UGPU (seed 004): balanced slices isolate applications in DRAM, the policies run on
//! two, four and eight applications of an HBM model, SM handover follows the drain-vs-switch
//! rule, and a reduced study is deterministic.

mod common;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{AppSpec, RunMode};
use gpumodel::policy::{execute, PolicySpec, Workload};

/// The UGPU GPU with fewer SMs (same 4 stacks x 8 channels) so tests stay quick.
fn small() -> GpuSpec {
    GpuSpec::resolve("ugpu-80sm-hbm")
        .unwrap()
        .with_overrides(&["sm.count=16"])
        .unwrap()
}

fn ugpu_app(name: &str) -> AppSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces/ugpu")
        .join(format!("{name}.toml"));
    let a = gpumodel::trace::app::open_app(&path, &Default::default()).unwrap();
    AppSpec::new(name, a.kernels)
}

fn run(
    spec: &GpuSpec,
    apps: &[AppSpec],
    policy: &str,
    params: &[(&str, i64)],
    window: u64,
) -> gpumodel::policy::Outcome {
    let mut t = toml::Table::new();
    for (k, v) in params {
        t.insert(k.to_string(), toml::Value::Integer(*v));
    }
    let p = PolicySpec::parse(policy, &t).unwrap();
    let w = Workload {
        spec,
        apps,
        mode: RunMode::Window(window),
    };
    execute(p.build().as_ref(), &w, window * 4).unwrap()
}

fn ipc(o: &gpumodel::policy::Outcome, a: usize) -> f64 {
    let s = &o.stats.apps[a];
    s.counters.warp_insts as f64 / (s.end - s.start).max(1) as f64
}

/// Under BP a memory hog in one slice leaves the other slice's memory-bound application
/// exactly as fast as beside a compute-bound neighbour (its SMs, L2 slices and channels
/// are its own); with memory shared (MPS with the same SM split) the hog slows it.
#[test]
fn balanced_slices_do_not_interfere_in_dram() {
    let spec = small();
    let victim = ugpu_app("bh");
    let window = 30_000;
    let quiet = run(&spec, &[victim.clone(), ugpu_app("cp")], "bp", &[], window);
    let hog = run(&spec, &[victim.clone(), ugpu_app("lbm")], "bp", &[], window);
    let (q, h) = (ipc(&quiet, 0), ipc(&hog, 0));
    assert!(q > 0.0);
    assert!(
        (h - q).abs() / q < 0.005,
        "BP: bh's IPC {q:.3} beside cp, {h:.3} beside lbm"
    );
    // The same SM split with shared memory: lbm's traffic reaches bh's channels.
    let mut t = toml::Table::new();
    t.insert("high".into(), toml::Value::String("bh".into()));
    t.insert("share".into(), toml::Value::Float(0.5));
    let shared = PolicySpec::parse("mps-qos", &t).unwrap();
    let go = |other: &str| {
        let apps = [victim.clone(), ugpu_app(other)];
        let w = Workload {
            spec: &spec,
            apps: &apps,
            mode: RunMode::Window(window),
        };
        ipc(
            &execute(shared.build().as_ref(), &w, window * 4).unwrap(),
            0,
        )
    };
    let (sq, sh) = (go("cp"), go("lbm"));
    assert!(
        sh < sq * 0.95,
        "shared memory: bh's IPC {sq:.3} beside cp, {sh:.3} beside lbm (expected a slowdown)"
    );
}

#[test]
fn every_ugpu_policy_runs_two_applications() {
    let spec = small();
    let apps = [ugpu_app("pvc"), ugpu_app("dxtc")];
    for p in [
        "bp",
        "bp-bs",
        "bp-sb",
        "ugpu",
        "ugpu-ori",
        "ugpu-soft",
        "ugpu-offline",
        "ugpu-qos",
        "cd-search",
        "mps-qos",
        "bp-qos",
    ] {
        let params: &[(&str, i64)] = match p {
            "ugpu" | "ugpu-ori" | "ugpu-soft" | "cd-search" => &[("epoch", 5_000)],
            "ugpu-qos" => &[("epoch", 5_000), ("profile_cycles", 5_000)],
            "ugpu-offline" | "mps-qos" | "bp-qos" => &[("profile_cycles", 5_000)],
            _ => &[],
        };
        let o = run(&spec, &apps, p, params, 25_000);
        assert_eq!(o.stats.cycles, 25_000, "{p}");
        assert!(
            o.stats.apps.iter().all(|a| a.counters.warp_insts > 0),
            "{p}: an application made no progress: {:#?}",
            o.log
        );
    }
    // BP-BS gives the first application 3/4 of SMs and channels.
    let bs = run(&spec, &apps, "bp-bs", &[], 10_000);
    assert_eq!(bs.partition, "(12sm+24ch,4sm+8ch)");
}

#[test]
fn balanced_partitions_and_ugpu_run_four_and_eight_applications() {
    let spec = small();
    let names = ["pvc", "dxtc", "lbm", "cp", "bh", "hotspot", "fwt", "pf"];
    for n in [4, 8] {
        let apps: Vec<AppSpec> = names[..n].iter().map(|x| ugpu_app(x)).collect();
        let bp = run(&spec, &apps, "bp", &[], 10_000);
        let sm = 16 / n;
        let ch = 32 / n;
        let want = format!("({})", vec![format!("{sm}sm+{ch}ch"); n].join(","));
        assert_eq!(bp.partition, want);
        let u = run(
            &spec,
            &apps,
            "ugpu",
            &[("epoch", 2_500), ("min_sms", 1), ("delta_sms", 1)],
            10_000,
        );
        assert!(u.stats.apps.iter().all(|a| a.counters.warp_insts > 0));
        assert!(u.log.iter().any(|l| l.contains("epoch")), "{:#?}", u.log);
    }
    // Two-application partitions refuse more.
    let apps: Vec<AppSpec> = names[..4].iter().map(|x| ugpu_app(x)).collect();
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Window(1000),
    };
    assert!(PolicySpec::from_name("bp-bs")
        .unwrap()
        .build()
        .applies(&w)
        .is_err());
    // Nine do not fit eight channel indices.
    let apps: Vec<AppSpec> = (0..9).map(|_| ugpu_app("cp")).collect();
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Window(1000),
    };
    assert!(PolicySpec::from_name("bp")
        .unwrap()
        .build()
        .applies(&w)
        .is_err());
}

/// UGPU moves SMs to the compute-bound application and channels to the memory-bound one
/// on a heterogeneous pair; on an HBM model with another mapping (A100) every policy
/// still runs, pages moving with that mapping.
#[test]
fn ugpu_unbalances_a_heterogeneous_pair() {
    let spec = small();
    let apps = [ugpu_app("lbm"), ugpu_app("cp")];
    let o = run(
        &spec,
        &apps,
        "ugpu",
        &[("epoch", 5_000), ("delta_sms", 2)],
        20_000,
    );
    let moved = o
        .log
        .iter()
        .find(|l| l.contains("->"))
        .unwrap_or_else(|| panic!("no reallocation: {:#?}", o.log));
    assert!(moved.contains("(8sm+16ch,8sm+16ch) ->"), "{moved}");
    let after: Vec<&str> = moved
        .rsplit("-> ")
        .next()
        .unwrap()
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .collect();
    let sms = |s: &str| s.split("sm").next().unwrap().parse::<u32>().unwrap();
    let chs = |s: &str| {
        s.split('+')
            .nth(1)
            .unwrap()
            .trim_end_matches("ch")
            .parse::<u32>()
            .unwrap()
    };
    assert!(sms(after[0]) < 8 && chs(after[0]) > 16, "{moved}");
    assert!(sms(after[1]) > 8 && chs(after[1]) < 16, "{moved}");
    let a100 = GpuSpec::resolve("a100")
        .unwrap()
        .with_overrides(&["sm.count=20"])
        .unwrap();
    for p in [
        "bp",
        "bp-bs",
        "bp-sb",
        "ugpu",
        "ugpu-offline",
        "cd-search",
        "mps-qos",
    ] {
        let params: &[(&str, i64)] = match p {
            "ugpu" | "cd-search" => &[("epoch", 4_000)],
            "ugpu-offline" | "mps-qos" => &[("profile_cycles", 4_000)],
            _ => &[],
        };
        let o = run(&a100, &apps, p, params, 12_000);
        assert!(
            o.stats.apps.iter().all(|a| a.counters.warp_insts > 0),
            "{p} on a100: {:#?}",
            o.log
        );
    }
    let bp = run(&a100, &apps, "bp", &[], 2_000);
    assert_eq!(bp.partition, "(10sm+20ch,10sm+20ch)");
}

/// Same inputs, same bytes: a UGPU run twice.
#[test]
fn ugpu_runs_are_deterministic() {
    let spec = small();
    let apps = [ugpu_app("pvc"), ugpu_app("dxtc")];
    let a = run(&spec, &apps, "ugpu", &[("epoch", 4_000)], 20_000);
    let b = run(&spec, &apps, "ugpu", &[("epoch", 4_000)], 20_000);
    assert_eq!(
        serde_json::to_string(&a.stats).unwrap(),
        serde_json::to_string(&b.stats).unwrap()
    );
    assert_eq!(a.log, b.log);
}

/// The reduced study (`reports/ugpu/study-ci.toml`) twice: byte-identical `metrics.json`,
/// and every figure of the UGPU set plus the summary.
#[test]
fn reduced_study_is_byte_identical_and_draws_every_figure() {
    let study = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/ugpu/study-ci.toml");
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for d in &dirs {
        let (rc, _, err) = common::cli(&[
            "study",
            study.to_str().unwrap(),
            "-o",
            d.path().to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(rc, 0, "{err}");
    }
    let read = |d: &tempfile::TempDir, f: &str| std::fs::read(d.path().join(f)).unwrap();
    assert!(
        read(&dirs[0], "metrics.json") == read(&dirs[1], "metrics.json"),
        "two runs of the reduced UGPU study differ"
    );
    for f in [
        "fig4_split_heatmap.svg",
        "fig10a_stp.svg",
        "fig10b_antt.svg",
        "fig11_pagemove.svg",
        "fig12a_realloc_time.svg",
        "fig13_cd_search.svg",
        "fig14_multiprogram.svg",
        "fig16_qos.svg",
    ] {
        let svg = String::from_utf8(read(&dirs[0], f)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{f}"
        );
        assert_eq!(
            read(&dirs[0], f),
            read(&dirs[1], f),
            "{f} differs between runs"
        );
    }
    let summary = String::from_utf8(read(&dirs[0], "summary.md")).unwrap();
    for k in [
        "ugpu STP vs bp (heterogeneous)",
        "engine class",
        "QoS (mps-qos)",
    ] {
        assert!(summary.contains(k), "summary lacks `{k}`:\n{summary}");
    }
}

/// After one application of three finishes, UGPU keeps reallocating between the two
/// survivors: every epoch decides among the co-executing applications (§3.2–3.3), and a
/// decision still waiting for the decision unit's latency when an application leaves is
/// adapted to the live ones, not dropped.
#[test]
fn ugpu_keeps_reallocating_after_a_departure() {
    let spec = small();
    let apps = [ugpu_app("dxtc"), ugpu_app("lbm"), ugpu_app("cp")];
    let mut t = toml::Table::new();
    t.insert("epoch".into(), toml::Value::Integer(4_000));
    t.insert("delta_sms".into(), toml::Value::Integer(2));
    t.insert("min_sms".into(), toml::Value::Integer(1));
    let p = PolicySpec::parse("ugpu", &t).unwrap();
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Budget(vec![20_000, 600_000, 600_000]),
    };
    let o = execute(p.build().as_ref(), &w, 400_000).unwrap();
    let done = o.stats.apps[0].end;
    assert!(
        done < o.stats.apps[1].end && done < o.stats.apps[2].end,
        "dxtc must finish first: {:?}",
        o.stats.apps.iter().map(|a| a.end).collect::<Vec<_>>()
    );
    // Reallocations: "<cycle>: (before) -> (after)". The departures' own re-shares give
    // the finished application's slice away; a reallocation between lbm and cp starts
    // from dxtc holding nothing and leaves both survivors something.
    let between: Vec<&String> = o
        .log
        .iter()
        .filter(|l| l.contains(" -> ") && l.contains(": (0sm+0ch,"))
        .filter(|l| l.rsplit("-> ").next().unwrap().matches("0sm+0ch").count() == 1)
        .collect();
    assert!(
        !between.is_empty(),
        "no reallocation between lbm and cp after dxtc left: {:#?}",
        o.log
    );
}
