//! Synthetic kernels: spec errors, determinism, closed-form lengths, instruction mix,
//! opcode validity, address patterns, dependency chains and the text export round trip.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use gpumodel::trace::accel::ParseOptions;
use gpumodel::trace::inst::flags;
use gpumodel::trace::isa::{classify, IsaGen};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::{DynInst, KernelSource, MemKernel, MemOp, MemSpace, StaticInst, Unit};
use proptest::prelude::*;

const HEAD: &str = "[kernel]\nname = \"t\"\ngrid = 4\nblock = 64\nregs = 16\n";

fn synth(text: &str) -> SynthKernel {
    SynthKernel::from_toml_str(text, Path::new("t.toml"))
        .unwrap_or_else(|e| panic!("spec should build: {e}\n{text}"))
}

fn spec_err(text: &str) -> String {
    match SynthKernel::from_toml_str(text, Path::new("bad.toml")) {
        Ok(_) => panic!("spec should be rejected:\n{text}"),
        Err(e) => {
            assert!(e.is_bad_input(), "{e}");
            e.to_string()
        }
    }
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "examples in {}", dir.display());
    v
}

/// A spec that uses every feature.
const EVERYTHING: &str = r#"
[kernel]
name = "everything"
cite = "test"
grid = [3, 2]
block = 96
regs = 40
smem = "4 KiB"
seed = 11

[body]
trips = 5
ilp = 3
int = 7
fp32 = 11
fp64 = 2
sfu = 3
tensor = 1
barriers = 2
pre_loads = 1
post_stores = 2

[[loads]]
count = 2

[[loads]]
count = 1
pattern = "random"
footprint = "1 MiB"
dependent = true

[[stores]]
count = 3

[atomics]
count = 2

[shared]
loads = 4
stores = 1

[divergence]
fraction = 0.3
active = 0.5
"#;

fn with_trips(text: &str, trips: u64) -> String {
    text.replace("trips = 5", &format!("trips = {trips}"))
}

fn decode(k: &dyn KernelSource) -> MemKernel {
    MemKernel::from_source(k).unwrap()
}

fn stat<'a>(k: &'a dyn KernelSource, d: &DynInst) -> &'a StaticInst {
    &k.statics().insts[d.sidx as usize]
}

fn sectors(d: &DynInst) -> usize {
    d.addrs()
        .iter()
        .map(|a| a / 32)
        .collect::<BTreeSet<_>>()
        .len()
}

fn lines(d: &DynInst) -> usize {
    d.addrs()
        .iter()
        .map(|a| a / 128)
        .collect::<BTreeSet<_>>()
        .len()
}

/// Every dynamic instruction of warp (c, w).
fn warp(k: &dyn KernelSource, c: u32, w: u32) -> Vec<DynInst> {
    let mut s = k.warp(c, w);
    let mut v = Vec::new();
    let mut d = DynInst::default();
    while s.next_inst(&mut d).unwrap() {
        v.push(d.clone());
    }
    v
}

// ---------------------------------------------------------------------------------------------

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
