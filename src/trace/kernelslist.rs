//! Accel-Sim command lists (`kernelslist.g`): `MemcpyHtoD,0x<addr>,<bytes>` lines and kernel
//! file names, resolved inside the list's own folder (never outside it: the check is
//! made again after links are resolved, so a symlink in the bundle cannot reach out).

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
    // A byte-order mark is not part of the first entry.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let root = dir
        .canonicalize()
        .map_err(|e| Error::input(path, None, format!("cannot resolve the list's folder: {e}")))?;
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
            // Confinement after resolution: the file actually opened (links followed)
            // must lie inside the list's folder.
            let real = found.canonicalize().map_err(|e| {
                Error::at_line(path, n, format!("cannot resolve kernel file '{line}': {e}"))
            })?;
            if !real.starts_with(&root) {
                return Err(Error::at_line(
                    path,
                    n,
                    format!(
                        "kernel entry '{line}' resolves (through a symbolic link) outside the list's folder {}; refusing to read it",
                        root.display()
                    ),
                ));
            }
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

    #[test]
    fn links_out_of_the_folder_are_refused_and_not_echoed() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "root:x:0:0\n").unwrap();
        std::fs::create_dir(outside.path().join("sub")).unwrap();
        std::fs::write(outside.path().join("sub/kernel-1.traceg"), "root:x\n").unwrap();
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("kernelslist.g");
        // A file link, a link to a folder, and a compressed sibling that is a link.
        std::os::unix::fs::symlink(&secret, d.path().join("kernel-1.traceg")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("sub"), d.path().join("kernels")).unwrap();
        std::os::unix::fs::symlink(&secret, d.path().join("kernel-3.traceg.xz")).unwrap();
        for entry in [
            "kernel-1.traceg",
            "kernels/kernel-1.traceg",
            "kernel-3.traceg",
        ] {
            std::fs::write(&p, format!("{entry}\n")).unwrap();
            let e = parse_kernelslist(&p).unwrap_err().to_string();
            assert!(
                e.contains("outside the list's folder") && e.contains(":1:"),
                "{e}"
            );
            assert!(!e.contains("root:x"), "the target's content leaked: {e}");
        }
        // A link that stays inside the folder is fine.
        std::fs::write(d.path().join("real.traceg"), "").unwrap();
        std::os::unix::fs::symlink(
            d.path().join("real.traceg"),
            d.path().join("kernel-2.traceg"),
        )
        .unwrap();
        std::fs::write(&p, "kernel-2.traceg\n").unwrap();
        assert_eq!(parse_kernelslist(&p).unwrap().entries.len(), 1);
    }

    #[test]
    fn a_byte_order_mark_does_not_hide_the_first_kernel() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("kernel-1.traceg"), "").unwrap();
        let p = d.path().join("kernelslist.g");
        std::fs::write(&p, "\u{feff}kernel-1.traceg\n").unwrap();
        let l = parse_kernelslist(&p).unwrap();
        assert_eq!(l.entries.len(), 1);
        assert!(l.ignored.is_empty());
    }
}
