//! UGPU compute- vs memory-bound classification (seed `004_…`, §IV, Fig. 5, eq. 1–2):
//!
//! * eq. 1: `BW_SM = IPC_max × APKI_LLC × Size_CacheLine × Freq_SM`, the bandwidth one SM
//!   would demand issuing without stalls. We count LLC accesses in sectors, so
//!   `APKI_LLC × Size_CacheLine` becomes L2 bytes accessed per thousand warp instructions
//!   (divided by 1000); `IPC_max` = schedulers × issue width of one SM.
//! * eq. 2: `BW_MC = H_LLC × B_LLC + min((1 − H_LLC) × B_LLC, B_MEM)`, what one memory channel
//!   supplies. `B_LLC` = the channel's L2 slices × crossbar port width × interconnect clock
//!   (the model serves L2 data at the crossbar port rate); `B_MEM` = the channel's peak DRAM
//!   bandwidth; `H_LLC` = the alone run's L2 hit rate. Both come from the UGPU policy's
//!   [`crate::policy::ugpu::distribute`], so the label and the policy agree.
//! * Fig. 5 lines 12–15: compute-bound iff `BW_SM × #SM ≤ BW_MC × #MC`; the demand degree is
//!   the larger total over the smaller.

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::policy::ugpu::distribute::{self, Hardware};
use crate::profile::metrics::Metrics;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    Compute,
    Memory,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UgpuLabel {
    pub bound: Bound,
    /// eq. 1 and eq. 2, bytes per second.
    pub bw_sm: f64,
    pub bw_mc: f64,
    /// BW_SM × #SM and BW_MC × #MC.
    pub demand: f64,
    pub supply: f64,
    /// Fig. 5's compute_list / memory_list value (≥ 1).
    pub degree: f64,
    pub why: String,
}

pub fn classify(spec: &GpuSpec, m: &Metrics) -> UgpuLabel {
    // The policy's eq. 1–2 (bytes per core cycle), in bytes per second.
    let f_sm = spec.clocks.core.hz() as f64;
    let bw_sm = m.ipc_max_per_sm * m.llc_bytes_per_kinst / 1000.0 * f_sm;
    let bw_mc = Hardware::of(spec).bw_mc(m.l2_hit_rate) * f_sm;
    let demand = bw_sm * spec.sm.count as f64;
    let supply = bw_mc * spec.dram.channels as f64;
    let (compute, degree) = distribute::bound(demand, supply);
    let bound = if compute {
        Bound::Compute
    } else {
        Bound::Memory
    };
    let h = m.l2_hit_rate;
    UgpuLabel {
        bound,
        bw_sm,
        bw_mc,
        demand,
        supply,
        degree,
        why: format!(
            "BW_SM×#SM {:.1} GB/s vs BW_MC×#MC {:.1} GB/s (H_LLC {:.3})",
            demand / 1e9,
            supply / 1e9,
            h
        ),
    }
}
