//! The UGPU figure set (`figures` = `ugpu`, seed 004 §6): Fig. 4 (STP against the
//! SM/channel split of a memory- and a compute-bound application), Fig. 10 (S-curves of
//! STP and ANTT over the heterogeneous mixes), Fig. 11 (page-migration mechanisms),
//! Fig. 12a (time per epoch spent reallocating), Fig. 13 (against BP (CD-Search)), Fig. 14
//! (4- and 8-program mixes), Fig. 16 (QoS), and `summary.md` with the means beside the
//! paper's numbers. Everything is drawn from [`StudyResults`] alone.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::bars::{render_grouped, Bar, BarGroup, GroupedBarChart, Key, Section};
use super::common::put;
use super::curves::{self, LineChart, Series};
use super::heatmap::{self, Heatmap};
use crate::metrics::{gmean, StudyResults, WorkloadResult};
use crate::policy::names;
use crate::policy::ugpu::{guarded, UgpuParams};

/// The group of two-program mixes of one memory- and one compute-bound application.
pub const HETEROGENEOUS: &str = "heterogeneous";
/// Keys of [`crate::metrics::PolicyRun::measures`] the study fills for UGPU runs.
/// The group of Fig. 15 mixes: an AI workload (first app) with a compute-bound one.
pub const AI_MIXES: &str = "ai-x-compute";
pub const SM_CYCLES: &str = "sm_realloc_cycles";
pub const DATA_CYCLES: &str = "migration_cycles";

fn in_cat<'a>(r: &'a StudyResults, cat: &str) -> Vec<&'a WorkloadResult> {
    r.workloads.iter().filter(|w| w.category == cat).collect()
}

fn stp(w: &WorkloadResult, p: &str) -> Option<f64> {
    w.run(p).map(|r| r.summary.stp)
}

fn antt(w: &WorkloadResult, p: &str) -> Option<f64> {
    w.run(p).map(|r| r.summary.antt)
}

/// Geometric mean over `ws` of `f(policy) / f(base)` (workloads where both ran).
fn gain(
    ws: &[&WorkloadResult],
    p: &str,
    base: &str,
    f: fn(&WorkloadResult, &str) -> Option<f64>,
) -> Option<f64> {
    let xs: Vec<f64> = ws
        .iter()
        .filter_map(|w| Some(f(w, p)? / f(w, base)?.max(1e-12)))
        .collect();
    (!xs.is_empty()).then(|| gmean(&xs))
}

fn ran(ws: &[&WorkloadResult], p: &str) -> bool {
    ws.iter().any(|w| w.run(p).is_some())
}

/// A per-mix measure of one policy.
type Measure = fn(&WorkloadResult, &str) -> Option<f64>;

/// 1/ANTT, so that higher is better as for STP.
fn inv_antt(w: &WorkloadResult, p: &str) -> Option<f64> {
    antt(w, p).map(|a| 1.0 / a.max(1e-12))
}

/// Fig. 10: each policy's values over `ws`, sorted ascending (an S-curve).
fn s_curve(
    ws: &[&WorkloadResult],
    policies: &[&str],
    f: fn(&WorkloadResult, &str) -> Option<f64>,
    title: &str,
    y: &str,
) -> Option<LineChart> {
    let series: Vec<Series> = policies
        .iter()
        .filter_map(|p| {
            let mut v: Vec<f64> = ws.iter().filter_map(|w| f(w, p)).collect();
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(Series {
                name: p.to_string(),
                points: v
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| ((i + 1) as f64, x))
                    .collect(),
            })
        })
        .collect();
    (!series.is_empty()).then(|| LineChart {
        title: title.into(),
        x_label: "Workloads (sorted)".into(),
        y_label: y.into(),
        series,
        integer_x: true,
    })
}

/// Grouped bars: one group per (label, workloads, measure), one bar per policy: the
/// geometric mean over the workloads of the measure normalised to `base`.
fn norm_bars(
    title: &str,
    y: &str,
    groups: &[(String, &[&WorkloadResult], Measure)],
    policies: &[&str],
    base: &str,
) -> Option<GroupedBarChart> {
    let bars: Vec<BarGroup> = groups
        .iter()
        .filter(|(_, ws, _)| !ws.is_empty())
        .map(|&(ref label, ws, f)| BarGroup {
            label: label.to_string(),
            bars: policies
                .iter()
                .map(|p| {
                    gain(ws, p, base, f).map(|v| Bar {
                        value: v,
                        err: None,
                    })
                })
                .collect(),
        })
        .collect();
    if bars.is_empty() || bars.iter().all(|g| g.bars.iter().all(Option::is_none)) {
        return None;
    }
    Some(GroupedBarChart {
        title: title.into(),
        y_label: y.into(),
        series: policies
            .iter()
            .enumerate()
            .map(|(i, p)| Key {
                name: p.to_string(),
                color: i,
            })
            .collect(),
        sections: vec![Section {
            label: String::new(),
            start: 0,
            end: bars.len(),
        }],
        groups: bars,
        reference: Some(1.0),
    })
}

/// The bar groups "STP {label}" for every (label, workloads), then "1/ANTT {label}"
/// (just "STP" / "1/ANTT" for an empty label).
fn stp_and_antt<'a>(
    cats: &[(&str, &'a [&'a WorkloadResult])],
) -> Vec<(String, &'a [&'a WorkloadResult], Measure)> {
    let name = |m: &str, c: &str| {
        if c.is_empty() {
            m.to_string()
        } else {
            format!("{m} {c}")
        }
    };
    let mut out = Vec::new();
    for (m, f) in [("STP", stp as Measure), ("1/ANTT", inv_antt)] {
        out.extend(cats.iter().map(|&(c, ws)| (name(m, c), ws, f)));
    }
    out
}

fn put_chart(dir: &Path, name: &str, c: Option<LineChart>, out: &mut Vec<PathBuf>) -> Result<()> {
    if let Some(c) = c {
        put(dir, name, &curves::render_svg(&c)?, out)?;
    }
    Ok(())
}

fn put_bars(
    dir: &Path,
    name: &str,
    c: Option<GroupedBarChart>,
    out: &mut Vec<PathBuf>,
) -> Result<()> {
    if let Some(c) = c {
        put(dir, name, &render_grouped(&c)?, out)?;
    }
    Ok(())
}

/// Fig. 4: STP of a memory-bound + compute-bound pair on isolated slices, against the
/// memory-bound application's SMs (rows) and channels (columns); the compute-bound one
/// holds the rest. Slices are isolated, so each application's progress is its alone run
/// on its slice.
pub fn split_heatmap(r: &StudyResults) -> Option<Heatmap> {
    let class_of = |b: &str| {
        r.alone
            .iter()
            .find(|a| a.name == b)
            .map(|a| a.class.clone())
            .unwrap_or_default()
    };
    let benches: Vec<String> = {
        let mut v: Vec<String> = r.slices.iter().map(|s| s.bench.clone()).collect();
        v.dedup();
        v
    };
    let mem = benches.iter().find(|b| class_of(b).starts_with("memory"))?;
    let comp = benches
        .iter()
        .find(|b| class_of(b).starts_with("compute"))?;
    let nsm = r.model.sm.count;
    let nch = r.model.dram.channels;
    let np = |b: &str, s: u32, c: u32| {
        r.slices
            .iter()
            .find(|x| x.bench == b && x.sms == s && x.channels == c)
            .map(|x| x.ipc / x.alone_ipc.max(1e-12))
    };
    let mut sms: Vec<u32> = r
        .slices
        .iter()
        .filter(|s| &s.bench == mem)
        .map(|s| s.sms)
        .collect();
    sms.sort_unstable();
    sms.dedup();
    let mut chs: Vec<u32> = r
        .slices
        .iter()
        .filter(|s| &s.bench == mem)
        .map(|s| s.channels)
        .collect();
    chs.sort_unstable();
    chs.dedup();
    let rows: Vec<u32> = sms.into_iter().filter(|&s| s < nsm).collect();
    let cols: Vec<u32> = chs.into_iter().filter(|&c| c < nch).collect();
    let mut values = Vec::new();
    for &s in rows.iter().rev() {
        let mut row = Vec::new();
        for &c in &cols {
            row.push(np(mem, s, c)? + np(comp, nsm - s, nch - c)?);
        }
        values.push(row);
    }
    Some(Heatmap {
        title: format!("STP of {mem}+{comp} on isolated slices"),
        row_axis: format!("{mem} SMs ({comp}: the rest)"),
        col_axis: format!("{mem} channels ({comp}: the rest)"),
        rows: rows.iter().rev().map(|s| s.to_string()).collect(),
        cols: cols.iter().map(|c| c.to_string()).collect(),
        values,
    })
}

/// Mean fraction of the window spent reallocating SMs and moving data, per policy, over
/// the heterogeneous mixes (Fig. 12a; the paper gives it per epoch — the window is a
/// whole number of epochs, so the mean per epoch is the same fraction).
fn realloc_fractions(r: &StudyResults, p: &str) -> Option<(f64, f64)> {
    let ws = in_cat(r, HETEROGENEOUS);
    let window = r.config.get("window").and_then(|v| v.as_u64())? as f64;
    let runs: Vec<_> = ws.iter().filter_map(|w| w.run(p)).collect();
    if runs.is_empty() {
        return None;
    }
    let m = |k: &str| {
        runs.iter()
            .map(|x| x.measures.get(k).copied().unwrap_or(0.0) / window)
            .sum::<f64>()
            / runs.len() as f64
    };
    Some((m(SM_CYCLES), m(DATA_CYCLES)))
}

/// The QoS target of the high-priority application: `ugpu-qos`'s effective `qos_target`
/// (the study's `[params.ugpu-qos]` over the policy's defaults; §6.7: 0.75). `mps-qos` and
/// `bp-qos` have no target of their own and are held to the same one.
pub fn qos_target(r: &StudyResults) -> f64 {
    r.config
        .get("params")
        .and_then(|p| p.get(names::UgpuQos))
        .and_then(|v| serde_json::from_value::<UgpuParams>(v.clone()).ok())
        .unwrap_or_default()
        .qos_target
}

/// High-priority application's normalised progress and the mix's STP under `p`, per
/// heterogeneous mix: the application the policy guarded, as its log records it (a run
/// that names none is left out).
fn qos_points(r: &StudyResults, p: &str) -> Vec<(f64, f64)> {
    in_cat(r, HETEROGENEOUS)
        .iter()
        .filter_map(|w| {
            let run = w.run(p)?;
            let name = guarded(&run.log)?;
            let high = run.apps.iter().find(|a| a.name == name)?;
            Some((high.progress, run.summary.stp))
        })
        .collect()
}

/// Fig. 15: per AI workload (the first application of each `ai-x-compute` mix), the
/// proposed policy's STP and 1/ANTT normalised to the baseline, geometric mean over its
/// partners, then an "average" group over every mix. None without such mixes.
pub fn fig15_ai(r: &StudyResults) -> Option<GroupedBarChart> {
    let ws = in_cat(r, AI_MIXES);
    let (base, prop) = (r.baseline(), r.proposed()?);
    let (base, prop) = (base.as_str(), prop.as_str());
    let mut firsts: Vec<&str> = Vec::new();
    for w in &ws {
        let a = w.apps.first()?.as_str();
        if !firsts.contains(&a) {
            firsts.push(a);
        }
    }
    let bars = |sel: &[&WorkloadResult]| {
        [stp as Measure, inv_antt]
            .iter()
            .map(|&f| gain(sel, prop, base, f).map(|value| Bar { value, err: None }))
            .collect::<Vec<_>>()
    };
    let mut groups: Vec<BarGroup> = firsts
        .iter()
        .map(|a| {
            let sel: Vec<&WorkloadResult> = ws
                .iter()
                .copied()
                .filter(|w| w.apps.first().map(String::as_str) == Some(*a))
                .collect();
            BarGroup {
                label: a.to_string(),
                bars: bars(&sel),
            }
        })
        .collect();
    if groups.iter().all(|g| g.bars.iter().all(Option::is_none)) {
        return None;
    }
    groups.push(BarGroup {
        label: "average".into(),
        bars: bars(&ws),
    });
    Some(GroupedBarChart {
        title: format!("AI workloads + compute-bound: {prop} normalised to {base}"),
        y_label: format!("gmean, norm. to {base} (higher is better)"),
        series: Key::series(&["STP", "1/ANTT"]),
        sections: vec![Section {
            label: String::new(),
            start: 0,
            end: groups.len(),
        }],
        groups,
        reference: Some(1.0),
    })
}

pub(super) fn ugpu_figures(r: &StudyResults, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let het = in_cat(r, HETEROGENEOUS);
    if let Some(h) = split_heatmap(r) {
        put(
            dir,
            "fig4_split_heatmap.svg",
            &heatmap::render_svg(&h)?,
            out,
        )?;
    }
    put_bars(dir, "fig15_ai.svg", fig15_ai(r), out)?;
    let fig10 = [
        names::Bp,
        names::BpBs,
        names::BpSb,
        names::Ugpu,
        names::UgpuOffline,
    ];
    put_chart(
        dir,
        "fig10a_stp.svg",
        s_curve(&het, &fig10, stp, "STP, heterogeneous mixes", "STP"),
        out,
    )?;
    put_chart(
        dir,
        "fig10b_antt.svg",
        s_curve(
            &het,
            &fig10,
            antt,
            "ANTT, heterogeneous mixes (lower is better)",
            "ANTT",
        ),
        out,
    )?;
    let fig11 = [names::Bp, names::UgpuOri, names::UgpuSoft, names::Ugpu];
    put_bars(
        dir,
        "fig11_pagemove.svg",
        norm_bars(
            "Page migration: STP (heterogeneous, norm. to BP)",
            "STP (gmean, norm. to BP)",
            &[("STP".into(), &het, stp)],
            &fig11,
            names::Bp,
        ),
        out,
    )?;
    fig12(r, &het, dir, out)?;
    let fig13 = [names::Bp, names::CdSearch, names::Ugpu];
    put_bars(
        dir,
        "fig13_cd_search.svg",
        norm_bars(
            "Against BP (CD-Search), heterogeneous mixes",
            "gmean, norm. to BP (1/ANTT: higher is better)",
            &stp_and_antt(&[("", &het)]),
            &fig13,
            names::Bp,
        ),
        out,
    )?;
    let multi: Vec<(&str, Vec<&WorkloadResult>)> = ["4-program", "8-program"]
        .into_iter()
        .map(|c| (c, in_cat(r, c)))
        .filter(|(_, ws)| !ws.is_empty())
        .collect();
    if !multi.is_empty() {
        let cats: Vec<(&str, &[&WorkloadResult])> =
            multi.iter().map(|(c, ws)| (*c, ws.as_slice())).collect();
        put_bars(
            dir,
            "fig14_multiprogram.svg",
            norm_bars(
                "4- and 8-program mixes (gmean, norm. to BP)",
                "norm. to BP (1/ANTT: higher is better)",
                &stp_and_antt(&cats),
                &fig13,
                names::Bp,
            ),
            out,
        )?;
    }
    fig16(r, &het, dir, out)?;
    let base = r.baseline();
    let ours: Vec<(String, f64)> = r
        .policies()
        .into_iter()
        .filter_map(|p| Some((p.clone(), gain(&het, &p, &base, stp)?)))
        .collect();
    let measure =
        format!("STP of the heterogeneous mixes against {base} (geometric mean of ratios)");
    let text = summary(r) + &super::ranking::section(&r.config, &measure, &ours);
    put(dir, "summary.md", &text, out)
}

/// Fig. 12a: mean fraction of the run spent reallocating SMs and moving data.
fn fig12(
    r: &StudyResults,
    het: &[&WorkloadResult],
    dir: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<()> {
    let fig12: Vec<&str> = [
        names::UgpuOri,
        names::UgpuSoft,
        names::Ugpu,
        names::CdSearch,
    ]
    .into_iter()
    .filter(|p| ran(het, p))
    .collect();
    if !fig12.is_empty() {
        let groups: Vec<BarGroup> = fig12
            .iter()
            .filter_map(|p| {
                let (s, d) = realloc_fractions(r, p)?;
                Some(BarGroup {
                    label: p.to_string(),
                    bars: vec![
                        Some(Bar {
                            value: s * 100.0,
                            err: None,
                        }),
                        Some(Bar {
                            value: d * 100.0,
                            err: None,
                        }),
                    ],
                })
            })
            .collect();
        if !groups.is_empty() {
            let c = GroupedBarChart {
                title: "Time spent reallocating (heterogeneous mixes)".into(),
                y_label: "% of run time".into(),
                series: vec![
                    Key {
                        name: "SM reallocation".into(),
                        color: 0,
                    },
                    Key {
                        name: "data migration".into(),
                        color: 1,
                    },
                ],
                sections: vec![Section {
                    label: String::new(),
                    start: 0,
                    end: groups.len(),
                }],
                groups,
                reference: None,
            };
            put(dir, "fig12a_realloc_time.svg", &render_grouped(&c)?, out)?;
        }
    }
    Ok(())
}

/// Fig. 16: the guarded application's progress under each QoS set-up, sorted, with the
/// target.
fn fig16(
    r: &StudyResults,
    het: &[&WorkloadResult],
    dir: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<()> {
    let qos: Vec<&str> = [names::MpsQos, names::BpQos, names::UgpuQos]
        .into_iter()
        .filter(|p| ran(het, p))
        .collect();
    if qos.len() > 1 {
        let target = qos_target(r);
        let mut series: Vec<Series> = qos
            .iter()
            .map(|p| {
                let mut v: Vec<f64> = qos_points(r, p).into_iter().map(|x| x.0).collect();
                v.sort_by(f64::total_cmp);
                Series {
                    name: p.to_string(),
                    points: v
                        .into_iter()
                        .enumerate()
                        .map(|(i, x)| ((i + 1) as f64, x))
                        .collect(),
                }
            })
            .collect();
        let n = series.iter().map(|s| s.points.len()).max().unwrap_or(0);
        series.push(Series {
            name: format!("QoS target {target}"),
            points: vec![(1.0, target), (n.max(1) as f64, target)],
        });
        put_chart(
            dir,
            "fig16_qos.svg",
            Some(LineChart {
                title: "High-priority app's progress".into(),
                x_label: "Heterogeneous mixes (sorted)".into(),
                y_label: "Normalised progress".into(),
                series,
                integer_x: true,
            }),
            out,
        )?;
    }
    Ok(())
}

/// The paper's headline numbers (§6), for the summary beside ours.
const PAPER: &[(&str, &str)] = &[
    ("ugpu STP vs bp (heterogeneous)", "+34.3% (up to +56.7%)"),
    ("ugpu ANTT vs bp (heterogeneous)", "46.7% better"),
    ("ugpu STP vs ugpu-offline", "-12.1%"),
    ("ugpu-ori STP vs bp", "-16.8%"),
    ("ugpu-soft STP vs ugpu-ori", "+12.7%"),
    ("cd-search STP vs bp", "+11.2%"),
    ("ugpu STP vs cd-search", "+22.4%"),
    ("ugpu STP vs bp (4-program)", "+38.3%"),
    ("ugpu STP vs bp (8-program)", "+30.3%"),
];

fn pct(x: f64) -> String {
    format!("{:+.1}%", (x - 1.0) * 100.0)
}

/// `summary.md`: every headline gain, ours beside the paper's, with per-category means.
pub fn summary(r: &StudyResults) -> String {
    let mut s = format!("# {}: summary\n\n", r.study);
    let het = in_cat(r, HETEROGENEOUS);
    let max_gain = |ws: &[&WorkloadResult], p: &str, b: &str| {
        ws.iter()
            .filter_map(|w| Some(stp(w, p)? / stp(w, b)?.max(1e-12)))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let mut rows: Vec<(String, Option<String>)> = Vec::new();
    let mut row = |k: &str, v: Option<String>| rows.push((k.to_string(), v));
    row(
        "ugpu STP vs bp (heterogeneous)",
        gain(&het, names::Ugpu, names::Bp, stp).map(|g| {
            format!(
                "{} (up to {})",
                pct(g),
                max_gain(&het, names::Ugpu, names::Bp)
                    .map(pct)
                    .unwrap_or_default()
            )
        }),
    );
    row(
        "ugpu ANTT vs bp (heterogeneous)",
        gain(&het, names::Ugpu, names::Bp, inv_antt).map(|g| {
            if g >= 1.0 {
                format!("{:.1}% better", (g - 1.0) * 100.0)
            } else {
                format!("{:.1}% worse", (1.0 - g) * 100.0)
            }
        }),
    );
    // STP gains: (row, policy, against, category).
    let stp_rows = [
        (
            "ugpu STP vs ugpu-offline",
            names::Ugpu,
            names::UgpuOffline,
            HETEROGENEOUS,
        ),
        (
            "ugpu-ori STP vs bp",
            names::UgpuOri,
            names::Bp,
            HETEROGENEOUS,
        ),
        (
            "ugpu-soft STP vs ugpu-ori",
            names::UgpuSoft,
            names::UgpuOri,
            HETEROGENEOUS,
        ),
        (
            "cd-search STP vs bp",
            names::CdSearch,
            names::Bp,
            HETEROGENEOUS,
        ),
        (
            "ugpu STP vs cd-search",
            names::Ugpu,
            names::CdSearch,
            HETEROGENEOUS,
        ),
        (
            "ugpu STP vs bp (4-program)",
            names::Ugpu,
            names::Bp,
            "4-program",
        ),
        (
            "ugpu STP vs bp (8-program)",
            names::Ugpu,
            names::Bp,
            "8-program",
        ),
    ];
    for (k, p, b, c) in stp_rows {
        row(k, gain(&in_cat(r, c), p, b, stp).map(pct));
    }
    s += "| measure | ours | paper |\n|---|---|---|\n";
    for (k, v) in &rows {
        let Some(v) = v else { continue };
        let paper = PAPER
            .iter()
            .find(|(p, _)| p == k)
            .map(|x| x.1)
            .unwrap_or("");
        let _ = writeln!(s, "| {k} | {v} | {paper} |");
    }
    s += "\nGains are geometric means of per-mix ratios; ANTT gains are of 1/ANTT.\n\n";
    // Per category and policy: mean STP and ANTT.
    let mut cats: Vec<&str> = r.workloads.iter().map(|w| w.category.as_str()).collect();
    cats.dedup();
    s += "| category | policy | mixes | mean STP | mean ANTT |\n|---|---|---|---|---|\n";
    for c in cats {
        let ws = in_cat(r, c);
        for p in r.policies() {
            let v: Vec<(f64, f64)> = ws
                .iter()
                .filter_map(|w| w.run(&p).map(|x| (x.summary.stp, x.summary.antt)))
                .collect();
            if v.is_empty() {
                continue;
            }
            let n = v.len() as f64;
            let _ = writeln!(
                s,
                "| {c} | {p} | {} | {:.3} | {:.3} |",
                v.len(),
                v.iter().map(|x| x.0).sum::<f64>() / n,
                v.iter().map(|x| x.1).sum::<f64>() / n
            );
        }
    }
    let target = qos_target(r);
    for p in [names::MpsQos, names::BpQos, names::UgpuQos] {
        let pts = qos_points(r, p);
        if pts.is_empty() {
            continue;
        }
        let met = pts.iter().filter(|x| x.0 >= target).count();
        let _ = writeln!(
            s,
            "\nQoS ({p}): the high-priority application reaches {target} normalised progress in {met} of {} heterogeneous mixes (mean STP {:.3}).",
            pts.len(),
            pts.iter().map(|x| x.1).sum::<f64>() / pts.len() as f64
        );
    }
    let mut classes = String::new();
    for a in &r.alone {
        if !a.label.is_empty() {
            let _ = writeln!(
                classes,
                "| {} | {} | {} | {:.2} |",
                a.name, a.class, a.label, a.l2_mpki
            );
        }
    }
    if !classes.is_empty() {
        s += "\n| benchmark | suite class | engine class (eq. 1-2, even split) | L2 MPKI |\n|---|---|---|---|\n";
        s += &classes;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::GpuSpec;
    use crate::metrics::{AloneResult, AppResult, PolicyRun, Stalls, Summary, SCHEMA_VERSION};

    fn app(name: &str, progress: f64) -> AppResult {
        AppResult {
            name: name.into(),
            warp_insts: 1000,
            cycles: 1000,
            alone_warp_insts: 1000,
            alone_cycles: 1000,
            progress,
            slowdown: 1.0 / progress,
            ipc: 1.0,
            l1_miss_rate: 0.0,
            l2_miss_rate: 0.0,
            stalls: Stalls::default(),
        }
    }

    fn alone(name: &str, class: &str) -> AloneResult {
        AloneResult {
            name: name.into(),
            class: class.into(),
            warp_insts: 1000,
            cycles: 1000,
            ipc: 1.0,
            ..AloneResult::default()
        }
    }

    /// One heterogeneous mix of two compute-bound-labelled applications where `ugpu-qos`
    /// guarded the second (its log says so), with `qos_target = 0.8` in the study's params.
    fn results() -> StudyResults {
        let run = PolicyRun {
            policy: names::UgpuQos.into(),
            partition: String::new(),
            ctas: None,
            summary: Summary {
                stp: 1.5,
                antt: 1.2,
                fairness: 0.8,
                combined_ipc: 2.0,
                cycles: 1000,
            },
            apps: vec![app("CP", 0.9), app("DXTC", 0.78)],
            stalls: Stalls::default(),
            l1_miss_rate: 0.0,
            l2_miss_rate: 0.0,
            runs: 1,
            log: vec!["high priority: DXTC (given)".into()],
            measures: Default::default(),
        };
        StudyResults {
            schema_version: SCHEMA_VERSION,
            study: "t".into(),
            config: serde_json::json!({ "params": { "ugpu-qos": { "qos_target": 0.8 } } }),
            alone: vec![alone("CP", "compute-bound"), alone("DXTC", "compute-bound")],
            curves: Vec::new(),
            workloads: vec![WorkloadResult {
                name: "CP+DXTC".into(),
                apps: vec!["CP".into(), "DXTC".into()],
                category: HETEROGENEOUS.into(),
                runs: vec![run],
            }],
            model: GpuSpec::builtin("ugpu-80sm-hbm").unwrap(),
            baseline: String::new(),
            proposed: None,
            solo: Vec::new(),
            figures: names::Ugpu.into(),
            slices: Vec::new(),
            ff_check: None,
        }
    }

    /// The QoS count uses the study's `qos_target` and the application the policy guarded
    /// (DXTC at 0.78 < 0.8: not met), not 0.75 and the first compute-bound one (CP at 0.9).
    #[test]
    fn qos_counts_use_the_saved_target_and_guarded_app() {
        let s = summary(&results());
        assert!(
            s.contains("reaches 0.8 normalised progress in 0 of 1"),
            "{s}"
        );
    }

    /// A Fig. 15 mix `a+b` with BP and UGPU runs of the given (STP, ANTT).
    fn ai_mix(a: &str, b: &str, bp: (f64, f64), ugpu: (f64, f64)) -> WorkloadResult {
        let run = |policy: &str, (stp, antt): (f64, f64)| PolicyRun {
            policy: policy.into(),
            partition: String::new(),
            ctas: None,
            summary: Summary {
                stp,
                antt,
                fairness: 0.5,
                combined_ipc: 1.0,
                cycles: 1000,
            },
            apps: vec![app(a, 0.5), app(b, 0.5)],
            stalls: Stalls::default(),
            l1_miss_rate: 0.0,
            l2_miss_rate: 0.0,
            runs: 1,
            log: Vec::new(),
            measures: Default::default(),
        };
        WorkloadResult {
            name: format!("{a}+{b}"),
            apps: vec![a.into(), b.into()],
            category: AI_MIXES.into(),
            runs: vec![run(names::Bp, bp), run(names::Ugpu, ugpu)],
        }
    }

    /// Fig. 15 groups by the AI workload in first-appearance order, takes the geometric
    /// mean over its partners of UGPU/BP STP and BP/UGPU ANTT, and ends with "average".
    #[test]
    fn fig15_groups_per_ai_workload_normalised_to_bp() {
        let mut r = results();
        r.baseline = names::Bp.into();
        r.proposed = Some(names::Ugpu.into());
        r.workloads = vec![
            ai_mix("LSTM", "CP", (1.0, 2.0), (2.0, 1.0)),
            ai_mix("LSTM", "DXTC", (1.0, 2.0), (0.5, 4.0)),
            ai_mix("GRU", "CP", (1.0, 1.0), (1.5, 0.5)),
        ];
        let c = fig15_ai(&r).unwrap();
        let labels: Vec<&str> = c.groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(labels, ["LSTM", "GRU", "average"]);
        let v = |g: usize, i: usize| c.groups[g].bars[i].as_ref().unwrap().value;
        assert!((v(0, 0) - 1.0).abs() < 1e-9, "LSTM STP gmean(2, 0.5) = 1");
        assert!(
            (v(0, 1) - 1.0).abs() < 1e-9,
            "LSTM 1/ANTT gmean(2, 0.5) = 1"
        );
        assert!((v(1, 0) - 1.5).abs() < 1e-9);
        assert!((v(1, 1) - 2.0).abs() < 1e-9);
        assert!((v(2, 0) - 1.5f64.powf(1.0 / 3.0)).abs() < 1e-9);
        assert!((v(2, 1) - 2.0f64.powf(1.0 / 3.0)).abs() < 1e-9);
        r.workloads.clear();
        assert!(fig15_ai(&r).is_none(), "no AI mixes, no figure");
    }
}
