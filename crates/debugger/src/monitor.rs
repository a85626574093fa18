//! The executor hooks of a session: breakpoint and goal checks before each
//! statement and after every engine step, the device events as they come,
//! and the statement records (docs/user-guide.md §12 "Breakpoints").

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

use q7::FwEventKind;
use soc::exec::{Control, ExecHooks, Executor, Linked, QueueTarget, StepRecord, queue_target};
use soc::{Device, DeviceEvent};
use trace_format::{Statement, StatementKind};
use udma::EventKind;

use crate::breakpoint::{BreakKind, Breakpoints, Hit, cause_matches};
use crate::place::Place;
use crate::session::{
    DoorbellFilter, FinishTarget, FwDoorbell, Granularity, Listener, Mark, StopKind,
};

/// Device events the `events` view keeps.
const RECENT_EVENTS: usize = 256;

/// Micro-op lines kept per core between two firmware doorbells.
const MICRO_OPS_KEPT: usize = 64;

/// A stop found inside the executor's hooks, waiting to be returned.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) kind: Option<StopKind>,
    pub(crate) hits: Vec<Hit>,
    /// [`Mark::doorbells`] of the stop: the firmware doorbells of the
    /// device step passed when it is one of them (0 otherwise).
    pub(crate) doorbells: u64,
}

/// A firmware doorbell behind the stop returned (one core step rings
/// several queues; `next` shows them one at a time): whether it is a stop
/// — the doorbell filter, the breakpoints and their hit counts — is looked
/// at when its turn comes, as the breakpoints are then.
#[derive(Debug)]
pub(crate) struct Queued {
    /// [`Mark::doorbells`] at this doorbell.
    pub(crate) doorbells: u64,
    pub(crate) doorbell: FwDoorbell,
}

impl Pending {
    pub(crate) fn is_empty(&self) -> bool {
        self.kind.is_none() && self.hits.is_empty()
    }
}

/// The executor hooks of a session: breakpoint checks before statements
/// and after every engine step, and the statement records.
pub(crate) struct Monitor {
    pub(crate) bps: Breakpoints,
    pub(crate) filter: DoorbellFilter,
    pub(crate) goal: Granularity,
    pub(crate) sink: Arc<Mutex<Vec<DeviceEvent>>>,
    pub(crate) recent: VecDeque<DeviceEvent>,
    pub(crate) timeline: Option<Vec<DeviceEvent>>,
    pub(crate) listener: Listener,
    /// Firmware micro-ops per core since its last doorbell.
    pub(crate) micro_ops: BTreeMap<u8, Vec<String>>,
    /// Collect events after every engine step.
    pub(crate) needs_events: bool,
    pub(crate) watches: bool,
    /// Races the detector had found when last looked at: `break race`
    /// stops at the ones after.
    pub(crate) races_seen: usize,
    pub(crate) pending: Pending,
    /// Further firmware doorbell stops found with the one returned.
    pub(crate) queued: VecDeque<Queued>,
    /// Every firmware doorbell the last scan found, in order: where a
    /// replay to a point among them ([`Mark::doorbells`] > 0) rebuilds the
    /// stops after it.
    pub(crate) rung: Vec<FwDoorbell>,
    /// [`Mark::doorbells`] where the session stands.
    pub(crate) doorbells: u64,
    /// Events since the step began ([`Granularity::Event`]).
    pub(crate) step_events: Vec<DeviceEvent>,
    /// Words (core, number) that completed, and when.
    pub(crate) words_done: BTreeMap<(u8, u64), u64>,
    /// Words (core, number) the firmware has taken up: some event of the
    /// core names them (what a `tpbN#K` breakpoint stops at).
    pub(crate) words_seen: BTreeSet<(u8, u64)>,
    /// Reverse execution's replay: pause once the session reaches this
    /// point ([`Mark`]).
    pub(crate) bound: Option<Mark>,
    /// The statement last started (for the marks of a run under way).
    pub(crate) index: usize,
    /// The statement whose line and doorbell breakpoints were weighed when
    /// a step ended before it ([`Monitor::statement_hits`], each hit
    /// counted then) without firing: `before` does not weigh them again.
    pub(crate) weighed: Option<usize>,
    /// Pause a run for a checkpoint once the device has processed this
    /// many events ([`crate::checkpoint`]).
    pub(crate) checkpoint_at: Option<u64>,
    /// A run paused for a checkpoint, not for a stop.
    pub(crate) checkpoint_now: bool,
    /// Engine steps until the next look at the events processed (a sum
    /// over the engines, too dear for every step).
    pub(crate) checkpoint_poll: u64,
    /// Engine steps between two looks: [`CHECKPOINT_POLL_STEPS`], fewer
    /// when the interval is shorter.
    pub(crate) checkpoint_poll_steps: u64,
}

/// Engine steps between two looks at whether a checkpoint is due.
pub(crate) const CHECKPOINT_POLL_STEPS: u64 = 16;

impl Monitor {
    /// Pauses the run when a checkpoint is due (a pause changes nothing:
    /// the run goes on to the same events at the same cycles).
    fn checkpoint_due(&mut self, device: &Device) -> Control {
        let Some(at) = self.checkpoint_at else {
            return Control::Continue;
        };
        if self.checkpoint_poll > 1 {
            self.checkpoint_poll -= 1;
            return Control::Continue;
        }
        self.checkpoint_poll = self.checkpoint_poll_steps;
        if device.events_processed() >= at {
            self.checkpoint_now = true;
            Control::Pause
        } else {
            Control::Continue
        }
    }

    /// Whether the device, at trace progress `progress`, has reached the
    /// replay's bound.
    fn at_bound(&self, device: &Device, progress: u64) -> bool {
        self.bound.is_some_and(|b| {
            Mark {
                cycle: device.now().0,
                events: device.events_processed(),
                progress,
                doorbells: 0,
            } >= b.device_point()
        })
    }

    /// The breakpoints firmware doorbell `db` hits (each hit counted).
    pub(crate) fn doorbell_hits(&mut self, device: &Device, db: &FwDoorbell) -> Vec<Hit> {
        let mut hits = Vec::new();
        for b in self.bps.iter_mut() {
            let BreakKind::Doorbell(place) = &b.kind else {
                continue;
            };
            let here = match place {
                Place::Core(t) => *t == db.tpb,
                p => p.has_engine_event(db.engine, None, Some(db.queue)),
            };
            if here
                && let Some(h) = b.hit(
                    device,
                    format!(
                        "tpb{}#{} rang eng{} queue {} at cycle {}",
                        db.tpb, db.seq, db.engine, db.queue, db.at
                    ),
                )
            {
                hits.push(h);
            }
        }
        hits
    }

    /// A replay reached the point after the first `passed` firmware
    /// doorbells its last device step rang: the stops for the others wait
    /// as they did when the session first stood here.
    pub(crate) fn resume_doorbells(&mut self, passed: u64) {
        self.queued = self
            .rung
            .iter()
            .zip(1u64..)
            .filter(|&(_, n)| n > passed)
            .map(|(db, n)| Queued {
                doorbells: n,
                doorbell: db.clone(),
            })
            .collect();
        self.doorbells = passed;
    }

    /// Takes the events the sink received (with `flush`, also those the
    /// device holds); scans them when a stop may depend on them.
    pub(crate) fn drain(&mut self, device: &mut Device, flush: bool, scan: bool) {
        if flush {
            device.flush_events();
        }
        let events = match self.sink.lock() {
            Ok(mut s) if !s.is_empty() => std::mem::take(&mut *s),
            _ => return,
        };
        if scan {
            self.scan(device, &events);
        }
        for e in events {
            if let DeviceEvent::Firmware(fw) = &e {
                self.words_seen.insert((fw.tpb, fw.inst.seq));
            }
            if let DeviceEvent::Firmware(fw) = &e
                && matches!(
                    fw.kind,
                    FwEventKind::Done { .. }
                        | FwEventKind::Rejected { .. }
                        | FwEventKind::MemcpyDone { .. }
                )
            {
                self.words_done.insert((fw.tpb, fw.inst.seq), fw.at);
            }
            if self.recent.len() == RECENT_EVENTS {
                self.recent.pop_front();
            }
            if let Some(t) = self.timeline.as_mut() {
                t.push(e.clone());
            }
            self.recent.push_back(e);
        }
    }

    /// Looks at new events for breakpoints and the step's goal.
    fn scan(&mut self, device: &Device, events: &[DeviceEvent]) {
        self.rung.clear();
        if self.goal == Granularity::Event && !events.is_empty() {
            self.step_events.extend(events.iter().cloned());
            if self.pending.kind.is_none() {
                self.pending.kind = Some(StopKind::Events(Vec::new()));
            }
        }
        for e in events {
            match e {
                DeviceEvent::Firmware(fw) => self.scan_fw(device, fw),
                DeviceEvent::Engine(ev) => self.scan_engine(device, ev),
                _ => {}
            }
        }
    }

    fn scan_fw(&mut self, device: &Device, fw: &q7::FwEvent) {
        let mut hits = Vec::new();
        for b in self.bps.iter_mut() {
            if let BreakKind::Word { tpb, seq } = b.kind
                && !b.done
                && tpb == fw.tpb
                && seq == fw.inst.seq
            {
                b.done = true;
                if let Some(h) = b.hit(
                    device,
                    format!("taken up: {}", soc::exec::fw_event_text(fw)),
                ) {
                    hits.push(h);
                }
            }
        }
        if let Granularity::Finish(FinishTarget::Word { tpb, seq }) = self.goal
            && tpb == fw.tpb
            && seq == fw.inst.seq
            && matches!(
                fw.kind,
                FwEventKind::Done { .. }
                    | FwEventKind::Rejected { .. }
                    | FwEventKind::MemcpyDone { .. }
            )
            && self.pending.kind.is_none()
        {
            self.pending.kind = Some(StopKind::Finished {
                what: soc::exec::fw_event_text(fw),
            });
        }
        self.pending.hits.extend(hits);
        let ops = self.micro_ops.entry(fw.tpb).or_default();
        let rung = match &fw.kind {
            FwEventKind::MicroOp { text } => {
                if ops.len() < MICRO_OPS_KEPT {
                    ops.push(text.clone());
                }
                None
            }
            FwEventKind::Log { text } => {
                if ops.len() < MICRO_OPS_KEPT {
                    ops.push(format!("log: {text}"));
                }
                None
            }
            FwEventKind::InlineChunk {
                engine,
                queue,
                slot,
                chunk_bytes,
                anomaly,
                ..
            } => {
                ops.push(format!("word0 anomaly: {anomaly}"));
                Some((*engine, *queue, 1, 1, *chunk_bytes, *slot, *slot))
            }
            FwEventKind::Doorbell {
                engine,
                queue,
                count,
                m2s_count,
                bytes,
                m2s_first,
                s2m_first,
            } => Some((
                *engine, *queue, *count, *m2s_count, *bytes, *m2s_first, *s2m_first,
            )),
            _ => None,
        };
        let Some((engine, queue, count, m2s_count, bytes, m2s_first, s2m_first)) = rung else {
            return;
        };
        let db = FwDoorbell {
            at: fw.at,
            tpb: fw.tpb,
            seq: fw.inst.seq,
            source: fw.inst.source.clone(),
            engine,
            queue,
            count,
            m2s_count,
            bytes,
            m2s_first,
            s2m_first,
            micro_ops: std::mem::take(ops),
        };
        // Every doorbell of the step counts for the marks of its stops.
        self.rung.push(db.clone());
        let doorbells = self.rung.len() as u64;
        if self.pending.kind.is_some() {
            // Behind a stop: its turn comes after it.
            self.queued.push_back(Queued {
                doorbells,
                doorbell: db,
            });
            return;
        }
        let hits = self.doorbell_hits(device, &db);
        let goal = self.goal == Granularity::Doorbell && self.filter.wants(engine, queue);
        if goal || !hits.is_empty() {
            self.pending.kind = Some(StopKind::FwDoorbell(db));
            self.pending.hits.extend(hits);
            self.pending.doorbells = doorbells;
        }
    }

    fn scan_engine(&mut self, device: &Device, ev: &udma::EngineEvent) {
        let engine = ev.engine;
        let text = || soc::exec::engine_event_text(ev);
        let mut hits = Vec::new();
        for b in self.bps.iter_mut() {
            let why = match (&b.kind, &ev.kind) {
                (BreakKind::Packet(p), EventKind::PacketDone { queue, .. })
                    if p.has_engine_event(engine, None, Some(*queue)) =>
                {
                    text()
                }
                (
                    BreakKind::Fault { place, cause },
                    EventKind::Fault {
                        dir,
                        queue,
                        cause: c,
                        ..
                    },
                ) if place.has_engine_event(engine, Some(*dir), *queue)
                    && cause.as_ref().is_none_or(|want| cause_matches(c, want)) =>
                {
                    text()
                }
                (
                    BreakKind::RingId(p),
                    EventKind::Fault {
                        dir, queue, cause, ..
                    },
                ) if cause.ends_with(".PREF_RING_ID")
                    && p.has_engine_event(engine, Some(*dir), *queue) =>
                {
                    text()
                }
                (BreakKind::State(p), EventKind::State { dir, .. })
                    if p.has_engine_event(engine, Some(*dir), None) =>
                {
                    text()
                }
                (BreakKind::State(p), EventKind::QueueReset { dir, queue, .. })
                    if p.has_engine_event(engine, Some(*dir), Some(*queue)) =>
                {
                    text()
                }
                (
                    BreakKind::State(p),
                    EventKind::Fault {
                        dir, queue, cause, ..
                    },
                ) if cause == "AXI_QUEUE_CFG.NON_ACTIVE"
                    && queue.is_some()
                    && p.has_engine_event(engine, Some(*dir), *queue) =>
                {
                    text()
                }
                _ => continue,
            };
            if let Some(h) = b.hit(device, why) {
                hits.push(h);
            }
        }
        self.pending.hits.extend(hits);
        if let Granularity::Finish(FinishTarget::Packet {
            engine: e,
            queue: q,
        }) = self.goal
            && let EventKind::PacketDone { queue, .. } = ev.kind
            && e == engine
            && q == queue
            && self.pending.kind.is_none()
        {
            self.pending.kind = Some(StopKind::Finished { what: text() });
        }
    }

    /// Watchpoints whose value changed (or whose test became true).
    pub(crate) fn check_watches(&mut self, device: &Device) {
        if !self.watches {
            return;
        }
        let now = device.now().0;
        let mut hits = Vec::new();
        for b in self.bps.iter_mut() {
            let BreakKind::Watch { value, test } = &b.kind else {
                continue;
            };
            if !b.enabled {
                continue;
            }
            let new = value.read(device);
            let old = std::mem::replace(&mut b.last, new);
            if new == old {
                continue;
            }
            let fires = match (test, new) {
                (None, _) => true,
                (Some((cmp, rhs)), Some(n)) => {
                    cmp.holds(n, *rhs) && !old.is_some_and(|o| cmp.holds(o, *rhs))
                }
                (Some(_), None) => false,
            };
            if !fires {
                continue;
            }
            let show = |v: Option<u32>| v.map_or("(unreadable)".to_string(), |v| format!("{v:#x}"));
            let why = format!(
                "{} changed {} -> {} at cycle {now}",
                value.text,
                show(old),
                show(new)
            );
            if let Some(h) = b.hit(device, why) {
                hits.push(h);
            }
        }
        self.pending.hits.extend(hits);
    }

    /// `break race`: the races the detector found since it last looked,
    /// each a hit that says which race it is (both sides, the bytes, the
    /// kind).
    pub(crate) fn check_races(&mut self, device: &Device) {
        let found = device.races_found();
        if found <= self.races_seen {
            return;
        }
        let new = self.races_seen..found;
        self.races_seen = found;
        if !self.bps.have_races() {
            return;
        }
        let mut hits = Vec::new();
        for n in new {
            let Some(r) = device.race_found(n) else {
                continue;
            };
            let why = race_text(n, &r);
            for b in self.bps.iter_mut() {
                if b.kind == BreakKind::Race
                    && let Some(h) = b.hit(device, why.clone())
                {
                    hits.push(h);
                }
            }
        }
        self.pending.hits.extend(hits);
    }

    /// Cycle breakpoints time has reached.
    pub(crate) fn check_cycles(&mut self, device: &Device) {
        let now = device.now().0;
        let mut hits = Vec::new();
        for b in self.bps.iter_mut() {
            if let BreakKind::Cycle(c) = b.kind
                && !b.done
                && now >= c
            {
                b.done = true;
                let why = if now == c {
                    format!("reached cycle {c}")
                } else {
                    format!(
                        "reached cycle {now}, past {c} (a host operation or an idle jump passed it)"
                    )
                };
                if let Some(h) = b.hit(device, why) {
                    hits.push(h);
                }
            }
        }
        self.pending.hits.extend(hits);
    }

    /// The breakpoints a statement meets before it starts: its line, the
    /// trace doorbell it writes (each hit counted); and that doorbell.
    pub(crate) fn statement_hits(
        &mut self,
        stmt: &Statement,
        linked: &Linked,
        device: &Device,
    ) -> (Option<(QueueTarget, u32)>, Vec<Hit>) {
        let line = stmt.span.line;
        let mut hits = Vec::new();
        let doorbell = Self::doorbell_of(stmt, linked, device);
        for b in self.bps.iter_mut() {
            let why = match (&b.kind, &doorbell) {
                (BreakKind::Line(l), _) if *l == line => format!("line {line}"),
                (BreakKind::Doorbell(p), Some((q, inc)))
                    if p.has_engine_event(q.engine, Some(q.dir), Some(q.queue)) =>
                {
                    format!("doorbell {} += {inc} at line {line}", q.region)
                }
                _ => continue,
            };
            if let Some(h) = b.hit(device, why) {
                hits.push(h);
            }
        }
        (doorbell, hits)
    }

    /// The doorbell a statement is about to write, if it is one.
    fn doorbell_of(
        stmt: &Statement,
        linked: &Linked,
        device: &Device,
    ) -> Option<(QueueTarget, u32)> {
        match (&stmt.kind, linked) {
            (StatementKind::Doorbell { count, .. }, Linked::Doorbell(q)) => {
                Some((q.clone(), *count))
            }
            (StatementKind::Write32 { value, .. }, Linked::Addr(r)) => {
                let reg = r.register.as_deref()?;
                if reg != "TDRTP_INC" && reg != "RDRTP_INC" {
                    return None;
                }
                let d = device.map().decode(r.addr);
                let name = device.map().name(d.region?);
                Some((queue_target(device, name)?, value & 0xFF_FFFF))
            }
            _ => None,
        }
    }
}

impl ExecHooks for Monitor {
    fn before(
        &mut self,
        index: usize,
        stmt: &Statement,
        linked: &Linked,
        device: &mut Device,
        _executor: &Executor,
    ) -> Control {
        self.index = index;
        let weighed = self.weighed.take() == Some(index);
        if self.goal == Granularity::ToEnd {
            return Control::Continue;
        }
        let (doorbell, hits) = if weighed {
            (Self::doorbell_of(stmt, linked, device), Vec::new())
        } else {
            self.statement_hits(stmt, linked, device)
        };
        let goal = self.goal == Granularity::Doorbell
            && doorbell
                .as_ref()
                .is_some_and(|(q, _)| self.filter.wants(q.engine, q.queue));
        if let Some((queue, increment)) = doorbell.filter(|_| goal || !hits.is_empty()) {
            self.pending.kind = Some(StopKind::Doorbell { queue, increment });
        }
        self.pending.hits.extend(hits);
        if self.pending.is_empty() && !self.at_bound(device, index as u64 * 2) {
            Control::Continue
        } else {
            Control::Pause
        }
    }

    fn during_run(&mut self, device: &mut Device) -> Control {
        if self.goal == Granularity::ToEnd {
            self.drain(device, false, false);
            return self.checkpoint_due(device);
        }
        self.drain(device, self.needs_events, self.needs_events);
        self.check_watches(device);
        self.check_races(device);
        if self.pending.is_empty() && !self.at_bound(device, self.index as u64 * 2 + 1) {
            self.checkpoint_due(device)
        } else {
            Control::Pause
        }
    }

    fn statement(&mut self, record: &StepRecord) {
        (self.listener)(record);
    }
}

/// What `break race` says of race `n` (from 0, in the order found): the
/// kind, the bytes and both sides, as the race section words them
/// (docs/races.md §The report).
fn race_text(n: usize, r: &soc::RaceReport) -> String {
    let bytes = if r.addr.is_some() {
        format!(" ({} bytes)", r.len_bytes)
    } else {
        String::new()
    };
    format!(
        "race #{}: {} race on {}{bytes}; first: {} by {} at cycle {}; second: {} by {} at cycle {}",
        n + 1,
        r.kind,
        r.range,
        r.first.access,
        r.first.source,
        r.first.cycle,
        r.second.access,
        r.second.source,
        r.second.cycle
    )
}
