//! Synthetic kernel specs: errors naming file, line and key; deterministic construction;
//! closed-form lengths; the instruction mix and opcodes of the generated streams.

use super::*;

#[test]
fn spec_errors_name_file_line_and_key() {
    let cases: Vec<(String, &[&str])> = vec![
        (
            format!("{HEAD}\n[body]\nfp23 = 3\n"),
            &["bad.toml:8:", "[body]", "fp23"],
        ),
        (
            format!("{HEAD}\n[body]\ntrips = 0\n"),
            &["bad.toml:8:", "body.trips", "at least 1"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\npattern = \"random\"\n"),
            &["bad.toml:7:", "loads.footprint", "random"],
        ),
        (
            format!("{HEAD}binary_version = 61\n[body]\ntensor = 2\n"),
            &["bad.toml:8:", "body.tensor", "pascal"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\nfootprint = \"12 parsecs\"\n"),
            &["bad.toml:9:", "parsecs"],
        ),
        (
            format!("{HEAD}\n[shared]\nloads = 2\n"),
            &["bad.toml:", "kernel.smem"],
        ),
        (
            "[kernel]\nname = \"t\"\ngrid = 0\nblock = 64\nregs = 16\n".to_string(),
            &["bad.toml:3:", "kernel.grid"],
        ),
        (
            "[kernel]\nname = \"t\"\ngrid = 4\nblock = 64\nregs = 300\n".to_string(),
            &["bad.toml:5:", "kernel.regs", "1..=255"],
        ),
        (
            "[kernel]\nname = \"t\"\ngrid = 4\nblock = 2048\nregs = 16\n".to_string(),
            &["bad.toml:4:", "kernel.block", "1024"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\n\n[[loads]]\ncount = 0\n"),
            &["bad.toml:11:", "loads[1].count"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\nwidth = 3\n"),
            &["bad.toml:9:", "loads.width"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\npattern = \"strided\"\n"),
            &["loads.stride", "strided"],
        ),
        (
            format!("{HEAD}\n[[loads]]\ncount = 1\npattern = \"zigzag\"\n"),
            &["bad.toml:9:", "zigzag", "stream"],
        ),
        (
            format!("{HEAD}\n[[stores]]\ncount = 1\npattern = \"tiled\"\n"),
            &["bad.toml:9:", "stores.pattern"],
        ),
        (
            format!("{HEAD}\n[divergence]\nactive = 0.0\n"),
            &["bad.toml:8:", "divergence.active"],
        ),
        (
            format!("{HEAD}binary_version = 12\n"),
            &["bad.toml:6:", "kernel.binary_version"],
        ),
        (
            format!("{HEAD}\n[body]\ntrips = [9, 3]\n"),
            &["bad.toml:8:", "body.trips", "max below min"],
        ),
        (
            format!("{HEAD}\n[body]\nint = -4\n"),
            &["bad.toml:8:", "[body]"],
        ),
        ("[kernel\nname = 1\n".to_string(), &["bad.toml:1:"]),
        ("[body]\nint = 2\n".to_string(), &["bad.toml", "kernel"]),
    ];
    for (text, want) in cases {
        let e = spec_err(&text);
        for w in want {
            assert!(
                e.to_lowercase().contains(&w.to_lowercase()),
                "error {e:?} should mention {w:?} for spec:\n{text}"
            );
        }
    }
}

#[test]
fn spec_file_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.toml");
    let e = SynthKernel::from_file(&missing).unwrap_err();
    assert!(e.to_string().contains("nope.toml"), "{e}");
    let bin = dir.path().join("bin.toml");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let e = SynthKernel::from_file(&bin).unwrap_err();
    assert!(
        e.is_bad_input() && e.to_string().contains("bin.toml"),
        "{e}"
    );
}

#[test]
fn example_specs_build_and_export() {
    for p in examples() {
        let k = SynthKernel::from_file(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(k.total_warp_insts() > 0);
        assert!(
            !k.spec().kernel.cite.is_empty(),
            "{} has no cite",
            p.display()
        );
    }
}

#[test]
fn construction_is_deterministic() {
    for text in [EVERYTHING.to_string()].into_iter().chain(
        examples()
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap()),
    ) {
        let a = decode(&synth(&text));
        let b = decode(&synth(&text));
        assert!(a == b, "two constructions differ");
    }
    // and the seed matters
    let a = decode(&synth(EVERYTHING));
    let b = decode(&synth(&EVERYTHING.replace("seed = 11", "seed = 12")));
    assert!(a.ctas != b.ctas);
}

#[test]
fn warps_generate_independently_in_any_order() {
    let k = synth(EVERYTHING);
    let all = decode(&k);
    for c in (0..k.num_ctas()).rev() {
        for w in (0..k.cta(c).warps).rev() {
            assert!(warp(&k, c, w) == all.ctas[c as usize].warps[w as usize]);
        }
    }
}

#[test]
fn warp_len_equals_generated_count() {
    let varied = EVERYTHING.replace("trips = 5", "trips = [2, 9]");
    let per_cta = varied.replace("[body]", "[body]\ntrip_variation = \"cta\"");
    let mut texts = vec![EVERYTHING.to_string(), varied, per_cta.clone()];
    texts.extend(
        examples()
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap()),
    );
    for text in &texts {
        let k = synth(text);
        let mut total = 0;
        for c in 0..k.num_ctas() {
            for w in 0..k.cta(c).warps {
                let s = k.warp(c, w);
                let n = warp(&k, c, w).len() as u64;
                assert_eq!(k.warp_len(c, w), n);
                assert_eq!(s.len(), n);
                total += n;
            }
        }
        assert_eq!(k.total_warp_insts(), total);
    }
    // ranges really vary, within bounds; per-CTA draws agree inside a CTA
    let k = synth(&EVERYTHING.replace("trips = 5", "trips = [2, 9]"));
    let trips: BTreeSet<u64> = (0..k.num_ctas())
        .flat_map(|c| (0..k.cta(c).warps).map(move |w| (c, w)))
        .map(|(c, w)| k.trips(c, w))
        .collect();
    assert!(
        trips.len() > 2 && trips.iter().all(|t| (2..=9).contains(t)),
        "{trips:?}"
    );
    let k = synth(&per_cta);
    for c in 0..k.num_ctas() {
        assert_eq!(k.trips(c, 0), k.trips(c, 2));
    }
}

#[derive(Default, Debug, PartialEq, Eq, Clone)]
struct Mix {
    unit: HashMap<Unit, u64>,
    mem: HashMap<(MemSpace, MemOp), u64>,
    barriers: u64,
    exits: u64,
}

fn mix_of_warp(k: &dyn KernelSource, c: u32, w: u32) -> Mix {
    let mut m = Mix::default();
    for d in warp(k, c, w) {
        let s = stat(k, &d);
        if s.has(flags::BARRIER) {
            m.barriers += 1;
        } else if s.has(flags::EXIT) {
            m.exits += 1;
        } else if s.is_mem() {
            *m.mem.entry((s.space(), s.mem_op())).or_default() += 1;
        } else {
            *m.unit.entry(s.unit()).or_default() += 1;
        }
    }
    m
}

#[test]
fn unit_counts_match_the_spec_mix() {
    let k5 = synth(&with_trips(EVERYTHING, 5));
    let k6 = synth(&with_trips(EVERYTHING, 6));
    let (m5, m6) = (mix_of_warp(&k5, 0, 1), mix_of_warp(&k6, 0, 1));
    let per_trip =
        |u: Unit| m6.unit.get(&u).copied().unwrap_or(0) - m5.unit.get(&u).copied().unwrap_or(0);
    let mem_trip = |s, o| {
        m6.mem.get(&(s, o)).copied().unwrap_or(0) - m5.mem.get(&(s, o)).copied().unwrap_or(0)
    };
    // per loop trip: exactly the spec's counts (+ 2 int and 1 branch of loop control, + 1
    // branch entering the divergent region)
    assert_eq!(per_trip(Unit::Fp32), 11);
    assert_eq!(per_trip(Unit::Fp64), 2);
    assert_eq!(per_trip(Unit::Sfu), 3);
    assert_eq!(per_trip(Unit::Tensor), 1);
    assert_eq!(per_trip(Unit::Int), 7 + 2);
    assert_eq!(per_trip(Unit::Branch), 2);
    assert_eq!(mem_trip(MemSpace::Global, MemOp::Load), 3);
    assert_eq!(mem_trip(MemSpace::Global, MemOp::Store), 3);
    assert_eq!(mem_trip(MemSpace::Global, MemOp::Reduction), 2);
    assert_eq!(mem_trip(MemSpace::Shared, MemOp::Load), 4);
    assert_eq!(mem_trip(MemSpace::Shared, MemOp::Store), 1);
    assert_eq!(m6.barriers - m5.barriers, 2);
    // whole warp: the loop's counts times the trips, plus pre-loads and post-stores
    assert_eq!(m5.unit[&Unit::Fp32], 11 * 5);
    assert_eq!(m5.unit[&Unit::Sfu], 3 * 5);
    assert_eq!(m5.mem[&(MemSpace::Global, MemOp::Load)], 3 * 5 + 1);
    assert_eq!(m5.mem[&(MemSpace::Global, MemOp::Store)], 3 * 5 + 2);
    assert_eq!(m5.barriers, 2 * 5);
    assert_eq!(m5.exits, 1);
    // the same for every warp of the kernel
    let total_fp32: u64 = (0..k5.num_ctas())
        .flat_map(|c| (0..3).map(move |w| (c, w)))
        .map(|(c, w)| mix_of_warp(&k5, c, w).unit[&Unit::Fp32])
        .sum();
    assert_eq!(total_fp32, 11 * 5 * 6 * 3);
    // atom instead of red
    let k = synth(&EVERYTHING.replace(
        "[atomics]\ncount = 2",
        "[atomics]\ncount = 2\nop = \"atom\"",
    ));
    assert_eq!(
        mix_of_warp(&k, 0, 0).mem[&(MemSpace::Global, MemOp::Atomic)],
        2 * 5
    );
}

#[test]
fn every_opcode_classifies_for_its_isa() {
    let check = |k: &SynthKernel, gen: IsaGen| {
        let st = k.statics();
        let mut pcs = BTreeSet::new();
        for s in &st.insts {
            let name = st.opcode_name(s);
            let c = classify(name, gen).unwrap_or_else(|| panic!("{name} is not a {gen:?} opcode"));
            assert_eq!(c.unit as u8, s.unit, "{name}");
            assert_eq!(c.space as u8, s.space, "{name}");
            assert_eq!(c.mem_op as u8, s.mem_op, "{name}");
            assert_eq!(s.is_mem(), s.has(flags::HAS_MEM), "{name}");
            assert_eq!(s.pc % 16, 0);
            assert!(pcs.insert(s.pc), "PCs are distinct per static instruction");
        }
    };
    let mut texts = vec![EVERYTHING.to_string()];
    texts.extend(
        examples()
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap()),
    );
    for t in &texts {
        check(&synth(t), IsaGen::Volta);
    }
    for (v, gen) in [
        (75, IsaGen::Turing),
        (80, IsaGen::Ampere),
        (90, IsaGen::Hopper),
    ] {
        let t = EVERYTHING.replace("seed = 11", &format!("seed = 11\nbinary_version = {v}"));
        check(&synth(&t), gen);
    }
    for (v, gen) in [(35, IsaGen::Kepler), (61, IsaGen::Pascal)] {
        let t = EVERYTHING
            .replace("seed = 11", &format!("seed = 11\nbinary_version = {v}"))
            .replace("tensor = 1", "tensor = 0")
            .replace(
                "[atomics]\ncount = 2",
                "[atomics]\ncount = 2\nop = \"atom\"",
            );
        check(&synth(&t), gen);
    }
    // the Volta spellings are the ones of the reference suite
    let k = synth(EVERYTHING);
    let names: BTreeSet<&str> = k.statics().opcodes.iter().map(String::as_str).collect();
    for n in [
        "LDG.E.SYS",
        "STG.E.SYS",
        "FFMA",
        "MUFU.EX2",
        "DFMA",
        "HMMA.884.F32.F32",
        "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
        "LDS.U",
        "STS",
        "BAR.SYNC",
        "IMAD.WIDE",
        "ISETP.GE.AND",
        "BRA",
        "EXIT",
    ] {
        assert!(names.contains(n), "{n} missing from {names:?}");
    }
}

#[test]
fn loop_body_pcs_repeat_every_trip() {
    let k = synth(EVERYTHING);
    let v = warp(&k, 0, 0);
    let pcs: Vec<u32> = v.iter().map(|d| stat(&k, d).pc).collect();
    let p = k.prologue_len() as usize;
    let b = k.body_len() as usize;
    assert_eq!(pcs.len(), p + 5 * b + k.epilogue_len() as usize);
    for t in 1..5 {
        assert_eq!(pcs[p..p + b], pcs[p + t * b..p + (t + 1) * b]);
    }
    let names: Vec<&str> = v
        .iter()
        .map(|d| k.statics().opcode_name(stat(&k, d)))
        .collect();
    assert_eq!(&names[p + b - 3..p + b], ["IADD3", "ISETP.GE.AND", "BRA"]);
    assert_eq!(names[..3], ["MOV", "S2R", "S2R"]);
    assert_eq!(*names.last().unwrap(), "EXIT");
}
