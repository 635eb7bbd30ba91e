//! The crossbar between SMs and memory partitions: a fixed traversal latency plus, per
//! input and per output port, a bandwidth limit. Each port is a reservation
//! [`Calendar`], so packets sent out of time order (a reply whose data is ready later than
//! one computed after it) do not queue behind each other. With FIFO inputs, a packet sent
//! in time order also waits until the packet ahead of it at its input has been taken by
//! its output (head-of-line blocking), and packets occupy whole flits.

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
}

#[derive(Clone, Debug)]
pub struct Crossbar {
    cfg: NocConfig,
    inputs: Vec<Calendar>,
    outputs: Vec<Calendar>,
    /// Per input (FIFO inputs only): the latest send time seen and the cycle its input
    /// became free again.
    head: Vec<(u64, u64)>,
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
            bytes: 0,
            queue_cycles: 0,
        }
    }

    /// Sends `bytes` from input port `src` to output port `dst` at time `now`; returns when
    /// the last byte arrives. With FIFO inputs, a send in time order (not earlier than every
    /// send before it at this input) starts once the packet ahead has left, and one computed
    /// ahead of time and sent out of order is placed by the calendars alone.
    pub fn send(&mut self, src: usize, dst: usize, bytes: u64, now: u64) -> u64 {
        let fifo = self.cfg.fifo;
        let wire = if fifo {
            let flit = self.cfg.flit_bytes.max(1);
            bytes.max(1).div_ceil(flit) * flit
        } else {
            bytes.max(1)
        };
        let b = wire.min(u32::MAX as u64) as u32;
        let occ = wire.div_ceil(self.cfg.port_bytes_per_cycle.max(1)).max(1);
        let in_order = fifo && now >= self.head[src].0;
        let start = if in_order {
            now.max(self.head[src].1)
        } else {
            now
        };
        let left = self.inputs[src].reserve(start, b);
        // FIFO inputs cut through (the first flit reaches the output as it leaves the
        // input); otherwise a packet leaves for the output once it has left the input.
        let from = if fifo { left - occ } else { left - 1 };
        let arrive = self.outputs[dst].reserve(from + self.cfg.latency, b);
        if in_order {
            // The input is free once its last flit has been taken by the output.
            self.head[src] = (now, (arrive - self.cfg.latency).max(left));
        }
        self.queue_cycles += arrive.saturating_sub(now + self.cfg.latency + occ);
        self.bytes += bytes;
        arrive
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
