//! `gpumodel run`: applications alone or together on one GPU model, a table and `--json`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::engine::{self, AppSpec, DispatchOrder, Placement, RunConfig, RunMode, RunStats};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Share {
    /// Hardware default: the first kernel takes all it can, later ones get what is left.
    LeftOver,
    /// CTA dispatch alternates between kernels.
    RoundRobin,
    /// Each application gets an equal share of every SM resource (intra-SM).
    Even,
    /// SMs split equally between applications (inter-SM).
    Spatial,
    /// Applications time-share the whole GPU (CUDA time slicing across processes).
    TimeSlice,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Applications: .gmt, Accel-Sim folder / kernelslist.g / .traceg, NVBit log, synthetic spec.
    #[arg(required = true)]
    pub apps: Vec<PathBuf>,
    #[command(flatten)]
    pub model: super::GpuArgs,
    /// How the applications share the GPU.
    #[arg(long, value_enum, default_value = "left-over")]
    pub share: Share,
    /// Stop after this many core cycles (fixed window; finished applications relaunch).
    #[arg(long, value_name = "CYCLES")]
    pub window: Option<u64>,
    /// Safety stop: not finishing within this many cycles is an error (exit 1) naming
    /// the applications still running. (A `--window` run ends at its window.)
    #[arg(long, default_value_t = 2_000_000_000, value_name = "CYCLES")]
    pub max_cycles: u64,
    /// Occupancy sample period in cycles (0: none).
    #[arg(long, default_value_t = 1000)]
    pub sample: u64,
    /// Write the full results (schema-versioned JSON with the effective model) here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Treat unknown opcodes as integer ALU ops instead of failing.
    #[arg(long)]
    pub lenient_opcodes: bool,
    /// Each CUDA stream of an input becomes its own application (e.g. an Accel-Sim trace of
    /// concurrent kernels).
    #[arg(long)]
    pub split_streams: bool,
}

/// Builds the run configuration for `n` applications shared as `share`.
pub fn config_for(share: Share, n: usize, sms: u32, window: Option<u64>) -> RunConfig {
    let mut cfg = RunConfig::completion(n);
    if let Some(w) = window {
        cfg.mode = RunMode::Window(w);
    }
    let mut p = Placement::left_over(n);
    match share {
        Share::LeftOver => {}
        Share::RoundRobin => p.order = DispatchOrder::RoundRobin,
        Share::Even => {
            p.order = DispatchOrder::RoundRobin;
            for a in &mut p.apps {
                a.fraction = Some(1.0 / n as f64);
            }
        }
        Share::Spatial => {
            for (i, a) in p.apps.iter_mut().enumerate() {
                a.sms = Some(
                    (0..sms as usize)
                        .map(|s| s * n / sms as usize == i)
                        .collect(),
                );
            }
        }
        Share::TimeSlice => p.time_slicing = true,
    }
    cfg.placement = p;
    cfg
}

pub fn run(a: &RunArgs, quiet: bool) -> Result<()> {
    let spec = a.model.load()?;
    let opts = ParseOptions {
        lenient_opcodes: a.lenient_opcodes,
        ..ParseOptions::default()
    };
    let pb = super::progress::parse_bar(quiet);
    let mut apps = Vec::new();
    for p in &a.apps {
        pb.set_message(format!("loading {}", p.display()));
        let app = open_app(p, &opts)?;
        for n in &app.notes {
            eprintln!("note: {n}");
        }
        let parts = if a.split_streams {
            crate::validate::by_stream(&app.name, &app.kernels)
        } else {
            vec![AppSpec::new(app.name.clone(), app.kernels.clone())]
        };
        for mut spec_app in parts {
            // Two inputs with one name stay distinguishable in the table.
            if apps.iter().any(|x: &AppSpec| x.name == spec_app.name) {
                spec_app.name = format!("{}#{}", spec_app.name, apps.len());
            }
            apps.push(spec_app);
        }
    }
    pb.set_message(format!("simulating on {}", spec.name));
    let mut cfg = config_for(a.share, apps.len(), spec.sm.count, a.window);
    cfg.sample_every = a.sample;
    cfg.max_cycles = a.max_cycles;
    let t0 = std::time::Instant::now();
    let stats = engine::run_static(&spec, &apps, &cfg)?;
    let wall = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();
    print_table(&stats);
    let wi = stats.gpu.warp_insts as f64;
    eprintln!(
        "simulated {} cycles, {:.0} warp instructions in {:.2} s ({:.1} M warp-inst/s)",
        stats.cycles,
        wi,
        wall,
        wi / wall.max(1e-9) / 1e6
    );
    if let Some(path) = &a.json {
        write_json(path, &stats)?;
    }
    Ok(())
}

pub fn write_json(path: &std::path::Path, stats: &RunStats) -> Result<()> {
    if let Some(d) = path.parent() {
        if !d.as_os_str().is_empty() {
            std::fs::create_dir_all(d)?;
        }
    }
    std::fs::write(path, serde_json::to_string_pretty(stats)? + "\n")?;
    Ok(())
}

/// Prints one row per application and kernel.
pub fn print_table(s: &RunStats) {
    println!(
        "{:<24} {:>10} {:>12} {:>8} {:>6} {:>6} {:>6} {:>8} {:>8}  stalls short/mem/unit/bar %",
        "app / kernel",
        "cycles",
        "warp insts",
        "IPC",
        "ISU",
        "L1 hit",
        "L2 hit",
        "DRAM GB/s",
        "L2 MPKI"
    );
    let ghz = s.model.clocks.core.hz() as f64 / 1e9;
    for a in &s.apps {
        let st = &a.counters.stalls;
        let tot = st.total().max(1) as f64;
        println!(
            "{:<24} {:>10} {:>12} {:>8.2} {:>6.3} {:>6.3} {:>6.3} {:>8.1} {:>8.1}  {:.0}/{:.0}/{:.0}/{:.0}",
            a.name,
            a.cycles,
            a.counters.warp_insts,
            a.rates.ipc,
            a.rates.isu,
            a.rates.l1_hit_rate,
            a.rates.l2_hit_rate,
            a.rates.dram_bytes_per_cycle * ghz,
            a.rates.l2_mpki,
            100.0 * st.short_raw as f64 / tot,
            100.0 * st.long_memory as f64 / tot,
            100.0 * st.unit_busy as f64 / tot,
            100.0 * st.barrier as f64 / tot,
        );
        if a.kernels.len() > 1 {
            for k in &a.kernels {
                println!(
                    "  {:<22} {:>10} {:>12} {:>8.2}",
                    k.name, k.cycles, k.warp_insts, k.ipc
                );
            }
        }
    }
    println!(
        "{:<24} {:>10} {:>12} {:>8.2}",
        "GPU", s.cycles, s.gpu.warp_insts, s.gpu_rates.ipc
    );
}
