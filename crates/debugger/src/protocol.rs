//! The machine interface of the debugger (docs/user-guide.md §12 "JSON
//! protocol"): one JSON command per line in, one JSON [`Message`] per line
//! out. A command is a console line (`{"command": "break line 42"}`), or a
//! step with a structured granularity (`{"command": "step",
//! "granularity": "doorbell"}`); every answer carries the console's text as
//! lines, and a stop also in fields. The front end adds `schema_version`
//! and prints.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::breakpoint::Hit;
use crate::console::{Console, Flow};
use crate::session::{Stop, StopKind};
use crate::view_data::{ViewData, view_of};

/// A command read from the client.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// A console command line (`break line 42`, `ring eng0.m2s.q0`).
    pub command: String,
    /// With `"command": "step"`: how far (`statement`, `doorbell`,
    /// `event`, `continue`); without, the line is taken as typed.
    #[serde(default)]
    pub granularity: Option<String>,
}

/// One line the debugger writes.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// The answer to a command: its text, and the stop if it moved.
    Reply {
        /// The console line that ran.
        command: String,
        /// The console's text, one entry per line.
        lines: Vec<String>,
        /// Where and why the session stopped, when the command ran the
        /// trace.
        #[serde(skip_serializing_if = "Option::is_none")]
        stop: Option<StopInfo>,
        /// A view's data in fields (`regs`, `ring`, `mem`, `where`,
        /// `time`, `events`, `info break`), tagged by `kind`.
        #[serde(skip_serializing_if = "Option::is_none")]
        view: Option<ViewData>,
    },
    /// Statements run while stepping (the statement log), as text lines.
    Log {
        /// One entry per line.
        lines: Vec<String>,
    },
    /// A command that could not be read or understood; the session goes on.
    Error {
        /// What was wrong.
        message: String,
    },
    /// The session is over.
    End {
        /// The exit status: as `neuron-sim run` once the trace ended, 3 when
        /// quit before.
        exit_status: u8,
        /// The client quit before the end of the trace.
        quit_early: bool,
        /// The simulated cycle at the end.
        cycle: u64,
        /// Expectations that held.
        expectations_passed: usize,
        /// Expectations that failed.
        expectations_failed: usize,
        /// Expectations skipped (timing-only mode).
        expectations_skipped: usize,
    },
}

/// A stop, in fields.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct StopInfo {
    /// Why: `doorbell`, `fw_doorbell`, `statement`, `cycle`, `events`,
    /// `finished`, `breakpoint` or `end`.
    pub reason: String,
    /// The simulated cycle.
    pub cycle: u64,
    /// The trace line of the statement next (or under way); absent at the
    /// end of the trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// That statement's source text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// The breakpoints that fired, and why each did.
    pub hits: Vec<HitInfo>,
}

/// A breakpoint that fired.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct HitInfo {
    /// The breakpoint's number.
    pub id: u32,
    /// The breakpoint as `info break` shows it (`break line 42`).
    pub spec: String,
    /// What happened.
    pub why: String,
}

impl From<&Hit> for HitInfo {
    fn from(h: &Hit) -> Self {
        HitInfo {
            id: h.id,
            spec: h.spec.clone(),
            why: h.why.clone(),
        }
    }
}

/// The text as lines (no trailing empty line).
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// The reason word of a stop.
fn reason(kind: &StopKind) -> &'static str {
    match kind {
        StopKind::Doorbell { .. } => "doorbell",
        StopKind::FwDoorbell(_) => "fw_doorbell",
        StopKind::Statement { .. } => "statement",
        StopKind::Cycle { .. } => "cycle",
        StopKind::Events(_) => "events",
        StopKind::Finished { .. } => "finished",
        StopKind::Breakpoint => "breakpoint",
        StopKind::End => "end",
    }
}

/// The stop in fields, with the source of its statement.
fn stop_info(console: &mut Console, stop: &Stop) -> StopInfo {
    let line = stop.position.as_ref().map(|p| p.line);
    let statement = line.and_then(|l| {
        console
            .session()
            .source_line(l)
            .map(|s| s.trim().to_string())
    });
    StopInfo {
        reason: reason(&stop.kind).to_string(),
        cycle: stop.cycle,
        line,
        statement,
        hits: stop.hits.iter().map(HitInfo::from).collect(),
    }
}

/// The console line a request stands for, or why it cannot be read.
pub fn command_line(request: &Request) -> Result<String, String> {
    match &request.granularity {
        None => Ok(request.command.trim().to_string()),
        Some(g) => {
            if request.command.trim() != "step" {
                return Err(format!(
                    "`granularity` goes with \"command\": \"step\", not `{}`",
                    request.command
                ));
            }
            match g.as_str() {
                "statement" => Ok("step".into()),
                "doorbell" => Ok("next".into()),
                "event" => Ok("stepi".into()),
                "continue" => Ok("continue".into()),
                other => Err(format!(
                    "granularity `{other}`: one of statement, doorbell, event, continue"
                )),
            }
        }
    }
}

/// The first stop, as a reply to the implicit `start`.
pub fn start(console: &mut Console, doorbells: bool) -> Message {
    let text = console.start(doorbells);
    reply_with_stop(console, "start".into(), &text, true)
}

/// Runs one JSON line from the client: the message to write, and what next.
pub fn handle(console: &mut Console, json: &str) -> (Message, Flow) {
    let request: Request = match serde_json::from_str(json) {
        Ok(r) => r,
        Err(e) => {
            return (
                Message::Error {
                    message: format!(
                        "not a command object ({e}): send {{\"command\": \"LINE\"}}, e.g. {{\"command\": \"next\"}}"
                    ),
                },
                Flow::Prompt,
            );
        }
    };
    let line = match command_line(&request) {
        Ok(l) => l,
        Err(message) => return (Message::Error { message }, Flow::Prompt),
    };
    let before = console.stops_shown();
    let reply = console.execute(&line);
    if reply.error {
        return (
            Message::Error {
                message: reply.text.trim_end().to_string(),
            },
            reply.flow,
        );
    }
    let moved = console.stops_shown() != before;
    let mut message = reply_with_stop(console, line.clone(), &reply.text, moved);
    if let Message::Reply { view, .. } = &mut message
        && !moved
    {
        *view = view_of(console, &line);
    }
    (message, reply.flow)
}

fn reply_with_stop(console: &mut Console, command: String, text: &str, moved: bool) -> Message {
    let stop = if moved {
        console.last_stop().cloned()
    } else {
        None
    };
    Message::Reply {
        command,
        lines: lines(text),
        stop: stop.map(|s| stop_info(console, &s)),
        view: None,
    }
}

/// The input ran out: the trace runs to its end (as the text front end).
pub fn run_to_end(console: &mut Console) -> Option<Message> {
    let text = console.run_to_end();
    (!text.is_empty()).then(|| reply_with_stop(console, "end of input".into(), &text, true))
}

/// The last message: exit status and expectations.
pub fn end(console: &mut Console) -> Message {
    let exit_status = console.exit_code();
    let quit_early = console.quit_early();
    let report = console.session().report();
    Message::End {
        exit_status,
        quit_early,
        cycle: report.summary.cycles,
        expectations_passed: report.expectations_passed,
        expectations_failed: report.expectations_failed,
        expectations_skipped: report.expectations_skipped,
    }
}

/// The statement-log text of a step record, as a message.
pub fn log(text: &str) -> Message {
    Message::Log { lines: lines(text) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: &str) -> Request {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_command_line_is_taken_as_typed() {
        assert_eq!(
            command_line(&req(r#"{"command": " break line 42 "}"#)),
            Ok("break line 42".into())
        );
    }

    #[test]
    fn a_structured_step_maps_to_the_console_word() {
        assert_eq!(
            command_line(&req(r#"{"command":"step","granularity":"doorbell"}"#)),
            Ok("next".into())
        );
        assert!(command_line(&req(r#"{"command":"step","granularity":"bogus"}"#)).is_err());
        assert!(command_line(&req(r#"{"command":"ring","granularity":"event"}"#)).is_err());
    }

    #[test]
    fn messages_are_tagged_by_type() {
        let m = Message::Error {
            message: "x".into(),
        };
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"type":"error","message":"x"}"#
        );
    }
}
