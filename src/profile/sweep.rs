//! Running the profile's isolated runs: one job per sampled point (CTAs per SM through a
//! per-SM CTA quota, SM count through an SM mask, channel count through a channel set) plus
//! the full-GPU alone run, executed in parallel with rayon and returned in job order, so the
//! result does not depend on the thread count.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::engine::{self, AppPlacement, AppSpec, RunConfig, RunStats};
use crate::error::Result;

/// The resource a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// CTAs per SM (a quota on every SM; no even spreading).
    CtasPerSm,
    /// SMs the application may use (the first `n`).
    Sms,
    /// Memory channels the application's pages map into.
    Channels,
}

impl Axis {
    pub const ALL: [Axis; 3] = [Axis::CtasPerSm, Axis::Sms, Axis::Channels];
    pub fn name(self) -> &'static str {
        match self {
            Axis::CtasPerSm => "ctas_per_sm",
            Axis::Sms => "sms",
            Axis::Channels => "channels",
        }
    }
    /// Axis label with its unit.
    pub fn label(self) -> &'static str {
        match self {
            Axis::CtasPerSm => "CTAs per SM",
            Axis::Sms => "SMs",
            Axis::Channels => "memory channels",
        }
    }
}

/// One isolated run to make: `None` axis = the full-GPU alone run.
#[derive(Clone, Debug)]
pub struct Job {
    pub axis: Option<Axis>,
    pub x: u32,
    pub placement: AppPlacement,
    pub spread_alone: bool,
}

impl Job {
    /// The hardware-default alone run: whole GPU, CTAs spread evenly when the grid is small.
    pub fn alone() -> Job {
        Job {
            axis: None,
            x: 0,
            placement: AppPlacement::default(),
            spread_alone: true,
        }
    }
    pub fn config(&self, max_cycles: u64) -> RunConfig {
        let mut cfg = RunConfig::completion(1);
        cfg.max_cycles = max_cycles;
        cfg.placement.apps = vec![self.placement.clone()];
        cfg.placement.spread_alone = self.spread_alone;
        cfg
    }
}

/// Runs every job (in parallel) and returns the results in job order. `done` is called
/// after each run, from whichever worker thread finished it.
pub fn run_jobs(
    spec: &GpuSpec,
    app: &AppSpec,
    jobs: &[Job],
    opts: &super::ProfileOptions,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<RunStats>> {
    let apps = std::slice::from_ref(app);
    jobs.par_iter()
        .map(|j| {
            let cfg = RunConfig {
                fast_forward: opts.fast_forward,
                ..j.config(opts.max_cycles)
            };
            let r = engine::run_static(spec, apps, &cfg);
            done();
            r
        })
        .collect()
}
