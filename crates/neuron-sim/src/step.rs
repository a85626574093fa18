//! `neuron-sim step`: the doorbell debugger's front end (docs/user-guide.md
//! §12). The engine — sessions, stops, breakpoints, views and the command
//! language — is the `debugger` crate; this module parses the options,
//! reads command lines (a terminal with line editing, or a script whose
//! commands are echoed so the output reads as a transcript) and prints.
//! Exit status: `run`'s once the trace has run to its end, 3
//! (`debugger::EXIT_QUIT_EARLY`) when the session was quit before.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use debugger::{Console, DoorbellFilter, Flow, SessionConfig};

use crate::{Failure, Maps, bad_input, color, input, json_out, perfetto_cmd, record_cmd};

/// The options of `neuron-sim step`.
#[derive(Debug, clap::Args)]
pub(crate) struct StepArgs {
    /// The trace file (`-`: standard input, with the commands from --script).
    trace: PathBuf,
    /// Read debugger commands from FILE instead of the terminal.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// `next` stops only at doorbells of this engine (repeatable).
    #[arg(long = "engine", value_name = "N")]
    engines: Vec<u16>,
    /// `next` stops only at doorbells of this queue index (repeatable).
    #[arg(long = "queue", value_name = "Q")]
    queues: Vec<u8>,
    /// A breakpoint, as the prompt's `break` takes it (repeatable), e.g.
    /// `--break 'doorbell eng0.m2s.q0'`, `--break fault`, `--break 'cycle 5000'`;
    /// `--break race` turns the race detector on (docs/races.md).
    #[arg(long = "break", value_name = "SPEC")]
    breaks: Vec<String>,
    /// A watchpoint, as the prompt's `watch` takes it (repeatable), e.g.
    /// `--watch 'tpb0.sem.read[3] >= 16'`.
    #[arg(long = "watch", value_name = "SPEC")]
    watches: Vec<String>,
    /// Also stop once simulated time reaches this cycle (`--break 'cycle N'`).
    #[arg(long, value_name = "CYCLE")]
    at_cycle: Option<u64>,
    /// Also stop when a value test becomes true (`--watch`), e.g.
    /// `tpb0.sem.read[3]>=16`.
    #[arg(long, value_name = "COND")]
    when: Option<String>,
    /// Do not stop at doorbells at the start: run to the first breakpoint.
    #[arg(long)]
    no_doorbells: bool,
    /// Speak JSON: one command object per line in (`{"command": "next"}`),
    /// one message object per line out (docs/user-guide.md §12).
    #[arg(long)]
    json: bool,
    /// Timing file (JSON), as for `run`.
    #[arg(long, value_name = "FILE")]
    timing: Option<PathBuf>,
    /// Timing-only mode, as for `run`.
    #[arg(long)]
    timing_only: bool,
    /// Log every CSR access to FILE, as for `run`.
    #[arg(long, value_name = "FILE")]
    reg_log: Option<PathBuf>,
    /// Write a VCD waveform to FILE, as for `run`.
    #[arg(long, value_name = "FILE")]
    vcd: Option<PathBuf>,
    /// `--perfetto FILE` and its filters, as for `run`.
    #[command(flatten)]
    perfetto: perfetto_cmd::PerfettoArgs,
    /// Do not read or write the prompt's history file
    /// (`$XDG_STATE_HOME/neuron-sim/history`; `NEURON_SIM_HISTORY` names
    /// another, or `off`).
    #[arg(long)]
    no_history: bool,
    /// Take a checkpoint for reverse execution every N simulator events
    /// (going back replays at most about N events; docs/user-guide.md §12).
    #[arg(long, value_name = "N", default_value_t = debugger::checkpoint::DEFAULT_INTERVAL_EVENTS,
          value_parser = clap::value_parser!(u64).range(1..))]
    checkpoint_interval: u64,
    /// Host memory the checkpoints may hold, in MiB; over it every second
    /// one is dropped and the interval doubles.
    #[arg(long, value_name = "MIB", default_value_t = debugger::checkpoint::DEFAULT_BUDGET_BYTES >> 20)]
    checkpoint_budget: u64,
}

/// Where the debugger's commands come from.
enum Input {
    /// A terminal with line editing, completion and history.
    Editor(Box<Editor>),
    /// Lines from a script or a pipe.
    Lines(Lines),
}

/// Commands a line at a time from a script or a pipe, each line at most
/// `soc::input::MAX_LINE_BYTES`: an endless line (`--script /dev/zero`)
/// ends the commands with an error, kept for the exit status.
struct Lines {
    reader: Box<dyn BufRead>,
    /// The input in messages: `--script FILE` or `<stdin>`.
    name: String,
    /// Why the commands ended before the end of the input.
    error: Option<String>,
}

impl Lines {
    fn new(reader: Box<dyn BufRead>, name: String) -> Self {
        Lines {
            reader,
            name,
            error: None,
        }
    }

    /// The next line (with its line end), or None at the end of the input
    /// or at a line that cannot be read.
    fn next(&mut self) -> Option<String> {
        let mut line = String::new();
        match soc::input::read_line_limited(&mut self.reader, &mut line) {
            Ok(0) => None,
            Ok(_) => Some(line),
            Err(e) => {
                self.error = Some(format!(
                    "cannot read the debugger's commands from {}: {e}; the commands after it were not run",
                    self.name
                ));
                None
            }
        }
    }
}

/// The line editor: completion from the device's names.
type Editor = rustyline::Editor<Completion, rustyline::history::DefaultHistory>;

/// Tab completion of commands, regions, registers and fields
/// (`debugger::complete`).
struct Completion(debugger::complete::Names);

impl rustyline::completion::Completer for Completion {
    type Candidate = String;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.0.complete(line, pos))
    }
}

impl rustyline::hint::Hinter for Completion {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for Completion {}
impl rustyline::validate::Validator for Completion {}
impl rustyline::Helper for Completion {}

/// Lines of history kept in the file.
const HISTORY_LINES: usize = 1000;

/// The history file: `NEURON_SIM_HISTORY` (empty or `off`: none), else
/// `$XDG_STATE_HOME/neuron-sim/history`, else
/// `~/.local/state/neuron-sim/history`; none with `--no-history`.
fn history_path(off: bool) -> Option<PathBuf> {
    if off {
        return None;
    }
    if let Some(p) = std::env::var_os("NEURON_SIM_HISTORY") {
        return (!p.is_empty() && p != "off").then(|| PathBuf::from(p));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(state.join("neuron-sim").join("history"))
}

impl Input {
    /// Standard input: an editor on a terminal (completing `names`,
    /// history in `history`), lines otherwise.
    fn stdin(names: debugger::complete::Names, history: Option<PathBuf>) -> Input {
        if std::io::stdin().is_terminal() {
            let config = rustyline::Config::builder()
                .completion_type(rustyline::CompletionType::List)
                .build();
            if let Ok(mut ed) = Editor::with_config(config) {
                ed.set_helper(Some(Completion(names)));
                if let Some(p) = &history {
                    load_history(&mut ed, p);
                }
                return Input::Editor(Box::new(ed));
            }
        }
        Input::Lines(Lines::new(
            Box::new(std::io::BufReader::new(std::io::stdin())),
            input::STDIN_NAME.to_string(),
        ))
    }

    fn next_line(&mut self, prompt: &str, history: Option<&Path>) -> Option<String> {
        match self {
            Input::Editor(ed) => match ed.readline(prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = ed.add_history_entry(line.as_str());
                        if let Some(p) = history {
                            save_history_line(p, &line);
                        }
                    }
                    Some(line)
                }
                // Ctrl-C quits the session; Ctrl-D (end of input) runs on.
                Err(rustyline::error::ReadlineError::Interrupted) => Some("quit".into()),
                Err(_) => None,
            },
            Input::Lines(r) => {
                let line = r.next()?.trim_end().to_string();
                outln!("{prompt}{line}");
                Some(line)
            }
        }
    }
}

/// The history file's last lines into the editor (a missing file is an
/// empty history).
fn load_history(ed: &mut Editor, path: &Path) {
    let Ok(text) = soc::input::read_text_file(path, soc::input::InputKind::History) else {
        return;
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for l in &lines[lines.len().saturating_sub(HISTORY_LINES)..] {
        let _ = ed.add_history_entry(*l);
    }
    // Keep the file from growing without end.
    if lines.len() > 2 * HISTORY_LINES {
        let mut kept = lines[lines.len() - HISTORY_LINES..].join("\n");
        kept.push('\n');
        let _ = std::fs::write(path, kept);
    }
}

/// Appends one command to the history file (creating its directory);
/// history is a convenience, so a failure is silent.
fn save_history_line(path: &Path, line: &str) {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// Prints the console's text, FAILED/ERROR lines coloured as `run` does.
fn show(name: &str, text: &str) {
    if !text.is_empty() {
        out!("{}", color::Paint::for_stdout().lines(name, text));
    }
}

/// Prints one protocol message as a line of JSON.
fn send(message: debugger::protocol::Message) {
    outln!("{}", json_out::line(&json_out::Doc::new(message)));
}

/// `neuron-sim step TRACE`.
pub(crate) fn cmd_step(maps: &Maps, a: StepArgs) -> Result<u8, Failure> {
    let trace = a.trace.as_path();
    if input::is_stdio(trace) && a.script.is_none() {
        return Err(bad_input(
            "step -: standard input holds the trace, so the debugger's commands must come from --script FILE",
        ));
    }
    let timeline = a.perfetto.plan()?;
    crate::outputs::check_distinct(
        &[
            ("--reg-log", a.reg_log.as_deref()),
            ("--vcd", a.vcd.as_deref()),
            (
                "--perfetto",
                timeline.as_ref().and_then(|t| t.perfetto_path()),
            ),
            (
                "--profile",
                timeline.as_ref().and_then(|t| t.profile_path()),
            ),
        ],
        &[
            ("TRACE", Some(trace)),
            ("--script", a.script.as_deref()),
            ("--timing", a.timing.as_deref()),
            ("--soc-map", maps.soc_map.as_deref()),
        ],
        crate::outputs::Dash::Stdio,
    )?;
    // Output files are checked before anything runs; standard output holds
    // the session.
    for (path, what, option) in [
        (a.reg_log.as_deref(), "register-access log", "--reg-log"),
        (a.vcd.as_deref(), "VCD", "--vcd"),
        (
            timeline.as_ref().and_then(|t| t.perfetto_path()),
            "Perfetto trace",
            "--perfetto",
        ),
        (
            timeline.as_ref().and_then(|t| t.profile_path()),
            "profile",
            "--profile",
        ),
    ] {
        match path {
            Some(p) if input::is_stdio(p) => {
                return Err(bad_input(format!(
                    "{option} -: step prints its session on standard output; give {option} a file"
                )));
            }
            Some(p) => crate::check_writable(p, what)?,
            None => {}
        }
    }
    let source = input::read_text_or_stdin(trace, "trace", input::InputKind::Trace)?;
    let mut dev = maps.device_with_timing(a.timing.as_deref())?;
    dev.set_timing_only(a.timing_only);
    // `--break race` implies --detect-races: the detector watches from the
    // firmware's boot on.
    if a.breaks
        .iter()
        .any(|b| b.split_whitespace().next() == Some("race"))
    {
        dev.detect_races();
    }
    check_filter(&dev, &a.engines, &a.queues)?;
    record_cmd::start(&mut dev, a.reg_log.as_deref(), a.vcd.as_deref())?;
    let name = input::name_of(trace);
    let files = Box::new(host_exec::DirFiles::new(
        trace.parent().map(Path::to_path_buf).unwrap_or_default(),
    ));
    let config = SessionConfig {
        filter: DoorbellFilter {
            engines: a.engines.clone(),
            queues: a.queues.clone(),
        },
        keep_timeline: timeline.is_some(),
        host: host_exec::SessionOptions {
            keep_driver_events: timeline.is_some(),
            ..host_exec::SessionOptions::default()
        },
    };
    let listener_name = name.clone();
    let json = a.json;
    let listener: debugger::Listener = Box::new(move |record| {
        let text = soc::exec::step_line(&listener_name, record);
        if json {
            send(debugger::protocol::log(&text));
        } else {
            show(&listener_name, &text);
        }
    });
    let session =
        debugger::Session::new(dev, &source, &name, files, config, listener).map_err(|errors| {
            let mut msg = errors.join("\n");
            msg.push_str(&format!("\n{} error(s); nothing was run", errors.len()));
            bad_input(msg)
        })?;
    let mut console = Console::new(session);
    // Going back replays the trace on a fresh device built the same way;
    // the register log and the waveform record one pass, so they turn it off.
    if a.reg_log.is_some() || a.vcd.is_some() {
        console
            .session()
            .disable_reverse("--reg-log and --vcd record one pass of the trace");
    } else {
        let (maps, timing, timing_only) = (maps.clone(), a.timing.clone(), a.timing_only);
        console.session().set_device_factory(Box::new(move || {
            let mut dev = maps
                .device_with_timing(timing.as_deref())
                .map_err(|f| f.message)?;
            dev.set_timing_only(timing_only);
            Ok(dev)
        }));
        console
            .session()
            .set_checkpoints(debugger::CheckpointConfig {
                interval_events: a.checkpoint_interval,
                budget_bytes: a.checkpoint_budget.saturating_mul(1 << 20),
            });
    }
    // Breakpoints from the command line: bad names are bad input.
    let mut specs: Vec<(&str, String)> = a.breaks.iter().map(|b| ("--break", b.clone())).collect();
    if let Some(c) = a.at_cycle {
        specs.push(("--at-cycle", format!("cycle {c}")));
    }
    for (option, spec) in specs {
        console
            .session()
            .add_break(&spec)
            .map_err(|e| bad_input(format!("{option} `{spec}`: {e}")))?;
    }
    let mut watches: Vec<(&str, String)> =
        a.watches.iter().map(|w| ("--watch", w.clone())).collect();
    if let Some(w) = &a.when {
        watches.push(("--when", w.clone()));
    }
    for (option, spec) in watches {
        console
            .session()
            .add_watch(&spec)
            .map_err(|e| bad_input(format!("{option} `{spec}`: {e}")))?;
    }
    let mut input = match &a.script {
        Some(p) => {
            let f = std::fs::File::open(p)
                .map_err(|e| bad_input(format!("cannot read --script {}: {e}", p.display())))?;
            Input::Lines(Lines::new(
                Box::new(std::io::BufReader::new(f)),
                format!("--script {}", p.display()),
            ))
        }
        None if a.json => Input::Lines(Lines::new(
            Box::new(std::io::BufReader::new(std::io::stdin())),
            input::STDIN_NAME.to_string(),
        )),
        None => Input::stdin(
            debugger::complete::Names::of(console.session().device()),
            history_path(a.no_history),
        ),
    };
    let history = history_path(a.no_history);
    if let (true, Input::Lines(lines)) = (a.json, &mut input) {
        json_session(&mut console, lines, !a.no_doorbells);
    } else {
        text_session(
            &mut console,
            &mut input,
            &name,
            !a.no_doorbells,
            history.as_deref(),
        );
    }
    let code = console.exit_code();
    let quit_early = console.quit_early();
    let stops = console.session().stops();
    let events = console.session().take_timeline();
    let (report, mut host) = console.finish();
    if quit_early && !a.json {
        let mut tail = report.tail_text_with(true);
        if host.used() {
            tail.push_str(&host.report().to_text());
        }
        tail.push_str(&format!(
            "quit at cycle {} before the end of the trace (exit status {})\n",
            report.summary.cycles,
            debugger::EXIT_QUIT_EARLY
        ));
        show(&name, &tail);
    }
    if !a.json {
        outln!("debugger: {stops} stops");
    }
    let mut output_errors: Vec<String> = Vec::new();
    if let Input::Lines(Lines { error: Some(e), .. }) = &input {
        output_errors.push(e.clone());
    }
    if let Err(e) = record_cmd::finish(host.device_mut(), a.reg_log.as_deref(), a.vcd.as_deref()) {
        output_errors.push(e.message);
    }
    if let Some(plan) = &timeline {
        let map = host.device_mut().map().clone();
        let region = |addr: u64| perfetto_cmd::region_of(&map, addr);
        if let Err(e) = perfetto_cmd::write(plan, &report, &events, host.driver_events(), &region) {
            output_errors.push(e.message);
        }
    }
    if !output_errors.is_empty() {
        return Err(bad_input(format!(
            "{}\n(the session completed; its report is above)",
            output_errors.join("\n")
        )));
    }
    Ok(code)
}

/// The prompt: commands from `input`, the console's text printed.
fn text_session(
    console: &mut Console,
    input: &mut Input,
    name: &str,
    doorbells: bool,
    history: Option<&Path>,
) {
    show(name, &console.start(doorbells));
    loop {
        let Some(line) = input.next_line("(neuron-sim) ", history) else {
            // End of input: the trace runs to its end.
            show(name, &console.run_to_end());
            break;
        };
        let reply = console.execute(&line);
        show(name, &reply.text);
        if reply.flow == Flow::Quit {
            break;
        }
    }
}

/// `step --json`: the protocol (`debugger::protocol`) on standard output,
/// one command object a line from `lines`; the last message is `end`.
fn json_session(console: &mut Console, lines: &mut Lines, doorbells: bool) {
    use debugger::protocol;
    send(protocol::start(console, doorbells));
    loop {
        match lines.next() {
            None => {
                if let Some(m) = protocol::run_to_end(console) {
                    send(m);
                }
                break;
            }
            Some(line) if line.trim().is_empty() => continue,
            Some(line) => {
                let (message, flow) = protocol::handle(console, &line);
                send(message);
                if flow == Flow::Quit {
                    break;
                }
            }
        }
    }
    send(protocol::end(console));
}

/// A filter no doorbell can match would make `next` never stop.
fn check_filter(dev: &soc::Device, engines: &[u16], queues: &[u8]) -> Result<(), Failure> {
    for &e in engines {
        if dev.map().by_name(&format!("eng{e}")).is_none() {
            let map = dev.map();
            let ids: Vec<u64> = map
                .roots
                .iter()
                .filter_map(|&r| map.region(r).name.strip_prefix("eng")?.parse().ok())
                .collect();
            return Err(bad_input(format!(
                "--engine {e}: no such engine (engines: {}..={})",
                ids.iter().min().copied().unwrap_or(0),
                ids.iter().max().copied().unwrap_or(0)
            )));
        }
    }
    for &q in queues {
        if usize::from(q) >= udma::QUEUES {
            return Err(bad_input(format!(
                "--queue {q}: no such queue (queues: 0..{})",
                udma::QUEUES - 1
            )));
        }
    }
    Ok(())
}
