//! Real sample traces: every dialect parses with the declared instruction totals; text →
//! .gmt → decoded streams is lossless; .gmt → Accel-Sim text → parse gives the same
//! instructions; conversion is byte-for-byte deterministic across chunk sizes and threads.

mod common;

use std::path::{Path, PathBuf};

use gpumodel::trace::accel::ParseOptions;
use gpumodel::trace::app::{convert, open_app};
use gpumodel::trace::gmt::GmtFile;
use gpumodel::trace::{KernelSource, MemKernel};

fn samples() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let r = common::real_traces();
    let atax = r.join("accelsim_v5cluster_v6_atax_sm90_testdata");
    vec![
        (
            r.join("accelsim_v3_bfs_sm80"),
            vec![r.join("accelsim_v3_bfs_sm80/kernel-1.traceg")],
        ),
        (
            r.join("accelsim_v5_vectoradd_sm80_excerpt"),
            vec![r.join("accelsim_v5_vectoradd_sm80_excerpt/kernel-1.traceg")],
        ),
        (
            atax.join("atax-v5/kernel-1.traceg"),
            vec![atax.join("atax-v5/kernel-1.traceg")],
        ),
        (
            atax.join("atax-v6/kernel-1.traceg"),
            vec![atax.join("atax-v6/kernel-1.traceg")],
        ),
    ]
}

fn decode_all(p: &Path) -> Vec<MemKernel> {
    let app = open_app(p, &ParseOptions::default()).unwrap();
    app.kernels
        .iter()
        .map(|k| MemKernel::from_source(k.as_ref()).unwrap())
        .collect()
}

#[test]
fn every_sample_parses_with_declared_totals() {
    for (input, files) in samples() {
        let declared: u64 = files
            .iter()
            .map(|f| common::declared_insts(&std::fs::read_to_string(f).unwrap()))
            .sum();
        let app = open_app(&input, &ParseOptions::default()).unwrap();
        let total: u64 = app.kernels.iter().map(|k| k.total_warp_insts()).sum();
        assert_eq!(total, declared, "{}", input.display());
        assert!(total > 0);
    }
    // The BFS kernel: 8 TBs × 16 warps, 1799 warp instructions (real-traces/README.md).
    let app = open_app(
        &common::real_traces().join("accelsim_v3_bfs_sm80"),
        &ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(app.kernels[0].num_ctas(), 8);
    assert_eq!(app.kernels[0].total_warp_insts(), 1799);
}

#[test]
fn dialects_agree_on_atax() {
    let atax = common::real_traces().join("accelsim_v5cluster_v6_atax_sm90_testdata");
    let v5 = decode_all(&atax.join("atax-v5/kernel-1.traceg"));
    let v6 = decode_all(&atax.join("atax-v6/kernel-1.traceg"));
    // Same kernel traced twice: same instruction stream shape (addresses differ by run).
    let shape = |k: &MemKernel| -> Vec<(u32, String)> {
        k.ctas
            .iter()
            .flat_map(|c| c.warps.iter().flatten())
            .map(|d| {
                (
                    d.mask,
                    k.statics
                        .opcode_name(&k.statics.insts[d.sidx as usize])
                        .to_string(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&v5[0]), shape(&v6[0]));
}

#[test]
fn text_to_gmt_round_trip_is_lossless() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (input, _)) in samples().into_iter().enumerate() {
        let parsed = decode_all(&input);
        let out = dir.path().join(format!("s{i}.gmt"));
        let r = convert(&input, &out, &ParseOptions::default(), &|_, _, _| {}).unwrap();
        assert_eq!(r.kernels, parsed.len());
        let f = GmtFile::open(&out).unwrap();
        let back: Vec<MemKernel> = f
            .kernels()
            .unwrap()
            .iter()
            .map(|k| MemKernel::from_source(k).unwrap())
            .collect();
        assert_eq!(back, parsed, "{}", input.display());
    }
}

#[test]
fn gmt_to_text_to_parse_gives_same_instructions() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (input, _)) in samples().into_iter().enumerate() {
        let gmt = dir.path().join(format!("s{i}.gmt"));
        convert(&input, &gmt, &ParseOptions::default(), &|_, _, _| {}).unwrap();
        let app = open_app(&gmt, &ParseOptions::default()).unwrap();
        let ks: Vec<&dyn KernelSource> = app.kernels.iter().map(|k| k.as_ref()).collect();
        let tdir = dir.path().join(format!("text{i}"));
        gpumodel::trace::text::write_app(&ks, &app.commands, &tdir).unwrap();
        let again = decode_all(&tdir);
        let orig = decode_all(&gmt);
        assert_eq!(again.len(), orig.len());
        for (a, b) in again.iter().zip(&orig) {
            // Provenance differs (file path); instructions must be identical.
            assert_eq!(a.ctas, b.ctas, "{}", input.display());
            assert_eq!(a.statics, b.statics);
            assert_eq!(
                (a.info.grid, a.info.block, a.info.nregs, a.info.shmem),
                (b.info.grid, b.info.block, b.info.nregs, b.info.shmem)
            );
        }
    }
}

#[test]
fn conversion_is_deterministic_across_chunks_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::real_traces().join("accelsim_v3_bfs_sm80");
    let mut outs = Vec::new();
    for (k, chunk) in [4 << 20, 4096, 700].into_iter().enumerate() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let out = dir.path().join(format!("o{k}_{threads}.gmt"));
            let opts = ParseOptions {
                chunk_bytes: chunk,
                ..Default::default()
            };
            pool.install(|| convert(&input, &out, &opts, &|_, _, _| {}))
                .unwrap();
            outs.push(std::fs::read(&out).unwrap());
        }
    }
    // The TOC records no path of the output, so all bytes must agree.
    for o in &outs[1..] {
        assert!(
            o == &outs[0],
            "outputs differ between chunkings/thread counts"
        );
    }
}

#[test]
fn compressed_inputs_read_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::real_traces().join("accelsim_v3_bfs_sm80/kernel-1.traceg");
    let text = std::fs::read(&src).unwrap();
    let gz = dir.path().join("kernel-1.traceg.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        e.write_all(&text).unwrap();
        e.finish().unwrap();
    }
    let xzdir = tempfile::tempdir().unwrap();
    let xz = xzdir.path().join("kernel-1.traceg.xz");
    {
        use std::io::Write;
        let mut e = liblzma::write::XzEncoder::new(std::fs::File::create(&xz).unwrap(), 1);
        e.write_all(&text).unwrap();
        e.finish().unwrap();
    }
    // kernelslist.g names the plain file; the compressed sibling satisfies it.
    std::fs::write(dir.path().join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
    std::fs::write(xzdir.path().join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
    let plain = decode_all(&src);
    for d in [dir.path(), xzdir.path()] {
        let k = decode_all(d);
        assert_eq!(k[0].ctas, plain[0].ctas);
    }
}

#[test]
fn nvbit_logs_parse() {
    let r = common::real_traces().join("nvbit_mem_trace");
    let m = gpumodel::trace::nvbit::parse_mem_trace(
        &r.join("memtrace_access_line_issue130.log"),
        false,
    )
    .unwrap();
    assert_eq!(m.access_lines, 1);
    assert_eq!(m.kernels[0].total_warp_insts(), 1);
    let launch =
        gpumodel::trace::nvbit::parse_mem_trace(&r.join("memtrace_launch_line_issue66.log"), false)
            .unwrap();
    assert_eq!(launch.kernels.len(), 1);
    assert_eq!(launch.kernels[0].info.name, "kernel_info");
    let c = gpumodel::trace::nvbit::parse_counts(&r.join("opcode_hist_issue66.log")).unwrap();
    assert_eq!(c[0].kernel_insts, 28);
    assert_eq!(c[0].opcodes.iter().map(|x| x.1).sum::<u64>(), 28);

    // A log with a LAUNCH line, two warps and program output between lines.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mt.log");
    let addrs = |base: u64| {
        (0..32)
            .map(|i| format!("0x{:016x} ", base + 4 * i))
            .collect::<String>()
    };
    let log = format!(
        "MEMTRACE: CTX 0x0000560df95ced70 - LAUNCH - Kernel pc 0x00007faedadc0200 - Kernel name vecadd - grid launch id 1 - grid size 2,1,1 - block size 64,1,1 - nregs 16 - shmem 0 - cuda stream id 0\n\
         hello from the app\n\
         MEMTRACE: CTX 0x0000560df95ced70 - grid_launch_id 0 - CTA 1,0,0 - warp 3 - LDG.E - {}\n\
         MEMTRACE: CTX 0x0000560df95ced70 - grid_launch_id 0 - CTA 0,0,0 - warp 0 - LDG.E - {}\n\
         MEMTRACE: CTX 0x0000560df95ced70 - grid_launch_id 0 - CTA 0,0,0 - warp 0 - STG.E - {}\n",
        addrs(0x7f0000001000),
        addrs(0x7f0000000000),
        addrs(0x7f0000100000)
    );
    std::fs::write(&p, log).unwrap();
    let m = gpumodel::trace::nvbit::parse_mem_trace(&p, false).unwrap();
    assert_eq!((m.access_lines, m.other_lines), (3, 1));
    let k = MemKernel::from_source(&m.kernels[0]).unwrap();
    assert_eq!(k.ctas.len(), 2);
    assert_eq!(k.ctas[0].id, [0, 0, 0]);
    assert_eq!(k.ctas[0].warps[0].len(), 2);
    assert_eq!(k.ctas[0].warps[0][0].addrs[31], 0x7f0000000000 + 124);
    let gmt = dir.path().join("mt.gmt");
    convert(&p, &gmt, &ParseOptions::default(), &|_, _, _| {}).unwrap();
    let back = MemKernel::from_source(&GmtFile::open(&gmt).unwrap().kernel(0).unwrap()).unwrap();
    assert_eq!(back.ctas, k.ctas);
}

#[test]
fn cli_convert_and_inspect_real_samples() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bfs.gmt");
    let input = common::real_traces().join("accelsim_v3_bfs_sm80");
    let (code, stdout, stderr) = common::cli(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("1799 warp instructions"), "{stdout}");
    let (code, stdout, _) = common::cli(&["inspect", out.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["kernels"][0]["stats"]["warp_insts"], 1799);
    assert_eq!(v["kernels"][0]["info"]["grid"][0], 8);
}

/// The Accel-Sim calibration suite: every kernel and pair parses, with warp-instruction and
/// thread-instruction totals equal to what Accel-Sim counted (`results_kernels.csv`).
#[test]
fn reference_suite_matches_accelsim_counts() {
    let r = common::reference();
    let csv = std::fs::read_to_string(r.join("results_kernels.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let mut by_name = std::collections::HashMap::new();
    for l in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split(',').collect();
        let dir = r.join(f[col("trace_dir")]);
        let app = open_app(&dir, &ParseOptions::default()).unwrap();
        let k = &app.kernels[0];
        let warps: u64 = (0..k.num_ctas()).map(|c| k.cta(c).warps as u64).sum();
        assert_eq!(
            warps,
            f[col("warps_total")].parse::<u64>().unwrap(),
            "{}",
            f[0]
        );
        assert_eq!(
            k.total_warp_insts(),
            f[col("trace_warp_insts")].parse::<u64>().unwrap(),
            "{}",
            f[0]
        );
        let s = gpumodel::trace::inspect::kernel_stats(k.as_ref()).unwrap();
        assert_eq!(
            s.thread_insts,
            f[col("gpu_sim_insn")].parse::<u64>().unwrap(),
            "{}",
            f[0]
        );
        by_name.insert(f[0].to_string(), k.total_warp_insts());
    }
    // Every data row of the CSV is a distinct kernel (the reference set grows: count it).
    let rows = csv.lines().skip(1).filter(|l| !l.trim().is_empty()).count();
    assert_eq!(by_name.len(), rows);
    for e in std::fs::read_dir(r.join("traces/pairs")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let (a, b) = name.split_once('+').unwrap();
        let app = open_app(&e.path(), &ParseOptions::default()).unwrap();
        assert_eq!(app.kernels.len(), 2, "{name}");
        assert_eq!(app.kernels[0].total_warp_insts(), by_name[a]);
        assert_eq!(app.kernels[1].total_warp_insts(), by_name[b]);
        assert_eq!(app.kernels[1].info().stream_id, 2);
    }
}

/// A synthetic kernel written as .gmt and as Accel-Sim text reads back instruction for
/// instruction (the `synth` command's two outputs).
#[test]
fn synthetic_kernels_export_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/examples/random_gather.toml");
    let k = gpumodel::trace::synth::SynthKernel::from_file(&spec).unwrap();
    let want = MemKernel::from_source(&k).unwrap();
    let gmt = dir.path().join("s.gmt");
    let txt = dir.path().join("txt");
    let (code, _, err) = common::cli(&[
        "synth",
        spec.to_str().unwrap(),
        "-o",
        gmt.to_str().unwrap(),
        "--text",
        txt.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let g = MemKernel::from_source(&GmtFile::open(&gmt).unwrap().kernel(0).unwrap()).unwrap();
    assert_eq!(g.ctas, want.ctas);
    assert_eq!(g.statics, want.statics);
    let t = decode_all(&txt);
    let view = |m: &MemKernel| -> Vec<(u32, u32, Vec<u64>)> {
        m.ctas
            .iter()
            .flat_map(|c| c.warps.iter().flatten())
            .map(|d| {
                (
                    m.statics.insts[d.sidx as usize].pc,
                    d.mask,
                    d.addrs().to_vec(),
                )
            })
            .collect()
    };
    assert_eq!(view(&t[0]), view(&want));
}

/// A kernel list that launches one trace file again parses it once: its launches share one
/// kernel (a fuzzed list repeating a file 100 000 times held 1.6 GiB of copies), and a run
/// is the same as with the launches' files distinct.
/// `run INPUT --gpu qv100 --json OUT`'s JSON, the application's name (its folder or file)
/// left out: nothing else may differ between two forms of one application.
fn run_json(input: &Path, out: &Path) -> serde_json::Value {
    let (code, _, err) = common::cli(&[
        "run",
        input.to_str().unwrap(),
        "--gpu",
        "qv100",
        "-q",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    v["apps"][0]["name"] = serde_json::Value::Null;
    v
}

#[test]
fn a_trace_file_launched_again_is_parsed_once() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces/samples/vectoradd_v5_sm80/kernel-1.traceg");
    let d = tempfile::tempdir().unwrap();
    let same = d.path().join("same");
    let distinct = d.path().join("distinct");
    std::fs::create_dir_all(&same).unwrap();
    std::fs::create_dir_all(&distinct).unwrap();
    std::fs::copy(&src, same.join("kernel-1.traceg")).unwrap();
    std::fs::write(
        same.join("kernelslist.g"),
        "kernel-1.traceg\nkernel-1.traceg\nkernel-1.traceg\n",
    )
    .unwrap();
    let mut list = String::new();
    for i in 1..=3 {
        std::fs::copy(&src, distinct.join(format!("kernel-{i}.traceg"))).unwrap();
        list.push_str(&format!("kernel-{i}.traceg\n"));
    }
    std::fs::write(distinct.join("kernelslist.g"), list).unwrap();
    let app = open_app(&same.join("kernelslist.g"), &ParseOptions::default()).unwrap();
    assert_eq!(app.kernels.len(), 3);
    assert!(std::sync::Arc::ptr_eq(&app.kernels[0], &app.kernels[2]));
    let apart = open_app(&distinct.join("kernelslist.g"), &ParseOptions::default()).unwrap();
    assert!(!std::sync::Arc::ptr_eq(
        &apart.kernels[0],
        &apart.kernels[1]
    ));
    let run = |dir: &Path| run_json(&dir.join("kernelslist.g"), &dir.join("run.json"));
    assert_eq!(run(&same), run(&distinct));
}

/// A trace file a list launches again is stored once in a `.gmt` (a TOC entry per launch,
/// naming the same sections), reads back as one kernel shared by its launches, and runs as
/// the text list does.
#[test]
fn a_kernel_launched_again_is_stored_once_in_a_gmt() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces/samples/vectoradd_v5_sm80/kernel-1.traceg");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&src, dir.join("kernel-1.traceg")).unwrap();
    let list = dir.join("kernelslist.g");
    let (one, three) = (d.path().join("one.gmt"), d.path().join("three.gmt"));
    std::fs::write(&list, "kernel-1.traceg\n").unwrap();
    convert(&list, &one, &ParseOptions::default(), &|_, _, _| {}).unwrap();
    std::fs::write(
        &list,
        "kernel-1.traceg\nMemcpyHtoD,0x00007f0000000000,64\nkernel-1.traceg\nkernel-1.traceg\n",
    )
    .unwrap();
    let r = convert(&list, &three, &ParseOptions::default(), &|_, _, _| {}).unwrap();
    assert_eq!(r.kernels, 3);
    // Three launches of three copies of the file store three kernels; of one file, one:
    // the two other launches are TOC entries, no copies of its streams and tables.
    for i in 2..=3 {
        std::fs::copy(&src, dir.join(format!("kernel-{i}.traceg"))).unwrap();
    }
    let copies = dir.join("kernelslist-copies.g");
    std::fs::write(
        &copies,
        "kernel-1.traceg\nMemcpyHtoD,0x00007f0000000000,64\nkernel-2.traceg\nkernel-3.traceg\n",
    )
    .unwrap();
    let apart = d.path().join("apart.gmt");
    convert(&copies, &apart, &ParseOptions::default(), &|_, _, _| {}).unwrap();
    let k = GmtFile::open(&one).unwrap().kernel(0).unwrap();
    let body = k.stream_bytes() + 24 * (k.num_ctas() as u64 + 1);
    let (a, b) = (
        std::fs::metadata(&apart).unwrap().len(),
        std::fs::metadata(&three).unwrap().len(),
    );
    assert!(
        a - b >= 2 * body,
        "3 launches of 1 file {b} B, of 3 files {a} B, a kernel's body {body} B"
    );
    assert_eq!(r.warp_insts, 3 * k.total_warp_insts());
    let app = open_app(&three, &ParseOptions::default()).unwrap();
    assert_eq!(app.kernels.len(), 3);
    assert!(std::sync::Arc::ptr_eq(&app.kernels[0], &app.kernels[2]));
    let text = open_app(&list, &ParseOptions::default()).unwrap();
    assert_eq!(app.commands, text.commands);
    let out = d.path().join("run.json");
    assert_eq!(run_json(&three, &out), run_json(&list, &out));
}

/// A trace file a list launches again is exported once and listed again, with the list's
/// other commands in place; the folder reads back as the same launches.
#[test]
fn a_kernel_launched_again_is_exported_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/samples/vectoradd_v5_sm80");
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(src.join("kernel-1.traceg"), input.join("kernel-1.traceg")).unwrap();
    std::fs::write(
        input.join("kernelslist.g"),
        "MemcpyHtoD,0x00007f0000000000,4096\nkernel-1.traceg\nkernel-1.traceg\nMemcpyHtoD,0x00007f0000001000,64\nkernel-1.traceg\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let (code, _, err) = common::cli(&[
        "export",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["kernel-1.traceg", "kernelslist.g"]);
    let list = std::fs::read_to_string(out.join("kernelslist.g")).unwrap();
    assert_eq!(
        list,
        "MemcpyHtoD,0x00007f0000000000,4096\nkernel-1.traceg\nkernel-1.traceg\nMemcpyHtoD,0x00007f0000001000,64\nkernel-1.traceg\n"
    );
    let (a, b) = (
        open_app(&input, &ParseOptions::default()).unwrap(),
        open_app(&out, &ParseOptions::default()).unwrap(),
    );
    assert_eq!(a.commands, b.commands);
    assert_eq!(b.kernels.len(), 3);
    for (x, y) in a.kernels.iter().zip(&b.kernels) {
        let (x, y) = (
            MemKernel::from_source(x.as_ref()).unwrap(),
            MemKernel::from_source(y.as_ref()).unwrap(),
        );
        assert_eq!(x.ctas, y.ctas);
        assert_eq!(x.statics, y.statics);
    }
}
