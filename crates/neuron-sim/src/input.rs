//! Reading the text files the CLI is given (traces, instruction-word text,
//! timing files, SoC and CSR maps, sweep CSVs): a file that cannot be read
//! says so with the OS error; one that is not UTF-8 names the line, the
//! column and the byte offset of the first bad byte (`FILE:LINE:COLUMN:`,
//! as trace errors do; docs/user-guide.md §3). For traces, instruction
//! streams and ioctl recordings `-` reads standard input, named `<stdin>`
//! in messages (docs/user-guide.md §Standard input and output). Every
//! input is read through `soc::input`, with its kind's size limit: an
//! endless stream (`/dev/zero`) is refused, naming the file and the limit
//! (docs/user-guide.md §3, Input size limits).

use std::path::Path;

pub(crate) use soc::input::InputKind;

use crate::{Failure, bad_input};

/// Whether `path` is `-`: standard input (for an input) or standard
/// output (for an output). A file named `-` is `./-`.
pub(crate) fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The name an input goes by in messages and reports: `<stdin>` for `-`
/// (so an error reads `<stdin>:3:5: …`), else the path.
pub(crate) fn name_of(path: &Path) -> String {
    if is_stdio(path) {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether `path` ends in `.EXT`, in any case (`.json`, `.JSON`, `.Json`):
/// where a file's kind is decided by its extension.
pub(crate) fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// The name of standard input in messages.
pub(crate) const STDIN_NAME: &str = "<stdin>";

/// The bytes of `path`, or of standard input for `-`, at most `kind`'s
/// size limit (`soc::input`: an endless stream is refused, naming the
/// limit); `what` names the input in messages.
pub(crate) fn read_bytes_or_stdin(
    path: &Path,
    what: &str,
    kind: InputKind,
) -> Result<Vec<u8>, Failure> {
    if !is_stdio(path) {
        return read_bytes(path, what, kind);
    }
    soc::input::read_limited(std::io::stdin().lock(), kind, None)
        .map_err(|e| bad_input(format!("cannot read {what} from {STDIN_NAME}: {e}")))
}

/// The bytes of the file `path`, at most `kind`'s size limit; `what`
/// names the input in messages.
pub(crate) fn read_bytes(path: &Path, what: &str, kind: InputKind) -> Result<Vec<u8>, Failure> {
    soc::input::read_file(path, kind)
        .map_err(|e| bad_input(format!("cannot read {what} {}: {e}", path.display())))
}

/// Reads `path` as UTF-8 text, at most `kind`'s size limit; `what` names
/// the input in messages (`--timing`, `--soc-map`). `-` is a file of that
/// name here: the inputs that take standard input use
/// [`read_text_or_stdin`].
pub(crate) fn read_text(path: &Path, what: &str, kind: InputKind) -> Result<String, Failure> {
    let bytes = read_bytes(path, what, kind)?;
    text_of(bytes, &path.display().to_string(), what).map_err(bad_input)
}

/// [`read_text`], with `-` reading standard input (named `<stdin>`):
/// traces, instruction-word text, ioctl recordings.
pub(crate) fn read_text_or_stdin(
    path: &Path,
    what: &str,
    kind: InputKind,
) -> Result<String, Failure> {
    let bytes = read_bytes_or_stdin(path, what, kind)?;
    text_of(bytes, &name_of(path), what).map_err(bad_input)
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

    #[test]
    fn extensions_match_in_any_case() {
        for p in ["s.json", "s.JSON", "dir/s.Json"] {
            assert!(has_ext(Path::new(p), "json"), "{p}");
        }
        for p in ["s.yaml", "json", "s.json.bak", "s.jsonl"] {
            assert!(!has_ext(Path::new(p), "json"), "{p}");
        }
    }

    #[test]
    fn dash_is_stdin_by_name() {
        assert!(is_stdio(Path::new("-")));
        assert!(!is_stdio(Path::new("./-")));
        assert_eq!(name_of(Path::new("-")), "<stdin>");
        assert_eq!(name_of(Path::new("t.trace")), "t.trace");
    }
}
