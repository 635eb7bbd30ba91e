//! `gpumodel validate DIR`: accuracy against a reference simulator's results.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel validate ../shared/reference --no-leave-one-out")]
pub struct ValidateArgs {
    /// Folder laid out like ../shared/reference (traces/, results_kernels.csv, results_pairs.csv).
    pub dir: PathBuf,
    #[command(flatten)]
    pub model: super::GpuArgs,
    /// Print JSON (kernel_cycle_mae_pct, pair_slowdown_mae_pct, kernels, pairs).
    #[arg(long)]
    pub json: bool,
    /// Skip the leave-one-out figures (reported by default beside the ordinary ones:
    /// every value fitted to the reference, models/CALIBRATION.md, refitted without the
    /// case predicted; they run the kernels once per grid value tried, several times the
    /// plain run's work).
    #[arg(long)]
    pub no_leave_one_out: bool,
    /// `--fast-forward`: the kernel and pair figures again with steady-state
    /// fast-forward, reported beside the detailed ones (which stay the default).
    #[command(flatten)]
    pub ff: super::FfArgs,
    /// Keep every mechanism of the model on, even those the reference simulator lacks
    /// (by default `validate` turns those off when the folder's results come from
    /// Accel-Sim: its `reference.toml`, or no such file).
    #[arg(long)]
    pub all_mechanisms: bool,
}

pub fn run(a: &ValidateArgs, _quiet: bool) -> Result<()> {
    let spec = a.model.load()?;
    let r = crate::validate::validate_as(
        &a.dir,
        &spec,
        !a.no_leave_one_out,
        a.ff.config(),
        !a.all_mechanisms,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
