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

/// One file a command names: the option (or argument) and its path.
pub(crate) type Named<'a> = (&'a str, Option<&'a Path>);

/// Where `stdio` says `-` is standard input/output (`run`, `asm`), not a
/// file named `-` (`sweep --csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dash {
    /// `-` is standard input or output.
    Stdio,
    /// `-` is a file of that name.
    File,
}

/// Refuses, before anything runs, two outputs of one command that name
/// the same file (the second would silently replace the first) and an
/// output that names one of its inputs (it would replace the input).
/// Paths are compared as files: an existing file by its device and inode
/// (so `./x`, `dir/../x`, a symbolic or hard link to it are all `x`), a
/// new one by its canonical directory and name. Standard output (`-`,
/// with [`Dash::Stdio`]) is not a file: the caller refuses two outputs
/// there. Devices and pipes (`/dev/null` for two outputs) are not
/// refused: only regular files and files still to be created are.
pub(crate) fn check_distinct(
    outputs: &[Named<'_>],
    inputs: &[Named<'_>],
    dash: Dash,
) -> Result<(), crate::Failure> {
    let id = |path: &Path| (!(dash == Dash::Stdio && is_stdio(path))).then(|| file_id(path))?;
    let outs: Vec<(&str, &Path, FileId)> = outputs
        .iter()
        .filter_map(|&(o, p)| p.and_then(|p| Some((o, p, id(p)?))))
        .collect();
    for (i, (option, path, file)) in outs.iter().enumerate() {
        if let Some((first, first_path, _)) = outs[..i].iter().find(|(_, _, f)| f == file) {
            return Err(crate::bad_input(format!(
                "{first} {} and {option} {} name the same file: one output would overwrite the other (give each its own file); nothing was run",
                first_path.display(),
                path.display()
            )));
        }
        for &(input, input_path) in inputs {
            if let Some(p) = input_path
                && id(p).as_ref() == Some(file)
            {
                return Err(crate::bad_input(format!(
                    "{option} {} names the same file as the input {input} {}: writing it would replace the input (give the output another file); nothing was run",
                    path.display(),
                    p.display()
                )));
            }
        }
    }
    Ok(())
}

/// What identifies a file for [`check_distinct`].
#[derive(Debug, PartialEq, Eq)]
enum FileId {
    /// An existing regular file: device and inode.
    Inode(u64, u64),
    /// A file not yet there: its canonical directory joined with its name
    /// (or the path as given when the directory cannot be resolved).
    New(std::path::PathBuf),
}

/// The identity of `path`, or None for what is not a regular file (a
/// directory, a device, a pipe: refused or allowed elsewhere).
fn file_id(path: &Path) -> Option<FileId> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            use std::os::unix::fs::MetadataExt;
            Some(FileId::Inode(meta.dev(), meta.ino()))
        }
        Ok(_) => None,
        Err(_) => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let name = path.file_name()?;
            Some(FileId::New(match std::fs::canonicalize(dir) {
                Ok(d) => d.join(name),
                Err(_) => path.to_path_buf(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_file_is_found_under_other_names() {
        let dir = std::env::temp_dir().join(format!("neuron-sim-outputs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let x = dir.join("x.out");
        std::fs::write(&x, b"x").unwrap();
        std::os::unix::fs::symlink(&x, dir.join("link.out")).unwrap();
        let same = [
            dir.join("sub/../x.out"),
            dir.join("link.out"),
            dir.join("./x.out"),
        ];
        for p in &same {
            assert_eq!(file_id(p), file_id(&x), "{}", p.display());
        }
        // Not there yet: by directory and name.
        assert_eq!(
            file_id(&dir.join("sub/../new.out")),
            file_id(&dir.join("new.out"))
        );
        assert_ne!(file_id(&dir.join("new.out")), file_id(&x));
        let e = check_distinct(
            &[("--vcd", Some(&x)), ("--csr-snapshot", Some(&same[0]))],
            &[],
            Dash::Stdio,
        )
        .err()
        .unwrap();
        assert!(e.message.contains("name the same file"), "{}", e.message);
        let e = check_distinct(
            &[("-o", Some(&same[1]))],
            &[("FILE", Some(&x))],
            Dash::Stdio,
        )
        .err()
        .unwrap();
        assert!(e.message.contains("as the input FILE"), "{}", e.message);
        // `-` twice is standard output (refused by its own check), and
        // /dev/null may take every output.
        let dash = Path::new("-");
        let null = Path::new("/dev/null");
        assert!(
            check_distinct(
                &[("--vcd", Some(dash)), ("--reg-log", Some(dash))],
                &[("TRACE", Some(dash))],
                Dash::Stdio
            )
            .is_ok()
        );
        assert!(
            check_distinct(
                &[("--csv", Some(dash)), ("--svg", Some(dash))],
                &[],
                Dash::File
            )
            .is_err()
        );
        assert!(
            check_distinct(
                &[("--vcd", Some(null)), ("--reg-log", Some(null))],
                &[],
                Dash::Stdio
            )
            .is_ok()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
