//! Physical address → memory partition (channel), L2 slice, bank and row, optionally
//! restricted to an application's own set of channels (UGPU-style channel partitioning).
//!
//! Consecutive `interleave`-byte chunks go to consecutive channels of the set (with an XOR
//! of higher bits to break power-of-two strides); within a channel, the remaining bits
//! select the column, then the bank (bank groups interleaved first), then the row.
//!
//! [`AddressMap`] is a [`MapConfig`] with its divisors prepared (`Divisor`: a shift and a
//! mask when, as usual, the size is a power of two), and a [`ChannelSet`] carries its own
//! size's divisor, so locating an address costs no division and no power-of-two test.

/// Why a list of channels is not a [`ChannelSet`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChannelSetError {
    #[error("a channel set needs at least one channel")]
    Empty,
    #[error("channel {id} does not exist (the GPU has {channels})")]
    NoSuchChannel { id: u32, channels: u32 },
}

/// Where an address lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    pub channel: u32,
    /// L2 slice within the channel's memory partition.
    pub slice: u32,
    pub bank: u32,
    pub row: u32,
    /// The address's byte offset within its slice's share of memory: the bits that chose
    /// the channel, the stack and the slice taken out (GPGPU-Sim's `partition_address`;
    /// under the `ipoly` mapping the slice bit, inside the chunk, stays). An L2 set index
    /// computed on it reaches every set of the slice whatever the mapping. Distinct
    /// addresses of one slice have distinct offsets.
    pub part: u64,
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
    pub scheme: Scheme,
    /// Which bits of the address within the channel form the bank index (`None`: whole
    /// rows bank after bank).
    pub bank_bits: Option<BankBits>,
}

/// Bank-index bits of an address within its channel, lowest first (GPGPU-Sim's `B`
/// positions with the channel bits taken out), at most 8 (256 banks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankBits {
    bits: [u8; 8],
    n: u8,
    /// The same bits as a mask.
    mask: u64,
}

impl BankBits {
    /// At most this many bits (256 banks).
    pub const MAX_BITS: usize = 8;
    /// Every bit below this.
    pub const MAX_BIT: u32 = 63;

    /// `None` when there are more than [`Self::MAX_BITS`] bits or a bit at
    /// [`Self::MAX_BIT`] or above (the model's validation rejects both, and bits that
    /// repeat or lie above the row).
    pub fn new(bits: &[u32]) -> Option<BankBits> {
        let mut b = BankBits {
            bits: [0; 8],
            mask: 0,
            n: u8::try_from(bits.len())
                .ok()
                .filter(|&n| n as usize <= Self::MAX_BITS)?,
        };
        for (i, &x) in bits.iter().enumerate() {
            b.bits[i] = u8::try_from(x)
                .ok()
                .filter(|&x| u32::from(x) < Self::MAX_BIT)?;
            b.mask |= 1 << x;
        }
        Some(b)
    }

    /// The bank index of channel offset `off` (bit `i` from `bits[i]`) and the offset with
    /// those bits taken out (what is left is column, then row).
    #[inline]
    fn split(&self, off: u64) -> (u64, u64) {
        let bits = &self.bits[..self.n as usize];
        let bank = bits
            .iter()
            .enumerate()
            .fold(0, |a, (i, &b)| a | ((off >> b) & 1) << i);
        // Remove the highest bit first so the lower positions stay put.
        let (mut rest, mut m) = (off, self.mask);
        while m != 0 {
            let b = 63 - m.leading_zeros();
            rest = (rest >> (b + 1)) << b | (rest & ((1 << b) - 1));
            m &= !(1 << b);
        }
        (bank, rest)
    }
}

/// How a chunk picks its channel among the set's (see `arch::MapScheme`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Linear,
    Xor,
    Ipoly,
    /// `stacks` stacks, `stack_interleave` bytes per stack turn.
    StackPage {
        stacks: u32,
        stack_interleave: u64,
    },
}

/// A set of channels an application's pages map into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelSet {
    ids: Vec<u32>,
    /// `ids.len()`.
    n: Divisor,
}

impl ChannelSet {
    pub fn all(channels: u32) -> ChannelSet {
        ChannelSet::of((0..channels).collect())
    }
    /// A non-empty set of distinct channels below `channels`.
    pub fn new(mut ids: Vec<u32>, channels: u32) -> Result<ChannelSet, ChannelSetError> {
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Err(ChannelSetError::Empty);
        }
        if let Some(&id) = ids.iter().find(|&&c| c >= channels) {
            return Err(ChannelSetError::NoSuchChannel { id, channels });
        }
        Ok(ChannelSet::of(ids))
    }
    fn of(ids: Vec<u32>) -> ChannelSet {
        ChannelSet {
            n: Divisor::new(ids.len() as u64),
            ids,
        }
    }
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }
    /// The channel indices within a stack when every one of `stacks` stacks of `per`
    /// consecutive ids holds the same ones (`stack-page` page tables need that), ascending.
    pub fn stack_indices(&self, stacks: u32, per: u32) -> Option<Vec<u32>> {
        if stacks == 0 || per == 0 || !self.ids.len().is_multiple_of(stacks as usize) {
            return None;
        }
        let idx: Vec<u32> = self.ids.iter().filter(|&&c| c < per).copied().collect();
        let uniform = !idx.is_empty()
            && idx.len() * stacks as usize == self.ids.len()
            && (0..stacks).all(|s| {
                idx.iter()
                    .all(|&i| self.ids.binary_search(&(s * per + i)).is_ok())
            });
        uniform.then_some(idx)
    }
}

/// A [`MapConfig`] ready to locate addresses (its divisors prepared).
#[derive(Clone, Debug)]
pub struct AddressMap {
    cfg: MapConfig,
    /// `interleave` (at least 1).
    interleave: Divisor,
    slices: Divisor,
    /// Interleave chunks per row (at least 1).
    col_chunks: Divisor,
    /// `row_bytes` (at least 1), for rows under `bank_bits`.
    row: Divisor,
    banks: Divisor,
    groups: Divisor,
    /// Banks per group (at least 1).
    per_group: Divisor,
    /// Every divisor above is a power of two (the usual case: shifts and masks only).
    pow2: bool,
    /// IPoly hashes by channel-set size (`Scheme::Ipoly`), built on first use of a size.
    ipoly: Vec<Option<crate::mem::ipoly::Ipoly>>,
}

impl AddressMap {
    pub fn new(cfg: MapConfig) -> AddressMap {
        let il = cfg.interleave.max(1);
        let banks = cfg.banks.max(1) as u64;
        let groups = cfg.bank_groups.max(1) as u64;
        let mut map = AddressMap {
            cfg,
            interleave: Divisor::new(il),
            slices: Divisor::new(cfg.slices_per_channel.max(1) as u64),
            col_chunks: Divisor::new((cfg.row_bytes / il).max(1)),
            row: Divisor::new(cfg.row_bytes),
            banks: Divisor::new(banks),
            groups: Divisor::new(groups),
            per_group: Divisor::new((banks / groups).max(1)),
            pow2: false,
            ipoly: match cfg.scheme {
                Scheme::Ipoly => (0..=cfg.channels as u64)
                    .map(crate::mem::ipoly::Ipoly::new)
                    .collect(),
                _ => Vec::new(),
            },
        };
        map.pow2 = [
            map.interleave,
            map.slices,
            map.col_chunks,
            map.banks,
            map.groups,
            map.per_group,
        ]
        .iter()
        .all(|d| d.is_pow2());
        map
    }

    pub fn config(&self) -> &MapConfig {
        &self.cfg
    }

    /// Maps `addr` into `set` (use [`ChannelSet::all`] for the whole GPU).
    #[inline]
    pub fn locate(&self, addr: u64, set: &ChannelSet) -> Location {
        if !matches!(self.cfg.scheme, Scheme::Xor) {
            return self.locate_scheme(addr, set);
        }
        if self.pow2 && set.n.is_pow2() {
            self.locate_with::<true>(addr, set)
        } else {
            self.locate_with::<false>(addr, set)
        }
    }

    /// [`Self::locate`]; `POW2`: every divisor is a power of two.
    #[inline(always)]
    fn locate_with<const POW2: bool>(&self, addr: u64, set: &ChannelSet) -> Location {
        let chunk = self.interleave.div::<POW2>(addr);
        let (index, chunk_n) = fold_index::<POW2>(chunk, set.n);
        let channel = set.ids[index as usize];
        let slice = self.slices.rem::<POW2>(chunk_n) as u32;
        let part = self.slices.div::<POW2>(chunk_n) * self.interleave.d
            + self.interleave.rem::<POW2>(addr);
        self.place::<POW2>(
            channel,
            slice,
            chunk_n,
            self.interleave.rem::<POW2>(addr),
            part,
        )
    }

    /// The location of the `chunk_n`-th chunk of `channel` in `slice`: column, then bank
    /// (bank groups interleaved first), then row; `part` is [`Location::part`].
    #[inline(always)]
    fn place<const POW2: bool>(
        &self,
        channel: u32,
        slice: u32,
        chunk_n: u64,
        within: u64,
        part: u64,
    ) -> Location {
        // (The bytes of a chunk share its index; with no interleave every address is
        // chunk 0.)
        let unit = if self.cfg.interleave == 0 { 0 } else { chunk_n };
        let (b, row) = match &self.cfg.bank_bits {
            None => {
                let cols = self.col_chunks.div::<POW2>(unit);
                (self.banks.rem::<POW2>(cols), self.banks.div::<POW2>(cols))
            }
            Some(bb) => {
                let (b, rest) = bb.split(unit * self.interleave.d + within);
                (b, self.row.div::<false>(rest))
            }
        };
        // Consecutive bank indices alternate bank groups.
        let bank = (self.groups.rem::<POW2>(b) * self.per_group.d
            + self.per_group.rem::<POW2>(self.groups.div::<POW2>(b))) as u32;
        let row = row as u32;
        Location {
            channel,
            slice,
            bank,
            row,
            part,
        }
    }
}

impl AddressMap {
    /// `stack-page` only: (stacks, channels per stack).
    pub fn stack_layout(&self) -> Option<(u32, u32)> {
        match self.cfg.scheme {
            Scheme::StackPage { stacks, .. } => {
                let s = stacks.max(1);
                let per = self.cfg.channels / s;
                (per > 0).then_some((s, per))
            }
            _ => None,
        }
    }

    /// The stack of `addr` under `stack-page` (0 for other schemes).
    #[inline]
    pub fn stack_of(&self, addr: u64) -> u32 {
        match self.cfg.scheme {
            Scheme::StackPage {
                stacks,
                stack_interleave,
            } => ((addr / stack_interleave.max(1)) % stacks.max(1) as u64) as u32,
            _ => 0,
        }
    }

    /// `stack-page` through a page table: `addr` of a page of `page_bytes` that lives on
    /// channel index `index` of every stack, in `frame`. The channel is the address's
    /// stack's channel `index`; the frame takes the place of the chunk number (slice, bank
    /// and row), so a page keeps the same rows wherever it lives.
    #[inline]
    pub fn locate_page(&self, addr: u64, index: u32, frame: u64, page_bytes: u64) -> Location {
        let (_, per) = self.stack_layout().unwrap_or((1, self.cfg.channels.max(1)));
        let channel = self.stack_of(addr) * per + index;
        let il = self.cfg.interleave.max(1);
        let per_page = (page_bytes / il).max(1);
        let chunk_n = frame * per_page + (addr % page_bytes.max(1)) / il;
        let slice = self.slices.rem::<false>(chunk_n) as u32;
        let part = self.part_of(addr, chunk_n);
        self.place::<false>(channel, slice, chunk_n, addr % il, part)
    }

    /// [`Location::part`] of `addr` in the `chunk_n`-th chunk of its channel, for every
    /// scheme but `ipoly` (whose slice is chosen inside the chunk). Under `stack-page` the
    /// stack digit is taken out of the offset within the chunk when it lies there (a stack
    /// turn of `stack_interleave` bytes, `stacks` turns dividing the chunk), so a chunk
    /// holds `interleave / stacks` bytes of each stack.
    fn part_of(&self, addr: u64, chunk_n: u64) -> u64 {
        let il = self.cfg.interleave.max(1);
        let within = addr % il;
        let (per_chunk, within) = match self.cfg.scheme {
            Scheme::StackPage {
                stacks,
                stack_interleave,
            } if stacks > 1 && il.is_multiple_of(stack_interleave.max(1) * stacks as u64) => {
                let si = stack_interleave.max(1);
                let turn = si * stacks as u64;
                (il / stacks as u64, within / turn * si + within % si)
            }
            _ => (il, within),
        };
        chunk_n / self.slices.d * per_chunk + within
    }

    /// [`Self::locate`] for the schemes other than `xor` (plain divisions; only the
    /// bundled `xor` models take the tuned path).
    fn locate_scheme(&self, addr: u64, set: &ChannelSet) -> Location {
        let n = set.ids.len() as u64;
        let il = self.cfg.interleave.max(1);
        let chunk = addr / il;
        let (pos, chunk_n) = match self.cfg.scheme {
            Scheme::Linear | Scheme::Xor => (chunk % n, chunk / n),
            Scheme::Ipoly => match self.ipoly.get(n as usize).and_then(|h| h.as_ref()) {
                Some(h) => (h.hash(chunk), chunk / n),
                None => fold_index::<false>(chunk, set.n),
            },
            Scheme::StackPage {
                stacks,
                stack_interleave,
            } => {
                // The set's channels by stack (ids are sorted, and a stack's channels are
                // consecutive ids): the stack from the low bits, the channel index within
                // it from the page number.
                let s = stacks.max(1) as u64;
                let per = n / s;
                if per == 0 || !n.is_multiple_of(s) {
                    (chunk % n, chunk / n)
                } else {
                    let stack = (addr / stack_interleave.max(1)) % s;
                    (stack * per + chunk % per, chunk / per)
                }
            }
        };
        let channel = set.ids[pos as usize];
        let (slice, part) = match self.cfg.scheme {
            // GPGPU-Sim: the sub-partition is the lowest bank bit, the address bits just
            // below the channel's (consecutive lines of a chunk alternate slices).
            Scheme::Ipoly => (
                ((addr / (il / self.slices.d).max(1)) % self.slices.d) as u32,
                chunk_n * il + addr % il,
            ),
            _ => (
                (chunk_n % self.slices.d) as u32,
                self.part_of(addr, chunk_n),
            ),
        };
        self.place::<false>(channel, slice, chunk_n, addr % il, part)
    }
}

/// The `xor` scheme's choice of a channel for chunk `chunk` among `n`: its index in the
/// set and the chunk's number within that channel. Higher chunk bits are folded into the
/// choice so power-of-two strides spread over the set. The pair is one-to-one (every chunk
/// its own place in its channel): for a power-of-two `n` the fold only flips the residue's
/// bits by a function of the chunk number; for any other `n` the residue is rotated by a
/// fold of the chunk number (XOR-folding the whole chunk and taking it modulo `n`, as this
/// did before 2026-11-28, sent about a fifth of the chunks to the place of another for 6,
/// 12, 40 or 80 channels, and left as many places unused: `models/CALIBRATION.md`).
#[inline(always)]
fn fold_index<const POW2: bool>(chunk: u64, n: Divisor) -> (u64, u64) {
    let chunk_n = n.div::<POW2>(chunk);
    if POW2 || n.is_pow2() {
        (n.rem::<POW2>(chunk ^ (chunk >> 7) ^ (chunk >> 13)), chunk_n)
    } else {
        let turn = chunk_n ^ (chunk_n >> 6) ^ (chunk_n >> 12);
        let index = (chunk - chunk_n * n.d) + n.rem::<false>(turn);
        (if index >= n.d { index - n.d } else { index }, chunk_n)
    }
}

/// Division by a fixed `d` > 0: a shift and a mask when `d` is a power of two (as the
/// sizes usually are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Divisor {
    d: u64,
    /// log2(d) for a power of two, else `u32::MAX`.
    shift: u32,
}

impl Divisor {
    fn new(d: u64) -> Divisor {
        let d = d.max(1);
        Divisor {
            d,
            shift: if d.is_power_of_two() {
                d.trailing_zeros()
            } else {
                u32::MAX
            },
        }
    }

    fn is_pow2(self) -> bool {
        self.shift != u32::MAX
    }

    /// `a / d`; `POW2`: `d` is known to be a power of two.
    #[inline(always)]
    fn div<const POW2: bool>(self, a: u64) -> u64 {
        if POW2 || self.is_pow2() {
            a >> self.shift
        } else {
            a / self.d
        }
    }

    /// `a % d`; `POW2`: `d` is known to be a power of two.
    #[inline(always)]
    fn rem<const POW2: bool>(self, a: u64) -> u64 {
        if POW2 || self.is_pow2() {
            a & (self.d - 1)
        } else {
            a % self.d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> AddressMap {
        AddressMap::new(MapConfig {
            channels: 32,
            slices_per_channel: 2,
            banks: 16,
            bank_groups: 4,
            interleave: 256,
            row_bytes: 2048,
            scheme: Scheme::Xor,
            bank_bits: None,
        })
    }

    /// The mapping as first written, dividing by each size on every call.
    fn plain(c: &MapConfig, addr: u64, set: &[u32]) -> Location {
        let n = set.len() as u64;
        let il = c.interleave.max(1);
        let chunk = addr / il;
        // (Written out: a power of two folds the chunk, any other count rotates.)
        let chunk_n = chunk / n;
        let index = if n.is_power_of_two() {
            (chunk ^ (chunk >> 7) ^ (chunk >> 13)) % n
        } else {
            (chunk % n + (chunk_n ^ (chunk_n >> 6) ^ (chunk_n >> 12)) % n) % n
        };
        let channel = set[index as usize];
        let within = chunk_n * c.interleave + addr % il;
        let slice = (chunk_n % c.slices_per_channel.max(1) as u64) as u32;
        let col_chunks = (c.row_bytes / il).max(1);
        let unit = within / il;
        let banks = c.banks.max(1) as u64;
        let cols = unit / col_chunks;
        let b = cols % banks;
        let groups = c.bank_groups.max(1) as u64;
        let per = (banks / groups).max(1);
        let bank = ((b % groups) * per + (b / groups) % per) as u32;
        let row = (cols / banks) as u32;
        let part = chunk_n / c.slices_per_channel.max(1) as u64 * il + addr % il;
        Location {
            channel,
            slice,
            bank,
            row,
            part,
        }
    }

    /// The prepared divisors give what plain division gives, for power-of-two sizes and
    /// others, whole-GPU and partial channel sets.
    #[test]
    fn prepared_divisors_match_plain_division() {
        let mut rng = crate::testing::XorShift(0x9e37_79b9_7f4a_7c15);
        for (channels, slices, banks, groups, interleave, row) in [
            (32, 2, 16, 4, 256, 2048),
            (32, 2, 16, 4, 4096, 2048),
            (24, 3, 12, 3, 384, 1536),
            (12, 1, 16, 1, 0, 1024),
            (8, 2, 6, 4, 128, 100),
        ] {
            let c = MapConfig {
                channels,
                slices_per_channel: slices,
                banks,
                bank_groups: groups,
                interleave,
                row_bytes: row,
                scheme: Scheme::Xor,
                bank_bits: None,
            };
            let map = AddressMap::new(c);
            let sets = [
                ChannelSet::all(channels),
                ChannelSet::new(vec![1, 3, 5], channels).unwrap(),
                ChannelSet::new((0..channels / 2).collect(), channels).unwrap(),
            ];
            for _ in 0..5_000 {
                let addr = rng.next_u64() >> (rng.next_u64() % 40);
                for set in &sets {
                    assert_eq!(map.locate(addr, set), plain(&c, addr, set.ids()));
                }
            }
        }
    }

    /// No two chunks share a place: under `xor` and `linear`, for channel counts that are
    /// powers of two and others, whole-GPU and partial sets, the chunks of a range land on distinct
    /// (channel, slice, offset) places and fill every channel evenly.
    #[test]
    fn xor_places_every_chunk_in_a_place_of_its_own() {
        for (channels, set) in [
            (6, None),
            (12, None),
            (40, None),
            (80, None),
            (32, None),
            (16, None),
            (32, Some(vec![0, 3, 7, 9, 20, 21, 30])),
            (40, Some((0..36).collect::<Vec<u32>>())),
            (12, Some(vec![1, 3, 5])),
        ] {
            for scheme in [Scheme::Xor, Scheme::Linear] {
                let c = MapConfig {
                    channels,
                    slices_per_channel: 2,
                    banks: 16,
                    bank_groups: 4,
                    interleave: 256,
                    row_bytes: 2048,
                    scheme,
                    bank_bits: None,
                };
                let map = AddressMap::new(c);
                let set = match &set {
                    Some(ids) => ChannelSet::new(ids.clone(), channels).unwrap(),
                    None => ChannelSet::all(channels),
                };
                let n = set.ids().len() as u64;
                let per = 1u64 << 13;
                let mut seen = std::collections::HashSet::new();
                let mut load = std::collections::HashMap::<u32, u64>::new();
                for chunk in 0..n * per {
                    let l = map.locate(chunk * 256, &set);
                    assert!(
                        seen.insert((l.channel, l.slice, l.part)),
                        "{scheme:?}, {channels} channels, set of {n}: chunk {chunk} shares {l:?}"
                    );
                    *load.entry(l.channel).or_default() += 1;
                }
                assert_eq!(
                    load.len() as u64,
                    n,
                    "{channels} channels: a channel unused"
                );
                assert!(
                    load.values().all(|&v| v == per),
                    "{channels} channels: {load:?}"
                );
            }
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

#[cfg(test)]
mod scheme_tests {
    use super::*;

    fn map(scheme: Scheme, channels: u32, interleave: u64) -> AddressMap {
        AddressMap::new(MapConfig {
            channels,
            slices_per_channel: 2,
            banks: 16,
            bank_groups: 4,
            interleave,
            row_bytes: 2048,
            scheme,
            bank_bits: None,
        })
    }

    /// UGPU's `stack-page` map (seed 004 Fig. 8): 4 stacks × 8 channels, stack from address
    /// bits 7-8, channel within the stack from bits 12-14.
    fn ugpu_map() -> AddressMap {
        map(
            Scheme::StackPage {
                stacks: 4,
                stack_interleave: 128,
            },
            32,
            4096,
        )
    }

    #[test]
    fn linear_takes_channels_in_turn() {
        let m = map(Scheme::Linear, 8, 256);
        let all = ChannelSet::all(8);
        for i in 0..64u64 {
            assert_eq!(m.locate(i * 256 + 17, &all).channel, (i % 8) as u32);
        }
    }

    /// A stride of 8 chunks camps on one channel under `linear` and spreads under `ipoly`.
    #[test]
    fn ipoly_spreads_a_camping_stride() {
        let all = ChannelSet::all(8);
        let lin = map(Scheme::Linear, 8, 256);
        let ip = map(Scheme::Ipoly, 8, 256);
        let used = |m: &AddressMap| {
            let mut c: Vec<u32> = (0..64u64)
                .map(|i| m.locate(i * 8 * 256, &all).channel)
                .collect();
            c.sort_unstable();
            c.dedup();
            c.len()
        };
        assert_eq!(used(&lin), 1);
        assert_eq!(used(&ip), 8);
    }

    /// Seed 004 Fig. 8: 4 stacks x 8 channels, stack from address bits 7-8, channel within
    /// the stack from bits 12-14: a 4 KiB page covers the same channel index of all four
    /// stacks, and the next page moves to the next index.
    #[test]
    fn stack_page_spreads_a_page_over_one_channel_index_of_every_stack() {
        let m = ugpu_map();
        let all = ChannelSet::all(32);
        for page in 0..16u64 {
            let mut chans: Vec<u32> = (0..32u64)
                .map(|i| m.locate(page * 4096 + i * 128, &all).channel)
                .collect();
            chans.sort_unstable();
            chans.dedup();
            let idx = (page % 8) as u32;
            assert_eq!(chans, vec![idx, 8 + idx, 16 + idx, 24 + idx], "page {page}");
        }
        // Restricted to channel indices {2, 3} of every stack (a UGPU slice of 8 channels).
        let set = ChannelSet::new(vec![2, 3, 10, 11, 18, 19, 26, 27], 32).unwrap();
        for page in 0..8u64 {
            let mut chans: Vec<u32> = (0..32u64)
                .map(|i| m.locate(page * 4096 + i * 128, &set).channel)
                .collect();
            chans.sort_unstable();
            chans.dedup();
            let idx = 2 + (page % 2) as u32;
            assert_eq!(chans, vec![idx, 8 + idx, 16 + idx, 24 + idx], "page {page}");
        }
    }

    /// The page-table path: a page on index 5 in frame 9 spreads over channel 5 of every
    /// stack, and its frame alone decides slice, bank and row (the same wherever it lives).
    #[test]
    fn stack_page_through_a_page_table() {
        let m = ugpu_map();
        assert_eq!(m.stack_layout(), Some((4, 8)));
        for i in 0..32u64 {
            let a = m.locate_page(77 * 4096 + i * 128, 5, 9, 4096);
            let b = m.locate_page(3 * 4096 + i * 128, 2, 9, 4096);
            assert_eq!(a.channel, (i % 4) as u32 * 8 + 5);
            assert_eq!((a.slice, a.bank, a.row), (b.slice, b.bank, b.row));
        }
        let set = |v: Vec<u32>| ChannelSet::new(v, 32).unwrap();
        assert_eq!(
            set(vec![2, 3, 10, 11, 18, 19, 26, 27]).stack_indices(4, 8),
            Some(vec![2, 3])
        );
        assert_eq!(
            ChannelSet::all(32).stack_indices(4, 8),
            Some((0..8).collect())
        );
        // Not the same indices in every stack, or a stack left out.
        assert_eq!(set(vec![2, 11, 18, 26]).stack_indices(4, 8), None);
        assert_eq!(set(vec![0, 8]).stack_indices(4, 8), None);
        assert_eq!(map(Scheme::Xor, 32, 256).stack_layout(), None);
    }

    /// For every slice, the set (48 sets of 128-byte lines, as UGPU's 96 KB 16-way slice)
    /// that `locate` gives each line of `lines` when computed on [`Location::part`], and
    /// when computed on the line address; with `unique`, checks that no two lines of a
    /// slice share a `part`. Returns (fewest sets reached by a slice on `part`, on the line
    /// address).
    fn sets_reached(lines: impl Iterator<Item = (u64, Location)>, unique: bool) -> (usize, usize) {
        use std::collections::{BTreeMap, BTreeSet};
        // Per slice: the parts, the sets on `part`, the sets on the line address.
        type Seen = (BTreeSet<u64>, BTreeSet<u64>, BTreeSet<u64>);
        let mut by_slice: BTreeMap<(u32, u32), Seen> = BTreeMap::new();
        for (line, loc) in lines {
            let e = by_slice.entry((loc.channel, loc.slice)).or_default();
            assert!(
                e.0.insert(loc.part / 128) || !unique,
                "two lines share part {}",
                loc.part
            );
            e.1.insert(loc.part / 128 % 48);
            e.2.insert(line % 48);
        }
        assert!(!by_slice.is_empty());
        let min = |f: fn(&Seen) -> usize| by_slice.values().map(f).min().unwrap();
        (min(|e| e.1.len()), min(|e| e.2.len()))
    }

    /// The seventeenth session's defect: under UGPU's `stack-page` the stack is line bits
    /// 0-1 and 48 sets ≡ 0 (mod 4), so a set index on the line address reached 12 of a
    /// slice's 48 sets. On `part` every slice reaches all of them, through the page table
    /// and without it, and under a linear map whose channel choice is the set bits.
    #[test]
    fn a_slice_reaches_all_its_sets_on_the_partition_address() {
        let sp = ugpu_map();
        let all = ChannelSet::all(32);
        // 64 MiB of consecutive lines.
        let n = 64 << 20 >> 7;
        let (part, full) = sets_reached((0..n).map(|l| (l, sp.locate(l * 128, &all))), true);
        assert_eq!((part, full), (48, 12));
        // Through a page table: pages dealt over the 8 indices in turn, frames counted per
        // index (as `Frames` allocates on first touch).
        let paged = (0..n).map(|l| {
            let page = l * 128 / 4096;
            let (idx, frame) = ((page % 8) as u32, page / 8);
            (l, sp.locate_page(l * 128, idx, frame, 4096))
        });
        assert_eq!(sets_reached(paged, true).0, 48);
        // An application confined to two channel indices of every stack.
        let two = ChannelSet::new(vec![2, 3, 10, 11, 18, 19, 26, 27], 32).unwrap();
        assert_eq!(
            sets_reached((0..n).map(|l| (l, sp.locate(l * 128, &two))), true).0,
            48
        );
        // Linear over 16 channels with 128-byte chunks: the channel is line bits 0-3.
        let lin = map(Scheme::Linear, 16, 128);
        let all = ChannelSet::all(16);
        let (part, full) = sets_reached((0..n).map(|l| (l, lin.locate(l * 128, &all))), true);
        assert_eq!((part, full), (48, 3));
        // The fold over 6 channels can send two chunks of one `chunk_n` to one channel
        // (they then share a DRAM location too), so `part` is not unique there.
        let xor = map(Scheme::Xor, 6, 256);
        let all = ChannelSet::all(6);
        assert_eq!(
            sets_reached((0..n).map(|l| (l, xor.locate(l * 128, &all))), false).0,
            48
        );
    }

    /// GPGPU-Sim's `RBBBCCCC.BCCSSSSS` (16 channels at `dramid@8`, 16 banks in 4 groups,
    /// 2 KiB rows): the bank index is channel-offset bits 7, 12, 13 and 14, the row starts
    /// at bit 15, and the two 128 B halves of a 256 B chunk lie in different bank groups.
    /// Every 32 B sector of a channel keeps a place of its own.
    #[test]
    fn bank_bits_follow_the_gpgpusim_string() {
        let m = AddressMap::new(MapConfig {
            channels: 16,
            slices_per_channel: 2,
            banks: 16,
            bank_groups: 4,
            interleave: 256,
            row_bytes: 2048,
            scheme: Scheme::Linear,
            bank_bits: BankBits::new(&[7, 12, 13, 14]),
        });
        let all = ChannelSet::all(16);
        // Channel 0's chunks are every 16th chunk; its offset is chunk_n * 256 + within.
        let at = |off: u64| m.locate((off / 256) * 16 * 256 + off % 256, &all);
        let group = |l: Location| l.bank / 4;
        // Bank index b: group b % 4, then b / 4 within it.
        assert_eq!((at(0).bank, at(0).row), (0, 0));
        assert_eq!(at(128).bank, 4, "bit 7 is bank bit 0: group 1");
        assert_ne!(group(at(0)), group(at(128)));
        assert_eq!(at(4096).bank, 8, "bit 12 is bank bit 1: group 2");
        assert_eq!(at(3 * 4096 + 128).bank, 13, "index 7: group 3, second bank");
        assert_eq!((at(1 << 15).bank, at(1 << 15).row), (0, 1));
        // Bits 8-11 and 0-6 are the column: a row of 2 KiB in each bank.
        assert!((0..4096)
            .step_by(256)
            .all(|o| (at(o).bank, at(o).row) == (0, 0)));
        // 64 KiB of the channel: 16 banks x 2 rows, each row exactly its 64 sectors.
        let mut per_row = std::collections::HashMap::new();
        for sector in 0..(1u64 << 16) / 32 {
            let l = at(sector * 32);
            assert_eq!(l.channel, 0);
            *per_row.entry((l.bank, l.row)).or_insert(0) += 1;
        }
        assert_eq!(per_row.len(), 32);
        assert!(per_row.values().all(|&n| n == 64));
        // Bank bits just above a 2 KiB row are the layout with no key: whole rows bank
        // after bank, bank groups alternating.
        let rows = |bank_bits| {
            AddressMap::new(MapConfig {
                bank_bits,
                ..*m.config()
            })
        };
        let (plain, above) = (rows(None), rows(BankBits::new(&[11, 12, 13, 14])));
        assert!((0..1u64 << 20)
            .step_by(32)
            .all(|a| plain.locate(a, &all) == above.locate(a, &all)));
        assert_eq!(BankBits::new(&[0; 9]), None);
        assert_eq!(BankBits::new(&[63]), None);
    }
}
