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
    assert!(
        text.contains("copyout d: 1048576 bytes as expected"),
        "{text}"
    );
}

/// Issue 11 item 13(c): against a driver without the 64-bit allocation
/// request, every allocation (the bounce buffers at open included) goes
/// out a second time as MEM_ALLOC_V2MT, and the runtime works as before.
#[test]
fn runtime_falls_back_to_mem_alloc_v2mt_on_an_older_driver() {
    use dmem::{AllocatorKind, Dmem, DmemConfig, MemLocation, UsageType};
    let cfg = kdriver::KdriverConfig {
        mem_alloc64: false,
        ..kdriver::KdriverConfig::default()
    };
    let drv = kdriver::KernelDriver::trn2(cfg).unwrap();
    let mut dm = Dmem::open(
        Box::new(ioctl_bus::InProcess::new(drv)),
        DmemConfig::default(),
    )
    .unwrap();
    let a = dm.dmem_allocator_create(AllocatorKind::Model, 1).unwrap();
    let id = dm
        .dmem_alloc(
            a,
            0x6000,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Tensor,
            None,
        )
        .unwrap();
    let data: Vec<u8> = (0..0x6000u32).map(|i| (i * 7) as u8).collect();
    let src = dm.user_mut().alloc_with(&data);
    dm.dmem_buf_copyin(id, src, 0, 0x6000).unwrap();
    let dst = dm.user_mut().alloc(0x6000);
    dm.dmem_buf_copyout(id, dst, 0, 0x6000).unwrap();
    assert_eq!(dm.user().buffer(dst).unwrap(), &data[..]);
    let drv = dm
        .ndl_mut()
        .transport_mut()
        .local_driver()
        .and_then(|d| d.downcast_mut::<kdriver::KernelDriver>())
        .unwrap();
    let calls = &drv.stats().ioctls;
    assert_eq!(calls.get("MEM_ALLOC_V2MT64"), Some(&9), "{calls:?}");
    assert_eq!(calls.get("MEM_ALLOC_V2MT"), Some(&9), "{calls:?}");
}

/// docs/trace-format.md §5 `copyin`: the runtime does not check a copy
/// against the tensor's size; the driver checks it against its chunk (the
/// size rounded up to 4 KiB pages, docs/host-runtime.md §3.2, §3.6). A
/// 100-byte tensor takes 200 bytes (they read back), its last chunk byte
/// is reachable, one byte more is `NRT_FAILURE`, in both directions.
#[test]
fn copies_are_bounded_by_the_drivers_chunk_not_the_tensor_size() {
    let (exit, text) = run("alloc t size=100 nc=0
copyin t byte=0x22 len=200
copyout t offset=150 len=4 byte=0x22
copyin t byte=0x33 offset=4095 len=1
copyout t offset=4095 len=1 byte=0x33
copyin t byte=0x44 offset=4095 len=2 status=failure
copyout t offset=4096 len=1 status=failure
");
    assert_eq!(exit, 0, "{text}");
    assert!(text.contains("copyout t: 4 bytes as expected"), "{text}");
    assert!(text.contains("copyout t: 1 bytes as expected"), "{text}");
    assert_eq!(
        text.matches("NRT_FAILURE (1) [status NRT_FAILURE as expected]")
            .count(),
        2,
        "{text}"
    );
}
