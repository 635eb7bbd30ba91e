//! Tests of the operand collector against the rules of its module doc: issue-to-unit
//! times, bank turns, dispatch priority, write-back bookings, and memory instructions
//! waiting for the load/store unit.

use super::*;

/// An op reading `srcs` and writing `dst`; its result is ready when the unit accepts
/// the instruction (latency [`STAGES`]).
fn op_to(srcs: &[u16], dst: Option<u16>) -> Op {
    Op::alu(srcs, dst, STAGES, 2)
}

/// One scheduler of a QV100 sub-core (2 collector units, 4 banks, 2 steps a cycle)
/// with one pool; a unit that accepts every `ii` cycles. Issues `(warp, cycle, srcs)`
/// in order, each when its instruction register is free, and returns per instruction
/// (issue cycle, accept cycle).
fn run(ii: u64, insts: &[(u16, u64, &[u16])]) -> Vec<(u64, u64)> {
    let with: Vec<(u16, u64, &[u16], Option<u16>)> =
        insts.iter().map(|&(w, t, s)| (w, t, s, None)).collect();
    run_writing(ii, &with)
}

/// The collector of a QV100 SM (8 collector units, 16 banks, 2 steps a cycle, write-back
/// conflicts) in four groups, with one pool in group 0.
fn qv100_collector() -> Collector {
    let cfg = crate::arch::OperandCollector {
        units: 8,
        register_banks: 16,
        port_throughput: 2,
        write_back_conflicts: true,
        memory: false,
    };
    Collector::new(&cfg, STAGES, 4, vec![0], vec![0], Vec::new())
}

/// As [`run`], each instruction also writing its optional destination.
fn run_writing(ii: u64, insts: &[(u16, u64, &[u16], Option<u16>)]) -> Vec<(u64, u64)> {
    let mut c = qv100_collector();
    let mut unit_free = 0u64;
    let mut idoc_free = 0u64;
    // Per instruction (its warp is its index): issue cycle, accept cycle.
    let mut got = vec![(INF, INF); insts.len()];
    let mut t = 0;
    let mut next = 0;
    while got.iter().any(|g| g.1 == INF) {
        // Decide the collector through the end of cycle t, then issue.
        loop {
            let st = c.next_step();
            if st >= (t + 1) * 2 {
                break;
            }
            let mut out = Vec::new();
            let mut freed = Vec::new();
            let mut acc = |_p: u8, e: u64, _init: u32, _tag: u16| {
                let at = e.max(unit_free);
                unit_free = at + ii;
                (at, at)
            };
            c.run_step(st, &mut acc, &mut out, &mut freed);
            for d in out {
                got[d.warp as usize].1 = d.ready;
            }
            for (_, cy) in freed {
                idoc_free = cy;
            }
        }
        if let Some(&(w, at, srcs, dst)) = insts.get(next) {
            assert_eq!(w as usize, next);
            if t >= at && t >= idoc_free {
                c.issue(w, 0, 0, &op_to(srcs, dst), t, NONE);
                got[next].0 = t;
                idoc_free = INF;
                next += 1;
            }
        }
        t += 1;
        assert!(t < 1000);
    }
    got
}

#[test]
fn uncontended_issue_reaches_the_unit_three_cycles_later() {
    assert_eq!(run(1, &[(0, 10, &[4, 5, 6])]), vec![(10, 13)]);
}

#[test]
fn an_instruction_without_sources_is_dispatched_the_step_after_it_takes_a_unit() {
    // Issued at 10, it takes collector unit 0 in the first step of 11 and, having
    // nothing to read, is found ready by the dispatch of the second step (GPGPU-Sim's
    // branch through the collector): the unit accepts it at 12, one cycle before an
    // instruction with sources would reach it.
    assert_eq!(run(1, &[(0, 10, &[])]), vec![(10, 12)]);
    assert_eq!(run(1, &[(0, 10, &[4])]), vec![(10, 13)]);
}

#[test]
fn sources_in_one_bank_take_turns() {
    // Registers 3, 7 and 11 are all in bank (r + 1) mod 4 = 0 for warp 0: three reads
    // of one bank end one cycle later than distinct banks would.
    assert_eq!(run(1, &[(0, 10, &[3, 7, 11])]), vec![(10, 14)]);
    // A repeated register is read once.
    assert_eq!(run(1, &[(0, 10, &[3, 3, 4])]), vec![(10, 13)]);
}

#[test]
fn the_lower_collector_unit_wins_dispatch() {
    // A unit accepting every 4 cycles and a steady supply: the instruction that got
    // the second collector unit waits while the first keeps being refilled.
    let insts: Vec<(u16, u64, &[u16])> = (0..6).map(|w| (w, 0, &[4u16][..])).collect();
    let got = run(4, &insts);
    let accept: Vec<u64> = got.iter().map(|g| g.1).collect();
    // Instructions 0-2 pass through collector unit 0 as it frees; instruction 3 gets
    // unit 1 while 2 waits in unit 0, and then waits behind every later instruction,
    // which unit 0 keeps taking first: it is accepted last.
    assert_eq!(accept, vec![3, 7, 11, 23, 15, 19]);
    // The unit never idles while something waits: accepts are 4 cycles apart.
    let mut sorted = accept.clone();
    sorted.sort();
    assert!(sorted.windows(2).all(|w| w[1] - w[0] == 4), "{sorted:?}");
}

#[test]
fn the_write_back_rings_hold_exactly_the_booked_steps_of_their_window() {
    // Against a plain set of (bank, step) bookings: as the step advances by gaps short
    // and long (past a whole ring, and to the same ring position one ring later), a
    // step tests held exactly when it was booked and lies in the window.
    let mut c = qv100_collector();
    let banks = 16;
    let mut booked = std::collections::HashSet::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut st = 0u64;
    for round in 0..4000 {
        let gap = match rnd(10) {
            0 => WR_RING as u64,
            1 => 64 + rnd(400),
            _ => 1 + rnd(5),
        };
        st += if round == 0 { 0 } else { gap };
        for _ in 0..rnd(4) {
            let (b, at) = (rnd(banks) as usize, st + rnd(WR_RING as u64));
            if !c.wr_held(b, at) {
                c.wr_book(b, at);
                booked.insert((b, at));
            }
        }
        // Every booking not yet past is still held; other steps are not.
        booked.retain(|&(_, at)| at >= st);
        for &(b, at) in &booked {
            assert!(
                c.wr_held(b, at),
                "bank {b} step {at} at {st}: booked, not held"
            );
        }
        for _ in 0..8 {
            let (b, at) = (rnd(banks) as usize, st + rnd(WR_RING as u64 + 64));
            let want = at < st + WR_RING as u64 && booked.contains(&(b, at));
            assert_eq!(c.wr_held(b, at), want, "bank {b} step {at} at {st}");
        }
    }
}

#[test]
fn a_write_back_takes_its_bank_from_the_reads() {
    // Instruction 0 (warp 0) is accepted at cycle 13; its unit latency is 0 here (the
    // op's latency is all pipeline), so it is written back at 13 + 2 = 15: the write
    // holds step 30 of its destination's bank. Instruction 1 (warp 1, issued at 13)
    // reads four registers of bank (r + 2) mod 4 = 0 in steps 29-32.
    let second = [2u16, 6, 10, 14];
    // Destination 8 is in warp 0's bank (8 + 1) mod 4 = 1: no conflict, dispatch in
    // cycle 16.
    let free = run_writing(1, &[(0, 10, &[4], Some(8)), (1, 13, &second, None)]);
    assert_eq!(free, vec![(10, 13), (13, 17)]);
    // Destination 7 is in bank 0: the write takes step 30, the reads 29, 31, 32, 33,
    // and the instruction dispatches a cycle later.
    let held = run_writing(1, &[(0, 10, &[4], Some(7)), (1, 13, &second, None)]);
    assert_eq!(held, vec![(10, 13), (13, 18)]);
}

/// Scheduler 0 of a QV100 SM with memory instructions in the collector
/// (`sm.operand_collector.memory`): pool 0 its fp32 pipe, pool 1 its memory
/// instruction register. Issues `mems` memory instructions (warps 0..mems, one a cycle
/// from cycle 10 as the instruction register frees) and then one FFMA (the next warp)
/// to a load/store unit busy `busy` cycles per instruction; returns the cycle the unit
/// took each memory instruction and the cycle the fp32 pipe took the FFMA.
fn lsu_run(mems: u16, busy: u64) -> (Vec<u64>, u64) {
    let cfg = crate::arch::OperandCollector {
        units: 8,
        register_banks: 16,
        port_throughput: 2,
        write_back_conflicts: false,
        memory: true,
    };
    let mut c = Collector::new(&cfg, STAGES, 4, vec![0, 0], vec![0, 2], vec![1]);
    let (mut taken, mut alu) = (vec![INF; mems as usize], INF);
    let mut idoc_free = [0u64; 2];
    let mut next = 0u16;
    let mut t = 10;
    while alu == INF || taken.contains(&INF) {
        loop {
            let st = c.next_step();
            if st >= (t + 1) * 2 {
                break;
            }
            let (mut out, mut freed) = (Vec::new(), Vec::new());
            let mut acc = |_p: u8, e: u64, _init: u32, tag: u16| {
                if tag == NONE {
                    alu = e;
                    (e, e)
                } else {
                    taken[tag as usize] = e;
                    (e, e + busy)
                }
            };
            c.run_step(st, &mut acc, &mut out, &mut freed);
            for (p, cy) in freed {
                idoc_free[p as usize] = cy;
            }
        }
        if next < mems && t >= idoc_free[1] {
            c.issue(next, 0, 1, &op_to(&[4, 5], None), t, next);
            idoc_free[1] = INF;
            next += 1;
        } else if next == mems && t >= idoc_free[0] {
            c.issue(next, 0, 0, &op_to(&[6, 7], Some(8)), t, NONE);
            idoc_free[0] = INF;
            next += 1;
        }
        t += 1;
        assert!(t < 1000);
    }
    (taken, alu)
}

#[test]
fn memory_instructions_waiting_for_the_load_store_unit_hold_collector_units() {
    // Uncontended, a memory instruction reaches the unit three cycles after issue, as
    // arithmetic does (the FFMA, issued at 11, its pipe at 14).
    assert_eq!(lsu_run(1, 1), (vec![13], 14));
    // A unit busy 50 cycles an instruction takes them at 13, 63, 113, ...: the
    // second waits in the scheduler's memory dispatch register, the third and fourth
    // in the scheduler's two collector units, so the FFMA (issued once the fourth left
    // the instruction register) finds no unit until the unit takes the second at 63 and
    // the third moves up; it takes the freed unit in that step, reads its two operands
    // in the next two steps and is dispatched to the pipe at 65.
    let (taken, alu) = lsu_run(4, 50);
    assert_eq!(taken, vec![13, 63, 113, 163]);
    assert_eq!(alu, 65);
    // With one memory instruction fewer a collector unit stays free: the FFMA goes
    // through at once.
    let (taken, alu) = lsu_run(3, 50);
    assert_eq!(taken, vec![13, 63, 113]);
    assert!(alu < 30, "the FFMA waited for the load/store unit: {alu}");
}
