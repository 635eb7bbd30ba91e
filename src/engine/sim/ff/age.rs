//! Aged jumps (`FastForward::age`): the ageing of resident CTAs still in step at a jump
//! (a random walk of their phases, realised as part-way starts of their slots' next
//! blocks), the crediting of the skipped prefixes, and the end-point (trapezoid)
//! correction of a jump's time from the next steady span. The method and its measured
//! error are in the parent module's doc.

use super::*;

/// Most resident CTAs sampled for the progress curve per snapshot.
const PROG_SAMPLES: usize = 128;
/// Time bins of the progress curve.
const PROG_BINS: usize = 16;

/// One resident slot's ageing at a jump.
pub(super) struct SlotAge {
    pub(super) sm: usize,
    pub(super) slot: usize,
    /// Millionths of each warp's stream its next block skips.
    pub(super) ppm: u32,
    /// Its phase: a fraction of the mean block duration.
    pub(super) phase: f64,
}

/// The value at `x` of the piecewise-linear curve through `pts` (sorted by x).
fn interp(pts: &[(f64, f64)], x: f64) -> f64 {
    match pts.iter().position(|p| p.0 >= x) {
        Some(0) => pts[0].1,
        Some(i) => {
            let ((x0, y0), (x1, y1)) = (pts[i - 1], pts[i]);
            if x1 > x0 {
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            } else {
                y1
            }
        }
        None => pts.last().map_or(x, |p| p.1),
    }
}

impl Engine<'_, '_> {
    /// The end-point correction of the last jump, once a steady span after it measured
    /// the rate its skipped work ended at (`rates`: application, insts, cycles). The
    /// jump's time becomes the trapezoid of the two: each skipped instruction costs the
    /// mean of the time per instruction before and after (averaged over applications),
    /// and the run's offset, anchored events and time-proportional counters follow.
    pub(super) fn ff_correct(&mut self, t: u64, rates: &[(usize, u64, u64)]) {
        let Some(f) = self.ff.as_mut() else {
            return;
        };
        let Some(last) = f.last.take() else {
            return;
        };
        let mut sum = 0f64;
        for x in &last.apps {
            let Some(&(_, i1, c1)) = rates.iter().find(|r| r.0 == x.app) else {
                return;
            };
            if self.rt[x.app].krun != Some(x.krun) {
                return;
            }
            let before = x.cycles as f64 / x.insts.max(1) as f64;
            let after = c1 as f64 / i1.max(1) as f64;
            sum += x.skipped as f64 * (before + after) / 2.0;
        }
        if last.apps.is_empty() {
            return;
        }
        let (j0, j1) = (last.j, (sum / last.apps.len() as f64).round() as u64);
        if j1 == j0 {
            return;
        }
        // The change, applied to everything that grew with the jump's length.
        let grow = j1 > j0;
        let d = j1.abs_diff(j0);
        let adjust = |x: &mut u64, per_span: u64| {
            let by = mul_div(per_span, d, last.dt);
            *x = if grow { *x + by } else { x.saturating_sub(by) };
        };
        for x in &last.apps {
            let (c, st) = (&mut self.ctr[x.app].stalls, &x.stalls);
            adjust(&mut c.short_raw, st.short_raw);
            adjust(&mut c.long_memory, st.long_memory);
            adjust(&mut c.unit_busy, st.unit_busy);
            adjust(&mut c.barrier, st.barrier);
            adjust(&mut c.idle, st.idle);
        }
        adjust(&mut f.idle, last.idle);
        f.stats.cycles = f.stats.cycles - j0 + j1;
        if let Some(jp) = f.stats.jumps.last_mut() {
            jp.cycles = j1;
        }
        self.off = self.off - j0 + j1;
        // Absolute-time events come `d` cycles sooner in engine time when the jump grew,
        // later when it shrank (never before now).
        let shift = |at: u64| if grow { at.saturating_sub(d) } else { at + d };
        self.end = shift(self.end).max(t + 1);
        self.ff_retime(t, shift);
    }

    /// Credits `n` warp instructions of an aged block's skipped prefix to application
    /// `app`, the other counters at the ratios of the span its jump was measured over.
    pub(in crate::engine::sim) fn ff_credit_prefix(&mut self, app: usize, n: u64) {
        let f = self.ff.as_mut().expect("prefixes only with fast-forward");
        f.stats.prefix_insts += n;
        if f.prefixed.len() <= app {
            f.prefixed.resize(app + 1, 0);
        }
        f.prefixed[app] += n;
        let c = &mut self.ctr[app];
        match f.ratios.get(app).and_then(|r| r.as_ref()) {
            Some(d) => credit_insts(c, d, n),
            None => c.warp_insts += n,
        }
    }

    /// The ageing of application `a`'s part of a jump that skips `n` waves of launch
    /// `k`: for each resident CTA (SM, slot, prefix in millionths of its instructions,
    /// phase as a fraction of the mean duration), so that each slot's phase
    /// moves by the random walk its next `n` blocks' durations would have made (normal,
    /// variance `n` times that of the span's CTA durations, wrapped to one mean
    /// duration, the smallest shift as zero). `now` is the jump's start and `rest` the
    /// cycles from its end to the next event the run stops or hooks at. Empty when the
    /// span saw too few completions to measure durations, when the slots are out of step
    /// already, or when `rest` is under [`AGE_ROOM`] mean durations.
    pub(super) fn ff_age(
        &self,
        a: usize,
        k: usize,
        n: usize,
        span: (u64, u64),
        jump: u64,
        (now, rest): (u64, u64),
    ) -> (Vec<SlotAge>, Option<f64>) {
        let Some((mean, var)) = self.ff_durations(a, span) else {
            return (Vec::new(), None);
        };
        // The aged blocks start as the resident ones finish, up to a block's duration
        // after the jump, and the held-back blocks after them: a run that stops (window
        // end, sample, epoch, budget) sooner would see the work held back but not the
        // prefixes that pay for it.
        if !self.ff_in_step(k, now, mean) || (rest as f64) < AGE_ROOM * mean {
            return (Vec::new(), None);
        }
        let drift = self.ff_drift(a, k, now, mean, var);
        let sd = (var * drift * n as f64).sqrt();
        let mut walk = Vec::new();
        for (si, slot, _) in self.resident_slots().filter(|s| s.2.krun as usize == k) {
            let h = hash2(jump, si as u64, slot as u64);
            // Box-Muller from two hashed uniforms.
            let u1 = unit_f64(h).max(1e-12);
            let u2 = unit_f64(mix64(h));
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            walk.push((si, slot, z * sd));
        }
        let lo = walk.iter().map(|w| w.2).fold(f64::INFINITY, f64::min);
        // A phase is a fraction of the block's time; its prefix the fraction of the
        // instructions a block has issued by then (the progress curve), not the same
        // fraction: a stream whose beginning is slower than its end issues less early.
        let curve = self.ff_profile(k, span);
        let walk = walk
            .into_iter()
            .map(|(si, slot, x)| {
                let phase = ((x - lo) / mean).rem_euclid(1.0);
                let insts = curve.as_deref().map_or(phase, |c| interp(c, phase));
                SlotAge {
                    sm: si,
                    slot,
                    ppm: (insts.clamp(0.0, 1.0) * 1e6) as u32,
                    phase,
                }
            })
            .collect();
        (walk, Some(drift))
    }

    /// The fraction of the random walk of CTA durations (variance per wave `var`) that
    /// launch `k`'s slots were seen to follow in detail, in [0, 1]: the decay of their
    /// phase resultant from the base snapshot (the first since the history restarted
    /// once the launch's first wave had turned over) to `now`, against the walk's
    /// `exp(-2π²·var/mean²)` per wave. Measured at a launch's first aged jump (from
    /// detailed time only) and kept for its later ones; 1 (the walk as is) when there
    /// is too little to measure (under two waves).
    pub(super) fn ff_drift(&self, a: usize, k: usize, now: u64, mean: f64, var: f64) -> f64 {
        let f = self.ff.as_ref().expect("fast-forward");
        if let Some(x) = f.jumped_in(a, k).and_then(|j| j.drift) {
            return x;
        }
        let Some((t0, starts)) = &f.base else {
            return 1.0;
        };
        let (s0, n0) = phase_sum(
            starts.iter().filter(|s| s.0 as usize == k).map(|s| s.1),
            *t0,
            mean,
        );
        let (s1, n1) = phase_sum(self.resident_starts(k), now, mean);
        let waves = now.saturating_sub(*t0) as f64 / mean;
        let per_wave = 2.0 * std::f64::consts::PI.powi(2) * var / (mean * mean);
        if n0 < 2.0 || n1 < 2.0 || waves < 2.0 || s0 <= 0.0 || s1 <= 0.0 || per_wave <= 0.0 {
            return 1.0;
        }
        let decay = ((s0 / n0) / (s1 / n1)).ln() / waves;
        (decay / per_wave).clamp(0.0, 1.0)
    }

    /// Progress samples of the resident CTAs started whole (at most [`PROG_SAMPLES`],
    /// evenly strided).
    pub(super) fn ff_progress(&self, now: u64) -> Vec<ProgSample> {
        let whole = || self.resident_slots().filter(|s| !s.2.prefixed);
        let step = whole().count().div_ceil(PROG_SAMPLES).max(1);
        whole()
            .skip(step - 1)
            .step_by(step)
            .filter_map(|(si, slot, c)| {
                let total = self.block_len(c.krun as usize, c.block);
                let done = self.sms[si].cta_issued(slot).min(total);
                (total > 0).then(|| ProgSample {
                    t: now,
                    krun: c.krun,
                    block: c.block,
                    age: now.saturating_sub(c.start),
                    frac: (done as f64 / total as f64) as f32,
                })
            })
            .collect()
    }

    /// Launch `k`'s progress curve over the span `(t0, t1)`: the fraction of a block's
    /// warp instructions issued at each fraction of its duration (blocks that completed), as points
    /// from (0, 0) to (1, 1), non-decreasing; `None` when fewer than half of the
    /// [`PROG_BINS`] time bins were sampled.
    pub(super) fn ff_profile(&self, k: usize, (t0, t1): (u64, u64)) -> Option<Vec<(f64, f64)>> {
        let f = self.ff.as_ref()?;
        let mut sum = [0f64; PROG_BINS];
        let mut cnt = [0u32; PROG_BINS];
        for p in &f.prog {
            if p.t < t0 || p.t > t1 || p.krun as usize != k {
                continue;
            }
            let Some(&dur) = f.whole.get(&(p.krun, p.block)) else {
                continue;
            };
            let tau = p.age as f64 / dur.max(1) as f64;
            if tau >= 1.0 {
                continue;
            }
            let b = ((tau * PROG_BINS as f64) as usize).min(PROG_BINS - 1);
            sum[b] += p.frac as f64;
            cnt[b] += 1;
        }
        if cnt.iter().filter(|&&c| c > 0).count() * 2 < PROG_BINS {
            return None;
        }
        let mut pts = vec![(0.0, 0.0)];
        let mut top = 0f64;
        for b in 0..PROG_BINS {
            if cnt[b] > 0 {
                top = top.max(sum[b] / cnt[b] as f64).min(1.0);
                pts.push(((b as f64 + 0.5) / PROG_BINS as f64, top));
            }
        }
        pts.push((1.0, 1.0));
        Some(pts)
    }

    /// The resident CTAs (running a block with instructions), SM by SM, with their SM
    /// and slot.
    fn resident_slots(&self) -> impl Iterator<Item = (usize, usize, &Cta)> + '_ {
        self.sms.iter().enumerate().flat_map(|(si, sm)| {
            sm.ctas
                .iter()
                .enumerate()
                .filter(|(_, c)| c.live && !c.empty)
                .map(move |(slot, c)| (si, slot, c))
        })
    }

    /// The resident CTAs (running a block with instructions), SM by SM.
    pub(super) fn resident_ctas(&self) -> impl Iterator<Item = &Cta> + '_ {
        self.resident_slots().map(|(_, _, c)| c)
    }

    /// Start times of launch `k`'s resident CTAs.
    fn resident_starts(&self, k: usize) -> impl Iterator<Item = u64> + '_ {
        self.resident_ctas()
            .filter(move |c| c.krun as usize == k)
            .map(|c| c.start)
    }

    /// Mean and variance of application `a`'s CTA durations completed within `span`
    /// (engine times), if at least two completed.
    pub(super) fn ff_durations(&self, a: usize, span: (u64, u64)) -> Option<(f64, f64)> {
        let f = self.ff.as_ref()?;
        let durs: Vec<f64> = f
            .done
            .get(a)?
            .iter()
            .filter(|&&(t, _, _)| t >= span.0 && t <= span.1)
            .map(|&(_, _, d)| d as f64)
            .collect();
        if durs.len() < 2 {
            return None;
        }
        let mean = durs.iter().sum::<f64>() / durs.len() as f64;
        let var = durs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (durs.len() - 1) as f64;
        (mean > 0.0).then_some((mean, var))
    }

    /// Whether launch `k`'s resident CTAs still run in step at `now`: the resultant of
    /// their phases (time since start over the mean duration) is at least [`SPREAD`]
    /// standard errors of uniform phases'. Slots already out of step stay as they are
    /// (a random walk leaves uniform phases uniform).
    pub(super) fn ff_in_step(&self, k: usize, now: u64, mean: f64) -> bool {
        let (r, n) = phase_sum(self.resident_starts(k), now, mean);
        n > 0.0 && r / n.sqrt() >= SPREAD
    }
}

/// The length of the sum of unit phasors of phases `(at - start) / mean`, and their count.
fn phase_sum(starts: impl Iterator<Item = u64>, at: u64, mean: f64) -> (f64, f64) {
    let (mut re, mut im, mut n) = (0f64, 0f64, 0f64);
    for start in starts {
        let th = std::f64::consts::TAU * at.saturating_sub(start) as f64 / mean;
        re += th.cos();
        im += th.sin();
        n += 1.0;
    }
    ((re * re + im * im).sqrt(), n)
}

#[cfg(test)]
mod tests {
    use super::interp;

    #[test]
    fn a_phase_maps_through_the_progress_curve() {
        // A block that issues a quarter of its instructions in the first half of its time.
        let c = [(0.0, 0.0), (0.5, 0.25), (1.0, 1.0)];
        assert_eq!(interp(&c, 0.0), 0.0);
        assert!((interp(&c, 0.25) - 0.125).abs() < 1e-12);
        assert!((interp(&c, 0.5) - 0.25).abs() < 1e-12);
        assert!((interp(&c, 0.75) - 0.625).abs() < 1e-12);
        assert_eq!(interp(&c, 1.0), 1.0);
        // The identity curve leaves a phase as it is.
        let id = [(0.0, 0.0), (1.0, 1.0)];
        for x in [0.1, 0.37, 0.9] {
            assert!((interp(&id, x) - x).abs() < 1e-12);
        }
    }
}
