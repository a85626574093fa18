//! Host cost versus descriptor count (issue 12 item 5): 10^3, 10^5 and
//! 10^7 single-descriptor 512 B packets on engine 0, one queue, timing-only,
//! on the raw path (`soc::workload::StreamCopy`, nothing filled: in
//! timing-only mode no payload moves, and the 10^7 case's 5 GB of sources
//! would otherwise be written in set-up). One ring holds them all (TDRL up
//! to 2^24 − 16). Timed: `Device::run(None)`; the descriptor counts are
//! checked after the timer stops. The summary gives host time per
//! descriptor for each count and checks that it stays within 20 %.
//!
//! Under `cargo test --benches` (each case once, debug build) the counts
//! are capped at [`TEST_MAX_DESCS`].

use std::time::Instant;

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use soc::Device;
use soc::device::RunStop;
use soc::workload::StreamCopy;

use crate::{bench_mode, record};

/// Descriptors per case.
pub(crate) const COUNTS: &[u32] = &[1_000, 100_000, 10_000_000];
/// Descriptors of the largest case.
const LARGE: u32 = 10_000_000;
/// The cap under `cargo test --benches`.
const TEST_MAX_DESCS: u32 = 10_000;
/// Payload bytes per descriptor.
pub(crate) const DESC_BYTES: u32 = 512;

/// The summary's key of a count's runs.
pub(crate) fn key(n: u32) -> String {
    format!("linear/{n}")
}

fn workload(n: u32) -> StreamCopy {
    StreamCopy {
        desc_bytes: DESC_BYTES,
        descs: n,
        queues: 1,
        engines: 1,
        fill_src: false,
        fill_dst: false,
    }
}

fn setup(n: u32) -> Device {
    let mut dev = Device::trn2().unwrap();
    dev.set_trace(false);
    dev.set_timing_only(true);
    workload(n).program(&mut dev).unwrap();
    dev
}

fn run(bencher: Bencher, n: u32) {
    let n = if bench_mode() {
        n
    } else {
        n.min(TEST_MAX_DESCS)
    };
    let key = key(n);
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| setup(n))
        .bench_local_values(|mut dev| {
            let t = Instant::now();
            let stop = dev.run(None);
            record(key.clone(), t.elapsed());
            assert_eq!(black_box(stop), RunStop::Idle);
            let tx: u64 = dev.queue_stats().iter().map(|(_, _, s)| s.tx_descs).sum();
            assert_eq!(tx, u64::from(n), "{key}: TX descriptors");
            dev
        });
}

/// 10^3 and 10^5: cheap, many samples.
#[divan::bench(args = &COUNTS[..2], sample_count = 30, sample_size = 1)]
fn linear(bencher: Bencher, n: u32) {
    run(bencher, n);
}

/// 10^7: about a second of run and a few of set-up (320 MB of rings) per
/// sample, so few samples.
#[divan::bench(args = [LARGE], sample_count = 3, sample_size = 1)]
fn linear_large(bencher: Bencher, n: u32) {
    run(bencher, n);
}
