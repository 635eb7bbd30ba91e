//! What counts as a finding and where it goes: the canary files outside every case folder
//! (a secret whose marker must never appear in an output, a victim file no run may change),
//! the classification of an execution's end, and the saved reproducer of each finding under
//! `findings/<kind>-<n>/` (inputs, command, stderr, how it was generated).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::case::{Case, Target};
use crate::exec::{End, Ran};

/// The marker on the secret file's first line.
pub const MARKER: &str = "GPUMODEL-FUZZ-CANARY-5e1f";

/// Files outside the case folders, and what they held when the run started.
pub struct Canary {
    pub dir: PathBuf,
    files: Vec<(PathBuf, Vec<u8>, i64)>,
    entries: usize,
}

/// Contents and modification time of a file.
fn snapshot(p: &Path) -> (Vec<u8>, i64) {
    // Never opened unless regular: a run may have put a FIFO there.
    let regular = fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
    let data = if regular {
        fs::read(p).unwrap_or_default()
    } else {
        Vec::new()
    };
    let mtime = fs::symlink_metadata(p).map_or(-1, |m| m.mtime_nsec() + m.mtime() * 1_000_000_000);
    (data, mtime)
}

impl Canary {
    /// Creates `dir` with `secret.txt` (a trace-like first line holding the marker) and
    /// `victim.gmt`.
    pub fn create(dir: &Path) -> std::io::Result<Canary> {
        fs::create_dir_all(dir)?;
        fs::write(
            dir.join("secret.txt"),
            format!("-kernel name = {MARKER}\n{MARKER} root:x:0:0:root:/root:/bin/bash\n"),
        )?;
        fs::write(dir.join("victim.gmt"), format!("victim {MARKER}\n"))?;
        let mut files = Vec::new();
        for n in ["secret.txt", "victim.gmt"] {
            let p = dir.join(n);
            let (d, m) = snapshot(&p);
            files.push((p, d, m));
        }
        let entries = fs::read_dir(dir)?.count();
        Ok(Canary {
            dir: dir.to_path_buf(),
            files,
            entries,
        })
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// What changed outside the case folder, if anything (and puts it back).
    pub fn check(&self) -> Option<String> {
        let mut what = Vec::new();
        for (p, d, m) in &self.files {
            let (d2, m2) = snapshot(p);
            let is_file = fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
            if &d2 != d || m2 != *m || !is_file {
                what.push(format!("{} changed", p.display()));
                let _ = fs::remove_file(p);
                let _ = fs::remove_dir_all(p);
                let _ = fs::write(p, d);
            }
        }
        let n = fs::read_dir(&self.dir).map_or(0, |r| r.count());
        if n != self.entries {
            what.push(format!(
                "{} now has {n} entries, not {}",
                self.dir.display(),
                self.entries
            ));
            if let Ok(r) = fs::read_dir(&self.dir) {
                for e in r.flatten() {
                    let name = e.file_name();
                    if name != "secret.txt" && name != "victim.gmt" {
                        let _ = fs::remove_dir_all(e.path());
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        if what.is_empty() {
            None
        } else {
            // Refresh the modification times recorded for restored files.
            Some(what.join("; "))
        }
    }

    /// Re-reads the snapshot (after a restore changed modification times).
    pub fn refresh(&mut self) {
        for (p, d, m) in &mut self.files {
            let (d2, m2) = snapshot(p);
            *d = d2;
            *m = m2;
        }
    }
}

/// A folder whose entries no run may add to: the case folders' parent (a study `out` or a
/// point `..` that climbs out of the case folder lands there) and `/` (an absolute name; the
/// driver may run as root). New entries are reported; in folders the driver owns they are
/// removed, elsewhere left for a person to look at.
pub struct Watch {
    dir: PathBuf,
    /// How findings name the folder (without the run's own path, so that they group).
    label: String,
    names: BTreeSet<OsString>,
    remove: bool,
}

fn names(dir: &Path) -> BTreeSet<OsString> {
    fs::read_dir(dir).map_or_else(
        |_| BTreeSet::new(),
        |r| r.flatten().map(|e| e.file_name()).collect(),
    )
}

impl Watch {
    pub fn new(dir: &Path, label: &str, remove: bool) -> Watch {
        Watch {
            dir: dir.to_path_buf(),
            label: label.to_string(),
            names: names(dir),
            remove,
        }
    }

    /// The entries added since the last check, if any.
    pub fn check(&mut self) -> Option<String> {
        let now = names(&self.dir);
        let new: Vec<&OsString> = now.difference(&self.names).collect();
        if new.is_empty() {
            return None;
        }
        let list: Vec<String> = new
            .iter()
            .take(4)
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        if self.remove {
            for n in &new {
                let p = self.dir.join(n);
                let _ = fs::remove_dir_all(&p);
                let _ = fs::remove_file(&p);
            }
        } else {
            self.names = now.clone();
        }
        Some(format!(
            "new entries in {}: {}",
            self.label,
            list.join(", ")
        ))
    }
}

/// Every path under `dir` (relative, `/`-separated, links not followed), at most 20 000.
pub fn tree(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, rel)) = stack.pop() {
        let Ok(r) = fs::read_dir(&d) else { continue };
        for e in r.flatten() {
            if out.len() >= 20_000 {
                return out;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let r2 = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((e.path(), r2.clone()));
            }
            out.insert(r2);
        }
    }
    out
}

/// Paths created by a run outside the folders it may write (`allowed`, matched as prefixes).
pub fn stray(
    before: &BTreeSet<String>,
    after: &BTreeSet<String>,
    allowed: &[String],
) -> Option<String> {
    let new: Vec<&String> = after
        .difference(before)
        .filter(|p| !allowed.iter().any(|a| p.starts_with(a.as_str())))
        .collect();
    if new.is_empty() {
        return None;
    }
    // Only the topmost new paths (a new folder, not every file in it).
    let top: Vec<&String> = new
        .iter()
        .filter(|p| {
            !new.iter()
                .any(|q| q != *p && p.starts_with(&format!("{q}/")))
        })
        .copied()
        .take(4)
        .collect();
    let shown: Vec<String> = top.iter().map(|p| p.to_string()).collect();
    Some(format!(
        "wrote beside its output folder: {}",
        shown.join(", ")
    ))
}

/// Exit 1 where the issue asks for exit 2 (bad input to `study`, `merge`, `report`): counted
/// apart from crashes. A study's cycle cap (a real run-time failure) is not one.
pub fn exit1(target: Target, ran: &Ran) -> Option<Finding> {
    if !target.strict_exit() || ran.end != End::Exit(1) {
        return None;
    }
    let c = cause(&ran.stderr);
    let t = String::from_utf8_lossy(&ran.stderr);
    if target == Target::Study && t.contains("cycle cap of") && !t.contains("cap of 0 cycles") {
        return None;
    }
    let sig: String = c
        .chars()
        .map(|ch| if ch.is_ascii_digit() { '#' } else { ch })
        .collect();
    Some(Finding {
        kind: "exit1",
        signature: sig,
    })
}

/// A finding's class and a signature that groups findings with one cause.
pub struct Finding {
    pub kind: &'static str,
    pub signature: String,
}

/// The part of stderr that names a cause: the panic location and message, or the allocation
/// failure, with numbers of bytes dropped so that sizes do not split a group.
fn cause(stderr: &[u8]) -> String {
    let t = String::from_utf8_lossy(stderr);
    if let Some(i) = t.find("panicked at ") {
        let rest = &t[i + "panicked at ".len()..];
        let mut lines = rest.lines();
        let at = lines.next().unwrap_or("").trim_end_matches(':');
        let msg: String = lines.next().unwrap_or("").chars().take(80).collect();
        return format!("panic at {at}: {msg}");
    }
    if t.contains("memory allocation of") {
        return "memory allocation failed".into();
    }
    t.lines().last().unwrap_or("").chars().take(100).collect()
}

/// Classifies one execution; `None` when it ended as a well-behaved run does.
pub fn classify(
    ran: &Ran,
    outside: Option<&str>,
    rss_limit_kib: u64,
    input: &str,
) -> Option<Finding> {
    let leaked = |b: &[u8]| b.windows(MARKER.len()).any(|w| w == MARKER.as_bytes());
    if let Some(w) = outside {
        return Some(Finding {
            kind: "outside",
            signature: w.to_string(),
        });
    }
    let f = |kind, signature| Some(Finding { kind, signature });
    match ran.end {
        End::Timeout => return f("timeout", format!("input {input}")),
        End::Exit(101) => return f("panic", cause(&ran.stderr)),
        End::Signal(libc::SIGABRT) | End::Exit(134) => {
            let c = cause(&ran.stderr);
            let kind = if c == "memory allocation failed" {
                "oom"
            } else {
                "abort"
            };
            return f(kind, c);
        }
        End::Signal(sig) => return f("signal", format!("signal {sig}: {}", cause(&ran.stderr))),
        End::Exit(0..=2) => {}
        End::Exit(code) => return f("exit", format!("exit {code}: {}", cause(&ran.stderr))),
    }
    if leaked(&ran.stdout) || leaked(&ran.stderr) {
        return f(
            "leak",
            "the secret outside the case folder was echoed".into(),
        );
    }
    if ran.max_rss_kib > rss_limit_kib {
        return f("rss", format!("peak RSS above {} MiB", rss_limit_kib >> 10));
    }
    None
}

/// Counts findings by kind and signature and saves the first few reproducers of each.
#[derive(Default)]
pub struct Findings {
    pub by_kind: BTreeMap<&'static str, u64>,
    pub by_signature: BTreeMap<(String, String, String), (u64, String)>,
    saved: u64,
}

impl Findings {
    pub fn total(&self) -> u64 {
        self.by_kind.values().sum()
    }

    /// Records a finding and, for the first 5 of its signature and target, copies the case
    /// folder to `root/<kind>-<n>/` with `cmd.sh`, `stderr.txt` and `meta.txt`.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        root: &Path,
        finding: Finding,
        case: &Case,
        ran: &Ran,
        case_dir: &Path,
        bin: &Path,
        seed: u64,
        index: u64,
    ) {
        *self.by_kind.entry(finding.kind).or_default() += 1;
        let key = (
            finding.kind.to_string(),
            case.target.name().to_string(),
            finding.signature.clone(),
        );
        let e = self.by_signature.entry(key).or_insert((0, String::new()));
        e.0 += 1;
        if e.0 > 5 {
            return;
        }
        self.saved += 1;
        let name = format!("{}-{}", finding.kind, self.saved);
        let dst = root.join(&name);
        if e.1.is_empty() {
            e.1 = name.clone();
        }
        let _ = copy_tree(case_dir, &dst);
        let quoted: Vec<String> = case.args.iter().map(|a| shell_quote(a)).collect();
        let _ = fs::write(
            dst.join("cmd.sh"),
            format!(
                "#!/bin/sh\n# run inside this folder\ncd \"$(dirname \"$0\")\" && {} {}\n",
                bin.display(),
                quoted.join(" ")
            ),
        );
        let _ = fs::write(dst.join("stderr.txt"), &ran.stderr);
        let _ = fs::write(
            dst.join("meta.txt"),
            format!(
                "kind: {}\nsignature: {}\ntarget: {}\nseed: {seed}\nindex: {index}\nend: {:?}\nwall_ms: {}\nmax_rss_kib: {}\nnotes: {}\n",
                finding.kind,
                finding.signature,
                case.target.name(),
                ran.end,
                ran.wall.as_millis(),
                ran.max_rss_kib,
                case.notes.join("; ")
            ),
        );
    }
}

pub fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=,+:".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Copies a folder, keeping links as links.
fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dst)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        let ty = e.file_type()?;
        let to = dst.join(e.file_name());
        if ty.is_symlink() {
            let target = fs::read_link(e.path())?;
            std::os::unix::fs::symlink(target, to)?;
        } else if ty.is_dir() {
            copy_tree(&e.path(), &to)?;
        } else if ty.is_file() {
            // Outputs can be large; inputs are at most a few MiB (a bomb is 2 MiB).
            if e.metadata()?.len() <= 16 << 20 {
                fs::copy(e.path(), to)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{run, Limits};
    use std::time::Duration;

    fn sh(script: &str, dir: &Path, limits: Limits) -> Ran {
        let args = vec!["-c".to_string(), script.to_string()];
        run(Path::new("/bin/sh"), &args, dir, dir, limits).unwrap()
    }

    /// Every kind of finding is recognised on a process made to show it, and a clean exit
    /// is not one.
    #[test]
    fn each_kind_is_caught() {
        let root = std::env::temp_dir().join(format!("gpumodel-fuzz-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("case");
        fs::create_dir_all(&dir).unwrap();
        let mut canary = Canary::create(&root.join("canary")).unwrap();
        let limits = Limits {
            timeout: Duration::from_millis(300),
            address_space: 1 << 30,
            file_size: 1 << 20,
        };
        let kind = |r: &Ran, out: Option<&str>| classify(r, out, 64 << 10, "x").map(|f| f.kind);
        assert_eq!(kind(&sh("echo fine; exit 2", &dir, limits), None), None);
        assert_eq!(kind(&sh("exit 101", &dir, limits), None), Some("panic"));
        assert_eq!(kind(&sh("exit 7", &dir, limits), None), Some("exit"));
        assert_eq!(
            kind(&sh("kill -ABRT $$", &dir, limits), None),
            Some("abort")
        );
        assert_eq!(
            kind(&sh("kill -SEGV $$", &dir, limits), None),
            Some("signal")
        );
        assert_eq!(kind(&sh("sleep 30", &dir, limits), None), Some("timeout"));
        let r = sh(&format!("cat {}", canary.path("secret.txt")), &dir, limits);
        assert_eq!(kind(&r, None), Some("leak"));
        let r = sh("exec head -c 2000000 /dev/zero > big", &dir, limits);
        assert_eq!(kind(&r, None), Some("signal"), "RLIMIT_FSIZE gives SIGXFSZ");
        let r = sh(
            "printf 'memory allocation of 1 bytes failed' >&2; kill -ABRT $$",
            &dir,
            limits,
        );
        assert_eq!(kind(&r, None), Some("oom"));
        // Peak RSS: 200 MiB touched by a child of the shell is above a 64 MiB limit.
        let r = sh(
            "head -c 200M /dev/zero | python3 -c 'import sys; d=sys.stdin.buffer.read()'",
            &dir,
            limits,
        );
        if r.end == End::Exit(0) {
            assert_eq!(kind(&r, None), Some("rss"));
        }
        assert_eq!(canary.check(), None);
        let r = sh(
            &format!("echo x >> {}", canary.path("victim.gmt")),
            &dir,
            limits,
        );
        let changed = canary.check();
        assert!(changed.is_some());
        canary.refresh();
        assert_eq!(kind(&r, changed.as_deref()), Some("outside"));
        assert_eq!(canary.check(), None, "the victim was restored");
        let _ = fs::remove_dir_all(&root);
    }

    /// A file written beside the output folder, an entry added to the case folders' parent
    /// and exit 1 from the issue-44 targets are caught; a study's cycle cap is not a finding.
    #[test]
    fn strays_parents_and_exit1_are_caught() {
        let root = std::env::temp_dir().join(format!("gpumodel-fuzz-test2-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("case");
        fs::create_dir_all(dir.join("in")).unwrap();
        fs::create_dir_all(dir.join("out")).unwrap();
        let logs = root.join("logs");
        fs::create_dir_all(&logs).unwrap();
        let limits = Limits {
            timeout: Duration::from_secs(5),
            address_space: 1 << 30,
            file_size: 1 << 20,
        };
        let sh = |script: &str, dir: &Path, limits: Limits| {
            let args = vec!["-c".to_string(), script.to_string()];
            run(Path::new("/bin/sh"), &args, dir, &logs, limits).unwrap()
        };
        let before = tree(&dir);
        let mut parent = Watch::new(&root, "parent", true);
        let r = sh(
            "mkdir -p out/m/p && echo x > out/m/p/a && echo y > out/b && mkdir in/x && echo z > in/x/c && echo w > ../stray",
            &dir,
            limits,
        );
        assert_eq!(r.end, End::Exit(0));
        assert_eq!(
            stray(&before, &tree(&dir), &["out/m".to_string()]).as_deref(),
            Some("wrote beside its output folder: in/x, out/b")
        );
        assert_eq!(
            stray(&before, &tree(&dir), &["out".to_string(), "in".to_string()]),
            None
        );
        assert_eq!(
            parent.check().as_deref(),
            Some("new entries in parent: stray")
        );
        assert!(!root.join("stray").exists(), "removed");
        assert_eq!(parent.check(), None);
        let one = sh("echo 'error: in/x: not UTF-8' >&2; exit 1", &dir, limits);
        assert_eq!(exit1(Target::Merge, &one).map(|f| f.kind), Some("exit1"));
        assert_eq!(exit1(Target::Report, &one).map(|f| f.kind), Some("exit1"));
        assert!(
            exit1(Target::Model, &one).is_none(),
            "older targets: exit 1 is fine"
        );
        let cap = sh(
            "echo 'error: the run reached its cycle cap of 400 cycles' >&2; exit 1",
            &dir,
            limits,
        );
        assert!(exit1(Target::Study, &cap).is_none());
        let zero = sh(
            "echo 'error: the run reached its cycle cap of 0 cycles' >&2; exit 1",
            &dir,
            limits,
        );
        assert!(exit1(Target::Study, &zero).is_some());
        assert!(exit1(Target::Merge, &sh("exit 2", &dir, limits)).is_none());
        let _ = fs::remove_dir_all(&root);
    }
}
