//! The six 64-byte DMA instruction words as byte-exact zerocopy types, field
//! for field in P9.1 §2 order (`aws_neuron_isa_tpb_*.h`, each
//! `_Static_assert(sizeof == 64)`).
//!
//! These are the wire layouts only: every bit pattern is representable, and
//! nothing is checked. The typed, validated forms are in [`super::words`].
//! All multi-byte fields are little endian; every type has alignment 1.

use std::mem::{offset_of, size_of};

use zerocopy::little_endian::{I32, U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, Unaligned};

/// Size of one instruction word in bytes.
pub const WORD_BYTES: usize = 64;

macro_rules! word_bytes {
    ($name:ident) => {
        const _: () = assert!(size_of::<$name>() == WORD_BYTES);

        impl $name {
            /// The word held by 64 bytes in memory order.
            #[must_use]
            pub fn from_bytes(bytes: &[u8; WORD_BYTES]) -> Self {
                zerocopy::transmute!(*bytes)
            }

            /// The 64 bytes in memory order.
            #[must_use]
            pub fn to_bytes(&self) -> [u8; WORD_BYTES] {
                zerocopy::transmute!(*self)
            }

            /// All 64 bytes zero.
            #[must_use]
            pub fn zeroed() -> Self {
                FromZeros::new_zeroed()
            }
        }
    };
}

/// `NEURON_ISA_TPB_HEADER` (4 bytes, at +0 of every word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawHeader {
    /// +0: `NEURON_ISA_TPB_OPCODE`.
    pub opcode: u8,
    /// +1: 4 (16-byte records) or 0x10 (dwords), docs/references/design.md §8.
    pub inst_word_len: u8,
    /// +2.
    pub debug_cmd: u8,
    /// +3.
    pub debug_hint: u8,
}
const _: () = assert!(size_of::<RawHeader>() == 4);
const _: () = assert!(offset_of!(RawHeader, opcode) == 0);
const _: () = assert!(offset_of!(RawHeader, inst_word_len) == 1);
const _: () = assert!(offset_of!(RawHeader, debug_cmd) == 2);
const _: () = assert!(offset_of!(RawHeader, debug_hint) == 3);

/// `NEURON_ISA_TPB_EVENTS` (8 bytes, at +4 of every word): the
/// per-instruction semaphore wait/update gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawEvents {
    /// +0: `NEURON_ISA_TPB_WAIT_MODE`.
    pub wait_mode: u8,
    /// +1: semaphore to wait on.
    pub wait_idx: u8,
    /// +2: `NEURON_ISA_TPB_UPDATE_MODE`.
    pub update_mode: u8,
    /// +3: semaphore to update.
    pub update_idx: u8,
    /// +4: wait threshold / update value.
    pub semaphore_value: U32,
}
const _: () = assert!(size_of::<RawEvents>() == 8);
const _: () = assert!(offset_of!(RawEvents, wait_mode) == 0);
const _: () = assert!(offset_of!(RawEvents, wait_idx) == 1);
const _: () = assert!(offset_of!(RawEvents, update_mode) == 2);
const _: () = assert!(offset_of!(RawEvents, update_idx) == 3);
const _: () = assert!(offset_of!(RawEvents, semaphore_value) == 4);

/// D1 `NEURON_ISA_TPB_DMA_DIRECT2D_STRUCT`, opcode 0xb8 (P9.1 §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawDirect2d {
    /// +0.
    pub header: RawHeader,
    /// +4.
    pub events: RawEvents,
    /// +12: `DMA_CONFIGS` (priority_class:3, reserved:5).
    pub dma_configs: u8,
    /// +13: completion semaphore index.
    pub semaphore: u8,
    /// +14.
    pub sem_increment: u8,
    /// +15: `DGE_COMPUTE_OP`.
    pub compute_op: u8,
    /// +16: ADDR8.
    pub src_start_addr: U64,
    /// +24: signed x/y strides.
    pub src_step_elem: [I32; 2],
    /// +32: x/y counts.
    pub src_num_elem: [U16; 2],
    /// +36.
    pub src_elem_size: U16,
    /// +38: `BOUND_CHECK_REG`.
    pub src_bound_reg: u8,
    /// +39: `BOUND_CHECK_REG`.
    pub dst_bound_reg: u8,
    /// +40: ADDR8.
    pub dst_start_addr: U64,
    /// +48.
    pub dst_step_elem: [I32; 2],
    /// +56.
    pub dst_num_elem: [U16; 2],
    /// +60.
    pub dst_elem_size: U16,
    /// +62: `DTYPE`.
    pub in_dtype: u8,
    /// +63: `DTYPE`.
    pub out_dtype: u8,
}
word_bytes!(RawDirect2d);
const _: () = assert!(offset_of!(RawDirect2d, header) == 0);
const _: () = assert!(offset_of!(RawDirect2d, events) == 4);
const _: () = assert!(offset_of!(RawDirect2d, dma_configs) == 12);
const _: () = assert!(offset_of!(RawDirect2d, semaphore) == 13);
const _: () = assert!(offset_of!(RawDirect2d, sem_increment) == 14);
const _: () = assert!(offset_of!(RawDirect2d, compute_op) == 15);
const _: () = assert!(offset_of!(RawDirect2d, src_start_addr) == 16);
const _: () = assert!(offset_of!(RawDirect2d, src_step_elem) == 24);
const _: () = assert!(offset_of!(RawDirect2d, src_num_elem) == 32);
const _: () = assert!(offset_of!(RawDirect2d, src_elem_size) == 36);
const _: () = assert!(offset_of!(RawDirect2d, src_bound_reg) == 38);
const _: () = assert!(offset_of!(RawDirect2d, dst_bound_reg) == 39);
const _: () = assert!(offset_of!(RawDirect2d, dst_start_addr) == 40);
const _: () = assert!(offset_of!(RawDirect2d, dst_step_elem) == 48);
const _: () = assert!(offset_of!(RawDirect2d, dst_num_elem) == 56);
const _: () = assert!(offset_of!(RawDirect2d, dst_elem_size) == 60);
const _: () = assert!(offset_of!(RawDirect2d, in_dtype) == 62);
const _: () = assert!(offset_of!(RawDirect2d, out_dtype) == 63);

/// D2 `NEURON_ISA_TPB_DMA_INDIRECT1D_STRUCT`, opcode 0xbb (P9.1 §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawIndirect1d {
    /// +0.
    pub header: RawHeader,
    /// +4.
    pub events: RawEvents,
    /// +12.
    pub semaphore: u8,
    /// +13.
    pub sem_increment: u8,
    /// +14.
    pub idx_num_active_channels: u8,
    /// +15: `DMA_INDIRECT_FLAGS`.
    pub flags: u8,
    /// +16: ADDR8.
    pub src_start_addr: U64,
    /// +24.
    pub src_step_elem: I32,
    /// +28.
    pub src_num_elem: U16,
    /// +30.
    pub src_elem_size: U16,
    /// +32: ADDR8.
    pub dst_start_addr: U64,
    /// +40.
    pub dst_step_elem: I32,
    /// +44.
    pub dst_num_elem: U16,
    /// +46.
    pub dst_elem_size: U16,
    /// +48: ADDR4, the source index array.
    pub src_idx_start_addr: U32,
    /// +52: ADDR4, the destination index array.
    pub dst_idx_start_addr: U32,
    /// +56.
    pub in_dtype: u8,
    /// +57.
    pub out_dtype: u8,
    /// +58.
    pub src_idx_bound_reg: u8,
    /// +59.
    pub dst_idx_bound_reg: u8,
    /// +60.
    pub compute_op: u8,
    /// +61.
    pub dma_configs: u8,
    /// +62: must be zero.
    pub reserved: [u8; 2],
}
word_bytes!(RawIndirect1d);
const _: () = assert!(offset_of!(RawIndirect1d, header) == 0);
const _: () = assert!(offset_of!(RawIndirect1d, events) == 4);
const _: () = assert!(offset_of!(RawIndirect1d, semaphore) == 12);
const _: () = assert!(offset_of!(RawIndirect1d, sem_increment) == 13);
const _: () = assert!(offset_of!(RawIndirect1d, idx_num_active_channels) == 14);
const _: () = assert!(offset_of!(RawIndirect1d, flags) == 15);
const _: () = assert!(offset_of!(RawIndirect1d, src_start_addr) == 16);
const _: () = assert!(offset_of!(RawIndirect1d, src_step_elem) == 24);
const _: () = assert!(offset_of!(RawIndirect1d, src_num_elem) == 28);
const _: () = assert!(offset_of!(RawIndirect1d, src_elem_size) == 30);
const _: () = assert!(offset_of!(RawIndirect1d, dst_start_addr) == 32);
const _: () = assert!(offset_of!(RawIndirect1d, dst_step_elem) == 40);
const _: () = assert!(offset_of!(RawIndirect1d, dst_num_elem) == 44);
const _: () = assert!(offset_of!(RawIndirect1d, dst_elem_size) == 46);
const _: () = assert!(offset_of!(RawIndirect1d, src_idx_start_addr) == 48);
const _: () = assert!(offset_of!(RawIndirect1d, dst_idx_start_addr) == 52);
const _: () = assert!(offset_of!(RawIndirect1d, in_dtype) == 56);
const _: () = assert!(offset_of!(RawIndirect1d, out_dtype) == 57);
const _: () = assert!(offset_of!(RawIndirect1d, src_idx_bound_reg) == 58);
const _: () = assert!(offset_of!(RawIndirect1d, dst_idx_bound_reg) == 59);
const _: () = assert!(offset_of!(RawIndirect1d, compute_op) == 60);
const _: () = assert!(offset_of!(RawIndirect1d, dma_configs) == 61);
const _: () = assert!(offset_of!(RawIndirect1d, reserved) == 62);

/// D4 `NEURON_ISA_TPB_DMA_DIRECT2D_XPOSE_STRUCT`, opcode 0xbd (P9.1 §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawDirect2dXpose {
    /// +0.
    pub header: RawHeader,
    /// +4.
    pub events: RawEvents,
    /// +12.
    pub src_bound_reg: u8,
    /// +13.
    pub dst_bound_reg: u8,
    /// +14.
    pub in_dtype: u8,
    /// +15.
    pub out_dtype: u8,
    /// +16: ADDR8.
    pub src_start_addr: U64,
    /// +24.
    pub src_step_elem: [I32; 2],
    /// +32.
    pub src_num_elem: [U16; 2],
    /// +36.
    pub tile_src_row_step: I32,
    /// +40: ADDR8.
    pub dst_start_addr: U64,
    /// +48.
    pub dst_step_elem: [I32; 2],
    /// +56.
    pub dst_num_elem: [U16; 2],
    /// +60.
    pub tile_src_rows: u8,
    /// +61.
    pub tile_src_cols: u8,
    /// +62.
    pub semaphore: u8,
    /// +63.
    pub dma_configs: u8,
}
word_bytes!(RawDirect2dXpose);
const _: () = assert!(offset_of!(RawDirect2dXpose, header) == 0);
const _: () = assert!(offset_of!(RawDirect2dXpose, events) == 4);
const _: () = assert!(offset_of!(RawDirect2dXpose, src_bound_reg) == 12);
const _: () = assert!(offset_of!(RawDirect2dXpose, dst_bound_reg) == 13);
const _: () = assert!(offset_of!(RawDirect2dXpose, in_dtype) == 14);
const _: () = assert!(offset_of!(RawDirect2dXpose, out_dtype) == 15);
const _: () = assert!(offset_of!(RawDirect2dXpose, src_start_addr) == 16);
const _: () = assert!(offset_of!(RawDirect2dXpose, src_step_elem) == 24);
const _: () = assert!(offset_of!(RawDirect2dXpose, src_num_elem) == 32);
const _: () = assert!(offset_of!(RawDirect2dXpose, tile_src_row_step) == 36);
const _: () = assert!(offset_of!(RawDirect2dXpose, dst_start_addr) == 40);
const _: () = assert!(offset_of!(RawDirect2dXpose, dst_step_elem) == 48);
const _: () = assert!(offset_of!(RawDirect2dXpose, dst_num_elem) == 56);
const _: () = assert!(offset_of!(RawDirect2dXpose, tile_src_rows) == 60);
const _: () = assert!(offset_of!(RawDirect2dXpose, tile_src_cols) == 61);
const _: () = assert!(offset_of!(RawDirect2dXpose, semaphore) == 62);
const _: () = assert!(offset_of!(RawDirect2dXpose, dma_configs) == 63);

/// D3 `NEURON_ISA_TPB_DMA_GATHER_XPOSE_STRUCT`, opcode 0xf1 (P9.1 §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawGatherXpose {
    /// +0.
    pub header: RawHeader,
    /// +4.
    pub events: RawEvents,
    /// +12.
    pub semaphore: u8,
    /// +13.
    pub dma_configs: u8,
    /// +14.
    pub idx_num_active_channels: u8,
    /// +15.
    pub src_idx_bound_reg: u8,
    /// +16: ADDR8.
    pub src_start_addr: U64,
    /// +24.
    pub src_step_elem: [I32; 2],
    /// +32.
    pub src_num_elem: [U16; 2],
    /// +36: ADDR4, the index array.
    pub src_idx_start_addr: U32,
    /// +40: ADDR8.
    pub dst_start_addr: U64,
    /// +48: must be zero.
    pub reserved: [u8; 3],
    /// +51.
    pub dst_bound_reg: u8,
    /// +52: the second dst stride (the first is sizeof(dtype_hi)).
    pub dst_step_elem_1: I32,
    /// +56.
    pub dst_num_elem: [U16; 2],
    /// +60.
    pub elem_size: U16,
    /// +62: `DTYPE_PAIR` (lo nibble src, hi nibble dst).
    pub dtype: u8,
    /// +63: `DMA_GATHER_TRANSPOSE_FLAGS` (gather_dim:2, reserved:6).
    pub flags: u8,
}
word_bytes!(RawGatherXpose);
const _: () = assert!(offset_of!(RawGatherXpose, header) == 0);
const _: () = assert!(offset_of!(RawGatherXpose, events) == 4);
const _: () = assert!(offset_of!(RawGatherXpose, semaphore) == 12);
const _: () = assert!(offset_of!(RawGatherXpose, dma_configs) == 13);
const _: () = assert!(offset_of!(RawGatherXpose, idx_num_active_channels) == 14);
const _: () = assert!(offset_of!(RawGatherXpose, src_idx_bound_reg) == 15);
const _: () = assert!(offset_of!(RawGatherXpose, src_start_addr) == 16);
const _: () = assert!(offset_of!(RawGatherXpose, src_step_elem) == 24);
const _: () = assert!(offset_of!(RawGatherXpose, src_num_elem) == 32);
const _: () = assert!(offset_of!(RawGatherXpose, src_idx_start_addr) == 36);
const _: () = assert!(offset_of!(RawGatherXpose, dst_start_addr) == 40);
const _: () = assert!(offset_of!(RawGatherXpose, reserved) == 48);
const _: () = assert!(offset_of!(RawGatherXpose, dst_bound_reg) == 51);
const _: () = assert!(offset_of!(RawGatherXpose, dst_step_elem_1) == 52);
const _: () = assert!(offset_of!(RawGatherXpose, dst_num_elem) == 56);
const _: () = assert!(offset_of!(RawGatherXpose, elem_size) == 60);
const _: () = assert!(offset_of!(RawGatherXpose, dtype) == 62);
const _: () = assert!(offset_of!(RawGatherXpose, flags) == 63);

/// D5 `NEURON_ISA_TPB_EXTENDED_RDMA_DESC_GEN_STRUCT`: header opcode 0xf0
/// (EXTENDED), extended opcode 8 (P9.1 §2.6, docs/references/wiki.md §C.5, §E.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawRdmaDescGen {
    /// +0.
    pub header: RawHeader,
    /// +4.
    pub events: RawEvents,
    /// +12: 8.
    pub extended_opcode: u8,
    /// +13: `EXT_COMPLETION_INFO`.
    pub completion_info: u8,
    /// +14.
    pub local_sem: u8,
    /// +15.
    pub remote_sem: u8,
    /// +16: `IMM_VAL_INST_FIELD`.
    pub remote_core_id: U32,
    /// +20: `IMM_VAL_INST_FIELD`.
    pub remote_routing_id: U32,
    /// +24: `IMM_VAL_INST_FIELD`.
    pub dma_engine_mask: U32,
    /// +28: ADDR4.
    pub src_addr: U32,
    /// +32: ADDR4.
    pub dst_addr: U32,
    /// +36: bytes per partition (0 = semaphore only).
    pub free_dim_bytes: U32,
    /// +40.
    pub is_bidirectional: u8,
    /// +41.
    pub remote_sem_prev: u8,
    /// +42: must be zero.
    pub reserved0: [u8; 2],
    /// +44: must be zero.
    pub reserved1: [u8; 20],
}
word_bytes!(RawRdmaDescGen);
const _: () = assert!(offset_of!(RawRdmaDescGen, header) == 0);
const _: () = assert!(offset_of!(RawRdmaDescGen, events) == 4);
const _: () = assert!(offset_of!(RawRdmaDescGen, extended_opcode) == 12);
const _: () = assert!(offset_of!(RawRdmaDescGen, completion_info) == 13);
const _: () = assert!(offset_of!(RawRdmaDescGen, local_sem) == 14);
const _: () = assert!(offset_of!(RawRdmaDescGen, remote_sem) == 15);
const _: () = assert!(offset_of!(RawRdmaDescGen, remote_core_id) == 16);
const _: () = assert!(offset_of!(RawRdmaDescGen, remote_routing_id) == 20);
const _: () = assert!(offset_of!(RawRdmaDescGen, dma_engine_mask) == 24);
const _: () = assert!(offset_of!(RawRdmaDescGen, src_addr) == 28);
const _: () = assert!(offset_of!(RawRdmaDescGen, dst_addr) == 32);
const _: () = assert!(offset_of!(RawRdmaDescGen, free_dim_bytes) == 36);
const _: () = assert!(offset_of!(RawRdmaDescGen, is_bidirectional) == 40);
const _: () = assert!(offset_of!(RawRdmaDescGen, remote_sem_prev) == 41);
const _: () = assert!(offset_of!(RawRdmaDescGen, reserved0) == 42);
const _: () = assert!(offset_of!(RawRdmaDescGen, reserved1) == 44);

/// D6 `NEURON_ISA_TPB_EXTENDED_RDMA_DESC_START_STRUCT`: header opcode 0xf0
/// (EXTENDED), extended opcode 9; no operands (P9.1 §2.6, docs/references/wiki.md §E.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, Unaligned)]
#[repr(C)]
pub struct RawRdmaDescStart {
    /// +0.
    pub header: RawHeader,
    /// +4: the wait conditions of the transfer live here.
    pub events: RawEvents,
    /// +12: 9.
    pub extended_opcode: u8,
    /// +13: `EXT_COMPLETION_INFO`.
    pub completion_info: u8,
    /// +14: must be zero.
    pub reserved0: [u8; 2],
    /// +16: must be zero.
    pub reserved1: [u8; 48],
}
word_bytes!(RawRdmaDescStart);
const _: () = assert!(offset_of!(RawRdmaDescStart, header) == 0);
const _: () = assert!(offset_of!(RawRdmaDescStart, events) == 4);
const _: () = assert!(offset_of!(RawRdmaDescStart, extended_opcode) == 12);
const _: () = assert!(offset_of!(RawRdmaDescStart, completion_info) == 13);
const _: () = assert!(offset_of!(RawRdmaDescStart, reserved0) == 14);
const _: () = assert!(offset_of!(RawRdmaDescStart, reserved1) == 16);
