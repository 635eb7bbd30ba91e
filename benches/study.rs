//! Study benchmark (`cargo bench --bench study`): wall time of the whole Warped-Slicer study
//! (`reports/warped-slicer/study.toml`: alone runs, occupancy curves, 30 pairs × every
//! policy including the oracle's CTA combinations, 15 three-kernel workloads) on all cores,
//! plus the cost of the partition solvers (water filling and the max-min ILP). Results are
//! recorded in BENCHMARKS.md. Then the pattern ILP of Punyala et al. (4 classes, and each
//! application its own class) and the whole Punyala queue study
//! (`reports/punyala/study.toml`). `GPUMODEL_BENCH_QUICK=1` skips the studies.

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
                .map(|i| {
                    (1..=8)
                        .map(|j| (j as f64).powf(0.3 + 0.2 * i as f64))
                        .collect()
                })
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

/// Punyala's pattern ILP: a 36-application queue of 4 classes in groups of 3.
fn patterns() {
    use gpumodel::policy::pattern::{solve, Interference};
    let m = Interference {
        classes: ["M", "MC", "C", "A"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        s: vec![
            vec![2.05, 1.5, 1.6, 1.2],
            vec![1.78, 1.4, 1.5, 1.1],
            vec![1.76, 1.3, 1.55, 1.15],
            vec![1.51, 1.2, 1.3, 1.06],
        ],
    };
    let mut t = Vec::new();
    for _ in 0..5 {
        let s = Instant::now();
        std::hint::black_box(solve(&[9, 9, 9, 9], 3, &m).unwrap());
        t.push(s.elapsed().as_secs_f64());
    }
    println!(
        "pattern ILP, 36 apps, 4 classes, groups of 3 (20 patterns): {:.2} ms (median of 5)",
        median(t) * 1e3
    );
    // "Each application its own class": 13 applications, a deterministic slowdown matrix
    // between 1.0 and 2.5 (memory-heavy rows hurt more).
    let n = 13;
    let apps = Interference {
        classes: (0..n).map(|i| format!("app{i}")).collect(),
        s: (0..n)
            .map(|j| {
                (0..n)
                    .map(|i| 1.0 + ((j * 7 + i * 3) % 11) as f64 / 11.0 + (j % 3) as f64 * 0.25)
                    .collect()
            })
            .collect(),
    };
    for (q, ng) in [(20u32, 2usize), (36, 3)] {
        let counts: Vec<u32> = (0..n as u32)
            .map(|i| q / n as u32 + u32::from(i < q % n as u32))
            .collect();
        let mut t = Vec::new();
        for _ in 0..3 {
            let s = Instant::now();
            std::hint::black_box(solve(&counts, ng, &apps).unwrap());
            t.push(s.elapsed().as_secs_f64());
        }
        println!(
            "pattern ILP, {q} apps, each its own class (13), groups of {ng} ({} patterns): {:.2} ms (median of 3)",
            gpumodel::policy::pattern::patterns(n, ng).len(),
            median(t) * 1e3
        );
    }
}

fn main() {
    solvers();
    patterns();
    if std::env::var_os("GPUMODEL_BENCH_QUICK").is_some() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/warped-slicer");
    let full = root.join("study.toml");
    // The 30 pairs under every policy and the oracle, without the occupancy curves and the
    // three-kernel workloads (the figure the target names).
    let text = std::fs::read_to_string(&full).unwrap();
    let mut v: toml::Table = text.parse().unwrap();
    v.insert("curve_window".into(), toml::Value::Integer(0));
    if let Some(toml::Value::Array(groups)) = v.get_mut("groups") {
        groups.retain(|g| g.get("kind").and_then(|k| k.as_str()) != Some("pair-plus-one"));
    }
    if let Some(toml::Value::Array(benches)) = v.get_mut("benches") {
        for b in benches.iter_mut() {
            if let Some(toml::Value::String(p)) = b.get_mut("path") {
                *p = root.join(&*p).to_string_lossy().into_owned();
            }
        }
    }
    let pairs = std::env::temp_dir().join("gpumodel-bench-ws-pairs.toml");
    std::fs::write(&pairs, toml::to_string(&v).unwrap()).unwrap();
    for (what, path) in [
        ("30 pairs x 7 policies + oracle", &pairs),
        ("whole study", &full),
    ] {
        let t = Instant::now();
        let r = gpumodel::study::run_study(path, &|_, _, _| {}).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let runs: usize = r
            .workloads
            .iter()
            .flat_map(|w| w.runs.iter().map(|p| p.runs))
            .sum();
        println!(
            "warped-slicer study, {what}: {} threads, {runs} policy runs (+ alone/curve runs), wall {:.1} s, peak RSS {:.0} MiB",
            rayon::current_num_threads(),
            median(vec![wall]),
            peak_rss_mib()
        );
    }
    let _ = std::fs::remove_file(&pairs);
    let queue = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/punyala/study.toml");
    let t = Instant::now();
    let r = gpumodel::study::queue_study::run_queue_study(&queue, &|_, _, _| {}).unwrap();
    println!(
        "punyala queue study: {} threads, {} applications, {} queue x policy cells, wall {:.1} s, peak RSS {:.0} MiB",
        rayon::current_num_threads(),
        r.apps.len(),
        r.cells.len(),
        t.elapsed().as_secs_f64(),
        peak_rss_mib()
    );
}
