//! `slate`: Slate (Allen, Feng & Ge, seed 003 §III). Every kernel runs as a 1-D grid of
//! persistent workers — as many per SM as its designated SMs hold — pulling tasks of
//! `task_blocks` logical blocks (default 10) through an atomic on `slateIdx`. A runtime
//! decides, from each kernel's profile, whether an arriving kernel co-runs with the running
//! one or waits (Table I), and binds each running kernel to a contiguous SM range:
//! - profile (Table II): compute intensity = achieved FP32 FLOP/s alone over the model's
//!   peak, memory intensity = global load + store throughput over the model's DRAM peak,
//!   each labelled L/M/H by two thresholds — the one classifier of
//!   [`crate::profile::class::slate`], whose defaults sit in the gaps between Table II's
//!   groups (the paper gives no numbers; the thresholds are parameters); memory has
//!   priority (§III-B.2): a kernel is L_C, M_C or H_C when its memory level is L, else
//!   M_M or H_M;
//! - selection (§III-B.1, Table I, row = the running kernel, column = the arriving one):
//!   "corun" shares the GPU, "solo" queues the newcomer until the GPU is free;
//! - SM split (not given by the paper): co-runners get equal contiguous ranges, the earlier
//!   arrival the low SMs; when one finishes the other grows to every SM and the next
//!   queued kernel is admitted (§III-C: shrink on arrival, grow on completion). A worker
//!   outside its range leaves at its next task boundary; `slateIdx` carries over.

use crate::policy::NotApplicable;
use crate::policy::ParamError;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::persistent::transform_all;
use super::{Plan, Policy, PolicyControl, Workload};
use crate::arch::GpuSpec;
use crate::engine::{
    self, Action, AppSpec, Controller, Handover, Hook, Persistent, Placement, RunConfig, View,
};
use crate::error::{Error, Result};
pub use crate::profile::class::slate::intensities;
use crate::profile::class::slate::{
    levels, Level, SlateThresholds, COMPUTE_HIGH, COMPUTE_LOW, MEM_HIGH, MEM_LOW,
};

/// Slate's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlateParams {
    /// Logical blocks per task (`SLATE_ITERS`; the paper's default is 10).
    pub task_blocks: u32,
    /// Compute intensity (achieved / peak FP32 FLOP/s alone) at and above which a kernel
    /// is M_C.
    pub compute_medium: f64,
    /// ... and H_C.
    pub compute_high: f64,
    /// Memory intensity (L2 load + store bytes over DRAM peak) at and above which a kernel
    /// is M_M.
    pub memory_medium: f64,
    /// ... and H_M.
    pub memory_high: f64,
    /// Class labels (`M_C/M_M`, ...) by application name, from a study's solo runs; an
    /// application not listed is profiled alone when the policy plans.
    pub classes: BTreeMap<String, String>,
}

impl Default for SlateParams {
    fn default() -> SlateParams {
        SlateParams {
            task_blocks: 10,
            compute_medium: COMPUTE_LOW,
            compute_high: COMPUTE_HIGH,
            memory_medium: MEM_LOW,
            memory_high: MEM_HIGH,
            classes: BTreeMap::new(),
        }
    }
}

impl super::Params for SlateParams {
    fn take_prepared(&mut self, prepared: &super::Prepared) {
        super::fill_missing(&mut self.classes, &prepared.classes);
    }
    fn check(&self) -> std::result::Result<(), ParamError> {
        if self.task_blocks == 0 {
            return Err(ParamError("task_blocks must be at least 1".into()));
        }
        let ok = |lo: f64, hi: f64| lo.is_finite() && hi.is_finite() && 0.0 < lo && lo < hi;
        if !ok(self.compute_medium, self.compute_high) {
            return Err(ParamError(
                "expected 0 < compute_medium < compute_high".into(),
            ));
        }
        if !ok(self.memory_medium, self.memory_high) {
            return Err(ParamError(
                "expected 0 < memory_medium < memory_high".into(),
            ));
        }
        for (n, c) in &self.classes {
            Class::parse(c).map_err(|e| format!("classes.{n}: {e}"))?;
        }
        Ok(())
    }
}

/// A kernel's profile label: compute and memory intensity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    pub compute: Level,
    pub memory: Level,
}

impl Class {
    /// `M_C/M_M` style, Table II's columns.
    pub fn label(&self) -> String {
        format!("{}_C/{}_M", self.compute.name(), self.memory.name())
    }

    pub fn parse(s: &str) -> std::result::Result<Class, ParamError> {
        let bad = || {
            ParamError(format!(
                "`{s}` is not a class; expected e.g. L_C/M_M (levels L, M, H)"
            ))
        };
        let (c, m) = s.split_once('/').ok_or_else(bad)?;
        let c = c
            .strip_suffix("_C")
            .and_then(Level::parse)
            .ok_or_else(bad)?;
        let m = m
            .strip_suffix("_M")
            .and_then(Level::parse)
            .ok_or_else(bad)?;
        Ok(Class {
            compute: c,
            memory: m,
        })
    }

    /// Table I's row/column: memory intensity first (L_C, M_C, H_C are low-memory kernels).
    fn category(&self) -> usize {
        match self.memory {
            Level::L => self.compute as usize,
            Level::M => 3,
            Level::H => 4,
        }
    }
}

/// Table I: `TABLE[running][arriving]`, order L_C, M_C, H_C, M_M, H_M; true = corun.
const TABLE: [[bool; 5]; 5] = [
    [true, true, false, true, true],
    [true, true, false, false, true],
    [false, false, false, false, true],
    [true, false, true, false, false],
    [true, true, false, false, false],
];

/// Whether Table I co-runs `arriving` beside `running`.
pub fn corun(running: Class, arriving: Class) -> bool {
    TABLE[running.category()][arriving.category()]
}

impl SlateParams {
    /// The class of intensities `(compute, memory)`.
    /// The class of intensities `(compute, memory)`, by the one Slate classifier
    /// ([`crate::profile::class::slate`]) with these thresholds.
    pub fn classify(&self, x: (f64, f64)) -> Class {
        let t = SlateThresholds {
            mem_low: self.memory_medium,
            mem_high: self.memory_high,
            compute_low: self.compute_medium,
            compute_high: self.compute_high,
        };
        let (compute, memory) = levels(x, &t);
        Class { compute, memory }
    }

    fn class_of(&self, spec: &GpuSpec, app: &AppSpec, max_cycles: u64) -> Result<Class> {
        if let Some(c) = self.classes.get(&app.name) {
            return Class::parse(c).map_err(|e| Error::Usage(e.0));
        }
        let mut solo = app.clone();
        solo.arrival = 0;
        let mut cfg = RunConfig::completion(1);
        cfg.max_cycles = max_cycles;
        let s = engine::run_static(spec, std::slice::from_ref(&solo), &cfg)
            .map_err(|e| e.context(format_args!("slate profile of {}", app.name)))?;
        Ok(self.classify(intensities(spec, &s.apps[0])))
    }

    fn persistent(&self) -> Persistent {
        Persistent::new(u32::MAX, self.task_blocks)
    }
}

pub struct Slate(pub SlateParams);

impl Slate {
    /// Every application as Slate runs it: a persistent 1-D worker grid, as many workers
    /// per SM as fit.
    fn prepare(&self, w: &Workload) -> std::result::Result<Vec<AppSpec>, String> {
        let why = "Slate runs kernels once with arrivals (completion mode, --completion)";
        transform_all(w, &self.0, self.0.persistent(), "slate", why)
            .map(|v| v.into_iter().map(|(a, _)| a).collect())
    }
}

impl Policy for Slate {
    fn name(&self) -> String {
        "slate".into()
    }

    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        self.prepare(w).map(|_| ()).map_err(NotApplicable)
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let apps = self
            .prepare(w)
            .map_err(|e| Error::Usage(format!("slate: {e}")))?;
        let classes = w
            .apps
            .iter()
            .map(|a| self.0.class_of(w.spec, a, crate::engine::MAX_CYCLES))
            .collect::<Result<Vec<_>>>()?;
        let n = w.apps.len();
        let mut placement = Placement::left_over(n);
        placement.spread_alone = false;
        for a in &mut placement.apps {
            a.sms = Some(vec![false; w.sms()]);
        }
        Ok(vec![Plan {
            apps: Some(apps),
            label: "slate".into(),
            ctas: None,
            placement,
            control: Box::new(Runtime {
                classes,
                running: Vec::new(),
                queue: Vec::new(),
                masks: vec![vec![false; w.sms()]; n],
                log: Vec::new(),
            }),
        }])
    }
}

/// Slate's scheduler: admission by Table I, SM ranges, resizing.
struct Runtime {
    classes: Vec<Class>,
    /// Co-running applications, in admission order (at most two: Slate pairs kernels).
    running: Vec<usize>,
    /// Arrived applications waiting for the GPU, in arrival order.
    queue: Vec<usize>,
    masks: Vec<Vec<bool>>,
    log: Vec<String>,
}

impl Runtime {
    fn admits(&self, app: usize) -> bool {
        match self.running.as_slice() {
            [] => true,
            [r] => corun(self.classes[*r], self.classes[app]),
            _ => false,
        }
    }

    /// Equal contiguous SM ranges in admission order; SetSms where a range changed.
    fn resize(&mut self, view: &View, actions: &mut Vec<Action>) {
        let nsm = self.masks.first().map_or(0, |m| m.len());
        let k = self.running.len();
        for (i, &a) in self.running.iter().enumerate() {
            let (lo, hi) = (i * nsm / k, (i + 1) * nsm / k);
            let m: Vec<bool> = (0..nsm).map(|s| (lo..hi).contains(&s)).collect();
            if m != self.masks[a] {
                self.log.push(format!(
                    "{}: {} ({}) on SMs {lo}..{}",
                    view.now,
                    a,
                    self.classes[a].label(),
                    hi - 1
                ));
                self.masks[a] = m.clone();
                actions.push(Action::SetSms {
                    app: a,
                    sms: m,
                    handover: Handover::Drain,
                });
            }
        }
    }
}

impl Controller for Runtime {
    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        match hook {
            Hook::KernelArrival { app, .. } => {
                if self.running.contains(&app) || self.queue.contains(&app) {
                    return;
                }
                if self.admits(app) {
                    if let Some(&r) = self.running.first() {
                        self.log.push(format!(
                            "{}: corun {app} ({}) beside {r} ({})",
                            view.now,
                            self.classes[app].label(),
                            self.classes[r].label()
                        ));
                    }
                    self.running.push(app);
                } else {
                    self.log.push(format!(
                        "{}: {app} ({}) waits (solo)",
                        view.now,
                        self.classes[app].label()
                    ));
                    self.queue.push(app);
                }
            }
            Hook::KernelDeparture { app, .. } if view.apps[app].done => {
                self.running.retain(|&a| a != app);
                // The next waiting kernel that the remaining one admits.
                while let Some(i) = (0..self.queue.len()).find(|&i| self.admits(self.queue[i])) {
                    let a = self.queue.remove(i);
                    self.running.push(a);
                }
            }
            _ => return,
        }
        self.resize(view, actions);
    }
}

impl PolicyControl for Runtime {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_one_on_the_suites_labels() {
        let c = |s| Class::parse(s).unwrap();
        let (bs, gs, mm, rg, tr) = (
            c("M_C/M_M"),
            c("L_C/M_M"),
            c("H_C/M_M"),
            c("L_C/L_M"),
            c("L_C/H_M"),
        );
        // RG (low/low) co-runs with everything; two medium-memory kernels do not.
        for x in [bs, gs, mm, rg, tr] {
            assert!(corun(rg, x) && corun(x, rg));
        }
        assert!(!corun(bs, mm) && !corun(mm, bs) && !corun(gs, bs));
        assert!(!corun(tr, tr) && !corun(tr, bs));
        assert_eq!(mm.label(), "H_C/M_M");
        assert!(Class::parse("X_C/M_M").is_err());
    }

    #[test]
    fn levels_follow_the_thresholds() {
        let p = SlateParams::default();
        assert_eq!(p.classify((0.0, 0.0)).label(), "L_C/L_M");
        assert_eq!(p.classify((0.5, 0.9)).label(), "H_C/H_M");
        assert_eq!(p.classify((0.02, 0.5)).label(), "M_C/M_M");
    }

    /// Between the two old rule sets (this policy's: compute M from 1%, memory M from 25%;
    /// the profile's: compute M from 0.5% of FP32 pipe busy, memory M from 35%): the one
    /// classifier says L_C/M_M.
    #[test]
    fn one_classifier_on_the_old_boundary() {
        let p = SlateParams::default();
        assert_eq!(p.classify((0.007, 0.30)).label(), "L_C/M_M");
    }
}
