//! Checks that cannot mislead (docs/user-guide.md §Timing-only mode):
//! in timing-only mode a check of bytes no DMA moved is *skipped*, never
//! passed or failed — host copies included; and a descriptor the engine
//! will read as another length than the trace wrote gets a warning.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Output;

use common::{ENG0_Q0_SETUP, run};

fn tmp(name: &str, contents: &str) -> std::path::PathBuf {
    common::tmp("checks", name, contents)
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The first-use reproducer: a host copy-in, a device check and a host
/// copy-out check. In timing-only mode the copy-out used to pass against
/// the stale host buffer and the device check to fail without a reason.
const HOST_ROUND_TRIP: &str = "\
alloc t size=0x10000 nc=0
copyin t pattern=incr8 seed=1
expect @t bytes=01020304
copyout t pattern=incr8 seed=1
free t
";

#[test]
fn timing_only_skips_checks_of_bytes_not_moved() {
    let t = tmp("round-trip.trace", HOST_ROUND_TRIP);
    let o = run(&["run", t.to_str().unwrap(), "--timing-only", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["expectations_passed"], 0);
    assert_eq!(v["expectations_failed"], 0);
    assert_eq!(v["expectations_skipped"], 2);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps[2]["status"], "skipped");
    assert!(
        steps[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("expect 0x5c0000000: skipped (timing-only): byte 0x5c0000000 is the destination of a DMA copy that moved no payload"),
        "{}",
        steps[2]["text"]
    );
    assert_eq!(steps[3]["status"], "skipped");
    assert!(
        steps[3]["text"]
            .as_str()
            .unwrap()
            .starts_with("copyout t: 65536 bytes: skipped (timing-only): the device-to-host copy moved no payload"),
        "{}",
        steps[3]["text"]
    );
    // With payload both checks are made, and hold.
    let o = run(&["run", t.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["expectations_passed"], 2);
    assert_eq!(v["expectations_skipped"], 0);
    // The text summary counts the skips.
    let o = run(&["run", t.to_str().unwrap(), "--timing-only", "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("5 statements, 0 expectations passed, 0 failed, 2 skipped (timing-only: bytes not moved), 0 errors"),
        "{out}"
    );
    assert!(out.contains(":3: SKIPPED expect"), "{out}");
}

/// A DMA copy of 4 KiB, with checks on its destination, on bytes the trace
/// itself wrote, and on a register.
fn device_copy() -> String {
    format!(
        "fill hbm0+0x100000 len=4096 pattern=incr8
write hbm0+0x200000 bytes=aabbccdd
{ENG0_Q0_SETUP}\
desc eng0.s2m.q0 len=4096 dst=hbm0+0x4000000
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
expect hbm0+0x4000000 bytes=00010203
read32 hbm0+0x4001000 == 0
expect hbm0+0x200000 bytes=aabbccdd
read32 eng0.m2s.q0.tdrhp == 0x40000001
fill hbm0+0x4000000 len=16 byte=7
expect hbm0+0x4000000 bytes=07070707
expect hbm0+0x4000000 len=32 sha256=0000000000000000000000000000000000000000000000000000000000000000
"
    )
}

#[test]
fn timing_only_still_checks_bytes_that_did_not_depend_on_a_copy() {
    let t = tmp("device-copy.trace", &device_copy());
    let o = run(&["run", t.to_str().unwrap(), "--timing-only", "--json"]);
    let v = json(&o);
    let status: Vec<(u64, String)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["line"].as_u64().unwrap() >= 17)
        .map(|s| {
            (
                s["line"].as_u64().unwrap(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(u64, String)> = [
        (17, "skipped"), // the copy's destination
        (18, "ok"),      // 0x4001000: just past the 4 KiB copied
        (19, "ok"),      // written by the trace
        (20, "ok"),      // a register
        (21, "ok"),      // fill
        (22, "ok"),      // rewritten by the fill: meaningful again
        (23, "skipped"), // 16 of its 32 bytes are still stale
    ]
    .iter()
    .map(|(l, s)| (*l, (*s).to_string()))
    .collect();
    assert_eq!(status, want);
    // The sha256 is wrong on purpose: skipped, so the run passes.
    assert_eq!(o.status.code(), Some(0));
    // With payload the wrong digest fails.
    let o = run(&["run", t.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["expectations_skipped"], 0);
}

/// The first-use reproducer of a 64 KiB descriptor without
/// CFG_LEN.ENCODE_64K: LEN 0 is 0 bytes to the engine.
fn copy_64k(encode: bool) -> String {
    format!(
        "{}fill hbm0+0x100000 len=65536 pattern=incr8
{ENG0_Q0_SETUP}\
desc eng0.s2m.q0 len=65536 dst=hbm0+0x4000000
desc eng0.m2s.q0 len=65536 src=hbm0+0x100000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
",
        if encode {
            "write32 eng0.m2s.cfg_len 0x010fffff\n"
        } else {
            ""
        }
    )
}

#[test]
fn a_64k_descriptor_without_encode_64k_is_warned_about() {
    let t = tmp("sw65k.trace", &copy_64k(false));
    let o = run(&["run", t.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["bytes"], 0);
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w[0]["line"], 11);
    assert_eq!(
        w[0]["message"],
        "eng0.s2m.q0[0]: the engine reads this descriptor's LEN field 0 as 0 bytes, not 65536: eng0.m2s.CFG_LEN.ENCODE_64K is off (its reset state; the driver sets it: write32 eng0.m2s.cfg_len 0x010fffff)"
    );
    assert_eq!(w[1]["line"], 12);
    // The statement line shows the length the engine reads, then the
    // warning; the tail repeats it.
    let o = run(&["run", t.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(" len 0 ring_id 1"), "{out}");
    assert!(
        out.contains(
            "\n  warning: eng0.m2s.q0[0]: the engine reads this descriptor's LEN field 0 as 0 bytes"
        ),
        "{out}"
    );
    assert!(
        out.contains(":12:1: eng0.m2s.q0[0]: the engine reads"),
        "{out}"
    );

    // With ENCODE_64K on (what the driver does) the same trace moves
    // 64 KiB and warns about nothing.
    let t = tmp("sw65k-on.trace", &copy_64k(true));
    let o = run(&["run", t.to_str().unwrap(), "--json"]);
    let v = json(&o);
    assert_eq!(v["bytes"], 65536);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0);
}

#[test]
fn a_sweep_point_with_a_warning_says_so() {
    let t = tmp(
        "sweep-64k.trace",
        &format!("#@ param q=0,1\n{}", copy_64k(false).replace("q0", "q{q}")),
    );
    let o = run(&["sweep", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("point 0 (q=0): ") && err.contains("ENCODE_64K is off"),
        "{err}"
    );
    assert!(err.contains("point 1 (q=1): "), "{err}");
}

/// A timing file may give only what it changes; `neuron-sim timing`
/// prints the parameters an installed binary uses (issue 13 item 3).
#[test]
fn partial_timing_files_and_the_timing_command() {
    let partial = tmp("fast-clock.json", r#"{"clock_ghz": 1.7}"#);
    let o = run(&["timing", "--timing", partial.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    let clock = &v["parameters"]["clock_ghz"];
    assert_eq!(clock["value"], 1.7);
    assert_eq!(clock["source"], partial.to_str().unwrap());
    assert_eq!(v["parameters"]["beat_bytes"]["value"], 32.0);
    // `timing --json` is a complete timing file.
    let full = tmp("full.json", &String::from_utf8_lossy(&o.stdout));
    let t = tmp("sem.trace", "write32 tpb0.sem.inc[0] 1\nrun cycles=1700\n");
    let o = run(&[
        "run",
        t.to_str().unwrap(),
        "--timing",
        full.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(json(&o)["sim_ns"], 1000.0);
    // The text form names each parameter with value, unit and source.
    let o = run(&["timing"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("clock_ghz ") && l.contains(" 0.85 GHz ")),
        "{out}"
    );
    assert_eq!(out.lines().count(), 20);
    // A bad file is named in the message.
    let bad = tmp("typo.json", r#"{"clock_ghzz": 1}"#);
    let o = run(&[
        "run",
        t.to_str().unwrap(),
        "--timing",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}: timing config: unknown parameter `clock_ghzz`",
            bad.display()
        )) && err.contains("did you mean `clock_ghz`?"),
        "{err}"
    );
    // A parameter given twice is bad input (JSON keeps the last silently).
    let twice = tmp("twice.json", r#"{"clock_ghz": 1.4, "clock_ghz": 2}"#);
    let o = run(&[
        "run",
        t.to_str().unwrap(),
        "--timing",
        twice.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}: timing config:", twice.display()))
            && err.contains("the key `clock_ghz` appears twice"),
        "{err}"
    );
}

/// An installed binary is self-contained: it prints its built-in SoC map
/// and CSR maps, and what it prints loads back (issue 13 item 3).
#[test]
fn built_in_maps_print_and_load_back() {
    let o = run(&["map", "--dump"]);
    assert_eq!(o.status.code(), Some(0));
    let map = tmp("soc-map.json", &String::from_utf8_lossy(&o.stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["device"], "trn2");
    let o = run(&[
        "--soc-map",
        map.to_str().unwrap(),
        "map",
        "0x2000040010",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(json(&o)["region"], "tpb0.sbuf");

    let o = run(&["csr", "dump", "UDMA_M2S_Q"]);
    assert_eq!(o.status.code(), Some(0));
    let dir = std::env::temp_dir().join(format!("neuron-sim-csr-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("udma_m2s_q.json"), &o.stdout).unwrap();
    let o = run(&[
        "--csr-maps",
        dir.to_str().unwrap(),
        "csr",
        "list",
        "udma_m2s_q",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("TDRBP_LOW"));

    let o = run(&["csr", "dump", "udma_m2s_qq"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).ends_with("did you mean `udma_m2s_q`?\n"));
}

/// `buf2=` (S2M word 1, `buf2_ptr_lo`) must lie in the first buffer's
/// 4 GiB window, whose high half the engine uses: one outside it is bad
/// input naming it, not its low half written silently. Found by a review.
#[test]
fn buf2_outside_the_first_buffers_window_is_bad_input() {
    let t = tmp(
        "buf2.trace",
        "write32 eng12.s2m.q3.rdrbp_low 0x01002000\nwrite32 eng12.s2m.q3.rdrl 256\n\
         desc eng12.s2m.q3 len=64 dst=hbm1+0x40 buf2=hbm1+0x1000 int\n\
         desc eng12.s2m.q3 len=64 dst=hbm1+0x40 buf2=0x123456789 int\n",
    );
    let o = run(&["run", t.to_str().unwrap(), "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains(":4: ERROR desc: buf2=0x123456789 is not in the first buffer's 4 GiB window (0x4000000000..)"),
        "{out}"
    );
    assert!(!out.contains(":3: ERROR"), "{out}");
}
