//! Tidy CSV of a study's results for pandas / R: one row per workload × policy ×
//! application, with the workload's multiprogram metrics repeated on each of its rows.
//! Drawn from [`StudyResults`] alone; equal results give byte-identical CSV. A text cell
//! a spreadsheet would take for a formula (OWASP CSV injection: it starts with `=`, `+`,
//! `-`, `@`, a tab or a carriage return, and is not a number) is written with a `'` in
//! front.

use anyhow::Result;

use crate::metrics::StudyResults;

/// The columns, in order.
pub const COLUMNS: &[&str] = &[
    "study",
    "workload",
    "category",
    "policy",
    "partition",
    "app",
    "warp_insts",
    "cycles",
    "alone_warp_insts",
    "alone_cycles",
    "progress",
    "slowdown",
    "ipc",
    "l1_miss_rate",
    "l2_miss_rate",
    "stp",
    "antt",
    "fairness",
    "combined_ipc",
];

/// `v` as a cell no spreadsheet evaluates: a leading `'` before a would-be formula;
/// numbers (`-0.5`, `+1e3`, `-inf`) stay as they are.
pub fn cell(v: String) -> String {
    let risky = v
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '=' | '+' | '-' | '@' | '\t' | '\r'));
    if risky && v.parse::<f64>().is_err() {
        format!("'{v}")
    } else {
        v
    }
}

/// The CSV text of `r` (a header line, then the rows; RFC 4180 quoting).
pub fn to_csv(r: &StudyResults) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    for wl in &r.workloads {
        for run in &wl.runs {
            for a in &run.apps {
                let s = &run.summary;
                w.write_record(
                    [
                        r.study.clone(),
                        wl.name.clone(),
                        wl.category.clone(),
                        run.policy.clone(),
                        run.partition.clone(),
                        a.name.clone(),
                        a.warp_insts.to_string(),
                        a.cycles.to_string(),
                        a.alone_warp_insts.to_string(),
                        a.alone_cycles.to_string(),
                        a.progress.to_string(),
                        a.slowdown.to_string(),
                        a.ipc.to_string(),
                        a.l1_miss_rate.to_string(),
                        a.l2_miss_rate.to_string(),
                        s.stp.to_string(),
                        s.antt.to_string(),
                        s.fairness.to_string(),
                        s.combined_ipc.to_string(),
                    ]
                    .map(cell),
                )?;
            }
        }
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn formulas_are_defused_and_numbers_kept() {
        for f in [
            "=1+2",
            "+A1",
            "-A1",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "=HYPERLINK(\"x\")",
        ] {
            assert_eq!(cell(f.into()), format!("'{f}"));
        }
        for n in ["-0.5", "+1e3", "-inf", "NaN", "12", "", "blk+hot", "a=b"] {
            assert_eq!(cell(n.into()), n);
        }
    }
}
