//! The DRAM channel's refresh, command buses and return queue, each checked against its
//! definition from the model's parameters (not against a run's output): refresh blocks
//! every bank for tRFC every tREFI and costs about tRFC/tREFI of the bandwidth; without
//! `dual_bus` no two commands share a cycle (with it, no two of one kind); a return queue of
//! N entries never holds N+1 reads.

use gpumodel::arch::GpuSpec;
use gpumodel::mem::dram::{
    Channel, Command, Completion, DramChannelConfig, DramRequest, DramTiming, Refresh,
};

/// The channel configuration of model `name` as its parameters give it.
fn config(name: &str) -> DramChannelConfig {
    let spec = GpuSpec::builtin(name).expect("model");
    let d = &spec.dram;
    let t = &d.timing;
    DramChannelConfig {
        timing: DramTiming {
            t_rcd: t.t_rcd.0,
            t_rp: t.t_rp.0,
            t_ras: t.t_ras.0,
            t_rc: t.t_rc.0,
            t_cl: t.t_cl.0,
            t_wl: t.t_wl.0,
            t_ccd_s: t.t_ccd_s.0,
            t_ccd_l: t.t_ccd_l.0,
            t_rrd_s: t.t_rrd_s.0,
            t_rrd_l: t.t_rrd_l.0,
            t_faw: t.t_faw.0,
            t_wtr_s: t.t_wtr_s.0,
            t_wtr_l: t.t_wtr_l.0,
            t_rtp: t.t_rtp.0,
            t_wr: t.t_wr.0,
            burst: d.burst_cycles(),
        },
        banks: d.banks,
        bank_groups: d.bank_groups,
        queue_depth: d.queue as usize,
        refresh: d.refresh.then_some(Refresh {
            t_refi: t.t_refi.0,
            t_rfc: t.t_rfc.0,
        }),
        dual_bus: d.dual_bus,
        return_queue: d.return_queue as usize,
        return_gap: 1,
    }
}

/// Runs `n` requests through `ch`, keeping its queue full; `req(i)` makes the i-th. Returns
/// the completions in issue order.
fn drive(ch: &mut Channel, n: u64, req: impl Fn(u64) -> DramRequest) -> Vec<Completion> {
    let (mut next, mut out) = (0u64, Vec::new());
    loop {
        while next < n && ch.can_accept() {
            ch.push(req(next));
            next += 1;
        }
        match ch.issue_next() {
            Some(c) => out.push(c),
            None if next >= n => return out,
            None => {}
        }
    }
}

/// A row-hit stream over every bank (64 accesses to each row), all arrived at 0.
fn stream(banks: u32) -> impl Fn(u64) -> DramRequest {
    move |i| DramRequest {
        id: i,
        bank: (i % banks as u64) as u32,
        row: (i / (64 * banks as u64)) as u32,
        is_write: false,
        bursts: 1,
        arrival: 0,
    }
}

#[test]
fn refresh_blocks_every_bank_for_trfc_every_trefi() {
    for model in ["h100", "rtx3070", "k40c", "a100"] {
        let cfg = config(model);
        let r = cfg.refresh.expect("hardware models refresh");
        let t = cfg.timing;
        // Enough accesses to span 20 refresh intervals at full bandwidth.
        let n = 20 * r.t_refi / t.burst;
        let mut ch = Channel::new(cfg);
        ch.record_commands();
        let done = drive(&mut ch, n, stream(cfg.banks));
        let in_window = |c: u64| c >= r.t_refi && c % r.t_refi < r.t_rfc;
        for &(c, cmd) in ch.commands() {
            assert!(
                !in_window(c),
                "{model}: {cmd:?} at {c} inside a refresh window"
            );
        }
        // No data burst overlaps a window either (the banks are precharged during it).
        for c in &done {
            let (from, to) = (c.done - t.burst, c.done);
            let k = to / r.t_refi;
            assert!(
                k == 0 || from >= k * r.t_refi + r.t_rfc || to <= k * r.t_refi,
                "{model}: burst [{from}, {to}) overlaps the window at {}",
                k * r.t_refi
            );
        }
        // Every window passed was applied.
        let end = done.iter().map(|c| c.done).max().unwrap();
        assert!(
            ch.stats.refreshes + 1 >= end / r.t_refi,
            "{model}: refreshes"
        );
        // The bandwidth lost is tRFC per tREFI, plus at most the drain before a window and
        // the row re-openings after it.
        let mut plain = Channel::new(DramChannelConfig {
            refresh: None,
            ..cfg
        });
        let base = drive(&mut plain, n, stream(cfg.banks));
        let base_end = base.iter().map(|c| c.done).max().unwrap();
        let loss = (end - base_end) as f64 / end as f64;
        let ideal = r.t_rfc as f64 / r.t_refi as f64;
        let edge = (t.t_rp + t.t_rcd + t.t_cl + t.burst + 16) as f64 / r.t_refi as f64;
        assert!(
            loss >= 0.9 * ideal && loss <= ideal + 2.0 * edge,
            "{model}: refresh costs {loss:.4} of the time, tRFC/tREFI = {ideal:.4}"
        );
    }
}

/// Random rows over all banks, reads and writes: many ACTs and PREs among the columns.
fn random(banks: u32) -> impl Fn(u64) -> DramRequest {
    move |i| {
        let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 17;
        DramRequest {
            id: i,
            bank: (h % banks as u64) as u32,
            row: ((h >> 8) % 8) as u32,
            is_write: (h >> 20) % 4 == 0,
            bursts: 1,
            arrival: i / 4,
        }
    }
}

#[test]
fn command_buses_carry_one_command_a_cycle() {
    for dual in [false, true] {
        let cfg = DramChannelConfig {
            dual_bus: dual,
            ..config("rtx3070")
        };
        let mut ch = Channel::new(cfg);
        ch.record_commands();
        drive(&mut ch, 20_000, random(cfg.banks));
        let mut cmds: Vec<(u64, bool)> = (ch.commands().iter())
            .map(|&(t, c)| (t, dual && c.is_row()))
            .collect();
        let acts = (ch.commands().iter())
            .filter(|(_, c)| *c == Command::Act)
            .count();
        assert!(acts > 1000, "the workload activates rows ({acts})");
        cmds.sort_unstable();
        let n = cmds.len();
        cmds.dedup();
        // Without dual_bus every command has a cycle of its own; with it, each of the two
        // buses carries one command a cycle.
        assert_eq!(
            cmds.len(),
            n,
            "dual_bus = {dual}: two commands in one cycle"
        );
    }
}

#[test]
fn a_return_queue_of_n_entries_never_holds_n_plus_one() {
    for (cap, gap) in [(1usize, 1u64), (4, 8), (16, 3)] {
        let cfg = DramChannelConfig {
            return_queue: cap,
            return_gap: gap,
            refresh: None,
            ..config("h100")
        };
        let n = 5_000;
        let mut ch = Channel::new(cfg);
        let done = drive(&mut ch, n, stream(cfg.banks));
        // A read holds its entry from its column command until it leaves.
        let mut events: Vec<(u64, i64)> = (done.iter())
            .flat_map(|c| [(c.issued, 1), (c.left, -1)])
            .collect();
        events.sort_unstable();
        let mut held = 0i64;
        for (t, d) in events {
            held += d;
            assert!(held <= cap as i64, "cap {cap}: {held} reads held at {t}");
        }
        // Entries leave one per gap, never before their data is in.
        for w in done.windows(2) {
            assert!(w[1].left >= w[0].left + gap && w[1].left >= w[1].done);
        }
        // A slow L2 side bounds the throughput to one access per gap.
        let end = done.iter().map(|c| c.left).max().unwrap();
        assert!(end >= n * gap, "cap {cap}, gap {gap}: {end}");
    }
}
