//! Building descriptors for tests and traces.
//!
//! ```
//! use dma_abi::{Flags, rx, tx};
//!
//! let flags = Flags { first: true, last: true, ring_id: 1, ..Flags::default() };
//! let t = tx(4096, 0x20_0000_0000, flags)?;
//! assert_eq!(t.len_ctrl().raw(), 0x0D00_1000);
//! assert_eq!(t.word1(), dma_abi::DEFAULT_COPY_WORD1);
//! let r = rx(65536, 0x40_0000_1000)?.with_flags(Flags { ring_id: 1, ..Flags::default() });
//! assert_eq!(r.len_ctrl().raw(), 0x0100_0000);
//! # Ok::<(), dma_abi::LenError>(())
//! ```

use crate::desc::Descriptor;
use crate::word0::{LenCtrl, LenError};
use crate::word1::CmeWord;

/// The control flags of word 0 (everything except LEN and the undefined bits
/// 22:16; docs/references/driver.md §3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// FIRST, bit 26.
    pub first: bool,
    /// LAST, bit 27.
    pub last: bool,
    /// INT_EN, bit 28.
    pub int_en: bool,
    /// DMB, bit 30 (M2S).
    pub dmb: bool,
    /// SOW, bit 29 (S2M).
    pub sow: bool,
    /// CONCAT, bit 31.
    pub concat: bool,
    /// META, bit 23.
    pub meta: bool,
    /// RING_ID, bits 25:24 (only the low 2 bits are used).
    pub ring_id: u8,
}

impl Flags {
    /// FIRST | LAST with the given ring id: a single-descriptor packet, as the
    /// driver builds every TX descriptor (docs/references/driver.md §3.2).
    #[must_use]
    pub const fn single(ring_id: u8) -> Self {
        Self {
            first: true,
            last: true,
            int_en: false,
            dmb: false,
            sow: false,
            concat: false,
            meta: false,
            ring_id,
        }
    }
}

impl LenCtrl {
    /// The control flags of this word.
    #[must_use]
    pub const fn flags(self) -> Flags {
        Flags {
            first: self.first(),
            last: self.last(),
            int_en: self.int_en(),
            dmb: self.dmb(),
            sow: self.sow(),
            concat: self.concat(),
            meta: self.meta(),
            ring_id: self.ring_id(),
        }
    }

    /// Returns a copy with every control flag replaced by `flags`; LEN and
    /// bits 22:16 are kept.
    #[must_use]
    pub const fn with_flags(self, flags: Flags) -> Self {
        self.with_first(flags.first)
            .with_last(flags.last)
            .with_int_en(flags.int_en)
            .with_dmb(flags.dmb)
            .with_sow(flags.sow)
            .with_concat(flags.concat)
            .with_meta(flags.meta)
            .with_ring_id(flags.ring_id)
    }
}

impl Descriptor {
    /// Returns a copy with word 0's control flags replaced (LEN and the
    /// undefined bits are kept).
    #[must_use]
    pub fn with_flags(self, flags: Flags) -> Self {
        let w0 = self.len_ctrl().with_flags(flags);
        self.with_len_ctrl(w0)
    }
}

/// An M2S (TX) descriptor reading `len_bytes` (1..=65536) from `src`, with
/// word 1 = [`DEFAULT_COPY_WORD1`](crate::DEFAULT_COPY_WORD1), the driver's
/// plain CME copy; replace it with [`Descriptor::with_word1`].
pub fn tx(len_bytes: u32, src: u64, flags: Flags) -> Result<Descriptor, LenError> {
    let w0 = LenCtrl::default()
        .with_len_bytes(len_bytes)?
        .with_flags(flags);
    Ok(Descriptor::new(w0, CmeWord::DEFAULT_COPY.raw(), src))
}

/// An S2M (RX) descriptor writing `len_bytes` (1..=65536) to `dst`; no flags
/// and ring id 0 (the driver's RX descriptors carry neither FIRST nor LAST) —
/// add them with [`Descriptor::with_flags`]. buf2_ptr_lo is 0.
pub fn rx(len_bytes: u32, dst: u64) -> Result<Descriptor, LenError> {
    let w0 = LenCtrl::default().with_len_bytes(len_bytes)?;
    Ok(Descriptor::new(w0, 0, dst))
}
