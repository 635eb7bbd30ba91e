//! Procedural synthetic kernels from a TOML spec.
//!
//! A [`SynthKernel`] is built from a spec file (format: [`spec`], with a worked example and
//! every field documented) and implements [`KernelSource`], so the engine, `inspect`, the
//! `.gmt` writer and the Accel-Sim text writer read it exactly like a recorded trace. Nothing
//! is stored per warp: the static instruction table and the prologue / loop-body / epilogue
//! templates are built once, and each warp's stream is generated on the fly from
//! `(seed, CTA, warp)` with counter-based hashing, so warps can be generated independently,
//! in any order, and identically every time. [`KernelSource::warp_len`] is closed-form.
//!
//! The streams look like real Volta-era SASS (the opcode spellings follow
//! `kernel.binary_version`): an index prologue (`MOV`, `S2R`, `IMAD`, `ISETP`,
//! `IMAD.WIDE`), a loop body whose PCs repeat every trip and that ends in
//! `IADD3`/`ISETP`/`BRA`, real register producer→consumer chains (`body.ilp` independent
//! accumulators; loads feed the first compute instructions; stores consume the chains), and
//! `EXIT`. Memory instructions carry per-lane addresses for the active lanes in lane order;
//! global buffers sit at `0x7f2000000000 + n × 256 MiB`; shared-memory addresses are offsets
//! in the CTA's window.
//!
//! ```no_run
//! use gpumodel::trace::synth::SynthKernel;
//! use gpumodel::trace::KernelSource;
//! let k = SynthKernel::from_file("traces/examples/stream_copy.toml".as_ref())?;
//! println!("{} warp instructions", k.total_warp_insts());
//! # Ok::<(), gpumodel::Error>(())
//! ```

pub mod build;
mod names;
pub(crate) mod rng;
pub mod spec;
mod stream;
mod template;
mod validate;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::trace::inst::KernelInfo;
use crate::trace::source::{CtaInfo, KernelSource, WarpStream};
use crate::trace::StaticTable;

pub use spec::{KernelSpec, Pattern, Size};
pub use stream::SynthWarp;
pub use validate::{SpecError, MAX_COUNT, MAX_STREAMS, MAX_TRIPS};

/// Largest spec file read (they are a few hundred bytes).
const MAX_SPEC_BYTES: u64 = 1 << 20;

/// A synthetic kernel: a spec compiled into a procedural [`KernelSource`].
pub struct SynthKernel {
    spec: KernelSpec,
    info: KernelInfo,
    built: build::Built,
}

impl std::fmt::Debug for SynthKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SynthKernel")
            .field("name", &self.info.name)
            .field("origin", &self.info.origin)
            .finish_non_exhaustive()
    }
}

/// Parses and validates a spec; errors name `path`, the line and the key.
pub fn parse_spec(text: &str, path: &Path) -> Result<KernelSpec> {
    let spec: KernelSpec = toml::from_str(text).map_err(|e| {
        let span = e.span();
        let line = span
            .as_ref()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() as u64 + 1);
        // an error about the whole document (a missing table) belongs to no table
        let whole = span
            .as_ref()
            .is_some_and(|s| s.start == 0 && (s.end == 0 || s.end >= text.trim_end().len()));
        let table = line.filter(|_| !whole).and_then(|l| table_at(text, l));
        let msg = e.message().trim().to_string();
        let msg = match table {
            Some(t) => format!("in [{t}]: {msg}"),
            None => msg,
        };
        Error::input(path, line, msg)
    })?;
    spec.validate()
        .map_err(|e| spec_error(e, Some(text), path))?;
    Ok(spec)
}

/// The `[table]` header in force at 1-based `line`.
fn table_at(text: &str, line: u64) -> Option<String> {
    let mut cur = None;
    for (n, l) in text.lines().enumerate() {
        if n as u64 + 1 > line {
            break;
        }
        let t = l.trim();
        if t.starts_with('[') {
            cur = Some(
                t.trim_start_matches('[')
                    .split(']')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            );
        }
    }
    cur
}

fn spec_error(e: SpecError, text: Option<&str>, path: &Path) -> Error {
    let line = text.and_then(|t| spec::line_of(t, &e.key));
    Error::input(path, line, e.to_string())
}

impl SynthKernel {
    /// Reads, validates and compiles a spec file.
    pub fn from_file(path: &Path) -> Result<SynthKernel> {
        let meta = crate::infile::open_regular(path)?
            .metadata()
            .map_err(|e| Error::io(path, e))?;
        if meta.len() > MAX_SPEC_BYTES {
            return Err(Error::input(
                path,
                None,
                format!(
                    "a synthetic kernel spec is a small TOML file; this one has {} bytes (limit {MAX_SPEC_BYTES})",
                    meta.len()
                ),
            ));
        }
        let text = crate::infile::read_to_string(path)?;
        Self::from_toml_str(&text, path)
    }

    /// Compiles spec text; `path` is only used in error messages and as the origin.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<SynthKernel> {
        let spec = parse_spec(text, path)?;
        Self::build(spec, Some(text), path)
    }

    /// Compiles an already parsed spec (validated again here). `origin` names it in errors
    /// and in [`KernelInfo::origin`].
    pub fn from_spec(spec: KernelSpec, origin: &Path) -> Result<SynthKernel> {
        spec.validate().map_err(|e| spec_error(e, None, origin))?;
        Self::build(spec, None, origin)
    }

    fn build(spec: KernelSpec, text: Option<&str>, path: &Path) -> Result<SynthKernel> {
        let built = build::build(&spec).map_err(|e| spec_error(e, text, path))?;
        let k = &spec.kernel;
        let info = KernelInfo {
            name: k.name.clone(),
            id: k.id,
            grid: k.grid.0,
            block: k.block.0,
            shmem: k.smem.0 as u32,
            nregs: k.regs,
            binary_version: k.binary_version,
            stream_id: 0,
            shmem_base: build::SHMEM_BASE,
            local_base: build::LOCAL_BASE,
            nvbit_version: String::new(),
            tracer_version: 0,
            origin: PathBuf::from(path).display().to_string(),
        };
        Ok(SynthKernel { spec, info, built })
    }

    /// The spec this kernel was built from (defaults filled in).
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// Warp instructions before the loop.
    pub fn prologue_len(&self) -> u64 {
        self.built.prologue.len() as u64
    }

    /// Warp instructions per loop trip.
    pub fn body_len(&self) -> u64 {
        self.built.body.len() as u64
    }

    /// Warp instructions after the loop.
    pub fn epilogue_len(&self) -> u64 {
        self.built.epilogue.len() as u64
    }

    /// Loop trips of a warp (the per-warp or per-CTA draw of a `[min, max]` range).
    pub fn trips(&self, cta: u32, warp: u32) -> u64 {
        self.built.geom.trips(cta as u64, warp as u64)
    }

    /// The base address of every global stream, in spec order (loads, then stores).
    pub fn stream_bases(&self) -> Vec<u64> {
        self.built.access.iter().map(|a| a.base).collect()
    }

    fn len_for_trips(&self, trips: u64) -> u64 {
        self.prologue_len() + trips * self.body_len() + self.epilogue_len()
    }
}

impl KernelSource for SynthKernel {
    fn info(&self) -> &KernelInfo {
        &self.info
    }

    fn statics(&self) -> &StaticTable {
        &self.built.statics
    }

    fn num_ctas(&self) -> u32 {
        self.built.geom.ctas as u32
    }

    fn cta(&self, index: u32) -> CtaInfo {
        let g = &self.built.geom;
        let i = index as u64;
        let (gx, gy) = (g.grid[0].max(1), g.grid[1].max(1));
        CtaInfo {
            id: [
                (i % gx) as u32,
                ((i / gx) % gy) as u32,
                (i / (gx * gy)) as u32,
            ],
            warps: g.wpc as u32,
        }
    }

    fn warp_len(&self, cta: u32, warp: u32) -> u64 {
        self.len_for_trips(self.trips(cta, warp))
    }

    fn warp(&self, cta: u32, warp: u32) -> Box<dyn WarpStream + '_> {
        Box::new(SynthWarp::new(self, cta, warp))
    }

    fn total_warp_insts(&self) -> u64 {
        let g = &self.built.geom;
        if g.trips_min == g.trips_max {
            return (g.ctas * g.wpc).saturating_mul(self.len_for_trips(g.trips_min));
        }
        (0..g.ctas)
            .flat_map(|c| (0..g.wpc).map(move |w| (c, w)))
            .fold(0u64, |acc, (c, w)| {
                acc.saturating_add(self.len_for_trips(g.trips(c, w)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::inst::DynInst;

    const MIN: &str = "[kernel]\nname = \"k\"\ngrid = 2\nblock = 48\nregs = 8\n";

    fn k(text: &str) -> SynthKernel {
        SynthKernel::from_toml_str(text, Path::new("k.toml")).unwrap()
    }

    #[test]
    fn minimal_kernel_is_prologue_loop_control_exit() {
        let s = k(MIN);
        assert_eq!(s.num_ctas(), 2);
        assert_eq!(s.cta(1).warps, 2);
        // MOV S2R S2R IMAD ISETP MOV(const) | IADD3 ISETP BRA | EXIT
        assert_eq!(
            (s.prologue_len(), s.body_len(), s.epilogue_len()),
            (6, 3, 1)
        );
        assert_eq!(s.warp_len(0, 1), 10);
        assert_eq!(s.total_warp_insts(), 40);
        let mut w = s.warp(0, 1);
        let mut d = DynInst::default();
        let mut masks = Vec::new();
        while w.next_inst(&mut d).unwrap() {
            masks.push(d.mask);
        }
        assert_eq!(masks, vec![0xffff; 10], "16-thread last warp");
        assert_eq!(s.info().binary_version, 70);
        assert_eq!(s.info().origin, "k.toml");
    }

    #[test]
    fn cta_coordinates_follow_the_grid() {
        let s = k("[kernel]\nname = \"k\"\ngrid = [3, 2, 2]\nblock = [8, 4]\nregs = 8\n");
        assert_eq!(s.num_ctas(), 12);
        assert_eq!(s.cta(4).id, [1, 1, 0]);
        assert_eq!(s.cta(11).id, [2, 1, 1]);
        assert_eq!(s.cta(0).warps, 1);
    }

    #[test]
    fn lane_offsets_spread_lanes_over_the_requested_sectors() {
        for (w, spr) in [(4u32, 4u32), (4, 32), (4, 1), (16, 4), (1, 1), (8, 16)] {
            let s = k(&format!(
                "{MIN}[[loads]]\ncount = 1\nwidth = {w}\nsectors_per_request = {spr}\n"
            ));
            let a = &s.built.access[0];
            let sectors: std::collections::BTreeSet<u64> =
                (0..32).map(|l| a.lane_off(l) / 32).collect();
            assert_eq!(sectors.len(), spr as usize, "width {w}");
            assert!((0..32).all(|l| a.lane_off(l).is_multiple_of(w as u64)));
            assert_eq!(a.span, 32 * spr as u64);
        }
    }

    #[test]
    fn buffers_sit_on_256_mib_slots() {
        let s = k(&format!(
            "{MIN}[[loads]]\ncount = 1\n[[loads]]\ncount = 1\npattern = \"random\"\nfootprint = \"600 MiB\"\n[[stores]]\ncount = 1\n"
        ));
        let b = s.stream_bases();
        assert_eq!(b[0], 0x7f20_0000_0000);
        assert_eq!(b[1], 0x7f20_0000_0000 + (256 << 20));
        assert_eq!(
            b[2],
            0x7f20_0000_0000 + 4 * (256 << 20),
            "600 MiB takes 3 slots"
        );
        let shared = k(&format!(
            "{MIN}[[loads]]\ncount = 1\nbuffer = \"x\"\n[[stores]]\ncount = 1\nbuffer = \"x\"\n"
        ));
        let b = shared.stream_bases();
        assert_eq!(b[0], b[1]);
    }

    #[test]
    fn bundled_examples_build() {
        for (name, text) in [
            (
                "stream_copy",
                include_str!("../../../traces/examples/stream_copy.toml"),
            ),
            (
                "random_gather",
                include_str!("../../../traces/examples/random_gather.toml"),
            ),
            (
                "smem_tiled",
                include_str!("../../../traces/examples/smem_tiled.toml"),
            ),
            (
                "l1_resident",
                include_str!("../../../traces/examples/l1_resident.toml"),
            ),
        ] {
            let s = k(text);
            assert_eq!(s.info().name, name);
        }
    }
}
