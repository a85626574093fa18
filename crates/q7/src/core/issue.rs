//! Issuing the word at the head of the queue: the EVENTS gate, the DGE
//! mailbox gate, planning, ring programming and the room check
//! (docs/firmware.md).

use super::*;

/// Registers and table entries read for one plan.
pub(super) struct Snapshot<'a> {
    pub(super) regs: [u32; 64],
    pub(super) table: Vec<(u8, u64)>,
    pub(super) layout: &'a CoreLayout,
    pub(super) bus: &'a mut dyn FwBus,
    /// Whether events are recorded: only then are micro-ops shown.
    pub(super) trace: bool,
}

impl Operands for Snapshot<'_> {
    fn reg(&self, n: u8) -> u32 {
        self.regs[usize::from(n & 63)]
    }
    fn table_entry(&self, e: u8) -> u64 {
        self.table
            .iter()
            .find(|(i, _)| *i == e)
            .map_or(0, |(_, v)| *v)
    }
    fn partition_of(&self, addr: u64) -> Option<u16> {
        self.bus.partition_of(addr)
    }
    fn partition_span(&self, addr: u64) -> (Option<u16>, Option<crate::PartitionSpan>) {
        self.bus.partition_span(addr)
    }
    fn micro_ops(&self) -> bool {
        self.trace
    }
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        self.bus.partition_stride(addr)
    }
    fn partition_addr(&self, target: soc_map::PartitionTarget) -> u64 {
        self.layout.partition_addr(target)
    }
    fn sem_inc_addr(&self, idx: u8) -> u64 {
        self.layout.sem_inc(idx)
    }
    fn peer(&self, tpb: u32) -> Option<crate::layout::PeerLayout> {
        self.layout.peers.get(usize::try_from(tpb).ok()?).copied()
    }
    fn read_u32s(&mut self, addr: u64, n: usize) -> Result<Vec<u32>, String> {
        let mut buf = vec![0u8; n * 4];
        self.bus.read_bytes(addr, &mut buf)?;
        Ok(buf
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// The address-table entries the word's source and destination operands
/// name, in that order.
pub(super) fn table_entries(word: &InstWord) -> impl Iterator<Item = u8> + use<> {
    let addrs = match word {
        InstWord::Direct2d(w) => Some([w.src_start_addr, w.dst_start_addr]),
        InstWord::Indirect1d(w) => Some([w.src_start_addr, w.dst_start_addr]),
        InstWord::Direct2dXpose(w) => Some([w.src_start_addr, w.dst_start_addr]),
        InstWord::GatherXpose(w) => Some([w.src_start_addr, w.dst_start_addr]),
        _ => None,
    };
    addrs.into_iter().flatten().filter_map(|a| match a {
        soc_map::Addr8::Table { entry, .. } => Some(entry),
        _ => None,
    })
}

/// The notification queues software configured on engine `e` (NQ_SIZE
/// non-zero), each as a log line saying the firmware writes no records
/// into it: the NOTIFIC record's fields are known ({dma_map:16,
/// num_packets:12, dma_group_id:1}) but not its bit layout, size, phase
/// bit or trigger (docs/firmware.md "Not modelled yet").
pub(super) fn notification_queues(
    bus: &mut dyn FwBus,
    layout: &CoreLayout,
    e: crate::layout::EngineLayout,
) -> Vec<String> {
    let Some(block) = e.notific else {
        return Vec::new();
    };
    let r = layout.regs;
    (0..r.nq_count)
        .filter_map(|i| {
            let at = block + u64::from(i) * r.nq_stride;
            let size = bus.read32(at + r.nq_size).ok().filter(|&s| s != 0)?;
            let lo = bus.read32(at + r.nq_base_lo).unwrap_or(0);
            let hi = bus.read32(at + r.nq_base_hi).unwrap_or(0);
            let base = u64::from(lo) | (u64::from(hi) << 32);
            Some(format!(
                "eng{} notification queue {i} is configured (base {base:#x}, size {size}): the \
                 model writes no NOTIFIC records into it (record layout unpublished); words \
                 complete through their semaphores",
                e.id
            ))
        })
        .collect()
}

/// Arms queue `queue` of engine `e` (the HAL/driver arming of P9.1
/// §5.1, docs/references/driver.md §2.9): ring bases and lengths, the completion rings
/// (the M2S one only with `m2s_comp`; COMP_CFG bit 0 set, its other bits
/// kept — S2M resets to 0xf, P9.1 §4.2), Q_CFG EN_PREF and
/// EN_SCHEDULING/EN_STREAM, M2S CFG_LEN at the driver's value, both
/// directions to NORMAL. The producer positions are seeded from the
/// hardware tails.
pub(super) fn arm_queue_pair(
    bus: &mut dyn FwBus,
    layout: &CoreLayout,
    e: crate::layout::EngineLayout,
    queue: u8,
    len: u32,
    addrs: RingAddrs,
    m2s_comp: bool,
) -> Result<Rings, String> {
    let r = layout.regs;
    let (mq, sq) = (e.m2s_q(queue), e.s2m_q(queue));
    let lo = |a: u64| a as u32;
    let hi = |a: u64| (a >> 32) as u32;
    let mut writes = vec![
        (mq + r.drbp_low, lo(addrs.m2s_ring)),
        (mq + r.drbp_high, hi(addrs.m2s_ring)),
        (mq + r.drl, len),
    ];
    if m2s_comp {
        writes.push((mq + r.crbp_low, lo(addrs.m2s_comp)));
        writes.push((mq + r.crbp_high, hi(addrs.m2s_comp)));
    }
    writes.extend([
        (sq + r.drbp_low, lo(addrs.s2m_ring)),
        (sq + r.drbp_high, hi(addrs.s2m_ring)),
        (sq + r.drl, len),
        (sq + r.crbp_low, lo(addrs.s2m_comp)),
        (sq + r.crbp_high, hi(addrs.s2m_comp)),
    ]);
    for (a, v) in writes {
        bus.write32(a, v)?;
    }
    let mut rmw = vec![
        (sq + r.s2m_comp_cfg, 1),
        (mq + r.q_cfg, 0x3_0000),
        (sq + r.q_cfg, 0x3_0000),
    ];
    if m2s_comp {
        rmw.insert(0, (mq + r.m2s_comp_cfg, 1));
    }
    for (a, bits) in rmw {
        let v = bus.read32(a).unwrap_or(0);
        bus.write32(a, v | bits)?;
    }
    bus.write32(e.m2s_unit + r.m2s_cfg_len, 0x010f_ffff)?; // driver value (docs/references/driver.md §2.7)
    bus.write32(e.m2s_unit + r.m2s_change_state, 1)?;
    bus.write32(e.s2m_unit + r.s2m_change_state, 1)?;
    let seed = |v: u32| {
        let id = u64::from(v >> 30);
        ((id + 3) & 3) * u64::from(len) + u64::from(v & 0xFF_FFFF) % u64::from(len)
    };
    Ok(Rings {
        queue,
        len,
        addrs,
        m2s_pos: seed(bus.read32(mq + r.drtp).unwrap_or(0x4000_0000)),
        s2m_pos: seed(bus.read32(sq + r.drtp).unwrap_or(0x4000_0000)),
    })
}

/// DGE mailboxes: 4 entries of {u8 reserved, u8 priority, u16 bitmask} at
/// the core's DRAM + 0x28 (docs/references/wiki.md §D.4; P9.1 §5.4 "core_base + 40").
pub(super) const MAILBOXES: usize = 4;
pub(super) const MAILBOX_OFFSET: u64 = 0x28;

/// The engine slots whose DGE contexts a word uses: the engines
/// MEMCOPY_DMA_CFG allows, or all 16 for RDMA_DESC_GEN, whose every engine
/// writes the local semaphore (docs/firmware.md "RDMA_DESC_GEN /
/// RDMA_DESC_START").
pub(super) fn dge_context_slots(
    word: &InstWord,
    cfg: &DgeConfig,
) -> impl Iterator<Item = u8> + use<> {
    let all = DgeConfig {
        engine_mask: u16::MAX, // the 16 engines of ENGINES_PER_CORE
        ..*cfg
    };
    match word {
        InstWord::RdmaDescGen(_) => all.slots(),
        _ => cfg.slots(),
    }
}

/// The word's `dma_configs.priority_class` (the RDMA words have none).
pub(super) fn priority_class(word: &InstWord) -> Option<u8> {
    match word {
        InstWord::Direct2d(w) => Some(w.dma_configs.priority_class),
        InstWord::Indirect1d(w) => Some(w.dma_configs.priority_class),
        InstWord::Direct2dXpose(w) => Some(w.dma_configs.priority_class),
        InstWord::GatherXpose(w) => Some(w.dma_configs.priority_class),
        InstWord::RdmaDescGen(_) | InstWord::RdmaDescStart(_) => None,
    }
}

impl Q7Core {
    /// The DGE engine mask the mailboxes leave for `priority` (docs/references/wiki.md
    /// §D.4): start from all 16 engines; every mailbox whose priority is
    /// below the operation's ANDs in its bitmask. Returns the mask and the
    /// mailboxes that masked.
    pub(super) fn mailbox_mask(&self, bus: &mut dyn FwBus, priority: u8) -> (u16, Vec<String>) {
        let mut raw = [0u8; 16];
        let _ = bus.read_bytes(self.layout.q7_dram + MAILBOX_OFFSET, &mut raw);
        let mut mask = 0xFFFFu16;
        let mut why = Vec::new();
        for (i, e) in raw.chunks_exact(4).enumerate() {
            let (prio, bits) = (e[1], u16::from_le_bytes([e[2], e[3]]));
            if priority > prio && bits != 0xFFFF {
                mask &= bits;
                why.push(format!("mailbox {i} (priority {prio}, mask {bits:#06x})"));
            }
        }
        (mask, why)
    }

    /// Tries to start the word at the head of the queue; false when nothing
    /// more can happen now.
    pub(super) fn try_issue(&mut self, now: Cycle, bus: &mut dyn FwBus, t: &TimingConfig) -> bool {
        self.blocked_on_space = false;
        let Some(front) = self.queue.front() else {
            return false;
        };
        if let Some(why) = &self.halted {
            let m = format!("{}: the firmware stopped at {why}", front.work.name());
            return self.reject_front(now, m);
        }
        let word = match front.work {
            Work::Inst(w) => w,
            Work::Call(call) => return self.start_call(now, bus, t, call),
        };
        let ev = *word.events();
        // A word released by a semaphore change starts once the sequencer's
        // semaphore wake is over (docs/timing.md, `q7_sem_wake_cycles`).
        let (released_at, gate_passed) = (front.released_at, front.gate_passed);
        if let Some(at) = released_at {
            if now < at {
                return false;
            }
            if let Some(q) = self.queue.front_mut() {
                q.released_at = None;
                q.gate_passed = true;
            }
        }
        let gate_passed = gate_passed || released_at.is_some();
        // EVENTS gate (docs/references/wiki.md §C.3).
        let threshold_reg = |v: u32| (v & 63) as u8;
        let cmp: Option<(WaitCompare, bool)> = match ev.wait_mode {
            WaitMode::None => None,
            WaitMode::SemEqImm => Some((|a, b| a == b, false)),
            WaitMode::SemGtImm => Some((|a, b| a > b, false)),
            WaitMode::SemGeImm => Some((|a, b| a >= b, false)),
            WaitMode::SemEqReg => Some((|a, b| a == b, true)),
            WaitMode::SemGtReg => Some((|a, b| a > b, true)),
            WaitMode::SemGeReg => Some((|a, b| a >= b, true)),
            WaitMode::Other(code) => {
                return self.reject_front(
                    now,
                    format!(
                        "{}.events.wait_mode = {code:#04x}: not a wait mode the firmware knows",
                        word.kind().name()
                    ),
                );
            }
        };
        if let Some((f, from_reg)) = cmp.filter(|_| !gate_passed) {
            let threshold = if from_reg {
                bus.read32(self.layout.reg(threshold_reg(ev.semaphore_value)))
                    .unwrap_or(0)
            } else {
                ev.semaphore_value
            };
            if let Some(m) = self.sem_range(&word, "wait_idx", ev.wait_idx) {
                return self.reject_front(now, m);
            }
            let value = bus.read32(self.layout.sem_read(ev.wait_idx)).unwrap_or(0);
            if !f(value, threshold) {
                let report = self.queue.front().is_some_and(|q| !q.waiting_reported);
                if report {
                    if let Some(q) = self.queue.front_mut() {
                        q.waiting_reported = true;
                    }
                    let tag = front_tag(&self.queue);
                    self.event(
                        now,
                        &tag,
                        FwEventKind::Waiting {
                            sem: ev.wait_idx,
                            mode: ev.wait_mode.name().unwrap_or("?").to_string(),
                            threshold,
                            value,
                        },
                    );
                }
                return false;
            }
            // The gate passes. A word that waited starts after the
            // semaphore wake; one whose gate passed at once starts now.
            let waited = self.queue.front().is_some_and(|q| q.waiting_reported);
            if waited && t.q7_sem_wake_cycles > 0 {
                let at = Cycle(now.0 + t.q7_sem_wake_cycles);
                if let Some(q) = self.queue.front_mut() {
                    q.released_at = Some(at);
                }
                let tag = front_tag(&self.queue);
                self.event(
                    now,
                    &tag,
                    FwEventKind::Released {
                        sem: ev.wait_idx,
                        mode: ev.wait_mode.name().unwrap_or("?").to_string(),
                        threshold,
                        value,
                        start_cycle: at.0,
                    },
                );
                return false;
            }
        }
        let update = match ev.update_mode {
            UpdateMode::None => None,
            UpdateMode::Other(code) => {
                return self.reject_front(now, format!(
                        "{}.events.update_mode = {code:#04x}: not an update mode the firmware knows",
                        word.kind().name()
                    ));
            }
            m => Some((m, ev.update_idx, ev.semaphore_value)),
        };
        if update.is_some()
            && let Some(m) = self.sem_range(&word, "update_idx", ev.update_idx)
        {
            return self.reject_front(now, m);
        }
        // RDMA_DESC_START: no operands; it rings what GEN wrote (docs/references/wiki.md
        // §E.4: RX first, then TX).
        if word.kind() == InstKind::RdmaDescStart {
            let Some(q) = self.queue.pop_front() else {
                return false;
            };
            if self.unrung.is_empty() {
                self.reject(
                    now,
                    &q,
                    "RDMA_DESC_START: no RDMA_DESC_GEN descriptors to start \
                     (DescriptorStream wrote 0 descriptors)"
                        .into(),
                );
                return true;
            }
            let plan = Plan {
                kind: InstKind::RdmaDescStart,
                engines: Vec::new(),
                out_of_bounds: Vec::new(),
                index_faults: Vec::new(),
                duplicate_dst: Vec::new(),
                log: Vec::new(),
                ring_now: true,
                elements: None,
            };
            self.event(
                now,
                &q.tag,
                FwEventKind::Generating {
                    kind: "RDMA_DESC_START".into(),
                    engines: self.unrung.len(),
                    descriptors: 0,
                    bytes: 0,
                    cycles: t.q7_decode_cycles,
                },
            );
            self.stage = Stage::Generating {
                until: Cycle(now.0 + t.q7_decode_cycles),
                plan: Box::new(plan),
                tag: q.tag,
                update,
            };
            return true;
        }
        // DGE configuration (local registers 39 and 40).
        let cfg = DgeConfig::from_regs(
            bus.read32(self.layout.carveout_cfg).unwrap_or(0),
            bus.read32(self.layout.dma_cfg).unwrap_or(0),
        );
        if let Err(m) = cfg.validate(self.layout.dge_memory_bytes) {
            return self.reject_front(now, m);
        }
        // The DGE mailbox / priority-class gate (P9.1 §5.4, docs/references/wiki.md
        // §D.4) narrows the engines MEMCOPY_DMA_CFG allows.
        let mut cfg = cfg;
        if let Some(priority) = priority_class(&word) {
            let (mask, why) = self.mailbox_mask(bus, priority);
            if mask != 0xFFFF {
                let tag = front_tag(&self.queue);
                let narrowed = cfg.engine_mask & mask;
                let reported = self
                    .queue
                    .front_mut()
                    .map(|q| q.mailbox_reported.replace(narrowed));
                if reported != Some(Some(narrowed)) {
                    self.event(
                        now,
                        &tag,
                        FwEventKind::MailboxGate {
                            priority_class: priority,
                            mailboxes: why.join(", "),
                            engine_mask: format!("{:#06x} -> {narrowed:#06x}", cfg.engine_mask),
                        },
                    );
                }
                if narrowed == 0 {
                    return self.reject_front(now, format!(
                            "{}.dma_configs.priority_class = {priority}: the DGE mailboxes leave no engine of MEMCOPY_DMA_CFG.DMA_ENGINE_MASK {:#06x}",
                            word.kind().name(),
                            cfg.engine_mask
                        ));
                }
                cfg.engine_mask = narrowed;
            }
        }
        // DGE context init (docs/firmware.md "What is modelled"): the
        // firmware arms the queue pair of every engine the configuration
        // gives the word before it expands it, so a word refused while
        // expanding (its share does not fit the ring, say) leaves them
        // armed and idle, never aborted.
        let Some(queue_id) = cfg.queue() else {
            return false;
        };
        // The word's tag names a ring programming in the events: copied
        // only when a ring is programmed.
        let mut front = None;
        for slot in dge_context_slots(&word, &cfg) {
            if self.rings_armed(&cfg, slot, queue_id) {
                continue;
            }
            let tag = front.get_or_insert_with(|| front_tag(&self.queue));
            if let Err(m) = self.ensure_rings(now, bus, &cfg, slot, queue_id, tag) {
                return self.reject_front(now, m);
            }
        }
        let mut regs = [0u32; 64];
        if self.layout.reg_stride == 4 {
            bus.read32_run(self.layout.reg(0), &mut regs);
        } else {
            for (n, r) in regs.iter_mut().enumerate() {
                *r = bus.read32(self.layout.reg(n as u8)).unwrap_or(0);
            }
        }
        let mut table = Vec::new();
        for e in table_entries(&word) {
            let lo = bus.read32(self.layout.table(e)).unwrap_or(0);
            let hi = bus.read32(self.layout.table(e) + 4).unwrap_or(0);
            table.push((e, u64::from(lo) | (u64::from(hi) << 32)));
        }
        let plan = {
            let mut snap = Snapshot {
                regs,
                table,
                layout: &self.layout,
                bus: &mut *bus,
                trace: self.trace,
            };
            let spare = std::mem::take(&mut self.spare_engines);
            expand_reusing(&word, &cfg, &mut snap, spare)
        };
        let mut plan = match plan {
            Ok(p) => p,
            Err(e) => {
                return self.reject_front(now, e.to_string());
            }
        };
        // RDMA_DESC_GEN's descriptors stay in the ring until a START rings
        // them, so GENs between two STARTs must fit the ring together: one
        // that cannot is refused, not left waiting for room only the START
        // queued behind it would free.
        if plan.kind == InstKind::RdmaDescGen
            && let Some(m) = self.unstarted_overflow(&plan)
        {
            return self.reject_front(now, m);
        }
        // Rings: armed above; check room. The counts add up to
        // [`Plan::descriptors`].
        let mut descriptors = 0u64;
        for ep in &plan.engines {
            let (m2s, s2m) = (ep.m2s_descs(), ep.s2m_descs());
            if !self.has_room(bus, ep.slot, m2s, s2m) {
                self.blocked_on_space = true;
                self.space_wait = Some((ep.slot, m2s, s2m));
                return false;
            }
            descriptors += m2s + s2m;
        }
        let Some(q) = self.queue.pop_front() else {
            return false;
        };
        let cycles = t.q7_decode_cycles + t.q7_desc_write_cycles * descriptors;
        let kind = word.kind();
        self.event(
            now,
            &q.tag,
            FwEventKind::Generating {
                kind: kind.name().into(),
                engines: plan.engines.len(),
                descriptors: descriptors as usize,
                bytes: plan.bytes(),
                cycles,
            },
        );
        // The firmware's own log lines (docs/firmware.md "Firmware log
        // lines"): the plan's (bounds) and RDMA_DESC_GEN's.
        let mut log = std::mem::take(&mut plan.log);
        if let InstWord::RdmaDescGen(g) = &word {
            log.extend(self.rdma_gen_log(g, queue_id));
        }
        for text in log {
            self.event(now, &q.tag, FwEventKind::Log { text });
        }
        for oob in &plan.out_of_bounds {
            self.event(
                now,
                &q.tag,
                FwEventKind::OutOfBounds {
                    side: oob.side.into(),
                    addr: format!("{:#x}", oob.addr),
                    len_bytes: oob.len_bytes,
                    reg: oob.reg,
                    limit: format!("{:#x}", oob.limit),
                    notify: oob.notify,
                },
            );
        }
        for f in &plan.index_faults {
            self.event(
                now,
                &q.tag,
                FwEventKind::IndexOutOfBounds {
                    leg: f.leg.into(),
                    position: f.position,
                    index: f.index,
                    bound: f.bound,
                    error: f.is_error,
                },
            );
        }
        // Error notifications (bound checks with the notification on,
        // index faults marked as errors): the record they would write is
        // not published, so the firmware says so instead of writing one
        // (docs/firmware.md "Not modelled yet").
        let notified = plan.out_of_bounds.iter().filter(|o| o.notify).count()
            + plan.index_faults.iter().filter(|f| f.is_error).count();
        if notified > 0 {
            self.event(
                now,
                &q.tag,
                FwEventKind::Log {
                    text: format!(
                        "error notification for {notified} fault(s) not delivered: the DGE \
                         notification record ({{dma_map:16, num_packets:12, dma_group_id:1}}) has \
                         no published layout or queue; the word's semaphores still complete it"
                    ),
                },
            );
        }
        for &(first, later, index) in &plan.duplicate_dst {
            bus.note_scatter_race(&q.tag, first, later, index);
            self.event(
                now,
                &q.tag,
                FwEventKind::DuplicateScatter {
                    first,
                    later,
                    index,
                },
            );
        }
        self.stage = Stage::Generating {
            until: Cycle(now.0 + cycles),
            plan: Box::new(plan),
            tag: q.tag,
            update,
        };
        true
    }

    /// RDMA_DESC_GEN's firmware log lines (docs/references/wiki.md §E.2, §E.6): the
    /// parameters, then the destination after the routing fold (no fold on
    /// one device: routing id 0). `[%s]` is unpublished; the model prints
    /// the generating core's role, TX.
    pub(super) fn rdma_gen_log(&self, g: &dma_abi::inst::RdmaDescGen, queue: u8) -> Vec<String> {
        let remote = g.remote_core_id.0;
        let dst_addr = match g.dst_addr {
            soc_map::Addr4::Immediate { offset, .. } => offset
                .lane(0)
                .ok()
                .zip(
                    usize::try_from(remote)
                        .ok()
                        .and_then(|r| self.layout.peers.get(r)),
                )
                .map_or(0, |(t, p)| p.partition_addr(t)),
            _ => 0,
        };
        vec![
            format!(
                "rdma_desc_gen [TX] ring_num={queue}, tpb_idx={}, free_dim_bytes={}, \
                 remote_tpb_idx={remote}, routing_id={}, dma_mask={:#x}",
                self.layout.tpb, g.free_dim_bytes, g.remote_routing_id.0, g.dma_engine_mask.0
            ),
            format!(
                "rdma_desc_gen [TX] after remote_routing_id=${}, dst_addr={dst_addr:#x}, \
                 n_active_dmas={}",
                g.remote_routing_id.0,
                g.dma_engine_mask.0.count_ones()
            ),
        ]
    }

    /// Why `plan` (an RDMA_DESC_GEN) can never fit: an engine whose ring
    /// would hold more descriptors not yet started than it has entries.
    pub(super) fn unstarted_overflow(&self, plan: &Plan) -> Option<String> {
        plan.engines.iter().find_map(|ep| {
            let len = u64::from(self.rings.get(usize::from(ep.slot))?.as_ref()?.len);
            let (m, s) = self
                .unrung
                .iter()
                .find(|(slot, _, _)| *slot == ep.slot)
                .map_or((0, 0), |&(_, m, s)| (u64::from(m), u64::from(s)));
            let need = (m + ep.m2s_descs()).max(s + ep.s2m_descs());
            (need > len).then(|| {
                format!(
                    "RDMA_DESC_GEN: engine slot {} would hold {need} descriptors not yet started \
                     ({} from earlier GENs), more than its ring of {len} \
                     (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS); an RDMA_DESC_START must ring them first",
                    ep.slot,
                    m.max(s)
                )
            })
        })
    }

    /// Whether the rings of `slot` are programmed as `cfg` and `queue`
    /// give them (then [`Q7Core::ensure_rings`] does nothing).
    pub(super) fn rings_armed(&self, cfg: &DgeConfig, slot: u8, queue: u8) -> bool {
        let len = u32::from(cfg.carveout_size_descs);
        matches!(
            self.rings.get(usize::from(slot)),
            Some(Some(r)) if r.queue == queue
                && r.len == len
                && r.addrs == cfg.rings(self.layout.dge_memory, slot)
        )
    }

    /// Programs the rings of `slot` on first use (DGE context init).
    pub(super) fn ensure_rings(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        cfg: &DgeConfig,
        slot: u8,
        queue: u8,
        tag: &InstTag,
    ) -> Result<(), String> {
        let len = u32::from(cfg.carveout_size_descs);
        let addrs = cfg.rings(self.layout.dge_memory, slot);
        if self.rings_armed(cfg, slot, queue) {
            return Ok(());
        }
        let Some(e) = self.layout.engines.get(usize::from(slot)).copied() else {
            return Err(format!("engine slot {slot}: the core has no such engine"));
        };
        // Payload table: value v at payload + 4v.
        let mut table = Vec::with_capacity(PAYLOAD_ENTRIES as usize * 4);
        for v in 0..PAYLOAD_ENTRIES as u32 {
            table.extend_from_slice(&v.to_le_bytes());
        }
        bus.write_bytes(cfg.payload(self.layout.dge_memory, 0), &table)
            .map_err(|m| format!("payload table: {m}"))?;
        let rings = arm_queue_pair(bus, &self.layout, e, queue, len, addrs, true)
            .map_err(|m| format!("DGE context init of engine {}: {m}", e.id))?;
        self.event(
            now,
            tag,
            FwEventKind::RingsInit {
                engine: e.id,
                queue,
                ring_descs: len,
                m2s_ring: format!("{:#x}", addrs.m2s_ring),
                s2m_ring: format!("{:#x}", addrs.s2m_ring),
            },
        );
        if let Some(s) = self.rings.get_mut(usize::from(slot)) {
            *s = Some(rings);
        }
        for text in notification_queues(bus, &self.layout, e) {
            self.event(now, tag, FwEventKind::Log { text });
        }
        Ok(())
    }

    pub(super) fn dge_payload(&self, bus: &mut dyn FwBus) -> DgeConfig {
        DgeConfig::from_regs(
            bus.read32(self.layout.carveout_cfg).unwrap_or(0),
            bus.read32(self.layout.dma_cfg).unwrap_or(0),
        )
    }

    /// Why semaphore `idx` named by `field` does not exist, if it does not.
    pub(super) fn sem_range(&self, word: &InstWord, field: &str, idx: u8) -> Option<String> {
        let n = self.layout.sem_count;
        (u32::from(idx) >= n).then(|| {
            format!(
                "{}.events.{field} = {idx}: the core has {n} semaphores",
                word.kind().name()
            )
        })
    }
}
