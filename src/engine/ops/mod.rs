//! Static instructions decoded once per kernel into what the issue model needs: the class
//! of operation, the pipeline it occupies and for how long, the result latency, and the
//! scoreboard indices of its source and destination registers; and what one warp's
//! addresses make of a memory instruction.
//!
//! Where to look, in file order: the decoded op (`OpClass`, `Op`); decoding a kernel's
//! static table (`build`, with `reg_index` and `sp_flops`) and renumbering its registers
//! densely (`densify`); register-bank reads for the operand collector (`bank_reads`); then
//! the tests. What one warp's addresses make of a memory instruction is in the two
//! submodules: `coalesce` (global accesses into sectors and lines, the lanes an atomic
//! serialises, the sectors a store writes only in part) and `smem` (shared-memory bank
//! conflicts).

use crate::arch::{GpuSpec, UnitKind};
use crate::error::{Error, Result};
use crate::trace::inst::{flags, reg, MemOp, MemSpace, StaticTable, Unit};

mod coalesce;
mod smem;

pub use coalesce::{coalesce, partial_sectors, same_address_lanes};
pub use smem::bank_degree;

/// Scoreboard entries per warp: R0–R255, UR0–UR63, P0–P7, UP0–UP7.
pub const NREG: usize = 336;
/// No register.
pub const NONE: u16 = u16::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// Arithmetic/logic/branch/uniform: result after `lat`.
    Alu,
    /// Fixed-latency access not modelled in the hierarchy (constant cache, texture pipe).
    Fixed,
    Load,
    Store,
    /// Global atomic with a return value.
    Atomic,
    /// Global reduction (no return value).
    Reduce,
    SharedLoad,
    SharedStore,
    Barrier,
    Exit,
}

impl OpClass {
    /// Operations that touch state shared between SMs (memory beyond the L1, CTA completion)
    /// and so must be simulated in global time order.
    pub fn is_global(self) -> bool {
        matches!(
            self,
            OpClass::Load | OpClass::Store | OpClass::Atomic | OpClass::Reduce | OpClass::Exit
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub class: OpClass,
    /// `trace::Unit` index (statistics).
    pub unit: u8,
    /// `UnitKind` index of the pipelines it occupies (after `shares`).
    pub pipe: u8,
    pub lat: u32,
    pub init: u32,
    pub srcs: [u16; 6],
    pub nsrc: u8,
    /// Its distinct sources in the register banks (below 256), in source order: what the
    /// operand collector reads, each once ([`bank_reads`]).
    pub reads: [u8; 6],
    pub nreads: u8,
    pub dsts: [u16; 4],
    pub ndst: u8,
    /// The register-bank register of its first destination (below 256), or [`NONE`]: the
    /// bank its result is written back to. (`srcs` and `dsts` are the kernel's dense
    /// scoreboard indices, not register numbers: [`densify`].)
    pub wb_reg: u16,
    /// Scoreboard entries a warp of its kernel needs (the same in every op of a kernel).
    pub sb_len: u16,
    pub width: u8,
    pub bypass_l1: bool,
    /// Single-precision floating-point operations per active lane (nvprof's
    /// `flop_count_sp`: FFMA 2, FADD/FMUL 1, other opcodes 0).
    pub flops: u8,
}

#[cfg(test)]
impl Op {
    /// A test ALU op reading `srcs` and writing `dst` (scoreboard indices as decoding gives
    /// them, before [`densify`]), with latency `lat` and initiation interval `init`.
    pub(crate) fn alu(srcs: &[u16], dst: Option<u16>, lat: u32, init: u32) -> Op {
        let mut s = [NONE; 6];
        s[..srcs.len()].copy_from_slice(srcs);
        let mut dsts = [NONE; 4];
        if let Some(d) = dst {
            dsts[0] = d;
        }
        let (reads, nreads) = bank_reads(srcs);
        Op {
            class: OpClass::Alu,
            unit: 0,
            pipe: 0,
            lat,
            init,
            srcs: s,
            nsrc: srcs.len() as u8,
            reads,
            nreads,
            dsts,
            ndst: dst.is_some() as u8,
            wb_reg: dst.filter(|&d| d < 256).unwrap_or(NONE),
            sb_len: NREG as u16,
            width: 1,
            bypass_l1: false,
            flops: 0,
        }
    }
}

/// FP32 operations per lane of an opcode (by its base name, modifiers dropped).
pub fn sp_flops(opcode: &str) -> u8 {
    match opcode.split('.').next().unwrap_or("") {
        "FFMA" | "FFMA32I" => 2,
        "FADD" | "FADD32I" | "FMUL" | "FMUL32I" => 1,
        _ => 0,
    }
}

/// Scoreboard index of an encoded register, or [`NONE`] for zero registers.
pub fn reg_index(r: u16) -> u16 {
    if reg::is_zero(r) {
        return NONE;
    }
    let n = r & reg::NUM_MASK;
    let (base, lim) = match r & !reg::NUM_MASK {
        reg::KIND_R => (0, 256),
        reg::KIND_UR => (256, 64),
        reg::KIND_P => (320, 8),
        _ => (328, 8),
    };
    if n >= lim {
        NONE
    } else {
        base + n
    }
}

/// Decodes a kernel's static table for `spec`. Fails when the kernel needs a unit the GPU
/// does not have.
pub fn build(statics: &StaticTable, spec: &GpuSpec, kernel: &str) -> Result<Vec<Op>> {
    let pl = spec.sm.pipeline_latency.0 as u32;
    statics
        .insts
        .iter()
        .map(|s| {
            let unit = s.unit();
            let kind = UnitKind::ALL[unit as usize];
            if !spec.units.available(kind) {
                return Err(Error::Usage(format!(
                    "kernel {kernel}: opcode {} needs {} units, which GPU model {} does not have",
                    statics.opcode_name(s),
                    kind,
                    spec.name
                )));
            }
            let pipe = spec.units.pipe_of(kind);
            let fu = spec.units.get(pipe);
            let mut srcs = [NONE; 6];
            let mut nsrc = 0;
            for &r in s.srcs() {
                let i = reg_index(r);
                if i != NONE {
                    srcs[nsrc] = i;
                    nsrc += 1;
                }
            }
            let mut dsts = [NONE; 4];
            let mut ndst = 0;
            if s.has_dst() {
                let d = reg_index(s.dst);
                if d != NONE {
                    let n = (s.dst_regs.max(1) as u16).min(4);
                    let lim = if d < 256 { 256 } else { d + 1 };
                    for k in 0..n {
                        if d + k < lim {
                            dsts[ndst] = d + k;
                            ndst += 1;
                        }
                    }
                }
            }
            let space = s.space();
            let shared = space == MemSpace::Shared;
            let class = if s.has(flags::EXIT) {
                OpClass::Exit
            } else if s.has(flags::BARRIER) {
                OpClass::Barrier
            } else {
                match s.mem_op() {
                    MemOp::None => {
                        if unit == Unit::Tex {
                            OpClass::Fixed
                        } else {
                            OpClass::Alu
                        }
                    }
                    MemOp::Load if shared => OpClass::SharedLoad,
                    MemOp::Load if space == MemSpace::Const => OpClass::Fixed,
                    MemOp::Load => OpClass::Load,
                    MemOp::Store if shared => OpClass::SharedStore,
                    MemOp::Store => OpClass::Store,
                    MemOp::Atomic if shared => OpClass::SharedLoad,
                    MemOp::Atomic => OpClass::Atomic,
                    MemOp::Reduction if shared => OpClass::SharedStore,
                    MemOp::Reduction => OpClass::Reduce,
                }
            };
            let lat = match class {
                OpClass::Fixed if unit != Unit::Tex => spec.l1d.hit_latency.0 as u32,
                _ => fu.latency.0 as u32 + pl,
            };
            let (reads, nreads) = bank_reads(&srcs[..nsrc]);
            let wb_reg = if ndst > 0 && dsts[0] < 256 {
                dsts[0]
            } else {
                NONE
            };
            Ok(Op {
                reads,
                nreads,
                class,
                unit: unit as u8,
                pipe: pipe as u8,
                flops: sp_flops(statics.opcode_name(s)),
                lat,
                init: fu.initiation.0.max(1) as u32,
                srcs,
                nsrc: nsrc as u8,
                dsts,
                ndst: ndst as u8,
                wb_reg,
                sb_len: NREG as u16,
                width: s.width.max(1),
                bypass_l1: s.has(flags::L1_BYPASS) || !spec.l1d.cache_global,
            })
        })
        .collect::<Result<Vec<Op>>>()
        .map(densify)
}

/// Renumbers the scoreboard indices of a kernel's ops densely (the registers its
/// instructions name, in index order, become `0..k`) and sets every op's `sb_len` to `k`:
/// a warp's scoreboard then holds the few registers its kernel uses (a kernel names ~20–60
/// of the 336), not all of them. Only the scoreboard sees these indices; the register
/// banks keep the register numbers (`reads`, `wb_reg`).
pub fn densify(mut ops: Vec<Op>) -> Vec<Op> {
    let mut dense = [NONE; NREG];
    for op in &ops {
        for &r in op.srcs[..op.nsrc as usize]
            .iter()
            .chain(&op.dsts[..op.ndst as usize])
        {
            dense[r as usize] = 0;
        }
    }
    let mut k = 0u16;
    for d in dense.iter_mut().filter(|d| **d == 0) {
        *d = k;
        k += 1;
    }
    for op in &mut ops {
        for r in op.srcs[..op.nsrc as usize].iter_mut() {
            *r = dense[*r as usize];
        }
        for r in op.dsts[..op.ndst as usize].iter_mut() {
            *r = dense[*r as usize];
        }
        op.sb_len = k;
    }
    ops
}

/// The distinct registers of `srcs` below 256 (those in the register banks; uniform and
/// predicate registers are not), in order of first appearance, and their count.
pub fn bank_reads(srcs: &[u16]) -> ([u8; 6], u8) {
    let mut reads = [0u8; 6];
    let mut n = 0;
    for (j, &r) in srcs.iter().enumerate().take(6) {
        if r as usize >= 256 || srcs[..j].contains(&r) {
            continue;
        }
        reads[n] = r as u8;
        n += 1;
    }
    (reads, n as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel's scoreboard holds exactly the registers its ops name, renumbered in index
    /// order; the register banks still see the register numbers.
    #[test]
    fn densify_renumbers_the_named_registers_and_keeps_the_bank_registers() {
        // R7 = R200 + P0 (index 320); R200 = R7; UR3 (index 259) = R7.
        let ops = densify(vec![
            Op::alu(&[200, 320], Some(7), 4, 1),
            Op::alu(&[7], Some(200), 4, 1),
            Op::alu(&[7], Some(259), 4, 1),
        ]);
        // Named: 7, 200, 259, 320 -> 0, 1, 2, 3.
        assert!(ops.iter().all(|o| o.sb_len == 4));
        assert_eq!(&ops[0].srcs[..2], &[1, 3]);
        assert_eq!(ops[0].dsts[0], 0);
        assert_eq!((ops[1].srcs[0], ops[1].dsts[0]), (0, 1));
        assert_eq!(ops[2].dsts[0], 2);
        // Bank reads and write-backs name registers, not scoreboard entries.
        assert_eq!(&ops[0].reads[..ops[0].nreads as usize], &[200]);
        assert_eq!(
            (ops[0].wb_reg, ops[1].wb_reg, ops[2].wb_reg),
            (7, 200, NONE)
        );
    }

    #[test]
    fn register_indices() {
        assert_eq!(reg_index(reg::encode(reg::KIND_R, 5)), 5);
        assert_eq!(reg_index(reg::encode(reg::KIND_R, 255)), NONE);
        assert_eq!(reg_index(reg::encode(reg::KIND_UR, 3)), 259);
        assert_eq!(reg_index(reg::encode(reg::KIND_P, 2)), 322);
        assert_eq!(reg_index(reg::encode(reg::KIND_UP, 1)), 329);
    }
}
