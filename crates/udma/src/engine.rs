//! One UDMA unit (an M2S/S2M pair with 16 queues per direction) and its SDMA
//! data path, driven only through its CSRs (P9.1 §4, docs/references/driver.md §2–3,
//! docs/references/wiki.md §B).
//!
//! Time model (docs/references/design.md §4, `docs/timing.md`): a doorbell takes effect after
//! `doorbell_latency`; each queue prefetches up to 8 descriptors per fetch
//! (`desc_fetch_latency` + per-descriptor cycles); the unit's data path moves
//! one packet at a time, queues served round-robin, `transfer_cycles` per
//! descriptor; a packet's bytes land `read_latency + data + write_latency`
//! after it starts, in order within its queue. Pointers, status and
//! completion registers change at the cycle the model reaches them.
//!
//! The behaviour is split along the hardware's blocks: `mmio` (register
//! access, cached configuration, IOFIC, engine state), `queue` (doorbells,
//! Q_SW_CTRL, the pointer and status mirrors), `prefetch` (descriptor
//! bursts and their checks), `sched` (round robin, DWRR, rate limiters),
//! `packet` (packet start and timing), `completion` (data, completion rings,
//! counters) and `faults` (cause bits, abort, NON_ACTIVE queues).

use std::collections::VecDeque;

use csr::RegFile;
use sim_core::{Bus, Cycle, EventQueue, TimingConfig};

use crate::block::{Dir, QUEUES, UnitBlock};
use crate::event::{EngineEvent, EventKind};
use crate::regs::{Group, UnitMaps, UnitRegs};
use crate::stats::{FaultTally, QueueStats};

mod completion;
mod faults;
pub use faults::FAULT_CAUSES;
mod mmio;
mod packet;
mod pieces;
mod prefetch;
mod qcfg;
mod queue;
pub use queue::PrefetchOff;
mod sched;

use faults::{sec_a, sec_b};

/// Descriptors per prefetch burst (docs/references/driver.md §2.7 desc_rd_cfg_3 = 8).
const FETCH_BURST: u32 = 8;
/// Prefetched descriptors a queue may hold (docs/references/wiki.md §B.5 desc_pref_cfg
/// fifo_depth reset 0x80).
const PREFETCH_DEPTH: usize = 128;
/// Largest ring (docs/references/driver.md §3.7: 2^24 − 16 descriptors).
pub const MAX_RING_DESCS: u32 = (1 << 24) - 16;
/// Smallest ring the driver accepts (docs/references/driver.md §3.7).
pub const MIN_RING_DESCS: u32 = 32;

/// Ring-id a queue expects after reset (docs/references/driver.md §3.6).
pub const INITIAL_RING_ID: u8 = 1;

/// Engine direction state (docs/references/driver.md §2.8: 2-bit sub-states 0 idle,
/// 1 normal, 2 abort).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirState {
    /// Not armed (reset) or disabled through CHANGE_STATE.DIS.
    Disabled,
    /// Running.
    Normal,
    /// Stopped by CHANGE_STATE.ABORT or an unmasked error.
    Aborted,
}

impl DirState {
    fn code(self) -> u32 {
        match self {
            DirState::Disabled => 0,
            DirState::Normal => 1,
            DirState::Aborted => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            DirState::Disabled => "disable",
            DirState::Normal => "normal",
            DirState::Aborted => "abort",
        }
    }
}

/// A prefetched descriptor.
type Fetched = crate::datapath::Piece;

/// One direction of one queue.
#[derive(Debug)]
struct QDir {
    /// Descriptors posted by doorbells since reset / completed since reset.
    posted: u64,
    done: u64,
    fetched_total: u64,
    head: u32,
    head_id: u8,
    tail: u32,
    tail_id: u8,
    comp_head: u32,
    comp_id: u8,
    fetch_busy: bool,
    fetched: VecDeque<Fetched>,
    /// M2S packet assembly at prefetch (FIRST/LAST checks).
    in_packet: bool,
    pkt_descs: u32,
    pkt_bytes: u64,
    /// AXI error made the queue NON_ACTIVE (GEN axi_queue, docs/references/wiki.md §I.4).
    non_active: bool,
    /// Bumped by queue reset; events of an older generation are stale.
    epoch: u32,
    /// Bumped when prefetch restarts (queue reset, abort, the Q_SW_CTRL
    /// pointer resets): a descriptor burst issued before is dropped.
    fetch_epoch: u32,
}

impl Clone for QDir {
    /// Field by field, as derived, but an empty prefetch buffer (every
    /// queue of a unit at reset: a chip run copies 4,096 of them) is made
    /// afresh rather than cloned element by element.
    fn clone(&self) -> Self {
        Self {
            posted: self.posted,
            done: self.done,
            fetched_total: self.fetched_total,
            head: self.head,
            head_id: self.head_id,
            tail: self.tail,
            tail_id: self.tail_id,
            comp_head: self.comp_head,
            comp_id: self.comp_id,
            fetch_busy: self.fetch_busy,
            fetched: if self.fetched.is_empty() {
                VecDeque::new()
            } else {
                self.fetched.clone()
            },
            in_packet: self.in_packet,
            pkt_descs: self.pkt_descs,
            pkt_bytes: self.pkt_bytes,
            non_active: self.non_active,
            epoch: self.epoch,
            fetch_epoch: self.fetch_epoch,
        }
    }
}

impl QDir {
    fn new() -> Self {
        Self {
            posted: 0,
            done: 0,
            fetched_total: 0,
            head: 0,
            head_id: INITIAL_RING_ID,
            tail: 0,
            tail_id: INITIAL_RING_ID,
            comp_head: 0,
            comp_id: INITIAL_RING_ID,
            fetch_busy: false,
            fetched: VecDeque::new(),
            in_packet: false,
            pkt_descs: 0,
            pkt_bytes: 0,
            non_active: false,
            epoch: 0,
            fetch_epoch: 0,
        }
    }

    fn reset(&mut self) {
        let epoch = self.epoch.wrapping_add(1);
        let fetch_epoch = self.fetch_epoch;
        *self = QDir::new();
        self.epoch = epoch;
        self.fetch_epoch = fetch_epoch;
        self.cancel_fetch();
    }

    /// Drops the descriptor burst in flight, if any (its completion event
    /// becomes stale). `u32::MAX` is the wake-up marker, never an epoch.
    fn cancel_fetch(&mut self) {
        self.fetch_epoch = match self.fetch_epoch.wrapping_add(1) {
            u32::MAX => 0,
            e => e,
        };
        self.fetch_busy = false;
    }

    /// Descriptors taken from the prefetch buffer into packets that have
    /// not completed yet.
    fn in_flight(&self) -> u64 {
        self.fetched_total - self.done - self.fetched.len() as u64
    }

    fn outstanding(&self) -> u64 {
        self.posted - self.done
    }
}

/// Register-derived configuration, refreshed after a register write (only
/// the part the written block feeds; never for doorbells) so the hot paths
/// read plain fields.
#[derive(Clone, Debug, Default)]
struct Cfg {
    encode_64k: bool,
    max_pkt: u64,
    max_descs: u32,
    arb: Arbitration,
    stream_bucket: Option<BucketCfg>,
    /// Prefetch refill policy per direction, DESC_PREF_CFG_3 (docs/references/driver.md
    /// §2.7, docs/references/wiki.md §D.4): (min burst below threshold, min burst above
    /// threshold, threshold).
    pref: [(u8, u8, u8); 2],
    /// M2S PREF_QUEUE_EN: bit q enables queue q's prefetch (docs/references/wiki.md
    /// §B.2).
    pref_queue_en: u16,
}

/// Register-derived settings of one queue (per direction where the
/// hardware has two), refreshed with [`Cfg`].
#[derive(Clone, Copy, Debug, Default)]
struct QueueCfg {
    /// Per direction: (EN_PREF, EN_SCHEDULING / EN_STREAM).
    en: [(bool, bool); 2],
    comp_en: [bool; 2],
    /// DMB pauses the queue (RLIMIT_MASK.INTERNAL_PAUSE_DMB clear).
    dmb_pause: bool,
    ring_len: [u32; 2],
    crc_init: u32,
    ring_base: [u64; 2],
    hdr_split: u64,
    bucket: Option<BucketCfg>,
    comp_base: [u64; 2],
    /// (strict, q_qos, weight, deficit cap, paused).
    dwrr: (bool, u32, u32, u32, bool),
}

/// One queue: both directions' state, its settings and its scheduler
/// state, side by side (a packet touches one queue's few cache lines; with
/// 16 engines interleaved, scattered per-queue arrays cost host time).
#[derive(Clone, Debug)]
struct Queue {
    dir: [QDir; 2],
    cfg: QueueCfg,
    /// Completion order within a queue: a packet's bytes never land before
    /// the previous packet's.
    last_end: Cycle,
    /// Rate limiter.
    bucket: Bucket,
    /// DWRR deficit counter (bytes, or packets in packet mode).
    deficit: i64,
    /// Q_SW_CTRL.RST_DMB released the packet its DMB holds: it starts
    /// without waiting for the earlier transfers.
    dmb_release: bool,
    /// The cycle a prefetch last gave a direction of the queue its first
    /// descriptor (nothing was waiting there): a packet ready since then
    /// may have missed an arbitration of that same cycle (a perturbed
    /// schedule draws it, docs/races.md §Schedule perturbation).
    ready_at: Cycle,
}

impl Queue {
    fn new() -> Self {
        Self {
            dir: [QDir::new(), QDir::new()],
            cfg: QueueCfg::default(),
            last_end: Cycle(0),
            bucket: Bucket::default(),
            deficit: 0,
            dmb_release: false,
            ready_at: Cycle(0),
        }
    }
}

impl std::ops::Index<usize> for Queue {
    type Output = QDir;
    fn index(&self, d: usize) -> &QDir {
        &self.dir[d]
    }
}

impl std::ops::IndexMut<usize> for Queue {
    fn index_mut(&mut self, d: usize) -> &mut QDir {
        &mut self.dir[d]
    }
}

/// The M2S packet scheduler's mode.
#[derive(Clone, Copy, Debug, Default)]
struct Arbitration {
    dwrr: bool,
    packet_mode: bool,
    inc_factor: u32,
}

/// A rate limiter's token bucket.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    active: bool,
    tokens: i64,
    last: Cycle,
}

/// A rate limiter's configuration.
#[derive(Clone, Copy, Debug)]
struct BucketCfg {
    max_burst: u32,
    token_bytes: u32,
    period_cycles: u64,
    paused: bool,
}

/// A packet in flight through the data path: a slot of the engine's slab
/// (two cache lines, its descriptors inline). A free slot keeps its
/// (empty) descriptor vectors for the next packet.
#[derive(Clone, Debug, Default)]
struct InFlight {
    tx: pieces::Pieces,
    rx: pieces::Pieces,
    epoch: (u32, u32),
    /// The slot holds a packet.
    live: bool,
    queue: u8,
}

const _: () = assert!(size_of::<InFlight>() <= 128);

impl InFlight {
    /// Frees the slot, keeping its (emptied) descriptor vectors for the
    /// next packet there.
    fn free(&mut self) {
        self.live = false;
        self.tx.clear();
        self.rx.clear();
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A doorbell write reaches the queue.
    Doorbell { dir: Dir, q: u8, n: u32 },
    /// A prefetch burst completes.
    FetchDone { dir: Dir, q: u8, epoch: u32, n: u8 },
    /// A packet's last byte lands.
    /// Index into the in-flight slab.
    PacketDone(u32),
}

// Small events keep the event heap's entries at 24 bytes (host speed).
const _: () = assert!(size_of::<Ev>() == 8);
const _: () = assert!(FETCH_BURST <= u8::MAX as u32);

/// One UDMA unit with its SDMA data path.
///
/// `repr(C)`, in this order: the fields a step, a packet start or a
/// completion touches (scalars, vector headers, the cached configuration,
/// the queue register files' headers) packed into the first few cache
/// lines, then the 16 queues inline, then what only register writes,
/// faults, tracing and summaries reach (with 16 engines interleaved, each
/// event finds few of its engine's cache lines still in L1; fewer lines,
/// fewer misses).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Engine {
    now: Cycle,
    /// The data path is busy until this cycle.
    data_free_at: Cycle,
    kick_at: Option<Cycle>,
    events: EventQueue<Ev>,
    /// Pending kicks (data path free: pick the next packet), kept beside
    /// the event queue as (cycle, insertion number), latest first: they
    /// run in the same global order as queued events, without a heap
    /// round trip per packet.
    kicks: Vec<(Cycle, u64)>,
    /// Internal events processed so far (simulator speed reporting).
    events_done: u64,
    /// Times a queue's completion head register (TCRHP/RCRHP) changed
    /// value: what a firmware polling for completions can observe
    /// (docs/firmware.md §Stalls).
    crhp_moves: u64,
    /// Register writes and bit-clearing reads ([`Engine::head_epoch`]).
    sw_epoch: u64,
    /// Last write completion in the unit (write barrier / SOW ordering).
    last_write_end: Cycle,
    /// Packets in flight (slab) and free slots.
    inflight: Vec<InFlight>,
    free_slots: Vec<usize>,
    /// See [`Engine::reg_epoch`].
    reg_epoch: u64,
    /// The maps, with the register slots every unit shares.
    maps: &'static UnitMaps,
    /// Schedule perturbation ([`Engine::set_schedule_seed`]); `None`: none.
    jitter: Option<Box<Perturb>>,
    cfg: Cfg,
    /// The engine's stream rate limiter.
    stream_bucket: Bucket,
    rr_next: usize,
    state: [DirState; 2],
    /// Queues whose M2S prefetch buffer may hold descriptors (a superset:
    /// set on every prefetch, cleared when the scheduler finds it empty),
    /// so the scheduler skips idle queues without touching them.
    m2s_maybe_ready: u16,
    trace: bool,
    id: u16,
    doorbell_latency: u64,
    /// The register files, the queue files' headers first.
    regs: UnitRegs,
    /// The queues, inline: a queue's lines sit at a fixed offset from the
    /// engine (no pointer to load first, no bounds check on `q % 16`).
    q: [Queue; QUEUES],
    /// Queue statistics.
    pub stats: [QueueStats; QUEUES],
    /// Faults raised, one tally per (direction, queue, cause, action), in
    /// the order first raised.
    faults: Vec<FaultTally>,
    /// Timing-only checks not made, by queue and check.
    unchecked: Vec<crate::stats::UncheckedTally>,
    log: Vec<EngineEvent>,
    crc_cache: crate::datapath::CrcCache,
    /// The DWRR scheduler's candidate buffer, reused across kicks.
    dwrr_ready: Vec<(u8, usize, usize, u64)>,
    /// Values right after reset and the driver-default masks, per block
    /// that differs from the map's reset values (M2S, S2M, GEN); never
    /// changes, so units copied from one prototype share it.
    init: std::sync::Arc<[(UnitBlock, RegFile<'static>)]>,
}

/// A perturbed schedule's draws (docs/races.md §Schedule perturbation):
/// the packets' extra latencies and the arbitration ties, two streams from
/// one seed, so that a tie drawn does not shift the latencies.
#[derive(Clone, Debug)]
pub(crate) struct Perturb {
    /// Extra packet latency.
    pub(crate) latency: Jitter,
    /// Which of the queues ready at one pick starts.
    pub(crate) arbitration: Jitter,
}

/// Extra packet latency drawn from a seed: reproducible, at most
/// [`JITTER_MAX_CYCLES`].
#[derive(Clone, Debug)]
pub(crate) struct Jitter(u64);

/// The most a perturbed schedule adds to one packet's landing. No public
/// figure bounds the jitter; 64 cycles exceeds a packet's fixed read and
/// write latency and two firmware poll periods, and is the largest power
/// of two that keeps the 32 KiB calibration point within its ±10 % under
/// every seed (docs/races.md §Schedule perturbation, docs/timing.md).
pub const JITTER_MAX_CYCLES: u64 = 64;

impl Jitter {
    /// SplitMix64: the next draw.
    fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next draw in `0..=JITTER_MAX_CYCLES`.
    pub(crate) fn next(&mut self) -> u64 {
        self.draw() % (JITTER_MAX_CYCLES + 1)
    }

    /// The next draw in `0..n` (`n` ≥ 1).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.draw() % n.max(1) as u64) as usize
    }
}

/// Storage slots of one unit's registers, the same for every unit of a
/// map ([`UnitMaps`] holds them).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UnitSlots {
    /// Hot hardware-owned queue registers, per direction (the same map for
    /// every queue of a direction): updated through slots, no map lookup.
    hot: [HotSlots; 2],
    /// Slots of the queue configuration registers (docs/references/driver.md §3.6).
    cfg: qcfg::QueueCfgSlots,
}

impl UnitSlots {
    /// Resolves the slots of a unit's maps.
    pub(crate) fn new(o: &crate::regs::UnitOffsets, files: &crate::regs::UnitFiles) -> Self {
        let slots = |f: &RegFile<'static>, qo: crate::regs::QueueOffsets| HotSlots {
            status: f.slot_of(qo.status).unwrap_or_default(),
            pkt_count: f.slot_of(qo.pkt_count).unwrap_or_default(),
            head: f.slot_of(qo.drhp).unwrap_or_default(),
            tail: f.slot_of(qo.drtp).unwrap_or_default(),
            comp_head: f.slot_of(qo.crhp).unwrap_or_default(),
            dcp: f.slot_of(qo.dcp).unwrap_or_default(),
        };
        Self {
            hot: [slots(&files.m2s_q, o.m2s_q), slots(&files.s2m_q, o.s2m_q)],
            cfg: qcfg::QueueCfgSlots::new(o, files),
        }
    }
}

/// Slots of the queue registers the hot paths write.
#[derive(Clone, Copy, Debug, Default)]
struct HotSlots {
    status: csr::HwSlot,
    pkt_count: csr::HwSlot,
    head: csr::HwSlot,
    tail: csr::HwSlot,
    comp_head: csr::HwSlot,
    /// Current-descriptor pointer.
    dcp: csr::HwSlot,
}

fn dir_idx(d: Dir) -> usize {
    match d {
        Dir::M2s => 0,
        Dir::S2m => 1,
    }
}

/// Builds units at reset by copying one built once per kind (a SENG engine,
/// an H2T engine) instead of building each register file from the maps:
/// the same unit as [`Engine::new`] gives, for a fraction of the work (a
/// chip stream touches 128 engines).
#[derive(Clone, Debug)]
pub struct EngineFactory {
    /// Built as unit 0 (SENG) and as unit 128 (H2T).
    seng: Engine,
    h2t: Engine,
}

impl EngineFactory {
    /// Prototypes for `maps` and `timing`.
    pub fn new(maps: &'static UnitMaps, timing: &TimingConfig) -> Self {
        Self {
            seng: Engine::new(0, maps, timing),
            h2t: Engine::new(128, maps, timing),
        }
    }

    /// Unit `id` at reset, as [`Engine::new`] builds it with the factory's
    /// maps and timing.
    pub fn engine(&self, id: u16) -> Engine {
        let mut e = if id < 128 {
            self.seng.clone()
        } else {
            self.h2t.clone()
        };
        e.id = id;
        e
    }
}

impl Engine {
    /// A unit at reset. The 128 SENG engines come up with the prefetch
    /// ring-id error masked (interrupt and abort) as the driver programs them;
    /// the 4 H2T engines (128–131) keep it armed (docs/references/driver.md §2.6,
    /// docs/references/design.md §8).
    pub fn new(id: u16, maps: &'static UnitMaps, timing: &TimingConfig) -> Self {
        let mut e = Self {
            id,
            maps,
            regs: UnitRegs::new(maps),
            state: [DirState::Disabled; 2],
            q: std::array::from_fn(|_| Queue::new()),
            last_write_end: Cycle(0),
            data_free_at: Cycle(0),
            kick_at: None,
            kicks: Vec::new(),
            rr_next: 0,
            events: EventQueue::default(),
            stats: std::array::from_fn(|_| QueueStats::default()),
            faults: Vec::new(),
            unchecked: Vec::new(),
            trace: false,
            log: Vec::new(),
            events_done: 0,
            crhp_moves: 0,
            now: Cycle(0),
            crc_cache: crate::datapath::CrcCache::default(),
            doorbell_latency: timing.doorbell_latency_cycles,
            init: std::sync::Arc::new([]),
            reg_epoch: 0,
            sw_epoch: 0,
            stream_bucket: Bucket::default(),
            cfg: Cfg::default(),
            inflight: Vec::new(),
            free_slots: Vec::new(),
            m2s_maybe_ready: 0,
            dwrr_ready: Vec::with_capacity(QUEUES),
            jitter: None,
        };
        if id < 128 {
            let o = &maps.offsets;
            let a = o.sec[Group::A as usize];
            let b = o.sec[Group::B as usize];
            let _ = e.regs.udma_gen.hw_set(a.mask, sec_a::PREF_RING_ID);
            let _ = e.regs.udma_gen.hw_set(a.abort_mask, sec_a::PREF_RING_ID);
            let _ = e.regs.udma_gen.hw_set(b.mask, sec_b::PREF_RING_ID);
            let _ = e.regs.udma_gen.hw_set(b.abort_mask, sec_b::PREF_RING_ID);
            let _ = e.regs.m2s.hw_set(o.m2s_err_log_mask, sec_a::PREF_RING_ID);
            let _ = e.regs.s2m.hw_set(o.s2m_err_log_mask, sec_b::PREF_RING_ID);
        }
        e.refresh_config();
        e.init = std::sync::Arc::new([
            (UnitBlock::M2s, e.regs.m2s.clone()),
            (UnitBlock::S2m, e.regs.s2m.clone()),
            (UnitBlock::Gen, e.regs.udma_gen.clone()),
        ]);
        e
    }

    /// Registers of block `b` that differ from the unit's state right after
    /// reset (which, for SENG engines, includes the driver-default ring-id
    /// masks), by name.
    pub fn changed_registers(
        &self,
        b: UnitBlock,
    ) -> std::collections::BTreeMap<String, soc_map::Hex32> {
        let Some(now) = self.regs.file(b) else {
            return Default::default();
        };
        match self.init.iter().find(|(ib, _)| *ib == b) {
            None => now.diff_from_reset(),
            Some((_, init)) => now
                .iter()
                .zip(init.iter())
                .filter(|((_, v), (_, i))| v != i)
                .map(|((r, v), _)| (r.name(), soc_map::Hex32(v)))
                .collect(),
        }
    }

    /// Schedule perturbation (docs/races.md §Schedule perturbation): with
    /// a seed, each packet's latency grows by a pseudo-random 0 ..=
    /// [`JITTER_MAX_CYCLES`] cycles drawn from the seed and the engine id
    /// (queues still complete in order), and when a queue's packet became
    /// ready in the very cycle of a pick while another queue waited,
    /// whether it reached that pick is drawn too (a tie round robin and
    /// DWRR leave open); `None` restores the model's latencies and
    /// arbitration.
    pub fn set_schedule_seed(&mut self, seed: Option<u64>) {
        self.jitter = seed.map(|s| {
            let s = s ^ u64::from(self.id).wrapping_mul(0xD1B5_4A32_D192_ED03);
            Box::new(Perturb {
                latency: Jitter(s),
                arbitration: Jitter(s ^ 0xA076_1D64_78BD_642F),
            })
        });
    }

    /// Engine id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Records engine events for [`Engine::take_log`] when on.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// Drains the recorded events, keeping the log's room for the next.
    pub fn drain_log(&mut self) -> std::vec::Drain<'_, EngineEvent> {
        self.log.drain(..)
    }

    /// Takes the recorded events.
    pub fn take_log(&mut self) -> Vec<EngineEvent> {
        std::mem::take(&mut self.log)
    }

    /// The register file of a block.
    pub fn regs(&self, b: UnitBlock) -> Option<&RegFile<'static>> {
        self.regs.file(b)
    }

    /// Internal events this engine has processed (doorbells, prefetches,
    /// scheduling kicks, packet completions).
    pub fn events_done(&self) -> u64 {
        self.events_done
    }

    /// How many times a completion head register (TCRHP/RCRHP of any
    /// queue) has changed value: a firmware that only polls completion heads
    /// sees nothing new while this stays the same (docs/firmware.md §Stalls).
    pub fn crhp_moves(&self) -> u64 {
        self.crhp_moves
    }

    /// Descriptors queue `queue` has completed since the engine was made,
    /// (M2S, S2M): monotonic, never reset (a completion head advances
    /// only with these).
    pub fn completed_descs(&self, queue: u8) -> (u64, u64) {
        let q = &self.q[usize::from(queue) % QUEUES];
        (q[dir_idx(Dir::M2s)].done, q[dir_idx(Dir::S2m)].done)
    }

    /// The cycle of the next internal event, if any.
    pub fn next_event(&self) -> Option<Cycle> {
        let kick = self.kicks.last().map(|k| k.0);
        match (self.events.peek_cycle(), kick) {
            (Some(e), Some(k)) => Some(e.min(k)),
            (e, k) => e.or(k),
        }
    }

    /// Direction state.
    pub fn dir_state(&self, d: Dir) -> DirState {
        self.state[dir_idx(d)]
    }

    /// The faults this engine raised since it was built, in the order
    /// first raised (kept when a queue or the engine is reset: they are
    /// the run's record).
    pub fn faults(&self) -> &[FaultTally] {
        &self.faults
    }

    /// The hardware checks this engine could not make in timing-only mode
    /// (bytes not moved) and passed over, by queue and check, in the order
    /// first met.
    pub fn unchecked(&self) -> &[crate::stats::UncheckedTally] {
        &self.unchecked
    }

    /// Records a check passed over on queue `q` (see [`Engine::unchecked`]).
    pub(crate) fn record_unchecked(&mut self, q: u8, check: &'static str, detail: String) {
        let now = self.now.0;
        match self
            .unchecked
            .iter_mut()
            .find(|u| u.queue == q && u.check == check)
        {
            Some(u) => u.count += 1,
            None => self.unchecked.push(crate::stats::UncheckedTally {
                queue: q,
                check,
                count: 1,
                first_cycle: now,
                detail,
            }),
        }
    }

    /// True when queue `q`'s `dir` half went NON_ACTIVE after an AXI error
    /// (docs/references/wiki.md §I.4).
    pub fn queue_non_active(&self, q: u8, dir: Dir) -> bool {
        self.q[usize::from(q) % QUEUES][dir_idx(dir)].non_active
    }

    /// True when no descriptor is posted but unfinished and nothing is pending.
    pub fn is_idle(&self) -> bool {
        self.events.is_empty() && self.kicks.is_empty()
    }

    fn log(&mut self, kind: EventKind) {
        if self.trace {
            self.log.push(EngineEvent {
                cycle: self.now.0,
                engine: self.id,
                kind,
            });
        }
    }

    /// [`Engine::log`] for the per-packet events: the event is only built
    /// (and dropped) when tracing is on.
    #[inline]
    fn log_with(&mut self, kind: impl FnOnce() -> EventKind) {
        if self.trace {
            let kind = kind();
            self.log(kind);
        }
    }

    // ------------------------------------------------------------ running

    /// Processes every event due at or before `now`. DMA reads and writes go
    /// through `bus`.
    pub fn step(&mut self, now: Cycle, bus: &mut dyn Bus, timing: &TimingConfig) {
        self.reg_epoch += 1;
        loop {
            // The earlier of the next queued event and the next kick.
            if let Some(&(kick_at, kick_seq)) = self.kicks.last()
                && kick_at <= now
                && self
                    .events
                    .peek_key()
                    .is_none_or(|k| (kick_at, kick_seq) < k)
            {
                self.kicks.pop();
                self.now = kick_at;
                self.events_done += 1;
                self.kick_at = None;
                self.schedule(bus, timing);
                continue;
            }
            let Some((at, ev)) = self.events.pop_due(now) else {
                break;
            };
            self.now = at;
            self.events_done += 1;
            match ev {
                Ev::Doorbell { dir, q, n } => self.doorbell(dir, q, n, bus, timing),
                Ev::FetchDone { dir, q, epoch, n } => match dir {
                    Dir::M2s => self.fetch_done_m2s(q, epoch, u32::from(n), bus, timing),
                    Dir::S2m => self.fetch_done_s2m(q, epoch, u32::from(n), bus, timing),
                },
                Ev::PacketDone(slot) => {
                    let slot = slot as usize;
                    // The slab leaves the engine while the packet
                    // completes (completion starts no packet), so the
                    // packet is read in place; then its slot is free.
                    let inflight = std::mem::take(&mut self.inflight);
                    if let Some(p) = inflight.get(slot).filter(|p| p.live) {
                        self.free_slots.push(slot);
                        self.packet_done(p, bus, timing);
                    }
                    debug_assert!(self.inflight.is_empty(), "a completion used the slab");
                    self.inflight = inflight;
                    if let Some(p) = self.inflight.get_mut(slot) {
                        p.free();
                    }
                }
            }
        }
        self.now = now;
    }

    fn schedule_kick(&mut self, at: Cycle) {
        let at = at.max(self.data_free_at);
        if self.kick_at.is_none_or(|k| k > at) {
            self.kick_at = Some(at);
            let key = (at, self.events.next_seq());
            // Latest first; a new kick is usually the earliest.
            let pos = self.kicks.partition_point(|&k| k > key);
            self.kicks.insert(pos, key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written [`QDir`] clone copies every field, with an empty
    /// prefetch buffer (made afresh) and with descriptors waiting in it.
    #[test]
    fn a_queue_direction_clones_whole() {
        let mut d = QDir::new();
        (d.posted, d.done, d.fetched_total) = (9, 2, 5);
        (d.head, d.head_id, d.tail, d.tail_id) = (3, 2, 7, 3);
        (d.comp_head, d.comp_id, d.fetch_busy) = (4, 0, true);
        (d.in_packet, d.pkt_descs, d.pkt_bytes, d.non_active) = (true, 2, 4096, true);
        (d.epoch, d.fetch_epoch) = (11, 12);
        for n in 0..3u8 {
            assert_eq!(format!("{:?}", d.clone()), format!("{d:?}"));
            d.fetched.push_back(Fetched {
                idx: u32::from(n),
                desc: crate::desc::RawDesc::from_bytes([n + 1; 16]),
            });
        }
        assert_eq!(format!("{:?}", d.clone()), format!("{d:?}"));
    }
}
