//! ADDR8: the 8-byte full-SoC operand address of the DMA instruction words
//! (P9.1 §2.1, docs/references/wiki.md §C.4).
//!
//! Byte 7 is the marker (mask `0xFC`); its flag bits compose the mode:
//!
//! | bit | flag | meaning |
//! |-----|------|---------|
//! | 2 | `OFFSET_WIDE` | 64-bit table offset (from a register pair) |
//! | 3 | `OFFSET_REG`  | table offset from a register |
//! | 5 | `ADDR_TBL`    | address from the address table |
//! | 6 | `SHAPE_REG`   | shape from a shape register (num_elem must be 0) |
//! | 7 | `ADDR_REG`    | address from a register |
//!
//! Named values: 0x00 IMM, 0x40 SHAPE_REG, 0x80 ADDR_REG, 0xC0 ADDR_SHAPE_REG,
//! 0x20 ADDR_TBL_SHAPE_IMM, 0x60 ADDR_TBL_SHAPE_REG, each table mode with the
//! +0x08 / +0x04 modifiers.
//!
//! In immediate mode bits 57:0 are the SoC address (bits 57:56 are the
//! relaxed-ordering and ok-to-fail bits of the cross-die layout, docs/references/wiki.md
//! §E.1). The operand layout of the register and table modes is not published
//! (docs/references/wiki.md §L.2); the simulator defines it as follows and documents it in
//! `docs/address-map.md`:
//!
//! * register modes: bits 5:0 = register number, bits 55:6 zero;
//! * table modes: bits 7:0 = table entry; with `OFFSET_REG` bits 13:8 = the
//!   offset register (`OFFSET_WIDE`: the pair reg, reg+1) and bits 55:14 zero;
//!   without it bits 39:8 = a 32-bit immediate offset (`OFFSET_WIDE`: bits
//!   55:8, a 48-bit immediate).

use std::fmt;

/// `OFFSET_WIDE` marker flag.
pub const OFFSET_WIDE: u8 = 1 << 2;
/// `OFFSET_REG` marker flag.
pub const OFFSET_REG: u8 = 1 << 3;
/// `ADDR_TBL` marker flag.
pub const ADDR_TBL: u8 = 1 << 5;
/// `SHAPE_REG` marker flag.
pub const SHAPE_REG: u8 = 1 << 6;
/// `ADDR_REG` marker flag.
pub const ADDR_REG: u8 = 1 << 7;
/// Bit 4 of the marker has no meaning and must be zero.
const MARKER_RESERVED: u8 = 1 << 4;
/// Mask of the immediate address (bits 57:0).
pub const IMMEDIATE_ADDR_MASK: u64 = (1 << 58) - 1;
const PAYLOAD_MASK: u64 = (1 << 56) - 1;

/// Where a table-mode offset comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableOffset {
    /// An immediate offset: 32 bits, or 48 bits when `wide`.
    Immediate {
        /// The offset value.
        value: u64,
        /// `OFFSET_WIDE` set.
        wide: bool,
    },
    /// The offset is read from register `reg` (and `reg + 1` for the high
    /// 32 bits when `wide`).
    Register {
        /// Register number 0..64.
        reg: u8,
        /// `OFFSET_WIDE` set.
        wide: bool,
    },
}

/// A decoded ADDR8 operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Addr8 {
    /// Marker 0x00 / 0x40: the SoC address itself.
    Immediate {
        /// Bits 57:0.
        addr: u64,
        /// Marker 0x40: shape from a shape register.
        shape_reg: bool,
    },
    /// Marker 0x80 / 0xC0: address from register `reg`.
    Register {
        /// Register number 0..64.
        reg: u8,
        /// Marker 0xC0: shape from a shape register too.
        shape_reg: bool,
    },
    /// Marker 0x20 / 0x60 (+0x08, +0x04): address-table entry plus offset.
    Table {
        /// Address-table entry 0..256.
        entry: u8,
        /// The offset added to the entry.
        offset: TableOffset,
        /// Marker 0x60: shape from a shape register.
        shape_reg: bool,
    },
}

/// Why 8 bytes are not a valid ADDR8. Each names the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr8Error {
    /// The marker combines flags no mode defines.
    BadMarker { marker: u8, why: &'static str },
    /// Bits outside the mode's operand fields are set.
    ReservedBits { marker: u8, raw: u64 },
    /// A field value does not fit its bits.
    FieldOverflow { field: &'static str, value: u64 },
}

impl fmt::Display for Addr8Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMarker { marker, why } => write!(f, "ADDR8 marker {marker:#04x}: {why}"),
            Self::ReservedBits { marker, raw } => write!(
                f,
                "ADDR8 {raw:#018x}: bits outside the operand fields of marker {marker:#04x} must be zero"
            ),
            Self::FieldOverflow { field, value } => {
                write!(f, "ADDR8 field {field} = {value:#x} does not fit")
            }
        }
    }
}

impl std::error::Error for Addr8Error {}

impl Addr8 {
    /// The marker byte (byte 7 & 0xFC) of a raw value.
    pub const fn marker_of(raw: u64) -> u8 {
        (raw >> 56) as u8 & 0xFC
    }

    /// Decodes a raw little-endian ADDR8.
    pub fn decode(raw: u64) -> Result<Self, Addr8Error> {
        let marker = Self::marker_of(raw);
        let bad = |why| Err(Addr8Error::BadMarker { marker, why });
        if marker & MARKER_RESERVED != 0 {
            return bad("bit 4 is reserved");
        }
        let shape_reg = marker & SHAPE_REG != 0;
        let table = marker & ADDR_TBL != 0;
        let reg_mode = marker & ADDR_REG != 0;
        let offset_flags = marker & (OFFSET_REG | OFFSET_WIDE);
        let payload = raw & PAYLOAD_MASK;
        let reserved = || Err(Addr8Error::ReservedBits { marker, raw });
        if table && reg_mode {
            return bad("ADDR_REG and ADDR_TBL are exclusive");
        }
        if !table && offset_flags != 0 {
            return bad("OFFSET_REG/OFFSET_WIDE need ADDR_TBL");
        }
        if (table || reg_mode) && raw & (0x3 << 56) != 0 {
            return reserved();
        }
        if table {
            let entry = (payload & 0xFF) as u8;
            let offset = if marker & OFFSET_REG != 0 {
                if payload >> 14 != 0 {
                    return reserved();
                }
                TableOffset::Register {
                    reg: ((payload >> 8) & 0x3F) as u8,
                    wide: marker & OFFSET_WIDE != 0,
                }
            } else {
                let wide = marker & OFFSET_WIDE != 0;
                let value = payload >> 8;
                if !wide && value >> 32 != 0 {
                    return reserved();
                }
                TableOffset::Immediate { value, wide }
            };
            return Ok(Self::Table {
                entry,
                offset,
                shape_reg,
            });
        }
        if reg_mode {
            if payload >> 6 != 0 {
                return reserved();
            }
            return Ok(Self::Register {
                reg: (payload & 0x3F) as u8,
                shape_reg,
            });
        }
        Ok(Self::Immediate {
            addr: raw & IMMEDIATE_ADDR_MASK,
            shape_reg,
        })
    }

    /// The marker byte this operand encodes with.
    pub fn marker(self) -> u8 {
        let shape = |s: bool| if s { SHAPE_REG } else { 0 };
        match self {
            Self::Immediate { shape_reg, .. } => shape(shape_reg),
            Self::Register { shape_reg, .. } => ADDR_REG | shape(shape_reg),
            Self::Table {
                offset, shape_reg, ..
            } => {
                let flags = match offset {
                    TableOffset::Immediate { wide, .. } => {
                        if wide {
                            OFFSET_WIDE
                        } else {
                            0
                        }
                    }
                    TableOffset::Register { wide, .. } => {
                        OFFSET_REG | if wide { OFFSET_WIDE } else { 0 }
                    }
                };
                ADDR_TBL | shape(shape_reg) | flags
            }
        }
    }

    /// Encodes to the raw value.
    pub fn encode(self) -> Result<u64, Addr8Error> {
        let overflow = |field, value| Err(Addr8Error::FieldOverflow { field, value });
        let payload = match self {
            Self::Immediate { addr, .. } => {
                if addr > IMMEDIATE_ADDR_MASK {
                    return overflow("addr", addr);
                }
                addr
            }
            Self::Register { reg, .. } => {
                if reg >= 64 {
                    return overflow("reg", u64::from(reg));
                }
                u64::from(reg)
            }
            Self::Table { entry, offset, .. } => {
                let off_bits = match offset {
                    TableOffset::Immediate { value, wide } => {
                        let limit = if wide { 1u64 << 48 } else { 1u64 << 32 };
                        if value >= limit {
                            return overflow("offset", value);
                        }
                        value
                    }
                    TableOffset::Register { reg, .. } => {
                        if reg >= 64 {
                            return overflow("offset_reg", u64::from(reg));
                        }
                        u64::from(reg)
                    }
                };
                u64::from(entry) | (off_bits << 8)
            }
        };
        Ok((u64::from(self.marker()) << 56) | payload)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn immediate_keeps_58_bits() {
        let raw = 0x0300_0020_0000_0010u64;
        assert_eq!(
            Addr8::decode(raw).unwrap(),
            Addr8::Immediate {
                addr: raw,
                shape_reg: false
            }
        );
        let raw = 0x4000_0020_0000_0010u64;
        assert_eq!(
            Addr8::decode(raw).unwrap(),
            Addr8::Immediate {
                addr: 0x20_0000_0010,
                shape_reg: true
            }
        );
    }

    #[test]
    fn every_named_marker_decodes() {
        for marker in [
            0x00u8, 0x40, 0x80, 0xC0, 0x20, 0x60, 0x28, 0x68, 0x24, 0x64, 0x2C, 0x6C,
        ] {
            let raw = u64::from(marker) << 56;
            let d = Addr8::decode(raw).unwrap();
            assert_eq!(d.marker(), marker);
            assert_eq!(d.encode().unwrap(), raw);
        }
    }

    #[test]
    fn bad_markers_are_rejected() {
        for marker in [0x10u8, 0xA0, 0x88, 0x84, 0x08, 0x04, 0xE0] {
            let raw = u64::from(marker) << 56;
            assert!(
                matches!(Addr8::decode(raw), Err(Addr8Error::BadMarker { .. })),
                "{marker:#x}"
            );
        }
    }

    #[test]
    fn operand_fields() {
        assert_eq!(
            Addr8::decode(0x8000_0000_0000_0007).unwrap(),
            Addr8::Register {
                reg: 7,
                shape_reg: false
            }
        );
        assert!(matches!(
            Addr8::decode(0x8000_0000_0000_0047),
            Err(Addr8Error::ReservedBits { .. })
        ));
        assert_eq!(
            Addr8::decode(0x2000_0012_3456_7803).unwrap(),
            Addr8::Table {
                entry: 3,
                offset: TableOffset::Immediate {
                    value: 0x1234_5678,
                    wide: false
                },
                shape_reg: false
            }
        );
        assert!(matches!(
            Addr8::decode(0x2000_0112_3456_7803),
            Err(Addr8Error::ReservedBits { .. })
        ));
        assert_eq!(
            Addr8::decode(0x2C00_0000_0000_0905).unwrap(),
            Addr8::Table {
                entry: 5,
                offset: TableOffset::Register { reg: 9, wide: true },
                shape_reg: false
            }
        );
        assert!(
            Addr8::Register {
                reg: 64,
                shape_reg: false
            }
            .encode()
            .is_err()
        );
    }
}
