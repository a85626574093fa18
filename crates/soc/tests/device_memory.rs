//! Memory accesses through the device: region bounds, SBUF pads, the PSUM
//! 4-byte write rule, the Q7 dataram alias, host memory, sparse allocation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{addr, device};
use mem::MemFault;
use soc::BusFault;
use soc_map::Hole;

const HBM_SIZE: u64 = 24 << 30;
const PAGE: u64 = 64 * 1024;

#[test]
fn bytes_round_trip_in_hbm() {
    let mut d = device();
    let a = addr(&d, "hbm1+0x1000");
    d.write_bytes(a, &[0xde, 0xad, 0xbe, 0xef]).unwrap();
    let mut buf = [0u8; 6];
    d.read_bytes(a - 1, &mut buf).unwrap();
    assert_eq!(buf, [0, 0xde, 0xad, 0xbe, 0xef, 0]);
    // write32/read32 on memory are little-endian.
    assert_eq!(d.read32(a).unwrap(), 0xefbe_adde);
    assert_eq!(d.write32(a + 8, 0x0403_0201).unwrap(), None);
    let mut buf = [0u8; 4];
    d.read_bytes(a + 8, &mut buf).unwrap();
    assert_eq!(buf, [1, 2, 3, 4]);
    // Memory writes are not register side effects.
    assert!(d.take_events().is_empty());
    assert!(d.csr_snapshot().blocks.is_empty());
    // Memory has no alignment rule.
    d.write32(a + 0x11, 0xaabb_ccdd).unwrap();
    assert_eq!(d.read32(a + 0x11).unwrap(), 0xaabb_ccdd);
}

#[test]
fn fill_sets_every_byte() {
    let mut d = device();
    let a = addr(&d, "hbm0+0xfff0");
    d.fill(a, 0x20, 0x5a).unwrap();
    let mut buf = [0u8; 0x22];
    d.read_bytes(a - 1, &mut buf).unwrap();
    assert_eq!(buf[0], 0);
    assert!(buf[1..0x21].iter().all(|&b| b == 0x5a));
    assert_eq!(buf[0x21], 0);
}

#[test]
fn access_crossing_a_region_end_faults() {
    let mut d = device();
    let end = HBM_SIZE; // hbm0 is [0, 24 GiB)
    let want = BusFault::CrossesBoundary {
        addr: end - 2,
        len: 4,
        region: "hbm0".into(),
        boundary: end,
    };
    assert_eq!(d.write_bytes(end - 2, &[1, 2, 3, 4]), Err(want.clone()));
    let mut buf = [0u8; 4];
    assert_eq!(d.read_bytes(end - 2, &mut buf), Err(want.clone()));
    assert_eq!(d.read32(end - 2), Err(want));
    assert!(matches!(
        d.fill(end - 1, 2, 1),
        Err(BusFault::CrossesBoundary { .. })
    ));
    // Nothing was written by the refused accesses.
    assert_eq!(d.allocated_bytes(), 0);
    // Ending exactly at the boundary is fine.
    d.write_bytes(end - 4, &[1, 2, 3, 4]).unwrap();
    assert_eq!(d.read32(end - 4).unwrap(), 0x0403_0201);
    // Past the populated 24 GiB, the 64 GiB window is a hole.
    assert!(matches!(
        d.read32(end),
        Err(BusFault::Hole {
            hole: Hole::WindowGap,
            ..
        })
    ));
    // Between regions: unmapped.
    assert_eq!(
        d.read32(0x10_0100_0000),
        Err(BusFault::Unmapped {
            addr: 0x10_0100_0000
        })
    );
}

#[test]
fn sbuf_partition_pad_faults() {
    let mut d = device();
    let p0 = addr(&d, "tpb0.sbuf[p0]");
    let pad = p0 + 224 * 1024;
    assert!(matches!(
        d.write_bytes(pad, &[1]),
        Err(BusFault::Hole {
            hole: Hole::PartitionPad {
                partition: 0,
                offset: 0x38000
            },
            ..
        })
    ));
    let mut b = [0u8; 1];
    assert!(matches!(
        d.read_bytes(p0 + 0x3_ffff, &mut b),
        Err(BusFault::Hole { .. })
    ));
    // An access that starts populated and runs into the pad.
    assert!(matches!(
        d.write_bytes(pad - 2, &[1, 2, 3, 4]),
        Err(BusFault::Memory {
            fault: MemFault::Hole { .. },
            ..
        })
    ));
    // Across two partitions.
    assert!(matches!(
        d.fill(p0, 0x4_0000 + 16, 0xff),
        Err(BusFault::Memory { .. })
    ));
    assert_eq!(d.allocated_bytes(), 0, "a refused access writes nothing");
    // The last populated bytes work, and so does the next partition.
    d.write_bytes(pad - 4, &[1, 2, 3, 4]).unwrap();
    d.write_bytes(p0 + 0x4_0000, &[9]).unwrap();
    let mut buf = [0u8; 4];
    d.read_bytes(pad - 4, &mut buf).unwrap();
    assert_eq!(buf, [1, 2, 3, 4]);
    assert_eq!(d.read32(addr(&d, "tpb0.sbuf[p1]")).unwrap(), 9);
    // SBUF has no alignment rule.
    d.write_bytes(p0 + 3, &[7]).unwrap();
}

#[test]
fn psum_writes_are_four_byte_typed() {
    let mut d = device();
    let p1 = addr(&d, "tpb0.psum[p1]");
    for (off, len) in [(0u64, 2usize), (2, 4), (1, 1), (0, 5)] {
        let data = vec![0xaa; len];
        assert!(
            matches!(
                d.write_bytes(p1 + off, &data),
                Err(BusFault::Memory {
                    fault: MemFault::Misaligned { align_bytes: 4, .. },
                    ..
                })
            ),
            "offset {off} len {len}"
        );
    }
    assert!(matches!(
        d.fill(p1, 6, 1),
        Err(BusFault::Memory {
            fault: MemFault::Misaligned { .. },
            ..
        })
    ));
    assert_eq!(d.allocated_bytes(), 0);
    // 4-byte typed writes work; reads of any size do.
    d.write32(p1 + 4, 0x1122_3344).unwrap();
    d.write_bytes(p1 + 8, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let mut b = [0u8; 3];
    d.read_bytes(p1 + 5, &mut b).unwrap();
    assert_eq!(b, [0x33, 0x22, 0x11]);
    // The PSUM pad: 16 KiB populated of a 32 KiB stride.
    assert!(matches!(
        d.write32(p1 + 0x4000, 1),
        Err(BusFault::Hole {
            hole: Hole::PartitionPad { partition: 1, .. },
            ..
        })
    ));
}

#[test]
fn q7_dataram_aperture_mirrors_q7_dram() {
    let mut d = device();
    for core in [0u32, 3, 7] {
        let dataram = addr(&d, &format!("tpb0.q7_dataram{core}"));
        let dram = addr(&d, &format!("tpb0.q7_dram{core}"));
        // P9.1 §6.2 with SoC_BASE = TPB + 0x8_0280_0000.
        assert_eq!(
            dataram,
            0x20_0000_0000 + 0x8_0280_0000 + ((2 * u64::from(core) + 9) << 16)
        );
        let tag = 0x40 + core as u8;
        d.write_bytes(dataram + 0x10, &[tag, 2, 3]).unwrap();
        let mut buf = [0u8; 3];
        d.read_bytes(dram + 0x10, &mut buf).unwrap();
        assert_eq!(buf, [tag, 2, 3], "core {core}: dataram write seen in dram");
        d.write32(dram + 0xfffc, 0xcafe_0000 | core).unwrap();
        assert_eq!(d.read32(dataram + 0xfffc).unwrap(), 0xcafe_0000 | core);
    }
    // Core 3's aperture does not show core 0's bytes.
    let dram0 = addr(&d, "tpb0.q7_dram0");
    let dataram3 = addr(&d, "tpb0.q7_dataram3");
    let mut buf = [0u8; 1];
    d.read_bytes(dataram3 + 0x10, &mut buf).unwrap();
    assert_eq!(buf[0], 0x43);
    d.read_bytes(dram0 + 0x10, &mut buf).unwrap();
    assert_eq!(buf[0], 0x40);
    // The aperture covers only the low 64 KiB.
    let dataram0 = addr(&d, "tpb0.q7_dataram0");
    assert!(matches!(
        d.write_bytes(dataram0 + 0xfffe, &[1, 2, 3, 4]),
        Err(BusFault::CrossesBoundary { .. })
    ));
    // Bytes of DRAM past 64 KiB stay reachable through q7_dram only.
    d.write_bytes(dram0 + 0x1_0000, &[5]).unwrap();
    assert!(d.read32(dataram0 + 0x1_0000).is_err());
}

#[test]
fn host_memory_sits_at_bit_46() {
    let mut d = device();
    let host = addr(&d, "host");
    assert_eq!(host, 1 << 46);
    let pa = 0x1234_5000u64;
    d.write_bytes(host | pa, b"host").unwrap();
    let mut buf = [0u8; 4];
    d.read_bytes((1 << 46) + pa, &mut buf).unwrap();
    assert_eq!(&buf, b"host");
    // Without bit 46 the same PA is HBM0, a different store.
    d.read_bytes(pa, &mut buf).unwrap();
    assert_eq!(buf, [0; 4]);
    let info = soc::describe(&d, host | pa);
    assert_eq!(info.region.as_deref(), Some("host"));
    assert!(info.mapped);
}

#[test]
fn reading_never_written_memory_is_zero_and_allocates_nothing() {
    let mut d = device();
    let places = [
        "hbm0",
        "hbm3+0x5_ffff_fff0",
        "tpb0.sbuf[p127]+0x100",
        "tpb5.psum[p3]",
        "tpb0.scratch",
        "tpb0.dge_memory+0x1000",
        "tpb0.q7_dataram2",
        "tpb1.q7_iram0",
        "host+0x1000",
    ];
    for p in places {
        let a = addr(&d, p);
        let mut buf = [0xffu8; 16];
        d.read_bytes(a, &mut buf).unwrap();
        assert_eq!(buf, [0; 16], "{p}");
        assert_eq!(d.read32(a).unwrap(), 0, "{p}");
    }
    // A large read is fine too.
    let mut big = vec![0xffu8; 1 << 20];
    d.read_bytes(addr(&d, "hbm2"), &mut big).unwrap();
    assert!(big.iter().all(|&b| b == 0));
    // Writing zeros, or zero-filling, allocates nothing either.
    d.fill(addr(&d, "hbm1"), 1 << 20, 0).unwrap();
    d.write_bytes(addr(&d, "hbm1+0x100"), &[0; 64]).unwrap();
    assert_eq!(d.allocated_bytes(), 0);
}

#[test]
fn last_byte_of_hbm3_allocates_one_page() {
    let mut d = device();
    let last = addr(&d, "hbm3") + HBM_SIZE - 1;
    assert_eq!(last, 0x8045_ffff_ffff);
    d.write_bytes(last, &[0x5a]).unwrap();
    assert_eq!(d.allocated_bytes(), PAGE);
    let mut b = [0u8; 1];
    d.read_bytes(last, &mut b).unwrap();
    assert_eq!(b, [0x5a]);
    // The same page again costs nothing more; another page does.
    d.write_bytes(last - 100, &[1]).unwrap();
    assert_eq!(d.allocated_bytes(), PAGE);
    d.write_bytes(last - PAGE, &[1]).unwrap();
    assert_eq!(d.allocated_bytes(), 2 * PAGE);
    // Nothing past it.
    assert!(d.write_bytes(last + 1, &[1]).is_err());
}

#[test]
fn reserved_and_gap_addresses_fault() {
    let mut d = device();
    let reserved = addr(&d, "tpb0.reserved_sbuf+0x100");
    assert!(matches!(
        d.write_bytes(reserved, &[1]),
        Err(BusFault::Hole {
            hole: Hole::Reserved,
            ..
        })
    ));
    // Between SBUF and scratch inside the TPB window.
    assert!(matches!(
        d.read32(0x20_0300_0000),
        Err(BusFault::Hole {
            hole: Hole::ContainerGap,
            ..
        })
    ));
}

#[test]
fn zero_length_accesses_are_harmless() {
    let mut d = device();
    d.write_bytes(0x1000, &[]).unwrap();
    d.read_bytes(0x1000, &mut []).unwrap();
    d.fill(0x1000, 0, 1).unwrap();
    assert_eq!(d.allocated_bytes(), 0);
}
