//! The one reader of input files that are not traces (study files, model files, shards,
//! `metrics.json`, reference CSVs, synthetic kernel specs). A path is opened with
//! `O_RDONLY | O_NONBLOCK | O_CLOEXEC`, so a FIFO never blocks the open, and the open
//! descriptor is checked before a byte is read: anything but a regular file (a FIFO, a
//! device such as a link to `/dev/zero`, a socket, a folder) is refused, and so are a
//! missing file and a dangling link, each as bad input (exit 2) naming the path. A file
//! larger than the memory budget (`--max-mem`, [`crate::budget`]) is
//! refused before reading, and every read is capped at the budget, so a file that grows
//! while read cannot exhaust memory. Trace files keep their own mapped or streamed
//! reader (`trace::input`), which opens through [`open_regular`].

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::budget::human;
use crate::error::{Error, Result};

/// What a file that is not a regular file is, for messages.
fn what(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a folder"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn not_regular(path: &Path, ft: &std::fs::FileType) -> Error {
    Error::input(
        path,
        None,
        format!(
            "is {}; expected a regular file (refusing to read it)",
            what(ft)
        ),
    )
}

/// An error opening or examining `path`: a missing file or a dangling link is bad input.
fn open_error(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        let msg = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                format!("is a dangling link (to {to}, which does not exist); expected a file")
            }
            _ => "no such file".to_string(),
        };
        return Error::input(path, None, msg);
    }
    if e.raw_os_error() == Some(libc::ENXIO) {
        // What opening a socket (or a device with no driver) gives.
        return Error::input(
            path,
            None,
            "is a socket or a device; expected a regular file",
        );
    }
    Error::io(path, e)
}

/// Opens `path` for reading if it is a regular file, without reading (and without
/// blocking on a FIFO); no size bound. Used as is by the trace readers.
pub fn open_regular(path: &Path) -> Result<File> {
    // Looked at before opening, so that a device is never opened at all.
    let m = std::fs::metadata(path).map_err(|e| open_error(path, e))?;
    if !m.is_file() {
        return Err(not_regular(path, &m.file_type()));
    }
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    // And the descriptor itself, in case the path changed in between.
    let m = file.metadata().map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(not_regular(path, &m.file_type()));
    }
    Ok(file)
}

fn too_big(path: &Path, len: u64, budget: u64) -> Error {
    Error::input(
        path,
        None,
        format!(
            "{len} bytes ({}) is more than the memory budget of {} (--max-mem); refusing to read it (raise --max-mem to read it)",
            human(len),
            human(budget)
        ),
    )
}

/// Refuses `len` bytes of `path` held in memory if more than the memory budget.
pub fn check_size(path: &Path, len: u64) -> Result<()> {
    let budget = crate::budget::budget();
    if len > budget {
        return Err(too_big(path, len, budget));
    }
    Ok(())
}

/// A reader that fails once more than `limit` bytes have come through (a file that grew
/// past the memory budget while read).
pub struct Capped<R> {
    inner: R,
    read: u64,
    limit: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // At most one byte past the limit is ever asked for: enough to know.
        let room = (self.limit + 1).saturating_sub(self.read);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        self.read += got as u64;
        if self.read > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "grew past the memory budget of {} (--max-mem) while read",
                    human(self.limit)
                ),
            ));
        }
        Ok(got)
    }
}

/// Opens a regular file of at most the memory budget, for streaming; reads through it
/// stop with an error past the budget.
pub fn open(path: &Path) -> Result<BufReader<Capped<File>>> {
    let file = open_regular(path)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    check_size(path, len)?;
    Ok(BufReader::with_capacity(
        1 << 16,
        Capped {
            inner: file,
            read: 0,
            limit: crate::budget::budget(),
        },
    ))
}

/// A failed read through [`open`]'s reader: growing past the budget is bad input.
pub fn read_error(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::InvalidData {
        Error::input(path, None, e.to_string())
    } else {
        Error::io(path, e)
    }
}

/// The whole file's bytes (a regular file within the memory budget).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut r = open(path)?;
    let len = r.get_ref().inner.metadata().map(|m| m.len()).unwrap_or(0);
    let mut v = Vec::with_capacity(len as usize);
    r.read_to_end(&mut v).map_err(|e| read_error(path, e))?;
    Ok(v)
}

/// The whole file as UTF-8 text; text that is not UTF-8 is bad input naming the line and
/// the byte offset of the first bad byte.
pub fn read_to_string(path: &Path) -> Result<String> {
    String::from_utf8(read_bytes(path)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        Error::at_line(
            path,
            line,
            format!("not UTF-8 text (invalid byte at offset {at}); expected a text file"),
        )
    })
}

/// The `kind` and `schema_version` of a JSON file written by this tool, read in one
/// streaming pass without building the document: each is `None` when absent or not a
/// string / unsigned integer, and both are when the top level is not an object.
#[derive(Debug, Default, serde::Deserialize)]
pub struct JsonHead {
    #[serde(default, deserialize_with = "lenient_str")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    pub schema_version: Option<u64>,
}

/// A JSON value reduced to what [`JsonHead`] needs; anything else is skipped in place.
enum Scalar {
    U64(u64),
    Str(String),
    Other,
}

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Scalar, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Scalar, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_unit<E>(self) -> std::result::Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Scalar, E> {
                Ok(Scalar::Str(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Scalar, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Scalar, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A string as itself; any other value present (number, null, array, object) as the
/// marker `(not a string)`, so a caller that checks the value refuses it by name.
fn lenient_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<String>, D::Error> {
    Ok(Some(match serde::Deserialize::deserialize(d)? {
        Scalar::Str(s) => s,
        _ => "(not a string)".to_string(),
    }))
}

fn lenient_u64<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<u64>, D::Error> {
    Ok(match serde::Deserialize::deserialize(d)? {
        Scalar::U64(v) => Some(v),
        _ => None,
    })
}

/// Reads `path`'s [`JsonHead`] in one streaming pass (the whole file is checked to be
/// JSON): malformed JSON is bad input at its line.
pub fn json_head(path: &Path) -> Result<JsonHead> {
    match serde_json::from_reader::<_, JsonHead>(open(path)?) {
        Ok(h) => Ok(h),
        Err(e) if e.is_data() => {
            // Only the top level can disagree (the fields take anything): not an object.
            // The whole file must still be JSON.
            serde_json::from_reader::<_, serde::de::IgnoredAny>(open(path)?)
                .map_err(|e| json_error(path, e))?;
            Ok(JsonHead::default())
        }
        Err(e) => Err(json_error(path, e)),
    }
}

/// A JSON file's syntax or read error as bad input (at its line when it has one).
pub fn json_error(path: &Path, e: serde_json::Error) -> Error {
    if e.is_io() {
        let io: std::io::Error = e.into();
        return read_error(path, io);
    }
    Error::input(
        path,
        (e.line() > 0).then_some(e.line() as u64),
        format!("malformed JSON: {e}"),
    )
}

/// Reads `path` as a `T` in one streaming pass (no document in memory); a mismatch with
/// `T` is bad input `what: ...` at its line.
pub fn json_typed<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    serde_json::from_reader(open(path)?).map_err(|e| {
        if e.is_data() {
            Error::input(
                path,
                (e.line() > 0).then_some(e.line() as u64),
                format!("{what}: {e}"),
            )
        } else {
            json_error(path, e)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_special_files_and_reports_utf8_position() {
        let e = read_bytes(Path::new("/dev/zero")).unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().contains("character device"),
            "{e}"
        );
        let e = read_bytes(Path::new("/")).unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().contains("a folder"),
            "{e}"
        );
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bad.txt");
        std::fs::write(&p, b"a\nb\n\xffc").unwrap();
        let e = read_to_string(&p).unwrap_err().to_string();
        assert!(e.contains(":3:") && e.contains("offset 4"), "{e}");
        std::fs::write(&p, b"ok").unwrap();
        assert_eq!(read_to_string(&p).unwrap(), "ok");
    }

    #[test]
    fn capped_reader_stops_past_its_limit() {
        let mut c = Capped {
            inner: std::io::repeat(7),
            read: 0,
            limit: 10,
        };
        let mut v = Vec::new();
        let e = c.read_to_end(&mut v).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    }
}
