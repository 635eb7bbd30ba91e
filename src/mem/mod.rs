//! The cycle-level memory system components: sectored caches with MSHRs (L1D and L2
//! slices), the SM↔partition crossbar, address mapping with per-application channel sets,
//! DRAM channels, and address translation (TLBs and page-table walkers). Each component keeps its own next-free times, so idle cycles cost
//! nothing; the engine (next issue) wires them together and owns simulated time.

pub mod cache;
pub mod calendar;
pub mod dram;
pub mod frames;
pub mod ipoly;
pub mod map;
pub mod noc;
pub mod pages;
pub mod tlb;
