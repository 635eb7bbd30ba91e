//! `gpumodel profile`: isolated runs of one application (performance vs CTAs per SM, SM
//! count and channel count, alone-run rates, class labels); a table, `--json` and `--svg`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::engine::AppSpec;
use crate::profile::{self, ProfileOptions};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app;

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  gpumodel profile --gpu fermi-ws traces/warped-slicer/mm.toml --svg figs/"
)]
pub struct ProfileArgs {
    /// Application: .gmt, Accel-Sim folder / kernelslist.g / .traceg, NVBit log, synthetic spec.
    pub app: PathBuf,
    #[command(flatten)]
    pub model: super::GpuArgs,
    /// Write the profile (schema-versioned JSON with the effective model) here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write SVG charts (IPC vs CTAs per SM, vs SMs, vs channels) into this folder.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Points of the SM-count and channel-count sweeps (5: 1/8, 1/4, 1/2, 3/4, 1).
    #[arg(long, default_value_t = profile::points::DEFAULT_POINTS as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub points: u32,
    /// Treat unknown opcodes as integer ALU ops instead of failing.
    #[arg(long)]
    pub lenient_opcodes: bool,
    #[command(flatten)]
    pub ff: super::FfArgs,
}

pub fn run(a: &ProfileArgs, quiet: bool) -> Result<()> {
    // Outputs are checked before the sweep runs.
    if let Some(path) = &a.json {
        super::check_output(path, &[&a.app])?;
    }
    if let Some(dir) = &a.svg {
        super::check_output_dir(dir)?;
    }
    let spec = a.model.load()?;
    let opts = ParseOptions {
        lenient_opcodes: a.lenient_opcodes,
        ..ParseOptions::default()
    };
    let app = open_app(&a.app, &opts)?;
    for n in &app.notes {
        eprintln!("note: {n}");
    }
    let app = AppSpec::new(app.name.clone(), app.kernels.clone());
    let popts = ProfileOptions {
        points: a.points as usize,
        fast_forward: a.ff.config(),
        ..ProfileOptions::default()
    };
    let pb = super::progress::runs_bar(
        quiet,
        profile::run_count(&spec, &app, &popts)? as u64,
        format!("profiling {} on {}", app.name, spec.name),
    );
    let p = profile::profile(&spec, &app, &popts, &|| pb.inc(1))?;
    pb.finish_and_clear();
    print!("{}", profile::table::render(&p));
    if let Some(path) = &a.json {
        crate::output::Guard::of([&a.app]).write(path, p.to_json()?.as_bytes())?;
    }
    if let Some(dir) = &a.svg {
        for (name, chart) in profile::figures::charts(&p) {
            crate::report::write_svg(&chart, &dir.join(name))?;
        }
    }
    Ok(())
}
