//! The Neuron kernel driver model (docs/references/design.md §3, L4): the ioctl handlers of
//! docs/references/driver.md §1.6 behind [`ioctl_bus::Driver`], memory pools and handles
//! (§5, [`mem`]), and the H2T copy path (§4, [`h2t`]) running as real DMA
//! on the simulated device's engines 128–131.
//!
//! Simulated time advances only in the device: a copy's ioctl returns when
//! the driver's polling loop (in simulated microseconds) sees the batch's
//! completion marker, or times out by the driver's own arithmetic.

pub mod h2t;
mod ioctl;
pub mod mem;
pub mod pool;

pub use ioctl::CPU_COPY_PIECE_BYTES;

use std::collections::{BTreeMap, BTreeSet};

use ioctl_abi::Errno;
use serde::Serialize;
use soc::Device;

use crate::h2t::{Barrier, Ctx, H2T_ENGINES, H2tRegs, H2tRing, Pair, SYNC_THRESHOLD_PAIRS};
use crate::mem::{Lifespan, MemManager};

/// Driver configuration (module parameters and simulator switches).
#[derive(Clone, Debug)]
pub struct KdriverConfig {
    /// The calling process is attached (the attach gate of §1.6 passes).
    pub attached: bool,
    /// The driver supports aligned MEM_ALLOC_V2* requests. An older driver
    /// (false) refuses a non-zero `align` with EINVAL, which drives the
    /// runtime's over-allocate fallback (tdrv-dmem §2).
    pub aligned_alloc: bool,
    /// The driver knows the 64-bit allocation requests MEM_ALLOC_V2MT64 and
    /// _PA (feature flag MEM_ALLOC64). An older driver
    /// (false) answers them EINVAL — a known family with an unknown size
    /// (`docs/host-runtime.md` §3.6) — which drives the runtime's fallback
    /// to MEM_ALLOC_V2MT.
    pub mem_alloc64: bool,
    /// Multiplies the completion-poll budget (QEMU ×1e4, emulator ×1e5).
    pub timeout_multiplier: u64,
    /// Fault injection: H2T batches with these sequence numbers (0-based,
    /// counting every batch the driver starts) are built but never rung,
    /// so their wait times out.
    pub drop_batches: BTreeSet<u64>,
    /// The calling process's pid (ownership, extended info).
    pub pid: u64,
}

impl Default for KdriverConfig {
    fn default() -> Self {
        Self {
            attached: true,
            aligned_alloc: true,
            mem_alloc64: true,
            timeout_multiplier: 1,
            drop_batches: BTreeSet::new(),
            pid: 1000,
        }
    }
}

/// Something the driver did, in order, with the device cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DriverEvent {
    /// Device cycle.
    pub cycle: u64,
    /// What.
    pub kind: DriverEventKind,
}

/// Kinds of [`DriverEvent`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DriverEventKind {
    /// An ioctl finished: its name and result (`ret` or errno name).
    Ioctl {
        /// Driver name of the number, or the number in hex.
        name: String,
        /// `"0"`, another return value, or an errno name.
        result: String,
    },
    /// An H2T batch completed (or timed out).
    H2tBatch {
        /// NeuronCore whose ring ran it.
        nc: u32,
        /// Engine.
        engine: u16,
        /// Queue.
        queue: u8,
        /// Context slot.
        ctx: Ctx,
        /// Descriptors per ring (data pairs + completion).
        descs: u64,
        /// Data bytes.
        bytes: u64,
        /// Cycle the wait started.
        start_cycle: u64,
        /// Cycle the marker was seen (or the deadline on timeout).
        end_cycle: u64,
        /// Whether the marker was seen.
        completed: bool,
    },
    /// A driver log line.
    Log {
        /// The text.
        line: String,
    },
}

/// Counters a run reports.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct DriverStats {
    /// ioctls by driver name.
    pub ioctls: BTreeMap<String, u64>,
    /// Failed ioctls by errno name.
    pub errors: BTreeMap<String, u64>,
    /// H2T batches started.
    pub h2t_batches: u64,
    /// H2T data descriptors (pairs; JSON `h2t_data_descriptors`).
    #[serde(rename = "h2t_data_descriptors")]
    pub h2t_data_descs: u64,
    /// H2T data bytes.
    pub h2t_bytes: u64,
    /// Copy timeouts.
    pub timeouts: u64,
}

/// A runtime-owned queue initialised by DMA_QUEUE_INIT(_BATCH).
#[derive(Clone, Copy, Debug)]
struct UserQueue {
    tx_len: u32,
    rx_len: u32,
    /// The driver's completion shadow index (DMA_ACK_COMPLETED).
    tx_acked: u32,
    rx_acked: u32,
    /// The pid that initialised it (`queue->owner`, §1.6).
    owner: u64,
}

/// Descriptors of the ring every owned queue is pointed at when its
/// process exits (`NDMA_QUEUE_DUMMY_RING_DESC_COUNT`, docs/references/driver.md §1.6).
pub const DUMMY_RING_DESCS: u32 = 64;

/// One chunk [`KernelDriver::process_exit`] freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FreedChunk {
    /// Its handle, if it had one.
    pub handle: Option<u64>,
    /// Physical address (host chunks with the host bit).
    pub pa: u64,
    /// Bytes.
    pub size_bytes: u64,
    /// Host memory.
    pub host: bool,
}

/// What [`KernelDriver::process_exit`] released.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProcessExitReport {
    /// Owned queues re-initialised to the dummy ring, as (engine, queue).
    pub queues_reset: Vec<(u32, u32)>,
    /// Owned queues left alone: H2T queues and NX-reserved queues.
    pub queues_kept: Vec<(u32, u32)>,
    /// Address of the dummy ring (a device-lifespan host chunk), if any
    /// queue was reset.
    pub dummy_ring: Option<u64>,
    /// The process's CUR_PROCESS chunks, freed.
    pub chunks_freed: Vec<FreedChunk>,
}

/// `ndmar_is_h2t_q_v3`: queues 0 and 1 of the H2T engines (§4.1).
#[must_use]
pub fn is_h2t_queue(eng: u32, qid: u32) -> bool {
    H2T_ENGINES.iter().any(|&e| u32::from(e) == eng) && qid < 2
}

/// `ndmar_is_nx_ring_v3`: queue 14 of engines with `eng % 16` in
/// {0,1,2,3,4,7,8} is reserved for NX cores (§4.1).
#[must_use]
pub fn is_nx_queue(eng: u32, qid: u32) -> bool {
    qid == QUEUES - 2 && matches!(eng % 16, 0..=4 | 7 | 8)
}

/// The kernel driver of one device.
#[derive(Debug)]
pub struct KernelDriver {
    dev: Device,
    mem: MemManager,
    regs: H2tRegs,
    rings: BTreeMap<u32, H2tRing>,
    engines_ready: BTreeSet<u16>,
    user_queues: BTreeMap<(u32, u32), UserQueue>,
    /// The 64-entry dummy ring of process exit, allocated on first use.
    dummy_ring: Option<u64>,
    cfg: KdriverConfig,
    events: Vec<DriverEvent>,
    stats: DriverStats,
    batches_started: u64,
    cycles_per_us: f64,
    sem: SemLayout,
}

/// The semaphore/event block of every NC and its register arrays (first
/// element, stride), looked up once from the maps: SEMAPHORE_* and EVENT_*
/// are the cheapest, most frequent ioctls.
#[derive(Clone, Debug, Default)]
struct SemLayout {
    blocks: Vec<Option<u64>>,
    read: Option<(u64, u64)>,
    set: Option<(u64, u64)>,
    inc: Option<(u64, u64)>,
    dec: Option<(u64, u64)>,
    event: Option<(u64, u64)>,
}

impl SemLayout {
    fn new(dev: &Device) -> Self {
        let map = dev.map();
        let blocks = (0..mem::NCS)
            .map(|nc| {
                map.by_name(&format!("tpb{nc}.evt_sem"))
                    .map(|id| map.region(id).base)
            })
            .collect();
        let arr = |reg: &str| {
            let m = dev.catalog().block("evt_sem")?;
            let e0 = m.find(reg, Some(0))?;
            let e1 = m.find(reg, Some(1))?;
            Some((e0, e1.checked_sub(e0)?))
        };
        Self {
            blocks,
            read: arr("SEM_READ"),
            set: arr("SEM_SET"),
            inc: arr("SEM_INC"),
            dec: arr("SEM_DEC"),
            event: arr("EVENT"),
        }
    }
}

/// Engines per device (`eng_id` < 132, §1.6).
pub const ENGINES: u32 = 132;
/// Queues per engine.
pub const QUEUES: u32 = 16;

impl KernelDriver {
    /// A copy of the driver (pools, handles, H2T rings, counters) and of
    /// its device ([`Device::try_clone`]) that runs on independently (the
    /// debugger's checkpoints, docs/user-guide.md §12 "Going back"); `None`
    /// when the device cannot be copied.
    pub fn try_clone(&mut self) -> Option<KernelDriver> {
        Some(KernelDriver {
            dev: self.dev.try_clone()?,
            mem: self.mem.clone(),
            regs: self.regs,
            rings: self.rings.clone(),
            engines_ready: self.engines_ready.clone(),
            user_queues: self.user_queues.clone(),
            dummy_ring: self.dummy_ring,
            cfg: self.cfg.clone(),
            events: self.events.clone(),
            stats: self.stats.clone(),
            batches_started: self.batches_started,
            cycles_per_us: self.cycles_per_us,
            sem: self.sem.clone(),
        })
    }

    /// The driver bound to `dev`, with pools over the map's HBM channels.
    ///
    /// # Errors
    ///
    /// When the map or the CSR maps lack what the driver needs.
    pub fn new(dev: Device, cfg: KdriverConfig) -> Result<Self, String> {
        let map = dev.map();
        let mut hbm = Vec::new();
        for i in 0..mem::CHANNELS {
            let id = map
                .by_name(&format!("hbm{i}"))
                .ok_or_else(|| format!("the SoC map has no region hbm{i}"))?;
            let r = map.region(id);
            hbm.push((r.base, r.size_bytes));
        }
        let catalog = dev.catalog();
        let q = soc::firmware::queue_regs(catalog)?;
        let find = |block: &str, reg: &str| {
            catalog
                .block(block)
                .and_then(|m| m.find(reg, None))
                .ok_or_else(|| format!("csr-maps/{block}.json has no register {reg}"))
        };
        let regs = H2tRegs {
            q,
            m2s_rlimit_mask: find("udma_m2s_q", "RLIMIT_MASK")?,
            m2s_sw_ctrl: find("udma_m2s_q", "Q_SW_CTRL")?,
            s2m_sw_ctrl: find("udma_s2m_q", "Q_SW_CTRL")?,
        };
        let cycles_per_us = dev.timing().clock_ghz * 1000.0;
        let sem = SemLayout::new(&dev);
        Ok(Self {
            sem,
            dev,
            mem: MemManager::new(&hbm),
            regs,
            rings: BTreeMap::new(),
            engines_ready: BTreeSet::new(),
            user_queues: BTreeMap::new(),
            dummy_ring: None,
            cfg,
            events: Vec::new(),
            stats: DriverStats::default(),
            batches_started: 0,
            cycles_per_us,
        })
    }

    /// The driver over a default Trn2 device.
    ///
    /// # Errors
    ///
    /// As [`KernelDriver::new`].
    pub fn trn2(cfg: KdriverConfig) -> Result<Self, String> {
        let dev = Device::trn2().map_err(|e| e.to_string())?;
        Self::new(dev, cfg)
    }

    /// The device.
    #[must_use]
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The device, mutable (trace directives that act on hardware).
    pub fn device_mut(&mut self) -> &mut Device {
        &mut self.dev
    }

    /// Gives the device back.
    #[must_use]
    pub fn into_device(self) -> Device {
        self.dev
    }

    /// Memory pools, chunks and accounting.
    #[must_use]
    pub fn memory(&self) -> &MemManager {
        &self.mem
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &KdriverConfig {
        &self.cfg
    }

    /// The configuration, mutable (trace `driver` directives).
    pub fn config_mut(&mut self) -> &mut KdriverConfig {
        &mut self.cfg
    }

    /// Events so far.
    #[must_use]
    pub fn events(&self) -> &[DriverEvent] {
        &self.events
    }

    /// Takes the events recorded so far.
    pub fn take_events(&mut self) -> Vec<DriverEvent> {
        std::mem::take(&mut self.events)
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &DriverStats {
        &self.stats
    }

    /// The H2T ring of `nc`, once the driver has created it (§4.2).
    #[must_use]
    pub fn h2t_ring(&self, nc: u32) -> Option<&H2tRing> {
        self.rings.get(&nc)
    }

    /// The DMA_ACK_COMPLETED shadow indices (tx, rx) of a queue the
    /// process initialised (§1.6; software only, no register holds them).
    #[must_use]
    pub fn user_queue_acked(&self, eng: u32, qid: u32) -> Option<(u32, u32)> {
        self.user_queues
            .get(&(eng, qid))
            .map(|q| (q.tx_acked, q.rx_acked))
    }

    /// The calling process exits (`ndmar_handle_process_exit`, then the
    /// process's memory, docs/references/driver.md §1.6, §5.2): every queue it
    /// initialised that is neither an H2T queue nor NX-reserved (§4.1) is
    /// re-initialised to a [`DUMMY_RING_DESCS`]-entry dummy ring on both
    /// rings — simulator decision: one device-lifespan host chunk — to stop
    /// its traffic; then its CUR_PROCESS chunks are freed. Failures to
    /// reset a queue are logged and skipped, as the driver does.
    pub fn process_exit(&mut self) -> ProcessExitReport {
        let prev = self.dev.set_bus_master(soc::Master::Driver);
        let report = self.process_exit_inner();
        self.dev.set_bus_master(prev);
        report
    }

    fn process_exit_inner(&mut self) -> ProcessExitReport {
        let pid = self.cfg.pid;
        let mut report = ProcessExitReport::default();
        let owned: Vec<(u32, u32)> = self
            .user_queues
            .iter()
            .filter(|(_, q)| q.owner == pid)
            .map(|(&k, _)| k)
            .collect();
        for (eng, qid) in owned {
            self.user_queues.remove(&(eng, qid));
            if is_h2t_queue(eng, qid) || is_nx_queue(eng, qid) {
                report.queues_kept.push((eng, qid));
                continue;
            }
            match self.reset_to_dummy(eng, qid) {
                Ok(ring) => {
                    report.dummy_ring = Some(ring);
                    report.queues_reset.push((eng, qid));
                }
                Err(e) => self.log(format!("dma{eng}:q{qid} failed to reset ({})", e.name())),
            }
        }
        for c in self.mem.release_lifespan(Lifespan::CurProcess) {
            report.chunks_freed.push(FreedChunk {
                handle: c.handle,
                pa: c.pa,
                size_bytes: c.size_bytes,
                host: c.host,
            });
        }
        self.drain_mem_log();
        self.log(format!(
            "process {pid} exit: {} queues reset, {} kept, {} chunks freed",
            report.queues_reset.len(),
            report.queues_kept.len(),
            report.chunks_freed.len()
        ));
        report
    }

    /// Points both rings of a queue at the dummy ring (allocated once).
    fn reset_to_dummy(&mut self, eng: u32, qid: u32) -> Result<u64, Errno> {
        let ring = match self.dummy_ring {
            Some(r) => r,
            None => {
                let req = mem::AllocRequest {
                    size: u64::from(DUMMY_RING_DESCS) * 16,
                    align: 0,
                    host: true,
                    channel: 0,
                    nc_id: 0,
                    category: ioctl_abi::enums::MemAllocCategory::NcdevHost.raw(),
                };
                let r = self.mem.alloc_chunk(req, Lifespan::Device)?;
                self.dummy_ring = Some(r);
                r
            }
        };
        let id = u16::try_from(eng).map_err(|_| Errno::EINVAL)?;
        let e = soc::firmware::engine_layout(self.dev.map(), id).map_err(|_| Errno::EINVAL)?;
        let q = u8::try_from(qid).map_err(|_| Errno::EINVAL)?;
        h2t::init_queue(
            &mut self.dev,
            &self.regs,
            &e,
            q,
            ring,
            ring,
            DUMMY_RING_DESCS,
        )?;
        Ok(ring)
    }

    fn event(&mut self, kind: DriverEventKind) {
        self.events.push(DriverEvent {
            cycle: self.dev.now().0,
            kind,
        });
    }

    fn log(&mut self, line: impl Into<String>) {
        self.event(DriverEventKind::Log { line: line.into() });
    }

    /// Moves the pool manager's log lines into the event stream.
    fn drain_mem_log(&mut self) {
        for line in std::mem::take(&mut self.mem.log) {
            self.log(line);
        }
    }

    /// The H2T ring of `nc`, created on first use (§4.1–4.2). Its engine is
    /// shared by NCs 2k and 2k+1; the driver initialises it once, from the
    /// even NC's bring-up. Here that happens on the pair's first copy,
    /// whichever NC makes it: the same register writes, once per engine.
    fn ring(&mut self, nc: u32) -> Result<&mut H2tRing, Errno> {
        if nc as usize >= mem::NCS {
            return Err(Errno::EINVAL);
        }
        if !self.rings.contains_key(&nc) {
            let id = H2T_ENGINES[(nc / 2) as usize];
            let e = soc::firmware::engine_layout(self.dev.map(), id).map_err(|_| Errno::ENODEV)?;
            if self.engines_ready.insert(id) {
                h2t::init_engine(&mut self.dev, &self.regs, &e)?;
            }
            let r = H2tRing::create(&mut self.dev, &mut self.mem, &self.regs, e, nc)?;
            self.rings.insert(nc, r);
        }
        self.rings.get_mut(&nc).ok_or(Errno::EINVAL)
    }

    /// Starts one batch on `nc`'s ring, context `c`.
    fn start(&mut self, nc: u32, c: Ctx, pairs: &[Pair], barrier: Barrier) -> Result<(), Errno> {
        let seq = self.batches_started;
        self.batches_started += 1;
        let drop = self.cfg.drop_batches.contains(&seq);
        let regs = self.regs;
        self.ring(nc)?;
        let ring = self.rings.get_mut(&nc).ok_or(Errno::EINVAL)?;
        // A dropped batch is built but never rung: its wait times out.
        ring.start_batch(&mut self.dev, &regs, c, pairs, barrier, !drop)?;
        self.stats.h2t_batches += 1;
        self.stats.h2t_data_descs += pairs.len() as u64;
        self.stats.h2t_bytes += pairs.iter().map(|p| u64::from(p.len)).sum::<u64>();
        Ok(())
    }

    /// Waits for context `c` of `nc`'s ring and records the batch.
    fn wait(&mut self, nc: u32, c: Ctx, is_async: bool, bytes: u64) -> Result<(), Errno> {
        let (cpu, mult) = (self.cycles_per_us, self.cfg.timeout_multiplier);
        let Some(ring) = self.rings.get_mut(&nc) else {
            return Err(Errno::EINVAL);
        };
        let (engine, queue) = (ring.engine.id, ring.queue);
        let descs = ring.pending_descs(c);
        let start = self.dev.now().0;
        let r = ring.wait(&mut self.dev, c, is_async, cpu, mult);
        let completed = r.is_ok();
        if !completed {
            self.stats.timeouts += 1;
        }
        self.event(DriverEventKind::H2tBatch {
            nc,
            engine,
            queue,
            ctx: c,
            descs,
            bytes,
            start_cycle: start,
            end_cycle: self.dev.now().0,
            completed,
        });
        if !completed {
            self.log("DMA completion timeout");
        }
        r.map(|_| ())
    }

    /// A synchronous copy of `size` bytes (`ndma_memcpy_offset_move`,
    /// §4.3): batches of at most 2031 pairs on the SYNC context, each
    /// waited for before the next is built.
    ///
    /// # Errors
    ///
    /// `ETIMEDOUT`, `EBUSY`, `EIO` from the H2T path.
    pub fn memcpy_sync(
        &mut self,
        nc: u32,
        src: u64,
        dst: u64,
        size: u64,
        smove: bool,
        dmove: bool,
    ) -> Result<(), Errno> {
        let pairs = h2t::split_pairs(src, dst, size, smove, dmove);
        for batch in pairs.chunks(SYNC_THRESHOLD_PAIRS) {
            self.start(nc, Ctx::Sync, batch, Barrier::WriteBarrier)?;
            let bytes = batch.iter().map(|p| u64::from(p.len)).sum();
            self.wait(nc, Ctx::Sync, false, bytes)?;
        }
        Ok(())
    }

    /// Runs the device until nothing is pending or `limit` cycles pass
    /// (the host letting time go by; not an ioctl).
    pub fn run_device(&mut self, limit: Option<sim_core::Cycle>) -> soc::device::RunStop {
        self.dev.run(limit)
    }
}

impl ioctl_bus::Driver for KernelDriver {
    fn try_clone_driver(&mut self) -> Option<Self> {
        self.try_clone()
    }

    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn ioctl_bus::UserMemory,
    ) -> Result<i64, Errno> {
        let name = ioctl_abi::lookup(request).map_or_else(
            |_| soc_map::hex_string(u64::from(request)),
            |d| d.name.to_string(),
        );
        *self.stats.ioctls.entry(name.clone()).or_default() += 1;
        let prev = self.dev.set_bus_master(soc::Master::Driver);
        let r = self.dispatch(request, arg, user);
        self.dev.set_bus_master(prev);
        self.drain_mem_log();
        let result = match &r {
            Ok(v) => v.to_string(),
            Err(e) => {
                *self.stats.errors.entry(e.name().to_string()).or_default() += 1;
                e.name().to_string()
            }
        };
        self.event(DriverEventKind::Ioctl { name, result });
        r
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.mmap_check(offset, buf.len() as u64)?;
        self.dev.read_bytes(offset, buf).map_err(|_| Errno::EFAULT)
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.mmap_check(offset, bytes.len() as u64)?;
        self.dev
            .write_bytes(offset, bytes)
            .map_err(|_| Errno::EFAULT)
    }
}

impl KernelDriver {
    /// An mmapped access must lie inside one chunk (docs/references/driver.md §1.7: the
    /// mmap offset is the chunk's pa; host chunks keep the host bit).
    fn mmap_check(&self, offset: u64, len: u64) -> Result<(), Errno> {
        let c = self.mem.chunk_at(offset).ok_or(Errno::EFAULT)?;
        if offset + len > c.pa + c.size_bytes {
            return Err(Errno::EFAULT);
        }
        Ok(())
    }
}
