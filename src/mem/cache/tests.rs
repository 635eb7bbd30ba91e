//! Unit tests of [`super::Cache`].

use super::*;

fn small(ways: u32, write_back: bool) -> CacheConfig {
    CacheConfig {
        sets: 4,
        ways,
        line_bytes: 128,
        sector_bytes: 32,
        mshrs: 4,
        mshr_merge: 2,
        index: SetIndex::Linear,
        strip: None,
        write_back,
    }
}

#[test]
fn miss_then_merge_then_hit_after_fill_time() {
    let mut c = Cache::new(small(2, false));
    assert!(matches!(
        c.read(7, 0b1111, 0),
        Read::Miss { fetch: 0b1111, .. }
    ));
    c.set_fill(7, 100, 0);
    assert_eq!(c.read(7, 0b0011, 10), Read::Merged { ready: 100, tag: 0 });
    assert_eq!(c.read(7, 0b0001, 99), Read::Merged { ready: 100, tag: 0 });
    // Merge limit 2 reached.
    assert_eq!(c.read(7, 0b0001, 99), Read::Stall);
    assert_eq!(c.read(7, 0b0001, 100), Read::Hit);
    assert_eq!(c.mshrs_in_use(100), 0);
}

/// A read stalled on fetches of unknown time: `stall_through_known` leaves what
/// retrying it at every later known fill time leaves, and `stalls_again` holds until
/// the fetch it waits on is resolved.
#[test]
fn stalls_on_unknown_fills_skip_their_retries() {
    let cfg = CacheConfig {
        mshrs: 8,
        ..small(2, false)
    };
    let build = || {
        let mut c = Cache::new(cfg);
        // Set 0: both ways await fetches of unknown time; set 1: fills at 100 and 200.
        for (line, ready, tag) in [(0, UNKNOWN, 1), (4, UNKNOWN, 2), (1, 100, 0), (5, 200, 0)] {
            assert!(matches!(c.read(line, 1, 0), Read::Miss { .. }));
            c.set_fill(line, ready, tag);
        }
        assert_eq!(c.read(8, 1, 10), Read::Stall);
        assert!(c.stalled_on_unknown());
        c
    };
    let mut stepped = build();
    let mut t = 10;
    while let Some(next) = stepped.next_fill_after(t) {
        t = next;
        assert_eq!(stepped.read(8, 1, t), Read::Stall);
    }
    let mut skipped = build();
    assert_eq!(skipped.stall_through_known(10), Some(t));
    assert_eq!(t, 200);
    assert_eq!(skipped.mshrs_in_use(0), stepped.mshrs_in_use(0));
    assert_eq!(skipped.read(1, 1, 0), stepped.read(1, 1, 0));
    assert_eq!(skipped.next_fill_after(0), None);

    let mut c = build();
    let full_set = c.last_stall();
    assert!(c.stalls_again(full_set, 8, 1));
    // Line 0's fetch takes two merged requests; a third stalls on its unknown time.
    assert!(matches!(c.read(0, 1, 20), Read::Merged { .. }));
    assert!(matches!(c.read(0, 1, 21), Read::Merged { .. }));
    assert_eq!(c.read(0, 1, 22), Read::Stall);
    let merge_limit = c.last_stall();
    assert!(c.stalled_on_unknown() && c.stalls_again(merge_limit, 0, 1));
    // Another way of the set touched: the retry would move line 0 back to the tail.
    assert!(matches!(c.read(4, 1, 23), Read::Merged { .. }));
    assert!(!c.stalls_again(merge_limit, 0, 1));
    assert_eq!(c.read(0, 1, 24), Read::Stall);
    assert!(c.stalls_again(merge_limit, 0, 1));
    c.resolve(0, 1, 500);
    assert!(!c.stalls_again(merge_limit, 0, 1));
    assert!(!c.stalls_again(full_set, 8, 1));
}

#[test]
fn unknown_fill_is_resolved_later() {
    let mut c = Cache::new(small(2, false));
    assert!(matches!(c.read(3, 1, 0), Read::Miss { .. }));
    c.set_fill(3, UNKNOWN, 42);
    assert_eq!(
        c.read(3, 1, 5),
        Read::Merged {
            ready: UNKNOWN,
            tag: 42
        }
    );
    c.resolve(3, 42, 300);
    assert_eq!(
        c.read(3, 1, 299),
        Read::Merged {
            ready: 300,
            tag: 42
        }
    );
    assert_eq!(c.read(3, 1, 300), Read::Hit);
}

#[test]
fn mshr_limit_stalls() {
    let mut c = Cache::new(small(4, false));
    for l in 0..4 {
        assert!(matches!(c.read(l, 1, 0), Read::Miss { .. }));
        c.set_fill(l, 50, 0);
    }
    assert_eq!(c.read(9, 1, 10), Read::Stall);
    assert!(matches!(c.read(9, 1, 50), Read::Miss { .. }));
}

#[test]
fn other_sectors_of_a_line_in_flight_are_fetched_beside_it() {
    // One MSHR: the line's first fetch holds it; a request for other sectors of the same
    // line fetches only those, under the same MSHR, instead of stalling.
    let mut c = Cache::new(CacheConfig {
        mshrs: 1,
        ..small(2, false)
    });
    assert!(matches!(
        c.read(5, 0b0011, 0),
        Read::Miss { fetch: 0b0011, .. }
    ));
    c.set_fill(5, UNKNOWN, 1);
    assert_eq!(
        c.read(5, 0b0110, 3),
        Read::Miss {
            fetch: 0b0100,
            evicted: None
        }
    );
    assert_eq!(c.mshrs_in_use(3), 1);
    // Another line still finds no MSHR.
    assert_eq!(c.read(6, 1, 4), Read::Stall);
    // The line's fill brings all three sectors and frees the MSHR.
    c.resolve(5, 1, 40);
    assert_eq!(c.next_fill_after(4), Some(40));
    assert_eq!(c.read(5, 0b0111, 40), Read::Hit);
    assert_eq!(c.mshrs_in_use(40), 0);
}

#[test]
fn lru_eviction_and_sectors() {
    let mut c = Cache::new(small(2, false));
    for (i, l) in [0u64, 4, 8].iter().enumerate() {
        let r = c.read(*l, 1, i as u64 * 10);
        c.set_fill(*l, i as u64 * 10 + 1, 0);
        if i == 2 {
            assert_eq!(
                r,
                Read::Miss {
                    fetch: 1,
                    evicted: Some((0, 0))
                }
            );
        }
    }
    // Line 4 present with sector 0 only: sector 1 is a miss for that sector alone.
    assert_eq!(
        c.read(4, 0b11, 100),
        Read::Miss {
            fetch: 0b10,
            evicted: None
        }
    );
}

#[test]
fn write_back_allocates_dirty_and_reports_eviction() {
    let mut c = Cache::new(small(1, true));
    assert_eq!(
        c.write(0, 0b1, 0),
        Write::Absorbed {
            evicted: None,
            present: 0
        }
    );
    assert_eq!(
        c.write(4, 0b10, 1),
        Write::Absorbed {
            evicted: Some((0, 0b1)),
            present: 0
        }
    );
    assert_eq!(c.read(4, 0b10, 2), Read::Hit);
    // Rewriting a valid sector is a hit; a new sector of a present line is not.
    assert_eq!(
        c.write(4, 0b110, 2),
        Write::Absorbed {
            evicted: None,
            present: 0b10
        }
    );
    assert_eq!(c.flush(3), vec![(4, 0b110)]);
}

/// The indexed path (more than 32 ways) behaves like the scanned one: LRU order,
/// pending ways never evicted, flush keeps fills in flight.
#[test]
fn highly_associative_cache_is_lru() {
    let mut c = Cache::new(CacheConfig {
        sets: 1,
        ways: 64,
        ..small(1, true)
    });
    for l in 0..64u64 {
        assert_eq!(
            c.write(l, 1, l),
            Write::Absorbed {
                evicted: None,
                present: 0
            }
        );
    }
    // Touch line 0 so line 1 is the LRU.
    assert_eq!(c.read(0, 1, 100), Read::Hit);
    assert_eq!(
        c.write(99, 1, 101),
        Write::Absorbed {
            evicted: Some((1, 1)),
            present: 0
        }
    );
    assert!(matches!(
        c.read(500, 0b10, 102),
        Read::Miss {
            evicted: Some((2, 1)),
            ..
        }
    ));
    // The pending line survives a flush; the rest is gone.
    c.flush(103);
    assert!(matches!(c.read(500, 0b10, 104), Read::Merged { .. }));
    assert!(matches!(
        c.read(0, 1, 105),
        Read::Miss { evicted: None, .. }
    ));
}

/// The replacement lists and the fingerprint index always agree with the ways' state:
/// the victim is what a scan of the ways themselves picks (an empty way first, else the
/// least recently used, never one with a fetch in flight) and a lookup finds what a
/// scan of the tags finds, through random reads, writes, fills, resolutions and
/// flushes.
#[test]
fn index_tracks_the_ways() {
    fn scan(c: &Cache, base: usize) -> Option<usize> {
        let ways = c.cfg.ways as usize;
        let mut best: Option<(u64, usize)> = None;
        for (i, w) in c.ways[base..base + ways].iter().enumerate() {
            let key = ((w.tag != 0) as u64) << 63 | w.stamp;
            if w.pend == 0 && best.is_none_or(|b| key < b.0) {
                best = Some((key, base + i));
            }
        }
        best.map(|b| b.1)
    }
    for (ways, write_back) in [(8, true), (8, false), (6, true), (13, false)] {
        let mut c = Cache::new(CacheConfig {
            ways,
            mshrs: 12,
            ..small(ways, write_back)
        });
        let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
        let mut now = 0u64;
        for step in 0..20_000 {
            let x = rng.next_u64();
            now += x % 3;
            let line = (x >> 8) % (6 * ways as u64);
            let sectors = 1 + ((x >> 16) % 15) as u8;
            match (x >> 24) % 16 {
                0..=6 => {
                    c.read(line, sectors, now);
                }
                7..=10 => {
                    c.write(line, sectors, now);
                }
                11..=12 => c.set_fill(line, now + (x >> 32) % 200, 0),
                13 => c.set_fill(line, UNKNOWN, (x >> 40) as u32 % 4),
                14 => c.resolve(line, (x >> 40) as u32 % 4, now + (x >> 32) % 50),
                _ => {
                    if step % 64 == 0 {
                        c.flush(now);
                    }
                }
            }
            c.index.check(&c.ways);
            for set in 0..4 {
                let base = set * ways as usize;
                assert_eq!(c.victim(set), scan(&c, base), "set {set} after step {step}");
            }
            for l in 0..6 * ways as u64 {
                let want = c.ways.iter().position(|w| w.tag == l + 1);
                assert_eq!(c.find(l, l).1, want, "line {l} after step {step}");
            }
        }
    }
}

/// The doubling XOR fold equals the field-by-field fold it replaces.
#[test]
fn xor_fold_matches_field_by_field() {
    fn plain(line: u64, bits: u32) -> u64 {
        let (mut x, mut l) = (0, line);
        while l != 0 {
            x ^= l & ((1u64 << bits) - 1);
            l >>= bits;
        }
        x
    }
    let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2_000 {
        let line = rng.next_u64() >> (rng.next_u64() % 64);
        for bits in 1..=32 {
            assert_eq!(xor_fold(line, bits), plain(line, bits), "{line:#x} {bits}");
        }
    }
}

#[test]
fn write_through_sends_down() {
    let mut c = Cache::new(small(1, false));
    assert_eq!(c.write(0, 1, 0), Write::Through);
    assert_eq!(c.stats.misses, 1);
}
