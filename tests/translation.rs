//! Address translation (`[translation]`, issue 45): TLB hits, L2 TLB lookups and page walks
//! on the memory system itself, each expectation derived from the model's parameters.
//!
//! Stores are the probe: a store's acknowledgement comes an unloaded round trip
//! (`l1d.miss_latency + 2 * noc + l2`: the L1 lookup, then there and back) after it is
//! issued when nothing waits for it on the reply network (`sm.exit_waits_for_stores` off
//! here), and it is issued when its translation is known, so `ack - round trip` is the
//! translation's ready time.

use gpumodel::arch::GpuSpec;
use gpumodel::engine::memsys::MemSys;
use gpumodel::engine::Counters;

const MIB2: u64 = 2 << 20;

fn spec(extra: &[&str]) -> GpuSpec {
    let mut sets = vec![
        "translation.enabled=true".to_string(),
        "translation.page_size=\"2 MiB\"".to_string(),
        "sm.exit_waits_for_stores=false".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    GpuSpec::builtin("qv100")
        .unwrap()
        .with_overrides(&sets)
        .unwrap()
}

fn line(m: &MemSys, addr: u64) -> u64 {
    addr / m.line_bytes()
}

/// A one-sector store of `addr` by `sm` at `t`: its translation's ready time.
fn translated(m: &mut MemSys, sm: usize, addr: u64, t: u64, ctr: &mut Counters) -> u64 {
    let l = line(m, addr);
    let ack = m.store(sm, 0, l, 1, 0, t, ctr);
    ack - (m.lat.l1_miss + 2 * m.lat.noc + m.lat.l2)
}

#[test]
fn a_tlb_miss_walks_walk_levels_reads_that_reach_the_l2() {
    for levels in [1u32, 2, 4, 5] {
        let s = spec(&[&format!("translation.walk_levels={levels}")]);
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        m.store(0, 0, line(&m, 5 * MIB2), 1, 0, 100, &mut c);
        // One sector of data and one per level of the walk.
        assert_eq!(c.l2_accesses, 1 + levels as u64, "{levels} levels");
        assert_eq!((c.tlb_l1_misses, c.tlb_l2_misses, c.walks), (1, 1, 1));
        // The same page again, from another SM: an L2 TLB hit, no walk.
        m.store(1, 0, line(&m, 5 * MIB2 + 4096), 1, 0, 1_000_000, &mut c);
        assert_eq!(c.l2_accesses, 2 + levels as u64);
        assert_eq!((c.tlb_l2_accesses, c.tlb_l2_misses, c.walks), (2, 1, 1));
        // Each walk read is an L2 round trip at least, one after the other.
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        let ready = translated(&mut m, 0, 9 * MIB2, 100, &mut c);
        let lookups = s.translation.l1_latency.0 + s.translation.l2_latency.0;
        assert!(ready >= 100 + lookups + levels as u64 * (2 * m.lat.noc + m.lat.l2));
    }
}

#[test]
fn a_tlb_hit_costs_exactly_the_lookup_latencies() {
    for (l1, l2) in [(0u64, 100u64), (7, 30), (30, 0)] {
        let s = spec(&[
            &format!("translation.l1_latency={l1}"),
            &format!("translation.l2_latency={l2}"),
        ]);
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        // Cold: walked (long done by the next accesses).
        translated(&mut m, 0, 3 * MIB2, 10, &mut c);
        let t = 1_000_000;
        // L1 TLB hit: exactly l1_latency, also for another line of the page.
        assert_eq!(translated(&mut m, 0, 3 * MIB2 + 256, t, &mut c), t + l1);
        assert_eq!(
            translated(&mut m, 0, 3 * MIB2 + 8192, t + 10, &mut c),
            t + 10 + l1
        );
        // Another SM: its L1 TLB misses, the shared L2 TLB hits.
        assert_eq!(translated(&mut m, 2, 3 * MIB2, t, &mut c), t + l1 + l2);
        // ... and its L1 TLB has it from then on (a lookup before waits for that fill).
        assert_eq!(
            translated(&mut m, 2, 3 * MIB2, t + 1, &mut c),
            (t + 1 + l1).max(t + l1 + l2)
        );
        assert_eq!(
            translated(&mut m, 2, 3 * MIB2, t + 500, &mut c),
            t + 500 + l1
        );
        assert_eq!(c.walks, 1);
    }
    // Translation off: issued as it comes.
    let s = spec(&["translation.enabled=false"]);
    let mut m = MemSys::new(&s, 4, 1);
    let mut c = Counters::default();
    assert_eq!(translated(&mut m, 0, 3 * MIB2, 500, &mut c), 500);
    assert_eq!((c.tlb_l1_accesses, c.walks), (0, 0));
}

#[test]
fn misses_to_a_page_being_walked_wait_for_that_walk() {
    let s = spec(&[]);
    let mut m = MemSys::new(&s, 4, 1);
    let mut c = Counters::default();
    let first = translated(&mut m, 0, 7 * MIB2, 100, &mut c);
    // Other SMs miss the same page while the walk is in flight: no second walk, and their
    // translation is known when the walk ends.
    for sm in 1..4 {
        let r = translated(&mut m, sm, 7 * MIB2 + 128 * sm as u64, 101, &mut c);
        assert_eq!(r, first);
    }
    assert_eq!(c.walks, 1);
}

#[test]
fn never_more_walks_in_flight_than_walkers() {
    for walkers in [1u32, 2, 3] {
        let s = spec(&[&format!("translation.walkers={walkers}")]);
        let tr = &s.translation;
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        // The shortest a walk can be: its reads, each an unloaded L2 round trip.
        let walk = tr.walk_levels as u64 * (2 * m.lat.noc + m.lat.l2);
        let start = 1000 + tr.l1_latency.0 + tr.l2_latency.0;
        // 12 misses to 12 pages at once: with `walkers` walks at a time, the i-th walk to
        // finish (0-based) cannot end before i / walkers + 1 walks' worth of time.
        let n = 12;
        let mut ends: Vec<u64> = (0..n)
            .map(|p| translated(&mut m, 0, (20 + p) * MIB2, 1000, &mut c))
            .collect();
        ends.sort_unstable();
        for (i, e) in ends.iter().enumerate() {
            let rounds = i as u64 / walkers as u64 + 1;
            assert!(
                *e >= start + rounds * walk,
                "{walkers} walkers: walk {i} ended at {e}, before {}",
                start + rounds * walk
            );
        }
        assert_eq!(c.walks, n);
    }
}

#[test]
fn an_access_pattern_within_the_l1_tlb_reach_misses_only_cold() {
    for (entries, assoc) in [(16u32, 16u32), (32, 4), (8, 8)] {
        let s = spec(&[
            &format!("translation.l1_entries={entries}"),
            &format!("translation.l1_assoc={assoc}"),
        ]);
        let page = s.translation.page_size.0;
        // Reach = entries x page size: cycle over exactly that many bytes, a line per page
        // and round.
        let mut m = MemSys::new(&s, 2, 1);
        let mut c = Counters::default();
        let mut t = 100;
        for round in 0..6u64 {
            for p in 0..entries as u64 {
                translated(&mut m, 0, p * page + round * 4096, t, &mut c);
                t += 2000;
            }
        }
        assert_eq!(c.tlb_l1_accesses, 6 * entries as u64);
        assert_eq!(
            c.tlb_l1_misses, entries as u64,
            "{entries} entries, {assoc} ways"
        );
        // One page more than the reach, cycled in a fully associative L1 TLB: LRU misses
        // every time (the L2 TLB holds them all: one walk per page).
        let s = spec(&[
            &format!("translation.l1_entries={entries}"),
            &format!("translation.l1_assoc={entries}"),
        ]);
        let mut m = MemSys::new(&s, 2, 1);
        let mut c = Counters::default();
        for _ in 0..4u64 {
            for p in 0..=entries as u64 {
                translated(&mut m, 0, p * page, t, &mut c);
                t += 2000;
            }
        }
        assert_eq!(c.tlb_l1_misses, c.tlb_l1_accesses);
        assert_eq!(c.walks, entries as u64 + 1);
    }
}

#[test]
fn a_bad_translation_geometry_is_rejected() {
    for bad in [
        "translation.l1_assoc=3",
        "translation.l2_assoc=0",
        "translation.walkers=0",
        "translation.walk_levels=0",
        "translation.page_size=\"3 KiB\"",
    ] {
        let err = GpuSpec::builtin("h100")
            .unwrap()
            .with_overrides(&[bad.to_string()])
            .unwrap_err()
            .to_string();
        let key = bad.split('=').next().unwrap();
        assert!(err.contains(key), "{bad}: {err}");
    }
}

#[test]
fn an_sms_l1_tlb_misses_leave_one_every_miss_interval() {
    // Pages already in the L2 TLB (walked from another SM long before): the k-th of n L1
    // misses sent by one SM in the same cycle reaches the L2 TLB k * l1_miss_interval
    // cycles after the first, so its translation is ready then plus l2_latency.
    for interval in [1u64, 5, 12] {
        let s = spec(&[&format!("translation.l1_miss_interval={interval}")]);
        let (l1, l2) = (s.translation.l1_latency.0, s.translation.l2_latency.0);
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        let pages: Vec<u64> = (0..6).map(|p| (40 + p) * MIB2).collect();
        for &a in &pages {
            m.store(1, 0, line(&m, a), 1, 0, 100, &mut c);
        }
        let t = 5_000_000;
        for (k, &a) in pages.iter().enumerate() {
            let ready = translated(&mut m, 0, a, t, &mut c);
            assert_eq!(
                ready,
                t + l1 + k as u64 * interval + l2,
                "interval {interval}, miss {k}"
            );
        }
        // Another SM's port is its own.
        let ready = translated(&mut m, 2, pages[0], t, &mut c);
        assert_eq!(ready, t + l1 + l2);
    }
}

#[test]
fn a_walk_installs_its_aligned_group_of_walk_fill_pages() {
    for fill in [1u64, 4, 16] {
        let s = spec(&[&format!("translation.walk_fill={fill}")]);
        let (l1, l2) = (s.translation.l1_latency.0, s.translation.l2_latency.0);
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        let p = 37u64;
        let first = p / fill * fill;
        let end = translated(&mut m, 0, p * MIB2, 100, &mut c);
        assert_eq!(c.walks, 1);
        // A page of the group asked for while the walk is in flight waits for it.
        let q = first + (p - first + 1) % fill;
        assert_eq!(translated(&mut m, 1, q * MIB2, 110, &mut c), end);
        // Later, every page of the group hits the L2 TLB (from an SM whose L1 TLB is cold
        // for it); none walks.
        let t = 1_000_000;
        for (i, q) in (first..first + fill).enumerate() {
            let sm = 2 + i % 2;
            let at = t + 1000 * i as u64;
            assert_eq!(translated(&mut m, sm, q * MIB2, at, &mut c), at + l1 + l2);
        }
        assert_eq!(c.walks, 1, "fill {fill}");
        // The pages either side of the group walk.
        translated(&mut m, 1, (first + fill) * MIB2, 2 * t, &mut c);
        translated(&mut m, 1, (first - 1) * MIB2, 3 * t, &mut c);
        assert_eq!(c.walks, 3, "fill {fill}");
    }
}

#[test]
fn misses_without_a_valid_translation_hold_the_port_l2_miss_interval() {
    // One SM sends, in the same cycle, a cold miss (a walk), k misses to pages of the same
    // group (they wait for that walk) and then a miss to a page the L2 TLB has held for
    // long. The last reaches the L2 TLB after the k + 1 misses without a valid translation
    // have each held the port l2_miss_interval cycles.
    for (interval, cold) in [(5u64, 36u64), (2, 100), (7, 0)] {
        let s = spec(&[
            "translation.walk_fill=16",
            &format!("translation.l1_miss_interval={interval}"),
            &format!("translation.l2_miss_interval={cold}"),
        ]);
        let (l1, l2) = (s.translation.l1_latency.0, s.translation.l2_latency.0);
        let hold = if cold == 0 { interval } else { cold };
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        let warm = 200 * MIB2;
        m.store(1, 0, line(&m, warm), 1, 0, 100, &mut c);
        let t = 5_000_000;
        let k = 3u64;
        for j in 0..=k {
            translated(&mut m, 0, (64 + j) * MIB2, t, &mut c);
        }
        let ready = translated(&mut m, 0, warm, t, &mut c);
        assert_eq!(ready, t + l1 + (k + 1) * hold + l2, "{interval}/{cold}");
    }
}

#[test]
fn a_walk_cache_leaves_only_the_last_level_to_read() {
    for (cache, reads) in [(false, 4u64), (true, 1)] {
        let s = spec(&[
            "translation.walk_levels=4",
            &format!("translation.walk_cache={cache}"),
        ]);
        let mut m = MemSys::new(&s, 4, 1);
        let mut c = Counters::default();
        // The first walk reads every level.
        m.store(0, 0, line(&m, 5 * MIB2), 1, 0, 100, &mut c);
        assert_eq!(c.l2_accesses, 1 + 4);
        // A page 64 pages on (another last-level line, the same upper-level lines).
        m.store(0, 0, line(&m, 69 * MIB2), 1, 0, 1_000_000, &mut c);
        assert_eq!(c.walks, 2);
        assert_eq!(c.l2_accesses, 1 + 4 + 1 + reads, "walk cache {cache}");
    }
}
