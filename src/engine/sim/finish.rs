//! Statistics of a run: per-kernel records, occupancy samples and the final
//! [`RunStats`] assembled from the live counters.

use super::*;

impl Engine<'_, '_> {
    /// Statistics of kernel run `k` from its first CTA to `end`.
    pub(super) fn kernel_stats(&self, k: usize, end: u64) -> KernelStats {
        let kr = &self.kruns[k];
        let c = &self.ctr[kr.app];
        let start = kr.start.unwrap_or(end);
        let cycles = end.saturating_sub(start);
        let wi = c.warp_insts - kr.insts0.0;
        KernelStats {
            name: kr.src.info().name.clone(),
            app: kr.app,
            kernel: kr.kidx,
            pass: kr.pass,
            arrival: kr.arrival,
            start,
            end,
            cycles,
            warp_insts: wi,
            thread_insts: c.thread_insts - kr.insts0.1,
            ipc: wi as f64 / cycles.max(1) as f64,
            ctas: kr.blocks as u64,
        }
    }

    pub(super) fn sample(&mut self, t: u64) {
        let n = self.apps.len();
        let mut warps = vec![0u32; n];
        let mut sms = vec![0u32; n];
        for sm in &self.sms {
            let mut w = vec![0u32; n];
            sm.warps_by_app(&mut w);
            for i in 0..n {
                warps[i] += w[i];
                if w[i] > 0 {
                    sms[i] += 1;
                }
            }
        }
        self.push_sample(t, warps, sms);
    }

    /// Records an occupancy sample at engine time `t`: resident warps and SMs per
    /// application, each warp counted for a sample period.
    pub(super) fn push_sample(&mut self, t: u64, warps: Vec<u32>, sms: Vec<u32>) {
        for (c, w) in self.ctr.iter_mut().zip(&warps) {
            c.warp_cycles += *w as u64 * self.cfg.sample_every;
        }
        self.timeline.push(Sample {
            cycle: t + self.off,
            warps,
            sms,
        });
    }

    /// Idle scheduler cycles of the whole run so far, fast-forwarded ones included.
    pub(super) fn idle_cycles(&self) -> u64 {
        self.sms.iter().map(|s| s.idle).sum::<u64>() + self.ff_idle()
    }

    pub(super) fn finish(mut self) -> RunStats {
        for s in 0..self.sms.len() {
            self.sms[s].close_all(self.now, &mut self.ctr);
        }
        // Everything recorded is in absolute time: engine time plus what fast-forward
        // skipped.
        let end = self.now + self.off;
        let mut gpu = Counters::default();
        for c in &self.ctr {
            gpu.add(c);
        }
        gpu.stalls.idle += self.idle_cycles();
        // Kernels still running at the end (window / budget modes) are reported up to now.
        for k in 0..self.kruns.len() {
            if !self.kruns[k].done && self.kruns[k].start.is_some() {
                let ks = self.kernel_stats(k, end);
                self.rt[self.kruns[k].app].kernels.push(ks);
            }
        }
        let spec = self.spec;
        let apps = self
            .rt
            .iter_mut()
            .enumerate()
            .map(|(i, r)| {
                let a = &self.apps[i];
                let start = r.start.unwrap_or(a.arrival);
                let fin = r.end.unwrap_or(end);
                let cycles = fin.saturating_sub(a.arrival);
                AppStats {
                    name: a.name.clone(),
                    arrival: a.arrival,
                    start,
                    end: fin,
                    cycles,
                    passes: r.passes,
                    rates: rates(&self.ctr[i], cycles, spec),
                    counters: self.ctr[i].clone(),
                    kernels: std::mem::take(&mut r.kernels),
                }
            })
            .collect();
        RunStats {
            schema_version: SCHEMA_VERSION,
            cycles: end,
            apps,
            gpu_rates: rates(&gpu, end, spec),
            gpu,
            timeline: self.timeline,
            reconfigs: self.reconfigs,
            events: self.events,
            model: spec.clone(),
            fast_forward: self.ff.map(|f| f.stats),
        }
    }
}
