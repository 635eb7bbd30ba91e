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

/// `validate --gpu rtx3070` runs on a folder laid out like ../shared/reference whose traces
/// are Ampere's (`-binary version = 86`): two kernels and one pair of the reference set,
/// re-labelled as version 86 (their opcodes exist in both tables), with the reference rows
/// copied (the figures are QV100's; only that the run completes and is consistent is
/// checked here — the RTX 3070's own accuracy is measured on Accel-Sim's results for it).
#[test]
fn rtx3070_validates_a_version_86_folder() {
    use std::io::{Read, Write};
    let Some(src) = reference() else {
        panic!("../shared/reference is missing");
    };
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path();
    let copy_traces = |rel: &str| {
        let (from, to) = (src.join(rel), dst.join(rel));
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if let Some(stem) = name.strip_suffix(".gz") {
                let mut text = String::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap())
                    .read_to_string(&mut text)
                    .unwrap();
                assert!(text.contains("-binary version = 70"), "{name}");
                let text = text.replace("-binary version = 70", "-binary version = 86");
                let mut f = std::fs::File::create(to.join(stem)).unwrap();
                f.write_all(text.as_bytes()).unwrap();
            } else {
                let text = std::fs::read_to_string(&p).unwrap().replace(".gz", "");
                std::fs::write(to.join(&name), text).unwrap();
            }
        }
    };
    let keep = |file: &str, names: &[&str]| {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let mut lines = text.lines();
        let mut out = format!("{}\n", lines.next().unwrap());
        for l in lines.filter(|l| names.iter().any(|n| l.starts_with(&format!("{n},")))) {
            out.push_str(l);
            out.push('\n');
        }
        std::fs::write(dst.join(file), out).unwrap();
    };
    for k in ["stream_copy", "fma_ilp4"] {
        copy_traces(&format!("traces/kernels/{k}"));
    }
    copy_traces("traces/pairs/stream_copy+fma_ilp4");
    keep("results_kernels.csv", &["stream_copy", "fma_ilp4"]);
    keep("results_pairs.csv", &["stream_copy+fma_ilp4"]);
    let spec = GpuSpec::builtin("rtx3070").unwrap();
    let r = gpumodel::validate::validate(dst, &spec).unwrap();
    eprintln!("{}", r.render());
    assert_eq!((r.kernels.len(), r.pairs.len()), (2, 1));
    let qv = gpumodel::validate::validate(dst, &GpuSpec::builtin("qv100").unwrap()).unwrap();
    for (a, b) in r.kernels.iter().zip(&qv.kernels) {
        assert!(a.cycles > 0);
        // Half the DRAM bandwidth and 46 SMs instead of 80: never faster than the QV100.
        assert!(
            a.cycles > b.cycles,
            "{}: {} vs {}",
            a.kernel,
            a.cycles,
            b.cycles
        );
    }
}

/// A folder laid out like the reference with only the named kernels and pairs (traces
/// copied as they are, CSV rows kept in file order); `scale` multiplies one kernel's
/// reference cycles.
fn subset(
    src: &std::path::Path,
    dst: &std::path::Path,
    kernels: &[&str],
    pairs: &[&str],
    scale: Option<(&str, u64)>,
) {
    let copy_dir = |rel: &str| {
        let (from, to) = (src.join(rel), dst.join(rel));
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    };
    let keep = |file: &str, names: &[&str]| {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        let cycles_col = header.split(',').position(|h| h == "gpu_sim_cycle");
        let mut out = format!("{header}\n");
        for l in lines {
            let mut cells: Vec<String> = l.split(',').map(String::from).collect();
            if !names.contains(&cells[0].as_str()) {
                continue;
            }
            if let (Some((name, f)), Some(c)) = (scale, cycles_col) {
                if cells[0] == name {
                    cells[c] = (cells[c].parse::<u64>().unwrap() * f).to_string();
                }
            }
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        std::fs::write(dst.join(file), out).unwrap();
    };
    for k in kernels {
        copy_dir(&format!("traces/kernels/{k}"));
    }
    for p in pairs {
        copy_dir(&format!("traces/pairs/{p}"));
    }
    keep("results_kernels.csv", kernels);
    keep("results_pairs.csv", pairs);
}

/// Leave-one-out (`validate`'s default): a kernel's refitted values never depend on
/// its own reference number, and its prediction is exactly a run with those values.
#[test]
fn leave_one_out_never_sees_the_predicted_kernel() {
    let Some(src) = reference() else {
        panic!("../shared/reference is missing");
    };
    let kernels = ["fma_chain", "fma_ilp4", "sfu_heavy", "atomics"];
    let pairs = ["fma_chain+int_imad"];
    let spec = GpuSpec::builtin("qv100").unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    subset(&src, a.path(), &kernels, &pairs, None);
    // The same folder, but fma_chain's reference cycles tripled.
    subset(&src, b.path(), &kernels, &pairs, Some(("fma_chain", 3)));
    let ra = gpumodel::validate::validate_with(a.path(), &spec, true).unwrap();
    let rb = gpumodel::validate::validate_with(b.path(), &spec, true).unwrap();
    eprintln!("{}", ra.render());
    let (la, lb) = (ra.leave_one_out.unwrap(), rb.leave_one_out.unwrap());
    assert_eq!(la.kernels.len(), kernels.len());
    assert_eq!(la.pairs.len(), pairs.len());
    // fma_chain's refit saw neither number; its ordinary error did.
    assert_eq!(la.kernels[0].values, lb.kernels[0].values);
    assert_eq!(la.kernels[0].cycles, lb.kernels[0].cycles);
    assert!(ra.kernels[0].error_pct != rb.kernels[0].error_pct);
    // Each prediction is the kernel run with its refitted values.
    for k in &la.kernels {
        let sets: Vec<String> = gpumodel::validate::loo::FITTED
            .iter()
            .zip(&k.values)
            .map(|(f, v)| format!("{}={v}", f.key))
            .collect();
        let r =
            gpumodel::validate::validate(a.path(), &spec.with_overrides(&sets).unwrap()).unwrap();
        let c = r.kernels.iter().find(|c| c.kernel == k.kernel).unwrap();
        assert_eq!(c.cycles, k.cycles, "{}", k.kernel);
    }
    // Every refitted value is on its grid.
    for k in &la.kernels {
        for (f, v) in gpumodel::validate::loo::FITTED.iter().zip(&k.values) {
            assert!(f.grid.contains(v), "{}: {} = {v}", k.kernel, f.key);
        }
    }
}

/// Validates `reports/validation/<folder>` on qv100 (no leave-one-out), prints the report,
/// and checks that every CSV row became a case; returns the folder, the model and the report.
fn validated_qv100_folder(folder: &str) -> (PathBuf, GpuSpec, gpumodel::validate::Report) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("reports/validation")
        .join(folder);
    let spec = GpuSpec::builtin("qv100").unwrap();
    let r = gpumodel::validate::validate_with(&dir, &spec, false).unwrap();
    eprintln!("{}", r.render());
    assert_eq!(r.kernels.len(), csv_rows(&dir, "results_kernels.csv"));
    assert_eq!(r.pairs.len(), csv_rows(&dir, "results_pairs.csv"));
    (dir, spec, r)
}

/// The report's kernel and pair MAE are within `kernel` and `pair` percent.
fn assert_maes_within(r: &gpumodel::validate::Report, kernel: f64, pair: f64) {
    assert!(
        r.kernel_cycle_mae_pct <= kernel,
        "kernel MAE {:.1}%",
        r.kernel_cycle_mae_pct
    );
    assert!(
        r.pair_slowdown_mae_pct <= pair,
        "pair MAE {:.1}%",
        r.pair_slowdown_mae_pct
    );
}

/// The operand-collector folder (`reports/validation/qv100-oc`, Accel-Sim runs made for
/// `sm.operand_collector`): its kernels and pairs stay within 10% / 15% MAE on qv100. The
/// model without the collector gives 11.7% / 29.0% there, so this fails if the mechanism
/// is lost.
#[test]
fn operand_collector_folder_within_its_bars() {
    let (dir, spec, r) = validated_qv100_folder("qv100-oc");
    assert_maes_within(&r, 10.0, 15.0);
    let mut off = spec.clone();
    off.sm.operand_collector = None;
    let r0 = gpumodel::validate::validate_with(&dir, &off, false).unwrap();
    assert!(
        r0.pair_slowdown_mae_pct > r.pair_slowdown_mae_pct + 10.0,
        "without the collector: pairs {:.1}% vs {:.1}%",
        r0.pair_slowdown_mae_pct,
        r.pair_slowdown_mae_pct
    );
}

/// The mechanism-isolating QV100 set in reports/validation/qv100-calib (Accel-Sim runs of
/// scripts/calib_gen.py's kernels) stays a valid reference folder: every row parses, every
/// trace opens and runs, the reference values agree with each other. No accuracy bar — these
/// are the kernels the model is known to miss; their errors are reported in that README.
#[test]
fn qv100_calib_folder_stays_valid() {
    let (dir, _, r) = validated_qv100_folder("qv100-calib");
    assert!(r.kernels.len() >= 6 && r.pairs.len() >= 3);
    assert!(r.leave_one_out.is_none());
    for k in &r.kernels {
        assert!(k.cycles > 0 && k.ref_cycles > 0, "{}", k.kernel);
        assert!(k.error_pct.is_finite(), "{}", k.kernel);
        assert!(k.ref_dram.is_some(), "{}: no DRAM columns", k.kernel);
        let (l1, l2) = (k.ref_l1_miss_rate.unwrap(), k.ref_l2_miss_rate.unwrap());
        assert!(
            (0.0..=1.0).contains(&l1) && (0.0..=1.0).contains(&l2),
            "{}",
            k.kernel
        );
    }
    // A pair's slowdown of A is its end cycle over A's alone cycles from the kernel rows
    // (A is always one of this folder's kernels), to the CSV's 4 decimals.
    let text = std::fs::read_to_string(dir.join("results_pairs.csv")).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    for (line, p) in text.lines().skip(1).zip(&r.pairs) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[col("pair")], p.pair);
        let a = cells[col("app_a")];
        let ka = r.kernels.iter().find(|k| k.kernel == a).unwrap();
        let want = p.ref_end_a as f64 / ka.ref_cycles as f64;
        assert!((want - p.ref_slowdown_a).abs() < 1e-4, "{}", p.pair);
        assert!(p.end_a > 0 && p.end_b > 0, "{}", p.pair);
    }
}

/// Fourteen more pairs of the reference kernels, built as the reference suite's held-out set
/// is (reports/validation/qv100-pairs2, Accel-Sim runs): the folder stays valid and the engine
/// within issue 45's held-out bars on it, 7% kernel and 7% pair MAE (reached: 4.7% / 5.8%
/// with per-sector L1 entries and aligned warp blocks, 2026-12-01; 5.9% / 10.5% before;
/// its README).
#[test]
fn unseen_reference_pairs_stay_within_their_regression_bars() {
    let (_, _, r) = validated_qv100_folder("qv100-pairs2");
    assert!(r.pairs.len() >= 14);
    // No pair of this folder is one of the reference suite's (it measures unseen pairs).
    if let Some(refdir) = reference() {
        let held: Vec<String> = std::fs::read_to_string(refdir.join("results_pairs.csv"))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect();
        for p in &r.pairs {
            assert!(!held.contains(&p.pair), "{} is a reference pair", p.pair);
        }
    }
    assert_maes_within(&r, 7.0, 7.0);
}
