//! Memory ioctls: allocation, handle queries, free, copies, memset, buffer
//! copies and zero-copy batches (docs/references/driver.md §1.4).
//!
//! "Handle" fields carry the driver's memory handle; "user pointer" fields
//! carry a user-space address the handler reads from or writes to.

use zerocopy::little_endian::{I32, U16, U32, U64};

use super::abi_struct;

abi_struct! {
    /// `MEM_ALLOC` (nr 21, legacy v1): allocate host or device memory.
    pub struct MemAlloc: 32 {
        /// Bytes to allocate (rounded up to 4 KiB).
        0 size: U64,
        /// 1 = host memory, 0 = device memory.
        8 host_memory: U32,
        /// HBM channel (newer drivers: `hbm_index`).
        12 dram_channel: U32,
        /// DRAM region (forced to 0; newer drivers: unused).
        16 dram_region: U32,
        /// NeuronCore the allocation belongs to.
        20 nc_id: U32,
        /// User pointer to a u64 that receives the handle (out).
        24 mem_handle: U64,
    }
}

abi_struct! {
    /// `MEM_ALLOC_V2` (nr 102, encoded size 8): allocation with alignment.
    pub struct MemAllocV2: 40 {
        /// Bytes to allocate (rounded up to 4 KiB).
        0 size: U64,
        /// Alignment in bytes (must be 0 for host memory).
        8 align: U64,
        /// 1 = host memory, 0 = device memory.
        16 host_memory: U32,
        /// HBM channel (newer drivers: `hbm_index`).
        20 dram_channel: U32,
        /// DRAM region (forced to 0).
        24 dram_region: U32,
        /// NeuronCore the allocation belongs to.
        28 nc_id: U32,
        /// User pointer to a u64 that receives the handle (out).
        32 mem_handle: U64,
    }
}

abi_struct! {
    /// `MEM_ALLOC_V2MT` (nr 102, 48 B): allocation with a memory category.
    pub struct MemAllocV2MemType: 48 {
        /// Bytes to allocate (rounded up to 4 KiB).
        0 size: U64,
        /// Alignment in bytes (must be 0 for host memory).
        8 align: U64,
        /// 1 = host memory, 0 = device memory.
        16 host_memory: U32,
        /// HBM channel.
        20 dram_channel: U32,
        /// DRAM region (forced to 0).
        24 dram_region: U32,
        /// NeuronCore the allocation belongs to.
        28 nc_id: U32,
        /// Memory category (`MemAllocCategory`).
        32 mem_type: U32,
        /// Padding before the pointer.
        36 _pad0: [u8; 4],
        /// User pointer to a u64 that receives the handle (out).
        40 mem_handle: U64,
    }
}

abi_struct! {
    /// `MEM_ALLOC_V2MT64` (nr 102, 56 B, 0x80384E66): the allocation tdrv-dmem
    /// issues; the extra field only makes the size (the number) differ,
    /// signalling sizes of 4 GiB and more.
    pub struct MemAllocV2MemType64: 56 {
        /// Bytes to allocate (rounded up to 4 KiB).
        0 size: U64,
        /// Alignment in bytes (must be 0 for host memory).
        8 align: U64,
        /// 1 = host memory, 0 = device memory.
        16 host_memory: U32,
        /// HBM channel.
        20 dram_channel: U32,
        /// DRAM region (forced to 0).
        24 dram_region: U32,
        /// NeuronCore the allocation belongs to.
        28 nc_id: U32,
        /// Memory category (`MemAllocCategory`).
        32 mem_type: U32,
        /// Padding before the pointer.
        36 _pad0: [u8; 4],
        /// User pointer to a u64 that receives the handle (out).
        40 mem_handle: U64,
        /// Discriminator field (named `pad` by the driver); not read.
        48 pad: U32,
        /// Tail padding.
        52 _pad1: [u8; 4],
    }
}

abi_struct! {
    /// `MEM_ALLOC_V2MT64_PA` (nr 102, 64 B, newer drivers): as
    /// `MemAllocV2MemType64`, and the physical address is returned too.
    pub struct MemAllocV2MemType64Pa: 64 {
        /// Bytes to allocate (rounded up to 4 KiB).
        0 size: U64,
        /// Alignment in bytes (must be 0 for host memory).
        8 align: U64,
        /// 1 = host memory, 0 = device memory.
        16 host_memory: U32,
        /// HBM channel.
        20 dram_channel: U32,
        /// DRAM region (forced to 0).
        24 dram_region: U32,
        /// NeuronCore the allocation belongs to.
        28 nc_id: U32,
        /// Memory category (`MemAllocCategory`).
        32 mem_type: U32,
        /// Padding before the pointer.
        36 _pad0: [u8; 4],
        /// User pointer to a u64 that receives the handle (out).
        40 mem_handle: U64,
        /// Discriminator field (named `pad` by the driver); not read.
        48 pad: U32,
        /// Padding before `pa`.
        52 _pad1: [u8; 4],
        /// Physical address of the allocation (out).
        56 pa: U64,
    }
}

abi_struct! {
    /// `MEM_GET_PA` (nr 25): physical address of a handle.
    pub struct MemGetPa: 16 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User pointer to a u64 that receives the PA (host memory: host bit set) (out).
        8 pa: U64,
    }
}

abi_struct! {
    /// `MEM_GET_INFO` (nr 26): mmap offset and physical address of a handle.
    pub struct MemGetInfo: 24 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User pointer to a u64 that receives the mmap offset (out).
        8 mmap_offset: U64,
        /// User pointer to a u64 that receives the PA (out).
        16 pa: U64,
    }
}

abi_struct! {
    /// `MEM_GET_EXTENDED_INFO` (nr 29): everything about a handle, in place.
    pub struct MemGetExtendedInfo: 48 {
        /// Memory handle (driver 2.24 overwrites it with a kernel pointer on return).
        0 mem_handle: U64,
        /// Struct version; 1.
        8 version: U32,
        /// 1 = host memory (out).
        12 host_memory: U32,
        /// mmap offset (out).
        16 mmap_offset: U64,
        /// Physical address (out).
        24 pa: U64,
        /// Owning process id (out).
        32 pid: U64,
        /// Allocation size (out).
        40 size: U64,
    }
}

abi_struct! {
    /// `MEM_FREE` (nr 22, 0x80084E16): drop a reference to a handle.
    pub struct MemFree: 8 {
        /// Memory handle.
        0 mem_handle: U64,
    }
}

abi_struct! {
    /// `MEM_COPY` (nr 23, encoded size 8): synchronous device copy, 32-bit sizes.
    pub struct MemCopy: 32 {
        /// Source memory handle.
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// Bytes to copy.
        16 size: U32,
        /// Offset into the source.
        20 src_offset: U32,
        /// Offset into the destination.
        24 dst_offset: U32,
        /// Tail padding.
        28 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `MEM_COPY64_DEPRECATED` (nr 23, 40 B): 64-bit sizes; driver 2.24 calls
    /// this one `MEM_COPY64`.
    pub struct MemCopy64Deprecated: 40 {
        /// Source memory handle.
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the source.
        24 src_offset: U64,
        /// Offset into the destination.
        32 dst_offset: U64,
    }
}

abi_struct! {
    /// `MEM_COPY64` (nr 23, 56 B, newer drivers): adds an async sequence
    /// number and a user context.
    pub struct MemCopy64: 56 {
        /// Source memory handle.
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the source.
        24 src_offset: U64,
        /// Offset into the destination.
        32 dst_offset: U64,
        /// Completion sequence number (0 = synchronous).
        40 sequence_num: U64,
        /// User context returned in the completion (user pointer).
        48 context: U64,
    }
}

abi_struct! {
    /// `MEM_COPY_ASYNC` (nr 108, 48 B, 0xC0304E6C): asynchronous copy,
    /// 32-bit sizes.
    pub struct MemCopyAsync: 48 {
        /// Source memory handle.
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// Bytes to copy.
        16 size: U32,
        /// Offset into the source.
        20 src_offset: U32,
        /// Offset into the destination.
        24 dst_offset: U32,
        /// Padding before the u64.
        28 _pad0: [u8; 4],
        /// User address range to prefault (0 = none).
        32 host_prefetch_addr: U64,
        /// Previous transfer's wait handle (in; 0xFFFFFFFF = none).
        40 pwait_handle: U32,
        /// This transfer's wait handle (out; `H2tCtxHandleType`).
        44 wait_handle: U32,
    }
}

abi_struct! {
    /// `MEM_COPY_ASYNC64` (nr 108, 56 B, 0xC0384E6C): asynchronous copy,
    /// 64-bit sizes; the copy tdrv-dmem issues (it calls it MEM_COPY_ASYNC).
    pub struct MemCopyAsync64: 56 {
        /// Source memory handle.
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the source.
        24 src_offset: U64,
        /// Offset into the destination.
        32 dst_offset: U64,
        /// User address range to prefault (0 = none).
        40 host_prefetch_addr: U64,
        /// Previous transfer's wait handle (in; 0xFFFFFFFF = none).
        48 pwait_handle: U32,
        /// This transfer's wait handle (out; `H2tCtxHandleType`).
        52 wait_handle: U32,
    }
}

abi_struct! {
    /// `MEM_COPY_ASYNC_WAIT` (nr 109): wait for an async copy.
    pub struct MemCopyAsyncWait: 24 {
        /// Source memory handle (selects the H2T ring).
        0 src_mem_handle: U64,
        /// Destination memory handle.
        8 dst_mem_handle: U64,
        /// The handle to wait for: ASYNC1 (1) or ASYNC2 (2), else EINVAL.
        16 pwait_handle: U32,
        /// Tail padding.
        20 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `MEMSET` (nr 28, encoded size 8): fill with a byte value, 32-bit size.
    pub struct Memset: 24 {
        /// Memory handle.
        0 mem_handle: U64,
        /// Offset into the allocation.
        8 offset: U64,
        /// Byte value (low 8 bits used).
        16 value: U32,
        /// Bytes to fill.
        20 size: U32,
    }
}

abi_struct! {
    /// `MEMSET64` (nr 28, 32 B): fill with a byte value, 64-bit size.
    pub struct Memset64: 32 {
        /// Memory handle.
        0 mem_handle: U64,
        /// Offset into the allocation.
        8 offset: U64,
        /// Byte value (low 8 bits used).
        16 value: U32,
        /// Padding before the u64.
        20 _pad0: [u8; 4],
        /// Bytes to fill.
        24 size: U64,
    }
}

abi_struct! {
    /// `MEM_BUF_COPY` (nr 24, encoded size 8): copy between a user buffer
    /// and a handle, either way, 32-bit sizes.
    pub struct MemBufCopy: 32 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User buffer address.
        8 buffer: U64,
        /// Bytes to copy.
        16 size: U32,
        /// Offset into the allocation.
        20 offset: U32,
        /// 1 = buffer → handle (copy in), 0 = handle → buffer (copy out).
        24 copy_to_mem_handle: U32,
        /// Tail padding.
        28 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `MEM_BUF_COPY64` (nr 24, 40 B): the driver's copy-in/copy-out, 64-bit
    /// sizes; the direction is a field, not a number.
    pub struct MemBufCopy64: 40 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User buffer address.
        8 buffer: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the allocation.
        24 offset: U64,
        /// 1 = buffer → handle (copy in), 0 = handle → buffer (copy out).
        32 copy_to_mem_handle: U32,
        /// Tail padding.
        36 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `MEM_BUF_ZEROCOPY64_DEPRECATED` (nr 124, 48 B, newer drivers):
    /// zero-copy transfer without the async fields.
    pub struct MemBufCopy64ZcDeprecated: 48 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User buffer address (pages are pinned).
        8 buffer: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the allocation.
        24 offset: U64,
        /// 1 = host → device, 0 = device → host.
        32 is_copy_to_device: U32,
        /// Writes up to this size may go directly through BAR4.
        36 bar4_wr_threshold: U32,
        /// H2T queue to use (-1 = default).
        40 h2t_qid: I32,
        /// Unused.
        44 dummy: U32,
    }
}

abi_struct! {
    /// `MEM_BUF_ZEROCOPY64` (nr 124, 64 B, newer drivers): zero-copy
    /// transfer, optionally asynchronous through the completion queue.
    pub struct MemBufCopy64Zc: 64 {
        /// Memory handle.
        0 mem_handle: U64,
        /// User buffer address (pages are pinned).
        8 buffer: U64,
        /// Bytes to copy.
        16 size: U64,
        /// Offset into the allocation.
        24 offset: U64,
        /// 1 = host → device, 0 = device → host.
        32 is_copy_to_device: U32,
        /// Writes up to this size may go directly through BAR4.
        36 bar4_wr_threshold: U32,
        /// H2T queue to use (-1 = default).
        40 h2t_qid: I32,
        /// Unused.
        44 dummy: U32,
        /// Completion sequence number (0 = synchronous).
        48 sequence_num: U64,
        /// User context returned in the completion (user pointer).
        56 context: U64,
    }
}

abi_struct! {
    /// `MEM_BUF_ZEROCOPY64_BATCHES` (nr 129, 0xC0204E81, newer drivers): many
    /// tensors' transfers in one call; tdrv-dmem's batch copy.
    pub struct MemBufCopy64ZcBatches: 32 {
        /// Completion sequence number (0 = synchronous).
        0 sequence_num: U64,
        /// User pointer to `num_batches` `MemcpyBatch` records.
        8 batches_ptr: U64,
        /// Number of batch records.
        16 num_batches: U32,
        /// 1 = host → device, 0 = device → host.
        20 is_copy_to_device: U16,
        /// Padding before the s32.
        22 _pad0: [u8; 2],
        /// H2T queue to use (-1 = default).
        24 h2t_qid: I32,
        /// Flags.
        28 flags: U16,
        /// Tail padding.
        30 _pad1: [u8; 2],
    }
}

abi_struct! {
    /// One batch record of `MEM_BUF_ZEROCOPY64_BATCHES`
    /// (`neuron_memcpy_batch_t`): one tensor, many ops.
    pub struct MemcpyBatch: 40 {
        /// Memory handle of the tensor's allocation.
        0 mem_handle: U64,
        /// Offset of the tensor inside the allocation.
        8 mem_handle_offset: U64,
        /// User pointer to `num_ops` `TensorBatchOp` records.
        16 ops_ptr: U64,
        /// Number of ops.
        24 num_ops: U32,
        /// Writes up to this size may go directly through BAR4.
        28 bar4_wr_threshold: U16,
        /// Flags.
        30 flags: U16,
        /// User context (user pointer).
        32 context: U64,
    }
}

abi_struct! {
    /// One op of a batch record (`nrt_tensor_batch_op_t`; layout from the
    /// SDK's copy of the header, partly unverified).
    pub struct TensorBatchOp: 24 {
        /// Offset inside the tensor.
        0 offset: U64,
        /// Bytes to copy.
        8 size: U64,
        /// User buffer address.
        16 buffer: U64,
    }
}

abi_struct! {
    /// `MEM_MC_GET_INFO` (nr 111, 24 B): mmap information for a physical
    /// address.
    pub struct MemGetMcMmapInfo: 24 {
        /// Physical address (in).
        0 pa: U64,
        /// mmap offset (out).
        8 mmap_offset: U64,
        /// Allocation size (out).
        16 size: U64,
    }
}

abi_struct! {
    /// `MEM_MC_GET_INFO_V2` (nr 111, 32 B): as `MemGetMcMmapInfo`, plus the
    /// handle.
    pub struct MemGetMcMmapInfoV2: 32 {
        /// Physical address (in).
        0 pa: U64,
        /// mmap offset (out).
        8 mmap_offset: U64,
        /// Allocation size (out).
        16 size: U64,
        /// Memory handle (out).
        24 mem_handle: U64,
    }
}
