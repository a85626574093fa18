//! The trace executor: runs a parsed v1 trace against a [`Device`]
//! (`docs/trace-format.md` §3). Names are resolved before anything runs, so an
//! unknown name costs nothing; a fault while running is reported at its
//! statement and the run goes on, so nothing already computed is lost.

use std::io;

use serde::Serialize;
use sha2::{Digest, Sha256};
use soc_map::Hex;
use trace_format::{ExpectCheck, FillContent, ParseError, Span, Statement, StatementKind, Trace};

use crate::device::{Device, DeviceEvent};
use crate::fault::BusFault;
use crate::resolve::{Resolved, resolve};

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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepRecord {
    /// Trace line.
    pub line: u32,
    /// Directive keyword.
    pub directive: &'static str,
    /// Resolved address.
    pub address: Hex,
    /// What happened, one line (dumps: several).
    pub text: String,
    /// Outcome.
    pub status: Status,
    /// Device side effects of this statement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<DeviceEvent>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// Trace file name as given.
    pub trace: String,
    /// Statements executed.
    pub statements: usize,
    /// Expectations that held.
    pub expectations_passed: usize,
    /// Expectations that failed.
    pub expectations_failed: usize,
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
        for e in &self.errors {
            out.push_str(&format!("error: {e}\n"));
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

fn located(file: &str, span: Span, message: String) -> ParseError {
    ParseError {
        file: file.to_string(),
        line: span.line,
        column: span.column,
        len: span.len,
        message,
    }
}

/// Resolves every address of a parsed trace; all errors, or the addresses.
pub fn link(device: &Device, trace: &Trace, file: &str) -> Result<Vec<Resolved>, Vec<ParseError>> {
    let mut out = Vec::with_capacity(trace.statements.len());
    let mut errors = Vec::new();
    for s in &trace.statements {
        match resolve(device, s.kind.addr()) {
            Ok(r) => out.push(r),
            Err(e) => errors.push(located(file, e.span, e.message)),
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
    let resolved = link(device, &trace, file)?;
    Ok(run_linked(device, &trace, &resolved, file, files))
}

/// Runs a linked trace.
pub fn run_linked(
    device: &mut Device,
    trace: &Trace,
    resolved: &[Resolved],
    file: &str,
    files: &mut dyn TraceFiles,
) -> RunReport {
    let mut report = RunReport {
        trace: file.to_string(),
        statements: 0,
        expectations_passed: 0,
        expectations_failed: 0,
        steps: Vec::new(),
        failures: Vec::new(),
        errors: Vec::new(),
    };
    for (s, r) in trace.statements.iter().zip(resolved) {
        let (status, text) = match step(device, s, r, files) {
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
        report.steps.push(StepRecord {
            line: s.span.line,
            directive: s.kind.directive(),
            address: Hex(r.addr),
            text,
            status,
            events: device.take_events(),
        });
    }
    report
}

enum Outcome {
    Done(String),
    Expectation { text: String, held: bool },
}

type StepError = (Option<Span>, String);

fn name_of(s: &Statement, r: &Resolved) -> String {
    match s.kind.addr().literal() {
        Some(_) if s.kind.addr().offsets.is_empty() => format!("{:#x}", r.addr),
        _ => format!("{} ({:#x})", s.kind.addr(), r.addr),
    }
}

fn fault(e: BusFault) -> StepError {
    (None, e.to_string())
}

fn step(
    device: &mut Device,
    s: &Statement,
    r: &Resolved,
    files: &mut dyn TraceFiles,
) -> Result<Outcome, StepError> {
    let at = name_of(s, r);
    let addr = r.addr;
    match &s.kind {
        StatementKind::Write32 { value, .. } => {
            let reg = device.write32(addr, *value).map_err(fault)?;
            match reg {
                Some(w) if w.read_only => Err((
                    Some(s.kind.addr().span),
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
