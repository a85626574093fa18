//! Firmware routines called by custom-op code: the
//! memcpy methods, the inline DMA path and the iDMA instruction cache
//! (docs/firmware.md).

use super::*;

/// A firmware routine called by custom-op code (P9.1 §5), queued in
/// program order with the instruction words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwCall {
    /// `neuron_memcpy(local, other, len, is_read)` through the selected
    /// method.
    Memcpy {
        /// Q7-local dataram address (0x80000..0x90000).
        local: u32,
        /// The other end: a SoC address.
        other: u64,
        /// Bytes.
        len: u64,
        /// True: `other` into the dataram; false: the dataram to `other`.
        is_read: bool,
    },
    /// `neuron_set_memcpy_method(m)`.
    SetMethod(u8),
    /// The iDMA instruction-cache init: `IRAM cache init, block_size`
    /// (P9.1 §7).
    IcacheInit {
        /// Bytes per cache line.
        block_size: u32,
    },
    /// `start_fill_siram`: refill `lines` cache lines from `fetch`.
    IcacheFill {
        /// SoC address of the first line's code.
        fetch: u64,
        /// Lines to fill.
        lines: u32,
    },
}

impl FwCall {
    pub(super) fn name(&self) -> &'static str {
        match self {
            FwCall::Memcpy { .. } => "neuron_memcpy",
            FwCall::SetMethod(_) => "neuron_set_memcpy_method",
            FwCall::IcacheInit { .. } => "iram_cache_init",
            FwCall::IcacheFill { .. } => "start_fill_siram",
        }
    }
}

/// The inline path's state once initialised: the firmware's `_dma_ctx_t`,
/// mirrored to its scratch whenever it changes (docs/firmware.md).
#[derive(Clone, Copy, Debug)]
pub(super) struct InlineCtx {
    pub(super) dma: crate::inline::DmaCtx,
    /// The dataram's SoC address of local 0x80000.
    pub(super) dataram_soc: u64,
}

/// One `dma_data_transfer` in progress (P9.1 §5.1).
#[derive(Clone, Debug)]
pub(super) struct InlineXfer {
    pub(super) tag: InstTag,
    pub(super) local: u32,
    pub(super) other: u64,
    pub(super) len: u64,
    pub(super) is_read: bool,
    pub(super) off: u64,
    /// Busy-polling this completion slot for this tag.
    pub(super) wait: Option<(u32, u8)>,
    /// The anomaly last reported (reported again only when it changes).
    pub(super) last_anomaly: Option<String>,
}

/// Stores the inline path's `_dma_ctx_t` at scratch + 0x200.
pub(super) fn write_dma_ctx(
    bus: &mut dyn FwBus,
    scratch: u64,
    ctx: &crate::inline::DmaCtx,
) -> Result<(), String> {
    use zerocopy::IntoBytes;
    bus.write_bytes(scratch + u64::from(crate::inline::CTX), ctx.as_bytes())
}

impl Q7Core {
    /// Starts a firmware call at the head of the queue (P9.1 §5).
    pub(super) fn start_call(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        t: &TimingConfig,
        call: FwCall,
    ) -> bool {
        use crate::inline::{self as il, MethodSet};
        let Some(q) = self.queue.pop_front() else {
            return false;
        };
        match call {
            FwCall::IcacheInit { block_size } => {
                if let Err(m) = crate::idma::check_block_size(block_size) {
                    self.reject(now, &q, m);
                    return true;
                }
                match self.icache_init(bus, block_size) {
                    Ok(text) => {
                        self.stats.entry(call.name()).or_default().issued += 1;
                        self.event(now, &q.tag, FwEventKind::Icache { text });
                    }
                    Err(m) => self.reject(now, &q, format!("IRAM cache init: {m}")),
                }
                true
            }
            FwCall::IcacheFill { fetch, lines } => {
                match self.icache_fill(now, bus, &q.tag, fetch, lines) {
                    Ok((target, bytes)) => {
                        self.stage = Stage::Icache {
                            tag: q.tag,
                            target,
                            bytes,
                        };
                    }
                    Err(m) => self.reject(now, &q, format!("start_fill_siram: {m}")),
                }
                true
            }
            FwCall::SetMethod(m) => {
                let outcome = match il::set_method(m) {
                    MethodSet::Ok => {
                        self.memcpy_method = m;
                        format!("method {m} = {}", il::METHOD_NAMES[usize::from(m)])
                    }
                    MethodSet::LatentOob => {
                        self.memcpy_method = m;
                        format!(
                            "GOTCHA: the guard (m >= 4) accepts {m} = MAX_METHODS; \
                             the next neuron_memcpy reads table[{m}], past the {}-entry table",
                            il::MAX_METHODS
                        )
                    }
                    MethodSet::Refused => format!(
                        "refused by the guard (m >= 4); the method stays {}",
                        self.memcpy_method
                    ),
                };
                self.stats.entry(call.name()).or_default().issued += 1;
                self.event(now, &q.tag, FwEventKind::MethodSet { method: m, outcome });
                true
            }
            FwCall::Memcpy {
                local,
                other,
                len,
                is_read,
            } => {
                let end = u64::from(local) + len;
                if !il::DATARAM_LOCAL.contains(&local) || end > u64::from(il::DATARAM_LOCAL.end) {
                    self.reject(
                        now,
                        &q,
                        format!(
                            "neuron_memcpy: local {local:#x} + {len:#x} is outside the dataram window \
                             [{:#x}, {:#x}) that dram_addr_to_soc_addr maps",
                            il::DATARAM_LOCAL.start,
                            il::DATARAM_LOCAL.end
                        ),
                    );
                    return true;
                }
                let m = self.memcpy_method;
                if m >= il::MAX_METHODS {
                    self.reject(
                        now,
                        &q,
                        format!(
                            "neuron_memcpy: method {m} dispatches through table[{m}], past the \
                             {}-entry method table (an out-of-bounds function pointer; \
                             the model refuses the call)",
                            il::MAX_METHODS
                        ),
                    );
                    return true;
                }
                let dataram = self.layout.dataram_soc + u64::from(local - il::DATARAM_LOCAL.start);
                if m < il::DEFAULT_METHOD {
                    // The Q7 copies by itself: only through its own
                    // apertures (no PSUM, docs/references/design.md §2).
                    let (src, dst) = if is_read {
                        (other, dataram)
                    } else {
                        (dataram, other)
                    };
                    if let Err(e) = bus.core_can_reach(other, len) {
                        self.reject(
                            now,
                            &q,
                            format!("neuron_memcpy ({}): {e}", il::METHOD_NAMES[usize::from(m)]),
                        );
                        return true;
                    }
                    let rate = if m == 0 {
                        t.q7_scalar_copy_bytes_per_cycle
                    } else {
                        t.q7_vector_copy_bytes_per_cycle
                    }
                    .max(1);
                    // The bytes move `rate` a cycle (`Q7Core::core_copy_to`).
                    self.stage = Stage::CoreCopy {
                        until: Cycle(now.0 + len.div_ceil(rate)),
                        tag: q.tag,
                        method: m,
                        bytes: len,
                        start: now,
                        rate,
                        src,
                        dst,
                        done: 0,
                    };
                    return true;
                }
                if let Err(e) = self.inline_init(now, bus, &q.tag) {
                    self.reject(now, &q, format!("init_dma_queue: {e}"));
                    return true;
                }
                self.stage = Stage::Inline(Box::new(InlineXfer {
                    tag: q.tag,
                    local,
                    other,
                    len,
                    is_read,
                    off: 0,
                    wait: None,
                    last_anomaly: None,
                }));
                true
            }
        }
    }

    /// `IRAM cache init`: arms the iDMA's ring pair (queue 14 of the core's
    /// first engine, 32-entry rings in the Q7 DRAM).
    pub(super) fn icache_init(
        &mut self,
        bus: &mut dyn FwBus,
        block_size: u32,
    ) -> Result<String, String> {
        use crate::idma as id;
        let Some(e) = self.layout.engines.first().copied() else {
            return Err("the core has no engine".into());
        };
        let dram = self.layout.q7_dram;
        let (m_ring, s_ring, comp) = (
            dram + id::M2S_RING,
            dram + id::S2M_RING,
            dram + id::COMP_RING,
        );
        let addrs = RingAddrs {
            m2s_ring: m_ring,
            s2m_ring: s_ring,
            m2s_comp: 0,
            s2m_comp: comp,
        };
        let rings = arm_queue_pair(
            bus,
            &self.layout,
            e,
            id::IDMA_QUEUE,
            id::RING_DESCS,
            addrs,
            false,
        )?;
        self.icache = Some((block_size, rings));
        Ok(format!(
            "IRAM cache init, block_size={block_size:#x} (eng{}.q{}, rings {m_ring:#x} / {s_ring:#x})",
            e.id,
            id::IDMA_QUEUE
        ))
    }

    /// `start_fill_siram`: `DramRingDMA::allocate` the slots, write one
    /// descriptor pair per line, `submit_pending` (both doorbells).
    /// Returns the S2M position the fill completes at, and its bytes.
    pub(super) fn icache_fill(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        tag: &InstTag,
        fetch: u64,
        lines: u32,
    ) -> Result<(u64, u64), String> {
        use crate::idma as id;
        let Some((block, mut r)) = self.icache.clone() else {
            return Err("the iDMA is not initialised (IRAM cache init first)".into());
        };
        if lines == 0 || lines >= id::RING_DESCS {
            return Err(format!(
                "{lines} lines: DramRingDMA::allocate takes 1..{} slots at a time",
                id::RING_DESCS
            ));
        }
        let e = self
            .layout
            .engines
            .first()
            .copied()
            .ok_or("the core has no engine")?;
        let regs = self.layout.regs;
        // The ring must have room (the previous fill has completed: the
        // firmware waits for it before the next call).
        let (first_slot, ring_id) = r.slot(r.m2s_pos);
        let submit = r.m2s_pos + u64::from(lines);
        let mut text = vec![
            format!("start_fill_siram: fetch_addr={fetch:#x}"),
            format!("DramRingDMA::allocate({lines}) submit={submit}"),
        ];
        for k in 0..u64::from(lines) {
            let src = fetch + k * u64::from(block);
            let dst =
                self.layout.q7_iram + id::line_offset(fetch, k, block, self.layout.q7_iram_bytes);
            let (mi, mid) = r.slot(r.m2s_pos);
            let (si, sid) = r.slot(r.s2m_pos);
            let m = tx(block, src, Flags::single(mid)).map_err(|e| e.to_string())?;
            let s = rx(block, dst)
                .map(|d| {
                    d.with_flags(Flags {
                        ring_id: sid,
                        ..Flags::default()
                    })
                })
                .map_err(|e| e.to_string())?;
            bus.write_bytes(r.addrs.m2s_ring + DESC_BYTES * u64::from(mi), &m.to_bytes())?;
            bus.write_bytes(r.addrs.s2m_ring + DESC_BYTES * u64::from(si), &s.to_bytes())?;
            r.m2s_pos += 1;
            r.s2m_pos += 1;
        }
        text.push(format!(
            "submit_pending: first_slot={first_slot} count={lines} submit={submit} ring_id={ring_id}"
        ));
        bus.write32(e.s2m_q(id::IDMA_QUEUE) + regs.drtp_inc, lines)?;
        bus.write32(e.m2s_q(id::IDMA_QUEUE) + regs.drtp_inc, lines)?;
        let target = r.s2m_pos;
        self.icache = Some((block, r));
        for line in text {
            self.event(now, tag, FwEventKind::Icache { text: line });
        }
        Ok((target, u64::from(lines) * u64::from(block)))
    }

    /// Polls the iDMA's S2M completion head; true once the fill is done.
    pub(super) fn poll_icache(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        tag: InstTag,
        target: u64,
        bytes: u64,
    ) -> bool {
        let done = self.icache.as_ref().and_then(|(_, r)| {
            let e = self.layout.engines.first()?;
            let v = bus.read32(e.s2m_q(r.queue) + self.layout.regs.crhp).ok()?;
            Some(r.done(r.s2m_pos, v))
        });
        if done.is_some_and(|d| d >= target) {
            let s = self.stats.entry("start_fill_siram").or_default();
            s.issued += 1;
            s.bytes += bytes;
            s.descriptors +=
                2 * bytes.div_ceil(u64::from(self.icache.as_ref().map_or(1, |(b, _)| *b)));
            self.event(
                now,
                &tag,
                FwEventKind::Icache {
                    text: format!("fill done: {bytes} bytes in IRAM"),
                },
            );
            true
        } else {
            self.stage = Stage::Icache { tag, target, bytes };
            false
        }
    }

    /// A core copy (methods 0/1) moves the bytes of every cycle up to
    /// `now`: those of cycle `c` — `rate` bytes from where the previous
    /// cycle stopped — are loaded and stored at `c`, so a reader sees them
    /// land in order and a store to the source before `c` is copied. True
    /// while the copy goes on; false when a load or store faulted: the call
    /// is refused there (the bytes before it stay) and the stage is idle.
    pub(super) fn core_copy_to(&mut self, now: Cycle, bus: &mut dyn FwBus) -> bool {
        let Stage::CoreCopy {
            start,
            rate,
            src,
            dst,
            bytes,
            done,
            method,
            ..
        } = &mut self.stage
        else {
            return true;
        };
        let visible = now
            .0
            .saturating_sub(start.0)
            .saturating_mul(*rate)
            .min(*bytes);
        if visible <= *done {
            return true;
        }
        let (from, n) = (*done, visible - *done);
        let (s, d, m) = (*src + from, *dst + from, *method);
        let mut buf = vec![0u8; n as usize];
        let moved = bus
            .read_payload(s, &mut buf)
            .and_then(|()| bus.write_bytes(d, &buf));
        // Timing-only: a copy of bytes no DMA moved is stale.
        if moved.is_ok() && bus.stale(s, n) {
            bus.mark_stale(d, n);
        }
        match moved {
            Ok(()) => {
                *done = visible;
                true
            }
            Err(e) => {
                let Stage::CoreCopy { tag, .. } = std::mem::take(&mut self.stage) else {
                    return false;
                };
                let reason = format!(
                    "neuron_memcpy ({}): {e}",
                    crate::inline::METHOD_NAMES[usize::from(m)]
                );
                self.stats.entry("neuron_memcpy").or_default().rejected += 1;
                self.refused(now, &tag, "neuron_memcpy", &reason);
                self.event(now, &tag, FwEventKind::Rejected { reason });
                false
            }
        }
    }

    pub(super) fn memcpy_done(&mut self, now: Cycle, tag: &InstTag, method: u8, bytes: u64) {
        let name = crate::inline::METHOD_NAMES
            .get(usize::from(method))
            .copied()
            .unwrap_or("?");
        let s = self.stats.entry("neuron_memcpy").or_default();
        s.issued += 1;
        s.bytes += bytes;
        self.event(
            now,
            tag,
            FwEventKind::MemcpyDone {
                method: name.into(),
                bytes,
            },
        );
    }

    /// `init_dma_queue` (P9.1 §5.1), once per core: the ring-config
    /// words, the three rings filled with 0xB8, the context, and the HAL
    /// arming of queue 15 of the core's first engine.
    pub(super) fn inline_init(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        tag: &InstTag,
    ) -> Result<(), String> {
        use crate::inline as il;
        if self.inline.is_some() {
            return Ok(());
        }
        // ASSERT(MEM_WINDOW0_LO == 0xF0000000): the APB window the
        // doorbell addresses assume. A failed assert stops the firmware.
        let window = bus.read32(self.layout.mem_window0_lo)?;
        if window != il::SUNDA_APB_BASE {
            let why = format!(
                "ASSERT(MEM_WINDOW0_LO == {:#010x}) in init_dma_queue: MEM_WINDOW0_LO = {window:#010x}",
                il::SUNDA_APB_BASE
            );
            self.halted = Some(why.clone());
            return Err(format!("{why}; the firmware stops"));
        }
        let dataram_soc = self.layout.dataram_soc;
        // Above the dataram window: the Q7 DRAM itself (docs/firmware.md).
        let scratch = self.layout.q7_dram + il::dram_offset(il::SCRATCH_LOCAL);
        for off in il::RING_CFG_OFFSETS {
            bus.write32(scratch + u64::from(off), 0x0C00_0000)?;
            bus.write32(scratch + u64::from(off) + 4, 3)?;
        }
        let ring_bytes = vec![il::RING_FILL; (il::RING_DEPTH * 16) as usize];
        for r in [il::TX_RING, il::COMP_RING, il::RX_RING] {
            bus.write_bytes(scratch + u64::from(r), &ring_bytes)?;
        }
        let Some(e) = self.layout.engines.first().copied() else {
            return Err("the core has no engine".into());
        };
        let regs = self.layout.regs;
        let (mq, sq) = (e.m2s_q(il::INLINE_QUEUE), e.s2m_q(il::INLINE_QUEUE));
        // ctx.m2s_inc_reg / s2m_inc_reg (the doorbells), the rings, tail 0,
        // ring id 1.
        let dma = il::DmaCtx::init(mq + regs.drtp_inc, sq + regs.drtp_inc, il::SCRATCH_LOCAL);
        write_dma_ctx(bus, scratch, &dma)?;
        let (tx, comp, rx) = (
            scratch + u64::from(il::TX_RING),
            scratch + u64::from(il::COMP_RING),
            scratch + u64::from(il::RX_RING),
        );
        // HAL arming: rings, completion ring on S2M only, queues on.
        let addrs = RingAddrs {
            m2s_ring: tx,
            s2m_ring: rx,
            m2s_comp: 0,
            s2m_comp: comp,
        };
        arm_queue_pair(
            bus,
            &self.layout,
            e,
            il::INLINE_QUEUE,
            il::RING_DEPTH,
            addrs,
            false,
        )?;
        // The leaked word0 flags (FIRST clear, LAST set) must not stop the
        // queue: the arming masks the FIRST/LAST-error abort (simulator
        // decision, docs/firmware.md) so each chunk is logged and runs.
        let am = e.gen_block + regs.sec_a_abort_mask;
        let v = bus.read32(am).unwrap_or(0);
        bus.write32(am, v | FIRST_LAST_ERRORS)?;
        self.inline = Some(InlineCtx { dma, dataram_soc });
        self.event(
            now,
            tag,
            FwEventKind::InlineInit {
                engine: e.id,
                queue: il::INLINE_QUEUE,
                rings: format!(
                    "tx {tx:#x}, comp {comp:#x}, rx {rx:#x} (4 x 16 B each, filled 0xB8)"
                ),
            },
        );
        Ok(())
    }

    /// One step of the inline path (P9.1 §5.1): poll, or fire the next
    /// chunk, or finish. Returns false when it must wait.
    pub(super) fn run_inline(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        mut x: InlineXfer,
    ) -> bool {
        use crate::inline as il;
        let Some(mut ctx) = self.inline else {
            return true;
        };
        let scratch = self.layout.q7_dram + il::dram_offset(il::SCRATCH_LOCAL);
        if let Some((slot, want)) = x.wait {
            // Busy-poll the completion entry's tag (byte 3 & 3).
            let mut w = [0u8; 4];
            let seen = bus
                .read_bytes(
                    scratch + u64::from(il::COMP_RING) + 16 * u64::from(slot),
                    &mut w,
                )
                .map(|()| dma_abi::gen_tag(u32::from_le_bytes(w)));
            let done = seen == Ok(want);
            if done {
                x.wait = None;
            }
            self.stage = Stage::Inline(Box::new(x));
            return done;
        }
        if x.off >= x.len {
            self.memcpy_done(now, &x.tag, il::DEFAULT_METHOD, x.len);
            return true;
        }
        let Some(e) = self.layout.engines.first().copied() else {
            return true;
        };
        let regs = self.layout.regs;
        let chunk = (x.len - x.off).min(il::CHUNK_BYTES);
        let dataram = ctx.dataram_soc + u64::from(x.local - il::DATARAM_LOCAL.start) + x.off;
        let (tx_ptr, rx_ptr) = if x.is_read {
            (x.other + x.off, dataram)
        } else {
            (dataram, x.other + x.off)
        };
        let slot = ctx.dma.tail();
        let ring_id = ctx.dma.ring_id();
        let mut word0s = [0u32; 2];
        for (k, (ring, ptr)) in [(il::TX_RING, tx_ptr), (il::RX_RING, rx_ptr)]
            .into_iter()
            .enumerate()
        {
            let at = scratch + u64::from(ring) + 16 * u64::from(slot);
            let mut old = [0u8; 4];
            let _ = bus.read_bytes(at, &mut old);
            let w0 = il::updated_word0(u32::from_le_bytes(old), chunk, ring_id);
            word0s[k] = w0;
            let _ = bus.write_bytes(at + 8, &ptr.to_le_bytes());
            let _ = bus.write_bytes(at, &w0.to_le_bytes());
        }
        let (mq, sq) = (e.m2s_q(il::INLINE_QUEUE), e.s2m_q(il::INLINE_QUEUE));
        let (primary, other_reg) = if x.is_read {
            (mq + regs.drtp_inc, sq + regs.drtp_inc)
        } else {
            (sq + regs.drtp_inc, mq + regs.drtp_inc)
        };
        bus.note_word(&x.tag);
        let _ = bus.write32(primary, 1);
        let _ = bus.write32(other_reg, 1);
        self.stats.entry("neuron_memcpy").or_default().descriptors += 2;
        let anomaly = format!(
            "TX {}; RX {}; word1 left at 0xb8b8b8b8 (never written)",
            il::leaked_flags(word0s[0]),
            il::leaked_flags(word0s[1])
        );
        let report = x.last_anomaly.as_deref() != Some(anomaly.as_str());
        self.event(
            now,
            &x.tag,
            FwEventKind::InlineChunk {
                engine: e.id,
                queue: il::INLINE_QUEUE,
                slot,
                tag: ring_id,
                chunk_bytes: chunk,
                word0: soc_map::Hex32(word0s[0]),
                anomaly: if report {
                    anomaly.clone()
                } else {
                    "as before".into()
                },
            },
        );
        x.wait = Some((slot, ring_id));
        ctx.dma.advance();
        let _ = write_dma_ctx(bus, scratch, &ctx.dma);
        self.inline = Some(ctx);
        x.off += chunk;
        x.last_anomaly = Some(anomaly);
        self.stage = Stage::Inline(Box::new(x));
        false
    }
}
