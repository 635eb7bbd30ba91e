//! Which resource amounts a profile samples: CTAs per SM (every value from 1 to the
//! occupancy limit), SM counts and memory-channel sets (fractions of the GPU, deduplicated,
//! HBM channel sets spread over the stacks so that every stack keeps at least one channel).

use crate::arch::GpuSpec;

/// Default number of SM-count / channel-count points (1/8, 1/4, 1/2, 3/4, 1).
pub const DEFAULT_POINTS: usize = 5;

/// The fractions of a resource sampled for `points` points: the canonical 1/8, 1/4, 1/2,
/// 3/4, 1 for five; otherwise `points` fractions evenly spaced in (0, 1] (`i / points`).
pub fn fractions(points: usize) -> Vec<f64> {
    match points {
        0 => Vec::new(),
        DEFAULT_POINTS => vec![0.125, 0.25, 0.5, 0.75, 1.0],
        n => (1..=n).map(|i| i as f64 / n as f64).collect(),
    }
}

/// Counts of a resource with `total` units for the given fractions: `round(f × total)`,
/// clamped to `[min, total]`, sorted and deduplicated. `total` itself is always included.
pub fn counts(total: u32, min: u32, points: usize) -> Vec<u32> {
    let min = min.clamp(1, total.max(1));
    let mut v: Vec<u32> = fractions(points)
        .iter()
        .map(|f| ((f * total as f64).round() as u32).clamp(min, total.max(1)))
        .collect();
    if points > 0 {
        v.push(total.max(1));
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// CTAs per SM sampled for a kernel whose occupancy limit is `max`: `1..=max`.
pub fn cta_counts(max: u32) -> Vec<u32> {
    (1..=max.max(1)).collect()
}

/// SM counts sampled on `spec`.
pub fn sm_counts(spec: &GpuSpec, points: usize) -> Vec<u32> {
    counts(spec.sm.count, 1, points)
}

/// Channel counts sampled on `spec`: for HBM (`dram.stacks > 0`) at least one per stack.
pub fn channel_counts(spec: &GpuSpec, points: usize) -> Vec<u32> {
    counts(spec.dram.channels, spec.dram.stacks.max(1), points)
}

/// The first `n` channels, or for stacked memory `n` channels taken round-robin over the
/// stacks (channel ids are numbered stack by stack: channel `c` is in stack
/// `c / channels_per_stack`). Returned sorted.
pub fn channel_set(spec: &GpuSpec, n: u32) -> Vec<u32> {
    let total = spec.dram.channels;
    let n = n.clamp(1, total.max(1));
    let mut v: Vec<u32> = match spec.dram.channels_per_stack() {
        Some(per) if per > 0 && spec.dram.stacks > 1 => {
            let s = spec.dram.stacks;
            (0..n).map(|i| (i % s) * per + i / s).collect()
        }
        _ => (0..n).collect(),
    };
    v.sort_unstable();
    v
}

/// An SM mask holding the first `n` SMs.
pub fn sm_mask(spec: &GpuSpec, n: u32) -> Vec<bool> {
    (0..spec.sm.count).map(|s| s < n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_dedup_and_include_total() {
        assert_eq!(counts(16, 1, 5), vec![2, 4, 8, 12, 16]);
        assert_eq!(counts(6, 1, 5), vec![1, 2, 3, 5, 6]);
        assert_eq!(counts(2, 1, 5), vec![1, 2]);
        assert_eq!(counts(8, 4, 5), vec![4, 6, 8]);
        assert_eq!(counts(10, 1, 2), vec![5, 10]);
        assert_eq!(cta_counts(3), vec![1, 2, 3]);
    }
}
