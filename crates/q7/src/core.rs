//! The firmware of one core as a state machine (seed 004 §5, §8;
//! hardware-and-simulators §A.3): instruction queue → EVENTS wait gate →
//! plan → descriptor generation in the carve-out (costing
//! `q7_decode_cycles` + `q7_desc_write_cycles` per descriptor) → doorbells
//! → completion polling on the queues' completion heads → EVENTS update.
//!
//! Instructions issue in order; a later one may be generated while earlier
//! ones are still moving data (the engines keep per-queue order). The
//! firmware drives one queue id on every engine of its core and owns those
//! rings: it programs them on first use (the "DGE contexts init" step).

use std::collections::VecDeque;

use dma_abi::build::{Flags, rx, tx};
use dma_abi::inst::{InstKind, InstWord, UpdateMode, WaitMode};
use serde::Serialize;
use sim_core::{Cycle, TimingConfig};

use crate::layout::{
    CoreLayout, DESC_BYTES, DgeConfig, ENGINES_PER_CORE, INITIAL_RING_ID, PAYLOAD_ENTRIES,
    RingAddrs,
};
use crate::plan::{Operands, Plan, expand};

/// The device as the firmware sees it: 32-bit register and semaphore
/// accesses, byte stores into the carve-out, and the partition decode.
pub trait FwBus {
    /// A 32-bit read (register, semaphore or memory).
    fn read32(&mut self, addr: u64) -> Result<u32, String>;
    /// A 32-bit write.
    fn write32(&mut self, addr: u64, value: u32) -> Result<(), String>;
    /// A byte store into memory.
    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;
    /// A byte load from memory.
    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String>;
    /// The SBUF/PSUM partition `addr` is in, if any.
    fn partition_of(&self, addr: u64) -> Option<u16>;
    /// The partition stride of the partitioned memory at `addr`, if any
    /// (the cross-bar transpose path needs it; default none).
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        let _ = addr;
        None
    }
}

/// A wait-mode comparison: (semaphore value, threshold) → pass.
type WaitCompare = fn(u32, u32) -> bool;

/// Where an instruction came from (for the debugger and reports).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstTag {
    /// Order of submission to this core, from 0.
    pub seq: u64,
    /// Free text, e.g. `trace line 12`.
    pub source: String,
}

/// Something the firmware did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FwEvent {
    /// When.
    pub at: u64,
    /// The core (TPB index).
    pub tpb: u8,
    /// The instruction it concerns.
    pub inst: InstTag,
    /// What happened.
    #[serde(flatten)]
    pub kind: FwEventKind,
}

/// One thing the firmware polls for (a stall report, [`Q7Core::waits`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FwWait {
    /// The word or call that waits.
    pub inst: InstTag,
    /// Its kind (`DIRECT2D`, `neuron_memcpy`, …).
    pub kind: String,
    /// Device engine id of the queue it polls.
    pub engine: u16,
    /// Queue id.
    pub queue: u8,
    /// What would end the wait.
    pub waiting_for: String,
}

/// The kinds of [`FwEvent`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "fw", rename_all = "snake_case")]
pub enum FwEventKind {
    /// The EVENTS gate holds the word back.
    Waiting {
        /// Semaphore waited on.
        sem: u8,
        /// The wait mode's name.
        mode: String,
        /// The threshold.
        threshold: u32,
        /// The semaphore's value when checked.
        value: u32,
    },
    /// The gate passed and generation started.
    Generating {
        /// The word's kind.
        kind: String,
        /// Engines taking part.
        engines: usize,
        /// Descriptors to write (data and semaphore, both directions).
        descriptors: usize,
        /// Bytes to move.
        bytes: u64,
        /// Cycles generation takes.
        cycles: u64,
    },
    /// A DGE emit micro-op (its firmware log line).
    MicroOp {
        /// The log line.
        text: String,
    },
    /// The firmware programmed a queue pair's rings (DGE context init).
    RingsInit {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// Ring length in descriptors.
        ring_descs: u32,
        /// M2S ring base.
        m2s_ring: String,
        /// S2M ring base.
        s2m_ring: String,
    },
    /// Descriptors written and doorbells rung on one engine.
    Doorbell {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// First ring slot written (both directions use the same count).
        m2s_first: u32,
        /// First S2M slot written.
        s2m_first: u32,
        /// S2M descriptors (data + semaphore writes).
        count: u32,
        /// M2S descriptors (more than `count` when transpose gathers read
        /// several pieces per packet).
        m2s_count: u32,
        /// Bytes of data this engine moves.
        bytes: u64,
    },
    /// RDMA_DESC_GEN wrote descriptors; RDMA_DESC_START will ring them.
    Generated {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// Descriptors per direction.
        count: u32,
        /// Bytes of data.
        bytes: u64,
    },
    /// A run failed its bound check and was dropped.
    OutOfBounds {
        /// `src` or `dst`.
        side: String,
        /// First byte.
        addr: String,
        /// Bytes.
        len_bytes: u32,
        /// Bound register.
        reg: u8,
        /// Its value.
        limit: String,
        /// Whether the OOB notification fires (`bc_disable_oob_error_notif` = 0).
        notify: bool,
    },
    /// An index failed its index bound check (INDIRECT1D): no descriptor
    /// for that element (wiki-facts §G.1).
    IndexOutOfBounds {
        /// `src_idx` or `dst_idx`.
        leg: String,
        /// Position in the index vector.
        position: u32,
        /// The index.
        index: u32,
        /// The bound it must stay below.
        bound: u32,
        /// `flags.idx_bound_is_err`: an error notification is raised.
        error: bool,
    },
    /// A scatter names one destination twice without
    /// `flags.non_unique_dst_idx`: the writes race (wiki-facts §G.1).
    DuplicateScatter {
        /// First position in the index vector.
        first: u32,
        /// The later position.
        later: u32,
        /// The index both name.
        index: u32,
    },
    /// `neuron_set_memcpy_method` ran.
    MethodSet {
        /// The method asked for.
        method: u8,
        /// What the guard did.
        outcome: String,
    },
    /// `init_dma_queue` ran (seed 004 §5.1).
    InlineInit {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// TX / completion / RX ring bases (SoC).
        rings: String,
    },
    /// One inline chunk fired (both doorbells rung).
    InlineChunk {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// Ring slot.
        slot: u32,
        /// Generation tag written.
        tag: u8,
        /// Bytes.
        chunk_bytes: u64,
        /// The TX word0 written.
        word0: String,
        /// The word0 anomaly (flags leaked from the slot's old content).
        anomaly: String,
    },
    /// A `neuron_memcpy` finished.
    MemcpyDone {
        /// The method that ran.
        method: String,
        /// Bytes.
        bytes: u64,
    },
    /// The DGE mailboxes narrowed the engines of a word (seed 004 §5.4).
    MailboxGate {
        /// The word's `dma_configs.priority_class`.
        priority_class: u8,
        /// The mailboxes that masked.
        mailboxes: String,
        /// Engine mask before -> after.
        engine_mask: String,
    },
    /// The iDMA path (seed 004 §7): one of its firmware log lines.
    Icache {
        /// The log line.
        text: String,
    },
    /// The word was not executed.
    Rejected {
        /// Why, naming the field.
        reason: String,
    },
    /// Every engine finished; the EVENTS update (if any) was applied.
    Done {
        /// The update applied, e.g. `SEM_INC_COMPLETE sem[4] += 1`.
        update: Option<String>,
    },
    /// The EVENTS read-complete update was applied (all data read).
    ReadDone {
        /// The update, e.g. `SEM_INC_READ sem[4] += 1`.
        update: String,
    },
}

/// One queue pair the firmware owns.
#[derive(Clone, Debug)]
struct Rings {
    queue: u8,
    len: u32,
    addrs: RingAddrs,
    /// Absolute producer positions (descriptors ever posted + the seed).
    m2s_pos: u64,
    s2m_pos: u64,
}

impl Rings {
    fn slot(&self, pos: u64) -> (u32, u8) {
        let len = u64::from(self.len);
        let idx = (pos % len) as u32;
        let id = ((u64::from(INITIAL_RING_ID) + pos / len) & 3) as u8;
        (idx, id)
    }

    /// Completed position from a completion-head register value.
    fn done(&self, pos: u64, crhp: u32) -> u64 {
        let len = u64::from(self.len);
        let span = 4 * len;
        let off = u64::from(crhp & 0xFF_FFFF) % len;
        let id = u64::from(crhp >> 30);
        let c_mod = ((id + 3) & 3) * len + off;
        let p_mod = pos % span;
        pos - (p_mod + span - c_mod) % span
    }
}

/// An issued instruction still moving data.
#[derive(Clone, Debug)]
struct Inflight {
    tag: InstTag,
    /// The word's kind name (for stall reports).
    kind: &'static str,
    /// (engine slot, M2S target, S2M target) absolute positions.
    targets: Vec<(u8, u64, u64)>,
    update: Option<(UpdateMode, u8, u32)>,
    read_done: bool,
}

/// A firmware routine called by custom-op code (seed 004 §5), queued in
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
    /// (seed 004 §7).
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
    fn name(&self) -> &'static str {
        match self {
            FwCall::Memcpy { .. } => "neuron_memcpy",
            FwCall::SetMethod(_) => "neuron_set_memcpy_method",
            FwCall::IcacheInit { .. } => "iram_cache_init",
            FwCall::IcacheFill { .. } => "start_fill_siram",
        }
    }
}

/// What sits in the queue.
#[derive(Clone, Copy, Debug)]
enum Work {
    Inst(InstWord),
    Call(FwCall),
}

impl Work {
    fn name(&self) -> &'static str {
        match self {
            Work::Inst(w) => w.kind().name(),
            Work::Call(c) => c.name(),
        }
    }
}

/// A word or call waiting in the queue.
#[derive(Clone, Debug)]
struct Queued {
    work: Work,
    tag: InstTag,
    waiting_reported: bool,
}

/// The inline path's state once initialised: the firmware's `_dma_ctx_t`,
/// mirrored to its scratch whenever it changes (docs/firmware.md).
#[derive(Clone, Copy, Debug)]
struct InlineCtx {
    dma: crate::inline::DmaCtx,
    /// The dataram's SoC address of local 0x80000.
    dataram_soc: u64,
}

#[derive(Clone, Debug, Default)]
enum Stage {
    #[default]
    Idle,
    /// Methods 0/1: the Q7 copies by itself until `until`.
    CoreCopy {
        until: Cycle,
        tag: InstTag,
        method: u8,
        bytes: u64,
    },
    /// Method 2: the inline DMA path, chunk by chunk.
    Inline(Box<InlineXfer>),
    /// An iDMA cache fill waiting for its last S2M completion.
    Icache {
        tag: InstTag,
        /// S2M position the fill completes at.
        target: u64,
        bytes: u64,
    },
    Generating {
        until: Cycle,
        plan: Box<Plan>,
        tag: InstTag,
        update: Option<(UpdateMode, u8, u32)>,
    },
}

/// One `dma_data_transfer` in progress (seed 004 §5.1).
#[derive(Clone, Debug)]
struct InlineXfer {
    tag: InstTag,
    local: u32,
    other: u64,
    len: u64,
    is_read: bool,
    off: u64,
    /// Busy-polling this completion slot for this tag.
    wait: Option<(u32, u8)>,
    /// The anomaly last reported (reported again only when it changes).
    last_anomaly: Option<String>,
}

/// Per-kind counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindStats {
    /// Words issued.
    pub issued: u64,
    /// Words rejected.
    pub rejected: u64,
    /// Descriptors written (both directions, semaphore writes included).
    pub descriptors: u64,
    /// Bytes of data moved.
    pub bytes: u64,
}

/// One core's firmware.
#[derive(Debug)]
pub struct Q7Core {
    layout: CoreLayout,
    queue: VecDeque<Queued>,
    stage: Stage,
    rings: Vec<Option<Rings>>,
    inflight: VecDeque<Inflight>,
    events: Vec<FwEvent>,
    next_seq: u64,
    blocked_on_space: bool,
    /// When blocked on space: (engine slot, M2S and S2M descriptors the
    /// word needs there).
    space_wait: Option<(u8, u64, u64)>,
    /// Descriptors RDMA_DESC_GEN wrote that no RDMA_DESC_START has rung yet:
    /// (engine slot, count per direction).
    unrung: Vec<(u8, u32, u32)>,
    /// The memcpy method table index (seed 004 §5.3).
    memcpy_method: u8,
    /// The inline path's context after `init_dma_queue`.
    inline: Option<InlineCtx>,
    /// The boot wrote the DGE mailbox defaults.
    booted: bool,
    /// The iDMA after `IRAM cache init`: block size and its ring pair.
    icache: Option<(u32, Rings)>,
    /// The firmware stopped at a failed assert (docs/firmware.md): every
    /// later word and call is refused with this reason.
    halted: Option<String>,
    stats: std::collections::BTreeMap<&'static str, KindStats>,
}

/// Registers and table entries read for one plan.
struct Snapshot<'a> {
    regs: [u32; 64],
    table: Vec<(u8, u64)>,
    layout: &'a CoreLayout,
    bus: &'a mut dyn FwBus,
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

fn table_entries(word: &InstWord) -> Vec<u8> {
    let addrs = match word {
        InstWord::Direct2d(w) => vec![w.src_start_addr, w.dst_start_addr],
        InstWord::Indirect1d(w) => vec![w.src_start_addr, w.dst_start_addr],
        InstWord::Direct2dXpose(w) => vec![w.src_start_addr, w.dst_start_addr],
        InstWord::GatherXpose(w) => vec![w.src_start_addr, w.dst_start_addr],
        _ => Vec::new(),
    };
    addrs
        .into_iter()
        .filter_map(|a| match a {
            soc_map::Addr8::Table { entry, .. } => Some(entry),
            _ => None,
        })
        .collect()
}

impl Q7Core {
    /// A core with nothing queued.
    pub fn new(layout: CoreLayout) -> Self {
        Self {
            rings: vec![None; layout.engines.len()],
            layout,
            queue: VecDeque::new(),
            stage: Stage::Idle,
            inflight: VecDeque::new(),
            events: Vec::new(),
            next_seq: 0,
            blocked_on_space: false,
            space_wait: None,
            unrung: Vec::new(),
            memcpy_method: crate::inline::DEFAULT_METHOD,
            inline: None,
            booted: false,
            icache: None,
            halted: None,
            stats: Default::default(),
        }
    }

    /// The TPB index.
    pub fn tpb(&self) -> u8 {
        self.layout.tpb
    }

    /// The layout.
    pub fn layout(&self) -> &CoreLayout {
        &self.layout
    }

    /// Appends a word to the instruction queue; returns its tag.
    pub fn submit(&mut self, word: InstWord, source: String) -> InstTag {
        self.enqueue(Work::Inst(word), source)
    }

    /// Appends a firmware call (custom-op code) to the queue.
    pub fn submit_call(&mut self, call: FwCall, source: String) -> InstTag {
        self.enqueue(Work::Call(call), source)
    }

    fn enqueue(&mut self, work: Work, source: String) -> InstTag {
        let tag = InstTag {
            seq: self.next_seq,
            source,
        };
        self.next_seq += 1;
        self.queue.push_back(Queued {
            work,
            tag: tag.clone(),
            waiting_reported: false,
        });
        tag
    }

    /// Boots the firmware: the four DGE mailboxes get their defaults
    /// {reserved 0, priority 0xFF, mask 0xFFFF}, which never mask
    /// (wiki-facts §D.4). The host may reprogram them afterwards (seed 004
    /// §5.4: the host API only hands out the mailbox address once the core
    /// is booted). Idempotent.
    pub fn boot(&mut self, bus: &mut dyn FwBus) -> Result<(), String> {
        if self.booted {
            return Ok(());
        }
        let mut entries = Vec::with_capacity(16);
        for _ in 0..MAILBOXES {
            entries.extend_from_slice(&[0, 0xFF, 0xFF, 0xFF]);
        }
        bus.write_bytes(self.layout.q7_dram + MAILBOX_OFFSET, &entries)?;
        self.booted = true;
        Ok(())
    }

    /// The DGE engine mask the mailboxes leave for `priority` (wiki-facts
    /// §D.4): start from all 16 engines; every mailbox whose priority is
    /// below the operation's ANDs in its bitmask. Returns the mask and the
    /// mailboxes that masked.
    fn mailbox_mask(&self, bus: &mut dyn FwBus, priority: u8) -> (u16, Vec<String>) {
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

    /// Nothing queued, generating or in flight.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && matches!(self.stage, Stage::Idle) && self.inflight.is_empty()
    }

    /// Words queued, not yet issued.
    pub fn queued(&self) -> usize {
        self.queue.len() + usize::from(!matches!(self.stage, Stage::Idle))
    }

    /// Words issued whose data is still moving.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Whether the firmware's next run only re-reads state that the DMA
    /// engines change: completion heads of in-flight words, ring space, the
    /// inline path's completion tag, an iDMA fill's completion head. Such a
    /// run finds what the previous one found unless the device changed in
    /// between; the device uses this to see a stall (docs/firmware.md
    /// §Stalls).
    pub fn polling_only(&self) -> bool {
        match &self.stage {
            Stage::Idle => !self.inflight.is_empty() || self.blocked_on_space,
            Stage::Inline(x) => x.wait.is_some(),
            Stage::Icache { .. } => true,
            Stage::Generating { .. } | Stage::CoreCopy { .. } => false,
        }
    }

    /// What the firmware is polling for, one entry per engine queue it
    /// waits on (a stall report: docs/firmware.md §Stalls). `bus` is read
    /// for the completion heads; pass one without side effects.
    pub fn waits(&self, bus: &mut dyn FwBus) -> Vec<FwWait> {
        let mut out = Vec::new();
        for f in &self.inflight {
            for &(slot, m_target, s_target) in &f.targets {
                let (Some(e), Some(Some(r))) = (
                    self.layout.engines.get(usize::from(slot)),
                    self.rings.get(usize::from(slot)),
                ) else {
                    continue;
                };
                let Some((m_done, s_done)) = self.completed(bus, slot) else {
                    continue;
                };
                if m_done >= m_target && s_done >= s_target {
                    continue;
                }
                out.push(FwWait {
                    inst: f.tag.clone(),
                    kind: f.kind.to_string(),
                    engine: e.id,
                    queue: r.queue,
                    waiting_for: format!(
                        "completions: M2S at {m_done} of {m_target}, S2M at {s_done} of {s_target} \
                         (ring positions)"
                    ),
                });
            }
        }
        if self.blocked_on_space
            && let Some(q) = self.queue.front()
            && let Some((slot, need_m2s, need_s2m)) = self.space_wait
            && let (Some(e), Some(Some(r))) = (
                self.layout.engines.get(usize::from(slot)),
                self.rings.get(usize::from(slot)),
            )
        {
            let (m_done, s_done) = self.completed(bus, slot).unwrap_or((0, 0));
            let len = u64::from(r.len);
            let free = |pos: u64, done: u64| len.saturating_sub(pos.saturating_sub(done));
            let unrung = self
                .unrung
                .iter()
                .filter(|(s, ..)| *s == slot)
                .map(|(_, m, s)| format!(" ({m} M2S and {s} S2M written by RDMA_DESC_GEN wait for an RDMA_DESC_START)"))
                .next()
                .unwrap_or_default();
            out.push(FwWait {
                inst: q.tag.clone(),
                kind: q.work.name().to_string(),
                engine: e.id,
                queue: r.queue,
                waiting_for: format!(
                    "ring room: needs {need_m2s} M2S and {need_s2m} S2M slots of {len}, \
                     {} and {} free{unrung}",
                    free(r.m2s_pos, m_done),
                    free(r.s2m_pos, s_done)
                ),
            });
        }
        match &self.stage {
            Stage::Inline(x) => {
                if let Some((slot, tag)) = x.wait {
                    out.push(FwWait {
                        inst: x.tag.clone(),
                        kind: "neuron_memcpy".into(),
                        engine: self.layout.engines.first().map_or(0, |e| e.id),
                        queue: crate::inline::INLINE_QUEUE,
                        waiting_for: format!(
                            "the inline completion ring slot {slot} to carry tag {tag}"
                        ),
                    });
                }
            }
            Stage::Icache { tag, target, .. } => out.push(FwWait {
                inst: tag.clone(),
                kind: "start_fill_siram".into(),
                engine: self.layout.engines.first().map_or(0, |e| e.id),
                queue: self.icache.as_ref().map_or(0, |(_, r)| r.queue),
                waiting_for: format!("S2M completion up to position {target}"),
            }),
            _ => {}
        }
        out
    }

    /// Takes the events recorded so far.
    pub fn take_events(&mut self) -> Vec<FwEvent> {
        std::mem::take(&mut self.events)
    }

    /// Per-kind counters, by kind name.
    pub fn stats(&self) -> &std::collections::BTreeMap<&'static str, KindStats> {
        &self.stats
    }

    fn event(&mut self, now: Cycle, inst: &InstTag, kind: FwEventKind) {
        self.events.push(FwEvent {
            at: now.0,
            tpb: self.layout.tpb,
            inst: inst.clone(),
            kind,
        });
    }

    /// Why semaphore `idx` named by `field` does not exist, if it does not.
    fn sem_range(&self, word: &InstWord, field: &str, idx: u8) -> Option<String> {
        let n = self.layout.sem_count;
        (u32::from(idx) >= n).then(|| {
            format!(
                "{}.events.{field} = {idx}: the core has {n} semaphores",
                word.kind().name()
            )
        })
    }

    /// Refuses the word or call at the head of the queue; true (the
    /// firmware goes on with the next one).
    fn reject_front(&mut self, now: Cycle, reason: String) -> bool {
        if let Some(q) = self.queue.pop_front() {
            self.reject(now, &q, reason);
        }
        true
    }

    fn reject(&mut self, now: Cycle, q: &Queued, reason: String) {
        self.stats.entry(q.work.name()).or_default().rejected += 1;
        self.event(now, &q.tag, FwEventKind::Rejected { reason });
    }

    /// Runs the firmware at `now`; returns when it next needs to run on its
    /// own (generation finishing, a poll). It must also run when one of its
    /// semaphores changes or a word is submitted.
    pub fn step(&mut self, now: Cycle, bus: &mut dyn FwBus, t: &TimingConfig) -> Option<Cycle> {
        self.poll_inflight(now, bus);
        loop {
            // A stage with a deadline waits for it in place.
            if let Stage::Generating { until, .. } | Stage::CoreCopy { until, .. } = &self.stage
                && now < *until
            {
                break;
            }
            match std::mem::take(&mut self.stage) {
                Stage::Generating {
                    plan, tag, update, ..
                } => self.fire(now, bus, &plan, tag, update),
                Stage::Idle => {
                    if !self.try_issue(now, bus, t) {
                        break;
                    }
                }
                Stage::CoreCopy {
                    tag, method, bytes, ..
                } => self.memcpy_done(now, &tag, method, bytes),
                Stage::Icache { tag, target, bytes } => {
                    if !self.poll_icache(now, bus, tag, target, bytes) {
                        break;
                    }
                }
                Stage::Inline(x) => {
                    if !self.run_inline(now, bus, *x) {
                        break;
                    }
                }
            }
        }
        let poll = (!self.inflight.is_empty() || self.blocked_on_space)
            .then(|| Cycle(now.0 + t.q7_poll_cycles.max(1)));
        match &self.stage {
            Stage::Generating { until, .. } | Stage::CoreCopy { until, .. } => {
                Some(poll.map_or(*until, |p| p.min(*until)))
            }
            Stage::Inline(_) | Stage::Icache { .. } => Some(Cycle(now.0 + t.q7_poll_cycles.max(1))),
            Stage::Idle => poll,
        }
    }

    /// Tries to start the word at the head of the queue; false when nothing
    /// more can happen now.
    fn try_issue(&mut self, now: Cycle, bus: &mut dyn FwBus, t: &TimingConfig) -> bool {
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
        // EVENTS gate (wiki-facts §C.3).
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
        if let Some((f, from_reg)) = cmp {
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
        // RDMA_DESC_START: no operands; it rings what GEN wrote (wiki-facts
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
        // The DGE mailbox / priority-class gate (seed 004 §5.4, wiki-facts
        // §D.4) narrows the engines MEMCOPY_DMA_CFG allows.
        let mut cfg = cfg;
        if let Some(priority) = priority_class(&word) {
            let (mask, why) = self.mailbox_mask(bus, priority);
            if mask != 0xFFFF {
                let tag = front_tag(&self.queue);
                let narrowed = cfg.engine_mask & mask;
                self.event(
                    now,
                    &tag,
                    FwEventKind::MailboxGate {
                        priority_class: priority,
                        mailboxes: why.join(", "),
                        engine_mask: format!("{:#06x} -> {narrowed:#06x}", cfg.engine_mask),
                    },
                );
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
        let front_tag = front_tag(&self.queue);
        for slot in dge_context_slots(&word, &cfg) {
            if let Err(m) = self.ensure_rings(now, bus, &cfg, slot, queue_id, &front_tag) {
                return self.reject_front(now, m);
            }
        }
        let mut regs = [0u32; 64];
        for (n, r) in regs.iter_mut().enumerate() {
            *r = bus.read32(self.layout.reg(n as u8)).unwrap_or(0);
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
            };
            expand(&word, &cfg, &mut snap)
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
        // Rings: armed above; check room.
        for ep in &plan.engines {
            if !self.has_room(bus, ep.slot, ep.m2s_descs(), ep.s2m_descs()) {
                self.blocked_on_space = true;
                self.space_wait = Some((ep.slot, ep.m2s_descs(), ep.s2m_descs()));
                return false;
            }
        }
        let Some(q) = self.queue.pop_front() else {
            return false;
        };
        let descriptors = plan.descriptors() as u64;
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
            self.event(now, &q.tag, FwEventKind::MicroOp { text });
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
                FwEventKind::MicroOp {
                    text: format!(
                        "error notification for {notified} fault(s) not delivered: the DGE \
                         notification record ({{dma_map:16, num_packets:12, dma_group_id:1}}) has \
                         no published layout or queue; the word's semaphores still complete it"
                    ),
                },
            );
        }
        for &(first, later, index) in &plan.duplicate_dst {
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

    /// RDMA_DESC_GEN's firmware log lines (wiki-facts §E.2, §E.6): the
    /// parameters, then the destination after the routing fold (no fold on
    /// one device: routing id 0). `[%s]` is unpublished; the model prints
    /// the generating core's role, TX.
    fn rdma_gen_log(&self, g: &dma_abi::inst::RdmaDescGen, queue: u8) -> Vec<String> {
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
    fn unstarted_overflow(&self, plan: &Plan) -> Option<String> {
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

    /// Programs the rings of `slot` on first use (DGE context init).
    fn ensure_rings(
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
        if let Some(Some(r)) = self.rings.get(usize::from(slot))
            && r.queue == queue
            && r.len == len
            && r.addrs == addrs
        {
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
            self.event(now, tag, FwEventKind::MicroOp { text });
        }
        Ok(())
    }

    fn completed(&self, bus: &mut dyn FwBus, slot: u8) -> Option<(u64, u64)> {
        let r = self.rings.get(usize::from(slot))?.as_ref()?;
        let e = self.layout.engines.get(usize::from(slot))?;
        let m = bus.read32(e.m2s_q(r.queue) + self.layout.regs.crhp).ok()?;
        let s = bus.read32(e.s2m_q(r.queue) + self.layout.regs.crhp).ok()?;
        Some((r.done(r.m2s_pos, m), r.done(r.s2m_pos, s)))
    }

    fn has_room(&self, bus: &mut dyn FwBus, slot: u8, need_m2s: u64, need_s2m: u64) -> bool {
        let Some(r) = self.rings.get(usize::from(slot)).and_then(Option::as_ref) else {
            return false;
        };
        let Some((m_done, s_done)) = self.completed(bus, slot) else {
            return false;
        };
        let len = u64::from(r.len);
        r.m2s_pos - m_done + need_m2s <= len && r.s2m_pos - s_done + need_s2m <= len
    }

    /// Writes the plan's descriptors and rings the doorbells.
    fn fire(
        &mut self,
        now: Cycle,
        bus: &mut dyn FwBus,
        plan: &Plan,
        tag: InstTag,
        update: Option<(UpdateMode, u8, u32)>,
    ) {
        let regs = self.layout.regs;
        let mut targets = Vec::new();
        let mut written = 0u64;
        let mut events = Vec::new();
        if plan.kind == InstKind::RdmaDescStart {
            self.start_rdma(bus, &mut targets, &mut events);
        }
        let payload_cfg = self.dge_payload(bus);
        for ep in &plan.engines {
            for op in &ep.micro_ops {
                events.push(FwEventKind::MicroOp {
                    text: op.to_string(),
                });
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
            type Packet = (Vec<crate::plan::TxSource>, (u64, u32));
            let mut packets: Vec<Packet> = ep
                .pairs
                .iter()
                .map(|p| (p.sources(), (p.dst, p.dst_len_bytes)))
                .collect();
            packets.extend(ep.gathers.iter().map(|g| {
                (
                    g.tx.iter()
                        .map(|&(a, l)| crate::plan::TxSource::data(a, l, g.word1))
                        .collect(),
                    (g.dst, g.dst_len_bytes),
                )
            }));
            packets.extend(ep.sem_writes.iter().map(|&(at, v)| {
                (
                    vec![crate::plan::TxSource::data(
                        payload_cfg.payload(dge, v),
                        4,
                        dma_abi::DEFAULT_COPY_WORD1,
                    )],
                    (at, 4),
                )
            }));
            let (mut count, mut m2s_count) = (0u32, 0u32);
            let mut fault = None;
            'packets: for (txs, (dst, dst_len)) in packets {
                let n = txs.len();
                for (k, s) in txs.into_iter().enumerate() {
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
                    // 8-15 = meta1/meta2 (wiki-facts §F.2).
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
                events.push(FwEventKind::Generated {
                    engine: e.id,
                    queue: r.queue,
                    count,
                    bytes: ep.bytes,
                });
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

    /// Starts a firmware call at the head of the queue (seed 004 §5).
    fn start_call(
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
                    // The Q7 copies by itself.
                    let (src, dst) = if is_read {
                        (other, dataram)
                    } else {
                        (dataram, other)
                    };
                    let mut buf = vec![0u8; len as usize];
                    let moved = bus
                        .read_bytes(src, &mut buf)
                        .and_then(|()| bus.write_bytes(dst, &buf));
                    if let Err(e) = moved {
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
                    self.stage = Stage::CoreCopy {
                        until: Cycle(now.0 + len.div_ceil(rate)),
                        tag: q.tag,
                        method: m,
                        bytes: len,
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
    fn icache_init(&mut self, bus: &mut dyn FwBus, block_size: u32) -> Result<String, String> {
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
    fn icache_fill(
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
    fn poll_icache(
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

    fn memcpy_done(&mut self, now: Cycle, tag: &InstTag, method: u8, bytes: u64) {
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

    /// `init_dma_queue` (seed 004 §5.1), once per core: the ring-config
    /// words, the three rings filled with 0xB8, the context, and the HAL
    /// arming of queue 15 of the core's first engine.
    fn inline_init(
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

    /// One step of the inline path (seed 004 §5.1): poll, or fire the next
    /// chunk, or finish. Returns false when it must wait.
    fn run_inline(&mut self, now: Cycle, bus: &mut dyn FwBus, mut x: InlineXfer) -> bool {
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
                word0: format!("{:#010x}", word0s[0]),
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

    /// RDMA_DESC_START's doorbells in the firmware's handshake order
    /// (wiki-facts §E.4; docs/firmware.md "RDMA_DESC_GEN /
    /// RDMA_DESC_START"): the RX role first writes every engine's S2M
    /// RDRTP_INC and signals (`right_push`); the TX role waits for it
    /// (`left_pop`) and writes every M2S TDRTP_INC — the launch. Each
    /// write is logged with the firmware's own words.
    fn start_rdma(
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
        let log = |text: String| FwEventKind::MicroOp { text };
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

    fn dge_payload(&self, bus: &mut dyn FwBus) -> DgeConfig {
        DgeConfig::from_regs(
            bus.read32(self.layout.carveout_cfg).unwrap_or(0),
            bus.read32(self.layout.dma_cfg).unwrap_or(0),
        )
    }

    /// Applies finished instructions' EVENTS updates, oldest first.
    fn poll_inflight(&mut self, now: Cycle, bus: &mut dyn FwBus) {
        let mut i = 0;
        while i < self.inflight.len() {
            let (reads, writes) = {
                let f = &self.inflight[i];
                let mut reads = true;
                let mut writes = true;
                for &(slot, m_target, s_target) in &f.targets {
                    match self.completed(bus, slot) {
                        Some((m, s)) => {
                            reads &= m >= m_target;
                            writes &= s >= s_target;
                        }
                        None => {
                            reads = false;
                            writes = false;
                        }
                    }
                }
                (reads, writes)
            };
            let f = &mut self.inflight[i];
            if reads && !f.read_done {
                f.read_done = true;
                if let Some((UpdateMode::SemIncRead, idx, _)) = f.update {
                    let tag = f.tag.clone();
                    let text = self.apply_update(bus, UpdateMode::SemIncRead, idx, 0);
                    self.event(now, &tag, FwEventKind::ReadDone { update: text });
                }
            }
            if writes && self.inflight[i].read_done {
                let Some(f) = self.inflight.remove(i) else {
                    break;
                };
                let update = match f.update {
                    Some((m, idx, v)) if m != UpdateMode::SemIncRead => {
                        Some(self.apply_update(bus, m, idx, v))
                    }
                    _ => None,
                };
                self.event(now, &f.tag, FwEventKind::Done { update });
            } else {
                i += 1;
            }
        }
    }

    /// One EVENTS update (wiki-facts §C.3); returns its description.
    fn apply_update(
        &mut self,
        bus: &mut dyn FwBus,
        mode: UpdateMode,
        idx: u8,
        value: u32,
    ) -> String {
        let name = mode.name().unwrap_or("?");
        let r = match mode {
            UpdateMode::SemIncRead | UpdateMode::SemIncComplete => bus
                .write32(self.layout.sem_inc(idx), 1)
                .map(|()| format!("sem[{idx}] += 1")),
            UpdateMode::SemAddImmComplete => bus
                .write32(self.layout.sem_inc(idx), value)
                .map(|()| format!("sem[{idx}] += {value}")),
            UpdateMode::SemWrRegComplete => {
                let reg = (value & 63) as u8;
                let v = bus.read32(self.layout.reg(reg)).unwrap_or(0);
                bus.write32(self.layout.sem_set(idx), v)
                    .map(|()| format!("sem[{idx}] = REG[{reg}] = {v}"))
            }
            UpdateMode::None | UpdateMode::Other(_) => Ok(String::new()),
        };
        match r {
            Ok(t) => format!("{name} {t}"),
            Err(m) => format!("{name} failed: {m}"),
        }
    }
}

/// The notification queues software configured on engine `e` (NQ_SIZE
/// non-zero), each as a log line saying the firmware writes no records
/// into it: the NOTIFIC record's fields are known ({dma_map:16,
/// num_packets:12, dma_group_id:1}) but not its bit layout, size, phase
/// bit or trigger (docs/firmware.md "Not modelled yet").
fn notification_queues(
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

/// Stores the inline path's `_dma_ctx_t` at scratch + 0x200.
fn write_dma_ctx(
    bus: &mut dyn FwBus,
    scratch: u64,
    ctx: &crate::inline::DmaCtx,
) -> Result<(), String> {
    use zerocopy::IntoBytes;
    bus.write_bytes(scratch + u64::from(crate::inline::CTX), ctx.as_bytes())
}

fn front_tag(q: &VecDeque<Queued>) -> InstTag {
    q.front().map_or(
        InstTag {
            seq: 0,
            source: String::new(),
        },
        |q| q.tag.clone(),
    )
}

/// Arms queue `queue` of engine `e` (the HAL/driver arming of seed 004
/// §5.1, driver-facts §2.9): ring bases and lengths, the completion rings
/// (the M2S one only with `m2s_comp`; COMP_CFG bit 0 set, its other bits
/// kept — S2M resets to 0xf, seed 004 §4.2), Q_CFG EN_PREF and
/// EN_SCHEDULING/EN_STREAM, M2S CFG_LEN at the driver's value, both
/// directions to NORMAL. The producer positions are seeded from the
/// hardware tails.
fn arm_queue_pair(
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
    bus.write32(e.m2s_unit + r.m2s_cfg_len, 0x010f_ffff)?; // driver value (driver-facts §2.7)
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
/// the core's DRAM + 0x28 (wiki-facts §D.4; seed 004 §5.4 "core_base + 40").
const MAILBOXES: usize = 4;
const MAILBOX_OFFSET: u64 = 0x28;

/// The engine slots whose DGE contexts a word uses: the engines
/// MEMCOPY_DMA_CFG allows, or all 16 for RDMA_DESC_GEN, whose every engine
/// writes the local semaphore (docs/firmware.md "RDMA_DESC_GEN /
/// RDMA_DESC_START").
fn dge_context_slots(word: &InstWord, cfg: &DgeConfig) -> Vec<u8> {
    match word {
        InstWord::RdmaDescGen(_) => (0..ENGINES_PER_CORE as u8).collect(),
        _ => cfg.engine_slots(),
    }
}

/// The word's `dma_configs.priority_class` (the RDMA words have none).
fn priority_class(word: &InstWord) -> Option<u8> {
    match word {
        InstWord::Direct2d(w) => Some(w.dma_configs.priority_class),
        InstWord::Indirect1d(w) => Some(w.dma_configs.priority_class),
        InstWord::Direct2dXpose(w) => Some(w.dma_configs.priority_class),
        InstWord::GatherXpose(w) => Some(w.dma_configs.priority_class),
        InstWord::RdmaDescGen(_) | InstWord::RdmaDescStart(_) => None,
    }
}

/// SEC_A FIRST (bit 15) and LAST (bit 16) errors (driver-facts §2.6).
const FIRST_LAST_ERRORS: u32 = (1 << 15) | (1 << 16);

/// Engine slots a core has.
pub const SLOTS: usize = ENGINES_PER_CORE;

/// The kinds the firmware expands in this version.
pub const EXPANDED_KINDS: &[InstKind] = &[
    InstKind::Direct2d,
    InstKind::Indirect1d,
    InstKind::RdmaDescGen,
    InstKind::RdmaDescStart,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn rings(len: u32) -> Rings {
        Rings {
            queue: 0,
            len,
            addrs: RingAddrs {
                m2s_ring: 0,
                s2m_ring: 0,
                m2s_comp: 0,
                s2m_comp: 0,
            },
            m2s_pos: 0,
            s2m_pos: 0,
        }
    }

    /// The completion-head register value after `done` descriptors
    /// (driver-facts §3.6: ring id 1 after reset, +1 mod 4 per wrap).
    fn crhp(len: u32, done: u64) -> u32 {
        let id = (u64::from(INITIAL_RING_ID) + done / u64::from(len)) & 3;
        ((id as u32) << 30) | (done % u64::from(len)) as u32
    }

    #[test]
    fn slot_and_ring_id_follow_the_wraps() {
        let r = rings(4);
        assert_eq!(r.slot(0), (0, 1));
        assert_eq!(r.slot(3), (3, 1));
        assert_eq!(r.slot(4), (0, 2));
        assert_eq!(r.slot(12), (0, 0));
        assert_eq!(r.slot(16), (0, 1));
    }

    proptest::proptest! {
        #[test]
        fn completed_position_is_recovered_from_the_head_register(
            len in 1u32..300,
            pos in 0u64..100_000,
            outstanding in 0u64..300,
        ) {
            let r = rings(len);
            let outstanding = outstanding.min(u64::from(len)).min(pos);
            let done = pos - outstanding;
            proptest::prop_assert_eq!(r.done(pos, crhp(len, done)), done);
        }
    }
}
