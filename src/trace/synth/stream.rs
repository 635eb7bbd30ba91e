//! The per-warp generator: a cursor over the prologue / body × trips / epilogue templates
//! that fills in masks and addresses. Per dynamic instruction it only computes the mask and,
//! for memory instructions, the active lanes' addresses.

use super::build::{Access, Geo, Op, Slot};
use super::rng;
use super::SynthKernel;
use crate::error::DecodeError;
use crate::trace::inst::DynInst;
use crate::trace::source::WarpStream;

/// One warp's stream; created by [`SynthKernel`]'s `warp()`.
pub struct SynthWarp<'a> {
    k: &'a SynthKernel,
    cta: u64,
    warp: u64,
    /// Global warp index.
    gw: u64,
    /// Global thread index of lane 0.
    gtid0: u64,
    cx: u64,
    cy: u64,
    base_mask: u32,
    trip_mask: u32,
    trips: u64,
    len: u64,
    part: u8,
    idx: usize,
    trip: u64,
}

impl<'a> SynthWarp<'a> {
    pub(super) fn new(k: &'a SynthKernel, cta: u32, warp: u32) -> SynthWarp<'a> {
        let g = &k.built.geom;
        let (cta, warp) = (cta as u64, warp as u64);
        let lanes = g.tpc.saturating_sub(warp * 32).min(32);
        let base_mask = match lanes {
            0 => 0,
            32 => u32::MAX,
            n => (1u32 << n) - 1,
        };
        let trips = g.trips(cta, warp);
        SynthWarp {
            k,
            cta,
            warp,
            gw: cta * g.wpc + warp,
            gtid0: cta * g.tpc + warp * 32,
            cx: cta % g.tile_x,
            cy: cta / g.tile_x,
            base_mask,
            trip_mask: base_mask,
            trips,
            len: k.len_for_trips(trips),
            part: 0,
            idx: 0,
            trip: 0,
        }
    }

    /// Mask of the divergent region for the current trip.
    fn start_trip(&mut self) {
        let Some(d) = &self.k.built.div else {
            return;
        };
        let h = rng::hash2(d.salt, self.gw, self.trip);
        if d.rate < 1.0 && rng::unit_f64(h) >= d.rate {
            self.trip_mask = self.base_mask;
            return;
        }
        let mut m = 0u32;
        for chunk in 0..8u64 {
            let r = rng::sub(h, chunk);
            for b in 0..4 {
                if (r >> (16 * b)) & 0xffff < d.thr16 {
                    m |= 1 << (chunk * 4 + b);
                }
            }
        }
        m &= self.base_mask;
        if m == 0 && self.base_mask != 0 {
            // at least one lane takes the branch: pick one of the warp's lanes
            let n = self.base_mask.count_ones() as u64;
            let mut pick = rng::below(rng::sub(h, 99), n);
            let mut bm = self.base_mask;
            loop {
                let l = bm.trailing_zeros();
                if pick == 0 || bm & (bm - 1) == 0 {
                    m = 1 << l;
                    break;
                }
                bm &= bm - 1;
                pick -= 1;
            }
        }
        self.trip_mask = m;
    }

    #[inline]
    fn next_slot(&mut self) -> Option<Slot> {
        let k = self.k;
        loop {
            match self.part {
                0 => {
                    if let Some(s) = k.built.prologue.get(self.idx) {
                        self.idx += 1;
                        return Some(*s);
                    }
                    self.part = 1;
                    self.idx = 0;
                    self.trip = 0;
                    self.start_trip();
                }
                1 => {
                    if let Some(s) = k.built.body.get(self.idx) {
                        self.idx += 1;
                        return Some(*s);
                    }
                    self.trip += 1;
                    self.idx = 0;
                    if self.trip >= self.trips {
                        self.part = 2;
                    } else {
                        self.start_trip();
                    }
                }
                2 => {
                    if let Some(s) = k.built.epilogue.get(self.idx) {
                        self.idx += 1;
                        return Some(*s);
                    }
                    self.part = 3;
                }
                _ => return None,
            }
        }
    }

    #[inline(always)]
    fn global(&self, a: &Access, kx: u64, mask: u32, out: &mut DynInst) {
        let g = &self.k.built.geom;
        let j = self.trip * a.count + kx;
        let mut n = 0usize;
        let mut m = mask;
        match a.geo {
            Geo::Stream { step } => {
                // (Without a `step` this is `(j * total_warps + gw) * span`.)
                let mut off = self.gw * a.span + j * step;
                if a.fp != 0 {
                    off %= a.fp;
                }
                let b = a.base + off;
                while m != 0 {
                    let l = m.trailing_zeros();
                    out.addrs[n] = b + a.lane_off(l);
                    n += 1;
                    m &= m - 1;
                }
            }
            Geo::Strided { stride } => {
                let col = (j * a.width) % stride;
                let row0 = self.gw * 32 * stride;
                if a.fp == 0 {
                    let b = a.base + row0 + col;
                    while m != 0 {
                        let l = m.trailing_zeros();
                        out.addrs[n] = b + l as u64 * stride;
                        n += 1;
                        m &= m - 1;
                    }
                } else {
                    let step = stride % a.fp;
                    let mut cur = (row0 + col) % a.fp;
                    for l in 0..32 {
                        if m & (1 << l) != 0 {
                            out.addrs[n] = a.base + cur;
                            n += 1;
                        }
                        cur += step;
                        if cur >= a.fp {
                            cur -= a.fp;
                        }
                    }
                }
            }
            Geo::Random => {
                let h = rng::hash2(a.salt, self.gw, j);
                let mut last_q = u64::MAX;
                let mut sector = 0;
                while m != 0 {
                    let l = m.trailing_zeros();
                    let lo = a.lane_off(l);
                    let q = lo >> 5;
                    if q != last_q {
                        sector = a.base + rng::below(rng::sub(h, q), a.fp) * 32;
                        last_q = q;
                    }
                    out.addrs[n] = sector + (lo & 31);
                    n += 1;
                    m &= m - 1;
                }
            }
            Geo::Tiled { half_count, base_b } => {
                let half = (kx & 1) as usize;
                let tile = if half == 0 { self.cy } else { self.cx };
                let mut off = (((tile * g.trips_max + self.trip) * half_count[half] + (kx >> 1))
                    * g.wpc
                    + self.warp)
                    * a.span;
                if a.fp != 0 {
                    off %= a.fp;
                }
                let b = if half == 0 { a.base } else { base_b } + off;
                while m != 0 {
                    let l = m.trailing_zeros();
                    out.addrs[n] = b + a.lane_off(l);
                    n += 1;
                    m &= m - 1;
                }
            }
            Geo::Reuse { ws, chunks } => {
                let region = (self.cta * ws) % a.fp;
                let chunk = (j * g.wpc + self.warp) % chunks;
                let b = a.base + region + chunk * a.span;
                while m != 0 {
                    let l = m.trailing_zeros();
                    out.addrs[n] = b + a.lane_off(l);
                    n += 1;
                    m &= m - 1;
                }
            }
        }
        out.mask = mask;
        out.n = n as u8;
    }

    /// Consecutive 4-byte elements per thread (pre-loads / post-stores).
    #[inline]
    fn linear(&self, base: u64, p: u64, mask: u32, out: &mut DynInst) {
        let b = base + (p * self.k.built.geom.threads + self.gtid0) * 4;
        let mut n = 0usize;
        let mut m = mask;
        while m != 0 {
            let l = m.trailing_zeros();
            out.addrs[n] = b + l as u64 * 4;
            n += 1;
            m &= m - 1;
        }
        out.mask = mask;
        out.n = n as u8;
    }

    #[inline]
    fn shared(&self, j: u64, mask: u32, out: &mut DynInst) {
        let Some(s) = &self.k.built.shared else {
            out.mask = mask;
            out.n = 0;
            return;
        };
        let g = &self.k.built.geom;
        let per_warp = if s.unit == 0 { s.width } else { 32 * s.unit };
        let mut cur = ((self.warp + j * g.wpc) % s.size) * (per_warp % s.size) % s.size;
        let step = s.unit % s.size;
        if mask == u32::MAX && cur + 31 * step < s.size {
            // Full warp, no wrap-around: a plain progression (vectorises).
            for (l, a) in out.addrs.iter_mut().enumerate() {
                *a = cur + l as u64 * step;
            }
            out.mask = mask;
            out.n = 32;
            out.stride = Some(step);
            return;
        }
        let mut n = 0usize;
        for l in 0..32 {
            if mask & (1 << l) != 0 {
                out.addrs[n] = cur;
                n += 1;
            }
            cur += step;
            if cur >= s.size {
                cur -= s.size;
            }
        }
        out.mask = mask;
        out.n = n as u8;
    }
}

impl WarpStream for SynthWarp<'_> {
    fn next_inst(&mut self, out: &mut DynInst) -> Result<bool, DecodeError> {
        // Fast path: a plain instruction within the body (most of them) needs only its
        // index and mask; everything else goes through the out-of-line general path.
        if self.part == 1 {
            if let Some(s) = self.k.built.body.get(self.idx) {
                if let Op::Plain = s.op {
                    self.idx += 1;
                    out.sidx = s.sidx;
                    out.mask = if s.divergent {
                        self.trip_mask
                    } else {
                        self.base_mask
                    };
                    out.n = 0;
                    return Ok(true);
                }
            }
        }
        Ok(self.fill_next(out))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl SynthWarp<'_> {
    /// [`WarpStream::next_inst`] for any position: the next slot of the templates, with
    /// its mask and addresses filled in; false at the end of the stream.
    #[inline(never)]
    fn fill_next(&mut self, out: &mut DynInst) -> bool {
        let Some(s) = self.next_slot() else {
            return false;
        };
        out.sidx = s.sidx;
        // No stride hint unless the generator below knows one.
        out.stride = None;
        let mask = if s.divergent {
            self.trip_mask
        } else {
            self.base_mask
        };
        let b = &self.k.built;
        match s.op {
            Op::Plain => {
                out.mask = mask;
                out.n = 0;
            }
            Op::Global { acc, k } => {
                let a = b.access[acc as usize];
                self.global(&a, k as u64, mask, out);
            }
            Op::Atomic { k } => {
                let at = b.atomics.as_ref().copied();
                match at {
                    Some(at) => {
                        let j = self.trip * at.count + k as u64;
                        let h = rng::hash2(at.salt, self.gw, j);
                        if at.aggregated {
                            let m = mask & mask.wrapping_neg();
                            out.mask = m;
                            out.n = (m != 0) as u8;
                            out.addrs[0] = at.base + rng::below(h, at.targets) * 4;
                        } else {
                            let mut n = 0usize;
                            let mut m = mask;
                            while m != 0 {
                                let l = m.trailing_zeros();
                                out.addrs[n] =
                                    at.base + rng::below(rng::sub(h, l as u64), at.targets) * 4;
                                n += 1;
                                m &= m - 1;
                            }
                            out.mask = mask;
                            out.n = n as u8;
                        }
                    }
                    None => {
                        out.mask = mask;
                        out.n = 0;
                    }
                }
            }
            Op::SharedLoad { k } => {
                let per = b.shared.map_or(1, |s| s.loads);
                self.shared(self.trip * per + k as u64, mask, out);
            }
            Op::SharedStore { k } => {
                let per = b.shared.map_or(1, |s| s.stores);
                self.shared(self.trip * per + k as u64, mask, out);
            }
            Op::PreLoad { p } => self.linear(b.pre_base, p as u64, mask, out),
            Op::PostStore { p } => self.linear(b.post_base, p as u64, mask, out),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::trace::inst::DynInst;
    use crate::trace::source::KernelSource;
    use crate::trace::synth::SynthKernel;

    /// Every stride hint the stream gives holds for its instruction (the buffer is reused,
    /// as the engine reuses it), and full-warp shared accesses without wrap-around carry one.
    #[test]
    fn stride_hints_hold() {
        let mut hinted = 0;
        for (smem, width, conflicts) in [(7200, 16, 1), (4096, 4, 2), (512, 8, 1), (1024, 4, 32)] {
            let text = format!(
                "[kernel]\nname = \"k\"\ngrid = 3\nblock = 96\nregs = 8\nsmem = {smem}\n\
                 [body]\ntrips = 5\n[[loads]]\ncount = 1\n[shared]\nloads = 3\nstores = 2\n\
                 width = {width}\nbank_conflicts = {conflicts}\n"
            );
            let k = SynthKernel::from_toml_str(&text, std::path::Path::new("k.toml")).unwrap();
            let mut d = DynInst::default();
            for c in 0..k.num_ctas() {
                for w in 0..k.cta(c).warps {
                    let mut s = k.warp(c, w);
                    while s.next_inst(&mut d).unwrap() {
                        let a = d.addrs();
                        if let (Some(st), true) = (d.stride, a.len() >= 2) {
                            hinted += 1;
                            for (i, &x) in a.iter().enumerate() {
                                assert_eq!(x, a[0] + i as u64 * st, "{text}");
                            }
                        }
                    }
                }
            }
        }
        assert!(hinted > 100, "{hinted} hinted accesses");
    }
}
