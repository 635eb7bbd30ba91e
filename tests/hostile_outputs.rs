//! Hostile input, output side (issue 44): every path `study`, `merge` and `report` write is
//! inside the output folder whatever the data names (sweep points, `out`), the up-front
//! output check refuses folders that cannot hold a file, `report` and `merge` never
//! replace their inputs, `merge` refuses damaged but self-consistent shards, `report`
//! refuses kinds and figure sets it does not know, and CSV cells cannot become formulas.
//!
//! Fixtures: a two-benchmark, two-policy study on Fermi-WS (a tenth of a second), run
//! through the CLI, whose shard and metrics.json are then edited with serde_json.

mod common;

use std::path::{Path, PathBuf};

use common::cli;
use serde_json::{json, Value};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A tiny study file in `dir` (absolute benchmark paths), with `extra` lines appended to
/// its top-level keys.
fn tiny_study(dir: &Path, extra: &str) -> PathBuf {
    let traces = repo().join("traces/warped-slicer");
    let text = format!(
        r#"name = "tiny"
gpu = "fermi-ws"
window = 4000
policies = ["left-over", "even"]
baseline = "left-over"
{extra}

[[benches]]
name = "blk"
path = "{t}/blk.toml"
class = "memory"
[[benches]]
name = "hot"
path = "{t}/hot.toml"
class = "compute"

[[groups]]
name = "memory+compute"
kind = "cross"
a = ["blk"]
b = ["hot"]
"#,
        t = traces.display()
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("study.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string(v).unwrap()).unwrap();
}

/// The tiny study's `shard-1-of-1.json`, run into `dir/shards`.
fn shard(dir: &Path) -> PathBuf {
    let study = tiny_study(&dir.join("study"), "");
    let out = dir.join("shards");
    let (code, _, err) = cli(&["-q", "study", s(&study), "--shard", "1/1", "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    out.join("shard-1-of-1.json")
}

/// The tiny study's metrics.json, run into `dir/full`.
fn metrics(dir: &Path) -> PathBuf {
    let study = tiny_study(&dir.join("study"), "");
    let out = dir.join("full");
    let (code, _, err) = cli(&["-q", "study", s(&study), "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    out.join("metrics.json")
}

/// Every file under `dir`, as paths relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_dot_dot_sweep_point_stays_inside_the_output_folder() {
    let d = tempfile::tempdir().unwrap();
    let m = metrics(d.path());
    let study = read_json(&m);
    // `report` of a sweep whose point is `..`.
    let box_ = d.path().join("box");
    std::fs::create_dir_all(&box_).unwrap();
    let sweep = json!({
        "kind": "sweep",
        "schema_version": study["schema_version"],
        "study": "tiny",
        "points": [{"overrides": [".."], "results": study}],
    });
    let input = d.path().join("sweep.json");
    write_json(&input, &sweep);
    let out = box_.join("out");
    let (code, _, err) = cli(&["report", s(&input), "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    let written = files_under(&box_);
    assert!(
        written.iter().all(|f| f.starts_with("out/")),
        "written outside the output folder: {written:?}"
    );
    assert!(written.iter().any(|f| f.starts_with("out/point../")));
    // `merge` of a shard whose outline names the point `..`.
    let sh = shard(d.path());
    let mut v = read_json(&sh);
    v["outlines"][0]["point"] = json!([".."]);
    write_json(&sh, &v);
    let box2 = d.path().join("box2");
    std::fs::create_dir_all(&box2).unwrap();
    let (_, _, err) = cli(&["merge", s(&sh), "-o", s(&box2.join("out"))]);
    let written = files_under(&box2);
    assert!(
        written.iter().all(|f| f.starts_with("out/")),
        "written outside the output folder: {written:?} ({err})"
    );
}

#[test]
fn a_study_files_out_stays_in_its_folder() {
    let d = tempfile::tempdir().unwrap();
    let elsewhere = d.path().join("elsewhere");
    for out in [
        elsewhere.display().to_string(),
        "../x/rel".to_string(),
        "a/../../x".to_string(),
        "/dev".to_string(),
        // A name no file system holds (the fuzz driver's case 68269 of seed 44: exit 1).
        format!("res{}", "€".repeat(5000)),
    ] {
        let study = tiny_study(&d.path().join("s"), &format!("out = {}", toml_str(&out)));
        let t0 = std::time::Instant::now();
        let (code, _, err) = cli(&["-q", "study", s(&study)]);
        assert_eq!(code, 2, "out = {out}: {err}");
        assert!(
            err.contains("out = ") && err.contains("study.toml") && err.len() < 1000,
            "out = {out}: {err}"
        );
        assert!(t0.elapsed().as_secs() < 5, "refused only after the run");
    }
    assert!(!elsewhere.exists());
    assert!(!d.path().join("x").exists());
    // Inside its folder (even through `..` that come back) it is obeyed; `--out` on the
    // command line is the user's choice.
    let study = tiny_study(&d.path().join("s"), r#"out = "a/../res""#);
    let (code, _, err) = cli(&["-q", "study", s(&study)]);
    assert_eq!(code, 0, "{err}");
    assert!(d.path().join("s/res/metrics.json").is_file());
    let study = tiny_study(&d.path().join("s"), r#"out = "/dev""#);
    let (code, _, err) = cli(&["-q", "study", s(&study), "--out", s(&elsewhere)]);
    assert_eq!(code, 0, "{err}");
    assert!(elsewhere.join("metrics.json").is_file());
}

fn toml_str(v: &str) -> String {
    format!("{v:?}")
}

#[test]
fn output_folders_that_cannot_hold_a_file_are_refused_up_front() {
    let d = tempfile::tempdir().unwrap();
    let study = tiny_study(&d.path().join("s"), "");
    let long = d.path().join("x".repeat(300));
    for out in ["/proc/self", "/proc/self/new", "/dev", "/sys/x", s(&long)] {
        let (code, _, err) = cli(&["-q", "study", s(&study), "--out", out]);
        assert_eq!(code, 2, "--out {out}: {err}");
        assert!(err.contains(out), "--out {out}: {err}");
        // Nothing ran: no "engine runs" line, no cap, no write error after the fact.
        assert!(!err.contains("wrote"), "{err}");
    }
    let m = metrics(d.path());
    for out in ["/proc/self", "/dev"] {
        let (code, _, err) = cli(&["report", s(&m), "-o", out]);
        assert_eq!(code, 2, "report -o {out}: {err}");
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files_under(dir)
        .into_iter()
        .map(|f| {
            let b = std::fs::read(dir.join(&f)).unwrap();
            (f, b)
        })
        .collect()
}

#[test]
fn report_never_overwrites_its_input() {
    let d = tempfile::tempdir().unwrap();
    let m = metrics(d.path());
    let dir = d.path().join("x");
    std::fs::create_dir_all(&dir).unwrap();
    // The JSON saved as X/summary.md, reported into its own folder (the default).
    let input = dir.join("summary.md");
    std::fs::copy(&m, &input).unwrap();
    let before = snapshot(&dir);
    let (code, _, err) = cli(&["report", s(&input)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("summary.md") && err.contains("input"), "{err}");
    assert_eq!(
        snapshot(&dir),
        before,
        "report wrote into its input's folder"
    );
    // results.csv as the input of `--csv`.
    std::fs::remove_file(&input).unwrap();
    let input = dir.join("results.csv");
    std::fs::copy(&m, &input).unwrap();
    let before = snapshot(&dir);
    let (code, _, err) = cli(&["report", s(&input), "--csv", "-o", s(&dir)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(snapshot(&dir), before);
    // A hard link to the input under a name report writes: the input is kept.
    std::fs::remove_file(&input).unwrap();
    let input = d.path().join("in.json");
    std::fs::copy(&m, &input).unwrap();
    std::fs::hard_link(&input, dir.join("summary.md")).unwrap();
    let (code, _, err) = cli(&["report", s(&input), "-o", s(&dir)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), std::fs::read(&m).unwrap());
}

#[test]
fn merge_never_overwrites_its_shards() {
    let d = tempfile::tempdir().unwrap();
    let sh = shard(d.path());
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    for name in ["summary.md", "metrics.json", "fig9a_fairness.svg"] {
        let input = out.join(name);
        std::fs::copy(&sh, &input).unwrap();
        let before = snapshot(&out);
        let (code, _, err) = cli(&["merge", s(&input), "-o", s(&out)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(name), "{err}");
        assert_eq!(
            snapshot(&out),
            before,
            "{name}: merge wrote into its input's folder"
        );
        std::fs::remove_file(&input).unwrap();
    }
    // Hard-linked under a name merge writes: the shard is kept.
    std::fs::hard_link(&sh, out.join("summary.md")).unwrap();
    let kept = std::fs::read(&sh).unwrap();
    let (code, _, err) = cli(&["merge", s(&sh), "-o", s(&out)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(&sh).unwrap(), kept);
}

/// `merge` of the tiny study's shard after `edit`: (exit code, stderr).
fn merge_edited(d: &Path, edit: impl Fn(&mut Value)) -> (i32, String) {
    let sh = shard(d);
    let mut v = read_json(&sh);
    edit(&mut v);
    write_json(&sh, &v);
    let (code, _, err) = cli(&["merge", s(&sh), "-o", s(&d.join("merged"))]);
    (code, err)
}

#[test]
fn merge_refuses_damaged_but_self_consistent_shards() {
    let d = tempfile::tempdir().unwrap();
    // The shard as written merges, and equals the unsharded study.
    let (code, err) = merge_edited(d.path(), |_| {});
    assert_eq!(code, 0, "{err}");
    let m = metrics(d.path());
    assert_eq!(
        std::fs::read(m).unwrap(),
        std::fs::read(d.path().join("merged/metrics.json")).unwrap()
    );
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 9] = [
        (
            "empty",
            |v| {
                v["jobs"] = json!(0);
                v["outlines"] = json!([]);
                v["outputs"] = json!([]);
            },
            "no study point",
        ),
        (
            "no workload",
            |v| {
                v["jobs"] = json!(0);
                v["outlines"][0]["tasks"] = json!([]);
                v["outputs"] = json!([]);
            },
            "no workload",
        ),
        (
            "policy",
            |v| v["outputs"][0][1]["run"]["policy"] = json!("even"),
            "policy `even`",
        ),
        (
            "apps",
            |v| v["outlines"][0]["tasks"][0]["apps"] = json!(["hot", "blk"]),
            "the run is of [blk, hot]",
        ),
        (
            "unknown app",
            |v| v["outlines"][0]["tasks"][0]["apps"] = json!(["blk", "zzz"]),
            "zzz",
        ),
        (
            "zero cycles",
            |v| v["outputs"][0][1]["run"]["apps"][0]["cycles"] = json!(0),
            "in 0 cycles",
        ),
        (
            "rate",
            |v| v["outputs"][1][1]["run"]["l2_miss_rate"] = json!(-3.0),
            "l2_miss_rate",
        ),
        (
            "alone",
            |v| v["outlines"][0]["head"]["alone"][0]["ipc"] = json!(-1e308),
            "-1e308",
        ),
        (
            "point",
            |v| v["outlines"][0]["point"] = json!([".."]),
            "`..` is not a `key=value`",
        ),
    ];
    for (what, edit, want) in cases {
        let (code, err) = merge_edited(d.path(), edit);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains("shard-1-of-1.json") && err.contains(want),
            "{what}: {err}"
        );
    }
    // Derived metrics are recomputed, not trusted: a forged STP with its cycles intact
    // merges to the true one.
    let (code, err) = merge_edited(d.path(), |v| {
        v["outputs"][0][1]["run"]["summary"]["stp"] = json!(-1e308);
        v["outputs"][0][1]["run"]["apps"][1]["slowdown"] = json!(7.0);
    });
    assert_eq!(code, 0, "{err}");
    let merged = read_json(&d.path().join("merged/metrics.json"));
    let truth = read_json(&d.path().join("full/metrics.json"));
    assert_eq!(merged, truth);
}

#[test]
fn report_refuses_unknown_kinds_and_figure_sets() {
    let d = tempfile::tempdir().unwrap();
    let m = metrics(d.path());
    let good = read_json(&m);
    let cases = [
        ("kind", json!("zzz"), "\"zzz\""),
        ("kind", json!(7), "(not a string)"),
        ("figures", json!("../../etc"), "\"../../etc\""),
        ("figures", json!("zzz"), "\"zzz\""),
    ];
    for (key, value, want) in cases {
        let mut v = good.clone();
        v[key] = value;
        let input = d.path().join("bad.json");
        write_json(&input, &v);
        let out = d.path().join("out");
        let (code, _, err) = cli(&["report", s(&input), "-o", s(&out)]);
        assert_eq!(code, 2, "{key}: {err}");
        assert!(
            err.contains("bad.json") && err.contains(key) && err.contains(want),
            "{key}: {err}"
        );
        assert!(err.contains("expected"), "{err}");
        assert!(!out.exists() || files_under(&out).is_empty());
    }
    // Inside a sweep's point, too; and in a shard's outline for `merge`.
    let input = d.path().join("sweep.json");
    let mut results = good.clone();
    results["figures"] = json!("zzz");
    let sweep = json!({
        "kind": "sweep",
        "schema_version": good["schema_version"],
        "study": "tiny",
        "points": [{"overrides": ["sm.count=8"], "results": results}],
    });
    write_json(&input, &sweep);
    let (code, _, err) = cli(&["report", s(&input), "-o", s(&d.path().join("o2"))]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = merge_edited(d.path(), |v| {
        v["outlines"][0]["head"]["figures"] = json!("../../etc")
    });
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("../../etc"), "{err}");
}

#[test]
fn csv_cells_never_start_a_formula() {
    let d = tempfile::tempdir().unwrap();
    let m = metrics(d.path());
    let mut v = read_json(&m);
    v["study"] = json!("=HYPERLINK(\"http://x\",\"y\")");
    v["workloads"][0]["category"] = json!("@SUM(A1)");
    v["workloads"][0]["runs"][0]["partition"] = json!("-2+3");
    let input = d.path().join("in.json");
    write_json(&input, &v);
    let out = d.path().join("out");
    let (code, _, err) = cli(&["report", s(&input), "--csv", "-o", s(&out)]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let mut n = 0;
    for r in rows.records() {
        for c in r.unwrap().iter() {
            let risky = c.starts_with(['=', '+', '@', '\t', '\r'])
                || (c.starts_with('-') && c.parse::<f64>().is_err());
            assert!(!risky, "formula cell {c:?}");
        }
        n += 1;
    }
    assert!(n > 0);
    assert!(text.contains("'=HYPERLINK") && text.contains("'@SUM(A1)") && text.contains("'-2+3"));
}

/// Runs `script` with bash in `cwd` with `env`; panics unless it succeeds.
fn bash(script: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> String {
    let o = std::process::Command::new("bash")
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{}: {err}", script.display());
    String::from_utf8_lossy(&o.stdout).into_owned() + &err
}

#[test]
fn slurm_scripts_escape_percent_and_end_options() {
    let d = tempfile::tempdir().unwrap();
    let slurm = repo().join("scripts/slurm");
    let bin = env!("CARGO_BIN_EXE_gpumodel");
    // The shard and merge jobs with folders whose names start with `-`.
    let study = tiny_study(&d.path().join("-study"), "");
    let env = [
        ("GPUMODEL", bin),
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_CPUS_PER_TASK", "1"),
    ];
    bash(
        &slurm.join("study-shards.sbatch"),
        &["-study/study.toml", "-shards", "1"],
        d.path(),
        &env,
    );
    assert!(d.path().join("-shards/shard-1-of-1.json").is_file());
    bash(
        &slurm.join("merge.sbatch"),
        &["-shards", "-out"],
        d.path(),
        &env,
    );
    assert!(d.path().join("-out/metrics.json").is_file());
    // submit.sh against a stand-in sbatch that records its arguments: a `%` in OUT
    // reaches sbatch's --output patterns as `%%`.
    let fake = d.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    let log = d.path().join("sbatch.log");
    let sbatch = fake.join("sbatch");
    std::fs::write(
        &sbatch,
        format!(
            "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >> '{}'\necho 42\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let out = d.path().join("run%j");
    bash(
        &slurm.join("submit.sh"),
        &[s(&study), "2", s(&out)],
        d.path(),
        &[("GPUMODEL", bin), ("PATH", &path)],
    );
    let args = std::fs::read_to_string(&log).unwrap();
    let outputs: Vec<&str> = args
        .lines()
        .filter(|l| l.starts_with("--output="))
        .collect();
    assert_eq!(outputs.len(), 2, "{args}");
    for o in outputs {
        assert!(o.contains("/run%%j/slurm-logs/"), "{o}");
    }
    assert!(out.join("shards").is_dir());
}

#[test]
fn huge_numbers_in_errors_are_compact() {
    let d = tempfile::tempdir().unwrap();
    let study = tiny_study(d.path(), "isu_split = -1e308");
    let (code, _, err) = cli(&["-q", "study", s(&study)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-1e308") && err.len() < 400, "{err}");
}
