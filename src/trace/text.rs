//! Writes any [`KernelSource`] as Accel-Sim text (`kernel-N.traceg` + `kernelslist.g`), so
//! synthetic kernels and `.gmt` files can be run by Accel-Sim or read back by our parser.
//!
//! The dialect is tracer version 5 with one trailing immediate, or the late-v5 two-immediate
//! form when any instruction has a second immediate. Addresses use mode 1 (base, stride)
//! when the active lanes are one contiguous run with a constant stride that fits an `int`,
//! mode 2 (base, deltas) otherwise, like the NVBit tracer.

use std::io::Write;
use std::path::Path;

use crate::error::{DecodeError, Error, Result};
use crate::trace::inst::{flags, reg, DynInst};
use crate::trace::source::{Command, KernelSource};

/// Writes one kernel as a `.traceg` stream.
pub fn write_traceg(src: &dyn KernelSource, out: &mut dyn Write) -> std::io::Result<()> {
    let i = src.info();
    let st = src.statics();
    let two = st.insts.iter().any(|s| s.imm2 != 0);
    writeln!(out, "-kernel name = {}", i.name)?;
    writeln!(out, "-kernel id = {}", i.id)?;
    writeln!(
        out,
        "-grid dim = ({},{},{})",
        i.grid[0], i.grid[1], i.grid[2]
    )?;
    writeln!(
        out,
        "-block dim = ({},{},{})",
        i.block[0], i.block[1], i.block[2]
    )?;
    writeln!(out, "-shmem = {}", i.shmem)?;
    writeln!(out, "-nregs = {}", i.nregs)?;
    writeln!(out, "-binary version = {}", i.binary_version)?;
    writeln!(out, "-cuda stream id = {}", i.stream_id)?;
    writeln!(out, "-shmem base_addr = 0x{:016x}", i.shmem_base)?;
    writeln!(out, "-local mem base_addr = 0x{:016x}", i.local_base)?;
    writeln!(
        out,
        "-nvbit version = {}",
        if i.nvbit_version.is_empty() {
            "gpumodel"
        } else {
            &i.nvbit_version
        }
    )?;
    writeln!(out, "-accelsim tracer version = 5")?;
    writeln!(out, "-enable lineinfo = 0")?;
    writeln!(out)?;
    writeln!(
        out,
        "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] {}",
        if two { "immediate1 immediate2" } else { "immediate" }
    )?;
    writeln!(out)?;
    let mut d = DynInst::default();
    let mut line = String::with_capacity(512);
    for c in 0..src.num_ctas() {
        let cta = src.cta(c);
        writeln!(
            out,
            "\n#BEGIN_TB\n\nthread block = {},{},{}",
            cta.id[0], cta.id[1], cta.id[2]
        )?;
        for w in 0..cta.warps {
            let mut s = src.warp(c, w);
            writeln!(out, "\nwarp = {w}\ninsts = {}", s.len())?;
            while s.next_inst(&mut d).map_err(corrupt)? {
                let si = st.insts.get(d.sidx as usize).ok_or_else(|| {
                    corrupt(DecodeError(format!("static index {} out of range", d.sidx)))
                })?;
                line.clear();
                use std::fmt::Write as _;
                let _ = write!(line, "{:04x} {:08x} ", si.pc, d.mask);
                if si.has_dst() {
                    let _ = write!(line, "1 {} ", reg::to_text(si.dst));
                } else {
                    line.push_str("0 ");
                }
                let _ = write!(line, "{} {} ", st.opcode_name(si), si.nsrc);
                for &r in si.srcs() {
                    let _ = write!(line, "{} ", reg::to_text(r));
                }
                if si.has(flags::HAS_MEM) {
                    let a = d.addrs();
                    let _ = write!(line, "{} ", si.width.max(1));
                    let contiguous = d.mask == 0
                        || (d.mask >> d.mask.trailing_zeros()).count_ones()
                            == (d.mask >> d.mask.trailing_zeros()).trailing_ones();
                    let stride = if a.len() > 1 {
                        a[1].wrapping_sub(a[0]) as i64
                    } else {
                        0
                    };
                    let uniform = a
                        .windows(2)
                        .all(|p| p[1].wrapping_sub(p[0]) as i64 == stride);
                    if a.is_empty() {
                        line.push_str("1 0x0 0 ");
                    } else if contiguous && uniform && i32::try_from(stride).is_ok() {
                        let _ = write!(line, "1 0x{:x} {} ", a[0], stride);
                    } else {
                        let _ = write!(line, "2 0x{:x} ", a[0]);
                        for p in a.windows(2) {
                            let _ = write!(line, "{} ", p[1].wrapping_sub(p[0]) as i64);
                        }
                    }
                } else {
                    line.push_str("0 ");
                }
                let _ = write!(line, "{} ", si.imm);
                if two {
                    let _ = write!(line, "{} ", si.imm2);
                }
                line.push('\n');
                out.write_all(line.as_bytes())?;
            }
        }
        writeln!(out, "\n#END_TB")?;
    }
    Ok(())
}

/// A decode error of the source travelling through the writer's `io::Error`, told apart
/// from a failed write by [`write_error`].
fn corrupt(e: DecodeError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// Blames a decode error on the kernel's input and anything else on the output `p`.
fn write_error(src: &dyn KernelSource, p: &Path, e: std::io::Error) -> Error {
    match e.get_ref().and_then(|r| r.downcast_ref::<DecodeError>()) {
        Some(d) => Error::input(
            src.input(),
            None,
            format!("kernel {}: corrupt trace data: {}", src.info().name, d.0),
        ),
        None => Error::io(p, e),
    }
}

/// Why `name` cannot be written as a `-kernel name = ` header line that reads back as the
/// same name: a line break would start a header line of its own (`-grid dim = ...`,
/// changing the launch on re-conversion), other control characters and surrounding
/// blanks do not survive the reader.
pub fn header_name_problem(name: &str) -> Option<String> {
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!(
            "contains the control character {:?}; a header line holds one line of text",
            c
        ));
    }
    if name.trim() != name {
        return Some("starts or ends with blanks, which the header reader trims".into());
    }
    None
}

/// Writes an application as an Accel-Sim folder: `kernel-N.traceg` and `kernelslist.g`.
pub fn write_app(kernels: &[&dyn KernelSource], commands: &[Command], dir: &Path) -> Result<()> {
    write_app_guarded(kernels, commands, dir, &crate::output::Guard::new())
}

/// [`write_app`] through [`crate::output`]: each file replaced atomically, links and
/// special files in `dir` refused, and none of `guard`'s inputs overwritten.
pub fn write_app_guarded(
    kernels: &[&dyn KernelSource],
    commands: &[Command],
    dir: &Path,
    guard: &crate::output::Guard,
) -> Result<()> {
    // Every name is checked before anything is written: a name that cannot be one header
    // line is refused, never written so that it reads back as something else.
    for k in kernels {
        if let Some(why) = header_name_problem(&k.info().name) {
            return Err(Error::input(
                k.input(),
                None,
                format!(
                    "kernel name {:?} cannot be exported as Accel-Sim text: it {why}",
                    k.info().name
                ),
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut list = String::new();
    // A kernel launched again (one source: a trace file a list names twice) is written once
    // and listed again, as its input listed it (a list launching one 70 KB file 10 000
    // times wrote 700 MB).
    let first = crate::trace::source::first_launches(kernels);
    let mut written = vec![false; kernels.len()];
    for c in commands {
        match c {
            Command::MemcpyHtoD(m) => {
                list.push_str(&format!("MemcpyHtoD,0x{:016x},{}\n", m.addr, m.bytes))
            }
            Command::Kernel(k) => {
                let k = *k as usize;
                let src = kernels.get(k).ok_or_else(|| {
                    Error::Usage(format!("command names kernel {k}, which does not exist"))
                })?;
                // The first launch of a kernel names its file; a launch of a kernel written
                // already names that file again. (A kernel in the list that no command
                // launches is not written.)
                let name = format!("kernel-{}.traceg", first[k] + 1);
                if !written[first[k]] {
                    let p = dir.join(&name);
                    let mut out = guard.create(&p)?;
                    write_traceg(*src, out.writer()).map_err(|e| write_error(*src, &p, e))?;
                    out.commit()?;
                    written[first[k]] = true;
                }
                list.push_str(&name);
                list.push('\n');
            }
        }
    }
    guard.write(&dir.join("kernelslist.g"), list.as_bytes())
}
