//! The driver model through the in-process transport: every rule of
//! docs/references/driver.md §1.6 the model implements, and real DMA on the H2T path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ioctl_abi::args::{
    DmaEngGetState, DmaEngState, DmaQueueCopyStart, DmaQueueInit, Event, MemAllocV2MemType,
    MemAllocV2MemType64, MemAllocV2MemType64Pa, MemBufCopy64, MemCopy64, MemCopyAsync64,
    MemCopyAsyncWait, MemFree, MemGetExtendedInfo, MemGetPa, Memset64, Semaphore,
};
use ioctl_abi::{Errno, Ioctl};
use ioctl_bus::{InProcess, IoctlError, Transport, UserSpace};
use kdriver::{DriverEventKind, KdriverConfig, KernelDriver};
use zerocopy::{FromBytes, IntoBytes};

struct Host {
    bus: InProcess<KernelDriver>,
    user: UserSpace,
}

impl Host {
    fn new(cfg: KdriverConfig) -> Self {
        Self {
            bus: InProcess::new(KernelDriver::trn2(cfg).unwrap()),
            user: UserSpace::new(),
        }
    }

    fn call<T: IntoBytes + FromBytes + zerocopy::Immutable>(
        &mut self,
        ioctl: Ioctl,
        arg: &mut T,
    ) -> Result<i64, IoctlError> {
        let mut bytes = arg.as_bytes().to_vec();
        let r = self.bus.ioctl(ioctl.value(), &mut bytes, &mut self.user);
        *arg = T::read_from_bytes(&bytes).unwrap();
        r
    }

    fn alloc(
        &mut self,
        size: u64,
        host: bool,
        channel: u32,
        nc: u32,
        cat: u32,
    ) -> Result<u64, IoctlError> {
        let out = self.user.alloc(8);
        let mut a = MemAllocV2MemType64::new_zeroed();
        a.size.set(size);
        a.host_memory.set(u32::from(host));
        a.dram_channel.set(channel);
        a.nc_id.set(nc);
        a.mem_type.set(cat);
        a.mem_handle.set(out);
        self.call(Ioctl::MemAllocV2Mt64, &mut a)?;
        let mut h = [0u8; 8];
        self.user.read(out, &mut h).unwrap();
        Ok(u64::from_le_bytes(h))
    }

    fn pa(&mut self, h: u64) -> u64 {
        let out = self.user.alloc(8);
        let mut a = MemGetPa::new_zeroed();
        a.mem_handle.set(h);
        a.pa.set(out);
        self.call(Ioctl::MemGetPa, &mut a).unwrap();
        let mut b = [0u8; 8];
        self.user.read(out, &mut b).unwrap();
        u64::from_le_bytes(b)
    }

    fn buf_copy(
        &mut self,
        h: u64,
        buf: u64,
        size: u64,
        offset: u64,
        to_mem: bool,
    ) -> Result<i64, IoctlError> {
        let mut a = MemBufCopy64::new_zeroed();
        a.mem_handle.set(h);
        a.buffer.set(buf);
        a.size.set(size);
        a.offset.set(offset);
        a.copy_to_mem_handle.set(u32::from(to_mem));
        self.call(Ioctl::MemBufCopy64, &mut a)
    }

    fn driver(&self) -> &KernelDriver {
        self.bus.driver()
    }
}

use zerocopy::FromZeros;

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn alloc_copy_in_copy_out_free_through_h2t_dma() {
    let mut h = Host::new(KdriverConfig::default());
    let mem = h.alloc(200_000, false, 1, 3, 9).unwrap();
    assert_eq!(mem, 1, "handles start at 1");
    let pa = h.pa(mem);
    // <= 512 KiB: the small pool (top 1 GiB of the 24 GiB HBM 1) first.
    assert_eq!(pa, 0x40_0000_0000 + (23 << 30));
    let data = pattern(200_000, 7);
    let src = h.user.alloc_with(&data);
    h.buf_copy(mem, src, 200_000, 0, true).unwrap();
    // The bytes are in HBM.
    let mut got = vec![0u8; 200_000];
    h.driver().device().read_bytes(pa, &mut got).unwrap();
    assert_eq!(got, data);
    // Copy out at an offset.
    let dst = h.user.alloc(100_000);
    h.buf_copy(mem, dst, 100_000, 50_000, false).unwrap();
    assert_eq!(h.user.buffer(dst).unwrap(), &data[50_000..150_000]);
    // 64 KiB bounce chunks, one sync batch each: 4 in + 2 out.
    let batches: Vec<_> = h
        .driver()
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            DriverEventKind::H2tBatch {
                nc,
                engine,
                queue,
                descs,
                completed,
                start_cycle,
                end_cycle,
                ..
            } => Some((
                *nc,
                *engine,
                *queue,
                *descs,
                *completed,
                end_cycle - start_cycle,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(batches.len(), 6);
    // NC 3 → engine 129 (= 128 + 3/2), queue 1 (= 3 % 2); 1 data + 1 marker.
    assert!(
        batches
            .iter()
            .all(|b| b.0 == 3 && b.1 == 129 && b.2 == 1 && b.3 == 2 && b.4)
    );
    // The driver sees the marker only at its 1 µs polls after a 1 µs sleep.
    let cycles_per_us = (h.driver().device().timing().clock_ghz * 1000.0).round() as u64;
    assert!(
        batches
            .iter()
            .all(|b| b.5 >= cycles_per_us && b.5 % cycles_per_us == 0),
        "{batches:?}"
    );
    let mut f = MemFree::new_zeroed();
    f.mem_handle.set(mem);
    h.call(Ioctl::MemFree, &mut f).unwrap();
    assert_eq!(
        h.call(Ioctl::MemFree, &mut f),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
}

#[test]
fn device_to_device_copy_and_memset() {
    let mut h = Host::new(KdriverConfig::default());
    let a = h.alloc(300_000, false, 0, 0, 9).unwrap();
    let b = h.alloc(300_000, false, 0, 0, 9).unwrap();
    let data = pattern(300_000, 3);
    let src = h.user.alloc_with(&data);
    h.buf_copy(a, src, 300_000, 0, true).unwrap();
    let mut c = MemCopy64::new_zeroed();
    c.src_mem_handle.set(a);
    c.dst_mem_handle.set(b);
    c.size.set(100_000);
    c.src_offset.set(1000);
    c.dst_offset.set(5);
    h.call(Ioctl::MemCopy64, &mut c).unwrap();
    let pb = h.pa(b);
    let mut got = vec![0u8; 100_000];
    h.driver().device().read_bytes(pb + 5, &mut got).unwrap();
    assert_eq!(got, &data[1000..101_000]);
    // Out of the chunk: EINVAL.
    c.size.set(400_000);
    assert_eq!(
        h.call(Ioctl::MemCopy64, &mut c),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    // MEMSET64: 64 KiB DMA'd, then replicated on-device.
    let mut m = Memset64::new_zeroed();
    m.mem_handle.set(b);
    m.offset.set(4096);
    m.value.set(0x5A);
    m.size.set(200_000);
    h.call(Ioctl::Memset64, &mut m).unwrap();
    let mut got = vec![0u8; 200_002];
    h.driver().device().read_bytes(pb + 4095, &mut got).unwrap();
    assert_ne!(got[0], 0x5A);
    assert!(got[1..200_001].iter().all(|&x| x == 0x5A));
    assert_ne!(got[200_001], 0x5A);
}

#[test]
fn async_copies_alternate_handles_and_wait_checks_them() {
    let mut h = Host::new(KdriverConfig::default());
    let a = h.alloc(1 << 20, false, 0, 0, 9).unwrap();
    let b = h.alloc(1 << 20, false, 0, 0, 9).unwrap();
    let mut c = MemCopyAsync64::new_zeroed();
    c.src_mem_handle.set(a);
    c.dst_mem_handle.set(b);
    c.size.set(1 << 20);
    c.pwait_handle.set(u32::MAX); // -1: none
    h.call(Ioctl::MemCopyAsync64, &mut c).unwrap();
    assert_eq!(c.wait_handle.get(), 1, "NONE → ASYNC1");
    c.pwait_handle.set(1);
    h.call(Ioctl::MemCopyAsync64, &mut c).unwrap();
    assert_eq!(c.wait_handle.get(), 2, "ASYNC1 → ASYNC2");
    c.pwait_handle.set(2);
    h.call(Ioctl::MemCopyAsync64, &mut c).unwrap();
    assert_eq!(c.wait_handle.get(), 1, "ASYNC2 → ASYNC1");
    let mut w = MemCopyAsyncWait::new_zeroed();
    w.src_mem_handle.set(a);
    w.dst_mem_handle.set(b);
    w.pwait_handle.set(1);
    h.call(Ioctl::MemCopyAsyncWait, &mut w).unwrap();
    w.pwait_handle.set(0);
    assert_eq!(
        h.call(Ioctl::MemCopyAsyncWait, &mut w),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    // More than one batch (> 2031 × 64 KiB) is too large for async.
    let big = h.alloc(2032 * 65_536, false, 1, 2, 9).unwrap();
    let big2 = h.alloc(2032 * 65_536, false, 1, 2, 9).unwrap();
    c.src_mem_handle.set(big);
    c.dst_mem_handle.set(big2);
    c.size.set(2032 * 65_536);
    c.pwait_handle.set(u32::MAX);
    assert_eq!(
        h.call(Ioctl::MemCopyAsync64, &mut c),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
}

#[test]
fn a_lost_doorbell_times_out_by_the_driver_arithmetic() {
    let mut cfg = KdriverConfig::default();
    cfg.drop_batches.insert(0);
    let mut h = Host::new(cfg);
    let a = h.alloc(4096, false, 0, 0, 9).unwrap();
    let src = h.user.alloc(4096);
    let t0 = h.driver().device().now().0;
    assert_eq!(
        h.buf_copy(a, src, 4096, 0, true),
        Err(IoctlError::Errno(Errno::ETIMEDOUT))
    );
    // One data descriptor: 1 µs sleep + 19,900 polls of 1 µs.
    let cycles_per_us = h.driver().device().timing().clock_ghz * 1000.0;
    let waited = h.driver().device().now().0 - t0;
    assert_eq!(waited, (19_901.0 * cycles_per_us).round() as u64);
    assert_eq!(h.driver().stats().timeouts, 1);
    assert!(h.driver().events().iter().any(
        |e| matches!(&e.kind, DriverEventKind::Log { line } if line == "DMA completion timeout")
    ));
}

#[test]
fn argument_errors_follow_the_driver() {
    let mut h = Host::new(KdriverConfig::default());
    // Unknown number → ENOTTY; short argument → EINVAL.
    let mut b = [0u8; 8];
    assert_eq!(
        h.bus.ioctl(0x8008_4EFF, &mut b, &mut h.user),
        Err(IoctlError::Errno(Errno::ENOTTY))
    );
    let mut short = [0u8; 4];
    assert_eq!(
        h.bus.ioctl(Ioctl::MemFree.value(), &mut short, &mut h.user),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    // Channel 4, NC 8, host + align: EINVAL.
    assert_eq!(
        h.alloc(4096, false, 4, 0, 9),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    assert_eq!(
        h.alloc(4096, false, 0, 8, 9),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    // Semaphores: nc ≥ 8 → E2BIG, index ≥ 256 → EINVAL.
    let mut s = Semaphore::new_zeroed();
    s.nc_id.set(8);
    assert_eq!(
        h.call(Ioctl::SemaphoreRead, &mut s),
        Err(IoctlError::Errno(Errno::E2BIG))
    );
    s.nc_id.set(1);
    s.semaphore_index.set(256);
    assert_eq!(
        h.call(Ioctl::SemaphoreRead, &mut s),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    // Write, increment by 5, decrement by 2, read.
    s.semaphore_index.set(7);
    s.value.set(10);
    h.call(Ioctl::SemaphoreWrite, &mut s).unwrap();
    s.value.set(5);
    h.call(Ioctl::SemaphoreIncrement, &mut s).unwrap();
    s.value.set(2);
    h.call(Ioctl::SemaphoreDecrement, &mut s).unwrap();
    s.value.set(0);
    h.call(Ioctl::SemaphoreRead, &mut s).unwrap();
    assert_eq!(s.value.get(), 13);
    // EVENT: [2.24] index check is `> 256`, so 257 fails but 255 works.
    let mut e = Event::new_zeroed();
    e.nc_id.set(2);
    e.event_index.set(255);
    e.value.set(1);
    h.call(Ioctl::EventSet, &mut e).unwrap();
    e.value.set(0);
    h.call(Ioctl::EventGet, &mut e).unwrap();
    assert_eq!(e.value.get(), 1);
    e.event_index.set(257);
    assert_eq!(
        h.call(Ioctl::EventGet, &mut e),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    e.event_index.set(256);
    assert_ne!(
        h.call(Ioctl::EventGet, &mut e),
        Err(IoctlError::Errno(Errno::EINVAL)),
        "256 passes the check"
    );
}

#[test]
fn attach_gate_covers_only_the_exact_legacy_numbers() {
    let mut h = Host::new(KdriverConfig {
        attached: false,
        ..KdriverConfig::default()
    });
    let mut f = MemFree::new_zeroed();
    f.mem_handle.set(1);
    assert_eq!(
        h.call(Ioctl::MemFree, &mut f),
        Err(IoctlError::Errno(Errno::EACCES))
    );
    // MEM_ALLOC_V2MT64 is not gated.
    assert!(h.alloc(4096, false, 0, 0, 9).is_ok());
}

/// An older driver without MEM_ALLOC64 refuses the 64-bit requests with
/// EINVAL and still serves MEM_ALLOC_V2MT (`docs/host-runtime.md` §3.6).
#[test]
fn a_driver_without_mem_alloc64_refuses_the_64_bit_requests() {
    let mut h = Host::new(KdriverConfig {
        mem_alloc64: false,
        ..KdriverConfig::default()
    });
    assert_eq!(
        h.alloc(4096, false, 0, 0, 9), // TENSORS_DEVICE
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    let mut pa = MemAllocV2MemType64Pa::new_zeroed();
    pa.size.set(4096);
    assert_eq!(
        h.call(Ioctl::MemAllocV2Mt64Pa, &mut pa),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    let out = h.user.alloc(8);
    let mut a = MemAllocV2MemType::new_zeroed();
    a.size.set(4096);
    a.mem_type.set(9); // TENSORS_DEVICE
    a.mem_handle.set(out);
    assert_eq!(h.call(Ioctl::MemAllocV2Mt, &mut a), Ok(0));
    let mut handle = [0u8; 8];
    h.user.read(out, &mut handle).unwrap();
    assert_ne!(u64::from_le_bytes(handle), 0);
}

#[test]
fn extended_info_quirks() {
    let mut h = Host::new(KdriverConfig::default());
    let m = h.alloc(8192, true, 0, 0, 2).unwrap();
    let mut x = MemGetExtendedInfo::new_zeroed();
    x.mem_handle.set(m);
    x.version.set(1);
    assert_eq!(h.call(Ioctl::MemGetExtendedInfo, &mut x), Ok(0));
    assert_eq!(x.host_memory.get(), 1);
    assert_eq!(x.pa.get() & (1 << 46), 1 << 46, "host pa carries bit 46");
    assert_eq!(x.size.get(), 8192);
    assert_ne!(
        x.mem_handle.get(),
        m,
        "the kernel chunk pointer overwrites the handle"
    );
    x.mem_handle.set(999);
    assert_eq!(
        h.call(Ioctl::MemGetExtendedInfo, &mut x),
        Ok(22),
        "positive EINVAL"
    );
}

#[test]
fn user_queue_init_copy_start_and_state() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(64 * 16, false, 0, 0, 18).unwrap();
    let rxc = h.alloc(4096, false, 0, 0, 18).unwrap();
    let mut q = DmaQueueInit::new_zeroed();
    q.eng_id.set(3);
    q.qid.set(2);
    q.tx_desc_count.set(64);
    q.rx_desc_count.set(64);
    q.tx_handle.set(ring);
    q.rx_handle.set(ring);
    q.rxc_handle.set(rxc);
    assert_eq!(
        h.call(Ioctl::DmaQueueInit, &mut q),
        Err(IoctlError::Errno(Errno::EPERM)),
        "completion ring not supported"
    );
    q.rxc_handle.set(0);
    h.call(Ioctl::DmaQueueInit, &mut q).unwrap();
    q.qid.set(16);
    assert_eq!(
        h.call(Ioctl::DmaQueueInit, &mut q),
        Err(IoctlError::Errno(Errno::EINVAL))
    );
    let mut s = DmaQueueCopyStart::new_zeroed();
    s.eng_id.set(3);
    s.qid.set(2);
    s.tx_desc_count.set(1);
    s.rx_desc_count.set(0);
    assert_eq!(
        h.call(Ioctl::DmaQueueCopyStart, &mut s),
        Err(IoctlError::Errno(Errno::EINVAL)),
        "BUG_ON(num == 0)"
    );
    s.rx_desc_count.set(65);
    assert_eq!(
        h.call(Ioctl::DmaQueueCopyStart, &mut s),
        Err(IoctlError::Errno(Errno::EINVAL)),
        "over the ring"
    );
    // Engine state readback through a user pointer.
    let out = h.user.alloc(20);
    let mut g = DmaEngGetState::new_zeroed();
    g.eng_id.set(3);
    g.state.set(out);
    h.call(Ioctl::DmaEngGetState, &mut g).unwrap();
    let mut b = [0u8; 20];
    h.user.read(out, &mut b).unwrap();
    let st = DmaEngState::read_from_bytes(&b).unwrap();
    assert_eq!(
        (
            st.revision_id.get(),
            st.max_queues.get(),
            st.num_queues.get()
        ),
        (4, 16, 16)
    );
}
