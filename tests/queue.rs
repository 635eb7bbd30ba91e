//! Queues of applications (Punyala §IV) run group after group under equal SMs, SMRA and
//! profiled SM counts, on a small GPU with hand-built kernels.

mod common;

use std::collections::BTreeMap;

use common::engine_kit::*;
use gpumodel::study::queue::{arrival_groups, block_masks, profiled_sms, run_queue, QueueRun};
use gpumodel::study::{self, Mode, Setup};

fn setup_apps() -> Vec<(String, String, gpumodel::engine::AppSpec)> {
    vec![
        (
            "c1".into(),
            "A".into(),
            app("c1", vec![compute("c1", 16, 4, 200, 2, "ffma+int")]),
        ),
        (
            "c2".into(),
            "A".into(),
            app("c2", vec![compute("c2", 16, 4, 150, 1, "ffma")]),
        ),
        (
            "m1".into(),
            "M".into(),
            app("m1", vec![stream("m1", 16, 4, 24, BUF)]),
        ),
        (
            "m2".into(),
            "M".into(),
            app("m2", vec![stream("m2", 16, 4, 16, BUF + BUF_STRIDE)]),
        ),
    ]
}

#[test]
fn a_queue_runs_group_after_group_under_every_sharing() {
    let spec = tiny(8, 2);
    let tick = |_: usize, _: usize| {};
    let setup = Setup {
        spec: &spec,
        mode: Mode::Completion,
        max_cycles: 50_000_000,
        fast_forward: None,
        progress: &tick,
    };
    let benches = study::load(&setup, setup_apps()).unwrap();
    let queue: Vec<(String, usize)> = ["c1", "m1", "c2", "m2", "c1"]
        .iter()
        .map(|n| (n.to_string(), 0))
        .collect();
    let groups = arrival_groups(&queue, 2);
    assert_eq!(groups.len(), 3);
    let mut prof = BTreeMap::new();
    for b in &benches {
        prof.insert(
            b.name.clone(),
            profiled_sms(&setup, &b.app, &[2, 4, 6, 8], 0.95).unwrap(),
        );
    }
    let total: u64 = queue
        .iter()
        .map(|(n, _)| {
            benches
                .iter()
                .find(|b| &b.name == n)
                .unwrap()
                .app
                .warp_insts()
        })
        .sum();
    let smra = gpumodel::policy::SmraParams::default();
    let mut runs: Vec<QueueRun> = Vec::new();
    use gpumodel::policy::{PolicySpec, SmCountsParams};
    let profiled = PolicySpec::SmCounts(SmCountsParams {
        sms: prof.clone(),
        label: Some("profile-based".into()),
    });
    for how in [
        PolicySpec::Spatial(Default::default()),
        PolicySpec::Smra(smra.clone()),
        profiled,
    ] {
        let r = run_queue(&setup, &benches, &groups, &how).unwrap();
        // Every instruction of every queued application ran, once.
        assert_eq!(r.warp_insts, total, "{how:?}");
        assert_eq!(r.app_ipc.len(), queue.len());
        assert!(r.throughput > 0.0 && r.cycles > 0);
        // Determinism.
        assert_eq!(r, run_queue(&setup, &benches, &groups, &how).unwrap());
        runs.push(r);
    }
    // A memory stream saturates before the whole GPU; compute scales to it.
    assert!(prof["m1"] <= prof["c1"], "{prof:?}");
}

#[test]
fn block_masks_fit_the_gpu() {
    let m = block_masks(8, &[6, 6]);
    assert_eq!(m[0].iter().filter(|x| **x).count(), 4);
    assert_eq!(m[1].iter().filter(|x| **x).count(), 4);
    assert!((0..8).all(|s| m[0][s] != m[1][s]));
    let m = block_masks(8, &[2, 3]);
    assert_eq!(m[0].iter().filter(|x| **x).count(), 2);
    // Left-over SMs go to the last application.
    assert_eq!(m[1].iter().filter(|x| **x).count(), 6);
}
