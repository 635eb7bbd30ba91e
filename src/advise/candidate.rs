//! One configuration of `advise` and what it gives each application: the [`Candidate`]
//! (mechanism, label, policy), its [`Share`] of SMs and channels with who shares them, and
//! a [`Skip`] for configurations set aside. The enumerators (`enumerate`, `migs`) build
//! them; ranking and reports read them.

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::policy::PolicySpec;

/// What each application may use under a configuration (from its initial placement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// SMs the application may use, one entry per application.
    pub sms: Vec<u32>,
    /// DRAM channels (and with them L2 slices) it may use.
    pub channels: Vec<u32>,
    /// Per application: the other applications it shares an SM with.
    pub sm_sharers: Vec<Vec<usize>>,
    /// Per application: the other applications it shares a channel with.
    pub channel_sharers: Vec<Vec<usize>>,
    /// Applications take turns on the whole GPU.
    pub time_sliced: bool,
    /// The policy changes the partition at run time (the shares are the initial ones).
    pub dynamic: bool,
}

/// One configuration to simulate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// `mig`, `mps`, `mps-partition`, `green-context`, `time-slice` or `research`.
    pub mechanism: String,
    /// Short readable setting (`25/50/100%`, `4g.40gb[a]+3g.40gb[b,c]`).
    pub label: String,
    pub policy: PolicySpec,
    pub share: Share,
    /// Other configurations that are this one exactly (identical masks and channels).
    pub aliases: Vec<String>,
}

impl Candidate {
    /// `mechanism label`.
    pub fn name(&self) -> String {
        config_name(&self.mechanism, &self.label)
    }
}

/// A configuration's display name: its mechanism, then its label if it has one.
pub fn config_name(mechanism: &str, label: &str) -> String {
    if label.is_empty() {
        mechanism.to_string()
    } else {
        format!("{mechanism} {label}")
    }
}

/// Configurations not simulated: how many, why, and a few of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    pub mechanism: String,
    pub count: usize,
    pub reason: String,
    pub examples: Vec<String>,
}

/// Sharers of each application from masks (`true`: may use that unit).
fn sharers(masks: &[Vec<bool>]) -> Vec<Vec<usize>> {
    (0..masks.len())
        .map(|a| {
            (0..masks.len())
                .filter(|&b| b != a && masks[a].iter().zip(&masks[b]).any(|(x, y)| *x && *y))
                .collect()
        })
        .collect()
}

impl Share {
    /// A share from per-application SM masks and channel lists (`None`: all).
    pub(crate) fn of(
        spec: &GpuSpec,
        sms: &[Option<Vec<bool>>],
        channels: &[Option<Vec<u32>>],
        time_sliced: bool,
        dynamic: bool,
    ) -> Share {
        let nsm = spec.sm.count as usize;
        let nch = spec.dram.channels as usize;
        let sm_masks: Vec<Vec<bool>> = sms
            .iter()
            .map(|m| m.clone().unwrap_or_else(|| vec![true; nsm]))
            .collect();
        let ch_masks: Vec<Vec<bool>> = channels
            .iter()
            .map(|c| match c {
                None => vec![true; nch],
                Some(list) => (0..nch as u32).map(|i| list.contains(&i)).collect(),
            })
            .collect();
        let count = |m: &Vec<bool>| m.iter().filter(|&&x| x).count() as u32;
        Share {
            sms: sm_masks.iter().map(count).collect(),
            channels: ch_masks.iter().map(count).collect(),
            sm_sharers: if time_sliced {
                vec![Vec::new(); sms.len()]
            } else {
                sharers(&sm_masks)
            },
            channel_sharers: if time_sliced {
                vec![Vec::new(); sms.len()]
            } else {
                sharers(&ch_masks)
            },
            time_sliced,
            dynamic,
        }
    }
}
