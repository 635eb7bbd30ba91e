//! Running one case: the binary in its own process group, in the case's folder, with no
//! stdin, stdout and stderr to files, an address-space, file-size and core limit set before
//! `exec`, a wall-clock limit enforced by killing the whole group, and the peak RSS read from
//! `wait4`'s resource usage.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Limits of one execution.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeout: Duration,
    /// RLIMIT_AS, bytes.
    pub address_space: u64,
    /// RLIMIT_FSIZE, bytes: the largest file the process may write.
    pub file_size: u64,
}

/// How the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Exit(i32),
    Signal(i32),
    Timeout,
}

/// The result of one execution.
pub struct Ran {
    pub end: End,
    pub wall: Duration,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    /// The first 64 KiB of stdout and of stderr.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads a valid rlimit struct; async-signal-safe.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn head(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    if let Ok(f) = File::open(path) {
        let _ = f.take(64 << 10).read_to_end(&mut v);
    }
    v
}

/// Runs `bin args...` in `cwd` under `limits`; stdout and stderr go to `logs/{stdout,stderr}`.
pub fn run(
    bin: &Path,
    args: &[String],
    cwd: &Path,
    logs: &Path,
    limits: Limits,
) -> std::io::Result<Ran> {
    let out_path = logs.join("stdout");
    let err_path = logs.join("stderr");
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path)?)
        .stderr(File::create(&err_path)?)
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_LOG");
    let lim = limits;
    // SAFETY: only async-signal-safe calls (setpgid, setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            set_limit(libc::RLIMIT_AS, lim.address_space)?;
            set_limit(libc::RLIMIT_FSIZE, lim.file_size)?;
            set_limit(libc::RLIMIT_CORE, 0)?;
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data, zero is a valid bit pattern.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // A pidfd turns "wait with a time limit" into one poll(2); without one (old kernels),
    // poll wait4 with short naps.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    let mut nap = Duration::from_micros(100);
    let mut timed_out = false;
    loop {
        // SAFETY: pid is our child; status and usage are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if pidfd >= 0 {
                // SAFETY: closing our own descriptor.
                unsafe { libc::close(pidfd) };
            }
            return Err(e);
        }
        let elapsed = start.elapsed();
        if !timed_out && elapsed >= limits.timeout {
            timed_out = true;
            // SAFETY: signals our own child's process group.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
            continue;
        }
        if pidfd >= 0 && !timed_out {
            let left = limits
                .timeout
                .saturating_sub(elapsed)
                .as_millis()
                .min(i32::MAX as u128);
            let mut fds = libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut fds, 1, left.max(1) as libc::c_int) };
        } else {
            std::thread::sleep(nap);
            nap = (nap * 3 / 2).min(Duration::from_millis(4));
        }
    }
    if pidfd >= 0 {
        // SAFETY: closing our own descriptor.
        unsafe { libc::close(pidfd) };
    }
    let wall = start.elapsed();
    // Anything the process left behind in its group goes too.
    // SAFETY: as above; ESRCH when the group is gone is fine.
    unsafe { libc::killpg(pid, libc::SIGKILL) };
    drop(child);
    let end = if timed_out {
        End::Timeout
    } else if libc::WIFEXITED(status) {
        End::Exit(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        End::Signal(libc::WTERMSIG(status))
    } else {
        End::Signal(-1)
    };
    Ok(Ran {
        end,
        wall,
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        stdout: head(&out_path),
        stderr: head(&err_path),
    })
}
