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

#[test]
fn every_committed_metrics_json_reads() {
    let mut n = 0;
    for p in all() {
        if p.file_name().is_none_or(|f| f != "metrics.json") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let r = match v.get("kind").and_then(|k| k.as_str()) {
            Some("queue") => serde_json::from_value::<QueueStudyResults>(v).map(|_| ()),
            Some("sweep") => serde_json::from_value::<SweepResults>(v).map(|_| ()),
            _ => serde_json::from_value::<StudyResults>(v).map(|_| ()),
        };
        r.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        n += 1;
    }
    assert!(n >= 6, "found only {n} results files");
}
