//! Measuring each part of a co-run jump (see [`super`]): a relaunching application over
//! its kept passes (`ff_co_pass`), every relaunching part over `a`'s span when that is
//! longer (`ff_co_common`), and an application in one long launch between `a`'s pass
//! marks (`ff_co_launch`) with the whole blocks a jump may retire (`ff_co_blocks`).

use super::*;

impl Engine<'_, '_> {
    /// Application `b`'s part as a relaunching co-runner: its last two passes in
    /// `regime`, alike, or else its last two pairs of passes. It is credited at the mean
    /// of all its passes in the regime that are kept (up to `KEPT_MARKS - 1`, an even
    /// number after a pairs test; its first pass from its first launch only
    /// when there are no others; none before a pass in which a page moved): the rate of a
    /// pass moves with the co-runners' phase (fermi-ws hot beside lbm by 3.5%), and more
    /// passes see more phases.
    pub(super) fn ff_co_pass(&self, b: usize, regime: (u64, u64), tol: f64) -> Option<CoPart> {
        let f = self.ff.as_ref()?;
        let all = f.marks.get(b)?;
        if all.len() < CO_MARKS || self.apps[b].persistent.is_some() {
            return None;
        }
        let n = all.len();
        let m = &all[n - CO_MARKS..];
        if m.iter().any(|k| k.regime != regime) {
            return None;
        }
        let peak = self.spec.dram_bytes_per_cycle();
        let alike = |x: &PassMark, y: &PassMark, z: &PassMark| {
            let (p1, p2) = (y.t - x.t, z.t - y.t);
            let (d1, d2) = (delta(&x.ctr, &y.ctr), delta(&y.ctr, &z.ctr));
            p1 > 0
                && p2 > 0
                && d1.warp_insts > 0
                && d2.warp_insts > 0
                && rel(p1 as f64, p2 as f64) <= tol
                && co_steady(&d1, p1, &d2, p2, tol, peak)
        };
        // (Back to the first pass with a page moving in it: UGPU's on-demand migration
        // after a channel-set change slows every pass until the pages have moved, and those
        // passes are not the steady state the last two are — averaged in, the UGPU
        // paper-scale subset's memory-bound applications lost up to 31% of their
        // progress.)
        let moved = |x: &PassMark| x.pos.iter().map(|p| p.ctr.pages_migrated).sum::<u64>();
        // The last two passes alike; or, when they are not, the last two pairs of passes
        // (a pass time that alternates with the co-runners' phase: punyala bp beside
        // gups, 1.21 M and 1.28 M cycles), credited then over an even number of passes.
        let pairs = !alike(&m[0], &m[1], &m[2]);
        if pairs {
            // (Five marks: two pairs of passes.)
            let q = &all[n.checked_sub(5)?..];
            if q.iter().any(|k| k.regime != regime || k.kernels == 0)
                || moved(&q[0]) != moved(&q[4])
                || !alike(&q[0], &q[2], &q[4])
            {
                return None;
            }
        }
        let mut first = n - CO_MARKS;
        while first > 0
            && all[first - 1].regime == regime
            && all[first - 1].kernels > 0
            && moved(&all[first - 1]) == moved(&all[first])
        {
            first -= 1;
        }
        if pairs && (n - 1 - first) % 2 == 1 {
            first += 1;
        }
        let (m0, l) = (&all[first], &all[n - 1]);
        let passes = (n - 1 - first) as u64;
        let mid = &all[(first + n - 1) / 2];
        Some(CoPart {
            app: b,
            cold: m0.kernels == 0,
            halves: halves([(&m0.ctr, m0.t), (&mid.ctr, mid.t), (&l.ctr, l.t)]),
            d: delta(&m0.ctr, &l.ctr),
            span: l.t - m0.t,
            kind: CoKind::Pass {
                records: (m[1].kernels, m[2].kernels),
                last_start: m[1].t,
                len: (l.t - m0.t) / passes.max(1),
                idle: (m0.idle, l.idle),
            },
        })
    }

    /// Relaunching co-runners measured over the same cycles as `a` (whose pass ends at
    /// engine time `t`): each part `b` is re-measured over `a`'s span, its counters at
    /// `a`'s first kept mark and now, part passes at the two ends included, when that span
    /// is at least as long as `b`'s own (its own passes are then a sub-span of the same
    /// joint history, and a sub-span is biased by where the co-runners' joint pattern
    /// cuts it: fermi-ws left-over mm + knn repeats every 6 passes of mm and 7 of knn,
    /// one of knn's 7 short (254 K cycles against 297–323 K); knn's own five passes
    /// before the jump missed it and were credited 2.0% too little, its counters over
    /// mm's span have the short pass's share at the span's start). Its pass length is
    /// then the time its pass's instructions take at the span's rate (whole passes in
    /// the jump become kernel records).
    pub(super) fn ff_co_common(&self, a: usize, t: u64, parts: &mut [CoPart]) {
        let Some(f) = self.ff.as_ref() else {
            return;
        };
        let Some(pa) = parts.iter().find(|p| p.app == a) else {
            return;
        };
        let CoKind::Pass { idle, .. } = pa.kind else {
            return;
        };
        let (span, now) = (pa.span, t + self.off);
        let Some(m) = f.marks.get(a) else {
            return;
        };
        let (Some(i0), Some(ml)) = (m.iter().position(|x| x.t + span == now), m.last()) else {
            return;
        };
        let (m0, mid) = (&m[i0], &m[(i0 + m.len() - 1) / 2]);
        if m0.kernels == 0 {
            // `a`'s span starts at its first launch: a co-runner's counters over it take
            // in the run's cold start (fermi-ws hot + lbm, even: lbm over hot's first two
            // passes +0.91%, over its own warm ones +0.05%).
            return;
        }
        for p in parts.iter_mut().filter(|p| p.app != a && p.span < span) {
            let CoKind::Pass { len, idle: own, .. } = &mut p.kind else {
                continue;
            };
            let d = delta(&m0.pos[p.app].ctr, &ml.pos[p.app].ctr);
            if d.warp_insts == 0 {
                continue;
            }
            let per_pass = mul_div(p.d.warp_insts, *len, p.span);
            *len = mul_div(span, per_pass, d.warp_insts).max(1);
            p.d = d;
            p.span = span;
            *own = idle;
            let b = p.app;
            p.halves = halves([
                (&m0.pos[b].ctr, m0.t),
                (&mid.pos[b].ctr, mid.t),
                (&ml.pos[b].ctr, ml.t),
            ]);
        }
    }

    /// Application `b`'s part as a co-runner in one long launch, measured between the
    /// pass marks of `a` (which just ended a pass at engine time `t`): the fewest of
    /// `a`'s last passes, an even number, whose halves each saw `waves` waves of `b`'s
    /// CTAs complete, all in `regime` and in the launch `b` runs now, past its first
    /// wave; alike as a relaunching co-runner's passes must be. Its skippable blocks are
    /// found later (`ff_co_blocks`), once the room is known.
    pub(super) fn ff_co_launch(
        &self,
        a: usize,
        b: usize,
        t: u64,
        regime: (u64, u64),
    ) -> Option<CoPart> {
        let f = self.ff.as_ref()?;
        let k = self.rt[b].krun?;
        let kr = &self.kruns[k];
        if self.apps[b].persistent.is_some() || !kr.saved.is_empty() {
            return None;
        }
        let m = f.marks.get(a)?;
        let l = m.len().checked_sub(1)?;
        // (`a`'s last mark is this pass's end.)
        if m[l].t != t + self.off || l < 2 {
            return None;
        }
        let last2 = &m[l - 2..=l];
        if last2
            .iter()
            .all(|x| x.regime == regime && x.pos[b].krun == Some(k) && x.pos[b].live == 0)
            && kr.live == 0
            && kr.next_block == 0
            && m[l - 2].pos[b].ctr.warp_insts == self.ctr[b].warp_insts
        {
            return Some(CoPart {
                app: b,
                cold: false,
                d: Counters::default(),
                span: m[l].t - m[l - 2].t,
                kind: CoKind::Waiting,
                halves: [(0, 0); 2],
            });
        }
        // Its wave: the most CTAs it held at any application's mark in the span (under
        // left-over dispatch a launch may get slots only between another's passes).
        let from = m[l.saturating_sub(2 * (l / 2))].t;
        let wave = f
            .marks
            .iter()
            .flatten()
            .filter(|x| x.t >= from && x.pos[b].krun == Some(k))
            .map(|x| x.pos[b].live)
            .chain([kr.live])
            .max()
            .map_or(0, u64::from);
        if wave == 0 {
            return None;
        }
        let need = u64::from(f.cfg.waves.max(1)) * wave;
        for q in 1..=l / 2 {
            let (s, h) = (l - 2 * q, l - q);
            let ms = &m[s..=l];
            if ms
                .iter()
                .any(|x| x.regime != regime || x.pos[b].krun != Some(k))
            {
                return None;
            }
            if u64::from(m[s].pos[b].next_block) < 2 * wave {
                // Its first wave had not turned over at the span's start: a later, longer
                // span will not start sooner.
                return None;
            }
            let (c0, c1, c2) = (&m[s].pos[b].ctr, &m[h].pos[b].ctr, &m[l].pos[b].ctr);
            if c1.ctas_done - c0.ctas_done < need || c2.ctas_done - c1.ctas_done < need {
                continue;
            }
            let (p1, p2) = (m[h].t - m[s].t, m[l].t - m[h].t);
            let (d1, d2) = (delta(c0, c1), delta(c1, c2));
            if d1.warp_insts == 0
                || d2.warp_insts == 0
                || !co_steady(
                    &d1,
                    p1,
                    &d2,
                    p2,
                    f.cfg.tolerance,
                    self.spec.dram_bytes_per_cycle(),
                )
            {
                return None;
            }
            return Some(CoPart {
                app: b,
                cold: false,
                d: delta(c0, c2),
                span: m[l].t - m[s].t,
                halves: [(d1.warp_insts, p1), (d2.warp_insts, p2)],
                kind: CoKind::Launch {
                    k,
                    from: m[s].pos[b].next_block,
                    wave: wave as u32,
                    cum: Vec::new(),
                },
            });
        }
        None
    }

    /// The blocks launch part `p` may skip within `room` cycles: all but the last wave of its
    /// launch, none past a change of phase in the blocks' lengths or unit mix. Returns
    /// the part with its `cum` and what, if anything, stopped it short of `room`.
    pub(super) fn ff_co_blocks(
        &self,
        mut p: CoPart,
        room: u64,
    ) -> Result<(CoPart, Option<&'static str>)> {
        let CoKind::Launch { k, from, wave, .. } = p.kind else {
            return Ok((p, None));
        };
        let kr = &self.kruns[k];
        let (r0, r1) = (from, kr.next_block);
        let range = self.block_range(k, (r0, r1));
        let mean = range.map_or(1, |(_, m)| m.max(1));
        let tail = (kr.blocks - kr.next_block).saturating_sub(wave);
        let by_time = mul_div(p.d.warp_insts, room, p.span) / mean + 1;
        let max = u32::try_from(by_time).unwrap_or(u32::MAX).min(tail);
        let (blocks, why) = match range {
            Some((lohi, _)) => self.ff_skippable(k, (r0, r1), lohi, max, 1)?,
            None => (vec![0], "phase"),
        };
        let short = if blocks.len() - 1 < max as usize {
            Some(why)
        } else if max == tail {
            Some("tail")
        } else {
            None
        };
        p.kind = CoKind::Launch {
            k,
            from,
            wave,
            cum: blocks,
        };
        Ok((p, short))
    }
}

/// Warp instructions and cycles between the first two and the last two of three
/// (counters, absolute time) points of one application.
fn halves(x: [(&Counters, u64); 3]) -> [(u64, u64); 2] {
    let half =
        |a: (&Counters, u64), b: (&Counters, u64)| (b.0.warp_insts - a.0.warp_insts, b.1 - a.1);
    [half(x[0], x[1]), half(x[1], x[2])]
}
