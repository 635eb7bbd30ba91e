//! Accuracy against Accel-Sim on the calibration set in ../shared/reference (QV100 model).
//!
//! Bars (DESIGN.md §7, issue 3): per-kernel cycle MAE ≤ 15% (reached: 10.9%) and pair
//! slowdown MAE ≤ 10% (reached: 7.9%). The engine is deterministic, so the figures are
//! exact; see models/CALIBRATION.md for the per-case errors. DRAM traffic is held too: it
//! checks the memory hierarchy's behaviour (what misses, what is written back) apart from
//! its timing.

use std::path::PathBuf;

use gpumodel::arch::GpuSpec;

fn reference() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference");
    p.join("results_kernels.csv").is_file().then_some(p)
}

/// Data rows of a reference CSV (the set grows: count it, never hard-code it).
fn csv_rows(dir: &std::path::Path, file: &str) -> usize {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}

#[test]
fn qv100_matches_accel_sim_on_the_calibration_set() {
    let Some(dir) = reference() else {
        panic!("../shared/reference is missing: the accuracy test needs it beside the checkout");
    };
    let spec = GpuSpec::builtin("qv100").unwrap();
    let r = gpumodel::validate::validate(&dir, &spec).unwrap();
    eprintln!("{}", r.render());
    assert_eq!(r.kernels.len(), csv_rows(&dir, "results_kernels.csv"));
    assert_eq!(r.pairs.len(), csv_rows(&dir, "results_pairs.csv"));
    assert!(
        r.kernel_cycle_mae_pct <= 15.0,
        "kernel cycle MAE {:.1}% over the 15% bar",
        r.kernel_cycle_mae_pct
    );
    // No single kernel may be off by more than a factor 1.5.
    for k in &r.kernels {
        assert!(k.error_pct < 50.0, "{}: {:.1}%", k.kernel, k.error_pct);
    }
    assert!(
        r.pair_slowdown_mae_pct <= 10.0,
        "pair slowdown MAE {:.1}%",
        r.pair_slowdown_mae_pct
    );
    // DRAM traffic per kernel (reads + write-backs, 32 B accesses) within 5% of Accel-Sim's:
    // reached within 0.3% on the first 11. (stream_copy's write-backs depend on the L2 holding
    // a miss that finds no MSHR rather than fetching around it: 15% short otherwise.)
    for k in &r.kernels {
        let Some((rr, rw)) = k.ref_dram else {
            panic!("{}: the reference CSV has no DRAM columns", k.kernel);
        };
        let (ours, reference) = ((k.dram.0 + k.dram.1) as f64, (rr + rw) as f64);
        assert!(
            (ours - reference).abs() <= 0.05 * reference,
            "{}: {ours} DRAM accesses, Accel-Sim {reference}",
            k.kernel
        );
    }
    // The ranking the reference shows: which kernel of each pair finishes first.
    let same_order = r
        .pairs
        .iter()
        .filter(|p| (p.end_a <= p.end_b) == (p.ref_end_a <= p.ref_end_b))
        .count();
    assert!(
        same_order * 5 >= r.pairs.len() * 4,
        "first finisher matches in {same_order}/{} pairs (bar: 80%)",
        r.pairs.len()
    );
}
