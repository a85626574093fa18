//! A Debug Adapter Protocol server (docs/user-guide.md §12 "VS Code and other
//! DAP clients"): a trace debugged as source code. Messages are JSON with a
//! `Content-Length` header ([`read_message`], [`write_message`]); the
//! [`Server`] answers each request with its response and the events it
//! causes. The front end (`neuron-sim dap`) reads standard input, writes
//! standard output and builds the session for `launch` ([`Launcher`]).
//!
//! The trace is the program: one thread, one frame (the statement next or
//! under way, at its trace line), breakpoints on trace lines, an `engine
//! faults` exception filter (`break fault`) and a `races` one (`break
//! race`, which turns the race detector on). `next` runs one statement,
//! `stepIn` until the device records an event, `continue` to the next
//! breakpoint; `stepBack` and `reverseContinue` go back (reverse execution).
//! Scopes: the queues (registers and ring slots as children), the
//! registers away from reset (fields as children), the semaphores and the
//! memory of the rings (`readMemory` reads any address). `evaluate` runs
//! any console command that does not step (`x hbm0+0x100 64`, `ring
//! eng0.m2s.q0`, a poke); stepping commands are refused before they run.
//! At the end of the trace the session stops once more (`end of trace`)
//! so that the final state can be read; the next `continue` ends it
//! (`exited` with the run's exit status, then `terminated`).

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

use crate::breakpoint::BreakKind;
use crate::console::Console;
use crate::session::{Listener, Session, Stop, StopKind};
use crate::view;

/// The `launch` request's arguments the server reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchArgs {
    /// The trace file (`program`).
    pub program: String,
    /// `timing`: a timing file, as `run --timing`.
    pub timing: Option<String>,
    /// `timingOnly`: as `run --timing-only`.
    pub timing_only: bool,
    /// `socMap`: as `run --soc-map`.
    pub soc_map: Option<String>,
    /// `csrMaps`: as `run --csr-maps`.
    pub csr_maps: Option<String>,
    /// `stopOnEntry`: stop before the first statement.
    pub stop_on_entry: bool,
}

impl LaunchArgs {
    /// Reads the arguments of a `launch` request.
    ///
    /// # Errors
    ///
    /// No `program`, or an argument of the wrong type.
    pub fn from_json(args: &Value) -> Result<LaunchArgs, String> {
        let text = |k: &str| -> Result<Option<String>, String> {
            match args.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("launch: `{k}` must be a string")),
            }
        };
        let flag = |k: &str| -> Result<bool, String> {
            match args.get(k) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(format!("launch: `{k}` must be true or false")),
            }
        };
        Ok(LaunchArgs {
            program: text("program")?.ok_or("launch: `program` (the trace file) is missing")?,
            timing: text("timing")?,
            timing_only: flag("timingOnly")?,
            soc_map: text("socMap")?,
            csr_maps: text("csrMaps")?,
            stop_on_entry: flag("stopOnEntry")?,
        })
    }
}

/// Builds the session `launch` asks for; the listener receives the
/// statement records (shown as `output` events).
pub type Launcher = Box<dyn FnMut(&LaunchArgs, Listener) -> Result<Session, String>>;

/// The largest message body [`read_message`] accepts: a client's requests
/// are small JSON objects; a larger `Content-Length` is refused before
/// anything is allocated for it.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Reads one message: headers up to a blank line, then `Content-Length`
/// bytes of JSON. `None` at the end of input. Header lines are at most
/// `soc::input::MAX_LINE_BYTES` and bodies [`MAX_MESSAGE_BYTES`]: an
/// endless input cannot fill memory.
///
/// # Errors
///
/// A read error, a missing, bad or too large `Content-Length`, a header
/// line past its limit, a body that is not JSON.
pub fn read_message(r: &mut dyn BufRead) -> io::Result<Option<Value>> {
    let mut length: Option<usize> = None;
    let mut any = false;
    loop {
        let mut line = String::new();
        if soc::input::read_line_limited(r, &mut line)? == 0 {
            return if any {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input ended inside a message's headers",
                ))
            } else {
                Ok(None)
            };
        }
        any = true;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad Content-Length `{}`", value.trim()),
                )
            })?);
        }
    }
    let length = length.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a message without Content-Length",
        )
    })?;
    if length > MAX_MESSAGE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "Content-Length {length} is larger than the limit of {} MiB for a message",
                MAX_MESSAGE_BYTES >> 20
            ),
        ));
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not JSON: {e}")))
}

/// Writes one message with its `Content-Length` header.
///
/// # Errors
///
/// A write error.
pub fn write_message(w: &mut dyn Write, message: &Value) -> io::Result<()> {
    let body = message.to_string();
    write!(w, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    w.flush()
}

/// Serves requests from `r` until `disconnect` or the end of input;
/// returns the exit status (the run's once the trace ended, 3 when it was
/// left before, 0 when nothing was launched).
///
/// # Errors
///
/// A read or write error, or a malformed message.
pub fn serve(r: &mut dyn BufRead, w: &mut dyn Write, launcher: Launcher) -> io::Result<u8> {
    let mut server = Server::new(launcher);
    while let Some(request) = read_message(r)? {
        for m in server.handle(&request) {
            write_message(w, &m)?;
        }
        if server.finished() {
            break;
        }
    }
    Ok(server.exit_code())
}

/// What a variables reference stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Queues,
    Registers,
    Semaphores,
    Memory,
    /// A queue: its registers and its ring.
    Queue(String),
    /// A queue's ring slots.
    Ring(String),
    /// A block's registers away from reset.
    Block(String),
    /// A register's fields (block, register).
    Register(String, String),
}

/// The DAP session state (see the module comment).
pub struct Server {
    launcher: Launcher,
    console: Option<Console>,
    log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    seq: i64,
    /// Variables references of the current stop (reference = index + 1).
    nodes: Vec<Node>,
    stop_on_entry: bool,
    program: String,
    /// The breakpoints the client's `setBreakpoints` made.
    line_breaks: Vec<u32>,
    fault_break: Option<u32>,
    /// The `break race` of the `race` exception filter.
    race_break: Option<u32>,
    /// The end-of-trace stop was shown: the next `continue` ends the
    /// session.
    end_stopped: bool,
    /// `exited` and `terminated` were sent: nothing runs any more.
    terminated: bool,
    finished: bool,
    exit_code: u8,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("launched", &self.console.is_some())
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// The one thread: the trace.
const THREAD: i64 = 1;

impl Server {
    /// A server that builds its session with `launcher`.
    pub fn new(launcher: Launcher) -> Server {
        Server {
            launcher,
            console: None,
            log: std::rc::Rc::default(),
            seq: 0,
            nodes: Vec::new(),
            stop_on_entry: false,
            program: String::new(),
            line_breaks: Vec::new(),
            fault_break: None,
            race_break: None,
            end_stopped: false,
            terminated: false,
            finished: false,
            exit_code: 0,
        }
    }

    /// Whether the client disconnected.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The exit status so far (see [`serve`]).
    pub fn exit_code(&mut self) -> u8 {
        let Some(c) = self.console.as_mut() else {
            return self.exit_code;
        };
        if c.session().ended() {
            c.exit_code()
        } else {
            crate::EXIT_QUIT_EARLY
        }
    }

    fn next_seq(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    fn event(&mut self, event: &str, body: Value) -> Value {
        json!({"seq": self.next_seq(), "type": "event", "event": event, "body": body})
    }

    fn response(&mut self, req: &Value, body: Result<Value, String>) -> Value {
        let command = req.get("command").cloned().unwrap_or(Value::Null);
        let request_seq = req.get("seq").cloned().unwrap_or(Value::Null);
        let seq = self.next_seq();
        match body {
            Ok(body) => json!({"seq": seq, "type": "response", "request_seq": request_seq,
                "success": true, "command": command, "body": body}),
            Err(message) => json!({"seq": seq, "type": "response", "request_seq": request_seq,
                "success": false, "command": command, "message": message,
                "body": {"error": {"id": 1, "format": message}}}),
        }
    }

    /// Answers one request: its response, then the events it caused.
    pub fn handle(&mut self, req: &Value) -> Vec<Value> {
        let command = req.get("command").and_then(Value::as_str).unwrap_or("");
        let args = req.get("arguments").cloned().unwrap_or(Value::Null);
        let mut after = Vec::new();
        let body = match command {
            "initialize" => Ok(capabilities()),
            "launch" => {
                // Breakpoints are set once a trace is there: `initialized`
                // invites them after the launch.
                let r = self.launch(&args);
                if r.is_ok() {
                    after.push(("initialized", json!({})));
                }
                r
            }
            "setBreakpoints" => self.set_breakpoints(&args),
            "setExceptionBreakpoints" => self.set_exception_breakpoints(&args),
            "configurationDone" => Ok(json!({})),
            "threads" => Ok(json!({"threads": [{"id": THREAD, "name": "trace"}]})),
            "stackTrace" => self.stack_trace(),
            "scopes" => Ok(self.scopes()),
            "variables" => self.variables(&args),
            "evaluate" => self.evaluate(&args),
            "readMemory" => self.read_memory(&args),
            "continue" | "next" | "stepIn" | "stepBack" | "reverseContinue" | "pause"
                if self.console.is_none() =>
            {
                Err(format!("`{command}`: no trace is launched"))
            }
            "continue" | "next" | "stepIn" | "stepBack" | "reverseContinue" | "pause"
                if self.terminated =>
            {
                Err(format!("`{command}`: the session has ended"))
            }
            "continue" => Ok(json!({"allThreadsContinued": true})),
            "next" | "stepIn" | "stepBack" | "reverseContinue" | "pause" => Ok(json!({})),
            "disconnect" | "terminate" => {
                self.finished = command == "disconnect";
                Ok(json!({}))
            }
            other => Err(format!("`{other}` is not supported")),
        };
        let ok = body.is_ok();
        let mut out = vec![self.response(req, body)];
        for (e, b) in after {
            let m = self.event(e, b);
            out.push(m);
        }
        if !ok || self.console.is_none() {
            return out;
        }
        let moved = match command {
            "configurationDone" if self.stop_on_entry => {
                // The entry stop is a stop at the first statement: a
                // breakpoint there fires the next time a step arrives.
                if let Ok(c) = self.console() {
                    c.session().weigh_here();
                }
                let m = self.stopped("entry", "stopped before the first statement", &[]);
                out.push(m);
                None
            }
            "configurationDone" | "continue" => Some("continue"),
            "next" => Some("step"),
            "stepIn" => Some("stepi"),
            "stepBack" => Some("reverse-step"),
            "reverseContinue" => Some("reverse-continue"),
            "terminate" => {
                self.finished_events(&mut out);
                None
            }
            _ => None,
        };
        if let Some(line) = moved {
            self.run(line, &mut out);
        }
        out
    }

    fn launch(&mut self, args: &Value) -> Result<Value, String> {
        if self.console.is_some() {
            return Err("launch: a trace is running already".into());
        }
        let a = LaunchArgs::from_json(args)?;
        let log = std::rc::Rc::clone(&self.log);
        let name = a.program.clone();
        let listener: Listener = Box::new(move |record| {
            log.borrow_mut()
                .push(soc::exec::step_line(&name, record) + "\n");
        });
        let session = (self.launcher)(&a, listener)?;
        self.program = a.program.clone();
        self.stop_on_entry = a.stop_on_entry;
        self.console = Some(Console::new(session));
        Ok(json!({}))
    }

    fn console(&mut self) -> Result<&mut Console, String> {
        self.console
            .as_mut()
            .ok_or_else(|| "no trace is launched".to_string())
    }

    /// Whether a DAP `source` is the launched trace: the same file when
    /// both paths resolve (canonicalized), otherwise the same file name
    /// (the path's last part, or the source's `name`).
    fn is_program(&self, source: &Value) -> bool {
        let program = std::path::Path::new(&self.program);
        let path = source.get("path").and_then(Value::as_str);
        if let Some(p) = path
            && let (Ok(a), Ok(b)) = (std::fs::canonicalize(p), std::fs::canonicalize(program))
        {
            return a == b;
        }
        let name = path
            .and_then(|p| std::path::Path::new(p).file_name())
            .or_else(|| {
                source
                    .get("name")
                    .and_then(Value::as_str)
                    .map(std::ffi::OsStr::new)
            });
        name.is_some_and(|n| Some(n) == program.file_name())
    }

    /// `setBreakpoints`: replaces the line breakpoints of one source (DAP).
    /// Only the launched trace has statements: for any other source each
    /// breakpoint is answered not verified, and the trace's stay as they
    /// are (docs/user-guide.md §12 "VS Code and other DAP clients").
    fn set_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        self.console()?;
        let source = args.get("source").ok_or("setBreakpoints: no `source`")?;
        let wanted: Vec<(u64, Option<String>)> = args
            .get("breakpoints")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|b| {
                        let line = b.get("line")?.as_u64()?;
                        let cond = b
                            .get("condition")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        Some((line, cond))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !self.is_program(source) {
            let what = source
                .get("path")
                .or_else(|| source.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("this source");
            let message = format!(
                "{what} is not the trace being debugged ({}): breakpoints go on its lines",
                self.program
            );
            let out: Vec<Value> = wanted
                .iter()
                .map(|(line, _)| json!({"verified": false, "line": line, "message": message}))
                .collect();
            return Ok(json!({"breakpoints": out}));
        }
        let old = std::mem::take(&mut self.line_breaks);
        let console = self.console()?;
        let session = console.session();
        if !old.is_empty() {
            session.breakpoints_mut().delete(&old)?;
        }
        let mut ids = Vec::new();
        let mut out = Vec::new();
        for (line, cond) in wanted {
            // A condition that does not parse is an error and sets no
            // breakpoint, as `condition N …` at the prompt changes nothing
            // (never a breakpoint that stops every time).
            let condition = match cond
                .map(|c| crate::breakpoint::parse_condition(session.device(), &c))
                .transpose()
            {
                Ok(t) => t,
                Err(e) => {
                    out.push(json!({"verified": false, "line": line,
                        "message": format!("condition: {e}; no breakpoint set")}));
                    continue;
                }
            };
            match session.add_break(&format!("line {line}")) {
                Ok((id, note)) => {
                    let at = match session.breakpoints().get(id).map(|b| &b.kind) {
                        Some(BreakKind::Line(l)) => u64::from(*l),
                        _ => line,
                    };
                    if let Some(t) = condition
                        && let Ok(b) = session.breakpoints_mut().get_mut(id)
                    {
                        b.condition = t;
                    }
                    ids.push(id);
                    let mut b = json!({"id": id, "verified": true, "line": at});
                    if let Some(m) = note {
                        b["message"] = json!(m);
                    }
                    out.push(b);
                }
                Err(e) => out.push(json!({"verified": false, "line": line, "message": e})),
            }
        }
        self.line_breaks = ids;
        Ok(json!({"breakpoints": out}))
    }

    fn set_exception_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let wants = |name: &str| {
            args.get("filters")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(name)))
        };
        let (fault, race) = (wants("fault"), wants("race"));
        let old = [self.fault_break.take(), self.race_break.take()];
        let session = self.console()?.session();
        for id in old.into_iter().flatten() {
            session.breakpoints_mut().delete(&[id])?;
        }
        let fault_id = if fault {
            Some(session.add_break("fault")?.0)
        } else {
            None
        };
        // Turns the race detector on: before configurationDone nothing has
        // run (docs/races.md).
        let race_id = race.then(|| session.add_break("race"));
        self.fault_break = fault_id;
        if let Some(r) = race_id {
            self.race_break = Some(r?.0);
        }
        Ok(json!({}))
    }

    /// Runs a console stepping command and reports: the statement log as
    /// output, then `stopped` (or, after the end was shown, the end).
    fn run(&mut self, line: &str, out: &mut Vec<Value>) {
        let Some(console) = self.console.as_mut() else {
            return;
        };
        let ended_before = console.session().ended();
        // At the end-of-trace stop, `continue` ends the session; a step
        // says the trace has ended (below), going back goes back.
        if ended_before && self.end_stopped && line == "continue" {
            self.finished_events(out);
            return;
        }
        let before = console.stops_shown();
        let reply = console.execute(line);
        let moved = console.stops_shown() != before;
        let stop = console.last_stop().cloned();
        self.flush_log(out);
        if !moved {
            // Nothing ran (at the start already, say): the text says why.
            let m = self.event(
                "output",
                json!({"category": "console", "output": reply.text}),
            );
            out.push(m);
            let m = self.stopped("step", reply.text.trim(), &[]);
            out.push(m);
            return;
        }
        let Some(stop) = stop else { return };
        let ended = self.console.as_mut().is_some_and(|c| c.session().ended());
        if stop.kind == StopKind::End || ended {
            self.end_stopped = true;
            let m = self.event(
                "output",
                json!({"category": "console", "output": reply.text}),
            );
            out.push(m);
            let m = self.stopped(
                "end of trace",
                "end of trace: the final state stays for inspection; continue ends the session",
                &[],
            );
            out.push(m);
            return;
        }
        self.end_stopped = false;
        let (reason, text) = reason_of(&stop);
        let ids: Vec<u32> = stop.hits.iter().map(|h| h.id).collect();
        let m = self.stopped(reason, &text, &ids);
        out.push(m);
    }

    fn flush_log(&mut self, out: &mut Vec<Value>) {
        let lines: Vec<String> = std::mem::take(&mut *self.log.borrow_mut());
        if !lines.is_empty() {
            let m = self.event(
                "output",
                json!({"category": "stdout", "output": lines.concat()}),
            );
            out.push(m);
        }
    }

    fn stopped(&mut self, reason: &str, text: &str, ids: &[u32]) -> Value {
        self.nodes.clear();
        let mut body = json!({"reason": reason, "description": text, "threadId": THREAD,
            "allThreadsStopped": true});
        if !ids.is_empty() {
            body["hitBreakpointIds"] = json!(ids);
        }
        if reason == "exception" {
            body["text"] = json!(text);
        }
        self.event("stopped", body)
    }

    fn finished_events(&mut self, out: &mut Vec<Value>) {
        self.terminated = true;
        let code = self.exit_code();
        let m = self.event("exited", json!({"exitCode": code}));
        out.push(m);
        let m = self.event("terminated", json!({}));
        out.push(m);
    }

    fn stack_trace(&mut self) -> Result<Value, String> {
        let program = self.program.clone();
        let session = self.console()?.session();
        let cycle = session.device().now().0;
        let path = std::fs::canonicalize(&program)
            .map(|p| p.display().to_string())
            .unwrap_or(program.clone());
        let name = std::path::Path::new(&program)
            .file_name()
            .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
        let (line, what) = match session.position() {
            Some(p) if p.under_way => (
                p.line,
                format!("{} (under way, cycle {cycle})", p.directive),
            ),
            Some(p) => (p.line, format!("{} (cycle {cycle})", p.directive)),
            None => (
                u32::try_from(session.source_lines()).unwrap_or(0),
                format!("end of trace (cycle {cycle})"),
            ),
        };
        Ok(
            json!({"stackFrames": [{"id": 1, "name": what, "line": line, "column": 1,
            "source": {"name": name, "path": path}}], "totalFrames": 1}),
        )
    }

    fn node(&mut self, n: Node) -> usize {
        if let Some(i) = self.nodes.iter().position(|x| *x == n) {
            return i + 1;
        }
        self.nodes.push(n);
        self.nodes.len()
    }

    fn scopes(&mut self) -> Value {
        let mut scopes = Vec::new();
        for (name, n) in [
            ("Queues", Node::Queues),
            ("Registers (away from reset)", Node::Registers),
            ("Semaphores", Node::Semaphores),
            ("Memory (rings)", Node::Memory),
        ] {
            let r = self.node(n);
            scopes.push(json!({"name": name, "variablesReference": r, "expensive": false}));
        }
        json!({"scopes": scopes})
    }

    fn variables(&mut self, args: &Value) -> Result<Value, String> {
        let r = args
            .get("variablesReference")
            .and_then(Value::as_u64)
            .ok_or("variables: no variablesReference")?;
        let node = usize::try_from(r)
            .ok()
            .and_then(|r| r.checked_sub(1))
            .and_then(|i| self.nodes.get(i).cloned())
            .ok_or_else(|| format!("variables: no reference {r} at this stop"))?;
        let vars = self.children(&node)?;
        Ok(json!({"variables": vars}))
    }

    /// The queue and block regions away from reset, by address.
    fn blocks(&mut self) -> Result<Vec<(String, String)>, String> {
        let device = self.console()?.session().device();
        Ok(device
            .csr_snapshot()
            .blocks
            .into_iter()
            .map(|b| (b.region, b.block))
            .collect())
    }

    fn children(&mut self, node: &Node) -> Result<Vec<Value>, String> {
        let mut vars = Vec::new();
        match node {
            Node::Queues => {
                for (region, block) in self.blocks()? {
                    if block.starts_with("udma_") && block.ends_with("_q") {
                        let value = self.queue_summary(&region)?;
                        let r = self.node(Node::Queue(region.clone()));
                        vars.push(var(&region, &value, r));
                    }
                }
            }
            Node::Registers => {
                for (region, block) in self.blocks()? {
                    let r = self.node(Node::Block(region.clone()));
                    vars.push(var(&region, &block, r));
                }
            }
            Node::Semaphores => {
                for (region, block) in self.blocks()? {
                    if block.contains("sem") {
                        vars.extend(self.register_vars(&region, true)?);
                    }
                }
            }
            Node::Memory => {
                for (region, block) in self.blocks()? {
                    if block.starts_with("udma_") && block.ends_with("_q") {
                        let base = self.ring_base(&region)?;
                        let mut v = var(&format!("{region} ring"), &format!("{base:#x}"), 0);
                        v["memoryReference"] = json!(format!("{base:#x}"));
                        vars.push(v);
                    }
                }
            }
            Node::Queue(region) => {
                let r = self.node(Node::Ring(region.clone()));
                vars.push(var("ring", "slots, flagged", r));
                vars.extend(self.register_vars(region, false)?);
            }
            Node::Ring(region) => {
                let console = self.console()?;
                let stop = console.last_stop().cloned();
                let device = console.session().device();
                // The queue a doorbell stop is about shows the slots it posts.
                let pending = stop
                    .and_then(|s| s.focus(device))
                    .filter(|(q, _)| &q.region == region)
                    .map_or(0, |(_, inc)| inc);
                let text = match soc::exec::queue_target(device, region) {
                    Some(q) => view::show_ring(device, &q, pending),
                    None => format!("{region} is not a queue\n"),
                };
                for (i, line) in text.lines().enumerate() {
                    vars.push(var(&format!("{i}"), line.trim(), 0));
                }
            }
            Node::Block(region) => vars.extend(self.register_vars(region, true)?),
            Node::Register(region, name) => {
                let device = self.console()?.session().device();
                let rows = view::registers(device, region, false).unwrap_or_default();
                if let Some(row) = rows.iter().find(|r| &r.name == name) {
                    for (f, bits, v) in &row.fields {
                        let mut x = var(f, &format!("{v:#x}"), 0);
                        x["type"] = json!(format!("bits [{bits}]"));
                        vars.push(x);
                    }
                }
            }
        }
        Ok(vars)
    }

    fn register_vars(&mut self, region: &str, changed: bool) -> Result<Vec<Value>, String> {
        let device = self.console()?.session().device();
        let rows = view::registers(device, region, changed).unwrap_or_default();
        let mut vars = Vec::new();
        for row in rows {
            let r = if row.fields.is_empty() {
                0
            } else {
                self.node(Node::Register(region.to_string(), row.name.clone()))
            };
            let mut v = var(&row.name, &format!("{:#010x}", row.value), r);
            v["evaluateName"] = json!(format!("{region}.{}", row.name.to_ascii_lowercase()));
            vars.push(v);
        }
        Ok(vars)
    }

    fn queue_summary(&mut self, region: &str) -> Result<String, String> {
        let device = self.console()?.session().device();
        let text = match soc::exec::queue_target(device, region) {
            Some(q) => view::show_ring(device, &q, 0),
            None => String::new(),
        };
        Ok(text
            .lines()
            .next()
            .and_then(|l| l.split_once(": "))
            .map_or(text.clone(), |(_, rest)| rest.to_string()))
    }

    fn ring_base(&mut self, region: &str) -> Result<u64, String> {
        let device = self.console()?.session().device();
        let rows = view::registers(device, region, false).unwrap_or_default();
        // TDRBP_LOW/HIGH (M2S) or RDRBP_LOW/HIGH (S2M).
        let get = |suffix: &str| {
            rows.iter()
                .find(|r| r.name.len() == suffix.len() + 1 && r.name.ends_with(suffix))
                .map_or(0, |r| u64::from(r.value))
        };
        Ok((get("DRBP_HIGH") << 32) | get("DRBP_LOW"))
    }

    fn evaluate(&mut self, args: &Value) -> Result<Value, String> {
        let expr = args
            .get("expression")
            .and_then(Value::as_str)
            .ok_or("evaluate: no expression")?
            .to_string();
        let console = self.console()?;
        // A value (register, field, semaphore, memory word) reads as one;
        // anything else is a console command.
        let device = console.session().device();
        if let Ok(v) = crate::place::Value::parse(device, &expr) {
            let text = v
                .read(device)
                .map_or("(unreadable)".into(), |x| format!("{x:#x}"));
            return Ok(json!({"result": text, "variablesReference": 0}));
        }
        // Stepping commands are refused before they run: the client's
        // buttons step, and its view of the stop stays true.
        let reply = console.execute_still(
            &expr,
            "evaluate runs views and pokes; step with the debugger's buttons",
        )?;
        Ok(json!({"result": reply.text.trim_end(), "variablesReference": 0}))
    }

    fn read_memory(&mut self, args: &Value) -> Result<Value, String> {
        let reference = args
            .get("memoryReference")
            .and_then(Value::as_str)
            .ok_or("readMemory: no memoryReference")?;
        let base = crate::place::parse_u64(reference)?;
        let offset = args.get("offset").and_then(Value::as_i64).unwrap_or(0);
        let count = args.get("count").and_then(Value::as_u64).unwrap_or(0);
        let count = usize::try_from(count.min(view::MAX_MEM_BYTES)).unwrap_or(0);
        let addr = base.wrapping_add_signed(offset);
        let device = self.console()?.session().device();
        let mut buf = vec![0u8; count];
        match device.read_bytes(addr, &mut buf) {
            Ok(()) => Ok(json!({"address": format!("{addr:#x}"), "data": base64(&buf)})),
            Err(_) => Ok(json!({"address": format!("{addr:#x}"), "unreadableBytes": count})),
        }
    }
}

/// What the server can do (the `initialize` response).
fn capabilities() -> Value {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsStepBack": true,
        "supportsConditionalBreakpoints": true,
        "supportsEvaluateForHovers": true,
        "supportsReadMemoryRequest": true,
        "supportsTerminateRequest": true,
        "exceptionBreakpointFilters": [
            {"filter": "fault", "label": "Engine faults", "default": true,
             "description": "Stop when an engine raises an error cause bit (break fault)"},
            {"filter": "race", "label": "Races", "default": false,
             "description": "Turn the race detector on and stop at each new race: two unordered accesses to overlapping bytes, at least one a write (break race; docs/races.md)"}
        ]
    })
}

fn var(name: &str, value: &str, reference: usize) -> Value {
    json!({"name": name, "value": value, "variablesReference": reference})
}

/// The DAP reason of a stop, and its description.
fn reason_of(stop: &Stop) -> (&'static str, String) {
    if let Some(h) = stop.hits.first() {
        let fault = h.spec.starts_with("break fault")
            || h.spec.starts_with("break ring-id")
            || h.spec == "break race";
        let text = format!("breakpoint {} ({}): {}", h.id, h.spec, h.why);
        return (if fault { "exception" } else { "breakpoint" }, text);
    }
    let text = match &stop.kind {
        StopKind::Doorbell { queue, increment } => {
            format!("doorbell {} += {increment}", queue.region)
        }
        StopKind::Statement { line } => format!("stepped line {line}"),
        StopKind::Cycle { goal } => format!("cycle {goal}"),
        StopKind::Events(e) => format!("{} device events", e.len()),
        _ => format!("stopped at cycle {}", stop.cycle),
    };
    ("step", text)
}

/// Standard base64 with padding (the `readMemory` data).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn messages_round_trip_with_their_length() {
        let mut buf = Vec::new();
        write_message(
            &mut buf,
            &json!({"seq": 1, "type": "request", "command": "threads"}),
        )
        .unwrap();
        write_message(&mut buf, &json!({"x": "é"})).unwrap();
        let mut r = io::Cursor::new(buf);
        assert_eq!(read_message(&mut r).unwrap().unwrap()["command"], "threads");
        assert_eq!(read_message(&mut r).unwrap().unwrap()["x"], "é");
        assert!(read_message(&mut r).unwrap().is_none());
        let mut bad = io::Cursor::new(b"Content-Length: x\r\n\r\n{}".to_vec());
        assert!(read_message(&mut bad).is_err());
    }

    #[test]
    fn an_endless_header_or_a_huge_length_is_refused_without_filling_memory() {
        // A huge Content-Length once allocated its body before reading it.
        let mut huge = io::Cursor::new(b"Content-Length: 99999999999999\r\n\r\n{}".to_vec());
        let e = read_message(&mut huge).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        assert!(e.to_string().contains("99999999999999"), "{e}");
        // A header line that never ends (/dev/zero) once grew without end.
        let mut endless = io::BufReader::new(io::repeat(b'C'));
        let e = read_message(&mut endless).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
    }
}
