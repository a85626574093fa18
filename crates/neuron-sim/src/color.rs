//! Colour in the text output of `run` and `step` (docs/user-guide.md
//! §Colour): `FAILED`, `ERROR`, `FAULT` and unexpected faults in red,
//! `SKIPPED` and `warning:` in yellow. Whether to colour is decided once per stream by
//! `anstream`: `--color always|never` wins; under `--color auto` (the
//! default) `NO_COLOR` turns colour off, `CLICOLOR_FORCE` on, and otherwise
//! only a terminal gets it. The words are found where the report puts them
//! (a statement line's mark, an event's `FAULT`, a line that starts with
//! `warning:`), never inside a trace's own text.

use std::borrow::Cow;

use anstyle::{AnsiColor, Style};

/// Failures: `FAILED`, `ERROR`, `FAULT`, `expectation failed:`, `error:`.
const BAD: Style = AnsiColor::Red.on_default().bold();
/// `SKIPPED`, `warning:`.
const NOTE: Style = AnsiColor::Yellow.on_default();

/// Sets the choice every later [`Paint::for_stdout`] / [`Paint::for_stderr`]
/// starts from (`--color`).
pub(crate) fn set_choice(choice: clap::ColorChoice) {
    let c = match choice {
        clap::ColorChoice::Auto => anstream::ColorChoice::Auto,
        clap::ColorChoice::Always => anstream::ColorChoice::AlwaysAnsi,
        clap::ColorChoice::Never => anstream::ColorChoice::Never,
    };
    c.write_global();
}

/// Whether, and how, text bound for one stream is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Paint {
    on: bool,
}

impl Paint {
    /// Colour for text written to standard output.
    pub(crate) fn for_stdout() -> Self {
        let choice = anstream::AutoStream::choice(&std::io::stdout());
        Paint {
            on: choice != anstream::ColorChoice::Never,
        }
    }

    /// Colour for text written to standard error.
    pub(crate) fn for_stderr() -> Self {
        let choice = anstream::AutoStream::choice(&std::io::stderr());
        Paint {
            on: choice != anstream::ColorChoice::Never,
        }
    }

    /// Whether text is coloured.
    pub(crate) fn is_on(self) -> bool {
        self.on
    }

    /// No colour.
    #[cfg(test)]
    const OFF: Paint = Paint { on: false };

    /// Colour.
    #[cfg(test)]
    const ON: Paint = Paint { on: true };

    /// Lines of report text (statement lines of `trace`, their event lines,
    /// the summary), coloured. Unchanged when colour is off.
    pub(crate) fn lines<'a>(&self, trace: &str, text: &'a str) -> Cow<'a, str> {
        if !self.on {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() + 32);
        for line in text.split_inclusive('\n') {
            paint_line(trace, line, &mut out);
        }
        Cow::Owned(out)
    }
}

/// Appends `line` to `out` with its status word coloured.
fn paint_line(trace: &str, line: &str, out: &mut String) {
    // A statement line: `TRACE:LINE: MARK text` (or `TRACE: MARK text`).
    if let Some(rest) = line.strip_prefix(trace).and_then(|r| r.strip_prefix(':')) {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let body = match digits {
            0 => rest.strip_prefix(' '),
            _ => rest[digits..].strip_prefix(": "),
        };
        if let Some(body) = body {
            let head = line.len() - body.len();
            for (mark, style) in [("FAILED ", BAD), ("ERROR ", BAD), ("SKIPPED ", NOTE)] {
                if body.starts_with(mark) {
                    return styled_at(line, head, mark.len() - 1, style, out);
                }
            }
            out.push_str(line);
            return;
        }
    }
    // Summary and continuation lines: a leading word.
    let indent = line.len() - line.trim_start_matches(' ').len();
    let body = &line[indent..];
    for (word, style) in [
        ("expectation failed:", BAD),
        ("error:", BAD),
        ("warning:", NOTE),
    ] {
        if body.starts_with(word) {
            return styled_at(line, indent, word.len(), style, out);
        }
    }
    // A summary fault no `expect_fault` claimed: `  fault AT CAUSE (ACTION)
    // xN, first at cycle C: detail` (a claimed one has `, expected` after C).
    if indent == 2
        && let Some(rest) = body.strip_prefix("fault ")
        && let Some((_, cycle)) = rest.split_once(", first at cycle ")
    {
        let digits = cycle.bytes().take_while(u8::is_ascii_digit).count();
        if cycle[digits..].starts_with(": ") {
            return styled_at(line, indent, "fault".len(), BAD, out);
        }
    }
    // An event line (indented by four): `… FAULT cause …`, `… warning: …`.
    if indent >= 4 {
        for (word, style) in [(" FAULT ", BAD), (" warning: ", NOTE)] {
            if let Some(at) = line.find(word) {
                return styled_at(line, at + 1, word.len() - 2, style, out);
            }
        }
    }
    out.push_str(line);
}

/// Appends `line` with its bytes `at..at + len` in `style`.
fn styled_at(line: &str, at: usize, len: usize, style: Style, out: &mut String) {
    let (before, rest) = line.split_at(at);
    let (word, after) = rest.split_at(len);
    out.push_str(before);
    out.push_str(&format!("{style}{word}{style:#}"));
    out.push_str(after);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> String {
        s.replace("\x1b[1m\x1b[31m", "<R>")
            .replace("\x1b[33m", "<Y>")
            .replace("\x1b[0m", "</>")
    }

    #[test]
    fn status_words_are_coloured_where_the_report_puts_them() {
        let text = "\
t.trace:3: FAILED expect tpb0.sbuf[0] == 1: got 0
t.trace:4: ERROR write32 x: unknown region
t.trace:5: SKIPPED expect sha256=…
t.trace:6: wait ok FAILED ERROR
t.trace: FAILED stream word 0
    cycle 10 eng0 s2m.q0 FAULT SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE (abort): pad
    cycle 11 eng0 m2s.q0 warning: ring wrapped
  warning: 64 KiB descriptor read as 0
expectation failed: t.trace:3: …
error: t.trace:4: unknown region
  fault eng5.m2s.q0 SEC_A (abort) x1, first at cycle 194: data read at 0x10
  fault eng6.m2s.q0 SEC_A (abort) x1, first at cycle 216, expected: read
1 statements, 0 expectations passed, 1 failed, 0 errors
";
        let got = plain(&Paint::ON.lines("t.trace", text));
        let want = "\
t.trace:3: <R>FAILED</> expect tpb0.sbuf[0] == 1: got 0
t.trace:4: <R>ERROR</> write32 x: unknown region
t.trace:5: <Y>SKIPPED</> expect sha256=…
t.trace:6: wait ok FAILED ERROR
t.trace: <R>FAILED</> stream word 0
    cycle 10 eng0 s2m.q0 <R>FAULT</> SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE (abort): pad
    cycle 11 eng0 m2s.q0 <Y>warning:</> ring wrapped
  <Y>warning:</> 64 KiB descriptor read as 0
<R>expectation failed:</> t.trace:3: …
<R>error:</> t.trace:4: unknown region
  <R>fault</> eng5.m2s.q0 SEC_A (abort) x1, first at cycle 194: data read at 0x10
  fault eng6.m2s.q0 SEC_A (abort) x1, first at cycle 216, expected: read
1 statements, 0 expectations passed, 1 failed, 0 errors
";
        assert_eq!(got, want);
    }

    #[test]
    fn words_in_a_trace_name_or_statement_text_are_left_alone() {
        // The trace's own name and text may hold the words.
        let text = "FAILED.trace:2: write32 FAULT 1\nx:1: ok warning: no\n";
        assert_eq!(Paint::ON.lines("FAILED.trace", text), text);
    }

    #[test]
    fn off_returns_the_text_unchanged() {
        let text = "t.trace:3: FAILED x\n";
        assert!(matches!(
            Paint::OFF.lines("t.trace", text),
            Cow::Borrowed(_)
        ));
    }
}
