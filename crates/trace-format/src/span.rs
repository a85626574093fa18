//! Source positions.

use serde::Serialize;

/// A run of characters on one line of a trace: 1-based `line` and `column`
/// (columns count Unicode scalar values, not bytes) and a length in
/// characters. `len` may be 0 for a position ("missing … here").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub struct Span {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column of the first character.
    pub column: u32,
    /// Number of characters covered.
    pub len: u32,
}

impl Span {
    /// A span of `len` characters starting at `line:column`.
    pub const fn new(line: u32, column: u32, len: u32) -> Self {
        Span { line, column, len }
    }

    /// The column just past the last character.
    pub const fn end_column(self) -> u32 {
        self.column.saturating_add(self.len)
    }

    /// The span from the start of `self` to the end of `other` (same line).
    pub fn to(self, other: Span) -> Span {
        let end = other.end_column().max(self.end_column());
        Span::new(self.line, self.column, end.saturating_sub(self.column))
    }

    /// The empty span just past the end of `self`.
    pub const fn after(self) -> Span {
        Span::new(self.line, self.end_column(), 0)
    }
}

/// `usize` → `u32`, saturating (spans on absurdly long inputs stay valid).
pub(crate) fn sat_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
