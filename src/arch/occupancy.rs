//! Occupancy calculator: how many CTAs of a kernel fit on one SM, and which resource binds.
//!
//! The limits are threads (CTA padded to whole warps), warps, CTA slots, registers (with the
//! model's allocation rule, see [`super::spec::RegFile`]) and shared memory (rounded to the
//! model's allocation unit plus any per-CTA reservation). With the CUDA rule
//! (`thread_granularity = 1`, `warp_alloc_unit = 256`, `partitions = 4`, shared unit 256 B or
//! 128 B) this is the CUDA occupancy calculator; with the GPGPU-Sim rule
//! (`thread_granularity = 4`, `warp_alloc_unit = 1`, `partitions = 1`, shared unit 1 B) it is
//! Accel-Sim's `shader_core_config::max_cta`.
//!
//! [`l1_split`] gives the adaptive L1D/shared carve-out of unified designs (Volta+).

use serde::{Deserialize, Serialize};

use super::load::round_up;
use super::spec::GpuSpec;
use super::units::Bytes;
use crate::error::Error;

/// A kernel's per-CTA resource footprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Launch {
    pub threads_per_cta: u32,
    pub regs_per_thread: u32,
    /// Static plus dynamic shared memory per CTA, bytes.
    pub smem_per_cta: u32,
}

impl Launch {
    pub fn new(threads_per_cta: u32, regs_per_thread: u32, smem_per_cta: u32) -> Launch {
        Launch {
            threads_per_cta,
            regs_per_thread,
            smem_per_cta,
        }
    }
}

/// A per-SM resource that can limit resident CTAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Threads,
    Warps,
    SharedMemory,
    Registers,
    CtaSlots,
}

impl Limiter {
    /// Order in which ties are reported (Accel-Sim's: threads, shmem, regs, CTA slots).
    pub const ORDER: [Limiter; 5] = [
        Limiter::Threads,
        Limiter::Warps,
        Limiter::SharedMemory,
        Limiter::Registers,
        Limiter::CtaSlots,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Threads => "threads",
            Limiter::Warps => "warps",
            Limiter::SharedMemory => "shared_memory",
            Limiter::Registers => "registers",
            Limiter::CtaSlots => "cta_slots",
        }
    }
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// CTAs per SM allowed by each resource alone. `None`: the kernel does not use the resource
/// (no registers, no shared memory and nothing reserved), so it imposes no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub threads: u32,
    pub warps: u32,
    pub cta_slots: u32,
    pub registers: Option<u32>,
    pub shared_memory: Option<u32>,
}

impl Limits {
    pub fn get(&self, l: Limiter) -> Option<u32> {
        match l {
            Limiter::Threads => Some(self.threads),
            Limiter::Warps => Some(self.warps),
            Limiter::CtaSlots => Some(self.cta_slots),
            Limiter::Registers => self.registers,
            Limiter::SharedMemory => self.shared_memory,
        }
    }
}

/// Result of [`occupancy`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Resident CTAs per SM (at least 1).
    pub ctas_per_sm: u32,
    /// The binding resource (first of [`Limiter::ORDER`] among `limited_by`).
    pub limiter: Limiter,
    /// Every resource whose limit equals `ctas_per_sm`. `Warps` is listed only when it binds
    /// and `Threads` does not (they coincide when threads per SM = warps × warp size).
    pub limited_by: Vec<Limiter>,
    pub limits: Limits,
    pub warps_per_cta: u32,
    /// Resident warps per SM at `ctas_per_sm`.
    pub warps_per_sm: u32,
    /// Resident threads per SM at `ctas_per_sm` (actual threads, not padded).
    pub threads_per_sm: u32,
    /// Registers charged per warp and per CTA by the allocation rule.
    pub regs_per_warp: u32,
    pub regs_per_cta: u32,
    pub regs_per_sm: u32,
    /// Shared memory charged per CTA (allocation unit and reservation applied) and per SM.
    pub smem_per_cta: u32,
    pub smem_per_sm: u32,
    /// `warps_per_sm / sm.max_warps`.
    pub warp_occupancy: f64,
}

fn too_big(spec: &GpuSpec, l: &Launch, what: String) -> Error {
    Error::Usage(format!(
        "kernel with {} threads/CTA, {} registers/thread and {} B shared memory/CTA cannot run on {}: {what}",
        l.threads_per_cta, l.regs_per_thread, l.smem_per_cta, spec.name
    ))
}

/// Maximum resident CTAs per SM for a kernel, and which resource limits it. Errors when not
/// even one CTA fits, naming the resource.
pub fn occupancy(spec: &GpuSpec, l: &Launch) -> Result<Occupancy, Error> {
    let sm = &spec.sm;
    let regs = &sm.registers;
    let shared = &sm.shared;
    if l.threads_per_cta == 0 {
        return Err(too_big(
            spec,
            l,
            "a CTA must have at least one thread".into(),
        ));
    }
    if l.threads_per_cta > sm.max_threads_per_cta {
        return Err(too_big(
            spec,
            l,
            format!(
                "at most {} threads per CTA are allowed",
                sm.max_threads_per_cta
            ),
        ));
    }
    if l.regs_per_thread > regs.max_per_thread {
        return Err(too_big(
            spec,
            l,
            format!(
                "at most {} registers per thread are allowed",
                regs.max_per_thread
            ),
        ));
    }
    let ws = sm.warp_size.max(1) as u64;
    let warps_per_cta = (l.threads_per_cta as u64).div_ceil(ws);
    let padded = warps_per_cta * ws;

    let threads_limit = (sm.max_threads as u64 / padded) as u32;
    let warps_limit = (sm.max_warps as u64 / warps_per_cta) as u32;
    let cta_limit = sm.max_ctas;

    // Registers: allocated per warp, within `partitions` slices of the register file.
    let rpw = spec.regs_per_warp(l.regs_per_thread);
    let regs_per_cta = rpw * warps_per_cta;
    let regs_limit = if rpw == 0 {
        None
    } else {
        let parts = regs.partitions.max(1) as u64;
        // The hardware check assumes the CTA's warps spread over all partitions.
        let assumed = rpw * round_up(warps_per_cta, parts);
        if regs_per_cta > regs.per_cta as u64 || assumed > regs.per_cta as u64 {
            return Err(too_big(
                spec,
                l,
                format!(
                    "a CTA needs {} registers ({} per warp x {} warps), more than the {} allowed per CTA",
                    regs_per_cta.max(assumed),
                    rpw,
                    warps_per_cta,
                    regs.per_cta
                ),
            ));
        }
        let warps_per_part = (regs.per_sm as u64 / parts) / rpw;
        Some(((warps_per_part * parts) / warps_per_cta) as u32)
    };

    // Shared memory.
    let smem_rounded = round_up(l.smem_per_cta as u64, shared.alloc_unit.0.max(1));
    if smem_rounded > shared.per_cta.0 {
        return Err(too_big(
            spec,
            l,
            format!(
                "it needs {} of shared memory per CTA, more than the {} allowed",
                Bytes(smem_rounded),
                shared.per_cta
            ),
        ));
    }
    let smem_alloc = spec.smem_per_cta_allocated(l.smem_per_cta as u64);
    let smem_limit = if l.smem_per_cta == 0 && smem_alloc == 0 {
        None
    } else {
        Some((shared.per_sm.0 / smem_alloc.max(1)).min(u32::MAX as u64) as u32)
    };

    let limits = Limits {
        threads: threads_limit,
        warps: warps_limit,
        cta_slots: cta_limit,
        registers: regs_limit,
        shared_memory: smem_limit,
    };
    let ctas = Limiter::ORDER
        .iter()
        .filter_map(|&k| limits.get(k))
        .min()
        .unwrap_or(0);
    let mut limited_by: Vec<Limiter> = Limiter::ORDER
        .iter()
        .copied()
        .filter(|&k| limits.get(k) == Some(ctas))
        .collect();
    if limited_by.contains(&Limiter::Threads) {
        limited_by.retain(|&k| k != Limiter::Warps);
    }
    let limiter = limited_by.first().copied().unwrap_or(Limiter::Threads);
    if ctas == 0 {
        let why = match limiter {
            Limiter::Threads => format!(
                "one CTA ({} threads as {} warps) exceeds the {} threads of an SM",
                l.threads_per_cta, warps_per_cta, sm.max_threads
            ),
            Limiter::Warps => format!(
                "one CTA ({warps_per_cta} warps) exceeds the {} warps of an SM",
                sm.max_warps
            ),
            Limiter::Registers => format!(
                "one CTA needs {} registers ({} per warp), more than the register file allows ({} per SM in {} partitions)",
                regs_per_cta, rpw, regs.per_sm, regs.partitions
            ),
            Limiter::SharedMemory => format!(
                "one CTA needs {} of shared memory, more than the {} of an SM",
                Bytes(smem_alloc),
                shared.per_sm
            ),
            Limiter::CtaSlots => "the SM has no CTA slots".to_string(),
        };
        return Err(too_big(spec, l, why));
    }
    let warps_per_sm = ctas as u64 * warps_per_cta;
    Ok(Occupancy {
        ctas_per_sm: ctas,
        limiter,
        limited_by,
        limits,
        warps_per_cta: warps_per_cta as u32,
        warps_per_sm: warps_per_sm as u32,
        threads_per_sm: (ctas as u64 * l.threads_per_cta as u64) as u32,
        regs_per_warp: rpw as u32,
        regs_per_cta: regs_per_cta as u32,
        regs_per_sm: (regs_per_cta * ctas as u64) as u32,
        smem_per_cta: smem_alloc as u32,
        smem_per_sm: (smem_alloc * ctas as u64) as u32,
        warp_occupancy: warps_per_sm as f64 / sm.max_warps.max(1) as f64,
    })
}

/// Accel-Sim's rule for a kernel running alone: when the grid is too small to fill every SM
/// at the resource limit, CTAs are spread evenly, `ceil(grid / SMs)` per SM.
pub fn alone_resident_ctas(ctas_per_sm: u32, grid_ctas: u64, sms: u32) -> u32 {
    let sms = sms.max(1) as u64;
    if grid_ctas < ctas_per_sm as u64 * sms {
        grid_ctas.div_ceil(sms).min(ctas_per_sm as u64) as u32
    } else {
        ctas_per_sm
    }
}

/// How a unified L1D/shared array is split for a given shared-memory use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct L1Split {
    /// Shared-memory carve-out (for dedicated designs: all of `sm.shared.per_sm`).
    pub shared: Bytes,
    /// L1D capacity left.
    pub l1d: Bytes,
    /// L1D ways at that capacity (sets stay fixed).
    pub l1d_assoc: u32,
}

/// The L1D/shared split when the CTAs resident on one SM use `resident_smem` bytes of shared
/// memory in total: the smallest carve-out option that holds it, the L1D getting the rest of
/// the unified array (e.g. qv100: 2 CTAs × 10 KiB → 32 KiB carve-out → 96 KiB L1D). For a
/// dedicated design the L1D is fixed. Errors when the shared memory does not fit.
pub fn l1_split(spec: &GpuSpec, resident_smem: u64) -> Result<L1Split, Error> {
    let l1 = &spec.l1d;
    let per_sm = spec.sm.shared.per_sm;
    if !l1.is_unified() {
        if resident_smem > per_sm.0 {
            return Err(Error::Usage(format!(
                "{} of resident shared memory exceeds the {per_sm} of an SM of {}",
                Bytes(resident_smem),
                spec.name
            )));
        }
        return Ok(L1Split {
            shared: per_sm,
            l1d: l1.size,
            l1d_assoc: l1.assoc,
        });
    }
    let carve = l1
        .carveout
        .iter()
        .copied()
        .find(|c| c.0 >= resident_smem)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} of resident shared memory exceeds the largest carve-out ({}) of {}",
                Bytes(resident_smem),
                l1.carveout.last().copied().unwrap_or_default(),
                spec.name
            ))
        })?;
    let left = l1.size.0.saturating_sub(carve.0);
    let set_bytes = (l1.sets() * l1.line.0).max(1);
    Ok(L1Split {
        shared: carve,
        l1d: Bytes(left),
        l1d_assoc: (left / set_bytes) as u32,
    })
}

/// L1D capacity left for `resident_smem` bytes of shared memory in use (see [`l1_split`]).
pub fn l1d_size_for_shared(spec: &GpuSpec, resident_smem: u64) -> Result<Bytes, Error> {
    l1_split(spec, resident_smem).map(|s| s.l1d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lavamd_on_k40c() {
        let k40 = GpuSpec::builtin("k40c").expect("k40c");
        let o = occupancy(&k40, &Launch::new(128, 64, 7208)).expect("fits");
        assert_eq!(o.ctas_per_sm, 6);
        assert_eq!(o.limiter, Limiter::SharedMemory);
        assert_eq!(o.smem_per_cta, 7424);
        assert_eq!(o.limits.registers, Some(8));
    }

    #[test]
    fn does_not_fit() {
        let k40 = GpuSpec::builtin("k40c").expect("k40c");
        let e = occupancy(&k40, &Launch::new(1024, 255, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("registers"), "{e}");
        let e = occupancy(&k40, &Launch::new(128, 16, 60000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("shared memory"), "{e}");
        assert!(occupancy(&k40, &Launch::new(0, 16, 0)).is_err());
        assert!(occupancy(&k40, &Launch::new(2048, 16, 0)).is_err());
    }

    #[test]
    fn qv100_carveout() {
        let q = GpuSpec::builtin("qv100").expect("qv100");
        assert_eq!(l1d_size_for_shared(&q, 0).ok(), Some(Bytes::kib(128)));
        assert_eq!(
            l1d_size_for_shared(&q, 2 * 10240).ok(),
            Some(Bytes::kib(96))
        );
        assert_eq!(
            l1d_size_for_shared(&q, 8 * 1024).ok(),
            Some(Bytes::kib(120))
        );
        assert_eq!(
            l1d_size_for_shared(&q, 96 * 1024).ok(),
            Some(Bytes::kib(32))
        );
        assert!(l1d_size_for_shared(&q, 96 * 1024 + 1).is_err());
        let s = l1_split(&q, 20480).expect("fits");
        assert_eq!(s.l1d_assoc, 192);
    }

    #[test]
    fn alone_cap() {
        assert_eq!(alone_resident_ctas(4, 160, 80), 2);
        assert_eq!(alone_resident_ctas(6, 640, 80), 6);
        assert_eq!(alone_resident_ctas(16, 160, 80), 2);
        assert_eq!(alone_resident_ctas(8, 1, 80), 1);
    }
}
