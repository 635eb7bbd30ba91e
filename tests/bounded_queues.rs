//! Bounded queues with back-pressure (issue 45): a full L1 MSHR file holds the load/store
//! unit until a fill frees an MSHR, the L1 miss queue bounds write-through stores, and a
//! crossbar buffer of N entries never holds N + 1. Every expectation is derived from the
//! model's parameters, not from a run's output.

mod common;

use std::collections::BTreeSet;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::memsys::{LoadRef, MemSys};
use gpumodel::engine::Counters;
use gpumodel::mem::noc::{Crossbar, NocConfig};

/// The queues alone: accesses leave the L1 as they enter it (qv100 looks them up
/// `l1d.miss_latency` later; `a_miss_leaves_the_l1_its_lookup_latency_after_it_entered`).
const NO_LOOKUP: &str = "l1d.miss_latency=0";

fn warp(w: u16) -> LoadRef {
    LoadRef {
        sm: 0,
        warp: w,
        slot: 0,
        gen: 0,
    }
}

/// Runs the memory system's channel and load/store-unit events in time order until `want`
/// has its data time; returns it and the times of the release events.
fn run_until(
    m: &mut MemSys,
    ctrs: &mut [Counters],
    want: LoadRef,
) -> (u64, Vec<u64>, Vec<(LoadRef, u64)>) {
    let mut events: BTreeSet<(u64, bool, u32)> = BTreeSet::new();
    let mut releases = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..100_000 {
        seen.append(&mut m.resolved);
        if let Some(&(_, t)) = seen.iter().find(|(w, _)| *w == want) {
            return (t, releases, seen);
        }
        events.extend(m.chan_events.drain(..).map(|(t, c)| (t, false, c)));
        events.extend(m.lsu_events.drain(..).map(|(t, s)| (t, true, s)));
        let (t, lsu, i) = events.pop_first().expect("an event is pending");
        if lsu {
            releases.push(t);
            m.release_held(i as usize, t, ctrs);
        } else {
            m.run_channel(i as usize, t, ctrs);
        }
    }
    panic!("no result");
}

#[test]
fn a_full_mshr_file_holds_the_unit_exactly_until_the_fill() {
    for mshrs in [1u32, 3] {
        let spec = common::engine_kit::tiny_with(
            4,
            4,
            &[&format!("l1d.mshrs={mshrs}"), "l1d.on_mshr_full=\"stall\""],
        );
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctrs = vec![Counters::default()];
        // `mshrs` misses to distinct lines take every MSHR; the next miss is held.
        let mut first = Vec::new();
        for i in 0..mshrs {
            let w = warp(i as u16);
            let r = m.load(0, 0, 1000 * i as u64, 1, i as u64, false, w, &mut ctrs);
            first.push((w, r));
        }
        let held = warp(100);
        let got = m.load(0, 0, 999_999, 1, mshrs as u64, false, held, &mut ctrs);
        assert_eq!(got, None, "the miss beyond {mshrs} MSHRs is held");
        let (t_held, releases, seen) = run_until(&mut m, &mut ctrs, held);
        // The earliest fill of the first misses frees the first MSHR.
        let fill = first
            .iter()
            .map(|(w, r)| r.unwrap_or_else(|| seen.iter().find(|(x, _)| x == w).unwrap().1))
            .min()
            .unwrap();
        assert_eq!(
            releases.first().copied(),
            Some(fill),
            "the held load issues at the fill time ({mshrs} MSHRs)"
        );
        assert!(
            t_held > fill,
            "its data comes after it issued: {t_held} vs {fill}"
        );
    }
}

#[test]
fn stores_beyond_the_miss_queue_wait_for_an_entry() {
    for q in [2u32, 16] {
        // (Translation off: a cold TLB would delay each store's issue by its walk. The
        // queue alone: stores leave the L1 as they enter it, `l1d.miss_latency` 0.)
        let spec = common::engine_kit::tiny_with(
            4,
            4,
            &[
                &format!("l1d.miss_queue={q}"),
                "translation.enabled=false",
                NO_LOOKUP,
            ],
        );
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctr = Counters::default();
        let n = 3 * q as u64;
        // 3q write-through stores at cycle 0: the queue takes q, and sends one a cycle to the
        // (idle) crossbar from cycle 1, so store k >= q gets the entry store k - q left at
        // cycle k - q + 1.
        for k in 0..n {
            m.store(0, 0, 64 + 7 * k, 1, 0, 0, &mut ctr);
            let want = if k < q as u64 { 0 } else { k - q as u64 + 1 };
            assert_eq!(m.lsu_free(0), want, "store {k} with a queue of {q}");
        }
        assert_eq!(m.miss_queue_waits().0, n - q as u64);
        // The SM's next access waits behind them.
        let r = m.load(0, 0, 5_000_000, 1, 0, false, warp(1), &mut [ctr.clone()]);
        if let Some(r) = r {
            assert!(r > m.lsu_free(0) - 1);
        }
        assert!(m.lsu_free(0) >= 2 * q as u64);
    }
}

#[test]
fn sector_entries_bound_sectors_in_flight_and_leave_one_a_cycle() {
    // GPGPU-Sim's sectored L1 (`l1d.request_unit = "sector"`): a miss of k sectors takes
    // k MSHR entries and k miss-queue entries, and the queue sends one a cycle.
    let full = 0b1111u8;
    for (unit, per) in [("line", 1u64), ("sector", 4)] {
        let spec = common::engine_kit::tiny_with(
            4,
            4,
            &[
                "l1d.mshrs=8",
                "l1d.miss_queue=8",
                &format!("l1d.request_unit=\"{unit}\""),
                NO_LOOKUP,
            ],
        );
        assert_eq!(spec.l1d.line.0 / spec.l1d.sector.0, 4);
        // MSHRs: 8 / per whole-line misses fit, the next is held.
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctrs = vec![Counters::default()];
        let fit = 8 / per;
        for i in 0..fit {
            m.load(0, 0, 1000 * i, full, 0, false, warp(i as u16), &mut ctrs);
        }
        let got = m.load(0, 0, 999_999, 1, 0, false, warp(99), &mut ctrs);
        assert_eq!(
            got, None,
            "{unit}: a miss beyond {fit} whole-line misses is held"
        );
        // Miss queue: stores of a whole line each take `per` entries; the queue sends one
        // entry a cycle from cycle 1, a store entering the crossbar with its last, so
        // store k >= 8 / per gets the entries store k - 8 / per left at per * (k - 8 / per + 1).
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctr = Counters::default();
        let q = 8 / per;
        for k in 0..3 * q {
            m.store(0, 0, 64 + 7 * k, full, 0, 0, &mut ctr);
            let want = if k < q { 0 } else { per * (k - q + 1) };
            assert_eq!(m.lsu_free(0), want, "{unit}: store {k}");
        }
    }
}

#[test]
fn a_full_miss_queue_blocks_its_banks_and_a_full_bank_queue_the_unit() {
    // Bank queues two deep (`l1d.bank_queue`), a miss queue of four sector entries:
    // whole-line stores take every bank and four entries each. Derived from the model:
    // X0 takes its entries at 0 (they leave at 4, one a cycle); X1 reaches the banks' heads
    // at 1 and waits there for X0's entries until 4, without holding the unit; X2 enters
    // once X0 has left the two-deep queues (0 + 2: the unit waits until 2), reaches the heads
    // after X1 (5) and waits for X1's entries (8); X3 enters after X1 left (4 + 2), reaches
    // the heads at 9 and waits for X2's entries (12).
    let spec = common::engine_kit::tiny_with(
        4,
        4,
        &[
            "l1d.miss_queue=4",
            "l1d.request_unit=\"sector\"",
            "l1d.bank_queue=2",
            "l1d.banks=4",
            NO_LOOKUP,
        ],
    );
    let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
    let mut ctr = Counters::default();
    let mut free = Vec::new();
    for k in 0..4u64 {
        m.store(0, 0, 64 + 7 * k, 0b1111, 0, 0, &mut ctr);
        free.push(m.lsu_free(0));
    }
    assert_eq!(
        free,
        vec![0, 0, 2, 6],
        "when the unit takes its next access"
    );
    assert_eq!(
        m.miss_queue_waits(),
        (3, 3 * 3),
        "X1, X2, X3 wait 3 cycles at the heads"
    );
    assert_eq!(
        m.bank_waits(),
        (2, 2 + 4),
        "X2 and X3 find their banks full"
    );
    // Without bank queues a full miss queue holds the whole unit instead.
    let spec = common::engine_kit::tiny_with(
        4,
        4,
        &[
            "l1d.miss_queue=4",
            "l1d.request_unit=\"sector\"",
            "l1d.bank_queue=0",
            NO_LOOKUP,
        ],
    );
    let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
    m.store(0, 0, 64, 0b1111, 0, 0, &mut ctr);
    m.store(0, 0, 71, 0b1111, 0, 0, &mut ctr);
    assert_eq!(m.lsu_free(0), 4);
    assert_eq!(m.bank_waits(), (0, 0));
}

/// Maximum number of the half-open intervals that overlap.
fn max_overlap(iv: &[(u64, u64)]) -> usize {
    let mut ev: Vec<(u64, i32)> = Vec::new();
    for &(a, b) in iv {
        if b > a {
            ev.push((a, 1));
            ev.push((b, -1));
        }
    }
    // (A slot freed at t is free for an entry at t: leaves first.)
    ev.sort();
    let (mut cur, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        cur += d;
        max = max.max(cur);
    }
    max as usize
}

#[test]
fn a_noc_buffer_of_n_entries_never_holds_n_plus_one() {
    for fifo in [true, false] {
        for n in [1u32, 4, 16] {
            let mut x = Crossbar::new(
                NocConfig {
                    latency: 3,
                    port_bytes_per_cycle: 32,
                    flit_bytes: 32,
                    fifo,
                    buffer: n,
                },
                3,
                2,
            );
            let (mut inputs, mut outputs) = (vec![Vec::new(); 3], vec![Vec::new(); 2]);
            let mut waited = 0;
            // Three inputs flood output 0, whose receiver takes one packet every 10 cycles
            // (a backed-up slice), and input 2 also sends to the idle output 1.
            let mut taken = 0u64;
            for round in 0..200u64 {
                for (src, input) in inputs.iter_mut().enumerate() {
                    let dst = if src == 2 && round % 2 == 1 { 1 } else { 0 };
                    let now = round;
                    let h = x.hop(src, dst, 40, now);
                    waited += (h.enter > now) as u32;
                    let gone = if dst == 0 {
                        taken = taken.max(h.arrive) + 10;
                        x.taken(dst, taken);
                        taken
                    } else {
                        h.arrive
                    };
                    input.push((h.enter, h.leave));
                    outputs[dst].push((h.arrive, gone));
                }
            }
            assert!(waited > 0, "the buffers filled (fifo {fifo}, n {n})");
            for (i, iv) in inputs.iter().enumerate() {
                assert!(
                    max_overlap(iv) <= n as usize,
                    "input {i} held more than {n}"
                );
            }
            for (o, iv) in outputs.iter().enumerate() {
                assert!(
                    max_overlap(iv) <= n as usize,
                    "output {o} held more than {n}"
                );
            }
        }
    }
}

#[test]
fn a_store_is_acknowledged_once_its_slice_has_taken_it() {
    // (qv100's clocks: the L2 runs at the core clock, and its port takes one 32 B sector a
    // cycle.)
    let on = common::engine_kit::tiny_with(4, 4, &["sm.exit_waits_for_stores=true"]);
    let off = common::engine_kit::tiny_with(4, 4, &["sm.exit_waits_for_stores=false"]);
    let unloaded = |m: &MemSys, t: u64| t + m.lat.l1_miss + 2 * m.lat.noc + m.lat.l2;
    // Idle: the acknowledgement is the unloaded round trip, give or take the two packets'
    // serialisation on the crossbars.
    for spec in [&on, &off] {
        let mut m = MemSys::new(spec, spec.l1d.assoc, 1);
        let mut ctr = Counters::default();
        let ack = m.store(0, 0, 1_000, 1, 0, 500, &mut ctr);
        assert!(
            ack >= unloaded(&m, 500) && ack <= unloaded(&m, 500) + 4,
            "{ack}"
        );
    }
    // n one-sector stores to one line (so one slice) from three SMs at cycle 0: the slice
    // takes one a cycle, so the last is acknowledged no earlier than cycle n — and a store
    // of a fourth SM behind them, no earlier either. Without acknowledgements waited for,
    // every store reports the unloaded round trip.
    let n = 600u64;
    for (spec, waits) in [(&on, true), (&off, false)] {
        let mut m = MemSys::new(spec, spec.l1d.assoc, 1);
        let mut ctr = Counters::default();
        let mut last = 0;
        for k in 0..n {
            let sm = 1 + (k % 3) as usize;
            last = last.max(m.store(sm, 0, 77, 1, 0, 0, &mut ctr));
        }
        let behind = m.store(0, 0, 77, 1, 0, 0, &mut ctr);
        if waits {
            assert!(last >= n, "the last of {n} acknowledged at {last}");
            assert!(
                behind >= n,
                "the store behind them acknowledged at {behind}"
            );
        } else {
            assert_eq!(
                behind,
                unloaded(&m, m.lsu_free(0)),
                "no acknowledgement waited for"
            );
            assert!(last < n, "{last}");
        }
    }
}

#[test]
fn reads_held_at_a_slice_take_its_port_when_served() {
    // One line read whole (four 32 B sectors) by twelve warps of four SMs at cycle 0, around
    // the L1. With `l2.mshr_merge=1` the slice takes the miss and one merged read; the other
    // ten wait at its input for the fill. Served then, each holds the slice's 32 B port for
    // its four sectors, so their data leaves four cycles apart (the crossbar is made wide
    // enough to carry a whole reply a cycle, so it does not space them itself); without
    // `l2.held_reads_take_port` they are served all at once.
    let n = 12u16;
    let reader = |i: u16| LoadRef {
        sm: i % 4,
        warp: i,
        slot: 0,
        gen: 0,
    };
    let held: Vec<LoadRef> = (2..n).map(reader).collect();
    for take in [true, false] {
        let flag = format!("l2.held_reads_take_port={take}");
        let spec = common::engine_kit::tiny_with(
            4,
            4,
            &[
                "l2.mshr_merge=1",
                "noc.flit=\"160 B\"",
                "noc.port_width=\"160 B\"",
                &flag,
            ],
        );
        assert_eq!(spec.l2.port.map(|p| p.0), Some(32));
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctrs = vec![Counters::default()];
        for i in 0..n {
            let w = reader(i);
            let got = m.load(w.sm as usize, 0, 4096, 0b1111, 0, true, w, &mut ctrs);
            assert_eq!(got, None, "read {i} waits on DRAM");
        }
        let mut seen: Vec<(LoadRef, u64)> = Vec::new();
        for w in &held {
            if !seen.iter().any(|(x, _)| x == w) {
                let (_, _, more) = run_until(&mut m, &mut ctrs, *w);
                seen.extend(more);
            }
        }
        let mut times: Vec<u64> = held
            .iter()
            .map(|w| seen.iter().find(|(x, _)| x == w).unwrap().1)
            .collect();
        times.sort_unstable();
        let gaps: Vec<u64> = times.windows(2).map(|p| p[1] - p[0]).collect();
        if take {
            // (The first held read's reply can wait behind the two replies of the fill,
            // which leave at the same time, so its gap to the second may be shorter.)
            assert!(gaps[1..].iter().all(|&g| g >= 4), "{gaps:?}");
        } else {
            let spread = times[times.len() - 1] - times[0];
            assert!(spread < 4 * gaps.len() as u64, "{times:?}");
        }
    }
}

#[test]
fn a_miss_leaves_the_l1_its_lookup_latency_after_it_entered() {
    // GPGPU-Sim looks an access up when it leaves its bank's latency queue, so a miss goes
    // out `l1d.miss_latency` after it entered the L1 (qv100: 20, its hit latency). Derived
    // from the model: on an idle memory system (refresh off, so nothing is fixed in absolute
    // time) the same misses at the same cycles come back exactly that much later than with
    // the key at 0; a hit is not delayed; and a miss held for an MSHR leaves when the MSHR
    // frees, not the lookup latency after that (it was looked up long before).
    let model = |lookup: u64| {
        common::engine_kit::tiny_with(
            4,
            4,
            &[
                "l1d.mshrs=1",
                "l1d.request_unit=\"line\"",
                "dram.refresh=false",
                &format!("l1d.miss_latency={lookup}"),
            ],
        )
    };
    let lookup = GpuSpec::builtin("qv100").unwrap().l1d.miss_latency.0;
    assert_eq!(lookup, 20, "qv100's -gpgpu_l1_latency");
    let run = |lookup: u64| {
        let spec = model(lookup);
        let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
        let mut ctrs = vec![Counters::default()];
        let (a, b) = (warp(1), warp(2));
        // A takes the one MSHR; B, a cycle later to another line, is held until A's fill.
        assert_eq!(m.load(0, 0, 4_000, 0b1111, 0, false, a, &mut ctrs), None);
        assert_eq!(m.load(0, 0, 9_000, 0b1111, 1, false, b, &mut ctrs), None);
        let (tb, releases, seen) = run_until(&mut m, &mut ctrs, b);
        let ta = seen.iter().find(|(w, _)| *w == a).unwrap().1;
        // A hit on A's line, well after its fill.
        let hit = m.load(0, 0, 4_000, 0b1111, 5_000, false, warp(3), &mut ctrs);
        (ta, tb, releases[0], hit, m.lat.l1_hit)
    };
    let (a0, b0, r0, hit0, l1_hit) = run(0);
    let (a1, b1, r1, hit1, _) = run(lookup);
    // (Shifted in core cycles, a DRAM access may land up to one DRAM cycle either way.)
    let spec = model(0);
    let dram_cycle = spec.clocks.core.hz().div_ceil(spec.dram.clock.hz());
    let da = a1 - a0;
    assert!(
        da.abs_diff(lookup) <= dram_cycle,
        "A's data {da} cycles later, expected {lookup} ± {dram_cycle}"
    );
    assert_eq!(
        r1 - r0,
        da,
        "B is released by A's fill, that much later too"
    );
    assert!(
        (b1 - b0).abs_diff(da) <= dram_cycle,
        "B leaves at its release, not {lookup} cycles after it: {} cycles later",
        b1 - b0
    );
    assert_eq!(hit0, Some(5_000 + l1_hit));
    assert_eq!(hit1, hit0, "a hit is not delayed");
}
