//! The assembler text form: one word per line,
//!
//! ```text
//! DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.semaphore_value=16 \
//!     src_start_addr=imm:0x4000000000 src_step_elem=[1,4096] src_num_elem=[4096,128] ...
//! ```
//!
//! (one line; the break above is for the page). `KIND` is the seed's word
//! name; each `key=value` assigns a field by its seed name, groups dotted
//! (`events.wait_mode`, `src_bound_reg.bc_enabled`, `flags.gather_dim`).
//! Omitted fields are zero / inert (`header.inst_word_len` 4). `#` starts a
//! comment; blank lines are skipped. Printing is canonical: fields in byte
//! order, defaults omitted ([`TextStyle::Compact`]) or all shown
//! ([`TextStyle::Full`]); either parses back to the same word. The value
//! syntax is in `docs/instruction-words.md` §Text form.

use std::borrow::Cow;
use std::fmt;

use super::field::SetError;
use super::raw::WORD_BYTES;
use super::{InstError, InstKind, InstWord};

/// How much of a word [`print_word`] shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TextStyle {
    /// Fields that differ from their default only (the canonical form).
    #[default]
    Compact,
    /// Every field.
    Full,
}

/// The word as one line: `KIND key=value …`.
#[must_use]
pub fn print_word(word: &InstWord, style: TextStyle) -> String {
    let mut line = word.kind().name().to_string();
    for leaf in word.leaves() {
        if style == TextStyle::Full || !leaf.is_default {
            line.push(' ');
            line.push_str(&leaf.path);
            line.push('=');
            line.push_str(&leaf.text);
        }
    }
    line
}

/// A text-form error at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column of the offending token.
    pub column: usize,
    /// What is wrong, naming the word and the field.
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for TextError {}

/// Why a binary stream does not disassemble.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// The length is not a multiple of 64.
    Length {
        /// The stream's length in bytes.
        len: usize,
    },
    /// A word does not decode.
    Word {
        /// Byte offset of the word in the stream.
        offset: usize,
        /// Why.
        error: InstError,
    },
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length { len } => write!(
                f,
                "a stream of {len} bytes is not a whole number of {WORD_BYTES}-byte words: \
                 {} trailing bytes at offset {:#x}",
                len % WORD_BYTES,
                len - len % WORD_BYTES
            ),
            Self::Word { offset, error } => write!(
                f,
                "word {} at offset {offset:#x}: {error}",
                offset / WORD_BYTES
            ),
        }
    }
}

impl std::error::Error for StreamError {}

/// Disassembles a binary stream of 64-byte words: one canonical line per
/// word, each ending in a newline.
pub fn disasm(bytes: &[u8]) -> Result<String, StreamError> {
    disasm_with(bytes, TextStyle::Compact)
}

/// [`disasm`] with a choice of [`TextStyle`].
pub fn disasm_with(bytes: &[u8], style: TextStyle) -> Result<String, StreamError> {
    if !bytes.len().is_multiple_of(WORD_BYTES) {
        return Err(StreamError::Length { len: bytes.len() });
    }
    let mut out = String::new();
    for (i, chunk) in bytes.chunks_exact(WORD_BYTES).enumerate() {
        let mut word = [0u8; WORD_BYTES];
        word.copy_from_slice(chunk);
        let w = InstWord::decode(&word).map_err(|error| StreamError::Word {
            offset: i * WORD_BYTES,
            error,
        })?;
        out.push_str(&print_word(&w, style));
        out.push('\n');
    }
    Ok(out)
}

/// The text without a leading UTF-8 byte-order mark (skipped as traces
/// skip it, docs/trace-format.md §1; columns count from after it).
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Assembles text (any number of lines) into the binary stream; every bad
/// line is reported. A leading byte-order mark is skipped.
pub fn asm(text: &str) -> Result<Vec<u8>, Vec<TextError>> {
    let text = without_bom(text);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_at(line, i + 1, 1) {
            Ok(Some((_, bytes))) => out.extend_from_slice(&bytes),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Parses text into words; every bad line is reported. A leading
/// byte-order mark is skipped.
pub fn parse_text(text: &str) -> Result<Vec<InstWord>, Vec<TextError>> {
    let text = without_bom(text);
    let mut words = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_at(line, i + 1, 1) {
            Ok(Some((w, _))) => words.push(w),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(words)
    } else {
        Err(errors)
    }
}

/// Parses one line (reported as line 1); `None` for a blank or comment line.
pub fn parse_line(line: &str) -> Result<Option<InstWord>, TextError> {
    parse_line_numbered(line, 1)
}

/// [`parse_line`] reporting errors at line `line_no` (for callers that
/// embed the text form, such as the trace language).
pub fn parse_line_numbered(line: &str, line_no: usize) -> Result<Option<InstWord>, TextError> {
    parse_at(line, line_no, 1).map(|o| o.map(|(w, _)| w))
}

/// [`parse_line_numbered`] for text that starts at column `first_column`
/// (1-based) of its line in a larger file — the word of the trace
/// language's `inst`: every column, the error's and those its message
/// names (`given twice (first at column N)`), counts from the start of
/// that line.
pub fn parse_line_at(
    line: &str,
    line_no: usize,
    first_column: usize,
) -> Result<Option<InstWord>, TextError> {
    parse_at(line, line_no, first_column).map(|o| o.map(|(w, _)| w))
}

/// The tokens of a line: `(column, token)`.
type Tokens<'l> = Vec<(usize, Cow<'l, str>)>;

/// Splits a line into `(column, token)`; `[…]` keeps its spaces out of the
/// token and does not split; `#` ends the line. Columns count characters.
fn tokens(line: &str) -> Result<Tokens<'_>, (usize, String)> {
    if !line.is_ascii() {
        return tokens_of_chars(line);
    }
    // ASCII (every trace line the tools write): bytes are characters, and
    // a token without spaces inside `[…]` is a slice of the line.
    let bytes = line.as_bytes();
    let space = |b: u8| matches!(b, b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r' | b' ');
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'#' {
            break;
        }
        if space(c) {
            i += 1;
            continue;
        }
        let start = i;
        let mut depth = 0usize;
        let mut inner_space = false;
        while i < bytes.len() {
            let c = bytes[i];
            if depth == 0 && (space(c) || c == b'#') {
                break;
            }
            match c {
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                _ => inner_space |= space(c),
            }
            i += 1;
        }
        let text = &line[start..i];
        let tok: Cow<'_, str> = if inner_space {
            text.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .into()
        } else {
            text.into()
        };
        if depth > 0 {
            return Err((start + 1, format!("`{tok}`: unclosed `[`")));
        }
        out.push((start + 1, tok));
    }
    Ok(out)
}

/// [`tokens`] of a line with non-ASCII characters, character by character.
fn tokens_of_chars(line: &str) -> Result<Tokens<'_>, (usize, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            break;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let mut depth = 0usize;
        let mut tok = String::new();
        while i < chars.len() {
            let c = chars[i];
            if depth == 0 && (c.is_whitespace() || c == '#') {
                break;
            }
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if !c.is_whitespace() {
                tok.push(c);
            }
            i += 1;
        }
        if depth > 0 {
            return Err((start + 1, format!("`{tok}`: unclosed `[`")));
        }
        out.push((start + 1, tok.into()));
    }
    Ok(out)
}

/// Parses one line whose first character is at column `first_column` of
/// its line (1 for a line of its own).
fn parse_at(
    line: &str,
    line_no: usize,
    first_column: usize,
) -> Result<Option<(InstWord, [u8; WORD_BYTES])>, TextError> {
    let shift = first_column.saturating_sub(1);
    let err = |column: usize, message: String| TextError {
        line: line_no,
        column,
        message,
    };
    let mut toks = tokens(line).map_err(|(c, m)| err(c + shift, m))?;
    for (col, _) in &mut toks {
        *col += shift;
    }
    let Some(((kind_col, kind_tok), fields)) = toks.split_first() else {
        return Ok(None);
    };
    let kind = InstKind::from_name(kind_tok).ok_or_else(|| {
        let names: Vec<&str> = InstKind::ALL.iter().map(|k| k.name()).collect();
        err(
            *kind_col,
            format!(
                "unknown instruction word `{kind_tok}` (expected {})",
                names.join(", ")
            ),
        )
    })?;
    let name = kind.name();
    let mut word = InstWord::default_of(kind);
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (col, tok) in fields {
        let col = *col;
        let Some((key, value)) = tok.split_once('=') else {
            return Err(err(
                col,
                format!("{name}: expected key=value, found `{tok}`"),
            ));
        };
        if key.is_empty() {
            return Err(err(col, format!("{name}: missing field name before `=`")));
        }
        if value.is_empty() {
            return Err(err(col, format!("{name}.{key}: missing value after `=`")));
        }
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(err(
                col,
                format!("{name}.{key}: given twice (first at column {first})"),
            ));
        }
        seen.push((key, col));
        word.set(key, value).map_err(|e| match e {
            SetError::Unknown { name: bad, known } => err(
                col,
                format!(
                    "{name} has no field `{key}`: `{bad}` is not one of {}",
                    known.join(", ")
                ),
            ),
            SetError::Group { known } => {
                let sub: Vec<String> = known.iter().map(|k| format!("{key}.{k}")).collect();
                err(
                    col,
                    format!("{name}.{key} is a group: set {}", sub.join(", ")),
                )
            }
            SetError::NotGroup => err(
                col,
                format!(
                    "{name}.{key}: `{}` has no sub-fields",
                    head_before_scalar(&word, key)
                ),
            ),
            SetError::Value(expected) => err(
                col + key.chars().count() + 1,
                format!("{name}.{key}: expected {expected}, found `{value}`"),
            ),
        })?;
    }
    let bytes = word.encode().map_err(|e| {
        let column = seen
            .iter()
            .find(|(k, _)| {
                *k == e.field
                    || k.starts_with(&format!("{}.", e.field))
                    || e.field.starts_with(&format!("{k}."))
            })
            .map_or(*kind_col, |(_, c)| *c);
        err(column, e.to_string())
    })?;
    Ok(Some((word, bytes)))
}

/// The longest prefix of `key` that names a leaf of `word` (for the
/// "has no sub-fields" message).
fn head_before_scalar(word: &InstWord, key: &str) -> String {
    let leaves = word.leaves();
    let mut best = key.split('.').next().unwrap_or(key).to_string();
    let mut prefix = String::new();
    for part in key.split('.') {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(part);
        if leaves.iter().any(|l| l.path == prefix) {
            best = prefix.clone();
            break;
        }
    }
    best
}
