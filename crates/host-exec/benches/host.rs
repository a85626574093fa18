//! Host speed of the host runtime stack: the ioctl bus, the kernel-driver
//! model and the runtime's staged copy-in, each against the simulated
//! device (`KernelDriver::trn2`).
//!
//! `ioctl_*`: ioctls per host second through the bus. Each iteration issues
//! [`BATCH`] ioctls (items = ioctls, so divan's throughput column is
//! ioctls/s; its time column is per batch). Driver build, thread start and
//! a warm-up call are outside the timed section.
//! - `ioctl_sem_read_inprocess`: SEMAPHORE_READ (nc 0, index 0; one CSR
//!   read in the device) through [`InProcess`], called as the runtime calls
//!   it (`Box<dyn Transport>`).
//! - `ioctl_sem_read_threaded`: the same through [`Threaded`]: the driver on
//!   its device thread, each call a channel round trip.
//! - `ioctl_alloc_free_inprocess`: pairs of MEM_ALLOC_V2MT64 (4 KiB,
//!   device, TENSORS) and MEM_FREE in-process; the handle comes back
//!   through user memory, as the runtime reads it.
//!
//! `copyin`: `Dmem::dmem_buf_copyin` of a [`COPY_BYTES`] (1 GiB) device
//! tensor through the full runtime: staged through the 2 MiB per-NC bounce
//! buffer in 1 MiB chunks, MEM_COPY_ASYNC64 on the H2T engine, real DMA in
//! the simulated device. Device, driver, runtime, allocation, filling the
//! user buffer and pre-touching the destination HBM (its sparse pages
//! exist, as the `memcpy` destination's do) are outside the timed section;
//! every sample copies into the same tensor. The simulated time of each
//! copy (device cycles → ns at the timing config's `clock_ghz`) is recorded
//! for the summary. Bytes = the copy. After the samples the whole tensor is
//! read back and compared with the user buffer.
//!
//! `copyin_timing_only`: the same copy with the device in timing-only mode
//! (the H2T DMA moves no payload; simulated cycles must be equal).
//!
//! `memcpy`: the same bytes, `Vec` to `Vec` in one `copy_from_slice`, both
//! buffers pre-touched.
//!
//! `full_core_trace`: `traces/fw-tile-load-bf16.trace` (one DIRECT2D word
//! spread over all 16 engines of TPB 0: 288 descriptors, 1 MiB) parsed,
//! linked and run end to end with the host session; the summary gives its
//! slowdown versus real time (host time / simulated time).
//!
//! After divan's table a summary prints ioctls/s (median batch), the
//! copy-in and `memcpy` host seconds (median run), their ratio, and the
//! copy's simulated time and bandwidth.
//!
//! Run: `cargo bench -p host-exec --bench host` or `cargo xtask bench
//! [DIVAN ARGS]` (runs soc's `dma` target first). `cargo test -p host-exec
//! --benches` runs each case once as a smoke test, with the copy scaled
//! down to [`TEST_COPY_BYTES`] (4 MiB).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use dmem::{AllocatorKind, Dmem, DmemConfig, MemLocation, UsageType};
use ioctl_abi::Ioctl;
use ioctl_abi::args::{MemAllocV2MemType64, MemFree, Semaphore};
use ioctl_abi::enums::MemAllocCategory;
use ioctl_bus::{InProcess, Threaded, Transport, UserSpace};
use kdriver::{KdriverConfig, KernelDriver};
use zerocopy::IntoBytes;

/// ioctls per timed iteration of the `ioctl_*` cases.
const BATCH: u32 = 1000;
/// The copy-in and `memcpy` size under `cargo bench`.
const COPY_BYTES: u64 = 1 << 30;
/// The copy-in and `memcpy` size under `cargo test --benches` (four 1 MiB
/// chunks: both halves of the bounce buffer, twice).
const TEST_COPY_BYTES: u64 = 4 << 20;
/// Bytes per MEM_ALLOC_V2MT64 of `ioctl_alloc_free_inprocess`.
const ALLOC_BYTES: u64 = 4096;
/// What the destination HBM holds before the first copy.
const DST_BYTE: u8 = 0x5A;

/// Set by `main` when divan measures (`cargo bench`), clear under `cargo
/// test --benches`.
static BENCH_MODE: AtomicBool = AtomicBool::new(false);
/// Host times recorded inside the timed closures, by case, for the summary
/// (an `Instant` pair costs nanoseconds against runs of a millisecond or
/// more).
static RUNS: Mutex<BTreeMap<&'static str, Vec<Duration>>> = Mutex::new(BTreeMap::new());
/// Simulated cycles of each copy-in run.
static SIM_CYCLES: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// Simulated cycles of each timing-only copy-in run.
static TIMING_ONLY_CYCLES: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// The device clock (GHz), as the copy-in case's device reports it.
static CLOCK_GHZ: Mutex<Option<f64>> = Mutex::new(None);

fn record(key: &'static str, d: Duration) {
    RUNS.lock().unwrap().entry(key).or_default().push(d);
}

fn copy_bytes() -> u64 {
    if BENCH_MODE.load(Ordering::Relaxed) {
        COPY_BYTES
    } else {
        TEST_COPY_BYTES
    }
}

fn new_driver() -> KernelDriver {
    KernelDriver::trn2(KdriverConfig::default()).unwrap()
}

/// SEMAPHORE_READ of nc 0, semaphore 0.
fn sem_read(t: &mut dyn Transport, user: &mut UserSpace) {
    let mut arg = [0u8; Semaphore::SIZE];
    arg.copy_from_slice(Semaphore::default().as_bytes());
    let r = t.ioctl(Ioctl::SemaphoreRead.value(), &mut arg, user);
    assert_eq!(r, Ok(0));
    black_box(arg);
}

/// [`BATCH`] SEMAPHORE_READs per iteration through `t`.
fn bench_sem_read(bencher: Bencher, key: &'static str, mut t: Box<dyn Transport>) {
    let mut user = UserSpace::new();
    sem_read(&mut *t, &mut user);
    bencher.counter(ItemsCount::new(BATCH)).bench_local(|| {
        let start = Instant::now();
        for _ in 0..BATCH {
            sem_read(&mut *t, &mut user);
        }
        record(key, start.elapsed());
    });
}

#[divan::bench]
fn ioctl_sem_read_inprocess(bencher: Bencher) {
    let t = Box::new(InProcess::new(new_driver()));
    bench_sem_read(bencher, "ioctl_sem_read_inprocess", t);
}

#[divan::bench(sample_count = 30)]
fn ioctl_sem_read_threaded(bencher: Bencher) {
    let t = Box::new(Threaded::spawn(new_driver));
    bench_sem_read(bencher, "ioctl_sem_read_threaded", t);
}

/// One MEM_ALLOC_V2MT64 + MEM_FREE round trip; the handle comes back
/// through the user word at `out`.
fn alloc_free(t: &mut dyn Transport, user: &mut UserSpace, out: u64) {
    let mut a = MemAllocV2MemType64::default();
    a.size.set(ALLOC_BYTES);
    a.mem_type.set(MemAllocCategory::TensorsDevice.raw());
    a.mem_handle.set(out);
    let mut arg = [0u8; MemAllocV2MemType64::SIZE];
    arg.copy_from_slice(a.as_bytes());
    assert_eq!(
        t.ioctl(Ioctl::MemAllocV2Mt64.value(), &mut arg, user),
        Ok(0)
    );
    let mut h = [0u8; 8];
    user.read(out, &mut h).unwrap();
    let mut f = MemFree::default();
    f.mem_handle.set(u64::from_le_bytes(h));
    let mut arg = [0u8; MemFree::SIZE];
    arg.copy_from_slice(f.as_bytes());
    assert_eq!(t.ioctl(Ioctl::MemFree.value(), &mut arg, user), Ok(0));
}

#[divan::bench]
fn ioctl_alloc_free_inprocess(bencher: Bencher) {
    let key = "ioctl_alloc_free_inprocess";
    let mut t: Box<dyn Transport> = Box::new(InProcess::new(new_driver()));
    let mut user = UserSpace::new();
    let out = user.alloc(8);
    alloc_free(&mut *t, &mut user, out);
    bencher.counter(ItemsCount::new(BATCH)).bench_local(|| {
        let start = Instant::now();
        for _ in 0..BATCH / 2 {
            alloc_free(&mut *t, &mut user, out);
        }
        record(key, start.elapsed());
    });
}

/// The driver under the runtime's in-process bus.
fn driver(dm: &mut Dmem) -> &mut KernelDriver {
    dm.ndl_mut()
        .transport_mut()
        .local_driver()
        .and_then(|d| d.downcast_mut::<KernelDriver>())
        .expect("the runtime's bus is in-process")
}

/// The user buffer's byte `i`: varies, so a misplaced chunk shows.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn copyin(bencher: Bencher) {
    copyin_case(bencher, false);
}

/// The same copy-in with the device in timing-only mode: the H2T DMA
/// moves no payload (the runtime's host-side memcpy into the bounce buffer
/// still happens); simulated cycles must equal the data mode's.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn copyin_timing_only(bencher: Bencher) {
    copyin_case(bencher, true);
}

fn copyin_case(bencher: Bencher, timing_only: bool) {
    let key = if timing_only {
        "copyin_timing_only"
    } else {
        "copyin"
    };
    let bytes = copy_bytes();
    let n = usize::try_from(bytes).unwrap();
    let mut dm = Dmem::open(
        Box::new(InProcess::new(new_driver())),
        DmemConfig::default(),
    )
    .unwrap();
    let a = dm.dmem_allocator_create(AllocatorKind::Global, 0).unwrap();
    let id = dm
        .dmem_alloc(
            a,
            bytes,
            MemLocation::TongaDram,
            0,
            None,
            UsageType::Tensor,
            Some("bench"),
        )
        .unwrap();
    let user_buf = dm.user_mut().alloc(n);
    for (i, b) in dm
        .user_mut()
        .buffer_mut(user_buf)
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        *b = pattern(i);
    }
    let pa = dm.get(id).unwrap().pa;
    driver(&mut dm)
        .device_mut()
        .fill(pa, bytes, DST_BYTE)
        .unwrap();
    *CLOCK_GHZ.lock().unwrap() = Some(driver(&mut dm).device().timing().clock_ghz);
    driver(&mut dm).device_mut().set_timing_only(timing_only);

    bencher.counter(BytesCount::new(bytes)).bench_local(|| {
        let c0 = driver(&mut dm).device().now().0;
        let start = Instant::now();
        dm.dmem_buf_copyin(id, user_buf, 0, bytes).unwrap();
        record(key, start.elapsed());
        let c1 = driver(&mut dm).device().now().0;
        let cycles = if timing_only {
            &TIMING_ONLY_CYCLES
        } else {
            &SIM_CYCLES
        };
        cycles.lock().unwrap().push(c1 - c0);
    });

    let stats = driver(&mut dm).stats().clone();
    assert_eq!(stats.timeouts, 0, "{stats:?}");
    if timing_only {
        // No payload moved: the tensor still holds its fill.
        let mut got = vec![0u8; 4096];
        driver(&mut dm).device().read_bytes(pa, &mut got).unwrap();
        assert!(
            got.iter().all(|&b| b == DST_BYTE),
            "timing-only moved bytes"
        );
        return;
    }
    // Every byte landed where it belongs.
    let mut got = vec![0u8; 1 << 20];
    let mut want = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < bytes {
        let len = got.len().min(usize::try_from(bytes - off).unwrap());
        driver(&mut dm)
            .device()
            .read_bytes(pa + off, &mut got[..len])
            .unwrap();
        dm.user().read(user_buf + off, &mut want[..len]).unwrap();
        assert!(got[..len] == want[..len], "device tensor at {off:#x}");
        off += len as u64;
    }
}

/// Host seconds and simulated ns of each full-core trace run.
static TRACE_RUNS: Mutex<Vec<(Duration, f64)>> = Mutex::new(Vec::new());

#[divan::bench(sample_count = 10, sample_size = 1)]
fn full_core_trace(bencher: Bencher) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces/fw-tile-load-bf16.trace");
    let source = std::fs::read_to_string(&path).unwrap();
    struct NoFiles;
    impl soc::exec::TraceFiles for NoFiles {
        fn read(&mut self, p: &str) -> std::io::Result<Vec<u8>> {
            Err(std::io::Error::other(format!("no file {p}")))
        }
        fn write(&mut self, p: &str, _: &[u8]) -> std::io::Result<()> {
            Err(std::io::Error::other(format!("no file {p}")))
        }
    }
    bencher
        .with_inputs(|| soc::Device::trn2().unwrap())
        .bench_local_values(|dev| {
            let start = Instant::now();
            let (report, _session) =
                host_exec::run_source(dev, &source, "fw-tile-load-bf16.trace", &mut NoFiles)
                    .unwrap();
            let t = start.elapsed();
            assert_eq!(report.exit_code(), 0, "{}", report.to_text());
            TRACE_RUNS.lock().unwrap().push((t, report.summary.sim_ns));
        });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn memcpy(bencher: Bencher) {
    let bytes = copy_bytes();
    let n = usize::try_from(bytes).unwrap();
    let src: Vec<u8> = (0..n).map(pattern).collect();
    let mut dst = vec![DST_BYTE; n];
    bencher.counter(BytesCount::new(bytes)).bench_local(|| {
        let start = Instant::now();
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        record("memcpy", start.elapsed());
    });
    assert!(dst == src);
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M", x / 1e6),
        x if x >= 1e3 => format!("{:.2} K", x / 1e3),
        x => format!("{x:.2} "),
    }
}

/// The median-run summary.
fn summary() {
    let runs = RUNS.lock().unwrap();
    if runs.is_empty() && TRACE_RUNS.lock().unwrap().is_empty() {
        return;
    }
    let med = |k: &str| runs.get(k).map(|v| median(v).as_secs_f64());
    let line = |what: &str, value: String| println!("{what:<44} {value}");
    println!("\nsummary (median of the runs recorded inside the timed closures)");
    for (key, what) in [
        ("ioctl_sem_read_inprocess", "SEMAPHORE_READ, in-process"),
        ("ioctl_sem_read_threaded", "SEMAPHORE_READ, threaded"),
        (
            "ioctl_alloc_free_inprocess",
            "MEM_ALLOC_V2MT64 + MEM_FREE, in-process",
        ),
    ] {
        if let Some(t) = med(key) {
            let per = t / f64::from(BATCH);
            line(
                what,
                format!("{}ioctl/s ({:.3} us/ioctl)", si(1.0 / per), per * 1e6),
            );
        }
    }
    let bytes = copy_bytes();
    let size = format!("{} MiB", bytes >> 20);
    let copy = med("copyin");
    let mc = med("memcpy");
    if let Some(t) = copy {
        line(
            &format!("copy-in {size} (dmem_buf_copyin), host"),
            format!("{t:.3} s ({}B/s)", si(bytes as f64 / t)),
        );
    }
    if let Some(t) = med("copyin_timing_only") {
        line(
            &format!("copy-in {size}, timing-only, host"),
            format!("{t:.3} s ({}B/s)", si(bytes as f64 / t)),
        );
        if let Some(m) = mc {
            line("copy-in timing-only / memcpy", format!("{:.1}x", t / m));
        }
        let (d, t) = (
            SIM_CYCLES.lock().unwrap(),
            TIMING_ONLY_CYCLES.lock().unwrap(),
        );
        if let (Some(a), Some(b)) = (d.first(), t.first()) {
            line(
                "simulated cycles, data vs timing-only",
                format!(
                    "{a} vs {b}{}",
                    if a == b { " (equal)" } else { " (DIFFER)" }
                ),
            );
        }
    }
    if let Some(m) = mc {
        line(
            &format!("memcpy {size} (Vec to Vec, warm), host"),
            format!("{m:.3} s ({}B/s)", si(bytes as f64 / m)),
        );
    }
    if let (Some(t), Some(m)) = (copy, mc) {
        line("copy-in / memcpy", format!("{:.1}x", t / m));
    }
    {
        let runs = TRACE_RUNS.lock().unwrap();
        if !runs.is_empty() {
            let mut v: Vec<(Duration, f64)> = runs.clone();
            v.sort_by_key(|r| r.0);
            let (t, ns) = v[v.len() / 2];
            line(
                "full-core trace (fw-tile-load-bf16, 16 engines)",
                format!(
                    "{:.2} ms host for {:.0} ns simulated: slowdown {:.0}x vs real time",
                    t.as_secs_f64() * 1e3,
                    ns,
                    t.as_secs_f64() / (ns * 1e-9)
                ),
            );
        }
    }
    let cycles = SIM_CYCLES.lock().unwrap();
    let clock = *CLOCK_GHZ.lock().unwrap();
    if let (Some(&cy), Some(ghz)) = (cycles.first(), clock) {
        let ns = cy as f64 / ghz;
        let varies = if cycles.iter().all(|&c| c == cy) {
            ""
        } else {
            ", first run; runs differ"
        };
        line(
            &format!("copy-in {size}, simulated"),
            format!(
                "{ns:.0} ns = {cy} cycles at {ghz} GHz{varies} ({:.2} GB/s simulated)",
                bytes as f64 / ns
            ),
        );
        if let Some(t) = copy {
            line(
                "copy-in simulated time / host time",
                format!("{:.3}", ns * 1e-9 / t),
            );
        }
    }
}

fn main() {
    // As divan decides: `cargo bench` passes `--bench`; `cargo test
    // --benches` does not, and runs each case once (a smoke test).
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    BENCH_MODE.store(bench, Ordering::Relaxed);
    divan::main();
    if bench {
        summary();
    }
}
