//! Where the CTAs of two concurrent kernels go (issue 45, item 4): the engine against what
//! a Hopper GPU does with two streams (`reports/hw/hopper_micro.cu`, experiment E4, run
//! on an H200; `reports/hw/h200_micro.txt`):
//!
//! - (a) both kernels fill every SM with one CTA each, four waves each: not one of the
//!   second kernel's 528 CTAs started before the first kernel's last CTA had started
//!   (a freed slot goes to the kernel launched first), and its first CTA started one CTA
//!   duration after that (when a CTA of the first kernel's last wave ended);
//! - (b) the first kernel leaves room on each SM (one 256-thread CTA per SM, spread one
//!   per SM over all 132): every one of the second kernel's 4224 small CTAs started on an
//!   SM while a CTA of the first was resident there (co-residency on all 132 SMs).
//!
//! The runs use `models/h100.toml` shrunk to 8 SMs; the facts checked are structural
//! (which kernel gets a slot, whether kernels share an SM), not timings.

mod common;

use std::path::Path;
use std::sync::Arc;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{AppSpec, RunConfig, RunStats};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::KernelSource;

const SMS: u32 = 8;

fn spec() -> GpuSpec {
    GpuSpec::builtin("h100")
        .unwrap()
        .with_overrides(&[
            format!("sm.count={SMS}"),
            "dram.channels=10".into(),
            "dram.stacks=1".into(),
        ])
        .unwrap()
}

fn kernel(name: &str, grid: u32, block: u32, smem: &str, trips: u32) -> Arc<dyn KernelSource> {
    let t = format!(
        "[kernel]\nname = \"{name}\"\ngrid = {grid}\nblock = {block}\nregs = 24\nsmem = \"{smem}\"\nseed = 3\nbinary_version = 90\n\n[body]\ntrips = {trips}\nfp32 = 8\n"
    );
    Arc::new(SynthKernel::from_toml_str(&t, Path::new("k.toml")).unwrap_or_else(|e| panic!("{e}")))
}

fn run(apps: &[AppSpec]) -> RunStats {
    let mut cfg = RunConfig::completion(apps.len());
    cfg.sample_every = 100;
    let mut ctl = common::engine_kit::ctl(None, |_, _, _| {});
    gpumodel::engine::run(&spec(), apps, &cfg, &mut ctl).unwrap()
}

#[test]
fn a_freed_slot_goes_to_the_kernel_launched_first() {
    // One CTA per SM (more than half of the shared memory), four waves each.
    let a = kernel("a", 4 * SMS, 1024, "114.5 KiB", 40);
    let b = kernel("b", 4 * SMS, 1024, "114.5 KiB", 40);
    let alone = run(&[AppSpec::new("a", vec![a.clone()])]);
    let wave = alone.cycles / 4;
    let r = run(&[AppSpec::new("a", vec![a]), AppSpec::new("b", vec![b])]);
    let first_b = r
        .timeline
        .iter()
        .find(|s| s.sms[1] > 0)
        .expect("b ran")
        .cycle;
    // The hardware: b's first CTA starts when a CTA of a's fourth (last) wave ends.
    assert!(
        first_b >= 3 * wave + wave / 2,
        "b started at {first_b}, before a's last wave had run (wave {wave} cycles)"
    );
    for s in r.timeline.iter().filter(|s| s.cycle < first_b) {
        assert_eq!(s.sms[1], 0);
    }
}

#[test]
fn a_kernel_that_leaves_room_shares_every_sm() {
    // a: one 256-thread CTA per SM, long; b: many small short CTAs.
    let a = kernel("a", SMS, 256, "0 B", 400);
    let b = kernel("b", 32 * SMS, 64, "0 B", 10);
    let r = run(&[AppSpec::new("a", vec![a]), AppSpec::new("b", vec![b])]);
    // a's CTAs spread one per SM (round robin over SMs), and b's run beside them on
    // every SM while a is resident.
    let both = r
        .timeline
        .iter()
        .filter(|s| s.sms[0] == SMS && s.sms[1] == SMS)
        .count();
    assert!(
        both > 0,
        "never saw a on all {SMS} SMs with b beside it: {:?}",
        r.timeline
            .iter()
            .take(5)
            .map(|s| s.sms.clone())
            .collect::<Vec<_>>()
    );
}
