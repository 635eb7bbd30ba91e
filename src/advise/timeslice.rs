//! Time slicing at the driver's slice length. advise runs every configuration for a short
//! window, far shorter than the driver's slice (`reconfig.time_slice`, 2 ms: about 4 M
//! cycles on an H100), so its time-slice run uses slices that fit the window, and what it
//! measures there is mostly context switches. What it is for is the switch's cost, `C`
//! (`slice_switch_cycles`: from the switch until every SM is free, the outgoing context
//! saved and the incoming one restored). With the model's slice `S`, each of `n`
//! applications holds the whole GPU for `S` of every `n·(S + C)` cycles and, holding it,
//! runs as it does alone; [`at_model_slice`] turns the measured run into that figure and
//! keeps the measured one beside it (`short_slice_stp`). Not modelled: the gaps between a
//! process's launches that the hardware adds under time slicing (H200, two processes:
//! 2.3–3.2× per launch where 2× is the share, `reports/production/hw/`).

use crate::metrics::PolicyRun;

/// Rewrites a time-slice `run` measured with short slices as the model's slice of `slice`
/// cycles would give it. Leaves it as measured (and says so) when no switch was measured.
pub fn at_model_slice(run: &mut PolicyRun, slice: u64) {
    let Some(&c) = run.measures.get("slice_switch_cycles") else {
        run.log
            .push("time slicing: no context switch in the window; figures as measured".to_string());
        return;
    };
    let n = run.apps.len().max(1) as f64;
    let s = slice.max(1) as f64;
    let progress = s / (n * (s + c));
    run.measures
        .insert("short_slice_stp".to_string(), run.summary.stp);
    run.measures.insert("slice_cycles".to_string(), s);
    for a in &mut run.apps {
        a.progress = progress;
        a.slowdown = 1.0 / progress;
    }
    run.summary.stp = progress * n;
    run.summary.antt = 1.0 / progress;
    run.summary.fairness = progress;
    run.log.push(format!(
        "time slicing at the model's {slice}-cycle slice: each application holds the GPU \
         for {slice} of every {:.0} cycles (mean switch {c:.0} cycles, measured); \
         STP {:.3} (measured with short slices: {:.3})",
        n * (s + c),
        run.summary.stp,
        run.measures["short_slice_stp"]
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{AppResult, Stalls, Summary};

    fn run(switch: Option<f64>) -> PolicyRun {
        let app = |name: &str| AppResult {
            name: name.into(),
            warp_insts: 10,
            cycles: 100,
            alone_warp_insts: 100,
            alone_cycles: 100,
            progress: 0.1,
            slowdown: 10.0,
            ipc: 0.1,
            l1_miss_rate: 0.0,
            l2_miss_rate: 0.0,
            stalls: Stalls::default(),
        };
        PolicyRun {
            policy: "time-slice".into(),
            partition: "shared".into(),
            ctas: None,
            summary: Summary {
                stp: 0.2,
                antt: 10.0,
                fairness: 0.1,
                combined_ipc: 0.2,
                cycles: 100,
            },
            apps: vec![app("a"), app("b")],
            stalls: Stalls::default(),
            l1_miss_rate: 0.0,
            l2_miss_rate: 0.0,
            runs: 1,
            log: Vec::new(),
            measures: switch
                .map(|c| ("slice_switch_cycles".to_string(), c))
                .into_iter()
                .collect(),
        }
    }

    /// Two applications, a 9,000-cycle slice and 1,000-cycle switches: each holds the GPU
    /// 9,000 of every 20,000 cycles.
    #[test]
    fn shares_the_slice_less_the_switch() {
        let mut r = run(Some(1000.0));
        at_model_slice(&mut r, 9000);
        assert!((r.apps[0].progress - 0.45).abs() < 1e-12);
        assert!((r.summary.stp - 0.9).abs() < 1e-12);
        assert!((r.summary.antt - 1.0 / 0.45).abs() < 1e-12);
        assert_eq!(r.measures["short_slice_stp"], 0.2);
    }

    #[test]
    fn without_a_measured_switch_the_run_stays_as_measured() {
        let mut r = run(None);
        let before = r.clone();
        at_model_slice(&mut r, 9000);
        assert_eq!(r.summary, before.summary);
        assert_eq!(r.log.len(), 1);
    }
}
