//! Study benchmark (`cargo bench --bench study`): wall time of the whole Warped-Slicer study
//! (`reports/warped-slicer/study.toml`: alone runs, occupancy curves, 30 pairs × every
//! policy including the oracle's CTA combinations, 15 three-kernel workloads) on all cores,
//! plus the cost of the partition solvers (water filling and the max-min ILP). Results are
//! recorded in BENCHMARKS.md. `GPUMODEL_BENCH_QUICK=1` skips the study.

mod common;
use common::{median, peak_rss_mib};

use std::path::Path;
use std::time::Instant;

use gpumodel::policy::partition::{ilp, water_fill, Problem};

fn solvers() {
    // Two and three kernels with 8 CTA counts each, SM-slot bound.
    for k in [2usize, 3] {
        let pb = Problem {
            perf: (0..k)
                .map(|i| (1..=8).map(|j| (j as f64).powf(0.3 + 0.2 * i as f64)).collect())
                .collect(),
            need: vec![[0, 0, 0, 0, 1]; k],
            cap: [0, 0, 0, 0, 8],
        };
        let reps = 200;
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(water_fill(&pb).unwrap());
        }
        let wf = t.elapsed().as_secs_f64() / reps as f64;
        let t = Instant::now();
        for _ in 0..20 {
            std::hint::black_box(ilp(&pb).unwrap());
        }
        let lp = t.elapsed().as_secs_f64() / 20.0;
        println!(
            "partition, {k} kernels x 8 counts: water filling {:.2} us, ILP {:.2} ms",
            wf * 1e6,
            lp * 1e3
        );
    }
}

fn main() {
    solvers();
    if std::env::var_os("GPUMODEL_BENCH_QUICK").is_some() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/warped-slicer/study.toml");
    let mut walls = Vec::new();
    let mut runs = 0;
    for _ in 0..1 {
        let t = Instant::now();
        let r = gpumodel::study::run_study(&path, &|_, _, _| {}).unwrap();
        walls.push(t.elapsed().as_secs_f64());
        runs = r
            .workloads
            .iter()
            .flat_map(|w| w.runs.iter().map(|p| p.runs))
            .sum::<usize>();
    }
    println!(
        "warped-slicer study: {} threads, {runs} engine runs (+ alone and curve runs), wall {:.1} s (median of {}), peak RSS {:.0} MiB",
        rayon::current_num_threads(),
        median(walls.clone()),
        walls.len(),
        peak_rss_mib()
    );
}
