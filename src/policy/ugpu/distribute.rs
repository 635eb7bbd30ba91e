//! UGPU's demand-aware resource distribution (seed 004 §3.2, Fig. 5, eq. 1–2).
//!
//! Per application, from a profile (instructions, LLC accesses and hits over an epoch):
//!
//! * eq. 1, the bandwidth one SM demands: `BW_SM = IPC × APKI_LLC × Size_CacheLine`, in
//!   bytes per core cycle (× `Freq_SM` gives bytes per second; both sides of the test share
//!   the clock, so it cancels). We count LLC accesses in sectors, so `APKI × line` is the
//!   LLC bytes accessed per instruction. `IPC` is `IPC_max` (schedulers × issue width: the
//!   paper's "SM can issue instructions without any stalls") or, with
//!   `demand = "measured"`, the IPC per SM the application reached in the epoch.
//! * eq. 2, the bandwidth one channel supplies:
//!   `BW_MC = H_LLC × B_LLC + min((1 − H_LLC) × B_LLC, B_MEM)`, with `B_LLC` the channel's
//!   L2 slices × crossbar port width (bytes per interconnect cycle, in core cycles) and
//!   `B_MEM` the channel's peak DRAM bandwidth.
//! * Fig. 5: an application is compute-bound iff `BW_SM × #SM ≤ BW_MC × #MC`; its degree is
//!   supply / demand (memory-bound: demand / supply). Each iteration moves `delta` SMs from
//!   the most memory-bound application to the most compute-bound one and `delta` channel
//!   indices the other way; it stops when either list is empty, when nothing can move
//!   (every slice keeps `min_sms` SMs and `min_indices` indices — at least one channel per
//!   stack, §4.3), when a move would return to a partition already visited (the pair
//!   would swap classes back and forth), or after `max_iterations` (the paper's 20).

use super::slices::{Geometry, Slice};
use crate::arch::GpuSpec;
use crate::engine::Counters;

/// What eq. 1–2 need of one application.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// eq. 1: bytes per core cycle one SM demands.
    pub bw_sm: f64,
    /// eq. 2: bytes per core cycle one channel supplies to this application.
    pub bw_mc: f64,
}

/// Which IPC eq. 1 multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemandIpc {
    /// `IPC_max`: the SM issuing without stalls (the paper).
    Ideal,
    /// The IPC per SM measured over the profile.
    Measured,
}

/// Hardware rates eq. 1–2 use, per core cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardware {
    pub ipc_max: f64,
    pub sector_bytes: f64,
    /// `B_LLC` of one channel.
    pub b_llc: f64,
    /// `B_MEM` of one channel.
    pub b_mem: f64,
}

impl Hardware {
    /// eq. 2: bytes per core cycle one channel supplies at LLC hit rate `h`.
    pub fn bw_mc(&self, h: f64) -> f64 {
        h * self.b_llc + ((1.0 - h) * self.b_llc).min(self.b_mem)
    }

    pub fn of(spec: &GpuSpec) -> Hardware {
        let core = spec.clocks.core.hz().max(1) as f64;
        Hardware {
            ipc_max: (spec.sm.schedulers.max(1) * spec.sm.issue_width.max(1)) as f64,
            sector_bytes: spec.l2.sector.0 as f64,
            b_llc: spec.l2.slices_per_channel as f64
                * spec.noc.port_width.0 as f64
                * spec.clocks.icnt.hz() as f64
                / core,
            b_mem: spec.dram.peak_bytes_per_sec() as f64 / spec.dram.channels.max(1) as f64 / core,
        }
    }
}

/// One application's profile over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Profile {
    pub insts: u64,
    pub llc_accesses: u64,
    pub llc_hits: u64,
    pub dram_bytes: u64,
    pub ctas_done: u64,
    pub cycles: u64,
    /// SMs the application held over the interval.
    pub sms: u32,
    /// Pages it migrated (on demand) and cycles it was paused for migrations in the
    /// interval: a profile taken while pages move does not show the application's demand.
    pub migrating: u64,
}

impl Profile {
    /// The counters' change from `before` to `after` over `cycles` on `sms` SMs.
    pub fn between(before: &Counters, after: &Counters, cycles: u64, sms: u32) -> Profile {
        Profile {
            insts: after.warp_insts.saturating_sub(before.warp_insts),
            llc_accesses: after.l2_accesses.saturating_sub(before.l2_accesses),
            llc_hits: after.l2_hits.saturating_sub(before.l2_hits),
            dram_bytes: after.dram_bytes.saturating_sub(before.dram_bytes),
            ctas_done: after.ctas_done.saturating_sub(before.ctas_done),
            cycles,
            sms,
            migrating: (after.pages_migrated + after.migration_pause_cycles)
                .saturating_sub(before.pages_migrated + before.migration_pause_cycles),
        }
    }

    /// Warp instructions per cycle over the interval, all its SMs together (0 for an empty
    /// interval).
    pub fn ipc(&self) -> f64 {
        self.insts as f64 / self.cycles.max(1) as f64
    }

    /// eq. 1–2 for this profile; `None` when it executed nothing (no rates to go by).
    pub fn demand(&self, hw: &Hardware, ipc: DemandIpc) -> Option<Demand> {
        if self.insts == 0 || self.cycles == 0 {
            return None;
        }
        let per_sm_ipc = match ipc {
            DemandIpc::Ideal => hw.ipc_max,
            DemandIpc::Measured => self.ipc() / self.sms.max(1) as f64,
        };
        let bytes_per_inst = self.llc_accesses as f64 * hw.sector_bytes / self.insts as f64;
        let h = if self.llc_accesses == 0 {
            1.0
        } else {
            self.llc_hits as f64 / self.llc_accesses as f64
        };
        Some(Demand {
            bw_sm: per_sm_ipc * bytes_per_inst,
            bw_mc: hw.bw_mc(h),
        })
    }
}

/// The knobs of Fig. 5.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rules {
    pub delta_sms: u32,
    pub delta_indices: u32,
    pub min_sms: u32,
    pub min_indices: u32,
    pub max_iterations: u32,
}

impl Rules {
    /// The finest SM step with which `max_iterations` iterations can take a slice of
    /// `start` SMs down to `min_sms`: `ceil((start − min_sms) / max_iterations)`, at least 1.
    pub fn auto_delta_sms(start: u32, min_sms: u32, max_iterations: u32) -> u32 {
        let span = start.saturating_sub(min_sms);
        span.div_ceil(max_iterations.max(1)).max(1)
    }
}

/// What the algorithm decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub slices: Vec<Slice>,
    /// Iterations that moved something.
    pub iterations: u32,
    /// Why it stopped.
    pub stop: &'static str,
}

/// Fig. 5 lines 12–15 on totals: compute-bound (`true`) iff `demand ≤ supply`, and the
/// degree, the larger over the smaller.
pub fn bound(demand: f64, supply: f64) -> (bool, f64) {
    if demand <= supply {
        (
            true,
            if demand > 0.0 {
                supply / demand
            } else {
                f64::MAX
            },
        )
    } else {
        (
            false,
            if supply > 0.0 {
                demand / supply
            } else {
                f64::MAX
            },
        )
    }
}

/// Compute-bound (`Some(true)`) or memory-bound, and the degree, of an application with
/// demand `d` on `s`; `None` without a profile.
pub fn classify(d: Option<&Demand>, s: &Slice, geom: &Geometry) -> Option<(bool, f64)> {
    let d = d?;
    Some(bound(
        d.bw_sm * s.sms as f64,
        d.bw_mc * (s.indices * geom.channels_per_index()) as f64,
    ))
}

/// Fig. 5 from `start`; applications without a demand (`None`: finished or not profiled)
/// keep their slices.
pub fn distribute(
    demands: &[Option<Demand>],
    start: &[Slice],
    geom: &Geometry,
    rules: &Rules,
) -> Decision {
    let mut cur = start.to_vec();
    let mut seen = vec![cur.clone()];
    let mut iterations = 0;
    let stop = loop {
        if iterations >= rules.max_iterations {
            break "iteration limit";
        }
        // (a) the degree of every application's demand; ties go to the lower index.
        let mut cid: Option<(usize, f64)> = None;
        let mut mid: Option<(usize, f64)> = None;
        for (a, s) in cur.iter().enumerate() {
            match classify(demands[a].as_ref(), s, geom) {
                Some((true, g)) if cid.is_none_or(|(_, b)| g > b) => cid = Some((a, g)),
                Some((false, g)) if mid.is_none_or(|(_, b)| g > b) => mid = Some((a, g)),
                _ => {}
            }
        }
        let (Some((c, _)), Some((m, _))) = (cid, mid) else {
            break "no compute-bound or no memory-bound application";
        };
        // (b) SMs from the most memory-bound to the most compute-bound, channels back.
        let sms = rules
            .delta_sms
            .min(cur[m].sms.saturating_sub(rules.min_sms));
        let idx = rules
            .delta_indices
            .min(cur[c].indices.saturating_sub(rules.min_indices));
        if sms == 0 && idx == 0 {
            break "nothing left to move";
        }
        let mut next = cur.clone();
        next[m].sms -= sms;
        next[c].sms += sms;
        next[c].indices -= idx;
        next[m].indices += idx;
        if seen.contains(&next) {
            break "partition already visited";
        }
        seen.push(next.clone());
        cur = next;
        iterations += 1;
    };
    Decision {
        slices: cur,
        iterations,
        stop,
    }
}

/// Cycles the fixed-function unit takes to decide (§3.3): 148 for the demand and supply
/// calculation, 162 per iteration.
pub fn latency(iterations: u32) -> u64 {
    148 + 162 * iterations as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom() -> Geometry {
        Geometry {
            sms: 80,
            indices: 8,
            stacks: 4,
        }
    }

    fn rules() -> Rules {
        Rules {
            delta_sms: 10,
            delta_indices: 1,
            min_sms: 2,
            min_indices: 1,
            max_iterations: 20,
        }
    }

    fn even(n: usize) -> Vec<Slice> {
        geom().balanced(n, &(0..n).collect::<Vec<_>>())
    }

    /// Demand and supply totals of an application on a slice.
    fn totals(d: &Demand, s: &Slice) -> (f64, f64) {
        (d.bw_sm * s.sms as f64, d.bw_mc * (s.indices * 4) as f64)
    }

    #[test]
    fn eq1_and_eq2_from_a_profile() {
        let hw = Hardware {
            ipc_max: 2.0,
            sector_bytes: 128.0,
            b_llc: 64.0,
            b_mem: 20.0,
        };
        let p = Profile {
            insts: 1000,
            llc_accesses: 250,
            llc_hits: 50,
            dram_bytes: 0,
            ctas_done: 0,
            cycles: 1000,
            sms: 10,
            migrating: 0,
        };
        let d = p.demand(&hw, DemandIpc::Ideal).unwrap();
        // 2 inst/cycle x 32 B/inst; 0.2 x 64 + min(0.8 x 64, 20).
        assert!((d.bw_sm - 64.0).abs() < 1e-9);
        assert!((d.bw_mc - 32.8).abs() < 1e-9);
        let m = p.demand(&hw, DemandIpc::Measured).unwrap();
        assert!((m.bw_sm - 0.1 * 32.0).abs() < 1e-9);
        assert!(Profile::default().demand(&hw, DemandIpc::Ideal).is_none());
    }

    #[test]
    fn moves_sms_to_the_compute_bound_and_channels_to_the_memory_bound() {
        let mem = Demand {
            bw_sm: 30.0,
            bw_mc: 20.0,
        };
        let comp = Demand {
            bw_sm: 0.5,
            bw_mc: 60.0,
        };
        let start = even(2);
        let d = distribute(&[Some(mem), Some(comp)], &start, &geom(), &rules());
        assert!(d.slices[1].sms > 40 && d.slices[1].indices < 4, "{d:?}");
        assert!(d.slices[0].sms < 40 && d.slices[0].indices > 4, "{d:?}");
        // It stops where the memory-bound app's demand meets its supply, or where no more
        // can move: here mem on 20 SMs (600 B/cycle) against 6 indices (480) is still
        // memory-bound, and at 10 SMs against 7 (300 < 560) it would be compute-bound.
        assert!(d.iterations >= 1 && d.iterations <= 20);
        let (dm, sm) = totals(&mem, &d.slices[0]);
        let before = totals(&mem, &start[0]);
        assert!(dm / sm < before.0 / before.1, "closer to balance");
    }

    #[test]
    fn respects_totals_and_minimums_for_2_4_and_8_applications() {
        let g = geom();
        let kinds = [
            Demand {
                bw_sm: 60.0,
                bw_mc: 20.0,
            },
            Demand {
                bw_sm: 0.1,
                bw_mc: 64.0,
            },
            Demand {
                bw_sm: 20.0,
                bw_mc: 25.0,
            },
            Demand {
                bw_sm: 1.0,
                bw_mc: 64.0,
            },
        ];
        for n in [2, 4, 8] {
            let demands: Vec<Option<Demand>> = (0..n).map(|a| Some(kinds[a % 4])).collect();
            let d = distribute(&demands, &even(n), &g, &rules());
            assert_eq!(
                d.slices.iter().map(|s| s.sms).sum::<u32>(),
                80,
                "{n}: {d:?}"
            );
            assert_eq!(
                d.slices.iter().map(|s| s.indices).sum::<u32>(),
                8,
                "{n}: {d:?}"
            );
            for s in &d.slices {
                assert!(s.sms >= 2 && s.indices >= 1, "{n}: {d:?}");
            }
            assert!(d.iterations <= 20);
        }
    }

    #[test]
    fn homogeneous_mixes_do_not_move() {
        let mem = Demand {
            bw_sm: 30.0,
            bw_mc: 20.0,
        };
        let d = distribute(&[Some(mem), Some(mem)], &even(2), &geom(), &rules());
        assert_eq!(d.slices, even(2));
        assert_eq!(d.iterations, 0);
        let comp = Demand {
            bw_sm: 0.5,
            bw_mc: 60.0,
        };
        let d = distribute(&[Some(comp), Some(comp)], &even(2), &geom(), &rules());
        assert_eq!(d.slices, even(2));
        // Without a profile an application keeps its slice and takes no part.
        let d = distribute(&[Some(mem), None], &even(2), &geom(), &rules());
        assert_eq!(d.slices, even(2));
    }

    #[test]
    fn never_oscillates_and_stops_at_the_iteration_limit() {
        // Nearly balanced: one step makes the pair swap classes; the step back is a
        // partition already visited.
        let a = Demand {
            bw_sm: 1.7,
            bw_mc: 1.0,
        };
        let b = Demand {
            bw_sm: 1.5,
            bw_mc: 1.9,
        };
        let d = distribute(&[Some(a), Some(b)], &even(2), &geom(), &rules());
        assert!(d.iterations <= 2, "{d:?}");
        let mut r = rules();
        r.max_iterations = 1;
        r.delta_sms = 1;
        let mem = Demand {
            bw_sm: 30.0,
            bw_mc: 20.0,
        };
        let comp = Demand {
            bw_sm: 0.5,
            bw_mc: 60.0,
        };
        let d = distribute(&[Some(mem), Some(comp)], &even(2), &geom(), &r);
        assert_eq!(d.iterations, 1);
        assert_eq!(d.stop, "iteration limit");
        assert_eq!(latency(20), 148 + 162 * 20);
    }

    /// Brute force on a small grid: the result is a fixed point — a further Fig. 5 step
    /// from it either cannot happen or goes back to where it came from.
    #[test]
    fn result_is_a_fixed_point_of_one_more_step() {
        let g = geom();
        let mut one = rules();
        one.max_iterations = 1;
        for bw in [5.0, 15.0, 30.0, 60.0] {
            for cb in [0.1, 1.0, 3.0] {
                let ds = [
                    Some(Demand {
                        bw_sm: bw,
                        bw_mc: 20.0,
                    }),
                    Some(Demand {
                        bw_sm: cb,
                        bw_mc: 50.0,
                    }),
                ];
                let d = distribute(&ds, &even(2), &g, &rules());
                let again = distribute(&ds, &d.slices, &g, &rules());
                if again.iterations > 0 {
                    // Only possible when the next step revisits the previous partition.
                    let back = distribute(&ds, &again.slices, &g, &one);
                    assert!(
                        back.slices == d.slices || back.iterations == 0,
                        "bw {bw}/{cb}: {d:?} then {again:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn auto_step_reaches_the_minimum_within_the_iteration_limit() {
        // The paper's GPU, two applications: 40 SMs each, 20 iterations.
        assert_eq!(Rules::auto_delta_sms(40, 2, 20), 2);
        assert_eq!(Rules::auto_delta_sms(10, 2, 20), 1);
        assert_eq!(Rules::auto_delta_sms(66, 2, 20), 4);
        assert_eq!(Rules::auto_delta_sms(2, 2, 20), 1);
        for (start, min, max) in [(40, 2, 20), (54, 2, 20), (66, 2, 20), (10, 1, 5), (7, 2, 3)] {
            let d = Rules::auto_delta_sms(start, min, max);
            assert!(start - min <= d * max, "{start} {min} {max}: {d}");
            assert!(
                d == 1 || start - min > (d - 1) * max,
                "{start} {min} {max}: {d} not finest"
            );
        }
    }

    #[test]
    fn a_finer_step_stops_nearer_the_class_flip() {
        // The memory-bound application demands 10 per SM and gets 10 per channel. From
        // 40 SMs + 16 channels, 10-SM steps flip it at 20 SMs + 24 channels (200 against
        // 240); 2-SM steps move the channels first (three indices), then SMs until demand
        // meets supply at 28 SMs + 28 channels.
        let g = geom();
        let ds = [
            Some(Demand {
                bw_sm: 10.0,
                bw_mc: 10.0,
            }),
            Some(Demand {
                bw_sm: 0.1,
                bw_mc: 50.0,
            }),
        ];
        let mut coarse = rules();
        coarse.delta_sms = 10;
        let mut fine = rules();
        fine.delta_sms = Rules::auto_delta_sms(40, fine.min_sms, fine.max_iterations);
        let c = distribute(&ds, &even(2), &g, &coarse);
        let f = distribute(&ds, &even(2), &g, &fine);
        let gap = |s: &[Slice]| {
            let demand = 10.0 * s[0].sms as f64;
            let supply = 10.0 * (s[0].indices * g.channels_per_index()) as f64;
            (supply - demand).abs()
        };
        assert!(gap(&f.slices) <= gap(&c.slices), "{f:?} vs {c:?}");
        assert!(f.slices[0].sms > c.slices[0].sms, "{f:?} vs {c:?}");
    }
}
