//! Descriptor prefetch: bursts from the ring into the queue's prefetch
//! buffer, the ring-id check and the M2S packet-shape checks (docs/references/wiki.md
//! §B.5, §B.7; docs/references/driver.md §2.6, §3.6–3.7).

use sim_core::{Bus, TimingConfig};

use super::queue::{ring_entry_addr, ring_overflow};
use super::{DirState, Engine, Ev, FETCH_BURST, Fetched, PREFETCH_DEPTH, dir_idx, sec_a, sec_b};
use crate::block::{Dir, QUEUES};
use crate::desc::RawDesc;
use crate::event::EventKind;
use crate::regs::Group;

impl Engine {
    #[inline(always)]
    pub(super) fn try_fetch(&mut self, dir: Dir, q: u8, timing: &TimingConfig) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        // The enables, M2S PREF_QUEUE_EN included (docs/references/wiki.md §B.2).
        if self.prefetch_off(dir, q).is_some() {
            return;
        }
        let qd = &self.q[qi][d];
        if qd.fetch_busy {
            return;
        }
        let pending = qd.posted - qd.fetched_total;
        let fill = qd.fetched.len();
        let room = PREFETCH_DEPTH.saturating_sub(fill) as u64;
        let n = pending.min(u64::from(FETCH_BURST)).min(room) as u32;
        if n == 0 {
            return;
        }
        // Refill policy: above the threshold, wait until a minimum burst fits.
        let (below, above, thr) = self.cfg.pref[d];
        let min_burst = if thr != 0 && fill >= usize::from(thr) {
            above
        } else {
            below
        };
        if (room as usize) < usize::from(min_burst) {
            return;
        }
        let epoch = qd.fetch_epoch;
        self.q[qi][d].fetch_busy = true;
        let at = self.now.after(
            timing.desc_fetch_latency_cycles + timing.desc_fetch_per_desc_cycles * u64::from(n),
        );
        // n <= FETCH_BURST, which fits a u8 (asserted at the Ev type).
        let n = n as u8;
        self.events.push(at, Ev::FetchDone { dir, q, epoch, n });
        self.sync_status(dir, q);
    }

    /// A prefetch burst lands, per direction ([`Engine::fetch_done`] with
    /// the direction a constant in each copy).
    #[inline(never)]
    pub(super) fn fetch_done_m2s(
        &mut self,
        q: u8,
        epoch: u32,
        n: u32,
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        self.fetch_done(Dir::M2s, q, epoch, n, bus, timing);
    }

    /// [`Engine::fetch_done_m2s`] for S2M.
    #[inline(never)]
    pub(super) fn fetch_done_s2m(
        &mut self,
        q: u8,
        epoch: u32,
        n: u32,
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        self.fetch_done(Dir::S2m, q, epoch, n, bus, timing);
    }

    #[inline(always)]
    fn fetch_done(
        &mut self,
        dir: Dir,
        q: u8,
        epoch: u32,
        n: u32,
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if epoch == u32::MAX {
            // A wake-up after an enable or NORMAL: retry prefetch.
            self.try_fetch(dir, q, timing);
            self.schedule_kick(self.now);
            return;
        }
        if self.q[qi][d].fetch_epoch != epoch || self.state[d] != DirState::Normal {
            return;
        }
        self.q[qi][d].fetch_busy = false;
        let len = self.q[qi].cfg.ring_len[d];
        let base = self.ring_base(dir, q);
        let first_index = self.q[qi][d].head;
        let mut fetched = 0;
        // The prefetch buffer takes two bursts at its first one (not a
        // doubling from 4 at each of its first bursts); a queue that
        // prefetches deeper doubles it up to its depth once. Not the full
        // depth up front: a queue that is rung a burst at a time (the DGE's
        // rings, docs/firmware.md) never holds more, and 128 such buffers of
        // `PREFETCH_DEPTH` entries were 0.8 MB of a short run's heap
        // (docs/user-guide.md §14, "The allocator's page geometry").
        let buffer = &mut self.q[qi][d].fetched;
        if buffer.capacity() == 0 {
            buffer.reserve_exact(2 * FETCH_BURST as usize);
        }
        // One bus read per contiguous run of the burst (it may wrap once).
        let mut burst = [0u8; 16 * FETCH_BURST as usize];
        let head0 = self.q[qi][d].head;
        let n_fit = if len == 0 {
            0
        } else {
            n.min(FETCH_BURST).min(len - head0.min(len))
        };
        let mut read_err = None;
        if n_fit > 0 {
            let bytes = 16 * n_fit as usize;
            let read = match ring_entry_addr(base, head0) {
                Some(at) => bus.read(at, &mut burst[..bytes]).inspect(|()| {
                    bus.note_control_read(at, bytes as u64);
                }),
                None => Err(ring_overflow(base, head0)),
            };
            if let Err(e) = read {
                read_err = Some(e);
            }
        }
        if read_err.is_none() && n_fit < n.min(FETCH_BURST) && len != 0 {
            let rest = (n.min(FETCH_BURST) - n_fit) as usize;
            let from = 16 * n_fit as usize;
            match bus.read(base, &mut burst[from..from + 16 * rest]) {
                Ok(()) => bus.note_control_read(base, 16 * rest as u64),
                Err(e) => read_err = Some(e),
            }
        }
        for k in 0..n.min(FETCH_BURST) {
            if len == 0 {
                break;
            }
            let idx = self.q[qi][d].head;
            let mut raw = [0u8; 16];
            raw.copy_from_slice(&burst[16 * k as usize..16 * (k as usize + 1)]);
            if let Some(e) = read_err.take() {
                let (g, bit) = match dir {
                    Dir::M2s => (Group::A, sec_a::PREF_AXI_RESPONSE),
                    Dir::S2m => (Group::B, sec_b::PREF_AXI_RESPONSE),
                };
                self.axi_error(
                    dir,
                    q,
                    g,
                    bit,
                    "PREF_AXI_RESPONSE",
                    format!("descriptor fetch at {e}"),
                );
                break;
            }
            let desc = RawDesc::from_bytes(raw);
            let expected = self.q[qi][d].head_id;
            if desc.ring_id() != expected {
                let (g, bit) = match dir {
                    Dir::M2s => (Group::A, sec_a::PREF_RING_ID),
                    Dir::S2m => (Group::B, sec_b::PREF_RING_ID),
                };
                let aborted = self.raise(
                    g,
                    bit,
                    dir,
                    Some(q),
                    "PREF_RING_ID",
                    format!(
                        "{}.q{q}[{idx}]: descriptor ring id {} but the queue expects {expected}",
                        dir.name(),
                        desc.ring_id()
                    ),
                );
                if aborted {
                    self.sync_queue_regs(dir, q);
                    return;
                }
            }
            if dir == Dir::M2s && !self.check_packet_shape(q, idx, &desc) {
                self.sync_queue_regs(dir, q);
                return;
            }
            if dir == Dir::M2s {
                self.m2s_maybe_ready |= 1 << qi;
            }
            if self.q[qi][d].fetched.is_empty() {
                self.q[qi].ready_at = self.now;
            }
            let qd = &mut self.q[qi][d];
            qd.fetched.push_back(Fetched { idx, desc });
            qd.fetched_total += 1;
            qd.head += 1;
            if qd.head >= len {
                qd.head = 0;
                qd.head_id = (qd.head_id + 1) & 3;
            }
            fetched += 1;
        }
        let (head, head_id) = (self.q[qi][d].head, self.q[qi][d].head_id);
        self.sync_queue_regs(dir, q);
        if fetched > 0 {
            self.log_with(|| EventKind::Prefetch {
                dir,
                queue: q,
                first_index,
                count: fetched,
                head,
                head_ring_id: head_id,
            });
        }
        self.try_fetch(dir, q, timing);
        self.schedule_kick(self.now);
    }

    /// FIRST/LAST consistency and the per-packet limits, checked as M2S
    /// prefetches (docs/references/driver.md §2.6 group A bits 13–16, §3.7 limits).
    /// Returns false when an unmasked error aborted the direction.
    pub(super) fn check_packet_shape(&mut self, q: u8, idx: u32, desc: &RawDesc) -> bool {
        let qi = usize::from(q) % QUEUES;
        let encode_64k = self.cfg.encode_64k;
        let max_pkt = self.cfg.max_pkt;
        let max_descs = self.cfg.max_descs;
        let len = u64::from(desc.data_len(encode_64k));
        let qd = &self.q[qi][0];
        // The common descriptor, a whole packet (FIRST|LAST) after a
        // finished one, within the limits: nothing to raise (one
        // descriptor never exceeds MAX_DESC; 0 is no limit).
        if desc.first() && desc.last() && !qd.in_packet && (max_pkt == 0 || len <= max_pkt) {
            let qd = &mut self.q[qi][0];
            qd.pkt_descs = 0;
            qd.pkt_bytes = 0;
            return true;
        }
        let mut errors: Vec<(u32, &str, String)> = Vec::new();
        if desc.first() && qd.in_packet {
            errors.push((
                sec_a::LAST,
                "LAST",
                format!("m2s.q{q}[{idx}]: FIRST while the previous packet has no LAST"),
            ));
        }
        if !desc.first() && !qd.in_packet {
            errors.push((
                sec_a::FIRST,
                "FIRST",
                format!("m2s.q{q}[{idx}]: packet does not start with FIRST"),
            ));
        }
        let (descs, bytes) = if desc.first() || !qd.in_packet {
            (1, len)
        } else {
            (qd.pkt_descs + 1, qd.pkt_bytes + len)
        };
        if max_descs != 0 && descs > max_descs {
            errors.push((
                sec_a::MAX_DESC,
                "MAX_DESC",
                format!("m2s.q{q}[{idx}]: {descs} descriptors in a packet, max {max_descs}"),
            ));
        }
        if max_pkt != 0 && bytes > max_pkt {
            errors.push((
                sec_a::PKT_LEN,
                "PKT_LEN",
                format!("m2s.q{q}[{idx}]: packet of {bytes} bytes, max {max_pkt}"),
            ));
        }
        let qd = &mut self.q[qi][0];
        qd.in_packet = !desc.last();
        qd.pkt_descs = if desc.last() { 0 } else { descs };
        qd.pkt_bytes = if desc.last() { 0 } else { bytes };
        for (bit, name, detail) in errors {
            if self.raise(Group::A, bit, Dir::M2s, Some(q), name, detail) {
                return false;
            }
        }
        true
    }
}
