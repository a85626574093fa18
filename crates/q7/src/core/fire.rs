//! Generation done: descriptors written into the carve-out and the
//! doorbells rung (docs/firmware.md), RDMA_DESC_START's ring order.

use super::*;

impl Q7Core {
    /// Writes the plan's descriptors and rings the doorbells.
    pub(super) fn fire(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        plan: &Plan,
        tag: InstTag,
        update: Option<(UpdateMode, u8, u32)>,
    ) {
        bus.note_word(&tag);
        bus.note_elements(plan.elements);
        let regs = self.layout.regs;
        let mut targets = Vec::with_capacity(plan.engines.len());
        let mut written = 0u64;
        // Events are built only when recorded (`Q7Core::event` drops them
        // otherwise).
        let mut events = Vec::new();
        let trace = self.trace;
        if plan.kind == InstKind::RdmaDescStart {
            self.start_rdma(bus, &mut targets, &mut events);
        }
        let payload_cfg = self.dge_payload(bus);
        for ep in &plan.engines {
            if self.trace {
                for op in &ep.micro_ops {
                    events.push(FwEventKind::MicroOp {
                        text: op.to_string(),
                    });
                }
            }
            let Some(e) = self.layout.engines.get(usize::from(ep.slot)).copied() else {
                continue;
            };
            let dge = self.layout.dge_memory;
            let Some(Some(r)) = self.rings.get_mut(usize::from(ep.slot)) else {
                continue;
            };
            let (m2s_first, _) = r.slot(r.m2s_pos);
            let (s2m_first, _) = r.slot(r.s2m_pos);
            // Packets in ring order: data pairs, transpose gathers (several
            // TX descriptors, one RX), then the semaphore writes.
            let sem_src = |v: u8| {
                crate::plan::TxSource::data(
                    payload_cfg.payload(dge, v),
                    4,
                    dma_abi::DEFAULT_COPY_WORD1,
                )
            };
            let mut built = std::mem::take(&mut self.built);
            let build_fault = built.build_share(r, ep, sem_src);
            let (m2s_count, count, store_fault) = built.store(bus, r);
            self.built = built;
            let fault = store_fault.or(build_fault);
            written += u64::from(count) + u64::from(m2s_count);
            if !plan.ring_now {
                if let Some(m) = fault {
                    events.push(FwEventKind::Rejected {
                        reason: format!("engine {}: {m}", e.id),
                    });
                }
                match self.unrung.iter_mut().find(|(s, _, _)| *s == ep.slot) {
                    Some((_, m, c)) => {
                        *m += m2s_count;
                        *c += count;
                    }
                    None => self.unrung.push((ep.slot, m2s_count, count)),
                }
                if trace {
                    events.push(FwEventKind::Generated {
                        engine: e.id,
                        queue: r.queue,
                        count,
                        bytes: ep.bytes,
                    });
                }
                continue;
            }
            let (mq, sq) = (e.m2s_q(r.queue), e.s2m_q(r.queue));
            let db = bus
                .write32(sq + regs.drtp_inc, count)
                .and_then(|()| bus.write32(mq + regs.drtp_inc, m2s_count));
            if let Some(m) = fault.or(db.err()) {
                events.push(FwEventKind::Rejected {
                    reason: format!("engine {}: {m}", e.id),
                });
            }
            targets.push((ep.slot, r.m2s_pos, r.s2m_pos));
            if trace {
                events.push(FwEventKind::Doorbell {
                    engine: e.id,
                    queue: r.queue,
                    m2s_first,
                    s2m_first,
                    count,
                    m2s_count,
                    bytes: ep.bytes,
                });
            }
        }
        for k in events {
            if let FwEventKind::Rejected { reason } = &k {
                self.refused(now, &tag, plan.kind.name(), reason);
            }
            self.event(now, &tag, k);
        }
        let s = self.stats.entry(plan.kind.name()).or_default();
        s.issued += 1;
        s.descriptors += written;
        s.bytes += plan.bytes();
        self.inflight.push_back(Inflight {
            tag,
            kind: plan.kind.name(),
            targets,
            update,
            read_done: false,
        });
        self.poll_inflight(now, bus);
    }

    /// RDMA_DESC_START's doorbells in the firmware's handshake order
    /// (docs/references/wiki.md §E.4; docs/firmware.md "RDMA_DESC_GEN /
    /// RDMA_DESC_START"): the RX role first writes every engine's S2M
    /// RDRTP_INC and signals (`right_push`); the TX role waits for it
    /// (`left_pop`) and writes every M2S TDRTP_INC — the launch. Each
    /// write is logged with the firmware's own words.
    pub(super) fn start_rdma(
        &mut self,
        bus: &mut dyn FwBus,
        targets: &mut Vec<(u8, u64, u64)>,
        events: &mut Vec<FwEventKind>,
    ) {
        let regs = self.layout.regs;
        let unrung: Vec<(u8, u32, u32, crate::layout::EngineLayout, Rings)> =
            std::mem::take(&mut self.unrung)
                .into_iter()
                .filter_map(|(slot, m2s_count, count)| {
                    let e = self.layout.engines.get(usize::from(slot)).copied()?;
                    let r = self.rings.get(usize::from(slot))?.clone()?;
                    Some((slot, m2s_count, count, e, r))
                })
                .collect();
        let log = |text: String| FwEventKind::Log { text };
        for (_, _, count, e, r) in &unrung {
            events.push(log(format!(
                "[RX] Writing tail pointer increment: eng{}.s2m.q{} RDRTP_INC += {count}",
                e.id, r.queue
            )));
            if let Err(m) = bus.write32(e.s2m_q(r.queue) + regs.drtp_inc, *count) {
                events.push(FwEventKind::Rejected {
                    reason: format!("engine {}: {m}", e.id),
                });
            }
        }
        events.push(log("[RX] right_push".into()));
        events.push(log("[TX] left_pop".into()));
        for (_, m2s_count, _, e, r) in &unrung {
            events.push(log(format!(
                "[TX] Writing tail pointer increment: eng{}.m2s.q{} TDRTP_INC += {m2s_count}",
                e.id, r.queue
            )));
            if let Err(m) = bus.write32(e.m2s_q(r.queue) + regs.drtp_inc, *m2s_count) {
                events.push(FwEventKind::Rejected {
                    reason: format!("engine {}: {m}", e.id),
                });
            }
        }
        for (slot, m2s_count, count, e, r) in unrung {
            let (m2s_first, _) = r.slot(r.m2s_pos.saturating_sub(u64::from(m2s_count)));
            let (s2m_first, _) = r.slot(r.s2m_pos.saturating_sub(u64::from(count)));
            targets.push((slot, r.m2s_pos, r.s2m_pos));
            events.push(FwEventKind::Doorbell {
                engine: e.id,
                queue: r.queue,
                m2s_first,
                s2m_first,
                count,
                m2s_count,
                bytes: 0,
            });
        }
    }
}

/// The M2S descriptors of one packet, without a list per packet: a pair's
/// (read from the pair, at most three), one source, or a transpose
/// gather's pieces.
enum PacketTx<'p> {
    Pair(&'p crate::plan::DescPair, &'p crate::plan::PairExtras),
    One(crate::plan::TxSource),
    Pieces(&'p [(u64, u32)], u32),
}

impl PacketTx<'_> {
    fn len(&self) -> usize {
        match self {
            PacketTx::Pair(p, x) => p.source_count(x),
            PacketTx::One(_) => 1,
            PacketTx::Pieces(p, _) => p.len(),
        }
    }

    fn get(&self, k: usize) -> crate::plan::TxSource {
        match self {
            PacketTx::Pair(p, x) => p.source(x, k).unwrap_or_default(),
            PacketTx::One(s) => *s,
            PacketTx::Pieces(p, word1) => p.get(k).map_or_else(Default::default, |&(a, l)| {
                crate::plan::TxSource::data(a, l, *word1)
            }),
        }
    }
}

/// One descriptor's 16 bytes as the ring holds them.
type DescBytes = [u8; DESC_BYTES as usize];

/// Appends descriptor `d`'s 16 bytes, built from its two 8-byte words
/// (one entry, not two appends). Copying the descriptor as one 16-byte
/// value read back from where its narrower fields were just stored makes
/// an x86 host wait for those stores (a failed store-to-load forward, ~2 %
/// of a tile run).
fn push_desc(out: &mut Vec<DescBytes>, d: &dma_abi::Descriptor) {
    push_words(out, d.len_ctrl(), d.word1.get(), d.buf_ptr.get());
}

/// Appends the descriptor of word 0 `w0`, word 1 `w1` and buffer pointer
/// `ptr` (docs/references/driver.md §3.2), as [`push_desc`].
#[inline(always)]
fn push_words(out: &mut Vec<DescBytes>, w0: dma_abi::LenCtrl, w1: u32, ptr: u64) {
    out.push(desc_bytes(w0, w1, ptr));
}

/// The 16 bytes of the descriptor of word 0 `w0`, word 1 `w1` and buffer
/// pointer `ptr`, as one value ([`push_words`]).
#[inline(always)]
fn desc_bytes(w0: dma_abi::LenCtrl, w1: u32, ptr: u64) -> DescBytes {
    let words01 = u64::from(w0.raw()) | (u64::from(w1) << 32);
    ((u128::from(ptr) << 64) | u128::from(words01)).to_le_bytes()
}

/// One engine's descriptors of a word, built in ring order before they are
/// stored (docs/firmware.md "Descriptor stores").
#[derive(Clone, Debug, Default)]
pub(super) struct Built {
    /// M2S descriptors, in ring order from the ring's producer position.
    m2s: Vec<DescBytes>,
    /// S2M descriptors, in ring order from the ring's producer position.
    s2m: Vec<DescBytes>,
    /// Per packet: its M2S descriptor count and whether its S2M
    /// descriptor was built (not when building stopped inside it).
    packets: Vec<(u32, bool)>,
}

impl Built {
    /// Builds the descriptors of engine share `ep` from `r`'s producer
    /// positions (`r` is not moved): its data pairs, transpose gathers
    /// (several TX descriptors, one RX), then its semaphore writes, whose
    /// source `sem_src` gives by value; the fault that stopped building,
    /// if any.
    fn build_share(
        &mut self,
        r: &Rings,
        ep: &EnginePlan,
        sem_src: impl Fn(u8) -> crate::plan::TxSource,
    ) -> Option<String> {
        self.m2s.clear();
        self.s2m.clear();
        self.packets.clear();
        // The ring ids of the producer positions, moved along descriptor
        // by descriptor (`Rings::slot` of each position, without dividing).
        let mut at = [RingCursor::new(r, r.m2s_pos), RingCursor::new(r, r.s2m_pos)];
        let x = &ep.extras;
        let pairs_fault = if *x == crate::plan::PairExtras::NONE {
            self.plain_pairs(&ep.pairs, &mut at)
        } else {
            let pairs = ep
                .pairs
                .iter()
                .map(|p| (PacketTx::Pair(p, x), (p.dst, p.dst_len_bytes)));
            self.packets(pairs, &mut at)
        };
        if pairs_fault.is_some() {
            return pairs_fault;
        }
        let gathers = ep
            .gathers
            .iter()
            .map(|g| (PacketTx::Pieces(&g.tx, g.word1), (g.dst, g.dst_len_bytes)));
        let sems = ep
            .sem_writes
            .iter()
            .map(|&(at, v)| (PacketTx::One(sem_src(v)), (at, 4)));
        self.packets(gathers.chain(sems), &mut at)
    }

    /// Builds plain copy pairs (one TX descriptor per packet) as
    /// [`Built::packets`] does: pairs of one length (a tile's rows are)
    /// share their descriptors' word 0, and a stretch of them that wraps
    /// neither ring shares its ring ids too, so it is appended with no
    /// check per pair (docs/firmware.md "Descriptor stores").
    #[inline(never)]
    fn plain_pairs(
        &mut self,
        pairs: &[crate::plan::DescPair],
        at: &mut [RingCursor; 2],
    ) -> Option<String> {
        self.m2s.reserve(pairs.len());
        self.s2m.reserve(pairs.len());
        self.packets.reserve(pairs.len());
        let mut rest = pairs;
        while let Some(first) = rest.first() {
            // Word 0 of a FIRST | LAST TX descriptor and of an RX one, with
            // ring id 0: the ring id is set per stretch.
            let Ok(tx0) = tx(first.len_bytes, 0, Flags::single(0)).map(|d| d.len_ctrl()) else {
                self.packets.push((0, false));
                return Some(format!(
                    "descriptor length {} out of range",
                    first.len_bytes
                ));
            };
            let Ok(rx0) = rx(first.dst_len_bytes, 0).map(|d| d.len_ctrl()) else {
                push_words(
                    &mut self.m2s,
                    tx0.with_ring_id(at[0].id),
                    first.word1,
                    first.src,
                );
                at[0].advance();
                self.packets.push((1, false));
                return Some(format!(
                    "descriptor length {} out of range",
                    first.dst_len_bytes
                ));
            };
            let same = rest
                .iter()
                .take_while(|p| {
                    p.len_bytes == first.len_bytes && p.dst_len_bytes == first.dst_len_bytes
                })
                .count();
            let (mut run, tail) = rest.split_at(same);
            while !run.is_empty() {
                let k = run.len().min(at[0].room()).min(at[1].room()).max(1);
                let (chunk, next) = run.split_at(k);
                let (tw, rw) = (tx0.with_ring_id(at[0].id), rx0.with_ring_id(at[1].id));
                self.m2s
                    .extend(chunk.iter().map(|p| desc_bytes(tw, p.word1, p.src)));
                self.s2m
                    .extend(chunk.iter().map(|p| desc_bytes(rw, 0, p.dst)));
                at[0].advance_by(k as u32);
                at[1].advance_by(k as u32);
                run = next;
            }
            self.packets.extend(std::iter::repeat_n((1, true), same));
            rest = tail;
        }
        None
    }

    /// Builds the descriptors of `packets` at the ring positions `at` (M2S,
    /// S2M), moving them; the fault that stopped building, if any.
    fn packets<'p>(
        &mut self,
        packets: impl Iterator<Item = (PacketTx<'p>, (u64, u32))>,
        at: &mut [RingCursor; 2],
    ) -> Option<String> {
        let [m2s_at, s2m_at] = at;
        for (txs, (dst, dst_len)) in packets {
            let n = txs.len();
            let mut m2s_n = 0u32;
            for k in 0..n {
                let s = txs.get(k);
                let (src, len, word1) = (s.addr, s.len_bytes, s.word1);
                let mid = m2s_at.id;
                let flags = Flags {
                    first: k == 0,
                    last: k + 1 == n,
                    ring_id: mid,
                    meta: s.meta,
                    ..Flags::default()
                };
                // A meta descriptor: LEN 0, word1 = meta_ctrl, bytes
                // 8-15 = meta1/meta2 (docs/references/wiki.md §F.2).
                let built = if s.meta {
                    Ok(dma_abi::Descriptor::new(
                        dma_abi::LenCtrl::from_raw(0).with_flags(flags),
                        word1,
                        src,
                    ))
                } else {
                    tx(len, src, flags).map(|d| d.with_word1(dma_abi::CmeWord::from_raw(word1)))
                };
                let Ok(m) = built else {
                    self.packets.push((m2s_n, false));
                    return Some(format!("descriptor length {len} out of range"));
                };
                push_desc(&mut self.m2s, &m);
                m2s_at.advance();
                m2s_n += 1;
            }
            let sid = s2m_at.id;
            let Ok(s) = rx(dst_len, dst).map(|d| {
                d.with_flags(Flags {
                    ring_id: sid,
                    ..Flags::default()
                })
            }) else {
                self.packets.push((m2s_n, false));
                return Some(format!("descriptor length {dst_len} out of range"));
            };
            push_desc(&mut self.s2m, &s);
            s2m_at.advance();
            self.packets.push((m2s_n, true));
        }
        None
    }

    /// Stores the built descriptors into `r`'s rings and moves its
    /// producer positions: one write per ring run where the bus stores it
    /// whole, else one store per descriptor in build order, stopping at
    /// the first fault. Returns the M2S and S2M descriptors stored and
    /// that fault.
    fn store(&self, bus: &mut dyn FwBus, r: &mut Rings) -> (u32, u32, Option<String>) {
        let whole = [
            ring_runs(r, r.addrs.m2s_ring, r.m2s_pos, &self.m2s),
            ring_runs(r, r.addrs.s2m_ring, r.s2m_pos, &self.s2m),
        ];
        let runs = whole.iter().flatten().filter(|(_, b)| !b.is_empty());
        let ring = r.len as usize;
        let fits = self.m2s.len() <= ring && self.s2m.len() <= ring;
        if fits
            && runs
                .clone()
                .all(|&(at, b)| bus.stores_whole(at, b.len() as u64))
            && runs.clone().all(|&(at, b)| bus.write_bytes(at, b).is_ok())
        {
            let m2s = self.m2s.len() as u32;
            let s2m = self.s2m.len() as u32;
            r.m2s_pos += u64::from(m2s);
            r.s2m_pos += u64::from(s2m);
            return (m2s, s2m, None);
        }
        // One store per descriptor (a store that faults after a whole
        // run was stored rewrites the same bytes first).
        let (mut m2s, mut s2m) = (0u32, 0u32);
        let mut m2s_descs = self.m2s.iter();
        let mut s2m_descs = self.s2m.iter();
        for &(m2s_n, has_s2m) in &self.packets {
            for d in m2s_descs.by_ref().take(m2s_n as usize) {
                let (mi, _) = r.slot(r.m2s_pos);
                if let Err(msg) = bus.write_bytes(r.addrs.m2s_ring + DESC_BYTES * u64::from(mi), d)
                {
                    return (m2s, s2m, Some(msg));
                }
                r.m2s_pos += 1;
                m2s += 1;
            }
            if has_s2m && let Some(d) = s2m_descs.next() {
                let (si, _) = r.slot(r.s2m_pos);
                if let Err(msg) = bus.write_bytes(r.addrs.s2m_ring + DESC_BYTES * u64::from(si), d)
                {
                    return (m2s, s2m, Some(msg));
                }
                r.s2m_pos += 1;
                s2m += 1;
            }
        }
        (m2s, s2m, None)
    }
}

/// A ring position's slot and ring id ([`Rings::slot`]), moved one
/// descriptor at a time.
struct RingCursor {
    idx: u32,
    id: u8,
    len: u32,
}

impl RingCursor {
    fn new(r: &Rings, pos: u64) -> Self {
        let (idx, id) = r.slot(pos);
        RingCursor {
            idx,
            id,
            len: r.len,
        }
    }

    /// The next position: past the ring's last slot, slot 0 of the next
    /// ring id.
    fn advance(&mut self) {
        self.advance_by(1);
    }

    /// Positions left before the ring wraps (at least 1 in a ring).
    fn room(&self) -> usize {
        self.len.saturating_sub(self.idx) as usize
    }

    /// `k` positions on, `k` at most [`RingCursor::room`] (or 1): wraps at
    /// most once, onto slot 0.
    #[inline(always)]
    fn advance_by(&mut self, k: u32) {
        self.idx += k;
        if self.idx >= self.len {
            self.idx = 0;
            self.id = (self.id + 1) & 3;
        }
    }
}

/// `descs` from ring position `pos` as at most two contiguous byte runs of
/// the ring at `ring`: up to its end, then from its start.
fn ring_runs<'b>(r: &Rings, ring: u64, pos: u64, descs: &'b [DescBytes]) -> [(u64, &'b [u8]); 2] {
    let (first, _) = r.slot(pos);
    let room = (r.len - first) as usize;
    let (a, b) = descs.split_at(room.min(descs.len()));
    [
        (ring + DESC_BYTES * u64::from(first), a.as_flattened()),
        (ring, b.as_flattened()),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    proptest::proptest! {
        /// The append adds one entry: exactly the descriptor's bytes.
        #[test]
        fn push_desc_appends_the_descriptor_bytes(
            w0 in proptest::num::u32::ANY,
            w1 in proptest::num::u32::ANY,
            ptr in proptest::num::u64::ANY,
            before in proptest::collection::vec(proptest::array::uniform16(proptest::num::u8::ANY), 0..3),
        ) {
            let d = dma_abi::Descriptor::new(dma_abi::LenCtrl::from_raw(w0), w1, ptr);
            let mut out = before.clone();
            push_desc(&mut out, &d);
            let mut want = before.as_flattened().to_vec();
            want.extend_from_slice(&d.to_bytes());
            proptest::prop_assert_eq!(out.as_flattened(), &want[..]);
        }
    }

    proptest::proptest! {
        /// Plain copy pairs build the descriptors, packets and fault the
        /// general packet builder gives them, lengths out of range and
        /// ring wraps included.
        #[test]
        fn plain_pairs_build_as_general_packets(
            pairs in proptest::collection::vec(
                (
                    proptest::num::u64::ANY,
                    proptest::num::u64::ANY,
                    proptest::prop_oneof![1u32..4, 65534u32..65538, 0u32..1, proptest::num::u32::ANY],
                    proptest::prop_oneof![1u32..4, 65534u32..65538, 0u32..1],
                    proptest::num::u32::ANY,
                ),
                0..24,
            ),
            len in 1u32..6,
            pos in 0u64..40,
            // Pairs from this one on take the lengths of the one before (a
            // stretch of one length, as a tile's rows).
            same_from in 0usize..14,
            // The S2M ring this far ahead of the M2S one (they wrap apart).
            skew in 0u64..6,
        ) {
            let mut pairs: Vec<crate::plan::DescPair> = pairs
                .into_iter()
                .map(|(src, dst, len_bytes, dst_len_bytes, word1)| crate::plan::DescPair {
                    src,
                    dst,
                    len_bytes,
                    dst_len_bytes,
                    word1,
                })
                .collect();
            for i in same_from.max(1)..pairs.len() {
                pairs[i].len_bytes = pairs[i - 1].len_bytes;
                pairs[i].dst_len_bytes = pairs[i - 1].dst_len_bytes;
            }
            let mut r = rings(len, pos);
            r.s2m_pos += skew;
            let cursors = || [RingCursor::new(&r, r.m2s_pos), RingCursor::new(&r, r.s2m_pos)];
            let mut fast = Built::default();
            let mut at = cursors();
            let fast_fault = fast.plain_pairs(&pairs, &mut at);
            let mut general = Built::default();
            let mut at_g = cursors();
            let none = crate::plan::PairExtras::NONE;
            let general_fault = general.packets(
                pairs.iter().map(|p| (PacketTx::Pair(p, &none), (p.dst, p.dst_len_bytes))),
                &mut at_g,
            );
            proptest::prop_assert_eq!(fast_fault, general_fault);
            proptest::prop_assert_eq!(&fast.m2s, &general.m2s);
            proptest::prop_assert_eq!(&fast.s2m, &general.s2m);
            proptest::prop_assert_eq!(&fast.packets, &general.packets);
            proptest::prop_assert_eq!(
                at.map(|c| (c.idx, c.id)),
                at_g.map(|c| (c.idx, c.id))
            );
        }
    }

    /// A pair's packet read descriptor by descriptor is its source list,
    /// for every combination of accumulate source and meta descriptor.
    #[test]
    fn pair_sources_read_one_by_one_are_the_list() {
        let p = crate::plan::DescPair::copy(0x1000, 0x2000, 64);
        for (acc, meta) in [(false, false), (true, false), (false, true), (true, true)] {
            let x = crate::plan::PairExtras {
                acc: acc.then_some(7),
                meta: meta.then_some((0xabcd, 9)),
            };
            let tx = PacketTx::Pair(&p, &x);
            let listed: Vec<_> = (0..tx.len()).map(|k| tx.get(k)).collect();
            // Ring order: the accumulate source, the meta descriptor, the data.
            let mut want = Vec::new();
            if acc {
                want.push(crate::plan::TxSource::data(0x2000, 64, 7));
            }
            if meta {
                want.push(crate::plan::TxSource {
                    addr: 0xabcd,
                    len_bytes: 0,
                    word1: 9,
                    meta: true,
                });
            }
            want.push(crate::plan::TxSource::data(0x1000, 64, p.word1));
            assert_eq!(listed, want, "acc {acc} meta {meta}");
            assert_eq!(p.sources(&x).to_vec(), want);
            assert_eq!(p.source(&x, tx.len()), None);
        }
    }

    /// Byte memory where stores at or past `fault_at` fault; `whole` says
    /// whether runs may be stored whole.
    struct Mem {
        bytes: BTreeMap<u64, u8>,
        fault_at: u64,
        whole: bool,
        stores: usize,
    }

    impl FwBus for Mem {
        fn read32(&mut self, _: u64) -> Result<u32, String> {
            Ok(0)
        }
        fn write32(&mut self, _: u64, _: u32) -> Result<(), String> {
            Ok(())
        }
        fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
            if addr + data.len() as u64 > self.fault_at {
                return Err(format!("fault at {addr:#x}"));
            }
            self.stores += 1;
            for (i, &b) in data.iter().enumerate() {
                self.bytes.insert(addr + i as u64, b);
            }
            Ok(())
        }
        fn read_bytes(&mut self, _: u64, _: &mut [u8]) -> Result<(), String> {
            Ok(())
        }
        fn partition_of(&self, _: u64) -> Option<u16> {
            None
        }
        fn stores_whole(&self, addr: u64, len: u64) -> bool {
            self.whole && addr + len <= self.fault_at
        }
    }

    fn rings(len: u32, pos: u64) -> Rings {
        Rings {
            queue: 0,
            len,
            addrs: RingAddrs {
                m2s_ring: 0x1000,
                s2m_ring: 0x2000,
                m2s_comp: 0,
                s2m_comp: 0,
            },
            m2s_pos: pos,
            s2m_pos: pos,
        }
    }

    /// Three packets (2, 1 and 3 TX descriptors, one RX each), every
    /// descriptor's bytes distinct.
    fn built() -> Built {
        let desc = |n: u8| [n; DESC_BYTES as usize];
        let mut b = Built::default();
        for n in 1..=6 {
            b.m2s.push(desc(n));
        }
        for n in 101..=103 {
            b.s2m.push(desc(n));
        }
        b.packets = vec![(2, true), (1, true), (3, true)];
        b
    }

    fn store(whole: bool, fault_at: u64, len: u32, pos: u64) -> (Mem, Rings, (u32, u32, bool)) {
        let mut mem = Mem {
            bytes: BTreeMap::new(),
            fault_at,
            whole,
            stores: 0,
        };
        let mut r = rings(len, pos);
        let (m, s, f) = built().store(&mut mem, &mut r);
        (mem, r, (m, s, f.is_some()))
    }

    /// The cursor gives the slot and ring id `Rings::slot` gives at every
    /// position, across wraps (where the ring id moves on).
    #[test]
    fn the_ring_cursor_follows_the_positions() {
        for len in [1, 2, 3, 8, 256] {
            let r = rings(len, 0);
            for start in [0u64, 5, 7, 1023] {
                let mut c = RingCursor::new(&r, start);
                for pos in start..start + 4 * u64::from(len) + 3 {
                    assert_eq!((c.idx, c.id), r.slot(pos), "len {len} pos {pos}");
                    c.advance();
                }
            }
        }
    }

    #[test]
    fn whole_runs_store_what_single_stores_do_across_a_wrap() {
        // An 8-slot ring from position 5: M2S wraps after 3 descriptors.
        let (a, ra, oa) = store(true, u64::MAX, 8, 5);
        let (b, rb, ob) = store(false, u64::MAX, 8, 5);
        assert_eq!(a.bytes, b.bytes);
        assert_eq!((ra.m2s_pos, ra.s2m_pos), (11, 8));
        assert_eq!((ra.m2s_pos, ra.s2m_pos), (rb.m2s_pos, rb.s2m_pos));
        assert_eq!(oa, (6, 3, false));
        assert_eq!(oa, ob);
        // Two M2S runs (split at the wrap) and one S2M run, against nine
        // single stores.
        assert_eq!((a.stores, b.stores), (3, 9));
        // The wrapped M2S descriptors are at slots 5, 6, 7, 0, 1, 2.
        assert_eq!(a.bytes[&(0x1000 + 16 * 5)], 1);
        assert_eq!(a.bytes[&0x1000], 4);
    }

    #[test]
    fn a_fault_stops_at_the_store_a_single_store_would_meet() {
        // The S2M ring faults from its second slot: the first packet's two
        // TX and one RX are stored, then the second packet's TX, and its RX
        // faults.
        let fault_at = 0x2000 + 16;
        let (a, ra, oa) = store(true, fault_at, 8, 0);
        let (b, rb, ob) = store(false, fault_at, 8, 0);
        assert_eq!(oa, (3, 1, true));
        assert_eq!(oa, ob);
        assert_eq!(a.bytes, b.bytes);
        assert_eq!((ra.m2s_pos, ra.s2m_pos), (3, 1));
        assert_eq!((rb.m2s_pos, rb.s2m_pos), (3, 1));
        assert!(!a.bytes.contains_key(&(0x1000 + 16 * 3)));
    }

    #[test]
    fn more_descriptors_than_the_ring_holds_are_stored_one_by_one() {
        // A 4-slot ring gets 6 M2S descriptors: stored one by one, the
        // last two over slots 0 and 1 again, as the single stores do.
        let (a, ra, oa) = store(true, u64::MAX, 4, 0);
        let (b, _, ob) = store(false, u64::MAX, 4, 0);
        assert_eq!(a.bytes, b.bytes);
        assert_eq!(oa, ob);
        assert_eq!(ra.m2s_pos, 6);
        assert_eq!(a.stores, 9);
        assert_eq!(a.bytes[&0x1000], 5);
    }
}
