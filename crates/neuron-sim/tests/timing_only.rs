//! Timing-only mode (issue 6 item 6, docs/references/design.md §4): skipping payload bytes
//! changes no cycle and no CSR. Every golden trace runs in both modes; the
//! per-statement cycles, the run summary and the CSR snapshot must match.
//! (Expectations on memory contents naturally differ and are not compared.)
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{DirFiles, ENG0_Q0_SETUP, golden_traces};
use soc::Device;

struct Run {
    step_cycles: Vec<(u32, u64)>,
    /// Each statement's outcome.
    statuses: Vec<(u32, soc::exec::Status)>,
    summary: String,
    csr: String,
    payload_moved: u64,
}

fn run(path: &Path, timing_only: bool) -> Run {
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut dev = Device::trn2().unwrap();
    dev.set_timing_only(timing_only);
    let mut files = DirFiles(path.parent().unwrap().to_path_buf());
    let (report, mut session) = host_exec::run_source(dev, &source, &name, &mut files).unwrap();
    let dev = session.device_mut();
    Run {
        step_cycles: report.steps.iter().map(|s| (s.line, s.cycle)).collect(),
        statuses: report.steps.iter().map(|s| (s.line, s.status)).collect(),
        summary: serde_json::to_string(&report.summary).unwrap(),
        csr: dev.csr_snapshot().to_yaml(),
        payload_moved: dev.allocated_bytes(),
    }
}

/// Whether the trace has a `wait` whose address is memory (not a register).
fn waits_on_memory(path: &Path) -> bool {
    let source = std::fs::read_to_string(path).unwrap();
    let trace = trace_format::parse(&source, "t").unwrap();
    let dev = Device::trn2().unwrap();
    trace.statements.iter().any(|s| match &s.kind {
        trace_format::StatementKind::Wait { addr, .. } => {
            addr.tensor().is_some() || soc::resolve(&dev, addr).is_ok_and(|r| r.register.is_none())
        }
        _ => false,
    })
}

#[test]
fn waits_on_payload_are_the_only_difference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    // The one golden trace that polls DMA-written memory.
    let t = dir.join("rr-16-queues.trace");
    assert!(waits_on_memory(&t));
    let (data, fast) = (run(&t, false), run(&t, true));
    assert_ne!(
        data.step_cycles, fast.step_cycles,
        "the wait sees no payload"
    );
    assert!(!waits_on_memory(&dir.join("copy-hbm-hbm.trace")));
}

#[test]
fn every_trace_has_the_same_cycles_and_csrs_without_payload() {
    let traces = golden_traces();
    assert!(traces.len() > 10);
    let mut saved = 0u64;
    let mut differ = Vec::new();
    for t in &traces {
        let data = run(t, false);
        let fast = run(t, true);
        let name = t.file_name().unwrap().to_string_lossy().to_string();
        // A `wait` on memory that DMA writes polls the payload itself: in
        // timing-only mode it cannot be satisfied the same way, so only
        // the summary and the CSRs are compared for such traces.
        if !waits_on_memory(t) && data.step_cycles != fast.step_cycles {
            differ.push(format!("{name}: statement cycles"));
        }
        if data.summary != fast.summary {
            differ.push(format!("{name}: run summary"));
        }
        if data.csr != fast.csr {
            differ.push(format!("{name}: CSR snapshot"));
        }
        // A check keeps its outcome or is skipped: never passed or failed
        // on bytes no copy moved (docs/user-guide.md §Timing-only mode).
        if !waits_on_memory(t) {
            for ((line, d), (_, f)) in data.statuses.iter().zip(&fast.statuses) {
                if f != d && *f != soc::exec::Status::Skipped {
                    differ.push(format!("{name}:{line}: {d:?} with payload, {f:?} without"));
                }
            }
        }
        assert!(fast.payload_moved <= data.payload_moved, "{name}");
        saved += data.payload_moved - fast.payload_moved;
    }
    assert!(differ.is_empty(), "{differ:#?}");
    // The mode really skips bytes somewhere (large copies exist in the set).
    assert!(
        saved > 1 << 20,
        "timing-only saved only {saved} bytes of host memory"
    );
}

/// The set-up of engine 0's queue 0 and one 4 KiB copy from hbm0 to `dst`
/// (its destination first filled with 0x77).
fn copy_4k(dst: &str, then: &str) -> String {
    format!(
        "fill hbm0+0x100000 len=4096 pattern=incr8
fill {dst} len=4096 byte=0x77
{ENG0_Q0_SETUP}desc eng0.s2m.q0 len=4096 dst={dst}
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
{then}"
    )
}

/// (passed, failed, skipped) of `source` run with or without payload.
fn checks(source: &str, timing_only: bool) -> (usize, usize, usize) {
    let mut dev = Device::trn2().unwrap();
    dev.set_timing_only(timing_only);
    let mut files = DirFiles(std::env::temp_dir());
    let (report, _) = host_exec::run_source(dev, source, "t.trace", &mut files).unwrap();
    (
        report.expectations_passed,
        report.expectations_failed,
        report.expectations_skipped,
    )
}

/// Issue 12, a review's finding: in timing-only mode a check of bytes a
/// copy should have written is skipped, never passed or failed — also
/// when it reads them through an alias window of the same memory, when a
/// `wait` would hold on the old bytes, and when a checksum was computed
/// from them (docs/user-guide.md §Timing-only mode).
#[test]
fn checks_of_bytes_derived_from_unmoved_payload_are_skipped() {
    let cases = [
        // Written through q7_dataram0, checked through q7_dram0 (and back).
        copy_4k(
            "tpb0.q7_dataram0+0x4000",
            "expect tpb0.q7_dram0+0x4000 bytes=77777777\nread32 tpb0.q7_dram0+0x4004 == 0x77777777\n",
        ),
        copy_4k(
            "tpb0.q7_dram0+0x4000",
            "expect tpb0.q7_dataram0+0x4000 bytes=77777777\n",
        ),
        // The old bytes meet the wait at once.
        copy_4k(
            "hbm0+0x200000",
            "wait hbm0+0x200000 == 0x77777777 timeout=10\n",
        ),
        // A checksum of the destination lands 4 bytes: stale too.
        copy_4k(
            "hbm0+0x200000",
            "desc eng0.s2m.q0 len=4 dst=hbm0+0x300000
desc eng0.m2s.q0 len=4096 src=hbm0+0x200000 op=crc32c no_copy send_crc first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
expect hbm0+0x300000 bytes=a9ea7560
",
        ),
    ];
    for (k, source) in cases.iter().enumerate() {
        let (passed, failed, skipped) = checks(source, true);
        assert_eq!(
            (passed, failed),
            (0, 0),
            "case {k}: passed or failed in timing-only mode"
        );
        assert!(skipped > 0, "case {k}: skipped");
        let (_, failed, skipped) = checks(source, false);
        assert_eq!(skipped, 0, "case {k}: with payload nothing is skipped");
        assert!(
            failed > 0,
            "case {k}: with payload the old bytes' check fails"
        );
    }
}

/// The faults and the `unchecked` list of `source` run with or without
/// payload: (fault count, unchecked count, passed, failed).
fn crc_outcome(source: &str, timing_only: bool) -> (u64, u64, usize, usize) {
    let mut dev = Device::trn2().unwrap();
    dev.set_timing_only(timing_only);
    let mut files = DirFiles(std::env::temp_dir());
    let (report, _) = host_exec::run_source(dev, source, "t.trace", &mut files).unwrap();
    let s = &report.summary;
    (
        s.fault_count,
        s.unchecked.iter().map(|u| u.tally.count).sum(),
        report.expectations_passed,
        report.expectations_failed,
    )
}

/// A review's finding: in timing-only mode a `validate_crc` over the
/// destination of a copy that moved no payload compared a CRC of the old
/// bytes, raised M2S_CRC_MISMATCH and aborted the queue, where the run with
/// payload passes. "Faults are as with payload" (docs/user-guide.md §11):
/// a validation that compares a value computed from unmoved bytes is not
/// made; the packet completes, and the summary lists it as unchecked. Also
/// when the stale side is the stored source CRC, or an IV resumed from it.
#[test]
fn validate_crc_over_unmoved_bytes_is_unchecked_not_a_fault() {
    let check = "read32 eng0.m2s.q0.q_tx_pkt == 3\nread32 eng0.gen.sec_d_int_cause == 0\n";
    let cases = [
        // The copy's CRC (stale) validated against the source's (stored).
        copy_4k(
            "hbm0+0x200000",
            &format!(
                "desc eng0.s2m.q0 len=4 dst=hbm0+0x300000
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 op=crc32 no_copy store_source_crc crc_iv=3 first last
desc eng0.s2m.q0 len=4 dst=hbm0+0x300010
desc eng0.m2s.q0 len=4096 src=hbm0+0x200000 op=crc32 no_copy validate_crc crc_iv=3 first last
doorbell eng0.s2m.q0 2
doorbell eng0.m2s.q0 2
run
{check}"
            ),
        ),
        // The stored source CRC is the stale side.
        copy_4k(
            "hbm0+0x200000",
            &format!(
                "desc eng0.s2m.q0 len=4 dst=hbm0+0x300000
desc eng0.m2s.q0 len=4096 src=hbm0+0x200000 op=crc32 no_copy store_source_crc crc_iv=2 first last
desc eng0.s2m.q0 len=4 dst=hbm0+0x300010
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 op=crc32 no_copy validate_crc crc_iv=2 first last
doorbell eng0.s2m.q0 2
doorbell eng0.m2s.q0 2
run
{check}"
            ),
        ),
    ];
    for (k, source) in cases.iter().enumerate() {
        assert_eq!(
            crc_outcome(source, false),
            (0, 0, 2, 0),
            "case {k}: with payload the CRCs match"
        );
        assert_eq!(
            crc_outcome(source, true),
            (0, 1, 2, 0),
            "case {k}: timing-only passes the validation over unmoved bytes, and says so"
        );
    }
    // A real mismatch of meaningful bytes still faults in timing-only mode.
    let mismatch = copy_4k(
        "hbm0+0x200000",
        "fill hbm0+0x400000 len=4096 byte=0x01
desc eng0.s2m.q0 len=4 dst=hbm0+0x300000
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 op=crc32 no_copy store_source_crc crc_iv=1 first last
desc eng0.s2m.q0 len=4 dst=hbm0+0x300010
desc eng0.m2s.q0 len=4096 src=hbm0+0x400000 op=crc32 no_copy validate_crc crc_iv=1 first last
doorbell eng0.s2m.q0 2
doorbell eng0.m2s.q0 2
run
",
    );
    assert_eq!(crc_outcome(&mismatch, true).0, 1, "timing-only");
    assert_eq!(crc_outcome(&mismatch, false).0, 1, "with payload");
}

/// A review's finding: timing-only mode skipped the data check of every
/// `copyout`/`batch_copy out` longer than 64 bytes, also of a host tensor,
/// whose bytes the CPU copies (docs/host-runtime.md §3.6): a mismatch there
/// passed as a skip (exit 0). Only a DMA copy moves no payload.
#[test]
fn host_tensor_copies_are_checked_in_timing_only_mode() {
    let source = "alloc h size=0x1000 host
copyin h byte=3
copyout h byte=3
copyout h byte=4
batch_copy out tensors=h len=0x1000 byte=3
";
    for timing_only in [false, true] {
        assert_eq!(
            checks(source, timing_only),
            (2, 1, 0),
            "timing_only {timing_only}"
        );
    }
    // A device tensor's copy-out is a DMA copy: skipped.
    let device = "alloc d size=0x1000
copyin d byte=3
copyout d byte=4
";
    assert_eq!(checks(device, true), (0, 0, 1));
    assert_eq!(checks(device, false), (0, 1, 0));
    // A probe's finding (a false pass): with `runtime zerocopy=on` a host
    // tensor's copy-out still goes by the CPU (the driver's zero-copy of a
    // host chunk, docs/host-runtime.md §3.10), so its check is made; it
    // was skipped as a DMA copy that moved no payload. A device tensor's
    // zero-copy is a DMA copy: skipped.
    let zerocopy_host = format!("runtime zerocopy=on\n{source}");
    for timing_only in [false, true] {
        assert_eq!(
            checks(&zerocopy_host, timing_only),
            (2, 1, 0),
            "zerocopy, timing_only {timing_only}"
        );
    }
    let zerocopy_device = format!("runtime zerocopy=on\n{device}");
    assert_eq!(checks(&zerocopy_device, true), (0, 0, 1));
    assert_eq!(checks(&zerocopy_device, false), (0, 1, 0));
}

/// The reader of the first stale control read, and (passed, failed,
/// skipped), of `source` run with or without payload.
fn control_outcome(source: &str, timing_only: bool) -> (Option<String>, (usize, usize, usize)) {
    let mut dev = Device::trn2().unwrap();
    dev.set_timing_only(timing_only);
    let mut files = DirFiles(std::env::temp_dir());
    let (report, _) = host_exec::run_source(dev, source, "t.trace", &mut files).unwrap();
    (
        report
            .summary
            .stale_control
            .as_ref()
            .map(|c| c.reader.clone()),
        (
            report.expectations_passed,
            report.expectations_failed,
            report.expectations_skipped,
        ),
    )
}

/// A review's finding (a false pass): in timing-only mode the index vector
/// of an INDIRECT1D word came into SBUF by a 512-byte DMA copy that moved
/// no payload; the firmware gathered with the old (zero) indices, so the
/// payload run's AXI fault and stall did not happen and the `wait` passed
/// (exit 0; exit 1 with payload). Bytes no copy moved that steer the device
/// (an index vector the firmware reads, descriptors an engine prefetches)
/// make every later check unknowable: skipped, and the summary says from
/// when (docs/user-guide.md §11).
#[test]
fn control_data_from_unmoved_bytes_skips_later_checks() {
    const INDEX_VECTOR_BY_DMA: &str = r#"write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000
write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff
fill    hbm0+0x40000000 len=256000 pattern=incr32
# 128 UINT32 indices: all 0 except the last, 0xfffffff0 (reads an unmapped address)
fill    hbm0+0x30000000 len=512 byte=0
write   hbm0+0x300001fc bytes=f0ffffff
# copy the index vector (512 bytes) into SBUF partition 0 + 0x20000 with engine 20
write32 eng20.m2s.q0.tdrbp_low 0x01000000
write32 eng20.m2s.q0.tdrl 256
write32 eng20.s2m.q0.rdrbp_low 0x01001000
write32 eng20.s2m.q0.rdrl 256
write32 eng20.m2s.q0.comp_cfg 0
write32 eng20.s2m.q0.comp_cfg 0
write32 eng20.m2s.q0.q_cfg 0x03030000
write32 eng20.s2m.q0.q_cfg 0x03030000
write32 eng20.m2s.change_state 1
write32 eng20.s2m.change_state 1
desc     eng20.s2m.q0 len=512 dst=tpb0.sbuf[p0]+0x20000
desc     eng20.m2s.q0 len=512 src=hbm0+0x30000000 first last
doorbell eng20.s2m.q0 1
doorbell eng20.m2s.q0 1
run
# gather 128 rows of 256 bytes through the index vector
inst tpb0 INDIRECT1D semaphore=2 sem_increment=1 idx_num_active_channels=128 flags.indirect_mode=SRC_INDIRECTION src_start_addr=imm:0x40000000 src_step_elem=1 src_num_elem=1000 src_elem_size=256 dst_start_addr=imm:0x2000000000 dst_step_elem=1024 dst_num_elem=128 dst_elem_size=256 src_idx_start_addr=imm:sbuf:q0:0x20000 in_dtype=BFLOAT16 out_dtype=BFLOAT16
wait tpb0.sem.read[2] == 16 timeout=20000
"#;
    assert_eq!(
        control_outcome(INDEX_VECTOR_BY_DMA, false),
        (None, (0, 1, 0)),
        "with payload: the bad index faults and the wait fails"
    );
    assert_eq!(
        control_outcome(INDEX_VECTOR_BY_DMA, true),
        (Some("tpb0 firmware".to_string()), (0, 0, 1))
    );
    // Descriptors copied into a ring by a 4 KiB DMA copy.
    const RING_BY_DMA: &str = include_str!("data/stale-ring.trace");
    assert_eq!(control_outcome(RING_BY_DMA, false), (None, (1, 0, 0)));
    assert_eq!(
        control_outcome(RING_BY_DMA, true),
        (Some("eng1 descriptor prefetch".to_string()), (0, 0, 1))
    );
}

/// A probe's finding (a false pass): in timing-only mode a small DMA copy
/// (4 bytes, which moves in both modes) into a register aperture carried
/// bytes a skipped 4 KiB copy should have written. The old bytes landed in
/// the semaphore (or rang the doorbell) and the checks on that register
/// passed, with payload they fail. A register written from bytes no copy
/// moved steers the device: every later check is skipped, and the summary
/// says from when (docs/user-guide.md §11).
#[test]
fn a_register_written_from_unmoved_bytes_skips_later_checks() {
    // The 4 KiB copy leaves hbm0+0x200000 at 0x01.. (payload: 0x05..).
    let stale_src = |then: &str| {
        format!(
            "fill hbm0+0x100000 len=4096 byte=0x05
fill hbm0+0x200000 len=4096 byte=0x01
{ENG0_Q0_SETUP}desc eng0.s2m.q0 len=4096 dst=hbm0+0x200000
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
{then}desc eng0.m2s.q0 len=4 src=hbm0+0x200000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
"
        )
    };
    let semaphore = stale_src("desc eng0.s2m.q0 len=4 dst=tpb0.sem.inc[3]\n")
        + "read32 tpb0.sem.read[3] == 0x01010101\nwait tpb0.sem.read[3] == 0x01010101\n";
    assert_eq!(control_outcome(&semaphore, false), (None, (0, 2, 0)));
    assert_eq!(
        control_outcome(&semaphore, true),
        (Some("eng0 DMA copy into a register".to_string()), (0, 0, 2))
    );
    // Through `sem.set` as well.
    let set = stale_src("desc eng0.s2m.q0 len=4 dst=tpb0.sem.set[3]\n")
        + "read32 tpb0.sem.read[3] == 0x01010101\n";
    assert_eq!(control_outcome(&set, false), (None, (0, 1, 0)));
    assert_eq!(
        control_outcome(&set, true),
        (Some("eng0 DMA copy into a register".to_string()), (0, 0, 1))
    );
    // A doorbell rung with the old bytes: eng1 posts 1 descriptor, not 5.
    let doorbell = stale_src(
        "write32 eng1.m2s.q0.tdrbp_low 0x02000000
write32 eng1.m2s.q0.tdrl 256
desc eng0.s2m.q0 len=4 dst=eng1.m2s.q0.tdrtp_inc
",
    ) + "read32 eng1.m2s.q0.tdrtp == 0x40000001\n";
    assert_eq!(control_outcome(&doorbell, false), (None, (0, 1, 0)));
    assert_eq!(
        control_outcome(&doorbell, true),
        (Some("eng0 DMA copy into a register".to_string()), (0, 0, 1))
    );
    // Meaningful bytes into a register: no stale control, checks made.
    let fresh = stale_src(
        "fill hbm0+0x200000 len=4 byte=0x01\ndesc eng0.s2m.q0 len=4 dst=tpb0.sem.inc[3]\n",
    ) + "read32 tpb0.sem.read[3] == 0x01010101\n";
    assert_eq!(control_outcome(&fresh, true), (None, (1, 0, 0)));
}

/// A probe's finding: `run --help` said that in timing-only mode checks of
/// copied data fail; they are skipped, and a skip does not change the exit
/// status (docs/user-guide.md §11), which a CI author reading only the
/// help could not know.
#[test]
fn the_help_says_checks_of_unmoved_bytes_are_skipped() {
    let o = common::run(&["run", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = common::text(&o.stdout);
    let flag = help.split("--timing-only").nth(1).unwrap();
    // Its description: up to the next option.
    let para = flag.split("\n  -").next().unwrap();
    assert!(para.contains("skipped"), "{para}");
    assert!(para.contains("exit status"), "{para}");
    assert!(!para.contains("fail"), "{para}");
}

/// A probe's finding: in timing-only mode `dump` printed (or wrote to a
/// file, which a later `load` makes meaningful) the old bytes of a skipped
/// copy's destination with no word that they are not the payload run's.
/// It now warns, naming the first such byte; with payload it does not.
#[test]
fn a_dump_of_unmoved_bytes_warns() {
    let source = copy_4k(
        "hbm0+0x200000",
        "dump hbm0+0x200ff0 len=0x10\ndump hbm0+0x300000 len=0x10\n",
    );
    let warnings = |timing_only: bool| {
        let mut dev = Device::trn2().unwrap();
        dev.set_timing_only(timing_only);
        let mut files = DirFiles(std::env::temp_dir());
        let (report, _) = host_exec::run_source(dev, &source, "t.trace", &mut files).unwrap();
        report
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let w = warnings(true);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("byte 0x200ff0") && w[0].contains("moved no payload"),
        "{w:?}"
    );
    assert_eq!(warnings(false), Vec::<String>::new());
}
