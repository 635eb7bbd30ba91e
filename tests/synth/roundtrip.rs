//! Text export through the Accel-Sim parser, serde round trips of specs, and property tests
//! over random specs.

use super::*;

#[test]
fn text_export_round_trips_through_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    let k = synth(EVERYTHING);
    let out = dir.path().join("everything");
    gpumodel::trace::text::write_app(
        &[&k as &dyn KernelSource],
        &[gpumodel::trace::source::Command::Kernel(0)],
        &out,
    )
    .unwrap();
    let app = gpumodel::trace::app::open_app(&out, &ParseOptions::default()).unwrap();
    let back = decode(app.kernels[0].as_ref());
    let orig = decode(&k);
    assert_eq!(back.info.grid, orig.info.grid);
    assert_eq!(back.info.block, orig.info.block);
    assert_eq!(back.info.nregs, orig.info.nregs);
    assert_eq!(back.info.shmem, orig.info.shmem);
    assert_eq!(back.ctas.len(), orig.ctas.len());
    let key = |m: &MemKernel, d: &DynInst| {
        let s = &m.statics.insts[d.sidx as usize];
        (
            s.pc,
            m.statics.opcode_name(s).to_string(),
            s.dst,
            s.srcs().to_vec(),
            d.mask,
            d.addrs().to_vec(),
        )
    };
    for (a, b) in orig.ctas.iter().zip(&back.ctas) {
        assert_eq!(a.id, b.id);
        for (wa, wb) in a.warps.iter().zip(&b.warps) {
            assert_eq!(wa.len(), wb.len());
            for (x, y) in wa.iter().zip(wb) {
                assert_eq!(key(&orig, x), key(&back, y));
            }
        }
    }
}

#[test]
fn spec_round_trips_through_serde() {
    let k = synth(EVERYTHING);
    let text = toml::to_string(k.spec()).unwrap();
    let again = synth(&text);
    assert_eq!(k.spec(), again.spec());
    assert!(decode(&k) == decode(&again));
}

fn opt<T: std::fmt::Display>(key: &str, v: &Option<T>) -> String {
    v.as_ref()
        .map_or(String::new(), |v| format!("{key} = {v}\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any combination of values, sensible or absurd, gives a kernel or an input error —
    /// never a panic (overflow included) — and a generated warp has its declared length.
    #[test]
    fn arbitrary_specs_never_panic(
        grid in prop_oneof![Just(0i64), 1i64..5, Just(2147483647), Just(1 << 40), Just(-1)],
        grid_y in prop::option::of(prop_oneof![Just(0i64), 1i64..4, Just(65536)]),
        block in prop_oneof![Just(0i64), 1i64..100, Just(1024), Just(1025)],
        regs in 0i64..300,
        smem in prop::option::of(prop_oneof![Just("0".to_string()), Just("\"4 KiB\"".to_string()), Just("300000".to_string()), Just("\"1.5 B\"".to_string())]),
        trips in prop_oneof![Just("0".to_string()), (1u32..4).prop_map(|t| t.to_string()), Just("100000000".to_string()), Just("[3, 1]".to_string()), Just("[1, 5]".to_string()), Just("9223372036854775807".to_string())],
        ilp in 0u32..40,
        fp32 in prop_oneof![0u32..20, Just(100_000), Just(100_001)],
        int in 0u32..6,
        barriers in prop_oneof![0u32..4, Just(1025)],
        pattern in prop::sample::select(vec!["stream", "strided", "random", "tiled", "reuse", "x"]),
        count in prop_oneof![0u32..4, Just(100_000)],
        width in prop::sample::select(vec![0u32, 1, 2, 3, 4, 8, 16, 32]),
        spr in prop::option::of(prop::sample::select(vec![0u32, 1, 2, 4, 8, 16, 32, 64])),
        footprint in prop::option::of(prop_oneof![0i64..300, Just(1i64 << 40), Just(i64::MAX), Just(-5)]),
        stride in prop::option::of(prop_oneof![0i64..64, Just(1i64 << 31)]),
        ws in prop::option::of(prop_oneof![0i64..2048, Just(1i64 << 40)]),
        dependent in any::<bool>(),
        stores in 0u32..3,
        shared in prop::option::of((0u32..3, 0u32..3, prop::sample::select(vec![0u32, 4, 8, 16]), prop::sample::select(vec![0u32, 1, 3, 32]))),
        atomics in prop::option::of((0u32..3, prop_oneof![Just(0u32), 1u32..10, Just(1 << 29)], any::<bool>())),
        div in prop::option::of((-0.5f64..1.5, -0.5f64..1.5, -0.5f64..1.5)),
        version in prop::sample::select(vec![0u32, 35, 61, 70, 75, 86, 90, 200]),
    ) {
        let mut t = String::from("[kernel]\nname = \"p\"\n");
        match grid_y {
            Some(y) => t += &format!("grid = [{grid}, {y}]\n"),
            None => t += &format!("grid = {grid}\n"),
        }
        t += &format!("block = {block}\nregs = {regs}\nbinary_version = {version}\n");
        t += &opt("smem", &smem);
        t += &format!("[body]\ntrips = {trips}\nilp = {ilp}\nfp32 = {fp32}\nint = {int}\nbarriers = {barriers}\ntensor = 1\nsfu = 1\n");
        t += &format!("[[loads]]\ncount = {count}\npattern = \"{pattern}\"\nwidth = {width}\ndependent = {dependent}\n");
        t += &opt("sectors_per_request", &spr);
        t += &opt("footprint", &footprint);
        t += &opt("stride", &stride);
        t += &opt("working_set", &ws);
        if stores > 0 {
            t += &format!("[[stores]]\ncount = {stores}\n");
        }
        if let Some((l, s, w, b)) = shared {
            t += &format!("[shared]\nloads = {l}\nstores = {s}\nwidth = {w}\nbank_conflicts = {b}\n");
        }
        if let Some((c, tg, ag)) = atomics {
            t += &format!("[atomics]\ncount = {c}\ntargets = {tg}\naggregated = {ag}\n");
        }
        if let Some((f, a, r)) = div {
            t += &format!("[divergence]\nfraction = {f}\nactive = {a}\nrate = {r}\n");
        }
        match SynthKernel::from_toml_str(&t, Path::new("p.toml")) {
            Err(e) => prop_assert!(e.is_bad_input(), "{e}"),
            Ok(k) => {
                let last = k.num_ctas() - 1;
                let lw = k.cta(last).warps - 1;
                for (c, w) in [(0, 0), (last, lw), (last / 2, 0)] {
                    let mut s = k.warp(c, w);
                    let len = k.warp_len(c, w);
                    prop_assert_eq!(s.len(), len);
                    let mut d = DynInst::default();
                    let mut n = 0u64;
                    while n < 3000 && s.next_inst(&mut d).unwrap() {
                        n += 1;
                        prop_assert!(d.mask != 0);
                        let st = &k.statics().insts[d.sidx as usize];
                        if st.is_mem() {
                            prop_assert_eq!(d.n as u32, d.mask.count_ones());
                        }
                    }
                    prop_assert!(n == len || (n == 3000 && len > 3000));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Valid specs of every shape: each warp generates exactly `warp_len` instructions, every
    /// memory instruction has one address per active lane, aligned to its width, and global
    /// addresses stay inside the stream's buffer.
    #[test]
    fn valid_specs_generate_consistently(
        grid in (1u32..5, 1u32..3),
        block in 1u32..200,
        trips in (1u64..4, 0u64..3),
        per_cta in any::<bool>(),
        ilp in 1u32..6,
        mix in (0u32..5, 0u32..5, 0u32..3, 0u32..3, 0u32..2),
        barriers in 0u32..3,
        loads in prop::collection::vec((1u32..3, 0usize..5, prop::sample::select(vec![1u32, 2, 4, 8, 16]), prop::option::of(prop::sample::select(vec![1u32, 2, 4, 8, 16, 32])), any::<bool>(), any::<bool>()), 0..3),
        stores in prop::collection::vec((1u32..3, prop::sample::select(vec![0usize, 1, 2, 4]), prop::sample::select(vec![4u32, 8, 16])), 0..3),
        shared in prop::option::of((0u32..3, 0u32..3, prop::sample::select(vec![4u32, 8, 16]), prop::sample::select(vec![0u32, 1, 2, 32]))),
        atomics in prop::option::of((1u32..3, 1u32..64, any::<bool>(), any::<bool>())),
        div in prop::option::of((0.0f64..=1.0, 0.01f64..=1.0, 0.0f64..=1.0)),
        seed in 0u64..1000,
        version in prop::sample::select(vec![70u32, 75, 80, 90]),
    ) {
        let patterns = ["stream", "strided", "random", "tiled", "reuse"];
        let mut t = format!(
            "[kernel]\nname = \"v\"\ngrid = [{}, {}]\nblock = {block}\nregs = 32\nsmem = 2048\nseed = {seed}\nbinary_version = {version}\n",
            grid.0, grid.1
        );
        t += &format!(
            "[body]\ntrips = [{}, {}]\ntrip_variation = \"{}\"\nilp = {ilp}\nint = {}\nfp32 = {}\nfp64 = {}\nsfu = {}\ntensor = {}\nbarriers = {barriers}\npre_loads = 1\npost_stores = 1\n",
            trips.0, trips.0 + trips.1, if per_cta { "cta" } else { "warp" }, mix.0, mix.1, mix.2, mix.3, mix.4
        );
        for (count, p, width, spr, dep, wrap) in &loads {
            let pat = patterns[*p];
            t += &format!("[[loads]]\ncount = {count}\npattern = \"{pat}\"\nwidth = {width}\ndependent = {dep}\n");
            if pat != "strided" {
                t += &opt("sectors_per_request", spr);
            }
            match pat {
                "strided" => t += &format!("stride = {}\n", width * 37),
                "random" => t += "footprint = \"64 KiB\"\n",
                "reuse" => t += "working_set = \"2 KiB\"\n",
                _ => {}
            }
            if *wrap && pat != "random" {
                t += "footprint = \"8 KiB\"\n";
            }
        }
        for (count, p, width) in &stores {
            let pat = patterns[*p];
            t += &format!("[[stores]]\ncount = {count}\npattern = \"{pat}\"\nwidth = {width}\n");
            match pat {
                "strided" => t += "stride = 256\n",
                "random" => t += "footprint = \"1 MiB\"\n",
                "reuse" => t += "working_set = \"4 KiB\"\n",
                _ => {}
            }
        }
        if let Some((l, s, w, b)) = shared {
            t += &format!("[shared]\nloads = {l}\nstores = {s}\nwidth = {w}\nbank_conflicts = {b}\n");
        }
        if let Some((c, tg, ag, atom)) = atomics {
            t += &format!("[atomics]\ncount = {c}\ntargets = {tg}\naggregated = {ag}\nop = \"{}\"\n", if atom { "atom" } else { "red" });
        }
        if let Some((f, a, r)) = div {
            t += &format!("[divergence]\nfraction = {f}\nactive = {a}\nrate = {r}\n");
        }
        let k = SynthKernel::from_toml_str(&t, Path::new("v.toml")).map_err(|e| TestCaseError::fail(format!("{e}\n{t}")))?;
        let bases = k.stream_bases();
        let lo = *bases.iter().min().unwrap_or(&0x7f20_0000_0000);
        let mut total = 0;
        for c in 0..k.num_ctas() {
            for w in 0..k.cta(c).warps {
                let v = warp(&k, c, w);
                prop_assert_eq!(v.len() as u64, k.warp_len(c, w));
                total += v.len() as u64;
                for d in &v {
                    let s = stat(&k, d);
                    prop_assert!(d.mask != 0);
                    if !s.is_mem() {
                        prop_assert_eq!(d.n, 0);
                        continue;
                    }
                    prop_assert_eq!(d.n as u32, d.mask.count_ones());
                    for &a in d.addrs() {
                        prop_assert_eq!(a % s.width as u64, 0, "{:?} {}", s, a);
                        match s.space() {
                            MemSpace::Shared => prop_assert!(a < 2048),
                            _ => prop_assert!(a >= lo.min(0x7f20_0000_0000) && a < 0x7f20_0000_0000 + (64u64 << 30)),
                        }
                    }
                }
            }
        }
        prop_assert_eq!(k.total_warp_insts(), total);
    }
}
