//! The files of one run among many run in parallel: the points of a sweep
//! (docs/user-guide.md §18) and the seeds of `neuron-sim race`
//! (docs/races.md §Schedule perturbation). Such runs read the trace's
//! directory as `run` does, but none of them writes it: they run at once and
//! differ by design, so letting each write the trace's `dump … file=` paths
//! would leave whichever run wrote last, and a run that loads a file it
//! dumped could read another run's bytes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use host_exec::DirFiles;
use soc::exec::{FileRange, InMemoryFile, TraceFiles};

/// The trace's directory, read-only, overlaid with the run's own writes in
/// memory: reads come from the directory (relative to it, as for `run`),
/// a write — a `dump … file=` — is kept in memory, and a later read or
/// `open` of a path the run wrote sees what it wrote. Nothing is created or
/// overwritten on disk. To get one run's files, run it alone with
/// `neuron-sim run` (docs/races.md §Schedule perturbation,
/// docs/user-guide.md §18).
#[derive(Debug)]
pub struct OverlayFiles {
    dir: DirFiles,
    written: BTreeMap<String, Vec<u8>>,
}

impl OverlayFiles {
    /// Files relative to `base`, nothing written yet.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        Self {
            dir: DirFiles::new(base),
            written: BTreeMap::new(),
        }
    }

    /// The bytes the run wrote to `path` (as the trace names it), if any.
    pub fn written(&self, path: &str) -> Option<&[u8]> {
        self.written.get(path).map(Vec::as_slice)
    }

    /// The paths the run wrote (as the trace names them), in order.
    pub fn written_paths(&self) -> impl Iterator<Item = &str> {
        self.written.keys().map(String::as_str)
    }
}

impl TraceFiles for OverlayFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        match self.written.get(path) {
            Some(data) => Ok(data.clone()),
            None => self.dir.read(path),
        }
    }
    fn write(&mut self, path: &str, data: &[u8]) -> std::io::Result<()> {
        self.written.insert(path.to_string(), data.to_vec());
        Ok(())
    }
    fn open(&mut self, path: &str) -> std::io::Result<Arc<dyn FileRange>> {
        match self.written.get(path) {
            Some(data) => Ok(Arc::new(InMemoryFile(data.clone()))),
            None => self.dir.open(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("neuron-sim-overlay-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_stay_in_memory_and_are_read_back_over_the_directory() {
        let dir = tmp_dir("rw");
        std::fs::write(dir.join("in.bin"), b"disk").unwrap();
        let mut files = OverlayFiles::new(&dir);
        // Reads go to the directory until the run writes the path.
        assert_eq!(files.read("in.bin").unwrap(), b"disk");
        assert!(files.read("out/x.bin").is_err());
        files.write("in.bin", b"mine").unwrap();
        files.write("out/x.bin", b"\x01\x02\x03").unwrap();
        assert_eq!(files.read("in.bin").unwrap(), b"mine");
        let opened = files.open("out/x.bin").unwrap();
        assert_eq!(opened.len_bytes(), 3);
        let mut buf = [0u8; 2];
        opened.read_at(1, &mut buf).unwrap();
        assert_eq!(buf, [2, 3]);
        assert_eq!(files.written("out/x.bin"), Some(&b"\x01\x02\x03"[..]));
        assert_eq!(
            files.written_paths().collect::<Vec<_>>(),
            ["in.bin", "out/x.bin"]
        );
        // Nothing on disk changed.
        assert_eq!(std::fs::read(dir.join("in.bin")).unwrap(), b"disk");
        assert!(!dir.join("out").exists());
        // Another run over the same directory sees none of it.
        let mut other = OverlayFiles::new(&dir);
        assert_eq!(other.read("in.bin").unwrap(), b"disk");
        assert_eq!(other.written_paths().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
