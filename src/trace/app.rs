//! Applications: an ordered list of kernels (stream order) plus their host-to-device copies,
//! opened from any supported input, and conversion of any input to `.gmt`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::trace::accel::{self, ParseOptions};
use crate::trace::enc::{EncKernel, EncSink};
use crate::trace::gmt::{GmtFile, GmtWriter};
use crate::trace::kernelslist::{parse_kernelslist, ListEntry};
use crate::trace::source::{Command, KernelSource};

/// What a path on the command line holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A folder with a `kernelslist.g`.
    AccelDir(PathBuf),
    /// An Accel-Sim command list.
    KernelsList(PathBuf),
    /// One `.traceg` (plain, `.gz`, `.xz`).
    Traceg(PathBuf),
    /// An NVBit `mem_trace` log.
    MemTrace(PathBuf),
    /// NVBit `instr_count` / `opcode_hist` output (counts only: inspect, not run).
    Counts(PathBuf),
    /// A synthetic kernel spec.
    Synth(PathBuf),
    Gmt(PathBuf),
}

/// Decides what `path` is from its name and, for plain files, its first bytes.
pub fn detect(path: &Path) -> Result<InputKind> {
    if path.is_dir() {
        for name in ["kernelslist.g", "kernelslist.g.xz", "kernelslist.g.gz"] {
            let p = path.join(name);
            if p.is_file() {
                return Ok(InputKind::AccelDir(p));
            }
        }
        return Err(Error::input(
            path,
            None,
            "folder has no kernelslist.g (expected an Accel-Sim trace folder)",
        ));
    }
    if !path.exists() {
        return Err(Error::input(path, None, "no such file or folder"));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let base = name.trim_end_matches(".gz").trim_end_matches(".xz");
    if name.ends_with(".gmt") {
        return Ok(InputKind::Gmt(path.to_path_buf()));
    }
    if name.ends_with(".toml") {
        return Ok(InputKind::Synth(path.to_path_buf()));
    }
    if base.starts_with("kernelslist") {
        return Ok(InputKind::KernelsList(path.to_path_buf()));
    }
    if base.ends_with(".traceg") {
        return Ok(InputKind::Traceg(path.to_path_buf()));
    }
    // Sniff the start of the (decompressed) text.
    let head = {
        use std::io::Read;
        let mut buf = vec![0u8; 4096];
        let n = match crate::trace::input::open(path)? {
            crate::trace::input::Input::Mapped(m) => {
                let n = m.len().min(buf.len());
                buf[..n].copy_from_slice(&m[..n]);
                n
            }
            crate::trace::input::Input::Stream(mut r) => r
                .read(&mut buf)
                .map_err(|e| crate::trace::input::read_error(path, e, None))?,
        };
        buf.truncate(n);
        buf
    };
    if head.starts_with(crate::trace::gmt::MAGIC.as_slice()) {
        return Ok(InputKind::Gmt(path.to_path_buf()));
    }
    let text = String::from_utf8_lossy(&head);
    if text.starts_with("-kernel name") {
        return Ok(InputKind::Traceg(path.to_path_buf()));
    }
    if text
        .lines()
        .any(|l| l.starts_with("MEMTRACE: ") || (l.starts_with("CTA ") && l.contains(" - warp ")))
    {
        return Ok(InputKind::MemTrace(path.to_path_buf()));
    }
    if text
        .lines()
        .any(|l| l.starts_with("kernel ") && l.contains("#thread-blocks"))
    {
        return Ok(InputKind::Counts(path.to_path_buf()));
    }
    Err(Error::input(
        path,
        None,
        "unrecognised input: expected an Accel-Sim folder, kernelslist.g, .traceg[.gz|.xz], NVBit mem_trace/instr_count log, synthetic spec (.toml) or .gmt",
    ))
}

/// An application ready to run: kernels in launch order.
#[derive(Clone)]
pub struct App {
    pub name: String,
    pub kernels: Vec<Arc<dyn KernelSource>>,
    pub commands: Vec<Command>,
    /// Notes about the input worth telling the user (ignored lines, unknown keys...).
    pub notes: Vec<String>,
}

fn app_name(path: &Path) -> String {
    let p = if path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("kernelslist"))
    {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "app".into());
    n.trim_end_matches(".gz")
        .trim_end_matches(".xz")
        .trim_end_matches(".gmt")
        .trim_end_matches(".toml")
        .to_string()
}

/// Progress of a parse: (kernels done, kernels total, text bytes of the current kernel).
pub type Progress<'a> = &'a (dyn Fn(usize, usize, u64) + Sync);

/// A text trace's kernels (a file launched again shares its kernel), its commands in
/// order, and notes about what was read.
type TextApp = (Vec<Arc<EncKernel>>, Vec<Command>, Vec<String>);

/// Parses the kernels of a text input into memory (encoded).
fn parse_text(kind: &InputKind, opts: &ParseOptions, progress: Progress) -> Result<TextApp> {
    let mut notes = Vec::new();
    let entries = match kind {
        InputKind::AccelDir(list) | InputKind::KernelsList(list) => {
            let l = parse_kernelslist(list)?;
            for (n, t) in &l.ignored {
                notes.push(format!(
                    "{}:{n}: ignored command '{t}' (Accel-Sim ignores it too)",
                    list.display()
                ));
            }
            l.entries
        }
        InputKind::Traceg(p) => vec![ListEntry::Kernel(p.clone())],
        InputKind::MemTrace(p) => {
            let m = crate::trace::nvbit::parse_mem_trace(p, opts.lenient_opcodes)?;
            if m.other_lines > 0 {
                notes.push(format!(
                    "{}: {} non-trace lines (program output) skipped",
                    p.display(),
                    m.other_lines
                ));
            }
            let cmds = (0..m.kernels.len() as u32).map(Command::Kernel).collect();
            return Ok((m.kernels.into_iter().map(Arc::new).collect(), cmds, notes));
        }
        _ => return Err(Error::Usage("not a text trace".into())),
    };
    let total = entries
        .iter()
        .filter(|e| matches!(e, ListEntry::Kernel(_)))
        .count();
    let mut kernels: Vec<Arc<EncKernel>> = Vec::new();
    let mut commands = Vec::new();
    // A trace file launched again is the same kernel: parsed once, shared by its launches
    // (a list repeating one file 100 000 times held 1.6 GiB of copies).
    let mut parsed: std::collections::HashMap<std::path::PathBuf, usize> = Default::default();
    for e in entries {
        match e {
            ListEntry::Memcpy(m) => commands.push(Command::MemcpyHtoD(m)),
            ListEntry::Kernel(p) => {
                commands.push(Command::Kernel(kernels.len() as u32));
                if let Some(&i) = parsed.get(&p) {
                    kernels.push(kernels[i].clone());
                    continue;
                }
                let mut sink = EncSink::default();
                let done = kernels.len();
                let r = accel::read_traceg(&p, opts, &mut sink, &|b| progress(done, total, b))?;
                note_parse(&p, &r, &mut notes);
                parsed.insert(p, kernels.len());
                kernels.push(Arc::new(EncKernel::new(r.info, r.statics, sink.0)));
            }
        }
    }
    Ok((kernels, commands, notes))
}

fn note_parse(p: &Path, r: &accel::KernelParse, notes: &mut Vec<String>) {
    if !r.unknown_opcodes.is_empty() {
        notes.push(format!(
            "{}: unknown opcodes treated as integer ALU ops: {}",
            p.display(),
            r.unknown_opcodes.join(", ")
        ));
    }
    if !r.unknown_header_keys.is_empty() {
        notes.push(format!(
            "{}: unrecognised header keys ignored: {}",
            p.display(),
            r.unknown_header_keys.join(", ")
        ));
    }
}

/// Opens any runnable input as an application.
pub fn open_app(path: &Path, opts: &ParseOptions) -> Result<App> {
    open_app_with(path, opts, &|_, _, _| {})
}

/// [`open_app`], telling `progress` how a text trace's parse goes (kernels parsed, kernels
/// in the list, text bytes of the kernel being parsed).
pub fn open_app_with(path: &Path, opts: &ParseOptions, progress: Progress) -> Result<App> {
    let kind = detect(path)?;
    let name = app_name(path);
    match &kind {
        InputKind::Gmt(p) => {
            let f = GmtFile::open(p)?;
            let kernels = f.launches()?.into_iter().map(|k| k as Arc<dyn KernelSource>).collect();
            Ok(App {
                name: if f.app().is_empty() { name } else { f.app().to_string() },
                kernels,
                commands: f.commands().to_vec(),
                notes: Vec::new(),
            })
        }
        InputKind::Synth(p) => {
            let k = crate::trace::synth::SynthKernel::from_file(p)?;
            Ok(App {
                name,
                kernels: vec![Arc::new(k)],
                commands: vec![Command::Kernel(0)],
                notes: Vec::new(),
            })
        }
        InputKind::Counts(p) => Err(Error::input(
            p,
            None,
            "instr_count/opcode_hist output has counts but no instruction streams: it can be inspected, not converted or run",
        )),
        _ => {
            let (ks, commands, notes) = parse_text(&kind, opts, progress)?;
            Ok(App {
                name,
                kernels: ks.into_iter().map(|k| k as Arc<dyn KernelSource>).collect(),
                commands,
                notes,
            })
        }
    }
}

/// What a conversion did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConvertReport {
    pub kernels: usize,
    pub warp_insts: u64,
    pub text_lines: u64,
    pub text_bytes: u64,
    pub gmt_bytes: u64,
    pub notes: Vec<String>,
}

/// Converts any runnable input to a `.gmt` file. Accel-Sim text is streamed kernel by
/// kernel straight to disk (memory bounded by the parse batch, not the trace).
pub fn convert(
    input: &Path,
    out: &Path,
    opts: &ParseOptions,
    progress: Progress,
) -> Result<ConvertReport> {
    let kind = detect(input)?;
    let name = app_name(input);
    let mut w = GmtWriter::create_guarded(out, &crate::output::Guard::of([input]))?;
    let mut notes = Vec::new();
    let (mut text_lines, mut text_bytes, mut insts) = (0, 0, 0);
    let mut commands = Vec::new();
    let mut nk = 0;
    // Per trace file converted: its kernel's index in the file and its warp instructions.
    let mut written: std::collections::HashMap<PathBuf, (usize, u64)> = Default::default();
    let mut stream_list =
        |entries: Vec<ListEntry>, w: &mut GmtWriter, notes: &mut Vec<String>| -> Result<()> {
            let total = entries
                .iter()
                .filter(|e| matches!(e, ListEntry::Kernel(_)))
                .count();
            for e in entries {
                match e {
                    ListEntry::Memcpy(m) => commands.push(Command::MemcpyHtoD(m)),
                    ListEntry::Kernel(p) => {
                        // A file launched again is stored once and launched again.
                        if let Some(&(i, n)) = written.get(&p) {
                            w.repeat_kernel(i)?;
                            insts += n;
                            commands.push(Command::Kernel(nk as u32));
                            nk += 1;
                            continue;
                        }
                        w.begin_kernel()?;
                        let done = nk;
                        let r = accel::read_traceg(&p, opts, w, &|b| progress(done, total, b))?;
                        note_parse(&p, &r, notes);
                        text_lines += r.lines;
                        text_bytes += r.text_bytes;
                        insts += r.warp_insts;
                        w.end_kernel(r.info, &r.statics)?;
                        written.insert(p, (nk, r.warp_insts));
                        commands.push(Command::Kernel(nk as u32));
                        nk += 1;
                    }
                }
            }
            Ok(())
        };
    match &kind {
        InputKind::AccelDir(l) | InputKind::KernelsList(l) => {
            let list = parse_kernelslist(l)?;
            for (n, t) in &list.ignored {
                notes.push(format!(
                    "{}:{n}: ignored command '{t}' (Accel-Sim ignores it too)",
                    l.display()
                ));
            }
            stream_list(list.entries, &mut w, &mut notes)?;
        }
        InputKind::Traceg(p) => {
            stream_list(vec![ListEntry::Kernel(p.clone())], &mut w, &mut notes)?
        }
        InputKind::Gmt(_) => return Err(Error::input(input, None, "input is already a .gmt file")),
        _ => {
            let app = open_app(input, opts)?;
            notes.extend(app.notes.clone());
            let refs: Vec<&dyn KernelSource> = app.kernels.iter().map(|k| k.as_ref()).collect();
            let first = crate::trace::source::first_launches(&refs);
            for (i, k) in app.kernels.iter().enumerate() {
                if first[i] < i {
                    w.repeat_kernel(first[i])?;
                } else {
                    w.add_source(k.as_ref())?;
                }
                insts += k.total_warp_insts();
            }
            commands = app.commands.clone();
            nk = app.kernels.len();
            if let InputKind::MemTrace(p) | InputKind::Synth(p) = &kind {
                text_bytes = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    let gmt_bytes = w.finish(&name, commands)?;
    Ok(ConvertReport {
        kernels: nk,
        warp_insts: insts,
        text_lines,
        text_bytes,
        gmt_bytes,
        notes,
    })
}
