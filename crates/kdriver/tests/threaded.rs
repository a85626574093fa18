//! The threaded transport (driver on its own device thread, docs/references/design.md §3)
//! gives the same results, user memory and device time as the in-process
//! one for the same call sequence.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Host, TENSORS_DEVICE, TENSORS_HOST, pattern};
use ioctl_abi::Errno;
use ioctl_bus::{InProcess, IoctlError, Threaded, Transport};
use kdriver::{KdriverConfig, KernelDriver};

/// What a run leaves behind: every call's result, every user buffer.
#[derive(Debug, PartialEq)]
struct Outcome {
    results: Vec<Result<i64, IoctlError>>,
    handles: Vec<u64>,
    buffers: Vec<Vec<u8>>,
}

/// alloc / buf copy in / buf copy out / free, on device and host chunks.
fn run<T: Transport>(h: &mut Host<T>) -> Outcome {
    let mut results = Vec::new();
    let dev = h.alloc(200_000, false, 1, 2, TENSORS_DEVICE).unwrap();
    let host = h.alloc(10_000, true, 0, 2, TENSORS_HOST).unwrap();
    let data = pattern(200_000, 42);
    let src = h.user.alloc_with(&data);
    let out_dev = h.user.alloc(150_000);
    let out_host = h.user.alloc(9_000);
    results.push(h.buf_copy(dev, src, 200_000, 0, true));
    results.push(h.buf_copy(dev, out_dev, 150_000, 30_000, false));
    results.push(h.buf_copy(host, src, 10_000, 0, true));
    results.push(h.buf_copy(host, out_host, 9_000, 1_000, false));
    results.push(h.buf_copy(dev, src, 200_705, 0, true)); // EINVAL: chunk is 200,704
    // Fits the chunk but overruns the user buffer: 3 pieces, then EFAULT.
    results.push(h.buf_copy(dev, src, 200_001, 0, true));
    let pas = [h.pa(dev), h.pa(host)];
    results.push(h.free(dev));
    results.push(h.free(dev)); // EINVAL
    results.push(h.free(host));
    let again = h.alloc(4096, false, 0, 0, TENSORS_DEVICE).unwrap();
    let buffers = [src, out_dev, out_host]
        .iter()
        .map(|&a| h.user.buffer(a).unwrap().to_vec())
        .collect();
    Outcome {
        results,
        handles: vec![dev, host, again, pas[0], pas[1]],
        buffers,
    }
}

#[test]
fn threaded_transport_matches_in_process() {
    let mut local = Host::new(KdriverConfig::default());
    let a = run(&mut local);
    let local_now = local.driver().device().now().0;
    let local_batches = local.batches();

    let bus = Threaded::spawn(|| KernelDriver::trn2(KdriverConfig::default()).unwrap());
    let mut remote = Host::over(bus);
    let b = run(&mut remote);
    let (now, batches) = remote
        .bus
        .with_driver(|d| (d.device().now().0, d.stats().h2t_batches))
        .unwrap();

    assert_eq!(a, b);
    assert_eq!((local_now, local_batches), (now, batches));
    // The copies did happen: 4 + 3 + 3 H2T batches, data round-tripped.
    assert_eq!(batches, 10);
    assert_eq!(
        a.results[4..6],
        [
            Err(IoctlError::Errno(Errno::EINVAL)),
            Err(IoctlError::Errno(Errno::EFAULT))
        ]
    );
    assert_eq!(a.buffers[1], &a.buffers[0][30_000..180_000]);
    assert_eq!(a.buffers[2], &a.buffers[0][1_000..10_000]);
    assert_eq!(
        a.handles[2], 2,
        "the last freed handle is reused first (LIFO)"
    );
    // The in-process bus exposes the driver; the threaded one does not.
    let mut inproc: InProcess<KernelDriver> = local.bus;
    assert!(inproc.local_driver().is_some());
    assert!(remote.bus.local_driver().is_none());
}
