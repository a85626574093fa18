//! Packet completion: the data moves, descriptors complete, completion
//! rings and counters update (P9.1 §4.2, docs/references/wiki.md §B.7).

use sim_core::{Bus, TimingConfig};

use super::faults::sec_d;
use super::queue::{ring_entry_addr, ring_overflow};
use super::{DirState, Engine, Fetched, InFlight, dir_idx, sec_a, sec_b};
use crate::block::Dir;
use crate::event::EventKind;
use crate::regs::Group;

impl Engine {
    #[inline(never)]
    pub(super) fn packet_done(&mut self, p: &InFlight, bus: &mut dyn Bus, timing: &TimingConfig) {
        let qi = usize::from(p.queue);
        let q = p.queue;
        let (tx, rx) = (p.tx.as_slice(), p.rx.as_slice());
        if (self.q[qi][0].epoch, self.q[qi][1].epoch) != p.epoch
            || self.state != [DirState::Normal; 2]
        {
            return;
        }
        // The data path is done with this packet, whatever happens next.
        let status = self.maps.slots.hot[0].status;
        self.regs.q[qi][0].hw_update_slot(status, |s| s & !(1 << 29));
        let encode_64k = self.cfg.encode_64k;
        let crc_init = self.q[qi].cfg.crc_init;
        let hdr_split = self.q[qi].cfg.hdr_split;
        // Packet scopes only for an observer (the race detector): without
        // one they would be built and dropped.
        let observed = bus.observes_packets();
        let scope = match tx.first() {
            Some(first) if observed => Some(sim_core::PacketScope {
                queue: q,
                slot: first.idx,
                tx_descs: tx.len() as u32,
                dmb: first.desc.dmb(),
                barrier: crate::desc::Cme(first.desc.word1).write_barrier()
                    || rx.iter().any(|f| f.desc.sow()),
                completion: false,
            }),
            _ => None,
        };
        if scope.is_some() {
            bus.packet_scope(scope);
        }
        let result = crate::datapath::move_packet(
            bus,
            tx,
            rx,
            encode_64k,
            crc_init,
            hdr_split,
            &mut self.crc_cache,
        );
        if observed && result.is_err() {
            bus.packet_scope(None);
        }
        let (written, checksum) = match result {
            Ok(r) => {
                if let Some(detail) = r.unchecked {
                    let idx = tx.first().map_or(0, |f| f.idx);
                    self.record_unchecked(q, "validate_crc", format!("m2s.q{q}[{idx}]: {detail}"));
                }
                (r.written, r.checksum)
            }
            Err(crate::datapath::MoveError::Read(e)) => {
                self.axi_error(
                    Dir::M2s,
                    q,
                    Group::A,
                    sec_a::DATA_AXI_RESPONSE,
                    "DATA_AXI_RESPONSE",
                    format!("data read at {e}"),
                );
                return;
            }
            Err(crate::datapath::MoveError::Write(e)) => {
                self.axi_error(
                    Dir::S2m,
                    q,
                    Group::B,
                    sec_b::DATA_WR_AXI_RESPONSE,
                    "DATA_WR_AXI_RESPONSE",
                    format!("data write at {e}"),
                );
                return;
            }
            Err(crate::datapath::MoveError::Length(detail)) => {
                self.raise(
                    Group::B,
                    sec_b::PKT_LEN_MISMATCH,
                    Dir::S2m,
                    Some(q),
                    "PKT_LEN_MISMATCH",
                    detail,
                );
                return;
            }
            Err(crate::datapath::MoveError::Unsupported(detail)) => {
                let idx = tx.first().map_or(0, |f| f.idx);
                self.raise(
                    Group::D,
                    sec_d::M2S_UNSUPPORTED_OP,
                    Dir::M2s,
                    Some(q),
                    "M2S_UNSUPPORTED_OP",
                    format!("m2s.q{q}[{idx}]: {detail}"),
                );
                return;
            }
            Err(crate::datapath::MoveError::CrcMismatch(detail)) => {
                let idx = tx.first().map_or(0, |f| f.idx);
                self.raise(
                    Group::D,
                    sec_d::M2S_CRC_MISMATCH,
                    Dir::M2s,
                    Some(q),
                    "M2S_CRC_MISMATCH",
                    format!("m2s.q{q}[{idx}]: {detail}"),
                );
                return;
            }
        };
        // Completion: descriptors done, completion rings, counters.
        if let Some(s) = scope {
            bus.packet_scope(Some(sim_core::PacketScope {
                completion: true,
                ..s
            }));
        }
        self.complete(Dir::M2s, q, tx, bus);
        self.complete(Dir::S2m, q, rx, bus);
        if observed {
            bus.packet_scope(None);
        }
        let st = &mut self.stats[qi];
        st.tx_descs += tx.len() as u64;
        st.rx_descs += rx.len() as u64;
        st.bytes += written;
        st.last_done = Some(self.now.0);
        st.packets += 1;
        self.log_with(|| EventKind::PacketDone {
            queue: q,
            bytes: written,
            checksum: checksum.map(soc_map::Hex32),
        });
        // No prefetch retry here: completing descriptors frees no prefetch
        // room (start_packet did, and retried then).
        let _ = timing;
        self.schedule_kick(self.now);
    }

    /// Marks descriptors done and writes completion-ring entries when the
    /// queue's COMP_CFG enables them (P9.1 §4.2). Entry format
    /// (simulator-defined, the hardware's is unpublished — docs/timing.md):
    /// 16 bytes, word0 = the descriptor's word0 as fetched, ring/generation
    /// tag in bits 25:24 included (P9.1 §3 QUIRK: the completion poll
    /// matches the tag the firmware wrote), words 1–3 zero.
    #[inline(always)]
    pub(super) fn complete(&mut self, dir: Dir, q: u8, descs: &[Fetched], bus: &mut dyn Bus) {
        let qi = usize::from(q);
        let d = dir_idx(dir);
        self.q[qi][d].done += descs.len() as u64;
        if !self.q[qi].cfg.comp_en[d] {
            // No completion ring (the common case): the packet counter and
            // Q_STATUS, through one register-file borrow.
            let status = self.status_bits(dir, q);
            let hot = &self.maps.slots.hot[d];
            let f = self.qfile(dir, q);
            f.hw_update_slot(hot.pkt_count, |v| v.wrapping_add(1));
            f.hw_update_slot(hot.status, |s| (s & (1 << 29 | 1 << 30)) | status);
            return;
        }
        // With a completion ring: an entry per descriptor, then the
        // pointers and Q_STATUS.
        {
            let base = self.q[qi].cfg.comp_base[d];
            let len = self.q[qi].cfg.ring_len[d].max(1);
            for f in descs {
                let qd = &self.q[qi][d];
                let written = match ring_entry_addr(base, qd.comp_head) {
                    Some(addr) => bus.write_entry16(addr, f.desc.word0),
                    None => Err(ring_overflow(base, qd.comp_head)),
                };
                if let Err(e) = written {
                    let (g, bit) = match dir {
                        Dir::M2s => (Group::A, 1 << 5),
                        Dir::S2m => (Group::B, sec_b::COMP_AXI),
                    };
                    self.axi_error(
                        dir,
                        q,
                        g,
                        bit,
                        "COMP_AXI_RESPONSE",
                        format!("completion write at {e}"),
                    );
                    break;
                }
                let qd = &mut self.q[qi][d];
                qd.comp_head += 1;
                if qd.comp_head >= len {
                    qd.comp_head = 0;
                    qd.comp_id = (qd.comp_id + 1) & 3;
                }
            }
        }
        // A completion moves the completion head, the packet counter and
        // the occupancy, as in the branch without a ring above.
        self.sync_completion_regs(dir, q, true);
    }
}
