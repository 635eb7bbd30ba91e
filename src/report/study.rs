//! The figures and tables of a sharing-policy study (Warped-Slicer §V), redrawn from saved
//! [`StudyResults`] alone:
//!
//! - `fig6_normalized_ipc.svg` — combined IPC of every policy normalised to `left-over`,
//!   per two-application workload grouped by category, with a GMEAN per category and an
//!   overall one (when there is more than one category);
//! - `fig8_three_kernels.svg` — the same for workloads of three or more applications;
//! - `fig3a_occupancy.svg` — IPC against CTA occupancy, one line per benchmark;
//! - `fig9a_fairness.svg`, `fig9b_antt.svg` — minimum speedup normalised to `left-over`
//!   (geometric mean) and ANTT (mean with a 95 % Student-t interval), 2 vs 3+ kernels;
//! - `fig7c_stalls.svg` — stall breakdown per policy, normalised to the `left-over` total;
//! - `table3_partitions.md` — the partition each partitioning policy chose per workload;
//! - `table_iva_sampling.md` — sampled against full-run partitions (§IV-A, `sampling`);
//! - `summary.md` — geometric means per category, STP/ANTT/fairness means, headline ratios.
//!
//! A workload without a `left-over` run has no baseline and is left out of normalised
//! figures; a policy missing from a workload just has no bar there. Each policy keeps its
//! colour everywhere: its palette index is its place in [`StudyResults::policies`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::bars::{
    render_grouped, render_stacked, Bar, BarGroup, GroupedBarChart, Key, Section, StackedBar,
    StackedBarChart,
};
use super::common::{mean_of, put};
use super::curves::{self, LineChart, Series};
use crate::metrics::{gmean, mean_ci, Stalls, StudyResults, WorkloadResult};

fn is_pair(w: &WorkloadResult) -> bool {
    w.apps.len() == 2
}

fn is_multi(w: &WorkloadResult) -> bool {
    w.apps.len() >= 3
}

/// `f(policy run) / f(left-over run)` of one workload, when both exist and are usable.
fn ratio_to(
    w: &WorkloadResult,
    policy: &str,
    base: &str,
    f: fn(&crate::metrics::Summary) -> f64,
) -> Option<f64> {
    let b = f(&w.run(base)?.summary);
    let v = f(&w.run(policy)?.summary);
    (b > 0.0 && b.is_finite() && v.is_finite()).then(|| v / b)
}

fn ipc(s: &crate::metrics::Summary) -> f64 {
    s.combined_ipc
}

fn fairness(s: &crate::metrics::Summary) -> f64 {
    s.fairness
}

/// Combined IPC of `policy` over the `base` run of the same workload.
pub fn normalised_ipc(w: &WorkloadResult, policy: &str, base: &str) -> Option<f64> {
    ratio_to(w, policy, base, ipc)
}

/// Geometric mean of `f` over `ws`, `None` when no workload has a value.
fn gmean_over<'a>(
    ws: impl IntoIterator<Item = &'a WorkloadResult>,
    f: impl Fn(&WorkloadResult) -> Option<f64>,
) -> Option<f64> {
    let xs: Vec<f64> = ws.into_iter().filter_map(f).collect();
    (!xs.is_empty()).then(|| gmean(&xs))
}

/// Legend keys of every policy, colour = place in `policies()`.
fn keys(policies: &[String]) -> Vec<Key> {
    policies
        .iter()
        .enumerate()
        .map(|(i, p)| Key {
            name: p.clone(),
            color: i,
        })
        .collect()
}

fn bar(v: Option<f64>) -> Option<Bar> {
    v.map(|value| Bar { value, err: None })
}

/// Fig. 6 / Fig. 8: per workload of `filter`, by category, with GMEAN groups.
fn ipc_chart(
    r: &StudyResults,
    policies: &[String],
    filter: fn(&WorkloadResult) -> bool,
    title: &str,
) -> Option<GroupedBarChart> {
    let base = r.baseline();
    let base = base.as_str();
    let selected: Vec<&WorkloadResult> = r
        .workloads
        .iter()
        .filter(|w| filter(w) && w.run(base).is_some())
        .collect();
    if selected.is_empty() {
        return None;
    }
    let gmean_group = |ws: &[&WorkloadResult]| BarGroup {
        label: "GMEAN".into(),
        bars: policies
            .iter()
            .map(|p| {
                bar(gmean_over(ws.iter().copied(), |w| {
                    normalised_ipc(w, p, base)
                }))
            })
            .collect(),
    };
    let (mut groups, mut sections) = (Vec::new(), Vec::new());
    for cat in r.categories() {
        let ws: Vec<&WorkloadResult> = selected
            .iter()
            .copied()
            .filter(|w| w.category == cat)
            .collect();
        if ws.is_empty() {
            continue;
        }
        let start = groups.len();
        for w in &ws {
            groups.push(BarGroup {
                label: w.name.clone(),
                bars: policies
                    .iter()
                    .map(|p| bar(normalised_ipc(w, p, base)))
                    .collect(),
            });
        }
        groups.push(gmean_group(&ws));
        sections.push(Section {
            label: cat,
            start,
            end: groups.len(),
        });
    }
    // With one category its GMEAN already is the overall one.
    if sections.len() > 1 {
        let start = groups.len();
        groups.push(gmean_group(&selected));
        sections.push(Section {
            label: "overall".into(),
            start,
            end: groups.len(),
        });
    }
    Some(GroupedBarChart {
        title: title.into(),
        y_label: format!("Combined IPC (norm. to {base})"),
        series: keys(policies),
        groups,
        sections,
        reference: Some(1.0),
    })
}

/// The workload sets of Fig. 9: two kernels, and three or more when there are any.
fn kernel_sets(r: &StudyResults) -> Vec<(&'static str, Vec<&WorkloadResult>)> {
    let pairs: Vec<_> = r.workloads.iter().filter(|w| is_pair(w)).collect();
    let multi: Vec<_> = r.workloads.iter().filter(|w| is_multi(w)).collect();
    [("2 kernels", pairs), ("3+ kernels", multi)]
        .into_iter()
        .filter(|(_, ws)| !ws.is_empty())
        .collect()
}

/// Fig. 9a: minimum speedup normalised to `left-over`, geometric mean over workloads.
fn fairness_chart(r: &StudyResults, policies: &[String]) -> GroupedBarChart {
    let base = r.baseline();
    let base = base.as_str();
    let groups = kernel_sets(r)
        .into_iter()
        .map(|(label, ws)| BarGroup {
            label: label.into(),
            bars: policies
                .iter()
                .map(|p| {
                    bar(gmean_over(ws.iter().copied(), |w| {
                        ratio_to(w, p, base, fairness)
                    }))
                })
                .collect(),
        })
        .collect();
    GroupedBarChart {
        title: "Minimum speedup (fairness)".into(),
        y_label: format!("Min. speedup (norm. to {base})"),
        series: keys(policies),
        groups,
        sections: Vec::new(),
        reference: Some(1.0),
    }
}

/// Fig. 9b: ANTT, mean over workloads with a 95 % confidence interval.
fn antt_chart(r: &StudyResults, policies: &[String]) -> GroupedBarChart {
    let groups = kernel_sets(r)
        .into_iter()
        .map(|(label, ws)| BarGroup {
            label: label.into(),
            bars: policies
                .iter()
                .map(|p| {
                    let xs: Vec<f64> = ws
                        .iter()
                        .filter_map(|w| w.run(p).map(|run| run.summary.antt))
                        .filter(|x| x.is_finite())
                        .collect();
                    (!xs.is_empty()).then(|| {
                        let ci = mean_ci(&xs, 0.95);
                        Bar {
                            value: ci.mean,
                            err: (ci.n > 1).then_some((ci.lo, ci.hi)),
                        }
                    })
                })
                .collect(),
        })
        .collect();
    GroupedBarChart {
        title: "Average normalised turnaround time (lower is better)".into(),
        y_label: "ANTT (mean, 95% CI)".into(),
        series: keys(policies),
        groups,
        sections: Vec::new(),
        reference: None,
    }
}

/// Fig. 7c: stalls summed over the two-application workloads that have a `left-over` run,
/// normalised to the `left-over` total; `None` when that total is zero.
fn stall_chart(r: &StudyResults, policies: &[String]) -> Option<StackedBarChart> {
    let base = r.baseline();
    let base = base.as_str();
    let ws: Vec<&WorkloadResult> = r
        .workloads
        .iter()
        .filter(|w| is_pair(w) && w.run(base).is_some())
        .collect();
    let sum = |p: &str| {
        let mut s = Stalls::default();
        ws.iter()
            .filter_map(|w| w.run(p))
            .for_each(|run| s.add(&run.stalls));
        s
    };
    let base = sum(base).total();
    if base == 0 {
        return None;
    }
    let bars = policies
        .iter()
        .filter(|p| ws.iter().any(|w| w.run(p).is_some()))
        .map(|p| StackedBar {
            label: p.clone(),
            parts: sum(p)
                .parts()
                .iter()
                .map(|&(_, v)| v as f64 / base as f64)
                .collect(),
        })
        .collect();
    let parts = Stalls::default()
        .parts()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| Key {
            name: (*name).into(),
            color: i,
        })
        .collect();
    Some(StackedBarChart {
        title: "Stall cycles by reason (2-app workloads)".into(),
        y_label: format!("Stall cycles (norm. to {base})"),
        parts,
        bars,
        reference: Some(1.0),
    })
}

/// Fig. 3a: IPC against occupancy in % of the kernel's largest CTAs per SM.
fn occupancy_chart(r: &StudyResults) -> LineChart {
    LineChart {
        title: "Performance vs CTA occupancy".into(),
        x_label: "CTA occupancy (% of max CTAs per SM)".into(),
        y_label: "IPC (norm. to best)".into(),
        series: r
            .curves
            .iter()
            .filter(|c| c.max_ctas > 0)
            .map(|c| Series {
                name: c.name.clone(),
                points: c
                    .points
                    .iter()
                    .map(|&(n, y)| (100.0 * n as f64 / c.max_ctas as f64, y))
                    .collect(),
            })
            .collect(),
        integer_x: false,
    }
}

/// Markdown table cell text: `|` would break the table.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Table III: the partition each partitioning policy chose, per two-application workload.
fn partition_table(r: &StudyResults) -> String {
    // The columns: every policy that chose CTAs per SM (a `(T1,T2)` partition) in some
    // two-application workload.
    let all = r.policies();
    let cols: Vec<&str> = all
        .iter()
        .filter(|p| {
            r.workloads.iter().filter(|w| is_pair(w)).any(|w| {
                w.run(p)
                    .is_some_and(|run| run.ctas.is_some() || run.partition.starts_with('('))
            })
        })
        .map(String::as_str)
        .collect();
    let mut s = String::from("# Resource partitioning per workload (Table III)\n\n");
    s += "CTAs per SM per application as `(T1,T2)`; `spatial` / `shared` when the policy \
          did not partition within an SM; `-` when the policy did not run.\n\n";
    s += "| Workload | Category |";
    for c in &cols {
        let _ = write!(s, " {c} |");
    }
    s += "\n|---|---|";
    s += &"---|".repeat(cols.len());
    s += "\n";
    for w in r.workloads.iter().filter(|w| is_pair(w)) {
        let _ = write!(s, "| {} | {} |", cell(&w.name), cell(&w.category));
        for c in &cols {
            let p = w.run(c).map_or("-".to_string(), |run| cell(&run.partition));
            let _ = write!(s, " {p} |");
        }
        s += "\n";
    }
    s
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

/// `summary.md`: geometric means of normalised combined IPC per category, multiprogram
/// metric means per policy, and the headline ratios of the proposed policy.
fn summary(r: &StudyResults, policies: &[String]) -> String {
    let base = r.baseline();
    let base = base.as_str();
    let pairs: Vec<&WorkloadResult> = r.workloads.iter().filter(|w| is_pair(w)).collect();
    let multi: Vec<&WorkloadResult> = r.workloads.iter().filter(|w| is_multi(w)).collect();
    let mut s = format!("# Study summary: {}\n\n", r.study);
    let _ = writeln!(
        s,
        "GPU model `{}`; {} two-application and {} three-or-more-application workloads; \
         baseline `{base}`.\n",
        r.model.name,
        pairs.len(),
        multi.len()
    );
    s += &format!("## Combined IPC normalised to {base} (geometric mean)\n\n");
    s += "| Workloads | n |";
    for p in policies {
        let _ = write!(s, " {} |", cell(p));
    }
    s += "\n|---|---|";
    s += &"---|".repeat(policies.len());
    s += "\n";
    let mut rows: Vec<(String, Vec<&WorkloadResult>)> = r
        .categories()
        .into_iter()
        .map(|c| {
            let ws = pairs.iter().copied().filter(|w| w.category == c).collect();
            (c, ws)
        })
        .collect();
    rows.push(("overall (2 apps)".into(), pairs.clone()));
    if !multi.is_empty() {
        rows.push(("3+ apps".into(), multi.clone()));
    }
    for (label, ws) in rows {
        let ws: Vec<&WorkloadResult> = ws.into_iter().filter(|w| w.run(base).is_some()).collect();
        if ws.is_empty() {
            continue;
        }
        let _ = write!(s, "| {} | {} |", cell(&label), ws.len());
        for p in policies {
            let g = gmean_over(ws.iter().copied(), |w| normalised_ipc(w, p, base));
            let _ = write!(s, " {} |", fmt_opt(g));
        }
        s += "\n";
    }
    s += "\n## Multiprogram metrics (arithmetic mean over workloads)\n";
    for (label, ws) in [("2 apps", &pairs), ("3+ apps", &multi)] {
        if ws.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "\n### {label}\n\n| Policy | n | STP | ANTT | fairness |\n|---|---|---|---|---|\n"
        );
        for p in policies {
            let n = ws.iter().filter(|w| w.run(p).is_some()).count();
            let _ = writeln!(
                s,
                "| {} | {n} | {} | {} | {} |",
                cell(p),
                fmt_opt(mean_of(ws.iter().copied(), p, |x| x.stp)),
                fmt_opt(mean_of(ws.iter().copied(), p, |x| x.antt)),
                fmt_opt(mean_of(ws.iter().copied(), p, fairness)),
            );
        }
    }
    // Headlines: the study's proposed policy against every other policy it ran.
    let Some(proposed) = r.proposed() else {
        return s;
    };
    s +=
        "\n## Headlines\n\nGeometric mean over workloads of the per-workload combined-IPC ratio.\n";
    for (label, ws) in [("2 apps", &pairs), ("3+ apps", &multi)] {
        if ws.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n### {label}\n");
        let ratio =
            |other: &str| gmean_over(ws.iter().copied(), |w| ratio_to(w, &proposed, other, ipc));
        for other in policies
            .iter()
            .filter(|p| **p != proposed && *p != "oracle")
        {
            let v = ratio(other).map_or("n/a".into(), |g| format!("{:+.1}%", (g - 1.0) * 100.0));
            let _ = writeln!(s, "- {proposed} over {other}: {v}");
        }
        if policies.iter().any(|p| p == "oracle") {
            let v = ratio("oracle").map_or("n/a".into(), |g| format!("{:.1}%", g * 100.0));
            let _ = writeln!(s, "- {proposed} / oracle: {v}");
        }
    }
    s
}

/// The Warped-Slicer figure set (§V): Fig. 3a, 6, 7c, 8, 9, Table III and the summary.
pub(super) fn ws_figures(r: &StudyResults, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let policies = r.policies();
    let pair_title = format!("Combined IPC, 2 applications (norm. to {})", r.baseline());
    if let Some(c) = ipc_chart(r, &policies, is_pair, &pair_title) {
        put(dir, "fig6_normalized_ipc.svg", &render_grouped(&c)?, out)?;
    }
    let multi_title = format!("Combined IPC, 3+ applications (norm. to {})", r.baseline());
    if let Some(c) = ipc_chart(r, &policies, is_multi, &multi_title) {
        put(dir, "fig8_three_kernels.svg", &render_grouped(&c)?, out)?;
    }
    if !r.curves.is_empty() {
        let svg = curves::render_svg(&occupancy_chart(r))?;
        put(dir, "fig3a_occupancy.svg", &svg, out)?;
    }
    if !r.workloads.is_empty() {
        let svg = render_grouped(&fairness_chart(r, &policies))?;
        put(dir, "fig9a_fairness.svg", &svg, out)?;
        let svg = render_grouped(&antt_chart(r, &policies))?;
        put(dir, "fig9b_antt.svg", &svg, out)?;
    }
    if let Some(c) = stall_chart(r, &policies) {
        put(dir, "fig7c_stalls.svg", &render_stacked(&c)?, out)?;
    }
    put(dir, "table3_partitions.md", &partition_table(r), out)?;
    if let Some(t) = super::sampling::table(r) {
        put(dir, "table_iva_sampling.md", &t, out)?;
    }
    let pairs: Vec<&WorkloadResult> = r.workloads.iter().filter(|w| is_pair(w)).collect();
    let base = r.baseline();
    let ours: Vec<(String, f64)> = policies
        .iter()
        .filter_map(|p| {
            let g = gmean_over(pairs.iter().copied(), |w| normalised_ipc(w, p, &base))?;
            Some((p.clone(), g))
        })
        .collect();
    let measure = format!(
        "combined IPC of the two-application workloads normalised to {base} (geometric mean)"
    );
    let text = summary(r, &policies) + &super::ranking::section(&r.config, &measure, &ours);
    put(dir, "summary.md", &text, out)
}
