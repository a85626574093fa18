//! Parse errors.

use std::fmt;

use serde::Serialize;

use crate::span::Span;

/// One problem found while parsing a trace.
///
/// `Display` renders it as `file:line:column: message`, the format editors
/// and CI logs recognise. `message` says what was expected and what was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ParseError {
    /// The file name the caller passed to [`parse`](crate::parse).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// Number of characters the problem covers (0 for a position, e.g. a
    /// missing argument at the end of a line).
    pub len: u32,
    /// Human-readable description.
    pub message: String,
}

impl ParseError {
    /// The span of source text the error points at.
    pub fn span(&self) -> Span {
        Span::new(self.line, self.column, self.len)
    }
}

impl fmt::Display for ParseError {
    /// `FILE:LINE:COLUMN: message`; `FILE: message` for line 0 (a statement
    /// no line holds, such as those of a bare instruction stream).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: {}", self.file, self.message);
        }
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// An error before it is tagged with a file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Diag {
    pub span: Span,
    pub message: String,
}

impl Diag {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Diag {
            span,
            message: message.into(),
        }
    }

    pub fn into_error(self, file: &str) -> ParseError {
        ParseError {
            file: file.to_string(),
            line: self.span.line,
            column: self.span.column,
            len: self.span.len,
            message: self.message,
        }
    }
}

/// Quotes user text for an error message: `'text'`, with control characters
/// escaped and long text shortened.
pub(crate) fn quote(text: &str) -> String {
    const MAX: usize = 40;
    let mut out = String::from("'");
    for (i, c) in text.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}
