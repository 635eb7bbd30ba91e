//! Command-line interface: argument parsing (clap) and one function per subcommand. Holds no
//! modelling logic; everything it prints comes from library calls.
//!
//! Exit codes: 0 success, 1 failure or internal error (a bug), 2 bad input or usage.

mod advise;
mod analyze;
mod card;
mod convert;
mod inspect;
mod model;
mod profile;
mod progress;
mod report;
pub mod run;
mod study;
mod validate;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Error;

#[derive(Parser, Debug)]
#[command(
    name = "gpumodel",
    version,
    about = "Simulate applications sharing one GPU and compare the policies that share it",
    long_about = "gpumodel simulates applications sharing one GPU and compares the policies \
                  that divide it between them.\n\n\
                  It reads NVBit and Accel-Sim traces or synthetic kernel specs (and converts \
                  them to a compact binary format, .gmt), runs them alone or together on an \
                  event-driven model of a GPU (SMs, caches, crossbar, DRAM) under a sharing \
                  policy, research (Warped-Slicer, SMRA, Slate, SiM, UGPU, ...) or production \
                  (MIG, MPS, green contexts, time slicing), and compares the policies by \
                  throughput (STP), turnaround (ANTT) and fairness, with tables and figures. \
                  `gpumodel policies` lists the policies; a study file reproduces a paper's \
                  comparison.\n\n\
                  Exit codes: 0 success, 1 failure (an internal error is a bug: please report \
                  it), 2 bad input or usage.",
    after_help = "Examples:\n\
                  \x20\x20gpumodel analyze                         # two bundled applications under every policy\n\
                  \x20\x20gpumodel study reports/slate/study.toml  # a paper's comparison: metrics.json, figures\n\
                  \x20\x20gpumodel policies                        # the sharing policies and their parameters\n\
                  \x20\x20gpumodel COMMAND --help                  # a command's options, with an example"
)]
pub struct Cli {
    /// Worker threads for parallel work (default: all cores; 1 to 1024, at most the cores).
    #[arg(long, global = true, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Hide progress bars.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Memory budget for simulation state, e.g. "8 GiB": a model whose estimated engine
    /// state (times the runs in parallel) exceeds it is refused before anything is
    /// allocated (default: half of physical memory, or of the address-space limit, `ulimit -v`, when lower).
    #[arg(long, global = true, value_name = "SIZE", value_parser = max_mem)]
    pub max_mem: Option<u64>,
    #[command(subcommand)]
    pub cmd: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Convert an Accel-Sim folder / kernelslist.g / .traceg[.gz|.xz], an NVBit mem_trace log
    /// or a synthetic spec to a .gmt binary trace.
    Convert(convert::ConvertArgs),
    /// Characterise the kernels of any input: launch shape, occupancy, instruction mix,
    /// memory spaces, coalescing, footprint, strides.
    Inspect(inspect::InspectArgs),
    /// Write any input (a .gmt, a synthetic spec...) as an Accel-Sim trace folder.
    Export(convert::ExportArgs),
    /// Generate a synthetic kernel from a spec and write it as .gmt and/or Accel-Sim text.
    Synth(convert::SynthArgs),
    /// Show a GPU model (built-in or .toml) with overrides applied, save it, list the
    /// built-in models, or compute a launch's occupancy on it.
    Model(model::ModelArgs),
    /// Simulate applications alone or together on a GPU model and print per-application
    /// cycles, IPC, ISU, cache and DRAM figures and stall breakdowns.
    Run(run::RunArgs),
    /// Profile one application alone: performance vs CTAs per SM, SM count and channel
    /// count, ISU and key rates, and its class under the Warped-Slicer, Punyala, Slate and
    /// UGPU schemes; a table, `--json` and `--svg` charts.
    Profile(profile::ProfileArgs),
    /// Compare the engine with a reference simulator's results (a folder laid out like
    /// ../shared/reference): per-kernel cycle error, MAE, per-pair slowdown error.
    Validate(validate::ValidateArgs),
    /// Run one workload under several sharing policies (Left-Over, FCFS, Even, Spatial,
    /// Warped-Slicer, its ILP variant, Oracle, SMRA, time slicing, ...): a comparison
    /// table, metrics.json, figures.
    Analyze(analyze::AnalyzeArgs),
    /// Which sharing mechanism to use: every feasible configuration of MIG, MPS (active
    /// thread percentages, static partitions), green contexts, time slicing and the research
    /// policies for the applications, simulated and ranked by an objective (stp, antt,
    /// fairness, qos:APP=0.8), with the recommendation and why; metrics.json, a CSV, a figure.
    Advise(advise::AdviseArgs),
    /// List the sharing policies with their parameters and defaults (the keys of
    /// `--policy-param` and of a study file's `[params.NAME]` tables).
    #[command(after_help = "Example:\n  gpumodel policies | grep -A3 '^smra'")]
    Policies,
    /// Run a study file: every workload under every policy, metrics.json and figures
    /// (`--shard I/N`: one shard of its jobs, for a cluster).
    Study(study::StudyArgs),
    /// Merge the shard files of `study --shard` into the study's metrics.json and figures
    /// (identical to an unsharded run), checking that every shard is there once.
    Merge(study::MergeArgs),
    /// Redraw the figures (SVG) and tables (Markdown) of a saved study from its
    /// metrics.json: normalised IPC, fairness, ANTT, stalls, partitions, summary.
    Report(report::ReportArgs),
    /// Measure a suite's workload card (`traces/<paper>/card.toml`): every benchmark's
    /// published characteristics (IPC/ISU, MPKI, class labels, curve shapes) against the
    /// engine on the paper's GPU; exit 1 when a row does not do what the card expects.
    Card(card::CardArgs),
}

/// Parses arguments, runs the command, prints errors; returns the process exit code.
pub fn main() -> i32 {
    // A closed stdout (`gpumodel inspect x | head`) ends the process quietly, as for other
    // command-line tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: setting signal dispositions before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        // A file-size limit (`ulimit -f`) makes an oversized write fail with EFBIG, an I/O
        // error naming the output whose temporary file is then removed, instead of killing
        // the process with SIGXFSZ and leaving the temporary behind.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    if let Some(n) = cli.threads {
        let n = worker_threads("--threads", n, cli.quiet);
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
        {
            eprintln!("error: cannot set up {n} threads: {e}");
            return 1;
        }
    }
    if let Some(b) = cli.max_mem {
        crate::budget::set_budget(b);
    }
    let r = match &cli.cmd {
        Command::Convert(a) => convert::run(a, cli.quiet),
        Command::Inspect(a) => inspect::run(a, cli.quiet),
        Command::Export(a) => convert::export(a),
        Command::Model(a) => model::run(a),
        Command::Synth(a) => convert::synth(a),
        Command::Run(a) => run::run(a, cli.quiet),
        Command::Profile(a) => profile::run(a, cli.quiet),
        Command::Validate(a) => validate::run(a, cli.quiet),
        Command::Analyze(a) => analyze::run(a, cli.quiet),
        Command::Advise(a) => advise::run(a, cli.quiet),
        Command::Policies => analyze::list_policies(),
        Command::Study(a) => study::run(a, cli.quiet),
        Command::Merge(a) => study::merge(a),
        Command::Report(a) => report::run(a),
        Command::Card(a) => card::run(a, cli.quiet),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit_code(&e)
        }
    }
}

/// The exit code of a command's error: 2 for bad input or usage, 1 for a failure or an
/// internal error (a bug, [`Error::Internal`]).
pub fn exit_code(e: &anyhow::Error) -> i32 {
    e.downcast_ref::<Error>().map_or(1, Error::exit_code)
}

/// `--max-mem`: a size with a unit, at least 1 MiB.
fn max_mem(s: &str) -> std::result::Result<u64, String> {
    let b = crate::arch::Bytes::parse(s).map_err(|e| e.to_string())?.0;
    if b < 1 << 20 {
        return Err(format!("expected at least 1 MiB, got {s}"));
    }
    Ok(b)
}

/// Output path helper: refuses to write over an input.
pub(crate) fn check_output(out: &std::path::Path, inputs: &[&PathBuf]) -> Result<(), Error> {
    crate::output::Guard::of(inputs).check(out)
}

/// The worker threads to start for `--threads` (or `--jobs`) `n`: at most the cores the
/// process may use. More would only time-share them (every result is the same at any
/// count), and each thread reserves stack and allocator address space: hundreds of them
/// under an address-space limit (`ulimit -v`) could fail inside the runtime's thread
/// start, which aborts instead of returning an error (found by `fuzz/`, 2026-11-28).
pub(crate) fn worker_threads(flag: &str, n: u16, quiet: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(usize::from(n), |c| c.get());
    let used = usize::from(n).min(cores).max(1);
    if used < usize::from(n) && !quiet {
        eprintln!("note: {flag} {n}: this machine has {cores} cores; using {used} threads");
    }
    used
}

/// Checks an output folder before any work ([`crate::output::check_dir`]): a folder (or
/// one that can be created) that can hold a new file, outside /dev, /proc and /sys.
pub(crate) fn check_output_dir(dir: &std::path::Path) -> Result<(), Error> {
    crate::output::check_dir(dir)
}

/// The stride of aged jumps when `--ff-stride` is not given.
const AGED_STRIDE: u32 = 32;

/// Steady-state fast-forward options (`engine::sim::ff`): on by default in `study` and
/// `analyze` (their scaled windows are cycle-identical with it, and long runs are
/// several times faster: BENCHMARKS.md), off in `run`, `profile` and `validate`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct FfArgs {
    /// Advance simulated time analytically over steady-state spans (whole waves of CTAs
    /// retired from measured rates, and whole relaunches of an application running alone
    /// once two agree; tails, phase changes and hooks are simulated). On by default in
    /// `study` (unless the study file says `fast_forward = false`) and `analyze`.
    #[arg(long, overrides_with = "no_fast_forward")]
    pub fast_forward: bool,
    /// Simulate every cycle (the default in `run`, `profile` and `validate`).
    #[arg(long, overrides_with = "fast_forward")]
    pub no_fast_forward: bool,
    /// Fast-forward measurement window in cycles.
    #[arg(long, default_value_t = 2000, value_name = "CYCLES", value_parser = ff_window)]
    pub ff_window: u64,
    /// Fast-forward tolerance: largest relative IPC / bandwidth change between the two
    /// halves of a steady span.
    #[arg(long, default_value_t = 0.03, value_name = "FRACTION", value_parser = ff_tolerance)]
    pub ff_tolerance: f64,
    /// Fast-forward: waves of CTA completions in each half of a steady span.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = ff_waves)]
    pub ff_waves: u32,
    /// Fast-forward: a jump is at most this many times its measured span (0: unbounded).
    /// Default: 32 with aged jumps, 8 without.
    #[arg(long, value_name = "N")]
    pub ff_stride: Option<u32>,
    /// Fast-forward: a co-run jump (several applications relaunching side by side) is at
    /// most this many times the longest co-runner's measured passes (0: unbounded).
    /// Default: 64.
    #[arg(long, value_name = "N")]
    pub ff_corun_stride: Option<u32>,
    /// Fast-forward: aged jumps (each jump ages resident CTAs still in step by the random
    /// walk of CTA durations the skipped waves would have made, a launch's first long jump
    /// is measured at its midpoint's age where its CTAs drift apart, and a jump's time is
    /// corrected by the next span's rate). Default: on for `run` of one application to
    /// completion (there they are the most exact, and ~2x faster: BENCHMARKS.md), off
    /// elsewhere (window and budget runs, co-running applications: plain jumps are more
    /// exact there).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub ff_age: Option<bool>,
}

/// A `--ff-*` value checked as [`crate::engine::FastForward::check`] checks its key (clap
/// names the flag; exit 2).
fn ff_flag<T>(
    v: &str,
    set: impl Fn(&mut crate::engine::FastForward, T),
) -> std::result::Result<T, String>
where
    T: std::str::FromStr + Copy,
    T::Err: std::fmt::Display,
{
    let x: T = v.trim().parse().map_err(|e| format!("{e}"))?;
    let mut f = crate::engine::FastForward::default();
    set(&mut f, x);
    f.check().map(|()| x).map_err(|e| e.to_string())
}

fn ff_window(v: &str) -> std::result::Result<u64, String> {
    ff_flag(v, |f, x| f.window = x)
}

fn ff_tolerance(v: &str) -> std::result::Result<f64, String> {
    ff_flag(v, |f, x| f.tolerance = x)
}

fn ff_waves(v: &str) -> std::result::Result<u32, String> {
    ff_flag(v, |f, x| f.waves = x)
}

impl FfArgs {
    /// What the command line chose: `Some(Some(_))` `--fast-forward`, `Some(None)`
    /// `--no-fast-forward` (the later of the two wins), `None` neither.
    pub fn choice(&self) -> Option<Option<crate::engine::FastForward>> {
        if self.fast_forward || self.no_fast_forward {
            Some(self.config())
        } else {
            None
        }
    }

    /// The fast-forward asked for, if any, with plain jumps unless `--ff-age` says
    /// otherwise.
    pub fn config(&self) -> Option<crate::engine::FastForward> {
        self.config_with(false)
    }

    /// As [`FfArgs::config`] where fast-forward is on unless `--no-fast-forward` is given
    /// (`analyze`; of the two flags only the later is set).
    pub fn config_on_by_default(&self) -> Option<crate::engine::FastForward> {
        FfArgs {
            fast_forward: !self.no_fast_forward,
            ..*self
        }
        .config()
    }

    /// The fast-forward asked for, if any; `aged_default`: whether jumps are aged when
    /// `--ff-age` is not given (a run of one application to completion). The stride
    /// defaults to 32 for aged jumps (the measured long-run setting) and 8 for plain ones.
    pub fn config_with(&self, aged_default: bool) -> Option<crate::engine::FastForward> {
        let age = self.ff_age.unwrap_or(aged_default);
        let plain = crate::engine::FastForward::default();
        (self.fast_forward && !self.no_fast_forward).then(|| crate::engine::FastForward {
            window: self.ff_window.max(1),
            tolerance: self.ff_tolerance,
            waves: self.ff_waves,
            stride: self
                .ff_stride
                .unwrap_or(if age { AGED_STRIDE } else { plain.stride }),
            corun_stride: self.ff_corun_stride.unwrap_or(plain.corun_stride),
            age,
            ..plain
        })
    }
}

/// The `--gpu` / `--set` options every modelling subcommand takes.
#[derive(clap::Args, Debug)]
pub struct GpuArgs {
    /// GPU model: a built-in name (`gpumodel model --list`) or a .toml path.
    #[arg(long, default_value = "qv100")]
    pub gpu: String,
    #[command(flatten)]
    pub overrides: SetArgs,
}

impl GpuArgs {
    /// The model named by `--gpu` with the `--set` overrides applied and validated.
    pub fn load(&self) -> Result<crate::arch::GpuSpec, Error> {
        self.overrides.load(&self.gpu)
    }
}

/// `--set KEY=VALUE`: model overrides, shared by every subcommand that loads a GPU model
/// (each names its `--gpu` with its own default, so only this part is common).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SetArgs {
    /// Override a model value, e.g. `--set sm.count=40` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SetArgs {
    /// Loads a GPU model by built-in name or path and applies these overrides.
    pub fn load(&self, gpu: &str) -> Result<crate::arch::GpuSpec, Error> {
        crate::arch::GpuSpec::resolve(gpu)?.with_overrides(&self.set)
    }
}

/// Occupancy of a kernel on a GPU model, as JSON (`None` when the launch cannot fit).
pub(crate) fn occupancy_fn(
    spec: &crate::arch::GpuSpec,
) -> impl Fn(&crate::trace::KernelInfo) -> Option<serde_json::Value> + '_ {
    move |k: &crate::trace::KernelInfo| {
        let l = crate::arch::Launch::new(k.threads_per_cta(), k.nregs, k.shmem);
        match crate::arch::occupancy(spec, &l) {
            Ok(o) => serde_json::to_value(o).ok(),
            Err(e) => Some(serde_json::json!({ "error": e.to_string() })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FfArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        ff: FfArgs,
    }

    fn ff_config(args: &[&str], aged_default: bool) -> Option<crate::engine::FastForward> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        t.ff.config_with(aged_default)
    }

    fn ff(args: &[&str], aged_default: bool) -> Option<(bool, u32)> {
        ff_config(args, aged_default).map(|f| (f.age, f.stride))
    }

    #[test]
    fn fast_forward_defaults_follow_the_run() {
        assert_eq!(ff(&[], true), None, "off unless asked for");
        // One application to completion: aged jumps at stride 32; elsewhere plain at 8.
        assert_eq!(ff(&["--fast-forward"], true), Some((true, 32)));
        assert_eq!(ff(&["--fast-forward"], false), Some((false, 8)));
        // What is given wins; the stride follows the ageing chosen.
        assert_eq!(
            ff(&["--fast-forward", "--ff-age", "false"], true),
            Some((false, 8))
        );
        assert_eq!(
            ff(&["--fast-forward", "--ff-age", "true"], false),
            Some((true, 32))
        );
        assert_eq!(
            ff(&["--fast-forward", "--ff-stride", "0"], true),
            Some((true, 0))
        );
        assert_eq!(ff(&["--fast-forward", "--no-fast-forward"], true), None);
        // Co-run jumps have their own bound, whatever the wave jumps' stride.
        let corun = |args: &[&str]| ff_config(args, false).map(|f| (f.stride, f.corun_stride));
        assert_eq!(corun(&["--fast-forward"]), Some((8, 64)));
        assert_eq!(
            corun(&[
                "--fast-forward",
                "--ff-stride",
                "4",
                "--ff-corun-stride",
                "0"
            ]),
            Some((4, 0))
        );
    }

    #[test]
    fn analyze_fast_forwards_unless_told_not_to() {
        let on = |args: &[&str]| {
            let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
            t.ff.config_on_by_default()
                .map(|f| (f.age, f.stride, f.window))
        };
        assert_eq!(on(&[]), Some((false, 8, 2000)), "plain jumps by default");
        assert_eq!(on(&["--ff-window", "500"]), Some((false, 8, 500)));
        assert_eq!(on(&["--no-fast-forward"]), None);
        assert_eq!(
            on(&["--no-fast-forward", "--fast-forward"]),
            Some((false, 8, 2000))
        );
        assert_eq!(on(&["--fast-forward", "--no-fast-forward"]), None);
    }
}
