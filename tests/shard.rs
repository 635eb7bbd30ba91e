//! Scale-out: `study --shard I/N` + `merge` writes the unsharded study's files byte for
//! byte (the Warped-Slicer study, N = 1, 2, 3, 7), a missing, duplicated, foreign or
//! damaged shard is an error naming it, and a model `[sweep]` over two parameters runs,
//! draws one figure per parameter and shards like any study.
//!
//! The Warped-Slicer study here is `reports/warped-slicer/study.toml` — its 45 workloads,
//! 7 policies, occupancy curves and parameters — with the window, curve window and
//! sampling phases divided by 10 so that the 14 runs of this test take about a minute.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gpumodel(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .arg("-q")
        .args(args)
        .output()
        .expect("run gpumodel")
}

fn ok(args: &[&str]) {
    let o = gpumodel(args);
    assert!(
        o.status.success(),
        "gpumodel {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn fails(args: &[&str]) -> String {
    let o = gpumodel(args);
    assert!(!o.status.success(), "gpumodel {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The Warped-Slicer study file with its time scales divided by 10 and absolute paths.
fn small_ws_study(dir: &Path, window: u64) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("reports/warped-slicer/study.toml")).unwrap();
    let traces = repo().join("traces").display().to_string();
    let mut out = String::new();
    for line in text.lines() {
        let l = match line.split_once(" = ") {
            Some(("window", _)) => format!("window = {window}"),
            Some(("curve_window", _)) => "curve_window = 2000".into(),
            Some(("warmup", _)) => "warmup = 200".into(),
            Some(("sample", _)) => "sample = 300".into(),
            Some(("settle", _)) => "settle = 50".into(),
            _ => line.replace("../../traces", &traces),
        };
        out.push_str(&l);
        out.push('\n');
    }
    assert!(out.contains(&format!("window = {window}")) && out.contains("sample = 300"));
    let path = dir.join(format!("ws-{window}.toml"));
    std::fs::write(&path, out).unwrap();
    path
}

/// Every file under `a` (figures, tables, metrics.json; sub-folders too) is in `b` with
/// the same bytes; returns how many were compared.
fn same_files(a: &Path, b: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(a).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap();
        if p.is_dir() {
            n += same_files(&p, &b.join(name));
        } else {
            let other = std::fs::read(b.join(name))
                .unwrap_or_else(|e| panic!("{} missing in {}: {e}", name.display(), b.display()));
            assert!(
                std::fs::read(&p).unwrap() == other,
                "{} differs between {} and {}",
                name.display(),
                a.display(),
                b.display()
            );
            n += 1;
        }
    }
    n
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn sharded_and_merged_equals_unsharded_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let study = small_ws_study(tmp.path(), 4000);
    let whole = tmp.path().join("whole");
    ok(&["study", s(&study), "--out", s(&whole)]);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(whole.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(v["workloads"].as_array().unwrap().len(), 45);
    for n in [1usize, 2, 3, 7] {
        let shards = tmp.path().join(format!("shards-{n}"));
        for i in 1..=n {
            ok(&[
                "study",
                s(&study),
                "--shard",
                &format!("{i}/{n}"),
                "--out",
                s(&shards),
            ]);
        }
        let merged = tmp.path().join(format!("merged-{n}"));
        ok(&["merge", s(&shards), "-o", s(&merged)]);
        assert!(
            same_files(&whole, &merged) >= 8,
            "metrics.json, figures, tables"
        );
    }

    // A missing shard is named.
    let three = tmp.path().join("shards-3");
    let f = |i: usize| three.join(format!("shard-{i}-of-3.json"));
    let bad = tmp.path().join("bad");
    let e = fails(&["merge", s(&f(1)), s(&f(3)), "-o", s(&bad)]);
    assert!(e.contains("missing shard of 3: shard-2-of-3.json"), "{e}");
    // So is a duplicate (the same shard from two folders).
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(f(2), copy.join("shard-2-of-3.json")).unwrap();
    let e = fails(&["merge", s(&three), s(&copy), "-o", s(&bad)]);
    assert!(
        e.contains("shard 2/3 is given twice") && e.contains("copy"),
        "{e}"
    );
    // A shard of another study (another window): foreign, named.
    let other = small_ws_study(tmp.path(), 3000);
    let foreign = tmp.path().join("foreign");
    ok(&["study", s(&other), "--shard", "2/3", "--out", s(&foreign)]);
    let fp = foreign.join("shard-2-of-3.json");
    let e = fails(&["merge", s(&f(1)), s(&fp), s(&f(3)), "-o", s(&bad)]);
    assert!(
        e.contains(&format!("{} is a shard of another study", fp.display())),
        "{e}"
    );
    // Shards of different N.
    let e = fails(&[
        "merge",
        s(&f(1)),
        s(&tmp.path().join("shards-2/shard-2-of-2.json")),
        "-o",
        s(&bad),
    ]);
    assert!(e.contains("share N"), "{e}");
    // A damaged shard (a job removed) and a file that is not a shard.
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(f(3)).unwrap()).unwrap();
    v["outputs"].as_array_mut().unwrap().pop();
    let cut = copy.join("shard-3-of-3.json");
    std::fs::write(&cut, serde_json::to_string(&v).unwrap()).unwrap();
    let e = fails(&["merge", s(&f(1)), s(&f(2)), s(&cut), "-o", s(&bad)]);
    assert!(
        e.contains("incomplete or damaged") && e.contains(s(&cut)),
        "{e}"
    );
    // Hostile counts (shards claiming 2^60 shards or 2^60 jobs) are errors naming the
    // problem, never allocations of that size.
    let hostile = tmp.path().join("hostile");
    std::fs::create_dir_all(&hostile).unwrap();
    let rewrite = |i: usize, key: &str| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(f(i)).unwrap()).unwrap();
        v[key] = (1u64 << 60).into();
        let p = hostile.join(format!("{key}-{i}.json"));
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        p
    };
    let e = fails(&["merge", s(&rewrite(1, "of")), "-o", s(&bad)]);
    assert!(
        e.contains("missing shards of 1152921504606846976: shard-2-of-") && e.contains(" more"),
        "{e}"
    );
    let all: Vec<PathBuf> = (1..=3).map(|i| rewrite(i, "jobs")).collect();
    let e = fails(&["merge", s(&all[0]), s(&all[1]), s(&all[2]), "-o", s(&bad)]);
    assert!(e.contains("a damaged shard file"), "{e}");
    let e = fails(&["merge", s(&whole.join("metrics.json")), "-o", s(&bad)]);
    assert!(e.contains("not a study shard"), "{e}");
    assert!(!bad.join("metrics.json").exists());
    // Bad shard specs are usage errors.
    for spec in ["0/3", "4/3", "3", "a/b"] {
        let e = fails(&["study", s(&study), "--shard", spec, "--out", s(&bad)]);
        assert!(e.contains("is not a shard such as 2/8"), "{spec}: {e}");
    }
}

const SWEEP_STUDY: &str = r#"
name = "sweep-test"
gpu = "fermi-ws"
window = 4000
policies = ["left-over", "even", "spatial"]
baseline = "left-over"

[sweep]
"sm.count" = [8, 16]
"dram.channels" = [2, 6]

[[benches]]
name = "blk"
path = "TRACES/warped-slicer/blk.toml"
class = "memory"
[[benches]]
name = "hot"
path = "TRACES/warped-slicer/hot.toml"
class = "compute"

[[groups]]
name = "memory+compute"
kind = "cross"
a = ["blk"]
b = ["hot"]
"#;

#[test]
fn a_model_sweep_over_two_parameters_runs_draws_and_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("sweep.toml");
    let traces = repo().join("traces").display().to_string();
    std::fs::write(&study, SWEEP_STUDY.replace("TRACES", &traces)).unwrap();
    let out = tmp.path().join("out");
    ok(&["study", s(&study), "--out", s(&out)]);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(v["kind"], "sweep");
    let points = v["points"].as_array().unwrap();
    // Keys in sorted order, the last varying fastest.
    let overrides: Vec<String> = points
        .iter()
        .map(|p| {
            p["overrides"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(
        overrides,
        [
            "dram.channels=2,sm.count=8",
            "dram.channels=2,sm.count=16",
            "dram.channels=6,sm.count=8",
            "dram.channels=6,sm.count=16"
        ]
    );
    // Each point ran on its own model, and the model changes the results.
    let mut stp = Vec::new();
    for p in points {
        let r = &p["results"];
        let o = p["overrides"].as_array().unwrap();
        let ch: u64 = o[0].as_str().unwrap()[14..].parse().unwrap();
        let sm: u64 = o[1].as_str().unwrap()[9..].parse().unwrap();
        assert_eq!(r["model"]["dram"]["channels"], ch);
        assert_eq!(r["model"]["sm"]["count"], sm);
        assert_eq!(r["workloads"].as_array().unwrap().len(), 1);
        stp.push(
            r["workloads"][0]["runs"][0]["summary"]["stp"]
                .as_f64()
                .unwrap(),
        );
    }
    assert!(
        stp.windows(2).any(|w| w[0] != w[1]),
        "the swept parameters change nothing: {stp:?}"
    );
    // One figure per swept parameter, valid SVG with a line per policy; per-point figures.
    for key in ["dram.channels", "sm.count"] {
        let svg = std::fs::read_to_string(out.join(format!("sweep_{key}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let text: String = doc.descendants().filter_map(|n| n.text()).collect();
        for p in ["left-over", "even", "spatial"] {
            assert!(text.contains(p), "{key}: no series {p}");
        }
    }
    assert!(out
        .join("dram.channels=6_sm.count=16/fig6_normalized_ipc.svg")
        .is_file());
    let table = std::fs::read_to_string(out.join("sweep_summary.md")).unwrap();
    assert_eq!(table.matches("| dram.channels=").count(), 4, "{table}");
    // `report` redraws the same files from metrics.json.
    let again = tmp.path().join("again");
    ok(&["report", s(&out.join("metrics.json")), "-o", s(&again)]);
    assert_eq!(
        std::fs::read(out.join("sweep_sm.count.svg")).unwrap(),
        std::fs::read(again.join("sweep_sm.count.svg")).unwrap()
    );
    // The sweep is what shards distribute: 2 shards merge to the same bytes.
    let shards = tmp.path().join("shards");
    for i in 1..=2 {
        ok(&[
            "study",
            s(&study),
            "--shard",
            &format!("{i}/2"),
            "--out",
            s(&shards),
        ]);
    }
    let merged = tmp.path().join("merged");
    ok(&["merge", s(&shards), "-o", s(&merged)]);
    assert!(same_files(&out, &merged) > 4 * 5, "per-point figures too");
}

#[test]
fn a_bad_sweep_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = repo().join("traces").display().to_string();
    let base = SWEEP_STUDY.replace("TRACES", &traces);
    let cases = [
        (
            r#""sm.count" = [8, 16]"#,
            r#""sm.cuont" = [8, 16]"#,
            "sm.cuont",
        ),
        (
            r#""sm.count" = [8, 16]"#,
            r#""sm.count" = 8"#,
            "is not a list of values",
        ),
        (
            r#""sm.count" = [8, 16]"#,
            r#""sm.count" = []"#,
            "lists no value",
        ),
        (
            r#""sm.count" = [8, 16]"#,
            r#""sm.count" = [0, 16]"#,
            "sweep point 1",
        ),
    ];
    for (i, (from, to, want)) in cases.iter().enumerate() {
        let text = base.replace(from, to);
        assert_ne!(text, base);
        let study = tmp.path().join(format!("bad{i}.toml"));
        std::fs::write(&study, text).unwrap();
        let e = fails(&["study", s(&study), "--out", s(&tmp.path().join("o"))]);
        assert!(e.contains(want) && e.contains(s(&study)), "case {i}: {e}");
    }
}
