//! Validation of a synthetic kernel spec: every rule names the dotted key it is about
//! (`body.trips`, `loads[1].footprint`), so errors can point at the line in the file.

use std::fmt;

use super::spec::*;
use crate::trace::isa::IsaGen;

/// A rule a spec breaks: the dotted key (`body.trips`, `loads[1].footprint`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub key: String,
    pub msg: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.msg)
    }
}

/// Largest per-trip count of one kind of instruction.
pub const MAX_COUNT: u32 = 100_000;
/// Largest trip count.
pub const MAX_TRIPS: u64 = 100_000_000;
/// Most global load (or store) streams.
pub const MAX_STREAMS: usize = 8;

fn err(key: impl Into<String>, msg: impl Into<String>) -> SpecError {
    SpecError {
        key: key.into(),
        msg: msg.into(),
    }
}

fn pow2_upto(v: u32, max: u32) -> bool {
    v.is_power_of_two() && v <= max
}

impl KernelSpec {
    /// The ISA generation of `kernel.binary_version` (valid after [`KernelSpec::validate`]).
    pub fn isa(&self) -> Option<IsaGen> {
        IsaGen::from_binary_version(self.kernel.binary_version)
    }

    /// Sectors per request of a stream after defaults.
    pub fn sectors_of(a: &AccessSpec) -> u32 {
        a.sectors_per_request.unwrap_or(match a.pattern {
            Pattern::Random => 32,
            _ => a.width.clamp(1, 32),
        })
    }

    /// Checks every value; the first broken rule is returned.
    pub fn validate(&self) -> Result<(), SpecError> {
        let gen = self.validate_kernel()?;
        self.validate_body(gen)?;
        for (table, list) in [("loads", &self.loads), ("stores", &self.stores)] {
            if list.len() > MAX_STREAMS {
                return Err(err(
                    table,
                    format!("at most {MAX_STREAMS} streams (got {})", list.len()),
                ));
            }
            for (i, a) in list.iter().enumerate() {
                let key = |f: &str| {
                    if list.len() == 1 {
                        format!("{table}.{f}")
                    } else {
                        format!("{table}[{i}].{f}")
                    }
                };
                self.validate_access(a, table == "loads", &key)?;
                if a.in_place {
                    self.validate_in_place(a, table == "loads", &key)?;
                }
            }
        }

        self.validate_extras()
    }

    /// The `[kernel]` table; returns its ISA generation.
    fn validate_kernel(&self) -> Result<IsaGen, SpecError> {
        let k = &self.kernel;
        if k.name.trim().is_empty() {
            return Err(err("kernel.name", "must not be empty"));
        }
        if k.name.len() > 512 || k.name.chars().any(|c| c.is_control()) {
            return Err(err(
                "kernel.name",
                "must be at most 512 characters on one line",
            ));
        }
        let g = k.grid.0;
        if g.contains(&0) {
            return Err(err("kernel.grid", "every dimension must be at least 1"));
        }
        if g[0] > i32::MAX as u32 || g[1] > 65535 || g[2] > 65535 {
            return Err(err(
                "kernel.grid",
                format!("{g:?} exceeds CUDA's limits (x ≤ 2147483647, y and z ≤ 65535)"),
            ));
        }
        if k.grid.product() > 1 << 31 {
            return Err(err(
                "kernel.grid",
                format!("{} CTAs is more than 2^31", k.grid.product()),
            ));
        }
        let b = k.block.0;
        if b.contains(&0) {
            return Err(err("kernel.block", "every dimension must be at least 1"));
        }
        if k.block.product() > 1024 || b[2] > 64 {
            return Err(err(
                "kernel.block",
                format!(
                    "{b:?} has {} threads; a CTA has at most 1024 (and z ≤ 64)",
                    k.block.product()
                ),
            ));
        }
        if !(1..=255).contains(&k.regs) {
            return Err(err(
                "kernel.regs",
                format!("must be 1..=255 registers per thread (got {})", k.regs),
            ));
        }
        if k.smem.0 > 256 << 10 {
            return Err(err(
                "kernel.smem",
                format!("{} per CTA is more than any GPU has (256 KiB)", k.smem),
            ));
        }
        let Some(gen) = self.isa() else {
            return Err(err(
                "kernel.binary_version",
                format!(
                    "{} is not a SASS version (10*major + minor: 35 Kepler, 60/61 Pascal, 70 Volta, 75 Turing, 80/86 Ampere, 90 Hopper)",
                    k.binary_version
                ),
            ));
        };
        if !k.address_offset.0.is_multiple_of(128) || k.address_offset.0 > 1 << 44 {
            return Err(err(
                "kernel.address_offset",
                "must be a multiple of 128 B and at most 16 TiB",
            ));
        }
        Ok(gen)
    }

    /// The `[body]` table (`gen`: the kernel's ISA generation).
    fn validate_body(&self, gen: IsaGen) -> Result<(), SpecError> {
        let k = &self.kernel;
        let bd = &self.body;
        if bd.trips.min == 0 {
            return Err(err("body.trips", "must be at least 1"));
        }
        if bd.trips.max < bd.trips.min {
            return Err(err(
                "body.trips",
                format!(
                    "range [{}, {}] has max below min",
                    bd.trips.min, bd.trips.max
                ),
            ));
        }
        if bd.trips.max > MAX_TRIPS {
            return Err(err(
                "body.trips",
                format!("{} trips is absurd (at most {MAX_TRIPS})", bd.trips.max),
            ));
        }
        if !(1..=32).contains(&bd.ilp) {
            return Err(err(
                "body.ilp",
                format!("must be 1..=32 chains (got {})", bd.ilp),
            ));
        }
        for (name, v) in [
            ("int", bd.int),
            ("fp32", bd.fp32),
            ("fp64", bd.fp64),
            ("sfu", bd.sfu),
            ("tensor", bd.tensor),
        ] {
            if v > MAX_COUNT {
                return Err(err(
                    format!("body.{name}"),
                    format!("{v} per trip is absurd (at most {MAX_COUNT})"),
                ));
            }
        }
        if bd.tensor > 0 && matches!(gen, IsaGen::Kepler | IsaGen::Pascal) {
            return Err(err(
                "body.tensor",
                format!(
                    "the {} ISA (binary_version {}) has no tensor cores; use 70 or newer",
                    gen.name(),
                    k.binary_version
                ),
            ));
        }
        if bd.barriers > 1024 {
            return Err(err("body.barriers", "at most 1024 per trip"));
        }
        if bd.pre_loads > 64 {
            return Err(err("body.pre_loads", "at most 64"));
        }
        if bd.post_stores > 64 {
            return Err(err("body.post_stores", "at most 64"));
        }
        Ok(())
    }

    /// The optional `[atomics]`, `[shared]` and `[divergence]` tables.
    fn validate_extras(&self) -> Result<(), SpecError> {
        let k = &self.kernel;
        if let Some(at) = &self.atomics {
            if !(1..=MAX_COUNT).contains(&at.count) {
                return Err(err(
                    "atomics.count",
                    format!("must be 1..={MAX_COUNT} per trip"),
                ));
            }
            if !(1..=1 << 28).contains(&at.targets) {
                return Err(err("atomics.targets", "must be 1..=268435456 words"));
            }
            if at.buffer.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err(err("atomics.buffer", "must not be empty"));
            }
        }

        if let Some(sh) = &self.shared {
            for (f, v) in [("loads", sh.loads), ("stores", sh.stores)] {
                if v > MAX_COUNT {
                    return Err(err(
                        format!("shared.{f}"),
                        format!("{v} per trip is absurd (at most {MAX_COUNT})"),
                    ));
                }
            }
            if ![4, 8, 16].contains(&sh.width) {
                return Err(err(
                    "shared.width",
                    format!("must be 4, 8 or 16 bytes (got {})", sh.width),
                ));
            }
            if sh.bank_conflicts != 0 && !pow2_upto(sh.bank_conflicts, 32) {
                return Err(err(
                    "shared.bank_conflicts",
                    format!(
                        "must be 0 (broadcast), 1, 2, 4, 8, 16 or 32 (got {})",
                        sh.bank_conflicts
                    ),
                ));
            }
            if sh.loads + sh.stores > 0 && k.smem.0 < sh.width as u64 {
                return Err(err(
                    "kernel.smem",
                    "shared loads/stores need shared memory: set kernel.smem",
                ));
            }
        }

        if let Some(dv) = &self.divergence {
            for (f, v, lo_open) in [
                ("fraction", dv.fraction, false),
                ("active", dv.active, true),
                ("rate", dv.rate, false),
            ] {
                let ok = v.is_finite() && v <= 1.0 && if lo_open { v > 0.0 } else { v >= 0.0 };
                if !ok {
                    return Err(err(
                        format!("divergence.{f}"),
                        format!(
                            "must be a fraction in {}0, 1] (got {v})",
                            if lo_open { "(" } else { "[" }
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The index of the load stream an `in_place` store writes back: the first `random`
    /// load with the store's `buffer` label.
    pub fn in_place_load(&self, store: &AccessSpec) -> Option<usize> {
        let label = store.buffer.as_deref()?;
        self.loads
            .iter()
            .position(|l| l.pattern == Pattern::Random && l.buffer.as_deref() == Some(label))
    }

    fn validate_in_place(
        &self,
        a: &AccessSpec,
        is_load: bool,
        key: &dyn Fn(&str) -> String,
    ) -> Result<(), SpecError> {
        if is_load {
            return Err(err(key("in_place"), "only stores can be in_place"));
        }
        if a.pattern != Pattern::Random {
            return Err(err(
                key("in_place"),
                "only a \"random\" store can be in_place (other patterns are deterministic: give the store the load's pattern and buffer)",
            ));
        }
        let Some(l) = self.in_place_load(a).map(|i| &self.loads[i]) else {
            return Err(err(
                key("in_place"),
                "needs a \"random\" load stream with the same `buffer` label, whose sectors it writes back",
            ));
        };
        if l.count != a.count
            || l.width != a.width
            || Self::sectors_of(l) != Self::sectors_of(a)
            || l.footprint != a.footprint
        {
            return Err(err(
                key("in_place"),
                "the load it writes back must have the same count, width, sectors_per_request and footprint",
            ));
        }
        Ok(())
    }

    /// The sizes that belong to one pattern: `stride` (`strided`, required), `step`
    /// (`stream`) and `working_set` (`reuse`, required), in that order; `span` is one
    /// request's bytes.
    fn validate_pattern_sizes(
        a: &AccessSpec,
        span: u64,
        key: &dyn Fn(&str) -> String,
    ) -> Result<(), SpecError> {
        // A size given to a pattern that does not take it.
        let foreign = |field: &str, owner: Pattern| {
            err(
                key(field),
                format!(
                    "only pattern \"{}\" takes a {field} (this is \"{}\")",
                    owner.name(),
                    a.pattern.name()
                ),
            )
        };
        match (a.pattern, a.stride) {
            (Pattern::Strided, None) => {
                return Err(err(key("stride"), "pattern \"strided\" needs a stride"))
            }
            (Pattern::Strided, Some(s))
                if s.0 < a.width as u64 || !s.0.is_multiple_of(a.width as u64) || s.0 > 1 << 30 =>
            {
                return Err(err(
                    key("stride"),
                    format!(
                        "must be a multiple of width ({} B), at most 1 GiB (got {s})",
                        a.width
                    ),
                ));
            }
            (Pattern::Strided, _) | (_, None) => {}
            _ => return Err(foreign("stride", Pattern::Strided)),
        }
        match (a.pattern, a.step) {
            (Pattern::Stream, Some(st))
                if st.0 < 32 || !st.0.is_multiple_of(32) || st.0 > 1 << 30 =>
            {
                return Err(err(
                    key("step"),
                    format!("must be a multiple of 32 B, at most 1 GiB (got {st})"),
                ));
            }
            (Pattern::Stream, _) | (_, None) => {}
            _ => return Err(foreign("step", Pattern::Stream)),
        }
        match (a.pattern, a.working_set) {
            (Pattern::Reuse, None) => Err(err(
                key("working_set"),
                "pattern \"reuse\" needs a working_set (bytes per CTA)",
            )),
            (Pattern::Reuse, Some(ws)) if ws.0 < span || ws.0 > 1 << 34 => Err(err(
                key("working_set"),
                format!(
                    "must be at least one request ({span} B = 32 B x sectors_per_request) and at most 16 GiB (got {ws})"
                ),
            )),
            (Pattern::Reuse, _) | (_, None) => Ok(()),
            _ => Err(foreign("working_set", Pattern::Reuse)),
        }
    }

    fn validate_access(
        &self,
        a: &AccessSpec,
        is_load: bool,
        key: &dyn Fn(&str) -> String,
    ) -> Result<(), SpecError> {
        if !(1..=MAX_COUNT).contains(&a.count) {
            return Err(err(
                key("count"),
                format!("must be 1..={MAX_COUNT} per trip (got {})", a.count),
            ));
        }
        if ![1, 2, 4, 8, 16].contains(&a.width) {
            return Err(err(
                key("width"),
                format!("must be 1, 2, 4, 8 or 16 bytes (got {})", a.width),
            ));
        }
        if let Some(s) = a.sectors_per_request {
            if !pow2_upto(s, 32) {
                return Err(err(
                    key("sectors_per_request"),
                    format!("must be 1, 2, 4, 8, 16 or 32 (got {s})"),
                ));
            }
            if a.pattern == Pattern::Strided {
                return Err(err(
                    key("sectors_per_request"),
                    "does not apply to pattern \"strided\" (its stride sets the coalescing)",
                ));
            }
        }
        let span = 32 * Self::sectors_of(a) as u64;
        Self::validate_pattern_sizes(a, span, key)?;
        if a.pattern == Pattern::Random && a.footprint.is_none() {
            return Err(err(
                key("footprint"),
                "pattern \"random\" needs a footprint",
            ));
        }
        if let Some(f) = a.footprint {
            let min = match a.pattern {
                Pattern::Reuse => a.working_set.map_or(span, |w| w.0),
                Pattern::Strided => a.width as u64,
                _ => span,
            };
            if f.0 < min.max(32) || f.0 > 1 << 42 {
                return Err(err(
                    key("footprint"),
                    format!(
                        "must be at least {} (one request, or the working set) and at most 4 TiB (got {f})",
                        Size(min.max(32))
                    ),
                ));
            }
        }
        if !is_load {
            if a.dependent {
                return Err(err(key("dependent"), "only loads can be dependent"));
            }
            if a.bypass_l1 {
                return Err(err(
                    key("bypass_l1"),
                    "only loads take bypass_l1 (stores write through anyway)",
                ));
            }
            if a.pattern == Pattern::Tiled {
                return Err(err(
                    key("pattern"),
                    "\"tiled\" is a load pattern; write the output with \"stream\"",
                ));
            }
        }
        if a.buffer.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(err(key("buffer"), "must not be empty"));
        }
        Ok(())
    }
}
