//! `gpumodel::report::render_study` and `gpumodel report`: on hand-built study results
//! (two categories, three two-application workloads and one of three applications), every
//! figure and table is written, SVGs are well-formed and byte-identical across renders,
//! Table III lists the partitions, summary.md holds the geometric means; the CLI redraws a
//! saved metrics.json and rejects malformed or foreign files naming them.

use std::path::{Path, PathBuf};

mod common;

use common::cli as gpumodel;
use gpumodel::arch::GpuSpec;
use gpumodel::metrics::{
    AppResult, BenchCurve, PolicyRun, Stalls, StudyResults, Summary, WorkloadResult, SCHEMA_VERSION,
};
use gpumodel::report::render_study;

/// One policy's run: (policy, partition, combined IPC, fairness, ANTT, long-memory stalls).
fn run(policy: &str, partition: &str, ipc: f64, fairness: f64, antt: f64, mem: u64) -> PolicyRun {
    let app = |name: &str| AppResult {
        name: name.into(),
        warp_insts: 1000,
        cycles: 2000,
        alone_warp_insts: 1000,
        alone_cycles: 1000,
        progress: fairness,
        slowdown: 1.0 / fairness,
        ipc: ipc / 2.0,
        l1_miss_rate: 0.3,
        l2_miss_rate: 0.5,
        stalls: Stalls::default(),
    };
    PolicyRun {
        policy: policy.into(),
        partition: partition.into(),
        ctas: None,
        summary: Summary {
            stp: 2.0 / antt,
            antt,
            fairness,
            combined_ipc: ipc,
            cycles: 10_000,
        },
        apps: vec![app("a"), app("b")],
        stalls: Stalls {
            short_raw: 100,
            long_memory: mem,
            unit_busy: 50,
            barrier: 10,
            idle: 40,
        },
        l1_miss_rate: 0.3,
        l2_miss_rate: 0.5,
        runs: 1,
        log: Vec::new(),
        measures: Default::default(),
    }
}

fn workload(apps: &[&str], category: &str, runs: Vec<PolicyRun>) -> WorkloadResult {
    WorkloadResult {
        name: apps.join("+"),
        apps: apps.iter().map(|a| a.to_string()).collect(),
        category: category.into(),
        runs,
    }
}

/// Combined IPC of left-over and warped-slicer in the two compute+cache workloads.
const CC: [(f64, f64); 2] = [(1.0, 1.3), (2.0, 2.5)];

fn study() -> StudyResults {
    let pair = |apps: &[&str], cat: &str, lo: f64, ws: f64, ws_part: &str, oracle: bool| {
        let mut runs = vec![
            run("left-over", "shared", lo, 0.40, 2.4, 900),
            run("even", "(4,4)", lo * 1.10, 0.55, 1.9, 800),
            run("spatial", "spatial", lo * 1.05, 0.50, 2.0, 700),
            run("warped-slicer", ws_part, ws, 0.60, 1.7, 600),
        ];
        if oracle {
            runs.push(run("oracle", ws_part, ws * 1.02, 0.62, 1.6, 580));
        }
        workload(apps, cat, runs)
    };
    let mut three = pair(&["MM", "BFS", "LBM"], "3 apps", 3.0, 3.3, "(3,2,2)", true);
    three.runs.retain(|r| r.policy != "spatial");
    StudyResults {
        baseline: String::new(),
        proposed: Some("warped-slicer".into()),
        solo: Vec::new(),
        figures: String::new(),
        slices: Vec::new(),
        ff_check: None,
        schema_version: SCHEMA_VERSION,
        study: "synthetic".into(),
        config: serde_json::json!({ "mode": "test" }),
        alone: Vec::new(),
        curves: vec![BenchCurve {
            name: "MM".into(),
            class: "compute".into(),
            max_ctas: 8,
            points: (1..=8).map(|n| (n, (n as f64 / 6.0).min(1.0))).collect(),
            pruned: Vec::new(),
            need: None,
        }],
        workloads: vec![
            pair(
                &["MM", "BFS"],
                "compute+cache",
                CC[0].0,
                CC[0].1,
                "(6,2)",
                true,
            ),
            pair(&["DXT", "LBM"], "compute+memory", 1.5, 1.65, "(5,3)", false),
            pair(
                &["HOT", "BFS"],
                "compute+cache",
                CC[1].0,
                CC[1].1,
                "(4,3)",
                true,
            ),
            three,
        ],
        model: GpuSpec::builtin("fermi-ws").expect("built-in model"),
    }
}

const FILES: [&str; 8] = [
    "fig6_normalized_ipc.svg",
    "fig8_three_kernels.svg",
    "fig3a_occupancy.svg",
    "fig9a_fairness.svg",
    "fig9b_antt.svg",
    "fig7c_stalls.svg",
    "table3_partitions.md",
    "summary.md",
];

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn renders_every_file_deterministically() {
    let r = study();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let written = render_study(&r, a.path()).unwrap();
    let expected: Vec<PathBuf> = FILES.iter().map(|f| a.path().join(f)).collect();
    assert_eq!(written, expected);
    render_study(&r, b.path()).unwrap();
    for f in FILES {
        let text = read(a.path(), f);
        if f.ends_with(".svg") {
            assert!(text.starts_with("<svg"), "{f}");
            assert!(text.trim_end().ends_with("</svg>"), "{f}");
        }
        assert_eq!(text, read(b.path(), f), "{f} differs between renders");
    }
    let fig6 = read(a.path(), "fig6_normalized_ipc.svg");
    for label in [
        "MM+BFS",
        "DXT+LBM",
        "GMEAN",
        "compute+memory",
        "warped-slicer",
    ] {
        assert!(fig6.contains(label), "fig6 lacks {label}");
    }
    assert!(!fig6.contains("MM+BFS+LBM"), "3-app workload in fig6");
    assert!(read(a.path(), "fig8_three_kernels.svg").contains("MM+BFS+LBM"));
}

#[test]
fn table3_lists_partitions() {
    let d = tempfile::tempdir().unwrap();
    render_study(&study(), d.path()).unwrap();
    let t = read(d.path(), "table3_partitions.md");
    assert!(
        t.contains("| Workload | Category | even | warped-slicer | oracle |"),
        "{t}"
    );
    assert!(
        t.contains("| MM+BFS | compute+cache | (4,4) | (6,2) | (6,2) |"),
        "{t}"
    );
    assert!(
        t.contains("| DXT+LBM | compute+memory | (4,4) | (5,3) | - |"),
        "{t}"
    );
    assert!(
        t.contains("| HOT+BFS | compute+cache | (4,4) | (4,3) | (4,3) |"),
        "{t}"
    );
    assert!(!t.contains("MM+BFS+LBM"), "{t}");
}

#[test]
fn summary_holds_geometric_means_and_headlines() {
    let d = tempfile::tempdir().unwrap();
    render_study(&study(), d.path()).unwrap();
    let s = read(d.path(), "summary.md");
    // warped-slicer over left-over in compute+cache: sqrt(1.3 * 1.25).
    let g = CC.iter().map(|(lo, ws)| ws / lo).product::<f64>().sqrt();
    let row = s
        .lines()
        .find(|l| l.starts_with("| compute+cache | 2 |"))
        .unwrap_or_else(|| panic!("no compute+cache row:\n{s}"));
    // Columns: left-over, even, spatial, warped-slicer, oracle.
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[3], "1.000", "{row}");
    assert_eq!(cells[4], "1.100", "{row}");
    assert_eq!(cells[6], format!("{g:.3}"), "{row}");
    // Overall over the three pairs, warped-slicer over even: 1 / 1.1 * each ratio.
    let all = (1.3f64 * 1.25 * 1.1).powf(1.0 / 3.0);
    let over_even = (all / 1.1 - 1.0) * 100.0;
    assert!(
        s.contains(&format!("- warped-slicer over even: {over_even:+.1}%")),
        "{s}"
    );
    assert!(s.contains("- warped-slicer / oracle: 98.0%"), "{s}");
    assert!(s.contains("| 3+ apps | 1 |"), "{s}");
}

#[test]
fn workloads_without_baseline_are_left_out() {
    // Left-Over ran in one pair only: the normalised figures hold that pair alone.
    let mut r = study();
    let keep = r.workloads[0].name.clone();
    for w in &mut r.workloads {
        if w.name != keep {
            w.runs.retain(|run| run.policy != "left-over");
        }
    }
    r.curves.clear();
    let d = tempfile::tempdir().unwrap();
    render_study(&r, d.path()).unwrap();
    let fig6 = read(d.path(), "fig6_normalized_ipc.svg");
    assert!(fig6.contains("norm. to left-over"));
    assert!(fig6.contains(&keep), "{keep}");
    for w in &r.workloads[1..] {
        if w.apps.len() == 2 {
            assert!(
                !fig6.contains(&w.name),
                "{} drawn without a baseline",
                w.name
            );
        }
    }
}

#[test]
fn a_study_without_left_over_is_normalised_to_its_first_policy() {
    let mut r = study();
    for w in &mut r.workloads {
        w.runs.retain(|run| run.policy != "left-over");
    }
    r.curves.clear();
    assert_eq!(r.baseline(), "even");
    let d = tempfile::tempdir().unwrap();
    render_study(&r, d.path()).unwrap();
    assert!(read(d.path(), "fig6_normalized_ipc.svg").contains("norm. to even"));
    assert!(read(d.path(), "summary.md").contains("baseline `even`"));
}

#[test]
fn cli_redraws_saved_results() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("metrics.json");
    std::fs::write(&json, serde_json::to_string(&study()).unwrap()).unwrap();
    let (code, out, err) = gpumodel(&["report", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), FILES.len(), "{out}");
    assert!(d.path().join("summary.md").exists());
    let o = d.path().join("figs");
    let (code, _, err) = gpumodel(&["report", json.to_str().unwrap(), "-o", o.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(o.join("fig6_normalized_ipc.svg").exists());
}

#[test]
fn cli_rejects_malformed_and_foreign_json() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("broken.json");
    std::fs::write(&bad, "{\"schema_version\": 1, \"study\": ").unwrap();
    let (code, _, err) = gpumodel(&["report", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("broken.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let mut v = serde_json::to_value(study()).unwrap();
    v["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
    let old = d.path().join("future.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let (code, _, err) = gpumodel(&["report", old.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(
        err.contains("future.json") && err.contains("schema_version"),
        "{err}"
    );

    let other = d.path().join("other.json");
    std::fs::write(&other, format!("{{\"schema_version\": {SCHEMA_VERSION}}}")).unwrap();
    let (code, _, err) = gpumodel(&["report", other.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("other.json"), "{err}");
}

/// `report --csv`: one row per workload x policy x application under a header, partition
/// labels with commas quoted, read back by a CSV reader to the same values.
#[test]
fn csv_is_tidy_and_reads_back() {
    let r = study();
    let text = gpumodel::report::csv::to_csv(&r).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, gpumodel::report::csv::COLUMNS);
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    let want: usize = r
        .workloads
        .iter()
        .flat_map(|w| &w.runs)
        .map(|p| p.apps.len())
        .sum();
    assert_eq!(rows.len(), want);
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    // The first workload's first run, its first application.
    let (w, p) = (&r.workloads[0], &r.workloads[0].runs[0]);
    assert_eq!(&rows[0][col("workload")], w.name);
    assert_eq!(&rows[0][col("policy")], p.policy);
    assert_eq!(&rows[0][col("app")], p.apps[0].name);
    assert_eq!(rows[0][col("stp")].parse::<f64>().unwrap(), p.summary.stp);
    // A triple's partition "(3,2,2)" survives the commas.
    assert!(rows.iter().any(|x| &x[col("partition")] == "(3,2,2)"));
    assert_eq!(gpumodel::report::csv::to_csv(&r).unwrap(), text);
    // Through the CLI, beside the figures.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("metrics.json");
    std::fs::write(&json, serde_json::to_string(&r).unwrap()).unwrap();
    let (rc, out, err) = gpumodel(&["report", json.to_str().unwrap(), "--csv"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("results.csv"));
    // (The CLI reads the JSON back: its floats may differ from the originals in the last
    // digit, as serde_json parses them.)
    let back: StudyResults =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("results.csv")).unwrap(),
        gpumodel::report::csv::to_csv(&back).unwrap()
    );
}

/// The gallery (`docs/gallery.md`, linked from the README): every figure it shows exists,
/// is committed SVG and parses as XML with an `<svg>` root; one per bundled study.
#[test]
fn gallery_figures_are_well_formed_svg() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gallery = std::fs::read_to_string(root.join("docs/gallery.md")).unwrap();
    let figures: Vec<&str> = gallery
        .match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &gallery[i + 2..];
            rest.find(')').map(|j| rest[..j].trim_start_matches("../"))
        })
        .filter(|l| l.ends_with(".svg"))
        .collect();
    for study in ["warped-slicer", "punyala", "sim", "slate", "ugpu"] {
        assert!(
            figures
                .iter()
                .any(|f| f.starts_with(&format!("reports/{study}/"))),
            "no gallery figure for {study}: {figures:?}"
        );
    }
    for f in &figures {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{f}");
        assert!(doc.descendants().count() > 10, "{f} is nearly empty");
    }
}

/// Warped-Slicer's §IV-A check: the full-run partition is what water filling gives on the
/// saved curves (worked out by hand below), a sampled partition within one CTA per kernel
/// of it agrees, one two CTAs off does not, and results without CTA needs get no table.
#[test]
fn the_sampling_check_recomputes_the_full_run_partition() {
    use gpumodel::report::sampling::{rows, table, FullRun};
    let spec = GpuSpec::builtin("fermi-ws").expect("built-in model");
    // Two kernels of 256 threads (8 warps, 4 K registers, no shared memory): 6 fit an SM
    // by threads (1536 on fermi-ws) and by registers (32 K). A saturates at 2 CTAs, B keeps rising: max-min water filling
    // gives A its 2 and B the remaining 4.
    let need = [256, 8, 4096, 0, 1];
    let curve = |name: &str, f: fn(u32) -> f64| BenchCurve {
        name: name.into(),
        class: "compute".into(),
        max_ctas: 6,
        points: (1..=6).map(|n| (n, f(n))).collect(),
        pruned: Vec::new(),
        need: Some(need),
    };
    let with = |ctas: Vec<u32>| {
        let mut ws = run("warped-slicer", "(x)", 2.0, 0.6, 1.5, 10);
        ws.ctas = Some(ctas);
        workload(&["A", "B"], "compute+compute", vec![ws])
    };
    let mut r = study();
    r.model = spec;
    r.curves = vec![
        curve("A", |n| (n as f64 / 2.0).min(1.0)),
        curve("B", |n| n as f64 / 6.0),
    ];
    r.workloads = vec![with(vec![3, 3]), with(vec![4, 2])];
    let got = rows(&r);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].full, FullRun::Intra(vec![2, 4]));
    assert!(got[0].within_one, "(3,3) is one CTA from (2,4)");
    assert!(!got[1].within_one, "(4,2) is two CTAs from (2,4)");
    assert!(table(&r).unwrap().contains("**1 of 2 pairs within one CTA"));
    r.curves.iter_mut().for_each(|c| c.need = None);
    assert!(table(&r).is_none());
}

/// Slate Table III from hand-built solo runs: the rows are the saved counters (hit rates in
/// percent, DRAM bytes per cycle at the model's core clock in GB/s), Slate / CUDA ratios are
/// computed; a solo run without counters (older metrics.json) gives no table, and such a
/// run still loads.
#[test]
fn slate_table3_from_solo_counters() {
    use gpumodel::metrics::{SoloCounters, SoloRun};
    let mut r = study();
    let c = |l1: f64, l2: f64, dram: f64, ipc: f64| SoloCounters {
        l1_hit_rate: l1,
        l2_hit_rate: l2,
        dram_bytes_per_cycle: dram,
        ipc,
    };
    r.solo.push(SoloRun {
        bench: "GS".into(),
        variant: "slate".into(),
        value: None,
        cycles: 900,
        alone_cycles: 1000,
        regs: 32,
        alone_regs: 24,
        ctas_per_sm: 4,
        alone_ctas_per_sm: 8,
        counters: Some(c(0.5, 0.25, 100.0, 40.0)),
        alone_counters: Some(c(0.25, 0.5, 50.0, 20.0)),
    });
    let mhz = r.model.clocks.core.mhz();
    let t = gpumodel::report::multitenancy::table3(&r, "GS").expect("a table");
    assert!(
        t.contains("| L1 hit rate (%) | 25.00 | 50.00 | 2.000 |"),
        "{t}"
    );
    assert!(
        t.contains("| L2 hit rate (%) | 50.00 | 25.00 | 0.500 |"),
        "{t}"
    );
    let dram = format!(
        "| DRAM bandwidth (GB/s) | {:.2} | {:.2} | 2.000 |",
        50.0 * mhz / 1e3,
        100.0 * mhz / 1e3
    );
    assert!(t.contains(&dram), "{t}");
    assert!(
        t.contains("| IPC (warp instructions / cycle) | 20.00 | 40.00 | 2.000 |"),
        "{t}"
    );
    assert!(
        t.contains("| kernel time (cycles) | 1000.00 | 900.00 | 0.900 |"),
        "{t}"
    );
    assert!(gpumodel::report::multitenancy::table3(&r, "BS").is_none());
    // An older solo run (no counters) loads and gives no table.
    let mut v = serde_json::to_value(&r.solo[0]).unwrap();
    v.as_object_mut().unwrap().remove("counters");
    v.as_object_mut().unwrap().remove("alone_counters");
    let old: SoloRun = serde_json::from_value(v).expect("old solo run loads");
    assert!(old.counters.is_none());
    r.solo[0] = old;
    assert!(gpumodel::report::multitenancy::table3(&r, "GS").is_none());
}

/// A kernel alone with issue-slot utilisation `isu`.
fn alone(name: &str, isu: f64) -> gpumodel::metrics::AloneResult {
    gpumodel::metrics::AloneResult {
        name: name.into(),
        class: String::new(),
        warp_insts: 1000,
        cycles: 100,
        ipc: 10.0,
        l2_mpki: 0.0,
        stalls: Stalls::default(),
        isu,
        ..Default::default()
    }
}

#[test]
fn sim_fig3_puts_measured_isu_beside_the_papers() {
    let mut r = study();
    r.figures = "sim".into();
    r.alone = vec![alone("BO", 0.5), alone("XX", 0.25)];
    let dir = tempfile::tempdir().unwrap();
    let written = render_study(&r, dir.path()).unwrap();
    assert!(written.contains(&dir.path().join("fig3_isu.svg")));
    let t = read(dir.path(), "fig3_isu.md");
    assert!(t.contains("| BO | 50.0% | 73.6% |"), "{t}");
    assert!(t.contains("| XX | 25.0% | - |"), "{t}");
    let svg = read(dir.path(), "fig3_isu.svg");
    assert!(svg.starts_with("<svg") && svg.contains("SiM Table 3"));
}
