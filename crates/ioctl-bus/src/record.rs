//! Record and replay of the `/dev/neuron` boundary.
//!
//! A [`Recorder`] wraps any [`Transport`] and appends one [`Record`] per
//! call: the call, its result, and every user-memory access the driver
//! made during it, in order. A [`Recording`] is JSON lines; [`replay`]
//! re-issues it against a fresh driver, serving `copy_from_user` from the
//! recorded bytes and checking every `copy_to_user` digest, the argument
//! copy-out and the result. Numbers and addresses are hex strings; large
//! outputs are kept as SHA-256 digests.

use std::borrow::Cow;
use std::fmt::Write as _;

use ioctl_abi::Errno;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::stats::{IoctlStats, ioctl_name};
use crate::{BusError, Driver, IoctlError, Transport, UserMemory, panic_message};

/// What was called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Call {
    /// An ioctl; the argument bytes before and after.
    Ioctl {
        /// The request number.
        #[serde(with = "hex_u32")]
        request: u32,
        /// Its driver name, or `"unknown"`.
        name: Cow<'static, str>,
        /// Argument bytes as passed.
        #[serde(with = "hex_bytes")]
        arg_in: Vec<u8>,
        /// Argument bytes after the call (the copy-out).
        #[serde(with = "hex_bytes")]
        arg_out: Vec<u8>,
    },
    /// A load from mmapped driver memory.
    MmapRead {
        /// mmap offset.
        #[serde(with = "hex_u64")]
        offset: u64,
        /// Bytes loaded.
        len: u64,
        /// SHA-256 of the loaded bytes (hex); absent when the load failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// A store to mmapped driver memory.
    MmapWrite {
        /// mmap offset.
        #[serde(with = "hex_u64")]
        offset: u64,
        /// Bytes stored.
        #[serde(with = "hex_bytes")]
        bytes: Vec<u8>,
    },
}

/// A line of a recording that is not a record (`docs/host-runtime.md`
/// §2.3): where, and what is wrong — one line number, the recording's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlError {
    /// 1-based line of the recording.
    pub line: usize,
    /// 1-based column in that line (0 when the parser gave none).
    pub column: usize,
    /// What is wrong, without a position.
    pub message: String,
}

impl JsonlError {
    /// From a parse error of line `line` (a one-line JSON document, so
    /// serde's own "at line 1 column N" suffix is dropped: the column is
    /// kept, the line is the recording's).
    fn new(line: usize, e: &serde_json::Error) -> Self {
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
        Self {
            line,
            column: e.column(),
            message,
        }
    }
}

/// The 1-based column of the first character of a hex-bytes value
/// (`arg_in`, `arg_out`, `bytes`) of `line` that is not a hex digit, or of
/// the closing quote of one with an odd number of digits.
fn first_bad_hex_column(line: &str) -> Option<usize> {
    for key in ["\"arg_in\"", "\"arg_out\"", "\"bytes\""] {
        let mut from = 0;
        while let Some(k) = line[from..].find(key) {
            let after = from + k + key.len();
            from = after;
            let rest = line[after..].trim_start();
            let Some(rest) = rest.strip_prefix(':') else {
                continue;
            };
            let rest = rest.trim_start();
            let Some(value) = rest.strip_prefix('"') else {
                continue;
            };
            let start = line.len() - value.len();
            let end = value.find('"').unwrap_or(value.len());
            let digits = &value[..end];
            if let Some(bad) = digits.find(|c: char| !c.is_ascii_hexdigit()) {
                return Some(line[..start + bad].chars().count() + 1);
            }
            if digits.len() % 2 != 0 {
                return Some(line[..start + end].chars().count() + 1);
            }
        }
    }
    None
}

/// An ioctl record the recording bus could not have written is bad input,
/// not a replay that passes or a mismatch blamed on the driver
/// (docs/host-runtime.md §2.4): its name must be the request's (`unknown`
/// for a number no ioctl has), since messages name a record by it.
fn check_call(call: &Call) -> Result<(), String> {
    let Call::Ioctl { request, name, .. } = call else {
        return Ok(());
    };
    let want = ioctl_abi::table::lookup(*request).map_or("unknown", |d| d.name);
    if name != want {
        return Err(format!(
            "name `{name}` is not request {request:#010x}'s (`{want}`)"
        ));
    }
    Ok(())
}

impl std::fmt::Display for JsonlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for JsonlError {}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Success with this return value (0 for mmap).
    Ret(i64),
    /// The driver's errno.
    Errno(Errno),
    /// The boundary failed.
    Bus(BusError),
}

impl<T> From<&Result<T, IoctlError>> for Outcome
where
    T: Copy + Into<i64>,
{
    fn from(r: &Result<T, IoctlError>) -> Self {
        match r {
            Ok(v) => Self::Ret((*v).into()),
            Err(IoctlError::Errno(e)) => Self::Errno(*e),
            Err(IoctlError::Bus(e)) => Self::Bus(e.clone()),
        }
    }
}

/// One user-memory access the driver made during a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum UserAccess {
    /// `copy_from_user`: the bytes the driver read.
    CopyFromUser {
        /// User address.
        #[serde(with = "hex_u64")]
        addr: u64,
        /// Bytes asked for.
        len: u64,
        /// Bytes read (empty when the access faulted).
        #[serde(with = "hex_bytes")]
        bytes: Vec<u8>,
        /// The access's errno, if it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        errno: Option<Errno>,
    },
    /// `copy_to_user`: a digest of the bytes the driver wrote.
    CopyToUser {
        /// User address.
        #[serde(with = "hex_u64")]
        addr: u64,
        /// Bytes written.
        len: u64,
        /// SHA-256 of the bytes (hex).
        sha256: String,
        /// The access's errno, if it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        errno: Option<Errno>,
    },
}

/// One call at the boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the recording, from 0.
    pub seq: u64,
    /// The call.
    #[serde(flatten)]
    pub call: Call,
    /// Its result.
    pub result: Outcome,
    /// The driver's user-memory accesses, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user: Vec<UserAccess>,
}

impl Record {
    /// The ioctl name, or `mmap_read` / `mmap_write`.
    #[must_use]
    pub fn label(&self) -> &str {
        match &self.call {
            Call::Ioctl { name, .. } => name,
            Call::MmapRead { .. } => "mmap_read",
            Call::MmapWrite { .. } => "mmap_write",
        }
    }
}

/// A sequence of [`Record`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recording {
    /// The records, in call order.
    pub records: Vec<Record>,
}

impl Recording {
    /// One JSON object per line, each ending in `\n`.
    ///
    /// Serializing these plain types cannot fail; if it ever did, the line
    /// holds the error and [`Recording::from_jsonl`] rejects it.
    #[must_use]
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for r in &self.records {
            match serde_json::to_string(r) {
                Ok(line) => out.push_str(&line),
                Err(e) => {
                    let _ = write!(out, "unserializable record {}: {e}", r.seq);
                }
            }
            out.push('\n');
        }
        out
    }

    /// Parses [`Recording::to_jsonl`] output; blank lines are skipped.
    ///
    /// # Errors
    ///
    /// A [`JsonlError`] naming the first line that is not a record, the
    /// column in it and what is wrong.
    pub fn from_jsonl(text: &str) -> Result<Self, JsonlError> {
        let mut records = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: Record = serde_json::from_str(line).map_err(|e| {
                let mut err = JsonlError::new(i + 1, &e);
                // serde places a field's own error at the end of the record:
                // a bad hex digit is found in the line instead.
                if err.message.starts_with("hex bytes")
                    && let Some(column) = first_bad_hex_column(line)
                {
                    err.column = column;
                }
                err
            })?;
            // Records are numbered from 0 in order: a gap or a repeat is a
            // recording cut or spliced, which a replay would not show.
            if r.seq != records.len() as u64 {
                return Err(JsonlError {
                    line: i + 1,
                    column: 1,
                    message: format!(
                        "record seq {} where {} comes next (records are numbered from 0 in order: the recording was cut or spliced)",
                        r.seq,
                        records.len()
                    ),
                });
            }
            if let Err(message) = check_call(&r.call) {
                return Err(JsonlError {
                    line: i + 1,
                    column: 1,
                    message: format!("record seq {}: {message}", r.seq),
                });
            }
            records.push(r);
        }
        if records.is_empty() {
            return Err(JsonlError {
                line: 1,
                column: 1,
                message: "no records: an empty recording replays nothing".into(),
            });
        }
        Ok(Self { records })
    }

    /// Number of records.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Counts of the recorded calls.
    #[must_use]
    pub fn stats(&self) -> IoctlStats {
        let mut stats = IoctlStats::default();
        for r in &self.records {
            let ok = matches!(r.result, Outcome::Ret(_));
            match &r.call {
                Call::Ioctl { request, .. } => stats.count_ioctl(*request, ok),
                Call::MmapRead { .. } => stats.count_mmap_read(ok),
                Call::MmapWrite { .. } => stats.count_mmap_write(ok),
            }
        }
        stats
    }
}

/// A [`Transport`] wrapper that records every call (and counts it), in
/// memory or streamed as JSON lines to a writer.
pub struct Recorder<T> {
    inner: T,
    recording: Recording,
    stats: IoctlStats,
    next_seq: u64,
    /// Streaming: each record is written as one line instead of kept.
    sink: Option<Box<dyn std::io::Write>>,
    /// The first write error of the sink (later records are dropped).
    sink_error: Option<String>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for Recorder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("inner", &self.inner)
            .field("records", &self.recording.records.len())
            .field("next_seq", &self.next_seq)
            .field("streaming", &self.sink.is_some())
            .field("sink_error", &self.sink_error)
            .finish_non_exhaustive()
    }
}

impl<T> Recorder<T> {
    /// Wraps `inner`, keeping the records in memory.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            recording: Recording::default(),
            stats: IoctlStats::default(),
            next_seq: 0,
            sink: None,
            sink_error: None,
        }
    }

    /// Wraps `inner`, streaming each record as a JSON line to `sink` (the
    /// format of [`Recording::to_jsonl`]; nothing is kept in memory, so a
    /// long run's copies do not accumulate).
    pub fn streaming(inner: T, sink: Box<dyn std::io::Write>) -> Self {
        Self {
            sink: Some(sink),
            ..Self::new(inner)
        }
    }

    /// The first error writing the stream, if any (records after it are
    /// lost); flushes the stream.
    pub fn finish_stream(&mut self) -> Option<String> {
        if let Some(s) = self.sink.as_mut()
            && let Err(e) = s.flush()
            && self.sink_error.is_none()
        {
            self.sink_error = Some(e.to_string());
        }
        self.sink_error.clone()
    }

    /// What was recorded so far.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// Takes what was recorded so far; numbering continues.
    pub fn take_recording(&mut self) -> Recording {
        std::mem::take(&mut self.recording)
    }

    /// The counts so far.
    pub fn stats(&self) -> &IoctlStats {
        &self.stats
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped transport, mutable (calls made through it directly are
    /// not recorded).
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The wrapped transport and the recording.
    pub fn into_parts(self) -> (T, Recording) {
        (self.inner, self.recording)
    }

    fn push(&mut self, call: Call, result: Outcome, user: Vec<UserAccess>) {
        let record = Record {
            seq: self.next_seq,
            call,
            result,
            user,
        };
        self.next_seq += 1;
        match self.sink.as_mut() {
            None => self.recording.records.push(record),
            Some(sink) if self.sink_error.is_none() => {
                let line = Recording {
                    records: vec![record],
                }
                .to_jsonl();
                if let Err(e) = sink.write_all(line.as_bytes()) {
                    self.sink_error = Some(e.to_string());
                }
            }
            Some(_) => {}
        }
    }
}

/// Logs the accesses a driver makes to the caller's memory.
struct Tap<'a> {
    user: &'a mut dyn UserMemory,
    log: Vec<UserAccess>,
}

impl UserMemory for Tap<'_> {
    fn copy_from_user(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let r = self.user.copy_from_user(addr, buf);
        self.log.push(UserAccess::CopyFromUser {
            addr,
            len: buf.len() as u64,
            bytes: if r.is_ok() { buf.to_vec() } else { Vec::new() },
            errno: r.err(),
        });
        r
    }

    fn copy_to_user(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let r = self.user.copy_to_user(addr, bytes);
        self.log.push(UserAccess::CopyToUser {
            addr,
            len: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            errno: r.err(),
        });
        r
    }
}

impl<T: Transport> Transport for Recorder<T> {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        let arg_in = arg.to_vec();
        let mut tap = Tap {
            user,
            log: Vec::new(),
        };
        let r = self.inner.ioctl(request, arg, &mut tap);
        let log = tap.log;
        self.stats.count_ioctl(request, r.is_ok());
        let call = Call::Ioctl {
            request,
            name: Cow::Borrowed(ioctl_name(request)),
            arg_in,
            arg_out: arg.to_vec(),
        };
        self.push(call, Outcome::from(&r), log);
        r
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        let r = self.inner.mmap_read(offset, buf);
        self.stats.count_mmap_read(r.is_ok());
        let call = Call::MmapRead {
            offset,
            len: buf.len() as u64,
            sha256: r.is_ok().then(|| sha256_hex(buf)),
        };
        self.push(call, outcome_unit(&r), Vec::new());
        r
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        let r = self.inner.mmap_write(offset, bytes);
        self.stats.count_mmap_write(r.is_ok());
        let call = Call::MmapWrite {
            offset,
            bytes: bytes.to_vec(),
        };
        self.push(call, outcome_unit(&r), Vec::new());
        r
    }

    /// Forwarded: what the caller does to the driver directly is not
    /// recorded (a replay re-issues bus calls only).
    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        self.inner.local_driver()
    }

    fn finish_writes(&mut self) -> Option<String> {
        let inner = self.inner.finish_writes();
        self.finish_stream().or(inner)
    }
}

fn outcome_unit(r: &Result<(), IoctlError>) -> Outcome {
    Outcome::from(&r.as_ref().map(|()| 0_i64).map_err(Clone::clone))
}

/// What a successful [`replay`] did.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ReplayReport {
    /// Records in the recording.
    pub records: u64,
    /// Ioctls re-issued.
    pub ioctls: u64,
    /// mmap loads re-issued.
    pub mmap_reads: u64,
    /// mmap stores re-issued.
    pub mmap_writes: u64,
    /// `copy_from_user` accesses served from the recording.
    pub user_reads: u64,
    /// `copy_to_user` accesses checked.
    pub user_writes: u64,
    /// Records not re-issued: from the first recorded bus failure on (a
    /// hang or a lost device cannot be reproduced; after one, no call
    /// reached the driver). A recorded device panic is re-issued and must
    /// panic again with the same message.
    pub not_issued: u64,
    /// The `seq` of the recorded bus failure the replay stopped issuing at,
    /// if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted_at_seq: Option<u64>,
}

/// Re-issues `recording` against `driver` (a fresh one, in the state the
/// recorded one started in) and checks that it behaves as recorded.
///
/// # Errors
///
/// [`BusError::ReplayMismatch`] naming the first record and field that
/// differ: a user access at another address or length (or one too many or
/// too few), a `copy_to_user` digest, the result, the argument copy-out,
/// an mmap load's digest. A driver panic is caught and compared like a
/// result.
pub fn replay(recording: &Recording, driver: &mut dyn Driver) -> Result<ReplayReport, BusError> {
    let mut report = ReplayReport::default();
    let mut halted = false;
    for rec in &recording.records {
        report.records += 1;
        if halted {
            // A bus failure is sticky: no later call reached the driver,
            // so a later record that claims a driver's result did not come
            // from a run (a review's finding: an edited recording whose
            // first record was a bus failure "matched" with nothing checked).
            if !matches!(rec.result, Outcome::Bus(_)) {
                return Err(BusError::ReplayMismatch(format!(
                    "record seq {}: recorded {}, but the bus failed at seq {} and no call reaches the driver after a bus failure",
                    rec.seq,
                    outcome_json(&rec.result),
                    report.halted_at_seq.unwrap_or(0)
                )));
            }
            report.not_issued += 1;
            continue;
        }
        if let Outcome::Bus(e) = &rec.result {
            halted = true;
            report.halted_at_seq = Some(rec.seq);
            if !matches!(e, BusError::DevicePanic(_)) {
                report.not_issued += 1;
                continue;
            }
        }
        replay_one(rec, driver, &mut report)?;
    }
    Ok(report)
}

fn replay_one(
    rec: &Record,
    driver: &mut dyn Driver,
    report: &mut ReplayReport,
) -> Result<(), BusError> {
    let mismatch = |field: &str, detail: String| {
        BusError::ReplayMismatch(format!(
            "record {} ({}) {field}: {detail}",
            rec.seq,
            rec.label()
        ))
    };
    match &rec.call {
        Call::Ioctl {
            request,
            arg_in,
            arg_out,
            ..
        } => {
            report.ioctls += 1;
            let mut arg = arg_in.clone();
            let mut user = ReplayUser {
                recorded: &rec.user,
                next: 0,
                mismatch: None,
            };
            let got = issue(|| driver.ioctl(*request, &mut arg, &mut user));
            if let Some((field, detail)) = user.mismatch {
                return Err(mismatch(&field, detail));
            }
            if let Some(extra) = rec.user.get(user.next) {
                return Err(mismatch(
                    &format!("user[{}]", user.next),
                    format!("recorded {}, driver made no such access", describe(extra)),
                ));
            }
            for a in &rec.user {
                match a {
                    UserAccess::CopyFromUser { .. } => report.user_reads += 1,
                    UserAccess::CopyToUser { .. } => report.user_writes += 1,
                }
            }
            check_result(&rec.result, &got).map_err(|d| mismatch("result", d))?;
            if &arg != arg_out {
                return Err(mismatch(
                    "arg_out",
                    format!("recorded {}, replay {}", hex(arg_out), hex(&arg)),
                ));
            }
        }
        Call::MmapRead {
            offset,
            len,
            sha256,
        } => {
            report.mmap_reads += 1;
            let len = usize::try_from(*len).map_err(|_| mismatch("len", "too large".into()))?;
            let mut buf = vec![0; len];
            let got = issue(|| driver.mmap_read(*offset, &mut buf).map(|()| 0));
            check_result(&rec.result, &got).map_err(|d| mismatch("result", d))?;
            if let Some(want) = sha256 {
                let have = sha256_hex(&buf);
                if &have != want {
                    return Err(mismatch(
                        "sha256",
                        format!("recorded {want}, replay {have}"),
                    ));
                }
            }
        }
        Call::MmapWrite { offset, bytes } => {
            report.mmap_writes += 1;
            let got = issue(|| driver.mmap_write(*offset, bytes).map(|()| 0));
            check_result(&rec.result, &got).map_err(|d| mismatch("result", d))?;
        }
    }
    Ok(())
}

/// Runs one driver call, a panic included in the outcome.
fn issue(f: impl FnOnce() -> Result<i64, Errno>) -> Outcome {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Outcome::Ret(v),
        Ok(Err(e)) => Outcome::Errno(e),
        Err(p) => Outcome::Bus(BusError::DevicePanic(panic_message(&*p))),
    }
}

fn check_result(want: &Outcome, got: &Outcome) -> Result<(), String> {
    if want == got {
        Ok(())
    } else {
        Err(format!(
            "recorded {}, replay {}",
            outcome_json(want),
            outcome_json(got)
        ))
    }
}

/// An outcome as a recording spells it (`{"ret":0}`, `{"errno":"EINVAL"}`,
/// `{"bus":{"device_panic":"…"}}`; `docs/host-runtime.md` §2.3), so a
/// mismatch reads like the file it came from.
fn outcome_json(o: &Outcome) -> String {
    serde_json::to_string(o).unwrap_or_else(|_| format!("{o:?}"))
}

/// The caller's memory rebuilt from a record's accesses.
struct ReplayUser<'a> {
    recorded: &'a [UserAccess],
    next: usize,
    /// The first divergence: field and detail.
    mismatch: Option<(String, String)>,
}

impl ReplayUser<'_> {
    /// The next recorded access, or records a mismatch with `made`.
    fn take(&mut self, made: impl FnOnce() -> String) -> Option<(usize, &UserAccess)> {
        if self.mismatch.is_some() {
            return None;
        }
        let i = self.next;
        self.next += 1;
        match self.recorded.get(i) {
            Some(a) => Some((i, a)),
            None => {
                self.diverge(i, format!("driver made {}, recorded nothing", made()));
                None
            }
        }
    }

    fn diverge(&mut self, i: usize, detail: String) {
        if self.mismatch.is_none() {
            self.mismatch = Some((format!("user[{i}]"), detail));
        }
    }
}

impl UserMemory for ReplayUser<'_> {
    fn copy_from_user(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let len = buf.len() as u64;
        let made = || format!("copy_from_user(addr {addr:#x}, len {len})");
        let Some((i, access)) = self.take(made) else {
            return Err(Errno::EFAULT);
        };
        match access {
            UserAccess::CopyFromUser {
                addr: a,
                len: l,
                bytes,
                errno,
            } if *a == addr && *l == len => match errno {
                Some(e) => Err(*e),
                None if bytes.len() == buf.len() => {
                    buf.copy_from_slice(bytes);
                    Ok(())
                }
                None => {
                    let detail = format!("recorded {} bytes for len {len}", bytes.len());
                    self.diverge(i, detail);
                    Err(Errno::EFAULT)
                }
            },
            other => {
                let detail = format!("driver made {}, recorded {}", made(), describe(other));
                self.diverge(i, detail);
                Err(Errno::EFAULT)
            }
        }
    }

    fn copy_to_user(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let len = bytes.len() as u64;
        let made = || format!("copy_to_user(addr {addr:#x}, len {len})");
        let Some((i, access)) = self.take(made) else {
            return Err(Errno::EFAULT);
        };
        match access {
            UserAccess::CopyToUser {
                addr: a,
                len: l,
                sha256,
                errno,
            } if *a == addr && *l == len => {
                let errno = *errno;
                let have = sha256_hex(bytes);
                if &have != sha256 {
                    let detail = format!("copy_to_user sha256: recorded {sha256}, replay {have}");
                    self.diverge(i, detail);
                }
                errno.map_or(Ok(()), Err)
            }
            other => {
                let detail = format!("driver made {}, recorded {}", made(), describe(other));
                self.diverge(i, detail);
                Err(Errno::EFAULT)
            }
        }
    }
}

fn describe(a: &UserAccess) -> String {
    match a {
        UserAccess::CopyFromUser { addr, len, .. } => {
            format!("copy_from_user(addr {addr:#x}, len {len})")
        }
        UserAccess::CopyToUser { addr, len, .. } => {
            format!("copy_to_user(addr {addr:#x}, len {len})")
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn parse_hex_u64(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .ok_or_else(|| format!("{s:?}: expected 0x-prefixed hex"))?;
    u64::from_str_radix(digits, 16).map_err(|e| format!("{s:?}: {e}"))
}

/// `u32` as `"0xc00c4e2b"` (the one form of every JSON number: no
/// padding, docs/user-guide.md §JSON outputs); padded recordings read too.
mod hex_u32 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let s = String::deserialize(d)?;
        let v = super::parse_hex_u64(&s).map_err(D::Error::custom)?;
        u32::try_from(v).map_err(|_| D::Error::custom(format!("{s:?}: wider than 32 bits")))
    }
}

/// `u64` as `"0x7f0000000000"`.
mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_hex_u64(&s).map_err(D::Error::custom)
    }
}

/// Bytes as lowercase hex without prefix.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::hex(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 || !s.is_ascii() {
            return Err(D::Error::custom("hex bytes: odd length or not ASCII"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(&s[i..i + 2], 16)
                    .map_err(|e| D::Error::custom(format!("hex bytes at {i}: {e}")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_jsonl_shape() {
        let rec = Recording {
            records: vec![Record {
                seq: 0,
                call: Call::Ioctl {
                    request: ioctl_abi::cmd::SEMAPHORE_READ,
                    name: Cow::Borrowed("SEMAPHORE_READ"),
                    arg_in: vec![1, 0xab],
                    arg_out: vec![2, 0xcd],
                },
                result: Outcome::Errno(Errno::EINVAL),
                user: vec![UserAccess::CopyFromUser {
                    addr: 0x7f00_0000_0000,
                    len: 1,
                    bytes: vec![9],
                    errno: None,
                }],
            }],
        };
        let text = rec.to_jsonl();
        assert_eq!(
            text,
            format!(
                "{{\"seq\":0,\"kind\":\"ioctl\",\"request\":\"{:#x}\",\"name\":\"SEMAPHORE_READ\",\
                 \"arg_in\":\"01ab\",\"arg_out\":\"02cd\",\"result\":{{\"errno\":\"EINVAL\"}},\
                 \"user\":[{{\"op\":\"copy_from_user\",\"addr\":\"0x7f0000000000\",\"len\":1,\
                 \"bytes\":\"09\"}}]}}\n",
                ioctl_abi::cmd::SEMAPHORE_READ
            )
        );
        assert_eq!(Recording::from_jsonl(&text), Ok(rec));
    }

    /// A probe's finding: a record whose name is not its request's
    /// replayed and passed (exit 0), and a mismatch named the record by the
    /// name it claimed. It is bad input naming the record.
    #[test]
    fn an_ioctl_records_name_must_be_its_requests() {
        let good = r#"{"seq":0,"kind":"ioctl","request":"0x80084e16","name":"MEM_FREE","arg_in":"0000000000000000","arg_out":"0000000000000000","result":{"ret":0}}"#;
        Recording::from_jsonl(good).unwrap();
        let err = Recording::from_jsonl(&good.replace("MEM_FREE", "MEM_GET_PA")).unwrap_err();
        assert!(
            err.message.contains(
                "record seq 0: name `MEM_GET_PA` is not request 0x80084e16's (`MEM_FREE`)"
            ),
            "{err}"
        );
        let unknown = good.replace("0x80084e16", "0x12345678");
        let err = Recording::from_jsonl(&unknown).unwrap_err();
        assert!(err.message.contains("(`unknown`)"), "{err}");
        Recording::from_jsonl(&unknown.replace("MEM_FREE", "unknown")).unwrap();
    }

    #[test]
    fn from_jsonl_names_the_line() {
        let err = Recording::from_jsonl("\n{\"seq\":0}\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 9), "{err}");
        assert!(err.to_string().starts_with("line 2, column 9: "), "{err}");
        let bad_hex =
            r#"{"seq":0,"kind":"mmap_write","offset":"0x10","bytes":"0g","result":{"ret":0}}"#;
        let err = Recording::from_jsonl(bad_hex).unwrap_err();
        assert_eq!(err.line, 1, "{err}");
        // A probe's finding: the column was the record's end (serde's
        // place for a field's error); it is the bad digit's.
        let at = bad_hex.find("0g").unwrap() + 2;
        assert_eq!(err.column, at, "{err}");
    }

    /// One place per error: the recording's line and the column in it,
    /// never serde's own "at line 1 column N" of the one-line document.
    #[test]
    fn from_jsonl_gives_one_line_number() {
        let text = "{\"seq\":0,\"kind\":\"mmap_read\",\"offset\":\"0x10\",\"len\":4,\"result\":{\"ret\":0}}\n\
                    {\"seq\":1,\"kind\":\"ioctl\",\"request\":5}\n";
        let err = Recording::from_jsonl(text).unwrap_err();
        assert_eq!(err.to_string(), "line 2, column 36: missing field `result`");
        assert_eq!(err.message, "missing field `result`");
        assert!(!err.to_string().contains(" at line "), "{err}");
    }

    #[test]
    fn sha256_is_the_standard_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
