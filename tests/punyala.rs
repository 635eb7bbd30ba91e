//! Punyala et al. (seed 001): the bundled suite is classified M / MC / C / A as Table I does,
//! from alone runs on the paper's model (`gpgpusim-60sm`, Table II).

use std::path::Path;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{run_static, AppSpec, RunConfig};
use gpumodel::profile::class::punyala::{classify, PunyalaThresholds};
use gpumodel::profile::metrics::{Metrics, Mix};

#[derive(serde::Deserialize)]
struct Suite {
    bench: Vec<Bench>,
}

#[derive(serde::Deserialize)]
struct Bench {
    name: String,
    spec: String,
    expected_class: String,
}

#[test]
fn suite_is_classified_as_table_i() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/punyala");
    let text = std::fs::read_to_string(dir.join("suite.toml")).unwrap();
    let suite: Suite = toml::from_str(&text).unwrap();
    let spec = GpuSpec::builtin("gpgpusim-60sm").unwrap();
    let mut wrong = Vec::new();
    for b in &suite.bench {
        let app = gpumodel::trace::app::open_app(&dir.join(&b.spec), &Default::default()).unwrap();
        let app = AppSpec::new(&b.name, app.kernels);
        let stats =
            run_static(&spec, std::slice::from_ref(&app), &RunConfig::completion(1)).unwrap();
        let m = Metrics::new(&spec, &stats, Mix::of(&app).unwrap());
        let label = classify(&m, &PunyalaThresholds::default());
        eprintln!(
            "{:<5} expected {:<2} got {:<2} {}",
            b.name,
            b.expected_class,
            label.class.name(),
            label.why
        );
        if label.class.name() != b.expected_class {
            wrong.push(format!(
                "{}: {} (expected {}) — {}",
                b.name,
                label.class.name(),
                b.expected_class,
                label.why
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Fig. 2: S(j→i) from equal-SM co-runs of two representatives per class, against each
/// application alone on the same half of the GPU. Memory-bound classes hurt each other
/// more than compute-bound ones do.
#[test]
fn interference_matrix_from_co_runs() {
    use gpumodel::study::{self, interference, Mode, Setup};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/punyala");
    let spec = GpuSpec::builtin("gpgpusim-60sm").unwrap();
    let reps = [
        ("blk", "M"),
        ("gups", "M"),
        ("bp", "MC"),
        ("fft", "MC"),
        ("bfs2", "C"),
        ("spmv", "C"),
        ("lud", "A"),
        ("hs", "A"),
    ];
    let inputs = reps
        .iter()
        .map(|(n, c)| {
            let app =
                gpumodel::trace::app::open_app(&dir.join(format!("{n}.toml")), &Default::default())
                    .unwrap();
            (n.to_string(), c.to_string(), AppSpec::new(*n, app.kernels))
        })
        .collect();
    let tick = |_: usize, _: usize| {};
    let setup = Setup {
        spec: &spec,
        mode: Mode::Budget { window: 20_000 },
        max_cycles: 10_000_000,
        fast_forward: None,
        progress: &tick,
    };
    let benches = study::load(&setup, inputs).unwrap();
    let classes: Vec<String> = ["M", "MC", "C", "A"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let m = interference::measure(&setup, &benches, &classes, 20_000).unwrap();
    for row in &m.s {
        eprintln!("{row:.2?}");
        assert!(row.iter().all(|&x| x > 0.5 && x < 10.0), "{row:?}");
    }
    // Fig. 2 as a heatmap (rows: the co-runner's class j, columns: the victim's class i).
    let svg = gpumodel::report::heatmap::render_svg(&gpumodel::report::heatmap::Heatmap {
        title: "Slowdown of class i beside class j (equal SMs)".into(),
        row_axis: "co-runner class j".into(),
        col_axis: "class i".into(),
        rows: classes.clone(),
        cols: classes.clone(),
        values: m.s.clone(),
    })
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("fig2.svg"), svg).unwrap();
    // M beside M hurts more than A beside A.
    assert!(m.s[0][0] > m.s[3][3], "{:?}", m.s);
    let e = interference::measure(&setup, &benches[..2], &classes, 20_000)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no representative application of class MC"),
        "{e}"
    );
}
