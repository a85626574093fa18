//! A scripted `neuron-sim step` session is a test (issue 3): the debugger
//! stops at both doorbells of the copy trace, shows the ring and the queue
//! CSRs, answers memory/register/time commands, and runs to the end.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn scripted_step_session() {
    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args([
            "step",
            "traces/copy-hbm-hbm.trace",
            "--script",
            "crates/neuron-sim/tests/data/copy.step",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // First stop: the RX doorbell (rung before TX), with the new descriptor.
    assert!(
        text.contains("== doorbell at line 14, cycle 0: engine 0 queue 0 S2M"),
        "{text}"
    );
    assert!(
        text.contains("new    [   0] 0x000001001000: len   4096 ring_id 1 dst 0x200000"),
        "{text}"
    );
    // Second stop: the TX doorbell.
    assert!(
        text.contains("== doorbell at line 15, cycle 0: engine 0 queue 0 M2S"),
        "{text}"
    );
    assert!(
        text.contains("FIRST LAST src 0x100000  op CME COPY"),
        "{text}"
    );
    // Commands answered.
    assert!(text.contains("unknown command `bogus`"), "{text}");
    assert!(text.contains("0x000000100000: 00 01 02 03"), "{text}");
    assert!(text.contains("debugger: 2 stops"), "{text}");
    insta::assert_snapshot!("copy_step_session", text);
}

#[test]
fn step_filters_and_value_stops() {
    // Only engine 1's doorbells: none in this trace, so no doorbell stop;
    // but the semaphore-free run still reaches cycle 100.
    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args([
            "step",
            "traces/copy-hbm-hbm.trace",
            "--engine",
            "1",
            "--at-cycle",
            "100",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("== doorbell"), "{text}");
    assert!(text.contains("== reached cycle "), "{text}");
    assert!(text.contains("debugger: 1 stops"), "{text}");

    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args(["step", "traces/copy-hbm-hbm.trace", "--when", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn step_stops_at_the_doorbells_the_firmware_rings() {
    // The DIRECT2D tile load: the firmware rings 16 engines at cycle 510;
    // with --engine 3 the debugger stops once, names the word (trace line
    // 24) and its micro-ops, and shows both rings with the new descriptors.
    let script = std::env::temp_dir().join(format!("fw-step-{}.step", std::process::id()));
    std::fs::write(&script, "ring eng3.s2m.q0\nn\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args([
            "step",
            "traces/fw-tile-load-bf16.trace",
            "--engine",
            "3",
            "--script",
        ])
        .arg(&script)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&script);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "== firmware doorbell at cycle 510: tpb0 inst#0 (line 24) rang engine 3 queue 0: S2M tail += 9, M2S tail += 9, 65536 bytes"
        ),
        "{text}"
    );
    assert!(
        text.contains("  push GENERATE to DMA[3]: RD : addr=0x10030000, elem_size=2, sem_num=1"),
        "{text}"
    );
    assert!(
        text.contains("  push DIMPUSH to DMA[3]: [4096,8][1,131072] (dst)"),
        "{text}"
    );
    // Partition 24 = engine 3's first; the last descriptor is the semaphore write.
    assert!(
        text.contains("new    [   0] 0x002040003400: len   8192 ring_id 1 dst 0x2000600000"),
        "{text}"
    );
    assert!(
        text.contains("new    [   8] 0x002040003480: len      4 ring_id 1 dst 0x2802701804"),
        "{text}"
    );
    assert!(
        text.contains(
            "new    [   8] 0x002040003080: len      4 ring_id 1 FIRST LAST src 0x2040010004"
        ),
        "{text}"
    );
    assert_eq!(text.matches("== firmware doorbell").count(), 1, "{text}");
    assert!(text.contains("debugger: 1 stops"), "{text}");
}

/// A filter no doorbell can match is bad input, not a session that never
/// stops (issue 13 item 2).
#[test]
fn step_refuses_engines_and_queues_that_do_not_exist() {
    for (flag, value, message) in [
        (
            "--engine",
            "200",
            "--engine 200: no such engine (engines: 0..=131)",
        ),
        ("--queue", "16", "--queue 16: no such queue (queues: 0..15)"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .current_dir(root())
            .args([
                "step",
                "traces/copy-hbm-hbm.trace",
                flag,
                value,
                "--script",
                "/dev/null",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{err}");
        assert!(out.stdout.is_empty(), "{flag}: nothing runs");
    }
}

/// A mistyped prompt command gets a suggestion (issue 13 item 2).
#[test]
fn step_suggests_a_command_for_a_typo() {
    let dir = std::env::temp_dir().join(format!("neuron-sim-step-typo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("typo.step");
    std::fs::write(&script, "contnue\nrgs\nquit\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args(["step", "traces/copy-hbm-hbm.trace", "--script"])
        .arg(&script)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "unknown command `contnue` (help lists the commands); did you mean `continue`?"
        ),
        "{text}"
    );
    assert!(text.contains("did you mean `regs`?"), "{text}");
}
