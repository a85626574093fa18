//! DMA engine, queue and descriptor ioctls (docs/references/driver.md §1.6, §2.8, §2.9)
//! and process exit, through the in-process transport.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{DMA_RINGS_DEVICE, DMA_RINGS_HOST, HOST_BIT, Host, TENSORS_HOST, errno, pattern};
use dma_abi::{Flags, rx, tx};
use ioctl_abi::args::{
    DmaAckCompleted, DmaCopyDescriptors, DmaCopyDescriptors64, DmaDescriptorCopyout,
    DmaEngGetState, DmaEngInit, DmaEngSetState, DmaEngState, DmaQueueGetState, DmaQueueInit,
    DmaQueueInitBatch, DmaQueueState,
};
use ioctl_abi::{Errno, Ioctl};
use ioctl_bus::InProcess;
use kdriver::{DUMMY_RING_DESCS, KdriverConfig, KernelDriver};
use zerocopy::{FromBytes, FromZeros};

type H = Host<InProcess<KernelDriver>>;

/// `n` TX descriptors reading from `src`, `src + 4096`, ….
fn tx_descs(n: usize, src: u64) -> Vec<u8> {
    (0..n as u64)
        .flat_map(|i| {
            tx(64 + i as u32, src + 4096 * i, Flags::single(1))
                .unwrap()
                .to_bytes()
        })
        .collect()
}

/// `n` RX descriptors writing to `dst`, `dst + 4096`, ….
fn rx_descs(n: usize, dst: u64) -> Vec<u8> {
    (0..n as u64)
        .flat_map(|i| rx(128 + i as u32, dst + 4096 * i).unwrap().to_bytes())
        .collect()
}

fn copy_descs64(
    h: &mut H,
    mem: u64,
    descs: &[u8],
    offset: u64,
    qtype: u32,
) -> Result<i64, ioctl_bus::IoctlError> {
    let buf = h.user.alloc_with(descs);
    let mut a = DmaCopyDescriptors64::new_zeroed();
    a.mem_handle.set(mem);
    a.buffer.set(buf);
    a.num_descs.set((descs.len() / 16) as u32);
    a.offset.set(offset);
    a.queue_type.set(qtype);
    let r = h.call(Ioctl::DmaCopyDescriptors64, &mut a);
    h.user.free(buf);
    r
}

fn queue_init(eng: u32, qid: u32, len: u32, tx_h: u64, rx_h: u64) -> DmaQueueInit {
    let mut q = DmaQueueInit::new_zeroed();
    q.eng_id.set(eng);
    q.qid.set(qid);
    q.tx_desc_count.set(len);
    q.rx_desc_count.set(len);
    q.tx_handle.set(tx_h);
    q.rx_handle.set(rx_h);
    q
}

fn queue_state(h: &mut H, eng: u32, qid: u32) -> (DmaQueueState, DmaQueueState) {
    let (t, r) = (h.user.alloc(48), h.user.alloc(48));
    let mut g = DmaQueueGetState::new_zeroed();
    g.eng_id.set(eng);
    g.qid.set(qid);
    g.tx.set(t);
    g.rx.set(r);
    h.call(Ioctl::DmaQueueGetState, &mut g).unwrap();
    let rd = |h: &H, a| DmaQueueState::read_from_bytes(h.user.buffer(a).unwrap()).unwrap();
    (rd(h, t), rd(h, r))
}

fn copyout(
    h: &mut H,
    eng: u32,
    qid: u32,
    qtype: u32,
    start: u32,
    count: u32,
) -> Result<Vec<u8>, ioctl_bus::IoctlError> {
    let out = h.user.alloc(16 * count.max(1) as usize);
    let mut c = DmaDescriptorCopyout::new_zeroed();
    c.eng_id.set(eng);
    c.qid.set(qid);
    c.queue_type.set(qtype);
    c.start_index.set(start);
    c.count.set(count);
    c.buffer.set(out);
    h.call(Ioctl::DmaDescriptorCopyout, &mut c)?;
    Ok(h.user.buffer(out).unwrap()[..16 * count as usize].to_vec())
}

fn eng_state(h: &mut H, eng: u32) -> DmaEngState {
    let out = h.user.alloc(20);
    let mut g = DmaEngGetState::new_zeroed();
    g.eng_id.set(eng);
    g.state.set(out);
    h.call(Ioctl::DmaEngGetState, &mut g).unwrap();
    DmaEngState::read_from_bytes(h.user.buffer(out).unwrap()).unwrap()
}

#[test]
fn copy_descriptors64_fit_type_and_host_address_rules() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(4096, true, 0, 0, DMA_RINGS_HOST).unwrap(); // 256 descriptors
    let ring_pa = h.pa(ring);
    let data = h.alloc(64 << 10, true, 0, 0, TENSORS_HOST).unwrap();
    let data_pa = h.pa(data);
    assert_eq!(data_pa & HOST_BIT, HOST_BIT);
    let dev = h.alloc(64 << 10, false, 0, 0, 9).unwrap();
    let dev_pa = h.pa(dev);

    // offset + 16·num must fit the chunk (the last byte is fine, one more is not).
    let d = tx_descs(256, 0x1000_0000);
    assert_eq!(copy_descs64(&mut h, ring, &d, 0, 0), Ok(0));
    let d = tx_descs(1, 0x1000_0000);
    assert_eq!(copy_descs64(&mut h, ring, &d, 4096 - 16, 0), Ok(0));
    assert_eq!(
        copy_descs64(&mut h, ring, &d, 4096 - 15, 0),
        errno(Errno::EINVAL)
    );
    assert_eq!(
        copy_descs64(&mut h, ring, &tx_descs(257, 0), 0, 0),
        errno(Errno::EINVAL)
    );

    // COMPLETION rings are refused with the driver's -1.
    assert_eq!(copy_descs64(&mut h, ring, &d, 0, 2), errno(Errno::EPERM));

    // A host-bit address must lie inside a host chunk (TX buf_ptr, RX buf1_ptr);
    // device addresses are not checked.
    let outside_host = HOST_BIT | 0x2_0000_0000;
    assert_eq!(
        copy_descs64(&mut h, ring, &tx_descs(1, outside_host), 0, 0),
        errno(Errno::EINVAL)
    );
    assert_eq!(
        copy_descs64(&mut h, ring, &tx_descs(1, dev_pa | HOST_BIT), 0, 0),
        errno(Errno::EINVAL),
        "a device chunk's address with the host bit is not host memory"
    );
    assert_eq!(
        copy_descs64(&mut h, ring, &rx_descs(1, outside_host), 0, 1),
        errno(Errno::EINVAL)
    );

    // Accepted: host-bit addresses inside the host chunk, and device ones.
    // The host ring is written directly (no H2T batch).
    let mut good = tx_descs(8, data_pa);
    good.extend(tx_descs(8, dev_pa));
    let batches = h.batches();
    assert_eq!(copy_descs64(&mut h, ring, &good, 512, 0), Ok(0));
    assert_eq!(h.dev_read(ring_pa + 512, good.len()), good);
    assert_eq!(h.batches(), batches, "host ring: memcpy, no DMA");
    let rxd = rx_descs(4, data_pa + 100);
    assert_eq!(copy_descs64(&mut h, ring, &rxd, 2048, 1), Ok(0));
    assert_eq!(h.dev_read(ring_pa + 2048, rxd.len()), rxd);
}

#[test]
fn copy_descriptors_to_a_device_ring_goes_through_h2t_in_64k_pieces() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(128 << 10, false, 1, 2, DMA_RINGS_DEVICE).unwrap();
    let ring_pa = h.pa(ring);
    // 4097 descriptors: one 64 KiB piece of 4096, then one more.
    let d = tx_descs(4097, 0x4000_0000);
    let batches = h.batches();
    assert_eq!(copy_descs64(&mut h, ring, &d, 0, 0), Ok(0));
    assert_eq!(h.batches() - batches, 2, "one H2T copy per 64 KiB piece");
    assert_eq!(h.dev_read(ring_pa, d.len()), d);
    // NC 2 → engine 129 queue 0 did the copies.
    assert!(h.driver().h2t_ring(2).is_some());

    // Pieces are checked one at a time: a bad address in the second piece
    // fails the call after the first piece was written.
    let mut d2 = tx_descs(4096, 0x5000_0000);
    d2.extend(tx_descs(1, HOST_BIT | 0x3_0000_0000));
    let batches = h.batches();
    assert_eq!(copy_descs64(&mut h, ring, &d2, 0, 0), errno(Errno::EINVAL));
    assert_eq!(h.batches() - batches, 1);
    assert_eq!(h.dev_read(ring_pa, 4096 * 16), &d2[..4096 * 16]);
    assert_eq!(
        h.dev_read(ring_pa + 4096 * 16, 16),
        &d[4096 * 16..],
        "the failing piece is not written"
    );
}

#[test]
fn descriptor_copyout_reads_back_what_copy_descriptors_wrote() {
    let mut h = Host::new(KdriverConfig::default());
    let tx_ring = h.alloc(64 * 16, false, 0, 1, DMA_RINGS_DEVICE).unwrap();
    let rx_ring = h.alloc(64 * 16, true, 0, 1, DMA_RINGS_HOST).unwrap();
    let mut q = queue_init(5, 3, 64, tx_ring, rx_ring);
    h.call(Ioctl::DmaQueueInit, &mut q).unwrap();
    // Fill both rings with the 32-byte DMA_COPY_DESCRIPTORS.
    let tx_d = tx_descs(64, 0x2000_0000);
    let rx_d = rx_descs(64, 0x3000_0000);
    for (mem, d, qt) in [(tx_ring, &tx_d, 0), (rx_ring, &rx_d, 1)] {
        let buf = h.user.alloc_with(d);
        let mut a = DmaCopyDescriptors::new_zeroed();
        a.mem_handle.set(mem);
        a.buffer.set(buf);
        a.num_descs.set(64);
        a.queue_type.set(qt);
        h.call(Ioctl::DmaCopyDescriptors, &mut a).unwrap();
    }
    // Device TX ring: read back by H2T DMA.
    let batches = h.batches();
    assert_eq!(copyout(&mut h, 5, 3, 0, 0, 64).unwrap(), tx_d);
    assert_eq!(h.batches() - batches, 1);
    // Host RX ring: read directly, from start_index.
    let batches = h.batches();
    assert_eq!(
        copyout(&mut h, 5, 3, 1, 10, 5).unwrap(),
        &rx_d[10 * 16..15 * 16]
    );
    assert_eq!(copyout(&mut h, 5, 3, 1, 63, 1).unwrap(), &rx_d[63 * 16..]);
    assert_eq!(h.batches(), batches);
    // [2.24] quirk: a device ring is copied from its base whatever start_index.
    assert_eq!(copyout(&mut h, 5, 3, 0, 10, 2).unwrap(), &tx_d[..32]);
    // start + count ≤ DRL (else EFBIG, as the driver), count > 0, TX/RX only.
    assert_eq!(copyout(&mut h, 5, 3, 1, 60, 5), Err(errno_e(Errno::EFBIG)));
    assert_eq!(copyout(&mut h, 5, 3, 0, 64, 1), Err(errno_e(Errno::EFBIG)));
    assert_eq!(copyout(&mut h, 5, 3, 1, 0, 0), Err(errno_e(Errno::EINVAL)));
    assert_eq!(copyout(&mut h, 5, 3, 2, 0, 1), Err(errno_e(Errno::EINVAL)));
    assert_eq!(
        copyout(&mut h, 132, 3, 0, 0, 1),
        Err(errno_e(Errno::EINVAL))
    );
}

fn errno_e(e: Errno) -> ioctl_bus::IoctlError {
    ioctl_bus::IoctlError::Errno(e)
}

#[test]
fn queue_init_batch_inits_each_entry_in_order() {
    let mut h = Host::new(KdriverConfig::default());
    let rings: Vec<u64> = (0..4)
        .map(|_| h.alloc(4096, false, 0, 0, DMA_RINGS_DEVICE).unwrap())
        .collect();
    let pas: Vec<u64> = rings.iter().map(|&r| h.pa(r)).collect();
    let mut b = DmaQueueInitBatch::new_zeroed();
    b.entries[0] = queue_init(1, 0, 64, rings[0], rings[1]);
    b.entries[1] = queue_init(2, 5, 128, rings[2], rings[2]);
    b.entries[2] = queue_init(17, 3, 32, rings[3], 0);
    // count ≥ 256: -E2BIG in [2.24], nothing initialised.
    b.count.set(256);
    assert_eq!(
        h.call(Ioctl::DmaQueueInitBatch, &mut b),
        errno(Errno::E2BIG)
    );
    assert_eq!(queue_state(&mut h, 1, 0).0.length.get(), 0);
    b.count.set(3);
    assert_eq!(h.call(Ioctl::DmaQueueInitBatch, &mut b), Ok(0));
    let (t, r) = queue_state(&mut h, 1, 0);
    assert_eq!((t.base_addr.get(), t.length.get()), (pas[0], 64));
    assert_eq!((r.base_addr.get(), r.length.get()), (pas[1], 64));
    assert_eq!(t.sw_status.get(), 2, "enabled");
    let (t, r) = queue_state(&mut h, 2, 5);
    assert_eq!((t.base_addr.get(), r.base_addr.get()), (pas[2], pas[2]));
    assert_eq!(r.length.get(), 128);
    let (t, r) = queue_state(&mut h, 17, 3);
    assert_eq!((t.base_addr.get(), t.length.get()), (pas[3], 32));
    assert_eq!((r.base_addr.get(), r.length.get()), (0, 32), "no RX ring");
    assert!(
        h.driver().user_queue_acked(17, 3).is_some(),
        "owner recorded"
    );

    // Entries run in order and stop at the first failure (qid 16).
    let mut b = DmaQueueInitBatch::new_zeroed();
    b.entries[0] = queue_init(3, 1, 64, rings[0], rings[0]);
    b.entries[1] = queue_init(3, 16, 64, rings[0], rings[0]);
    b.entries[2] = queue_init(3, 2, 64, rings[0], rings[0]);
    b.count.set(3);
    assert_eq!(
        h.call(Ioctl::DmaQueueInitBatch, &mut b),
        errno(Errno::EINVAL)
    );
    assert_eq!(queue_state(&mut h, 3, 1).0.length.get(), 64);
    assert_eq!(queue_state(&mut h, 3, 2).0.length.get(), 0);
    // A zeroed entry is a 0-descriptor ring: too small (udma_q_init, §2.9).
    let mut b = DmaQueueInitBatch::new_zeroed();
    b.count.set(255);
    assert_eq!(
        h.call(Ioctl::DmaQueueInitBatch, &mut b),
        errno(Errno::EINVAL)
    );
}

#[test]
fn queue_init_validates_rings_like_udma_m2m_init_queue() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(8192, false, 0, 0, DMA_RINGS_DEVICE).unwrap();
    let pa = h.pa(ring);
    // Sizes must be multiples of 16 (-1) and ≥ 32 (EINVAL).
    let mut q = queue_init(4, 0, 40, ring, ring);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), errno(Errno::EPERM));
    let mut q = queue_init(4, 0, 16, ring, ring);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), errno(Errno::EINVAL));
    // An S2M failure leaves the M2S queue re-initialised (M2S first).
    let mut q = queue_init(4, 0, 64, ring, ring);
    q.rx_desc_count.set(16);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), errno(Errno::EINVAL));
    let (t, r) = queue_state(&mut h, 4, 0);
    assert_eq!((t.base_addr.get(), t.length.get()), (pa, 64));
    assert_eq!(r.length.get(), 0);
    // A handle that does not resolve means "no ring" (base 0), not an error.
    let mut q = queue_init(4, 1, 64, 999, ring);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), Ok(0));
    assert_eq!(queue_state(&mut h, 4, 1).0.base_addr.get(), 0);
    // A completion ring too small for rx_desc_count is EINVAL, else -1.
    let small = h.alloc(512, false, 0, 0, DMA_RINGS_DEVICE).unwrap();
    let mut q = queue_init(4, 2, 512, ring, ring);
    q.rxc_handle.set(small);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), errno(Errno::EINVAL));
    q.tx_desc_count.set(64);
    q.rx_desc_count.set(64);
    assert_eq!(h.call(Ioctl::DmaQueueInit, &mut q), errno(Errno::EPERM));
}

#[test]
fn eng_init_set_state_and_get_state() {
    let mut h = Host::new(KdriverConfig::default());
    // Engines come out of reset disabled: reported IDLE (DISABLE never is).
    assert_eq!(
        (
            eng_state(&mut h, 6).tx_state.get(),
            eng_state(&mut h, 6).rx_state.get()
        ),
        (1, 1)
    );
    let mut i = DmaEngInit::new_zeroed();
    i.eng_id.set(132);
    assert_eq!(h.call(Ioctl::DmaEngInit, &mut i), errno(Errno::EINVAL));
    i.eng_id.set(6);
    assert_eq!(h.call(Ioctl::DmaEngInit, &mut i), Ok(0));
    let s = eng_state(&mut h, 6);
    assert_eq!((s.tx_state.get(), s.rx_state.get()), (2, 2), "NORMAL");

    // SET_STATE writes change_state of both directions; GET_STATE decodes
    // the state registers: DISABLE(0) → IDLE(1), NORMAL(2), ABORT(3).
    let mut st = DmaEngSetState::new_zeroed();
    st.eng_id.set(9);
    for (set, got) in [(2, 2), (3, 3), (0, 1), (2, 2)] {
        st.state.set(set);
        assert_eq!(h.call(Ioctl::DmaEngSetState, &mut st), Ok(0));
        let s = eng_state(&mut h, 9);
        assert_eq!(
            (s.tx_state.get(), s.rx_state.get()),
            (got, got),
            "set {set}"
        );
    }
    // IDLE / RESET are refused by udma_state_set but the ioctl succeeds,
    // touching nothing.
    let before = h.driver().device().csr_snapshot();
    for bad in [1, 4] {
        st.state.set(bad);
        assert_eq!(h.call(Ioctl::DmaEngSetState, &mut st), Ok(0));
    }
    assert_eq!(h.driver().device().csr_snapshot(), before);
    assert_eq!(eng_state(&mut h, 9).tx_state.get(), 2);
    st.eng_id.set(132);
    assert_eq!(h.call(Ioctl::DmaEngSetState, &mut st), errno(Errno::EINVAL));

    // Both are attach-gated (the exact legacy numbers).
    let mut h = Host::new(KdriverConfig {
        attached: false,
        ..KdriverConfig::default()
    });
    assert_eq!(h.call(Ioctl::DmaEngInit, &mut i), errno(Errno::EACCES));
    assert_eq!(h.call(Ioctl::DmaEngSetState, &mut st), errno(Errno::EACCES));
}

#[test]
fn ack_completed_is_software_only() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(4096, false, 0, 0, DMA_RINGS_DEVICE).unwrap();
    let mut q = queue_init(7, 4, 64, ring, ring);
    h.call(Ioctl::DmaQueueInit, &mut q).unwrap();
    let before = h.driver().device().csr_snapshot();
    let events = h.driver().device().events().len();
    let mut a = DmaAckCompleted::new_zeroed();
    a.eng_id.set(7);
    a.qid.set(4);
    a.count.set(40);
    assert_eq!(h.call(Ioctl::DmaAckCompleted, &mut a), Ok(0));
    assert_eq!(h.driver().user_queue_acked(7, 4), Some((40, 40)));
    // Modulo the ring size.
    assert_eq!(h.call(Ioctl::DmaAckCompleted, &mut a), Ok(0));
    assert_eq!(h.driver().user_queue_acked(7, 4), Some((16, 16)));
    assert_eq!(
        h.driver().device().csr_snapshot(),
        before,
        "no register write"
    );
    assert_eq!(h.driver().device().events().len(), events);
    a.qid.set(5);
    assert_eq!(
        h.call(Ioctl::DmaAckCompleted, &mut a),
        errno(Errno::EINVAL),
        "not an initialised queue"
    );
}

#[test]
fn process_exit_parks_owned_queues_on_a_dummy_ring_and_frees_memory() {
    let mut h = Host::new(KdriverConfig::default());
    let ring = h.alloc(4096, false, 0, 0, DMA_RINGS_DEVICE).unwrap();
    let ring_pa = h.pa(ring);
    let host = h.alloc(8192, true, 0, 0, TENSORS_HOST).unwrap();
    // A user copy makes the driver create NC 0's H2T ring (device lifespan).
    let src = h.user.alloc_with(&pattern(4096, 1));
    h.buf_copy(ring, src, 4096, 0, true).unwrap();
    // Owned queues: a plain one, an NX-reserved one (eng 16 = 0 mod 16,
    // q14), an H2T one (engine 130 q1), and q14 of engine 21 (5 mod 16: not NX).
    for (eng, qid) in [(3, 2), (16, 14), (130, 1), (21, 14)] {
        let mut q = queue_init(eng, qid, 64, ring, ring);
        h.call(Ioctl::DmaQueueInit, &mut q).unwrap();
    }
    let h2t_chunks = h.driver().memory().chunks().count();
    let rep = h.driver_mut().process_exit();
    assert_eq!(rep.queues_reset, vec![(3, 2), (21, 14)]);
    assert_eq!(rep.queues_kept, vec![(16, 14), (130, 1)]);
    let dummy = rep.dummy_ring.unwrap();
    assert_eq!(dummy & HOST_BIT, HOST_BIT, "a host chunk");
    for (eng, qid) in [(3, 2), (21, 14)] {
        let (t, r) = queue_state(&mut h, eng, qid);
        assert_eq!(
            (t.base_addr.get(), t.length.get()),
            (dummy, DUMMY_RING_DESCS)
        );
        assert_eq!(
            (r.base_addr.get(), r.length.get()),
            (dummy, DUMMY_RING_DESCS)
        );
        assert_eq!(t.sw_status.get(), 2);
    }
    for (eng, qid) in [(16, 14), (130, 1)] {
        assert_eq!(queue_state(&mut h, eng, qid).0.base_addr.get(), ring_pa);
    }
    // Both user chunks freed (handles 1 and 2); device-lifespan chunks stay.
    let mut freed: Vec<_> = rep.chunks_freed.iter().map(|c| c.handle).collect();
    freed.sort();
    assert_eq!(freed, vec![Some(ring), Some(host)]);
    assert!(h.driver().memory().chunks().all(|c| c.handle.is_none()));
    assert_eq!(
        h.driver().memory().chunks().count(),
        h2t_chunks - 2 + 1,
        "the user chunks go, the dummy ring comes"
    );
    assert_eq!(h.free(ring), errno(Errno::EINVAL));
    let acct = h.driver().memory().accounting();
    assert_eq!(acct.host.get("TENSORS_HOST").copied().unwrap_or(0), 0);
    assert_eq!(
        acct.device
            .get(&0)
            .and_then(|m| m.get("DMA_RINGS_DEVICE"))
            .copied()
            .unwrap_or(0),
        0
    );
    // A second exit has nothing left; the dummy ring is reused.
    let rep2 = h.driver_mut().process_exit();
    assert!(rep2.queues_reset.is_empty() && rep2.chunks_freed.is_empty());
    // The H2T path still works afterwards.
    let m = h.alloc(4096, false, 0, 0, 9).unwrap();
    h.buf_copy(m, src, 4096, 0, true).unwrap();
}
