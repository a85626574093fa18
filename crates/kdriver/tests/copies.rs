//! The driver's copy ioctls and the H2T path under them (docs/references/driver.md §1.6,
//! §4.3, §4.7), through the in-process transport.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{HOST_BIT, Host, TENSORS_DEVICE, TENSORS_HOST, errno, pattern};
use dma_abi::{DEFAULT_COPY_WORD1, DEFAULT_COPY_WORD1_WRITE_BARRIER};
use ioctl_abi::args::{
    MemBufCopy64, MemBufCopy64Zc, MemBufCopy64ZcBatches, MemCopy64, MemCopy64Deprecated,
    MemGetInfo, MemcpyBatch, Memset, Memset64, TensorBatchOp,
};
use ioctl_abi::{Errno, Ioctl};
use ioctl_bus::InProcess;
use kdriver::{DriverEventKind, KdriverConfig, KernelDriver};
use zerocopy::{FromZeros, IntoBytes};

type H = Host<InProcess<KernelDriver>>;

const K64: u64 = 65_536;
const GIB: u64 = 1 << 30;

fn zerocopy(
    h: &mut H,
    mem: u64,
    buf: u64,
    size: u64,
    offset: u64,
    to_dev: bool,
    bar4: u32,
) -> Result<i64, ioctl_bus::IoctlError> {
    let mut z = MemBufCopy64Zc::new_zeroed();
    z.mem_handle.set(mem);
    z.buffer.set(buf);
    z.size.set(size);
    z.offset.set(offset);
    z.is_copy_to_device.set(u32::from(to_dev));
    z.bar4_wr_threshold.set(bar4);
    z.h2t_qid.set(-1);
    h.call(Ioctl::MemBufZerocopy64, &mut z)
}

fn mem_copy64(h: &mut H, src: u64, dst: u64, size: u64) -> Result<i64, ioctl_bus::IoctlError> {
    let mut c = MemCopy64::new_zeroed();
    c.src_mem_handle.set(src);
    c.dst_mem_handle.set(dst);
    c.size.set(size);
    h.call(Ioctl::MemCopy64, &mut c)
}

/// Word 0 and word 1 of descriptor `slot` of `nc`'s H2T TX ring (the ring
/// lives in host memory, §4.2).
fn h2t_tx(h: &H, nc: u32, slot: u64) -> (u32, u32) {
    let ring = h.driver().h2t_ring(nc).unwrap();
    let d = h.dev_read(ring.tx_ring + 16 * (slot % u64::from(ring.len)), 16);
    (
        u32::from_le_bytes(d[0..4].try_into().unwrap()),
        u32::from_le_bytes(d[4..8].try_into().unwrap()),
    )
}

#[test]
fn buf_copy64_host_chunk_is_a_plain_copy_device_chunk_one_batch_per_64k() {
    let mut h = Host::new(KdriverConfig::default());
    let data = pattern(200_000, 9);
    let src = h.user.alloc_with(&data);
    // Host chunk: copy_from_user / copy_to_user, no DMA.
    let hc = h.alloc(200_000, true, 0, 0, TENSORS_HOST).unwrap();
    let hpa = h.pa(hc);
    h.buf_copy(hc, src, 200_000, 0, true).unwrap();
    assert_eq!(h.dev_read(hpa, 200_000), data);
    let out = h.user.alloc(150_000);
    h.buf_copy(hc, out, 150_000, 50_000, false).unwrap();
    assert_eq!(h.user.buffer(out).unwrap(), &data[50_000..]);
    assert_eq!(h.batches(), 0, "host chunks never use the H2T ring");
    // Device chunk: one synchronous H2T batch per ≤ 64 KiB piece.
    let dc = h.alloc(200_000, false, 3, 6, TENSORS_DEVICE).unwrap();
    let dpa = h.pa(dc);
    h.buf_copy(dc, src, 200_000, 0, true).unwrap();
    assert_eq!(h.batches(), 4);
    assert_eq!(h.data_descs(), 4);
    assert_eq!(h.dev_read(dpa, 200_000), data);
    let out = h.user.alloc(2 * K64 as usize + 1);
    h.buf_copy(dc, out, 2 * K64 + 1, 1000, false).unwrap();
    assert_eq!(h.batches(), 7);
    assert_eq!(
        h.user.buffer(out).unwrap(),
        &data[1000..1000 + 2 * K64 as usize + 1]
    );
    // offset + size must fit either kind.
    assert_eq!(
        h.buf_copy(hc, src, 200_000, 4097, true),
        errno(Errno::EINVAL)
    );
    assert_eq!(h.buf_copy(dc, src, 1, 200_704, true), errno(Errno::EINVAL));
}

/// A user buffer serving `pattern(len, seed)` and remembering the largest
/// single access.
struct Probe {
    data: Vec<u8>,
    largest: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ioctl_bus::UserSource for Probe {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.largest
            .fetch_max(buf.len(), std::sync::atomic::Ordering::Relaxed);
        let at = offset as usize;
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }
}

/// Keeps what is written, remembering the largest single write.
struct Catch {
    data: Vec<u8>,
    largest: usize,
}

impl ioctl_bus::UserSink for Catch {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.largest = self.largest.max(bytes.len());
        let at = offset as usize;
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// CPU copies (host chunks, BAR4 writes) walk the user buffer in pieces of
/// at most `CPU_COPY_PIECE_BYTES`, so the driver's host memory does not
/// grow with the transfer (issue 11 item 4).
#[test]
fn cpu_copies_move_bounded_pieces() {
    let mut h = Host::new(KdriverConfig::default());
    let size = 3 * (1 << 20) + 5;
    let data = pattern(size as usize, 21);
    let largest = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let src = h.user.alloc_source(
        size,
        Box::new(Probe {
            data: data.clone(),
            largest: largest.clone(),
        }),
    );
    let piece = kdriver::CPU_COPY_PIECE_BYTES as usize;
    // A host chunk: MEM_BUF_COPY64 in and out.
    let hc = h.alloc(size, true, 0, 0, TENSORS_HOST).unwrap();
    h.buf_copy(hc, src, size, 0, true).unwrap();
    let hpa = h.pa(hc);
    assert_eq!(h.dev_read(hpa, size as usize), data);
    assert_eq!(largest.load(std::sync::atomic::Ordering::Relaxed), piece);
    let sink = Catch {
        data: vec![0; size as usize],
        largest: 0,
    };
    let out = h.user.alloc_sink(size, Box::new(sink));
    h.buf_copy(hc, out, size, 0, false).unwrap();
    let got = h
        .user
        .take_sink(out)
        .unwrap()
        .into_any()
        .downcast::<Catch>()
        .unwrap();
    assert_eq!((got.data == data, got.largest), (true, piece));
    // A BAR4 direct write of a device chunk.
    largest.store(0, std::sync::atomic::Ordering::Relaxed);
    let dc = h.alloc(size, false, 0, 0, TENSORS_DEVICE).unwrap();
    assert_eq!(zerocopy(&mut h, dc, src, size, 0, true, u32::MAX), Ok(0));
    assert_eq!(h.batches(), 0, "BAR4: no DMA");
    let dpa = h.pa(dc);
    assert_eq!(h.dev_read(dpa, size as usize), data);
    assert_eq!(largest.load(std::sync::atomic::Ordering::Relaxed), piece);
}

#[test]
fn buf_copy64_sizes_of_4_gib_and_more_truncate_to_u32() {
    let mut h = Host::new(KdriverConfig::default());
    // Device memory is sparse: a 4 GiB + 8 KiB chunk costs nothing.
    let big = h
        .alloc(4 * GIB + 8192, false, 2, 4, TENSORS_DEVICE)
        .unwrap();
    let pa = h.pa(big);
    let data = pattern(4096, 77);
    let src = h.user.alloc_with(&data);
    // 4 GiB + 4096 fits the chunk (64-bit check), then the u32 loop copies 4096.
    assert_eq!(h.buf_copy(big, src, 4 * GIB + 4096, 0, true), Ok(0));
    assert_eq!(h.batches(), 1);
    assert_eq!(h.driver().stats().h2t_bytes, 4096);
    assert_eq!(h.dev_read(pa, 4096), data);
    assert_eq!(h.dev_read(pa + 4096, 16), [0u8; 16]);
    // Out: 4 GiB + 100 → 100 bytes.
    let out = h.user.alloc(100);
    assert_eq!(h.buf_copy(big, out, 4 * GIB + 100, 0, false), Ok(0));
    assert_eq!(h.user.buffer(out).unwrap(), &data[..100]);
    // Exactly 4 GiB copies nothing.
    assert_eq!(h.buf_copy(big, src, 4 * GIB, 0, true), Ok(0));
    assert_eq!(h.batches(), 2);
    // The bounds check sees the full 64-bit size.
    let small = h.alloc(8192, false, 2, 4, TENSORS_DEVICE).unwrap();
    assert_eq!(
        h.buf_copy(small, src, 4 * GIB + 4096, 0, true),
        errno(Errno::EINVAL)
    );
}

#[test]
fn memset_and_memset64_bounds_and_value() {
    let mut h = Host::new(KdriverConfig::default());
    let m = h.alloc(8192, false, 0, 1, TENSORS_DEVICE).unwrap();
    let pa = h.pa(m);
    // Legacy 24-byte MEMSET: u32 size, only the low byte of value is used.
    let mut s = Memset::new_zeroed();
    s.mem_handle.set(m);
    s.offset.set(4096);
    s.value.set(0x1234_56A5);
    s.size.set(4096);
    assert_eq!(h.call(Ioctl::Memset, &mut s), Ok(0));
    let got = h.dev_read(pa + 4095, 4097);
    assert_eq!(got[0], 0);
    assert!(got[1..].iter().all(|&b| b == 0xA5));
    s.offset.set(4097);
    assert_eq!(h.call(Ioctl::Memset, &mut s), errno(Errno::EINVAL));
    s.offset.set(u64::MAX);
    s.size.set(1);
    assert_eq!(
        h.call(Ioctl::Memset, &mut s),
        errno(Errno::EINVAL),
        "offset + size overflows"
    );
    // MEMSET64: 64-bit size.
    let mut s = Memset64::new_zeroed();
    s.mem_handle.set(m);
    s.value.set(0x3C);
    s.size.set(8193);
    assert_eq!(h.call(Ioctl::Memset64, &mut s), errno(Errno::EINVAL));
    s.size.set(1 << 32);
    assert_eq!(h.call(Ioctl::Memset64, &mut s), errno(Errno::EINVAL));
    s.size.set(8192);
    assert_eq!(h.call(Ioctl::Memset64, &mut s), Ok(0));
    assert!(h.dev_read(pa, 8192).iter().all(|&b| b == 0x3C));
    s.mem_handle.set(999);
    s.size.set(1);
    assert_eq!(h.call(Ioctl::Memset64, &mut s), errno(Errno::EINVAL));
}

#[test]
fn mem_get_info_writes_the_pa_and_an_optional_mmap_offset() {
    let mut h = Host::new(KdriverConfig::default());
    let hc = h.alloc(4096, true, 0, 0, TENSORS_HOST).unwrap();
    let dc = h.alloc(4096, false, 1, 2, TENSORS_DEVICE).unwrap();
    for m in [hc, dc] {
        let pa = h.pa(m);
        let (o, p) = (h.user.alloc(8), h.user.alloc(8));
        let mut a = MemGetInfo::new_zeroed();
        a.mem_handle.set(m);
        a.mmap_offset.set(o);
        a.pa.set(p);
        assert_eq!(h.call(Ioctl::MemGetInfo, &mut a), Ok(0));
        assert_eq!(h.user.buffer(p).unwrap(), pa.to_le_bytes());
        // The mmap offset of a chunk is its pa (§1.7).
        assert_eq!(h.user.buffer(o).unwrap(), pa.to_le_bytes());
        // A NULL mmap_offset pointer is skipped.
        let p2 = h.user.alloc(8);
        a.mmap_offset.set(0);
        a.pa.set(p2);
        assert_eq!(h.call(Ioctl::MemGetInfo, &mut a), Ok(0));
        assert_eq!(h.user.buffer(p2).unwrap(), pa.to_le_bytes());
        // The pa pointer is written first: a bad one faults.
        a.pa.set(0x10);
        assert_eq!(h.call(Ioctl::MemGetInfo, &mut a), errno(Errno::EFAULT));
    }
    assert_eq!(h.pa(hc) & HOST_BIT, HOST_BIT);
    let mut a = MemGetInfo::new_zeroed();
    a.mem_handle.set(77);
    a.pa.set(h.user.alloc(8));
    assert_eq!(h.call(Ioctl::MemGetInfo, &mut a), errno(Errno::EINVAL));
    let mut h = Host::new(KdriverConfig {
        attached: false,
        ..KdriverConfig::default()
    });
    assert_eq!(h.call(Ioctl::MemGetInfo, &mut a), errno(Errno::EACCES));
}

#[test]
fn zerocopy64_both_directions_two_page_merge_and_bar4_writes() {
    let mut h = Host::new(KdriverConfig::default());
    let m = h.alloc(1 << 20, false, 2, 4, TENSORS_DEVICE).unwrap();
    let pa = h.pa(m);
    // Host → device, page-aligned 300 KiB: steps of 64 pages (256 KiB)
    // then 44 KiB; [2.24] merges at most 2 pages → 8 KiB descriptors:
    // 32 + 6 data descriptors, one batch per step.
    let data = pattern(300 << 10, 5);
    let src = h.user.alloc_with(&data);
    assert_eq!(zerocopy(&mut h, m, src, 300 << 10, 4096, true, 0), Ok(0));
    assert_eq!(h.dev_read(pa + 4096, 300 << 10), data);
    assert_eq!((h.batches(), h.data_descs()), (2, 38));
    // Every descriptor of the first step is 8 KiB (len field 8192); the
    // last data descriptor of a step carries DMB (bit 30).
    for slot in 0..32 {
        let (w0, _) = h2t_tx(&h, 4, slot);
        assert_eq!(w0 & 0xFFFF, 8192, "slot {slot}");
        assert_eq!(w0 & (1 << 30) != 0, slot == 31, "slot {slot}");
    }
    // Device → host into a buffer starting mid-page (0x800): the first
    // descriptor ends at the second page boundary, then 8 KiB ones.
    let out = h.user.alloc((64 << 10) + 4096);
    let (b0, d0) = (h.batches(), h.data_descs());
    assert_eq!(
        zerocopy(&mut h, m, out + 0x800, 64 << 10, 4096, false, 1 << 20),
        Ok(0)
    );
    assert_eq!(
        &h.user.buffer(out).unwrap()[0x800..0x800 + (64 << 10)],
        &data[..64 << 10],
        "bar4_wr_threshold applies to writes only"
    );
    assert_eq!((h.batches() - b0, h.data_descs() - d0), (1, 9));
    // Host → device at most bar4_wr_threshold bytes: a direct BAR4 store.
    let small = pattern(4096, 200);
    let s = h.user.alloc_with(&small);
    let b0 = h.batches();
    assert_eq!(zerocopy(&mut h, m, s, 4096, 0, true, 4096), Ok(0));
    assert_eq!(h.batches(), b0, "no H2T batch");
    assert_eq!(h.dev_read(pa, 4096), small);
    // One byte over the threshold: DMA again.
    assert_eq!(zerocopy(&mut h, m, s, 4096, 0, true, 4095), Ok(0));
    assert_eq!(h.batches(), b0 + 1);
    // Bounds.
    assert_eq!(
        zerocopy(&mut h, m, s, 4096, (1 << 20) - 4095, true, 0),
        errno(Errno::EINVAL)
    );
}

#[test]
fn zerocopy64_batches_two_records_of_two_ops() {
    let mut h = Host::new(KdriverConfig::default());
    let a = h.alloc(256 << 10, false, 0, 0, TENSORS_DEVICE).unwrap();
    let b = h.alloc(256 << 10, false, 1, 3, TENSORS_DEVICE).unwrap();
    let (pa, pb) = (h.pa(a), h.pa(b));
    // (handle, handle offset, [(op offset, size)]).
    let plan = [
        (a, 4096u64, [(0u64, 10_000u64), (20_000, 5000)]),
        (b, 0, [(0, 70_000), (100_000, 3)]),
    ];
    let mut bufs = Vec::new();
    let mut batch_bytes = Vec::new();
    for (i, (mem, moff, ops)) in plan.iter().enumerate() {
        let mut op_bytes = Vec::new();
        for (k, (off, size)) in ops.iter().enumerate() {
            let d = pattern(*size as usize, (10 * i + k) as u8);
            let buf = h.user.alloc_with(&d);
            bufs.push((*mem, moff + off, d, buf));
            let mut op = TensorBatchOp::new_zeroed();
            op.offset.set(*off);
            op.size.set(*size);
            op.buffer.set(buf);
            op_bytes.extend_from_slice(op.as_bytes());
        }
        let ops_ptr = h.user.alloc_with(&op_bytes);
        let mut r = MemcpyBatch::new_zeroed();
        r.mem_handle.set(*mem);
        r.mem_handle_offset.set(*moff);
        r.ops_ptr.set(ops_ptr);
        r.num_ops.set(2);
        batch_bytes.extend_from_slice(r.as_bytes());
    }
    let batches_ptr = h.user.alloc_with(&batch_bytes);
    let mut z = MemBufCopy64ZcBatches::new_zeroed();
    z.batches_ptr.set(batches_ptr);
    z.num_batches.set(2);
    z.is_copy_to_device.set(1);
    z.h2t_qid.set(-1);
    assert_eq!(h.call(Ioctl::MemBufZerocopy64Batches, &mut z), Ok(0));
    for (mem, off, d, _) in &bufs {
        let base = if *mem == a { pa } else { pb };
        assert_eq!(h.dev_read(base + off, d.len()), *d, "at {off}");
    }
    // Back to host: clear the user buffers, copy device → host.
    for (_, _, _, buf) in &bufs {
        h.user.buffer_mut(*buf).unwrap().fill(0);
    }
    z.is_copy_to_device.set(0);
    assert_eq!(h.call(Ioctl::MemBufZerocopy64Batches, &mut z), Ok(0));
    for (_, _, d, buf) in &bufs {
        assert_eq!(h.user.buffer(*buf).unwrap(), d.as_slice());
    }
    z.num_batches.set(0);
    assert_eq!(
        h.call(Ioctl::MemBufZerocopy64Batches, &mut z),
        errno(Errno::EINVAL)
    );
}

#[test]
fn mem_copy64_splits_into_batches_of_2031_pairs_with_a_write_barrier_each() {
    let mut h = Host::new(KdriverConfig::default());
    let size = 2032 * K64;
    let a = h.alloc(size, false, 0, 0, TENSORS_DEVICE).unwrap();
    let b = h.alloc(size, false, 0, 0, TENSORS_DEVICE).unwrap();
    let (pa, pb) = (h.pa(a), h.pa(b));
    // Marks in the first, 2031st and last pair (written by the CPU).
    let marks = [0, 2030 * K64 + 17, 2031 * K64 + 9];
    for (i, &off) in marks.iter().enumerate() {
        let d = pattern(4096, i as u8);
        h.driver_mut()
            .device_mut()
            .write_bytes(pa + off, &d)
            .unwrap();
    }
    assert_eq!(mem_copy64(&mut h, a, b, size), Ok(0));
    for (i, &off) in marks.iter().enumerate() {
        let want = pattern(4096, i as u8);
        assert_eq!(h.dev_read(pb + off, 4096), want);
    }
    assert_eq!(h.batches(), 2, "2031 pairs, then 1");
    assert_eq!(h.data_descs(), 2032);
    let descs: Vec<u64> = h
        .driver()
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            DriverEventKind::H2tBatch {
                descs, completed, ..
            } => {
                assert!(completed);
                Some(descs)
            }
            _ => None,
        })
        .collect();
    assert_eq!(descs, [2032, 2]);
    // Ring slots: batch 1 = data 0..=2030, marker 2031; batch 2 = data
    // 2032, marker 2033. WRITE_BARRIER only on each batch's last data pair.
    let w1 = |slot| h2t_tx(&h, 0, slot).1;
    for slot in [2030, 2032] {
        assert_eq!(w1(slot), DEFAULT_COPY_WORD1_WRITE_BARRIER, "slot {slot}");
    }
    for slot in [0, 1, 2029, 2031, 2033] {
        assert_eq!(w1(slot), DEFAULT_COPY_WORD1, "slot {slot}");
    }
    // The completion pair is a 4-byte host → host copy of the marker.
    let (w0, _) = h2t_tx(&h, 0, 2031);
    assert_eq!(w0 & 0xFFFF, 4);
}

#[test]
fn h2t_ring_ids_advance_mod_4_on_every_wrap() {
    let mut h = Host::new(KdriverConfig::default());
    let size = 2031 * K64; // one full batch: 2032 descriptors
    let a = h.alloc(size, false, 1, 3, TENSORS_DEVICE).unwrap();
    let b = h.alloc(size, false, 1, 3, TENSORS_DEVICE).unwrap();
    let (pa, pb) = (h.pa(a), h.pa(b));
    // 17 batches = 34,544 descriptors: past four wraps of the 8192 ring
    // (ring ids 1, 2, 3, 0, then 1 again). The H2T engines keep ring-id
    // checking on (§2.6), so a wrong id would abort and time out.
    for i in 0..17u8 {
        let mark = pattern(64, i);
        let at = pa + u64::from(i) * K64;
        h.driver_mut().device_mut().write_bytes(at, &mark).unwrap();
        assert_eq!(mem_copy64(&mut h, a, b, size), Ok(0), "copy {i}");
        assert_eq!(h.dev_read(pb + u64::from(i) * K64, 64), mark);
    }
    assert_eq!(h.driver().stats().timeouts, 0);
    assert_eq!(h.batches(), 17);
    let ring_id = |h: &H, slot| (h2t_tx(h, 3, slot).0 >> 24) & 3;
    // Tail 34,544: slots 0..1776 were last written on pass 4 (id 1), the
    // rest on pass 3 (id 0).
    assert_eq!(34_544 - 4 * 8192, 1776);
    assert_eq!(ring_id(&h, 0), 1);
    assert_eq!(ring_id(&h, 1775), 1);
    assert_eq!(ring_id(&h, 1776), 0);
    assert_eq!(ring_id(&h, 8191), 0);
}

#[test]
fn the_2_24_mem_copy64_form_copies_too() {
    let mut h = Host::new(KdriverConfig::default());
    let a = h.alloc(8192, true, 0, 0, TENSORS_HOST).unwrap();
    let b = h.alloc(8192, false, 0, 5, TENSORS_DEVICE).unwrap();
    let data = pattern(8192, 3);
    let src = h.user.alloc_with(&data);
    h.buf_copy(a, src, 8192, 0, true).unwrap();
    let mut c = MemCopy64Deprecated::new_zeroed();
    c.src_mem_handle.set(a);
    c.dst_mem_handle.set(b);
    c.size.set(4096);
    c.src_offset.set(100);
    c.dst_offset.set(4096);
    assert_eq!(h.call(Ioctl::MemCopy64Deprecated, &mut c), Ok(0));
    let pb = h.pa(b);
    assert_eq!(h.dev_read(pb + 4096, 4096), &data[100..4196]);
    assert_eq!(h.batches(), 1, "host → device: NC of the device chunk");
    assert!(h.driver().h2t_ring(5).is_some());
    c.dst_offset.set(4097);
    assert_eq!(
        h.call(Ioctl::MemCopy64Deprecated, &mut c),
        errno(Errno::EINVAL)
    );
    // The [2.24] zero-copy form (the copy64 struct) moves data both ways.
    let mut z = MemBufCopy64::new_zeroed();
    z.mem_handle.set(b);
    z.buffer.set(src);
    z.size.set(8192);
    z.copy_to_mem_handle.set(1);
    assert_eq!(h.call(Ioctl::MemBufZerocopy64Legacy, &mut z), Ok(0));
    assert_eq!(h.dev_read(pb, 8192), data);
}
