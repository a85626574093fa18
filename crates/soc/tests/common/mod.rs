//! Helpers shared by the soc integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::io;

use soc::exec::TraceFiles;
use soc::{Device, ResolveError, Resolved};

/// A fresh Trn2 device.
pub fn device() -> Device {
    Device::trn2().expect("built-in maps load")
}

/// Resolves an address expression written as in a trace.
pub fn try_resolve(dev: &Device, text: &str) -> Result<Resolved, ResolveError> {
    let expr = trace_format::parse_addr(text, "t.trace")
        .unwrap_or_else(|e| panic!("`{text}` does not parse: {e}"));
    soc::resolve(dev, &expr)
}

/// The SoC address of a symbolic expression that must resolve.
pub fn addr(dev: &Device, text: &str) -> u64 {
    try_resolve(dev, text)
        .unwrap_or_else(|e| panic!("`{text}` does not resolve: {}", e.message))
        .addr
}

/// The snapshot registers of one block region (empty when the block is at
/// reset or was never touched).
pub fn changed(dev: &Device, region: &str) -> BTreeMap<String, u32> {
    dev.csr_snapshot()
        .blocks
        .iter()
        .filter(|b| b.region == region)
        .flat_map(|b| b.registers.iter().map(|(k, v)| (k.clone(), v.0)))
        .collect()
}

/// In-memory files for `load` / `dump file=`.
#[derive(Debug, Default)]
pub struct MemFiles {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MemFiles {
    pub fn with(files: &[(&str, &[u8])]) -> Self {
        MemFiles {
            files: files
                .iter()
                .map(|(n, d)| ((*n).to_string(), d.to_vec()))
                .collect(),
        }
    }
}

impl TraceFiles for MemFiles {
    fn read(&mut self, path: &str) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn write(&mut self, path: &str, data: &[u8]) -> io::Result<()> {
        self.files.insert(path.to_string(), data.to_vec());
        Ok(())
    }
}

/// A `neuron_memcpy` on a queue whose S2M side is disabled stalls; the
/// trace lets time pass, re-enables it, and the firmware sees the
/// completion at the next poll on its period — a cycle that depends on the
/// poll phase, which skipping polls or pausing a run must keep.
pub const PHASE: &str = "\
fill hbm0+0x70000000 len=4096 pattern=incr32 seed=0x70000000
memcpy tpb0 local=0x80000 hbm=hbm0+0x70000000 len=4096 read
run
write32 eng0.s2m.change_state 2
memcpy tpb0 local=0x81000 hbm=hbm0+0x70000000 len=4096 read
run cycles=1001
write32 eng0.s2m.change_state 1
memcpy tpb0 local=0x82000 hbm=hbm0+0x70000000 len=4096 read
run
";

/// Runs trace `source` (named `t.trace`) on a fresh device: the report and
/// the device after it. Panics when the trace does not parse or link.
pub fn run_trace(source: &str) -> (soc::exec::RunReport, Device) {
    let mut d = device();
    let r = soc::exec::run_source(&mut d, source, "t.trace", &mut MemFiles::default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    (r, d)
}

/// `len` bytes of device memory at `addr`.
pub fn read_at(d: &Device, addr: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    d.read_bytes(addr, &mut buf).unwrap();
    buf
}
