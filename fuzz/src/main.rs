//! gpumodel-fuzz: a process-level fuzz driver for the `gpumodel` binary. It generates cases
//! (mutated trace bundles, `.traceg`/NVBit/`.gmt`/spec inputs, model files, study files,
//! shard sets, a tiny reference folder, `metrics.json`, special files in their place) from
//! the repository's own seeds, runs each in a fresh folder under time and memory limits, and
//! reports every run that panics, aborts, dies on a signal, times out, exceeds its memory,
//! exits with a code other than 0/1/2 (or 1 where bad input must give 2), echoes a file
//! outside its folder, changes one or writes beside its output folder. See `fuzz/README.md`.
//!
//! `cargo run --release --manifest-path fuzz/Cargo.toml -- --bin target/release/gpumodel
//!  --minutes 30 --seed 1 --jobs 1`

mod case;
mod corpus;
mod exec;
mod findings;
mod json;
mod mutate;
mod rng;
mod studies;
mod surfaces;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use case::{Outside, Target};
use corpus::Corpus;
use exec::{End, Limits};
use findings::{Canary, Findings};

struct Opts {
    bin: PathBuf,
    repo: PathBuf,
    minutes: f64,
    min_execs: u64,
    max_execs: u64,
    start: u64,
    seed: u64,
    jobs: usize,
    timeout_s: f64,
    mem_mib: u64,
    rss_mib: u64,
    bomb_mib: u64,
    work: PathBuf,
    findings: PathBuf,
    /// Shares of the targets, in the order of `Target::ALL` (`--targets` zeroes the others).
    weights: Vec<u32>,
}

const USAGE: &str =
    "usage: gpumodel-fuzz --bin PATH [--minutes M] [--min-execs N] [--max-execs N] \
[--start I (first case number)] [--seed S] [--jobs J] [--timeout-s T] [--mem-mib M] [--rss-mib M] [--bomb-mib M (0: none)] \
[--repo DIR] [--work DIR] [--findings DIR] [--targets T,T,...]";

fn parse_args() -> Result<Opts, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Opts {
        bin: PathBuf::new(),
        repo: manifest.join(".."),
        minutes: 30.0,
        min_execs: 0,
        max_execs: u64::MAX,
        start: 0,
        seed: 1,
        jobs: 1,
        timeout_s: 10.0,
        mem_mib: 2048,
        rss_mib: 1024,
        bomb_mib: 2048,
        work: std::env::temp_dir().join(format!("gpumodel-fuzz-{}", std::process::id())),
        findings: manifest.join("findings"),
        weights: Target::ALL.iter().map(|t| t.weight()).collect(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let v = args
            .get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{a}: a value is needed\n{USAGE}"));
        let num = |v: Result<String, String>| -> Result<f64, String> {
            let v = v?;
            v.parse::<f64>()
                .map_err(|_| format!("{a}: `{v}` is not a number"))
        };
        match a {
            "--bin" => o.bin = PathBuf::from(v?),
            "--repo" => o.repo = PathBuf::from(v?),
            "--work" => o.work = PathBuf::from(v?),
            "--findings" => o.findings = PathBuf::from(v?),
            "--minutes" => o.minutes = num(v)?,
            "--min-execs" => o.min_execs = num(v)? as u64,
            "--max-execs" => o.max_execs = num(v)? as u64,
            "--start" => o.start = num(v)? as u64,
            "--seed" => o.seed = num(v)? as u64,
            "--jobs" => o.jobs = (num(v)? as usize).max(1),
            "--timeout-s" => o.timeout_s = num(v)?,
            "--mem-mib" => o.mem_mib = num(v)? as u64,
            "--rss-mib" => o.rss_mib = num(v)? as u64,
            "--bomb-mib" => o.bomb_mib = num(v)? as u64,
            "--targets" => {
                let v = v?;
                let mut w = vec![0; Target::ALL.len()];
                for name in v.split(',') {
                    let t = Target::by_name(name)
                        .ok_or_else(|| format!("--targets: no target `{name}`"))?;
                    let i = Target::ALL.iter().position(|&x| x == t).unwrap_or(0);
                    w[i] = t.weight();
                }
                o.weights = w;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument `{a}`\n{USAGE}")),
        }
        i += 2;
    }
    if o.bin.as_os_str().is_empty() {
        return Err(USAGE.into());
    }
    o.bin = fs::canonicalize(&o.bin).map_err(|e| format!("{}: {e}", o.bin.display()))?;
    o.repo = fs::canonicalize(&o.repo).map_err(|e| format!("{}: {e}", o.repo.display()))?;
    Ok(o)
}

/// Per-target tallies.
#[derive(Default, Clone)]
struct Tally {
    execs: u64,
    exit: [u64; 3],
    findings: u64,
    wall: Duration,
    max_rss_kib: u64,
}

#[derive(Default)]
struct Shared {
    tallies: BTreeMap<Target, Tally>,
    findings: Findings,
}

/// Runs a setup command in `dir`; true on exit 0.
fn setup_run(o: &Opts, dir: &Path, args: &[&str]) -> bool {
    let limits = Limits {
        timeout: Duration::from_secs(60),
        address_space: o.mem_mib << 20,
        file_size: 1 << 30,
    };
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match exec::run(&o.bin, &args, dir, dir, limits) {
        Ok(r) if r.end == End::Exit(0) => true,
        Ok(r) => {
            let e = String::from_utf8_lossy(&r.stderr);
            let last = e
                .lines()
                .last()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect::<String>();
            eprintln!("warning: `{}` ended {:?}: {last}", args.join(" "), r.end);
            false
        }
        Err(_) => false,
    }
}

/// Produces the `.gmt` and `metrics.json` seeds with the binary itself, and the gzip bomb.
fn derive(o: &Opts, c: &mut Corpus, dir: &Path) -> Option<String> {
    let _ = fs::create_dir_all(dir);
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, t) in c.traces.seeds.iter().enumerate() {
        inputs.push((format!("t{i}.traceg"), t.clone()));
    }
    for (i, t) in c.nvbit.seeds.iter().enumerate() {
        inputs.push((format!("n{i}.log"), t.clone()));
    }
    for (i, t) in c.specs.seeds.iter().take(12).enumerate() {
        inputs.push((format!("s{i}.toml"), t.clone()));
    }
    for (name, data) in &inputs {
        let _ = fs::write(dir.join(name), data);
        let out = format!("{name}.gmt");
        if setup_run(
            o,
            dir,
            &["convert", name, "-o", &out, "-q", "--threads", "1"],
        ) {
            if let Ok(d) = fs::read(dir.join(&out)) {
                c.gmt.push(d);
            }
        }
    }
    let pair = dir.join("pair");
    let _ = fs::create_dir_all(&pair);
    for (n, d) in &c.pair.files {
        let _ = fs::write(pair.join(n), d);
    }
    if setup_run(
        o,
        dir,
        &["convert", "pair", "-o", "pair.gmt", "-q", "--threads", "1"],
    ) {
        if let Ok(d) = fs::read(dir.join("pair.gmt")) {
            c.gmt.push(d);
        }
    }
    // The study benches, then every study seed run once for its metrics.json.
    let va = dir.join("va");
    let _ = fs::create_dir_all(&va);
    for (n, d) in &c.bundles[0].files {
        let _ = fs::write(va.join(n), d);
    }
    let _ = fs::write(dir.join("at.traceg"), &c.traces.seeds[2]);
    let _ = fs::write(dir.join("s.toml"), c.small_spec());
    for (i, st) in c.studies.seeds.clone().iter().enumerate() {
        let f = format!("study{i}.toml");
        let _ = fs::write(dir.join(&f), st);
        let out = format!("st{i}");
        let t = Instant::now();
        let ok = setup_run(o, dir, &["study", &f, "-o", &out, "-q", "--threads", "1"]);
        if t.elapsed() > Duration::from_secs(1) {
            eprintln!(
                "note: the seed study {f} took {:.1} s",
                t.elapsed().as_secs_f64()
            );
        }
        if ok {
            if let Ok(d) = fs::read(dir.join(&out).join("metrics.json")) {
                c.metrics.push(d);
            }
        } else {
            eprintln!("  (the seed study {f} is kept as a seed anyway)");
        }
    }
    derive_shards(o, c, dir);
    if o.bomb_mib == 0 {
        return None;
    }
    let bomb = dir.join("bomb.traceg.gz");
    let header = String::from_utf8_lossy(&c.traces.seeds[0])
        .lines()
        .take_while(|l| !l.starts_with("#BEGIN_TB"))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = fs::write(dir.join("bomb-head"), format!("{header}\n#BEGIN_TB\n"));
    let sh = format!(
        "(cat bomb-head; head -c {}M /dev/zero) | gzip -1 > bomb.traceg.gz",
        o.bomb_mib
    );
    let ok = Command::new("sh")
        .args(["-c", &sh])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| bomb.to_string_lossy().into_owned())
}

/// Shard sets of three seed studies (the windowed one, the random-group sweep and the solo
/// one), each run with `--shard I/N` for every I.
fn derive_shards(o: &Opts, c: &mut Corpus, dir: &Path) {
    for (study, n) in [(0, 2), (3, 3), (5, 2)] {
        let f = format!("study{study}.toml");
        let out = format!("sh{study}");
        let mut set = Vec::new();
        for i in 1..=n {
            let shard = format!("{i}/{n}");
            let args = [
                "study",
                &f,
                "-o",
                &out,
                "--shard",
                &shard,
                "-q",
                "--threads",
                "1",
            ];
            let name = format!("shard-{i}-of-{n}.json");
            if setup_run(o, dir, &args) {
                if let Ok(d) = fs::read(dir.join(&out).join(&name)) {
                    set.push((name, d));
                }
            }
        }
        if set.len() == n {
            c.shards.push(set);
        } else {
            eprintln!("warning: {f} --shard I/{n} did not give {n} shards");
        }
    }
}

/// A file's bytes if it is a regular file (never opens a FIFO or a device: that would block
/// or never end).
fn read_regular(p: &Path) -> Option<Vec<u8>> {
    let m = fs::symlink_metadata(p).ok()?;
    if m.file_type().is_file() {
        fs::read(p).ok()
    } else {
        None
    }
}

/// The kind of a case's first input, for grouping timeouts: its extension, or `folder`.
fn input_kind(arg: &str) -> String {
    let name = arg.rsplit('/').next().unwrap_or(arg);
    match name.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() => ext.to_string(),
        _ => "folder".into(),
    }
}

fn summary(o: &Opts, sh: &Shared, execs: u64, elapsed: Duration, done: bool) -> String {
    let mut s = String::new();
    let secs = elapsed.as_secs_f64();
    s.push_str(&format!(
        "{} after {:.1} min: {execs} executions ({:.1}/s), seed {}, binary {}\n",
        if done { "finished" } else { "running" },
        secs / 60.0,
        execs as f64 / secs.max(1e-9),
        o.seed,
        o.bin.display()
    ));
    s.push_str("target      execs   exit0   exit1   exit2  findings  mean ms  max RSS MiB\n");
    for (t, y) in &sh.tallies {
        s.push_str(&format!(
            "{:<10} {:>6} {:>7} {:>7} {:>7} {:>9} {:>8.1} {:>12}\n",
            t.name(),
            y.execs,
            y.exit[0],
            y.exit[1],
            y.exit[2],
            y.findings,
            y.wall.as_secs_f64() * 1000.0 / y.execs.max(1) as f64,
            y.max_rss_kib >> 10
        ));
    }
    s.push_str(&format!("findings: {}", sh.findings.total()));
    for (k, n) in &sh.findings.by_kind {
        s.push_str(&format!("  {k}={n}"));
    }
    s.push('\n');
    for ((kind, target, sig), (n, first)) in &sh.findings.by_signature {
        s.push_str(&format!(
            "  {n:>6} x {kind} in {target}: {sig} (e.g. {first})\n"
        ));
    }
    s
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = fuzz(o) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn fuzz(o: Opts) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let _ = fs::remove_dir_all(&o.work);
    fs::create_dir_all(&o.work).map_err(io)?;
    fs::create_dir_all(&o.findings).map_err(io)?;
    let canary = Canary::create(&o.work.join("canary")).map_err(io)?;
    let mut corpus = Corpus::load(&o.repo)?;
    let t0 = Instant::now();
    let bomb = derive(&o, &mut corpus, &o.work.join("derive"));
    eprintln!(
        "seeds: {} models ({} keys), {} traces, {} bundles, {} NVBit logs, {} specs, {} .gmt, {} studies, {} metrics; bomb: {}; set-up {:.1} s",
        corpus.models.seeds.len(),
        corpus.model_keys.len(),
        corpus.traces.seeds.len(),
        corpus.bundles.len(),
        corpus.nvbit.seeds.len(),
        corpus.specs.seeds.len(),
        corpus.gmt.seeds.len(),
        corpus.studies.seeds.len(),
        corpus.metrics.seeds.len(),
        bomb.is_some(),
        t0.elapsed().as_secs_f64()
    );
    if corpus.metrics.seeds.is_empty() {
        return Err("no metrics.json seed could be produced: does the binary run?".into());
    }
    let outside = Outside {
        secret: canary.path("secret.txt"),
        dir: canary.dir.to_string_lossy().into_owned(),
        victim: canary.path("victim.gmt"),
        bomb,
    };
    let limits = Limits {
        timeout: Duration::from_secs_f64(o.timeout_s),
        address_space: o.mem_mib << 20,
        file_size: 1 << 30,
    };
    let shared = Mutex::new(Shared::default());
    // The case and log folders exist before the parent is watched.
    for j in 0..o.jobs {
        let _ = fs::create_dir_all(o.work.join(format!("case-{j}")));
        let _ = fs::create_dir_all(o.work.join(format!("logs-{j}")));
    }
    let watches = Mutex::new(vec![
        findings::Watch::new(&o.work, "the case folders' parent", true),
        findings::Watch::new(Path::new("/"), "/", false),
    ]);
    let canary = Mutex::new(canary);
    let next = AtomicU64::new(o.start);
    let done_count = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = Duration::from_secs_f64(o.minutes * 60.0);
    let o = Arc::new(o);
    std::thread::scope(|scope| {
        for j in 0..o.jobs {
            let (o, corpus, outside, shared, canary) = (&o, &corpus, &outside, &shared, &canary);
            let watches = &watches;
            let (next, done_count, stop) = (&next, &done_count, &stop);
            scope.spawn(move || {
                let dir = o.work.join(format!("case-{j}"));
                let logs = o.work.join(format!("logs-{j}"));
                let _ = fs::create_dir_all(&logs);
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index - o.start >= o.max_execs {
                        break;
                    }
                    let _ = fs::remove_dir_all(&dir);
                    let _ = fs::create_dir_all(&dir);
                    let c = case::build(o.seed, index, &dir, corpus, outside, &o.weights);
                    let before = c.outputs.as_ref().map(|_| findings::tree(&dir));
                    let kept: Vec<Option<Vec<u8>>> =
                        c.kept.iter().map(|k| read_regular(&dir.join(k))).collect();
                    let ran = match exec::run(&o.bin, &c.args, &dir, &logs, limits) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("case {index}: could not run: {e}");
                            continue;
                        }
                    };
                    let mut changed = {
                        let mut cn = canary.lock().unwrap();
                        let ch = cn.check();
                        if ch.is_some() {
                            cn.refresh();
                        }
                        ch
                    };
                    for w in watches.lock().unwrap().iter_mut() {
                        if let (None, Some(x)) = (&changed, w.check()) {
                            changed = Some(x);
                        }
                    }
                    if let (None, Some(b), Some(allowed)) = (&changed, &before, &c.outputs) {
                        changed = findings::stray(b, &findings::tree(&dir), allowed);
                    }
                    let input = c
                        .args
                        .iter()
                        .find(|a| a.starts_with("in/"))
                        .map_or("none".to_string(), |a| input_kind(a));
                    let input = match &c.special {
                        Some(sp) => format!("{input}, {sp}"),
                        None => input,
                    };
                    let clobbered = c
                        .kept
                        .iter()
                        .zip(&kept)
                        .find(|(k, d)| read_regular(&dir.join(k)) != **d)
                        .map(|(k, _)| findings::Finding {
                            kind: "clobber",
                            signature: format!("input {k} overwritten or removed"),
                        });
                    let finding =
                        findings::classify(&ran, changed.as_deref(), o.rss_mib << 10, &input)
                            .or(clobbered)
                            .or_else(|| findings::exit1(c.target, &ran));
                    let mut sh = shared.lock().unwrap();
                    let y = sh.tallies.entry(c.target).or_default();
                    y.execs += 1;
                    y.wall += ran.wall;
                    y.max_rss_kib = y.max_rss_kib.max(ran.max_rss_kib);
                    if let End::Exit(code @ 0..=2) = ran.end {
                        y.exit[code as usize] += 1;
                    }
                    if let Some(f) = finding {
                        y.findings += 1;
                        eprintln!(
                            "finding: {} in {} (case {index}): {}",
                            f.kind,
                            c.target.name(),
                            f.signature
                        );
                        sh.findings
                            .record(&o.findings, f, &c, &ran, &dir, &o.bin, o.seed, index);
                    }
                    drop(sh);
                    let n = done_count.fetch_add(1, Ordering::Relaxed) + 1;
                    if start.elapsed() >= deadline && n >= o.min_execs {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                let _ = fs::remove_dir_all(&dir);
            });
        }
        // Progress: a count line every 10 s, the summary file every minute.
        let mut last_summary = Instant::now();
        while !stop.load(Ordering::Relaxed) && next.load(Ordering::Relaxed) - o.start < o.max_execs
        {
            std::thread::sleep(Duration::from_millis(500));
            let el = start.elapsed();
            if el.as_millis() % 10_000 < 500 {
                let sh = shared.lock().unwrap();
                let n = done_count.load(Ordering::Relaxed);
                let per: Vec<String> = sh
                    .tallies
                    .iter()
                    .map(|(t, y)| format!("{} {}", t.name(), y.execs))
                    .collect();
                println!(
                    "[{:>5.1} min] {n} execs ({:.1}/s) | {} | findings {}",
                    el.as_secs_f64() / 60.0,
                    n as f64 / el.as_secs_f64(),
                    per.join(", "),
                    sh.findings.total()
                );
                if last_summary.elapsed() >= Duration::from_secs(60) {
                    last_summary = Instant::now();
                    let text = summary(&o, &sh, n, el, false);
                    let _ = fs::write(o.findings.join("summary.txt"), text);
                }
            }
        }
    });
    let sh = shared.lock().unwrap();
    let text = summary(
        &o,
        &sh,
        done_count.load(Ordering::Relaxed),
        start.elapsed(),
        true,
    );
    let _ = fs::write(o.findings.join("summary.txt"), &text);
    print!("{text}");
    let _ = fs::remove_dir_all(&o.work);
    Ok(())
}
