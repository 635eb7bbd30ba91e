//! Turns a validated [`KernelSpec`] into the per-kernel tables the generator reads: the
//! static instruction table, the prologue / loop-body / epilogue templates (one slot per
//! static instruction, saying how its dynamic instances get masks and addresses), and the
//! compiled address generators. Built once per kernel; nothing here is per warp.
//!
//! Where to look, in file order: the output types (`Slot`, `Access`, the generators,
//! `Geom`, `Built`); [`build`], the entry point; `geometry` and `layout` (buffers and their
//! addresses); `stream_geometry` (one access stream's footprint and stride). The instruction
//! template (`Regs`, register allocation across chains, and `Template`, one method per part
//! of the kernel: prologue, loop body by instruction kind, epilogue) is `synth/template.rs`.

use super::names::names;
use super::rng;
use super::spec::{AccessSpec, KernelSpec, Pattern, TripVariation};
pub use super::template::{Op, SharedGen};
use super::template::{TInst, Template};
use super::validate::SpecError;
use crate::trace::inst::{reg, MAX_SRC};
use crate::trace::statics::{RawStatic, StaticBuilder};
use crate::trace::StaticTable;

/// First global buffer (as in the reference generator).
pub const BUFFER_BASE: u64 = 0x7f20_0000_0000;
/// Buffers are placed on 256 MiB boundaries.
pub const BUFFER_ALIGN: u64 = 256 << 20;
/// Shared and local windows written in the kernel header (as in the reference generator).
pub const SHMEM_BASE: u64 = 0x0000_7f06_7500_0000;
pub const LOCAL_BASE: u64 = 0x0000_7f06_7700_0000;

/// Largest logical byte range one stream may address before wrapping.
const MAX_EXTENT: u64 = 1 << 62;

/// One template position.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub sidx: u32,
    pub op: Op,
    /// Executes under the trip's divergent mask.
    pub divergent: bool,
}

/// Address geometry of a global stream.
#[derive(Clone, Copy, Debug)]
pub enum Geo {
    /// A warp's `j`-th access is `step` bytes after its `j-1`-th (its first at its global
    /// warp index times the request span).
    Stream {
        step: u64,
    },
    Strided {
        stride: u64,
    },
    /// `fp` of the [`Access`] is in sectors.
    Random,
    Tiled {
        half_count: [u64; 2],
        base_b: u64,
    },
    Reuse {
        ws: u64,
        chunks: u64,
    },
}

/// A compiled global stream.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub geo: Geo,
    pub base: u64,
    /// Instructions per trip.
    pub count: u64,
    pub width: u64,
    /// Bytes one full-warp request spans (32 × sectors per request).
    pub span: u64,
    pub share_shift: u32,
    pub spacing_shift: u32,
    /// Wrap modulus in bytes (sectors for `Random`); 0 = no wrap.
    pub fp: u64,
    pub salt: u64,
}

impl Access {
    /// Offset of lane `l` inside one request.
    #[inline(always)]
    pub fn lane_off(&self, l: u32) -> u64 {
        ((l >> self.share_shift) as u64) << self.spacing_shift
    }
}

#[derive(Clone, Copy, Debug)]
pub struct AtomicGen {
    pub base: u64,
    pub count: u64,
    pub targets: u64,
    pub aggregated: bool,
    pub salt: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct DivGen {
    pub rate: f64,
    /// Lane threshold out of 65536.
    pub thr16: u64,
    pub salt: u64,
}

/// Kernel-wide shape used by the address generators.
#[derive(Clone, Copy, Debug)]
pub struct Geom {
    pub ctas: u64,
    pub wpc: u64,
    pub tpc: u64,
    pub total_warps: u64,
    pub threads: u64,
    pub trips_min: u64,
    pub trips_max: u64,
    pub trips_per_cta: bool,
    /// Grid x extent used for CTA coordinates and tile rows.
    pub grid: [u64; 3],
    /// Width of the 2-D CTA arrangement of `tiled` streams.
    pub tile_x: u64,
    pub seed: u64,
}

impl Geom {
    /// Trip count of a warp (closed form).
    #[inline]
    pub fn trips(&self, cta: u64, warp: u64) -> u64 {
        if self.trips_min == self.trips_max {
            return self.trips_min;
        }
        let w = if self.trips_per_cta { u64::MAX } else { warp };
        self.trips_min
            + rng::below(
                rng::hash2(self.seed ^ 0x7219_a0b4_11c3_5e9d, cta, w),
                self.trips_max - self.trips_min + 1,
            )
    }
}

/// Everything [`super::SynthKernel`] keeps besides the spec and the kernel info.
pub struct Built {
    pub statics: StaticTable,
    pub prologue: Vec<Slot>,
    pub body: Vec<Slot>,
    pub epilogue: Vec<Slot>,
    pub access: Vec<Access>,
    pub atomics: Option<AtomicGen>,
    pub shared: Option<SharedGen>,
    pub div: Option<DivGen>,
    pub pre_base: u64,
    pub post_base: u64,
    pub geom: Geom,
}

fn serr(key: impl Into<String>, msg: impl Into<String>) -> SpecError {
    SpecError {
        key: key.into(),
        msg: msg.into(),
    }
}

fn round_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a).saturating_mul(a)
}

/// Compiles a validated spec. Errors are rules that depend on several values together.
pub fn build(spec: &KernelSpec) -> Result<Built, SpecError> {
    let gen = spec
        .isa()
        .ok_or_else(|| serr("kernel.binary_version", "not a SASS version"))?;
    let nm = names(gen);
    let geom = geometry(spec);
    let lay = layout(spec, &geom)?;
    let t = Template::new(spec, &nm, lay.shared);
    let pro = t.prologue();
    let body = t.body(lay.n_load_streams);
    let epi = t.epilogue();

    // ---- intern
    let mut sb = StaticBuilder::new(gen, false);
    let mut pc: u32 = 0;
    let mut intern = |v: Vec<TInst>| -> Result<Vec<Slot>, SpecError> {
        let mut out = Vec::with_capacity(v.len());
        for t in v {
            let mut src = [reg::NONE; MAX_SRC];
            for (d, s) in src.iter_mut().zip(&t.srcs) {
                *d = *s;
            }
            let has_mem = !matches!(t.op, Op::Plain);
            let raw = RawStatic {
                pc,
                opcode: t.opcode.as_bytes(),
                dst: t.dst,
                src,
                nsrc: t.srcs.len().min(MAX_SRC) as u8,
                imm: 0,
                imm2: 0,
                has_mem,
            };
            let sidx = sb
                .intern(&raw)
                .map_err(|m| serr("kernel.binary_version", m.to_string()))?;
            out.push(Slot {
                sidx,
                op: t.op,
                divergent: t.divergent,
            });
            pc = pc.wrapping_add(16);
        }
        Ok(out)
    };
    let prologue = intern(pro)?;
    let body = intern(body)?;
    let epilogue = intern(epi)?;
    Ok(Built {
        statics: sb.into_table(),
        prologue,
        body,
        epilogue,
        access: lay.access,
        atomics: lay.atomics,
        shared: lay.shared,
        div: lay.div,
        pre_base: lay.pre_base,
        post_base: lay.post_base,
        geom,
    })
}

/// The launch shape of a spec as the generators use it.
fn geometry(spec: &KernelSpec) -> Geom {
    let kk = &spec.kernel;
    let bd = &spec.body;
    let grid = kk.grid.0.map(|v| v as u64);
    let ctas = kk.grid.product();
    let tpc = kk.block.product();
    let wpc = tpc.div_ceil(32);
    let total_warps = ctas * wpc;
    let tile_x = if grid[1] * grid[2] > 1 {
        grid[0]
    } else {
        ((ctas as f64).sqrt().ceil() as u64).max(1)
    };
    Geom {
        ctas,
        wpc,
        tpc,
        total_warps,
        threads: ctas * tpc,
        trips_min: bd.trips.min,
        trips_max: bd.trips.max,
        trips_per_cta: bd.trip_variation == TripVariation::Cta,
        grid,
        tile_x,
        seed: kk.seed,
    }
}

/// Where a kernel's data lies: each stream's generator with its buffer's base, and the
/// atomics', shared memory's, divergence's and pre-/post-loop accesses' parameters.
struct Layout {
    access: Vec<Access>,
    n_load_streams: usize,
    atomics: Option<AtomicGen>,
    shared: Option<SharedGen>,
    div: Option<DivGen>,
    pre_base: u64,
    post_base: u64,
}

/// Lays out the buffers of every stream (label -> extent, in order of first use) in the
/// address space, and the generators that address them.
fn layout(spec: &KernelSpec, geom: &Geom) -> Result<Layout, SpecError> {
    let kk = &spec.kernel;
    let bd = &spec.body;
    let mut buffers: Vec<(String, u64)> = Vec::new();
    let mut use_buffer = |label: String, extent: u64| -> usize {
        if let Some(i) = buffers.iter().position(|(l, _)| *l == label) {
            buffers[i].1 = buffers[i].1.max(extent);
            i
        } else {
            buffers.push((label, extent));
            buffers.len() - 1
        }
    };

    struct Pending {
        acc: Access,
        buf: usize,
        buf_b: Option<usize>,
    }
    let mut pending: Vec<Pending> = Vec::new();
    let streams: Vec<(&AccessSpec, String)> = spec
        .loads
        .iter()
        .enumerate()
        .map(|(i, a)| (a, key_of("loads", i, spec.loads.len())))
        .chain(
            spec.stores
                .iter()
                .enumerate()
                .map(|(i, a)| (a, key_of("stores", i, spec.stores.len()))),
        )
        .collect();
    // The stream whose random addresses each stream draws: its own, or for an `in_place`
    // store those of the load it writes back (same salt, same `j` sequence).
    let salt_stream: Vec<u64> = streams
        .iter()
        .enumerate()
        .map(|(si, (a, _))| {
            let own = si as u64;
            if si < spec.loads.len() || !a.in_place {
                return own;
            }
            spec.in_place_load(a).map_or(own, |l| l as u64)
        })
        .collect();
    for (si, (a, key)) in streams.iter().enumerate() {
        let s = KernelSpec::sectors_of(a) as u64;
        let w = a.width as u64;
        let span = 32 * s;
        let share = (w / s).max(1);
        let spacing = s.max(w);
        let count = a.count as u64;
        let (geo, fp, extent, extent_b) = stream_geometry(a, key, geom)?;
        let label = a.buffer.clone().unwrap_or_else(|| key.clone());
        let buf = use_buffer(label.clone(), extent);
        let buf_b = (extent_b > 0).then(|| use_buffer(format!("{label}#B"), extent_b));
        pending.push(Pending {
            acc: Access {
                geo,
                base: 0,
                count,
                width: w,
                span,
                share_shift: share.trailing_zeros(),
                spacing_shift: spacing.trailing_zeros(),
                fp,
                salt: rng::hash2(kk.seed, 0xacce55, salt_stream[si]),
            },
            buf,
            buf_b,
        });
    }
    let atom_buf = spec.atomics.as_ref().map(|at| {
        use_buffer(
            at.buffer.clone().unwrap_or_else(|| "atomics".into()),
            at.targets as u64 * 4,
        )
    });
    let pre_buf = (bd.pre_loads > 0)
        .then(|| use_buffer("pre_loads".into(), bd.pre_loads as u64 * geom.threads * 4));
    let post_buf = (bd.post_stores > 0).then(|| {
        use_buffer(
            "post_stores".into(),
            bd.post_stores as u64 * geom.threads * 4,
        )
    });

    let mut bases = Vec::with_capacity(buffers.len());
    let mut cursor = BUFFER_BASE + kk.address_offset.0;
    for (_, extent) in &buffers {
        bases.push(cursor);
        cursor = cursor.saturating_add(round_up((*extent).max(1), BUFFER_ALIGN));
    }
    if cursor > 1 << 56 {
        return Err(serr(
            "kernel",
            "the buffers of all streams together exceed the 2^56-byte address space: give footprints or reduce trips/grid",
        ));
    }
    let access: Vec<Access> = pending
        .into_iter()
        .map(|p| {
            let mut a = p.acc;
            a.base = bases[p.buf];
            if let Geo::Tiled { half_count, .. } = a.geo {
                a.geo = Geo::Tiled {
                    half_count,
                    base_b: p.buf_b.map_or(a.base, |b| bases[b]),
                };
            }
            a
        })
        .collect();
    let n_load_streams = spec.loads.len();

    let atomics = spec.atomics.as_ref().map(|at| AtomicGen {
        base: atom_buf.map_or(0, |b| bases[b]),
        count: at.count as u64,
        targets: at.targets as u64,
        aggregated: at.aggregated,
        salt: rng::hash2(kk.seed, 0xa7011c, 0),
    });
    let (shared, div) = shared_and_divergence(spec);
    Ok(Layout {
        access,
        n_load_streams,
        atomics,
        shared,
        div,
        pre_base: pre_buf.map_or(0, |b| bases[b]),
        post_base: post_buf.map_or(0, |b| bases[b]),
    })
}

/// The generators of a spec's shared-memory accesses and divergence, if it has them.
fn shared_and_divergence(spec: &KernelSpec) -> (Option<SharedGen>, Option<DivGen>) {
    let kk = &spec.kernel;
    let shared = spec
        .shared
        .as_ref()
        .filter(|s| s.loads + s.stores > 0)
        .map(|s| {
            let w = s.width as u64;
            SharedGen {
                loads: s.loads as u64,
                stores: s.stores as u64,
                width: w,
                unit: w * s.bank_conflicts as u64,
                size: (kk.smem.0 / w * w).max(w),
            }
        });
    let div = spec
        .divergence
        .as_ref()
        .filter(|d| d.fraction > 0.0)
        .map(|d| DivGen {
            rate: d.rate,
            thr16: (d.active * 65536.0).round().clamp(1.0, 65536.0) as u64,
            salt: rng::hash2(kk.seed, 0xd1e5, 0),
        });
    (shared, div)
}

/// Where stream `a` (table key `key`) puts its addresses: its geometry, footprint, and the
/// extents of its buffer (and of its second buffer, for a tiled stream's B operand).
fn stream_geometry(
    a: &AccessSpec,
    key: &str,
    geom: &Geom,
) -> Result<(Geo, u64, u64, u64), SpecError> {
    let s = KernelSpec::sectors_of(a) as u64;
    let w = a.width as u64;
    let span = 32 * s;
    let count = a.count as u64;
    let steps = geom.trips_max.checked_mul(count);
    let too_big = || {
        serr(
            key,
            "addresses more than 2^62 bytes before wrapping: reduce trips, count or grid",
        )
    };
    let chk = |v: Option<u64>| v.filter(|&v| v <= MAX_EXTENT).ok_or_else(too_big);
    let fp_bytes = a.footprint.map(|f| f.0);
    Ok(match a.pattern {
        Pattern::Stream => {
            let grid = chk(geom.total_warps.checked_mul(span))?;
            let step = a.step.map_or(grid, |s| s.0);
            // (The last access of the last warp ends there: `steps × grid` by default.)
            let logical = chk(steps
                .and_then(|st| st.saturating_sub(1).checked_mul(step))
                .and_then(|v| v.checked_add(grid)))?;
            let fp = fp_bytes.map_or(0, |f| f / span * span);
            (
                Geo::Stream { step },
                fp,
                if fp > 0 { fp } else { logical },
                0,
            )
        }
        Pattern::Strided => {
            let stride = a.stride.map_or(w, |s| s.0);
            let logical = chk(geom
                .total_warps
                .checked_mul(32)
                .and_then(|v| v.checked_mul(stride)))?;
            let fp = fp_bytes.map_or(0, |f| f / w * w);
            (
                Geo::Strided { stride },
                fp,
                if fp > 0 { fp } else { logical },
                0,
            )
        }
        Pattern::Random => {
            let f = fp_bytes.unwrap_or(span);
            let sectors = (f / 32).max(1);
            (Geo::Random, sectors, sectors * 32, 0)
        }
        Pattern::Tiled => {
            let hc = [count.div_ceil(2), count / 2];
            let tiles_y = geom.ctas.div_ceil(geom.tile_x);
            let per_tile = |h: u64| {
                geom.trips_max
                    .checked_mul(h)
                    .and_then(|v| v.checked_mul(geom.wpc))
                    .and_then(|v| v.checked_mul(span))
            };
            let ea = chk(per_tile(hc[0]).and_then(|v| v.checked_mul(tiles_y)))?;
            let eb = chk(per_tile(hc[1]).and_then(|v| v.checked_mul(geom.tile_x)))?;
            let fp = fp_bytes.map_or(0, |f| f / span * span);
            (
                Geo::Tiled {
                    half_count: hc,
                    base_b: 0,
                },
                fp,
                if fp > 0 { fp } else { ea },
                if hc[1] == 0 {
                    0
                } else if fp > 0 {
                    fp
                } else {
                    eb
                },
            )
        }
        Pattern::Reuse => {
            let ws = a.working_set.map_or(span, |w| w.0) / span * span;
            let logical = chk(geom.ctas.checked_mul(ws))?;
            let fp = fp_bytes.map_or(logical, |f| f / ws * ws);
            (
                Geo::Reuse {
                    ws,
                    chunks: ws / span,
                },
                fp,
                fp,
                0,
            )
        }
    })
}

fn key_of(table: &str, i: usize, n: usize) -> String {
    if n == 1 {
        table.to_string()
    } else {
        format!("{table}[{i}]")
    }
}
