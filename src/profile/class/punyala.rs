//! Punyala et al. application classes M / MC / C / A (seed `001_…`, §III-A, Table I), from
//! four run-time metrics of the full-GPU alone run: memory bandwidth MB (DRAM bytes/s),
//! L2→L1 bandwidth, memory-to-compute ratio R and IPC.
//!
//! Table I, checked in its row order (the first row that holds wins):
//! * M:  MB > α
//! * MC: β < MB < α
//! * C:  L2→L1 > γ, R > δ, IPC < ε
//! * A:  R < δ, IPC > ε
//!
//! with α = γ = 0.55·MBmax, β = 0.30·MBmax, δ = 0.2, ε = 0.20·IPCmax (the paper's values;
//! MBmax = the model's peak DRAM bandwidth, IPCmax = SMs × schedulers × issue width).
//! The paper does not say what happens when no row holds (e.g. low bandwidth, R ≥ δ, little
//! L2 traffic). We then fall back on the class descriptions: C ("heavy reuse on the cached
//! data of the shared L2") when L2→L1 > γ, otherwise A ("the impact they have on main memory
//! and L2 is negligible"), and mark the label inexact.
//!
//! R is not defined numerically in the paper; we use global-memory warp instructions per
//! compute warp instruction (int/fp32/fp64/sfu/tensor) of the instruction mix.

use serde::{Deserialize, Serialize};

use crate::profile::metrics::Metrics;

/// α and γ as fractions of MBmax.
pub const ALPHA: f64 = 0.55;
pub const GAMMA: f64 = 0.55;
/// β as a fraction of MBmax.
pub const BETA: f64 = 0.30;
/// δ: memory-to-compute ratio.
pub const DELTA: f64 = 0.2;
/// ε as a fraction of IPCmax.
pub const EPSILON: f64 = 0.20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PunyalaThresholds {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub delta: f64,
    pub epsilon: f64,
}

impl Default for PunyalaThresholds {
    fn default() -> Self {
        PunyalaThresholds {
            alpha: ALPHA,
            beta: BETA,
            gamma: GAMMA,
            delta: DELTA,
            epsilon: EPSILON,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PunyalaClass {
    M,
    MC,
    C,
    A,
}

impl PunyalaClass {
    pub fn name(self) -> &'static str {
        match self {
            PunyalaClass::M => "M",
            PunyalaClass::MC => "MC",
            PunyalaClass::C => "C",
            PunyalaClass::A => "A",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PunyalaLabel {
    pub class: PunyalaClass,
    /// False when no Table I row held and the fallback decided.
    pub exact: bool,
    /// MB / MBmax, (L2→L1) / MBmax, R, IPC / IPCmax.
    pub mb_frac: f64,
    pub l2l1_frac: f64,
    pub r: f64,
    pub ipc_frac: f64,
    pub why: String,
}

pub fn classify(m: &Metrics, t: &PunyalaThresholds) -> PunyalaLabel {
    let mbmax = m.dram_bw_max.max(1.0);
    let mb = m.dram_bw / mbmax;
    let l2l1 = m.l2_l1_bw / mbmax;
    let r = m.mem_to_compute;
    let ipc = m.ipc / m.ipc_max.max(1e-9);
    let (class, exact, rule) = if mb > t.alpha {
        (PunyalaClass::M, true, "MB > α")
    } else if mb > t.beta && mb < t.alpha {
        (PunyalaClass::MC, true, "β < MB < α")
    } else if l2l1 > t.gamma && r > t.delta && ipc < t.epsilon {
        (PunyalaClass::C, true, "L2→L1 > γ, R > δ, IPC < ε")
    } else if r < t.delta && ipc > t.epsilon {
        (PunyalaClass::A, true, "R < δ, IPC > ε")
    } else if l2l1 > t.gamma {
        (PunyalaClass::C, false, "no row holds; L2→L1 > γ")
    } else {
        (PunyalaClass::A, false, "no row holds; L2→L1 <= γ")
    };
    let why = format!(
        "{rule}: MB {:.2}·MBmax, L2→L1 {:.2}·MBmax, R {:.3}, IPC {:.3}·IPCmax",
        mb, l2l1, r, ipc
    );
    PunyalaLabel {
        class,
        exact,
        mb_frac: mb,
        l2l1_frac: l2l1,
        r,
        ipc_frac: ipc,
        why,
    }
}
