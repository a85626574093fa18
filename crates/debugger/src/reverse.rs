//! Reverse execution (docs/user-guide.md §12 "Going back"): `goto CYCLE`,
//! `reverse-step`, `reverse-next` and `reverse-continue`, exact because the
//! device is deterministic.
//!
//! A session keeps its history as a journal: the points its steps reached
//! ([`Mark`]) and the pokes and `set`s made between them. Going back builds
//! a fresh device (the front end's [`DeviceFactory`]: the same maps,
//! timing and mode), starts the trace on it and replays the journal up to
//! the point asked for — each step runs to its recorded mark, each poke
//! runs again where it ran — then the replayed session takes the place of
//! the old one. The start of the trace is the one checkpoint: a full run of
//! a bench workload takes about a tenth of a second, so replaying from it
//! keeps going back well under a second without holding device copies
//! (`info checkpoints` says what the history costs). Finding the previous
//! doorbell, statement or breakpoint hit takes one more replay that steps
//! at that granularity and notes the last stop before the present.
//!
//! Going back discards the history after the point reached: a poke made
//! there starts a new one. The breakpoints are the user's and stay as they
//! are; one-shot cycle breakpoints ahead of the new point fire again.

use std::time::{Duration, Instant};

use soc::Device;
use soc::exec::TraceFiles;

use crate::breakpoint::{BreakKind, Breakpoints};
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
        }
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
    /// started on (the front end's maps, timing and mode).
    pub fn set_device_factory(&mut self, factory: DeviceFactory) {
        self.history.factory = Some(factory);
        self.history.off_reason = None;
    }

    /// Turns reverse execution off, saying why (for example: an output
    /// file records one pass of the trace).
    pub fn disable_reverse(&mut self, reason: &str) {
        self.history.factory = None;
        self.history.off_reason = Some(reason.to_string());
    }

    /// `info checkpoints`: what going back costs.
    pub fn checkpoints_text(&self) -> String {
        let h = &self.history;
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
        out.push_str(
            "checkpoints: 1, the start of the trace (a fresh device; the journal replays from it)\n",
        );
        out.push_str(&format!(
            "journal: {} entries ({} pokes and sets), {} bytes\n",
            h.journal.len(),
            pokes,
            h.bytes()
        ));
        match (h.last_replay, h.last_command) {
            (Some(t), Some((n, c))) => out.push_str(&format!(
                "replays: {}, the last took {:.3} s of host time; the last command going back took {:.3} s ({n} replay{})\n",
                h.replays,
                t.as_secs_f64(),
                c.as_secs_f64(),
                if n == 1 { "" } else { "s" }
            )),
            _ => out.push_str("replays: 0\n"),
        }
        out
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
        let began = Instant::now();
        let new = match self.replay(Target::Mark(now)) {
            Ok(new) => new,
            Err(e) => {
                self.history.detect_races = false;
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
        };
        if now <= start {
            return Err("at the start of the trace: there is nothing before".into());
        }
        let (granularity, bps) = match what {
            Back::Statement => (Granularity::Statement, Breakpoints::default()),
            Back::Doorbell => (Granularity::Doorbell, Breakpoints::default()),
            Back::Breakpoint => (Granularity::Continue, self.monitor.bps.rearmed()),
        };
        let found = self.scan(granularity, bps, now)?;
        let (target, stop) = match found {
            Some((m, s)) => (m, Some(s)),
            None => (start, None),
        };
        let new = self.replay(Target::Mark(target))?;
        self.adopt(new);
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
        let config = SessionConfig {
            filter: self.history.filter.clone(),
            keep_timeline: self.history.keep_timeline,
            host: host_exec::SessionOptions {
                keep_driver_events: self.history.keep_timeline,
                ..host_exec::SessionOptions::default()
            },
        };
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

    fn give_back_files(&mut self, from: &mut Session) {
        self.files = std::mem::replace(&mut from.files, Box::new(NoFiles));
    }

    /// Replays the journal on a fresh session up to `target`; the new
    /// session's journal is the part replayed.
    fn replay(&mut self, target: Target) -> Result<Session, String> {
        let began = Instant::now();
        let mut s = self.fresh()?;
        let result = self.replay_into(&mut s, target);
        if let Err(e) = result {
            self.give_back_files(&mut s);
            return Err(e);
        }
        self.history.replays += 1;
        self.history.last_replay = Some(began.elapsed());
        Ok(s)
    }

    fn replay_into(&mut self, s: &mut Session, target: Target) -> Result<(), String> {
        let journal = self.history.journal.clone();
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

    /// Replays the history on a fresh session stepping at `granularity`
    /// with `bps`, and returns the last stop before `now` and its mark.
    fn scan(
        &mut self,
        granularity: Granularity,
        bps: Breakpoints,
        now: Mark,
    ) -> Result<Option<(Mark, Stop)>, String> {
        let began = Instant::now();
        let mut s = self.fresh()?;
        s.monitor.bps = bps;
        let found = self.scan_into(&mut s, granularity, now);
        self.give_back_files(&mut s);
        self.history.replays += 1;
        self.history.last_replay = Some(began.elapsed());
        found
    }

    fn scan_into(
        &mut self,
        s: &mut Session,
        granularity: Granularity,
        now: Mark,
    ) -> Result<Option<(Mark, Stop)>, String> {
        let journal = self.history.journal.clone();
        let mut found = None;
        let wanted = |stop: &Stop| match granularity {
            Granularity::Continue => !stop.hits.is_empty(),
            _ => stop.kind != crate::StopKind::End,
        };
        for entry in &journal {
            match entry {
                Entry::Reach(m) => loop {
                    let (stop, at) = s.run_to(granularity.clone(), Some(*m))?;
                    if at >= now {
                        return Ok(found);
                    }
                    match stop {
                        Some(stop) if wanted(&stop) => found = Some((at, stop)),
                        Some(stop) if stop.kind == crate::StopKind::End => return Ok(found),
                        _ => {}
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
    /// listener, the breakpoints, the files and the front end's settings
    /// carry over.
    fn adopt(&mut self, mut new: Session) {
        // The replay holds the files already.
        new.monitor.listener = std::mem::replace(&mut self.monitor.listener, Box::new(|_| {}));
        new.monitor.bps = std::mem::take(&mut self.monitor.bps);
        let now = new.host.device_mut().now().0;
        for b in new.monitor.bps.iter_mut() {
            if let BreakKind::Cycle(c) = b.kind
                && c > now
            {
                b.done = false;
            }
        }
        new.history.factory = self.history.factory.take();
        new.history.replays = self.history.replays;
        new.history.last_replay = self.history.last_replay;
        new.history.last_command = self.history.last_command;
        new.history.detect_races = self.history.detect_races;
        new.stops = self.stops;
        // The races found up to the point replayed to have been seen.
        new.monitor.races_seen = new.host.device_mut().races_found();
        *self = new;
    }
}
