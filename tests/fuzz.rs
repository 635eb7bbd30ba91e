//! Property tests and bounded fuzzing of every parser: arbitrary or mutated input never
//! panics; generated kernels survive text → parse and .gmt round trips unchanged.

mod common;

use proptest::prelude::*;

use gpumodel::trace::accel::body::{parse_chunk, BodyCtx};
use gpumodel::trace::accel::line::{parse_line, Dialect};
use gpumodel::trace::accel::{parse_header, ParseOptions};
use gpumodel::trace::gmt::codec::{Decoder, Encoder};
use gpumodel::trace::inst::{reg, DynInst, KernelInfo, StaticInst, StaticTable};
use gpumodel::trace::isa::{classify, IsaGen};
use gpumodel::trace::source::{Command, MemCta};
use gpumodel::trace::{KernelSource, MemKernel};

/// (pc, opcode, immediate, mask, addresses) of one decoded instruction.
type InstView = (u32, String, i32, u32, Vec<u64>);

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn dialects() -> impl Strategy<Value = Dialect> {
    (any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()).prop_map(
        |(prefix, lineinfo, imms, vals)| Dialect {
            prefix,
            lineinfo,
            imms,
            vals,
        },
    )
}

/// A line-shaped string: tokens from the trace vocabulary plus noise.
fn line_like() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        "[0-9a-f]{1,8}",
        "-?[0-9]{1,6}",
        "R[0-9]{1,3}",
        "UR[0-9]{1,2}",
        "(LDG|STG|FFMA|IMAD|BRA|EXIT)(\\.E)?(\\.64|\\.128|\\.U8)?",
        "0x[0-9a-f]{1,16}",
        "(NoVal|Val|0|1|2|32)",
        ".{0,6}",
    ];
    prop::collection::vec(tok, 0..24).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn line_parser_never_panics(line in line_like(), d in dialects()) {
        let _ = parse_line(line.as_bytes(), &d);
    }

    #[test]
    fn line_parser_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200), d in dialects()) {
        let _ = parse_line(&bytes, &d);
    }

    #[test]
    fn header_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400), keep in 0usize..600) {
        let _ = parse_header(&bytes, std::path::Path::new("fuzz.traceg"));
        let real = std::fs::read(common::real_traces().join("accelsim_v3_bfs_sm80/kernel-1.traceg")).unwrap();
        let mut m = real[..keep.min(real.len())].to_vec();
        m.extend_from_slice(&bytes);
        let _ = parse_header(&m, std::path::Path::new("fuzz.traceg"));
    }

    #[test]
    fn body_parser_never_panics_on_mutations(pos in 0usize..70000, len in 0usize..64, junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let real = std::fs::read(common::real_traces().join("accelsim_v3_bfs_sm80/kernel-1.traceg")).unwrap();
        let body_start = real.windows(9).position(|w| w == b"#BEGIN_TB").unwrap();
        let mut m = real[body_start..].to_vec();
        let p = pos.min(m.len());
        let e = (p + len).min(m.len());
        m.splice(p..e, junk);
        let ctx = BodyCtx { dialect: Dialect::default(), gen: IsaGen::Ampere, lenient: false, grid: [8, 1, 1], warps_per_cta: 16 };
        let _ = parse_chunk(&m, &ctx);
    }

    #[test]
    fn mem_trace_parser_never_panics(lines in prop::collection::vec(line_like(), 0..6), prefix in prop_oneof![Just("MEMTRACE: CTX 0x1 - grid_launch_id 0 - "), Just("MEMTRACE: CTX 0x1 - LAUNCH - "), Just("CTA "), Just("")]) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.log");
        let text: String = lines.iter().map(|l| format!("{prefix}{l}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let _ = gpumodel::trace::nvbit::parse_mem_trace(&p, false);
        let _ = gpumodel::trace::nvbit::parse_counts(&p);
    }

    #[test]
    fn kernelslist_parser_never_panics(lines in prop::collection::vec("(MemcpyHtoD,|kernel|cudaMalloc)[ -~]{0,30}", 0..6)) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kernelslist.g");
        std::fs::write(&p, lines.join("\n")).unwrap();
        let _ = gpumodel::trace::kernelslist::parse_kernelslist(&p);
    }

    #[test]
    fn codec_round_trips(insts in prop::collection::vec((0u32..40, any::<u32>(), any::<u64>(), -70000i64..70000, any::<bool>()), 0..300)) {
        let is_mem = |s: u32| Some(s.is_multiple_of(2));
        let mut enc = Encoder::new();
        let mut buf = Vec::new();
        let mut want = Vec::new();
        for (sidx, mask, base, stride, irregular) in insts {
            let mut d = DynInst { sidx, mask, ..Default::default() };
            if sidx % 2 == 0 {
                d.n = mask.count_ones() as u8;
                for l in 0..d.n as usize {
                    d.addrs[l] = base.wrapping_add((stride * l as i64) as u64) ^ if irregular { (l as u64 * 7919) % 13 } else { 0 };
                }
            }
            enc.push(&mut buf, d.sidx, d.mask, d.addrs());
            want.push(d);
        }
        let mut dec = Decoder::new(&buf, want.len() as u64);
        let mut got = DynInst::default();
        for w in &want {
            prop_assert!(dec.next(&mut got, is_mem).unwrap());
            prop_assert_eq!(&got, w);
        }
        prop_assert!(dec.at_end());
    }

    #[test]
    fn decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300), n in 0u64..100) {
        let mut dec = Decoder::new(&bytes, n);
        let mut d = DynInst::default();
        while let Ok(true) = dec.next(&mut d, |s| (s < 50).then_some(s % 3 == 0)) {}
    }
}

/// Random kernels built from real opcodes.
fn kernels() -> impl Strategy<Value = MemKernel> {
    const OPS: [&str; 8] = [
        "FFMA",
        "IMAD.MOV.U32",
        "LDG.E.SYS",
        "STG.E.64",
        "MUFU.EX2",
        "BRA",
        "LDS.U.128",
        "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
    ];
    let statics = prop::collection::vec(
        (
            0usize..8,
            0u16..40,
            prop::collection::vec(0u16..255, 0..4),
            -5000i32..5000,
        ),
        1..10,
    );
    (
        statics,
        prop::collection::vec(
            prop::collection::vec(
                prop::collection::vec(
                    (
                        any::<prop::sample::Index>(),
                        any::<u32>(),
                        any::<u64>(),
                        -4096i64..4096,
                        any::<bool>(),
                    ),
                    0..30,
                ),
                1..4,
            ),
            1..4,
        ),
    )
        .prop_map(|(st, ctas)| {
            let mut table = StaticTable::default();
            for (i, (op, dst, srcs, imm)) in st.iter().enumerate() {
                let name = OPS[*op];
                let class = classify(name, IsaGen::Volta).unwrap();
                let mut src = [reg::NONE; 6];
                for (k, s) in srcs.iter().enumerate() {
                    src[k] = *s;
                }
                let has_mem = class.mem_op != gpumodel::trace::MemOp::None;
                table.opcodes.push(name.to_string());
                table.insts.push(StaticInst {
                    pc: 16 * i as u32,
                    imm: *imm,
                    imm2: 0,
                    opcode: i as u16,
                    dst: *dst,
                    src,
                    unit: class.unit as u8,
                    space: class.space as u8,
                    mem_op: class.mem_op as u8,
                    width: gpumodel::trace::inst::width_from_opcode(name),
                    flags: class.flags
                        | if has_mem {
                            gpumodel::trace::inst::flags::HAS_MEM
                        } else {
                            0
                        },
                    nsrc: srcs.len() as u8,
                    dst_regs: 0,
                    _pad: 0,
                });
            }
            let n = table.insts.len();
            let ctas = ctas
                .into_iter()
                .enumerate()
                .map(|(c, warps)| MemCta {
                    id: [c as u32, 0, 0],
                    warps: warps
                        .into_iter()
                        .map(|w| {
                            w.into_iter()
                                .map(|(si, mask, base, stride, gather)| {
                                    let sidx = si.index(n) as u32;
                                    let mut d = DynInst {
                                        sidx,
                                        mask,
                                        ..Default::default()
                                    };
                                    if table.insts[sidx as usize].flags
                                        & gpumodel::trace::inst::flags::HAS_MEM
                                        != 0
                                    {
                                        d.n = mask.count_ones() as u8;
                                        for l in 0..d.n as usize {
                                            d.addrs[l] = base
                                                .wrapping_add((stride * l as i64) as u64)
                                                .wrapping_add(if gather {
                                                    (l as u64 * 104729) % 4093
                                                } else {
                                                    0
                                                });
                                        }
                                    }
                                    d
                                })
                                .collect()
                        })
                        .collect(),
                })
                .collect();
            MemKernel {
                info: KernelInfo {
                    name: "k".into(),
                    id: 1,
                    grid: [4, 1, 1],
                    block: [128, 1, 1],
                    nregs: 32,
                    binary_version: 70,
                    ..Default::default()
                },
                statics: table,
                ctas,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Writing a kernel as Accel-Sim text and parsing it back yields the same instructions,
    /// and so does a .gmt round trip.
    #[test]
    fn text_and_gmt_round_trips(k in kernels()) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t");
        gpumodel::trace::text::write_app(&[&k as &dyn KernelSource], &[Command::Kernel(0)], &dir).unwrap();
        let app = gpumodel::trace::app::open_app(&dir, &ParseOptions::default()).unwrap();
        let back = MemKernel::from_source(app.kernels[0].as_ref()).unwrap();
        // The parser interns statics in first-use order; compare decoded instructions by content.
        let view = |m: &MemKernel| -> Vec<Vec<Vec<InstView>>> {
            m.ctas.iter().map(|c| c.warps.iter().map(|w| w.iter().map(|x| {
                let s = &m.statics.insts[x.sidx as usize];
                (s.pc, m.statics.opcode_name(s).to_string(), s.imm, x.mask, x.addrs().to_vec())
            }).collect()).collect()).collect()
        };
        prop_assert_eq!(view(&back), view(&k));
        let gmt = d.path().join("k.gmt");
        gpumodel::trace::app::convert(&dir, &gmt, &ParseOptions::default(), &|_, _, _| {}).unwrap();
        let g = gpumodel::trace::gmt::GmtFile::open(&gmt).unwrap();
        let gk = MemKernel::from_source(&g.kernel(0).unwrap()).unwrap();
        prop_assert_eq!(gk.ctas, back.ctas);
    }
}
