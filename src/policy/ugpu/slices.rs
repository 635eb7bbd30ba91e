//! GPU slices of SMs and memory channels (UGPU §2, §4.3): the model's geometry, the size of
//! each application's slice, and which SMs and channels it holds.
//!
//! Channels are handed out as *channel indices*: under the `stack-page` mapping (Fig. 8) a
//! page covers the same channel index of every stack, so an application holds index `i` of
//! all stacks at once — on `ugpu-80sm-hbm` one index is 4 channels, and every application
//! keeps at least one (at least one channel per stack, §4.3).

use crate::arch::GpuSpec;
use crate::policy::NotApplicable;

/// The shape of the GPU a slice is carved from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub sms: u32,
    /// Channel indices per stack (the unit channels move in).
    pub indices: u32,
    pub stacks: u32,
}

impl Geometry {
    /// The model's geometry, or why the slices of UGPU cannot be formed on it. Channel
    /// indices are per stack (`dram.stacks`; a model without stacks is one stack, and an
    /// index is then one channel). Under the `stack-page` mapping pages have a page table
    /// and migrate on demand (PageMove's design); under any other mapping a slice's
    /// channel set still isolates it, and pages move with the model's own mapping (eagerly,
    /// as `engine::memsys` does for sets without a page table).
    pub fn of(spec: &GpuSpec) -> Result<Geometry, NotApplicable> {
        let d = &spec.dram;
        let stacks = d.stacks.max(1);
        if !d.channels.is_multiple_of(stacks) {
            return Err(NotApplicable(format!(
                "{} channels do not divide among {stacks} stacks",
                d.channels
            )));
        }
        Ok(Geometry {
            sms: spec.sm.count,
            indices: d.channels / stacks,
            stacks,
        })
    }

    /// Channels per index (one per stack).
    pub fn channels_per_index(&self) -> u32 {
        self.stacks
    }

    /// Why `n` applications cannot each get a slice, if they cannot.
    pub fn fits(&self, n: usize) -> Result<(), NotApplicable> {
        if n == 0 {
            return Err(NotApplicable("no application".into()));
        }
        if n as u32 > self.indices || n as u32 > self.sms {
            return Err(NotApplicable(format!(
                "{n} applications do not fit: every slice needs at least one SM and one channel index ({} SMs, {} indices of {} channels)",
                self.sms,
                self.indices,
                self.stacks
            )));
        }
        Ok(())
    }

    /// Equal slices (BP): SMs and indices split as evenly as they divide, the remainder to
    /// the first applications of `order`.
    pub fn balanced(&self, n: usize, order: &[usize]) -> Vec<Slice> {
        let mut out = vec![Slice::default(); n];
        for (rank, &a) in order.iter().enumerate() {
            let share = |total: u32| total / n as u32 + u32::from((rank as u32) < total % n as u32);
            out[a] = Slice {
                sms: share(self.sms),
                indices: share(self.indices),
            };
        }
        out
    }

    /// A big slice of `big_share` of the SMs and indices (rounded, at least one of each
    /// left for the other) for `big`, the rest for the other application (BP-BS / BP-SB,
    /// QoS-aware BP: 60 SMs + 24 channels against 20 + 8 on the paper's GPU).
    pub fn big_small(&self, n: usize, big: usize, big_share: f64) -> Vec<Slice> {
        let part = |total: u32| {
            ((total as f64 * big_share).round() as u32).clamp(1, total.saturating_sub(1).max(1))
        };
        let mut out = vec![Slice::default(); n];
        let others: Vec<usize> = (0..n).filter(|&a| a != big).collect();
        out[big] = Slice {
            sms: part(self.sms),
            indices: part(self.indices),
        };
        let rest = Geometry {
            sms: self.sms - out[big].sms,
            indices: self.indices - out[big].indices,
            stacks: self.stacks,
        };
        let split = rest.balanced(others.len(), &(0..others.len()).collect::<Vec<_>>());
        for (k, &a) in others.iter().enumerate() {
            out[a] = split[k];
        }
        out
    }
}

/// How much of the GPU one application holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slice {
    pub sms: u32,
    /// Channel indices (each one channel of every stack).
    pub indices: u32,
}

/// `(40sm+16ch,40sm+16ch)`: the slices as a partition label.
pub fn label(geom: &Geometry, slices: &[Slice]) -> String {
    format!(
        "({})",
        slices
            .iter()
            .map(|s| format!("{}sm+{}ch", s.sms, s.indices * geom.channels_per_index()))
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// Which SMs and channel indices each application holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub sms: Vec<Vec<bool>>,
    pub indices: Vec<Vec<u32>>,
}

impl Layout {
    /// Contiguous blocks of SMs and of indices, handed out in `order`.
    pub fn contiguous(geom: &Geometry, slices: &[Slice], order: &[usize]) -> Layout {
        let n = slices.len();
        let mut sms = vec![vec![false; geom.sms as usize]; n];
        let mut indices = vec![Vec::new(); n];
        let (mut s, mut i) = (0u32, 0u32);
        for &a in order {
            for x in s..(s + slices[a].sms).min(geom.sms) {
                sms[a][x as usize] = true;
            }
            s += slices[a].sms;
            indices[a] = (i..(i + slices[a].indices).min(geom.indices)).collect();
            i += slices[a].indices;
        }
        Layout { sms, indices }
    }

    pub fn slices(&self) -> Vec<Slice> {
        self.sms
            .iter()
            .zip(&self.indices)
            .map(|(m, i)| Slice {
                sms: m.iter().filter(|&&x| x).count() as u32,
                indices: i.len() as u32,
            })
            .collect()
    }

    /// The channel ids of application `a`: its indices in every stack.
    pub fn channels(&self, geom: &Geometry, a: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..geom.stacks)
            .flat_map(|s| self.indices[a].iter().map(move |&i| s * geom.indices + i))
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The layout resized to `target` with as few SMs and indices changing hands as
    /// possible: applications above their target give up their highest-numbered SMs
    /// (indices), which go, lowest first, to those below theirs, in application order.
    #[allow(clippy::needless_range_loop)] // parallel per-application vectors
    pub fn resized(&self, target: &[Slice]) -> Layout {
        let mut out = self.clone();
        let n = target.len();
        // SMs.
        let mut freed: Vec<usize> = Vec::new();
        for a in 0..n {
            let have: Vec<usize> = (0..out.sms[a].len()).filter(|&s| out.sms[a][s]).collect();
            let excess = have.len().saturating_sub(target[a].sms as usize);
            for &s in have.iter().rev().take(excess) {
                out.sms[a][s] = false;
                freed.push(s);
            }
        }
        // SMs nobody holds (a finished application's) are free too.
        for s in 0..out.sms.first().map_or(0, Vec::len) {
            if !(0..n).any(|a| out.sms[a][s]) && !freed.contains(&s) {
                freed.push(s);
            }
        }
        freed.sort_unstable();
        let mut it = freed.into_iter();
        for a in 0..n {
            let have = out.sms[a].iter().filter(|&&x| x).count();
            for _ in have..target[a].sms as usize {
                if let Some(s) = it.next() {
                    out.sms[a][s] = true;
                }
            }
        }
        // Indices.
        let total: u32 = self
            .indices
            .iter()
            .flatten()
            .copied()
            .max()
            .map_or(0, |m| m + 1);
        let mut free: Vec<u32> = Vec::new();
        for a in 0..n {
            let keep = (target[a].indices as usize).min(out.indices[a].len());
            free.extend(out.indices[a].drain(keep..));
        }
        for i in 0..total.max(target.iter().map(|t| t.indices).sum()) {
            if !out.indices.iter().flatten().any(|&x| x == i) && !free.contains(&i) {
                free.push(i);
            }
        }
        free.sort_unstable();
        let mut it = free.into_iter();
        for a in 0..n {
            while out.indices[a].len() < target[a].indices as usize {
                match it.next() {
                    Some(i) => out.indices[a].push(i),
                    None => break,
                }
            }
            out.indices[a].sort_unstable();
        }
        out
    }
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

    #[test]
    fn balanced_and_big_small_partitions_match_the_paper() {
        let g = geom();
        let bp = g.balanced(2, &[0, 1]);
        assert_eq!(
            bp,
            vec![
                Slice {
                    sms: 40,
                    indices: 4
                };
                2
            ]
        );
        assert_eq!(label(&g, &bp), "(40sm+16ch,40sm+16ch)");
        let bs = g.big_small(2, 0, 0.75);
        assert_eq!(label(&g, &bs), "(60sm+24ch,20sm+8ch)");
        let sb = g.big_small(2, 1, 0.75);
        assert_eq!(label(&g, &sb), "(20sm+8ch,60sm+24ch)");
        let four = g.balanced(4, &[0, 1, 2, 3]);
        assert!(four.iter().all(|s| *s
            == Slice {
                sms: 20,
                indices: 2
            }));
        let eight = g.balanced(8, &(0..8).collect::<Vec<_>>());
        assert!(eight.iter().all(|s| *s
            == Slice {
                sms: 10,
                indices: 1
            }));
        // Three do not divide: the remainder goes to the first in order.
        let three = g.balanced(3, &[2, 0, 1]);
        assert_eq!(
            three[2],
            Slice {
                sms: 27,
                indices: 3
            }
        );
        assert_eq!(three.iter().map(|s| s.sms).sum::<u32>(), 80);
        assert_eq!(three.iter().map(|s| s.indices).sum::<u32>(), 8);
    }

    #[test]
    fn a_slice_holds_its_indices_in_every_stack() {
        let g = geom();
        let l = Layout::contiguous(&g, &g.big_small(2, 0, 0.75), &[0, 1]);
        assert_eq!(l.indices, vec![vec![0, 1, 2, 3, 4, 5], vec![6, 7]]);
        assert_eq!(l.channels(&g, 1), vec![6, 7, 14, 15, 22, 23, 30, 31]);
        assert_eq!(l.sms[0].iter().filter(|&&x| x).count(), 60);
        assert!(l.sms[1][79] && !l.sms[1][59]);
    }

    #[test]
    fn resizing_moves_only_what_changes_hands() {
        let g = geom();
        let l = Layout::contiguous(&g, &g.balanced(3, &[0, 1, 2]), &[0, 1, 2]);
        let before = l.slices();
        // 7 SMs from 0 to 2, one index from 2 to 0; 1 keeps everything it had.
        let mut t = before.clone();
        t[0].sms -= 7;
        t[2].sms += 7;
        t[0].indices += 1;
        t[2].indices -= 1;
        let r = l.resized(&t);
        assert_eq!(r.slices(), t);
        assert_eq!(r.sms[1], l.sms[1]);
        assert_eq!(r.indices[1], l.indices[1]);
        for s in 0..80 {
            assert_eq!(
                (0..3).filter(|&a| r.sms[a][s]).count(),
                1,
                "SM {s} held by exactly one slice"
            );
        }
        let mut all: Vec<u32> = r.indices.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn every_bundled_model_has_slices() {
        let spec = GpuSpec::resolve("ugpu-80sm-hbm").unwrap();
        assert_eq!(Geometry::of(&spec).unwrap(), geom());
        assert!(spec.dram.mapping.scheme == crate::arch::MapScheme::StackPage);
        // HBM with another mapping: 5 stacks x 8 channels.
        let a = Geometry::of(&GpuSpec::resolve("a100").unwrap()).unwrap();
        assert_eq!((a.indices, a.stacks), (8, 5));
        // GDDR: one "stack", an index per channel.
        let f = GpuSpec::resolve("fermi-ws").unwrap();
        let g = Geometry::of(&f).unwrap();
        assert_eq!((g.indices, g.stacks), (f.dram.channels, 1));
        assert!(geom().fits(8).is_ok());
        assert!(geom().fits(9).is_err());
    }
}
