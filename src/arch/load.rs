//! Loading GPU models: built-in names, files, TOML text with errors that name the key and
//! its line, and `--set key=value` overrides applied to the TOML tree before validation.

use std::path::Path;

use super::spec::*;
use super::units::Bytes;
use super::validate::Validator;
use crate::error::Error;
// ---------------------------------------------------------------------------------------------
// Loading

impl GpuSpec {
    /// Names of the bundled models.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTINS.iter().map(|(n, _)| *n)
    }

    /// A bundled model by name (`qv100`, `k40c`, ...).
    pub fn builtin(name: &str) -> Result<GpuSpec, Error> {
        match BUILTINS.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => GpuSpec::from_toml_str(text, format!("models/{n}.toml")),
            None => Err(Error::Usage(format!(
                "unknown built-in GPU model `{name}`; available: {}",
                GpuSpec::builtin_names().collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Reads and validates a model file.
    pub fn load(path: impl AsRef<Path>) -> Result<GpuSpec, Error> {
        let path = path.as_ref();
        let text = crate::infile::read_to_string(path)?;
        GpuSpec::from_toml_str(&text, path)
    }

    /// A bundled model name, or a path to a `.toml` file. Names without a path separator or
    /// `.toml` suffix are looked up among the bundled models only.
    pub fn resolve(name_or_path: &str) -> Result<GpuSpec, Error> {
        let looks_like_path = name_or_path.contains('/')
            || name_or_path.contains(std::path::MAIN_SEPARATOR)
            || name_or_path.ends_with(".toml");
        if looks_like_path {
            return GpuSpec::load(name_or_path);
        }
        if BUILTINS.iter().any(|(n, _)| *n == name_or_path) {
            return GpuSpec::builtin(name_or_path);
        }
        if Path::new(name_or_path).is_file() {
            return GpuSpec::load(name_or_path);
        }
        Err(Error::Usage(format!(
            "unknown GPU model `{name_or_path}`: not a built-in model ({}) nor a .toml file",
            GpuSpec::builtin_names().collect::<Vec<_>>().join(", ")
        )))
    }

    /// Parses and validates a model from TOML text; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: impl AsRef<Path>) -> Result<GpuSpec, Error> {
        parse_spec(text, true).map_err(|(loc_line, msg)| Error::input(path.as_ref(), loc_line, msg))
    }

    /// The model as TOML (the effective model, after overrides). Reloads to an equal spec.
    pub fn to_toml_string(&self) -> String {
        // Serialising plain data with string/integer/bool leaves cannot fail; keep a
        // readable fallback rather than panicking.
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot serialise model: {e}\n"))
    }

    /// Applies one `key=value` override (e.g. `l2.size_per_slice=128 KiB`) and re-validates.
    pub fn apply_override(&mut self, kv: &str) -> Result<(), Error> {
        *self = self.with_overrides(&[kv])?;
        Ok(())
    }

    /// A copy with all `key=value` overrides applied together, then deserialised and
    /// validated like a file (so a combination such as `dram.channels=40` plus
    /// `dram.stacks=5` is checked as a whole). Values are TOML (`128`, `true`, `"gto"`,
    /// `["0 KiB", "8 KiB"]`) or, when they do not parse as TOML, a bare string (`128 KiB`).
    pub fn with_overrides<S: AsRef<str>>(&self, sets: &[S]) -> Result<GpuSpec, Error> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let all = sets
            .iter()
            .map(|s| s.as_ref())
            .collect::<Vec<_>>()
            .join(" ");
        let usage = |msg: String| Error::Usage(format!("--set {all}: {msg}"));
        let mut root = toml::Table::try_from(self)
            .map_err(|e| usage(format!("cannot represent the model: {e}")))?;
        for kv in sets {
            let kv = kv.as_ref();
            let (key, raw) = kv.split_once('=').ok_or_else(|| {
                usage(format!(
                    "`{kv}` is not of the form key=value (e.g. l2.size_per_slice=128 KiB)"
                ))
            })?;
            let key = key.trim();
            let parts: Vec<&str> = key.split('.').map(str::trim).collect();
            if key.is_empty()
                || parts.iter().any(|p| {
                    p.is_empty()
                        || !p
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                })
            {
                return Err(usage(format!(
                    "`{key}` is not a dotted key such as dram.timing.tRCD"
                )));
            }
            let value = parse_override_value(raw);
            set_path(&mut root, &parts, value).map_err(usage)?;
        }
        let text = toml::to_string(&root)
            .map_err(|e| usage(format!("cannot represent the overridden model: {e}")))?;
        parse_spec(&text, false).map_err(|(_, msg)| usage(msg))
    }

    /// Cross-field checks. Returns every problem found (empty = valid).
    pub fn issues(&self) -> Vec<SpecIssue> {
        let mut v = Validator::default();
        self.check(&mut v);
        v.issues
    }

    /// Cross-field checks; the first error names the key (see [`GpuSpec::issues`] for all).
    pub fn validate(&self) -> Result<(), SpecIssue> {
        match self.issues().into_iter().next() {
            Some(i) => Err(i),
            None => Ok(()),
        }
    }

    /// Total L2 slices.
    pub fn l2_slices(&self) -> u32 {
        self.dram
            .channels
            .saturating_mul(self.l2.slices_per_channel)
    }

    /// Total L2 capacity.
    pub fn l2_size(&self) -> Bytes {
        Bytes(self.l2.size_per_slice.0 * self.l2_slices() as u64)
    }

    /// Registers one warp is charged with for `regs_per_thread` (allocation rule of
    /// [`RegFile`]).
    pub fn regs_per_warp(&self, regs_per_thread: u32) -> u64 {
        let r = &self.sm.registers;
        let per_thread = round_up(regs_per_thread as u64, r.thread_granularity.max(1) as u64);
        round_up(
            per_thread * self.sm.warp_size as u64,
            r.warp_alloc_unit.max(1) as u64,
        )
    }

    /// Shared memory one CTA is charged with (allocation unit and reservation applied); 0 when
    /// it uses none and nothing is reserved.
    pub fn smem_per_cta_allocated(&self, smem_per_cta: u64) -> u64 {
        let s = &self.sm.shared;
        let need = smem_per_cta + s.reserved_per_cta.0;
        round_up(need, s.alloc_unit.0.max(1))
    }
}

pub(crate) fn round_up(x: u64, unit: u64) -> u64 {
    if unit <= 1 {
        x
    } else {
        x.div_ceil(unit).saturating_mul(unit)
    }
}

fn parse_override_value(raw: &str) -> toml::Value {
    let raw = raw.trim();
    if let Ok(mut t) = format!("v = {raw}").parse::<toml::Table>() {
        if let Some(v) = t.remove("v") {
            return v;
        }
    }
    toml::Value::String(raw.to_string())
}

fn set_path(root: &mut toml::Table, parts: &[&str], value: toml::Value) -> Result<(), String> {
    let Some((last, head)) = parts.split_last() else {
        return Err("empty key".into());
    };
    let mut t = root;
    for (i, p) in head.iter().enumerate() {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => {
                return Err(format!(
                    "`{}` is a value, not a table, so `{}` cannot be set",
                    head[..=i].join("."),
                    parts.join(".")
                ))
            }
        };
    }
    if matches!(t.get(*last), Some(toml::Value::Table(_)))
        && !matches!(value, toml::Value::Table(_))
    {
        return Err(format!(
            "`{}` is a table; set one of its keys instead (e.g. {}.<key>=...)",
            parts.join("."),
            parts.join(".")
        ));
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// Deserialises and validates; on error returns (line, message naming the key).
fn parse_spec(text: &str, with_lines: bool) -> Result<GpuSpec, (Option<u64>, String)> {
    let line_of = |span: Option<std::ops::Range<usize>>| -> Option<u64> {
        if !with_lines {
            return None;
        }
        span.map(|s| line_at(text, s.start))
    };
    let spec: GpuSpec = match toml::from_str(text) {
        Ok(s) => s,
        Err(e) => {
            let span = e.span();
            let key = span.clone().and_then(|s| key_at(text, s));
            let msg = match key {
                Some(k) => format!("key `{k}`: {}", e.message()),
                None => format!("invalid model: {}", e.message()),
            };
            return Err((line_of(span), msg));
        }
    };
    let issues = spec.issues();
    if let Some(first) = issues.first() {
        let line = if with_lines {
            line_of_key(text, &first.key)
        } else {
            None
        };
        let mut msg = first.to_string();
        if issues.len() > 1 {
            let rest: Vec<String> = issues[1..].iter().map(|i| i.to_string()).collect();
            msg.push_str(&format!(" (and {} more: {})", rest.len(), rest.join("; ")));
        }
        return Err((line, msg));
    }
    Ok(spec)
}

fn line_at(text: &str, offset: usize) -> u64 {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64
        + 1
}

/// The dotted key whose key or value span contains `span.start` (the innermost one).
fn key_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut best: Option<(usize, String)> = None;
    find_key(doc.get_ref(), "", &span, &mut best);
    best.map(|(_, k)| k)
}

fn contains(outer: &std::ops::Range<usize>, inner: &std::ops::Range<usize>) -> bool {
    if inner.start == inner.end {
        outer.start <= inner.start && inner.start <= outer.end
    } else {
        outer.start <= inner.start && inner.start < outer.end
    }
}

fn find_key(
    table: &toml::de::DeTable<'_>,
    prefix: &str,
    span: &std::ops::Range<usize>,
    best: &mut Option<(usize, String)>,
) {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        for s in [k.span(), v.span()] {
            if contains(&s, span) {
                let len = s.end - s.start;
                let better = match best {
                    None => true,
                    Some((l, p)) => len < *l || (len == *l && path.len() > p.len()),
                };
                if better {
                    *best = Some((len, path.clone()));
                }
            }
        }
        if let Some(inner) = v.get_ref().as_table() {
            find_key(inner, &path, span, best);
        }
    }
}

/// Line of a dotted key in the text (the key itself, or the closest enclosing table).
fn line_of_key(text: &str, key: &str) -> Option<u64> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut line = None;
    for part in key.split('.') {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == part)?;
        line = Some(line_at(text, k.span().start));
        match v.get_ref().as_table() {
            Some(t) => table = t,
            None => break,
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load() {
        for n in GpuSpec::builtin_names() {
            let s = GpuSpec::builtin(n).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(s.name, n);
        }
    }

    #[test]
    fn units_get_mut_matches_get() {
        let mut s = GpuSpec::builtin("qv100").expect("qv100");
        for k in UnitKind::ALL {
            s.units.get_mut(k).count = 7;
            assert_eq!(s.units.get(k).count, 7);
        }
    }

    #[test]
    fn key_lookup() {
        let text = "name = \"x\"\n[l1d]\nsize = \"3 ms\"\n[dram.timing]\ntRCD = 1\n";
        assert_eq!(key_at(text, 24..30).as_deref(), Some("l1d.size"));
        assert_eq!(line_of_key(text, "dram.timing.tRCD"), Some(5));
        assert_eq!(line_of_key(text, "l1d"), Some(2));
    }
}
