//! Malformed inputs give an error naming the file, the line and the expected form (exit
//! code 2 from the CLI), never a panic and never silently skipped data.

mod common;

use std::path::{Path, PathBuf};

use gpumodel::trace::accel::ParseOptions;
use gpumodel::trace::app::{convert, open_app};

fn bfs_text() -> String {
    std::fs::read_to_string(common::real_traces().join("accelsim_v3_bfs_sm80/kernel-1.traceg"))
        .unwrap()
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn err_of(p: &Path) -> String {
    match open_app(p, &ParseOptions::default()) {
        Ok(_) => panic!("{} parsed but should not", p.display()),
        Err(e) => {
            assert!(e.is_bad_input(), "{e}");
            e.to_string()
        }
    }
}

#[test]
fn truncated_trace() {
    let d = tempfile::tempdir().unwrap();
    let t = bfs_text();
    // Cut inside a line: the partial line is reported with its number.
    let cut = &t[..t.len() / 2];
    let p = write(d.path(), "kernel-1.traceg", cut.as_bytes());
    let e = err_of(&p);
    let line = cut.lines().count();
    assert!(
        e.contains(&format!("kernel-1.traceg:{line}: expected")),
        "{e}"
    );
    // Cut at a line end: the unfinished warp / thread block is reported.
    let cut = &t[..=t[..t.len() / 2].rfind('\n').unwrap()];
    let p = write(d.path(), "kernel-5.traceg", cut.as_bytes());
    let e = err_of(&p);
    assert!(
        e.contains("kernel-5.traceg:") && (e.contains("#END_TB") || e.contains("declares insts")),
        "{e}"
    );
    let p = write(d.path(), "kernel-2.traceg", &t.as_bytes()[..200]);
    let e = err_of(&p);
    assert!(e.contains("header") || e.contains("#traces format"), "{e}");
}

#[test]
fn bad_headers() {
    let d = tempfile::tempdir().unwrap();
    let t = bfs_text();
    let p = write(
        d.path(),
        "a.traceg",
        t.replace("-binary version = 80", "-binary version = 0")
            .as_bytes(),
    );
    let e = err_of(&p);
    assert!(
        e.contains("a.traceg:7:") && e.contains("binary version"),
        "{e}"
    );
    let p = write(
        d.path(),
        "b.traceg",
        t.replace("-nregs = 21", "-nregs = 21955").as_bytes(),
    );
    let e = err_of(&p);
    assert!(e.contains("b.traceg:6:") && e.contains("nregs"), "{e}");
    let p = write(
        d.path(),
        "c.traceg",
        t.replace("-block dim = (512,1,1)", "-block dim = (512,1)")
            .as_bytes(),
    );
    assert!(err_of(&p).contains("c.traceg:4:"));
}

#[test]
fn counts_that_disagree_with_lines() {
    let d = tempfile::tempdir().unwrap();
    let t = bfs_text().replacen("insts = 275", "insts = 276", 1);
    let p = write(d.path(), "k.traceg", t.as_bytes());
    let e = err_of(&p);
    assert!(
        e.contains("declares insts = 276") && e.contains("k.traceg:23:"),
        "{e}"
    );
}

#[test]
fn bad_instruction_lines_name_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let t = bfs_text().replacen(
        "0010 ffffffff 1 R6 S2R 0 0 ",
        "0010 ffffffff 1 R6 S2R 0 ",
        1,
    );
    let p = write(d.path(), "k.traceg", t.as_bytes());
    let e = err_of(&p);
    assert!(
        e.contains("k.traceg:25:") && e.contains("expected memory width"),
        "{e}"
    );
    let t = bfs_text().replacen("IMAD.MOV.U32", "FROBNICATE", 1);
    let p = write(d.path(), "u.traceg", t.as_bytes());
    let e = err_of(&p);
    assert!(
        e.contains("u.traceg:24:") && e.contains("unknown opcode 'FROBNICATE'"),
        "{e}"
    );
    // With --lenient-opcodes the same file parses and the opcode is reported.
    let app = open_app(
        &p,
        &ParseOptions {
            lenient_opcodes: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(app.notes.iter().any(|n| n.contains("FROBNICATE")));
}

#[test]
fn garbage_and_broken_compression() {
    let d = tempfile::tempdir().unwrap();
    let junk: Vec<u8> = (0..5000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let p = write(d.path(), "kernel-9.traceg", &junk);
    let e = err_of(&p);
    assert!(e.contains("kernel-9.traceg:"), "{e}");
    let p = write(
        d.path(),
        "kernel-3.traceg.xz",
        b"this is not xz data at all",
    );
    let e = open_app(&p, &ParseOptions::default())
        .err()
        .expect("must fail")
        .to_string();
    assert!(e.contains("kernel-3.traceg.xz"), "{e}");
    let p = write(
        d.path(),
        "kernel-4.traceg.gz",
        &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3],
    );
    let e = open_app(&p, &ParseOptions::default())
        .err()
        .expect("must fail")
        .to_string();
    assert!(e.contains("kernel-4.traceg.gz"), "{e}");
    let p = write(
        d.path(),
        "x.gmt",
        b"GPUMGMT\0 but then nothing sensible follows, not even a header",
    );
    let e = err_of(&p);
    assert!(e.contains("x.gmt"), "{e}");
}

#[test]
fn corrupt_gmt_is_rejected_not_panicked() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("bfs.gmt");
    convert(
        &common::real_traces().join("accelsim_v3_bfs_sm80"),
        &out,
        &ParseOptions::default(),
        &|_, _, _| {},
    )
    .unwrap();
    let good = std::fs::read(&out).unwrap();
    // Truncation is caught by the header's length.
    let p = write(d.path(), "t.gmt", &good[..good.len() - 10]);
    assert!(err_of(&p).contains("truncated"));
    // Flipped bytes in the stream section: open may succeed, decoding must not panic.
    for i in (64..good.len().min(4000)).step_by(97) {
        let mut b = good.clone();
        b[i] ^= 0x5a;
        let p = write(d.path(), "f.gmt", &b);
        if let Ok(app) = open_app(&p, &ParseOptions::default()) {
            for k in &app.kernels {
                let _ = gpumodel::trace::inspect::kernel_stats(k.as_ref());
            }
        }
    }
}

#[test]
fn cli_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    let t = bfs_text().replace("-nregs = 21", "-nregs = 999");
    let p = write(d.path(), "k.traceg", t.as_bytes());
    let (code, _, err) = common::cli(&["inspect", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("k.traceg:6:"), "{err}");
    let (code, _, _) = common::cli(&["inspect", "/nonexistent/thing"]);
    assert_eq!(code, 2);
    let (code, _, _) = common::cli(&["convert"]);
    assert_eq!(code, 2, "missing arguments are usage errors");
    let (code, out, _) = common::cli(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit codes"));
    let list = write(
        d.path(),
        "kernelslist.g",
        b"kernel-1.traceg\n../../etc/passwd\nkernel/../../x\n",
    );
    let (code, _, err) = common::cli(&["inspect", list.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

/// A synthetic kernel too large to convert (its warp index would outgrow the memory bound)
/// is refused before anything is encoded, naming the spec; `run` still simulates it
/// procedurally.
#[test]
fn a_kernel_too_large_to_convert_is_refused_up_front() {
    let d = tempfile::tempdir().unwrap();
    let spec = write(
        d.path(),
        "huge.toml",
        b"[kernel]\nname = \"huge\"\ngrid = 1000000000\nblock = 512\nregs = 16\n\n[body]\ntrips = 1\nint = 1\n",
    );
    let msg = convert_refused(&spec);
    assert!(msg.contains("huge.toml") && msg.contains("warps"), "{msg}");
}

/// The message of a conversion of `spec` that must be refused as bad input, having written
/// nothing.
fn convert_refused(spec: &Path) -> String {
    let out = spec.with_extension("gmt");
    let e = match convert(spec, &out, &ParseOptions::default(), &|_, _, _| {}) {
        Ok(_) => panic!("{} was converted", spec.display()),
        Err(e) => e,
    };
    assert!(e.is_bad_input(), "{e}");
    assert!(!out.exists());
    e.to_string()
}

/// Under a file-size limit (`ulimit -f`) an oversized output is an I/O error (exit 1) and
/// its temporary file is removed, not a SIGXFSZ death leaving the temporary behind.
#[cfg(unix)]
#[test]
fn a_file_size_limit_is_an_error_not_a_signal() {
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/warped-slicer/bfs.toml");
    let out = d.path().join("o.gmt");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"));
    cmd.arg("convert").arg(&spec).arg("-o").arg(&out).arg("-q");
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{:?}: {err}", o.status);
    assert!(err.contains("File too large"), "{err}");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A thread block whose encoded streams outgrow the per-block bound (a spec with millions
/// of loop trips) is refused with the spec named, in bounded memory, instead of an
/// allocation failure (found by the fuzz driver: `synth` aborted allocating 543 MB).
#[test]
fn a_block_too_large_to_encode_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let spec = write(
        d.path(),
        "long.toml",
        b"[kernel]\nname = \"long\"\ngrid = 2\nblock = 32\nregs = 16\n\n[body]\ntrips = 2097152\nfp32 = 190\nint = 35\n\n[[loads]]\ncount = 1\npattern = \"stream\"\n",
    );
    let msg = convert_refused(&spec);
    assert!(msg.contains("long.toml") && msg.contains("MiB"), "{msg}");
}
