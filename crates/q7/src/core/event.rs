//! What the firmware reports: its events (docs/firmware.md) and, for a
//! stall report, what it polls for (docs/firmware.md §Stalls).

use super::*;

/// Something the firmware did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FwEvent {
    /// When (JSON `cycle`, as every event's time).
    #[serde(rename = "cycle")]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
    /// A semaphore change let the EVENTS gate of a waiting word pass; the
    /// word starts at `start_cycle`, after the sequencer's semaphore wake
    /// (`q7_sem_wake_cycles`, docs/timing.md).
    Released {
        /// Semaphore waited on.
        sem: u8,
        /// The wait mode's name.
        mode: String,
        /// The threshold.
        threshold: u32,
        /// The semaphore's value that passed.
        value: u32,
        /// The cycle the word starts (generation or the call).
        start_cycle: u64,
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
    /// Another line of the firmware's own log (`bounds:(…)`,
    /// `rdma_desc_gen […]`, the `[TX]`/`[RX]` handshake, notices of what
    /// is not delivered; docs/firmware.md "Firmware log lines").
    Log {
        /// The log line.
        text: String,
    },
    /// The firmware programmed a queue pair's rings (DGE context init).
    RingsInit {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
        /// Ring length in descriptors (JSON `ring_descriptors`).
        #[serde(rename = "ring_descriptors")]
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
    /// for that element (docs/references/wiki.md §G.1).
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
    /// `flags.non_unique_dst_idx`: the writes race (docs/references/wiki.md §G.1).
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
    /// `init_dma_queue` ran (P9.1 §5.1).
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
        word0: soc_map::Hex32,
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
    /// The DGE mailboxes narrowed the engines of a word (P9.1 §5.4).
    MailboxGate {
        /// The word's `dma_configs.priority_class`.
        priority_class: u8,
        /// The mailboxes that masked.
        mailboxes: String,
        /// Engine mask before -> after.
        engine_mask: String,
    },
    /// The iDMA path (P9.1 §7): one of its firmware log lines.
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
