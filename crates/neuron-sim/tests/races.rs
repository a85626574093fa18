//! The race detector on the golden traces (docs/races.md): every trace of
//! `traces/` runs with detection on; the `race-*.trace` ones carry a known
//! synchronisation bug and must report it (their race sections are insta
//! snapshots), every other must report no race.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use soc::exec::TraceFiles;
use soc::{Device, RaceSummary};

struct DirFiles(PathBuf);

impl TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("golden traces must not write files"))
    }
}

/// Runs `path` with the detector on: its race section and its output text.
fn detect(path: &Path) -> (RaceSummary, String) {
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut dev = Device::trn2().unwrap();
    dev.detect_races();
    if name.starts_with("uninit-") {
        dev.set_uninit(None, true);
    }
    let mut files = DirFiles(path.parent().unwrap().to_path_buf());
    let (report, mut session) = match host_exec::run_source(dev, &source, &name, &mut files) {
        Ok(r) => r,
        Err(errors) => panic!("{name} does not parse or link: {errors:#?}"),
    };
    let summary = session.device_mut().race_summary().unwrap();
    (summary, report.to_text())
}

fn traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    paths.sort();
    paths
}

/// Golden traces that demonstrate a synchronisation bug on purpose: the
/// `race-*`, `deadlock-*` and `uninit-*` ones (the last run with
/// `--check-uninit`), and two older ones — an INDIRECT1D scatter that names
/// one destination twice (its run output says "scatter race") and a lost
/// H2T doorbell injected into the driver (`driver drop_batch`), after
/// which the host rewrites a completion marker a stale batch still writes.
fn is_buggy(p: &Path) -> bool {
    p.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with("race-")
            || n.starts_with("deadlock-")
            || n.starts_with("uninit-")
            || n == "fw-kv-cache-scatter.trace"
            || n == "host-driver-drop-batch.trace"
    })
}

#[test]
fn no_golden_trace_without_a_known_bug_reports_a_race() {
    let mut checked = 0;
    let mut bad = String::new();
    for p in traces().iter().filter(|p| !is_buggy(p)) {
        let (s, _) = detect(p);
        if !s.races.is_empty() || s.deadlock() {
            bad.push_str(&format!("{}:\n{}", p.display(), s.to_text()));
        }
        checked += 1;
    }
    assert!(
        bad.is_empty(),
        "races or deadlocks in traces without a known bug:\n{bad}"
    );
    assert!(checked >= 40, "only {checked} traces checked");
}

#[test]
fn every_known_bug_is_found() {
    let mut seen = 0;
    for p in traces().iter().filter(|p| is_buggy(p)) {
        let (s, _) = detect(p);
        assert!(
            !s.races.is_empty()
                || s.deadlock()
                || s.uninit.as_ref().is_some_and(|u| !u.reads.is_empty()),
            "{}: the known race or deadlock was not found",
            p.display()
        );
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(name, s.to_text());
        seen += 1;
    }
    assert!(seen >= 4, "expected the four race traces, found {seen}");
}

fn neuron_sim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .unwrap()
}

#[test]
fn fail_on_race_exits_1_on_a_race_and_0_without() {
    let racy = neuron_sim(&[
        "run",
        "traces/race-missing-dmb.trace",
        "--fail-on-race",
        "-q",
    ]);
    assert_eq!(racy.status.code(), Some(1));
    let text = String::from_utf8_lossy(&racy.stdout);
    assert!(
        text.contains("read/write race on hbm0+0x200000..+0x201000"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&racy.stderr).contains("--fail-on-race: 1 race(s)"));
    let clean = neuron_sim(&["run", "traces/copy-hbm-hbm.trace", "--fail-on-race", "-q"]);
    assert_eq!(clean.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("race: 0 race(s)"));
}

#[test]
fn fail_on_race_exits_1_on_a_deadlock() {
    // The trace's own checks pass (both semaphores read 0), but its words
    // never ran: the end-of-trace check fails it with or without
    // --fail-on-race (docs/firmware.md §Work left at the end).
    let plain = neuron_sim(&[
        "run",
        "traces/deadlock-semaphore-chain.trace",
        "--detect-races",
        "-q",
    ]);
    assert_eq!(plain.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&plain.stdout)
            .contains("the trace ended with firmware work that can never run: tpb0#0 DIRECT2D (line 14) waits on tpb0.sem[6]"),
        "{}",
        String::from_utf8_lossy(&plain.stdout)
    );
    let out = neuron_sim(&[
        "run",
        "traces/deadlock-semaphore-chain.trace",
        "--fail-on-race",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("race: 0 race(s)"), "{text}");
    assert!(
        text.contains("DEADLOCK, 3 wait(s) nothing can end"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("race(s)"), "no race to count: {err}");
}

#[test]
fn json_has_a_race_object_only_when_detecting() {
    let on = neuron_sim(&[
        "run",
        "traces/race-two-cores-one-hbm-range.trace",
        "--json",
        "--detect-races",
        "--no-host-timing",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&on.stdout).unwrap();
    let r = &v["race"]["races"][0];
    assert_eq!(r["kind"], "write/write");
    assert_eq!(r["range"], "hbm0+0x20100000..+0x20100200");
    assert_eq!(r["first"]["agent"], "eng0.q0");
    assert_eq!(r["second"]["agent"], "eng16.q0");
    let off = neuron_sim(&[
        "run",
        "traces/race-two-cores-one-hbm-range.trace",
        "--json",
        "--no-host-timing",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    assert!(v.get("race").is_none());
}

#[test]
fn deadlock_graph_writes_dot_with_the_deadlocked_waits() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dot = dir.join("g.dot");
    let out = neuron_sim(&[
        "run",
        "traces/deadlock-semaphore-chain.trace",
        "--deadlock-graph",
        dot.to_str().unwrap(),
        "-q",
    ]);
    // The deadlock fails the trace (docs/firmware.md §Work left at the end).
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("DEADLOCK, 3 wait(s) nothing can end"),
        "{text}"
    );
    let g = std::fs::read_to_string(&dot).unwrap();
    assert!(g.starts_with("digraph waitfor {"), "{g}");
    assert!(
        g.contains("\"tpb0#0 DIRECT2D (line 14)\" -> \"tpb0.sem[6]\""),
        "{g}"
    );
    assert!(g.contains("color=red"), "{g}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn uninit_nan_fills_never_written_bytes_and_zero_leaves_them() {
    let nan = neuron_sim(&[
        "run",
        "traces/uninit-psum-bank.trace",
        "--uninit",
        "nan",
        "--check-uninit",
        "--json",
        "--no-host-timing",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&nan.stdout).unwrap();
    let u = &v["race"]["uninit"];
    assert_eq!(u["reads_of_setup_bytes"], 1);
    assert_eq!(u["reads"][0]["range"], "tpb0.psum[p0]+0x800..+0x1000");
    assert_eq!(u["reads"][0]["len_bytes"], 2048);
    let bad = neuron_sim(&[
        "run",
        "traces/uninit-psum-bank.trace",
        "--uninit",
        "pattern=0x1ff",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an uninit mode"));
}

#[test]
fn uninit_nan_is_the_nan_of_the_element_type_the_reader_uses() {
    let trace = "crates/neuron-sim/tests/data/uninit-nan-dtypes.trace";
    // Its checks: the BF16 NaN of an FP32 source converted, -1 from INT8,
    // 0xFF bytes from a raw copy.
    let nan = neuron_sim(&["run", trace, "--uninit", "nan", "-q", "--no-host-timing"]);
    assert_eq!(
        nan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&nan.stdout)
    );
    assert!(String::from_utf8_lossy(&nan.stdout).contains("6 expectations passed, 0 failed"));
    // 0xFF bytes everywhere: the FP32 source reads as a negative NaN and
    // the BF16 result is 0xFFC0; the other two checks hold.
    let ff = neuron_sim(&["run", trace, "--uninit", "pattern=0xff", "--no-host-timing"]);
    assert_eq!(ff.status.code(), Some(1));
    let text = String::from_utf8_lossy(&ff.stdout);
    assert!(
        text.contains("byte 1 (at 0x2000000001) is 0xff, expected 0x7f; read c0ffc0ff"),
        "{text}"
    );
    assert!(text.contains("5 expectations passed, 1 failed"), "{text}");
}

#[test]
fn uninit_nan_through_a_transpose_is_the_nan_of_its_dtype_on_both_paths() {
    let trace = "crates/neuron-sim/tests/data/uninit-nan-transpose.trace";
    // Its checks: BF16 (SBUF source) and FP32 (HBM source) cross-bar
    // transposes land their dtype's quiet NaN, INT32 lands 0xFF bytes, and
    // BF16 element pieces (plain one-element copies) land the BF16 NaN too.
    let nan = neuron_sim(&["run", trace, "--uninit", "nan", "-q", "--no-host-timing"]);
    let text = String::from_utf8_lossy(&nan.stdout);
    assert_eq!(nan.status.code(), Some(0), "{text}");
    assert!(text.contains("11 expectations passed, 0 failed"), "{text}");
    // A byte pattern is the pattern whatever the element type: every
    // destination check fails, each reading 0xab.
    let ab = neuron_sim(&["run", trace, "--uninit", "pattern=0xab", "--no-host-timing"]);
    let text = String::from_utf8_lossy(&ab.stdout);
    assert_eq!(ab.status.code(), Some(1), "{text}");
    assert!(text.contains("4 expectations passed, 7 failed"), "{text}");
    let failed: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.contains(": FAILED expect") && l.contains("is 0xab, expected"))
        .collect();
    assert_eq!(failed.len(), 7, "{text}");
    assert!(
        text.contains("byte 0 (at 0x2000060000) is 0xab, expected 0xc0; read abab0000"),
        "the element pieces' gaps stay untouched: {text}"
    );
}

#[test]
fn race_command_finds_the_schedule_dependent_check_and_nothing_elsewhere() {
    let racy = neuron_sim(&[
        "race",
        "traces/race-two-cores-one-hbm-range.trace",
        "--seeds",
        "16",
    ]);
    assert_eq!(racy.status.code(), Some(1));
    let text = String::from_utf8_lossy(&racy.stdout);
    assert!(
        text.contains("1 check(s) differ between schedules"),
        "{text}"
    );
    assert!(text.contains("line 19: seed 1: Failed"), "{text}");
    // Every trace without a known bug gives the same checks under every
    // schedule.
    for p in traces().iter().filter(|p| !is_buggy(p)) {
        let out = neuron_sim(&["race", p.to_str().unwrap(), "--seeds", "4"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn race_json_gives_per_seed_digests_the_pairs_that_differ_and_the_races() {
    // Under seeds 1..=8 the two cores' copies land in both orders: seeds 7
    // and 8 leave tpb1's bytes (the check holds), the others tpb0's.
    let out = neuron_sim(&[
        "race",
        "traces/race-two-cores-one-hbm-range.trace",
        "--seeds",
        "8",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trace"], "traces/race-two-cores-one-hbm-range.trace");
    assert_eq!(v["differ"], true);
    let seeds = v["seeds"].as_array().unwrap();
    let seed_list: Vec<u64> = seeds.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seed_list, (1..=8).collect::<Vec<u64>>());
    let digest = |i: usize| seeds[i]["digest"].as_str().unwrap();
    for (i, s) in seeds.iter().enumerate().take(6) {
        assert_eq!(digest(i), digest(0), "seed {}", i + 1);
        assert_eq!(s["checks_failed"], 1, "seed {}", i + 1);
    }
    assert_ne!(digest(6), digest(0));
    assert_eq!(digest(7), digest(6));
    assert_eq!(seeds[6]["checks_failed"], 0);
    // Two digests: one pair, naming the line of the check.
    assert_eq!(
        v["pairs"],
        serde_json::json!([{ "seed_a": 1, "seed_b": 7, "lines": [19] }])
    );
    assert_eq!(v["checks_differ"][0]["line"], 19);
    assert_eq!(v["checks_differ"][0]["seed_b"], 7);
    // The detector finds the one write/write race under every seed.
    let races = v["races"].as_array().unwrap();
    assert_eq!(races.len(), 1, "{races:#?}");
    assert_eq!(races[0]["race"]["kind"], "write/write");
    assert_eq!(races[0]["race"]["range"], "hbm0+0x20100000..+0x20100200");
    let mut sides = [
        races[0]["race"]["first"]["agent"].as_str().unwrap(),
        races[0]["race"]["second"]["agent"].as_str().unwrap(),
    ];
    sides.sort_unstable();
    assert_eq!(sides, ["eng0.q0", "eng16.q0"]);
    assert_eq!(
        races[0]["seeds"],
        serde_json::json!([1, 2, 3, 4, 5, 6, 7, 8])
    );
    assert!(
        seeds
            .iter()
            .all(|s| s["races"] == 1 && s["deadlock"] == false)
    );
    // The text form names the same pair.
    let text = neuron_sim(&[
        "race",
        "traces/race-two-cores-one-hbm-range.trace",
        "--seeds",
        "8",
    ]);
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("seeds 1 and 7 read other bytes at line(s) 19"),
        "{text}"
    );
}

/// `race` over a trace that dumps to a file: the seeds run in parallel and
/// write no file (a file already there keeps its bytes), yet the dump's
/// bytes are compared, and a later `load` of the dumped path reads the
/// seed's own dump; `run --schedule-seed N` writes the file of seed N.
#[test]
fn race_seeds_keep_dump_files_in_memory_and_still_compare_them() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-race-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../traces/race-two-cores-one-hbm-range.trace"),
    )
    .unwrap();
    text.push_str(
        "dump hbm0+0x20100000 len=512 file=out.bin\n\
         load hbm0+0x20300000 file=out.bin\n\
         expect hbm0+0x20300000 bytes=80818283\n",
    );
    let trace = dir.join("t.trace");
    std::fs::write(&trace, &text).unwrap();
    let out = dir.join("out.bin");
    let trace = trace.to_str().unwrap();
    // No file before: none after.
    let r = neuron_sim(&["race", trace, "--seeds", "8"]);
    let report = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(1), "{report}");
    assert!(!out.exists(), "race wrote {}", out.display());
    // The dump (line 20) and the load's check (line 22) read other bytes
    // under seeds 1 and 7, as the first check (line 19) does.
    assert!(
        report.contains("seeds 1 and 7 read other bytes at line(s) 19, 20, 22"),
        "{report}"
    );
    assert!(report.contains("line 22: seed 1: Failed"), "{report}");
    // Standard error says where the dump went, and how to get one seed's.
    let note = String::from_utf8_lossy(&r.stderr);
    assert_eq!(
        note.trim_end(),
        "race: dump files kept in each seed's memory, not written: out.bin \
         (one seed's files: `neuron-sim run TRACE --schedule-seed N`; docs/races.md)"
    );
    // A file already there keeps its bytes.
    std::fs::write(&out, b"mine").unwrap();
    let r = neuron_sim(&["race", trace, "--seeds", "8", "--json"]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(std::fs::read(&out).unwrap(), b"mine");
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["errors"], serde_json::json!([]));
    assert_eq!(v["pairs"][0]["lines"], serde_json::json!([19, 20, 22]));
    // One seed's files: `run --schedule-seed 7` (tpb1's copy lands last).
    let one = neuron_sim(&["run", trace, "--schedule-seed", "7", "-q"]);
    assert_eq!(
        one.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&one.stdout)
    );
    assert_eq!(std::fs::read(&out).unwrap()[..4], [0x80, 0x81, 0x82, 0x83]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn race_json_on_the_deadlock_trace_says_so_for_every_seed() {
    let out = neuron_sim(&[
        "race",
        "traces/deadlock-semaphore-chain.trace",
        "--seeds",
        "2",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "same outcomes under both");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["seeds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["deadlock"] == true)
    );
    assert_eq!(v["races"], serde_json::json!([]));
}

#[test]
fn perfetto_flags_both_sides_of_a_race_with_a_flow() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-race-pf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("t.json");
    let out = neuron_sim(&[
        "run",
        "traces/race-two-cores-one-hbm-range.trace",
        "--detect-races",
        "--perfetto",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let races: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "race")
        .collect();
    assert_eq!(races.len(), 2, "{races:#?}");
    assert_eq!(races[0]["bind_id"], races[1]["bind_id"]);
    assert_eq!(races[0]["flow_out"], true);
    assert_eq!(races[1]["flow_in"], true);
    assert_ne!(
        races[0]["tid"], races[1]["tid"],
        "each on its queue's track"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `race` on a trace that meets bad input while running exits 2 as `run`
/// does and lists the errors once, not "the same outcomes under every
/// schedule" with exit 0; one that does not parse runs no seed and says
/// so on stderr. Found by a review.
#[test]
fn race_reports_bad_input_as_run_does() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-race-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let errs = dir.join("errs.trace");
    std::fs::write(&errs, "alloc a size=0x1000\ncopyin nope byte=1\nfree a\n").unwrap();
    let o = neuron_sim(&["race", errs.to_str().unwrap(), "--seeds", "3"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(!out.contains("the same outcomes"), "{out}");
    assert!(out.contains("3 of them met errors (exit 2)"), "{out}");
    assert_eq!(
        out.matches("no tensor `nope`").count(),
        1,
        "listed once: {out}"
    );
    assert!(out.contains("seeds 1, 2, 3: "), "{out}");

    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "alloc a size=0\n").unwrap();
    let o = neuron_sim(&["race", bad.to_str().unwrap(), "--seeds", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 error(s); nothing was run"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `race` compares what a host `copyout` read too: the known bug of
/// `race-host-copyout` (a copy-out while a DIRECT2D still writes the
/// tensor) reads other bytes under another schedule. Found by a review
/// (it said "the same outcomes", exit 0).
#[test]
fn race_sees_a_copyout_that_reads_other_bytes() {
    let o = neuron_sim(&["race", "traces/race-host-copyout.trace", "--seeds", "8"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("read other bytes at line(s) 14"), "{out}");
}

/// `race` said "the same outcomes under every schedule" and exited 0 for a
/// trace whose check fails under every seed, and the races the detector
/// found under every seed showed only in `--json` (probe report
/// sweep-etc.md finding 2). A check that fails under every seed is now
/// named in the text and makes `race` exit 1, as `run` would; the races
/// the detector found are listed in the text too.
#[test]
fn race_reports_a_check_failing_under_every_seed_and_the_races_found() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-race-allfail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("allfail.trace");
    std::fs::write(&trace, "fill hbm0 len=16 byte=1\nexpect hbm0 bytes=02\n").unwrap();
    let out = neuron_sim(&[
        "race",
        trace.to_str().unwrap(),
        "--seeds",
        "4",
        "--jobs",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with(
            "4 seeds (1..4), 1 checks each: the same outcomes under every schedule, \
             but 1 check(s) fail under every seed\n  line 2: every seed: Failed: expect hbm0"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // The detector finds the missing DMB's race under every seed.
    let out = neuron_sim(&[
        "race",
        "traces/race-missing-dmb.trace",
        "--seeds",
        "2",
        "--jobs",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("the race detector found 1 race(s)"), "{text}");
    assert!(text.contains("race on "), "{text}");
    assert!(text.contains("under seeds 1, 2"), "{text}");
}
