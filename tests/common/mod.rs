//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod engine_kit;

/// `../shared/reference` beside the checkout.
pub fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference")
}

pub fn real_traces() -> PathBuf {
    reference().join("real-traces")
}

/// Sum of the `insts = N` lines of a text trace.
pub fn declared_insts(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("insts = "))
        .map(|n| n.trim().parse::<u64>().unwrap())
        .sum()
}

/// Runs the CLI; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .args(args)
        .output()
        .expect("run gpumodel");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A bundled Warped-Slicer benchmark spec (`traces/warped-slicer/NAME.toml`).
pub fn ws_bench(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("traces/warped-slicer/{name}.toml"))
}

/// A bundled Warped-Slicer benchmark as an application.
pub fn ws_app(name: &str) -> gpumodel::engine::AppSpec {
    let app = gpumodel::trace::app::open_app(&ws_bench(name), &Default::default()).unwrap();
    gpumodel::engine::AppSpec::new(name, app.kernels)
}

/// The Fermi-WS model (Warped-Slicer Table I) with `sms` SMs: the real SM, fewer of them, so
/// a policy run takes milliseconds.
pub fn fermi_ws(sms: u32) -> gpumodel::arch::GpuSpec {
    gpumodel::arch::GpuSpec::builtin("fermi-ws")
        .unwrap()
        .with_overrides(&[format!("sm.count={sms}")])
        .unwrap()
}
