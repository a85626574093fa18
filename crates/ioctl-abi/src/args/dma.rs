//! DMA engine and queue ioctls (docs/references/driver.md §1.4, §1.6, §2.8).

use zerocopy::little_endian::{U32, U64};

use super::abi_struct;

/// Maximum number of entries of `DMA_QUEUE_INIT_BATCH` (the array length;
/// the handler rejects `count >= 256`, so 255 are usable).
pub const DMA_QUEUE_INIT_BATCH_ENTRIES: usize = 256;

abi_struct! {
    /// `DMA_ENG_INIT` (nr 30): deprecated, returns 0.
    pub struct DmaEngInit: 4 {
        /// DMA engine id.
        0 eng_id: U32,
    }
}

abi_struct! {
    /// `DMA_ENG_SET_STATE` (nr 31): write the engine's change-state register.
    pub struct DmaEngSetState: 8 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Requested state (`UdmaState`).
        4 state: U32,
    }
}

abi_struct! {
    /// `DMA_ENG_GET_STATE` (nr 32): snapshot of an engine's state.
    pub struct DmaEngGetState: 16 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Padding before the pointer.
        4 _pad0: [u8; 4],
        /// User pointer to a `DmaEngState` (out).
        8 state: U64,
    }
}

abi_struct! {
    /// What `DMA_ENG_GET_STATE` writes (`neuron_dma_eng_state`).
    pub struct DmaEngState: 20 {
        /// UDMA revision (4).
        0 revision_id: U32,
        /// Queues the engine supports (16).
        4 max_queues: U32,
        /// Queues in use (16).
        8 num_queues: U32,
        /// M2S state (`UdmaState`).
        12 tx_state: U32,
        /// S2M state (`UdmaState`).
        16 rx_state: U32,
    }
}

abi_struct! {
    /// `DMA_QUEUE_INIT` (nr 33): point a queue's rings at allocations.
    pub struct DmaQueueInit: 48 {
        /// DMA engine id (< 132).
        0 eng_id: U32,
        /// Queue id (< 16).
        4 qid: U32,
        /// M2S ring size in descriptors.
        8 tx_desc_count: U32,
        /// S2M ring size in descriptors.
        12 rx_desc_count: U32,
        /// Memory handle of the M2S ring (0 = none).
        16 tx_handle: U64,
        /// Memory handle of the S2M ring (0 = none).
        24 rx_handle: U64,
        /// Memory handle of the completion ring (non-zero fails).
        32 rxc_handle: U64,
        /// AXI port (newer drivers: unused).
        40 axi_port: U32,
        /// Tail padding.
        44 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `DMA_QUEUE_INIT_BATCH` (nr 133, 12296 B): up to 255 queue inits in one
    /// call.
    pub struct DmaQueueInitBatch: 12296 {
        /// Number of valid entries (must be < 256).
        0 count: U32,
        /// Padding before the array.
        4 _pad0: [u8; 4],
        /// The queue inits.
        8 entries: [DmaQueueInit; 256],
    }
}

const _: () =
    assert!(DMA_QUEUE_INIT_BATCH_ENTRIES * DmaQueueInit::SIZE + 8 == DmaQueueInitBatch::SIZE);

abi_struct! {
    /// `DMA_QUEUE_RELEASE` (nr 34): no-op.
    pub struct DmaQueueRelease: 8 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Queue id.
        4 qid: U32,
    }
}

abi_struct! {
    /// `DMA_QUEUE_COPY_START` (nr 35): ring the doorbells.
    pub struct DmaQueueCopyStart: 16 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Queue id.
        4 qid: U32,
        /// M2S descriptors to post.
        8 tx_desc_count: U32,
        /// S2M descriptors to post.
        12 rx_desc_count: U32,
    }
}

abi_struct! {
    /// `DMA_ACK_COMPLETED` (nr 36): advance the driver's completion shadow
    /// index (software only).
    pub struct DmaAckCompleted: 12 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Queue id.
        4 qid: U32,
        /// Descriptors completed.
        8 count: U32,
    }
}

abi_struct! {
    /// `DMA_QUEUE_GET_STATE` (nr 37): register snapshot of both directions
    /// of a queue.
    pub struct DmaQueueGetState: 24 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Queue id.
        4 qid: U32,
        /// User pointer to the M2S `DmaQueueState` (out).
        8 tx: U64,
        /// User pointer to the S2M `DmaQueueState` (out).
        16 rx: U64,
    }
}

abi_struct! {
    /// What `DMA_QUEUE_GET_STATE` writes per direction
    /// (`neuron_dma_queue_state`).
    pub struct DmaQueueState: 48 {
        /// Raw queue status register.
        0 hw_status: U32,
        /// Software status (`QueueSwStatus`).
        4 sw_status: U32,
        /// Ring base address.
        8 base_addr: U64,
        /// Ring length in descriptors.
        16 length: U32,
        /// Head pointer.
        20 head_pointer: U32,
        /// Tail pointer.
        24 tail_pointer: U32,
        /// Padding before the u64.
        28 _pad0: [u8; 4],
        /// Completion ring base address.
        32 completion_base_addr: U64,
        /// Completion ring head.
        40 completion_head: U32,
        /// Tail padding.
        44 _pad1: [u8; 4],
    }
}

abi_struct! {
    /// `DMA_COPY_DESCRIPTORS` (nr 38, encoded size 8): write user descriptors
    /// into a ring allocation, 32-bit offset.
    pub struct DmaCopyDescriptors: 32 {
        /// Memory handle of the ring.
        0 mem_handle: U64,
        /// User address of the 16-byte descriptors.
        8 buffer: U64,
        /// Number of descriptors.
        16 num_descs: U32,
        /// Byte offset into the ring allocation.
        20 offset: U32,
        /// Ring kind (`DmaQueueType`; COMPLETION rejected).
        24 queue_type: U32,
        /// Tail padding.
        28 _pad0: [u8; 4],
    }
}

abi_struct! {
    /// `DMA_COPY_DESCRIPTORS64` (nr 38, 40 B): as `DmaCopyDescriptors`,
    /// 64-bit offset.
    pub struct DmaCopyDescriptors64: 40 {
        /// Memory handle of the ring.
        0 mem_handle: U64,
        /// User address of the 16-byte descriptors.
        8 buffer: U64,
        /// Number of descriptors.
        16 num_descs: U32,
        /// Padding before the u64.
        20 _pad0: [u8; 4],
        /// Byte offset into the ring allocation.
        24 offset: U64,
        /// Ring kind (`DmaQueueType`; COMPLETION rejected).
        32 queue_type: U32,
        /// Tail padding.
        36 _pad1: [u8; 4],
    }
}

abi_struct! {
    /// `DMA_DESCRIPTOR_COPYOUT` (nr 39): read descriptors back from a queue's
    /// ring.
    pub struct DmaDescriptorCopyout: 32 {
        /// DMA engine id.
        0 eng_id: U32,
        /// Queue id.
        4 qid: U32,
        /// Ring kind (`DmaQueueType`).
        8 queue_type: U32,
        /// First descriptor index.
        12 start_index: U32,
        /// Number of descriptors (> 0; start + count ≤ ring length).
        16 count: U32,
        /// Padding before the pointer.
        20 _pad0: [u8; 4],
        /// User address that receives the descriptors (out).
        24 buffer: U64,
    }
}
