//! Line charts (performance vs CTAs per SM, vs SM count, vs channel count — Warped-Slicer
//! Fig. 3a, UGPU Fig. 2–3, Slate Fig. 1): one or more `(x, y)` series on linear axes with a
//! title, axis labels with units and a legend, sized and lettered to stay readable when
//! printed at half a page width.

use std::path::Path;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Figure size in SVG pixels (a 6.4 × 4.4 in figure at 100 px/in).
pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 440;
/// Font sizes in pixels: large enough to read at paper size.
const TITLE_PX: u32 = 22;
const LABEL_PX: u32 = 19;
const TICK_PX: u32 = 16;

/// One line of a chart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart described by plain data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineChart {
    pub title: String,
    /// Axis labels, units included, e.g. `"CTAs per SM"`, `"IPC (warp inst / cycle)"`.
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Integer x ticks (counts: CTAs, SMs, channels).
    pub integer_x: bool,
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::io("(svg)", std::io::Error::other(e.to_string()))
}

/// Axis range with a margin; degenerate ranges are widened.
fn range(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let lo = if from_zero { lo.min(0.0) } else { lo };
    // Also catches NaN bounds.
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return (lo - 0.5, lo + 0.5);
    }
    (lo, hi + (hi - lo) * 0.05)
}

/// Draws `chart` and returns the SVG document.
pub fn render_svg(chart: &LineChart) -> Result<String> {
    let pts = chart.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in pts {
        if x.is_finite() && y.is_finite() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    let (xa, xb) = if chart.integer_x {
        (x0 - 0.5, x1 + 0.5)
    } else {
        range(x0, x1, false)
    };
    let (ya, yb) = range(0.0, y1, true);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(&chart.title, ("sans-serif", TITLE_PX))
            .margin(12)
            .x_label_area_size(52)
            .y_label_area_size(72)
            .build_cartesian_2d(xa..xb, ya..yb)
            .map_err(plot_err)?;
        let n_int = (x1 - x0).round().max(0.0) as usize + 1;
        let int_fmt = |v: &f64| {
            if (v - v.round()).abs() < 1e-6 {
                format!("{}", v.round() as i64)
            } else {
                String::new()
            }
        };
        let real_fmt = |v: &f64| {
            format!("{v:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        };
        let mut mesh = c.configure_mesh();
        mesh.x_desc(&chart.x_label)
            .y_desc(&chart.y_label)
            .axis_desc_style(("sans-serif", LABEL_PX))
            .label_style(("sans-serif", TICK_PX))
            .light_line_style(WHITE.mix(0.0))
            .y_label_formatter(&real_fmt);
        if chart.integer_x {
            mesh.x_labels(n_int.min(17)).x_label_formatter(&int_fmt);
        } else {
            mesh.x_labels(8).x_label_formatter(&real_fmt);
        }
        mesh.draw().map_err(plot_err)?;
        for (i, s) in chart.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let style = ShapeStyle::from(&color).stroke_width(3);
            c.draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(plot_err)?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            c.draw_series(
                s.points
                    .iter()
                    .map(|&p| Circle::new(p, 5, ShapeStyle::from(&color).filled())),
            )
            .map_err(plot_err)?;
        }
        if chart.series.len() > 1 || chart.series.first().is_some_and(|s| !s.name.is_empty()) {
            c.configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .label_font(("sans-serif", TICK_PX))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

/// Draws `chart` into `path` (parent folders are created; written via a temporary file).
pub fn write_svg(chart: &LineChart, path: &Path) -> Result<()> {
    let svg = render_svg(chart)?;
    crate::output::Guard::new().write(path, svg.as_bytes())
}
