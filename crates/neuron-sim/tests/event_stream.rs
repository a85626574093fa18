//! The event stream of `neuron-sim run` byte for byte (docs/user-guide.md
//! §Output): `--json` (key order, number formatting, indentation) and `-v`
//! (event lines) on small traces with engine, firmware, semaphore and
//! fault events, pinned as snapshots. `tests/output.rs` checks that the
//! streamed output is the report; this pins the bytes themselves.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

/// `run TRACE ARGS --no-host-timing` from the repository root: its
/// standard output (exit status checked: 0, or 1 for the deadlock trace,
/// whose words never run — docs/firmware.md §Work left at the end).
fn run(trace: &str, args: &[&str]) -> String {
    let expected = if trace.contains("deadlock") { 1 } else { 0 };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(&root)
        .args(["run", trace, "--no-host-timing"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(expected),
        "{trace}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    // A snapshot does not keep trailing newlines: exactly one.
    assert!(
        out.ends_with('\n') && !out.ends_with("\n\n"),
        "{trace}: {out:?}"
    );
    out
}

#[test]
fn json_event_stream_bytes() {
    for trace in [
        "traces/copy-hbm-hbm.trace",
        "traces/deadlock-semaphore-chain.trace",
        "traces/fault-desc-op.trace",
    ] {
        let name = Path::new(trace).file_stem().unwrap().to_str().unwrap();
        insta::assert_snapshot!(format!("json_{name}"), run(trace, &["--json"]));
    }
}

#[test]
fn verbose_event_stream_bytes() {
    for trace in ["traces/copy-hbm-hbm.trace", "traces/fault-desc-op.trace"] {
        let name = Path::new(trace).file_stem().unwrap().to_str().unwrap();
        insta::assert_snapshot!(format!("verbose_{name}"), run(trace, &["-v"]));
    }
}
