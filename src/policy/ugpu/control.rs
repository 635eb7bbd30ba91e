//! The run-time side of UGPU and BP (CD-Search): epoch profiling, the decision, and the
//! reallocation actions (SMs by draining or context switch, channels by page migration).

use super::distribute::{distribute, latency, Decision, DemandIpc, Hardware, Profile, Rules};
use super::slices::{label, Geometry, Layout, Slice};
use crate::engine::{Action, Controller, Counters, Handover, Hook, Migration, View};
use crate::policy::PolicyControl;

/// Sample id of a decision taking effect after the decision unit's latency.
const APPLY: u32 = 0x0u32.wrapping_sub(0x55);

/// State every slice controller keeps: the layout, the counters at the last epoch and
/// what is applied how.
pub struct Slicer {
    pub geom: Geometry,
    pub layout: Layout,
    pub migration: Migration,
    pub names: Vec<String>,
    pub log: Vec<String>,
    last: Vec<Counters>,
    last_t: u64,
    /// Each application's profile over the last epoch.
    pub profiles: Vec<Profile>,
    done: Vec<bool>,
    /// Epochs whose decision changed the partition.
    pub reallocations: u32,
}

impl Slicer {
    pub fn new(geom: Geometry, layout: Layout, migration: Migration, names: Vec<String>) -> Slicer {
        let n = names.len();
        Slicer {
            geom,
            layout,
            migration,
            names,
            log: Vec::new(),
            last: vec![Counters::default(); n],
            last_t: 0,
            profiles: vec![Profile::default(); n],
            done: vec![false; n],
            reallocations: 0,
        }
    }

    /// Closes an epoch: every application's profile since the last one.
    pub fn measure(&mut self, view: &View) {
        let cycles = view.now.saturating_sub(self.last_t);
        let slices = self.layout.slices();
        for (a, v) in view.apps.iter().enumerate() {
            self.profiles[a] = Profile::between(&self.last[a], &v.counters, cycles, slices[a].sms);
            self.last[a] = v.counters.clone();
        }
        self.last_t = view.now;
    }

    pub fn start(&mut self, view: &View) {
        for (a, v) in view.apps.iter().enumerate() {
            self.last[a] = v.counters.clone();
        }
        self.last_t = view.now;
    }

    /// §3.3: an SM is drained when its resident thread blocks finish within an epoch, else
    /// switched. By Little's law a block's mean residency is resident blocks / completion
    /// rate, so draining is the choice iff the blocks resident now are no more than those
    /// the application completed over the last epoch.
    fn handover(&self, a: usize, view: &View) -> Handover {
        let resident: u64 = view.apps[a].ctas.iter().map(|&c| c as u64).sum();
        if resident <= self.profiles[a].ctas_done {
            Handover::Drain
        } else {
            Handover::Switch
        }
    }

    /// Applications that finished since the last call.
    pub fn newly_done(&mut self, view: &View) -> Vec<usize> {
        let mut out = Vec::new();
        for (a, v) in view.apps.iter().enumerate() {
            if v.done && !self.done[a] {
                self.done[a] = true;
                out.push(a);
            }
        }
        out
    }

    pub fn live(&self) -> Vec<bool> {
        self.done.iter().map(|d| !d).collect()
    }

    /// The slices with every finished application's SMs and indices shared out among the
    /// live ones, round robin in `order`.
    pub fn without_done(&self, order: &[usize]) -> Vec<Slice> {
        self.reassign_done(self.layout.slices(), order)
    }

    /// `s` with every finished application's SMs and indices shared out among the live
    /// ones, round robin in `order`.
    pub fn reassign_done(&self, mut s: Vec<Slice>, order: &[usize]) -> Vec<Slice> {
        let live: Vec<usize> = order.iter().copied().filter(|&a| !self.done[a]).collect();
        if live.is_empty() {
            return s;
        }
        let (mut sms, mut idx) = (0, 0);
        for (x, &done) in s.iter_mut().zip(&self.done) {
            if done {
                sms += x.sms;
                idx += x.indices;
                *x = Slice::default();
            }
        }
        for k in 0..sms {
            s[live[k as usize % live.len()]].sms += 1;
        }
        for k in 0..idx {
            s[live[k as usize % live.len()]].indices += 1;
        }
        s
    }

    /// Moves to `target`: SM masks first (a shrinking slice drains or switches), then the
    /// channels (slices losing indices first, so their pages leave before the gainers
    /// rebalance onto them).
    pub fn apply(&mut self, target: &[Slice], view: &View, actions: &mut Vec<Action>) {
        let new = self.layout.resized(target);
        for a in 0..new.sms.len() {
            if new.sms[a] != self.layout.sms[a] {
                let loses = self.layout.sms[a]
                    .iter()
                    .zip(&new.sms[a])
                    .any(|(o, n)| *o && !*n);
                let handover = if loses && !self.done[a] {
                    self.handover(a, view)
                } else {
                    Handover::Drain
                };
                actions.push(Action::SetSms {
                    app: a,
                    sms: new.sms[a].clone(),
                    handover,
                });
            }
        }
        let mut order: Vec<usize> = (0..new.indices.len())
            .filter(|&a| !self.done[a] && new.indices[a] != self.layout.indices[a])
            .filter(|&a| !new.indices[a].is_empty())
            .collect();
        order.sort_by_key(|&a| new.indices[a].len() > self.layout.indices[a].len());
        for a in order {
            actions.push(Action::SetChannels {
                app: a,
                channels: new.channels(&self.geom, a),
                migration: self.migration,
            });
        }
        self.log.push(format!(
            "{}: {} -> {}",
            view.now,
            label(&self.geom, &self.layout.slices()),
            label(&self.geom, &new.slices())
        ));
        self.layout = new;
        self.reallocations += 1;
    }
}

/// `ugpu-qos`: the application whose progress is guarded, the target and its IPC alone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Qos {
    pub app: usize,
    pub target: f64,
    pub alone_ipc: f64,
}

/// How far above its target the guarded application must be before UGPU may take
/// resources from it (so one noisy epoch does not make it fall below).
const QOS_MARGIN: f64 = 1.1;

/// UGPU at run time: every epoch, eq. 1–2 from the epoch's profile, Fig. 5 from the current
/// partition, and the reallocation once the decision unit's latency has passed.
pub struct UgpuControl {
    pub s: Slicer,
    pub hw: Hardware,
    pub rules: Rules,
    pub ipc: DemandIpc,
    pub epoch: u64,
    /// Wait the decision unit's latency (§3.3) before reallocating.
    pub decision_latency: bool,
    pub order: Vec<usize>,
    /// Refuse a decision that returns to the partition the last reallocation left.
    pub hysteresis: bool,
    /// Skip the decision of an epoch in which pages migrated.
    pub settle: bool,
    pending: Option<Vec<Slice>>,
    /// The partition the last reallocation left.
    left: Option<Vec<Slice>>,
    /// `ugpu-qos`: the guarded application.
    pub qos: Option<Qos>,
}

impl UgpuControl {
    pub fn new(
        s: Slicer,
        hw: Hardware,
        rules: Rules,
        ipc: DemandIpc,
        epoch: u64,
        decision_latency: bool,
        order: Vec<usize>,
    ) -> UgpuControl {
        UgpuControl {
            s,
            hw,
            rules,
            ipc,
            epoch,
            decision_latency,
            order,
            hysteresis: true,
            settle: true,
            pending: None,
            left: None,
            qos: None,
        }
    }

    /// `ugpu-qos` below its target: one `delta` of what bounds the guarded application
    /// (SMs when eq. 1–2 call it compute-bound on its slice, channel indices when
    /// memory-bound, both without a profile) from the live application holding the most
    /// of it above the minimum. `None` when nothing can move.
    fn recover(&self, q: &Qos) -> Option<Vec<Slice>> {
        let mut t = self.s.layout.slices();
        let d = self.s.profiles[q.app].demand(&self.hw, self.ipc);
        let class = super::distribute::classify(d.as_ref(), &t[q.app], &self.s.geom);
        let (want_sms, want_idx) = match class {
            Some((true, _)) => (true, false),
            Some((false, _)) => (false, true),
            None => (true, true),
        };
        let live = self.s.live();
        let donor = |key: fn(&Slice) -> u32, min: u32, t: &[Slice]| {
            (0..t.len())
                .filter(|&a| a != q.app && live[a] && key(&t[a]) > min)
                .max_by_key(|&a| (key(&t[a]), std::cmp::Reverse(a)))
        };
        let mut moved = false;
        if let Some(d) = donor(|s| s.sms, self.rules.min_sms, &t).filter(|_| want_sms) {
            let n = self.rules.delta_sms.min(t[d].sms - self.rules.min_sms);
            t[d].sms -= n;
            t[q.app].sms += n;
            moved |= n > 0;
        }
        if let Some(d) = donor(|s| s.indices, self.rules.min_indices, &t).filter(|_| want_idx) {
            let n = self
                .rules
                .delta_indices
                .min(t[d].indices - self.rules.min_indices);
            t[d].indices -= n;
            t[q.app].indices += n;
            moved |= n > 0;
        }
        moved.then_some(t)
    }

    fn decide(&mut self, view: &View) -> Decision {
        let live = self.s.live();
        let demands: Vec<_> = self
            .s
            .profiles
            .iter()
            .zip(&live)
            .map(|(p, &l)| {
                if l {
                    p.demand(&self.hw, self.ipc)
                } else {
                    None
                }
            })
            .collect();
        let d = distribute(&demands, &self.s.layout.slices(), &self.s.geom, &self.rules);
        let classes: Vec<String> = (0..demands.len())
            .map(|a| {
                let c = super::distribute::classify(
                    demands[a].as_ref(),
                    &self.s.layout.slices()[a],
                    &self.s.geom,
                );
                format!(
                    "{} {}",
                    self.s.names[a],
                    match c {
                        Some((true, g)) => format!("compute x{g:.2}"),
                        Some((false, g)) => format!("memory x{g:.2}"),
                        None => "idle".into(),
                    }
                )
            })
            .collect();
        self.s.log.push(format!(
            "{}: epoch: {}; {} iteration(s), {}",
            view.now,
            classes.join(", "),
            d.iterations,
            d.stop
        ));
        d
    }
}

impl Controller for UgpuControl {
    fn epoch(&self) -> Option<u64> {
        Some(self.epoch)
    }

    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        match hook {
            Hook::Start => self.s.start(view),
            Hook::Epoch => {
                self.s.measure(view);
                if self.pending.is_some() {
                    return;
                }
                let live = self.s.live();
                if self.settle
                    && (0..live.len()).any(|a| live[a] && self.s.profiles[a].migrating > 0)
                {
                    self.s
                        .log
                        .push(format!("{}: hold: pages still migrating", view.now));
                    return;
                }
                if let Some(q) = self.qos {
                    let p = &self.s.profiles[q.app];
                    let np = p.ipc() / q.alone_ipc.max(1e-12);
                    if np < q.target {
                        if let Some(t) = self.recover(&q) {
                            self.s.log.push(format!(
                                "{}: qos: {} at {np:.2} < {}: grows",
                                view.now, self.s.names[q.app], q.target
                            ));
                            self.left = Some(self.s.layout.slices());
                            self.s.apply(&t, view, actions);
                        }
                        return;
                    }
                    let d = self.decide(view);
                    let cur = self.s.layout.slices();
                    let shrinks = d.slices[q.app].sms < cur[q.app].sms
                        || d.slices[q.app].indices < cur[q.app].indices;
                    if shrinks && np < q.target * QOS_MARGIN {
                        self.s.log.push(format!(
                            "{}: qos: hold, {} at {np:.2} is too close to {} to give up resources",
                            view.now, self.s.names[q.app], q.target
                        ));
                        return;
                    }
                    return self.adopt(d, view, actions);
                }
                let d = self.decide(view);
                self.adopt(d, view, actions);
            }
            Hook::Sample { id } if id == APPLY => {
                if let Some(t) = self.pending.take() {
                    // An application that finished meanwhile keeps nothing (the departure
                    // already adapted the decision; this is a safeguard).
                    let t = self.s.reassign_done(t, &self.order);
                    if t != self.s.layout.slices() {
                        self.s.apply(&t, view, actions);
                    }
                }
            }
            Hook::KernelDeparture { .. } if !self.s.newly_done(view).is_empty() => {
                // UGPU decides every epoch among the applications co-executing then (§3.2,
                // Fig. 5; the paper's runs relaunch finished programs, so it never drops a
                // decision): the survivors keep being reallocated. A decision still
                // waiting for the decision unit's latency is adapted, not dropped: the
                // survivors' slices stay as decided and the finished application's share
                // is spread over them as its current one is now.
                if let Some(t) = self.pending.take() {
                    self.pending = Some(self.s.reassign_done(t, &self.order));
                }
                let t = self.s.without_done(&self.order);
                self.s.apply(&t, view, actions);
            }
            _ => {}
        }
    }
}

impl UgpuControl {
    /// Takes a decision: holds when nothing changes or (with hysteresis) when it undoes
    /// the last reallocation; otherwise reallocates, after the decision latency if set.
    fn adopt(&mut self, d: Decision, view: &View, actions: &mut Vec<Action>) {
        if d.slices == self.s.layout.slices() {
            return;
        }
        if self.hysteresis && self.left.as_ref() == Some(&d.slices) {
            self.s.log.push(format!(
                "{}: hold: {} would undo the last reallocation",
                view.now,
                label(&self.s.geom, &d.slices)
            ));
            return;
        }
        self.left = Some(self.s.layout.slices());
        if self.decision_latency {
            actions.push(Action::Sample {
                at: view.now + latency(d.iterations),
                id: APPLY,
            });
            self.pending = Some(d.slices);
        } else {
            self.s.apply(&d.slices, view, actions);
        }
    }
}

impl PolicyControl for UgpuControl {
    fn log(&self) -> Vec<String> {
        self.s.log.clone()
    }
    fn chosen(&self) -> Option<(String, Option<Vec<u32>>)> {
        Some((label(&self.s.geom, &self.s.layout.slices()), None))
    }
}

/// BP (CD-Search) (§6.4): the slices keep their channels; only SMs move between them, by
/// a coordinate search on measured throughput. The objective of an epoch is
/// `Σ IPC_i / IPC_i,BP`, each application's IPC against its IPC in the first epoch on the
/// balanced partition (the run-time stand-in for STP, whose alone IPCs a run does not
/// know). Each trial moves `step` SMs from one slice to another for one epoch; it is kept
/// when the objective improves on the best so far, else undone and the next (donor,
/// receiver) pair is tried; after a round of pairs with no improvement the search rests
/// until an application finishes.
pub struct CdSearchControl {
    pub s: Slicer,
    pub epoch: u64,
    pub step: u32,
    pub min_sms: u32,
    pub order: Vec<usize>,
    reference: Option<Vec<f64>>,
    best: f64,
    /// The partition kept, and the trial under way (its pair index).
    kept: Vec<Slice>,
    trial: Option<usize>,
    next_pair: usize,
    failures: usize,
    resting: bool,
}

impl CdSearchControl {
    pub fn new(s: Slicer, epoch: u64, step: u32, min_sms: u32, order: Vec<usize>) -> Self {
        let kept = s.layout.slices();
        CdSearchControl {
            s,
            epoch,
            step,
            min_sms,
            order,
            reference: None,
            best: 0.0,
            kept,
            trial: None,
            next_pair: 0,
            failures: 0,
            resting: false,
        }
    }

    fn pairs(&self) -> Vec<(usize, usize)> {
        let live: Vec<usize> = self
            .order
            .iter()
            .copied()
            .filter(|&a| self.s.live()[a])
            .collect();
        let mut out = Vec::new();
        for &d in &live {
            for &r in &live {
                if d != r {
                    out.push((d, r));
                }
            }
        }
        out
    }

    fn objective(&self) -> Option<f64> {
        let r = self.reference.as_ref()?;
        let live = self.s.live();
        Some(
            self.s
                .profiles
                .iter()
                .enumerate()
                .filter(|(a, _)| live[*a] && r[*a] > 0.0)
                .map(|(a, p)| p.ipc() / r[a])
                .sum(),
        )
    }

    /// Starts the next trial from the kept partition, if a pair can move.
    fn try_next(&mut self, view: &View, actions: &mut Vec<Action>) {
        let pairs = self.pairs();
        while self.failures < pairs.len() {
            let k = self.next_pair % pairs.len();
            self.next_pair += 1;
            let (d, r) = pairs[k];
            let n = self.step.min(self.kept[d].sms.saturating_sub(self.min_sms));
            if n == 0 {
                self.failures += 1;
                continue;
            }
            let mut t = self.kept.clone();
            t[d].sms -= n;
            t[r].sms += n;
            self.trial = Some(k);
            self.s.apply(&t, view, actions);
            return;
        }
        self.resting = true;
        self.s.log.push(format!(
            "{}: search rests at {}",
            view.now,
            label(&self.s.geom, &self.kept)
        ));
    }
}

impl Controller for CdSearchControl {
    fn epoch(&self) -> Option<u64> {
        Some(self.epoch)
    }

    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        match hook {
            Hook::Start => self.s.start(view),
            Hook::Epoch => {
                self.s.measure(view);
                if self.reference.is_none() {
                    self.reference = Some(self.s.profiles.iter().map(Profile::ipc).collect());
                    self.best = self.objective().unwrap_or(0.0);
                    self.try_next(view, actions);
                    return;
                }
                if self.resting {
                    return;
                }
                let obj = self.objective().unwrap_or(0.0);
                if self.trial.take().is_some() {
                    if obj > self.best {
                        self.best = obj;
                        self.kept = self.s.layout.slices();
                        self.failures = 0;
                        // Keep going the same way.
                        self.next_pair = self.next_pair.saturating_sub(1);
                    } else {
                        self.failures += 1;
                        let back = self.kept.clone();
                        self.s.apply(&back, view, actions);
                        // Measure the kept partition again before the next trial.
                        return;
                    }
                } else {
                    self.best = self.best.max(obj);
                }
                self.try_next(view, actions);
            }
            Hook::KernelDeparture { .. } if !self.s.newly_done(view).is_empty() => {
                let t = self.s.without_done(&self.order);
                self.s.apply(&t, view, actions);
                self.kept = t;
                self.trial = None;
                self.resting = self.pairs().is_empty();
                self.failures = 0;
                self.reference = None;
            }
            _ => {}
        }
    }
}

impl PolicyControl for CdSearchControl {
    fn log(&self) -> Vec<String> {
        self.s.log.clone()
    }
    fn chosen(&self) -> Option<(String, Option<Vec<u32>>)> {
        Some((label(&self.s.geom, &self.kept), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::AppView;

    fn view(ctas: &[u32]) -> View {
        View {
            now: 10_000,
            apps: vec![AppView {
                counters: Counters::default(),
                sms: vec![true; ctas.len()],
                ctas: ctas.to_vec(),
                sm_insts: vec![0; ctas.len()],
                kernel: Some(0),
                blocks_left: 10,
                blocks_total: 20,
                done: false,
            }],
        }
    }

    fn slicer() -> Slicer {
        let g = Geometry {
            sms: 4,
            indices: 2,
            stacks: 1,
        };
        let slices = vec![Slice { sms: 4, indices: 2 }];
        Slicer::new(
            g,
            Layout::contiguous(&g, &slices, &[0]),
            Migration::PageMove,
            vec!["a".into()],
        )
    }

    /// §3.3 by Little's law: drain when the resident blocks would finish within an epoch
    /// at the completion rate of the last one, else switch.
    #[test]
    fn drains_when_resident_blocks_finish_within_an_epoch() {
        let mut s = slicer();
        let v = view(&[3, 3, 2, 0]);
        s.profiles[0].ctas_done = 8;
        assert_eq!(s.handover(0, &v), Handover::Drain);
        s.profiles[0].ctas_done = 7;
        assert_eq!(s.handover(0, &v), Handover::Switch);
        // Nothing completed in the last epoch: the blocks may never finish.
        s.profiles[0].ctas_done = 0;
        assert_eq!(s.handover(0, &v), Handover::Switch);
        // No block resident: draining is free.
        assert_eq!(s.handover(0, &view(&[0, 0, 0, 0])), Handover::Drain);
    }

    #[test]
    fn a_shrinking_slice_uses_the_rule_and_channels_follow() {
        let g = Geometry {
            sms: 4,
            indices: 2,
            stacks: 2,
        };
        let slices = vec![Slice { sms: 2, indices: 1 }, Slice { sms: 2, indices: 1 }];
        let mut s = Slicer::new(
            g,
            Layout::contiguous(&g, &slices, &[0, 1]),
            Migration::Soft,
            vec!["a".into(), "b".into()],
        );
        let mut v = view(&[1, 1, 0, 0]);
        v.apps.push(v.apps[0].clone());
        s.profiles[0].ctas_done = 0; // a's blocks do not finish: switch
        let mut acts = Vec::new();
        let target = vec![Slice { sms: 1, indices: 2 }, Slice { sms: 3, indices: 0 }];
        s.apply(&target, &v, &mut acts);
        let sms: Vec<_> = acts
            .iter()
            .filter_map(|a| match a {
                Action::SetSms { app, handover, .. } => Some((*app, *handover)),
                _ => None,
            })
            .collect();
        assert_eq!(sms, vec![(0, Handover::Switch), (1, Handover::Drain)]);
        // b keeps no index here, so only a's channel set changes: both stacks' index 0
        // and 1.
        let ch: Vec<_> = acts
            .iter()
            .filter_map(|a| match a {
                Action::SetChannels {
                    app,
                    channels,
                    migration,
                } => Some((*app, channels.clone(), *migration)),
                _ => None,
            })
            .collect();
        assert_eq!(ch, vec![(0, vec![0, 1, 2, 3], Migration::Soft)]);
        assert_eq!(s.reallocations, 1);
        assert_eq!(s.log.len(), 1);
    }
}
