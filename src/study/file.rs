//! A study file run end to end in one process: [`plan::prepare`](super::plan::prepare),
//! every job, optionally the fast-forward check of [`ff_check`](super::ff_check), then
//! [`plan::assemble`](super::plan::assemble). Shards and merges (`study --shard`,
//! `merge`) take the same three steps separately.

use std::path::Path;

use super::plan::{assemble, prepare, StudyOutput};
use crate::engine::FastForward;
use crate::error::{Error, Result};
use crate::metrics::StudyResults;

/// Runs a study file end to end: one result set, or one per sweep point.
pub fn run_study_file(
    path: &Path,
    fast_forward: Option<Option<FastForward>>,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<StudyOutput> {
    run_study_file_checked(path, fast_forward, 0, progress).map(|r| r.0)
}

/// [`run_study_file`], then `check` of its fast-forwarded co-run jobs again in detail
/// ([`ff_check`]; none when `check` is 0 or nothing was fast-forwarded).
pub fn run_study_file_checked(
    path: &Path,
    fast_forward: Option<Option<FastForward>>,
    check: usize,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<(StudyOutput, Option<crate::metrics::FfCheck>)> {
    let plan = prepare(path, fast_forward, progress)?;
    let all: Vec<usize> = (0..plan.jobs()).collect();
    let outputs = plan.run_jobs(&all, progress)?;
    let checked = if check > 0 {
        Some(super::ff_check::ff_check(&plan, &outputs, check, progress)?)
    } else {
        None
    };
    Ok((assemble(&plan.outlines(), outputs)?, checked))
}

/// Runs a study file end to end.
pub fn run_study(
    path: &Path,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<StudyResults> {
    run_study_with(path, None, progress)
}

/// [`run_study`] with steady-state fast-forward chosen on the command line:
/// `Some(Some(_))` on, `Some(None)` off, `None` as the study file says (`[fast_forward]`).
/// A study with a model `[sweep]` is an error here (see [`run_study_file`]).
pub fn run_study_with(
    path: &Path,
    fast_forward: Option<Option<FastForward>>,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<StudyResults> {
    match run_study_file(path, fast_forward, progress)? {
        StudyOutput::Study(r) => Ok(*r),
        StudyOutput::Sweep(_) => Err(Error::Usage(format!(
            "{} sweeps model parameters: it has one result set per point (run_study_file)",
            path.display()
        ))),
    }
}
