//! Helpers shared by the report modules (`study`, `multitenancy`, `ugpu`, `queue`,
//! `sweep`): means over a study's runs and writing an output file. They live here, not in
//! `study`, so that `study` can call the other modules' `render` without the modules
//! importing each other in a circle.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::metrics::WorkloadResult;

/// Arithmetic mean (none of nothing).
pub(super) fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Arithmetic mean of `f` over the runs of `policy` in `ws` (non-finite values left out).
pub(super) fn mean_of<'a>(
    ws: impl IntoIterator<Item = &'a WorkloadResult>,
    policy: &str,
    f: fn(&crate::metrics::Summary) -> f64,
) -> Option<f64> {
    let xs: Vec<f64> = ws
        .into_iter()
        .filter_map(|w| w.run(policy).map(|r| f(&r.summary)))
        .filter(|x| x.is_finite())
        .collect();
    mean(&xs)
}

/// Writes `text` to `dir/name` and records the path.
pub(super) fn put(dir: &Path, name: &str, text: &str, out: &mut Vec<PathBuf>) -> Result<()> {
    let path = dir.join(name);
    crate::output::Guard::new()
        .write(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.push(path);
    Ok(())
}
