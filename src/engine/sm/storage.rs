//! Contiguous first-fit allocation of an SM's register file and shared memory: the FCFS
//! intra-SM allocation of Warped-Slicer (Fig. 2a). A CTA needs one unbroken range of each,
//! so the hole a finished CTA leaves between its neighbours may be too small for a CTA of
//! another kernel — the fragmentation the paper describes.

use super::warp::Res;

/// Occupied ranges `(start, len)` of one storage array, sorted by start.
#[derive(Clone, Debug)]
struct Ranges {
    cap: u32,
    used: Vec<(u32, u32)>,
}

impl Ranges {
    fn new(cap: u32) -> Ranges {
        Ranges {
            cap,
            used: Vec::new(),
        }
    }

    /// Lowest start of a free range of `len` units (first fit).
    fn find(&self, len: u32) -> Option<u32> {
        if len == 0 {
            return Some(u32::MAX);
        }
        let mut at = 0u32;
        for &(s, l) in &self.used {
            if s - at >= len {
                return Some(at);
            }
            at = s + l;
        }
        (self.cap - at >= len).then_some(at)
    }

    fn take(&mut self, at: u32, len: u32) {
        if len == 0 {
            return;
        }
        let i = self.used.partition_point(|&(s, _)| s < at);
        self.used.insert(i, (at, len));
    }

    fn free(&mut self, at: u32) {
        if let Some(i) = self.used.iter().position(|&(s, _)| s == at) {
            self.used.remove(i);
        }
    }
}

/// Where a CTA's registers and shared memory live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    pub regs: u32,
    pub smem: u32,
}

/// The register file and shared memory of one SM as address ranges.
#[derive(Clone, Debug)]
pub struct Storage {
    regs: Ranges,
    smem: Ranges,
}

impl Storage {
    pub fn new(regs: u32, smem: u32) -> Storage {
        Storage {
            regs: Ranges::new(regs),
            smem: Ranges::new(smem),
        }
    }

    /// Whether a CTA of footprint `fp` finds an unbroken range of each array.
    pub fn fits(&self, fp: &Res) -> bool {
        self.regs.find(fp.regs).is_some() && self.smem.find(fp.smem).is_some()
    }

    /// Allocates `fp`'s ranges (first fit); `None` if either does not fit.
    pub fn alloc(&mut self, fp: &Res) -> Option<Offsets> {
        let r = self.regs.find(fp.regs)?;
        let s = self.smem.find(fp.smem)?;
        self.regs.take(r, fp.regs);
        self.smem.take(s, fp.smem);
        Some(Offsets { regs: r, smem: s })
    }

    pub fn free(&mut self, o: Offsets) {
        self.regs.free(o.regs);
        self.smem.free(o.smem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(smem: u32) -> Res {
        Res {
            smem,
            ..Res::default()
        }
    }

    /// Fig. 2a: A needs half of what B needs. Interleaved A B A B...; when one A finishes,
    /// its hole cannot take a B although the total free space could.
    #[test]
    fn a_hole_left_by_a_small_cta_does_not_take_a_large_one() {
        let mut st = Storage::new(0, 12);
        let a1 = st.alloc(&fp(2)).unwrap();
        let _b1 = st.alloc(&fp(4)).unwrap();
        let a2 = st.alloc(&fp(2)).unwrap();
        let _b2 = st.alloc(&fp(4)).unwrap();
        assert!(!st.fits(&fp(2)), "full");
        st.free(a1);
        st.free(a2);
        // 4 units free in total, but as two holes of 2.
        assert!(!st.fits(&fp(4)));
        assert!(st.fits(&fp(2)));
    }

    #[test]
    fn adjacent_holes_merge_and_first_fit_reuses_the_lowest() {
        let mut st = Storage::new(0, 8);
        let x = st.alloc(&fp(2)).unwrap();
        let y = st.alloc(&fp(2)).unwrap();
        let _z = st.alloc(&fp(4)).unwrap();
        st.free(x);
        st.free(y);
        let w = st.alloc(&fp(4)).unwrap();
        assert_eq!(w.smem, 0);
        // Zero-size requests always fit and take nothing.
        assert!(st.fits(&fp(0)));
    }
}
