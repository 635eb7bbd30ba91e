//! Hostile input, family 1 (issue 24): nothing outside the output path changes. Every
//! output goes through `gpumodel::output`: links, special files and the command's own
//! inputs are refused as targets (exit 2, before any simulation), failed writes leave no
//! temporary files, and a link planted inside an export folder is not followed.

mod common;

use std::path::Path;

use common::cli;

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces/examples")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn tmp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

#[test]
fn dev_null_is_not_replaced() {
    let before = std::fs::metadata("/dev/null").unwrap();
    let (code, _, err) = cli(&["synth", &example("stream_copy.toml"), "-o", "/dev/null"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/dev/null") && err.contains("not a regular file"),
        "{err}"
    );
    let after = std::fs::metadata("/dev/null").unwrap();
    assert!(!after.is_file());
    assert_eq!(before.file_type(), after.file_type());
}

#[test]
fn a_planted_link_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    // `convert -o out.gmt` where out.gmt is a link to the victim.
    let out = d.path().join("out.gmt");
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let (code, _, err) = cli(&[
        "synth",
        &example("stream_copy.toml"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    // `export -o DIR` with a link planted in DIR under the name it writes.
    let dir = d.path().join("exp");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("kernel-1.traceg")).unwrap();
    let (code, _, err) = cli(&[
        "export",
        &example("stream_copy.toml"),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("kernel-1.traceg") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(tmp_files(&dir).is_empty(), "{:?}", tmp_files(&dir));
    assert!(tmp_files(d.path()).is_empty(), "{:?}", tmp_files(d.path()));
}

#[test]
fn an_input_is_never_an_output() {
    let d = tempfile::tempdir().unwrap();
    let gmt = d.path().join("in.gmt");
    let (code, _, err) = cli(&[
        "synth",
        &example("l1_resident.toml"),
        "-o",
        gmt.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read(&gmt).unwrap();
    let g = gmt.to_str().unwrap();
    let (code, _, err) = cli(&["run", "--gpu", "qv100", g, "--json", g]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("input"), "{err}");
    let (code, _, err) = cli(&["convert", g, "-o", g]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read(&gmt).unwrap(),
        before,
        "the input trace changed"
    );
    assert!(tmp_files(d.path()).is_empty(), "{:?}", tmp_files(d.path()));
}

#[test]
fn an_output_folder_that_is_a_file_is_refused_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("file");
    std::fs::write(&f, "x").unwrap();
    let (code, _, err) = cli(&["analyze", "--apps", "hot,lbm", "-o", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a folder"), "{err}");
    assert!(!err.contains("policies in"), "ran before refusing: {err}");
}
