//! Where an output option of a command writes: its file, or standard
//! output for `-` (docs/user-guide.md §Standard input and output). A
//! reader that closes standard output early (`… --vcd - | head`) is not an
//! error: what it did not read is dropped and the run goes on.

use std::io::{self, Write};
use std::path::Path;

use crate::input::is_stdio;

/// The name of standard output in messages.
pub(crate) const STDOUT_NAME: &str = "<stdout>";

/// The name an output goes by in messages: `<stdout>` for `-`, else the
/// path.
pub(crate) fn name_of(path: &Path) -> String {
    if is_stdio(path) {
        STDOUT_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// A buffered writer to `path` (created or truncated), or to standard
/// output for `-`.
pub(crate) fn create(path: &Path) -> io::Result<Box<dyn Write + Send>> {
    if is_stdio(path) {
        return Ok(Box::new(io::BufWriter::new(Stdout::default())));
    }
    Ok(Box::new(io::BufWriter::new(std::fs::File::create(path)?)))
}

/// Writes `bytes` to `path`, or to standard output for `-`.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if is_stdio(path) {
        let mut out = Stdout::default();
        return out.write_all(bytes).and_then(|()| out.flush());
    }
    std::fs::write(path, bytes)
}

/// A stream (standard output or error) that drops what it is given once
/// its reader has gone (a broken pipe): the command goes on to its end and
/// its exit status.
#[derive(Debug)]
pub(crate) struct DropWhenClosed<W> {
    inner: W,
    closed: bool,
}

/// Standard output, dropping what it is given once its reader has gone.
pub(crate) type Stdout = DropWhenClosed<io::Stdout>;

impl Default for Stdout {
    fn default() -> Self {
        DropWhenClosed::new(io::stdout())
    }
}

impl<W: Write> DropWhenClosed<W> {
    pub(crate) fn new(inner: W) -> Self {
        DropWhenClosed {
            inner,
            closed: false,
        }
    }

    fn result<T: Default>(&mut self, r: io::Result<T>) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(T::default())
            }
            r => r,
        }
    }
}

impl<W: Write> Write for DropWhenClosed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let r = self.inner.write_all(buf).map(|()| buf.len());
        self.result(r)
            .map(|n| if self.closed { buf.len() } else { n })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.result(r)
    }
}
