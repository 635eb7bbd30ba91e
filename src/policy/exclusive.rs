//! Whole-GPU baselines: one application owns every SM at a time. `time-slice` is CUDA's
//! default across processes (seed 002 §4.4, seed 003 "vanilla CUDA"): contexts alternate
//! every `reconfig.time_slice`, a switch saving and restoring the resident CTAs' context
//! through the memory system. `sequential` runs the applications one after another in
//! arrival order (SiM's sequential baseline, the denominator of its makespan measure).

use super::{Plan, Policy, PolicyControl, Workload};
use crate::engine::{Action, Controller, Handover, Hook, Placement, View};
use crate::error::Result;

/// Time slicing between applications (the engine's context switching).
pub struct TimeSlice;

impl Policy for TimeSlice {
    fn name(&self) -> String {
        "time-slice".into()
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let mut p = Placement::left_over(w.apps.len());
        p.time_slicing = true;
        p.spread_alone = false;
        Ok(vec![Plan {
            apps: None,
            label: "time-slice".into(),
            ctas: None,
            placement: p,
            control: Box::new(crate::engine::NoControl),
        }])
    }
}

/// One application at a time, in arrival order (listing order on ties), each on the whole
/// GPU; the next starts when the previous one finished (or reached its budget).
pub struct Sequential;

impl Policy for Sequential {
    fn name(&self) -> String {
        "sequential".into()
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let n = w.apps.len();
        let order = super::baseline::arrival_order(w);
        let mut p = Placement::left_over(n);
        for (i, a) in p.apps.iter_mut().enumerate() {
            if i != order[0] {
                a.sms = Some(vec![false; w.sms()]);
            }
        }
        Ok(vec![Plan {
            apps: None,
            label: "sequential".into(),
            ctas: None,
            placement: p,
            control: Box::new(InTurn {
                order,
                at: 0,
                log: Vec::new(),
            }),
        }])
    }
}

/// Hands the whole GPU to the next application in `order` once the current one is done.
struct InTurn {
    order: Vec<usize>,
    at: usize,
    log: Vec<String>,
}

impl Controller for InTurn {
    fn on_hook(&mut self, _: Hook, view: &View, actions: &mut Vec<Action>) {
        let before = self.at;
        while self.at < self.order.len() && view.apps[self.order[self.at]].done {
            self.at += 1;
        }
        if self.at != before && self.at < self.order.len() {
            let app = self.order[self.at];
            self.log
                .push(format!("{}: application {app} takes the GPU", view.now));
            actions.push(Action::SetSms {
                app,
                sms: vec![true; view.apps[app].sms.len()],
                handover: Handover::Drain,
            });
        }
    }
}

impl PolicyControl for InTurn {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}
