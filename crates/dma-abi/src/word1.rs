//! Word 1 of a TX (M2S) descriptor: `meta_ctrl`, the CME command word.
//!
//! LSB-first per the driver (docs/references/driver.md §3.3, both overlays merged) and the
//! runtime book (docs/references/wiki.md §J.1); the DWARF order of P9.1 §3 / docs/references/wiki.md
//! §C.1 lists the same fields MSB-first and is not used for bit positions.
//!
//! | bits  | name | meaning |
//! |-------|------|---------|
//! | 2:0   | block_attr | b0 is_last_block, b1 is_first_block, b2 reserved |
//! | 5:3   | cached_crc_iv_index | one of 8 cached CRC IV slots |
//! | 13:6  | endian_type | 8 swap bits: result, intr_val, src, init × byte, bit |
//! | 14    | validate_crc | |
//! | 15    | use_stored_crc_iv | |
//! | 16    | send_crc | append the computed CRC to the stream (`send_crc_result`) |
//! | 17    | store_crc_result | |
//! | 18    | store_source_crc | |
//! | 19    | copy_src_data | move the data as well as computing the CRC |
//! | 22:20 | optype | [`CmeType`]; the [`CceType`] when op = CCE (docs/references/wiki.md §C.6) |
//! | 25:23 | op | [`SdmaOp`] (driver `ssmae_op`): 1 DRE, 2 CME, 4 CCE |
//! | 26    | write_barrier | barrier type 2 (docs/references/driver.md §3.4) |
//! | 31:27 | reserved | (bit 28 is a V4-only notification bit, docs/references/wiki.md §J.1) |
//!
//! CCE meta descriptors reuse bits 19:0 for their own operand layout (dtype
//! nibbles, last, use_const; docs/references/wiki.md §F.2); [`CmeWord`] decodes them under
//! the CME names, as the hardware word has only one set of positions.

use std::fmt;

use crate::bits::{field, flag};

/// The word 1 the driver puts in every TX descriptor: a single-block CME COPY
/// (is_last_block, is_first_block, copy_src_data, op = CME; docs/references/driver.md §3.3).
pub const DEFAULT_COPY_WORD1: u32 = 0x0108_0003;

/// [`DEFAULT_COPY_WORD1`] with write_barrier (bit 26) set (docs/references/driver.md §3.3).
pub const DEFAULT_COPY_WORD1_WRITE_BARRIER: u32 = 0x0508_0003;

/// TX word 1, the CME command word (`meta_ctrl`). Holds the raw word; fields
/// are decoded on demand, so reserved bits survive a round trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct CmeWord(u32);

impl CmeWord {
    /// The driver's plain-copy word, [`DEFAULT_COPY_WORD1`].
    pub const DEFAULT_COPY: Self = Self(DEFAULT_COPY_WORD1);

    /// Wraps a raw word 1.
    #[must_use]
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw word 1.
    #[must_use]
    pub const fn raw(self) -> u32 {
        self.0
    }

    field!(
        /// block_attr, bits 2:0 (b0 is_last_block, b1 is_first_block, b2
        /// reserved; docs/references/driver.md §3.3).
        block_attr, with_block_attr, 2:0
    );
    flag!(
        /// is_last_block, bit 0 (block_attr b0).
        is_last_block, with_last_block, 0
    );
    flag!(
        /// is_first_block, bit 1 (block_attr b1).
        is_first_block, with_first_block, 1
    );
    field!(
        /// cached_crc_iv_index, bits 5:3: which of the 8 cached CRC initial
        /// values to use (docs/references/wiki.md §J.1).
        cached_crc_iv_index, with_cached_crc_iv_index, 5:3
    );
    field!(
        /// endian_type, bits 13:6: the eight swap bits below as one byte
        /// (driver `sdma_cme_desc_word`).
        endian_type, with_endian_type, 13:6
    );
    flag!(
        /// result_byte_swap, bit 6.
        result_byte_swap, with_result_byte_swap, 6
    );
    flag!(
        /// result_bit_swap, bit 7.
        result_bit_swap, with_result_bit_swap, 7
    );
    flag!(
        /// intr_val_byte_swap, bit 8.
        intr_val_byte_swap, with_intr_val_byte_swap, 8
    );
    flag!(
        /// intr_val_bit_swap, bit 9.
        intr_val_bit_swap, with_intr_val_bit_swap, 9
    );
    flag!(
        /// src_byte_swap, bit 10.
        src_byte_swap, with_src_byte_swap, 10
    );
    flag!(
        /// src_bit_swap, bit 11.
        src_bit_swap, with_src_bit_swap, 11
    );
    flag!(
        /// init_byte_swap, bit 12.
        init_byte_swap, with_init_byte_swap, 12
    );
    flag!(
        /// init_bit_swap, bit 13.
        init_bit_swap, with_init_bit_swap, 13
    );
    flag!(
        /// validate_crc, bit 14: compare the computed CRC with the expected one.
        validate_crc, with_validate_crc, 14
    );
    flag!(
        /// use_stored_crc_iv, bit 15: start from the cached IV selected by
        /// cached_crc_iv_index.
        use_stored_crc_iv, with_use_stored_crc_iv, 15
    );
    flag!(
        /// send_crc (driver `send_crc_result`), bit 16: append the computed CRC
        /// to the stream.
        send_crc, with_send_crc, 16
    );
    flag!(
        /// store_crc_result, bit 17.
        store_crc_result, with_store_crc_result, 17
    );
    flag!(
        /// store_source_crc, bit 18.
        store_source_crc, with_store_source_crc, 18
    );
    flag!(
        /// copy_src_data (driver `copy_source_data`), bit 19: move the data
        /// as well as computing the CRC/checksum.
        copy_src_data, with_copy_src_data, 19
    );
    field!(
        /// optype (driver `op_type`), bits 22:20, as a number: the
        /// [`CmeType`], or the [`CceType`] when op = CCE.
        optype_value, with_optype_value, 22:20
    );
    field!(
        /// op (driver `ssmae_op`), bits 25:23, as a number: the [`SdmaOp`].
        op_value, with_op_value, 25:23
    );
    flag!(
        /// write_barrier, bit 26 (driver overlay `sdma_cme_desc_word`;
        /// barrier type 2, docs/references/driver.md §3.4).
        write_barrier, with_write_barrier, 26
    );
    field!(
        /// Bits 31:27, reserved on V3 (bit 28 is a V4-only notification bit,
        /// docs/references/wiki.md §J.1).
        reserved, with_reserved, 31:27
    );

    /// The engine this word selects (bits 25:23).
    #[must_use]
    pub const fn op(self) -> SdmaOp {
        SdmaOp::from_bits(self.op_value())
    }

    /// Returns a copy with op (bits 25:23) set.
    #[must_use]
    pub const fn with_op(self, op: SdmaOp) -> Self {
        self.with_op_value(op.bits())
    }

    /// Returns a copy set up for CCE in-transfer compute: op = CCE, optype =
    /// `t`, and the input / output dtype codes (4 bits each) in bits 11:8 /
    /// 15:12, which the CCE meta-ctrl reuses over the CME CRC bits
    /// (docs/references/wiki.md §C.6). Codes above 0xF do not fit: `None`.
    #[must_use]
    pub const fn with_cce(self, t: CceType, in_dtype: u8, out_dtype: u8) -> Option<Self> {
        if in_dtype > 0xF || out_dtype > 0xF {
            return None;
        }
        let w = self.with_op(SdmaOp::Cce).with_cce_type(t);
        Some(Self(
            (w.0 & !0xFF00) | ((in_dtype as u32) << 8) | ((out_dtype as u32) << 12),
        ))
    }

    /// Returns a copy set up for the cross-bar transpose: op = DRE (the
    /// strided/transpose engine, P9.1 §3) with the element's dtype code
    /// in bits 11:8, where the CCE keeps its input dtype. The field is this
    /// simulator's choice (the DRE word's layout is not published): the
    /// data path needs the element size to land a tile transposed.
    #[must_use]
    pub const fn with_xbar(self, elem_dtype: u8) -> Option<Self> {
        if elem_dtype > 0xF {
            return None;
        }
        let w = self.with_op(SdmaOp::Dre);
        Some(Self((w.0 & !0x0F00) | ((elem_dtype as u32) << 8)))
    }

    /// The element dtype of a cross-bar transpose word made by
    /// [`CmeWord::with_xbar`] from the default copy word: `None` for any
    /// other word, DRE ones included (the inline path's 0xB8 fill reads as
    /// DRE and must stay a plain copy, P9.1 §5).
    #[must_use]
    pub const fn xbar_dtype(self) -> Option<u8> {
        let base = Self::DEFAULT_COPY.with_op(SdmaOp::Dre).0 & !0x0F00;
        if self.0 & !0x0F00 == base {
            Some(((self.0 >> 8) & 0xF) as u8)
        } else {
            None
        }
    }

    /// optype (bits 22:20) read as a [`CmeType`], whatever op says.
    #[must_use]
    pub const fn cme_type(self) -> CmeType {
        CmeType::from_bits(self.optype_value())
    }

    /// Returns a copy with optype (bits 22:20) set to a [`CmeType`].
    #[must_use]
    pub const fn with_cme_type(self, t: CmeType) -> Self {
        self.with_optype_value(t as u8)
    }

    /// optype (bits 22:20) read as a [`CceType`]; `None` for 6 and 7.
    #[must_use]
    pub const fn cce_type(self) -> Option<CceType> {
        CceType::from_bits(self.optype_value())
    }

    /// Returns a copy with optype (bits 22:20) set to a [`CceType`].
    #[must_use]
    pub const fn with_cce_type(self, t: CceType) -> Self {
        self.with_optype_value(t as u8)
    }

    /// optype interpreted for the op: the [`CceType`] when op = CCE, the
    /// [`CmeType`] otherwise (docs/references/wiki.md §C.6, §J.1).
    #[must_use]
    pub const fn optype(self) -> OpType {
        match self.op() {
            SdmaOp::Cce => match self.cce_type() {
                Some(t) => OpType::Cce(t),
                None => OpType::CceUnknown(self.optype_value()),
            },
            _ => OpType::Cme(self.cme_type()),
        }
    }
}

impl From<u32> for CmeWord {
    fn from(raw: u32) -> Self {
        Self(raw)
    }
}

impl From<CmeWord> for u32 {
    fn from(w: CmeWord) -> Self {
        w.0
    }
}

impl fmt::Debug for CmeWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmeWord")
            .field("raw", &format_args!("{:#010x}", self.0))
            .field("op", &self.op())
            .field("optype", &self.optype())
            .field("block_attr", &self.block_attr())
            .field("cached_crc_iv_index", &self.cached_crc_iv_index())
            .field("endian_type", &format_args!("{:#04x}", self.endian_type()))
            .field("validate_crc", &self.validate_crc())
            .field("use_stored_crc_iv", &self.use_stored_crc_iv())
            .field("send_crc", &self.send_crc())
            .field("store_crc_result", &self.store_crc_result())
            .field("store_source_crc", &self.store_source_crc())
            .field("copy_src_data", &self.copy_src_data())
            .field("write_barrier", &self.write_barrier())
            .field("reserved", &self.reserved())
            .finish()
    }
}

/// `SDMA_CMETYPE`: what the CME computes over the data (P9.1 §3;
/// docs/references/wiki.md §C.1). All eight 3-bit values are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CmeType {
    /// Plain copy.
    Copy = 0,
    /// CRC-32.
    Crc32 = 1,
    /// CRC-32C (Castagnoli).
    Crc32c = 2,
    /// 16-bit checksum.
    Cksum16 = 3,
    /// 32-bit checksum.
    Cksum32 = 4,
    /// CRC-16.
    Crc16 = 5,
    /// Adler-32.
    Cksum32Adler = 6,
    /// CRC-8.
    Crc8 = 7,
}

impl CmeType {
    /// Every value, in encoding order.
    pub const ALL: [Self; 8] = [
        Self::Copy,
        Self::Crc32,
        Self::Crc32c,
        Self::Cksum16,
        Self::Cksum32,
        Self::Crc16,
        Self::Cksum32Adler,
        Self::Crc8,
    ];

    /// The type encoded by the low 3 bits of `bits`.
    #[must_use]
    pub const fn from_bits(bits: u8) -> Self {
        Self::ALL[(bits & 0x7) as usize]
    }

    /// The spec name (`SDMA_CMETYPE` without prefix).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Copy => "COPY",
            Self::Crc32 => "CRC32",
            Self::Crc32c => "CRC32C",
            Self::Cksum16 => "CKSUM16",
            Self::Cksum32 => "CKSUM32",
            Self::Crc16 => "CRC16",
            Self::Cksum32Adler => "CKSUM32_ADLER",
            Self::Crc8 => "CRC8",
        }
    }
}

/// `SDMAOP` (driver `ssmae_op`): which application engine handles the
/// descriptor (P9.1 §3; docs/references/wiki.md §C.1, §J.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SdmaOp {
    /// 1: DRE, the data reordering (strided/transpose) engine.
    Dre,
    /// 2: CME, the copy / CRC-checksum engine.
    Cme,
    /// 4: CCE, the in-transfer compute engine.
    Cce,
    /// Any other 3-bit value (0, 3, 5, 6, 7): no engine is documented.
    Unknown(u8),
}

impl SdmaOp {
    /// The op encoded by the low 3 bits of `bits`.
    #[must_use]
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0x7 {
            1 => Self::Dre,
            2 => Self::Cme,
            4 => Self::Cce,
            other => Self::Unknown(other),
        }
    }

    /// The 3-bit encoding (an `Unknown` value keeps only its low 3 bits).
    #[must_use]
    pub const fn bits(self) -> u8 {
        match self {
            Self::Dre => 1,
            Self::Cme => 2,
            Self::Cce => 4,
            Self::Unknown(v) => v & 0x7,
        }
    }

    /// The spec name: "DRE", "CME", "CCE", or "UNKNOWN".
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Dre => "DRE",
            Self::Cme => "CME",
            Self::Cce => "CCE",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
}

/// `SDMA_CCETYPE`: the compute operation in optype when op = CCE
/// (docs/references/wiki.md §C.6, §F.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CceType {
    /// acc += src.
    Add = 0,
    /// acc = src × scale + acc.
    Fma = 1,
    /// Running maximum.
    Max = 2,
    /// Running minimum.
    Min = 3,
    /// Device-only combined multi-descriptor packet.
    Ext = 4,
    /// Gradient compression / decompression.
    Gce = 5,
}

impl CceType {
    /// Every value, in encoding order.
    pub const ALL: [Self; 6] = [
        Self::Add,
        Self::Fma,
        Self::Max,
        Self::Min,
        Self::Ext,
        Self::Gce,
    ];

    /// The type encoded by `bits` (after masking to 3 bits); `None` for 6, 7.
    #[must_use]
    pub const fn from_bits(bits: u8) -> Option<Self> {
        let v = (bits & 0x7) as usize;
        if v < Self::ALL.len() {
            Some(Self::ALL[v])
        } else {
            None
        }
    }

    /// The spec name (`SDMA_CCETYPE` without prefix).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Add => "ADD",
            Self::Fma => "FMA",
            Self::Max => "MAX",
            Self::Min => "MIN",
            Self::Ext => "EXT",
            Self::Gce => "GCE",
        }
    }
}

/// optype as meant by the op beside it ([`CmeWord::optype`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpType {
    /// op is not CCE: a CME type (all eight values are named).
    Cme(CmeType),
    /// op = CCE and optype names a CCE type.
    Cce(CceType),
    /// op = CCE and optype is 6 or 7: undocumented.
    CceUnknown(u8),
}

impl OpType {
    /// The spec name ("COPY", "CRC32C", "FMA", …; "UNKNOWN" for an unnamed
    /// CCE value).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cme(t) => t.name(),
            Self::Cce(t) => t.name(),
            Self::CceUnknown(_) => "UNKNOWN",
        }
    }

    /// The 3-bit optype value.
    #[must_use]
    pub const fn bits(self) -> u8 {
        match self {
            Self::Cme(t) => t as u8,
            Self::Cce(t) => t as u8,
            Self::CceUnknown(v) => v & 0x7,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_round_trips() {
        for v in 0..8u8 {
            assert_eq!(CmeType::from_bits(v) as u8, v);
            assert_eq!(SdmaOp::from_bits(v).bits(), v);
            if let Some(t) = CceType::from_bits(v) {
                assert_eq!(t as u8, v);
            }
        }
        assert_eq!(CceType::from_bits(6), None);
        assert_eq!(CceType::from_bits(7), None);
        assert_eq!(SdmaOp::from_bits(3), SdmaOp::Unknown(3));
    }

    #[test]
    fn cross_bar_word_round_trips_its_dtype_and_nothing_else_reads_as_one() {
        for code in 0..=0xFu8 {
            let w = CmeWord::DEFAULT_COPY.with_xbar(code).map(CmeWord::raw);
            let w = w.map(CmeWord::from_raw);
            assert_eq!(w.map(|w| w.op()), Some(SdmaOp::Dre));
            assert_eq!(w.and_then(CmeWord::xbar_dtype), Some(code));
        }
        assert_eq!(CmeWord::DEFAULT_COPY.with_xbar(0x10), None);
        assert_eq!(CmeWord::DEFAULT_COPY.xbar_dtype(), None);
        // The inline path's never-written word1 is DRE, but not a cross-bar word.
        let b8 = CmeWord::from_raw(0xB8B8_B8B8);
        assert_eq!(b8.op(), SdmaOp::Dre);
        assert_eq!(b8.xbar_dtype(), None);
    }
}
