//! Warped-Slicer's §IV-A check, from saved results alone: for every two-application
//! workload, the partition Warped-Slicer chose from its short samples beside the one the
//! same rule (`policy::warped_slicer::choose`, with the study's parameters) picks from the
//! full-run occupancy curves (each benchmark alone on the whole GPU at every CTA count,
//! Fig. 3a). The paper reports the two within one CTA per kernel for over 90% of its pairs.
//! Needs the curves' per-CTA resource needs (`BenchCurve::need`); results without them get
//! no table.

use std::fmt::Write as _;

use crate::metrics::{StudyResults, WorkloadResult};
use crate::policy::label as ctas_label;
use crate::policy::names::WarpedSlicer as WARPED_SLICER;
use crate::policy::warped_slicer::{choose, perf_row, Choice, WsParams};

/// What the full-run curves give a pair: CTAs per SM, or Spatial.
#[derive(Clone, Debug, PartialEq)]
pub enum FullRun {
    Intra(Vec<u32>),
    Spatial,
}

/// One pair's row: the sampled partition (CTAs per SM, `None`: Spatial or shared), the
/// full-run one, and whether they agree within one CTA per kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub workload: String,
    pub sampled: Option<Vec<u32>>,
    pub full: FullRun,
    pub within_one: bool,
}

/// The study's Warped-Slicer parameters (the paper's defaults for any not given).
fn params(r: &StudyResults) -> WsParams {
    r.config
        .get("params")
        .and_then(|p| p.get(WARPED_SLICER))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The partition the full-run curves give workload `w`, if every application has a curve
/// with its needs.
fn full_run(r: &StudyResults, w: &WorkloadResult, p: &WsParams) -> Option<FullRun> {
    let mut perf = Vec::new();
    let mut need = Vec::new();
    for a in &w.apps {
        let c = r.curves.iter().find(|c| &c.name == a)?;
        need.push(c.need?);
        perf.push(perf_row(&c.points, c.max_ctas));
    }
    let cap = crate::policy::sm_cap(&r.model);
    Some(match choose(&perf, &need, cap, p) {
        Choice::Intra(part) => FullRun::Intra(part.ctas),
        Choice::Spatial(_) => FullRun::Spatial,
    })
}

/// Rows for every two-application workload Warped-Slicer ran in; empty without needs.
pub fn rows(r: &StudyResults) -> Vec<Row> {
    let p = params(r);
    r.workloads
        .iter()
        .filter(|w| w.apps.len() == 2)
        .filter_map(|w| {
            let run = w.run(WARPED_SLICER)?;
            let full = full_run(r, w, &p)?;
            let sampled = run.ctas.clone().filter(|c| c.len() == 2);
            let within_one = match (&sampled, &full) {
                (Some(s), FullRun::Intra(f)) => s.iter().zip(f).all(|(a, b)| a.abs_diff(*b) <= 1),
                (None, FullRun::Spatial) => true,
                _ => false,
            };
            Some(Row {
                workload: w.name.clone(),
                sampled,
                full,
                within_one,
            })
        })
        .collect()
}

fn label(c: &Option<Vec<u32>>) -> String {
    c.as_deref().map_or_else(|| "spatial".into(), ctas_label)
}

/// `table_iva_sampling.md`, or `None` when the results cannot give it.
pub fn table(r: &StudyResults) -> Option<String> {
    let rows = rows(r);
    if rows.is_empty() {
        return None;
    }
    let ok = rows.iter().filter(|x| x.within_one).count();
    let mut s = String::from("# Sampled against full-run partitions (§IV-A)\n\n");
    s += "CTAs per SM per application as `(T1,T2)`. *Sampled*: what Warped-Slicer chose from \
          its samples in the run. *Full run*: what the same water filling and fall-back rule, \
          with the study's parameters, choose from the full-run occupancy curves \
          (`fig3a_occupancy.svg`: each benchmark alone on the whole GPU). The paper: within \
          one CTA for more than 90% of the pairs.\n\n";
    let _ = writeln!(
        s,
        "**{ok} of {} pairs within one CTA per application ({:.0}%).**\n",
        rows.len(),
        100.0 * ok as f64 / rows.len() as f64
    );
    s += "| Workload | Sampled | Full run | Within one CTA |\n|---|---|---|---|\n";
    for x in &rows {
        let full = match &x.full {
            FullRun::Intra(v) => ctas_label(v),
            FullRun::Spatial => "spatial".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {full} | {} |",
            x.workload,
            label(&x.sampled),
            if x.within_one { "yes" } else { "no" }
        );
    }
    Some(s)
}
