//! Bar charts (Warped-Slicer Fig. 6, 7c, 8 and 9): a grouped bar chart — x groups ×
//! series, optional per-bar error bars, an optional horizontal reference line (e.g. the
//! baseline at 1.0) and optional labelled sections of groups (workload categories) — and a
//! stacked bar chart (x bars × stacked parts, e.g. a stall breakdown). Both are described by
//! plain data and rendered to an SVG string; equal data give byte-identical SVG.
//!
//! Layout: title, then the legend in rows above the plot (so it never covers bars), then
//! section labels, the plot, and x labels under it, turned upright when they do not fit
//! side by side. The figure grows wider with the number of groups so bars stay readable.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use super::curves::{HEIGHT, WIDTH};
use crate::error::{Error, Result};

/// Font sizes in plotters units (the SVG font size is this / 1.24), as in `curves`.
const TITLE_PX: u32 = 22;
const LABEL_PX: u32 = 19;
const TICK_PX: u32 = 16;
/// Space left of the plot for the y tick labels and the y axis label.
const Y_AREA: u32 = 80;
const MARGIN: u32 = 12;
/// Height of the plot proper (without header and x labels).
const PLOT_H: u32 = HEIGHT - 140;
const TITLE_H: u32 = 40;
const LEGEND_ROW_H: u32 = 24;
const SECTION_H: u32 = 26;
const SWATCH: i32 = 16;

/// Colour-blind-friendly palette (Tableau 10); index `i` wraps around.
const PALETTE: [(u8, u8, u8); 10] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0xba, 0xb0, 0xac),
];

/// The palette colour with index `i` (stable: callers pass a fixed index per name).
pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// A legend entry: a name and its palette index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Key {
    pub name: String,
    pub color: usize,
}

impl Key {
    /// One key per name, coloured in order.
    pub fn series<S: AsRef<str>>(names: &[S]) -> Vec<Key> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| Key {
                name: n.as_ref().to_string(),
                color: i,
            })
            .collect()
    }
}

/// One bar: its height and an optional error interval `(lo, hi)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub value: f64,
    pub err: Option<(f64, f64)>,
}

/// One x group: a bar per series (`None`: no bar, its slot stays empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Option<Bar>>,
}

/// Groups `start..end` labelled together above the plot and set off by a divider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub label: String,
    pub start: usize,
    pub end: usize,
}

/// A grouped bar chart described by plain data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupedBarChart {
    pub title: String,
    pub y_label: String,
    /// One key per bar slot of every group, in drawing order.
    pub series: Vec<Key>,
    pub groups: Vec<BarGroup>,
    pub sections: Vec<Section>,
    /// Horizontal reference line (e.g. 1.0 for "as good as the baseline").
    pub reference: Option<f64>,
}

/// One stacked bar: a value per part, bottom to top.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StackedBar {
    pub label: String,
    pub parts: Vec<f64>,
}

/// A stacked bar chart described by plain data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StackedBarChart {
    pub title: String,
    pub y_label: String,
    /// One key per part, bottom to top.
    pub parts: Vec<Key>,
    pub bars: Vec<StackedBar>,
    pub reference: Option<f64>,
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::io("(svg)", std::io::Error::other(e.to_string()))
}

/// Estimated rendered width in pixels of `text` at plotters size `px` (SVG viewers draw
/// at `px / 1.24`), from typical sans-serif advance widths in em, slightly generous.
fn text_w(text: &str, px: u32) -> u32 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'm' | 'w' | '%' | 'M' | 'W' => 0.92,
            'A'..='Z' => 0.72,
            '+' | '=' | '<' | '>' => 0.84,
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | ' ' => 0.32,
            '(' | ')' | '-' | 'f' | 't' | 'r' => 0.42,
            _ => 0.62,
        })
        .sum();
    (em * px as f64 / 1.24).ceil() as u32
}

/// Tick label without trailing zeros.
fn tick(v: &f64) -> String {
    format!("{v:.3}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// The vertical sizes of a figure and where its parts go.
struct Layout {
    width: u32,
    height: u32,
    /// Legend rows: entries with their x offsets.
    legend: Vec<Vec<(i32, usize)>>,
    header: u32,
    label_h: u32,
    rotate: bool,
}

/// Lays a figure out for `labels.len()` groups of at least `group_px` pixels each; groups
/// are widened by up to half so that the x labels fit side by side, else they turn upright.
fn layout(keys: &[Key], labels: &[&str], group_px: u32, sections: bool) -> Layout {
    let widest = labels.iter().map(|l| text_w(l, TICK_PX)).max().unwrap_or(0);
    let group_px = if widest + 12 <= group_px * 3 / 2 {
        group_px.max(widest + 12)
    } else {
        group_px
    };
    let width = WIDTH.max(Y_AREA + 3 * MARGIN + group_px * labels.len() as u32);
    // Wide figures get a taller plot so that they keep a printable aspect ratio.
    let plot_h = PLOT_H.max(width / 5);
    let mut legend: Vec<Vec<(i32, usize)>> = Vec::new();
    let (mut x, avail) = (0u32, width - 2 * MARGIN);
    for (i, k) in keys.iter().enumerate() {
        let w = SWATCH as u32 + 6 + text_w(&k.name, TICK_PX) + 14;
        if legend.is_empty() || x + w > avail {
            legend.push(Vec::new());
            x = 0;
        }
        if let Some(row) = legend.last_mut() {
            row.push((x as i32, i));
        }
        x += w;
    }
    let rotate = widest + 6 > group_px;
    let label_h = if rotate { widest + 18 } else { 34 };
    let header =
        TITLE_H + LEGEND_ROW_H * legend.len() as u32 + 6 + if sections { SECTION_H } else { 0 };
    Layout {
        width,
        height: header + plot_h + label_h + MARGIN,
        legend,
        header,
        label_h,
        rotate,
    }
}

type Root<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Title and legend rows (centred) at the top of the figure.
fn draw_header(root: &Root, title: &str, keys: &[Key], lay: &Layout) -> Result<()> {
    let w = lay.width as i32;
    let style = TextStyle::from(("sans-serif", TITLE_PX).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(title, (w / 2, MARGIN as i32), style))
        .map_err(plot_err)?;
    let font = TextStyle::from(("sans-serif", TICK_PX).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in lay.legend.iter().enumerate() {
        let row_w = row
            .last()
            .map(|&(x, i)| x + SWATCH + 6 + text_w(&keys[i].name, TICK_PX) as i32)
            .unwrap_or(0);
        let x0 = (w - row_w) / 2;
        let y = (TITLE_H + LEGEND_ROW_H * r as u32 + LEGEND_ROW_H / 2) as i32;
        for &(x, i) in row {
            let x = x0 + x;
            let fill = color(keys[i].color).filled();
            root.draw(&Rectangle::new(
                [(x, y - SWATCH / 2), (x + SWATCH, y + SWATCH / 2)],
                fill,
            ))
            .map_err(plot_err)?;
            root.draw(&Text::new(
                keys[i].name.as_str(),
                (x + SWATCH + 6, y),
                font.clone(),
            ))
            .map_err(plot_err)?;
        }
    }
    Ok(())
}

/// y range covering `values` and 0, with head room; degenerate or empty ranges widened.
fn y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi - lo <= 0.0 {
        return (lo, lo + 1.0);
    }
    (lo, hi + (hi - lo) * 0.08)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Builds the plot below the header: n groups on [0, n), y axis with grid and label.
fn build_plot<'a, 'b>(
    root: &'a Root<'b>,
    lay: &Layout,
    n: usize,
    (ya, yb): (f64, f64),
    y_label: &str,
) -> Result<Chart<'a, 'b>> {
    let area = root.margin(lay.header, 0, 0, 0);
    let mut c = ChartBuilder::on(&area)
        .margin(MARGIN)
        .margin_top(0)
        .x_label_area_size(lay.label_h)
        .y_label_area_size(Y_AREA)
        .build_cartesian_2d(0.0..n.max(1) as f64, ya..yb)
        .map_err(plot_err)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_label)
        .axis_desc_style(("sans-serif", LABEL_PX))
        .label_style(("sans-serif", TICK_PX))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .y_label_formatter(&tick)
        .draw()
        .map_err(plot_err)?;
    Ok(c)
}

/// Group labels under the x axis, centred on each group, upright when `lay.rotate`.
fn draw_x_labels(root: &Root, c: &Chart, labels: &[&str], ya: f64, lay: &Layout) -> Result<()> {
    let font = ("sans-serif", TICK_PX).into_font();
    let style = if lay.rotate {
        TextStyle::from(font.transform(FontTransform::Rotate270))
            .pos(Pos::new(HPos::Right, VPos::Center))
    } else {
        TextStyle::from(font).pos(Pos::new(HPos::Center, VPos::Top))
    };
    for (g, label) in labels.iter().enumerate() {
        let (x, y) = c.backend_coord(&(g as f64 + 0.5, ya));
        root.draw(&Text::new(*label, (x, y + 8), style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// Section labels above the plot and dividers between sections.
fn draw_sections(
    root: &Root,
    c: &mut Chart,
    sections: &[Section],
    (ya, yb): (f64, f64),
) -> Result<()> {
    let style = TextStyle::from(("sans-serif", TICK_PX).into_font().style(FontStyle::Bold))
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    for s in sections {
        let mid = (s.start + s.end) as f64 / 2.0;
        let (x, y) = c.backend_coord(&(mid, yb));
        root.draw(&Text::new(s.label.as_str(), (x, y - 6), style.clone()))
            .map_err(plot_err)?;
        if s.start > 0 {
            let x = s.start as f64;
            c.draw_series(std::iter::once(PathElement::new(
                vec![(x, ya), (x, yb)],
                BLACK.mix(0.45).stroke_width(1),
            )))
            .map_err(plot_err)?;
        }
    }
    Ok(())
}

fn draw_reference(c: &mut Chart, reference: Option<f64>, n: usize) -> Result<()> {
    if let Some(r) = reference.filter(|r| r.is_finite()) {
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, r), (n.max(1) as f64, r)],
            BLACK.mix(0.8).stroke_width(2),
        )))
        .map_err(plot_err)?;
    }
    Ok(())
}

/// Pixels per group: room for every bar of a group and a gap.
fn group_px(bars: usize) -> u32 {
    (bars as u32 * 10 + 16).max(44)
}

/// Draws `chart` and returns the SVG document.
pub fn render_grouped(chart: &GroupedBarChart) -> Result<String> {
    let n = chart.groups.len();
    let labels: Vec<&str> = chart.groups.iter().map(|g| g.label.as_str()).collect();
    let lay = layout(
        &chart.series,
        &labels,
        group_px(chart.series.len()),
        !chart.sections.is_empty(),
    );
    let bars = || chart.groups.iter().flat_map(|g| g.bars.iter().flatten());
    let ys = bars()
        .flat_map(|b| [Some(b.value), b.err.map(|e| e.0), b.err.map(|e| e.1)])
        .flatten()
        .chain(chart.reference);
    let (ya, yb) = y_range(ys);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (lay.width, lay.height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw_header(&root, &chart.title, &chart.series, &lay)?;
        let mut c = build_plot(&root, &lay, n, (ya, yb), &chart.y_label)?;
        let slots = chart.series.len().max(1);
        let w = 0.84 / slots as f64;
        let clamp = |v: f64| v.clamp(ya, yb);
        for (g, group) in chart.groups.iter().enumerate() {
            for (s, bar) in group.bars.iter().enumerate().take(slots) {
                let Some(bar) = bar.filter(|b| b.value.is_finite()) else {
                    continue;
                };
                let x0 = g as f64 + 0.08 + s as f64 * w;
                let key = chart.series.get(s).map_or(s, |k| k.color);
                c.draw_series(std::iter::once(Rectangle::new(
                    [(x0 + w * 0.06, 0.0), (x0 + w * 0.94, clamp(bar.value))],
                    color(key).filled(),
                )))
                .map_err(plot_err)?;
                if let Some((lo, hi)) = bar.err.filter(|e| e.0.is_finite() && e.1.is_finite()) {
                    let (xm, cap) = (x0 + w / 2.0, w * 0.25);
                    let (lo, hi) = (clamp(lo), clamp(hi));
                    let st = BLACK.stroke_width(1);
                    c.draw_series([
                        PathElement::new(vec![(xm, lo), (xm, hi)], st),
                        PathElement::new(vec![(xm - cap, lo), (xm + cap, lo)], st),
                        PathElement::new(vec![(xm - cap, hi), (xm + cap, hi)], st),
                    ])
                    .map_err(plot_err)?;
                }
            }
        }
        draw_sections(&root, &mut c, &chart.sections, (ya, yb))?;
        draw_reference(&mut c, chart.reference, n)?;
        draw_x_labels(&root, &c, &labels, ya, &lay)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

/// Draws `chart` and returns the SVG document. Each bar's total is written above it.
pub fn render_stacked(chart: &StackedBarChart) -> Result<String> {
    let n = chart.bars.len();
    let labels: Vec<&str> = chart.bars.iter().map(|b| b.label.as_str()).collect();
    let lay = layout(&chart.parts, &labels, 80, false);
    let total = |b: &StackedBar| -> f64 {
        b.parts
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| v.max(0.0))
            .sum()
    };
    let (ya, yb) = y_range(chart.bars.iter().map(total).chain(chart.reference));
    // Room for the totals written above the bars.
    let yb = yb + (yb - ya) * 0.05;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (lay.width, lay.height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw_header(&root, &chart.title, &chart.parts, &lay)?;
        let mut c = build_plot(&root, &lay, n, (ya, yb), &chart.y_label)?;
        let font = TextStyle::from(("sans-serif", TICK_PX).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (g, bar) in chart.bars.iter().enumerate() {
            let (x0, x1) = (g as f64 + 0.2, g as f64 + 0.8);
            let mut base = 0.0;
            for (p, v) in bar.parts.iter().enumerate() {
                let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
                if v == 0.0 {
                    continue;
                }
                let key = chart.parts.get(p).map_or(p, |k| k.color);
                c.draw_series(std::iter::once(Rectangle::new(
                    [(x0, base), (x1, (base + v).min(yb))],
                    color(key).filled(),
                )))
                .map_err(plot_err)?;
                base += v;
            }
            let (x, y) = c.backend_coord(&(g as f64 + 0.5, base.min(yb)));
            root.draw(&Text::new(format!("{base:.2}"), (x, y - 3), font.clone()))
                .map_err(plot_err)?;
        }
        draw_reference(&mut c, chart.reference, n)?;
        draw_x_labels(&root, &c, &labels, ya, &lay)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<Key> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| Key {
                name: n.to_string(),
                color: i,
            })
            .collect()
    }

    #[test]
    fn grouped_is_deterministic_and_handles_gaps() {
        let bar = |v| {
            Some(Bar {
                value: v,
                err: Some((v - 0.1, v + 0.1)),
            })
        };
        let chart = GroupedBarChart {
            title: "t".into(),
            y_label: "y".into(),
            series: keys(&["a", "b"]),
            groups: vec![
                BarGroup {
                    label: "g1".into(),
                    bars: vec![bar(1.0), None],
                },
                BarGroup {
                    label: "g2".into(),
                    bars: vec![bar(f64::NAN), bar(2.0)],
                },
            ],
            sections: vec![Section {
                label: "s".into(),
                start: 0,
                end: 2,
            }],
            reference: Some(1.0),
        };
        let a = render_grouped(&chart).unwrap();
        assert!(a.starts_with("<svg"));
        assert_eq!(a, render_grouped(&chart).unwrap());
    }

    #[test]
    fn empty_charts_render() {
        let g = GroupedBarChart {
            title: String::new(),
            y_label: String::new(),
            series: vec![],
            groups: vec![],
            sections: vec![],
            reference: None,
        };
        assert!(render_grouped(&g).unwrap().starts_with("<svg"));
        let s = StackedBarChart {
            title: String::new(),
            y_label: String::new(),
            parts: keys(&["p"]),
            bars: vec![StackedBar {
                label: "x".into(),
                parts: vec![-1.0, f64::INFINITY],
            }],
            reference: None,
        };
        assert!(render_stacked(&s).unwrap().starts_with("<svg"));
    }
}
