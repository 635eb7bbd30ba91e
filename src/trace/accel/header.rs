//! The `-key = value` header of a `.traceg` file and the `#traces format` line that decides
//! the dialect of the instruction lines.

use std::path::Path;

use super::line::Dialect;
use crate::error::{Error, Result};
use crate::trace::inst::KernelInfo;
use crate::trace::isa::IsaGen;

/// Largest per-thread register count any NVIDIA GPU allows.
pub const MAX_REGS: u32 = 255;
/// Largest shared memory per CTA of any supported GPU (Hopper: 227 KiB).
pub const MAX_SHMEM: u32 = 228 << 10;

#[derive(Clone, Debug)]
pub struct Header {
    pub info: KernelInfo,
    pub dialect: Dialect,
    pub gen: IsaGen,
    /// Byte offset of the first body line.
    pub body_offset: usize,
    /// 1-based line number of the first body line.
    pub body_line: u64,
    /// The `#traces format = ...` line as written.
    pub format_line: String,
    pub lineinfo: bool,
    /// Header keys that were not recognised (reported, otherwise ignored like Accel-Sim).
    pub unknown_keys: Vec<String>,
}

fn parse_num<T: std::str::FromStr>(v: &str, path: &Path, line: u64, key: &str) -> Result<T> {
    v.trim().parse().map_err(|_| {
        Error::at_line(
            path,
            line,
            format!("'-{key}': expected a decimal number, found '{}'", v.trim()),
        )
    })
}

fn parse_hex(v: &str, path: &Path, line: u64, key: &str) -> Result<u64> {
    let t = v.trim();
    let digits = t.strip_prefix("0x").unwrap_or(t);
    u64::from_str_radix(digits, 16).map_err(|_| {
        Error::at_line(
            path,
            line,
            format!("'-{key}': expected a hex address (0x...), found '{t}'"),
        )
    })
}

fn parse_dim3(v: &str, path: &Path, line: u64, key: &str) -> Result<[u32; 3]> {
    let t = v.trim();
    let inner = t
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| {
            Error::at_line(
                path,
                line,
                format!("'-{key}': expected (x,y,z), found '{t}'"),
            )
        })?;
    let parts: Vec<&str> = inner.split(',').collect();
    if parts.len() != 3 {
        return Err(Error::at_line(
            path,
            line,
            format!("'-{key}': expected three dimensions (x,y,z), found '{t}'"),
        ));
    }
    let mut d = [0u32; 3];
    for (o, p) in d.iter_mut().zip(parts) {
        *o = parse_num(p, path, line, key)?;
        if *o == 0 {
            return Err(Error::at_line(
                path,
                line,
                format!("'-{key}': dimensions must be at least 1, found '{t}'"),
            ));
        }
    }
    Ok(d)
}

/// What the header's `-key = value` lines have said so far.
struct HeaderLines {
    info: KernelInfo,
    /// The `-binary version` and its line.
    seen_binary: Option<(u32, u64)>,
    lineinfo: bool,
    unknown_keys: Vec<String>,
}

impl HeaderLines {
    /// Records one `-key = value` line (line `line_no`), checking its value.
    fn set(&mut self, key: &str, value: &str, path: &Path, line_no: u64) -> Result<()> {
        match key {
            "kernel name" => self.info.name = value.to_string(),
            "kernel id" => self.info.id = parse_num(value, path, line_no, key)?,
            "grid dim" => self.info.grid = parse_dim3(value, path, line_no, key)?,
            "block dim" => {
                self.info.block = parse_dim3(value, path, line_no, key)?;
                let t = self.info.threads_per_cta();
                if t > 1024 {
                    return Err(Error::at_line(
                        path,
                        line_no,
                        format!(
                            "'-block dim = {value}': {t} threads per block; expected at most 1024"
                        ),
                    ));
                }
            }
            "shmem" => {
                self.info.shmem = parse_num(value, path, line_no, key)?;
                if self.info.shmem > MAX_SHMEM {
                    return Err(Error::at_line(
                        path,
                        line_no,
                        format!("'-shmem = {value}': expected at most {MAX_SHMEM} bytes per CTA"),
                    ));
                }
            }
            "nregs" => {
                self.info.nregs = parse_num(value, path, line_no, key)?;
                if self.info.nregs == 0 || self.info.nregs > MAX_REGS {
                    return Err(Error::at_line(
                        path,
                        line_no,
                        format!("'-nregs = {value}': expected 1..={MAX_REGS} registers per thread"),
                    ));
                }
            }
            "binary version" => {
                let v: u32 = parse_num(value, path, line_no, key)?;
                self.info.binary_version = v;
                self.seen_binary = Some((v, line_no));
                if IsaGen::from_binary_version(v).is_none() {
                    return Err(Error::at_line(path, line_no, format!("'-binary version = {v}': expected a SASS version such as 70 (Volta), 80 (Ampere) or 90 (Hopper)")));
                }
            }
            "cuda stream id" => self.info.stream_id = parse_num(value, path, line_no, key)?,
            "shmem base_addr" => self.info.shmem_base = parse_hex(value, path, line_no, key)?,
            "local mem base_addr" => self.info.local_base = parse_hex(value, path, line_no, key)?,
            "nvbit version" => self.info.nvbit_version = value.to_string(),
            "accelsim tracer version" => {
                // Accel-Sim reads this with %d: "1.2" is version 1.
                let major = value.split('.').next().unwrap_or("");
                self.info.tracer_version = parse_num(major, path, line_no, key)?;
            }
            "enable lineinfo" => {
                self.lineinfo = match value {
                    "0" => false,
                    "1" => true,
                    _ => {
                        return Err(Error::at_line(
                            path,
                            line_no,
                            format!("'-enable lineinfo': expected 0 or 1, found '{value}'"),
                        ))
                    }
                }
            }
            _ => self.unknown_keys.push(key.to_string()),
        }
        Ok(())
    }

    /// The header, at the `#traces format` line `text` (`fmt`: after its `#`): the body
    /// starts at byte `body_offset`, line `line_no + 1`.
    fn finish(
        self,
        fmt: &str,
        text: &str,
        body_offset: usize,
        line_no: u64,
        path: &Path,
    ) -> Result<Header> {
        let gen = match self.seen_binary {
            Some((v, l)) => IsaGen::from_binary_version(v).ok_or_else(|| {
                Error::at_line(path, l, format!("'-binary version = {v}': expected a SASS version such as 70 (Volta), 80 (Ampere) or 90 (Hopper)"))
            })?,
            None => return Err(Error::at_line(path, line_no, "header has no '-binary version' line (needed to classify opcodes)")),
        };
        let imms = if fmt.contains("immediate1 immediate2") {
            2
        } else if fmt.contains("immediate") {
            1
        } else {
            0
        };
        let dialect = Dialect {
            prefix: self.info.tracer_version < 3,
            lineinfo: self.lineinfo,
            imms,
            vals: fmt.contains("Val|NoVal"),
        };
        let info = self.info;
        if info.block == [0; 3] || info.grid == [0; 3] {
            return Err(Error::at_line(
                path,
                line_no,
                "header lacks '-grid dim' or '-block dim'",
            ));
        }
        if info.block.contains(&0) || info.grid.contains(&0) {
            return Err(Error::at_line(
                path,
                line_no,
                format!(
                    "grid ({},{},{}) of blocks ({},{},{}): every dimension must be at least 1 (a kernel without thread blocks does no work)",
                    info.grid[0], info.grid[1], info.grid[2], info.block[0], info.block[1], info.block[2]
                ),
            ));
        }
        Ok(Header {
            info,
            dialect,
            gen,
            body_offset,
            body_line: line_no + 1,
            format_line: text.to_string(),
            lineinfo: self.lineinfo,
            unknown_keys: self.unknown_keys,
        })
    }
}

/// Parses the header at the start of `bytes`. The body starts after the format line.
pub fn parse_header(bytes: &[u8], path: &Path) -> Result<Header> {
    let mut h = HeaderLines {
        info: KernelInfo {
            origin: path.display().to_string(),
            ..Default::default()
        },
        seen_binary: None,
        lineinfo: false,
        unknown_keys: Vec::new(),
    };
    let mut pos = 0;
    let mut line_no = 0u64;
    let mut last_line_no = 1;
    while pos < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[pos..])
            .map(|e| pos + e)
            .unwrap_or(bytes.len());
        let raw = &bytes[pos..end];
        line_no += 1;
        last_line_no = line_no;
        pos = (end + 1).min(bytes.len().max(end + 1));
        let text = std::str::from_utf8(raw)
            .map_err(|_| {
                Error::at_line(
                    path,
                    line_no,
                    "header line is not valid UTF-8 text (is this an Accel-Sim .traceg file?)",
                )
            })?
            .trim();
        if text.is_empty() {
            continue;
        }
        if let Some(fmt) = text.strip_prefix('#') {
            if !fmt.starts_with("traces format") {
                return Err(Error::at_line(
                    path,
                    line_no,
                    format!(
                        "expected the '#traces format = ...' line to end the header, found '{}'",
                        clip(text)
                    ),
                ));
            }
            return h.finish(fmt, text, pos.min(bytes.len()), line_no, path);
        }
        let Some(kv) = text.strip_prefix('-') else {
            return Err(Error::at_line(
                path,
                line_no,
                format!("expected a '-key = value' header line or the '#traces format' line, found '{}'", clip(text)),
            ));
        };
        let Some((key, value)) = kv.split_once('=') else {
            return Err(Error::at_line(
                path,
                line_no,
                format!("expected '-key = value', found '{}'", clip(text)),
            ));
        };
        let key = key.trim();
        let value = value.trim();
        h.set(key, value, path, line_no)?;
    }
    Err(Error::at_line(
        path,
        last_line_no,
        "file ends inside the header: expected the '#traces format = ...' line and thread blocks",
    ))
}

/// At most 60 characters of `s` for an error message (cut at a character boundary).
fn clip(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
