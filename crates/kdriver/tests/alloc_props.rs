//! Property test of MEM_ALLOC_V2MT64 / MEM_FREE through the ioctl bus
//! (docs/references/driver.md §1.6, §5.2–5.5): random device and host requests (channel,
//! NC, size, alignment, category, including invalid ones) and frees of
//! live, stale and never-issued handles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Host, errno};
use ioctl_abi::Errno;
use ioctl_abi::enums::MemAllocCategory;
use ioctl_bus::InProcess;
use kdriver::mem::MemChunk;
use kdriver::{KdriverConfig, KernelDriver};
use proptest::prelude::*;

type H = Host<InProcess<KernelDriver>>;

const ALIGNS: [u64; 6] = [0, 4096, 8192, 65_536, 1 << 20, 1 << 31];

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        host: bool,
        channel: u32,
        nc: u32,
        size: u64,
        align: u64,
        category: u32,
    },
    /// Free the `i`-th live handle.
    FreeLive(usize),
    /// Free the `i`-th freed (not yet reused) handle: EINVAL.
    FreeStale(usize),
    /// Free a handle never issued (0 or past the highest): EINVAL.
    FreeUnknown(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let size = prop_oneof![
        1u64..=8192,
        8193u64..=(4 << 20),
        Just(512 << 10),
        Just((512 << 10) + 1),
        Just(64 << 20),
    ];
    let alloc = (
        any::<bool>(),
        0u32..5,
        0u32..9,
        size,
        prop_oneof![3 => Just(0usize), 2 => 0usize..ALIGNS.len()],
        0u32..22,
    )
        .prop_map(|(host, channel, nc, size, a, category)| Op::Alloc {
            host,
            channel,
            nc,
            size,
            align: ALIGNS[a],
            category,
        });
    prop_oneof![
        4 => alloc,
        3 => any::<prop::sample::Index>().prop_map(|i| Op::FreeLive(i.index(1 << 16))),
        1 => any::<prop::sample::Index>().prop_map(|i| Op::FreeStale(i.index(1 << 16))),
        1 => prop_oneof![Just(0u64), 1000u64..2000].prop_map(Op::FreeUnknown),
    ]
}

/// Contiguous scratchpad (category 19) on a device request: a fixed
/// offset below the previous scratchpad pages, `align` ignored (§5.1).
fn scratch(host: bool, category: u32) -> bool {
    !host && category == 19
}

/// The driver's rules for a request (§1.6 MEM_ALLOC*, `mc_alloc_internal`):
/// channel < 4 (host requests too), NC < 8, no host alignment, device
/// alignment ≤ INT_MAX unless the scratchpad ignores it.
fn valid(host: bool, channel: u32, nc: u32, align: u64, category: u32) -> bool {
    channel < 4
        && nc < 8
        && !(host && align != 0)
        && (host || scratch(host, category) || align <= i32::MAX as u64)
}

/// Counter name of a chunk (category 19 shares SCRATCHPAD, §1.5).
fn counter(c: &MemChunk) -> &'static str {
    if c.category == MemAllocCategory::ContiguousScratchpadDevice {
        MemAllocCategory::ScratchpadDevice.name()
    } else {
        c.category.name()
    }
}

/// Live chunks never overlap; accounting equals the sum of live chunks;
/// the handle table matches the model. `live`: handle → (host, size,
/// alignment the chunk must have).
fn check(h: &H, live: &BTreeMap<u64, (bool, u64, u64)>) -> Result<(), TestCaseError> {
    let mem = h.driver().memory();
    let chunks: Vec<&MemChunk> = mem.chunks().collect();
    for w in chunks.windows(2) {
        prop_assert!(
            w[0].pa + w[0].size_bytes <= w[1].pa,
            "overlap: {:#x}+{:#x} and {:#x}",
            w[0].pa,
            w[0].size_bytes,
            w[1].pa
        );
    }
    let (mut host, mut dev) = (BTreeMap::new(), BTreeMap::<u32, BTreeMap<_, u64>>::new());
    let (mut host_total, mut dev_total) = (0, 0);
    for c in &chunks {
        if c.host {
            *host.entry(counter(c)).or_insert(0) += c.size_bytes;
            host_total += c.size_bytes;
        } else {
            *dev.entry(c.nc_id)
                .or_default()
                .entry(counter(c))
                .or_insert(0) += c.size_bytes;
            dev_total += c.size_bytes;
        }
    }
    let a = mem.accounting();
    let nonzero = |m: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        m.iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    let names = |m: BTreeMap<&str, u64>| -> BTreeMap<String, u64> {
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    prop_assert_eq!(nonzero(&a.host), names(host));
    let acct_dev: BTreeMap<u32, BTreeMap<String, u64>> = a
        .device
        .iter()
        .map(|(nc, m)| (*nc, nonzero(m)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let want_dev: BTreeMap<u32, BTreeMap<String, u64>> =
        dev.into_iter().map(|(nc, m)| (nc, names(m))).collect();
    prop_assert_eq!(acct_dev, want_dev);
    prop_assert_eq!(
        (a.host_mem_bytes, a.device_mem_bytes),
        (host_total, dev_total)
    );
    // Exactly the live handles resolve, to chunks of the requested shape.
    prop_assert_eq!(mem.live_handles().count(), live.len());
    for (&handle, &(is_host, size, align)) in live {
        let c = mem
            .chunk(handle)
            .map_err(|e| TestCaseError::fail(e.name()))?;
        prop_assert_eq!(c.handle, Some(handle));
        prop_assert_eq!(c.host, is_host);
        prop_assert_eq!(c.size_bytes, size.max(1).div_ceil(4096) * 4096);
        prop_assert_eq!(c.pa % align.max(4096), 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn alloc_free_sequences_keep_chunks_accounting_and_handles_consistent(
        ops in prop::collection::vec(op(), 1..80)
    ) {
        let mut h = Host::new(KdriverConfig::default());
        // handle → (host, size, align), the freed stack, the next new index.
        let mut live: BTreeMap<u64, (bool, u64, u64)> = BTreeMap::new();
        let mut freed: Vec<u64> = Vec::new();
        let mut next = 1u64;
        for op in ops {
            match op {
                Op::Alloc { host, channel, nc, size, align, category } => {
                    let r = h.alloc_aligned(size, align, host, channel, nc, category);
                    let sp = scratch(host, category);
                    if sp && r == errno(Errno::ENOMEM).map(|_| 0) {
                        // Freeing a scratchpad page out of order shrinks the
                        // scratchpad anyway, so the next fixed offset can be
                        // taken (`mc_free`): refused, nothing allocated.
                    } else if valid(host, channel, nc, align, category) {
                        // Freed handles are reused LIFO, else the next index (§5.4).
                        let want = freed.pop().unwrap_or_else(|| { next += 1; next - 1 });
                        prop_assert_eq!(r, Ok(want));
                        live.insert(want, (host, size, if sp { 0 } else { align }));
                    } else {
                        prop_assert_eq!(r, errno(Errno::EINVAL).map(|_| 0));
                    }
                }
                Op::FreeLive(i) if !live.is_empty() => {
                    let handle = *live.keys().nth(i % live.len()).unwrap();
                    prop_assert_eq!(h.free(handle), Ok(0));
                    live.remove(&handle);
                    freed.push(handle);
                }
                Op::FreeStale(i) if !freed.is_empty() => {
                    let handle = freed[i % freed.len()];
                    prop_assert_eq!(h.free(handle), errno(Errno::EINVAL));
                }
                Op::FreeUnknown(handle) => {
                    prop_assert_eq!(h.free(handle), errno(Errno::EINVAL));
                }
                _ => {}
            }
            check(&h, &live)?;
        }
        // Every handle is freed exactly once: a second free is EINVAL.
        for &handle in live.keys() {
            prop_assert_eq!(h.free(handle), Ok(0));
            prop_assert_eq!(h.free(handle), errno(Errno::EINVAL));
        }
        check(&h, &BTreeMap::new())?;
        // Only the four firmware carve-outs are left.
        prop_assert_eq!(h.driver().memory().chunks().count(), 4);
    }
}
