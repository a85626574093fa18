//! A run that shows no events builds none (`Device::set_trace(false)`,
//! what `run` does without `-v`, `--json` or `--perfetto`; docs/user-guide.md
//! §8) and must change nothing else: every golden trace runs with events on
//! and off, and the statements (cycle, text, status), the failures and
//! errors, the run summary, the CSR snapshot and the memory must match,
//! while the quiet run records no event at all.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{DirFiles, golden_traces};
use soc::Device;

#[derive(Debug, PartialEq)]
struct Run {
    /// (line, cycle, text, status) per statement.
    steps: Vec<String>,
    failures: Vec<String>,
    errors: Vec<String>,
    summary: String,
    csr: String,
    allocated_bytes: u64,
}

fn run(path: &Path, events: bool) -> (Run, usize) {
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut dev = Device::trn2().unwrap();
    dev.set_trace(events);
    let mut files = DirFiles(path.parent().unwrap().to_path_buf());
    let (report, mut session) = host_exec::run_source(dev, &source, &name, &mut files).unwrap();
    let recorded = report.steps.iter().map(|s| s.events.len()).sum();
    let dev = session.device_mut();
    let run = Run {
        steps: report
            .steps
            .iter()
            .map(|s| format!("{} {} {} {:?}", s.line, s.cycle, s.text, s.status))
            .collect(),
        failures: report.failures.iter().map(ToString::to_string).collect(),
        errors: report.errors.iter().map(ToString::to_string).collect(),
        summary: serde_json::to_string(&report.summary).unwrap(),
        csr: dev.csr_snapshot().to_yaml(),
        allocated_bytes: dev.allocated_bytes(),
    };
    (run, recorded)
}

#[test]
fn every_golden_trace_runs_the_same_without_events() {
    let traces = golden_traces();
    assert!(traces.len() > 10);
    let mut differ = Vec::new();
    let mut shown = 0;
    for t in &traces {
        let name = t.file_name().unwrap().to_string_lossy().to_string();
        let (on, on_events) = run(t, true);
        let (off, off_events) = run(t, false);
        shown += on_events;
        if off_events != 0 {
            differ.push(format!(
                "{name}: {off_events} events recorded with events off"
            ));
        }
        for (what, a, b) in [
            (
                "statements",
                format!("{:#?}", on.steps),
                format!("{:#?}", off.steps),
            ),
            (
                "failures",
                format!("{:?}", on.failures),
                format!("{:?}", off.failures),
            ),
            (
                "errors",
                format!("{:?}", on.errors),
                format!("{:?}", off.errors),
            ),
            ("summary", on.summary.clone(), off.summary.clone()),
            ("CSR snapshot", on.csr.clone(), off.csr.clone()),
            (
                "memory",
                on.allocated_bytes.to_string(),
                off.allocated_bytes.to_string(),
            ),
        ] {
            if a != b {
                differ.push(format!("{name}: {what} differ"));
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
    // The traces do record events when asked (doorbells, firmware
    // micro-ops, semaphores): the comparison above is not vacuous.
    assert!(shown > 1000, "only {shown} events with events on");
}
