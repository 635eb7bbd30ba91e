//! `gpumodel study FILE`: every workload of a study file under every policy; writes
//! `metrics.json` and the figures next to the study file (or into `--out`). A file with
//! `kind = "queue"` is a queue study (Punyala et al.): classes, interference, queues.
//! `--shard I/N` runs one shard of the study's jobs and writes `shard-I-of-N.json`, which
//! `gpumodel merge` (also here) assembles into the unsharded `metrics.json`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::metrics::StudyResults;
use crate::study::shard::{self, ShardId};
use crate::study::StudyOutput;

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel study reports/slate/study.toml --out results/slate")]
pub struct StudyArgs {
    /// The study file, e.g. reports/warped-slicer/study.toml.
    pub file: PathBuf,
    /// Output folder (default: the study file's folder).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Run only shard I of N (1-based) of the study's independent jobs and write
    /// `shard-I-of-N.json` into the output folder; `gpumodel merge` assembles the shards
    /// into the same metrics.json as an unsharded run.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<ShardId>,
    /// Fast-forward: overrides the study file's `fast_forward` (on unless it says `false`).
    #[command(flatten)]
    pub ff: super::FfArgs,
    /// After the study, run N of its fast-forwarded co-run jobs again in detail (every
    /// policy in turn; within each, first the job whose co-run jump was credited from the
    /// least steady span, its `ff_spread`, then evenly spaced) and report the largest
    /// per-application difference in progress: the error of this run. Kept in
    /// metrics.json (`ff_check`).
    #[arg(long, value_name = "N")]
    pub ff_check: Option<usize>,
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel merge shards/ -o results/ugpu")]
pub struct MergeArgs {
    /// Shard files (`shard-I-of-N.json`) or folders holding them.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output folder for metrics.json and the figures.
    #[arg(long, short)]
    pub out: PathBuf,
}

pub fn run(a: &StudyArgs, quiet: bool) -> Result<()> {
    // Outputs are checked before any simulation (a folder that is a file, a metrics.json
    // that is a folder, a link or the study file itself).
    let dir = out_dir(a)?;
    super::check_output_dir(&dir)?;
    let queue = crate::study::queue_study::is_queue_study(&a.file);
    if let Some(id) = a.shard {
        if queue {
            return Err(crate::error::Error::Usage(format!(
                "{}: queue studies cannot be sharded yet (each queue depends on the previous \
                 stage's classes and interference); run it whole",
                a.file.display()
            ))
            .into());
        }
        return run_shard(a, id, &dir, quiet);
    }
    super::check_output(&dir.join("metrics.json"), &[&a.file])?;
    if queue {
        return run_queue(a, quiet);
    }
    let pb = super::progress::count_bar(quiet, "study");
    let tick = |what: &str, d: usize, t: usize| super::progress::stage(&pb, what, d, t);
    let t0 = std::time::Instant::now();
    let check = a.ff_check.unwrap_or(0);
    let (mut r, checked) =
        crate::study::run_study_file_checked(&a.file, a.ff.choice(), check, &tick)?;
    pb.finish_and_clear();
    if let Some(c) = checked {
        print_ff_check(&c);
        // (A model sweep's check spans its points: printed, not kept in one point.)
        if let StudyOutput::Study(r) = &mut r {
            r.ff_check = Some(c);
        }
    }
    let results: Vec<&StudyResults> = match &r {
        StudyOutput::Study(r) => vec![r],
        StudyOutput::Sweep(s) => s.points.iter().map(|p| &p.results).collect(),
    };
    let runs: usize = results
        .iter()
        .flat_map(|r| &r.workloads)
        .flat_map(|w| w.runs.iter().map(|p| p.runs))
        .sum();
    eprintln!(
        "{}: {} workloads on {} model point{}, {} engine runs in {:.1} s",
        results.first().map(|r| r.study.as_str()).unwrap_or(""),
        results.iter().map(|r| r.workloads.len()).sum::<usize>(),
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        runs,
        t0.elapsed().as_secs_f64()
    );
    eprintln!("{}", super::analyze::ff_line(&results));
    if let StudyOutput::Study(r) = &r {
        super::analyze::print_table(r);
    }
    save(&r, &dir, &crate::output::Guard::of([&a.file]))
}

/// `--ff-check`'s summary: how many jobs were checked and the largest difference.
fn print_ff_check(c: &crate::metrics::FfCheck) {
    if c.checked == 0 {
        eprintln!("ff-check: no co-run job was fast-forwarded; nothing to check");
        return;
    }
    let worst = c
        .runs
        .iter()
        .max_by(|x, y| x.diff.abs().total_cmp(&y.diff.abs()));
    eprintln!(
        "ff-check: {} of {} fast-forwarded co-run jobs re-run in detail: largest progress \
         difference {:.2}%{}",
        c.checked,
        c.eligible,
        c.largest * 100.0,
        worst.map_or(String::new(), |w| format!(
            " ({} in {} under {}: {:.4} vs {:.4} detailed)",
            w.app, w.workload, w.policy, w.fast_forward, w.detailed
        ))
    );
}

/// Writes a study's `metrics.json` and draws its figures (a sweep: per point and per
/// parameter).
fn save(r: &StudyOutput, dir: &std::path::Path, guard: &crate::output::Guard) -> Result<()> {
    match r {
        StudyOutput::Study(r) => super::analyze::save(r, dir, guard),
        StudyOutput::Sweep(s) => {
            let path = dir.join("metrics.json");
            super::analyze::write_json(guard, &path, s)?;
            eprintln!("wrote {}", path.display());
            let files = crate::report::render_sweep(s, dir)?;
            eprintln!(
                "wrote {} figures and tables under {}",
                files.len(),
                dir.display()
            );
            Ok(())
        }
    }
}

/// `study --shard I/N`: this shard's jobs, into `DIR/shard-I-of-N.json`.
fn run_shard(a: &StudyArgs, id: ShardId, dir: &std::path::Path, quiet: bool) -> Result<()> {
    let path = dir.join(id.file_name());
    super::check_output(&path, &[&a.file])?;
    let pb = super::progress::count_bar(quiet, "shard");
    let tick = |what: &str, d: usize, t: usize| super::progress::stage(&pb, what, d, t);
    let t0 = std::time::Instant::now();
    let s = shard::run_shard(&a.file, a.ff.choice(), id, &tick)?;
    pb.finish_and_clear();
    std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, e))?;
    crate::output::Guard::of([&a.file])
        .write(&path, (serde_json::to_string(&s)? + "\n").as_bytes())?;
    eprintln!(
        "{}: shard {}/{}: {} of {} jobs in {:.1} s; wrote {}",
        s.study,
        id.index,
        id.count,
        s.outputs.len(),
        s.jobs,
        t0.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(())
}

/// `gpumodel merge SHARDS... -o DIR`: checks the shards and writes what the unsharded
/// study would have.
pub fn merge(a: &MergeArgs) -> Result<()> {
    super::check_output_dir(&a.out)?;
    let paths = shard::shard_paths(&a.inputs)?;
    // The shards are never outputs (see `report`): refused up front where a figure, a
    // table or metrics.json goes, and protected from every writer.
    for p in &paths {
        crate::output::protect_input(p);
        crate::output::check_input_outside(p, &a.out, |n| {
            n == "metrics.json" || super::report::writes(n, false)
        })?;
    }
    let inputs: Vec<&PathBuf> = paths.iter().collect();
    super::check_output(&a.out.join("metrics.json"), &inputs)?;
    let files = paths
        .iter()
        .map(|p| shard::read_shard(p))
        .collect::<crate::error::Result<Vec<_>>>()?;
    let n = files.len();
    let r = shard::merge(&paths, files)?;
    eprintln!("merged {n} shard{}", if n == 1 { "" } else { "s" });
    save(&r, &a.out, &crate::output::Guard::of(&paths))
}

/// The output folder: `--out`, else the study file's `out` (checked: inside the study
/// file's folder), else the study file's folder.
fn out_dir(a: &StudyArgs) -> crate::error::Result<PathBuf> {
    if let Some(o) = &a.out {
        return Ok(o.clone());
    }
    let dir = match a.file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // A study file may name its own output folder (`out`, relative to it). A file that
    // does not load is reported when the study reads it.
    let named = (!crate::study::queue_study::is_queue_study(&a.file))
        .then(|| crate::study::StudySpec::load(&a.file).ok())
        .flatten()
        .and_then(|s| s.out);
    match named {
        Some(o) => crate::study::study_out(&a.file, &dir, &o),
        None => Ok(dir),
    }
}

fn run_queue(a: &StudyArgs, quiet: bool) -> Result<()> {
    use crate::study::queue_study::run_queue_study_with;
    let pb = super::progress::count_bar(quiet, "queue study");
    // Each stage's wall time is printed when the next one starts.
    let stage = std::sync::Mutex::new((String::new(), std::time::Instant::now()));
    let done = |s: &(String, std::time::Instant)| {
        if !s.0.is_empty() && !quiet {
            pb.suspend(|| eprintln!("  {}: {:.1} s", s.0, s.1.elapsed().as_secs_f64()));
        }
    };
    let tick = |what: &str, d: usize, t: usize| {
        if let Ok(mut s) = stage.lock() {
            if s.0 != what {
                done(&s);
                *s = (what.to_string(), std::time::Instant::now());
            }
        }
        pb.set_message(what.to_string());
        pb.set_length(t as u64);
        pb.set_position(d as u64);
    };
    let t0 = std::time::Instant::now();
    let r = run_queue_study_with(&a.file, a.ff.choice(), &tick)?;
    if let Ok(s) = stage.lock() {
        done(&s);
    }
    pb.finish_and_clear();
    eprintln!(
        "{}: {} applications, {} queue runs in {:.1} s",
        r.study,
        r.apps.len(),
        r.cells.len(),
        t0.elapsed().as_secs_f64()
    );
    for w in r.ways() {
        println!("{w} concurrent applications: throughput normalised to even");
        print!("  {:<12}", "mix");
        let policies = r.policies();
        for p in &policies {
            print!(" {p:>13}");
        }
        println!();
        for mix in r.mixes() {
            print!("  {mix:<12}");
            let base = r
                .cell(w, &mix, crate::report::queue::BASELINE)
                .map(|c| c.throughput);
            for p in &policies {
                match (r.cell(w, &mix, p), base) {
                    (Some(c), Some(b)) if b > 0.0 => print!(" {:>13.3}", c.throughput / b),
                    _ => print!(" {:>13}", "-"),
                }
            }
            println!();
        }
    }
    let dir = out_dir(a)?;
    let path = dir.join("metrics.json");
    crate::output::Guard::of([&a.file])
        .write(&path, (serde_json::to_string_pretty(&r)? + "\n").as_bytes())?;
    eprintln!("wrote {}", path.display());
    for f in crate::report::render_queue_study(&r, &dir)? {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}
