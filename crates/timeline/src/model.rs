//! From the run's events to slices, instants, counters and flows, in
//! cycles. One pass in cycle order; nothing here knows about JSON.

use std::collections::{BTreeMap, VecDeque};

use kdriver::{DriverEvent, DriverEventKind};
use q7::{FwEvent, FwEventKind};
use soc::DeviceEvent;
use udma::{Dir, EngineEvent, EventKind};

use crate::{FIRST_H2T_ENGINE, Meta};

/// Where a slice or instant is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Track {
    /// One queue of one engine.
    Queue(u16, u8),
    /// Engine-wide events (state changes, faults without a queue).
    Engine(u16),
    /// A core's Q7 firmware: one slice per instruction.
    Firmware(u8),
    /// A core's firmware steps (instants), apart from the instruction
    /// slices so that flows bind to the instructions.
    FwEvents(u8),
    /// The kernel driver's ioctls.
    Ioctls,
    /// The driver's log lines.
    DriverLog,
    /// The driver's H2T batches.
    H2t,
}

/// An argument value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    U(u64),
    S(String),
    B(bool),
}

/// Arguments in the order they are shown.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Args(pub Vec<(&'static str, Val)>);

impl Args {
    pub fn u(mut self, k: &'static str, v: impl Into<u64>) -> Self {
        self.0.push((k, Val::U(v.into())));
        self
    }
    pub fn s(mut self, k: &'static str, v: impl Into<String>) -> Self {
        self.0.push((k, Val::S(v.into())));
        self
    }
    pub fn b(mut self, k: &'static str, v: bool) -> Self {
        self.0.push((k, Val::B(v)));
        self
    }
    fn push_u(&mut self, k: &'static str, v: u64) {
        self.0.push((k, Val::U(v)));
    }
    fn push_s(&mut self, k: &'static str, v: impl Into<String>) {
        self.0.push((k, Val::S(v.into())));
    }
    fn push_b(&mut self, k: &'static str, v: bool) {
        self.0.push((k, Val::B(v)));
    }
}

/// A complete (`X`) slice, in cycles.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Slice {
    pub track: Track,
    pub start: u64,
    pub end: u64,
    pub name: String,
    pub cat: &'static str,
    pub args: Args,
    /// Drawn inside this slice (same lane).
    pub parent: Option<usize>,
}

/// An instant (`i`, thread scope).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Instant {
    pub track: Track,
    pub at: u64,
    pub name: String,
    pub cat: &'static str,
    pub args: Args,
}

/// A flow through slices: from the cause (at the cycle its doorbell took
/// effect) to the first and the last packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    pub slices: Vec<usize>,
    /// Cycle of the doorbell, where the arrow leaves the cause's slice.
    pub rung_at: u64,
}

/// A counter's (cycle, value) at each change.
pub(crate) type Series<T> = Vec<(u64, T)>;

/// Everything the timeline shows, before filtering.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub slices: Vec<Slice>,
    pub instants: Vec<Instant>,
    pub flows: Vec<Flow>,
    /// (engine, queue) → (tx, rx) descriptors posted and not completed,
    /// at every change.
    pub occupancy: BTreeMap<(u16, u8), Series<(u64, u64)>>,
    /// engine → bytes of started packets not landed, at every change.
    pub in_flight: BTreeMap<u16, Series<u64>>,
}

/// What rang a doorbell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// A firmware instruction (core, submission order).
    Inst(u8, u64),
    /// An ioctl (index into the ioctl slices).
    Ioctl(usize),
    /// The trace itself (a `doorbell` or register write).
    Trace,
}

/// One doorbell's S2M descriptors, consumed by packets in ring order.
#[derive(Debug)]
struct Ring {
    cause: Cause,
    rung_at: u64,
    remaining: u64,
    packets: Vec<usize>,
}

/// A firmware record of ringing (engine, queue).
#[derive(Clone, Copy, Debug)]
struct FwRing {
    inst: (u8, u64),
    at: u64,
}

/// An instruction as its events describe it.
#[derive(Debug, Default)]
struct Inst {
    first: u64,
    last: u64,
    kind: Option<String>,
    source: String,
    waiting: Option<(u64, String)>,
    generate: Option<(u64, u64)>,
    finished: bool,
    args: Args,
}

/// A packet waiting for its `packet_done`.
#[derive(Debug)]
struct Pending {
    slice: usize,
    tx: u64,
    rx: u64,
}

#[derive(Default)]
struct Builder {
    m: Model,
    insts: BTreeMap<(u8, u64), Inst>,
    /// (engine, queue, dir) → firmware rings not yet seen by the engine.
    fw_rings: BTreeMap<(u16, u8, Dir), VecDeque<FwRing>>,
    /// (engine, queue) → RDMA_DESC_GEN records waiting for their START.
    generated: BTreeMap<(u16, u8), VecDeque<(u8, u64)>>,
    /// core → the iDMA ring (engine, queue).
    icache_ring: BTreeMap<u8, (u16, u8)>,
    rings: BTreeMap<(u16, u8), VecDeque<Ring>>,
    pending: BTreeMap<(u16, u8), VecDeque<Pending>>,
    occ: BTreeMap<(u16, u8), (u64, u64)>,
    in_flight_deltas: BTreeMap<u16, Vec<(u64, i64)>>,
    /// (start, end, slice) per ioctl, in order.
    ioctls: Vec<(u64, u64, usize)>,
    /// Finished rings: their flows.
    drafts: Vec<Ring>,
    end_cycle: u64,
}

enum Item<'a> {
    Fw(&'a FwEvent),
    Eng(&'a EngineEvent),
}

/// Builds the model of a run.
pub(crate) fn build<'a>(
    device: impl IntoIterator<Item = &'a DeviceEvent>,
    driver: &[(u64, DriverEvent)],
    meta: &Meta,
) -> Model {
    let mut b = Builder {
        end_cycle: meta.end_cycle,
        ..Builder::default()
    };
    for (start, e) in driver {
        b.driver(*start, e);
    }
    // Global cycle order; at one cycle the firmware acts before the
    // engines see it. The sort is stable: each engine's and each core's
    // own order is kept.
    let mut items: Vec<(u64, u8, Item<'a>)> = device
        .into_iter()
        .filter_map(|e| match e {
            DeviceEvent::Firmware(f) => Some((f.at, 0, Item::Fw(f))),
            DeviceEvent::Engine(g) => Some((g.cycle, 1, Item::Eng(g))),
            _ => None,
        })
        .collect();
    items.sort_by_key(|(c, class, _)| (*c, *class));
    for (_, _, it) in items {
        match it {
            Item::Fw(f) => b.firmware(f),
            Item::Eng(e) => b.engine(e),
        }
    }
    b.finish()
}

impl Builder {
    /// How a cause reads in `args` and packet names.
    fn label(&self, c: Cause) -> String {
        match c {
            Cause::Inst(t, s) => {
                let kind = self
                    .insts
                    .get(&(t, s))
                    .and_then(|i| i.kind.clone())
                    .unwrap_or_else(|| "inst".into());
                format!("tpb{t}#{s} {kind}")
            }
            Cause::Ioctl(i) => self
                .ioctls
                .get(i)
                .and_then(|(_, _, s)| self.m.slices.get(*s))
                .map_or_else(|| format!("ioctl#{i}"), |s| format!("ioctl#{i} {}", s.name)),
            Cause::Trace => "trace".into(),
        }
    }

    fn slice(&mut self, s: Slice) -> usize {
        self.m.slices.push(s);
        self.m.slices.len() - 1
    }

    fn instant(&mut self, track: Track, at: u64, name: String, cat: &'static str, args: Args) {
        self.m.instants.push(Instant {
            track,
            at,
            name,
            cat,
            args,
        });
    }

    fn driver(&mut self, start: u64, e: &DriverEvent) {
        match &e.kind {
            DriverEventKind::Ioctl { name, result } => {
                let idx = self.slice(Slice {
                    track: Track::Ioctls,
                    start,
                    end: e.cycle.max(start),
                    name: name.clone(),
                    cat: "ioctl",
                    args: Args::default()
                        .s("result", result.clone())
                        .u("start_cycle", start)
                        .u("end_cycle", e.cycle),
                    parent: None,
                });
                self.ioctls.push((start, e.cycle.max(start), idx));
            }
            DriverEventKind::H2tBatch {
                nc,
                engine,
                queue,
                ctx,
                descs,
                bytes,
                start_cycle,
                end_cycle,
                completed,
            } => {
                self.slice(Slice {
                    track: Track::H2t,
                    start: *start_cycle,
                    end: (*end_cycle).max(*start_cycle),
                    name: if *completed {
                        "H2T batch".into()
                    } else {
                        "H2T batch (timed out)".into()
                    },
                    cat: "h2t",
                    args: Args::default()
                        .u("nc", *nc)
                        .u("engine", *engine)
                        .u("queue", *queue)
                        .s("ctx", format!("{ctx:?}"))
                        .u("descs", *descs)
                        .u("bytes", *bytes)
                        .b("completed", *completed)
                        .u("start_cycle", *start_cycle)
                        .u("end_cycle", *end_cycle),
                    parent: None,
                });
            }
            DriverEventKind::Log { line } => {
                self.instant(
                    Track::DriverLog,
                    e.cycle,
                    "driver log".into(),
                    "driver",
                    Args::default().s("line", line.clone()),
                );
            }
        }
    }

    fn firmware(&mut self, f: &FwEvent) {
        use FwEventKind as K;
        let key = (f.tpb, f.inst.seq);
        let track = Track::FwEvents(f.tpb);
        let tag = format!("tpb{}#{}", f.tpb, f.inst.seq);
        let inst = self.insts.entry(key).or_insert_with(|| Inst {
            first: f.at,
            last: f.at,
            source: f.inst.source.clone(),
            ..Inst::default()
        });
        inst.first = inst.first.min(f.at);
        inst.last = inst.last.max(f.at);
        let base = || Args::default().s("inst", tag.clone());
        let mut instant: Option<(String, &'static str, Args)> = None;
        match &f.kind {
            K::Waiting {
                sem,
                mode,
                threshold,
                value,
            } => {
                let what = format!("{mode} sem[{sem}] >= {threshold}");
                inst.waiting.get_or_insert((f.at, what.clone()));
                instant = Some((
                    format!("wait sem[{sem}]"),
                    "firmware",
                    base()
                        .s("mode", mode.clone())
                        .u("sem", *sem)
                        .u("threshold", *threshold)
                        .u("value", *value),
                ));
            }
            K::Released {
                sem,
                mode,
                threshold,
                value,
                start_cycle,
            } => {
                instant = Some((
                    format!("released sem[{sem}]"),
                    "firmware",
                    base()
                        .s("mode", mode.clone())
                        .u("sem", *sem)
                        .u("threshold", *threshold)
                        .u("value", *value)
                        .u("start_cycle", *start_cycle),
                ));
            }
            K::Generating {
                kind,
                engines,
                descriptors,
                bytes,
                cycles,
            } => {
                inst.kind = Some(kind.clone());
                inst.generate = Some((f.at, *cycles));
                inst.last = inst.last.max(f.at + cycles);
                inst.args.push_s("kind", kind.clone());
                inst.args.push_u("engines", *engines as u64);
                inst.args.push_u("descriptors", *descriptors as u64);
                inst.args.push_u("bytes", *bytes);
                inst.args.push_u("generate_cycles", *cycles);
            }
            K::MicroOp { .. } | K::Log { .. } => {}
            K::RingsInit {
                engine,
                queue,
                ring_descs,
                ..
            } => {
                instant = Some((
                    format!("DGE context init eng{engine}.q{queue}"),
                    "firmware",
                    base().u("ring_descs", *ring_descs),
                ));
            }
            K::Doorbell { engine, queue, .. } => {
                self.push_fw_ring(*engine, *queue, key, f.at);
            }
            K::Generated {
                engine,
                queue,
                count,
                bytes,
            } => {
                self.generated
                    .entry((*engine, *queue))
                    .or_default()
                    .push_back(key);
                instant = Some((
                    format!("generated eng{engine}.q{queue}"),
                    "firmware",
                    base().u("descriptors", *count).u("bytes", *bytes),
                ));
            }
            K::OutOfBounds {
                side,
                addr,
                len_bytes,
                reg,
                limit,
                notify,
            } => {
                instant = Some((
                    format!("OOB {side}"),
                    "fault",
                    base()
                        .s("addr", addr.clone())
                        .u("len_bytes", *len_bytes)
                        .u("reg", *reg)
                        .s("limit", limit.clone())
                        .b("notify", *notify),
                ));
            }
            K::IndexOutOfBounds {
                leg,
                position,
                index,
                bound,
                error,
            } => {
                instant = Some((
                    format!("index OOB {leg}"),
                    "fault",
                    base()
                        .u("position", *position)
                        .u("index", *index)
                        .u("bound", *bound)
                        .b("error", *error),
                ));
            }
            K::DuplicateScatter {
                first,
                later,
                index,
            } => {
                instant = Some((
                    "scatter race".into(),
                    "fault",
                    base()
                        .u("first", *first)
                        .u("later", *later)
                        .u("index", *index),
                ));
            }
            K::MethodSet { method, outcome } => {
                inst.kind.get_or_insert_with(|| "set_memcpy_method".into());
                inst.finished = true;
                instant = Some((
                    "neuron_set_memcpy_method".into(),
                    "firmware",
                    base().u("method", *method).s("outcome", outcome.clone()),
                ));
            }
            K::InlineInit {
                engine,
                queue,
                rings,
            } => {
                inst.kind.get_or_insert_with(|| "neuron_memcpy".into());
                instant = Some((
                    format!("init_dma_queue eng{engine}.q{queue}"),
                    "firmware",
                    base().s("rings", rings.clone()),
                ));
            }
            K::InlineChunk {
                engine,
                queue,
                slot,
                chunk_bytes,
                ..
            } => {
                inst.kind.get_or_insert_with(|| "neuron_memcpy".into());
                let (engine, queue) = (*engine, *queue);
                instant = Some((
                    format!("dma_data_transfer eng{engine}.q{queue}"),
                    "firmware",
                    base().u("slot", *slot).u("chunk_bytes", *chunk_bytes),
                ));
                self.push_fw_ring(engine, queue, key, f.at);
            }
            K::MemcpyDone { method, bytes } => {
                inst.finished = true;
                inst.args.push_s("method", method.clone());
                inst.args.push_u("bytes", *bytes);
                instant = Some((
                    "neuron_memcpy done".into(),
                    "firmware",
                    base().u("bytes", *bytes),
                ));
            }
            K::MailboxGate {
                priority_class,
                mailboxes,
                engine_mask,
            } => {
                instant = Some((
                    "DGE mailbox gate".into(),
                    "firmware",
                    base()
                        .u("priority_class", *priority_class)
                        .s("mailboxes", mailboxes.clone())
                        .s("engine_mask", engine_mask.clone()),
                ));
            }
            K::Icache { text } => {
                inst.kind.get_or_insert_with(|| "iDMA".into());
                if text.contains("done") {
                    inst.finished = true;
                }
                let tpb = f.tpb;
                if let Some(r) = engine_queue_in(text) {
                    self.icache_ring.insert(tpb, r);
                }
                if text.contains("submit_pending")
                    && let Some(&(e, q)) = self.icache_ring.get(&tpb)
                {
                    self.push_fw_ring(e, q, key, f.at);
                }
                instant = Some(("iDMA".into(), "firmware", base().s("text", text.clone())));
            }
            K::Rejected { reason } => {
                inst.finished = true;
                inst.kind.get_or_insert_with(|| "rejected".into());
                inst.args.push_s("rejected", reason.clone());
                instant = Some((
                    "REJECTED".into(),
                    "fault",
                    base().s("reason", reason.clone()),
                ));
            }
            K::Done { update } => {
                inst.finished = true;
                let mut a = base();
                if let Some(u) = update {
                    inst.args.push_s("update", u.clone());
                    a.push_s("update", u.clone());
                }
                instant = Some(("done".into(), "firmware", a));
            }
            K::ReadDone { update } => {
                inst.args.push_s("read_update", update.clone());
                instant = Some((
                    "all data read".into(),
                    "firmware",
                    base().s("update", update.clone()),
                ));
            }
        }
        if let Some((name, cat, args)) = instant {
            self.instant(track, f.at, name, cat, args);
        }
    }

    fn push_fw_ring(&mut self, engine: u16, queue: u8, inst: (u8, u64), at: u64) {
        for dir in [Dir::M2s, Dir::S2m] {
            self.fw_rings
                .entry((engine, queue, dir))
                .or_default()
                .push_back(FwRing { inst, at });
        }
    }

    /// What rang a doorbell on (engine, queue, dir) that took effect at
    /// `cycle`.
    fn cause_of(&mut self, engine: u16, queue: u8, dir: Dir, cycle: u64) -> Cause {
        if let Some(fifo) = self.fw_rings.get_mut(&(engine, queue, dir))
            && fifo.front().is_some_and(|r| r.at <= cycle)
            && let Some(r) = fifo.pop_front()
        {
            return Cause::Inst(r.inst.0, r.inst.1);
        }
        if engine >= FIRST_H2T_ENGINE {
            // The last ioctl to start before the doorbell took effect, if
            // it was still running when it was rung (one cycle earlier).
            let n = self.ioctls.partition_point(|(s, _, _)| *s < cycle);
            if n > 0
                && let Some(&(_, end, _)) = self.ioctls.get(n - 1)
                && end + 1 >= cycle
            {
                return Cause::Ioctl(n - 1);
            }
        }
        Cause::Trace
    }

    fn set_occ(&mut self, e: u16, q: u8, cycle: u64, f: impl FnOnce(&mut (u64, u64))) {
        let v = self.occ.entry((e, q)).or_default();
        f(v);
        let (tx, rx) = *v;
        let series = self.m.occupancy.entry((e, q)).or_default();
        match series.last_mut() {
            Some(last) if last.0 == cycle => last.1 = (tx, rx),
            _ => series.push((cycle, (tx, rx))),
        }
    }

    fn engine(&mut self, ev: &EngineEvent) {
        let (e, c) = (ev.engine, ev.cycle);
        match &ev.kind {
            EventKind::Doorbell {
                dir,
                queue,
                increment,
                tail,
                tail_ring_id,
            } => {
                let q = *queue;
                let cause = self.cause_of(e, q, *dir, c);
                let mut args = Args::default()
                    .s("dir", dir.name())
                    .u("queue", q)
                    .u("increment", *increment)
                    .u("tail", *tail)
                    .u("tail_ring_id", *tail_ring_id);
                args.push_s("cause", self.label(cause));
                if *dir == Dir::S2m {
                    if let Cause::Inst(..) = cause
                        && let Some(g) = self.generated.get_mut(&(e, q))
                        && let Some(by) = g.pop_front()
                    {
                        args.push_s("generated_by", format!("tpb{}#{}", by.0, by.1));
                    }
                    if *increment > 0 {
                        self.rings.entry((e, q)).or_default().push_back(Ring {
                            cause,
                            rung_at: c,
                            remaining: u64::from(*increment),
                            packets: Vec::new(),
                        });
                    }
                }
                let inc = u64::from(*increment);
                let d = *dir;
                self.set_occ(e, q, c, |v| match d {
                    Dir::M2s => v.0 += inc,
                    Dir::S2m => v.1 += inc,
                });
                self.instant(
                    Track::Queue(e, q),
                    c,
                    format!("doorbell {} +{increment}", dir.name()),
                    "doorbell",
                    args,
                );
            }
            EventKind::Prefetch { .. } => {}
            EventKind::PacketStart {
                queue,
                tx_descs,
                rx_descs,
                bytes,
                done_at,
                src,
                dst,
            } => {
                let q = *queue;
                let idx = self.m.slices.len();
                // The packet's RX descriptors come off the queue's rings in
                // order; it belongs to the ring its first one came from.
                let mut cause = None;
                let mut need = u64::from(*rx_descs);
                let fifo = self.rings.entry((e, q)).or_default();
                while need > 0 {
                    let Some(r) = fifo.front_mut() else { break };
                    cause.get_or_insert(r.cause);
                    r.packets.push(idx);
                    let take = need.min(r.remaining);
                    r.remaining -= take;
                    need -= take;
                    if r.remaining == 0
                        && let Some(done) = fifo.pop_front()
                    {
                        self.drafts.push(done);
                    }
                }
                let cause = cause.unwrap_or(Cause::Trace);
                // Named by its cause (Perfetto colours slices by name).
                let name = match cause {
                    Cause::Trace => "packet".to_string(),
                    _ => self.label(cause),
                };
                self.slice(Slice {
                    track: Track::Queue(e, q),
                    start: c,
                    end: (*done_at).max(c),
                    name,
                    cat: "packet",
                    args: Args::default()
                        .u("queue", q)
                        .u("tx_descriptors", *tx_descs)
                        .u("rx_descriptors", *rx_descs)
                        .u("bytes", *bytes)
                        .s("src", src.to_string())
                        .s("dst", dst.to_string())
                        .s("cycles", format!("{c}..{done_at}")),
                    parent: None,
                });
                self.pending.entry((e, q)).or_default().push_back(Pending {
                    slice: idx,
                    tx: u64::from(*tx_descs),
                    rx: u64::from(*rx_descs),
                });
                let d = self.in_flight_deltas.entry(e).or_default();
                let b = i64::try_from(*bytes).unwrap_or(i64::MAX);
                d.push((c, b));
                d.push(((*done_at).max(c), -b));
            }
            EventKind::PacketDone {
                queue,
                bytes,
                checksum,
            } => {
                let q = *queue;
                let Some(fifo) = self.pending.get_mut(&(e, q)) else {
                    return;
                };
                let mut landed = None;
                while let Some(p) = fifo.front() {
                    let end = self.m.slices.get(p.slice).map_or(0, |s| s.end);
                    if end > c {
                        break;
                    }
                    let Some(p) = fifo.pop_front() else { break };
                    if end < c {
                        mark_lost(&mut self.m.slices, p.slice);
                    } else {
                        landed = Some(p);
                        break;
                    }
                }
                let Some(p) = landed else { return };
                if let Some(s) = self.m.slices.get_mut(p.slice) {
                    // Only when it differs (CRC appended, header split, CCE).
                    if s.args
                        .0
                        .iter()
                        .any(|(k, v)| *k == "bytes" && *v != Val::U(*bytes))
                    {
                        s.args.push_u("written", *bytes);
                    }
                    if let Some(x) = checksum {
                        s.args.push_s("checksum", format!("{:#x}", x.0));
                    }
                }
                self.set_occ(e, q, c, |v| {
                    v.0 = v.0.saturating_sub(p.tx);
                    v.1 = v.1.saturating_sub(p.rx);
                });
            }
            EventKind::Fault {
                dir,
                queue,
                cause,
                detail,
                action,
            } => {
                let track = queue.map_or(Track::Engine(e), |q| Track::Queue(e, q));
                let mut args = Args::default().s("dir", dir.name());
                if let Some(q) = queue {
                    args.push_u("queue", u64::from(*q));
                }
                args.push_s("cause", cause.clone());
                args.push_s("detail", detail.clone());
                args.push_s("action", action.clone());
                self.instant(track, c, format!("FAULT {cause}"), "fault", args);
            }
            EventKind::State { dir, state } => {
                self.instant(
                    Track::Engine(e),
                    c,
                    format!("{} {state}", dir.name()),
                    "state",
                    Args::default()
                        .s("dir", dir.name())
                        .s("state", state.clone()),
                );
            }
            EventKind::QueueReset { dir, queue, bits } => {
                let q = *queue;
                let d = *dir;
                self.set_occ(e, q, c, |v| match d {
                    Dir::M2s => v.0 = 0,
                    Dir::S2m => v.1 = 0,
                });
                if d == Dir::S2m
                    && let Some(fifo) = self.rings.get_mut(&(e, q))
                {
                    self.drafts.extend(fifo.drain(..));
                }
                self.instant(
                    Track::Queue(e, q),
                    c,
                    format!("{} Q_SW_CTRL reset", dir.name()),
                    "state",
                    Args::default()
                        .s("dir", dir.name())
                        .s("bits", format!("{bits:#x}")),
                );
            }
            EventKind::RingWarning { dir, queue, detail } => {
                self.instant(
                    Track::Queue(e, *queue),
                    c,
                    "ring warning".into(),
                    "warning",
                    Args::default()
                        .s("dir", dir.name())
                        .s("detail", detail.clone()),
                );
            }
        }
    }

    fn finish(mut self) -> Model {
        // Packets that never reported landing.
        for fifo in std::mem::take(&mut self.pending).into_values() {
            for p in fifo {
                mark_lost(&mut self.m.slices, p.slice);
            }
        }
        // Rings still holding descriptors: their packets so far.
        for fifo in std::mem::take(&mut self.rings).into_values() {
            self.drafts.extend(fifo);
        }
        // Bytes in flight per engine.
        for (e, mut d) in std::mem::take(&mut self.in_flight_deltas) {
            d.sort_by_key(|(c, _)| *c);
            let mut v: i64 = 0;
            let mut series: Vec<(u64, u64)> = Vec::new();
            for (c, x) in d {
                v += x;
                let val = u64::try_from(v).unwrap_or(0);
                match series.last_mut() {
                    Some(last) if last.0 == c => last.1 = val,
                    _ => series.push((c, val)),
                }
            }
            self.m.in_flight.insert(e, series);
        }
        // One slice per instruction that started, with its wait and its
        // descriptor generation inside.
        let mut inst_slice = BTreeMap::new();
        let insts = std::mem::take(&mut self.insts);
        for (&(t, s), i) in &insts {
            // Only waited (still gated at the end): the wait instant says so.
            if i.generate.is_none() && !i.finished && i.kind.is_none() {
                continue;
            }
            let start = i.first;
            let end = if i.finished {
                i.last
            } else {
                i.last.max(self.end_cycle)
            };
            let kind = i.kind.clone().unwrap_or_else(|| "inst".into());
            let mut args = Args::default()
                .s("inst", format!("tpb{t}#{s}"))
                .s("source", i.source.clone());
            args.0.extend(i.args.0.iter().cloned());
            args.push_b("finished", i.finished);
            args.push_u("start_cycle", start);
            args.push_u("end_cycle", end);
            let idx = self.slice(Slice {
                track: Track::Firmware(t),
                start,
                end,
                name: format!("{kind} #{s}"),
                cat: "inst",
                args,
                parent: None,
            });
            inst_slice.insert((t, s), idx);
            if let (Some((w, what)), Some((g, _))) = (&i.waiting, i.generate)
                && g > *w
            {
                self.slice(Slice {
                    track: Track::Firmware(t),
                    start: *w,
                    end: g,
                    name: "wait".into(),
                    cat: "inst.wait",
                    args: Args::default().s("gate", what.clone()),
                    parent: Some(idx),
                });
            }
            if let Some((g, cycles)) = i.generate
                && cycles > 0
            {
                self.slice(Slice {
                    track: Track::Firmware(t),
                    start: g,
                    end: (g + cycles).min(end),
                    name: "generate".into(),
                    cat: "inst.generate",
                    args: Args::default().u("cycles", cycles),
                    parent: Some(idx),
                });
            }
        }
        // Flows: cause → first packet → last packet.
        for Ring {
            cause,
            rung_at,
            packets,
            ..
        } in std::mem::take(&mut self.drafts)
        {
            let from = match cause {
                Cause::Inst(t, s) => inst_slice.get(&(t, s)).copied(),
                Cause::Ioctl(i) => self.ioctls.get(i).map(|x| x.2),
                Cause::Trace => None,
            };
            let (Some(from), Some(first)) = (from, packets.first()) else {
                continue;
            };
            let mut slices = vec![from, *first];
            if let Some(last) = packets.last()
                && last != first
            {
                slices.push(*last);
            }
            self.m.flows.push(Flow { slices, rung_at });
        }
        self.m
    }
}

fn mark_lost(slices: &mut [Slice], idx: usize) {
    if let Some(s) = slices.get_mut(idx)
        && s.cat == "packet"
    {
        s.cat = "packet.lost";
        s.name.push_str(" (not landed)");
        s.args.push_b("landed", false);
    }
}

/// The first `engN.qQ` in a firmware log line.
fn engine_queue_in(text: &str) -> Option<(u16, u8)> {
    let at = text.find("eng")?;
    let rest = &text[at + 3..];
    let (e, rest) = rest.split_once(".q")?;
    let q: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((e.parse().ok()?, q.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::engine_queue_in;

    #[test]
    fn finds_the_idma_ring_in_its_log_line() {
        assert_eq!(
            engine_queue_in("IRAM cache init, block_size=0x1000 (eng48.q14, rings 0x1 / 0x2)"),
            Some((48, 14))
        );
        assert_eq!(engine_queue_in("submit_pending: first_slot=0"), None);
    }
}
