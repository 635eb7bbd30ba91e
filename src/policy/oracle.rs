//! The oracle of Warped-Slicer §V: the best result among Left-Over, Spatial and every
//! intra-SM CTA combination, each run in full ("we exhaustively ran all possible CTA
//! combinations").
//!
//! In a task (a study's or `analyze`'s workload) that runs Left-Over and Spatial anyway, the
//! oracle runs only its combinations ([`for_task`]) and adopts their results afterwards
//! ([`merge`]).

use super::baseline::{combo_placement, Baseline, Kind, Reshare, Survivors};
use super::partition::Problem;
use super::{label, OracleParams, Plan, Policy, PolicySpec, Workload};
use crate::error::Result;
use crate::policy::NotApplicable;

pub struct Oracle {
    /// Only the combinations to which no kernel can add one more CTA.
    pub maximal_only: bool,
    /// Also run Left-Over and Spatial (a study that runs them anyway merges their results
    /// instead).
    pub baselines: bool,
}

impl Oracle {
    /// Every feasible combination (at least one CTA each) in lexicographic order.
    pub fn combinations(&self, w: &Workload) -> Result<Vec<Vec<u32>>> {
        let shapes = w.shapes()?;
        let pb = Problem {
            perf: shapes
                .iter()
                .map(|s| vec![1.0; s.max_ctas as usize])
                .collect(),
            need: shapes.iter().map(|s| s.need).collect(),
            cap: w.cap(),
        };
        let mut all = pb.combinations();
        if self.maximal_only {
            all.retain(|c| {
                (0..c.len()).all(|i| {
                    let mut d = c.clone();
                    d[i] += 1;
                    d[i] > shapes[i].max_ctas || !pb.fits(&d)
                })
            });
        }
        Ok(all)
    }
}

impl Policy for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    /// The oracle searches CTA combinations: it cannot run a workload in which no
    /// combination of at least one CTA of every application fits in an SM.
    fn applies(&self, w: &Workload) -> std::result::Result<(), NotApplicable> {
        match self.combinations(w) {
            Ok(c) if c.is_empty() => Err(NotApplicable(format!(
                "no combination of at least one CTA of each of the {} applications fits in \
                 one SM of {}",
                w.apps.len(),
                w.spec.name
            ))),
            Ok(_) => Ok(()),
            Err(e) => Err(NotApplicable(e.to_string())),
        }
    }

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let mut plans = Vec::new();
        if self.baselines {
            plans.extend(Baseline(Kind::LeftOver).plans(w)?);
            plans.extend(Baseline(Kind::Spatial).plans(w)?);
        }
        for c in self.combinations(w)? {
            plans.push(Plan {
                apps: None,
                label: label(&c),
                ctas: Some(c.clone()),
                placement: combo_placement(&c, w.sms()),
                control: Box::new(Survivors::new(Reshare::Quotas, w.canonical(), w.sms())),
            });
        }
        Ok(plans)
    }
}

/// The policies whose runs an oracle in the same task adopts instead of running them again.
pub const ADOPTS: [&str; 2] = ["left-over", "spatial"];

/// Whether a task running the policies `names` lets its oracle adopt [`ADOPTS`].
pub fn merges(names: &[&str]) -> bool {
    names.contains(&"oracle") && ADOPTS.iter().all(|a| names.contains(a))
}

/// The policy object for `p` in a task running `names`: an oracle without its own
/// baseline runs when [`merges`] holds; otherwise `p.build()`.
pub fn build_in_task(p: &PolicySpec, names: &[&str]) -> Box<dyn Policy> {
    match p {
        PolicySpec::Oracle(OracleParams { maximal_only }) if merges(names) => Box::new(Oracle {
            maximal_only: *maximal_only,
            baselines: false,
        }),
        p => p.build(),
    }
}

/// A finished policy run, as the merge sees it.
pub trait Candidate: Clone {
    fn policy(&self) -> &str;
    /// What the oracle maximises (combined IPC).
    fn score(&self) -> f64;
    fn runs(&self) -> usize;
    /// Becomes the oracle's result, having taken `runs` runs in all.
    fn adopt(&mut self, policy: &str, runs: usize);
}

/// The oracle of a merged task is the best of its combinations and the [`ADOPTS`] runs;
/// its run count includes theirs.
pub fn merge<T: Candidate>(runs: &mut [T]) {
    let Some(o) = runs.iter().position(|r| r.policy() == "oracle") else {
        return;
    };
    let adopted = || runs.iter().filter(|r| ADOPTS.contains(&r.policy()));
    let total = runs[o].runs() + adopted().map(|_| 1).sum::<usize>();
    let best = adopted()
        .filter(|r| r.score() > runs[o].score())
        .max_by(|a, b| a.score().total_cmp(&b.score()))
        .cloned();
    if let Some(b) = best {
        runs[o] = b;
    }
    runs[o].adopt("oracle", total);
}
