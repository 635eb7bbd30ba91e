//! The set of memory pages an application has touched (what a channel handover has to
//! migrate), kept compact: one 64-bit mask per block of 64 consecutive pages, so a dense
//! footprint costs about a bit per page instead of a hashed 8-byte entry.

use rustc_hash::FxHashMap;

const BLOCK: u64 = 64;

#[derive(Clone, Debug, Default)]
pub struct PageSet {
    /// Block index (page / 64) → bit `page % 64` set for every touched page in it.
    blocks: FxHashMap<u64, u64>,
}

impl PageSet {
    pub fn insert(&mut self, page: u64) {
        *self.blocks.entry(page / BLOCK).or_insert(0) |= 1 << (page % BLOCK);
    }

    pub fn len(&self) -> usize {
        self.blocks.values().map(|m| m.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Every touched page, ascending.
    pub fn pages(&self) -> Vec<u64> {
        let mut blocks: Vec<(u64, u64)> = self.blocks.iter().map(|(&b, &m)| (b, m)).collect();
        blocks.sort_unstable();
        let mut out = Vec::with_capacity(self.len());
        for (b, mut m) in blocks {
            while m != 0 {
                out.push(b * BLOCK + m.trailing_zeros() as u64);
                m &= m - 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_each_page_once_across_blocks() {
        let mut s = PageSet::default();
        assert!(s.is_empty());
        for p in [0, 63, 64, 64, 1000, 0] {
            s.insert(p);
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.pages(), vec![0, 63, 64, 1000]);
    }

    proptest! {
        /// Same pages as a plain set of the inserted values, in ascending order.
        #[test]
        fn matches_a_plain_set(pages in proptest::collection::vec(0u64..1 << 40, 0..300)) {
            let mut s = PageSet::default();
            for &p in &pages {
                s.insert(p);
            }
            let expected: std::collections::BTreeSet<u64> = pages.iter().copied().collect();
            prop_assert_eq!(s.len(), expected.len());
            prop_assert_eq!(s.pages(), expected.into_iter().collect::<Vec<_>>());
        }
    }
}
