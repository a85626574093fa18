//! `neuron-sim step`, the doorbell debugger (docs/user-guide.md §12; issues
//! 3 and 14): scripted sessions are tests. Transcripts are insta goldens;
//! the stepping, breakpoints and exit statuses are asserted, and `step`
//! driven to the end gives `run`'s output and files.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A scratch directory for this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-sim-step-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `neuron-sim step ARGS… --script` with `script` as the commands.
fn step_script(args: &[&str], script: &str) -> Output {
    // One file per call: tests run in parallel and may pass equal scripts.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = scratch("scripts");
    let path = dir.join(format!(
        "{}.step",
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&path, script).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .arg("step")
        .args(args)
        .arg("--script")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
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
    let text = stdout(&out);
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
        text.contains("FIRST LAST src 0x100000 (hbm0+0x100000)  op CME COPY"),
        "{text}"
    );
    // The statement lines come as the statements run, before the next stop.
    let ran = text.find("copy-hbm-hbm.trace:14: doorbell").unwrap();
    let second = text.find("== doorbell at line 15").unwrap();
    assert!(ran < second, "{text}");
    // Commands answered; the end of the trace stays for inspection.
    assert!(text.contains("unknown command `bogus`"), "{text}");
    assert!(text.contains("0x000000100000: 00 01 02 03"), "{text}");
    assert!(text.contains("== end of trace at cycle 194"), "{text}");
    assert!(
        text.contains(
            "(neuron-sim) mem hbm0+0x200000 16\nhbm0+0x200000 (0x200000), 16 bytes:\n    0x000000200000: 00 01 02 03"
        ),
        "{text}"
    );
    assert!(text.contains("debugger: 2 stops"), "{text}");
    insta::assert_snapshot!("copy_step_session", text);
}

#[test]
fn step_filters_and_cycle_stops() {
    // Only engine 1's doorbells: none in this trace, so no doorbell stop;
    // the cycle breakpoint stops the run exactly at cycle 100.
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
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(!text.contains("== doorbell"), "{text}");
    assert!(
        text.contains(
            "== breakpoint 1 (break cycle 100): reached cycle 100\n-> line 16 (under way at cycle 100): run\n"
        ),
        "{text}"
    );
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
    let out = step_script(
        &["traces/fw-tile-load-bf16.trace", "--engine", "3"],
        "ring eng3.s2m.q0\nn\n",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
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

/// A filter no doorbell can match, or a breakpoint naming what does not
/// exist, is bad input, not a session that never stops (issues 13, 14).
#[test]
fn step_refuses_names_that_do_not_exist() {
    for (args, message) in [
        (
            &["--engine", "200"][..],
            "--engine 200: no such engine (engines: 0..=131)",
        ),
        (
            &["--queue", "16"][..],
            "--queue 16: no such queue (queues: 0..15)",
        ),
        (
            &["--break", "doorbell eng200"][..],
            "--break `doorbell eng200`: unknown name `eng200`: there is no such instance (eng0..eng131)",
        ),
        (
            &["--break", "doorbell eng0.m2ss.q0"][..],
            "did you mean `m2s`?",
        ),
        (
            &["--break", "dorbell"][..],
            "unknown breakpoint kind `dorbell` (break doorbell | line | cycle | fault | packet | state | ring-id | race | word); did you mean `doorbell`?",
        ),
        (
            &["--break", "fault PREF_RING_IDD"][..],
            "did you mean `PREF_RING_ID`?",
        ),
        (
            &["--watch", "eng0.m2s.q0.tdrhpp"][..],
            "--watch `eng0.m2s.q0.tdrhpp`: unknown name `tdrhpp`: not a register of block udma_m2s_q (eng0.m2s.q0); did you mean `tdrhp`?",
        ),
        (
            &["--watch", "eng0.m2s.q0.q_cfg.en_pref =< 1"][..],
            "expected VALUE OP NUMBER",
        ),
        (
            &["--when", "tpb0.sem.red[3]>=1"][..],
            "did you mean `read`?",
        ),
        (
            &["--break", "line 999"][..],
            "past the trace's last statement",
        ),
        (
            &["--vcd", "-"][..],
            "--vcd -: step prints its session on standard output; give --vcd a file",
        ),
        (
            &["--perfetto", "x.json", "--perfetto-engines", "200"][..],
            "--perfetto-engines",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
            .current_dir(root())
            .args(["step", "traces/copy-hbm-hbm.trace"])
            .args(args)
            .args(["--script", "/dev/null"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing runs");
    }
}

/// A mistyped prompt command gets a suggestion (issue 13 item 2).
#[test]
fn step_suggests_a_command_for_a_typo() {
    let out = step_script(
        &["traces/copy-hbm-hbm.trace"],
        "contnue\nrgs\nbreak\nwatch\nstep x\nquit\n",
    );
    let text = stdout(&out);
    assert!(
        text.contains(
            "unknown command `contnue` (help lists the commands); did you mean `continue`?"
        ),
        "{text}"
    );
    assert!(text.contains("did you mean `regs`?"), "{text}");
    assert!(text.contains("break what? (break doorbell"), "{text}");
    assert!(text.contains("watch what? (watch VALUE"), "{text}");
    assert!(
        text.contains("step N: `x` is not a count above 0"),
        "{text}"
    );
}

/// Breakpoints set at the prompt: each kind, the table, conditions,
/// ignore counts, disabling and deleting; each stop names the breakpoint
/// and why. Quitting before the end exits 3.
#[test]
fn breakpoint_session() {
    let script = "\
# before the first run: 20 one-descriptor packets are posted on eng11 q0
break packet eng11.m2s.q0
ignore 2 18
break fault eng12
condition 3 eng12.gen.sec_d_int_cause == 1
break ring-id
watch eng11.m2s.q0.tdrhp
disable 5
break state eng12.s2m
info break
continue
continue
delete 2
enable 5
continue
continue
info break
condition 3
delete 4 9
delete
info break
where
quit
";
    let out = step_script(
        &[
            "traces/fault-doorbell-overrun.trace",
            "--no-doorbells",
            "--break",
            "line 69",
        ],
        script,
    );
    assert_eq!(out.status.code(), Some(3), "quit before the end");
    let text = stdout(&out);
    // The ignore count passed over 18 packets; the condition held at the
    // first eng12 fault only; the state change stopped at the second.
    assert!(
        text.contains("== breakpoint 2 (break packet eng11.m2s.q0): @264 eng11 q0 packet done: 256 bytes written"),
        "{text}"
    );
    assert_eq!(text.matches("== breakpoint 3 ").count(), 1, "{text}");
    assert!(
        text.contains("== breakpoint 6 (break state eng12.s2m): @279 eng12 s2m state abort"),
        "{text}"
    );
    assert!(
        text.contains("quit at cycle 279 before the end of the trace (exit status 3)"),
        "{text}"
    );
    insta::assert_snapshot!("breakpoint_session", text);
}

/// `break race` (docs/races.md): set at the prompt after the first stop,
/// it turns the race detector on by replaying the trace from its start;
/// each stop names the race (kind, bytes, both sides), in the order the
/// run's race section lists them; `reverse-continue` goes back to the
/// previous race.
#[test]
fn race_breakpoint_session() {
    let script = "\
break race
info break
continue
continue
reverse-continue
continue
continue
quit
";
    let out = step_script(&["traces/race-sbuf-tile-reuse.trace"], script);
    assert_eq!(out.status.code(), Some(0), "quit at the end: run's status");
    let text = stdout(&out);
    assert!(
        text.contains("the race detector is on: the trace replayed from its start with it to here (cycle 226); 0 race(s) found before here"),
        "{text}"
    );
    let first = "== breakpoint 1 (break race): race #1: write/write race on tpb0.sbuf[p0]+0x1000..+0x1100 (256 bytes); first: write by eng0.q0[0] rung by tpb0 word #0 (line 22) at cycle 286; second: write by eng16.q0[0] rung by tpb1 word #0 (line 24) at cycle 286";
    let second = "== breakpoint 1 (break race): race #2: read/write race on tpb0.sbuf[p0]+0x1000..+0x1100 (256 bytes); first: write by eng16.q0[0] rung by tpb1 word #0 (line 24) at cycle 286; second: read by eng0.q0[2] rung by tpb0 word #1 (line 23) at cycle 1142";
    assert_eq!(text.matches(first).count(), 2, "forward and back: {text}");
    assert!(text.contains(&format!("(back) {first}")), "{text}");
    assert_eq!(text.matches(second).count(), 2, "{text}");
    assert!(text.contains("== end of trace at cycle 1146"), "{text}");
    insta::assert_snapshot!("race_breakpoint_session", text);
}

/// `--break race` on the command line turns the detector on from the
/// start; a race-free trace never stops on it.
#[test]
fn break_race_on_the_command_line() {
    let out = step_script(
        &[
            "traces/race-two-cores-one-hbm-range.trace",
            "--no-doorbells",
            "--break",
            "race",
        ],
        "where\ncontinue\n",
    );
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("== breakpoint 1 (break race): race #1: write/write race on hbm0+0x20100000..+0x20100200 (512 bytes); first: write by eng0.q0[0] rung by tpb0 word #0 (line 16) at cycle 295; second: write by eng16.q0[0] rung by tpb1 word #0 (line 17) at cycle 295"),
        "{text}"
    );
    assert_eq!(text.matches("(break race)").count(), 1, "{text}");
    let clean = step_script(
        &[
            "traces/fw-semaphore-chain.trace",
            "--no-doorbells",
            "--break",
            "race",
        ],
        "",
    );
    assert_eq!(clean.status.code(), Some(0));
    let text = stdout(&clean);
    assert!(!text.contains("(break race)"), "{text}");
    assert!(text.contains("== end of trace"), "{text}");
    let bad = step_script(&["traces/copy-hbm-hbm.trace", "--break", "race eng0"], "");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("--break `race eng0`: too many words: break race"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// `break race` over the JSON protocol (`step --json`): the stop's hit
/// says which race.
#[test]
fn break_race_over_the_json_protocol() {
    let out = step_script(
        &["traces/race-two-cores-one-hbm-range.trace", "--json"],
        "{\"command\": \"break race\"}\n{\"command\": \"continue\"}\n",
    );
    assert_eq!(out.status.code(), Some(0));
    let messages: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stop = messages
        .iter()
        .find_map(|m| (m["command"] == "continue").then(|| m["stop"].clone()))
        .unwrap();
    assert_eq!(stop["reason"], "breakpoint");
    assert_eq!(stop["cycle"], 295);
    assert_eq!(stop["hits"][0]["spec"], "break race");
    assert_eq!(
        stop["hits"][0]["why"],
        "race #1: write/write race on hbm0+0x20100000..+0x20100200 (512 bytes); first: write by eng0.q0[0] rung by tpb0 word #0 (line 16) at cycle 295; second: write by eng16.q0[0] rung by tpb1 word #0 (line 17) at cycle 295"
    );
}

/// Stepping at every granularity, then the end of the trace: the state
/// stays for inspection until `quit`, and the exit status is `run`'s.
#[test]
fn stepping_session() {
    let script = "\
finish
until 1200
stepi
cycles 100
break tpb0#2
watch tpb0.sem.read[7] >= 1
continue
events 2
finish tpb0#1
until 10
next
finish
step
where
step 3
continue
step
time
mem hbm0+0x20200000 16
regs tpb0.evt_sem
quit
";
    let out = step_script(
        &["traces/fw-semaphore-chain.trace", "--engine", "1"],
        script,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    for want in [
        "(neuron-sim) finish\n== finished: 625 tpb0 inst#0 (line 42) done; SEM_INC_COMPLETE sem[6] += 1\n",
        "(neuron-sim) until 1200\n== reached cycle 1200\n-> line 46 (under way at cycle 1200)",
        "(neuron-sim) stepi\n== 17 device events at cycle 1677:\n",
        "(neuron-sim) cycles 100\n== reached cycle 1777\n",
        "tpb0#1 completed already, at cycle 1992",
        "cycle 10 is not ahead: the device is at cycle 1992",
        "(neuron-sim) next\n== firmware doorbell at cycle 2790: tpb0 inst#2 (line 44) rang engine 1",
        "(neuron-sim) finish\n== finished: 2854 tpb0 inst#2 (line 44) done\n",
        "== stepped line 46 (cycle 2854)\n-> line 47: run\n",
        "== end of trace at cycle 2854",
        "(neuron-sim) step\nthe trace has ended (cycle 2854): the state stays for inspection; quit to leave",
        "0x000020200000: 40 00 40 01 40 02 40 03",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    insta::assert_snapshot!("stepping_session", text);
}

/// Exit statuses: a failed expectation is 1 as in `run`, whether the
/// commands ran out or the user quit at the end; quitting early is 3.
#[test]
fn exit_statuses() {
    let dir = scratch("status");
    let t = dir.join("fails.trace");
    std::fs::write(
        &t,
        "write32 tpb0.sem.set[1] 5\nread32 tpb0.sem.read[1] == 6\nwrite32 tpb0.sem.set[2] 1\nrun cycles=10\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    for (script, code) in [
        ("", 1),
        ("continue\n", 1),
        ("continue\nquit\n", 1),
        // The failed expectation ran, but the trace did not end: 3.
        ("step\nstep\nquit\n", 3),
        ("quit\n", 3),
    ] {
        let out = step_script(&[t, "--no-doorbells", "--break", "line 1"], script);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{script:?}: {}",
            stdout(&out)
        );
    }
    // The same on a trace that passes: 0 at the end, 3 before.
    for (script, code) in [("continue\n", 0), ("", 0), ("next\nquit\n", 3)] {
        let out = step_script(&["traces/copy-hbm-hbm.trace"], script);
        assert_eq!(out.status.code(), Some(code), "{script:?}");
    }
}

/// Issue 14 item 7: `step` takes `run`'s options and, driven to the end
/// without changing anything, prints `run`'s statement lines and summary
/// and writes the same files.
#[test]
fn step_matches_run_with_the_run_options() {
    let dir = scratch("like-run");
    let timing = dir.join("timing.json");
    std::fs::write(
        &timing,
        r#"{"doorbell_latency_cycles": 7, "read_latency_cycles": 33}"#,
    )
    .unwrap();
    let timing = timing.to_str().unwrap().to_string();
    let debugger_line = |l: &&str| {
        l.starts_with("==")
            || l.starts_with("(neuron-sim)")
            || l.starts_with("   the final state")
            || l.starts_with("debugger: ")
    };
    for trace in [
        "traces/copy-hbm-hbm.trace",
        "traces/fw-semaphore-chain.trace",
        "traces/fault-doorbell-overrun.trace",
        "traces/host-dmem-batch.trace",
    ] {
        for extra in [
            &[][..],
            &["--timing", timing.as_str()][..],
            &["--timing-only"][..],
        ] {
            let files = |tag: &str| {
                ["vcd", "reg-log", "perfetto"]
                    .map(|k| dir.join(format!("{tag}.{k}")).to_str().unwrap().to_string())
            };
            let (r, s) = (files("run"), files("step"));
            let outputs = |f: &[String; 3]| {
                vec![
                    "--vcd".to_string(),
                    f[0].clone(),
                    "--reg-log".to_string(),
                    f[1].clone(),
                    "--perfetto".to_string(),
                    f[2].clone(),
                ]
            };
            let run = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
                .current_dir(root())
                .args(["run", trace])
                .args(extra)
                .args(outputs(&r))
                .output()
                .unwrap();
            let step = step_script(
                &[
                    &[trace, "--no-doorbells"][..],
                    extra,
                    &outputs(&s).iter().map(String::as_str).collect::<Vec<_>>(),
                ]
                .concat(),
                "",
            );
            assert_eq!(run.status.code(), step.status.code(), "{trace} {extra:?}");
            let run_text: Vec<String> = stdout(&run)
                .lines()
                .filter(|l| !l.starts_with("host time "))
                .map(str::to_string)
                .collect();
            let step_text: Vec<String> = stdout(&step)
                .lines()
                .filter(|l| !debugger_line(l))
                .map(str::to_string)
                .collect();
            assert_eq!(step_text, run_text, "{trace} {extra:?}");
            for (a, b) in r.iter().zip(&s) {
                assert!(
                    std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                    "{trace} {extra:?}: {a} and {b} differ"
                );
            }
        }
    }
}

/// Pokes and the views (issue 14 items 4, 5): a doorbell about to post a
/// descriptor with a stale ring id is called out; a `desc` typed at the
/// stop fixes it before the doorbell is written; `set`, `regs` of one
/// register, a field or a filtered block, `ring` over any slots and `mem`
/// folded; the trace then ends with its checks of the fault failing.
#[test]
fn pokes_and_views_session() {
    let script = "\
next
desc eng128.m2s.q0[0] len=4096 src=hbm0+0xb00000 first last ring_id=1
ring
run
set eng128.m2s.q0.q_cfg.en_pref 1
regs eng128.m2s.q0.q_cfg
regs eng128.m2s.q0.q_cfg.en_pref
break packet eng128
continue
ring eng128.s2m.q0 0..2
regs eng128.gen --changed *SEC_?_INT*
mem hbm1+0xb00ff0 0x40
mem hbm1+0xc00000 0x2000
continue
quit
";
    let out = step_script(&["traces/fault-ring-id.trace", "--engine", "128"], script);
    assert_eq!(out.status.code(), Some(1), "the trace's fault checks fail");
    let text = stdout(&out);
    for want in [
        "warning: 1 of the 1 descriptors this doorbell posts carry a stale ring id ([0] has 2, expects 1): the prefetch will raise PREF_RING_ID",
        "<prompt>: desc eng128.m2s.q0[0] at 0x9000000: src 0xb00000 len 4096 ring_id 1 FIRST LAST",
        "<prompt>: ERROR `run` cannot run out of turn",
        "== breakpoint 1 (break packet eng128): @194 eng128 q0 packet done: 4096 bytes written",
        "  beyond [   1] 0x000009000210:",
        "    *\n",
        "FAILED read32 eng128.gen.sec_a_int_cause",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    insta::assert_snapshot!("pokes_and_views_session", text);
}

/// `list` (the trace around the stop, breakpoint lines marked) and
/// `display` (values shown at every stop; issue 14 item 5).
#[test]
fn list_and_display() {
    let out = step_script(
        &["traces/copy-hbm-hbm.trace"],
        "break line 16\nlist\ndisplay eng0.m2s.q0.tdrhp\ndisplay eng0.m2s.q0.q_cfg.en_pref\ndisplay nothing.here\ncontinue\nlist 2\nlist 99\nundisplay 1\nundisplay 5\nundisplay 1\nstepi\nundisplay 2 2\ndisplay eng0.m2s.q0.tdrhp\nundisplay\ndisplay\nquit\n",
    );
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    for want in [
        "(neuron-sim) list\n      10  write32 eng0.m2s.change_state 1\n",
        " ->   14  doorbell eng0.s2m.q0 1\n      15  doorbell eng0.m2s.q0 1\n b    16  run\n",
        "(neuron-sim) display eng0.m2s.q0.tdrhp\n1: eng0.m2s.q0.tdrhp = 0x40000000\n",
        "(neuron-sim) display nothing.here\nunknown name `nothing`",
        "== breakpoint 1 (break line 16): line 16\n-> line 16: run\n1: eng0.m2s.q0.tdrhp = 0x40000000\n2: eng0.m2s.q0.q_cfg.en_pref = 0x1\n",
        "(neuron-sim) list 2\n       1  # One HBM",
        "line 99 is not in the trace (lines 1..18)",
        "(neuron-sim) undisplay 5\nno display 5\n",
        // A display keeps its number when another goes (`undisplay 2`
        // must still name it).
        "-> line 16 (under way at cycle 1): run\n2: eng0.m2s.q0.q_cfg.en_pref = 0x1\n(neuron-sim)",
        "(neuron-sim) undisplay 1\nno display 1\n",
        // Named twice, removed once; numbers are not reused.
        "(neuron-sim) undisplay 2 2\nremoved 1 display\n(neuron-sim) display eng0.m2s.q0.tdrhp\n3: eng0.m2s.q0.tdrhp = ",
        "(neuron-sim) undisplay\nremoved 1 display\n(neuron-sim) display\nno displays: display VALUE\n",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
}

/// Reverse execution at the prompt (issue 14 item 3): back to the
/// doorbell before a fault, a poke there, on to a clean end; `goto`,
/// `reverse-step`, `info checkpoints`; off with `--vcd`.
#[test]
fn reverse_session() {
    let out = step_script(
        &[
            "traces/fault-ring-id.trace",
            "--break",
            "fault eng128",
            "--no-doorbells",
        ],
        "reverse-next\ndesc eng128.m2s.q0[0] len=4096 src=hbm0+0xb00000 first last ring_id=1\ndelete\nbreak packet eng128\ncontinue\ngoto 5\nwhere\nreverse-step\nwhere\ninfo checkpoints\nreverse-continue\nquit\n",
    );
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    for want in [
        "== breakpoint 1 (break fault eng128): @22 eng128 m2s.q0 FAULT SEC_A_INT_CAUSE.PREF_RING_ID",
        "(neuron-sim) reverse-next\n(back) == doorbell at line 43, cycle 0: engine 128 queue 0 M2S",
        "== breakpoint 2 (break packet eng128): @194 eng128 q0 packet done: 4096 bytes written",
        "(neuron-sim) reverse-continue\nno breakpoint fires before here: back to the start\n(back) == reached cycle 0\n-> line 16: fill",
        "(neuron-sim) goto 5\n(back) == reached cycle 5\n-> line 44 (under way at cycle 5): run\n",
        "(neuron-sim) reverse-step\n(back) == stepped line 43 (cycle 0)\n-> line 44: run\n",
        "reverse execution: on\ncheckpoints: 1 (at cycles 0), every 10000 simulator events\ncheckpoint memory: ",
        "MiB held of a 256.0 MiB budget\n",
        "journal: 3 entries (1 pokes and sets)",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    // Checkpoints every 3 events: several, and going back restores one
    // taken mid-trace.
    let out = step_script(
        &[
            "traces/fw-tile-load-bf16.trace",
            "--checkpoint-interval",
            "3",
            "--checkpoint-budget",
            "64",
        ],
        "continue\ngoto 300\ninfo checkpoints\nquit\n",
    );
    let text = stdout(&out);
    assert!(text.contains("every 3 simulator events"), "{text}");
    assert!(text.contains("of a 64.0 MiB budget"), "{text}");
    assert!(text.contains("from the checkpoint at cycle "), "{text}");
    assert!(!text.contains("checkpoints: 1 "), "{text}");
    // With --vcd the file records one pass: going back is off.
    let vcd = scratch("reverse").join("w.vcd");
    let out = step_script(
        &["traces/copy-hbm-hbm.trace", "--vcd", vcd.to_str().unwrap()],
        "next\nreverse-next\ninfo checkpoints\nquit\n",
    );
    let text = stdout(&out);
    assert!(
        text.contains("reverse execution is off: --reg-log and --vcd record one pass of the trace"),
        "{text}"
    );
}

/// A `step` that lands before a statement with a breakpoint reports it
/// there, as `next` does; the next `step` runs that statement
/// (docs/user-guide.md §12 "Stepping").
#[test]
fn a_step_onto_a_breakpoint_reports_it_and_the_next_step_moves() {
    let out = step_script(
        &[
            "traces/copy-hbm-hbm.trace",
            "--no-doorbells",
            "--break",
            "line 3",
        ],
        "break line 5\nstep\nstep\nstep\nwhere\nquit\n",
    );
    assert_eq!(out.status.code(), Some(3), "quit before the end");
    let text = stdout(&out);
    for want in [
        "== stepped line 4 (cycle 0)\n== breakpoint 2 (break line 5): line 5\n-> line 5: write32",
        "\n(neuron-sim) step\ntraces/copy-hbm-hbm.trace:5: write32 eng0.m2s.q0.tdrl (0x1002001030) = 0x00000100 (eng0.m2s.q0.TDRL: 0x00000000 -> 0x00000100)\n== stepped line 5 (cycle 0)\n-> line 6: write32",
        "(neuron-sim) where\ncycle 0\n-> line 6: write32",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    assert_eq!(text.matches("== breakpoint 2 ").count(), 1, "{text}");
}

/// The debugger at the end of a trace agrees with `run`: a trace whose
/// firmware ends with work nothing can end fails there too (exit 1, the
/// failure and the wait-for graph; docs/firmware.md §Work left at the end),
/// and its report says so while the session is still open.
#[test]
fn step_to_the_end_fails_a_trace_run_fails_for_work_left() {
    let trace = "traces/deadlock-semaphore-chain.trace";
    let o = step_script(&[trace], "continue\n");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("the trace ended with firmware work that can never run: tpb0#0 DIRECT2D (line 14) waits on tpb0.sem[6]"),
        "{out}"
    );
    assert!(
        out.contains("deadlock at the end of the trace (cycle 0)"),
        "{out}"
    );
    let run = Command::new(env!("CARGO_BIN_EXE_neuron-sim"))
        .current_dir(root())
        .args(["run", trace, "-q"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), o.status.code());
}

/// `finish` on a word the core never takes up (or a queue that never
/// completes a packet) runs to the end of the trace and says why it did
/// not stop earlier, as an unreached breakpoint does.
#[test]
fn a_finish_that_never_completes_says_so_at_the_end() {
    let o = step_script(&["traces/fw-inst-stream.trace"], "finish tpb0#5\n");
    let out = stdout(&o);
    assert!(
        out.contains("note: finish: tpb0#5 did not complete before the trace ended"),
        "{out}"
    );
    let o = step_script(&["traces/ring-wrap.trace"], "finish eng7.m2s.q3\n");
    let out = stdout(&o);
    assert!(
        out.contains("note: finish: a packet of eng7.q3 did not complete before the trace ended"),
        "{out}"
    );
}
