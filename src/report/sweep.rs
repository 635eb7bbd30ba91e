//! Figures of a model sweep ([`SweepResults`]): every point's study figures in a folder of
//! its own, and one line chart per swept parameter — each policy's mean STP against the
//! parameter's values (averaged over the workloads and over the other parameters' values,
//! a main-effect plot) — with a Markdown table of every point.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::common::{mean, mean_of};
use super::curves::{render_svg, LineChart, Series};
use crate::metrics::SweepResults;
use anyhow::Result;

/// The folder of a point's figures: its overrides, made one safe file name
/// ([`crate::output::component`]: never empty, `.`, `..`, hidden or over-long).
pub fn point_dir(overrides: &[String]) -> String {
    crate::output::component(&overrides.join("_"), &['.', '-', '=', '_'], '-', "point")
}

/// The number a value stands for on an axis: the value itself, or its leading number
/// (`"128 KiB"` → 128); `None` when it has none.
fn numeric(v: &str) -> Option<f64> {
    let t = v.trim().trim_matches('"');
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    t[..end].parse().ok()
}

/// The main-effect chart of parameter `key` (values in `values`).
fn chart(r: &SweepResults, key: &str, values: &[String]) -> LineChart {
    let nums: Option<Vec<f64>> = values.iter().map(|v| numeric(v)).collect();
    let x = |i: usize| match &nums {
        Some(n) => n[i],
        None => (i + 1) as f64,
    };
    let policies = r
        .points
        .first()
        .map(|p| p.results.policies())
        .unwrap_or_default();
    let others = r.parameters().len() > 1;
    let series = policies
        .iter()
        .map(|p| Series {
            name: p.clone(),
            points: values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let at = format!("{key}={v}");
                    let ys: Vec<f64> = r
                        .points
                        .iter()
                        .filter(|pt| pt.overrides.contains(&at))
                        .filter_map(|pt| mean_of(&pt.results.workloads, p, |s| s.stp))
                        .collect();
                    mean(&ys).map(|y| (x(i), y))
                })
                .collect(),
        })
        .collect();
    LineChart {
        title: format!("STP vs {key}"),
        x_label: match nums {
            Some(_) => key.to_string(),
            None => format!("{key} (value index: {})", values.join(", ")),
        },
        y_label: if others {
            "STP (mean: workloads, other params)".into()
        } else {
            "STP (mean over workloads)".into()
        },
        series,
        integer_x: nums
            .as_ref()
            .is_none_or(|n| n.iter().all(|v| v.fract() == 0.0)),
    }
}

fn table(r: &SweepResults) -> String {
    let policies = r
        .points
        .first()
        .map(|p| p.results.policies())
        .unwrap_or_default();
    let mut s = format!(
        "# {}: model sweep\n\nMean STP / mean ANTT over the workloads, per point and policy.\n\n| point |",
        r.study
    );
    for p in &policies {
        let _ = write!(s, " {p} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(policies.len()));
    s.push('\n');
    for pt in &r.points {
        let _ = write!(s, "| {} |", pt.overrides.join(", "));
        for p in &policies {
            match (
                mean_of(&pt.results.workloads, p, |s| s.stp),
                mean_of(&pt.results.workloads, p, |s| s.antt),
            ) {
                (Some(a), Some(b)) => {
                    let _ = write!(s, " {a:.3} / {b:.3} |");
                }
                _ => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    s
}

/// Draws every point's figures (`DIR/<point>/`), one `sweep_<param>.svg` per swept
/// parameter and `sweep_summary.md`.
pub fn render_sweep(r: &SweepResults, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, e))?;
    let mut out = Vec::new();
    for p in &r.points {
        out.extend(super::render_study(
            &p.results,
            &dir.join(point_dir(&p.overrides)),
        )?);
    }
    for (key, values) in r.parameters() {
        let path = dir.join(format!(
            "sweep_{}.svg",
            point_dir(std::slice::from_ref(&key))
        ));
        let svg = render_svg(&chart(r, &key, &values))?;
        crate::output::Guard::new().write(&path, svg.as_bytes())?;
        out.push(path);
    }
    let path = dir.join("sweep_summary.md");
    crate::output::Guard::new().write(&path, table(r).as_bytes())?;
    out.push(path);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_numbers_where_they_are() {
        assert_eq!(numeric("16"), Some(16.0));
        assert_eq!(numeric("\"128 KiB\""), Some(128.0));
        assert_eq!(numeric("1.5"), Some(1.5));
        assert_eq!(numeric("\"gto\""), None);
        assert_eq!(
            point_dir(&["dram.channels=16".into(), "l2.size=\"128 KiB\"".into()]),
            "dram.channels=16_l2.size=-128-KiB-"
        );
        // A point read from a damaged or hostile file stays one folder inside DIR.
        assert_eq!(point_dir(&["..".into()]), "point..");
        assert_eq!(point_dir(&[".".into()]), "point.");
        assert_eq!(point_dir(&["../../etc".into()]), "point..-..-etc");
        assert_eq!(point_dir(&[]), "point");
    }
}
