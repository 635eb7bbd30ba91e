//! Class labels of a profiled application under each paper's scheme — Warped-Slicer,
//! Punyala, Slate, UGPU — with every threshold a named constant collected in a configurable
//! [`Thresholds`] whose defaults are the papers' values (or, where a paper gives none, the
//! documented derivation in the scheme's file).

pub mod punyala;
pub mod slate;
pub mod ugpu;
pub mod warped_slicer;

use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::profile::metrics::Metrics;
use crate::profile::Curve;

pub use punyala::{PunyalaClass, PunyalaLabel, PunyalaThresholds};
pub use slate::{Level, SlateLabel, SlateThresholds};
pub use ugpu::{Bound, UgpuLabel};
pub use warped_slicer::{WsCurve, WsLabel, WsThresholds, WsType};

/// Every classifier's thresholds (UGPU's rule has none: it compares two bandwidths).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub warped_slicer: WsThresholds,
    pub punyala: PunyalaThresholds,
    pub slate: SlateThresholds,
}

/// One label per scheme.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Labels {
    pub warped_slicer: WsLabel,
    pub punyala: PunyalaLabel,
    pub slate: SlateLabel,
    pub ugpu: UgpuLabel,
}

/// Labels an application from its alone-run metrics and its CTAs-per-SM curve.
pub fn classify(spec: &GpuSpec, m: &Metrics, ctas: &Curve, t: &Thresholds) -> Labels {
    Labels {
        warped_slicer: warped_slicer::classify(m, ctas, &t.warped_slicer),
        punyala: punyala::classify(m, &t.punyala),
        slate: slate::classify(m, &t.slate),
        ugpu: ugpu::classify(spec, m),
    }
}
