//! The bundled benchmark suites under `traces/<paper>/`: one synthetic-kernel spec per
//! benchmark of each paper, plus a `suite.toml` listing the members and the paper's category
//! label for each (provenance: `traces/SOURCES.md`).
//!
//! Checks: every suite covers exactly the benchmarks its paper names; every member's spec
//! exists, loads through `SynthKernel::from_file`, cites its sources and stays small enough
//! for a study to run in seconds; every spec in a suite folder is a member; expected labels
//! are among the suite's declared classes; and where a paper publishes a launch
//! configuration or resident-CTA counts, the spec and the bundled GPU model reproduce them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gpumodel::arch::{occupancy, Bytes, GpuSpec, Launch};
use gpumodel::trace::synth::SynthKernel;
use gpumodel::trace::KernelSource;
use serde::Deserialize;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `traces/<dir>/suite.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Suite {
    paper: String,
    seed: String,
    table: String,
    gpu: String,
    classes: Vec<String>,
    class_rule: String,
    #[serde(default)]
    pairs: Option<String>,
    /// Slate: the intensity levels that make up a class label `"<c>_C/<m>_M"`.
    #[serde(default)]
    levels: Vec<String>,
    bench: Vec<Bench>,
}

/// One `[[bench]]`: the fixed keys, plus the published values of that paper's table (kept as
/// data for later checks; read here only where a test needs them).
#[derive(Debug, Deserialize)]
struct Bench {
    name: String,
    abbr: String,
    spec: String,
    expected_class: String,
    #[serde(flatten)]
    data: toml::Table,
}

impl Bench {
    fn int(&self, key: &str) -> Option<u64> {
        self.data
            .get(key)
            .and_then(|v| v.as_integer())
            .map(|v| v as u64)
    }
}

/// (suite folder, the paper's benchmark abbreviations, the GPU model the paper used).
const SUITES: &[(&str, &[&str], &str)] = &[
    (
        "warped-slicer",
        &[
            "BLK", "BFS", "DXT", "HOT", "IMG", "KNN", "LBM", "MM", "MVP", "NN",
        ],
        "fermi-ws",
    ),
    ("sim", &["BO", "FD", "LM", "MD", "NB", "PF", "TP"], "k40c"),
    ("slate", &["BS", "GS", "MM", "RG", "TR"], "titanxp"),
    (
        "ugpu",
        &[
            "PVC", "LBM", "BH", "DWT2D", "EULER3D", "FWT", "LAVAMD", "SC", "CONVS", "SRAD", "DXTC",
            "HOTSPOT", "PF", "CP", "MRI-Q",
        ],
        "ugpu-80sm-hbm",
    ),
    (
        "punyala",
        &[
            "BLK", "GUPS", "BP", "FFT", "3DS", "LPS", "RAY", "BFS2", "SPMV", "LUD", "HS", "SAD",
            "NN",
        ],
        "gpgpusim-60sm",
    ),
];

fn load_suite(dir: &str) -> Suite {
    let path = root().join("traces").join(dir).join("suite.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load_model(name: &str) -> GpuSpec {
    GpuSpec::load(root().join("models").join(format!("{name}.toml")))
        .unwrap_or_else(|e| panic!("models/{name}.toml: {e}"))
}

fn load_spec(dir: &str, file: &str) -> SynthKernel {
    let path = root().join("traces").join(dir).join(file);
    SynthKernel::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn launch_of(k: &SynthKernel) -> Launch {
    let s = &k.spec().kernel;
    Launch::new(s.block.product() as u32, s.regs, s.smem.0 as u32)
}

#[test]
fn every_suite_covers_exactly_its_papers_benchmarks() {
    for (dir, abbrs, _) in SUITES {
        let suite = load_suite(dir);
        assert!(!suite.paper.is_empty() && !suite.table.is_empty() && !suite.gpu.is_empty());
        // The seed papers sit beside the checkout; check the name where they are present.
        let seeds = root().join("../shared/seeds");
        assert!(
            suite.seed.ends_with(".txt") && (!seeds.is_dir() || seeds.join(&suite.seed).exists()),
            "{dir}: seed {} is not a seed paper",
            suite.seed
        );
        assert!(!suite.class_rule.is_empty(), "{dir}: class_rule");
        let _ = &suite.pairs;
        if !suite.levels.is_empty() {
            for b in &suite.bench {
                let c = b
                    .data
                    .get("compute")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?");
                let m = b.data.get("memory").and_then(|v| v.as_str()).unwrap_or("?");
                assert!(suite.levels.iter().any(|l| l == c) && suite.levels.iter().any(|l| l == m));
                assert_eq!(b.expected_class, format!("{c}_C/{m}_M"), "{dir}/{}", b.name);
            }
        }
        let got: BTreeSet<&str> = suite.bench.iter().map(|b| b.abbr.as_str()).collect();
        let want: BTreeSet<&str> = abbrs.iter().copied().collect();
        assert_eq!(
            got, want,
            "{dir}: suite members differ from the paper's benchmarks"
        );
        assert_eq!(suite.bench.len(), abbrs.len(), "{dir}: duplicate members");
        for b in &suite.bench {
            assert_eq!(
                b.name,
                b.abbr.to_lowercase(),
                "{dir}: name must be the lower-case abbreviation"
            );
            assert_eq!(
                b.spec,
                format!("{}.toml", b.name),
                "{dir}/{}: spec file name",
                b.name
            );
            assert!(
                suite.classes.contains(&b.expected_class),
                "{dir}/{}: expected_class {:?} is not one of {:?}",
                b.name,
                b.expected_class,
                suite.classes
            );
        }
        let used: BTreeSet<&str> = suite
            .bench
            .iter()
            .map(|b| b.expected_class.as_str())
            .collect();
        assert!(
            used.len() >= 2,
            "{dir}: a suite must span at least two classes"
        );
    }
}

#[test]
fn every_member_spec_loads_cites_and_is_small() {
    for (dir, _, _) in SUITES {
        let suite = load_suite(dir);
        for b in &suite.bench {
            let path = root().join("traces").join(dir).join(&b.spec);
            assert!(path.exists(), "{}: missing", path.display());
            let text = std::fs::read_to_string(&path).unwrap();
            let k = load_spec(dir, &b.spec);
            let s = k.spec();
            assert_eq!(s.kernel.name, b.name, "{dir}/{}: kernel.name", b.spec);
            assert!(
                s.kernel.cite.trim().len() >= 40,
                "{dir}/{}: kernel.cite must quote the published values it encodes",
                b.spec
            );
            assert!(
                s.kernel.cite.contains(&b.abbr) || s.kernel.cite.contains(&b.abbr.to_lowercase()),
                "{dir}/{}: cite should name the benchmark",
                b.spec
            );
            for section in ["Published", "Assumed"] {
                assert!(
                    text.contains(section),
                    "{dir}/{}: the header comment must have a {section} section",
                    b.spec
                );
            }
            let total = k.total_warp_insts();
            assert!(
                (100_000..=8_000_000).contains(&total),
                "{dir}/{}: {total} warp instructions; keep suites between ~0.2 and 5 M",
                b.spec
            );
        }
    }
}

/// Every spec file under `traces/*/` (suite members, examples, anything else but the
/// suite and card files) loads.
#[test]
fn every_spec_under_traces_loads() {
    let mut n = 0;
    for dir in std::fs::read_dir(root().join("traces")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml")
                && p.file_name()
                    .is_some_and(|f| f != "suite.toml" && f != "card.toml")
            {
                SynthKernel::from_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                n += 1;
            }
        }
    }
    let members: usize = SUITES.iter().map(|(_, a, _)| a.len()).sum();
    assert!(n >= members, "found {n} specs, expected at least {members}");
}

/// The suite benchmarks' list (`benches/suite_kernels.sh`) names only kernel specs, each
/// with a model that exists: a card or suite file in it stops the benchmarks at that line
/// (`ff_suites.sh` did, silently, once the cards were added).
#[test]
fn the_suite_benchmarks_list_only_kernel_specs() {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(". benches/suite_kernels.sh && suite_kernels")
        .current_dir(root())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "`{line}`: expected SUITE MODEL FILE");
        load_model(f[1]);
        SynthKernel::from_file(&root().join(f[2]))
            .unwrap_or_else(|e| panic!("benches/suite_kernels.sh lists {}: {e}", f[2]));
        n += 1;
    }
    let members: usize = SUITES.iter().map(|(_, a, _)| a.len()).sum();
    assert!(
        n >= members,
        "listed {n} specs, expected at least {members}"
    );
}

#[test]
fn suite_folders_hold_only_members() {
    for (dir, _, _) in SUITES {
        let suite = load_suite(dir);
        let members: BTreeSet<String> = suite.bench.iter().map(|b| b.spec.clone()).collect();
        for e in std::fs::read_dir(root().join("traces").join(dir)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            // (`card.toml` is the suite's workload card, not a spec.)
            if name.ends_with(".toml") && name != "suite.toml" && name != "card.toml" {
                assert!(
                    members.contains(&name),
                    "{dir}/{name} is not listed in suite.toml"
                );
            }
        }
    }
}

#[test]
fn provenance_record_covers_every_suite() {
    let text = std::fs::read_to_string(root().join("traces/SOURCES.md")).unwrap();
    for (dir, abbrs, _) in SUITES {
        let suite = load_suite(dir);
        assert!(
            text.contains(&suite.seed),
            "SOURCES.md does not cite {}",
            suite.seed
        );
        for a in *abbrs {
            assert!(text.contains(a), "SOURCES.md does not mention {a} ({dir})");
        }
    }
}

/// Warped-Slicer: Table II's grid (≥ the spec's) and block size, and the resident CTAs per SM
/// implied by Table II and Table III (full SM and the Even half-SM split) on the Table I model.
#[test]
fn warped_slicer_occupancy_matches_table_ii_and_iii() {
    let gpu = load_model("fermi-ws");
    let mut half = gpu.clone();
    half.sm.max_threads /= 2;
    half.sm.max_warps /= 2;
    half.sm.max_ctas /= 2;
    half.sm.registers.per_sm /= 2;
    half.sm.shared.per_sm = Bytes(half.sm.shared.per_sm.0 / 2);
    let suite = load_suite("warped-slicer");
    for b in &suite.bench {
        let k = load_spec("warped-slicer", &b.spec);
        let s = &k.spec().kernel;
        assert_eq!(
            Some(s.block.product()),
            b.int("block"),
            "{}: Blkdim",
            b.name
        );
        assert!(
            s.grid.product() <= b.int("grid").unwrap(),
            "{}: grid",
            b.name
        );
        let full = occupancy(&gpu, &launch_of(&k)).unwrap();
        assert_eq!(
            Some(full.ctas_per_sm as u64),
            b.int("full_sm_ctas"),
            "{}: CTAs/SM",
            b.name
        );
        let h = occupancy(&half, &launch_of(&k)).unwrap();
        assert_eq!(
            Some(h.ctas_per_sm as u64),
            b.int("half_sm_ctas"),
            "{}: CTAs per half SM (Table III Even)",
            b.name
        );
        // At least 3 waves of the 16-SM GPU.
        let waves = s.grid.product() as f64 / (full.ctas_per_sm * gpu.sm.count) as f64;
        assert!(waves >= 3.0, "{}: only {waves:.1} waves", b.name);
    }
}

/// SiM: Table 3's launch configuration exactly (the grid may be scaled down), and the CTAs per
/// SM it gives on the K40c model.
#[test]
fn sim_launch_matches_table_3() {
    let gpu = load_model("k40c");
    let suite = load_suite("sim");
    for b in &suite.bench {
        let k = load_spec("sim", &b.spec);
        let s = &k.spec().kernel;
        assert_eq!(
            Some(s.block.product()),
            b.int("block"),
            "{}: threads/block",
            b.name
        );
        assert_eq!(
            Some(s.regs as u64),
            b.int("regs"),
            "{}: registers/thread",
            b.name
        );
        assert_eq!(
            Some(s.smem.0),
            b.int("smem"),
            "{}: shared memory/block",
            b.name
        );
        assert!(
            s.grid.product() <= b.int("grid").unwrap(),
            "{}: grid",
            b.name
        );
        let occ = occupancy(&gpu, &launch_of(&k)).unwrap();
        assert_eq!(
            Some(occ.ctas_per_sm as u64),
            b.int("ctas_per_sm"),
            "{}: CTAs/SM",
            b.name
        );
    }
}

/// Every spec fits at least one CTA on the GPU model of its paper, and fills the GPU at least
/// once (several waves where the paper's grid does).
#[test]
fn every_spec_runs_on_its_papers_gpu() {
    let mut report = BTreeMap::new();
    for (dir, _, model) in SUITES {
        let gpu = load_model(model);
        let suite = load_suite(dir);
        for b in &suite.bench {
            let k = load_spec(dir, &b.spec);
            let occ =
                occupancy(&gpu, &launch_of(&k)).unwrap_or_else(|e| panic!("{dir}/{}: {e}", b.spec));
            let slots = occ.ctas_per_sm as u64 * gpu.sm.count as u64;
            let waves = k.num_ctas() as f64 / slots as f64;
            report.insert(
                format!("{dir}/{}", b.name),
                format!(
                    "{:>5} CTAs/SM ({:<13}) {:>6.2} waves {:>4} insts/trip {:>9} warp insts  class {}",
                    occ.ctas_per_sm,
                    occ.limiter.as_str(),
                    waves,
                    k.body_len(),
                    k.total_warp_insts(),
                    b.expected_class
                ),
            );
        }
    }
    for (k, v) in &report {
        println!("{k:<24} {v}");
    }
}

/// Prints each suite member's static characterisation (instruction mix by unit, coalescing,
/// footprint) from its generated streams. Slow in debug builds; run with
/// `cargo test --release --test suites -- --ignored --nocapture`.
#[test]
#[ignore]
fn characterise_suites() {
    for (dir, _, _) in SUITES {
        let suite = load_suite(dir);
        for b in &suite.bench {
            let k = load_spec(dir, &b.spec);
            let st = gpumodel::trace::inspect::kernel_stats(&k).unwrap();
            let w = st.warp_insts as f64;
            let mix: Vec<String> = st
                .by_unit
                .iter()
                .map(|(u, n)| format!("{u} {:.0}%", 100.0 * *n as f64 / w))
                .collect();
            println!(
                "{dir}/{:<8} {:>8} warp insts  {:>6.2} gmem sectors/inst  {:>5.1} sectors/req  footprint {:>7} KiB  [{}]  class {}",
                b.name,
                st.warp_insts,
                st.gmem_sectors as f64 / w,
                st.sectors_per_request,
                st.footprint_bytes >> 10,
                mix.join(", "),
                b.expected_class
            );
        }
    }
}

/// The expected labels are the papers' own: Warped-Slicer Table II "Type", SiM's ISU < 50%
/// split of Table 3, Slate Table II's intensity levels, UGPU's 10 memory-bound / 5
/// compute-bound split, Punyala Table I's classes.
#[test]
fn expected_labels_are_the_papers() {
    let want: &[(&str, &[(&str, &str)])] = &[
        (
            "warped-slicer",
            &[
                ("BLK", "memory"),
                ("BFS", "memory"),
                ("DXT", "compute"),
                ("HOT", "compute"),
                ("IMG", "compute"),
                ("KNN", "memory"),
                ("LBM", "memory"),
                ("MM", "compute"),
                ("MVP", "cache"),
                ("NN", "cache"),
            ],
        ),
        (
            "sim",
            &[
                ("BO", "high-isu"),
                ("FD", "low-isu"),
                ("LM", "high-isu"),
                ("MD", "high-isu"),
                ("NB", "high-isu"),
                ("PF", "low-isu"),
                ("TP", "low-isu"),
            ],
        ),
        (
            "slate",
            &[
                ("BS", "M_C/M_M"),
                ("GS", "L_C/M_M"),
                ("MM", "H_C/M_M"),
                ("RG", "L_C/L_M"),
                ("TR", "L_C/H_M"),
            ],
        ),
        (
            "ugpu",
            &[
                ("PVC", "memory-bound"),
                ("LBM", "memory-bound"),
                ("BH", "memory-bound"),
                ("DWT2D", "memory-bound"),
                ("EULER3D", "memory-bound"),
                ("FWT", "memory-bound"),
                ("LAVAMD", "memory-bound"),
                ("SC", "memory-bound"),
                ("CONVS", "memory-bound"),
                ("SRAD", "memory-bound"),
                ("DXTC", "compute-bound"),
                ("HOTSPOT", "compute-bound"),
                ("PF", "compute-bound"),
                ("CP", "compute-bound"),
                ("MRI-Q", "compute-bound"),
            ],
        ),
        (
            "punyala",
            &[
                ("BLK", "M"),
                ("GUPS", "M"),
                ("BP", "MC"),
                ("FFT", "MC"),
                ("3DS", "MC"),
                ("LPS", "MC"),
                ("RAY", "MC"),
                ("BFS2", "C"),
                ("SPMV", "C"),
                ("LUD", "A"),
                ("HS", "A"),
                ("SAD", "A"),
                ("NN", "A"),
            ],
        ),
    ];
    for (dir, labels) in want {
        let suite = load_suite(dir);
        let got: BTreeMap<&str, &str> = suite
            .bench
            .iter()
            .map(|b| (b.abbr.as_str(), b.expected_class.as_str()))
            .collect();
        let want: BTreeMap<&str, &str> = labels.iter().copied().collect();
        assert_eq!(got, want, "{dir}: expected labels");
    }
    // SiM's label follows from the published ISU.
    for b in &load_suite("sim").bench {
        let isu = b.data.get("isu").and_then(|v| v.as_float()).unwrap();
        assert_eq!(b.expected_class == "low-isu", isu < 50.0, "sim/{}", b.name);
    }
    // Warped-Slicer's memory label follows the L2 MPKI >= 30 rule except for the
    // L1-cache-sensitive kernels.
    for b in &load_suite("warped-slicer").bench {
        let mpki = b.data.get("l2_mpki").and_then(|v| v.as_float()).unwrap();
        if b.expected_class != "cache" {
            assert_eq!(
                b.expected_class == "memory",
                mpki >= 30.0,
                "warped-slicer/{}",
                b.name
            );
        }
    }
}
