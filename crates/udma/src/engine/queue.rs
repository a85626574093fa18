//! Queue pointers: doorbells, Q_SW_CTRL resets and the pointer and status
//! registers the model mirrors (P9.1 §4.1, docs/references/driver.md §2.4–2.5, §3.6).

use sim_core::{Bus, Cycle, TimingConfig};

use super::faults::sec_d;
use super::{DirState, Engine, Ev, INITIAL_RING_ID, MAX_RING_DESCS, MIN_RING_DESCS, dir_idx};
use crate::block::{Dir, QUEUES};
use crate::event::EventKind;
use crate::regs::Group;

/// Q_SW_CTRL command bits (P9.1 §4.1; the M2S and S2M maps name them).
mod sw_ctrl {
    /// M2S only (S2M bit 0 is reserved).
    pub const RST_DMB: u32 = 1 << 0;
    pub const RST_TAIL_PTR: u32 = 1 << 1;
    pub const RST_HEAD_PTR: u32 = 1 << 2;
    pub const RST_CURRENT_PTR: u32 = 1 << 3;
    /// M2S RST_DATA_TAIL_PTR, S2M RST_PREFETCH.
    pub const RST_PREFETCH: u32 = 1 << 4;
    pub const RST_Q: u32 = 1 << 8;
}

/// Q_STATUS.Q_DMB: the queue is suspended on a DMB barrier.
const Q_DMB: u32 = 1 << 30;

impl Engine {
    /// Q_SW_CTRL (P9.1 §4.1; docs/descriptors.md "Queue control").
    /// RST_Q is confirmed by the driver; what the other bits clear is
    /// inferred from their names (docs/references/design.md §8):
    ///
    /// * RST_Q (bit 8): the whole queue direction — pointers to 0 with ring
    ///   id 1, counters, prefetch buffer; packets in flight are dropped;
    /// * RST_DMB (bit 0, M2S): releases a packet held by its DMB;
    /// * bit 4 (M2S RST_DATA_TAIL_PTR, S2M RST_PREFETCH): rewinds the
    ///   prefetch to the first descriptor not yet started;
    /// * RST_TAIL_PTR (bit 1): the tail to 0 / ring id 1, withdrawing the
    ///   posted descriptors not yet prefetched;
    /// * RST_HEAD_PTR (bit 2): the head to 0 / ring id 1, the prefetch
    ///   buffer dropped, prefetch restarting at index 0 up to the tail;
    /// * RST_CURRENT_PTR (bit 3): TDCP / RDCP to 0.
    ///
    /// Bits written together apply in that order; packets already in the
    /// data path complete unless RST_Q is among them.
    pub(super) fn queue_sw_ctrl(&mut self, dir: Dir, q: u8, bits: u32) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        let mut wake = false;
        if bits & sw_ctrl::RST_Q != 0 {
            self.q[qi][d].reset();
            if dir == Dir::M2s {
                self.q[qi].last_end = self.now;
                self.q[qi].dmb_release = false;
            }
        } else {
            if dir == Dir::M2s && bits & sw_ctrl::RST_DMB != 0 {
                self.release_dmb(q);
            }
            if bits & sw_ctrl::RST_PREFETCH != 0 {
                wake |= self.rewind_prefetch(dir, q);
            }
            if bits & sw_ctrl::RST_TAIL_PTR != 0 {
                let qd = &mut self.q[qi][d];
                qd.tail = 0;
                qd.tail_id = INITIAL_RING_ID;
                // head == tail now (for a ring reset together with the head):
                // what was posted but not fetched is no longer posted. A
                // burst in flight is dropped with it.
                qd.cancel_fetch();
                qd.posted = qd.fetched_total;
            }
            if bits & sw_ctrl::RST_HEAD_PTR != 0 {
                let len = u64::from(self.q[qi].cfg.ring_len[d]);
                let qd = &mut self.q[qi][d];
                let in_flight = qd.in_flight();
                qd.head = 0;
                qd.head_id = INITIAL_RING_ID;
                qd.fetched.clear();
                qd.cancel_fetch();
                qd.in_packet = false;
                qd.pkt_descs = 0;
                qd.pkt_bytes = 0;
                // Prefetch restarts at index 0 and runs up to the tail.
                let pending = u64::from(qd.tail).min(len);
                qd.fetched_total = qd.done + in_flight;
                qd.posted = qd.fetched_total + pending;
                wake = true;
            }
        }
        self.sync_queue_regs(dir, q);
        if bits & (sw_ctrl::RST_CURRENT_PTR | sw_ctrl::RST_Q) != 0 {
            let off = self.qoff(dir).dcp;
            let _ = self.qfile(dir, q).hw_set(off, 0);
        }
        if wake {
            self.wake_prefetch(dir, q, self.now);
        }
        self.log(EventKind::QueueReset {
            dir,
            queue: q,
            bits,
        });
    }

    /// RST_DMB: a packet waiting on its DMB (Q_STATUS.Q_DMB) may start at
    /// once; with none waiting the bit does nothing.
    fn release_dmb(&mut self, q: u8) {
        let qi = usize::from(q) % QUEUES;
        let status = self.maps.offsets.m2s_q.status;
        let held = self.regs.q[qi][0].value(status).unwrap_or(0) & Q_DMB != 0;
        if held {
            self.q[qi].dmb_release = true;
            let _ = self.regs.q[qi][0].hw_update(status, |s| s & !Q_DMB);
            self.schedule_kick(self.now);
        }
    }

    /// Bit 4: the prefetched descriptors not yet taken by a packet are
    /// dropped and the head steps back over them (ring id included), so
    /// they are fetched again from memory; a burst in flight is dropped
    /// too. Returns true when prefetch has something to do again.
    fn rewind_prefetch(&mut self, dir: Dir, q: u8) -> bool {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        let len = u64::from(self.q[qi].cfg.ring_len[d]);
        let qd = &mut self.q[qi][d];
        let was_busy = qd.fetch_busy;
        qd.cancel_fetch();
        let back = qd.fetched.len() as u64;
        if len != 0 && back != 0 {
            // Positions over the four ring passes the 2-bit ring id counts.
            let span = 4 * len;
            let pos = u64::from(qd.head_id & 3) * len + u64::from(qd.head);
            let pos = (pos + span - back % span) % span;
            qd.head = (pos % len) as u32;
            qd.head_id = (pos / len) as u8;
            qd.fetched_total -= back;
            qd.fetched.clear();
        }
        // The buffer starts at a packet boundary (packets leave it whole).
        qd.in_packet = false;
        qd.pkt_descs = 0;
        qd.pkt_bytes = 0;
        back != 0 || was_busy
    }

    /// Retries queue `q`'s prefetch at cycle `at` (after an enable rose or
    /// a pointer reset).
    pub(super) fn wake_prefetch(&mut self, dir: Dir, q: u8, at: Cycle) {
        self.events.push(
            at,
            Ev::FetchDone {
                dir,
                q,
                epoch: u32::MAX,
                n: 0,
            },
        );
    }

    /// The model-owned Q_STATUS bits: q_used (24:0), prefetch busy (28),
    /// full (31); bits 29/30 (scheduler, DMB) are kept by their writers.
    pub(super) fn status_bits(&self, dir: Dir, q: u8) -> u32 {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        let qd = &self.q[qi][d];
        let outstanding = qd.outstanding();
        let mut status = outstanding.min(0x1FF_FFFF) as u32;
        if qd.fetch_busy {
            status |= 1 << 28;
        }
        let len = self.q[qi].cfg.ring_len[d];
        if len != 0 && u64::from(len) <= outstanding {
            status |= 1 << 31;
        }
        status
    }

    /// Mirrors the queue's occupancy into Q_STATUS (q_used, prefetch, full).
    pub(super) fn sync_status(&mut self, dir: Dir, q: u8) {
        let status = self.status_bits(dir, q);
        let slot = self.maps.slots.hot[dir_idx(dir)].status;
        self.qfile(dir, q)
            .hw_update_slot(slot, |s| (s & (1 << 29 | 1 << 30)) | status);
    }

    /// Mirrors the model's pointers into the queue's registers: descriptor
    /// head and tail, completion head, Q_STATUS.
    #[inline(never)]
    pub(super) fn sync_queue_regs(&mut self, dir: Dir, q: u8) {
        let qd = &self.q[usize::from(q) % QUEUES][dir_idx(dir)];
        let (head, tail) = (ring_ptr(qd.head, qd.head_id), ring_ptr(qd.tail, qd.tail_id));
        let hot = &self.maps.slots.hot[dir_idx(dir)];
        let f = self.qfile(dir, q);
        f.hw_update_slot(hot.head, |_| head);
        f.hw_update_slot(hot.tail, |_| tail);
        self.sync_completion_regs(dir, q, false);
    }

    /// Mirrors the completion head and Q_STATUS into the queue's registers,
    /// after adding one to its packet counter when `count_packet` (a
    /// completion moves these and no other pointer; the descriptor head
    /// and tail are synced where they move).
    #[inline(always)]
    pub(super) fn sync_completion_regs(&mut self, dir: Dir, q: u8, count_packet: bool) {
        let qd = &self.q[usize::from(q) % QUEUES][dir_idx(dir)];
        let comp = ring_ptr(qd.comp_head, qd.comp_id);
        let status = self.status_bits(dir, q);
        let hot = &self.maps.slots.hot[dir_idx(dir)];
        let f = self.qfile(dir, q);
        if count_packet {
            f.hw_update_slot(hot.pkt_count, |v| v.wrapping_add(1));
        }
        let mut moved = false;
        f.hw_update_slot(hot.comp_head, |old| {
            moved = old != comp;
            comp
        });
        f.hw_update_slot(hot.status, |s| (s & (1 << 29 | 1 << 30)) | status);
        self.crhp_moves += u64::from(moved);
    }

    pub(super) fn doorbell(
        &mut self,
        dir: Dir,
        q: u8,
        n: u32,
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        let len = self.q[usize::from(q) % QUEUES].cfg.ring_len[dir_idx(dir)];
        let qi = usize::from(q) % QUEUES;
        let outstanding = self.q[qi][dir_idx(dir)].outstanding();
        if self.doorbell_drops(dir, q, n) {
            let (bit, name) = match dir {
                Dir::M2s => (sec_d::M2S_DOORBELL_OVERRUN, "M2S_DOORBELL_OVERRUN"),
                Dir::S2m => (sec_d::S2M_DOORBELL_OVERRUN, "S2M_DOORBELL_OVERRUN"),
            };
            self.raise(
                Group::D,
                bit,
                dir,
                Some(q),
                name,
                format!(
                    "{}.q{q}: increment {n} with {outstanding} outstanding overruns a ring of {len} descriptors; dropped",
                    dir.name()
                ),
            );
            return;
        }
        let base = self.ring_base(dir, q);
        if !(MIN_RING_DESCS..=MAX_RING_DESCS).contains(&len)
            || ring_entry_addr(base, len).is_none_or(|end| !end.is_multiple_of(256))
            || !base.is_multiple_of(256)
        {
            self.log(EventKind::RingWarning {
                dir,
                queue: q,
                detail: format!(
                    "ring base {base:#x} / length {len} break the driver's limits (32..2^24-16 descriptors, base and end 256-byte aligned)"
                ),
            });
        }
        let qd = &mut self.q[qi][dir_idx(dir)];
        qd.posted += u64::from(n);
        let new_tail = u64::from(qd.tail) + u64::from(n);
        let wraps = new_tail / u64::from(len);
        qd.tail = (new_tail % u64::from(len)) as u32;
        qd.tail_id = ((u64::from(qd.tail_id) + wraps) & 3) as u8;
        let (tail, tail_id) = (qd.tail, qd.tail_id);
        self.sync_queue_regs(dir, q);
        self.log_with(|| EventKind::Doorbell {
            dir,
            queue: q,
            increment: n,
            tail,
            tail_ring_id: tail_id,
        });
        self.try_fetch(dir, q, timing);
        let _ = bus;
    }

    /// Whether a doorbell of `n` descriptors taking effect now on queue
    /// `q` is dropped as an overrun: the ring has no length, or its
    /// outstanding descriptors and `n` exceed it (docs/descriptors.md
    /// "Queue control"). The engine's own rule, also what a debugger's
    /// doorbell stop predicts (docs/user-guide.md §12 "What a stop shows").
    pub fn doorbell_drops(&self, dir: Dir, q: u8, n: u32) -> bool {
        let qi = usize::from(q) % QUEUES;
        let len = self.q[qi].cfg.ring_len[dir_idx(dir)];
        len == 0 || self.q[qi][dir_idx(dir)].outstanding() + u64::from(n) > u64::from(len)
    }

    /// Why queue `q` does not prefetch its posted descriptors now, if it
    /// does not: its direction is not NORMAL, its `Q_CFG.EN_PREF` is clear,
    /// (M2S) its `PREF_QUEUE_EN` bit is clear, or it went NON_ACTIVE
    /// (docs/descriptors.md "Enables"). The rule the prefetch itself
    /// applies; `None`: it prefetches (a burst in flight only delays it).
    #[inline(always)]
    pub fn prefetch_off(&self, dir: Dir, q: u8) -> Option<PrefetchOff> {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if self.state[d] != DirState::Normal {
            return Some(PrefetchOff::State(self.state[d]));
        }
        if !self.enabled(dir, q).0 {
            return Some(PrefetchOff::EnPref);
        }
        if dir == Dir::M2s && self.cfg.pref_queue_en & (1 << qi) == 0 {
            return Some(PrefetchOff::PrefQueueEn);
        }
        if self.q[qi][d].non_active {
            return Some(PrefetchOff::NonActive);
        }
        None
    }

    pub(super) fn ring_base(&self, dir: Dir, q: u8) -> u64 {
        self.q[usize::from(q) % QUEUES].cfg.ring_base[dir_idx(dir)]
    }

    pub(super) fn enabled(&self, dir: Dir, q: u8) -> (bool, bool) {
        self.q[usize::from(q) % QUEUES].cfg.en[dir_idx(dir)]
    }
}

/// Why a queue does not prefetch ([`Engine::prefetch_off`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefetchOff {
    /// Its direction is not NORMAL (disabled, or aborted).
    State(DirState),
    /// Its `Q_CFG.EN_PREF` is clear.
    EnPref,
    /// (M2S) its bit of the engine's `PREF_QUEUE_EN` is clear.
    PrefQueueEn,
    /// It went NON_ACTIVE after an AXI error.
    NonActive,
}

impl std::fmt::Display for PrefetchOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrefetchOff::State(s) => {
                write!(f, "its direction is in state {}, not NORMAL", s.name())
            }
            PrefetchOff::EnPref => f.write_str("its Q_CFG.EN_PREF is clear"),
            PrefetchOff::PrefQueueEn => {
                f.write_str("its bit of the engine's PREF_QUEUE_EN is clear")
            }
            PrefetchOff::NonActive => f.write_str("it is NON_ACTIVE"),
        }
    }
}

/// A ring pointer register's value: the index in bits 23:0, the ring id
/// in bits 31:30 (docs/descriptors.md "Queue control").
fn ring_ptr(index: u32, ring_id: u8) -> u32 {
    (index & 0xFF_FFFF) | (u32::from(ring_id & 3) << 30)
}

/// The address of entry `idx` of a ring (16 bytes each) at `base`, or of
/// its end for `idx` = its length; `None` past the top of the 64-bit
/// address space (software may write any base: the access faults, no sum
/// wraps).
pub(super) fn ring_entry_addr(base: u64, idx: u32) -> Option<u64> {
    base.checked_add(16 * u64::from(idx))
}

/// The bus error of a ring access at entry `idx` past the top of the
/// address space.
pub(super) fn ring_overflow(base: u64, idx: u32) -> sim_core::AccessError {
    sim_core::AccessError {
        addr: base,
        message: format!(
            "ring entry {idx} of the ring at {base:#x} lies past the top of the 64-bit address space"
        ),
    }
}
