//! The host runtime's device-memory allocator (libnrt `tdrv/dma_memory.c`,
//! tdrv-dmem) and its NDL ioctl layer (docs/references/design.md §3, L5: talks only to
//! `ioctl-abi` and `ioctl-bus`).
//!
//! * [`ndl`] — the NDL leaves: one ioctl each (MEM_ALLOC_V2 mem_type64,
//!   MEM_GET_PA, MEM_FREE, MEM_COPY_ASYNC64 and its wait, MEM_BUF_COPY64,
//!   MEM_BUF_ZEROCOPY64, the batch copy), plus the per-NC bounce buffers.
//! * [`Dmem`] — the runtime: allocators with sentinel-bracketed lists,
//!   `dmem_alloc*`, `dmem_free`, references and GC lists, the copy
//!   chokepoints and the staged double-buffered `dmem_device_copy`, batch
//!   copies, memory statistics; every trace bracket, log line and
//!   diagnostic is a [`RuntimeEvent`].
//! * [`dml`] — the usage counters, event ring and OOM report.
//! * [`layout`] — the C layouts of `dmem_t` and `dmem_allocator_t`.
//! * [`types`] — usage types, locations, the usage → category tables, NRT
//!   status codes.

mod copy;
pub mod dml;
pub mod event;
pub mod layout;
pub mod ndl;
mod runtime;
pub mod types;

#[cfg(test)]
mod fake_driver;
#[cfg(test)]
mod tests;

pub use copy::{
    BatchOp, CopyPlan, LARGE_CHUNK_BYTES, LARGE_COPY_MIN_EXCLUSIVE_BYTES, SINGLE_PASS_CHUNK_BYTES,
    SINGLE_PASS_MAX_BYTES, TensorBatch, WAIT_NONE, WAIT_SYNC, device_copy_plan,
};
pub use event::{
    AllocatorId, DmemId, LeakedAllocation, LogLevel, MemEventKind, RuntimeEvent, SysTraceType,
    TracePhase,
};
pub use layout::{DMEM_ALLOCATOR_T_LAYOUT, DMEM_T_BYTES, DMEM_T_LAYOUT, FieldLayout};
pub use ndl::{CopyBuf, Ndl, NdlHandle};
pub use runtime::{
    AllocatorKind, Dmem, DmemConfig, DmemList, DmemMemoryStats, DmemT, MSG_ALIGN_UNSUPPORTED,
    MSG_ALIGNED_OOM_HINT, SCRATCHPAD_PAGE_TYPE_WORD, TRN2_HBM_CAPACITY_BYTES, TRN2_NC_COUNT,
    alloc_error_status, default_hbm_index, fallback_align_offset, split_type_word,
};
pub use types::{DmemAction, MemLocation, NrtStatus, USAGE_TYPES, UsageType, category_for};
