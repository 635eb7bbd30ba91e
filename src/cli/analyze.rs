//! `gpumodel analyze`: one workload under several sharing policies — a comparison table,
//! `metrics.json` and the figures. With no arguments: a compute + memory pair of the bundled
//! Warped-Slicer suite on `fermi-ws` under every policy.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::Error;
use crate::metrics::{StudyResults, SCHEMA_VERSION};
use crate::policy::PolicySpec;
use crate::study::{self, Mode, Setup, Task};
use crate::trace::accel::ParseOptions;
use crate::trace::app::open_app;

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  gpumodel analyze --apps hot,lbm --policies even,warped-slicer,smra\n\nThe policies, their parameters and defaults: `gpumodel policies`."
)]
pub struct AnalyzeArgs {
    /// Applications sharing the GPU, comma-separated: input paths (any format `run` reads) or
    /// names of bundled benchmarks (`hot`, `lbm`, ... from traces/*/NAME.toml).
    #[arg(long, value_delimiter = ',', default_value = "hot,lbm")]
    pub apps: Vec<String>,
    #[arg(long, default_value = "fermi-ws")]
    pub gpu: String,
    #[command(flatten)]
    pub overrides: super::SetArgs,
    /// Policies, comma-separated, or `all` (every registered policy that applies to the
    /// workload and run mode; those skipped are listed with the reason). `gpumodel
    /// policies` lists them.
    #[arg(long, default_value = "all")]
    pub policies: String,
    /// A policy parameter, `POLICY.KEY=VALUE` (repeatable), e.g.
    /// `--policy-param warped-slicer.sample=3000 --policy-param oracle.maximal_only=true`.
    #[arg(long = "policy-param", value_name = "POLICY.KEY=VALUE")]
    pub policy_param: Vec<String>,
    /// Each application's budget is what it executes alone in this many cycles; it stops when
    /// it reaches it (Warped-Slicer §V).
    #[arg(long, default_value_t = 100_000, conflicts_with = "completion")]
    pub window: u64,
    /// Run each application's kernels once to completion instead of to a budget.
    #[arg(long)]
    pub completion: bool,
    /// Run every policy for exactly `--window` cycles, applications relaunched when they
    /// finish, and compare IPC over the window with IPC alone (UGPU §5) instead of
    /// stopping each application at its budget.
    #[arg(long, conflicts_with = "completion")]
    pub fixed_window: bool,
    /// Arrival cycle of each application, comma-separated in `--apps` order (completion
    /// mode; default: all at 0), e.g. `--arrivals 0,20000`.
    #[arg(long, value_delimiter = ',', requires = "completion")]
    pub arrivals: Vec<u64>,
    /// The policy whose gains over every other the summary's headlines give.
    #[arg(long, default_value = "warped-slicer")]
    pub proposed: String,
    /// Safety stop: a run that has not finished after this many cycles is an error
    /// (exit 1) naming the policy and the application still running.
    #[arg(long, default_value_t = 200_000_000, value_name = "CYCLES")]
    pub max_cycles: u64,
    #[command(flatten)]
    pub ff: super::FfArgs,
    /// Output folder for metrics.json and the figures.
    #[arg(long, short, default_value = "out/analyze")]
    pub out: PathBuf,
}

/// Resolves an application argument: a path, or a bundled benchmark name.
pub(super) fn find_app(arg: &str) -> Result<PathBuf, Error> {
    let p = Path::new(arg);
    if p.exists() {
        return Ok(p.to_path_buf());
    }
    let mut roots = vec![PathBuf::from("traces")];
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("traces"));
    for root in &roots {
        let Ok(rd) = std::fs::read_dir(root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let c = d.join(format!("{arg}.toml"));
            if c.is_file() {
                return Ok(c);
            }
        }
    }
    Err(Error::Usage(format!(
        "application `{arg}` is neither a file nor a bundled benchmark (looked for traces/*/{arg}.toml)"
    )))
}

pub fn run(a: &AnalyzeArgs, quiet: bool) -> Result<()> {
    if a.apps.len() < 2 {
        return Err(Error::Usage(format!(
            "--apps needs at least two applications to share the GPU, got {}",
            a.apps.len()
        ))
        .into());
    }
    if !a.arrivals.is_empty() && a.arrivals.len() != a.apps.len() {
        return Err(Error::Usage(format!(
            "--arrivals gives {} arrival times for {} applications",
            a.arrivals.len(),
            a.apps.len()
        ))
        .into());
    }
    if !a.completion && a.window == 0 {
        return Err(Error::Usage("--window must be positive".into()).into());
    }
    if a.max_cycles == 0 {
        return Err(Error::Usage("--max-cycles must be positive".into()).into());
    }
    let params = crate::policy::parse_params(&a.policy_param)?;
    let all = a.policies.trim() == "all";
    let mut policies = PolicySpec::parse_list_with(&a.policies, &params)?;
    let spec = a.overrides.load(&a.gpu)?;
    let opts = ParseOptions::default();
    let mut inputs = Vec::new();
    let mut paths = Vec::new();
    for (i, name) in a.apps.iter().enumerate() {
        let path = find_app(name)?;
        paths.push(path.clone());
        let app = open_app(&path, &opts)?;
        let mut label = app.name.clone();
        if inputs.iter().any(|x: &(String, String, _)| x.0 == label) {
            label = format!("{label}#{i}");
        }
        inputs.push((
            label.clone(),
            String::new(),
            crate::engine::AppSpec::new(label, app.kernels),
        ));
    }
    let mode = if a.completion {
        Mode::Completion
    } else if a.fixed_window {
        Mode::Window { window: a.window }
    } else {
        Mode::Budget { window: a.window }
    };
    // Every policy must apply; under `all` the ones that do not are skipped, with the
    // reason (said on stderr and kept in the results' config as `skipped`).
    let labels: Vec<String> = inputs.iter().map(|x| x.0.clone()).collect();
    for p in &policies {
        p.check_run(
            &labels.iter().map(String::as_str).collect::<Vec<_>>(),
            a.max_cycles,
        )?;
    }
    let mut skipped = Vec::new();
    {
        let apps: Vec<crate::engine::AppSpec> = inputs.iter().map(|x| x.2.clone()).collect();
        let w = crate::policy::Workload {
            spec: &spec,
            apps: &apps,
            mode: match mode {
                Mode::Completion => crate::engine::RunMode::Completion,
                Mode::Budget { .. } => crate::engine::RunMode::Budget(vec![1; apps.len()]),
                Mode::Window { window } => crate::engine::RunMode::Window(window),
            },
        };
        let mut kept = Vec::new();
        for p in policies {
            match p.build().applies(&w) {
                Ok(()) => kept.push(p),
                Err(crate::policy::NotApplicable(why)) if all => {
                    eprintln!(
                        "policy {} skipped for workload {}: {why}",
                        p.name(),
                        labels.join("+")
                    );
                    skipped.push(serde_json::json!({ "policy": p.name(), "reason": why }));
                }
                Err(why) => {
                    return Err(
                        Error::Usage(format!("policy {} cannot run here: {why}", p.name())).into(),
                    )
                }
            }
        }
        policies = kept;
    }
    super::check_output_dir(&a.out)?;
    super::check_output(&a.out.join("metrics.json"), &[])?;
    let pb = super::progress::count_bar(quiet, "policies");
    let tick = |d: usize, t: usize| {
        pb.set_length(t as u64);
        pb.set_position(d as u64);
    };
    let ff = a.ff.config_on_by_default();
    let setup = Setup {
        spec: &spec,
        mode,
        max_cycles: a.max_cycles,
        fast_forward: ff,
        progress: &tick,
    };
    pb.set_message("alone runs");
    let benches = study::load(&setup, inputs)?;
    pb.set_message("policies");
    let names: Vec<String> = benches.iter().map(|b| b.name.clone()).collect();
    let mut task = Task::new(names.clone(), "analyze".into(), policies.clone());
    task.arrivals = a.arrivals.clone();
    let t0 = std::time::Instant::now();
    let workloads = study::run_tasks(&setup, &benches, std::slice::from_ref(&task))?;
    pb.finish_and_clear();
    let results = StudyResults {
        schema_version: SCHEMA_VERSION,
        study: format!("analyze {}", names.join("+")),
        config: serde_json::json!({
            "apps": a.apps,
            "gpu": a.gpu,
            "set": a.overrides.set,
            "mode": mode,
            "arrivals": a.arrivals,
            "policies": policies,
            "skipped": skipped,
            // As a study file writes it: the table when on, `false` when off.
            "fast_forward": crate::study::spec::ff_setting::serialize(&ff, serde_json::value::Serializer)?,
        }),
        alone: benches.iter().map(|b| b.alone.clone()).collect(),
        curves: Vec::new(),
        workloads,
        model: spec,
        baseline: "left-over".into(),
        proposed: Some(a.proposed.clone()),
        solo: Vec::new(),
        figures: String::new(),
        slices: Vec::new(),
        ff_check: None,
    };
    print_table(&results);
    eprintln!(
        "{} policies in {:.1} s",
        policies.len(),
        t0.elapsed().as_secs_f64()
    );
    eprintln!("{}", ff_line(&[&results]));
    save(&results, &a.out, &crate::output::Guard::of(&paths))
}

/// `gpumodel policies`: every registered policy, whether `all` runs it, and its parameters
/// with their defaults.
pub fn list_policies() -> Result<()> {
    for (name, all) in PolicySpec::REGISTRY {
        let spec = PolicySpec::from_name(name)?;
        let mut t = toml::Table::try_from(&spec)?;
        t.remove("policy");
        println!("{name}{}", if *all { "" } else { "  (not in `all`)" });
        for (k, v) in t {
            println!("    {name}.{k} = {v}");
        }
    }
    Ok(())
}

/// Writes `value` as pretty JSON and a newline to `path`, streamed (never the whole text
/// in memory: a merged study can be large).
pub(crate) fn write_json(
    guard: &crate::output::Guard,
    path: &Path,
    value: &impl serde::Serialize,
) -> Result<()> {
    use std::io::Write;
    let mut p = guard.create(path)?;
    serde_json::to_writer_pretty(p.writer(), value)
        .map_err(|e| Error::io(p.tmp_path(), e.into()))?;
    p.writer()
        .write_all(b"\n")
        .map_err(|e| Error::io(p.tmp_path(), e))?;
    Ok(p.commit()?)
}

/// Writes `metrics.json` and the figures into `dir`, replacing none of `guard`'s inputs.
pub fn save(r: &StudyResults, dir: &Path, guard: &crate::output::Guard) -> Result<()> {
    let path = dir.join("metrics.json");
    write_json(guard, &path, r)?;
    eprintln!("wrote {}", path.display());
    for f in crate::report::render_study(r, dir)? {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}

/// One row per policy: combined IPC (and vs Left-Over), STP, ANTT, fairness, partition.
pub fn print_table(r: &StudyResults) {
    for w in &r.workloads {
        println!("workload {} ({})", w.name, w.category);
        let base = w.run("left-over").map(|x| x.summary.combined_ipc);
        println!(
            "  {:<14} {:>9} {:>8} {:>6} {:>6} {:>6} {:>10}  {:<12} per-app progress",
            "policy", "cycles", "IPC", "vs LO", "STP", "ANTT", "fairness", "partition"
        );
        for p in &w.runs {
            let s = &p.summary;
            let rel = base
                .filter(|b| *b > 0.0)
                .map(|b| format!("{:.3}", s.combined_ipc / b))
                .unwrap_or_else(|| "-".into());
            let prog: Vec<String> = p
                .apps
                .iter()
                .map(|a| format!("{}={:.2}", a.name, a.progress))
                .collect();
            println!(
                "  {:<14} {:>9} {:>8.2} {:>6} {:>6.3} {:>6.3} {:>10.3}  {:<12} {}",
                p.policy,
                s.cycles,
                s.combined_ipc,
                rel,
                s.stp,
                s.antt,
                s.fairness,
                p.partition,
                prog.join(" ")
            );
        }
    }
}

/// What fast-forward did in the policy runs of a study or an analysis (their `ff_cycles` measure): off, never
/// jumped (every run is the detailed run), or how many runs jumped and how many of their
/// cycles were advanced analytically.
pub(super) fn ff_line(results: &[&StudyResults]) -> String {
    let on = results
        .iter()
        .any(|r| r.config.get("fast_forward").is_some_and(|f| f.is_object()));
    if !on {
        return "fast-forward: off (every cycle simulated)".into();
    }
    let runs = results
        .iter()
        .flat_map(|r| &r.workloads)
        .flat_map(|w| w.runs.iter().map(move |p| (w, p)));
    let (mut n, mut jumped, mut skipped, mut cycles) = (0usize, 0usize, 0.0, 0.0);
    let mut spread: Option<(f64, &str, &str)> = None;
    for (w, p) in runs {
        n += 1;
        cycles += p.measures.get("makespan").copied().unwrap_or(0.0);
        if let Some(c) = p.measures.get("ff_cycles") {
            jumped += 1;
            skipped += c;
        }
        if let Some(&s) = p.measures.get("ff_spread") {
            if spread.is_none_or(|m| s > m.0) {
                spread = Some((s, &w.name, &p.policy));
            }
        }
    }
    if jumped == 0 {
        return format!("fast-forward: on, no jump in {n} policy runs (each is its detailed run)");
    }
    let moved = spread.map_or(String::new(), |(s, w, p)| {
        format!(
            "; co-run rates moved up to {:.1}% between the halves of a measured span ({w} \
             under {p}: --ff-check re-runs such a job first)",
            100.0 * s
        )
    });
    format!(
        "fast-forward: {jumped} of {n} policy runs jumped; {:.1}% of the {n} runs' makespan \
         cycles advanced analytically (--no-fast-forward simulates every cycle){moved}",
        100.0 * skipped / cycles.max(1.0)
    )
}
