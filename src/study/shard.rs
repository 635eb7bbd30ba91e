//! Shards and merge (`study --shard I/N`, `gpumodel merge`). Shard I of N runs the jobs
//! `j` of the study's [`Plan`] with `j % N == I - 1` — a fixed round-robin, so every shard
//! gets a share of every kind of job — and writes them, with the plan's outlines, to
//! `shard-I-of-N.json`. Every shard prepares the plan itself (the alone references are
//! computed once per shard: cheap next to the runs, and it keeps shards independent of
//! each other and of any shared file system). [`merge`] checks that the shards are of
//! one study (hashes of the study file, the model and the options), that each of 1..N is
//! there exactly once, that every job is present once, and that the shards agree on the
//! outlines; then it assembles exactly what the unsharded run would have.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::{assemble, prepare, JobOutput, Outline, StudyOutput};
use crate::engine::FastForward;
use crate::error::{Error, Result};

/// Value of a shard file's `kind` field.
pub const SHARD_KIND: &str = "study-shard";
/// Version of the shard file layout.
pub const SHARD_SCHEMA_VERSION: u32 = 1;

/// Which shard: `index` of `count`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardId {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for ShardId {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<ShardId, String> {
        let bad = || format!("`{s}` is not a shard such as 2/8 (I/N with 1 <= I <= N)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(ShardId { index, count })
    }
}

impl ShardId {
    /// The shard file's name: `shard-I-of-N.json`.
    pub fn file_name(self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }

    /// Whether job `j` belongs to this shard.
    pub fn owns(self, j: usize) -> bool {
        j % self.count == self.index - 1
    }
}

/// One shard's file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardFile {
    /// Always [`SHARD_KIND`].
    pub kind: String,
    pub schema_version: u32,
    pub study: String,
    /// The study file as given on the command line (for messages only).
    pub study_file: String,
    /// FNV-1a 64 of the study file's bytes, the effective model and the run options,
    /// in hex: shards of one study have the same.
    pub study_hash: String,
    pub model_hash: String,
    pub tool_version: String,
    pub shard: usize,
    pub of: usize,
    /// Jobs in the whole study.
    pub jobs: usize,
    pub outlines: Vec<Outline>,
    /// (job index, output) of this shard's jobs, in index order.
    pub outputs: Vec<(usize, JobOutput)>,
}

/// 64-bit FNV-1a: a stable fingerprint (not a security measure).
pub(crate) fn fnv(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Separator, so that ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Runs shard `id` of the study file `path`.
pub fn run_shard(
    path: &Path,
    fast_forward: Option<Option<FastForward>>,
    id: ShardId,
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<ShardFile> {
    let text = crate::infile::read_bytes(path)?;
    let plan = prepare(path, fast_forward, progress)?;
    let outlines = plan.outlines();
    let models: Vec<String> = outlines
        .iter()
        .map(|o| o.head.model.to_toml_string())
        .collect();
    let ff = serde_json::to_string(&plan.study.fast_forward).unwrap_or_default();
    let model_hash = fnv(&models.iter().map(|m| m.as_bytes()).collect::<Vec<_>>());
    let study_hash = fnv(&[&text, model_hash.as_bytes(), ff.as_bytes()]);
    let mine: Vec<usize> = (0..plan.jobs()).filter(|&j| id.owns(j)).collect();
    let outputs = plan.run_jobs(&mine, progress)?;
    Ok(ShardFile {
        kind: SHARD_KIND.into(),
        schema_version: SHARD_SCHEMA_VERSION,
        study: plan.study.name.clone(),
        study_file: path.display().to_string(),
        study_hash,
        model_hash,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        shard: id.index,
        of: id.count,
        jobs: plan.jobs(),
        outlines,
        outputs: mine.into_iter().zip(outputs).collect(),
    })
}

/// The shard files among `inputs`: each a shard file, or a folder whose
/// `shard-*-of-*.json` files are taken (in name order). A path that is neither (missing,
/// a dangling link, a FIFO or a device), or an entry of a folder named like a shard that
/// is not a regular file, is bad input naming it; nothing is read here.
pub fn shard_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = Vec::new();
            for e in std::fs::read_dir(p).map_err(|e| Error::io(p, e))? {
                let f = e.map_err(|e| Error::io(p, e))?.path();
                let shard_like = f
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".json"));
                if shard_like {
                    // Checked now, so a bad entry stops the merge before any shard is read.
                    drop(crate::infile::open_regular(&f)?);
                    found.push(f);
                }
            }
            if found.is_empty() {
                return Err(Error::Usage(format!(
                    "{}: no shard file (shard-I-of-N.json) in this folder",
                    p.display()
                )));
            }
            found.sort();
            out.extend(found);
        } else {
            drop(crate::infile::open_regular(p)?);
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        return Err(Error::Usage("merge: no shard given".into()));
    }
    Ok(out)
}

/// Reads one shard file, streaming (its kind and version first, then the typed file; no
/// document in memory); errors name it.
pub fn read_shard(path: &Path) -> Result<ShardFile> {
    let head = crate::infile::json_head(path)?;
    if head.kind.as_deref() != Some(SHARD_KIND) {
        return Err(Error::input(
            path,
            None,
            format!("not a study shard (expected \"kind\": \"{SHARD_KIND}\", as `study --shard` writes)"),
        ));
    }
    let version = head.schema_version;
    if version != Some(SHARD_SCHEMA_VERSION as u64) {
        return Err(Error::input(
            path,
            None,
            format!("shard schema_version {version:?}; this gpumodel reads version {SHARD_SCHEMA_VERSION}"),
        ));
    }
    crate::infile::json_typed(path, "not a study shard")
}

/// The shard the others are checked against: one of the study most shards belong to (the
/// first one on a tie); every shard must be of its study and model and share its N.
fn reference_shard(files: &[ShardFile], name: &dyn Fn(usize) -> String) -> Result<usize> {
    let key = |f: &ShardFile| (f.study_hash.clone(), f.model_hash.clone(), f.of);
    let count = |k: &(String, String, usize)| files.iter().filter(|f| &key(f) == k).count();
    let mut reference = key(&files[0]);
    for f in files {
        if count(&key(f)) > count(&reference) {
            reference = key(f);
        }
    }
    let ref_at = files.iter().position(|f| key(f) == reference).unwrap_or(0);
    for (i, f) in files.iter().enumerate() {
        let r = &files[ref_at];
        if f.study_hash != r.study_hash || f.model_hash != r.model_hash {
            return Err(Error::Usage(format!(
                "{} is a shard of another study or model ({} from {}, study hash {}, model hash {}) than {} ({} from {}, study hash {}, model hash {})",
                name(i), f.study, f.study_file, f.study_hash, f.model_hash,
                name(ref_at), r.study, r.study_file, r.study_hash, r.model_hash
            )));
        }
        if f.of != r.of {
            return Err(Error::Usage(format!(
                "{} is shard {}/{} but {} is shard {}/{}: shards of one run share N",
                name(i),
                f.shard,
                f.of,
                name(ref_at),
                r.shard,
                r.of
            )));
        }
    }
    Ok(ref_at)
}

/// Checks the shards `files` (read from `paths`) and assembles the study's results.
pub fn merge(paths: &[PathBuf], files: Vec<ShardFile>) -> Result<StudyOutput> {
    let name = |i: usize| paths[i].display().to_string();
    if files.is_empty() {
        return Err(Error::Usage("merge: no shard given".into()));
    }
    let ref_at = reference_shard(&files, &name)?;
    // Counts in the files are checked against what the files hold before anything is
    // allocated by them (a damaged or hostile shard cannot ask for a huge table).
    let n = files[ref_at].of;
    let mut at: std::collections::BTreeMap<usize, usize> = Default::default();
    for (i, f) in files.iter().enumerate() {
        if f.shard == 0 || f.shard > n {
            return Err(Error::Usage(format!(
                "{}: shard {} of {n} is out of range",
                name(i),
                f.shard
            )));
        }
        if let Some(j) = at.insert(f.shard, i) {
            return Err(Error::Usage(format!(
                "shard {}/{n} is given twice: {} and {}",
                f.shard,
                name(j),
                name(i)
            )));
        }
    }
    if at.len() < n {
        const SHOWN: usize = 10;
        let missing: Vec<String> = (1..=n)
            .filter(|s| !at.contains_key(s))
            .take(SHOWN)
            .map(|s| ShardId { index: s, count: n }.file_name())
            .collect();
        let more = n - at.len() - missing.len();
        return Err(Error::Usage(format!(
            "missing shard{} of {n}: {}{} (run `gpumodel study {} --shard I/{n}` for each)",
            if n - at.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            files[ref_at].study_file
        )));
    }
    let jobs = files[ref_at].jobs;
    for (i, f) in files.iter().enumerate() {
        if f.jobs != jobs || f.outlines != files[ref_at].outlines {
            return Err(Error::Usage(format!(
                "{} disagrees with {} on the study's plan (alone references, workloads or \
                 jobs): were they run by different gpumodel builds or on different traces?",
                name(i),
                name(ref_at)
            )));
        }
    }
    let planned = files[ref_at]
        .outlines
        .iter()
        .try_fold(0usize, |acc, o| acc.checked_add(o.jobs()));
    if planned != Some(jobs) {
        return Err(Error::Usage(format!(
            "{}: its header says {jobs} jobs, its plan {}: a damaged shard file",
            name(ref_at),
            planned.map_or("more than can be counted".to_string(), |p| p.to_string())
        )));
    }
    for (i, f) in files.iter().enumerate() {
        let want = jobs / n + usize::from(f.shard - 1 < jobs % n);
        if f.outputs.len() != want {
            return Err(Error::Usage(format!(
                "{} holds {} job results; shard {}/{n} of a {jobs}-job study has {want}: an \
                 incomplete or damaged shard file",
                name(i),
                f.outputs.len(),
                f.shard
            )));
        }
    }
    super::shard_check::check_outlines(&name(ref_at), &files[ref_at].outlines)?;
    let outlines = files[ref_at].outlines.clone();
    // Where each point's jobs start, to check each job against its outline.
    let starts: Vec<usize> = outlines
        .iter()
        .scan(0, |acc, o| {
            let s = *acc;
            *acc += o.jobs();
            Some(s)
        })
        .collect();
    let mut slots: Vec<Option<JobOutput>> = vec![None; jobs];
    for (i, f) in files.into_iter().enumerate() {
        let sid = ShardId {
            index: f.shard,
            count: n,
        };
        for (j, mut out) in f.outputs {
            if j >= jobs || !sid.owns(j) {
                return Err(Error::Usage(format!(
                    "{}: job {j} does not belong to shard {}/{n} of a {jobs}-job study",
                    name(i),
                    sid.index
                )));
            }
            let k = starts.partition_point(|&s| s <= j) - 1;
            super::shard_check::check_job(&name(i), j, &outlines[k], j - starts[k], &mut out)?;
            if slots[j].replace(out).is_some() {
                return Err(Error::Usage(format!("{}: job {j} appears twice", name(i))));
            }
        }
    }
    let mut outputs = Vec::with_capacity(jobs);
    for (j, s) in slots.into_iter().enumerate() {
        let Some(o) = s else {
            let owner = at.get(&(j % n + 1)).map(|&i| name(i)).unwrap_or_default();
            return Err(Error::Usage(format!(
                "job {j} is missing from shard {}/{n} ({owner}): an incomplete shard file",
                j % n + 1
            )));
        };
        outputs.push(o);
    }
    assemble(&outlines, outputs)
}
