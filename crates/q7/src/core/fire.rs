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
            let pairs = ep
                .pairs
                .iter()
                .map(|p| (PacketTx::Listed(p.sources()), (p.dst, p.dst_len_bytes)));
            let gathers = ep
                .gathers
                .iter()
                .map(|g| (PacketTx::Pieces(&g.tx, g.word1), (g.dst, g.dst_len_bytes)));
            let sems = ep.sem_writes.iter().map(|&(at, v)| {
                let src = crate::plan::TxSource::data(
                    payload_cfg.payload(dge, v),
                    4,
                    dma_abi::DEFAULT_COPY_WORD1,
                );
                (PacketTx::Listed(crate::plan::TxSources::one(src)), (at, 4))
            });
            let packets = pairs.chain(gathers).chain(sems);
            let (mut count, mut m2s_count) = (0u32, 0u32);
            let mut fault = None;
            'packets: for (txs, (dst, dst_len)) in packets {
                let n = txs.len();
                for k in 0..n {
                    let s = txs.get(k);
                    let (src, len, word1) = (s.addr, s.len_bytes, s.word1);
                    let (mi, mid) = r.slot(r.m2s_pos);
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
                        fault = Some(format!("descriptor length {len} out of range"));
                        break 'packets;
                    };
                    if let Err(msg) = bus
                        .write_bytes(r.addrs.m2s_ring + DESC_BYTES * u64::from(mi), &m.to_bytes())
                    {
                        fault = Some(msg);
                        break 'packets;
                    }
                    r.m2s_pos += 1;
                    m2s_count += 1;
                }
                let (si, sid) = r.slot(r.s2m_pos);
                let Ok(s) = rx(dst_len, dst).map(|d| {
                    d.with_flags(Flags {
                        ring_id: sid,
                        ..Flags::default()
                    })
                }) else {
                    fault = Some(format!("descriptor length {dst_len} out of range"));
                    break;
                };
                if let Err(msg) =
                    bus.write_bytes(r.addrs.s2m_ring + DESC_BYTES * u64::from(si), &s.to_bytes())
                {
                    fault = Some(msg);
                    break;
                }
                r.s2m_pos += 1;
                count += 1;
            }
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
/// (at most three, inline) or a transpose gather's pieces.
enum PacketTx<'p> {
    Listed(crate::plan::TxSources),
    Pieces(&'p [(u64, u32)], u32),
}

impl PacketTx<'_> {
    fn len(&self) -> usize {
        match self {
            PacketTx::Listed(s) => s.len(),
            PacketTx::Pieces(p, _) => p.len(),
        }
    }

    fn get(&self, k: usize) -> crate::plan::TxSource {
        match self {
            PacketTx::Listed(s) => s.get(k).copied().unwrap_or_default(),
            PacketTx::Pieces(p, word1) => p.get(k).map_or_else(Default::default, |&(a, l)| {
                crate::plan::TxSource::data(a, l, *word1)
            }),
        }
    }
}
