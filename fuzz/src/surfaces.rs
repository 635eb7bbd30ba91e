//! The cases of issue 44's surfaces: study files (with or without `-o`, sharded or not),
//! `merge` of shard files (mutated, dropped, duplicated, renumbered, as arguments or a
//! folder), `report` of `metrics.json` (text and structural JSON mutations, `--csv`, an
//! input inside its own output folder), and special files in their place (a FIFO, a link to
//! `/dev/zero` or `/dev/urandom`, a folder, a dangling link, bytes that are not UTF-8).
//! Every case says where it may write (`Cx::outputs`), so a write beside the output folder
//! is a finding, and no input may name an absolute path outside the fuzz folder (the driver
//! may run as root: a `point` of `/` must not put figures in `/`).

use std::ffi::CString;
use std::fs;
use std::os::unix::fs::symlink;

use crate::case::{study_benches, Cx};
use crate::corpus::Family;
use crate::json;
use crate::mutate::BOUNDARY;

/// Replaces `rel` by a special file; returns `rel`.
pub(crate) fn special(cx: &mut Cx, rel: &str) -> String {
    let p = cx.dir.join(rel);
    if let Some(parent) = p.parent() {
        let _ = fs::create_dir_all(parent);
    }
    let _ = fs::remove_file(&p);
    let _ = fs::remove_dir_all(&p);
    let what = match cx.rng.weighted(&[5, 3, 1, 1, 1, 1]) {
        0 => {
            let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap_or_default();
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
            "a FIFO"
        }
        1 => {
            let _ = symlink("/dev/zero", &p);
            "a link to /dev/zero"
        }
        2 => {
            let _ = symlink("/dev/urandom", &p);
            "a link to /dev/urandom"
        }
        3 => {
            let _ = fs::create_dir_all(&p);
            "a folder"
        }
        4 => {
            let _ = symlink("nowhere/at/all", &p);
            "a dangling link"
        }
        _ => {
            let _ = fs::write(&p, b"{\"kind\": \"\xff\xfe\", \"x\": \xc3}");
            "not UTF-8"
        }
    };
    cx.notes.push(format!("{rel} is {what}"));
    cx.special = Some(format!("special file: {what}"));
    rel.to_string()
}

/// Turns every quoted absolute path that does not lead into `allowed` into a relative one
/// (`"/x"` -> `"_x"`), so that no mutated `out`, point or name makes a root-run driver write
/// into a system folder.
pub(crate) fn guard_abs(data: &mut [u8], allowed: &str) {
    let a = allowed.as_bytes();
    for i in 0..data.len().saturating_sub(1) {
        if (data[i] == b'"' || data[i] == b'\'')
            && data[i + 1] == b'/'
            && !data[i + 1..].starts_with(a)
        {
            data[i + 1] = b'_';
        }
    }
}

/// The folder holding the case folders and the canary (absolute paths into it are allowed).
fn work_dir(cx: &Cx) -> String {
    let d = &cx.outside.dir;
    d.rsplit_once('/').map_or(d.clone(), |(w, _)| w.to_string())
}

/// One quoted element of a one-line TOML array replaced by another of the same array
/// (duplicated names: random groups, arrivals, policies, sweep values).
fn duplicate_in_array(cx: &mut Cx, d: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(d).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let arrays: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("= [") && lines[i].contains(','))
        .collect();
    if arrays.is_empty() {
        return;
    }
    let i = *cx.rng.pick(&arrays);
    let (k, v) = lines[i].split_once("= [").unwrap_or(("", ""));
    let inner = v.trim_end().trim_end_matches(']');
    let mut items: Vec<String> = inner.split(',').map(|s| s.trim().to_string()).collect();
    let from = items[cx.rng.below(items.len())].clone();
    let to = cx.rng.below(items.len());
    items[to] = from;
    let new = format!("{k}= [{}]", items.join(", "));
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[i] = new;
    *d = (out.join("\n") + "\n").into_bytes();
    cx.notes
        .push(format!("array on line {} has a repeated element", i + 1));
}

/// In a study with a random group, every name of every one-line `a`/`b` list set to the
/// list's first: fewer distinct mixes than a `count` that the distinct names would give.
fn repeat_group_names(cx: &mut Cx, d: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(d).into_owned();
    let mut out = String::new();
    for l in text.lines() {
        let t = l.trim_start();
        let list = (t.starts_with("a =") || t.starts_with("b =")) && t.contains('[');
        match l.split_once('[').filter(|_| list) {
            Some((k, v)) => {
                let inner = v.split(']').next().unwrap_or("");
                let items: Vec<&str> = inner.split(',').map(str::trim).collect();
                let rep = vec![items[0]; items.len()].join(", ");
                out.push_str(&format!("{k}[{rep}]\n"));
            }
            None => {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    *d = out.into_bytes();
    cx.notes
        .push("every group list repeats its first name".into());
}

/// Sets the study file's `out` to a value that leaves its folder.
fn hostile_out(cx: &mut Cx, d: &mut Vec<u8>) {
    let canary = format!("{}/o", cx.outside.dir);
    let v = cx
        .rng
        .pick(&[
            "..",
            "../..",
            "../../..",
            "../x/rel",
            "",
            ".",
            "res/../..",
            "{canary}",
        ])
        .replace("{canary}", &canary);
    let text = String::from_utf8_lossy(d);
    let mut out: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("out"))
        .map(|l| format!("{l}\n"))
        .collect();
    // Top-level keys go before the first table.
    let at = out.find("\n[").map_or(0, |p| p + 1);
    out.insert_str(at, &format!("out = \"{v}\"\n"));
    *d = out.into_bytes();
    cx.notes.push(format!("study out = \"{v}\""));
}

/// A study file case: `-o out/st` (sometimes `--shard`), or no `-o` with the study file and
/// its benches in `in/st/` (then its `out` decides where results go, and that must stay
/// inside `in/st/`).
pub(crate) fn study(cx: &mut Cx) -> Vec<String> {
    let own_folder = cx.rng.chance(2, 5);
    let base = if own_folder { "in/st" } else { "in" };
    study_benches(cx, base);
    let c = cx.corpus;
    // The study file at the parsers' rate (the benches keep the engine targets' lower one).
    let scale = std::mem::replace(&mut cx.scale, 100);
    let mut d = cx.family_text(&c.studies, 75);
    cx.scale = scale;
    if cx.rng.chance(1, 5) {
        duplicate_in_array(cx, &mut d);
    }
    if cx.rng.chance(1, 10) && String::from_utf8_lossy(&d).contains("\"random\"") {
        repeat_group_names(cx, &mut d);
    }
    if cx.rng.chance(1, 8) {
        hostile_out(cx, &mut d);
    }
    if cx.rng.chance(1, 25) {
        special(cx, &format!("{base}/gpu.toml"));
        let text = String::from_utf8_lossy(&d);
        d = text
            .lines()
            .map(|l| {
                if l.trim_start().starts_with("gpu") {
                    "gpu = \"gpu.toml\"\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect::<String>()
            .into_bytes();
    }
    guard_abs(&mut d, &work_dir(cx));
    let file = format!("{base}/study.toml");
    cx.write(&file, &d);
    if cx.rng.chance(1, 25) {
        special(cx, &file);
    }
    let mut a: Vec<String> = vec!["study".into(), file];
    if own_folder {
        cx.outputs = Some(vec!["in/st".into()]);
    } else {
        let o = cx.output("out/st");
        a.push("-o".into());
        a.push(o);
        cx.outputs = Some(vec!["out/st".into()]);
        if cx.rng.chance(1, 5) {
            a.push("--shard".into());
            a.push(if cx.rng.chance(4, 5) {
                format!("{}/{}", 1 + cx.rng.below(3), 1 + cx.rng.below(3))
            } else {
                cx.rng
                    .pick(&[
                        "0/2",
                        "3/2",
                        "1/0",
                        "-1/2",
                        "1/18446744073709551616",
                        "1",
                        "/",
                        "1/2/3",
                    ])
                    .to_string()
            });
        }
    }
    a.extend(["-q", "--threads", "1"].map(String::from));
    a
}

/// Names that become folders: one sweep point's name (under `key`: `point` in shards,
/// `overrides` in a sweep's metrics.json) replaced by a path-like string in every file of
/// the set, so that the set stays consistent and the name reaches the writer.
fn rename_point(cx: &mut Cx, files: &mut [Vec<u8>], key: &str) {
    let mut names = Vec::new();
    for f in files.iter() {
        if let Some(v) = json::parse(f) {
            json::strings_under(&v, key, &mut names);
        }
    }
    if names.is_empty() {
        return;
    }
    let old = json::quoted(&cx.rng.pick(&names).clone());
    let canary = format!("{}/abs", cx.outside.dir);
    let new = json::hostile_string(&mut cx.rng, &canary);
    let new_q = json::quoted(&new);
    for f in files.iter_mut() {
        let t = String::from_utf8_lossy(f).replace(&old, &new_q);
        *f = t.into_bytes();
    }
    cx.notes.push(format!("point {old} renamed {:.60}", new_q));
}

/// A JSON input (a shard or `metrics.json`), mutated with probability `prob`%: by its tree
/// (numbers, keys, arrays, names, `kind`), by its text, or both.
fn json_mutated(cx: &mut Cx, seed: &[u8], prob: u64) -> Vec<u8> {
    let mut d = seed.to_vec();
    if cx.rng.chance(prob, 100) {
        let how = cx.rng.below(3);
        if how != 1 {
            if let Some(mut v) = json::parse(&d) {
                let canary = format!("{}/abs", cx.outside.dir);
                json::mutate(&mut cx.rng, &mut v, &canary);
                d = json::to_bytes(&v);
            }
        }
        if how != 0 {
            let fam = Family::default();
            let fam = if cx.corpus.metrics.seeds.is_empty() {
                &fam
            } else {
                &cx.corpus.metrics
            };
            d = cx.mutated_text(fam, &d, 100);
        }
    }
    guard_abs(&mut d, &work_dir(cx));
    d
}

/// `merge` of a shard set: each shard sometimes mutated, the set sometimes with a shard
/// dropped, duplicated, renumbered or renamed; given as files or as their folder; one shard
/// sometimes a special file.
pub(crate) fn merge(cx: &mut Cx) -> Vec<String> {
    let c = cx.corpus;
    let set = cx.rng.pick(&c.shards).clone();
    let mut texts: Vec<Vec<u8>> = set.iter().map(|(_, d)| d.clone()).collect();
    let renamed = cx.rng.chance(1, 6);
    if renamed {
        rename_point(cx, &mut texts, "point");
    }
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for ((name, _), data) in set.iter().zip(&texts) {
        let d = json_mutated(cx, data, if renamed { 15 } else { 55 });
        files.push((name.clone(), d));
    }
    match cx.rng.below(8) {
        0 if files.len() > 1 => {
            let i = cx.rng.below(files.len());
            cx.notes.push(format!("{} dropped", files[i].0));
            files.remove(i);
        }
        1 => {
            let i = cx.rng.below(files.len());
            let (n, d) = files[i].clone();
            cx.notes.push(format!("{n} duplicated"));
            files.push((format!("copy-{n}"), d));
        }
        2 => {
            // Renumbered: a shard claims another's number or another count.
            let i = cx.rng.below(files.len());
            if let Some(mut v) = json::parse(&files[i].1) {
                let key = *cx.rng.pick(&["shard", "of", "jobs"]);
                let val = if cx.rng.chance(1, 2) {
                    cx.rng.pick(BOUNDARY).to_string()
                } else {
                    (1 + cx.rng.below(3)).to_string()
                };
                json::set_top(&mut v, key, if val.is_empty() { "0" } else { &val });
                files[i].1 = json::to_bytes(&v);
                cx.notes.push(format!("{}: {key} = {val}", files[i].0));
            }
        }
        3 if files.len() > 1 => {
            // Contents swapped between names.
            let d0 = files[0].1.clone();
            files[0].1 = files[1].1.clone();
            files[1].1 = d0;
            cx.notes.push("shard contents swapped between names".into());
        }
        4 if cx.corpus.shards.len() > 1 => {
            // A shard of another study mixed in.
            let other = cx.rng.pick(&c.shards);
            let (n, d) = cx.rng.pick(other).clone();
            cx.notes.push(format!("{n} of another study added"));
            files.push((format!("other-{n}"), d));
        }
        _ => {}
    }
    let mut paths = Vec::new();
    for (n, d) in &files {
        let rel = format!("in/shards/{n}");
        cx.write(&rel, d);
        paths.push(rel);
    }
    if cx.rng.chance(1, 10) && !paths.is_empty() {
        let i = cx.rng.below(paths.len());
        let p = paths[i].clone();
        special(cx, &p);
    }
    let o = cx.output("out/m");
    cx.outputs = Some(vec!["out/m".into()]);
    let mut a = vec!["merge".to_string()];
    if cx.rng.chance(1, 2) {
        a.push("in/shards".into());
        if cx.rng.chance(1, 10) {
            a.push("in/shards".into());
            cx.notes.push("folder given twice".into());
        }
    } else {
        a.extend(paths);
    }
    a.extend(["-o".to_string(), o]);
    a.extend(["-q", "--threads", "1"].map(String::from));
    a
}

/// `report` of a `metrics.json` (mutated), sometimes with `--csv`, sometimes placed inside
/// its own output folder under a name the report writes (it must not be overwritten), and
/// sometimes a special file.
pub(crate) fn report(cx: &mut Cx) -> Vec<String> {
    let seeds = &cx.corpus.metrics.seeds;
    let sweeps: Vec<&Vec<u8>> = seeds
        .iter()
        .filter(|s| s.windows(11).any(|w| w == b"\"overrides\""))
        .collect();
    let renamed = !sweeps.is_empty() && cx.rng.chance(1, 6);
    let mut seed = if renamed {
        vec![(*cx.rng.pick(&sweeps)).clone()]
    } else {
        vec![cx.rng.pick(seeds).clone()]
    };
    if renamed {
        rename_point(cx, &mut seed, "overrides");
    }
    let d = json_mutated(cx, &seed[0], if renamed { 30 } else { 90 });
    let csv = cx.rng.chance(3, 10);
    let inside = cx.rng.chance(1, 15);
    let input = if inside {
        let n = if csv && cx.rng.chance(1, 2) {
            "results.csv"
        } else {
            *cx.rng.pick(&["summary.md", "metrics.json"])
        };
        format!("out/rep/{n}")
    } else {
        "in/metrics.json".to_string()
    };
    cx.write(&input, &d);
    if inside {
        cx.kept.push(input.clone());
        cx.notes
            .push(format!("input inside the output folder: {input}"));
    }
    if cx.rng.chance(1, 12) {
        special(cx, &input);
    }
    let o = if inside {
        "out/rep".to_string()
    } else {
        cx.output("out/rep")
    };
    cx.outputs = Some(vec!["out/rep".into()]);
    let mut a = vec!["report".to_string(), input, "-o".into(), o];
    if csv {
        a.push("--csv".into());
    }
    a.extend(["-q", "--threads", "1"].map(String::from));
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{build, Outside, Target};
    use crate::corpus::Corpus;
    use std::path::Path;

    /// Cases of the issue-44 targets name where they may write, keep every absolute path
    /// inside the work folder, and are the same bytes when rebuilt.
    #[test]
    fn new_target_cases_are_bounded_and_reproducible() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut corpus = Corpus::load(&repo).unwrap();
        let shard = br#"{"kind":"study-shard","schema_version":1,"shard":1,"of":1,"outlines":[{"point":["sm.count=8"]}]}"#;
        corpus
            .shards
            .push(vec![("shard-1-of-1.json".into(), shard.to_vec())]);
        corpus
            .metrics
            .push(br#"{"kind":"sweep","points":[{"overrides":["a=1"]}]}"#.to_vec());
        let work = std::env::temp_dir().join(format!("gpumodel-fuzz-test3-{}", std::process::id()));
        let _ = fs::remove_dir_all(&work);
        let outside = Outside {
            secret: work.join("canary/secret.txt").display().to_string(),
            dir: work.join("canary").display().to_string(),
            victim: work.join("canary/victim.gmt").display().to_string(),
            bomb: None,
        };
        let mut weights = vec![0; Target::ALL.len()];
        for t in [Target::Study, Target::Merge, Target::Report] {
            weights[Target::ALL.iter().position(|&x| x == t).unwrap()] = 1;
        }
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..300 {
            let dir = work.join("case-0");
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            let c = build(3, i, &dir, &corpus, &outside, &weights);
            seen.insert(c.target);
            let allowed = c.outputs.clone().expect("outputs named");
            assert!(!allowed.is_empty());
            for f in crate::findings::tree(&dir) {
                let p = dir.join(&f);
                if !p.is_file() || p.is_symlink() {
                    continue;
                }
                let d = fs::read(&p).unwrap();
                let mut g = d.clone();
                guard_abs(&mut g, &work.display().to_string());
                assert_eq!(d, g, "case {i}: {f} holds an absolute path outside");
            }
            let dir2 = work.join("case-1");
            let _ = fs::remove_dir_all(&dir2);
            fs::create_dir_all(&dir2).unwrap();
            let c2 = build(3, i, &dir2, &corpus, &outside, &weights);
            assert_eq!(c.args, c2.args, "case {i}");
        }
        assert_eq!(seen.len(), 3);
        let _ = fs::remove_dir_all(&work);
    }

    #[test]
    fn absolute_paths_outside_the_work_folder_are_made_relative() {
        let mut d = b"out = \"/dev\"\np = '/etc/x'\nq = \"/tmp/w/canary/o\" r = \"a/b\"".to_vec();
        guard_abs(&mut d, "/tmp/w");
        assert_eq!(
            d,
            b"out = \"_dev\"\np = '_etc/x'\nq = \"/tmp/w/canary/o\" r = \"a/b\"".to_vec()
        );
    }
}
