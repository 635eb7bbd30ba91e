//! `gpumodel run`: applications alone or together on one GPU model, a table and `--json`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::engine::{AppSpec, RunMode, RunStats};
use crate::policy::{execute_with, PolicySpec, Workload};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app_with;

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  gpumodel run --gpu fermi-ws traces/warped-slicer/hot.toml traces/warped-slicer/lbm.toml --share even"
)]
pub struct RunArgs {
    /// Applications: .gmt, Accel-Sim folder / kernelslist.g / .traceg, NVBit log, synthetic spec.
    #[arg(required = true)]
    pub apps: Vec<PathBuf>,
    #[command(flatten)]
    pub model: super::GpuArgs,
    /// How the applications share the GPU: any policy (`gpumodel policies` lists them;
    /// e.g. left-over, round-robin, even, spatial, time-slice, warped-slicer, sim, slate).
    #[arg(long, default_value = "left-over", value_name = "POLICY")]
    pub share: String,
    /// A parameter of the `--share` policy, `POLICY.KEY=VALUE` (repeatable).
    #[arg(long = "policy-param", value_name = "POLICY.KEY=VALUE")]
    pub policy_param: Vec<String>,
    /// Stop after this many core cycles (fixed window; finished applications relaunch).
    #[arg(long, value_name = "CYCLES")]
    pub window: Option<u64>,
    /// Safety stop: not finishing within this many cycles is an error (exit 1) naming
    /// the applications still running. (A `--window` run ends at its window.)
    #[arg(long, default_value_t = crate::engine::MAX_CYCLES, value_name = "CYCLES")]
    pub max_cycles: u64,
    /// Occupancy sample period in cycles (0: none; otherwise at least 100).
    #[arg(long, default_value_t = 1000, value_parser = sample_period)]
    pub sample: u64,
    #[command(flatten)]
    pub ff: super::FfArgs,
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

pub fn run(a: &RunArgs, quiet: bool) -> Result<()> {
    if let Some(j) = &a.json {
        // Before any work: a bad output path is reported now, not after the run.
        let inputs: Vec<&PathBuf> = a.apps.iter().collect();
        super::check_output(j, &inputs)?;
    }
    let spec = a.model.load()?;
    // The policy and its parameters before any input is read: a bad option is reported
    // at once, not after the traces are loaded.
    let params = crate::policy::parse_params(&a.policy_param)?;
    let policy = PolicySpec::parse_list_with(&a.share, &params)?;
    let [policy] = policy.as_slice() else {
        return Err(crate::error::Error::Usage(format!(
            "--share takes one policy, got `{}`",
            a.share
        ))
        .into());
    };
    let opts = ParseOptions {
        lenient_opcodes: a.lenient_opcodes,
        ..ParseOptions::default()
    };
    let pb = super::progress::parse_bar(quiet);
    let mut apps = Vec::new();
    for p in &a.apps {
        pb.set_message(format!("loading {}", p.display()));
        let app = open_app_with(p, &opts, &|d, n, b| super::progress::report(&pb, d, n, b))?;
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
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: match a.window {
            Some(w) => RunMode::Window(w),
            None => RunMode::Completion,
        },
    };
    let names: Vec<&str> = apps.iter().map(|x| x.name.as_str()).collect();
    policy.check_run(&names, a.max_cycles)?;
    let built = policy.build();
    built
        .applies(&w)
        .map_err(|why| crate::error::Error::Usage(format!("policy {}: {why}", policy.name())))?;
    let t0 = std::time::Instant::now();
    // Aged jumps by default where they were measured to be the most exact: one
    // application run to completion (BENCHMARKS.md, "Prefixes by the progress curve").
    let ff = a.ff.config_with(apps.len() == 1 && a.window.is_none());
    if let Some(f) = &ff {
        let times = |n: u32| match n {
            0 => "unbounded".to_string(),
            n => format!("at most {n} times their measured span"),
        };
        let corun = if apps.len() > 1 && a.window.is_some() {
            format!("; co-run jumps {}", times(f.corun_stride))
        } else {
            String::new()
        };
        eprintln!(
            "note: fast-forward with {} jumps, {}{corun}",
            if f.age { "aged" } else { "plain" },
            times(f.stride),
        );
    }
    let out = execute_with(built.as_ref(), &w, a.max_cycles, a.sample, ff)?;
    for l in &out.log {
        eprintln!("{}: {l}", out.policy);
    }
    let stats = out.stats;
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
    if let Some(f) = &stats.fast_forward {
        let names: Vec<&str> = stats.apps.iter().map(|a| a.name.as_str()).collect();
        eprintln!("{}", ff_summary(f, stats.cycles, &names));
    }
    if let Some(path) = &a.json {
        write_json(path, &stats, &a.apps)?;
    }
    Ok(())
}

/// One line on what fast-forward skipped: cycles, jumps, what ended them, relaunches,
/// and for co-run jumps the largest difference between an application's rates over the
/// two halves of its measured span (`names`: the applications').
fn ff_summary(f: &crate::engine::FfStats, cycles: u64, names: &[&str]) -> String {
    let mut why: Vec<(&str, usize)> = Vec::new();
    for j in &f.jumps {
        match why.iter_mut().find(|w| w.0 == j.ended_by) {
            Some(w) => w.1 += 1,
            None => why.push((&j.ended_by, 1)),
        }
    }
    let passes: u64 = f.jumps.iter().map(|j| j.passes).sum();
    let mut line = format!(
        "fast-forward: {} of {} cycles skipped ({:.1}%) in {} jump{}",
        f.cycles,
        cycles,
        100.0 * f.cycles as f64 / cycles.max(1) as f64,
        f.jumps.len(),
        if f.jumps.len() == 1 { "" } else { "s" }
    );
    if !why.is_empty() {
        let ended: Vec<String> = why.iter().map(|(w, n)| format!("{w} {n}")).collect();
        line += &format!(" (ended by: {})", ended.join(", "));
    }
    if passes > 0 {
        line += &format!("; {passes} whole relaunches retired");
    }
    let spread = f
        .jumps
        .iter()
        .flat_map(|j| j.spread_bp.iter().enumerate())
        .max_by_key(|&(b, bp)| (*bp, std::cmp::Reverse(b)));
    if let Some((b, bp)) = spread {
        line += &format!(
            "; co-run rates differ by up to {:.1}% between the halves of a measured span ({})",
            f64::from(*bp) / 100.0,
            names.get(b).copied().unwrap_or("?")
        );
    }
    if f.jumps.is_empty() {
        line += " (no steady span with room to jump: launches too short, or too few waves)";
    }
    line
}

/// Writes the run's results to `path`, replacing none of the inputs `apps`.
pub fn write_json(path: &std::path::Path, stats: &RunStats, apps: &[PathBuf]) -> Result<()> {
    crate::output::Guard::of(apps).write(
        path,
        (serde_json::to_string_pretty(stats)? + "\n").as_bytes(),
    )?;
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

/// `--sample`: 0 (no samples) or a period of at least [`MIN_PERIOD`] cycles; every sample
/// is an engine event, so a period of a cycle or two would make a run crawl.
fn sample_period(s: &str) -> std::result::Result<u64, String> {
    let v: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if v != 0 && v < crate::policy::MIN_PERIOD {
        return Err(format!(
            "expected 0 (no samples) or at least {} cycles",
            crate::policy::MIN_PERIOD
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FfJump, FfStats};

    fn jump(cycles: u64, why: &str, passes: u64) -> FfJump {
        FfJump {
            at: 0,
            cycles,
            ctas: vec![1],
            warp_insts: vec![1],
            aged: vec![0],
            held_back: vec![0],
            ended_by: why.into(),
            passes,
            corun: false,
            spread_bp: Vec::new(),
        }
    }

    #[test]
    fn the_summary_counts_jumps_by_what_ended_them() {
        let f = FfStats {
            cycles: 750,
            jumps: vec![
                jump(500, "tail", 0),
                jump(200, "event", 3),
                jump(50, "tail", 0),
            ],
            prefix_insts: 0,
        };
        assert_eq!(
            ff_summary(&f, 1000, &["a"]),
            "fast-forward: 750 of 1000 cycles skipped (75.0%) in 3 jumps \
             (ended by: tail 2, event 1); 3 whole relaunches retired"
        );
        let none = FfStats {
            cycles: 0,
            jumps: Vec::new(),
            prefix_insts: 0,
        };
        assert!(ff_summary(&none, 10, &["a"]).contains("0 jumps (no steady span"));
        let mut co = jump(900, "end", 4);
        co.corun = true;
        co.spread_bp = vec![120, 650];
        let two = FfStats {
            cycles: 900,
            jumps: vec![co],
            prefix_insts: 0,
        };
        assert!(
            ff_summary(&two, 1000, &["lbm", "cp"]).ends_with(
                "; co-run rates differ by up to 6.5% between the halves of a measured span (cp)"
            ),
            "{}",
            ff_summary(&two, 1000, &["lbm", "cp"])
        );
    }
}
