//! The figures and tables of the multi-tenancy studies, redrawn from saved
//! [`StudyResults`] alone (completion mode with arrivals, `figures` = `sim` or `slate`).
//!
//! SiM (seed 002 §4): `fig8a_pt_overhead.svg` (each kernel alone in persistent-thread form,
//! time normalised to the original), `fig8b_registers.svg` (registers per thread and
//! worker CTAs per SM, original vs transformed), `fig9_profiles.svg` (performance vs CTAs
//! per SM, pruned points as their own series), `fig3_isu.svg` + `fig3_isu.md` (issue-slot
//! utilisation of each kernel alone beside the paper's Table 3), `fig10_stp_low_isu.svg` and
//! `fig11_stp_high_isu.svg` (`makespan_speedup` — the paper's "normalised STP" — per pair
//! and arrival order, per policy), `antt_table.md`; Figs. 2 and 7 come from
//! [`super::kernels`].
//!
//! Slate (seed 003 §V): `fig5_task_size.svg` (speed-up alone vs task size),
//! `fig6_solo.svg` (kernel time alone normalised to CUDA), `fig7_pairs.svg` (pair
//! throughput normalised to CUDA), `table2_profiles.md` (measured intensities and L/M/H
//! labels), `table3_gs.md` (GS alone: caches, DRAM, IPC and time, original vs Slate),
//! `table4_bs_rg.md` (MPS vs Slate on the BS–RG pair).
//!
//! Both write `summary.md`: per category and policy the mean `makespan_speedup`, STP and
//! ANTT (arithmetic means over workloads, as the papers average), and the headline
//! comparisons.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::bars::{render_grouped, Bar, BarGroup, GroupedBarChart, Key, Section};
use super::common::{mean, put};
use super::curves::{self, LineChart, Series};
use crate::metrics::{StudyResults, WorkloadResult};
use crate::policy::names;

const SPEEDUP: &str = "makespan_speedup";

/// A bar series of the solo figures: its name and value per solo run.
type SoloSeries<'a> = (&'a str, fn(&crate::metrics::SoloRun) -> f64);

/// (makespan_speedup, STP, ANTT) of one run.
type RunFigures = (Option<f64>, f64, f64);

fn bar(value: f64) -> Bar {
    Bar { value, err: None }
}

/// The `MEAN` group: one bar per column of values (none for an empty column).
fn mean_group(columns: impl Iterator<Item = Vec<f64>>) -> BarGroup {
    BarGroup {
        label: "MEAN".into(),
        bars: columns.map(|xs| mean(&xs).map(bar)).collect(),
    }
}

fn measure(w: &WorkloadResult, policy: &str, key: &str) -> Option<f64> {
    w.run(policy)?.measures.get(key).copied()
}

/// Policies other than the makespan reference (the bars of the pair figures).
fn compared(r: &StudyResults) -> Vec<String> {
    let base = r.baseline();
    r.policies().into_iter().filter(|p| *p != base).collect()
}

/// One bar per policy per workload of `cat` (all when `None`): `makespan_speedup`.
fn pair_chart(r: &StudyResults, cat: Option<&str>, title: &str) -> Option<GroupedBarChart> {
    let policies = compared(r);
    let all = r.policies();
    let ws: Vec<&WorkloadResult> = r
        .workloads
        .iter()
        .filter(|w| cat.is_none_or(|c| w.category == c))
        .collect();
    if ws.is_empty() {
        return None;
    }
    let mut groups: Vec<BarGroup> = ws
        .iter()
        .map(|w| BarGroup {
            label: w.name.clone(),
            bars: policies
                .iter()
                .map(|p| measure(w, p, SPEEDUP).map(bar))
                .collect(),
        })
        .collect();
    groups.push(mean_group(policies.iter().map(|p| {
        ws.iter().filter_map(|w| measure(w, p, SPEEDUP)).collect()
    })));
    Some(GroupedBarChart {
        title: title.into(),
        y_label: format!("Throughput (makespan, norm. to {})", r.baseline()),
        series: policies
            .iter()
            .map(|p| Key {
                name: p.clone(),
                color: all.iter().position(|x| x == p).unwrap_or(0),
            })
            .collect(),
        sections: vec![Section {
            label: cat.unwrap_or("pairs").into(),
            start: 0,
            end: groups.len(),
        }],
        groups,
        reference: Some(1.0),
    })
}

/// Per-bench bars from the solo runs of `variant`: `f(solo)`.
fn solo_chart(
    r: &StudyResults,
    variant: &str,
    title: &str,
    y_label: &str,
    series: &[SoloSeries],
) -> Option<GroupedBarChart> {
    let runs: Vec<_> = r.solo.iter().filter(|s| s.variant == variant).collect();
    if runs.is_empty() {
        return None;
    }
    let mut groups: Vec<BarGroup> = runs
        .iter()
        .map(|s| BarGroup {
            label: s.bench.clone(),
            bars: series.iter().map(|(_, f)| Some(bar(f(s)))).collect(),
        })
        .collect();
    groups.push(mean_group(
        series
            .iter()
            .map(|(_, f)| runs.iter().map(|s| f(s)).collect()),
    ));
    Some(GroupedBarChart {
        title: title.into(),
        y_label: y_label.into(),
        series: Key::series(&series.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
        groups,
        sections: Vec::new(),
        reference: Some(1.0),
    })
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// Mean `makespan_speedup`, STP and ANTT per (category, policy), in category then policy
/// order.
fn table(r: &StudyResults) -> String {
    let mut by: BTreeMap<(String, usize), Vec<RunFigures>> = BTreeMap::new();
    let policies = r.policies();
    for w in &r.workloads {
        for run in &w.runs {
            let p = policies.iter().position(|x| *x == run.policy).unwrap_or(0);
            by.entry((w.category.clone(), p)).or_default().push((
                run.measures.get(SPEEDUP).copied(),
                run.summary.stp,
                run.summary.antt,
            ));
        }
    }
    let mut s = format!(
        "| category | policy | workloads | {SPEEDUP} (vs {}) | STP | ANTT |\n|---|---|---:|---:|---:|---:|\n",
        r.baseline()
    );
    for ((cat, p), v) in &by {
        let sp: Vec<f64> = v.iter().filter_map(|x| x.0).collect();
        let stp: Vec<f64> = v.iter().map(|x| x.1).collect();
        let antt: Vec<f64> = v.iter().map(|x| x.2).collect();
        let _ = writeln!(
            s,
            "| {cat} | {} | {} | {} | {:.3} | {:.3} |",
            policies[*p],
            v.len(),
            mean(&sp).map_or("n/a".into(), |x| format!("{x:.3}")),
            mean(&stp).unwrap_or(0.0),
            mean(&antt).unwrap_or(0.0)
        );
    }
    s
}

/// `mean over workloads of cat` of f(policy) / f(other) − 1, as a signed percentage.
fn gain(
    r: &StudyResults,
    cat: Option<&str>,
    policy: &str,
    other: &str,
    f: impl Fn(&WorkloadResult, &str) -> Option<f64>,
) -> String {
    let xs: Vec<f64> = r
        .workloads
        .iter()
        .filter(|w| cat.is_none_or(|c| w.category == c))
        .filter_map(|w| Some(f(w, policy)? / f(w, other)?))
        .collect();
    mean(&xs).map_or("n/a".into(), |m| format!("{:+.1}%", (m - 1.0) * 100.0))
}

/// Every policy's mean of f over the workloads of `cat` (those where it ran).
fn policy_means(
    r: &StudyResults,
    cat: Option<&str>,
    f: impl Fn(&WorkloadResult, &str) -> Option<f64>,
) -> Vec<(String, f64)> {
    r.policies()
        .into_iter()
        .filter_map(|p| {
            let xs: Vec<f64> = r
                .workloads
                .iter()
                .filter(|w| cat.is_none_or(|c| w.category == c))
                .filter_map(|w| f(w, &p))
                .collect();
            Some((p, mean(&xs)?))
        })
        .collect()
}

fn antt(w: &WorkloadResult, p: &str) -> Option<f64> {
    Some(w.run(p)?.summary.antt)
}

fn speedup(w: &WorkloadResult, p: &str) -> Option<f64> {
    measure(w, p, SPEEDUP)
}

/// SiM Table 3: issue-slot utilisation (%) of each kernel alone, as the paper measured it
/// on a K40c with nvprof — paper facts, drawn beside ours.
const PAPER_ISU: [(&str, f64); 7] = [
    ("BO", 73.6),
    ("FD", 27.5),
    ("LM", 87.3),
    ("MD", 97.4),
    ("NB", 89.1),
    ("PF", 48.6),
    ("TP", 34.8),
];

fn paper_isu(name: &str) -> Option<f64> {
    PAPER_ISU
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v / 100.0)
}

/// SiM Fig. 3: issue-slot utilisation of each kernel alone, ours (`AloneResult::isu`)
/// beside the paper's Table 3, as a chart and a markdown table.
fn isu_figure(r: &StudyResults) -> Option<(GroupedBarChart, String)> {
    if r.alone.is_empty() {
        return None;
    }
    let mut t = String::from(
        "# Issue-slot utilisation alone (SiM Fig. 3 / Table 3)\n\n| kernel | ours | paper |\n|---|---:|---:|\n",
    );
    let mut groups = Vec::new();
    for a in &r.alone {
        let paper = paper_isu(&a.name);
        let _ = writeln!(
            t,
            "| {} | {:.1}% | {} |",
            a.name,
            a.isu * 100.0,
            paper.map_or("-".into(), |p| format!("{:.1}%", p * 100.0))
        );
        groups.push(BarGroup {
            label: a.name.clone(),
            bars: vec![Some(bar(a.isu)), paper.map(bar)],
        });
    }
    let chart = GroupedBarChart {
        title: "Issue-slot utilisation, each kernel alone".into(),
        y_label: "Share of issue slots used".into(),
        series: Key::series(&["this model", "SiM Table 3"]),
        groups,
        sections: Vec::new(),
        reference: Some(1.0),
    };
    Some((chart, t))
}

pub(super) fn sim_figures(r: &StudyResults, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    super::kernels::sim_kernel_figures(r, dir, out)?;
    if let Some((c, t)) = isu_figure(r) {
        put(dir, "fig3_isu.svg", &render_grouped(&c)?, out)?;
        put(dir, "fig3_isu.md", &t, out)?;
    }
    if let Some(c) = solo_chart(
        r,
        names::Pt,
        "Persistent-thread transformation: time alone",
        "Execution time (norm. to original)",
        &[("PT / original", |s| ratio(s.cycles, s.alone_cycles))],
    ) {
        put(dir, "fig8a_pt_overhead.svg", &render_grouped(&c)?, out)?;
    }
    if let Some(c) = solo_chart(
        r,
        names::Pt,
        "Persistent-thread transformation: resources",
        "Transformed / original",
        &[
            ("registers per thread", |s| {
                ratio(s.regs as u64, s.alone_regs as u64)
            }),
            ("CTAs per SM", |s| {
                ratio(s.ctas_per_sm as u64, s.alone_ctas_per_sm as u64)
            }),
        ],
    ) {
        put(dir, "fig8b_registers.svg", &render_grouped(&c)?, out)?;
    }
    if !r.curves.is_empty() {
        let mut series: Vec<Series> = r
            .curves
            .iter()
            .map(|c| Series {
                name: c.name.clone(),
                points: c.points.iter().map(|&(n, y)| (n as f64, y)).collect(),
            })
            .collect();
        let pruned: Vec<(f64, f64)> = r
            .curves
            .iter()
            .flat_map(|c| {
                c.points
                    .iter()
                    .filter(|p| c.pruned.contains(&p.0))
                    .map(|&(n, y)| (n as f64, y))
            })
            .collect();
        if !pruned.is_empty() {
            series.push(Series {
                name: "pruned".into(),
                points: pruned,
            });
        }
        let chart = LineChart {
            title: "Persistent kernels alone vs CTAs per SM".into(),
            x_label: "Worker CTAs per SM".into(),
            y_label: "Performance (norm. to fastest)".into(),
            series,
            integer_x: true,
        };
        put(dir, "fig9_profiles.svg", &curves::render_svg(&chart)?, out)?;
    }
    for (cat, name, title) in [
        (
            "low-isu",
            "fig10_stp_low_isu.svg",
            "Pairs with a low-ISU kernel",
        ),
        (
            "high-isu",
            "fig11_stp_high_isu.svg",
            "Pairs of high-ISU kernels",
        ),
    ] {
        if let Some(c) = pair_chart(r, Some(cat), title) {
            put(dir, name, &render_grouped(&c)?, out)?;
        }
    }
    let mut t = String::from("# ANTT per pair and arrival order\n\n| workload | category |");
    let policies = r.policies();
    for p in &policies {
        let _ = write!(t, " {p} |");
    }
    t += "\n|---|---|";
    t += &"---:|".repeat(policies.len());
    t += "\n";
    for w in &r.workloads {
        let _ = write!(t, "| {} | {} |", w.name, w.category);
        for p in &policies {
            let _ = write!(
                t,
                " {} |",
                antt(w, p).map_or("-".into(), |x| format!("{x:.3}"))
            );
        }
        t += "\n";
    }
    put(dir, "antt_table.md", &t, out)?;
    let mut s = format!("# {} — summary\n\n", r.study);
    s += "Arithmetic means over workloads (every pair in each arrival order). ";
    s += &format!(
        "`{SPEEDUP}` is SiM §4.4's throughput measure (makespan of `{}` / the policy's); STP and ANTT are the standard multiprogram metrics against each kernel alone, untransformed.\n\n",
        r.baseline()
    );
    s += &table(r);
    s += "\n## Headlines\n\n";
    let base = r.baseline();
    for cat in ["low-isu", "high-isu"] {
        let _ = writeln!(s, "### {cat}\n");
        for p in compared(r) {
            let _ = writeln!(
                s,
                "- {p}: {SPEEDUP} {} vs {base}; ANTT {} vs {base}",
                gain(r, Some(cat), &p, &base, speedup),
                gain(r, Some(cat), &p, &base, antt)
            );
        }
        s += "\n";
    }
    s += &solo_summary(r, names::Pt);
    s += &super::ranking::section(
        &r.config,
        &format!("mean {SPEEDUP} of the low-isu workloads (SiM Fig. 10)"),
        &policy_means(r, Some("low-isu"), speedup),
    );
    put(dir, "summary.md", &s, out)
}

fn solo_summary(r: &StudyResults, variant: &str) -> String {
    let runs: Vec<_> = r.solo.iter().filter(|s| s.variant == variant).collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "## Alone under {variant}\n\n| kernel | cycles | original | time / original | regs | CTAs/SM (orig.) |\n|---|---:|---:|---:|---:|---:|\n"
    );
    for x in &runs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {} ({}) | {} ({}) |",
            x.bench,
            x.cycles,
            x.alone_cycles,
            ratio(x.cycles, x.alone_cycles),
            x.regs,
            x.alone_regs,
            x.ctas_per_sm,
            x.alone_ctas_per_sm
        );
    }
    let xs: Vec<f64> = runs
        .iter()
        .map(|x| ratio(x.cycles, x.alone_cycles))
        .collect();
    let _ = writeln!(
        s,
        "\nMean time / original: {:.3}\n",
        mean(&xs).unwrap_or(0.0)
    );
    s
}

/// Slate Table III for `bench`: the original kernel alone (CUDA) against its Slate form
/// alone (default task size), by the saved counters; nothing when the solo run has none.
pub fn table3(r: &StudyResults, bench: &str) -> Option<String> {
    let x = r
        .solo
        .iter()
        .find(|s| s.bench == bench && s.variant == names::Slate && s.value.is_none())?;
    let (c, a) = (x.counters?, x.alone_counters?);
    let gbs = |b: f64| b * r.model.clocks.core.mhz() / 1e3;
    let mut t = format!(
        "# Slate Table III — {bench} alone, original kernel (CUDA) vs Slate\n\n| | CUDA | Slate | Slate / CUDA |\n|---|---:|---:|---:|\n"
    );
    let rows = [
        (
            "L1 hit rate (%)",
            a.l1_hit_rate * 100.0,
            c.l1_hit_rate * 100.0,
        ),
        (
            "L2 hit rate (%)",
            a.l2_hit_rate * 100.0,
            c.l2_hit_rate * 100.0,
        ),
        (
            "DRAM bandwidth (GB/s)",
            gbs(a.dram_bytes_per_cycle),
            gbs(c.dram_bytes_per_cycle),
        ),
        ("IPC (warp instructions / cycle)", a.ipc, c.ipc),
        (
            "kernel time (cycles)",
            x.alone_cycles as f64,
            x.cycles as f64,
        ),
    ];
    for (name, a, c) in rows {
        let q = if a > 0.0 {
            format!("{:.3}", c / a)
        } else {
            "—".into()
        };
        let _ = writeln!(t, "| {name} | {a:.2} | {c:.2} | {q} |");
    }
    let _ = writeln!(
        t,
        "\nDRAM bandwidth: bytes per core cycle × the core clock ({:.0} MHz).",
        r.model.clocks.core.mhz()
    );
    Some(t)
}

pub(super) fn slate_figures(r: &StudyResults, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let swept: Vec<_> = r.solo.iter().filter(|s| s.value.is_some()).collect();
    if !swept.is_empty() {
        let mut names: Vec<&str> = swept.iter().map(|s| s.bench.as_str()).collect();
        names.dedup();
        let chart = LineChart {
            title: "Task size (logical blocks per atomic)".into(),
            x_label: "Task size (blocks)".into(),
            y_label: "Speed-up alone (vs original)".into(),
            series: names
                .iter()
                .map(|n| Series {
                    name: n.to_string(),
                    points: swept
                        .iter()
                        .filter(|s| s.bench == *n)
                        .map(|s| (s.value.unwrap_or(0.0), ratio(s.alone_cycles, s.cycles)))
                        .collect(),
                })
                .collect(),
            integer_x: true,
        };
        put(dir, "fig5_task_size.svg", &curves::render_svg(&chart)?, out)?;
    }
    if let Some(c) = solo_chart(
        r,
        names::Slate,
        "Kernel time alone",
        "Kernel time (norm. to CUDA)",
        &[
            ("CUDA", |_| 1.0),
            ("Slate", |s| ratio(s.cycles, s.alone_cycles)),
        ],
    ) {
        put(dir, "fig6_solo.svg", &render_grouped(&c)?, out)?;
    }
    if let Some(c) = pair_chart(r, None, "Pairs: throughput") {
        put(dir, "fig7_pairs.svg", &render_grouped(&c)?, out)?;
    }
    let mut t = String::from(
        "# Kernel profiles (Table II), measured alone\n\n| kernel | FP32 FLOP/s (of peak) | L2 load+store (of DRAM peak) | ISU | label |\n|---|---:|---:|---:|---|\n",
    );
    for a in &r.alone {
        let _ = writeln!(
            t,
            "| {} | {:.4} | {:.3} | {:.3} | {} |",
            a.name, a.fp32_util, a.mem_intensity, a.isu, a.label
        );
    }
    put(dir, "table2_profiles.md", &t, out)?;
    if let Some(w) = r
        .workloads
        .iter()
        .find(|w| w.apps.iter().any(|a| a == "BS") && w.apps.iter().any(|a| a == "RG"))
    {
        let mut t = format!(
            "# Table IV: the {} pair, MPS vs Slate\n\n| metric | mps | slate | Δ% |\n|---|---:|---:|---:|\n",
            w.name
        );
        for (label, key) in [
            ("L2 load+store throughput (GB/s)", "l2_gbs"),
            ("IPC (warp instructions / cycle)", "ipc"),
            ("makespan (cycles)", "makespan"),
        ] {
            if let (Some(m), Some(s)) = (measure(w, names::Mps, key), measure(w, names::Slate, key))
            {
                let _ = writeln!(
                    t,
                    "| {label} | {m:.2} | {s:.2} | {:+.2} |",
                    (s / m - 1.0) * 100.0
                );
            }
        }
        if let (Some(m), Some(s)) = (speedup(w, names::Mps), speedup(w, names::Slate)) {
            let _ = writeln!(
                t,
                "\nThroughput gain of Slate over MPS: {:+.2}%",
                (s / m - 1.0) * 100.0
            );
        }
        put(dir, "table4_bs_rg.md", &t, out)?;
    }
    if let Some(t) = table3(r, "GS") {
        put(dir, "table3_gs.md", &t, out)?;
    }
    let mut s = format!("# {} — summary\n\n", r.study);
    s += &format!(
        "Arithmetic means over the pairs. `{SPEEDUP}`: makespan of `{}` (vanilla CUDA) / the policy's; STP and ANTT: the standard metrics against each kernel alone.\n\n",
        r.baseline()
    );
    s += &table(r);
    s += "\n## Headlines\n\n";
    let base = r.baseline();
    for p in compared(r) {
        let _ = writeln!(
            s,
            "- {p} vs {base}: throughput {}",
            gain(r, None, &p, &base, speedup)
        );
    }
    if r.policies().iter().any(|p| p == names::Mps) {
        let _ = writeln!(
            s,
            "- slate vs mps: throughput {}",
            gain(r, None, names::Slate, names::Mps, speedup)
        );
        let lost: Vec<&str> = r
            .workloads
            .iter()
            .filter(
                |w| matches!((speedup(w, names::Slate), speedup(w, names::Mps)), (Some(a), Some(b)) if a < b),
            )
            .map(|w| w.name.as_str())
            .collect();
        let _ = writeln!(
            s,
            "- pairs where slate is slower than mps: {}",
            if lost.is_empty() {
                "none".to_string()
            } else {
                lost.join(", ")
            }
        );
    }
    s += "\n";
    s += &solo_summary(r, names::Slate);
    s += &super::ranking::section(
        &r.config,
        &format!("mean {SPEEDUP} over the pairs"),
        &policy_means(r, None, speedup),
    );
    put(dir, "summary.md", &s, out)
}
