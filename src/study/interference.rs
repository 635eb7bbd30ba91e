//! Interference between co-running applications (Punyala et al. §III-A, Fig. 2):
//! `S(j→i)`, the slowdown application (or class) i suffers beside j when the SMs are split
//! equally. Each pair runs together for a fixed window of cycles on two equal contiguous
//! halves of the GPU (both live the whole window: kernels relaunch), and each member's IPC
//! is compared with its IPC alone on the same half over the same window — so the figure is
//! the interference in the shared L2, NoC and DRAM only, not the loss of SMs.
//!
//! [`measure_apps`] gives the matrix per application (every ordered pair, an application
//! beside a second copy of itself on the diagonal): the "each application its own class"
//! input of the pattern ILP. [`measure`] gives the class matrix from the pairs of distinct
//! representatives, averaged (geometric mean) per class pair.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::{alone_ipc, Loaded, Mode, Setup};
use crate::engine::{self, AppPlacement, Placement, RunConfig, RunMode};
use crate::error::{Error, Result};
use crate::policy::pattern::Interference;
use crate::policy::spatial_masks;

/// Slowdowns measured between applications: `s[j][i]` for application i beside
/// application j, `None` where that pair was not run.
#[derive(Clone, Debug, PartialEq)]
pub struct AppSlowdowns {
    pub names: Vec<String>,
    pub classes: Vec<String>,
    pub s: Vec<Vec<Option<f64>>>,
}

impl AppSlowdowns {
    /// The class matrix: `S(j→i)` averaged over the measured pairs of an application of
    /// class i beside one of class j, distinct applications only unless a class has a
    /// single one (then the application beside a copy of itself). The average is the
    /// geometric mean — slowdowns are ratios, and one extreme pair (a random-access kernel
    /// thrashing DRAM beside a cache-sensitive one) must not stand for its whole class.
    pub fn by_class(&self, classes: &[String]) -> Result<Interference> {
        let n = classes.len();
        let cls = |a: usize| classes.iter().position(|c| *c == self.classes[a]);
        let mut s = vec![vec![0.0; n]; n];
        for (j, cj) in classes.iter().enumerate() {
            for (i, ci) in classes.iter().enumerate() {
                let vals = |same: bool| -> Vec<f64> {
                    let mut v = Vec::new();
                    for (b, row) in self.s.iter().enumerate() {
                        for (a, x) in row.iter().enumerate() {
                            if cls(b) == Some(j) && cls(a) == Some(i) && (a == b) == same {
                                v.extend(*x);
                            }
                        }
                    }
                    v
                };
                let mut v = vals(false);
                if v.is_empty() {
                    v = vals(true);
                }
                if v.is_empty() {
                    return Err(Error::Usage(format!(
                        "S({cj}→{ci}) has no co-run: no representative application of class {}",
                        if self.classes.iter().any(|c| c == ci) {
                            cj
                        } else {
                            ci
                        }
                    )));
                }
                s[j][i] = crate::metrics::gmean(&v);
            }
        }
        Ok(Interference {
            classes: classes.to_vec(),
            s,
        })
    }

    /// The full per-application matrix (every pair must have been measured).
    pub fn full(&self) -> Result<Interference> {
        let mut s = vec![vec![0.0; self.names.len()]; self.names.len()];
        for (j, row) in self.s.iter().enumerate() {
            for (i, x) in row.iter().enumerate() {
                s[j][i] = x.ok_or_else(|| {
                    Error::Usage(format!(
                        "S({}→{}) was not measured",
                        self.names[j], self.names[i]
                    ))
                })?;
            }
        }
        Ok(Interference {
            classes: self.names.clone(),
            s,
        })
    }
}

/// Co-runs the unordered pairs `pairs` (indices into `benches`, `(a, a)` = two copies)
/// for `window` cycles at an equal SM split and returns the slowdowns.
fn pair_slowdowns(
    setup: &Setup,
    benches: &[Loaded],
    window: u64,
    pairs: &[(usize, usize)],
) -> Result<AppSlowdowns> {
    if window == 0 {
        return Err(Error::Usage(
            "the interference window must be at least 1 cycle".into(),
        ));
    }
    let nsm = setup.spec.sm.count as usize;
    let halves = spatial_masks(nsm, 2, &[0, 1]);
    let mode = Mode::Budget { window };
    // Alone on the first half (both halves are alike: contiguous SM blocks).
    let alone: Vec<f64> = benches
        .par_iter()
        .map(|b| {
            let place = AppPlacement {
                sms: Some(halves[0].clone()),
                ..AppPlacement::default()
            };
            alone_ipc(
                setup.spec,
                mode,
                setup.max_cycles,
                &b.app,
                place,
                setup.fast_forward,
            )
        })
        .collect::<Result<_>>()?;
    let done = AtomicUsize::new(0);
    let ipcs: Vec<(f64, f64)> = pairs
        .par_iter()
        .map(|&(a, b)| {
            let apps = [benches[a].app.clone(), benches[b].app.clone()];
            let mut placement = Placement::left_over(2);
            for (p, m) in placement.apps.iter_mut().zip(&halves) {
                p.sms = Some(m.clone());
            }
            let cfg = RunConfig {
                mode: RunMode::Window(window),
                placement,
                sample_every: 0,
                max_cycles: setup.max_cycles,
                fast_forward: setup.fast_forward,
            };
            let s = engine::run_static(setup.spec, &apps, &cfg).map_err(|e| {
                e.context(format_args!(
                    "{} beside {}",
                    benches[a].name, benches[b].name
                ))
            })?;
            (setup.progress)(done.fetch_add(1, Ordering::Relaxed) + 1, pairs.len());
            let ipc = |k: usize| s.apps[k].counters.warp_insts as f64 / window as f64;
            Ok((ipc(0), ipc(1)))
        })
        .collect::<Result<_>>()?;
    let n = benches.len();
    let mut s = vec![vec![None; n]; n];
    let slow = |x: usize, ipc: f64| -> Result<f64> {
        if ipc > 0.0 && alone[x] > 0.0 {
            Ok(alone[x] / ipc)
        } else {
            Err(Error::Usage(format!(
                "{} executed nothing in the {window}-cycle interference window",
                benches[x].name
            )))
        }
    };
    for (&(a, b), &(ia, ib)) in pairs.iter().zip(&ipcs) {
        // Two copies of one application: the mean of the two.
        if a == b {
            s[a][a] = Some((slow(a, ia)? + slow(a, ib)?) / 2.0);
        } else {
            s[b][a] = Some(slow(a, ia)?);
            s[a][b] = Some(slow(b, ib)?);
        }
    }
    Ok(AppSlowdowns {
        names: benches.iter().map(|b| b.name.clone()).collect(),
        classes: benches.iter().map(|b| b.class.clone()).collect(),
        s,
    })
}

/// Every application beside every other and beside a copy of itself.
pub fn measure_apps(setup: &Setup, benches: &[Loaded], window: u64) -> Result<AppSlowdowns> {
    let n = benches.len();
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|a| (a..n).map(move |b| (a, b))).collect();
    pair_slowdowns(setup, benches, window, &pairs)
}

/// `S(j→i)` for every ordered class pair, from the pairs of distinct representatives of
/// classes j and i (a class with a single representative: that application beside a copy
/// of itself). `benches` carry their class in `Loaded::class`.
pub fn measure(
    setup: &Setup,
    benches: &[Loaded],
    classes: &[String],
    window: u64,
) -> Result<Interference> {
    let of = |c: &str| benches.iter().filter(|b| b.class == c).count();
    if let Some(c) = classes.iter().find(|c| of(c) == 0) {
        return Err(Error::Usage(format!(
            "no representative application of class {c}"
        )));
    }
    let n = benches.len();
    let mut pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .collect();
    pairs.extend(
        (0..n)
            .filter(|&a| of(&benches[a].class) == 1)
            .map(|a| (a, a)),
    );
    pair_slowdowns(setup, benches, window, &pairs)?.by_class(classes)
}
