//! Progress display for long commands (indicatif; hidden when stderr is not a terminal or
//! with `--quiet`).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner showing kernels done and text bytes parsed.
pub fn parse_bar(quiet: bool) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb
}

pub fn report(pb: &ProgressBar, done: usize, total: usize, bytes: u64) {
    pb.set_message(format!(
        "kernel {}/{}: {:.1} MiB of text parsed",
        (done + 1).min(total.max(1)),
        total,
        bytes as f64 / (1 << 20) as f64
    ));
    pb.tick();
}

/// A bar counting `total` simulation runs (the sweeps of `profile` and `card`).
pub fn runs_bar(quiet: bool, total: u64, msg: String) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} runs {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(msg);
    pb
}

/// A bar counting finished jobs (policies, workloads).
pub fn count_bar(quiet: bool, what: &str) -> ProgressBar {
    count_bar_of(quiet, what, 0)
}

/// [`count_bar`] with its total known up front (no 0/0 frame first).
pub fn count_bar_of(quiet: bool, what: &str, total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(what.to_string());
    pb
}

/// Shows a stage's name and its (done, total) on `pb`: the progress callback of studies.
pub fn stage(pb: &ProgressBar, what: &str, done: usize, total: usize) {
    pb.set_message(what.to_string());
    pb.set_length(total as u64);
    pb.set_position(done as u64);
}
