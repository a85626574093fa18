//! The interactive prompt under a pseudo-terminal (issue 14 item 5): Tab
//! completes commands and dotted names (regions, registers, fields), and
//! the history is kept across sessions in the history file. A small Python
//! script (`tests/data/pty_session.py`, standard library `pty`) plays the
//! terminal, so the test needs no display.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One session typed at a pseudo-terminal: its output and exit status.
fn typed(history: &Path, keys: &[&str]) -> (String, i64) {
    let out = Command::new("python3")
        .current_dir(root())
        .arg("crates/neuron-sim/tests/data/pty_session.py")
        .arg(env!("CARGO_BIN_EXE_neuron-sim"))
        .arg("traces/copy-hbm-hbm.trace")
        .arg(history)
        .args(keys)
        .output()
        .expect("python3 runs the pseudo-terminal script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["output"].as_str().unwrap().to_string(),
        v["status"].as_i64().unwrap(),
    )
}

#[test]
fn tab_completes_and_history_persists() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-pty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The directory does not exist yet: the first command creates it.
    let history = dir.join("state").join("history");
    // `hel<Tab>` completes to `help`; `regs eng0.m2s.q0.tdr<Tab><Tab>`
    // lists the queue's TDR* registers; Ctrl-U clears the line; `q<Tab>`
    // is `quit`.
    let (out, status) = typed(
        &history,
        &["hel\\t\\r", "regs eng0.m2s.q0.tdr\\t\\t", "\\x15quit\\r"],
    );
    assert_eq!(status, 3, "{out}");
    assert!(
        out.contains("stepping (each stops early at a breakpoint):"),
        "{out}"
    );
    for reg in [
        "eng0.m2s.q0.tdrhp",
        "eng0.m2s.q0.tdrtp_inc",
        "eng0.m2s.q0.tdrbp_low",
    ] {
        assert!(out.contains(reg), "{reg} not listed:\n{out}");
    }
    assert_eq!(std::fs::read_to_string(&history).unwrap(), "help\nquit\n");
    // A new session: Up brings back the last command of the one before.
    let (out, status) = typed(&history, &["\\x1b[A\\r"]);
    assert_eq!(status, 3, "{out}");
    assert!(out.contains("(neuron-sim) quit"), "{out}");
    assert!(
        out.contains("quit at cycle 0 before the end of the trace"),
        "{out}"
    );
    // The field level completes too, and history can be turned off.
    let (out, _) = typed(
        Path::new("off"),
        &["set eng0.m2s.q0.q_cfg.en_p\\t\\x15quit\\r"],
    );
    assert!(out.contains("eng0.m2s.q0.q_cfg.en_pref"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
