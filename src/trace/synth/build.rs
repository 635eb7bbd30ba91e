//! Turns a validated [`KernelSpec`] into the per-kernel tables the generator reads: the
//! static instruction table, the prologue / loop-body / epilogue templates (one slot per
//! static instruction, saying how its dynamic instances get masks and addresses), and the
//! compiled address generators. Built once per kernel; nothing here is per warp.

use super::names::{names, width_token};
use super::rng;
use super::spec::{AccessSpec, AtomicOp, KernelSpec, Pattern, SpecError, TripVariation};
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
    let kk = &spec.kernel;
    let bd = &spec.body;

    // ---- shape
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
    let geom = Geom {
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
    };

    // ---- buffers: label -> extent, in order of first use
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
        let steps = geom.trips_max.checked_mul(count);
        let too_big = || {
            serr(
                key.clone(),
                "addresses more than 2^62 bytes before wrapping: reduce trips, count or grid",
            )
        };
        let chk = |v: Option<u64>| v.filter(|&v| v <= MAX_EXTENT).ok_or_else(too_big);
        let fp_bytes = a.footprint.map(|f| f.0);
        let (geo, fp, extent, extent_b) = match a.pattern {
            Pattern::Stream => {
                let logical = chk(steps
                    .and_then(|st| st.checked_mul(total_warps))
                    .and_then(|v| v.checked_mul(span)))?;
                let fp = fp_bytes.map_or(0, |f| f / span * span);
                (Geo::Stream, fp, if fp > 0 { fp } else { logical }, 0)
            }
            Pattern::Strided => {
                let stride = a.stride.map_or(w, |s| s.0);
                let logical = chk(total_warps
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
                let tiles_y = ctas.div_ceil(tile_x);
                let per_tile = |h: u64| {
                    geom.trips_max
                        .checked_mul(h)
                        .and_then(|v| v.checked_mul(wpc))
                        .and_then(|v| v.checked_mul(span))
                };
                let ea = chk(per_tile(hc[0]).and_then(|v| v.checked_mul(tiles_y)))?;
                let eb = chk(per_tile(hc[1]).and_then(|v| v.checked_mul(tile_x)))?;
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
                let logical = chk(ctas.checked_mul(ws))?;
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
        };
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

    // ---- registers
    let mut next: u16 = 2;
    let mut pair = || {
        let p = next;
        next += 2;
        p
    };
    // pointer registers per load stream (two for tiled), per store stream, atomics, pre, post
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
    let acc = |c: u64| acc_base + 2 * (c % k_chains as u64) as u16;
    next += 2 * k_chains;
    let total_loads: u64 = spec.loads.iter().map(|a| a.count as u64).sum();
    let n_lslots = total_loads.min(16) as u16;
    let lslot_base = next;
    let lslot = |g: u64| lslot_base + 4 * (g % n_lslots.max(1) as u64) as u16;
    next += 4 * n_lslots;
    let m_shared = shared.map_or(0, |s| s.loads);
    let n_sslots = m_shared.min(8) as u16;
    let sslot_base = next;
    let sslot = |s: u64| sslot_base + 4 * (s % n_sslots.max(1) as u64) as u16;
    next += 4 * n_sslots;
    let atom_reg = next;
    next += 1;
    debug_assert!(next < 255);

    // ---- prologue
    let mut pro: Vec<TInst> = vec![
        ins("MOV", Some(1), &[], Op::Plain, false),
        ins("S2R", Some(0), &[], Op::Plain, false),
        ins("S2R", Some(3), &[], Op::Plain, false),
        ins("IMAD", Some(0), &[3, 0], Op::Plain, false),
        ins("ISETP.GE.AND", None, &[0], Op::Plain, false),
    ];
    let mut all_ptrs: Vec<u16> = Vec::new();
    for p in &load_ptr {
        all_ptrs.push(p[0]);
        if p[1] != p[0] {
            all_ptrs.push(p[1]);
        }
    }
    all_ptrs.extend(&store_ptr);
    all_ptrs.extend(atom_ptr);
    let body_ptrs = all_ptrs.clone();
    all_ptrs.extend(pre_ptr);
    all_ptrs.extend(post_ptr);
    for &p in &all_ptrs {
        pro.push(ins("IMAD.WIDE", Some(p), &[0], Op::Plain, false));
    }
    let n_inc = (bd.int as usize).min(body_ptrs.len());
    let int_chain = bd.int as u64 - n_inc as u64;
    let n_compute = int_chain + bd.fp32 as u64 + bd.fp64 as u64 + bd.sfu as u64 + bd.tensor as u64;
    if bd.pre_loads == 0 {
        pro.push(ins("MOV", Some(konst), &[], Op::Plain, false));
    }
    if n_compute > 0 {
        for c in 0..k_chains as u64 {
            pro.push(ins("MOV", Some(acc(c)), &[], Op::Plain, false));
        }
    }
    if let Some(pp) = pre_ptr {
        let op = format!("{}{}", nm.ldg, nm.sys);
        for p in 0..bd.pre_loads {
            let dst = if p == 0 { konst } else { acc(p as u64 - 1) };
            pro.push(ins(&op, Some(dst), &[pp], Op::PreLoad { p }, false));
        }
    }

    // ---- body
    let mut body: Vec<TInst> = Vec::new();
    // 1. global loads, round-robin over streams
    let mut load_dsts: Vec<u16> = Vec::new();
    {
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
                let dst = lslot(g);
                let src = if a.dependent {
                    if g == 0 {
                        lslot(total_loads - 1)
                    } else {
                        lslot(g - 1)
                    }
                } else if a.pattern == Pattern::Tiled {
                    load_ptr[si][(kx & 1) as usize]
                } else {
                    load_ptr[si][0]
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
    }
    let value_of_load = |g: u64| -> Option<u16> {
        (!load_dsts.is_empty()).then(|| load_dsts[(g % load_dsts.len() as u64) as usize])
    };
    // 2. shared stores
    if let Some(sh) = shared {
        let op = format!("STS{}", width_token(sh.width));
        for s in 0..sh.stores {
            let v = value_of_load(s).unwrap_or(if n_compute > 0 { acc(s) } else { konst });
            body.push(ins(
                &op,
                None,
                &[0, v],
                Op::SharedStore { k: s as u32 },
                true,
            ));
        }
    }
    // 3. barriers + compute + shared loads
    let nb = bd.barriers as u64;
    if nb >= 1 {
        body.push(ins("BAR.SYNC", None, &[], Op::Plain, false));
    }
    let units: [(Unit, u64); 5] = [
        (Unit::Int, int_chain),
        (Unit::Fp32, bd.fp32 as u64),
        (Unit::Fp64, bd.fp64 as u64),
        (Unit::Sfu, bd.sfu as u64),
        (Unit::Tensor, bd.tensor as u64),
    ];
    let mut emitted = [0u64; 5];
    let lds_op = shared.map(|s| format!("LDS.U{}", width_token(s.width)));
    let mut next_lds: u64 = 0;
    // further barriers at evenly spaced positions, the last after the compute section
    let mut next_bar: u64 = 1;
    for i in 0..=n_compute {
        while nb >= 2 && next_bar < nb && next_bar * n_compute / (nb - 1) == i {
            body.push(ins("BAR.SYNC", None, &[], Op::Plain, false));
            next_bar += 1;
        }
        if i == n_compute {
            break;
        }
        // shared loads placed before this compute instruction
        let mut fed_by: Option<u16> = None;
        if let Some(op) = &lds_op {
            while next_lds < m_shared && next_lds * n_compute / m_shared == i {
                let d = sslot(next_lds);
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
            let d = cnt as i128 * (i as i128 + 1) - emitted[u] as i128 * n_compute as i128;
            if d > best_d {
                best_d = d;
                best = u;
            }
        }
        let (unit, _) = units[best];
        let nth = emitted[best] as usize;
        emitted[best] += 1;
        let a = acc(i);
        let input = fed_by
            .or_else(|| {
                if i < total_loads {
                    value_of_load(i)
                } else {
                    None
                }
            })
            .unwrap_or(konst);
        let (opcode, srcs): (&str, Vec<u16>) = match unit {
            Unit::Int => {
                let o = nm.int[nth % 4];
                (o, vec![a, input, konst])
            }
            Unit::Fp32 => {
                let o = nm.fp32[nth % 8];
                if o == "FFMA" {
                    (o, vec![a, input, konst])
                } else {
                    (o, vec![a, input])
                }
            }
            Unit::Fp64 => {
                let o = nm.fp64[nth % 8];
                if o == "DFMA" {
                    (o, vec![a, input, konst])
                } else {
                    (o, vec![a, input])
                }
            }
            Unit::Sfu => {
                let o = nm.sfu[nth % 2];
                if input == konst {
                    (o, vec![a])
                } else {
                    (o, vec![a, input])
                }
            }
            _ => (nm.tensor, vec![input, konst, a]),
        };
        body.push(ins(opcode, Some(a), &srcs, Op::Plain, true));
    }
    // shared loads left over when there is no compute
    if let Some(op) = &lds_op {
        while next_lds < m_shared {
            body.push(ins(
                op,
                Some(sslot(next_lds)),
                &[0],
                Op::SharedLoad { k: next_lds as u32 },
                true,
            ));
            next_lds += 1;
        }
    }
    let result = |g: u64| -> u16 {
        if n_compute > 0 {
            acc(g)
        } else if let Some(v) = value_of_load(g) {
            v
        } else if m_shared > 0 {
            sslot(g)
        } else {
            konst
        }
    };
    // 5. atomics
    if let (Some(at), Some(ap)) = (&spec.atomics, atom_ptr) {
        for a in 0..at.count {
            let v = result(a as u64);
            match at.op {
                AtomicOp::Red => body.push(ins(nm.red, None, &[ap, v], Op::Atomic { k: a }, true)),
                AtomicOp::Atom => body.push(ins(
                    nm.atom,
                    Some(atom_reg),
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
                    atom_reg
                } else {
                    result(g)
                };
                body.push(ins(
                    opcode,
                    None,
                    &[store_ptr[si], v],
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
    // 7. pointer increments
    for &p in body_ptrs.iter().take(n_inc) {
        body.push(ins(nm.iadd, Some(p), &[p, konst], Op::Plain, false));
    }
    // divergent region: the tail of the work instructions, entered through one BRA
    if let Some(d) = &spec.divergence {
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
    body.push(ins(nm.iadd, Some(counter), &[counter], Op::Plain, false));
    body.push(ins("ISETP.GE.AND", None, &[counter], Op::Plain, false));
    body.push(ins("BRA", None, &[], Op::Plain, false));

    // ---- epilogue
    let mut epi: Vec<TInst> = Vec::new();
    if let Some(pp) = post_ptr {
        let op = format!("{}{}", nm.stg, nm.sys);
        for p in 0..bd.post_stores {
            let v = if n_compute > 0 { acc(p as u64) } else { konst };
            epi.push(ins(&op, None, &[pp, v], Op::PostStore { p }, false));
        }
    }
    epi.push(ins("EXIT", None, &[], Op::Plain, false));

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
                .map_err(|m| serr("kernel.binary_version", m))?;
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
        access,
        atomics,
        shared,
        div,
        pre_base: pre_buf.map_or(0, |b| bases[b]),
        post_base: post_buf.map_or(0, |b| bases[b]),
        geom,
    })
}

fn key_of(table: &str, i: usize, n: usize) -> String {
    if n == 1 {
        table.to_string()
    } else {
        format!("{table}[{i}]")
    }
}
