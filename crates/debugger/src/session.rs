//! A debugging session: the trace, the device behind the host runtime, the
//! statement under way and the breakpoints. [`Session::step`] runs to the
//! next stop at a [`Granularity`] and says why it stopped ([`Stop`]); the
//! views read the state in between. Front ends (the CLI prompt; a JSON or
//! DAP server) call only this API.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use host_exec::{HostSession, SessionOptions};
use sim_core::Cycle;
use soc::exec::{
    Advance, Execution, Linked, QueueTarget, RunReport, Status, StepRecord, TraceFiles,
    queue_target,
};
use soc::{Device, DeviceEvent};
use trace_format::Trace;

use crate::breakpoint::{BreakKind, Breakpoints, Hit, parse_break, parse_watch};
use crate::monitor::{Monitor, Pending};

/// How far [`Session::step`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// One trace statement (a `run`/`wait` under way: to its end).
    Statement,
    /// To the next doorbell: a trace doorbell statement (before it writes)
    /// or one the firmware rang, within the session's doorbell filter.
    Doorbell,
    /// Let this many cycles pass.
    Cycles(u64),
    /// Until simulated time reaches this cycle.
    UntilCycle(u64),
    /// Until the device records at least one event (a doorbell taking
    /// effect, a prefetch, a packet, a fault, a firmware step).
    Event,
    /// Until a packet or an instruction word completes.
    Finish(FinishTarget),
    /// To the next breakpoint.
    Continue,
    /// To the end of the trace, breakpoints ignored.
    ToEnd,
}

/// What [`Granularity::Finish`] waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishTarget {
    /// The next packet to complete on this engine's queue (both
    /// directions move it).
    Packet {
        /// Engine id.
        engine: u16,
        /// Queue index.
        queue: u8,
    },
    /// A core's instruction word (or firmware call) completing.
    Word {
        /// The core.
        tpb: u8,
        /// Its number on the core.
        seq: u64,
    },
}

impl std::fmt::Display for FinishTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FinishTarget::Packet { engine, queue } => {
                write!(f, "a packet of eng{engine} queue {queue}")
            }
            FinishTarget::Word { tpb, seq } => write!(f, "tpb{tpb}#{seq}"),
        }
    }
}

/// Doorbells [`Granularity::Doorbell`] stops at (`--engine`, `--queue`).
#[derive(Clone, Debug, Default)]
pub struct DoorbellFilter {
    /// Only these engines (empty: all).
    pub engines: Vec<u16>,
    /// Only these queue indices (empty: all).
    pub queues: Vec<u8>,
}

impl DoorbellFilter {
    pub(crate) fn wants(&self, engine: u16, queue: u8) -> bool {
        (self.engines.is_empty() || self.engines.contains(&engine))
            && (self.queues.is_empty() || self.queues.contains(&queue))
    }
}

/// A doorbell the firmware rang for an instruction word (both directions
/// of one queue pair).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FwDoorbell {
    /// When.
    pub at: u64,
    /// The core.
    pub tpb: u8,
    /// The word's number on the core.
    pub seq: u64,
    /// Where the word came from (`line 24`).
    pub source: String,
    /// Engine id.
    pub engine: u16,
    /// Queue index.
    pub queue: u8,
    /// S2M descriptors posted.
    pub count: u32,
    /// M2S descriptors posted.
    pub m2s_count: u32,
    /// Bytes the engine moves.
    pub bytes: u64,
    /// First M2S slot written.
    pub m2s_first: u32,
    /// First S2M slot written.
    pub s2m_first: u32,
    /// The firmware's micro-ops and log lines since its last doorbell.
    pub micro_ops: Vec<String>,
}

/// Why a step ended (the breakpoints that fired are in [`Stop::hits`]).
#[derive(Clone, Debug, PartialEq)]
pub enum StopKind {
    /// Before a trace doorbell statement: the doorbell is not written yet.
    Doorbell {
        /// The queue about to be rung.
        queue: QueueTarget,
        /// The tail increment.
        increment: u32,
    },
    /// The firmware rang a queue pair's doorbells.
    FwDoorbell(FwDoorbell),
    /// One statement ran.
    Statement {
        /// Its trace line.
        line: u32,
    },
    /// Time reached the cycle asked for.
    Cycle {
        /// The cycle asked for.
        goal: u64,
    },
    /// The device recorded events.
    Events(Vec<DeviceEvent>),
    /// What `finish` waited for happened.
    Finished {
        /// What completed.
        what: String,
    },
    /// Breakpoints fired (see the hits).
    Breakpoint,
    /// Every statement has run: the state stays for inspection.
    End,
}

/// Where the trace stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The statement's index in the trace.
    pub index: usize,
    /// Its trace line.
    pub line: u32,
    /// Its directive.
    pub directive: &'static str,
    /// A `run`/`wait` paused part-way (otherwise it has not started).
    pub under_way: bool,
}

/// Where and why a step stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    /// The simulated cycle.
    pub cycle: u64,
    /// The statement that runs next (or is under way); `None` at the end.
    pub position: Option<Position>,
    /// Why.
    pub kind: StopKind,
    /// The breakpoints that fired, and why each did.
    pub hits: Vec<Hit>,
}

impl Stop {
    /// The queue a stop is about, for views without an argument: the
    /// queue rung (the M2S side for a firmware doorbell).
    pub fn focus(&self, device: &Device) -> Option<(QueueTarget, u32)> {
        match &self.kind {
            StopKind::Doorbell { queue, increment } => Some((queue.clone(), *increment)),
            StopKind::FwDoorbell(fw) => {
                queue_target(device, &format!("eng{}.m2s.q{}", fw.engine, fw.queue)).map(|q| (q, 0))
            }
            _ => None,
        }
    }

    /// What `finish` without an argument waits for: the packet of the
    /// queue in focus, or the word that rang it.
    pub fn finish_target(&self) -> Option<FinishTarget> {
        match &self.kind {
            StopKind::Doorbell { queue, .. } => Some(FinishTarget::Packet {
                engine: queue.engine,
                queue: queue.queue,
            }),
            StopKind::FwDoorbell(fw) => Some(FinishTarget::Word {
                tpb: fw.tpb,
                seq: fw.seq,
            }),
            _ => None,
        }
    }
}

/// How a session is built.
#[derive(Debug, Default)]
pub struct SessionConfig {
    /// Which doorbells [`Granularity::Doorbell`] stops at.
    pub filter: DoorbellFilter,
    /// Keep every device event for a timeline ([`Session::take_timeline`]).
    pub keep_timeline: bool,
    /// The host runtime's options.
    pub host: SessionOptions,
}

/// Receives each statement's record as it finishes.
pub type Listener = Box<dyn FnMut(&StepRecord)>;

/// A point of a session's history, ordered as time runs: the cycle, the
/// simulator events processed ([`Device::events_processed`]), the trace's
/// progress (twice the statement index, plus one while it is under way)
/// and, among the firmware doorbells one device step rang, how many the
/// session has passed. The device is deterministic, so a fresh session
/// brought to the same mark with the same pokes holds the same state
/// ([`crate::reverse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    /// The simulated cycle.
    pub cycle: u64,
    /// Simulator events processed so far.
    pub events: u64,
    /// Statement index × 2, + 1 for a `run`/`wait` under way.
    pub progress: u64,
    /// At the stop for the k-th (from 1) of the firmware doorbells the
    /// last device step rang, k: their stops share the device's point
    /// (one core step rings several queues) and `next` shows them one at
    /// a time. 0 anywhere else.
    pub doorbells: u64,
}

impl Mark {
    /// The device's point: this mark before any firmware doorbell of its
    /// step (what the device alone can be brought to).
    #[must_use]
    pub const fn device_point(self) -> Mark {
        Mark {
            doorbells: 0,
            ..self
        }
    }
}

/// One entry of the session's history, replayed by reverse execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A step reached this point.
    Reach(Mark),
    /// A statement typed at the prompt ran here.
    Poke(String),
    /// `set TARGET VALUE` ran here.
    Set(String, u32),
}

/// A trace being debugged.
pub struct Session {
    pub(crate) host: HostSession,
    pub(crate) trace: Trace,
    linked: Vec<Linked>,
    pub(crate) source: String,
    /// The trace's name in messages.
    pub(crate) file: String,
    pub(crate) files: Box<dyn TraceFiles>,
    pub(crate) exec: Execution,
    pub(crate) monitor: Monitor,
    pub(crate) stops: usize,
    pub(crate) ended: bool,
    /// The cycle the trace ended at.
    pub(crate) last_cycle: u64,
    /// Reverse execution: the history and how to rebuild the device.
    pub(crate) history: crate::reverse::History,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("statements", &self.trace.statements.len())
            .field("stops", &self.stops)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Parses and links trace `file` (`source`) on `device` and starts it:
    /// nothing has run yet.
    ///
    /// # Errors
    ///
    /// Parse and name errors (nothing ran), or the host runtime's set-up
    /// error.
    pub fn new(
        mut device: Device,
        source: &str,
        file: &str,
        files: Box<dyn TraceFiles>,
        config: SessionConfig,
        listener: Listener,
    ) -> Result<Session, Vec<String>> {
        let strings = |e: Vec<trace_format::ParseError>| {
            e.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        let trace = trace_format::parse(source, file).map_err(strings)?;
        let linked = soc::exec::link(&device, &trace, file).map_err(strings)?;
        // Events reach the session as the device produces them.
        let sink = Arc::new(Mutex::new(Vec::new()));
        let to = Arc::clone(&sink);
        device.set_trace(true);
        // One order of the events, however often the session pauses
        // (docs/user-guide.md §12 "Views").
        device.set_events_in_step_order(true);
        device.set_event_sink(Some(Box::new(move |events| {
            if let Ok(mut v) = to.lock() {
                v.extend(events);
            }
        })));
        let mut host = HostSession::with_options(device, config.host).map_err(|e| vec![e])?;
        let exec = Execution::start(&mut host, file);
        let history = crate::reverse::History::new(config.filter.clone(), config.keep_timeline);
        Ok(Session {
            host,
            trace,
            linked,
            source: source.to_string(),
            file: file.to_string(),
            files,
            exec,
            monitor: Monitor {
                bps: Breakpoints::default(),
                filter: config.filter,
                goal: Granularity::Continue,
                sink,
                recent: VecDeque::new(),
                timeline: config.keep_timeline.then(Vec::new),
                listener,
                micro_ops: BTreeMap::new(),
                needs_events: false,
                watches: false,
                races_seen: 0,
                pending: Pending::default(),
                queued: VecDeque::new(),
                rung: Vec::new(),
                doorbells: 0,
                step_events: Vec::new(),
                words_done: BTreeMap::new(),
                words_seen: std::collections::BTreeSet::new(),
                bound: None,
                index: 0,
                weighed: None,
                checkpoint_at: None,
                checkpoint_now: false,
                checkpoint_poll: 0,
                checkpoint_poll_steps: 1,
            },
            stops: 0,
            ended: false,
            last_cycle: 0,
            history,
        })
    }

    /// A session restored from a checkpoint ([`crate::checkpoint`]): the
    /// trace of `like`, the state given.
    pub(crate) fn restored(
        host: HostSession,
        like: &Session,
        files: Box<dyn TraceFiles>,
        exec: Execution,
        monitor: Monitor,
        (ended, last_cycle): (bool, u64),
        history: crate::reverse::History,
    ) -> Session {
        Session {
            host,
            trace: like.trace.clone(),
            linked: like.linked.clone(),
            source: like.source.clone(),
            file: like.file.clone(),
            files,
            exec,
            monitor,
            stops: 0,
            ended,
            last_cycle,
            history,
        }
    }

    /// The device.
    pub fn device(&mut self) -> &mut Device {
        self.host.device_mut()
    }

    /// The host runtime (its report, the driver's events).
    pub fn host(&mut self) -> &mut HostSession {
        &mut self.host
    }

    /// The parsed trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Line `line` of the trace's text.
    pub fn source_line(&self, line: u32) -> Option<&str> {
        self.source
            .lines()
            .nth(usize::try_from(line).ok()?.checked_sub(1)?)
    }

    /// Lines in the trace's text.
    pub fn source_lines(&self) -> usize {
        self.source.lines().count()
    }

    /// The breakpoints.
    pub fn breakpoints(&self) -> &Breakpoints {
        &self.monitor.bps
    }

    /// The breakpoints, to change.
    pub fn breakpoints_mut(&mut self) -> &mut Breakpoints {
        &mut self.monitor.bps
    }

    /// Adds `break SPEC`; returns its number and, when the spec moved (a
    /// line with no statement), a note.
    ///
    /// # Errors
    ///
    /// What is wrong with the spec (unknown names with "did you mean"; a
    /// cycle already past; a line after the last statement).
    pub fn add_break(&mut self, spec: &str) -> Result<(u32, Option<String>), String> {
        let mut kind = parse_break(self.host.device_mut(), spec)?;
        let mut note = None;
        match &mut kind {
            BreakKind::Cycle(c) => {
                let now = self.host.device_mut().now().0;
                if *c <= now && !self.ended {
                    return Err(format!(
                        "cycle {c} is not ahead: the device is at cycle {now}"
                    ));
                }
            }
            BreakKind::Line(l) => {
                let lines: Vec<u32> = self.trace.statements.iter().map(|s| s.span.line).collect();
                match lines.iter().find(|&&x| x >= *l) {
                    Some(&x) if x == *l => {}
                    Some(&x) => {
                        note = Some(format!(
                            "line {l} has no statement: the breakpoint is at line {x}"
                        ));
                        *l = x;
                    }
                    None => {
                        return Err(format!(
                            "line {l} is past the trace's last statement (line {})",
                            lines.last().copied().unwrap_or(0)
                        ));
                    }
                }
            }
            BreakKind::Race if !self.host.device_mut().detects_races() => {
                // The detector must see every access from the start: turned
                // on before anything ran, or the trace replays with it.
                if self.untouched() {
                    self.host.device_mut().detect_races();
                    note = Some("the race detector is on (docs/races.md)".into());
                } else {
                    let seen = self.detect_races_from_start().map_err(|e| {
                        format!(
                            "the race detector must watch the trace from its start, and this session cannot replay it: {e} (neuron-sim step --break race turns it on from the start)"
                        )
                    })?;
                    note = Some(format!(
                        "the race detector is on: the trace replayed from its start with it to here (cycle {}); {seen} race(s) found before here, not stopped at (docs/races.md)",
                        self.host.device_mut().now().0
                    ));
                }
            }
            _ => {}
        }
        let device = self.host.device_mut();
        self.monitor.drain(device, true, false);
        let taken = match kind {
            BreakKind::Word { tpb, seq } => self.monitor.words_seen.contains(&(tpb, seq)),
            _ => false,
        };
        let id = self.monitor.bps.add(kind, self.host.device_mut());
        if taken {
            // It stops where the core takes the word up, which is past:
            // it fires again only from before that point (going back).
            if let Ok(b) = self.monitor.bps.get_mut(id) {
                b.done = true;
                note = Some(format!(
                    "{} was taken up already: the breakpoint fires only if the session goes back before that",
                    b.kind.describe()
                ));
            }
        }
        Ok((id, note))
    }

    /// Adds `watch SPEC`; returns its number.
    ///
    /// # Errors
    ///
    /// An unknown name (with "did you mean") or a malformed test.
    pub fn add_watch(&mut self, spec: &str) -> Result<u32, String> {
        let kind = parse_watch(self.host.device_mut(), spec)?;
        Ok(self.monitor.bps.add(kind, self.host.device_mut()))
    }

    /// Whether `word` starts a trace statement (a poke at the prompt).
    pub fn is_directive(word: &str) -> bool {
        word == "inst" || trace_format::directive(word).is_some()
    }

    /// Runs one trace statement typed at the prompt at the current cycle
    /// (a poke: `write32`, `write`, `fill`, `desc`, `doorbell`, `inst`,
    /// host operations…), with the trace's software state. Its outcome is
    /// returned as the statement's status and text; it does not count in
    /// the run's report.
    ///
    /// # Errors
    ///
    /// A statement that does not parse or link (nothing ran).
    pub fn poke(&mut self, line: &str) -> Result<(Status, String), String> {
        let file = "<prompt>";
        let strings = |e: Vec<trace_format::ParseError>| {
            e.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let trace = trace_format::parse(line, file).map_err(strings)?;
        let (Some(stmt), 1) = (trace.statements.first(), trace.statements.len()) else {
            return Err("one trace statement at a time".into());
        };
        let linked = soc::exec::link(self.host.device_mut(), &trace, file).map_err(strings)?;
        let Some(linked) = linked.first() else {
            return Err("the statement did not link".into());
        };
        let out = self
            .exec
            .run_extra(&mut self.host, stmt, linked, &mut *self.files);
        self.history.journal.push(Entry::Poke(line.to_string()));
        // Its events show in `events` now, not after the next step.
        self.monitor.drain(self.host.device_mut(), true, false);
        Ok(out)
    }

    /// `set VALUE NUMBER`: writes a register (a field of it: read, modify,
    /// write through the bus, side effects included) or a 32-bit memory
    /// word; returns what changed.
    ///
    /// # Errors
    ///
    /// An unknown name, a number too wide for the field, a bus fault.
    pub fn set(&mut self, target: &str, value: u32) -> Result<String, String> {
        let out = self.set_value(target, value);
        // Its events (an ignored write) show in `events` now.
        self.monitor.drain(self.host.device_mut(), true, false);
        let out = out?;
        self.history
            .journal
            .push(Entry::Set(target.to_string(), value));
        Ok(out)
    }

    fn set_value(&mut self, target: &str, value: u32) -> Result<String, String> {
        let device = self.host.device_mut();
        let v = crate::place::Value::parse(device, target)?;
        match &v.source {
            crate::place::Source::Reg {
                target: t,
                addr,
                field,
            } => {
                let old = device.peek_reg(*t).unwrap_or(0);
                let new = match field {
                    Some(f) => {
                        let max = f.mask >> f.lsb;
                        if value > max {
                            return Err(format!(
                                "{value:#x} does not fit {} (at most {max:#x})",
                                f.name
                            ));
                        }
                        (old & !f.mask) | ((value << f.lsb) & f.mask)
                    }
                    None => value,
                };
                let w = device.write32(*addr, new).map_err(|e| e.to_string())?;
                Ok(match w {
                    Some(w) if w.read_only => format!(
                        "{}.{} is read-only; value unchanged ({:#010x})",
                        w.region, w.register, w.new
                    ),
                    Some(w) => format!(
                        "{}.{}: {:#010x} -> {:#010x}{}",
                        w.region,
                        w.register,
                        w.old,
                        w.new,
                        if w.ignored != 0 {
                            format!(" (bits {:#x} did not take)", w.ignored)
                        } else {
                            String::new()
                        }
                    ),
                    None => format!("{target} = {new:#010x}"),
                })
            }
            crate::place::Source::Mem { addr } => {
                device
                    .write_bytes(*addr, &value.to_le_bytes())
                    .map_err(|e| e.to_string())?;
                Ok(format!("{target} ({addr:#x}) = {value:#010x}"))
            }
        }
    }

    /// Where the trace stands; `None` at its end.
    pub fn position(&self) -> Option<Position> {
        let (index, under_way) = self.exec.position(&self.trace)?;
        let s = self.trace.statements.get(index)?;
        Some(Position {
            index,
            line: s.span.line,
            directive: s.kind.directive(),
            under_way,
        })
    }

    /// The point of history the session stands at.
    pub fn mark(&mut self) -> Mark {
        let progress = match self.exec.position(&self.trace) {
            Some((index, under_way)) => index as u64 * 2 + u64::from(under_way),
            None => self.trace.statements.len() as u64 * 2,
        };
        let device = self.host.device_mut();
        Mark {
            cycle: device.now().0,
            events: device.events_processed(),
            progress,
            doorbells: self.monitor.doorbells,
        }
    }

    /// Whether nothing has run yet: no step, no poke, time at 0.
    fn untouched(&mut self) -> bool {
        self.history.journal.is_empty() && self.mark().progress == 0 && self.mark().cycle == 0
    }

    /// Whether every statement has run.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Stops so far.
    pub fn stops(&self) -> usize {
        self.stops
    }

    /// The run report so far (its summary as of now).
    pub fn report(&mut self) -> RunReport {
        self.exec.report_now(self.host.device_mut())
    }

    /// The last device events, oldest first.
    pub fn recent_events(&self) -> impl Iterator<Item = &DeviceEvent> {
        self.monitor.recent.iter()
    }

    /// Every device event so far (with [`SessionConfig::keep_timeline`]).
    pub fn take_timeline(&mut self) -> Vec<DeviceEvent> {
        let device = self.host.device_mut();
        self.monitor.drain(device, true, false);
        self.monitor.timeline.take().unwrap_or_default()
    }

    /// Breakpoints that wait for what never came, when the trace has
    /// ended: cycles past the end, lines and words never reached.
    pub fn unreached(&self) -> Vec<String> {
        self.monitor
            .bps
            .iter()
            .filter(|b| b.enabled && b.hits == 0)
            .filter_map(|b| match b.kind {
                BreakKind::Cycle(c) if !b.done => Some(format!(
                    "breakpoint {} (break cycle {c}) was not reached: the trace ended at cycle {}",
                    b.id,
                    self.last_cycle
                )),
                BreakKind::Word { tpb, seq } if !b.done => Some(format!(
                    "breakpoint {} (break tpb{tpb}#{seq}) was not reached: the core took up no such word",
                    b.id
                )),
                _ => None,
            })
            .collect()
    }

    /// Runs to the next stop at `granularity`.
    ///
    /// # Errors
    ///
    /// A request that cannot be met from here (a cycle not ahead; zero
    /// cycles). At the end of the trace every step returns the end stop.
    pub fn step(&mut self, granularity: Granularity) -> Result<Stop, String> {
        let (stop, _) = self.run_to(granularity, None)?;
        let stop = stop.unwrap_or_else(|| self.end_stop());
        let mark = self.mark();
        self.history.reached(mark);
        self.checkpoint_if_due();
        Ok(stop)
    }

    /// Runs like [`Session::step`], also stopping once the session reaches
    /// `bound` (see [`Mark`]). Returns the stop `granularity` made (`None`
    /// when only the bound was reached) and the mark it stopped at.
    pub(crate) fn run_to(
        &mut self,
        granularity: Granularity,
        bound: Option<Mark>,
    ) -> Result<(Option<Stop>, Mark), String> {
        self.monitor.bound = None;
        let stop = self.run_inner(granularity, bound);
        self.monitor.bound = None;
        let stop = stop?;
        Ok((stop, self.mark()))
    }

    fn run_inner(
        &mut self,
        granularity: Granularity,
        bound: Option<Mark>,
    ) -> Result<Option<Stop>, String> {
        if let Some(b) = bound
            && self.mark() >= b
        {
            return Ok(None);
        }
        let now = self.host.device_mut().now().0;
        let goal_cycle = match granularity {
            Granularity::Cycles(0) => return Err("cycles takes a count above 0".into()),
            Granularity::Cycles(n) => Some(now.saturating_add(n)),
            Granularity::UntilCycle(c) if c <= now => {
                return Err(format!(
                    "cycle {c} is not ahead: the device is at cycle {now}"
                ));
            }
            Granularity::UntilCycle(c) => Some(c),
            _ => None,
        };
        if self.ended {
            return Ok(Some(self.end_stop()));
        }
        // Firmware doorbells found together come one stop at a time (a
        // replay's bound may lie among them).
        loop {
            if let Some(b) = bound
                && self.mark() >= b
            {
                return Ok(None);
            }
            let Some(q) = self.monitor.queued.pop_front() else {
                break;
            };
            self.monitor.doorbells = q.doorbells;
            // Every stepping command stops early at a breakpoint; running
            // to the end ignores them.
            let hits = if granularity == Granularity::ToEnd {
                Vec::new()
            } else {
                let device = self.host.device_mut();
                self.monitor.doorbell_hits(device, &q.doorbell)
            };
            let db = &q.doorbell;
            let wanted = !hits.is_empty()
                || granularity == Granularity::Doorbell
                    && self.monitor.filter.wants(db.engine, db.queue);
            if wanted {
                return Ok(Some(self.stop(StopKind::FwDoorbell(q.doorbell), hits)));
            }
        }
        // The device moves on: past every doorbell of the step it stood at.
        self.monitor.doorbells = 0;
        self.monitor.rung.clear();
        self.monitor.goal = granularity.clone();
        self.monitor.bound = bound;
        self.monitor.checkpoint_at = self.history.checkpoints.next_due();
        self.monitor.checkpoint_now = false;
        self.monitor.checkpoint_poll_steps = self
            .history
            .checkpoints
            .interval_events
            .clamp(1, crate::monitor::CHECKPOINT_POLL_STEPS);
        // A replay to a point among a step's firmware doorbells looks at
        // the events to find them ([`Monitor::resume_doorbells`]).
        self.monitor.needs_events = matches!(
            granularity,
            Granularity::Doorbell | Granularity::Event | Granularity::Finish(_)
        ) || self.monitor.bps.need_events()
            || bound.is_some_and(|b| b.doorbells > 0);
        self.monitor.watches = self.monitor.bps.have_watches();
        self.monitor.step_events.clear();
        self.monitor.pending = Pending::default();
        // Events of earlier steps are not this step's.
        let device = self.host.device_mut();
        self.monitor.drain(device, true, false);
        if let Granularity::Finish(FinishTarget::Word { tpb, seq }) = granularity
            && let Some(at) = self.monitor.words_done.get(&(tpb, seq))
        {
            return Err(format!("tpb{tpb}#{seq} completed already, at cycle {at}"));
        }
        for b in self.monitor.bps.iter_mut() {
            if let BreakKind::Watch { value, .. } = &b.kind {
                b.last = value.read(device);
            }
        }
        loop {
            let now = self.host.device_mut().now().0;
            let pause_at = if granularity == Granularity::ToEnd {
                None
            } else {
                [
                    goal_cycle,
                    self.monitor.bps.next_cycle(now),
                    bound.map(|b| b.cycle),
                ]
                .into_iter()
                .flatten()
                .min()
                .map(Cycle)
            };
            let advance = self.exec.advance(
                &mut self.host,
                &self.trace,
                &self.linked,
                &mut *self.files,
                &mut self.monitor,
                pause_at,
            );
            let device = self.host.device_mut();
            match advance {
                Advance::Held { .. } => {}
                Advance::Paused { .. }
                    if std::mem::take(&mut self.monitor.checkpoint_now)
                        && self.monitor.pending.is_empty() =>
                {
                    // Paused for a checkpoint only: take it, go on.
                    self.checkpoint_if_due();
                    self.monitor.checkpoint_at = self.history.checkpoints.next_due();
                    continue;
                }
                Advance::Paused { .. } => {
                    if self.monitor.pending.is_empty() {
                        // The pause cycle came.
                        self.monitor.check_cycles(device);
                        if goal_cycle.is_some_and(|g| device.now().0 >= g) {
                            self.monitor.pending.kind = Some(StopKind::Cycle {
                                goal: goal_cycle.unwrap_or(0),
                            });
                        }
                    }
                }
                Advance::Finished { index } => {
                    if granularity != Granularity::ToEnd {
                        let scan = self.monitor.needs_events;
                        self.monitor.drain(device, scan, scan);
                        self.monitor.check_watches(device);
                        self.monitor.check_races(device);
                        self.monitor.check_cycles(device);
                        if goal_cycle.is_some_and(|g| device.now().0 >= g)
                            && self.monitor.pending.kind.is_none()
                        {
                            self.monitor.pending.kind = Some(StopKind::Cycle {
                                goal: goal_cycle.unwrap_or(0),
                            });
                        }
                        if granularity == Granularity::Statement
                            && self.monitor.pending.kind.is_none()
                        {
                            let line = self.trace.statements.get(index).map_or(0, |s| s.span.line);
                            self.monitor.pending.kind = Some(StopKind::Statement { line });
                        }
                    }
                }
                Advance::Quit { .. } | Advance::End => {
                    self.monitor.drain(device, true, false);
                    if granularity != Granularity::ToEnd {
                        self.monitor.check_races(device);
                    }
                    self.ended = true;
                    self.last_cycle = device.now().0;
                    let pending = std::mem::take(&mut self.monitor.pending);
                    if !pending.hits.is_empty() {
                        self.monitor.doorbells = pending.doorbells;
                        return Ok(Some(self.stop(StopKind::Breakpoint, pending.hits)));
                    }
                    return Ok(Some(self.end_stop()));
                }
            }
            let held = matches!(advance, Advance::Held { .. });
            if let Some(b) = bound
                && self.monitor.pending.is_empty()
            {
                // A statement that finished stands where the next one
                // starts: the bound is met there only once that one is
                // held (a doorbell stop), so `next` moves on from it.
                let (m, at) = (self.mark().device_point(), b.device_point());
                let finished = matches!(advance, Advance::Finished { .. });
                if held || (finished && m > at) || (!finished && m >= at) {
                    if b.doorbells > 0 && m == at {
                        self.monitor.resume_doorbells(b.doorbells);
                    }
                    return Ok(None);
                }
            }
            if !self.monitor.pending.is_empty() {
                let pending = std::mem::take(&mut self.monitor.pending);
                self.monitor.doorbells = pending.doorbells;
                let kind = match pending.kind {
                    Some(StopKind::Events(_)) => {
                        StopKind::Events(std::mem::take(&mut self.monitor.step_events))
                    }
                    Some(k) => k,
                    None => StopKind::Breakpoint,
                };
                let (kind, hits) = if matches!(advance, Advance::Finished { .. }) {
                    self.arrive(kind, pending.hits)
                } else {
                    (kind, pending.hits)
                };
                return Ok(Some(self.stop(kind, hits)));
            }
        }
    }

    /// A step that ended between two statements stands before the next
    /// one, at the place of its line breakpoints and of the doorbell it
    /// writes: they are weighed now, as a step that ran on would weigh them
    /// (docs/user-guide.md §12 "Stepping": every stepping command stops
    /// early at a breakpoint). Hits join the stop (a step stop before a
    /// trace doorbell becomes that doorbell's stop, as `next` shows it) and
    /// hold the statement: the next command starts it. Without hits, the
    /// statement does not weigh them again when it starts (a hit passed
    /// over counts once).
    /// The session stops where it stands (a client's entry stop): the
    /// breakpoints of the next statement are weighed now, so one set there
    /// fires only the next time a step arrives (docs/user-guide.md §12
    /// "Stepping").
    pub fn weigh_here(&mut self) {
        if let Some((index, false)) = self.exec.position(&self.trace) {
            self.monitor.weighed = Some(index);
        }
    }

    fn arrive(&mut self, kind: StopKind, mut hits: Vec<Hit>) -> (StopKind, Vec<Hit>) {
        let Some((index, false)) = self.exec.position(&self.trace) else {
            return (kind, hits);
        };
        // Deferred statements (tensor addresses) are linked when they start;
        // they write memory, never a doorbell register, so their line is
        // all there is to weigh.
        let (Some(stmt), Some(linked)) = (self.trace.statements.get(index), self.linked.get(index))
        else {
            return (kind, hits);
        };
        if self.exec.held() == Some(index) {
            return (kind, hits);
        }
        let device = self.host.device_mut();
        let (doorbell, found) = self.monitor.statement_hits(stmt, linked, device);
        if found.is_empty() {
            self.monitor.weighed = Some(index);
            return (kind, hits);
        }
        self.exec.hold_next();
        hits.extend(found);
        let kind = match (kind, doorbell) {
            (StopKind::Statement { .. }, Some((queue, increment))) => {
                StopKind::Doorbell { queue, increment }
            }
            (kind, _) => kind,
        };
        (kind, hits)
    }

    fn stop(&mut self, kind: StopKind, hits: Vec<Hit>) -> Stop {
        self.stops += 1;
        // What the device did up to here shows in `events`.
        let device = self.host.device_mut();
        self.monitor.drain(device, true, false);
        Stop {
            cycle: self.host.device_mut().now().0,
            position: self.position(),
            kind,
            hits,
        }
    }

    fn end_stop(&mut self) -> Stop {
        Stop {
            cycle: self.host.device_mut().now().0,
            position: None,
            kind: StopKind::End,
            hits: Vec::new(),
        }
    }

    /// Ends the session: the report (summary as of now) and the host
    /// runtime (for its report, the driver's events, the device).
    pub fn finish(mut self) -> (RunReport, HostSession) {
        let device = self.host.device_mut();
        self.monitor.drain(device, true, false);
        let report = self.exec.finish(&mut self.host);
        (report, self.host)
    }
}
