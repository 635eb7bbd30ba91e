//! The bundled `h100` model against latencies measured on a GH100 (an H200: the H100's SM,
//! L2 and memory controllers; `reports/hw/dram_latency.cu`, raw output
//! `reports/hw/h200_dram_latency.txt`). One thread chases pointers, each load's address the
//! previous load's value, with loads that bypass the L1:
//!
//! - nodes L2-resident (8 MiB of random lines, warm): 289–290 cycles a load;
//! - nodes cold (evicted by a 1 GiB read; random lines over 256 MiB to 16 GiB, consecutive
//!   lines, or lines 2 KiB to 64 KiB apart): 662–680 cycles a load, 672 the median.
//!
//! The engine runs the same program as a synthetic kernel of one warp (one sector a load,
//! `dependent = true`, `bypass_l1 = true`) on the bundled model. Tolerance: 3%, the spread
//! of the hardware's own cold figures over the seven layouts (662–680 around 672).

mod common;

use std::path::Path;
use std::sync::Arc;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::AppSpec;
use gpumodel::trace::synth::SynthKernel;

const TRIPS: u64 = 2000;

/// Cycles per load of a one-warp pointer chase over `footprint` on `models/h100.toml`.
fn chase(footprint: &str) -> f64 {
    let t = format!(
        "[kernel]\nname = \"chase\"\ngrid = 1\nblock = 32\nregs = 24\nseed = 31\nbinary_version = 90\n\
         [body]\ntrips = {TRIPS}\nint = 1\n\
         [[loads]]\ncount = 1\npattern = \"random\"\nwidth = 8\nsectors_per_request = 1\n\
         footprint = \"{footprint}\"\ndependent = true\nbypass_l1 = true\n"
    );
    let k =
        SynthKernel::from_toml_str(&t, Path::new("chase.toml")).unwrap_or_else(|e| panic!("{e}"));
    let spec = GpuSpec::builtin("h100").unwrap();
    let s = common::engine_kit::alone(&spec, &AppSpec::new("chase", vec![Arc::new(k)]));
    s.apps[0].kernels[0].cycles as f64 / TRIPS as f64
}

/// Asserts the chase over `footprint` takes `hw` cycles a load within 3%.
fn assert_chase(footprint: &str, hw: f64, what: &str) {
    let got = chase(footprint);
    assert!(
        (got - hw).abs() <= 0.03 * hw,
        "{what} chase {got:.1} cycles a load; GH100 {hw}"
    );
}

#[test]
fn an_l2_hit_takes_what_the_gh100_measured() {
    // 4 lines: after the first four loads every load hits the L2.
    assert_chase("512 B", 290.0, "L2-hit");
}

#[test]
fn a_dram_miss_takes_what_the_gh100_measured() {
    // 4 MiB of random sectors (two 2 MiB pages, so two walks in 2000 loads): nearly every
    // load misses the L2 (the chase's own repeats are ~1.5%). GH100: 662-680, median 672.
    assert_chase("4 MiB", 672.0, "DRAM-miss");
}
