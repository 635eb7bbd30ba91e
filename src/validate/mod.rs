//! Accuracy against a reference simulator: reads a folder laid out like
//! `../shared/reference/` (traces of kernels alone and of concurrent pairs, plus
//! `results_kernels.csv` and `results_pairs.csv` from Accel-Sim), runs every case on the
//! engine and reports per-kernel cycle error, its mean absolute error, and per-pair slowdown
//! error. Cases run in parallel (rayon); results are in file order. `loo` adds the
//! leave-one-out figures: the same errors with the fitted values refitted without the case.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use crate::arch::GpuSpec;
use crate::engine::{self, AppSpec, FastForward, RunConfig, RunStats};
use crate::error::{Error, Result};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app;
use crate::trace::KernelSource;

pub mod loo;

/// Model keys that turn off a mechanism GPGPU-Sim (and so Accel-Sim) does not have. The
/// bundled hardware models turn these mechanisms on; `validate` applies these overrides when
/// the reference folder's results come from Accel-Sim, so the engine is compared with the
/// simulator on the mechanisms both have (issue 45).
pub const ABSENT_IN_ACCEL_SIM: &[&str] = &[
    // GPGPU-Sim's DRAM model issues no refresh (dram.cc has no REF command).
    "dram.refresh=false",
    // GPGPU-Sim has no address translation (no TLB, no page walk).
    "translation.enabled=false",
    // GPGPU-Sim's L2 (`dl2`, lazy fetch on read in every Accel-Sim configuration) makes a
    // sector written in part valid without reading it.
    "l2.partial_write=\"validate\"",
];

/// Options every Accel-Sim reference run here was made with (`../shared/reference/README.md`
/// and `accel-sim.md`: `-gpgpu_kernel_launch_latency 0`, overriding the configurations'
/// 5000), applied with [`ABSENT_IN_ACCEL_SIM`].
pub const ACCEL_SIM_RUN_OPTIONS: &[&str] = &["launch.kernel_latency=0"];

/// Where a reference folder's numbers come from: its optional `reference.toml` says
/// `simulator = "accel-sim"` or `"hardware"`; without the file, Accel-Sim (the CSV columns
/// are GPGPU-Sim's statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Simulator {
    AccelSim,
    Hardware,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferenceFile {
    simulator: String,
}

impl Simulator {
    /// The simulator `dir` declares (see [`Simulator`]).
    pub fn of(dir: &Path) -> Result<Simulator> {
        let path = dir.join("reference.toml");
        if !path.exists() {
            return Ok(Simulator::AccelSim);
        }
        let text = crate::infile::read_to_string(&path)?;
        let f: ReferenceFile = toml::from_str(&text).map_err(|e| {
            Error::input(
                &path,
                e.span()
                    .map(|s| text[..s.start].lines().count().max(1) as u64),
                format!(
                    "{}; expected `simulator = \"accel-sim\"` or `\"hardware\"`",
                    e.message()
                ),
            )
        })?;
        match f.simulator.as_str() {
            "accel-sim" => Ok(Simulator::AccelSim),
            "hardware" => Ok(Simulator::Hardware),
            other => Err(Error::input(
                &path,
                None,
                format!("simulator `{other}`: expected \"accel-sim\" or \"hardware\""),
            )),
        }
    }

    /// The overrides that turn off what this reference does not model, and the options
    /// its runs were made with.
    pub fn turned_off(self) -> Vec<&'static str> {
        match self {
            Simulator::AccelSim => ABSENT_IN_ACCEL_SIM
                .iter()
                .chain(ACCEL_SIM_RUN_OPTIONS)
                .copied()
                .collect(),
            Simulator::Hardware => Vec::new(),
        }
    }
}

/// One kernel alone.
#[derive(Clone, Debug, Serialize)]
pub struct KernelCase {
    /// Cycles fast-forward skipped (not in the JSON).
    #[serde(skip)]
    pub skipped: u64,
    pub kernel: String,
    pub ref_cycles: u64,
    pub cycles: u64,
    pub error_pct: f64,
    pub ref_l1_miss_rate: Option<f64>,
    pub l1_miss_rate: f64,
    pub ref_l2_miss_rate: Option<f64>,
    pub l2_miss_rate: f64,
    /// DRAM accesses (reads, writes) the reference reports, when its CSV has them.
    pub ref_dram: Option<(u64, u64)>,
    /// DRAM accesses (reads, writes) of the engine (one per `dram.access_bytes`).
    pub dram: (u64, u64),
}

/// One concurrent pair.
#[derive(Clone, Debug, Serialize)]
pub struct PairCase {
    /// Cycles fast-forward skipped in the co-run and both alone runs (not in the JSON).
    #[serde(skip)]
    pub skipped: u64,
    pub pair: String,
    pub ref_slowdown_a: f64,
    pub ref_slowdown_b: f64,
    pub slowdown_a: f64,
    pub slowdown_b: f64,
    pub ref_end_a: u64,
    pub ref_end_b: u64,
    pub end_a: u64,
    pub end_b: u64,
    /// |ours − reference| / reference, percent, for A and B.
    pub error_a_pct: f64,
    pub error_b_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub gpu: String,
    /// Where the reference numbers come from (the folder's `reference.toml`).
    pub reference: Simulator,
    /// The `--set` overrides applied because the reference lacks those mechanisms.
    pub turned_off: Vec<String>,
    pub kernel_cycle_mae_pct: f64,
    pub pair_slowdown_mae_pct: f64,
    pub kernels: Vec<KernelCase>,
    pub pairs: Vec<PairCase>,
    /// The same errors with every fitted value refitted without the case predicted;
    /// absent with `validate --no-leave-one-out`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leave_one_out: Option<loo::LeaveOneOut>,
    /// The same kernel and pair figures with steady-state fast-forward (`validate
    /// --fast-forward`); absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<FfFigures>,
}

/// Validation figures with steady-state fast-forward, beside the detailed ones.
#[derive(Clone, Debug, Serialize)]
pub struct FfFigures {
    pub kernel_cycle_mae_pct: f64,
    pub pair_slowdown_mae_pct: f64,
    /// Largest |fast-forwarded − detailed| / detailed cycles of a kernel alone, percent.
    pub max_kernel_cycle_diff_pct: f64,
    /// Cycles skipped over the kernels run alone, and over the pair runs (co-runs and
    /// their alone references).
    pub kernel_skipped_cycles: u64,
    pub pair_skipped_cycles: u64,
}

/// A CSV file as rows of named columns.
struct Csv {
    path: PathBuf,
    header: Vec<String>,
    rows: Vec<(u64, Vec<String>)>,
}

impl Csv {
    fn read(path: &Path) -> Result<Csv> {
        if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Err(Error::input(
                path,
                None,
                "not found: expected a reference folder laid out like ../shared/reference \
                 (results_kernels.csv, results_pairs.csv, traces/)",
            ));
        }
        let text = crate::infile::read_to_string(path)?;
        let mut lines = text.lines().enumerate();
        let header = lines
            .next()
            .ok_or_else(|| Error::input(path, Some(1), "empty CSV: expected a header line"))?
            .1
            .split(',')
            .map(|s| s.trim().to_string())
            .collect::<Vec<_>>();
        let mut rows = Vec::new();
        for (i, l) in lines {
            if l.trim().is_empty() {
                continue;
            }
            let cells: Vec<String> = l.split(',').map(|s| s.trim().to_string()).collect();
            if cells.len() != header.len() {
                return Err(Error::at_line(
                    path,
                    i as u64 + 1,
                    format!(
                        "{} fields, expected {} as in the header",
                        cells.len(),
                        header.len()
                    ),
                ));
            }
            rows.push((i as u64 + 1, cells));
        }
        Ok(Csv {
            path: path.to_path_buf(),
            header,
            rows,
        })
    }

    /// Every row's `name` column is distinct: a reference case is named once (the report
    /// and the leave-one-out refit go by name, and a repeated row would only be simulated
    /// again).
    fn unique(&self, name: &str) -> Result<()> {
        let c = self.col(name)?;
        let mut seen = std::collections::HashMap::new();
        for (line, cells) in &self.rows {
            if let Some(first) = seen.insert(cells[c].as_str(), *line) {
                return Err(Error::at_line(
                    &self.path,
                    *line,
                    format!(
                        "column `{name}`: `{}` again (first on line {first}); expected each \
                         case once",
                        cells[c]
                    ),
                ));
            }
        }
        Ok(())
    }

    fn col(&self, name: &str) -> Result<usize> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            Error::input(
                &self.path,
                Some(1),
                format!("no column `{name}` in the header"),
            )
        })
    }

    /// A reference value: a finite, non-negative number (every reference quantity —
    /// cycles, rates, traffic, slowdowns — is one; NaN, infinities and negatives are bad
    /// input, never averaged into an error figure).
    fn get<T: std::str::FromStr>(&self, row: usize, name: &str) -> Result<T> {
        let (line, cells) = &self.rows[row];
        let c = self.col(name)?;
        let cell = cells[c].trim();
        let bad = |what: &str| {
            Error::at_line(
                &self.path,
                *line,
                format!("column `{name}`: `{cell}` {what}"),
            )
        };
        if let Ok(x) = cell.parse::<f64>() {
            if !x.is_finite() || x < 0.0 {
                return Err(bad("is not a finite, non-negative number"));
            }
        }
        cell.parse().map_err(|_| bad("cannot be read as a number"))
    }

    /// An optional reference value: `None` when the column is absent or the cell empty
    /// (or `-`, `n/a`); a cell that is present but bad is an error.
    fn opt<T: std::str::FromStr>(&self, row: usize, name: &str) -> Result<Option<T>> {
        let Ok(c) = self.col(name) else {
            return Ok(None);
        };
        let cell = self.rows[row].1[c].trim();
        if cell.is_empty() || cell == "-" || cell.eq_ignore_ascii_case("n/a") {
            return Ok(None);
        }
        self.get(row, name).map(Some)
    }

    fn text(&self, row: usize, name: &str) -> Result<String> {
        Ok(self.rows[row].1[self.col(name)?].clone())
    }
}

fn pct(ours: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        0.0
    } else {
        100.0 * (ours - reference).abs() / reference
    }
}

/// Splits an application's kernels into one application per CUDA stream.
pub fn by_stream(name: &str, kernels: &[Arc<dyn KernelSource>]) -> Vec<AppSpec> {
    let mut order: Vec<u64> = Vec::new();
    let mut groups: HashMap<u64, Vec<Arc<dyn KernelSource>>> = HashMap::new();
    for k in kernels {
        let s = k.info().stream_id;
        if !order.contains(&s) {
            order.push(s);
        }
        groups.entry(s).or_default().push(k.clone());
    }
    order
        .iter()
        .map(|s| {
            AppSpec::new(
                format!("{name}/stream{s}"),
                groups.remove(s).unwrap_or_default(),
            )
        })
        .collect()
}

fn config(apps: usize, ff: Option<FastForward>) -> RunConfig {
    RunConfig {
        fast_forward: ff,
        ..RunConfig::completion(apps)
    }
}

fn skipped(s: &RunStats) -> u64 {
    s.fast_forward.as_ref().map_or(0, |f| f.cycles)
}

/// A kernel alone: its cycles, L1 and L2 miss ratios, and DRAM (reads, writes).
struct Alone {
    /// Cycles fast-forward skipped.
    skipped: u64,
    cycles: u64,
    l1_miss: f64,
    l2_miss: f64,
    dram: (u64, u64),
}

fn alone(spec: &GpuSpec, app: &AppSpec, ff: Option<FastForward>) -> Result<Alone> {
    let s = engine::run_static(spec, std::slice::from_ref(app), &config(1, ff))?;
    let a = &s.apps[0];
    Ok(Alone {
        skipped: skipped(&s),
        cycles: a.cycles,
        l1_miss: 1.0 - a.rates.l1_hit_rate,
        l2_miss: 1.0 - a.rates.l2_hit_rate,
        dram: (a.counters.dram_reads, a.counters.dram_writes),
    })
}

/// One kernel of the reference folder, parsed and with its reference row checked.
pub(crate) struct KernelInput {
    pub(crate) name: String,
    app: AppSpec,
    ref_cycles: u64,
    ref_dram: Option<(u64, u64)>,
    ref_l1_miss_rate: Option<f64>,
    ref_l2_miss_rate: Option<f64>,
}

/// One concurrent pair of the reference folder: its two streams and reference row.
pub(crate) struct PairInput {
    pub(crate) pair: String,
    apps: Vec<AppSpec>,
    ref_slowdown_a: f64,
    ref_slowdown_b: f64,
    ref_end_a: u64,
    ref_end_b: u64,
}

/// Every case of a reference folder, loaded once and simulated as often as needed
/// (the leave-one-out refit runs the kernels under several parameter values).
pub(crate) struct Cases {
    pub(crate) kernels: Vec<KernelInput>,
    pub(crate) pairs: Vec<PairInput>,
}

impl Cases {
    /// Reads both CSVs (every reference value checked before anything is simulated) and
    /// opens every trace.
    pub(crate) fn load(dir: &Path) -> Result<Cases> {
        let kcsv = Csv::read(&dir.join("results_kernels.csv"))?;
        let pcsv = Csv::read(&dir.join("results_pairs.csv"))?;
        kcsv.unique("kernel")?;
        pcsv.unique("pair")?;
        let opts = ParseOptions::default();
        let kernels: Vec<Result<KernelInput>> = (0..kcsv.rows.len())
            .into_par_iter()
            .map(|r| {
                let name: String = kcsv.text(r, "kernel")?;
                let tdir = dir.join(kcsv.text(r, "trace_dir")?);
                let ref_cycles: u64 = kcsv.get(r, "gpu_sim_cycle")?;
                if ref_cycles == 0 {
                    return Err(Error::input(
                        &kcsv.path,
                        Some(kcsv.rows[r].0),
                        "column `gpu_sim_cycle`: 0 cycles; expected a positive cycle count",
                    ));
                }
                let ref_dram = kcsv
                    .opt(r, "dram_read_txn_32B")?
                    .zip(kcsv.opt(r, "dram_write_txn_32B")?);
                let ref_l1_miss_rate = kcsv.opt(r, "l1d_miss_rate")?;
                let ref_l2_miss_rate = kcsv.opt(r, "l2_miss_rate")?;
                let app = open_app(&tdir, &opts)?;
                Ok(KernelInput {
                    app: AppSpec::new(name.clone(), app.kernels),
                    name,
                    ref_cycles,
                    ref_dram,
                    ref_l1_miss_rate,
                    ref_l2_miss_rate,
                })
            })
            .collect();
        let kernels = kernels.into_iter().collect::<Result<Vec<_>>>()?;
        let pairs: Vec<Result<PairInput>> = (0..pcsv.rows.len())
            .into_par_iter()
            .map(|r| {
                let pair: String = pcsv.text(r, "pair")?;
                let tdir = dir.join(pcsv.text(r, "trace_dir")?);
                let ra: f64 = pcsv.get(r, "slowdown_a")?;
                let rb: f64 = pcsv.get(r, "slowdown_b")?;
                if ra == 0.0 || rb == 0.0 {
                    return Err(Error::input(
                        &pcsv.path,
                        Some(pcsv.rows[r].0),
                        "a slowdown of 0; expected a positive ratio (co-run time / alone time)",
                    ));
                }
                let ref_end_a = pcsv.get(r, "end_cycle_a")?;
                let ref_end_b = pcsv.get(r, "end_cycle_b")?;
                let app = open_app(&tdir, &opts)?;
                let apps = by_stream(&pair, &app.kernels);
                if apps.len() != 2 {
                    return Err(Error::input(
                        &tdir,
                        None,
                        format!(
                            "expected two CUDA streams in the pair, found {}",
                            apps.len()
                        ),
                    ));
                }
                Ok(PairInput {
                    pair,
                    apps,
                    ref_slowdown_a: ra,
                    ref_slowdown_b: rb,
                    ref_end_a,
                    ref_end_b,
                })
            })
            .collect();
        let pairs = pairs.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Cases { kernels, pairs })
    }
}

/// Every kernel alone on `spec`, in file order.
pub(crate) fn run_kernels(
    spec: &GpuSpec,
    kernels: &[KernelInput],
    ff: Option<FastForward>,
) -> Result<Vec<KernelCase>> {
    let out: Vec<Result<KernelCase>> = kernels
        .par_iter()
        .map(|k| {
            let got = alone(spec, &k.app, ff)?;
            Ok(KernelCase {
                skipped: got.skipped,
                error_pct: pct(got.cycles as f64, k.ref_cycles as f64),
                kernel: k.name.clone(),
                ref_cycles: k.ref_cycles,
                cycles: got.cycles,
                ref_l1_miss_rate: k.ref_l1_miss_rate,
                l1_miss_rate: got.l1_miss,
                ref_l2_miss_rate: k.ref_l2_miss_rate,
                l2_miss_rate: got.l2_miss,
                ref_dram: k.ref_dram,
                dram: got.dram,
            })
        })
        .collect();
    out.into_iter().collect()
}

/// One pair co-run on `spec`, each side's slowdown against the same stream alone.
pub(crate) fn run_pair(spec: &GpuSpec, p: &PairInput, ff: Option<FastForward>) -> Result<PairCase> {
    let s = engine::run_static(spec, &p.apps, &config(2, ff))?;
    let (a, b) = (alone(spec, &p.apps[0], ff)?, alone(spec, &p.apps[1], ff)?);
    let (alone_a, alone_b) = (a.cycles, b.cycles);
    let (end_a, end_b) = (s.apps[0].end, s.apps[1].end);
    let sa = end_a as f64 / alone_a.max(1) as f64;
    let sb = end_b as f64 / alone_b.max(1) as f64;
    Ok(PairCase {
        skipped: skipped(&s) + a.skipped + b.skipped,
        pair: p.pair.clone(),
        ref_slowdown_a: p.ref_slowdown_a,
        ref_slowdown_b: p.ref_slowdown_b,
        slowdown_a: sa,
        slowdown_b: sb,
        ref_end_a: p.ref_end_a,
        ref_end_b: p.ref_end_b,
        end_a,
        end_b,
        error_a_pct: pct(sa, p.ref_slowdown_a),
        error_b_pct: pct(sb, p.ref_slowdown_b),
    })
}

/// Mean absolute error of kernel cycle errors, percent.
pub(crate) fn kernel_mae<'a>(errors: impl Iterator<Item = &'a f64>) -> f64 {
    let (sum, n) = errors.fold((0.0, 0usize), |(s, n), e| (s + e, n + 1));
    sum / n.max(1) as f64
}

/// Mean absolute error over both sides of every pair, percent.
pub(crate) fn pair_mae(pairs: &[PairCase]) -> f64 {
    pairs
        .iter()
        .map(|p| p.error_a_pct + p.error_b_pct)
        .sum::<f64>()
        / (2 * pairs.len()).max(1) as f64
}

/// Runs every case of the reference folder `dir` on `spec`.
pub fn validate(dir: &Path, spec: &GpuSpec) -> Result<Report> {
    validate_with(dir, spec, false)
}

/// [`validate`], and with `leave_one_out` the leave-one-out figures of [`loo`] beside
/// the ordinary ones.
pub fn validate_with(dir: &Path, spec: &GpuSpec, leave_one_out: bool) -> Result<Report> {
    validate_ff(dir, spec, leave_one_out, None)
}

/// [`validate_with`], and with `fast_forward` the kernel and pair figures run again with
/// steady-state fast-forward, reported beside the detailed ones (which stay the main
/// figures; the leave-one-out ones stay detailed).
pub fn validate_ff(
    dir: &Path,
    spec: &GpuSpec,
    leave_one_out: bool,
    fast_forward: Option<FastForward>,
) -> Result<Report> {
    validate_as(dir, spec, leave_one_out, fast_forward, true)
}

/// [`validate_ff`]; with `match_reference` the mechanisms the folder's simulator lacks
/// ([`Simulator::turned_off`]) are turned off in `spec` first (`validate --all-mechanisms`
/// clears it).
pub fn validate_as(
    dir: &Path,
    spec: &GpuSpec,
    leave_one_out: bool,
    fast_forward: Option<FastForward>,
    match_reference: bool,
) -> Result<Report> {
    let simulator = Simulator::of(dir)?;
    let turned_off: Vec<String> = if match_reference {
        simulator
            .turned_off()
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let owned = spec.with_overrides(&turned_off)?;
    let spec = &owned;
    let cases = Cases::load(dir)?;
    let run_pairs = |ff: Option<FastForward>| -> Result<Vec<PairCase>> {
        let pairs: Vec<Result<PairCase>> = cases
            .pairs
            .par_iter()
            .map(|p| run_pair(spec, p, ff))
            .collect();
        pairs.into_iter().collect()
    };
    let kernels = run_kernels(spec, &cases.kernels, None)?;
    let pairs = run_pairs(None)?;
    let fast_forward = match fast_forward {
        Some(ff) => {
            let fk = run_kernels(spec, &cases.kernels, Some(ff))?;
            let fp = run_pairs(Some(ff))?;
            let diff = kernels
                .iter()
                .zip(&fk)
                .map(|(d, f)| pct(f.cycles as f64, d.cycles as f64))
                .fold(0.0, f64::max);
            Some(FfFigures {
                kernel_cycle_mae_pct: kernel_mae(fk.iter().map(|k| &k.error_pct)),
                pair_slowdown_mae_pct: pair_mae(&fp),
                max_kernel_cycle_diff_pct: diff,
                kernel_skipped_cycles: fk.iter().map(|k| k.skipped).sum(),
                pair_skipped_cycles: fp.iter().map(|p| p.skipped).sum(),
            })
        }
        None => None,
    };
    let leave_one_out = if leave_one_out {
        Some(loo::leave_one_out(spec, &cases, &kernels, &pairs)?)
    } else {
        None
    };
    Ok(Report {
        schema_version: 3,
        gpu: spec.name.clone(),
        reference: simulator,
        turned_off,
        kernel_cycle_mae_pct: kernel_mae(kernels.iter().map(|k| &k.error_pct)),
        pair_slowdown_mae_pct: pair_mae(&pairs),
        kernels,
        pairs,
        leave_one_out,
        fast_forward,
    })
}

impl Report {
    /// Human-readable tables.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if !self.turned_off.is_empty() {
            s += &format!(
                "(reference: {:?}; set to match it: {})\n",
                self.reference,
                self.turned_off.join(" ")
            );
        }
        s += &format!(
            "{:<16} {:>10} {:>10} {:>8} {:>14} {:>14} {:>21}\n",
            "kernel",
            "reference",
            "gpumodel",
            "error %",
            "L1 miss ref/us",
            "L2 miss ref/us",
            "DRAM rd+wr K ref/us"
        );
        for k in &self.kernels {
            let kilo = |(r, w): (u64, u64)| (r + w) as f64 / 1000.0;
            s += &format!(
                "{:<16} {:>10} {:>10} {:>8.1} {:>6.2}/{:<6.2} {:>6.2}/{:<6.2} {:>10.1}/{:<10.1}\n",
                k.kernel,
                k.ref_cycles,
                k.cycles,
                k.error_pct,
                k.ref_l1_miss_rate.unwrap_or(f64::NAN),
                k.l1_miss_rate,
                k.ref_l2_miss_rate.unwrap_or(f64::NAN),
                k.l2_miss_rate,
                k.ref_dram.map_or(f64::NAN, kilo),
                kilo(k.dram)
            );
        }
        s += &format!("kernel cycle MAE: {:.1}%\n\n", self.kernel_cycle_mae_pct);
        s += &format!(
            "{:<26} {:>14} {:>14} {:>10}\n",
            "pair", "slowdown A ref/us", "slowdown B ref/us", "error %"
        );
        for p in &self.pairs {
            s += &format!(
                "{:<26} {:>6.2}/{:<7.2} {:>6.2}/{:<7.2} {:>4.1}/{:.1}\n",
                p.pair,
                p.ref_slowdown_a,
                p.slowdown_a,
                p.ref_slowdown_b,
                p.slowdown_b,
                p.error_a_pct,
                p.error_b_pct
            );
        }
        s += &format!("pair slowdown MAE: {:.1}%\n", self.pair_slowdown_mae_pct);
        if let Some(f) = &self.fast_forward {
            s += &format!(
                "with fast-forward: kernel cycle MAE {:.1}%, pair slowdown MAE {:.1}% \
                 (largest kernel cycle change {:.2}%; {} cycles skipped alone, {} in pair runs)\n",
                f.kernel_cycle_mae_pct,
                f.pair_slowdown_mae_pct,
                f.max_kernel_cycle_diff_pct,
                f.kernel_skipped_cycles,
                f.pair_skipped_cycles
            );
        }
        if let Some(l) = &self.leave_one_out {
            s += &l.render();
        }
        s
    }
}
