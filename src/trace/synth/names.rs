//! Opcode spellings per ISA generation for the synthetic generator (`IMAD.MOV.U32` vs
//! `MOV`, `LDG.E.SYS` vs `LDG.E`, ...), so generated streams classify under that generation's
//! opcode table.

use crate::trace::isa::IsaGen;

/// Opcode spellings of one ISA generation.
pub(super) struct Names {
    pub(super) int: [&'static str; 4],
    pub(super) iadd: &'static str,
    pub(super) fp32: [&'static str; 8],
    pub(super) fp64: [&'static str; 8],
    pub(super) sfu: [&'static str; 2],
    pub(super) tensor: &'static str,
    pub(super) ldg: &'static str,
    pub(super) stg: &'static str,
    /// Suffix of ordinary global accesses (`.SYS` on Volta).
    pub(super) sys: &'static str,
    pub(super) red: &'static str,
    pub(super) atom: &'static str,
}

pub(super) fn names(gen: IsaGen) -> Names {
    let volta_int = ["IMAD", "IADD3", "LOP3.LUT", "SHF.R.U32.HI"];
    let fp32 = [
        "FFMA", "FFMA", "FFMA", "FADD", "FFMA", "FFMA", "FFMA", "FMUL",
    ];
    let fp64 = [
        "DFMA", "DFMA", "DFMA", "DADD", "DFMA", "DFMA", "DFMA", "DMUL",
    ];
    let sfu = ["MUFU.EX2", "MUFU.RSQ"];
    match gen {
        IsaGen::Kepler => Names {
            int: ["IMAD", "IADD", "LOP.XOR", "SHF.R.U32.HI"],
            iadd: "IADD",
            fp32,
            fp64,
            sfu,
            tensor: "",
            ldg: "LDG.E",
            stg: "ST.E",
            sys: "",
            red: "RED.E.ADD.F32.FTZ.RN",
            atom: "ATOM.E.ADD",
        },
        IsaGen::Pascal => Names {
            int: volta_int,
            iadd: "IADD3",
            fp32,
            fp64,
            sfu,
            tensor: "",
            ldg: "LDG.E",
            stg: "STG.E",
            sys: "",
            red: "RED.E.ADD.F32.FTZ.RN",
            atom: "ATOMG.E.ADD",
        },
        IsaGen::Volta => Names {
            int: volta_int,
            iadd: "IADD3",
            fp32,
            fp64,
            sfu,
            tensor: "HMMA.884.F32.F32",
            ldg: "LDG.E",
            stg: "STG.E",
            sys: ".SYS",
            red: "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
            atom: "ATOMG.E.ADD.STRONG.GPU",
        },
        IsaGen::Turing | IsaGen::Ampere | IsaGen::Hopper => Names {
            int: volta_int,
            iadd: "IADD3",
            fp32,
            fp64,
            sfu,
            tensor: if gen == IsaGen::Turing {
                "HMMA.1688.F32"
            } else {
                "HMMA.16816.F32"
            },
            ldg: "LDG.E",
            stg: "STG.E",
            sys: "",
            red: "RED.E.ADD.F32.FTZ.RN.STRONG.GPU",
            atom: "ATOMG.E.ADD.STRONG.GPU",
        },
    }
}

pub(super) fn width_token(w: u64) -> &'static str {
    match w {
        1 => ".U8",
        2 => ".U16",
        8 => ".64",
        16 => ".128",
        _ => "",
    }
}
