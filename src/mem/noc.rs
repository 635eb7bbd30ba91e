//! The crossbar between SMs and memory partitions: a fixed traversal latency plus, per
//! input and per output port, a bandwidth limit. Each port is a reservation
//! [`Calendar`], so packets sent out of time order (a reply whose data is ready later than
//! one computed after it) do not queue behind each other.

use crate::mem::calendar::Calendar;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NocConfig {
    /// Cycles to cross the network with no contention.
    pub latency: u64,
    /// Bytes a port moves per cycle (flit size × flits per cycle).
    pub port_bytes_per_cycle: u64,
}

#[derive(Clone, Debug)]
pub struct Crossbar {
    cfg: NocConfig,
    inputs: Vec<Calendar>,
    outputs: Vec<Calendar>,
    pub bytes: u64,
    /// Cycles packets spent waiting for a port.
    pub queue_cycles: u64,
}

const WINDOW: usize = 1 << 14;

impl Crossbar {
    pub fn new(cfg: NocConfig, inputs: usize, outputs: usize) -> Crossbar {
        let cap = cfg.port_bytes_per_cycle.max(1) as u32;
        Crossbar {
            cfg,
            inputs: vec![Calendar::new(cap, WINDOW); inputs],
            outputs: vec![Calendar::new(cap, WINDOW); outputs],
            bytes: 0,
            queue_cycles: 0,
        }
    }

    /// Sends `bytes` from input port `src` to output port `dst` at time `now`; returns when
    /// the last byte arrives.
    pub fn send(&mut self, src: usize, dst: usize, bytes: u64, now: u64) -> u64 {
        let b = bytes.max(1).min(u32::MAX as u64) as u32;
        let occ = bytes.div_ceil(self.cfg.port_bytes_per_cycle.max(1)).max(1);
        let left = self.inputs[src].reserve(now, b);
        let arrive = self.outputs[dst].reserve(left - 1 + self.cfg.latency, b);
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
}
