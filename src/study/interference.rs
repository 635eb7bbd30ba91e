//! Inter-class interference (Punyala et al. §III-A, Fig. 2): `S(j→i)`, the slowdown an
//! application of class i suffers beside one of class j when the SMs are split equally,
//! averaged over the representative applications of each class.

use crate::error::{Error, Result};
use crate::policy::pattern::Interference;
use crate::policy::PolicySpec;

use rayon::prelude::*;

use super::{alone_ipc, run_tasks, Loaded, Setup, Task};
use crate::engine::AppPlacement;
use crate::policy::spatial_masks;

/// IPC of each application alone on half of the SMs (the share it gets in a pair).
fn half_gpu_ipc(setup: &Setup, benches: &[Loaded]) -> Result<Vec<f64>> {
    let nsm = setup.spec.sm.count as usize;
    let half = spatial_masks(nsm, 2, &[0, 1]).swap_remove(0);
    benches
        .par_iter()
        .map(|b| {
            let place = AppPlacement {
                sms: Some(half.clone()),
                ..AppPlacement::default()
            };
            alone_ipc(setup.spec, setup.mode, setup.max_cycles, &b.app, place)
        })
        .collect()
}

/// Measures `S(j→i)` for every ordered class pair from Spatial (equal-SM) co-runs of the
/// representatives: every pair of distinct applications of classes j and i (two different
/// applications when i = j). The slowdown is against the application alone on the same
/// half of the GPU, so it is the interference only. `benches` carry their class in
/// `Loaded::class`.
pub fn measure(setup: &Setup, benches: &[Loaded], classes: &[String]) -> Result<Interference> {
    let of = |c: &str| -> Vec<&Loaded> { benches.iter().filter(|b| b.class == c).collect() };
    let mut tasks = Vec::new();
    for (x, a) in benches.iter().enumerate() {
        for b in &benches[x + 1..] {
            tasks.push(Task {
                apps: vec![a.name.clone(), b.name.clone()],
                category: "interference".into(),
                policies: vec![PolicySpec::Spatial],
            });
        }
    }
    for c in classes {
        if of(c).is_empty() {
            return Err(Error::Usage(format!(
                "no representative application of class {c}"
            )));
        }
    }
    let results = run_tasks(setup, benches, &tasks)?;
    let alone = half_gpu_ipc(setup, benches)?;
    let n = classes.len();
    let mut sum = vec![vec![0.0; n]; n];
    let mut cnt = vec![vec![0u32; n]; n];
    let idx = |name: &str| {
        let b = benches.iter().position(|b| b.name == name)?;
        Some((classes.iter().position(|c| *c == benches[b].class)?, b))
    };
    for w in &results {
        let run = &w.runs[0];
        for (k, victim) in run.apps.iter().enumerate() {
            let other = &run.apps[1 - k];
            if let (Some((i, b)), Some((j, _))) = (idx(&victim.name), idx(&other.name)) {
                if victim.ipc > 0.0 {
                    sum[j][i] += alone[b] / victim.ipc;
                    cnt[j][i] += 1;
                }
            }
        }
    }
    let mut s = vec![vec![0.0; n]; n];
    for j in 0..n {
        for i in 0..n {
            if cnt[j][i] == 0 {
                return Err(Error::Usage(format!(
                    "S({}→{}) has no co-run: class {} needs two representative applications",
                    classes[j], classes[i], classes[i]
                )));
            }
            s[j][i] = sum[j][i] / cnt[j][i] as f64;
        }
    }
    Ok(Interference {
        classes: classes.to_vec(),
        s,
    })
}
