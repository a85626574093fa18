//! Faults a bus master sees when it touches the device. These are values:
//! the layer that issued the access turns them into error CSR bits or trace
//! diagnostics; nothing panics.

use std::fmt;

use mem::MemFault;
use soc_map::Hole;

/// Why an access to the device did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusFault {
    /// No region decodes this address.
    Unmapped {
        /// The address.
        addr: u64,
    },
    /// The address decodes into a region but holds nothing.
    Hole {
        /// The address.
        addr: u64,
        /// The region it falls in.
        region: String,
        /// Why nothing is there.
        hole: Hole,
    },
    /// The access starts in a region and runs past its end.
    CrossesBoundary {
        /// First byte.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// The region it starts in.
        region: String,
        /// The first address past the region.
        boundary: u64,
    },
    /// A memory operation on a register block.
    NotMemory {
        /// The address.
        addr: u64,
        /// The register region.
        region: String,
    },
    /// A register access at an offset with no register.
    NoRegister {
        /// The address.
        addr: u64,
        /// The register region.
        region: String,
        /// Offset inside the region.
        offset: u64,
    },
    /// A 32-bit register access that is not 4-byte aligned.
    Unaligned {
        /// The address.
        addr: u64,
        /// The region.
        region: String,
    },
    /// The memory refused the access.
    Memory {
        /// The address.
        addr: u64,
        /// The region.
        region: String,
        /// The memory's own fault.
        fault: MemFault,
    },
}

impl fmt::Display for BusFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unmapped { addr } => write!(f, "{addr:#x} is not mapped"),
            Self::Hole { addr, region, hole } => {
                write!(f, "{addr:#x} in {region} is not mapped: {hole}")
            }
            Self::CrossesBoundary {
                addr,
                len,
                region,
                boundary,
            } => write!(
                f,
                "access of {len} bytes at {addr:#x} runs past the end of {region} at {boundary:#x}"
            ),
            Self::NotMemory { addr, region } => {
                write!(f, "{addr:#x} is in the register block {region}, not memory")
            }
            Self::NoRegister {
                addr,
                region,
                offset,
            } => write!(
                f,
                "{addr:#x}: no register at offset {offset:#x} of {region}"
            ),
            Self::Unaligned { addr, region } => write!(
                f,
                "unaligned 32-bit register access at {addr:#x} in {region} (registers are 4-byte aligned)"
            ),
            Self::Memory {
                addr,
                region,
                fault,
            } => write!(f, "{region} refused the access at {addr:#x}: {fault}"),
        }
    }
}

impl std::error::Error for BusFault {}
