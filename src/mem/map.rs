//! Physical address → memory partition (channel), L2 slice, bank and row, optionally
//! restricted to an application's own set of channels (UGPU-style channel partitioning).
//!
//! Consecutive `interleave`-byte chunks go to consecutive channels of the set (with an XOR
//! of higher bits to break power-of-two strides); within a channel, the remaining bits
//! select the column, then the bank (bank groups interleaved first), then the row.

/// Where an address lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    pub channel: u32,
    /// L2 slice within the channel's memory partition.
    pub slice: u32,
    pub bank: u32,
    pub row: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapConfig {
    pub channels: u32,
    pub slices_per_channel: u32,
    pub banks: u32,
    pub bank_groups: u32,
    /// Bytes mapped to one channel before moving to the next.
    pub interleave: u64,
    pub row_bytes: u64,
}

/// A set of channels an application's pages map into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelSet(Vec<u32>);

impl ChannelSet {
    pub fn all(channels: u32) -> ChannelSet {
        ChannelSet((0..channels).collect())
    }
    /// A non-empty set of distinct channels below `channels`.
    pub fn new(mut ids: Vec<u32>, channels: u32) -> Result<ChannelSet, String> {
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Err("a channel set needs at least one channel".into());
        }
        if let Some(bad) = ids.iter().find(|&&c| c >= channels) {
            return Err(format!(
                "channel {bad} does not exist (the GPU has {channels})"
            ));
        }
        Ok(ChannelSet(ids))
    }
    pub fn ids(&self) -> &[u32] {
        &self.0
    }
}

impl MapConfig {
    /// Maps `addr` into `set` (use [`ChannelSet::all`] for the whole GPU).
    pub fn locate(&self, addr: u64, set: &ChannelSet) -> Location {
        let n = set.0.len() as u64;
        let il = self.interleave.max(1);
        let chunk = div(addr, il);
        // XOR-fold higher chunk bits so power-of-two strides spread over the set.
        let fold = chunk ^ (chunk >> 7) ^ (chunk >> 13);
        let channel = set.0[rem(fold, n) as usize];
        let chunk_n = div(chunk, n);
        let within = chunk_n * self.interleave + rem(addr, il);
        let slice = rem(chunk_n, self.slices_per_channel.max(1) as u64) as u32;
        let col_chunks = div(self.row_bytes, il).max(1);
        let unit = div(within, il);
        let banks = self.banks.max(1) as u64;
        let cols = div(unit, col_chunks);
        let b = rem(cols, banks);
        let groups = self.bank_groups.max(1) as u64;
        let per = div(banks, groups).max(1);
        // Consecutive bank indices alternate bank groups.
        let bank = (rem(b, groups) * per + rem(div(b, groups), per)) as u32;
        let row = div(cols, banks) as u32;
        Location {
            channel,
            slice,
            bank,
            row,
        }
    }
}

/// `a / d` (d > 0), by a shift when `d` is a power of two (as the sizes usually are).
#[inline]
fn div(a: u64, d: u64) -> u64 {
    if d.is_power_of_two() {
        a >> d.trailing_zeros()
    } else {
        a / d
    }
}

/// `a % d` (d > 0), by a mask when `d` is a power of two.
#[inline]
fn rem(a: u64, d: u64) -> u64 {
    if d.is_power_of_two() {
        a & (d - 1)
    } else {
        a % d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> MapConfig {
        MapConfig {
            channels: 32,
            slices_per_channel: 2,
            banks: 16,
            bank_groups: 4,
            interleave: 256,
            row_bytes: 2048,
        }
    }

    #[test]
    fn streams_spread_over_all_channels_evenly() {
        let c = cfg();
        let all = ChannelSet::all(32);
        let mut count = [0u32; 32];
        for i in 0..32 * 1024u64 {
            count[c.locate(0x7f20_0000_0000 + i * 256, &all).channel as usize] += 1;
        }
        let (mn, mx) = (count.iter().min().unwrap(), count.iter().max().unwrap());
        assert!(*mx as f64 / *mn as f64 <= 1.1, "{count:?}");
    }

    #[test]
    fn channel_sets_confine_addresses() {
        let c = cfg();
        let set = ChannelSet::new(vec![3, 9, 17], 32).unwrap();
        for i in 0..10_000u64 {
            let l = c.locate(i * 4096 + 64, &set);
            assert!([3, 9, 17].contains(&l.channel));
            assert!(l.bank < 16 && l.slice < 2);
        }
        assert!(ChannelSet::new(vec![], 32).is_err());
        assert!(ChannelSet::new(vec![40], 32).is_err());
    }

    #[test]
    fn sequential_bytes_in_a_row_share_bank_and_row() {
        let c = cfg();
        let set = ChannelSet::new(vec![0], 32).unwrap();
        let a = c.locate(0, &set);
        let b = c.locate(2047, &set);
        assert_eq!((a.bank, a.row), (b.bank, b.row));
        let d = c.locate(2048, &set);
        assert_ne!(a.bank, d.bank);
    }
}
