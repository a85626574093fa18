//! Timing calibration (DESIGN §4, docs/timing.md): one engine moving 32 KiB
//! HBM→SBUF with its 4-byte semaphore write takes 1416 ns ± 10 % of
//! simulated time with the default configuration.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use soc::Device;
use soc::exec::TraceFiles;

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no file {path}")))
    }
    fn write(&mut self, path: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {path}")))
    }
}

#[test]
fn one_engine_32k_hbm_to_sbuf_with_semaphore_is_1416ns() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/calib-32k-hbm-sbuf.trace");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut dev = Device::trn2().unwrap();
    let report = soc::exec::run_source(&mut dev, &source, "calib", &mut NoFiles).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let q = report.summary.queues.values().next().unwrap();
    assert_eq!(q.bytes, 32 * 1024 + 4);
    // From the doorbell (cycle 0) to the semaphore write landing.
    let ns = dev.timing().ns(q.last_cycle.unwrap());
    assert!(
        (ns - 1416.0).abs() <= 141.6,
        "simulated {ns:.1} ns, published 1416 ns"
    );
}
