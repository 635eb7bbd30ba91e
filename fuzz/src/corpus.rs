//! The seed corpus: the repository's own small inputs (Accel-Sim bundles and `.traceg`
//! files under `traces/samples/`, NVBit logs, `models/*.toml`, the synthetic specs of
//! `traces/` shrunk to a few thread blocks) and the tiny study files and reference folder
//! derived from them here. The `.gmt` and `metrics.json` seeds are produced by the binary
//! itself at start-up (`main.rs`).

use std::fs;
use std::path::Path;

use crate::mutate;

/// Seeds of one input kind, with the words seen in them (for token replacement).
#[derive(Default)]
pub struct Family {
    pub seeds: Vec<Vec<u8>>,
    pub words: Vec<Vec<u8>>,
}

impl Family {
    pub fn push(&mut self, data: Vec<u8>) {
        mutate::words(&data, &mut self.words);
        self.seeds.push(data);
    }
}

/// An Accel-Sim folder: its files by name (`kernelslist.g` first).
#[derive(Clone)]
pub struct Bundle {
    pub files: Vec<(String, Vec<u8>)>,
}

pub struct Corpus {
    pub models: Family,
    /// `table.key` of every value in the model seeds (targets of `--set`).
    pub model_keys: Vec<String>,
    /// Built-in model names.
    pub builtin_models: Vec<String>,
    pub traces: Family,
    pub bundles: Vec<Bundle>,
    /// A bundle of two kernels on CUDA streams 1 and 2 (a co-run pair).
    pub pair: Bundle,
    pub nvbit: Family,
    pub specs: Family,
    pub gmt: Family,
    /// Study files naming the benches `va` (bundle), `at.traceg` and `s.toml`.
    pub studies: Family,
    pub metrics: Family,
    /// Sets of shard files (`shard-I-of-N.json` by name) made at start-up by `study --shard`.
    pub shards: Vec<Vec<(String, Vec<u8>)>>,
    pub kernels_csv: Family,
    pub pairs_csv: Family,
    /// Every kernelslist/traceg/log/spec seed, for splicing across kinds.
    pub all_text: Vec<Vec<u8>>,
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn sorted_dir(p: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let mut v: Vec<_> = fs::read_dir(p)
        .map_err(|e| format!("{}: {e}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// `table.key` names of the `key = value` lines of a TOML file.
fn toml_keys(text: &str, out: &mut Vec<String>) {
    let mut table = String::new();
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with('[') {
            table = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        } else if let Some((k, _)) = l.split_once('=') {
            let k = k.trim();
            if k.is_empty() || k.starts_with('#') {
                continue;
            }
            let full = if table.is_empty() {
                k.to_string()
            } else {
                format!("{table}.{k}")
            };
            if !out.contains(&full) {
                out.push(full);
            }
        }
    }
}

/// A synthetic spec cut down to a few thread blocks and trips, so that it runs in
/// milliseconds (mutations may grow it again).
fn shrink_spec(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with("grid") && t.contains('=') && !t.contains('[') {
            out.push_str("grid = 6\n");
        } else if t.starts_with("trips") && t.contains('=') {
            out.push_str("trips = 2\n");
        } else if t.starts_with('#') {
            continue;
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// A copy of a `.traceg` text with its CUDA stream id set.
fn with_stream(trace: &[u8], stream: u32) -> Vec<u8> {
    let text = String::from_utf8_lossy(trace);
    let mut out = String::new();
    for l in text.lines() {
        if l.starts_with("-cuda stream id") {
            out.push_str(&format!("-cuda stream id = {stream}\n"));
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out.into_bytes()
}

const STUDY_WINDOWED: &str = r#"name = "tiny-window"
gpu = "qv100"
window = 3000
curve_window = 2000
policies = ["left-over", "even", "spatial", "warped-slicer"]
baseline = "left-over"
proposed = "even"

[params.warped-slicer]
warmup = 200
sample = 300
settle = 50
loss_factor = 1.2

[[benches]]
name = "va"
path = "va"
class = "memory"
[[benches]]
name = "at"
path = "at.traceg"
class = "compute"
[[benches]]
name = "s"
path = "s.toml"
class = "cache"

[[groups]]
name = "cross"
kind = "cross"
a = ["va"]
b = ["at", "s"]
"#;

const STUDY_COMPLETION: &str = r#"name = "tiny-completion"
gpu = "qv100"
completion = true
policies = ["time-slice", "mps", "slate"]
baseline = "time-slice"
proposed = "slate"
makespan_reference = "time-slice"
solo = ["slate"]
solo_sweep = { policy = "slate", key = "task_blocks", values = [1, 5] }
max_cycles = 2000000

[params.slate]
task_blocks = 2

[[benches]]
name = "va"
path = "va"
[[benches]]
name = "at"
path = "at.traceg"

[[groups]]
name = "pairs"
kind = "with-self"
a = ["va", "at"]
"#;

const STUDY_ARRIVALS: &str = r#"name = "tiny-arrivals"
gpu = "qv100"
completion = true
arrivals = ["a-first", "together"]
arrival_fraction = 0.25
policies = ["sequential", "pt", "sim", "mps"]
baseline = "sequential"
proposed = "sim"
makespan_reference = "sequential"
max_cycles = 2000000

[params.sim]
task_blocks = 1
extra_regs_pct = 0
extra_shmem = 0

[[benches]]
name = "va"
path = "va"
[[benches]]
name = "s"
path = "s.toml"

[[groups]]
name = "pairs"
kind = "within"
a = ["va", "s"]
"#;

const KERNELS_CSV: &str = "kernel,trace_dir,grid_x,gpu_sim_cycle,l1d_miss_rate,l2_miss_rate,dram_read_txn_32B,dram_write_txn_32B\n\
va,traces/kernels/va,196,4000,0.5,0.9,1200,600\n\
at,traces/kernels/at,1,900,1.0,1.0,10,4\n";

const PAIRS_CSV: &str =
    "pair,trace_dir,app_a,app_b,total_cycles,end_cycle_a,end_cycle_b,slowdown_a,slowdown_b\n\
va+at,traces/pairs/va+at,va,at,4100,4100,950,1.02,1.05\n";

/// The committed `reports/**/metrics.json`, every array cut to its first three elements
/// (the largest are megabytes; the cut keeps every key and the nesting).
fn committed_metrics(repo: &Path) -> Vec<Vec<u8>> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "reports"])
        .current_dir(repo)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in listed.lines().filter(|f| f.ends_with("metrics.json")) {
        let Ok(d) = fs::read(repo.join(f)) else {
            continue;
        };
        if let Some(mut v) = crate::json::parse(&d) {
            crate::json::cut(&mut v, 3);
            out.push(crate::json::to_bytes(&v));
        }
    }
    out
}

impl Corpus {
    /// Loads the seeds from the repository at `repo`.
    pub fn load(repo: &Path) -> Result<Corpus, String> {
        let mut models = Family::default();
        let mut model_keys = Vec::new();
        let mut builtin_models = Vec::new();
        for p in sorted_dir(&repo.join("models"))? {
            if p.extension().is_some_and(|e| e == "toml") {
                let d = read(&p)?;
                toml_keys(&String::from_utf8_lossy(&d), &mut model_keys);
                if let Some(s) = p.file_stem() {
                    builtin_models.push(s.to_string_lossy().into_owned());
                }
                models.push(d);
            }
        }
        let samples = repo.join("traces/samples");
        let mut traces = Family::default();
        let mut bundles = Vec::new();
        for sub in ["vectoradd_v5_sm80", "bfs_v3_sm80"] {
            let dir = samples.join(sub);
            let list = read(&dir.join("kernelslist.g"))?;
            let trace = read(&dir.join("kernel-1.traceg"))?;
            traces.push(trace.clone());
            bundles.push(Bundle {
                files: vec![
                    ("kernelslist.g".into(), list),
                    ("kernel-1.traceg".into(), trace),
                ],
            });
        }
        for f in ["atax-v5.traceg", "atax-v6.traceg"] {
            traces.push(read(&samples.join("atax_sm90").join(f))?);
        }
        let va = traces.seeds[0].clone();
        let atax = traces.seeds[2].clone();
        let pair = Bundle {
            files: vec![
                (
                    "kernelslist.g".into(),
                    b"kernel-1.traceg\nkernel-2.traceg\n".to_vec(),
                ),
                ("kernel-1.traceg".into(), with_stream(&va, 1)),
                ("kernel-2.traceg".into(), with_stream(&atax, 2)),
            ],
        };
        let mut nvbit = Family::default();
        for p in sorted_dir(&samples.join("nvbit"))? {
            nvbit.push(read(&p)?);
        }
        let mut specs = Family::default();
        for sub in sorted_dir(&repo.join("traces"))? {
            if !sub.is_dir() || sub.ends_with("samples") {
                continue;
            }
            for p in sorted_dir(&sub)? {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                if !name.ends_with(".toml") || name == "suite.toml" {
                    continue;
                }
                let text = String::from_utf8_lossy(&read(&p)?).into_owned();
                if text.contains("[kernel]") || text.contains("[[kernels]]") {
                    specs.push(shrink_spec(&text).into_bytes());
                }
            }
        }
        if specs.seeds.is_empty() || models.seeds.is_empty() {
            return Err(format!(
                "{}: no models or synthetic specs found",
                repo.display()
            ));
        }
        let mut studies = Family::default();
        for s in [STUDY_WINDOWED, STUDY_COMPLETION, STUDY_ARRIVALS]
            .into_iter()
            .chain(crate::studies::EXTRA)
        {
            studies.push(s.as_bytes().to_vec());
        }
        for s in crate::studies::committed(repo) {
            studies.push(s);
        }
        let mut metrics = Family::default();
        for m in committed_metrics(repo) {
            metrics.push(m);
        }
        let mut kernels_csv = Family::default();
        kernels_csv.push(KERNELS_CSV.as_bytes().to_vec());
        let mut pairs_csv = Family::default();
        pairs_csv.push(PAIRS_CSV.as_bytes().to_vec());
        let mut all_text = Vec::new();
        all_text.extend(traces.seeds.iter().cloned());
        all_text.extend(nvbit.seeds.iter().cloned());
        all_text.extend(specs.seeds.iter().take(8).cloned());
        all_text.extend(bundles.iter().map(|b| b.files[0].1.clone()));
        Ok(Corpus {
            models,
            model_keys,
            builtin_models,
            traces,
            bundles,
            pair,
            nvbit,
            specs,
            gmt: Family::default(),
            studies,
            metrics,
            shards: Vec::new(),
            kernels_csv,
            pairs_csv,
            all_text,
        })
    }

    /// The spec used as the bench `s.toml` of the study files: the smallest one.
    pub fn small_spec(&self) -> &[u8] {
        self.specs
            .seeds
            .iter()
            .min_by_key(|s| s.len())
            .map(|s| s.as_slice())
            .unwrap_or(b"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_shrinking() {
        let mut k = Vec::new();
        toml_keys(
            "name = \"x\"\n[sm]\ncount = 80\n[units.int]\nlatency = 4\n",
            &mut k,
        );
        assert_eq!(k, vec!["name", "sm.count", "units.int.latency"]);
        let s = shrink_spec("[kernel]\ngrid           = 1440\n# c\n[body]\ntrips = 12 # x\n");
        assert_eq!(s, "[kernel]\ngrid = 6\n[body]\ntrips = 2\n");
    }
}
