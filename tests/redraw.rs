//! Behaviour unchanged: every committed `reports/**/metrics.json` whose kind `gpumodel
//! report` draws (one study's results, a sweep, a queue study) redraws into a temporary
//! folder byte-identical to the figures and tables committed beside it. `advise` results
//! are not drawn by `report` and are skipped by name. The whole pass takes about a second.

use std::path::{Path, PathBuf};

mod common;

/// Every `metrics.json` under `dir`, in path order.
fn metrics_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            metrics_files(&p, out);
        } else if p.file_name().is_some_and(|n| n == "metrics.json") {
            out.push(p);
        }
    }
}

/// The results' `kind`, if the head of the file names one.
fn kind(path: &Path) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v.get("kind").and_then(|k| k.as_str()).map(str::to_string)
}

/// Redraws `metrics` into a temporary folder; the files `report` wrote (relative paths)
/// that are missing beside `metrics` or differ from the committed ones.
fn redraw_differences(metrics: &Path) -> (usize, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = common::cli(&[
        "report",
        metrics.to_str().unwrap(),
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "report {}: {err}", metrics.display());
    let committed = metrics.parent().unwrap();
    let written: Vec<&str> = out.lines().collect();
    assert!(
        !written.is_empty(),
        "report {} wrote nothing",
        metrics.display()
    );
    let mut bad = Vec::new();
    for p in &written {
        let rel = Path::new(p).strip_prefix(tmp.path()).unwrap();
        let new = std::fs::read(p).unwrap();
        match std::fs::read(committed.join(rel)) {
            Ok(old) if old == new => {}
            Ok(_) => bad.push(format!("{} (differs)", rel.display())),
            Err(_) => bad.push(format!("{} (not committed)", rel.display())),
        }
    }
    (written.len(), bad)
}

#[test]
fn every_committed_report_redraws_byte_identical() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    let mut files = Vec::new();
    metrics_files(&root, &mut files);
    let mut drawn = 0;
    let mut problems = Vec::new();
    for f in &files {
        if kind(f).as_deref() == Some("advise") {
            continue;
        }
        let (n, bad) = redraw_differences(f);
        drawn += n;
        for b in bad {
            problems.push(format!("{}: {b}", f.display()));
        }
    }
    assert!(
        files.len() >= 20 && drawn >= 200,
        "only {} metrics.json files, {drawn} figures and tables redrawn",
        files.len()
    );
    assert!(
        problems.is_empty(),
        "redrawn files differ from the committed ones:\n{}",
        problems.join("\n")
    );
}
