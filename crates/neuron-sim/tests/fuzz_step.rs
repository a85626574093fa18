//! Fuzz target of the debugger's command parser (`neuron-sim step
//! --script`, docs/fuzzing.md §1): the parser lives in the binary, so each
//! input is a script run by the binary over a golden trace, checked for a
//! clean exit (no panic, no signal, the closing `debugger: N stops` line)
//! within a time limit. `cargo xtask fuzz --target step` runs it longer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fuzz::harness::Outcome;
use fuzz::{Budget, Rng, Target, campaign};

/// Seconds of the short run.
const SHORT_SECONDS: f64 = 3.0;

/// One script may run this long in the binary.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(20);

/// Traces the scripts run over: the first byte of an input picks one.
const TRACES: [&str; 3] = [
    "traces/copy-hbm-hbm.trace",
    "traces/semaphores.trace",
    "traces/ring-wrap.trace",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Words and arguments the debugger knows, and some it does not.
const COMMANDS: &[&str] = &[
    "next",
    "n",
    "s",
    "step",
    "continue",
    "c",
    "help",
    "h",
    "ring",
    "regs",
    "r",
    "time",
    "t",
    "mem",
    "x",
    "quit",
    "q",
    "#",
    "bogus",
    "stepi",
    "si",
    "cycles",
    "until",
    "finish",
    "break",
    "b",
    "watch",
    "info break",
    "delete",
    "disable",
    "enable",
    "condition",
    "ignore",
    "where",
    "events",
    "set",
    "list",
    "display",
    "undisplay",
    "write32",
    "fill",
    "desc",
    "doorbell",
    "run",
];
const ARGS: &[&str] = &[
    "eng0.m2s.q0",
    "eng0.s2m.q0",
    "eng131.s2m.q15",
    "eng132.m2s.q0",
    "eng0.m2s.q16",
    "eng0.gen",
    "tpb0.evt_sem",
    "tpb0.sem.read[3]",
    "hbm0+0x100000",
    "0x2000000000",
    "0xffffffffffffffff",
    "18446744073709551616",
    "hbm0+0xfffffffff",
    "host",
    "4096",
    "0",
    "0x100000000",
    "-1",
    "[",
    "tpb0.sbuf[p127]+0x37ffc",
    "doorbell",
    "fault",
    "packet",
    "state",
    "ring-id",
    "line",
    "cycle",
    "tpb0#0",
    "tpb9#1",
    ">=",
    "==",
    "16",
    "1",
    "2",
    "eng0",
    "eng0.m2s",
    "PREF_RING_ID",
];

fn gen_script(rng: &mut Rng) -> Vec<u8> {
    let mut s = vec![rng.next_u64() as u8];
    s.push(b'\n');
    for _ in 0..1 + rng.below(40) {
        let mut line = (*rng.pick(COMMANDS).unwrap()).to_string();
        for _ in 0..rng.below(3) {
            line.push(' ');
            line.push_str(rng.pick(ARGS).unwrap());
        }
        s.extend_from_slice(line.as_bytes());
        s.push(b'\n');
    }
    s
}

fn seeds() -> Vec<Vec<u8>> {
    let copy =
        std::fs::read(root().join("crates/neuron-sim/tests/data/copy.step")).unwrap_or_default();
    let mut first = vec![0u8, b'\n'];
    first.extend(copy);
    vec![first]
}

fn exec_script(input: &[u8]) -> Outcome {
    let trace = TRACES[usize::from(input.first().copied().unwrap_or(0)) % TRACES.len()];
    let dir = std::env::temp_dir().join(format!("neuron-sim-fuzz-step-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let script = dir.join("script.step");
    std::fs::write(&script, input.get(1..).unwrap_or_default()).map_err(|e| e.to_string())?;
    // Files, not pipes: a pipe nobody reads until the end fills up.
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let out_file = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let err_file = std::fs::File::create(&err_path).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args(["step", trace, "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if started.elapsed() > SCRIPT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("step did not finish in {SCRIPT_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    match status.code() {
        // 3: the script quit before the end of the trace.
        Some(0..=3) if stdout.contains(" stops\n") => Ok(true),
        code => Err(format!(
            "step {trace} exited {code:?}:\n{stderr}\n{}",
            stdout.lines().rev().take(5).collect::<Vec<_>>().join("\n")
        )),
    }
}

/// The target, for `cargo xtask fuzz --target step`.
fn target() -> Target {
    Target {
        name: "step",
        about: "the debugger's commands through `neuron-sim step --script`",
        corpus: seeds,
        generate: Some(gen_script),
        exec: exec_script,
        max_len: 4 << 10,
    }
}

#[test]
fn fuzz_step() {
    let mut budget = Budget::from_env(SHORT_SECONDS);
    budget.input_timeout = budget
        .input_timeout
        .max(SCRIPT_TIMEOUT + Duration::from_secs(5));
    let report = campaign(&target(), &budget);
    eprintln!("{report}");
    assert!(report.findings.is_empty(), "{report}");
    assert!(report.inputs > 0);
}
