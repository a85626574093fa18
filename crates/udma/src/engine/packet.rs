//! Packet start: whether a queue's next packet can run (whole packet
//! prefetched, RX room, DMB), and its timing through the data path
//! (docs/timing.md).

use std::collections::VecDeque;

use sim_core::{Bus, TimingConfig};
use soc_map::Hex;

use super::{Engine, Ev, InFlight};
use crate::block::Dir;
use crate::desc;
use crate::event::EventKind;

impl Engine {
    /// The TX/RX descriptor counts of queue q's next packet when it can run.
    pub(super) fn ready_packet(
        &mut self,
        q: u8,
        timing: &TimingConfig,
    ) -> Option<(u8, usize, usize, u64)> {
        let qi = usize::from(q);
        if self.q[qi][0].fetched.is_empty() {
            return None;
        }
        let (_, sched) = self.enabled(Dir::M2s, q);
        let (_, stream) = self.enabled(Dir::S2m, q);
        if !sched || !stream {
            return None;
        }
        let [tx, rx] = &self.q[qi].dir;
        if tx.non_active || rx.non_active || tx.fetched.is_empty() {
            return None;
        }
        let encode_64k = self.cfg.encode_64k;
        // A whole packet (FIRST..LAST) must be prefetched. The common
        // packet is one data descriptor: no walk.
        let (n_tx, bytes, first, first_len) = match tx.fetched.front() {
            Some(f) if f.desc.last() && !f.desc.meta() => (
                1,
                u64::from(f.desc.data_len(encode_64k)),
                f.desc,
                u64::from(f.desc.len_bytes(encode_64k)),
            ),
            _ => {
                let mut n_tx = 0;
                let mut bytes = 0u64;
                let mut first = None;
                let mut first_len = 0u64;
                let mut first_data = true;
                for f in &tx.fetched {
                    n_tx += 1;
                    bytes += u64::from(f.desc.data_len(encode_64k));
                    if first_data && !f.desc.meta() {
                        first_len = u64::from(f.desc.len_bytes(encode_64k));
                        first_data = false;
                    }
                    first.get_or_insert(f.desc);
                    if f.desc.last() {
                        break;
                    }
                }
                let first = first?;
                if !tx.fetched.get(n_tx - 1)?.desc.last() {
                    return None;
                }
                (n_tx, bytes, first, first_len)
            }
        };
        let word1 = desc::Cme(first.word1);
        let stream_bytes = if word1.cce().is_some() {
            crate::datapath::cce_out_len(word1, first_len)
        } else if word1.is_cme_checksum() {
            (if word1.copy_src_data() { bytes } else { 0 }) + if word1.send_crc() { 4 } else { 0 }
        } else {
            bytes
        };
        // Enough RX buffers for the stream (usually the first holds it).
        let first_rx = rx
            .fetched
            .front()
            .map(|f| u64::from(f.desc.len_bytes(encode_64k)));
        let n_rx = match first_rx {
            None => return None,
            Some(room) if room >= stream_bytes => 1,
            Some(_) => {
                let mut n_rx = 0;
                let mut room = 0u64;
                for f in &rx.fetched {
                    if room >= stream_bytes && n_rx > 0 {
                        break;
                    }
                    n_rx += 1;
                    room += u64::from(f.desc.len_bytes(encode_64k));
                }
                if room < stream_bytes {
                    return None;
                }
                n_rx
            }
        };
        // DMB: wait for every earlier transfer of the queue when the rate
        // limiter mask lets DMB pause the queue (bit 2 clear; docs/references/driver.md
        // §2.4), unless Q_SW_CTRL.RST_DMB released the wait.
        if first.dmb()
            && self.q[qi].cfg.dmb_pause
            && self.q[qi].last_end > self.now
            && !self.q[qi].dmb_release
        {
            let status_off = self.maps.offsets.m2s_q.status;
            let _ = self.regs.q[qi][0].hw_update(status_off, |s| s | (1 << 30));
            let at = self.q[qi].last_end;
            self.schedule_kick(at);
            return None;
        }
        let _ = timing;
        Some((q, n_tx, n_rx, bytes))
    }

    pub(super) fn start_packet(
        &mut self,
        (q, n_tx, n_rx, bytes): (u8, usize, usize, u64),
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        let qi = usize::from(q);
        let encode_64k = self.cfg.encode_64k;
        // A RST_DMB release applies to the packet it let go.
        self.q[qi].dmb_release = false;
        // The packet is built in its slab slot, whose vectors stay there
        // (no packet moved through the stack on every start).
        let slot = match self.free_slots.pop() {
            Some(i) => i,
            None => {
                self.inflight.push(InFlight::default());
                self.inflight.len() - 1
            }
        };
        let [m2s, s2m] = &mut self.q[qi].dir;
        let InFlight { tx, rx, .. } = &mut self.inflight[slot];
        // Each side by itself (no loop over a pair of sides: host speed).
        take_side(tx, &mut m2s.fetched, n_tx);
        take_side(rx, &mut s2m.fetched, n_rx);
        let InFlight { tx, rx, .. } = &self.inflight[slot];
        let (tx, rx) = (tx.as_slice(), rx.as_slice());
        let start = self.now;
        // One pass over the data descriptors (META ones move nothing):
        // data-path cycles, the HBM bookings (docs/timing.md: the data
        // phase lasts at least until the stacks it reads and writes have
        // delivered its bytes), and the slowest source's read latency.
        let mut data_cycles = 0u64;
        let mut booked_end = start;
        let mut read_latency = None;
        for f in tx.iter().filter(|f| !f.desc.meta()) {
            let len = u64::from(f.desc.len_bytes(encode_64k));
            data_cycles += timing.transfer_cycles(f.desc.buf_ptr, len);
            booked_end = booked_end.max(bus.reserve_bandwidth(f.desc.buf_ptr, len, start));
            read_latency = read_latency.max(Some(timing.read_latency(f.desc.buf_ptr)));
        }
        let read_latency = read_latency.unwrap_or(timing.read_latency_cycles);
        // The axi2sram cross-bar lands one transposed column per
        // `xbar_column_cycles` (docs/timing.md).
        if let Some(first) = tx.first()
            && let Some(esz) = crate::datapath::xbar_elem_bytes(first.desc.word1)
        {
            let esz = esz as u64;
            let cols = u64::from(first.desc.len_bytes(encode_64k)) / esz;
            let col_cycles = (cols as f64 * timing.xbar_column_cycles).ceil() as u64;
            // A partitioned (SBUF or PSUM) source is read through the same
            // axi2sram bridge: its columns cross it twice.
            let passes = if bus.partition_stride(first.desc.buf_ptr).is_some() {
                2
            } else {
                1
            };
            data_cycles = data_cycles.max(passes * col_cycles);
        }
        let mut data_end = start.after(data_cycles).max(booked_end);
        let mut left = bytes;
        for f in rx.iter() {
            let len = u64::from(f.desc.len_bytes(encode_64k)).min(left);
            left -= len;
            data_end = data_end.max(bus.reserve_bandwidth(f.desc.buf_ptr, len, start));
        }
        let data_cycles = data_end.0 - start.0;
        self.data_free_at = data_end;
        let write_latency = rx
            .iter()
            .map(|f| timing.write_latency(f.desc.buf_ptr))
            .max()
            .unwrap_or(timing.write_latency_cycles);
        let mut end = start.after(read_latency + data_cycles + write_latency);
        if let Some(j) = self.jitter.as_mut() {
            end = end.after(j.latency.next());
        }
        end = end.max(self.q[qi].last_end);
        let barrier =
            desc::Cme(tx[0].desc.word1).write_barrier() || rx.iter().any(|f| f.desc.sow());
        if barrier {
            end = end.max(self.last_write_end.after(write_latency));
        }
        self.q[qi].last_end = end;
        self.last_write_end = self.last_write_end.max(end);
        // Current-descriptor pointers and the DMB status bit.
        let (tdcp, rdcp) = (tx[0].idx, rx[0].idx);
        let [m2s_hot, s2m_hot] = &self.maps.slots.hot;
        self.regs.q[qi][0].hw_update_slot(m2s_hot.dcp, |_| tdcp);
        self.regs.q[qi][1].hw_update_slot(s2m_hot.dcp, |_| rdcp);
        self.regs.q[qi][0].hw_update_slot(m2s_hot.status, |s| (s & !(1 << 30)) | (1 << 29));
        let (src, dst) = (tx[0].desc.buf_ptr, rx[0].desc.buf_ptr);
        let st = &mut self.stats[qi];
        st.busy_cycles += data_cycles;
        st.first_start.get_or_insert(start.0);
        self.log_with(|| EventKind::PacketStart {
            queue: q,
            tx_descs: n_tx as u32,
            rx_descs: n_rx as u32,
            bytes,
            done_at: end.0,
            src: Hex(src),
            dst: Hex(dst),
        });
        let epoch = (self.q[qi][0].epoch, self.q[qi][1].epoch);
        let p = &mut self.inflight[slot];
        p.live = true;
        p.queue = q;
        p.epoch = epoch;
        // The slab holds at most one slot per in-flight packet (bounded by
        // the rings), far below u32::MAX.
        self.events.push(end, Ev::PacketDone(slot as u32));
        // More prefetch room now.
        self.try_fetch(Dir::M2s, q, timing);
        self.try_fetch(Dir::S2m, q, timing);
    }
}

/// Moves the first `n` prefetched descriptors of one side into the
/// packet's slot, in order.
#[inline(always)]
fn take_side(v: &mut super::pieces::Pieces, fetched: &mut VecDeque<super::Fetched>, n: usize) {
    if n == 1 {
        // The common packet: one descriptor a side.
        if let Some(f) = fetched.pop_front() {
            v.push(f);
        }
    } else {
        for f in (0..n).map_while(|_| fetched.pop_front()) {
            v.push(f);
        }
    }
}
