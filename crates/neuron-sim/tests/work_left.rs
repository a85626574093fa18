//! Firmware work that never happens is never a pass (docs/firmware.md
//! §Refusals, §Work left at the end): a word gated on a semaphore nothing
//! will set, descriptors RDMA_DESC_GEN wrote that no RDMA_DESC_START rang,
//! and words the firmware refused.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{run, text};

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "neuron-sim-work-left-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const DGE: &str = "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000
write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff
fill hbm0+0x10000000 len=4096 pattern=incr8
";

/// A 4 KiB copy whose EVENTS gate waits for semaphore 9 to reach 1.
const GATED: &str = "DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=9 events.semaphore_value=1 semaphore=1 sem_increment=1 src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,16] src_elem_size=1 dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,16] dst_elem_size=1";

#[test]
fn a_word_gated_on_a_semaphore_nothing_sets_fails_the_trace_and_says_why() {
    let dir = tmp_dir("gated");
    let t = write(&dir, "t.trace", &format!("{DGE}inst tpb0 {GATED}\nrun\n"));
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("t.trace:5:1: the trace ended with firmware work that can never run: tpb0#0 DIRECT2D (line 4) waits on tpb0.sem[9] (WAIT_FOR_SEM_GE_IMM 0x1, now 0x0) and nothing can change it"),
        "{out}"
    );
    assert!(
        out.contains("deadlock at the end of the trace (cycle 0)"),
        "{out}"
    );
    assert!(out.contains("0 expectations passed, 1 failed"), "{out}");
    // The JSON report has the failure and the wait-for graph.
    let o = run(&["run", s(&t), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["failures"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["deadlock"]["waits"][0]["on"], "tpb0.sem[9]", "{doc}");
    assert_eq!(doc["deadlock"]["waits"][0]["deadlocked"], true, "{doc}");
}

#[test]
fn a_gated_word_the_trace_releases_later_is_no_failure() {
    let dir = tmp_dir("released");
    let t = write(
        &dir,
        "t.trace",
        &format!(
            "{DGE}inst tpb0 {GATED}\nrun\nwrite32 tpb0.sem.inc[9] 1\nrun\nread32 tpb0.sem.read[1] == 16\n"
        ),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("deadlock"), "{out}");
    // Released, then cut short by a cycle limit while the firmware
    // generates its descriptors: unfinished, not stuck.
    let t = write(
        &dir,
        "short.trace",
        &format!("{DGE}inst tpb0 {GATED}\nrun\nwrite32 tpb0.sem.inc[9] 1\nrun cycles=50\n"),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("tpb0 firmware: 1 words still queued, 0 in flight"),
        "{out}"
    );
    assert!(!out.contains("deadlock"), "{out}");
}

#[test]
fn a_binary_stream_whose_word_can_never_run_fails() {
    let dir = tmp_dir("stream");
    let src = write(&dir, "k.txt", &format!("{GATED}\n"));
    let bin = dir.join("k.bin");
    let o = run(&["asm", s(&src), "-o", s(&bin)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = run(&["run", s(&bin), "--core", "tpb0"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("waits on tpb0.sem[9]"), "{out}");
}

#[test]
fn descriptors_rdma_desc_gen_wrote_and_no_start_rang_fail_the_trace() {
    let dir = tmp_dir("gen");
    let t = write(
        &dir,
        "t.trace",
        &format!(
            "{DGE}inst tpb0 RDMA_DESC_GEN local_sem=1 remote_sem=2 remote_core_id=0x1 dma_engine_mask=0xffff src_addr=imm:sbuf:q0:0x100 dst_addr=imm:sbuf:q0:0x100 free_dim_bytes=256\nrun\n"
        ),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("t.trace:5:1: the trace ended with 320 descriptors RDMA_DESC_GEN wrote on tpb0's 16 engine(s) never rung: no RDMA_DESC_START followed"),
        "{out}"
    );
    assert!(
        out.contains("tpb0 firmware: 320 descriptors RDMA_DESC_GEN wrote were never rung"),
        "{out}"
    );
}

#[test]
fn a_word_the_firmware_refuses_is_reported_and_fails_under_fail_on_fault() {
    let dir = tmp_dir("refused");
    let src = write(
        &dir,
        "k.txt",
        "DIRECT2D events.update_mode=0x42 semaphore=1 sem_increment=1 src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1\n",
    );
    let bin = dir.join("k.bin");
    let o = run(&["asm", s(&src), "-o", s(&bin)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Shown without -v, in the summary and on the totals line.
    let o = run(&["run", s(&bin), "--core", "tpb0"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("tpb0 firmware REFUSED tpb0#0 DIRECT2D (k.bin word 0 at 0x0) at cycle 0: DIRECT2D.events.update_mode = 0x42: not an update mode the firmware knows"),
        "{out}"
    );
    assert!(
        out.contains(", 1 refused by the firmware (1 unexpected)\n"),
        "{out}"
    );
    let o = run(&["run", s(&bin), "--core", "tpb0", "--fail-on-fault"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("--fail-on-fault: 1 word(s) or call(s) refused by the firmware"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["run", s(&bin), "--core", "tpb0", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &doc["firmware"]["tpb0"]["refused"][0];
    assert_eq!(r["kind"], "DIRECT2D", "{doc}");
    assert_eq!(r["inst"]["seq"], 0, "{doc}");
    assert!(
        r["reason"].as_str().unwrap().contains("update_mode = 0x42"),
        "{doc}"
    );
}

/// The refused word of the tests above, queued from a trace.
const REFUSED_WORD: &str = "inst tpb0 DIRECT2D events.update_mode=0x42 semaphore=1 sem_increment=1 src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1";

#[test]
fn expect_refusal_claims_the_refusals_it_matches() {
    let dir = tmp_dir("expect-refusal");
    let t = write(
        &dir,
        "t.trace",
        &format!("{DGE}{REFUSED_WORD}\nrun\nexpect_refusal tpb0 count=1\n"),
    );
    let o = run(&["run", s(&t), "--fail-on-fault"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("t.trace:6: expect_refusal tpb0: 1 refused (expected): tpb0#0 DIRECT2D (line 4) at cycle 0: DIRECT2D.events.update_mode = 0x42"),
        "{out}"
    );
    assert!(
        out.contains("tpb0 firmware REFUSED tpb0#0 DIRECT2D (line 4) at cycle 0, expected: "),
        "{out}"
    );
    assert!(
        out.contains("1 refused by the firmware (0 unexpected)"),
        "{out}"
    );
    let o = run(&["run", s(&t), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        doc["firmware"]["tpb0"]["refused"][0]["expected"], true,
        "{doc}"
    );

    // A count that does not match fails and claims nothing.
    let t = write(
        &dir,
        "two.trace",
        &format!("{DGE}{REFUSED_WORD}\nrun\nexpect_refusal tpb0 count=2\n"),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "FAILED expect_refusal tpb0: expected 2 refusal(s), found 1: tpb0#0 DIRECT2D (line 4)"
        ),
        "{out}"
    );
    assert!(
        out.contains("1 refused by the firmware (1 unexpected)"),
        "{out}"
    );

    // Nothing refused: the expectation fails.
    let t = write(&dir, "none.trace", "expect_refusal tpb3\n");
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "expect_refusal tpb3: expected a refusal, but the firmware refused nothing by cycle 0"
        ),
        "{out}"
    );
}

/// A `wait` the device went idle under names the firmware work that
/// cannot go on: the gated word, or descriptors no RDMA_DESC_START rang.
#[test]
fn a_failed_wait_names_the_firmware_work_that_cannot_go_on() {
    let dir = tmp_dir("wait");
    let t = write(
        &dir,
        "gated.trace",
        &format!("{DGE}inst tpb0 {GATED}\nwait tpb0.sem.read[1] == 16 timeout=100000\n"),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("the device went idle at cycle 0 with the value at 0x00000000; the firmware cannot go on: tpb0#0 DIRECT2D (line 4) waits on tpb0.sem[9] (WAIT_FOR_SEM_GE_IMM 0x1, now 0x0) and nothing can change it"),
        "{out}"
    );
    let t = write(
        &dir,
        "gen.trace",
        &format!(
            "{DGE}inst tpb0 RDMA_DESC_GEN local_sem=1 remote_sem=2 remote_core_id=0x1 dma_engine_mask=0xffff src_addr=imm:sbuf:q0:0x100 dst_addr=imm:sbuf:q0:0x100 free_dim_bytes=256\nwait tpb0.sem.read[1] == 16 timeout=100000\n"
        ),
    );
    let o = run(&["run", s(&t)]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("; the firmware cannot go on: tpb0 holds 320 descriptors RDMA_DESC_GEN wrote on 16 engine(s) that no RDMA_DESC_START rang"),
        "{out}"
    );
}

/// Timing-only: once the run acted on bytes no copy moved, work left at the
/// end may be the stale data's doing: the end-of-trace failure is skipped
/// like every later check (docs/user-guide.md §11); with payload it fails.
#[test]
fn work_left_after_stale_control_data_is_skipped_in_timing_only_mode() {
    let dir = tmp_dir("stale");
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stale-ring.trace"),
    )
    .unwrap();
    let t = write(
        &dir,
        "t.trace",
        &format!("{base}{DGE}inst tpb0 {GATED}\nrun\n"),
    );
    let o = run(&["run", s(&t), "--timing-only", "-q"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("2 skipped (timing-only: bytes not moved)"),
        "{out}"
    );
    assert!(out.contains("deadlock at the end of the trace"), "{out}");
    let o = run(&["run", s(&t), "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
}
