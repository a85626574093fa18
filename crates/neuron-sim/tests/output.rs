//! `neuron-sim run` output as the run goes (docs/user-guide.md §Output):
//! statement lines and events are streamed, yet the text and the JSON are
//! those of the whole report; SIGINT stops a run, which still reports what
//! it did.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use soc::Device;
use soc::exec::TraceFiles;

struct DirFiles(PathBuf);

impl TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("no writes"))
    }
}

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces")
}

/// Traces with firmware, host operations, faults and CRC results.
const SAMPLES: [&str; 7] = [
    "fw-tile-load-bf16.trace",
    "fw-custom-op-inline.trace",
    "fw-semaphore-chain.trace",
    "host-dmem-batch.trace",
    "fault-doorbell-overrun.trace",
    "cme-crc.trace",
    "semaphore-on-completion.trace",
];

/// The report built in memory, as the golden tests see it: (text, JSON
/// value without the `host_timing` speed figures).
fn in_memory(name: &str) -> (String, serde_json::Value) {
    let path = traces().join(name);
    let source = std::fs::read_to_string(&path).unwrap();
    let mut files = DirFiles(traces());
    let (report, mut session) = host_exec::run_source(
        Device::trn2().unwrap(),
        &source,
        &path.display().to_string(),
        &mut files,
    )
    .unwrap();
    let mut text = report.to_text();
    let mut v = serde_json::to_value(&report).unwrap();
    v.as_object_mut()
        .unwrap()
        .insert("schema_version".into(), serde_json::Value::from(1));
    if session.used() {
        let h = session.report();
        text.push_str(&h.to_text());
        v.as_object_mut()
            .unwrap()
            .insert("host_runtime".into(), serde_json::to_value(&h).unwrap());
    }
    (text, v)
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn streamed_text_is_the_report_text() {
    for name in SAMPLES {
        let path = traces().join(name);
        let o = cli(&["run", path.to_str().unwrap(), "-v"]);
        let out = String::from_utf8(o.stdout).unwrap();
        let (want, _) = in_memory(name);
        let (body, last) = out.trim_end_matches('\n').rsplit_once('\n').unwrap();
        assert!(last.starts_with("host time "), "{name}: {last}");
        assert_eq!(format!("{body}\n"), want, "{name}");
    }
}

#[test]
fn streamed_json_is_the_report_json() {
    for name in SAMPLES {
        let path = traces().join(name);
        let o = cli(&["run", path.to_str().unwrap(), "--json"]);
        let out = String::from_utf8(o.stdout).unwrap();
        let mut v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: not JSON ({e}):\n{out}"));
        // Byte for byte what serde_json's pretty printer writes.
        let want = serde_json::to_string_pretty(&v).unwrap() + "\n";
        let first_diff = out
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b);
        assert!(
            out == want,
            "{name}: not laid out as serde_json's pretty printer does; first difference: {first_diff:?}"
        );
        assert!(v["host_timing"]["host_seconds"].is_number(), "{name}");
        v.as_object_mut().unwrap().remove("host_timing");
        let (_, want) = in_memory(name);
        assert!(
            v == want,
            "{name}: the streamed JSON differs from the report"
        );
        assert!(!v["steps"].as_array().unwrap().is_empty());
    }
}

/// A ring of `n` one-descriptor 64-byte packets on eng0 queue 0.
fn ring_trace(dir: &Path, n: u32) -> PathBuf {
    let m2s: Vec<u8> = (0..n)
        .flat_map(|_| hex("4000000d030008010001000000000000"))
        .collect();
    let s2m: Vec<u8> = (0..n)
        .flat_map(|_| hex("40000001000000000001000040000000"))
        .collect();
    std::fs::write(dir.join("m2s.bin"), m2s).unwrap();
    std::fs::write(dir.join("s2m.bin"), s2m).unwrap();
    let bytes = 16 * n;
    let t = format!(
        "write32 eng0.m2s.q0.tdrbp_low 0x10000000
write32 eng0.m2s.q0.tdrl {n}
write32 eng0.s2m.q0.rdrbp_low 0x10000000
write32 eng0.s2m.q0.rdrbp_high 0x40
write32 eng0.s2m.q0.rdrl {n}
write32 eng0.s2m.q0.comp_cfg 0x0
write32 eng0.m2s.q0.q_cfg 0x03030000
write32 eng0.s2m.q0.q_cfg 0x03030000
write32 eng0.m2s.change_state 1
write32 eng0.s2m.change_state 1
load hbm0+0x10000000 file=m2s.bin len={bytes}
load hbm1+0x10000000 file=s2m.bin len={bytes}
doorbell eng0.s2m.q0 {n}
doorbell eng0.m2s.q0 {n}
run
read32 eng0.m2s.q0.q_tx_pkt == {n}
"
    );
    let p = dir.join("ring.trace");
    std::fs::write(&p, t).unwrap();
    p
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn tmp_dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neuron-sim-output-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sigint_stops_a_run_which_reports_what_it_did() {
    interrupted_run("INT", 130);
}

#[test]
fn sigterm_stops_a_run_which_reports_what_it_did() {
    interrupted_run("TERM", 143);
}

/// Issue 11 item 1: a run killed by `signal` flushes its statement log and
/// the report of what already ran, and exits 128 + the signal number.
fn interrupted_run(signal: &str, code: i32) {
    let dir = tmp_dir(&format!("sig{signal}"));
    let trace = ring_trace(&dir, 1 << 20);
    let mut child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(["run", trace.to_str().unwrap(), "--timing-only"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    // Statement lines arrive as the run goes: wait for the doorbells.
    loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "ended early: {seen}"
        );
        seen.push_str(&line);
        if line.contains("doorbell eng0.m2s.q0") {
            break;
        }
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(code), "{seen}{rest}");
    // Interrupted during the `run`, or just before it.
    assert!(
        rest.contains(&format!(":15: interrupted by SIG{signal} at cycle "))
            || rest.contains(&format!(
                ":15: not run: interrupted by SIG{signal} at cycle "
            )),
        "{rest}"
    );
    assert!(
        rest.contains(&format!("\ninterrupted by SIG{signal} at cycle")),
        "{rest}"
    );
    assert!(
        rest.contains(" statements, "),
        "the summary is printed: {rest}"
    );
    // The statement after the interrupted `run` did not run.
    assert!(!rest.contains(":16: "), "{rest}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Issue 12 item 4: the default shows every statement and no event lines,
/// `-q` only failed statements and the summary, `-v` everything.
#[test]
fn output_levels() {
    let path = traces().join("fw-tile-load-bf16.trace");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = cli(&args);
        assert_eq!(o.status.code(), Some(0));
        (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (normal, err) = run(&[]);
    let (verbose, _) = run(&["-v"]);
    let (quiet, qerr) = run(&["-q"]);
    let events = |t: &str| t.lines().filter(|l| l.starts_with("    ")).count();
    assert_eq!(events(&normal), 0, "{normal}");
    assert!(events(&verbose) > 100);
    let statement_lines = |t: &str| {
        t.lines()
            .filter(|l| l.contains("fw-tile-load-bf16.trace:"))
            .count()
    };
    assert_eq!(statement_lines(&normal), 22);
    assert_eq!(statement_lines(&quiet), 0, "{quiet}");
    assert!(
        quiet.contains("22 statements, 16 expectations passed, 0 failed"),
        "{quiet}"
    );
    assert!(
        !quiet.contains("  eng0.q0:"),
        "-q leaves the per-queue lines out: {quiet}"
    );
    assert!(normal.contains("  eng0.q0:"));
    // Not a terminal: no progress line, in any mode.
    assert!(err.is_empty() && qerr.is_empty(), "{err}{qerr}");
    // A failed statement shows in -q.
    let dir = tmp_dir("levels");
    let t = dir.join("f.trace");
    std::fs::write(
        &t,
        "write32 tpb0.sem.set[1] 5\nread32 tpb0.sem.read[1] == 6\n",
    )
    .unwrap();
    let o = cli(&["run", t.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("f.trace:2: FAILED read32"), "{out}");
    assert!(!out.contains("f.trace:1:"), "{out}");
    let o = cli(&["run", t.to_str().unwrap(), "-q", "-v"]);
    assert_eq!(o.status.code(), Some(2), "-q and -v exclude each other");
    let _ = std::fs::remove_dir_all(dir);
}

/// A run that lasts more than a second draws no progress line when
/// stderr is not a terminal, and never with --json or -q.
#[test]
fn no_progress_line_off_a_terminal() {
    let dir = tmp_dir("progress");
    let trace = ring_trace(&dir, 1 << 16);
    for extra in [&[][..], &["-q"][..], &["--json"][..]] {
        let mut args = vec!["run", trace.to_str().unwrap(), "--timing-only"];
        args.extend_from_slice(extra);
        let o = cli(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}");
        assert!(
            o.stderr.is_empty(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A reader that stops early (`| head -1`) is not an error: what it did
/// not read is dropped and the run finishes — its exit status (a failed
/// check: 1), its output files (docs/user-guide.md §Standard input and
/// output). Each output level and `--json`.
#[test]
fn a_closed_pipe_drops_the_output_and_the_run_finishes() {
    let dir = tmp_dir("pipe");
    // A failing check first, then output enough to fill the pipe, then a
    // dump and another failing check.
    let mut text =
        String::from("fill hbm0+0x1000 len=16 byte=0xab\nexpect hbm0+0x1000 bytes=abababcd\n");
    for _ in 0..3000 {
        text.push_str("read32 hbm0+0x1000\n");
    }
    text.push_str("dump hbm0+0x1000 len=16 file=dumped.bin\nread32 hbm0+0x1000 == 5\n");
    let trace = dir.join("pipe.trace");
    std::fs::write(&trace, text).unwrap();
    for args in [&[][..], &["-q"], &["-v"], &["--json"]] {
        let snapshot = dir.join("snap.yaml");
        let dumped = dir.join("dumped.bin");
        let _ = std::fs::remove_file(&snapshot);
        let _ = std::fs::remove_file(&dumped);
        let mut child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .arg("run")
            .args(args)
            .args([
                trace.to_str().unwrap(),
                "--csr-snapshot",
                snapshot.to_str().unwrap(),
            ])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte (the run has begun), then close the pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut one = [0u8; 1];
        let _ = stdout.read(&mut one);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: the failed checks' status; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(snapshot.exists(), "{args:?}: the CSR snapshot is written");
        assert_eq!(
            std::fs::read(&dumped).unwrap(),
            [0xab; 16],
            "{args:?}: the dump"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A review's finding: with `--json`, the statement a signal interrupted
/// was a step `"status": "ok", "text": "(quit)"`, and the one it kept from
/// starting was missing. They are `interrupted` and `not_run` steps, worded
/// as the text output words them (docs/user-guide.md §3).
#[test]
fn json_steps_say_which_statement_a_signal_interrupted() {
    // A queue whose packets ring its own doorbells: the `run` never idles.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../soc/tests/data/never-idle-queue.trace");
    let child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .args(["run", path.to_str().unwrap(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the run to start (the handler is set before the
    // trace is read); short, because `--json` keeps every event.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap();
    let stopped: Vec<&serde_json::Value> = steps
        .iter()
        .filter(|s| s["status"] == "interrupted" || s["status"] == "not_run")
        .collect();
    assert_eq!(stopped.len(), 1, "{steps:?}");
    let text = stopped[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("interrupted by SIGINT at cycle ")
            || text.starts_with("not run: interrupted by SIGINT at cycle "),
        "{text}"
    );
    assert!(
        steps.iter().all(|s| s["text"] != "(quit)"),
        "the internal quit mark leaked: {steps:?}"
    );
    assert!(
        v["interrupted"]
            .as_str()
            .unwrap()
            .starts_with("interrupted by SIGINT")
    );
}

/// `--events-limit N` shows N events in all (`-v`, `--json`) and counts the
/// rest per statement: a long `--json` or `-v` run kept every event on disk
/// until its statement ended and could fill the disk (a never-idle queue
/// up to the bare run's bound did).
#[test]
fn the_events_limit_bounds_what_a_run_shows_and_counts_the_rest() {
    let path = traces().join("fw-tile-load-bf16.trace");
    let p = path.to_str().unwrap();
    let all = cli(&["run", p, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let count = |v: &serde_json::Value, key: &str| -> u64 {
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| match key {
                "events" => s["events"].as_array().map_or(0, |e| e.len() as u64),
                _ => s[key].as_u64().unwrap_or(0),
            })
            .sum()
    };
    let total = count(&v, "events");
    assert!(total > 100, "{total}");
    assert_eq!(count(&v, "events_omitted"), 0);
    let o = cli(&["run", p, "--json", "--events-limit", "7"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(count(&v, "events"), 7);
    assert_eq!(count(&v, "events_omitted"), total - 7);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "warning: {} device events were not shown: --events-limit 7",
            total - 7
        )),
        "{err}"
    );
    // The same summary as the run that showed every event.
    assert_eq!(
        v["summary"],
        serde_json::from_slice::<serde_json::Value>(&all.stdout).unwrap()["summary"]
    );
    let o = cli(&["run", p, "-v", "--events-limit", "7"]);
    let out = String::from_utf8(o.stdout).unwrap();
    let shown = out
        .lines()
        .filter(|l| l.starts_with("    ") && !l.starts_with("    …"))
        .count();
    assert_eq!(shown, 7, "{out}");
    assert!(
        out.contains(" more events not shown (--events-limit 7)"),
        "{out}"
    );
}
