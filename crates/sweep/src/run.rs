//! Running a sweep: one job per point, each on its own device.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use soc::Device;
use soc_map::SocMap;

use crate::Error;
use crate::files::OverlayFiles;
use crate::params::{Param, Template, Value, payload_of, points, substitute};

/// The points of one sweep.
#[derive(Clone, Debug)]
pub struct Plan {
    pub names: Vec<String>,
    pub points: Vec<Vec<Value>>,
    pub template: String,
    pub file: String,
    pub base: PathBuf,
}

impl Plan {
    pub fn new(trace: &Path, template: &Template, params: Vec<Param>) -> Result<Self, Error> {
        let points = points(&params).map_err(Error::new)?;
        Ok(Plan {
            names: params.into_iter().map(|p| p.name).collect(),
            points,
            template: template.text.clone(),
            file: trace.display().to_string(),
            base: trace.parent().map(Path::to_path_buf).unwrap_or_default(),
        })
    }

    /// The job of point `k`: the substituted trace.
    pub fn job(&self, k: usize, timing_only: bool) -> Result<Job, Error> {
        let values = self.points.get(k).cloned().unwrap_or_default();
        let vars: BTreeMap<String, Value> = self
            .names
            .iter()
            .cloned()
            .zip(values.iter().cloned())
            .collect();
        let label = label(
            &self.names,
            &values.iter().map(ToString::to_string).collect::<Vec<_>>(),
        );
        let source = substitute(&self.template, &vars)
            .map_err(|e| Error::new(format!("{}: {e}", self.file)))?;
        let payload = payload_of(&source).map_err(|e| Error::new(format!("{}: {e}", self.file)))?;
        Ok(Job {
            point: k,
            label,
            values: values.iter().map(ToString::to_string).collect(),
            name: format!("{}[{k}]", self.file),
            source,
            base: self.base.clone(),
            payload,
            timing_only,
        })
    }
}

/// Every point's job of `trace` over `params`.
pub fn jobs_of(
    trace: &Path,
    template: &Template,
    params: &[Param],
    timing_only: bool,
) -> Result<Vec<Job>, Error> {
    let plan = Plan::new(trace, template, params.to_vec())?;
    (0..plan.points.len())
        .map(|k| plan.job(k, timing_only))
        .collect()
}

pub fn label(names: &[String], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------- running

/// Builds one fresh device per run from the same map, CSR catalog and
/// timing (each thread its own device).
pub struct DeviceFactory {
    catalog: &'static csr::Catalog,
    map: SocMap,
    timing: sim_core::TimingConfig,
}

impl std::fmt::Debug for DeviceFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceFactory")
            .field("clock_ghz", &self.timing.clock_ghz)
            .finish_non_exhaustive()
    }
}

impl DeviceFactory {
    /// Devices like `proto`: its map, CSR catalog and timing.
    pub fn new(proto: &Device) -> Self {
        Self {
            catalog: proto.catalog(),
            map: proto.map().clone(),
            timing: proto.timing().clone(),
        }
    }

    /// The effective timing parameters the devices get, as text: what a
    /// sweep's id digests (two timing files of one name but other values
    /// make other sweeps).
    pub fn timing_fingerprint(&self) -> String {
        format!("{:?}", self.timing)
    }

    /// The DMA clock of the timing the devices get.
    pub fn clock_ghz(&self) -> f64 {
        self.timing.clock_ghz
    }

    pub(crate) fn device(&self) -> Result<Device, String> {
        Device::with_timing(self.map.clone(), self.catalog, self.timing.clone())
            .map_err(|e| e.to_string())
    }
}

/// One trace run of a sweep or a calibration.
#[derive(Clone, Debug)]
pub struct Job {
    /// Point index.
    pub point: usize,
    /// `name=value …` for messages.
    pub label: String,
    /// Parameter values as written in the CSV.
    pub values: Vec<String>,
    /// Trace name for messages and reports.
    pub name: String,
    /// The trace text.
    pub source: String,
    /// Directory for the trace's relative file names: the run reads its
    /// files there and writes none ([`OverlayFiles`]).
    pub base: PathBuf,
    /// `#@ payload` bytes, if given.
    pub payload: Option<u64>,
    /// Timing-only mode.
    pub timing_only: bool,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Simulated cycles at the end of the trace.
    pub cycles: u64,
    /// The same in ns.
    pub ns: f64,
    /// Bytes that count for the bandwidth.
    pub payload: u64,
    /// Descriptors completed (TX + RX).
    pub descriptors: u64,
    /// The trace's exit status (0 ok, 1 expectation failed, 2 bad input).
    pub exit: u8,
    /// Expectations skipped (timing-only: checks of bytes no DMA moved),
    /// neither passed nor failed.
    pub expectations_skipped: usize,
    /// Host wall-clock seconds.
    pub host_seconds: f64,
    /// The first error, failure or warning, if any (printed with the
    /// point).
    pub problem: Option<String>,
    /// Per (engine, queue) that moved packets: its first packet start and
    /// last landing, in cycles (the run summary's queues).
    pub queue_spans: BTreeMap<(u16, u8), QueueSpan>,
    /// The paths its `dump … file=` statements wrote, kept in the run's
    /// memory and not on disk ([`OverlayFiles`]), in order.
    pub kept_files: Vec<String>,
}

impl Measured {
    /// A run that could not be made: nothing measured, exit 2, and why
    /// when known.
    pub fn not_made(problem: Option<String>) -> Self {
        Measured {
            cycles: 0,
            ns: 0.0,
            payload: 0,
            descriptors: 0,
            exit: 2,
            expectations_skipped: 0,
            host_seconds: 0.0,
            problem,
            queue_spans: BTreeMap::new(),
            kept_files: Vec::new(),
        }
    }
}

/// When one queue of a run was busy (cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSpan {
    /// Its first packet started.
    pub first: Option<u64>,
    /// Its last packet landed.
    pub last: Option<u64>,
}

/// Stops a run when the caller's flag is set (non-zero): the statement
/// about to start does not, a `run`/`wait` under way ends after its event.
struct StopWhen<'a>(&'a AtomicUsize);

impl StopWhen<'_> {
    fn control(&self) -> soc::exec::Control {
        if self.0.load(Ordering::Relaxed) == 0 {
            soc::exec::Control::Continue
        } else {
            soc::exec::Control::Quit
        }
    }
}

impl soc::exec::ExecHooks for StopWhen<'_> {
    fn before(
        &mut self,
        _index: usize,
        _stmt: &trace_format::Statement,
        _linked: &soc::exec::Linked,
        _device: &mut Device,
        _executor: &soc::exec::Executor,
    ) -> soc::exec::Control {
        self.control()
    }

    fn during_run(&mut self, _device: &mut Device) -> soc::exec::Control {
        self.control()
    }
}

/// Runs one job on its own device, stopped when `stop` is set: None when
/// the run did not finish (its figures would be those of part of the
/// trace).
fn run_one_until(
    factory: &DeviceFactory,
    job: &Job,
    stop: Option<&AtomicUsize>,
) -> Option<Result<Measured, String>> {
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed) != 0);
    if stopped() {
        return None;
    }
    let measured = run_one_with(factory, job, stop);
    // A run stopped half way measured part of its trace: not a row.
    if stopped() { None } else { Some(measured) }
}

fn run_one_with(
    factory: &DeviceFactory,
    job: &Job,
    stop: Option<&AtomicUsize>,
) -> Result<Measured, String> {
    let mut dev = factory.device()?;
    dev.set_timing_only(job.timing_only);
    dev.set_trace(false);
    // Points (and calibration runs) run in parallel: each keeps its `dump …
    // file=` writes in its own memory instead of all writing the trace's
    // files (docs/user-guide.md §18).
    let mut files = OverlayFiles::new(job.base.clone());
    let started = Instant::now();
    let never = AtomicUsize::new(0);
    let mut hooks = StopWhen(stop.unwrap_or(&never));
    let (report, _session) = host_exec::run_source_observed(
        dev,
        &job.source,
        &job.name,
        &mut files,
        host_exec::SessionOptions::default(),
        &mut hooks,
    )
    .map_err(|errors| errors.join("\n"))?;
    let host_seconds = started.elapsed().as_secs_f64();
    let s = &report.summary;
    let problem = report
        .errors
        .iter()
        .chain(&report.failures)
        .chain(&report.warnings)
        .next()
        .map(ToString::to_string);
    Ok(Measured {
        cycles: s.cycles,
        ns: s.sim_ns,
        payload: job.payload.unwrap_or(s.bytes),
        descriptors: s.descriptors,
        exit: report.exit_code(),
        expectations_skipped: report.expectations_skipped,
        host_seconds,
        problem,
        queue_spans: s
            .queues
            .values()
            .map(|q| {
                (
                    (q.engine, q.queue),
                    QueueSpan {
                        first: q.first_cycle,
                        last: q.last_cycle,
                    },
                )
            })
            .collect(),
        kept_files: files.written_paths().map(str::to_string).collect(),
    })
}

/// Runs `jobs` on up to `threads` threads (default: the host's available
/// parallelism), each job on its own device; results in job order.
pub fn run_jobs(
    factory: &DeviceFactory,
    jobs: &[Job],
    threads: Option<usize>,
) -> Vec<Result<Measured, String>> {
    run_jobs_until(factory, jobs, threads, None)
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect()
}

/// [`run_jobs`] that stops when `stop` is set (non-zero; the CLI sets it
/// on SIGINT/SIGTERM): no job starts after that, a job under way stops at
/// its next event. None for each job that did not finish.
pub fn run_jobs_until(
    factory: &DeviceFactory,
    jobs: &[Job],
    threads: Option<usize>,
    stop: Option<&AtomicUsize>,
) -> Vec<Option<Result<Measured, String>>> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len().max(1));
    if threads == 1 {
        return jobs
            .iter()
            .map(|j| run_one_until(factory, j, stop))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, Option<Result<Measured, String>>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        mine.push((i, run_one_until(factory, job, stop)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![(usize::MAX, Some(Err("a sweep thread panicked".into())))]
                })
            })
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Option<Result<Measured, String>>> = (0..jobs.len()).map(|_| None).collect();
    for (i, r) in done {
        match out.get_mut(i) {
            Some(slot) => *slot = r,
            None => {
                if let (Some(first), Some(Err(e))) = (out.first_mut(), r) {
                    *first = Some(Err(e));
                }
            }
        }
    }
    out
}
