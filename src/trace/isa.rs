//! Opcode → functional unit / memory space / operation, per ISA generation.
//!
//! The category table is data (`isa/opcodes.csv`, Accel-Sim's `*_opcode.h` tables by
//! generation); this file only says how a category maps onto [`Unit`] and how an opcode's
//! base name maps onto a memory space and operation.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::inst::{flags, MemOp, MemSpace, Unit};

/// SASS generations that have their own opcode table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IsaGen {
    Kepler = 0,
    Pascal = 1,
    Volta = 2,
    Turing = 3,
    Ampere = 4,
    Hopper = 5,
}

impl IsaGen {
    /// Table for a `-binary version` header value (`10*major + minor`). Maxwell (5x) uses
    /// the Pascal table, Ada (89) the Ampere one and anything newer than Hopper the Hopper
    /// one. `None` for values no GPU has (0, absurd numbers).
    pub fn from_binary_version(v: u32) -> Option<IsaGen> {
        Some(match v {
            30..=39 => IsaGen::Kepler,
            50..=69 => IsaGen::Pascal,
            70..=74 => IsaGen::Volta,
            75..=79 => IsaGen::Turing,
            80..=89 => IsaGen::Ampere,
            90..=129 => IsaGen::Hopper,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            IsaGen::Kepler => "kepler",
            IsaGen::Pascal => "pascal",
            IsaGen::Volta => "volta",
            IsaGen::Turing => "turing",
            IsaGen::Ampere => "ampere",
            IsaGen::Hopper => "hopper",
        }
    }
}

/// What the model needs to know about an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpClass {
    pub unit: Unit,
    pub space: MemSpace,
    pub mem_op: MemOp,
    pub flags: u8,
}

const CSV: &str = include_str!("isa/opcodes.csv");

type Table = HashMap<&'static str, [Option<&'static str>; 6]>;

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = HashMap::new();
        for line in CSV.lines().skip(1) {
            let mut cols = line.split(',');
            let Some(base) = cols.next() else { continue };
            let mut cats = [None; 6];
            for c in cats.iter_mut() {
                *c = cols.next().filter(|s| !s.is_empty());
            }
            t.insert(base, cats);
        }
        t
    })
}

fn unit_of_category(cat: &str, gen: IsaGen) -> Unit {
    match cat {
        "LOAD_OP" | "STORE_OP" | "MEMORY_BARRIER_OP" | "TMA_OP" | "FENCE_OP" => Unit::Mem,
        "SP_OP" => Unit::Fp32,
        "DP_OP" => Unit::Fp64,
        "SFU_OP" | "ALU_SFU_OP" => Unit::Sfu,
        "SPECIALIZED_UNIT_1_OP" => Unit::Branch,
        "SPECIALIZED_UNIT_2_OP" => Unit::Tex,
        "SPECIALIZED_UNIT_3_OP" => Unit::Tensor,
        "SPECIALIZED_UNIT_4_OP" => Unit::Uniform,
        // Pre-Volta configurations have no separate INT pipe: these run on the SP units.
        _ if matches!(gen, IsaGen::Kepler | IsaGen::Pascal) => Unit::Fp32,
        _ => Unit::Int,
    }
}

/// Classifies a full opcode (with modifiers). `None` when the base is not in the table
/// of that generation.
pub fn classify(opcode: &str, gen: IsaGen) -> Option<OpClass> {
    let base = opcode.split('.').next().unwrap_or(opcode);
    let cat = table().get(base)?[gen as usize]?;
    let mut unit = unit_of_category(cat, gen);
    let (space, mem_op) = match base {
        "LDG" | "LDGSTS" => (MemSpace::Global, MemOp::Load),
        "STG" => (MemSpace::Global, MemOp::Store),
        "LDL" => (MemSpace::Local, MemOp::Load),
        "STL" => (MemSpace::Local, MemOp::Store),
        "LDS" | "LDSM" | "LDSLK" => (MemSpace::Shared, MemOp::Load),
        "STS" | "STSCUL" => (MemSpace::Shared, MemOp::Store),
        "ATOMS" => (MemSpace::Shared, MemOp::Atomic),
        "ATOM" | "ATOMG" => (MemSpace::Global, MemOp::Atomic),
        "RED" => (MemSpace::Global, MemOp::Reduction),
        "LD" => (MemSpace::Generic, MemOp::Load),
        "ST" => (MemSpace::Generic, MemOp::Store),
        "UBLKCP" | "UTMALDG" => (MemSpace::Global, MemOp::Load),
        "UTMASTG" => (MemSpace::Global, MemOp::Store),
        "UBLKRED" | "UTMAREDG" => (MemSpace::Global, MemOp::Reduction),
        _ => (MemSpace::None, MemOp::None),
    };
    if mem_op != MemOp::None {
        unit = Unit::Mem;
    }
    let mut fl = 0;
    match base {
        "BAR" if !opcode.contains(".ARV") => fl |= flags::BARRIER,
        "EXIT" => fl |= flags::EXIT,
        "MEMBAR" => fl |= flags::MEMBAR,
        _ => {}
    }
    let bypass = opcode.contains(".STRONG.GPU")
        || opcode.contains(".BYPASS")
        || (space == MemSpace::Global && matches!(mem_op, MemOp::Atomic | MemOp::Reduction));
    if bypass && mem_op != MemOp::None {
        fl |= flags::L1_BYPASS;
    }
    Some(OpClass {
        unit,
        space,
        mem_op,
        flags: fl,
    })
}

/// Classification used for opcodes missing from the table in lenient mode.
pub fn unknown_as_alu() -> OpClass {
    OpClass {
        unit: Unit::Int,
        space: MemSpace::None,
        mem_op: MemOp::None,
        flags: flags::UNKNOWN_OPCODE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volta_classes() {
        let g = IsaGen::Volta;
        assert_eq!(classify("FFMA", g).unwrap().unit, Unit::Fp32);
        assert_eq!(classify("IMAD.MOV.U32", g).unwrap().unit, Unit::Int);
        assert_eq!(classify("MUFU.EX2", g).unwrap().unit, Unit::Sfu);
        assert_eq!(classify("DFMA", g).unwrap().unit, Unit::Fp64);
        assert_eq!(classify("HMMA.884.F32", g).unwrap().unit, Unit::Tensor);
        assert_eq!(classify("BRA", g).unwrap().unit, Unit::Branch);
        let ld = classify("LDG.E.128.SYS", g).unwrap();
        assert_eq!(
            (ld.unit, ld.space, ld.mem_op),
            (Unit::Mem, MemSpace::Global, MemOp::Load)
        );
        let red = classify("RED.E.ADD.F32.FTZ.RN.STRONG.GPU", g).unwrap();
        assert_eq!(red.mem_op, MemOp::Reduction);
        assert!(red.flags & flags::L1_BYPASS != 0);
        assert!(classify("BAR.SYNC", g).unwrap().flags & flags::BARRIER != 0);
        assert!(classify("S2UR", g).is_none(), "uniform datapath is Turing+");
        assert!(classify("NOTANOP", g).is_none());
    }

    #[test]
    fn generations() {
        assert_eq!(IsaGen::from_binary_version(0), None);
        assert_eq!(IsaGen::from_binary_version(80), Some(IsaGen::Ampere));
        assert_eq!(IsaGen::from_binary_version(90), Some(IsaGen::Hopper));
        assert_eq!(
            classify("S2UR", IsaGen::Ampere).unwrap().unit,
            Unit::Uniform
        );
        assert_eq!(classify("FADD", IsaGen::Kepler).unwrap().unit, Unit::Fp32);
    }
}
