//! Accel-Sim command lists (`kernelslist.g`): `MemcpyHtoD,0x<addr>,<bytes>` lines and kernel
//! file names, resolved inside the list's own folder (never outside it).

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::trace::input::resolve_compressed;
use crate::trace::source::Memcpy;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListEntry {
    Memcpy(Memcpy),
    /// A kernel trace file, resolved (possibly to a `.gz`/`.xz` sibling).
    Kernel(PathBuf),
}

#[derive(Clone, Debug, Default)]
pub struct KernelsList {
    pub entries: Vec<ListEntry>,
    /// Lines Accel-Sim ignores (e.g. `cudaMalloc,...` from forks), with their line numbers.
    pub ignored: Vec<(u64, String)>,
}

/// Parses a command list. Kernel entries must be relative names inside the list's folder.
pub fn parse_kernelslist(path: &Path) -> Result<KernelsList> {
    let bytes = crate::trace::input::read_all(path)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| Error::input(path, None, "command list is not UTF-8 text"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = KernelsList::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("MemcpyHtoD") {
            let f: Vec<&str> = line.split(',').collect();
            let expected = "expected 'MemcpyHtoD,0x<hex address>,<bytes>'";
            if f.len() != 3 {
                return Err(Error::at_line(
                    path,
                    n,
                    format!("{expected}, found '{line}'"),
                ));
            }
            let addr = f[1]
                .trim()
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    Error::at_line(path, n, format!("{expected}: bad address '{}'", f[1]))
                })?;
            let bytes = f[2].trim().parse().map_err(|_| {
                Error::at_line(path, n, format!("{expected}: bad byte count '{}'", f[2]))
            })?;
            out.entries.push(ListEntry::Memcpy(Memcpy { addr, bytes }));
        } else if line.starts_with("kernel") {
            let rel = Path::new(line);
            if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
                return Err(Error::at_line(
                    path,
                    n,
                    format!("kernel entry '{line}' must name a file inside the list's folder (no absolute paths or '..')"),
                ));
            }
            let want = dir.join(rel);
            let found = resolve_compressed(&want).ok_or_else(|| {
                Error::at_line(
                    path,
                    n,
                    format!("kernel file '{}' (or .gz/.xz) not found", want.display()),
                )
            })?;
            out.entries.push(ListEntry::Kernel(found));
        } else {
            out.ignored.push((n, line.to_string()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_escape() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kernelslist.g");
        std::fs::write(&p, "kernel-1.traceg\n").unwrap();
        assert!(parse_kernelslist(&p)
            .unwrap_err()
            .to_string()
            .contains("not found"));
        std::fs::write(&p, "kernel/../../etc/passwd\n").unwrap();
        assert!(parse_kernelslist(&p)
            .unwrap_err()
            .to_string()
            .contains("inside"));
        std::fs::write(d.path().join("kernel-1.traceg.gz"), b"").unwrap();
        std::fs::write(
            &p,
            "MemcpyHtoD,0x00007fc841500000,32768\nkernel-1.traceg\ncudaMalloc,0x1,2\n",
        )
        .unwrap();
        let l = parse_kernelslist(&p).unwrap();
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.ignored.len(), 1);
        std::fs::write(&p, "MemcpyHtoD,zz,1\n").unwrap();
        assert!(parse_kernelslist(&p)
            .unwrap_err()
            .to_string()
            .contains(":1:"));
    }
}
