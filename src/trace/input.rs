//! Opening trace files: plain files are memory-mapped, `.gz`/`.xz` files are decompressed
//! as a stream (bounded against decompression bombs), and a missing `kernel-1.traceg` is
//! satisfied by `kernel-1.traceg.gz`/`.xz` beside it. Text is handed out in chunks that end
//! on a boundary chosen by the caller, so memory stays bounded whatever the trace size.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Decompressed bytes allowed per compressed byte before the input is called a bomb.
pub const MAX_RATIO: u64 = 5000;
/// Decompressed bytes always allowed, whatever the ratio.
pub const MIN_ALLOWANCE: u64 = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
}

impl Compression {
    pub fn of(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("xz") => Compression::Xz,
            _ => Compression::None,
        }
    }
}

/// Finds `path`, or the same name with `.gz`/`.xz` added, or without it.
pub fn resolve_compressed(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    for ext in ["xz", "gz"] {
        let mut p = path.as_os_str().to_owned();
        p.push(".");
        p.push(ext);
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    if Compression::of(path) != Compression::None {
        let p = path.with_extension("");
        if p.is_file() {
            return Some(p);
        }
    }
    None
}

/// Counts decompressed bytes and fails past the allowance; a decoder's error (corrupt
/// or truncated data) becomes a [`StreamFault`] saying where in the stream it happened.
struct Bounded<R> {
    inner: R,
    read: u64,
    limit: u64,
    kind: &'static str,
}

/// Bad compressed input (corrupt, truncated, or a bomb), carried inside an
/// `io::Error` until [`read_error`] turns it into bad input naming the file.
#[derive(Debug)]
pub struct StreamFault(pub String);

impl std::fmt::Display for StreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StreamFault {}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let fault =
            |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, StreamFault(m));
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                return Err(fault(format!(
                    "corrupt or truncated {} stream after {} decompressed bytes ({e}); \
                     expected a complete {} file",
                    self.kind, self.read, self.kind
                )))
            }
        };
        self.read += n as u64;
        if self.read > self.limit {
            return Err(fault(format!(
                "decompressed size exceeds {} bytes ({}x the compressed size); \
                 refusing a possible decompression bomb",
                self.limit, MAX_RATIO
            )));
        }
        Ok(n)
    }
}

/// A failed read of `path`: bad input (exit 2) for a corrupt, truncated or oversized
/// compressed stream, at `line` when the caller knows it; a plain I/O error otherwise.
pub fn read_error(path: &Path, e: std::io::Error, line: Option<u64>) -> Error {
    match e.get_ref().and_then(|r| r.downcast_ref::<StreamFault>()) {
        Some(f) => Error::input(path, line, f.0.clone()),
        None => Error::io(path, e),
    }
}

/// A trace file's bytes: the whole file mapped, or a decompressing stream.
pub enum Input {
    Mapped(memmap2::Mmap),
    Stream(Box<dyn Read + Send>),
}

/// Opens a trace file by path (no name resolution).
pub fn open(path: &Path) -> Result<Input> {
    let file = crate::infile::open_regular(path)?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let limit = len.saturating_mul(MAX_RATIO).max(MIN_ALLOWANCE);
    let bounded = |r: Box<dyn Read + Send>, kind| -> Box<dyn Read + Send> {
        Box::new(Bounded {
            inner: r,
            read: 0,
            limit,
            kind,
        })
    };
    Ok(match Compression::of(path) {
        Compression::Gzip => Input::Stream(bounded(
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
                1 << 20,
                file,
            ))),
            "gzip",
        )),
        Compression::Xz => Input::Stream(bounded(
            Box::new(liblzma::read::XzDecoder::new_multi_decoder(
                BufReader::with_capacity(1 << 20, file),
            )),
            "xz",
        )),
        Compression::None => {
            if len == 0 {
                return Ok(Input::Stream(Box::new(std::io::empty())));
            }
            // SAFETY: the map is read-only; a trace must not be truncated by another
            // process while we read it (documented in ARCHITECTURE.md).
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
            #[cfg(unix)]
            let _ = map.advise(memmap2::Advice::Sequential);
            Input::Mapped(map)
        }
    })
}

/// Reads a whole (small) text file, decompressing if needed; never more than the memory
/// budget (`--max-mem`) of it.
pub fn read_all(path: &Path) -> Result<Vec<u8>> {
    match open(path)? {
        Input::Mapped(m) => {
            crate::infile::check_size(path, m.len() as u64)?;
            Ok(m.to_vec())
        }
        Input::Stream(r) => {
            let budget = crate::budget::budget();
            let mut v = Vec::new();
            r.take(budget.saturating_add(1))
                .read_to_end(&mut v)
                .map_err(|e| read_error(path, e, None))?;
            crate::infile::check_size(path, v.len() as u64)?;
            Ok(v)
        }
    }
}

/// A piece of text: whole lines, borrowed from a map or owned from a stream.
pub type Chunk<'a> = std::borrow::Cow<'a, [u8]>;

/// Hands out consecutive chunks of an [`Input`] that end just before a line starting with
/// `boundary` (or at the end of input).
pub struct Chunker<'a> {
    path: PathBuf,
    boundary: &'static [u8],
    target: usize,
    src: ChunkSrc<'a>,
}

enum ChunkSrc<'a> {
    Mapped {
        map: &'a memmap2::Mmap,
        pos: usize,
        released: usize,
    },
    Stream {
        r: Box<dyn Read + Send>,
        buf: Vec<u8>,
        eof: bool,
        /// 1-based line number of the buffer's first byte (counted from where the
        /// chunker started; [`Chunker::set_line`]).
        line: u64,
    },
}

/// The most decompressed text a streamed input may buffer while looking for the end of a
/// chunk (one thread block larger than this is refused, naming where it starts).
pub const MAX_STREAM_CHUNK: usize = 256 << 20;

impl<'a> Chunker<'a> {
    /// `start` is where reading begins in a mapped input (after a header); a stream input
    /// starts where it stands, primed with [`Chunker::prepend`].
    pub fn new(
        path: &Path,
        input: &'a mut Input,
        start: usize,
        boundary: &'static [u8],
        target: usize,
    ) -> Chunker<'a> {
        let src = match input {
            Input::Mapped(m) => ChunkSrc::Mapped {
                map: m,
                pos: start.min(m.len()),
                released: 0,
            },
            Input::Stream(r) => ChunkSrc::Stream {
                r: std::mem::replace(r, Box::new(std::io::empty())),
                buf: Vec::new(),
                eof: false,
                line: 1,
            },
        };
        Chunker {
            path: path.to_path_buf(),
            boundary,
            target: target.max(1),
            src,
        }
    }

    /// For a stream input: the line number its next byte has (after a header), for
    /// error messages.
    pub fn set_line(&mut self, l: u64) {
        if let ChunkSrc::Stream { line, .. } = &mut self.src {
            *line = l;
        }
    }

    /// For a stream input: pre-load bytes already read (e.g. while parsing a header).
    pub fn prepend(&mut self, bytes: &[u8]) {
        if let ChunkSrc::Stream { buf, .. } = &mut self.src {
            let mut v = bytes.to_vec();
            v.extend_from_slice(buf);
            *buf = v;
        }
    }

    /// Position of the first `\n` + boundary at or after `from`, as the index just past `\n`.
    fn find_boundary(bytes: &[u8], from: usize, boundary: &[u8]) -> Option<usize> {
        let mut at = from;
        while let Some(p) = bytes
            .get(at..)
            .and_then(|b| memchr::memmem::find(b, boundary))
        {
            let abs = at + p;
            if abs > 0 && bytes[abs - 1] == b'\n' {
                return Some(abs);
            }
            at = abs + 1;
        }
        None
    }

    /// Tells the kernel that mapped pages before everything handed out so far will not be
    /// needed again, so resident memory stays bounded by the chunks in flight rather than
    /// growing with the file. Call once the chunks handed out have been processed.
    pub fn release_consumed(&mut self) {
        if let ChunkSrc::Mapped { map, pos, released } = &mut self.src {
            let page = 4096;
            let upto = *pos / page * page;
            if upto > *released {
                // SAFETY: the map is a read-only file mapping; dropping its pages only means
                // they are read from the file again if touched, with the same contents.
                unsafe {
                    let _ = map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        *released,
                        upto - *released,
                    );
                }
                *released = upto;
            }
        }
    }

    /// The next chunk, `None` at the end of input.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'a>>> {
        let chunk: Chunk<'a> = match &mut self.src {
            ChunkSrc::Mapped { map, pos, .. } => {
                let bytes: &'a [u8] = &map[..];
                if *pos >= bytes.len() {
                    return Ok(None);
                }
                let from = (*pos + self.target).min(bytes.len());
                let end = Self::find_boundary(bytes, from, self.boundary).unwrap_or(bytes.len());
                let c = &bytes[*pos..end];
                *pos = end;
                std::borrow::Cow::Borrowed(c)
            }
            ChunkSrc::Stream { r, buf, eof, line } => {
                // As for a mapped input: the chunk ends at the first boundary at or past
                // `target` bytes (searching from the start made every chunk one thread
                // block and copied the rest of the buffer each time: quadratic).
                let mut search_from = self.target;
                let end = loop {
                    if buf.len() >= self.target || *eof {
                        let from = search_from.min(buf.len()).max(1);
                        if let Some(e) = Self::find_boundary(buf, from, self.boundary) {
                            break e;
                        }
                        if *eof {
                            break buf.len();
                        }
                        search_from = buf.len().saturating_sub(self.boundary.len() + 1);
                    }
                    if buf.len() >= MAX_STREAM_CHUNK {
                        return Err(Error::at_line(
                            &self.path,
                            *line,
                            format!(
                                "no thread-block boundary within {} MiB of decompressed text from here; expected thread blocks under that size (a corrupt or hostile stream?)",
                                MAX_STREAM_CHUNK >> 20
                            ),
                        ));
                    }
                    let old = buf.len();
                    let want = self.target.max(1 << 16);
                    buf.resize(old + want, 0);
                    let n = read_full(r, &mut buf[old..]).map_err(|(got, e)| {
                        // The line the stream broke in: the buffer's first line plus the
                        // lines decompressed since.
                        let at =
                            *line + memchr::memchr_iter(b'\n', &buf[..old + got]).count() as u64;
                        read_error(&self.path, e, Some(at))
                    })?;
                    buf.truncate(old + n);
                    if n < want {
                        *eof = true;
                    }
                };
                if end == 0 {
                    return Ok(None);
                }
                let rest = buf.split_off(end);
                let c = std::mem::replace(buf, rest);
                *line += memchr::memchr_iter(b'\n', &c).count() as u64;
                std::borrow::Cow::Owned(c)
            }
        };
        Ok(Some(chunk))
    }
}

/// Fills `buf` as far as the stream goes; on an error, also how many bytes it got first.
fn read_full(r: &mut dyn Read, mut buf: &mut [u8]) -> Result<usize, (usize, std::io::Error)> {
    let mut total = 0;
    while !buf.is_empty() {
        match r.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n;
                buf = &mut buf[n..];
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((total, e)),
        }
    }
    Ok(total)
}

/// Reads up to `max` bytes from the start of a stream input, for header parsing (returns
/// nothing for a mapped input, whose bytes are read in place).
pub fn read_prefix(input: &mut Input, max: usize, path: &Path) -> Result<Vec<u8>> {
    match input {
        Input::Mapped(_) => Ok(Vec::new()),
        Input::Stream(r) => {
            let mut v = vec![0; max];
            let n = read_full(r, &mut v).map_err(|(got, e)| {
                let at = 1 + memchr::memchr_iter(b'\n', &v[..got]).count() as u64;
                read_error(path, e, Some(at))
            })?;
            v.truncate(n);
            Ok(v)
        }
    }
}
