//! One UDMA unit (an M2S/S2M pair with 16 queues per direction) and its SDMA
//! data path, driven only through its CSRs (seed 004 §4, driver-facts §2–3,
//! wiki-facts §B).
//!
//! Time model (DESIGN §4, `docs/timing.md`): a doorbell takes effect after
//! `doorbell_latency`; each queue prefetches up to 8 descriptors per fetch
//! (`desc_fetch_latency` + per-descriptor cycles); the unit's data path moves
//! one packet at a time, queues served round-robin, `transfer_cycles` per
//! descriptor; a packet's bytes land `read_latency + data + write_latency`
//! after it starts, in order within its queue. Pointers, status and
//! completion registers change at the cycle the model reaches them.

use std::collections::VecDeque;

use csr::{Delta, RegFile};
use sim_core::{Bus, Cycle, EventQueue, TimingConfig};
use soc_map::Hex;

use crate::block::{Dir, QUEUES, UnitBlock};
use crate::desc::{self, RawDesc};
use crate::event::{EngineEvent, EventKind};
use crate::regs::{Group, UnitMaps, UnitRegs};
use crate::stats::QueueStats;

/// Descriptors per prefetch burst (driver-facts §2.7 desc_rd_cfg_3 = 8).
const FETCH_BURST: u32 = 8;
/// Prefetched descriptors a queue may hold (wiki-facts §B.5 desc_pref_cfg
/// fifo_depth reset 0x80).
const PREFETCH_DEPTH: usize = 128;
/// Largest ring (driver-facts §3.7: 2^24 − 16 descriptors).
pub const MAX_RING_DESCS: u32 = (1 << 24) - 16;
/// Smallest ring the driver accepts (driver-facts §3.7).
pub const MIN_RING_DESCS: u32 = 32;

/// Ring-id a queue expects after reset (driver-facts §3.6).
pub const INITIAL_RING_ID: u8 = 1;

/// SEC_A (M2S) cause bits (driver-facts §2.6, wiki-facts §B.2).
mod sec_a {
    pub const DATA_AXI_RESPONSE: u32 = 1 << 8;
    pub const PREF_AXI_RESPONSE: u32 = 1 << 11;
    pub const PKT_LEN: u32 = 1 << 13;
    pub const MAX_DESC: u32 = 1 << 14;
    pub const FIRST: u32 = 1 << 15;
    pub const LAST: u32 = 1 << 16;
    pub const PREF_RING_ID: u32 = 1 << 17;
}

/// SEC_B (S2M) cause bits (driver-facts §2.6).
mod sec_b {
    pub const DATA_WR_AXI_RESPONSE: u32 = 1 << 1;
    pub const PREF_AXI_RESPONSE: u32 = 1 << 9;
    pub const PREF_RING_ID: u32 = 1 << 11;
    pub const COMP_AXI: u32 = 1 << 14;
    pub const PKT_LEN_MISMATCH: u32 = 1 << 24;
}

/// SEC_D (simulator-defined) cause bits.
mod sec_d {
    pub const M2S_DOORBELL_OVERRUN: u32 = 1 << 0;
    pub const S2M_DOORBELL_OVERRUN: u32 = 1 << 1;
}

/// Engine direction state (driver-facts §2.8: 2-bit sub-states 0 idle,
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
    /// AXI error made the queue NON_ACTIVE (GEN axi_queue, wiki-facts §I.4).
    non_active: bool,
    /// Bumped by queue reset; events of an older generation are stale.
    epoch: u32,
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
        }
    }

    fn reset(&mut self) {
        let epoch = self.epoch.wrapping_add(1);
        *self = QDir::new();
        self.epoch = epoch;
    }

    fn outstanding(&self) -> u64 {
        self.posted - self.done
    }
}

/// Register-derived configuration, refreshed after every register write
/// (except doorbells) so the hot paths read plain fields.
#[derive(Clone, Debug, Default)]
struct Cfg {
    encode_64k: bool,
    max_pkt: u64,
    max_descs: u32,
    arb: Arbitration,
    stream_bucket: Option<BucketCfg>,
    /// Prefetch refill policy per direction, DESC_PREF_CFG_3 (driver-facts
    /// §2.7, wiki-facts §D.4): (min burst below threshold, min burst above
    /// threshold, threshold).
    pref: [(u8, u8, u8); 2],
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
#[derive(Debug)]
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
}

impl Queue {
    fn new() -> Self {
        Self {
            dir: [QDir::new(), QDir::new()],
            cfg: QueueCfg::default(),
            last_end: Cycle(0),
            bucket: Bucket::default(),
            deficit: 0,
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

/// A packet in flight through the data path.
#[derive(Debug)]
struct InFlight {
    queue: u8,
    epoch: (u32, u32),
    tx: Vec<Fetched>,
    rx: Vec<Fetched>,
    bytes: u64,
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
/// `repr(C)`, in this order: the scalars and vector headers every event
/// touches first, next to each other, then the 16 queues inline, then the
/// rest (with 16 engines interleaved, each event finds few of its engine's
/// cache lines still in L1; fewer lines, fewer misses).
#[derive(Debug)]
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
    /// Last write completion in the unit (write barrier / SOW ordering).
    last_write_end: Cycle,
    /// Packets in flight (slab) and free slots.
    inflight: Vec<Option<InFlight>>,
    free_slots: Vec<usize>,
    /// Reusable descriptor vectors.
    pool: Vec<Vec<Fetched>>,
    /// Hot hardware-owned queue registers, per direction (the same map for
    /// every queue of a direction): updated through slots, no map lookup.
    hot: [HotSlots; 2],
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
    /// The queues, inline: a queue's lines sit at a fixed offset from the
    /// engine (no pointer to load first, no bounds check on `q % 16`).
    q: [Queue; QUEUES],
    /// Queue statistics.
    pub stats: [QueueStats; QUEUES],
    regs: UnitRegs,
    maps: &'static UnitMaps,
    log: Vec<EngineEvent>,
    crc_cache: crate::datapath::CrcCache,
    doorbell_latency: u64,
    /// The DWRR scheduler's candidate buffer, reused across kicks.
    dwrr_ready: Vec<(u8, usize, usize, u64)>,
    /// Values right after reset and the driver-default masks, per block
    /// that differs from the map's reset values (M2S, S2M, GEN).
    init: Vec<(UnitBlock, RegFile<'static>)>,
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

impl Engine {
    /// A unit at reset. The 128 SENG engines come up with the prefetch
    /// ring-id error masked (interrupt and abort) as the driver programs them;
    /// the 4 H2T engines (128–131) keep it armed (driver-facts §2.6,
    /// DESIGN §8).
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
            trace: false,
            log: Vec::new(),
            events_done: 0,
            now: Cycle(0),
            crc_cache: crate::datapath::CrcCache::default(),
            doorbell_latency: timing.doorbell_latency_cycles,
            init: Vec::new(),
            stream_bucket: Bucket::default(),
            cfg: Cfg::default(),
            inflight: Vec::new(),
            free_slots: Vec::new(),
            pool: Vec::new(),
            hot: Default::default(),
            m2s_maybe_ready: 0,
            dwrr_ready: Vec::with_capacity(QUEUES),
        };
        let slots = |f: &RegFile<'static>, qo: crate::regs::QueueOffsets| HotSlots {
            status: f.slot_of(qo.status).unwrap_or_default(),
            pkt_count: f.slot_of(qo.pkt_count).unwrap_or_default(),
            head: f.slot_of(qo.drhp).unwrap_or_default(),
            tail: f.slot_of(qo.drtp).unwrap_or_default(),
            comp_head: f.slot_of(qo.crhp).unwrap_or_default(),
            dcp: f.slot_of(qo.dcp).unwrap_or_default(),
        };
        e.hot = [
            slots(&e.regs.m2s_q[0], maps.offsets.m2s_q),
            slots(&e.regs.s2m_q[0], maps.offsets.s2m_q),
        ];
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
        e.init = vec![
            (UnitBlock::M2s, e.regs.m2s.clone()),
            (UnitBlock::S2m, e.regs.s2m.clone()),
            (UnitBlock::Gen, e.regs.udma_gen.clone()),
        ];
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

    /// Engine id.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Records engine events for [`Engine::take_log`] when on.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
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

    // ---------------------------------------------------------------- MMIO

    /// A software read of a register (read side effects apply).
    pub fn mmio_read(&mut self, b: UnitBlock, offset: u64) -> Option<u32> {
        self.regs.file_mut(b)?.read(offset).ok().map(|o| o.value)
    }

    /// A register value without side effects.
    pub fn peek(&self, b: UnitBlock, offset: u64) -> Option<u32> {
        self.regs.file(b)?.value(offset).ok()
    }

    /// A software write of a register at cycle `now`: access semantics, then
    /// the engine reacts (doorbells, resets, state changes, enables).
    pub fn mmio_write(
        &mut self,
        b: UnitBlock,
        offset: u64,
        value: u32,
        now: Cycle,
    ) -> Option<csr::WriteOutcome<'static>> {
        self.now = self.now.max(now);
        let out = self.regs.file_mut(b)?.write(offset, value).ok()?;
        let o = self.maps.offsets;
        let doorbell = matches!(b, UnitBlock::M2sQ(_)) && offset == o.m2s_q.drtp_inc
            || matches!(b, UnitBlock::S2mQ(_)) && offset == o.s2m_q.drtp_inc;
        if !doorbell {
            self.refresh_config();
        }
        match b {
            UnitBlock::M2sQ(q) | UnitBlock::S2mQ(q) => {
                let dir = if matches!(b, UnitBlock::M2sQ(_)) {
                    Dir::M2s
                } else {
                    Dir::S2m
                };
                let qo = if dir == Dir::M2s { o.m2s_q } else { o.s2m_q };
                if offset == qo.drtp_inc {
                    if let Some(Delta::Inc(n)) = out.delta {
                        let at = now.after(self.timing_doorbell());
                        self.events.push(at, Ev::Doorbell { dir, q, n });
                    }
                } else if offset == qo.sw_ctrl && out.pulses != 0 {
                    self.queue_sw_ctrl(dir, q, out.pulses);
                } else if dir == Dir::M2s && offset != qo.cfg {
                    // Scheduler and rate-limiter settings: re-arbitrate.
                    self.schedule_kick(now);
                } else if offset == qo.cfg && out.rose_bits() != 0 {
                    // An enable rose: resume prefetch and scheduling.
                    self.events.push(
                        now,
                        Ev::FetchDone {
                            dir,
                            q,
                            epoch: u32::MAX,
                            n: 0,
                        },
                    );
                    self.schedule_kick(now);
                }
            }
            UnitBlock::M2s if offset == o.m2s_change_state && out.pulses != 0 => {
                self.change_state(Dir::M2s, out.pulses);
            }
            UnitBlock::S2m if offset == o.s2m_change_state && out.pulses != 0 => {
                self.change_state(Dir::S2m, out.pulses);
            }
            UnitBlock::M2s => self.schedule_kick(now),
            UnitBlock::Gen => self.iofic_write(offset, &out),
            _ => {}
        }
        Some(out)
    }

    /// Re-reads every register the hot paths need into `self.cfg`.
    fn refresh_config(&mut self) {
        let mut c = Cfg::default();
        for q in 0..QUEUES as u8 {
            let qi = usize::from(q);
            let mut qc = QueueCfg::default();
            for dir in [Dir::M2s, Dir::S2m] {
                let d = dir_idx(dir);
                let qo = self.qoff(dir);
                let cfg = self.qval(dir, q, qo.cfg);
                qc.en[d] = (cfg & (1 << 16) != 0, cfg & (1 << 17) != 0);
                let lo = u64::from(self.qval(dir, q, qo.drbp_low) & 0xFFFF_FFC0);
                let hi = u64::from(self.qval(dir, q, qo.drbp_high));
                qc.ring_base[d] = (hi << 32) | lo;
                qc.ring_len[d] = self.qval(dir, q, qo.drl) & 0xFF_FFFF;
                qc.comp_en[d] = self.qval(dir, q, qo.comp_cfg) & 1 != 0;
                let lo = u64::from(self.qval(dir, q, qo.crbp_low) & 0xFFFF_FFC0);
                let hi = u64::from(self.qval(dir, q, qo.crbp_high));
                qc.comp_base[d] = (hi << 32) | lo;
            }
            let mask_off = self.maps.offsets.m2s_q.rlimit_mask.unwrap_or(0x74);
            qc.dmb_pause = self.regs.m2s_q[qi].value(mask_off).unwrap_or(0x7) & 0x4 == 0;
            let pkt_off = self.maps.offsets.s2m_q.pkt_cfg.unwrap_or(0x5C);
            let pkt = self.regs.s2m_q[qi].value(pkt_off).unwrap_or(0);
            qc.hdr_split = if pkt & (3 << 16) != 0 {
                u64::from(pkt & 0xFFFF)
            } else {
                0
            };
            qc.crc_init = self
                .regs
                .sdma_app
                .value(self.maps.offsets.m2s_crc_init[qi])
                .unwrap_or(0xFFFF_FFFF);
            let d1 = self.q_reg(q, "DWRR_CFG_1");
            qc.dwrr = (
                d1 & (1 << 24) != 0,
                self.q_reg(q, "DWRR_CFG_2") & 0xFF,
                self.q_reg(q, "DWRR_CFG_3") & 0xFF,
                d1 & 0xFF_FFFF,
                d1 & (1 << 25) != 0,
            );
            qc.bucket = self.bucket_cfg("RLIMIT_", &self.regs.m2s_q[qi], "RLIMIT_MASK");
            if let Some(queue) = self.q.get_mut(qi) {
                queue.cfg = qc;
            }
        }
        let cfg_len = self
            .regs
            .m2s
            .value(self.maps.offsets.m2s_cfg_len)
            .unwrap_or(0);
        c.encode_64k = cfg_len & (1 << 24) != 0;
        c.max_pkt = u64::from(cfg_len & 0xF_FFFF);
        c.max_descs = self
            .regs
            .m2s
            .value(self.maps.offsets.m2s_desc_pref_cfg_2)
            .unwrap_or(0)
            & 0xFFF;
        c.arb = self.arbitration();
        for (d, file) in [(0, &self.regs.m2s), (1, &self.regs.s2m)] {
            let v = file
                .map()
                .find("DESC_PREF_CFG_3", None)
                .and_then(|o| file.value(o).ok())
                .unwrap_or(0);
            c.pref[d] = (
                (v & 0xF) as u8,
                ((v >> 4) & 0xF) as u8,
                ((v >> 8) & 0xFF) as u8,
            );
        }
        c.stream_bucket = self.bucket_cfg("STREAM_RLIMIT_", &self.regs.m2s, "STREAM_RLIMIT_MASK");
        self.cfg = c;
    }

    fn timing_doorbell(&self) -> u64 {
        self.doorbell_latency
    }

    /// IOFIC owner semantics (driver-facts §2.6): CAUSE_SET sets cause bits,
    /// MASK_CLEAR clears the mask bits written as 0; STATUS = cause & !mask.
    fn iofic_write(&mut self, offset: u64, out: &csr::WriteOutcome<'static>) {
        for g in self.maps.offsets.sec {
            if offset == g.cause_set {
                let _ = self.regs.udma_gen.hw_update(g.cause, |c| c | out.written);
            } else if offset == g.mask_clear {
                let _ = self.regs.udma_gen.hw_update(g.mask, |m| m & out.written);
            } else if offset != g.cause && offset != g.mask {
                continue;
            }
            let cause = self.regs.udma_gen.value(g.cause).unwrap_or(0);
            let mask = self.regs.udma_gen.value(g.mask).unwrap_or(0);
            let _ = self.regs.udma_gen.hw_set(g.status, cause & !mask);
        }
    }

    fn change_state(&mut self, dir: Dir, bits: u32) {
        let new = if bits & 0x4 != 0 {
            DirState::Aborted
        } else if bits & 0x2 != 0 {
            DirState::Disabled
        } else {
            DirState::Normal
        };
        self.set_state(dir, new, bits & 0x7);
        if new == DirState::Normal {
            for q in 0..QUEUES as u8 {
                self.events.push(
                    self.now,
                    Ev::FetchDone {
                        dir,
                        q,
                        epoch: u32::MAX,
                        n: 0,
                    },
                );
            }
            self.schedule_kick(self.now);
        }
    }

    fn set_state(&mut self, dir: Dir, new: DirState, cmd: u32) {
        self.state[dir_idx(dir)] = new;
        let s = new.code();
        let value = s | (s << 4) | (s << 8) | (s << 12) | (cmd << 16);
        let (file, off) = match dir {
            Dir::M2s => (&mut self.regs.m2s, self.maps.offsets.m2s_state),
            Dir::S2m => (&mut self.regs.s2m, self.maps.offsets.s2m_state),
        };
        let _ = file.hw_set(off, value);
        if new == DirState::Aborted {
            for q in 0..QUEUES {
                let qd = &mut self.q[q][dir_idx(dir)];
                qd.fetched.clear();
                qd.epoch = qd.epoch.wrapping_add(1);
                qd.fetch_busy = false;
            }
        }
        self.log(EventKind::State {
            dir,
            state: new.name().to_string(),
        });
    }

    fn qfile(&mut self, dir: Dir, q: u8) -> &mut RegFile<'static> {
        let i = usize::from(q) % QUEUES;
        match dir {
            Dir::M2s => &mut self.regs.m2s_q[i],
            Dir::S2m => &mut self.regs.s2m_q[i],
        }
    }

    fn qoff(&self, dir: Dir) -> crate::regs::QueueOffsets {
        match dir {
            Dir::M2s => self.maps.offsets.m2s_q,
            Dir::S2m => self.maps.offsets.s2m_q,
        }
    }

    fn qval(&self, dir: Dir, q: u8, off: u64) -> u32 {
        let i = usize::from(q) % QUEUES;
        let f = match dir {
            Dir::M2s => &self.regs.m2s_q[i],
            Dir::S2m => &self.regs.s2m_q[i],
        };
        f.value(off).unwrap_or(0)
    }

    /// Q_SW_CTRL (seed 004 §4.1; RST_Q confirmed, other bits inferred,
    /// DESIGN §8).
    fn queue_sw_ctrl(&mut self, dir: Dir, q: u8, bits: u32) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if bits & 0x100 != 0 {
            self.q[qi][d].reset();
            if dir == Dir::M2s {
                self.q[qi].last_end = self.now;
            }
        } else {
            let qd = &mut self.q[qi][d];
            if bits & 0x2 != 0 {
                qd.tail = 0;
                qd.tail_id = INITIAL_RING_ID;
            }
            if bits & 0x4 != 0 {
                qd.head = 0;
                qd.head_id = INITIAL_RING_ID;
                qd.fetched.clear();
                qd.epoch = qd.epoch.wrapping_add(1);
                qd.fetch_busy = false;
            }
        }
        self.sync_queue_regs(dir, q);
        if bits & 0x8 != 0 || bits & 0x100 != 0 {
            let off = self.qoff(dir).dcp;
            let _ = self.qfile(dir, q).hw_set(off, 0);
        }
        self.log(EventKind::QueueReset {
            dir,
            queue: q,
            bits,
        });
    }

    /// The model-owned Q_STATUS bits: q_used (24:0), prefetch busy (28),
    /// full (31); bits 29/30 (scheduler, DMB) are kept by their writers.
    fn status_bits(&self, dir: Dir, q: u8) -> u32 {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        let qd = &self.q[qi][d];
        let outstanding = qd.outstanding();
        let mut status = outstanding.min(0x1FF_FFFF) as u32;
        if qd.fetch_busy {
            status |= 1 << 28;
        }
        let len = self.q[qi].cfg.ring_len[d];
        if len != 0 && u64::from(len) <= outstanding {
            status |= 1 << 31;
        }
        status
    }

    /// Mirrors the queue's occupancy into Q_STATUS (q_used, prefetch, full).
    fn sync_status(&mut self, dir: Dir, q: u8) {
        let status = self.status_bits(dir, q);
        let slot = self.hot[dir_idx(dir)].status;
        self.qfile(dir, q)
            .hw_update_slot(slot, |s| (s & (1 << 29 | 1 << 30)) | status);
    }

    /// Mirrors the model's pointers into the queue's registers.
    fn sync_queue_regs(&mut self, dir: Dir, q: u8) {
        let qo = self.qoff(dir);
        let qd = &self.q[usize::from(q) % QUEUES][dir_idx(dir)];
        let ptr = |off: u32, id: u8| (off & 0xFF_FFFF) | (u32::from(id & 3) << 30);
        let head = ptr(qd.head, qd.head_id);
        let tail = ptr(qd.tail, qd.tail_id);
        let comp = ptr(qd.comp_head, qd.comp_id);
        let used = (qd.outstanding().min(0x1FF_FFFF)) as u32;
        let mut status = used;
        if qd.fetch_busy {
            status |= 1 << 28;
        }
        let full = {
            let len = self.q[usize::from(q) % QUEUES].cfg.ring_len[dir_idx(dir)];
            len != 0 && u64::from(len) <= qd.outstanding()
        };
        if full {
            status |= 1 << 31;
        }
        let _ = qo;
        let hot = self.hot[dir_idx(dir)];
        let f = self.qfile(dir, q);
        f.hw_update_slot(hot.head, |_| head);
        f.hw_update_slot(hot.tail, |_| tail);
        f.hw_update_slot(hot.comp_head, |_| comp);
        f.hw_update_slot(hot.status, |s| (s & (1 << 29 | 1 << 30)) | status);
    }

    // ---------------------------------------------------------- errors

    /// Raises a cause bit in secondary IOFIC group `g`; aborts the direction
    /// unless the abort mask has the bit (driver-facts §2.6).
    fn raise(
        &mut self,
        g: Group,
        bit: u32,
        dir: Dir,
        queue: Option<u8>,
        cause: &str,
        detail: String,
    ) -> bool {
        let io = self.maps.offsets.sec[g as usize];
        let _ = self.regs.udma_gen.hw_update(io.cause, |c| c | bit);
        let cause_v = self.regs.udma_gen.value(io.cause).unwrap_or(0);
        let mask = self.regs.udma_gen.value(io.mask).unwrap_or(0);
        let _ = self.regs.udma_gen.hw_set(io.status, cause_v & !mask);
        let abort_mask = self.regs.udma_gen.value(io.abort_mask).unwrap_or(0);
        let aborts = abort_mask & bit == 0;
        let gname = match g {
            Group::A => "SEC_A",
            Group::B => "SEC_B",
            Group::D => "SEC_D",
        };
        let action = if aborts {
            "abort"
        } else if mask & bit != 0 {
            "masked"
        } else {
            "logged"
        };
        self.log(EventKind::Fault {
            dir,
            queue,
            cause: format!("{gname}_INT_CAUSE.{cause}"),
            detail,
            action: action.to_string(),
        });
        if aborts {
            self.set_state(dir, DirState::Aborted, 0);
        }
        aborts
    }

    /// An AXI error on queue `q`: the queue goes NON_ACTIVE (GEN axi_queue,
    /// wiki-facts §I.4) and the cause bit is raised.
    fn axi_error(&mut self, dir: Dir, q: u8, g: Group, bit: u32, cause: &str, detail: String) {
        let qi = usize::from(q) % QUEUES;
        let cfg_off = self.maps.offsets.axi_queue_cfg[qi];
        let err_off = self.maps.offsets.axi_queue_error_status[qi];
        let state_bit = match dir {
            Dir::M2s => 1 << 12,
            Dir::S2m => 1 << 0,
        };
        let _ = self.regs.udma_gen.hw_update(cfg_off, |c| c | state_bit);
        let _ = self.regs.udma_gen.hw_update(err_off, |e| e | bit);
        self.q[qi][dir_idx(dir)].non_active = true;
        self.log(EventKind::Fault {
            dir,
            queue: Some(q),
            cause: "AXI_QUEUE_CFG.NON_ACTIVE".to_string(),
            detail: detail.clone(),
            action: "queue_non_active".to_string(),
        });
        self.raise(g, bit, dir, Some(q), cause, detail);
    }

    // ------------------------------------------------------------ running

    /// Processes every event due at or before `now`. DMA reads and writes go
    /// through `bus`.
    pub fn step(&mut self, now: Cycle, bus: &mut dyn Bus, timing: &TimingConfig) {
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
                Ev::FetchDone { dir, q, epoch, n } => {
                    self.fetch_done(dir, q, epoch, u32::from(n), bus, timing)
                }
                Ev::PacketDone(slot) => {
                    let slot = slot as usize;
                    if let Some(p) = self.inflight.get_mut(slot).and_then(Option::take) {
                        self.free_slots.push(slot);
                        self.packet_done(&p, bus, timing);
                        self.recycle(p);
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

    fn doorbell(&mut self, dir: Dir, q: u8, n: u32, bus: &mut dyn Bus, timing: &TimingConfig) {
        let len = self.q[usize::from(q) % QUEUES].cfg.ring_len[dir_idx(dir)];
        let qi = usize::from(q) % QUEUES;
        let outstanding = self.q[qi][dir_idx(dir)].outstanding();
        if len == 0 || outstanding + u64::from(n) > u64::from(len) {
            let (bit, name) = match dir {
                Dir::M2s => (sec_d::M2S_DOORBELL_OVERRUN, "M2S_DOORBELL_OVERRUN"),
                Dir::S2m => (sec_d::S2M_DOORBELL_OVERRUN, "S2M_DOORBELL_OVERRUN"),
            };
            self.raise(
                Group::D,
                bit,
                dir,
                Some(q),
                name,
                format!(
                    "{}.q{q}: increment {n} with {outstanding} outstanding overruns a ring of {len} descriptors; dropped",
                    dir.name()
                ),
            );
            return;
        }
        let base = self.ring_base(dir, q);
        if !(MIN_RING_DESCS..=MAX_RING_DESCS).contains(&len)
            || !(base + 16 * u64::from(len)).is_multiple_of(256)
            || !base.is_multiple_of(256)
        {
            self.log(EventKind::RingWarning {
                dir,
                queue: q,
                detail: format!(
                    "ring base {base:#x} / length {len} break the driver's limits (32..2^24-16 descriptors, base and end 256-byte aligned)"
                ),
            });
        }
        let qd = &mut self.q[qi][dir_idx(dir)];
        qd.posted += u64::from(n);
        let new_tail = u64::from(qd.tail) + u64::from(n);
        let wraps = new_tail / u64::from(len);
        qd.tail = (new_tail % u64::from(len)) as u32;
        qd.tail_id = ((u64::from(qd.tail_id) + wraps) & 3) as u8;
        let (tail, tail_id) = (qd.tail, qd.tail_id);
        self.sync_queue_regs(dir, q);
        self.log_with(|| EventKind::Doorbell {
            dir,
            queue: q,
            increment: n,
            tail,
            tail_ring_id: tail_id,
        });
        self.try_fetch(dir, q, timing);
        let _ = bus;
    }

    fn ring_base(&self, dir: Dir, q: u8) -> u64 {
        self.q[usize::from(q) % QUEUES].cfg.ring_base[dir_idx(dir)]
    }

    fn enabled(&self, dir: Dir, q: u8) -> (bool, bool) {
        self.q[usize::from(q) % QUEUES].cfg.en[dir_idx(dir)]
    }

    #[inline(always)]
    fn try_fetch(&mut self, dir: Dir, q: u8, timing: &TimingConfig) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if self.state[d] != DirState::Normal {
            return;
        }
        let (en_pref, _) = self.enabled(dir, q);
        let qd = &self.q[qi][d];
        if !en_pref || qd.fetch_busy || qd.non_active {
            return;
        }
        let pending = qd.posted - qd.fetched_total;
        let fill = qd.fetched.len();
        let room = PREFETCH_DEPTH.saturating_sub(fill) as u64;
        let n = pending.min(u64::from(FETCH_BURST)).min(room) as u32;
        if n == 0 {
            return;
        }
        // Refill policy: above the threshold, wait until a minimum burst fits.
        let (below, above, thr) = self.cfg.pref[d];
        let min_burst = if thr != 0 && fill >= usize::from(thr) {
            above
        } else {
            below
        };
        if (room as usize) < usize::from(min_burst) {
            return;
        }
        let epoch = qd.epoch;
        self.q[qi][d].fetch_busy = true;
        let at = self.now.after(
            timing.desc_fetch_latency_cycles + timing.desc_fetch_per_desc_cycles * u64::from(n),
        );
        // n <= FETCH_BURST, which fits a u8 (asserted at the Ev type).
        let n = n as u8;
        self.events.push(at, Ev::FetchDone { dir, q, epoch, n });
        self.sync_status(dir, q);
    }

    #[inline(never)]
    fn fetch_done(
        &mut self,
        dir: Dir,
        q: u8,
        epoch: u32,
        n: u32,
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        let qi = usize::from(q) % QUEUES;
        let d = dir_idx(dir);
        if epoch == u32::MAX {
            // A wake-up after an enable or NORMAL: retry prefetch.
            self.try_fetch(dir, q, timing);
            self.schedule_kick(self.now);
            return;
        }
        if self.q[qi][d].epoch != epoch || self.state[d] != DirState::Normal {
            return;
        }
        self.q[qi][d].fetch_busy = false;
        let len = self.q[qi].cfg.ring_len[d];
        let base = self.ring_base(dir, q);
        let first_index = self.q[qi][d].head;
        let mut fetched = 0;
        // One bus read per contiguous run of the burst (it may wrap once).
        let mut burst = [0u8; 16 * FETCH_BURST as usize];
        let head0 = self.q[qi][d].head;
        let n_fit = if len == 0 {
            0
        } else {
            n.min(FETCH_BURST).min(len - head0.min(len))
        };
        let mut read_err = None;
        if n_fit > 0 {
            let bytes = 16 * n_fit as usize;
            if let Err(e) = bus.read(base + 16 * u64::from(head0), &mut burst[..bytes]) {
                read_err = Some(e);
            }
        }
        if read_err.is_none() && n_fit < n.min(FETCH_BURST) && len != 0 {
            let rest = (n.min(FETCH_BURST) - n_fit) as usize;
            let from = 16 * n_fit as usize;
            if let Err(e) = bus.read(base, &mut burst[from..from + 16 * rest]) {
                read_err = Some(e);
            }
        }
        for k in 0..n.min(FETCH_BURST) {
            if len == 0 {
                break;
            }
            let idx = self.q[qi][d].head;
            let mut raw = [0u8; 16];
            raw.copy_from_slice(&burst[16 * k as usize..16 * (k as usize + 1)]);
            if let Some(e) = read_err.take() {
                let (g, bit) = match dir {
                    Dir::M2s => (Group::A, sec_a::PREF_AXI_RESPONSE),
                    Dir::S2m => (Group::B, sec_b::PREF_AXI_RESPONSE),
                };
                self.axi_error(
                    dir,
                    q,
                    g,
                    bit,
                    "PREF_AXI_RESPONSE",
                    format!("descriptor fetch at {e}"),
                );
                break;
            }
            let desc = RawDesc::from_bytes(raw);
            let expected = self.q[qi][d].head_id;
            if desc.ring_id() != expected {
                let (g, bit) = match dir {
                    Dir::M2s => (Group::A, sec_a::PREF_RING_ID),
                    Dir::S2m => (Group::B, sec_b::PREF_RING_ID),
                };
                let aborted = self.raise(
                    g,
                    bit,
                    dir,
                    Some(q),
                    "PREF_RING_ID",
                    format!(
                        "{}.q{q}[{idx}]: descriptor ring id {} but the queue expects {expected}",
                        dir.name(),
                        desc.ring_id()
                    ),
                );
                if aborted {
                    self.sync_queue_regs(dir, q);
                    return;
                }
            }
            if dir == Dir::M2s && !self.check_packet_shape(q, idx, &desc) {
                self.sync_queue_regs(dir, q);
                return;
            }
            if dir == Dir::M2s {
                self.m2s_maybe_ready |= 1 << qi;
            }
            let qd = &mut self.q[qi][d];
            qd.fetched.push_back(Fetched { idx, desc });
            qd.fetched_total += 1;
            qd.head += 1;
            if qd.head >= len {
                qd.head = 0;
                qd.head_id = (qd.head_id + 1) & 3;
            }
            fetched += 1;
        }
        let (head, head_id) = (self.q[qi][d].head, self.q[qi][d].head_id);
        // The next burst of this ring, into the host's caches.
        if fetched > 0 && head < len {
            let rest = u64::from((len - head).min(FETCH_BURST));
            bus.touch(base + 16 * u64::from(head), 16 * rest);
        }
        self.sync_queue_regs(dir, q);
        if fetched > 0 {
            self.log_with(|| EventKind::Prefetch {
                dir,
                queue: q,
                first_index,
                count: fetched,
                head,
                head_ring_id: head_id,
            });
        }
        self.try_fetch(dir, q, timing);
        self.schedule_kick(self.now);
    }

    /// FIRST/LAST consistency and the per-packet limits, checked as M2S
    /// prefetches (driver-facts §2.6 group A bits 13–16, §3.7 limits).
    /// Returns false when an unmasked error aborted the direction.
    fn check_packet_shape(&mut self, q: u8, idx: u32, desc: &RawDesc) -> bool {
        let qi = usize::from(q) % QUEUES;
        let encode_64k = self.cfg.encode_64k;
        let max_pkt = self.cfg.max_pkt;
        let max_descs = self.cfg.max_descs;
        let len = u64::from(desc.data_len(encode_64k));
        let qd = &self.q[qi][0];
        // The common descriptor, a whole packet (FIRST|LAST) after a
        // finished one, within the limits: nothing to raise (one
        // descriptor never exceeds MAX_DESC; 0 is no limit).
        if desc.first() && desc.last() && !qd.in_packet && (max_pkt == 0 || len <= max_pkt) {
            let qd = &mut self.q[qi][0];
            qd.pkt_descs = 0;
            qd.pkt_bytes = 0;
            return true;
        }
        let mut errors: Vec<(u32, &str, String)> = Vec::new();
        if desc.first() && qd.in_packet {
            errors.push((
                sec_a::LAST,
                "LAST",
                format!("m2s.q{q}[{idx}]: FIRST while the previous packet has no LAST"),
            ));
        }
        if !desc.first() && !qd.in_packet {
            errors.push((
                sec_a::FIRST,
                "FIRST",
                format!("m2s.q{q}[{idx}]: packet does not start with FIRST"),
            ));
        }
        let (descs, bytes) = if desc.first() || !qd.in_packet {
            (1, len)
        } else {
            (qd.pkt_descs + 1, qd.pkt_bytes + len)
        };
        if max_descs != 0 && descs > max_descs {
            errors.push((
                sec_a::MAX_DESC,
                "MAX_DESC",
                format!("m2s.q{q}[{idx}]: {descs} descriptors in a packet, max {max_descs}"),
            ));
        }
        if max_pkt != 0 && bytes > max_pkt {
            errors.push((
                sec_a::PKT_LEN,
                "PKT_LEN",
                format!("m2s.q{q}[{idx}]: packet of {bytes} bytes, max {max_pkt}"),
            ));
        }
        let qd = &mut self.q[qi][0];
        qd.in_packet = !desc.last();
        qd.pkt_descs = if desc.last() { 0 } else { descs };
        qd.pkt_bytes = if desc.last() { 0 } else { bytes };
        for (bit, name, detail) in errors {
            if self.raise(Group::A, bit, Dir::M2s, Some(q), name, detail) {
                return false;
            }
        }
        true
    }

    /// Picks the next packet round-robin across queues and starts it.
    #[inline(never)]
    fn schedule(&mut self, bus: &mut dyn Bus, timing: &TimingConfig) {
        if self.now < self.data_free_at {
            self.schedule_kick(self.data_free_at);
            return;
        }
        if self.state != [DirState::Normal; 2] {
            return;
        }
        let arb = self.cfg.arb;
        // Candidates: queues with a runnable packet, not paused, within
        // their rate limit (docs/timing.md "Arbitration and rate limits").
        // Plain round robin takes the first ready queue; DWRR collects the
        // candidates in a reused buffer (no per-kick array to clear).
        let mut first_ready = None;
        let mut ready = if arb.dwrr {
            std::mem::take(&mut self.dwrr_ready)
        } else {
            Vec::new()
        };
        ready.clear();
        // Round robin from `rr_next` over the queues that may have a
        // packet (rotate the mask so bit 0 is `rr_next`).
        let rr = self.rr_next % QUEUES;
        let mut pending = self.m2s_maybe_ready.rotate_right(rr as u32);
        while pending != 0 {
            let i = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let q = ((rr + i) % QUEUES) as u8;
            if self.q[usize::from(q)][0].fetched.is_empty() {
                self.m2s_maybe_ready &= !(1 << q);
                continue;
            }
            let Some(p) = self.ready_packet(q, timing) else {
                continue;
            };
            if arb.dwrr && self.q[usize::from(q)].cfg.dwrr.4 {
                continue; // DWRR pause
            }
            if let Some(wait) = self.queue_bucket_wait(q, p.3) {
                self.schedule_kick(wait);
                continue;
            }
            if !arb.dwrr {
                first_ready = Some(p);
                break; // plain round-robin: the first ready queue wins
            }
            ready.push(p);
        }
        let pick = if arb.dwrr {
            let pick = if ready.is_empty() {
                None
            } else {
                self.dwrr_pick(&ready, &arb)
            };
            self.dwrr_ready = ready;
            pick
        } else {
            first_ready
        };
        let Some(p) = pick else { return };
        if let Some(wait) = self.stream_bucket_wait(p.3) {
            self.schedule_kick(wait);
            return;
        }
        self.consume_tokens(p.0, p.3);
        self.rr_next = (usize::from(p.0) + 1) % QUEUES;
        self.start_packet(p, bus, timing);
        self.schedule_kick(self.data_free_at);
    }

    fn q_reg(&self, q: u8, name: &str) -> u32 {
        let f = &self.regs.m2s_q[usize::from(q) % QUEUES];
        f.map()
            .find(name, None)
            .and_then(|o| f.value(o).ok())
            .unwrap_or(0)
    }

    fn m2s_reg(&self, name: &str) -> u32 {
        let f = &self.regs.m2s;
        f.map()
            .find(name, None)
            .and_then(|o| f.value(o).ok())
            .unwrap_or(0)
    }

    /// The M2S scheduler configuration (wiki-facts §D.4): DWRR only when
    /// DWRR_CFG_SCHED.EN_DWRR is set and DESC_PREF_CFG_2.PREF_FORCE_RR is
    /// clear; otherwise round-robin among queues.
    fn arbitration(&self) -> Arbitration {
        let sched = self.m2s_reg("DWRR_CFG_SCHED");
        let force_rr = self.m2s_reg("DESC_PREF_CFG_2") & (1 << 16) != 0;
        Arbitration {
            dwrr: sched & 1 != 0 && !force_rr,
            packet_mode: sched & (1 << 4) != 0,
            inc_factor: (sched >> 16) & 0xF,
        }
    }

    /// Deficit-weighted round-robin among the highest (strict, QoS) group.
    fn dwrr_pick(
        &mut self,
        ready: &[(u8, usize, usize, u64)],
        arb: &Arbitration,
    ) -> Option<(u8, usize, usize, u64)> {
        let key = |e: &Engine, q: u8| {
            let c = e.q[usize::from(q) % QUEUES].cfg.dwrr;
            (c.0, c.1)
        };
        let best = ready.iter().map(|p| key(self, p.0)).max()?;
        let group: Vec<(u8, usize, usize, u64)> = ready
            .iter()
            .copied()
            .filter(|p| key(self, p.0) == best)
            .collect();
        // Each pass adds a quantum to every queue of the group; the first
        // queue (in round-robin order) whose deficit covers its packet wins.
        for _ in 0..=256 {
            for &p in &group {
                let qi = usize::from(p.0);
                let cost = if arb.packet_mode { 1 } else { p.3 as i64 };
                if self.q[qi].deficit >= cost {
                    self.q[qi].deficit -= cost;
                    return Some(p);
                }
            }
            for &p in &group {
                let qi = usize::from(p.0);
                let weight = i64::from(self.q[qi].cfg.dwrr.2.max(1));
                let quantum = if arb.packet_mode {
                    weight
                } else {
                    weight << arb.inc_factor
                };
                let cap = i64::from(self.q[qi].cfg.dwrr.3);
                self.q[qi].deficit += quantum;
                if cap > 0 {
                    self.q[qi].deficit = self.q[qi].deficit.min(cap.max(quantum));
                }
            }
        }
        group.first().copied()
    }

    /// A token bucket's tokens at `now` (simulator-defined semantics,
    /// docs/timing.md): `TOKEN_SIZE_1` bytes every `SHORT_CYCLE_SIZE ×
    /// (CFG_CYCLE + 1)` cycles, capped at `MAX_BURST_SIZE`; full when enabled.
    fn refill(bucket: &mut Bucket, now: Cycle, cfg: BucketCfg) {
        if !bucket.active {
            bucket.active = true;
            bucket.tokens = i64::from(cfg.max_burst);
            bucket.last = now;
            return;
        }
        let period = cfg.period_cycles.max(1);
        let periods = (now.0.saturating_sub(bucket.last.0)) / period;
        if periods > 0 {
            bucket.tokens = (bucket.tokens + periods as i64 * i64::from(cfg.token_bytes))
                .min(i64::from(cfg.max_burst));
            bucket.last = Cycle(bucket.last.0 + periods * period);
        }
    }

    fn bucket_cfg(
        &self,
        prefix: &str,
        file: &RegFile<'static>,
        mask_name: &str,
    ) -> Option<BucketCfg> {
        let get = |n: &str| {
            file.map()
                .find(&format!("{prefix}{n}"), None)
                .and_then(|o| file.value(o).ok())
                .unwrap_or(0)
        };
        let cfg = get("CFG_1S");
        let mask = file
            .map()
            .find(mask_name, None)
            .and_then(|o| file.value(o).ok())
            .unwrap_or(0x3);
        let enabled = cfg & (1 << 24) != 0 && mask & 0x2 == 0;
        let paused = cfg & (1 << 25) != 0 && mask & 0x2 == 0;
        if !enabled && !paused {
            return None;
        }
        let short = u64::from(self.m2s_reg("RLIMIT_GEN_CFG") & 0xFFFF).max(1);
        Some(BucketCfg {
            max_burst: cfg & 0xFF_FFFF,
            token_bytes: get("TOKEN_SIZE_1"),
            period_cycles: short * (u64::from(get("CFG_CYCLE")) + 1),
            paused,
        })
    }

    /// When queue `q`'s rate limiter lets a packet of `bytes` go, if not now.
    fn queue_bucket_wait(&mut self, q: u8, bytes: u64) -> Option<Cycle> {
        let qi = usize::from(q) % QUEUES;
        let Some(cfg) = self.q[qi].cfg.bucket else {
            self.q[qi].bucket.active = false;
            return None;
        };
        let now = self.now;
        Self::bucket_wait(&mut self.q[qi].bucket, now, cfg, bytes)
    }

    fn stream_bucket_wait(&mut self, bytes: u64) -> Option<Cycle> {
        let Some(cfg) = self.cfg.stream_bucket else {
            self.stream_bucket.active = false;
            return None;
        };
        let now = self.now;
        Self::bucket_wait(&mut self.stream_bucket, now, cfg, bytes)
    }

    fn bucket_wait(bucket: &mut Bucket, now: Cycle, cfg: BucketCfg, bytes: u64) -> Option<Cycle> {
        if cfg.paused {
            // Paused: re-check later (a register write also kicks).
            return Some(now.after(cfg.period_cycles.max(1)));
        }
        Self::refill(bucket, now, cfg);
        let need = (bytes as i64).min(i64::from(cfg.max_burst)).max(1);
        if bucket.tokens >= need {
            return None;
        }
        if cfg.token_bytes == 0 {
            return Some(now.after(cfg.period_cycles.max(1)));
        }
        let missing = (need - bucket.tokens) as u64;
        let periods = missing.div_ceil(u64::from(cfg.token_bytes));
        Some(Cycle(bucket.last.0 + periods * cfg.period_cycles.max(1)))
    }

    fn consume_tokens(&mut self, q: u8, bytes: u64) {
        let qi = usize::from(q) % QUEUES;
        if self.q[qi].bucket.active {
            self.q[qi].bucket.tokens -= bytes as i64;
        }
        if self.stream_bucket.active {
            self.stream_bucket.tokens -= bytes as i64;
        }
    }

    /// The TX/RX descriptor counts of queue q's next packet when it can run.
    fn ready_packet(&mut self, q: u8, timing: &TimingConfig) -> Option<(u8, usize, usize, u64)> {
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
        // limiter mask lets DMB pause the queue (bit 2 clear; driver-facts §2.4).
        if first.dmb() && self.q[qi].cfg.dmb_pause && self.q[qi].last_end > self.now {
            let status_off = self.maps.offsets.m2s_q.status;
            let _ = self.regs.m2s_q[qi].hw_update(status_off, |s| s | (1 << 30));
            let at = self.q[qi].last_end;
            self.schedule_kick(at);
            return None;
        }
        let _ = timing;
        Some((q, n_tx, n_rx, bytes))
    }

    fn start_packet(
        &mut self,
        (q, n_tx, n_rx, bytes): (u8, usize, usize, u64),
        bus: &mut dyn Bus,
        timing: &TimingConfig,
    ) {
        let qi = usize::from(q);
        let encode_64k = self.cfg.encode_64k;
        let mut tx = self.pool.pop().unwrap_or_default();
        let mut rx = self.pool.pop().unwrap_or_default();
        let [m2s, s2m] = &mut self.q[qi].dir;
        for (v, fetched, n) in [
            (&mut tx, &mut m2s.fetched, n_tx),
            (&mut rx, &mut s2m.fetched, n_rx),
        ] {
            if n == 1 {
                // The common packet: one descriptor a side.
                if let Some(f) = fetched.pop_front() {
                    v.push(f);
                }
            } else {
                v.extend((0..n).map_while(|_| fetched.pop_front()));
            }
        }
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
        for f in &rx {
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
        let [m2s_hot, s2m_hot] = self.hot;
        self.regs.m2s_q[qi].hw_update_slot(m2s_hot.dcp, |_| tdcp);
        self.regs.s2m_q[qi].hw_update_slot(s2m_hot.dcp, |_| rdcp);
        self.regs.m2s_q[qi].hw_update_slot(m2s_hot.status, |s| (s & !(1 << 30)) | (1 << 29));
        let st = &mut self.stats[qi];
        st.busy_cycles += data_cycles;
        st.first_start.get_or_insert(start.0);
        self.log_with(|| EventKind::PacketStart {
            queue: q,
            tx_descs: n_tx as u32,
            rx_descs: n_rx as u32,
            bytes,
            done_at: end.0,
            src: Hex(tx[0].desc.buf_ptr),
            dst: Hex(rx[0].desc.buf_ptr),
        });
        let epoch = (self.q[qi][0].epoch, self.q[qi][1].epoch);
        let slot = self.park(InFlight {
            queue: q,
            epoch,
            tx,
            rx,
            bytes,
        });
        // The slab holds at most one slot per in-flight packet (bounded by
        // the rings), far below u32::MAX.
        self.events.push(end, Ev::PacketDone(slot as u32));
        // More prefetch room now.
        self.try_fetch(Dir::M2s, q, timing);
        self.try_fetch(Dir::S2m, q, timing);
    }

    /// Stores an in-flight packet in the slab; returns its slot.
    fn park(&mut self, p: InFlight) -> usize {
        match self.free_slots.pop() {
            Some(i) => {
                self.inflight[i] = Some(p);
                i
            }
            None => {
                self.inflight.push(Some(p));
                self.inflight.len() - 1
            }
        }
    }

    /// Returns a finished packet's descriptor vectors to the pool.
    fn recycle(&mut self, p: InFlight) {
        let InFlight { mut tx, mut rx, .. } = p;
        tx.clear();
        rx.clear();
        self.pool.push(tx);
        self.pool.push(rx);
    }

    #[inline(never)]
    fn packet_done(&mut self, p: &InFlight, bus: &mut dyn Bus, timing: &TimingConfig) {
        let qi = usize::from(p.queue);
        let q = p.queue;
        if (self.q[qi][0].epoch, self.q[qi][1].epoch) != p.epoch
            || self.state != [DirState::Normal; 2]
        {
            return;
        }
        // The data path is done with this packet, whatever happens next.
        let status = self.hot[0].status;
        self.regs.m2s_q[qi].hw_update_slot(status, |s| s & !(1 << 29));
        let encode_64k = self.cfg.encode_64k;
        let crc_init = self.q[qi].cfg.crc_init;
        let hdr_split = self.q[qi].cfg.hdr_split;
        let result = crate::datapath::move_packet(
            bus,
            &p.tx,
            &p.rx,
            encode_64k,
            crc_init,
            hdr_split,
            &mut self.crc_cache,
        );
        let (written, checksum) = match result {
            Ok(r) => (r.written, r.checksum),
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
        };
        // Completion: descriptors done, completion rings, counters.
        self.complete(Dir::M2s, q, &p.tx, bus);
        self.complete(Dir::S2m, q, &p.rx, bus);
        let st = &mut self.stats[qi];
        st.tx_descs += p.tx.len() as u64;
        st.rx_descs += p.rx.len() as u64;
        st.bytes += written;
        st.last_done = Some(self.now.0);
        st.packets += 1;
        let _ = p.bytes;
        self.log_with(|| EventKind::PacketDone {
            queue: q,
            bytes: written,
            checksum: checksum.map(|c| format!("{c:#010x}")),
        });
        // No prefetch retry here: completing descriptors frees no prefetch
        // room (start_packet did, and retried then).
        let _ = timing;
        self.schedule_kick(self.now);
    }

    /// Marks descriptors done and writes completion-ring entries when the
    /// queue's COMP_CFG enables them (seed 004 §4.2). Entry format
    /// (simulator-defined, the hardware's is unpublished — docs/timing.md):
    /// 16 bytes, word0 = the descriptor's word0 as fetched, ring/generation
    /// tag in bits 25:24 included (seed 004 §3 QUIRK: the completion poll
    /// matches the tag the firmware wrote), words 1–3 zero.
    fn complete(&mut self, dir: Dir, q: u8, descs: &[Fetched], bus: &mut dyn Bus) {
        let qi = usize::from(q);
        let d = dir_idx(dir);
        self.q[qi][d].done += descs.len() as u64;
        if !self.q[qi].cfg.comp_en[d] {
            // No completion ring (the common case): the packet counter and
            // Q_STATUS, through one register-file borrow.
            let status = self.status_bits(dir, q);
            let hot = self.hot[d];
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
                let addr = base + 16 * u64::from(qd.comp_head);
                let word0 = f.desc.word0;
                let mut entry = [0u8; 16];
                entry[..4].copy_from_slice(&word0.to_le_bytes());
                if let Err(e) = bus.write(addr, &entry) {
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
        let pkt = self.hot[d].pkt_count;
        self.qfile(dir, q)
            .hw_update_slot(pkt, |v| v.wrapping_add(1));
        self.sync_queue_regs(dir, q);
    }
}
