//! The 16-byte ring descriptor and its three views.
//!
//! One layout, three readings of bytes 4–15 (driver `union udma_desc`,
//! docs/references/driver.md §3.1; P9.1 §3; docs/references/wiki.md §C.1, §C.6):
//!
//! | view | +0 (u32) | +4 (u32) | +8 |
//! |------|----------|----------|----|
//! | [`TxDesc`] (M2S) | len_ctrl | meta_ctrl ([`CmeWord`]) | buf_ptr u64: source address |
//! | [`TxMetaDesc`] (M2S, META set) | len_ctrl | meta_ctrl | meta1 u32 @8, meta2 u32 @12 |
//! | [`RxDesc`] (S2M) | len_ctrl | buf2_ptr_lo (second, header-split buffer) | buf1_ptr u64: destination |
//!
//! All multi-byte fields are little endian. The types are alignment 1
//! (`Unaligned`): rings are 16-byte aligned in memory, but the layout does not
//! depend on it.

use std::fmt;
use std::mem::{offset_of, size_of};

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::word0::LenCtrl;
use crate::word1::CmeWord;

/// Size of one descriptor in bytes.
pub const DESCRIPTOR_BYTES: usize = 16;

/// One 16-byte udma/SDMA ring descriptor (`SDMA_CME_BD_DESC`, P9.1 §3;
/// driver `union udma_desc`, docs/references/driver.md §3.1), in memory order.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(C)]
pub struct Descriptor {
    /// +0, word 0: length and flags ([`LenCtrl`]).
    pub len_ctrl: U32,
    /// +4, word 1: TX meta_ctrl ([`CmeWord`]) or RX buf2_ptr_lo.
    pub word1: U32,
    /// +8: TX source / RX destination (buf1_ptr) SoC address; meta1/meta2 in
    /// a meta descriptor.
    pub buf_ptr: U64,
}

const _: () = assert!(size_of::<Descriptor>() == DESCRIPTOR_BYTES);
const _: () = assert!(offset_of!(Descriptor, len_ctrl) == 0);
const _: () = assert!(offset_of!(Descriptor, word1) == 4);
const _: () = assert!(offset_of!(Descriptor, buf_ptr) == 8);

impl Descriptor {
    /// A descriptor from its three words.
    #[must_use]
    pub fn new(len_ctrl: LenCtrl, word1: u32, buf_ptr: u64) -> Self {
        Self {
            len_ctrl: U32::new(len_ctrl.raw()),
            word1: U32::new(word1),
            buf_ptr: U64::new(buf_ptr),
        }
    }

    /// The descriptor held by 16 bytes in memory order.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; DESCRIPTOR_BYTES]) -> Self {
        zerocopy::transmute!(*bytes)
    }

    /// The 16 bytes in memory order.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; DESCRIPTOR_BYTES] {
        zerocopy::transmute!(*self)
    }

    /// Word 0, decoded lazily.
    #[must_use]
    pub fn len_ctrl(&self) -> LenCtrl {
        LenCtrl::from_raw(self.len_ctrl.get())
    }

    /// Word 1 as a raw number (its meaning depends on the direction).
    #[must_use]
    pub fn word1(&self) -> u32 {
        self.word1.get()
    }

    /// Bytes 8–15 as one u64 (the address in TX and RX descriptors).
    #[must_use]
    pub fn buf_ptr(&self) -> u64 {
        self.buf_ptr.get()
    }

    /// Returns a copy with word 0 replaced.
    #[must_use]
    pub fn with_len_ctrl(mut self, len_ctrl: LenCtrl) -> Self {
        self.len_ctrl.set(len_ctrl.raw());
        self
    }

    /// Returns a copy with word 1 replaced by a CME command word.
    #[must_use]
    pub fn with_word1(mut self, word1: CmeWord) -> Self {
        self.word1.set(word1.raw());
        self
    }

    /// Returns a copy with bytes 8–15 replaced.
    #[must_use]
    pub fn with_buf_ptr(mut self, buf_ptr: u64) -> Self {
        self.buf_ptr.set(buf_ptr);
        self
    }

    /// The M2S (TX) view: word 1 is meta_ctrl, bytes 8–15 the source address.
    #[must_use]
    pub fn tx(&self) -> &TxDesc {
        zerocopy::transmute_ref!(self)
    }

    /// Mutable M2S (TX) view.
    pub fn tx_mut(&mut self) -> &mut TxDesc {
        zerocopy::transmute_mut!(self)
    }

    /// The S2M (RX) view: word 1 is buf2_ptr_lo, bytes 8–15 buf1_ptr.
    #[must_use]
    pub fn rx(&self) -> &RxDesc {
        zerocopy::transmute_ref!(self)
    }

    /// Mutable S2M (RX) view.
    pub fn rx_mut(&mut self) -> &mut RxDesc {
        zerocopy::transmute_mut!(self)
    }

    /// The meta view (CCE compute descriptors): word 1 is meta_ctrl, bytes
    /// 8–11 meta1, 12–15 meta2.
    #[must_use]
    pub fn tx_meta(&self) -> &TxMetaDesc {
        zerocopy::transmute_ref!(self)
    }

    /// Mutable meta view.
    pub fn tx_meta_mut(&mut self) -> &mut TxMetaDesc {
        zerocopy::transmute_mut!(self)
    }
}

impl From<[u8; DESCRIPTOR_BYTES]> for Descriptor {
    fn from(bytes: [u8; DESCRIPTOR_BYTES]) -> Self {
        Self::from_bytes(&bytes)
    }
}

impl From<Descriptor> for [u8; DESCRIPTOR_BYTES] {
    fn from(d: Descriptor) -> Self {
        d.to_bytes()
    }
}

impl fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Descriptor")
            .field("len_ctrl", &format_args!("{:#010x}", self.len_ctrl.get()))
            .field("word1", &format_args!("{:#010x}", self.word1.get()))
            .field("buf_ptr", &format_args!("{:#018x}", self.buf_ptr.get()))
            .finish()
    }
}

/// The M2S (TX) reading of a [`Descriptor`] (docs/references/driver.md §3.1 `tx`).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(C)]
pub struct TxDesc {
    /// +0, word 0.
    pub len_ctrl: U32,
    /// +4, the CME command word ([`CmeWord`], docs/references/driver.md §3.3).
    pub meta_ctrl: U32,
    /// +8, source SoC address the engine reads.
    pub buf_ptr: U64,
}

const _: () = assert!(size_of::<TxDesc>() == DESCRIPTOR_BYTES);
const _: () = assert!(offset_of!(TxDesc, len_ctrl) == 0);
const _: () = assert!(offset_of!(TxDesc, meta_ctrl) == 4);
const _: () = assert!(offset_of!(TxDesc, buf_ptr) == 8);

impl TxDesc {
    /// Word 0.
    #[must_use]
    pub fn len_ctrl(&self) -> LenCtrl {
        LenCtrl::from_raw(self.len_ctrl.get())
    }

    /// Word 1, the CME command word.
    #[must_use]
    pub fn meta_ctrl(&self) -> CmeWord {
        CmeWord::from_raw(self.meta_ctrl.get())
    }

    /// The source address.
    #[must_use]
    pub fn src(&self) -> u64 {
        self.buf_ptr.get()
    }
}

impl fmt::Debug for TxDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxDesc")
            .field("len_ctrl", &self.len_ctrl())
            .field("meta_ctrl", &self.meta_ctrl())
            .field("buf_ptr", &format_args!("{:#018x}", self.buf_ptr.get()))
            .finish()
    }
}

/// The S2M (RX) reading of a [`Descriptor`] (docs/references/driver.md §3.1 `rx`).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(C)]
pub struct RxDesc {
    /// +0, word 0.
    pub len_ctrl: U32,
    /// +4, low 32 bits of the second (header-split) buffer; the driver leaves
    /// it 0 (docs/references/driver.md §3.1; header split: P9.1 §4.2).
    pub buf2_ptr_lo: U32,
    /// +8, destination SoC address the engine writes.
    pub buf1_ptr: U64,
}

const _: () = assert!(size_of::<RxDesc>() == DESCRIPTOR_BYTES);
const _: () = assert!(offset_of!(RxDesc, len_ctrl) == 0);
const _: () = assert!(offset_of!(RxDesc, buf2_ptr_lo) == 4);
const _: () = assert!(offset_of!(RxDesc, buf1_ptr) == 8);

impl RxDesc {
    /// Word 0.
    #[must_use]
    pub fn len_ctrl(&self) -> LenCtrl {
        LenCtrl::from_raw(self.len_ctrl.get())
    }

    /// Low 32 bits of the second buffer.
    #[must_use]
    pub fn buf2_ptr_lo(&self) -> u32 {
        self.buf2_ptr_lo.get()
    }

    /// The destination address.
    #[must_use]
    pub fn dst(&self) -> u64 {
        self.buf1_ptr.get()
    }
}

impl fmt::Debug for RxDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RxDesc")
            .field("len_ctrl", &self.len_ctrl())
            .field(
                "buf2_ptr_lo",
                &format_args!("{:#010x}", self.buf2_ptr_lo.get()),
            )
            .field("buf1_ptr", &format_args!("{:#018x}", self.buf1_ptr.get()))
            .finish()
    }
}

/// The meta-descriptor reading of a [`Descriptor`] (docs/references/driver.md §3.1
/// `tx_meta`; the CCE compute descriptor W0–W3 of docs/references/wiki.md §C.6, §F.2: W2 =
/// meta1 holds length and operand selectors, W3 = meta2 the FP32 scale or
/// constant).
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    FromBytes,
    IntoBytes,
    KnownLayout,
    Immutable,
    Unaligned,
)]
#[repr(C)]
pub struct TxMetaDesc {
    /// +0, word 0 (META, bit 23, set by the CCE encoders).
    pub len_ctrl: U32,
    /// +4, meta_ctrl.
    pub meta_ctrl: U32,
    /// +8, meta1 (CCE W2).
    pub meta1: U32,
    /// +12, meta2 (CCE W3).
    pub meta2: U32,
}

const _: () = assert!(size_of::<TxMetaDesc>() == DESCRIPTOR_BYTES);
const _: () = assert!(offset_of!(TxMetaDesc, len_ctrl) == 0);
const _: () = assert!(offset_of!(TxMetaDesc, meta_ctrl) == 4);
const _: () = assert!(offset_of!(TxMetaDesc, meta1) == 8);
const _: () = assert!(offset_of!(TxMetaDesc, meta2) == 12);

impl TxMetaDesc {
    /// Word 0.
    #[must_use]
    pub fn len_ctrl(&self) -> LenCtrl {
        LenCtrl::from_raw(self.len_ctrl.get())
    }

    /// Word 1, meta_ctrl.
    #[must_use]
    pub fn meta_ctrl(&self) -> CmeWord {
        CmeWord::from_raw(self.meta_ctrl.get())
    }

    /// meta1 (bytes 8–11).
    #[must_use]
    pub fn meta1(&self) -> u32 {
        self.meta1.get()
    }

    /// meta2 (bytes 12–15).
    #[must_use]
    pub fn meta2(&self) -> u32 {
        self.meta2.get()
    }
}

impl fmt::Debug for TxMetaDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxMetaDesc")
            .field("len_ctrl", &self.len_ctrl())
            .field("meta_ctrl", &self.meta_ctrl())
            .field("meta1", &format_args!("{:#010x}", self.meta1.get()))
            .field("meta2", &format_args!("{:#010x}", self.meta2.get()))
            .finish()
    }
}
