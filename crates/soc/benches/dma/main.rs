//! Host speed of the DMA model (docs/references/design.md §7, docs/user-guide.md §14).
//! Budgets: ≥ 5 M simulated 512-byte descriptors per host second on one
//! core (payload moved), large copies within 3× of a host `memcpy` of the
//! same bytes (issues 3 and 6); the firmware path as fast as the raw path
//! and host cost linear in the descriptor count (issue 12).
//!
//! `dma_copy` (the raw path): one device, engine 0 (engines 0..15 of TPB 0
//! for the `-16e` cases), HBM→HBM copies. Each case places N TX
//! (FIRST|LAST, ring id 1) + N RX descriptors straight into rings in HBM,
//! rings the RX then TX doorbells and times `Device::run(None)` only —
//! device build, source fill, descriptor writes and the drop of the device
//! are outside the timed section. The destination is pre-touched in setup
//! (its pages exist, as the `memcpy` destination does); `-cold` cases leave
//! it untouched, so the run also pays for allocating destination pages.
//! Throughput: items = TX descriptors, bytes = payload. The `-16e-t` cases
//! (256 B … 64 KiB) are the references of the firmware cases.
//!
//! `firmware::fw` (the user path, [`firmware`]): 64-byte instruction words
//! queued on the Q7 firmware from trace text (parse, link and the set-up
//! statements outside the timed section), then `Device::run(None)` timed:
//! the firmware expands the words, rings the doorbells, polls the
//! completions; the engines move the data.
//!
//! `linear::*` ([`linear`]): 10^3, 10^5 and 10^7 descriptors on one
//! engine (timing-only), for host time per descriptor versus count.
//!
//! `memcpy`: the same total bytes, `Vec` to `Vec` in 64 KiB `copy_from_slice`
//! chunks, both buffers pre-touched; `memcpy_cold` copies into a fresh
//! (calloc'd, not yet faulted-in) `Vec`, the counterpart of `-cold`.
//!
//! After divan's table a summary prints the median run of each case, the
//! ratio to `memcpy` of the same bytes, the simulated time per host time,
//! for each firmware case its host time per descriptor against the raw
//! case of the same descriptor size measured in the same run, the
//! linearity check and the budget checks ([`summary`]).
//!
//! Run: `cargo bench -p soc` or `cargo xtask bench [DIVAN ARGS]` (which
//! also runs the other bench targets with the same args); to pass divan
//! options to this target only: `cargo bench -p soc --bench dma --
//! dma_copy --sample-count 5`. `cargo test -p soc --benches` runs each case
//! once (a smoke test of the setup and the sanity checks; the linearity
//! case stops at 10^4 descriptors there).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use soc::Device;
use soc::device::RunStop;
use soc::workload::{DST_BYTE, DST_OFFSET, SRC_BYTE, StreamCopy};

mod firmware;
mod linear;
mod summary;

/// The allocator of the `neuron-sim` binary, so that the cases time the
/// model as users run it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `memcpy` chunk (one sparse-memory page).
const CHUNK: usize = 64 * 1024;

/// Set by `main` when divan measures (`cargo bench`), clear under `cargo
/// test --benches` (each case once, smaller where a case says so).
static BENCH_MODE: AtomicBool = AtomicBool::new(false);

fn bench_mode() -> bool {
    BENCH_MODE.load(Ordering::Relaxed)
}

/// One raw-path workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Case {
    /// Payload bytes per descriptor.
    desc_bytes: u32,
    /// TX descriptors in all (= RX descriptors = packets).
    descs: u32,
    /// Queues used on each engine (descriptors split evenly).
    queues: u32,
    /// Engines used, 0.. (TPB 0 has 16; descriptors split evenly).
    engines: u32,
    /// Pre-touch the destination in setup.
    warm_dst: bool,
    /// Timing-only mode (bulk payload not moved; `-t`).
    timing_only: bool,
}

impl Case {
    fn workload(self) -> StreamCopy {
        StreamCopy {
            desc_bytes: self.desc_bytes,
            descs: self.descs,
            queues: self.queues,
            engines: self.engines,
            fill_src: true,
            fill_dst: self.warm_dst,
        }
    }

    fn total_bytes(self) -> u64 {
        self.workload().total_bytes()
    }
}

/// `512`, `4K`, `64K`: a byte count as the case names write it.
fn size_name(bytes: u32) -> String {
    match bytes {
        b if b % 1024 == 0 => format!("{}K", b / 1024),
        b => b.to_string(),
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", size_name(self.desc_bytes), self.descs)?;
        if self.engines > 1 {
            write!(f, "-{}e", self.engines)?;
        }
        if self.queues > 1 {
            write!(f, "-{}q", self.queues)?;
        }
        if !self.warm_dst {
            f.write_str("-cold")?;
        }
        if self.timing_only {
            f.write_str("-t")?;
        }
        Ok(())
    }
}

const fn case(desc_bytes: u32, descs: u32, queues: u32, warm_dst: bool) -> Case {
    Case {
        desc_bytes,
        descs,
        queues,
        engines: 1,
        warm_dst,
        timing_only: false,
    }
}

/// The same workload spread over engines 0..n (one queue each).
const fn on_engines(c: Case, n: u32) -> Case {
    Case { engines: n, ..c }
}

/// The full-core case: all 16 engines of TPB 0 streaming 4 KiB descriptors
/// HBM→HBM in timing-only mode (issue 6's slowdown budget).
const FULL_CORE: Case = timing_only(on_engines(case(4096, 32768, 1, true), 16));

/// The same workload in timing-only mode.
const fn timing_only(c: Case) -> Case {
    Case {
        timing_only: true,
        ..c
    }
}

/// 16384 × 512 B = 8 MiB, 16384 × 4 KiB = 64 MiB, 2048 × 64 KiB = 128 MiB;
/// the `-16e` references of the firmware cases: 4 MiB (256 B), 8 MiB,
/// 128 MiB (4 KiB, the full-core case), 64 MiB (16 KiB), 128 MiB.
const CASES: &[Case] = &[
    case(512, 16384, 1, true),
    case(512, 16384, 16, true),
    case(4096, 16384, 1, true),
    case(65536, 2048, 1, true),
    case(65536, 2048, 1, false),
    timing_only(case(512, 16384, 1, true)),
    timing_only(case(4096, 16384, 1, true)),
    timing_only(case(65536, 2048, 1, true)),
    FULL_CORE,
    timing_only(on_engines(case(256, 16384, 1, true), 16)),
    timing_only(on_engines(case(512, 16384, 1, true), 16)),
    timing_only(on_engines(case(16384, 4096, 1, true), 16)),
    timing_only(on_engines(case(65536, 2048, 1, true), 16)),
    on_engines(case(65536, 2048, 1, true), 16),
];

/// The raw 16-engine case a firmware case of `desc_bytes` per descriptor
/// is compared with (same mode).
fn raw_reference(desc_bytes: u32, timing_only: bool) -> Option<Case> {
    CASES
        .iter()
        .copied()
        .find(|c| c.engines == 16 && c.desc_bytes == desc_bytes && c.timing_only == timing_only)
}

/// Total bytes of each `memcpy` case (the distinct totals of `CASES`).
const MEMCPY_BYTES: &[u64] = &[4 << 20, 8 << 20, 64 << 20, 128 << 20];
/// Total bytes of the `-cold` cases.
const MEMCPY_COLD_BYTES: &[u64] = &[128 << 20];

/// Host run times recorded inside the timed closures, by case name, for the
/// summary (an `Instant` pair costs nanoseconds against runs of milliseconds).
static RUNS: Mutex<BTreeMap<String, Vec<Duration>>> = Mutex::new(BTreeMap::new());
/// Simulated cycles of each case's sanity run.
static CYCLES: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

fn record(key: String, d: Duration) {
    RUNS.lock().unwrap().entry(key).or_default().push(d);
}

fn addr(dev: &Device, text: &str) -> u64 {
    let expr = trace_format::parse_addr(text, "bench").unwrap();
    soc::resolve(dev, &expr)
        .unwrap_or_else(|e| panic!("`{text}`: {}", e.message))
        .addr
}

/// A device with the case's workload programmed and every descriptor
/// posted: `run` moves the whole workload.
fn setup(c: Case) -> Device {
    let mut dev = Device::trn2().unwrap();
    dev.set_trace(false);
    dev.set_timing_only(c.timing_only);
    c.workload().program(&mut dev).unwrap();
    dev
}

/// One untimed run: every descriptor completes and every byte lands.
fn sanity(c: Case) {
    let mut dev = setup(c);
    assert_eq!(dev.run(None), RunStop::Idle, "{c}");
    let stats = dev.queue_stats();
    let sum = |f: fn(&udma::QueueStats) -> u64| stats.iter().map(|(_, _, s)| f(s)).sum::<u64>();
    let n = u64::from(c.descs);
    assert_eq!(sum(|s| s.packets), n, "{c}: packets {stats:?}");
    assert_eq!(sum(|s| s.tx_descs), n, "{c}: TX descriptors {stats:?}");
    assert_eq!(sum(|s| s.rx_descs), n, "{c}: RX descriptors {stats:?}");
    assert_eq!(sum(|s| s.bytes), c.total_bytes(), "{c}: bytes {stats:?}");
    let hbm = addr(&dev, "hbm0");
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0;
    // Data mode: every byte landed; timing-only: none moved.
    let want = if c.timing_only { DST_BYTE } else { SRC_BYTE };
    while off < c.total_bytes() {
        dev.read_bytes(hbm + DST_OFFSET + off, &mut buf).unwrap();
        assert!(
            buf.iter().all(|&b| b == want),
            "{c}: destination at {off:#x}"
        );
        off += CHUNK as u64;
    }
    CYCLES.lock().unwrap().insert(c.to_string(), dev.now().0);
}

#[divan::bench(args = CASES, sample_count = 20, sample_size = 1)]
fn dma_copy(bencher: Bencher, c: Case) {
    sanity(c);
    let key = format!("dma_copy/{c}");
    bencher
        .counter(ItemsCount::new(c.descs))
        .counter(BytesCount::new(c.total_bytes()))
        .with_inputs(|| setup(c))
        .bench_local_values(|mut dev| {
            let t = Instant::now();
            let stop = dev.run(None);
            record(key.clone(), t.elapsed());
            black_box(stop);
            dev
        });
}

#[divan::bench(args = MEMCPY_BYTES, sample_count = 30, sample_size = 1)]
fn memcpy(bencher: Bencher, bytes: u64) {
    let n = usize::try_from(bytes).unwrap();
    let src = vec![SRC_BYTE; n];
    let mut dst = vec![DST_BYTE; n];
    let key = format!("memcpy/{bytes}");
    bencher.counter(BytesCount::new(bytes)).bench_local(|| {
        let t = Instant::now();
        copy_chunks(&mut dst, &src);
        record(key.clone(), t.elapsed());
    });
    assert!(dst.iter().all(|&b| b == SRC_BYTE));
}

/// `memcpy` into a fresh (calloc'd, not yet faulted-in) destination: the
/// counterpart of the `-cold` cases.
#[divan::bench(args = MEMCPY_COLD_BYTES, sample_count = 20, sample_size = 1)]
fn memcpy_cold(bencher: Bencher, bytes: u64) {
    let n = usize::try_from(bytes).unwrap();
    let src = vec![SRC_BYTE; n];
    let key = format!("memcpy_cold/{bytes}");
    bencher
        .counter(BytesCount::new(bytes))
        .with_inputs(|| vec![0u8; n])
        .bench_local_values(|mut dst| {
            let t = Instant::now();
            copy_chunks(&mut dst, &src);
            record(key.clone(), t.elapsed());
            dst
        });
}

fn copy_chunks(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        d.copy_from_slice(black_box(s));
    }
    black_box(dst);
}

fn main() {
    // As divan decides: `cargo bench` passes `--bench`; `cargo test
    // --benches` does not, and runs each case once (the sanity checks).
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    BENCH_MODE.store(bench, Ordering::Relaxed);
    divan::main();
    if bench {
        summary::print();
    }
}
