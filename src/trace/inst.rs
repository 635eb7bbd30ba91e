//! The decoded instruction model shared by every kernel source.
//!
//! A kernel is a table of *static* instructions (one per distinct PC/opcode/operand
//! combination) plus, for each warp, a *dynamic* stream of `(static index, active mask,
//! per-lane addresses)`. Parsers produce this model, `.gmt` stores it, the synthetic
//! generator emits it and the engine consumes it; nothing downstream sees trace text.

use serde::{Deserialize, Serialize};

/// Functional unit an instruction issues to.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Integer / logic / move (Accel-Sim INTP_OP and ALU_OP on Volta+).
    Int = 0,
    /// Single-precision floating point (SP_OP).
    Fp32 = 1,
    /// Double precision (DP_OP).
    Fp64 = 2,
    /// Special function unit (MUFU).
    Sfu = 3,
    /// Tensor cores (HMMA/IMMA/...).
    Tensor = 4,
    /// Branch / control unit.
    Branch = 5,
    /// Texture unit (fixed latency pipe).
    Tex = 6,
    /// Uniform datapath (Turing+ `U*` instructions).
    Uniform = 7,
    /// Load/store unit: every memory instruction, barriers and fences.
    Mem = 8,
}

impl Unit {
    pub const ALL: [Unit; 9] = [
        Unit::Int,
        Unit::Fp32,
        Unit::Fp64,
        Unit::Sfu,
        Unit::Tensor,
        Unit::Branch,
        Unit::Tex,
        Unit::Uniform,
        Unit::Mem,
    ];
    pub const COUNT: usize = 9;

    pub fn from_u8(v: u8) -> Option<Unit> {
        Unit::ALL.get(v as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Int => "int",
            Unit::Fp32 => "fp32",
            Unit::Fp64 => "fp64",
            Unit::Sfu => "sfu",
            Unit::Tensor => "tensor",
            Unit::Branch => "branch",
            Unit::Tex => "tex",
            Unit::Uniform => "uniform",
            Unit::Mem => "mem",
        }
    }

    pub fn from_name(s: &str) -> Option<Unit> {
        Unit::ALL.iter().copied().find(|u| u.name() == s)
    }
}

/// Memory space addressed by a memory instruction.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemSpace {
    None = 0,
    Global = 1,
    Local = 2,
    Shared = 3,
    Const = 4,
    /// Generic `LD`/`ST`: resolved per access from the kernel's window bases.
    Generic = 5,
}

impl MemSpace {
    pub const ALL: [MemSpace; 6] = [
        MemSpace::None,
        MemSpace::Global,
        MemSpace::Local,
        MemSpace::Shared,
        MemSpace::Const,
        MemSpace::Generic,
    ];
    pub fn from_u8(v: u8) -> Option<MemSpace> {
        MemSpace::ALL.get(v as usize).copied()
    }
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::None => "none",
            MemSpace::Global => "global",
            MemSpace::Local => "local",
            MemSpace::Shared => "shared",
            MemSpace::Const => "const",
            MemSpace::Generic => "generic",
        }
    }
}

/// What a memory instruction does.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemOp {
    None = 0,
    Load = 1,
    Store = 2,
    /// Atomic with a return value (ATOM/ATOMG/ATOMS).
    Atomic = 3,
    /// Reduction without a return value (RED).
    Reduction = 4,
}

impl MemOp {
    pub const ALL: [MemOp; 5] = [
        MemOp::None,
        MemOp::Load,
        MemOp::Store,
        MemOp::Atomic,
        MemOp::Reduction,
    ];
    pub fn from_u8(v: u8) -> Option<MemOp> {
        MemOp::ALL.get(v as usize).copied()
    }
    pub fn name(self) -> &'static str {
        match self {
            MemOp::None => "none",
            MemOp::Load => "load",
            MemOp::Store => "store",
            MemOp::Atomic => "atomic",
            MemOp::Reduction => "reduction",
        }
    }
}

/// Instruction flags (bit set in [`StaticInst::flags`]).
pub mod flags {
    /// CTA-wide barrier (`BAR.SYNC`).
    pub const BARRIER: u8 = 1 << 0;
    /// Warp exit.
    pub const EXIT: u8 = 1 << 1;
    /// Memory fence (`MEMBAR`).
    pub const MEMBAR: u8 = 1 << 2;
    /// Bypasses the L1 (`.STRONG.GPU`, `.BYPASS`, atomics).
    pub const L1_BYPASS: u8 = 1 << 3;
    /// The trace line carried a memory payload (width field non-zero).
    pub const HAS_MEM: u8 = 1 << 4;
    /// Opcode was not in the ISA table and was treated as `Int` (lenient mode).
    pub const UNKNOWN_OPCODE: u8 = 1 << 5;
}

/// Register operand encoding: kind in the top 2 bits, number in the low 14.
pub mod reg {
    pub const KIND_R: u16 = 0;
    pub const KIND_UR: u16 = 1 << 14;
    pub const KIND_P: u16 = 2 << 14;
    pub const KIND_UP: u16 = 3 << 14;
    pub const NUM_MASK: u16 = (1 << 14) - 1;
    /// Unused operand slot.
    pub const NONE: u16 = u16::MAX;

    pub fn encode(kind: u16, num: u16) -> u16 {
        kind | (num & NUM_MASK)
    }

    /// True for the hard-wired zero registers RZ (R255), URZ (UR63) and PT (P7/UP7): they
    /// never carry a dependency.
    pub fn is_zero(r: u16) -> bool {
        if r == NONE {
            return true;
        }
        let n = r & NUM_MASK;
        match r & !NUM_MASK {
            KIND_R => n == 255,
            KIND_UR => n == 63,
            _ => n == 7,
        }
    }

    /// Text form as written in Accel-Sim traces (`R12`, `UR4`, `P0`, `UP1`).
    pub fn to_text(r: u16) -> String {
        let n = r & NUM_MASK;
        match r & !NUM_MASK {
            KIND_R => format!("R{n}"),
            KIND_UR => format!("UR{n}"),
            KIND_P => format!("P{n}"),
            _ => format!("UP{n}"),
        }
    }
}

/// Maximum number of source registers kept per instruction.
pub const MAX_SRC: usize = 6;

/// One static instruction: everything about an instruction that does not change between
/// its dynamic executions. Fixed 40-byte layout so `.gmt` can store a table of them and
/// read it back zero-copy.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StaticInst {
    /// Function-relative byte offset.
    pub pc: u32,
    /// First trailing immediate (0 when the dialect has none).
    pub imm: i32,
    /// Second trailing immediate (late-v5 / v6 dialects).
    pub imm2: i32,
    /// Index into the kernel's opcode-name table.
    pub opcode: u16,
    /// Destination register or [`reg::NONE`].
    pub dst: u16,
    /// Source registers; unused slots hold [`reg::NONE`].
    pub src: [u16; MAX_SRC],
    pub unit: u8,
    pub space: u8,
    pub mem_op: u8,
    /// Bytes accessed per active lane (memory instructions), from the opcode suffix.
    pub width: u8,
    pub flags: u8,
    pub nsrc: u8,
    /// Width of the destination in 32-bit registers (vector loads write several).
    pub dst_regs: u8,
    pub _pad: u8,
}

const _: () = assert!(std::mem::size_of::<StaticInst>() == 36);

impl StaticInst {
    pub fn unit(&self) -> Unit {
        Unit::from_u8(self.unit).unwrap_or(Unit::Int)
    }
    pub fn space(&self) -> MemSpace {
        MemSpace::from_u8(self.space).unwrap_or(MemSpace::None)
    }
    pub fn mem_op(&self) -> MemOp {
        MemOp::from_u8(self.mem_op).unwrap_or(MemOp::None)
    }
    /// True when the instruction accesses memory through the LSU with addresses.
    pub fn is_mem(&self) -> bool {
        self.mem_op != MemOp::None as u8
    }
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    pub fn srcs(&self) -> &[u16] {
        &self.src[..(self.nsrc as usize).min(MAX_SRC)]
    }
    pub fn has_dst(&self) -> bool {
        self.dst != reg::NONE
    }
}

/// A kernel's static instructions and the opcode names they point to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticTable {
    pub insts: Vec<StaticInst>,
    pub opcodes: Vec<String>,
}

impl StaticTable {
    pub fn opcode_name(&self, s: &StaticInst) -> &str {
        self.opcodes
            .get(s.opcode as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// One dynamic warp instruction as the engine sees it. `addrs[..n]` hold the addresses of
/// the active lanes in lane order (empty for non-memory instructions). Laid out in
/// declaration order (`repr(C)`): the fields every instruction reads come before the
/// address array, so a consumer that keeps one inline reads them from one cache line.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct DynInst {
    pub sidx: u32,
    pub mask: u32,
    pub n: u8,
    /// A hint for consumers: `Some(s)` promises `addrs[i] == addrs[0] + i·s` (no
    /// wrap-around) for every `i < n`; `None` promises nothing. A producer that writes
    /// `n >= 2` addresses must set it (the buffer is reused, and a hint left from an
    /// earlier instruction would be wrong); with fewer it holds whatever it holds.
    pub stride: Option<u64>,
    pub addrs: [u64; 32],
}

impl DynInst {
    pub fn addrs(&self) -> &[u64] {
        &self.addrs[..self.n as usize]
    }
}

impl PartialEq for DynInst {
    fn eq(&self, o: &Self) -> bool {
        self.sidx == o.sidx && self.mask == o.mask && self.addrs() == o.addrs()
    }
}
impl Eq for DynInst {}

/// Launch configuration and provenance of one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub name: String,
    pub id: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Shared memory per CTA, bytes.
    pub shmem: u32,
    /// Registers per thread.
    pub nregs: u32,
    /// `10*major + minor` of the SASS (70 Volta, 80 Ampere, 90 Hopper...).
    pub binary_version: u32,
    pub stream_id: u64,
    pub shmem_base: u64,
    pub local_base: u64,
    pub nvbit_version: String,
    pub tracer_version: u32,
    /// Where the kernel came from (file path or synthetic spec name).
    pub origin: String,
}

impl KernelInfo {
    pub fn threads_per_cta(&self) -> u32 {
        self.block[0]
            .saturating_mul(self.block[1])
            .saturating_mul(self.block[2])
    }
    pub fn warps_per_cta(&self) -> u32 {
        self.threads_per_cta().div_ceil(32)
    }
    pub fn grid_ctas(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
}

/// Accel-Sim's opcode-suffix rule for the bytes accessed per lane: the first all-digit
/// token gives bits (`LDG.E.128` → 16), `U<digits>` likewise (`LDG.E.U8` → 1), else 4.
pub fn width_from_opcode(opcode: &str) -> u8 {
    for tok in opcode.split('.').skip(1) {
        let digits = tok.strip_prefix('U').unwrap_or(tok);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(bits) = digits.parse::<u32>() {
                if bits >= 8 && bits % 8 == 0 && bits <= 1024 {
                    return (bits / 8).min(255) as u8;
                }
            }
        }
    }
    4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_rule() {
        assert_eq!(width_from_opcode("LDG.E.128"), 16);
        assert_eq!(width_from_opcode("STG.E.64"), 8);
        assert_eq!(width_from_opcode("LDG.E.U8"), 1);
        assert_eq!(width_from_opcode("LDG.E.U16"), 2);
        assert_eq!(width_from_opcode("LDG.E.S16"), 4);
        assert_eq!(width_from_opcode("LDG.E"), 4);
        assert_eq!(width_from_opcode("RED.E.ADD.F32.FTZ.RN.STRONG.GPU"), 4);
    }

    #[test]
    fn zero_registers() {
        assert!(reg::is_zero(reg::encode(reg::KIND_R, 255)));
        assert!(reg::is_zero(reg::encode(reg::KIND_UR, 63)));
        assert!(!reg::is_zero(reg::encode(reg::KIND_R, 3)));
        assert_eq!(reg::to_text(reg::encode(reg::KIND_UR, 4)), "UR4");
    }
}
