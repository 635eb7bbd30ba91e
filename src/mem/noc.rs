//! The crossbar between SMs and memory partitions: a fixed traversal latency plus, per
//! input and per output port, a bandwidth limit. Each port is a reservation
//! [`Calendar`], so packets sent out of time order (a reply whose data is ready later than
//! one computed after it) do not queue behind each other. With FIFO inputs, a packet sent
//! in time order also waits until the packet ahead of it at its input has been taken by
//! its output (head-of-line blocking), and packets occupy whole flits.
//!
//! With `buffer` entries per port (GPGPU-Sim's `-icnt_in_buffer_limit` /
//! `-icnt_out_buffer_limit`; one packet an entry, as its local crossbar counts them), a
//! packet sent in time order enters its input buffer only when the buffer has room, leaves it only when its output buffer has room
//! (credits: the input, and every packet behind it, waits meanwhile), and frees its output
//! slots when the receiver takes it ([`Crossbar::taken`]; at arrival unless told later).

use crate::mem::calendar::Calendar;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NocConfig {
    /// Cycles to cross the network with no contention.
    pub latency: u64,
    /// Bytes a port moves per cycle (flit size × flits per cycle).
    pub port_bytes_per_cycle: u64,
    /// Bytes per flit (used with FIFO inputs: a packet occupies whole flits).
    pub flit_bytes: u64,
    /// Inputs are FIFO queues (head-of-line blocking, cut-through).
    pub fifo: bool,
    /// Packets each input and each output buffer holds (0: unbounded).
    pub buffer: u32,
}

/// A bounded FIFO buffer known by when its entries leave: the slot of entry `n` is free
/// once entry `n - cap` has left. Leave times are kept non-decreasing (FIFO order).
#[derive(Clone, Debug, Default)]
pub struct Credits {
    leave: Vec<u64>,
    /// Ring position of the next entry.
    pos: usize,
    /// Entries pushed by the last [`Credits::push`].
    last: usize,
}

impl Credits {
    pub fn new(cap: u32) -> Credits {
        Credits {
            leave: vec![0; cap as usize],
            pos: 0,
            last: 0,
        }
    }

    /// Whether the buffer has a capacity.
    #[inline]
    pub fn bounded(&self) -> bool {
        !self.leave.is_empty()
    }

    /// The earliest time `k` more entries fit (entries beyond the capacity count as a full
    /// buffer); 0 when unbounded.
    #[inline]
    pub fn room(&self, k: u64) -> u64 {
        let cap = self.leave.len();
        if cap == 0 {
            return 0;
        }
        // The slot of the last of the k entries held entry (pos + k - 1) - cap.
        let mut i = self.pos + (k as usize).clamp(1, cap) - 1;
        if i >= cap {
            i -= cap;
        }
        self.leave[i]
    }

    /// Adds `k` entries that leave at `t` (not before the entries ahead of them).
    #[inline]
    pub fn push(&mut self, k: u64, t: u64) {
        let cap = self.leave.len();
        if cap == 0 {
            return;
        }
        let prev = self.leave[if self.pos == 0 { cap - 1 } else { self.pos - 1 }];
        let t = t.max(prev);
        let k = (k as usize).clamp(1, cap);
        for _ in 0..k {
            self.leave[self.pos] = t;
            self.pos += 1;
            if self.pos == cap {
                self.pos = 0;
            }
        }
        self.last = k;
    }

    /// The entries of the last push leave at `t` instead, if later.
    #[inline]
    pub fn delay_last(&mut self, t: u64) {
        let cap = self.leave.len();
        let mut i = self.pos;
        for _ in 0..self.last {
            i = if i == 0 { cap - 1 } else { i - 1 };
            self.leave[i] = self.leave[i].max(t);
        }
    }
}

/// One packet's passage: when it entered its input buffer, left it, and arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub enter: u64,
    pub leave: u64,
    pub arrive: u64,
}

#[derive(Clone, Debug)]
pub struct Crossbar {
    cfg: NocConfig,
    inputs: Vec<Calendar>,
    outputs: Vec<Calendar>,
    /// Per input (FIFO inputs only): the latest send time seen and the cycle its input
    /// became free again.
    head: Vec<(u64, u64)>,
    /// Per input (bounded buffers only): the latest send time seen (credits are taken by
    /// sends in time order).
    seen: Vec<u64>,
    in_buf: Vec<Credits>,
    out_buf: Vec<Credits>,
    /// Per output: whether the last send reserved output slots ([`Crossbar::taken`]).
    counted: Vec<bool>,
    pub bytes: u64,
    /// Cycles packets spent waiting for a port.
    pub queue_cycles: u64,
}

pub const WINDOW: usize = 1 << 14;

impl Crossbar {
    pub fn new(cfg: NocConfig, inputs: usize, outputs: usize) -> Crossbar {
        let cap = cfg.port_bytes_per_cycle.max(1) as u32;
        Crossbar {
            cfg,
            inputs: vec![Calendar::new(cap, WINDOW); inputs],
            outputs: vec![Calendar::new(cap, WINDOW); outputs],
            head: if cfg.fifo {
                vec![(0, 0); inputs]
            } else {
                Vec::new()
            },
            seen: if cfg.buffer > 0 {
                vec![0; inputs]
            } else {
                Vec::new()
            },
            in_buf: if cfg.buffer > 0 {
                vec![Credits::new(cfg.buffer); inputs]
            } else {
                Vec::new()
            },
            out_buf: if cfg.buffer > 0 {
                vec![Credits::new(cfg.buffer); outputs]
            } else {
                Vec::new()
            },
            counted: if cfg.buffer > 0 {
                vec![false; outputs]
            } else {
                Vec::new()
            },
            bytes: 0,
            queue_cycles: 0,
        }
    }

    /// Sends `bytes` from input port `src` to output port `dst` at time `now`; returns when
    /// the last byte arrives. With FIFO inputs, a send in time order (not earlier than every
    /// send before it at this input) starts once the packet ahead has left, and one computed
    /// ahead of time and sent out of order is placed by the calendars alone.
    #[inline]
    pub fn send(&mut self, src: usize, dst: usize, bytes: u64, now: u64) -> u64 {
        self.hop(src, dst, bytes, now).arrive
    }

    /// [`Self::send`] of a packet computed ahead of time: it may leave at `at`, the present
    /// being `present` (a reply whose data is ready behind an atomic unit's backlog or a
    /// migrating page). Up to the calendars' `ahead_limit` past the present it is an
    /// ordinary send at `at`; further ahead it is placed by the calendars alone (it is not
    /// in the input's FIFO or buffers yet), without moving their windows past the present.
    pub fn send_ahead(&mut self, src: usize, dst: usize, bytes: u64, present: u64, at: u64) -> u64 {
        if at <= present.saturating_add(self.inputs[src].ahead_limit()) {
            return self.send(src, dst, bytes, at);
        }
        let (b, occ) = self.wire(bytes);
        let left = self.inputs[src].reserve_ahead(present, at, b);
        let from = if self.cfg.fifo { left - occ } else { left - 1 };
        let arrive = self.outputs[dst].reserve_ahead(present, from + self.cfg.latency, b);
        self.queue_cycles += arrive.saturating_sub(at + self.cfg.latency + occ);
        self.bytes += bytes;
        arrive
    }

    /// A packet of `bytes` on the wire: the bytes a port reserves for it (whole flits with
    /// FIFO inputs) and the cycles it occupies a port.
    #[inline(always)]
    fn wire(&self, bytes: u64) -> (u32, u64) {
        let flit = self.cfg.flit_bytes.max(1);
        let wire = if self.cfg.fifo {
            bytes.max(1).div_ceil(flit) * flit
        } else {
            bytes.max(1)
        };
        let occ = wire.div_ceil(self.cfg.port_bytes_per_cycle.max(1)).max(1);
        (wire.min(u32::MAX as u64) as u32, occ)
    }

    /// [`Self::send`], with when the packet entered and left its input buffer. With bounded
    /// buffers, a send in time order waits for room in its input buffer, then (holding its
    /// input) for room in its output buffer.
    pub fn hop(&mut self, src: usize, dst: usize, bytes: u64, now: u64) -> Hop {
        let fifo = self.cfg.fifo;
        let (b, occ) = self.wire(bytes);
        let bounded = !self.seen.is_empty() && now >= self.seen[src];
        // (Buffers count packets, as GPGPU-Sim's local crossbar does.)
        let flits = 1u64;
        let enter = if bounded {
            self.seen[src] = now;
            now.max(self.in_buf[src].room(flits))
        } else {
            now
        };
        let in_order = fifo && now >= self.head[src].0;
        let start = if in_order {
            enter.max(self.head[src].1)
        } else {
            enter
        };
        let left = self.inputs[src].reserve(start, b);
        // FIFO inputs cut through (the first flit reaches the output as it leaves the
        // input); otherwise a packet leaves for the output once it has left the input.
        let from = if fifo { left - occ } else { left - 1 };
        let mut at = from + self.cfg.latency;
        if bounded {
            // No credit at the output: the packet waits in its input.
            at = at.max(self.out_buf[dst].room(flits));
        }
        let arrive = self.outputs[dst].reserve(at, b);
        let leave = (arrive - self.cfg.latency).max(left);
        if in_order {
            // The input is free once its last flit has been taken by the output.
            self.head[src] = (now, leave);
        }
        if bounded {
            self.in_buf[src].push(flits, leave);
            self.out_buf[dst].push(flits, arrive);
        }
        if let Some(c) = self.counted.get_mut(dst) {
            *c = bounded;
        }
        self.queue_cycles += arrive.saturating_sub(now + self.cfg.latency + occ);
        self.bytes += bytes;
        Hop {
            enter,
            leave,
            arrive,
        }
    }

    /// The packet last sent to output `dst` is taken from its output buffer at `t` (not at
    /// its arrival): its slots stay taken until then.
    #[inline]
    pub fn taken(&mut self, dst: usize, t: u64) {
        if self.counted.get(dst).copied().unwrap_or(false) {
            self.out_buf[dst].delay_last(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unloaded_latency_and_port_bandwidth() {
        let mut x = Crossbar::new(
            NocConfig {
                latency: 10,
                port_bytes_per_cycle: 32,
                flit_bytes: 32,
                fifo: false,
                buffer: 0,
            },
            4,
            4,
        );
        assert_eq!(x.send(0, 0, 32, 100), 111);
        // 100 back-to-back 128-byte packets into one output: limited to 32 B/cycle.
        let mut last = 0;
        for i in 0..100 {
            last = last.max(x.send(i % 4, 1, 128, 1000));
        }
        assert!(
            (1000 + 10 + 100 * 4..=1000 + 10 + 100 * 4 + 4).contains(&last),
            "{last}"
        );
        assert!(x.queue_cycles > 0);
        // Different outputs from different inputs do not interfere.
        let a = x.send(2, 2, 32, 5000);
        let b = x.send(3, 3, 32, 5000);
        assert_eq!(a, b);
        // A packet sent for a later time does not delay an earlier one.
        let late = x.send(0, 3, 32, 9000);
        let early = x.send(1, 3, 32, 6000);
        assert!(early < late && early == 6011, "{early} {late}");
    }

    fn fifo_xbar() -> Crossbar {
        Crossbar::new(
            NocConfig {
                latency: 1,
                port_bytes_per_cycle: 40,
                flit_bytes: 40,
                fifo: true,
                buffer: 0,
            },
            4,
            4,
        )
    }

    #[test]
    fn fifo_inputs_block_behind_their_head_packet() {
        // Output 1 is taken for cycles 100..120 by input 1's twenty one-flit packets.
        let mut x = fifo_xbar();
        for _ in 0..20 {
            x.send(1, 1, 40, 99);
        }
        // Input 0 sends to the busy output 1, then to the idle output 2: the second packet
        // waits until the first has been taken (cycle 120), then crosses in one cycle.
        let a = x.send(0, 1, 40, 100);
        let b = x.send(0, 2, 40, 100);
        assert_eq!(a, 121, "behind input 1's burst");
        assert_eq!(b, 122, "head-of-line blocked behind the packet to output 1");
        // Without FIFO inputs the second packet waits only for its input port's next cycle.
        let mut y = Crossbar::new(
            NocConfig {
                fifo: false,
                ..x.cfg
            },
            4,
            4,
        );
        for _ in 0..20 {
            y.send(1, 1, 40, 99);
        }
        y.send(0, 1, 40, 100);
        assert_eq!(y.send(0, 2, 40, 100), 103);
    }

    #[test]
    fn fifo_packets_take_whole_flits_and_cut_through() {
        let mut x = fifo_xbar();
        // An 8 B header still takes a whole 40 B flit: five headers need five cycles.
        let last = (0..5).map(|_| x.send(0, 0, 8, 10)).max().unwrap();
        assert_eq!(last, 10 + 5 + 1);
        // A 136 B packet is 4 flits: uncontended, its last flit arrives 4 + latency cycles
        // after it starts (cut-through), not 2 x 4 - 1 + latency (store and forward).
        assert_eq!(x.send(2, 3, 136, 50), 50 + 4 + 1);
        // A send computed ahead of time does not block a later-computed earlier one.
        let late = x.send(3, 2, 40, 900);
        let early = x.send(3, 1, 40, 300);
        assert_eq!((late, early), (902, 302));
    }
}
