//! Timing-only mode (issue 6 item 6, docs/references/design.md §4): skipping payload bytes
//! changes no cycle and no CSR. Every golden trace runs in both modes; the
//! per-statement cycles, the run summary and the CSR snapshot must match.
//! (Expectations on memory contents naturally differ and are not compared.)
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{DirFiles, golden_traces};
use soc::Device;

struct Run {
    step_cycles: Vec<(u32, u64)>,
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
