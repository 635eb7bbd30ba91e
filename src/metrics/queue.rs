//! The saved results of a queue study (Punyala et al. §IV, `metrics.json` with
//! `"kind": "queue"`): each application's measured class, the interference matrices, the
//! profiled SM counts, and per (concurrency, class mix, policy) the queue, its groups and
//! the throughput `T = I_T / C_T` — everything `report` needs to redraw the figures.

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;

/// Value of the `kind` field of a queue study's results.
pub const QUEUE_KIND: &str = "queue";

/// A labelled square matrix of slowdowns: `s[j][i]` = slowdown of `labels[i]` beside
/// `labels[j]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowdownMatrix {
    pub labels: Vec<String>,
    pub s: Vec<Vec<f64>>,
}

/// One application of the suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueApp {
    pub name: String,
    /// The class the study file expects (the paper's Table I), may be empty.
    pub expected_class: String,
    /// The class the classifier gave from the full alone run.
    pub class: String,
    /// Whether a Table I row held (false: the fallback decided).
    pub exact: bool,
    /// The classifier's metrics, in words.
    pub why: String,
    /// Warp instructions of its budget (alone in the study's window) or of one full pass.
    pub warp_insts: u64,
    /// IPC alone on the whole GPU over the reference cycles.
    pub alone_ipc: f64,
    /// SMs the Profile-based baseline gives it (when that policy was run).
    pub profiled_sms: Option<u32>,
}

/// One queue under one policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueCell {
    /// Applications running together (N_G).
    pub ways: usize,
    /// Class mix of the queue (`equal`, `M-oriented`, ...).
    pub mix: String,
    pub policy: String,
    /// The queue in arrival order.
    pub queue: Vec<String>,
    /// The co-running groups, in the order they ran.
    pub groups: Vec<Vec<String>>,
    /// Σ e_k·L_k of the chosen patterns (ILP policies).
    pub objective: Option<f64>,
    /// Cycles of the groups one after another (C_T).
    pub cycles: u64,
    /// Warp instructions of the whole queue (I_T).
    pub warp_insts: u64,
    /// `warp_insts / cycles`.
    pub throughput: f64,
    /// Each queued application's IPC in its group, group by group.
    pub app_ipc: Vec<(String, f64)>,
}

/// Everything a queue study measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueStudyResults {
    pub schema_version: u32,
    /// Always [`QUEUE_KIND`].
    pub kind: String,
    pub study: String,
    /// The study file as read.
    pub config: serde_json::Value,
    pub apps: Vec<QueueApp>,
    /// Class order of the matrices and mixes.
    pub classes: Vec<String>,
    /// `S(j→i)` between classes (Fig. 2).
    pub interference: SlowdownMatrix,
    /// `S(j→i)` between applications (the "each application its own class" input), when
    /// a policy needed it.
    pub app_interference: Option<SlowdownMatrix>,
    pub cells: Vec<QueueCell>,
    /// The effective GPU model.
    pub model: GpuSpec,
}

impl QueueStudyResults {
    /// Values in order of first appearance.
    fn firsts(&self, f: impl Fn(&QueueCell) -> String) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.cells {
            let v = f(c);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
    pub fn policies(&self) -> Vec<String> {
        self.firsts(|c| c.policy.clone())
    }
    pub fn mixes(&self) -> Vec<String> {
        self.firsts(|c| c.mix.clone())
    }
    pub fn ways(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.cells.iter().map(|c| c.ways).collect();
        w.sort_unstable();
        w.dedup();
        w
    }
    pub fn cell(&self, ways: usize, mix: &str, policy: &str) -> Option<&QueueCell> {
        self.cells
            .iter()
            .find(|c| c.ways == ways && c.mix == mix && c.policy == policy)
    }
}
