//! A small queue study (Punyala §IV) end to end: measured classes, every queued application
//! run exactly once per policy, the ILP's groups at least as good as arrival order by the
//! ILP's own objective, bit-identical results across runs, figures redrawn from the JSON.

use std::path::{Path, PathBuf};

use gpumodel::metrics::{QueueStudyResults, SlowdownMatrix};
use gpumodel::policy::pattern::{efficiency, Interference};
use gpumodel::study::queue_study::run_queue_study;

fn write_study(dir: &Path, extra: &str) -> PathBuf {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/punyala");
    let mut s = format!(
        r#"kind = "queue"
name = "tiny-queue"
gpu = "gpgpusim-60sm"
window = 6000
seed = 3
policies = ["spatial", "profile-based", "ilp", "ilp-smra", "ilp-app"]
mixes = ["equal", "A-oriented"]
ways = [{{ size = 2, queue = 7 }}]
{extra}
[profile]
points = [15, 30, 60]
knee = 0.95
[smra]
period = 1500
"#
    );
    for (n, c) in [
        ("blk", "M"),
        ("bp", "MC"),
        ("spmv", "C"),
        ("hs", "A"),
        ("nn", "A"),
    ] {
        s += &format!(
            "[[benches]]\nname = \"{n}\"\npath = \"{}\"\nclass = \"{c}\"\n",
            traces.join(format!("{n}.toml")).display()
        );
    }
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("study.toml");
    std::fs::write(&path, s).unwrap();
    path
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "gpumodel-queue-study-{name}-{}",
        std::process::id()
    ))
}

fn interference(m: &SlowdownMatrix) -> Interference {
    Interference {
        classes: m.labels.clone(),
        s: m.s.clone(),
    }
}

/// Σ e_k of `groups` with members mapped to matrix rows by `row`.
fn objective(groups: &[Vec<String>], m: &Interference, row: impl Fn(&str) -> usize) -> f64 {
    groups
        .iter()
        .map(|g| {
            let mut p = vec![0u32; m.classes.len()];
            for a in g {
                p[row(a)] += 1;
            }
            efficiency(&p, m)
        })
        .sum()
}

#[test]
fn a_small_queue_study_runs_end_to_end() {
    let dir = tmp("run");
    let path = write_study(&dir, "");
    let quiet = |_: &str, _: usize, _: usize| {};
    let r: QueueStudyResults = run_queue_study(&path, &quiet).unwrap();

    // Classes measured by the engine agree with Table I for these five.
    for a in &r.apps {
        assert_eq!(a.class, a.expected_class, "{}: {}", a.name, a.why);
        assert!(a.profiled_sms.is_some_and(|c| [15, 30, 60].contains(&c)));
    }
    assert_eq!(r.cells.len(), 2 * 5);
    let class_m = interference(&r.interference);
    let app_m = interference(r.app_interference.as_ref().unwrap());
    let class_of = |n: &str| {
        let c = &r.apps.iter().find(|a| a.name == n).unwrap().class;
        r.classes.iter().position(|x| x == c).unwrap()
    };
    let app_of = |n: &str| app_m.classes.iter().position(|x| x == n).unwrap();
    for c in &r.cells {
        // Every queued application ran exactly once, in groups of at most two.
        let mut got: Vec<String> = c.groups.iter().flatten().cloned().collect();
        let mut want = c.queue.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{} {}", c.mix, c.policy);
        assert!(c.groups.iter().all(|g| !g.is_empty() && g.len() <= 2));
        assert_eq!(c.app_ipc.len(), c.queue.len());
        assert!((c.throughput - c.warp_insts as f64 / c.cycles as f64).abs() < 1e-9);
        // Each application ran at least its budget.
        let budget: u64 = c
            .queue
            .iter()
            .map(|n| r.apps.iter().find(|a| &a.name == n).unwrap().warp_insts)
            .sum();
        assert!(c.warp_insts >= budget, "{} {}", c.mix, c.policy);
        let arrival: Vec<Vec<String>> = c.queue.chunks(2).map(|x| x.to_vec()).collect();
        match c.policy.as_str() {
            "spatial" | "profile-based" => assert_eq!(c.groups, arrival),
            "ilp" | "ilp-smra" => {
                let o = c.objective.unwrap();
                assert!((o - objective(&c.groups, &class_m, class_of)).abs() < 1e-9);
                assert!(o >= objective(&arrival, &class_m, class_of) - 1e-9);
            }
            "ilp-app" => {
                let o = c.objective.unwrap();
                assert!((o - objective(&c.groups, &app_m, app_of)).abs() < 1e-9);
                assert!(o >= objective(&arrival, &app_m, app_of) - 1e-9);
            }
            p => panic!("unexpected policy {p}"),
        }
    }
    // The same groups under equal SMs give the same runs (each group is run once).
    for mix in r.mixes() {
        let ilp = r.cell(2, &mix, "ilp").unwrap();
        let smra = r.cell(2, &mix, "ilp-smra").unwrap();
        assert_eq!(ilp.groups, smra.groups);
    }

    // Deterministic: a second run gives the same bytes.
    let again = run_queue_study(&path, &quiet).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&again).unwrap()
    );

    // Figures from the saved JSON, through the CLI.
    let json = dir.join("metrics.json");
    std::fs::write(&json, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .args(["report", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "fig2_interference.svg",
        "fig2_interference_apps.svg",
        "fig3a_throughput_2way.svg",
        "fig4a_app_ipc_2way.svg",
        "summary.md",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.len() > 200, "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_queue_study_files_are_refused_with_the_file_named() {
    let quiet = |_: &str, _: usize, _: usize| {};
    for (extra, want) in [
        ("colour = \"red\"\n", "unknown field"),
        ("max_cycles = 0\nfoo = 1\n", "unknown field"),
    ] {
        let dir = tmp("bad");
        let path = write_study(&dir, extra);
        let e = run_queue_study(&path, &quiet).unwrap_err().to_string();
        assert!(e.contains("study.toml") && e.contains(want), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let dir = tmp("badmix");
    let path = write_study(&dir, "");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"A-oriented\"", "\"X-oriented\"");
    std::fs::write(&path, text).unwrap();
    let e = run_queue_study(&path, &quiet).unwrap_err().to_string();
    assert!(
        e.contains("study.toml") && e.contains("unknown class mix `X-oriented`"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fast-forward in a queue study: on by default, `[fast_forward]` sets it, `fast_forward =
/// false` or the command line's override turns it off; the results' copy of the file says
/// what ran, and off by override is the detailed study, byte for byte but for that copy's
/// file-level keys.
#[test]
fn a_queue_study_fast_forwards_unless_told_not_to() {
    use gpumodel::study::queue_study::{run_queue_study_with, QueueStudySpec};
    let quiet = |_: &str, _: usize, _: usize| {};
    let default_dir = tmp("ff-default");
    let spec = QueueStudySpec::load(&write_study(&default_dir, "")).unwrap();
    assert_eq!(
        spec.fast_forward,
        Some(gpumodel::engine::FastForward::default())
    );
    let plain_dir = tmp("ff-plain");
    let plain = run_queue_study(&write_study(&plain_dir, "fast_forward = false"), &quiet).unwrap();
    assert_eq!(plain.config["fast_forward"], false);
    let dir = tmp("ff");
    let path = write_study(&dir, "[fast_forward]\nstride = 4\n");
    let on = run_queue_study_with(&path, None, &quiet).unwrap();
    let off = run_queue_study_with(&path, Some(None), &quiet).unwrap();
    assert_eq!(on.config["fast_forward"]["stride"], 4);
    assert_eq!(off.config["fast_forward"], false);
    let body = |r: &QueueStudyResults| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("config");
        v
    };
    assert_eq!(body(&plain), body(&off));
    // Every queued application still ran exactly once under fast-forward.
    assert_eq!(on.cells.len(), plain.cells.len());
    for (a, b) in on.cells.iter().zip(&plain.cells) {
        assert_eq!(a.queue, b.queue);
    }
    let _ = std::fs::remove_dir_all(&default_dir);
    let _ = std::fs::remove_dir_all(&plain_dir);
    let _ = std::fs::remove_dir_all(&dir);
}
