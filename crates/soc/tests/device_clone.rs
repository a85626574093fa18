//! `Device::try_clone` (docs/user-guide.md §12 "Going back"): a copy runs
//! on independently of the original, and exactly as the original would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{addr, device};
use sim_core::Cycle;
use soc::Device;
use soc::device::RunStop;
use soc::workload::StreamCopy;

#[test]
fn a_clone_diverges_independently() {
    let mut a = device();
    let hbm = addr(&a, "hbm0+0x1000");
    let reg = addr(&a, "eng0.m2s.q0.tdrbp_low");
    a.write_bytes(hbm, &[1, 2, 3, 4]).unwrap();
    a.write32(reg, 0x1000).unwrap();
    let mut b = a.try_clone().unwrap();
    assert_eq!(b.memory_digest(), a.memory_digest());
    assert_eq!(b.csr_snapshot(), a.csr_snapshot());

    // Written in the copy: the original keeps its bytes and registers.
    b.write_bytes(hbm, &[9]).unwrap();
    b.write32(reg, 0x2000).unwrap();
    b.write_bytes(addr(&b, "hbm1+0x40"), &[7]).unwrap();
    assert_eq!(a.read32(hbm).unwrap(), 0x0403_0201);
    assert_eq!(a.read32(reg).unwrap(), 0x1000);
    assert_eq!(a.read32(addr(&a, "hbm1+0x40")).unwrap(), 0);
    assert_eq!(b.read32(hbm).unwrap(), 0x0403_0209);

    // And the other way round.
    a.write_bytes(hbm + 1, &[0xee]).unwrap();
    a.write32(reg, 0x3000).unwrap();
    assert_eq!(b.read32(hbm).unwrap(), 0x0403_0209);
    assert_eq!(b.read32(reg).unwrap(), 0x2000);
    assert_eq!(a.read32(hbm).unwrap(), 0x0403_ee01);
    assert_ne!(a.memory_digest(), b.memory_digest());

    // A copy of an untouched region allocates nothing until written with
    // a non-zero byte.
    let before = b.page_ids().count();
    b.write_bytes(addr(&b, "hbm2+0x10000"), &[0; 64]).unwrap();
    assert_eq!(b.page_ids().count(), before);
}

/// A copy-heavy workload on two engines.
fn workload() -> Device {
    let mut d = device();
    d.set_trace(false);
    StreamCopy {
        desc_bytes: 4096,
        descs: 256,
        queues: 2,
        engines: 2,
        fill_src: true,
        fill_dst: false,
    }
    .program(&mut d)
    .unwrap();
    d
}

#[test]
fn a_clone_taken_mid_run_lands_on_the_same_state() {
    let mut straight = workload();
    assert_eq!(straight.run(None), RunStop::Idle);

    let mut a = workload();
    assert_eq!(a.run(Some(Cycle(300))), RunStop::Limit);
    let mut b = a.try_clone().unwrap();
    let shared_before = b
        .page_ids()
        .filter(|p| a.page_ids().any(|q| q == *p))
        .count();
    assert!(shared_before > 0, "the copy shares the original's pages");
    assert_eq!(a.run(None), RunStop::Idle);
    assert_eq!(b.run(None), RunStop::Idle);
    for d in [&a, &b] {
        assert_eq!(d.now(), straight.now());
        assert_eq!(d.events_processed(), straight.events_processed());
        assert_eq!(d.csr_snapshot(), straight.csr_snapshot());
        assert_eq!(d.memory_digest(), straight.memory_digest());
        assert_eq!(d.queue_stats(), straight.queue_stats());
    }
}

#[test]
fn a_recording_device_cannot_be_copied() {
    let mut d = device();
    d.record_waves();
    assert!(d.try_clone().is_none());
}
