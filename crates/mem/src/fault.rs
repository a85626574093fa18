//! Memory access faults.
//!
//! A bad address is hardware behaviour, not a simulator bug (docs/references/design.md §3,
//! "Hardware faults are state, not panics"): every access returns a
//! [`MemFault`] value instead of panicking, and the layer above turns it into
//! error CSR bits.

use std::fmt;

/// Why a memory access was refused. Nothing was read or written.
///
/// `offset` is the first byte of the refused access in the address space of
/// the memory that refused it: the byte offset for a
/// [`SparseMemory`](crate::SparseMemory), and the *linear window offset*
/// (`partition × stride + offset`) for SBUF/PSUM. `len` is the access length
/// in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemFault {
    /// The access runs past the end of the memory (or `offset + len`
    /// overflows), or names a partition that does not exist.
    OutOfRange {
        /// First byte of the access.
        offset: u64,
        /// Access length in bytes.
        len: u64,
        /// Size of the memory or window in bytes.
        size: u64,
    },
    /// The access touches an address that decodes but has no storage behind
    /// it, e.g. the SBUF pad at 224..256 KiB of each partition
    /// (docs/references/wiki.md §A.1), or it runs from one partition into the next.
    Hole {
        /// First byte of the access.
        offset: u64,
        /// Access length in bytes.
        len: u64,
    },
    /// The access breaks an alignment rule, e.g. a PSUM write that is not
    /// 4-byte typed (docs/references/wiki.md §A.2).
    Misaligned {
        /// First byte of the access.
        offset: u64,
        /// Access length in bytes.
        len: u64,
        /// Required alignment of both `offset` and `len`, in bytes.
        align_bytes: u64,
    },
    /// The access spans two regions of an address map (raised by the SoC
    /// decode layer).
    CrossesBoundary {
        /// First byte of the access.
        offset: u64,
        /// Access length in bytes.
        len: u64,
        /// The address of the boundary the access crosses.
        boundary: u64,
    },
}

impl MemFault {
    /// First byte of the refused access.
    pub const fn access_offset(&self) -> u64 {
        match *self {
            MemFault::OutOfRange { offset, .. }
            | MemFault::Hole { offset, .. }
            | MemFault::Misaligned { offset, .. }
            | MemFault::CrossesBoundary { offset, .. } => offset,
        }
    }

    /// Length in bytes of the refused access.
    pub const fn access_len(&self) -> u64 {
        match *self {
            MemFault::OutOfRange { len, .. }
            | MemFault::Hole { len, .. }
            | MemFault::Misaligned { len, .. }
            | MemFault::CrossesBoundary { len, .. } => len,
        }
    }
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemFault::OutOfRange { offset, len, size } => write!(
                f,
                "access of {len:#x} bytes at {offset:#x} is out of range (size {size:#x})"
            ),
            MemFault::Hole { offset, len } => write!(
                f,
                "access of {len:#x} bytes at {offset:#x} touches unpopulated memory"
            ),
            MemFault::Misaligned {
                offset,
                len,
                align_bytes,
            } => write!(
                f,
                "access of {len:#x} bytes at {offset:#x} is not {align_bytes}-byte aligned"
            ),
            MemFault::CrossesBoundary {
                offset,
                len,
                boundary,
            } => write!(
                f,
                "access of {len:#x} bytes at {offset:#x} crosses the region boundary at {boundary:#x}"
            ),
        }
    }
}

impl std::error::Error for MemFault {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_uses_hex_addresses() {
        let f = MemFault::OutOfRange {
            offset: 0x6_0000_0000,
            len: 0x10,
            size: 0x6_0000_0000,
        };
        assert_eq!(
            f.to_string(),
            "access of 0x10 bytes at 0x600000000 is out of range (size 0x600000000)"
        );
        let f = MemFault::Hole {
            offset: 0x3_8000,
            len: 4,
        };
        assert_eq!(
            f.to_string(),
            "access of 0x4 bytes at 0x38000 touches unpopulated memory"
        );
        let f = MemFault::Misaligned {
            offset: 0x2,
            len: 4,
            align_bytes: 4,
        };
        assert_eq!(
            f.to_string(),
            "access of 0x4 bytes at 0x2 is not 4-byte aligned"
        );
        let f = MemFault::CrossesBoundary {
            offset: 0xfff,
            len: 2,
            boundary: 0x1000,
        };
        assert_eq!(
            f.to_string(),
            "access of 0x2 bytes at 0xfff crosses the region boundary at 0x1000"
        );
    }

    #[test]
    fn accessors_report_the_access() {
        let f = MemFault::Misaligned {
            offset: 6,
            len: 3,
            align_bytes: 4,
        };
        assert_eq!((f.access_offset(), f.access_len()), (6, 3));
        let e: &dyn std::error::Error = &f;
        assert!(e.source().is_none());
    }
}
