//! `gpumodel report METRICS_JSON [-o DIR]`: redraws every figure and table of a saved study
//! (`metrics.json`) without re-running the model.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::Error;
use crate::metrics::{
    QueueStudyResults, StudyResults, SweepResults, QUEUE_KIND, SCHEMA_VERSION, SWEEP_KIND,
};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Study results written by `study` or `analyze` (metrics.json).
    pub metrics: PathBuf,
    /// Folder for the figures and tables (default: the folder of METRICS_JSON).
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write `results.csv`: one row per workload × policy × application (tidy data
    /// for pandas / R; columns in `report::csv::COLUMNS`, documented in ARCHITECTURE.md).
    #[arg(long)]
    pub csv: bool,
}

/// Checks a results JSON's syntax and schema version (one streaming pass, no document in
/// memory); its `kind`.
fn load_kind(path: &Path) -> Result<String, Error> {
    let head = crate::infile::json_head(path)?;
    match head.schema_version {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(Error::input(
                path,
                None,
                format!("schema_version {v}, this gpumodel reads {SCHEMA_VERSION}"),
            ))
        }
        None => {
            return Err(Error::input(
                path,
                None,
                "not study results: no numeric schema_version",
            ))
        }
    }
    Ok(head.kind.unwrap_or_default())
}

pub fn run(a: &ReportArgs) -> Result<()> {
    let kind = load_kind(&a.metrics)?;
    let dir = match &a.out {
        Some(d) => d.clone(),
        None => match a.metrics.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    super::check_output_dir(&dir)?;
    if a.csv && (kind == QUEUE_KIND || kind == SWEEP_KIND) {
        let why = if kind == SWEEP_KIND {
            "a sweep holds one result set per point"
        } else {
            "a queue study has none (its metrics.json is the data)"
        };
        return Err(Error::Usage(format!(
            "{}: --csv writes the workload x policy x application rows of one result set; {why}",
            a.metrics.display()
        ))
        .into());
    }
    let paths = match kind.as_str() {
        QUEUE_KIND => {
            let r: QueueStudyResults =
                crate::infile::json_typed(&a.metrics, "not queue study results")?;
            crate::report::render_queue_study(&r, &dir)?
        }
        SWEEP_KIND => {
            let r: SweepResults = crate::infile::json_typed(&a.metrics, "not sweep results")?;
            crate::report::render_sweep(&r, &dir)?
        }
        _ => {
            let r: StudyResults = crate::infile::json_typed(&a.metrics, "not study results")?;
            let mut paths = crate::report::render_study(&r, &dir)?;
            if a.csv {
                let path = dir.join("results.csv");
                crate::output::Guard::new()
                    .write(&path, crate::report::csv::to_csv(&r)?.as_bytes())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                paths.push(path);
            }
            paths
        }
    };
    for p in paths {
        println!("{}", p.display());
    }
    Ok(())
}
