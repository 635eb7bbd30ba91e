//! The hybrid engine: an interval model of SM warp issue (all warps of all resident kernels,
//! sharing schedulers and functional units) coupled to a cycle-level, event-driven memory
//! hierarchy, with every mechanism sharing policies need — SM masks, CTA quotas, resource
//! fractions, channel sets, runtime reconfiguration, persistent-thread kernels, time
//! slicing — and controller hooks.
//!
//! Entry point: [`run`]. It never reads files; kernels come through
//! [`crate::trace::KernelSource`] and the GPU through [`crate::arch::GpuSpec`].

pub mod config;
pub mod footprint;
pub mod memsys;
pub mod ops;
mod ring;
pub mod sim;
pub mod sm;
pub mod stats;

pub use config::{
    Action, AppPlacement, AppSpec, AppView, Controller, DispatchOrder, FastForward, Handover, Hook,
    Migration, NoControl, Persistent, Placement, RunConfig, RunMode, View, MAX_CYCLES,
};
pub use sim::run;
pub use stats::{
    AppStats, Counters, FfJump, FfStats, KernelStats, Rates, RunStats, StallStack, SCHEMA_VERSION,
};

/// Runs `apps` on `spec` with a static placement and no controller.
pub fn run_static(
    spec: &crate::arch::GpuSpec,
    apps: &[AppSpec],
    cfg: &RunConfig,
) -> crate::Result<RunStats> {
    run(spec, apps, cfg, &mut NoControl)
}
