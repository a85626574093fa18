//! Golden traces: every `traces/*.trace` runs to exit 0, and its run output
//! and CSR snapshot are insta snapshots (reviewed on purpose; CI never
//! writes them).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde::Serialize;
use soc::exec::TraceFiles;
use soc::{CsrSnapshot, Device};

struct DirFiles(PathBuf);

impl TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.0.join(path))
    }
    fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("golden traces must not write files"))
    }
}

#[derive(Serialize)]
struct Golden {
    exit_code: u8,
    output: Vec<String>,
    csr_snapshot: CsrSnapshot,
    /// Faults no `expect_fault` claimed (what `--fail-on-fault` fails on).
    #[serde(skip)]
    unexpected_faults: u64,
    /// Refusals no `expect_refusal` claimed (`--fail-on-fault` fails on
    /// them too).
    #[serde(skip)]
    unexpected_refusals: usize,
}

fn run(path: &Path) -> Golden {
    run_with(path, Mode::Golden)
}

/// How [`run_with`] runs a trace.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// As `neuron-sim run` does.
    Golden,
    /// Timing-only (cycles do not depend on payload bytes).
    Parked,
    /// Timing-only with the register-access log recording, which makes
    /// every firmware poll run one by one instead of waiting, parked, for
    /// the next change.
    Polling,
}

fn run_with(path: &Path, mode: Mode) -> Golden {
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut dev = Device::trn2().unwrap();
    if mode != Mode::Golden {
        dev.set_timing_only(true);
    }
    if mode == Mode::Polling {
        dev.record_reg_log(Some(Box::new(std::io::sink())));
    }
    let mut files = DirFiles(path.parent().unwrap().to_path_buf());
    let (report, mut session) = match host_exec::run_source(dev, &source, &name, &mut files) {
        Ok(r) => r,
        Err(errors) => panic!("{name} does not parse or link: {errors:#?}"),
    };
    let host_text = if session.used() {
        session.report().to_text()
    } else {
        String::new()
    };
    // `# golden: summary` in a trace keeps the statement and summary lines
    // and drops the per-event lines (indented by four spaces) — for traces
    // whose event log runs to tens of thousands of lines.
    let summary_only = source.lines().any(|l| l.trim() == "# golden: summary");
    Golden {
        exit_code: report.exit_code(),
        output: (report.to_text() + &host_text)
            .lines()
            .filter(|l| !(summary_only && l.starts_with("    ")))
            .map(str::to_string)
            .collect(),
        csr_snapshot: session.device_mut().csr_snapshot(),
        unexpected_faults: report.summary.unexpected_faults,
        unexpected_refusals: report.summary.unexpected_refusals().count(),
    }
}

#[test]
fn golden_traces() {
    let mut seen = 0;
    insta::glob!("../../../traces", "*.trace", |path| {
        seen += 1;
        let golden = run(path);
        // Every golden trace passes, but one that demonstrates a failure
        // says so: `# golden: exit 1` (the deadlock trace, whose words
        // never run: docs/firmware.md §Work left at the end).
        let expected_exit = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .find_map(|l| l.trim().strip_prefix("# golden: exit "))
            .map_or(0, |n| n.trim().parse::<u8>().unwrap());
        assert_eq!(
            golden.exit_code,
            expected_exit,
            "{}: {:#?}",
            path.display(),
            golden.output
        );
        // Every golden trace claims the faults it raises on purpose, so
        // each passes `run --fail-on-fault`.
        assert_eq!(
            golden.unexpected_faults,
            0,
            "{}: a fault no expect_fault claims: {:#?}",
            path.display(),
            golden.output
        );
        assert_eq!(
            golden.unexpected_refusals,
            0,
            "{}: a refusal no expect_refusal claims: {:#?}",
            path.display(),
            golden.output
        );
        insta::assert_yaml_snapshot!(golden);
    });
    assert!(
        seen >= 3,
        "expected at least three golden traces, found {seen}"
    );
}

#[test]
fn golden_runs_are_deterministic() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/queue-setup.trace");
    let a = serde_json::to_string(&run(&path)).unwrap();
    let b = serde_json::to_string(&run(&path)).unwrap();
    assert_eq!(a, b);
}

/// A firmware core that only polls waits, parked, for the next change
/// (docs/firmware.md §Stalls). Every golden and calibration trace must give
/// exactly the same output and CSR snapshot as with every poll run one by
/// one (which the register-access log forces).
#[test]
fn parked_polling_changes_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut paths: Vec<PathBuf> = Vec::new();
    for dir in [root.clone(), root.join("calib")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "trace") {
                continue;
            }
            // Only the firmware parks; sweep templates (`{name}`
            // placeholders) are not traces.
            let text = std::fs::read_to_string(&p).unwrap();
            let firmware = text.lines().any(|l| {
                let l = l.trim_start();
                ["inst ", "memcpy ", "icache_"]
                    .iter()
                    .any(|d| l.starts_with(d))
            });
            if firmware && !text.contains('{') {
                paths.push(p);
            }
        }
    }
    paths.sort();
    assert!(paths.len() > 15, "{} firmware traces", paths.len());
    for p in &paths {
        let parked = serde_json::to_string(&run_with(p, Mode::Parked)).unwrap();
        let polling = serde_json::to_string(&run_with(p, Mode::Polling)).unwrap();
        assert!(
            parked == polling,
            "{} differs with every poll run",
            p.display()
        );
    }
}
