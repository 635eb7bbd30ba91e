//! The baselines of Warped-Slicer §III/§V: Left-Over (hardware default), FCFS (interleaved
//! contiguous allocation, Fig. 2a), Even (each of K kernels gets 1/K of every SM resource,
//! Fig. 2c) and Spatial (SMs split equally). A fixed CTA combination per SM (the oracle's
//! candidates) shares their controller: when an application finishes, the survivors take
//! over what it held (Warped-Slicer §V: "its assigned GPU resources are released").

use super::{label, spatial_masks, Plan, Policy, PolicyControl, Workload};
use crate::engine::{
    Action, AppPlacement, Controller, DispatchOrder, Handover, Hook, Placement, View,
};
use crate::error::{Error, Result};
use crate::policy::NotApplicable;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LeftOver,
    Fcfs,
    Even,
    Spatial,
    /// Kernels take turns placing CTAs, nothing reserved (`run --share round-robin`).
    RoundRobin,
}

pub struct Baseline(pub Kind);

impl Policy for Baseline {
    fn name(&self) -> String {
        match self.0 {
            Kind::LeftOver => "left-over",
            Kind::Fcfs => "fcfs",
            Kind::Even => "even",
            Kind::Spatial => "spatial",
            Kind::RoundRobin => "round-robin",
        }
        .into()
    }

    /// Even cannot run a workload in which one CTA of some application does not fit in
    /// its 1/n of an SM (`--policies all` skips it there).
    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        match self.0 {
            Kind::Even => even_split(w)
                .map(|_| ())
                .map_err(|e| NotApplicable(e.to_string())),
            _ => Ok(()),
        }
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let n = w.apps.len();
        let mut p = Placement::left_over(n);
        let (label_, ctas) = match self.0 {
            Kind::LeftOver => {
                // In arrival order: only the first to arrive may place CTAs at first.
                let order = arrival_order(w);
                for &a in order.iter().skip(1) {
                    p.apps[a].sms = Some(vec![false; w.sms()]);
                }
                return Ok(vec![Plan {
                    apps: None,
                    label: "shared".into(),
                    ctas: None,
                    placement: p,
                    control: Box::new(InOrder {
                        order,
                        open: 1.min(n),
                    }),
                }]);
            }
            Kind::Fcfs => {
                p.order = DispatchOrder::RoundRobin;
                p.contiguous = true;
                ("fcfs".to_string(), None)
            }
            Kind::RoundRobin => {
                p.order = DispatchOrder::RoundRobin;
                ("shared".to_string(), None)
            }
            Kind::Even => {
                p.order = DispatchOrder::RoundRobin;
                let ctas = even_split(w)?;
                for a in &mut p.apps {
                    a.fraction = Some(1.0 / n as f64);
                }
                (label(&ctas), Some(ctas))
            }
            Kind::Spatial => {
                let order = w.canonical();
                for (a, m) in p.apps.iter_mut().zip(spatial_masks(w.sms(), n, &order)) {
                    a.sms = Some(m);
                }
                ("spatial".to_string(), None)
            }
        };
        Ok(vec![Plan {
            apps: None,
            label: label_,
            ctas,
            placement: p,
            control: Box::new(Survivors::new(self.0.into(), w.canonical(), w.sms())),
        }])
    }
}

/// Even's CTAs per SM of each application: as many as fit in its 1/n of an SM (an error
/// when one CTA does not).
fn even_split(w: &Workload) -> Result<Vec<u32>> {
    let n = w.apps.len();
    let cap = w.cap();
    let ctas: Vec<u32> = w
        .shapes()?
        .iter()
        .map(|s| even_ctas(&s.need, &cap, n).min(s.max_ctas))
        .collect();
    if let Some(i) = ctas.iter().position(|&c| c == 0) {
        return Err(Error::Usage(format!(
            "even: one CTA of {} does not fit in 1/{n} of an SM of {}",
            w.apps[i].name, w.spec.name
        )));
    }
    Ok(ctas)
}

/// Fixed SM blocks chosen by the caller (Punyala's Profile-based baseline gives each
/// application its profiled SM count): `masks[i]` are application i's SMs; when an
/// application finishes, the survivors re-split the SMs equally, as under Spatial.
pub struct Blocks {
    pub name: String,
    pub masks: Vec<Vec<bool>>,
}

impl Policy for Blocks {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let n = w.apps.len();
        if self.masks.len() != n || self.masks.iter().any(|m| m.len() != w.sms()) {
            return Err(Error::Usage(format!(
                "{}: need one mask of {} SMs per application ({} applications)",
                self.name,
                w.sms(),
                n
            )));
        }
        if let Some(i) = self.masks.iter().position(|m| !m.iter().any(|&x| x)) {
            return Err(Error::Usage(format!(
                "{}: application {} gets no SM",
                self.name, w.apps[i].name
            )));
        }
        let mut p = Placement::left_over(n);
        for (a, m) in p.apps.iter_mut().zip(&self.masks) {
            a.sms = Some(m.clone());
        }
        let counts: Vec<u32> = self
            .masks
            .iter()
            .map(|m| m.iter().filter(|&&x| x).count() as u32)
            .collect();
        Ok(vec![Plan {
            apps: None,
            label: format!("sms {}", label(&counts)),
            ctas: None,
            placement: p,
            control: Box::new(Survivors::new(Reshare::Spatial, w.canonical(), w.sms())),
        }])
    }
}

/// Another name for a policy (`mps` is Left-Over: the hardware's concurrent dispatch of
/// untransformed kernels, as under CUDA MPS).
pub struct Alias {
    pub name: &'static str,
    pub of: Box<dyn Policy>,
}

impl Policy for Alias {
    fn name(&self) -> String {
        self.name.into()
    }
    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        self.of.plans(w)
    }
    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.of.applies(w)
    }
}

/// Fixed per-application SM counts ([`super::SmCountsParams`]): contiguous blocks in
/// listing order, scaled down in proportion when they exceed the GPU; as [`Blocks`]
/// afterwards.
pub struct SmCounts(pub super::SmCountsParams);

impl Policy for SmCounts {
    fn name(&self) -> String {
        self.0.label.clone().unwrap_or_else(|| "sm-counts".into())
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let nsm = w.sms();
        for (n, &c) in &self.0.sms {
            if c == 0 || c as usize > nsm {
                return Err(Error::Usage(format!(
                    "sm-counts: application {n} is given {c} SMs; expected 1 to {nsm}"
                )));
            }
        }
        let counts: Vec<u32> = w
            .apps
            .iter()
            .map(|a| self.0.sms.get(&a.name).copied().unwrap_or(nsm as u32))
            .collect();
        Blocks {
            name: self.name(),
            masks: block_masks(nsm, &counts),
        }
        .plans(w)
    }
}

/// SM masks for a group: contiguous blocks of `counts[i]` SMs, scaled in proportion (at
/// least one each) when they do not fit; SMs left over go to the last application.
pub fn block_masks(nsm: usize, counts: &[u32]) -> Vec<Vec<bool>> {
    let total: u64 = counts.iter().map(|&c| c.max(1) as u64).sum();
    let scaled: Vec<usize> = if total as usize <= nsm {
        counts.iter().map(|&c| c.max(1) as usize).collect()
    } else {
        counts
            .iter()
            .map(|&c| ((c.max(1) as u64 * nsm as u64 / total) as usize).max(1))
            .collect()
    };
    let mut masks = Vec::with_capacity(counts.len());
    let mut at = 0;
    for (i, &n) in scaled.iter().enumerate() {
        let end = if i + 1 == scaled.len() {
            nsm
        } else {
            (at + n).min(nsm)
        };
        masks.push((0..nsm).map(|s| s >= at && s < end).collect());
        at = end;
    }
    masks
}

/// The applications in the order they arrive (listing order among equal arrival times):
/// the order in which the hardware serves their kernels.
pub fn arrival_order(w: &Workload) -> Vec<usize> {
    let mut order: Vec<usize> = (0..w.apps.len()).collect();
    order.sort_by_key(|&i| (w.apps[i].arrival, i));
    order
}

/// Left-Over as hardware and Warped-Slicer §III/§V define it: kernels are served in the
/// order they arrive; a later application places CTAs — into whatever the earlier ones
/// leave — only once every earlier application has dispatched all the CTAs of its running
/// kernel (or finished). "The second application will not start execution until after the
/// first application is done with issuing all of its CTAs." The order is the arrival
/// order, never the listing order: an application listed first that arrives later waits
/// for the ones already running, and one that arrived waits for no one who has not.
pub struct InOrder {
    /// The applications in arrival order ([`arrival_order`]).
    order: Vec<usize>,
    /// Applications `order[..open]` may place CTAs.
    open: usize,
}

impl Controller for InOrder {
    /// Its only action opens the SMs to the next application in order; launch-level
    /// jumps are made only while every other application is done.
    fn launches_passive(&self) -> bool {
        true
    }
    fn on_hook(&mut self, _: Hook, view: &View, actions: &mut Vec<Action>) {
        while self.open < self.order.len() {
            let head = &view.apps[self.order[self.open - 1]];
            // The head is the latest to arrive of the open ones: it has arrived by the
            // time any later one does, and the hook of its arrival comes back here.
            let issued_all = head.done || (head.kernel.is_some() && head.blocks_left == 0);
            if !issued_all {
                return;
            }
            let next = self.order[self.open];
            actions.push(Action::SetSms {
                app: next,
                sms: vec![true; view.apps[next].sms.len()],
                handover: Handover::Drain,
            });
            self.open += 1;
        }
    }
}

impl PolicyControl for InOrder {}

/// CTAs of a kernel that fit in `1/k` of an SM (the engine's fraction rule: every resource
/// limit scaled by `1/k`, rounded down).
pub fn even_ctas(need: &super::Need, cap: &super::Need, k: usize) -> u32 {
    (0..5)
        .filter(|&r| need[r] > 0)
        .map(|r| ((cap[r] as f64 / k as f64).floor() as u64 / need[r]) as u32)
        .min()
        .unwrap_or(0)
}

/// How the survivors re-share when an application finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reshare {
    /// Nothing is constrained (Left-Over, FCFS).
    Nothing,
    /// Fractions become 1/(live apps).
    Even,
    /// SMs are re-split among the live apps.
    Spatial,
    /// Fixed quotas stay while two or more apps live; the last one gets everything.
    Quotas,
}

impl From<Kind> for Reshare {
    fn from(k: Kind) -> Reshare {
        match k {
            Kind::LeftOver | Kind::Fcfs | Kind::RoundRobin => Reshare::Nothing,
            Kind::Even => Reshare::Even,
            Kind::Spatial => Reshare::Spatial,
        }
    }
}

/// Controller of a static placement: re-shares when an application finishes.
pub struct Survivors {
    how: Reshare,
    done: Vec<bool>,
    /// The applications in the order SM blocks are handed out ([`super::canonical_order`]).
    order: Vec<usize>,
    nsm: usize,
}

impl Survivors {
    pub fn new(how: Reshare, order: Vec<usize>, nsm: usize) -> Survivors {
        Survivors {
            how,
            done: vec![false; order.len()],
            order,
            nsm,
        }
    }
}

/// Actions that hand everything to the live applications: all SMs, no quota, no fraction.
pub fn release_all(view: &View, actions: &mut Vec<Action>) {
    for (a, v) in view.apps.iter().enumerate() {
        if v.done {
            continue;
        }
        if v.sms.iter().any(|s| !s) {
            actions.push(Action::SetSms {
                app: a,
                sms: vec![true; v.sms.len()],
                handover: Handover::Drain,
            });
        }
        actions.push(Action::SetQuota {
            app: a,
            quota: None,
        });
        actions.push(Action::SetFraction {
            app: a,
            fraction: None,
        });
    }
}

impl Controller for Survivors {
    /// It acts when an application finishes, never on a lone application's relaunches.
    fn launches_passive(&self) -> bool {
        true
    }
    fn on_hook(&mut self, _: Hook, view: &View, actions: &mut Vec<Action>) {
        let now_done: Vec<bool> = view.apps.iter().map(|a| a.done).collect();
        if now_done == self.done || self.how == Reshare::Nothing {
            self.done = now_done;
            return;
        }
        self.done = now_done;
        let live: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&a| !self.done[a])
            .collect();
        if live.len() <= 1 {
            release_all(view, actions);
            return;
        }
        match self.how {
            Reshare::Even => {
                for &a in &live {
                    actions.push(Action::SetFraction {
                        app: a,
                        fraction: Some(1.0 / live.len() as f64),
                    });
                }
            }
            Reshare::Spatial => {
                let m = spatial_masks(self.nsm, view.apps.len(), &live);
                for &a in &live {
                    actions.push(Action::SetSms {
                        app: a,
                        sms: m[a].clone(),
                        handover: Handover::Drain,
                    });
                }
            }
            Reshare::Nothing | Reshare::Quotas => {}
        }
    }
}

impl PolicyControl for Survivors {}

/// Placement of a fixed CTA combination on every SM.
pub fn combo_placement(ctas: &[u32], nsm: usize) -> Placement {
    let mut p = Placement::left_over(ctas.len());
    p.order = DispatchOrder::RoundRobin;
    p.apps = ctas
        .iter()
        .map(|&t| AppPlacement {
            cta_quota: Some(vec![t; nsm]),
            ..AppPlacement::default()
        })
        .collect();
    p
}
