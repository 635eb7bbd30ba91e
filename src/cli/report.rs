//! `gpumodel report METRICS_JSON [-o DIR]`: redraws every figure and table of a saved study
//! (`metrics.json`) without re-running the model.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::Error;
use crate::metrics::{
    QueueStudyResults, StudyResults, SweepResults, FIGURE_SETS, QUEUE_KIND, SCHEMA_VERSION,
    SWEEP_KIND,
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

/// Reads a results JSON and checks its syntax and schema version.
fn load_value(path: &Path) -> Result<serde_json::Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::at_line(path, e.line() as u64, format!("malformed JSON: {e}")))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
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
    Ok(value)
}

/// The results' `kind` (empty for one study's results) after checking it, and every
/// figure set the results name, against what `report` draws (exit 2 naming the value and
/// the accepted ones; no silent default).
fn known_kind(path: &Path, value: &serde_json::Value) -> Result<String, Error> {
    let kind = match value.get("kind") {
        None => String::new(),
        Some(serde_json::Value::String(k)) if k == QUEUE_KIND || k == SWEEP_KIND => k.clone(),
        Some(k) => {
            return Err(Error::input(
                path,
                None,
                format!("\"kind\": {k} is not a kind of results; expected \"{SWEEP_KIND}\", \"{QUEUE_KIND}\" or none (one study's results)"),
            ))
        }
    };
    let sets: Vec<&serde_json::Value> = match value.get("points").and_then(|p| p.as_array()) {
        Some(points) if kind == SWEEP_KIND => points
            .iter()
            .filter_map(|p| p.get("results")?.get("figures"))
            .collect(),
        _ => value.get("figures").into_iter().collect(),
    };
    for f in sets {
        if !f
            .as_str()
            .is_some_and(|f| f.is_empty() || FIGURE_SETS.contains(&f))
        {
            return Err(Error::input(
                path,
                None,
                format!(
                    "\"figures\": {f} is not a figure set; expected one of {}",
                    FIGURE_SETS.join(", ")
                ),
            ));
        }
    }
    Ok(kind)
}

/// Whether `report` may write a file named `name`: figures, tables, `results.csv`.
pub(super) fn writes(name: &str, csv: bool) -> bool {
    name.ends_with(".svg") || name.ends_with(".md") || (csv && name == "results.csv")
}

pub fn run(a: &ReportArgs) -> Result<()> {
    let value = load_value(&a.metrics)?;
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
    let kind = known_kind(&a.metrics, &value)?;
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
            let r: QueueStudyResults = serde_json::from_value(value).map_err(|e| {
                Error::input(&a.metrics, None, format!("not queue study results: {e}"))
            })?;
            crate::report::render_queue_study(&r, &dir)?
        }
        SWEEP_KIND => {
            let r: SweepResults = serde_json::from_value(value)
                .map_err(|e| Error::input(&a.metrics, None, format!("not sweep results: {e}")))?;
            crate::report::render_sweep(&r, &dir)?
        }
        _ => {
            let r: StudyResults = serde_json::from_value(value)
                .map_err(|e| Error::input(&a.metrics, None, format!("not study results: {e}")))?;
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
