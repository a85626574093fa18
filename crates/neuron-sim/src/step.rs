//! `neuron-sim step`: the doorbell stepping debugger (docs/references/design.md §1, issue 3).
//!
//! Runs a trace and stops before every doorbell write (the `doorbell`
//! directive or a `write32` to a `TDRTP_INC`/`RDRTP_INC`), optionally only
//! for chosen engines/queues, and also at a cycle or when a 32-bit value
//! (a semaphore) reaches a threshold while time advances. At each stop it
//! shows the engine, queue, direction, tail increment, the ring with its
//! descriptors decoded, head/tail/ring id and the queue's CSRs, then reads
//! commands: `next`, `continue`, `mem ADDR [LEN]`, `regs [REGION]`,
//! `ring [QUEUE]`, `help`, `quit`. Interactive with line editing and
//! history in a terminal; from `--script FILE` or standard input otherwise
//! (commands are echoed so a session is a readable transcript).

use std::io::{BufRead, IsTerminal};

use q7::FwEventKind;
use soc::exec::{Control, ExecHooks, Executor, Linked, QueueTarget, queue_target, ring_of};
use soc::{Device, DeviceEvent};
use trace_format::{Statement, StatementKind};
use udma::Dir;

/// Where the debugger's commands come from.
pub enum Input {
    /// A terminal with line editing and history.
    Editor(Box<rustyline::DefaultEditor>),
    /// Lines from a script or a pipe.
    Lines(Box<dyn BufRead>),
}

impl Input {
    /// Standard input: an editor on a terminal, lines otherwise.
    pub fn stdin() -> Input {
        if std::io::stdin().is_terminal()
            && let Ok(ed) = rustyline::DefaultEditor::new()
        {
            return Input::Editor(Box::new(ed));
        }
        Input::Lines(Box::new(std::io::BufReader::new(std::io::stdin())))
    }

    fn next_line(&mut self, prompt: &str) -> Option<String> {
        match self {
            Input::Editor(ed) => match ed.readline(prompt) {
                Ok(line) => {
                    let _ = ed.add_history_entry(line.as_str());
                    Some(line)
                }
                // Ctrl-C quits the session; Ctrl-D (end of input) runs on.
                Err(rustyline::error::ReadlineError::Interrupted) => Some("quit".into()),
                Err(_) => None,
            },
            Input::Lines(r) => {
                let mut line = String::new();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => {
                        let line = line.trim_end().to_string();
                        outln!("{prompt}{line}");
                        Some(line)
                    }
                }
            }
        }
    }
}

/// Which doorbells stop the debugger, and the other stop conditions.
#[derive(Debug, Default)]
pub struct StopFilter {
    /// Only these engines (empty: all).
    pub engines: Vec<u16>,
    /// Only these queue indices (empty: all).
    pub queues: Vec<u8>,
    /// Stop once simulated time reaches this cycle.
    pub at_cycle: Option<u64>,
    /// Stop once the 32-bit value at this address is ≥ the threshold.
    pub when_ge: Option<(u64, String, u32)>,
    /// Do not stop at doorbells at all.
    pub no_doorbells: bool,
}

/// The debugger state, as `ExecHooks`.
pub struct Stepper {
    input: Input,
    filter: StopFilter,
    /// `continue` was given: no more doorbell stops.
    running_free: bool,
    cycle_stop_done: bool,
    value_stop_done: bool,
    quit: bool,
    /// Device events of the running statement already looked at (for
    /// firmware doorbells).
    events_seen: usize,
    /// Number of stops so far.
    pub stops: usize,
}

impl Stepper {
    /// A debugger reading from `input`.
    pub fn new(input: Input, filter: StopFilter) -> Self {
        Self {
            input,
            filter,
            running_free: false,
            cycle_stop_done: false,
            value_stop_done: false,
            quit: false,
            events_seen: 0,
            stops: 0,
        }
    }

    fn doorbell_of(
        &self,
        stmt: &Statement,
        linked: &Linked,
        device: &Device,
    ) -> Option<(QueueTarget, u32)> {
        match (&stmt.kind, linked) {
            (StatementKind::Doorbell { count, .. }, Linked::Doorbell(q)) => {
                Some((q.clone(), *count))
            }
            (StatementKind::Write32 { value, .. }, Linked::Addr(r)) => {
                let reg = r.register.as_deref()?;
                if reg != "TDRTP_INC" && reg != "RDRTP_INC" {
                    return None;
                }
                let d = device.map().decode(r.addr);
                let name = device.map().name(d.region?);
                Some((queue_target(device, name)?, value & 0xFF_FFFF))
            }
            _ => None,
        }
    }

    fn wanted(&self, q: &QueueTarget) -> bool {
        (self.filter.engines.is_empty() || self.filter.engines.contains(&q.engine))
            && (self.filter.queues.is_empty() || self.filter.queues.contains(&q.queue))
    }

    /// The command loop at a stop (commands: [`COMMANDS`]). Returns Quit when the user quits.
    fn prompt(&mut self, device: &mut Device, focus: Option<(&QueueTarget, u32)>) -> Control {
        self.stops += 1;
        loop {
            let Some(line) = self.input.next_line("(neuron-sim) ") else {
                // End of input: run to the end.
                self.running_free = true;
                return Control::Continue;
            };
            if line.trim_start().starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => continue,
                ["n" | "next" | "s" | "step"] => return Control::Continue,
                ["c" | "continue"] => {
                    self.running_free = true;
                    return Control::Continue;
                }
                ["q" | "quit"] => {
                    self.quit = true;
                    return Control::Quit;
                }
                ["h" | "help"] => outln!("{HELP}"),
                ["ring"] => match focus {
                    Some((q, inc)) => out!("{}", show_ring(device, q, inc)),
                    None => outln!("no queue in focus: ring QUEUE (e.g. ring eng0.m2s.q0)"),
                },
                ["ring", name] => match queue_target(device, name) {
                    Some(q) => out!("{}", show_ring(device, &q, 0)),
                    None => outln!("unknown queue `{name}` (engN.m2s.qQ or engN.s2m.qQ)"),
                },
                ["regs"] | ["r"] => match focus {
                    Some((q, _)) => out!("{}", show_regs(device, &q.region)),
                    None => outln!("regs REGION (e.g. regs eng0.m2s.q0, regs eng0.gen)"),
                },
                ["regs" | "r", name] => out!("{}", show_regs(device, name)),
                ["mem" | "x", addr] => out!("{}", show_mem(device, addr, "64")),
                ["mem" | "x", addr, len] => out!("{}", show_mem(device, addr, len)),
                ["time" | "t"] => outln!(
                    "cycle {} ({:.1} ns)",
                    device.now().0,
                    device.timing().ns(device.now().0)
                ),
                [word, ..] => outln!(
                    "unknown command `{line}` (help lists the commands){}",
                    trace_format::closest_name(word, COMMANDS.iter().copied())
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default()
                ),
            }
        }
    }
}

/// The prompt's command words, for "did you mean".
const COMMANDS: &[&str] = &[
    "next", "step", "continue", "quit", "help", "ring", "regs", "mem", "time",
];

const HELP: &str = "commands:
  next | n | step | s   run to the next stop (doorbell, cycle, value)
  continue | c          run to the end without stopping at doorbells
  ring [QUEUE]          the ring of QUEUE (default: the queue being rung), descriptors decoded
  regs | r [REGION]     the registers of a region (e.g. eng0.m2s.q0, eng0.gen, tpb0.evt_sem)
  mem | x ADDR [LEN]    memory at ADDR (number or trace address, e.g. hbm0+0x1000)
  time | t              the simulated cycle
  help | h              this list
  quit | q (Ctrl-C)     stop the run
--at-cycle and --when are checked after each engine step while run/wait advance time.";

impl ExecHooks for Stepper {
    fn before(
        &mut self,
        _index: usize,
        stmt: &Statement,
        linked: &Linked,
        device: &mut Device,
        exec: &Executor,
    ) -> Control {
        // The executor takes the device events after each statement.
        self.events_seen = 0;
        if self.quit {
            return Control::Quit;
        }
        if self.running_free || self.filter.no_doorbells {
            return Control::Continue;
        }
        let Some((q, inc)) = self.doorbell_of(stmt, linked, device) else {
            return Control::Continue;
        };
        if !self.wanted(&q) {
            return Control::Continue;
        }
        let dir = match q.dir {
            Dir::M2s => "M2S (TX, reads the source)",
            Dir::S2m => "S2M (RX, writes the destination)",
        };
        outln!(
            "== doorbell at line {}, cycle {}: engine {} queue {} {dir}: tail += {inc}",
            stmt.span.line,
            device.now().0,
            q.engine,
            q.queue
        );
        let _ = exec;
        out!("{}", show_ring(device, &q, inc));
        out!("{}", show_regs(device, &q.region));
        self.prompt(device, Some((&q, inc)))
    }

    fn during_run(&mut self, device: &mut Device) -> Control {
        if self.quit {
            return Control::Quit;
        }
        if self.fw_doorbells(device) == Control::Quit {
            return Control::Quit;
        }
        if let Some(c) = self.filter.at_cycle
            && !self.cycle_stop_done
            && device.now().0 >= c
        {
            self.cycle_stop_done = true;
            outln!("== reached cycle {} (stop at {c})", device.now().0);
            return self.prompt(device, None);
        }
        if let Some((addr, ref text, v)) = self.filter.when_ge
            && !self.value_stop_done
        {
            // A register (without read side effects) or 4 bytes of memory.
            let cur = match device.reg_target(addr) {
                Ok(Some(t)) => device.peek_reg(t),
                Ok(None) => {
                    let mut b = [0u8; 4];
                    device
                        .read_bytes(addr, &mut b)
                        .ok()
                        .map(|()| u32::from_le_bytes(b))
                }
                Err(_) => None,
            };
            if cur.is_some_and(|x| x >= v) {
                self.value_stop_done = true;
                outln!(
                    "== {text} = {:#x} >= {v:#x} at cycle {}",
                    cur.unwrap_or(0),
                    device.now().0
                );
                return self.prompt(device, None);
            }
        }
        Control::Continue
    }
}

impl Stepper {
    /// Stops at every doorbell the Q7 firmware rang since the last look,
    /// naming the instruction word and the micro-ops that produced it.
    fn fw_doorbells(&mut self, device: &mut Device) -> Control {
        let events = device.events();
        let start = self.events_seen.min(events.len());
        self.events_seen = events.len();
        if self.running_free || self.filter.no_doorbells {
            return Control::Continue;
        }
        let mut stops = Vec::new();
        let mut micro_ops: Vec<String> = Vec::new();
        for e in &events[start..] {
            let DeviceEvent::Firmware(fw) = e else {
                continue;
            };
            match &fw.kind {
                FwEventKind::MicroOp { text } => micro_ops.push(text.clone()),
                FwEventKind::Log { text } => micro_ops.push(format!("log: {text}")),
                FwEventKind::InlineChunk {
                    engine,
                    queue,
                    slot,
                    chunk_bytes,
                    anomaly,
                    ..
                } => {
                    micro_ops.push(format!("word0 anomaly: {anomaly}"));
                    stops.push((
                        fw.clone(),
                        (*engine, *queue, (1, 1), *chunk_bytes),
                        (*slot, *slot),
                        std::mem::take(&mut micro_ops),
                    ));
                }
                FwEventKind::Doorbell {
                    engine,
                    queue,
                    count,
                    m2s_count,
                    bytes,
                    m2s_first,
                    s2m_first,
                } => {
                    stops.push((
                        fw.clone(),
                        (*engine, *queue, (*count, *m2s_count), *bytes),
                        (*m2s_first, *s2m_first),
                        std::mem::take(&mut micro_ops),
                    ));
                }
                _ => {}
            }
        }
        for (fw, (engine, queue, (count, m2s_count), bytes), (m2s_first, s2m_first), ops) in stops {
            let (Some(tx), Some(rx)) = (
                queue_target(device, &format!("eng{engine}.m2s.q{queue}")),
                queue_target(device, &format!("eng{engine}.s2m.q{queue}")),
            ) else {
                continue;
            };
            if !self.wanted(&tx) {
                continue;
            }
            outln!(
                "== firmware doorbell at cycle {}: tpb{} inst#{} ({}) rang engine {engine} queue {queue}: S2M tail += {count}, M2S tail += {m2s_count}, {bytes} bytes",
                fw.at,
                fw.tpb,
                fw.inst.seq,
                fw.inst.source
            );
            for op in &ops {
                outln!("  {op}");
            }
            // The tails move `doorbell_latency_cycles` after the write:
            // what they have not taken yet shows as `new`.
            let not_taken = |q: &QueueTarget, first: u32, count: u32| {
                ring_of(device, q).map_or(0, |(_, len, tail, _)| {
                    let len = len.max(1);
                    (first % len + count + len - tail % len) % len
                })
            };
            out!(
                "{}",
                show_ring(device, &rx, not_taken(&rx, s2m_first, count))
            );
            out!(
                "{}",
                show_ring(device, &tx, not_taken(&tx, m2s_first, m2s_count))
            );
            if self.prompt(device, Some((&tx, 0))) == Control::Quit {
                return Control::Quit;
            }
            if self.running_free {
                break;
            }
        }
        Control::Continue
    }
}

/// The ring of a queue: registers and the descriptors from the hardware head
/// to the tail plus `pending` (what the next doorbell will post).
pub fn show_ring(device: &Device, q: &QueueTarget, pending: u32) -> String {
    let Some((base, len, tail, tail_id)) = ring_of(device, q) else {
        return format!("{}: cannot read the ring registers\n", q.region);
    };
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    let head_raw = reg(device, &q.region, &format!("{p}DRHP")).unwrap_or(0);
    let (head, head_id) = (head_raw & 0xFF_FFFF, head_raw >> 30);
    let mut out = format!(
        "ring {}: base {base:#x}, {len} descriptors; head {head} (ring id {head_id}), tail {tail} (ring id {tail_id})\n",
        q.region
    );
    if len == 0 {
        out.push_str("  (ring not configured)\n");
        return out;
    }
    let posted = (tail + len - head) % len;
    let show = (posted + pending).min(len).min(64);
    if show == 0 {
        out.push_str("  (no descriptors between head and tail)\n");
    }
    for i in 0..show {
        let idx = (head + i) % len;
        let addr = base + 16 * u64::from(idx);
        let mut raw = [0u8; 16];
        let tag = if i < posted { "posted " } else { "new    " };
        match device.read_bytes(addr, &mut raw) {
            Ok(()) => {
                let d = dma_abi::Descriptor::from_bytes(&raw);
                let w0 = d.len_ctrl();
                let cme = dma_abi::CmeWord::from_raw(d.word1());
                let word1 = match q.dir {
                    Dir::M2s => format!("op {} {}", cme.op().name(), cme.optype().name()),
                    Dir::S2m => format!("buf2_lo {:#x}", d.word1()),
                };
                out.push_str(&format!(
                    "  {tag}[{idx:>4}] {addr:#014x}: len {:>6} ring_id {}{}{}{}{} {} {:#x}  {word1}\n",
                    w0.len_bytes(true),
                    w0.ring_id(),
                    if w0.first() { " FIRST" } else { "" },
                    if w0.last() { " LAST" } else { "" },
                    if w0.dmb() { " DMB" } else { "" },
                    if w0.sow() { " SOW" } else { "" },
                    if q.dir == Dir::M2s { "src" } else { "dst" },
                    d.buf_ptr()
                ));
            }
            Err(e) => out.push_str(&format!("  [{idx:>4}] {addr:#x}: {e}\n")),
        }
    }
    if posted + pending > show {
        out.push_str(&format!("  … {} more\n", posted + pending - show));
    }
    out
}

fn reg(device: &Device, region: &str, name: &str) -> Option<u32> {
    let id = device.map().by_name(region)?;
    let block = device.block_of(id)?;
    let off = block.find(name, None)?;
    let t = device
        .reg_target(device.map().region(id).base + off)
        .ok()??;
    device.peek_reg(t)
}

/// Every register of a region with its value (non-zero array elements only
/// for arrays), fields decoded for registers away from reset.
pub fn show_regs(device: &Device, region: &str) -> String {
    let Some(id) = device.map().by_name(region) else {
        return format!("unknown region `{region}`\n");
    };
    let Some(block) = device.block_of(id) else {
        return format!("{region} has no registers\n");
    };
    let base = device.map().region(id).base;
    let mut out = format!("registers of {region} ({}):\n", block.block());
    for r in block.elements() {
        let Ok(Some(t)) = device.reg_target(base + r.offset()) else {
            continue;
        };
        let v = device.peek_reg(t).unwrap_or(0);
        let reset = block.reset_values().get(r.slot()).copied().unwrap_or(0);
        if r.index().is_some() && v == reset {
            continue;
        }
        let fields: Vec<String> = if v != reset {
            r.spec()
                .decode(v)
                .into_iter()
                .filter(|(_, fv)| *fv != 0)
                .map(|(n, fv)| format!("{n}={fv:#x}"))
                .collect()
        } else {
            Vec::new()
        };
        out.push_str(&format!(
            "  {:#06x} {:<24} {v:#010x}{}\n",
            r.offset(),
            r.name(),
            if fields.is_empty() {
                String::new()
            } else {
                format!("  {}", fields.join(" "))
            }
        ));
    }
    out
}

fn show_mem(device: &Device, addr: &str, len: &str) -> String {
    let addr = match trace_format::parse_addr(addr, "<debugger>")
        .map_err(|e| e.message)
        .and_then(|a| soc::resolve(device, &a).map_err(|e| e.message))
    {
        Ok(r) => r.addr,
        Err(e) => return format!("{e}\n"),
    };
    let Ok(len) = soc_map::parse_u64(len) else {
        return format!("`{len}` is not a length\n");
    };
    let len = len.min(4096) as usize;
    let mut buf = vec![0u8; len];
    match device.read_bytes(addr, &mut buf) {
        Ok(()) => format!("{}\n", soc::exec::hexdump(addr, &buf)),
        Err(e) => format!("{e}\n"),
    }
}
