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
}

fn run(path: &Path) -> Golden {
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let dev = Device::trn2().unwrap();
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
    }
}

#[test]
fn golden_traces() {
    let mut seen = 0;
    insta::glob!("../../../traces", "*.trace", |path| {
        seen += 1;
        let golden = run(path);
        assert_eq!(
            golden.exit_code,
            0,
            "{}: {:#?}",
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
