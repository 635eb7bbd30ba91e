//! Kernel input: Accel-Sim and NVBit text traces, the `.gmt` binary format, synthetic
//! kernels, and the [`KernelSource`] trait through which the engine reads all of them.
//!
//! This module never depends on the engine, the policies or the reports.

pub mod accel;
pub mod gmt;
pub mod hll;
pub mod input;
pub mod inst;
pub mod isa;
pub mod source;
pub mod statics;
pub mod synth;

pub use inst::{DynInst, KernelInfo, MemOp, MemSpace, StaticInst, StaticTable, Unit};
pub use source::{CtaInfo, KernelSource, MemKernel, WarpStream};
pub mod app;
pub mod enc;
pub mod inspect;
pub mod kernelslist;
pub mod nvbit;
pub mod text;
