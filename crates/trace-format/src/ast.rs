//! The parsed trace.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::addr::AddrExpr;
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

/// The directives of trace language v1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
        }
    }

    /// The address every v1 directive operates on.
    pub fn addr(&self) -> &AddrExpr {
        match self {
            StatementKind::Write32 { addr, .. }
            | StatementKind::Read32 { addr, .. }
            | StatementKind::Fill { addr, .. }
            | StatementKind::Write { addr, .. }
            | StatementKind::Load { addr, .. }
            | StatementKind::Expect { addr, .. }
            | StatementKind::Dump { addr, .. } => addr,
        }
    }

    fn addr_mut(&mut self) -> &mut AddrExpr {
        match self {
            StatementKind::Write32 { addr, .. }
            | StatementKind::Read32 { addr, .. }
            | StatementKind::Fill { addr, .. }
            | StatementKind::Write { addr, .. }
            | StatementKind::Load { addr, .. }
            | StatementKind::Expect { addr, .. }
            | StatementKind::Dump { addr, .. } => addr,
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
        self.kind.addr_mut().clear_spans();
        match &mut self.kind {
            StatementKind::Load { path, .. } => path.span = Span::default(),
            StatementKind::Dump { file: Some(f), .. } => f.span = Span::default(),
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
        write!(f, "{} {}", self.directive(), self.addr())?;
        match self {
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
