//! Figures: SVG charts drawn with plotters (SVG backend only) from plain data — series of
//! `(x, y)` points, bar groups, stacked bars — with titles and axis labels, so that every
//! figure can be re-rendered from a saved JSON file without re-running the model.
//!
//! - [`curves`]: line charts (performance vs CTAs per SM, SMs, channels);
//! - [`bars`]: grouped bar charts with error bars and a reference line, stacked bar charts;
//! - [`heatmap`]: labelled heatmaps (Punyala Fig. 2, inter-class slowdowns);
//! - [`study`]: every figure and table of a sharing-policy study (Warped-Slicer Fig. 3a, 6,
//!   7c, 8, 9, Table III and a summary) from [`crate::metrics::StudyResults`];
//! - [`multitenancy`]: the SiM and Slate studies' figures and tables (completion mode,
//!   arrivals, solo transformations, task-size sweep);
//! - [`sweep`]: a model sweep's per-point figures and one chart per swept parameter;
//! - [`queue`]: the figures and summary of a queue study (Punyala Fig. 2, 3, 4) from
//!   [`crate::metrics::QueueStudyResults`];
//! - `common`: the helpers they share (means, writing a file), so that none imports another.
//!
//! This module reads only the types of [`crate::metrics`] and its own.

pub mod advise;
pub mod bars;
mod common;
pub mod csv;
pub mod curves;
pub mod heatmap;
pub mod kernels;
pub mod multitenancy;
pub mod queue;
pub mod ranking;
pub mod sampling;
pub mod study;
pub mod sweep;
pub mod ugpu;

pub use curves::{render_svg, write_svg, LineChart, Series};
pub use queue::render_queue_study;
pub use sweep::render_sweep;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::metrics::StudyResults;
use crate::policy::{FigureSet, PolicySpec};

/// Draws one figure set of a study's results into a folder, appending the paths written.
pub type Renderer = fn(&StudyResults, &Path, &mut Vec<PathBuf>) -> anyhow::Result<()>;

/// The module that draws figure set `set` (the policy registry says which policy owns
/// which set, [`crate::policy::Entry::figures`]).
pub fn renderer(set: FigureSet) -> Renderer {
    match set {
        FigureSet::WarpedSlicer => study::ws_figures,
        FigureSet::Sim => multitenancy::sim_figures,
        FigureSet::Slate => multitenancy::slate_figures,
        FigureSet::Ugpu => ugpu::ugpu_figures,
    }
}

/// Renders every figure and table of `r` into `dir` (created if needed): the figure set
/// `r.figures` names ([`PolicySpec::figure_set`]), Warped-Slicer's when it names none.
/// Returns the paths written, in a fixed order.
pub fn render_study(r: &StudyResults, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let set = PolicySpec::figure_set(&r.figures).map_or(FigureSet::WarpedSlicer, |f| f.0);
    let mut out = Vec::new();
    renderer(set)(r, dir, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results with nothing in them but the figure set's name.
    fn empty(figures: &str) -> StudyResults {
        StudyResults {
            schema_version: crate::metrics::SCHEMA_VERSION,
            study: "t".into(),
            config: serde_json::json!({}),
            alone: Vec::new(),
            curves: Vec::new(),
            workloads: Vec::new(),
            model: crate::arch::GpuSpec::builtin("fermi-ws").unwrap(),
            baseline: String::new(),
            proposed: None,
            solo: Vec::new(),
            figures: figures.into(),
            slices: Vec::new(),
            ff_check: None,
        }
    }

    /// Every figure set the registry declares is named after its policy, resolves to a
    /// renderer that draws from results naming it, and no two sets draw the same files (a
    /// set falling back to another's renderer would).
    #[test]
    fn every_declared_figure_set_resolves_to_its_own_renderer() {
        let declared: Vec<_> = PolicySpec::ENTRIES
            .iter()
            .filter_map(|e| Some((e.name, e.figures?)))
            .collect();
        assert!(declared.len() >= 4, "{declared:?}");
        let mut drawn: Vec<(FigureSet, Vec<String>)> = Vec::new();
        for (name, set) in declared {
            assert_eq!(PolicySpec::figure_set(name).map(|f| f.0), Some(set));
            let dir = tempfile::tempdir().unwrap();
            let mut out = Vec::new();
            renderer(set)(&empty(name), dir.path(), &mut out).unwrap();
            let files: Vec<String> = out
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            assert!(!files.is_empty(), "figure set {name} drew nothing");
            let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
            assert!(!summary.is_empty(), "figure set {name}: empty summary");
            if let Some((other, _)) = drawn.iter().find(|d| d.1 == files) {
                panic!("figure sets {other:?} and {set:?} draw the same files {files:?}");
            }
            assert_eq!(render_study(&empty(name), dir.path()).unwrap(), out);
            drawn.push((set, files));
        }
    }
}
