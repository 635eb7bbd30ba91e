//! Error types shared by every module. Bad input is always an [`Error::Input`] naming the
//! file, the line (when there is one) and what was expected; the CLI maps it to exit code 2.
//! A broken invariant of the engine or of a controller is an [`Error::Internal`]: a bug in
//! gpumodel, not the user's input, so it exits 1 and asks to be reported.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in an input a problem was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    /// 1-based line number, when the input is text.
    pub line: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}", self.path.display(), l),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Malformed or invalid input: a trace, a model file, a spec, a command-line value.
    #[error("{loc}: {msg}")]
    Input { loc: Location, msg: String },
    /// Invalid command-line usage not tied to a file.
    #[error("{0}")]
    Usage(String),
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    /// A simulation reached its cycle cap with applications still running: its result
    /// would be wrong, so it is a failure (exit code 1), never a row of results.
    #[error("{0}")]
    CapHit(String),
    /// An invariant of gpumodel itself is broken (e.g. a controller returned an action the
    /// engine cannot carry out): a bug, exit code 1, never blamed on the input.
    #[error(
        "internal error: {0}\nThis is a bug in gpumodel, not a problem with your input. Please \
         report it with the command line, the input files (or how to make them) and this message."
    )]
    Internal(String),
}

impl Error {
    pub fn input(path: impl AsRef<Path>, line: Option<u64>, msg: impl Into<String>) -> Error {
        Error::Input {
            loc: Location {
                path: path.as_ref().to_path_buf(),
                line,
            },
            msg: msg.into(),
        }
    }
    pub fn at_line(path: impl AsRef<Path>, line: u64, msg: impl Into<String>) -> Error {
        Error::input(path, Some(line), msg)
    }
    /// A broken invariant of gpumodel itself ([`Error::Internal`]).
    pub fn internal(msg: impl Into<String>) -> Error {
        Error::Internal(msg.into())
    }
    pub fn io(path: impl AsRef<Path>, err: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            err,
        }
    }
    /// The same error with `ctx` (e.g. the workload and policy) in front of its message;
    /// the kind is kept, so a cap hit stays a failure and bad input stays bad input.
    pub fn context(self, ctx: impl fmt::Display) -> Error {
        match self {
            Error::Input { loc, msg } => Error::Input {
                loc,
                msg: format!("{ctx}: {msg}"),
            },
            Error::Usage(m) => Error::Usage(format!("{ctx}: {m}")),
            Error::CapHit(m) => Error::CapHit(format!("{ctx}: {m}")),
            Error::Internal(m) => Error::Internal(format!("{ctx}: {m}")),
            Error::Io { path, err } => Error::Io {
                path,
                err: std::io::Error::new(err.kind(), format!("{ctx}: {err}")),
            },
        }
    }
    /// True when the error is the user's input (exit code 2) rather than a failure.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::Input { .. } | Error::Usage(_))
    }
    /// The process exit code for this error: 2 for bad input, 1 for everything else (a
    /// failure, or an internal error).
    pub fn exit_code(&self) -> i32 {
        if self.is_bad_input() {
            2
        } else {
            1
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A number for a message: as written (`{}`) at moderate magnitudes, in scientific
/// notation otherwise, so 1e308 is not 309 digits and 1e-300 not 300 zeros.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() || a == 0.0 || (1e-6..1e15).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A corrupt binary stream (a `.gmt` whose bytes do not decode).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt trace data: {0}")]
pub struct DecodeError(pub String);

impl DecodeError {
    pub fn into_input(self, path: impl AsRef<Path>) -> Error {
        Error::input(path, None, self.0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_in_messages_are_compact() {
        assert_eq!(super::num(-1e308), "-1e308");
        assert_eq!(super::num(1e-300), "1e-300");
        assert_eq!(super::num(0.25), "0.25");
        assert_eq!(super::num(3000000.0), "3000000");
        assert_eq!(super::num(0.0), "0");
        assert_eq!(super::num(f64::NAN), "NaN");
        assert_eq!(super::num(f64::NEG_INFINITY), "-inf");
    }
}
