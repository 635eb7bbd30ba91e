//! Building one case: a target (a subcommand), its input files written into a fresh case
//! folder (seeds mutated, sometimes compressed, sometimes with planted symlinks that lead
//! out of the folder) and its command line. Paths on the command line are relative to the
//! case folder, which is the process's working directory, so a saved finding reruns as is.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use crate::corpus::{Bundle, Corpus, Family};
use crate::mutate::{self, Material, BOUNDARY};
use crate::rng::Rng;

/// The subcommands exercised, with their share of the executions (fast ones weigh more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Model,
    Inspect,
    Convert,
    Export,
    Synth,
    Run,
    Profile,
    Analyze,
    Study,
    Validate,
    Report,
    Merge,
}

impl Target {
    pub const ALL: [Target; 12] = [
        Target::Model,
        Target::Inspect,
        Target::Convert,
        Target::Export,
        Target::Synth,
        Target::Run,
        Target::Profile,
        Target::Analyze,
        Target::Study,
        Target::Validate,
        Target::Report,
        Target::Merge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Target::Model => "model",
            Target::Inspect => "inspect",
            Target::Convert => "convert",
            Target::Export => "export",
            Target::Synth => "synth",
            Target::Run => "run",
            Target::Profile => "profile",
            Target::Analyze => "analyze",
            Target::Study => "study",
            Target::Validate => "validate",
            Target::Report => "report",
            Target::Merge => "merge",
        }
    }

    /// The target of a name (`--targets`).
    pub fn by_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Targets whose inputs are study files, shards and `metrics.json` (issue 44): exit 0 or
    /// 2 is well-behaved there, exit 1 on bad input is counted apart (`exit1`).
    pub fn strict_exit(self) -> bool {
        matches!(self, Target::Study | Target::Report | Target::Merge)
    }

    pub fn weight(self) -> u32 {
        match self {
            Target::Model => 30,
            Target::Inspect => 22,
            Target::Convert => 26,
            Target::Export => 6,
            Target::Synth => 3,
            Target::Run => 7,
            Target::Profile => 1,
            Target::Analyze => 1,
            Target::Study => 4,
            Target::Validate => 1,
            Target::Report => 5,
            Target::Merge => 6,
        }
    }
}

/// One generated case: the target and the arguments after the binary's name.
pub struct Case {
    pub target: Target,
    pub args: Vec<String>,
    /// What was done to the inputs beyond mutation (compression, planted links...).
    pub notes: Vec<String>,
    /// Where the run may create files (paths relative to the case folder, matched as
    /// prefixes); `None`: not checked (the older targets).
    pub outputs: Option<Vec<String>>,
    /// Inputs the run must leave unchanged (an input inside the output folder).
    pub kept: Vec<String>,
    /// The special file among the inputs (a FIFO, a link to a device...), if any.
    pub special: Option<String>,
}

/// Paths outside the case folder that planted links and path values point at.
pub struct Outside {
    /// A file whose first line carries the canary marker.
    pub secret: String,
    /// A folder holding the secret (for links to folders).
    pub dir: String,
    /// A file that no run may change (planted output links point here).
    pub victim: String,
    /// A gzip bomb (a trace header, `#BEGIN_TB`, then gigabytes of zeros), if made.
    pub bomb: Option<String>,
}

pub(crate) struct Cx<'a> {
    pub(crate) rng: Rng,
    pub(crate) dir: &'a Path,
    pub(crate) corpus: &'a Corpus,
    pub(crate) outside: &'a Outside,
    outside_list: Vec<String>,
    pub(crate) notes: Vec<String>,
    /// Percent of the usual mutation probability applied to trace inputs (the engine's
    /// targets want inputs that parse more often than the parsers' targets do).
    pub(crate) scale: u64,
    pub(crate) outputs: Option<Vec<String>>,
    pub(crate) kept: Vec<String>,
    pub(crate) special: Option<String>,
}

const POLICIES: &[&str] = &[
    "left-over",
    "round-robin",
    "fcfs",
    "even",
    "spatial",
    "time-slice",
    "warped-slicer",
    "ws-ilp",
    "mps",
    "slate",
    "sim",
    "pt",
    "smra",
    "sequential",
    "oracle",
];

impl<'a> Cx<'a> {
    pub(crate) fn write(&mut self, rel: &str, data: &[u8]) {
        let p = self.dir.join(rel);
        if let Some(parent) = p.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let _ = fs::write(p, data);
    }

    pub(crate) fn mutated_text(&mut self, fam: &Family, seed: &[u8], prob: u64) -> Vec<u8> {
        let mut d = seed.to_vec();
        if self.rng.chance(prob * self.scale, 100 * 100) {
            let m = Material {
                others: if self.rng.chance(1, 5) {
                    &self.corpus.all_text
                } else {
                    &fam.seeds
                },
                words: &fam.words,
                outside: &self.outside_list,
            };
            mutate::text(&mut self.rng, &mut d, &m);
        }
        d
    }

    pub(crate) fn family_text(&mut self, fam: &Family, prob: u64) -> Vec<u8> {
        let seed = self.rng.pick(&fam.seeds).clone();
        self.mutated_text(fam, &seed, prob)
    }

    /// Compresses `rel` in place with the `gzip` or `xz` tool; returns the new name.
    fn compress(&mut self, rel: &str) -> String {
        let (tool, ext) = if self.rng.chance(1, 2) {
            ("gzip", "gz")
        } else {
            ("xz", "xz")
        };
        let ok = Command::new(tool)
            .args(["-f", "-q", rel])
            .current_dir(self.dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return rel.to_string();
        }
        let new = format!("{rel}.{ext}");
        self.notes.push(format!("{tool}-wrapped {rel}"));
        if self.rng.chance(1, 4) {
            let p = self.dir.join(&new);
            if let Ok(mut d) = fs::read(&p) {
                let m = Material {
                    others: &[],
                    words: &[],
                    outside: &[],
                };
                mutate::binary(&mut self.rng, &mut d, &m);
                let _ = fs::write(&p, d);
                self.notes
                    .push(format!("compressed bytes of {new} mutated"));
            }
        }
        new
    }

    /// Writes a mutated Accel-Sim folder under `rel`, sometimes with compressed traces and
    /// planted links out of it; returns the path to pass (the folder or its list).
    fn bundle(&mut self, rel: &str, b: &Bundle) -> String {
        let clean = self.rng.chance(1, 20);
        let trace_fam = &self.corpus.traces;
        for (name, data) in &b.files {
            let d = if clean {
                data.clone()
            } else if name == "kernelslist.g" {
                let fam = Family {
                    seeds: self
                        .corpus
                        .bundles
                        .iter()
                        .map(|b| b.files[0].1.clone())
                        .collect(),
                    words: Vec::new(),
                };
                self.mutated_text(&fam, data, 30)
            } else {
                self.mutated_text(trace_fam, data, 75)
            };
            self.write(&format!("{rel}/{name}"), &d);
        }
        if self.rng.chance(1, 10) {
            let traces: Vec<&String> = b.files.iter().skip(1).map(|(n, _)| n).collect();
            let t = self.rng.pick(&traces).to_string();
            self.compress(&format!("{rel}/{t}"));
        }
        if self.rng.chance(1, 25) {
            self.plant_in_bundle(rel);
        }
        if self.rng.chance(1, 2) {
            rel.to_string()
        } else {
            format!("{rel}/kernelslist.g")
        }
    }

    /// Links that leave the folder: a trace that is a link to a file outside, a list entry
    /// naming an absolute or `../` path, a linked sub-folder, a linked `.xz` sibling.
    fn plant_in_bundle(&mut self, rel: &str) {
        let d = self.dir.join(rel);
        let list = d.join("kernelslist.g");
        let secret = self.outside.secret.clone();
        let k = self.rng.below(6);
        let append = |line: &str| {
            let mut t = fs::read(&list).unwrap_or_default();
            t.extend_from_slice(line.as_bytes());
            t.push(b'\n');
            let _ = fs::write(&list, t);
        };
        match k {
            0 => {
                let _ = fs::remove_file(d.join("kernel-1.traceg"));
                let _ = symlink(&secret, d.join("kernel-1.traceg"));
            }
            1 => append(&secret),
            2 => append("../../../../../../../../etc/hostname"),
            3 => {
                let _ = symlink(&self.outside.dir, d.join("sub"));
                append("sub/secret.txt");
            }
            4 => {
                let _ = fs::remove_file(d.join("kernel-1.traceg"));
                let _ = symlink(&secret, d.join("kernel-1.traceg.xz"));
            }
            _ => {
                let _ = symlink(&secret, d.join("linked.traceg"));
                append("linked.traceg");
            }
        }
        self.notes.push(format!("planted escape #{k} in {rel}"));
    }

    /// Any input a trace-reading command accepts, mutated; returns its path.
    fn trace_input(&mut self, tag: &str) -> String {
        let c = self.corpus;
        let has_gmt = !c.gmt.seeds.is_empty();
        let kind = self
            .rng
            .weighted(&[34, 24, 12, 12, if has_gmt { 18 } else { 0 }]);
        match kind {
            0 => {
                let b = if self.rng.chance(1, 6) {
                    c.pair.clone()
                } else {
                    self.rng.pick(&c.bundles).clone()
                };
                // Drawn whether or not there is a bomb, so that `--bomb-mib 0` replays
                // every other case unchanged.
                let bomb_now = self.rng.chance(1, 300);
                if let Some(bomb) = &self.outside.bomb {
                    if bomb_now {
                        let rel = format!("in/{tag}b");
                        self.write(&format!("{rel}/kernelslist.g"), b"kernel-1.traceg\n");
                        let _ = fs::copy(bomb, self.dir.join(format!("{rel}/kernel-1.traceg.gz")));
                        self.notes.push("gzip bomb".into());
                        return rel;
                    }
                }
                self.bundle(&format!("in/{tag}b"), &b)
            }
            1 => {
                let d = self.family_text(&c.traces, 92);
                let rel = format!("in/{tag}k.traceg");
                self.write(&rel, &d);
                if self.rng.chance(1, 10) {
                    self.compress(&rel)
                } else {
                    rel
                }
            }
            2 => {
                let d = self.family_text(&c.nvbit, 92);
                let rel = format!("in/{tag}t.log");
                self.write(&rel, &d);
                rel
            }
            3 => {
                let d = self.family_text(&c.specs, 90);
                let rel = format!("in/{tag}s.toml");
                self.write(&rel, &d);
                rel
            }
            _ => {
                let mut d = self.rng.pick(&c.gmt.seeds).clone();
                if self.rng.chance(90 * self.scale, 100 * 100) {
                    let m = Material {
                        others: &c.gmt.seeds,
                        words: &[],
                        outside: &[],
                    };
                    mutate::binary(&mut self.rng, &mut d, &m);
                }
                let rel = format!("in/{tag}t.gmt");
                self.write(&rel, &d);
                rel
            }
        }
    }

    /// A `--gpu` value: a built-in name or a (usually mutated) model file.
    fn gpu(&mut self) -> String {
        if self.rng.chance(1, 40) {
            return crate::surfaces::special(self, "in/gpu.toml");
        }
        if self.rng.chance(1, 3) {
            return self.rng.pick(&self.corpus.builtin_models).clone();
        }
        let scale = std::mem::replace(&mut self.scale, 100);
        let d = self.family_text(&self.corpus.models, 85 * scale / 100);
        self.scale = scale;
        self.write("in/m.toml", &d);
        "in/m.toml".into()
    }

    fn number(&mut self) -> String {
        if self.rng.chance(2, 3) {
            self.rng.pick(BOUNDARY).to_string()
        } else {
            (self.rng.next_u64() % 100_000).to_string()
        }
    }

    /// A `--set KEY=VALUE` pair: a real model key (sometimes mangled) and a hostile value.
    fn set_pair(&mut self) -> String {
        let mut key = self.rng.pick(&self.corpus.model_keys).clone();
        if self.rng.chance(1, 10) {
            let mut k = key.into_bytes();
            let m = Material {
                others: &[],
                words: &[],
                outside: &[],
            };
            mutate::text(&mut self.rng, &mut k, &m);
            k.truncate(200);
            key = String::from_utf8_lossy(&k).replace('\0', "");
        }
        let value = match self.rng.below(5) {
            0 | 1 => self.number(),
            2 => format!("\"{} KiB\"", self.rng.pick(BOUNDARY)),
            3 => self
                .rng
                .pick(&["true", "\"x\"", "[]", "\"\"", "{}", "\"1 GHz\""])
                .to_string(),
            _ => format!("{}.5", self.rng.below(100)),
        };
        format!("{key}={value}")
    }

    fn sets(&mut self, args: &mut Vec<String>, prob: u64) {
        if self.rng.chance(prob, 100) {
            for _ in 0..self.rng.small_count(3) {
                args.push("--set".into());
                args.push(self.set_pair());
            }
        }
    }

    /// An output path; rarely a link planted at it (or at its `.tmp` sibling) that points
    /// at the victim file outside the folder.
    pub(crate) fn output(&mut self, rel: &str) -> String {
        if self.rng.chance(1, 60) {
            let at = if self.rng.chance(1, 2) {
                rel.to_string()
            } else {
                format!("{rel}.tmp")
            };
            let _ = symlink(&self.outside.victim, self.dir.join(&at));
            self.notes.push(format!("planted link {at} -> victim"));
        }
        rel.to_string()
    }

    /// Replaces one option value with a boundary number or odd text, rarely.
    fn mangle_args(&mut self, args: &mut [String]) {
        if args.len() > 2 && self.rng.chance(1, 30) {
            let i = 1 + self.rng.below(args.len() - 1);
            if args[i].starts_with("--") || args[i].starts_with("in/") {
                return;
            }
            let v = if self.rng.chance(3, 4) {
                self.rng.pick(BOUNDARY).to_string()
            } else {
                self.rng
                    .pick(&[
                        "é".repeat(40),
                        "\u{FEFF}1".into(),
                        "1,2,3,".into(),
                        "--".into(),
                    ])
                    .clone()
            };
            self.notes
                .push(format!("argument {i} `{}` -> `{v}`", args[i]));
            // An output folder moved by this is still the run's output folder.
            if let Some(outs) = &mut self.outputs {
                if outs.contains(&args[i]) {
                    outs.push(v.clone());
                }
            }
            args[i] = v;
        }
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Writes case number `index` of a run seeded with `seed` into `dir` (an empty folder);
/// `weights` are the targets' shares, in the order of `Target::ALL`.
pub fn build(
    seed: u64,
    index: u64,
    dir: &Path,
    corpus: &Corpus,
    outside: &Outside,
    weights: &[u32],
) -> Case {
    let mut rng = Rng::for_case(seed, index);
    let target = Target::ALL[rng.weighted(weights)];
    let mut cx = Cx {
        rng,
        dir,
        corpus,
        outside,
        outside_list: vec![outside.secret.clone(), outside.dir.clone()],
        notes: Vec::new(),
        scale: match target {
            Target::Run | Target::Profile | Target::Analyze | Target::Study | Target::Validate => {
                45
            }
            _ => 100,
        },
        outputs: None,
        kept: Vec::new(),
        special: None,
    };
    let _ = fs::create_dir_all(dir.join("in"));
    let _ = fs::create_dir_all(dir.join("out"));
    let mut args = match target {
        Target::Model => model(&mut cx),
        Target::Inspect => {
            let i = cx.trace_input("");
            let mut a = s(&["inspect", &i, "-q", "--threads", "1"]);
            if cx.rng.chance(3, 10) {
                a.push("--gpu".into());
                a.push(cx.gpu());
            }
            cx.sets(&mut a, 15);
            flags(
                &mut cx,
                &mut a,
                &[("--json", 20), ("--lenient-opcodes", 10)],
            );
            a
        }
        Target::Convert => {
            let i = cx.trace_input("");
            let o = cx.output("out/o.gmt");
            let mut a = s(&["convert", &i, "-o", &o, "-q", "--threads", "1"]);
            flags(
                &mut cx,
                &mut a,
                &[("--json", 20), ("--lenient-opcodes", 10)],
            );
            if cx.rng.chance(8, 100) {
                a.push("--chunk-mib".into());
                let v = cx.rng.pick(&[
                    "1",
                    "2",
                    "256",
                    "0",
                    "257",
                    "8000",
                    "-1",
                    "18446744073709551616",
                ]);
                a.push(v.to_string());
            }
            a
        }
        Target::Export => {
            let i = if cx.rng.chance(1, 2) && !corpus.gmt.seeds.is_empty() {
                let d = cx.rng.pick(&corpus.gmt.seeds).clone();
                let mut d2 = d.clone();
                if cx.rng.chance(1, 2) {
                    let m = Material {
                        others: &corpus.gmt.seeds,
                        words: &[],
                        outside: &[],
                    };
                    mutate::binary(&mut cx.rng, &mut d2, &m);
                }
                cx.write("in/t.gmt", &d2);
                "in/t.gmt".to_string()
            } else {
                cx.trace_input("")
            };
            let o = cx.output("out/exp");
            s(&["export", &i, "-o", &o, "-q", "--threads", "1"])
        }
        Target::Synth => {
            let d = cx.family_text(&corpus.specs, 90);
            cx.write("in/s.toml", &d);
            let o = cx.output("out/s.gmt");
            let mut a = s(&["synth", "in/s.toml", "-o", &o, "-q", "--threads", "1"]);
            if cx.rng.chance(1, 2) {
                a.push("--text".into());
                a.push("out/txt".into());
            }
            a
        }
        Target::Run => run(&mut cx),
        Target::Profile => {
            let i = cx.trace_input("");
            let p = cx.rng.pick(&["1", "2", "3"]).to_string();
            let mut a = s(&["profile", &i, "--points", &p, "-q", "--threads", "1"]);
            if cx.rng.chance(1, 5) {
                a.push("--gpu".into());
                a.push(cx.gpu());
            }
            if cx.rng.chance(1, 5) {
                a.push("--json".into());
                a.push(cx.output("out/p.json"));
            }
            if cx.rng.chance(1, 10) {
                a.push("--svg".into());
                a.push("out/svg".into());
            }
            a
        }
        Target::Analyze => {
            let x = cx.trace_input("a");
            let y = if cx.rng.chance(1, 2) {
                cx.trace_input("b")
            } else {
                let b = corpus.bundles[0].clone();
                for (n, d) in &b.files {
                    cx.write(&format!("in/va/{n}"), d);
                }
                "in/va".to_string()
            };
            let p1 = cx.rng.pick(POLICIES).to_string();
            let p2 = cx.rng.pick(POLICIES).to_string();
            let mut a = s(&[
                "analyze",
                "--apps",
                &format!("{x},{y}"),
                "--gpu",
                "qv100",
                "--window",
                "2000",
                "--max-cycles",
                "300000",
                "--policies",
                &format!("{p1},{p2}"),
                "-o",
                "out/an",
                "-q",
                "--threads",
                "1",
            ]);
            if cx.rng.chance(3, 10) {
                a.drain(5..7);
                a.push("--completion".into());
            }
            a
        }
        Target::Study => crate::surfaces::study(&mut cx),
        Target::Validate => validate(&mut cx),
        Target::Report => crate::surfaces::report(&mut cx),
        Target::Merge => crate::surfaces::merge(&mut cx),
    };
    cx.mangle_args(&mut args);
    for a in &mut args {
        if a.len() > 4096 || a.contains('\0') {
            let mut b = a.replace('\0', "");
            let mut cut = b.len().min(4096);
            while !b.is_char_boundary(cut) {
                cut -= 1;
            }
            b.truncate(cut);
            *a = b;
        }
    }
    Case {
        target,
        args,
        notes: cx.notes,
        outputs: cx.outputs,
        kept: cx.kept,
        special: cx.special,
    }
}

fn flags(cx: &mut Cx, a: &mut Vec<String>, fl: &[(&str, u64)]) {
    for &(f, p) in fl {
        if cx.rng.chance(p, 100) {
            a.push(f.into());
        }
    }
}

fn model(cx: &mut Cx) -> Vec<String> {
    let gpu = if cx.rng.chance(3, 4) {
        let d = cx.family_text(&cx.corpus.models, 92);
        cx.write("in/m.toml", &d);
        "in/m.toml".to_string()
    } else {
        cx.rng.pick(&cx.corpus.builtin_models).clone()
    };
    let mut a = s(&["model", &gpu, "-q", "--threads", "1"]);
    cx.sets(&mut a, 35);
    if cx.rng.chance(1, 4) {
        let v: Vec<String> = (0..3)
            .map(|i| {
                if cx.rng.chance(1, 2) {
                    cx.number()
                } else {
                    ["128", "64", "7208"][i].to_string()
                }
            })
            .collect();
        let mut occ = v.join(",");
        if cx.rng.chance(1, 10) {
            occ = cx
                .rng
                .pick(&["1,2", "1,2,3,4", ",,", "a,b,c", "1, 2, 3"])
                .to_string();
        }
        a.push("--occupancy".into());
        a.push(occ);
    }
    if cx.rng.chance(1, 4) {
        a.push("-o".into());
        a.push(cx.output("out/m.toml"));
    }
    if cx.rng.chance(1, 20) {
        a.push("--list".into());
    }
    a
}

fn run(cx: &mut Cx) -> Vec<String> {
    let x = cx.trace_input("a");
    let mut a = s(&["run", &x]);
    let two = cx.rng.chance(1, 4);
    if two {
        a.push(cx.trace_input("b"));
    }
    if cx.rng.chance(9, 10) {
        a.push("--window".into());
        a.push(cx.rng.pick(&["100", "500", "2000", "5000"]).to_string());
    }
    let sample = cx.rng.pick(&["1000", "0", "1", "100"]).to_string();
    a.extend(s(&[
        "--max-cycles",
        "300000",
        "--sample",
        &sample,
        "-q",
        "--threads",
        "1",
    ]));
    if cx.rng.chance(1, 4) {
        a.push("--gpu".into());
        a.push(cx.gpu());
    }
    cx.sets(&mut a, 15);
    if two || cx.rng.chance(1, 5) {
        let p = cx.rng.pick(POLICIES).to_string();
        a.push("--share".into());
        a.push(p.clone());
        if cx.rng.chance(1, 10) {
            a.push("--policy-param".into());
            let key = cx
                .rng
                .pick(&[
                    "sample",
                    "warmup",
                    "task_blocks",
                    "period",
                    "slice",
                    "loss_factor",
                    "x",
                ])
                .to_string();
            let v = cx.number();
            a.push(format!("{p}.{key}={v}"));
        }
    }
    if cx.rng.chance(15, 100) {
        a.push("--json".into());
        a.push(cx.output("out/r.json"));
    }
    flags(
        cx,
        &mut a,
        &[("--split-streams", 10), ("--lenient-opcodes", 5)],
    );
    a
}

/// Writes the benches the study files name (`va`, `at.traceg`, `s.toml`) under `at`.
pub(crate) fn study_benches(cx: &mut Cx, at: &str) {
    let c = cx.corpus;
    let mutate_one = cx.rng.chance(1, 10);
    for (n, d) in &c.bundles[0].files {
        let d = if mutate_one && n != "kernelslist.g" {
            cx.mutated_text(&c.traces, d, 100)
        } else {
            d.clone()
        };
        cx.write(&format!("{at}/va/{n}"), &d);
    }
    cx.write(&format!("{at}/at.traceg"), &c.traces.seeds[2].clone());
    cx.write(&format!("{at}/s.toml"), c.small_spec());
}

fn validate(cx: &mut Cx) -> Vec<String> {
    let c = cx.corpus;
    let k = cx.mutated_text(&c.kernels_csv, &c.kernels_csv.seeds[0].clone(), 60);
    cx.write("in/ref/results_kernels.csv", &k);
    let p = cx.mutated_text(&c.pairs_csv, &c.pairs_csv.seeds[0].clone(), 60);
    cx.write("in/ref/results_pairs.csv", &p);
    let trace_mut = cx.rng.chance(15, 100);
    let at = Bundle {
        files: vec![
            ("kernelslist.g".into(), b"kernel-1.traceg\n".to_vec()),
            ("kernel-1.traceg".into(), c.traces.seeds[2].clone()),
        ],
    };
    for (dir, b) in [
        ("traces/kernels/va", &c.bundles[0]),
        ("traces/kernels/at", &at),
        ("traces/pairs/va+at", &c.pair),
    ] {
        if trace_mut && cx.rng.chance(1, 2) {
            cx.bundle(&format!("in/ref/{dir}"), b);
        } else {
            for (n, d) in &b.files {
                cx.write(&format!("in/ref/{dir}/{n}"), d);
            }
        }
    }
    let mut a = s(&["validate", "in/ref", "-q", "--threads", "1"]);
    flags(cx, &mut a, &[("--json", 20)]);
    a
}
