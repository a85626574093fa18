//! Reading the text files the CLI is given (traces, instruction-word text,
//! timing files, SoC and CSR maps, sweep CSVs): a file that cannot be read
//! says so with the OS error; one that is not UTF-8 names the line, the
//! column and the byte offset of the first bad byte (`FILE:LINE:COLUMN:`,
//! as trace errors do; docs/user-guide.md §3).

use std::path::Path;

use crate::{Failure, bad_input};

/// Reads `path` as UTF-8 text; `what` names the input in messages
/// (`trace`, `--timing`, `--soc-map`).
pub(crate) fn read_text(path: &Path, what: &str) -> Result<String, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| bad_input(format!("cannot read {what} {}: {e}", path.display())))?;
    text_of(bytes, &path.display().to_string(), what).map_err(bad_input)
}

/// `bytes` as a String, or where the first byte that is not UTF-8 is.
pub(crate) fn text_of(bytes: Vec<u8>, name: &str, what: &str) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let err = e.utf8_error();
        let at = err.valid_up_to();
        let (line, column) = line_column(bytes, at);
        let problem = match err.error_len() {
            Some(_) => format!(
                "byte {:#04x} at byte offset {at}",
                bytes.get(at).copied().unwrap_or(0)
            ),
            None => {
                format!("a sequence cut off by the end of the file at byte offset {at}")
            }
        };
        format!("{name}:{line}:{column}: {what} is not valid UTF-8: {problem}")
    })
}

/// The 1-based line and column (in characters) of byte `at`; the bytes
/// before it are valid UTF-8.
fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = bytes.get(..at).unwrap_or(bytes);
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bad_byte_is_located() {
        let e = text_of(b"ab\ncd\xc3\xa9f\xffg".to_vec(), "t.trace", "trace").unwrap_err();
        assert_eq!(
            e,
            "t.trace:2:5: trace is not valid UTF-8: byte 0xff at byte offset 8"
        );
        let e = text_of(b"\x80".to_vec(), "x", "CSV").unwrap_err();
        assert!(e.starts_with("x:1:1: CSV is not valid UTF-8: byte 0x80 at byte offset 0"));
        let e = text_of(b"a\n\xe2\x82".to_vec(), "x", "trace").unwrap_err();
        assert!(e.starts_with("x:2:1: "), "{e}");
        assert!(
            e.contains("cut off by the end of the file at byte offset 2"),
            "{e}"
        );
        assert_eq!(text_of(b"ok\n".to_vec(), "x", "trace").unwrap(), "ok\n");
    }
}
