//! `gpumodel validate DIR`: accuracy against a reference simulator's results.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Folder laid out like ../shared/reference (traces/, results_kernels.csv, results_pairs.csv).
    pub dir: PathBuf,
    /// GPU model the reference ran (built-in name or .toml path).
    #[arg(long, default_value = "qv100")]
    pub gpu: String,
    /// Override a model value, e.g. `--set l2.latency=150` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print JSON (kernel_cycle_mae_pct, pair_slowdown_mae_pct, kernels, pairs).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &ValidateArgs, _quiet: bool) -> Result<()> {
    let spec = super::load_gpu(&a.gpu, &a.set)?;
    let r = crate::validate::validate(&a.dir, &spec)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
