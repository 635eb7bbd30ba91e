//! Static instructions decoded once per kernel into what the issue model needs: the class
//! of operation, the pipeline it occupies and for how long, the result latency, and the
//! scoreboard indices of its source and destination registers; and what one warp's
//! addresses make of a memory instruction.
//!
//! Where to look, in file order: the decoded op (`OpClass`, `Op`); decoding a kernel's
//! static table (`build`, with `reg_index` and `sp_flops`) and renumbering its registers
//! densely (`densify`); register-bank reads for the operand collector (`bank_reads`);
//! global accesses coalesced into sectors and lines (`coalesce`, `same_address_lanes`, the
//! sectors a store writes only in part `partial_sectors`, `coalesce_lanes`,
//! `contiguous_into`); shared-memory bank conflicts (`bank_degree` and
//! its fast paths `strided_degree`, `two_runs_degree`); then the tests.

use smallvec::SmallVec;

use crate::arch::{GpuSpec, UnitKind};
use crate::error::{Error, Result};
use crate::trace::inst::{flags, reg, MemOp, MemSpace, StaticTable, Unit};

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

/// Splits a warp access into (line, sector mask) pairs in first-touch order; returns how
/// many were written to `out`.
pub fn coalesce(
    addrs: &[u64],
    width: u8,
    line_bytes: u64,
    sector_bytes: u64,
    out: &mut Vec<(u64, u8, u32)>,
) {
    out.clear();
    let w = width.max(1) as u64;
    let (lb, sb) = (line_bytes.max(1), sector_bytes.max(1));
    if lb.is_power_of_two()
        && sb.is_power_of_two()
        && contiguous_into(addrs, w, lb.trailing_zeros(), sb.trailing_zeros(), out)
    {
        return;
    }
    coalesce_lanes(addrs, w, lb, sb, out);
}

/// For an atomic or reduction coalesced into `lines` (as [`coalesce`] gives them): per
/// line, the read-modify-writes its update needs in turn at a slice's atomic unit, which
/// updates one sector a cycle (all the words of it that lanes name) and the lanes that name
/// the same word one after another: the sum over the line's sectors of the most lanes with
/// one address in that sector. Written to `out`, one entry per line, at least 1.
#[cold]
#[inline(never)]
pub fn same_address_lanes(
    addrs: &[u64],
    line_bytes: u64,
    sector_bytes: u64,
    lines: &[(u64, u8, u32)],
    out: &mut Vec<u32>,
) {
    out.clear();
    out.resize(lines.len(), 0);
    let mut v: SmallVec<[u64; 32]> = addrs.iter().copied().collect();
    v.sort_unstable();
    let (lb, sb) = (line_bytes.max(1), sector_bytes.max(1));
    // The sector of the previous run of equal addresses, its line's entry and its most.
    let mut cur: Option<(u64, usize, u32)> = None;
    for run in v.chunk_by(|a, b| a == b) {
        let (sector, n) = (run[0] / sb, run.len() as u32);
        match &mut cur {
            Some((s, _, most)) if *s == sector => *most = (*most).max(n),
            _ => {
                if let Some((_, i, most)) = cur {
                    out[i] += most;
                }
                let line = run[0] / lb;
                cur = lines
                    .iter()
                    .position(|e| e.0 == line)
                    .map(|i| (sector, i, n));
            }
        }
    }
    if let Some((_, i, most)) = cur {
        out[i] += most;
    }
    for x in out.iter_mut() {
        *x = (*x).max(1);
    }
}

/// For a store coalesced into `lines` (as [`coalesce`] gives them): per line, the mask of
/// the sectors whose bytes its lanes (each `width` bytes at its address) write only in part.
/// Written to `out`, one entry per line. Sectors of more than 64 bytes are not tracked
/// (0: none of the models has one).
#[cold]
#[inline(never)]
pub fn partial_sectors(
    addrs: &[u64],
    width: u8,
    line_bytes: u64,
    sector_bytes: u64,
    lines: &[(u64, u8, u32)],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.resize(lines.len(), 0);
    let (lb, sb, w) = (line_bytes.max(1), sector_bytes.max(1), width.max(1) as u64);
    if sb > 64 {
        return;
    }
    // (sector, the bytes of it written), in first-touch order.
    let mut cov: SmallVec<[(u64, u64); 32]> = SmallVec::new();
    for &a in addrs {
        let end = a.saturating_add(w - 1);
        let mut b = a;
        loop {
            let sec = b / sb;
            let base = sec * sb;
            let hi = end.min(base.saturating_add(sb - 1));
            let (lo, n) = (b - base, hi - b + 1);
            let bits = if n >= 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << lo
            };
            match cov.iter_mut().rev().find(|e| e.0 == sec) {
                Some(e) => e.1 |= bits,
                None => cov.push((sec, bits)),
            }
            if hi >= end {
                break;
            }
            b = hi + 1;
        }
    }
    let full = if sb >= 64 { u64::MAX } else { (1u64 << sb) - 1 };
    for &(sec, bits) in &cov {
        if bits & full == full {
            continue;
        }
        let (line, idx) = (sec * sb / lb, (sec * sb % lb) / sb);
        if let Some(i) = lines.iter().position(|e| e.0 == line) {
            out[i] |= 1u8 << idx.min(7);
        }
    }
}

/// [`coalesce`] lane by lane, for any access pattern (appends to `out`).
fn coalesce_lanes(addrs: &[u64], w: u64, lb: u64, sb: u64, out: &mut Vec<(u64, u8, u32)>) {
    // Shifts when the sizes are powers of two (always, on real GPUs), divisions otherwise.
    let pow2 = lb.is_power_of_two() && sb.is_power_of_two();
    let ss = sb.trailing_zeros();
    let per_line = lb.trailing_zeros().saturating_sub(ss);
    let sector_of = |a: u64| if pow2 { a >> ss } else { a / sb };
    let split = |sec: u64| {
        if pow2 {
            (sec >> per_line, sec & ((1u64 << per_line) - 1))
        } else {
            (sec * sb / lb, (sec * sb % lb) / sb)
        }
    };
    // The sector the previous lane ended in, and its entry in `out`.
    let mut last: Option<(u64, usize)> = None;
    for &a in addrs {
        // (`w - 1` first: a lane may end at the last byte of the address space; one that
        // would run past it is cut there.)
        let (first, end) = (sector_of(a), sector_of(a.saturating_add(w - 1)));
        // Lanes usually stay within the previous lane's sector: one more lane there.
        if let Some((sec, i)) = last {
            if first == sec && end == sec {
                out[i].2 += 1;
                continue;
            }
        }
        let mut counted = false;
        for sec in first..=end {
            let (line, idx) = split(sec);
            let bit = 1u8 << idx.min(7);
            // Lanes usually continue the line of the previous lane.
            let hit = match out.last() {
                Some(e) if e.0 == line => Some(out.len() - 1),
                _ => out.iter().rposition(|e| e.0 == line),
            };
            let i = match hit {
                Some(i) => {
                    let e = &mut out[i];
                    e.1 |= bit;
                    if !counted {
                        e.2 += 1;
                    }
                    i
                }
                None => {
                    out.push((line, bit, if counted { 0 } else { 1 }));
                    out.len() - 1
                }
            };
            last = Some((sec, i));
            counted = true;
        }
    }
}

/// [`coalesce`] for lanes that access consecutive `w`-byte elements (lane `i` at
/// `addrs[0] + i·w`, the streaming pattern), in closed form: the covered byte range gives
/// the lines and their sector masks, and each lane counts in the line where it starts.
/// Returns false, writing nothing, when the lanes are not such a run. Line and sector sizes
/// are `1 << line_shift` and `1 << sector_shift`.
fn contiguous_into(
    addrs: &[u64],
    w: u64,
    line_shift: u32,
    sector_shift: u32,
    out: &mut Vec<(u64, u8, u32)>,
) -> bool {
    let Some(&a0) = addrs.first() else {
        return false;
    };
    // Most other patterns already differ at the second lane: no pass for them.
    if addrs.get(1).is_some_and(|&a1| a1 != a0.wrapping_add(w)) {
        return false;
    }
    let n = addrs.len() as u64;
    // The last byte must not overflow; below that bound one branch-free pass checks the run.
    let Some(last) = (n * w).checked_sub(1).and_then(|x| a0.checked_add(x)) else {
        return false;
    };
    let mut off = 0u64;
    let mut a = a0;
    for &x in addrs {
        off |= x ^ a;
        a = a.wrapping_add(w);
    }
    if off != 0 {
        return false;
    }
    let per_line = line_shift.saturating_sub(sector_shift);
    let (first_line, last_line) = (a0 >> line_shift, last >> line_shift);
    let mut started = 0u64;
    for line in first_line..=last_line {
        // The run's bytes in this line, inclusive (no `+ 1`: the last line may end at 2^64).
        let lo = (line << line_shift).max(a0);
        let hi = ((line << line_shift) | ((1u64 << line_shift) - 1)).min(last);
        let (s0, s1) = (lo >> sector_shift, hi >> sector_shift);
        let mut mask = 0u8;
        for sec in s0..=s1 {
            mask |= 1u8 << (sec & ((1u64 << per_line) - 1)).min(7);
        }
        // Lanes starting before the end of this line, less those counted in earlier lines.
        let upto = ((hi - a0) / w + 1).min(n);
        out.push((line, mask, (upto - started) as u32));
        started = upto;
    }
    true
}

/// Bank-conflict degree of lanes whose words form an ascending arithmetic progression (the
/// usual shared-memory pattern), in closed form. A broadcast (word stride 0) touches only
/// one lane's `per` consecutive words: at most ⌈per / banks⌉ to a bank. For single-word
/// lanes with word stride `d`, lanes `i` and `j` share a bank iff `(i - j)·d ≡ 0 (mod
/// banks)`, i.e. iff `p` divides `i - j` with `p = banks / gcd(d, banks)`, so a bank serves
/// at most ⌈n / p⌉ distinct words. Wide lanes (`per` words each) at a word stride of at
/// most `per` cover one contiguous run of words. `None` for other patterns (wide lanes with
/// gaps between them, or no progression). A `stride` hint of whole words (see
/// [`bank_degree`]) vouches for the progression without a pass over the lanes.
fn strided_degree(addrs: &[u64], stride: Option<u64>, banks: u64, per: u64) -> Option<u32> {
    let (&a0, &a1) = (addrs.first()?, addrs.get(1)?);
    let (w0, w1) = (a0 / 4, a1 / 4);
    let d = w1.checked_sub(w0)?;
    if per > 1 && d > per {
        return None;
    }
    // Lanes `a0 + i·s` with `s` a multiple of 4 are words `w0 + i·s/4`, and `s/4 == d`.
    if stride.is_none_or(|s| s % 4 != 0) {
        // The last lane's word must not overflow (then no lane past it could match); below
        // that bound the check is one branch-free pass (it vectorises).
        (addrs.len() as u64 - 1).checked_mul(d)?.checked_add(w0)?;
        let mut off = 0u64;
        let mut w = w0;
        for &a in addrs {
            off |= (a / 4) ^ w;
            w = w.wrapping_add(d);
        }
        if off != 0 {
            return None;
        }
    }
    if d == 0 {
        return Some(per.div_ceil(banks) as u32);
    }
    if per > 1 {
        // Wide lanes that touch or overlap (0 < d <= per): together one contiguous run of
        // words, spread over the banks round-robin.
        let words = (addrs.len() as u64 - 1) * d + per;
        return Some(words.div_ceil(banks) as u32);
    }
    let p = if banks.is_power_of_two() {
        // gcd(d, 2^k) = 2^min(tz(d), k): no divisions.
        banks >> d.trailing_zeros().min(banks.trailing_zeros())
    } else {
        let (mut x, mut y) = (d % banks, banks);
        while x != 0 {
            (x, y) = (y % x, x);
        }
        banks / y
    };
    Some((addrs.len() as u64).div_ceil(p) as u32)
}

/// Shared-memory bank-conflict degree: the most distinct 4-byte words any bank serves.
/// `stride` is the producer's hint ([`DynInst::stride`](crate::trace::DynInst::stride)):
/// `Some(s)` when the lanes are known to be `addrs[0] + i·s`, which spares the check.
pub fn bank_degree(addrs: &[u64], stride: Option<u64>, width: u8, banks: u32) -> u32 {
    let b = banks.clamp(1, 64) as u64;
    // Banks are a power of two on every GPU: a mask instead of a division per word.
    let bank_of = |w: u64| {
        if b.is_power_of_two() {
            (w & (b - 1)) as usize
        } else {
            (w % b) as usize
        }
    };
    let per = (width.max(1) as u64).div_ceil(4);
    if let Some(deg) = strided_degree(addrs, stride, b, per) {
        return deg;
    }
    if let Some(deg) = two_runs_degree(addrs, b, per) {
        return deg;
    }
    // Fast path: no two distinct words share a bank (the common, conflict-free case).
    let mut seen = [u64::MAX; 64];
    let mut clash = false;
    'lanes: for &a in addrs {
        for k in 0..per {
            let w = a / 4 + k;
            let slot = &mut seen[bank_of(w)];
            if *slot == u64::MAX {
                *slot = w;
            } else if *slot != w {
                clash = true;
                break 'lanes;
            }
        }
    }
    if !clash {
        return 1;
    }
    // Small conflicts: up to 4 distinct words per bank, tracked per bank.
    let mut words4 = [[u64::MAX; 4]; 64];
    let mut cnt = [0u8; 64];
    let mut deg = 1u32;
    let mut overflow = false;
    'outer: for &a in addrs {
        for k in 0..per {
            let w = a / 4 + k;
            let bi = bank_of(w);
            let n = cnt[bi] as usize;
            if words4[bi][..n].contains(&w) {
                continue;
            }
            if n == 4 {
                overflow = true;
                break 'outer;
            }
            words4[bi][n] = w;
            cnt[bi] += 1;
            deg = deg.max(n as u32 + 1);
        }
    }
    if !overflow {
        return deg;
    }
    // Every word of every lane (up to 32 lanes of up to 64 words: no truncation).
    let mut words: Vec<u64> = Vec::with_capacity(addrs.len() * per as usize);
    for &a in addrs {
        words.extend((0..per).map(|k| a / 4 + k));
    }
    let ws = &mut words[..];
    ws.sort_unstable();
    let mut count = [0u32; 64];
    let mut prev = u64::MAX;
    let mut deg = 1;
    for &w in ws.iter() {
        if w != prev {
            let c = &mut count[bank_of(w)];
            *c += 1;
            deg = deg.max(*c);
            prev = w;
        }
    }
    deg
}

/// Bank-conflict degree of lanes whose words form one or two disjoint contiguous runs, in
/// closed form: a progression of touching or overlapping lanes, possibly wrapped around the
/// end of a window (as the synthetic stream's shared accesses wrap). Within a run each
/// lane's first word is at most `per` words after the previous lane's (and not before it),
/// so the run covers every word from its first lane's to its last lane's end. A run of `L`
/// words puts ⌊L / banks⌋ on each bank and one more on the `L mod banks` banks from its
/// first word's on (cyclically); two runs add up, and the banks with one more of each
/// coincide somewhere iff one of those arcs holds the other's first bank; two runs that
/// share words are their union, one run. `None` for other patterns (more runs).
fn two_runs_degree(addrs: &[u64], banks: u64, per: u64) -> Option<u32> {
    let w0 = addrs.first()? / 4;
    // (first word, end word) of each run; words are below 2^62, so `+ per` cannot overflow.
    let mut runs = [(w0, w0 + per); 2];
    let mut second = false;
    let mut prev = w0;
    for &a in &addrs[1..] {
        let w = a / 4;
        if w >= prev && w - prev <= per {
            runs[second as usize].1 = w + per;
        } else if second {
            return None;
        } else {
            second = true;
            runs[1] = (w, w + per);
        }
        prev = w;
    }
    let [(s0, e0), (s1, e1)] = runs;
    let (l0, l1) = (e0 - s0, e1 - s1);
    if !second {
        return Some(l0.div_ceil(banks) as u32);
    }
    if e0 > s1 && e1 > s0 {
        // Runs that share words (two half-warps reading the same tile row): their union
        // is one run, and a word counts once however many lanes read it.
        let l = e0.max(e1) - s0.min(s1);
        return Some(l.div_ceil(banks) as u32);
    }
    let (m0, m1) = (l0 % banks, l1 % banks);
    let extra = if m0 == 0 || m1 == 0 {
        (m0 + m1 > 0) as u64
    } else {
        let (b0, b1) = (s0 % banks, s1 % banks);
        let meet = (b1 + banks - b0) % banks < m0 || (b0 + banks - b1) % banks < m1;
        1 + meet as u64
    };
    Some((l0 / banks + l1 / banks + extra) as u32)
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

    /// The atomic unit updates a sector's named words in one step and the lanes that
    /// name one word in turn: a line's count sums, over its sectors, the largest group of
    /// equal addresses.
    #[test]
    fn same_address_lanes_counts_per_sector_and_word() {
        let (lb, sb) = (128u64, 32u64);
        let mut lines = Vec::new();
        let mut out = Vec::new();
        let mut count = |addrs: &[u64]| {
            coalesce(addrs, 4, lb, sb, &mut lines);
            same_address_lanes(addrs, lb, sb, &lines, &mut out);
            lines
                .iter()
                .map(|e| e.0)
                .zip(out.iter().copied())
                .collect::<Vec<_>>()
        };
        // 32 lanes on the 32 words of one line: its 4 sectors, one step each.
        let distinct: Vec<u64> = (0..32).map(|l| 0x1000 + 4 * l).collect();
        assert_eq!(count(&distinct), vec![(0x1000 / lb, 4)]);
        // 8 lanes on the 8 words of one sector: one step.
        let sector: Vec<u64> = (0..8).map(|l| 0x1000 + 4 * l).collect();
        assert_eq!(count(&sector), vec![(0x1000 / lb, 1)]);
        // 32 lanes on one word: 32 in turn.
        assert_eq!(count(&[0x2000u64; 32]), vec![(0x2000 / lb, 32)]);
        // Two lines: 3 lanes on one word of the first; on the second, 5 on one word beside
        // two other words of its sector (5) and one lane in another sector (1).
        let mixed: Vec<u64> = [0x3000u64; 3]
            .into_iter()
            .chain([0x3084u64; 5])
            .chain([0x3088, 0x308c, 0x30c0])
            .collect();
        assert_eq!(count(&mixed), vec![(0x3000 / lb, 3), (0x3080 / lb, 6)]);
    }

    /// Bank-conflict degree by brute force: the most distinct words (`per` per lane) that
    /// any bank serves.
    fn count_degree(a: &[u64], per: u64, banks: u64) -> u32 {
        let mut words: Vec<u64> = a
            .iter()
            .flat_map(|x| (0..per).map(move |k| x / 4 + k))
            .collect();
        words.sort_unstable();
        words.dedup();
        let mut n = vec![0u32; banks as usize];
        for w in words {
            n[(w % banks) as usize] += 1;
        }
        n.into_iter().max().unwrap_or(0).max(1)
    }

    /// The closed form for consecutive lanes gives what the lane-by-lane walk gives.
    #[test]
    fn contiguous_runs_coalesce_like_the_lane_walk() {
        let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1du64);
        let mut next = || rng.next_u64();
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        let mut taken = 0;
        for _ in 0..20_000 {
            let w = [1u64, 2, 4, 8, 12, 16, 32][(next() % 7) as usize];
            let n = 1 + next() % 32;
            let a0 = if next() % 16 == 0 {
                u64::MAX - next() % 512
            } else {
                next() % 100_000
            };
            let a: Vec<u64> = (0..n).map(|i| a0.wrapping_add(i * w)).collect();
            let sizes = [(128u64, 32u64), (64, 32), (128, 128), (256, 16)];
            let (line, sector) = sizes[(next() % 4) as usize];
            fast.clear();
            let (ls, ss) = (line.trailing_zeros(), sector.trailing_zeros());
            if contiguous_into(&a, w, ls, ss, &mut fast) {
                slow.clear();
                coalesce_lanes(&a, w, line, sector, &mut slow);
                assert_eq!(
                    fast, slow,
                    "a0 {a0} n {n} w {w} line {line} sector {sector}"
                );
                taken += 1;
            } else {
                assert!(fast.is_empty());
            }
        }
        assert!(taken > 15_000, "closed form taken {taken} times");
    }

    #[test]
    fn coalescing_counts_lines_and_sectors() {
        let mut out = Vec::new();
        let a: Vec<u64> = (0..32).map(|i| 0x1000 + i * 4).collect();
        coalesce(&a, 4, 128, 32, &mut out);
        assert_eq!(out, vec![(0x1000 / 128, 0b1111, 32)]);
        let a: Vec<u64> = (0..32).map(|i| 0x1000 + i * 16).collect();
        coalesce(&a, 16, 128, 32, &mut out);
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|e| e.1 == 0b1111 && e.2 == 8));
        let a: Vec<u64> = (0..32).map(|i| i * 4096).collect();
        coalesce(&a, 4, 128, 32, &mut out);
        assert_eq!(out.len(), 32);
    }

    #[test]
    fn bank_conflicts() {
        let a: Vec<u64> = (0..32).map(|i| i * 4).collect();
        assert_eq!(bank_degree(&a, None, 4, 32), 1);
        let a: Vec<u64> = (0..32).map(|i| i * 128).collect();
        assert_eq!(bank_degree(&a, None, 4, 32), 32);
        let a = vec![64u64; 32];
        assert_eq!(bank_degree(&a, None, 4, 32), 1, "broadcast");
        let a: Vec<u64> = (0..32).map(|i| i * 16).collect();
        assert_eq!(bank_degree(&a, None, 16, 32), 4);
    }

    /// The closed form for strided lanes agrees with counting distinct words per bank.
    #[test]
    fn wide_bank_degree_matches_counting() {
        for banks in [2u64, 4, 16, 32] {
            for width in [8u8, 16, 32, 64] {
                for stride in [0u64, 4, 8, 12, 16, 20, 32, 64, 256] {
                    for (n, base) in [(1u64, 4096), (5, 4096), (32, 4096), (32, 4098)] {
                        let a: Vec<u64> = (0..n).map(|i| base + i * stride).collect();
                        let per = (width as u64).div_ceil(4);
                        assert_eq!(
                            bank_degree(&a, None, width, banks as u32),
                            count_degree(&a, per, banks),
                            "banks {banks} width {width} stride {stride} n {n}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn strided_bank_degree_matches_counting() {
        let count = |a: &[u64], banks: u64| count_degree(a, 1, banks);
        for banks in [16u64, 32, 24] {
            for n in [2usize, 7, 31, 32] {
                for stride in [0u64, 1, 2, 3, 4, 5, 8, 12, 16, 33, 64, 100, 128, 129] {
                    for base in [0u64, 4, 1000, 4096 + 8] {
                        let a: Vec<u64> = (0..n as u64).map(|i| base + i * stride).collect();
                        let want = count(&a, banks);
                        assert_eq!(
                            bank_degree(&a, None, 4, banks as u32),
                            want,
                            "banks {banks} n {n} stride {stride} base {base}"
                        );
                    }
                }
            }
        }
    }

    /// Wrapped progressions, broken runs and hinted progressions agree with counting.
    #[test]
    fn run_bank_degree_matches_counting() {
        let mut rng = crate::testing::XorShift(0x6a09_e667_f3bc_c908u64);
        let mut next = || rng.next_u64();
        for _ in 0..20_000 {
            let width = [4u8, 8, 12, 16, 32][(next() % 5) as usize];
            let per = (width as u64).div_ceil(4);
            let banks = [32u64, 16, 24, 1][(next() % 4) as usize];
            let n = 1 + next() % 32;
            // A window of `size` bytes, lanes `step` apart from `cur`, wrapping.
            let size = 4 * (1 + next() % 2048);
            let step = [0, 4, 8, 12, 16, 32, 64, 128][(next() % 8) as usize] % size;
            let base = 4 * (next() % 4096);
            let mut cur = 4 * (next() % (size / 4));
            let mut a = Vec::new();
            for _ in 0..n {
                a.push(base + cur);
                cur = (cur + step) % size;
            }
            if next() % 4 == 0 {
                // Something off the pattern.
                let i = (next() % n) as usize;
                a[i] = 4 * (next() % 8192) + next() % 4;
            }
            let want = count_degree(&a, per, banks);
            assert_eq!(
                bank_degree(&a, None, width, banks as u32),
                want,
                "{a:?} width {width} banks {banks}"
            );
            let p: Vec<u64> = (0..n).map(|i| base + i * step).collect();
            assert_eq!(
                bank_degree(&p, Some(step), width, banks as u32),
                count_degree(&p, per, banks),
                "{p:?} width {width} banks {banks}"
            );
        }
    }

    /// Two runs of touching lanes that share words (half-warps reading the same or an
    /// overlapping tile row) agree with counting.
    #[test]
    fn overlapping_runs_match_counting() {
        let mut rng = crate::testing::XorShift(0xbb67_ae85_84ca_a73bu64);
        let mut next = || rng.next_u64();
        for _ in 0..20_000 {
            let width = [4u8, 8, 16][(next() % 3) as usize];
            let per = (width as u64).div_ceil(4);
            let banks = [32u64, 16, 24][(next() % 3) as usize];
            // Lanes `step` bytes apart (touching: `step <= width`), the second run starting
            // `back` bytes before the first run's end.
            let step = (width as u64 / 4) * [0u64, 1][(next() % 2) as usize] * 4;
            let n0 = 1 + next() % 31;
            let n1 = 1 + next() % (32 - n0);
            let base = 4 * (next() % 4096);
            let mut a: Vec<u64> = (0..n0).map(|i| base + i * step).collect();
            let end = base + (n0 - 1) * step + width as u64;
            let back = 4 * (1 + next() % ((end - base) / 4));
            a.extend((0..n1).map(|i| end - back + i * step));
            assert_eq!(
                bank_degree(&a, None, width, banks as u32),
                count_degree(&a, per, banks),
                "{a:?} width {width} banks {banks}"
            );
        }
        // The trace's pattern: two half-warps of 16-byte lanes reading the same 256 bytes.
        let a: Vec<u64> = (0..32).map(|i| 0xb00 + (i % 16) * 16).collect();
        assert_eq!(two_runs_degree(&a, 32, 4), Some(2));
        assert_eq!(bank_degree(&a, None, 16, 32), 2);
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
