//! Address patterns, coalescing, dependency chains, atomics, shared memory and divergence
//! of generated warps.

use super::*;

fn global_loads_of(k: &dyn KernelSource, buffer_base: u64, warps: u32) -> Vec<DynInst> {
    let mut out = Vec::new();
    for c in 0..k.num_ctas().min(4) {
        for w in 0..warps.min(k.cta(c).warps) {
            for d in warp(k, c, w) {
                let s = stat(k, &d);
                if s.space() == MemSpace::Global
                    && s.mem_op() == MemOp::Load
                    && d.addrs()
                        .first()
                        .is_some_and(|&a| a >= buffer_base && a < buffer_base + (256 << 20))
                {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// The global loads of warp `w` of CTA `c` whose first address lies in `[base, base + fp)`,
/// in order.
fn global_loads_of_cta(k: &dyn KernelSource, c: u32, w: u32, base: u64, fp: u64) -> Vec<DynInst> {
    warp(k, c, w)
        .into_iter()
        .filter(|d| {
            let s = stat(k, d);
            s.space() == MemSpace::Global
                && s.mem_op() == MemOp::Load
                && d.addrs()
                    .first()
                    .is_some_and(|&a| a >= base && a < base + fp)
        })
        .collect()
}

#[test]
fn coalesced_loads_touch_one_line_random_loads_32_sectors() {
    let text = format!(
        "{HEAD}\n[body]\ntrips = 4\n\n[[loads]]\ncount = 2\n\n[[loads]]\ncount = 1\npattern = \"random\"\nfootprint = \"256 MiB\"\n"
    );
    let k = synth(&text);
    let bases = k.stream_bases();
    let co = global_loads_of(&k, bases[0], 2);
    let ra = global_loads_of(&k, bases[1], 2);
    assert!(!co.is_empty() && !ra.is_empty());
    for d in &co {
        assert_eq!(d.n, 32);
        assert_eq!(sectors(d), 4, "{:x?}", d.addrs());
        assert_eq!(lines(d), 1);
        assert_eq!(d.addrs()[0] % 128, 0);
        assert!(d.addrs().windows(2).all(|p| p[1] - p[0] == 4));
    }
    let mean = ra.iter().map(sectors).sum::<usize>() as f64 / ra.len() as f64;
    assert!(mean > 31.5, "random loads touch {mean} sectors on average");
    for d in &ra {
        assert!(d
            .addrs()
            .iter()
            .all(|&a| a >= bases[1] && a < bases[1] + (256 << 20) && a % 4 == 0));
    }
    // sectors_per_request sets the coalescing for any width
    for (w, s, lines_want) in [
        (4, 8, 2),
        (4, 32, 8),
        (4, 1, 1),
        (16, 16, 4),
        (8, 2, 1),
        (16, 4, 1),
    ] {
        let t = format!("{HEAD}\n[[loads]]\ncount = 1\nwidth = {w}\nsectors_per_request = {s}\n");
        let k = synth(&t);
        for d in global_loads_of(&k, k.stream_bases()[0], 2) {
            assert_eq!(sectors(&d), s as usize, "width {w} sectors {s}");
            assert_eq!(lines(&d), lines_want, "width {w} sectors {s}");
            assert!(d.addrs().iter().all(|a| a % w == 0));
        }
    }
    // default 16-byte coalesced: 512 bytes, 16 sectors
    let k = synth(&format!("{HEAD}\n[[loads]]\ncount = 1\nwidth = 16\n"));
    let d = &global_loads_of(&k, k.stream_bases()[0], 1)[0];
    assert_eq!((sectors(d), lines(d)), (16, 4));
    assert_eq!(k.statics().opcode_name(stat(&k, d)), "LDG.E.128.SYS");
}

#[test]
fn chains_depend_at_distance_ilp() {
    for (ilp, n) in [
        (1usize, 16usize),
        (2, 16),
        (3, 16),
        (4, 16),
        (8, 16),
        (3, 15),
        (5, 15),
    ] {
        let fp32 = n - 6;
        let t =
            format!("{HEAD}\n[body]\ntrips = 3\nilp = {ilp}\nfp32 = {fp32}\nsfu = 3\nfp64 = 3\n");
        let k = synth(&t);
        let v = warp(&k, 0, 0);
        let p = k.prologue_len() as usize;
        let b = k.body_len() as usize;
        // the compute instructions of two consecutive trips, in issue order
        let comp: Vec<&StaticInst> = v[p..p + 2 * b]
            .iter()
            .map(|d| stat(&k, d))
            .filter(|s| matches!(s.unit(), Unit::Fp32 | Unit::Fp64 | Unit::Sfu))
            .collect();
        assert_eq!(comp.len(), 2 * n);
        // within a trip always; across the trip boundary when the count is a multiple of ilp
        let span = if n % ilp == 0 { 2 * n } else { n };
        for i in 0..span {
            let s = comp[i];
            if i >= ilp {
                let prod = comp[i - ilp];
                assert_eq!(s.dst, prod.dst, "chain register of {i} (ilp {ilp})");
                assert!(s.srcs().contains(&prod.dst), "{i} reads its chain");
            }
            for d in 1..ilp.min(i + 1) {
                assert!(
                    !s.srcs().contains(&comp[i - d].dst),
                    "{i} is independent of {}",
                    i - d
                );
            }
        }
        // chains are loop-carried: each reads the register it writes
        assert!(comp.iter().all(|s| s.srcs().contains(&s.dst)));
        let chains: BTreeSet<u16> = comp.iter().map(|s| s.dst).collect();
        assert_eq!(chains.len(), ilp);
    }
    // loads feed the first compute instructions; stores consume the chains
    let t =
        format!("{HEAD}\n[body]\nilp = 2\nfp32 = 4\n[[loads]]\ncount = 2\n[[stores]]\ncount = 1\n");
    let k = synth(&t);
    let st = &k.statics().insts;
    let loads: Vec<u16> = st
        .iter()
        .filter(|s| s.mem_op() == MemOp::Load)
        .map(|s| s.dst)
        .collect();
    let fp: Vec<&StaticInst> = st.iter().filter(|s| s.unit() == Unit::Fp32).collect();
    assert!(fp[0].srcs().contains(&loads[0]) && fp[1].srcs().contains(&loads[1]));
    let store = st.iter().find(|s| s.mem_op() == MemOp::Store).unwrap();
    assert!(fp.iter().any(|f| store.srcs().contains(&f.dst)));
    // dependent loads take their address from the previous load
    let k = synth(&format!(
        "{HEAD}\n[[loads]]\ncount = 1\n[[loads]]\ncount = 1\npattern = \"random\"\nfootprint = 4096\ndependent = true\n"
    ));
    let ld: Vec<&StaticInst> = k
        .statics()
        .insts
        .iter()
        .filter(|s| s.mem_op() == MemOp::Load)
        .collect();
    assert_eq!(ld[1].srcs(), [ld[0].dst]);
}

#[test]
fn patterns_follow_their_definitions() {
    // stream: grid-stride, disjoint and exhaustive without a footprint
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 2\n[[loads]]\ncount = 2\n"
    ));
    let base = k.stream_bases()[0];
    let m = decode(&k);
    let mut all = BTreeSet::new();
    for c in &m.ctas {
        for w in &c.warps {
            for d in w.iter().filter(|d| d.n > 0) {
                for &a in d.addrs() {
                    assert!(all.insert(a), "stream re-reads {a:x}");
                }
            }
        }
    }
    assert_eq!(all.len(), 4 * 64 * 4);
    assert_eq!(*all.iter().next().unwrap(), base);
    assert_eq!(*all.iter().last().unwrap(), base + 4 * 64 * 4 * 4 - 4);

    // footprint wraps
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 40\n[[loads]]\ncount = 2\nfootprint = \"4 KiB\"\n"
    ));
    let base = k.stream_bases()[0];
    let lds = global_loads_of(&k, base, 2);
    assert!(lds
        .iter()
        .flat_map(|d| d.addrs())
        .all(|&a| a >= base && a < base + 4096));

    // step: a warp's request `j` starts `j × step` after its first (mod footprint), as
    // `a[(i + k*C) & mask]` does; here C = 7919 × 32 floats over 8 MiB, 8 warps (grid 4 ×
    // 64 threads), 16 requests a trip
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 2\n[[loads]]\ncount = 16\nfootprint = \"8 MiB\"\nstep = \"1013632 B\"\n"
    ));
    let base = k.stream_bases()[0];
    let fp = 8u64 << 20;
    for c in 0..k.num_ctas() {
        for w in 0..2u32 {
            let gw = u64::from(c * 2 + w);
            let lds = global_loads_of_cta(&k, c, w, base, fp);
            assert_eq!(lds.len(), 32);
            let mut seen = BTreeSet::new();
            for (j, d) in lds.iter().enumerate() {
                let want = base + (gw * 128 + j as u64 * 1_013_632) % fp;
                assert_eq!(d.addrs()[0], want, "CTA {c} warp {w} request {j}");
                assert!(d.addrs().windows(2).all(|p| p[1] - p[0] == 4));
                assert!(seen.insert(d.addrs()[0] / 128), "a warp met a line again");
            }
        }
    }
    // without it, a footprint of one grid stride brings warp 0 back to its own
    // line every request: 8 warps × 128 B is the whole 1 KiB
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 2\n[[loads]]\ncount = 16\nfootprint = \"1 KiB\"\n"
    ));
    let lds = global_loads_of_cta(&k, 0, 0, k.stream_bases()[0], 1024);
    assert_eq!(lds[0].addrs()[0], lds[1].addrs()[0]);
    // a step is for `stream` only, a multiple of 32 B, at most 1 GiB
    for (pat, step, msg) in [
        ("stream", "\"48 B\"", "multiple of 32 B"),
        ("stream", "\"2 GiB\"", "at most 1 GiB"),
        ("random", "\"64 B\"", "only pattern \"stream\" takes a step"),
    ] {
        let e = spec_err(&format!(
            "{HEAD}\n[[loads]]\ncount = 1\npattern = \"{pat}\"\nfootprint = \"1 MiB\"\nstep = {step}\n"
        ));
        assert!(e.contains("step") && e.contains(msg), "{e}");
    }

    // strided: lanes `stride` apart, a thread walks along its row
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 3\n[[loads]]\ncount = 1\npattern = \"strided\"\nstride = 4096\n"
    ));
    let lds = global_loads_of(&k, k.stream_bases()[0], 1);
    for d in &lds {
        assert!(d.addrs().windows(2).all(|p| p[1] - p[0] == 4096));
        assert_eq!(sectors(d), 32);
    }
    assert_eq!(lds[1].addrs()[0] - lds[0].addrs()[0], 4);

    // reuse: every CTA stays in its working set and sweeps it completely
    let k = synth(&format!(
        "{HEAD}\n[body]\ntrips = 8\n[[loads]]\ncount = 4\npattern = \"reuse\"\nworking_set = \"2 KiB\"\n"
    ));
    let base = k.stream_bases()[0];
    for c in 0..k.num_ctas() {
        let mut lines_seen = BTreeSet::new();
        let mut accesses = 0;
        for w in 0..2 {
            for d in warp(&k, c, w).iter().filter(|d| d.n > 0) {
                accesses += 1;
                for &a in d.addrs() {
                    let lo = base + c as u64 * 2048;
                    assert!(a >= lo && a < lo + 2048, "CTA {c} left its working set");
                    lines_seen.insert(a / 128);
                }
            }
        }
        assert_eq!(lines_seen.len(), 16);
        assert!(accesses > 16, "the working set is re-read");
    }

    // tiled: A tiles shared along a grid row, B tiles along a column
    let k = synth(
        "[kernel]\nname = \"t\"\ngrid = [4, 4]\nblock = 64\nregs = 32\n[body]\ntrips = 3\n[[loads]]\ncount = 2\npattern = \"tiled\"\n",
    );
    let loads_of = |c: u32| -> Vec<Vec<u64>> {
        warp(&k, c, 1)
            .iter()
            .filter(|d| stat(&k, d).mem_op() == MemOp::Load)
            .map(|d| d.addrs().to_vec())
            .collect()
    };
    let (c0, c1, c4) = (loads_of(0), loads_of(1), loads_of(4));
    // loads alternate A, B per trip
    assert_eq!(c0[0], c1[0], "same row: same A tile");
    assert_ne!(c0[1], c1[1], "different column: different B tile");
    assert_eq!(c0[1], c4[1], "same column: same B tile");
    assert_ne!(c0[0], c4[0], "different row: different A tile");
    assert_ne!(c0[0], c0[2], "a new tile every trip");
}

#[test]
fn atomics_shared_memory_and_partial_warps() {
    let t = "[kernel]\nname = \"t\"\ngrid = 2\nblock = 40\nregs = 16\nsmem = 1024\n[body]\ntrips = 2\n[atomics]\ncount = 2\ntargets = 4\n[shared]\nloads = 1\nstores = 1\nbank_conflicts = 2\n";
    let k = synth(t);
    assert_eq!(k.cta(0).warps, 2);
    let v1 = warp(&k, 1, 1);
    assert!(v1.iter().all(|d| d.mask == 0xff), "8-thread last warp");
    let v0 = warp(&k, 0, 0);
    let mut words = BTreeSet::new();
    for d in &v0 {
        let s = stat(&k, d);
        assert_eq!(d.n as u32, if s.is_mem() { d.mask.count_ones() } else { 0 });
        match (s.space(), s.mem_op()) {
            (MemSpace::Global, MemOp::Reduction) => words.extend(d.addrs().iter().copied()),
            (MemSpace::Shared, _) => {
                assert!(d.addrs().iter().all(|&a| a < 1024 && a % 4 == 0));
                assert!(d
                    .addrs()
                    .windows(2)
                    .all(|p| p[1] - p[0] == 8 || p[1] < p[0]));
            }
            _ => {}
        }
    }
    assert!(words.len() <= 4 && words.len() >= 2);
    // broadcast and warp-aggregated atomics
    let t = t
        .replace("bank_conflicts = 2", "bank_conflicts = 0")
        .replace("targets = 4", "targets = 4\naggregated = true");
    let k = synth(&t);
    for d in warp(&k, 0, 0) {
        let s = stat(&k, &d);
        if s.space() == MemSpace::Shared {
            assert!(d.addrs().iter().all(|&a| a == d.addrs()[0]));
        }
        if s.mem_op() == MemOp::Reduction {
            assert_eq!((d.mask, d.n), (1, 1));
        }
    }
}

#[test]
fn divergence_gives_partial_masks_in_the_region_only() {
    let t = format!(
        "{HEAD}\n[body]\ntrips = 50\nfp32 = 8\n[[loads]]\ncount = 2\n[[stores]]\ncount = 2\n[divergence]\nfraction = 0.5\nactive = 0.25\n"
    );
    let k = synth(&t);
    let (mut partial, mut lanes, mut full) = (0u64, 0u64, 0u64);
    for c in 0..k.num_ctas() {
        for w in 0..2 {
            for d in warp(&k, c, w) {
                let s = stat(&k, &d);
                if s.is_mem() {
                    assert_eq!(d.n as u32, d.mask.count_ones());
                }
                if d.mask == u32::MAX {
                    full += 1;
                } else {
                    assert_ne!(d.mask, 0);
                    assert!(!s.has(flags::BARRIER) && s.unit() != Unit::Branch);
                    partial += 1;
                    lanes += d.mask.count_ones() as u64;
                }
            }
        }
    }
    // 12 work instructions per trip (2 loads, 8 FFMA, 2 stores), the last 6 in the region
    assert_eq!(partial, 4 * 2 * 50 * 6);
    let mean = lanes as f64 / partial as f64;
    assert!((6.5..9.5).contains(&mean), "mean active lanes {mean}");
    assert!(full > partial);
    // rate = 0: the branch never diverges
    let k = synth(&t.replace("active = 0.25", "active = 0.25\nrate = 0.0"));
    assert!(warp(&k, 0, 0).iter().all(|d| d.mask == u32::MAX));
}

#[test]
fn in_place_store_writes_back_the_sectors_its_load_read() {
    let stream = |in_place: bool| {
        format!(
            "{HEAD}\n[body]\ntrips = 3\nint = 2\n\n[[loads]]\ncount = 1\npattern = \"random\"\nwidth = 8\nfootprint = \"64 MiB\"\nbuffer = \"t\"\n\n[[stores]]\ncount = 1\npattern = \"random\"\nwidth = 8\nfootprint = \"64 MiB\"\nbuffer = \"t\"\nin_place = {in_place}\n"
        )
    };
    let pairs = |text: &str| -> Vec<(Vec<u64>, Vec<u64>)> {
        let k = synth(text);
        let mut out = Vec::new();
        for c in 0..k.num_ctas() {
            for w in 0..k.cta(c).warps {
                let mut ld: Option<Vec<u64>> = None;
                for d in warp(&k, c, w) {
                    let s = stat(&k, &d);
                    if s.space() != MemSpace::Global {
                        continue;
                    }
                    match s.mem_op() {
                        MemOp::Load => ld = Some(d.addrs().to_vec()),
                        MemOp::Store => out.push((ld.take().unwrap(), d.addrs().to_vec())),
                        _ => {}
                    }
                }
            }
        }
        out
    };
    let same = pairs(&stream(true));
    assert_eq!(same.len(), 4 * 2 * 3);
    assert!(same.iter().all(|(l, s)| l == s && l.len() == 32));
    // without it the store draws its own sectors
    let own = pairs(&stream(false));
    assert_eq!(own.len(), same.len());
    assert!(own.iter().all(|(l, s)| l != s));
    // the load it writes back must exist and match
    for (bad, want) in [
        (
            stream(true).replace("buffer = \"t\"\nin_place", "buffer = \"u\"\nin_place"),
            "same `buffer`",
        ),
        (
            stream(true).replace(
                "footprint = \"64 MiB\"\nbuffer = \"t\"\nin_place",
                "footprint = \"32 MiB\"\nbuffer = \"t\"\nin_place",
            ),
            "same count",
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\nin_place = true\n"),
            "only stores",
        ),
        (
            format!("{HEAD}\n[[stores]]\ncount = 1\nbuffer = \"t\"\nin_place = true\n"),
            "only a \"random\" store",
        ),
    ] {
        let e = spec_err(&bad);
        assert!(e.contains("in_place") && e.contains(want), "{e}");
    }
}
