//! Property tests: RW registers of one queue block behave like a model map,
//! and no memory access, whatever its address and length, panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;

use common::{changed, device};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use soc::{BusFault, DeviceEvent};

const M2S_Q3: u64 = 0x10_0200_0000 + 0x1000 + 3 * 0x1000;

/// RW registers of `udma_m2s_q`: (offset, name, reset, writable bits), from
/// csr-maps/udma_m2s_q.json (bits outside the fields are reserved).
const REGS: [(u64, &str, u32, u32); 7] = [
    (0x20, "Q_CFG", 0x0300_0000, 0xff13_ffff),
    (0x28, "TDRBP_LOW", 0, 0xffff_ffc0),
    (0x2c, "TDRBP_HIGH", 0, 0xffff_ffff),
    (0x30, "TDRL", 0, 0x00ff_ffff),
    (0x60, "RLIMIT_CFG_1S", 0x00ff_ffff, 0x03ff_ffff),
    (0x74, "RLIMIT_MASK", 0x7, 0xf),
    (0xa0, "COMP_CFG", 0, 0x3),
];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, u32),
    Read(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..REGS.len(), any::<u32>()).prop_map(|(r, v)| Op::Write(r, v)),
        (
            0..REGS.len(),
            prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()]
        )
            .prop_map(|(r, v)| Op::Write(r, v)),
        (0..REGS.len()).prop_map(Op::Read),
    ]
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn rw_registers_follow_the_model() {
    // One device for every case (building one takes ~15 ms); each case
    // starts by writing the reset values back.
    let dev = RefCell::new(device());
    runner(256)
        .run(&proptest::collection::vec(op(), 1..40), |ops| {
            let mut d = dev.borrow_mut();
            for &(off, _, reset, _) in &REGS {
                d.write32(M2S_Q3 + off, reset).unwrap();
            }
            d.take_events();
            prop_assert!(changed(&d, "eng0.m2s.q3").is_empty());
            let mut model: Vec<u32> = REGS.iter().map(|r| r.2).collect();
            for op in &ops {
                match *op {
                    Op::Write(i, v) => {
                        let (off, name, _, mask) = REGS[i];
                        let w = d.write32(M2S_Q3 + off, v).unwrap().unwrap();
                        prop_assert_eq!(&w.register, name);
                        prop_assert_eq!(w.old, model[i]);
                        model[i] = v & mask;
                        prop_assert_eq!(w.new, model[i]);
                        prop_assert_eq!(w.ignored, v & !mask);
                        prop_assert!(!w.read_only);
                        let events = d.take_events();
                        if v & !mask == 0 {
                            prop_assert!(events.is_empty(), "{:?}", events);
                        } else {
                            let is_ignored =
                                matches!(events.as_slice(), [DeviceEvent::IgnoredWrite { .. }]);
                            prop_assert!(is_ignored, "{:?}", events);
                        }
                    }
                    Op::Read(i) => {
                        prop_assert_eq!(d.read32(M2S_Q3 + REGS[i].0).unwrap(), model[i]);
                    }
                }
            }
            // Every register agrees at the end, and the snapshot lists
            // exactly those away from reset.
            let mut want = BTreeMap::new();
            for (i, &(off, name, reset, _)) in REGS.iter().enumerate() {
                prop_assert_eq!(d.read32(M2S_Q3 + off).unwrap(), model[i], "{}", name);
                if model[i] != reset {
                    want.insert(name.to_string(), model[i]);
                }
            }
            let got = changed(&d, "eng0.m2s.q3");
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
}

/// Addresses near the edges of interesting regions, plus anything at all.
fn address() -> impl Strategy<Value = u64> {
    let edges: Vec<u64> = vec![
        0,
        24 << 30,         // hbm0 end
        0x10_0000_0000,   // hbm0 window end
        0x10_0200_1000,   // eng0.m2s.q0
        0x20_0000_0000,   // tpb0.sbuf
        0x20_0003_8000,   // sbuf p0 pad
        0x20_0004_0000,   // sbuf p1
        0x20_0200_0000,   // sbuf end
        0x28_0000_0000,   // reserved sbuf
        0x28_0200_0000,   // psum
        0x28_0200_4000,   // psum p0 pad
        0x28_0240_0000,   // psum end
        0x28_0270_1800,   // sem inc
        0x28_0289_0000,   // q7 dataram0
        0x28_028a_0000,   // past its 64 KiB
        0x28_0318_0000,   // q7 dram0
        0x8045_ffff_ff00, // hbm3 end
        1 << 46,          // host
        (1 << 47) - 1,    // host end
        u64::MAX - 64,
    ];
    prop_oneof![
        3 => (proptest::sample::select(edges), -256i64..256)
            .prop_map(|(e, d)| e.wrapping_add_signed(d)),
        1 => any::<u64>(),
    ]
}

#[derive(Clone, Debug)]
enum MemOp {
    Read(u64, usize),
    Write(u64, usize, u8),
    Fill(u64, u64, u8),
    Read32(u64),
    Write32(u64, u32),
}

fn mem_op() -> impl Strategy<Value = MemOp> {
    let len = prop_oneof![0usize..16, 0usize..0x2_0000];
    prop_oneof![
        (address(), len.clone()).prop_map(|(a, l)| MemOp::Read(a, l)),
        (address(), len, any::<u8>()).prop_map(|(a, l, b)| MemOp::Write(a, l, b)),
        // Lengths that fit, or that are too long for any region (a huge
        // fill that succeeded would allocate terabytes).
        (
            address(),
            prop_oneof![0u64..0x2_0000, (1u64 << 47)..=u64::MAX],
            any::<u8>()
        )
            .prop_map(|(a, l, b)| MemOp::Fill(a, l, b)),
        address().prop_map(MemOp::Read32),
        (address(), any::<u32>()).prop_map(|(a, v)| MemOp::Write32(a, v)),
    ]
}

#[test]
fn memory_accesses_never_panic() {
    let dev = RefCell::new(device());
    runner(512)
        .run(&mem_op(), |op| {
            let mut d = dev.borrow_mut();
            let before = d.allocated_bytes();
            let refused = match op {
                MemOp::Read(a, l) => {
                    let mut buf = vec![0u8; l];
                    d.read_bytes(a, &mut buf).is_err()
                }
                MemOp::Write(a, l, b) => {
                    let r = d.write_bytes(a, &vec![b | 1; l]);
                    if r.is_ok() && l > 0 {
                        // What was written reads back.
                        let mut buf = vec![0u8; l];
                        d.read_bytes(a, &mut buf).unwrap();
                        prop_assert!(buf.iter().all(|&x| x == b | 1));
                    }
                    r.is_err()
                }
                MemOp::Fill(a, l, b) => d.fill(a, l, b).is_err(),
                MemOp::Read32(a) => {
                    let _ = soc::describe(&d, a);
                    d.read32(a).is_err()
                }
                MemOp::Write32(a, v) => match d.write32(a, v) {
                    Err(
                        BusFault::Unmapped { .. }
                        | BusFault::Hole { .. }
                        | BusFault::CrossesBoundary { .. }
                        | BusFault::Memory { .. },
                    ) => true,
                    Err(_) | Ok(_) => false,
                },
            };
            // A refused memory access allocates nothing.
            if refused {
                prop_assert_eq!(d.allocated_bytes(), before);
            }
            Ok(())
        })
        .unwrap();
}

/// `(base, size_bytes)` of the regions the partition properties probe:
/// SBUF and PSUM of several cores and an HBM stack.
fn probe_regions(map: &soc_map::SocMap) -> Vec<(u64, u64)> {
    [
        "tpb0.sbuf",
        "tpb0.psum",
        "tpb5.sbuf",
        "tpb7.psum",
        "hbm0",
        "tpb1.sbuf",
    ]
    .iter()
    .map(|n| {
        let r = map.region(map.by_name(n).unwrap());
        (r.base, r.size_bytes)
    })
    .collect()
}

proptest! {
    /// `Device::partition_of` (which caches the last SBUF/PSUM region it
    /// found) answers as the map's decode does, whatever the order of the
    /// questions: SBUF and PSUM of several cores, their pads, and addresses
    /// outside partitioned memory.
    #[test]
    fn partition_of_matches_the_decode(picks in prop::collection::vec((0usize..6, any::<u64>()), 1..64)) {
        let dev = device();
        let map = dev.map();
        let regions = probe_regions(map);
        for (which, off) in picks {
            let (base, size) = regions[which];
            // In the region, or just past its end.
            let addr = base + off % (size + 0x1000);
            let d = map.decode(addr);
            let want = d.region.and_then(|id| {
                let stride = map.region(id).partitions.as_ref()?.stride_bytes;
                Some((d.partition?, stride))
            });
            prop_assert_eq!(dev.partition_of(addr), want, "{:#x}", addr);
        }
    }

    /// `Device::partition_span` (what the firmware asks once per word
    /// instead of `partition_of` per descriptor pair): its partition is
    /// `partition_of`'s, and every address of the span it returns — the
    /// first and last byte, partition edges, pads — is in the partition
    /// the span's base and stride give, as `partition_of` says.
    #[test]
    fn partition_spans_agree_with_partition_of(
        picks in prop::collection::vec((0usize..6, any::<u64>(), any::<u64>()), 1..32),
    ) {
        let dev = device();
        let map = dev.map();
        let regions = probe_regions(map);
        for (which, off, probe) in picks {
            let (base, size) = regions[which];
            let addr = base + off % (size + 0x1000);
            let (p, span) = dev.partition_span(addr);
            prop_assert_eq!(p, dev.partition_of(addr), "{:#x}", addr);
            let Some((sbase, slen, stride)) = span else { continue };
            prop_assert!(p.is_some() && stride > 0 && addr >= sbase && addr - sbase < slen);
            let edge = probe % stride;
            for a in [sbase, sbase + slen - 1, sbase + probe % slen, sbase + (probe % slen) / stride * stride + edge.min(stride - 1)] {
                let a = a.min(sbase + slen - 1);
                let want = dev.partition_of(a).map(|(q, _)| q);
                prop_assert_eq!(Some(((a - sbase) / stride) as u32), want, "{:#x} in the span of {:#x}", a, addr);
            }
        }
    }
}
