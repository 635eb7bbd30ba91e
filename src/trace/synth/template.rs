//! The instruction template of a synthetic kernel: register allocation across the compute
//! chains and access streams ([`Regs`]) and [`Template`], which writes the prologue, the loop
//! body (global loads, the compute chains, atomics and stores) and the epilogue as
//! instructions before interning, one method per part. Also the two things a slot carries
//! into the tables that [`super::build`] returns: its [`Op`] and the shared-memory generator.

use super::names::{width_token, Names};
use super::spec::{AtomicOp, KernelSpec, Pattern};
use crate::trace::inst::{reg, Unit};

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

/// A template instruction before interning.
pub(super) struct TInst {
    pub(super) opcode: String,
    pub(super) dst: u16,
    pub(super) srcs: Vec<u16>,
    pub(super) op: Op,
    /// Counts toward the divergent region.
    work: bool,
    pub(super) divergent: bool,
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
pub(super) struct Template<'s> {
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
    pub(super) fn new(
        spec: &'s KernelSpec,
        nm: &'s Names,
        shared: Option<SharedGen>,
    ) -> Template<'s> {
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

    pub(super) fn prologue(&self) -> Vec<TInst> {
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
    pub(super) fn body(&self, n_load_streams: usize) -> Vec<TInst> {
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

    pub(super) fn epilogue(&self) -> Vec<TInst> {
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
