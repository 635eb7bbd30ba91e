//! Engine benchmark (`cargo bench --bench engine`): simulated warp instructions per second
//! on one core for compute-bound, memory-bound and mixed kernels of the bundled suites,
//! cost against kernel length (grid scaled 1×, 2×, 4×: should be linear) and against SM
//! count, and peak RSS. Prints medians of several runs; results are recorded in
//! BENCHMARKS.md. `GPUMODEL_BENCH_QUICK=1` runs each case once on a small grid.

mod common;
use common::{median, peak_rss_mib};

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{run_static, AppSpec, RunConfig};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::KernelSource;

fn kernel(path: &str, grid_scale: u32) -> Arc<dyn KernelSource> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let mut spec = gpumodel::trace::synth::parse_spec(&text, Path::new(path)).unwrap();
    if grid_scale != 1 {
        spec.kernel.grid.0[0] *= grid_scale;
    }
    Arc::new(SynthKernel::from_spec(spec, Path::new(path)).unwrap())
}

/// (warp instructions, seconds) of one run.
fn time(spec: &GpuSpec, apps: &[AppSpec]) -> (u64, f64) {
    let cfg = RunConfig::completion(apps.len());
    let t = Instant::now();
    let s = run_static(spec, apps, &cfg).unwrap();
    (s.gpu.warp_insts, t.elapsed().as_secs_f64())
}

fn main() {
    let quick = std::env::var_os("GPUMODEL_BENCH_QUICK").is_some();
    let reps = if quick { 1 } else { 3 };
    let fermi = GpuSpec::builtin("fermi-ws").unwrap();
    let qv = GpuSpec::builtin("qv100").unwrap();
    let cases: [(&str, &GpuSpec, &[&str]); 5] = [
        (
            "compute (WS hot)",
            &fermi,
            &["traces/warped-slicer/hot.toml"],
        ),
        ("compute (WS mm)", &fermi, &["traces/warped-slicer/mm.toml"]),
        (
            "memory (WS lbm)",
            &fermi,
            &["traces/warped-slicer/lbm.toml"],
        ),
        (
            "memory (stream_copy, qv100)",
            &qv,
            &["traces/examples/stream_copy.toml"],
        ),
        (
            "mixed pair (hot + lbm)",
            &fermi,
            &[
                "traces/warped-slicer/hot.toml",
                "traces/warped-slicer/lbm.toml",
            ],
        ),
    ];
    println!(
        "{:<30} {:>12} {:>10} {:>14}",
        "case", "warp insts", "median s", "M warp-inst/s"
    );
    for (name, spec, files) in cases {
        let apps: Vec<AppSpec> = files
            .iter()
            .map(|f| AppSpec::new(*f, vec![kernel(f, 1)]))
            .collect();
        let mut secs = Vec::new();
        let mut wi = 0;
        for _ in 0..reps {
            let (w, s) = time(spec, &apps);
            wi = w;
            secs.push(s);
        }
        let m = median(secs);
        println!(
            "{name:<30} {wi:>12} {m:>10.3} {:>14.2}",
            wi as f64 / m / 1e6
        );
    }
    println!("\ncost vs kernel length (WS hot on fermi-ws, grid x1/x2/x4):");
    for scale in [1, 2, 4] {
        let apps = vec![AppSpec::new(
            "hot",
            vec![kernel("traces/warped-slicer/hot.toml", scale)],
        )];
        let (wi, s) = time(&fermi, &apps);
        println!(
            "  x{scale}: {wi} warp insts in {s:.3} s ({:.2} M/s)",
            wi as f64 / s / 1e6
        );
    }
    println!("\ncost vs SM count (WS hot, grid fixed):");
    for sms in [4, 8, 15] {
        let spec = fermi.with_overrides(&[format!("sm.count={sms}")]).unwrap();
        let apps = vec![AppSpec::new(
            "hot",
            vec![kernel("traces/warped-slicer/hot.toml", 1)],
        )];
        let (wi, s) = time(&spec, &apps);
        println!(
            "  {sms} SMs: {wi} warp insts in {s:.3} s ({:.2} M/s)",
            wi as f64 / s / 1e6
        );
    }
    println!("\npeak RSS: {:.1} MiB", peak_rss_mib());
}
