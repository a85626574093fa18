//! Timing calibration (docs/references/design.md §4, docs/timing.md "Calibration"): one
//! engine moving 32 KiB HBM→SBUF with its 4-byte semaphore write takes
//! 1416 ns ± 10 % of simulated time with the default configuration; and
//! every row of the calibration table (`neuron-sim calibrate` over
//! `traces/calib/`) stays within its check — ±10 %, the published shape as
//! inequalities, or, for a documented model gap, its documented value —
//! while the table in docs/timing.md is current.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use soc::Device;
use soc::exec::TraceFiles;

struct NoFiles;

impl TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!("no file {path}")))
    }
    fn write(&mut self, path: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!("no file {path}")))
    }
}

#[test]
fn one_engine_32k_hbm_to_sbuf_with_semaphore_is_1416ns() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/calib-32k-hbm-sbuf.trace");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut dev = Device::trn2().unwrap();
    let report = soc::exec::run_source(&mut dev, &source, "calib", &mut NoFiles).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    let q = report.summary.queues.values().next().unwrap();
    assert_eq!(q.bytes, 32 * 1024 + 4);
    // From the doorbell (cycle 0) to the semaphore write landing.
    let ns = dev.timing().ns(q.last_cycle.unwrap());
    assert!(
        (ns - 1416.0).abs() <= 141.6,
        "simulated {ns:.1} ns, published 1416 ns"
    );
}

// ---------------------------------------------------------------------
// The calibration table (issue 6 item 4; docs/timing.md "Calibration"):
// `neuron-sim calibrate` runs traces/calib/ once for all the tests below.

use std::process::Command;
use std::sync::OnceLock;

fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `neuron-sim calibrate --json --check docs/timing.md`, run once.
fn calibration() -> &'static serde_json::Value {
    static CAL: OnceLock<serde_json::Value> = OnceLock::new();
    CAL.get_or_init(|| {
        let o = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .current_dir(workspace())
            .args([
                "calibrate",
                "--dir",
                "traces/calib",
                "--json",
                "--check",
                "docs/timing.md",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        // 0: every row within its check and the table in docs/timing.md
        // current; 1 names the stale table or a row outside its check.
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        serde_json::from_slice(&o.stdout).unwrap()
    })
}

fn row(id: &str) -> &'static serde_json::Value {
    calibration()["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no calibration row {id}"))
}

fn value(id: &str) -> f64 {
    row(id)["simulated_value"].as_f64().unwrap()
}

fn within_10_percent(id: &str, published: f64) {
    let r = row(id);
    assert_eq!(r["published_value"].as_f64().unwrap(), published, "{id}");
    let v = value(id);
    assert!(
        (v - published).abs() <= 0.10 * published,
        "row {id}: simulated {v}, published {published} ± 10 %"
    );
    assert_eq!(r["status"], "ok", "{id}");
}

#[test]
fn row_a_one_engine_32k_is_1416ns() {
    within_10_percent("a", 1416.0);
    assert_eq!(row("a")["cycles"][0], 1207);
}

#[test]
fn row_b_one_engine_streams_23_bytes_per_ns() {
    within_10_percent("b", 23.0);
}

#[test]
fn row_c_sixteen_engines_give_368_gbps() {
    within_10_percent("c", 368.0);
}

#[test]
fn row_d_bandwidth_versus_bytes_per_partition_has_the_published_shape() {
    assert_eq!(row("d")["status"], "ok");
    let shape = calibration()["shape"].as_array().unwrap();
    let sizes: Vec<u64> = shape
        .iter()
        .map(|p| p["partition_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sizes,
        (7..=16).map(|e| 1u64 << e).collect::<Vec<_>>(),
        "128 B … 64 KiB"
    );
    let frac = |bytes: u64| {
        shape
            .iter()
            .find(|p| p["partition_bytes"] == bytes)
            .unwrap()["fraction"]
            .as_f64()
            .unwrap()
    };
    // < 256 B: severely overhead-bound; ≥ 2 KiB near; ≥ 4 KiB at peak
    // (docs/references/figures.md §A.4; the inequalities of docs/timing.md).
    assert!(frac(128) <= 0.5, "128 B at {:.3}", frac(128));
    for b in [2048, 4096, 8192, 16384, 32768, 65536] {
        assert!(frac(b) >= 0.75, "{b} B at {:.3}", frac(b));
    }
    for b in [4096, 8192, 16384, 32768, 65536] {
        assert!(frac(b) >= 0.90, "{b} B at {:.3}", frac(b));
    }
    let gbps: Vec<f64> = shape
        .iter()
        .map(|p| p["bandwidth_gbps"].as_f64().unwrap())
        .collect();
    assert!(gbps.windows(2).all(|w| w[1] >= w[0]), "{gbps:?}");
}

#[test]
fn row_e_eight_cores_stay_within_chip_hbm_2_9_tbps() {
    within_10_percent("e", 2900.0);
    assert!(value("e") <= 2900.0, "above the chip's HBM bandwidth");
}

/// Rows f1, f2: the DMA transposes through the axi2sram cross-bar reach the
/// published share of copy throughput (up to 90 % HBM→SBUF, 50 %
/// SBUF→SBUF) within ±10 % (`xbar_column_cycles` is calibrated on them).
#[test]
fn rows_f_transposes_reach_the_published_share_of_copy() {
    for (id, published) in [("f1", 0.90), ("f2", 0.50)] {
        let r = row(id);
        assert_eq!(r["status"], "ok", "{id}: {r}");
        assert_eq!(r["published_value"].as_f64().unwrap(), published);
        let ratio = value(id);
        assert!(
            ((ratio - published) / published).abs() <= 0.10,
            "{id}: {ratio} of copy"
        );
    }
    // SBUF sources cross the bridge twice: f2 is the slower one.
    assert!(value("f2") < value("f1"));
}

/// The shared HBM limit behind row (e) (`hbm_stack_gbps`, docs/timing.md):
/// the chip trace with every core reading hbm0 gets one stack's 725 GB/s,
/// and without the limit the chip row would exceed 2.9 TB/s.
#[test]
fn one_hbm_stack_is_shared_by_every_engine() {
    let path = workspace().join("traces/calib/chip-8-cores-hbm.trace");
    let text = std::fs::read_to_string(&path).unwrap();
    let gbps = |source: &str, timing: sim_core::TimingConfig| {
        let mut dev =
            Device::with_timing(soc_map::trn2().unwrap(), csr::catalog().unwrap(), timing).unwrap();
        dev.set_timing_only(true);
        dev.set_trace(false);
        let (report, _) = host_exec::run_source(dev, source, "chip", &mut NoFiles).unwrap();
        // Timing-only: only the data expectations may fail.
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert!(
            report
                .failures
                .iter()
                .all(|f| f.to_string().contains("expect "))
        );
        let ns = report.summary.sim_ns;
        64.0 * 1024.0 * 1024.0 / ns
    };
    let default = sim_core::TimingConfig::default_config().unwrap();
    // Every core from hbm0 (the trace's sources on hbm1..3 moved to hbm0).
    let one_stack = text
        .replace("imm:0x4010000000", "imm:0x10000000")
        .replace("imm:0x800010000000", "imm:0x10000000")
        .replace("imm:0x804010000000", "imm:0x10000000");
    assert_ne!(one_stack, text);
    let g = gbps(&one_stack, default.clone());
    assert!((650.0..=725.0).contains(&g), "one stack: {g:.1} GB/s");
    let mut unlimited = default;
    unlimited.hbm_stack_gbps = 0.0;
    let g = gbps(&text, unlimited);
    assert!(g > 2900.0, "no shared limit: {g:.1} GB/s");
}

/// Row g: the DGE generates one [128, N] word on 16 engines (288
/// descriptors) in ≈ 600 ns; the row's slope is exactly the firmware's
/// per-word cost, `q7_decode_cycles` + 288 × `q7_desc_write_cycles`.
#[test]
fn row_g_the_dge_generates_a_word_in_600ns() {
    within_10_percent("g", 600.0);
    let t = sim_core::TimingConfig::default_config().unwrap();
    let c = &row("g")["cycles"];
    let (one, sixteen) = (c[0].as_u64().unwrap(), c[1].as_u64().unwrap());
    assert_eq!(
        sixteen - one,
        15 * (t.q7_decode_cycles + 288 * t.q7_desc_write_cycles)
    );
}

/// Row h: from another engine's semaphore write landing to the first
/// packet of the word it released, ≈ 1300 ns: the semaphore wake, the
/// word's generation (row g), the doorbell and the first prefetch of 8
/// descriptors (docs/timing.md, row h).
#[test]
fn row_h_semaphore_to_start_across_engines_is_1300ns() {
    within_10_percent("h", 1300.0);
    let t = sim_core::TimingConfig::default_config().unwrap();
    let cycles = (value("h") * t.clock_ghz).round() as u64;
    assert_eq!(
        cycles,
        t.q7_sem_wake_cycles
            + t.q7_decode_cycles
            + 288 * t.q7_desc_write_cycles
            + t.doorbell_latency_cycles
            + t.desc_fetch_latency_cycles
            + 8 * t.desc_fetch_per_desc_cycles
    );
}

/// Row i: 3.5 TB/s per device is 128 engines at the theoretical 27.2
/// GB/s; the defaults follow the achievable 23 B/ns of rows (a) and (b),
/// so the row is held to the error docs/timing.md states for it, not to
/// ±10 % — and that error is what the per-engine rate of row (b) predicts.
#[test]
fn row_i_chip_dma_bandwidth_keeps_its_stated_error() {
    let r = row("i");
    assert_eq!(r["published_value"].as_f64().unwrap(), 3500.0);
    assert_eq!(r["status"], "ok", "{r}");
    let stated = r["stated_error_pct"].as_f64().unwrap();
    assert_eq!(stated, -14.6);
    let err = r["error_pct"].as_f64().unwrap();
    assert!((err - stated).abs() <= 1.0, "error {err:.1} %");
    assert!(err < -10.0, "a ±10 % row needs no stated error");
    // 128 engines at row (b)'s per-engine rate, less the start-up.
    let per_engine = value("i") / 128.0;
    assert!(
        per_engine <= value("b") && per_engine >= 0.95 * value("b"),
        "{per_engine:.2} B/ns per engine, row b {:.2}",
        value("b")
    );
    // No other row carries a stated error.
    for id in ["a", "b", "c", "d", "e", "f1", "f2", "g", "h"] {
        assert!(row(id).get("stated_error_pct").is_none(), "{id}");
    }
}

/// The probe report's finding 9: a calibration trace that fails its own
/// check once made the command exit 2 ("bad input") with no table and no
/// JSON. Now the rows it feeds are failed, the others are reported and
/// judged, the trace is named on stderr, and the exit status is 1 (a
/// failed check, as `run` of that trace gives).
#[test]
fn a_calibration_trace_failing_its_own_check_fails_its_row_and_the_rest_are_reported() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("calibrate-failing-trace");
    let calib = dir.join("calib");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&calib).unwrap();
    std::fs::copy(
        workspace().join("traces/calib-32k-hbm-sbuf.trace"),
        dir.join("calib-32k-hbm-sbuf.trace"),
    )
    .unwrap();
    for e in std::fs::read_dir(workspace().join("traces/calib")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), calib.join(e.file_name())).unwrap();
    }
    let broken = calib.join("core-16-engines.trace");
    let text = std::fs::read_to_string(&broken).unwrap();
    let good = "expect tpb0.sbuf[p0] bytes=00000020_01000020";
    assert!(text.contains(good));
    std::fs::write(
        &broken,
        text.replace(good, "expect tpb0.sbuf[p0] bytes=deadbeef"),
    )
    .unwrap();
    let calibrate = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neuron-sim"));
        c.args(["calibrate", "--jobs", "2", "--dir"]).arg(&calib);
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let o = calibrate(false);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("core-16-engines.trace: exit 1: ") && stderr.contains("expected 0xde"),
        "{stderr}"
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    let row_c = rows.iter().find(|l| l.starts_with("| c |")).unwrap();
    assert!(
        row_c
            .ends_with("| **not judged: `core-16-engines.trace` failed its own check (exit 1)** |"),
        "{row_c}"
    );
    for id in ["a", "b", "d", "e", "f1", "f2", "g", "h", "i"] {
        let r = rows
            .iter()
            .find(|l| l.starts_with(&format!("| {id} |")))
            .unwrap_or_else(|| panic!("no row {id}:\n{stdout}"));
        // A failed check is in bold (`**outside …**`, `**broken**`).
        assert!(!r.contains("**"), "{r}");
    }
    let o = calibrate(true);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for r in rows {
        let want = if r["id"] == "c" { "fail" } else { "ok" };
        assert_eq!(r["status"], want, "{r}");
    }
    let failed = v["failed_traces"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["exit"], 1);
    assert!(
        failed[0]["trace"]
            .as_str()
            .unwrap()
            .ends_with("core-16-engines.trace")
    );
    assert!(
        failed[0]["problem"]
            .as_str()
            .unwrap()
            .contains("expected 0xde")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
