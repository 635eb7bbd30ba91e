//! `gpumodel inspect`: per-kernel characterisation as a table or JSON.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use crate::trace::accel::ParseOptions;
use crate::trace::app::{detect, open_app_with, InputKind};
use crate::trace::inspect::{kernel_stats_with, KernelStats};
use crate::trace::inst::KernelInfo;

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel inspect traces/samples/bfs_v3_sm80 --gpu qv100")]
pub struct InspectArgs {
    /// Any input: .gmt, Accel-Sim folder / kernelslist.g / .traceg, NVBit log, synthetic spec.
    pub input: PathBuf,
    #[command(flatten)]
    pub model: super::GpuArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Count unknown opcodes and treat them as integer ALU ops instead of failing.
    #[arg(long)]
    pub lenient_opcodes: bool,
}

#[derive(Serialize)]
struct KernelReport {
    info: KernelInfo,
    static_insts: usize,
    occupancy: Option<serde_json::Value>,
    stats: KernelStats,
}

#[derive(Serialize)]
struct Report {
    schema: u32,
    input: String,
    app: String,
    gpu: String,
    kernels: Vec<KernelReport>,
    notes: Vec<String>,
}

pub fn run(a: &InspectArgs, quiet: bool) -> Result<()> {
    if let InputKind::Counts(p) = detect(&a.input)? {
        let counts = crate::trace::nvbit::parse_counts(&p)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&counts)?);
        } else {
            for k in counts {
                println!(
                    "kernel {} {}: {} thread blocks, {} instructions (total so far {})",
                    k.id, k.name, k.thread_blocks, k.kernel_insts, k.total_insts
                );
                for (op, n) in k.opcodes {
                    println!("  {op:<24} {n}");
                }
            }
        }
        return Ok(());
    }
    let opts = ParseOptions {
        lenient_opcodes: a.lenient_opcodes,
        ..Default::default()
    };
    let pb = super::progress::parse_bar(quiet);
    let app = open_app_with(&a.input, &opts, &|d, n, b| {
        super::progress::report(&pb, d, n, b)
    });
    pb.finish_and_clear();
    let app = app?;
    let spec = a.model.load()?;
    let occ = super::occupancy_fn(&spec);
    let mut kernels: Vec<KernelReport> = Vec::new();
    // A trace file launched again is one shared kernel (`open_app`): its statistics are
    // computed once (a list launching one file 100 000 times took 12 s, now one pass).
    let refs: Vec<&dyn crate::trace::KernelSource> =
        app.kernels.iter().map(|k| k.as_ref()).collect();
    let first = crate::trace::source::first_launches(&refs);
    let distinct = (0..refs.len()).filter(|&i| first[i] == i);
    let blocks = distinct.map(|i| refs[i].num_ctas() as u64).sum();
    let bar = super::progress::count_bar_of(quiet, "thread blocks scanned", blocks);
    for (i, k) in app.kernels.iter().enumerate() {
        let stats = match first[i] {
            f if f < i => kernels[f].stats.clone(),
            _ => kernel_stats_with(k.as_ref(), &|| bar.inc(1)).map_err(|e| {
                bar.finish_and_clear();
                e.into_input(&a.input)
            })?,
        };
        kernels.push(KernelReport {
            info: k.info().clone(),
            static_insts: k.statics().insts.len(),
            occupancy: occ(k.info()),
            stats,
        });
    }
    bar.finish_and_clear();
    let report = Report {
        schema: 1,
        input: a.input.display().to_string(),
        app: app.name.clone(),
        gpu: a.model.gpu.clone(),
        kernels,
        notes: app.notes.clone(),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    println!("{}: {} kernel(s)", report.app, report.kernels.len());
    for (i, k) in report.kernels.iter().enumerate() {
        print_kernel(i, k);
    }
    Ok(())
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

fn print_kernel(i: usize, k: &KernelReport) {
    let inf = &k.info;
    let s = &k.stats;
    println!();
    println!("kernel {} ({}): {}", i, inf.id, inf.name);
    println!(
        "  grid ({},{},{})  block ({},{},{})  regs {}  smem {} B  sm_{}  stream {}",
        inf.grid[0],
        inf.grid[1],
        inf.grid[2],
        inf.block[0],
        inf.block[1],
        inf.block[2],
        inf.nregs,
        inf.shmem,
        inf.binary_version,
        inf.stream_id
    );
    if let Some(o) = &k.occupancy {
        match o.get("error") {
            Some(e) => println!("  occupancy: {}", e.as_str().unwrap_or("does not fit")),
            None => println!(
                "  occupancy: {} CTAs/SM ({} warps), limited by {}",
                o.get("ctas_per_sm")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                o.get("warps_per_sm")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                o.get("limiter")
                    .map(|v| v.to_string().trim_matches('"').to_string())
                    .unwrap_or_default()
            ),
        }
    }
    println!(
        "  CTAs {}  warps {}  warp instructions {}  thread instructions {}  masked-off {:.1}%  static {}",
        s.ctas,
        s.warps,
        s.warp_insts,
        s.thread_insts,
        pct(s.masked_off, s.warp_insts),
        k.static_insts
    );
    let mix: Vec<String> = s
        .by_unit
        .iter()
        .map(|(u, n)| format!("{u} {:.1}%", pct(*n, s.warp_insts)))
        .collect();
    println!("  mix by unit: {}", mix.join(", "));
    let mem: Vec<String> = s
        .mem_by_space
        .iter()
        .map(|(u, n)| format!("{u} {n}"))
        .collect();
    println!(
        "  memory instructions: {}",
        if mem.is_empty() {
            "none".into()
        } else {
            mem.join(", ")
        }
    );
    // Past the exact count's limit the footprint is a HyperLogLog estimate: marked "~".
    let approx = if s.footprint_approx { "~" } else { "" };
    println!(
        "  global/local requests {}  sectors/request {:.2}  footprint {approx}{} lines ({approx}{:.2} MiB){}",
        s.gmem_requests,
        s.sectors_per_request,
        s.footprint_lines,
        s.footprint_bytes as f64 / (1 << 20) as f64,
        if s.footprint_approx {
            " (estimated)"
        } else {
            ""
        }
    );
    let st: Vec<String> = s
        .stride_hist
        .iter()
        .map(|(b, n)| format!("{b} {:.1}%", pct(*n, s.gmem_requests)))
        .collect();
    println!(
        "  lane strides: {}",
        if st.is_empty() {
            "n/a".into()
        } else {
            st.join(", ")
        }
    );
}
