//! The output of `neuron-sim run` as the run goes (docs/user-guide.md
//! §Output): statement lines are written as each statement ends, device
//! events reach their consumers as the device produces them, and nothing
//! grows with the number of packets in memory. A statement's event lines
//! (or JSON objects) wait for its line in a spill buffer that moves to an
//! anonymous temporary file past a few MiB; the timeline (`--perfetto`) is
//! the only consumer that keeps events, because it sorts them.
//!
//! SIGINT and SIGTERM set a flag the run polls after every event: the run
//! stops at the next event, the report of what ran is written, and the
//! process exits with 128 + the signal number. A second signal ends the
//! process at once.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use soc::exec::{Control, ExecHooks, Executor, Linked, QUIT_MARK, StepRecord};
use soc::{Device, DeviceEvent};
use trace_format::Statement;

mod spill;
use spill::Spill;

/// How the run is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Statement lines, their event lines, then the summary.
    Text,
    /// One JSON document at the end (`--json`), its `steps` streamed from
    /// disk.
    Json,
}

/// How much the text output shows (docs/user-guide.md §Output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// `-q`: failed and erroneous statements, then the summary.
    Quiet,
    /// Every statement's line, then the summary.
    Normal,
    /// `-v`: also every device event under its statement.
    Verbose,
}

/// The consumer of a run's statements and events.
pub(crate) struct RunOutput {
    format: Format,
    level: Level,
    trace: String,
    out: Box<dyn Write + Send>,
    /// Colour of the text output (`--color`, docs/user-guide.md §Colour).
    paint: crate::color::Paint,
    /// The current statement's event lines (text) or objects (JSON).
    events: Spill,
    n_events: usize,
    /// JSON: the finished step objects.
    steps: Spill,
    n_steps: usize,
    /// `--perfetto`: every event, for the timeline.
    timeline: Option<Vec<DeviceEvent>>,
    /// The signal that interrupted the run, if one did.
    interrupt: Arc<AtomicUsize>,
    /// The JSON writer of events, reused.
    json: crate::sorted_json::SortedJson,
    /// `--events-limit`: events shown in all, at most.
    events_limit: u64,
    /// Events shown so far.
    events_shown: u64,
    /// Events of the running statement left out by the limit.
    events_omitted: u64,
    /// Events left out in all.
    pub(crate) events_omitted_total: u64,
}

/// `run --events-limit`'s default: ten million events (about 2.5 GB of
/// JSON, 1 GB of `-v` lines), far more than any reader takes in.
pub(crate) const DEFAULT_EVENTS_LIMIT: u64 = 10_000_000;

impl RunOutput {
    /// `to_stderr`: the report goes to standard error (an output file of
    /// the run is `-`, standard output).
    pub(crate) fn new(
        format: Format,
        level: Level,
        trace: String,
        keep_timeline: bool,
        interrupt: Arc<AtomicUsize>,
        to_stderr: bool,
        events_limit: u64,
    ) -> Self {
        // A reader that stops early (`| head`) is not an error: what it
        // did not read is dropped, the run finishes (docs/user-guide.md
        // §Standard input and output).
        use crate::outputs::DropWhenClosed;
        let (out, paint): (Box<dyn Write + Send>, _) = if to_stderr {
            (
                Box::new(io::BufWriter::new(DropWhenClosed::new(io::stderr()))),
                crate::color::Paint::for_stderr(),
            )
        } else {
            (
                Box::new(io::BufWriter::new(DropWhenClosed::new(io::stdout()))),
                crate::color::Paint::for_stdout(),
            )
        };
        RunOutput {
            format,
            level,
            trace,
            out,
            paint,
            events: Spill::default(),
            n_events: 0,
            steps: Spill::default(),
            n_steps: 0,
            timeline: keep_timeline.then(Vec::new),
            interrupt,
            json: crate::sorted_json::SortedJson::default(),
            events_limit,
            events_shown: 0,
            events_omitted: 0,
            events_omitted_total: 0,
        }
    }

    /// Events of the running statement, in the device's order.
    fn events(&mut self, events: Vec<DeviceEvent>) {
        let shown = self.format == Format::Json || self.level == Level::Verbose;
        if !shown {
            if let Some(t) = self.timeline.as_mut() {
                t.extend(events);
            }
            return;
        }
        // Straight into the spill buffer's open chunk (`settle` seals it
        // when full and moves it on).
        for e in &events {
            if self.events_shown >= self.events_limit {
                self.events_omitted += 1;
                self.events_omitted_total += 1;
                continue;
            }
            self.events_shown += 1;
            let text = &mut self.events.open;
            match self.format {
                Format::Text => {
                    let line = soc::exec::event_text(e);
                    if self.paint.is_on() {
                        let line = format!("    {line}\n");
                        text.extend_from_slice(self.paint.lines(&self.trace, &line).as_bytes());
                    } else {
                        // `soc::exec::event_line`, without its copy.
                        text.extend_from_slice(b"    ");
                        text.extend_from_slice(line.as_bytes());
                        text.push(b'\n');
                    }
                }
                Format::Json => {
                    text.extend_from_slice(if self.n_events == 0 { b"\n" } else { b",\n" });
                    text.extend_from_slice(b"        ");
                    // The bytes of the report's JSON, which goes through a
                    // Value: keys in sorted order.
                    self.json.write(text, e, 4);
                }
            }
            self.n_events += 1;
            check(self.events.settle());
        }
        if let Some(t) = self.timeline.as_mut() {
            t.extend(events);
        }
    }

    /// A statement finished.
    fn statement(&mut self, record: &StepRecord) {
        let r = match self.format {
            Format::Text
                if self.level == Level::Quiet
                    && record.status == soc::exec::Status::Ok
                    && record.text != QUIT_MARK =>
            {
                Ok(())
            }
            Format::Text => {
                let line = if record.text == QUIT_MARK {
                    format!(
                        "{}:{}: interrupted by {} at cycle {}\n",
                        self.trace,
                        record.line,
                        signal_name(self.interrupt.load(Ordering::Relaxed)),
                        record.cycle
                    )
                } else {
                    soc::exec::step_line(&self.trace, record)
                };
                let line = self.paint.lines(&self.trace, &line);
                let omitted = match self.events_omitted {
                    0 => String::new(),
                    n => format!(
                        "    … {n} more events not shown (--events-limit {})\n",
                        self.events_limit
                    ),
                };
                self.out
                    .write_all(line.as_bytes())
                    .and_then(|()| self.events.drain_to(&mut self.out))
                    .and_then(|()| self.out.write_all(omitted.as_bytes()))
                    .and_then(|()| self.out.flush())
            }
            // Not `ok` with the internal quit mark: what the text says.
            Format::Json if record.text == QUIT_MARK => {
                let interrupted = StepRecord {
                    text: format!(
                        "interrupted by {} at cycle {}",
                        signal_name(self.interrupt.load(Ordering::Relaxed)),
                        record.cycle
                    ),
                    status: soc::exec::Status::Interrupted,
                    events_omitted: self.events_omitted,
                    ..record.clone()
                };
                self.json_step(&interrupted)
            }
            Format::Json if self.events_omitted > 0 => {
                let step = StepRecord {
                    events_omitted: self.events_omitted,
                    ..record.clone()
                };
                self.json_step(&step)
            }
            Format::Json => self.json_step(record),
        };
        self.n_events = 0;
        self.events_omitted = 0;
        check(r);
    }

    /// The statement of `record` (status [`soc::exec::Status::NotRun`]) did
    /// not run: the run was interrupted first. `--json` lists it as a step
    /// too (docs/user-guide.md §3).
    fn not_run(&mut self, mut record: StepRecord) {
        record.text = format!(
            "not run: interrupted by {} at cycle {}",
            signal_name(self.interrupt.load(Ordering::Relaxed)),
            record.cycle
        );
        let r = match self.format {
            Format::Text => {
                let text = format!("{}:{}: {}\n", self.trace, record.line, record.text);
                self.out
                    .write_all(text.as_bytes())
                    .and_then(|()| self.out.flush())
            }
            Format::Json => self.json_step(&record),
        };
        check(r);
    }

    /// The step object, as `serde_json::to_string_pretty` would write it
    /// inside the report (level 2), its `events` from the spill buffer.
    fn json_step(&mut self, record: &StepRecord) -> io::Result<()> {
        let mut v = serde_json::to_value(record).map_err(io::Error::other)?;
        // `events` is left out when empty (as the report serializes it);
        // otherwise it goes where the map puts the key.
        if self.n_events > 0
            && let serde_json::Value::Object(map) = &mut v
        {
            map.insert("events".into(), serde_json::Value::Null);
        }
        let mut head = String::from(if self.n_steps == 0 { "\n" } else { ",\n" });
        head.push_str("    {");
        let mut tail = String::new();
        let mut before = true;
        if let serde_json::Value::Object(map) = &v {
            for (i, (k, val)) in map.iter().enumerate() {
                let part = if before { &mut head } else { &mut tail };
                part.push_str(if i == 0 { "\n      " } else { ",\n      " });
                part.push_str(&pretty(k));
                part.push_str(": ");
                if k == "events" {
                    before = false;
                } else {
                    part.push_str(&indent(&pretty(val), 3));
                }
            }
        }
        tail.push_str("\n    }");
        self.steps.push(head.as_bytes())?;
        if !before {
            self.steps.push(b"[")?;
            // The events' chunks move into the steps (no copy).
            self.steps.append(&mut self.events)?;
            self.steps.push(b"\n      ]")?;
        }
        self.steps.push(tail.as_bytes())?;
        self.n_steps += 1;
        Ok(())
    }

    /// The events a timeline needs (empty without `--perfetto`).
    pub(crate) fn take_timeline(&mut self) -> Vec<DeviceEvent> {
        self.timeline.take().unwrap_or_default()
    }

    /// Text: everything after the statement lines.
    pub(crate) fn finish_text(&mut self, tail: &str) {
        let tail = self.paint.lines(&self.trace, tail);
        let r = self
            .out
            .write_all(tail.as_bytes())
            .and_then(|()| self.out.flush());
        check(r);
    }

    /// JSON: the whole report, `report` being its value without steps; its
    /// `steps` come from the spill buffer. The bytes are those of
    /// `serde_json::to_string_pretty` on the report with its steps.
    pub(crate) fn finish_json(&mut self, report: &serde_json::Value) {
        let r = self.write_json(report);
        check(r);
    }

    fn write_json(&mut self, report: &serde_json::Value) -> io::Result<()> {
        let serde_json::Value::Object(map) = report else {
            return writeln!(self.out, "{}", pretty(report));
        };
        self.out.write_all(b"{")?;
        for (i, (k, v)) in map.iter().enumerate() {
            let sep = if i == 0 { "\n  " } else { ",\n  " };
            write!(self.out, "{sep}{}: ", pretty(k))?;
            if k == "steps" {
                if self.n_steps == 0 {
                    self.out.write_all(b"[]")?;
                } else {
                    self.out.write_all(b"[")?;
                    self.steps.drain_to(&mut self.out)?;
                    self.out.write_all(b"\n  ]")?;
                }
            } else {
                self.out.write_all(indent(&pretty(v), 1).as_bytes())?;
            }
        }
        self.out
            .write_all(if map.is_empty() { b"}\n" } else { b"\n}\n" })?;
        self.out.flush()
    }
}

fn pretty<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("\"(cannot render: {e})\""))
}

/// `text` as it reads `level` levels deep in a pretty-printed document.
fn indent(text: &str, level: usize) -> String {
    text.replace('\n', &format!("\n{}", "  ".repeat(level)))
}

/// Appends `v` to `out` pretty-printed as it reads `level` levels deep in a
/// pretty-printed document: what `indent(&pretty(v), level)` gives, written
/// in one pass (what `sorted_json` falls back to).
pub(crate) fn pretty_at<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T, level: usize) {
    let start = out.len();
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, Nested::new(level));
    if let Err(e) = v.serialize(&mut ser) {
        out.truncate(start);
        out.extend_from_slice(format!("\"(cannot render: {e})\"").as_bytes());
    }
}

/// serde_json's pretty layout (two spaces a level) starting `base` levels
/// deep.
struct Nested {
    level: usize,
    has_value: bool,
}

impl Nested {
    fn new(base: usize) -> Self {
        Nested {
            level: base,
            has_value: false,
        }
    }

    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// An output error ends the process with status 2 (a closed pipe is not
/// one: the output drops what its reader did not read).
fn check(r: io::Result<()>) {
    if let Err(e) = r {
        eprintln!("neuron-sim: cannot write output: {e}");
        std::process::exit(2);
    }
}

/// The run output shared by the device's event sink and the executor's
/// hooks (the device may run on another thread: a mutex, not a cell).
pub(crate) type Shared = Arc<Mutex<RunOutput>>;

/// The event sink to give the device.
pub(crate) fn event_sink(out: &Shared) -> soc::device::EventSink {
    let out = Arc::clone(out);
    Box::new(move |events| {
        if let Ok(mut o) = out.lock() {
            o.events(events);
        }
    })
}

/// The executor hooks of a streamed run: statement records to the output,
/// the interrupt flag, and the progress line.
pub(crate) struct RunHooks {
    out: Shared,
    interrupt: Arc<AtomicUsize>,
    progress: Option<Progress>,
}

/// Events between two looks at the clock for the progress line.
const PROGRESS_EVENTS: u32 = 1 << 14;

/// The progress line: drawn on stderr once a run has lasted a second, only
/// when stderr is a terminal; cleared at the end.
struct Progress {
    started: std::time::Instant,
    events: u32,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn tick(&mut self, device: &Device) {
        self.events += 1;
        if self.events < PROGRESS_EVENTS {
            return;
        }
        self.events = 0;
        let elapsed = self.started.elapsed();
        if elapsed < std::time::Duration::from_secs(1) {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            );
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        let now = device.now().0;
        let events = device.events_processed();
        bar.set_message(format!(
            "cycle {now} ({:.1} µs simulated), {events} events, {:.0} events per host second",
            device.timing().ns(now) / 1000.0,
            events as f64 / elapsed.as_secs_f64().max(1e-9)
        ));
        bar.tick();
    }
}

impl RunHooks {
    /// Hooks for a run; `progress`: draw the progress line on a terminal.
    pub(crate) fn new(out: Shared, interrupt: Arc<AtomicUsize>, progress: bool) -> Self {
        use std::io::IsTerminal;
        RunHooks {
            out,
            interrupt,
            progress: (progress && io::stderr().is_terminal()).then(|| Progress {
                started: std::time::Instant::now(),
                events: 0,
                bar: None,
            }),
        }
    }

    /// Clears the progress line.
    pub(crate) fn finish(&mut self) {
        if let Some(b) = self.progress.as_mut().and_then(|p| p.bar.take()) {
            b.finish_and_clear();
        }
    }

    fn control(&self) -> Control {
        if self.interrupt.load(Ordering::Relaxed) == 0 {
            Control::Continue
        } else {
            Control::Quit
        }
    }
}

impl ExecHooks for RunHooks {
    fn before(
        &mut self,
        _index: usize,
        stmt: &Statement,
        linked: &Linked,
        device: &mut Device,
        _executor: &Executor,
    ) -> Control {
        let c = self.control();
        if c == Control::Quit
            && let Ok(mut o) = self.out.lock()
        {
            o.not_run(StepRecord {
                line: stmt.span.line,
                directive: stmt.kind.directive(),
                address: soc_map::Hex(linked.addr()),
                cycle: device.now().0,
                text: String::new(),
                status: soc::exec::Status::NotRun,
                events: Vec::new(),
                events_omitted: 0,
                read_digest: None,
            });
        }
        c
    }

    fn during_run(&mut self, device: &mut Device) -> Control {
        if let Some(p) = self.progress.as_mut() {
            p.tick(device);
        }
        self.control()
    }

    fn statement(&mut self, record: &StepRecord) {
        // The line goes above the progress line, not through it.
        if let Some(b) = self.progress.as_ref().and_then(|p| p.bar.as_ref()) {
            b.suspend(|| {
                if let Ok(mut o) = self.out.lock() {
                    o.statement(record);
                }
            });
            return;
        }
        if let Ok(mut o) = self.out.lock() {
            o.statement(record);
        }
    }
}

/// Installs SIGINT and SIGTERM handlers: the first sets the returned flag
/// to the signal number, a second ends the process at once with 128 + it.
pub(crate) fn install_interrupt() -> Arc<AtomicUsize> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let which = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // Registration order is the order the handlers run in: the
        // conditional exit sees the flag of an earlier signal only.
        let code = 128 + u32::try_from(sig).unwrap_or(0);
        let _ = signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::try_from(code).unwrap_or(130),
            Arc::clone(&seen),
        );
        let _ = signal_hook::flag::register(sig, Arc::clone(&seen));
        let _ = signal_hook::flag::register_usize(
            sig,
            Arc::clone(&which),
            usize::try_from(sig).unwrap_or(0),
        );
    }
    which
}

/// `SIGINT`, `SIGTERM`.
pub(crate) fn signal_name(sig: usize) -> &'static str {
    match i32::try_from(sig) {
        Ok(signal_hook::consts::SIGINT) => "SIGINT",
        Ok(signal_hook::consts::SIGTERM) => "SIGTERM",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indent_matches_nested_pretty_printing() {
        let inner = serde_json::json!({"a": [1, 2], "b": {}, "c": [], "d": [{"e": "x\ny"}]});
        let outer = serde_json::json!({"k": inner});
        let want = serde_json::to_string_pretty(&outer).unwrap();
        let got = format!("{{\n  \"k\": {}\n}}", indent(&pretty(&inner), 1));
        assert_eq!(got, want);
        // The one-pass writer gives the same bytes at any depth.
        for level in 0..5 {
            let mut out = Vec::new();
            pretty_at(&mut out, &inner, level);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                indent(&pretty(&inner), level)
            );
        }
    }
}
