//! Integration tests: SBUF and PSUM geometry and faults (docs/references/wiki.md §A).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mem::{Bytes, MemFault, PartitionedMemory, Psum, Sbuf, SparseMemory};
use soc_map::addr::{SBUF_PARTITION_BYTES, SBUF_PARTITION_STRIDE_BYTES};
use soc_map::{PsumAddr, SbufAddr};

#[test]
fn eight_neuron_cores_of_sbuf_are_not_allocated_up_front() {
    let mut cores: Vec<Sbuf> = (0..8).map(|_| Sbuf::new()).collect();
    for (nc, sbuf) in cores.iter_mut().enumerate() {
        let addr = SbufAddr {
            partition: 127,
            offset: SBUF_PARTITION_BYTES - 4,
        };
        sbuf.write_u32_le(addr, nc as u32 + 1).unwrap();
    }
    for (nc, sbuf) in cores.iter().enumerate() {
        let backing = sbuf.as_partitioned().backing();
        assert_eq!(backing.allocated_pages(), 1);
        let addr = SbufAddr {
            partition: 127,
            offset: SBUF_PARTITION_BYTES - 4,
        };
        assert_eq!(sbuf.read_u32_le(addr).unwrap(), nc as u32 + 1);
    }
}

#[test]
fn every_partition_pad_faults_through_both_address_kinds() {
    let mut sbuf = Sbuf::new();
    let stride = u64::from(SBUF_PARTITION_STRIDE_BYTES);
    for partition in [0u32, 1, 63, 127] {
        let typed = SbufAddr {
            partition,
            offset: SBUF_PARTITION_BYTES,
        };
        let linear = u64::from(partition) * stride + u64::from(SBUF_PARTITION_BYTES);
        let hole = Err(MemFault::Hole {
            offset: linear,
            len: 8,
        });
        assert_eq!(sbuf.write(typed, &[1; 8]), hole);
        assert_eq!(Bytes::<u64>::write(&mut sbuf, linear, &[1; 8]), hole);
        assert_eq!(
            sbuf.read_vec(typed, 8).map_err(|f| f.access_offset()),
            Err(linear)
        );
    }
    assert_eq!(sbuf.as_partitioned().backing().allocated_pages(), 0);
}

#[test]
fn linear_window_matches_soc_decode_layout() {
    // SBUF linear = partition × 256 KiB + offset (docs/references/wiki.md §A.2).
    let mut sbuf = Sbuf::new();
    Bytes::<u64>::write(&mut sbuf, 0x3_7ffe + 17 * 0x4_0000, b"xy").unwrap();
    let typed = SbufAddr {
        partition: 17,
        offset: 0x3_7ffe,
    };
    assert_eq!(sbuf.read_vec(typed, 2).unwrap(), b"xy");

    // PSUM linear = partition × 32 KiB + offset; bank = offset / 2 KiB.
    let mut psum = Psum::new();
    let addr = PsumAddr {
        partition: 9,
        offset: 7 * 2048 + 8,
    };
    assert_eq!(addr.bank(), 7);
    psum.write_u32_le(addr, 0xcafe_f00d).unwrap();
    assert_eq!(
        Bytes::<u64>::read_u32_le(&psum, 9 * 0x8000 + 7 * 2048 + 8).unwrap(),
        0xcafe_f00d
    );
    assert!(matches!(
        Bytes::<u64>::read_vec(&psum, 4 << 20, 1),
        Err(MemFault::OutOfRange { .. })
    ));
}

#[test]
fn hbm_to_sbuf_copy_through_resolved_backing_offsets() {
    let mut hbm = SparseMemory::new(24 << 30);
    hbm.write(0x1000, &[0xee; 512]).unwrap();
    let mut sbuf = Sbuf::new();
    let window_offset = 40 * u64::from(SBUF_PARTITION_STRIDE_BYTES) + 0x200;
    let dst = sbuf.as_partitioned().resolve(window_offset, 512).unwrap();
    SparseMemory::copy_between(
        &hbm,
        0x1000,
        sbuf.as_partitioned_mut().backing_mut(),
        dst,
        512,
    )
    .unwrap();
    let typed = SbufAddr {
        partition: 40,
        offset: 0x200,
    };
    assert_eq!(sbuf.read_vec(typed, 512).unwrap(), vec![0xee; 512]);
    // A run that would leave the partition cannot be resolved.
    let end_of_partition =
        40 * u64::from(SBUF_PARTITION_STRIDE_BYTES) + u64::from(SBUF_PARTITION_BYTES) - 256;
    assert!(matches!(
        sbuf.as_partitioned().resolve(end_of_partition, 512),
        Err(MemFault::Hole { .. })
    ));
}

#[test]
fn psum_rejects_untyped_writes_and_changes_nothing() {
    let mut psum = Psum::new();
    let addr = PsumAddr {
        partition: 0,
        offset: 6,
    };
    assert_eq!(
        psum.write(addr, &[1; 4]),
        Err(MemFault::Misaligned {
            offset: 6,
            len: 4,
            align_bytes: 4
        })
    );
    assert_eq!(
        psum.check_psum_write(addr, 4).map(drop),
        psum.write(addr, &[1; 4])
    );
    assert_eq!(psum.as_partitioned().backing().allocated_pages(), 0);
    // The raw partitioned store has no typing rule (for tests and dumps).
    psum.as_partitioned_mut().write(6, &[1; 3]).unwrap();
    assert_eq!(psum.read_vec(addr, 3).unwrap(), [1, 1, 1]);
    let raw: &PartitionedMemory = psum.as_partitioned();
    assert_eq!(raw.bank_bytes(), Some(2048));
}
