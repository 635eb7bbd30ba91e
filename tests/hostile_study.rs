//! Hostile input, study files and parameters (issue 44): every value a study file, a queue
//! study file or a policy parameter gives is checked before any simulation — duplicates,
//! zero, negative or NaN values where they mean nothing, unknown names, silent fallbacks —
//! and refused with exit 2 naming the file and the key. Nothing hangs.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::cli;

fn ws(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("traces/warped-slicer/{name}.toml"))
        .to_string_lossy()
        .into_owned()
}

/// A study file on fermi-ws with benchmarks dxt, knn and hot, `head` before the
/// benchmarks (name, gpu, policies, ...) and `tail` after them (groups, tables).
fn study(head: &str, tail: &str) -> String {
    let mut s = format!("name = \"s\"\ngpu = \"fermi-ws\"\n{head}\n");
    for n in ["dxt", "knn", "hot"] {
        s += &format!("[[benches]]\nname = \"{n}\"\npath = \"{}\"\n", ws(n));
    }
    s + tail
}

const CROSS: &str = "[[groups]]\nname = \"g\"\nkind = \"cross\"\na = [\"dxt\"]\nb = [\"knn\"]\n";

/// Runs `study FILE -o OUT` on `text`, killed after 20 s (a hang fails the test); returns
/// (exit code, stderr) and asserts that nothing was written.
fn run_study(text: &str) -> (i32, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("study.toml");
    std::fs::write(&p, text).unwrap();
    let o = d.path().join("o");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .args([
            "study",
            "-q",
            p.to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("gpumodel study still running after 20 s on:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!o.join("metrics.json").exists(), "{text}: it ran");
    (status.code().unwrap_or(-1), err)
}

/// Each study text is refused with exit 2, its message naming the file and every `want`.
fn refused(cases: &[(String, &[&str])]) {
    for (text, want) in cases {
        let (code, err) = run_study(text);
        assert_eq!(code, 2, "{want:?}: {err}\n{text}");
        assert!(err.contains("study.toml"), "{want:?}: {err}");
        for w in *want {
            assert!(err.contains(w), "{want:?}: {err}\n{text}");
        }
    }
}

#[test]
fn a_random_group_repeating_a_name_is_refused_not_a_hang() {
    let g = "[[groups]]\nname = \"r\"\nkind = \"random\"\na = [\"hot\", \"hot\", \"hot\"]\n\
             take_a = 2\ncount = 3\n";
    refused(&[(
        study("window = 8000\npolicies = [\"even\"]", g),
        &["group r", "`hot`", "twice"],
    )]);
}

#[test]
fn duplicates_are_refused() {
    let w = "window = 8000\npolicies = [\"even\"]";
    let dup_bench =
        study(w, CROSS) + &format!("[[benches]]\nname = \"dxt\"\npath = \"{}\"\n", ws("knn"));
    refused(&[
        (dup_bench, &["benchmark `dxt`", "twice"]),
        (
            study(
                w,
                "[[groups]]\nname = \"g\"\nkind = \"cross\"\na = [\"dxt\", \"dxt\"]\nb = [\"knn\"]\n",
            ),
            &["group g", "`dxt`", "twice"],
        ),
        (
            study(w, &format!("{CROSS}{}", CROSS.replace("[\"dxt\"]", "[\"hot\"]"))),
            &["group `g`", "twice"],
        ),
        (
            study("window = 8000\npolicies = [\"even\", \"fcfs\", \"even\"]", CROSS),
            &["policies", "`even`", "twice"],
        ),
        (
            study(w, &format!("{CROSS}policies = [\"fcfs\", \"fcfs\"]\n")),
            &["group g", "`fcfs`", "twice"],
        ),
        (
            study(
                "completion = true\narrivals = [\"a-first\", \"a-first\"]\npolicies = [\"even\"]",
                CROSS,
            ),
            &["arrivals", "a-first", "twice"],
        ),
        (
            study(w, &format!("[sweep]\n\"sm.count\" = [8, 8]\n{CROSS}")),
            &["sweep", "sm.count", "8", "twice"],
        ),
    ]);
}

#[test]
fn orders_of_arrival_need_two_application_workloads() {
    let g = "[[groups]]\nname = \"trio\"\nkind = \"pair-plus-one\"\na = [\"dxt\", \"knn\"]\n\
             b = [\"hot\"]\n";
    refused(&[(
        study(
            "completion = true\narrivals = [\"a-first\", \"b-first\"]\npolicies = [\"even\"]",
            g,
        ),
        &["group trio", "arrivals", "two"],
    )]);
}

#[test]
fn offline_profiles_may_not_outlast_the_cycle_cap() {
    let mut cases = Vec::new();
    for p in ["ugpu-offline", "mps-qos", "bp-qos"] {
        for v in ["3000000", "9223372036854775807"] {
            cases.push((
                study(
                    &format!(
                        "window = 8000\nmax_cycles = 400000\npolicies = [\"{p}\"]\n\
                         [params.{p}]\nprofile_cycles = {v}"
                    ),
                    CROSS,
                ),
                &["profile_cycles", "max_cycles"][..],
            ));
        }
    }
    refused(&cases);
}

#[test]
fn zero_and_nan_settings_are_refused() {
    let w = "window = 8000\npolicies = [\"even\"]";
    let ff = |kv: &str| study(&format!("{w}\n[fast_forward]\n{kv}"), CROSS);
    refused(&[
        (ff("tolerance = nan"), &["fast_forward", "tolerance"]),
        (ff("tolerance = -1"), &["fast_forward", "tolerance"]),
        (ff("waves = 0"), &["fast_forward", "waves"]),
        (ff("windows = 0"), &["fast_forward", "windows"]),
        (ff("window = 0"), &["fast_forward", "window"]),
        (
            study(&format!("{w}\nmax_cycles = 0"), CROSS),
            &["max_cycles must be positive"],
        ),
        (
            study(&format!("{w}\nisu_split = 1e308"), CROSS),
            &["isu_split", "1e308", "0 to 1"],
        ),
        (
            study(
                "window = 8000\npolicies = [\"even\"]\n[slice_grid]\nbenches = []\nsms = [4]\n\
                 channels = [2]",
                CROSS,
            ),
            &["slice_grid.benches", "empty"],
        ),
        (
            study(
                "window = 8000\npolicies = [\"even\"]\n[slice_grid]\nbenches = [\"dxt\"]\n\
                 sms = []\nchannels = [2]",
                CROSS,
            ),
            &["slice_grid.sms", "empty"],
        ),
        (
            study(
                "window = 8000\npolicies = [\"even\"]\n[slice_grid]\nbenches = [\"zzz\"]\n\
                 sms = [4]\nchannels = [2]",
                CROSS,
            ),
            &["slice_grid.benches", "`zzz`"],
        ),
    ]);
}

#[test]
fn fast_forward_flags_are_checked() {
    for (flag, v) in [
        ("--ff-tolerance", "nan"),
        ("--ff-tolerance", "-1"),
        ("--ff-waves", "0"),
        ("--ff-window", "0"),
    ] {
        let (code, out, err) = cli(&[
            "run",
            "--fast-forward",
            &format!("{flag}={v}"),
            &ws("dxt"),
            "--gpu",
            "fermi-ws",
        ]);
        assert_eq!(code, 2, "{flag} {v}: {out}{err}");
        assert!(err.contains(flag), "{flag} {v}: {err}");
    }
}

#[test]
fn queue_study_values_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/punyala");
    let mut s = "kind = \"queue\"\nname = \"q\"\ngpu = \"gpgpusim-60sm\"\nwindow = 6000\n\
                 policies = [\"spatial\"]\nmixes = [\"equal\"]\n\
                 ways = [{ size = 2, queue = 4 }]\n"
        .to_string();
    for n in ["blk", "bp"] {
        s += &format!(
            "[[benches]]\nname = \"{n}\"\npath = \"{}\"\n",
            t.join(format!("{n}.toml")).display()
        );
    }
    for (kv, want) in [
        ("[fast_forward]\ntolerance = nan", "fast_forward] tolerance"),
        ("[fast_forward]\nwaves = 0", "fast_forward] waves"),
        ("[fast_forward]\nwindow = 0", "fast_forward] window"),
        ("[thresholds]\nalpha = nan", "thresholds.alpha"),
        ("[profile]\npoints = [0, 6]", "profile.points"),
        ("[profile]\npoints = [6, 6]", "profile.points lists 6 twice"),
    ] {
        let p = d.path().join("queue.toml");
        std::fs::write(&p, format!("{s}{kv}\n")).unwrap();
        let (code, out, err) = cli(&[
            "study",
            "-q",
            p.to_str().unwrap(),
            "-o",
            d.path().join("o").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{kv}: {out}{err}");
        assert!(
            err.contains("queue.toml") && err.contains(want),
            "{kv}: {err}"
        );
    }
    for (from, to, want) in [
        (
            "[\"spatial\"]",
            "[\"spatial\", \"spatial\"]",
            "`spatial` twice",
        ),
        ("[\"equal\"]", "[\"equal\", \"Equal\"]", "`equal` twice"),
        (
            "[{ size = 2, queue = 4 }]",
            "[{ size = 2, queue = 4 }, { size = 2, queue = 4 }]",
            "ways lists",
        ),
    ] {
        let p = d.path().join("queue.toml");
        std::fs::write(&p, s.replace(from, to)).unwrap();
        let (code, out, err) = cli(&["study", "-q", p.to_str().unwrap()]);
        assert_eq!(code, 2, "{to}: {out}{err}");
        assert!(
            err.contains("queue.toml") && err.contains(want),
            "{to}: {err}"
        );
    }
}

#[test]
fn silent_fallbacks_are_errors() {
    refused(&[
        (
            study(
                "window = 8000\npolicies = [\"even\"]\nbaseline = \"fcfs\"",
                CROSS,
            ),
            &["baseline", "`fcfs`"],
        ),
        (
            study(
                "completion = true\npolicies = [\"even\"]\nmakespan_reference = \"sequential\"",
                CROSS,
            ),
            &["makespan_reference", "`sequential`"],
        ),
        (
            study(
                "window = 8000\npolicies = [\"even\"]\nsolo = [\"pt\"]",
                CROSS,
            ),
            &["solo", "completion"],
        ),
    ]);
}

#[test]
fn unknown_application_names_in_parameters_are_refused() {
    refused(&[
        (
            study(
                "window = 8000\npolicies = [\"sm-counts\"]\n[params.sm-counts]\n\
                 sms = { nothere = 3 }",
                CROSS,
            ),
            &["sm-counts", "sms", "`nothere`"],
        ),
        (
            study(
                "completion = true\npolicies = [\"sim\"]\n[params.sim]\n\
                 profiles = { \"zzz#9\" = [10, 5] }",
                CROSS,
            ),
            &["sim", "profiles", "zzz#9"],
        ),
    ]);
}

#[test]
fn a_newline_inside_a_policy_param_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("never-written");
    let (code, out, err) = cli(&[
        "analyze",
        "--apps",
        "dxt,knn",
        "--policies",
        "warped-slicer",
        "--policy-param",
        "warped-slicer.sample=3000\nloss_factor=2",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--policy-param"), "{err}");
}

/// `analyze --policies all` with eight applications: `even` (a CTA does not fit in 1/8 of
/// an SM) and `oracle` (no CTA combination fits) are skipped with the reason, said and kept
/// in the results; the other policies run.
#[test]
fn analyze_skips_policies_that_cannot_run_the_workload() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("o");
    let (code, out, err) = cli(&[
        "analyze",
        "-q",
        "--apps",
        "bfs,blk,dxt,hot,img,knn,lbm,mm",
        "--policies",
        "all",
        "--window",
        "5000",
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    for p in ["even", "oracle"] {
        assert!(
            err.contains(&format!("policy {p} skipped for workload bfs+blk+")),
            "{p}: {err}"
        );
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("metrics.json")).unwrap()).unwrap();
    let skipped: Vec<&str> = m["config"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["policy"].as_str().unwrap())
        .collect();
    assert!(
        skipped.contains(&"even") && skipped.contains(&"oracle"),
        "{skipped:?}"
    );
    assert!(
        out.contains("left-over") && out.contains("spatial"),
        "{out}"
    );
}

/// `policies = ["all"]` in a study file runs what `--policies all` runs, skipping (with the
/// reason) those that cannot run a workload in the study's mode.
#[test]
fn a_study_may_run_all_policies() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("study.toml");
    std::fs::write(&p, study("window = 4000\npolicies = [\"all\"]", CROSS)).unwrap();
    let o = d.path().join("o");
    let (code, out, err) = cli(&[
        "study",
        "-q",
        p.to_str().unwrap(),
        "-o",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("policy sim skipped for workload dxt+knn"),
        "{err}"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("metrics.json")).unwrap()).unwrap();
    let ran: Vec<&str> = m["workloads"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert!(
        ran.contains(&"oracle") && ran.contains(&"warped-slicer"),
        "{ran:?}"
    );
    assert!(!ran.contains(&"sim"), "{ran:?}");
    // `all` among other names is refused.
    refused(&[(
        study("window = 4000\npolicies = [\"all\", \"even\"]", CROSS),
        &["policies", "`all`", "alone"],
    )]);
}

#[test]
fn analyze_checks_parameters_against_its_applications_and_cap() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("never-written");
    for (param, want) in [
        ("sm-counts.sms={ nothere = 3 }", "`nothere`"),
        (
            "ugpu-offline.profile_cycles=9223372036854775807",
            "profile_cycles",
        ),
    ] {
        let policy = param.split('.').next().unwrap();
        let (code, out, err) = cli(&[
            "analyze",
            "-q",
            "--gpu",
            "qv100",
            "--apps",
            "dxt,knn",
            "--policies",
            policy,
            "--policy-param",
            param,
            "-o",
            o.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{param}: {out}{err}");
        assert!(err.contains(policy) && err.contains(want), "{param}: {err}");
    }
}

#[test]
fn windows_longer_than_the_cycle_cap_are_refused() {
    refused(&[(
        study(
            "window = 500000\nmax_cycles = 400000\npolicies = [\"even\"]",
            CROSS,
        ),
        &["window = 500000", "max_cycles = 400000"],
    )]);
}
