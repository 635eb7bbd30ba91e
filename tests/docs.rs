//! The README and `docs/` stay true: every `gpumodel` subcommand they show has a `--help`,
//! every study file, spec and figure they name exists, the README's first screen has the
//! pitch, a figure and both set-up commands, and its "What it does not model" list names
//! every model key `tests/spec_fields.rs` declares simplified or not modelled.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<(PathBuf, String)> {
    let mut v = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v.into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect()
}

/// Lines inside ``` blocks.
fn code_lines(text: &str) -> Vec<&str> {
    let mut inside = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            inside = !inside;
        } else if inside {
            out.push(l.trim());
        }
    }
    out
}

/// The subcommand of a command line (`gpumodel SUB ...` or `cargo run --release -- SUB`).
fn subcommand(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("gpumodel ")
        .or_else(|| line.strip_prefix("cargo run --release -- "))?;
    let sub = rest.split_whitespace().next()?;
    (!sub.starts_with('-')).then(|| sub.to_string())
}

#[test]
fn every_command_shown_has_a_help() {
    let mut subs: Vec<String> = pages()
        .iter()
        .flat_map(|(_, t)| {
            code_lines(t)
                .into_iter()
                .filter_map(subcommand)
                .collect::<Vec<_>>()
        })
        .collect();
    subs.sort();
    subs.dedup();
    assert!(subs.len() >= 8, "only {subs:?}");
    for s in subs {
        let o = Command::new(env!("CARGO_BIN_EXE_gpumodel"))
            .args([s.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "`gpumodel {s} --help` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn every_file_named_exists() {
    let mut n = 0;
    for (page, text) in pages() {
        let base = page.parent().unwrap();
        for tok in text.split(|c: char| c.is_whitespace() || "`()[]<>\"',;".contains(c)) {
            let tok = tok.trim_end_matches(['.', ':']);
            let named = ["reports/", "traces/", "models/", "../reports/", "scripts/"]
                .iter()
                .any(|p| tok.starts_with(p));
            if !named || tok.contains('*') || tok.contains('<') || tok.ends_with('/') {
                continue;
            }
            if !tok.ends_with(".toml")
                && !tok.ends_with(".svg")
                && !tok.ends_with(".md")
                && !tok.ends_with(".sh")
            {
                continue;
            }
            let from_root = root().join(tok.trim_start_matches("../"));
            assert!(
                from_root.exists() || base.join(tok).exists(),
                "{} names {tok}, which does not exist",
                page.display()
            );
            n += 1;
        }
    }
    assert!(n >= 20, "only {n} files named");
}

#[test]
fn the_readme_opens_with_the_pitch_a_figure_and_both_commands() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first = lines[..40.min(lines.len())].join("\n");
    for want in [
        "![",
        "cargo run --release -- analyze",
        "cargo test --release",
        "share one",
    ] {
        assert!(
            first.contains(want),
            "the README's first 40 lines lack `{want}`"
        );
    }
    assert!(
        lines.len() <= 190,
        "README has {} lines (first screen + at most 150)",
        lines.len()
    );
}

/// Model keys `tests/spec_fields.rs` declares not modelled, or simulated only one way
/// ("validation accepts only"), or folded into another ("the memory system has one").
fn simplified_keys() -> Vec<String> {
    let src = std::fs::read_to_string(root().join("tests/spec_fields.rs")).unwrap();
    let flat: String = src
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( \"", "(\"");
    let mut keys = Vec::new();
    for part in flat.split("(\"").skip(1) {
        let Some((key, rest)) = part.split_once("\",") else {
            continue;
        };
        let reason = rest.trim_start().trim_start_matches('"');
        let simplified = reason.starts_with("validation accepts only")
            || reason.starts_with("the memory system has one");
        if simplified && key.contains('.') {
            keys.push(key.to_string());
        }
    }
    if let Some(nm) = flat.split("const NOT_MODELLED").nth(1) {
        let body = nm.split("];").next().unwrap_or("");
        for part in body.split("(\"").skip(1) {
            if let Some((key, _)) = part.split_once('"') {
                keys.push(key.to_string());
            }
        }
    }
    keys
}

#[test]
fn what_it_does_not_model_matches_the_model_fields() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = text
        .split("## What it does not model")
        .nth(1)
        .expect("README has a `What it does not model` section");
    let section = section.split("\n## ").next().unwrap();
    let keys = simplified_keys();
    assert!(
        keys.len() >= 4,
        "found only {keys:?} in tests/spec_fields.rs"
    );
    for k in keys {
        assert!(
            section.contains(&format!("`{k}`")),
            "README's not-modelled list lacks `{k}`"
        );
    }
}
