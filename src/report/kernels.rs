//! SiM's per-kernel characterisation (seed 002 §2.2 and §4.2), redrawn from the alone
//! references of saved [`StudyResults`]: `fig2_spatial.svg` (the share of an SM's registers,
//! shared memory, threads and CTA slots a kernel's resident CTAs hold), `fig7_utilisation.svg`
//! (busy fraction of each unit kind, the L2, DRAM and the issue slots, on the profiler's
//! 0–10 scale) and `table_kernels.md` with the same numbers. Results saved before these
//! fields existed (2026-11-26) draw nothing here. Fig. 3 (ISU beside Table 3) is drawn by
//! `multitenancy` from the ISU every result carries.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::bars::{render_grouped, Bar, BarGroup, GroupedBarChart, Key};
use super::common::put;
use crate::metrics::{AloneResult, StudyResults};

/// Fig. 7's axes: a label and the value (a fraction) of one alone reference.
type Axis = (&'static str, fn(&AloneResult) -> f64);

fn unit(a: &AloneResult, name: &str) -> f64 {
    a.units.get(name).copied().unwrap_or(0.0)
}

/// The resource types of Fig. 7 that the engine measures.
pub const UTILISATION: [Axis; 8] = [
    ("FP32", |a| unit(a, "fp32")),
    ("integer", |a| unit(a, "int")),
    ("FP64", |a| unit(a, "fp64")),
    ("special (SFU)", |a| unit(a, "sfu")),
    ("load/store", |a| unit(a, "mem")),
    ("L2", |a| a.l2_util),
    ("DRAM", |a| a.dram_util),
    ("issue slots", |a| a.isu),
];

/// One of Fig. 2's resources: a label and the share held.
type Resource = (&'static str, fn(&crate::metrics::Spatial) -> f64);

/// Fig. 2's resources.
pub const SPATIAL: [Resource; 4] = [
    ("registers", |s| s.registers),
    ("shared memory", |s| s.shared_memory),
    ("threads", |s| s.threads),
    ("CTA slots", |s| s.cta_slots),
];

/// The profiler's utilisation level: a busy fraction on a 0–10 scale, rounded.
pub fn level(fraction: f64) -> u32 {
    (fraction.clamp(0.0, 1.0) * 10.0).round() as u32
}

fn chart(title: &str, y: &str, keys: &[&str], groups: Vec<BarGroup>) -> GroupedBarChart {
    GroupedBarChart {
        title: title.into(),
        y_label: y.into(),
        series: Key::series(keys),
        groups,
        sections: Vec::new(),
        reference: None,
    }
}

fn bar(value: f64) -> Option<Bar> {
    Some(Bar { value, err: None })
}

/// The markdown table of Figs. 2 and 7 (percent; utilisation also as its 0–10 level).
pub fn table(alone: &[AloneResult]) -> String {
    let mut s = String::from(
        "# Kernels alone: SiM Figs. 2 and 7\n\n\
         Spatial utilisation (Fig. 2): share of one SM's resources the resident CTAs hold \
         at full occupancy, percent.\n\n\
         | kernel | registers | shared memory | threads | CTA slots |\n|---|---|---|---|---|\n",
    );
    for a in alone {
        let Some(sp) = &a.spatial else { continue };
        let cells: Vec<String> = SPATIAL
            .iter()
            .map(|(_, f)| format!("{:.0}", 100.0 * f(sp)))
            .collect();
        let _ = writeln!(s, "| {} | {} |", a.name, cells.join(" | "));
    }
    s.push_str(
        "\nUtilisation alone (Fig. 7): busy fraction in percent, with the profiler's 0–10 \
         level in brackets.\n\n| kernel |",
    );
    for (n, _) in UTILISATION {
        let _ = write!(s, " {n} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(UTILISATION.len()));
    s.push('\n');
    for a in alone.iter().filter(|a| !a.units.is_empty()) {
        let _ = write!(s, "| {} |", a.name);
        for (_, f) in UTILISATION {
            let _ = write!(s, " {:.1} ({}) |", 100.0 * f(a), level(f(a)));
        }
        s.push('\n');
    }
    s
}

/// Draws Figs. 2 and 7 and their table when the alone references carry the fields.
pub fn sim_kernel_figures(r: &StudyResults, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let measured: Vec<&AloneResult> = r.alone.iter().filter(|a| a.spatial.is_some()).collect();
    if measured.is_empty() {
        return Ok(());
    }
    let groups = measured
        .iter()
        .map(|a| BarGroup {
            label: a.name.clone(),
            bars: SPATIAL
                .iter()
                .map(|(_, f)| bar(100.0 * a.spatial.as_ref().map_or(0.0, f)))
                .collect(),
        })
        .collect();
    let keys: Vec<&str> = SPATIAL.iter().map(|(n, _)| *n).collect();
    let c = chart(
        "Spatial utilisation of one SM, each kernel alone (SiM Fig. 2)",
        "Share held at full occupancy (%)",
        &keys,
        groups,
    );
    put(dir, "fig2_spatial.svg", &render_grouped(&c)?, out)?;

    let groups = measured
        .iter()
        .filter(|a| !a.units.is_empty())
        .map(|a| BarGroup {
            label: a.name.clone(),
            bars: UTILISATION
                .iter()
                .map(|(_, f)| bar(level(f(a)) as f64))
                .collect(),
        })
        .collect();
    let keys: Vec<&str> = UTILISATION.iter().map(|(n, _)| *n).collect();
    let c = chart(
        "Utilisation of each resource alone (SiM Fig. 7)",
        "Utilisation level (0-10)",
        &keys,
        groups,
    );
    put(dir, "fig7_utilisation.svg", &render_grouped(&c)?, out)?;
    let all: Vec<AloneResult> = measured.into_iter().cloned().collect();
    put(dir, "table_kernels.md", &table(&all), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Spatial;

    fn alone(name: &str, fp32: f64, spatial: Option<Spatial>) -> AloneResult {
        AloneResult {
            name: name.into(),
            isu: 0.46,
            fp32_util: fp32,
            units: [("fp32".to_string(), fp32), ("mem".to_string(), 0.04)]
                .into_iter()
                .collect(),
            dram_util: 0.95,
            spatial,
            ..AloneResult::default()
        }
    }

    #[test]
    fn levels_round_to_the_profilers_scale() {
        assert_eq!(level(0.0), 0);
        assert_eq!(level(0.04), 0);
        assert_eq!(level(0.05), 1);
        assert_eq!(level(0.46), 5);
        assert_eq!(level(0.95), 10);
        assert_eq!(level(1.7), 10);
        assert_eq!(level(-0.2), 0);
    }

    #[test]
    fn table_rows_hold_the_saved_fractions() {
        let sp = Spatial {
            registers: 0.75,
            shared_memory: 0.906,
            threads: 0.375,
            cta_slots: 0.375,
        };
        let mut old = alone("OLD", 0.1, None);
        old.units.clear();
        let t = table(&[alone("LM", 0.504, Some(sp)), old]);
        assert!(t.contains("| LM | 75 | 91 | 38 | 38 |"), "{t}");
        // FP32, integer, FP64, SFU, load/store, L2, DRAM, issue slots.
        assert!(
            t.contains("| LM | 50.4 (5) | 0.0 (0) | 0.0 (0) | 0.0 (0) | 4.0 (0) | 0.0 (0) | 95.0 (10) | 46.0 (5) |"),
            "{t}"
        );
        // No row for a result saved without the fields.
        assert!(!t.contains("| OLD | "), "{t}");
    }
}
