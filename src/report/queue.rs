//! The figures and tables of a queue study (Punyala et al. §IV), redrawn from saved
//! [`QueueStudyResults`] alone:
//!
//! - `fig2_interference.svg` — the class slowdown matrix S(j→i) as a heatmap;
//! - `fig2_interference_apps.svg` — the same per application (when measured);
//! - `fig3a_throughput_2way.svg`, `fig3b_…_3way.svg`, … — queue throughput `I_T / C_T`
//!   per class mix and policy, normalised to `spatial` (Punyala's Even), with the geometric mean over mixes;
//! - `fig4a_app_ipc_2way.svg`, … — the mean IPC of the queued applications (each over its
//!   own run time in its group), normalised the same way;
//! - `summary.md` — classes (measured beside expected), profiled SM counts, the matrices,
//!   the normalised tables, and the groups each policy formed.
//!
//! Each policy keeps its colour everywhere: its palette index is its place in
//! [`QueueStudyResults::policies`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::bars::{render_grouped, Bar, BarGroup, GroupedBarChart, Key};
use super::common::put;
use super::heatmap::{self, Heatmap};
use crate::metrics::{gmean, QueueCell, QueueStudyResults, SlowdownMatrix};

/// The baseline every normalised figure divides by.
pub const BASELINE: &str = "spatial";

/// Mean IPC of the queued applications.
fn mean_app_ipc(c: &QueueCell) -> f64 {
    if c.app_ipc.is_empty() {
        return 0.0;
    }
    c.app_ipc.iter().map(|x| x.1).sum::<f64>() / c.app_ipc.len() as f64
}

/// A per-cell quantity a figure plots.
type Metric = fn(&QueueCell) -> f64;

fn throughput(c: &QueueCell) -> f64 {
    c.throughput
}

/// `f(policy) / f(spatial)` per mix of one concurrency, then the geometric mean over mixes.
/// Rows: mixes then `gmean`; columns: policies. `None` where a cell is missing.
fn normalised(r: &QueueStudyResults, ways: usize, f: Metric) -> Vec<(String, Vec<Option<f64>>)> {
    let policies = r.policies();
    let mut rows = Vec::new();
    let mut per_policy: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    for mix in r.mixes() {
        let base = r.cell(ways, &mix, BASELINE).map(f).filter(|&b| b > 0.0);
        let vals: Vec<Option<f64>> = policies
            .iter()
            .map(|p| Some(r.cell(ways, &mix, p).map(f)? / base?))
            .collect();
        if vals.iter().all(|v| v.is_none()) {
            continue;
        }
        for (k, v) in vals.iter().enumerate() {
            per_policy[k].extend(*v);
        }
        rows.push((mix, vals));
    }
    if !rows.is_empty() {
        let g = per_policy
            .iter()
            .map(|v| (!v.is_empty()).then(|| gmean(v)))
            .collect();
        rows.push(("gmean".into(), g));
    }
    rows
}

fn chart(r: &QueueStudyResults, ways: usize, f: Metric, what: &str) -> GroupedBarChart {
    let policies = r.policies();
    GroupedBarChart {
        title: format!("{what}, {ways} concurrent applications (norm. to {BASELINE})"),
        y_label: format!("{what} / {BASELINE}"),
        series: policies
            .iter()
            .enumerate()
            .map(|(i, p)| Key {
                name: p.clone(),
                color: i,
            })
            .collect(),
        groups: normalised(r, ways, f)
            .into_iter()
            .map(|(label, vals)| BarGroup {
                label,
                bars: vals
                    .into_iter()
                    .map(|v| v.map(|value| Bar { value, err: None }))
                    .collect(),
            })
            .collect(),
        sections: Vec::new(),
        reference: Some(1.0),
    }
}

fn heat(m: &SlowdownMatrix, title: &str, what: &str) -> Heatmap {
    Heatmap {
        title: title.into(),
        row_axis: format!("co-runner {what} j"),
        col_axis: format!("{what} i (slowed down)"),
        rows: m.labels.clone(),
        cols: m.labels.clone(),
        values: m.s.clone(),
    }
}

fn letter(i: usize) -> char {
    (b'a' + (i % 26) as u8) as char
}

/// Renders every figure and table of `r` into `dir` (created if needed); returns the paths
/// written, in a fixed order.
pub fn render_queue_study(r: &QueueStudyResults, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = Vec::new();
    let svg = heatmap::render_svg(&heat(
        &r.interference,
        "Slowdown of class i beside class j (equal SM split)",
        "class",
    ))?;
    put(dir, "fig2_interference.svg", &svg, &mut out)?;
    if let Some(m) = &r.app_interference {
        let svg = heatmap::render_svg(&heat(
            m,
            "Slowdown of application i beside application j (equal SM split)",
            "application",
        ))?;
        put(dir, "fig2_interference_apps.svg", &svg, &mut out)?;
    }
    // Fig. 3 (throughput) and Fig. 4 (average IPC per application), one panel per
    // concurrency.
    let figs: [(u8, &str, Metric, &str); 2] = [
        (3, "throughput", throughput, "Throughput"),
        (4, "app_ipc", mean_app_ipc, "Average IPC per application"),
    ];
    for (i, w) in r.ways().into_iter().enumerate() {
        for (fig, stem, f, what) in figs {
            let svg = render_grouped(&chart(r, w, f, what))?;
            let name = format!("fig{fig}{}_{stem}_{w}way.svg", letter(i));
            put(dir, &name, &svg, &mut out)?;
        }
    }
    put(dir, "summary.md", &summary(r), &mut out)?;
    Ok(out)
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", (x - 1.0) * 100.0)
}

fn matrix_table(s: &mut String, m: &SlowdownMatrix) {
    s.push_str("| beside ↓ / slowed → |");
    for l in &m.labels {
        let _ = write!(s, " {l} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(m.labels.len()));
    s.push('\n');
    for (j, row) in m.s.iter().enumerate() {
        let _ = write!(s, "| **{}** |", m.labels[j]);
        for x in row {
            let _ = write!(s, " {x:.2} |");
        }
        s.push('\n');
    }
    s.push('\n');
}

fn norm_table(s: &mut String, r: &QueueStudyResults, ways: usize, f: Metric) {
    let policies = r.policies();
    s.push_str("| mix |");
    for p in &policies {
        let _ = write!(s, " {p} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(policies.len()));
    s.push('\n');
    for (mix, vals) in normalised(r, ways, f) {
        let _ = write!(s, "| {mix} |");
        for v in vals {
            match v {
                Some(v) => {
                    let _ = write!(s, " {v:.3} ({}) |", pct(v));
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s.push('\n');
}

fn summary(r: &QueueStudyResults) -> String {
    let mut s = format!("# Queue study summary: {}\n\n", r.study);
    let _ = writeln!(
        s,
        "GPU model `{}`; baseline `{BASELINE}`; throughput T = I_T / C_T over the whole queue \
         (groups one after another).\n",
        r.model.name
    );
    s.push_str("## Classes\n\n| application | expected | measured | profiled SMs | metrics |\n|---|---|---|---|---|\n");
    for a in &r.apps {
        let _ = writeln!(
            s,
            "| {} | {} | {}{} | {} | {} |",
            a.name,
            if a.expected_class.is_empty() {
                "–"
            } else {
                &a.expected_class
            },
            a.class,
            if a.exact { "" } else { " (fallback)" },
            a.profiled_sms
                .map(|c| c.to_string())
                .unwrap_or_else(|| "–".into()),
            a.why
        );
    }
    s.push_str("\n## Interference S(j→i), classes\n\n");
    matrix_table(&mut s, &r.interference);
    if let Some(m) = &r.app_interference {
        s.push_str("## Interference S(j→i), applications\n\n");
        matrix_table(&mut s, m);
    }
    for w in r.ways() {
        let _ = writeln!(
            s,
            "## {w} concurrent applications\n\n### Throughput, normalised to {BASELINE}\n"
        );
        norm_table(&mut s, r, w, throughput);
        let _ = writeln!(
            s,
            "### Average IPC per application, normalised to {BASELINE}\n"
        );
        norm_table(&mut s, r, w, mean_app_ipc);
        let _ = writeln!(s, "### Groups formed\n");
        s.push_str("| mix | policy | Σe (ILP) | cycles | groups |\n|---|---|---|---|---|\n");
        for c in r.cells.iter().filter(|c| c.ways == w) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                c.mix,
                c.policy,
                c.objective
                    .map(|o| format!("{o:.3}"))
                    .unwrap_or_else(|| "–".into()),
                c.cycles,
                c.groups
                    .iter()
                    .map(|g| g.join("+"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        s.push('\n');
    }
    // The paper's headline is the 2-way throughput gain over Even (§IV, Fig. 3).
    if let Some(w) = r.ways().into_iter().min() {
        let rows = normalised(r, w, throughput);
        let ours: Vec<(String, f64)> = rows
            .last()
            .filter(|(label, _)| label == "gmean")
            .map(|(_, g)| {
                r.policies()
                    .into_iter()
                    .zip(g)
                    .filter_map(|(p, v)| Some((p, (*v)?)))
                    .collect()
            })
            .unwrap_or_default();
        let measure =
            format!("{w}-way throughput normalised to {BASELINE} (geometric mean over mixes)");
        s += &super::ranking::section(&r.config, &measure, &ours);
    }
    s
}
