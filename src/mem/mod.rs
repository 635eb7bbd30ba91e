//! The cycle-level memory system: DRAM channels today; L1D, NoC, L2 slices and address
//! mapping are added with the engine. Components keep their own next-event times; idle
//! cycles cost nothing.

pub mod dram;
pub mod cache;
pub mod map;
