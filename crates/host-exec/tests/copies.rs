//! Host copies end to end (runtime, driver model, device): failure paths
//! that must leave nothing in flight (`docs/host-runtime.md` §4.6).
#![allow(clippy::unwrap_used)]

use soc::exec::TraceFiles;

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, p: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
    fn write(&mut self, p: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {p}")))
    }
}

fn run(source: &str) -> (u8, String) {
    let dev = soc::Device::trn2().unwrap();
    let (report, _) = host_exec::run_source(dev, source, "t.trace", &mut NoFiles).unwrap();
    (report.exit_code(), report.to_text())
}

/// Issue 11 item 12 (`audit-host/hazard.trace`): the copy-in of d fails on
/// its second chunk (past the tensor's end) while its first chunk is in
/// flight from bounce half 0. The runtime waits for it before failing, so
/// the next copy-in (of e, through the same half) cannot overwrite the
/// bytes it is still reading: d holds 0x22, e 0x33.
#[test]
fn failed_copyin_drains_its_in_flight_chunk() {
    let (exit, text) = run("alloc d size=0x100000 nc=0
alloc e size=0x100000 nc=0
copyin d byte=0x11
copyin d byte=0x22 len=0x180000 status=failure
copyin e byte=0x33
copyout d byte=0x22
copyout e byte=0x33
");
    assert_eq!(exit, 0, "{text}");
    assert!(text.contains("copyout d: 1048576 bytes as expected"), "{text}");
}
