//! Host speed and size of the Perfetto export (issue 6 budget: a run with
//! one million descriptors exports in under 5 s to under 300 MB).
//!
//! Setup (untimed, once): the 16 engines of TPB 0 each move 32,768
//! 512-byte packets HBM→HBM in timing-only mode with the event log on
//! (`soc::workload::StreamCopy`): 524,288 packets, 1,048,576 descriptors.
//! Timed: `timeline::export` of that run's events to JSON text, unfiltered
//! and with one engine kept. After divan's table a summary prints the
//! median export time, the JSON size and the budget checks.
//!
//! Run: `cargo bench -p timeline --bench export` (also part of `cargo
//! xtask bench`); `cargo test -p timeline --benches` runs each case once
//! on a smaller run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use divan::{Bencher, black_box};
use soc::Device;
use soc::DeviceEvent;
use soc::device::RunStop;
use soc::workload::StreamCopy;

/// The recorded run: its events, end cycle and descriptor count.
struct Run {
    events: Vec<DeviceEvent>,
    end_cycle: u64,
    descriptors: u64,
    clock_ghz: f64,
}

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        // `cargo test --benches` (no `--bench`): a 64x smaller smoke run.
        let descs = if bench_mode() { 524_288 } else { 8192 };
        let w = StreamCopy {
            desc_bytes: 512,
            descs,
            queues: 1,
            engines: 16,
            fill_src: false,
            fill_dst: false,
        };
        let mut dev = Device::trn2().unwrap();
        dev.set_trace(true);
        dev.set_timing_only(true);
        w.program(&mut dev).unwrap();
        assert_eq!(dev.run(None), RunStop::Idle);
        let stats = dev.queue_stats();
        let descriptors: u64 = stats.iter().map(|(_, _, s)| s.tx_descs + s.rx_descs).sum();
        assert_eq!(descriptors, 2 * u64::from(descs));
        Run {
            end_cycle: dev.now().0,
            clock_ghz: dev.timing().clock_ghz,
            events: dev.take_events(),
            descriptors,
        }
    })
}

/// (case, export time, JSON bytes, packets written)
static RESULTS: Mutex<Vec<(&'static str, Duration, usize, usize)>> = Mutex::new(Vec::new());

fn export_case(bencher: Bencher, name: &'static str, filter: timeline::Filter) {
    let r = run();
    let meta = timeline::Meta {
        trace: "stream-copy-16e".into(),
        clock_ghz: r.clock_ghz,
        end_cycle: r.end_cycle,
    };
    bencher.bench_local(|| {
        let t = Instant::now();
        let out = timeline::export(r.events.iter(), &[], &meta, &filter);
        let el = t.elapsed();
        RESULTS
            .lock()
            .unwrap()
            .push((name, el, out.json.len(), out.packets));
        black_box(out);
    });
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn export_all(bencher: Bencher) {
    export_case(bencher, "all", timeline::Filter::default());
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn export_engine0(bencher: Bencher) {
    let filter = timeline::Filter {
        engines: Some(BTreeSet::from([0])),
        ..timeline::Filter::default()
    };
    export_case(bencher, "engine 0", filter);
}

fn summary() {
    let results = RESULTS.lock().unwrap();
    let Some(r) = RUN_INFO.get() else { return };
    println!(
        "\nsummary: Perfetto export of a run with {} descriptors ({} device events)",
        r.0, r.1
    );
    println!(
        "{:<10} {:>12} {:>14} {:>10}",
        "case", "median", "JSON", "packets"
    );
    let mut ok_all = None;
    for name in ["all", "engine 0"] {
        let mut v: Vec<_> = results.iter().filter(|x| x.0 == name).collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by_key(|x| x.1);
        let m = v[v.len() / 2];
        println!(
            "{:<10} {:>10.2} s {:>11.1} MB {:>10}",
            name,
            m.1.as_secs_f64(),
            m.2 as f64 / 1e6,
            m.3
        );
        if name == "all" {
            ok_all = Some((m.1.as_secs_f64(), m.2 as f64 / 1e6));
        }
    }
    if let Some((secs, mb)) = ok_all {
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "budget export of 1 M descriptors < 5 s (issue 6): {} ({secs:.2} s)",
            verdict(secs < 5.0)
        );
        println!(
            "budget export of 1 M descriptors < 300 MB (issue 6): {} ({mb:.1} MB)",
            verdict(mb < 300.0)
        );
    }
}

/// (descriptors, device events) of the run, for the summary.
static RUN_INFO: OnceLock<(u64, usize)> = OnceLock::new();

fn main() {
    divan::main();
    if bench_mode() && !std::env::args().any(|a| a == "--test") {
        let r = run();
        let _ = RUN_INFO.set((r.descriptors, r.events.len()));
        summary();
    }
}
