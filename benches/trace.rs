//! Trace-layer benchmark (`cargo bench --bench trace`): parse/convert throughput on one core
//! and on all cores, `.gmt` size against text and xz-compressed text, and `.gmt` sequential
//! decode throughput, over the Accel-Sim reference kernels in `../shared/reference`.
//! Prints medians of several runs; results are recorded in BENCHMARKS.md.
//!
//! `GPUMODEL_BENCH_QUICK=1` runs one kernel once (a smoke test); `GPUMODEL_BENCH_XZ=0` skips the
//! (slow) xz size column.

mod common;
use common::{median, peak_rss_mib};

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use gpumodel::trace::accel::ParseOptions;
use gpumodel::trace::app::convert;
use gpumodel::trace::gmt::GmtFile;
use gpumodel::trace::{DynInst, KernelSource};

fn decode_all(path: &Path) -> (u64, f64) {
    let f = GmtFile::open(path).unwrap();
    let t = Instant::now();
    let mut n = 0u64;
    let mut d = DynInst::default();
    for k in f.kernels().unwrap() {
        for c in 0..k.num_ctas() {
            for w in 0..k.cta(c).warps {
                let mut s = k.warp(c, w);
                while s.next_inst(&mut d).unwrap() {
                    n += 1;
                }
            }
        }
    }
    (n, t.elapsed().as_secs_f64())
}

fn main() {
    // Criterion passes `--bench`; ignore arguments.
    let quick = std::env::var("GPUMODEL_BENCH_QUICK").is_ok_and(|v| v == "1");
    let with_xz = !std::env::var("GPUMODEL_BENCH_XZ").is_ok_and(|v| v == "0");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/traces/kernels");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .expect("../shared/reference/traces/kernels")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if quick {
        names.truncate(1);
    }
    let reps = if quick { 1 } else { 3 };
    let tmp = tempfile::tempdir().unwrap();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("machine: {cores} cores; medians of {reps} runs");
    println!(
        "{:<14} {:>9} {:>9} | {:>8} {:>8} | {:>8} {:>8} | {:>8} {:>8} {:>7} {:>8} | {:>9} {:>8}",
        "kernel",
        "lines",
        "text MiB",
        "1c Ml/s",
        "1c MB/s",
        "Nc Ml/s",
        "Nc MB/s",
        "gmt KiB",
        "xz KiB",
        "txt/gmt",
        "xz/gmt",
        "dec Mi/s",
        "dec GB/s"
    );
    let (mut tl, mut tb, mut tg, mut tx) = (0u64, 0u64, 0u64, 0u64);
    let (mut t1, mut tn, mut td, mut ti) = (0f64, 0f64, 0f64, 0u64);
    for name in &names {
        // Plain text copy, so the memory-mapped path is what is measured.
        let dir: PathBuf = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(
            std::fs::File::open(root.join(name).join("kernel-1.traceg.gz")).unwrap(),
        )
        .read_to_end(&mut text)
        .unwrap();
        std::fs::write(dir.join("kernel-1.traceg"), &text).unwrap();
        std::fs::write(dir.join("kernelslist.g"), "kernel-1.traceg\n").unwrap();
        let out = dir.join("k.gmt");
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut secs = Vec::new();
            let mut rep = None;
            for _ in 0..reps {
                let t = Instant::now();
                let r = pool
                    .install(|| convert(&dir, &out, &ParseOptions::default(), &|_, _, _| {}))
                    .unwrap();
                secs.push(t.elapsed().as_secs_f64());
                rep = Some(r);
            }
            (median(secs), rep.unwrap())
        };
        let (s1, r) = run(1);
        let (sn, _) = run(cores);
        let xz = if with_xz {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
            e.write_all(&text).unwrap();
            e.finish().unwrap().len() as u64
        } else {
            0
        };
        let dec: Vec<(u64, f64)> = (0..reps).map(|_| decode_all(&out)).collect();
        let dsec = median(dec.iter().map(|d| d.1).collect());
        let n = dec[0].0;
        println!(
            "{:<14} {:>9} {:>9.1} | {:>8.2} {:>8.0} | {:>8.2} {:>8.0} | {:>8.0} {:>8.0} {:>7.1} {:>8.2} | {:>9.0} {:>8.2}",
            name,
            r.text_lines,
            r.text_bytes as f64 / 1048576.0,
            r.text_lines as f64 / s1 / 1e6,
            r.text_bytes as f64 / s1 / 1e6,
            r.text_lines as f64 / sn / 1e6,
            r.text_bytes as f64 / sn / 1e6,
            r.gmt_bytes as f64 / 1024.0,
            xz as f64 / 1024.0,
            r.text_bytes as f64 / r.gmt_bytes as f64,
            xz as f64 / r.gmt_bytes as f64,
            n as f64 / dsec / 1e6,
            r.gmt_bytes as f64 / dsec / 1e9,
        );
        tl += r.text_lines;
        tb += r.text_bytes;
        tg += r.gmt_bytes;
        tx += xz;
        t1 += s1;
        tn += sn;
        td += dsec;
        ti += n;
    }
    println!(
        "{:<14} {:>9} {:>9.1} | {:>8.2} {:>8.0} | {:>8.2} {:>8.0} | {:>8.0} {:>8.0} {:>7.1} {:>8.2} | {:>9.0} {:>8.2}",
        "TOTAL",
        tl,
        tb as f64 / 1048576.0,
        tl as f64 / t1 / 1e6,
        tb as f64 / t1 / 1e6,
        tl as f64 / tn / 1e6,
        tb as f64 / tn / 1e6,
        tg as f64 / 1024.0,
        tx as f64 / 1024.0,
        tb as f64 / tg as f64,
        tx as f64 / tg as f64,
        ti as f64 / td / 1e6,
        tg as f64 / td / 1e9
    );
    println!(
        "peak RSS: {:.0} MiB (includes the largest text trace held for the xz column)",
        peak_rss_mib()
    );
}
