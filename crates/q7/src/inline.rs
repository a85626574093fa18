//! The custom-op inline DMA path and the memcpy method table (P9.1 §5):
//! `neuron_memcpy` dispatches through a 3-entry method table (scalar copy,
//! vector copy, `dma_data_transfer`); the DMA method drives one M2S/S2M
//! queue pair with 4-deep rings in the core's dataram, 64 KiB chunks, a
//! generation tag flipped on wrap, both doorbells per chunk and a busy-poll
//! on the completion entry's tag.
//!
//! The quirks, reproduced on purpose:
//! * word0 is updated as `(word0 & 0xFCFF0000) | chunk | (ring_id << 24)`:
//!   bits 31:26 and 23:16 keep the slot's previous content, so the 0xB8
//!   ring fill leaks into the flags ([`leaked_flags`]); a 64 KiB chunk
//!   (65536 = 0x1_0000) also sets bit 16 and leaves the length field 0;
//! * word1 is never written: it stays 0xB8B8B8B8;
//! * the generation tag flips with XOR 1 (1, 0, 1, …) where the hardware's
//!   ring id counts +1 mod 4 (docs/references/wiki.md §L.1 #7);
//! * `neuron_set_memcpy_method` guards with `>= 4`, so it accepts 3 =
//!   MAX_METHODS, a latent out-of-bounds read of `table[3]` (§5.3).

use std::mem::{offset_of, size_of};

use dma_abi::LenCtrl;
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Methods in the table (`MAX_METHODS`, P9.1 §5.3).
pub const MAX_METHODS: u8 = 3;
/// The default method: `dma_data_transfer`.
pub const DEFAULT_METHOD: u8 = 2;
/// Names of the table entries.
pub const METHOD_NAMES: [&str; 3] = [
    "c_memcpy_data_transfer",
    "vec_memcpy_data_transfer",
    "dma_data_transfer",
];
/// Ring depth of the inline path.
pub const RING_DEPTH: u32 = 4;
/// Largest chunk.
pub const CHUNK_BYTES: u64 = 65536;
/// The fill of the three rings at init.
pub const RING_FILL: u8 = 0xB8;
/// The dataram window the SDMA can reach (`dram_addr_to_soc_addr`,
/// P9.1 §6.2).
pub const DATARAM_LOCAL: std::ops::Range<u32> = 0x8_0000..0x9_0000;
/// `data_scratch_map` (unpublished): the model puts the inline path's
/// scratch — ring-config words, the three rings, `_dma_ctx_t` — at local
/// 0x90000, the Q7 DRAM just above the window, where no `neuron_memcpy`
/// can reach it (a legal 64 KiB copy at 0x80000 covers the whole window;
/// docs/firmware.md "The custom-op inline path").
pub const SCRATCH_LOCAL: u32 = 0x9_0000;
/// Bytes of the scratch the path uses (the context ends at +0x228).
pub const SCRATCH_BYTES: u32 = 0x228;

/// Offset of local address `local` in the core's Q7 DRAM (`q7_dram0`):
/// local 0x80000 is its byte 0 (docs/firmware.md, `dram_addr_to_soc_addr`).
pub const fn dram_offset(local: u32) -> u64 {
    (local - DATARAM_LOCAL.start) as u64
}
/// Ring-config words: {0x0C000000, 3} at +0x100/+0x110/+0x120/+0x130.
pub const RING_CFG_OFFSETS: [u32; 4] = [0x100, 0x110, 0x120, 0x130];
/// TX ring: the seed's +0x108 moved to the next 64-byte boundary (docs/references/design.md §8
/// "Inline-path ring layout").
pub const TX_RING: u32 = 0x140;
/// Completion ring (the seed's +0x140).
pub const COMP_RING: u32 = 0x180;
/// RX ring (the seed's +0x180).
pub const RX_RING: u32 = 0x1C0;
/// `_dma_ctx_t`, 40 bytes ([`DmaCtx`]).
pub const CTX: u32 = 0x200;

/// The firmware's `_dma_ctx_t` as it sits in its scratch at +0x200
/// (docs/firmware.md "The custom-op inline path"): the two doorbell
/// addresses, the three ring pointers (32-bit local addresses), the tail
/// index (wraps at 4) and the ring id / generation tag. The firmware
/// keeps it live: written at `init_dma_queue` and after every chunk.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned,
)]
#[repr(C)]
pub struct DmaCtx {
    /// `m2s_inc_reg`: SoC address of the M2S queue's TDRTP_INC.
    pub m2s_inc_reg: U64,
    /// `s2m_inc_reg`: SoC address of the S2M queue's RDRTP_INC.
    pub s2m_inc_reg: U64,
    /// `tx_desc`: the TX ring (local address).
    pub tx_desc: U32,
    /// `rx_desc`: the RX ring (local address).
    pub rx_desc: U32,
    /// `comp_desc`: the completion ring (local address).
    pub comp_desc: U32,
    /// `dma_ring_tail_idx`: the next slot, 0..4.
    pub dma_ring_tail_idx: U32,
    /// `dma_ring_id`: the generation tag written into word0 bits 25:24.
    pub dma_ring_id: U32,
    /// Padding to the 40-byte size (8-byte alignment of the pointers).
    pub reserved: [u8; 4],
}

const _: () = assert!(size_of::<DmaCtx>() == 40);
const _: () = assert!(offset_of!(DmaCtx, m2s_inc_reg) == 0x00);
const _: () = assert!(offset_of!(DmaCtx, s2m_inc_reg) == 0x08);
const _: () = assert!(offset_of!(DmaCtx, tx_desc) == 0x10);
const _: () = assert!(offset_of!(DmaCtx, rx_desc) == 0x14);
const _: () = assert!(offset_of!(DmaCtx, comp_desc) == 0x18);
const _: () = assert!(offset_of!(DmaCtx, dma_ring_tail_idx) == 0x1c);
const _: () = assert!(offset_of!(DmaCtx, dma_ring_id) == 0x20);

impl DmaCtx {
    /// The context `init_dma_queue` writes: the doorbells, the rings of the
    /// scratch at local `scratch`, tail 0, ring id 1.
    pub fn init(m2s_inc_reg: u64, s2m_inc_reg: u64, scratch: u32) -> Self {
        Self {
            m2s_inc_reg: U64::new(m2s_inc_reg),
            s2m_inc_reg: U64::new(s2m_inc_reg),
            tx_desc: U32::new(scratch + TX_RING),
            rx_desc: U32::new(scratch + RX_RING),
            comp_desc: U32::new(scratch + COMP_RING),
            dma_ring_tail_idx: U32::new(0),
            dma_ring_id: U32::new(1),
            reserved: [0; 4],
        }
    }

    /// The slot the next chunk goes to.
    pub fn tail(&self) -> u32 {
        self.dma_ring_tail_idx.get()
    }

    /// The generation tag of the next chunk.
    pub fn ring_id(&self) -> u8 {
        (self.dma_ring_id.get() & 3) as u8
    }

    /// After a chunk: the tail advances; at the ring depth it returns to 0
    /// and the tag flips (`ring_id ^= 1`).
    pub fn advance(&mut self) {
        let mut tail = self.tail() + 1;
        let mut id = self.dma_ring_id.get();
        if tail == RING_DEPTH {
            tail = 0;
            id ^= 1;
        }
        self.dma_ring_tail_idx = U32::new(tail);
        self.dma_ring_id = U32::new(id);
    }
}
/// `SUNDA_APB_BASE`: the value `init_dma_queue` asserts MEM_WINDOW0_LO
/// holds (docs/firmware.md).
pub const SUNDA_APB_BASE: u32 = 0xF000_0000;

/// The queue index the inline path drives on the core's first engine
/// (simulator decision; the DGE uses the lowest queue MEMCOPY_DMA_CFG
/// allows).
pub const INLINE_QUEUE: u8 = 15;

/// The word0 the fire sequence writes into a slot that held `old`
/// (`dma_abi::with_gen_tag`, mask 0xFCFF0000).
pub fn updated_word0(old: u32, chunk_bytes: u64, ring_id: u8) -> u32 {
    dma_abi::with_gen_tag(old, chunk_bytes as u32, u32::from(ring_id & 3))
}

/// What `word0` carries beyond length and ring id, read in the driver
/// layout (docs/references/design.md §8): the flags set, FIRST missing, undefined bits 22:16.
pub fn leaked_flags(word0: u32) -> String {
    let w = LenCtrl::from_raw(word0);
    let mut set: Vec<&str> = Vec::new();
    for (on, name) in [
        (w.concat(), "CONCAT"),
        (w.dmb(), "DMB"),
        (w.sow(), "SOW"),
        (w.int_en(), "INT_EN"),
        (w.last(), "LAST"),
        (w.first(), "FIRST"),
        (w.meta(), "META"),
    ] {
        if on {
            set.push(name);
        }
    }
    let undefined = (word0 >> 16) & 0x7F;
    format!(
        "{}{}{}",
        if set.is_empty() {
            "no flags".to_string()
        } else {
            set.join("|")
        },
        if w.first() { "" } else { ", FIRST clear" },
        if undefined != 0 {
            format!(", undefined bits 22:16 = {undefined:#x}")
        } else {
            String::new()
        }
    )
}

/// What `neuron_set_memcpy_method(m)` does: the guard is `m >= 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodSet {
    /// 0..=2: a table entry.
    Ok,
    /// 3 = MAX_METHODS: accepted by the guard, past the table.
    LatentOob,
    /// >= 4: the guard refuses it; the method is unchanged.
    Refused,
}

/// The guard of `neuron_set_memcpy_method`.
pub fn set_method(m: u8) -> MethodSet {
    if m >= 4 {
        MethodSet::Refused
    } else if m >= MAX_METHODS {
        MethodSet::LatentOob
    } else {
        MethodSet::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_b8_fill_leaks_into_word0() {
        // First use of a slot: the fill is 0xB8B8B8B8.
        let w = updated_word0(0xB8B8_B8B8, 4096, 1);
        assert_eq!(w, 0xB9B8_1000);
        assert_eq!(
            leaked_flags(w),
            "CONCAT|SOW|INT_EN|LAST|META, FIRST clear, undefined bits 22:16 = 0x38"
        );
        // A 64 KiB chunk sets bit 16 and leaves the length field 0.
        let w = updated_word0(0xB8B8_B8B8, 65536, 1);
        assert_eq!(w, 0xB9B9_0000);
        assert_eq!(LenCtrl::from_raw(w).len_bytes(true), 65536);
        // The next pass keeps the leaked bits and clears the old tag.
        assert_eq!(updated_word0(0xB9B9_0000, 100, 0), 0xB8B9_0064);
        // A clean slot would give FIRST clear and nothing else.
        assert_eq!(
            leaked_flags(updated_word0(0, 64, 1)),
            "no flags, FIRST clear"
        );
    }

    #[test]
    fn no_copy_in_the_window_reaches_the_scratch() {
        // Every structure of the path lies in the scratch, and the scratch
        // lies past the last byte a neuron_memcpy may touch.
        let end = SCRATCH_LOCAL + SCRATCH_BYTES;
        for off in RING_CFG_OFFSETS
            .into_iter()
            .chain([TX_RING, COMP_RING, RX_RING, CTX])
        {
            assert!(off < SCRATCH_BYTES);
        }
        assert!(CTX as usize + size_of::<DmaCtx>() <= SCRATCH_BYTES as usize);
        assert!(!DATARAM_LOCAL.contains(&SCRATCH_LOCAL));
        assert!(SCRATCH_LOCAL >= DATARAM_LOCAL.end && end > SCRATCH_LOCAL);
        // ... and inside the 256 KiB Q7 DRAM, 64-byte aligned.
        assert!(dram_offset(end) <= 256 << 10);
        assert_eq!(dram_offset(SCRATCH_LOCAL) % 64, 0);
    }

    #[test]
    fn the_context_wraps_with_a_flipped_tag() {
        let mut c = DmaCtx::init(0x10_0201_0038, 0x10_0203_0038, SCRATCH_LOCAL);
        let b = c.as_bytes();
        assert_eq!(&b[0x10..0x14], &(SCRATCH_LOCAL + TX_RING).to_le_bytes());
        assert_eq!(&b[0x14..0x18], &(SCRATCH_LOCAL + RX_RING).to_le_bytes());
        assert_eq!(&b[0x18..0x1c], &(SCRATCH_LOCAL + COMP_RING).to_le_bytes());
        assert_eq!((c.tail(), c.ring_id()), (0, 1));
        let seen: Vec<(u32, u8)> = (0..9)
            .map(|_| {
                c.advance();
                (c.tail(), c.ring_id())
            })
            .collect();
        assert_eq!(
            seen,
            [
                (1, 1),
                (2, 1),
                (3, 1),
                (0, 0),
                (1, 0),
                (2, 0),
                (3, 0),
                (0, 1),
                (1, 1)
            ]
        );
        assert_eq!(&c.as_bytes()[0x1c..0x24], &[1, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn the_method_guard_accepts_max_methods() {
        assert_eq!(set_method(0), MethodSet::Ok);
        assert_eq!(set_method(2), MethodSet::Ok);
        assert_eq!(set_method(3), MethodSet::LatentOob);
        assert_eq!(set_method(4), MethodSet::Refused);
        assert_eq!(set_method(255), MethodSet::Refused);
    }
}
