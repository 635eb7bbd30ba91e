//! Tests of the DRAM channel: unloaded latencies, FR-FCFS, bus and activation limits, and
//! multi-burst requests against single bursts.

use super::*;

/// The QV100 configuration's HBM timing (Accel-Sim SM7_QV100, ../shared/reference/README.md).
fn qv100() -> DramChannelConfig {
    DramChannelConfig {
        timing: DramTiming {
            t_rcd: 12,
            t_rp: 12,
            t_ras: 28,
            t_rc: 40,
            t_cl: 12,
            t_wl: 2,
            t_ccd_s: 1,
            t_ccd_l: 2,
            t_rrd_s: 3,
            t_rrd_l: 3,
            t_faw: 0,
            t_wtr_s: 3,
            t_wtr_l: 3,
            t_rtp: 3,
            t_wr: 10,
            burst: 1,
        },
        banks: 16,
        bank_groups: 4,
        queue_depth: 64,
        refresh: None,
        dual_bus: true,
        return_queue: 0,
        return_gap: 1,
    }
}

fn read(id: u64, bank: u32, row: u32, arrival: u64) -> DramRequest {
    DramRequest {
        id,
        bank,
        row,
        is_write: false,
        bursts: 1,
        arrival,
    }
}

#[test]
fn unloaded_latencies_follow_the_timing() {
    let c = qv100();
    let t = c.timing;
    let mut ch = Channel::new(c);
    // Closed bank: ACT, tRCD, column, CL, burst.
    ch.push(read(0, 0, 7, 100));
    let a = ch.issue_next().unwrap();
    assert_eq!(a.done - 100, t.t_rcd + t.t_cl + t.burst);
    assert!(!a.row_hit);
    // Row hit, long after: column, CL, burst.
    ch.push(read(1, 0, 7, 1000));
    let b = ch.issue_next().unwrap();
    assert!(b.row_hit);
    assert_eq!(b.done - 1000, t.t_cl + t.burst);
    // Row conflict, long after: PRE, tRP, ACT, tRCD, column, CL, burst.
    ch.push(read(2, 0, 9, 5000));
    let d = ch.issue_next().unwrap();
    assert_eq!(d.done - 5000, t.t_rp + t.t_rcd + t.t_cl + t.burst);
    assert_eq!(
        (
            ch.stats.row_hits,
            ch.stats.row_empty,
            ch.stats.row_conflicts
        ),
        (1, 1, 1)
    );
}

#[test]
fn fr_fcfs_prefers_row_hits() {
    let mut ch = Channel::new(qv100());
    ch.push(read(0, 0, 1, 0));
    ch.issue_next().unwrap();
    // An older miss and a younger hit to the same bank, both waiting.
    ch.push(read(1, 0, 2, 10));
    ch.push(read(2, 0, 1, 11));
    ch.cursor = 20;
    assert_eq!(ch.issue_next().unwrap().id, 2);
    assert_eq!(ch.issue_next().unwrap().id, 1);
}

#[test]
fn streaming_hits_saturate_but_never_exceed_the_bus() {
    let c = qv100();
    let mut ch = Channel::new(c);
    let n = 10_000u64;
    let mut next = 0u64;
    let mut last = 0;
    let mut prev_done = 0;
    loop {
        // Keep the queue full with a row-buffer friendly stream over all banks.
        while next < n && ch.can_accept() {
            let bank = (next % 16) as u32;
            ch.push(read(next, bank, (next / 512) as u32, 0));
            next += 1;
        }
        let Some(done) = ch.issue_next() else { break };
        assert!(
            done.done >= prev_done + c.timing.burst,
            "bursts overlap on the bus"
        );
        prev_done = done.done;
        last = last.max(done.done);
    }
    let util = (n * c.timing.burst) as f64 / last as f64;
    assert!(util > 0.85 && util <= 1.0, "bus utilisation {util}");
    eprintln!("streaming bus utilisation {util:.3}");
}

#[test]
fn activates_respect_rrd_and_faw() {
    let mut c = qv100();
    c.timing.t_faw = 20;
    c.timing.t_rrd_s = 2;
    let mut ch = Channel::new(c);
    for i in 0..8u32 {
        ch.push(read(i as u64, i, 1, 0));
    }
    while ch.issue_next().is_some() {}
    let acts = ch.act_log.clone();
    assert_eq!(acts.len(), 8);
    for w in acts.windows(2) {
        assert!(w[1] >= w[0] + 2, "tRRD violated: {acts:?}");
    }
    for w in acts.windows(5) {
        assert!(w[4] >= w[0] + 20, "tFAW violated: {acts:?}");
    }
}

#[test]
fn write_to_read_turnaround() {
    let c = qv100();
    let mut ch = Channel::new(c);
    ch.push(DramRequest {
        id: 0,
        bank: 0,
        row: 1,
        is_write: true,
        bursts: 1,
        arrival: 0,
    });
    ch.push(read(1, 4, 1, 0));
    let w = ch.issue_next().unwrap();
    let r = ch.issue_next().unwrap();
    assert!(r.issued >= w.done + c.timing.t_wtr_s);
}

mod random_rows {
    use super::*;
    /// Random rows over 16 banks: activations are the bottleneck, so a request costs about
    /// max(tRRD, tRC / banks) = 3 command cycles on QV100 — never less, and not much more
    /// (no head-of-line blocking behind a busy bank).
    #[test]
    fn random_rows_are_activation_bound() {
        let c = super::qv100();
        let mut ch = Channel::new(c);
        let n = 3000u64;
        let mut x = 12345u64;
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ch.push(DramRequest {
                id: i,
                bank: ((x >> 33) % 16) as u32,
                row: ((x >> 40) % 4096) as u32,
                is_write: false,
                bursts: 1,
                arrival: i / 4,
            });
        }
        let mut last = 0;
        while let Some(d) = ch.issue_next() {
            last = last.max(d.done);
        }
        let per = last as f64 / n as f64;
        assert!(
            (3.0..3.6).contains(&per),
            "{per:.2} cycles per random request, {:?}",
            ch.stats
        );
    }
}

mod bursts {
    use super::*;

    /// A request of `n` bursts is scheduled exactly as `n` single-burst copies pushed back
    /// to back: same completions in the same order, same statistics — also when a small
    /// window admits an entry in parts, with reads and writes, hits and conflicts mixed.
    #[test]
    fn multi_burst_requests_match_single_bursts() {
        // (Also with refresh and one command bus, which must not break the equivalence.)
        for (depth, refresh) in [1usize, 3, 8, 64]
            .into_iter()
            .flat_map(|d| [(d, false), (d, true)])
        {
            let cfg = DramChannelConfig {
                queue_depth: depth,
                refresh: refresh.then_some(Refresh {
                    t_refi: 500,
                    t_rfc: 60,
                }),
                dual_bus: !refresh,
                ..super::qv100()
            };
            let (mut one, mut many) = (Channel::new(cfg), Channel::new(cfg));
            let mut rng = crate::testing::XorShift(0x5eed_0000 + depth as u64);
            let (mut t, mut got_one, mut got_many) = (0u64, Vec::new(), Vec::new());
            for i in 0..4000u64 {
                t += rng.next_u64() % 3;
                let r = DramRequest {
                    id: i % 7,
                    bank: (rng.next_u64() % 16) as u32,
                    row: (rng.next_u64() % 3) as u32,
                    is_write: rng.next_u64().is_multiple_of(5),
                    bursts: 1 + (rng.next_u64() % 4) as u16,
                    arrival: t,
                };
                many.push(r);
                for _ in 0..r.bursts {
                    one.push(DramRequest { bursts: 1, ..r });
                }
                // Drain decisions due by now, as the memory system does.
                for (ch, got) in [(&mut one, &mut got_one), (&mut many, &mut got_many)] {
                    while ch.next_decision().is_some_and(|d| d <= t) {
                        got.push(ch.issue_next().unwrap());
                    }
                }
                assert_eq!(one.queued(), many.queued());
            }
            for (ch, got) in [(&mut one, &mut got_one), (&mut many, &mut got_many)] {
                while let Some(c) = ch.issue_next() {
                    got.push(c);
                }
            }
            assert_eq!(got_one.len(), got_many.len());
            assert_eq!(got_one, got_many, "depth {depth}");
            assert_eq!(one.stats, many.stats);
        }
    }
}

/// tWTR_L applies to a read in the bank group of the last write, tWTR_S to one in another
/// group: with rows already open, the read's column command waits exactly that long after
/// the write's data.
#[test]
fn write_to_read_turnaround_depends_on_the_bank_group() {
    let mut c = qv100();
    c.timing.t_wtr_s = 2;
    c.timing.t_wtr_l = 9;
    let groups = c.bank_groups;
    let per = c.banks / groups;
    let gap = |other_group: bool| {
        let mut ch = Channel::new(c);
        let rd_bank = if other_group { per } else { 1 };
        // Open both rows first (reads), so the measured read is a row hit.
        ch.push(read(0, 0, 1, 0));
        ch.push(read(1, rd_bank, 1, 0));
        ch.issue_next().unwrap();
        ch.issue_next().unwrap();
        ch.push(DramRequest {
            id: 2,
            bank: 0,
            row: 1,
            is_write: true,
            bursts: 1,
            arrival: 200,
        });
        let w = ch.issue_next().unwrap();
        ch.push(read(3, rd_bank, 1, 200));
        let r = ch.issue_next().unwrap();
        r.issued - w.done
    };
    assert_eq!(gap(false), 9, "same bank group: tWTR_L");
    assert_eq!(gap(true), 2, "other bank group: tWTR_S");
}

/// Channel `c` of `n` refreshes `c * tREFI / n` after channel 0: an access arriving at the
/// start of its own window waits out tRFC, the same access one window-length earlier or
/// at another channel's window does not.
#[test]
fn staggered_channels_refresh_in_turn() {
    let r = Refresh {
        t_refi: 4000,
        t_rfc: 200,
    };
    let c = DramChannelConfig {
        refresh: Some(r),
        ..qv100()
    };
    let t = c.timing;
    let unloaded = t.t_rcd + t.t_cl + t.burst;
    let n = 4;
    for ch_i in 0..n {
        for probe in 0..n {
            let mut ch = Channel::new(c);
            ch.stagger_refresh(ch_i, n);
            // The second window of channel `probe`'s phase (the first refresh of any channel
            // comes at tREFI or later).
            let at = 2 * r.t_refi + r.t_refi * probe as u64 / n as u64;
            ch.push(read(0, 0, 7, at));
            let a = ch.issue_next().unwrap();
            if probe == ch_i {
                assert_eq!(
                    a.done,
                    at + r.t_rfc + unloaded,
                    "channel {ch_i}: blocked by its window"
                );
            } else {
                assert_eq!(
                    a.done,
                    at + unloaded,
                    "channel {ch_i} at channel {probe}'s window"
                );
            }
        }
    }
}

/// Bus time booked ahead (page migration) takes the bus from its start on, not before:
/// a read served earlier keeps its unloaded latency, one arriving inside the booking
/// waits for its end.
#[test]
fn bus_booked_ahead_blocks_only_its_own_interval() {
    let c = qv100();
    let t = c.timing;
    let mut ch = Channel::new(c);
    ch.occupy(1000, 50);
    ch.push(read(0, 0, 7, 100));
    let a = ch.issue_next().unwrap();
    assert_eq!(a.done - 100, t.t_rcd + t.t_cl + t.burst);
    // A row hit at 1010: its column command waits until its data slot follows the
    // booking (1000 + 50), then CL and the burst.
    ch.push(read(1, 0, 7, 1010));
    let b = ch.issue_next().unwrap();
    assert!(b.row_hit);
    assert_eq!(b.done, 1050 + t.burst);
    // Bookings that overlap queue one after another.
    ch.occupy(2000, 30);
    ch.occupy(2010, 30);
    ch.push(read(2, 0, 7, 2020));
    assert_eq!(ch.issue_next().unwrap().done, 2060 + t.burst);
}
