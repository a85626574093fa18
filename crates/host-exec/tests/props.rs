//! Allocator invariants with the real driver underneath (issue 5): random
//! alloc / free / acquire sequences through dmem → ioctl bus → kernel
//! driver never overlap live allocations, the DML counters and the
//! driver's accounting always equal the sum of the live allocations, and
//! every handle is freed exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dmem::{AllocatorKind, Dmem, DmemConfig, DmemId, MemLocation, UsageType};
use ioctl_bus::InProcess;
use kdriver::{KdriverConfig, KernelDriver};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        size: u64,
        host: bool,
        nc: u32,
        usage: usize,
        align_pow: u32,
    },
    Free(usize),
    Acquire(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..3_000_000, any::<bool>(), 0u32..8, 0usize..22, 0u32..4).prop_map(
            |(size, host, nc, usage, align_pow)| Op::Alloc { size, host, nc, usage, align_pow }
        ),
        3 => any::<usize>().prop_map(Op::Free),
        1 => any::<usize>().prop_map(Op::Acquire),
    ]
}

fn driver(d: &mut Dmem) -> &mut KernelDriver {
    d.ndl_mut()
        .transport_mut()
        .local_driver()
        .unwrap()
        .downcast_mut::<KernelDriver>()
        .unwrap()
}

const PAGE: u64 = 4096;

fn round(n: u64) -> u64 {
    n.div_ceil(PAGE) * PAGE
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn allocations_stay_disjoint_and_accounted(ops in proptest::collection::vec(op(), 1..60)) {
        let drv = KernelDriver::trn2(KdriverConfig::default()).unwrap();
        let mut d = Dmem::open(Box::new(InProcess::new(drv)), DmemConfig::default()).unwrap();
        let allocs: Vec<_> = (0..8)
            .map(|nc| d.dmem_allocator_create(AllocatorKind::Global, nc).unwrap())
            .collect();
        let base_device = driver(&mut d).memory().accounting().device_mem_bytes;
        let base_host = driver(&mut d).memory().accounting().host_mem_bytes;
        let base_handles = driver(&mut d).memory().live_handles().count();
        // Live ids with their reference counts as the test expects them.
        let mut live: Vec<(DmemId, u64)> = Vec::new();
        for o in ops {
            match o {
                Op::Alloc { size, host, nc, usage, align_pow } => {
                    let loc = if host { MemLocation::HostDram } else { MemLocation::TongaDram };
                    let usage = UsageType::ALL[usage];
                    let align = if align_pow == 0 || host { 0 } else { 0x1000 << (4 * align_pow) };
                    let r = if align == 0 {
                        d.dmem_alloc(allocs[nc as usize], size, loc, nc / 2, None, usage, None)
                    } else {
                        d.dmem_alloc_aligned(allocs[nc as usize], size, loc, nc / 2, None, usage, None, align)
                    };
                    match r {
                        Ok(id) => {
                            let m = d.get(id).unwrap();
                            if align != 0 {
                                prop_assert_eq!((m.pa + m.align_offset_bytes) % align, 0);
                            }
                            live.push((id, 1));
                        }
                        // Usage invalid for host memory is refused, nothing else.
                        Err(s) => prop_assert!(host, "device alloc failed: {s}"),
                    }
                }
                Op::Free(k) if !live.is_empty() => {
                    let i = k % live.len();
                    let (id, rc) = live[i];
                    d.dmem_free(id).unwrap();
                    if rc == 1 {
                        live.remove(i);
                        prop_assert!(d.get(id).is_none());
                        // A second free is a diagnosed double free.
                        prop_assert!(d.dmem_free(id).is_err());
                    } else {
                        live[i].1 -= 1;
                    }
                }
                Op::Acquire(k) if !live.is_empty() => {
                    let i = k % live.len();
                    d.dmem_acquire_reference(live[i].0).unwrap();
                    live[i].1 += 1;
                }
                _ => {}
            }
            // Disjoint physical ranges.
            let mut ranges: Vec<(u64, u64)> = live
                .iter()
                .map(|(id, _)| {
                    let m = d.get(*id).unwrap();
                    (m.pa, m.pa + m.allocated_size_bytes)
                })
                .collect();
            ranges.sort_unstable();
            for w in ranges.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "overlap {:x?}", w);
            }
            // DML per channel = live device allocations.
            let mut per_channel = [0u64; 4];
            let (mut dev_bytes, mut host_bytes) = (0u64, 0u64);
            for (id, _) in &live {
                let m = d.get(*id).unwrap();
                if m.mem_type == MemLocation::TongaDram {
                    per_channel[m.tdram_channel as usize] += m.allocated_size_bytes;
                    dev_bytes += round(m.allocated_size_bytes);
                } else {
                    host_bytes += round(m.allocated_size_bytes);
                }
            }
            for (c, want) in per_channel.iter().enumerate() {
                prop_assert_eq!(d.logger().memory_usage(c as u32), Some(*want));
            }
            // The driver's accounting = the same allocations, page-rounded.
            let acct = driver(&mut d).memory().accounting().clone();
            prop_assert_eq!(acct.device_mem_bytes - base_device, dev_bytes);
            prop_assert_eq!(acct.host_mem_bytes - base_host, host_bytes);
        }
        // Free everything exactly once (respecting references): back to the
        // start, and only the runtime's own handles remain in the driver.
        for (id, rc) in live.drain(..) {
            for _ in 0..rc {
                d.dmem_free(id).unwrap();
            }
        }
        let a = driver(&mut d).memory().accounting().clone();
        prop_assert_eq!(a.device_mem_bytes, base_device);
        prop_assert_eq!(a.host_mem_bytes, base_host);
        prop_assert_eq!(driver(&mut d).memory().live_handles().count(), base_handles);
        prop_assert_eq!(driver(&mut d).stats().errors.get("EINVAL"), None, "no free of a dead handle reached the driver");
    }
}
