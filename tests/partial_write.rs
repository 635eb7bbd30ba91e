//! A store into an L2 sector that it writes only in part (issue 45; measured on a GH100:
//! `reports/hw/h200_gups_variants_ncu.txt`, 32 B read from DRAM for each 8-byte store into
//! an absent sector). With `l2.partial_write = "fetch"` the slice reads the absent sectors
//! the store covers in part; with `validate` (GPGPU-Sim's lazy fetch on read) it reads
//! nothing; a store covering its sectors whole, or into sectors the slice holds, reads
//! nothing either way. Expectations come from the model's sizes, not from a run.

mod common;

use gpumodel::engine::memsys::MemSys;
use gpumodel::engine::ops::{coalesce, partial_sectors};
use gpumodel::engine::Counters;

/// The DRAM reads one store of `sectors` of `line` (`partial` of them in part) adds, on a
/// write-back L2 with `l2.partial_write = mode`; `warm`: the sectors were written whole
/// before (so the slice holds them).
fn reads(mode: &str, line: u64, sectors: u8, partial: u8, warm: bool) -> (u64, u64) {
    let spec = common::engine_kit::tiny_with(4, 4, &[&format!("l2.partial_write=\"{mode}\"")]);
    let access = spec.dram.access_bytes();
    let sector = spec.l2.sector.0;
    let mut m = MemSys::new(&spec, spec.l1d.assoc, 1);
    let mut c = Counters::default();
    if warm {
        m.store(0, 0, line, sectors, 0, 100, &mut c);
    }
    let before = c.dram_reads;
    m.store(1, 0, line, sectors, partial, 10_000, &mut c);
    let fetched = (partial.count_ones() as u64 * sector).div_ceil(access);
    (c.dram_reads - before, fetched)
}

#[test]
fn a_partial_store_into_an_absent_sector_reads_it_only_with_fetch() {
    // One sector written in part, absent.
    let (got, want) = reads("fetch", 4_000, 0b0001, 0b0001, false);
    assert!(want >= 1);
    assert_eq!(got, want, "fetch: the absent sector is read");
    assert_eq!(reads("validate", 4_000, 0b0001, 0b0001, false).0, 0);
    // Two of four sectors in part: exactly those are read.
    let (got, want) = reads("fetch", 4_100, 0b1111, 0b0101, false);
    assert_eq!(got, want);
    // Whole sectors, or sectors the slice holds: nothing.
    assert_eq!(reads("fetch", 4_200, 0b1111, 0, false).0, 0);
    assert_eq!(reads("fetch", 4_300, 0b0011, 0b0011, true).0, 0);
}

#[test]
fn partial_sectors_follow_the_bytes_the_lanes_write() {
    let (lb, sb) = (128u64, 32u64);
    let mut lines = Vec::new();
    let mut part = Vec::new();
    let mut check = |addrs: &[u64], width: u8, want: &[(u64, u8, u8)]| {
        coalesce(addrs, width, lb, sb, &mut lines);
        partial_sectors(addrs, width, lb, sb, &lines, &mut part);
        let got: Vec<(u64, u8, u8)> = lines
            .iter()
            .zip(&part)
            .map(|(&(l, s, _), &p)| (l, s, p))
            .collect();
        assert_eq!(got, want, "{addrs:?} x {width} B");
    };
    // 32 lanes x 4 B, consecutive: one whole line, nothing in part.
    let run: Vec<u64> = (0..32).map(|i| 1024 + 4 * i).collect();
    check(&run, 4, &[(8, 0b1111, 0)]);
    // Half a line from its middle: two whole sectors.
    let half: Vec<u64> = (0..16).map(|i| 1024 + 32 + 4 * i).collect();
    check(&half, 4, &[(8, 0b0110, 0)]);
    // Every lane 8 B into its own sector (GUPS's store): each sector in part.
    check(
        &[0, 4096 + 40, 64],
        8,
        &[(0, 0b0101, 0b0101), (32, 0b0010, 0b0010)],
    );
    // A 32 B sector written by four 8-byte lanes out of order: whole.
    check(&[24, 0, 16, 8], 8, &[(0, 0b0001, 0)]);
    // One 16-byte lane across two sectors: both in part.
    check(&[24], 16, &[(0, 0b0011, 0b0011)]);
    // The same 4 bytes eight times: in part.
    check(&[64; 8], 4, &[(0, 0b0100, 0b0100)]);
}
