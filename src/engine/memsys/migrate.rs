//! Moving an application's pages between channels when its channel set changes (UGPU
//! §4): the per-page cost of each mechanism, the page-table remap with on-demand
//! migration under `stack-page` (a page moves when it is next touched, and that access
//! waits for it), and the eager path of sets without a page table.

use super::*;

/// A page of a paged application that the page table already places on its new channel
/// index while its data still lies on index `from`: it migrates on its next access
/// (on-demand migration, seed 004 §4.4) with mechanism `how`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PendingMove {
    from: u32,
    how: Migration,
}

/// The cost of migrating one page on demand: engine time (core cycles), cycles each side
/// of each channel pair is busy (DRAM cycles), DRAM bytes moved.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PageCost {
    cycles: u64,
    busy: u64,
    bytes: u64,
}

/// What [`MemSys::migrate`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// Cycles the application pauses at once.
    pub pause: u64,
    /// Pages moved at once (`on_demand` false) or pages of the application waiting to
    /// move on their next access (`on_demand` true).
    pub pages: u64,
    /// The page table moves pages on demand (a paged application).
    pub on_demand: bool,
}

/// Index of a migration mode in [`MemSys::page_cost`].
fn mode(how: Migration) -> usize {
    match how {
        Migration::None => 0,
        Migration::Copy => 1,
        Migration::PageMove => 2,
        Migration::Soft => 3,
    }
}

impl MemSys {
    /// DRAM cycles to move `bytes` over one channel's bus in ordinary bursts.
    fn bus_cycles(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.access_bytes) * self.chans[0].config().timing.burst
    }

    /// Core cycles of a copy's round trip through the NoC and L2 (read there and back).
    fn copy_round_trip(&self) -> u64 {
        2 * (2 * self.lat.noc + self.lat.l2 + self.lat.dram_extra)
    }

    /// DRAM cycles one side of a `Soft` move of `bytes` keeps its channel busy: the
    /// bursts plus one row activation and precharge (tRCD + tRP).
    fn soft_side(&self, spec: &GpuSpec, bytes: u64) -> u64 {
        self.bus_cycles(bytes) + spec.dram.timing.t_rcd.0 + spec.dram.timing.t_rp.0
    }

    /// Core cycles a `Copy` (UGPU-Ori) moves one whole page in: read over the source
    /// channel's bus, written over the destination's, plus the round trip.
    fn copy_page_cycles(&self) -> u64 {
        self.to_core(2 * self.bus_cycles(self.page_bytes)) + self.copy_round_trip()
    }

    /// Whether pages still wait to migrate on demand (a channel-set change is not over
    /// until they have: fast-forward does not jump across it).
    pub fn pages_moving(&self) -> bool {
        self.pending.iter().any(|p| !p.is_empty())
    }

    /// The per-page costs of on-demand migration under `stack-page` (see
    /// [`Self::migrate`]). A page spans channel index `from` of each stack it covers
    /// (`covered` = page bytes over the stack interleave, at most the stack count) and
    /// moves, stack by stack, to index `to` of the same stack (the custom mapping keeps
    /// migrations inside a stack), with `page_bytes / covered` bytes per stack:
    ///
    /// - `PageMove`: `migration_commands_per_page` MIGRATION commands of
    ///   `migration_command` cycles spread over `bank_groups` x `covered` units in
    ///   parallel; both channels of every covered stack are busy meanwhile.
    /// - `Soft`: on each channel pair (stacks in parallel) the bytes are read over the
    ///   source channel's bus and written over the destination's with ordinary READ/WRITE
    ///   bursts, lines one after another, plus one row activation and precharge
    ///   (tRCD + tRP) on each channel; no NoC or L2.
    /// - `Copy` (UGPU-Ori): the page's bytes read over the source channels' buses and
    ///   written over the destination's plus a round trip through the NoC and L2.
    /// - `None`: free.
    pub(super) fn set_page_costs(&mut self, spec: &GpuSpec) {
        let Some((stacks, per)) = self.map.stack_layout() else {
            return;
        };
        let si = spec.dram.mapping.stack_interleave.map_or(1, |b| b.0).max(1);
        let covered = (self.page_bytes / si).clamp(1, stacks.max(1) as u64) as u32;
        let bytes = self.page_bytes / covered as u64;
        let r = &spec.reconfig;
        let pm = {
            let parallel = (self.bank_groups.max(1) * covered) as u64;
            (r.migration_commands_per_page as u64).div_ceil(parallel) * r.migration_command.0
        };
        let one_side = self.soft_side(spec, bytes);
        self.page_cost[mode(Migration::PageMove)] = PageCost {
            cycles: pm,
            busy: self.to_dram(pm),
            bytes: 0,
        };
        self.page_cost[mode(Migration::Soft)] = PageCost {
            cycles: self.to_core(2 * one_side),
            busy: one_side,
            bytes: 2 * self.page_bytes,
        };
        self.page_cost[mode(Migration::Copy)] = PageCost {
            cycles: self.copy_page_cycles(),
            busy: self.bus_cycles(bytes),
            bytes: 2 * self.page_bytes,
        };
        self.per_stack = per;
        self.covered = covered;
    }

    /// An access of `app` to `line` reaching the memory side at `t`: when the line's page
    /// is ready at its place (0 when it is already). A page still waiting to migrate
    /// migrates now: the GPU's migration engine starts it at `t` or when it finishes the
    /// pages before it, whichever is later, and it is ready after the mode's per-page
    /// cost; its source and destination channels are busy for the transfer. An access to
    /// a page whose migration is under way waits for it. The first check is all that
    /// applications with nothing pending pay.
    #[inline]
    pub(super) fn page_ready(&mut self, app: usize, line: u64, t: u64, ctr: &mut Counters) -> u64 {
        if self.pending[app].is_empty() && self.inflight[app].is_empty() {
            return 0;
        }
        self.page_ready_slow(app, line, t, ctr)
    }

    fn page_ready_slow(&mut self, app: usize, line: u64, t: u64, ctr: &mut Counters) -> u64 {
        let page = line * self.line_bytes / self.page_bytes;
        let mut ready = 0;
        if !self.inflight[app].is_empty() {
            if t >= self.inflight_until[app] {
                // Every migration started so far is done.
                self.inflight[app].clear();
            } else if let Some(&r) = self.inflight[app].get(&page) {
                if r > t {
                    ready = r;
                } else {
                    self.inflight[app].remove(&page);
                }
            }
        }
        if self.pending[app].is_empty() {
            return ready;
        }
        let Some(p) = self.pending[app].remove(&page) else {
            return ready;
        };
        ctr.pages_migrated += 1;
        let c = self.page_cost[mode(p.how)];
        if c.cycles == 0 {
            return ready;
        }
        let to = self
            .frames
            .as_ref()
            .and_then(|f| f.get(app, page))
            .map_or(p.from, |e| e.0);
        let (a, b) = (p.from as usize, to as usize);
        let need = a.max(b) + 1;
        if self.engine_free.len() < need {
            self.engine_free.resize(need, 0);
        }
        let start = t
            .max(self.engine_free[a])
            .max(self.engine_free[b])
            .max(ready);
        let done = start + c.cycles;
        self.engine_free[a] = done;
        self.engine_free[b] = done;
        let dstart = self.to_dram(start);
        for s in 0..self.covered {
            for i in [p.from, to] {
                if let Some(ch) = self.chans.get_mut((s * self.per_stack + i) as usize) {
                    ch.occupy(dstart, c.busy);
                }
            }
        }
        ctr.dram_bytes += c.bytes;
        ctr.migration_cycles += c.cycles;
        self.inflight[app].insert(page, done);
        self.inflight_until[app] = self.inflight_until[app].max(done);
        done
    }

    /// After `app`'s set changed: whether its accesses go through the page table (a
    /// `stack-page` set with the same indices in every stack), and the table's index set.
    /// Returns whether the table was in use before, and the new index set if it is now.
    pub(super) fn page_table(&mut self, app: usize) -> (bool, Option<Vec<u32>>) {
        let was = self.paged[app];
        let idx = self
            .map
            .stack_layout()
            .and_then(|(s, per)| self.sets[app].stack_indices(s, per));
        self.paged[app] = idx.is_some();
        if let (Some(f), None) = (self.frames.as_mut(), &idx) {
            // Back on the pure mapping: the table is rebuilt by first touch later.
            f.clear(app);
        }
        (was, idx)
    }

    /// Moves `app` to `channels` (see [`Migrated`]; pages moved at once are also added to
    /// the app's `pages_migrated`).
    ///
    /// Under `stack-page` with a set holding the same indices in every stack the page
    /// table moves pages on demand (seed 004 §4.4): [`Frames::remap`] updates the table at
    /// once (pages off lost indices, then a rebalance), so new accesses locate a moved
    /// page on its new channel, and each moved page is recorded as pending with the index
    /// its data still lies on. Its first access migrates it (see `page_ready`,
    /// `set_page_costs`; counted in `pages_migrated` and `migration_cycles` then);
    /// a page never accessed again never moves. Remapping a pending page keeps where its
    /// data is and changes only its destination (back there: no longer pending). The
    /// application pauses only for `driver_delay + flush` (TLB shootdown and cache flush)
    /// when the change moves at least one page (`None`: no pause, free moves).
    ///
    /// Otherwise the mapping is a pure function of the set: the pages whose channel left
    /// the set are charged at once (the others change channel for free), as before page
    /// tables existed, and the application pauses for all of them.
    pub fn migrate(
        &mut self,
        app: usize,
        channels: Vec<u32>,
        how: Migration,
        now: u64,
        spec: &GpuSpec,
        ctr: &mut Counters,
    ) -> Result<Migrated, ChannelSetError> {
        let new = ChannelSet::new(channels, self.map.config().channels)?;
        let old = std::mem::replace(&mut self.sets[app], new.clone());
        let (was, idx) = self.page_table(app);
        if let (true, Some(idx)) = (was, &idx) {
            let moves = self.frames.as_mut().unwrap().remap(app, idx);
            let pending = &mut self.pending[app];
            for m in &moves {
                use std::collections::hash_map::Entry;
                match pending.entry(m.page) {
                    Entry::Occupied(mut e) => {
                        if e.get().from == m.to {
                            e.remove();
                        } else {
                            e.get_mut().how = how;
                        }
                    }
                    Entry::Vacant(e) => {
                        e.insert(PendingMove { from: m.from, how });
                    }
                }
            }
            // A moved page's translations are stale: every TLB drops them.
            for m in &moves {
                self.shoot_down(app, m.page * self.page_bytes);
            }
            let pending = &self.pending[app];
            let r = &spec.reconfig;
            let pause = if moves.is_empty() || how == Migration::None {
                0
            } else {
                r.driver_delay.0 + r.flush.0
            };
            return Ok(Migrated {
                pause,
                pages: pending.len() as u64,
                on_demand: true,
            });
        }
        self.pending[app].clear();
        let moved: Vec<u64> = self.pages[app]
            .pages()
            .into_iter()
            .filter(|&p| {
                let from = self.map.locate(p * self.page_bytes, &old).channel;
                !new.ids().contains(&from)
            })
            .collect();
        for &p in &moved {
            self.shoot_down(app, p * self.page_bytes);
        }
        if let Some(idx) = &idx {
            // From the pure mapping onto the page table: the table is built afresh (pages
            // are placed by first touch again; the charged moves are the pure mapping's).
            let f = self.frames.as_mut().unwrap();
            f.clear(app);
            f.remap(app, idx);
        }
        let pages = moved.len() as u64;
        ctr.pages_migrated += pages;
        let done = |pause| Migrated {
            pause,
            pages,
            on_demand: false,
        };
        if pages == 0 || how == Migration::None {
            return Ok(done(0));
        }
        let r = &spec.reconfig;
        let fixed = r.driver_delay.0 + r.flush.0;
        let pause = match how {
            Migration::None => 0,
            Migration::Copy => {
                // The driver copies page after page: each page is read over its old
                // channel's bus and written over its new one, plus a round trip through
                // the NoC and L2 per page. The reads and writes are DRAM requests in the
                // channels' queues (see `copy_pages`), paced page by page.
                ctr.dram_bytes += 2 * pages * self.page_bytes;
                let each = self.copy_page_cycles();
                let half =
                    self.to_core(self.bus_cycles(self.page_bytes)) + self.copy_round_trip() / 2;
                let first = now + r.driver_delay.0;
                self.copy_pages(&moved, &old, &new, |j| first + j * each, half);
                fixed + pages * each
            }
            Migration::Soft => {
                // (Each page lies on one channel pair here.) Lines one after another with
                // ordinary READ/WRITE bursts, plus a row activation and precharge per side.
                let one_side = self.soft_side(spec, self.page_bytes);
                ctr.dram_bytes += 2 * pages * self.page_bytes;
                let each = self.to_core(2 * one_side);
                let half = self.to_core(one_side);
                let first = now + r.driver_delay.0;
                self.copy_pages(&moved, &old, &new, |j| first + j * each, half);
                fixed + self.to_core(pages * 2 * one_side)
            }
            Migration::PageMove => {
                // Pages in parallel over every stack's bank groups (the on-demand cost of
                // `set_page_costs` spreads one page's commands instead).
                let parallel = (self.stacks.max(1) * self.bank_groups.max(1)) as u64;
                let per_page = r.migration_commands_per_page as u64 * r.migration_command.0;
                fixed + pages.div_ceil(parallel) * per_page
            }
        };
        Ok(done(pause))
    }
}

#[cfg(test)]
mod page_table_tests {
    use super::*;
    use proptest::prelude::*;

    fn ugpu() -> (GpuSpec, MemSys) {
        let spec = GpuSpec::builtin("ugpu-80sm-hbm").unwrap();
        let m = MemSys::new(&spec, 6, 2);
        (spec, m)
    }

    /// Every byte of `app`'s page `p` lies on channel index `idx` of its address's stack.
    fn check_page(m: &mut MemSys, app: usize, p: u64) -> Result<(), TestCaseError> {
        let (idx, _) = m.frames().unwrap().get(app, p).unwrap();
        for l in 0..32u64 {
            let addr = p * 4096 + l * 128;
            let loc = m.locate(app, addr);
            prop_assert_eq!(loc.channel, (l % 4) as u32 * 8 + idx);
            prop_assert!(m.sets[app].ids().contains(&loc.channel));
        }
        Ok(())
    }

    /// The index set `idx` in each of the 4 stacks.
    fn set(idx: &[u32]) -> Vec<u32> {
        (0..4u32)
            .flat_map(|s| idx.iter().map(move |i| s * 8 + i))
            .collect()
    }

    /// A store of `app` to byte `addr` at `t`: when it is acknowledged.
    fn store(m: &mut MemSys, app: usize, addr: u64, t: u64, ctr: &mut Counters) -> u64 {
        m.store(0, app, addr / 128, 0b1111, 0, t, ctr)
    }

    #[test]
    fn only_gaining_channels_still_moves_pages_on_demand() {
        let (spec, mut m) = ugpu();
        let mut ctr = Counters::default();
        m.set_channels(0, set(&[0, 1, 2, 3])).unwrap();
        for p in 0..64 {
            m.locate(0, p * 4096);
        }
        assert_eq!(&m.frames().unwrap().load(0)[..5], &[16, 16, 16, 16, 0]);
        let mig = m
            .migrate(
                0,
                set(&[0, 1, 2, 3, 4]),
                Migration::PageMove,
                0,
                &spec,
                &mut ctr,
            )
            .unwrap();
        // 64 pages over 5 indices: 12 or 13 each; index 4 gets 12 or 13, all pending.
        let pages = mig.pages;
        assert!(pages == 12 || pages == 13, "{pages}");
        assert!(mig.on_demand);
        let r = &spec.reconfig;
        // Only the driver delay and the flush pause the application.
        assert_eq!(mig.pause, r.driver_delay.0 + r.flush.0);
        assert_eq!(ctr.pages_migrated, 0);
        // The table already places the pages on their new index.
        for p in 0..64 {
            check_page(&mut m, 0, p).unwrap();
        }
        // Touching every page migrates the pending ones, one after another through the
        // engine: 32 commands over 4 bank groups x 4 stacks, 2 rounds of 40 cycles each.
        let per_page = 2 * r.migration_command.0;
        let mut last = 0;
        for p in 0..64 {
            last = last.max(store(&mut m, 0, p * 4096, 1000, &mut ctr));
        }
        assert_eq!(ctr.pages_migrated, pages);
        assert_eq!(ctr.migration_cycles, pages * per_page);
        assert!(last >= 1000 + pages * per_page, "{last}");
        assert!(m.pending[0].is_empty());
    }

    #[test]
    fn pagemove_is_cheaper_than_soft_than_copy_per_page() {
        let cost = |how| {
            let (spec, mut m) = ugpu();
            let mut ctr = Counters::default();
            for p in 0..100 {
                m.locate(0, p * 4096);
            }
            let mig = m.migrate(0, set(&[0]), how, 0, &spec, &mut ctr).unwrap();
            for p in 0..100 {
                store(&mut m, 0, p * 4096 + 128, 5000, &mut ctr);
            }
            (mig, ctr)
        };
        let (pm, pmc) = cost(Migration::PageMove);
        let (soft, softc) = cost(Migration::Soft);
        let (copy, copyc) = cost(Migration::Copy);
        let (none, nonec) = cost(Migration::None);
        // 100 pages over 8 indices: all but index 0's 13 move, on their next access.
        for (mig, c) in [
            (&pm, &pmc),
            (&soft, &softc),
            (&copy, &copyc),
            (&none, &nonec),
        ] {
            assert_eq!(mig.pages, 87);
            assert_eq!(c.pages_migrated, 87);
        }
        // The pause is the fixed part only; None is free.
        assert_eq!(
            [pm.pause, soft.pause, copy.pause, none.pause],
            [2000, 2000, 2000, 0]
        );
        assert_eq!(nonec.migration_cycles, 0);
        // Per page on the UGPU model: 80, 192 and 866 core cycles.
        assert_eq!(
            [pmc, softc, copyc].map(|c| c.migration_cycles as f64 / 87.0),
            [80.0, 192.0, 866.0]
        );
    }

    #[test]
    fn an_access_to_a_pending_page_waits_for_its_migration() {
        let (spec, mut m) = ugpu();
        let mut ctr = Counters::default();
        // Pages 0..8 on indices 0..7; page 9 ends up on index 1 as well.
        for p in 0..10 {
            m.locate(0, p * 4096);
        }
        let ordinary = |t: u64, m: &MemSys| t + 2 * m.lat.noc + m.lat.l2;
        let mig = m
            .migrate(0, set(&[0]), Migration::Copy, 100, &spec, &mut ctr)
            .unwrap();
        assert_eq!(mig.pages, 8);
        let per_page = 866;
        // First access to page 1: the migration starts when the store reaches its slice.
        let t = 10_000;
        let a = store(&mut m, 0, 4096, t, &mut ctr);
        assert!(a >= t + per_page, "{a}");
        assert_eq!((ctr.pages_migrated, ctr.migration_cycles), (1, per_page));
        let ready = m.inflight[0][&1];
        assert!(
            ready >= t + per_page && ready < t + per_page + 200,
            "{ready}"
        );
        assert_eq!(a, ready + m.lat.noc);
        // Another line of the same page during the migration waits for the same time and
        // migrates nothing more.
        let b = store(&mut m, 0, 4096 + 128 * 7, t + 10, &mut ctr);
        assert_eq!(b, a);
        assert_eq!(ctr.pages_migrated, 1);
        // A load waits as well (through its fill when it goes to DRAM).
        let w = LoadRef {
            sm: 1,
            warp: 0,
            slot: 0,
            gen: 0,
        };
        let mut ctrs = vec![ctr.clone(), Counters::default()];
        let l = m.load(
            1,
            0,
            (4096 + 128 * 9) / 128,
            0b1111,
            t + 20,
            true,
            w,
            &mut ctrs,
        );
        let l = l.unwrap_or_else(|| {
            while m.resolved.is_empty() {
                let evs = std::mem::take(&mut m.chan_events);
                let now = evs.iter().map(|e| e.0).min().expect("a channel event");
                for (at, c) in evs {
                    if at <= now {
                        m.run_channel(c as usize, now, &mut ctrs);
                    } else {
                        m.chan_events.push((at, c));
                    }
                }
            }
            m.resolved[0].1
        });
        assert!(l >= ready + m.lat.noc, "{l} vs {ready}");
        // Another pending page migrates after this one (one engine per GPU).
        let c = store(&mut m, 0, 2 * 4096, t + 30, &mut ctr);
        assert!(c >= ready + per_page, "{c}");
        // Once ready, a page is an ordinary page: no extra delay.
        let later = ready + 10 * per_page;
        assert_eq!(
            store(&mut m, 0, 4096 + 256, later, &mut ctr),
            ordinary(later, &m)
        );
        // Pages never touched again never move.
        assert_eq!(ctr.pages_migrated, 2);
        assert_eq!(m.pending[0].len(), 6);
        // Moving back to all indices: the pages whose data never left their index are no
        // longer pending.
        m.migrate(
            0,
            set(&[0, 1, 2, 3, 4, 5, 6, 7]),
            Migration::Copy,
            later,
            &spec,
            &mut ctr,
        )
        .unwrap();
        for (p, pm) in &m.pending[0] {
            assert_ne!(m.frames().unwrap().get(0, *p).unwrap().0, pm.from);
        }
    }

    proptest! {
        /// Random touches and set changes (same indices in every stack): every page stays
        /// in the table once, on an index of the current set, and its bytes are located
        /// on its (new) channel after each migration.
        #[test]
        fn locate_follows_moved_pages(ops in proptest::collection::vec(
            (0u8..3, 0u64..300, proptest::collection::btree_set(0u32..8, 1..8)), 1..40)) {
            let (spec, mut m) = ugpu();
            let mut ctr = Counters::default();
            let mut touched = std::collections::BTreeSet::new();
            // Where each page's data lies (its index until a store migrates it).
            let mut home = std::collections::BTreeMap::new();
            let mut t = 0;
            for (op, page, idx) in ops {
                if op == 2 {
                    // An access migrates a pending page.
                    t += 500;
                    store(&mut m, 0, page * 4096 + 128, t, &mut ctr);
                    touched.insert(page);
                    home.insert(page, m.frames().unwrap().get(0, page).unwrap().0);
                    prop_assert!(!m.pending[0].contains_key(&page));
                } else if op == 0 {
                    let set: Vec<u32> =
                        (0..4u32).flat_map(|s| idx.iter().map(move |i| s * 8 + i)).collect();
                    m.migrate(0, set, Migration::PageMove, 0, &spec, &mut ctr).unwrap();
                    let load = m.frames().unwrap().load(0).to_vec();
                    let l: Vec<u64> = idx.iter().map(|&i| load[i as usize]).collect();
                    prop_assert!(l.iter().max().unwrap() - l.iter().min().unwrap() <= 1);
                    prop_assert_eq!(load.iter().sum::<u64>(), touched.len() as u64);
                    for &p in &touched {
                        check_page(&mut m, 0, p)?;
                    }
                } else {
                    let (i, _) = m.frames().unwrap().get(0, page).unwrap_or_else(|| {
                        let loc = m.locate(0, page * 4096 + 5);
                        (loc.channel % 8, 0)
                    });
                    home.entry(page).or_insert(i);
                    touched.insert(page);
                }
                // A page is pending exactly when the table places it away from its data.
                for (&p, &h) in &home {
                    let now = m.frames().unwrap().get(0, p).unwrap().0;
                    match m.pending[0].get(&p) {
                        Some(pm) => {
                            prop_assert_eq!(pm.from, h);
                            prop_assert!(now != h);
                        }
                        None => prop_assert_eq!(now, h),
                    }
                }
            }
            let pages: Vec<u64> = m.frames().unwrap().pages(0).iter().map(|p| p.0).collect();
            prop_assert_eq!(pages, touched.into_iter().collect::<Vec<_>>());
        }
    }
}
