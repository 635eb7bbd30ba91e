//! Synthetic kernels: spec errors, determinism, closed-form lengths, instruction mix,
//! opcode validity, address patterns, dependency chains and the text export round trip.
//!
//! Spec errors, construction and lengths are in `spec.rs`; memory patterns, chains and masks
//! in `patterns.rs`; the text export round trip and the property tests in `roundtrip.rs`.
//! The helpers here serve all three.

mod patterns;
mod roundtrip;
mod spec;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use gpumodel::trace::accel::ParseOptions;
use gpumodel::trace::inst::flags;
use gpumodel::trace::isa::{classify, IsaGen};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::{DynInst, KernelSource, MemKernel, MemOp, MemSpace, StaticInst, Unit};
use proptest::prelude::*;

const HEAD: &str = "[kernel]\nname = \"t\"\ngrid = 4\nblock = 64\nregs = 16\n";

fn synth(text: &str) -> SynthKernel {
    SynthKernel::from_toml_str(text, Path::new("t.toml"))
        .unwrap_or_else(|e| panic!("spec should build: {e}\n{text}"))
}

fn spec_err(text: &str) -> String {
    match SynthKernel::from_toml_str(text, Path::new("bad.toml")) {
        Ok(_) => panic!("spec should be rejected:\n{text}"),
        Err(e) => {
            assert!(e.is_bad_input(), "{e}");
            e.to_string()
        }
    }
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "examples in {}", dir.display());
    v
}

/// A spec that uses every feature.
const EVERYTHING: &str = r#"
[kernel]
name = "everything"
cite = "test"
grid = [3, 2]
block = 96
regs = 40
smem = "4 KiB"
seed = 11

[body]
trips = 5
ilp = 3
int = 7
fp32 = 11
fp64 = 2
sfu = 3
tensor = 1
barriers = 2
pre_loads = 1
post_stores = 2

[[loads]]
count = 2

[[loads]]
count = 1
pattern = "random"
footprint = "1 MiB"
dependent = true

[[stores]]
count = 3

[atomics]
count = 2

[shared]
loads = 4
stores = 1

[divergence]
fraction = 0.3
active = 0.5
"#;

fn with_trips(text: &str, trips: u64) -> String {
    text.replace("trips = 5", &format!("trips = {trips}"))
}

fn decode(k: &dyn KernelSource) -> MemKernel {
    MemKernel::from_source(k).unwrap()
}

fn stat<'a>(k: &'a dyn KernelSource, d: &DynInst) -> &'a StaticInst {
    &k.statics().insts[d.sidx as usize]
}

/// Distinct `unit`-byte blocks the instruction's addresses fall in.
fn distinct(d: &DynInst, unit: u64) -> usize {
    d.addrs()
        .iter()
        .map(|a| a / unit)
        .collect::<BTreeSet<_>>()
        .len()
}

fn sectors(d: &DynInst) -> usize {
    distinct(d, 32)
}

fn lines(d: &DynInst) -> usize {
    distinct(d, 128)
}

/// Every dynamic instruction of warp (c, w).
fn warp(k: &dyn KernelSource, c: u32, w: u32) -> Vec<DynInst> {
    let mut s = k.warp(c, w);
    let mut v = Vec::new();
    let mut d = DynInst::default();
    while s.next_inst(&mut d).unwrap() {
        v.push(d.clone());
    }
    v
}
