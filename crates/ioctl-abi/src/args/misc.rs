//! Semaphores and events, resource mmap information, H2T queue
//! reservation and host-memory pinning (docs/references/driver.md §1.4).

use zerocopy::little_endian::{U16, U32, U64};

use super::abi_struct;

abi_struct! {
    /// `SEMAPHORE_READ/WRITE/INCREMENT/DECREMENT` (nr 41–44).
    pub struct Semaphore: 12 {
        /// NeuronCore (< NCs per device, else E2BIG).
        0 nc_id: U32,
        /// Semaphore index (< 256, else EINVAL).
        4 semaphore_index: U32,
        /// Value written / added / subtracted; READ returns it here (out).
        8 value: U32,
    }
}

abi_struct! {
    /// `EVENT_GET/SET` (nr 45–46); same layout as `Semaphore` (the driver
    /// declares the numbers with the semaphore struct).
    pub struct Event: 12 {
        /// NeuronCore (not validated by driver 2.24).
        0 nc_id: U32,
        /// Event index (driver 2.24 accepts 256).
        4 event_index: U32,
        /// Value written; GET returns it here (out).
        8 value: U32,
    }
}

abi_struct! {
    /// `RESOURCE_MMAP_INFO` (nr 112): mmap offset of a special resource.
    pub struct ResourceMmapInfo: 32 {
        /// Block: 0 TPB, 1 TOPSP, 2 HBM.
        0 block: U32,
        /// Block instance.
        4 block_id: U32,
        /// Resource: 0 SEMAPHORE, 1 ALL (read-only, TOPSP), 2 SBUF, 3 DMEM.
        8 resource: U32,
        /// Padding before the u64.
        12 _pad0: [u8; 4],
        /// mmap offset (out).
        16 offset: U64,
        /// Size (out).
        24 size: U64,
    }
}

abi_struct! {
    /// `H2T_DMA_ALLOC_QUEUES` (nr 125, newer drivers): reserve H2T queues.
    pub struct H2tDmaAllocQueues: 20 {
        /// Struct size.
        0 sz: U16,
        /// NeuronCore.
        2 nc_id: U16,
        /// Copy queues wanted.
        4 copy_queue_cnt: U16,
        /// Service queues wanted.
        6 service_queue_cnt: U16,
        /// Copy queues granted, as a bitmap (out).
        8 copy_queue_bmap: U32,
        /// Service queues granted, as a bitmap (out).
        12 service_queue_bmap: U32,
        /// Default copy queue (out).
        16 copy_default_queue: U32,
    }
}

abi_struct! {
    /// `H2T_DMA_FREE_QUEUES` (nr 126, newer drivers): release H2T queues.
    pub struct H2tDmaFreeQueues: 8 {
        /// Struct size.
        0 sz: U16,
        /// NeuronCore.
        2 nc_id: u8,
        /// Filler.
        3 fill0: u8,
        /// Queues to release, as a bitmap.
        4 queue_bmap: U32,
    }
}

abi_struct! {
    /// `HOST_MEM_PIN` (nr 136, newer drivers): pin user memory.
    pub struct HostMemPin: 24 {
        /// User virtual address.
        0 va: U64,
        /// Bytes.
        8 size: U64,
        /// PA with the host bit if physically contiguous, else all ones (out).
        16 pa: U64,
    }
}

abi_struct! {
    /// `HOST_MEM_UNPIN` (nr 137, newer drivers): unpin user memory.
    pub struct HostMemUnpin: 8 {
        /// User virtual address.
        0 va: U64,
    }
}
