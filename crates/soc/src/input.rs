//! Reading an input file with a bound: every front end (the CLI, the
//! Python package, the sweep and calibration runners, the trace files of
//! a run) reads its inputs through here, so that an endless stream
//! (`/dev/zero`, `/dev/full`, a FIFO that never closes) or a file far
//! larger than any real input of its kind is refused with an error naming
//! the limit instead of filling memory (docs/user-guide.md §3, "Input size
//! limits", lists them).
//!
//! A regular file larger than its limit is refused from its size, before
//! a byte is read; anything else (standard input, a pipe, a device) is
//! read up to the limit and refused at the first byte past it.

use std::io::{self, BufRead, Read};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// What an input is: each kind has its own size limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A trace (`run`, `step`, `sweep`, `race`, `dap`, the calibration
    /// traces, `neuron_sim.run_trace`).
    Trace,
    /// Instruction-word text (`asm`).
    InstructionText,
    /// A binary stream of 64-byte instruction words (`disasm`,
    /// `run --core`).
    InstructionStream,
    /// A timing file (`--timing`).
    Timing,
    /// A SoC address map (`--soc-map`).
    SocMap,
    /// One CSR map of `--csr-maps DIR`.
    CsrMap,
    /// A CSV part of a sweep (`sweep merge`).
    SweepCsv,
    /// An ioctl recording (`ioctl replay`): copy-in bytes are kept whole.
    IoctlRecording,
    /// The Markdown file `calibrate --write` / `--check` updates or checks
    /// (docs/timing.md).
    CalibrationDoc,
    /// A file a trace reads whole (`dump`/`load` data read back by the
    /// trace's file access).
    TraceData,
    /// The debugger's command history (`~/.neuron-sim_history`).
    History,
}

impl InputKind {
    /// The largest input of this kind, in bytes.
    ///
    /// Text a person or a generator writes (traces, instruction-word text,
    /// CSV parts) stays far below 256 MiB: the largest generated traces
    /// (`cargo xtask rss`) are a few hundred KiB, and a sweep of the
    /// maximum 10⁶ points is about 100 MiB of CSV. Maps and timing files
    /// are data of a fixed shape (the built-in maps are below 64 KiB
    /// each; the timing file is a few KiB). A recording keeps every
    /// copy-in's bytes (hex), so it gets more room than a trace; a file a
    /// trace reads whole is data, as large as the copies it feeds.
    #[must_use]
    pub const fn max_bytes(self) -> u64 {
        match self {
            InputKind::Trace
            | InputKind::InstructionText
            | InputKind::InstructionStream
            | InputKind::SweepCsv => 256 * MIB,
            InputKind::SocMap | InputKind::CsrMap => 64 * MIB,
            InputKind::CalibrationDoc | InputKind::History => 16 * MIB,
            InputKind::Timing => MIB,
            InputKind::IoctlRecording => 512 * MIB,
            InputKind::TraceData => 1024 * MIB,
        }
    }

    /// The kind as the limit's message names it.
    #[must_use]
    pub const fn noun(self) -> &'static str {
        match self {
            InputKind::Trace => "a trace",
            InputKind::InstructionText => "instruction-word text",
            InputKind::InstructionStream => "an instruction stream",
            InputKind::Timing => "a timing file",
            InputKind::SocMap => "a SoC map",
            InputKind::CsrMap => "a CSR map",
            InputKind::SweepCsv => "a sweep CSV",
            InputKind::IoctlRecording => "an ioctl recording",
            InputKind::CalibrationDoc => "the calibration table's file",
            InputKind::TraceData => "a file a trace reads",
            InputKind::History => "the debugger history",
        }
    }
}

/// The longest line a line-by-line input (a debugger script, debugger
/// commands or protocol messages on standard input) may have.
pub const MAX_LINE_BYTES: u64 = MIB;

/// `1 MiB`, `256 MiB`, `1 GiB`.
fn size_text(bytes: u64) -> String {
    if bytes >= 1024 * MIB && bytes.is_multiple_of(1024 * MIB) {
        format!("{} GiB", bytes / (1024 * MIB))
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

/// The error of an input past its kind's limit: callers put the file's
/// name before it (`cannot read trace /dev/zero: …`).
fn too_large(kind: InputKind) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "larger than {}, the limit for {} (an endless stream such as /dev/zero is refused; docs/user-guide.md §3, Input size limits)",
            size_text(kind.max_bytes()),
            kind.noun()
        ),
    )
}

/// Reads `reader` to its end, refusing it once it passes `kind`'s limit.
/// `size_hint` (a regular file's size) only sizes the buffer.
///
/// # Errors
///
/// The read's error, or [`io::ErrorKind::FileTooLarge`] past the limit.
pub fn read_limited(
    mut reader: impl Read,
    kind: InputKind,
    size_hint: Option<u64>,
) -> io::Result<Vec<u8>> {
    let max = usize::try_from(kind.max_bytes()).unwrap_or(usize::MAX);
    let capacity = usize::try_from(size_hint.unwrap_or(0)).map_or(max, |n| n.min(max));
    let mut bytes = Vec::with_capacity(capacity);
    // Chunks, with the buffer grown by doubling up to the limit and no
    // further: an endless stream costs the limit, not twice it.
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let len = bytes.len().saturating_add(n);
        if len > max {
            return Err(too_large(kind));
        }
        if len > bytes.capacity() {
            let grown = bytes.capacity().saturating_mul(2).clamp(len, max);
            bytes.reserve_exact(grown - bytes.len());
        }
        bytes.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
}

/// The bytes of the file at `path`, at most `kind`'s limit.
///
/// # Errors
///
/// The open or read error, "is a directory", or
/// [`io::ErrorKind::FileTooLarge`] past the limit.
pub fn read_file(path: &Path, kind: InputKind) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::from(io::ErrorKind::IsADirectory));
    }
    // A regular file's size is known: refuse it before reading. A pipe or
    // a device reports 0 and is read up to the limit.
    let size = meta.is_file().then_some(meta.len());
    if size.is_some_and(|n| n > kind.max_bytes()) {
        return Err(too_large(kind));
    }
    read_limited(file, kind, size)
}

/// [`read_file`] as UTF-8 text.
///
/// # Errors
///
/// As [`read_file`], or [`io::ErrorKind::InvalidData`] for text that is
/// not UTF-8.
pub fn read_text_file(path: &Path, kind: InputKind) -> io::Result<String> {
    String::from_utf8(read_file(path, kind)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads one line (with its `\n`, if any) into `line`, as
/// [`BufRead::read_line`] does, refusing a line longer than
/// [`MAX_LINE_BYTES`]: an endless line cannot fill memory. Returns the
/// bytes read (0 at the end of the input).
///
/// # Errors
///
/// The read's error, [`io::ErrorKind::InvalidData`] for a line that is
/// not UTF-8, or [`io::ErrorKind::FileTooLarge`] for a line past the limit.
pub fn read_line_limited(reader: &mut dyn BufRead, line: &mut String) -> io::Result<usize> {
    let mut bytes = Vec::new();
    let n = reader
        .take(MAX_LINE_BYTES.saturating_add(1))
        .read_until(b'\n', &mut bytes)?;
    if n as u64 > MAX_LINE_BYTES && bytes.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "a line longer than {} (an endless stream such as /dev/zero is refused; docs/user-guide.md §3, Input size limits)",
                size_text(MAX_LINE_BYTES)
            ),
        ));
    }
    let text =
        std::str::from_utf8(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    line.push_str(text);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_stream_is_refused_at_the_limit() {
        let e = read_limited(io::repeat(0), InputKind::Timing, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(
            e.to_string()
                .starts_with("larger than 1 MiB, the limit for a timing file"),
            "{e}"
        );
        let exact = vec![b'x'; usize::try_from(InputKind::Timing.max_bytes()).unwrap()];
        assert_eq!(
            read_limited(&exact[..], InputKind::Timing, None)
                .unwrap()
                .len(),
            exact.len()
        );
    }

    #[test]
    fn dev_zero_and_a_directory_are_refused() {
        let dev_zero = Path::new("/dev/zero");
        if dev_zero.exists() {
            let e = read_file(dev_zero, InputKind::Timing).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        }
        let e = read_file(&std::env::temp_dir(), InputKind::Trace).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory, "{e}");
    }

    #[test]
    fn a_large_regular_file_is_refused_from_its_size() {
        let p = std::env::temp_dir().join(format!("soc-input-{}.json", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        // Sparse: no byte is written, and none is read.
        f.set_len(InputKind::Timing.max_bytes() + 1).unwrap();
        let e = read_file(&p, InputKind::Timing).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        f.set_len(3).unwrap();
        assert_eq!(read_file(&p, InputKind::Timing).unwrap(), vec![0; 3]);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn limits_read_as_sizes() {
        assert_eq!(size_text(InputKind::Trace.max_bytes()), "256 MiB");
        assert_eq!(size_text(InputKind::IoctlRecording.max_bytes()), "512 MiB");
        assert_eq!(size_text(InputKind::TraceData.max_bytes()), "1 GiB");
        assert_eq!(size_text(MAX_LINE_BYTES), "1 MiB");
    }

    #[test]
    fn lines_are_bounded() {
        let mut r = io::Cursor::new(b"one\ntwo".to_vec());
        let mut line = String::new();
        assert_eq!(read_line_limited(&mut r, &mut line).unwrap(), 4);
        assert_eq!(line, "one\n");
        line.clear();
        assert_eq!(read_line_limited(&mut r, &mut line).unwrap(), 3);
        assert_eq!(line, "two");
        line.clear();
        assert_eq!(read_line_limited(&mut r, &mut line).unwrap(), 0);
        let mut endless = io::BufReader::new(io::repeat(b'a'));
        let e = read_line_limited(&mut endless, &mut line).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(line.is_empty());
        let mut exact = io::Cursor::new(vec![b'a'; usize::try_from(MAX_LINE_BYTES).unwrap()]);
        assert_eq!(
            read_line_limited(&mut exact, &mut line).unwrap() as u64,
            MAX_LINE_BYTES
        );
    }
}
