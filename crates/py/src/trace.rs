//! `neuron_sim.run_trace`: a trace run as `neuron-sim run --json` runs it
//! (`host_exec::run_source_with`, events recorded), its report as the same
//! JSON document (`host_exec::RunDocument`).

use std::path::PathBuf;

use pyo3::prelude::*;
use soc::setup::{DeviceSources, Source};

use crate::errors::{TraceError, bad};
use crate::signals::Signals;

fn read_source(path: &str, what: &str, kind: soc::input::InputKind) -> PyResult<Source> {
    let text = soc::input::read_text_file(std::path::Path::new(path), kind)
        .map_err(|e| bad(format!("cannot read {what} {path}: {e}")))?;
    Ok(Source {
        text,
        name: path.to_string(),
    })
}

/// The text of trace file `path`, read as `neuron-sim run` reads one: at
/// most the trace limit (docs/user-guide.md §3 "Input size limits"), so a
/// file that never ends is an error, not a process that fills memory.
#[pyfunction]
pub(crate) fn read_trace(path: &str) -> PyResult<String> {
    soc::input::read_text_file(std::path::Path::new(path), soc::input::InputKind::Trace)
        .map_err(|e| bad(format!("cannot read trace {path}: {e}")))
}

/// The device's sources from the Python arguments: the timing and SoC map
/// files (bounded reads, docs/user-guide.md §3) and a CSR map directory.
pub(crate) fn device_sources(
    timing: Option<&str>,
    soc_map: Option<&str>,
    csr_maps: Option<&str>,
) -> PyResult<DeviceSources> {
    Ok(DeviceSources {
        timing: timing
            .map(|p| read_source(p, "timing", soc::input::InputKind::Timing))
            .transpose()?,
        soc_map: soc_map
            .map(|p| read_source(p, "soc map", soc::input::InputKind::SocMap))
            .transpose()?,
        csr_maps: match csr_maps {
            None => Vec::new(),
            Some(dir) => soc::setup::csr_map_sources_in(std::path::Path::new(dir)).map_err(bad)?,
        },
    })
}

/// Runs trace text `source` (named `name` in messages; its files relative
/// to `base_dir`) and returns (the `run --json` document as JSON text
/// without `schema_version` and `host_timing`, the exit code 0/1/2, why
/// `fail_on_fault` failed the run, the faults it does not count). With
/// `fail_on_fault` the code is `run --fail-on-fault`'s.
#[pyfunction]
#[pyo3(signature = (source, name, base_dir, timing=None, timing_only=false, soc_map=None, csr_maps=None, fail_on_fault=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_trace_json(
    py: Python<'_>,
    source: &str,
    name: &str,
    base_dir: PathBuf,
    timing: Option<&str>,
    timing_only: bool,
    soc_map: Option<&str>,
    csr_maps: Option<&str>,
    fail_on_fault: bool,
) -> PyResult<(String, u8, Option<String>, Option<String>)> {
    let sources = device_sources(timing, soc_map, csr_maps)?;
    let mut dev = soc::setup::device_from(&sources).map_err(bad)?;
    dev.set_timing_only(timing_only);
    // As `run --json`: the steps carry their device events.
    dev.set_trace(true);
    let mut files = host_exec::DirFiles::new(base_dir);
    // Ctrl-C quits the trace and raises KeyboardInterrupt (no report).
    let mut signals = Signals::new(py);
    let ran = host_exec::run_source_observed(
        dev,
        source,
        name,
        &mut files,
        host_exec::SessionOptions::default(),
        &mut signals,
    );
    signals.finish()?;
    let (report, mut session) = ran.map_err(|errors| {
        let mut msg = errors.join("\n");
        msg.push_str(&format!("\n{} error(s); nothing was run", errors.len()));
        TraceError::new_err(msg)
    })?;
    let doc = host_exec::RunDocument {
        report: &report,
        host_runtime: session.used().then(|| session.report()),
        interrupted: None,
    };
    let json = serde_json::to_string(&doc).map_err(|e| bad(e.to_string()))?;
    let code = report.exit_code();
    if !fail_on_fault {
        return Ok((json, code, None, None));
    }
    // The CLI's verdict (`soc::exec::Summary::fail_on_fault`).
    let verdict = report.summary.fail_on_fault();
    let uncounted = verdict.uncounted_note(code);
    let (code, why) = verdict.verdict(code);
    Ok((json, code, why, uncounted))
}
