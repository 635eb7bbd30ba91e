//! `gpumodel`: a trace-driven hybrid performance model for GPU kernels that share one GPU.
//!
//! Data flows one way: [`trace`] (text and binary traces, synthetic kernels) →
//! [`arch`] (GPU models, occupancy) → engine → policies → metrics → report.
//! See `ARCHITECTURE.md` at the repository root for the code map and invariants.

pub mod advise;
pub mod arch;
pub mod budget;
pub mod card;
pub mod cli;
pub mod engine;
pub mod error;
pub mod infile;
pub mod mem;
pub mod metrics;
pub mod output;
pub mod policy;
pub mod profile;
pub mod report;
pub mod study;
#[cfg(test)]
mod testing;
pub mod trace;
pub mod validate;

pub use error::{Error, Result};
