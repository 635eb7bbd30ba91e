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
    let gmt = gmt_of("synth", "l1_resident.toml", d.path(), "in.gmt");
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

/// Family 6: a reference case listed twice (a fuzzed CSV repeated one kernel's row 10 000
/// times: two minutes of simulating the same trace) is refused before anything runs,
/// naming the file, the line and the first occurrence.
#[test]
fn validate_refuses_a_case_listed_twice() {
    let src = common::reference();
    let kernels = std::fs::read_to_string(src.join("results_kernels.csv")).unwrap();
    let pairs = std::fs::read_to_string(src.join("results_pairs.csv")).unwrap();
    let head = |t: &str, n: usize| t.lines().take(n).collect::<Vec<_>>().join("\n");
    let second_k = kernels.lines().nth(1).unwrap();
    let second_p = pairs.lines().nth(1).unwrap();
    for (k, p, file) in [
        (
            format!("{}\n{second_k}\n", head(&kernels, 3)),
            format!("{}\n", head(&pairs, 2)),
            "results_kernels.csv:4",
        ),
        (
            format!("{}\n", head(&kernels, 2)),
            format!("{}\n\n{second_p}\n", head(&pairs, 2)),
            "results_pairs.csv:4",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(src.join("traces"), d.path().join("traces")).unwrap();
        std::fs::write(d.path().join("results_kernels.csv"), k).unwrap();
        std::fs::write(d.path().join("results_pairs.csv"), p).unwrap();
        let (code, out, err) = cli(&["validate", d.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{file}: {out}{err}");
        assert!(err.contains(file), "{file}: {err}");
        assert!(err.contains("first on line 2"), "{file}: {err}");
        assert!(out.is_empty(), "simulated before refusing: {out}");
    }
}

/// Family 6: a bounded queue is allocated at its depth, so a depth no GPU has (a fuzzed
/// `l1d.miss_queue = 2147483647` asked for 16 GiB and aborted) is refused by the model's
/// validation, naming the key; the largest valid depth is refused by the memory budget
/// before anything is allocated, naming the queues.
#[test]
fn a_queue_deeper_than_any_gpu_is_refused_not_allocated() {
    for key in ["l1d.miss_queue", "l2.input_queue", "noc.buffer"] {
        let set = format!("{key}=2147483647");
        let (code, _, err) = cli(&[
            "run",
            &example("stream_copy.toml"),
            "--gpu",
            "fermi-ws",
            "--set",
            &set,
        ]);
        assert_eq!(code, 2, "{key}: {err}");
        assert!(err.contains(key) && err.contains("at most"), "{key}: {err}");
    }
    let (code, _, err) = cli(&[
        "run",
        &example("stream_copy.toml"),
        "--gpu",
        "h100",
        "--set",
        "noc.buffer=1048576",
        "--max-mem",
        "1 GiB",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bounded queues"), "{err}");
    // Under an address-space limit (`ulimit -v`, 3 GiB) the default budget is half of it:
    // the same 2.3 GiB of qv100 queues is refused with the estimate, where it used to abort
    // on a failed allocation.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 3145728 && exec {} run {} --gpu qv100 --set noc.buffer=1048576 -q",
            env!("CARGO_BIN_EXE_gpumodel"),
            example("stream_copy.toml")
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("over the memory budget") && err.contains("bounded queues"),
        "{err}"
    );
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

/// More worker threads than cores are capped at the cores, with a note: each thread
/// reserves stack and allocator address space, and 255 of them under `ulimit -v 2097152`
/// aborted the process inside the runtime's thread start (`fuzz/`, seed 112820, case
/// 19656: `inspect --threads 255`) instead of ending with an error.
#[test]
fn more_threads_than_cores_are_capped_at_the_cores() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if cores >= 1024 {
        return;
    }
    let (code, out, err) = cli(&["--threads", "1024", "model", "--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("qv100"), "{out}");
    assert!(
        err.contains(&format!(
            "--threads 1024: this machine has {cores} cores; using {cores} threads"
        )),
        "{err}"
    );
    // Quiet runs say nothing.
    let (code, _, err) = cli(&["-q", "--threads", "1024", "model", "--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
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

/// Family 5: clocks of a few hertz, domains far from the core clock, time slices of a few
/// cycles and controller periods of a cycle are refused at validation naming the key
/// (exit 2), instead of a run that crawls without bound.
#[test]
fn slow_clocks_and_tiny_periods_are_refused() {
    for (set, key) in [
        ("clocks.core=3 Hz", "clocks.core"),
        ("dram.clock=3 Hz", "dram.clock"),
        ("clocks.l2=5 Hz", "clocks.l2"),
        ("clocks.icnt=50 MHz", "clocks.icnt"),
        ("dram.clock=100 GHz", "dram.clock"),
        ("reconfig.time_slice=1 ns", "reconfig.time_slice"),
        ("reconfig.time_slice=100 ns", "reconfig.time_slice"),
        // Values that made every instruction or DRAM access a million cycles long.
        ("units.int.initiation=999999", "units.int.initiation"),
        ("dram.timing.tRCD=999999", "dram.timing.tRCD"),
        ("dram.timing.tWL=999999", "dram.timing.tWL"),
    ] {
        let (code, out, err) = cli(&[
            "run",
            "-q",
            "--gpu",
            "qv100",
            "--set",
            set,
            "--share",
            "time-slice",
            &example("stream_copy.toml"),
            &example("l1_resident.toml"),
        ]);
        assert_eq!(code, 2, "{set}: {out}{err}");
        assert!(err.contains(key), "{set}: {err}");
        assert!(!out.contains("simulated"), "{set} ran: {out}");
    }
    // The same bound in a model file names the file.
    let d = tempfile::tempdir().unwrap();
    let model =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("models/qv100.toml"))
            .unwrap()
            .replace("time_slice = \"2 ms\"", "time_slice = \"1 ns\"");
    let m = d.path().join("slow.toml");
    std::fs::write(&m, model).unwrap();
    let (code, _, err) = cli(&["model", m.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("slow.toml") && err.contains("reconfig.time_slice"),
        "{err}"
    );
    // Periods that recur as engine events.
    for args in [
        &["--sample", "5"][..],
        &["--share", "smra", "--policy-param", "smra.period=1"][..],
        &[
            "--share",
            "warped-slicer",
            "--policy-param",
            "warped-slicer.sample=1",
        ][..],
    ] {
        let mut a = vec!["run", "-q"];
        a.extend_from_slice(args);
        let (s, l) = (example("stream_copy.toml"), example("l1_resident.toml"));
        a.extend([s.as_str(), l.as_str()]);
        let (code, out, err) = cli(&a);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("at least 100"), "{args:?}: {err}");
    }
    // The extremes of the accepted ranges run (and finish).
    let (code, out, err) = cli(&[
        "run",
        "-q",
        "--gpu",
        "qv100",
        "--set",
        "clocks.core=10 MHz",
        "--set",
        "clocks.l2=160 MHz",
        "--set",
        "clocks.icnt=160 MHz",
        "--set",
        "dram.clock=160 MHz",
        "--set",
        "reconfig.time_slice=100 us",
        "--share",
        "time-slice",
        &example("stream_copy.toml"),
        &example("l1_resident.toml"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `dir/name`, a `.gmt` written from the example `spec` by `sub` (`synth` or `convert`).
fn gmt_of(sub: &str, spec: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let gmt = dir.join(name);
    let (code, _, err) = cli(&[sub, &example(spec), "-o", gmt.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    gmt
}

/// An Accel-Sim kernel folder exported from `spec` into `dir`; returns the `.traceg` path.
fn exported(spec: &str, dir: &Path) -> std::path::PathBuf {
    let (code, _, err) = cli(&["export", &example(spec), "-o", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    dir.join("kernel-1.traceg")
}

/// Family 6: a thread block listed twice is an error naming the second occurrence's line
/// (it used to be merged silently), and so is a second `thread block =` line in one block.
#[test]
fn duplicate_thread_blocks_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let t = exported("l1_resident.toml", &d.path().join("e"));
    let text = std::fs::read_to_string(&t).unwrap();
    let line_of = |s: &str, needle: &str| s.lines().position(|l| l == needle).unwrap() + 1;
    let first = line_of(&text, "thread block = 2,0,0");
    let dup = text.replace("thread block = 5,0,0", "thread block = 2,0,0");
    let second = dup
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "thread block = 2,0,0")
        .nth(1)
        .unwrap()
        .0
        + 1;
    std::fs::write(&t, &dup).unwrap();
    for threads in ["1", "2"] {
        let out = d.path().join("x.gmt");
        let (code, _, err) = cli(&[
            "--threads",
            threads,
            "convert",
            d.path().join("e").to_str().unwrap(),
            "--chunk-mib",
            "1",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("kernel-1.traceg:{second}"))
                && err.contains("appears twice")
                && err.contains(&format!("line {first}")),
            "{err}"
        );
        assert!(!out.exists());
    }
    // Two coordinates lines inside one block.
    let two = text.replacen(
        "thread block = 0,0,0\n",
        "thread block = 0,0,0\nthread block = 1,0,0\n",
        1,
    );
    std::fs::write(&t, two).unwrap();
    let (code, _, err) = cli(&["inspect", t.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let at = line_of(&text, "thread block = 0,0,0") + 1;
    assert!(
        err.contains(&format!("kernel-1.traceg:{at}")) && err.contains("second"),
        "{err}"
    );
}

/// A `.gmt` converted from `spec` with its kernel name replaced in the table of contents
/// (same length, so the file stays valid).
fn gmt_named(dir: &Path, json_name: &str) -> std::path::PathBuf {
    let placeholder = format!("k{}", "A".repeat(json_name.len() - 1));
    let spec = std::fs::read_to_string(example("l1_resident.toml"))
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("name = ") {
                format!("name = \"{placeholder}\"")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let s = dir.join("s.toml");
    std::fs::write(&s, spec).unwrap();
    let g = dir.join("named.gmt");
    let (code, _, err) = cli(&["convert", s.to_str().unwrap(), "-o", g.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&g).unwrap();
    let (from, to) = (format!("\"{placeholder}\""), format!("\"{json_name}\""));
    let at = bytes
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .expect("name in the TOC");
    let mut b = bytes.clone();
    b[at..at + to.len()].copy_from_slice(to.as_bytes());
    std::fs::write(&g, b).unwrap();
    g
}

/// Family 6: `export` refuses a kernel name that would inject header lines (a newline then
/// `-grid dim = (9,9,9)` changed the launch on re-conversion); names that fit one line
/// round-trip exactly.
#[test]
fn export_never_writes_a_name_that_reads_back_differently() {
    let d = tempfile::tempdir().unwrap();
    let g = gmt_named(d.path(), "k\\n-grid dim = (9,9,9)");
    let out = d.path().join("e");
    let (code, _, err) = cli(&["export", g.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("named.gmt") && err.contains("kernel name") && err.contains("\\n"),
        "{err}"
    );
    assert!(!out.join("kernel-1.traceg").exists());
    // A carriage return or tab is refused the same way.
    let g = gmt_named(d.path(), "k\\r-grid");
    let (code, _, err) = cli(&["export", g.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    // An odd but one-line name (with `=` and `-key` text) round-trips exactly.
    let g = gmt_named(d.path(), "k -grid dim = (9,9,9)");
    let (code, _, err) = cli(&["export", g.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let back = d.path().join("back.gmt");
    let (code, _, err) = cli(&[
        "convert",
        out.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, a, _) = cli(&["inspect", g.to_str().unwrap(), "--json"]);
    let (_, b, _) = cli(&["inspect", back.to_str().unwrap(), "--json"]);
    let grid = |s: &str| {
        let v: serde_json::Value = serde_json::from_str(s).unwrap();
        let k = &v["kernels"][0];
        (k["info"]["name"].clone(), k["info"]["grid"].clone())
    };
    assert_eq!(grid(&a), grid(&b), "{a}\n{b}");
    assert_eq!(grid(&b).0, "k -grid dim = (9,9,9)");
}

/// Family 7: a `.gmt` whose streams are corrupt is blamed on the input, never on the
/// output file, by `export`, and an error found while simulating names the input file,
/// the kernel and the application (exit 2).
#[test]
fn corrupt_gmt_streams_name_the_input() {
    let d = tempfile::tempdir().unwrap();
    let g = gmt_of("convert", "l1_resident.toml", d.path(), "s.gmt");
    let mut b = std::fs::read(&g).unwrap();
    for x in &mut b[64..64 + 4000] {
        *x = 0xff;
    }
    let c = d.path().join("corrupt.gmt");
    std::fs::write(&c, &b).unwrap();
    let out = d.path().join("e");
    let (code, _, err) = cli(&["export", c.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("corrupt.gmt") && err.contains("corrupt"),
        "{err}"
    );
    assert!(!err.contains("kernel-1.traceg"), "blames the output: {err}");
    assert!(!out.join("kernel-1.traceg").exists());
    assert!(tmp_files(&out).is_empty());
    let (code, _, err) = cli(&[
        "run",
        "-q",
        c.to_str().unwrap(),
        &example("stream_copy.toml"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("corrupt.gmt")
            && err.contains("application")
            && err.contains("while simulating"),
        "{err}"
    );
}

/// Family 7: a corrupt or truncated `.gz`/`.xz` is bad input (exit 2) naming the file, the
/// line the stream broke in and the decompressed offset, never the library's bare text
/// with exit 1; an intact copy of the same trace converts.
#[test]
fn corrupt_and_truncated_compressed_traces_are_bad_input() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let t = exported("l1_resident.toml", &d.path().join("e"));
    let text = std::fs::read(&t).unwrap();
    let gz = {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&text).unwrap();
        z.finish().unwrap()
    };
    let xz = {
        let mut z = liblzma::write::XzEncoder::new(Vec::new(), 1);
        z.write_all(&text).unwrap();
        z.finish().unwrap()
    };
    // Damage a gzip file's CRC trailer (so the text decoded is intact up to the check)
    // and the middle of an xz block (whose decoder stops at once).
    let flip = |b: &[u8]| {
        let mut b = b.to_vec();
        let at = if b[0] == 0x1f {
            b.len() - 8
        } else {
            b.len() / 2
        };
        for x in &mut b[at..at + 4] {
            *x ^= 0x5a;
        }
        b
    };
    for (ext, good) in [("gz", &gz), ("xz", &xz)] {
        for (what, bytes) in [
            ("intact", good.clone()),
            ("truncated", good[..good.len() / 2].to_vec()),
            ("corrupt", flip(good)),
            ("not compressed", b"-kernel name = k\n".to_vec()),
        ] {
            let dir = d.path().join(format!("{ext}-{}", what.replace(' ', "-")));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
            std::fs::write(dir.join(format!("kernel-1.traceg.{ext}")), &bytes).unwrap();
            let out = d
                .path()
                .join(format!("{ext}-{}.gmt", what.replace(' ', "-")));
            let (code, _, err) = cli(&[
                "convert",
                dir.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ]);
            if what == "intact" {
                assert_eq!(code, 0, "{ext} {what}: {err}");
                continue;
            }
            assert_eq!(code, 2, "{ext} {what}: {err}");
            let name = format!("kernel-1.traceg.{ext}:");
            assert!(
                err.contains(&name)
                    && err.contains(&format!(
                        "corrupt or truncated {}",
                        if ext == "gz" { "gzip" } else { "xz" }
                    ))
                    && err.contains("decompressed bytes"),
                "{ext} {what}: {err}"
            );
            // The line named is the one the stream broke in.
            let line: usize = err
                .split(&name)
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no line in {err}"));
            let offset: usize = err
                .split(" stream after ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            assert_eq!(
                line,
                text[..offset.min(text.len())]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    + 1,
                "{ext} {what}: {err}"
            );
            assert!(!out.exists());
            assert!(tmp_files(d.path()).is_empty());
        }
    }
}

/// Family 7: an output path at an existing folder (or an output folder at an existing
/// file) is refused before any work, by every subcommand that writes (exit 2, nothing on
/// stdout: no table of a run that happened).
#[test]
fn outputs_at_folders_are_refused_before_any_work() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(dir.join("metrics.json")).unwrap();
    let file = d.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let (dir, file) = (dir.to_str().unwrap(), file.to_str().unwrap());
    let (sc, root) = (example("stream_copy.toml"), env!("CARGO_MANIFEST_DIR"));
    let study = format!("{root}/reports/warped-slicer/study.toml");
    let metrics = format!("{root}/reports/warped-slicer/metrics.json");
    for args in [
        vec!["convert", &sc, "-o", dir],
        vec!["synth", &sc, "-o", dir],
        vec!["export", &sc, "-o", file],
        vec!["run", "-q", &sc, "--json", dir],
        vec!["model", "qv100", "-o", dir],
        vec!["profile", "-q", &sc, "--json", dir],
        vec!["profile", "-q", &sc, "--svg", file],
        vec!["analyze", "-q", "--apps", "hot,lbm", "-o", file],
        vec!["study", "-q", &study, "-o", file],
        vec!["study", "-q", &study, "-o", dir],
        vec!["report", &metrics, "-o", file],
    ] {
        let (code, out, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("is a directory") || err.contains("not a folder"),
            "{args:?}: {err}"
        );
        assert!(out.is_empty(), "{args:?} worked first: {out}");
    }
    assert_eq!(std::fs::read_to_string(d.path().join("file")).unwrap(), "x");
}

/// Family 3: the engine's state is estimated from the model before anything is allocated
/// and checked against `--max-mem`: over budget is bad input naming the biggest parts
/// (an L2 of 3 GiB per slice used to abort allocating 64 GiB).
#[test]
fn models_over_the_memory_budget_are_refused_before_allocating() {
    let run = |sets: &[&str], max: &str| {
        let mut a = vec!["run", "-q", "--gpu", "qv100", "--max-mem", max];
        for s in sets {
            a.extend(["--set", s]);
        }
        let s = example("stream_copy.toml");
        a.push(&s);
        cli(&a)
    };
    let (code, _, err) = run(&["l2.size_per_slice=3 GiB", "l2.set_index=linear"], "4 GiB");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("memory budget of 4.0 GiB") && err.contains("L2 tag arrays"),
        "{err}"
    );
    let (code, _, err) = run(&["sm.count=4096"], "1 GiB");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("SM warp state (sm.count x sm.max_warps)"),
        "{err}"
    );
    // The bundled model fits a small budget and runs.
    let (code, out, err) = run(&[], "256 MiB");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stream_copy"), "{out}");
    // A budget needs a unit.
    let (code, _, err) = run(&[], "12");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-mem"), "{err}");
}

/// Family 3: a queue study asking for huge queues (or too many group runs) is refused when
/// the file is read, naming it, before any simulation.
#[test]
fn queue_studies_with_huge_queues_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/punyala");
    for (ways, want) in [
        ("[{ size = 2, queue = 1000000000 }]", "queue of at most"),
        ("[{ size = 64, queue = 100 }]", "groups of at most"),
        (
            "[{ size = 1, queue = 1024 }, { size = 1, queue = 1023 }, { size = 1, queue = 1022 }, \
             { size = 1, queue = 1021 }, { size = 1, queue = 1020 }]",
            "group runs",
        ),
    ] {
        let mut s = format!(
            "kind = \"queue\"\nname = \"q\"\ngpu = \"gpgpusim-60sm\"\nwindow = 6000\n\
             policies = [\"spatial\", \"ilp\", \"ilp-smra\", \"ilp-app\", \"profile-based\"]\n\
             mixes = [\"equal\", \"A-oriented\", \"M-oriented\", \"C-oriented\", \"MC-oriented\"]\n\
             ways = {ways}\n"
        );
        for n in ["blk", "bp", "spmv", "hs", "nn"] {
            s += &format!(
                "[[benches]]\nname = \"{n}\"\npath = \"{}\"\n",
                t.join(format!("{n}.toml")).display()
            );
        }
        let p = d.path().join("queue.toml");
        std::fs::write(&p, s).unwrap();
        let o = d.path().join("o");
        let (code, out, err) = cli(&[
            "study",
            "-q",
            p.to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{ways}: {out}{err}");
        assert!(
            err.contains("queue.toml") && err.contains(want),
            "{ways}: {err}"
        );
        assert!(!o.join("metrics.json").exists());
    }
}

/// Peak resident memory of the largest child this test process has waited for.
fn children_peak_rss_kib() -> i64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss
}

/// Family 3: `inspect`'s footprint is counted exactly up to a limit of lines, then by a
/// bounded HyperLogLog sketch, stated as approximate ("~", and `footprint_approx` in
/// JSON), so a long synthetic kernel does not grow a set without bound.
#[test]
fn inspect_footprint_switches_to_a_stated_estimate() {
    let d = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(example("stream_copy.toml")).unwrap();
    assert!(spec.contains("grid = 640\n"));
    // 640 blocks touch 81,920 lines; 10,000 touch 1,280,000, past the exact limit.
    let long = d.path().join("long.toml");
    std::fs::write(&long, spec.replace("grid = 640\n", "grid = 10000\n")).unwrap();
    let lim = gpumodel::trace::hll::DistinctCounter::LIMIT as u64;
    assert!(1_280_000 > lim && 81_920 < lim);
    let json = |p: &str| -> serde_json::Value {
        let (code, out, err) = cli(&["inspect", "--json", p]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let v = json(long.to_str().unwrap());
    let k = &v["kernels"][0]["stats"];
    assert_eq!(k["footprint_approx"], true, "{k}");
    let n = k["footprint_lines"].as_u64().unwrap();
    assert!(
        (n as f64 - 1_280_000.0).abs() / 1_280_000.0 < 0.03,
        "estimate {n}"
    );
    let (_, text, _) = cli(&["inspect", long.to_str().unwrap()]);
    assert!(
        text.contains(&format!("footprint ~{n} lines")) && text.contains("(estimated)"),
        "{text}"
    );
    // Under the limit the count is exact and says so.
    let v = json(&example("stream_copy.toml"));
    let k = &v["kernels"][0]["stats"];
    assert_eq!(k["footprint_approx"], false, "{k}");
    assert_eq!(k["footprint_lines"], 81_920);
    assert!(children_peak_rss_kib() < 1 << 20, "peak RSS over 1 GiB");
}

/// A bad policy option is refused before any input is read: a fuzzed run over a kernel list
/// of 100 000 launches parsed them all (14 s, 1.6 GiB) before saying the parameter was
/// unknown. Here the input does not even exist; the option's error comes first.
#[test]
fn run_refuses_a_bad_policy_option_before_reading_its_inputs() {
    let (code, _, err) = cli(&[
        "run",
        "/nonexistent/trace/kernelslist.g",
        "--share",
        "ws-ilp",
        "--policy-param",
        "ws-ilp.x=1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field `x`"), "{err}");
    assert!(!err.contains("nonexistent"), "read the input first: {err}");
}
