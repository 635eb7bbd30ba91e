//! Helpers for the engine integration tests (`tests/engine/`): small GPU models, hand-built
//! in-memory kernels with exactly known instruction streams and addresses, and controllers
//! built from closures.

use std::collections::HashMap;
use std::sync::Arc;

use gpumodel::arch::GpuSpec;
use gpumodel::engine::{
    Action, AppSpec, Controller, Hook, Placement, RunConfig, RunMode, RunStats, View,
};
use gpumodel::trace::inst::{
    flags, reg, width_from_opcode, DynInst, KernelInfo, StaticInst, StaticTable,
};
use gpumodel::trace::isa::{classify, IsaGen};
use gpumodel::trace::source::MemCta;
use gpumodel::trace::{KernelSource, MemKernel};

/// Base of the global buffers the kernels below touch (any 256 MiB-aligned address works).
pub const BUF: u64 = 0x7f20_0000_0000;
/// Distance between the buffers of different kernels/apps.
pub const BUF_STRIDE: u64 = 1 << 30;

/// The QV100 model shrunk to `sms` SMs and `channels` DRAM channels (one HBM stack), so a
/// test runs in milliseconds. Everything else (latencies, timing, cache geometry) is QV100,
/// but with no kernel launch latency and no address translation (like the Accel-Sim
/// reference runs: the tests' exact figures count the kernels' own cycles and accesses;
/// `tests/translation.rs` tests translation on its own).
pub fn tiny(sms: u32, channels: u32) -> GpuSpec {
    tiny_with(sms, channels, &[])
}

pub fn tiny_with(sms: u32, channels: u32, extra: &[&str]) -> GpuSpec {
    let mut sets = vec![
        format!("sm.count={sms}"),
        format!("dram.channels={channels}"),
        "dram.stacks=1".to_string(),
        "launch.kernel_latency=0".to_string(),
        "translation.enabled=false".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    GpuSpec::builtin("qv100")
        .expect("qv100")
        .with_overrides(&sets)
        .unwrap_or_else(|e| panic!("overrides {sets:?}: {e}"))
}

/// `R<n>`.
pub fn r(n: u16) -> u16 {
    reg::encode(reg::KIND_R, n)
}

/// 32 lanes reading consecutive 4-byte words from `base` (one 128-byte line when aligned).
pub fn coalesced(base: u64) -> Vec<u64> {
    (0..32).map(|l| base + 4 * l).collect()
}

/// 32 lanes all reading the same word: one 32-byte sector.
pub fn one_sector(addr: u64) -> Vec<u64> {
    vec![addr; 32]
}

/// Builds a [`MemKernel`] warp by warp. Static instructions are interned by
/// (opcode, destination, sources), PCs in order of first use.
pub struct KernelBuilder {
    info: KernelInfo,
    table: StaticTable,
    keys: HashMap<(String, u16, Vec<u16>), u32>,
    ctas: Vec<MemCta>,
    warps: Vec<Vec<DynInst>>,
    cur: Vec<DynInst>,
}

impl KernelBuilder {
    /// A kernel of CTAs of `threads` threads using `regs` registers per thread and `smem`
    /// bytes of shared memory per CTA.
    pub fn new(name: &str, threads: u32, regs: u32, smem: u32) -> KernelBuilder {
        KernelBuilder {
            info: KernelInfo {
                name: name.to_string(),
                id: 1,
                grid: [0, 1, 1],
                block: [threads, 1, 1],
                shmem: smem,
                nregs: regs,
                binary_version: 70,
                origin: "tests/common/engine_kit.rs".into(),
                ..Default::default()
            },
            table: StaticTable::default(),
            keys: HashMap::new(),
            ctas: Vec::new(),
            warps: Vec::new(),
            cur: Vec::new(),
        }
    }

    fn sidx(&mut self, op: &str, dst: u16, srcs: &[u16]) -> u32 {
        let key = (op.to_string(), dst, srcs.to_vec());
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        let class = classify(op, IsaGen::Volta).unwrap_or_else(|| panic!("opcode {op}"));
        let has_mem = class.mem_op != gpumodel::trace::MemOp::None;
        let mut src = [reg::NONE; 6];
        src[..srcs.len()].copy_from_slice(srcs);
        let i = self.table.insts.len() as u32;
        let opcode = match self.table.opcodes.iter().position(|o| o == op) {
            Some(p) => p as u16,
            None => {
                self.table.opcodes.push(op.to_string());
                (self.table.opcodes.len() - 1) as u16
            }
        };
        self.table.insts.push(StaticInst {
            pc: 16 * i,
            imm: 0,
            imm2: 0,
            opcode,
            dst,
            src,
            unit: class.unit as u8,
            space: class.space as u8,
            mem_op: class.mem_op as u8,
            width: if has_mem { width_from_opcode(op) } else { 0 },
            flags: class.flags | if has_mem { flags::HAS_MEM } else { 0 },
            nsrc: srcs.len() as u8,
            dst_regs: if dst != reg::NONE { 1 } else { 0 },
            _pad: 0,
        });
        self.keys.insert(key, i);
        i
    }

    /// Appends an instruction to the current warp; `addrs` are the active lanes' addresses
    /// of a memory instruction (empty: full mask, no memory).
    pub fn inst(&mut self, op: &str, dst: u16, srcs: &[u16], addrs: &[u64]) -> &mut Self {
        let sidx = self.sidx(op, dst, srcs);
        let mut d = DynInst {
            sidx,
            mask: u32::MAX,
            ..Default::default()
        };
        if !addrs.is_empty() {
            assert!(addrs.len() <= 32);
            d.n = addrs.len() as u8;
            d.mask = if addrs.len() == 32 {
                u32::MAX
            } else {
                (1u32 << addrs.len()) - 1
            };
            d.addrs[..addrs.len()].copy_from_slice(addrs);
        }
        self.cur.push(d);
        self
    }

    /// `LDG.E.SYS dst, [addr]` (4 bytes per lane).
    pub fn ldg(&mut self, dst: u16, addr: u16, addrs: &[u64]) -> &mut Self {
        self.inst("LDG.E.SYS", r(dst), &[r(addr)], addrs)
    }
    /// `STG.E.SYS [addr], val`.
    pub fn stg(&mut self, addr: u16, val: u16, addrs: &[u64]) -> &mut Self {
        self.inst("STG.E.SYS", reg::NONE, &[r(addr), r(val)], addrs)
    }
    /// `FFMA dst, a, b, c` (FP32 pipe).
    pub fn ffma(&mut self, dst: u16, a: u16, b: u16, c: u16) -> &mut Self {
        self.inst("FFMA", r(dst), &[r(a), r(b), r(c)], &[])
    }
    /// `IADD3 dst, a, b, RZ` (INT pipe).
    pub fn iadd(&mut self, dst: u16, a: u16, b: u16) -> &mut Self {
        self.inst("IADD3", r(dst), &[r(a), r(b)], &[])
    }
    /// `MUFU.EX2 dst, a` (SFU).
    pub fn mufu(&mut self, dst: u16, a: u16) -> &mut Self {
        self.inst("MUFU.EX2", r(dst), &[r(a)], &[])
    }
    /// Ends the current warp with `EXIT`.
    pub fn end_warp(&mut self) -> &mut Self {
        self.inst("EXIT", reg::NONE, &[], &[]);
        self.warps.push(std::mem::take(&mut self.cur));
        self
    }
    /// A warp without any instruction (not even `EXIT`).
    pub fn empty_warp(&mut self) -> &mut Self {
        assert!(self.cur.is_empty(), "unfinished warp");
        self.warps.push(Vec::new());
        self
    }
    /// Ends the current CTA (its warps are those ended since the last call).
    pub fn end_cta(&mut self) -> &mut Self {
        let id = [self.ctas.len() as u32, 0, 0];
        let warps = std::mem::take(&mut self.warps);
        assert_eq!(
            warps.len() as u32,
            self.info.block[0].div_ceil(32),
            "a CTA needs one stream per warp of the block"
        );
        self.ctas.push(MemCta { id, warps });
        self
    }
    pub fn build(&mut self) -> Arc<dyn KernelSource> {
        assert!(
            self.cur.is_empty() && self.warps.is_empty(),
            "unfinished warp/CTA"
        );
        let mut info = self.info.clone();
        info.grid = [self.ctas.len() as u32, 1, 1];
        Arc::new(MemKernel {
            info,
            statics: self.table.clone(),
            ctas: std::mem::take(&mut self.ctas),
        })
    }
}

/// Reads registers `R<first>..R<first+n>` (one FFMA each into R200), so the warp's EXIT
/// comes after every load into them has returned, as in a real kernel that uses its data.
pub fn consume(k: &mut KernelBuilder, first: u16, n: u16) {
    for i in 0..n {
        k.ffma(200, first + i, first + i, 200);
    }
}

/// One CTA of one warp running `body`.
pub fn single_warp(name: &str, body: impl FnOnce(&mut KernelBuilder)) -> Arc<dyn KernelSource> {
    let mut k = KernelBuilder::new(name, 32, 32, 0);
    body(&mut k);
    k.end_warp().end_cta().build()
}

/// Grid-stride streaming reads: `ctas` CTAs of `warps` warps; warp `gw` of `W` issues
/// `loads` coalesced 128-byte loads, load `j` at line `j·W + gw` of a buffer at `base`.
/// Destinations rotate over 4 registers, so a warp keeps up to 4 loads in flight; the
/// last four are consumed before EXIT.
pub fn stream(name: &str, ctas: u32, warps: u32, loads: u32, base: u64) -> Arc<dyn KernelSource> {
    let mut k = KernelBuilder::new(name, warps * 32, 32, 0);
    let total = (ctas * warps) as u64;
    for c in 0..ctas {
        for w in 0..warps {
            let gw = (c * warps + w) as u64;
            for j in 0..loads as u64 {
                k.ldg(
                    2 + (j % 4) as u16,
                    0,
                    &coalesced(base + (j * total + gw) * 128),
                );
            }
            consume(&mut k, 2, 4);
            k.end_warp();
        }
        k.end_cta();
    }
    k.build()
}

/// Compute kernel: every warp runs `n` instructions in `chains` independent dependency
/// chains (instruction `i` depends on instruction `i - chains`). `mix`: `"ffma"` (FP32
/// only), `"ffma+int"` (FFMA and IADD3 alternating, two pipes), `"sfu"` (MUFU only).
pub fn compute(
    name: &str,
    ctas: u32,
    warps: u32,
    n: u32,
    chains: u16,
    mix: &str,
) -> Arc<dyn KernelSource> {
    let mut k = KernelBuilder::new(name, warps * 32, 32, 0);
    for _ in 0..ctas {
        for _ in 0..warps {
            for i in 0..n {
                let c = (i % chains as u32) as u16;
                let d = 2 + c;
                match mix {
                    "ffma" => k.ffma(d, d, 20, d),
                    "sfu" => k.mufu(d, d),
                    "ffma+int" => {
                        if c.is_multiple_of(2) {
                            k.ffma(d, d, 20, d)
                        } else {
                            k.iadd(d, d, 20)
                        }
                    }
                    _ => panic!("mix {mix}"),
                };
            }
            k.end_warp();
        }
        k.end_cta();
    }
    k.build()
}

/// L1-resident kernel: each CTA sweeps its own `ws` bytes at `base + cta·ws` `passes`
/// times, its warps taking interleaved 128-byte lines (warp `w` reads lines `w, w+W, ...`).
/// Up to 4 loads per warp in flight; the last ones are consumed before EXIT.
pub fn sweep(
    name: &str,
    ctas: u32,
    warps: u32,
    ws: u64,
    passes: u32,
    base: u64,
) -> Arc<dyn KernelSource> {
    let mut k = KernelBuilder::new(name, warps * 32, 32, 0);
    let lines = ws / 128;
    for c in 0..ctas as u64 {
        for w in 0..warps as u64 {
            for _ in 0..passes {
                let mut l = w;
                let mut j = 0u16;
                while l < lines {
                    let d = 2 + j % 4;
                    k.ldg(d, 0, &coalesced(base + c * ws + l * 128));
                    l += warps as u64;
                    j += 1;
                }
            }
            consume(&mut k, 2, 4);
            k.end_warp();
        }
        k.end_cta();
    }
    k.build()
}

/// An application of one or more kernels arriving at 0.
pub fn app(name: &str, kernels: Vec<Arc<dyn KernelSource>>) -> AppSpec {
    AppSpec::new(name, kernels)
}

/// Completion run with Left-Over placement.
pub fn completion(apps: usize) -> RunConfig {
    RunConfig::completion(apps)
}

pub fn run(spec: &GpuSpec, apps: &[AppSpec], cfg: &RunConfig) -> RunStats {
    gpumodel::engine::run_static(spec, apps, cfg).unwrap_or_else(|e| panic!("engine run: {e}"))
}

pub fn run_ctl(
    spec: &GpuSpec,
    apps: &[AppSpec],
    cfg: &RunConfig,
    ctl: &mut dyn Controller,
) -> RunStats {
    gpumodel::engine::run(spec, apps, cfg, ctl).unwrap_or_else(|e| panic!("engine run: {e}"))
}

/// Runs one app alone (Left-Over, spread like Accel-Sim) to completion.
pub fn alone(spec: &GpuSpec, a: &AppSpec) -> RunStats {
    run(spec, std::slice::from_ref(a), &completion(1))
}

/// A controller from a closure, with an optional epoch.
pub struct FnCtl<F: FnMut(Hook, &View, &mut Vec<Action>)> {
    pub epoch: Option<u64>,
    pub f: F,
}

impl<F: FnMut(Hook, &View, &mut Vec<Action>)> Controller for FnCtl<F> {
    fn epoch(&self) -> Option<u64> {
        self.epoch
    }
    fn on_hook(&mut self, hook: Hook, view: &View, actions: &mut Vec<Action>) {
        (self.f)(hook, view, actions)
    }
}

pub fn ctl<F: FnMut(Hook, &View, &mut Vec<Action>)>(epoch: Option<u64>, f: F) -> FnCtl<F> {
    FnCtl { epoch, f }
}

/// Placement with every app unconstrained and the given order.
pub fn placement(apps: usize, order: gpumodel::engine::DispatchOrder) -> Placement {
    let mut p = Placement::left_over(apps);
    p.order = order;
    p
}

pub fn cfg_with(mode: RunMode, placement: Placement) -> RunConfig {
    RunConfig {
        mode,
        placement,
        sample_every: 0,
        max_cycles: 200_000_000,
        fast_forward: None,
    }
}

/// Peak DRAM bytes per core cycle of `spec`.
pub fn peak_bytes_per_cycle(spec: &GpuSpec) -> f64 {
    spec.dram.peak_bytes_per_sec() as f64 / spec.clocks.core.hz() as f64
}

/// `c` cycles of a clock of `from_hz` in core cycles of `spec`, rounded up.
pub fn to_core(spec: &GpuSpec, from_hz: u64, c: u64) -> u64 {
    (c as u128 * spec.clocks.core.hz() as u128).div_ceil(from_hz as u128) as u64
}
