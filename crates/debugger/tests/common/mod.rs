//! Set-up shared by the debugger's integration tests: the golden traces
//! and sessions over them.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use debugger::{Session, SessionConfig};
use soc::Device;
use soc::exec::{StepRecord, TraceFiles};

/// The repository's golden traces.
pub fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces")
}

/// Trace files read from a directory; writes are dropped.
pub struct Dir(pub PathBuf);

impl TraceFiles for Dir {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

/// The text of golden trace `name`.
pub fn trace_text(name: &str) -> String {
    std::fs::read_to_string(traces().join(name)).unwrap()
}

/// A session over trace text `source` (named `name`; files from the golden
/// traces), `on_step` called with each statement's record.
pub fn new_session(
    name: &str,
    source: &str,
    config: SessionConfig,
    on_step: Box<dyn FnMut(&StepRecord)>,
) -> Session {
    Session::new(
        Device::trn2().unwrap(),
        source,
        name,
        Box::new(Dir(traces())),
        config,
        on_step,
    )
    .unwrap()
}
