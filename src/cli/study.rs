//! `gpumodel study FILE`: every workload of a study file under every policy; writes
//! `metrics.json` and the figures next to the study file (or into `--out`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::study::run_study;

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// The study file, e.g. reports/warped-slicer/study.toml.
    pub file: PathBuf,
    /// Output folder (default: the study file's folder).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

pub fn run(a: &StudyArgs, quiet: bool) -> Result<()> {
    let pb = super::progress::count_bar(quiet, "study");
    let tick = |what: &str, d: usize, t: usize| {
        pb.set_message(what.to_string());
        pb.set_length(t as u64);
        pb.set_position(d as u64);
    };
    let t0 = std::time::Instant::now();
    let r = run_study(&a.file, &tick)?;
    pb.finish_and_clear();
    let runs: usize = r
        .workloads
        .iter()
        .flat_map(|w| w.runs.iter().map(|p| p.runs))
        .sum();
    eprintln!(
        "{}: {} workloads, {} engine runs in {:.1} s",
        r.study,
        r.workloads.len(),
        runs,
        t0.elapsed().as_secs_f64()
    );
    super::analyze::print_table(&r);
    let dir = a.out.clone().unwrap_or_else(|| {
        a.file
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("."))
    });
    super::analyze::save(&r, &dir)
}
