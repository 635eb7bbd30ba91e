//! `gpumodel card`: measures a suite's workload card (`traces/<paper>/card.toml`) on the
//! engine and compares every row with the paper; a table, `--json`, `--markdown` (the
//! suite's CARD.md) and `--svg` curves. Exit 1 when a row does not do what the card expects.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::card::{self, render, Card};
use crate::profile::{self, ProfileOptions};

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel card traces/slate")]
pub struct CardArgs {
    /// Card file (`traces/<paper>/card.toml`) or the suite folder holding it.
    pub card: PathBuf,
    /// GPU model (built-in name or .toml); default: the card's (the paper's) model.
    #[arg(long)]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub overrides: super::SetArgs,
    /// Write every row with the engine's value and verdict as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the card as Markdown here (the suite's generated CARD.md).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the measured curves (SVG) into this folder.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Measure only the rows of these benchmarks (repeatable).
    #[arg(long, value_name = "BENCH")]
    pub only: Vec<String>,
    /// Exit 1 on any row outside its tolerance, even one marked `expect = "fail"`.
    #[arg(long)]
    pub strict: bool,
    /// Points of the SM-count and channel-count sweeps.
    #[arg(long, default_value_t = profile::points::DEFAULT_POINTS as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub points: u32,
}

pub fn run(a: &CardArgs, quiet: bool) -> Result<()> {
    let mut card = Card::load(&a.card)?;
    let card_path = card.path.clone();
    let inputs = [&card_path];
    for out in [&a.json, &a.markdown].into_iter().flatten() {
        super::check_output(out, &inputs)?;
    }
    if let Some(dir) = &a.svg {
        super::check_output_dir(dir)?;
    }
    if !a.only.is_empty() {
        card.retain_benches(&a.only)?;
    }
    let gpu = a.gpu.clone().unwrap_or_else(|| card.model_name());
    let spec = a.overrides.load(&gpu)?;
    let benches = card::benches(&card);
    let apps = card::load_apps(&benches)?;
    let opts = ProfileOptions {
        points: a.points as usize,
        ..ProfileOptions::default()
    };
    let pb = super::progress::runs_bar(
        quiet,
        card::run_count(&spec, &benches, &apps, &opts)? as u64,
        format!("{} benchmarks on {}", benches.len(), spec.name),
    );
    let profiles = card::measure(&spec, &benches, &apps, &opts, &|| pb.inc(1))?;
    pb.finish_and_clear();
    let res = card::evaluate(&card, &spec.name, &benches, &apps, &profiles);
    print!("{}", render::table(&res));
    let guard = crate::output::Guard::of(inputs);
    if let Some(path) = &a.json {
        guard.write(path, res.to_json()?.as_bytes())?;
    }
    if let Some(path) = &a.markdown {
        guard.write(path, render::markdown(&res).as_bytes())?;
    }
    if let Some(dir) = &a.svg {
        for p in &profiles {
            for (name, chart) in profile::figures::charts(p) {
                crate::report::write_svg(&chart, &dir.join(name))?;
            }
        }
    }
    let bad = if a.strict {
        res.failed()
    } else {
        res.unexpected()
    };
    if bad > 0 {
        let what = if a.strict {
            "outside tolerance"
        } else {
            "not as the card expects"
        };
        let names: Vec<String> = res
            .rows
            .iter()
            .filter(|r| if a.strict { !r.pass } else { !r.as_expected })
            .map(|r| {
                format!(
                    "{} {} (card line {})",
                    r.row.bench,
                    r.row.what.name(),
                    r.card_line
                )
            })
            .collect();
        bail!("{bad} row(s) {what}: {}", names.join(", "));
    }
    Ok(())
}
