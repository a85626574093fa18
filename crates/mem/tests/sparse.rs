//! Integration tests: HBM stacks and the host window as sparse memories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mem::{Bytes, MemFault, PAGE_BYTES, SparseMemory};

const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

#[test]
fn four_hbm_stacks_of_24_gib_cost_only_the_pages_written() {
    // 4 × 24 GiB active HBM (docs/references/design.md §2, docs/references/driver.md §6).
    let mut stacks: Vec<SparseMemory> = (0..4).map(|_| SparseMemory::new(24 * GIB)).collect();
    let total: u64 = stacks.iter().map(SparseMemory::size_bytes).sum();
    assert_eq!(total, 96 * GIB);
    for (i, hbm) in stacks.iter_mut().enumerate() {
        let last = hbm.size_bytes() - 1;
        hbm.write(last, &[0xa0 + i as u8]).unwrap();
        hbm.write_u32_le(0, 0x1234_5678 + i as u32).unwrap();
    }
    for (i, hbm) in stacks.iter().enumerate() {
        assert_eq!(hbm.read_vec(24 * GIB - 1, 1).unwrap(), [0xa0 + i as u8]);
        assert_eq!(hbm.read_u32_le(0).unwrap(), 0x1234_5678 + i as u32);
        assert_eq!(hbm.allocated_pages(), 2);
        // Reading far from the written pages neither allocates nor sees data.
        assert_eq!(hbm.read_vec(12 * GIB, 16).unwrap(), [0; 16]);
        assert_eq!(hbm.allocated_pages(), 2);
        assert_eq!(
            hbm.read_vec(24 * GIB, 1),
            Err(MemFault::OutOfRange {
                offset: 24 * GIB,
                len: 1,
                size: 24 * GIB
            })
        );
    }
    let allocated: u64 = stacks.iter().map(SparseMemory::allocated_bytes).sum();
    assert_eq!(allocated, 8 * PAGE_BYTES as u64);
}

#[test]
fn host_window_of_64_tib() {
    let mut host = SparseMemory::new(64 * TIB);
    let pa = 0x3f_ffff_fff0u64 * 16; // high, unaligned to pages
    let data: Vec<u8> = (0..=255).collect();
    host.write(pa, &data).unwrap();
    assert_eq!(host.read_vec(pa, 256).unwrap(), data);
    assert_eq!(host.allocated_pages(), 1);
    assert!(matches!(
        host.write(64 * TIB - 1, &[1, 2]),
        Err(MemFault::OutOfRange { .. })
    ));
}

#[test]
fn copy_between_hbm_and_host_moves_bytes() {
    let mut hbm = SparseMemory::new(24 * GIB);
    let mut host = SparseMemory::new(64 * TIB);
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + 1) as u8).collect();
    host.write(0x1000_0123, &payload).unwrap();
    SparseMemory::copy_between(
        &host,
        0x1000_0123,
        &mut hbm,
        5 * GIB - 77,
        payload.len() as u64,
    )
    .unwrap();
    assert_eq!(hbm.read_vec(5 * GIB - 77, payload.len()).unwrap(), payload);
    // Source out of range: nothing is written to the destination.
    let before = hbm.allocated_pages();
    assert_eq!(
        SparseMemory::copy_between(&hbm, 24 * GIB - 4, &mut host, 0, 8),
        Err(MemFault::OutOfRange {
            offset: 24 * GIB - 4,
            len: 8,
            size: 24 * GIB
        })
    );
    assert_eq!(
        SparseMemory::copy_between(&host, 0, &mut hbm, u64::MAX, 8),
        Err(MemFault::OutOfRange {
            offset: u64::MAX,
            len: 8,
            size: 24 * GIB
        })
    );
    assert_eq!(hbm.allocated_pages(), before);
}

#[test]
fn fill_of_a_whole_stack_with_zero_allocates_nothing() {
    let mut hbm = SparseMemory::new(24 * GIB);
    hbm.fill_range(0, 24 * GIB, 0).unwrap();
    assert_eq!(hbm.allocated_pages(), 0);
    hbm.fill(GIB, 3 * PAGE_BYTES, 0xff).unwrap();
    assert_eq!(hbm.allocated_pages(), 3);
    hbm.fill_range(0, 24 * GIB, 0).unwrap();
    assert_eq!(hbm.allocated_pages(), 0);
}

#[test]
fn pages_dump_is_in_address_order() {
    let mut mem = SparseMemory::new(GIB);
    for offset in [900 * PAGE_BYTES as u64, 3, 40 * PAGE_BYTES as u64 + 5] {
        mem.write(offset, &[9]).unwrap();
    }
    let offsets: Vec<u64> = mem.pages().map(|(offset, _)| offset).collect();
    assert_eq!(
        offsets,
        [0, 40 * PAGE_BYTES as u64, 900 * PAGE_BYTES as u64]
    );
}
