//! `gpumodel advise --apps A,B,C --gpu h100 [--objective ...]`: every feasible
//! configuration of every sharing mechanism for the applications (`advise::enumerate`),
//! simulated in parallel over a fixed window with fast-forward, ranked by the objective,
//! with the recommendation and why; `metrics.json`, `advise.csv` and `advise.svg`.
//! `--shard I/N` runs every N-th configuration and writes `advise-shard-I-of-N.json`;
//! `--merge` assembles the shards into what the unsharded run writes.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::advise::{self, AdviceResults, Enumeration, Objective};
use crate::arch::GpuSpec;
use crate::error::Error;
use crate::metrics::{AloneResult, PolicyRun};
use crate::study::shard::ShardId;
use crate::study::{self, Mode, Setup, Task};
use crate::trace::app::open_app;

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  gpumodel advise --apps lbm,cp,hotspot --gpu h100 --objective qos:cp=0.8 -o out/advise"
)]
pub struct AdviseArgs {
    /// Applications sharing the GPU, comma-separated (2 to 6): input paths or bundled
    /// benchmark names (`lbm`, `cp`, `hotspot`, ... from traces/*/NAME.toml).
    #[arg(long, value_delimiter = ',', required_unless_present = "merge")]
    pub apps: Vec<String>,
    /// GPU model: a built-in name (`gpumodel model --list`) or a .toml path.
    #[arg(long, required_unless_present = "merge")]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub overrides: super::SetArgs,
    /// What to optimise: stp, antt, fairness, or qos:APP=TARGET (the highest STP among
    /// configurations keeping APP at TARGET of its alone progress or more).
    #[arg(long, default_value = "stp")]
    pub objective: String,
    /// Every configuration runs for exactly this many cycles, applications relaunched
    /// when they finish; progress is IPC over the window against IPC alone over it.
    #[arg(long, default_value_t = 30_000)]
    pub window: u64,
    /// Most configurations simulated per mechanism (an evenly spaced subset beyond it).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub grid_cap: u32,
    /// Safety stop for a run, in cycles.
    #[arg(long, default_value_t = 200_000_000, value_name = "CYCLES")]
    pub max_cycles: u64,
    /// Print what would be simulated and what is pruned, and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only shard I of N of the configurations; writes `advise-shard-I-of-N.json`.
    #[arg(long, value_name = "I/N", conflicts_with = "merge")]
    pub shard: Option<ShardId>,
    /// Assemble shard files (or folders holding them) into the unsharded outputs.
    #[arg(long, num_args = 1.., value_name = "SHARD", conflicts_with_all = ["apps", "gpu", "dry_run"])]
    pub merge: Vec<PathBuf>,
    /// Worker threads (as the global --threads: at most the cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    #[command(flatten)]
    pub ff: super::FfArgs,
    /// Output folder.
    #[arg(long, short, default_value = "out/advise")]
    pub out: PathBuf,
}

/// What every shard shares: the effective configuration, the alone references and the
/// enumeration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Head {
    config: serde_json::Value,
    model: GpuSpec,
    alone: Vec<AloneResult>,
    enumeration: Enumeration,
}

const SHARD_KIND: &str = "advise-shard";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ShardFile {
    kind: String,
    schema_version: u32,
    /// FNV-1a 64 of the head: shards of one run have the same.
    hash: String,
    shard: usize,
    of: usize,
    head: Head,
    outputs: Vec<(usize, PolicyRun)>,
}

pub fn run(a: &AdviseArgs, quiet: bool) -> Result<()> {
    if let Some(j) = a.jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(super::worker_threads("--jobs", j, quiet))
            .build_global()
            .map_err(|e| {
                Error::Usage(format!(
                    "--jobs {j}: {e} (give --jobs or --threads, not both)"
                ))
            })?;
    }
    super::check_output_dir(&a.out)?;
    if !a.merge.is_empty() {
        return merge(a, quiet);
    }
    let t0 = std::time::Instant::now();
    let (objective, names, apps, mut spec) = inputs(a)?;
    let model_slice = spec.clocks.core.cycles_in(spec.reconfig.time_slice);
    let slice = short_slice(&mut spec, a.window, names.len());
    let mode = Mode::Window { window: a.window };
    let en = advise::enumerate(
        &spec,
        &apps,
        crate::engine::RunMode::Window(a.window),
        a.grid_cap as usize,
    )?;
    print_pruning(&en);
    if a.dry_run {
        for c in &en.candidates {
            println!("{}", c.name());
        }
        return Ok(());
    }
    let ff = a.ff.config_on_by_default();
    let pb = super::progress::count_bar(quiet, "alone runs");
    let tick = |d: usize, t: usize| super::progress::stage(&pb, "configurations", d, t);
    let setup = Setup {
        spec: &spec,
        mode,
        max_cycles: a.max_cycles,
        fast_forward: ff,
        progress: &tick,
    };
    let inputs: Vec<(String, String, crate::engine::AppSpec)> = names
        .iter()
        .zip(apps)
        .map(|(n, app)| (n.clone(), String::new(), app))
        .collect();
    let benches = study::load(&setup, inputs)?;
    let config = serde_json::json!({
        "apps": a.apps,
        "gpu": a.gpu,
        "set": a.overrides.set,
        "objective": objective.to_string(),
        "mode": mode,
        "grid_cap": a.grid_cap,
        "time_slice_cycles": slice,
        "model_time_slice_cycles": model_slice,
        "fast_forward": crate::study::spec::ff_setting::serialize(&ff, serde_json::value::Serializer)?,
    });
    let head = Head {
        config,
        model: spec.clone(),
        alone: benches.iter().map(|b| b.alone.clone()).collect(),
        enumeration: en,
    };
    let jobs: Vec<usize> = (0..head.enumeration.candidates.len())
        .filter(|&j| a.shard.is_none_or(|id| id.owns(j)))
        .collect();
    let policies = jobs
        .iter()
        .map(|&j| head.enumeration.candidates[j].policy.clone())
        .collect();
    let task = Task::new(names.clone(), "advise".into(), policies);
    let mut w = study::run_tasks(&setup, &benches, std::slice::from_ref(&task))?;
    pb.finish_and_clear();
    let runs = w.pop().map(|w| w.runs).unwrap_or_default();
    eprintln!(
        "{} configurations simulated in {:.1} s",
        runs.len(),
        t0.elapsed().as_secs_f64()
    );
    if let Some(id) = a.shard {
        return write_shard(a, id, head, jobs.into_iter().zip(runs).collect());
    }
    finish(head, runs, &a.out)
}

/// Shortens the model's time slice so that every application gets a turn in the window
/// (a window shorter than one slice would see one application only). The run measures
/// the context switch; `advise::timeslice` gives the figures of the model's own slice
/// from it (said on stderr). Returns the slice in core cycles.
fn short_slice(spec: &mut GpuSpec, window: u64, n: usize) -> u64 {
    let hz = spec.clocks.core.hz() as u128;
    let slice = spec.clocks.core.cycles_in(spec.reconfig.time_slice);
    let fit = (window / n.max(1) as u64).max(crate::arch::validate::MIN_SLICE_CYCLES);
    if slice <= fit || hz == 0 {
        return slice;
    }
    let ps = (fit as u128 * 1_000_000_000_000u128).div_ceil(hz);
    spec.reconfig.time_slice = crate::arch::Time::from_ps(ps as u64);
    let fit = spec.clocks.core.cycles_in(spec.reconfig.time_slice);
    eprintln!(
        "time-slice: the model's slice ({slice} cycles) is longer than the window allows; \
         the run uses slices of {fit} cycles to measure a context switch, and time \
         slicing's figures are those of the model's slice with that switch cost"
    );
    fit
}

/// The objective, the applications' names and specs, and the model, all checked.
fn inputs(
    a: &AdviseArgs,
) -> Result<(Objective, Vec<String>, Vec<crate::engine::AppSpec>, GpuSpec)> {
    let objective: Objective = a.objective.parse()?;
    if a.apps.len() < 2 || a.apps.len() > 6 {
        return Err(Error::Usage(format!(
            "--apps needs 2 to 6 applications, got {}",
            a.apps.len()
        ))
        .into());
    }
    if a.window == 0 || a.window > a.max_cycles {
        return Err(Error::Usage(format!(
            "--window must be positive and at most --max-cycles ({}), got {}",
            a.max_cycles, a.window
        ))
        .into());
    }
    let gpu = a.gpu.as_deref().unwrap_or_default();
    let spec = a.overrides.load(gpu)?;
    let mut names: Vec<String> = Vec::new();
    let mut apps = Vec::new();
    for (i, arg) in a.apps.iter().enumerate() {
        let path = super::analyze::find_app(arg.trim())?;
        let app = open_app(&path, &Default::default())?;
        let mut label = app.name.clone();
        if names.contains(&label) {
            label = format!("{label}#{i}");
        }
        names.push(label.clone());
        apps.push(crate::engine::AppSpec::new(label, app.kernels));
    }
    // A QoS objective may name the application as given on the command line.
    let objective = match objective {
        Objective::Qos { app, target } => {
            let app = a
                .apps
                .iter()
                .position(|x| x.trim() == app)
                .map_or(app, |i| names[i].clone());
            Objective::Qos { app, target }
        }
        o => o,
    };
    objective.qos_index(&names)?;
    Ok((objective, names, apps, spec))
}

/// `simulating K of F feasible configurations; skipped: ...`.
fn print_pruning(en: &Enumeration) {
    eprintln!(
        "simulating {} of {} feasible configurations; skipped:",
        en.candidates.len(),
        en.feasible
    );
    for s in &en.skipped {
        let ex = if s.examples.is_empty() {
            String::new()
        } else {
            format!(" (e.g. {})", s.examples.join("; "))
        };
        eprintln!("  {} x{}: {}{ex}", s.mechanism, s.count, s.reason);
    }
}

/// Ranks, prints and saves a complete run (whole or merged).
fn finish(head: Head, runs: Vec<PolicyRun>, out: &Path) -> Result<()> {
    let objective: Objective = head
        .config
        .get("objective")
        .and_then(|o| o.as_str())
        .unwrap_or("stp")
        .parse()?;
    let names: Vec<String> = head.alone.iter().map(|a| a.name.clone()).collect();
    let qos = objective.qos_index(&names)?;
    let Enumeration {
        candidates,
        feasible,
        skipped,
    } = head.enumeration;
    let simulated = candidates.len();
    let mut runs = runs;
    // Time slicing ran with short slices; its figures are those of the model's slice.
    if let Some(slice) = head
        .config
        .get("model_time_slice_cycles")
        .and_then(|v| v.as_u64())
    {
        for (c, r) in candidates.iter().zip(runs.iter_mut()) {
            if c.share.time_sliced {
                advise::timeslice::at_model_slice(r, slice);
            }
        }
    }
    let configs = advise::rank(&objective, qos, candidates, runs);
    let recommendation = advise::recommend(&objective, qos, &configs, &head.alone, &head.model)?;
    let r = AdviceResults {
        schema_version: advise::ADVISE_SCHEMA_VERSION,
        kind: advise::ADVISE_KIND.into(),
        config: head.config,
        model: head.model,
        alone: head.alone,
        feasible,
        simulated,
        skipped,
        configs,
        recommendation,
    };
    print_table(&r);
    save(&r, out)
}

/// The ranked table (the first 25 and the best of every mechanism below them), the
/// counts and the recommendation.
fn print_table(r: &AdviceResults) {
    println!(
        "{:>4}  {:<14} {:<34} {:>9} {:>6} {:>6} {:>8}  per-app slowdown",
        "rank", "mechanism", "config", "objective", "STP", "ANTT", "fairness"
    );
    let mut shown: Vec<&str> = Vec::new();
    for c in &r.configs {
        let first_of_mech = !shown.contains(&c.mechanism.as_str());
        if c.rank > 25 && !first_of_mech {
            continue;
        }
        shown.push(&c.mechanism);
        let s = &c.run.summary;
        let slow: Vec<String> = c
            .run
            .apps
            .iter()
            .map(|a| format!("{}={:.2}", a.name, a.slowdown))
            .collect();
        let met = match c.meets_target {
            Some(false) => " (misses target)",
            _ => "",
        };
        // An application that made no progress has an unbounded ANTT.
        let antt = if s.antt < 1e6 {
            format!("{:.3}", s.antt)
        } else {
            "inf".into()
        };
        println!(
            "{:>4}  {:<14} {:<34} {:>9.3} {:>6.3} {:>6} {:>8.3}  {}{met}",
            c.rank,
            c.mechanism,
            c.label,
            c.objective,
            s.stp,
            antt,
            s.fairness,
            slow.join(" ")
        );
    }
    println!(
        "simulated {} of {} feasible configurations (all ranked in advise.csv)",
        r.simulated, r.feasible
    );
    println!("Recommendation: {}", r.recommendation.config);
    for w in &r.recommendation.why {
        println!("  {w}");
    }
}

fn save(r: &AdviceResults, dir: &Path) -> Result<()> {
    let guard = crate::output::Guard::of(Vec::<PathBuf>::new());
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join("metrics.json");
    super::analyze::write_json(&guard, &path, r)?;
    let csv = dir.join("advise.csv");
    guard.write(&csv, crate::report::advise::to_csv(r)?.as_bytes())?;
    let svg = dir.join("advise.svg");
    guard.write(&svg, crate::report::advise::svg(r)?.as_bytes())?;
    for p in [path, csv, svg] {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

fn head_hash(head: &Head) -> Result<String> {
    let text = serde_json::to_string(head)?;
    Ok(crate::study::shard::fnv(&[text.as_bytes()]))
}

fn write_shard(
    a: &AdviseArgs,
    id: ShardId,
    head: Head,
    outputs: Vec<(usize, PolicyRun)>,
) -> Result<()> {
    let path = a
        .out
        .join(format!("advise-shard-{}-of-{}.json", id.index, id.count));
    super::check_output(&path, &[])?;
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, e))?;
    let f = ShardFile {
        kind: SHARD_KIND.into(),
        schema_version: advise::ADVISE_SCHEMA_VERSION,
        hash: head_hash(&head)?,
        shard: id.index,
        of: id.count,
        head,
        outputs,
    };
    let guard = crate::output::Guard::of(Vec::<PathBuf>::new());
    super::analyze::write_json(&guard, &path, &f)?;
    eprintln!(
        "shard {}/{}: {} of {} configurations; wrote {}",
        id.index,
        id.count,
        f.outputs.len(),
        f.head.enumeration.candidates.len(),
        path.display()
    );
    Ok(())
}

/// The shard files named by `--merge` (folders: their `advise-shard-*.json`).
fn shard_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::io(p, e))?
                .flatten()
                .map(|e| e.path())
                .filter(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("advise-shard-") && n.ends_with(".json"))
                })
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        return Err(Error::Usage("--merge: no advise-shard-*.json file found".into()).into());
    }
    Ok(out)
}

/// `--merge`: checks that the shards are of one run, each once, every configuration
/// present once; then does what the unsharded run does.
fn merge(a: &AdviseArgs, _quiet: bool) -> Result<()> {
    let paths = shard_paths(&a.merge)?;
    let mut files = Vec::new();
    for p in &paths {
        let text = crate::infile::read_to_string(p)?;
        let f: ShardFile = serde_json::from_str(&text).map_err(|e| {
            Error::input(
                p,
                Some(e.line() as u64),
                format!("not an advise shard file: {e}"),
            )
        })?;
        if f.kind != SHARD_KIND || f.schema_version != advise::ADVISE_SCHEMA_VERSION {
            return Err(Error::input(
                p,
                None,
                format!(
                    "kind {} version {}: expected {SHARD_KIND} version {}",
                    f.kind,
                    f.schema_version,
                    advise::ADVISE_SCHEMA_VERSION
                ),
            )
            .into());
        }
        if head_hash(&f.head)? != f.hash {
            return Err(Error::input(p, None, "its head does not match its hash (edited?)").into());
        }
        files.push((p, f));
    }
    let (p0, f0) = &files[0];
    let n = f0.of;
    let jobs = f0.head.enumeration.candidates.len();
    let mut seen = vec![false; n + 1];
    let mut runs: Vec<Option<PolicyRun>> = vec![None; jobs];
    for (p, f) in &files {
        if f.hash != f0.hash || f.of != n {
            return Err(Error::Usage(format!(
                "{} and {} are shards of different advise runs",
                p0.display(),
                p.display()
            ))
            .into());
        }
        if f.shard == 0 || f.shard > n || std::mem::replace(&mut seen[f.shard], true) {
            return Err(Error::input(
                p,
                None,
                format!("shard {} of {n} is out of range or given twice", f.shard),
            )
            .into());
        }
        for (j, r) in &f.outputs {
            match runs.get_mut(*j) {
                Some(slot @ None) => *slot = Some(r.clone()),
                _ => {
                    return Err(Error::input(
                        p,
                        None,
                        format!("configuration {j} is out of range or in two shards"),
                    )
                    .into())
                }
            }
        }
    }
    let missing: Vec<usize> = (1..=n).filter(|&i| !seen[i]).collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!("--merge: shard(s) {missing:?} of {n} missing")).into());
    }
    let runs: Vec<PolicyRun> = runs
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::Usage("--merge: some configuration is in no shard".into()))?;
    let head = files.swap_remove(0).1.head;
    print_pruning(&head.enumeration);
    finish(head, runs, &a.out)
}
