//! The history of snapshots fast-forward finds its steady spans in: what a snapshot
//! holds, and how the history keeps at most [`HISTORY`] of them. While the history is
//! too short to hold a span, a full one is thinned (every other snapshot dropped, the
//! spacing doubled) instead of losing its oldest, so waves of any length are measured
//! (punyala/gups ×40: 570 K-cycle waves, under two of them in 512 windows of 2,000
//! cycles). Aged mode's progress samples live and die with their snapshots.

use std::collections::VecDeque;
use std::ops::Deref;

use super::ProgSample;
use crate::engine::stats::Counters;

/// Most snapshots kept.
const HISTORY: usize = 512;
/// How many spans' worth of waves the history must cover before it drops its oldest
/// snapshot rather than thinning out (one span, plus room for the first wave's turnover
/// and the settling after a jump).
const SPAN_WAVES: u64 = 2;

/// The run's state at the end of a measurement window.
pub(super) struct Snap {
    pub(super) t: u64,
    pub(super) ctr: Vec<Counters>,
    pub(super) krun: Vec<Option<usize>>,
    pub(super) live: Vec<u32>,
    pub(super) next_block: Vec<u32>,
    pub(super) idle: u64,
}

/// Snapshots, oldest first; the last is always the newest window's.
pub(super) struct History {
    snaps: Vec<Snap>,
    /// Windows between stored snapshots (doubles each time a full history is thinned;
    /// back to 1 when it restarts).
    gap: u64,
}

impl Deref for History {
    type Target = [Snap];
    fn deref(&self) -> &[Snap] {
        &self.snaps
    }
}

impl History {
    pub(super) fn new() -> History {
        History {
            snaps: Vec::new(),
            gap: 1,
        }
    }

    pub(super) fn clear(&mut self) {
        self.snaps.clear();
        self.gap = 1;
    }

    /// Adds the snapshot of the window that ended now (`window` cycles long), with
    /// `waves` waves per half of a span; `prog` holds the progress samples taken at the
    /// stored snapshots (the caller adds this one's after).
    pub(super) fn push(
        &mut self,
        snap: Snap,
        window: u64,
        waves: u32,
        prog: &mut VecDeque<ProgSample>,
    ) {
        // The newest snapshot replaces the last one until that is `gap` windows past
        // its predecessor.
        if let [.., a, b] = &self.snaps[..] {
            if b.t - a.t < self.gap * window {
                let tb = b.t;
                self.snaps.pop();
                while prog.back().is_some_and(|p| p.t == tb) {
                    prog.pop_back();
                }
            }
        }
        if self.snaps.len() == HISTORY {
            if self.too_short(&snap, waves) {
                let last = self.snaps.pop().expect("full");
                let mut i = 0;
                self.snaps.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.snaps.push(last);
                self.gap *= 2;
                let kept: Vec<u64> = self.snaps.iter().map(|h| h.t).collect();
                prog.retain(|p| kept.binary_search(&p.t).is_ok());
            } else {
                self.snaps.remove(0);
                let t0 = self.snaps[0].t;
                while prog.front().is_some_and(|p| p.t < t0) {
                    prog.pop_front();
                }
            }
        }
        self.snaps.push(snap);
    }

    /// Whether the history, up to `snap`, holds too few waves of some running
    /// application's completions to find a span in.
    fn too_short(&self, snap: &Snap, waves: u32) -> bool {
        let need = SPAN_WAVES * 2 * waves.max(1) as u64;
        self.snaps.first().is_some_and(|h0| {
            (0..snap.krun.len()).any(|a| {
                snap.krun[a].is_some()
                    && snap.ctr[a].ctas_done - h0.ctr[a].ctas_done < need * snap.live[a] as u64
            })
        })
    }
}
