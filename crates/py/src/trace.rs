//! `neuron_sim.run_trace`: a trace run as `neuron-sim run --json` runs it
//! (`host_exec::run_source_with`, events recorded), its report as the same
//! JSON document (`host_exec::RunDocument`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use soc::Device as SocDevice;
use soc::DeviceEvent;
use soc::exec::{Control, ExecHooks, Executor, Linked, StepRecord};
use soc::setup::{DeviceSources, Source};
use trace_format::Statement;

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

/// Events the device handed over, not yet given to a statement.
type Pending = Arc<Mutex<Vec<DeviceEvent>>>;

/// The steps of a run whose events go through an event sink, as `run`
/// takes them (docs/user-guide.md §8 "Output as the run goes": every few
/// thousand engine steps a chunk, each in the usual order), so that a
/// statement's events come in `run --json`'s order (§9). Taken at the
/// statement's end instead, they would come in one chunk: another order
/// for a statement of more than ~4,096 engine steps.
struct Steps<'py> {
    signals: Signals<'py>,
    pending: Pending,
    steps: Vec<StepRecord>,
}

impl ExecHooks for Steps<'_> {
    fn before(
        &mut self,
        index: usize,
        stmt: &Statement,
        linked: &Linked,
        device: &mut SocDevice,
        executor: &Executor,
    ) -> Control {
        self.signals.before(index, stmt, linked, device, executor)
    }

    fn during_run(&mut self, device: &mut SocDevice) -> Control {
        self.signals.during_run(device)
    }

    fn statement(&mut self, record: &StepRecord) {
        let mut record = record.clone();
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        record.events = std::mem::take(&mut *pending);
        self.steps.push(record);
    }
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
    // As `run --json`: the steps carry their device events, handed over
    // through an event sink as `run` takes them (their order, user guide
    // §8 "Output as the run goes").
    dev.set_trace(true);
    let pending: Pending = Arc::default();
    let sink = Arc::clone(&pending);
    dev.set_event_sink(Some(Box::new(move |events| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(events);
    })));
    let mut files = host_exec::DirFiles::new(base_dir);
    // Ctrl-C quits the trace and raises KeyboardInterrupt (no report).
    let mut hooks = Steps {
        signals: Signals::new(py),
        pending,
        steps: Vec::new(),
    };
    let ran = host_exec::run_source_observed(
        dev,
        source,
        name,
        &mut files,
        host_exec::SessionOptions::default(),
        &mut hooks,
    );
    hooks.signals.finish()?;
    let (mut report, mut session) = ran.map_err(|errors| {
        let mut msg = errors.join("\n");
        msg.push_str(&format!("\n{} error(s); nothing was run", errors.len()));
        TraceError::new_err(msg)
    })?;
    report.steps = hooks.steps;
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
