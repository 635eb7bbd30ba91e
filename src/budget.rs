//! The process's memory budget (`--max-mem`, default half of physical memory or of the address-space limit): what every
//! engine run's estimated state (`engine::footprint`) and every input file read whole
//! (`infile`, `trace::input`) is checked against. One setting for the process, made once by
//! the CLI before any work starts; a library user who never sets it gets the default.

use std::sync::atomic::{AtomicU64, Ordering};

/// The budget set by `--max-mem` (0: the default, half of physical memory).
static BUDGET: AtomicU64 = AtomicU64::new(0);

/// Sets the memory budget for every engine run of this process (0: the default).
pub fn set_budget(bytes: u64) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// Physical memory of the machine, if the OS says.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf only reads system configuration.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

/// The process's address-space limit (`ulimit -v`, `RLIMIT_AS`), when it has one.
pub fn address_space_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// The budget in force: `--max-mem`, or half of physical memory (4 GiB if unknown) and
/// at most half of the address-space limit when the process has one (so a run under
/// `ulimit -v` is refused with the estimate, not aborted by a failed allocation).
pub fn budget() -> u64 {
    match BUDGET.load(Ordering::Relaxed) {
        0 => {
            let phys = physical_memory().map_or(4 << 30, |m| m / 2);
            address_space_limit().map_or(phys, |l| phys.min(l / 2))
        }
        b => b,
    }
}

/// A size for messages: MiB below 1 GiB, else GiB, one decimal.
pub fn human(b: u64) -> String {
    let mib = b as f64 / (1u64 << 20) as f64;
    if mib < 1024.0 {
        format!("{mib:.1} MiB")
    } else {
        format!("{:.1} GiB", mib / 1024.0)
    }
}
