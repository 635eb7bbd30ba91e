//! The summary section that sets a study's policy ranking beside its paper's: the study
//! file's `paper_ranking` (best first) against the order of the study's headline measure,
//! with Kendall's τ ([`crate::metrics::kendall_tau`]). Nothing when the study names no
//! paper ranking.

use std::fmt::Write;

use crate::metrics::kendall_tau;

/// The paper's ranking a result's study file gave (`paper_ranking`), best first.
pub fn paper_ranking(config: &serde_json::Value) -> Vec<String> {
    config
        .get("paper_ranking")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Markdown section: both orders and τ over the common policies; `measure` says what
/// orders ours (higher is better). Empty when the study has no paper ranking.
pub fn section(config: &serde_json::Value, measure: &str, ours: &[(String, f64)]) -> String {
    let paper = paper_ranking(config);
    if paper.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n## Policy ranking against the paper\n\n");
    let _ = writeln!(s, "Ours ordered by {measure}, best first.\n");
    match kendall_tau(&paper, ours) {
        None => {
            let _ = writeln!(
                s,
                "Fewer than two of the paper's policies ({}) have a value here: no τ.",
                paper.join(", ")
            );
        }
        Some(r) => {
            s += "| | ranking |\n|---|---|\n";
            let _ = writeln!(s, "| paper | {} |", r.paper.join(" > "));
            let _ = writeln!(s, "| ours | {} |", r.ours.join(" > "));
            let _ = writeln!(s, "| Kendall τ | {:.2} (n = {}) |", r.tau, r.n);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_sets_both_orders_and_tau() {
        let config = serde_json::json!({ "paper_ranking": ["ws", "even", "left-over"] });
        let ours = vec![
            ("left-over".to_string(), 1.0),
            ("even".to_string(), 1.2),
            ("ws".to_string(), 1.1),
            ("fcfs".to_string(), 1.3),
        ];
        let s = section(&config, "combined IPC", &ours);
        assert!(s.contains("| paper | ws > even > left-over |"), "{s}");
        assert!(s.contains("| ours | even > ws > left-over |"), "{s}");
        // (ws, even) discordant, (ws, lo) and (even, lo) concordant: 1/3.
        assert!(s.contains("| Kendall τ | 0.33 (n = 3) |"), "{s}");
        assert!(section(&serde_json::json!({}), "x", &ours).is_empty());
    }
}
