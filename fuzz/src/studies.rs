//! Study-file seeds beyond the three tiny ones of `corpus.rs`: hand-written files for the
//! newer surfaces (`[sweep]`, random groups, `[fast_forward]`, `out`, `solo_sweep`,
//! `[slice_grid]`, the UGPU QoS policies' parameters, a queue study) and the committed study
//! files of `reports/` cut down so that they run in a fraction of a second: every bench
//! repointed at one of the three tiny benches, windows, cycle caps, epochs and profiles
//! shortened, at most three benches kept, sweeps and grids at two values, random groups at
//! two mixes. Mutations of these hit the real keys.

use std::fs;
use std::path::Path;
use std::process::Command;

/// A random group that asks for every mix its list gives (C(3,2) x 1 = 3: a name repeated
/// in `a` leaves fewer distinct mixes than `count`), a two-point sweep, a `[fast_forward]`
/// table and an `out` of its own.
pub const STUDY_RANDOM: &str = r#"name = "tiny-random"
gpu = "qv100"
window = 3000
policies = ["left-over", "even"]
baseline = "left-over"
proposed = "even"
out = "res"

[sweep]
"sm.count" = [8, 16]

[fast_forward]
window = 1000
windows = 2
waves = 2
tolerance = 0.05
stride = 4
age = false

[[benches]]
name = "va"
path = "va"
[[benches]]
name = "at"
path = "at.traceg"
[[benches]]
name = "s"
path = "s.toml"

[[groups]]
name = "mix"
kind = "random"
a = ["va", "at", "s"]
b = ["va"]
take_a = 2
take_b = 1
count = 3
seed = 7
"#;

/// UGPU-style: fixed window, the offline-profiling policies with tiny profiles, fixed SM
/// counts, a slice grid.
pub const STUDY_UGPU: &str = r#"name = "tiny-ugpu"
gpu = "qv100"
fixed_window = true
window = 4000
max_cycles = 40000
figures = "ugpu"
policies = ["bp", "ugpu-offline", "mps-qos", "bp-qos", "sm-counts"]
baseline = "bp"
proposed = "ugpu-offline"

[params.ugpu-offline]
epoch = 1000
profile_cycles = 1000
[params.mps-qos]
profile_cycles = 1000
[params.bp-qos]
profile_cycles = 1000
[params.sm-counts]
sms = { va = 40, at = 40 }

[slice_grid]
benches = ["va"]
sms = [20, 40]
channels = [8, 16]

[[benches]]
name = "va"
path = "va"
class = "memory-bound"
[[benches]]
name = "at"
path = "at.traceg"
class = "compute-bound"

[[groups]]
name = "x"
kind = "cross"
a = ["va"]
b = ["at"]
"#;

/// Completion with B-first arrivals, a solo list, a solo sweep and the Slate figures.
pub const STUDY_SOLO: &str = r#"name = "tiny-solo"
gpu = "qv100"
completion = true
arrivals = ["b-first", "together"]
arrival_fraction = 0.5
policies = ["fcfs", "slate", "pt"]
baseline = "fcfs"
proposed = "slate"
makespan_reference = "fcfs"
solo = ["pt"]
figures = "slate"
max_cycles = 2000000

[solo_sweep]
policy = "slate"
key = "task_blocks"
values = [1, 4]

[params.slate]
task_blocks = 2
[params.pt]
task_blocks = 1

[[benches]]
name = "va"
path = "va"
[[benches]]
name = "at"
path = "at.traceg"

[[groups]]
name = "pairs"
kind = "within"
a = ["va", "at"]
"#;

/// A queue study. With benches this small every application measures as one class and the
/// study stops (exit 2, "no representative application of class MC") after the class
/// measurement: it covers the queue-file parser and validation, not the queue runs.
pub const STUDY_QUEUE: &str = r#"kind = "queue"
name = "tiny-queue"
gpu = "qv100"
window = 3000
interference_window = 2000
seed = 1
policies = ["spatial", "ilp"]
mixes = ["equal"]
ways = [{ size = 2, queue = 4 }]

[smra]
period = 1000

[[benches]]
name = "va"
path = "va"
class = "M"
[[benches]]
name = "at"
path = "at.traceg"
class = "MC"
[[benches]]
name = "s"
path = "s.toml"
class = "C"
"#;

pub const EXTRA: [&str; 4] = [STUDY_RANDOM, STUDY_UGPU, STUDY_SOLO, STUDY_QUEUE];

const BENCH_PATHS: [&str; 3] = ["va", "at.traceg", "s.toml"];

/// The quoted strings of a one-line TOML array (`["a", "b"]`), or `None`.
fn string_list(v: &str) -> Option<Vec<String>> {
    let v = v.trim();
    let inner = v.strip_prefix('[')?.strip_suffix(']')?;
    let items: Vec<String> = inner
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Some(items)
}

/// A one-line array cut to its first two elements (`[3, 6, 12]` → `[3, 6]`).
fn first_two(v: &str) -> String {
    let v = v.trim();
    match v.strip_prefix('[').and_then(|x| x.split_once(']')) {
        Some((inner, _)) if !inner.contains('{') => {
            let items: Vec<&str> = inner.split(',').map(str::trim).take(2).collect();
            format!("[{}]", items.join(", "))
        }
        _ => v.to_string(),
    }
}

/// A committed study file made tiny (see the module doc); `None` when it is not a study
/// file (a model or a spec).
pub fn shrink_study(text: &str) -> Option<String> {
    if !text.contains("[[benches]]") {
        return None;
    }
    // First pass: the names of the first three benches.
    let mut kept = Vec::new();
    let mut in_bench = false;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('[') {
            in_bench = t == "[[benches]]";
        } else if in_bench {
            if let Some(v) = t
                .strip_prefix("name")
                .and_then(|r| r.trim().strip_prefix('='))
            {
                if kept.len() < 3 {
                    kept.push(v.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    let old_gpu = text.lines().any(|l| {
        l.starts_with("gpu")
            && ["gpgpusim", "k40c", "titanxp", "fermi", "ugpu-80sm"]
                .iter()
                .any(|g| l.contains(g))
    });
    let mut out = String::new();
    let (mut table, mut bench_no, mut skip) = (String::new(), 0usize, false);
    let mut group_no = 0;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if t.starts_with('[') {
            table = t.to_string();
            skip = false;
            if t == "[[benches]]" {
                bench_no += 1;
                skip = bench_no > 3;
            }
            if t == "[[groups]]" {
                group_no += 1;
                skip = group_no > 2;
            }
            if !skip {
                out.push_str(t);
                out.push('\n');
            }
            continue;
        }
        if skip {
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            out.push_str(t);
            out.push('\n');
            continue;
        };
        let key = k.trim().trim_matches('"');
        let v = v.split(" #").next().unwrap_or(v).trim();
        let new = match key {
            // Models without uniform units cannot run the sm80/sm90 traces.
            "path" if table == "[[benches]]" && old_gpu => "\"s.toml\"".into(),
            "path" if table == "[[benches]]" => {
                format!("\"{}\"", BENCH_PATHS[(bench_no + 2) % 3])
            }
            "window" => "3000".into(),
            "curve_window" | "interference_window" => "2000".into(),
            "max_cycles" => "400000".into(),
            "epoch" | "period" => "1000".into(),
            "profile_cycles" => "1000".into(),
            "warmup" | "sample" | "settle" => "200".into(),
            "count" => "2".into(),
            "grid_scale" => "1".into(),
            "take_a" | "take_b" => "1".into(),
            "ways" => "[{ size = 2, queue = 4 }]".into(),
            "out" => "\"res\"".into(),
            "a" | "b" | "benches" if string_list(v).is_some() => {
                let mut l: Vec<String> = string_list(v)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| kept.contains(n))
                    .take(2)
                    .collect();
                // Two at least, so that `within` groups still form a workload.
                for n in &kept {
                    if l.len() < 2 && !l.contains(n) {
                        l.push(n.clone());
                    }
                }
                let q: Vec<String> = l.iter().map(|n| format!("\"{n}\"")).collect();
                format!("[{}]", q.join(", "))
            }
            "sms" | "channels" => first_two(v),
            _ if table == "[sweep]" => first_two(v),
            _ => v.to_string(),
        };
        out.push_str(&format!("{} = {new}\n", k.trim()));
    }
    Some(out)
}

/// The committed study files (`git ls-files reports`, `.toml`), made tiny.
pub fn committed(repo: &Path) -> Vec<Vec<u8>> {
    let listed = Command::new("git")
        .args(["ls-files", "reports"])
        .current_dir(repo)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in listed.lines().filter(|f| f.ends_with(".toml")) {
        // The per-generation spec folders hold specs, not studies.
        if f.contains("/traces/") {
            continue;
        }
        if let Ok(t) = fs::read_to_string(repo.join(f)) {
            if let Some(s) = shrink_study(&t) {
                out.push(s.into_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_study_is_cut_down() {
        let t = "# c\nname = \"x\"\nwindow = 100000 # w\nout = \"../far\"\n[sweep]\n\"sm.count\" = [8, 16, 32]\n\
[[benches]]\nname = \"A\"\npath = \"../../traces/a.toml\"\n[[benches]]\nname = \"B\"\npath = \"b\"\n\
[[benches]]\nname = \"C\"\npath = \"c\"\n[[benches]]\nname = \"D\"\npath = \"d\"\n\
[[groups]]\nname = \"g\"\nkind = \"random\"\na = [\"D\", \"B\"]\nb = [\"D\"]\ntake_a = 2\ncount = 10\n";
        let s = shrink_study(t).unwrap();
        assert!(s.contains("window = 3000\n"), "{s}");
        assert!(s.contains("out = \"res\"\n"));
        assert!(s.contains("\"sm.count\" = [8, 16]\n"));
        assert!(s.contains("path = \"va\"\n") && s.contains("path = \"at.traceg\"\n"));
        assert!(!s.contains("\"D\"") && !s.contains("\"d\""), "{s}");
        assert!(s.contains("a = [\"B\", \"A\"]\n"), "{s}");
        assert!(s.contains("b = [\"A\", \"B\"]\n"), "{s}");
        assert!(s.contains("take_a = 1\n") && s.contains("count = 2\n"));
        assert_eq!(shrink_study("[sm]\ncount = 3\n"), None);
    }
}
