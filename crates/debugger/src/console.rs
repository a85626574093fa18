//! The debugger's command language (docs/user-guide.md §12 "Commands"): a
//! line typed at the prompt or read from a script, run against a
//! [`Session`], answered with text. The CLI reads the lines and prints the
//! answers; everything else happens here.

use soc::exec::RunReport;

use crate::breakpoint::{parse_condition, parse_count, parse_id};
use crate::place::{Place, Value, parse_u32, parse_u64};
use crate::session::{FinishTarget, Granularity, Session, Stop, StopKind};
use crate::view;

/// Exit status of a session quit before the end of the trace
/// (docs/user-guide.md §3): nothing was concluded.
pub const EXIT_QUIT_EARLY: u8 = 3;

/// What the front end does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Prompt,
    /// The user quit: end the session.
    Quit,
}

/// The answer to a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Text to show (may be empty).
    pub text: String,
    /// What next.
    pub flow: Flow,
    /// The command was not understood (unknown, or wrong arguments): the
    /// text says why.
    pub error: bool,
}

impl Reply {
    fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            flow: Flow::Prompt,
            error: false,
        }
    }

    fn error(text: impl Into<String>) -> Reply {
        Reply {
            error: true,
            ..Reply::text(text)
        }
    }
}

/// The prompt's command words, for `help` and "did you mean".
pub const COMMANDS: &[&str] = &[
    "step",
    "next",
    "continue",
    "stepi",
    "cycles",
    "until",
    "finish",
    "reverse-step",
    "reverse-next",
    "reverse-continue",
    "goto",
    "break",
    "watch",
    "info",
    "delete",
    "disable",
    "enable",
    "condition",
    "ignore",
    "ring",
    "regs",
    "mem",
    "where",
    "inflight",
    "list",
    "display",
    "undisplay",
    "events",
    "time",
    "set",
    "help",
    "quit",
];

/// The words (and aliases) of the commands that move the session, forward
/// or back (docs/user-guide.md §12 "Stepping", "Going back"): what a front
/// end that only shows the state refuses ([`Console::execute_still`]).
pub const STEPPING: &[&str] = &[
    "step",
    "s",
    "next",
    "n",
    "continue",
    "c",
    "stepi",
    "si",
    "cycles",
    "until",
    "finish",
    "reverse-step",
    "rs",
    "reverse-next",
    "rn",
    "reverse-continue",
    "rc",
    "goto",
];

/// The command list `help` prints.
pub const HELP: &str = "stepping (each stops early at a breakpoint):
  step | s [N]          run one trace statement (N statements); a run/wait under way runs to its end
  next | n              run to the next doorbell (a trace doorbell before it writes, or one the firmware rang)
  stepi | si            run until the device records an event (doorbell taking effect, prefetch, packet, fault, firmware step)
  cycles N              let N cycles pass
  until C               run until cycle C
  finish [QUEUE|tpbN#K] run until the packet of the queue in focus (or QUEUE) or the word (tpbN#K) completes
  continue | c          run to the next breakpoint, or to the end of the trace
going back (exact: the trace replays from its start on a fresh device):
  reverse-step | rs     back to where the previous statement began
  reverse-next | rn     back to the previous doorbell
  reverse-continue | rc back to the last breakpoint hit before here (the start if none)
  goto C                to cycle C, as `until C` from the start reaches it (pokes made before it included)
  info checkpoints      what going back costs: the checkpoints, their memory, the journal, the last replay
breakpoints:
  break | b SPEC        doorbell [ENGINE|QUEUE|tpbN], line N, cycle N, tpbN#K, fault [ENGINE|QUEUE] [CAUSE],
                        packet [ENGINE|QUEUE], state [ENGINE|QUEUE], ring-id [ENGINE|QUEUE],
                        race (each new race the detector finds; set it before the first step)
  watch VALUE [OP N]    stop when a register, field, semaphore or memory word changes (or OP N becomes true;
                        OP is == != < <= > >=), e.g. watch tpb0.sem.read[3] >= 16
  info break            the breakpoints, their hits, conditions and ignore counts
  delete | disable | enable [N ...]   all when no N is given
  condition N [VALUE OP N]            stop only if it holds (none: always)
  ignore N COUNT        pass over the next COUNT hits
pokes (run now, at the current cycle):
  write32 | write | fill | desc | doorbell | inst | … any trace statement but run and wait
  set VALUE N           write a register, a field (read-modify-write), a semaphore or a memory word
views:
  ring [QUEUE [FROM..TO]]  the ring of QUEUE (default: the queue in focus), slots flagged and decoded
  regs | r [--changed] [REGION | REGISTER | FIELD] [GLOB]
                        registers of a block (e.g. eng0.gen --changed, eng0.gen '*CAUSE*'), one register or field
  mem | x ADDR [LEN]    memory at ADDR (number or trace address, e.g. hbm0+0x1000), repeated lines folded
  where                 the statement next (or under way) and the cycle
  inflight              packets in flight per engine, the scheduler's next pick, firmware words and their waits
  list | l [LINE]       the trace around the statement next (or LINE)
  display [VALUE]       show VALUE (a register, field, semaphore, memory word) at every stop; undisplay [N ...]
  events [N]            the last N device events (default 10)
  time | t              the simulated cycle
  help | h              this list
  quit | q (Ctrl-C)     end the session (before the end of the trace: exit status 3)";

/// A session with its prompt state.
#[derive(Debug)]
pub struct Console {
    session: Session,
    /// The last stop, for views without an argument.
    last: Option<Stop>,
    /// The user quit before the end of the trace.
    quit_early: bool,
    /// The end-of-trace summary was shown.
    end_shown: bool,
    /// `display`: values shown at every stop.
    /// `display` values with their numbers (kept when others go, as a
    /// number is what `undisplay` takes).
    displays: Vec<(u32, Value)>,
    /// The number the next `display` gets.
    next_display: u32,
    /// Stops shown so far (the machine interface tells a command that
    /// moved from one that did not).
    stops_shown: u64,
    /// [`Console::execute_still`] is running a command: nothing may move
    /// the session.
    still: bool,
}

impl Console {
    /// A console over `session` (nothing has run yet).
    pub fn new(session: Session) -> Console {
        Console {
            session,
            last: None,
            quit_early: false,
            end_shown: false,
            displays: Vec::new(),
            next_display: 1,
            stops_shown: 0,
            still: false,
        }
    }

    /// The session.
    pub fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The first stop: the first doorbell (or breakpoint), or with
    /// `doorbells` off the first breakpoint.
    pub fn start(&mut self, doorbells: bool) -> String {
        let g = if doorbells {
            Granularity::Doorbell
        } else {
            Granularity::Continue
        };
        self.go(g)
    }

    /// The commands ran out: the trace runs to its end without stopping.
    pub fn run_to_end(&mut self) -> String {
        if self.session.ended() && self.end_shown {
            return String::new();
        }
        self.go(Granularity::ToEnd)
    }

    /// Runs one command line that must leave the session where it stands:
    /// a view, a breakpoint, a poke (the DAP server's `evaluate`,
    /// docs/user-guide.md §12 "VS Code and other DAP clients"). A stepping
    /// command ([`STEPPING`], whatever its arguments) is refused before
    /// anything runs.
    ///
    /// # Errors
    ///
    /// A stepping command: `refusal`, the session unmoved.
    pub fn execute_still(&mut self, line: &str, refusal: &str) -> Result<Reply, String> {
        let word = line.split_whitespace().next().unwrap_or("");
        if STEPPING.contains(&word) {
            return Err(refusal.to_string());
        }
        // Ending the session is the client's (DAP `disconnect`), not a view.
        if matches!(word, "q" | "quit") {
            return Err(format!(
                "`{word}` ends the session: use the client's stop button (disconnect)"
            ));
        }
        // Whatever the words, no step runs (`go` and `back` refuse).
        self.still = true;
        let reply = self.execute(line);
        self.still = false;
        Ok(reply)
    }

    /// Runs one command line.
    pub fn execute(&mut self, line: &str) -> Reply {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Reply::text("");
        }
        let (word, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, r)| (w, r.trim()));
        let args: Vec<&str> = rest.split_whitespace().collect();
        match (word, args.as_slice()) {
            ("s" | "step", []) => Reply::text(self.go(Granularity::Statement)),
            ("s" | "step", [n]) => match parse_u64(n) {
                Ok(n) if n > 0 => {
                    let mut out = String::new();
                    for _ in 0..n {
                        out.push_str(&self.go(Granularity::Statement));
                        let stopped_early = self
                            .last
                            .as_ref()
                            .is_some_and(|s| !s.hits.is_empty() || s.kind == StopKind::End);
                        if stopped_early {
                            break;
                        }
                    }
                    Reply::text(out)
                }
                _ => Reply::text(format!("step N: `{n}` is not a count above 0\n")),
            },
            ("n" | "next", []) => Reply::text(self.go(Granularity::Doorbell)),
            ("c" | "continue", []) => Reply::text(self.go(Granularity::Continue)),
            ("si" | "stepi", []) => Reply::text(self.go(Granularity::Event)),
            ("cycles", [n]) => match parse_u64(n) {
                Ok(n) => Reply::text(self.go(Granularity::Cycles(n))),
                Err(e) => Reply::text(format!("cycles N: {e}\n")),
            },
            ("until", [c] | ["cycle", c]) => match parse_u64(c) {
                Ok(c) => Reply::text(self.go(Granularity::UntilCycle(c))),
                Err(e) => Reply::text(format!("until C: {e}\n")),
            },
            ("finish", []) => match self.last.as_ref().and_then(Stop::finish_target) {
                Some(t) => Reply::text(self.go(Granularity::Finish(t))),
                None => Reply::text(
                    "no packet or word in focus: finish QUEUE (e.g. finish eng0.m2s.q0) or finish tpbN#K\n",
                ),
            },
            ("finish", [what]) => match self.finish_target(what) {
                Ok(t) => Reply::text(self.go(Granularity::Finish(t))),
                Err(e) => Reply::text(format!("{e}\n")),
            },
            ("b" | "break", _) => match self.session.add_break(rest) {
                Ok((id, note)) => {
                    let spec = self.spec_of(id);
                    let mut out = note.map(|n| format!("{n}\n")).unwrap_or_default();
                    out.push_str(&format!("breakpoint {id}: {spec}\n"));
                    Reply::text(out)
                }
                Err(e) => Reply::error(format!("{e}\n")),
            },
            ("watch", _) => match self.session.add_watch(rest) {
                Ok(id) => {
                    let spec = self.spec_of(id);
                    let now = self
                        .session
                        .breakpoints()
                        .get(id)
                        .and_then(|b| b.last)
                        .map_or("unreadable".to_string(), |v| format!("{v:#x}"));
                    Reply::text(format!("watchpoint {id}: {spec} (now {now})\n"))
                }
                Err(e) => Reply::error(format!("{e}\n")),
            },
            ("info", ["break" | "breakpoints" | "b" | "watch" | "watchpoints"]) => {
                Reply::text(view::breakpoint_table(self.session.breakpoints()))
            }
            ("info", ["checkpoints" | "checkpoint"]) => {
                Reply::text(self.session.checkpoints_text())
            }
            ("info", _) => Reply::text(
                "info break: the breakpoints and watchpoints; info checkpoints: what going back costs\n",
            ),
            ("rs" | "reverse-step", []) => Reply::text(self.back(Session::reverse_step)),
            ("rn" | "reverse-next", []) => Reply::text(self.back(Session::reverse_next)),
            ("rc" | "reverse-continue", []) => {
                let mut out = self.back(Session::reverse_continue);
                if self.last.as_ref().is_some_and(|s| s.hits.is_empty())
                    && out.starts_with("(back)")
                {
                    out.insert_str(0, "no breakpoint fires before here: back to the start\n");
                }
                Reply::text(out)
            }
            ("goto", [c] | ["cycle", c]) => match parse_u64(c) {
                Ok(c) if c > self.session.device().now().0 => {
                    Reply::text(self.go(Granularity::UntilCycle(c)))
                }
                Ok(c) => Reply::text(self.back(|s| s.goto(c))),
                Err(e) => Reply::text(format!("goto C: {e}\n")),
            },
            ("d" | "delete", ids) => Reply::text(match parse_ids(ids) {
                Ok(ids) => match self.session.breakpoints_mut().delete(&ids) {
                    Ok(n) => format!("deleted {n} breakpoint{}\n", plural(n)),
                    Err(e) => format!("{e}\n"),
                },
                Err(e) => format!("{e}\n"),
            }),
            ("disable" | "enable", ids) => {
                let on = word == "enable";
                Reply::text(match parse_ids(ids) {
                    Ok(ids) => match self.session.breakpoints_mut().set_enabled(&ids, on) {
                        Ok(n) => format!("{word}d {n} breakpoint{}\n", plural(n)),
                        Err(e) => format!("{e}\n"),
                    },
                    Err(e) => format!("{e}\n"),
                })
            }
            ("condition", [id, ..]) => Reply::text(self.condition(id, rest)),
            ("ignore", [id, count]) => Reply::text(self.ignore(id, count)),
            ("ring", []) => Reply::text(match self.focus() {
                Some((q, inc)) => view::show_ring(self.session.device(), &q, inc),
                None => "no queue in focus: ring QUEUE (e.g. ring eng0.m2s.q0)\n".into(),
            }),
            ("ring", [name, rest @ ..]) if rest.len() <= 1 => {
                let range = rest.first().map(|r| parse_range(r)).transpose();
                let device = self.session.device();
                Reply::text(match (Place::parse(device, name), range) {
                    (_, Err(e)) => format!("{e}\n"),
                    (Ok(Place::Queue(q)), Ok(None)) => view::show_ring(device, &q, 0),
                    (Ok(Place::Queue(q)), Ok(Some((a, b)))) => {
                        view::show_ring_range(device, &q, a, b)
                    }
                    (Ok(_), _) => {
                        format!("`{name}` is not a queue (engN.m2s.qQ or engN.s2m.qQ)\n")
                    }
                    (Err(e), _) => format!("{e}\n"),
                })
            }
            ("r" | "regs", args) => Reply::text(self.regs(args)),
            ("x" | "mem", [addr]) => Reply::text(view::show_mem(self.session.device(), addr, "64")),
            ("x" | "mem", [addr, len]) => {
                Reply::text(view::show_mem(self.session.device(), addr, len))
            }
            ("where", []) => Reply::text(self.where_text()),
            ("inflight", []) => Reply::text(view::show_inflight(self.session.device())),
            ("list" | "l", []) => Reply::text(self.list(None)),
            ("list" | "l", [n]) => match n.parse::<u32>() {
                Ok(n) => Reply::text(self.list(Some(n))),
                Err(_) => Reply::text(format!("list LINE: `{n}` is not a line number\n")),
            },
            ("display", []) => Reply::text(match self.displays_text() {
                t if t.is_empty() => "no displays: display VALUE\n".to_string(),
                t => t,
            }),
            ("display", _) => Reply::text(match Value::parse(self.session.device(), rest) {
                Ok(v) => {
                    self.displays.push((self.next_display, v));
                    self.next_display += 1;
                    let all = self.displays_text();
                    all.lines()
                        .last()
                        .map(|l| format!("{l}\n"))
                        .unwrap_or_default()
                }
                Err(e) => format!("{e}\n"),
            }),
            ("undisplay", ids) => Reply::text(match parse_ids(ids) {
                Ok(ids) if ids.is_empty() => {
                    let n = self.displays.len();
                    self.displays.clear();
                    format!("removed {n} display{}\n", plural(n))
                }
                Ok(ids) => {
                    let bad = ids
                        .iter()
                        .find(|i| !self.displays.iter().any(|(n, _)| n == *i));
                    if let Some(b) = bad {
                        format!("no display {b}\n")
                    } else {
                        let before = self.displays.len();
                        self.displays.retain(|(n, _)| !ids.contains(n));
                        let n = before - self.displays.len();
                        format!("removed {n} display{}\n", plural(n))
                    }
                }
                Err(e) => format!("{e}\n"),
            }),
            ("events", []) => Reply::text(self.events(10)),
            ("events", [n]) => match parse_u64(n) {
                Ok(n) => Reply::text(self.events(usize::try_from(n).unwrap_or(usize::MAX))),
                Err(e) => Reply::text(format!("events N: {e}\n")),
            },
            ("t" | "time", []) => {
                let device = self.session.device();
                Reply::text(format!(
                    "cycle {} ({:.1} ns)\n",
                    device.now().0,
                    device.timing().ns(device.now().0)
                ))
            }
            ("h" | "help", _) => Reply::text(format!("{HELP}\n")),
            ("q" | "quit", []) => {
                if !self.session.ended() {
                    self.quit_early = true;
                }
                Reply {
                    flow: Flow::Quit,
                    ..Reply::text("")
                }
            }
            ("set", [target, value]) => Reply::text(
                match parse_u32(value).and_then(|v| self.session.set(target, v)) {
                    Ok(t) => format!("{t}\n"),
                    Err(e) => format!("set: {e}\n"),
                },
            ),
            (w, _) if Session::is_directive(w) => Reply::text(match self.session.poke(line) {
                Ok((status, text)) => {
                    format!("<prompt>: {}{text}\n", status.mark())
                }
                Err(e) => format!("<prompt>: {e}\n"),
            }),
            _ => {
                let known = COMMANDS.contains(&word)
                    || [
                        "s", "n", "c", "si", "b", "d", "r", "x", "t", "h", "q", "l", "rs", "rn",
                        "rc",
                    ]
                    .contains(&word);
                if known {
                    Reply::error(format!(
                        "`{line}`: wrong arguments for {word} (help lists the commands)\n"
                    ))
                } else {
                    Reply::error(format!(
                        "unknown command `{line}` (help lists the commands){}\n",
                        trace_format::closest_name(word, COMMANDS.iter().copied())
                            .map(|c| format!("; did you mean `{c}`?"))
                            .unwrap_or_default()
                    ))
                }
            }
        }
    }

    /// Runs a step and renders its stop.
    fn go(&mut self, g: Granularity) -> String {
        if self.still {
            return "this command steps; here only views and pokes run\n".into();
        }
        let was_ended = self.session.ended();
        let finishing = match &g {
            Granularity::Finish(FinishTarget::Word { tpb, seq }) => Some(format!("tpb{tpb}#{seq}")),
            Granularity::Finish(FinishTarget::Packet { engine, queue }) => {
                Some(format!("a packet of eng{engine}.q{queue}"))
            }
            _ => None,
        };
        let stop = match self.session.step(g) {
            Ok(s) => s,
            Err(e) => return format!("{e}\n"),
        };
        if stop.kind == StopKind::End && was_ended && self.end_shown {
            return format!(
                "the trace has ended (cycle {}): the state stays for inspection; quit to leave\n",
                stop.cycle
            );
        }
        let mut out = view::stop_text(self.session.device(), &stop);
        if stop.kind == StopKind::End {
            out.push_str(&self.end_text());
            self.end_shown = true;
            for n in self.session.unreached() {
                out.push_str(&format!("note: {n}\n"));
            }
            if let Some(what) = finishing.filter(|_| !was_ended) {
                out.push_str(&format!(
                    "note: finish: {what} did not complete before the trace ended (no such word or packet came)\n"
                ));
            }
            out.push_str("   the final state stays for inspection; quit to leave\n");
        } else {
            out.push_str(&self.position_line());
        }
        out.push_str(&self.displays_text());
        self.last = Some(stop);
        self.stops_shown += 1;
        out
    }

    /// Goes back with `how` and renders the stop it lands on.
    fn back(&mut self, how: impl FnOnce(&mut Session) -> Result<Stop, String>) -> String {
        if self.still {
            return "this command steps; here only views and pokes run\n".into();
        }
        let stop = match how(&mut self.session) {
            Ok(s) => s,
            Err(e) => return format!("{e}\n"),
        };
        self.end_shown = false;
        let mut out = format!("(back) {}", view::stop_text(self.session.device(), &stop));
        out.push_str(&self.position_line());
        out.push_str(&self.displays_text());
        self.last = Some(stop);
        self.stops_shown += 1;
        out
    }

    /// `display`: each value, numbered.
    fn displays_text(&mut self) -> String {
        let device = self.session.device();
        let mut out = String::new();
        for (n, v) in &self.displays {
            let now = v
                .read(device)
                .map_or("(unreadable)".to_string(), |x| format!("{x:#x}"));
            out.push_str(&format!("{n}: {} = {now}\n", v.text));
        }
        out
    }

    /// `list [LINE]`: the trace around LINE (default: the statement next
    /// or under way), `->` at it and `b` at lines with a breakpoint.
    fn list(&mut self, around: Option<u32>) -> String {
        let here = self.session.position().map(|p| p.line);
        let total = u32::try_from(self.session.source_lines()).unwrap_or(u32::MAX);
        let centre = around.or(here).unwrap_or(total);
        if total == 0 || centre == 0 || centre > total {
            return format!("line {centre} is not in the trace (lines 1..{total})\n");
        }
        let from = centre.saturating_sub(4).max(1);
        let to = (centre + 5).min(total);
        let breaks: Vec<u32> = self
            .session
            .breakpoints()
            .iter()
            .filter_map(|b| match b.kind {
                crate::BreakKind::Line(l) if b.enabled => Some(l),
                _ => None,
            })
            .collect();
        let mut out = String::new();
        for l in from..=to {
            let mark = match (here == Some(l), breaks.contains(&l)) {
                (true, true) => "b->",
                (true, false) => " ->",
                (false, true) => " b ",
                (false, false) => "   ",
            };
            let text = self.session.source_line(l).unwrap_or("");
            out.push_str(&format!("{mark} {l:>4}  {text}\n"));
        }
        out
    }

    /// The run summary at the end of the trace, as `run` prints it.
    fn end_text(&mut self) -> String {
        let mut out = self.session.report().tail_text_with(true);
        let host = self.session.host();
        if host.used() {
            out.push_str(&host.report().to_text());
        }
        out
    }

    fn position_line(&mut self) -> String {
        let cycle = self.session.device().now().0;
        let Some(p) = self.session.position() else {
            return "-> end of trace\n".into();
        };
        let text = self.session.source_line(p.line).unwrap_or("").trim();
        if p.under_way {
            format!("-> line {} (under way at cycle {cycle}): {text}\n", p.line)
        } else {
            format!("-> line {}: {text}\n", p.line)
        }
    }

    fn where_text(&mut self) -> String {
        let cycle = self.session.device().now().0;
        let mut out = format!("cycle {cycle}\n");
        let line = self.position_line();
        out.push_str(&line);
        out
    }

    fn events(&mut self, n: usize) -> String {
        let all: Vec<_> = self.session.recent_events().cloned().collect();
        if all.is_empty() {
            return "no device events yet\n".into();
        }
        let from = all.len().saturating_sub(n);
        let device = self.session.device();
        all[from..]
            .iter()
            .map(|e| view::event_line(device, e))
            .collect()
    }

    fn focus(&mut self) -> Option<(soc::exec::QueueTarget, u32)> {
        let stop = self.last.as_ref()?;
        stop.focus(self.session.device())
    }

    fn spec_of(&self, id: u32) -> String {
        self.session
            .breakpoints()
            .get(id)
            .map(|b| format!("{} {}", b.kind.type_name(), b.kind.describe()))
            .unwrap_or_default()
    }

    /// `regs [--changed] [REGION | REGISTER | FIELD] [GLOB]`.
    fn regs(&mut self, args: &[&str]) -> String {
        let changed = args.contains(&"--changed");
        let rest: Vec<&str> = args.iter().copied().filter(|a| *a != "--changed").collect();
        let (target, glob) = match rest.as_slice() {
            [] => (None, None),
            [t] => (Some(t.to_string()), None),
            [t, g] => (Some(t.to_string()), Some(*g)),
            _ => return "regs [--changed] [REGION | REGISTER | FIELD] [GLOB]\n".into(),
        };
        let target = match target {
            Some(t) => t,
            None => match self.focus() {
                Some((q, _)) => q.region,
                None => {
                    return "regs REGION (e.g. regs eng0.m2s.q0, regs eng0.gen --changed, regs eng0.gen '*CAUSE*', regs eng0.m2s.q0.q_cfg)\n".into();
                }
            },
        };
        view::show_regs(self.session.device(), &target, changed, glob)
    }

    fn finish_target(&mut self, what: &str) -> Result<FinishTarget, String> {
        if let Some((core, seq)) = what.split_once('#') {
            let device = self.session.device();
            let Place::Core(tpb) = Place::parse(device, core)? else {
                return Err(format!("`{core}` is not a core: finish tpbN#K"));
            };
            let seq = seq
                .parse::<u64>()
                .map_err(|_| format!("`{seq}` is not a word number"))?;
            return Ok(FinishTarget::Word { tpb, seq });
        }
        match Place::parse(self.session.device(), what)? {
            Place::Queue(q) => Ok(FinishTarget::Packet {
                engine: q.engine,
                queue: q.queue,
            }),
            _ => Err(format!(
                "`{what}`: finish takes a queue (engN.m2s.qQ) or a word (tpbN#K)"
            )),
        }
    }

    fn condition(&mut self, id: &str, rest: &str) -> String {
        let id = match parse_id(id) {
            Ok(i) => i,
            Err(e) => return format!("{e}\n"),
        };
        let expr = rest
            .trim()
            .split_once(char::is_whitespace)
            .map_or("", |(_, e)| e);
        let test = match parse_condition(self.session.device(), expr) {
            Ok(t) => t,
            Err(e) => return format!("{e}\n"),
        };
        match self.session.breakpoints_mut().get_mut(id) {
            Ok(b) => {
                let text = match &test {
                    Some(t) => format!("breakpoint {id} stops only if {t}\n"),
                    None => format!("breakpoint {id} is now unconditional\n"),
                };
                b.condition = test;
                text
            }
            Err(e) => format!("{e}\n"),
        }
    }

    fn ignore(&mut self, id: &str, count: &str) -> String {
        let (id, count) = match (parse_id(id), parse_count(count)) {
            (Ok(i), Ok(c)) => (i, c),
            (Err(e), _) | (_, Err(e)) => return format!("{e}\n"),
        };
        match self.session.breakpoints_mut().get_mut(id) {
            Ok(b) => {
                b.ignore = count;
                format!("will ignore the next {count} hits of breakpoint {id}\n")
            }
            Err(e) => format!("{e}\n"),
        }
    }

    /// The session's exit status: as `run` (0, 1, 2) once the trace has
    /// run to its end, [`EXIT_QUIT_EARLY`] when quit before.
    pub fn exit_code(&mut self) -> u8 {
        if self.quit_early {
            return EXIT_QUIT_EARLY;
        }
        self.session.report().exit_code()
    }

    /// How many stops were shown so far.
    pub fn stops_shown(&self) -> u64 {
        self.stops_shown
    }

    /// The last stop shown, if any.
    pub fn last_stop(&self) -> Option<&Stop> {
        self.last.as_ref()
    }

    /// Whether the user quit before the end.
    pub fn quit_early(&self) -> bool {
        self.quit_early
    }

    /// Ends the session: the report and the host runtime.
    pub fn finish(self) -> (RunReport, host_exec::HostSession) {
        self.session.finish()
    }
}

/// `FROM..TO`, both slots included.
fn parse_range(text: &str) -> Result<(u32, u32), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("`{text}`: expected FROM..TO (slots, both included)"))?;
    Ok((parse_u32(a)?, parse_u32(b)?))
}

fn parse_ids(words: &[&str]) -> Result<Vec<u32>, String> {
    words.iter().map(|w| parse_id(w)).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command `help` lists under stepping and going back, and each
    /// of its aliases, is one `execute_still` refuses.
    #[test]
    fn stepping_words_cover_the_help() {
        let mut section = "";
        let mut words = Vec::new();
        for line in HELP.lines() {
            if !line.starts_with(' ') {
                section = line;
                continue;
            }
            if !(section.starts_with("stepping") || section.starts_with("going back")) {
                continue;
            }
            // The words before the arguments: `step | s [N]`, `finish [QUEUE|tpbN#K]`.
            let usage = line.trim().split("  ").next().unwrap_or("");
            let usage = usage.split('[').next().unwrap_or("");
            for w in usage.split('|') {
                if let Some(w) = w.split_whitespace().next() {
                    words.push(w.to_string());
                }
            }
        }
        words.retain(|w| w != "info");
        assert!(words.len() > 10, "{words:?}");
        for w in &words {
            assert!(
                STEPPING.contains(&w.as_str()),
                "`{w}` steps but is not in STEPPING"
            );
        }
    }
}
