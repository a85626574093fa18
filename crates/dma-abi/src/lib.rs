//! Byte-exact DMA wire formats of the Trainium2 (NeuronCore-v3) DMA subsystem.
//!
//! The 16-byte udma/SDMA ring descriptor (`SDMA_CME_BD_DESC`, P9.1 §3;
//! docs/references/driver.md §3.1–3.5) as a zerocopy type, with typed views of its two
//! control words, a builder, and a serializable decode for tools; and the six
//! 64-byte DMA instruction words (P9.1 §2) in [`inst`]: zerocopy layouts,
//! validated decode/encode, a serializable decode and the assembler text
//! form (`docs/instruction-words.md`).
//!
//! | bytes | word | type |
//! |-------|------|------|
//! | 0–3   | word0 `len_ctrl` | [`LenCtrl`] |
//! | 4–7   | word1: TX `meta_ctrl` (the CME command word) / RX `buf2_ptr_lo` | [`CmeWord`] / `u32` |
//! | 8–15  | `buf_ptr`: TX source / RX `buf1_ptr` destination; or `meta1`, `meta2` | `u64` / 2 × `u32` |
//!
//! **Layout decision** (docs/references/design.md §8 "Descriptor word0"; docs/references/wiki.md §L.1 #1): the
//! Linux driver's bit layout is authoritative. The DWARF field order quoted in
//! P9.1 §3 and docs/references/wiki.md §C.1 reads bit-reversed against it; the firmware's
//! generation tag in bits 25:24 (P9.1 §5.1) confirms the driver's RING_ID
//! position. Layout and JSON format are documented in `docs/descriptors.md`.
//!
//! Everything here is a pure function of the 16 bytes: any bit pattern decodes,
//! reserved and undefined bits are kept, and encoding a decoded descriptor
//! gives back the same bytes.

mod bits;
pub mod build;
pub mod decode;
pub mod desc;
pub mod inst;
pub mod word0;
pub mod word1;

pub use build::{Flags, rx, tx};
pub use decode::{
    CmeDecode, DESCRIPTOR_HEX_DIGITS, DescParseError, DescriptorDecode, RxDecode, TxMetaDecode,
    parse_hex_descriptor, render_text,
};
pub use desc::{DESCRIPTOR_BYTES, Descriptor, RxDesc, TxDesc, TxMetaDesc};
pub use word0::{
    GEN_TAG_BUILD_MASK, LenCtrl, LenError, MAX_LEN_BYTES, encode_len, gen_tag, with_gen_tag,
};
pub use word1::{
    CceType, CmeType, CmeWord, DEFAULT_COPY_WORD1, DEFAULT_COPY_WORD1_WRITE_BARRIER, OpType, SdmaOp,
};
