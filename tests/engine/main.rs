//! Integration tests of the hybrid engine (`gpumodel::engine`) against analytic expectations
//! computed from the GPU model's own fields: unloaded latencies, DRAM bandwidth and row
//! behaviour, issue limits, interference between co-runners, determinism, and one test per
//! sharing mechanism (masks, quotas, fractions, dispatch order, channel sets, runtime
//! reconfiguration, persistent threads, time slicing, hooks, kernel sequences, arrivals,
//! run modes).
//!
//! Every kernel is hand-built (tests/common/engine_kit.rs) on a QV100 model shrunk to a few
//! SMs and channels, so the whole binary runs in seconds in release mode. Each tolerance is
//! stated and justified where it is used.
//!
//! Sections 1–7 (analytic sanity checks and determinism) are in `sanity.rs`, section 8 (one
//! test per sharing mechanism) in `mechanisms.rs`.

#[path = "../common/mod.rs"]
mod common;
mod mechanisms;
mod sanity;

use std::cell::RefCell;
use std::rc::Rc;

use common::engine_kit::*;
use gpumodel::arch::GpuSpec;
use gpumodel::engine::{
    Action, DispatchOrder, Handover, Hook, Migration, Persistent, RunConfig, RunMode, RunStats,
};

/// Run to completion with each of the `n` applications held to 1/n of every SM's resources
/// (used by both parts).
fn even_split(n: usize) -> RunConfig {
    let mut cfg = completion(n);
    for p in &mut cfg.placement.apps {
        p.fraction = Some(1.0 / n as f64);
    }
    cfg
}
