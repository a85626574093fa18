//! The views of the JSON protocol in fields (docs/user-guide.md §12 "The
//! JSON protocol"): `regs`, `ring`, `mem`, `where`, `time`, `events` and
//! `info break` answer with a [`ViewData`] besides their text, so a
//! program reads values instead of parsing lines. Views only read the
//! device, so the data is taken after the console answered.

use schemars::JsonSchema;
use serde::Serialize;
use soc_map::{Hex, Hex32};

use crate::console::Console;
use crate::place::{Place, Value};
use crate::view;

/// A view's data (`view` in a reply), tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ViewData {
    /// `regs REGION`: the block's registers as listed (filters applied).
    Registers {
        /// The block's region (`eng0.m2s.q0`).
        region: String,
        /// The registers listed.
        registers: Vec<RegisterData>,
    },
    /// `regs REGISTER` or `regs REGISTER.FIELD`: one value.
    Value {
        /// The name as given.
        name: String,
        /// Its value; absent when it cannot be read.
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<Hex32>,
    },
    /// `ring QUEUE [FROM..TO]`: the ring's pointers and the slots shown.
    Ring {
        /// The queue (`eng0.m2s.q0`).
        queue: String,
        /// The slots shown, each flagged.
        slots: Vec<SlotData>,
    },
    /// `mem ADDR [LEN]`: the bytes.
    Memory {
        /// The first byte's address.
        address: Hex,
        /// The bytes, two hex digits each, in address order.
        bytes: String,
    },
    /// `where`: the cycle and the statement next (or under way).
    Where {
        /// The simulated cycle.
        cycle: u64,
        /// The statement's trace line; absent at the end of the trace.
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<u32>,
        /// Its source text.
        #[serde(skip_serializing_if = "Option::is_none")]
        statement: Option<String>,
        /// A `run`/`wait` paused part-way.
        under_way: bool,
    },
    /// `time`: the simulated cycle.
    Time {
        /// The simulated cycle.
        cycle: u64,
        /// The same in nanoseconds.
        ns: f64,
    },
    /// `events [N]`: the last device events, one text line each.
    Events {
        /// Oldest first.
        events: Vec<String>,
    },
    /// `info break`: the breakpoints and watchpoints.
    Breakpoints {
        /// By number.
        breakpoints: Vec<BreakpointData>,
    },
}

/// One register of a [`ViewData::Registers`].
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct RegisterData {
    /// Its name (`TDRHP`, `SEM_INC[7]`).
    pub name: String,
    /// Its offset in the block.
    pub offset: Hex,
    /// Its value.
    pub value: Hex32,
    /// Its reset value.
    pub reset: Hex32,
    /// Its fields.
    pub fields: Vec<FieldData>,
}

/// One field of a register.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct FieldData {
    /// Its name.
    pub name: String,
    /// Its bits (`23:0`).
    pub bits: String,
    /// Its value.
    pub value: Hex32,
}

/// One ring slot of a [`ViewData::Ring`].
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SlotData {
    /// The slot's index in the ring.
    pub index: u32,
    /// `fetched` (in flight), `posted`, `new` (the doorbell at the stop
    /// posts it) or `beyond` (past the tail).
    pub flag: String,
    /// The slot's line in the text view (decoded descriptor, warnings).
    pub text: String,
}

/// One breakpoint of a [`ViewData::Breakpoints`].
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct BreakpointData {
    /// Its number.
    pub id: u32,
    /// `break …` / `watch …` as typed.
    pub spec: String,
    /// Whether it stops.
    pub enabled: bool,
    /// Times hit.
    pub hits: u64,
    /// Hits still to pass over.
    pub ignore: u64,
    /// Its condition, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// The data of the view `line` asks for (`None`: not a view, or a view
/// whose text says what was wrong).
pub fn view_of(console: &mut Console, line: &str) -> Option<ViewData> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (&word, args) = words.split_first()?;
    match (word, args) {
        ("r" | "regs", args) => regs(console, args),
        ("ring", args) => ring(console, args),
        ("x" | "mem", [addr, rest @ ..]) if rest.len() <= 1 => {
            let device = console.session().device();
            let a = trace_format::parse_addr(addr, "<debugger>").ok()?;
            let address = soc::resolve(device, &a).ok()?.addr;
            let len = rest
                .first()
                .map_or(Some(64), |l| soc_map::parse_u64(l).ok())?;
            let len = usize::try_from(len.min(view::MAX_MEM_BYTES)).ok()?;
            let mut buf = vec![0u8; len];
            device.read_bytes(address, &mut buf).ok()?;
            let bytes = buf.iter().map(|b| format!("{b:02x}")).collect();
            Some(ViewData::Memory {
                address: Hex(address),
                bytes,
            })
        }
        ("where", []) => {
            let session = console.session();
            let cycle = session.device().now().0;
            let p = session.position();
            let line = p.as_ref().map(|p| p.line);
            let statement = line.and_then(|l| session.source_line(l).map(|s| s.trim().to_string()));
            Some(ViewData::Where {
                cycle,
                line,
                statement,
                under_way: p.is_some_and(|p| p.under_way),
            })
        }
        ("t" | "time", []) => {
            let device = console.session().device();
            let cycle = device.now().0;
            Some(ViewData::Time {
                cycle,
                ns: device.timing().ns(cycle),
            })
        }
        ("events", rest) if rest.len() <= 1 => {
            let n = match rest.first() {
                Some(n) => usize::try_from(crate::place::parse_u64(n).ok()?).unwrap_or(usize::MAX),
                None => 10,
            };
            let session = console.session();
            let events: Vec<soc::DeviceEvent> = session.recent_events().cloned().collect();
            let device = session.device();
            let all: Vec<String> = events
                .iter()
                .map(|e| view::event_line(device, e).trim().to_string())
                .collect();
            let from = all.len().saturating_sub(n);
            Some(ViewData::Events {
                events: all[from..].to_vec(),
            })
        }
        ("info", ["break" | "breakpoints" | "b" | "watch" | "watchpoints"]) => {
            let breakpoints = console
                .session()
                .breakpoints()
                .iter()
                .map(|b| BreakpointData {
                    id: b.id,
                    spec: format!("{} {}", b.kind.type_name(), b.kind.describe()),
                    enabled: b.enabled,
                    hits: b.hits,
                    ignore: b.ignore,
                    condition: b.condition.as_ref().map(ToString::to_string),
                })
                .collect();
            Some(ViewData::Breakpoints { breakpoints })
        }
        _ => None,
    }
}

fn regs(console: &mut Console, args: &[&str]) -> Option<ViewData> {
    let changed = args.contains(&"--changed");
    let rest: Vec<&str> = args.iter().copied().filter(|a| *a != "--changed").collect();
    let (target, glob) = match rest.as_slice() {
        [] => {
            let stop = console.last_stop()?.clone();
            (stop.focus(console.session().device())?.0.region, None)
        }
        [t] => ((*t).to_string(), None),
        [t, g] => ((*t).to_string(), Some(*g)),
        _ => return None,
    };
    let device = console.session().device();
    match view::registers(device, &target, changed) {
        Some(rows) => Some(ViewData::Registers {
            registers: rows
                .into_iter()
                .filter(|r| glob.is_none_or(|g| view::glob_match(g, &r.name)))
                .map(|r| RegisterData {
                    name: r.name,
                    offset: Hex(r.offset),
                    value: Hex32(r.value),
                    reset: Hex32(r.reset),
                    fields: r
                        .fields
                        .into_iter()
                        .map(|(name, bits, value)| FieldData {
                            name,
                            bits,
                            value: Hex32(value),
                        })
                        .collect(),
                })
                .collect(),
            region: target,
        }),
        None => {
            let v = Value::parse(device, &target).ok()?;
            Some(ViewData::Value {
                value: v.read(device).map(Hex32),
                name: target,
            })
        }
    }
}

fn ring(console: &mut Console, args: &[&str]) -> Option<ViewData> {
    let (queue, text) = match args {
        [] => {
            let stop = console.last_stop()?.clone();
            let (q, inc) = stop.focus(console.session().device())?;
            let text = view::show_ring(console.session().device(), &q, inc);
            (q.region, text)
        }
        [name, rest @ ..] if rest.len() <= 1 => {
            let device = console.session().device();
            let Place::Queue(q) = Place::parse(device, name).ok()? else {
                return None;
            };
            let text = match rest.first() {
                None => view::show_ring(device, &q, 0),
                Some(r) => {
                    let (a, b) = r.split_once("..")?;
                    let (a, b) = (
                        crate::place::parse_u32(a).ok()?,
                        crate::place::parse_u32(b).ok()?,
                    );
                    view::show_ring_range(device, &q, a, b)
                }
            };
            (q.region, text)
        }
        _ => return None,
    };
    let slots = text
        .lines()
        .filter_map(|l| {
            let t = l.trim();
            let (flag, rest) = t.split_once(char::is_whitespace)?;
            let index = rest.trim_start().strip_prefix('[')?.split_once(']')?.0;
            Some(SlotData {
                index: index.trim().parse().ok()?,
                flag: flag.to_string(),
                text: t.to_string(),
            })
        })
        .collect();
    Some(ViewData::Ring { queue, slots })
}
