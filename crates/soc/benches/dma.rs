//! Host speed of the DMA model (DESIGN §7). Budget: ≥ 5 M simulated
//! 512-byte descriptors per host second on one core (payload moved), and
//! large copies within 3× of a host `memcpy` of the same bytes.
//!
//! `dma_copy`: one device, engine 0, HBM→HBM copies. Each case places N
//! TX (FIRST|LAST, ring id 1) + N RX descriptors straight into rings in HBM,
//! rings the RX then TX doorbells and times `Device::run(None)` only — device
//! build, source fill, descriptor writes and the drop of the device are
//! outside the timed section. The destination is pre-touched in setup (its
//! pages exist, as the `memcpy` destination does); `-cold` cases leave it
//! untouched, so the run also pays for allocating destination pages.
//! Throughput: items = TX descriptors, bytes = payload.
//!
//! `memcpy`: the same total bytes, `Vec` to `Vec` in 64 KiB `copy_from_slice`
//! chunks, both buffers pre-touched; `memcpy_cold` copies into a fresh
//! (calloc'd, not yet faulted-in) `Vec`, the counterpart of `-cold`.
//!
//! After divan's table a summary prints the median run of each case, the
//! ratio to `memcpy` of the same bytes, and the budget checks.
//!
//! Run: `cargo bench -p soc` or `cargo xtask bench [DIVAN ARGS]` (which
//! also runs host-exec's `host` bench with the same args); to pass divan
//! options to this target only: `cargo bench -p soc --bench dma --
//! dma_copy --sample-count 5`. `cargo test -p soc --benches` runs each case
//! once (a smoke test of the setup and the sanity checks).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use dma_abi::{Flags, rx, tx};
use soc::Device;
use soc::device::RunStop;

/// Offsets inside hbm0 (the first 16 MiB are the firmware carve-out).
const RINGS: u64 = 0x1000_0000;
const SRC: u64 = 0x1_0000_0000;
const DST: u64 = 0x2_0000_0000;
const SRC_BYTE: u8 = 0xA5;
const DST_BYTE: u8 = 0x5A;
/// `memcpy` chunk (one sparse-memory page).
const CHUNK: usize = 64 * 1024;

/// One workload.
#[derive(Clone, Copy, Debug)]
struct Case {
    /// Payload bytes per descriptor.
    desc_bytes: u32,
    /// TX descriptors in all (= RX descriptors = packets).
    descs: u32,
    /// Queues of engine 0 used (descriptors split evenly).
    queues: u32,
    /// Pre-touch the destination in setup.
    warm_dst: bool,
    /// Timing-only mode (bulk payload not moved; `-t`).
    timing_only: bool,
}

impl Case {
    fn total_bytes(self) -> u64 {
        u64::from(self.desc_bytes) * u64::from(self.descs)
    }

    fn per_queue(self) -> u32 {
        self.descs / self.queues
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = match self.desc_bytes {
            b if b % 1024 == 0 => format!("{}K", b / 1024),
            b => b.to_string(),
        };
        write!(f, "{size}x{}", self.descs)?;
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
        warm_dst,
        timing_only: false,
    }
}

/// The same workload in timing-only mode.
const fn timing_only(c: Case) -> Case {
    Case {
        timing_only: true,
        ..c
    }
}

/// 16384 × 512 B = 8 MiB, 16384 × 4 KiB = 64 MiB, 2048 × 64 KiB = 128 MiB.
const CASES: &[Case] = &[
    case(512, 16384, 1, true),
    case(512, 16384, 16, true),
    case(4096, 16384, 1, true),
    case(65536, 2048, 1, true),
    case(65536, 2048, 1, false),
    timing_only(case(512, 16384, 1, true)),
    timing_only(case(4096, 16384, 1, true)),
    timing_only(case(65536, 2048, 1, true)),
];

/// Total bytes of each `memcpy` case (the distinct totals of `CASES`).
const MEMCPY_BYTES: &[u64] = &[8 << 20, 64 << 20, 128 << 20];
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

fn reg(dev: &mut Device, name: &str, value: u32) {
    let a = addr(dev, name);
    dev.write32(a, value).unwrap();
}

/// A device with engine 0 programmed and every descriptor posted: `run`
/// moves the whole workload.
fn setup(c: Case) -> Device {
    let mut dev = Device::trn2().unwrap();
    dev.set_trace(false);
    dev.set_timing_only(c.timing_only);
    let hbm = addr(&dev, "hbm0");
    let total = c.total_bytes();
    dev.fill(hbm + SRC, total, SRC_BYTE).unwrap();
    if c.warm_dst {
        dev.fill(hbm + DST, total, DST_BYTE).unwrap();
    }
    // As the driver: max packet 1 MiB − 1, LEN 0 encodes 64 KiB.
    reg(&mut dev, "eng0.m2s.cfg_len", 0x010F_FFFF);
    // Prefetch refill policy as the driver programs it (driver-facts §2.7:
    // threshold 65, bursts of 8 above it).
    reg(&mut dev, "eng0.m2s.desc_pref_cfg_3", 0x0000_4181);
    reg(&mut dev, "eng0.s2m.desc_pref_cfg_3", 0x0000_4181);
    let per_q = c.per_queue();
    let ring_bytes = 16 * u64::from(per_q);
    let size = u64::from(c.desc_bytes);
    for q in 0..c.queues {
        let tx_ring = hbm + RINGS + 2 * ring_bytes * u64::from(q);
        let rx_ring = tx_ring + ring_bytes;
        let m2s = format!("eng0.m2s.q{q}");
        let s2m = format!("eng0.s2m.q{q}");
        reg(&mut dev, &format!("{m2s}.tdrbp_low"), tx_ring as u32);
        reg(
            &mut dev,
            &format!("{m2s}.tdrbp_high"),
            (tx_ring >> 32) as u32,
        );
        reg(&mut dev, &format!("{m2s}.tdrl"), per_q);
        reg(&mut dev, &format!("{s2m}.rdrbp_low"), rx_ring as u32);
        reg(
            &mut dev,
            &format!("{s2m}.rdrbp_high"),
            (rx_ring >> 32) as u32,
        );
        reg(&mut dev, &format!("{s2m}.rdrl"), per_q);
        // As the driver (traces/queue-setup.trace): no completion rings
        // (S2M writes them at reset), DMB pauses the queue.
        reg(&mut dev, &format!("{m2s}.comp_cfg"), 0);
        reg(&mut dev, &format!("{s2m}.comp_cfg"), 0);
        reg(&mut dev, &format!("{m2s}.rlimit_mask"), 0x3);
        reg(&mut dev, &format!("{m2s}.q_cfg"), 0x0303_0000);
        reg(&mut dev, &format!("{s2m}.q_cfg"), 0x0303_0000);
        let mut tx_bytes = Vec::with_capacity(ring_bytes as usize);
        let mut rx_bytes = Vec::with_capacity(ring_bytes as usize);
        for i in 0..u64::from(per_q) {
            let at = (u64::from(q) * u64::from(per_q) + i) * size;
            let t = tx(c.desc_bytes, hbm + SRC + at, Flags::single(1)).unwrap();
            let r = rx(c.desc_bytes, hbm + DST + at).unwrap().with_flags(Flags {
                ring_id: 1,
                ..Flags::default()
            });
            tx_bytes.extend_from_slice(&t.to_bytes());
            rx_bytes.extend_from_slice(&r.to_bytes());
        }
        dev.write_bytes(tx_ring, &tx_bytes).unwrap();
        dev.write_bytes(rx_ring, &rx_bytes).unwrap();
    }
    reg(&mut dev, "eng0.m2s.change_state", 1);
    reg(&mut dev, "eng0.s2m.change_state", 1);
    for q in 0..c.queues {
        reg(&mut dev, &format!("eng0.s2m.q{q}.rdrtp_inc"), per_q);
        reg(&mut dev, &format!("eng0.m2s.q{q}.tdrtp_inc"), per_q);
    }
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
        dev.read_bytes(hbm + DST + off, &mut buf).unwrap();
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

/// The `memcpy` run a case compares with (same bytes, same destination state).
fn memcpy_key(c: Case) -> String {
    let kind = if c.warm_dst { "memcpy" } else { "memcpy_cold" };
    format!("{kind}/{}", c.total_bytes())
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

/// The median-run table with the `memcpy` ratio and the budget checks.
fn summary() {
    let runs = RUNS.lock().unwrap();
    let cycles = CYCLES.lock().unwrap();
    if runs.is_empty() {
        return;
    }
    let clock_ghz = Device::trn2().map_or(0.85, |d| d.timing().clock_ghz);
    println!(
        "\nsummary (median host time of `Device::run`; ratio = run / memcpy of the same \
         bytes into a destination in the same state: warm, or fresh for -cold)"
    );
    println!(
        "{:<20} {:>10} {:>12} {:>12} {:>12} {:>8} {:>12} {:>10}",
        "case", "run", "desc/s", "payload/s", "memcpy/s", "ratio", "sim time", "sim/host"
    );
    for c in CASES {
        let Some(r) = runs.get(&format!("dma_copy/{c}")) else {
            continue;
        };
        let t = median(r).as_secs_f64();
        let bytes = c.total_bytes();
        let mc = runs.get(&memcpy_key(*c)).map(|m| median(m).as_secs_f64());
        let sim_s = cycles
            .get(&c.to_string())
            .map(|&cy| cy as f64 / (clock_ghz * 1e9));
        println!(
            "{:<20} {:>8.2}ms {:>12} {:>12} {:>12} {:>8} {:>12} {:>10}",
            c.to_string(),
            t * 1e3,
            si(f64::from(c.descs) / t),
            format!("{}B", si(bytes as f64 / t)),
            mc.map_or("-".into(), |m| format!("{}B", si(bytes as f64 / m))),
            mc.map_or("-".into(), |m| format!("{:.2}x", t / m)),
            sim_s.map_or("-".into(), |s| format!("{:.1}us", s * 1e6)),
            sim_s.map_or("-".into(), |s| format!("{:.3}", s / t)),
        );
    }
    let budget = |name: &str, ok: bool, detail: String| {
        println!(
            "budget {name}: {} ({detail})",
            if ok { "met" } else { "MISSED" }
        );
    };
    let rate_of = |c: &Case| {
        runs.get(&format!("dma_copy/{c}"))
            .map(|r| f64::from(c.descs) / median(r).as_secs_f64())
    };
    if let Some(rate) = rate_of(&CASES[0]) {
        budget(
            "512 B descriptors with payload >= 5 M/s (issue 3; issue 6 asks >= 4 M/s)",
            rate >= 5e6,
            format!("{}desc/s", si(rate)),
        );
    }
    if let Some(rate) = rate_of(&timing_only(CASES[0])) {
        budget(
            "512 B descriptors timing-only >= 10 M/s (issue 6)",
            rate >= 10e6,
            format!("{}desc/s", si(rate)),
        );
    }
    for c in CASES
        .iter()
        .filter(|c| c.desc_bytes == 65536 && !c.timing_only)
    {
        let (Some(r), Some(m)) = (
            runs.get(&format!("dma_copy/{c}")),
            runs.get(&memcpy_key(*c)),
        ) else {
            continue;
        };
        let ratio = median(r).as_secs_f64() / median(m).as_secs_f64();
        budget(
            &format!("{c} within 3x of memcpy (issue 3)"),
            ratio <= 3.0,
            format!("{ratio:.2}x"),
        );
        budget(
            &format!("{c} within 1.5x of memcpy (issue 6)"),
            ratio <= 1.5,
            format!("{ratio:.2}x"),
        );
    }
}

fn main() {
    divan::main();
    // As divan decides: `cargo bench` passes `--bench`; `cargo test
    // --benches` does not, and runs each case once (the sanity checks).
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test") {
        summary();
    }
}
