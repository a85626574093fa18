//! Bandwidth shared by every DMA engine of the device: the HBM stacks
//! (`hbm_stack_gbps`, docs/timing.md "Shared HBM bandwidth").
//!
//! Each stack is a server that delivers at most `hbm_stack_gbps` bytes per
//! ns. A packet that reads or writes `len` bytes of a stack reserves
//! `len / rate` cycles of it, first come first served from the packet's
//! start (a virtual-finish-time queue, in the device's global event order,
//! so the result is deterministic). The packet's data phase ends no earlier
//! than the reservation: while the stacks' total demand stays below their
//! rate nothing changes; above it the engines are slowed so that the stack
//! delivers exactly its rate. One engine alone asks for about 1/30 of a
//! stack, so only many engines streaming from one stack at once see the cap.

use crate::{Cycle, TimingConfig};

/// The HBM stacks' address ranges and how far each is booked.
#[derive(Clone, Debug, Default)]
pub struct HbmBandwidth {
    /// `[base, end)` of each stack.
    stacks: Vec<(u64, u64)>,
    /// Per stack: the cycle (fractional) until which it is booked.
    booked_until: Vec<f64>,
    /// Cycles per byte of one stack; 0 = no limit.
    cycles_per_byte: f64,
    /// The stack of the last booking (runs of packets hit the same one).
    last_hit: usize,
}

/// `x.ceil() as u64` for the non-negative cycle counts booked here, without
/// a libm call on every packet.
fn ceil_cycles(x: f64) -> u64 {
    // Booked cycles stay far below 2^63: the signed conversion is one
    // instruction where the unsigned one needs a range fix-up.
    let t = x as i64;
    (if (t as f64) < x { t + 1 } else { t }) as u64
}

impl HbmBandwidth {
    /// Stacks at `ranges` (`[base, end)` each), with the rate of `timing`.
    pub fn new(ranges: Vec<(u64, u64)>, timing: &TimingConfig) -> Self {
        let cycles_per_byte = if timing.hbm_stack_gbps > 0.0 {
            // bytes/ns → bytes/cycle = GB/s / GHz.
            timing.clock_ghz / timing.hbm_stack_gbps
        } else {
            0.0
        };
        Self {
            booked_until: vec![0.0; ranges.len()],
            stacks: ranges,
            cycles_per_byte,
            last_hit: 0,
        }
    }

    /// The stack `addr` is in.
    pub fn stack_of(&self, addr: u64) -> Option<usize> {
        let last = self.last_hit;
        if let Some(&(base, end)) = self.stacks.get(last)
            && addr >= base
            && addr < end
        {
            return Some(last);
        }
        self.stacks
            .iter()
            .position(|&(base, end)| addr >= base && addr < end)
    }

    /// Books `len` bytes at `addr` for a transfer starting at `start`;
    /// returns the cycle by which the stack has delivered them (`start`
    /// when `addr` is not in HBM or there is no limit).
    pub fn reserve(&mut self, addr: u64, len: u64, start: Cycle) -> Cycle {
        if self.cycles_per_byte == 0.0 || len == 0 {
            return start;
        }
        let Some(s) = self.stack_of(addr) else {
            return start;
        };
        self.last_hit = s;
        let Some(booked) = self.booked_until.get_mut(s) else {
            return start;
        };
        let from = booked.max(start.0 as f64);
        *booked = from + len as f64 * self.cycles_per_byte;
        Cycle(ceil_cycles(*booked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(gbps: f64) -> HbmBandwidth {
        let mut t = TimingConfig::default_config().unwrap();
        t.hbm_stack_gbps = gbps;
        t.clock_ghz = 1.0;
        HbmBandwidth::new(vec![(0, 0x1000_0000), (0x4000_0000, 0x5000_0000)], &t)
    }

    #[test]
    fn bookings_queue_per_stack_and_idle_time_is_not_banked() {
        let mut b = cap(100.0); // 100 bytes per cycle
        assert_eq!(b.reserve(0x100, 1000, Cycle(0)), Cycle(10));
        assert_eq!(b.reserve(0x200, 1000, Cycle(0)), Cycle(20));
        // Another stack is independent.
        assert_eq!(b.reserve(0x4000_0000, 1000, Cycle(0)), Cycle(10));
        // Outside HBM: no limit.
        assert_eq!(b.reserve(0x2000_0000, 1 << 30, Cycle(5)), Cycle(5));
        // After an idle gap the booking starts at the request.
        assert_eq!(b.reserve(0x100, 50, Cycle(100)), Cycle(101));
    }

    #[test]
    fn ceil_cycles_is_ceil() {
        for x in [
            0.0,
            0.25,
            1.0,
            1.5,
            2.999_999,
            3.0,
            1e12 + 0.5,
            4_503_599_627_370_495.5,
        ] {
            assert_eq!(ceil_cycles(x), x.ceil() as u64, "{x}");
        }
    }

    #[test]
    fn zero_means_unlimited() {
        let mut b = cap(0.0);
        assert_eq!(b.reserve(0x100, 1 << 30, Cycle(7)), Cycle(7));
    }
}
