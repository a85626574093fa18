//! The 64-byte DMA instruction words on the command line (`dma_abi::inst`):
//! `decode --word HEX [--json]`, `disasm FILE [-o OUT] [--full]` (binary
//! stream → text) and `asm FILE -o OUT` (text → binary stream). Bad input
//! exits 2 with a message naming the file, line, column or byte offset.
//! FILE may be `-` (standard input, `<stdin>` in messages), and so may OUT
//! (standard output).

use std::path::Path;

use dma_abi::inst::{self, InstDecode, InstWord, TextStyle};

use crate::input::{InputKind, name_of, read_bytes_or_stdin, read_text_or_stdin};
use crate::{Failure, bad_input, outputs};

/// `decode --word HEX`: one word, 128 hex digits in memory order.
pub(crate) fn cmd_decode_word(hex: &str, json: bool) -> Result<u8, Failure> {
    let bytes = inst::parse_hex_word(hex).map_err(|e| bad_input(format!("--word: {e}")))?;
    let word = InstWord::decode(&bytes).map_err(|e| bad_input(format!("--word: {e}")))?;
    if json {
        crate::json_out::print(InstDecode::new(word, &bytes))?;
    } else {
        out!("{}", inst::render_text(&word, &bytes));
    }
    Ok(0)
}

/// `disasm FILE`: a binary stream of 64-byte words to one text line each.
pub(crate) fn cmd_disasm(file: &Path, output: Option<&Path>, full: bool) -> Result<u8, Failure> {
    outputs::check_distinct(
        &[("-o", output)],
        &[("FILE", Some(file))],
        outputs::Dash::Stdio,
    )?;
    let bytes = read_bytes_or_stdin(file, "instruction stream", InputKind::InstructionStream)?;
    // As `run FILE.bin` and `inst_stream` (docs/trace-format.md §4.6).
    if bytes.is_empty() {
        return Err(bad_input(format!(
            "{}: the stream is empty: it holds no 64-byte word",
            name_of(file)
        )));
    }
    let style = if full {
        TextStyle::Full
    } else {
        TextStyle::Compact
    };
    let text = inst::text::disasm_with(&bytes, style)
        .map_err(|e| bad_input(format!("{}: {e}", name_of(file))))?;
    match output {
        Some(p) => outputs::write(p, text.as_bytes())
            .map_err(|e| bad_input(format!("cannot write {}: {e}", outputs::name_of(p))))?,
        None => out!("{text}"),
    }
    Ok(0)
}

/// `asm FILE -o OUT`: text lines to the binary stream.
pub(crate) fn cmd_asm(file: &Path, output: &Path) -> Result<u8, Failure> {
    outputs::check_distinct(
        &[("-o", Some(output))],
        &[("FILE", Some(file))],
        outputs::Dash::Stdio,
    )?;
    let text = read_text_or_stdin(file, "instruction-word text", InputKind::InstructionText)?;
    let bytes = inst::asm(&text).map_err(|errors| {
        let mut msg: Vec<String> = errors
            .iter()
            .map(|e| format!("{}:{e}", name_of(file)))
            .collect();
        msg.push(format!("{} error(s); nothing was written", errors.len()));
        bad_input(msg.join("\n"))
    })?;
    // An empty stream cannot run (`run FILE.bin` and `inst_stream` refuse
    // it, docs/trace-format.md §4.6): said now, not when it runs.
    if bytes.is_empty() {
        return Err(bad_input(format!(
            "{}: no instruction word in the text (only comments or blank lines): an empty stream cannot run; nothing was written",
            name_of(file)
        )));
    }
    outputs::write(output, &bytes)
        .map_err(|e| bad_input(format!("cannot write {}: {e}", outputs::name_of(output))))?;
    Ok(0)
}
