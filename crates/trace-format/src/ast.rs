//! The parsed trace.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::addr::{AddrExpr, QueueRef};
use crate::desc::DescFields;
use crate::number::to_hex;
use crate::span::Span;

/// A parsed trace: its statements in source order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// One per non-blank, non-comment line.
    pub statements: Vec<Statement>,
}

/// One directive line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Statement {
    /// What the line does.
    pub kind: StatementKind,
    /// From the directive keyword to the end of the last argument
    /// (`span.line` is the statement's line).
    pub span: Span,
}

/// The directives of the trace language: v1 (registers and memory) and v2
/// (descriptors, doorbells, `run`, `wait`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StatementKind {
    /// `write32 ADDR VALUE` — a 32-bit register or memory write.
    Write32 {
        /// Target (4-byte aligned when it names a register).
        addr: AddrExpr,
        /// Value written.
        value: u32,
    },
    /// `read32 ADDR [== VALUE] [mask=M]` — read and print, or read and check.
    Read32 {
        /// Source.
        addr: AddrExpr,
        /// Expected value (after masking); `None` = print only.
        expect: Option<u32>,
        /// Mask applied to the value read before printing/comparing.
        mask: Option<u32>,
    },
    /// `fill ADDR len=N (byte=B | pattern=P [seed=S])` — fill a range.
    Fill {
        /// Start of the range.
        addr: AddrExpr,
        /// Bytes to fill (1 ..= [`MAX_LEN`](crate::MAX_LEN)).
        len: u64,
        /// What to fill with.
        content: FillContent,
    },
    /// `write ADDR bytes=HEX` — write literal bytes.
    Write {
        /// Start of the range.
        addr: AddrExpr,
        /// Bytes in memory order (at least one).
        #[serde(serialize_with = "ser_hex")]
        bytes: Vec<u8>,
    },
    /// `load ADDR file=PATH [offset=N] [len=N]` — copy (part of) a file into memory.
    Load {
        /// Start of the destination range.
        addr: AddrExpr,
        /// File to read, relative to the trace file's directory.
        path: FileRef,
        /// First byte of the file to copy (default 0).
        offset: Option<u64>,
        /// Bytes to copy (default: to the end of the file).
        len: Option<u64>,
    },
    /// `expect ADDR bytes=HEX` / `expect ADDR len=N sha256=HEX` — check memory.
    Expect {
        /// Start of the range checked.
        addr: AddrExpr,
        /// What the range must hold.
        check: ExpectCheck,
    },
    /// `dump ADDR len=N [file=PATH]` — hexdump to the run output, or save to a file.
    Dump {
        /// Start of the range.
        addr: AddrExpr,
        /// Bytes to dump.
        len: u64,
        /// Output file (relative to the trace file's directory); `None` = hexdump.
        file: Option<FileRef>,
    },
    /// `desc QUEUE[SLOT] key=value… flag…` — write one 16-byte descriptor
    /// into a queue's ring, at ring base + 16 × slot (v2).
    Desc {
        /// The queue, and the slot if one was written (`None`: the
        /// executor's next software slot for the queue).
        queue: QueueRef,
        /// The descriptor's fields as written.
        fields: DescFields,
    },
    /// `doorbell QUEUE N` — add N to the queue's tail pointer (TDRTP_INC or
    /// RDRTP_INC by direction) (v2).
    Doorbell {
        /// The queue (never has a slot).
        queue: QueueRef,
        /// Descriptors posted: 1 ..= [`MAX_DOORBELL`](crate::MAX_DOORBELL).
        count: u32,
    },
    /// `expect_refusal CORE [count=N]` — an expectation: the core's
    /// firmware has refused a word or call (`count` of them when given) by
    /// now; the refusals it matches are expected, so `--fail-on-fault`
    /// does not fail on them (docs/trace-format.md §4.10).
    ExpectRefusal {
        /// TPB index.
        core: u8,
        /// Exactly this many refusals; `None`: at least one.
        count: Option<u64>,
    },
    /// `expect_fault QUEUE [cause=NAME] [count=N]` — an expectation: the
    /// queue has raised a fault (matching `cause`, `count` times when
    /// given) by now; the faults it matches are expected, so
    /// `--fail-on-fault` does not fail on them (docs/trace-format.md §4.9).
    ExpectFault {
        /// The queue (never has a slot).
        queue: QueueRef,
        /// The cause: `SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE` or the bit
        /// name alone (`DATA_WR_AXI_RESPONSE`); `None`: any cause.
        cause: Option<String>,
        /// Where `cause=` was given (the argument), for an error about
        /// the name; `Span::default()` without it. Not serialized.
        #[serde(skip)]
        cause_span: Span,
        /// Exactly this many raises; `None`: at least one.
        count: Option<u64>,
    },
    /// `run [cycles=N | until=N]` — advance simulated time (v2).
    Run {
        /// How far.
        mode: RunMode,
    },
    /// `inst CORE WORD…` — queue one 64-byte DMA instruction word on a
    /// core's Q7 firmware; `WORD…` is the instruction text form
    /// (`DIRECT2D key=value …`, docs/instruction-words.md), checked when the
    /// trace is linked.
    Inst {
        /// The core, `tpb0` … `tpb7`.
        core: u8,
        /// The instruction text (comment stripped).
        text: String,
        /// Column of the first character of `text`.
        text_column: u32,
    },
    /// `inst_stream CORE file=PATH` — queue every 64-byte word of a binary
    /// instruction stream (what `neuron-sim asm` writes) on a core's Q7
    /// firmware, in file order; PATH is relative to the trace file's
    /// directory (docs/trace-format.md §4.6).
    InstStream {
        /// The core, `tpb0` … `tpb7`.
        core: u8,
        /// The stream file.
        path: FileRef,
    },
    /// `memcpy CORE local=DRAM hbm=ADDR len=N (read | write)` — the core's
    /// firmware runs `neuron_memcpy` (P9.1 §5): by the selected method,
    /// between its dataram (local address 0x80000..0x90000) and `hbm`.
    Memcpy {
        /// TPB index.
        core: u8,
        /// Q7-local dataram address.
        local: u32,
        /// The other end (any SoC address).
        hbm: AddrExpr,
        /// Bytes.
        len: u64,
        /// `read`: HBM into the dataram; `write`: the dataram to HBM.
        is_read: bool,
    },
    /// `memcpy_method CORE M` — `neuron_set_memcpy_method(M)` (P9.1
    /// §5.3, with its guard quirk).
    MemcpyMethod {
        /// TPB index.
        core: u8,
        /// The method index asked for.
        method: u8,
    },
    /// `icache_init CORE block_size=N` — the legacy iDMA's `IRAM cache
    /// init` (P9.1 §7).
    IcacheInit {
        /// TPB index.
        core: u8,
        /// Bytes per cache line.
        block_size: u32,
    },
    /// `icache_fill CORE fetch=ADDR lines=N` — `start_fill_siram`: refill N
    /// instruction-cache lines from `fetch` (P9.1 §7).
    IcacheFill {
        /// TPB index.
        core: u8,
        /// Where the code is (any SoC address).
        fetch: AddrExpr,
        /// Lines, 1..=31.
        lines: u32,
    },
    /// A host operation (v3): the runtime's allocator and copies through
    /// the ioctl bus.
    Host {
        /// The operation.
        op: crate::host::HostOp,
        /// `status=S`: the NRT status the call must return (an
        /// expectation); `None`: success expected, failure is an error.
        status: Option<&'static str>,
    },
    /// `wait ADDR (== | != | >=) VALUE [mask=M] [timeout=N]` — run until a
    /// 32-bit read satisfies the comparison (v2).
    Wait {
        /// What is read (register, semaphore or memory).
        addr: AddrExpr,
        /// The comparison.
        compare: Compare,
        /// The value compared with (after masking).
        value: u32,
        /// Mask applied to the value read (default all ones).
        mask: Option<u32>,
        /// Cycles to wait at most (default
        /// [`DEFAULT_WAIT_TIMEOUT`](crate::DEFAULT_WAIT_TIMEOUT)); running
        /// out is an expectation failure.
        timeout: Option<u64>,
    },
}

/// A comparison of `wait` (and, `==` only, `read32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>=` (unsigned)
    Ge,
}

impl Compare {
    /// The operator as written (`==`, `!=`, `>=`).
    pub fn symbol(self) -> &'static str {
        match self {
            Compare::Eq => "==",
            Compare::Ne => "!=",
            Compare::Ge => ">=",
        }
    }

    /// Whether `actual OP expected` holds (unsigned).
    pub fn holds(self, actual: u32, expected: u32) -> bool {
        match self {
            Compare::Eq => actual == expected,
            Compare::Ne => actual != expected,
            Compare::Ge => actual >= expected,
        }
    }
}

impl fmt::Display for Compare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// How far a `run` advances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// `run`: until no events are pending (the device is idle).
    Idle,
    /// `run cycles=N`: N more cycles (N ≥ 1).
    Cycles(u64),
    /// `run until=N`: until absolute cycle N (nothing if already there).
    Until(u64),
}

impl StatementKind {
    /// The directive keyword (`"write32"`, `"fill"`, …).
    pub fn directive(&self) -> &'static str {
        match self {
            StatementKind::Write32 { .. } => "write32",
            StatementKind::Read32 { .. } => "read32",
            StatementKind::Fill { .. } => "fill",
            StatementKind::Write { .. } => "write",
            StatementKind::Load { .. } => "load",
            StatementKind::Expect { .. } => "expect",
            StatementKind::Dump { .. } => "dump",
            StatementKind::Desc { .. } => "desc",
            StatementKind::Doorbell { .. } => "doorbell",
            StatementKind::ExpectFault { .. } => "expect_fault",
            StatementKind::ExpectRefusal { .. } => "expect_refusal",
            StatementKind::Run { .. } => "run",
            StatementKind::Wait { .. } => "wait",
            StatementKind::Inst { .. } => "inst",
            StatementKind::InstStream { .. } => "inst_stream",
            StatementKind::Memcpy { .. } => "memcpy",
            StatementKind::MemcpyMethod { .. } => "memcpy_method",
            StatementKind::IcacheInit { .. } => "icache_init",
            StatementKind::IcacheFill { .. } => "icache_fill",
            StatementKind::Host { op, .. } => op.directive(),
        }
    }

    /// The address the statement operates on (`write32` … `dump`, `wait`);
    /// `None` for `desc`, `doorbell` and `run`.
    pub fn try_addr(&self) -> Option<&AddrExpr> {
        match self {
            StatementKind::Write32 { addr, .. }
            | StatementKind::Read32 { addr, .. }
            | StatementKind::Fill { addr, .. }
            | StatementKind::Write { addr, .. }
            | StatementKind::Load { addr, .. }
            | StatementKind::Expect { addr, .. }
            | StatementKind::Dump { addr, .. }
            | StatementKind::Memcpy { hbm: addr, .. }
            | StatementKind::IcacheFill { fetch: addr, .. }
            | StatementKind::Wait { addr, .. } => Some(addr),
            StatementKind::Desc { .. }
            | StatementKind::Doorbell { .. }
            | StatementKind::ExpectFault { .. }
            | StatementKind::ExpectRefusal { .. }
            | StatementKind::Inst { .. }
            | StatementKind::InstStream { .. }
            | StatementKind::MemcpyMethod { .. }
            | StatementKind::IcacheInit { .. }
            | StatementKind::Host { .. }
            | StatementKind::Run { .. } => None,
        }
    }

    fn try_addr_mut(&mut self) -> Option<&mut AddrExpr> {
        match self {
            StatementKind::Write32 { addr, .. }
            | StatementKind::Read32 { addr, .. }
            | StatementKind::Fill { addr, .. }
            | StatementKind::Write { addr, .. }
            | StatementKind::Load { addr, .. }
            | StatementKind::Expect { addr, .. }
            | StatementKind::Dump { addr, .. }
            | StatementKind::Memcpy { hbm: addr, .. }
            | StatementKind::IcacheFill { fetch: addr, .. }
            | StatementKind::Wait { addr, .. } => Some(addr),
            StatementKind::Desc { .. }
            | StatementKind::Doorbell { .. }
            | StatementKind::ExpectFault { .. }
            | StatementKind::ExpectRefusal { .. }
            | StatementKind::Inst { .. }
            | StatementKind::InstStream { .. }
            | StatementKind::MemcpyMethod { .. }
            | StatementKind::IcacheInit { .. }
            | StatementKind::Host { .. }
            | StatementKind::Run { .. } => None,
        }
    }

    /// Every address expression of the statement, mutable (to substitute
    /// `@tensor` bases when the statement runs).
    pub fn addrs_mut(&mut self) -> Vec<&mut AddrExpr> {
        match self {
            StatementKind::Desc { fields, .. } => {
                let mut v: Vec<&mut AddrExpr> = Vec::new();
                if let Some(a) = fields.addr.as_mut() {
                    v.push(&mut a.addr);
                }
                if let Some(b) = fields.buf2.as_mut() {
                    v.push(b);
                }
                v
            }
            other => other.try_addr_mut().into_iter().collect(),
        }
    }

    /// Every address expression of the statement, in source order: the
    /// address of a v1 directive or `wait`; a descriptor's buffer address
    /// and `buf2`. (Queues are separate: [`queue`](Self::queue).)
    pub fn addrs(&self) -> Vec<&AddrExpr> {
        match self {
            StatementKind::Desc { fields, .. } => fields.addrs().collect(),
            other => other.try_addr().into_iter().collect(),
        }
    }

    /// The queue of a `desc`, `doorbell` or `expect_fault`.
    pub fn queue(&self) -> Option<&QueueRef> {
        match self {
            StatementKind::Desc { queue, .. }
            | StatementKind::Doorbell { queue, .. }
            | StatementKind::ExpectFault { queue, .. } => Some(queue),
            _ => None,
        }
    }
}

/// The content of a `fill`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillContent {
    /// `byte=B`: every byte is `B`.
    Byte(u8),
    /// `pattern=P [seed=S]`.
    Pattern {
        /// Which pattern.
        kind: FillPattern,
        /// First element (default 0); fits the element width.
        seed: u64,
    },
}

/// Fill patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillPattern {
    /// Byte `i` is `(seed + i) mod 2^8`.
    Incr8,
    /// Little-endian 32-bit word `i` is `(seed + i) mod 2^32`; `len` is a
    /// multiple of 4.
    Incr32,
}

impl FillPattern {
    /// The keyword (`incr8`, `incr32`).
    pub fn name(self) -> &'static str {
        match self {
            FillPattern::Incr8 => "incr8",
            FillPattern::Incr32 => "incr32",
        }
    }

    /// Element size in bytes.
    pub fn width(self) -> u64 {
        match self {
            FillPattern::Incr8 => 1,
            FillPattern::Incr32 => 4,
        }
    }

    /// Fills `buf` with the bytes from offset `start` of a fill with this
    /// pattern and `seed` (what [`FillPattern::byte_at`] gives, a word at a
    /// time).
    pub fn fill(self, seed: u64, start: u64, buf: &mut [u8]) {
        match self {
            FillPattern::Incr8 => {
                let mut b = seed.wrapping_add(start) as u8;
                for x in buf.iter_mut() {
                    *x = b;
                    b = b.wrapping_add(1);
                }
            }
            FillPattern::Incr32 => {
                // Bytes up to the next word boundary, whole words, the rest.
                let n = buf.len();
                let lead = usize::try_from((4 - start % 4) % 4)
                    .unwrap_or(0)
                    .min(buf.len());
                for (k, x) in buf[..lead].iter_mut().enumerate() {
                    *x = self.byte_at(seed, start.wrapping_add(k as u64));
                }
                let first = start.wrapping_add(lead as u64);
                let mut word = seed.wrapping_add(first / 4) as u32;
                // Sixteen words at a time (vectorised), then word by word.
                let mut blocks = buf[lead..].chunks_exact_mut(64);
                for block in &mut blocks {
                    let words: [u32; 16] = std::array::from_fn(|i| word.wrapping_add(i as u32));
                    for (c, w) in block.chunks_exact_mut(4).zip(words) {
                        c.copy_from_slice(&w.to_le_bytes());
                    }
                    word = word.wrapping_add(16);
                }
                let mut chunks = blocks.into_remainder().chunks_exact_mut(4);
                for c in &mut chunks {
                    c.copy_from_slice(&word.to_le_bytes());
                    word = word.wrapping_add(1);
                }
                let tail = chunks.into_remainder();
                let tail_start = start.wrapping_add((n - tail.len()) as u64);
                for (k, x) in tail.iter_mut().enumerate() {
                    *x = self.byte_at(seed, tail_start.wrapping_add(k as u64));
                }
            }
        }
    }

    /// The byte at offset `i` of a fill with this pattern and `seed`.
    pub fn byte_at(self, seed: u64, i: u64) -> u8 {
        match self {
            FillPattern::Incr8 => seed.wrapping_add(i).to_le_bytes()[0],
            FillPattern::Incr32 => {
                let word = (seed.wrapping_add(i / 4) & 0xffff_ffff).to_le_bytes();
                word[(i % 4) as usize]
            }
        }
    }
}

/// What an `expect` checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectCheck {
    /// `bytes=HEX`: the range (as long as the bytes) holds exactly these bytes.
    Bytes(#[serde(serialize_with = "ser_hex")] Vec<u8>),
    /// `len=N sha256=HEX`: the SHA-256 of the `len`-byte range is `digest`.
    Sha256 {
        /// Bytes hashed.
        len: u64,
        /// Expected digest.
        #[serde(serialize_with = "ser_hex")]
        digest: [u8; 32],
    },
}

/// A file name argument, as written, with its position (for "file not
/// found" errors). Relative paths are relative to the trace file's directory;
/// the executor resolves them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileRef {
    /// The path text (quotes removed, escapes resolved).
    pub path: String,
    /// Where the value was written.
    pub span: Span,
}

fn ser_hex<S: Serializer, B: AsRef<[u8]>>(bytes: &B, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_hex(bytes.as_ref()))
}

/// [`ser_hex`] for the other modules of the crate.
pub(crate) fn ser_hex_pub<S: Serializer, B: AsRef<[u8]>>(
    bytes: &B,
    s: S,
) -> Result<S::Ok, S::Error> {
    ser_hex(bytes, s)
}

impl Trace {
    /// Sets every span to `Span::default()` (to compare traces by structure).
    pub fn clear_spans(&mut self) {
        for s in &mut self.statements {
            s.clear_spans();
        }
    }
}

impl Statement {
    /// Sets every span to `Span::default()`.
    pub fn clear_spans(&mut self) {
        self.span = Span::default();
        if let Some(addr) = self.kind.try_addr_mut() {
            addr.clear_spans();
        }
        match &mut self.kind {
            StatementKind::Load { path, .. } | StatementKind::InstStream { path, .. } => {
                path.span = Span::default();
            }
            StatementKind::Dump { file: Some(f), .. } => f.span = Span::default(),
            StatementKind::Desc { queue, fields } => {
                queue.clear_spans();
                for a in fields.addrs_mut() {
                    a.clear_spans();
                }
                fields.given.clear();
            }
            StatementKind::Doorbell { queue, .. } => queue.clear_spans(),
            StatementKind::ExpectFault {
                queue, cause_span, ..
            } => {
                queue.clear_spans();
                *cause_span = Span::default();
            }
            _ => {}
        }
    }
}

impl fmt::Display for FileRef {
    /// Bare when the path is a plain word, otherwise quoted with `\"` and
    /// `\\` escapes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bare = !self.path.is_empty()
            && self
                .path
                .chars()
                .all(|c| !(c.is_whitespace() || matches!(c, '#' | '=' | '"' | '\\')));
        if bare {
            return f.write_str(&self.path);
        }
        f.write_str("\"")?;
        for c in self.path.chars() {
            if c == '"' || c == '\\' {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("\"")
    }
}

impl fmt::Display for StatementKind {
    /// Canonical text of the statement; parsing it gives back the same
    /// statement (spans aside).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.directive())?;
        if let Some(addr) = self.try_addr()
            && !matches!(
                self,
                StatementKind::Memcpy { .. } | StatementKind::IcacheFill { .. }
            )
        {
            write!(f, " {addr}")?;
        }
        match self {
            StatementKind::Host { op, status } => {
                op.fmt_args(f)?;
                match status {
                    Some(st) => write!(f, " status={st}"),
                    None => Ok(()),
                }
            }
            StatementKind::Write32 { value, .. } => write!(f, " {value:#010x}"),
            StatementKind::Read32 { expect, mask, .. } => {
                if let Some(v) = expect {
                    write!(f, " == {v:#010x}")?;
                }
                if let Some(m) = mask {
                    write!(f, " mask={m:#010x}")?;
                }
                Ok(())
            }
            StatementKind::Fill { len, content, .. } => {
                write!(f, " len={len}")?;
                match content {
                    FillContent::Byte(b) => write!(f, " byte={b:#04x}"),
                    FillContent::Pattern { kind, seed } => {
                        write!(f, " pattern={}", kind.name())?;
                        if *seed != 0 {
                            write!(f, " seed={seed:#x}")?;
                        }
                        Ok(())
                    }
                }
            }
            StatementKind::Write { bytes, .. } => write!(f, " bytes={}", to_hex(bytes)),
            StatementKind::Load {
                path, offset, len, ..
            } => {
                write!(f, " file={path}")?;
                if let Some(o) = offset {
                    write!(f, " offset={o:#x}")?;
                }
                if let Some(l) = len {
                    write!(f, " len={l}")?;
                }
                Ok(())
            }
            StatementKind::Expect { check, .. } => match check {
                ExpectCheck::Bytes(b) => write!(f, " bytes={}", to_hex(b)),
                ExpectCheck::Sha256 { len, digest } => {
                    write!(f, " len={len} sha256={}", to_hex(digest))
                }
            },
            StatementKind::Dump { len, file, .. } => {
                write!(f, " len={len}")?;
                if let Some(file) = file {
                    write!(f, " file={file}")?;
                }
                Ok(())
            }
            StatementKind::Desc { queue, fields } => write!(f, " {queue} {fields}"),
            StatementKind::Doorbell { queue, count } => write!(f, " {queue} {count}"),
            StatementKind::ExpectFault {
                queue,
                cause,
                count,
                ..
            } => {
                write!(f, " {queue}")?;
                if let Some(c) = cause {
                    write!(f, " cause={c}")?;
                }
                if let Some(n) = count {
                    write!(f, " count={n}")?;
                }
                Ok(())
            }
            StatementKind::Inst { core, text, .. } => write!(f, " tpb{core} {text}"),
            StatementKind::InstStream { core, path } => write!(f, " tpb{core} file={path}"),
            StatementKind::Memcpy {
                core,
                local,
                hbm,
                len,
                is_read,
            } => write!(
                f,
                " tpb{core} local={local:#x} hbm={hbm} len={len} {}",
                if *is_read { "read" } else { "write" }
            ),
            StatementKind::MemcpyMethod { core, method } => write!(f, " tpb{core} {method}"),
            StatementKind::ExpectRefusal { core, count } => {
                write!(f, " tpb{core}")?;
                if let Some(n) = count {
                    write!(f, " count={n}")?;
                }
                Ok(())
            }
            StatementKind::IcacheInit { core, block_size } => {
                write!(f, " tpb{core} block_size={block_size:#x}")
            }
            StatementKind::IcacheFill { core, fetch, lines } => {
                write!(f, " tpb{core} fetch={fetch} lines={lines}")
            }
            StatementKind::Run { mode } => match mode {
                RunMode::Idle => Ok(()),
                RunMode::Cycles(n) => write!(f, " cycles={n}"),
                RunMode::Until(n) => write!(f, " until={n}"),
            },
            StatementKind::Wait {
                compare,
                value,
                mask,
                timeout,
                ..
            } => {
                write!(f, " {compare} {value:#010x}")?;
                if let Some(m) = mask {
                    write!(f, " mask={m:#010x}")?;
                }
                if let Some(t) = timeout {
                    write!(f, " timeout={t}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl fmt::Display for Trace {
    /// One canonical statement per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.statements {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}
