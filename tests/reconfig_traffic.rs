//! Reconfiguration as traffic (issue 45, item 3): a context save moves its bytes as line
//! writes through the request crossbar into the L2, a restore reads them back, and eager
//! page migration's copies are DRAM requests that co-runners on the same channels queue
//! behind. Expectations come from the model's parameters (line and sector size, the SM
//! port's `reconfig.context_save_bandwidth`), not from a run's output.

mod common;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::memsys::{LoadRef, MemSys};
use gpumodel::engine::{AppSpec, Counters, Migration, RunMode};
use gpumodel::policy::{execute, PolicySpec, Workload};

fn qv100() -> GpuSpec {
    GpuSpec::builtin("qv100").unwrap()
}

/// A save of `bytes` from SM 3: exactly ceil(bytes / line) line writes cross the request
/// crossbar and reach the L2, each a whole line.
#[test]
fn a_save_moves_one_line_write_per_line_into_the_l2() {
    let spec = qv100();
    let line = spec.l2.line.0;
    let sectors = line / spec.l2.sector.0;
    let bw = spec.reconfig.context_save_bandwidth.0;
    for bytes in [1u64, line, line + 1, 40_000, 3 * 65_536 + 17] {
        let mut m = MemSys::new(&spec, 4, 2);
        let mut ctr = Counters::default();
        let (req0, l2_0) = m.bulk_traffic();
        let first = m.save_line(1, 3, 2);
        let done = m.bulk_write(3, 1, &[(first, bytes)], bw, 1000, &mut ctr);
        let (req1, l2_1) = m.bulk_traffic();
        let lines = bytes.div_ceil(line);
        assert_eq!(l2_1 - l2_0, lines, "{bytes} B: L2 accesses");
        assert_eq!(ctr.l2_accesses, lines * sectors, "{bytes} B: sectors");
        // Each write carries a header and a whole line over the request crossbar.
        assert_eq!(req1 - req0, lines * (8 + line), "{bytes} B: crossbar bytes");
        // The port moves `bw` bytes a cycle: the last line cannot leave before the whole
        // context has gone through it, and its acknowledgement needs a round trip.
        let port = ((lines - 1) * line).div_ceil(bw);
        assert!(
            done >= 1000 + port + 2 * m.lat.noc + m.lat.l2,
            "{bytes}: {done}"
        );
        // Read back at once: every line is still in the (write-back) L2 and hits.
        let mut back = Counters::default();
        let (_, l2_2) = m.bulk_traffic();
        let ready = m.bulk_read(3, 1, &[(first, bytes)], bw, done, &mut back);
        assert_eq!(m.bulk_traffic().1 - l2_2, lines);
        assert_eq!(back.l2_hits, lines * sectors, "{bytes} B: restore hits");
        assert_eq!(back.dram_reads, 0);
        assert!(ready >= done + port + 2 * m.lat.noc + m.lat.l2);
    }
}

/// Every SM saving at once (a time-slice switch, a handover of many SMs) shares the
/// crossbar, the slices and the channels: the whole save takes about the longer of one
/// SM's port time and the total over the memory system's bandwidth, not the sum of the
/// SMs' times (which it did when each SM's lines were booked after the previous SM's).
/// Each chain's end equals, to within the contention of the others, what it takes alone.
#[test]
fn sms_saving_at_once_share_the_memory_system() {
    use gpumodel::engine::memsys::{Chain, Step};
    let spec = qv100();
    let bw = spec.reconfig.context_save_bandwidth.0;
    let nsm = spec.sm.count as usize;
    // A full SM's context: its registers and shared memory.
    let bytes = spec.sm.registers.per_sm as u64 * 4 + spec.sm.shared.per_sm.0;
    let start = 1000;
    let one = {
        let mut m = MemSys::new(&spec, 2, 2);
        let mut ctr = Counters::default();
        m.bulk_write(0, 1, &[(m.save_line(1, 0, 0), bytes)], bw, start, &mut ctr) - start
    };
    let mut m = MemSys::new(&spec, 2, 2);
    let chains: Vec<Chain> = (0..nsm)
        .map(|s| Chain {
            sm: s,
            start,
            steps: vec![Step {
                app: 1,
                write: true,
                segs: vec![(m.save_line(1, s, 0), bytes)],
            }],
        })
        .collect();
    let mut ctrs = vec![Counters::default(); 2];
    let done = m.bulk(&chains, bw, &mut ctrs);
    let last = done.iter().max().unwrap() - start;
    // Bytes every SM sends, over what the L2 slices can take a cycle (their ports) — the
    // write-back L2 absorbs the save, so DRAM need not see it all.
    let lines = m.lines_of(bytes) * nsm as u64;
    assert_eq!(
        ctrs[1].l2_accesses,
        lines * (spec.l2.line.0 / spec.l2.sector.0)
    );
    assert!(last >= one, "together {last} < alone {one}");
    let serial = one * nsm as u64;
    eprintln!("{nsm} SMs x {bytes} B: {last} cycles together, {one} alone");
    assert!(
        last * 8 < serial,
        "{nsm} SMs saving {bytes} B each took {last} cycles; one alone {one}; serialised would be {serial}"
    );
    // No SM finishes before its own port has sent its lines.
    let port = ((m.lines_of(bytes) - 1) * spec.l2.line.0).div_ceil(bw);
    assert!(done.iter().all(|&d| d >= start + port));
}

/// Save areas of different applications, SMs and slots never overlap for the largest
/// context an SM holds.
#[test]
fn save_areas_are_disjoint() {
    let spec = qv100();
    let m = MemSys::new(&spec, 4, 2);
    let most = spec.sm.registers.per_sm as u64 * 4 + spec.sm.shared.per_sm.0;
    let lines = m.lines_of(most);
    let mut starts: Vec<u64> = Vec::new();
    for app in 0..3 {
        for sm in 0..spec.sm.count as usize {
            for slot in 0..spec.sm.max_ctas as usize {
                starts.push(m.save_line(app, sm, slot));
            }
        }
    }
    starts.sort();
    for w in starts.windows(2) {
        assert!(w[1] - w[0] >= lines, "{} {}", w[0], w[1]);
    }
}

/// Runs the channels' events in time order until none is left; adds each resolved load's
/// latency (its issue time is `issued[warp]`) to `sum`.
fn drain(m: &mut MemSys, ctrs: &mut [Counters], issued: &[u64], sum: &mut u64) {
    loop {
        let evs = std::mem::take(&mut m.chan_events);
        let Some(now) = evs.iter().map(|e| e.0).min() else {
            break;
        };
        for (at, c) in evs {
            if at <= now {
                m.run_channel(c as usize, now, ctrs);
            } else {
                m.chan_events.push((at, c));
            }
        }
        for (w, t) in m.resolved.drain(..) {
            *sum += t - issued[w.warp as usize];
        }
    }
}

/// App 1 streams 8,000 distinct lines (missing the L2), one every 4 cycles, over channels
/// `co` from cycle 20,000 on, while app 0, whose 256 pages were placed on `from`, moves to
/// `to` at cycle 20,000 with `how`. Returns app 1's mean load latency.
fn co_runner(co: &[u32], from: &[u32], to: &[u32], how: Migration) -> f64 {
    let spec = qv100();
    let mut m = MemSys::new(&spec, 4, 2);
    m.set_channels(0, from.to_vec()).unwrap();
    m.set_channels(1, co.to_vec()).unwrap();
    let mut ctrs = vec![Counters::default(), Counters::default()];
    let page = spec.reconfig.page_size.0;
    let line = spec.l2.line.0;
    let mut sum = 0;
    for p in 0..256u64 {
        m.store(0, 0, p * page / line, 0b1111, 0, p, &mut ctrs[0]);
    }
    drain(&mut m, &mut ctrs, &[], &mut sum);
    let t0 = 20_000;
    let mig = m
        .migrate(0, to.to_vec(), how, t0, &spec, &mut ctrs[0])
        .unwrap();
    assert_eq!(mig.pages, if from == to { 0 } else { 256 });
    let n = 8000u64;
    let issued: Vec<u64> = (0..n).map(|i| t0 + 4 * i).collect();
    let base = 1u64 << 32;
    for i in 0..n {
        let w = LoadRef {
            sm: 1,
            warp: i as u16,
            slot: 0,
            gen: 0,
        };
        let t = issued[i as usize];
        if let Some(r) = m.load(
            1 + (i % 8) as usize,
            1,
            base + i,
            0b1111,
            t,
            true,
            w,
            &mut ctrs,
        ) {
            sum += r - t;
        }
    }
    drain(&mut m, &mut ctrs, &issued, &mut sum);
    sum as f64 / n as f64
}

/// Eager migration (a set change under a pure mapping) copies every page over DRAM: a
/// co-runner streaming on the source and destination channels is slowed while it lasts;
/// one on other channels, or with no migration, is not.
#[test]
fn eager_migration_slows_a_co_runner_on_the_same_channels_only() {
    let all: Vec<u32> = (0..8).collect();
    let alone = co_runner(&all, &[0, 1, 2, 3], &[0, 1, 2, 3], Migration::Copy);
    let none = co_runner(&all, &[0, 1, 2, 3], &[4, 5, 6, 7], Migration::None);
    assert_eq!(alone, none, "no copy, no traffic");
    for how in [Migration::Copy, Migration::Soft] {
        let moved = co_runner(&all, &[0, 1, 2, 3], &[4, 5, 6, 7], how);
        // 256 pages of 4 KB read and written: 2 MB over the co-runner's channels.
        assert!(moved > 1.05 * alone, "{how:?}: {moved} vs {alone} alone");
        // A co-runner on channels the pages neither leave nor reach sees nothing.
        let apart = co_runner(&[8, 9, 10, 11], &[0, 1, 2, 3], &[4, 5, 6, 7], how);
        let apart_alone = co_runner(&[8, 9, 10, 11], &[0, 1, 2, 3], &[0, 1, 2, 3], how);
        assert_eq!(apart, apart_alone, "{how:?}");
    }
}

fn time_slice_run() -> String {
    use common::engine_kit::{compute, stream, tiny_with};
    let spec = tiny_with(4, 4, &["reconfig.time_slice=\"5 us\""]);
    let apps = vec![
        AppSpec::new("st", vec![stream("st", 48, 4, 24, 0)]),
        AppSpec::new("cp", vec![compute("cp", 48, 4, 600, 4, "ffma")]),
    ];
    let w = Workload {
        spec: &spec,
        apps: &apps,
        mode: RunMode::Completion,
    };
    let p = PolicySpec::from_name("time-slice").unwrap().build();
    let o = execute(p.as_ref(), &w, 200_000_000).unwrap();
    assert!(
        o.stats
            .reconfigs
            .iter()
            .any(|r| r.what.starts_with("time slice")),
        "no switch happened"
    );
    serde_json::to_string(&o.stats).unwrap()
}

/// Time slicing moves contexts through the memory system: the same run twice gives the
/// same bytes.
#[test]
fn time_slice_runs_are_deterministic() {
    assert_eq!(time_slice_run(), time_slice_run());
}
