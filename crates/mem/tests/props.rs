//! Property tests: a model-checked sparse memory and the SBUF/PSUM fault
//! rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mem::{Bytes, MemFault, PAGE_BYTES, PatternFn, Psum, Sbuf, SparseMemory};
use proptest::prelude::*;
use soc_map::{PsumAddr, SbufAddr};

/// Three pages and a bit, so accesses cross page boundaries often.
const SIZE: u64 = 3 * PAGE_BYTES as u64 + 1000;

#[derive(Clone, Debug)]
enum Op {
    Write {
        offset: u64,
        data: Vec<u8>,
    },
    Fill {
        offset: u64,
        len: u64,
        byte: u8,
    },
    Copy {
        src: u64,
        dst: u64,
        len: u64,
    },
    /// A pattern fill: byte `k` of the fill is `seed + k` (mod 256), so no
    /// whole page of it is zero.
    Pattern {
        offset: u64,
        len: u64,
        seed: u8,
    },
}

/// The bytes of [`Op::Pattern`] from memory offset `at` onward.
fn pattern_bytes(offset: u64, seed: u8, at: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = seed.wrapping_add((at - offset + i as u64) as u8);
    }
}

fn pattern_fn(offset: u64, seed: u8) -> PatternFn {
    Arc::new(move |at: u64, buf: &mut [u8]| pattern_bytes(offset, seed, at, buf))
}

/// Offsets clustered around page boundaries, plus anywhere.
fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0..4u64, -300i64..300).prop_map(|(page, delta)| {
            (page * PAGE_BYTES as u64)
                .saturating_add_signed(delta)
                .min(SIZE)
        }),
        0..=SIZE,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (offset(), prop::collection::vec(any::<u8>(), 0..3000))
            .prop_map(|(offset, data)| Op::Write { offset, data }),
        (
            offset(),
            0..2 * PAGE_BYTES as u64,
            prop_oneof![Just(0u8), any::<u8>()]
        )
            .prop_map(|(offset, len, byte)| Op::Fill { offset, len, byte }),
        (offset(), offset(), 0..2 * PAGE_BYTES as u64).prop_map(|(src, dst, len)| Op::Copy {
            src,
            dst,
            len
        }),
        (offset(), 0..3 * PAGE_BYTES as u64, any::<u8>())
            .prop_map(|(offset, len, seed)| Op::Pattern { offset, len, seed }),
    ]
}

/// Applies `op` to a flat reference model; `Err(())` where the real memory
/// must fault.
fn apply_model(model: &mut [u8], op: &Op) -> Result<(), ()> {
    let in_range = |off: u64, len: u64| off.checked_add(len).is_some_and(|end| end <= SIZE);
    match op {
        Op::Write { offset, data } => {
            if !in_range(*offset, data.len() as u64) {
                return Err(());
            }
            let at = *offset as usize;
            model[at..at + data.len()].copy_from_slice(data);
        }
        Op::Fill { offset, len, byte } => {
            if !in_range(*offset, *len) {
                return Err(());
            }
            model[*offset as usize..(*offset + *len) as usize].fill(*byte);
        }
        Op::Copy { src, dst, len } => {
            if !in_range(*src, *len) || !in_range(*dst, *len) {
                return Err(());
            }
            let s = *src as usize;
            model.copy_within(s..s + *len as usize, *dst as usize);
        }
        Op::Pattern { offset, len, seed } => {
            if !in_range(*offset, *len) {
                return Err(());
            }
            let at = *offset as usize;
            pattern_bytes(*offset, *seed, *offset, &mut model[at..at + *len as usize]);
        }
    }
    Ok(())
}

fn apply(mem: &mut SparseMemory, op: &Op) -> Result<(), MemFault> {
    match op {
        Op::Write { offset, data } => mem.write(*offset, data),
        Op::Fill { offset, len, byte } => mem.fill_range(*offset, *len, *byte),
        Op::Copy { src, dst, len } => mem.copy(*src, *dst, *len),
        Op::Pattern { offset, len, seed } => {
            mem.fill_pattern(*offset, *len, &pattern_fn(*offset, *seed))
        }
    }
}

/// [`apply`], but a pattern fill writes its bytes at once.
fn apply_eager(mem: &mut SparseMemory, op: &Op) -> Result<(), MemFault> {
    match op {
        Op::Pattern { offset, len, seed } => {
            let n = usize::try_from(*len).unwrap();
            let mut bytes = vec![0u8; n];
            pattern_bytes(*offset, *seed, *offset, &mut bytes);
            mem.write(*offset, &bytes)
        }
        op => apply(mem, op),
    }
}

/// Every allocated page and its bytes, in address order.
fn page_list(mem: &SparseMemory) -> Vec<(u64, Vec<u8>)> {
    mem.pages().map(|(at, b)| (at, b.to_vec())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn sparse_memory_matches_a_flat_model(ops in prop::collection::vec(op(), 1..24)) {
        let mut mem = SparseMemory::new(SIZE);
        let mut model = vec![0u8; SIZE as usize];
        for op in &ops {
            let expected = apply_model(&mut model, op);
            let got = apply(&mut mem, op);
            prop_assert_eq!(got.is_ok(), expected.is_ok(), "{:?}", op);
            if let Err(fault) = got {
                let is_out_of_range = matches!(fault, MemFault::OutOfRange { size: SIZE, .. });
                prop_assert!(is_out_of_range, "{}", fault);
            }
        }
        prop_assert_eq!(mem.read_vec(0, SIZE as usize).unwrap(), model);
        // No page is held beyond those covering non-zero data plus
        // partially overwritten ones; at least, never more than exist.
        prop_assert!(mem.allocated_pages() <= 4);
    }

    /// Pattern pages (generated when needed) against the same bytes
    /// written at once: the same reads, pages and page count, through
    /// snapshots taken between operations and writes on either side.
    #[test]
    fn pattern_fill_is_the_written_bytes(
        ops in prop::collection::vec(op(), 1..16),
        snap_at in 0..16usize,
        probe in prop::collection::vec((offset(), 0..2 * PAGE_BYTES), 0..6),
    ) {
        let mut lazy = SparseMemory::new(SIZE);
        let mut eager = SparseMemory::new(SIZE);
        let mut snaps = None;
        for (i, op) in ops.iter().enumerate() {
            if i == snap_at {
                snaps = Some((lazy.snapshot(), eager.snapshot()));
            }
            let got = apply(&mut lazy, op);
            let want = apply_eager(&mut eager, op);
            prop_assert_eq!(got.is_ok(), want.is_ok(), "{:?}", op);
            // Reads in between (before any page is generated by `pages`).
            for &(at, len) in &probe {
                let len = len.min((SIZE - at.min(SIZE)) as usize);
                prop_assert_eq!(lazy.read_vec(at, len).ok(), eager.read_vec(at, len).ok());
            }
        }
        prop_assert_eq!(lazy.allocated_pages(), eager.allocated_pages());
        prop_assert_eq!(lazy.read_vec(0, SIZE as usize).unwrap(), eager.read_vec(0, SIZE as usize).unwrap());
        prop_assert_eq!(page_list(&lazy), page_list(&eager));
        if let Some((snap_lazy, snap_eager)) = snaps {
            prop_assert_eq!(snap_lazy.allocated_pages(), snap_eager.allocated_pages());
            prop_assert_eq!(page_list(&snap_lazy), page_list(&snap_eager));
        }
    }

    #[test]
    fn write_then_read_round_trips(
        offset in 0..(1u64 << 34),
        data in prop::collection::vec(any::<u8>(), 0..(3 * PAGE_BYTES)),
    ) {
        let mut mem = SparseMemory::new(1 << 35);
        mem.write(offset, &data).unwrap();
        prop_assert_eq!(mem.read_vec(offset, data.len()).unwrap(), data.clone());
        // Neighbouring never-written bytes read zero.
        if offset > 0 {
            prop_assert_eq!(mem.read_vec(offset - 1, 1).unwrap(), vec![0]);
        }
        prop_assert_eq!(mem.read_vec(offset + data.len() as u64, 1).unwrap(), vec![0]);
        prop_assert!(mem.allocated_pages() <= data.len() / PAGE_BYTES + 2);
    }

    #[test]
    fn never_written_memory_reads_zero(offset in 0..(24u64 << 30), len in 0..200_000usize) {
        let mem = SparseMemory::new(24 << 30);
        let len = len.min(((24u64 << 30) - offset) as usize);
        prop_assert!(mem.read_vec(offset, len).unwrap().iter().all(|&b| b == 0));
        prop_assert_eq!(mem.allocated_pages(), 0);
    }

    #[test]
    fn out_of_range_never_modifies(
        offset in prop_oneof![any::<u64>(), 0..SIZE + 8192],
        len in prop_oneof![any::<u64>(), 0..8192u64],
        byte in 1..=255u8,
        inside in 0..SIZE,
    ) {
        let mut mem = SparseMemory::new(SIZE);
        mem.fill_range(0, SIZE, 0x5a).unwrap();
        mem.write(inside, &[0]).unwrap();
        let before: Vec<u8> = mem.read_vec(0, SIZE as usize).unwrap();
        let fits = offset.checked_add(len).is_some_and(|end| end <= SIZE);
        prop_assume!(!fits);
        let fault = MemFault::OutOfRange { offset, len, size: SIZE };
        prop_assert_eq!(mem.fill_range(offset, len, byte), Err(fault));
        prop_assert!(mem.copy(inside, offset, len).is_err());
        prop_assert!(mem.copy(offset, inside, len).is_err());
        let other = SparseMemory::new(u64::MAX);
        prop_assert!(SparseMemory::copy_between(&other, 0, &mut mem, offset, len).is_err());
        if let Ok(short) = usize::try_from(len)
            && short <= 8192
        {
            prop_assert_eq!(mem.write(offset, &vec![byte; short]), Err(fault));
        }
        prop_assert_eq!(mem.read_vec(0, SIZE as usize).unwrap(), before);
    }

    #[test]
    fn sbuf_access_faults_exactly_outside_populated_partitions(
        window_offset in 0..(33u64 << 20),
        len in 1..600_000u64,
    ) {
        const STRIDE: u64 = 256 << 10;
        const POPULATED: u64 = 224 << 10;
        const WINDOW: u64 = 128 * STRIDE;
        let last = window_offset + len - 1;
        let expected = if last >= WINDOW {
            Err(MemFault::OutOfRange { offset: window_offset, len, size: WINDOW })
        } else if window_offset / STRIDE != last / STRIDE
            || window_offset % STRIDE >= POPULATED
            || last % STRIDE >= POPULATED
        {
            Err(MemFault::Hole { offset: window_offset, len })
        } else {
            Ok(())
        };
        let mut sbuf = Sbuf::new();
        let data = vec![0xc3; len as usize];
        prop_assert_eq!(Bytes::<u64>::write(&mut sbuf, window_offset, &data), expected);
        match expected {
            Ok(()) => {
                prop_assert_eq!(Bytes::<u64>::read_vec(&sbuf, window_offset, len as usize).unwrap(), data);
                let typed = SbufAddr {
                    partition: (window_offset / STRIDE) as u32,
                    offset: (window_offset % STRIDE) as u32,
                };
                // A 4-byte read succeeds wherever 4 populated bytes start,
                // whatever length was written there.
                let readable = window_offset % STRIDE + 4 <= POPULATED;
                prop_assert_eq!(sbuf.read_u32_le(typed).ok().map(|_| ()), readable.then_some(()));
            }
            Err(_) => prop_assert_eq!(sbuf.as_partitioned().backing().allocated_pages(), 0),
        }
    }

    #[test]
    fn sbuf_pad_accesses_fault(
        partition in 0..128u32,
        offset in (224u32 << 10)..(256 << 10),
        len in 0..4096usize,
    ) {
        let mut sbuf = Sbuf::new();
        let addr = SbufAddr { partition, offset };
        let linear = u64::from(partition) * (256 << 10) + u64::from(offset);
        let hole = MemFault::Hole { offset: linear, len: len as u64 };
        // Zero-length accesses at exactly the populated end are allowed.
        prop_assume!(len > 0 || offset > 224 << 10);
        prop_assert_eq!(sbuf.write(addr, &vec![1; len]), Err(hole));
        prop_assert_eq!(sbuf.read_vec(addr, len), Err(hole));
        prop_assert_eq!(sbuf.fill(addr, len, 1), Err(hole));
        prop_assert_eq!(sbuf.as_partitioned().backing().allocated_pages(), 0);
        // A run from the populated part into the pad faults too.
        let start = SbufAddr { partition, offset: (224 << 10) - 1 };
        let crossing = sbuf.write(start, &[1, 2]);
        let is_hole = matches!(crossing, Err(MemFault::Hole { .. }));
        prop_assert!(is_hole, "{:?}", crossing);
    }

    #[test]
    fn psum_write_accepted_iff_placed_and_four_byte_typed(
        partition in 0..130u32,
        offset in 0..(33u32 << 10),
        len in 0..64usize,
    ) {
        let mut psum = Psum::new();
        let addr = PsumAddr { partition, offset };
        let linear = u64::from(partition) * (32 << 10) + u64::from(offset);
        let expected = if partition >= 128 {
            Err(MemFault::OutOfRange { offset: linear, len: len as u64, size: 4 << 20 })
        } else if u64::from(offset) + len as u64 > 16 << 10 {
            Err(MemFault::Hole { offset: linear, len: len as u64 })
        } else if offset % 4 != 0 || len % 4 != 0 {
            Err(MemFault::Misaligned { offset: linear, len: len as u64, align_bytes: 4 })
        } else {
            Ok(())
        };
        let data: Vec<u8> = (1..=len as u8).collect();
        prop_assert_eq!(psum.write(addr, &data), expected);
        // Past the stride, the linear offset names another partition.
        if offset < 32 << 10 {
            prop_assert_eq!(Bytes::<u64>::write(&mut psum, linear, &data), expected);
        }
        if expected.is_ok() {
            prop_assert_eq!(psum.read_vec(addr, len).unwrap(), data);
        }
    }
}
