//! Word 0 of the descriptor, `len_ctrl`: length and control flags.
//!
//! Driver layout (docs/references/driver.md §3.2; docs/references/wiki.md §0 fact 14, §L.1 #1;
//! docs/references/design.md §8 "Descriptor word0"), identical for M2S (TX) and S2M (RX):
//!
//! | bits  | name    | meaning |
//! |-------|---------|---------|
//! | 15:0  | LEN     | bytes; 0 means 65536 when the engine's `cfg_len.ENCODE_64K` is on (the driver always sets it) |
//! | 22:16 | —       | undefined in the driver; kept and reported as `reserved` |
//! | 23    | META    | meta descriptor (word 1 is meta_ctrl, bytes 8–15 are meta1/meta2; docs/references/wiki.md §C.6, §F.2) |
//! | 25:24 | RING_ID | 2-bit ring generation ("phase"), docs/references/driver.md §3.6 |
//! | 26    | FIRST   | first descriptor of a packet (M2S) |
//! | 27    | LAST    | last descriptor of a packet (M2S) |
//! | 28    | INT_EN  | interrupt on completion |
//! | 29    | SOW     | S2M strong-order write (V3+) |
//! | 30    | DMB     | data memory barrier: previous transfers complete before this one starts (M2S) |
//! | 31    | CONCAT  | packet continues in the next descriptor (runtime book, docs/references/wiki.md §K) |
//!
//! P9.1 §3 quotes a DWARF field order (ringid in bits 31:30, concatenate
//! in bit 24, …) that reads bit-reversed against the driver; the firmware's
//! generation tag lands in bits 25:24 — the driver's RING_ID — which is the
//! quirk [`with_gen_tag`] reproduces.

use std::fmt;

use crate::bits::{field, flag};

/// Largest transfer one descriptor can carry, in bytes (docs/references/driver.md §3.7,
/// `MAX_DMA_DESC_SIZE`); encoded as LEN = 0.
pub const MAX_LEN_BYTES: u32 = 0x1_0000;

/// The mask the firmware's `dma_data_transfer` applies to the old word 0
/// before it ORs in the length and the generation tag (P9.1 §3 QUIRK and
/// §5.1; docs/references/wiki.md §C.1).
pub const GEN_TAG_BUILD_MASK: u32 = 0xFCFF_0000;

/// Word 0 (`len_ctrl`) of a descriptor. Holds the raw word; every field is
/// decoded on demand, so undefined bits survive a decode/encode round trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct LenCtrl(u32);

impl LenCtrl {
    /// LEN, bits 15:0.
    pub const LEN_MASK: u32 = 0x0000_FFFF;
    /// Bits 22:16, undefined in the driver layout.
    pub const RESERVED_MASK: u32 = 0x007F_0000;
    /// META, bit 23.
    pub const META: u32 = 1 << 23;
    /// Shift of RING_ID (driver `M2S_DESC_RING_ID_SHIFT` = 24).
    pub const RING_ID_SHIFT: u32 = 24;
    /// RING_ID, bits 25:24.
    pub const RING_ID_MASK: u32 = 0x3 << 24;
    /// FIRST, bit 26.
    pub const FIRST: u32 = 1 << 26;
    /// LAST, bit 27.
    pub const LAST: u32 = 1 << 27;
    /// INT_EN, bit 28.
    pub const INT_EN: u32 = 1 << 28;
    /// SOW (S2M strong-order write), bit 29.
    pub const SOW: u32 = 1 << 29;
    /// DMB, bit 30.
    pub const DMB: u32 = 1 << 30;
    /// CONCAT, bit 31.
    pub const CONCAT: u32 = 1 << 31;

    /// Wraps a raw word 0.
    #[must_use]
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw word 0.
    #[must_use]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The LEN field, bits 15:0, as stored (0 may mean 65536, see
    /// [`len_bytes`](Self::len_bytes)).
    #[must_use]
    pub const fn len_field(self) -> u16 {
        (self.0 & Self::LEN_MASK) as u16
    }

    /// Returns a copy with the LEN field set to `len` as stored.
    #[must_use]
    pub const fn with_len_field(self, len: u16) -> Self {
        Self((self.0 & !Self::LEN_MASK) | len as u32)
    }

    /// The byte count: LEN, except that LEN = 0 means 65536 when the engine's
    /// `ENCODE_64K` is on (docs/references/driver.md §3.2; the driver always turns it on).
    #[must_use]
    pub const fn len_bytes(self, encode_64k: bool) -> u32 {
        match self.len_field() {
            0 if encode_64k => MAX_LEN_BYTES,
            len => len as u32,
        }
    }

    /// Returns a copy with LEN encoding `bytes` (1..=65536; 65536 → 0, as the
    /// driver's builders do).
    pub const fn with_len_bytes(self, bytes: u32) -> Result<Self, LenError> {
        match encode_len(bytes) {
            Ok(len) => Ok(self.with_len_field(len)),
            Err(e) => Err(e),
        }
    }

    field!(
        /// Bits 22:16, undefined in the driver layout (docs/references/driver.md §3.2, marked unknown).
        /// Non-zero means the descriptor carries bits no documented engine
        /// reads; decoders report them.
        reserved, with_reserved, 22:16
    );
    flag!(
        /// META, bit 23: a meta descriptor — word 1 is meta_ctrl and bytes
        /// 8–15 hold meta1/meta2 instead of an address (docs/references/wiki.md §C.6, §F.2:
        /// the CCE encoders set `0x800000`).
        meta, with_meta, 23
    );
    field!(
        /// RING_ID, bits 25:24: the ring generation the descriptor was written
        /// in (docs/references/driver.md §3.6: 1 after queue reset, +1 mod 4 per wrap). The
        /// firmware inline path stores its generation tag here (P9.1 §5.1).
        ring_id, with_ring_id, 25:24
    );
    flag!(
        /// FIRST, bit 26: first descriptor of a packet (driver `M2S_DESC_FIRST`).
        first, with_first, 26
    );
    flag!(
        /// LAST, bit 27: last descriptor of a packet (driver `M2S_DESC_LAST`).
        last, with_last, 27
    );
    flag!(
        /// INT_EN, bit 28: interrupt on completion (driver `M2S_DESC_INT_EN`,
        /// `S2M_DESC_INT_EN`).
        int_en, with_int_en, 28
    );
    flag!(
        /// SOW, bit 29: S2M strong-order write, V3+ (driver
        /// `S2M_DESC_STRONG_ORDER_WR`; barrier type 3, docs/references/driver.md §3.4).
        sow, with_sow, 29
    );
    flag!(
        /// DMB, bit 30: data memory barrier — all previous transfers complete
        /// before this one starts (driver `M2S_DESC_DMB`; barrier type 1).
        dmb, with_dmb, 30
    );
    flag!(
        /// CONCAT, bit 31: the packet continues in the next descriptor (runtime
        /// book, docs/references/wiki.md §0 fact 14 and §K; not named by the driver).
        concat, with_concat, 31
    );
}

impl From<u32> for LenCtrl {
    fn from(raw: u32) -> Self {
        Self(raw)
    }
}

impl From<LenCtrl> for u32 {
    fn from(w: LenCtrl) -> Self {
        w.0
    }
}

impl fmt::Debug for LenCtrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LenCtrl")
            .field("raw", &format_args!("{:#010x}", self.0))
            .field("len", &self.len_field())
            .field("reserved", &self.reserved())
            .field("meta", &self.meta())
            .field("ring_id", &self.ring_id())
            .field("first", &self.first())
            .field("last", &self.last())
            .field("int_en", &self.int_en())
            .field("sow", &self.sow())
            .field("dmb", &self.dmb())
            .field("concat", &self.concat())
            .finish()
    }
}

/// Why a byte count cannot be a descriptor length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenError {
    /// Zero bytes: LEN = 0 encodes 65536, so an empty descriptor cannot exist.
    Zero,
    /// More than 65536 bytes: split the transfer over several descriptors.
    TooLong(u32),
}

impl fmt::Display for LenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zero => f.write_str(
                "descriptor length must be at least 1 byte (LEN = 0 encodes 65536 bytes)",
            ),
            Self::TooLong(n) => write!(
                f,
                "descriptor length {n} exceeds the 65536-byte maximum of one descriptor"
            ),
        }
    }
}

impl std::error::Error for LenError {}

/// Encodes a byte count as the LEN field: 1..=65535 as is, 65536 → 0
/// (ENCODE_64K, docs/references/driver.md §3.2). Rejects 0 and anything above 65536.
pub const fn encode_len(bytes: u32) -> Result<u16, LenError> {
    match bytes {
        0 => Err(LenError::Zero),
        MAX_LEN_BYTES => Ok(0),
        n if n < MAX_LEN_BYTES => Ok(n as u16),
        n => Err(LenError::TooLong(n)),
    }
}

/// Word 0 as the firmware's inline DMA path builds it (P9.1 §3 QUIRK,
/// §5.1): exactly `(word0 & 0xFCFF0000) | len | (tag << 24)`.
///
/// Reproduced bit for bit, including its edges:
/// - the generation tag lands in bits 25:24, the driver's RING_ID;
/// - the old FIRST/LAST/INT_EN/SOW/DMB/CONCAT, META and undefined bits 22:16
///   survive the mask — whatever the ring slot held before stays set;
/// - a 64 KiB chunk (`len` = 65536) leaves LEN = 0 (65536 under ENCODE_64K)
///   and sets bit 16, one of the undefined bits;
/// - `len` above 16 bits or `tag` above 2 bits spill into the next fields
///   rather than being masked (the firmware only passes tags 0 and 1).
#[must_use]
pub const fn with_gen_tag(word0: u32, len: u32, tag: u32) -> u32 {
    (word0 & GEN_TAG_BUILD_MASK) | len | (tag << 24)
}

/// The generation tag as the firmware's completion poll reads it:
/// `(word0 >> 24) & 3`, i.e. RING_ID (P9.1 §5.1).
#[must_use]
pub const fn gen_tag(word0: u32) -> u8 {
    ((word0 >> LenCtrl::RING_ID_SHIFT) & 0x3) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_partition_the_word() {
        let all = [
            LenCtrl::LEN_MASK,
            LenCtrl::RESERVED_MASK,
            LenCtrl::META,
            LenCtrl::RING_ID_MASK,
            LenCtrl::FIRST,
            LenCtrl::LAST,
            LenCtrl::INT_EN,
            LenCtrl::SOW,
            LenCtrl::DMB,
            LenCtrl::CONCAT,
        ];
        let mut seen = 0u32;
        for m in all {
            assert_eq!(seen & m, 0, "overlap at {m:#x}");
            seen |= m;
        }
        assert_eq!(seen, u32::MAX);
    }

    #[test]
    fn flag_constants_match_accessors() {
        let w = LenCtrl::default();
        assert_eq!(w.with_meta(true).raw(), LenCtrl::META);
        assert_eq!(w.with_first(true).raw(), LenCtrl::FIRST);
        assert_eq!(w.with_last(true).raw(), LenCtrl::LAST);
        assert_eq!(w.with_int_en(true).raw(), LenCtrl::INT_EN);
        assert_eq!(w.with_sow(true).raw(), LenCtrl::SOW);
        assert_eq!(w.with_dmb(true).raw(), LenCtrl::DMB);
        assert_eq!(w.with_concat(true).raw(), LenCtrl::CONCAT);
        assert_eq!(w.with_ring_id(3).raw(), LenCtrl::RING_ID_MASK);
        assert_eq!(w.with_reserved(0x7F).raw(), LenCtrl::RESERVED_MASK);
        assert_eq!(w.with_len_field(0xFFFF).raw(), LenCtrl::LEN_MASK);
    }
}
