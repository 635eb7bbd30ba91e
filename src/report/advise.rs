//! `advise` outputs besides metrics.json: a tidy CSV (one row per configuration, with each
//! application's progress and slowdown) and one figure, the objective of every simulated
//! configuration grouped by mechanism (sections), best first within each. Drawn from
//! [`AdviceResults`] alone; equal results give byte-identical files.

use anyhow::Result;

use super::bars::{render_grouped, Bar, BarGroup, GroupedBarChart, Key, Section};
use super::csv::cell;
use crate::advise::{AdviceResults, ConfigResult};

/// The CSV text: rank, mechanism, config, objective, STP, ANTT, fairness, target met,
/// then `progress_APP` and `slowdown_APP` per application.
pub fn to_csv(r: &AdviceResults) -> Result<String> {
    let names: Vec<&str> = r.alone.iter().map(|a| a.name.as_str()).collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head: Vec<String> = [
        "rank",
        "mechanism",
        "config",
        "objective",
        "stp",
        "antt",
        "fairness",
        "meets_target",
    ]
    .map(String::from)
    .to_vec();
    head.extend(names.iter().map(|n| format!("progress_{n}")));
    head.extend(names.iter().map(|n| format!("slowdown_{n}")));
    w.write_record(head.into_iter().map(cell))?;
    for c in &r.configs {
        let s = &c.run.summary;
        let mut row = vec![
            c.rank.to_string(),
            c.mechanism.clone(),
            c.label.clone(),
            c.objective.to_string(),
            s.stp.to_string(),
            s.antt.to_string(),
            s.fairness.to_string(),
            c.meets_target.map(|m| m.to_string()).unwrap_or_default(),
        ];
        row.extend(c.run.apps.iter().map(|a| a.progress.to_string()));
        row.extend(c.run.apps.iter().map(|a| a.slowdown.to_string()));
        w.write_record(row.into_iter().map(cell))?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}

/// What the figure plots for a configuration: under a QoS objective the application's
/// progress (the target is the reference line), else the ranked objective.
fn plotted(r: &AdviceResults, c: &ConfigResult) -> f64 {
    match qos(r) {
        Some((i, _)) => c.run.apps.get(i).map_or(f64::NAN, |a| a.progress),
        None => c.objective,
    }
}

/// The QoS application's index and target, if the objective is one.
fn qos(r: &AdviceResults) -> Option<(usize, f64)> {
    let o = r.config.get("objective")?.as_str()?;
    let (app, t) = o.strip_prefix("qos:")?.split_once('=')?;
    let i = r.alone.iter().position(|a| a.name == app)?;
    Some((i, t.parse().ok()?))
}

/// The figure: one bar per configuration, sections per mechanism (in the order of each
/// mechanism's best configuration), best first within a section.
pub fn chart(r: &AdviceResults) -> GroupedBarChart {
    let mut mechs: Vec<&str> = Vec::new();
    for c in &r.configs {
        if !mechs.contains(&c.mechanism.as_str()) {
            mechs.push(&c.mechanism);
        }
    }
    let objective = r
        .config
        .get("objective")
        .and_then(|o| o.as_str())
        .unwrap_or("stp");
    let y_label = match qos(r) {
        Some((i, _)) => format!("{} normalised progress", r.alone[i].name),
        None if objective == "antt" => "ANTT (lower is better)".into(),
        None => objective.to_uppercase(),
    };
    let mut groups = Vec::new();
    let mut sections = Vec::new();
    for m in &mechs {
        let start = groups.len();
        for c in r.configs.iter().filter(|c| c.mechanism == *m) {
            groups.push(BarGroup {
                label: if c.label.is_empty() {
                    c.mechanism.clone()
                } else {
                    c.label.clone()
                },
                bars: vec![Some(Bar {
                    value: plotted(r, c),
                    err: None,
                })],
            });
        }
        sections.push(Section {
            label: m.to_string(),
            start,
            end: groups.len(),
        });
    }
    GroupedBarChart {
        title: format!(
            "advise: {} on {} — {objective} per configuration",
            r.alone
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join("+"),
            r.model.name
        ),
        y_label,
        series: vec![Key {
            name: objective.to_string(),
            color: 0,
        }],
        groups,
        sections,
        reference: qos(r).map(|q| q.1),
    }
}

/// The SVG text of [`chart`].
pub fn svg(r: &AdviceResults) -> Result<String> {
    Ok(render_grouped(&chart(r))?)
}
