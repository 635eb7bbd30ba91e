//! The oracle of Warped-Slicer §V: the best result among Left-Over, Spatial and every
//! intra-SM CTA combination, each run in full ("we exhaustively ran all possible CTA
//! combinations").

use super::baseline::{combo_placement, Baseline, Kind, Reshare, Survivors};
use super::partition::Problem;
use super::{label, Plan, Policy, Workload};
use crate::error::Result;

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

    fn plans(&self, w: &Workload) -> Result<Vec<Plan>> {
        let mut plans = Vec::new();
        if self.baselines {
            plans.extend(Baseline(Kind::LeftOver).plans(w)?);
            plans.extend(Baseline(Kind::Spatial).plans(w)?);
        }
        for c in self.combinations(w)? {
            plans.push(Plan {
                label: label(&c),
                ctas: Some(c.clone()),
                placement: combo_placement(&c, w.sms()),
                control: Box::new(Survivors::new(Reshare::Quotas, w.canonical(), w.sms())),
            });
        }
        Ok(plans)
    }
}
