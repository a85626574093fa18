//! The trace executor with the host runtime (docs/references/design.md §3, L5): the
//! runtime's dmem allocator ([`dmem::Dmem`]) over the in-process ioctl bus
//! over the kernel-driver model ([`kdriver::KernelDriver`]), which owns the
//! device. It implements [`soc::exec::HostRuntime`], so a trace mixes v1/v2
//! hardware directives with v3 host operations and `@tensor` addresses.

use std::collections::BTreeMap;

mod buffers;
mod stream;

pub use buffers::{BatchIn, MemStats};

pub use stream::{CheckSink, MAX_PENDING_BYTES, Mismatch, SinkReport, Stream, StreamSource};

use dmem::{
    AllocatorId, AllocatorKind, BatchOp, Dmem, DmemConfig, DmemId, MemLocation, NrtStatus,
    RuntimeEvent, TensorBatch, UsageType,
};
use ioctl_bus::InProcess;
use kdriver::{DriverStats, KdriverConfig, KernelDriver};
use serde::Serialize;
use soc::Device;
use soc::exec::{HostOutcome, HostRuntime, TraceFiles};
use trace_format::{HostCheck, HostData, HostOp};

/// One allocated tensor of the trace. A freed tensor keeps its (now
/// stale) id, so a second `free` reaches the runtime's double-free
/// diagnostic.
#[derive(Clone, Copy, Debug)]
struct Tensor {
    id: DmemId,
    size: u64,
    freed: bool,
}

/// The host side of a run.
#[derive(Debug)]
pub struct HostSession {
    dmem: Dmem,
    tensors: BTreeMap<String, Tensor>,
    allocators: BTreeMap<String, AllocatorId>,
    /// The GLOBAL allocator of each NC, created on first use.
    globals: BTreeMap<u32, AllocatorId>,
    /// Whether the trace used a host operation.
    used: bool,
    /// The NRT status of the last failed runtime call.
    last_status: Option<NrtStatus>,
    /// Stand-in device, never used when the bus is in-process (it always
    /// is; see [`HostSession::new`]): a power-on copy of the session's
    /// device ([`Device::power_on_copy`]), which costs no map building.
    detached: Device,
    /// The driver's events, each with the cycle it began, when kept
    /// ([`SessionOptions::keep_driver_events`]).
    driver_log: Vec<(u64, kdriver::DriverEvent)>,
    keep_driver_events: bool,
    /// Device cycle when the current host operation began.
    op_start: u64,
    /// Device cycle the last ioctl returned.
    last_ioctl_end: u64,
}

/// How a session is built.
#[derive(Default)]
pub struct SessionOptions {
    /// Stream every ioctl and mmap access to this writer as JSON lines
    /// (`ioctl_bus::Recording`); `neuron-sim ioctl replay` re-issues them.
    pub record: Option<Box<dyn std::io::Write>>,
    /// Keep the driver's events (ioctls, H2T batches, log lines) for a
    /// timeline ([`HostSession::driver_events`]).
    pub keep_driver_events: bool,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("record", &self.record.is_some())
            .field("keep_driver_events", &self.keep_driver_events)
            .finish()
    }
}

/// The report of a run as `neuron-sim run --json` prints it, less the
/// CLI's own fields (`schema_version`, `host_timing`): the same document
/// for every front end (docs/user-guide.md §Output, docs/python.md).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunDocument<'a> {
    /// The report: statements, expectations, the summary, steps.
    #[serde(flatten)]
    pub report: &'a soc::exec::RunReport,
    /// The host runtime's side (ioctls, allocations, copies), when the
    /// trace used it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_runtime: Option<HostReport>,
    /// Why the run stopped early (a signal), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// Trace files (`load`, `dump`, `file=` sources) relative to a directory:
/// the trace's own, as every front end resolves them.
#[derive(Debug, Clone)]
pub struct DirFiles {
    base: std::path::PathBuf,
}

impl DirFiles {
    /// Files relative to `base`.
    #[must_use]
    pub fn new(base: impl Into<std::path::PathBuf>) -> Self {
        Self { base: base.into() }
    }
}

impl TraceFiles for DirFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        soc::input::read_file(&self.base.join(path), soc::input::InputKind::TraceData)
    }
    fn write(&mut self, path: &str, data: &[u8]) -> std::io::Result<()> {
        let p = self.base.join(path);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(p, data)
    }
    fn open(&mut self, path: &str) -> std::io::Result<std::sync::Arc<dyn soc::exec::FileRange>> {
        Ok(std::sync::Arc::new(soc::exec::DiskFile::open(
            &self.base.join(path),
        )?))
    }
}

/// What the host side did in a run (`neuron-sim run` prints it).
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct HostReport {
    /// ioctls by driver name.
    pub ioctls: BTreeMap<String, u64>,
    /// Total ioctls, and how many failed.
    pub ioctl_calls: u64,
    /// Failed ioctls.
    pub ioctl_errors: u64,
    /// DML: bytes in use per HBM channel.
    pub dml_channel_bytes: Vec<u64>,
    /// DML: per-NC grand totals (column 22), NCs with any use.
    pub dml_nc_bytes: BTreeMap<u32, u64>,
    /// DML log entries kept, and dropped.
    pub dml_log_entries: u64,
    /// DML entries dropped from the full ring.
    pub dml_log_dropped: u64,
    /// Live tensors at the end (name → size).
    pub live_tensors: BTreeMap<String, u64>,
    /// The driver's counters.
    pub driver: DriverStats,
}

impl HostReport {
    /// The lines `neuron-sim run` prints after the device summary.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "host: {} ioctls ({} failed):",
            self.ioctl_calls, self.ioctl_errors
        );
        for (name, n) in &self.ioctls {
            out.push_str(&format!(" {name}={n}"));
        }
        out.push('\n');
        out.push_str(&format!(
            "host: H2T {} batches, {} data descriptors, {} bytes, {} timeouts\n",
            self.driver.h2t_batches,
            self.driver.h2t_data_descs,
            self.driver.h2t_bytes,
            self.driver.timeouts
        ));
        out.push_str("host: DML in use per HBM channel:");
        for (c, b) in self.dml_channel_bytes.iter().enumerate() {
            out.push_str(&format!(" hbm{c}={b}"));
        }
        for (nc, b) in &self.dml_nc_bytes {
            out.push_str(&format!(" nc{nc}={b}"));
        }
        out.push_str(&format!(
            "; log {} entries, {} dropped\n",
            self.dml_log_entries, self.dml_log_dropped
        ));
        if !self.live_tensors.is_empty() {
            out.push_str("host: live tensors:");
            for (n, b) in &self.live_tensors {
                out.push_str(&format!(" {n}={b}"));
            }
            out.push('\n');
        }
        out
    }
}

impl HostSession {
    /// The device (after the run: for CSR snapshots).
    pub fn device_mut(&mut self) -> &mut Device {
        HostRuntime::device(self)
    }

    /// A copy of the whole host stack — tensors, the runtime's allocators
    /// and DML log, the process memory, the kernel driver and its device
    /// ([`Dmem::try_clone`]) — that runs on independently (the debugger's
    /// checkpoints, docs/user-guide.md §12 "Going back"). The copy's
    /// device has no event sink. `None` when a part cannot be copied: an
    /// ioctl recording streamed to a writer, a device recording a
    /// register-access log or waveforms ([`Device::try_clone`]).
    pub fn try_clone(&mut self) -> Option<HostSession> {
        Some(HostSession {
            dmem: self.dmem.try_clone()?,
            tensors: self.tensors.clone(),
            allocators: self.allocators.clone(),
            globals: self.globals.clone(),
            used: self.used,
            last_status: self.last_status,
            detached: self.detached.try_clone()?,
            driver_log: self.driver_log.clone(),
            keep_driver_events: self.keep_driver_events,
            op_start: self.op_start,
            last_ioctl_end: self.last_ioctl_end,
        })
    }

    /// A session over a fresh driver bound to `dev`.
    ///
    /// # Errors
    ///
    /// When the driver or the runtime cannot start (bad maps, no host
    /// memory for the bounce buffers).
    pub fn new(dev: Device) -> Result<Self, String> {
        Self::with_options(dev, SessionOptions::default())
    }

    /// A session with options (an ioctl recording).
    ///
    /// # Errors
    ///
    /// As [`HostSession::new`].
    pub fn with_options(dev: Device, opts: SessionOptions) -> Result<Self, String> {
        // Shares `dev`'s maps: nothing is built or checked again.
        let detached = dev.power_on_copy();
        let hbm_capacity_bytes = dev
            .map()
            .by_name("hbm0")
            .map_or(24 << 30, |id| dev.map().region(id).size_bytes);
        let keep_driver_events = opts.keep_driver_events;
        let driver = KernelDriver::new(dev, KdriverConfig::default())?;
        let bus: Box<dyn ioctl_bus::Transport> = match opts.record {
            Some(sink) => Box::new(ioctl_bus::Recorder::streaming(InProcess::new(driver), sink)),
            None => Box::new(InProcess::new(driver)),
        };
        let config = DmemConfig {
            hbm_capacity_bytes,
            ..DmemConfig::default()
        };
        let dmem = Dmem::open(bus, config)
            .map_err(|s| format!("the runtime could not open the device: {s}"))?;
        let mut s = Self {
            dmem,
            tensors: BTreeMap::new(),
            allocators: BTreeMap::new(),
            globals: BTreeMap::new(),
            used: false,
            last_status: None,
            detached,
            driver_log: Vec::new(),
            keep_driver_events,
            op_start: 0,
            last_ioctl_end: 0,
        };
        if s.driver_mut().is_none() {
            return Err("internal: the runtime's bus is not in-process".into());
        }
        Ok(s)
    }

    /// Flushes the ioctl recording streamed by
    /// [`SessionOptions::record`], if any, and returns the first error
    /// writing it (the records after it were lost).
    pub fn finish_recording(&mut self) -> Option<String> {
        self.dmem.ndl_mut().transport_mut().finish_writes()
    }

    fn driver_mut(&mut self) -> Option<&mut KernelDriver> {
        self.dmem
            .ndl_mut()
            .transport_mut()
            .local_driver()?
            .downcast_mut::<KernelDriver>()
    }

    fn driver(&mut self) -> Option<&KernelDriver> {
        self.driver_mut().map(|d| &*d)
    }

    /// Whether the trace used a host operation.
    #[must_use]
    pub fn used(&self) -> bool {
        self.used
    }

    /// The runtime.
    #[must_use]
    pub fn dmem(&self) -> &Dmem {
        &self.dmem
    }

    /// The end-of-run host report.
    pub fn report(&mut self) -> HostReport {
        let logger = self.dmem.logger();
        let dml_channel_bytes = (0..4)
            .map(|c| logger.memory_usage(c).unwrap_or(0))
            .collect();
        let dml_nc_bytes = (0..8)
            .filter_map(|nc| {
                let v = logger.memory_usage_nc(nc, dmem::USAGE_TYPES).unwrap_or(0);
                (v > 0).then_some((nc, v))
            })
            .collect();
        let (dml_log_entries, dml_log_dropped) =
            (logger.entry_count() as u64, logger.entries_dropped());
        let live_tensors = self
            .tensors
            .iter()
            .filter(|(_, t)| !t.freed)
            .map(|(n, t)| (n.clone(), t.size))
            .collect();
        let driver = self.driver().map(|d| d.stats().clone()).unwrap_or_default();
        HostReport {
            ioctls: driver.ioctls.clone(),
            ioctl_calls: driver.ioctls.values().sum(),
            ioctl_errors: driver.errors.values().sum(),
            dml_channel_bytes,
            dml_nc_bytes,
            dml_log_entries,
            dml_log_dropped,
            live_tensors,
            driver,
        }
    }

    /// Remembers the status of a failed runtime call; returns the text.
    fn fail(&mut self, s: NrtStatus, text: String) -> String {
        self.last_status = Some(s);
        text
    }

    fn allocator(&mut self, name: Option<&str>, nc: u32) -> Result<AllocatorId, String> {
        if let Some(n) = name
            && n != "global"
        {
            return self
                .allocators
                .get(n)
                .copied()
                .ok_or_else(|| format!("no allocator `{n}` (create it with `allocator {n}`)"));
        }
        if let Some(a) = self.globals.get(&nc) {
            return Ok(*a);
        }
        let a = self
            .dmem
            .dmem_allocator_create(AllocatorKind::Global, nc)
            .map_err(|s| self.fail(s, format!("dmem_allocator_create: {s}")))?;
        self.globals.insert(nc, a);
        Ok(a)
    }

    /// A tensor by name: live, or an error naming why not.
    fn tensor(&self, name: &str) -> Result<Tensor, String> {
        match self.tensors.get(name) {
            Some(t) if !t.freed => Ok(*t),
            Some(_) => Err(format!("tensor `{name}` was freed")),
            None => Err(format!("no tensor `{name}` (alloc {name} … first)")),
        }
    }

    /// Runs one host operation; the text and, for checks, whether it held.
    /// A failed runtime call leaves its status in `self.last_status`.
    fn run_op(&mut self, op: &HostOp, files: &mut dyn TraceFiles) -> Result<HostOutcome, String> {
        self.last_status = None;
        self.used = true;
        match op {
            HostOp::Alloc {
                name,
                size,
                host,
                channel,
                nc,
                usage,
                align,
                hint,
                allocator,
            } => {
                if self.tensors.get(name).is_some_and(|t| !t.freed) {
                    return Err(format!("tensor `{name}` is already allocated"));
                }
                // The NC is the allocator's (its pcore); `nc=` must agree.
                let named = allocator.as_deref().filter(|a| *a != "global");
                let owner = match named {
                    Some(a) => self
                        .allocators
                        .get(a)
                        .and_then(|id| self.dmem.allocator_info(*id))
                        .map(|(_, n)| n),
                    None => None,
                };
                let nc = match (owner, *nc) {
                    (Some(o), Some(n)) if o != n => {
                        return Err(format!(
                            "alloc {name}: allocator `{}` belongs to nc {o}, not nc {n}",
                            named.unwrap_or_default()
                        ));
                    }
                    (Some(o), _) => o,
                    (None, n) => n.unwrap_or(0),
                };
                let nc = &nc;
                let a = self.allocator(allocator.as_deref(), *nc)?;
                let usage_t = UsageType::from_name(usage)
                    .ok_or_else(|| format!("unknown usage `{usage}`"))?;
                let loc = if *host {
                    MemLocation::HostDram
                } else {
                    MemLocation::TongaDram
                };
                let ch = channel.unwrap_or(nc / 2);
                let hint = hint.clone().unwrap_or_else(|| name.clone());
                let r = if *align == 0 {
                    self.dmem
                        .dmem_alloc(a, *size, loc, ch, None, usage_t, Some(&hint))
                } else {
                    self.dmem.dmem_alloc_aligned(
                        a,
                        *size,
                        loc,
                        ch,
                        None,
                        usage_t,
                        Some(&hint),
                        *align,
                    )
                };
                match r {
                    Ok(id) => {
                        self.tensors.insert(
                            name.clone(),
                            Tensor {
                                id,
                                size: *size,
                                freed: false,
                            },
                        );
                        let d = self.dmem.get(id).ok_or("internal: no dmem_t")?;
                        Ok(HostOutcome::Done(format!(
                            "alloc {name}: {size} bytes at pa {:#x} (align_offset {:#x}, allocated {} bytes)",
                            d.pa, d.align_offset_bytes, d.allocated_size_bytes
                        )))
                    }
                    Err(s) => Err(self.fail(s, format!("alloc {name}: {s}"))),
                }
            }
            HostOp::Allocator { name, nc } => {
                if self.allocators.contains_key(name) || name == "global" {
                    return Err(format!("allocator `{name}` exists"));
                }
                let a = self
                    .dmem
                    .dmem_allocator_create(AllocatorKind::Model, *nc)
                    .map_err(|s| self.fail(s, format!("dmem_allocator_create: {s}")))?;
                self.allocators.insert(name.clone(), a);
                Ok(HostOutcome::Done(format!(
                    "allocator {name}: MODEL on nc {nc}"
                )))
            }
            HostOp::AllocatorDestroy { name } => {
                let a = self
                    .allocators
                    .remove(name)
                    .ok_or_else(|| format!("no allocator `{name}`"))?;
                let leaks = self
                    .dmem
                    .dmem_allocator_destroy(a)
                    .map_err(|s| self.fail(s, format!("dmem_allocator_destroy: {s}")))?;
                let mut text = format!(
                    "allocator_destroy {name}: {} allocation(s) unlinked, not freed",
                    leaks.len()
                );
                for l in &leaks {
                    text.push_str(&format!(
                        "\n  leaked {} bytes at pa {:#x} ({})",
                        l.allocated_size_bytes,
                        l.pa,
                        l.hint.as_deref().unwrap_or("-")
                    ));
                }
                Ok(HostOutcome::Done(text))
            }
            HostOp::Scratchpad { name, size, nc } => {
                if self.tensors.get(name).is_some_and(|t| !t.freed) {
                    return Err(format!("tensor `{name}` is already allocated"));
                }
                let id = self
                    .dmem
                    .dmem_alloc_contiguous_scratchpad_page(*nc, *size)
                    .map_err(|s| self.fail(s, format!("scratchpad {name}: {s}")))?;
                self.tensors.insert(
                    name.clone(),
                    Tensor {
                        id,
                        size: *size,
                        freed: false,
                    },
                );
                let pa = self.dmem.get(id).map_or(0, |d| d.pa);
                Ok(HostOutcome::Done(format!(
                    "scratchpad {name}: {size} bytes at pa {pa:#x} on the TPB allocator of nc {nc}"
                )))
            }
            HostOp::CopyIn {
                name,
                data,
                offset,
                len,
            } => {
                let t = self.tensor(name)?;
                let len = copy_len("copyin", name, &t, *offset, *len)?;
                // The source computes its bytes as they are read: nothing
                // of the copy's size is held on the host side.
                let source = Stream::new(data, len, files)?;
                let buf = self
                    .dmem
                    .user_mut()
                    .alloc_source(len, Box::new(StreamSource(source)));
                let r = self.dmem.dmem_buf_copyin(t.id, buf, *offset, len);
                self.dmem.user_mut().free(buf);
                r.map_err(|s| self.fail(s, format!("copyin {name}: {s}")))?;
                Ok(HostOutcome::Done(format!(
                    "copyin {name}: {len} bytes at offset {offset:#x}"
                )))
            }
            HostOp::CopyOut {
                name,
                offset,
                len,
                check,
            } => {
                let t = self.tensor(name)?;
                let len = copy_len("copyout", name, &t, *offset, *len)?;
                // The destination hashes and checks the bytes as they
                // arrive: nothing of the copy's size is held.
                let expect = match check {
                    Some(HostCheck::Data(d)) => Some(Stream::new(d, len, files)?),
                    _ => None,
                };
                let hash = !matches!(check, Some(HostCheck::Data(_)));
                let buf = self
                    .dmem
                    .user_mut()
                    .alloc_sink(len, Box::new(CheckSink::new(len, expect, hash)));
                let r = self.dmem.dmem_buf_copyout(t.id, buf, *offset, len);
                let seen = take_report(&mut self.dmem, buf);
                r.map_err(|s| self.fail(s, format!("copyout {name}: {s}")))?;
                let seen = seen?;
                let digest = seen.sha256.map(|d| hex(&d)).unwrap_or_default();
                if check.is_some()
                    && let Some(why) = self.copy_out_stale(t.id, *offset, len)
                {
                    return Ok(HostOutcome::Skipped(format!(
                        "copyout {name}: {len} bytes: skipped (timing-only): {why}"
                    )));
                }
                match check {
                    None => Ok(HostOutcome::Done(format!(
                        "copyout {name}: {len} bytes at offset {offset:#x}, sha256 {digest}"
                    ))),
                    Some(HostCheck::Sha256(want)) => {
                        let held = digest == hex(want);
                        Ok(HostOutcome::Checked {
                            text: format!(
                                "copyout {name}: {len} bytes, sha256 {digest}{}",
                                if held {
                                    ""
                                } else {
                                    " (expected another digest)"
                                }
                            ),
                            held,
                        })
                    }
                    Some(HostCheck::Data(_)) => Ok(HostOutcome::Checked {
                        text: match seen.first_mismatch {
                            None => format!("copyout {name}: {len} bytes as expected"),
                            Some(m) => format!(
                                "copyout {name}: byte {} is {:#04x}, expected {:#04x}",
                                m.index, m.got, m.want
                            ),
                        },
                        held: seen.first_mismatch.is_none(),
                    }),
                }
            }
            HostOp::BatchCopy {
                to_device,
                tensors,
                len,
                data,
            } => self.batch(*to_device, tensors, *len, data, files),
            HostOp::Free { name } => {
                // A freed name keeps its stale id: freeing it again is the
                // runtime's double free.
                let t = self
                    .tensors
                    .get(name)
                    .copied()
                    .ok_or_else(|| format!("no tensor `{name}` (alloc {name} … first)"))?;
                let r = self.dmem.dmem_free(t.id);
                let gone = self.dmem.get(t.id).is_none();
                if let Some(e) = self.tensors.get_mut(name) {
                    e.freed = gone;
                }
                match r {
                    Ok(()) if gone => Ok(HostOutcome::Done(format!("free {name}: released"))),
                    Ok(()) => {
                        let rc = self.dmem.get(t.id).map_or(0, |d| d.ref_count);
                        Ok(HostOutcome::Done(format!(
                            "free {name}: ref_count {rc}, still allocated"
                        )))
                    }
                    Err(s) => Err(self.fail(s, format!("free {name}: {s}"))),
                }
            }
            HostOp::Acquire { name } => {
                let t = self.tensor(name)?;
                self.dmem
                    .dmem_acquire_reference(t.id)
                    .map_err(|s| self.fail(s, format!("acquire {name}: {s}")))?;
                let rc = self.dmem.get(t.id).map_or(0, |d| d.ref_count);
                Ok(HostOutcome::Done(format!("acquire {name}: ref_count {rc}")))
            }
            HostOp::MemStats => Ok(HostOutcome::Done(self.mem_stats_text())),
            HostOp::Runtime {
                zerocopy,
                bar4_write_size,
                dml_log,
                dml_verbose,
                metrics,
            } => {
                if dml_log.is_some() || dml_verbose.is_some() {
                    let cap = dml_log.map_or(self.dmem.config().dml_log_capacity, |n| n as usize);
                    let verbose = dml_verbose.unwrap_or(self.dmem.config().dml_verbose);
                    self.dmem
                        .dml_configure(cap, verbose)
                        .map_err(|s| self.fail(s, format!("runtime: the DML log is configured before the first allocation ({s})")))?;
                }
                let c = self.dmem.config_mut();
                if let Some(z) = zerocopy {
                    c.test_zerocopy = *z;
                }
                if let Some(b) = bar4_write_size {
                    c.direct_bar4_write_size = u32::try_from(*b).unwrap_or(u32::MAX);
                }
                if let Some(m) = metrics {
                    c.enable_metrics = *m;
                }
                Ok(HostOutcome::Done(format!(
                    "runtime: test_zerocopy={} direct_bar4_write_size={} enable_metrics={} dml_log_capacity={} dml_verbose={}",
                    c.test_zerocopy,
                    c.direct_bar4_write_size,
                    c.enable_metrics,
                    c.dml_log_capacity,
                    c.dml_verbose
                )))
            }
            HostOp::Driver {
                aligned_alloc,
                attached,
                drop_batch,
            } => {
                let d = self.driver_mut().ok_or("internal: no driver")?;
                let c = d.config_mut();
                if let Some(a) = aligned_alloc {
                    c.aligned_alloc = *a;
                }
                if let Some(a) = attached {
                    c.attached = *a;
                }
                if let Some(b) = drop_batch {
                    c.drop_batches.insert(*b);
                }
                Ok(HostOutcome::Done(format!(
                    "driver: aligned_alloc={} attached={} drop_batches={:?}",
                    c.aligned_alloc, c.attached, c.drop_batches
                )))
            }
        }
    }

    fn batch(
        &mut self,
        to_device: bool,
        names: &[String],
        len: u64,
        data: &HostData,
        files: &mut dyn TraceFiles,
    ) -> Result<HostOutcome, String> {
        let stream = Stream::new(data, len, files)?;
        let mut batches = Vec::new();
        let mut bufs = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let t = match self.tensor(name) {
                Ok(t) => t,
                Err(e) => {
                    for buf in bufs {
                        self.dmem.user_mut().free(buf);
                    }
                    return Err(e);
                }
            };
            // Pattern seeds advance by tensor so tensors differ; sources
            // and sinks hold none of the bytes.
            let s = stream.advanced(k as u64);
            let buf = if to_device {
                self.dmem
                    .user_mut()
                    .alloc_source(len, Box::new(StreamSource(s)))
            } else {
                self.dmem
                    .user_mut()
                    .alloc_sink(len, Box::new(CheckSink::new(len, Some(s), false)))
            };
            bufs.push(buf);
            batches.push(TensorBatch {
                mem: t.id,
                tensor_offset_bytes: 0,
                ops: vec![BatchOp {
                    offset_bytes: 0,
                    size_bytes: len,
                    buffer: buf,
                }],
            });
        }
        let r = if to_device {
            self.dmem.dmem_buf_batch_copyin(&batches)
        } else {
            self.dmem.dmem_buf_batch_copyout(&batches)
        };
        let mut bad = Vec::new();
        let mut sink_error = None;
        for (name, buf) in names.iter().zip(&bufs) {
            if to_device {
                self.dmem.user_mut().free(*buf);
                continue;
            }
            match take_report(&mut self.dmem, *buf) {
                Ok(seen) if seen.first_mismatch.is_none() => {}
                Ok(_) => bad.push(name.clone()),
                Err(e) => {
                    sink_error.get_or_insert(e);
                }
            }
        }
        r.map_err(|s| self.fail(s, format!("batch_copy: {s}")))?;
        if let Some(e) = sink_error {
            return Err(e);
        }
        let dir = if to_device { "in" } else { "out" };
        if !to_device
            && let Some(why) = names.iter().find_map(|n| {
                let id = self.tensors.get(n)?.id;
                self.copy_out_stale(id, 0, len)
            })
        {
            return Ok(HostOutcome::Skipped(format!(
                "batch_copy {dir}: {} tensors × {len} bytes: skipped (timing-only): {why}",
                names.len()
            )));
        }
        if to_device {
            return Ok(HostOutcome::Done(format!(
                "batch_copy {dir}: {} tensors × {len} bytes in one ioctl",
                names.len()
            )));
        }
        Ok(HostOutcome::Checked {
            text: if bad.is_empty() {
                format!(
                    "batch_copy {dir}: {} tensors × {len} bytes as expected",
                    names.len()
                )
            } else {
                format!("batch_copy {dir}: differ: {}", bad.join(", "))
            },
            held: bad.is_empty(),
        })
    }

    fn mem_stats_text(&mut self) -> String {
        let m = self.mem_stats();
        let mut t = String::from("mem_stats:");
        for (c, b) in m.hbm_channel_bytes.iter().enumerate() {
            t.push_str(&format!(" hbm{c}={b}"));
        }
        for (nc, v) in &m.nc_bytes {
            t.push_str(&format!(" nc{nc}={v}"));
        }
        if self.driver().is_some() {
            t.push_str(&format!(
                "; driver device_mem={} host_mem={}",
                m.driver_device_mem_bytes, m.driver_host_mem_bytes
            ));
        }
        t
    }

    /// The driver's events kept so far (with
    /// [`SessionOptions::keep_driver_events`]), in order, each with the
    /// device cycle it began: an ioctl began when the host operation began
    /// or the previous ioctl returned (host code takes no simulated time);
    /// other events are instants at their own cycle.
    #[must_use]
    pub fn driver_events(&self) -> &[(u64, kdriver::DriverEvent)] {
        &self.driver_log
    }

    /// The runtime's and the driver's events since the last call, as text
    /// lines.
    pub fn drain_event_lines(&mut self) -> Vec<String> {
        let mut out: Vec<String> = self
            .dmem
            .drain_events()
            .iter()
            .filter_map(runtime_event_line)
            .collect();
        let events = self
            .driver_mut()
            .map(KernelDriver::take_events)
            .unwrap_or_default();
        for e in events {
            if self.keep_driver_events {
                let start = match e.kind {
                    kdriver::DriverEventKind::Ioctl { .. } => {
                        let s = self.op_start.max(self.last_ioctl_end).min(e.cycle);
                        self.last_ioctl_end = e.cycle;
                        s
                    }
                    _ => e.cycle,
                };
                self.driver_log.push((start, e.clone()));
            }
            if let kdriver::DriverEventKind::Log { line } = e.kind {
                out.push(format!("driver: {line}"));
            }
        }
        out
    }
}

/// The trace's name of a status (`NRT_RESOURCE` → `resource`).
fn status_name(s: NrtStatus) -> String {
    s.name().trim_start_matches("NRT_").to_ascii_lowercase()
}

/// Unmaps a copy-out destination and returns what it saw.
///
/// # Errors
///
/// When the buffer is gone or the copy wrote a byte twice (the check reads
/// each byte once; no copy path does that).
fn take_report(dmem: &mut Dmem, buf: u64) -> Result<SinkReport, String> {
    let sink = dmem
        .user_mut()
        .take_sink(buf)
        .and_then(|s| s.into_any().downcast::<CheckSink>().ok())
        .ok_or("internal: the copy-out buffer is gone")?;
    let report = sink.finish();
    if let Some(at) = report.rewritten_at {
        return Err(format!(
            "internal: the copy wrote byte {at} of its destination twice; it cannot be checked"
        ));
    }
    if let Some(at) = report.unreadable_at {
        return Err(format!(
            "the expected bytes could not be read from byte {at} of the copy on: it was not checked"
        ));
    }
    Ok(report)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One line per runtime event worth reading in a run log.
fn runtime_event_line(e: &RuntimeEvent) -> Option<String> {
    match e {
        RuntimeEvent::SysTrace {
            phase, trace_type, ..
        } => Some(format!(
            "sys-trace {:?} {} ({:?})",
            phase,
            trace_type.code(),
            trace_type
        )),
        RuntimeEvent::Log { level, message } => Some(format!("nlog {level:?}: {message}")),
        RuntimeEvent::MemUsage { line } => Some(line.clone()),
        RuntimeEvent::OomReport { text } | RuntimeEvent::DmlDump { text } => Some(text.clone()),
        RuntimeEvent::Leaked { allocations, .. } => Some(format!(
            "diagnostic: allocator destroyed with {} live allocation(s) still linked",
            allocations.len()
        )),
        RuntimeEvent::DoubleFree { id } => Some(format!(
            "diagnostic: double free of {id} (not a live allocation)"
        )),
        // The NDS metric record (only with `runtime metrics=on`).
        RuntimeEvent::Nds {
            kind,
            device,
            nc,
            usage,
            mem_type,
            allocated_size_bytes,
        } => Some(format!(
            "nds: register_mem_{} device {device} nc {nc} usage {} location {} {allocated_size_bytes} bytes",
            match kind {
                dmem::MemEventKind::Alloc => "alloc",
                dmem::MemEventKind::Free => "free",
            },
            usage.name(),
            match mem_type {
                MemLocation::HostDram => "HOST_DRAM",
                MemLocation::TongaDram => "TONGA_DRAM",
            }
        )),
        _ => None,
    }
}

impl HostSession {
    /// In timing-only mode, why a copy-out of `len` bytes at `offset` of a
    /// tensor cannot be checked: its device-to-host copy moved no payload
    /// (longer than `TIMING_ONLY_MIN_SKIP_BYTES`), or the device bytes it
    /// reads are the destination of a copy that moved none. `None` in data
    /// mode.
    fn copy_out_stale(&mut self, id: DmemId, offset: u64, len: u64) -> Option<String> {
        let addr = self
            .dmem
            .get(id)
            .map(|d| d.pa + d.align_offset_bytes + offset);
        // Only a DMA copy skips its payload: a host tensor's copy is the
        // CPU's (docs/host-runtime.md §3.6), also on the zero-copy path,
        // which copies a host chunk by CPU (§3.10), so only bytes a
        // skipped copy left stale in the tensor are unknown.
        let by_dma = self
            .dmem
            .get(id)
            .is_some_and(|d| d.mem_type != MemLocation::HostDram);
        let dev = HostRuntime::device(self);
        if !dev.timing_only() {
            return None;
        }
        if by_dma && len > soc::memory::TIMING_ONLY_MIN_SKIP_BYTES {
            return Some("the device-to-host copy moved no payload".into());
        }
        let b = dev.stale_byte_in(addr?, len)?;
        Some(format!(
            "device byte {b:#x} is the destination of a DMA copy that moved no payload"
        ))
    }
}

impl HostRuntime for HostSession {
    fn device(&mut self) -> &mut Device {
        let Self { dmem, detached, .. } = self;
        match dmem
            .ndl_mut()
            .transport_mut()
            .local_driver()
            .and_then(|a| a.downcast_mut::<KernelDriver>())
        {
            Some(d) => d.device_mut(),
            None => detached,
        }
    }

    fn tensor_addr(&self, name: &str) -> Option<u64> {
        let t = self.tensors.get(name).filter(|t| !t.freed)?;
        let d = self.dmem.get(t.id)?;
        Some(d.pa + d.align_offset_bytes)
    }

    fn host_op(
        &mut self,
        op: &HostOp,
        status: Option<&str>,
        files: &mut dyn TraceFiles,
    ) -> Result<HostOutcome, String> {
        self.op_start = HostRuntime::device(self).now().0;
        let r = self.run_op(op, files);
        let r = match status {
            None => r,
            // Timing-only: the data check that would decide it was not
            // made (the runtime's status was success): skipped, never
            // passed or failed (docs/user-guide.md §Timing-only mode).
            Some(want) if matches!(r, Ok(HostOutcome::Skipped(_))) => r.map(|o| match o {
                HostOutcome::Skipped(t) => HostOutcome::Skipped(format!(
                    "{t} [status {}; whether it is {want} rests on the data check]",
                    NrtStatus::Success.name()
                )),
                o => o,
            }),
            Some(want) => {
                let (got, text) = match r {
                    Ok(HostOutcome::Done(t) | HostOutcome::Skipped(t)) => (NrtStatus::Success, t),
                    Ok(HostOutcome::Checked { text, held }) => (
                        if held {
                            NrtStatus::Success
                        } else {
                            NrtStatus::Failure
                        },
                        text,
                    ),
                    // No runtime call failed: the trace named what does
                    // not exist (a tensor, an allocator) or asked for what
                    // cannot be — bad input, which `status=` does not
                    // expect away (docs/trace-format.md §5.1, §6).
                    Err(m) if self.last_status.is_none() => return Err(m),
                    Err(m) => (self.last_status.unwrap_or(NrtStatus::Failure), m),
                };
                let held = status_name(got) == want;
                Ok(HostOutcome::Checked {
                    text: if held {
                        format!("{text} [status {} as expected]", got.name())
                    } else {
                        format!("{text} [status {}, expected {want}]", got.name())
                    },
                    held,
                })
            }
        };
        let lines = self.drain_event_lines();
        let with = |t: String| {
            if lines.is_empty() {
                t
            } else {
                let body: Vec<String> = lines
                    .iter()
                    .flat_map(|l| l.lines())
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| format!("  {}", l.trim_start()))
                    .collect();
                format!("{t}\n{}", body.join("\n"))
            }
        };
        match r {
            Ok(HostOutcome::Done(t)) => Ok(HostOutcome::Done(with(t))),
            Ok(HostOutcome::Skipped(t)) => Ok(HostOutcome::Skipped(with(t))),
            Ok(HostOutcome::Checked { text, held }) => Ok(HostOutcome::Checked {
                text: with(text),
                held,
            }),
            Err(m) => Err(with(m)),
        }
    }
}

/// Parses, links and runs a trace with a host session over `dev`.
///
/// # Errors
///
/// Parse or link errors (nothing ran), or a session that cannot start.
pub fn run_source(
    dev: Device,
    source: &str,
    file: &str,
    files: &mut dyn TraceFiles,
) -> Result<(soc::exec::RunReport, HostSession), Vec<String>> {
    run_source_with(dev, source, file, files, SessionOptions::default())
}

/// [`run_source`] with session options.
///
/// # Errors
///
/// As [`run_source`].
pub fn run_source_with(
    dev: Device,
    source: &str,
    file: &str,
    files: &mut dyn TraceFiles,
    opts: SessionOptions,
) -> Result<(soc::exec::RunReport, HostSession), Vec<String>> {
    run_source_observed(dev, source, file, files, opts, &mut soc::exec::NoHooks)
}

/// [`run_source_with`] with executor hooks: a consumer that streams
/// statement records and events as they happen, an interrupt check
/// (`soc::exec::ExecHooks`).
///
/// # Errors
///
/// As [`run_source`].
pub fn run_source_observed(
    dev: Device,
    source: &str,
    file: &str,
    files: &mut dyn TraceFiles,
    opts: SessionOptions,
    hooks: &mut dyn soc::exec::ExecHooks,
) -> Result<(soc::exec::RunReport, HostSession), Vec<String>> {
    let trace = trace_format::parse(source, file)
        .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    run_trace_observed(dev, &trace, file, files, opts, hooks)
}

/// [`run_source_observed`] for statements already parsed (or built, as
/// `soc::exec::stream_trace` builds those of a bare instruction stream).
///
/// # Errors
///
/// Every name the trace cannot resolve; the runtime's set-up error.
pub fn run_trace_observed(
    dev: Device,
    trace: &trace_format::Trace,
    file: &str,
    files: &mut dyn TraceFiles,
    opts: SessionOptions,
    hooks: &mut dyn soc::exec::ExecHooks,
) -> Result<(soc::exec::RunReport, HostSession), Vec<String>> {
    let linked = soc::exec::link(&dev, trace, file)
        .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let mut session = HostSession::with_options(dev, opts).map_err(|e| vec![e])?;
    let report = soc::exec::run_linked_host(&mut session, trace, &linked, file, files, hooks);
    Ok((report, session))
}

/// The bytes a `copyin`/`copyout` moves: `len`, or from `offset` to the
/// tensor's end. None is bad input (a length is 1 ..= 4 GiB,
/// docs/trace-format.md §1): an offset at or past the end with no `len`.
fn copy_len(
    op: &str,
    name: &str,
    t: &Tensor,
    offset: u64,
    len: Option<u64>,
) -> Result<u64, String> {
    match len {
        Some(n) => Ok(n),
        None if offset < t.size => Ok(t.size - offset),
        None => Err(format!(
            "{op} {name}: offset {offset:#x} is at or past the tensor's end ({:#x} bytes): nothing to copy",
            t.size
        )),
    }
}
