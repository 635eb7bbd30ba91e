//! The process's memory budget (`--max-mem`, default half of physical memory): what every
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

/// The budget in force: `--max-mem`, or half of physical memory (4 GiB if unknown).
pub fn budget() -> u64 {
    match BUDGET.load(Ordering::Relaxed) {
        0 => physical_memory().map_or(4 << 30, |m| m / 2),
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
