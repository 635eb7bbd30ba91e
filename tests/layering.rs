//! The dependency rules of ARCHITECTURE.md, read from the source text: no two files of
//! `src/` import each other, directly or round a longer circle (a parent module and its own
//! children excepted: `mod.rs` declares them), and the input layer (`trace`, `infile`,
//! `budget`) never names the engine, a policy or a study; `report` never names the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`study::plan`) of every file under `src/`, with its code (comments dropped).
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix("src").unwrap().with_extension("");
                let mut name = rel.to_string_lossy().replace('/', "::");
                for tail in ["::mod", "lib", "main"] {
                    if name.ends_with(tail) {
                        name.truncate(name.len() - tail.len());
                    }
                }
                let code: String = std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                out.insert(name, code);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(Path::new("src"), &mut out);
    out
}

/// Whether `code` names module `target` as a path (`crate::a::b`, or `super::b` from a
/// sibling), not as a prefix of a longer name.
fn names(code: &str, from: &str, target: &str) -> bool {
    let whole = |needle: &str| {
        code.match_indices(needle).any(|(i, _)| {
            let next = code[i + needle.len()..].chars().next();
            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let parent = |m: &str| {
        m.rsplit_once("::")
            .map_or(String::new(), |(p, _)| p.to_string())
    };
    let tail = target.rsplit("::").next().unwrap();
    whole(&format!("crate::{target}"))
        || (parent(from) == parent(target) && whole(&format!("super::{tail}")))
}

fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut e: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, code) in mods {
        let set = e.entry(m).or_default();
        for t in mods.keys() {
            let nested = t == m
                || t.starts_with(&format!("{m}::"))
                || m.starts_with(&format!("{t}::"))
                || t.is_empty()
                || m.is_empty();
            if !nested && names(code, m, t) {
                set.insert(t);
            }
        }
    }
    e
}

#[test]
fn no_two_files_import_each_other_round_a_circle() {
    let mods = modules();
    assert!(
        mods.len() > 100,
        "src/ not found from {:?}",
        std::env::current_dir()
    );
    let e = edges(&mods);
    // Depth-first search; a grey node reached again closes a circle.
    fn visit<'a>(
        u: &'a str,
        e: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        colour: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        found: &mut Vec<String>,
    ) {
        colour.insert(u, 1);
        stack.push(u);
        for &v in &e[u] {
            match colour.get(v).copied().unwrap_or(0) {
                0 => visit(v, e, colour, stack, found),
                1 => {
                    let at = stack.iter().position(|&s| s == v).unwrap();
                    found.push(format!("{} -> {v}", stack[at..].join(" -> ")));
                }
                _ => {}
            }
        }
        stack.pop();
        colour.insert(u, 2);
    }
    let (mut colour, mut stack, mut found) = (BTreeMap::new(), Vec::new(), Vec::new());
    for &m in e.keys() {
        if !colour.contains_key(m) {
            visit(m, &e, &mut colour, &mut stack, &mut found);
        }
    }
    assert!(
        found.is_empty(),
        "import circles between files:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_input_layer_and_the_reports_do_not_reach_into_the_engine() {
    let mods = modules();
    let rules: [(&str, &[&str]); 4] = [
        ("trace", &["engine", "policy", "study", "report"]),
        ("infile", &["engine", "policy", "study", "report"]),
        ("budget", &["engine", "policy", "study", "report", "trace"]),
        ("report", &["engine", "study"]),
    ];
    let mut broken = Vec::new();
    for (m, code) in &mods {
        for (layer, banned) in rules {
            if m == layer || m.starts_with(&format!("{layer}::")) {
                for b in banned {
                    if names(code, m, b) || code.contains(&format!("crate::{b}::")) {
                        broken.push(format!("{m} names {b}"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The circle check finds a circle when there is one (two synthetic files).
#[test]
fn a_planted_circle_is_found() {
    let mut mods = BTreeMap::new();
    mods.insert("a::x".to_string(), "use super::y::T;".to_string());
    mods.insert(
        "a::y".to_string(),
        "fn f() { crate::a::x::g() }".to_string(),
    );
    mods.insert("a::z".to_string(), "use crate::a::xy;".to_string());
    let e = edges(&mods);
    assert!(e["a::x"].contains("a::y") && e["a::y"].contains("a::x"));
    assert!(e["a::z"].is_empty(), "a::xy is not a::x");
}
