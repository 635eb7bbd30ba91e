//! Turns a validated [`KernelSpec`] into the per-kernel tables the generator reads: the
//! static instruction table, the prologue / loop-body / epilogue templates (one slot per
//! static instruction, saying how its dynamic instances get masks and addresses), and the
//! compiled address generators. Built once per kernel; nothing here is per warp.
//!
//! Where to look, in file order: the output types (`Slot`, `Access`, the generators,
//! `Geom`, `Built`); [`build`], the entry point; `geometry` and `layout` (buffers and their
//! addresses); `stream_geometry` (one access stream's footprint and stride); `Regs` (register
//! allocation across chains); `Template`, one method per part of the kernel (prologue, loop
//! body by instruction kind, epilogue), which is most of the file.

use super::names::{names, width_token, Names};
use super::rng;
use super::spec::{AccessSpec, AtomicOp, KernelSpec, Pattern, TripVariation};
use super::validate::SpecError;
use crate::trace::inst::{reg, Unit, MAX_SRC};
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

/// What a dynamic instance of a template slot needs besides its static index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// No addresses.
    Plain,
    /// `k`-th instruction of global access stream `acc` in a trip (loads and stores).
    Global {
        acc: u16,
        k: u32,
    },
    Atomic {
        k: u32,
    },
    SharedLoad {
        k: u32,
    },
    SharedStore {
        k: u32,
    },
    PreLoad {
        p: u32,
    },
    PostStore {
        p: u32,
    },
}

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
    Stream,
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
pub struct SharedGen {
    pub loads: u64,
    pub stores: u64,
    pub width: u64,
    /// Bytes between lanes (0 = broadcast).
    pub unit: u64,
    /// Usable window (a multiple of `width`).
    pub size: u64,
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

/// A template instruction before interning.
struct TInst {
    opcode: String,
    dst: u16,
    srcs: Vec<u16>,
    op: Op,
    /// Counts toward the divergent region.
    work: bool,
    divergent: bool,
}

fn r(n: u16) -> u16 {
    reg::encode(reg::KIND_R, n)
}

fn ins(opcode: impl Into<String>, dst: Option<u16>, srcs: &[u16], op: Op, work: bool) -> TInst {
    TInst {
        opcode: opcode.into(),
        dst: dst.map_or(reg::NONE, r),
        srcs: srcs.iter().map(|&s| r(s)).collect(),
        op,
        work,
        divergent: false,
    }
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
            let logical = chk(steps
                .and_then(|st| st.checked_mul(geom.total_warps))
                .and_then(|v| v.checked_mul(span)))?;
            let fp = fp_bytes.map_or(0, |f| f / span * span);
            (Geo::Stream, fp, if fp > 0 { fp } else { logical }, 0)
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

/// The registers of a kernel's template: pointers per stream, the loop counter, a constant,
/// the compute chains' accumulators, and rotating destinations for loads.
struct Regs {
    /// Pointer registers per load stream (two for a tiled stream's A and B operands).
    load_ptr: Vec<[u16; 2]>,
    store_ptr: Vec<u16>,
    atom_ptr: Option<u16>,
    pre_ptr: Option<u16>,
    post_ptr: Option<u16>,
    counter: u16,
    konst: u16,
    k_chains: u16,
    acc_base: u16,
    total_loads: u64,
    n_lslots: u16,
    lslot_base: u16,
    /// Shared loads per trip.
    m_shared: u64,
    n_sslots: u16,
    sslot_base: u16,
    atom_reg: u16,
}

impl Regs {
    fn new(spec: &KernelSpec, m_shared: u64) -> Regs {
        let bd = &spec.body;
        let mut next: u16 = 2;
        let mut pair = || {
            let p = next;
            next += 2;
            p
        };
        // pointer registers per load stream (two for tiled), per store stream, atomics,
        // pre, post
        let mut load_ptr: Vec<[u16; 2]> = Vec::new();
        for a in &spec.loads {
            let p = pair();
            let q = if a.pattern == Pattern::Tiled && a.count >= 2 {
                pair()
            } else {
                p
            };
            load_ptr.push([p, q]);
        }
        let store_ptr: Vec<u16> = spec.stores.iter().map(|_| pair()).collect();
        let atom_ptr = spec.atomics.as_ref().map(|_| pair());
        let pre_ptr = (bd.pre_loads > 0).then(&mut pair);
        let post_ptr = (bd.post_stores > 0).then(&mut pair);
        let counter = next;
        let konst = next + 1;
        next += 2;
        let k_chains = bd.ilp as u16;
        let acc_base = next;
        next += 2 * k_chains;
        let total_loads: u64 = spec.loads.iter().map(|a| a.count as u64).sum();
        let n_lslots = total_loads.min(16) as u16;
        let lslot_base = next;
        next += 4 * n_lslots;
        let n_sslots = m_shared.min(8) as u16;
        let sslot_base = next;
        next += 4 * n_sslots;
        let atom_reg = next;
        next += 1;
        debug_assert!(next < 255);
        Regs {
            load_ptr,
            store_ptr,
            atom_ptr,
            pre_ptr,
            post_ptr,
            counter,
            konst,
            k_chains,
            acc_base,
            total_loads,
            n_lslots,
            lslot_base,
            m_shared,
            n_sslots,
            sslot_base,
            atom_reg,
        }
    }
    /// The accumulator of compute chain `c` (modulo the chains).
    fn acc(&self, c: u64) -> u16 {
        self.acc_base + 2 * (c % self.k_chains as u64) as u16
    }
    /// The destination of the `g`-th global load of a trip.
    fn lslot(&self, g: u64) -> u16 {
        self.lslot_base + 4 * (g % self.n_lslots.max(1) as u64) as u16
    }
    /// The destination of the `s`-th shared load of a trip.
    fn sslot(&self, s: u64) -> u16 {
        self.sslot_base + 4 * (s % self.n_sslots.max(1) as u64) as u16
    }
}

/// The register the `g`-th instruction that consumes a load reads (none without loads).
fn value_of_load(load_dsts: &[u16], g: u64) -> Option<u16> {
    (!load_dsts.is_empty()).then(|| load_dsts[(g % load_dsts.len() as u64) as usize])
}

/// A kernel's instruction template under construction: prologue, loop body, epilogue.
struct Template<'s> {
    spec: &'s KernelSpec,
    nm: &'s Names,
    r: Regs,
    shared: Option<SharedGen>,
    /// The pointers the loop body uses (streams' and atomics'), in register order.
    body_ptrs: Vec<u16>,
    /// How many of `body_ptrs` the body's INT instructions increment.
    n_inc: usize,
    /// INT instructions left for the compute chains.
    int_chain: u64,
    /// Compute instructions per trip.
    n_compute: u64,
}

impl<'s> Template<'s> {
    fn new(spec: &'s KernelSpec, nm: &'s Names, shared: Option<SharedGen>) -> Template<'s> {
        let bd = &spec.body;
        let r = Regs::new(spec, shared.map_or(0, |s| s.loads));
        let mut body_ptrs: Vec<u16> = Vec::new();
        for p in &r.load_ptr {
            body_ptrs.push(p[0]);
            if p[1] != p[0] {
                body_ptrs.push(p[1]);
            }
        }
        body_ptrs.extend(&r.store_ptr);
        body_ptrs.extend(r.atom_ptr);
        let n_inc = (bd.int as usize).min(body_ptrs.len());
        let int_chain = bd.int as u64 - n_inc as u64;
        let n_compute =
            int_chain + bd.fp32 as u64 + bd.fp64 as u64 + bd.sfu as u64 + bd.tensor as u64;
        Template {
            spec,
            nm,
            r,
            shared,
            body_ptrs,
            n_inc,
            int_chain,
            n_compute,
        }
    }

    fn prologue(&self) -> Vec<TInst> {
        let (r, bd, nm) = (&self.r, &self.spec.body, self.nm);
        let mut pro: Vec<TInst> = vec![
            ins("MOV", Some(1), &[], Op::Plain, false),
            ins("S2R", Some(0), &[], Op::Plain, false),
            ins("S2R", Some(3), &[], Op::Plain, false),
            ins("IMAD", Some(0), &[3, 0], Op::Plain, false),
            ins("ISETP.GE.AND", None, &[0], Op::Plain, false),
        ];
        let mut all_ptrs = self.body_ptrs.clone();
        all_ptrs.extend(r.pre_ptr);
        all_ptrs.extend(r.post_ptr);
        for &p in &all_ptrs {
            pro.push(ins("IMAD.WIDE", Some(p), &[0], Op::Plain, false));
        }
        if bd.pre_loads == 0 {
            pro.push(ins("MOV", Some(r.konst), &[], Op::Plain, false));
        }
        if self.n_compute > 0 {
            for c in 0..r.k_chains as u64 {
                pro.push(ins("MOV", Some(r.acc(c)), &[], Op::Plain, false));
            }
        }
        if let Some(pp) = r.pre_ptr {
            let op = format!("{}{}", nm.ldg, nm.sys);
            for p in 0..bd.pre_loads {
                let dst = if p == 0 { r.konst } else { r.acc(p as u64 - 1) };
                pro.push(ins(&op, Some(dst), &[pp], Op::PreLoad { p }, false));
            }
        }
        pro
    }

    /// The loop body: global loads, shared stores, barriers, compute and shared loads,
    /// atomics, global stores, pointer increments, the divergent region, loop control.
    fn body(&self, n_load_streams: usize) -> Vec<TInst> {
        let (r, nm) = (&self.r, self.nm);
        let (mut body, load_dsts) = self.global_loads();
        // 2. shared stores
        if let Some(sh) = self.shared {
            let op = format!("STS{}", width_token(sh.width));
            for s in 0..sh.stores {
                let v = value_of_load(&load_dsts, s).unwrap_or(if self.n_compute > 0 {
                    r.acc(s)
                } else {
                    r.konst
                });
                body.push(ins(
                    &op,
                    None,
                    &[0, v],
                    Op::SharedStore { k: s as u32 },
                    true,
                ));
            }
        }
        self.compute(&mut body, &load_dsts);
        self.atomics_and_stores(&mut body, &load_dsts, n_load_streams);
        // 7. pointer increments
        for &p in self.body_ptrs.iter().take(self.n_inc) {
            body.push(ins(nm.iadd, Some(p), &[p, r.konst], Op::Plain, false));
        }
        // divergent region: the tail of the work instructions, entered through one BRA
        if let Some(d) = &self.spec.divergence {
            let work: Vec<usize> = (0..body.len()).filter(|&i| body[i].work).collect();
            let n = (d.fraction * work.len() as f64).ceil() as usize;
            if d.fraction > 0.0 && n > 0 {
                let first = work[work.len() - n.min(work.len())];
                for t in body.iter_mut().skip(first) {
                    t.divergent = t.work;
                }
                body.insert(first, ins("BRA", None, &[], Op::Plain, false));
            }
        }
        // 8. loop control
        body.push(ins(
            nm.iadd,
            Some(r.counter),
            &[r.counter],
            Op::Plain,
            false,
        ));
        body.push(ins("ISETP.GE.AND", None, &[r.counter], Op::Plain, false));
        body.push(ins("BRA", None, &[], Op::Plain, false));
        body
    }

    /// The body's global loads (section 1), round-robin over streams, and their
    /// destinations.
    fn global_loads(&self) -> (Vec<TInst>, Vec<u16>) {
        let (r, nm, spec) = (&self.r, self.nm, self.spec);
        let mut body: Vec<TInst> = Vec::new();
        let mut load_dsts: Vec<u16> = Vec::new();
        let maxc = spec.loads.iter().map(|a| a.count).max().unwrap_or(0);
        let mut g: u64 = 0;
        for kx in 0..maxc {
            for (si, a) in spec.loads.iter().enumerate() {
                if kx >= a.count {
                    continue;
                }
                let w = a.width as u64;
                let suffix = if a.bypass_l1 { ".STRONG.GPU" } else { nm.sys };
                let opcode = format!("{}{}{}", nm.ldg, width_token(w), suffix);
                let dst = r.lslot(g);
                let src = if a.dependent {
                    if g == 0 {
                        r.lslot(r.total_loads - 1)
                    } else {
                        r.lslot(g - 1)
                    }
                } else if a.pattern == Pattern::Tiled {
                    r.load_ptr[si][(kx & 1) as usize]
                } else {
                    r.load_ptr[si][0]
                };
                body.push(ins(
                    opcode,
                    Some(dst),
                    &[src],
                    Op::Global {
                        acc: si as u16,
                        k: kx,
                    },
                    true,
                ));
                load_dsts.push(dst);
                g += 1;
            }
        }
        (body, load_dsts)
    }

    /// Section 3 of the body: barriers, compute instructions (units interleaved evenly over
    /// the chains) and the shared loads that feed them.
    fn compute(&self, body: &mut Vec<TInst>, load_dsts: &[u16]) {
        let (r, nm, bd) = (&self.r, self.nm, &self.spec.body);
        // 3. barriers + compute + shared loads
        let nb = bd.barriers as u64;
        if nb >= 1 {
            body.push(ins("BAR.SYNC", None, &[], Op::Plain, false));
        }
        let units: [(Unit, u64); 5] = [
            (Unit::Int, self.int_chain),
            (Unit::Fp32, bd.fp32 as u64),
            (Unit::Fp64, bd.fp64 as u64),
            (Unit::Sfu, bd.sfu as u64),
            (Unit::Tensor, bd.tensor as u64),
        ];
        let mut emitted = [0u64; 5];
        let lds_op = self
            .shared
            .map(|s| format!("LDS.U{}", width_token(s.width)));
        let mut next_lds: u64 = 0;
        // further barriers at evenly spaced positions, the last after the compute section
        let mut next_bar: u64 = 1;
        for i in 0..=self.n_compute {
            while nb >= 2 && next_bar < nb && next_bar * self.n_compute / (nb - 1) == i {
                body.push(ins("BAR.SYNC", None, &[], Op::Plain, false));
                next_bar += 1;
            }
            if i == self.n_compute {
                break;
            }
            // shared loads placed before this compute instruction
            let mut fed_by: Option<u16> = None;
            if let Some(op) = &lds_op {
                while next_lds < r.m_shared && next_lds * self.n_compute / r.m_shared == i {
                    let d = r.sslot(next_lds);
                    body.push(ins(
                        op,
                        Some(d),
                        &[0],
                        Op::SharedLoad { k: next_lds as u32 },
                        true,
                    ));
                    fed_by = Some(d);
                    next_lds += 1;
                }
            }
            // pick the unit with the largest deficit (even interleaving)
            let mut best = 0usize;
            let mut best_d = i128::MIN;
            for (u, &(_, cnt)) in units.iter().enumerate() {
                if emitted[u] >= cnt {
                    continue;
                }
                let d = cnt as i128 * (i as i128 + 1) - emitted[u] as i128 * self.n_compute as i128;
                if d > best_d {
                    best_d = d;
                    best = u;
                }
            }
            let (unit, _) = units[best];
            let nth = emitted[best] as usize;
            emitted[best] += 1;
            let a = r.acc(i);
            let input = fed_by
                .or_else(|| {
                    if i < r.total_loads {
                        value_of_load(load_dsts, i)
                    } else {
                        None
                    }
                })
                .unwrap_or(r.konst);
            let (opcode, srcs): (&str, Vec<u16>) = match unit {
                Unit::Int => {
                    let o = nm.int[nth % 4];
                    (o, vec![a, input, r.konst])
                }
                Unit::Fp32 => {
                    let o = nm.fp32[nth % 8];
                    if o == "FFMA" {
                        (o, vec![a, input, r.konst])
                    } else {
                        (o, vec![a, input])
                    }
                }
                Unit::Fp64 => {
                    let o = nm.fp64[nth % 8];
                    if o == "DFMA" {
                        (o, vec![a, input, r.konst])
                    } else {
                        (o, vec![a, input])
                    }
                }
                Unit::Sfu => {
                    let o = nm.sfu[nth % 2];
                    if input == r.konst {
                        (o, vec![a])
                    } else {
                        (o, vec![a, input])
                    }
                }
                _ => (nm.tensor, vec![input, r.konst, a]),
            };
            body.push(ins(opcode, Some(a), &srcs, Op::Plain, true));
        }
        // shared loads left over when there is no compute
        if let Some(op) = &lds_op {
            while next_lds < r.m_shared {
                body.push(ins(
                    op,
                    Some(r.sslot(next_lds)),
                    &[0],
                    Op::SharedLoad { k: next_lds as u32 },
                    true,
                ));
                next_lds += 1;
            }
        }
    }

    /// The register a stored value comes from: a chain's accumulator, else a load's
    /// destination, else a shared load's, else the constant.
    fn result(&self, load_dsts: &[u16], g: u64) -> u16 {
        let r = &self.r;
        if self.n_compute > 0 {
            r.acc(g)
        } else if let Some(v) = value_of_load(load_dsts, g) {
            v
        } else if r.m_shared > 0 {
            r.sslot(g)
        } else {
            r.konst
        }
    }

    /// Sections 5 and 6 of the body: atomics, then global stores round-robin over streams.
    fn atomics_and_stores(&self, body: &mut Vec<TInst>, load_dsts: &[u16], n_load_streams: usize) {
        let (r, nm, spec) = (&self.r, self.nm, self.spec);
        // 5. atomics
        if let (Some(at), Some(ap)) = (&spec.atomics, r.atom_ptr) {
            for a in 0..at.count {
                let v = self.result(load_dsts, a as u64);
                match at.op {
                    AtomicOp::Red => {
                        body.push(ins(nm.red, None, &[ap, v], Op::Atomic { k: a }, true))
                    }
                    AtomicOp::Atom => body.push(ins(
                        nm.atom,
                        Some(r.atom_reg),
                        &[ap, v],
                        Op::Atomic { k: a },
                        true,
                    )),
                }
            }
        }
        // 6. global stores, round-robin over streams
        {
            let maxc = spec.stores.iter().map(|a| a.count).max().unwrap_or(0);
            let atom_used = spec
                .atomics
                .as_ref()
                .is_some_and(|a| a.op == AtomicOp::Atom);
            let mut g: u64 = 0;
            for kx in 0..maxc {
                for (si, a) in spec.stores.iter().enumerate() {
                    if kx >= a.count {
                        continue;
                    }
                    let opcode = format!("{}{}{}", nm.stg, width_token(a.width as u64), nm.sys);
                    let v = if g == 0 && atom_used {
                        r.atom_reg
                    } else {
                        self.result(load_dsts, g)
                    };
                    body.push(ins(
                        opcode,
                        None,
                        &[r.store_ptr[si], v],
                        Op::Global {
                            acc: (n_load_streams + si) as u16,
                            k: kx,
                        },
                        true,
                    ));
                    g += 1;
                }
            }
        }
    }

    fn epilogue(&self) -> Vec<TInst> {
        let (r, nm, bd) = (&self.r, self.nm, &self.spec.body);
        let mut epi: Vec<TInst> = Vec::new();
        if let Some(pp) = r.post_ptr {
            let op = format!("{}{}", nm.stg, nm.sys);
            for p in 0..bd.post_stores {
                let v = if self.n_compute > 0 {
                    r.acc(p as u64)
                } else {
                    r.konst
                };
                epi.push(ins(&op, None, &[pp, v], Op::PostStore { p }, false));
            }
        }
        epi.push(ins("EXIT", None, &[], Op::Plain, false));
        epi
    }
}

fn key_of(table: &str, i: usize, n: usize) -> String {
    if n == 1 {
        table.to_string()
    } else {
        format!("{table}[{i}]")
    }
}
