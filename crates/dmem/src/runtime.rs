//! The dmem runtime (tdrv-dmem §1, §2, §4): handles, allocators, the
//! allocation and free paths, GC lists and memory statistics. The copy
//! paths are in `copy.rs`.
//!
//! Safe-Rust shape of the C object model:
//! - every `dmem_t` lives in an arena slot; callers hold a [`DmemId`]
//!   (slot + generation), so a stale handle is detected instead of
//!   dereferenced;
//! - an allocator's intrusive list is index-linked through the arena: its
//!   `dummy_head`/`dummy_tail` sentinels are arena slots too, so append
//!   (before the tail) and unlink need no neighbour checks and are O(1)
//!   (tdrv-dmem §1 "The intrusive list invariant");
//! - the C globals/`nrt_gconf` fields this layer reads are the explicit
//!   [`DmemConfig`]; the `ndl_supports_align_12` latch is per runtime;
//! - the C mutexes (allocator lock, DML lock, bounce-buffer lock) are
//!   implied by `&mut self`; the bounce buffer keeps a per-NC busy flag so
//!   the serialisation the seed relies on stays visible and checked.

use ioctl_abi::Errno;
use ioctl_bus::{IoctlError, Transport, UserSpace};
use serde::Serialize;

use crate::dml::{self, DmemLogger, DmlEntryInput};
use crate::event::{
    AllocatorId, DmemId, LeakedAllocation, LogLevel, MemEventKind, RuntimeEvent, SysTraceType,
    TracePhase,
};
use crate::ndl::{CopyBuf, Ndl, NdlHandle, errno_of};
use crate::types::{DmemAction, MemLocation, NrtStatus, USAGE_TYPES, UsageType, category_for};

/// NeuronCores per Trainium2 device (docs/references/driver.md §6.1).
pub const TRN2_NC_COUNT: u32 = 8;
/// Capacity of one Trainium2 HBM stack (docs/references/driver.md §0.1: 4 × 24 GiB).
pub const TRN2_HBM_CAPACITY_BYTES: u64 = 24 << 30;

/// The message `dmem_alloc_aligned` logs once when the driver lacks
/// aligned allocation (tdrv-dmem §2).
pub const MSG_ALIGN_UNSUPPORTED: &str = "(Non-FATAL) aligned memory allocation API not available in driver. Please consider upgrading driver for more efficient memory allocation.";
/// The hint logged on a device ENOMEM of an aligned request (tdrv-dmem §2).
pub const MSG_ALIGNED_OOM_HINT: &str = "Aligned allocations may fail even if HBM has space for the actual size requested, due to running out of alignment boundaries";

/// `mem_type` | `mem_usage_type` << 32: the single 8-byte store with which
/// `dmem_alloc_contiguous_scratchpad_page` sets both fields (tdrv-dmem §2
/// QUIRK: TONGA_DRAM = 2, SCRATCHPAD = 11).
pub const SCRATCHPAD_PAGE_TYPE_WORD: u64 = 0xB_0000_0002;

/// Splits a `mem_type`/`mem_usage_type` 8-byte word (little endian: the
/// location in the low dword, the usage in the high dword).
#[must_use]
pub fn split_type_word(word: u64) -> (Option<MemLocation>, Option<UsageType>) {
    let loc = match word & 0xFFFF_FFFF {
        1 => Some(MemLocation::HostDram),
        2 => Some(MemLocation::TongaDram),
        _ => None,
    };
    let usage = u32::try_from(word >> 32).ok().and_then(UsageType::from_raw);
    (loc, usage)
}

/// `get_default_hbm_index`: a core's HBM on Trainium2 (two NCs per HBM,
/// docs/references/driver.md §6.3).
#[must_use]
pub const fn default_hbm_index(nc: u32) -> u32 {
    nc / 2
}

/// The manual alignment of `dmem_alloc_aligned`'s fallback (tdrv-dmem §2):
/// `((pa + alignment) & -alignment) - pa`, in wrapping u64 arithmetic as
/// the C computes it. Note an already aligned `pa` gets a full `alignment`
/// of offset, not 0 — the over-allocation always covers it.
#[must_use]
pub const fn fallback_align_offset(pa: u64, alignment: u64) -> u64 {
    (pa.wrapping_add(alignment) & alignment.wrapping_neg()).wrapping_sub(pa)
}

/// The `nrt_gconf` fields and device facts this layer reads, made explicit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DmemConfig {
    /// `nrt_gconf()->test_zerocopy`: copy TONGA_DRAM through the zero-copy
    /// ioctl instead of the staged DMA (and see the asymmetric dispatch).
    pub test_zerocopy: bool,
    /// `nrt_gconf()->direct_bar4_write_size`: the BAR4 direct-write
    /// threshold passed to zero-copy and batch copies.
    pub direct_bar4_write_size: u32,
    /// DML ring capacity (`dml_init` `max_entries`).
    pub dml_log_capacity: usize,
    /// DML verbose OOM table (22 usage columns).
    pub dml_verbose: bool,
    /// Record NDS metrics on alloc/free.
    pub enable_metrics: bool,
    /// The device index (ND, and the MLA index of its DML logger).
    pub device_index: u32,
    /// NeuronCores on the device (≤ 8).
    pub nc_count: u32,
    /// Capacity of one HBM stack, for the `MEM_USAGE` line and OOM report.
    pub hbm_capacity_bytes: u64,
}

impl Default for DmemConfig {
    fn default() -> Self {
        Self {
            test_zerocopy: false,
            direct_bar4_write_size: 0,
            dml_log_capacity: 1024,
            dml_verbose: false,
            enable_metrics: false,
            device_index: 0,
            nc_count: TRN2_NC_COUNT,
            hbm_capacity_bytes: TRN2_HBM_CAPACITY_BYTES,
        }
    }
}

/// `dmem_allocator_type_t` (docs/references/wiki.md §H.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum AllocatorKind {
    /// `GLOBAL` = 0 (the per-TPB allocators are of this kind).
    Global = 0,
    /// `MODEL` = 1.
    Model = 1,
}

/// `dmem_t` (tdrv-dmem §1; C layout in [`crate::layout::DMEM_T_LAYOUT`]).
/// The list links live in the arena, not here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DmemT {
    /// `pcore->device_tpb_idx`: the owning NeuronCore.
    pub nc: u32,
    /// `mem_handle`: the NDL handle.
    pub mem_handle: NdlHandle,
    /// `size`: the logical size.
    pub size_bytes: u64,
    /// `_pa`: device physical address of the kernel allocation.
    pub pa: u64,
    /// `_va`: the host mapping, once `dmem_mmap`ed.
    pub va: Option<u64>,
    /// `align_offset`: bytes from `pa` to the aligned base (manual
    /// alignment fallback; else 0).
    pub align_offset_bytes: u64,
    /// `allocated_size`: what was asked of the kernel and what DML counts.
    pub allocated_size_bytes: u64,
    /// `mem_type`.
    pub mem_type: MemLocation,
    /// `mem_usage_type`.
    pub usage: UsageType,
    /// `tdram_channel`: the HBM index.
    pub tdram_channel: u32,
    /// `ref_count`.
    pub ref_count: u64,
    /// `hint`: debug name.
    pub hint: Option<String>,
    /// `cpy_buf`: the core's bounce buffer (None for scratchpad pages, as
    /// in the seed, which never sets it there).
    pub cpy_buf: Option<CopyBuf>,
    /// `allocator`: the back-pointer (None once the allocator is destroyed).
    pub allocator: Option<AllocatorId>,
}

impl DmemT {
    fn dml_input(&self) -> DmlEntryInput {
        DmlEntryInput {
            mem_type: self.mem_type,
            usage: self.usage,
            tdram_channel: self.tdram_channel,
            hint: self.hint.clone(),
            nc_idx: self.nc,
            size: self.size_bytes,
            allocated_size: self.allocated_size_bytes,
            pa: self.pa,
            align_offset: self.align_offset_bytes,
        }
    }
}

/// `dmem_list_t`: a caller-owned GC list of references (tdrv-dmem §4),
/// appended in order and released by [`Dmem::dmem_list_free`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DmemList {
    entries: Vec<DmemId>,
}

impl DmemList {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The listed handles, oldest first.
    #[must_use]
    pub fn entries(&self) -> &[DmemId] {
        &self.entries
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Usage of one NeuronCore and its HBM (`dmem_get_memory_stats`, read from
/// the DML counters).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DmemMemoryStats {
    /// The core.
    pub nc: u32,
    /// Its HBM.
    pub hbm_index: u32,
    /// `memory_usage_nc[nc][usage]`, by usage type.
    pub usage_bytes: [u64; USAGE_TYPES],
    /// `memory_usage_nc[nc][22]`.
    pub nc_total_bytes: u64,
    /// `memory_usage[hbm]`: every core's use of this HBM.
    pub hbm_used_bytes: u64,
    /// The HBM's capacity.
    pub hbm_capacity_bytes: u64,
}

/// The manual alignment of `dmem_alloc_aligned`'s fallback: the logical
/// size and the alignment asked for.
#[derive(Clone, Copy, Debug)]
struct ManualAlign {
    size_bytes: u64,
    alignment: u64,
}

/// "No link".
const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
enum SlotBody {
    Vacant,
    Sentinel,
    Live(Box<DmemT>),
}

#[derive(Clone, Debug)]
struct Slot {
    generation: u32,
    prev: u32,
    next: u32,
    body: SlotBody,
}

#[derive(Clone, Debug)]
struct DmemAllocator {
    kind: AllocatorKind,
    nc: u32,
    dummy_head: u32,
    dummy_tail: u32,
}

/// The runtime's device-memory layer for one device: the NDL, the DML
/// logger, the handle arena and the allocators.
#[derive(Debug)]
pub struct Dmem {
    pub(crate) ndl: Ndl,
    pub(crate) config: DmemConfig,
    pub(crate) logger: DmemLogger,
    slots: Vec<Slot>,
    vacant: Vec<u32>,
    allocators: Vec<Option<DmemAllocator>>,
    tpb_allocators: Vec<AllocatorId>,
    /// The bounce-buffer lock (`ndl_copy_buf_t.lock`) as a busy flag per NC.
    pub(crate) copy_buf_busy: Vec<bool>,
    ndl_supports_align_12: bool,
    next_tid: u64,
    events: Vec<RuntimeEvent>,
}

/// The status of a failed allocation ioctl (tdrv-dmem §2 step 3): ENOMEM is
/// NRT_FAIL_HOST_MEM_ALLOC for host memory and NRT_RESOURCE for the
/// device; anything else (bus failures included) NRT_FAILURE.
#[must_use]
pub fn alloc_error_status(e: &IoctlError, mem_type: MemLocation) -> NrtStatus {
    match (errno_of(e), mem_type) {
        (Some(Errno::ENOMEM), MemLocation::HostDram) => NrtStatus::FailHostMemAlloc,
        (Some(Errno::ENOMEM), MemLocation::TongaDram) => NrtStatus::Resource,
        _ => NrtStatus::Failure,
    }
}

impl Dmem {
    /// A copy of the runtime layer (handles, allocators, the DML log, the
    /// process memory) over a copy of the transport and the driver behind
    /// it ([`ioctl_bus::Transport::try_clone_box`]), which runs on
    /// independently (the debugger's checkpoints, docs/user-guide.md §12
    /// "Going back"); `None` when a part cannot be copied.
    pub fn try_clone(&mut self) -> Option<Dmem> {
        Some(Dmem {
            ndl: self.ndl.try_clone()?,
            config: self.config.clone(),
            logger: self.logger.clone(),
            slots: self.slots.clone(),
            vacant: self.vacant.clone(),
            allocators: self.allocators.clone(),
            tpb_allocators: self.tpb_allocators.clone(),
            copy_buf_busy: self.copy_buf_busy.clone(),
            ndl_supports_align_12: self.ndl_supports_align_12,
            next_tid: self.next_tid,
            events: self.events.clone(),
        })
    }

    /// Opens the device through `transport` with a fresh process address
    /// space: NDL open (bounce buffers), `dml_init`, and one TPB allocator
    /// per NeuronCore (as `tdrv_init` does).
    ///
    /// # Errors
    ///
    /// NRT_INVALID for an NC count of 0 or more than 8; NRT_RESOURCE when
    /// the bounce buffers do not fit (ENOMEM); NRT_FAILURE otherwise.
    pub fn open(transport: Box<dyn Transport>, config: DmemConfig) -> Result<Self, NrtStatus> {
        Self::open_with_user(transport, UserSpace::new(), config)
    }

    /// As [`Dmem::open`], with the caller's process address space.
    ///
    /// # Errors
    ///
    /// As [`Dmem::open`].
    pub fn open_with_user(
        transport: Box<dyn Transport>,
        user: UserSpace,
        config: DmemConfig,
    ) -> Result<Self, NrtStatus> {
        let nc_ok = usize::try_from(config.nc_count).is_ok_and(|n| (1..=dml::NUM_NCS).contains(&n));
        if !nc_ok {
            return Err(NrtStatus::Invalid);
        }
        let ndl = Ndl::open(transport, user, config.nc_count)
            .map_err(|e| alloc_error_status(&e, MemLocation::TongaDram))?;
        let logger = DmemLogger::new(
            config.device_index,
            config.dml_log_capacity,
            config.dml_verbose,
        );
        let nc_count = config.nc_count;
        let mut dm = Self {
            ndl,
            logger,
            slots: Vec::new(),
            vacant: Vec::new(),
            allocators: Vec::new(),
            tpb_allocators: Vec::new(),
            copy_buf_busy: vec![false; usize::try_from(nc_count).unwrap_or(0)],
            ndl_supports_align_12: true,
            next_tid: 1,
            events: Vec::new(),
            config,
        };
        for nc in 0..nc_count {
            let a = dm.dmem_allocator_create(AllocatorKind::Global, nc)?;
            dm.tpb_allocators.push(a);
        }
        Ok(dm)
    }

    /// Frees the bounce buffers (NDL close). Allocations still live stay
    /// live; their copies fail from now on.
    ///
    /// # Errors
    ///
    /// NRT_FAILURE when a free ioctl failed.
    pub fn shutdown(&mut self) -> Result<(), NrtStatus> {
        self.ndl.close().map_err(|_| NrtStatus::Failure)
    }

    // ---- accessors ------------------------------------------------------

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &DmemConfig {
        &self.config
    }

    /// `dml_init` again with another ring capacity and verbosity (tdrv-dmem
    /// §5). Only before anything was logged: the counters start from zero.
    ///
    /// # Errors
    ///
    /// `NRT_INVALID` once the log holds an entry.
    pub fn dml_configure(&mut self, max_entries: usize, verbose: bool) -> Result<(), NrtStatus> {
        if self.logger.entry_count() > 0 || self.logger.entries_dropped() > 0 {
            return Err(NrtStatus::Invalid);
        }
        self.logger = DmemLogger::new(self.config.device_index, max_entries, verbose);
        self.config.dml_log_capacity = max_entries;
        self.config.dml_verbose = verbose;
        Ok(())
    }

    /// The configuration, mutable: what a later call reads (e.g.
    /// `test_zerocopy` at the next copy) takes effect from then on.
    pub fn config_mut(&mut self) -> &mut DmemConfig {
        &mut self.config
    }

    /// The process memory (host buffers for copies live here).
    #[must_use]
    pub fn user(&self) -> &UserSpace {
        self.ndl.user()
    }

    /// The process memory, mutable.
    pub fn user_mut(&mut self) -> &mut UserSpace {
        self.ndl.user_mut()
    }

    /// The NDL layer.
    #[must_use]
    pub fn ndl(&self) -> &Ndl {
        &self.ndl
    }

    /// The NDL layer, mutable.
    pub fn ndl_mut(&mut self) -> &mut Ndl {
        &mut self.ndl
    }

    /// The device's DML logger.
    #[must_use]
    pub fn logger(&self) -> &DmemLogger {
        &self.logger
    }

    /// Events so far, oldest first.
    #[must_use]
    pub fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }

    /// Takes the events recorded so far.
    pub fn drain_events(&mut self) -> Vec<RuntimeEvent> {
        std::mem::take(&mut self.events)
    }

    /// The `ndl_supports_align_12` latch: false once the driver has been
    /// found to lack aligned allocation.
    #[must_use]
    pub fn ndl_supports_align(&self) -> bool {
        self.ndl_supports_align_12
    }

    /// The live allocation behind `id`.
    #[must_use]
    pub fn get(&self, id: DmemId) -> Option<&DmemT> {
        match self.slot(id.index) {
            Some(Slot {
                generation,
                body: SlotBody::Live(mem),
                ..
            }) if *generation == id.generation => Some(mem),
            _ => None,
        }
    }

    /// Every live allocation, in arena order.
    #[must_use]
    pub fn live_allocations(&self) -> Vec<DmemId> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.body, SlotBody::Live(_)))
            .filter_map(|(i, s)| {
                Some(DmemId {
                    index: u32::try_from(i).ok()?,
                    generation: s.generation,
                })
            })
            .collect()
    }

    /// NC `nc`'s TPB allocator (`tpb->tpb_allocator`), while it exists.
    #[must_use]
    pub fn tpb_allocator(&self, nc: u32) -> Option<AllocatorId> {
        let a = *self.tpb_allocators.get(usize::try_from(nc).ok()?)?;
        self.allocator(a).map(|_| a)
    }

    /// The allocator's kind and NeuronCore.
    #[must_use]
    pub fn allocator_info(&self, a: AllocatorId) -> Option<(AllocatorKind, u32)> {
        self.allocator(a).map(|al| (al.kind, al.nc))
    }

    /// The allocations on an allocator's list, head to tail.
    #[must_use]
    pub fn allocator_members(&self, a: AllocatorId) -> Option<Vec<DmemId>> {
        let al = self.allocator(a)?;
        let mut out = Vec::new();
        let mut at = self.slot(al.dummy_head)?.next;
        while at != al.dummy_tail {
            let s = self.slot(at)?;
            out.push(DmemId {
                index: at,
                generation: s.generation,
            });
            at = s.next;
        }
        Some(out)
    }

    // ---- events -----------------------------------------------------------

    pub(crate) fn log(&mut self, level: LogLevel, message: impl Into<String>) {
        self.events.push(RuntimeEvent::Log {
            level,
            message: message.into(),
        });
    }

    pub(crate) fn trace_begin(&mut self, trace_type: SysTraceType) -> u64 {
        let tid = self.next_tid;
        self.next_tid += 1;
        self.events.push(RuntimeEvent::SysTrace {
            phase: TracePhase::Begin,
            trace_type,
            tid,
        });
        tid
    }

    pub(crate) fn trace_stop(&mut self, trace_type: SysTraceType, tid: u64) {
        self.events.push(RuntimeEvent::SysTrace {
            phase: TracePhase::Stop,
            trace_type,
            tid,
        });
    }

    // ---- arena and lists --------------------------------------------------

    fn slot(&self, i: u32) -> Option<&Slot> {
        self.slots.get(usize::try_from(i).ok()?)
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut Slot> {
        self.slots.get_mut(usize::try_from(i).ok()?)
    }

    pub(crate) fn get_mut(&mut self, id: DmemId) -> Option<&mut DmemT> {
        match self.slot_mut(id.index) {
            Some(Slot {
                generation,
                body: SlotBody::Live(mem),
                ..
            }) if *generation == id.generation => Some(mem),
            _ => None,
        }
    }

    fn allocator(&self, a: AllocatorId) -> Option<&DmemAllocator> {
        self.allocators
            .get(usize::try_from(a.0).ok()?)
            .and_then(Option::as_ref)
    }

    fn new_slot(&mut self, body: SlotBody) -> Result<u32, NrtStatus> {
        if let Some(i) = self.vacant.pop()
            && let Some(s) = self.slot_mut(i)
        {
            s.body = body;
            s.prev = NIL;
            s.next = NIL;
            return Ok(i);
        }
        let i = u32::try_from(self.slots.len())
            .ok()
            .filter(|&i| i != NIL)
            .ok_or(NrtStatus::Resource)?;
        self.slots.push(Slot {
            generation: 0,
            prev: NIL,
            next: NIL,
            body,
        });
        Ok(i)
    }

    /// Vacates a slot; its generation moves on so old ids go stale.
    fn release_slot(&mut self, i: u32) {
        if let Some(s) = self.slot_mut(i) {
            s.body = SlotBody::Vacant;
            s.prev = NIL;
            s.next = NIL;
            s.generation = s.generation.wrapping_add(1);
            self.vacant.push(i);
        }
    }

    /// The splice of tdrv-dmem §1: insert `i` before `dummy_tail`, set the
    /// back-pointer. O(1).
    fn list_append(&mut self, a: AllocatorId, i: u32) {
        let Some(tail) = self.allocator(a).map(|al| al.dummy_tail) else {
            return;
        };
        let Some(prev) = self.slot(tail).map(|s| s.prev) else {
            return;
        };
        if let Some(p) = self.slot_mut(prev) {
            p.next = i;
        }
        if let Some(s) = self.slot_mut(i) {
            s.prev = prev;
            s.next = tail;
            if let SlotBody::Live(mem) = &mut s.body {
                mem.allocator = Some(a);
            }
        }
        if let Some(t) = self.slot_mut(tail) {
            t.prev = i;
        }
    }

    /// The O(1) unlink of `dmem_free`. The C asserts both links are set
    /// (`dma_memory.c:0x29C/0x29D`); a missing link is reported and the
    /// list left alone.
    fn list_unlink(&mut self, i: u32) {
        let Some((prev, next)) = self.slot(i).map(|s| (s.prev, s.next)) else {
            return;
        };
        if prev == NIL || next == NIL {
            self.log(
                LogLevel::Error,
                "dmem_free: listed allocation has a NULL prev/next link (corrupted node)",
            );
            return;
        }
        if let Some(p) = self.slot_mut(prev) {
            p.next = next;
        }
        if let Some(n) = self.slot_mut(next) {
            n.prev = prev;
        }
        if let Some(s) = self.slot_mut(i) {
            s.prev = NIL;
            s.next = NIL;
        }
    }

    // ---- allocators -------------------------------------------------------

    /// `dmem_allocator_create` (@0x2284c0): an empty list bracketed by its
    /// two sentinels, owned by NeuronCore `nc`.
    ///
    /// # Errors
    ///
    /// NRT_INVALID for an NC the device does not have.
    pub fn dmem_allocator_create(
        &mut self,
        kind: AllocatorKind,
        nc: u32,
    ) -> Result<AllocatorId, NrtStatus> {
        if nc >= self.config.nc_count {
            self.log(LogLevel::Error, "Failed to get a valid Neuron Core");
            return Err(NrtStatus::Invalid);
        }
        let id =
            AllocatorId(u32::try_from(self.allocators.len()).map_err(|_| NrtStatus::Resource)?);
        let head = self.new_slot(SlotBody::Sentinel)?;
        let tail = self.new_slot(SlotBody::Sentinel)?;
        if let Some(h) = self.slot_mut(head) {
            h.next = tail;
        }
        if let Some(t) = self.slot_mut(tail) {
            t.prev = head;
        }
        self.allocators.push(Some(DmemAllocator {
            kind,
            nc,
            dummy_head: head,
            dummy_tail: tail,
        }));
        Ok(id)
    }

    /// `dmem_allocator_destroy`: unlinks every listed allocation **without
    /// freeing it** (tdrv-dmem §1 GOTCHA) — each keeps its kernel memory
    /// and its refcount, loses its allocator back-pointer and links — then
    /// drops the allocator. Returns what was still listed (the leaks, unless
    /// the owner frees them later), also recorded as a
    /// [`RuntimeEvent::Leaked`].
    ///
    /// # Errors
    ///
    /// NRT_INVALID for an unknown or already destroyed allocator.
    pub fn dmem_allocator_destroy(
        &mut self,
        a: AllocatorId,
    ) -> Result<Vec<LeakedAllocation>, NrtStatus> {
        let Some(members) = self.allocator_members(a) else {
            return Err(NrtStatus::Invalid);
        };
        let al = self
            .allocators
            .get_mut(usize::try_from(a.0).map_err(|_| NrtStatus::Invalid)?)
            .and_then(Option::take)
            .ok_or(NrtStatus::Invalid)?;
        let mut leaks = Vec::with_capacity(members.len());
        for id in members {
            if let Some(s) = self.slot_mut(id.index) {
                s.prev = NIL;
                s.next = NIL;
                if let SlotBody::Live(mem) = &mut s.body {
                    mem.allocator = None;
                    leaks.push(LeakedAllocation {
                        id,
                        size_bytes: mem.size_bytes,
                        allocated_size_bytes: mem.allocated_size_bytes,
                        pa: mem.pa,
                        mem_type: mem.mem_type,
                        usage: mem.usage,
                        hint: mem.hint.clone(),
                    });
                }
            }
        }
        self.release_slot(al.dummy_head);
        self.release_slot(al.dummy_tail);
        if !leaks.is_empty() {
            self.events.push(RuntimeEvent::Leaked {
                allocator: a,
                allocations: leaks.clone(),
            });
        }
        Ok(leaks)
    }

    // ---- allocation -------------------------------------------------------

    /// `dmem_alloc` (@0x228ed0): [`Dmem::dmem_alloc_internal`] with no
    /// alignment.
    ///
    /// # Errors
    ///
    /// As [`Dmem::dmem_alloc_internal`].
    #[allow(clippy::too_many_arguments)]
    pub fn dmem_alloc(
        &mut self,
        allocator: AllocatorId,
        size_bytes: u64,
        mem_type: MemLocation,
        tdram_channel: u32,
        ref_list: Option<&mut DmemList>,
        usage: UsageType,
        hint: Option<&str>,
    ) -> Result<DmemId, NrtStatus> {
        self.dmem_alloc_internal(
            allocator,
            size_bytes,
            0,
            mem_type,
            tdram_channel,
            ref_list,
            usage,
            hint,
        )
    }

    /// `dmem_alloc_aligned` (@0x228f20), tdrv-dmem §2: while the
    /// `ndl_supports_align_12` latch is set, ask the driver for an aligned
    /// allocation; if that fails with NRT_FAILURE (an old driver rejects the
    /// aligned API), log [`MSG_ALIGN_UNSUPPORTED`] once, clear the latch and
    /// fall back. The fallback over-allocates `size + alignment` unaligned,
    /// keeps the logical `size`, sets `align_offset` by
    /// [`fallback_align_offset`] and `allocated_size = size +
    /// align_offset`, all before the allocation is accounted, so DML's FREE
    /// undoes its ALLOC exactly (`docs/host-runtime.md` §4.4).
    ///
    /// # Errors
    ///
    /// As [`Dmem::dmem_alloc_internal`]; NRT_INVALID when `size +
    /// alignment` overflows.
    #[allow(clippy::too_many_arguments)]
    pub fn dmem_alloc_aligned(
        &mut self,
        allocator: AllocatorId,
        size_bytes: u64,
        mem_type: MemLocation,
        tdram_channel: u32,
        mut ref_list: Option<&mut DmemList>,
        usage: UsageType,
        hint: Option<&str>,
        alignment: u64,
    ) -> Result<DmemId, NrtStatus> {
        if self.ndl_supports_align_12 {
            match self.dmem_alloc_internal(
                allocator,
                size_bytes,
                alignment,
                mem_type,
                tdram_channel,
                ref_list.as_deref_mut(),
                usage,
                hint,
            ) {
                Ok(id) => return Ok(id),
                Err(NrtStatus::Failure) => {
                    self.log(LogLevel::Warn, MSG_ALIGN_UNSUPPORTED);
                    self.ndl_supports_align_12 = false;
                }
                Err(e) => return Err(e),
            }
        }
        let Some(total) = size_bytes.checked_add(alignment) else {
            return Err(NrtStatus::Invalid);
        };
        let manual = (alignment != 0).then_some(ManualAlign {
            size_bytes,
            alignment,
        });
        self.alloc_internal(
            allocator,
            total,
            0,
            mem_type,
            tdram_channel,
            ref_list,
            usage,
            hint,
            manual,
        )
    }

    /// `dmem_alloc_internal` (@0x228640), every step of tdrv-dmem §2 in
    /// order: resolve the core; trace begin (34); project the usage to the
    /// category byte (sentinel 20 → NRT_INVALID "Invalid mem_usage_type %d
    /// for host/device", returned without a trace stop as the seed shows);
    /// `ndl_memory_alloc` (on failure: trace stop, and on ENOMEM the DML
    /// dump, then for host NRT_FAIL_HOST_MEM_ALLOC, for device the aligned
    /// hint (if `align`) and the OOM report, NRT_RESOURCE; other errors
    /// NRT_FAILURE); `ndl_memory_get_pa`; populate (refcount 1, hint
    /// copied); cache the core's bounce buffer; DML ALLOC, NDS, ntrace,
    /// `MEM_USAGE`; trace stop; splice before `dummy_tail`; append to
    /// `ref_list`.
    ///
    /// Where the seed leaks on a late failure (no PA, no bounce buffer) the
    /// kernel allocation is freed here and the trace bracket closed.
    ///
    /// # Errors
    ///
    /// The NRT status of the failing step, as above.
    #[allow(clippy::too_many_arguments)]
    pub fn dmem_alloc_internal(
        &mut self,
        allocator: AllocatorId,
        size_bytes: u64,
        align_bytes: u64,
        mem_type: MemLocation,
        tdram_channel: u32,
        ref_list: Option<&mut DmemList>,
        usage: UsageType,
        hint: Option<&str>,
    ) -> Result<DmemId, NrtStatus> {
        self.alloc_internal(
            allocator,
            size_bytes,
            align_bytes,
            mem_type,
            tdram_channel,
            ref_list,
            usage,
            hint,
            None,
        )
    }

    /// [`Dmem::dmem_alloc_internal`], and for `dmem_alloc_aligned`'s
    /// fallback the manual alignment applied once the PA is known and
    /// before anything is accounted: logical `size`, `align_offset` by
    /// [`fallback_align_offset`] and `allocated_size = size + align_offset`
    /// (`docs/host-runtime.md` §4.4), so DML, ntrace, NDS and `MEM_USAGE`
    /// count what the runtime can address from the aligned base.
    #[allow(clippy::too_many_arguments)]
    fn alloc_internal(
        &mut self,
        allocator: AllocatorId,
        size_bytes: u64,
        align_bytes: u64,
        mem_type: MemLocation,
        tdram_channel: u32,
        ref_list: Option<&mut DmemList>,
        usage: UsageType,
        hint: Option<&str>,
        manual: Option<ManualAlign>,
    ) -> Result<DmemId, NrtStatus> {
        let Some(nc) = self.allocator(allocator).map(|a| a.nc) else {
            self.log(LogLevel::Error, "Failed to get a valid Neuron Core");
            return Err(NrtStatus::Invalid);
        };
        let tid = self.trace_begin(SysTraceType::Alloc);

        // (1) usage → category byte; 20 = invalid for this location.
        let Some(category) = category_for(mem_type, usage) else {
            let loc = match mem_type {
                MemLocation::HostDram => "host",
                MemLocation::TongaDram => "device",
            };
            self.log(
                LogLevel::Error,
                format!("Invalid mem_usage_type {} for {loc}", usage.raw()),
            );
            return Err(NrtStatus::Invalid);
        };

        // (2) the handle: an arena slot, taken at step (8). (3) the kernel
        // allocation.
        let host_memory = mem_type == MemLocation::HostDram;
        let handle = match self.ndl.ndl_memory_alloc(
            size_bytes,
            align_bytes,
            host_memory,
            tdram_channel,
            0,
            nc,
            category,
        ) {
            Ok(h) => h,
            Err(e) => {
                self.trace_stop(SysTraceType::Alloc, tid);
                return Err(self.report_alloc_failure(
                    &e,
                    nc,
                    size_bytes,
                    align_bytes,
                    mem_type,
                    tdram_channel,
                    usage,
                ));
            }
        };

        // (4) physical address.
        let pa = match self.ndl.ndl_memory_get_pa(handle) {
            Ok(pa) => pa,
            Err(e) => {
                self.log(LogLevel::Error, "Failed to get the phys address");
                let _ = self.ndl.ndl_memory_free(handle);
                self.trace_stop(SysTraceType::Alloc, tid);
                return Err(alloc_error_status(&e, mem_type));
            }
        };

        // (6) the core's bounce buffer (no syscall).
        let cpy_buf = match self.ndl.ndl_get_copy_buf(nc) {
            Ok(b) => b,
            Err(_) => {
                self.log(
                    LogLevel::Error,
                    format!("Failed to get copy buffer for nc {nc}"),
                );
                let _ = self.ndl.ndl_memory_free(handle);
                self.trace_stop(SysTraceType::Alloc, tid);
                return Err(NrtStatus::Failure);
            }
        };

        // (5) populate; the fallback's manual alignment.
        let (logical_size, align_offset) = match manual {
            Some(m) => (m.size_bytes, fallback_align_offset(pa, m.alignment)),
            None => (size_bytes, 0),
        };
        let mem = DmemT {
            nc,
            mem_handle: handle,
            size_bytes: logical_size,
            pa,
            va: None,
            align_offset_bytes: align_offset,
            allocated_size_bytes: logical_size.saturating_add(align_offset),
            mem_type,
            usage,
            tdram_channel,
            ref_count: 1,
            hint: hint.map(str::to_owned),
            cpy_buf: Some(cpy_buf),
            allocator: None,
        };

        let index = match self.new_slot(SlotBody::Live(Box::new(mem.clone()))) {
            Ok(i) => i,
            Err(status) => {
                let _ = self.ndl.ndl_memory_free(handle);
                self.trace_stop(SysTraceType::Alloc, tid);
                return Err(status);
            }
        };

        // (7) accounting.
        self.account(&mem, DmemAction::Alloc);
        self.trace_stop(SysTraceType::Alloc, tid);

        // (8) splice, GC list.
        self.list_append(allocator, index);
        let id = DmemId {
            index,
            generation: self.slot(index).map_or(0, |s| s.generation),
        };
        if let Some(list) = ref_list {
            list.entries.push(id);
        }
        Ok(id)
    }

    /// Step (7) of alloc / the matching part of free: DML, NDS, ntrace and
    /// the `MEM_USAGE` line.
    fn account(&mut self, mem: &DmemT, action: DmemAction) {
        let kind = match action {
            DmemAction::Alloc => MemEventKind::Alloc,
            DmemAction::Free => MemEventKind::Free,
        };
        let ntrace = RuntimeEvent::Ntrace {
            kind,
            allocated_size_bytes: mem.allocated_size_bytes,
            idx: self.config.device_index,
            hint: mem.hint.clone(),
        };
        // The free path records the trace event first, then DML and NDS;
        // the alloc path DML, NDS, then the trace event
        // (`docs/host-runtime.md` §4.4, §4.8).
        if action == DmemAction::Free {
            self.events.push(ntrace.clone());
        }
        if self.logger.add_entry(&mem.dml_input(), action).is_err() {
            let msg = match action {
                DmemAction::Alloc => "Failed to add entry to dmem log",
                DmemAction::Free => "Failed to add entry to dmem logger",
            };
            self.log(LogLevel::Error, msg);
        }
        if self.config.enable_metrics {
            self.events.push(RuntimeEvent::Nds {
                kind,
                device: self.config.device_index,
                nc: mem.nc,
                usage: mem.usage,
                mem_type: mem.mem_type,
                allocated_size_bytes: mem.allocated_size_bytes,
            });
        }
        if action == DmemAction::Alloc {
            self.events.push(ntrace);
        }
        // The alloc line carries the hint (NULL prints "(null)"), the free
        // line does not.
        let hint = match action {
            DmemAction::Alloc => Some(mem.hint.as_deref().unwrap_or("(null)")),
            DmemAction::Free => None,
        };
        let line = self.logger.mem_usage_line(
            mem.allocated_size_bytes,
            mem.tdram_channel,
            self.config.hbm_capacity_bytes,
            hint,
        );
        self.events.push(RuntimeEvent::MemUsage { line });
    }

    /// The failure branch of step (3).
    #[allow(clippy::too_many_arguments)]
    fn report_alloc_failure(
        &mut self,
        e: &IoctlError,
        nc: u32,
        size_bytes: u64,
        align_bytes: u64,
        mem_type: MemLocation,
        tdram_channel: u32,
        usage: UsageType,
    ) -> NrtStatus {
        if errno_of(e) != Some(Errno::ENOMEM) {
            return NrtStatus::Failure;
        }
        let text = self.logger.dump();
        self.events.push(RuntimeEvent::DmlDump { text });
        match mem_type {
            MemLocation::HostDram => {
                // dml_log_host_mem: the seed names the call, not its text;
                // this line is the simulator's.
                self.log(
                    LogLevel::Error,
                    format!(
                        "Failed to allocate {} of host memory (usage: {})",
                        dml::human_readable_byte_size(size_bytes),
                        dml::usage_human_name(usage)
                    ),
                );
                NrtStatus::FailHostMemAlloc
            }
            MemLocation::TongaDram => {
                // dml_driver_dump(device, channel) asks the driver to print
                // its pool state; the simulated driver has no such call.
                if align_bytes != 0 {
                    self.log(LogLevel::Error, MSG_ALIGNED_OOM_HINT);
                }
                let text = self.logger.log_dev_mem(
                    self.config.device_index,
                    nc,
                    tdram_channel,
                    size_bytes,
                    align_bytes,
                    usage,
                    self.config.hbm_capacity_bytes,
                );
                self.events.push(RuntimeEvent::OomReport { text });
                NrtStatus::Resource
            }
        }
    }

    /// `dmem_alloc_contiguous_scratchpad_page` (@0x229080), tdrv-dmem §2: a
    /// contiguous scratchpad page straight from NDL (category 19 on the
    /// core's default HBM), typed TONGA_DRAM/SCRATCHPAD with the one 8-byte
    /// store [`SCRATCHPAD_PAGE_TYPE_WORD`], accounted in DML, and spliced
    /// into **the core's TPB allocator**, not a caller's (QUIRK). No trace
    /// bracket, no bounce buffer (`cpy_buf` stays NULL, so staged copies to
    /// it fail), no hint.
    ///
    /// # Errors
    ///
    /// NRT_INVALID for a core without a TPB allocator; NRT_RESOURCE on
    /// ENOMEM; NRT_FAILURE otherwise (including a failed PA lookup, which
    /// the seed ignores).
    pub fn dmem_alloc_contiguous_scratchpad_page(
        &mut self,
        nc: u32,
        size_bytes: u64,
    ) -> Result<DmemId, NrtStatus> {
        let Some(tpb_allocator) = self.tpb_allocator(nc) else {
            self.log(LogLevel::Error, "Failed to get a valid Neuron Core");
            return Err(NrtStatus::Invalid);
        };
        let hbm = default_hbm_index(nc);
        let handle = self
            .ndl
            .ndl_alloc_contiguous_scratchpad(size_bytes, hbm, nc)
            .map_err(|e| {
                if errno_of(&e) == Some(Errno::ENOMEM) {
                    NrtStatus::Resource
                } else {
                    NrtStatus::Failure
                }
            })?;
        let pa = match self.ndl.ndl_memory_get_pa(handle) {
            Ok(pa) => pa,
            Err(_) => {
                self.log(LogLevel::Error, "Failed to get the phys address");
                let _ = self.ndl.ndl_memory_free(handle);
                return Err(NrtStatus::Failure);
            }
        };
        let (Some(mem_type), Some(usage)) = split_type_word(SCRATCHPAD_PAGE_TYPE_WORD) else {
            return Err(NrtStatus::Failure);
        };
        let mem = DmemT {
            nc,
            mem_handle: handle,
            size_bytes,
            pa,
            va: None,
            align_offset_bytes: 0,
            allocated_size_bytes: size_bytes,
            mem_type,
            usage,
            tdram_channel: hbm,
            ref_count: 1,
            hint: None,
            cpy_buf: None,
            allocator: None,
        };
        let entry = mem.dml_input();
        let index = match self.new_slot(SlotBody::Live(Box::new(mem))) {
            Ok(i) => i,
            Err(status) => {
                let _ = self.ndl.ndl_memory_free(handle);
                return Err(status);
            }
        };
        if self.logger.add_entry(&entry, DmemAction::Alloc).is_err() {
            self.log(LogLevel::Error, "Failed to add entry to dmem log");
        }
        if self.config.enable_metrics {
            self.events.push(RuntimeEvent::Nds {
                kind: MemEventKind::Alloc,
                device: self.config.device_index,
                nc,
                usage,
                mem_type,
                allocated_size_bytes: size_bytes,
            });
        }
        self.list_append(tpb_allocator, index);
        Ok(DmemId {
            index,
            generation: self.slot(index).map_or(0, |s| s.generation),
        })
    }

    // ---- free, references, GC lists ---------------------------------------

    /// `dmem_free` (@0x2293a0), tdrv-dmem §4: drop a reference; on the last
    /// one, trace begin (35), unmap if mapped ("Failed to unmap
    /// allocation! %s"), free the kernel allocation (always; its result is
    /// ignored as in the seed), ntrace, DML FREE, NDS, `MEM_USAGE`, unlink
    /// from the allocator (O(1), via the back-pointer, if still listed),
    /// trace stop, and vacate the handle.
    ///
    /// # Errors
    ///
    /// NRT_INVALID when `id` is not live — a double free (or a never
    /// issued id), diagnosed with a [`RuntimeEvent::DoubleFree`].
    pub fn dmem_free(&mut self, id: DmemId) -> Result<(), NrtStatus> {
        let Some(mem) = self.get_mut(id) else {
            self.events.push(RuntimeEvent::DoubleFree { id });
            self.log(
                LogLevel::Error,
                format!("dmem_free: {id} is not a live allocation (double free?)"),
            );
            return Err(NrtStatus::Invalid);
        };
        mem.ref_count = mem.ref_count.saturating_sub(1);
        if mem.ref_count != 0 {
            return Ok(());
        }
        let mem = match self
            .slot_mut(id.index)
            .map(|s| std::mem::replace(&mut s.body, SlotBody::Vacant))
        {
            Some(SlotBody::Live(mem)) => mem,
            _ => return Err(NrtStatus::Invalid),
        };
        let tid = self.trace_begin(SysTraceType::Free);
        if mem.va.is_some() && self.ndl.ndl_memory_unmap(mem.mem_handle).is_err() {
            self.log(
                LogLevel::Error,
                format!(
                    "Failed to unmap allocation! {}",
                    mem.hint.as_deref().unwrap_or("(null)")
                ),
            );
        }
        let _ = self.ndl.ndl_memory_free(mem.mem_handle);
        self.account(&mem, DmemAction::Free);
        if mem.allocator.is_some() {
            self.list_unlink(id.index);
        }
        self.trace_stop(SysTraceType::Free, tid);
        self.release_slot(id.index);
        Ok(())
    }

    /// `dmem_acquire_reference`: one more holder; the allocation survives
    /// until every holder has called [`Dmem::dmem_free`].
    ///
    /// # Errors
    ///
    /// NRT_INVALID when `id` is not live.
    pub fn dmem_acquire_reference(&mut self, id: DmemId) -> Result<(), NrtStatus> {
        match self.get_mut(id) {
            Some(mem) => {
                mem.ref_count = mem.ref_count.saturating_add(1);
                Ok(())
            }
            None => {
                self.log(
                    LogLevel::Error,
                    format!("dmem_acquire_reference: {id} is not a live allocation"),
                );
                Err(NrtStatus::Invalid)
            }
        }
    }

    /// `dmem_list_add` (@0x2285c0): append `mem` to a GC list. The list
    /// holds whatever reference the caller gives it (take one with
    /// [`Dmem::dmem_acquire_reference`] to share).
    ///
    /// # Errors
    ///
    /// NRT_INVALID when `mem` is not live.
    pub fn dmem_list_add(&self, list: &mut DmemList, mem: DmemId) -> Result<(), NrtStatus> {
        if self.get(mem).is_none() {
            return Err(NrtStatus::Invalid);
        }
        list.entries.push(mem);
        Ok(())
    }

    /// `dmem_list_free` (@0x229750): `dmem_free` every entry in order (each
    /// drops one reference) and empty the list. Failures (double frees)
    /// are recorded as events and do not stop the walk.
    pub fn dmem_list_free(&mut self, list: &mut DmemList) {
        for id in std::mem::take(&mut list.entries) {
            let _ = self.dmem_free(id);
        }
    }

    /// `dmem_mmap`: map the allocation into the process; returns the
    /// aligned mapping key (`DMEM_GET_VA`: `_va + align_offset`). In the
    /// simulation the mapping key is the PA (mmap offset == PA).
    ///
    /// # Errors
    ///
    /// NRT_INVALID when `id` is not live; NRT_FAILURE when the map fails.
    pub fn dmem_mmap(&mut self, id: DmemId) -> Result<u64, NrtStatus> {
        let Some(mem) = self.get(id) else {
            return Err(NrtStatus::Invalid);
        };
        let (handle, va, align_offset) = (mem.mem_handle, mem.va, mem.align_offset_bytes);
        let va = match va {
            Some(va) => va,
            None => {
                let va = self
                    .ndl
                    .ndl_memory_map(handle)
                    .map_err(|_| NrtStatus::Failure)?;
                if let Some(mem) = self.get_mut(id) {
                    mem.va = Some(va);
                }
                va
            }
        };
        Ok(va.wrapping_add(align_offset))
    }

    /// `dmem_get_memory_stats`: NC `nc`'s DML counters and its HBM's total.
    ///
    /// # Errors
    ///
    /// NRT_INVALID for an NC the device does not have.
    pub fn dmem_get_memory_stats(&self, nc: u32) -> Result<DmemMemoryStats, NrtStatus> {
        if nc >= self.config.nc_count {
            return Err(NrtStatus::Invalid);
        }
        let hbm_index = default_hbm_index(nc);
        let mut usage_bytes = [0u64; USAGE_TYPES];
        for (col, v) in usage_bytes.iter_mut().enumerate() {
            *v = self.logger.memory_usage_nc(nc, col).unwrap_or(0);
        }
        Ok(DmemMemoryStats {
            nc,
            hbm_index,
            usage_bytes,
            nc_total_bytes: self
                .logger
                .memory_usage_nc(nc, dml::NC_TOTAL_COLUMN)
                .unwrap_or(0),
            hbm_used_bytes: self.logger.memory_usage(hbm_index).unwrap_or(0),
            hbm_capacity_bytes: self.config.hbm_capacity_bytes,
        })
    }
}
