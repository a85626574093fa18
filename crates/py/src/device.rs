//! `_native.Device`: one simulated device behind the host runtime's
//! session (`host_exec::HostSession`), so that memory, registers, words
//! and runtime calls all reach the same device (docs/python.md §Device).

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use soc::device::OnStall;
use soc::{Device as SocDevice, DeviceEvent};

use crate::errors::{bad, bus, device};
use crate::signals::Signals;

/// A simulated Trainium2 device (the native half of `neuron_sim.Device`).
#[pyclass(unsendable, module = "neuron_sim._native")]
pub struct Device {
    pub(crate) session: host_exec::HostSession,
    /// Device events kept for `write_perfetto` (only with `perfetto=True`).
    events: Option<Vec<DeviceEvent>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").finish_non_exhaustive()
    }
}

/// Reads the first and last byte of `[addr, addr + n)`: a range that runs
/// past its memory (`dev.read("hbm0", 1 << 40)`) is the fabric's
/// `BusError` before any host memory is allocated for it.
fn probe_ends(dev: &SocDevice, addr: u64, n: u64) -> PyResult<()> {
    if n == 0 {
        return Ok(());
    }
    let last = addr.checked_add(n - 1).ok_or_else(|| {
        bus(format!(
            "{n:#x} bytes at {addr:#x} run past the 64-bit address space"
        ))
    })?;
    // A long range is memory, one target (registers are read a few at a
    // time): the whole range is checked before anything is allocated.
    if n > 64 * 1024 {
        soc::memory::DeviceMemory::resolve(dev.map(), addr, n).map_err(bus)?;
    }
    let mut b = [0u8; 1];
    dev.read_bytes(addr, &mut b).map_err(bus)?;
    dev.read_bytes(last, &mut b).map_err(bus)
}

/// Whether the firmware holds work nothing can end: a deadlocked wait of
/// the wait-for graph, or descriptors RDMA_DESC_GEN wrote and no START rang.
fn work_left(dev: &SocDevice) -> bool {
    dev.wait_graph("run", None).is_some_and(|g| g.deadlock) || dev.cores().any(|c| c.unrung().0 > 0)
}

/// `n` zero bytes, or `MemoryError` when the host cannot hold them (never
/// an abort of the interpreter).
fn zeroed(n: usize) -> PyResult<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err(format!("cannot allocate {n} bytes on the host"))
    })?;
    v.resize(n, 0);
    Ok(v)
}

impl Device {
    pub(crate) fn dev(&mut self) -> &mut SocDevice {
        self.session.device_mut()
    }

    /// Keeps the events the last run produced (for the timeline).
    pub(crate) fn keep_events(&mut self) {
        if self.events.is_some() {
            let new = self.session.device_mut().take_events();
            if let Some(kept) = &mut self.events {
                kept.extend(new);
            }
        }
    }

    /// A 32-bit value without read side effects: a register's current
    /// value, or a memory word.
    fn peek(dev: &SocDevice, addr: u64) -> Option<u32> {
        match dev.reg_target(addr) {
            Ok(Some(t)) => dev.peek_reg(t),
            Ok(None) => {
                let mut b = [0u8; 4];
                dev.read_bytes(addr, &mut b).ok()?;
                Some(u32::from_le_bytes(b))
            }
            Err(_) => None,
        }
    }
}

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (timing=None, timing_only=false, soc_map=None, csr_maps=None, vcd=false, perfetto=false))]
    fn new(
        timing: Option<&str>,
        timing_only: bool,
        soc_map: Option<&str>,
        csr_maps: Option<&str>,
        vcd: bool,
        perfetto: bool,
    ) -> PyResult<Self> {
        let sources = crate::trace::device_sources(timing, soc_map, csr_maps)?;
        let mut dev = soc::setup::device_from(&sources).map_err(bad)?;
        dev.set_timing_only(timing_only);
        if vcd {
            dev.record_waves();
        }
        dev.set_trace(perfetto);
        // As the trace executor does before a trace's first statement: the
        // runtime talks to booted cores only.
        dev.boot_firmware().map_err(device)?;
        let opts = host_exec::SessionOptions {
            keep_driver_events: perfetto,
            ..host_exec::SessionOptions::default()
        };
        let session = host_exec::HostSession::with_options(dev, opts).map_err(device)?;
        let mut d = Self {
            session,
            events: perfetto.then(Vec::new),
        };
        d.keep_events();
        Ok(d)
    }

    /// Resolves an address written as in a trace; returns (address,
    /// register name or None).
    fn resolve(&mut self, text: &str) -> PyResult<(u64, Option<String>)> {
        let r = soc::setup::resolve_text(self.dev(), text).map_err(bad)?;
        Ok((r.addr, r.register))
    }

    /// Writes bytes (a contiguous uint8 array) at `addr`.
    fn write_bytes(&mut self, addr: u64, data: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let bytes = data
            .as_slice()
            .map_err(|_| bad("data must be a contiguous uint8 array"))?;
        self.dev().write_bytes(addr, bytes).map_err(bus)
    }

    /// Reads `n` bytes at `addr` into a new uint8 array.
    fn read_bytes<'py>(
        &mut self,
        py: Python<'py>,
        addr: u64,
        n: usize,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let dev = self.dev();
        probe_ends(dev, addr, n as u64)?;
        let mut buf = zeroed(n)?;
        dev.read_bytes(addr, &mut buf).map_err(bus)?;
        Ok(PyArray1::from_vec(py, buf))
    }

    /// Reads a strided 2-D block: `rows` runs of `row_bytes` bytes, the
    /// runs `stride_bytes` apart (one SBUF partition each, say).
    fn read_rows<'py>(
        &mut self,
        py: Python<'py>,
        addr: u64,
        rows: usize,
        row_bytes: usize,
        stride_bytes: u64,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let total = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| bad("block too large"))?;
        let dev = self.dev();
        if rows > 0 {
            probe_ends(dev, addr, row_bytes as u64)?;
            let last = stride_bytes
                .checked_mul(rows as u64 - 1)
                .and_then(|o| addr.checked_add(o))
                .ok_or_else(|| {
                    bus(format!(
                        "the last row of {rows} lies past the 64-bit address space"
                    ))
                })?;
            probe_ends(dev, last, row_bytes as u64)?;
        }
        let mut buf = zeroed(total)?;
        for (r, chunk) in buf.chunks_mut(row_bytes.max(1)).enumerate() {
            let at = addr + stride_bytes * r as u64;
            dev.read_bytes(at, chunk).map_err(bus)?;
        }
        Ok(PyArray1::from_vec(py, buf))
    }

    /// Writes a strided 2-D block (the inverse of `read_rows`).
    fn write_rows(
        &mut self,
        addr: u64,
        data: PyReadonlyArray1<'_, u8>,
        row_bytes: usize,
        stride_bytes: u64,
    ) -> PyResult<()> {
        let bytes = data
            .as_slice()
            .map_err(|_| bad("data must be a contiguous uint8 array"))?;
        if row_bytes == 0 || bytes.len() % row_bytes != 0 {
            return Err(bad(format!(
                "{} bytes are not whole rows of {row_bytes} bytes",
                bytes.len()
            )));
        }
        let dev = self.dev();
        for (r, chunk) in bytes.chunks(row_bytes).enumerate() {
            dev.write_bytes(addr + stride_bytes * r as u64, chunk)
                .map_err(bus)?;
        }
        Ok(())
    }

    /// A 32-bit read through the fabric (register side effects apply).
    fn read32(&mut self, addr: u64) -> PyResult<u32> {
        self.dev().read32(addr).map_err(bus)
    }

    /// A 32-bit write through the fabric (doorbells ring, semaphores count).
    fn write32(&mut self, addr: u64, value: u32) -> PyResult<()> {
        let reg = self.dev().write32(addr, value).map_err(bus)?;
        self.keep_events();
        // As `write32` in a trace: a write the register ignores is an error
        // of the caller's (docs/python.md §Device), never silently dropped.
        match reg {
            Some(w) if w.read_only => Err(bus(format!(
                "register {}.{} is read-only; value unchanged ({:#010x})",
                w.region, w.register, w.new
            ))),
            _ => Ok(()),
        }
    }

    /// A 32-bit value without side effects (None where nothing reads).
    fn peek32(&mut self, addr: u64) -> Option<u32> {
        Self::peek(self.dev(), addr)
    }

    /// The register at `addr`: (region, register name, fields as
    /// (name, lsb, width, access, description)), or None for memory.
    #[allow(clippy::type_complexity)]
    fn reg_info(
        &mut self,
        addr: u64,
    ) -> PyResult<Option<(String, String, Vec<(String, u32, u32, String, String)>)>> {
        let dev = self.dev();
        let Some(t) = dev.reg_target(addr).map_err(bus)? else {
            return Ok(None);
        };
        let region = dev.map().name(t.region).to_string();
        let block = dev
            .block_of(t.region)
            .ok_or_else(|| bad(format!("{region} has no register map")))?;
        let r = block
            .element_at(t.offset)
            .map_err(|e| bus(format!("{region}+{:#x}: {e}", t.offset)))?;
        let fields = r
            .spec()
            .fields()
            .iter()
            .map(|f| {
                (
                    f.name().to_string(),
                    f.lsb(),
                    f.width(),
                    f.access().to_string(),
                    f.description().to_string(),
                )
            })
            .collect();
        Ok(Some((region, r.name(), fields)))
    }

    /// Runs until idle, or for `cycles` more cycles; returns how it
    /// stopped: "idle", "limit" or "stalled". Ctrl-C stops it after the
    /// event at hand and raises KeyboardInterrupt (a later run goes on).
    #[pyo3(signature = (cycles=None))]
    fn run(&mut self, py: Python<'_>, cycles: Option<u64>) -> PyResult<&'static str> {
        let mut signals = Signals::new(py);
        let dev = self.dev();
        let limit = cycles.map(|n| sim_core::Cycle(dev.now().0.saturating_add(n)));
        let (stop, _) = match limit {
            Some(l) => dev.advance_to_while(l, |_| signals.step()),
            None => dev.run_while(None, OnStall::SkipToLimit, |_| signals.step()),
        };
        self.keep_events();
        signals.finish()?;
        Ok(match stop {
            // Idle with firmware work nothing can end (docs/firmware.md
            // §Work left at the end): a word gated for ever, descriptors
            // no RDMA_DESC_START rings.
            soc::device::RunStop::Idle if work_left(self.dev()) => "deadlock",
            soc::device::RunStop::Idle => "idle",
            soc::device::RunStop::Limit => "limit",
            soc::device::RunStop::Stalled => "stalled",
        })
    }

    /// Runs until the 32-bit value at `addr` (masked) compares with
    /// `value` by `op` ("==", "!=", ">="), at most `timeout` cycles.
    /// Returns (held, value, cycles waited, how the run stopped).
    #[pyo3(signature = (addr, op, value, timeout=100_000, mask=0xffff_ffff))]
    fn wait(
        &mut self,
        py: Python<'_>,
        addr: u64,
        op: &str,
        value: u32,
        timeout: u64,
        mask: u32,
    ) -> PyResult<(bool, u32, u64, &'static str)> {
        let holds: fn(u32, u32) -> bool = match op {
            "==" => |v, x| v == x,
            "!=" => |v, x| v != x,
            ">=" => |v, x| v >= x,
            other => {
                return Err(bad(format!(
                    "wait: op {other:?} is not one of \"==\", \"!=\", \">=\""
                )));
            }
        };
        let dev = self.dev();
        let start = dev.now().0;
        let first =
            Self::peek(dev, addr).ok_or_else(|| bus(format!("wait: {addr:#x} cannot be read")))?;
        if holds(first & mask, value) {
            return Ok((true, first, 0, "held"));
        }
        let limit = sim_core::Cycle(start.saturating_add(timeout));
        let mut signals = Signals::new(py);
        let (stop, met) = dev.run_while(Some(limit), OnStall::Stop, |d| {
            signals.step() || Self::peek(d, addr).is_some_and(|v| holds(v & mask, value))
        });
        let now = dev.now().0;
        let last = Self::peek(dev, addr).unwrap_or(0);
        self.keep_events();
        signals.finish()?;
        let how = if met {
            "held"
        } else {
            match stop {
                soc::device::RunStop::Idle => "idle",
                soc::device::RunStop::Limit => "timeout",
                soc::device::RunStop::Stalled => "stalled",
            }
        };
        Ok((met, last, now - start, how))
    }

    /// Simulated cycles so far.
    #[getter]
    fn now(&mut self) -> u64 {
        self.dev().now().0
    }

    /// DMA clock in GHz.
    #[getter]
    fn clock_ghz(&mut self) -> f64 {
        self.dev().timing().clock_ghz
    }

    /// The CSR snapshot (every register away from reset) as JSON text.
    fn csr_snapshot_json(&mut self) -> PyResult<String> {
        serde_json::to_string(&self.dev().csr_snapshot()).map_err(|e| bad(e.to_string()))
    }

    /// The CSR snapshot as the YAML text `run --csr-snapshot` writes.
    fn csr_snapshot_yaml(&mut self) -> String {
        self.dev().csr_snapshot().to_yaml()
    }

    /// The run summary (`run --json`'s totals) and the host runtime's
    /// report, as JSON text.
    fn summary_json(&mut self) -> PyResult<String> {
        let summary = soc::exec::Summary::of(self.dev());
        let mut v = serde_json::to_value(&summary).map_err(|e| bad(e.to_string()))?;
        if self.session.used()
            && let Some(o) = v.as_object_mut()
        {
            let host =
                serde_json::to_value(self.session.report()).map_err(|e| bad(e.to_string()))?;
            o.insert("host_runtime".into(), host);
        }
        serde_json::to_string(&v).map_err(|e| bad(e.to_string()))
    }

    /// Queues a 64-byte instruction word on core `tpb`'s firmware.
    fn inst(&mut self, tpb: u8, word: &[u8]) -> PyResult<()> {
        let bytes: &[u8; dma_abi::inst::WORD_BYTES] = word.try_into().map_err(|_| {
            bad(format!(
                "an instruction word is {} bytes, not {}",
                dma_abi::inst::WORD_BYTES,
                word.len()
            ))
        })?;
        let w = dma_abi::inst::InstWord::decode(bytes).map_err(|e| bad(e.to_string()))?;
        self.dev()
            .submit_inst(tpb, w, "python".into())
            .map_err(device)?;
        Ok(())
    }

    /// `dma_copy`'s one native call (docs/python.md §Speed): `template` (a
    /// DIRECT2D, DIRECT2D_XPOSE or INDIRECT1D word) with its source and destination
    /// replaced by the immediate addresses `src_addr` and `dst_addr`,
    /// queued on core `tpb`'s firmware, then a run until idle. Returns
    /// (cycles, descriptors, packets, how the run stopped, whether the
    /// firmware rejected a word meanwhile).
    fn copy_word(
        &mut self,
        py: Python<'_>,
        tpb: u8,
        template: &[u8],
        src_addr: u64,
        dst_addr: u64,
    ) -> PyResult<(u64, u64, u64, &'static str, bool)> {
        use dma_abi::inst::InstWord;
        use soc_map::Addr8;
        let bytes: &[u8; dma_abi::inst::WORD_BYTES] = template
            .try_into()
            .map_err(|_| bad("copy_word: a template is one 64-byte word"))?;
        let mut w = InstWord::decode(bytes).map_err(|e| bad(e.to_string()))?;
        let imm = |addr| Addr8::Immediate {
            addr,
            shape_reg: false,
        };
        match &mut w {
            InstWord::Direct2d(d) => {
                d.src_start_addr = imm(src_addr);
                d.dst_start_addr = imm(dst_addr);
            }
            InstWord::Direct2dXpose(d) => {
                d.src_start_addr = imm(src_addr);
                d.dst_start_addr = imm(dst_addr);
            }
            InstWord::Indirect1d(d) => {
                d.src_start_addr = imm(src_addr);
                d.dst_start_addr = imm(dst_addr);
            }
            _ => {
                return Err(bad(
                    "copy_word: the template is not DIRECT2D, DIRECT2D_XPOSE or INDIRECT1D",
                ));
            }
        }
        // Encoding checks the addresses fit the field.
        w.encode().map_err(|e| bad(e.to_string()))?;
        let totals = |d: &SocDevice| {
            d.queue_stats()
                .iter()
                .fold((0, 0), |(descs, pkts), (_, _, s)| {
                    (descs + s.tx_descs + s.rx_descs, pkts + s.packets)
                })
        };
        let rejected = |d: &SocDevice| {
            d.core(tpb)
                .map_or(0, |c| c.stats().values().map(|k| k.rejected).sum::<u64>())
        };
        let dev = self.dev();
        let (descs0, pkts0) = totals(dev);
        let rej0 = rejected(dev);
        let start = dev.now().0;
        dev.submit_inst(tpb, w, "python".into()).map_err(device)?;
        let mut signals = Signals::new(py);
        let (stop, _) = dev.run_while(None, OnStall::SkipToLimit, |_| signals.step());
        let (descs1, pkts1) = totals(dev);
        let refused = rejected(dev) != rej0;
        let cycles = dev.now().0 - start;
        self.keep_events();
        signals.finish()?;
        let stop = match stop {
            soc::device::RunStop::Idle => "idle",
            soc::device::RunStop::Limit => "limit",
            soc::device::RunStop::Stalled => "stalled",
        };
        Ok((cycles, descs1 - descs0, pkts1 - pkts0, stop, refused))
    }

    /// Words and calls core `tpb`'s firmware has rejected so far.
    fn fw_rejected(&mut self, tpb: u8) -> u64 {
        self.dev()
            .core(tpb)
            .map_or(0, |c| c.stats().values().map(|k| k.rejected).sum())
    }

    /// Per-queue counters: (engine, queue, packets, tx descriptors, rx
    /// descriptors, bytes) of every queue that moved something.
    fn queue_stats(&mut self) -> Vec<(u16, u8, u64, u64, u64, u64)> {
        self.dev()
            .queue_stats()
            .into_iter()
            .map(|(e, q, s)| (e, q, s.packets, s.tx_descs, s.rx_descs, s.bytes))
            .collect()
    }

    /// Writes the waveforms as VCD (needs `Device(vcd=True)`).
    fn write_vcd(&mut self, path: &str) -> PyResult<()> {
        if self.dev().waves().is_none() {
            return Err(bad(
                "write_vcd: the device records waveforms only when made with Device(vcd=True)",
            ));
        }
        let mut f = std::fs::File::create(path)
            .map_err(|e| bad(format!("cannot create VCD {path}: {e}")))?;
        self.dev()
            .write_vcd(&mut f)
            .map_err(|e| bad(format!("cannot write VCD {path}: {e}")))
    }

    /// Writes the timeline as Chrome trace-event JSON (needs
    /// `Device(perfetto=True)`); returns the number of packet slices.
    fn write_perfetto(&mut self, path: &str) -> PyResult<usize> {
        self.keep_events();
        let Some(events) = &self.events else {
            return Err(bad(
                "write_perfetto: the device keeps events only when made with Device(perfetto=True)",
            ));
        };
        let dev = self.session.device_mut();
        let meta = timeline::Meta {
            trace: "python".into(),
            clock_ghz: dev.timing().clock_ghz,
            end_cycle: dev.now().0,
        };
        let out = timeline::export(
            events.iter(),
            self.session.driver_events(),
            &meta,
            &timeline::Filter::default(),
        );
        std::fs::write(path, out.json.as_bytes())
            .map_err(|e| bad(format!("cannot write timeline {path}: {e}")))?;
        Ok(out.packets)
    }

    /// The host runtime over this device's session.
    fn runtime(slf: Py<Self>) -> crate::runtime::Runtime {
        crate::runtime::Runtime::new(slf)
    }

    /// The partition geometry of SBUF/PSUM region `name`: (partitions,
    /// stride bytes, populated bytes per partition), or None for a region
    /// without partitions.
    fn partitions(&mut self, name: &str) -> PyResult<Option<(u32, u64, u64)>> {
        let map = self.dev().map();
        let id = map
            .by_name(name)
            .ok_or_else(|| bad(format!("no region `{name}`")))?;
        Ok(map
            .region(id)
            .partitions
            .as_ref()
            .map(|p| (p.count, p.stride_bytes, p.populated_bytes)))
    }

    /// The SoC map's regions as (name, base, size) for a region prefix.
    fn region(&mut self, name: &str) -> PyResult<(u64, u64)> {
        let map = self.dev().map();
        let id = map
            .by_name(name)
            .ok_or_else(|| bad(format!("no region `{name}`")))?;
        let r = map.region(id);
        Ok((r.base, r.size_bytes))
    }
}
