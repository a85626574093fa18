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
//!      fill, write, load, expect, dump, desc, doorbell, run, wait); did you mean 'write32'?"
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
mod lex;
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
        if let Some(raw) = lex::lex_line(line, text, &mut line_diags)
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
