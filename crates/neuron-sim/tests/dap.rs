//! `neuron-sim dap` driven by a scripted client (issue 14 item 6): framed
//! requests in, the responses and events asserted — breakpoints on trace
//! lines, the fault exception filter, stack, scopes and variables
//! (registers with fields as children), stepping both ways, evaluate,
//! readMemory, the end of the trace and the exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    seq: i64,
    /// Events read while waiting for a response.
    events: VecDeque<Value>,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")))
            .arg("dap")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            seq: 0,
            events: VecDeque::new(),
        }
    }

    fn read(&mut self) -> Value {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            assert_eq!(name, "Content-Length");
            length = value.trim().parse().unwrap();
        }
        let mut body = vec![0u8; length];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Sends a request; returns its response (events go to the queue).
    fn request(&mut self, command: &str, arguments: Value) -> Value {
        self.seq += 1;
        let body = json!({"seq": self.seq, "type": "request", "command": command,
            "arguments": arguments})
        .to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
        loop {
            let m = self.read();
            if m["type"] == "response" {
                assert_eq!(m["request_seq"], self.seq);
                assert_eq!(m["command"], command);
                return m;
            }
            self.events.push_back(m);
        }
    }

    fn ok(&mut self, command: &str, arguments: Value) -> Value {
        let r = self.request(command, arguments);
        assert_eq!(r["success"], true, "{r}");
        r["body"].clone()
    }

    /// The next event named `name` (earlier other events are dropped).
    fn event(&mut self, name: &str) -> Value {
        loop {
            let m = match self.events.pop_front() {
                Some(m) => m,
                None => self.read(),
            };
            if m["event"] == name {
                return m["body"].clone();
            }
        }
    }

    fn line(&mut self) -> u64 {
        let st = self.ok("stackTrace", json!({"threadId": 1}));
        st["stackFrames"][0]["line"].as_u64().unwrap()
    }

    fn vars(&mut self, reference: &Value) -> Vec<Value> {
        let v = self.ok("variables", json!({"variablesReference": reference}));
        v["variables"].as_array().unwrap().clone()
    }
}

fn find<'a>(vars: &'a [Value], name: &str) -> &'a Value {
    vars.iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no variable {name} in {vars:?}"))
}

#[test]
fn a_scripted_client_debugs_a_trace() {
    let mut c = Client::start();
    let caps = c.ok(
        "initialize",
        json!({"adapterID": "neuron-sim", "linesStartAt1": true}),
    );
    assert_eq!(caps["supportsStepBack"], true);
    assert_eq!(caps["supportsConfigurationDoneRequest"], true);
    assert_eq!(caps["exceptionBreakpointFilters"][0]["filter"], "fault");
    // A trace that does not exist: the launch fails and says why.
    let r = c.request("launch", json!({"program": "traces/nothing.trace"}));
    assert_eq!(r["success"], false);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("cannot read the trace"),
        "{r}"
    );
    c.ok("launch", json!({"program": "traces/fault-ring-id.trace"}));
    // Configuration comes after `initialized`, sent once the trace is loaded.
    c.event("initialized");
    let b = c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/fault-ring-id.trace"},
            "breakpoints": [{"line": 43}, {"line": 999}]}),
    );
    assert_eq!(b["breakpoints"][0]["verified"], true);
    assert_eq!(b["breakpoints"][0]["line"], 43);
    assert_eq!(b["breakpoints"][1]["verified"], false);
    c.ok("setExceptionBreakpoints", json!({"filters": ["fault"]}));
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "breakpoint", "{stopped}");
    assert_eq!(stopped["hitBreakpointIds"][0], b["breakpoints"][0]["id"]);
    let threads = c.ok("threads", json!({}));
    assert_eq!(threads["threads"][0]["id"], 1);
    let st = c.ok("stackTrace", json!({"threadId": 1}));
    let frame = &st["stackFrames"][0];
    assert_eq!(frame["line"], 43);
    assert!(
        frame["source"]["path"]
            .as_str()
            .unwrap()
            .ends_with("fault-ring-id.trace")
    );
    // Scopes: queues (registers, ring), registers with fields, semaphores, memory.
    let scopes = c.ok("scopes", json!({"frameId": 1}));
    let scopes = scopes["scopes"].as_array().unwrap().clone();
    assert_eq!(scopes.len(), 4);
    let queues = c.vars(&scopes[0]["variablesReference"]);
    let q = find(&queues, "eng128.m2s.q0");
    assert!(
        q["value"].as_str().unwrap().contains("32 descriptors"),
        "{q}"
    );
    let q_children = c.vars(&q["variablesReference"]);
    let ring = c.vars(&find(&q_children, "ring")["variablesReference"]);
    assert!(
        ring.iter()
            .any(|v| v["value"].as_str().unwrap().contains("stale ring id")),
        "{ring:?}"
    );
    let q_cfg = find(&q_children, "Q_CFG");
    assert_eq!(q_cfg["value"], "0x03030000");
    let fields = c.vars(&q_cfg["variablesReference"]);
    let en_pref = find(&fields, "EN_PREF");
    assert_eq!(
        (&en_pref["value"], &en_pref["type"]),
        (&json!("0x1"), &json!("bits [16]"))
    );
    let regs = c.vars(&scopes[1]["variablesReference"]);
    let gen_regs = c.vars(&find(&regs, "eng128.m2s.q0")["variablesReference"]);
    assert!(gen_regs.iter().any(|v| v["name"] == "TDRBP_LOW"));
    let memory = c.vars(&scopes[3]["variablesReference"]);
    let ring_mem = find(&memory, "eng128.m2s.q0 ring");
    assert_eq!(ring_mem["memoryReference"], "0x9000000");
    let m = c.ok(
        "readMemory",
        json!({"memoryReference": "0x9000000", "count": 16}),
    );
    assert_eq!(m["address"], "0x9000000");
    assert_eq!(m["data"].as_str().unwrap().len(), 24);
    // The fault: an exception stop.
    c.ok("continue", json!({"threadId": 1}));
    let out = c.event("output");
    assert!(
        out["output"]
            .as_str()
            .unwrap()
            .contains("doorbell eng128.m2s.q0.TDRTP_INC +1")
    );
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "exception", "{stopped}");
    assert!(stopped["text"].as_str().unwrap().contains("PREF_RING_ID"));
    assert_eq!(c.line(), 44);
    let e = c.ok(
        "evaluate",
        json!({"expression": "eng128.gen.sec_a_int_cause", "context": "watch"}),
    );
    assert_eq!(e["result"], "0x20000");
    let e = c.ok(
        "evaluate",
        json!({"expression": "ring eng128.m2s.q0", "context": "repl"}),
    );
    assert!(e["result"].as_str().unwrap().contains("ring_id 2"), "{e}");
    // Back: one statement, then to the line breakpoint.
    c.ok("stepBack", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "step");
    assert_eq!(c.line(), 44);
    c.ok("reverseContinue", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "breakpoint");
    assert_eq!(c.line(), 43);
    let e = c.ok(
        "evaluate",
        json!({"expression": "eng128.gen.sec_a_int_cause"}),
    );
    assert_eq!(e["result"], "0x0");
    // Forward one statement, then with no breakpoints to the end.
    c.ok("next", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "step");
    assert_eq!(c.line(), 44);
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/fault-ring-id.trace"}, "breakpoints": []}),
    );
    c.ok("setExceptionBreakpoints", json!({"filters": []}));
    c.ok("continue", json!({"threadId": 1}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "end of trace", "{stopped}");
    c.ok("continue", json!({"threadId": 1}));
    assert_eq!(c.event("exited")["exitCode"], 0);
    c.event("terminated");
    c.ok("disconnect", json!({}));
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Disconnecting before the end: exit status 3, as `step`'s `quit`.
#[test]
fn disconnect_before_the_end_is_status_3() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok(
        "launch",
        json!({"program": "traces/copy-hbm-hbm.trace", "stopOnEntry": true}),
    );
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["reason"], "entry");
    assert_eq!(c.line(), 3);
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}

/// At the end of a firmware trace the semaphores scope shows the values
/// the words left, and `stepBack` still goes back from there.
#[test]
fn semaphores_at_the_end_and_back_from_it() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok(
        "launch",
        json!({"program": "traces/fw-semaphore-chain.trace"}),
    );
    c.event("initialized");
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["reason"], "end of trace");
    let scopes = c.ok("scopes", json!({"frameId": 1}));
    let sems = c.vars(&scopes["scopes"][2]["variablesReference"]);
    let s3 = find(&sems, "SEM_READ[3]");
    assert_eq!(s3["value"], "0x00000004");
    assert_eq!(s3["evaluateName"], "tpb0.evt_sem.sem_read[3]");
    c.ok("stepBack", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "step");
    let line = c.line();
    assert!(line > 40, "{line}");
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}

/// The `race` exception filter (`break race`): set before
/// `configurationDone`, it turns the race detector on, and each new race
/// stops as an exception that names it; without it the trace runs through.
#[test]
fn the_race_filter_stops_at_each_new_race() {
    let mut c = Client::start();
    let caps = c.ok("initialize", json!({}));
    let filters = caps["exceptionBreakpointFilters"].as_array().unwrap();
    let race = filters.iter().find(|f| f["filter"] == "race").unwrap();
    assert_eq!(race["default"], false);
    c.ok(
        "launch",
        json!({"program": "traces/race-sbuf-tile-reuse.trace"}),
    );
    c.event("initialized");
    c.ok("setExceptionBreakpoints", json!({"filters": ["race"]}));
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "exception", "{stopped}");
    let text = stopped["text"].as_str().unwrap();
    assert!(
        text.contains("(break race): race #1: write/write race on tpb0.sbuf[p0]+0x1000..+0x1100 (256 bytes); first: write by eng0.q0[0] rung by tpb0 word #0 (line 22) at cycle 286; second: write by eng16.q0[0] rung by tpb1 word #0 (line 24) at cycle 286"),
        "{stopped}"
    );
    assert_eq!(c.line(), 25, "the run under way");
    c.ok("continue", json!({"threadId": 1}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "exception", "{stopped}");
    assert!(
        stopped["description"]
            .as_str()
            .unwrap()
            .contains("race #2: read/write race on tpb0.sbuf[p0]+0x1000..+0x1100"),
        "{stopped}"
    );
    // Off again: the rest of the trace runs to its end.
    c.ok("setExceptionBreakpoints", json!({"filters": []}));
    c.ok("continue", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "end of trace");
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(0));
}

/// Stepping requests need a launched session, and end with it: before
/// `launch` and after `terminated` they fail; at the end-of-trace stop a
/// step says the trace has ended and only `continue` ends the session.
#[test]
fn stepping_before_the_launch_and_after_the_end_fails() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    let r = c.request("stepBack", json!({"threadId": 1}));
    assert_eq!(r["success"], false, "{r}");
    c.ok("launch", json!({"program": "traces/copy-hbm-hbm.trace"}));
    c.event("initialized");
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["reason"], "end of trace");
    // A step at the end: the trace has ended, the session stays.
    c.ok("stepIn", json!({"threadId": 1}));
    let stop = c.event("stopped");
    assert!(
        stop["description"].as_str().unwrap_or("").contains("ended"),
        "{stop}"
    );
    c.ok("continue", json!({"threadId": 1}));
    assert_eq!(c.event("exited")["exitCode"], 0);
    c.event("terminated");
    for command in ["stepBack", "continue", "next", "reverseContinue"] {
        let r = c.request(command, json!({"threadId": 1}));
        assert_eq!(r["success"], false, "{command} after the end: {r}");
    }
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(0));
}

/// The position as `stackTrace` gives it: the frame's line and name (the
/// statement and the cycle).
fn frame(c: &mut Client) -> (u64, String) {
    let st = c.ok("stackTrace", json!({"threadId": 1}));
    let f = &st["stackFrames"][0];
    (
        f["line"].as_u64().unwrap(),
        f["name"].as_str().unwrap().to_string(),
    )
}

/// `evaluate` runs views and pokes; a stepping command, forward or back,
/// is refused before anything runs (docs/user-guide.md §12 "VS Code and
/// other DAP clients": "Stepping commands are refused there"): the
/// session stays where it was, and the buttons still step from there.
#[test]
fn evaluate_refuses_stepping_commands_and_nothing_runs() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok("launch", json!({"program": "traces/copy-hbm-hbm.trace"}));
    c.event("initialized");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 16}]}),
    );
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["reason"], "breakpoint");
    let here = frame(&mut c);
    assert_eq!(here, (16, "run (cycle 0)".to_string()));
    for expression in [
        "step",
        "s",
        "step 3",
        "next",
        "n",
        "continue",
        "c",
        "stepi",
        "si",
        "cycles 10",
        "until 100",
        "goto 100",
        "finish",
        "finish eng0.m2s.q0",
        "reverse-step",
        "rs",
        "reverse-next",
        "rn",
        "reverse-continue",
        "rc",
        "goto 0",
    ] {
        let r = c.request(
            "evaluate",
            json!({"expression": expression, "context": "repl", "frameId": 1}),
        );
        assert_eq!(r["success"], false, "{expression}: {r}");
        assert!(
            r["message"]
                .as_str()
                .unwrap()
                .contains("step with the debugger's buttons"),
            "{expression}: {r}"
        );
        assert_eq!(frame(&mut c), here, "{expression} moved the session");
    }
    // `quit` is the client's (disconnect): refused, and the session goes on.
    for expression in ["quit", "q"] {
        let r = c.request(
            "evaluate",
            json!({"expression": expression, "context": "repl", "frameId": 1}),
        );
        assert_eq!(r["success"], false, "{expression}: {r}");
        assert!(
            r["message"].as_str().unwrap().contains("ends the session"),
            "{expression}: {r}"
        );
    }
    // Views still answer, and the buttons step from where the session was.
    let e = c.ok(
        "evaluate",
        json!({"expression": "where", "context": "repl"}),
    );
    assert!(e["result"].as_str().unwrap().contains("line 16"), "{e}");
    c.ok("next", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "step");
    assert_eq!(frame(&mut c).0, 17);
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}

/// `setBreakpoints` replaces the breakpoints of the one source it names
/// (DAP): breakpoints for a file that is not the launched trace are not
/// verified, say why, and leave the trace's own breakpoints alone; the
/// trace spelled another way (a path through `..`, its name alone) is the
/// trace.
#[test]
fn breakpoints_of_another_source_leave_the_trace_alone() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok("launch", json!({"program": "traces/copy-hbm-hbm.trace"}));
    c.event("initialized");
    let own = c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 17}]}),
    );
    assert_eq!(own["breakpoints"][0]["verified"], true, "{own}");
    for source in [
        json!({"path": "traces/ring-wrap.trace", "name": "ring-wrap.trace"}),
        json!({"path": "/etc/passwd"}),
        json!({"name": "ring-wrap.trace"}),
    ] {
        let b = c.ok(
            "setBreakpoints",
            json!({"source": source, "breakpoints": [{"line": 16}, {"line": 2}]}),
        );
        let b = b["breakpoints"].as_array().unwrap();
        assert_eq!(b.len(), 2, "{source}: {b:?}");
        for x in b {
            assert_eq!(x["verified"], false, "{source}: {x}");
            assert!(
                x["message"].as_str().unwrap().contains("not the trace"),
                "{source}: {x}"
            );
            assert!(x.get("id").is_none(), "{source}: {x}");
        }
    }
    // Only the trace's own breakpoint is there, and it is the one that fires.
    let e = c.ok(
        "evaluate",
        json!({"expression": "info break", "context": "repl"}),
    );
    let table = e["result"].as_str().unwrap();
    assert!(table.contains("line 17"), "{table}");
    assert!(!table.contains("line 16"), "{table}");
    assert!(!table.contains("line 3"), "{table}");
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "breakpoint", "{stopped}");
    assert_eq!(stopped["hitBreakpointIds"][0], own["breakpoints"][0]["id"]);
    assert_eq!(c.line(), 17);
    // The trace under another spelling replaces its breakpoints.
    let again = c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/../traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 18}]}),
    );
    assert_eq!(again["breakpoints"][0]["verified"], true, "{again}");
    let by_name = c.ok(
        "setBreakpoints",
        json!({"source": {"name": "copy-hbm-hbm.trace"}, "breakpoints": [{"line": 18}]}),
    );
    assert_eq!(by_name["breakpoints"][0]["verified"], true, "{by_name}");
    let e = c.ok(
        "evaluate",
        json!({"expression": "info break", "context": "repl"}),
    );
    let table = e["result"].as_str().unwrap();
    assert!(!table.contains("line 17"), "{table}");
    assert_eq!(table.matches("line 18").count(), 1, "{table}");
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}

/// `next` (one statement) that lands on a breakpoint's line stops there
/// for the breakpoint; the next request runs on from it.
#[test]
fn next_onto_a_breakpoint_line_reports_the_breakpoint() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok("launch", json!({"program": "traces/copy-hbm-hbm.trace"}));
    c.event("initialized");
    let b = c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 16}, {"line": 17}]}),
    );
    c.ok("configurationDone", json!({}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["hitBreakpointIds"][0], b["breakpoints"][0]["id"]);
    assert_eq!(c.line(), 16);
    c.ok("next", json!({"threadId": 1}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "breakpoint", "{stopped}");
    assert_eq!(stopped["hitBreakpointIds"][0], b["breakpoints"][1]["id"]);
    assert_eq!(c.line(), 17);
    c.ok("next", json!({"threadId": 1}));
    let stopped = c.event("stopped");
    assert_eq!(stopped["reason"], "step", "{stopped}");
    assert_eq!(c.line(), 18);
    c.ok("disconnect", json!({}));
    assert_eq!(c.child.wait().unwrap().code(), Some(3));
}

/// A breakpoint `condition` that does not parse sets no breakpoint and says
/// why (`verified: false`), as `condition N …` at the prompt changes
/// nothing; a good condition holds the stop until it is true.
#[test]
fn a_breakpoint_condition_that_does_not_parse_sets_no_breakpoint() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok("launch", json!({"program": "traces/copy-hbm-hbm.trace"}));
    c.event("initialized");
    let r = c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 15, "condition": "bogus cond"}, {"line": 17}]}),
    );
    let b = &r["breakpoints"];
    assert_eq!(b[0]["verified"], false, "{r}");
    assert!(
        b[0]["message"]
            .as_str()
            .unwrap()
            .contains("no breakpoint set"),
        "{r}"
    );
    assert_eq!(b[1]["verified"], true, "{r}");
    c.ok("configurationDone", json!({}));
    // The first stop is line 17's: nothing was set at line 15.
    assert_eq!(c.event("stopped")["reason"], "breakpoint");
    assert_eq!(frame(&mut c).0, 17);
    c.ok("disconnect", json!({}));
    let _ = c.child.wait();
}

/// The entry stop is a stop at the first statement: a breakpoint there
/// fires the next time a step arrives, not on the first `continue`, which
/// runs the statement (docs/user-guide.md §12 "Stepping").
#[test]
fn a_breakpoint_on_the_entry_line_does_not_fire_again_on_the_first_continue() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok(
        "launch",
        json!({"program": "traces/copy-hbm-hbm.trace", "stopOnEntry": true}),
    );
    c.event("initialized");
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": "traces/copy-hbm-hbm.trace"},
            "breakpoints": [{"line": 3}, {"line": 5}]}),
    );
    c.ok("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["reason"], "entry");
    assert_eq!(frame(&mut c).0, 3);
    c.ok("continue", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["reason"], "breakpoint");
    assert_eq!(frame(&mut c).0, 5, "the first continue ran line 3");
    c.ok("disconnect", json!({}));
    let _ = c.child.wait();
}
