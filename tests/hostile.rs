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

/// Family 4: an error message quoting a header line cuts it at a character boundary.
#[test]
fn a_multibyte_header_line_is_quoted_without_panicking() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("kernel-1.traceg");
    // 59 ASCII bytes then two-byte characters straddling byte 60.
    let line = format!("{}{}", "x".repeat(59), "é".repeat(20));
    std::fs::write(&t, format!("-kernel name = k\n{line}\n")).unwrap();
    let (code, _, err) = cli(&["inspect", t.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kernel-1.traceg:2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Family 6: `validate` refuses NaN, infinite, negative and zero reference values, naming
/// the file and line, before simulating anything.
#[test]
fn validate_refuses_non_finite_references() {
    let src = common::reference();
    let kernels = std::fs::read_to_string(src.join("results_kernels.csv")).unwrap();
    let pairs = std::fs::read_to_string(src.join("results_pairs.csv")).unwrap();
    let header_k = kernels.lines().next().unwrap();
    let cycle_col = header_k
        .split(',')
        .position(|c| c == "gpu_sim_cycle")
        .unwrap();
    let first_k = kernels.lines().nth(1).unwrap();
    let header_p = pairs.lines().next().unwrap();
    let sd_col = header_p.split(',').position(|c| c == "slowdown_a").unwrap();
    let first_p = pairs.lines().nth(1).unwrap();
    let with = |row: &str, col: usize, v: &str| {
        let mut cells: Vec<String> = row.split(',').map(str::to_string).collect();
        cells[col] = v.into();
        cells.join(",")
    };
    for (k_bad, p_bad, what) in [
        (Some("NaN"), None, "gpu_sim_cycle"),
        (Some("0"), None, "gpu_sim_cycle"),
        (None, Some("NaN"), "slowdown_a"),
        (None, Some("inf"), "slowdown_a"),
        (None, Some("-2.5"), "slowdown_a"),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(src.join("traces"), d.path().join("traces")).unwrap();
        let k = match k_bad {
            Some(v) => with(first_k, cycle_col, v),
            None => first_k.to_string(),
        };
        let p = match p_bad {
            Some(v) => with(first_p, sd_col, v),
            None => first_p.to_string(),
        };
        std::fs::write(
            d.path().join("results_kernels.csv"),
            format!("{header_k}\n{k}\n"),
        )
        .unwrap();
        std::fs::write(
            d.path().join("results_pairs.csv"),
            format!("{header_p}\n{p}\n"),
        )
        .unwrap();
        let (code, out, err) = cli(&["validate", d.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{what}: {out}{err}");
        assert!(err.contains(":2"), "{what}: {err}");
        assert!(
            err.contains(what) || err.contains("slowdown"),
            "{what}: {err}"
        );
        assert!(!out.contains("NaN"), "{out}");
    }
}

/// Family 3: a compressed stream whose thread block never ends (zeros after one
/// `#BEGIN_TB`) is refused at the buffer bound, naming the file and the line where the
/// block starts, instead of buffering gigabytes.
#[test]
fn an_endless_compressed_block_is_refused_at_the_bound() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("bomb");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
    let f = std::fs::File::create(dir.join("kernel-1.traceg.gz")).unwrap();
    let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let header = "-kernel name = k\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n\
                  -shmem = 0\n-nregs = 8\n-binary version = 70\n-cuda stream id = 0\n\
                  -shmem base_addr = 0x0\n-local mem base_addr = 0x0\n-nvbit version = 1.5.5\n\
                  -accelsim tracer version = 3\n\n#traces format = PC mask dest_num [reg_dests] \
                  opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]\n\n\
                  #BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 1\n";
    z.write_all(header.as_bytes()).unwrap();
    let zeros = vec![b'0'; 1 << 20];
    for _ in 0..(gpumodel::trace::input::MAX_STREAM_CHUNK >> 20) + 8 {
        z.write_all(&zeros).unwrap();
    }
    z.finish().unwrap();
    let out = d.path().join("x.gmt");
    let (code, _, err) = cli(&[
        "convert",
        dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kernel-1.traceg.gz:"), "{err}");
    assert!(err.contains("thread-block boundary"), "{err}");
    assert!(!out.exists());
    assert!(tmp_files(d.path()).is_empty());
}

/// Family 7: absurd thread counts and chunk sizes are refused at once (exit 2), not after
/// seconds of set-up or a capacity overflow.
#[test]
fn absurd_threads_and_chunk_sizes_are_usage_errors() {
    let (code, _, err) = cli(&["--threads", "1000000", "model", "--list"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--threads"), "{err}");
    let (code, _, err) = cli(&[
        "convert",
        &example("stream_copy.toml"),
        "--chunk-mib",
        "8000",
        "-o",
        "x.gmt",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--chunk-mib"), "{err}");
    assert!(!Path::new("x.gmt").exists());
}

/// Family 5: a kernel with zero thread blocks is refused at parse time (in a `--window`
/// run it would relaunch without end).
#[test]
fn a_kernel_without_thread_blocks_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("kernel-1.traceg");
    std::fs::write(
        &t,
        "-kernel name = k\n-kernel id = 1\n-grid dim = (0,1,1)\n-block dim = (32,1,1)\n\
         -shmem = 0\n-nregs = 8\n-binary version = 70\n-cuda stream id = 0\n\
         -shmem base_addr = 0x0\n-local mem base_addr = 0x0\n-nvbit version = 1.5.5\n\
         -accelsim tracer version = 3\n\n#traces format = PC mask dest_num [reg_dests] opcode \
         src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]\n",
    )
    .unwrap();
    let (code, _, err) = cli(&["run", "--window", "100000", t.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("kernel-1.traceg:") && err.contains("at least 1"),
        "{err}"
    );
}

/// Family 6: a latency past the engine's range is refused, never wrapped modulo 2^32
/// (`4294967298` used to become 2) or clamped.
#[test]
fn huge_latencies_are_refused_not_wrapped() {
    let (code, _, err) = cli(&["model", "qv100", "--set", "units.int.latency=4294967298"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("units.int.latency") && err.contains("out of range"),
        "{err}"
    );
    let (code, _, err) = cli(&["model", "qv100", "--set", "l2.latency=2000000 cycles"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = cli(&["model", "qv100", "--set", "l2.latency=200"]);
    assert_eq!(code, 0, "{err}");
}

/// Family 3: counts that size the engine's arrays are range-checked when the model is
/// validated, so `--set sm.count=1000000000` is bad input, not a 288 GB allocation.
#[test]
fn absurd_counts_are_refused_before_anything_is_allocated() {
    for set in [
        "sm.count=1000000000",
        "dram.channels=100000",
        "dram.banks=100000",
        "l2.slices_per_channel=100000",
        "sm.max_ctas=100000",
        "units.fp32.count=70000",
    ] {
        let key = set.split('=').next().unwrap();
        let (code, _, err) = cli(&[
            "run",
            "--gpu",
            "qv100",
            "--set",
            set,
            &example("stream_copy.toml"),
        ]);
        assert_eq!(code, 2, "{set}: {err}");
        assert!(
            err.contains(key) && err.contains("out of range"),
            "{set}: {err}"
        );
    }
}

/// Family 7: a study file's bad values are refused before any simulation, naming the
/// file and what is wrong.
#[test]
fn study_files_are_validated_before_any_simulation() {
    let d = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/warped-slicer");
    let study = |extra: &str, policies: &str, groups: &str| {
        format!(
            "name = \"s\"\ngpu = \"fermi-ws\"\nwindow = 8000\npolicies = {policies}\n{extra}\n\
             [[benches]]\nname = \"dxt\"\npath = \"{t}/dxt.toml\"\n\
             [[benches]]\nname = \"knn\"\npath = \"{t}/knn.toml\"\n{groups}",
            t = t.display()
        )
    };
    let group = "[[groups]]\nname = \"g\"\nkind = \"cross\"\na = [\"dxt\"]\nb = [\"knn\"]\n";
    for (text, want) in [
        (
            study(
                "[params.warped-slicer]\nloss_factor = nan\n",
                "[\"warped-slicer\"]",
                group,
            ),
            "loss_factor",
        ),
        (study("", "[]", group), "`policies` is empty"),
        (study("", "[\"even\"]", ""), "groups"),
        (
            study(
                "",
                "[\"even\"]",
                "[[groups]]\nname = \"g\"\nkind = \"within\"\na = [\"dxt\"]\n",
            ),
            "forms no workload",
        ),
        (
            study("[params.smra]\nperiod = 0\n", "[\"smra\"]", group),
            "period",
        ),
    ] {
        let p = d.path().join("study.toml");
        std::fs::write(&p, &text).unwrap();
        let (code, _, err) = cli(&[
            "study",
            p.to_str().unwrap(),
            "-o",
            d.path().join("o").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{want}: {err}");
        assert!(
            err.contains("study.toml") && err.contains(want),
            "{want}: {err}"
        );
        // (No timing assertion: that nothing ran shows in the missing output.)
        assert!(!d.path().join("o/metrics.json").exists());
    }
}
