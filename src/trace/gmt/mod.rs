//! `.gmt`: the compact, memory-mapped binary trace format.
//!
//! ```text
//! offset 0   Header (64 B): magic "GPUMGMT\0", format version, TOC offset/length, file length
//!            then, per kernel, 8-byte aligned:
//!              warp streams   (codec.rs encoding, one contiguous run per warp)
//!              static table   [StaticInst; n]        (36 B each)
//!              CTA table      [CtaRec; n]            (24 B each: id, warp count, first warp)
//!              warp table     [WarpRec; n]           (24 B each: stream offset, bytes, insts)
//! TOC        JSON: schema version, application commands, per kernel its KernelInfo, opcode
//!            names and the offsets/counts of the sections above
//! ```
//! Tables are read in place through `bytemuck` casts of the map; warp streams are decoded
//! straight from the mapped bytes. All integers are little-endian. A kernel launched again
//! (a trace file a list names twice) is stored once: its later launches are TOC entries
//! equal to its first, naming the same sections.

pub mod codec;
mod read;
mod write;

pub use read::{GmtFile, GmtKernel};
pub use write::GmtWriter;

use serde::{Deserialize, Serialize};

use crate::trace::inst::KernelInfo;
use crate::trace::source::Command;

pub const MAGIC: [u8; 8] = *b"GPUMGMT\0";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FileHeader {
    pub magic: [u8; 8],
    pub version: u32,
    pub header_len: u32,
    pub toc_offset: u64,
    pub toc_len: u64,
    pub file_len: u64,
    pub reserved: [u64; 3],
}
const _: () = assert!(std::mem::size_of::<FileHeader>() == HEADER_LEN);

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CtaRec {
    pub id: [u32; 3],
    pub warps: u32,
    pub first_warp: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WarpRec {
    /// Offset of the stream within the kernel's stream section.
    pub offset: u64,
    pub bytes: u64,
    pub insts: u64,
}

/// A section of the file: byte offset and element count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub offset: u64,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelToc {
    pub info: KernelInfo,
    pub opcodes: Vec<String>,
    /// Byte range of the streams (count = bytes).
    pub streams: Section,
    pub statics: Section,
    pub ctas: Section,
    pub warps: Section,
    pub warp_insts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toc {
    pub schema: u32,
    /// Application name (the trace folder or spec it came from).
    pub app: String,
    pub commands: Vec<Command>,
    pub kernels: Vec<KernelToc>,
}
