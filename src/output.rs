//! Output discipline: every file the tool writes goes through here. A write creates a
//! fresh temporary file beside the target (`O_CREAT | O_EXCL | O_NOFOLLOW`, random name),
//! fills it, and renames it over the target atomically; the temporary file is removed on
//! every error path and on unwinding (a drop guard). Targets that are symbolic links or
//! not regular files (devices, FIFOs, directories) are refused, and so is any target that
//! is one of the command's inputs (same device and inode), so `run in.gmt --json in.gmt`
//! cannot replace its own trace. Leaf module: it knows files, nothing of GPUs.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A file's identity: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

fn file_id(m: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId {
        dev: m.dev(),
        ino: m.ino(),
    }
}

/// Files under an input folder recorded at most (a folder with more is still read; only
/// the first this many files are protected by identity).
const MAX_INPUT_FILES: usize = 100_000;

/// The inputs of one command, which none of its outputs may replace.
#[derive(Clone, Debug, Default)]
pub struct Guard {
    /// Shared: every [`Pending`] keeps the guard for its final check, and a folder input
    /// may list many files.
    inputs: std::sync::Arc<Vec<(PathBuf, FileId)>>,
}

impl Guard {
    pub fn new() -> Guard {
        Guard::default()
    }

    /// A guard protecting every path of `inputs` (files, or folders and the files in them).
    pub fn of<P: AsRef<Path>>(inputs: impl IntoIterator<Item = P>) -> Guard {
        let mut g = Guard::new();
        for p in inputs {
            g.protect(p.as_ref());
        }
        g
    }

    /// Records `p` as an input (following links: what is read is what is protected). A
    /// folder protects the files under it. Paths that do not exist are ignored (the
    /// command reports them when it opens them).
    pub fn protect(&mut self, p: &Path) {
        let Ok(m) = std::fs::metadata(p) else {
            return;
        };
        let inputs = std::sync::Arc::make_mut(&mut self.inputs);
        if m.is_dir() {
            let mut stack = vec![p.to_path_buf()];
            while let Some(d) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in rd.flatten() {
                    if inputs.len() >= MAX_INPUT_FILES {
                        return;
                    }
                    let path = e.path();
                    match std::fs::metadata(&path) {
                        Ok(m) if m.is_dir() => {
                            // Links to folders are not descended (no cycles).
                            if !e.file_type().is_ok_and(|t| t.is_symlink()) {
                                stack.push(path);
                            }
                        }
                        Ok(m) => inputs.push((path, file_id(&m))),
                        Err(_) => {}
                    }
                }
            }
        } else {
            inputs.push((p.to_path_buf(), file_id(&m)));
        }
    }

    /// Why `target` may not be written, if it may not: a link, not a regular file, or
    /// one of this guard's inputs or of the process's ([`protect_input`]).
    pub fn check(&self, target: &Path) -> Result<()> {
        let refuse = |why: String| Err(Error::Usage(format!("{}: {why}", target.display())));
        match std::fs::symlink_metadata(target) {
            Ok(m) if m.file_type().is_symlink() => {
                refuse("is a symbolic link; refusing to write through it (remove it or choose another output path)".into())
            }
            Ok(m) if m.is_dir() => refuse("is a directory; expected a file path".into()),
            Ok(m) if !m.is_file() => refuse(
                "is not a regular file (a device, FIFO or socket); refusing to replace it".into(),
            ),
            Ok(m) => {
                let id = file_id(&m);
                let global = process_inputs();
                let input = self.inputs.iter().find(|(_, i)| *i == id).or_else(|| {
                    global.iter().find(|(_, i)| *i == id)
                });
                match input {
                    Some((p, _)) => refuse(format!(
                        "is an input of this command ({}); refusing to overwrite it",
                        p.display()
                    )),
                    None => Ok(()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(target, e)),
        }
    }

    /// Starts writing `target`: checks it, creates its folder, and opens a fresh
    /// temporary file beside it. Nothing is visible at `target` before
    /// [`Pending::commit`].
    pub fn create(&self, target: &Path) -> Result<Pending> {
        self.check(target)?;
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let name = target
            .file_name()
            .ok_or_else(|| Error::Usage(format!("{}: expected a file path", target.display())))?;
        for _ in 0..16 {
            let mut tmp_name = std::ffi::OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(format!(".{:016x}.tmp", random()));
            let tmp = dir.join(tmp_name);
            let mut o = OpenOptions::new();
            o.write(true).read(true).create_new(true);
            {
                use std::os::unix::fs::OpenOptionsExt;
                o.custom_flags(libc::O_NOFOLLOW).mode(0o644);
            }
            match o.open(&tmp) {
                Ok(f) => {
                    return Ok(Pending {
                        file: Some(BufWriter::with_capacity(1 << 20, f)),
                        tmp,
                        target: target.to_path_buf(),
                        guard: self.clone(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&tmp, e)),
            }
        }
        Err(Error::Usage(format!(
            "{}: could not create a fresh temporary file beside it",
            target.display()
        )))
    }

    /// Writes `bytes` to `target` through a temporary file and an atomic rename.
    pub fn write(&self, target: &Path, bytes: &[u8]) -> Result<()> {
        let mut p = self.create(target)?;
        p.writer()
            .write_all(bytes)
            .map_err(|e| Error::io(&p.tmp, e))?;
        p.commit()
    }
}

/// Inputs of the whole command ([`protect_input`]), which no [`Guard`] writes over.
static PROCESS_INPUTS: std::sync::Mutex<Vec<(PathBuf, FileId)>> = std::sync::Mutex::new(Vec::new());

fn process_inputs() -> std::sync::MutexGuard<'static, Vec<(PathBuf, FileId)>> {
    PROCESS_INPUTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records `p` (a file, or a folder and its files) as an input of the running command:
/// every [`Guard`], even [`Guard::new`] deep in a figure writer, refuses to replace it.
pub fn protect_input(p: &Path) {
    let g = Guard::of([p]);
    process_inputs().extend(g.inputs.iter().cloned());
}

/// Refuses, before anything is written, an input that lies in the output folder `dir`
/// (or under it) with a name such a writer may give its outputs (`outputs(name)`), so
/// that `report X/summary.md` cannot replace its own JSON with its summary.
pub fn check_input_outside(input: &Path, dir: &Path, outputs: impl Fn(&str) -> bool) -> Result<()> {
    let (Ok(file), Ok(dir)) = (std::fs::canonicalize(input), std::fs::canonicalize(dir)) else {
        return Ok(());
    };
    let named = file
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(&outputs);
    if named && file.parent().is_some_and(|p| p.starts_with(&dir)) {
        return Err(Error::Usage(format!(
            "{}: an input of this command lies in its output folder {} under a name it \
             writes; refusing to overwrite it (choose another -o/--out)",
            input.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Kernel folders no output is written into: devices, process and system state (a
/// regular file can be created in `/dev` as root, and nothing good comes of it).
const SYSTEM_DIRS: &[&str] = &["/dev", "/proc", "/sys"];

/// Checks, before any work, that `dir` can be an output folder: it (or, where it does not
/// exist yet, its nearest existing ancestor, where it would be created) is a folder, is
/// not under [`SYSTEM_DIRS`], and can hold a new regular file — probed by creating and
/// removing a fresh temporary file there (so `/proc/self`, `/sys` and read-only folders
/// are refused now, not after a long simulation).
pub fn check_dir(dir: &Path) -> Result<()> {
    let refuse = |why: String| {
        Err(Error::Usage(format!(
            "{}: {why}; expected an output folder",
            dir.display()
        )))
    };
    let mut at = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir.to_path_buf()
    };
    loop {
        match std::fs::metadata(&at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) if at == dir => return refuse("exists and is not a folder".into()),
            Ok(_) => return refuse(format!("{} is not a folder", at.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                at = match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
            }
            // A name the file system cannot hold is a bad folder name, not an I/O failure.
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                return refuse("a name in it is longer than the file system allows".into())
            }
            Err(e) => return Err(Error::io(&at, e)),
        }
    }
    let real = std::fs::canonicalize(&at).map_err(|e| Error::io(&at, e))?;
    if let Some(s) = SYSTEM_DIRS.iter().find(|s| real.starts_with(s)) {
        return refuse(format!(
            "is in {s}, a system folder (devices, process or kernel state)"
        ));
    }
    for _ in 0..16 {
        let probe = at.join(format!(".gpumodel-probe.{:016x}.tmp", random()));
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(libc::O_NOFOLLOW).mode(0o644);
        }
        match o.open(&probe) {
            Ok(f) => {
                drop(f);
                return std::fs::remove_file(&probe).map_err(|e| Error::io(&probe, e));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return refuse(format!("cannot create a file in {} ({e})", at.display())),
        }
    }
    refuse(format!("cannot create a fresh file in {}", at.display()))
}

/// Longest file or folder name [`component`] makes from data, in bytes (well under
/// `NAME_MAX` = 255 with the temporary-name decoration of [`Guard::create`] added).
pub const MAX_COMPONENT: usize = 120;

/// One safe path component from a name taken from data (a sweep point, a workload, an
/// application): characters other than ASCII letters, digits and `allowed` become
/// `replacement`; a result that is empty or starts with `.` (so `.`, `..` and hidden
/// names) gets `fallback` in front; one longer than [`MAX_COMPONENT`] is cut and ends in a
/// hash of the whole name (two long names stay apart). Never `/`, NUL, empty, `.`, `..`.
pub fn component(name: &str, allowed: &[char], replacement: char, fallback: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || (allowed.contains(&c) && c != '/' && c != '\0') {
                c
            } else {
                replacement
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert_str(0, fallback);
    }
    if s.len() > MAX_COMPONENT {
        // Only ASCII remains when `replacement` and `fallback` are ASCII; cut on a
        // character boundary anyway.
        let mut cut = MAX_COMPONENT - 17;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        s = format!("{}-{h:016x}", &s[..cut]);
    }
    s
}

/// 64 random bits from the standard library's per-process random hasher keys, the time
/// and a counter (temporary names only; nothing simulated depends on them).
fn random() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// A file being written: a temporary beside its target, renamed over it by
/// [`Pending::commit`], removed if dropped uncommitted (an error or a panic).
pub struct Pending {
    file: Option<BufWriter<File>>,
    tmp: PathBuf,
    target: PathBuf,
    guard: Guard,
}

impl Pending {
    /// The buffered temporary file.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.file.as_mut().expect("open until commit")
    }

    /// The temporary file's path (for error messages).
    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flushes, syncs and renames the temporary file over the target (checked again
    /// just before, so a link planted meanwhile is refused too).
    pub fn commit(mut self) -> Result<()> {
        let f = self.file.take().expect("open until commit");
        let f = f
            .into_inner()
            .map_err(|e| Error::io(&self.tmp, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        drop(f);
        self.guard.check(&self.target)?;
        std::fs::rename(&self.tmp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file.take();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn components_are_one_safe_name() {
        let c = |n: &str| component(n, &['.', '-', '_'], '-', "x");
        assert_eq!(c("dram.channels=16"), "dram.channels-16");
        for bad in ["", ".", "..", "../..", "/", "a/../b", "\0", ".hidden"] {
            let s = c(bad);
            assert!(
                !s.is_empty() && !s.starts_with('.') && !s.contains('/') && !s.contains('\0'),
                "{bad:?} -> {s:?}"
            );
        }
        let long = "y".repeat(10_000);
        let s = c(&long);
        assert!(s.len() <= MAX_COMPONENT, "{}", s.len());
        assert_ne!(s, c(&("y".repeat(9_999) + "z")));
        assert_eq!(c(&"y".repeat(MAX_COMPONENT)), "y".repeat(MAX_COMPONENT));
    }

    #[test]
    fn writes_replace_atomically_and_leave_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("sub/out.json");
        Guard::new().write(&t, b"one").unwrap();
        Guard::new().write(&t, b"two").unwrap();
        assert_eq!(std::fs::read(&t).unwrap(), b"two");
        assert!(leftovers(&d.path().join("sub")).is_empty());
    }

    #[test]
    fn links_special_files_directories_and_inputs_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = Guard::new().write(&link, b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        let e = Guard::new()
            .write(Path::new("/dev/null"), b"x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = Guard::new().write(d.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let g = Guard::of([&victim]);
        let e = g.write(&victim, b"x").unwrap_err().to_string();
        assert!(e.contains("input"), "{e}");
        // A hard link to an input is the same file.
        let hard = d.path().join("hard");
        std::fs::hard_link(&victim, &hard).unwrap();
        assert!(g.write(&hard, b"x").is_err());
        // A folder input protects its files.
        let g = Guard::of([d.path()]);
        assert!(g.write(&victim, b"x").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn an_abandoned_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("out.gmt");
        {
            let mut p = Guard::new().create(&t).unwrap();
            p.writer().write_all(b"half").unwrap();
        }
        assert!(!t.exists());
        assert!(leftovers(d.path()).is_empty());
        let r = std::panic::catch_unwind(|| {
            let mut p = Guard::new().create(&t).unwrap();
            p.writer().write_all(b"half").unwrap();
            panic!("boom");
        });
        assert!(r.is_err());
        assert!(!t.exists());
        assert!(leftovers(d.path()).is_empty());
    }
}
