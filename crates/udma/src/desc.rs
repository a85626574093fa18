//! A fetched 16-byte descriptor, decoded through `dma-abi` (the byte-exact
//! layout lives there; docs/references/driver.md §3.1–3.3).

use dma_abi::{CmeType, CmeWord, Descriptor, LenCtrl, SdmaOp};

/// The three words of a descriptor as the engine reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDesc {
    /// word0 (`len_ctrl`).
    pub word0: u32,
    /// word1: TX CME command word / RX buf2_ptr_lo.
    pub word1: u32,
    /// TX source / RX destination.
    pub buf_ptr: u64,
}

impl RawDesc {
    /// From the 16 bytes in memory order.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        let d = Descriptor::from_bytes(&bytes);
        Self {
            word0: d.len_ctrl().raw(),
            word1: d.word1(),
            buf_ptr: d.buf_ptr(),
        }
    }

    fn w0(self) -> LenCtrl {
        LenCtrl::from_raw(self.word0)
    }

    /// Payload bytes (LEN 0 is 64 KiB when ENCODE_64K is on).
    pub fn len_bytes(self, encode_64k: bool) -> u32 {
        self.w0().len_bytes(encode_64k)
    }

    /// A CCE meta descriptor: META (word0 bit 23) with a meta_ctrl word1
    /// whose op field reads CCE (the encoders set bit 25, "CCE meta valid";
    /// docs/references/wiki.md §F.2). Word 1 is then meta_ctrl, bytes 8–15 hold
    /// meta1/meta2, and it carries no data. META on any other descriptor
    /// is ignored (the inline path's 0xB8 fill sets it; P9.1 §5).
    pub fn meta(self) -> bool {
        self.w0().meta() && Cme(self.word1).op() == SdmaOp::Cce
    }

    /// Data bytes an M2S descriptor reads: [`RawDesc::len_bytes`], or 0 for
    /// a META descriptor.
    pub fn data_len(self, encode_64k: bool) -> u32 {
        if self.meta() {
            0
        } else {
            self.len_bytes(encode_64k)
        }
    }

    /// Ring id, bits 25:24.
    pub fn ring_id(self) -> u8 {
        self.w0().ring_id()
    }

    /// FIRST.
    pub fn first(self) -> bool {
        self.w0().first()
    }

    /// LAST.
    pub fn last(self) -> bool {
        self.w0().last()
    }

    /// DMB.
    pub fn dmb(self) -> bool {
        self.w0().dmb()
    }

    /// SOW (S2M strong-order write).
    pub fn sow(self) -> bool {
        self.w0().sow()
    }

    /// The RX second buffer (header split): `buf2_ptr_lo` in the 4 GiB
    /// window of `buf1_ptr` (simulator decision, docs/descriptors.md).
    pub fn buf2(self) -> u64 {
        (self.buf_ptr & !0xFFFF_FFFF) | u64::from(self.word1)
    }
}

/// The TX CME command word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cme(pub u32);

impl Cme {
    fn w(self) -> CmeWord {
        CmeWord::from_raw(self.0)
    }

    /// The op (DRE/CME/CCE).
    pub fn op(self) -> SdmaOp {
        self.w().op()
    }

    /// The checksum this CME word asks for, if any.
    pub fn checksum(self) -> Option<cme::ChecksumKind> {
        if self.op() != SdmaOp::Cme {
            return None;
        }
        let code = self.w().cme_type() as u8;
        match self.w().cme_type() {
            CmeType::Copy => None,
            _ => cme::ChecksumKind::from_code(code),
        }
    }

    /// The CCE reduce this word asks for (op = CCE), if any.
    pub fn cce(self) -> Option<cme::ReduceOp> {
        if self.op() != SdmaOp::Cce {
            return None;
        }
        let ty = cme::CceType::from_code(((self.0 >> 20) & 0x7) as u8)?;
        Some(cme::ReduceOp::from_cce(ty, 1.0))
    }

    /// CCE input and output dtypes: word1 bits 11:8 and 15:12
    /// (docs/references/wiki.md §C.6), as dtype codes.
    pub fn cce_dtypes(self) -> Option<(cme::Dtype, cme::Dtype)> {
        let i = cme::Dtype::from_code(((self.0 >> 8) & 0xF) as u8)?;
        let o = cme::Dtype::from_code(((self.0 >> 12) & 0xF) as u8)?;
        Some((i, o))
    }

    /// True for a CME op that computes a checksum.
    pub fn is_cme_checksum(self) -> bool {
        self.checksum().is_some()
    }

    /// copy_src_data: the data goes to the destination.
    pub fn copy_src_data(self) -> bool {
        self.w().copy_src_data()
    }

    /// send_crc: the 4-byte result follows the data in the stream.
    pub fn send_crc(self) -> bool {
        self.w().send_crc()
    }

    /// store_crc_result: keep the result in the IV cache slot.
    pub fn store_crc_result(self) -> bool {
        self.w().store_crc_result()
    }

    /// use_stored_crc_iv: start from the IV cache slot.
    pub fn use_stored_crc_iv(self) -> bool {
        self.w().use_stored_crc_iv()
    }

    /// cached_crc_iv_index.
    pub fn iv_slot(self) -> usize {
        usize::from(self.w().cached_crc_iv_index())
    }

    /// write_barrier.
    pub fn write_barrier(self) -> bool {
        self.w().write_barrier()
    }

    /// validate_crc: compare the result with the stored source CRC.
    pub fn validate_crc(self) -> bool {
        self.w().validate_crc()
    }

    /// store_source_crc: keep the result in the source-CRC store.
    pub fn store_source_crc(self) -> bool {
        self.w().store_source_crc()
    }
}
