//! The bundled `h100` model's address translation against cold-translation costs measured
//! on a GH100 (an H200; `reports/hw/tlb_walk.cu`, raw output `reports/hw/h200_tlb_walk.txt`,
//! two runs, best of three trials each). Every figure is a kernel on freshly allocated
//! memory ("cold": no page in any TLB) minus the same kernel once its pages are in the
//! second-level TLB ("warm"); the engine's "warm" is the same kernel with translation off
//! (the L2 TLB lookup of a warm miss is 10 cycles, inside the tolerance).
//!
//! - `touch`: one load per 2 MiB page, all at once: one CTA of 256 or 1024 threads (one SM)
//!   and 64 CTAs of 32 threads (64 SMs, 2048 pages). Hardware cold - warm: 8 985–9 535,
//!   36 416–37 520 and 10 962–12 037 cycles (the last: 5 536–6 080 ns at 1 980 MHz).
//! - `chase`: one thread, a dependent load per page, pages 16 apart (no two hops share a
//!   walk): a walk adds 888–918 cycles to a load.
//!
//! Tolerance: 25% for the bursts, 30% for the serial walk (the engine charges a walk's
//! last-level read the unloaded DRAM round trip and nothing for the walker's own time).
//! Not asserted, because the engine does not reach them: 2048 and 8192 pages touched from
//! 8 SMs (hardware 2.2–2.5× slower than the engine; `models/CALIBRATION.md`).

mod common;

use std::path::Path;
use std::sync::Arc;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::AppSpec;
use gpumodel::trace::synth::SynthKernel;

fn h100(translation: bool) -> GpuSpec {
    let s = GpuSpec::builtin("h100").unwrap();
    if translation {
        s
    } else {
        s.with_overrides(&["translation.enabled=false".to_string()])
            .unwrap()
    }
}

/// Cycles and walks of `spec_toml` on h100, translation on, and cycles with it off.
fn cold_minus_warm(name: &str, spec_toml: &str) -> (f64, u64) {
    let k = SynthKernel::from_toml_str(spec_toml, Path::new("k.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let app = AppSpec::new(name, vec![Arc::new(k)]);
    let on = common::engine_kit::alone(&h100(true), &app);
    let off = common::engine_kit::alone(&h100(false), &app);
    (
        on.apps[0].kernels[0].cycles as f64 - off.apps[0].kernels[0].cycles as f64,
        on.apps[0].counters.walks,
    )
}

/// One load per 2 MiB page, `pages` pages, CTAs of `threads` threads.
fn touch(pages: u64, threads: u64) -> (f64, u64) {
    let t = format!(
        "[kernel]\nname = \"touch\"\ngrid = {}\nblock = {threads}\nregs = 24\nseed = 7\nbinary_version = 90\n\
         [body]\ntrips = 1\nint = 1\n\
         [[loads]]\ncount = 1\npattern = \"strided\"\nstride = \"2 MiB\"\nwidth = 4\nbypass_l1 = true\n",
        pages / threads
    );
    cold_minus_warm("touch", &t)
}

fn assert_within(got: f64, lo: f64, hi: f64, tol: f64, what: &str) {
    assert!(
        got >= lo * (1.0 - tol) && got <= hi * (1.0 + tol),
        "{what}: engine {got:.0} cycles; GH100 {lo}-{hi} (±{:.0}%)",
        tol * 100.0
    );
}

#[test]
fn pages_touched_at_once_by_one_sm_cost_what_the_gh100_measured() {
    let (c, walks) = touch(256, 256);
    assert_eq!(walks, 16, "256 pages are 16 groups of walk_fill = 16");
    assert_within(c, 8985.0, 9535.0, 0.25, "256 pages, one SM");
    let (c, walks) = touch(1024, 1024);
    assert_eq!(walks, 64);
    assert_within(c, 36416.0, 37520.0, 0.25, "1024 pages, one SM");
}

#[test]
fn pages_touched_at_once_by_64_sms_cost_what_the_gh100_measured() {
    let (c, walks) = touch(2048, 32);
    assert_eq!(walks, 128);
    assert_within(c, 10962.0, 12037.0, 0.25, "2048 pages, 64 SMs");
}

#[test]
fn a_serial_walk_costs_what_the_gh100_measured() {
    // A one-warp dependent chase over random sectors of 2 GiB (1024 pages, 64 walk groups):
    // beyond the L1 TLB's 64 pages nearly every load misses it (an L2 TLB lookup, 10
    // cycles), and each group walks once.
    const TRIPS: u64 = 2000;
    let t = format!(
        "[kernel]\nname = \"chase\"\ngrid = 1\nblock = 32\nregs = 24\nseed = 31\nbinary_version = 90\n\
         [body]\ntrips = {TRIPS}\nint = 1\n\
         [[loads]]\ncount = 1\npattern = \"random\"\nwidth = 8\nsectors_per_request = 1\n\
         footprint = \"2 GiB\"\ndependent = true\nbypass_l1 = true\n"
    );
    let (extra, walks) = cold_minus_warm("chase", &t);
    assert_eq!(walks, 64);
    let l2_tlb = GpuSpec::builtin("h100").unwrap().translation.l2_latency.0 as f64;
    // Every load but the L1 TLB's hits pays the L2 TLB lookup: at most TRIPS of them.
    let per_walk_hi = extra / walks as f64;
    let per_walk_lo = (extra - TRIPS as f64 * l2_tlb) / walks as f64;
    assert!(
        per_walk_lo <= 918.0 * 1.3 && per_walk_hi >= 888.0 * 0.7,
        "a walk adds {per_walk_lo:.0}-{per_walk_hi:.0} cycles; GH100 888-918 (±30%)"
    );
}
