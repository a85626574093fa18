//! The line lexer: one line of text → a directive word and its arguments.
//!
//! Lexical rules (see `docs/trace-format.md`):
//! - `#` outside a quoted string starts a comment that runs to the end of the line;
//! - tokens are separated by whitespace;
//! - a *word* is a run of characters other than whitespace, `#`, `=` and `"`;
//! - a *string* is `"…"`, in which `\"` and `\\` are the only escapes;
//! - `=` joins a key to its value with no whitespace on either side (`len=4096`);
//! - `==`, `!=` and `>=` are comparison operators (whitespace around them is
//!   optional); they end a word (`a>=1` is `a`, `>=`, `1`).

use crate::ast::Compare;
use crate::error::{Diag, quote};
use crate::span::{Span, sat_u32};

/// A word or quoted string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text (for strings: without quotes, escapes resolved).
    pub text: String,
    /// `true` when written as a quoted string.
    pub quoted: bool,
    /// The source span (for strings: including the quotes).
    pub span: Span,
}

impl Word {
    /// The word as it would be quoted in an error message.
    pub fn describe(&self) -> String {
        if self.quoted {
            format!("string \"{}\"", quote(&self.text).trim_matches('\''))
        } else {
            quote(&self.text)
        }
    }
}

/// One argument of a directive, before its value is interpreted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawArg {
    /// A value on its own.
    Positional(Word),
    /// `key=value`.
    Keyed { key: Word, value: Word },
    /// `== value`, `!= value`, `>= value`.
    Compare { op: Span, cmp: Compare, value: Word },
}

impl RawArg {
    pub fn span(&self) -> Span {
        match self {
            RawArg::Positional(w) => w.span,
            RawArg::Keyed { key, value } => key.span.to(value.span),
            RawArg::Compare { op, value, .. } => op.to(value.span),
        }
    }
}

/// A lexed, non-empty line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawLine {
    pub directive: Word,
    pub args: Vec<RawArg>,
    /// From the first character of the directive to the last character of
    /// the last argument.
    pub span: Span,
}

#[derive(Clone, Debug)]
enum TokKind {
    Word(Word),
    Eq,
    Cmp(Compare),
}

#[derive(Clone, Debug)]
struct Tok {
    kind: TokKind,
    span: Span,
    /// Whitespace (or the start of the line) precedes this token.
    spaced: bool,
}

fn is_word_char(c: char) -> bool {
    !(c.is_whitespace() || c == '#' || c == '=' || c == '"')
}

/// The comparison operator starting at `chars[i]`, if any.
fn comparison_at(chars: &[char], i: usize) -> Option<Compare> {
    match (chars.get(i), chars.get(i + 1)) {
        (Some('='), Some('=')) => Some(Compare::Eq),
        (Some('!'), Some('=')) => Some(Compare::Ne),
        (Some('>'), Some('=')) => Some(Compare::Ge),
        _ => None,
    }
}

/// `true` for `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits `text` (line `line`) into tokens. Lexical errors are pushed to
/// `diags`; the returned tokens are then unreliable.
fn tokenize(line: u32, text: &str, diags: &mut Vec<Diag>) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let col = |i: usize| sat_u32(i).saturating_add(1);
    let span = |i: usize, j: usize| Span::new(line, col(i), sat_u32(j - i));
    let mut toks: Vec<Tok> = Vec::new();
    let mut spaced = true;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            spaced = true;
            i += 1;
            continue;
        }
        if c == '#' {
            break;
        }
        let start = i;
        let kind = if let Some(cmp) = comparison_at(&chars, i) {
            i += 2;
            TokKind::Cmp(cmp)
        } else if c == '=' {
            i += 1;
            TokKind::Eq
        } else if c == '"' {
            let mut buf = String::new();
            let mut j = i + 1;
            let mut closed = false;
            while let Some(&ch) = chars.get(j) {
                match ch {
                    '"' => {
                        closed = true;
                        j += 1;
                        break;
                    }
                    '\\' if matches!(chars.get(j + 1), Some('"' | '\\')) => {
                        buf.extend(chars.get(j + 1));
                        j += 2;
                    }
                    _ => {
                        buf.push(ch);
                        j += 1;
                    }
                }
            }
            if !closed {
                diags.push(Diag::new(
                    span(i, j),
                    "unterminated string (expected a closing '\"' before the end of the line)",
                ));
                return toks;
            }
            i = j;
            TokKind::Word(Word {
                text: buf,
                quoted: true,
                span: span(start, j),
            })
        } else {
            let mut j = i;
            while chars.get(j).is_some_and(|&ch| is_word_char(ch))
                && comparison_at(&chars, j).is_none()
            {
                j += 1;
            }
            i = j;
            TokKind::Word(Word {
                text: chars[start..j].iter().collect(),
                quoted: false,
                span: span(start, j),
            })
        };
        let tok = Tok {
            kind,
            span: span(start, i),
            spaced,
        };
        if let (TokKind::Word(w), Some(prev)) = (&tok.kind, toks.last())
            && !tok.spaced
            && matches!(prev.kind, TokKind::Word(_))
        {
            diags.push(Diag::new(
                tok.span,
                format!("expected whitespace before {}", w.describe()),
            ));
        }
        toks.push(tok);
        spaced = false;
    }
    toks
}

/// Lexes one line. Returns `None` for blank and comment-only lines, and for
/// lines with lexical errors (which are pushed to `diags`).
pub(crate) fn lex_line(line: u32, text: &str, diags: &mut Vec<Diag>) -> Option<RawLine> {
    let before = diags.len();
    let toks = tokenize(line, text, diags);
    if diags.len() > before {
        return None;
    }
    let mut iter = toks.into_iter().peekable();
    let first = iter.next()?;
    let directive = match first.kind {
        TokKind::Word(w) if !w.quoted => w,
        TokKind::Word(w) => {
            diags.push(Diag::new(
                w.span,
                format!("expected a directive name, found {}", w.describe()),
            ));
            return None;
        }
        TokKind::Eq | TokKind::Cmp(_) => {
            diags.push(Diag::new(
                first.span,
                format!(
                    "expected a directive name at the start of the line, found '{}'",
                    match first.kind {
                        TokKind::Cmp(c) => c.symbol(),
                        _ => "=",
                    }
                ),
            ));
            return None;
        }
    };
    let mut args = Vec::new();
    while let Some(tok) = iter.next() {
        match tok.kind {
            TokKind::Word(key) => {
                let Some(eq) = iter.next_if(|t| matches!(t.kind, TokKind::Eq)) else {
                    args.push(RawArg::Positional(key));
                    continue;
                };
                let name = quote(&key.text);
                if key.quoted || !is_identifier(&key.text) {
                    diags.push(Diag::new(
                        key.span,
                        format!(
                            "expected an argument name before '=', found {}",
                            key.describe()
                        ),
                    ));
                } else if eq.spaced {
                    diags.push(Diag::new(
                        eq.span,
                        format!(
                            "unexpected whitespace before '=' (write {}=VALUE)",
                            key.text
                        ),
                    ));
                }
                match iter.next_if(|t| matches!(t.kind, TokKind::Word(_))) {
                    Some(Tok {
                        kind: TokKind::Word(value),
                        spaced,
                        ..
                    }) => {
                        if spaced {
                            diags.push(Diag::new(
                                value.span,
                                format!(
                                    "unexpected whitespace after '=' (write {}={})",
                                    key.text, value.text
                                ),
                            ));
                        }
                        args.push(RawArg::Keyed { key, value });
                    }
                    _ => diags.push(Diag::new(
                        eq.span.after(),
                        format!("missing value for {name}"),
                    )),
                }
            }
            TokKind::Eq => diags.push(Diag::new(tok.span, "expected an argument name before '='")),
            TokKind::Cmp(cmp) => match iter.next_if(|t| matches!(t.kind, TokKind::Word(_))) {
                Some(Tok {
                    kind: TokKind::Word(value),
                    ..
                }) => args.push(RawArg::Compare {
                    op: tok.span,
                    cmp,
                    value,
                }),
                _ => diags.push(Diag::new(
                    tok.span.after(),
                    format!("missing value after '{}'", cmp.symbol()),
                )),
            },
        }
    }
    if diags.len() > before {
        return None;
    }
    let span = args
        .last()
        .map_or(directive.span, |a| directive.span.to(a.span()));
    Some(RawLine {
        directive,
        args,
        span,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn lex(text: &str) -> Result<Option<RawLine>, Vec<Diag>> {
        let mut diags = Vec::new();
        let line = lex_line(1, text, &mut diags);
        if diags.is_empty() {
            Ok(line)
        } else {
            Err(diags)
        }
    }

    fn err(text: &str) -> (u32, String) {
        let d = lex(text).unwrap_err();
        (d[0].span.column, d[0].message.clone())
    }

    #[test]
    fn blank_and_comments() {
        assert_eq!(lex(""), Ok(None));
        assert_eq!(lex("   \t \r"), Ok(None));
        assert_eq!(lex("  # write32 x 1"), Ok(None));
    }

    #[test]
    fn words_keys_compare() {
        let l = lex("read32  a.b[3] ==0x3 mask=0xff # c").unwrap().unwrap();
        assert_eq!(l.directive.text, "read32");
        assert_eq!(l.span, Span::new(1, 1, 30));
        assert_eq!(l.args.len(), 3);
        assert!(
            matches!(&l.args[0], RawArg::Positional(w) if w.text == "a.b[3]" && w.span == Span::new(1, 9, 6))
        );
        assert!(
            matches!(&l.args[1], RawArg::Compare { op, cmp: Compare::Eq, value } if *op == Span::new(1, 16, 2) && value.text == "0x3")
        );
        assert!(
            matches!(&l.args[2], RawArg::Keyed { key, value } if key.text == "mask" && value.span == Span::new(1, 27, 4))
        );
    }

    #[test]
    fn comparisons() {
        let l = lex("wait a>=1 b!=0x2 c == 3").unwrap().unwrap();
        let got: Vec<String> = l
            .args
            .iter()
            .map(|a| match a {
                RawArg::Positional(w) => w.text.clone(),
                RawArg::Compare { op, cmp, value } => {
                    format!("{}@{} {}", cmp.symbol(), op.column, value.text)
                }
                RawArg::Keyed { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(got, ["a", ">=@7 1", "b", "!=@12 0x2", "c", "==@20 3"]);
        // '!' and '>' alone are still word characters
        let l = lex("load x file=a>b!c").unwrap().unwrap();
        assert!(matches!(&l.args[1], RawArg::Keyed { value, .. } if value.text == "a>b!c"));
    }

    #[test]
    fn strings() {
        let l = lex(r#"load x file="a b#\"c\\d\e.bin""#).unwrap().unwrap();
        let RawArg::Keyed { value, .. } = &l.args[1] else {
            panic!()
        };
        assert_eq!(value.text, r#"a b#"c\d\e.bin"#);
        assert!(value.quoted);
        assert_eq!(value.span, Span::new(1, 13, 18));
    }

    #[test]
    fn unicode_columns() {
        let l = lex("dump ü len=1").unwrap().unwrap();
        assert!(matches!(&l.args[1], RawArg::Keyed { key, .. } if key.span.column == 8));
    }

    #[test]
    fn errors() {
        assert_eq!(
            err(r#"load x file="abc"#),
            (
                13,
                "unterminated string (expected a closing '\"' before the end of the line)".into()
            )
        );
        assert_eq!(err("fill x len="), (12, "missing value for 'len'".into()));
        assert_eq!(
            err("fill x len= 5"),
            (13, "unexpected whitespace after '=' (write len=5)".into())
        );
        assert_eq!(
            err("fill x len =5"),
            (
                12,
                "unexpected whitespace before '=' (write len=VALUE)".into()
            )
        );
        assert_eq!(
            err("fill =5"),
            (6, "expected an argument name before '='".into())
        );
        assert_eq!(
            err("fill x =5"),
            (8, "unexpected whitespace before '=' (write x=VALUE)".into())
        );
        assert_eq!(
            err("fill x 0x=5"),
            (8, "expected an argument name before '=', found '0x'".into())
        );
        assert_eq!(err("read32 x =="), (12, "missing value after '=='".into()));
        assert_eq!(err("wait x !="), (10, "missing value after '!='".into()));
        assert_eq!(
            err(">= x"),
            (
                1,
                "expected a directive name at the start of the line, found '>='".into()
            )
        );
        assert_eq!(
            err(r#"load x "a"b"#),
            (11, "expected whitespace before 'b'".into())
        );
        assert_eq!(
            err(r#""dump" x"#),
            (1, "expected a directive name, found string \"dump\"".into())
        );
        assert_eq!(
            err("= x"),
            (
                1,
                "expected a directive name at the start of the line, found '='".into()
            )
        );
    }
}
