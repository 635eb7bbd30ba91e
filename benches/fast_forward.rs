//! Steady-state fast-forward benchmark (`cargo bench --bench fast_forward`): wall time and
//! cycles of long single-launch runs (bundled suite kernels with their grids scaled up
//! so that each runs well over 1 M cycles) and of relaunching runs (a fixed window several
//! times a kernel's length), detailed against fast-forwarded, one thread. Prints the
//! median of REPS runs each (`GPUMODEL_BENCH_REPS`, default 3), the wall-time ratio and
//! the cycle error, fast-forwarded with the default (plain jumps, at most 8x the measured
//! span), with unbounded plain jumps (stride 0) and with aged jumps at stride 32 (`32a`);
//! recorded in BENCHMARKS.md. Not criterion: a detailed run here takes
//! many seconds and criterion's minimum of ten samples per case would take most of an
//! hour on the 2-core box; the medians are printed the way `benches/engine.rs` does.
//! `GPUMODEL_BENCH_QUICK=1` runs one small case once.

mod common;
use common::{median, peak_rss_mib};

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{run_static, AppSpec, FastForward, RunConfig, RunMode};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::KernelSource;

fn kernel(path: &str, grid_scale: u32) -> Arc<dyn KernelSource> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let mut spec = gpumodel::trace::synth::parse_spec(&text, Path::new(path)).unwrap();
    spec.kernel.grid.0[0] *= grid_scale;
    Arc::new(SynthKernel::from_spec(spec, Path::new(path)).unwrap())
}

/// (cycles, seconds) of one run; `ff`: fast-forward with jumps at most this many times
/// their measured span (`0`: unbounded), aged or not; `None`: detailed.
fn time(spec: &GpuSpec, apps: &[AppSpec], mode: &RunMode, ff: Option<(u32, bool)>) -> (u64, f64) {
    let cfg = RunConfig {
        mode: mode.clone(),
        fast_forward: ff.map(|(stride, age)| FastForward {
            stride,
            age,
            ..FastForward::default()
        }),
        ..RunConfig::completion(apps.len())
    };
    let t = Instant::now();
    let s = run_static(spec, apps, &cfg).unwrap();
    let cycles = match mode {
        // A window run ends at its window: compare the work done in it.
        RunMode::Window(_) => s.gpu.warp_insts,
        _ => s.cycles,
    };
    (cycles, t.elapsed().as_secs_f64())
}

fn main() {
    let quick = std::env::var_os("GPUMODEL_BENCH_QUICK").is_some();
    let reps: usize = std::env::var("GPUMODEL_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    // (kernel, model, grid scale, window: None = one launch to completion)
    let cases: Vec<(&str, &str, u32, Option<u64>)> = if quick {
        vec![("traces/warped-slicer/hot.toml", "fermi-ws", 4, None)]
    } else {
        vec![
            ("traces/warped-slicer/bfs.toml", "fermi-ws", 20, None),
            ("traces/warped-slicer/hot.toml", "fermi-ws", 40, None),
            ("traces/warped-slicer/mm.toml", "fermi-ws", 40, None),
            ("traces/warped-slicer/knn.toml", "fermi-ws", 20, None),
            ("traces/warped-slicer/mvp.toml", "fermi-ws", 20, None),
            ("traces/sim/md.toml", "k40c", 20, None),
            ("traces/slate/tr.toml", "titanxp", 20, None),
            // Twice as long (≥ 2.5 M cycles, 51-200 waves): the set where aged jumps at
            // stride 32 reach 10x (a launch keeps ~12 waves in detail).
            ("traces/warped-slicer/bfs.toml", "fermi-ws", 40, None),
            ("traces/warped-slicer/knn.toml", "fermi-ws", 40, None),
            ("traces/warped-slicer/mvp.toml", "fermi-ws", 40, None),
            ("traces/sim/md.toml", "k40c", 40, None),
            ("traces/slate/tr.toml", "titanxp", 40, None),
            // Relaunching: a window of about eight launches of the unscaled kernel (three
            // run in detail before whole launches are retired), and of about forty.
            (
                "traces/warped-slicer/bfs.toml",
                "fermi-ws",
                1,
                Some(2_500_000),
            ),
            (
                "traces/warped-slicer/hot.toml",
                "fermi-ws",
                1,
                Some(1_000_000),
            ),
            (
                "traces/warped-slicer/hot.toml",
                "fermi-ws",
                1,
                Some(5_000_000),
            ),
        ]
    };
    // The default (plain jumps, stride 8), unbounded plain jumps, and aged jumps at
    // stride 32.
    let d = FastForward::default();
    let strides = [(d.stride, d.age), (0, false), (32, true)];
    println!(
        "{:<34} {:>6} {:>11} {:>7} {:>11} {:>8} {:>8} {:>7} {:>8}",
        "kernel", "scale", "detailed", "stride", "fast-fwd", "det s", "ff s", "ratio", "error"
    );
    for (path, model, scale, window) in cases {
        let spec = GpuSpec::builtin(model).unwrap();
        let apps = vec![AppSpec::new("k", vec![kernel(path, scale)])];
        let mode = window.map_or(RunMode::Completion, RunMode::Window);
        let mut d = Vec::new();
        let mut f = vec![Vec::new(); strides.len()];
        let mut cd = 0;
        let mut cf = vec![0; strides.len()];
        for _ in 0..reps {
            // Interleaved, so that load from other jobs hits all alike.
            let (c, s) = time(&spec, &apps, &mode, None);
            cd = c;
            d.push(s);
            for (i, &st) in strides.iter().enumerate() {
                let (c, s) = time(&spec, &apps, &mode, Some(st));
                cf[i] = c;
                f[i].push(s);
            }
        }
        let md = median(d);
        let name = format!(
            "{}{}",
            path.trim_start_matches("traces/"),
            if window.is_some() { " (window)" } else { "" }
        );
        for (i, fs) in f.into_iter().enumerate() {
            let mf = median(fs);
            println!(
                "{:<34} {:>6} {:>11} {:>7} {:>11} {:>8.2} {:>8.2} {:>6.1}x {:>+7.2}%",
                name,
                scale,
                cd,
                format!("{}{}", strides[i].0, if strides[i].1 { "a" } else { "" }),
                cf[i],
                md,
                mf,
                md / mf.max(1e-9),
                (cf[i] as f64 - cd as f64) / cd as f64 * 100.0
            );
        }
    }
    println!("(window runs: warp instructions in the window instead of cycles)");
    println!("peak RSS {:.0} MiB", peak_rss_mib());
}
