//! `gpumodel study FILE`: every workload of a study file under every policy; writes
//! `metrics.json` and the figures next to the study file (or into `--out`). A file with
//! `kind = "queue"` is a queue study (Punyala et al.): classes, interference, queues.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::study::run_study_with;

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// The study file, e.g. reports/warped-slicer/study.toml.
    pub file: PathBuf,
    /// Output folder (default: the study file's folder).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Fast-forward: overrides the study file's `[fast_forward]` (off by default).
    #[command(flatten)]
    pub ff: super::FfArgs,
}

pub fn run(a: &StudyArgs, quiet: bool) -> Result<()> {
    // Outputs are checked before any simulation (a folder that is a file, a metrics.json
    // that is a folder, a link or the study file itself).
    let dir = out_dir(a);
    super::check_output_dir(&dir)?;
    super::check_output(&dir.join("metrics.json"), &[&a.file])?;
    if crate::study::queue_study::is_queue_study(&a.file) {
        return run_queue(a, quiet);
    }
    let pb = super::progress::count_bar(quiet, "study");
    let tick = |what: &str, d: usize, t: usize| {
        pb.set_message(what.to_string());
        pb.set_length(t as u64);
        pb.set_position(d as u64);
    };
    let t0 = std::time::Instant::now();
    let r = run_study_with(&a.file, a.ff.choice(), &tick)?;
    pb.finish_and_clear();
    let runs: usize = r
        .workloads
        .iter()
        .flat_map(|w| w.runs.iter().map(|p| p.runs))
        .sum();
    eprintln!(
        "{}: {} workloads, {} engine runs in {:.1} s",
        r.study,
        r.workloads.len(),
        runs,
        t0.elapsed().as_secs_f64()
    );
    super::analyze::print_table(&r);
    super::analyze::save(&r, &out_dir(a), &crate::output::Guard::of([&a.file]))
}

fn out_dir(a: &StudyArgs) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        let dir = match a.file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // A study file may name its own output folder (`out`, relative to it).
        let named = (!crate::study::queue_study::is_queue_study(&a.file))
            .then(|| crate::study::StudySpec::load(&a.file).ok())
            .flatten()
            .and_then(|s| s.out);
        match named {
            Some(o) => dir.join(o),
            None => dir,
        }
    })
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
    let dir = out_dir(a);
    let path = dir.join("metrics.json");
    crate::output::Guard::of([&a.file])
        .write(&path, (serde_json::to_string_pretty(&r)? + "\n").as_bytes())?;
    eprintln!("wrote {}", path.display());
    for f in crate::report::render_queue_study(&r, &dir)? {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}
