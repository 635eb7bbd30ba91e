//! A labelled heatmap (e.g. Punyala Fig. 2, slowdown of class i beside class j): a grid of
//! cells coloured from white (the smallest value) to dark red (the largest), each with its
//! value printed, rows and columns labelled. Plain data in, SVG text out, deterministic.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heatmap {
    pub title: String,
    /// Label of the rows' axis (left) and of the columns' axis (bottom).
    pub row_axis: String,
    pub col_axis: String,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// `values[r][c]`.
    pub values: Vec<Vec<f64>>,
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::io("(svg)", std::io::Error::other(e.to_string()))
}

/// Draws `h` as SVG.
pub fn render_svg(h: &Heatmap) -> Result<String> {
    let (nr, nc) = (h.rows.len(), h.cols.len());
    if nr == 0 || nc == 0 || h.values.len() != nr || h.values.iter().any(|r| r.len() != nc) {
        return Err(Error::Usage(format!(
            "heatmap `{}` needs {nr}×{nc} values",
            h.title
        )));
    }
    let finite = h.values.iter().flatten().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let cell = 90u32;
    let (w, hgt) = (140 + cell * nc as u32 + 40, 90 + cell * nr as u32 + 80);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, hgt)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let title =
            TextStyle::from(("sans-serif", 20).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw_text(&h.title, &title, (w as i32 / 2, 12))
            .map_err(plot_err)?;
        let x0 = 140i32;
        let y0 = 60i32;
        let label = TextStyle::from(("sans-serif", 16).into_font());
        for (r, row) in h.values.iter().enumerate() {
            for (c, &v) in row.iter().enumerate() {
                let t = if v.is_finite() { (v - lo) / span } else { 0.0 };
                // White -> dark red.
                let colour = RGBColor(
                    (255.0 - 75.0 * t) as u8,
                    (255.0 - 230.0 * t) as u8,
                    (255.0 - 230.0 * t) as u8,
                );
                let (cx, cy) = (x0 + c as i32 * cell as i32, y0 + r as i32 * cell as i32);
                root.draw(&Rectangle::new(
                    [(cx, cy), (cx + cell as i32, cy + cell as i32)],
                    colour.filled(),
                ))
                .map_err(plot_err)?;
                root.draw(&Rectangle::new(
                    [(cx, cy), (cx + cell as i32, cy + cell as i32)],
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_err)?;
                let text_colour = if t > 0.6 { WHITE } else { BLACK };
                let style = TextStyle::from(("sans-serif", 18).into_font())
                    .color(&text_colour)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                root.draw_text(
                    &format!("{v:.2}"),
                    &style,
                    (cx + cell as i32 / 2, cy + cell as i32 / 2),
                )
                .map_err(plot_err)?;
            }
            let style = label.clone().pos(Pos::new(HPos::Right, VPos::Center));
            root.draw_text(
                &h.rows[r],
                &style,
                (x0 - 10, y0 + r as i32 * cell as i32 + cell as i32 / 2),
            )
            .map_err(plot_err)?;
        }
        let bottom = y0 + nr as i32 * cell as i32;
        for (c, name) in h.cols.iter().enumerate() {
            let style = label.clone().pos(Pos::new(HPos::Center, VPos::Top));
            root.draw_text(
                name,
                &style,
                (x0 + c as i32 * cell as i32 + cell as i32 / 2, bottom + 8),
            )
            .map_err(plot_err)?;
        }
        let axis = label.clone().pos(Pos::new(HPos::Center, VPos::Top));
        root.draw_text(
            &h.col_axis,
            &axis,
            (x0 + (nc as i32 * cell as i32) / 2, bottom + 36),
        )
        .map_err(plot_err)?;
        let axis = label.pos(Pos::new(HPos::Left, VPos::Top));
        root.draw_text(&h.row_axis, &axis, (8, 36))
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_cell_and_rejects_ragged_input() {
        let h = Heatmap {
            title: "Slowdown".into(),
            row_axis: "beside class j".into(),
            col_axis: "class i".into(),
            rows: vec!["M".into(), "A".into()],
            cols: vec!["M".into(), "A".into()],
            values: vec![vec![2.05, 1.2], vec![1.5, 1.06]],
        };
        let svg = render_svg(&h).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("2.05") && svg.contains("1.06"));
        assert_eq!(svg, render_svg(&h).unwrap());
        let mut bad = h.clone();
        bad.values.pop();
        assert!(render_svg(&bad).is_err());
    }
}
