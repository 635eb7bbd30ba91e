//! GPU models (`models/*.toml`) and the occupancy calculator.
//!
//! This module owns the description of the simulated hardware, as plain data, and nothing
//! that runs: [`GpuSpec`] (SMs, clocks, schedulers, functional units, per-SM limits, L1D/L2,
//! NoC, DRAM, reconfiguration costs) loaded from TOML with unknown keys rejected, typed units
//! ([`units`]), cross-field validation and `--set key=value` overrides; and the occupancy
//! calculator ([`occupancy()`]) with CUDA's or GPGPU-Sim's allocation rules, plus the adaptive
//! L1D/shared carve-out. It imports nothing else of the crate except `error`.
//!
//! ```
//! use gpumodel::arch::{occupancy, GpuSpec, Launch, Limiter};
//! let k40 = GpuSpec::builtin("k40c").unwrap();
//! let o = occupancy(&k40, &Launch::new(128, 64, 7208)).unwrap(); // lavaMD (SiM Table 3)
//! assert_eq!((o.ctas_per_sm, o.limiter), (6, Limiter::SharedMemory));
//! ```

pub mod load;
pub mod occupancy;
pub mod spec;
pub mod units;
pub mod validate;

pub use occupancy::{
    alone_resident_ctas, l1_split, l1d_size_for_shared, occupancy, L1Split, Launch, Limiter,
    Limits, Occupancy,
};
pub use spec::{
    AddrMapping, Clocks, Dram, DramKind, DramScheduler, DramTiming, FuncUnit, FuncUnits, GpuSpec,
    L1d, LaunchCosts, MapScheme, MshrFull, Noc, NocKind, OperandCollector, PagePolicy,
    PartialWrite, Reconfig, RegFile, RequestUnit, SchedPolicy, SetAddress, SetIndex, SharedMem, Sm,
    SpecIssue, Translation, UnitKind, WritePolicy, L2,
};
pub use units::{Bytes, Cycles, Freq, Time};
