//! The profile's text report: the three curves (x, cycles, IPC, relative IPC, hit rates,
//! DRAM utilisation), the alone run's rates and the labels with the reasons behind them.

use std::fmt::Write;

use crate::profile::Profile;

/// Renders the report as text (what `gpumodel profile` prints on stdout).
pub fn render(p: &Profile) -> String {
    let mut s = String::new();
    let m = &p.metrics;
    let r = &p.alone.rates;
    let ghz = p.model.clocks.core.hz() as f64 / 1e9;
    let _ = writeln!(
        s,
        "{} on {}: kernel {} fits {} CTAs/SM (limited by {})",
        p.app, p.model.name, p.kernel, p.max_ctas_per_sm, p.limiter
    );
    for c in &p.curves {
        let _ = writeln!(s, "\nperformance vs {}", c.axis.label());
        let _ = writeln!(
            s,
            "{:>8} {:>12} {:>8} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
            "x", "cycles", "IPC", "rel", "ISU", "L1 hit", "L2 hit", "L2 MPKI", "DRAM"
        );
        for q in &c.points {
            let _ = writeln!(
                s,
                "{:>8} {:>12} {:>8.2} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8.1} {:>6.3}",
                q.x,
                q.cycles,
                q.ipc,
                q.norm,
                q.isu,
                q.l1_hit_rate,
                q.l2_hit_rate,
                q.l2_mpki,
                q.dram_util
            );
        }
    }
    let _ = writeln!(
        s,
        "\nalone on the whole GPU: {} cycles, {} warp instructions",
        p.alone.cycles, p.alone.warp_insts
    );
    let _ = writeln!(
        s,
        "  IPC {:.2} of {:.0} max, ISU {:.3}, L1 hit {:.3}, L2 hit {:.3}, L2 MPKI {:.1}, DRAM {:.1} GB/s ({:.1}% of peak)",
        r.ipc, m.ipc_max, r.isu, r.l1_hit_rate, r.l2_hit_rate, r.l2_mpki,
        r.dram_bytes_per_cycle * ghz, 100.0 * r.dram_util
    );
    let units: Vec<String> = r
        .unit_util
        .iter()
        .filter(|(_, v)| *v > 0.0)
        .map(|(n, v)| format!("{n} {:.3}", v))
        .collect();
    let _ = writeln!(
        s,
        "  unit utilisation: {}",
        if units.is_empty() {
            "-".to_string()
        } else {
            units.join(", ")
        }
    );
    let l = &p.labels;
    let _ = writeln!(s, "\nlabels");
    let _ = writeln!(
        s,
        "  Warped-Slicer  {} / {}   ({})",
        l.warped_slicer.kind.name(),
        l.warped_slicer.curve.name(),
        l.warped_slicer.why
    );
    let _ = writeln!(
        s,
        "  Punyala        {}{}   ({})",
        l.punyala.class.name(),
        if l.punyala.exact { "" } else { " (fallback)" },
        l.punyala.why
    );
    let _ = writeln!(s, "  Slate          {}   ({})", l.slate.class, l.slate.why);
    let _ = writeln!(
        s,
        "  UGPU           {}-bound   ({})",
        l.ugpu.bound.name(),
        l.ugpu.why
    );
    s
}
