//! Mutators: seeded, deterministic edits of text inputs (traces, logs, TOML, CSV, JSON) and
//! of binary `.gmt` files. Each call applies a few mutations drawn from the lists below; the
//! result never grows past `MAX_LEN`.

use crate::rng::Rng;

/// Upper bound on a mutated file (a repeat can multiply a line thousands of times).
pub const MAX_LEN: usize = 8 << 20;

/// Numbers that sit on or across the edges of the integer and float widths.
pub const BOUNDARY: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "7",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "4294967298",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000",
    "1e308",
    "-1e308",
    "1e309",
    "5e-324",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "0x0",
    "0xffffffff",
    "0xffffffffffffffff",
    "0x10000000000000000",
    "-0",
    "0.5",
    "1.0",
    "000000000000000000000000000000001",
    "1_000",
    "",
];

/// Character sequences that stress decoding and slicing: a BOM, NUL, multi-byte UTF-8,
/// bidi controls and invalid UTF-8.
const UNICODE: &[&[u8]] = &[
    b"\xEF\xBB\xBF",
    b"\0",
    "é".as_bytes(),
    "€".as_bytes(),
    "😀".as_bytes(),
    "\u{FFFD}".as_bytes(),
    "\u{202E}".as_bytes(),
    "\u{2028}".as_bytes(),
    b"\xFF",
    b"\xC3",
    b"\xE2\x82",
    b"\xED\xA0\x80",
    b"\r",
    b"\t",
    b"\x1B[2J",
];

/// Replacement values for a TOML/CSV/JSON value: other types, empties, paths.
const VALUES: &[&str] = &[
    "\"\"",
    "\"x\"",
    "[]",
    "[1, 2]",
    "[[]]",
    "{}",
    "{ a = 1 }",
    "true",
    "false",
    "\"1e999\"",
    "\"-1\"",
    "\"../../../x\"",
    "\"/\"",
    "\"/dev/null\"",
    "\"0 KiB\"",
    "\"18446744073709551616 GiB\"",
    "\"1 TiB\"",
    "\"nan\"",
    "1979-05-27T07:32:00Z",
    "null",
];

const INTERESTING_BYTES: &[u8] = b"\0\xff\n\r \t=[]\",#-.()_{}:/\\0159";

/// Mutation material shared by the cases of one family: other seeds (for splicing and line
/// insertion), words seen in them, and paths outside the case folder.
pub struct Material<'a> {
    pub others: &'a [Vec<u8>],
    pub words: &'a [Vec<u8>],
    pub outside: &'a [String],
}

/// Applies 1 to 6 text mutations.
pub fn text(rng: &mut Rng, data: &mut Vec<u8>, m: &Material) {
    for _ in 0..rng.small_count(6) {
        text_once(rng, data, m);
        if data.len() > MAX_LEN {
            data.truncate(MAX_LEN);
        }
    }
}

/// Applies 1 to 6 binary mutations.
pub fn binary(rng: &mut Rng, data: &mut Vec<u8>, m: &Material) {
    for _ in 0..rng.small_count(6) {
        binary_once(rng, data, m);
        if data.len() > MAX_LEN {
            data.truncate(MAX_LEN);
        }
    }
}

/// Start offsets of every line (a trailing empty line included when the text ends in `\n`).
fn line_starts(data: &[u8]) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(
        data.iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1),
    );
    v
}

/// The byte range of line `i` including its newline.
fn line_range(starts: &[usize], len: usize, i: usize) -> (usize, usize) {
    let s = starts[i];
    let e = starts.get(i + 1).copied().unwrap_or(len);
    (s, e)
}

fn pick_line(rng: &mut Rng, data: &[u8]) -> (usize, usize) {
    let st = line_starts(data);
    let i = rng.below(st.len());
    line_range(&st, data.len(), i)
}

/// Spans of number-like tokens: an optional `-`, digits, and `.`, `e`, `x`, hex digits after.
fn numbers(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let mut s = i;
            if s > 0 && data[s - 1] == b'-' {
                s -= 1;
            }
            let mut e = i;
            while e < data.len() && (data[e].is_ascii_alphanumeric() || data[e] == b'.') {
                e += 1;
            }
            out.push((s, e));
            i = e;
        } else {
            i += 1;
        }
    }
    out
}

fn arith(rng: &mut Rng, tok: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(tok);
    let v: i128 = s.parse().unwrap_or(1);
    let r = match rng.below(6) {
        0 => v + 1,
        1 => v - 1,
        2 => v.saturating_mul(1000),
        3 => -v,
        4 => v.saturating_mul(1 << 20),
        _ => v / 2,
    };
    r.to_string().into_bytes()
}

fn text_once(rng: &mut Rng, data: &mut Vec<u8>, m: &Material) {
    let len = data.len();
    match rng.below(20) {
        // A flipped bit.
        0 if len > 0 => {
            let p = rng.below(len);
            data[p] ^= 1 << rng.below(8);
        }
        // A byte set to a delimiter, control or digit.
        1 if len > 0 => {
            let p = rng.below(len);
            data[p] = *rng.pick(INTERESTING_BYTES);
        }
        // A number replaced by a boundary value or moved arithmetically (three times as
        // likely: numbers are what the parsers check).
        2..=4 => {
            let nums = numbers(data);
            if nums.is_empty() {
                return;
            }
            let (s, e) = *rng.pick(&nums);
            let new = if rng.chance(2, 3) {
                rng.pick(BOUNDARY).as_bytes().to_vec()
            } else {
                arith(rng, &data[s..e])
            };
            data.splice(s..e, new);
        }
        // A line deleted.
        5 => {
            let (s, e) = pick_line(rng, data);
            data.drain(s..e);
        }
        // A line duplicated, or a line of another seed inserted.
        6 => {
            let line = if rng.chance(1, 2) || m.others.is_empty() {
                let (s, e) = pick_line(rng, data);
                data[s..e].to_vec()
            } else {
                let o = rng.pick(m.others);
                let (s, e) = pick_line(rng, o);
                o[s..e].to_vec()
            };
            let st = line_starts(data);
            let at = *rng.pick(&st);
            let mut l = line;
            if l.last() != Some(&b'\n') {
                l.push(b'\n');
            }
            data.splice(at..at, l);
        }
        // Two lines swapped (moves keys between TOML tables, records between blocks).
        7 => {
            let st = line_starts(data);
            if st.len() < 3 {
                return;
            }
            let (i, j) = (rng.below(st.len()), rng.below(st.len()));
            let (i, j) = (i.min(j), i.max(j));
            if i == j {
                return;
            }
            let (a0, a1) = line_range(&st, len, i);
            let (b0, b1) = line_range(&st, len, j);
            let mut out = Vec::with_capacity(len + 1);
            out.extend_from_slice(&data[..a0]);
            out.extend_from_slice(&data[b0..b1]);
            if b1 == len && data.last() != Some(&b'\n') {
                out.push(b'\n');
            }
            out.extend_from_slice(&data[a1..b0]);
            out.extend_from_slice(&data[a0..a1]);
            out.extend_from_slice(&data[b1..]);
            *data = out;
        }
        // Truncated, anywhere.
        8 => {
            let p = rng.below(len + 1);
            data.truncate(p);
        }
        // A run of lines repeated many times.
        9 => {
            let st = line_starts(data);
            let i = rng.below(st.len());
            let j = (i + rng.small_count(64)).min(st.len());
            let (s, _) = line_range(&st, len, i);
            let e = st.get(j).copied().unwrap_or(len);
            let block = data[s..e].to_vec();
            if block.is_empty() {
                return;
            }
            let times = *rng.pick(&[2usize, 10, 100, 1000, 10_000, 100_000]);
            let times = times.min(MAX_LEN.saturating_sub(len) / block.len());
            let mut rep = Vec::with_capacity(block.len() * times);
            for _ in 0..times {
                rep.extend_from_slice(&block);
            }
            data.splice(e..e, rep);
        }
        // BOM, NUL, multi-byte or invalid UTF-8, at the start or anywhere.
        10 => {
            let u = rng.pick(UNICODE).to_vec();
            let p = if rng.chance(1, 3) {
                0
            } else {
                rng.below(len + 1)
            };
            data.splice(p..p, u);
        }
        // A long run of a 2-byte character inside a line (error messages that cut lines
        // at a byte count must cut on a character boundary).
        11 => {
            let c = rng.pick(&["é", "€", "😀", "x"]).as_bytes();
            let n = rng.pick(&[30usize, 59, 61, 200, 5000]);
            let mut ins = Vec::new();
            if rng.chance(1, 2) {
                ins.push(b'x');
            }
            for _ in 0..*n {
                ins.extend_from_slice(c);
            }
            let (s, e) = pick_line(rng, data);
            let p = s + rng.below(e - s + 1);
            data.splice(p..p, ins);
        }
        // A word replaced by a word seen in a seed of the same family.
        12 if !m.words.is_empty() => {
            let w = rng.pick(m.words).clone();
            let p = rng.below(len + 1);
            let mut e = p;
            while e < len && data[e].is_ascii_alphanumeric() {
                e += 1;
            }
            let mut s = p;
            while s > 0 && data[s - 1].is_ascii_alphanumeric() {
                s -= 1;
            }
            data.splice(s..e, w);
        }
        // The value of a `key = value` or `key,value` line replaced by another type.
        13 => {
            let (s, e) = pick_line(rng, data);
            let line = &data[s..e];
            if let Some(eq) = line.iter().position(|&b| b == b'=' || b == b',') {
                let end = if line.last() == Some(&b'\n') {
                    e - 1
                } else {
                    e
                };
                let v = if rng.chance(1, 4) && !m.outside.is_empty() {
                    format!("\"{}\"", rng.pick(m.outside))
                } else {
                    rng.pick(VALUES).to_string()
                };
                let mut v = v.into_bytes();
                v.insert(0, b' ');
                data.splice(s + eq + 1..end, v);
            }
        }
        // A range of another seed spliced in.
        14 if !m.others.is_empty() => {
            let o = rng.pick(m.others);
            let a = rng.below(o.len() + 1);
            let b = (a + rng.below(4096)).min(o.len());
            let p = rng.below(len + 1);
            let q = (p + rng.below(256)).min(len);
            data.splice(p..q, o[a..b].iter().copied());
        }
        // A range deleted.
        15 => {
            let p = rng.below(len + 1);
            let q = (p + rng.below(512)).min(len);
            data.drain(p..q);
        }
        // Whitespace: all of a line's spaces removed, or tabs and spaces doubled.
        16 => {
            let (s, e) = pick_line(rng, data);
            let line: Vec<u8> = if rng.chance(1, 2) {
                data[s..e].iter().copied().filter(|&b| b != b' ').collect()
            } else {
                data[s..e]
                    .iter()
                    .flat_map(|&b| {
                        if b == b' ' {
                            vec![b'\t', b' ']
                        } else {
                            vec![b]
                        }
                    })
                    .collect()
            };
            data.splice(s..e, line);
        }
        // Line endings turned into CRLF or CR.
        17 => {
            let cr = rng.chance(1, 2);
            let mut out = Vec::with_capacity(len + len / 16);
            for &b in data.iter() {
                if b == b'\n' {
                    out.push(b'\r');
                    if cr {
                        continue;
                    }
                }
                out.push(b);
            }
            *data = out;
        }
        // A table header or key duplicated (TOML), or a line with its first token doubled.
        18 => {
            let st = line_starts(data);
            let heads: Vec<usize> = st
                .iter()
                .copied()
                .filter(|&s| data.get(s) == Some(&b'[') || data.get(s) == Some(&b'-'))
                .collect();
            if heads.is_empty() {
                return;
            }
            let s = *rng.pick(&heads);
            let e = data[s..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(len, |p| s + p + 1);
            let l = data[s..e].to_vec();
            let at = *rng.pick(&st);
            data.splice(at..at, l);
        }
        // Emptied.
        _ => {
            if rng.chance(1, 8) {
                data.clear();
            } else if len > 0 {
                let p = rng.below(len);
                data[p] = rng.next_u64() as u8;
            }
        }
    }
}

fn binary_once(rng: &mut Rng, data: &mut Vec<u8>, m: &Material) {
    let len = data.len();
    match rng.below(9) {
        0 if len > 0 => {
            let p = rng.below(len);
            data[p] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let p = rng.below(len);
            data[p] = *rng.pick(&[0u8, 0xff, 0x7f, 0x80, 1, 0xfe]);
        }
        // A little-endian integer overwritten with a boundary value, often aligned (the
        // `.gmt` header and tables are fixed-width fields).
        2 | 3 if len >= 8 => {
            let w = *rng.pick(&[2usize, 4, 8]);
            let mut p = rng.below(len - w + 1);
            if rng.chance(3, 4) {
                p -= p % w;
            }
            let v: u64 = *rng.pick(&[
                0,
                1,
                u64::MAX,
                u32::MAX as u64,
                i32::MAX as u64,
                1 << 31,
                1 << 32,
                u16::MAX as u64,
                1 << 40,
                i64::MAX as u64,
                len as u64,
                len as u64 + 1,
            ]);
            data[p..p + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        4 => {
            let p = rng.below(len + 1);
            data.truncate(p);
        }
        // A chunk duplicated elsewhere.
        5 if len > 0 => {
            let a = rng.below(len);
            let b = (a + rng.below(1024) + 1).min(len);
            let chunk = data[a..b].to_vec();
            let p = rng.below(len + 1);
            data.splice(p..p, chunk);
        }
        6 => {
            let p = rng.below(len + 1);
            let q = (p + rng.below(256)).min(len);
            data.drain(p..q);
        }
        // Random bytes inserted.
        7 => {
            let p = rng.below(len + 1);
            let n = rng.below(64) + 1;
            let ins: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            data.splice(p..p, ins);
        }
        // Spliced with another file of the family: its head and our tail, or the reverse.
        _ if !m.others.is_empty() => {
            let o = rng.pick(m.others);
            let cut = rng.below(len.min(o.len()) + 1);
            if rng.chance(1, 2) {
                data.splice(..cut, o[..cut].iter().copied());
            } else {
                data.truncate(cut);
                data.extend_from_slice(&o[cut..]);
            }
        }
        _ => {}
    }
}

/// Words of a seed: runs of letters, digits, `_`, `.` and `-` (opcodes, keys, names).
pub fn words(data: &[u8], out: &mut Vec<Vec<u8>>) {
    for w in data.split(|b| !(b.is_ascii_alphanumeric() || b"_.-".contains(b))) {
        if w.len() >= 2 && w.len() <= 40 && !out.iter().any(|x| x == w) {
            out.push(w.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_bounded() {
        let seed = b"[kernel]\ngrid = 640\nblock = 256\n# x\nname = \"a\"\n".to_vec();
        let others = vec![seed.clone()];
        let mut words_v = Vec::new();
        words(&seed, &mut words_v);
        let outside = vec!["/nonexistent".to_string()];
        let m = Material {
            others: &others,
            words: &words_v,
            outside: &outside,
        };
        let mut changed = 0;
        for i in 0..2000 {
            let (mut a, mut b) = (seed.clone(), seed.clone());
            text(&mut Rng::for_case(9, i), &mut a, &m);
            text(&mut Rng::for_case(9, i), &mut b, &m);
            assert_eq!(a, b);
            assert!(a.len() <= MAX_LEN);
            changed += (a != seed) as u32;
            let (mut c, mut d) = (seed.clone(), seed.clone());
            binary(&mut Rng::for_case(9, i), &mut c, &m);
            binary(&mut Rng::for_case(9, i), &mut d, &m);
            assert_eq!(c, d);
        }
        assert!(changed > 1800, "only {changed} of 2000 mutated");
    }

    #[test]
    fn numbers_are_found() {
        assert_eq!(numbers(b"a = 12, -3 0x1f"), vec![(4, 6), (8, 10), (11, 15)]);
    }
}
