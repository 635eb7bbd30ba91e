//! Planning a jump: each application's candidate waves (how many may be skipped, what
//! limits them: the tail, a budget, a phase change in the skipped blocks' lengths or unit
//! mix, the room before the next anchored event or the stride), the wave counts that keep
//! co-running applications' skipped times aligned, and the pre-ageing jump of aged mode.

use super::*;

/// A jump: each application's part and wave count, its length, what limited it, and the
/// snapshots `(start, last)` of the span it was measured over.
pub(super) struct Plan {
    pub(super) parts: Vec<Part>,
    pub(super) waves: Vec<usize>,
    pub(super) j: u64,
    pub(super) why: &'static str,
    pub(super) span: (usize, usize),
    /// Per part, the waves of the random walk its ageing applies.
    pub(super) age: Vec<usize>,
    /// A pre-ageing jump (one wave, ageing by half the long jump that follows).
    pub(super) pre: bool,
}

/// One application's part of a jump.
pub(super) struct Part {
    pub(super) app: usize,
    /// Resident CTAs (the wave).
    pub(super) wave: u32,
    /// Warp instructions of the first `i` waves from the next block (`cum[0] = 0`).
    pub(super) cum: Vec<u64>,
    /// Warp instructions per cycle, as `insts / cycles`.
    pub(super) insts: u64,
    pub(super) cycles: u64,
    /// What stops it at `cum.len() - 1` waves.
    pub(super) why: &'static str,
    /// Budget left, minus the margin (warp instructions).
    pub(super) budget: u64,
}

impl Part {
    pub(super) fn time(&self, n: usize) -> u64 {
        mul_div(self.cum[n], self.cycles, self.insts)
    }
}

impl Engine<'_, '_> {
    /// Warp instructions of block `b` of launch `k`, from the stream lengths.
    pub(super) fn block_len(&self, k: usize, b: u32) -> u64 {
        let src = self.kruns[k].src;
        (0..src.cta(b).warps).map(|w| src.warp_len(b, w)).sum()
    }

    /// Instructions per unit kind in the first warp of block `b` (at most 1 M decoded).
    fn block_mix(&self, k: usize, b: u32) -> Result<[u64; 9]> {
        let src = self.kruns[k].src;
        let statics = &src.statics().insts;
        let mut mix = [0u64; 9];
        if src.cta(b).warps == 0 {
            return Ok(mix);
        }
        let mut s = src.warp(b, 0);
        let mut d = DynInst::default();
        let mut n = 0u32;
        while n < 1 << 20
            && s.next_inst(&mut d)
                .map_err(|e| bad(format!("while fast-forwarding: {e}")))?
        {
            if let Some(st) = statics.get(d.sidx as usize) {
                mix[(st.unit as usize).min(8)] += 1;
            }
            n += 1;
        }
        Ok(mix)
    }

    /// The reference blocks `r0..r1` of launch `k` (those dispatched during a measured
    /// span): the range a skipped block's length must fall in (their shortest and longest,
    /// widened by 10%) and their mean length; `None` if there are none.
    pub(super) fn block_range(&self, k: usize, (r0, r1): (u32, u32)) -> Option<((f64, f64), u64)> {
        if r1 <= r0 {
            return None;
        }
        let (mut lo, mut hi, mut sum) = (u64::MAX, 0u64, 0u64);
        for b in r0..r1 {
            let n = self.block_len(k, b);
            lo = lo.min(n);
            hi = hi.max(n);
            sum += n;
        }
        Some(((lo as f64 * 0.9, hi as f64 * 1.1), sum / (r1 - r0) as u64))
    }

    /// Of the next `max` blocks of launch `k` (from its next block), the ones a jump may
    /// skip: every block's length within 10% of the range of the reference blocks
    /// `r0..r1` (those dispatched during the measured span; `range` from
    /// [`Engine::block_range`]), and the unit mix of sampled first warps within
    /// [`MIX_TOLERANCE`] of the reference's. The skippable count is rounded down to a
    /// multiple of `gran` before the mix is sampled. Returns the cumulative warp
    /// instructions of the first `i` skippable blocks (`[0] = 0`) and, if fewer than `max`,
    /// why (`"phase"`).
    pub(super) fn ff_skippable(
        &self,
        k: usize,
        (r0, r1): (u32, u32),
        (lo, hi): (f64, f64),
        max: u32,
        gran: u32,
    ) -> Result<(Vec<u64>, &'static str)> {
        let kr = &self.kruns[k];
        let gran = gran.max(1);
        let mut cum = vec![0u64];
        let mut acc = 0u64;
        let mut why = "";
        for i in 0..max {
            let n = self.block_len(k, kr.next_block + i);
            if (n as f64) < lo || (n as f64) > hi {
                why = "phase";
                break;
            }
            acc += n;
            cum.push(acc);
        }
        let mut blocks = (cum.len() as u32 - 1) / gran * gran;
        if blocks > 0 {
            let mut refmix = [0u64; 9];
            let step = ((r1 - r0) / REF_SAMPLES).max(1);
            for b in (r0..r1).step_by(step as usize) {
                let m = self.block_mix(k, b)?;
                for u in 0..9 {
                    refmix[u] += m[u];
                }
            }
            let (all, samples) = (blocks, MIX_SAMPLES.min(blocks));
            for i in 1..=samples {
                let off = (all as u64 * i as u64 / samples as u64) as u32 - 1;
                let m = self.block_mix(k, kr.next_block + off)?;
                if tv(&m, &refmix) > MIX_TOLERANCE {
                    blocks = off;
                    why = "phase";
                    break;
                }
            }
        }
        cum.truncate(blocks as usize + 1);
        Ok((cum, why))
    }

    /// One application's candidate waves: how many may be skipped, their instruction
    /// counts, and what limits them.
    fn ff_part(
        &self,
        a: usize,
        span: (usize, usize, usize),
        margin: u64,
        room: u64,
    ) -> Result<Option<Part>> {
        let f = self.ff.as_ref().expect("fast-forward");
        let (s, _, l) = span;
        let h = &f.hist;
        let k = self.rt[a].krun.expect("running");
        let kr = &self.kruns[k];
        let wave = kr.live;
        let Some((insts, cycles)) = self.ff_rate(a, span) else {
            return Ok(None);
        };
        // At least one wave stays undispatched: the last wave and the drain run in detail.
        let left = kr.blocks - kr.next_block;
        let mut waves = (left / wave).saturating_sub(1);
        let mut why = "tail";
        // The blocks dispatched during the span are the reference.
        let (r0, r1) = (h[s].next_block[a], h[l].next_block[a]);
        let Some(((lo, hi), mean)) = self.block_range(k, (r0, r1)) else {
            return Ok(None);
        };
        let budget = match &self.cfg.mode {
            RunMode::Budget(b) => b[a]
                .saturating_sub(self.ctr[a].warp_insts)
                .saturating_sub(mul_div(margin, insts, cycles)),
            _ => u64::MAX,
        };
        // Only the waves that can fit the room before the next anchored event and the
        // budget (estimated from the span's mean block length, one wave of slack) are
        // examined: a steady run waiting for an event decodes nothing.
        let per_wave = (mean * wave as u64).max(1);
        let by_time = mul_div(room, insts, cycles) / per_wave + 1;
        let by_budget = budget / per_wave + 1;
        if by_time.min(by_budget) < waves as u64 {
            waves = by_time.min(by_budget) as u32;
            why = if by_time <= by_budget {
                "event"
            } else {
                "budget"
            };
        }
        let (blocks, why_b) = self.ff_skippable(k, (r0, r1), (lo, hi), waves * wave, wave)?;
        if blocks.len() - 1 < (waves * wave) as usize {
            why = why_b;
        }
        // (Whole waves: `blocks` is cut at a multiple of the wave unless a sampled
        // mix ended it, and its entries at multiples of the wave are the waves' sums.)
        let cum: Vec<u64> = blocks.iter().step_by(wave as usize).copied().collect();
        Ok(Some(Part {
            app: a,
            wave,
            cum,
            insts,
            cycles,
            why,
            budget,
        }))
    }

    /// The jump to make now, if any.
    pub(super) fn ff_plan(&self, t: u64) -> Result<Option<Plan>> {
        let Some(running) = self.ff_eligible(t) else {
            return Ok(None);
        };
        let Some(span) = self.ff_span(&running) else {
            return Ok(None);
        };
        let f = self.ff.as_ref().expect("fast-forward");
        let cfg = f.cfg;
        let span_t = (f.hist[span.0].t, f.hist[span.2].t);
        let span_len = span_t.1 - span_t.0;
        let margin = 2 * cfg.window.max(1);
        let passive = self.ctl.epoch_passive();
        let next = self
            .heap
            .earliest(|e| blocking(e, passive))
            .unwrap_or(u64::MAX);
        let mut room = next.saturating_sub(t).saturating_sub(margin);
        if cfg.stride > 0 {
            room = room.min(span_len * cfg.stride as u64);
        }
        // A jump shorter than the span it was measured over is not taken (here: no room
        // for one; after `choose`: none found): the state it leaves (CTAs in the phases of
        // its start, not of its end) costs the detailed run after it about the same
        // whatever the jump's length, so a short one gains little and errs the most for
        // what it saves (a 2-wave jump of a 10-wave run was -4.3%; BENCHMARKS.md).
        if room < span_len {
            return Ok(None);
        }
        let mut parts = Vec::new();
        for &a in &running {
            match self.ff_part(a, span, margin, room)? {
                Some(p) if p.cum.len() > 1 => parts.push(p),
                _ => return Ok(None),
            }
        }
        let Some((waves, j, why)) = choose(&parts, room) else {
            return Ok(None);
        };
        if j < span_len {
            return Ok(None);
        }
        // Before an application's first long jump of a launch, a one-wave jump that ages
        // the state by half the long one: the rate the long jump then uses is measured at
        // its midpoint's age, not at its start's.
        let pre = cfg.age
            && parts.iter().zip(&waves).any(|(p, &n)| {
                let k = self.rt[p.app].krun.expect("running");
                n >= PRE_AGE_MIN
                    && f.jumped_in(p.app, k).is_none()
                    && self.ff_durations(p.app, span_t).is_some_and(|(mean, var)| {
                        // (Slots seen to keep in step have no drift to age: the
                        // young state is the old one, measured as it is.)
                        self.ff_in_step(k, t, mean) && self.ff_drift(p.app, k, t, mean, var) > 0.0
                    })
            });
        if pre {
            let small = parts.iter().map(|p| p.time(1)).max().unwrap_or(0);
            let room = room.min(small + small / 2);
            if let Some((w1, j1, _)) = choose(&parts, room) {
                let age = waves.iter().map(|&n| n / 2).collect();
                return Ok(Some(Plan {
                    parts,
                    waves: w1,
                    j: j1,
                    why: "age",
                    span: (span.0, span.2),
                    age,
                    pre: true,
                }));
            }
        }
        let age = parts
            .iter()
            .zip(&waves)
            .map(|(p, &n)| n.saturating_sub(f.ahead.get(p.app).copied().unwrap_or(0)))
            .collect();
        Ok(Some(Plan {
            parts,
            waves,
            j,
            why,
            span: (span.0, span.2),
            age,
            pre: false,
        }))
    }
}

/// The wave counts of a jump that fits `room` (and every budget), longest first: the
/// first part sets the pace, the others take the wave counts whose skipped time is
/// closest to it (within [`ALIGN`]); with the jump's length and what stopped it.
fn choose(parts: &[Part], room: u64) -> Option<(Vec<usize>, u64, &'static str)> {
    let fits = |p: &Part, n: usize| p.time(n) <= room && p.cum[n] <= p.budget;
    // The first part sets the pace; the others take the wave counts whose skipped
    // time is closest to it.
    let p0 = &parts[0];
    for n0 in (1..p0.cum.len()).rev() {
        if !fits(p0, n0) {
            continue;
        }
        let j0 = p0.time(n0);
        let mut waves = vec![n0];
        for p in &parts[1..] {
            let one = p.time(1).max(1);
            let guess = ((j0 + one / 2) / one) as usize;
            let best = (guess.saturating_sub(1)..=guess + 1)
                .filter(|&n| n >= 1 && n < p.cum.len() && fits(p, n))
                .min_by_key(|&n| p.time(n).abs_diff(j0));
            match best {
                Some(n) if p.time(n).abs_diff(j0) as f64 <= ALIGN * j0 as f64 => waves.push(n),
                _ => break,
            }
        }
        if waves.len() < parts.len() {
            continue;
        }
        let j = parts
            .iter()
            .zip(&waves)
            .map(|(p, &n)| p.time(n))
            .min()
            .unwrap_or(0);
        if j == 0 {
            return None;
        }
        // What stopped it from going further.
        let why = if let Some(p) = parts
            .iter()
            .zip(&waves)
            .find(|(p, &n)| n + 1 == p.cum.len())
        {
            p.0.why
        } else if parts
            .iter()
            .zip(&waves)
            .any(|(p, &n)| p.cum[n + 1] > p.budget)
        {
            "budget"
        } else if parts.iter().zip(&waves).any(|(p, &n)| p.time(n + 1) > room) {
            "event"
        } else {
            "align"
        };
        return Some((waves, j, why));
    }
    None
}
