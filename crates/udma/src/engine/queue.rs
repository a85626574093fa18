//! Queue pointers: doorbells, Q_SW_CTRL resets and the pointer and status
//! registers the model mirrors (seed 004 §4.1, driver-facts §2.4–2.5, §3.6).

use sim_core::{Bus, TimingConfig};

use super::faults::sec_d;
use super::{Engine, INITIAL_RING_ID, MAX_RING_DESCS, MIN_RING_DESCS, dir_idx};
use crate::block::{Dir, QUEUES};
use crate::event::EventKind;
use crate::regs::Group;

impl Engine {
    /// Q_SW_CTRL (seed 004 §4.1; RST_Q confirmed, other bits inferred,
    /// DESIGN §8).
    pub(super) fn queue_sw_ctrl(&mut self, dir: Dir, q: u8, bits: u32) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if bits & 0x100 != 0 {
            self.q[qi][d].reset();
            if dir == Dir::M2s {
                self.q[qi].last_end = self.now;
            }
        } else {
            let qd = &mut self.q[qi][d];
            if bits & 0x2 != 0 {
                qd.tail = 0;
                qd.tail_id = INITIAL_RING_ID;
            }
            if bits & 0x4 != 0 {
                qd.head = 0;
                qd.head_id = INITIAL_RING_ID;
                qd.fetched.clear();
                qd.epoch = qd.epoch.wrapping_add(1);
                qd.fetch_busy = false;
            }
        }
        self.sync_queue_regs(dir, q);
        if bits & 0x8 != 0 || bits & 0x100 != 0 {
            let off = self.qoff(dir).dcp;
            let _ = self.qfile(dir, q).hw_set(off, 0);
        }
        self.log(EventKind::QueueReset {
            dir,
            queue: q,
            bits,
        });
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
        let slot = self.hot[dir_idx(dir)].status;
        self.qfile(dir, q)
            .hw_update_slot(slot, |s| (s & (1 << 29 | 1 << 30)) | status);
    }

    /// Mirrors the model's pointers into the queue's registers.
    pub(super) fn sync_queue_regs(&mut self, dir: Dir, q: u8) {
        let qo = self.qoff(dir);
        let qd = &self.q[usize::from(q) % QUEUES][dir_idx(dir)];
        let ptr = |off: u32, id: u8| (off & 0xFF_FFFF) | (u32::from(id & 3) << 30);
        let head = ptr(qd.head, qd.head_id);
        let tail = ptr(qd.tail, qd.tail_id);
        let comp = ptr(qd.comp_head, qd.comp_id);
        let used = (qd.outstanding().min(0x1FF_FFFF)) as u32;
        let mut status = used;
        if qd.fetch_busy {
            status |= 1 << 28;
        }
        let full = {
            let len = self.q[usize::from(q) % QUEUES].cfg.ring_len[dir_idx(dir)];
            len != 0 && u64::from(len) <= qd.outstanding()
        };
        if full {
            status |= 1 << 31;
        }
        let _ = qo;
        let hot = self.hot[dir_idx(dir)];
        let f = self.qfile(dir, q);
        f.hw_update_slot(hot.head, |_| head);
        f.hw_update_slot(hot.tail, |_| tail);
        f.hw_update_slot(hot.comp_head, |_| comp);
        f.hw_update_slot(hot.status, |s| (s & (1 << 29 | 1 << 30)) | status);
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
        if len == 0 || outstanding + u64::from(n) > u64::from(len) {
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
            || !(base + 16 * u64::from(len)).is_multiple_of(256)
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

    pub(super) fn ring_base(&self, dir: Dir, q: u8) -> u64 {
        self.q[usize::from(q) % QUEUES].cfg.ring_base[dir_idx(dir)]
    }

    pub(super) fn enabled(&self, dir: Dir, q: u8) -> (bool, bool) {
        self.q[usize::from(q) % QUEUES].cfg.en[dir_idx(dir)]
    }
}
