//! Every study file committed under `reports/` (any `.toml` with `[[benches]]`) reads and
//! passes the study checks with this build, and every committed `metrics.json` reads as
//! the results type its `kind` names — so a renamed or removed key cannot leave a bundled
//! study or its results behind.

use std::path::{Path, PathBuf};

use gpumodel::metrics::{QueueStudyResults, StudyResults, SweepResults};
use gpumodel::study::queue_study::{is_queue_study, QueueStudySpec};
use gpumodel::study::StudySpec;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn all() -> Vec<PathBuf> {
    let mut v = Vec::new();
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("reports"),
        &mut v,
    );
    v.sort();
    v
}

#[test]
fn every_bundled_study_file_loads() {
    let mut n = 0;
    for p in all() {
        if p.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        if !text.contains("[[benches]]") {
            continue;
        }
        if is_queue_study(&p) {
            QueueStudySpec::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        } else {
            let s = StudySpec::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            s.sweep_points().unwrap();
        }
        n += 1;
    }
    assert!(n >= 8, "found only {n} study files");
}

/// Every committed `metrics.json`, parsed as JSON.
fn results_files() -> Vec<(PathBuf, serde_json::Value)> {
    let v: Vec<_> = all()
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|f| f == "metrics.json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, v)
        })
        .collect();
    assert!(v.len() >= 6, "found only {} results files", v.len());
    v
}

#[test]
fn every_committed_metrics_json_reads() {
    for (p, v) in results_files() {
        let r = match v.get("kind").and_then(|k| k.as_str()) {
            Some("queue") => serde_json::from_value::<QueueStudyResults>(v).map(|_| ()),
            Some("sweep") => serde_json::from_value::<SweepResults>(v).map(|_| ()),
            Some("advise") => {
                serde_json::from_value::<gpumodel::advise::AdviceResults>(v).map(|_| ())
            }
            _ => serde_json::from_value::<StudyResults>(v).map(|_| ()),
        };
        r.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

/// Fast-forward is on by default in `study`: every committed results file says in its copy
/// of the study file whether it ran fast-forwarded (the `[fast_forward]` table) or not
/// (`false`), so none is left from before the default changed, when an absent key meant
/// every cycle simulated — unless its study file (`DIR/study.toml` or `DIR.toml` beside the
/// results' folder) says `fast_forward = false`, so that running it again still simulates
/// every cycle as the committed results did.
#[test]
fn every_committed_metrics_json_says_whether_it_fast_forwarded() {
    for (p, v) in results_files() {
        let configs: Vec<&serde_json::Value> = match v.get("points") {
            Some(points) => points
                .as_array()
                .unwrap()
                .iter()
                .map(|pt| &pt["results"]["config"])
                .collect(),
            None => vec![&v["config"]],
        };
        let dir = p.parent().unwrap();
        let pinned_to_detail = || {
            let study = [dir.join("study.toml"), dir.with_extension("toml")]
                .into_iter()
                .find(|s| s.exists());
            study.is_some_and(|s| {
                if is_queue_study(&s) {
                    QueueStudySpec::load(&s).is_ok_and(|q| q.fast_forward.is_none())
                } else {
                    StudySpec::load(&s).is_ok_and(|st| st.fast_forward.is_none())
                }
            })
        };
        for c in configs {
            let ff = c.get("fast_forward");
            assert!(
                ff.is_some_and(|f| f.is_object() || f == false) || pinned_to_detail(),
                "{}: config.fast_forward is {ff:?} and its study file does not say \
                 `fast_forward = false`; re-run the study",
                p.display()
            );
        }
    }
}
