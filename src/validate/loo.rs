//! Leave-one-out accuracy (`validate`, unless `--no-leave-one-out`): how well the model
//! predicts a case whose reference numbers it was not fitted on.
//!
//! `models/CALIBRATION.md` marks the values fitted to the reference ([`FITTED`]). For each
//! kernel, every fitted value is refitted on the folder *without that kernel*, by one
//! fixed procedure, and the kernel is predicted with the refitted values; for each pair,
//! the values are refitted without both of its kernels (the pair's name is `a+b`) and
//! the pair is co-run with them. The mean absolute errors of these predictions are the
//! leave-one-out figures, reported beside the ordinary ones.
//!
//! The procedure (the one used to fit the values in the first place, made mechanical):
//! the keys are taken one at a time in [`FITTED`] order, each starting from the model's
//! value; for a key, every value of its grid is tried with the keys before it at their
//! refitted values and the keys after it at the model's, and the value with the lowest
//! kernel cycle MAE over the kept kernels wins (ties: the value nearest the model's, then
//! the smaller). Kernel errors under a set of values are computed once and shared by every
//! held-out case that asks for them.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use super::{kernel_mae, pair_mae, run_kernels, run_pair, Cases, KernelCase, PairCase};
use crate::arch::GpuSpec;
use crate::error::Result;

/// A value fitted to the reference: its key, the grid it is refitted over, and how to
/// read the model's own value.
pub struct Fitted {
    pub key: &'static str,
    pub grid: &'static [u64],
    pub read: fn(&GpuSpec) -> u64,
}

/// The values `models/CALIBRATION.md` marks as fitted to the reference.
pub const FITTED: &[Fitted] = &[
    Fitted {
        key: "sm.pipeline_latency",
        // (3 at least: the operand collector alone takes 3 cycles of it.)
        grid: &[3, 4, 5, 6, 7, 8],
        read: |s| s.sm.pipeline_latency.0,
    },
    Fitted {
        key: "l2.atomic_initiation",
        grid: &[1, 2, 3, 4],
        read: |s| s.l2.atomic_initiation.0,
    },
];

/// A fitted key, its model value and its grid.
#[derive(Clone, Debug, Serialize)]
pub struct FittedKey {
    pub key: String,
    pub model_value: u64,
    pub grid: Vec<u64>,
}

/// A kernel predicted with values refitted without it.
#[derive(Clone, Debug, Serialize)]
pub struct LooKernel {
    pub kernel: String,
    /// The refitted values, in [`FITTED`] order.
    pub values: Vec<u64>,
    pub cycles: u64,
    pub error_pct: f64,
}

/// A pair co-run with values refitted without both of its kernels.
#[derive(Clone, Debug, Serialize)]
pub struct LooPair {
    pub pair: String,
    pub values: Vec<u64>,
    pub error_a_pct: f64,
    pub error_b_pct: f64,
}

/// The leave-one-out figures of one validation.
#[derive(Clone, Debug, Serialize)]
pub struct LeaveOneOut {
    pub procedure: String,
    pub keys: Vec<FittedKey>,
    pub kernel_cycle_mae_pct: f64,
    pub pair_slowdown_mae_pct: f64,
    pub kernels: Vec<LooKernel>,
    pub pairs: Vec<LooPair>,
}

/// The model with the fitted keys set to `values`.
fn with_values(spec: &GpuSpec, values: &[u64]) -> Result<GpuSpec> {
    let sets: Vec<String> = FITTED
        .iter()
        .zip(values)
        .map(|(f, v)| format!("{}={v}", f.key))
        .collect();
    spec.with_overrides(&sets)
}

/// The model's own value of each fitted key.
fn model_values(spec: &GpuSpec) -> Vec<u64> {
    FITTED.iter().map(|f| (f.read)(spec)).collect()
}

/// Kernel results under each set of fitted values, computed on first use.
struct Memo<'a> {
    spec: &'a GpuSpec,
    cases: &'a Cases,
    runs: BTreeMap<Vec<u64>, Vec<KernelCase>>,
}

impl Memo<'_> {
    /// Runs every set of values not yet run (in parallel across sets).
    fn fill(&mut self, wanted: &[Vec<u64>]) -> Result<()> {
        let mut todo: Vec<Vec<u64>> = wanted
            .iter()
            .filter(|v| !self.runs.contains_key(*v))
            .cloned()
            .collect();
        todo.sort();
        todo.dedup();
        let done: Vec<Result<(Vec<u64>, Vec<KernelCase>)>> = todo
            .into_par_iter()
            .map(|v| {
                let s = with_values(self.spec, &v)?;
                Ok((v, run_kernels(&s, &self.cases.kernels, None)?))
            })
            .collect();
        for d in done {
            let (v, ks) = d?;
            self.runs.insert(v, ks);
        }
        Ok(())
    }

    /// The refitted values without the kernels named in `held_out`.
    fn refit(&mut self, base: &[u64], held_out: &[&str]) -> Result<Vec<u64>> {
        let mut values = base.to_vec();
        for (i, f) in FITTED.iter().enumerate() {
            let candidates: Vec<Vec<u64>> = f
                .grid
                .iter()
                .map(|&g| {
                    let mut v = values.clone();
                    v[i] = g;
                    v
                })
                .collect();
            self.fill(&candidates)?;
            let score = |v: &Vec<u64>| {
                kernel_mae(
                    self.runs[v]
                        .iter()
                        .filter(|k| !held_out.contains(&k.kernel.as_str()))
                        .map(|k| &k.error_pct),
                )
            };
            let best = candidates
                .iter()
                .min_by(|a, b| {
                    score(a)
                        .total_cmp(&score(b))
                        .then(a[i].abs_diff(base[i]).cmp(&b[i].abs_diff(base[i])))
                        .then(a[i].cmp(&b[i]))
                })
                .expect("every grid has a value");
            values[i] = best[i];
        }
        Ok(values)
    }
}

/// The leave-one-out figures for `cases` on `spec`, given the ordinary results.
pub(crate) fn leave_one_out(
    spec: &GpuSpec,
    cases: &Cases,
    kernels: &[KernelCase],
    pairs: &[PairCase],
) -> Result<LeaveOneOut> {
    let base = model_values(spec);
    let mut memo = Memo {
        spec,
        cases,
        runs: BTreeMap::new(),
    };
    memo.runs.insert(base.clone(), kernels.to_vec());
    let mut loo_kernels = Vec::with_capacity(kernels.len());
    for k in kernels {
        let values = memo.refit(&base, &[k.kernel.as_str()])?;
        let got = memo.runs[&values]
            .iter()
            .find(|c| c.kernel == k.kernel)
            .expect("every run covers every kernel");
        loo_kernels.push(LooKernel {
            kernel: k.kernel.clone(),
            cycles: got.cycles,
            error_pct: got.error_pct,
            values,
        });
    }
    let mut pair_values = Vec::with_capacity(pairs.len());
    for p in pairs {
        let names: Vec<&str> = p.pair.split('+').map(str::trim).collect();
        pair_values.push(memo.refit(&base, &names)?);
    }
    let loo_pairs: Vec<Result<LooPair>> = cases
        .pairs
        .par_iter()
        .zip(pairs)
        .zip(&pair_values)
        .map(|((input, ordinary), values)| {
            let case = if *values == base {
                ordinary.clone()
            } else {
                run_pair(&with_values(spec, values)?, input, None)?
            };
            Ok(LooPair {
                pair: case.pair,
                values: values.clone(),
                error_a_pct: case.error_a_pct,
                error_b_pct: case.error_b_pct,
            })
        })
        .collect();
    let loo_pairs = loo_pairs.into_iter().collect::<Result<Vec<_>>>()?;
    let as_cases: Vec<PairCase> = loo_pairs
        .iter()
        .zip(pairs)
        .map(|(l, p)| PairCase {
            error_a_pct: l.error_a_pct,
            error_b_pct: l.error_b_pct,
            ..p.clone()
        })
        .collect();
    Ok(LeaveOneOut {
        procedure: "each fitted key in turn, from the model's value, set to the grid value \
                    with the lowest kernel cycle MAE over the folder's kernels without the \
                    predicted kernel (a pair: without both of its kernels); ties go to the \
                    value nearest the model's"
            .into(),
        keys: FITTED
            .iter()
            .zip(&base)
            .map(|(f, v)| FittedKey {
                key: f.key.to_string(),
                model_value: *v,
                grid: f.grid.to_vec(),
            })
            .collect(),
        kernel_cycle_mae_pct: kernel_mae(loo_kernels.iter().map(|k| &k.error_pct)),
        pair_slowdown_mae_pct: pair_mae(&as_cases),
        kernels: loo_kernels,
        pairs: loo_pairs,
    })
}

impl LeaveOneOut {
    /// The figures as text, listing the cases whose refitted values differ from the model's.
    pub fn render(&self) -> String {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                format!(
                    "{} = {} (grid {}..{})",
                    k.key,
                    k.model_value,
                    k.grid.first().unwrap_or(&0),
                    k.grid.last().unwrap_or(&0)
                )
            })
            .collect();
        let base: Vec<u64> = self.keys.iter().map(|k| k.model_value).collect();
        let mut s = format!(
            "\nleave-one-out (refitted without the predicted case: {})\n",
            keys.join(", ")
        );
        for k in self.kernels.iter().filter(|k| k.values != base) {
            s += &format!(
                "  {:<24} refitted {:?}: error {:.1}%\n",
                k.kernel, k.values, k.error_pct
            );
        }
        for p in self.pairs.iter().filter(|p| p.values != base) {
            s += &format!(
                "  {:<24} refitted {:?}: errors {:.1}/{:.1}%\n",
                p.pair, p.values, p.error_a_pct, p.error_b_pct
            );
        }
        s += &format!(
            "leave-one-out kernel cycle MAE: {:.1}%\nleave-one-out pair slowdown MAE: {:.1}%\n",
            self.kernel_cycle_mae_pct, self.pair_slowdown_mae_pct
        );
        s
    }
}
