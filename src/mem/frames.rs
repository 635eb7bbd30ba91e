//! The page table of the `stack-page` mapping (UGPU/PageMove, seed 004 §4.3–4.4): per
//! application, virtual page → (channel index within a stack, frame).
//!
//! Under `stack-page` a page spreads over the same channel index of every HBM stack (the
//! stack comes from low address bits), so where a page lives is one *index*; which rows it
//! occupies there is its *frame* (a per-index counter shared by every application, so two
//! applications' pages never share rows; frames are not reused). The driver allocates a
//! page on first touch from the least used index of the application's set ("allocating
//! physical memory pages from the least used memory channels", ties to the lowest index),
//! and when the set changes, [`Frames::remap`] moves pages: first those on indices that
//! left the set (each to the least used remaining index), then from the most to the least
//! loaded index until the loads differ by at most one (§4.1: an application migrates some
//! pages into newly gained channels). Every move takes a new frame on its destination.
//!
//! The table is the translation only: a remap updates it at once (new accesses locate a
//! moved page at its destination) and returns the moves; the data follows on demand, when
//! the page is next accessed ([`crate::engine::memsys::MemSys::migrate`] keeps the moved
//! pages pending with where their data still lies, §4.4).
//!
//! Invariants (checked by the tests below): each touched page has exactly one entry; its
//! index is in the application's current index set; per-index loads are the counts of the
//! entries; and, because first touch and every remap keep them so, the loads of the
//! current indices differ by at most one.

use rustc_hash::FxHashMap;

/// One page moved by [`Frames::remap`]: page number, source and destination index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub page: u64,
    pub from: u32,
    pub to: u32,
}

/// Where one application's pages live.
#[derive(Clone, Debug, Default)]
struct AppTable {
    /// Page → `frame << 8 | index`.
    entries: FxHashMap<u64, u64>,
    /// Pages of this application per index (all indices of a stack).
    load: Vec<u64>,
    /// Indices of the current set, ascending.
    set: Vec<u32>,
    /// The last page looked up and its entry (most accesses repeat it: no hash).
    last: (u64, u64),
}

/// The page tables of every application plus the shared frame counters.
#[derive(Clone, Debug)]
pub struct Frames {
    apps: Vec<AppTable>,
    /// Next free frame per channel index.
    next: Vec<u64>,
}

const IDX_BITS: u32 = 8;

impl Frames {
    /// `apps` applications, `per_stack` channel indices (at most 256), every application
    /// on all of them.
    pub fn new(apps: usize, per_stack: u32) -> Frames {
        let per = per_stack.clamp(1, 1 << IDX_BITS);
        Frames {
            apps: (0..apps)
                .map(|_| AppTable {
                    load: vec![0; per as usize],
                    set: (0..per).collect(),
                    last: (u64::MAX, 0),
                    ..AppTable::default()
                })
                .collect(),
            next: vec![0; per as usize],
        }
    }

    /// `app`'s index set (ascending).
    pub fn set(&self, app: usize) -> &[u32] {
        &self.apps[app].set
    }

    /// `app`'s pages per index.
    pub fn load(&self, app: usize) -> &[u64] {
        &self.apps[app].load
    }

    /// `(index, frame)` of `app`'s `page`, allocating it on first touch.
    #[inline]
    pub fn locate(&mut self, app: usize, page: u64) -> (u32, u64) {
        let t = &mut self.apps[app];
        let e = if t.last.0 == page {
            t.last.1
        } else {
            let e = match t.entries.get(&page) {
                Some(&e) => e,
                None => {
                    let idx = least(&t.load, &t.set);
                    let frame = self.next[idx as usize];
                    self.next[idx as usize] += 1;
                    t.load[idx as usize] += 1;
                    let e = frame << IDX_BITS | idx as u64;
                    t.entries.insert(page, e);
                    e
                }
            };
            t.last = (page, e);
            e
        };
        ((e & ((1 << IDX_BITS) - 1)) as u32, e >> IDX_BITS)
    }

    /// `(index, frame)` of `app`'s `page` if it was touched.
    pub fn get(&self, app: usize, page: u64) -> Option<(u32, u64)> {
        self.apps[app]
            .entries
            .get(&page)
            .map(|&e| ((e & ((1 << IDX_BITS) - 1)) as u32, e >> IDX_BITS))
    }

    /// Every page of `app` with its index, ascending by page.
    pub fn pages(&self, app: usize) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self.apps[app]
            .entries
            .iter()
            .map(|(&p, &e)| (p, (e & ((1 << IDX_BITS) - 1)) as u32))
            .collect();
        v.sort_unstable();
        v
    }

    /// Forgets `app`'s pages (they are allocated again on their next touch).
    pub fn clear(&mut self, app: usize) {
        let t = &mut self.apps[app];
        t.entries.clear();
        t.load.iter_mut().for_each(|l| *l = 0);
        t.last = (u64::MAX, 0);
    }

    /// Moves `app` to the indices `set` (non-empty, each below the per-stack count) and
    /// returns the pages moved, in the order they move: pages on indices that left the set
    /// go to the least used remaining index (ascending page numbers), then pages move from
    /// the most to the least loaded index (lowest page first) until the loads differ by at
    /// most one. Every moved page gets a new frame on its destination. (Only the
    /// translation changes here; the caller decides when the data moves.)
    pub fn remap(&mut self, app: usize, set: &[u32]) -> Vec<Move> {
        let per = self.next.len();
        let mut set: Vec<u32> = set
            .iter()
            .copied()
            .filter(|&i| (i as usize) < per)
            .collect();
        set.sort_unstable();
        set.dedup();
        assert!(!set.is_empty(), "a page table needs at least one index");
        let t = &mut self.apps[app];
        t.set = set.clone();
        // Pages by index, ascending.
        let mut by: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); per];
        let mut all: Vec<(u64, u64)> = t.entries.iter().map(|(&p, &e)| (p, e)).collect();
        all.sort_unstable();
        for &(p, e) in &all {
            by[(e & ((1 << IDX_BITS) - 1)) as usize].push_back(p);
        }
        let mut moves = Vec::new();
        let mut go = |t: &mut AppTable, next: &mut [u64], page: u64, from: u32, to: u32| {
            t.load[from as usize] -= 1;
            t.load[to as usize] += 1;
            let frame = next[to as usize];
            next[to as usize] += 1;
            t.entries.insert(page, frame << IDX_BITS | to as u64);
            moves.push(Move { page, from, to });
        };
        // 1. Pages on indices that left the set, in ascending page order.
        let mut gone: Vec<(u64, u32)> = Vec::new();
        for (i, q) in by.iter_mut().enumerate() {
            if !set.contains(&(i as u32)) {
                gone.extend(q.drain(..).map(|p| (p, i as u32)));
            }
        }
        gone.sort_unstable();
        for (p, from) in gone {
            let to = least(&t.load, &set);
            go(t, &mut self.next, p, from, to);
            by[to as usize].push_back(p);
        }
        // 2. Rebalance: most loaded (ties: lowest index) → least loaded (ties: lowest).
        loop {
            let lo = least(&t.load, &set);
            let hi = *set
                .iter()
                .max_by_key(|&&i| (t.load[i as usize], std::cmp::Reverse(i)))
                .unwrap();
            if t.load[hi as usize] <= t.load[lo as usize] + 1 {
                break;
            }
            let p = by[hi as usize]
                .pop_front()
                .expect("a loaded index has pages");
            go(t, &mut self.next, p, hi, lo);
            by[lo as usize].push_back(p);
        }
        t.last = (u64::MAX, 0);
        moves
    }
}

/// The least loaded index of `set` (ties: the lowest).
#[inline]
fn least(load: &[u64], set: &[u32]) -> u32 {
    let mut best = set[0];
    for &i in &set[1..] {
        if load[i as usize] < load[best as usize] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_touch_balances_pages_over_the_set() {
        let mut f = Frames::new(2, 8);
        f.remap(0, &[1, 4, 6]);
        let idx: Vec<u32> = (0..9).map(|p| f.locate(0, p * 7).0).collect();
        assert_eq!(idx, vec![1, 4, 6, 1, 4, 6, 1, 4, 6]);
        assert_eq!(f.load(0), &[0, 3, 0, 0, 3, 0, 3, 0]);
        // Repeated touches keep the entry.
        assert_eq!(f.locate(0, 0), (1, 0));
        // Another application's pages on the same index take new frames.
        f.remap(1, &[1]);
        assert_eq!(f.locate(1, 0), (1, 3));
    }

    #[test]
    fn growing_the_set_rebalances_and_shrinking_empties_indices() {
        let mut f = Frames::new(1, 8);
        f.remap(0, &[0, 1]);
        for p in 0..8 {
            f.locate(0, p);
        }
        // Only gains: pages still move to the new indices.
        let m = f.remap(0, &[0, 1, 2, 3]);
        assert_eq!(m.len(), 4);
        assert_eq!(f.load(0)[..4], [2, 2, 2, 2]);
        assert!(m.iter().all(|m| m.to >= 2 && m.from < 2));
        // Only losses: the pages of the lost indices go.
        let m = f.remap(0, &[0]);
        assert_eq!(m.len(), 6);
        assert_eq!(f.load(0)[0], 8);
        // A page keeps its new place.
        let (i, _) = f.locate(0, 5);
        assert_eq!(i, 0);
    }

    proptest! {
        /// Random touches and set changes: no page is lost or duplicated, every page sits
        /// on an index of the current set, the loads are the entry counts and differ by at
        /// most one, a moved page changes index and frame, and frames are never shared.
        #[test]
        fn remaps_conserve_pages(ops in proptest::collection::vec(
            (0u8..4, 0u64..200, proptest::collection::vec(0u32..8, 1..6)), 1..60)) {
            let mut f = Frames::new(2, 8);
            let mut touched: Vec<std::collections::BTreeSet<u64>> = vec![Default::default(); 2];
            for (op, page, set) in ops {
                let app = (page % 2) as usize;
                if op == 0 {
                    let before: FxHashMap<u64, (u32, u64)> = touched[app]
                        .iter()
                        .map(|&p| (p, f.get(app, p).unwrap()))
                        .collect();
                    let moves = f.remap(app, &set);
                    for m in &moves {
                        let (i, fr) = f.get(app, m.page).unwrap();
                        prop_assert_eq!(i, m.to);
                        prop_assert_eq!(before[&m.page].0, m.from);
                        prop_assert!(m.from != m.to);
                        prop_assert!(fr != before[&m.page].1 || i != before[&m.page].0);
                    }
                    for (p, old) in &before {
                        if !moves.iter().any(|m| m.page == *p) {
                            prop_assert_eq!(f.get(app, *p).unwrap(), *old);
                        }
                    }
                } else {
                    f.locate(app, page);
                    touched[app].insert(page);
                }
                let mut frames = std::collections::HashSet::new();
                for (a, pages_touched) in touched.iter().enumerate() {
                    let pages = f.pages(a);
                    prop_assert_eq!(
                        pages.iter().map(|p| p.0).collect::<Vec<_>>(),
                        pages_touched.iter().copied().collect::<Vec<_>>()
                    );
                    let set = f.set(a).to_vec();
                    let mut load = [0u64; 8];
                    for &(p, i) in &pages {
                        prop_assert!(set.contains(&i), "page {} on {} not in {:?}", p, i, set);
                        load[i as usize] += 1;
                        prop_assert!(frames.insert((i, f.get(a, p).unwrap().1)));
                    }
                    prop_assert_eq!(&load[..], f.load(a));
                    let l: Vec<u64> = set.iter().map(|&i| load[i as usize]).collect();
                    prop_assert!(l.iter().max().unwrap() - l.iter().min().unwrap() <= 1, "{:?}", l);
                }
            }
        }
    }
}
