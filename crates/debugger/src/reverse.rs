//! Reverse execution (docs/user-guide.md §12 "Going back"): `goto CYCLE`,
//! `reverse-step`, `reverse-next` and `reverse-continue`, exact because the
//! device is deterministic.
//!
//! A session keeps its history as a journal: the points its steps reached
//! ([`Mark`]) and the pokes and `set`s made between them, and checkpoints
//! of its whole state every K simulator events ([`crate::checkpoint`]).
//! Going back restores the latest checkpoint at or before the point asked
//! for and replays the journal from there — each step runs to its recorded
//! mark, each poke made after the checkpoint runs again where it ran —
//! then the restored session takes the place of the old one, so a go-back
//! replays at most an interval of events. When the state cannot be copied
//! (an ioctl recording streamed to a file), going back builds a fresh
//! device instead (the front end's [`DeviceFactory`]: the same maps, timing
//! and mode) and replays from the start of the trace; `info checkpoints`
//! says which and what it costs. Finding the previous doorbell, statement
//! or breakpoint hit takes one more replay that steps at that granularity
//! and notes the last stop before the present, from the latest checkpoint
//! back, one stretch between two checkpoints at a time, until it finds
//! one.
//!
//! Going back discards the history after the point reached: a poke made
//! there starts a new one. The breakpoints are the user's and stay as they
//! are; one-shot cycle breakpoints ahead of the new point fire again.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use soc::Device;
use soc::exec::TraceFiles;

use crate::breakpoint::{BreakKind, Breakpoints};
use crate::checkpoint::{Checkpoint, CheckpointConfig, Checkpoints};
use crate::monitor::{Monitor, Pending};
use crate::session::{DoorbellFilter, Entry, Granularity, Mark, Session, SessionConfig, Stop};

/// Builds a fresh device like the one the session started on, for
/// reverse execution's replays.
pub type DeviceFactory = Box<dyn Fn() -> Result<Device, String>>;

/// A session's history and what replaying it needs.
pub(crate) struct History {
    pub(crate) journal: Vec<Entry>,
    factory: Option<DeviceFactory>,
    /// Why there is no factory, when the front end said.
    off_reason: Option<String>,
    filter: DoorbellFilter,
    keep_timeline: bool,
    /// Replays run, and the host time of the last.
    replays: u64,
    last_replay: Option<Duration>,
    /// The last command that went back: its replays and host time.
    last_command: Option<(u64, Duration)>,
    /// Replays run the race detector (`break race` turned it on).
    detect_races: bool,
    /// Where the last replay started: the cycle of the checkpoint restored
    /// (`None`: a fresh device at the start), and the events it replayed.
    last_from: Option<(Option<u64>, u64)>,
    pub(crate) checkpoints: Checkpoints,
}

impl History {
    pub(crate) fn new(filter: DoorbellFilter, keep_timeline: bool) -> History {
        History {
            journal: Vec::new(),
            factory: None,
            off_reason: None,
            filter,
            keep_timeline,
            replays: 0,
            last_replay: None,
            last_command: None,
            detect_races: false,
            last_from: None,
            checkpoints: Checkpoints::new(),
        }
    }

    /// The journal from entry `from` on (what a replay from a checkpoint
    /// taken there runs).
    fn journal_from(&self, from: usize) -> Vec<Entry> {
        self.journal.get(from..).unwrap_or_default().to_vec()
    }

    /// A step reached `mark`: consecutive steps keep only the last point.
    pub(crate) fn reached(&mut self, mark: Mark) {
        if let Some(Entry::Reach(last)) = self.journal.last_mut() {
            *last = mark;
        } else {
            self.journal.push(Entry::Reach(mark));
        }
    }

    fn bytes(&self) -> usize {
        self.journal
            .iter()
            .map(|e| {
                size_of::<Entry>()
                    + match e {
                        Entry::Reach(_) => 0,
                        Entry::Poke(s) | Entry::Set(s, _) => s.len(),
                    }
            })
            .sum()
    }
}

/// Where a replay goes.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// This point of the history.
    Mark(Mark),
    /// Cycle C, as `until C` from the start would reach it.
    Cycle(u64),
}

/// A stand-in while a replay holds the trace's files.
struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!(
            "{path}: files are with a replay"
        )))
    }
    fn write(&mut self, path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!(
            "{path}: files are with a replay"
        )))
    }
}

/// What a stepping granularity going back looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Back {
    Statement,
    Doorbell,
    Breakpoint,
}

impl Session {
    /// Lets the session go back: `factory` builds a device like the one it
    /// started on (the front end's maps, timing and mode), for when the
    /// session's state cannot be copied into checkpoints.
    pub fn set_device_factory(&mut self, factory: DeviceFactory) {
        self.history.factory = Some(factory);
        self.history.off_reason = None;
        self.history.checkpoints.off = false;
        if self.history.checkpoints.list.is_empty() {
            self.checkpoint_if_due();
        }
    }

    /// Turns reverse execution off, saying why (for example: an output
    /// file records one pass of the trace).
    pub fn disable_reverse(&mut self, reason: &str) {
        self.history.factory = None;
        self.history.off_reason = Some(reason.to_string());
        self.history.checkpoints.off = true;
        self.history.checkpoints.list.clear();
        self.history.checkpoints.bytes = 0;
    }

    /// Sets how often checkpoints are taken (simulator events, at least 1)
    /// and the host memory they may hold; checkpoints held over the new
    /// budget are thinned at the next one taken.
    pub fn set_checkpoints(&mut self, config: CheckpointConfig) {
        let c = &mut self.history.checkpoints;
        c.config = CheckpointConfig {
            interval_events: config.interval_events.max(1),
            ..config
        };
        c.interval_events = c.config.interval_events;
    }

    /// The point of each checkpoint held, oldest first.
    pub fn checkpoint_marks(&self) -> Vec<Mark> {
        let c = &self.history.checkpoints;
        c.list.iter().map(|c| c.mark).collect()
    }

    /// Host bytes the checkpoints hold, as last counted.
    pub fn checkpoint_bytes(&self) -> u64 {
        self.history.checkpoints.bytes
    }

    /// Where the last replay started — the cycle of the checkpoint it
    /// restored, `None` for a fresh device at the start of the trace — and
    /// the simulator events it replayed.
    pub fn last_replay_start(&self) -> Option<(Option<u64>, u64)> {
        self.history.last_from
    }

    /// `info checkpoints`: what going back costs.
    pub fn checkpoints_text(&self) -> String {
        let h = &self.history;
        let c = &h.checkpoints;
        let pokes = h
            .journal
            .iter()
            .filter(|e| !matches!(e, Entry::Reach(_)))
            .count();
        let mut out = match (&h.factory, &h.off_reason) {
            (Some(_), _) => "reverse execution: on\n".to_string(),
            (None, Some(r)) => format!("reverse execution: off ({r})\n"),
            (None, None) => "reverse execution: off (no device factory)\n".to_string(),
        };
        let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
        match &c.unavailable {
            Some(why) => out.push_str(&format!(
                "checkpoints: none ({why}); going back replays the journal from the start of the trace on a fresh device\n"
            )),
            None if c.off => out.push_str("checkpoints: none\n"),
            None => {
                let cycles: Vec<String> = c.list.iter().map(|c| c.mark.cycle.to_string()).collect();
                let shown = if cycles.len() > 12 {
                    format!(
                        "{} … {}",
                        cycles[..6].join(", "),
                        cycles[cycles.len() - 6..].join(", ")
                    )
                } else {
                    cycles.join(", ")
                };
                out.push_str(&format!(
                    "checkpoints: {} (at cycles {shown}), every {} simulator events\n",
                    c.list.len(),
                    c.interval_events
                ));
                out.push_str(&format!(
                    "checkpoint memory: {:.1} MiB held of a {:.1} MiB budget{}\n",
                    mib(c.bytes),
                    mib(c.config.budget_bytes),
                    if c.thinned > 0 {
                        format!(
                            "; thinned {} time{} (every second one dropped, the interval doubled from {})",
                            c.thinned,
                            if c.thinned == 1 { "" } else { "s" },
                            c.config.interval_events
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
        out.push_str(&format!(
            "journal: {} entries ({} pokes and sets), {} bytes\n",
            h.journal.len(),
            pokes,
            h.bytes()
        ));
        match (h.last_replay, h.last_command) {
            (Some(t), Some((n, cmd))) => {
                let from = match h.last_from {
                    Some((Some(cycle), events)) => {
                        format!(" from the checkpoint at cycle {cycle}, {events} events replayed")
                    }
                    Some((None, events)) => {
                        format!(" from the start of the trace, {events} events replayed")
                    }
                    None => String::new(),
                };
                out.push_str(&format!(
                    "replays: {}, the last took {:.3} s of host time{from}; the last command going back took {:.3} s ({n} replay{})\n",
                    h.replays,
                    t.as_secs_f64(),
                    cmd.as_secs_f64(),
                    if n == 1 { "" } else { "s" }
                ));
            }
            _ => out.push_str("replays: 0\n"),
        }
        out
    }

    /// Takes a checkpoint here when one is due (an interval of events
    /// since the last; the first at once).
    pub(crate) fn checkpoint_if_due(&mut self) {
        let Some(due) = self.history.checkpoints.next_due() else {
            return;
        };
        let mark = self.mark();
        if mark.events < due
            || !self.monitor.queued.is_empty()
            || !self.monitor.pending.is_empty()
            || self
                .history
                .checkpoints
                .list
                .last()
                .is_some_and(|c| c.mark >= mark)
        {
            return;
        }
        let Some(host) = self.host.try_clone() else {
            let c = &mut self.history.checkpoints;
            c.unavailable = Some(
                "the session's state cannot be copied: an ioctl recording, a register-access log, waveforms or the race detector is on"
                    .into(),
            );
            c.list.clear();
            c.bytes = 0;
            return;
        };
        let mut host = host;
        let state_bytes = host.device_mut().state_bytes();
        let sink = self
            .monitor
            .sink
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let checkpoint = Checkpoint {
            mark,
            journal_len: self.history.journal.len(),
            host,
            exec: self.exec.clone(),
            sink,
            recent: self.monitor.recent.clone(),
            timeline_len: self.monitor.timeline.as_ref().map(Vec::len),
            micro_ops: self.monitor.micro_ops.clone(),
            words_done: self.monitor.words_done.clone(),
            words_seen: self.monitor.words_seen.clone(),
            index: self.monitor.index,
            ended: self.ended,
            last_cycle: self.last_cycle,
            state_bytes,
        };
        let live = self.live_pages();
        self.history.checkpoints.push(checkpoint, &live);
    }

    /// The page identities of the live device.
    fn live_pages(&mut self) -> HashSet<usize> {
        self.host.device_mut().page_ids().collect()
    }

    /// `goto CYCLE`: the state at `cycle`, as `until CYCLE` from the start
    /// reaches it (with the pokes made before it). Ahead: a step there.
    ///
    /// # Errors
    ///
    /// Reverse execution off, or a replay that failed.
    pub fn goto(&mut self, cycle: u64) -> Result<Stop, String> {
        let now = self.host.device_mut().now().0;
        if cycle > now {
            return self.step(Granularity::UntilCycle(cycle));
        }
        self.timed(|s| {
            let new = s.replay(Target::Cycle(cycle))?;
            s.adopt(new);
            Ok(s.here(crate::StopKind::Cycle { goal: cycle }))
        })
    }

    /// Turns the race detector on in a session under way (`break race`):
    /// the detector must see every access from the start, so the trace
    /// replays from its start on a device that detects, up to where the
    /// session stands, and the replay takes its place. Returns the races
    /// found before here (seen: `break race` stops at the ones after).
    ///
    /// # Errors
    ///
    /// Reverse execution off, or a replay that failed (the session stays
    /// as it was).
    pub(crate) fn detect_races_from_start(&mut self) -> Result<usize, String> {
        self.reverse_ready()?;
        let now = self.mark();
        self.history.detect_races = true;
        // Checkpoints hold devices without the detector: the replay starts
        // from a fresh device, and a device that detects races is not
        // copied (no checkpoints after this).
        let kept = std::mem::replace(&mut self.history.checkpoints, Checkpoints::new());
        let began = Instant::now();
        let new = match self.replay(Target::Mark(now)) {
            Ok(new) => new,
            Err(e) => {
                self.history.detect_races = false;
                self.history.checkpoints = kept;
                return Err(e);
            }
        };
        self.adopt(new);
        self.history.last_command = Some((1, began.elapsed()));
        Ok(self.host.device_mut().races_found())
    }

    /// Runs a command that goes back, noting its replays and host time.
    fn timed(
        &mut self,
        f: impl FnOnce(&mut Session) -> Result<Stop, String>,
    ) -> Result<Stop, String> {
        let (began, replays) = (Instant::now(), self.history.replays);
        let out = f(self);
        let n = self.history.replays - replays;
        if n > 0 {
            self.history.last_command = Some((n, began.elapsed()));
        }
        out
    }

    /// `reverse-step`: back to where the statement before this point began
    /// (the end of the one before it).
    ///
    /// # Errors
    ///
    /// As [`Session::goto`]; at the start of the trace already.
    pub fn reverse_step(&mut self) -> Result<Stop, String> {
        self.timed(|s| s.back(Back::Statement))
    }

    /// `reverse-next`: back to the previous doorbell stop (the session's
    /// doorbell filter applies).
    ///
    /// # Errors
    ///
    /// As [`Session::reverse_step`].
    pub fn reverse_next(&mut self) -> Result<Stop, String> {
        self.timed(|s| s.back(Back::Doorbell))
    }

    /// `reverse-continue`: back to the last point before this one where a
    /// breakpoint (as they are now) fires; the start when none does.
    ///
    /// # Errors
    ///
    /// As [`Session::reverse_step`].
    pub fn reverse_continue(&mut self) -> Result<Stop, String> {
        self.timed(|s| s.back(Back::Breakpoint))
    }

    fn back(&mut self, what: Back) -> Result<Stop, String> {
        self.reverse_ready()?;
        let now = self.mark();
        let start = Mark {
            cycle: 0,
            events: 0,
            progress: 0,
            doorbells: 0,
        };
        if now <= start {
            return Err("at the start of the trace: there is nothing before".into());
        }
        let (granularity, bps) = match what {
            Back::Statement => (Granularity::Statement, Breakpoints::default()),
            Back::Doorbell => (Granularity::Doorbell, Breakpoints::default()),
            Back::Breakpoint => (Granularity::Continue, self.monitor.bps.rearmed()),
        };
        let found = self.scan(granularity, &bps, now)?;
        let (target, stop, held) = match found {
            Some((m, s, held)) => (m, Some(s), held),
            None => (start, None, false),
        };
        let new = self.replay(Target::Mark(target))?;
        self.adopt(new);
        // A stop before a statement (a line breakpoint, a trace doorbell)
        // holds it, as the session that first stopped there did: the next
        // step starts it rather than stopping there again.
        if held {
            self.exec.hold_next();
        }
        Ok(match stop {
            Some(s) => Stop {
                hits: s.hits,
                kind: s.kind,
                ..self.here(crate::StopKind::End)
            },
            None => self.here(crate::StopKind::Cycle { goal: 0 }),
        })
    }

    /// A stop where the session stands, of `kind`.
    fn here(&mut self, kind: crate::StopKind) -> Stop {
        self.stops += 1;
        Stop {
            cycle: self.host.device_mut().now().0,
            position: self.position(),
            kind,
            hits: Vec::new(),
        }
    }

    fn reverse_ready(&self) -> Result<(), String> {
        match (&self.history.factory, &self.history.off_reason) {
            (Some(_), _) => Ok(()),
            (None, Some(r)) => Err(format!("reverse execution is off: {r}")),
            (None, None) => Err("reverse execution is off: no device factory was given".into()),
        }
    }

    /// The session's configuration, for the sessions its replays run.
    fn replay_config(&self) -> SessionConfig {
        SessionConfig {
            filter: self.history.filter.clone(),
            keep_timeline: self.history.keep_timeline,
            host: host_exec::SessionOptions {
                keep_driver_events: self.history.keep_timeline,
                ..host_exec::SessionOptions::default()
            },
        }
    }

    /// A fresh session on a new device, nothing run, holding the trace's
    /// files (give them back with [`Session::give_back_files`]).
    fn fresh(&mut self) -> Result<Session, String> {
        self.reverse_ready()?;
        let Some(factory) = &self.history.factory else {
            return Err("reverse execution is off".into());
        };
        let mut device = factory()?;
        // The replay watches for races as the session does (`break race`).
        if self.history.detect_races || self.host.device_mut().detects_races() {
            device.detect_races();
        }
        let files = std::mem::replace(&mut self.files, Box::new(NoFiles));
        let config = self.replay_config();
        match Session::new(
            device,
            &self.source,
            &self.file,
            files,
            config,
            Box::new(|_| {}),
        ) {
            Ok(s) => Ok(s),
            // The trace parsed and linked when the session began, so only
            // the host runtime's start can fail here, as it would have then.
            Err(e) => Err(format!("the replay could not start: {}", e.join("; "))),
        }
    }

    /// A session restored from checkpoint `i`, holding the trace's files,
    /// its journal the part before the checkpoint; returns the index of the
    /// first journal entry to replay after it.
    fn restore(&mut self, i: usize) -> Result<(Session, usize), String> {
        self.reverse_ready()?;
        let timeline = self.monitor.timeline.as_ref();
        let Some(c) = self.history.checkpoints.list.get_mut(i) else {
            return Err("no such checkpoint".into());
        };
        let Some(mut host) = c.host.try_clone() else {
            return Err("the checkpoint could not be copied".into());
        };
        let sink = Arc::new(Mutex::new(c.sink.clone()));
        let to = Arc::clone(&sink);
        host.device_mut()
            .set_event_sink(Some(Box::new(move |events| {
                if let Ok(mut v) = to.lock() {
                    v.extend(events);
                }
            })));
        let timeline = match (c.timeline_len, timeline) {
            (Some(n), Some(t)) => Some(t.get(..n).map(<[_]>::to_vec).unwrap_or_default()),
            (Some(_), None) => Some(Vec::new()),
            (None, _) => None,
        };
        let monitor = Monitor {
            bps: Breakpoints::default(),
            filter: self.history.filter.clone(),
            goal: Granularity::Continue,
            sink,
            recent: c.recent.clone(),
            timeline,
            listener: Box::new(|_| {}),
            micro_ops: c.micro_ops.clone(),
            needs_events: false,
            watches: false,
            pending: Pending::default(),
            // A checkpoint is taken with no doorbell stop waiting.
            queued: VecDeque::new(),
            rung: Vec::new(),
            doorbells: c.mark.doorbells,
            step_events: Vec::new(),
            words_done: c.words_done.clone(),
            words_seen: c.words_seen.clone(),
            bound: None,
            index: c.index,
            // A replay weighs the breakpoints of the statement after the
            // checkpoint as they are now (the ones held stay held: `exec`).
            weighed: None,
            checkpoint_at: None,
            checkpoint_now: false,
            checkpoint_poll: 0,
            checkpoint_poll_steps: 1,
            // A checkpoint's device never detects races (it is not copied
            // while the detector runs).
            races_seen: 0,
        };
        let exec = c.exec.clone();
        let (ended, last_cycle, journal_len) = (c.ended, c.last_cycle, c.journal_len);
        let mut history = History::new(self.history.filter.clone(), self.history.keep_timeline);
        // A step that reached past the checkpoint may have extended the
        // journal's last point: replay it again (a point behind is a no-op).
        let from = match journal_len
            .checked_sub(1)
            .and_then(|k| self.history.journal.get(k))
        {
            Some(Entry::Reach(_)) => journal_len - 1,
            _ => journal_len,
        };
        history.journal = self
            .history
            .journal
            .get(..from)
            .unwrap_or_default()
            .to_vec();
        let files = std::mem::replace(&mut self.files, Box::new(NoFiles));
        let s = Session::restored(
            host,
            &*self,
            files,
            exec,
            monitor,
            (ended, last_cycle),
            history,
        );
        Ok((s, from))
    }

    /// Where a replay to `target` starts: a restored checkpoint (with the
    /// first journal entry after it) or a fresh session at the start.
    fn replay_start(&mut self, target: Target) -> Result<(Session, usize, Option<u64>), String> {
        let i = self.history.checkpoints.latest(|c| match target {
            // A point among a step's firmware doorbells: that very point,
            // or from before that step, whose doorbells the replay must
            // see rung.
            Target::Mark(t) if t.doorbells > 0 => {
                c.mark == t || c.mark.device_point() < t.device_point()
            }
            Target::Mark(t) => c.mark <= t,
            Target::Cycle(cy) => c.mark.cycle < cy || c.mark.events == 0,
        });
        self.session_at(i)
    }

    /// A session at checkpoint `i` (with the first journal entry after it
    /// and the checkpoint's cycle), or a fresh one at the start (`None`).
    fn session_at(&mut self, i: Option<usize>) -> Result<(Session, usize, Option<u64>), String> {
        match i {
            Some(i) => {
                let cycle = self.history.checkpoints.list.get(i).map(|c| c.mark.cycle);
                let (s, from) = self.restore(i)?;
                Ok((s, from, cycle))
            }
            None => Ok((self.fresh()?, 0, None)),
        }
    }

    fn give_back_files(&mut self, from: &mut Session) {
        self.files = std::mem::replace(&mut from.files, Box::new(NoFiles));
    }

    /// Replays the journal up to `target` from the nearest checkpoint (or
    /// a fresh session at the start); the new session's journal is the
    /// part replayed.
    fn replay(&mut self, target: Target) -> Result<Session, String> {
        let began = Instant::now();
        let (mut s, from, cycle) = self.replay_start(target)?;
        let events_before = s.host.device_mut().events_processed();
        let result = self.replay_into(&mut s, from, target);
        if let Err(e) = result {
            self.give_back_files(&mut s);
            return Err(e);
        }
        self.history.replays += 1;
        self.history.last_replay = Some(began.elapsed());
        let replayed = s
            .host
            .device_mut()
            .events_processed()
            .saturating_sub(events_before);
        self.history.last_from = Some((cycle, replayed));
        Ok(s)
    }

    fn replay_into(&mut self, s: &mut Session, from: usize, target: Target) -> Result<(), String> {
        let journal = self.history.journal_from(from);
        let before = |m: &Mark| match target {
            Target::Mark(t) => *m <= t,
            Target::Cycle(c) => m.cycle < c,
        };
        for entry in &journal {
            match entry {
                Entry::Reach(m) if before(m) => {
                    s.run_to(Granularity::Continue, Some(*m))?;
                    s.history.reached(*m);
                }
                Entry::Reach(_) => break,
                Entry::Poke(line) => {
                    s.poke(line)?;
                }
                Entry::Set(t, v) => {
                    s.set(t, *v)?;
                }
            }
        }
        match target {
            Target::Mark(t) => {
                s.run_to(Granularity::Continue, Some(t))?;
            }
            Target::Cycle(c) => {
                if s.host.device_mut().now().0 < c {
                    s.run_to(Granularity::UntilCycle(c), None)?;
                }
            }
        }
        let m = s.mark();
        s.history.reached(m);
        Ok(())
    }

    /// Finds the last stop before `now` stepping at `granularity` with
    /// `bps`: from the latest checkpoint before `now` to `now`, then from
    /// each earlier checkpoint to the next, until one holds a stop (from
    /// the start of the trace on a fresh device when there are none).
    fn scan(
        &mut self,
        granularity: Granularity,
        bps: &Breakpoints,
        now: Mark,
    ) -> Result<Option<(Mark, Stop, bool)>, String> {
        let mut upto = now;
        let mut inclusive = false;
        // A scan from a checkpoint sees the firmware doorbells of the steps
        // after it: one among the doorbells of `now`'s step starts before
        // that step.
        let mut i = self.history.checkpoints.latest(|c| {
            c.mark < now && (now.doorbells == 0 || c.mark.device_point() < now.device_point())
        });
        loop {
            let began = Instant::now();
            let (mut s, from, cycle) = self.session_at(i)?;
            let start = s.mark();
            // What happened before the checkpoint is not the stretch's.
            let device = s.host.device_mut();
            s.monitor.drain(device, true, false);
            let mut b = bps.clone();
            // One-shot breakpoints behind the checkpoint fired there: a
            // cycle it passed, a word the firmware had taken up.
            for bp in b.iter_mut() {
                match bp.kind {
                    BreakKind::Cycle(c) if c <= start.cycle && i.is_some() => bp.done = true,
                    BreakKind::Word { tpb, seq } if s.monitor.words_seen.contains(&(tpb, seq)) => {
                        bp.done = true;
                    }
                    _ => {}
                }
            }
            s.monitor.bps = b;
            let events_before = s.host.device_mut().events_processed();
            let found = self.scan_into(&mut s, from, granularity.clone(), upto, inclusive);
            let replayed = s
                .host
                .device_mut()
                .events_processed()
                .saturating_sub(events_before);
            self.give_back_files(&mut s);
            self.history.replays += 1;
            self.history.last_replay = Some(began.elapsed());
            self.history.last_from = Some((cycle, replayed));
            let found = found?;
            match (found, i) {
                (Some(f), _) => return Ok(Some(f)),
                (None, None) => return Ok(None),
                // The first checkpoint is the start of the trace: nothing
                // lies before it.
                (None, Some(0)) if start.events == 0 => return Ok(None),
                (None, Some(k)) => {
                    // Nothing in this stretch: the one before, up to and
                    // including this checkpoint's point and the firmware
                    // doorbells its step rang (a scan from the checkpoint
                    // does not see them).
                    upto = Mark {
                        doorbells: u64::MAX,
                        ..start
                    };
                    inclusive = true;
                    i = k.checked_sub(1);
                }
            }
        }
    }

    fn scan_into(
        &mut self,
        s: &mut Session,
        from: usize,
        granularity: Granularity,
        upto: Mark,
        inclusive: bool,
    ) -> Result<Option<(Mark, Stop, bool)>, String> {
        let journal = self.history.journal_from(from);
        let mut found = None;
        let wanted = |stop: &Stop| match granularity {
            Granularity::Continue => !stop.hits.is_empty(),
            _ => stop.kind != crate::StopKind::End,
        };
        let past = |at: Mark| at > upto || (at == upto && !inclusive);
        for entry in &journal {
            match entry {
                Entry::Reach(m) => loop {
                    let (stop, at) = s.run_to(granularity.clone(), Some(*m))?;
                    if past(at) {
                        return Ok(found);
                    }
                    match stop {
                        Some(stop) if wanted(&stop) => {
                            let held = s.exec.held().is_some();
                            found = Some((at, stop, held));
                        }
                        Some(stop) if stop.kind == crate::StopKind::End => return Ok(found),
                        _ => {}
                    }
                    if at >= upto {
                        return Ok(found);
                    }
                    if at >= *m {
                        break;
                    }
                },
                Entry::Poke(line) => {
                    s.poke(line)?;
                }
                Entry::Set(t, v) => {
                    s.set(t, *v)?;
                }
            }
        }
        Ok(found)
    }

    /// Takes the place of this session with `new` (a replay): the
    /// listener, the breakpoints, the files, the checkpoints up to the
    /// point reached and the front end's settings carry over.
    fn adopt(&mut self, mut new: Session) {
        // The replay holds the files already.
        new.monitor.listener = std::mem::replace(&mut self.monitor.listener, Box::new(|_| {}));
        new.monitor.bps = std::mem::take(&mut self.monitor.bps);
        // The replay's last events, as a stop going forward takes them
        // (the `events` view, the words taken up).
        let device = new.host.device_mut();
        new.monitor.drain(device, true, false);
        let now = new.host.device_mut().now().0;
        // One-shot breakpoints ahead of the point fire again: a cycle to
        // come, a word not taken up yet (and one taken up has fired).
        for b in new.monitor.bps.iter_mut() {
            match b.kind {
                BreakKind::Cycle(c) if c > now => b.done = false,
                BreakKind::Word { tpb, seq } => {
                    b.done = new.monitor.words_seen.contains(&(tpb, seq));
                }
                _ => {}
            }
        }
        new.history.factory = self.history.factory.take();
        new.history.replays = self.history.replays;
        new.history.last_replay = self.history.last_replay;
        new.history.last_command = self.history.last_command;
        new.history.detect_races = self.history.detect_races;
        new.history.last_from = self.history.last_from;
        new.history.checkpoints =
            std::mem::replace(&mut self.history.checkpoints, Checkpoints::new());
        let mark = new.mark();
        let live = new.live_pages();
        new.history.checkpoints.forget_after(mark, &live);
        new.stops = self.stops;
        // The races found up to the point replayed to have been seen.
        new.monitor.races_seen = new.host.device_mut().races_found();
        *self = new;
    }
}
