//! The neuron-sim trace language (versions 1 and 2): lexer, parser and AST.
//!
//! A trace is a text file of directive lines — register reads and writes,
//! memory set-up and checks (v1); descriptors placed into DMA rings,
//! doorbells, running the device and waiting for a value (v2) — that
//! `neuron-sim run` executes against a simulated Trainium2 device. The
//! language reference is `docs/trace-format.md`.
//!
//! This crate is pure: it parses from a `&str`, does no file IO, and knows
//! nothing of the address map. Symbolic addresses such as
//! `tpb0.sbuf[p5]+0x100` are returned as an unresolved [`AddrExpr`] for the
//! executor to resolve against the SoC map; file names are returned as
//! written, for the executor to resolve relative to the trace file.
//!
//! ```
//! use trace_format::{parse, StatementKind};
//!
//! let trace = parse("write32 eng0.m2s.q0.q_cfg 0x00030000  # enable\n", "t.trace").unwrap();
//! let StatementKind::Write32 { addr, value } = &trace.statements[0].kind else { panic!() };
//! assert_eq!(addr.to_string(), "eng0.m2s.q0.q_cfg");
//! assert_eq!(*value, 0x30000);
//!
//! let errors = parse("wirte32 hbm0 1\n", "t.trace").unwrap_err();
//! assert_eq!(
//!     errors[0].to_string(),
//!     "t.trace:1:1: unknown directive 'wirte32' (expected one of: write32, read32, \
//!      fill, write, load, expect, dump, desc, doorbell, memcpy, inst_stream, memcpy_method, \
//!      icache_init, icache_fill, expect_fault, expect_refusal, run, wait, alloc, allocator, allocator_destroy, scratchpad, copyin, copyout, batch_copy, free, acquire, mem_stats, runtime, driver, inst); did you mean 'write32'?"
//! );
//! ```
//!
//! # Extending the language
//!
//! Each directive is one row of the table behind [`directives`]: its
//! positional parameters, the comparisons it takes (`== VALUE`…), its
//! `key=value` parameters with their value kinds ([`ValueKind`]), its bare
//! flag words, and a build function producing a [`StatementKind`] variant. The lexer and the generic argument
//! checks (unknown, duplicate, missing, surplus arguments; value parsing and
//! range checks) are shared by all directives.

mod addr;
mod ast;
mod desc;
mod directive;
mod error;
mod host;
mod lex;
mod names;
mod number;
mod span;

pub use addr::{
    AddrBase, AddrExpr, Index, Offset, PathComponent, QueueRef, RING_SLOTS, Sign, parse_addr,
    split_index,
};
pub use ast::{
    Compare, ExpectCheck, FileRef, FillContent, FillPattern, RunMode, Statement, StatementKind,
    Trace,
};
pub use desc::{AddrRole, CceOp, CmeOp, DescAddr, DescFields, DescFlag, DescFlags, Dtype};
pub use directive::{DirectiveSpec, Param, ValueKind, directive, directives};
pub use error::ParseError;
pub use host::{HostCheck, HostData, HostOp, STATUS_NAMES, USAGE_NAMES};
pub use number::Float;
pub use span::Span;

use error::Diag;
use span::sat_u32;

/// The most errors [`parse`] reports before it stops (it then adds one
/// final "too many errors" entry).
pub const MAX_ERRORS: usize = 20;

/// The largest `len=` any directive accepts: 4 GiB. (A single HBM stack is
/// 24 GiB, but a larger range in one line is almost certainly a typo, and
/// dumping or hashing it would take minutes.)
pub const MAX_LEN: u64 = 1 << 32;

/// The largest `len=` of one descriptor (`desc`): 64 KiB (the hardware
/// encodes 65536 as 0).
pub const MAX_DESC_LEN: u32 = 1 << 16;

/// The largest `doorbell` count: the tail-increment registers take 24 bits.
pub const MAX_DOORBELL: u32 = 0xff_ffff;

/// The `wait` timeout, in cycles, when the statement gives none.
pub const DEFAULT_WAIT_TIMEOUT: u64 = 10_000_000;

/// `inst CORE WORD…`: the instruction text is not in the `key=value`
/// argument grammar of the other directives (it has `[a,b]` lists and
/// `imm:` operands), so the line is split here. `None` when the line is not
/// an `inst` line; `Some(None)` when it is one with an error.
fn inst_line(line: u32, text: &str, diags: &mut Vec<Diag>) -> Option<Option<Statement>> {
    let body = text.split('#').next().unwrap_or("");
    let lead = body.len() - body.trim_start().len();
    let rest = body.trim_start().strip_prefix("inst")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let col = |byte: usize| sat_u32(text[..byte].chars().count() + 1);
    let after = lead + 4;
    let core_start = after + (rest.len() - rest.trim_start().len());
    let rest = rest.trim_start();
    let core_word = rest.split_whitespace().next().unwrap_or("");
    let usage = "usage: inst CORE WORD… (like: inst tpb0 DIRECT2D semaphore=1 …)";
    if core_word.is_empty() {
        diags.push(Diag::new(
            Span::new(line, col(lead), 4),
            format!("inst needs a core and an instruction; {usage}"),
        ));
        return Some(None);
    }
    let core_span = Span::new(line, col(core_start), sat_u32(core_word.chars().count()));
    let core = core_word
        .strip_prefix("tpb")
        .and_then(|n| n.parse::<u8>().ok())
        .filter(|&n| n < 8 && core_word == format!("tpb{n}"));
    let Some(core) = core else {
        diags.push(Diag::new(
            core_span,
            format!("`{core_word}` is not a core (expected tpb0 … tpb7); {usage}"),
        ));
        return Some(None);
    };
    let word_start = core_start + core_word.len();
    let word = &text[word_start..lead + body.trim_start().len()];
    let text_start = word_start + (word.len() - word.trim_start().len());
    let word = word.trim();
    if word.is_empty() {
        diags.push(Diag::new(
            core_span,
            format!("inst {core_word}: the instruction is missing; {usage}"),
        ));
        return Some(None);
    }
    let end = text_start + word.len();
    Some(Some(Statement {
        kind: StatementKind::Inst {
            core,
            text: word.to_string(),
            text_column: col(text_start),
        },
        span: Span::new(line, col(lead), sat_u32(text[lead..end].chars().count())),
    }))
}

/// Parses a whole trace. `file_name` is used only in error messages.
///
/// On failure returns every error found, in source order (at most
/// [`MAX_ERRORS`], plus a final note if parsing stopped early). Lines with an
/// error produce no statement; the other lines are still checked.
pub fn parse(source: &str, file_name: &str) -> Result<Trace, Vec<ParseError>> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let mut statements = Vec::new();
    let mut diags: Vec<Diag> = Vec::new();
    for (i, text) in source.split('\n').enumerate() {
        let line = sat_u32(i.saturating_add(1));
        let mut line_diags = Vec::new();
        if let Some(stmt) = inst_line(line, text, &mut line_diags) {
            statements.extend(stmt);
        } else if let Some(raw) = lex::lex_line(line, text, &mut line_diags)
            && let Some(stmt) = directive::analyze(raw, &mut line_diags)
        {
            statements.push(stmt);
        }
        line_diags.sort_by_key(|d| d.span.column);
        diags.extend(line_diags);
        if diags.len() > MAX_ERRORS {
            diags.truncate(MAX_ERRORS);
            diags.push(Diag::new(
                Span::new(line, 1, 0),
                format!("too many errors (showing the first {MAX_ERRORS}); stopped parsing here"),
            ));
            break;
        }
    }
    if diags.is_empty() {
        Ok(Trace { statements })
    } else {
        Err(diags.into_iter().map(|d| d.into_error(file_name)).collect())
    }
}

pub use names::{closest_name, edit_distance};
