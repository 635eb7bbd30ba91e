//! A minimal JSON tree for structure-aware mutation of `metrics.json` and shard files:
//! parsed leniently (numbers and literals kept as their text, so `1e309` or `NaN` can be
//! written back verbatim), cut down (long arrays shortened) and mutated by node: a number set
//! to a boundary value, a key deleted or duplicated, array elements swapped or emptied,
//! `kind` / `schema_version` / name strings replaced by hostile ones.

use crate::rng::Rng;

/// A JSON value; `Raw` holds a number, `true`, `false`, `null` or any other bare token.
#[derive(Clone, Debug, PartialEq)]
pub enum J {
    Raw(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn string(&mut self) -> Option<String> {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        while self.i < self.b.len() {
            let c = self.b[self.i];
            self.i += 1;
            match c {
                b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
                b'\\' => {
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
                            self.i += 4;
                            let c = char::from_u32(u32::from_str_radix(h, 16).ok()?)
                                .unwrap_or('\u{FFFD}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn value(&mut self, depth: u32) -> Option<J> {
        if depth > 200 {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'"' => self.string().map(J::Str),
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        return Some(J::Arr(v));
                    }
                    v.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {}
                        _ => return None,
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    match self.b.get(self.i)? {
                        b'}' => {
                            self.i += 1;
                            return Some(J::Obj(v));
                        }
                        b'"' => {}
                        _ => return None,
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return None;
                    }
                    self.i += 1;
                    v.push((k, self.value(depth + 1)?));
                    self.ws();
                    match self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b'}' => {}
                        _ => return None,
                    }
                }
            }
            _ => {
                let s = self.i;
                while self.i < self.b.len() && !b",]}: \t\r\n".contains(&self.b[self.i]) {
                    self.i += 1;
                }
                (self.i > s).then(|| J::Raw(String::from_utf8_lossy(&self.b[s..self.i]).into()))
            }
        }
    }
}

/// Parses a JSON document (lenient about bare tokens); `None` when it is not one.
pub fn parse(data: &[u8]) -> Option<J> {
    let mut p = P { b: data, i: 0 };
    let v = p.value(0)?;
    p.ws();
    (p.i == data.len()).then_some(v)
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write(v: &J, out: &mut String) {
    match v {
        J::Raw(r) => out.push_str(r),
        J::Str(s) => quote(s, out),
        J::Arr(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, out);
            }
            out.push(']');
        }
        J::Obj(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote(k, out);
                out.push(':');
                write(x, out);
            }
            out.push('}');
        }
    }
}

/// The compact text of a tree.
pub fn to_bytes(v: &J) -> Vec<u8> {
    let mut s = String::new();
    write(v, &mut s);
    s.into_bytes()
}

/// Shortens every array to its first `keep` elements (big committed results made small).
pub fn cut(v: &mut J, keep: usize) {
    match v {
        J::Arr(a) => {
            a.truncate(keep);
            a.iter_mut().for_each(|x| cut(x, keep));
        }
        J::Obj(o) => o.iter_mut().for_each(|(_, x)| cut(x, keep)),
        _ => {}
    }
}

/// Paths (child indices) of every node, in document order.
fn paths(v: &J, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(at.clone());
    let n = match v {
        J::Arr(a) => a.len(),
        J::Obj(o) => o.len(),
        _ => 0,
    };
    for i in 0..n {
        at.push(i);
        let child = match v {
            J::Arr(a) => &a[i],
            J::Obj(o) => &o[i].1,
            _ => unreachable!(),
        };
        paths(child, at, out);
        at.pop();
    }
}

fn node<'a>(v: &'a mut J, path: &[usize]) -> &'a mut J {
    let mut cur = v;
    for &i in path {
        cur = match cur {
            J::Arr(a) => &mut a[i],
            J::Obj(o) => &mut o[i].1,
            _ => unreachable!(),
        };
    }
    cur
}

/// Numbers on and across the edges of what `metrics.json` readers expect.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e308",
    "-1e308",
    "1e309",
    "-1e309",
    "5e-324",
    "NaN",
    "Infinity",
    "nan",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "0.5",
    "1.5",
    "2",
    "1000000000000",
    "1e-300",
    "\"nan\"",
    "\"NaN\"",
    "\"inf\"",
    "\"1\"",
    "null",
    "true",
    "[]",
    "{}",
];

/// Path-like and otherwise hostile strings for names (`point`, workload, policy, bench
/// names become folder and file names). `{out}` is replaced with a folder outside the case
/// folder (never a system folder: the driver may run as root).
const STRINGS: &[&str] = &[
    "..",
    ".",
    "../..",
    "../../x",
    "../../../x",
    "{out}",
    "{out}/abs",
    "a/b",
    "a/../../..",
    "",
    " ",
    "-o",
    "=1+2",
    "@SUM(A1)",
    "x\ny",
    "é€😀",
    "\u{202E}txt",
    "nan",
    "CON",
    "a\\b",
];

/// Strings to put in `kind`.
const KINDS: &[&str] = &["sweep", "study-shard", "study", "queue", "zzz", "", "SWEEP"];

pub fn hostile_string(rng: &mut Rng, outside: &str) -> String {
    if rng.chance(1, 8) {
        let n = *rng.pick(&[255usize, 256, 4096, 70_000]);
        return "x".repeat(n);
    }
    rng.pick(STRINGS).replace("{out}", outside)
}

/// Applies 1 to 4 structural mutations to a parsed document.
pub fn mutate(rng: &mut Rng, doc: &mut J, outside: &str) {
    for _ in 0..rng.small_count(4) {
        mutate_once(rng, doc, outside);
    }
}

fn mutate_once(rng: &mut Rng, doc: &mut J, outside: &str) {
    let mut all = Vec::new();
    paths(doc, &mut Vec::new(), &mut all);
    // Prefer the nodes a mutation applies to: pick a few and keep the first that fits.
    let op = rng.below(9);
    for _ in 0..16 {
        let path = rng.pick(&all).clone();
        let parent_key = parent_key(doc, &path);
        let n = node(doc, &path);
        match (op, &mut *n) {
            (0 | 1, J::Raw(_)) => {
                *n = J::Raw(rng.pick(NUMBERS).to_string());
                return;
            }
            (2, J::Obj(o)) if !o.is_empty() => {
                let i = rng.below(o.len());
                o.remove(i);
                return;
            }
            (3, J::Obj(o)) if !o.is_empty() => {
                let i = rng.below(o.len());
                let e = o[i].clone();
                let at = rng.below(o.len() + 1);
                o.insert(at, e);
                return;
            }
            (4, J::Arr(a)) if a.len() >= 2 => {
                let (i, j) = (rng.below(a.len()), rng.below(a.len()));
                a.swap(i, j);
                return;
            }
            (5, J::Arr(a)) if !a.is_empty() => {
                if rng.chance(1, 2) {
                    a.clear();
                } else {
                    let e = a[rng.below(a.len())].clone();
                    a.push(e);
                }
                return;
            }
            (6, J::Str(_)) => {
                *n = if parent_key.as_deref() == Some("kind") {
                    J::Str(rng.pick(KINDS).to_string())
                } else {
                    J::Str(hostile_string(rng, outside))
                };
                return;
            }
            (7, J::Obj(o)) => {
                if let Some(e) = o
                    .iter_mut()
                    .find(|(k, _)| k == "kind" || k == "schema_version")
                {
                    e.1 = if e.0 == "kind" {
                        J::Str(rng.pick(KINDS).to_string())
                    } else {
                        J::Raw(
                            rng.pick(&["0", "2", "-1", "1.5", "999", "\"1\""])
                                .to_string(),
                        )
                    };
                    return;
                }
            }
            (8, J::Obj(o)) if !o.is_empty() => {
                // A value moved to another type.
                let i = rng.below(o.len());
                o[i].1 = match rng.below(4) {
                    0 => J::Arr(Vec::new()),
                    1 => J::Obj(Vec::new()),
                    2 => J::Raw("null".into()),
                    _ => J::Str(hostile_string(rng, outside)),
                };
                return;
            }
            _ => {}
        }
    }
}

/// The key under which the node at `path` sits, when its parent is an object.
fn parent_key(doc: &mut J, path: &[usize]) -> Option<String> {
    let (&last, up) = path.split_last()?;
    match node(doc, up) {
        J::Obj(o) => Some(o[last].0.clone()),
        _ => None,
    }
}

/// Every string under `key` (a string or an array of strings, in any object), in order.
pub fn strings_under(v: &J, key: &str, out: &mut Vec<String>) {
    match v {
        J::Arr(a) => a.iter().for_each(|x| strings_under(x, key, out)),
        J::Obj(o) => {
            for (k, x) in o {
                if k == key {
                    match x {
                        J::Str(s) => out.push(s.clone()),
                        J::Arr(a) => a.iter().for_each(|s| {
                            if let J::Str(s) = s {
                                out.push(s.clone());
                            }
                        }),
                        _ => {}
                    }
                }
                strings_under(x, key, out);
            }
        }
        _ => {}
    }
}

/// A string as JSON text (quoted, escaped).
pub fn quoted(s: &str) -> String {
    let mut out = String::new();
    quote(s, &mut out);
    out
}

/// Sets the first `key` of the top-level object to `value` (a raw JSON token).
pub fn set_top(v: &mut J, key: &str, value: &str) {
    if let J::Obj(o) = v {
        if let Some(e) = o.iter_mut().find(|(k, _)| k == key) {
            e.1 = J::Raw(value.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_cut_and_mutate() {
        let t = br#"{"kind": "sweep", "n": [1, 2.5e3, -1, {"a": "x\"y\u00e9"}], "b": true}"#;
        let mut v = parse(t).unwrap();
        assert_eq!(parse(&to_bytes(&v)).unwrap(), v);
        cut(&mut v, 2);
        assert_eq!(
            to_bytes(&v),
            br#"{"kind":"sweep","n":[1,2.5e3],"b":true}"#.to_vec()
        );
        assert!(parse(b"{\"a\": 1").is_none());
        assert!(parse(b"[1] x").is_none());
        let mut changed = 0;
        for i in 0..500 {
            let mut a = v.clone();
            let mut b = v.clone();
            mutate(&mut Rng::for_case(4, i), &mut a, "/o");
            mutate(&mut Rng::for_case(4, i), &mut b, "/o");
            assert_eq!(a, b, "deterministic");
            changed += (a != v) as u32;
        }
        assert!(changed > 400, "only {changed} of 500 changed");
        let mut names = Vec::new();
        let p = parse(br#"{"point":["a=1","b=2"],"x":[{"point":"c"}],"y":"d"}"#).unwrap();
        strings_under(&p, "point", &mut names);
        assert_eq!(names, vec!["a=1", "b=2", "c"]);
        assert_eq!(quoted("a\"b"), "\"a\\\"b\"");
    }
}
