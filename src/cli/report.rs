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
#[command(after_help = "Example:\n  gpumodel report reports/slate/metrics.json --out redrawn/")]
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
fn load_kind(path: &Path) -> Result<Option<String>, Error> {
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
    Ok(head.kind)
}

/// The results' `kind` from their head (empty for one study's results) after checking it
/// against what `report` draws (exit 2 naming the value and the accepted ones; no silent
/// default).
fn known_kind(path: &Path, kind: Option<String>) -> Result<String, Error> {
    match kind {
        None => Ok(String::new()),
        Some(k) if k == QUEUE_KIND || k == SWEEP_KIND => Ok(k),
        Some(k) => Err(Error::input(
            path,
            None,
            format!(
                "\"kind\": {k:?} is not a kind of results; expected \"{SWEEP_KIND}\", \"{QUEUE_KIND}\" or none (one study's results)"
            ),
        )),
    }
}

/// Checks a result set's figure set against what `report` draws.
fn known_figures(path: &Path, r: &StudyResults) -> Result<(), Error> {
    let sets = crate::policy::PolicySpec::figure_set_names();
    if r.figures.is_empty() || sets.contains(&r.figures.as_str()) {
        return Ok(());
    }
    Err(Error::input(
        path,
        None,
        format!(
            "\"figures\": {:?} is not a figure set; expected one of {}",
            r.figures,
            sets.join(", ")
        ),
    ))
}

/// Whether `report` may write a file named `name`: figures, tables, `results.csv`.
pub(super) fn writes(name: &str, csv: bool) -> bool {
    name.ends_with(".svg") || name.ends_with(".md") || (csv && name == "results.csv")
}

pub fn run(a: &ReportArgs) -> Result<()> {
    let kind = known_kind(&a.metrics, load_kind(&a.metrics)?)?;
    let dir = match &a.out {
        Some(d) => d.clone(),
        None => match a.metrics.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    super::check_output_dir(&dir)?;
    // The input is never an output: refused up front when it lies where a figure or
    // table goes, and protected from every writer (a hard link under another name).
    crate::output::protect_input(&a.metrics);
    crate::output::check_input_outside(&a.metrics, &dir, |n| writes(n, a.csv))?;
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
            for p in &r.points {
                known_figures(&a.metrics, &p.results)?;
            }
            crate::report::render_sweep(&r, &dir)?
        }
        _ => {
            let r: StudyResults = crate::infile::json_typed(&a.metrics, "not study results")?;
            known_figures(&a.metrics, &r)?;
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
