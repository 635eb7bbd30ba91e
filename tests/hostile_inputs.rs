//! Input files that are not regular files, or not what they claim (issue 44, item 5): a
//! FIFO as a study file, a model file, `report`'s input or a shard (given or found in a
//! merge folder) is refused at once with exit 2 instead of hanging; a shard linked to
//! `/dev/zero` is refused without being read; a shard that is a folder, a dangling link
//! or not UTF-8, a missing model file, and a file over `--max-mem` are exit 2 naming the
//! path. Every command runs under a watchdog, so a hang fails the test instead of the suite.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the CLI, killing it after `secs` (a hang fails the test); (code, stderr).
fn cli_within(secs: u64, args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .arg("-q")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpumodel");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for gpumodel") {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gpumodel {args:?} still running after {secs} s: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Expects exit 2 within 20 s with `want` (and the path) in the message.
fn refused(args: &[&str], path: &Path, want: &str) {
    let (code, err) = cli_within(20, args);
    assert_eq!(code, 2, "gpumodel {args:?}: exit {code}: {err}");
    assert!(
        err.contains(&path.display().to_string()) && err.contains(want),
        "gpumodel {args:?}: expected `{want}` naming {}: {err}",
        path.display()
    );
    assert!(!err.contains("panicked"), "{err}");
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

/// A two-benchmark study file on the model `gpu`.
fn study_text(gpu: &str) -> String {
    format!(
        r#"name = "tiny"
gpu = "{gpu}"
window = 2000
policies = ["left-over", "even"]
baseline = "left-over"

[[benches]]
name = "blk"
path = "{t}/warped-slicer/blk.toml"
class = "memory"
[[benches]]
name = "hot"
path = "{t}/warped-slicer/hot.toml"
class = "compute"

[[groups]]
name = "pair"
kind = "cross"
a = ["blk"]
b = ["hot"]
"#,
        t = traces().display()
    )
}

#[test]
fn a_fifo_as_a_study_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("study.toml");
    mkfifo(&f);
    let out = d.path().join("out");
    refused(&["study", s(&f), "--out", s(&out)], &f, "FIFO");
}

#[test]
fn a_fifo_as_report_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("metrics.json");
    mkfifo(&f);
    refused(&["report", s(&f), "-o", s(d.path())], &f, "FIFO");
}

#[test]
fn a_fifo_as_a_model_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("gpu.toml");
    mkfifo(&f);
    refused(&["model", s(&f)], &f, "FIFO");
    let blk = traces().join("warped-slicer/blk.toml");
    refused(&["run", s(&blk), "--gpu", s(&f)], &f, "FIFO");
}

#[test]
fn a_fifo_as_a_study_model_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("fifo.toml");
    mkfifo(&f);
    let study = d.path().join("study.toml");
    std::fs::write(&study, study_text("fifo.toml")).unwrap();
    let out = d.path().join("out");
    refused(&["study", s(&study), "--out", s(&out)], &f, "FIFO");
}

#[test]
fn a_missing_study_model_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let study = d.path().join("study.toml");
    std::fs::write(&study, study_text("nothere.toml")).unwrap();
    let out = d.path().join("out");
    refused(
        &["study", s(&study), "--out", s(&out)],
        &d.path().join("nothere.toml"),
        "no such file",
    );
}

#[test]
fn a_fifo_shard_argument_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("shard-1-of-1.json");
    mkfifo(&f);
    let out = d.path().join("out");
    refused(&["merge", s(&f), "-o", s(&out)], &f, "FIFO");
}

#[test]
fn a_fifo_shard_in_a_merge_folder_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("shard-1-of-1.json");
    mkfifo(&f);
    let out = d.path().join("out");
    refused(&["merge", s(d.path()), "-o", s(&out)], &f, "FIFO");
}

#[test]
fn a_shard_linked_to_a_device_is_refused_unread() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    for dev in ["/dev/zero", "/dev/urandom"] {
        let dir = d.path().join(dev.trim_start_matches("/dev/"));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("shard-1-of-1.json");
        std::os::unix::fs::symlink(dev, &f).unwrap();
        // A small budget: before, the device was read until memory ran out.
        let args = ["--max-mem", "64MiB", "merge", s(&f), "-o", s(&out)];
        refused(&args, &f, "character device");
        refused(
            &["--max-mem", "64MiB", "merge", s(&dir), "-o", s(&out)],
            &f,
            "character device",
        );
    }
}

#[test]
fn a_folder_dangling_or_non_utf8_shard_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    // A folder named like a shard inside a merge folder.
    let a = d.path().join("a");
    std::fs::create_dir_all(a.join("shard-1-of-1.json")).unwrap();
    refused(
        &["merge", s(&a), "-o", s(&out)],
        &a.join("shard-1-of-1.json"),
        "a folder",
    );
    // A dangling link, given and found.
    let b = d.path().join("b");
    std::fs::create_dir_all(&b).unwrap();
    let dangling = b.join("shard-1-of-1.json");
    std::os::unix::fs::symlink(d.path().join("gone.json"), &dangling).unwrap();
    refused(
        &["merge", s(&dangling), "-o", s(&out)],
        &dangling,
        "dangling",
    );
    refused(&["merge", s(&b), "-o", s(&out)], &dangling, "dangling");
    // Not UTF-8.
    let c = d.path().join("shard-1-of-2.json");
    std::fs::write(&c, b"{\"kind\": \"study-\xff\"}").unwrap();
    refused(&["merge", s(&c), "-o", s(&out)], &c, "malformed JSON");
}

#[test]
fn a_file_over_max_mem_is_refused() {
    let d = tempfile::tempdir().unwrap();
    // 2 MiB of JSON whitespace around an object: valid, and over a 1 MiB budget.
    let f = d.path().join("metrics.json");
    let mut text = vec![b' '; 2 << 20];
    text.extend_from_slice(b"{}");
    std::fs::write(&f, &text).unwrap();
    refused(
        &["--max-mem", "1MiB", "report", s(&f), "-o", s(d.path())],
        &f,
        "--max-mem",
    );
    let shard = d.path().join("shard-1-of-1.json");
    std::fs::write(&shard, &text).unwrap();
    let out = d.path().join("out");
    refused(
        &["--max-mem", "1MiB", "merge", s(&shard), "-o", s(&out)],
        &shard,
        "--max-mem",
    );
    let study = d.path().join("study.toml");
    let mut toml = study_text("fermi-ws").into_bytes();
    toml.extend(std::iter::repeat_n(b'\n', 2 << 20));
    std::fs::write(&study, &toml).unwrap();
    refused(
        &["--max-mem", "1MiB", "study", s(&study), "--out", s(&out)],
        &study,
        "--max-mem",
    );
}

#[test]
fn a_fifo_as_a_trace_is_refused() {
    let d = tempfile::tempdir().unwrap();
    for name in ["app.gmt", "app.traceg", "kernelslist.g"] {
        let f = d.path().join(name);
        mkfifo(&f);
        refused(&["run", s(&f)], &f, "FIFO");
    }
}
