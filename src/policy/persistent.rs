//! `pt`: every application in persistent-thread form with no runtime service (SiM's PT
//! baseline, seed 002 §4.4): each kernel becomes as many worker CTAs per SM as fit, each
//! pulling tasks of `task_blocks` logical blocks through an atomic on a global counter,
//! with SiM's measured transformation overheads (§4.3: +23% registers, 8 B of shared
//! memory per CTA) as parameters; the workers are dispatched as hardware dispatches CTAs
//! (Left-Over). The time the transformation costs is simulated (the atomics through the
//! L2, the exit test), never added as a constant.

use crate::policy::NotApplicable;
use crate::policy::ParamError;
use serde::{Deserialize, Serialize};

use super::partition::Need;
use super::{Plan, Policy, Workload};
use crate::arch::{occupancy, GpuSpec, Launch};
use crate::engine::sm::Res;
use crate::engine::{AppSpec, Persistent, RunMode};
use crate::error::{Error, Result};

/// PT's parameters (defaults: SiM's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PtParams {
    /// Logical blocks per task (one `atomicAdd` each); SiM uses 1.
    pub task_blocks: u32,
    /// Registers per thread added by the transformation, percent (SiM §4.3: 23).
    pub extra_regs_pct: u32,
    /// Shared memory per worker CTA added by the transformation, bytes (SiM §4.3: 8).
    pub extra_shmem: u32,
}

impl Default for PtParams {
    fn default() -> PtParams {
        PtParams {
            task_blocks: 1,
            extra_regs_pct: 23,
            extra_shmem: 8,
        }
    }
}

impl super::Params for PtParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        if self.task_blocks == 0 {
            return Err(ParamError("task_blocks must be at least 1".into()));
        }
        if self.extra_regs_pct > 1000 {
            return Err(ParamError(format!(
                "extra_regs_pct {} is out of range (0 to 1000)",
                self.extra_regs_pct
            )));
        }
        Ok(())
    }
}

pub struct Pt(pub PtParams);

impl PtParams {
    fn persistent(&self) -> Persistent {
        Persistent {
            workers_per_sm: u32::MAX,
            task_blocks: self.task_blocks,
            extra_regs_pct: self.extra_regs_pct,
            extra_shmem: self.extra_shmem,
        }
    }
}

impl Pt {
    /// Every application transformed, or why `pt` cannot run this workload.
    fn transformed(&self, w: &Workload) -> std::result::Result<Vec<AppSpec>, String> {
        let why = "persistent threads are compared to their kernels run once (completion mode, --completion)";
        transform_all(w, &self.0, self.0.persistent(), "pt", why)
            .map(|v| v.into_iter().map(|(a, _)| a).collect())
    }
}

/// Every application of `w` in persistent-thread form with `p` (see [`transform`]), or why
/// policy `who` cannot run the workload: persistent kernels run once (not in completion
/// mode: `not_completion`, in the policy's words), `params` are invalid, or a kernel no
/// longer fits an SM with the overheads.
pub fn transform_all(
    w: &Workload,
    params: &dyn super::Params,
    p: Persistent,
    who: &str,
    not_completion: &str,
) -> std::result::Result<Vec<(AppSpec, Vec<Need>)>, String> {
    if w.mode != RunMode::Completion {
        return Err(not_completion.into());
    }
    params.check().map_err(|e| e.0)?;
    w.apps
        .iter()
        .map(|a| transform(w.spec, a, p, who).map_err(|e| e.to_string()))
        .collect()
}

/// `app` in persistent-thread form with `p`'s task size and overheads: workers per SM =
/// the fewest CTAs per SM any of its kernels allows once the overheads are added (what
/// `p.workers_per_sm` says is replaced). Also returns each kernel's worker footprint (the
/// SM resources one worker CTA holds, [`Need`] units). `who` names the policy in errors.
pub fn transform(
    spec: &GpuSpec,
    app: &AppSpec,
    mut p: Persistent,
    who: &str,
) -> Result<(AppSpec, Vec<Need>)> {
    p.workers_per_sm = u32::MAX;
    let mut needs = Vec::with_capacity(app.kernels.len());
    for k in &app.kernels {
        let info = k.info();
        let (regs, shmem) = p.footprint(info.nregs, info.shmem);
        let occ =
            occupancy(spec, &Launch::new(info.threads_per_cta(), regs, shmem)).map_err(|e| {
                Error::Usage(format!(
                    "{who}: kernel {} of {} cannot be made persistent on {}: {e}",
                    info.name, app.name, spec.name
                ))
            })?;
        p.workers_per_sm = p.workers_per_sm.min(occ.ctas_per_sm);
        needs.push(Res::of_cta(&occ, spec.sm.warp_size).to_array());
    }
    let mut a = app.clone();
    a.persistent = Some(p);
    Ok((a, needs))
}

impl Policy for Pt {
    fn name(&self) -> String {
        "pt".into()
    }

    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.transformed(w).map(|_| ()).map_err(NotApplicable)
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let apps = self
            .transformed(w)
            .map_err(|e| Error::Usage(format!("pt: {e}")))?;
        let mut plan = super::baseline::Baseline(super::baseline::Kind::LeftOver)
            .plans(w)?
            .remove(0);
        plan.apps = Some(apps);
        plan.label = "persistent".into();
        Ok(vec![plan])
    }
}
