//! CUDA MPS with its controls and green contexts: the SM limits operators set today.
//!
//! This module owns `mps` (Left-Over, the hardware's concurrent dispatch, by default; with
//! `active_thread_percentage` each client's kernels are confined to `p% × SMs` SMs,
//! rounded as the hardware does, see [`sm_limit`]), `mps-partition` (static SM partitions, counts per client) and
//! `green-context` (SM partitions inside one process, with the per-architecture minimum
//! and alignment of `cuDevSmResourceSplitByCount`). Memory is shared under all three: MPS
//! and green contexts partition SMs only (sources in models/CALIBRATION.md, "MPS and green
//! contexts").

use crate::policy::NotApplicable;
use crate::policy::ParamError;
use serde::{Deserialize, Serialize};

use super::baseline::{Baseline, Kind};
use super::{Plan, Policy, Workload};
use crate::engine::{AppPlacement, NoControl, Placement};
use crate::error::{Error, Result};

/// One value for every client, or one per client in listing order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PerClient {
    One(u32),
    Each(Vec<u32>),
}

impl PerClient {
    /// The value of each of `n` clients.
    fn expand(&self, n: usize, key: &str) -> std::result::Result<Vec<u32>, String> {
        match self {
            PerClient::One(v) => Ok(vec![*v; n]),
            PerClient::Each(v) if v.len() == n => Ok(v.clone()),
            PerClient::Each(v) => Err(format!(
                "{key} lists {} value(s) for {n} application(s) (give one per application, or a single value)",
                v.len()
            )),
        }
    }
    fn values(&self) -> Vec<u32> {
        match self {
            PerClient::One(v) => vec![*v],
            PerClient::Each(v) => v.clone(),
        }
    }
}

/// `mps`'s parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MpsParams {
    /// `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` of each client, 1–100 (100: no limit).
    pub active_thread_percentage: PerClient,
}

impl Default for MpsParams {
    fn default() -> Self {
        MpsParams {
            active_thread_percentage: PerClient::One(100),
        }
    }
}

impl super::Params for MpsParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        let p = &self.active_thread_percentage;
        match p.values().into_iter().find(|&v| v == 0 || v > 100) {
            Some(v) => Err(ParamError(format!(
                "active_thread_percentage must be 1 to 100, got {v}"
            ))),
            None if p.values().is_empty() => Err(ParamError(
                "active_thread_percentage is an empty list".into(),
            )),
            None => Ok(()),
        }
    }
}

/// The SM limit an active thread percentage gives on a GPU of `nsm` SMs of compute
/// capability `cc`: `p × nsm / 100` rounded down to the architecture's granularity, at
/// least its minimum ([`mps_granularity`]); 100% is the whole GPU.
pub fn sm_limit(pct: u32, nsm: u32, cc: Option<(u32, u32)>) -> u32 {
    if pct >= 100 {
        return nsm;
    }
    let (min, align) = mps_granularity(cc);
    let raw = pct as u64 * nsm as u64 / 100;
    let aligned = raw / align as u64 * align as u64;
    (aligned as u32).max(min).min(nsm).max(1)
}

/// (minimum SMs, multiple of) of an MPS client's SM limit. Compute capability 9.0 was
/// measured on an H200 (reports/production/hw: 1% and 5% give 8 SMs, 25% 32, 30% 38,
/// 75% 98 of 132): pairs of SMs (TPCs), at least 8. Other architectures since 7.0 are
/// assumed to round to TPCs with their green-context minimum; older or unknown ones use
/// the plain floor (at least one SM).
pub fn mps_granularity(cc: Option<(u32, u32)>) -> (u32, u32) {
    match cc {
        Some((9.., _)) => (8, 2),
        Some(c @ (7..=8, _)) => (green_granularity(c).map_or(1, |g| g.0), 2),
        _ => (1, 1),
    }
}

/// Contiguous SM blocks of `counts`, each starting where the previous one ended and
/// wrapping around the GPU: disjoint while the counts fit, overlapping once they do not.
pub fn wrapped_masks(nsm: usize, counts: &[u32]) -> Vec<Vec<bool>> {
    let mut at = 0usize;
    counts
        .iter()
        .map(|&c| {
            let mut m = vec![false; nsm];
            for k in 0..(c as usize).min(nsm) {
                m[(at + k) % nsm] = true;
            }
            at = (at + c as usize) % nsm.max(1);
            m
        })
        .collect()
}

/// A static plan: application `a` confined to `masks[a]`, memory shared, nothing changes
/// at run time (a client's limit stays when another finishes).
fn masked_plan(label: String, masks: Vec<Vec<bool>>) -> Plan {
    let mut p = Placement::left_over(masks.len());
    for (ap, m) in p.apps.iter_mut().zip(masks) {
        *ap = AppPlacement {
            sms: Some(m),
            ..AppPlacement::default()
        };
    }
    Plan {
        apps: None,
        label,
        ctas: None,
        placement: p,
        control: Box::new(NoControl),
    }
}

fn sm_label(counts: &[u32]) -> String {
    format!(
        "({})",
        counts
            .iter()
            .map(|c| format!("{c}sm"))
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// CUDA MPS. Without limits (every client at 100%) it is Left-Over exactly; with limits
/// each client's kernels run on its own block of `sm_limit` SMs, blocks laid out one after
/// another (disjoint while the percentages sum to at most 100, overlapping beyond), and
/// clients dispatch concurrently (each has its own work queues; on shared SMs the one
/// that arrived first fills first).
pub struct Mps(pub MpsParams);

impl Mps {
    fn counts(&self, w: &Workload) -> std::result::Result<Option<Vec<u32>>, String> {
        let pct = self
            .0
            .active_thread_percentage
            .expand(w.apps.len(), "active_thread_percentage")?;
        if pct.iter().all(|&x| x == 100) {
            return Ok(None);
        }
        Ok(Some(
            pct.iter()
                .map(|&x| sm_limit(x, w.spec.sm.count, compute_capability(&w.spec.name)))
                .collect(),
        ))
    }
}

impl Policy for Mps {
    fn name(&self) -> String {
        "mps".into()
    }
    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.counts(w).map(|_| ()).map_err(NotApplicable)
    }
    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        match self
            .counts(w)
            .map_err(|e| Error::Usage(format!("mps: {e}")))?
        {
            None => Baseline(Kind::LeftOver).plans(w),
            Some(c) => Ok(vec![masked_plan(sm_label(&c), wrapped_masks(w.sms(), &c))]),
        }
    }
}

/// `mps-partition`'s parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MpsPartitionParams {
    /// SMs of each client (one value: every client), in listing order; an empty list:
    /// not given (a run asks for it).
    pub sms: PerClient,
}

impl Default for MpsPartitionParams {
    fn default() -> Self {
        MpsPartitionParams {
            sms: PerClient::Each(Vec::new()),
        }
    }
}

impl super::Params for MpsPartitionParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        check_sms(&self.sms).map_err(ParamError)
    }
}

/// `green-context`'s parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GreenParams {
    /// SMs of each application's green context (one value: every application), in
    /// listing order; an empty list: not given (a run asks for it).
    pub sms: PerClient,
    /// Compute capability whose granularity applies (`9.0`); empty: the bundled model's
    /// ([`compute_capability`]).
    pub compute_capability: String,
}

impl Default for GreenParams {
    fn default() -> Self {
        GreenParams {
            sms: PerClient::Each(Vec::new()),
            compute_capability: String::new(),
        }
    }
}

impl super::Params for GreenParams {
    fn check(&self) -> std::result::Result<(), ParamError> {
        if !self.compute_capability.is_empty() {
            parse_cc(&self.compute_capability)?;
        }
        check_sms(&self.sms).map_err(ParamError)
    }
}

fn check_sms(sms: &PerClient) -> std::result::Result<(), String> {
    if sms.values().contains(&0) {
        return Err("sms: a partition of 0 SMs".into());
    }
    Ok(())
}

/// `8.6` → (8, 6).
fn parse_cc(s: &str) -> std::result::Result<(u32, u32), String> {
    let bad = || format!("compute_capability `{s}`: expected MAJOR.MINOR such as 9.0");
    let (a, b) = s.trim().split_once('.').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

/// The compute capability of a bundled model (green contexts need it); `None` for models
/// that do not name a product with one.
pub fn compute_capability(model: &str) -> Option<(u32, u32)> {
    Some(match model {
        "a100" => (8, 0),
        "h100" => (9, 0),
        "qv100" => (7, 0),
        "rtx3070" => (8, 6),
        "titanxp" => (6, 1),
        "k40c" => (3, 5),
        "fermi-ws" => (2, 0),
        _ => return None,
    })
}

/// Green-context SM group granularity of compute capability `cc`: (minimum SMs, multiple
/// of), per the CUDA driver API's guideline for `cuDevSmResourceSplitByCount`; `None`
/// below 6.0 (no green contexts).
pub fn green_granularity(cc: (u32, u32)) -> Option<(u32, u32)> {
    match cc.0 {
        0..=5 => None,
        6 => Some((1, 1)),
        7 => Some((2, 2)),
        8 => Some((4, 2)),
        _ => Some((8, 8)),
    }
}

/// Which static partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind2 {
    MpsPartition,
    GreenContext,
}

/// `mps-partition` / `green-context`: application `a` gets `sms[a]` SMs of its own,
/// contiguous blocks in listing order; SMs left over stay idle. Memory is shared.
pub struct Partition {
    pub kind: Kind2,
    pub sms: PerClient,
    /// `green-context.compute_capability` (empty: the model's).
    pub cc: String,
}

impl Partition {
    fn counts(&self, w: &Workload) -> std::result::Result<Vec<u32>, String> {
        let name = self.name();
        if self.sms.values().is_empty() {
            return Err(format!(
                "{name}.sms is not given (SMs per application, e.g. {name}.sms=[64,64])"
            ));
        }
        let sms = self.sms.expand(w.apps.len(), "sms")?;
        let total: u32 = sms.iter().sum();
        if total > w.spec.sm.count {
            return Err(format!(
                "rule: the partitions hold {total} SMs, {} has {}",
                w.spec.name, w.spec.sm.count
            ));
        }
        if self.kind == Kind2::GreenContext {
            let cc = match self.cc.as_str() {
                "" => compute_capability(&w.spec.name).ok_or_else(|| {
                    format!(
                        "model {} has no known compute capability; give green-context.compute_capability",
                        w.spec.name
                    )
                })?,
                s => parse_cc(s)?,
            };
            let (min, align) = green_granularity(cc).ok_or_else(|| {
                format!(
                    "rule: compute capability {}.{} has no green contexts (6.0 and later)",
                    cc.0, cc.1
                )
            })?;
            if let Some(&bad) = sms.iter().find(|&&s| s < min || s % align != 0) {
                return Err(format!(
                    "rule: on compute capability {}.{} a green context's SM group holds at least {min} SMs in multiples of {align}; got {bad}",
                    cc.0, cc.1
                ));
            }
        }
        Ok(sms)
    }
}

impl Policy for Partition {
    fn name(&self) -> String {
        match self.kind {
            Kind2::MpsPartition => "mps-partition",
            Kind2::GreenContext => "green-context",
        }
        .into()
    }
    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.counts(w).map(|_| ()).map_err(NotApplicable)
    }
    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let c = self
            .counts(w)
            .map_err(|e| Error::Usage(format!("{}: {e}", self.name())))?;
        Ok(vec![masked_plan(sm_label(&c), wrapped_masks(w.sms(), &c))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_masks() {
        // Measured on an H200 (132 SMs, cc 9.0): reports/production/hw/h200/mps.txt.
        let h = Some((9, 0));
        let measured = [
            (100, 132),
            (75, 98),
            (70, 92),
            (50, 66),
            (30, 38),
            (25, 32),
            (10, 12),
            (5, 8),
            (1, 8),
        ];
        for (p, sms) in measured {
            assert_eq!(sm_limit(p, 132, h), sms, "{p}%");
        }
        assert_eq!(sm_limit(33, 108, Some((8, 0))), 34);
        assert_eq!(sm_limit(1, 108, Some((8, 0))), 4);
        assert_eq!(sm_limit(1, 16, None), 1);
        assert_eq!(sm_limit(33, 15, None), 4);
        let m = wrapped_masks(10, &[6, 6]);
        assert_eq!(m[0].iter().filter(|&&x| x).count(), 6);
        assert!(m[1][0] && m[1][1] && m[1][9] && !m[1][2]);
        assert_eq!(green_granularity((9, 0)), Some((8, 8)));
        assert_eq!(green_granularity((8, 6)), Some((4, 2)));
        assert_eq!(green_granularity((5, 2)), None);
    }
}
