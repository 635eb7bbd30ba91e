//! The synthetic kernel spec: the TOML file format (its serde types) and its parsing. The
//! format field by field, with an example, the memory patterns, how to encode a paper's
//! published characteristics, and the opcode spellings per ISA: docs/synth-spec.md.
//!
//! A spec describes one kernel as a *launch* (`[kernel]`), a *loop body* executed `trips`
//! times by every warp (`[body]`), and the *memory streams* the body touches (`[[loads]]`,
//! `[[stores]]`, `[atomics]`, `[shared]`), plus optional branch divergence (`[divergence]`).
//! All counts are warp instructions per loop trip (per warp). Nothing is stored per warp:
//! streams are generated on the fly from `(kernel.seed, CTA, warp)`, so the same spec
//! always yields the same kernel, bit for bit.
//!
//! Sizes are an integer number of bytes or a string with a unit (`"48 KiB"`, `"1.5 MiB"`).
//! Unknown keys are errors; every error names the file, the line and the key.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A whole spec file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Launch configuration and provenance.
    pub kernel: KernelSection,
    /// The loop body: compute mix, trips, ILP, barriers.
    #[serde(default)]
    pub body: BodySection,
    /// Global load streams: one `[loads]` table or several `[[loads]]`, each with its own
    /// count and pattern (at most 8).
    #[serde(default, deserialize_with = "one_or_many")]
    pub loads: Vec<AccessSpec>,
    /// Global store streams: `[stores]` or `[[stores]]` (at most 8).
    #[serde(default, deserialize_with = "one_or_many")]
    pub stores: Vec<AccessSpec>,
    /// Global atomics.
    #[serde(default)]
    pub atomics: Option<AtomicSpec>,
    /// Shared-memory loads and stores.
    #[serde(default)]
    pub shared: Option<SharedSpec>,
    /// Branch divergence.
    #[serde(default)]
    pub divergence: Option<DivergenceSpec>,
}

/// `[kernel]`: the launch.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSection {
    /// Kernel name (required; written as the trace's `-kernel name`).
    pub name: String,
    /// Provenance: where the numbers come from (free text, e.g.
    /// `"Warped-Slicer Table II: BLK, 95% regs, grid 480 x 128"`). Default empty.
    #[serde(default)]
    pub cite: String,
    /// Grid dimensions in CTAs: `480` or `[x, y, z]` (1 to 3 entries). Required.
    /// At most 2^31−1 in x, 65535 in y and z, 2^31 CTAs in all.
    pub grid: Dim3,
    /// CTA dimensions in threads: `256` or `[x, y, z]`; at most 1024 threads. Required.
    /// A CTA whose thread count is not a multiple of 32 has a partial last warp.
    pub block: Dim3,
    /// Registers per thread, 1..=255 (occupancy). Required. The generated code names the
    /// registers its chains need, which may be more or fewer than this.
    pub regs: u32,
    /// Static shared memory per CTA (size), at most 256 KiB. Default 0.
    #[serde(default)]
    pub smem: Size,
    /// Seed of every random choice (addresses, trip counts, masks). Default 1.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// SASS version `10·major + minor` (70 Volta, 75 Turing, 80 Ampere, 90 Hopper, 60/61
    /// Pascal, 35 Kepler). Picks the opcode spellings and the ISA table that classifies
    /// them. Default 70.
    #[serde(default = "default_binary_version")]
    pub binary_version: u32,
    /// Kernel id written in the trace header. Default 1.
    #[serde(default = "one_u32")]
    pub id: u32,
    /// Added to every global address (size; a multiple of 128 B), e.g. `"1 GiB"` to keep a
    /// second application's buffers apart from the first's. Default 0.
    #[serde(default)]
    pub address_offset: Size,
}

/// `[body]`: one loop trip, per warp. All counts default to 0.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BodySection {
    /// Loop trip count, 1..=10^8: `16`, or `[min, max]` for a count drawn uniformly per
    /// warp (or per CTA, see `trip_variation`) — load imbalance. Default 1.
    #[serde(default)]
    pub trips: Trips,
    /// What a `[min, max]` trip range varies over: `"warp"` (default) or `"cta"`.
    #[serde(default)]
    pub trip_variation: TripVariation,
    /// Independent dependency chains among the compute instructions, 1..=32. Compute
    /// instruction `i` of a trip reads and writes the accumulator of chain `i mod ilp`, so it
    /// depends on instruction `i − ilp` (dependency distance = `ilp`); chains carry over from
    /// trip to trip (exactly at distance `ilp` when the compute count per trip is a multiple
    /// of `ilp`). `ilp = 1` is one serial chain. Default 1.
    #[serde(default = "one_u32")]
    pub ilp: u32,
    /// Integer ALU instructions per trip (IMAD, IADD3, LOP3.LUT, SHF). The first ones, up to
    /// one per pointer, are the pointer increments at the end of the trip; the rest join
    /// the compute chains. Loop control adds 2 more (IADD3, ISETP) that are not counted
    /// here.
    #[serde(default)]
    pub int: u32,
    /// Single-precision instructions per trip (FFMA, FADD, FMUL).
    #[serde(default)]
    pub fp32: u32,
    /// Double-precision instructions per trip (DFMA, DADD, DMUL).
    #[serde(default)]
    pub fp64: u32,
    /// Special-function instructions per trip (MUFU.EX2, MUFU.RSQ).
    #[serde(default)]
    pub sfu: u32,
    /// Tensor-core instructions per trip (HMMA); Volta (70) and newer only.
    #[serde(default)]
    pub tensor: u32,
    /// `BAR.SYNC` per trip, at most 1024: the first after the shared stores, the others
    /// spread through the compute section, the last at its end (2 = the tiled-GEMM pair).
    #[serde(default)]
    pub barriers: u32,
    /// Coalesced 4-byte global loads before the loop (at most 64), e.g. the single input
    /// element of a compute-bound kernel; the first one feeds every compute chain.
    #[serde(default)]
    pub pre_loads: u32,
    /// Coalesced 4-byte global stores after the loop (at most 64) of the chains' results.
    #[serde(default)]
    pub post_stores: u32,
}

impl Default for BodySection {
    fn default() -> Self {
        BodySection {
            trips: Trips::default(),
            trip_variation: TripVariation::Warp,
            ilp: 1,
            int: 0,
            fp32: 0,
            fp64: 0,
            sfu: 0,
            tensor: 0,
            barriers: 0,
            pre_loads: 0,
            post_stores: 0,
        }
    }
}

/// What a trip-count range varies over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TripVariation {
    #[default]
    Warp,
    Cta,
}

/// Address pattern of a global memory stream (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    #[default]
    Stream,
    Strided,
    Random,
    Tiled,
    Reuse,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Stream => "stream",
            Pattern::Strided => "strided",
            Pattern::Random => "random",
            Pattern::Tiled => "tiled",
            Pattern::Reuse => "reuse",
        }
    }
}

/// `[[loads]]` / `[[stores]]`: one global memory stream.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// Instructions of this stream per trip, 1..=100000. Required.
    pub count: u32,
    /// `"stream"` (default), `"strided"`, `"random"`, `"tiled"` (loads only) or `"reuse"`.
    #[serde(default)]
    pub pattern: Pattern,
    /// Bytes per lane: 1, 2, 4 (default), 8 or 16 (`LDG.E.U8` … `LDG.E.128`).
    #[serde(default = "four")]
    pub width: u32,
    /// 32-byte sectors one full-warp request touches: 1, 2, 4, 8, 16 or 32 (coalescing).
    /// Default: `width` (fully coalesced) for stream/tiled/reuse, 32 for random; not
    /// used by strided.
    #[serde(default)]
    pub sectors_per_request: Option<u32>,
    /// Bytes the stream's addresses wrap around (size). Required for `random`.
    #[serde(default)]
    pub footprint: Option<Size>,
    /// `strided` only (required there): bytes between neighbouring lanes, a multiple of
    /// `width`, at most 1 GiB.
    #[serde(default)]
    pub stride: Option<Size>,
    /// `reuse` only (required there): bytes each CTA sweeps repeatedly.
    #[serde(default)]
    pub working_set: Option<Size>,
    /// `stream` only: bytes a warp's address moves from one access of the stream to its
    /// next, a multiple of 32 B, at most 1 GiB. Default: one request of every warp of the
    /// grid (a grid-stride loop). A loop over `a[(i + k*C) & mask]` is `step = C × width`
    /// with `footprint` = the masked size: its warps then never return to a line at the
    /// period a grid-stride sweep of that footprint would.
    #[serde(default)]
    pub step: Option<Size>,
    /// Loads only: the address comes from the value of the previous load of the trip (or,
    /// for the first load, of the previous trip): index→data indirection or pointer
    /// chasing. Default false.
    #[serde(default)]
    pub dependent: bool,
    /// Loads only: bypass the L1 (`.STRONG.GPU`, like `volatile` or `ld.cg`). Default false.
    #[serde(default)]
    pub bypass_l1: bool,
    /// Buffer label: streams with the same label share one buffer (e.g. an in-place update
    /// that loads and stores the same array). Default: a buffer of its own.
    #[serde(default)]
    pub buffer: Option<String>,
    /// Stores only, `random` only: write back exactly the sectors that the load stream with
    /// the same `buffer` read at the same trip and position, a read-modify-write such as
    /// GUPS's `t[x & mask] ^= x` (that load must be `random` with the same `count`, `width`,
    /// `sectors_per_request` and `footprint`). Default false: the store draws its own random
    /// sectors.
    #[serde(default)]
    pub in_place: bool,
}

/// Kind of global atomic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AtomicOp {
    /// `RED.E.ADD.F32` — reduction, no value returned.
    #[default]
    Red,
    /// `ATOMG.E.ADD` — atomic returning the old value (its register is used afterwards).
    Atom,
}

/// `[atomics]`: global atomics per trip.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AtomicSpec {
    /// Atomics per trip, 1..=100000. Required.
    pub count: u32,
    /// `"red"` (default) or `"atom"`.
    #[serde(default)]
    pub op: AtomicOp,
    /// Distinct 4-byte words the atomics hit, 1..=2^28 (fewer = more contention; a
    /// histogram's bin count). Each lane picks one at random. Default 1024.
    #[serde(default = "default_targets")]
    pub targets: u32,
    /// Warp-aggregated: only the first active lane issues the atomic. Default false.
    #[serde(default)]
    pub aggregated: bool,
    /// Buffer label (see `[[loads]]`).
    #[serde(default)]
    pub buffer: Option<String>,
}

/// `[shared]`: shared-memory traffic per trip (needs `kernel.smem > 0`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharedSpec {
    /// `LDS` per trip, spread through the compute section (each feeds the next compute
    /// instruction). Default 0.
    #[serde(default)]
    pub loads: u32,
    /// `STS` per trip, right after the global loads (storing their values). Default 0.
    #[serde(default)]
    pub stores: u32,
    /// Bytes per lane: 4 (default), 8 or 16.
    #[serde(default = "four")]
    pub width: u32,
    /// Bank-conflict degree: lanes are `width × bank_conflicts` bytes apart, so 1 (default)
    /// is conflict-free for 4-byte lanes and `n` gives an `n`-way conflict; 0 = every lane
    /// reads the same word (broadcast). One of 0, 1, 2, 4, 8, 16, 32.
    #[serde(default = "one_u32")]
    pub bank_conflicts: u32,
}

/// `[divergence]`: part of the body runs under a partial active mask.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DivergenceSpec {
    /// Fraction (0..=1) of the body's work instructions (loads, shared accesses, compute,
    /// atomics, stores; not barriers or loop control) inside the `if` region. The region
    /// is the tail of the work sequence (stores first, then atomics, compute, ...) and is
    /// entered through one extra `BRA` per trip. Default 1 (the whole body).
    #[serde(default = "one_f64")]
    pub fraction: f64,
    /// Probability (0 < p ≤ 1) that a lane executes the region when the branch diverges.
    /// Default 0.5.
    #[serde(default = "half_f64")]
    pub active: f64,
    /// Probability (0..=1) per warp and trip that the branch diverges at all (otherwise
    /// every lane executes the region). Default 1.
    #[serde(default = "one_f64")]
    pub rate: f64,
}

fn one_u64() -> u64 {
    1
}
fn one_u32() -> u32 {
    1
}
fn four() -> u32 {
    4
}
fn one_f64() -> f64 {
    1.0
}
fn half_f64() -> f64 {
    0.5
}
fn default_binary_version() -> u32 {
    70
}
fn default_targets() -> u32 {
    1024
}

// ---------------------------------------------------------------------------------------------
// Value types

/// A size in bytes: an integer, or a string with a unit (`"256 MiB"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

impl Size {
    /// Parses `"96 KiB"`, `"1.5 MiB"`, `"128 B"`, `"4096"`.
    fn parse(s: &str) -> Result<Size, String> {
        let t = s.trim();
        let end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(t.len());
        let (num, unit) = (t[..end].replace('_', ""), t[end..].trim());
        let scale: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" | "byte" | "bytes" => 1,
            "kib" | "kb" | "k" => 1 << 10,
            "mib" | "mb" | "m" => 1 << 20,
            "gib" | "gb" | "g" => 1 << 30,
            "tib" | "tb" | "t" => 1 << 40,
            _ => {
                return Err(format!(
                    "expected a size such as 4096, \"48 KiB\" or \"256 MiB\" (units B, KiB, MiB, GiB, TiB); got \"{s}\""
                ))
            }
        };
        let (ip, fp) = num.split_once('.').unwrap_or((&num, ""));
        if (ip.is_empty() && fp.is_empty())
            || !ip.bytes().all(|b| b.is_ascii_digit())
            || !fp.bytes().all(|b| b.is_ascii_digit())
            || fp.len() > 12
        {
            return Err(format!(
                "expected a size such as 4096, \"48 KiB\" or \"256 MiB\"; got \"{s}\""
            ));
        }
        let digits = format!("{ip}{fp}");
        let mant: u128 = digits
            .parse()
            .map_err(|_| format!("size \"{s}\" is too large"))?;
        let denom = 10u128.pow(fp.len() as u32);
        let v = mant
            .checked_mul(scale as u128)
            .ok_or_else(|| format!("size \"{s}\" is too large"))?;
        if v % denom != 0 {
            return Err(format!("size \"{s}\" is not a whole number of bytes"));
        }
        u64::try_from(v / denom)
            .map(Size)
            .map_err(|_| format!("size \"{s}\" is too large"))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (u, name) in [
            (1u64 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
        ] {
            if n >= u && n.is_multiple_of(u) {
                return write!(f, "{} {name}", n / u);
            }
        }
        write!(f, "{n} B")
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: bytes as an integer, or a string such as \"256 MiB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom(format!("a size cannot be negative (got {v})")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                Size::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Grid or block dimensions: an integer (1-D) or an array of 1 to 3 integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3(pub [u32; 3]);

impl Dim3 {
    pub fn product(&self) -> u64 {
        self.0.iter().map(|&v| v as u64).product()
    }
}

impl Serialize for Dim3 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Dim3 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Dim3;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a dimension: an integer, or an array [x], [x, y] or [x, y, z]")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dim3, E> {
                let x = u32::try_from(v).map_err(|_| {
                    E::custom(format!("a dimension must be 0..=4294967295 (got {v})"))
                })?;
                Ok(Dim3([x, 1, 1]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dim3, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Dim3, A::Error> {
                let mut out = [1u32; 3];
                let mut n = 0;
                while let Some(v) = seq.next_element::<i64>()? {
                    if n == 3 {
                        return Err(de::Error::custom(
                            "a dimension has at most 3 entries [x, y, z]",
                        ));
                    }
                    out[n] = u32::try_from(v).map_err(|_| {
                        de::Error::custom(format!("a dimension must be 0..=4294967295 (got {v})"))
                    })?;
                    n += 1;
                }
                if n == 0 {
                    return Err(de::Error::custom("a dimension array needs 1 to 3 entries"));
                }
                Ok(Dim3(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Loop trip count: a fixed count or an inclusive `[min, max]` range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Trips {
    pub min: u64,
    pub max: u64,
}

impl Default for Trips {
    fn default() -> Self {
        Trips { min: 1, max: 1 }
    }
}

impl Serialize for Trips {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.min == self.max {
            s.serialize_u64(self.min)
        } else {
            [self.min, self.max].serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Trips {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Trips;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trip count: an integer, or a range [min, max]")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Trips, E> {
                let n = u64::try_from(v)
                    .map_err(|_| E::custom(format!("a trip count cannot be negative (got {v})")))?;
                Ok(Trips { min: n, max: n })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Trips, E> {
                Ok(Trips { min: v, max: v })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Trips, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<i64>()? {
                    if v.len() == 2 {
                        return Err(de::Error::custom("a trip range is [min, max]: 2 entries"));
                    }
                    v.push(u64::try_from(x).map_err(|_| {
                        de::Error::custom(format!("a trip count cannot be negative (got {x})"))
                    })?);
                }
                match v[..] {
                    [a, b] => Ok(Trips { min: a, max: b }),
                    _ => Err(de::Error::custom("a trip range is [min, max]: 2 entries")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Accepts one table (`[loads]`) or an array of tables (`[[loads]]`).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AccessSpec>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<AccessSpec>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a table ([loads]) or an array of tables ([[loads]])")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            AccessSpec::deserialize(de::value::MapAccessDeserializer::new(map)).map(|a| vec![a])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some(a) = seq.next_element::<AccessSpec>()? {
                v.push(a);
            }
            Ok(v)
        }
    }
    d.deserialize_any(V)
}

// ---------------------------------------------------------------------------------------------
// Locating keys in the source text

/// 1-based line of `key` (`kernel.grid`, `loads[1].footprint`, `stores.count`) in a spec's
/// text: the line that sets it, else the header of its table, else `None`.
pub fn line_of(text: &str, key: &str) -> Option<u64> {
    let (table_part, field) = match key.rsplit_once('.') {
        Some((t, f)) => (t, Some(f)),
        None => (key, None),
    };
    let (table, index) = match table_part.split_once('[') {
        Some((t, rest)) => (t, rest.trim_end_matches(']').parse::<usize>().ok()),
        None => (table_part, None),
    };
    let mut current: Option<(String, usize)> = None;
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let mut header_line = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(h) = line.strip_prefix('[') {
            let name = h
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let c = seen.entry(name.clone()).or_insert(0);
            current = Some((name, *c));
            *c += 1;
            if let Some((t, i)) = &current {
                if t == table && index.is_none_or(|want| want == *i) && header_line.is_none() {
                    header_line = Some(n as u64 + 1);
                }
            }
            continue;
        }
        let in_table =
            matches!(&current, Some((t, i)) if t == table && index.is_none_or(|w| w == *i));
        if let (true, Some(f)) = (in_table, field) {
            if let Some(rest) = line.strip_prefix(f) {
                if rest.trim_start().starts_with('=') {
                    return Some(n as u64 + 1);
                }
            }
        }
    }
    header_line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(Size::parse("256 MiB"), Ok(Size(256 << 20)));
        assert_eq!(Size::parse("1.5 MiB"), Ok(Size(3 << 19)));
        assert_eq!(Size::parse("48KB"), Ok(Size(48 << 10)));
        assert_eq!(Size::parse("4096"), Ok(Size(4096)));
        assert!(Size::parse("1.5 B").is_err());
        assert!(Size::parse("12 parsecs").is_err());
        assert!(Size::parse("").is_err());
        assert_eq!(Size(3 << 20).to_string(), "3 MiB");
    }

    #[test]
    fn key_lines() {
        let t = "[kernel]\nname = \"x\"\ngrid = 4\n\n[[loads]]\ncount = 1\n[[loads]]\ncount = 0\n";
        assert_eq!(line_of(t, "kernel.grid"), Some(3));
        assert_eq!(line_of(t, "loads[1].count"), Some(8));
        assert_eq!(line_of(t, "loads[0].count"), Some(6));
        assert_eq!(line_of(t, "loads[1].footprint"), Some(7));
        assert_eq!(line_of(t, "body.trips"), None);
    }
}
