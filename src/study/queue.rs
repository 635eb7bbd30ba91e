//! Waiting queues of applications (Punyala et al. §IV): a queue of N_q applications drawn
//! with a seeded generator from class representatives under a class mix — equal, or one
//! class dominating with more than half of the queue and the others equal — and its split
//! into co-running groups of N_G: in arrival order (the Even and Profile-based baselines)
//! or by the class-pattern ILP (the applications of each class taken in arrival order to
//! fill the chosen patterns).

use crate::error::{Error, Result};
use crate::policy::pattern::{solve, Interference};

/// The class mix of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassMix {
    /// Every class equally often.
    Equal,
    /// Class `k` holds more than half of the queue (the paper's "M-oriented" etc.).
    Oriented(usize),
}

/// How many applications of each of `nc` classes a queue of `n` gets: equal shares, or the
/// dominant class `⌊n/2⌋ + 1` and the rest shared equally (remainders to the first classes).
pub fn class_counts(n: usize, nc: usize, mix: ClassMix) -> Vec<usize> {
    let spread = |total: usize, k: usize| -> Vec<usize> {
        (0..k)
            .map(|i| total / k + usize::from(i < total % k))
            .collect()
    };
    match mix {
        ClassMix::Equal => spread(n, nc),
        ClassMix::Oriented(d) => {
            let dom = (n / 2 + 1).min(n);
            let rest = spread(n - dom, nc.saturating_sub(1));
            let mut out = Vec::with_capacity(nc);
            let mut it = rest.into_iter();
            for c in 0..nc {
                out.push(if c == d { dom } else { it.next().unwrap_or(0) });
            }
            out
        }
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same queue on
/// every machine.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A queue of `n` applications: `reps[c]` are the representatives of class `c`; each slot
/// of a class picks one of them at random, then the whole queue is shuffled (arrival
/// order). Returns `(application, class index)` in arrival order.
pub fn make_queue(
    reps: &[Vec<String>],
    n: usize,
    mix: ClassMix,
    seed: u64,
) -> Result<Vec<(String, usize)>> {
    if let Some(c) = reps.iter().position(|r| r.is_empty()) {
        return Err(Error::Usage(format!(
            "class {c} has no representative application"
        )));
    }
    if let ClassMix::Oriented(d) = mix {
        if d >= reps.len() {
            return Err(Error::Usage(format!(
                "dominant class {d} does not exist ({} classes)",
                reps.len()
            )));
        }
    }
    let mut rng = SplitMix(seed);
    let mut q = Vec::with_capacity(n);
    for (c, &k) in class_counts(n, reps.len(), mix).iter().enumerate() {
        for _ in 0..k {
            q.push((reps[c][rng.below(reps[c].len())].clone(), c));
        }
    }
    // Fisher–Yates.
    for i in (1..q.len()).rev() {
        let j = rng.below(i + 1);
        q.swap(i, j);
    }
    Ok(q)
}

/// A co-running group: `(application, class index)` per member.
pub type Group = Vec<(String, usize)>;

/// Groups of `ng` in arrival order (the last one smaller when `ng` does not divide).
pub fn arrival_groups(queue: &[(String, usize)], ng: usize) -> Vec<Vec<(String, usize)>> {
    queue.chunks(ng.max(1)).map(|c| c.to_vec()).collect()
}

/// Groups chosen by the pattern ILP: per pattern, per group, the earliest waiting
/// applications of the pattern's classes. Groups come out in the ILP's pattern order,
/// with the ILP's objective Σ e_k·L_k.
pub fn ilp_groups(
    queue: &[(String, usize)],
    ng: usize,
    m: &Interference,
) -> Result<(Vec<Group>, f64)> {
    let nc = m.classes.len();
    let mut counts = vec![0u32; nc];
    for (_, c) in queue {
        if *c >= nc {
            return Err(Error::Usage(format!(
                "a queued application has class {c}, the matrix has {nc} classes"
            )));
        }
        counts[*c] += 1;
    }
    let grouping = solve(&counts, ng, m)?;
    let mut waiting: Vec<std::collections::VecDeque<(String, usize)>> =
        vec![Default::default(); nc];
    for a in queue {
        waiting[a.1].push_back(a.clone());
    }
    let mut out = Vec::new();
    for (pattern, n) in &grouping.groups {
        for _ in 0..*n {
            let mut g = Vec::new();
            for (c, &k) in pattern.iter().enumerate() {
                for _ in 0..k {
                    g.push(waiting[c].pop_front().ok_or_else(|| {
                        Error::internal("the ILP's groups do not match the queue")
                    })?);
                }
            }
            out.push(g);
        }
    }
    Ok((out, grouping.objective))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reps() -> Vec<Vec<String>> {
        vec![
            vec!["blk".into(), "gups".into()],
            vec!["bp".into()],
            vec!["bfs2".into()],
            vec!["hs".into(), "lud".into()],
        ]
    }

    #[test]
    fn mixes_have_the_paper_shapes() {
        assert_eq!(class_counts(20, 4, ClassMix::Equal), vec![5, 5, 5, 5]);
        assert_eq!(class_counts(36, 4, ClassMix::Equal), vec![9, 9, 9, 9]);
        let o = class_counts(20, 4, ClassMix::Oriented(1));
        assert_eq!(o, vec![3, 11, 3, 3]);
        assert!(o[1] * 2 > 20);
        assert_eq!(
            class_counts(36, 4, ClassMix::Oriented(3))
                .iter()
                .sum::<usize>(),
            36
        );
    }

    #[test]
    fn queues_are_seeded_and_keep_the_mix() {
        let a = make_queue(&reps(), 20, ClassMix::Oriented(0), 7).unwrap();
        let b = make_queue(&reps(), 20, ClassMix::Oriented(0), 7).unwrap();
        let c = make_queue(&reps(), 20, ClassMix::Oriented(0), 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.iter().filter(|x| x.1 == 0).count(), 11);
        assert!(make_queue(&[vec![], vec!["x".into()]], 4, ClassMix::Equal, 1).is_err());
    }

    #[test]
    fn ilp_groups_use_every_application_once() {
        let m = Interference {
            classes: vec!["M".into(), "MC".into(), "C".into(), "A".into()],
            s: vec![
                vec![2.05, 1.5, 1.6, 1.2],
                vec![1.78, 1.4, 1.5, 1.1],
                vec![1.76, 1.3, 1.55, 1.15],
                vec![1.51, 1.2, 1.3, 1.06],
            ],
        };
        let q = make_queue(&reps(), 21, ClassMix::Equal, 3).unwrap();
        for ng in [2, 3] {
            let (g, _) = ilp_groups(&q, ng, &m).unwrap();
            let mut names: Vec<_> = g.iter().flatten().cloned().collect();
            let mut want = q.clone();
            names.sort();
            want.sort();
            assert_eq!(names, want, "ng {ng}");
            assert!(g.iter().all(|x| x.len() <= ng));
            assert_eq!(arrival_groups(&q, ng).len(), g.len());
        }
    }
}

/// The smallest SM count at which an application alone reaches `knee` (e.g. 0.95) of its
/// best IPC over the counts `points` (Profile-based: "the number of SMs that maximises
/// its isolated performance", read as the knee so that saturated applications do not
/// claim the whole GPU).
pub fn profiled_sms(
    setup: &super::Setup,
    app: &crate::engine::AppSpec,
    points: &[u32],
    knee: f64,
) -> Result<u32> {
    use rayon::prelude::*;
    let ipcs: Vec<f64> = points
        .par_iter()
        .map(|&n| {
            let place = crate::engine::AppPlacement {
                sms: Some(crate::profile::points::sm_mask(setup.spec, n)),
                ..Default::default()
            };
            super::alone_ipc(
                setup.spec,
                setup.mode,
                setup.max_cycles,
                app,
                place,
                setup.fast_forward,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let best = ipcs.iter().copied().fold(0.0, f64::max);
    Ok(points
        .iter()
        .zip(&ipcs)
        .find(|(_, &x)| x >= knee * best)
        .map(|(&n, _)| n)
        .unwrap_or(setup.spec.sm.count))
}

pub use crate::policy::baseline::block_masks;

/// What running one group gave.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRun {
    /// Cycles until the last member finished (or reached its budget).
    pub makespan: u64,
    pub warp_insts: u64,
    /// IPC of each member over its own run time, in group order.
    pub app_ipc: Vec<f64>,
}

/// Runs one group together under the policy `how` (a one-member group under SMRA runs
/// alone on the whole GPU). In budget mode each member runs to its alone budget;
/// otherwise each runs its kernels once. A member that finishes leaves its SMs to the
/// others.
pub fn run_group(
    setup: &super::Setup,
    benches: &[super::Loaded],
    group: &[String],
    how: &crate::policy::PolicySpec,
) -> Result<GroupRun> {
    use crate::policy::{execute_with, PolicySpec, Workload};
    let members = group
        .iter()
        .map(|n| {
            benches
                .iter()
                .find(|b| &b.name == n)
                .ok_or_else(|| Error::Usage(format!("unknown application `{n}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let apps: Vec<crate::engine::AppSpec> = members.iter().map(|b| b.app.clone()).collect();
    let mode = setup.mode.run_mode(&members);
    let policy = match how {
        PolicySpec::Smra(_) if apps.len() == 1 => PolicySpec::Spatial(Default::default()).build(),
        p => p.build(),
    };
    let w = Workload {
        spec: setup.spec,
        apps: &apps,
        mode,
    };
    let s = execute_with(policy.as_ref(), &w, setup.max_cycles, 0, setup.fast_forward)
        .map_err(|e| e.context(format_args!("group {}", group.join("+"))))?
        .stats;
    Ok(GroupRun {
        makespan: s.apps.iter().map(|a| a.end).max().unwrap_or(s.cycles),
        warp_insts: s.apps.iter().map(|a| a.counters.warp_insts).sum(),
        app_ipc: s
            .apps
            .iter()
            .map(|a| a.counters.warp_insts as f64 / a.end.saturating_sub(a.arrival).max(1) as f64)
            .collect(),
    })
}

/// What running a queue gave.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueRun {
    /// Cycles of all groups, one after another.
    pub cycles: u64,
    pub warp_insts: u64,
    /// `warp_insts / cycles` (the paper's throughput T).
    pub throughput: f64,
    /// Per group member, group by group: `(name, IPC in its group)`.
    pub app_ipc: Vec<(String, f64)>,
}

impl QueueRun {
    /// The groups' runs one after another.
    pub fn of(groups: &[Vec<String>], runs: &[GroupRun]) -> QueueRun {
        let mut out = QueueRun {
            cycles: 0,
            warp_insts: 0,
            throughput: 0.0,
            app_ipc: Vec::new(),
        };
        for (g, r) in groups.iter().zip(runs) {
            out.cycles += r.makespan;
            out.warp_insts += r.warp_insts;
            out.app_ipc
                .extend(g.iter().cloned().zip(r.app_ipc.iter().copied()));
        }
        out.throughput = out.warp_insts as f64 / out.cycles.max(1) as f64;
        out
    }
}

/// Runs the groups (in parallel; they are independent) and adds them up as if they ran
/// one after another.
pub fn run_queue(
    setup: &super::Setup,
    benches: &[super::Loaded],
    groups: &[Vec<(String, usize)>],
    how: &crate::policy::PolicySpec,
) -> Result<QueueRun> {
    use rayon::prelude::*;
    let names: Vec<Vec<String>> = groups
        .iter()
        .map(|g| g.iter().map(|(n, _)| n.clone()).collect())
        .collect();
    let runs = names
        .par_iter()
        .map(|g| run_group(setup, benches, g, how))
        .collect::<Result<Vec<_>>>()?;
    Ok(QueueRun::of(&names, &runs))
}
