//! Address expressions: `hbm0+0x1000`, `tpb0.sbuf[p5]+0x100`, `0x2000000000-0x10`.
//!
//! The parser knows the *shape* of an address, not the address map: a
//! symbolic path stays unresolved until the executor looks it up in the SoC
//! map.
//!
//! ```text
//! addr      := base { ('+' | '-') number }
//! base      := number | component { '.' component }
//! component := identifier [ '[' index ']' ]
//! index     := number | ('p' | 'P') number        -- pN: a partition index
//! ```

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{Diag, ParseError, quote};
use crate::lex::is_identifier;
use crate::number::{NumError, parse_u64};
use crate::span::{Span, sat_u32};

/// A parsed, unresolved address expression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AddrExpr {
    /// The base: a literal address or a symbolic path.
    pub base: AddrBase,
    /// Offsets applied left to right after the base.
    pub offsets: Vec<Offset>,
    /// The whole expression.
    pub span: Span,
}

/// The base of an [`AddrExpr`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddrBase {
    /// A numeric SoC address, e.g. `0x2000000000`.
    Literal(u64),
    /// A symbolic path, e.g. `tpb0.sbuf[p5]` — one or more components.
    Path(Vec<PathComponent>),
    /// `@NAME`: the device address of a tensor the host allocated with
    /// `alloc NAME …` (v3; resolved when the statement runs).
    Tensor(String),
}

/// One dot-separated component of a symbolic path: `eng0`, `sbuf[p5]`, `inc[3]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathComponent {
    /// The identifier, as written (`eng12` is one identifier; see [`split_index`]).
    pub name: String,
    /// The bracketed index, if any.
    pub index: Option<Index>,
    /// Name and index.
    pub span: Span,
}

/// A bracketed index on a path component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Index {
    /// `[3]`: an array element (register array, semaphore number…).
    Plain(u64),
    /// `[p5]`: an SBUF/PSUM partition.
    Partition(u64),
}

/// Sign of an [`Offset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sign {
    /// `+`
    Plus,
    /// `-`
    Minus,
}

/// `+N` or `-N` after the base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Offset {
    /// Add or subtract.
    pub sign: Sign,
    /// Magnitude.
    pub value: u64,
    /// Sign and number.
    pub span: Span,
}

impl Offset {
    /// The signed value.
    pub fn signed(&self) -> i128 {
        match self.sign {
            Sign::Plus => i128::from(self.value),
            Sign::Minus => -i128::from(self.value),
        }
    }
}

impl AddrExpr {
    /// The literal base address, if the base is numeric.
    pub fn literal(&self) -> Option<u64> {
        match self.base {
            AddrBase::Literal(v) => Some(v),
            AddrBase::Path(_) | AddrBase::Tensor(_) => None,
        }
    }

    /// The path components, if the base is symbolic.
    pub fn path(&self) -> Option<&[PathComponent]> {
        match &self.base {
            AddrBase::Literal(_) | AddrBase::Tensor(_) => None,
            AddrBase::Path(p) => Some(p),
        }
    }

    /// The tensor name, if the base is `@NAME`.
    pub fn tensor(&self) -> Option<&str> {
        match &self.base {
            AddrBase::Tensor(n) => Some(n),
            _ => None,
        }
    }

    /// The sum of all offsets (`None` only if it overflows `i128`, which
    /// needs more offsets than any real line holds).
    pub fn total_offset(&self) -> Option<i128> {
        self.offsets
            .iter()
            .try_fold(0i128, |acc, o| acc.checked_add(o.signed()))
    }

    /// Applies the offsets to a resolved base address: `None` if the result
    /// leaves `0..=u64::MAX`.
    pub fn apply_offsets(&self, base: u64) -> Option<u64> {
        let total = i128::from(base).checked_add(self.total_offset()?)?;
        u64::try_from(total).ok()
    }

    /// The path rendered without offsets (`tpb0.sbuf[p5]`), or the literal.
    pub fn base_text(&self) -> String {
        match &self.base {
            AddrBase::Literal(v) => format!("{v:#x}"),
            AddrBase::Tensor(n) => format!("@{n}"),
            AddrBase::Path(p) => {
                let mut s = String::new();
                for (i, c) in p.iter().enumerate() {
                    if i > 0 {
                        s.push('.');
                    }
                    s.push_str(&c.to_string());
                }
                s
            }
        }
    }

    /// Sets every span in the expression to `Span::default()` (for
    /// comparing expressions by structure).
    pub fn clear_spans(&mut self) {
        self.span = Span::default();
        if let AddrBase::Path(p) = &mut self.base {
            for c in p {
                c.span = Span::default();
            }
        }
        for o in &mut self.offsets {
            o.span = Span::default();
        }
    }
}

/// A DMA queue named by its block path, with an optional ring slot:
/// `eng0.m2s.q0`, `eng12.s2m.q3[5]` (trace language v2: `desc`, `doorbell`).
///
/// Like an address, the path is unresolved: the executor looks the queue
/// block up in the SoC map (and reads its ring-base CSRs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueRef {
    /// The queue block's path (`eng0`, `m2s`, `q0`). The last component
    /// never has an index (a plain index there is the slot); earlier
    /// components keep whatever index was written.
    pub path: Vec<PathComponent>,
    /// `[N]` on the last component: the ring slot (descriptor index),
    /// less than [`RING_SLOTS`]. `None`: the executor's next slot.
    pub slot: Option<u64>,
    /// The whole queue argument, slot included.
    pub span: Span,
}

/// Ring slots are below this bound: ring lengths (TDRL/RDRL) are 24-bit
/// descriptor counts.
pub const RING_SLOTS: u64 = 1 << 24;

impl QueueRef {
    /// The queue's path without the slot (`eng0.m2s.q0`).
    pub fn name(&self) -> String {
        let mut s = String::new();
        for (i, c) in self.path.iter().enumerate() {
            if i > 0 {
                s.push('.');
            }
            s.push_str(&c.to_string());
        }
        s
    }

    /// The queue block as an address expression (the path, no offsets; the
    /// span covers the path), for resolving it like any other address.
    pub fn block_addr(&self) -> AddrExpr {
        let span = match (self.path.first(), self.path.last()) {
            (Some(a), Some(b)) => a.span.to(b.span),
            _ => self.span,
        };
        AddrExpr {
            base: AddrBase::Path(self.path.clone()),
            offsets: Vec::new(),
            span,
        }
    }

    /// Sets every span to `Span::default()`.
    pub fn clear_spans(&mut self) {
        self.span = Span::default();
        for c in &mut self.path {
            c.span = Span::default();
        }
    }
}

impl fmt::Display for QueueRef {
    /// `eng0.m2s.q0` or `eng0.m2s.q0[5]`; parses back to the same queue.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())?;
        if let Some(slot) = self.slot {
            write!(f, "[{slot}]")?;
        }
        Ok(())
    }
}

impl fmt::Display for PathComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        match self.index {
            None => Ok(()),
            Some(Index::Plain(i)) => write!(f, "[{i}]"),
            Some(Index::Partition(i)) => write!(f, "[p{i}]"),
        }
    }
}

impl fmt::Display for AddrExpr {
    /// Canonical text: literals and offsets in hex, indices in decimal.
    /// Parsing the output gives back the same expression (spans aside).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base_text())?;
        for o in &self.offsets {
            let sign = match o.sign {
                Sign::Plus => '+',
                Sign::Minus => '-',
            };
            write!(f, "{sign}{:#x}", o.value)?;
        }
        Ok(())
    }
}

impl FromStr for AddrExpr {
    type Err = ParseError;

    /// Parses a stand-alone address (e.g. a CLI argument); errors name the
    /// file `<address>`, line 1.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_addr(s, "<address>")
    }
}

/// Parses a stand-alone address expression (line 1 of `file_name`). Leading
/// and trailing whitespace is ignored.
pub fn parse_addr(text: &str, file_name: &str) -> Result<AddrExpr, ParseError> {
    let lead = text.chars().take_while(|c| c.is_whitespace()).count();
    let trimmed = text.trim();
    parse_addr_at(trimmed, Span::new(1, sat_u32(lead).saturating_add(1), 0))
        .map_err(|d| d.into_error(file_name))
}

/// Splits trailing decimal digits off an identifier:
/// `split_index("eng12") == ("eng", Some(12))`, `split_index("hbm") == ("hbm", None)`.
/// Returns `(name, None)` when there are no trailing digits, when nothing
/// would be left before them, or when they overflow `u64`.
pub fn split_index(name: &str) -> (&str, Option<u64>) {
    let digits = name.chars().rev().take_while(char::is_ascii_digit).count();
    let cut = name.len() - digits; // digits are ASCII: one byte each
    match (name.get(..cut), name.get(cut..)) {
        (Some(head), Some(tail)) if !head.is_empty() && !tail.is_empty() => {
            match tail.parse::<u64>() {
                Ok(n) => (head, Some(n)),
                Err(_) => (name, None),
            }
        }
        _ => (name, None),
    }
}

/// A cursor over the characters of one address word.
struct Cursor {
    chars: Vec<char>,
    pos: usize,
    /// Span of the first character (`len` ignored).
    origin: Span,
}

impl Cursor {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn span(&self, from: usize, to: usize) -> Span {
        Span::new(
            self.origin.line,
            self.origin.column.saturating_add(sat_u32(from)),
            sat_u32(to.saturating_sub(from)),
        )
    }

    /// The span of the character at the cursor (0 long at the end).
    fn here(&self) -> Span {
        let len = usize::from(self.pos < self.chars.len());
        self.span(self.pos, self.pos + len)
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(c) => quote(&c.to_string()),
            None => "end of address".to_string(),
        }
    }

    /// Consumes `[A-Za-z0-9_]*` and returns it with its start index.
    fn take_alnum(&mut self) -> (usize, String) {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        (start, self.chars[start..self.pos].iter().collect())
    }

    fn number(&mut self, what: &str) -> Result<(u64, Span), Diag> {
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(Diag::new(
                self.here(),
                format!("expected {what}, found {}", self.found()),
            ));
        }
        let (start, text) = self.take_alnum();
        let span = self.span(start, self.pos);
        match parse_u64(&text) {
            Ok(v) => Ok((v, span)),
            Err(NumError::Invalid) => Err(Diag::new(
                span,
                format!("expected {what}, found {}", quote(&text)),
            )),
            Err(NumError::Overflow) => Err(Diag::new(
                span,
                format!("number {} does not fit in 64 bits", quote(&text)),
            )),
        }
    }

    fn component(&mut self) -> Result<PathComponent, Diag> {
        let start = self.pos;
        let (_, name) = self.take_alnum();
        if !is_identifier(&name) {
            let span = self.span(start, self.pos.max(start + 1).min(self.chars.len()));
            let found = if name.is_empty() {
                self.found()
            } else {
                quote(&name)
            };
            return Err(Diag::new(span, format!("expected a name, found {found}")));
        }
        let mut index = None;
        if self.peek() == Some('[') {
            self.pos += 1;
            let partition = matches!(self.peek(), Some('p' | 'P'));
            if partition {
                self.pos += 1;
            }
            let what = if partition {
                "a partition number after 'p'"
            } else {
                "an index (a number, or pN for a partition)"
            };
            let (value, _) = self.number(what)?;
            if self.peek() != Some(']') {
                return Err(Diag::new(
                    self.here(),
                    format!("expected ']' to close the index, found {}", self.found()),
                ));
            }
            self.pos += 1;
            index = Some(if partition {
                Index::Partition(value)
            } else {
                Index::Plain(value)
            });
        }
        Ok(PathComponent {
            name,
            index,
            span: self.span(start, self.pos),
        })
    }
}

/// Parses `text` as an address; `origin` is the position of its first
/// character.
pub(crate) fn parse_addr_at(text: &str, origin: Span) -> Result<AddrExpr, Diag> {
    let mut cur = Cursor {
        chars: text.chars().collect(),
        pos: 0,
        origin,
    };
    let base = match cur.peek() {
        None => {
            return Err(Diag::new(cur.here(), "expected an address, found nothing"));
        }
        Some(c) if c.is_ascii_digit() => AddrBase::Literal(cur.number("an address")?.0),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            let mut comps = vec![cur.component()?];
            while cur.peek() == Some('.') {
                cur.pos += 1;
                comps.push(cur.component()?);
            }
            AddrBase::Path(comps)
        }
        Some('@') => {
            cur.pos += 1;
            let (s, name) = cur.take_alnum();
            if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                return Err(Diag::new(
                    cur.span(s.saturating_sub(1), cur.pos.max(s)),
                    "expected a tensor name after '@' (like @weights)",
                ));
            }
            AddrBase::Tensor(name)
        }
        Some(_) => {
            return Err(Diag::new(
                cur.here(),
                format!(
                    "expected an address (a number, a name like hbm0, or @tensor), found {}",
                    cur.found()
                ),
            ));
        }
    };
    let mut offsets = Vec::new();
    while let Some(c) = cur.peek() {
        let sign = match c {
            '+' => Sign::Plus,
            '-' => Sign::Minus,
            _ => {
                let hint = match (&base, c, offsets.is_empty()) {
                    (AddrBase::Path(_), '.' | '[', false) => {
                        " (offsets must come after the whole name)"
                    }
                    _ => "",
                };
                return Err(Diag::new(
                    cur.here(),
                    format!(
                        "expected '+', '-' or the end of the address, found {}{hint}",
                        cur.found()
                    ),
                ));
            }
        };
        let start = cur.pos;
        cur.pos += 1;
        if cur
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            let (s, word) = cur.take_alnum();
            return Err(Diag::new(
                cur.span(s, cur.pos),
                format!(
                    "expected a number after '{c}', found {} (offsets must be numbers)",
                    quote(&word)
                ),
            ));
        }
        let (value, _) = cur.number(&format!("a number after '{c}'"))?;
        offsets.push(Offset {
            sign,
            value,
            span: cur.span(start, cur.pos),
        });
    }
    Ok(AddrExpr {
        base,
        offsets,
        span: cur.span(0, cur.chars.len()),
    })
}

/// Parses `text` as a queue (`eng0.m2s.q0`, with `allow_slot` also
/// `eng0.m2s.q0[5]`); `origin` is the position of its first character and
/// `what` names the argument in messages.
pub(crate) fn parse_queue_at(
    text: &str,
    origin: Span,
    allow_slot: bool,
    what: &str,
) -> Result<QueueRef, Diag> {
    let expr = parse_addr_at(text, origin)?;
    let mut path = match expr.base {
        AddrBase::Path(p) => p,
        AddrBase::Literal(_) | AddrBase::Tensor(_) => {
            return Err(Diag::new(
                expr.span,
                format!(
                    "{what} expects a queue name like eng0.m2s.q0, found a number {}",
                    quote(text)
                ),
            ));
        }
    };
    if let Some(o) = expr.offsets.first() {
        let sign = match o.sign {
            Sign::Plus => '+',
            Sign::Minus => '-',
        };
        let hint = if allow_slot {
            "; a ring slot is written as an index, like eng0.m2s.q0[5]"
        } else {
            ""
        };
        return Err(Diag::new(
            o.span,
            format!(
                "a queue takes no offset, found '{sign}{:#x}'{hint}",
                o.value
            ),
        ));
    }
    let mut slot = None;
    if let Some(last) = path.last_mut()
        && let Some(index) = last.index.take()
    {
        let name_len = sat_u32(last.name.chars().count());
        let index_span = Span::new(
            last.span.line,
            last.span.column.saturating_add(name_len),
            last.span.len.saturating_sub(name_len),
        );
        last.span.len = name_len;
        match index {
            Index::Partition(p) => {
                return Err(Diag::new(
                    index_span,
                    format!("a ring slot is a plain number, not a partition, found '[p{p}]'"),
                ));
            }
            Index::Plain(n) if !allow_slot => {
                return Err(Diag::new(
                    index_span,
                    format!("{what} takes no ring slot, found '[{n}]'"),
                ));
            }
            Index::Plain(n) if n >= RING_SLOTS => {
                return Err(Diag::new(
                    index_span,
                    format!(
                        "ring slot must be less than {RING_SLOTS:#x} (ring lengths are 24-bit descriptor counts), found {n:#x}"
                    ),
                ));
            }
            Index::Plain(n) => slot = Some(n),
        }
    }
    Ok(QueueRef {
        path,
        slot,
        span: expr.span,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn p(s: &str) -> AddrExpr {
        parse_addr(s, "t").unwrap()
    }

    fn e(s: &str) -> String {
        parse_addr(s, "t").unwrap_err().to_string()
    }

    fn comp(name: &str, index: Option<Index>, column: u32, len: u32) -> PathComponent {
        PathComponent {
            name: name.into(),
            index,
            span: Span::new(1, column, len),
        }
    }

    #[test]
    fn literal() {
        let a = p("0x20_0000_0000");
        assert_eq!(a.base, AddrBase::Literal(0x20_0000_0000));
        assert!(a.offsets.is_empty());
        assert_eq!(a.span, Span::new(1, 1, 14));
        assert_eq!(a.to_string(), "0x2000000000");
        assert_eq!(p("4096").literal(), Some(4096));
    }

    #[test]
    fn path_with_partition_and_offsets() {
        let a = p("tpb0.sbuf[p5]+0x100-16");
        assert_eq!(
            a.base,
            AddrBase::Path(vec![
                comp("tpb0", None, 1, 4),
                comp("sbuf", Some(Index::Partition(5)), 6, 8),
            ])
        );
        assert_eq!(
            a.offsets,
            vec![
                Offset {
                    sign: Sign::Plus,
                    value: 0x100,
                    span: Span::new(1, 14, 6)
                },
                Offset {
                    sign: Sign::Minus,
                    value: 16,
                    span: Span::new(1, 20, 3)
                },
            ]
        );
        assert_eq!(a.total_offset(), Some(0xf0));
        assert_eq!(a.apply_offsets(0x1000), Some(0x10f0));
        assert_eq!(a.to_string(), "tpb0.sbuf[p5]+0x100-0x10");
        assert_eq!(a.base_text(), "tpb0.sbuf[p5]");
    }

    #[test]
    fn registers_and_indices() {
        let a = p("tpb0.sem.inc[0x3]");
        assert_eq!(
            a.path().unwrap()[2],
            comp("inc", Some(Index::Plain(3)), 10, 8)
        );
        assert_eq!(p("eng12.s2m.q3.rdrtp_inc").path().unwrap().len(), 4);
        assert_eq!(p("X.P[P1]").to_string(), "X.P[p1]");
        assert_eq!(p("hbm1+0x1000-0x10").apply_offsets(0), Some(0xff0));
        assert_eq!(p("hbm1-0x10").apply_offsets(0), None);
        assert_eq!(p("  hbm0 ").span, Span::new(1, 3, 4));
        // v3: a tensor base, with offsets.
        let t = p("@w_1+0x40");
        assert_eq!(t.tensor(), Some("w_1"));
        assert_eq!(t.to_string(), "@w_1+0x40");
        assert_eq!(t.apply_offsets(0x1000), Some(0x1040));
    }

    #[test]
    fn errors() {
        assert_eq!(e(""), "t:1:1: expected an address, found nothing");
        assert_eq!(
            e("+5"),
            "t:1:1: expected an address (a number, a name like hbm0, or @tensor), found '+'"
        );
        assert_eq!(
            e("@"),
            "t:1:1: expected a tensor name after '@' (like @weights)"
        );
        assert_eq!(
            e("@9x"),
            "t:1:1: expected a tensor name after '@' (like @weights)"
        );
        assert_eq!(e("hbm0."), "t:1:6: expected a name, found end of address");
        assert_eq!(e("hbm0.5x"), "t:1:6: expected a name, found '5x'");
        assert_eq!(
            e("tpb0.sbuf[p]"),
            "t:1:12: expected a partition number after 'p', found ']'"
        );
        assert_eq!(
            e("tpb0.sbuf[q5]"),
            "t:1:11: expected an index (a number, or pN for a partition), found 'q'"
        );
        assert_eq!(
            e("sem[3"),
            "t:1:6: expected ']' to close the index, found end of address"
        );
        assert_eq!(
            e("hbm0+"),
            "t:1:6: expected a number after '+', found end of address"
        );
        assert_eq!(
            e("hbm0+foo"),
            "t:1:6: expected a number after '+', found 'foo' (offsets must be numbers)"
        );
        assert_eq!(
            e("hbm0+0xzz"),
            "t:1:6: expected a number after '+', found '0xzz'"
        );
        assert_eq!(
            e("hbm0*2"),
            "t:1:5: expected '+', '-' or the end of the address, found '*'"
        );
        assert_eq!(
            e("hbm0+1.x"),
            "t:1:7: expected '+', '-' or the end of the address, found '.' (offsets must come after the whole name)"
        );
        assert_eq!(
            e("0x1_0000_0000_0000_0000"),
            "t:1:1: number '0x1_0000_0000_0000_0000' does not fit in 64 bits"
        );
        assert_eq!(
            e("0x10.foo"),
            "t:1:5: expected '+', '-' or the end of the address, found '.'"
        );
    }

    fn q(s: &str, allow_slot: bool) -> Result<QueueRef, String> {
        parse_queue_at(s, Span::new(1, 1, 0), allow_slot, "queue")
            .map_err(|d| format!("{}:{}: {}", d.span.column, d.span.len, d.message))
    }

    #[test]
    fn queues() {
        let a = q("eng0.m2s.q0[5]", true).unwrap();
        assert_eq!(a.slot, Some(5));
        assert_eq!(a.span, Span::new(1, 1, 14));
        assert_eq!(
            a.path,
            vec![
                comp("eng0", None, 1, 4),
                comp("m2s", None, 6, 3),
                comp("q0", None, 10, 2)
            ]
        );
        assert_eq!(a.name(), "eng0.m2s.q0");
        assert_eq!(a.to_string(), "eng0.m2s.q0[5]");
        assert_eq!(a.block_addr().to_string(), "eng0.m2s.q0");
        assert_eq!(a.block_addr().span, Span::new(1, 1, 11));
        let b = q("eng128.s2m.q1", false).unwrap();
        assert_eq!((b.slot, b.to_string().as_str()), (None, "eng128.s2m.q1"));
        assert_eq!(
            q("x[1].q[0xffffff]", true).unwrap().to_string(),
            "x[1].q[16777215]"
        );
        assert_eq!(
            q("0x1000", true).unwrap_err(),
            "1:6: queue expects a queue name like eng0.m2s.q0, found a number '0x1000'"
        );
        assert_eq!(
            q("eng0.m2s.q0+0x10", true).unwrap_err(),
            "12:5: a queue takes no offset, found '+0x10'; a ring slot is written as an index, like eng0.m2s.q0[5]"
        );
        assert_eq!(
            q("eng0.m2s.q0[p1]", true).unwrap_err(),
            "12:4: a ring slot is a plain number, not a partition, found '[p1]'"
        );
        assert_eq!(
            q("eng0.m2s.q0[1]", false).unwrap_err(),
            "12:3: queue takes no ring slot, found '[1]'"
        );
        assert_eq!(
            q("eng0.m2s.q0[0x1000000]", true).unwrap_err(),
            "12:11: ring slot must be less than 0x1000000 (ring lengths are 24-bit descriptor counts), found 0x1000000"
        );
    }

    #[test]
    fn split() {
        assert_eq!(split_index("eng12"), ("eng", Some(12)));
        assert_eq!(split_index("q0"), ("q", Some(0)));
        assert_eq!(split_index("hbm"), ("hbm", None));
        assert_eq!(split_index("m2s"), ("m2s", None));
        assert_eq!(split_index("123"), ("123", None));
        assert_eq!(split_index(""), ("", None));
        assert_eq!(
            split_index("x99999999999999999999999"),
            ("x99999999999999999999999", None)
        );
        assert_eq!(split_index("ü7"), ("ü", Some(7)));
    }
}
