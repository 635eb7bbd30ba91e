//! SiM and Slate, and the baselines they are compared with: SiM's greedy allocation
//! (Algorithm 1) reaches the brute-force min-max remaining time; preemption and resizing
//! lose no logical block and run none twice; Slate's SM ranges are disjoint and
//! contiguous; MPS never partitions; time slicing never runs two applications at once.

mod common;

use gpumodel::engine::{Action, AppSpec, Hook, RunConfig, RunMode, View};
use gpumodel::policy::sim::{greedy, max_remaining, Choice};
use gpumodel::policy::{execute, Outcome, PolicySpec, Workload};
use proptest::prelude::*;

/// The least max remaining time over every combination of points that fits.
fn brute(ks: &[Choice], cap: &[u64; 5], fixed: &[u64; 5]) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut at = vec![0usize; ks.len()];
    loop {
        let fits = (0..5).all(|r| {
            fixed[r]
                + ks.iter()
                    .zip(&at)
                    .map(|(k, &i)| k.points[i].0 as u64 * k.need[r])
                    .sum::<u64>()
                <= cap[r]
        });
        if fits {
            let m = max_remaining(ks, &at);
            best = Some(best.map_or(m, |b: f64| b.min(m)));
        }
        // Next combination (odometer).
        let mut i = 0;
        loop {
            if i == ks.len() {
                return best;
            }
            at[i] += 1;
            if at[i] < ks[i].points.len() {
                break;
            }
            at[i] = 0;
            i += 1;
        }
    }
}

fn choice() -> impl Strategy<Value = Choice> {
    (
        proptest::collection::vec((1u32..3, 30u64..95), 1..6),
        proptest::array::uniform5(0u64..5),
        100u64..1000,
    )
        .prop_map(|(steps, need, t0)| {
            // Workers increasing, remaining time strictly decreasing (a pruned profile).
            let mut points = Vec::new();
            let (mut c, mut t) = (0u32, t0 as f64);
            // The first point is one worker's time; each next point is 30-95% of the last.
            for (i, (dc, pct)) in steps.into_iter().enumerate() {
                c += dc;
                if i > 0 {
                    t = (t * pct as f64 / 100.0).floor();
                }
                points.push((c, t));
            }
            Choice { points, need }
        })
}

proptest! {
    #[test]
    fn greedy_reaches_the_brute_force_min_max(
        ks in proptest::collection::vec(choice(), 1..4),
        cap in proptest::array::uniform5(4u64..30),
        fixed in proptest::array::uniform5(0u64..4),
    ) {
        let b = brute(&ks, &cap, &fixed);
        match greedy(&ks, &cap, &fixed) {
            // The smallest points use the least of everything: nothing fits.
            None => prop_assert!(b.is_none()),
            Some(at) => {
                let g = max_remaining(&ks, &at);
                prop_assert_eq!(Some(g), b, "greedy {:?}", at);
            }
        }
    }
}

fn workload(apps: &[AppSpec]) -> Workload<'_> {
    static SPEC: std::sync::OnceLock<gpumodel::arch::GpuSpec> = std::sync::OnceLock::new();
    Workload {
        spec: SPEC.get_or_init(|| common::fermi_ws(4)),
        apps,
        mode: RunMode::Completion,
    }
}

fn run(policy: &str, params: &[(&str, i64)], apps: &[AppSpec]) -> Outcome {
    let mut t = toml::Table::new();
    for (k, v) in params {
        t.insert(k.to_string(), toml::Value::Integer(*v));
    }
    let p = PolicySpec::parse(policy, &t).unwrap();
    execute(p.build().as_ref(), &workload(apps), 50_000_000).unwrap()
}

/// Every instruction and every logical block exactly once.
fn all_once(o: &Outcome, apps: &[AppSpec]) {
    for (i, a) in apps.iter().enumerate() {
        let blocks: u64 = a.kernels.iter().map(|k| k.num_ctas() as u64).sum();
        let c = &o.stats.apps[i].counters;
        assert_eq!(c.warp_insts, a.warp_insts(), "{}: {}", o.policy, a.name);
        assert_eq!(c.ctas_done, blocks, "{}: {} blocks", o.policy, a.name);
    }
}

fn pair(second_at: u64) -> Vec<AppSpec> {
    let mut apps = vec![common::ws_app("hot"), common::ws_app("blk")];
    apps[1].arrival = second_at;
    apps
}

#[test]
fn sim_resizes_on_arrival_and_loses_no_block() {
    let apps = pair(3000);
    let o = run("sim", &[], &apps);
    all_once(&o, &apps);
    // The service decided at the first arrival, at the second (shrinking the first
    // kernel) and when a last block started.
    assert!(o.log.iter().any(|l| l.contains("(arrival)")), "{:?}", o.log);
    assert!(
        o.log.iter().any(|l| l.contains("(last block started)")),
        "{:?}",
        o.log
    );
    let first: Vec<&String> = o.log.iter().filter(|l| l.contains("app0=")).collect();
    assert!(first.len() >= 2, "{:?}", o.log);
}

#[test]
fn slate_task_sizes_and_sm_ranges() {
    let apps = pair(2000);
    for t in [1, 10, 100] {
        let o = run("slate", &[("task_blocks", t)], &apps);
        all_once(&o, &apps);
    }
    // Forced co-run (both classes given low intensity): disjoint contiguous ranges, and
    // the survivor grows to every SM.
    let mut t = toml::Table::new();
    let mut c = toml::Table::new();
    c.insert("hot".into(), "L_C/L_M".into());
    c.insert("blk".into(), "L_C/L_M".into());
    t.insert("classes".into(), toml::Value::Table(c));
    let p = PolicySpec::parse("slate", &t).unwrap();
    let o = execute(p.build().as_ref(), &workload(&apps), 50_000_000).unwrap();
    all_once(&o, &apps);
    let ranges: Vec<(u64, usize, usize)> = o
        .log
        .iter()
        .filter_map(|l| {
            let (at, rest) = l.split_once(": ")?;
            let r = rest.split(" on SMs ").nth(1)?;
            let (lo, hi) = r.split_once("..")?;
            Some((at.parse().ok()?, lo.parse().ok()?, hi.parse().ok()?))
        })
        .collect();
    assert!(ranges.len() >= 3, "{:?}", o.log);
    // At the second arrival: two ranges splitting the 4 SMs.
    let at2: Vec<_> = ranges.iter().filter(|r| r.0 == 2000).collect();
    assert_eq!(at2.len(), 2, "{:?}", o.log);
    let mut rs: Vec<(usize, usize)> = at2.iter().map(|r| (r.1, r.2)).collect();
    rs.sort();
    assert_eq!(rs, vec![(0, 1), (2, 3)]);
    // Afterwards someone gets the whole GPU.
    assert!(ranges.iter().any(|r| r.0 > 2000 && r.1 == 0 && r.2 == 3));
    // Table I: two medium-memory kernels do not co-run; the second waits.
    let mut c = toml::Table::new();
    c.insert("hot".into(), "M_C/M_M".into());
    c.insert("blk".into(), "L_C/M_M".into());
    let mut t = toml::Table::new();
    t.insert("classes".into(), toml::Value::Table(c));
    let p = PolicySpec::parse("slate", &t).unwrap();
    let o = execute(p.build().as_ref(), &workload(&apps), 50_000_000).unwrap();
    all_once(&o, &apps);
    assert!(o.log.iter().any(|l| l.contains("waits")), "{:?}", o.log);
    let (a, b) = (&o.stats.apps[0], &o.stats.apps[1]);
    assert!(
        b.start >= a.end,
        "solo: blk starts {} after hot ends {}",
        b.start,
        a.end
    );
}

#[test]
fn mps_never_partitions() {
    let apps = pair(0);
    let o = run("mps", &[], &apps);
    all_once(&o, &apps);
    assert_eq!(o.partition, "shared");
    // The only SM change is the in-order opening of the whole GPU to the next kernel:
    // nothing is ever taken away and no one gets a subset.
    assert!(
        o.stats
            .reconfigs
            .iter()
            .all(|r| r.what.contains(": 4 SMs") && r.what.contains("0 taken away")),
        "{:?}",
        o.stats.reconfigs
    );
    // It is the left-over policy's run, cycle for cycle.
    let lo = run("left-over", &[], &apps);
    assert_eq!(o.stats.cycles, lo.stats.cycles);
}

#[test]
fn time_slicing_never_co_runs() {
    let spec = common::fermi_ws(4)
        .with_overrides(&["reconfig.time_slice=5 us".to_string()])
        .unwrap();
    let apps = pair(0);
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Completion,
    };
    let plan = PolicySpec::from_name("time-slice")
        .unwrap()
        .build()
        .plans(&w)
        .unwrap()
        .remove(0);
    let cfg = RunConfig {
        mode: RunMode::Completion,
        placement: plan.placement,
        sample_every: 0,
        max_cycles: 50_000_000,
        fast_forward: None,
    };
    // Every 20 cycles: which applications issued since the last look.
    let mut last = vec![0u64; 2];
    let mut both = Vec::new();
    let mut ctl = common::engine_kit::ctl(Some(20), |h: Hook, v: &View, _: &mut Vec<Action>| {
        if h != Hook::Epoch {
            return;
        }
        let now: Vec<u64> = v.apps.iter().map(|a| a.counters.warp_insts).collect();
        if now.iter().zip(&last).all(|(n, l)| n > l) {
            both.push(v.now);
        }
        last = now;
    });
    let s = common::engine_kit::run_ctl(&spec, &apps, &cfg, &mut ctl);
    let switches: Vec<u64> = s
        .reconfigs
        .iter()
        .filter(|r| r.what.starts_with("time slice"))
        .map(|r| r.cycle)
        .collect();
    assert!(switches.len() >= 2, "{:?}", s.reconfigs);
    // Both progress within one 20-cycle look only across a switch (the old context's
    // issued instructions drain while the new one starts).
    for t in both {
        assert!(
            switches.iter().any(|&c| c <= t && t < c + 20 + 2000),
            "both applications issued in the 20 cycles before {t}; switches {switches:?}"
        );
    }
}
