//! The serializable decode of a word ([`InstDecode`]): `kind`, `opcode`
//! (hex string), `extended_opcode` (EXTENDED words), `raw`, `header`, then
//! every field by its seed name in byte order. Groups are nested objects;
//! enums are their published names (unlisted codes as `"0x.."` strings);
//! addresses are objects naming the marker mode and its operands.
//!
//! Documented in `docs/instruction-words.md` §JSON.

use serde::{Serialize, Serializer};
use soc_map::{Addr4, Addr4Mode, Addr8, Hex, Hex32, TableOffset};

use super::raw::WORD_BYTES;
use super::{InstWord, word_hex};

/// A decoded word for tools (`neuron-sim decode --word … --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InstDecode {
    /// `DIRECT2D`, `INDIRECT1D`, `DIRECT2D_XPOSE`, `GATHER_XPOSE`,
    /// `RDMA_DESC_GEN` or `RDMA_DESC_START`.
    pub kind: &'static str,
    /// The header opcode, e.g. `"0xb8"` (`"0xf0"` for the RDMA words).
    pub opcode: Hex,
    /// Byte 12 of the EXTENDED words (8 or 9); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_opcode: Option<u8>,
    /// The 64 bytes as 128 hex digits, memory order.
    pub raw: String,
    /// The header, with its opcode.
    pub header: HeaderDecode,
    /// Every other field, flattened into this object in byte order.
    #[serde(flatten)]
    pub fields: InstWord,
}

/// `NEURON_ISA_TPB_HEADER`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HeaderDecode {
    /// Byte 0.
    pub opcode: Hex,
    /// 4 or 16.
    pub inst_word_len: u8,
    /// Byte 2.
    pub debug_cmd: u8,
    /// Byte 3.
    pub debug_hint: u8,
}

impl InstDecode {
    /// The decode of `word`, whose encoding is `bytes`.
    #[must_use]
    pub fn new(word: InstWord, bytes: &[u8; WORD_BYTES]) -> Self {
        let kind = word.kind();
        let h = word.header();
        Self {
            kind: kind.name(),
            opcode: Hex(u64::from(kind.opcode())),
            extended_opcode: kind.extended_opcode(),
            raw: word_hex(bytes),
            header: HeaderDecode {
                opcode: Hex(u64::from(kind.opcode())),
                inst_word_len: h.inst_word_len.code(),
                debug_cmd: h.debug_cmd,
                debug_hint: h.debug_hint,
            },
            fields: word,
        }
    }
}

/// An ADDR8 operand: the raw value, the marker byte and mode, and the
/// operands of that mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Addr8Decode {
    /// The 8 bytes as a little-endian number.
    pub raw: Hex,
    /// Byte 7 & 0xFC.
    pub marker: Hex,
    /// `IMM`, `SHAPE_REG`, `ADDR_REG`, `ADDR_SHAPE_REG`,
    /// `ADDR_TBL_SHAPE_IMM` or `ADDR_TBL_SHAPE_REG`.
    pub mode: &'static str,
    /// Shape from a shape register (marker bit 6).
    pub shape_reg: bool,
    /// Immediate modes: the SoC address (bits 57:0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<Hex>,
    /// Register modes: the address register.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reg: Option<u8>,
    /// Table modes: the address-table entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<u8>,
    /// Table modes with an immediate offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Hex>,
    /// Table modes with `OFFSET_REG`: the offset register.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_reg: Option<u8>,
    /// Table modes: `OFFSET_WIDE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_wide: Option<bool>,
}

impl Addr8Decode {
    /// The decode of a (valid) ADDR8.
    #[must_use]
    pub fn new(a: Addr8) -> Self {
        let marker = a.marker();
        let mut d = Self {
            raw: Hex(a.encode().unwrap_or_default()),
            marker: Hex(u64::from(marker)),
            mode: "IMM",
            shape_reg: false,
            addr: None,
            reg: None,
            entry: None,
            offset: None,
            offset_reg: None,
            offset_wide: None,
        };
        match a {
            Addr8::Immediate { addr, shape_reg } => {
                d.mode = if shape_reg { "SHAPE_REG" } else { "IMM" };
                d.shape_reg = shape_reg;
                d.addr = Some(Hex(addr));
            }
            Addr8::Register { reg, shape_reg } => {
                d.mode = if shape_reg {
                    "ADDR_SHAPE_REG"
                } else {
                    "ADDR_REG"
                };
                d.shape_reg = shape_reg;
                d.reg = Some(reg);
            }
            Addr8::Table {
                entry,
                offset,
                shape_reg,
            } => {
                d.mode = if shape_reg {
                    "ADDR_TBL_SHAPE_REG"
                } else {
                    "ADDR_TBL_SHAPE_IMM"
                };
                d.shape_reg = shape_reg;
                d.entry = Some(entry);
                match offset {
                    TableOffset::Immediate { value, wide } => {
                        d.offset = Some(Hex(value));
                        d.offset_wide = Some(wide);
                    }
                    TableOffset::Register { reg, wide } => {
                        d.offset_reg = Some(reg);
                        d.offset_wide = Some(wide);
                    }
                }
            }
        }
        d
    }
}

/// An ADDR4 operand: raw value, marker mode, and the partition offset or
/// the register.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Addr4Decode {
    /// The 4 bytes as a little-endian number.
    pub raw: Hex32,
    /// Byte 3 & 0xFC.
    pub marker: Hex,
    /// `IMM`, `SHAPE_REG`, `INDIRECT_IMM`, `ADDR_REG`, `ADDR_SHAPE_REG` or
    /// `INDIRECT_REG`.
    pub mode: &'static str,
    /// Partition-offset modes: `SBUF` or `PSUM` (bit 25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<&'static str>,
    /// Partition-offset modes: the starting quadrant (bits 24:23).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quadrant: Option<u8>,
    /// Partition-offset modes: the byte offset in each partition (bits 17:0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Hex>,
    /// Partition-offset modes: bit 25.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psum: Option<bool>,
    /// Register modes: the register.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reg: Option<u8>,
}

fn addr4_mode_name(mode: Addr4Mode) -> &'static str {
    match mode {
        Addr4Mode::Immediate => "IMM",
        Addr4Mode::ShapeReg => "SHAPE_REG",
        Addr4Mode::AddrReg => "ADDR_REG",
        Addr4Mode::AddrShapeReg => "ADDR_SHAPE_REG",
        Addr4Mode::IndirectImm => "INDIRECT_IMM",
        Addr4Mode::IndirectReg => "INDIRECT_REG",
    }
}

impl Addr4Decode {
    /// The decode of a (valid) ADDR4.
    #[must_use]
    pub fn new(a: Addr4) -> Self {
        let raw = a.encode().unwrap_or_default();
        let mode = Addr4Mode::from_marker((raw >> 24) as u8).unwrap_or(Addr4Mode::Immediate);
        let mut d = Self {
            raw: Hex32(raw),
            marker: Hex(u64::from(mode.marker())),
            mode: addr4_mode_name(mode),
            space: None,
            quadrant: None,
            offset: None,
            psum: None,
            reg: None,
        };
        match a {
            Addr4::Immediate { offset, .. } | Addr4::IndirectImm { offset } => {
                d.space = Some(if offset.psum { "PSUM" } else { "SBUF" });
                d.quadrant = Some(offset.quadrant);
                d.offset = Some(Hex(u64::from(offset.offset)));
                d.psum = Some(offset.psum);
            }
            Addr4::Register { reg, .. } => d.reg = Some(reg),
        }
        d
    }
}

/// `serialize_with` for ADDR8 fields.
pub(crate) fn addr8<S: Serializer>(a: &Addr8, s: S) -> Result<S::Ok, S::Error> {
    Addr8Decode::new(*a).serialize(s)
}

/// `serialize_with` for ADDR4 fields.
pub(crate) fn addr4<S: Serializer>(a: &Addr4, s: S) -> Result<S::Ok, S::Error> {
    Addr4Decode::new(*a).serialize(s)
}
