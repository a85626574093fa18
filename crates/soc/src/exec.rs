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

use crate::device::{Device, DeviceEvent, OnStall, RunStop};
use crate::fault::BusFault;
use crate::resolve::{ResolveError, Resolved, resolve};
use sim_core::Cycle;
use trace_format::{AddrRole, Compare, DescFields, QueueRef, RunMode};
use udma::{Dir, EngineEvent, EventKind, UnitBlock};

mod desc;
mod execution;
mod link;
mod report;
mod statement;
mod stream;

use desc::*;
pub use execution::{Advance, Execution};
pub use link::*;
pub use report::*;
pub use statement::*;
pub use stream::{
    DEFAULT_CARVEOUT_CFG, DEFAULT_DMA_CFG, MAX_STREAM_WORDS, read_stream, stream_trace,
};

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
    /// Opens a file for reads at any offset, so that `load` and a host
    /// copy's `file=` source read only the bytes they move, a piece at a
    /// time. The default reads the whole file into memory.
    fn open(&mut self, path: &str) -> io::Result<std::sync::Arc<dyn FileRange>> {
        Ok(std::sync::Arc::new(InMemoryFile(self.read(path)?)))
    }
}

/// A file opened by [`TraceFiles::open`].
pub trait FileRange: Send + Sync + std::fmt::Debug {
    /// The file's size in bytes.
    fn len_bytes(&self) -> u64;
    /// Fills `buf` with the bytes at `offset`.
    ///
    /// # Errors
    ///
    /// The file's read error; `UnexpectedEof` past its end.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

/// A file held in memory (the default of [`TraceFiles::open`]).
#[derive(Debug)]
pub struct InMemoryFile(pub Vec<u8>);

impl FileRange for InMemoryFile {
    fn len_bytes(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|s| Some((s, s.checked_add(buf.len())?)))
            .and_then(|(s, e)| self.0.get(s..e))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A file on disk read at offsets ([`TraceFiles::open`] of the CLI).
#[derive(Debug)]
pub struct DiskFile {
    file: std::sync::Mutex<std::fs::File>,
    len_bytes: u64,
}

impl DiskFile {
    /// Opens `path`.
    ///
    /// # Errors
    ///
    /// The open or metadata error.
    pub fn open(path: &std::path::Path) -> io::Result<Self> {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        // A directory opens, and reports a size, but has no bytes to read.
        if meta.is_dir() {
            return Err(io::Error::from(io::ErrorKind::IsADirectory));
        }
        let len_bytes = meta.len();
        Ok(DiskFile {
            file: std::sync::Mutex::new(file),
            len_bytes,
        })
    }
}

impl FileRange for DiskFile {
    fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        use std::io::{Read, Seek};
        let mut f = self
            .file
            .lock()
            .map_err(|_| io::Error::other("file handle poisoned"))?;
        f.seek(io::SeekFrom::Start(offset))?;
        f.read_exact(buf)
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
    /// A check that could not be made: timing-only mode did not move the
    /// bytes it reads (docs/user-guide.md §Timing-only mode). The text
    /// says so.
    Skipped(String),
}

/// The host runtime behind the v3 statements: the runtime's allocator and
/// the kernel driver, which owns the device. Implemented above the device
/// layers (docs/references/design.md §3); [`run_linked`] on a bare device has none.
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
    /// Hand control back to the caller of [`Execution::advance`] here: from
    /// [`ExecHooks::before`], the statement has not started (the next
    /// `advance` starts it without asking again); from
    /// [`ExecHooks::during_run`], the `run`/`wait` pauses after the event
    /// just processed and the next `advance` resumes it. [`run_linked`]
    /// goes on at once.
    Pause,
    /// Stop the run here (statements after this are not executed).
    Quit,
}

/// Callbacks for debuggers: before each statement, and after every engine
/// step while `run`/`wait` advance time.
pub trait ExecHooks {
    /// Before statement `index` runs (once per statement, not when a paused
    /// `run`/`wait` resumes).
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

    /// A statement finished. When the device has an event sink
    /// ([`Device::set_event_sink`]) its events went there first, and the
    /// record (without events) comes only here: the run report keeps no
    /// statement records, so a consumer that streams keeps memory flat
    /// (docs/user-guide.md §Output).
    fn statement(&mut self, _record: &StepRecord) {}
}

/// No hooks.
#[derive(Debug)]
pub struct NoHooks;

impl ExecHooks for NoHooks {}

/// Executor state that outlives a statement: the software producer index of
/// each queue (like a driver's `next_desc_idx`).
#[derive(Clone, Debug, Default)]
pub struct Executor {
    /// (engine, direction, queue) → descriptors placed since the last doorbell.
    pending: BTreeMap<(u16, Dir, u8), u32>,
    /// (engine, direction, queue) → the software producer slot and the ring
    /// id the hardware will expect there, like a driver's `next_desc_idx`
    /// (docs/references/driver.md §3.6, §3.8). Seeded from the hardware tail on first use
    /// and forgotten when the trace writes the queue's ring registers or
    /// Q_SW_CTRL.
    next: BTreeMap<(u16, Dir, u8), (u32, u8)>,
    /// Faults an `expect_fault` matched: (engine, direction, queue, cause,
    /// action) of each tally it claimed, and the raises it claimed (those
    /// so far: later raises of the kind are unexpected).
    claimed_faults: Vec<(FaultKey, u64)>,
    /// Refusals an `expect_refusal` matched: (core, index among the
    /// core's refusals).
    claimed_refusals: Vec<(u8, usize)>,
    /// Warnings of the statement running, taken after it.
    warnings: Vec<String>,
    /// The digest of the bytes the statement running read to check or
    /// show them (`expect`, `read32`, `dump`), taken after it.
    read_digest: Option<u64>,
    /// A buffer `fill` and `load` stage their chunks in, kept from one
    /// statement to the next (a chip trace fills megabytes).
    chunk: ChunkBuffer,
}

/// [`Executor::chunk`]: bytes of no meaning between statements, so a copy
/// of the executor (a debugger checkpoint) starts without them.
#[derive(Debug, Default)]
struct ChunkBuffer(Vec<u8>);

impl Clone for ChunkBuffer {
    fn clone(&self) -> Self {
        ChunkBuffer::default()
    }
}

impl Executor {
    /// `len` bytes of the staging buffer (their contents are whatever the
    /// last statement left: callers overwrite what they use).
    fn chunk(&mut self, len: usize) -> &mut [u8] {
        let buf = &mut self.chunk.0;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        &mut buf[..len]
    }

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
    let mut run = Execution::start(host, file);
    while !matches!(
        run.advance(host, trace, linked, files, hooks, None),
        Advance::End | Advance::Quit { .. }
    ) {}
    run.finish(host)
}

/// The text of a statement the debugger quit during.
pub const QUIT_MARK: &str = "(quit)";

enum Outcome {
    Done(String),
    Expectation {
        text: String,
        held: bool,
    },
    /// A check timing-only mode cannot make (its text says why).
    Skipped(String),
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
