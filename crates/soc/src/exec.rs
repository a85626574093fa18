//! The trace executor: runs a parsed v1 trace against a [`Device`]
//! (`docs/trace-format.md` §3). Names are resolved before anything runs, so an
//! unknown name costs nothing; a fault while running is reported at its
//! statement and the run goes on, so nothing already computed is lost.

use std::collections::BTreeMap;
use std::io;

use serde::Serialize;
use sha2::{Digest, Sha256};
use soc_map::Hex;
use trace_format::{ExpectCheck, FillContent, ParseError, Span, Statement, StatementKind, Trace};

use crate::device::{Device, DeviceEvent, RunStop};
use crate::fault::BusFault;
use crate::resolve::{ResolveError, Resolved, resolve};
use sim_core::Cycle;
use trace_format::{AddrRole, Compare, DescFields, QueueRef, RunMode};
use udma::{Dir, EngineEvent, EventKind, UnitBlock};

/// Largest dump printed to the run output; larger dumps need `file=`.
pub const MAX_PRINTED_DUMP_BYTES: u64 = 64 * 1024;
/// Chunk size for fills, hashes and loads of large ranges.
const CHUNK_BYTES: u64 = 1 << 20;

/// Where `load` reads and `dump file=` writes. The CLI resolves paths
/// against the trace's directory; tests can keep files in memory.
pub trait TraceFiles {
    /// Reads a whole file.
    fn read(&mut self, path: &str) -> io::Result<Vec<u8>>;
    /// Creates or replaces a file.
    fn write(&mut self, path: &str, data: &[u8]) -> io::Result<()>;
}

/// The outcome of one statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Done; any expectation held.
    Ok,
    /// An expectation did not hold.
    Failed,
    /// Bad input or a fault: the statement did not complete.
    Error,
}

/// What one statement did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRecord {
    /// Trace line.
    pub line: u32,
    /// Directive keyword.
    pub directive: &'static str,
    /// Resolved address (the ring slot for `desc`, the doorbell register for
    /// `doorbell`; 0 for `run`).
    pub address: Hex,
    /// Simulated cycle after the statement.
    pub cycle: u64,
    /// What happened, one line (dumps: several).
    pub text: String,
    /// Outcome.
    pub status: Status,
    /// Device side effects of this statement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<DeviceEvent>,
}

/// Figures of one queue (one engine, one queue index, both directions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSummary {
    /// Engine id.
    pub engine: u16,
    /// Queue index.
    pub queue: u8,
    /// Packets moved.
    pub packets: u64,
    /// TX (M2S) descriptors completed.
    pub tx_descriptors: u64,
    /// RX (S2M) descriptors completed.
    pub rx_descriptors: u64,
    /// Payload bytes written.
    pub bytes: u64,
    /// Data-path cycles.
    pub busy_cycles: u64,
    /// First packet start.
    pub first_cycle: Option<u64>,
    /// Last packet landed.
    pub last_cycle: Option<u64>,
    /// bytes / (last − first) in GB/s (bytes per ns).
    pub bandwidth_gbps: f64,
}

/// The run's totals (DESIGN §6).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Simulated cycles at the end.
    pub cycles: u64,
    /// Simulated time in ns.
    pub sim_ns: f64,
    /// DMA clock.
    pub clock_ghz: f64,
    /// Payload bytes moved by all engines.
    pub bytes: u64,
    /// Descriptors completed (TX + RX).
    pub descriptors: u64,
    /// TX descriptors completed.
    pub tx_descriptors: u64,
    /// RX descriptors completed.
    pub rx_descriptors: u64,
    /// Packets moved.
    pub packets: u64,
    /// Per queue, keyed `engN.qQ`.
    pub queues: BTreeMap<String, QueueSummary>,
    /// Per core with Q7 firmware, keyed `tpbN`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub firmware: BTreeMap<String, CoreSummary>,
}

/// What one core's firmware did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreSummary {
    /// Words still in the instruction queue (gated or waiting for room).
    pub queued: usize,
    /// Words issued whose data is still moving.
    pub in_flight: usize,
    /// Per instruction kind.
    pub kinds: BTreeMap<String, q7::KindStats>,
}

impl Summary {
    /// The summary of a device's state.
    pub fn of(device: &Device) -> Self {
        let t = device.timing();
        let mut s = Summary {
            cycles: device.now().0,
            sim_ns: t.ns(device.now().0),
            clock_ghz: t.clock_ghz,
            bytes: 0,
            descriptors: 0,
            tx_descriptors: 0,
            rx_descriptors: 0,
            packets: 0,
            queues: BTreeMap::new(),
            firmware: BTreeMap::new(),
        };
        for c in device
            .cores()
            .filter(|c| !c.stats().is_empty() || !c.is_idle())
        {
            s.firmware.insert(
                format!("tpb{}", c.tpb()),
                CoreSummary {
                    queued: c.queued(),
                    in_flight: c.in_flight(),
                    kinds: c
                        .stats()
                        .iter()
                        .map(|(k, v)| ((*k).to_string(), *v))
                        .collect(),
                },
            );
        }
        for (engine, queue, st) in device.queue_stats() {
            s.bytes += st.bytes;
            s.tx_descriptors += st.tx_descs;
            s.rx_descriptors += st.rx_descs;
            s.packets += st.packets;
            let span_ns = match (st.first_start, st.last_done) {
                (Some(a), Some(b)) if b > a => t.ns(b - a),
                _ => 0.0,
            };
            s.queues.insert(
                format!("eng{engine}.q{queue}"),
                QueueSummary {
                    engine,
                    queue,
                    packets: st.packets,
                    tx_descriptors: st.tx_descs,
                    rx_descriptors: st.rx_descs,
                    bytes: st.bytes,
                    busy_cycles: st.busy_cycles,
                    first_cycle: st.first_start,
                    last_cycle: st.last_done,
                    bandwidth_gbps: if span_ns > 0.0 {
                        (st.bytes as f64 / span_ns * 1000.0).round() / 1000.0
                    } else {
                        0.0
                    },
                },
            );
        }
        s.descriptors = s.tx_descriptors + s.rx_descriptors;
        s
    }
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// Trace file name as given.
    pub trace: String,
    /// Statements executed.
    pub statements: usize,
    /// Expectations that held.
    pub expectations_passed: usize,
    /// Expectations that failed.
    pub expectations_failed: usize,
    /// Totals after the run (flattened into the report's JSON: `cycles`,
    /// `sim_ns`, `bytes`, `descriptors`, `queues`, …).
    #[serde(flatten)]
    pub summary: Summary,
    /// Per-statement records.
    pub steps: Vec<StepRecord>,
    /// Failed expectations, `file:line:column: message`.
    pub failures: Vec<ParseError>,
    /// Bad input and faults met while running.
    pub errors: Vec<ParseError>,
}

impl RunReport {
    /// 0 all expectations held, 1 one failed, 2 bad input (DESIGN §6).
    pub fn exit_code(&self) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if !self.failures.is_empty() {
            1
        } else {
            0
        }
    }

    /// Human-readable run output.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            let mark = match s.status {
                Status::Ok => "",
                Status::Failed => "FAILED ",
                Status::Error => "ERROR ",
            };
            out.push_str(&format!("{}:{}: {mark}{}\n", self.trace, s.line, s.text));
            for e in &s.events {
                out.push_str(&format!("    {}\n", event_text(e)));
            }
        }
        for f in &self.failures {
            out.push_str(&format!("expectation failed: {f}\n"));
        }
        // The step line already showed a multi-line message in full.
        for e in &self.errors {
            let text = e.to_string();
            out.push_str(&format!("error: {}\n", text.lines().next().unwrap_or("")));
        }
        let sm = &self.summary;
        if sm.packets > 0 || sm.cycles > 0 {
            out.push_str(&format!(
                "simulated {} cycles ({:.1} ns): {} bytes, {} packets, {} descriptors\n",
                sm.cycles, sm.sim_ns, sm.bytes, sm.packets, sm.descriptors
            ));
            for (name, q) in &sm.queues {
                out.push_str(&format!(
                    "  {name}: {} packets, {} bytes, {} TX + {} RX descriptors, cycles {}..{}, {} GB/s\n",
                    q.packets,
                    q.bytes,
                    q.tx_descriptors,
                    q.rx_descriptors,
                    q.first_cycle.unwrap_or(0),
                    q.last_cycle.unwrap_or(0),
                    q.bandwidth_gbps
                ));
            }
        }
        for (core, c) in &sm.firmware {
            for (kind, k) in &c.kinds {
                out.push_str(&format!(
                    "  {core} firmware {kind}: {} issued, {} rejected, {} descriptors, {} bytes\n",
                    k.issued, k.rejected, k.descriptors, k.bytes
                ));
            }
            if c.queued > 0 || c.in_flight > 0 {
                out.push_str(&format!(
                    "  {core} firmware: {} words still queued, {} in flight\n",
                    c.queued, c.in_flight
                ));
            }
        }
        out.push_str(&format!(
            "{} statements, {} expectations passed, {} failed, {} errors\n",
            self.statements,
            self.expectations_passed,
            self.expectations_failed,
            self.errors.len()
        ));
        out
    }
}

/// One device event as a line of text.
pub fn event_text(e: &DeviceEvent) -> String {
    match e {
        DeviceEvent::Doorbell {
            region,
            register,
            increment,
        } => format!("doorbell {region}.{register} +{increment}"),
        DeviceEvent::Pulse {
            region,
            register,
            bits,
        } => format!("pulse {region}.{register} bits {bits}"),
        DeviceEvent::Semaphore {
            region,
            index,
            old,
            new,
        } => format!("semaphore {region}[{index}] {old} -> {new}"),
        DeviceEvent::Engine(e) => engine_event_text(e),
        DeviceEvent::Firmware(e) => fw_event_text(e),
        DeviceEvent::IgnoredWrite {
            region,
            register,
            written,
            ignored,
            read_only,
        } => {
            if *read_only {
                format!("ignored write of {written} to read-only {region}.{register}")
            } else {
                format!(
                    "write of {written} to {region}.{register}: bits {ignored} are read-only or reserved"
                )
            }
        }
    }
}

/// One firmware event as a line of text.
pub fn fw_event_text(e: &q7::FwEvent) -> String {
    use q7::FwEventKind as K;
    let head = format!(
        "{} tpb{} inst#{} ({})",
        e.at, e.tpb, e.inst.seq, e.inst.source
    );
    match &e.kind {
        K::Waiting {
            sem,
            mode,
            threshold,
            value,
        } => format!("{head} waits: {mode} sem[{sem}] = {value}, needs {threshold}"),
        K::Generating {
            kind,
            engines,
            descriptors,
            bytes,
            cycles,
        } => format!(
            "{head} {kind}: {descriptors} descriptors on {engines} engines, {bytes} bytes, generation {cycles} cycles"
        ),
        K::MicroOp { text } => format!("{head} {text}"),
        K::Generated {
            engine,
            queue,
            count,
            bytes,
        } => format!(
            "{head} generated eng{engine}.q{queue} {count} descriptors per direction, {bytes} bytes (waiting for RDMA_DESC_START)"
        ),
        K::RingsInit {
            engine,
            queue,
            ring_descs,
            m2s_ring,
            s2m_ring,
        } => format!(
            "{head} DGE context init eng{engine}.q{queue}: {ring_descs} descriptors, tx.base {m2s_ring}, rx.base {s2m_ring}"
        ),
        K::Doorbell {
            engine,
            queue,
            m2s_first,
            s2m_first,
            count,
            m2s_count,
            bytes,
        } => {
            if count == m2s_count {
                format!(
                    "{head} doorbell eng{engine}.q{queue} +{count} (m2s[{m2s_first}..], s2m[{s2m_first}..]) {bytes} bytes"
                )
            } else {
                format!(
                    "{head} doorbell eng{engine}.q{queue} s2m +{count}, m2s +{m2s_count} (m2s[{m2s_first}..], s2m[{s2m_first}..]) {bytes} bytes"
                )
            }
        }
        K::OutOfBounds {
            side,
            addr,
            len_bytes,
            reg,
            limit,
            notify,
        } => format!(
            "{head} OOB {side} {addr} len {len_bytes} > REG[{reg}] = {limit}{}",
            if *notify {
                " (notified)"
            } else {
                " (notification disabled)"
            }
        ),
        K::IndexOutOfBounds {
            leg,
            position,
            index,
            bound,
            error,
        } => format!(
            "{head} index OOB {leg}[{position}] = {index} >= {bound}: element skipped{}",
            if *error { ", error notification" } else { "" }
        ),
        K::DuplicateScatter {
            first,
            later,
            index,
        } => format!(
            "{head} scatter race: dst_idx[{first}] and dst_idx[{later}] both = {index} without non_unique_dst_idx (the later write in simulated time wins)"
        ),
        K::MethodSet { method, outcome } => {
            format!("{head} neuron_set_memcpy_method({method}): {outcome}")
        }
        K::InlineInit {
            engine,
            queue,
            rings,
        } => format!("{head} init_dma_queue: eng{engine}.q{queue} armed; {rings}"),
        K::InlineChunk {
            engine,
            queue,
            slot,
            tag,
            chunk_bytes,
            word0,
            anomaly,
        } => format!(
            "{head} dma_data_transfer chunk {chunk_bytes} bytes in eng{engine}.q{queue} slot {slot}, tag {tag}, TX word0 {word0}; both doorbells rung; word0 anomaly: {anomaly}"
        ),
        K::MemcpyDone { method, bytes } => {
            format!("{head} neuron_memcpy done: {bytes} bytes by {method}")
        }
        K::Icache { text } => format!("{head} iDMA {text}"),
        K::MailboxGate {
            priority_class,
            mailboxes,
            engine_mask,
        } => format!(
            "{head} DGE mailbox gate: priority class {priority_class} above {mailboxes}: engines {engine_mask}"
        ),
        K::Rejected { reason } => format!("{head} REJECTED: {reason}"),
        K::Done { update } => match update {
            Some(u) => format!("{head} done; {u}"),
            None => format!("{head} done"),
        },
        K::ReadDone { update } => format!("{head} all data read; {update}"),
    }
}

fn located(file: &str, span: Span, message: String) -> ParseError {
    ParseError {
        file: file.to_string(),
        line: span.line,
        column: span.column,
        len: span.len,
        message,
    }
}

/// A queue named by `desc` / `doorbell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueTarget {
    /// Region name, e.g. `eng0.m2s.q3`.
    pub region: String,
    /// Engine id.
    pub engine: u16,
    /// Direction.
    pub dir: Dir,
    /// Queue index.
    pub queue: u8,
    /// Queue block base address.
    pub base: u64,
}

/// What a statement's names resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linked {
    /// An address (v1 directives, `wait`).
    Addr(Resolved),
    /// `desc`: the queue, and the resolved data/second-buffer addresses.
    Desc {
        /// The queue.
        queue: QueueTarget,
        /// `src=`/`dst=`/`addr=`.
        addr: Option<u64>,
        /// `buf2=`.
        buf2: Option<u64>,
    },
    /// `doorbell`.
    Doorbell(QueueTarget),
    /// `inst`: the core and the decoded word.
    Inst {
        /// TPB index.
        core: u8,
        /// The word.
        word: Box<dma_abi::inst::InstWord>,
    },
    /// `run`.
    Run,
    /// A host operation (v3).
    Host,
    /// A statement naming `@tensor` addresses: linked when it runs, once
    /// the host has allocated the tensors.
    Deferred,
}

impl Linked {
    fn addr(&self) -> u64 {
        match self {
            Linked::Addr(r) => r.addr,
            Linked::Desc { queue, .. } | Linked::Doorbell(queue) => queue.base,
            Linked::Run | Linked::Inst { .. } | Linked::Host | Linked::Deferred => 0,
        }
    }
}

/// What a host operation (v3) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostOutcome {
    /// Done; the text for the run output.
    Done(String),
    /// A check: its text and whether it held.
    Checked {
        /// What was checked.
        text: String,
        /// Whether it held.
        held: bool,
    },
}

/// The host runtime behind the v3 statements: the runtime's allocator and
/// the kernel driver, which owns the device. Implemented above the device
/// layers (DESIGN §3); [`run_linked`] on a bare device has none.
pub trait HostRuntime {
    /// The device.
    fn device(&mut self) -> &mut Device;
    /// The device address of tensor `name` (its pa plus align offset), if
    /// allocated.
    fn tensor_addr(&self, name: &str) -> Option<u64>;
    /// Runs one host operation. With `status` (the trace's `status=S`)
    /// the call's NRT status is an expectation: the outcome is a check of
    /// it, whether the call succeeded or not.
    ///
    /// # Errors
    ///
    /// A message for the run output (the run goes on).
    fn host_op(
        &mut self,
        op: &trace_format::HostOp,
        status: Option<&str>,
        files: &mut dyn TraceFiles,
    ) -> Result<HostOutcome, String>;
}

/// A bare device: host operations are errors.
struct DeviceOnly<'a>(&'a mut Device);

impl HostRuntime for DeviceOnly<'_> {
    fn device(&mut self) -> &mut Device {
        self.0
    }
    fn tensor_addr(&self, _name: &str) -> Option<u64> {
        None
    }
    fn host_op(
        &mut self,
        op: &trace_format::HostOp,
        _status: Option<&str>,
        _files: &mut dyn TraceFiles,
    ) -> Result<HostOutcome, String> {
        Err(format!(
            "`{}` is a host operation (trace language v3): it needs the host runtime, which `neuron-sim run` provides",
            op.directive()
        ))
    }
}

fn resolve_queue(device: &Device, q: &QueueRef) -> Result<QueueTarget, ResolveError> {
    let name: Vec<&str> = q.path.iter().map(|c| c.name.as_str()).collect();
    let name = name.join(".");
    let err = |message: String| ResolveError {
        span: q.span,
        message,
    };
    if let Some(c) = q.path.iter().find(|c| c.index.is_some()) {
        return Err(ResolveError {
            span: c.span,
            message: format!(
                "`{}`: a queue path takes no index (the ring slot goes last: eng0.m2s.q0[5])",
                c.name
            ),
        });
    }
    let Some(region) = device.map().by_name(&name) else {
        return Err(err(format!(
            "unknown queue `{name}` (expected engN.m2s.qQ or engN.s2m.qQ, N < 132, Q < 16)"
        )));
    };
    let parsed = name
        .strip_prefix("eng")
        .and_then(|r| r.split_once('.'))
        .and_then(|(n, path)| Some((n.parse::<u16>().ok()?, UnitBlock::from_suffix(path)?)));
    match parsed {
        Some((engine, UnitBlock::M2sQ(queue))) => Ok(QueueTarget {
            region: name,
            engine,
            dir: Dir::M2s,
            queue,
            base: device.map().region(region).base,
        }),
        Some((engine, UnitBlock::S2mQ(queue))) => Ok(QueueTarget {
            region: name,
            engine,
            dir: Dir::S2m,
            queue,
            base: device.map().region(region).base,
        }),
        _ => Err(err(format!(
            "`{name}` is not a DMA queue (expected engN.m2s.qQ or engN.s2m.qQ)"
        ))),
    }
}

fn link_one(device: &Device, kind: &StatementKind) -> Result<Linked, ResolveError> {
    let inst_names_tensor = matches!(kind, StatementKind::Inst { text, .. } if text.contains('@'));
    if inst_names_tensor || kind.addrs().iter().any(|a| a.tensor().is_some()) {
        return Ok(Linked::Deferred);
    }
    match kind {
        StatementKind::Host { .. } => Ok(Linked::Host),
        StatementKind::Desc { queue, fields } => {
            let queue = resolve_queue(device, queue)?;
            let addr = match &fields.addr {
                Some(a) => {
                    match (a.role, queue.dir) {
                        (AddrRole::Src, Dir::S2m) | (AddrRole::Dst, Dir::M2s) => {
                            return Err(ResolveError {
                                span: a.addr.span,
                                message: format!(
                                    "`{}` is an {} queue: use {} (src= names an M2S source, dst= an S2M destination)",
                                    queue.region,
                                    queue.dir.name().to_uppercase(),
                                    if queue.dir == Dir::M2s {
                                        "src="
                                    } else {
                                        "dst="
                                    }
                                ),
                            });
                        }
                        _ => {}
                    }
                    Some(resolve(device, &a.addr)?.addr)
                }
                None => None,
            };
            let buf2 = match &fields.buf2 {
                Some(b) => Some(resolve(device, b)?.addr),
                None => None,
            };
            Ok(Linked::Desc { queue, addr, buf2 })
        }
        StatementKind::Doorbell { queue, .. } => {
            Ok(Linked::Doorbell(resolve_queue(device, queue)?))
        }
        StatementKind::Run { .. } => Ok(Linked::Run),
        StatementKind::Inst {
            core,
            text,
            text_column,
        } => {
            // The word is checked here so a bad field is reported with the
            // other name errors, before anything runs.
            let at = |column: usize, len: u32| Span {
                line: 0,
                column: text_column + column.saturating_sub(1) as u32,
                len,
            };
            match dma_abi::inst::parse_line(text) {
                Ok(Some(word)) => {
                    if let Err(e) = word.encode() {
                        return Err(ResolveError {
                            span: at(1, text.chars().count() as u32),
                            message: e.to_string(),
                        });
                    }
                    Ok(Linked::Inst {
                        core: *core,
                        word: Box::new(word),
                    })
                }
                Ok(None) => Err(ResolveError {
                    span: at(1, 1),
                    message: "inst: the instruction is missing".into(),
                }),
                Err(e) => Err(ResolveError {
                    span: at(e.column, 1),
                    message: e.message,
                }),
            }
        }
        other => match other.try_addr() {
            Some(a) => Ok(Linked::Addr(resolve(device, a)?)),
            None => Ok(Linked::Run),
        },
    }
}

/// Resolves every name of a parsed trace; all errors, or the targets.
pub fn link(device: &Device, trace: &Trace, file: &str) -> Result<Vec<Linked>, Vec<ParseError>> {
    let mut out = Vec::with_capacity(trace.statements.len());
    let mut errors = Vec::new();
    for s in &trace.statements {
        match link_one(device, &s.kind) {
            Ok(r) => out.push(r),
            Err(mut e) => {
                if e.span.line == 0 {
                    e.span.line = s.span.line;
                }
                errors.push(located(file, e.span, e.message));
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Parses, links and runs a trace. `Err` holds parse or name errors (nothing
/// ran); `Ok` holds the report (which may contain failures and faults).
pub fn run_source(
    device: &mut Device,
    source: &str,
    file: &str,
    files: &mut dyn TraceFiles,
) -> Result<RunReport, Vec<ParseError>> {
    let trace = trace_format::parse(source, file)?;
    let linked = link(device, &trace, file)?;
    Ok(run_linked(
        device,
        &trace,
        &linked,
        file,
        files,
        &mut NoHooks,
    ))
}

/// What a hook asks the executor to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop the run here (statements after this are not executed).
    Quit,
}

/// Callbacks for debuggers: before each statement, and after every engine
/// step while `run`/`wait` advance time.
pub trait ExecHooks {
    /// Before statement `index` runs.
    fn before(
        &mut self,
        _index: usize,
        _stmt: &Statement,
        _linked: &Linked,
        _device: &mut Device,
        _executor: &Executor,
    ) -> Control {
        Control::Continue
    }

    /// After each engine step during `run`/`wait`.
    fn during_run(&mut self, _device: &mut Device) -> Control {
        Control::Continue
    }
}

/// No hooks.
#[derive(Debug)]
pub struct NoHooks;

impl ExecHooks for NoHooks {}

/// Executor state that outlives a statement: the software producer index of
/// each queue (like a driver's `next_desc_idx`).
#[derive(Debug, Default)]
pub struct Executor {
    /// (engine, direction, queue) → descriptors placed since the last doorbell.
    pending: BTreeMap<(u16, Dir, u8), u32>,
    /// (engine, direction, queue) → the software producer slot and the ring
    /// id the hardware will expect there, like a driver's `next_desc_idx`
    /// (driver-facts §3.6, §3.8). Seeded from the hardware tail on first use
    /// and forgotten when the trace writes the queue's ring registers or
    /// Q_SW_CTRL.
    next: BTreeMap<(u16, Dir, u8), (u32, u8)>,
}

impl Executor {
    /// Forgets the software producer state of a queue (its ring was
    /// reprogrammed or reset).
    fn forget(&mut self, q: &QueueTarget) {
        let key = (q.engine, q.dir, q.queue);
        self.next.remove(&key);
        self.pending.remove(&key);
    }

    /// Descriptors placed by `desc` on a queue since its last doorbell.
    pub fn pending(&self, q: &QueueTarget) -> u32 {
        self.pending
            .get(&(q.engine, q.dir, q.queue))
            .copied()
            .unwrap_or(0)
    }
}

/// Default `wait` timeout in cycles (docs/trace-format.md).
pub const DEFAULT_WAIT_TIMEOUT_CYCLES: u64 = 10_000_000;

/// Runs a linked trace on a bare device (host operations are errors).
pub fn run_linked(
    device: &mut Device,
    trace: &Trace,
    linked: &[Linked],
    file: &str,
    files: &mut dyn TraceFiles,
    hooks: &mut dyn ExecHooks,
) -> RunReport {
    run_linked_host(&mut DeviceOnly(device), trace, linked, file, files, hooks)
}

/// Substitutes the `@tensor` bases of a statement by the tensors'
/// addresses.
fn bind_tensors(host: &dyn HostRuntime, s: &Statement) -> Result<Statement, StepError> {
    let mut s = s.clone();
    for a in s.kind.addrs_mut() {
        if let Some(name) = a.tensor().map(str::to_string) {
            let addr = host.tensor_addr(&name).ok_or_else(|| {
                (
                    Some(a.span),
                    format!("tensor @{name} is not allocated (alloc {name} … first)"),
                )
            })?;
            a.base = trace_format::AddrBase::Literal(addr);
        }
    }
    // An instruction word names tensors inside its text (`imm:@w`): the
    // name becomes the address, in the word's own number syntax.
    if let StatementKind::Inst { text, .. } = &mut s.kind {
        *text = bind_inst_text(host, text).map_err(|m| (Some(s.span), m))?;
    }
    Ok(s)
}

/// Replaces every `@name` in an instruction's text by the tensor's address
/// (`0x…`); the rest of the text is unchanged.
fn bind_inst_text(host: &dyn HostRuntime, text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        if name.is_empty() {
            return Err("expected a tensor name after '@' in the instruction".into());
        }
        let addr = host
            .tensor_addr(name)
            .ok_or_else(|| format!("tensor @{name} is not allocated (alloc {name} … first)"))?;
        out.push_str(&format!("{addr:#x}"));
        rest = &tail[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Runs a linked trace with a host runtime (trace language v3).
pub fn run_linked_host(
    host: &mut dyn HostRuntime,
    trace: &Trace,
    linked: &[Linked],
    file: &str,
    files: &mut dyn TraceFiles,
    hooks: &mut dyn ExecHooks,
) -> RunReport {
    let mut report = RunReport {
        trace: file.to_string(),
        statements: 0,
        expectations_passed: 0,
        expectations_failed: 0,
        summary: Summary::of(host.device()),
        steps: Vec::new(),
        failures: Vec::new(),
        errors: Vec::new(),
    };
    if let Err(e) = host.device().boot_firmware() {
        report.errors.push(located(
            file,
            Span::new(1, 1, 0),
            format!("firmware boot: {}", e.0),
        ));
    }
    // Register accesses of trace statements are the trace's (the driver and
    // the firmware name themselves while they run).
    let prev_master = host.device().set_bus_master(crate::record::Master::Trace);
    let mut exec = Executor::default();
    for (i, (s0, r0)) in trace.statements.iter().zip(linked).enumerate() {
        // Deferred statements are bound and linked now.
        let bound = match r0 {
            Linked::Deferred => bind_tensors(&*host, s0).and_then(|b| {
                let l = link_one(host.device(), &b.kind).map_err(|e| (Some(e.span), e.message))?;
                Ok((b, l))
            }),
            _ => Ok((s0.clone(), r0.clone())),
        };
        let (s, r) = match &bound {
            Ok((s, r)) => (s, r),
            Err(_) => (s0, r0),
        };
        if hooks.before(i, s, r, host.device(), &exec) == Control::Quit {
            break;
        }
        let result = match (&bound, &s.kind) {
            (Err(e), _) => Err(e.clone()),
            (Ok(_), StatementKind::Host { op, status }) => match host.host_op(op, *status, files) {
                Ok(HostOutcome::Done(t)) => Ok(Outcome::Done(t)),
                Ok(HostOutcome::Checked { text, held }) => Ok(Outcome::Expectation { text, held }),
                Err(m) => Err((None, m)),
            },
            (Ok(_), _) => step(host.device(), &mut exec, s, r, files, hooks),
        };
        let device = host.device();
        let (status, text) = match result {
            Ok(Outcome::Done(text)) => (Status::Ok, text),
            Ok(Outcome::Expectation { text, held: true }) => {
                report.expectations_passed += 1;
                (Status::Ok, text)
            }
            Ok(Outcome::Expectation { text, held: false }) => {
                report.expectations_failed += 1;
                report.failures.push(located(file, s.span, text.clone()));
                (Status::Failed, text)
            }
            Err((span, message)) => {
                report
                    .errors
                    .push(located(file, span.unwrap_or(s.span), message.clone()));
                (Status::Error, message)
            }
        };
        report.statements += 1;
        let quit = text == QUIT_MARK;
        report.steps.push(StepRecord {
            line: s.span.line,
            directive: s.kind.directive(),
            address: Hex(r.addr()),
            cycle: device.now().0,
            text,
            status,
            events: device.take_events(),
        });
        if quit {
            break;
        }
    }
    host.device().set_bus_master(prev_master);
    report.summary = Summary::of(host.device());
    report
}

/// The text of a statement the debugger quit during.
const QUIT_MARK: &str = "(quit)";

enum Outcome {
    Done(String),
    Expectation { text: String, held: bool },
}

type StepError = (Option<Span>, String);

fn name_of(s: &Statement, r: &Linked) -> String {
    let Some(a) = s.kind.try_addr() else {
        return match r {
            Linked::Desc { queue, .. } | Linked::Doorbell(queue) => queue.region.clone(),
            _ => String::new(),
        };
    };
    match a.literal() {
        Some(_) if a.offsets.is_empty() => format!("{:#x}", r.addr()),
        _ => format!("{a} ({:#x})", r.addr()),
    }
}

fn fault(e: BusFault) -> StepError {
    (None, e.to_string())
}

/// A queue by region name (`eng0.m2s.q3`).
pub fn queue_target(device: &Device, name: &str) -> Option<QueueTarget> {
    let region = device.map().by_name(name)?;
    let (n, path) = name.strip_prefix("eng")?.split_once('.')?;
    let engine: u16 = n.parse().ok()?;
    let (dir, queue) = match UnitBlock::from_suffix(path)? {
        UnitBlock::M2sQ(q) => (Dir::M2s, q),
        UnitBlock::S2mQ(q) => (Dir::S2m, q),
        _ => return None,
    };
    Some(QueueTarget {
        region: name.to_string(),
        engine,
        dir,
        queue,
        base: device.map().region(region).base,
    })
}

/// Ring base, length, tail offset and tail ring id of a queue, from its CSRs.
pub fn ring_of(device: &Device, q: &QueueTarget) -> Option<(u64, u32, u32, u8)> {
    let map = device.catalog().block(if q.dir == Dir::M2s {
        "udma_m2s_q"
    } else {
        "udma_s2m_q"
    })?;
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    let reg = |name: &str| -> Option<u32> {
        let off = map.find(&format!("{p}{name}"), None)?;
        let t = device.reg_target(q.base + off).ok()??;
        device.peek_reg(t)
    };
    let lo = reg("DRBP_LOW")? & 0xFFFF_FFC0;
    let hi = reg("DRBP_HIGH")?;
    let len = reg("DRL")? & 0xFF_FFFF;
    let tail = reg("DRTP")?;
    Some((
        (u64::from(hi) << 32) | u64::from(lo),
        len,
        tail & 0xFF_FFFF,
        (tail >> 30) as u8,
    ))
}

fn build_descriptor(
    q: &QueueTarget,
    fields: &DescFields,
    addr: Option<u64>,
    buf2: Option<u64>,
    ring_id: u8,
) -> Result<[u8; 16], String> {
    if let Some(raw) = fields.raw {
        return Ok(raw);
    }
    let len = fields.len.ok_or("desc: len= is required (or raw=)")?;
    let f = &fields.flags;
    let flags = dma_abi::Flags {
        first: f.first,
        last: f.last,
        int_en: f.int,
        dmb: f.dmb,
        sow: f.sow,
        concat: f.concat,
        meta: f.meta,
        ring_id: fields.ring_id.unwrap_or(ring_id),
    };
    let w0 = dma_abi::LenCtrl::from_raw(0)
        .with_len_bytes(len)
        .map_err(|e| format!("desc: len={len}: {e}"))?
        .with_flags(flags);
    let word1 = match q.dir {
        Dir::S2m => buf2.map_or(0, |b| (b & 0xFFFF_FFFF) as u32),
        Dir::M2s => match fields.word1 {
            Some(w) => w,
            None => {
                let mut w = dma_abi::CmeWord::DEFAULT_COPY;
                if let Some(op) = fields.op {
                    w = w.with_cme_type(cme_type(op));
                }
                if let Some(iv) = fields.crc_iv {
                    w = w.with_cached_crc_iv_index(iv);
                }
                w = w
                    .with_write_barrier(f.write_barrier)
                    .with_send_crc(f.send_crc)
                    .with_store_crc_result(f.store_crc)
                    .with_store_source_crc(f.store_source_crc)
                    .with_validate_crc(f.validate_crc)
                    .with_use_stored_crc_iv(f.use_stored_iv);
                if f.no_copy {
                    w = w.with_copy_src_data(false);
                }
                if let Some(c) = fields.cce {
                    let code = |d: Option<trace_format::Dtype>| d.map_or(0xA, dtype_code) & 0xF;
                    if let Some(cce) =
                        w.with_cce(cce_type(c), code(fields.in_dtype), code(fields.out_dtype))
                    {
                        w = cce;
                    }
                }
                w.raw()
            }
        },
    };
    let d = dma_abi::Descriptor::new(w0, word1, addr.unwrap_or(0));
    Ok(d.to_bytes())
}

fn cme_type(op: trace_format::CmeOp) -> dma_abi::CmeType {
    use dma_abi::CmeType as C;
    use trace_format::CmeOp as T;
    match op {
        T::Copy => C::Copy,
        T::Crc32 => C::Crc32,
        T::Crc32c => C::Crc32c,
        T::Cksum16 => C::Cksum16,
        T::Cksum32 => C::Cksum32,
        T::Crc16 => C::Crc16,
        T::Adler32 => C::Cksum32Adler,
        T::Crc8 => C::Crc8,
    }
}

fn cce_type(op: trace_format::CceOp) -> dma_abi::CceType {
    use dma_abi::CceType as C;
    use trace_format::CceOp as T;
    match op {
        T::Add => C::Add,
        T::Fma => C::Fma,
        T::Max => C::Max,
        T::Min => C::Min,
    }
}

fn dtype_code(d: trace_format::Dtype) -> u8 {
    use trace_format::Dtype as T;
    match d {
        T::Int8 => 0x2,
        T::Uint8 => 0x3,
        T::Int16 => 0x4,
        T::Uint16 => 0x5,
        T::Uint32 => 0x9,
        T::Bf16 => 0x6,
        T::Fp16 => 0x7,
        T::Int32 => 0x8,
        T::Fp32 => 0xA,
        T::Fp32r => 0xB,
        T::Fp8e3 => 0xD,
        T::Fp8e4 => 0xE,
        T::Fp8e5 => 0xF,
        T::Fp4 => 0x10,
    }
}

/// Places a descriptor (the `desc` directive).
fn place_desc(
    device: &mut Device,
    exec: &mut Executor,
    q: &QueueTarget,
    slot: Option<u64>,
    fields: &DescFields,
    addr: Option<u64>,
    buf2: Option<u64>,
) -> Result<String, StepError> {
    let (base, len, tail, tail_id) = ring_of(device, q).ok_or((
        None,
        format!("{}: cannot read the ring registers", q.region),
    ))?;
    let p = if q.dir == Dir::M2s { "T" } else { "R" };
    if len == 0 {
        return Err((
            None,
            format!(
                "{}: ring not configured ({p}DRL = 0): program {p}DRBP_LOW/{p}DRBP_HIGH/{p}DRL first",
                q.region
            ),
        ));
    }
    let key = (q.engine, q.dir, q.queue);
    let pending = exec.pending.get(&key).copied().unwrap_or(0);
    let (idx, ring_id) = match slot {
        Some(s) => {
            if s >= u64::from(len) {
                return Err((
                    None,
                    format!(
                        "{}[{s}]: slot is outside the ring of {len} descriptors",
                        q.region
                    ),
                ));
            }
            let idx = s as u32;
            // The ring id the hardware expects at this slot on its next pass.
            (
                idx,
                if idx >= tail {
                    tail_id
                } else {
                    (tail_id + 1) & 3
                },
            )
        }
        None => {
            // The software producer slot (seeded from the hardware tail).
            let (idx, id) = exec
                .next
                .get(&key)
                .copied()
                .filter(|&(i, _)| i < len)
                .unwrap_or((tail, tail_id));
            let following = if idx + 1 >= len {
                (0, (id + 1) & 3)
            } else {
                (idx + 1, id)
            };
            exec.next.insert(key, following);
            (idx, id)
        }
    };
    let bytes = build_descriptor(q, fields, addr, buf2, ring_id).map_err(|m| (None, m))?;
    let at = base + 16 * u64::from(idx);
    device.write_bytes(at, &bytes).map_err(fault)?;
    if slot.is_none() {
        exec.pending.insert(key, pending + 1);
    }
    let d = dma_abi::Descriptor::from_bytes(&bytes);
    let w0 = d.len_ctrl();
    Ok(format!(
        "desc {}[{idx}] at {at:#x}: {} {:#x} len {} ring_id {}{}{}{}{} word1 {:#010x}",
        q.region,
        if q.dir == Dir::M2s { "src" } else { "dst" },
        d.buf_ptr(),
        w0.len_bytes(true),
        w0.ring_id(),
        if w0.first() { " FIRST" } else { "" },
        if w0.last() { " LAST" } else { "" },
        if w0.dmb() { " DMB" } else { "" },
        if w0.sow() { " SOW" } else { "" },
        d.word1()
    ))
}

fn run_device(
    device: &mut Device,
    limit: Option<Cycle>,
    hooks: &mut dyn ExecHooks,
    mut cond: impl FnMut(&mut Device) -> bool,
) -> (RunStop, bool, bool) {
    let mut quit = false;
    let (stop, met) = device.run_while(limit, |d| {
        if hooks.during_run(d) == Control::Quit {
            quit = true;
            return true;
        }
        cond(d)
    });
    (stop, met && !quit, quit)
}

fn step(
    device: &mut Device,
    exec: &mut Executor,
    s: &Statement,
    r: &Linked,
    files: &mut dyn TraceFiles,
    hooks: &mut dyn ExecHooks,
) -> Result<Outcome, StepError> {
    let at = name_of(s, r);
    let addr = r.addr();
    #[allow(unreachable_patterns)]
    match &s.kind {
        StatementKind::Desc { queue, fields } => {
            let Linked::Desc {
                queue: q,
                addr,
                buf2,
            } = r
            else {
                return Err((None, "internal: desc not linked".into()));
            };
            place_desc(device, exec, q, queue.slot, fields, *addr, *buf2).map(Outcome::Done)
        }
        StatementKind::Doorbell { count, .. } => {
            let Linked::Doorbell(q) = r else {
                return Err((None, "internal: doorbell not linked".into()));
            };
            let map = device
                .catalog()
                .block(if q.dir == Dir::M2s {
                    "udma_m2s_q"
                } else {
                    "udma_s2m_q"
                })
                .ok_or((None, "CSR map missing".to_string()))?;
            let name = if q.dir == Dir::M2s {
                "TDRTP_INC"
            } else {
                "RDRTP_INC"
            };
            let off = map
                .find(name, None)
                .ok_or((None, format!("{name} missing")))?;
            device.write32(q.base + off, *count).map_err(fault)?;
            let key = (q.engine, q.dir, q.queue);
            let left = exec
                .pending
                .get(&key)
                .copied()
                .unwrap_or(0)
                .saturating_sub(*count);
            exec.pending.insert(key, left);
            Ok(Outcome::Done(format!(
                "doorbell {}.{name} +{count}",
                q.region
            )))
        }
        StatementKind::Inst { core, .. } => {
            let Linked::Inst { word, .. } = r else {
                return Err((None, "internal: inst not linked".into()));
            };
            let tag = device
                .submit_inst(*core, **word, format!("line {}", s.span.line))
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "inst tpb{core}#{}: {} queued on the Q7 firmware",
                tag.seq,
                word.kind().name()
            )))
        }
        StatementKind::Memcpy {
            core,
            local,
            len,
            is_read,
            ..
        } => {
            let call = q7::FwCall::Memcpy {
                local: *local,
                other: addr,
                len: *len,
                is_read: *is_read,
            };
            let tag = device
                .submit_call(*core, call, format!("line {}", s.span.line))
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "memcpy tpb{core}#{}: neuron_memcpy {} {len} bytes queued on the Q7 firmware",
                tag.seq,
                if *is_read { "read" } else { "write" }
            )))
        }
        StatementKind::IcacheInit { core, block_size } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::IcacheInit {
                        block_size: *block_size,
                    },
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "icache_init tpb{core}#{}: IRAM cache init queued",
                tag.seq
            )))
        }
        StatementKind::IcacheFill { core, lines, .. } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::IcacheFill {
                        fetch: addr,
                        lines: *lines,
                    },
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "icache_fill tpb{core}#{}: start_fill_siram of {lines} lines queued",
                tag.seq
            )))
        }
        StatementKind::MemcpyMethod { core, method } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::SetMethod(*method),
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "memcpy_method tpb{core}#{}: neuron_set_memcpy_method({method}) queued",
                tag.seq
            )))
        }
        StatementKind::Run { mode } => {
            let start = device.now().0;
            let limit = match mode {
                RunMode::Idle => None,
                RunMode::Cycles(n) => Some(Cycle(start.saturating_add(*n))),
                RunMode::Until(c) => Some(Cycle(*c)),
            };
            let (stop, _, quit) = run_device(device, limit, hooks, |_| false);
            if quit {
                return Ok(Outcome::Done(QUIT_MARK.to_string()));
            }
            let now = device.now().0;
            Ok(Outcome::Done(format!(
                "run: cycle {start} -> {now} ({:.1} ns){}",
                device.timing().ns(now),
                match stop {
                    RunStop::Idle => ", idle",
                    RunStop::Limit => "",
                }
            )))
        }
        StatementKind::Wait {
            compare,
            value,
            mask,
            timeout,
            ..
        } => {
            let m = mask.unwrap_or(u32::MAX);
            let holds = |v: u32| match compare {
                Compare::Eq => v & m == *value,
                Compare::Ne => v & m != *value,
                Compare::Ge => v & m >= *value,
            };
            let start = device.now().0;
            let check = |d: &mut Device| -> Option<u32> {
                // Peek without read side effects.
                match d.reg_target(addr) {
                    Ok(Some(t)) => d.peek_reg(t),
                    Ok(None) => {
                        let mut b = [0u8; 4];
                        d.read_bytes(addr, &mut b)
                            .ok()
                            .map(|()| u32::from_le_bytes(b))
                    }
                    Err(_) => None,
                }
            };
            let first = check(device)
                .ok_or_else(|| (None, format!("wait {at}: the address cannot be read")))?;
            if holds(first) {
                return Ok(Outcome::Expectation {
                    text: format!("wait {at} {compare} {value:#x}: held at cycle {start}"),
                    held: true,
                });
            }
            let limit = Cycle(start.saturating_add(timeout.unwrap_or(DEFAULT_WAIT_TIMEOUT_CYCLES)));
            let (stop, met, quit) =
                run_device(device, Some(limit), hooks, |d| check(d).is_some_and(holds));
            if quit {
                return Ok(Outcome::Done(QUIT_MARK.to_string()));
            }
            let now = device.now().0;
            let last = check(device).unwrap_or(0);
            Ok(Outcome::Expectation {
                text: if met {
                    format!(
                        "wait {at} {compare} {value:#x}: held at cycle {now} (waited {} cycles)",
                        now - start
                    )
                } else if stop == RunStop::Idle {
                    format!(
                        "wait {at} {compare} {value:#x}: the device went idle at cycle {now} with the value at {last:#010x}"
                    )
                } else {
                    format!(
                        "wait {at} {compare} {value:#x}: timed out at cycle {now} after {} cycles; value {last:#010x}",
                        now - start
                    )
                },
                held: met,
            })
        }
        StatementKind::Write32 { value, .. } => {
            if let Linked::Addr(res) = r
                && let Some(name) = res.register.as_deref()
                && ["DRBP_LOW", "DRBP_HIGH", "DRL", "Q_SW_CTRL"]
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
            {
                let d = device.map().decode(addr);
                if let Some(q) = d
                    .region
                    .and_then(|id| queue_target(device, device.map().name(id)))
                {
                    exec.forget(&q);
                }
            }
            let reg = device.write32(addr, *value).map_err(fault)?;
            match reg {
                Some(w) if w.read_only => Err((
                    s.kind.try_addr().map(|a| a.span),
                    format!(
                        "write32 {at}: register {}.{} is read-only; value unchanged ({:#010x})",
                        w.region, w.register, w.new
                    ),
                )),
                Some(w) => Ok(Outcome::Done(format!(
                    "write32 {at} = {value:#010x} ({}.{}: {:#010x} -> {:#010x})",
                    w.region, w.register, w.old, w.new
                ))),
                None => Ok(Outcome::Done(format!("write32 {at} = {value:#010x}"))),
            }
        }
        StatementKind::Read32 { expect, mask, .. } => {
            let value = device.read32(addr).map_err(fault)?;
            let m = mask.unwrap_or(u32::MAX);
            let shown = value & m;
            match expect {
                None => Ok(Outcome::Done(format!("read32 {at} = {shown:#010x}"))),
                Some(want) => {
                    let held = shown == *want;
                    let text = if held {
                        format!("read32 {at} == {want:#010x}")
                    } else if m == u32::MAX {
                        format!("read32 {at}: expected {want:#010x}, read {value:#010x}")
                    } else {
                        format!(
                            "read32 {at}: expected {want:#010x} under mask {m:#010x}, read {value:#010x} (masked {shown:#010x})"
                        )
                    };
                    Ok(Outcome::Expectation { text, held })
                }
            }
        }
        StatementKind::Fill { len, content, .. } => {
            match content {
                FillContent::Byte(b) => device.fill(addr, *len, *b).map_err(fault)?,
                FillContent::Pattern { kind, seed } => {
                    // Probe the whole range first so a fault changes nothing.
                    probe_write(device, addr, *len)?;
                    let mut done = 0u64;
                    while done < *len {
                        let n = (*len - done).min(CHUNK_BYTES);
                        let chunk: Vec<u8> =
                            (done..done + n).map(|i| kind.byte_at(*seed, i)).collect();
                        device.write_bytes(addr + done, &chunk).map_err(fault)?;
                        done += n;
                    }
                }
            }
            let what = match content {
                FillContent::Byte(b) => format!("byte {b:#04x}"),
                FillContent::Pattern { kind, seed } => {
                    format!("pattern {} seed {seed}", kind.name())
                }
            };
            Ok(Outcome::Done(format!("fill {at} len {len:#x} with {what}")))
        }
        StatementKind::Write { bytes, .. } => {
            device.write_bytes(addr, bytes).map_err(fault)?;
            Ok(Outcome::Done(format!("write {at} {} bytes", bytes.len())))
        }
        StatementKind::Load {
            path, offset, len, ..
        } => {
            let data = files.read(&path.path).map_err(|e| {
                (
                    Some(path.span),
                    format!("load: cannot read `{}`: {e}", path.path),
                )
            })?;
            let start = offset.unwrap_or(0);
            let start_idx = usize::try_from(start)
                .ok()
                .filter(|&s| s <= data.len())
                .ok_or_else(|| {
                    (
                        Some(path.span),
                        format!(
                            "load: offset {start:#x} is past the end of `{}` ({} bytes)",
                            path.path,
                            data.len()
                        ),
                    )
                })?;
            let avail = &data[start_idx..];
            let take = match len {
                Some(l) => {
                    let l_idx = usize::try_from(*l).ok().filter(|&l| l <= avail.len()).ok_or_else(|| {
                        (
                            Some(path.span),
                            format!(
                                "load: `{}` has {} bytes after offset {start:#x}, fewer than len {l:#x}",
                                path.path,
                                avail.len()
                            ),
                        )
                    })?;
                    &avail[..l_idx]
                }
                None => avail,
            };
            device.write_bytes(addr, take).map_err(fault)?;
            Ok(Outcome::Done(format!(
                "load {at} {} bytes from {}",
                take.len(),
                path.path
            )))
        }
        StatementKind::Expect { check, .. } => match check {
            ExpectCheck::Bytes(want) => {
                let mut got = vec![0u8; want.len()];
                device.read_bytes(addr, &mut got).map_err(fault)?;
                if &got == want {
                    Ok(Outcome::Expectation {
                        text: format!("expect {at}: {} bytes match", want.len()),
                        held: true,
                    })
                } else {
                    let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
                    Ok(Outcome::Expectation {
                        text: format!(
                            "expect {at}: byte {first} (at {:#x}) is {:#04x}, expected {:#04x}; read {}",
                            addr + first as u64,
                            got[first],
                            want[first],
                            hex_bytes(&got[..got.len().min(32)])
                        ),
                        held: false,
                    })
                }
            }
            ExpectCheck::Sha256 { len, digest } => {
                let got = sha256_range(device, addr, *len)?;
                let held = &got == digest;
                let text = if held {
                    format!("expect {at}: sha256 of {len:#x} bytes matches")
                } else {
                    format!(
                        "expect {at}: sha256 of {len:#x} bytes is {}, expected {}",
                        hex_bytes(&got),
                        hex_bytes(digest)
                    )
                };
                Ok(Outcome::Expectation { text, held })
            }
        },
        StatementKind::Dump { len, file, .. } => match file {
            Some(f) => {
                probe_read(device, addr, *len)?;
                let n = usize::try_from(*len)
                    .map_err(|_| (None, "dump: length too large".to_string()))?;
                let mut data = vec![0u8; n];
                device.read_bytes(addr, &mut data).map_err(fault)?;
                files.write(&f.path, &data).map_err(|e| {
                    (
                        Some(f.span),
                        format!("dump: cannot write `{}`: {e}", f.path),
                    )
                })?;
                Ok(Outcome::Done(format!(
                    "dump {at} {len:#x} bytes to {}",
                    f.path
                )))
            }
            None => {
                if *len > MAX_PRINTED_DUMP_BYTES {
                    return Err((
                        None,
                        format!(
                            "dump of {len:#x} bytes is too long to print (limit {MAX_PRINTED_DUMP_BYTES:#x}); add file=PATH"
                        ),
                    ));
                }
                let mut data = vec![0u8; *len as usize];
                device.read_bytes(addr, &mut data).map_err(fault)?;
                Ok(Outcome::Done(format!(
                    "dump {at} {len:#x} bytes\n{}",
                    hexdump(addr, &data)
                )))
            }
        },
        other => Err((
            None,
            format!("`{}` is not supported by this executor", other.directive()),
        )),
    }
}

fn probe_read(device: &Device, addr: u64, len: u64) -> Result<(), StepError> {
    // Reading the first and last byte checks region, holes and bounds.
    crate::memory::DeviceMemory::resolve(device.map(), addr, len).map_err(fault)?;
    let mut b = [0u8; 1];
    device.read_bytes(addr, &mut b).map_err(fault)?;
    if len > 0 {
        device.read_bytes(addr + len - 1, &mut b).map_err(fault)?;
    }
    Ok(())
}

fn probe_write(device: &Device, addr: u64, len: u64) -> Result<(), StepError> {
    probe_read(device, addr, len)
}

fn sha256_range(device: &Device, addr: u64, len: u64) -> Result<[u8; 32], StepError> {
    probe_read(device, addr, len)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK_BYTES.min(len) as usize];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES) as usize;
        device
            .read_bytes(addr + done, &mut buf[..n])
            .map_err(fault)?;
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h.finalize().into())
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Classic 16-bytes-per-line hexdump with addresses and ASCII.
pub fn hexdump(base: u64, data: &[u8]) -> String {
    let mut out = String::new();
    for (i, chunk) in data.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|&b| {
                if (0x20..0x7f).contains(&b) {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!(
            "    {:#014x}: {:<47}  |{ascii}|\n",
            base + (i as u64) * 16,
            hex.join(" ")
        ));
    }
    out.trim_end_matches('\n').to_string()
}

/// One engine event as a line of text.
pub fn engine_event_text(e: &EngineEvent) -> String {
    let at = format!("@{} eng{}", e.cycle, e.engine);
    match &e.kind {
        EventKind::Doorbell {
            dir,
            queue,
            increment,
            tail,
            tail_ring_id,
        } => format!(
            "{at} {}.q{queue} doorbell +{increment}: tail {tail} ring_id {tail_ring_id}",
            dir.name()
        ),
        EventKind::Prefetch {
            dir,
            queue,
            first_index,
            count,
            head,
            head_ring_id,
        } => format!(
            "{at} {}.q{queue} prefetch [{first_index}..+{count}]: head {head} ring_id {head_ring_id}",
            dir.name()
        ),
        EventKind::PacketStart {
            queue,
            tx_descs,
            rx_descs,
            bytes,
            done_at,
            ..
        } => format!(
            "{at} q{queue} packet start: {bytes} bytes, {tx_descs} TX / {rx_descs} RX descriptors, lands @{done_at}"
        ),
        EventKind::PacketDone {
            queue,
            bytes,
            checksum,
        } => match checksum {
            Some(c) => format!("{at} q{queue} packet done: {bytes} bytes written, checksum {c}"),
            None => format!("{at} q{queue} packet done: {bytes} bytes written"),
        },
        EventKind::Fault {
            dir,
            queue,
            cause,
            detail,
            action,
        } => format!(
            "{at} {}{} FAULT {cause} ({action}): {detail}",
            dir.name(),
            queue.map(|q| format!(".q{q}")).unwrap_or_default()
        ),
        EventKind::State { dir, state } => format!("{at} {} state {state}", dir.name()),
        EventKind::QueueReset { dir, queue, bits } => {
            format!(
                "{at} {}.q{queue} Q_SW_CTRL reset bits {bits:#x}",
                dir.name()
            )
        }
        EventKind::RingWarning { dir, queue, detail } => {
            format!("{at} {}.q{queue} warning: {detail}", dir.name())
        }
    }
}
