//! ADDR4: the 4-byte TPB-local operand address of the DMA instruction words
//! (P9.1 §2.1 and §6.1, docs/references/wiki.md §C.4 and §I.1).
//!
//! The top byte's high six bits are the marker (mask `0xFC`). In immediate
//! mode the low 26 bits are a *partition offset*:
//!
//! | bits  | meaning |
//! |-------|---------|
//! | 17:0  | byte offset inside the partition (256 KiB max) |
//! | 22:18 | must be zero |
//! | 24:23 | SBUF starting quadrant (partitions 0–31, 32–63, 64–95, 96–127) |
//! | 25    | 0 = SBUF, 1 = PSUM |
//!
//! An immediate names a starting quadrant, not a partition: engines fan the
//! same offset over the partitions the instruction covers.

use std::fmt;

use crate::addr::{
    PARTITIONS, PSUM_PARTITION_BYTES, PSUM_PARTITION_STRIDE_BYTES, PsumAddr, SBUF_PARTITION_BYTES,
    SBUF_PARTITION_STRIDE_BYTES, SbufAddr, TPB_LOCAL_PSUM_BASE,
};

/// Marker mask of the ADDR4/ADDR8 top byte (docs/references/wiki.md §C.4).
pub const MARKER_MASK: u8 = 0xFC;
const OFFSET_MASK: u32 = (1 << 18) - 1;
const MUST_BE_ZERO_MASK: u32 = 0x1F << 18;
const QUADRANT_SHIFT: u32 = 23;
const PSUM_BIT: u32 = 1 << 25;
/// Partitions per quadrant.
pub const QUADRANT_PARTITIONS: u32 = 32;

/// ADDR4 marker modes (docs/references/wiki.md §C.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Addr4Mode {
    /// 0x00: partition-offset immediate.
    Immediate = 0x00,
    /// 0x40: immediate address, shape from a shape register.
    ShapeReg = 0x40,
    /// 0x80: address from a register.
    AddrReg = 0x80,
    /// 0xC0: address and shape from registers.
    AddrShapeReg = 0xC0,
    /// 0x20: indirect, immediate.
    IndirectImm = 0x20,
    /// 0xA0: indirect through a register.
    IndirectReg = 0xA0,
}

impl Addr4Mode {
    /// The marker byte value of this mode.
    pub const fn marker(self) -> u8 {
        self as u8
    }

    /// The mode named by a marker byte (after masking with `0xFC`).
    pub fn from_marker(marker: u8) -> Option<Self> {
        Some(match marker & MARKER_MASK {
            0x00 => Self::Immediate,
            0x40 => Self::ShapeReg,
            0x80 => Self::AddrReg,
            0xC0 => Self::AddrShapeReg,
            0x20 => Self::IndirectImm,
            0xA0 => Self::IndirectReg,
            _ => return None,
        })
    }
}

/// The partition-offset immediate of an ADDR4 (P9.1 §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionOffset {
    /// Byte offset inside each partition, < 256 KiB.
    pub offset: u32,
    /// Starting quadrant 0..4 (SBUF partitions 32·q …).
    pub quadrant: u8,
    /// True for PSUM, false for SBUF.
    pub psum: bool,
}

/// Why a value is not a valid ADDR4 or partition offset. Each names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr4Error {
    /// Bits 22:18 of a partition offset are set.
    ReservedBits { raw: u32 },
    /// The marker byte is not one of the ADDR4 modes.
    UnknownMarker { marker: u8 },
    /// A field value does not fit its bits.
    FieldOverflow { field: &'static str, value: u64 },
    /// Register-mode operand with bits set outside the register number.
    RegisterReservedBits { raw: u32 },
    /// The lane/partition index is beyond 128.
    PartitionOutOfRange { partition: u32 },
    /// The in-partition offset falls in the unpopulated pad.
    OffsetInPad { offset: u32, populated_bytes: u32 },
}

impl fmt::Display for Addr4Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedBits { raw } => write!(
                f,
                "ADDR4 {raw:#010x}: partOffset[22:18] must be zero (found {:#x})",
                (raw & MUST_BE_ZERO_MASK) >> 18
            ),
            Self::UnknownMarker { marker } => write!(
                f,
                "ADDR4 marker {marker:#04x} is not a known mode (0x00, 0x40, 0x80, 0xc0, 0x20, 0xa0)"
            ),
            Self::FieldOverflow { field, value } => {
                write!(f, "ADDR4 field {field} = {value:#x} does not fit")
            }
            Self::RegisterReservedBits { raw } => write!(
                f,
                "ADDR4 {raw:#010x}: register mode allows only regnum in bits 5:0"
            ),
            Self::PartitionOutOfRange { partition } => {
                write!(f, "partition {partition} is beyond the 128 partitions")
            }
            Self::OffsetInPad {
                offset,
                populated_bytes,
            } => write!(
                f,
                "partition offset {offset:#x} is in the unpopulated pad (populated {populated_bytes:#x} bytes)"
            ),
        }
    }
}

impl std::error::Error for Addr4Error {}

/// Where a lane of a partition-offset operand lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionTarget {
    /// An SBUF byte.
    Sbuf(SbufAddr),
    /// A PSUM byte.
    Psum(PsumAddr),
}

impl PartitionOffset {
    /// Decodes the low 26 bits of an immediate ADDR4 (bits above 25 are the
    /// marker and are ignored here).
    pub fn decode(raw: u32) -> Result<Self, Addr4Error> {
        if raw & MUST_BE_ZERO_MASK != 0 {
            return Err(Addr4Error::ReservedBits { raw });
        }
        Ok(Self {
            offset: raw & OFFSET_MASK,
            quadrant: ((raw >> QUADRANT_SHIFT) & 0x3) as u8,
            psum: raw & PSUM_BIT != 0,
        })
    }

    /// Encodes into the low 26 bits.
    pub fn encode(self) -> Result<u32, Addr4Error> {
        if self.offset > OFFSET_MASK {
            return Err(Addr4Error::FieldOverflow {
                field: "offset",
                value: u64::from(self.offset),
            });
        }
        if self.quadrant > 3 {
            return Err(Addr4Error::FieldOverflow {
                field: "quadrant",
                value: u64::from(self.quadrant),
            });
        }
        Ok(self.offset
            | (u32::from(self.quadrant) << QUADRANT_SHIFT)
            | if self.psum { PSUM_BIT } else { 0 })
    }

    /// The byte that lane `lane` (0-based, counted from the starting quadrant's
    /// first partition) addresses.
    pub fn lane(self, lane: u32) -> Result<PartitionTarget, Addr4Error> {
        let partition = u32::from(self.quadrant) * QUADRANT_PARTITIONS + lane;
        if partition >= PARTITIONS {
            return Err(Addr4Error::PartitionOutOfRange { partition });
        }
        let populated_bytes = if self.psum {
            PSUM_PARTITION_BYTES
        } else {
            SBUF_PARTITION_BYTES
        };
        if self.offset >= populated_bytes {
            return Err(Addr4Error::OffsetInPad {
                offset: self.offset,
                populated_bytes,
            });
        }
        Ok(if self.psum {
            PartitionTarget::Psum(PsumAddr {
                partition,
                offset: self.offset,
            })
        } else {
            PartitionTarget::Sbuf(SbufAddr {
                partition,
                offset: self.offset,
            })
        })
    }
}

/// The TPB-local (29-bit) address of a partition byte (docs/references/wiki.md §A.2):
/// SBUF = partition × 256 KiB + offset; PSUM = 0x200_0000 + partition × 32 KiB + offset.
pub fn tpb_local(target: PartitionTarget) -> u32 {
    match target {
        PartitionTarget::Sbuf(a) => a.partition * SBUF_PARTITION_STRIDE_BYTES + a.offset,
        PartitionTarget::Psum(a) => {
            TPB_LOCAL_PSUM_BASE + a.partition * PSUM_PARTITION_STRIDE_BYTES + a.offset
        }
    }
}

/// A decoded ADDR4 operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr4 {
    /// Marker 0x00 (or 0x40 with a shape register): a partition offset.
    Immediate {
        /// The partition offset.
        offset: PartitionOffset,
        /// True for marker 0x40 (shape taken from a shape register).
        shape_reg: bool,
    },
    /// Markers 0x80/0xC0/0xA0: address from register `reg` (0..64).
    ///
    /// The register number's bit position is not published (docs/references/wiki.md
    /// §C.4); the simulator puts it in bits 5:0 with bits 25:6 zero.
    Register {
        /// Register number 0..64.
        reg: u8,
        /// The mode (AddrReg, AddrShapeReg or IndirectReg).
        mode: Addr4Mode,
    },
    /// Marker 0x20: indirect with an immediate partition offset.
    IndirectImm {
        /// The partition offset of the index vector.
        offset: PartitionOffset,
    },
}

impl Addr4 {
    /// Decodes a raw little-endian ADDR4 value.
    pub fn decode(raw: u32) -> Result<Self, Addr4Error> {
        let marker = (raw >> 24) as u8 & MARKER_MASK;
        let mode = Addr4Mode::from_marker(marker).ok_or(Addr4Error::UnknownMarker { marker })?;
        let low = raw & 0x03FF_FFFF;
        match mode {
            Addr4Mode::Immediate | Addr4Mode::ShapeReg => Ok(Self::Immediate {
                offset: PartitionOffset::decode(low)?,
                shape_reg: mode == Addr4Mode::ShapeReg,
            }),
            Addr4Mode::IndirectImm => Ok(Self::IndirectImm {
                offset: PartitionOffset::decode(low)?,
            }),
            Addr4Mode::AddrReg | Addr4Mode::AddrShapeReg | Addr4Mode::IndirectReg => {
                if low & !0x3F != 0 {
                    return Err(Addr4Error::RegisterReservedBits { raw });
                }
                Ok(Self::Register {
                    reg: (low & 0x3F) as u8,
                    mode,
                })
            }
        }
    }

    /// Encodes to the raw value.
    pub fn encode(self) -> Result<u32, Addr4Error> {
        let (marker, low) = match self {
            Self::Immediate { offset, shape_reg } => (
                if shape_reg {
                    Addr4Mode::ShapeReg
                } else {
                    Addr4Mode::Immediate
                },
                offset.encode()?,
            ),
            Self::IndirectImm { offset } => (Addr4Mode::IndirectImm, offset.encode()?),
            Self::Register { reg, mode } => {
                if !matches!(
                    mode,
                    Addr4Mode::AddrReg | Addr4Mode::AddrShapeReg | Addr4Mode::IndirectReg
                ) {
                    return Err(Addr4Error::UnknownMarker {
                        marker: mode.marker(),
                    });
                }
                if reg >= 64 {
                    return Err(Addr4Error::FieldOverflow {
                        field: "reg",
                        value: u64::from(reg),
                    });
                }
                (mode, u32::from(reg))
            }
        };
        Ok((u32::from(marker.marker()) << 24) | low)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn partition_offset_bits() {
        let p = PartitionOffset::decode(0x0000_0123).unwrap();
        assert_eq!((p.offset, p.quadrant, p.psum), (0x123, 0, false));
        let p = PartitionOffset::decode((2 << 23) | 0x10).unwrap();
        assert_eq!((p.offset, p.quadrant, p.psum), (0x10, 2, false));
        let p = PartitionOffset::decode((1 << 25) | (3 << 23) | 0x3FFFF).unwrap();
        assert_eq!((p.offset, p.quadrant, p.psum), (0x3FFFF, 3, true));
        for bit in 18..23 {
            assert_eq!(
                PartitionOffset::decode(1 << bit),
                Err(Addr4Error::ReservedBits { raw: 1 << bit })
            );
        }
    }

    #[test]
    fn lanes_fan_from_quadrant() {
        let p = PartitionOffset {
            offset: 0x100,
            quadrant: 1,
            psum: false,
        };
        assert_eq!(
            p.lane(5).unwrap(),
            PartitionTarget::Sbuf(SbufAddr {
                partition: 37,
                offset: 0x100
            })
        );
        assert_eq!(
            tpb_local(p.lane(0).unwrap()),
            32 * SBUF_PARTITION_STRIDE_BYTES + 0x100
        );
        assert!(matches!(
            p.lane(96),
            Err(Addr4Error::PartitionOutOfRange { partition: 128 })
        ));
        let pad = PartitionOffset {
            offset: 224 * 1024,
            quadrant: 0,
            psum: false,
        };
        assert!(matches!(pad.lane(0), Err(Addr4Error::OffsetInPad { .. })));
        let psum = PartitionOffset {
            offset: 0x10,
            quadrant: 0,
            psum: true,
        };
        assert_eq!(tpb_local(psum.lane(1).unwrap()), 0x200_8010);
        let psum_pad = PartitionOffset {
            offset: 16 * 1024,
            ..psum
        };
        assert!(psum_pad.lane(0).is_err());
    }

    #[test]
    fn addr4_modes_round_trip_and_reject() {
        for raw in [
            0x0000_0040u32,
            0x4080_0000,
            0x2200_0010,
            0x8000_0005,
            0xC000_003F,
            0xA000_0001,
        ] {
            let d = Addr4::decode(raw).unwrap();
            assert_eq!(d.encode().unwrap(), raw, "{raw:#x}");
        }
        assert_eq!(
            Addr4::decode(0x1000_0000),
            Err(Addr4Error::UnknownMarker { marker: 0x10 })
        );
        assert_eq!(
            Addr4::decode(0x8000_0040),
            Err(Addr4Error::RegisterReservedBits { raw: 0x8000_0040 })
        );
        assert!(matches!(
            Addr4::decode(0x0004_0000),
            Err(Addr4Error::ReservedBits { .. })
        ));
        // Marker low bits are address bits 25:24: quadrant bit 24 and PSUM bit 25.
        let Addr4::Immediate { offset, .. } = Addr4::decode(0x0300_0000).unwrap() else {
            panic!("expected immediate")
        };
        assert!(offset.psum);
        assert_eq!(offset.quadrant, 2);
    }
}
