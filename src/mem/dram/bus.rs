//! A DRAM channel's command and return paths: the commands ([`Command`]), the command
//! buses (one command a cycle on each, kept as bitmap rings of taken cycles; ACT and PRE
//! share the column commands' bus unless the channel has two), the optional log of issued
//! commands, and the bounded return queue that read data waits in until it leaves for the
//! L2.

use std::collections::VecDeque;

use super::Channel;

/// A DRAM command, as recorded by [`Channel::record_commands`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Pre,
    Act,
    Read,
    Write,
}

impl Command {
    /// Row commands (ACT, PRE) use the row command bus when there are two.
    pub fn is_row(self) -> bool {
        matches!(self, Command::Pre | Command::Act)
    }
}

/// Cycles a command bus remembers ahead of its oldest kept cycle.
const CMD_RING: u64 = 64 * 64;

/// One command bus: which command-clock cycles already carry a command, as a bitmap ring
/// over `CMD_RING` cycles from `base` (commands are placed at or after the decision time,
/// which never goes back, so the ring slides forward as later cycles are asked for).
#[derive(Clone, Debug)]
pub(super) struct CmdBus {
    base: u64,
    words: Box<[u64; 64]>,
}

impl CmdBus {
    pub(super) fn new() -> CmdBus {
        CmdBus {
            base: 0,
            words: Box::new([0; 64]),
        }
    }

    /// The first free cycle at or after `t`, which it then takes. (A cycle the ring has
    /// already slid past is not checked: the caller never asks for one.)
    #[inline]
    fn take(&mut self, mut t: u64) -> u64 {
        if t < self.base {
            return t;
        }
        loop {
            if t >= self.base + CMD_RING {
                if t >= self.base + 2 * CMD_RING {
                    *self.words = [0; 64];
                    self.base = (t & !63) - (CMD_RING - 64);
                } else {
                    while t >= self.base + CMD_RING {
                        self.words[(self.base / 64 % 64) as usize] = 0;
                        self.base += 64;
                    }
                }
            }
            let (w, bit) = ((t / 64 % 64) as usize, 1u64 << (t % 64));
            if self.words[w] & bit == 0 {
                self.words[w] |= bit;
                return t;
            }
            t += 1;
        }
    }
}

/// The return queue: a read access holds an entry from its column command until it
/// leaves for the L2, one every `gap` cycles and not before its data is in; with all
/// `cap` entries held nothing issues (no bound when `cap` is 0).
#[derive(Clone, Debug)]
pub(super) struct ReturnQueue {
    /// When each read access in it leaves, in order (entries that have left by the
    /// channel's cursor are dropped as it moves on).
    left: VecDeque<u64>,
    cap: usize,
    gap: u64,
}

impl ReturnQueue {
    pub(super) fn new(cap: usize, gap: u64) -> ReturnQueue {
        ReturnQueue {
            left: VecDeque::new(),
            cap,
            gap,
        }
    }

    /// The earliest time it has room for one more read access.
    #[inline]
    pub(super) fn free_at(&self) -> u64 {
        let n = self.left.len();
        if self.cap == 0 || n < self.cap {
            0
        } else {
            self.left[n - self.cap]
        }
    }

    /// Drops the entries that have left by `now`.
    #[inline]
    pub(super) fn drop_left(&mut self, now: u64) {
        while self.left.front().is_some_and(|&x| x <= now) {
            self.left.pop_front();
        }
    }

    /// When an access whose data is through at `done` leaves the channel: a read takes
    /// an entry (with a bounded queue) and leaves `gap` after the one before it.
    #[inline]
    pub(super) fn leave(&mut self, done: u64, is_write: bool) -> u64 {
        if is_write || self.cap == 0 {
            return done;
        }
        let l = (self.left.back()).map_or(0, |&b| b + self.gap).max(done);
        self.left.push_back(l);
        l
    }
}

impl Channel {
    /// Records every command issued from now on (for tests and traces).
    pub fn record_commands(&mut self) {
        self.log = Some(Vec::new());
    }

    /// The commands recorded so far: (command-clock cycle, command).
    pub fn commands(&self) -> &[(u64, Command)] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// Cycles a command may slip for its command-bus slot (a few commands at most compete
    /// for a cycle: ACTs are tRRD apart and column commands tCCD apart).
    pub(super) const CMD_SLACK: u64 = 4;

    /// Places `c` on its command bus at or after `t`; returns its cycle.
    #[inline]
    pub(super) fn command(&mut self, c: Command, t: u64) -> u64 {
        let bus = (c.is_row() && self.cmd.len() > 1) as usize;
        let t = self.cmd[bus].take(t);
        if let Some(l) = &mut self.log {
            l.push((t, c));
        }
        t
    }
}
