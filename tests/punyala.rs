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
