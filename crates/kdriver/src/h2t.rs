//! The driver's own copy path, "H2T" (docs/references/driver.md §4): one host-resident
//! 8192-entry TX/RX ring pair per NeuronCore on engines 128–131, batches of
//! at most 2031 data pairs closed by a 4-byte marker completion pair, the
//! RX-before-TX doorbell, CPU polling of the marker with the driver's
//! timeout arithmetic in simulated time, and the SYNC/ASYNC1/ASYNC2
//! context slots.

use dma_abi::{CmeWord, DEFAULT_COPY_WORD1, DEFAULT_COPY_WORD1_WRITE_BARRIER, Flags, rx, tx};
use ioctl_abi::Errno;
use q7::{EngineLayout, QueueRegs};
use serde::Serialize;
use sim_core::Cycle;
use soc::Device;
use soc::device::OnStall;

use crate::mem::{AllocRequest, Lifespan, MemManager};

/// The H2T engines of V3, indexed by `nc_id / 2` (§4.1).
pub const H2T_ENGINES: [u16; 4] = [128, 129, 130, 131];
/// `DMA_H2T_DESC_COUNT` requested (§4.2).
pub const DMA_H2T_DESC_COUNT: u32 = 4096;
/// Largest descriptor (`MAX_DMA_DESC_SIZE`, §4.3).
pub const MAX_DMA_DESC_BYTES: u64 = 65_536;
/// Data pairs per batch: `DMA_H2T_DESC_COUNT/2 − 16 − 1` (§4.3).
pub const SYNC_THRESHOLD_PAIRS: usize = (DMA_H2T_DESC_COUNT as usize) / 2 - 16 - 1;
/// The value the CPU writes at the marker and the completion pair copies
/// to marker + 4 (§4.3).
pub const COMPLETION_MARKER: u32 = 0xABCD_EF01;
/// Ring slots kept free.
pub const RING_RESERVED_DESCS: u64 = 16;

/// `ndmar_ring_get_desc_count`: 64 below 32, else the next power of two
/// of `v + 15` (§4.2) — 4096 gives 8192.
#[must_use]
pub fn ring_desc_count(v: u32) -> u32 {
    if v < 32 {
        64
    } else {
        (v + 16 - 1).next_power_of_two()
    }
}

/// H2T context slots (`neuron_dma_h2t_ctx_handle_type`, §1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[repr(i32)]
pub enum Ctx {
    /// Synchronous copies.
    Sync = 0,
    /// First async slot.
    Async1 = 1,
    /// Second async slot.
    Async2 = 2,
}

impl Ctx {
    /// The slot of a raw handle (`-1` = none).
    #[must_use]
    pub fn from_raw(raw: i32) -> Option<Self> {
        match raw {
            0 => Some(Self::Sync),
            1 => Some(Self::Async1),
            2 => Some(Self::Async2),
            _ => None,
        }
    }

    /// `ndma_dma_ctx_get_next_handle`: NONE→ASYNC1, ASYNC1→ASYNC2,
    /// ASYNC2→ASYNC1, SYNC→SYNC (§4.6).
    #[must_use]
    pub fn next(prev: Option<Self>) -> Self {
        match prev {
            None | Some(Self::Async2) => Self::Async1,
            Some(Self::Async1) => Self::Async2,
            Some(Self::Sync) => Self::Sync,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The driver's completion-wait arithmetic (§4.5) for a batch of `count`
/// descriptors (data pairs + completion pair): the first sleep and the
/// number of 1 µs polls, in microseconds.
#[must_use]
pub fn wait_budget_us(count: u64, is_async: bool) -> (u64, u64) {
    let est = 2 * count.saturating_sub(1);
    let first = if is_async { 1 } else { est.saturating_sub(1) };
    let polls = (est * 100).saturating_sub(first) * 100;
    (first, polls)
}

/// One data pair of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Source address.
    pub src: u64,
    /// Destination address.
    pub dst: u64,
    /// Bytes (≤ 64 KiB).
    pub len: u32,
}

/// `ndma_memcpy_chunks` (§4.3): ≤ 64 KiB pairs for `size` bytes, advancing
/// the source when `smove` and the destination when `dmove`.
#[must_use]
pub fn split_pairs(src: u64, dst: u64, size: u64, smove: bool, dmove: bool) -> Vec<Pair> {
    let mut out =
        Vec::with_capacity(usize::try_from(size.div_ceil(MAX_DMA_DESC_BYTES)).unwrap_or(0));
    let mut done = 0u64;
    while done < size {
        let len = (size - done).min(MAX_DMA_DESC_BYTES);
        out.push(Pair {
            src: if smove { src + done } else { src },
            dst: if dmove { dst + done } else { dst },
            len: len as u32,
        });
        done += len;
    }
    out
}

/// A copy started on a context slot and not yet waited for.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// Descriptors per ring (data pairs + 1).
    descs: u64,
}

/// One NeuronCore's H2T ring pair.
#[derive(Clone, Debug)]
pub struct H2tRing {
    /// The engine.
    pub engine: EngineLayout,
    /// The queue (`nc_id % 2`).
    pub queue: u8,
    /// TX ring (host, with the host bit).
    pub tx_ring: u64,
    /// RX ring.
    pub rx_ring: u64,
    /// 3 × 8-byte marker slots, one per context.
    pub markers: u64,
    /// Ring length in descriptors.
    pub len: u32,
    /// Descriptors produced since init (same on both rings).
    tail: u64,
    /// Descriptors acknowledged (completion seen).
    acked: u64,
    ctx: [Option<InFlight>; 3],
}

/// What a finished wait reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WaitReport {
    /// Cycle the wait began.
    pub start_cycle: u64,
    /// Cycle the driver saw the marker (quantised to its polls).
    pub seen_cycle: u64,
    /// Polls after the first sleep.
    pub polls: u64,
}

/// Register offsets the H2T path writes, from the CSR maps.
#[derive(Clone, Copy, Debug)]
pub struct H2tRegs {
    /// The common queue/unit offsets.
    pub q: QueueRegs,
    /// M2S queue RLIMIT_MASK.
    pub m2s_rlimit_mask: u64,
    /// M2S queue Q_SW_CTRL.
    pub m2s_sw_ctrl: u64,
    /// S2M queue Q_SW_CTRL.
    pub s2m_sw_ctrl: u64,
}

/// Value of Q_SW_CTRL that resets a queue (RST_Q, docs/references/design.md §8).
pub const Q_SW_CTRL_RST_Q: u32 = 0x100;
/// Q_CFG paused (EN_PREF/EN_SCHEDULING off) and enabled (docs/references/driver.md §2.9).
pub const Q_CFG_PAUSED: u32 = 0x0300_0000;
/// Q_CFG enabled.
pub const Q_CFG_ENABLED: u32 = 0x0303_0000;

/// Initialises one queue pair per `udma_q_init_internal` (docs/references/driver.md
/// §2.9): M2S rate-limiter mask, pause, RST_Q, ring base and length, no
/// completion ring, enable; then S2M likewise.
///
/// # Errors
///
/// A bus fault on a register write (`EIO`).
pub fn init_queue(
    dev: &mut Device,
    regs: &H2tRegs,
    e: &EngineLayout,
    queue: u8,
    tx_ring: u64,
    rx_ring: u64,
    len: u32,
) -> Result<(), Errno> {
    init_ring(dev, regs, e, queue, false, tx_ring, len)?;
    init_ring(dev, regs, e, queue, true, rx_ring, len)
}

/// One direction of [`init_queue`] (`udma_q_init_internal` for the M2S
/// queue when `s2m` is false, else the S2M queue).
///
/// # Errors
///
/// A bus fault on a register write (`EIO`).
pub fn init_ring(
    dev: &mut Device,
    regs: &H2tRegs,
    e: &EngineLayout,
    queue: u8,
    s2m: bool,
    ring: u64,
    len: u32,
) -> Result<(), Errno> {
    let q = &regs.q;
    let mut writes = Vec::with_capacity(8);
    let b = if s2m {
        e.s2m_q(queue)
    } else {
        writes.push((e.m2s_q(queue) + regs.m2s_rlimit_mask, 0x3));
        e.m2s_q(queue)
    };
    let (sw_ctrl, comp_cfg) = if s2m {
        (regs.s2m_sw_ctrl, q.s2m_comp_cfg)
    } else {
        (regs.m2s_sw_ctrl, q.m2s_comp_cfg)
    };
    writes.extend([
        (b + q.q_cfg, Q_CFG_PAUSED),
        (b + sw_ctrl, Q_SW_CTRL_RST_Q),
        (b + q.drbp_low, ring as u32),
        (b + q.drbp_high, (ring >> 32) as u32),
        (b + q.drl, len),
        (b + comp_cfg, 0),
        (b + q.q_cfg, Q_CFG_ENABLED),
    ]);
    for (a, v) in writes {
        dev.write32(a, v).map_err(|_| Errno::EIO)?;
    }
    Ok(())
}

/// Engine init for the H2T engines (`sdma_init_engine`, docs/references/driver.md §2.7):
/// CFG_LEN at the driver's value, both directions NORMAL.
///
/// # Errors
///
/// A bus fault (`EIO`).
pub fn init_engine(dev: &mut Device, regs: &H2tRegs, e: &EngineLayout) -> Result<(), Errno> {
    let q = &regs.q;
    for (a, v) in [
        (e.m2s_unit + q.m2s_cfg_len, 0x010f_ffff),
        (e.m2s_unit + q.m2s_change_state, 1),
        (e.s2m_unit + q.s2m_change_state, 1),
    ] {
        dev.write32(a, v).map_err(|_| Errno::EIO)?;
    }
    Ok(())
}

impl H2tRing {
    /// Allocates the rings (host, device lifespan) and the marker slots and
    /// initialises the queue (`ndmar_h2t_ring_alloc` / `_init`, §4.2).
    ///
    /// # Errors
    ///
    /// `ENOMEM` without host memory, `EIO` on a register fault.
    pub fn create(
        dev: &mut Device,
        mem: &mut MemManager,
        regs: &H2tRegs,
        engine: EngineLayout,
        nc_id: u32,
    ) -> Result<Self, Errno> {
        let len = ring_desc_count(DMA_H2T_DESC_COUNT);
        let host = |size: u64| AllocRequest {
            size,
            align: 0,
            host: true,
            channel: 0,
            nc_id,
            category: ioctl_abi::enums::MemAllocCategory::DmaRingsHost.raw(),
        };
        let ring_bytes = u64::from(len) * 16;
        let tx_ring = mem.alloc_chunk(host(ring_bytes), Lifespan::Device)?;
        let rx_ring = mem.alloc_chunk(host(ring_bytes), Lifespan::Device)?;
        let markers = mem.alloc_chunk(host(3 * 8), Lifespan::Device)?;
        let queue = (nc_id % 2) as u8;
        init_queue(dev, regs, &engine, queue, tx_ring, rx_ring, len)?;
        Ok(Self {
            engine,
            queue,
            tx_ring,
            rx_ring,
            markers,
            len,
            tail: 0,
            acked: 0,
            ctx: [None; 3],
        })
    }

    /// Descriptors in flight (produced, not acknowledged).
    #[must_use]
    pub fn in_flight(&self) -> u64 {
        self.tail - self.acked
    }

    /// Whether a context has an un-waited copy.
    #[must_use]
    pub fn busy(&self, c: Ctx) -> bool {
        self.ctx[c.index()].is_some()
    }

    /// Descriptors of the copy in flight on `c` (0 if none).
    #[must_use]
    pub fn pending_descs(&self, c: Ctx) -> u64 {
        self.ctx[c.index()].map_or(0, |f| f.descs)
    }

    fn marker(&self, c: Ctx) -> u64 {
        self.markers + 8 * c as u64
    }

    /// Builds one batch (data pairs + the completion pair) on context `c`
    /// and rings the doorbells RX first (§4.3, §4.4). `last_barrier`: the
    /// barrier of the last data pair (WRITE_BARRIER for the memcpy path).
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than [`SYNC_THRESHOLD_PAIRS`] pairs or a busy
    /// context; `EBUSY` when the ring has no room (earlier timeouts);
    /// `EIO` on a bus fault.
    pub fn start_batch(
        &mut self,
        dev: &mut Device,
        regs: &H2tRegs,
        c: Ctx,
        pairs: &[Pair],
        last_barrier: Barrier,
        ring_doorbell: bool,
    ) -> Result<u64, Errno> {
        if pairs.len() > SYNC_THRESHOLD_PAIRS || self.busy(c) {
            return Err(Errno::EINVAL);
        }
        let descs = pairs.len() as u64 + 1;
        if self.in_flight() + descs + RING_RESERVED_DESCS > u64::from(self.len) {
            return Err(Errno::EBUSY);
        }
        // The CPU arms the marker: value at +0, cleared destination at +4.
        let m = self.marker(c);
        let mut slot = [0u8; 8];
        slot[..4].copy_from_slice(&COMPLETION_MARKER.to_le_bytes());
        dev.write_bytes(m, &slot).map_err(|_| Errno::EIO)?;
        let completion = Pair {
            src: m,
            dst: m + 4,
            len: 4,
        };
        let n = pairs.len();
        for (i, p) in pairs.iter().chain(std::iter::once(&completion)).enumerate() {
            let barrier = if i + 1 == n {
                last_barrier
            } else {
                Barrier::None
            };
            self.push(dev, *p, barrier)?;
        }
        self.ctx[c.index()] = Some(InFlight { descs });
        if !ring_doorbell {
            return Ok(descs); // a lost doorbell (fault injection)
        }
        // Doorbell: RX first, then TX (§4.4).
        let q = &regs.q;
        let count = descs as u32;
        dev.write32(self.engine.s2m_q(self.queue) + q.drtp_inc, count)
            .map_err(|_| Errno::EIO)?;
        dev.write32(self.engine.m2s_q(self.queue) + q.drtp_inc, count)
            .map_err(|_| Errno::EIO)?;
        Ok(descs)
    }

    /// Writes one TX/RX descriptor pair at the tail.
    fn push(&mut self, dev: &mut Device, p: Pair, barrier: Barrier) -> Result<(), Errno> {
        let len = u64::from(self.len);
        let slot = self.tail % len;
        // Ring id: 1 on the first pass after reset, +1 mod 4 per wrap
        // (docs/references/driver.md §3.6).
        let ring_id = (((self.tail / len) + 1) & 3) as u8;
        let mut flags = Flags::single(ring_id);
        flags.dmb = barrier == Barrier::Dmb;
        let word1 = if barrier == Barrier::WriteBarrier {
            DEFAULT_COPY_WORD1_WRITE_BARRIER
        } else {
            DEFAULT_COPY_WORD1
        };
        let t = tx(p.len, p.src, flags)
            .map_err(|_| Errno::EINVAL)?
            .with_word1(CmeWord::from_raw(word1));
        let r = rx(p.len, p.dst)
            .map_err(|_| Errno::EINVAL)?
            .with_flags(Flags {
                ring_id,
                sow: barrier == Barrier::Sow,
                ..Flags::default()
            });
        dev.write_bytes(self.tx_ring + slot * 16, &t.to_bytes())
            .map_err(|_| Errno::EIO)?;
        dev.write_bytes(self.rx_ring + slot * 16, &r.to_bytes())
            .map_err(|_| Errno::EIO)?;
        self.tail += 1;
        Ok(())
    }

    /// `ndma_memcpy_wait_for_completion` (§4.5): sleep, then poll the
    /// marker every 1 µs of simulated time within the driver's budget. On
    /// success the marker is reset and the descriptors acknowledged; on
    /// timeout they are not (the ring's free space shrinks).
    ///
    /// # Errors
    ///
    /// `ETIMEDOUT` ([N] driver; 2.24 returns −1) when the marker never
    /// arrives; `EINVAL` when the context has nothing in flight.
    pub fn wait(
        &mut self,
        dev: &mut Device,
        c: Ctx,
        is_async: bool,
        cycles_per_us: f64,
        timeout_multiplier: u64,
    ) -> Result<WaitReport, Errno> {
        let Some(f) = self.ctx[c.index()] else {
            return Err(Errno::EINVAL);
        };
        let (first_us, polls) = wait_budget_us(f.descs, is_async);
        let polls = polls.saturating_mul(timeout_multiplier.max(1));
        let us = |n: u64| Cycle((n as f64 * cycles_per_us).round() as u64);
        let poll_c = us(1).0.max(1);
        let t0 = dev.now();
        let first_end = Cycle(t0.0 + us(first_us).0);
        let deadline = Cycle(first_end.0.saturating_add(polls.saturating_mul(poll_c)));
        let dst = self.marker(c) + 4;
        let seen = |d: &Device| {
            let mut b = [0u8; 4];
            d.read_bytes(dst, &mut b).is_ok() && u32::from_le_bytes(b) == COMPLETION_MARKER
        };
        let done_at = if seen(dev) {
            Some(dev.now())
        } else {
            let (_, hit) = dev.run_while(Some(deadline), OnStall::SkipToLimit, |d| seen(d));
            hit.then(|| dev.now())
        };
        let Some(done) = done_at else {
            dev.advance_to(deadline);
            // The slot is given up; its descriptors stay unacknowledged.
            self.ctx[c.index()] = None;
            return Err(Errno::ETIMEDOUT);
        };
        // The CPU sees it at its next poll.
        let (seen_at, n) = if done <= first_end {
            (first_end, 0)
        } else {
            let k = (done.0 - first_end.0).div_ceil(poll_c);
            (Cycle(first_end.0 + k * poll_c), k)
        };
        dev.advance_to(seen_at);
        // Reset the marker, acknowledge both rings.
        dev.write_bytes(self.marker(c), &[0u8; 8])
            .map_err(|_| Errno::EIO)?;
        self.acked += f.descs;
        self.ctx[c.index()] = None;
        Ok(WaitReport {
            start_cycle: t0.0,
            seen_cycle: seen_at.0,
            polls: n,
        })
    }
}

/// The barrier on the last data descriptor of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// None.
    None,
    /// WRITE_BARRIER in word 1 (`ndma_get_m2m_barrier_type(true)`, §4.3).
    WriteBarrier,
    /// DMB, len_ctrl bit 30 (zero-copy steps, §4.7).
    Dmb,
    /// SOW on the RX descriptor (V3+ zero-copy completion, §4.7).
    Sow,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_8192_descriptors() {
        assert_eq!(ring_desc_count(DMA_H2T_DESC_COUNT), 8192);
        assert_eq!(ring_desc_count(31), 64);
        assert_eq!(ring_desc_count(32), 64);
        assert_eq!(ring_desc_count(100), 128);
        assert_eq!(SYNC_THRESHOLD_PAIRS, 2031);
    }

    #[test]
    fn timeout_arithmetic_matches_the_driver() {
        // One data descriptor: first 1 µs, at most 19,900 polls (§4.5).
        assert_eq!(wait_budget_us(2, false), (1, 19_900));
        assert_eq!(wait_budget_us(2, true), (1, 19_900));
        // A full batch of 2032: first 4,061 µs, at most 40,213,900 polls.
        assert_eq!(wait_budget_us(2032, false), (4061, 40_213_900));
        assert_eq!(wait_budget_us(2032, true), (1, 40_619_900));
    }

    #[test]
    fn async_handles_alternate() {
        assert_eq!(Ctx::next(None), Ctx::Async1);
        assert_eq!(Ctx::next(Some(Ctx::Async1)), Ctx::Async2);
        assert_eq!(Ctx::next(Some(Ctx::Async2)), Ctx::Async1);
        assert_eq!(Ctx::next(Some(Ctx::Sync)), Ctx::Sync);
    }

    #[test]
    fn split_into_64k_pairs() {
        let p = split_pairs(0x1000, 0x9000_0000, 150_000, true, true);
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].src, 0x1000 + 65_536);
        assert_eq!(p[2].len, 150_000 - 2 * 65_536);
        // MEMSET replication: fixed source, moving destination.
        let m = split_pairs(0x1000, 0x2000, 200_000, false, true);
        assert!(m.iter().all(|x| x.src == 0x1000));
        assert_eq!(m[3].dst, 0x2000 + 3 * 65_536);
    }
}
