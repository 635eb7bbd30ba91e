//! Workload cards: a suite's published per-benchmark characteristics (a paper's table or
//! figure value, with its seed-text line) checked against what the engine measures for the
//! suite's synthetic spec on the paper's GPU model.
//!
//! Owns the card file format (`traces/<paper>/card.toml`, parsed and validated here with
//! file/line errors), the measurement (one isolated profile per benchmark through
//! [`crate::profile::profile_on`], only the sweeps its rows read, benchmarks in parallel),
//! and the comparison of every row with its tolerance. Rendering lives in `render`.
//!
//! A row may carry `expect = "fail"` with the measured reason (`why`): it documents a known
//! gap between a spec and its paper. The card's verdict is whether every row did what it
//! was expected to do, so a known gap that closes is noticed as well as a new one.

pub mod render;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::arch::GpuSpec;
use crate::engine::AppSpec;
use crate::error::{Error, Result};
use crate::profile::{self, Axis, Profile, ProfileOptions};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app;

/// Version of the card result JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// The characteristic a row compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum What {
    /// Issue-slot utilisation of the full-GPU alone run as nvprof reports it (what the
    /// papers print): warp instructions per scheduler-cycle, at most 1 (a dual-issued pair
    /// counts twice; `crate::study::multitenancy::isu`, the SiM study's split).
    IsuAlone,
    /// Warp instructions per cycle per SM, alone.
    IpcPerSm,
    /// L2 misses per thousand warp instructions, alone.
    L2Mpki,
    /// DRAM bandwidth used alone / the model's peak.
    DramShare,
    /// Global load + store throughput alone in GB/s (nvprof's `gld` + `gst` throughput:
    /// L1 sector accesses × sector size per second).
    GlobalGbps,
    /// Resident CTAs per SM of the benchmark's main kernel (occupancy).
    CtasPerSm,
    /// The main kernel's grid in waves of the GPU (CTAs / (CTAs per SM × SMs)).
    GridWaves,
    /// CTAs per SM at the peak of performance vs CTAs per SM.
    PeakCtasPerSm,
    /// IPC with a quarter of the memory channels / IPC with all of them.
    FracAtQuarterChannels,
    /// IPC on a quarter of the SMs / IPC on all of them.
    FracAtQuarterSms,
    /// Warped-Slicer Table II type (compute / memory / cache).
    WsType,
    /// Warped-Slicer Fig. 3a curve category.
    WsCurve,
    /// Punyala class (M / MC / C / A).
    PunyalaClass,
    /// Slate class (`<c>_C/<m>_M`) as the Slate policy computes it for the study
    /// (`crate::policy::slate`: achieved / peak FP32 flop rate, L2 load + store bytes / DRAM
    /// peak, default thresholds).
    SlateClass,
    /// UGPU memory- or compute-bound (`memory` / `compute`).
    UgpuBound,
    /// SiM ISU class: `low-isu` when [`What::IsuAlone`] is below 50%, else `high-isu`.
    IsuClass,
}

impl What {
    pub fn name(self) -> &'static str {
        match self {
            What::IsuAlone => "isu_alone",
            What::IpcPerSm => "ipc_per_sm",
            What::L2Mpki => "l2_mpki",
            What::DramShare => "dram_share",
            What::GlobalGbps => "global_gbps",
            What::CtasPerSm => "ctas_per_sm",
            What::GridWaves => "grid_waves",
            What::PeakCtasPerSm => "peak_ctas_per_sm",
            What::FracAtQuarterChannels => "frac_at_quarter_channels",
            What::FracAtQuarterSms => "frac_at_quarter_sms",
            What::WsType => "ws_type",
            What::WsCurve => "ws_curve",
            What::PunyalaClass => "punyala_class",
            What::SlateClass => "slate_class",
            What::UgpuBound => "ugpu_bound",
            What::IsuClass => "isu_class",
        }
    }
    /// The sweep the value is read from (`None`: the alone run or the launch).
    pub fn axis(self) -> Option<Axis> {
        match self {
            What::PeakCtasPerSm | What::WsType | What::WsCurve => Some(Axis::CtasPerSm),
            What::FracAtQuarterChannels => Some(Axis::Channels),
            What::FracAtQuarterSms => Some(Axis::Sms),
            _ => None,
        }
    }
    /// A class label (compared exactly) rather than a number.
    pub fn is_label(self) -> bool {
        matches!(
            self,
            What::WsType
                | What::WsCurve
                | What::PunyalaClass
                | What::SlateClass
                | What::UgpuBound
                | What::IsuClass
        )
    }
}

/// A paper's or the engine's value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Num(f64),
    Label(String),
}

/// How close the engine must come: `"exact"`, `"below"` / `"above"` (the paper value is a
/// bound, e.g. ISU < 50%), `{ rel = 0.25 }` or `{ abs = 0.1 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    Exact,
    Below,
    Above,
    Rel(f64),
    Abs(f64),
}

/// What a row is expected to do on today's specs and engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    #[default]
    Pass,
    Fail,
}

/// One `[[row]]` of a card file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Benchmark name (the spec's file stem unless `spec` says otherwise).
    pub bench: String,
    /// Spec file, relative to the card's folder (default `<bench>.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    pub what: What,
    pub paper: Value,
    /// Paper, table or figure the value comes from.
    pub source: String,
    /// Line of the value in the paper's seed text.
    pub line: u32,
    pub tolerance: Tolerance,
    #[serde(default)]
    pub expect: Expect,
    /// Required with `expect = "fail"`: the measured reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCard {
    paper: String,
    seed: String,
    gpu: String,
    tolerances: String,
    row: Vec<toml::Spanned<Row>>,
}

/// A parsed, validated card.
#[derive(Clone, Debug)]
pub struct Card {
    pub path: PathBuf,
    pub paper: String,
    pub seed: String,
    /// The paper's GPU model (built-in name or path relative to the card).
    pub gpu: String,
    /// How the tolerances were chosen (printed in CARD.md).
    pub tolerances: String,
    /// Rows with their line in the card file.
    pub rows: Vec<(u64, Row)>,
}

fn line_at(text: &str, offset: usize) -> u64 {
    text[..offset.min(text.len())].matches('\n').count() as u64 + 1
}

impl Card {
    /// Reads `path`: a card file, a suite folder holding `card.toml`, or the suite's
    /// `suite.toml` (its folder's `card.toml` is read).
    pub fn load(path: &Path) -> Result<Card> {
        let path = if path.is_dir() {
            path.join("card.toml")
        } else if path.file_name().is_some_and(|n| n == "suite.toml") {
            path.with_file_name("card.toml")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::input(&path, None, format!("cannot read the card: {e}")))?;
        Card::from_str(&text, &path)
    }

    /// Parses and validates card text; errors name `path` and the line.
    pub fn from_str(text: &str, path: &Path) -> Result<Card> {
        let raw: RawCard = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_at(text, s.start));
            Error::input(path, line, e.message().trim().to_string())
        })?;
        let mut card = Card {
            path: path.to_path_buf(),
            paper: raw.paper,
            seed: raw.seed,
            gpu: raw.gpu,
            tolerances: raw.tolerances,
            rows: Vec::new(),
        };
        if raw.row.is_empty() {
            return Err(Error::input(
                path,
                None,
                "a card needs at least one [[row]]",
            ));
        }
        for r in raw.row {
            let line = line_at(text, r.span().start);
            let row = r.into_inner();
            card.check_row(&row)
                .map_err(|m| Error::at_line(path, line, m))?;
            card.rows.push((line, row));
        }
        Ok(card)
    }

    fn check_row(&self, r: &Row) -> std::result::Result<(), String> {
        let what = r.what.name();
        match (&r.paper, r.what.is_label()) {
            (Value::Label(_), false) => {
                return Err(format!("{what} needs a number as paper value"))
            }
            (Value::Num(_), true) => return Err(format!("{what} needs a label as paper value")),
            (Value::Num(v), false) if !v.is_finite() => {
                return Err(format!("paper value {v} is not a finite number"))
            }
            _ => {}
        }
        match r.tolerance {
            Tolerance::Exact => {}
            _ if r.what.is_label() => {
                return Err(format!(
                    "{what} is a class label: its tolerance must be \"exact\""
                ))
            }
            Tolerance::Rel(t) | Tolerance::Abs(t) if !(t.is_finite() && t >= 0.0) => {
                return Err(format!("tolerance {t} must be a finite number >= 0"))
            }
            _ => {}
        }
        if r.expect == Expect::Fail && r.why.as_deref().is_none_or(|w| w.trim().is_empty()) {
            return Err("expect = \"fail\" needs `why` (the measured reason)".to_string());
        }
        if r.line == 0 {
            return Err("line must be the value's line in the seed text (>= 1)".to_string());
        }
        let spec = self.spec_path(r);
        if !spec.is_file() {
            return Err(format!("spec {} not found", spec.display()));
        }
        Ok(())
    }

    /// The folder the card's relative paths start from.
    pub fn dir(&self) -> PathBuf {
        self.path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// The spec file a row measures.
    pub fn spec_path(&self, r: &Row) -> PathBuf {
        let file = r
            .spec
            .clone()
            .unwrap_or_else(|| format!("{}.toml", r.bench));
        self.dir().join(file)
    }

    /// The GPU model named by the card (relative .toml paths start at the card's folder).
    pub fn model_name(&self) -> String {
        if self.gpu.ends_with(".toml") && Path::new(&self.gpu).is_relative() {
            self.dir().join(&self.gpu).display().to_string()
        } else {
            self.gpu.clone()
        }
    }

    /// Keeps only the rows of the named benchmarks (every one must exist).
    pub fn retain_benches(&mut self, names: &[String]) -> Result<()> {
        for n in names {
            if !self.rows.iter().any(|(_, r)| &r.bench == n) {
                return Err(Error::input(
                    &self.path,
                    None,
                    format!("no row for bench {n:?}"),
                ));
            }
        }
        self.rows.retain(|(_, r)| names.contains(&r.bench));
        Ok(())
    }
}

/// One benchmark to profile: its spec and the sweeps its rows read.
#[derive(Clone, Debug)]
pub struct Bench {
    pub name: String,
    pub spec: PathBuf,
    pub axes: Vec<Axis>,
}

/// The distinct benchmarks of a card in order of first appearance.
pub fn benches(card: &Card) -> Vec<Bench> {
    let mut v: Vec<Bench> = Vec::new();
    for (_, r) in &card.rows {
        let i = match v.iter().position(|b| b.name == r.bench) {
            Some(i) => i,
            None => {
                v.push(Bench {
                    name: r.bench.clone(),
                    spec: card.spec_path(r),
                    axes: Vec::new(),
                });
                v.len() - 1
            }
        };
        if let Some(a) = r.what.axis() {
            if !v[i].axes.contains(&a) {
                v[i].axes.push(a);
            }
        }
    }
    v
}

/// Loads every benchmark's spec as an application.
pub fn load_apps(benches: &[Bench]) -> Result<Vec<AppSpec>> {
    benches
        .iter()
        .map(|b| {
            let app = open_app(&b.spec, &ParseOptions::default())?;
            Ok(AppSpec::new(b.name.clone(), app.kernels.clone()))
        })
        .collect()
}

/// Engine runs the measurement makes (for progress bars).
pub fn run_count(
    spec: &GpuSpec,
    benches: &[Bench],
    apps: &[AppSpec],
    opts: &ProfileOptions,
) -> Result<usize> {
    benches
        .iter()
        .zip(apps)
        .map(|(b, a)| profile::run_count_on(spec, a, opts, &b.axes))
        .sum()
}

/// Profiles every benchmark (in parallel; results in `benches` order).
pub fn measure(
    spec: &GpuSpec,
    benches: &[Bench],
    apps: &[AppSpec],
    opts: &ProfileOptions,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<Profile>> {
    benches
        .par_iter()
        .zip(apps)
        .map(|(b, a)| profile::profile_on(spec, a, opts, &b.axes, done))
        .collect()
}

/// A row with the engine's value and the verdict.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RowResult {
    /// Line of the row in the card file.
    pub card_line: u64,
    #[serde(flatten)]
    pub row: Row,
    pub engine: Value,
    /// How the engine value was read (the sampled point, the rule's inputs).
    pub detail: String,
    pub pass: bool,
    /// `pass` is what `expect` says.
    pub as_expected: bool,
}

/// A measured card.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CardResult {
    pub schema_version: u32,
    pub card: String,
    pub paper: String,
    pub seed: String,
    /// The effective GPU model's name.
    pub model: String,
    /// The card's GPU model (the paper's).
    pub card_gpu: String,
    pub tolerances: String,
    pub rows: Vec<RowResult>,
}

impl CardResult {
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|r| !r.pass).count()
    }
    pub fn unexpected(&self) -> usize {
        self.rows.iter().filter(|r| !r.as_expected).count()
    }
    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map(|s| s + "\n")
            .map_err(|e| Error::Usage(format!("cannot serialise the card: {e}")))
    }
}

/// The curve point closest to a quarter of the axis's largest value, as a fraction of the
/// curve's last (full-resource) point.
fn quarter(p: &Profile, axis: Axis) -> (f64, String) {
    let Some(c) = p.curve(axis).filter(|c| !c.points.is_empty()) else {
        return (f64::NAN, format!("no {} curve", axis.name()));
    };
    let full = &c.points[c.points.len() - 1];
    let target = full.x as f64 / 4.0;
    let q = c
        .points
        .iter()
        .min_by(|a, b| {
            (a.x as f64 - target)
                .abs()
                .total_cmp(&(b.x as f64 - target).abs())
        })
        .unwrap_or(full);
    let frac = if full.ipc > 0.0 {
        q.ipc / full.ipc
    } else {
        0.0
    };
    (
        frac,
        format!("IPC {:.3} at {} of {} {}", q.ipc, q.x, full.x, axis.label()),
    )
}

/// nvprof's issue-slot utilisation of the alone run ([`What::IsuAlone`]).
fn nvprof_isu(p: &Profile) -> f64 {
    crate::study::multitenancy::isu_of(&p.model, p.alone.warp_insts, p.alone.cycles)
}

/// Reads one characteristic from a benchmark's profile.
pub fn value_of(what: What, p: &Profile, app: &AppSpec) -> (Value, String) {
    let num = |v: f64, d: String| (Value::Num(v), d);
    let label = |v: &str, d: String| (Value::Label(v.to_string()), d);
    let l = &p.labels;
    match what {
        What::IsuAlone => num(
            nvprof_isu(p),
            format!(
                "{} cycles alone, per issue slot {:.3}",
                p.alone.cycles, p.alone.rates.isu
            ),
        ),
        What::IpcPerSm => {
            let sms = p.model.sm.count.max(1) as f64;
            num(
                p.alone.rates.ipc / sms,
                format!("GPU IPC {:.2}", p.alone.rates.ipc),
            )
        }
        What::L2Mpki => num(
            p.metrics.l2_mpki,
            format!("L2 hit {:.3}", p.metrics.l2_hit_rate),
        ),
        What::DramShare => num(
            p.metrics.dram_bw / p.metrics.dram_bw_max.max(1.0),
            format!("{:.1} GB/s", p.metrics.dram_bw / 1e9),
        ),
        What::GlobalGbps => num(
            p.metrics.global_bw / 1e9,
            format!(
                "{:.3} of peak DRAM",
                p.metrics.global_bw / p.metrics.dram_bw_max.max(1.0)
            ),
        ),
        What::CtasPerSm => num(
            p.max_ctas_per_sm as f64,
            format!("limited by {}", p.limiter),
        ),
        What::GridWaves => {
            let ctas: u64 = app
                .kernels
                .iter()
                .find(|k| k.info().name == p.kernel)
                .map_or(0, |k| k.info().grid.iter().map(|&g| g as u64).product());
            let wave = p.max_ctas_per_sm as u64 * p.model.sm.count as u64;
            let waves = ctas as f64 / wave.max(1) as f64;
            num(waves, format!("{ctas} CTAs, {wave} per wave"))
        }
        What::PeakCtasPerSm => num(
            l.warped_slicer.peak_ctas as f64,
            format!("of {} CTAs/SM", l.warped_slicer.max_ctas),
        ),
        What::FracAtQuarterChannels => {
            let (v, d) = quarter(p, Axis::Channels);
            num(v, d)
        }
        What::FracAtQuarterSms => {
            let (v, d) = quarter(p, Axis::Sms);
            num(v, d)
        }
        What::WsType => label(l.warped_slicer.kind.name(), l.warped_slicer.why.clone()),
        What::WsCurve => label(l.warped_slicer.curve.name(), l.warped_slicer.why.clone()),
        What::PunyalaClass => label(l.punyala.class.name(), l.punyala.why.clone()),
        What::SlateClass => {
            let Some(a) = &p.alone.stats else {
                return label("n/a", "no alone-run statistics".to_string());
            };
            let (c, m) = crate::policy::slate::intensities(&p.model, a);
            let class = crate::policy::slate::SlateParams::default().classify((c, m));
            let d = format!(
                "FP32 {c:.4} of peak, L2 load+store {m:.3} of DRAM peak; profiler: {}",
                l.slate.class
            );
            label(&class.label(), d)
        }
        What::UgpuBound => label(l.ugpu.bound.name(), l.ugpu.why.clone()),
        What::IsuClass => {
            let isu = nvprof_isu(p);
            let c = if isu < 0.5 { "low-isu" } else { "high-isu" };
            label(c, format!("ISU {isu:.3}"))
        }
    }
}

/// Whether `engine` is within `tol` of `paper`.
pub fn within(paper: &Value, engine: &Value, tol: Tolerance) -> bool {
    match (paper, engine) {
        (Value::Label(p), Value::Label(e)) => tol == Tolerance::Exact && p == e,
        (Value::Num(p), Value::Num(e)) if e.is_finite() => match tol {
            Tolerance::Exact => (e - p).abs() <= 1e-9 * p.abs().max(1.0),
            Tolerance::Below => e < p,
            Tolerance::Above => e > p,
            Tolerance::Rel(r) => (e - p).abs() <= r * p.abs(),
            Tolerance::Abs(a) => (e - p).abs() <= a,
        },
        _ => false,
    }
}

/// Compares every row with the measured profiles (`profiles` in [`benches`] order).
pub fn evaluate(
    card: &Card,
    model: &str,
    benches: &[Bench],
    apps: &[AppSpec],
    profiles: &[Profile],
) -> CardResult {
    let rows = card
        .rows
        .iter()
        .map(|(line, r)| {
            let i = benches.iter().position(|b| b.name == r.bench).unwrap_or(0);
            let (engine, detail) = value_of(r.what, &profiles[i], &apps[i]);
            let pass = within(&r.paper, &engine, r.tolerance);
            RowResult {
                card_line: *line,
                row: r.clone(),
                engine,
                detail,
                pass,
                as_expected: pass == (r.expect == Expect::Pass),
            }
        })
        .collect();
    CardResult {
        schema_version: SCHEMA_VERSION,
        card: card.path.display().to_string(),
        paper: card.paper.clone(),
        seed: card.seed.clone(),
        model: model.to_string(),
        card_gpu: card.gpu.clone(),
        tolerances: card.tolerances.clone(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances() {
        let n = Value::Num;
        assert!(within(&n(10.0), &n(12.5), Tolerance::Rel(0.25)));
        assert!(!within(&n(10.0), &n(12.6), Tolerance::Rel(0.25)));
        assert!(within(&n(1.0), &n(0.9), Tolerance::Abs(0.1 + 1e-12)));
        assert!(!within(&n(1.0), &n(0.89), Tolerance::Abs(0.1)));
        assert!(within(&n(8.0), &n(7.0), Tolerance::Below));
        assert!(!within(&n(8.0), &n(8.0), Tolerance::Below));
        assert!(within(&n(0.5), &n(0.6), Tolerance::Above));
        assert!(within(&n(6.0), &n(6.0), Tolerance::Exact));
        assert!(!within(&n(6.0), &n(f64::NAN), Tolerance::Abs(1e9)));
        let l = |s: &str| Value::Label(s.to_string());
        assert!(within(&l("M"), &l("M"), Tolerance::Exact));
        assert!(!within(&l("M"), &l("MC"), Tolerance::Exact));
        assert!(!within(&l("M"), &n(1.0), Tolerance::Exact));
    }

    #[test]
    fn numbers_print_with_three_significant_digits() {
        use render::num;
        assert_eq!(num(51.3), "51.3");
        assert_eq!(num(0.03), "0.03");
        assert_eq!(num(1.2820512), "1.28");
        assert_eq!(num(166.6), "167");
        assert_eq!(num(16.0), "16");
        assert_eq!(num(0.0004), "0.0004");
        assert_eq!(num(f64::NAN), "n/a");
    }
}
