//! Typed quantities used in GPU model files: [`Bytes`], [`Freq`], [`Cycles`] and [`Time`].
//!
//! Sizes, clocks and durations are written as strings with a unit (`"96 KiB"`, `"1132 MHz"`,
//! `"2 ms"`), so that a value can never be read in the wrong unit; a bare number or a wrong
//! unit is an error that says what was expected. Cycle counts are plain integers (or
//! `"20 cycles"`). Values are exact integers inside (bytes, hertz, picoseconds, cycles):
//! `"1.5 MiB"` is accepted because it is a whole number of bytes, `"1.5 B"` is not.
//!
//! Each type serialises back to a canonical string (`Bytes(98304)` → `"96 KiB"`), which
//! parses to the same value, so a saved effective model reloads unchanged.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * 1024 * 1024;

/// Parses `"<decimal> <unit>"` (space optional) into its number text and unit text.
fn split_number_unit(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((&s[..end], s[end..].trim()))
}

/// `number × scale` for a decimal `number` (digits, optional fraction), when the result is a
/// whole number that fits in `u64`.
fn scaled_decimal(number: &str, scale: u64) -> Option<u64> {
    let number = number.replace('_', "");
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if frac_part.len() > 18 {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let denom: u128 = 10u128.checked_pow(frac_part.len() as u32)?;
    let num = mantissa.checked_mul(scale as u128)?;
    if num % denom != 0 {
        return None;
    }
    u64::try_from(num / denom).ok()
}

/// Writes `value / unit` with up to 3 decimals when that is exact.
fn exact_in_unit(value: u64, unit: u64) -> Option<String> {
    if unit == 0 {
        return None;
    }
    if value.is_multiple_of(unit) {
        return Some((value / unit).to_string());
    }
    for decimals in 1..=3u32 {
        let m = 10u64.pow(decimals);
        let scaled = (value as u128) * (m as u128);
        if scaled.is_multiple_of(unit as u128) {
            let q = scaled / (unit as u128);
            let int = q / m as u128;
            let frac = q % m as u128;
            let frac = format!("{:0width$}", frac, width = decimals as usize);
            return Some(format!("{int}.{}", frac.trim_end_matches('0')));
        }
    }
    None
}

/// A value that is not a quantity of its unit (the message says what was expected).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// A visitor that accepts strings (and integers when `allow_int`), used by every unit type.
struct UnitVisitor<T> {
    expecting: &'static str,
    parse: fn(&str) -> Result<T, UnitError>,
    from_int: Option<fn(u64) -> Result<T, UnitError>>,
}

impl<'de, T> Visitor<'de> for UnitVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        match self.from_int {
            Some(f) => f(v).map_err(E::custom),
            None => Err(E::custom(format!(
                "{}; got the bare number {v}",
                self.expecting
            ))),
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match (self.from_int, u64::try_from(v)) {
            (Some(f), Ok(u)) => f(u).map_err(E::custom),
            (Some(_), Err(_)) => Err(E::custom(format!(
                "{}; got the negative number {v}",
                self.expecting
            ))),
            (None, _) => Err(E::custom(format!(
                "{}; got the bare number {v}",
                self.expecting
            ))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Err(E::custom(format!(
            "{}; got the bare number {v}",
            self.expecting
        )))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(E::custom(format!(
            "{}; got the boolean {v}",
            self.expecting
        )))
    }
}

// ---------------------------------------------------------------------------------------------

/// A size in bytes. Written `"128 B"`, `"96 KiB"`, `"6 MiB"`, `"1 GiB"`; `KB`/`MB`/`GB` (and
/// `K`/`M`/`G`) are read as the binary units, as GPU documentation uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    const EXPECTING: &'static str =
        "a size with a unit (B, KiB, MiB, GiB; KB/MB/GB mean the same), e.g. \"96 KiB\" or \"128 B\"";

    pub const fn new(n: u64) -> Bytes {
        Bytes(n)
    }
    pub const fn kib(n: u64) -> Bytes {
        Bytes(n * KIB)
    }
    pub const fn mib(n: u64) -> Bytes {
        Bytes(n * MIB)
    }
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Parses `"96 KiB"` and friends; the error says what was expected.
    pub fn parse(s: &str) -> Result<Bytes, UnitError> {
        Self::parse_text(s).map_err(UnitError)
    }

    fn parse_text(s: &str) -> Result<Bytes, String> {
        let bad = || format!("expected {}; got \"{s}\"", Self::EXPECTING);
        let (num, unit) = split_number_unit(s).ok_or_else(bad)?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "b" | "byte" | "bytes" => 1,
            "kib" | "kb" | "k" => KIB,
            "mib" | "mb" | "m" => MIB,
            "gib" | "gb" | "g" => GIB,
            "" => {
                return Err(format!(
                    "expected {}; got \"{s}\" (no unit)",
                    Self::EXPECTING
                ));
            }
            _ => return Err(bad()),
        };
        scaled_decimal(num, scale)
            .map(Bytes)
            .ok_or_else(|| format!("\"{s}\" is not a whole number of bytes that fits in 64 bits"))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
            if n >= unit {
                if let Some(v) = exact_in_unit(n, unit) {
                    return write!(f, "{v} {name}");
                }
            }
        }
        write!(f, "{n} B")
    }
}

/// Serde for a unit type: serialised as its canonical text (or as a plain integer for
/// `int`), deserialised from text with a unit through its `parse` (integers accepted only for
/// `int`).
macro_rules! unit_serde {
    ($t:ident, text) => {
        unit_serde!(@impl $t, |v: &$t, s| s.collect_str(v), None);
    };
    ($t:ident, int) => {
        unit_serde!(@impl $t, |v: &$t, s| s.serialize_u64(v.0), Some($t::from_count));
    };
    (@impl $t:ident, $ser:expr, $from_int:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let f: fn(&$t, S) -> Result<S::Ok, S::Error> = $ser;
                f(self, s)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(UnitVisitor {
                    expecting: $t::EXPECTING,
                    parse: $t::parse,
                    from_int: $from_int,
                })
            }
        }
    };
}

unit_serde!(Bytes, text);

// ---------------------------------------------------------------------------------------------

/// A clock frequency in hertz. Written `"1132 MHz"`, `"1.4 GHz"`, `"924 MHz"`, `"500 kHz"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Freq {
    hz: u64,
}

impl Freq {
    const EXPECTING: &'static str =
        "a frequency with a unit (Hz, kHz, MHz, GHz), e.g. \"1132 MHz\" or \"1.4 GHz\"";

    pub const fn from_hz(hz: u64) -> Freq {
        Freq { hz }
    }
    pub const fn from_mhz(mhz: u64) -> Freq {
        Freq {
            hz: mhz * 1_000_000,
        }
    }
    pub const fn hz(self) -> u64 {
        self.hz
    }
    /// Megahertz as a float (for reports; simulated time stays integer).
    pub fn mhz(self) -> f64 {
        self.hz as f64 / 1e6
    }
    /// Cycles of this clock in `t` (rounded down).
    pub fn cycles_in(self, t: Time) -> u64 {
        let c = (t.ps() as u128) * (self.hz as u128) / 1_000_000_000_000u128;
        u64::try_from(c).unwrap_or(u64::MAX)
    }

    pub fn parse(s: &str) -> Result<Freq, UnitError> {
        Self::parse_text(s).map_err(UnitError)
    }

    fn parse_text(s: &str) -> Result<Freq, String> {
        let bad = || format!("expected {}; got \"{s}\"", Self::EXPECTING);
        let (num, unit) = split_number_unit(s).ok_or_else(bad)?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "hz" => 1,
            "khz" => 1_000,
            "mhz" => 1_000_000,
            "ghz" => 1_000_000_000,
            "" => {
                return Err(format!(
                    "expected {}; got \"{s}\" (no unit)",
                    Self::EXPECTING
                ))
            }
            _ => return Err(bad()),
        };
        let hz = scaled_decimal(num, scale)
            .ok_or_else(|| format!("\"{s}\" is not a whole number of hertz"))?;
        if hz == 0 {
            return Err(format!(
                "a clock of \"{s}\" is zero; expected a positive frequency"
            ));
        }
        Ok(Freq { hz })
    }
}

impl fmt::Display for Freq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.hz;
        for (unit, name) in [(1_000_000_000, "GHz"), (1_000_000, "MHz"), (1_000, "kHz")] {
            if n.is_multiple_of(unit) {
                return write!(f, "{} {name}", n / unit);
            }
        }
        match exact_in_unit(n, 1_000_000) {
            Some(v) => write!(f, "{v} MHz"),
            None => write!(f, "{n} Hz"),
        }
    }
}

unit_serde!(Freq, text);

// ---------------------------------------------------------------------------------------------

/// A number of clock cycles (of the clock domain the key documents). Written as an integer
/// or `"20 cycles"`; serialised as an integer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycles(pub u64);

impl Cycles {
    const EXPECTING: &'static str = "a cycle count: a non-negative integer or e.g. \"20 cycles\"";

    pub const fn new(n: u64) -> Cycles {
        Cycles(n)
    }
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The most cycles any latency, initiation interval or cost of a model may be: far
    /// above every real value, and small enough that no sum or product of them in the
    /// engine's integer widths wraps or saturates.
    pub const MAX: u64 = 1_000_000;

    pub fn parse(s: &str) -> Result<Cycles, UnitError> {
        Self::parse_text(s).map_err(UnitError)
    }

    fn parse_text(s: &str) -> Result<Cycles, String> {
        let bad = || format!("expected {}; got \"{s}\"", Self::EXPECTING);
        let (num, unit) = split_number_unit(s).ok_or_else(bad)?;
        match unit.to_ascii_lowercase().as_str() {
            "" | "cycle" | "cycles" | "cyc" | "clk" | "clks" => {}
            _ => return Err(bad()),
        }
        let n = scaled_decimal(num, 1).ok_or_else(bad)?;
        Self::count_text(n)
    }

    /// `n` cycles, refused above [`Cycles::MAX`] (never wrapped or clamped).
    pub fn from_count(n: u64) -> Result<Cycles, UnitError> {
        Self::count_text(n).map_err(UnitError)
    }

    fn count_text(n: u64) -> Result<Cycles, String> {
        if n > Self::MAX {
            return Err(format!(
                "{n} cycles is out of range; expected at most {} cycles",
                Self::MAX
            ));
        }
        Ok(Cycles(n))
    }
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cycles", self.0)
    }
}

unit_serde!(Cycles, int);

// ---------------------------------------------------------------------------------------------

/// A wall-clock duration in picoseconds. Written `"2 ms"`, `"20 us"` (or `µs`), `"100 ns"`,
/// `"500 ps"`, `"1 s"`. Converted to cycles of a clock with [`Freq::cycles_in`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    ps: u64,
}

impl Time {
    const EXPECTING: &'static str =
        "a duration with a unit (ps, ns, us, ms, s), e.g. \"2 ms\" or \"20 us\"";

    pub const fn from_ps(ps: u64) -> Time {
        Time { ps }
    }
    pub const fn from_ns(ns: u64) -> Time {
        Time { ps: ns * 1000 }
    }
    pub const fn ps(self) -> u64 {
        self.ps
    }

    pub fn parse(s: &str) -> Result<Time, UnitError> {
        Self::parse_text(s).map_err(UnitError)
    }

    fn parse_text(s: &str) -> Result<Time, String> {
        let bad = || format!("expected {}; got \"{s}\"", Self::EXPECTING);
        let (num, unit) = split_number_unit(s).ok_or_else(bad)?;
        let scale: u64 = match unit {
            "ps" => 1,
            "ns" => 1_000,
            "us" | "µs" | "μs" => 1_000_000,
            "ms" => 1_000_000_000,
            "s" => 1_000_000_000_000,
            "" => {
                return Err(format!(
                    "expected {}; got \"{s}\" (no unit)",
                    Self::EXPECTING
                ))
            }
            _ => return Err(bad()),
        };
        scaled_decimal(num, scale)
            .map(|ps| Time { ps })
            .ok_or_else(|| format!("\"{s}\" is not a whole number of picoseconds"))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.ps;
        if n == 0 {
            return write!(f, "0 ns");
        }
        for (unit, name) in [
            (1_000_000_000_000, "s"),
            (1_000_000_000, "ms"),
            (1_000_000, "us"),
            (1_000, "ns"),
        ] {
            if n >= unit {
                if let Some(v) = exact_in_unit(n, unit) {
                    return write!(f, "{v} {name}");
                }
            }
        }
        write!(f, "{n} ps")
    }
}

unit_serde!(Time, text);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_parse_and_print() {
        assert_eq!(Bytes::parse("96 KiB"), Ok(Bytes(98304)));
        assert_eq!(Bytes::parse("96KB"), Ok(Bytes(98304)));
        assert_eq!(Bytes::parse("6 MiB"), Ok(Bytes(6 * MIB)));
        assert_eq!(Bytes::parse("1.5 MiB"), Ok(Bytes(3 * MIB / 2)));
        assert_eq!(Bytes::parse("128 B"), Ok(Bytes(128)));
        assert_eq!(Bytes::parse(" 40 bytes "), Ok(Bytes(40)));
        assert!(Bytes::parse("128 ms").unwrap_err().0.contains("KiB"));
        assert!(Bytes::parse("128").unwrap_err().0.contains("no unit"));
        assert!(Bytes::parse("1.5 B").is_err());
        assert!(Bytes::parse("KiB").is_err());
        assert!(Bytes::parse("").is_err());
        assert!(Bytes::parse("99999999999999999999 GiB").is_err());
        for v in [
            0u64,
            1,
            40,
            128,
            1024,
            1536,
            98304,
            3 * MIB / 2,
            6 * MIB,
            50 * MIB,
            40 * GIB,
            7208,
        ] {
            let b = Bytes(v);
            assert_eq!(Bytes::parse(&b.to_string()), Ok(b), "{b}");
        }
        assert_eq!(Bytes(98304).to_string(), "96 KiB");
        assert_eq!(Bytes(128).to_string(), "128 B");
        assert_eq!(Bytes(3 * MIB / 2).to_string(), "1.5 MiB");
    }

    #[test]
    fn freq_parse_and_print() {
        assert_eq!(Freq::parse("1132 MHz").map(Freq::hz), Ok(1_132_000_000));
        assert_eq!(Freq::parse("1.4 GHz").map(Freq::hz), Ok(1_400_000_000));
        assert_eq!(Freq::parse("924mhz").map(Freq::hz), Ok(924_000_000));
        assert!(Freq::parse("0 MHz").is_err());
        assert!(Freq::parse("12 KiB").is_err());
        assert!(Freq::parse("1132").is_err());
        for s in ["1132 MHz", "1.4 GHz", "850 MHz", "1582.5 MHz", "3 Hz"] {
            let f = Freq::parse(s).unwrap();
            assert_eq!(Freq::parse(&f.to_string()), Ok(f), "{s}");
        }
        assert_eq!(Freq::parse("1.4 GHz").unwrap().to_string(), "1400 MHz");
        assert_eq!(
            Freq::from_mhz(1000).cycles_in(Time::parse("2 ms").unwrap()),
            2_000_000
        );
    }

    #[test]
    fn cycles_and_time() {
        assert_eq!(Cycles::parse("20 cycles"), Ok(Cycles(20)));
        assert_eq!(Cycles::parse("20"), Ok(Cycles(20)));
        assert!(Cycles::parse("20 ns").is_err());
        assert!(Cycles::parse("2.5").is_err());
        assert_eq!(Time::parse("2 ms").map(Time::ps), Ok(2_000_000_000));
        assert_eq!(Time::parse("20 us").map(Time::ps), Ok(20_000_000));
        assert!(Time::parse("2 MHz").is_err());
        for s in ["2 ms", "25 us", "1.5 us", "100 ns", "7 ps", "0 ns"] {
            let t = Time::parse(s).unwrap();
            assert_eq!(Time::parse(&t.to_string()), Ok(t), "{s}");
        }
    }
}
