//! A descriptor decoded for humans and tools: [`DescriptorDecode`] (serde
//! `Serialize`, stable field order), [`render_text`], and
//! [`parse_hex_descriptor`] for the 32-hex-digit memory-order input form.
//!
//! The JSON format is documented in `docs/descriptors.md`. Every reading is
//! shown at once — word 1 as TX meta_ctrl (`cme`) and as RX buf2_ptr_lo
//! (`rx`), bytes 8–15 as buf_ptr and as meta1/meta2 (`tx_meta`) — because the
//! 16 bytes do not say which ring they came from.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::Serialize;
use soc_map::{Hex, Hex32};

use crate::desc::{DESCRIPTOR_BYTES, Descriptor};
use crate::word1::CmeWord;

/// Number of hex digits in the text form of a descriptor.
pub const DESCRIPTOR_HEX_DIGITS: usize = 2 * DESCRIPTOR_BYTES;

/// A descriptor with every field by its spec name (docs/references/driver.md §3.1–3.3).
///
/// Word 0 fields sit at the top level; `len` assumes ENCODE_64K is on, as
/// the driver programs it, so a LEN field of 0 reads 65536.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DescriptorDecode {
    /// The 16 bytes as 32 lowercase hex digits, memory order (byte 0 first).
    pub raw: String,
    /// Word 0 (`len_ctrl`), bytes 0–3 little endian.
    pub word0: Hex32,
    /// Word 1, bytes 4–7 little endian.
    pub word1: Hex32,
    /// Bytes 8–15 little endian.
    pub buf_ptr: Hex,
    /// Byte count (LEN, 0 → 65536; the field's driver name, as traces
    /// write it: `desc … len=`).
    pub len: u32,
    /// META, bit 23.
    pub meta: bool,
    /// RING_ID, bits 25:24.
    pub ring_id: u8,
    /// FIRST, bit 26.
    pub first: bool,
    /// LAST, bit 27.
    pub last: bool,
    /// INT_EN, bit 28.
    pub int_en: bool,
    /// SOW, bit 29.
    pub sow: bool,
    /// DMB, bit 30.
    pub dmb: bool,
    /// CONCAT, bit 31.
    pub concat: bool,
    /// Bits 22:16 (undefined; non-zero deserves a warning).
    pub reserved_16_22: u8,
    /// Word 1 read as TX meta_ctrl.
    pub cme: CmeDecode,
    /// The RX reading of words 1–3.
    pub rx: RxDecode,
    /// The meta-descriptor reading of bytes 8–15.
    pub tx_meta: TxMetaDecode,
}

/// Word 1 read as the TX CME command word (docs/references/driver.md §3.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CmeDecode {
    /// Bits 2:0.
    pub block_attr: u8,
    /// Bit 0.
    pub is_last_block: bool,
    /// Bit 1.
    pub is_first_block: bool,
    /// Bits 5:3.
    pub cached_crc_iv_index: u8,
    /// Bits 13:6 (the eight swap flags below).
    pub endian_type: u8,
    /// Bit 6.
    pub result_byte_swap: bool,
    /// Bit 7.
    pub result_bit_swap: bool,
    /// Bit 8.
    pub intr_val_byte_swap: bool,
    /// Bit 9.
    pub intr_val_bit_swap: bool,
    /// Bit 10.
    pub src_byte_swap: bool,
    /// Bit 11.
    pub src_bit_swap: bool,
    /// Bit 12.
    pub init_byte_swap: bool,
    /// Bit 13.
    pub init_bit_swap: bool,
    /// Bit 14.
    pub validate_crc: bool,
    /// Bit 15.
    pub use_stored_crc_iv: bool,
    /// Bit 16.
    pub send_crc: bool,
    /// Bit 17.
    pub store_crc_result: bool,
    /// Bit 18.
    pub store_source_crc: bool,
    /// Bit 19.
    pub copy_src_data: bool,
    /// Bits 22:20 by name: the CME type, or the CCE type when op = CCE.
    pub optype: &'static str,
    /// Bits 22:20.
    pub optype_value: u8,
    /// Bits 25:23 by name: "DRE", "CME", "CCE" or "UNKNOWN".
    pub op: &'static str,
    /// Bits 25:23.
    pub op_value: u8,
    /// Bit 26.
    pub write_barrier: bool,
    /// Bits 31:27 (reserved on V3).
    pub reserved_27_31: u8,
}

/// The RX (S2M) reading (docs/references/driver.md §3.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RxDecode {
    /// Destination address, bytes 8–15 (= `buf_ptr`).
    pub buf1_ptr: Hex,
    /// Second (header-split) buffer, low 32 bits (= `word1`).
    pub buf2_ptr_lo: Hex32,
}

/// The meta-descriptor reading of bytes 8–15 (docs/references/driver.md §3.1 `tx_meta`;
/// CCE W2/W3, docs/references/wiki.md §C.6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TxMetaDecode {
    /// Bytes 8–11.
    pub meta1: Hex32,
    /// Bytes 12–15.
    pub meta2: Hex32,
}

impl DescriptorDecode {
    /// Decodes every field of `desc`.
    #[must_use]
    pub fn new(desc: &Descriptor) -> Self {
        let w0 = desc.len_ctrl();
        let len = w0.len_bytes(true);
        Self {
            raw: desc.to_hex(),
            word0: Hex32(w0.raw()),
            word1: Hex32(desc.word1()),
            buf_ptr: Hex(desc.buf_ptr()),
            len,
            meta: w0.meta(),
            ring_id: w0.ring_id(),
            first: w0.first(),
            last: w0.last(),
            int_en: w0.int_en(),
            sow: w0.sow(),
            dmb: w0.dmb(),
            concat: w0.concat(),
            reserved_16_22: w0.reserved(),
            cme: CmeDecode::new(CmeWord::from_raw(desc.word1())),
            rx: RxDecode {
                buf1_ptr: Hex(desc.rx().dst()),
                buf2_ptr_lo: Hex32(desc.rx().buf2_ptr_lo()),
            },
            tx_meta: TxMetaDecode {
                meta1: Hex32(desc.tx_meta().meta1()),
                meta2: Hex32(desc.tx_meta().meta2()),
            },
        }
    }
}

impl CmeDecode {
    /// Decodes every field of a CME command word.
    #[must_use]
    pub fn new(w: CmeWord) -> Self {
        Self {
            block_attr: w.block_attr(),
            is_last_block: w.is_last_block(),
            is_first_block: w.is_first_block(),
            cached_crc_iv_index: w.cached_crc_iv_index(),
            endian_type: w.endian_type(),
            result_byte_swap: w.result_byte_swap(),
            result_bit_swap: w.result_bit_swap(),
            intr_val_byte_swap: w.intr_val_byte_swap(),
            intr_val_bit_swap: w.intr_val_bit_swap(),
            src_byte_swap: w.src_byte_swap(),
            src_bit_swap: w.src_bit_swap(),
            init_byte_swap: w.init_byte_swap(),
            init_bit_swap: w.init_bit_swap(),
            validate_crc: w.validate_crc(),
            use_stored_crc_iv: w.use_stored_crc_iv(),
            send_crc: w.send_crc(),
            store_crc_result: w.store_crc_result(),
            store_source_crc: w.store_source_crc(),
            copy_src_data: w.copy_src_data(),
            optype: w.optype().name(),
            optype_value: w.optype_value(),
            op: w.op().name(),
            op_value: w.op_value(),
            write_barrier: w.write_barrier(),
            reserved_27_31: w.reserved(),
        }
    }

    /// The names of the single-bit fields that are set, in bit order.
    fn set_flags(&self) -> Vec<&'static str> {
        [
            (self.result_byte_swap, "result_byte_swap"),
            (self.result_bit_swap, "result_bit_swap"),
            (self.intr_val_byte_swap, "intr_val_byte_swap"),
            (self.intr_val_bit_swap, "intr_val_bit_swap"),
            (self.src_byte_swap, "src_byte_swap"),
            (self.src_bit_swap, "src_bit_swap"),
            (self.init_byte_swap, "init_byte_swap"),
            (self.init_bit_swap, "init_bit_swap"),
            (self.validate_crc, "validate_crc"),
            (self.use_stored_crc_iv, "use_stored_crc_iv"),
            (self.send_crc, "send_crc"),
            (self.store_crc_result, "store_crc_result"),
            (self.store_source_crc, "store_source_crc"),
            (self.copy_src_data, "copy_src_data"),
            (self.write_barrier, "write_barrier"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }
}

impl Descriptor {
    /// Every field decoded ([`DescriptorDecode`]).
    #[must_use]
    pub fn decode(&self) -> DescriptorDecode {
        DescriptorDecode::new(self)
    }

    /// The 16 bytes as 32 lowercase hex digits in memory order — the form
    /// [`parse_hex_descriptor`] reads.
    #[must_use]
    pub fn to_hex(&self) -> String {
        self.to_bytes()
            .iter()
            .fold(String::with_capacity(DESCRIPTOR_HEX_DIGITS), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }
}

/// Why text is not a descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DescParseError {
    /// A `0x`-prefixed token: a descriptor is bytes in memory order, not a
    /// number, so the prefix would be ambiguous.
    HexPrefix,
    /// A character that is neither a hex digit, `_` nor white space.
    InvalidChar {
        /// The character.
        ch: char,
        /// Its 1-based position in the text, in characters.
        position: usize,
    },
    /// Not exactly 32 hex digits.
    WrongLength {
        /// Hex digits found.
        found: usize,
    },
}

impl fmt::Display for DescParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HexPrefix => write!(
                f,
                "`0x` prefix not accepted: a descriptor is {DESCRIPTOR_HEX_DIGITS} hex digits \
                 giving its {DESCRIPTOR_BYTES} bytes in memory order (byte 0 first), not a number"
            ),
            Self::InvalidChar { ch, position } => write!(
                f,
                "invalid character {ch:?} at position {position}: expected hex digits, `_` or spaces"
            ),
            Self::WrongLength { found } => write!(
                f,
                "expected {DESCRIPTOR_HEX_DIGITS} hex digits ({DESCRIPTOR_BYTES} bytes in memory \
                 order), found {found}"
            ),
        }
    }
}

impl std::error::Error for DescParseError {}

/// Parses a descriptor from exactly 32 hex digits giving its 16 bytes in
/// memory order (byte 0 first); `_` and white space may separate digits. A
/// `0x` prefix is rejected: it would read as a number, whose byte order is the
/// reverse of memory order.
pub fn parse_hex_descriptor(text: &str) -> Result<Descriptor, DescParseError> {
    if text
        .split(|c: char| c.is_whitespace() || c == '_')
        .any(|token| token.starts_with("0x") || token.starts_with("0X"))
    {
        return Err(DescParseError::HexPrefix);
    }
    let mut digits = Vec::with_capacity(DESCRIPTOR_HEX_DIGITS);
    for (i, ch) in text.chars().enumerate() {
        if ch == '_' || ch.is_whitespace() {
            continue;
        }
        match ch.to_digit(16) {
            Some(d) => digits.push(d as u8),
            None => {
                return Err(DescParseError::InvalidChar {
                    ch,
                    position: i + 1,
                });
            }
        }
    }
    if digits.len() != DESCRIPTOR_HEX_DIGITS {
        return Err(DescParseError::WrongLength {
            found: digits.len(),
        });
    }
    let mut bytes = [0u8; DESCRIPTOR_BYTES];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (pair[0] << 4) | pair[1];
    }
    Ok(Descriptor::from_bytes(&bytes))
}

impl FromStr for Descriptor {
    type Err = DescParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_hex_descriptor(s)
    }
}

/// The multi-line human form of a decode: the words, word 0's fields, word 1
/// as a CME command word, the RX and meta readings, then a warning line for
/// every undefined or unknown value (none for an all-zero word 1, the usual
/// RX descriptor).
#[must_use]
pub fn render_text(d: &DescriptorDecode) -> String {
    let mut out = String::new();
    // `write!` to a String cannot fail.
    let _ = render_into(&mut out, d);
    out
}

fn render_into(out: &mut String, d: &DescriptorDecode) -> fmt::Result {
    let grouped: Vec<&str> = (0..d.raw.len())
        .step_by(8)
        .filter_map(|i| d.raw.get(i..i + 8))
        .collect();
    writeln!(out, "raw      {}  (memory order)", grouped.join(" "))?;

    let flags: Vec<&str> = [
        (d.meta, "META"),
        (d.first, "FIRST"),
        (d.last, "LAST"),
        (d.int_en, "INT_EN"),
        (d.sow, "SOW"),
        (d.dmb, "DMB"),
        (d.concat, "CONCAT"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect();
    writeln!(out, "word0    {}  len_ctrl", d.word0)?;
    writeln!(
        out,
        "         length {}  ring_id {}  flags {}  reserved[22:16] {:#04x}",
        d.len,
        d.ring_id,
        list_or_dash(&flags),
        d.reserved_16_22
    )?;

    let c = &d.cme;
    let blocks: Vec<&str> = [
        (c.is_first_block, "is_first_block"),
        (c.is_last_block, "is_last_block"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect();
    writeln!(out, "word1    {}  TX meta_ctrl (CME command word)", d.word1)?;
    writeln!(
        out,
        "         op {} ({})  optype {} ({})",
        c.op, c.op_value, c.optype, c.optype_value
    )?;
    writeln!(
        out,
        "         block_attr {:#05b} ({})  cached_crc_iv_index {}  endian_type {:#04x}",
        c.block_attr,
        list_or_dash(&blocks),
        c.cached_crc_iv_index,
        c.endian_type
    )?;
    writeln!(
        out,
        "         flags {}  reserved[31:27] {:#04x}",
        list_or_dash(&c.set_flags()),
        c.reserved_27_31
    )?;

    writeln!(
        out,
        "buf_ptr  {:#018x}  TX source / RX buf1_ptr destination",
        d.buf_ptr.0
    )?;
    writeln!(
        out,
        "rx       buf1_ptr {:#018x}  buf2_ptr_lo {}",
        d.rx.buf1_ptr.0, d.rx.buf2_ptr_lo
    )?;
    writeln!(
        out,
        "tx_meta  meta1 {}  meta2 {}",
        d.tx_meta.meta1, d.tx_meta.meta2
    )?;

    if d.reserved_16_22 != 0 {
        writeln!(
            out,
            "warning: word0 bits 22:16 = {:#04x} are undefined in the driver layout",
            d.reserved_16_22
        )?;
    }
    if c.reserved_27_31 != 0 {
        writeln!(
            out,
            "warning: word1 bits 31:27 = {:#04x} are reserved (TX view)",
            c.reserved_27_31
        )?;
    }
    // An all-zero word 1 is the normal RX case (no second buffer); only a
    // non-zero word is worth questioning as a TX command word.
    let tx_word = d.word1.0 != 0;
    if tx_word && c.op == "UNKNOWN" {
        writeln!(
            out,
            "warning: word1 op = {} names no engine (DRE 1, CME 2, CCE 4) (TX view)",
            c.op_value
        )?;
    }
    if tx_word && c.op == "CCE" && c.optype == "UNKNOWN" {
        writeln!(
            out,
            "warning: word1 optype = {} names no CCE operation (TX view)",
            c.optype_value
        )?;
    }
    Ok(())
}

fn list_or_dash(names: &[&str]) -> String {
    if names.is_empty() {
        "-".to_string()
    } else {
        names.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let d = Descriptor::from_bytes(&[
            0x00, 0x10, 0x00, 0x0d, 0x03, 0x00, 0x08, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00,
            0x00, 0x00,
        ]);
        assert_eq!(d.to_hex(), "0010000d030008010000000020000000");
        assert_eq!(parse_hex_descriptor(&d.to_hex()), Ok(d));
    }
}
