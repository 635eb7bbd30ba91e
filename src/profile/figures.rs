//! The profile's figures as plain data ([`crate::report::LineChart`]): IPC vs CTAs per SM,
//! vs SMs and vs memory channels, one file name each, so they can be drawn now or
//! re-rendered later from the saved profile JSON.

use crate::profile::{Axis, Profile};
use crate::report::{LineChart, Series};

/// `(file name, chart)` for each non-empty curve, in axis order.
pub fn charts(p: &Profile) -> Vec<(String, LineChart)> {
    p.curves
        .iter()
        .filter(|c| !c.points.is_empty())
        .map(|c| {
            let title = match c.axis {
                Axis::CtasPerSm => format!("{}: performance vs CTAs per SM", p.app),
                Axis::Sms => format!("{}: performance vs SM count", p.app),
                Axis::Channels => format!("{}: performance vs memory channels", p.app),
            };
            let chart = LineChart {
                title,
                x_label: c.axis.label().to_string(),
                y_label: "IPC (warp instructions / cycle)".to_string(),
                series: vec![Series {
                    name: format!("{} on {}", p.app, p.model.name),
                    points: c.points.iter().map(|q| (q.x as f64, q.ipc)).collect(),
                }],
                integer_x: true,
            };
            (format!("{}_{}.svg", sanitize(&p.app), c.axis.name()), chart)
        })
        .collect()
}

/// A file-name-safe version of an application name (one path component).
pub fn sanitize(name: &str) -> String {
    crate::output::component(name, &['-', '_', '.'], '_', "app")
}
