//! The firmware of one core as a state machine (P9.1 §5, §8;
//! docs/references/figures.md §A.3): instruction queue → EVENTS wait gate
//! (a word the gate held starts `q7_sem_wake_cycles` after it opens) →
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
use crate::plan::{EnginePlan, Operands, Plan, expand_reusing};

mod calls;
mod completion;
mod event;
mod fire;
mod issue;
mod pending;

pub use calls::FwCall;
use calls::*;
pub use completion::WakeNeed;
use completion::*;
pub use event::{FwEvent, FwEventKind, FwWait};
use issue::*;
pub use pending::PendingWork;

/// The device as the firmware sees it: 32-bit register and semaphore
/// accesses, byte stores into the carve-out, and the partition decode.
pub trait FwBus {
    /// A 32-bit read (register, semaphore or memory).
    fn read32(&mut self, addr: u64) -> Result<u32, String>;
    /// `out.len()` consecutive 32-bit reads from `addr` up, in order, as
    /// [`FwBus::read32`] each; a read that fails gives 0 (the firmware's
    /// register snapshot before it expands a word). A bus may read a
    /// register block in one go when that is the same.
    fn read32_run(&mut self, addr: u64, out: &mut [u32]) {
        for (i, v) in out.iter_mut().enumerate() {
            *v = self.read32(addr + 4 * i as u64).unwrap_or(0);
        }
    }
    /// A 32-bit write.
    fn write32(&mut self, addr: u64, value: u32) -> Result<(), String>;
    /// A byte store into memory.
    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;
    /// A byte load from memory, whose value the firmware acts on (an index
    /// vector, a mailbox, a completion tag).
    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String>;
    /// A byte load of payload the firmware only moves (its own `memcpy`):
    /// as [`FwBus::read_bytes`], but the bytes steer nothing (timing-only
    /// mode tells the two apart, docs/user-guide.md §11).
    fn read_payload(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.read_bytes(addr, buf)
    }
    /// Whether the Q7 core itself can load and store `[addr, addr + len)`
    /// (its own `memcpy`): an error saying why not. The default: it can.
    fn core_can_reach(&self, addr: u64, len: u64) -> Result<(), String> {
        let _ = (addr, len);
        Ok(())
    }
    /// Timing-only mode: whether `[addr, addr + len)` holds a byte a DMA
    /// copy should have written and did not. The default: never.
    fn stale(&self, addr: u64, len: u64) -> bool {
        let _ = (addr, len);
        false
    }
    /// Timing-only mode: `[addr, addr + len)` holds bytes copied from
    /// stale ones (the core's own memcpy): stale too. The default does
    /// nothing.
    fn mark_stale(&mut self, addr: u64, len: u64) {
        let _ = (addr, len);
    }
    /// Whether `[addr, addr + len)` is plain memory that one
    /// [`FwBus::write_bytes`] stores whole, without a fault, and that no
    /// observer sees store by store: then the firmware may store a run of
    /// descriptors in one write with the same result as one store per
    /// descriptor (default: no).
    fn stores_whole(&self, addr: u64, len: u64) -> bool {
        let _ = (addr, len);
        false
    }
    /// The SBUF/PSUM partition `addr` is in, if any.
    fn partition_of(&self, addr: u64) -> Option<u16>;
    /// [`FwBus::partition_of`] of `addr`, with the span around it when the
    /// bus knows one ([`crate::PartitionSpan`]: the region `addr` decodes
    /// to, whose partitions follow from its base and stride, or plain
    /// memory): the firmware then finds the partition of the other
    /// addresses in the span without asking, one call per word instead of
    /// one per descriptor pair (default: the partition alone).
    fn partition_span(&self, addr: u64) -> (Option<u16>, Option<crate::PartitionSpan>) {
        (self.partition_of(addr), None)
    }
    /// The partition stride of the partitioned memory at `addr`, if any
    /// (the cross-bar transpose path needs it; default none).
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        let _ = addr;
        None
    }
    /// Whether every register read is observed (a register-access log
    /// records): then the firmware reads each completion head every time
    /// its loop does. Otherwise one poll reads each queue's heads once —
    /// nothing the poll does moves them (default: observed).
    fn logs_reads(&self) -> bool {
        true
    }
    /// A counter of engine `engine` that moves whenever its completion
    /// head registers may have changed (the hardware moved one, a register
    /// write, a read that cleared bits); `None` where the bus keeps none.
    /// While it stands still, a completion head read before reads the same
    /// again.
    fn engine_epoch(&self, engine: u16) -> Option<u64> {
        let _ = engine;
        None
    }
    /// An observer's hint with no simulated effect: the doorbells that
    /// follow are word `tag`'s (the race detector names it, docs/races.md).
    fn note_word(&mut self, tag: &InstTag) {
        let _ = tag;
    }
    /// An observer's hint with no simulated effect: the data of the
    /// doorbells that follow moves as whole elements of dtype `code` (a
    /// transpose, [`crate::Plan::elements`]), or as bytes (`None`);
    /// `--uninit nan` fills with that type's NaN (docs/races.md
    /// §Uninitialised memory).
    fn note_elements(&mut self, code: Option<u8>) {
        let _ = code;
    }
    /// An observer's hint: word `tag` scatters two elements (index-vector
    /// positions `first` and `later`) to one destination `index` without
    /// `non_unique_dst_idx` (docs/races.md).
    fn note_scatter_race(&mut self, tag: &InstTag, first: u32, later: u32, index: u32) {
        let _ = (tag, first, later, index);
    }
}

/// Completion heads (TCRHP, RCRHP) read from an engine, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeadsSeen {
    /// The engine epoch just after the reads.
    pub(crate) epoch: u64,
    /// The M2S and S2M head register addresses read.
    pub(crate) addrs: (u64, u64),
    /// The raw values read.
    pub(crate) values: (u32, u32),
    /// The completed positions the values gave, with the producer
    /// positions they were recovered against ([`Rings::done`] divides:
    /// worth keeping while neither moves).
    pub(crate) done: DoneAt,
}

/// Completed positions recovered from head values at given producer
/// positions: (M2S position, S2M position, M2S done, S2M done).
pub(crate) type DoneAt = (u64, u64, u64, u64);

/// A wait-mode comparison: (semaphore value, threshold) → pass.
type WaitCompare = fn(u32, u32) -> bool;

/// Where an instruction came from (for the debugger and reports).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InstTag {
    /// Order of submission to this core, from 0.
    pub seq: u64,
    /// Free text, e.g. `trace line 12`.
    pub source: String,
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
    /// Set when a semaphore change let the EVENTS gate of a word that
    /// waited pass: the cycle the word starts, after the sequencer's
    /// semaphore wake (`q7_sem_wake_cycles`, docs/timing.md). The pass is
    /// latched: later changes of the semaphore do not hold the word again.
    released_at: Option<Cycle>,
    /// The wake is over and the gate stays open (a word that waited for
    /// ring room after its release is not gated again).
    gate_passed: bool,
    /// The engine mask the DGE mailbox gate last narrowed this word to, as
    /// reported: a word that retries (waiting for ring room) reports the
    /// gate again only when the mailboxes changed it.
    mailbox_reported: Option<u16>,
}

#[derive(Clone, Debug, Default)]
enum Stage {
    #[default]
    Idle,
    /// Methods 0/1: the Q7 copies by itself until `until`, `rate` bytes a
    /// cycle from `start`: the bytes of cycle `c` are read and stored at
    /// `c` (docs/firmware.md §The custom-op inline path).
    CoreCopy {
        until: Cycle,
        tag: InstTag,
        method: u8,
        bytes: u64,
        start: Cycle,
        rate: u64,
        src: u64,
        dst: u64,
        /// Bytes copied so far.
        done: u64,
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

/// Per-kind counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct KindStats {
    /// Words issued.
    pub issued: u64,
    /// Words rejected.
    pub rejected: u64,
    /// Descriptors written (both directions, semaphore writes included).
    pub descriptors: u64,
    /// Bytes of data its descriptors move (RDMA_DESC_GEN's once an
    /// RDMA_DESC_START rings them).
    pub bytes: u64,
}

/// A word or call the firmware refused, whole or on one engine
/// (docs/firmware.md §Refusals): nothing it would have moved moves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Refusal {
    /// Cycle of the refusal.
    pub at: u64,
    /// The word or call.
    pub inst: InstTag,
    /// Its kind (`DIRECT2D`, `neuron_memcpy`, …).
    pub kind: &'static str,
    /// Why, naming the field or the engine.
    pub reason: String,
}

/// One core's firmware. `Clone` copies its whole state (the debugger's
/// checkpoints, docs/user-guide.md §12 "Going back").
#[derive(Clone, Debug)]
pub struct Q7Core {
    layout: CoreLayout,
    queue: VecDeque<Queued>,
    stage: Stage,
    rings: Vec<Option<Rings>>,
    /// Per engine slot: the completion heads last read, with the
    /// addresses read and the engine epoch after the read
    /// ([`FwBus::engine_epoch`]).
    heads_seen: Vec<std::cell::Cell<Option<HeadsSeen>>>,
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
    /// Every refusal, recorded whether or not events are.
    refusals: Vec<Refusal>,
    /// The memcpy method table index (P9.1 §5.3).
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
    /// Whether events are recorded ([`Q7Core::set_trace`]).
    trace: bool,
    /// Scratch space of [`Q7Core::fire`]: one engine's descriptors, built
    /// before they are stored.
    built: fire::Built,
    /// The engine shares of the last plan fired, emptied: the next word is
    /// expanded in them ([`crate::plan::expand_reusing`]).
    spare_engines: Vec<EnginePlan>,
}

impl Q7Core {
    /// A core with nothing queued.
    pub fn new(layout: CoreLayout) -> Self {
        Self {
            rings: vec![None; layout.engines.len()],
            heads_seen: vec![std::cell::Cell::new(None); layout.engines.len()],
            layout,
            queue: VecDeque::new(),
            stage: Stage::Idle,
            inflight: VecDeque::new(),
            events: Vec::new(),
            next_seq: 0,
            blocked_on_space: false,
            space_wait: None,
            unrung: Vec::new(),
            refusals: Vec::new(),
            memcpy_method: crate::inline::DEFAULT_METHOD,
            inline: None,
            booted: false,
            icache: None,
            halted: None,
            stats: Default::default(),
            built: fire::Built::default(),
            spare_engines: Vec::new(),
            trace: true,
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
            mailbox_reported: None,
            released_at: None,
            gate_passed: false,
        });
        tag
    }

    /// Boots the firmware: the four DGE mailboxes get their defaults
    /// {reserved 0, priority 0xFF, mask 0xFFFF}, which never mask
    /// (docs/references/wiki.md §D.4). The host may reprogram them afterwards (P9.1
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

    /// Descriptors RDMA_DESC_GEN wrote that no RDMA_DESC_START has rung
    /// (both directions), and on how many engines.
    pub fn unrung(&self) -> (u64, usize) {
        let n = self
            .unrung
            .iter()
            .map(|&(_, m2s, s2m)| u64::from(m2s) + u64::from(s2m))
            .sum();
        (n, self.unrung.len())
    }

    /// The words and calls refused so far, in order.
    pub fn refusals(&self) -> &[Refusal] {
        &self.refusals
    }

    fn refused(&mut self, now: Cycle, inst: &InstTag, kind: &'static str, reason: &str) {
        self.refusals.push(Refusal {
            at: now.0,
            inst: inst.clone(),
            kind,
            reason: reason.to_string(),
        });
    }

    /// Records events (the default) or not: nothing reads them but the
    /// run's text, JSON and timeline (docs/user-guide.md §8), so a run that
    /// shows none builds none — no micro-op text, no tag copies.
    /// Counters, stalls and everything the firmware does are unchanged.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// Whether events are recorded.
    pub fn traces(&self) -> bool {
        self.trace
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
        if !self.trace {
            return;
        }
        self.events.push(FwEvent {
            at: now.0,
            tpb: self.layout.tpb,
            inst: inst.clone(),
            kind,
        });
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
        self.refused(now, &q.tag, q.work.name(), &reason);
        self.event(now, &q.tag, FwEventKind::Rejected { reason });
    }

    /// Runs the firmware at `now`; returns when it next needs to run on its
    /// own (generation finishing, a poll). It must also run when one of its
    /// semaphores changes or a word is submitted.
    pub fn step(&mut self, now: Cycle, bus: &mut dyn FwBus, t: &TimingConfig) -> Option<Cycle> {
        self.poll_inflight(now, bus);
        loop {
            // A core copy moves the bytes of the cycles up to now.
            if let Stage::CoreCopy { .. } = &self.stage
                && !self.core_copy_to(now, bus)
            {
                continue;
            }
            // A stage with a deadline waits for it in place.
            if let Stage::Generating { until, .. } | Stage::CoreCopy { until, .. } = &self.stage
                && now < *until
            {
                break;
            }
            match std::mem::take(&mut self.stage) {
                Stage::Generating {
                    plan, tag, update, ..
                } => {
                    self.fire(now, bus, &plan, tag, update);
                    self.keep_spare(plan.engines);
                }
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
            Stage::Generating { until, .. } => Some(poll.map_or(*until, |p| p.min(*until))),
            Stage::CoreCopy { .. } => {
                let next = self.busy_until().unwrap_or(now);
                Some(poll.map_or(next, |p| p.min(next)))
            }
            Stage::Inline(_) | Stage::Icache { .. } => Some(Cycle(now.0 + t.q7_poll_cycles.max(1))),
            Stage::Idle => match (poll, self.release_pending()) {
                (Some(p), Some(r)) => Some(p.min(r)),
                (p, r) => p.or(r),
            },
        }
    }

    /// Keeps the engine shares of a fired plan, emptied, for the next
    /// expansion; a pair or gather list grown past [`SPARE_PAIRS_MAX`] is
    /// let go (a core does not hold a large word's room for good).
    fn keep_spare(&mut self, mut engines: Vec<EnginePlan>) {
        for ep in &mut engines {
            let slot = ep.slot;
            ep.reset(slot);
            if ep.pairs.capacity() > SPARE_PAIRS_MAX {
                ep.pairs = Vec::new();
            }
            if ep.gathers.capacity() > SPARE_PAIRS_MAX {
                ep.gathers = Vec::new();
            }
        }
        self.spare_engines = engines;
    }

    /// The cycle the word at the head of the queue starts, when its gate
    /// has passed and it waits out the semaphore wake.
    fn release_pending(&self) -> Option<Cycle> {
        self.queue.front().and_then(|q| q.released_at)
    }
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

/// The most descriptor pairs (or gather packets) an engine share kept for
/// reuse has room for ([`Q7Core::keep_spare`]).
const SPARE_PAIRS_MAX: usize = 1024;

/// SEC_A FIRST (bit 15) and LAST (bit 16) errors (docs/references/driver.md §2.6).
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
