//! Figures: SVG charts drawn with plotters (SVG backend only) from plain data — series of
//! `(x, y)` points with titles and axis labels — so that every figure can be re-rendered from
//! a saved JSON file without re-running the model.

pub mod curves;

pub use curves::{render_svg, write_svg, LineChart, Series};
