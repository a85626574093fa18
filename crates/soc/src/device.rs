//! One Trainium2 device: the address map, its memories, its register blocks
//! and its DMA engines, reached by SoC address as a bus master would
//! (docs/references/design.md §2–3).
//!
//! Register blocks are instantiated on first access; an untouched block reads
//! as its reset values. Writes are routed to the block's owner: the 132 UDMA
//! units (`udma::Engine`) own their M2S/S2M/queue/GEN/SDMA-app blocks and
//! react to doorbells, resets and state changes; the EVT_SEM block applies
//! semaphore set/increment/decrement here; other side effects are recorded as
//! [`DeviceEvent`]s. Simulated time advances only in [`Device::run`].

use std::collections::BTreeMap;

use csr::{Catalog, CsrAccessError, CsrMap, Delta, RegFile};
use dma_abi::inst::InstWord;
use q7::{InstTag, Q7Core};
use serde::Serialize;
use sim_core::{AccessError, Bus, Cycle, HbmBandwidth, TimingConfig, WakeTree};
use soc_map::{Hex, Hex32, RegionId, RegionKind, SocMap};
use udma::{Engine, EngineEvent, QueueStats, UnitBlock, UnitMaps};

use crate::fault::BusFault;
use crate::memory::DeviceMemory;
use crate::record::{Access, Master, Recorder, RegLog, Waves, access_line};

mod cores;
mod digest;
mod events;
pub use events::EventSink;
use events::{EVENT_FLUSH_STEPS, SinkSlot};
mod fabric;
mod inflight;
mod race_hooks;
mod snapshot;
mod stall;
mod targets;
mod waitgraph;

use fabric::{DmaBus, RegCache, engine_blocks};
pub use inflight::NextPick;
pub use stall::{StallReport, StalledWait};
use targets::{Decoded, TargetCache};
pub use waitgraph::{HostWait, WaitGraph, WaitNode};

/// A side effect a register access had, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DeviceEvent {
    /// A write-to-increment doorbell on a block without an engine model.
    Doorbell {
        /// Register block region.
        region: String,
        /// Register name.
        register: String,
        /// The increment.
        increment: u32,
        /// The cycle it happened at (the `events` view shows it; the run
        /// output lists these events without one, docs/user-guide.md §8).
        #[serde(skip)]
        cycle: u64,
    },
    /// WO command bits written as 1 on a block without an engine model.
    Pulse {
        /// Register block region.
        region: String,
        /// Register name.
        register: String,
        /// The bits pulsed.
        bits: Hex32,
        /// The cycle it happened at (the `events` view shows it; the run
        /// output lists these events without one, docs/user-guide.md §8).
        #[serde(skip)]
        cycle: u64,
    },
    /// A semaphore changed through its SET/INC/DEC window.
    Semaphore {
        /// The EVT_SEM region, e.g. `tpb0.evt_sem`.
        region: String,
        /// Semaphore index.
        index: u32,
        /// Value before.
        old: u32,
        /// Value after.
        new: u32,
        /// The cycle it happened at (the `events` view shows it; the run
        /// output lists these events without one, docs/user-guide.md §8).
        #[serde(skip)]
        cycle: u64,
    },
    /// A write that could not change what it tried to (read-only register,
    /// or read-only/reserved bits).
    IgnoredWrite {
        /// Register block region.
        region: String,
        /// Register name.
        register: String,
        /// Value written.
        written: Hex32,
        /// Bits that did not take.
        ignored: Hex32,
        /// The whole register is read-only.
        read_only: bool,
        /// The cycle it happened at (the `events` view shows it; the run
        /// output lists these events without one, docs/user-guide.md §8).
        #[serde(skip)]
        cycle: u64,
    },
    /// Something a core's Q7 firmware did.
    Firmware(q7::FwEvent),
    /// Something a DMA engine did (with `trace` on): the engine event's
    /// own `event` tag (`doorbell`, `packet_start`, …) names it, with no
    /// second `event` key.
    #[serde(untagged)]
    Engine(EngineEvent),
}

/// Where a 32-bit register access lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegTarget {
    /// The register block's region.
    pub region: RegionId,
    /// Byte offset inside the block.
    pub offset: u64,
}

/// The result of a register write, for callers that report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegWrite {
    /// Region name.
    pub region: String,
    /// Register name (`SEM_INC[3]`).
    pub register: String,
    /// Value before.
    pub old: u32,
    /// Value after.
    pub new: u32,
    /// Bits the write could not change.
    pub ignored: u32,
    /// The register is read-only: nothing changed.
    pub read_only: bool,
}

/// A CSR snapshot: every register that differs from reset, grouped by block
/// in address order (docs/references/design.md §1: snapshot-test CSR state).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CsrSnapshot {
    /// Blocks with at least one register away from reset, by address.
    pub blocks: Vec<BlockSnapshot>,
}

/// The changed registers of one block instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BlockSnapshot {
    /// Region name, e.g. `eng0.m2s.q0`.
    pub region: String,
    /// CSR map name.
    pub block: String,
    /// Region base address.
    pub base: Hex,
    /// Register name → value, for registers that differ from reset.
    pub registers: BTreeMap<String, Hex32>,
}

impl CsrSnapshot {
    /// YAML text, stable and ordered (for `--csr-snapshot FILE.yaml`).
    pub fn to_yaml(&self) -> String {
        let mut out = String::from("# neuron-sim CSR snapshot: registers that differ from reset\n");
        if self.blocks.is_empty() {
            out.push_str("blocks: []\n");
            return out;
        }
        out.push_str("blocks:\n");
        for b in &self.blocks {
            out.push_str(&format!(
                "  - region: {}\n    block: {}\n    base: \"{}\"\n    registers:\n",
                b.region, b.block, b.base
            ));
            for (name, value) in &b.registers {
                // The serialized form of every number, as in the JSON file.
                let value = Hex(u64::from(value.0));
                out.push_str(&format!("      \"{name}\": \"{value}\"\n"));
            }
        }
        out
    }
}

/// Which engine block a region is, and whether it is a broadcast mirror.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EngineBlockRef {
    engine: u16,
    block: UnitBlock,
    broadcast: bool,
}

/// Everything a DMA master can touch except the engines themselves.
#[derive(Debug)]
struct Fabric {
    map: SocMap,
    catalog: &'static Catalog,
    memory: DeviceMemory,
    regs: BTreeMap<RegionId, RegFile<'static>>,
    events: Vec<DeviceEvent>,
    /// The engine block each region is, indexed by region id.
    engine_blocks: Vec<Option<EngineBlockRef>>,
    /// Register targets already decoded (the firmware polls the same few
    /// completion heads; a full decode and name lookup each time cost most
    /// of an instruction trace's run).
    reg_cache: RegCache,
    /// Leaf memories already decoded (no register in them).
    mem_ranges: fabric::MemRanges,
    /// EVT_SEM region → core (TPB index), for waking the firmware.
    sem_cores: BTreeMap<RegionId, u8>,
    /// Cores whose semaphores changed since the firmware last looked
    /// (bit per TPB).
    sem_touched: u32,
    /// Who drives the register accesses that follow (set by the caller).
    master: Master,
    /// Register-access log and waveforms; `None` (the default) records
    /// nothing.
    rec: Option<Box<Recorder>>,
    /// The HBM stacks' shared bandwidth (`hbm_stack_gbps`).
    hbm: HbmBandwidth,
    /// Records register-side events (doorbells, pulses, semaphores,
    /// ignored writes): [`Device::set_trace`].
    trace: bool,
    /// The device's cycle, which the register-side events are stamped
    /// with.
    now: u64,
    /// Each engine step's events join [`Fabric::events`] after it, so they
    /// stay in the order the device produced them:
    /// [`Device::set_events_in_step_order`].
    step_order: bool,
    /// SEM_READ's offset in the EVT_SEM block, by semaphore index, found
    /// on first use (every EVT_SEM region shares one map).
    sem_read_offsets: Vec<Option<u32>>,
    /// The race detector (docs/races.md); `None` (the default) checks
    /// nothing.
    race: race_hooks::RaceSlot,
}

/// Why a device could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

/// The engines' register offsets for a catalog, built once per catalog
/// (catalogs are `'static`; a sweep builds many devices over the same one).
fn unit_maps_for(catalog: &'static Catalog) -> Result<&'static UnitMaps, DeviceError> {
    type Cache = std::sync::Mutex<Vec<(usize, &'static UnitMaps)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let key = std::ptr::from_ref(catalog) as usize;
    let cache = CACHE.get_or_init(Cache::default);
    if let Ok(c) = cache.lock()
        && let Some(&(_, m)) = c.iter().find(|(k, _)| *k == key)
    {
        return Ok(m);
    }
    let m: &'static UnitMaps = Box::leak(Box::new(
        UnitMaps::from_catalog(catalog).map_err(|e| DeviceError(e.to_string()))?,
    ));
    if let Ok(mut c) = cache.lock() {
        c.push((key, m));
    }
    Ok(m)
}

/// How a [`Device::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStop {
    /// Nothing is pending.
    Idle,
    /// The cycle limit was reached with work pending.
    Limit,
    /// No agent can make progress: no DMA engine has anything to do and
    /// every firmware core only polls for a change nobody will make
    /// ([`Device::stall_report`] says who waits on what).
    Stalled,
}

/// What [`Device::run_while`] does when it finds the device stalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnStall {
    /// Stop at once, the clock where the stall began.
    Stop,
    /// Let the time up to the limit pass (the polls it would run change
    /// nothing), then stop; without a limit, stop at once. While the
    /// register-access log records, the polls run one by one instead, so
    /// that the log shows every one.
    SkipToLimit,
}

/// One simulated device.
#[derive(Debug)]
pub struct Device {
    fabric: Fabric,
    unit_maps: &'static UnitMaps,
    /// Shared, so that a firmware run can hold it while the firmware
    /// borrows the device (a clone per poll cost a map copy).
    timing: std::sync::Arc<TimingConfig>,
    /// Engines by id (created on first touch).
    engines: Vec<Option<Engine>>,
    /// Builds them (from the unit maps and timing, once per kind).
    engine_factory: Option<std::sync::Arc<udma::EngineFactory>>,
    /// Firmware runs so far (each a scheduler event, for speed reports).
    fw_runs: u64,
    /// Each engine's next event, earliest first (the run loop's order).
    wake: WakeTree,
    now: Cycle,
    trace: bool,
    /// DMA writes into engine register blocks: (address, value, writing engine).
    posted: Vec<(u64, u32, u16)>,
    /// Q7 firmware per core, created on the first instruction.
    cores: Vec<Option<Q7Core>>,
    /// When each core's firmware next runs on its own.
    fw_next: Vec<Option<Cycle>>,
    /// Counts every change an agent could observe (an engine step, a
    /// write): a firmware core that only polls and has run since the last
    /// change would find nothing new (stall detection, docs/firmware.md
    /// §Stalls).
    activity: u64,
    /// `activity` at the end of each core's last run.
    fw_seen: Vec<u64>,
    /// Cores whose firmware only polls and has seen every change so far:
    /// the cycle of the next poll it would run. A parked core runs again
    /// only after the next change (docs/firmware.md §Stalls).
    parked: Vec<Option<Cycle>>,
    /// The cores parked (bit per TPB): `parked[i]` is `Some` exactly for
    /// the bits set.
    parked_mask: u32,
    /// Parked cores whose polls read memory (bit per TPB), so any change
    /// may end the wait ([`Q7Core::polls_memory`]).
    parked_on_memory: u32,
    /// Per parked core waiting only on words in flight: groups of
    /// completed-descriptor counts of the engine queues it waits on; when
    /// every count of one group is reached a poll could change its state
    /// ([`q7::Q7Core::wake_needs`]), and completions short of that do not
    /// wake it. `None`: any completion of its engines wakes it.
    park_needs: Vec<Option<stall::ParkNeeds>>,
    /// Per engine id: the cores (bit per TPB) whose firmware owns it and
    /// polls its completion heads.
    engine_cores: Vec<u32>,
    /// A change woke a parked core inside the engine loop.
    unparked: bool,
    /// Register targets of the device's own register path, by address.
    targets: TargetCache,
    /// Per engine id: the part of its [`Engine::head_epoch`] that
    /// tail-pointer doorbell writes (TDRTP_INC, RDRTP_INC) made, which
    /// change no completion head ([`Device::engine_head_epoch`]).
    doorbell_epochs: Vec<u64>,
    /// The most cycles a bare trace `run` advances before it stops as still
    /// busy ([`crate::exec::BARE_RUN_LIMIT_CYCLES`] unless set).
    bare_run_limit_cycles: u64,
    /// Counts the times a semaphore change was taken note of (a
    /// `Fabric::sem_touched` bit cleared): with no bit set, an equal count
    /// means no semaphore changed in between ([`Device::sem_version`]).
    sem_epoch: u64,
    /// The run order key of the event being processed (or the last one):
    /// (cycle, 0 firmware / 1 engine / 2 past every event of the cycle,
    /// core or engine id). Decides which polls a change can still reach.
    cur_key: (u64, u8, u16),
    /// Where recorded events go while the device runs, if anywhere.
    sink: SinkSlot,
    /// The last partitioned memory (SBUF or PSUM) the firmware asked a
    /// partition of: the firmware asks once per descriptor, always of the
    /// same few regions ([`Device::partition_of`]).
    last_partitioned: std::cell::Cell<Option<PartitionedRegion>>,
    /// Schedule perturbation seed ([`Device::set_schedule_seed`]).
    schedule_seed: Option<u64>,
}

/// Builds engine `id` into its empty `slot` (its first access), with the
/// device's factory (made on the first engine). Out of line: the engine is
/// large, and a caller that had its construction inlined would set up a
/// frame for it on every access.
#[inline(never)]
fn build_engine<'e>(
    slot: &'e mut Option<Engine>,
    factory: &mut Option<std::sync::Arc<udma::EngineFactory>>,
    id: u16,
    maps: &'static UnitMaps,
    timing: &TimingConfig,
    trace: bool,
    seed: Option<u64>,
) -> &'e mut Engine {
    let factory =
        factory.get_or_insert_with(|| std::sync::Arc::new(udma::EngineFactory::new(maps, timing)));
    let mut e = factory.engine(id);
    e.set_trace(trace);
    if seed.is_some() {
        e.set_schedule_seed(seed);
    }
    slot.insert(e)
}

/// A partitioned region's `(base, size_bytes, stride_bytes)`
/// ([`Device::partition_span`]).
pub type PartitionSpanBytes = (u64, u64, u64);

/// A leaf SBUF/PSUM region's extent and partition stride.
#[derive(Clone, Copy, Debug)]
struct PartitionedRegion {
    base: u64,
    size_bytes: u64,
    stride_bytes: u64,
}

impl Device {
    /// The Trn2 device with the built-in maps and default timing.
    pub fn trn2() -> Result<Self, DeviceError> {
        let map = soc_map::trn2().map_err(|e| DeviceError(e.to_string()))?;
        let catalog = csr::catalog().map_err(|e| DeviceError(e.to_string()))?;
        Self::new(map, catalog)
    }

    /// A device from a map and a CSR catalog; every `block` the map names
    /// must exist in the catalog.
    pub fn new(map: SocMap, catalog: &'static Catalog) -> Result<Self, DeviceError> {
        let timing = TimingConfig::default_config().map_err(|e| DeviceError(e.to_string()))?;
        Self::with_timing(map, catalog, timing)
    }

    /// A device with an explicit timing configuration.
    pub fn with_timing(
        map: SocMap,
        catalog: &'static Catalog,
        timing: TimingConfig,
    ) -> Result<Self, DeviceError> {
        // Every block a region names must be in the catalog. The instances
        // of one map node share their block name (one allocation): each
        // name is looked up once, by the address of that allocation.
        let mut known: Vec<*const u8> = Vec::new();
        let mut last = std::ptr::null();
        for r in &map.regions {
            let Some(b) = &r.block else { continue };
            let key = b.as_ptr();
            if key == last || known.contains(&key) {
                last = key;
                continue;
            }
            let Some(block) = catalog.block(b) else {
                return Err(DeviceError(format!(
                    "soc map: region `{}` names CSR block `{b}`, which is not in csr-maps/",
                    r.name
                )));
            };
            // The instances of one node share its size: the first is
            // checked. A block larger than its region would put registers
            // at another region's addresses.
            if block.size() > r.size_bytes {
                return Err(DeviceError(format!(
                    "soc map: region `{}` ({:#x} bytes) names CSR block `{b}` of {:#x} bytes: its registers past {:#x} would be another region's",
                    r.name,
                    r.size_bytes,
                    block.size(),
                    r.size_bytes
                )));
            }
            known.push(key);
            last = key;
        }
        let unit_maps = unit_maps_for(catalog)?;
        let engine_blocks = engine_blocks(&map);
        Ok(Self::assemble(
            map,
            catalog,
            unit_maps,
            std::sync::Arc::new(timing),
            engine_blocks,
        ))
    }

    /// A second device of the same make: this one's address map, CSR maps
    /// and timing, at power-on (no memory written, every register at
    /// reset, no engine or firmware core started, nothing recorded, events
    /// recorded as by default). The maps are shared, not built or checked
    /// again (they were for this device).
    #[must_use]
    pub fn power_on_copy(&self) -> Device {
        Self::assemble(
            self.fabric.map.clone(),
            self.fabric.catalog,
            self.unit_maps,
            std::sync::Arc::clone(&self.timing),
            self.fabric.engine_blocks.clone(),
        )
    }

    /// A device at power-on from checked parts.
    fn assemble(
        map: SocMap,
        catalog: &'static Catalog,
        unit_maps: &'static UnitMaps,
        timing: std::sync::Arc<TimingConfig>,
        engine_blocks: Vec<Option<EngineBlockRef>>,
    ) -> Device {
        // The HBM stacks: the top-level memory regions `hbm0`, `hbm1`, ….
        let hbm_ranges = map
            .regions
            .iter()
            .filter(|r| r.parent.is_none() && r.stem() == "hbm" && r.kind == RegionKind::Memory)
            .map(|r| (r.base, r.end()))
            .collect();
        let hbm = HbmBandwidth::new(hbm_ranges, &timing);
        let sem_cores = (0..crate::firmware::CORES)
            .filter_map(|t| map.by_name(&format!("tpb{t}.evt_sem")).map(|id| (id, t)))
            .collect();
        Device {
            fabric: Fabric {
                map,
                catalog,
                memory: DeviceMemory::default(),
                regs: BTreeMap::new(),
                events: Vec::new(),
                engine_blocks,
                reg_cache: RegCache::default(),
                mem_ranges: fabric::MemRanges::default(),
                sem_cores,
                sem_touched: 0,
                master: Master::default(),
                rec: None,
                hbm,
                trace: true,
                now: 0,
                step_order: false,
                sem_read_offsets: Vec::new(),
                race: None,
            },
            unit_maps,
            timing,
            engines: Vec::new(),
            engine_factory: None,
            wake: WakeTree::default(),
            now: Cycle(0),
            trace: true,
            last_partitioned: std::cell::Cell::new(None),
            posted: Vec::new(),
            cores: Vec::new(),
            fw_next: Vec::new(),
            fw_runs: 0,
            activity: 0,
            fw_seen: Vec::new(),
            parked: Vec::new(),
            parked_mask: 0,
            parked_on_memory: 0,
            park_needs: Vec::new(),
            engine_cores: Vec::new(),
            unparked: false,
            targets: TargetCache::default(),
            doorbell_epochs: Vec::new(),
            bare_run_limit_cycles: crate::exec::BARE_RUN_LIMIT_CYCLES,
            sem_epoch: 0,
            cur_key: (0, 2, 0),
            sink: SinkSlot(None),
            schedule_seed: None,
        }
    }

    /// Timing-only mode (docs/references/design.md §4, issue 6): DMA copies longer than
    /// `memory::TIMING_ONLY_MIN_SKIP_BYTES` move no payload, everything
    /// else (faults, cycles, registers, small control writes) is as in data
    /// mode. Memory contents are then not meaningful.
    pub fn set_timing_only(&mut self, on: bool) {
        self.fabric.memory.set_skip_payload(on);
    }

    /// Whether timing-only mode is on.
    pub fn timing_only(&self) -> bool {
        self.fabric.memory.skip_payload()
    }

    /// The most cycles a bare trace `run` advances before it stops as still
    /// busy (docs/trace-format.md §4.4).
    pub fn bare_run_limit_cycles(&self) -> u64 {
        self.bare_run_limit_cycles
    }

    /// Sets [`Device::bare_run_limit_cycles`] (at least 1).
    pub fn set_bare_run_limit_cycles(&mut self, cycles: u64) {
        self.bare_run_limit_cycles = cycles.max(1);
    }

    /// The first byte of `[addr, addr + len)` a timing-only DMA copy should
    /// have written and did not (a check that reads it is skipped).
    pub fn stale_byte_in(&self, addr: u64, len: u64) -> Option<u64> {
        self.fabric
            .memory
            .stale_byte_in(&self.fabric.map, addr, len)
    }

    /// Timing-only mode: notes that `reader` read `[addr, addr + len)` as
    /// control data (an index vector, a mailbox, a descriptor) now; if a
    /// byte of it is stale, the run may differ from the payload run from
    /// here ([`Device::stale_control`]).
    pub fn note_control_read(&mut self, addr: u64, len: u64, reader: impl FnOnce() -> String) {
        let now = self.now().0;
        let map = &self.fabric.map;
        self.fabric
            .memory
            .note_control_read(map, addr, len, now, reader);
    }

    /// Timing-only mode: the first read of stale bytes as control data, if
    /// any (docs/user-guide.md §11).
    pub fn stale_control(&self) -> Option<&crate::memory::StaleControl> {
        self.fabric.memory.stale_control()
    }

    /// Timing-only mode: marks `[addr, addr + len)` stale, bytes copied or
    /// computed from bytes a DMA copy should have written (a check of them
    /// is skipped). Not memory: nothing to mark.
    pub fn mark_stale(&mut self, addr: u64, len: u64) {
        let map = &self.fabric.map;
        self.fabric.memory.mark_stale_at(map, addr, len);
    }

    /// Records engine and firmware events (on by default; off for
    /// benchmarks and for runs that show none).
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
        self.fabric.trace = on;
        for e in self.engines.iter_mut().flatten() {
            e.set_trace(on);
        }
        for c in self.cores.iter_mut().flatten() {
            c.set_trace(on);
        }
    }

    /// Sets who drives the register accesses that follow (the trace
    /// executor, the kernel driver; the device itself sets the firmware and
    /// DMA engines). Returns the previous master, to restore.
    pub fn set_bus_master(&mut self, master: Master) -> Master {
        std::mem::replace(&mut self.fabric.master, master)
    }

    /// Who drives the current register accesses.
    pub fn bus_master(&self) -> Master {
        self.fabric.master
    }

    /// Starts the register-access log (`docs/user-guide.md`): one line per
    /// CSR access from now on. With `sink`, lines stream to it (see
    /// [`Device::finish_reg_log`]); without, they are kept for
    /// [`Device::take_reg_log`].
    pub fn record_reg_log(&mut self, sink: Option<Box<dyn std::io::Write + Send>>) {
        self.fabric.rec.get_or_insert_with(Box::default).log = Some(RegLog::new(sink));
    }

    /// The buffered register-access log lines so far (empty when streaming
    /// or not recording).
    pub fn take_reg_log(&mut self) -> String {
        self.fabric
            .rec
            .as_deref_mut()
            .and_then(|r| r.log.as_mut())
            .map(RegLog::take)
            .unwrap_or_default()
    }

    /// Stops the register-access log and flushes its sink; returns the
    /// number of lines logged (0 when not recording).
    ///
    /// # Errors
    ///
    /// The first error writing to the sink.
    pub fn finish_reg_log(&mut self) -> std::io::Result<u64> {
        match self.fabric.rec.as_deref_mut().and_then(|r| r.log.take()) {
            Some(log) => log.finish(),
            None => Ok(0),
        }
    }

    /// Starts recording waveforms (queue pointers, engine states, error
    /// causes, semaphores) for [`Device::write_vcd`]. Start before the run:
    /// a signal's first recorded value is its value at time 0.
    pub fn record_waves(&mut self) {
        self.fabric
            .rec
            .get_or_insert_with(Box::default)
            .waves
            .get_or_insert_with(Waves::default);
    }

    /// The recorded waveforms, if [`Device::record_waves`] is on.
    /// Whether a recorder (register-access log or waveforms) is on.
    pub(crate) fn recording(&self) -> bool {
        self.fabric.rec.is_some()
    }

    /// A counter of engine `id` that moves whenever its completion heads
    /// may have changed, for the firmware's polls (docs/firmware.md
    /// §Stalls): [`Engine::head_epoch`] less the steps its tail-pointer
    /// doorbell writes made (such a write moves no completion head: what
    /// it starts moves them later, through [`Engine::crhp_moves`]), or the
    /// finer [`Engine::reg_epoch`] while the race detector watches every
    /// read (a poll's happens-before edges stay as they were). `None`
    /// before the engine exists.
    pub(crate) fn engine_head_epoch(&self, id: u16) -> Option<u64> {
        let e = self.engines.get(usize::from(id)).and_then(Option::as_ref)?;
        Some(if self.fabric.race.is_some() {
            e.reg_epoch()
        } else {
            let doorbells = self.doorbell_epochs.get(usize::from(id)).copied();
            e.head_epoch().wrapping_sub(doorbells.unwrap_or(0))
        })
    }

    /// Whether a write to `block` at `offset` is a tail-pointer doorbell
    /// (TDRTP_INC, RDRTP_INC).
    fn is_tail_doorbell(&self, block: UnitBlock, offset: u64) -> bool {
        let o = &self.unit_maps.offsets;
        match block {
            UnitBlock::M2sQ(_) => offset == o.m2s_q.drtp_inc,
            UnitBlock::S2mQ(_) => offset == o.s2m_q.drtp_inc,
            _ => false,
        }
    }

    /// The waveform recorder, if on.
    pub fn waves(&self) -> Option<&Waves> {
        self.fabric.rec.as_deref().and_then(|r| r.waves.as_ref())
    }

    /// Writes the recorded waveforms as a VCD (`Waves::write_vcd`; nothing
    /// but the header when not recording).
    ///
    /// # Errors
    ///
    /// Errors of the writer.
    pub fn write_vcd(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let empty = Waves::default();
        self.waves()
            .unwrap_or(&empty)
            .write_vcd(out, self.timing.clock_ghz)
    }

    /// The address map.
    pub fn map(&self) -> &SocMap {
        &self.fabric.map
    }

    /// The SBUF/PSUM partition `addr` is in (pads included), as
    /// [`SocMap::decode`] says, and the partition stride of its region;
    /// `None` outside partitioned memory. The last region found answers
    /// again without a map search.
    pub fn partition_of(&self, addr: u64) -> Option<(u32, u64)> {
        if let Some(r) = self.last_partitioned.get()
            && addr >= r.base
            && addr - r.base < r.size_bytes
        {
            // Strides are powers of two (a shift, not a divide per
            // descriptor pair of a plan); any other stride divides.
            let off = addr - r.base;
            let p = if r.stride_bytes.is_power_of_two() {
                off >> r.stride_bytes.trailing_zeros()
            } else {
                off / r.stride_bytes
            };
            return Some((u32::try_from(p).unwrap_or(u32::MAX), r.stride_bytes));
        }
        let map = &self.fabric.map;
        let d = map.decode(addr);
        let region = map.region(d.region?);
        let stride_bytes = region.partitions.as_ref()?.stride_bytes;
        let partition = d.partition?;
        if region.children.is_empty() && stride_bytes > 0 {
            self.last_partitioned.set(Some(PartitionedRegion {
                base: region.base,
                size_bytes: region.size_bytes,
                stride_bytes,
            }));
        }
        Some((partition, stride_bytes))
    }

    /// [`Device::partition_of`] of `addr` and, when `addr` lies in a leaf
    /// partitioned region (the one `partition_of` remembers), that region
    /// as `(base, size_bytes, stride_bytes)`: every address in it is in
    /// partition `(addr - base) / stride_bytes`, as `partition_of` says.
    pub fn partition_span(&self, addr: u64) -> (Option<(u32, u64)>, Option<PartitionSpanBytes>) {
        let p = self.partition_of(addr);
        let span = self
            .last_partitioned
            .get()
            .filter(|r| p.is_some() && addr >= r.base && addr - r.base < r.size_bytes)
            .map(|r| (r.base, r.size_bytes, r.stride_bytes));
        (p, span)
    }

    /// The CSR catalog.
    pub fn catalog(&self) -> &'static Catalog {
        self.fabric.catalog
    }

    /// The timing configuration.
    pub fn timing(&self) -> &TimingConfig {
        &self.timing
    }

    /// Current simulated cycle.
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// The CSR map of a region's register block, if it has one.
    pub fn block_of(&self, region: RegionId) -> Option<&'static CsrMap> {
        self.fabric.block_of(region)
    }

    /// Where a 32-bit register access at `addr` lands, if `addr` is in a
    /// register block. `Ok(None)`: `addr` is memory (or nothing).
    pub fn reg_target(&self, addr: u64) -> Result<Option<RegTarget>, BusFault> {
        self.fabric.reg_target(addr)
    }

    /// The engine model of unit `id`, if it has been touched.
    pub fn engine(&self, id: u16) -> Option<&Engine> {
        self.engines.get(usize::from(id)).and_then(Option::as_ref)
    }

    /// Every touched engine.
    pub fn engines(&self) -> impl Iterator<Item = &Engine> {
        self.engines.iter().flatten()
    }

    /// One past the highest engine id of the map (the SENG and H2T units).
    fn engine_count(&self) -> usize {
        self.fabric
            .engine_blocks
            .iter()
            .flatten()
            .map(|b| usize::from(b.engine) + 1)
            .max()
            .unwrap_or(0)
    }

    #[inline]
    fn engine_mut(&mut self, id: u16) -> &mut Engine {
        let i = usize::from(id);
        if self.engines.len() <= i {
            // Room for every engine of the map at once: growing the table
            // engine by engine moved every engine built so far at each
            // reallocation (1 M instructions on the 8-core chip trace).
            // Engines, not regions: sized by the region count (about
            // 6,000) the table reserved some 55 MiB, a fresh huge
            // allocation (and its page faults) per device.
            // Counted once: only when the table has no room yet.
            if self.engines.capacity() <= i {
                let all = self.engine_count().max(i + 1);
                self.engines.reserve_exact(all - self.engines.len());
            }
            self.engines.resize_with(i + 1, || None);
        }
        let slot = &mut self.engines[i];
        match slot {
            Some(e) => e,
            None => build_engine(
                slot,
                &mut self.engine_factory,
                id,
                self.unit_maps,
                &self.timing,
                self.trace,
                self.schedule_seed,
            ),
        }
    }

    /// A version of every core's semaphores: while it is `Some` and the
    /// same, no semaphore of an EVT_SEM block of a core has changed (each
    /// change sets a `Fabric::sem_touched` bit, and clearing one moves
    /// `sem_epoch`). `None` while a change is not yet taken note of.
    pub(crate) fn sem_version(&self) -> Option<u64> {
        (self.fabric.sem_touched == 0).then_some(self.sem_epoch)
    }

    /// Whether register `t` changes only with a semaphore change
    /// ([`Device::sem_version`]): a register of a core's EVT_SEM block
    /// whose every bit is read-only (`SEM_READ[i]`, set by the semaphore
    /// windows, docs/references/driver.md §6.4), which no software access
    /// changes.
    pub(crate) fn reg_follows_semaphores(&self, t: RegTarget) -> bool {
        self.fabric.sem_cores.contains_key(&t.region)
            && self.fabric.engine_block(t.region).is_none()
            && self
                .block_of(t.region)
                .and_then(|b| b.register_at(t.offset))
                .is_some_and(|r| r.spec().masks().ro == u32::MAX)
    }

    /// The register at `addr` (`region.REG`, `SEM_INC[3]` for an array
    /// element) and its bits that always read 0 (`WO`, `INC`, `DEC` and
    /// reserved bits: no write or reset sets them), if `addr` is a
    /// register of a map.
    pub fn reg_read_zero_bits(&self, addr: u64) -> Option<(String, u32)> {
        let t = self.reg_target(addr).ok()??;
        let r = self.block_of(t.region)?.register_at(t.offset)?;
        let masks = r.spec().masks();
        Some((
            format!("{}.{}", self.map().name(t.region), r.name()),
            masks.read_zero() | masks.reserved,
        ))
    }

    /// Register value without side effects (for debuggers and decoders).
    pub fn peek_reg(&self, t: RegTarget) -> Option<u32> {
        if let Some(r) = self.fabric.engine_block(t.region) {
            if let Some(e) = self.engine(r.engine) {
                return e.peek(r.block, t.offset);
            }
        } else if let Some(rf) = self.fabric.regs.get(&t.region) {
            return rf.value(t.offset).ok();
        }
        self.block_of(t.region).and_then(|b| {
            b.register_at(t.offset)
                .and_then(|r| b.reset_values().get(r.slot()).copied())
        })
    }

    /// A 32-bit read as a bus master: register read with its side effects
    /// (read-to-clear), or four little-endian bytes of memory.
    pub fn read32(&mut self, addr: u64) -> Result<u32, BusFault> {
        let decoded = self.reg_decoded(addr)?;
        let target = decoded.map(|d| d.target);
        if self.fabric.race.is_some() {
            self.race_read32(addr, target);
        }
        if let Some(Decoded {
            target: t, engine, ..
        }) = decoded
        {
            // A read can clear bits (RC); the firmware's own polls read
            // nothing of the kind and must not count as a change.
            if !matches!(self.fabric.master, Master::Firmware(_)) {
                self.touch();
            }
            if self.fabric.rec.is_some() {
                return self.read32_recorded(addr, t);
            }
            if let Some(r) = engine {
                return self
                    .engine_mut(r.engine)
                    .mmio_read(r.block, t.offset)
                    .ok_or_else(|| self.fabric.no_register(addr, t));
            }
            return self.fabric.csr_read(addr, t);
        }
        let mut raw = [0u8; 4];
        self.fabric.memory.read(&self.fabric.map, addr, &mut raw)?;
        Ok(u32::from_le_bytes(raw))
    }

    /// `out.len()` consecutive [`Device::read32`]s from `addr` up, a failed
    /// one giving 0. A run inside one register block without an engine
    /// model, read by the firmware with nothing observing reads (no
    /// register log, no race detector), decodes `addr` once and reads the
    /// block's registers in order: the same values and read semantics,
    /// without a map decode per register.
    pub fn read32_run(&mut self, addr: u64, out: &mut [u32]) {
        let direct = self.fabric.race.is_none()
            && self.fabric.rec.is_none()
            && matches!(self.fabric.master, Master::Firmware(_));
        if let (true, Ok(Some(t))) = (direct, self.reg_target_of(addr))
            && self.fabric.engine_block(t.region).is_none()
            && t.offset + 4 * out.len() as u64 <= self.fabric.map.region(t.region).size_bytes
            && let Some(rf) = self.fabric.regfile(t.region)
        {
            for (i, v) in out.iter_mut().enumerate() {
                *v = rf.read(t.offset + 4 * i as u64).map_or(0, |o| o.value);
            }
            return;
        }
        for (i, v) in out.iter_mut().enumerate() {
            *v = self.read32(addr + 4 * i as u64).unwrap_or(0);
        }
    }

    /// A 32-bit write as a bus master. Register writes apply the access
    /// semantics and route side effects; `Ok(Some(..))` reports what the
    /// register did (including a read-only register left unchanged).
    pub fn write32(&mut self, addr: u64, value: u32) -> Result<Option<RegWrite>, BusFault> {
        Ok(self
            .write32_done(addr, value, true)?
            .map(|(t, done)| RegWrite {
                region: self.fabric.map.name(t.region).to_string(),
                register: done.register.unwrap_or_default(),
                old: done.old,
                new: done.new,
                ignored: done.ignored,
                read_only: done.read_only,
            }))
    }

    /// [`Device::write32`] for a master that does not read the report (the
    /// firmware's doorbells and ring set-up): the same side effects, events
    /// and log lines, without building register names nobody reads.
    pub fn write32_unreported(&mut self, addr: u64, value: u32) -> Result<(), BusFault> {
        if self.fabric.rec.is_none()
            && self.fabric.race.is_none()
            && let Ok(Some(d)) = self.reg_decoded(addr)
            && let Some(r) = d.engine.filter(|r| !r.broadcast)
        {
            return self.engine_write_quiet(addr, d, r, value);
        }
        self.write32_done(addr, value, false).map(|_| ())
    }

    fn write32_done(
        &mut self,
        addr: u64,
        value: u32,
        named: bool,
    ) -> Result<Option<(RegTarget, fabric::WriteDone)>, BusFault> {
        let target = self.reg_target_of(addr);
        // A write to an engine's registers changes what that engine's
        // owners poll, nothing another core reads (docs/firmware.md §Stalls).
        match &target {
            Ok(Some(t)) => match self.fabric.engine_block(t.region) {
                Some(r) => self.touch_cores(self.engine_owners(r.engine)),
                None => self.touch(),
            },
            _ => self.touch(),
        }
        let Some(t) = target? else {
            if self.fabric.race.is_some() {
                self.race_cpu_access(addr, 4, true);
            }
            self.fabric
                .memory
                .write(&self.fabric.map, addr, &value.to_le_bytes())?;
            return Ok(None);
        };
        if self.fabric.race.is_some() {
            self.race_write32(t, value);
        }
        let recording = self.fabric.rec.is_some();
        if recording && let Some(rec) = self.fabric.rec.as_deref_mut() {
            rec.cycle = self.now.0;
        }
        let done = match self.fabric.engine_block(t.region) {
            Some(r) => self.engine_write(addr, t, r, value, named)?,
            None => self.fabric.csr_write_unnamed(addr, t, value, named)?,
        };
        if recording {
            self.fabric
                .log_access(true, addr, t, value, done.old, done.new);
        }
        Ok(Some((t, done)))
    }

    /// [`Device::read32`] of a register while recording: watch, read,
    /// sample, log.
    fn read32_recorded(&mut self, addr: u64, t: RegTarget) -> Result<u32, BusFault> {
        let now = self.now.0;
        if let Some(rec) = self.fabric.rec.as_deref_mut() {
            rec.cycle = now;
        }
        let (value, after) = match self.fabric.engine_block(t.region) {
            Some(r) => {
                self.wave_watch(r.engine, r.block);
                let e = self.engine_mut(r.engine);
                let v = e.mmio_read(r.block, t.offset);
                let after = e.regs(r.block).and_then(|f| f.peek(t.offset).ok());
                self.wave_sample(r.engine);
                let v = v.ok_or_else(|| self.fabric.no_register(addr, t))?;
                (v, after.unwrap_or(v))
            }
            None => {
                let v = self.fabric.csr_read(addr, t)?;
                let after = self
                    .fabric
                    .regs
                    .get(&t.region)
                    .and_then(|f| f.peek(t.offset).ok())
                    .unwrap_or(v);
                (v, after)
            }
        };
        self.fabric.log_access(false, addr, t, value, value, after);
        Ok(value)
    }

    /// Waveforms: start watching engine `id` (created if needed) and, for a
    /// queue block, that queue — before the access that touches it.
    fn wave_watch(&mut self, id: u16, block: UnitBlock) {
        if self.fabric.rec.as_deref().is_none_or(|r| r.waves.is_none()) {
            return;
        }
        self.engine_mut(id);
        let maps = self.unit_maps;
        let Some(Some(e)) = self.engines.get(usize::from(id)) else {
            return;
        };
        if let Some(w) = self
            .fabric
            .rec
            .as_deref_mut()
            .and_then(|r| r.waves.as_mut())
        {
            w.watch(e, maps, block);
        }
    }

    /// Waveforms: sample engine `id`'s watched registers at the current
    /// cycle.
    fn wave_sample(&mut self, id: u16) {
        let Some(w) = self
            .fabric
            .rec
            .as_deref_mut()
            .and_then(|r| r.waves.as_mut())
        else {
            return;
        };
        if let Some(Some(e)) = self.engines.get(usize::from(id)) {
            w.sample(self.now.0, e, self.unit_maps);
        }
    }

    fn engine_write(
        &mut self,
        addr: u64,
        t: RegTarget,
        r: EngineBlockRef,
        value: u32,
        named: bool,
    ) -> Result<fabric::WriteDone, BusFault> {
        let single = [r.engine];
        let mirrored;
        let targets: &[u16] = if r.broadcast {
            mirrored = self.broadcast_targets(r.engine);
            &mirrored
        } else {
            &single
        };
        let now = self.now;
        let mut report = None;
        let recording = self.fabric.rec.is_some();
        let trace = self.fabric.trace;
        for &id in targets {
            if recording {
                self.wave_watch(id, r.block);
            }
            let doorbell = self.is_tail_doorbell(r.block, t.offset);
            let e = self.engine_mut(id);
            let sw_before = e.head_epoch().wrapping_sub(e.crhp_moves());
            let out = e.mmio_write(r.block, t.offset, value, now);
            if doorbell {
                let steps = e
                    .head_epoch()
                    .wrapping_sub(e.crhp_moves())
                    .wrapping_sub(sw_before);
                let i = usize::from(id);
                if self.doorbell_epochs.len() <= i {
                    self.doorbell_epochs.resize(i + 1, 0);
                }
                self.doorbell_epochs[i] = self.doorbell_epochs[i].wrapping_add(steps);
            }
            self.collect_engine_log(id);
            let Some(out) = out else {
                continue;
            };
            if recording {
                self.wave_sample(id);
            }
            let shown = trace && (out.read_only || out.ignored != 0);
            let w = fabric::WriteDone {
                register: (shown || (named && report.is_none())).then(|| out.reg.name()),
                old: out.old,
                new: out.new,
                ignored: out.ignored,
                read_only: out.read_only,
            };
            if shown {
                self.fabric.events.push(DeviceEvent::IgnoredWrite {
                    region: self.fabric.map.name(t.region).to_string(),
                    register: w.register.clone().unwrap_or_default(),
                    written: Hex32(value),
                    ignored: Hex32(out.ignored),
                    read_only: out.read_only,
                    cycle: now.0,
                });
            }
            self.reschedule(id);
            report.get_or_insert(w);
        }
        if r.broadcast {
            // The mirror keeps the value too, so reads of it show the last write.
            let _ = self.fabric.csr_write_unnamed(addr, t, value, false);
        }
        report.ok_or_else(|| self.fabric.no_register(addr, t))
    }

    /// The engines a broadcast mirror write reaches (docs/references/wiki.md §I.3): the
    /// mirror on SDMA_0 / SDMA_16 of a cluster addresses broadcast group 0 /
    /// 1, i.e. the 16 engines of that NeuronCore whose SDMA-app
    /// BROADCAST_CFG_GROUP has the bit (reset 0xFFFF: all). Simulator
    /// decision, documented in docs/address-map.md.
    fn broadcast_targets(&mut self, mirror_engine: u16) -> Vec<u16> {
        let group_bit = 1u32 << ((mirror_engine / 16) % 2);
        let first = mirror_engine - mirror_engine % 16;
        let mut out = Vec::new();
        for id in first..first + 16 {
            let member = self
                .engine(id)
                .and_then(|e| {
                    let off = self.unit_maps.sdma_app.find("BROADCAST_CFG_GROUP", None)?;
                    e.peek(UnitBlock::SdmaApp, off)
                })
                .unwrap_or(0xFFFF);
            if member & group_bit != 0 {
                out.push(id);
            }
        }
        out
    }

    fn reschedule(&mut self, id: u16) {
        let next = self.engine(id).and_then(Engine::next_event);
        // Most register writes (a ring's set-up) leave the engine's next
        // event where it was: the tree's path is rewritten only when it
        // moves (the same cycle gives the same key, tie seed or not).
        if self.wake.get(id) != next {
            self.wake.set(id, next);
        }
    }

    /// Simulator events processed so far: every engine-internal event and
    /// every firmware run (the "events" of `run`'s speed line).
    pub fn events_processed(&self) -> u64 {
        self.fw_runs
            + self
                .engines
                .iter()
                .flatten()
                .map(Engine::events_done)
                .sum::<u64>()
    }

    /// Runs until nothing is pending, or until cycle `limit`. A stalled
    /// device ([`RunStop::Stalled`]) lets the time up to `limit` pass.
    pub fn run(&mut self, limit: Option<Cycle>) -> RunStop {
        self.run_while(limit, OnStall::SkipToLimit, |_| false).0
    }

    /// Runs every event up to and including cycle `at`, then moves the
    /// clock to `at` (time passes even when nothing is pending: a host
    /// sleeping or polling, docs/references/driver.md §4.5).
    pub fn advance_to(&mut self, at: Cycle) -> RunStop {
        self.advance_to_while(at, |_| false).0
    }

    /// [`Device::advance_to`], stopping early (after the event at which it
    /// first holds, the clock left there) when `stop` returns true (a host
    /// interrupt). Returns whether it stopped for that reason.
    pub fn advance_to_while(
        &mut self,
        at: Cycle,
        stop: impl FnMut(&mut Device) -> bool,
    ) -> (RunStop, bool) {
        let (r, stopped) = self.run_while(Some(at), OnStall::SkipToLimit, stop);
        if !stopped {
            self.now = self.now.max(at);
            self.fabric.now = self.now.0;
        }
        (r, stopped)
    }

    /// Runs like [`Device::run`], stopping early (after the event at which
    /// it first holds) when `stop` returns true. Returns whether it stopped
    /// for that reason. `on_stall` says what a stall does.
    pub fn run_while(
        &mut self,
        limit: Option<Cycle>,
        on_stall: OnStall,
        mut stop: impl FnMut(&mut Device) -> bool,
    ) -> (RunStop, bool) {
        loop {
            self.wake_touched_cores();
            let fw = self.next_fw();
            let engine_at = self.wake.peek().map(|(c, _)| c);
            if engine_at.is_none() && self.fw_stalled() {
                match (on_stall, limit) {
                    (OnStall::SkipToLimit, Some(_)) if self.fabric.rec.is_some() => {}
                    (OnStall::SkipToLimit, Some(l)) => {
                        self.skip_polls_to(l);
                        return (RunStop::Stalled, false);
                    }
                    _ => return (RunStop::Stalled, false),
                }
            }
            if let Some((fw_at, core)) = fw
                && engine_at.is_none_or(|e| fw_at <= e)
            {
                if limit.is_some_and(|l| fw_at > l) {
                    if let Some(l) = limit {
                        self.past(l);
                    }
                    return (self.limit_stop(), false);
                }
                self.now = self.now.max(fw_at);
                self.fabric.now = self.now.0;
                self.fw_runs += 1;
                self.run_core(core);
                if stop(self) {
                    return (RunStop::Idle, true);
                }
                continue;
            }
            let fw_at = fw.map(|(c, _)| c);
            let Some((at, mut id)) = self.wake.peek() else {
                return (RunStop::Idle, false);
            };
            if limit.is_some_and(|l| at > l) {
                if let Some(l) = limit {
                    self.past(l);
                }
                return (self.limit_stop(), false);
            }
            let mut i = usize::from(id);
            let Some(Some(engine)) = self.engines.get_mut(i) else {
                self.wake.set(id, None);
                continue;
            };
            if engine.next_event() != Some(at) {
                self.reschedule(id);
                continue;
            }
            let mut at = at;
            // Keep stepping the earliest engine (the wake tree's root),
            // switching engines here, while no firmware run, semaphore
            // change, posted write or limit needs the checks above.
            while let Some(Some(engine)) = self.engines.get_mut(i) {
                // As above: a wake-up the engine no longer has goes back
                // through the full checks (true on entry: they just ran).
                if engine.next_event() != Some(at) {
                    break;
                }
                self.now = self.now.max(at);
                self.fabric.now = self.now.0;
                let crhp_moves = engine.crhp_moves();
                let mut bus = DmaBus {
                    fabric: &mut self.fabric,
                    posted: &mut self.posted,
                    engine: id,
                    now: at,
                };
                engine.step(at, &mut bus, &self.timing);
                if self.fabric.step_order {
                    self.fabric
                        .events
                        .extend(engine.drain_log().map(DeviceEvent::Engine));
                }
                let next = engine.next_event();
                let owners = if engine.crhp_moves() == crhp_moves {
                    0
                } else {
                    self.completion_wakes(id, self.engine_owners(id))
                };
                self.wake.set(id, next);
                self.cur_key = (at.0, 1, id);
                self.touch_cores(owners);
                if self.activity & (EVENT_FLUSH_STEPS - 1) == 0 && self.sink.0.is_some() {
                    self.flush_events();
                }
                if self.fabric.rec.is_some() {
                    self.wave_sample(id);
                }
                if !self.posted.is_empty() {
                    self.apply_posted();
                    if stop(self) {
                        return (RunStop::Idle, true);
                    }
                    break;
                }
                if stop(self) {
                    return (RunStop::Idle, true);
                }
                if self.fabric.sem_touched != 0 || std::mem::take(&mut self.unparked) {
                    break;
                }
                match self.wake.peek() {
                    Some((n, first))
                        if fw_at.is_none_or(|f| n < f) && limit.is_none_or(|l| n <= l) =>
                    {
                        at = n;
                        id = first;
                        i = usize::from(id);
                    }
                    _ => break,
                }
            }
        }
    }

    /// DMA writes into engine register blocks (a descriptor that rings
    /// another queue's doorbell) land after the writing engine's step.
    fn apply_posted(&mut self) {
        while !self.posted.is_empty() {
            let posted = std::mem::take(&mut self.posted);
            for (addr, value, engine) in posted {
                // The writing engine is the bus master of its posted write.
                let prev = self.set_bus_master(Master::Engine(engine));
                let _ = self.write32_unreported(addr, value);
                self.set_bus_master(prev);
            }
        }
    }

    /// Per-queue statistics of every touched engine: (engine, queue, stats)
    /// for queues that moved anything.
    pub fn queue_stats(&self) -> Vec<(u16, u8, QueueStats)> {
        let mut out = Vec::new();
        for e in self.engines.iter().flatten() {
            let id = &e.id();
            for (q, s) in e.stats.iter().enumerate() {
                if s.packets > 0 {
                    out.push((*id, q as u8, s.clone()));
                }
            }
        }
        out
    }

    /// Reads `buf.len()` bytes of memory at `addr`.
    pub fn read_bytes(&self, addr: u64, buf: &mut [u8]) -> Result<(), BusFault> {
        if self.fabric.race.is_some() {
            self.race_cpu_access(addr, buf.len() as u64, false);
        }
        self.fabric.memory.read(&self.fabric.map, addr, buf)
    }

    /// Writes bytes to memory at `addr`.
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        self.touch();
        if self.fabric.race.is_some() {
            self.race_cpu_access(addr, data.len() as u64, true);
        }
        self.fabric.memory.write(&self.fabric.map, addr, data)
    }

    /// Whether one [`Device::write_bytes`] of `len` bytes at `addr` lands
    /// whole in plain (unpartitioned) memory, and no race detector watches
    /// the stores one by one: the firmware's batched descriptor stores
    /// (docs/firmware.md "Descriptor generation").
    pub fn stores_whole(&self, addr: u64, len: u64) -> bool {
        self.fabric.race.is_none() && self.fabric.memory.is_plain(&self.fabric.map, addr, len)
    }

    /// Writes `len` bytes of a pattern at `addr`, lazily where the memory
    /// is plain ([`DeviceMemory::fill_pattern`](crate::memory::DeviceMemory::fill_pattern)):
    /// `pattern(k, buf)` gives the bytes from `k` bytes past `addr`.
    /// `Ok(false)`: nothing written (SBUF, PSUM); write the bytes instead.
    pub fn fill_pattern(
        &mut self,
        addr: u64,
        len: u64,
        pattern: &mem::PatternFn,
    ) -> Result<bool, BusFault> {
        let done = self
            .fabric
            .memory
            .fill_pattern(&self.fabric.map, addr, len, pattern)?;
        if done {
            self.touch();
            if self.fabric.race.is_some() {
                self.race_cpu_access(addr, len, true);
            }
        }
        Ok(done)
    }

    /// Fills `len` bytes of memory at `addr` with `byte`.
    pub fn fill(&mut self, addr: u64, len: u64, byte: u8) -> Result<(), BusFault> {
        self.touch();
        if self.fabric.race.is_some() {
            self.race_cpu_access(addr, len, true);
        }
        self.fabric.memory.fill(&self.fabric.map, addr, len, byte)
    }

    /// Host bytes the device's memories hold.
    pub fn allocated_bytes(&self) -> u64 {
        self.fabric.memory.allocated_bytes()
    }

    /// Every register that differs from reset, by block address.
    pub fn csr_snapshot(&self) -> CsrSnapshot {
        let map = &self.fabric.map;
        let mut blocks: Vec<BlockSnapshot> = self
            .fabric
            .regs
            .iter()
            .filter_map(|(&id, rf)| {
                let registers = rf.diff_from_reset();
                if registers.is_empty() {
                    return None;
                }
                let r = map.region(id);
                Some(BlockSnapshot {
                    region: r.name.to_string(),
                    block: rf.map().block().to_string(),
                    base: Hex(r.base),
                    registers,
                })
            })
            .collect();
        for e in self.engines.iter().flatten() {
            let id = e.id();
            for b in UnitBlock::all() {
                let Some(rf) = e.regs(b) else { continue };
                let registers = e.changed_registers(b);
                if registers.is_empty() {
                    continue;
                }
                let name = format!("eng{id}.{}", b.region_suffix());
                let Some(rid) = map.by_name(&name) else {
                    continue;
                };
                blocks.push(BlockSnapshot {
                    region: name,
                    block: rf.map().block().to_string(),
                    base: Hex(map.region(rid).base),
                    registers,
                });
            }
        }
        blocks.sort_by_key(|b| b.base);
        CsrSnapshot { blocks }
    }
}
