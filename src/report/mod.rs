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
pub mod multitenancy;
pub mod queue;
pub mod ranking;
pub mod study;
pub mod sweep;
pub mod ugpu;

pub use curves::{render_svg, write_svg, LineChart, Series};
pub use queue::render_queue_study;
pub use study::render_study;
pub use sweep::render_sweep;
