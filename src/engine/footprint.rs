//! The memory an engine run will hold, estimated from the model before anything is
//! allocated (SM warp and scheduler state, CTA slots, L1 and L2 tag arrays, DRAM banks,
//! bandwidth calendars), checked against the memory budget ([`crate::budget`]). A model over budget is bad input naming its biggest
//! contributors, never an allocation failure part-way through a run.

use crate::arch::GpuSpec;
use crate::budget::{budget, human};
use crate::error::{Error, Result};

/// One part of the estimate: what it is (with the model keys that size it) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub what: &'static str,
    pub bytes: u64,
}

/// The estimated state of one engine run of `apps` applications (`warp_slots` per SM),
/// largest part first.
pub fn estimate(spec: &GpuSpec, apps: u64, warp_slots: u64) -> Vec<Part> {
    let sms = spec.sm.count as u64;
    let (warps, scheds, ctas) = crate::engine::sm::state_bytes(
        warp_slots,
        spec.sm.schedulers as u64,
        spec.sm.max_ctas as u64 * apps.max(1),
    );
    let slices = spec.dram.channels as u64 * spec.l2.slices_per_channel as u64;
    let l1 = crate::mem::cache::state_bytes(spec.l1d.sets().max(1), spec.l1d.assoc as u64);
    let l2 = crate::mem::cache::state_bytes(spec.l2.sets().max(1), spec.l2.assoc as u64);
    // A bank: its queue, scheduler candidate and timing state (~128 B).
    let banks = spec.dram.channels as u64 * spec.dram.banks as u64 * 128;
    // Request and reply network ports (one calendar per input and output), the L2 data
    // ports and the atomic units, one byte a cycle of window each.
    let noc = 2 * 2 * (sms + slices) * crate::mem::noc::WINDOW as u64;
    let ports = slices * (crate::engine::memsys::PORT_WINDOW as u64 + (1 << 15));
    // Bounded queues hold a leave time (8 B) per entry: each SM's L1 miss queue, each
    // slice's input queue, and each crossbar port's buffer (request and reply networks).
    let queues = 8
        * (sms * spec.l1d.miss_queue as u64
            + slices * spec.l2.input_queue as u64
            + 2 * (sms + slices) * spec.noc.buffer as u64);
    // Translation: an L1 TLB per SM and the shared L2 TLB, 24 B an entry.
    let tr = &spec.translation;
    let tlbs = if tr.enabled {
        24 * (sms * tr.l1_entries as u64 + tr.l2_entries as u64)
    } else {
        0
    };
    let mut parts = vec![
        Part {
            what: "SM warp state (sm.count x sm.max_warps)",
            bytes: sms * warps,
        },
        Part {
            what: "SM schedulers (sm.count x sm.schedulers)",
            bytes: sms * scheds,
        },
        Part {
            what: "CTA slots (sm.count x sm.max_ctas x applications)",
            bytes: sms * ctas,
        },
        Part {
            what: "L1D tag arrays (sm.count x l1d.size / l1d.line)",
            bytes: sms * l1,
        },
        Part {
            what: "L2 tag arrays (dram.channels x l2.slices_per_channel x l2.size_per_slice / l2.line)",
            bytes: slices * l2,
        },
        Part {
            what: "DRAM banks (dram.channels x dram.banks)",
            bytes: banks,
        },
        Part {
            what: "interconnect and L2 port calendars (sm.count + L2 slices)",
            bytes: noc + ports,
        },
        Part {
            what: "bounded queues (l1d.miss_queue, l2.input_queue, noc.buffer)",
            bytes: queues,
        },
        Part {
            what: "TLBs (sm.count x translation.l1_entries + translation.l2_entries)",
            bytes: tlbs,
        },
    ];
    if let Some(oc) = spec
        .sm
        .operand_collector
        .as_ref()
        .filter(|o| o.write_back_conflicts)
    {
        parts.push(Part {
            what: "operand collector write-back rings (sm.count x sm.operand_collector.register_banks)",
            bytes: sms * crate::engine::sm::collector_bytes(oc.register_banks as u64),
        });
    }
    parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.what.cmp(b.what)));
    parts
}

/// Refuses a run whose estimated state, times the runs that may be in flight at once on
/// this thread pool, exceeds the budget: bad input naming the biggest parts.
pub fn check(spec: &GpuSpec, apps: u64, warp_slots: u64) -> Result<()> {
    let parts = estimate(spec, apps, warp_slots);
    let one: u64 = parts.iter().map(|p| p.bytes).sum();
    let concurrent = if rayon::current_thread_index().is_some() {
        rayon::current_num_threads() as u64
    } else {
        1
    };
    let need = one.saturating_mul(concurrent);
    let budget = budget();
    if need <= budget {
        return Ok(());
    }
    let top: Vec<String> = parts
        .iter()
        .take(3)
        .map(|p| format!("{} {}", p.what, human(p.bytes)))
        .collect();
    let runs = if concurrent > 1 {
        format!(" x {concurrent} runs in parallel (fewer with --threads)")
    } else {
        String::new()
    };
    Err(Error::Usage(format!(
        "model `{}` needs about {} per engine run{runs}, over the memory budget of {} \
         (--max-mem; default half of physical memory, or of `ulimit -v` when lower); biggest parts: {}",
        spec.name,
        human(one),
        human(budget),
        top.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_grows_with_the_model_and_names_the_biggest_part() {
        let spec = GpuSpec::resolve("qv100").unwrap();
        let small: u64 = estimate(&spec, 1, 64).iter().map(|p| p.bytes).sum();
        assert!(small > 1 << 20 && small < 1 << 30, "{small}");
        let big = spec
            .clone()
            .with_overrides(&["sm.count=4096".to_string()])
            .unwrap();
        let parts = estimate(&big, 1, 64);
        assert!(parts[0].what.starts_with("SM warp state"), "{parts:?}");
        let total: u64 = parts.iter().map(|p| p.bytes).sum();
        // 51× the SMs: the per-SM parts (most of the estimate) grow with them, the L2 and
        // DRAM side does not.
        assert!(total > 30 * small, "{total} vs {small}");
        // The collector's write-back rings (when on) grow with its banks (qv100: 16 a SM).
        let rings = |s: &GpuSpec| {
            estimate(s, 1, 64)
                .into_iter()
                .find(|p| p.what.starts_with("operand collector"))
                .map(|p| p.bytes)
        };
        let banks = spec
            .clone()
            .with_overrides(&[
                "sm.operand_collector.register_banks=256".to_string(),
                "sm.operand_collector.write_back_conflicts=true".to_string(),
            ])
            .unwrap();
        let on = spec
            .clone()
            .with_overrides(&["sm.operand_collector.write_back_conflicts=true".to_string()])
            .unwrap();
        assert_eq!(rings(&banks), rings(&on).map(|b| b * 16));
        let off = spec
            .clone()
            .with_overrides(&["sm.operand_collector.write_back_conflicts=false".to_string()])
            .unwrap();
        assert_eq!(rings(&off), None, "write-backs off: no rings");
        assert_eq!(rings(&spec), rings(&on), "on in qv100");
        assert_eq!(rings(&GpuSpec::resolve("fermi-ws").unwrap()), None);
        // The bounded queues are allocated at their depth: at their largest valid depths
        // on qv100 (80 SMs, 64 slices) they are the biggest part.
        let deep = spec
            .clone()
            .with_overrides(&[
                "l1d.miss_queue=1048576".to_string(),
                "l2.input_queue=1048576".to_string(),
                "noc.buffer=1048576".to_string(),
            ])
            .unwrap();
        let parts = estimate(&deep, 1, 64);
        assert!(parts[0].what.starts_with("bounded queues"), "{parts:?}");
        assert_eq!(parts[0].bytes, 8 * (1 << 20) * (80 + 64 + 2 * (80 + 64)));
    }
}
