//! Host speed of `neuron-sim run` as a user runs it: the whole process on
//! the chip trace (issue 12 item 2, docs/user-guide.md §14).
//!
//! `process`: spawns the `neuron-sim` binary of this package (Cargo builds
//! it for the bench and names it in `CARGO_BIN_EXE_neuron-sim`: the
//! release-profile binary under `cargo bench`, the debug one under `cargo
//! test --benches`) as `neuron-sim run --json [--timing-only]
//! traces/calib/chip-8-cores-hbm.trace` — the whole report with every
//! device event — and as `neuron-sim run -q [--timing-only] …` (failures
//! and the summary; no device event is built), reads all of its output and
//! waits for it to exit. Timed: spawn to exit — process start, the built-in maps,
//! parse, link, the firmware run of 8 cores × 4 DIRECT2D words (9,216
//! descriptors, 64 MiB), the report. The simulated time comes from the
//! run's own `--json` report (`sim_ns`, read in an untimed sanity run that
//! also checks the report: no errors; with payload every expectation
//! holds, timing-only only the data checks fail).
//!
//! After divan's table a summary prints the median process time, the
//! simulated time, the slowdown versus real time (process time /
//! simulated time), the median host time the timed runs themselves report
//! (the trace's execution without process start and report:
//! `host_timing.host_seconds` of `--json`, the `host time` line of `-q`,
//! which has millisecond resolution), and the
//! budget check of issue 12: the chip stream, timing-only, end to end as a
//! process, at most 150× slower than real time. It also gives the size of
//! `neuron-sim run -q` on the trace (issue 12 asks under 2 KB).
//!
//! The summary's `huge pages` column is the median count of transparent
//! huge pages the system faulted during one timed run (`thp_fault_alloc`
//! of `/proc/vmstat`, Linux; `-` elsewhere): each is 2 MiB the kernel
//! zeroes, which on a VM is a large part of a short run's process time.
//!
//! `floor`: what any process pays on the host before the trace's own work,
//! measured in the same run: the system's `true` (spawning any small
//! dynamically linked program and waiting for it: the host's own floor,
//! which no change here moves), `neuron-sim --version` (our process start
//! and argument parsing) and `neuron-sim run -q -` of a one-statement trace
//! on standard input (also the built-in maps, the device's set-up, a parse,
//! link and report). The summary gives each as a multiple of the chip
//! trace's simulated time: the part of the 150× that is not the run's.
//!
//! Run: `cargo bench -p neuron-sim --bench run` or `cargo xtask bench`.
//! `cargo test -p neuron-sim --benches` runs each case once (debug binary).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};

/// The binary under test, built by Cargo for this bench.
const BIN: &str = env!("CARGO_BIN_EXE_neuron-sim");
/// `traces/calib/chip-8-cores-hbm.trace` (calibration row (e)).
const CHIP_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../traces/calib/chip-8-cores-hbm.trace"
);
/// Data checks of the chip trace (skipped in timing-only mode).
const CHIP_DATA_EXPECTS: u64 = 8;

/// One process run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Case {
    /// `--timing-only`.
    timing_only: bool,
    /// `-q` (failures and the summary only, no device events built) instead
    /// of `--json` (the whole report, every device event in it).
    quiet: bool,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("chip-8-cores")?;
        if self.timing_only {
            f.write_str("-t")?;
        }
        if self.quiet {
            f.write_str(" -q")?;
        }
        Ok(())
    }
}

const CASES: &[Case] = &[
    Case {
        timing_only: true,
        quiet: false,
    },
    Case {
        timing_only: false,
        quiet: false,
    },
    Case {
        timing_only: true,
        quiet: true,
    },
    Case {
        timing_only: false,
        quiet: true,
    },
];

/// What the sanity run's report said.
#[derive(Clone, Copy, Debug)]
struct Report {
    sim_ns: f64,
    tx_descriptors: u64,
}

static RUNS: Mutex<BTreeMap<String, Vec<Duration>>> = Mutex::new(BTreeMap::new());
static REPORTS: Mutex<BTreeMap<String, Report>> = Mutex::new(BTreeMap::new());
/// The host seconds each timed run reported itself, by case.
static RUN_HOST: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());
/// Transparent huge pages the system faulted during each timed run, by
/// case (`thp_fault_alloc` of `/proc/vmstat`; Linux only).
static HUGE_PAGES: Mutex<BTreeMap<String, Vec<u64>>> = Mutex::new(BTreeMap::new());
/// Bytes `run -q` printed (with payload: every check holds).
static QUIET_BYTES: Mutex<Option<usize>> = Mutex::new(None);
/// Wall times of the floor processes, by case.
static FLOORS: Mutex<BTreeMap<&'static str, Vec<Duration>>> = Mutex::new(BTreeMap::new());

/// A run that only starts: one register write, from standard input.
const FLOOR_TRACE: &[u8] = b"write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n";

/// The floor processes: the system's `true`, `neuron-sim --version`, and
/// `run -q -` of [`FLOOR_TRACE`].
const FLOOR_CASES: &[&str] = &[SYSTEM_TRUE, "--version", "run -q one statement"];

/// The floor case that runs the system's `true` instead of neuron-sim.
const SYSTEM_TRUE: &str = "system `true`";

fn command(c: Case, quiet: bool) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("run");
    cmd.arg(if quiet { "-q" } else { "--json" });
    if c.timing_only {
        cmd.arg("--timing-only");
    }
    cmd.arg(CHIP_TRACE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn spawn(c: Case, quiet: bool) -> Output {
    command(c, quiet)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"))
}

/// Exit status the run must end with: 0 (in timing-only mode the data
/// checks are skipped, not failed).
fn want_exit(_: Case) -> i32 {
    0
}

/// The host seconds a run reports itself: `host_timing.host_seconds` of a
/// `--json` report, the `host time N s` line of `-q`.
fn run_host_s(quiet: bool, out: &Output) -> Option<f64> {
    let text = String::from_utf8_lossy(&out.stdout);
    let number = |rest: &str| {
        let end = rest
            .find(|ch: char| !(ch.is_ascii_digit() || ch == '.' || ch == 'e' || ch == '-'))
            .unwrap_or(rest.len());
        rest[..end].parse::<f64>().ok()
    };
    if quiet {
        let line = text.lines().rev().find(|l| l.starts_with("host time "))?;
        number(line.strip_prefix("host time ")?)
    } else {
        let key = "\"host_seconds\":";
        let at = text.rfind(key)?;
        number(text[at + key.len()..].trim_start())
    }
}

fn check_exit(c: Case, out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(want_exit(c)),
        "{c}: {BIN} exited {}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sanity(c: Case) -> Report {
    let out = spawn(c, false);
    check_exit(c, &out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{c}: the --json report does not parse: {e}"));
    let num = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{c}: no {k}"));
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "{c}: errors");
    assert_eq!(num("expectations_failed"), 0.0, "{c}: failed expectations");
    let skipped = num("expectations_skipped") as u64;
    let want_skipped = if c.timing_only { CHIP_DATA_EXPECTS } else { 0 };
    assert_eq!(skipped, want_skipped, "{c}: skipped expectations");
    let r = Report {
        sim_ns: num("sim_ns"),
        tx_descriptors: num("tx_descriptors") as u64,
    };
    assert_eq!(r.tx_descriptors, 4608, "{c}: TX descriptors");
    assert!(
        run_host_s(false, &out).is_some(),
        "{c}: no host_seconds in the report"
    );
    REPORTS.lock().unwrap().insert(c.to_string(), r);
    if !c.timing_only {
        let q = spawn(c, true);
        check_exit(c, &q);
        *QUIET_BYTES.lock().unwrap() = Some(q.stdout.len() + q.stderr.len());
    }
    r
}

#[divan::bench(args = CASES, sample_count = 20, sample_size = 1)]
fn process(bencher: Bencher, c: Case) {
    let r = sanity(c);
    let key = c.to_string();
    bencher
        .counter(ItemsCount::new(r.tx_descriptors))
        .bench_local(|| {
            let thp_before = huge_page_faults();
            let t = Instant::now();
            let out = spawn(c, c.quiet);
            let d = t.elapsed();
            if let (Some(a), Some(b)) = (thp_before, huge_page_faults()) {
                HUGE_PAGES
                    .lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_default()
                    .push(b.saturating_sub(a));
            }
            check_exit(c, &out);
            RUNS.lock().unwrap().entry(key.clone()).or_default().push(d);
            if let Some(h) = run_host_s(c.quiet, &out) {
                RUN_HOST
                    .lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_default()
                    .push(h);
            }
            black_box(out);
        });
}

/// One floor process, to its exit; its output is checked. `None`: the
/// system has no `true` to run (that floor is then not given).
fn spawn_floor(case: &str) -> Option<Output> {
    use std::io::Write as _;
    if case == SYSTEM_TRUE {
        let out = Command::new("true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        return out.status.success().then_some(out);
    }
    let mut cmd = Command::new(BIN);
    let one_statement = case != "--version";
    if one_statement {
        cmd.args(["run", "-q", "-"]).stdin(Stdio::piped());
    } else {
        cmd.arg("--version").stdin(Stdio::null());
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(FLOOR_TRACE).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{case}: {BIN} exited {}; stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let want = if one_statement {
        "1 statements, 0 expectations passed"
    } else {
        "neuron-sim"
    };
    assert!(text.contains(want), "{case}: {text}");
    Some(out)
}

#[divan::bench(args = FLOOR_CASES, sample_count = 20, sample_size = 1)]
fn floor(bencher: Bencher, case: &'static str) {
    let runs = spawn_floor(case).is_some();
    bencher.bench_local(|| {
        let t = Instant::now();
        let out = spawn_floor(case);
        let d = t.elapsed();
        if runs {
            FLOORS.lock().unwrap().entry(case).or_default().push(d);
        }
        black_box(out);
    });
}

/// The system's count of transparent huge pages faulted so far
/// (`thp_fault_alloc` in `/proc/vmstat`), where there is one: what the
/// kernel zeroes 2 MiB at a time for a process whose allocator advises
/// them (docs/user-guide.md §14, "The allocator's page geometry").
fn huge_page_faults() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/vmstat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("thp_fault_alloc "))?
        .trim()
        .parse()
        .ok()
}

fn median<T: Ord + Copy>(v: &[T]) -> T {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

fn summary() {
    let runs = RUNS.lock().unwrap();
    let reports = REPORTS.lock().unwrap();
    let run_host = RUN_HOST.lock().unwrap();
    if runs.is_empty() {
        return;
    }
    println!(
        "\nsummary (median wall time of the whole `neuron-sim run --json` or `-q` process on \
         traces/calib/chip-8-cores-hbm.trace; slowdown = process time / simulated time; \
         run host = median host time the timed runs report themselves)"
    );
    println!(
        "{:<16} {:>10} {:>10} {:>12} {:>12} {:>10} {:>11}",
        "case", "process", "run host", "sim time", "TX desc/s", "slowdown", "huge pages"
    );
    let huge_pages = HUGE_PAGES.lock().unwrap();
    let mut slowdown_t = Vec::new();
    let mut sim_ns = None;
    for c in CASES {
        let (Some(r), Some(rep)) = (runs.get(&c.to_string()), reports.get(&c.to_string())) else {
            continue;
        };
        let t = median(r).as_secs_f64();
        let host = run_host.get(&c.to_string()).map_or(f64::NAN, |h| {
            let mut h = h.clone();
            h.sort_unstable_by(f64::total_cmp);
            h[h.len() / 2]
        });
        let slowdown = t / (rep.sim_ns * 1e-9);
        sim_ns = Some(rep.sim_ns);
        if c.timing_only {
            slowdown_t.push((*c, slowdown));
        }
        // The median over the timed runs (the count is the system's: another
        // process's faults in the same window would count too).
        let thp = huge_pages
            .get(&c.to_string())
            .map_or("-".to_string(), |v| median(v).to_string());
        println!(
            "{:<16} {:>8.1}ms {:>8.1}ms {:>10.1}us {:>12.0} {:>9.0}x {:>11}",
            c.to_string(),
            t * 1e3,
            host * 1e3,
            rep.sim_ns / 1e3,
            rep.tx_descriptors as f64 / t,
            slowdown,
            thp
        );
    }
    if let Some(sim_ns) = sim_ns {
        let floors = FLOORS.lock().unwrap();
        for (case, times) in FLOOR_CASES.iter().filter_map(|c| Some((c, floors.get(c)?))) {
            let t = median(times).as_secs_f64();
            println!(
                "floor {case:<22} {:>6.2}ms = {:>4.0}x the chip trace's simulated time (same run)",
                t * 1e3,
                t / (sim_ns * 1e-9)
            );
        }
    }
    let budget = |name: &str, ok: bool, detail: String| {
        println!(
            "budget {name}: {} ({detail})",
            if ok { "met" } else { "MISSED" }
        );
    };
    for (c, s) in slowdown_t {
        budget(
            &format!(
                "chip stream (8 cores), timing-only, end to end as a process ({}) <= 150x slower than real time (issue 12)",
                if c.quiet { "-q" } else { "--json" }
            ),
            s <= 150.0,
            format!("{s:.0}x"),
        );
    }
    if let Some(n) = *QUIET_BYTES.lock().unwrap() {
        budget(
            "`neuron-sim run -q` on the chip trace prints under 2 KB (issue 12)",
            n < 2048,
            format!("{n} bytes"),
        );
    }
}

fn main() {
    // As divan decides: `cargo bench` passes `--bench`; `cargo test
    // --benches` does not, and runs each case once (a smoke test).
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    divan::main();
    if bench {
        summary();
    }
}
