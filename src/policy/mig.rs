//! Multi-Instance GPU (`mig`): NVIDIA's hardware partitions as data and as a policy.
//!
//! This module owns the MIG profile tables (`models/mig/*.toml`, compiled in: profiles with
//! their compute slices, memory slices, SM counts and valid placements, checked against the
//! GPU model they describe), the layout rules (which lists of profiles fit on one GPU, and
//! where each instance sits) and the `mig` policy: each instance holds its SMs and the DRAM
//! channels of its memory slices — with them their L2 slices, which the engine attaches to
//! channels — so instances share neither SMs, L2 nor DRAM; applications mapped to the same
//! instance share it as MPS clients do (Left-Over dispatch, in arrival order, inside it).

use crate::policy::NotApplicable;
use crate::policy::ParamError;
use serde::{Deserialize, Serialize};

use super::baseline::arrival_order;
use super::{Plan, Policy, PolicyControl, Workload};
use crate::arch::GpuSpec;
use crate::engine::{Action, AppPlacement, Controller, Handover, Hook, Placement, View};
use crate::error::{Error, Result};

/// The bundled MIG tables: (name, text).
const TABLES: &[(&str, &str)] = &[
    ("a100-40gb", include_str!("../../models/mig/a100-40gb.toml")),
    ("a100-80gb", include_str!("../../models/mig/a100-80gb.toml")),
    ("h100-80gb", include_str!("../../models/mig/h100-80gb.toml")),
];

/// One GPU instance profile (`nvidia-smi mig -lgip`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// `3g.40gb`.
    pub name: String,
    /// Compute slices (GPCs) it holds.
    pub compute: u32,
    /// Memory slices (each `1/memory_slices` of the channels, L2 and capacity).
    pub memory: u32,
    /// SMs the instance exposes.
    pub sms: u32,
    /// Valid start indices on the memory-slice axis (`nvidia-smi mig -lgipp`).
    pub placements: Vec<u32>,
}

/// The MIG profiles of one GPU product.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub name: String,
    /// The bundled GPU model it describes (`--gpu` name).
    pub gpu: String,
    /// SMs and DRAM channels of that model (cross-checked against the model run).
    pub sms: u32,
    pub channels: u32,
    pub compute_slices: u32,
    pub memory_slices: u32,
    pub profile: Vec<Profile>,
}

impl Table {
    /// A table parsed from TOML text and checked (`what` names it in errors).
    pub fn parse(what: &str, text: &str) -> Result<Table> {
        let t: Table =
            toml::from_str(text).map_err(|e| Error::Usage(format!("MIG table {what}: {e}")))?;
        t.check()
            .map_err(|e| Error::Usage(format!("MIG table {what}: {e}")))?;
        Ok(t)
    }

    /// The bundled table called `name`.
    pub fn builtin(name: &str) -> Result<Table> {
        match TABLES.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Table::parse(n, text),
            None => Err(Error::Usage(format!(
                "unknown MIG table `{name}`; expected one of {}",
                Self::names().join(", ")
            ))),
        }
    }

    pub fn names() -> Vec<&'static str> {
        TABLES.iter().map(|(n, _)| *n).collect()
    }

    /// Why the table is inconsistent, if it is: every placement inside the slices, SM
    /// counts within the GPU, channels divisible among memory slices, unique names.
    fn check(&self) -> std::result::Result<(), ParamError> {
        if self.memory_slices == 0 || self.compute_slices == 0 {
            return Err(ParamError(
                "compute_slices and memory_slices must be at least 1".into(),
            ));
        }
        if !self.channels.is_multiple_of(self.memory_slices) {
            return Err(ParamError(format!(
                "{} channels do not divide among {} memory slices",
                self.channels, self.memory_slices
            )));
        }
        for (i, p) in self.profile.iter().enumerate() {
            if self.profile[..i].iter().any(|q| q.name == p.name) {
                return Err(ParamError(format!("profile {} is listed twice", p.name)));
            }
            if p.compute == 0 || p.memory == 0 || p.sms == 0 || p.sms > self.sms {
                return Err(ParamError(format!(
                    "profile {}: compute, memory and sms must be at least 1 and sms at most {}",
                    p.name, self.sms
                )));
            }
            if p.placements.is_empty() {
                return Err(ParamError(format!("profile {} has no placement", p.name)));
            }
            for &s in &p.placements {
                if s + p.memory > self.memory_slices || s + p.compute > self.compute_slices {
                    return Err(ParamError(format!(
                        "profile {} placed at {s} runs past the {} compute / {} memory slices",
                        p.name, self.compute_slices, self.memory_slices
                    )));
                }
            }
        }
        Ok(())
    }

    /// Why this table cannot describe `spec`, if it cannot.
    pub(crate) fn fits(&self, spec: &GpuSpec) -> std::result::Result<(), String> {
        if spec.sm.count != self.sms || spec.dram.channels != self.channels {
            return Err(format!(
                "MIG table {} describes a GPU with {} SMs and {} DRAM channels; model {} has {} and {}",
                self.name, self.sms, self.channels, spec.name, spec.sm.count, spec.dram.channels
            ));
        }
        Ok(())
    }

    fn profile(&self, name: &str) -> std::result::Result<&Profile, String> {
        self.profile.iter().find(|p| p.name == name).ok_or_else(|| {
            format!(
                "unknown profile `{name}` on {}; expected one of {}",
                self.name,
                self.profile
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The instances of `layout` (`3g.40gb,2g.20gb,2g.20gb`, each optionally `@START`)
    /// with a placement each, or the rule the layout breaks.
    pub(crate) fn place(&self, layout: &str) -> std::result::Result<Vec<Instance>, String> {
        let mut want: Vec<(&Profile, Option<u32>)> = Vec::new();
        for item in layout.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(format!("empty profile in layout `{layout}`"));
            }
            let (name, at) = match item.split_once('@') {
                Some((n, s)) => (
                    n.trim(),
                    Some(s.trim().parse::<u32>().map_err(|_| {
                        format!("`{item}`: expected PROFILE@START with START a slice index")
                    })?),
                ),
                None => (item, None),
            };
            let p = self.profile(name)?;
            if let Some(s) = at.filter(|s| !p.placements.contains(s)) {
                return Err(format!(
                    "rule: {} may start only at memory slice {} ({item} asks for {s})",
                    p.name,
                    set(&p.placements)
                ));
            }
            want.push((p, at));
        }
        self.check_counts(&want)?;
        let mut used_c = vec![false; self.compute_slices as usize];
        let mut used_m = vec![false; self.memory_slices as usize];
        let mut starts = vec![0u32; want.len()];
        if !search(&want, 0, &mut used_c, &mut used_m, &mut starts) {
            return Err(format!(
                "rule: no placement of {layout} keeps the instances' slices apart (valid starts: {})",
                want.iter()
                    .map(|(p, _)| format!("{} at {}", p.name, set(&p.placements)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(want
            .iter()
            .zip(starts)
            .map(|((p, _), start)| Instance {
                profile: p.name.clone(),
                start,
                compute: p.compute,
                memory: p.memory,
                sms: p.sms,
            })
            .collect())
    }

    /// The counting rules: at most as many instances of a profile as it has placements,
    /// and no more compute or memory slices than the GPU has.
    fn check_counts(&self, want: &[(&Profile, Option<u32>)]) -> std::result::Result<(), String> {
        for (p, _) in want {
            let n = want.iter().filter(|(q, _)| q.name == p.name).count();
            if n > p.placements.len() {
                return Err(format!(
                    "rule: at most {} instance(s) of {} fit on one {} (placements {}), the layout has {n}",
                    p.placements.len(),
                    p.name,
                    self.name,
                    set(&p.placements)
                ));
            }
        }
        let c: u32 = want.iter().map(|(p, _)| p.compute).sum();
        let m: u32 = want.iter().map(|(p, _)| p.memory).sum();
        if c > self.compute_slices {
            return Err(format!(
                "rule: the instances need {c} compute slices, {} has {}",
                self.name, self.compute_slices
            ));
        }
        if m > self.memory_slices {
            return Err(format!(
                "rule: the instances need {m} memory slices, {} has {}",
                self.name, self.memory_slices
            ));
        }
        Ok(())
    }
}

/// `{0,2,4}`.
fn set(v: &[u32]) -> String {
    format!(
        "{{{}}}",
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    )
}

/// Backtracking over placements, instance `i` onwards (the first placement that fits, in
/// the table's order, for each instance in layout order).
fn search(
    want: &[(&Profile, Option<u32>)],
    i: usize,
    used_c: &mut [bool],
    used_m: &mut [bool],
    starts: &mut [u32],
) -> bool {
    let Some(&(p, at)) = want.get(i) else {
        return true;
    };
    for &s in &p.placements {
        if at.is_some_and(|a| a != s) {
            continue;
        }
        let c = s as usize..(s + p.compute) as usize;
        let m = s as usize..(s + p.memory) as usize;
        if used_c[c.clone()].iter().any(|&x| x) || used_m[m.clone()].iter().any(|&x| x) {
            continue;
        }
        used_c[c.clone()].fill(true);
        used_m[m.clone()].fill(true);
        starts[i] = s;
        if search(want, i + 1, used_c, used_m, starts) {
            return true;
        }
        used_c[c].fill(false);
        used_m[m].fill(false);
    }
    false
}

/// One placed GPU instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub profile: String,
    /// Start index on the memory-slice axis (also its first compute slice).
    pub start: u32,
    pub compute: u32,
    pub memory: u32,
    pub sms: u32,
}

/// Which SMs and channels each instance of a placed layout holds: instances take their
/// profile's SM count as contiguous blocks in placement order (the SMs of the GPCs they
/// hold; which physical SMs does not matter to the engine), and the channels of their
/// memory slices (slice `j` holds channels `j·C/M .. (j+1)·C/M`).
pub fn resources(table: &Table, instances: &[Instance]) -> Vec<(Vec<bool>, Vec<u32>)> {
    let mut order: Vec<usize> = (0..instances.len()).collect();
    order.sort_by_key(|&i| (instances[i].start, i));
    let per = table.channels / table.memory_slices;
    let mut out = vec![(Vec::new(), Vec::new()); instances.len()];
    let mut at = 0u32;
    for i in order {
        let x = &instances[i];
        let sms = (0..table.sms).map(|s| s >= at && s < at + x.sms).collect();
        at += x.sms;
        let ch = (x.start * per..(x.start + x.memory) * per).collect();
        out[i] = (sms, ch);
    }
    out
}

/// The `mig` policy's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MigParams {
    /// The instances, `3g.40gb,2g.20gb,2g.20gb` (each optionally `PROFILE@START`).
    pub layout: String,
    /// The bundled MIG table (`a100-40gb`, `a100-80gb`, `h100-80gb`); empty: the table of
    /// the run's model whose profiles include every profile of the layout.
    pub table: String,
    /// Instance of each application, in listing order; empty: application i in instance
    /// i. Several applications in one instance share it as MPS clients.
    pub assign: Vec<u32>,
}

impl super::Params for MigParams {
    /// The table name, and the layout against every bundled table that knows its
    /// profiles (the model is not known yet; [`MigParams::resolve`] checks it against the
    /// run's): an invalid layout is refused before any simulation.
    fn check(&self) -> std::result::Result<(), ParamError> {
        if !self.table.is_empty() && !Table::names().contains(&self.table.as_str()) {
            return Err(ParamError(format!(
                "table: unknown MIG table `{}`; expected one of {}",
                self.table,
                Table::names().join(", ")
            )));
        }
        if self.layout.trim().is_empty() {
            return Ok(());
        }
        let tables: Vec<Table> = Table::names()
            .into_iter()
            .filter(|n| self.table.is_empty() || *n == self.table)
            .map(Table::builtin)
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.to_string())?;
        let names = layout_names(&self.layout);
        let known: Vec<&Table> = tables
            .iter()
            .filter(|t| names.iter().all(|n| t.profile.iter().any(|p| p.name == *n)))
            .collect();
        match known.first() {
            None => tables[0].place(&self.layout).map(|_| ()),
            Some(t) => t.place(&self.layout).map(|_| ()),
        }
        .map_err(|e| ParamError(format!("layout: {e}")))
    }
}

/// The profile names of a layout (without `@START`).
fn layout_names(layout: &str) -> Vec<&str> {
    layout
        .split(',')
        .map(|s| s.split('@').next().unwrap_or("").trim())
        .collect()
}

impl MigParams {
    /// The table for `spec` and the placed instances, or why the layout is invalid.
    fn resolve(&self, spec: &GpuSpec) -> std::result::Result<(Table, Vec<Instance>), String> {
        if self.layout.trim().is_empty() {
            return Err("mig.layout is not given (e.g. mig.layout=3g.40gb,2g.20gb,2g.20gb)".into());
        }
        let tables: Vec<Table> = if self.table.is_empty() {
            Table::names()
                .into_iter()
                .map(Table::builtin)
                .collect::<Result<Vec<_>>>()
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|t| t.gpu == spec.name)
                .collect()
        } else {
            vec![Table::builtin(&self.table).map_err(|e| e.to_string())?]
        };
        if tables.is_empty() {
            return Err(format!(
                "no MIG table for model {} (tables: {}); MIG runs on a100 and h100",
                spec.name,
                Table::names().join(", ")
            ));
        }
        let names = layout_names(&self.layout);
        // The first table that knows every profile of the layout; else the first one,
        // whose error names the unknown profile.
        let t = tables
            .iter()
            .find(|t| names.iter().all(|n| t.profile.iter().any(|p| p.name == *n)))
            .unwrap_or(&tables[0]);
        t.fits(spec)?;
        let inst = t.place(&self.layout)?;
        Ok((t.clone(), inst))
    }

    /// The instance of each of `n` applications.
    fn assignment(&self, n: usize, instances: usize) -> std::result::Result<Vec<usize>, String> {
        let a: Vec<usize> = if self.assign.is_empty() {
            (0..n).collect()
        } else {
            self.assign.iter().map(|&i| i as usize).collect()
        };
        if a.len() != n {
            return Err(format!(
                "{n} applications, mig.assign maps {} (one instance index per application)",
                a.len()
            ));
        }
        if let Some(&bad) = a.iter().find(|&&i| i >= instances) {
            return Err(format!(
                "application mapped to instance {bad}; the layout has {instances} instance(s) \
                 (give mig.assign to share instances)"
            ));
        }
        Ok(a)
    }
}

/// The `mig` policy.
pub struct Mig(pub MigParams);

impl Policy for Mig {
    fn name(&self) -> String {
        "mig".into()
    }

    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        let (_, inst) = self.0.resolve(w.spec)?;
        self.0
            .assignment(w.apps.len(), inst.len())
            .map(|_| ())
            .map_err(NotApplicable)
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let bad = |e: String| Error::Usage(format!("mig: {e}"));
        let (table, inst) = self.0.resolve(w.spec).map_err(bad)?;
        let assign = self.0.assignment(w.apps.len(), inst.len()).map_err(bad)?;
        let res = resources(&table, &inst);
        let n = w.apps.len();
        let mut p = Placement::left_over(n);
        // Inside an instance, its applications are MPS clients: served in arrival order.
        let order = arrival_order(w);
        let mut groups: Vec<Group> = Vec::new();
        for (k, (sms, ch)) in res.iter().enumerate() {
            let members: Vec<usize> = order.iter().copied().filter(|&a| assign[a] == k).collect();
            for (rank, &a) in members.iter().enumerate() {
                p.apps[a] = AppPlacement {
                    sms: Some(if rank == 0 {
                        sms.clone()
                    } else {
                        vec![false; w.sms()]
                    }),
                    channels: Some(ch.clone()),
                    ..AppPlacement::default()
                };
            }
            if !members.is_empty() {
                groups.push(Group {
                    order: members,
                    open: 1,
                    sms: sms.clone(),
                });
            }
        }
        p.spread_alone = n == 1;
        let label = format!(
            "({})",
            inst.iter()
                .map(|i| format!("{}@{}", i.profile, i.start))
                .collect::<Vec<_>>()
                .join(",")
        );
        let log = vec![format!(
            "MIG table {}: {}; applications → instances {:?}",
            table.name, label, assign
        )];
        Ok(vec![Plan {
            apps: None,
            label,
            ctas: None,
            placement: p,
            control: Box::new(Groups { groups, log }),
        }])
    }
}

/// The applications sharing one instance (or one SM set) in arrival order; `order[..open]`
/// may place CTAs.
pub struct Group {
    pub order: Vec<usize>,
    pub open: usize,
    pub sms: Vec<bool>,
}

/// Left-Over's in-order rule ([`super::baseline::InOrder`]) inside each group: a later
/// application of a group gets the group's SMs once every earlier one has dispatched all
/// the CTAs of its running kernel (or finished).
pub struct Groups {
    pub groups: Vec<Group>,
    pub log: Vec<String>,
}

impl Controller for Groups {
    fn launches_passive(&self) -> bool {
        true
    }
    fn on_hook(&mut self, _: Hook, view: &View, actions: &mut Vec<Action>) {
        for g in &mut self.groups {
            while g.open < g.order.len() {
                let head = &view.apps[g.order[g.open - 1]];
                let issued_all = head.done || (head.kernel.is_some() && head.blocks_left == 0);
                if !issued_all {
                    break;
                }
                actions.push(Action::SetSms {
                    app: g.order[g.open],
                    sms: g.sms.clone(),
                    handover: Handover::Drain,
                });
                g.open += 1;
            }
        }
    }
}

impl PolicyControl for Groups {
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_tables_load_and_fit_their_models() {
        for n in Table::names() {
            let t = Table::builtin(n).unwrap();
            let spec = GpuSpec::builtin(&t.gpu).unwrap();
            t.fits(&spec).unwrap();
            // The full-GPU profile holds every slice.
            let full = t.profile.iter().max_by_key(|p| p.compute).unwrap();
            assert_eq!((full.compute, full.memory), (7, 8), "{n}");
        }
    }

    #[test]
    fn every_valid_layout_fits_the_gpu_sms() {
        // All multisets of up to 7 profiles that place: their SMs never exceed the GPU's.
        for n in Table::names() {
            let t = Table::builtin(n).unwrap();
            let mut stack: Vec<Vec<usize>> = vec![vec![]];
            let mut valid = 0;
            while let Some(cur) = stack.pop() {
                if !cur.is_empty() {
                    let layout: Vec<&str> =
                        cur.iter().map(|&i| t.profile[i].name.as_str()).collect();
                    let Ok(inst) = t.place(&layout.join(",")) else {
                        continue;
                    };
                    valid += 1;
                    let sms: u32 = inst.iter().map(|i| i.sms).sum();
                    assert!(sms <= t.sms, "{n}: {layout:?} needs {sms} SMs");
                    let res = resources(&t, &inst);
                    for a in 0..res.len() {
                        for b in a + 1..res.len() {
                            assert!(res[a].1.iter().all(|c| !res[b].1.contains(c)));
                            assert!((0..t.sms as usize).all(|s| !(res[a].0[s] && res[b].0[s])));
                        }
                    }
                }
                if cur.len() < 7 {
                    let from = cur.last().copied().unwrap_or(0);
                    for i in from..t.profile.len() {
                        let mut next = cur.clone();
                        next.push(i);
                        stack.push(next);
                    }
                }
            }
            assert!(valid > 10, "{n}: {valid} valid layouts");
        }
    }

    #[test]
    fn layout_rules() {
        let t = Table::builtin("h100-80gb").unwrap();
        let ok = t.place("3g.40gb,2g.20gb,2g.20gb").unwrap();
        assert_eq!(
            ok.iter().map(|i| i.start).collect::<Vec<_>>(),
            vec![4, 0, 2]
        );
        assert!(t
            .place("4g.40gb,4g.40gb")
            .unwrap_err()
            .contains("at most 1"));
        assert!(t
            .place("4g.40gb,3g.40gb,1g.10gb")
            .unwrap_err()
            .contains("compute slices"));
        assert!(t
            .place("3g.40gb@0,1g.10gb@3")
            .unwrap_err()
            .contains("apart"));
        assert!(t.place("3g.40gb@2").unwrap_err().contains("may start only"));
        assert!(t.place("5g.50gb").unwrap_err().contains("unknown profile"));
        assert!(t
            .place("1g.20gb,1g.20gb,1g.20gb,1g.20gb,1g.10gb")
            .unwrap_err()
            .contains("memory slices"));
    }
}
