//! Multiprogram metrics and the result records of `analyze` and `study`.
//!
//! Each application of a shared run is compared with its alone run on the same model
//! (normalised progress NP = IPC shared / IPC alone); from those come STP (Σ NP), ANTT
//! (mean 1/NP), fairness (minimum NP, the "minimum speedup" of Warped-Slicer Fig. 9a) and
//! combined IPC (Σ instructions / cycles until the last application finishes). Across
//! workloads or seeds: geometric means and Student-t confidence intervals (statrs).
//!
//! Queue studies (Punyala et al.) save [`QueueStudyResults`]: throughput per queue and
//! policy, classes and interference matrices.
//!
//! The figures in `report` read only the types of this module.

mod queue;
mod rank;
mod results;
mod stats;

pub use queue::{QueueApp, QueueCell, QueueStudyResults, SlowdownMatrix, QUEUE_KIND};
pub use rank::{kendall_tau, RankAgreement};
pub use results::{
    AloneResult, AppResult, BenchCurve, FfCheck, FfCheckRun, PolicyRun, SliceRun, SoloCounters,
    SoloRun, Spatial, Stalls, StudyResults, SweepPoint, SweepResults, WorkloadResult,
    SCHEMA_VERSION, SWEEP_KIND,
};
pub use stats::{gmean, mean_ci, MeanCi};

use serde::{Deserialize, Serialize};

/// The multiprogram metrics of one shared run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// System throughput: Σ normalised progress.
    pub stp: f64,
    /// Average normalised turnaround time: mean of 1 / normalised progress.
    pub antt: f64,
    /// Minimum normalised progress (minimum speedup).
    pub fairness: f64,
    /// Σ warp instructions / cycles until every application finished.
    pub combined_ipc: f64,
    /// Cycles until every application finished.
    pub cycles: u64,
}

/// One application's share of a run, before comparison with its alone run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub warp_insts: u64,
    pub cycles: u64,
    pub alone_warp_insts: u64,
    pub alone_cycles: u64,
}

impl Progress {
    /// IPC shared / IPC alone (1 = as fast as alone). With equal instruction counts this
    /// is alone time / shared time.
    pub fn normalised(&self) -> f64 {
        let shared = self.warp_insts as f64 / self.cycles.max(1) as f64;
        let alone = self.alone_warp_insts as f64 / self.alone_cycles.max(1) as f64;
        if alone > 0.0 {
            shared / alone
        } else {
            0.0
        }
    }
}

impl Progress {
    /// 1 / [`Progress::normalised`]; infinite when the application made no progress.
    pub fn slowdown(&self) -> f64 {
        let np = self.normalised();
        if np > 0.0 {
            1.0 / np
        } else {
            f64::INFINITY
        }
    }

    /// Warp instructions per shared cycle.
    pub fn ipc(&self) -> f64 {
        self.warp_insts as f64 / self.cycles.max(1) as f64
    }
}

/// Multiprogram metrics from each application's progress and the run's length.
pub fn summarize(apps: &[Progress], cycles: u64) -> Summary {
    let np: Vec<f64> = apps.iter().map(Progress::normalised).collect();
    let n = np.len().max(1) as f64;
    let insts: u64 = apps.iter().map(|a| a.warp_insts).sum();
    Summary {
        stp: np.iter().sum(),
        antt: np.iter().map(|x| 1.0 / x.max(1e-12)).sum::<f64>() / n,
        fairness: np.iter().copied().fold(f64::INFINITY, f64::min).min(1e300),
        combined_ipc: insts as f64 / cycles.max(1) as f64,
        cycles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(wi: u64, c: u64, awi: u64, ac: u64) -> Progress {
        Progress {
            warp_insts: wi,
            cycles: c,
            alone_warp_insts: awi,
            alone_cycles: ac,
        }
    }

    #[test]
    fn two_apps_each_at_half_speed() {
        let s = summarize(&[p(100, 200, 100, 100), p(50, 200, 50, 100)], 200);
        assert!((s.stp - 1.0).abs() < 1e-12);
        assert!((s.antt - 2.0).abs() < 1e-12);
        assert!((s.fairness - 0.5).abs() < 1e-12);
        assert!((s.combined_ipc - 0.75).abs() < 1e-12);
    }

    #[test]
    fn alone_is_one() {
        let s = summarize(&[p(100, 100, 100, 100)], 100);
        assert_eq!((s.stp, s.antt, s.fairness), (1.0, 1.0, 1.0));
    }
}
