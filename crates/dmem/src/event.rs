//! What the runtime reports while it works (tdrv-dmem throughout): the
//! sys-trace brackets, the `nlog` messages as text, `MEM_USAGE` lines, the
//! DML dump and OOM report, the ntrace/NDS records, and the diagnostics
//! this simulator adds (leaks at allocator destroy, double frees).
//!
//! Events are appended in order to the runtime's list; the caller drains
//! them ([`crate::Dmem::drain_events`]).

use serde::Serialize;

use crate::types::{MemLocation, UsageType};

/// An allocation handle in the runtime's arena: slot index plus the slot's
/// generation, so a handle that outlived its allocation is recognised.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub struct DmemId {
    /// Arena slot.
    pub index: u32,
    /// Generation of the slot when the handle was issued.
    pub generation: u32,
}

impl std::fmt::Display for DmemId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dmem#{}.{}", self.index, self.generation)
    }
}

/// An allocator (`dmem_allocator_t`) handle.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub struct AllocatorId(pub u32);

/// `nrt_sys_trace_new_event` event types this layer emits (tdrv-dmem §2–§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum SysTraceType {
    /// 30: host → device copy (`dmem_buf_copyin`, batch copy-in).
    CopyIn = 30,
    /// 31: device → host copy (`dmem_buf_copyout`, batch copy-out).
    CopyOut = 31,
    /// 34: `dmem_alloc_internal`.
    Alloc = 34,
    /// 35: `dmem_free`.
    Free = 35,
}

impl SysTraceType {
    /// The numeric event type.
    #[must_use]
    pub const fn code(self) -> u32 {
        self as u32
    }
}

/// Begin or stop of a sys-trace bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum TracePhase {
    Begin,
    Stop,
}

/// `nlog` severity.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Trace,
}

/// Alloc or free, for the ntrace and NDS records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum MemEventKind {
    /// `NTRACE_DATA_TYPE_MEM_ALLOC` / `tdrv_nds_register_mem_alloc`.
    Alloc,
    /// `NTRACE_DATA_TYPE_MEM_FREE` / `tdrv_nds_register_mem_free`.
    Free,
}

/// One allocation still on an allocator's list when it was destroyed
/// (tdrv-dmem §1 GOTCHA: destroy unlinks, it does not free).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LeakedAllocation {
    /// The allocation (still live; the owner must `dmem_free` it).
    pub id: DmemId,
    /// Logical size.
    pub size_bytes: u64,
    /// What the kernel allocated.
    pub allocated_size_bytes: u64,
    /// Device physical address.
    pub pa: u64,
    /// Where it lives.
    pub mem_type: MemLocation,
    /// What it is for.
    pub usage: UsageType,
    /// The debug hint.
    pub hint: Option<String>,
}

/// Something the runtime did or said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum RuntimeEvent {
    /// `nrt_sys_trace_new_event(begin|stop, type, tid)`.
    SysTrace {
        phase: TracePhase,
        trace_type: SysTraceType,
        tid: u64,
    },
    /// An `nlog` message, verbatim from the seed where it names one.
    Log { level: LogLevel, message: String },
    /// The `nlog_TRACE` `MEM_USAGE: …` line of every alloc and free.
    MemUsage { line: String },
    /// `dml_dump` output (on ENOMEM).
    DmlDump { text: String },
    /// `dml_log_dev_mem` output: the device OOM report.
    OomReport { text: String },
    /// `ntrace_record_event(MEM_ALLOC|MEM_FREE, allocated_size, idx, hint)`.
    Ntrace {
        kind: MemEventKind,
        allocated_size_bytes: u64,
        idx: u32,
        hint: Option<String>,
    },
    /// `tdrv_nds_register_mem_alloc/free` (only with `enable_metrics`).
    Nds {
        kind: MemEventKind,
        device: u32,
        nc: u32,
        usage: UsageType,
        mem_type: MemLocation,
        allocated_size_bytes: u64,
    },
    /// `dmem_allocator_destroy` found live allocations on the list.
    Leaked {
        allocator: AllocatorId,
        allocations: Vec<LeakedAllocation>,
    },
    /// `dmem_free` named an allocation that is not live (freed already, or
    /// never issued). The C asserts or corrupts memory; here it is a
    /// diagnostic and an `NRT_INVALID` return.
    DoubleFree { id: DmemId },
}
