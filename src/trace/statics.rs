//! Interning of static instructions: turns (PC, opcode, operands, immediates) into a dense
//! static index, classifying each new opcode once through the ISA table.

use rustc_hash::FxHashMap;

use super::inst::{flags, reg, width_from_opcode, StaticInst, StaticTable, Unit, MAX_SRC};
use super::isa::{self, IsaGen, OpClass};

/// Why an instruction cannot be interned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaticsError {
    #[error("opcode is not valid text")]
    NotText,
    #[error(
        "unknown opcode '{opcode}' for the {isa} ISA (binary version); pass \
         --lenient-opcodes to count it and treat it as an integer ALU op"
    )]
    UnknownOpcode { opcode: String, isa: &'static str },
    #[error("more than 65535 distinct opcodes in one kernel")]
    TooManyOpcodes,
    #[error("too many static instructions")]
    TooManyStatics,
}

/// The operand fields of one instruction as read from a trace line.
#[derive(Clone, Copy, Debug)]
pub struct RawStatic<'a> {
    pub pc: u32,
    pub opcode: &'a [u8],
    pub dst: u16,
    pub src: [u16; MAX_SRC],
    pub nsrc: u8,
    pub imm: i32,
    pub imm2: i32,
    /// The line carried a memory payload.
    pub has_mem: bool,
}

const CACHE: usize = 4096;

/// Builds a [`StaticTable`] incrementally.
#[derive(Clone)]
pub struct StaticBuilder {
    gen: IsaGen,
    lenient: bool,
    table: StaticTable,
    classes: Vec<OpClass>,
    opcode_ids: FxHashMap<Box<[u8]>, u16>,
    map: FxHashMap<StaticInst, u32>,
    by_pc: Box<[u32; CACHE]>,
    /// Distinct opcodes that were not in the ISA table (lenient mode).
    pub unknown_opcodes: Vec<String>,
}

impl StaticBuilder {
    pub fn new(gen: IsaGen, lenient: bool) -> Self {
        StaticBuilder {
            gen,
            lenient,
            table: StaticTable::default(),
            classes: Vec::new(),
            opcode_ids: FxHashMap::default(),
            map: FxHashMap::default(),
            by_pc: Box::new([u32::MAX; CACHE]),
            unknown_opcodes: Vec::new(),
        }
    }

    pub fn table(&self) -> &StaticTable {
        &self.table
    }

    pub fn into_table(self) -> StaticTable {
        self.table
    }

    pub fn len(&self) -> usize {
        self.table.insts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.insts.is_empty()
    }

    fn opcode_id(&mut self, opcode: &[u8]) -> Result<u16, StaticsError> {
        if let Some(&id) = self.opcode_ids.get(opcode) {
            return Ok(id);
        }
        let text = std::str::from_utf8(opcode)
            .map_err(|_| StaticsError::NotText)?
            .to_string();
        let class = match isa::classify(&text, self.gen) {
            Some(c) => c,
            None if self.lenient => {
                self.unknown_opcodes.push(text.clone());
                isa::unknown_as_alu()
            }
            None => {
                return Err(StaticsError::UnknownOpcode {
                    opcode: text,
                    isa: self.gen.name(),
                })
            }
        };
        let id =
            u16::try_from(self.table.opcodes.len()).map_err(|_| StaticsError::TooManyOpcodes)?;
        self.table.opcodes.push(text);
        self.classes.push(class);
        self.opcode_ids.insert(opcode.into(), id);
        Ok(id)
    }

    fn build(&mut self, r: &RawStatic) -> Result<StaticInst, StaticsError> {
        let opcode = self.opcode_id(r.opcode)?;
        let class = self.classes[opcode as usize];
        let name = &self.table.opcodes[opcode as usize];
        let width = width_from_opcode(name);
        let wide = name.contains(".WIDE") || class.unit == Unit::Fp64;
        let dst_regs = if r.dst == reg::NONE {
            0
        } else if class.mem_op != super::inst::MemOp::None && r.has_mem {
            width.div_ceil(4).max(1)
        } else if wide {
            2
        } else {
            1
        };
        let mut fl = class.flags;
        if r.has_mem {
            fl |= flags::HAS_MEM;
        }
        Ok(StaticInst {
            pc: r.pc,
            imm: r.imm,
            imm2: r.imm2,
            opcode,
            dst: r.dst,
            src: r.src,
            unit: class.unit as u8,
            space: class.space as u8,
            mem_op: class.mem_op as u8,
            width,
            flags: fl,
            nsrc: r.nsrc,
            dst_regs,
            _pad: 0,
        })
    }

    /// Returns the static index of `r`, adding it to the table if new.
    #[inline]
    pub fn intern(&mut self, r: &RawStatic) -> Result<u32, StaticsError> {
        let slot = ((r.pc >> 4) as usize) % CACHE;
        let cand = self.by_pc[slot];
        if let Some(c) = self.table.insts.get(cand as usize) {
            if c.pc == r.pc
                && c.dst == r.dst
                && c.src == r.src
                && c.nsrc == r.nsrc
                && c.imm == r.imm
                && c.imm2 == r.imm2
                && (c.flags & flags::HAS_MEM != 0) == r.has_mem
                && self.table.opcodes[c.opcode as usize].as_bytes() == r.opcode
            {
                return Ok(cand);
            }
        }
        let s = self.build(r)?;
        let idx = self.intern_static(s)?;
        self.by_pc[slot] = idx;
        Ok(idx)
    }

    /// Adds a fully formed static instruction whose opcode index refers to `opcodes`.
    pub fn intern_static(&mut self, s: StaticInst) -> Result<u32, StaticsError> {
        if let Some(&i) = self.map.get(&s) {
            return Ok(i);
        }
        let i = u32::try_from(self.table.insts.len()).map_err(|_| StaticsError::TooManyStatics)?;
        self.table.insts.push(s);
        self.map.insert(s, i);
        Ok(i)
    }

    /// Merges another builder's table into this one; returns the index remap
    /// (`remap[local] = global`). Opcode names are re-interned.
    pub fn merge(&mut self, other: &StaticTable) -> Result<Vec<u32>, StaticsError> {
        let mut op_remap = Vec::with_capacity(other.opcodes.len());
        for name in &other.opcodes {
            op_remap.push(self.opcode_id(name.as_bytes())?);
        }
        let mut remap = Vec::with_capacity(other.insts.len());
        for s in &other.insts {
            let mut g = *s;
            g.opcode = op_remap[s.opcode as usize];
            remap.push(self.intern_static(g)?);
        }
        Ok(remap)
    }
}
