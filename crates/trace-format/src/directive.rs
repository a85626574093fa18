//! The directive table and the generic argument checker.
//!
//! Every directive is one [`DirectiveSpec`] row: its positional parameters,
//! the comparisons it takes (`== VALUE`…), its `key=value` parameters with
//! their value kinds, its bare flag words, and a `build` function that turns
//! the checked arguments into a [`StatementKind`]. The generic checker
//! reports unknown, duplicate, missing and surplus arguments and parses every
//! value by its kind, so a new directive needs only a row, a `build`
//! function and an AST variant.

use std::fmt;

mod host_ops;
mod table;

use host_ops::*;
use table::DIRECTIVES;

use crate::addr::{AddrExpr, QueueRef, parse_addr_at, parse_queue_at};
use crate::ast::{
    Compare, ExpectCheck, FileRef, FillContent, FillPattern, RunMode, Statement, StatementKind,
};
use crate::desc::{AddrRole, CceOp, CmeOp, DescAddr, DescFields, DescFlag, DescFlags, Dtype};
use crate::error::{Diag, quote};
use crate::host::{HostCheck, HostData, HostOp};
use crate::lex::{RawArg, RawLine, Word, is_identifier};
use crate::number::{
    Float, FloatError, HexError, NumError, parse_float, parse_hex_bytes, parse_u64,
};
use crate::span::Span;
use crate::{MAX_DESC_LEN, MAX_DOORBELL, MAX_LEN};

/// The type of an argument value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// An address expression.
    Addr,
    /// A number that fits in 32 bits.
    U32,
    /// A number that fits in 8 bits.
    U8,
    /// Any 64-bit number.
    U64,
    /// A byte count: 1 ..= [`MAX_LEN`].
    Len,
    /// Hex digits, two per byte in memory order, `_` separators allowed.
    HexBytes,
    /// Exactly 64 hex digits (a SHA-256 digest).
    Sha256,
    /// A file name (a word or a quoted string).
    Path,
    /// One of a fixed set of keywords.
    Choice(&'static [&'static str]),
    /// A number in `min ..= max`.
    Int {
        /// Smallest value accepted.
        min: u64,
        /// Largest value accepted.
        max: u64,
    },
    /// A finite decimal float literal (`0.5`, `2`, `-1.25e-3`).
    Float,
    /// Exactly this many bytes of hex digits, in memory order.
    HexExact(usize),
    /// An identifier (a tensor or allocator name).
    Name,
    /// A comma-separated list of identifiers (`a,b,c`).
    Names,
    /// Identifiers joined by dots: a register field (`SEC_B_INT_CAUSE.PKT_LEN_MISMATCH`)
    /// or a field name alone.
    Field,
    /// A queue path (`eng0.m2s.q0`); with `slot`, also `eng0.m2s.q0[5]`.
    Queue {
        /// Whether a ring slot index is allowed.
        slot: bool,
    },
}

impl ValueKind {
    fn describe(self) -> String {
        match self {
            ValueKind::Addr => "an address".into(),
            ValueKind::U32 => "a 32-bit number".into(),
            ValueKind::U8 => "a byte value (0..=0xff)".into(),
            ValueKind::U64 => "a number".into(),
            ValueKind::Len => "a length in bytes".into(),
            ValueKind::HexBytes => "hex bytes (like de_ad_be_ef)".into(),
            ValueKind::Sha256 => "64 hex digits".into(),
            ValueKind::Path => "a file name".into(),
            ValueKind::Choice(opts) => format!("one of: {}", opts.join(", ")),
            ValueKind::Int { min, max } => format!("a number in {min}..={}", show_max(max)),
            ValueKind::Float => "a decimal number (like 0.5, 2 or -1.25e-3)".into(),
            ValueKind::HexExact(n) => format!("{} hex digits", n * 2),
            ValueKind::Name => "a name (letters, digits, '_')".into(),
            ValueKind::Names => "names separated by commas (like a,b,c)".into(),
            ValueKind::Field => {
                "a cause name (like SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE or PKT_LEN)".into()
            }
            ValueKind::Queue { slot: false } => "a queue (like eng0.m2s.q0)".into(),
            ValueKind::Queue { slot: true } => {
                "a queue (like eng0.m2s.q0 or eng0.m2s.q0[5])".into()
            }
        }
    }
}

/// A bound for messages: decimal, plus hex when large.
fn show_max(max: u64) -> String {
    if max < 1024 {
        max.to_string()
    } else {
        format!("{max} ({max:#x})")
    }
}

/// One parameter of a directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// For keys, the key (`len`); for positionals, a description used in
    /// messages (`address`, `value`).
    pub name: &'static str,
    /// What the value must be.
    pub kind: ValueKind,
    /// Whether the generic checker reports it missing. Arguments that are
    /// required only in some combinations are checked by the directive.
    pub required: bool,
}

const fn req(name: &'static str, kind: ValueKind) -> Param {
    Param {
        name,
        kind,
        required: true,
    }
}

const fn opt(name: &'static str, kind: ValueKind) -> Param {
    Param {
        name,
        kind,
        required: false,
    }
}

type BuildFn = fn(&mut Args<'_>) -> Option<StatementKind>;

/// One row of the directive table.
#[derive(Clone, Copy)]
pub struct DirectiveSpec {
    /// The keyword.
    pub name: &'static str,
    /// One-line synopsis, quoted in error messages.
    pub usage: &'static str,
    /// Positional parameters, in order.
    pub positionals: &'static [Param],
    /// `Some(kind)` when the directive accepts a comparison (`== VALUE`…)
    /// after its positionals.
    pub compare: Option<ValueKind>,
    /// The comparison operators accepted (empty when `compare` is `None`).
    pub compare_ops: &'static [Compare],
    /// `key=value` parameters, in the order error messages list them.
    pub keys: &'static [Param],
    /// Bare flag words (like `first`), which may appear anywhere among the
    /// arguments, each at most once.
    pub flags: &'static [&'static str],
    build: BuildFn,
}

impl fmt::Debug for DirectiveSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectiveSpec")
            .field("name", &self.name)
            .field("usage", &self.usage)
            .field("positionals", &self.positionals)
            .field("compare", &self.compare)
            .field("compare_ops", &self.compare_ops)
            .field("keys", &self.keys)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

const ADDR: Param = req("address", ValueKind::Addr);
/// The cores `memcpy`, `memcpy_method` and `expect_refusal` name.
const CORES: &[&str] = &[
    "tpb0", "tpb1", "tpb2", "tpb3", "tpb4", "tpb5", "tpb6", "tpb7",
];
const PATTERNS: &[&str] = &["incr8", "incr32"];
const ON_OFF: &[&str] = &["on", "off"];
/// The data keys of `copyin`.
const HOST_DATA_KEYS: &[Param] = &[
    opt("byte", ValueKind::U8),
    opt("pattern", ValueKind::Choice(PATTERNS)),
    opt("seed", ValueKind::U64),
    opt("file", ValueKind::Path),
    opt("file_offset", ValueKind::U64),
    opt("offset", ValueKind::U64),
    opt("len", ValueKind::Len),
    opt("status", ValueKind::Choice(crate::host::STATUS_NAMES)),
];
/// The keys of `copyout`: the data keys and `sha256`.
const COPYOUT_KEYS: &[Param] = &[
    opt("byte", ValueKind::U8),
    opt("pattern", ValueKind::Choice(PATTERNS)),
    opt("seed", ValueKind::U64),
    opt("file", ValueKind::Path),
    opt("file_offset", ValueKind::U64),
    opt("offset", ValueKind::U64),
    opt("len", ValueKind::Len),
    opt("sha256", ValueKind::Sha256),
    opt("status", ValueKind::Choice(crate::host::STATUS_NAMES)),
];

/// All directives of the language, in documentation order.
pub fn directives() -> &'static [DirectiveSpec] {
    DIRECTIVES
}

/// The directive named `name` (case-sensitive).
pub fn directive(name: &str) -> Option<&'static DirectiveSpec> {
    DIRECTIVES.iter().find(|d| d.name == name)
}

/// A parsed argument value.
#[derive(Clone, Debug)]
enum Value {
    Addr(AddrExpr),
    Num(u64),
    Bytes(Vec<u8>),
    Digest([u8; 32]),
    Path(FileRef),
    Choice(&'static str),
    Float(f64),
    Queue(QueueRef),
    Name(String),
    Names(Vec<String>),
}

/// The checked arguments of one line, handed to a `build` function.
struct Args<'a> {
    spec: &'static DirectiveSpec,
    positionals: Vec<Option<Value>>,
    keys: Vec<Option<(Value, Span)>>,
    /// The flags given, in source order, with their spans.
    flags: Vec<(&'static str, Span)>,
    /// The comparison, its value and the span from operator to value.
    compare: Option<(Compare, Value, Span)>,
    /// The whole statement.
    line: Span,
    diags: &'a mut Vec<Diag>,
}

impl Args<'_> {
    fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diags.push(Diag::new(span, message));
    }

    fn usage(&self) -> String {
        format!("usage: {}", self.spec.usage)
    }

    fn positional(&mut self, i: usize) -> Option<Value> {
        self.positionals.get_mut(i).and_then(Option::take)
    }

    fn addr(&mut self) -> Option<AddrExpr> {
        match self.positional(0) {
            Some(Value::Addr(a)) => Some(a),
            _ => None,
        }
    }

    fn key(&mut self, name: &str) -> Option<(Value, Span)> {
        let i = self.spec.keys.iter().position(|p| p.name == name)?;
        self.keys.get_mut(i).and_then(Option::take)
    }

    fn key_num(&mut self, name: &str) -> Option<(u64, Span)> {
        match self.key(name) {
            Some((Value::Num(n), span)) => Some((n, span)),
            _ => None,
        }
    }

    fn key_u32(&mut self, name: &str) -> Option<(u32, Span)> {
        self.key_num(name)
            .and_then(|(n, span)| u32::try_from(n).ok().map(|n| (n, span)))
    }

    fn key_bytes(&mut self, name: &str) -> Option<(Vec<u8>, Span)> {
        match self.key(name) {
            Some((Value::Bytes(b), span)) => Some((b, span)),
            _ => None,
        }
    }

    fn key_path(&mut self, name: &str) -> Option<FileRef> {
        match self.key(name) {
            Some((Value::Path(p), _)) => Some(p),
            _ => None,
        }
    }

    fn key_addr(&mut self, name: &str) -> Option<(AddrExpr, Span)> {
        match self.key(name) {
            Some((Value::Addr(a), span)) => Some((a, span)),
            _ => None,
        }
    }

    /// A `Choice` key mapped through `from_name`.
    fn key_choice<T>(&mut self, name: &str, from_name: fn(&str) -> Option<T>) -> Option<(T, Span)> {
        match self.key(name) {
            Some((Value::Choice(c), span)) => from_name(c).map(|v| (v, span)),
            _ => None,
        }
    }

    /// Where key `name` was given (without taking its value).
    fn key_span(&self, name: &str) -> Option<Span> {
        let i = self.spec.keys.iter().position(|p| p.name == name)?;
        self.keys.get(i)?.as_ref().map(|(_, span)| *span)
    }

    /// Every key and flag given, with its span, in source order.
    fn given(&self) -> Vec<(&'static str, Span)> {
        let mut all: Vec<(&'static str, Span)> = self
            .spec
            .keys
            .iter()
            .zip(&self.keys)
            .filter_map(|(p, v)| v.as_ref().map(|(_, span)| (p.name, *span)))
            .chain(self.flags.iter().copied())
            .collect();
        all.sort_by_key(|(_, span)| span.column);
        all
    }
}

/// The candidate closest to `word` (case-insensitive), if one is close:
/// see [`closest_name`](crate::closest_name).
fn closest(word: &str, candidates: impl IntoIterator<Item = &'static str>) -> Option<&'static str> {
    crate::closest_name(word, candidates)
}

/// "; did you mean 'x'?" when a candidate is close to `word`, else "".
fn suggestion(word: &str, candidates: impl IntoIterator<Item = &'static str>) -> String {
    match closest(word, candidates) {
        Some(c) => format!("; did you mean '{c}'?"),
        None => String::new(),
    }
}

/// Parses `word` as a value of `kind`; `what` names it in messages.
fn parse_value(kind: ValueKind, word: &Word, what: &str) -> Result<Value, Diag> {
    let text = word.text.as_str();
    let span = word.span;
    if word.quoted && kind != ValueKind::Path {
        return Err(Diag::new(
            span,
            format!(
                "{what} expects {}, found {}",
                kind.describe(),
                word.describe()
            ),
        ));
    }
    let number = |max: u64| -> Result<u64, Diag> {
        let n = parse_u64(text).map_err(|e| match e {
            NumError::Invalid => Diag::new(
                span,
                format!("{what} expects {}, found {}", kind.describe(), quote(text)),
            ),
            NumError::Overflow => Diag::new(
                span,
                format!(
                    "{what} is too large: {} does not fit in 64 bits",
                    quote(text)
                ),
            ),
        })?;
        if n > max {
            let bits = 64 - max.leading_zeros();
            return Err(Diag::new(
                span,
                format!(
                    "{what} must fit in {bits} bits (at most {max:#x}), found {}",
                    quote(text)
                ),
            ));
        }
        Ok(n)
    };
    let exact_digits = match kind {
        ValueKind::Sha256 => Some(64),
        ValueKind::HexExact(n) => Some(n * 2),
        _ => None,
    };
    let hex =
        |text: &str| -> Result<Vec<u8>, Diag> {
            if text.len() >= 2 && text.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x")) {
                return Err(Diag::new(
                    span,
                    format!("{what} takes hex digits in memory order, without a '0x' prefix"),
                ));
            }
            parse_hex_bytes(text).map_err(|e| match e {
            HexError::BadChar { index, ch } => {
                let col = span
                    .column
                    .saturating_add(u32::try_from(index).unwrap_or(u32::MAX));
                Diag::new(
                    Span::new(span.line, col, 1),
                    format!("{what} expects hex digits, found {}", quote(&ch.to_string())),
                )
            }
            HexError::OddDigits(n) if exact_digits.is_some() => Diag::new(
                span,
                format!("{what} expects {} hex digits, found {n}", exact_digits.unwrap_or(0)),
            ),
            HexError::OddDigits(n) => Diag::new(
                span,
                format!(
                    "{what} expects whole bytes (an even number of hex digits), found {n} digits"
                ),
            ),
            HexError::Empty if exact_digits.is_some() => Diag::new(
                span,
                format!("{what} expects {} hex digits, found 0", exact_digits.unwrap_or(0)),
            ),
            HexError::Empty => Diag::new(
                span,
                format!("{what} expects at least one byte of hex digits, found none"),
            ),
        })
        };
    match kind {
        ValueKind::Addr => parse_addr_at(text, span).map(Value::Addr),
        ValueKind::U32 => number(u64::from(u32::MAX)).map(Value::Num),
        ValueKind::U8 => number(u64::from(u8::MAX)).map(Value::Num),
        ValueKind::U64 => number(u64::MAX).map(Value::Num),
        ValueKind::Len => {
            let n = number(u64::MAX)?;
            if n == 0 {
                Err(Diag::new(span, format!("{what} must be greater than 0")))
            } else if n > MAX_LEN {
                Err(Diag::new(
                    span,
                    format!(
                        "{what} must be at most {MAX_LEN:#x} (4 GiB), found {}",
                        quote(text)
                    ),
                ))
            } else {
                Ok(Value::Num(n))
            }
        }
        ValueKind::HexBytes => hex(text).map(Value::Bytes),
        ValueKind::Sha256 => {
            let bytes = hex(text)?;
            <[u8; 32]>::try_from(bytes.as_slice())
                .map(Value::Digest)
                .map_err(|_| {
                    Diag::new(
                        span,
                        format!("{what} expects 64 hex digits, found {}", bytes.len() * 2),
                    )
                })
        }
        ValueKind::Path => {
            if text.is_empty() {
                Err(Diag::new(
                    span,
                    format!("{what} expects a file name, found an empty string"),
                ))
            } else {
                Ok(Value::Path(FileRef {
                    path: text.to_string(),
                    span,
                }))
            }
        }
        ValueKind::Int { min, max } => {
            let n = number(u64::MAX)?;
            if n < min {
                Err(Diag::new(
                    span,
                    if min == 1 && n == 0 {
                        format!("{what} must be greater than 0")
                    } else {
                        format!("{what} must be at least {min}, found {}", quote(text))
                    },
                ))
            } else if n > max {
                Err(Diag::new(
                    span,
                    format!(
                        "{what} must be at most {}, found {}",
                        show_max(max),
                        quote(text)
                    ),
                ))
            } else {
                Ok(Value::Num(n))
            }
        }
        ValueKind::Float => match parse_float(text) {
            Ok(v) => Ok(Value::Float(v)),
            Err(FloatError::Invalid) => Err(Diag::new(
                span,
                format!("{what} expects {}, found {}", kind.describe(), quote(text)),
            )),
            Err(FloatError::Overflow) => Err(Diag::new(
                span,
                format!("{what} is out of range: {}", quote(text)),
            )),
        },
        ValueKind::HexExact(n) => {
            let bytes = hex(text)?;
            if bytes.len() != n {
                return Err(Diag::new(
                    span,
                    format!(
                        "{what} expects {} hex digits, found {}",
                        n * 2,
                        bytes.len() * 2
                    ),
                ));
            }
            Ok(Value::Bytes(bytes))
        }
        ValueKind::Queue { slot } => parse_queue_at(text, span, slot, what).map(Value::Queue),
        ValueKind::Name => {
            if is_identifier(text) {
                Ok(Value::Name(text.to_string()))
            } else {
                Err(Diag::new(
                    span,
                    format!("{what} expects {}, found {}", kind.describe(), quote(text)),
                ))
            }
        }
        ValueKind::Field => {
            if text.split('.').all(is_identifier) {
                Ok(Value::Name(text.to_string()))
            } else {
                Err(Diag::new(
                    span,
                    format!("{what} expects {}, found {}", kind.describe(), quote(text)),
                ))
            }
        }
        ValueKind::Names => {
            let names: Vec<String> = text.split(',').map(str::to_string).collect();
            if names.iter().all(|n| is_identifier(n)) {
                Ok(Value::Names(names))
            } else {
                Err(Diag::new(
                    span,
                    format!("{what} expects {}, found {}", kind.describe(), quote(text)),
                ))
            }
        }
        ValueKind::Choice(opts) => match opts.iter().find(|o| **o == text) {
            Some(o) => Ok(Value::Choice(o)),
            None => Err(Diag::new(
                span,
                format!(
                    "unknown value {} for {what} (expected one of: {}){}",
                    quote(text),
                    opts.join(", "),
                    suggestion(text, opts.iter().copied())
                ),
            )),
        },
    }
}

/// The error for a bare word that is neither a flag nor a positional.
fn unexpected_word(spec: &DirectiveSpec, word: &Word, usage: &str) -> Diag {
    let text = word.text.as_str();
    if spec.flags.is_empty() || word.quoted || !is_identifier(text) {
        return Diag::new(
            word.span,
            format!(
                "unexpected argument {} for {} ({usage})",
                word.describe(),
                spec.name
            ),
        );
    }
    if spec.keys.iter().any(|p| p.name == text) {
        return Diag::new(
            word.span,
            format!("missing value for {} (write {text}=VALUE)", quote(text)),
        );
    }
    Diag::new(
        word.span,
        format!(
            "unknown flag {} for {} (expected one of: {}){}",
            quote(text),
            spec.name,
            spec.flags.join(", "),
            suggestion(text, spec.flags.iter().copied())
        ),
    )
}

/// Checks one lexed line against the directive table and builds its
/// statement. Problems are pushed to `diags` (and `None` returned).
pub(crate) fn analyze(raw: RawLine, diags: &mut Vec<Diag>) -> Option<Statement> {
    let before = diags.len();
    let name = raw.directive.text.as_str();
    let Some(spec) = directive(name) else {
        // `inst` is split before the table (its word text has its own
        // grammar) but is a directive all the same.
        let names: Vec<&str> = DIRECTIVES
            .iter()
            .map(|d| d.name)
            .chain(std::iter::once("inst"))
            .collect();
        diags.push(Diag::new(
            raw.directive.span,
            format!(
                "unknown directive {} (expected one of: {}){}",
                quote(name),
                names.join(", "),
                suggestion(name, names.iter().copied())
            ),
        ));
        return None;
    };
    let usage = format!("usage: {}", spec.usage);
    let mut positionals: Vec<Option<Value>> = Vec::new();
    let mut keys: Vec<Option<(Value, Span)>> = vec![None; spec.keys.len()];
    let mut key_spans: Vec<Option<Span>> = vec![None; spec.keys.len()];
    let mut flags: Vec<(&'static str, Span)> = Vec::new();
    let mut compare: Option<(Compare, Value, Span)> = None;
    let mut compare_seen: Option<(Compare, Span)> = None;
    let mut npos = 0usize;
    // Keys a misspelt argument probably meant: not reported missing again.
    let mut meant: Vec<&'static str> = Vec::new();

    for arg in raw.args {
        match arg {
            RawArg::Positional(word) => {
                if let Some(flag) = spec.flags.iter().find(|f| !word.quoted && **f == word.text) {
                    if let Some((_, first)) = flags.iter().find(|(f, _)| f == flag) {
                        diags.push(Diag::new(
                            word.span,
                            format!(
                                "duplicate flag {} (first given at column {})",
                                quote(flag),
                                first.column
                            ),
                        ));
                    } else {
                        flags.push((flag, word.span));
                    }
                    continue;
                }
                let Some(param) = spec.positionals.get(npos) else {
                    diags.push(unexpected_word(spec, &word, &usage));
                    continue;
                };
                npos += 1;
                let what = format!("{} {}", spec.name, param.name);
                match parse_value(param.kind, &word, &what) {
                    Ok(v) => positionals.push(Some(v)),
                    Err(d) => {
                        diags.push(d);
                        positionals.push(None);
                    }
                }
            }
            RawArg::Keyed { key, value } => {
                let Some(i) = spec.keys.iter().position(|p| p.name == key.text) else {
                    let msg = if spec.flags.contains(&key.text.as_str()) {
                        format!(
                            "{} is a flag of {}: write it without '=' and a value",
                            quote(&key.text),
                            spec.name
                        )
                    } else if spec.keys.is_empty() {
                        format!(
                            "unknown argument {} for {} ({} takes no key=value arguments; {usage})",
                            quote(&key.text),
                            spec.name,
                            spec.name
                        )
                    } else {
                        let names: Vec<&'static str> = spec.keys.iter().map(|p| p.name).collect();
                        meant.extend(closest(&key.text, names.iter().copied()));
                        format!(
                            "unknown argument {} for {} (expected one of: {}){}",
                            quote(&key.text),
                            spec.name,
                            names.join(", "),
                            suggestion(&key.text, names.iter().copied())
                        )
                    };
                    diags.push(Diag::new(key.span, msg));
                    continue;
                };
                let param = spec.keys[i];
                if let Some(first) = key_spans[i] {
                    diags.push(Diag::new(
                        key.span,
                        format!(
                            "duplicate argument {} (first given at column {})",
                            quote(&key.text),
                            first.column
                        ),
                    ));
                    continue;
                }
                let span = key.span.to(value.span);
                key_spans[i] = Some(span);
                match parse_value(param.kind, &value, &quote(param.name)) {
                    Ok(v) => keys[i] = Some((v, span)),
                    Err(d) => diags.push(d),
                }
            }
            RawArg::Compare { op, cmp, value } => {
                let sym = cmp.symbol();
                let kind = match spec.compare {
                    Some(kind) if spec.compare_ops.contains(&cmp) => kind,
                    _ => {
                        diags.push(Diag::new(
                            op,
                            format!("'{sym}' is not allowed with {} ({usage})", spec.name),
                        ));
                        continue;
                    }
                };
                if let Some((first_cmp, first)) = compare_seen {
                    diags.push(Diag::new(
                        op,
                        if first_cmp == cmp {
                            format!("duplicate '{sym}' (first given at column {})", first.column)
                        } else {
                            format!(
                                "only one comparison is allowed ('{}' given at column {})",
                                first_cmp.symbol(),
                                first.column
                            )
                        },
                    ));
                    continue;
                }
                let span = op.to(value.span);
                compare_seen = Some((cmp, span));
                if let Some(param) = spec.positionals.get(npos) {
                    diags.push(Diag::new(
                        op,
                        format!("missing {} before '{sym}' ({usage})", param.name),
                    ));
                    continue;
                }
                let what = format!("the expected value of {}", spec.name);
                match parse_value(kind, &value, &what) {
                    Ok(v) => compare = Some((cmp, v, span)),
                    Err(d) => diags.push(d),
                }
            }
        }
    }

    let end = raw.span.after();
    for param in spec.positionals.iter().skip(npos) {
        if param.required && compare_seen.is_none() {
            diags.push(Diag::new(
                end,
                format!("missing {} for {} ({usage})", param.name, spec.name),
            ));
        }
    }
    for (param, seen) in spec.keys.iter().zip(&key_spans) {
        if param.required && seen.is_none() && !meant.contains(&param.name) {
            diags.push(Diag::new(
                end,
                format!(
                    "missing argument {} for {} ({usage})",
                    quote(param.name),
                    spec.name
                ),
            ));
        }
    }
    if diags.len() > before {
        return None;
    }

    let mut args = Args {
        spec,
        positionals,
        keys,
        flags,
        compare,
        line: raw.span,
        diags,
    };
    let kind = (spec.build)(&mut args);
    if kind.is_none() && args.diags.len() == before {
        args.error(
            raw.span,
            format!("internal error: could not build a {} statement", spec.name),
        );
    }
    kind.map(|kind| Statement {
        kind,
        span: raw.span,
    })
}

fn build_write32(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let Some(Value::Num(n)) = args.positional(1) else {
        return None;
    };
    Some(StatementKind::Write32 {
        addr,
        value: u32::try_from(n).ok()?,
    })
}

fn build_read32(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let expect = match args.compare.take() {
        Some((_, Value::Num(n), span)) => Some((u32::try_from(n).ok()?, span)),
        _ => None,
    };
    let mask = args.key_u32("mask");
    if let Some((e, span)) = expect
        && let Some((message, blame)) = constant_comparison(Compare::Eq, e, span, mask)
    {
        args.error(blame, message);
        return None;
    }
    Some(StatementKind::Read32 {
        addr,
        expect: expect.map(|(e, _)| e),
        mask: mask.map(|(m, _)| m),
    })
}

fn build_fill(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let (len, len_span) = args.key_num("len")?;
    let byte = args.key_num("byte");
    let pattern = args.key("pattern");
    let seed = args.key_num("seed");
    let content = match (byte, pattern) {
        (Some(_), Some((_, span))) => {
            args.error(span, "'byte' and 'pattern' cannot be used together");
            return None;
        }
        (None, None) => {
            let usage = args.usage();
            args.error(
                args.line.after(),
                format!("fill needs 'byte' or 'pattern' ({usage})"),
            );
            return None;
        }
        (Some((b, _)), None) => {
            if let Some((_, span)) = seed {
                args.error(span, "'seed' is only used with 'pattern'");
                return None;
            }
            FillContent::Byte(u8::try_from(b).ok()?)
        }
        (None, Some((Value::Choice(name), _))) => {
            let kind = if name == "incr32" {
                FillPattern::Incr32
            } else {
                FillPattern::Incr8
            };
            let max = match kind {
                FillPattern::Incr8 => u64::from(u8::MAX),
                FillPattern::Incr32 => u64::from(u32::MAX),
            };
            let seed = match seed {
                Some((s, span)) if s > max => {
                    args.error(
                        span,
                        format!(
                            "'seed' for pattern={name} must fit in {} bits (at most {max:#x}), found {s:#x}",
                            kind.width() * 8
                        ),
                    );
                    return None;
                }
                Some((s, _)) => s,
                None => 0,
            };
            if len % kind.width() != 0 {
                args.error(
                    len_span,
                    format!(
                        "'len' must be a multiple of {} for pattern={name}, found {len}",
                        kind.width()
                    ),
                );
                return None;
            }
            FillContent::Pattern { kind, seed }
        }
        (None, Some(_)) => return None,
    };
    Some(StatementKind::Fill { addr, len, content })
}

fn build_write(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let (bytes, _) = args.key_bytes("bytes")?;
    Some(StatementKind::Write { addr, bytes })
}

fn build_load(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let path = args.key_path("file")?;
    let offset = args.key_num("offset").map(|(n, _)| n);
    let len = args.key_num("len").map(|(n, _)| n);
    Some(StatementKind::Load {
        addr,
        path,
        offset,
        len,
    })
}

fn build_expect(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let bytes = args.key_bytes("bytes");
    let len = args.key_num("len");
    let digest = match args.key("sha256") {
        Some((Value::Digest(d), span)) => Some((d, span)),
        _ => None,
    };
    let check = match (bytes, len, digest) {
        (Some(_), _, Some((_, span))) => {
            args.error(span, "'bytes' and 'sha256' cannot be used together");
            return None;
        }
        (Some(_), Some((_, span)), None) => {
            args.error(
                span,
                "'len' is not used with 'bytes' (the length is the number of bytes given)",
            );
            return None;
        }
        (Some((b, _)), None, None) => ExpectCheck::Bytes(b),
        (None, Some((len, _)), Some((digest, _))) => ExpectCheck::Sha256 { len, digest },
        (None, None, Some((_, span))) => {
            args.error(span, "'sha256' needs 'len' (the number of bytes hashed)");
            return None;
        }
        (None, Some((_, span)), None) => {
            args.error(
                span.after(),
                "'len' needs 'sha256' (or use bytes=HEX to compare bytes)",
            );
            return None;
        }
        (None, None, None) => {
            let usage = args.usage();
            args.error(
                args.line.after(),
                format!("expect needs 'bytes' or 'len' and 'sha256' ({usage})"),
            );
            return None;
        }
    };
    Some(StatementKind::Expect { addr, check })
}

fn build_dump(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let (len, _) = args.key_num("len")?;
    let file = args.key_path("file");
    Some(StatementKind::Dump { addr, len, file })
}

/// The keys that write word 1 of an M2S descriptor (the CME command).
const WORD1_KEYS: &[&str] = &["op", "cce", "crc_iv"];

fn build_desc(args: &mut Args<'_>) -> Option<StatementKind> {
    let Some(Value::Queue(queue)) = args.positional(0) else {
        return None;
    };
    let given = args.given();
    if let Some(raw_span) = args.key_span("raw") {
        if let Some((name, span)) = given.iter().find(|(n, _)| *n != "raw") {
            args.error(
                *span,
                format!(
                    "{} cannot be used with 'raw' (raw=HEX gives all 16 bytes of the descriptor)",
                    quote(name)
                ),
            );
            return None;
        }
        let Some((Value::Bytes(bytes), _)) = args.key("raw") else {
            return None;
        };
        let Ok(raw) = <[u8; 16]>::try_from(bytes.as_slice()) else {
            args.error(raw_span, "'raw' expects 32 hex digits");
            return None;
        };
        let fields = DescFields {
            raw: Some(raw),
            ..DescFields::default()
        };
        return Some(StatementKind::Desc { queue, fields });
    }

    let before = args.diags.len();
    let usage = args.usage();
    if args.key_span("len").is_none() {
        args.error(
            args.line.after(),
            format!("desc needs 'len' (or raw=HEX for a whole descriptor) ({usage})"),
        );
    }
    let addr_keys: Vec<(&'static str, Span)> = given
        .iter()
        .copied()
        .filter(|(n, _)| matches!(*n, "src" | "dst" | "addr"))
        .collect();
    match addr_keys.as_slice() {
        [] => args.error(
            args.line.after(),
            format!("desc needs a buffer address: src=ADDR, dst=ADDR or addr=ADDR ({usage})"),
        ),
        [_] => {}
        [(first, _), (second, span), ..] => args.error(
            *span,
            format!(
                "{} cannot be used with {} (a descriptor has one buffer address)",
                quote(second),
                quote(first)
            ),
        ),
    }

    // Arguments that write the same descriptor bits.
    let word1_users = given.iter().filter(|(n, _)| {
        WORD1_KEYS.contains(n) || DescFlag::from_name(n).is_some_and(DescFlag::in_word1)
    });
    if args.key_span("word1").is_some() {
        if let Some((name, span)) = word1_users
            .chain(given.iter().filter(|(n, _)| *n == "buf2"))
            .min_by_key(|(_, s)| s.column)
        {
            args.error(
                *span,
                format!(
                    "{} cannot be used with 'word1' (word1=V gives the whole of descriptor word 1)",
                    quote(name)
                ),
            );
        }
    } else if args.key_span("buf2").is_some()
        && let Some((name, span)) = word1_users.min_by_key(|(_, s)| s.column)
    {
        args.error(
            *span,
            format!(
                "{} cannot be used with 'buf2' (buf2 is word 1 of an S2M descriptor; \
                 {} sets word 1 of an M2S descriptor)",
                quote(name),
                quote(name)
            ),
        );
    }

    let op = args.key_choice("op", CmeOp::from_name);
    let cce = args.key_choice("cce", CceOp::from_name);
    if let (Some((op, _)), Some((_, span))) = (op, cce)
        && op != CmeOp::Copy
    {
        args.error(
            span,
            format!(
                "'cce' cannot be used with op={op} (a CCE operation replaces the CME operation; \
                 use op=copy or leave 'op' out)"
            ),
        );
    }
    let in_dtype = args.key_choice("in_dtype", Dtype::from_name);
    let out_dtype = args.key_choice("out_dtype", Dtype::from_name);
    let scale = match args.key("scale") {
        Some((Value::Float(v), span)) => Some((Float(v), span)),
        _ => None,
    };
    if let Some((Float(v), span)) = scale
        && v.abs() > f64::from(f32::MAX)
    {
        args.error(
            span,
            format!(
                "'scale' is out of the FP32 range (at most {:e} in magnitude), found {v:e}",
                f32::MAX
            ),
        );
    }
    if cce.is_none() {
        let needs_cce = [
            ("in_dtype", in_dtype.map(|(_, s)| s)),
            ("out_dtype", out_dtype.map(|(_, s)| s)),
            ("scale", scale.map(|(_, s)| s)),
        ];
        if let Some((name, Some(span))) = needs_cce.into_iter().find(|(_, s)| s.is_some()) {
            args.error(span, format!("'{name}' is only used with 'cce'"));
        }
    } else if let (Some((c, _)), Some((_, span))) = (cce, scale)
        && c != CceOp::Fma
    {
        args.error(
            span,
            format!("'scale' is only used with cce=fma, not cce={c}"),
        );
    }
    if args.diags.len() > before {
        return None;
    }

    let addr = ["src", "dst", "addr"].into_iter().find_map(|key| {
        let role = match key {
            "src" => AddrRole::Src,
            "dst" => AddrRole::Dst,
            _ => AddrRole::Any,
        };
        args.key_addr(key).map(|(addr, _)| DescAddr { role, addr })
    });
    let small = |v: Option<(u64, Span)>| v.and_then(|(n, _)| u8::try_from(n).ok());
    let len = args.key_num("len");
    let ring_id = args.key_num("ring_id");
    let crc_iv = args.key_num("crc_iv");
    let fields = DescFields {
        len: len.and_then(|(n, _)| u32::try_from(n).ok()),
        addr,
        buf2: args.key_addr("buf2").map(|(a, _)| a),
        ring_id: small(ring_id),
        op: op.map(|(v, _)| v),
        cce: cce.map(|(v, _)| v),
        in_dtype: in_dtype.map(|(v, _)| v),
        out_dtype: out_dtype.map(|(v, _)| v),
        scale: scale.map(|(v, _)| v),
        crc_iv: small(crc_iv),
        word1: args.key_u32("word1").map(|(v, _)| v),
        raw: None,
        flags: args
            .flags
            .iter()
            .filter_map(|(name, _)| DescFlag::from_name(name))
            .collect::<DescFlags>(),
        given,
    };
    Some(StatementKind::Desc { queue, fields })
}

fn build_doorbell(args: &mut Args<'_>) -> Option<StatementKind> {
    let Some(Value::Queue(queue)) = args.positional(0) else {
        return None;
    };
    let Some(Value::Num(n)) = args.positional(1) else {
        return None;
    };
    Some(StatementKind::Doorbell {
        queue,
        count: u32::try_from(n).ok()?,
    })
}

fn build_expect_fault(args: &mut Args<'_>) -> Option<StatementKind> {
    let Some(Value::Queue(queue)) = args.positional(0) else {
        return None;
    };
    let (cause, cause_span) = match args.key("cause") {
        Some((Value::Name(c), span)) => (Some(c), span),
        _ => (None, Span::default()),
    };
    let count = args.key_num("count").map(|(n, _)| n);
    Some(StatementKind::ExpectFault {
        queue,
        cause,
        cause_span,
        count,
    })
}

fn build_expect_refusal(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let count = args.key_num("count").map(|(n, _)| n);
    Some(StatementKind::ExpectRefusal { core, count })
}

fn core_index(v: Option<Value>) -> Option<u8> {
    match v {
        Some(Value::Choice(c)) => c.strip_prefix("tpb")?.parse().ok(),
        _ => None,
    }
}

fn build_memcpy(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let (local, _) = args.key_u32("local")?;
    let (hbm, _) = args.key_addr("hbm")?;
    let (len, _) = args.key_num("len")?;
    let dirs: Vec<(&'static str, Span)> = args.flags.clone();
    let is_read = match dirs.as_slice() {
        [("read", _)] => true,
        [("write", _)] => false,
        [] => {
            let line = args.line;
            let usage = args.usage();
            args.error(
                line,
                format!("memcpy needs a direction: read (HBM into the dataram) or write (dataram to HBM); {usage}"),
            );
            return None;
        }
        [_, (_, second), ..] => {
            let second = *second;
            args.error(
                second,
                "memcpy takes one direction: read or write, not both",
            );
            return None;
        }
        _ => return None,
    };
    Some(StatementKind::Memcpy {
        core,
        local,
        hbm,
        len,
        is_read,
    })
}

fn build_inst_stream(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let path = args.key_path("file")?;
    Some(StatementKind::InstStream { core, path })
}

fn build_icache_init(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let (block_size, _) = args.key_u32("block_size")?;
    Some(StatementKind::IcacheInit { core, block_size })
}

fn build_icache_fill(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let (fetch, _) = args.key_addr("fetch")?;
    let (lines, _) = args.key_num("lines")?;
    Some(StatementKind::IcacheFill {
        core,
        fetch,
        lines: u32::try_from(lines).ok()?,
    })
}

fn build_memcpy_method(args: &mut Args<'_>) -> Option<StatementKind> {
    let core = core_index(args.positional(0))?;
    let Some(Value::Num(m)) = args.positional(1) else {
        return None;
    };
    Some(StatementKind::MemcpyMethod {
        core,
        method: u8::try_from(m).ok()?,
    })
}

fn build_run(args: &mut Args<'_>) -> Option<StatementKind> {
    let cycles = args.key_num("cycles");
    let until = args.key_num("until");
    let mode = match (cycles, until) {
        (Some((_, a)), Some((_, b))) => {
            let (first, second, span) = if a.column < b.column {
                ("cycles", "until", b)
            } else {
                ("until", "cycles", a)
            };
            args.error(
                span,
                format!("'{second}' cannot be used with '{first}' (run for a number of cycles or until a cycle, not both)"),
            );
            return None;
        }
        (Some((n, _)), None) => RunMode::Cycles(n),
        (None, Some((n, _))) => RunMode::Until(n),
        (None, None) => RunMode::Idle,
    };
    Some(StatementKind::Run { mode })
}

fn build_wait(args: &mut Args<'_>) -> Option<StatementKind> {
    let addr = args.addr()?;
    let Some((compare, Value::Num(n), span)) = args.compare.take() else {
        let usage = args.usage();
        let hint = match addr.path() {
            Some([c]) if c.name == "idle" && c.index.is_none() && addr.offsets.is_empty() => {
                "; to run until the device is idle, write 'run'"
            }
            _ => "",
        };
        args.error(
            args.line.after(),
            format!("wait needs a comparison: == VALUE, != VALUE or >= VALUE ({usage}){hint}"),
        );
        return None;
    };
    let value = u32::try_from(n).ok()?;
    let mask = args.key_u32("mask");
    if let Some((message, blame)) = constant_comparison(compare, value, span, mask) {
        args.error(blame, message);
        return None;
    }
    let mask = mask.map(|(m, _)| m);
    let timeout = args.key_num("timeout").map(|(t, _)| t);
    Some(StatementKind::Wait {
        addr,
        compare,
        value,
        mask,
        timeout,
    })
}

/// Why `(x & M) OP value` is the same for every 32-bit `x` — a check that
/// can never fail or never pass — with the span to blame; `None` when some
/// `x` makes it hold and some other makes it fail. `compare_span` is the
/// comparison's, `mask` the `mask=` key with its span (M = `0xffff_ffff`
/// without it).
///
/// The masked value ranges over the sub-masks of M: its least is 0, its
/// greatest M, and a value with a bit outside M is never among them. So:
/// `==` never holds and `!=` always holds for a value with bits outside M;
/// `>=` never holds for a value above M and always holds for 0; and with
/// `mask=0` the masked value is always 0, so `== 0` always holds and
/// `!= 0` never does (blamed on the mask: whatever the value, every
/// comparison under it is constant).
fn constant_comparison(
    compare: Compare,
    value: u32,
    compare_span: Span,
    mask: Option<(u32, Span)>,
) -> Option<(String, Span)> {
    let m = mask.map_or(u32::MAX, |(m, _)| m);
    let message = match compare {
        Compare::Eq | Compare::Ne if value & !m != 0 => {
            if compare == Compare::Eq {
                format!(
                    "expected value {value:#x} has bits outside mask {m:#x}, so the comparison can never hold"
                )
            } else {
                format!("value {value:#x} has bits outside mask {m:#x}, so '!=' always holds")
            }
        }
        Compare::Ge if value > m => {
            format!("value {value:#x} is above mask {m:#x}, so '>=' can never hold")
        }
        Compare::Ge if value == 0 => "'>= 0' always holds; there is nothing to wait for".into(),
        Compare::Eq | Compare::Ne => {
            // value & !m == 0 here: under mask=0 the value is 0 too.
            let Some((0, mask_span)) = mask else {
                return None;
            };
            let outcome = if compare == Compare::Eq {
                "always holds"
            } else {
                "can never hold"
            };
            return Some((
                format!(
                    "mask 0 keeps no bit of the value (it is always 0), so '{} 0' {outcome}",
                    compare.symbol()
                ),
                mask_span,
            ));
        }
        Compare::Ge => return None,
    };
    Some((message, compare_span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(crate::edit_distance("wirte32", "write32"), 1);
        assert_eq!(crate::edit_distance("lenght", "len"), 3);
        assert_eq!(crate::edit_distance("", "abc"), 3);
        assert_eq!(crate::edit_distance("fil", "fill"), 1);
        assert_eq!(
            suggestion("lenght", ["len", "byte"]),
            "; did you mean 'len'?"
        );
        assert_eq!(suggestion("size", ["len", "byte"]), "");
        assert_eq!(
            suggestion("WRITE32", ["write32", "read32"]),
            "; did you mean 'write32'?"
        );
    }

    #[test]
    fn table_is_consistent() {
        for (i, d) in DIRECTIVES.iter().enumerate() {
            assert!(d.usage.starts_with(d.name), "{}", d.name);
            assert!(DIRECTIVES[..i].iter().all(|e| e.name != d.name));
            for (j, k) in d.keys.iter().enumerate() {
                assert!(d.keys[..j].iter().all(|e| e.name != k.name));
                assert!(!d.flags.contains(&k.name), "{}: {}", d.name, k.name);
            }
            for (j, f) in d.flags.iter().enumerate() {
                assert!(is_identifier(f) && !d.flags[..j].contains(f));
            }
            assert_eq!(d.compare.is_some(), !d.compare_ops.is_empty(), "{}", d.name);
        }
    }
}
