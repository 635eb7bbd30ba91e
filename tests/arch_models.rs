//! GPU models and occupancy: every bundled model loads, validates and round-trips; bad model
//! files (unknown key, wrong unit, impossible combinations) are rejected naming the file,
//! line and key; `--set` overrides go through the same checks; the occupancy calculator
//! reproduces hand-checked CUDA-calculator results on k40c (SiM Table 3) and Accel-Sim's
//! per-SM CTA limits on qv100 (../shared/reference/results_kernels.csv).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use gpumodel::arch::{
    alone_resident_ctas, l1d_size_for_shared, occupancy, Bytes, Cycles, Freq, GpuSpec, Launch,
    Limiter, UnitKind,
};
use gpumodel::Error;

fn model_text(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The model text with the first line starting with `from` replaced by `to`.
fn edit(text: &str, from: &str, to: &str) -> String {
    let mut done = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if !done && l.trim_start().starts_with(from) {
                done = true;
                to.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(done, "no line starting with {from:?}");
    out.join("\n") + "\n"
}

fn line_of(text: &str, starts: &str) -> u64 {
    text.lines()
        .position(|l| l.trim_start().starts_with(starts))
        .expect("line") as u64
        + 1
}

/// Loads `text` as `bad.toml`; returns (line, message) of the expected input error.
fn rejected(text: &str) -> (Option<u64>, String) {
    match GpuSpec::from_toml_str(text, "bad.toml") {
        Ok(_) => panic!("model was accepted"),
        Err(Error::Input { loc, msg }) => {
            assert_eq!(loc.path, Path::new("bad.toml"));
            (loc.line, msg)
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

const MODELS: [&str; 9] = [
    "qv100",
    "fermi-ws",
    "gpgpusim-60sm",
    "k40c",
    "titanxp",
    "ugpu-80sm-hbm",
    "a100",
    "h100",
    "rtx3070",
];

// ---------------------------------------------------------------------------------------------
// Models

#[test]
fn every_bundled_model_loads_validates_and_round_trips() {
    let names: Vec<&str> = GpuSpec::builtin_names().collect();
    assert_eq!(names, MODELS);
    for n in MODELS {
        let s = GpuSpec::builtin(n).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(s.name, n);
        assert!(s.issues().is_empty(), "{n}: {:?}", s.issues());
        // The file on disk is what is compiled in.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models")
            .join(format!("{n}.toml"));
        assert_eq!(GpuSpec::load(&path).unwrap(), s, "{n}");
        assert_eq!(GpuSpec::resolve(n).unwrap(), s, "{n}");
        // Effective model printed and reloaded is equal.
        let text = s.to_toml_string();
        let back = GpuSpec::from_toml_str(&text, "effective.toml")
            .unwrap_or_else(|e| panic!("{n}: {e}\n{text}"));
        assert_eq!(back, s, "{n}");
        // Results JSON can embed it.
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(&format!("\"name\":\"{n}\"")));
        // Every unit kind either runs somewhere or is declared absent.
        for k in UnitKind::ALL {
            let u = s.units.get(k);
            assert!(
                u.count > 0 || u.shares.is_some() || !s.units.available(k),
                "{n} {k}"
            );
        }
    }
}

#[test]
fn models_carry_the_papers_numbers() {
    let q = GpuSpec::builtin("qv100").unwrap();
    assert_eq!(q.sm.count, 80);
    assert_eq!(q.clocks.core, Freq::from_mhz(1132));
    assert_eq!(q.dram.clock, Freq::from_mhz(850));
    assert_eq!(q.launch.kernel_latency, Cycles(5000)); // SM7_QV100's -gpgpu_kernel_launch_latency
    assert_eq!(q.l2_slices(), 64);
    assert_eq!(q.l2_size(), Bytes::mib(6));
    assert_eq!(q.l1d.sets(), 4);
    assert_eq!(q.l2.sets(), 32);
    // 32 x 16 B x 2 x 850 MHz = 870.4 GB/s (README).
    assert_eq!(q.dram.peak_bytes_per_sec(), 870_400_000_000);
    assert_eq!(q.dram.access_bytes(), 32);

    let ws = GpuSpec::builtin("fermi-ws").unwrap();
    assert_eq!(
        (ws.sm.count, ws.sm.max_threads, ws.sm.max_ctas),
        (16, 1536, 8)
    );
    assert_eq!(ws.sm.registers.per_sm, 32768);
    assert_eq!(
        (ws.l1d.size, ws.l1d.assoc, ws.l1d.mshrs),
        (Bytes::kib(16), 4, 64)
    );
    assert_eq!(ws.l2_size().get() / ws.dram.channels as u64, 128 * 1024);
    assert_eq!((ws.dram.channels, ws.dram.clock), (6, Freq::from_mhz(924)));
    let t = &ws.dram.timing;
    assert_eq!(
        (
            t.t_cl.0,
            t.t_rp.0,
            t.t_rc.0,
            t.t_ras.0,
            t.t_rcd.0,
            t.t_rrd_s.0
        ),
        (12, 12, 40, 28, 12, 6)
    );

    let p = GpuSpec::builtin("gpgpusim-60sm").unwrap();
    assert_eq!((p.sm.count, p.sm.max_warps, p.sm.max_ctas), (60, 48, 8));
    assert_eq!(p.clocks.core, Freq::from_mhz(700));
    assert_eq!(p.l2_size(), Bytes::kib(768));

    let k = GpuSpec::builtin("k40c").unwrap();
    assert_eq!(
        (k.sm.count, k.sm.max_threads, k.sm.max_warps, k.sm.max_ctas),
        (15, 2048, 64, 16)
    );
    assert_eq!(k.sm.shared.per_sm, Bytes::kib(48));
    assert_eq!(k.l2_size(), Bytes::kib(1536));

    let x = GpuSpec::builtin("titanxp").unwrap();
    assert_eq!(x.sm.count, 30);
    assert_eq!(x.l2_size(), Bytes::mib(3));

    let u = GpuSpec::builtin("ugpu-80sm-hbm").unwrap();
    assert_eq!(
        (u.sm.count, u.dram.stacks, u.dram.channels_per_stack()),
        (80, 4, Some(8))
    );
    assert_eq!(
        (u.dram.bank_groups, u.dram.banks / u.dram.bank_groups),
        (4, 4)
    );
    assert_eq!(u.l2_size(), Bytes::mib(6));
    assert_eq!(u.l2.sets(), 48);
    assert_eq!(u.dram.timing.t_faw.0, 20);
    assert_eq!(u.reconfig.migration_command, Cycles(40));
    assert_eq!(u.reconfig.driver_delay, Cycles(1000));
    // ~900 GB/s (Table 1).
    let gbs = u.dram.peak_bytes_per_sec() as f64 / 1e9;
    assert!((880.0..=920.0).contains(&gbs), "{gbs}");

    let a = GpuSpec::builtin("a100").unwrap();
    assert_eq!((a.sm.count, a.l2_size()), (108, Bytes::mib(40)));
    let h = GpuSpec::builtin("h100").unwrap();
    assert_eq!((h.sm.count, h.l2_size()), (132, Bytes::mib(50)));
}

#[test]
fn unknown_key_is_rejected_with_file_line_and_key() {
    let text = model_text("qv100");
    let bad = edit(
        &text,
        "hit_latency = 20",
        "hit_latency = 20\nhit_latncy = 21",
    );
    let (line, msg) = rejected(&bad);
    assert!(msg.contains("l1d.hit_latncy"), "{msg}");
    assert!(msg.contains("unknown field"), "{msg}");
    assert_eq!(line, Some(line_of(&bad, "hit_latncy")));
    // A whole unknown table.
    let bad = format!("{text}\n[l3]\nsize = \"1 MiB\"\n");
    let (_, msg) = rejected(&bad);
    assert!(msg.contains("l3"), "{msg}");
    // Missing key names the table.
    let bad = edit(&text, "hit_latency = 20", "");
    let (_, msg) = rejected(&bad);
    assert!(msg.contains("l1d") && msg.contains("hit_latency"), "{msg}");
}

#[test]
fn wrong_units_are_rejected_naming_key_and_expected_unit() {
    let text = model_text("qv100");
    for (from, to, key, expect) in [
        ("size = \"128 KiB\"", "size = \"128 ms\"", "l1d.size", "KiB"),
        ("size = \"128 KiB\"", "size = 131072", "l1d.size", "KiB"),
        (
            "core = \"1132 MHz\"",
            "core = \"1132 KiB\"",
            "clocks.core",
            "MHz",
        ),
        ("core = \"1132 MHz\"", "core = 1132", "clocks.core", "MHz"),
        (
            "time_slice = \"2 ms\"",
            "time_slice = \"2 MHz\"",
            "reconfig.time_slice",
            "ms",
        ),
        (
            "latency = 160",
            "latency = \"160 ns\"",
            "l2.latency",
            "cycle",
        ),
        ("count = 80", "count = -80", "sm.count", ""),
        (
            "scheduler = \"lrr\"",
            "scheduler = \"fifo\"",
            "sm.scheduler",
            "gto",
        ),
    ] {
        let bad = edit(&text, from, to);
        let (line, msg) = rejected(&bad);
        assert!(msg.contains(key), "{to}: {msg}");
        assert!(msg.contains(expect), "{to}: {msg}");
        assert_eq!(line, Some(line_of(&bad, to)), "{to}: {msg}");
    }
    // Carve-out list element.
    let bad = edit(&text, "carveout = ", "carveout = [\"0 KiB\", \"8 ms\"]");
    let (_, msg) = rejected(&bad);
    assert!(msg.contains("l1d.carveout") && msg.contains("KiB"), "{msg}");
}

#[test]
fn impossible_combinations_are_rejected() {
    let ugpu = model_text("ugpu-80sm-hbm");
    let bad = edit(&ugpu, "channels = 32", "channels = 30");
    let (line, msg) = rejected(&bad);
    assert!(
        msg.contains("dram.channels") && msg.contains("stacks"),
        "{msg}"
    );
    assert_eq!(line, Some(line_of(&bad, "channels = 30")));

    let q = model_text("qv100");
    for (from, to, key) in [
        ("bank_groups = 4", "bank_groups = 3", "dram.bank_groups"),
        ("stacks = 4", "stacks = 0", "dram.stacks"),
        ("max_warps = 64", "max_warps = 32", "sm.max_warps"),
        ("line = \"128 B\"", "line = \"96 B\"", "l1d.line"),
        ("sector = \"32 B\"", "sector = \"256 B\"", "l1d.sector"),
        ("assoc = 256", "assoc = 250", "l1d.size"),
        (
            "carveout = ",
            "carveout = [\"0 KiB\", \"8 KiB\", \"16 KiB\", \"32 KiB\", \"64 KiB\", \"160 KiB\"]",
            "l1d.carveout",
        ),
        (
            "carveout = ",
            "carveout = [\"0 KiB\", \"32 KiB\", \"16 KiB\", \"96 KiB\"]",
            "l1d.carveout",
        ),
        (
            "carveout = ",
            "carveout = [\"0 KiB\", \"8 KiB\", \"64 KiB\"]",
            "sm.shared.per_sm",
        ),
        (
            "per_cta = \"64 KiB\"",
            "per_cta = \"128 KiB\"",
            "sm.shared.per_cta",
        ),
        ("tRC = 40", "tRC = 20", "dram.timing.tRC"),
        ("tCCDL = 2", "tCCDL = 0", "dram.timing.tCCDL"),
        (
            "interleave = \"256 B\"",
            "interleave = \"16 B\"",
            "dram.mapping.interleave",
        ),
        ("count = 80", "count = 0", "sm.count"),
    ] {
        let bad = edit(&q, from, to);
        let (_, msg) = rejected(&bad);
        assert!(msg.contains(key), "{to}: {msg}");
    }
    // Bank bits: one per bank-index bit, distinct, below the row.
    let rtx = model_text("rtx3070");
    for bad in [
        "[7, 12, 13]",
        "[7, 12, 12, 14]",
        "[7, 12, 13, 15]",
        "[7, 12, 13, 70]",
    ] {
        let text = edit(
            &rtx,
            "bank_bits = [7, 12, 13, 14]",
            &format!("bank_bits = {bad}"),
        );
        let (line, msg) = rejected(&text);
        assert!(msg.contains("dram.mapping.bank_bits"), "{bad}: {msg}");
        assert_eq!(line, Some(line_of(&text, "bank_bits = ")), "{bad}: {msg}");
    }
    // GDDR with stacks, unit sharing a missing unit.
    let k = model_text("k40c");
    let (_, msg) = rejected(&edit(&k, "stacks = 0", "stacks = 2"));
    assert!(msg.contains("dram.stacks"), "{msg}");
    let (_, msg) = rejected(&edit(&k, "shares = \"fp32\"", "shares = \"tensor\""));
    assert!(msg.contains("units.int.shares"), "{msg}");
    // Syntax errors carry a line.
    let (line, msg) = rejected("name = \"x\"\n[sm\n");
    assert_eq!(line, Some(2), "{msg}");
}

#[test]
fn overrides_apply_and_are_checked() {
    let q = GpuSpec::builtin("qv100").unwrap();
    let o = q
        .with_overrides(&[
            "l2.size_per_slice=128 KiB",
            "l2.assoc=16",
            "sm.count = 40",
            "dram.timing.tRCD=14",
            "sm.scheduler=gto",
            "clocks.core=1.5 GHz",
            "l1d.carveout=[\"0 KiB\", \"96 KiB\"]",
        ])
        .unwrap();
    assert_eq!(
        (o.l2.size_per_slice, o.l2.assoc, o.l2.sets()),
        (Bytes::kib(128), 16, 64)
    );
    assert_eq!(o.sm.count, 40);
    assert_eq!(o.dram.timing.t_rcd, Cycles(14));
    assert_eq!(o.sm.scheduler, gpumodel::arch::SchedPolicy::Gto);
    assert_eq!(o.clocks.core, Freq::from_mhz(1500));
    assert_eq!(o.l1d.carveout, vec![Bytes(0), Bytes::kib(96)]);
    // The rest is untouched, and the effective model round-trips.
    assert_eq!(o.dram, {
        let mut d = q.dram.clone();
        d.timing.t_rcd = Cycles(14);
        d
    });
    assert_eq!(
        GpuSpec::from_toml_str(&o.to_toml_string(), "eff.toml").unwrap(),
        o
    );

    let mut m = q.clone();
    m.apply_override("sm.max_ctas=16").unwrap();
    assert_eq!(m.sm.max_ctas, 16);

    // Combined changes are validated together: 30 channels on 5 stacks is fine, alone (on 4) not.
    let u = GpuSpec::builtin("ugpu-80sm-hbm").unwrap();
    assert!(u
        .with_overrides(&["dram.channels=30", "dram.stacks=5"])
        .is_ok());
    let e = u
        .with_overrides(&["dram.channels=30"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dram.channels") && e.contains("stacks"), "{e}");

    for (kv, expect) in [
        // 128 KiB is not a whole number of 24-way sets of 128 B lines (qv100 keeps assoc 24).
        ("l2.size_per_slice=128 KiB", "l2.size_per_slice"),
        ("l2.size_per_slice=128 ms", "l2.size_per_slice"),
        ("l2.size_per_slice=131072", "l2.size_per_slice"),
        ("l2.bogus=1", "bogus"),
        // The L2 port cannot be wider than a line, nor zero.
        ("l2.port=256 B", "l2.port"),
        ("l2.port=0 B", "l2.port"),
        ("nokey", "key=value"),
        ("=3", "dotted key"),
        ("sm=3", "table"),
        ("sm.count.x=3", "sm.count"),
        ("sm.count=0", "sm.count"),
        ("dram.bank_groups=5", "dram.bank_groups"),
        // Plain FCFS parses but is not modelled: rejected, not run as FR-FCFS.
        ("dram.scheduler=fcfs", "dram.scheduler"),
    ] {
        let mut m = q.clone();
        let e = m.apply_override(kv).unwrap_err();
        assert!(e.is_bad_input());
        let e = e.to_string();
        assert!(e.contains(expect), "{kv}: {e}");
        assert_eq!(m, q, "a failed override leaves the model unchanged");
    }
}

#[test]
fn resolve_names_and_paths() {
    assert!(GpuSpec::resolve("qv100").is_ok());
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/k40c.toml");
    assert_eq!(GpuSpec::resolve(p.to_str().unwrap()).unwrap().name, "k40c");
    let e = GpuSpec::resolve("v100x").unwrap_err().to_string();
    assert!(e.contains("qv100"), "lists the built-ins: {e}");
    // A missing model file is bad input (exit 2) naming the path, not an I/O failure.
    let e = GpuSpec::resolve("no/such/model.toml").unwrap_err();
    assert!(e.is_bad_input(), "{e}");
    assert!(e.to_string().contains("no/such/model.toml"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Occupancy

/// SiM Table 3 kernels on the K40c (CUDA occupancy calculator, compute capability 3.5:
/// 2048 threads, 64 warps, 16 CTAs, 65536 registers allocated per warp in units of 256 within
/// 4 sub-partitions of 16384, 48 KiB shared memory in units of 256 B).
#[test]
fn sim_table3_kernels_on_k40c() {
    let k40 = GpuSpec::builtin("k40c").unwrap();
    use Limiter::*;
    #[rustfmt::skip]
    let cases: [(&str, Launch, u32, &[Limiter]); 7] = [
        // binomialOptions: 128 thr (4 warps), 28 regs, 524 B.
        //   threads 2048/128 = 16; warps 64/4 = 16; CTA slots 16;
        //   regs: 28*32 = 896 -> 1024/warp; 16384/1024 = 16 warps/part -> 64 warps -> 16 CTAs;
        //   smem: 524 -> 768 B; 49152/768 = 64.  => 16, threads = registers = CTA slots.
        ("binomialOptions", Launch::new(128, 28, 524), 16, &[Threads, Registers, CtaSlots]),
        // FDTD3d: 512 thr (16 warps), 58 regs, 3848 B.
        //   threads 4; regs: 58*32 = 1856 -> 2048/warp; 16384/2048 = 8/part -> 32 warps -> 2 CTAs;
        //   smem: 3848 -> 4096; 49152/4096 = 12.  => 2, registers.
        ("FDTD3d", Launch::new(512, 58, 3848), 2, &[Registers]),
        // lavaMD: 128 thr, 64 regs, 7208 B.
        //   threads 16; regs: 2048/warp -> 8/part -> 32 warps -> 8 CTAs;
        //   smem: 7208 -> 7424; 49152/7424 = 6.6 -> 6.  => 6, shared memory.
        ("lavaMD", Launch::new(128, 64, 7208), 6, &[SharedMemory]),
        // MD5Hash: 384 thr (12 warps), 30 regs, 8 B.
        //   threads 2048/384 = 5; warps 64/12 = 5; regs: 960 -> 1024/warp -> 64 warps -> 64/12 = 5;
        //   smem: 8 -> 256; 192.  => 5, threads = registers.
        ("MD5Hash", Launch::new(384, 30, 8), 5, &[Threads, Registers]),
        // nbody: 256 thr (8 warps), 49 regs, 8208 B.
        //   threads 8; regs: 1568 -> 1792/warp; 16384/1792 = 9/part -> 36 warps -> 36/8 = 4;
        //   smem: 8208 -> 8448; 49152/8448 = 5.8 -> 5.  => 4, registers.
        ("nbody", Launch::new(256, 49, 8208), 4, &[Registers]),
        // particlefilter: 128 thr, 16 regs, 8 B.
        //   threads 16; regs: 512/warp -> 32/part -> 128 warps -> 32 CTAs; smem 192; slots 16.
        //   => 16, threads = CTA slots.
        ("particlefilter", Launch::new(128, 16, 8), 16, &[Threads, CtaSlots]),
        // tpacf: 256 thr, 49 regs, 13320 B.
        //   threads 8; regs 4 (as nbody); smem: 13320 -> 13568; 49152/13568 = 3.6 -> 3.
        //   => 3, shared memory.
        ("tpacf", Launch::new(256, 49, 13320), 3, &[SharedMemory]),
    ];
    for (name, launch, ctas, limited_by) in cases {
        let o = occupancy(&k40, &launch).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(o.ctas_per_sm, ctas, "{name}: {o:?}");
        assert_eq!(o.limited_by, limited_by, "{name}: {o:?}");
        assert_eq!(o.limiter, limited_by[0], "{name}");
        assert_eq!(
            o.warps_per_sm,
            ctas * launch.threads_per_cta.div_ceil(32),
            "{name}"
        );
        assert!(o.regs_per_sm <= 65536 && o.smem_per_sm <= 49152, "{name}");
    }
}

/// Accel-Sim's `cta_per_sm_resource_limit` / `cta_limited_by` for every kernel of the
/// reference suite, and the L1D size after the adaptive carve-out.
#[test]
fn qv100_matches_accel_sim_cta_limits() {
    let q = GpuSpec::builtin("qv100").unwrap();
    let csv_path = common::reference().join("results_kernels.csv");
    let text = std::fs::read_to_string(&csv_path)
        .unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("column {name}"))
    };
    let (c_kernel, c_grid, c_block, c_regs, c_smem) = (
        col("kernel"),
        col("grid_x"),
        col("block_x"),
        col("nregs"),
        col("shmem_bytes"),
    );
    let (c_limit, c_by, c_res, c_l1d) = (
        col("cta_per_sm_resource_limit"),
        col("cta_limited_by"),
        col("cta_per_sm_resident"),
        col("l1d_size_kb"),
    );
    let mut rows = 0;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        let num = |c: usize| f[c].parse::<u32>().unwrap_or_else(|_| panic!("{line}"));
        let name = f[c_kernel];
        let launch = Launch::new(num(c_block), num(c_regs), num(c_smem));
        let o = occupancy(&q, &launch).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(o.ctas_per_sm, num(c_limit), "{name}: {o:?}");
        let expected: BTreeSet<Limiter> = f[c_by]
            .split_whitespace()
            .map(|w| match w {
                "threads" => Limiter::Threads,
                "regs" => Limiter::Registers,
                "shmem" => Limiter::SharedMemory,
                "cta_limit" => Limiter::CtaSlots,
                other => panic!("unknown limiter {other}"),
            })
            .collect();
        let got: BTreeSet<Limiter> = o.limited_by.iter().copied().collect();
        assert_eq!(got, expected, "{name}");
        // Alone runs spread small grids: min(limit, ceil(grid / 80)).
        let resident = alone_resident_ctas(o.ctas_per_sm, num(c_grid) as u64, q.sm.count);
        assert_eq!(resident, num(c_res), "{name}");
        // Adaptive carve-out: smallest option holding resident x shmem; L1D gets the rest.
        let l1d = l1d_size_for_shared(&q, resident as u64 * num(c_smem) as u64).unwrap();
        assert_eq!(l1d, Bytes::kib(num(c_l1d) as u64), "{name}");
        rows += 1;
    }
    // Every data row was checked (the reference set grows: count it).
    assert_eq!(
        rows,
        text.lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .count()
    );
    assert!(rows >= 11, "only {rows} reference kernels");
}

#[test]
fn occupancy_errors_when_nothing_fits() {
    let q = GpuSpec::builtin("qv100").unwrap();
    for (l, expect) in [
        (Launch::new(1024, 128, 0), "registers"),
        (Launch::new(256, 16, 70 * 1024), "shared memory"),
        (Launch::new(2048, 16, 0), "threads per CTA"),
        (Launch::new(0, 16, 0), "at least one thread"),
        (Launch::new(32, 300, 0), "registers per thread"),
    ] {
        let e = occupancy(&q, &l).unwrap_err();
        assert!(e.is_bad_input());
        let e = e.to_string();
        assert!(e.contains(expect) && e.contains("qv100"), "{l:?}: {e}");
    }
    // Within the per-CTA limit, but with the per-CTA reservation it exceeds the SM's.
    let a = GpuSpec::builtin("a100").unwrap();
    assert!(occupancy(&a, &Launch::new(128, 16, 163 * 1024)).is_ok());
    let m = a
        .with_overrides(&["sm.shared.reserved_per_cta=2 KiB"])
        .unwrap();
    let e = occupancy(&m, &Launch::new(128, 16, 163 * 1024))
        .unwrap_err()
        .to_string();
    assert!(e.contains("shared memory") && e.contains("165 KiB"), "{e}");
}

#[test]
fn cuda_rules_on_ampere_and_hopper() {
    // A100: 1 KiB reserved per CTA, 128 B units, 164 KiB per SM.
    let a = GpuSpec::builtin("a100").unwrap();
    // 256 threads, 32 regs, 48 KiB: (48 KiB + 1 KiB) -> 164/49 = 3.3 -> 3, shared memory.
    let o = occupancy(&a, &Launch::new(256, 32, 48 * 1024)).unwrap();
    assert_eq!((o.ctas_per_sm, o.limiter), (3, Limiter::SharedMemory));
    assert_eq!(o.smem_per_cta, 49 * 1024);
    // No shared memory still reserves 1 KiB per CTA: 164 CTAs by smem, 32 by slots.
    let o = occupancy(&a, &Launch::new(32, 16, 0)).unwrap();
    assert_eq!(o.limits.shared_memory, Some(164));
    assert_eq!((o.ctas_per_sm, o.limiter), (32, Limiter::CtaSlots));
    // H100: 255 regs x 1024 threads does not fit; 64 regs x 1024 threads fits once.
    let h = GpuSpec::builtin("h100").unwrap();
    assert!(occupancy(&h, &Launch::new(1024, 255, 0)).is_err());
    let o = occupancy(&h, &Launch::new(1024, 64, 0)).unwrap();
    assert_eq!((o.ctas_per_sm, o.limiter), (1, Limiter::Registers));
    // Carve-out on H100: 100 KiB used -> 100 KiB option -> 156 KiB of L1D.
    assert_eq!(
        l1d_size_for_shared(&h, 100 * 1024).unwrap(),
        Bytes::kib(156)
    );
    // Dedicated shared memory (k40c): the L1D is fixed.
    let k = GpuSpec::builtin("k40c").unwrap();
    assert_eq!(l1d_size_for_shared(&k, 40 * 1024).unwrap(), Bytes::kib(16));
    assert!(l1d_size_for_shared(&k, 49 * 1024).is_err());
}

#[test]
fn unit_kinds_line_up_with_trace_units() {
    // The engine maps trace::Unit to arch::UnitKind by index; keep the two orders identical.
    assert_eq!(gpumodel::trace::Unit::ALL.len(), UnitKind::ALL.len());
    for (t, a) in gpumodel::trace::Unit::ALL.iter().zip(UnitKind::ALL) {
        assert_eq!(t.name(), a.name());
        assert_eq!(*t as usize, a as usize);
    }
}
