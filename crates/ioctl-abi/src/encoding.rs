//! The Linux `_IOC` request-number encoding (docs/references/driver.md §1.1).
//!
//! | bits  | field | width |
//! |-------|-------|-------|
//! | 31:30 | direction ([`Dir`]) | 2 |
//! | 29:16 | argument size in bytes | 14 |
//! | 15:8  | type (`'N'` for the Neuron driver) | 8 |
//! | 7:0   | number (`nr`) | 8 |
//!
//! Everything here is a `const fn`, so the ioctl table computes its numbers
//! at compile time, and a size that does not fit 14 bits fails the build.

use serde::{Deserialize, Serialize};

/// The ioctl type byte of the Neuron driver: `'N'` (0x4E).
pub const NEURON_IOCTL_TYPE: u8 = b'N';

/// Direction value: no data transfer (`_IO`).
pub const IOC_NONE: u32 = 0;
/// Direction bit: user space writes, the kernel reads the argument (`_IOW`).
pub const IOC_WRITE: u32 = 1;
/// Direction bit: the kernel writes, user space reads the argument (`_IOR`).
pub const IOC_READ: u32 = 2;

/// Width of the size field in bits.
pub const IOC_SIZE_BITS: u32 = 14;
/// Largest encodable argument size (16383 bytes).
pub const IOC_SIZE_MAX: usize = (1 << IOC_SIZE_BITS) - 1;

const NR_SHIFT: u32 = 0;
const TYPE_SHIFT: u32 = 8;
const SIZE_SHIFT: u32 = 16;
const DIR_SHIFT: u32 = 30;

/// The direction bits of a request number, named as the kernel names them:
/// from user space's point of view (`Read` = the kernel copies data out to
/// the caller). The Neuron driver does not check them, and often declares
/// pure inputs as `_IOR` (docs/references/driver.md §1.1).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum Dir {
    /// `_IO`: 0.
    #[serde(rename = "NONE")]
    None,
    /// `_IOW`: `IOC_WRITE` (1).
    #[serde(rename = "W")]
    Write,
    /// `_IOR`: `IOC_READ` (2).
    #[serde(rename = "R")]
    Read,
    /// `_IOWR`: `IOC_READ | IOC_WRITE` (3).
    #[serde(rename = "RW")]
    ReadWrite,
}

impl Dir {
    /// The two direction bits.
    #[must_use]
    pub const fn bits(self) -> u32 {
        match self {
            Self::None => IOC_NONE,
            Self::Write => IOC_WRITE,
            Self::Read => IOC_READ,
            Self::ReadWrite => IOC_READ | IOC_WRITE,
        }
    }

    /// The direction held by the low two bits of `bits` (every value is one).
    #[must_use]
    pub const fn from_bits(bits: u32) -> Self {
        match bits & 3 {
            IOC_NONE => Self::None,
            IOC_WRITE => Self::Write,
            IOC_READ => Self::Read,
            _ => Self::ReadWrite,
        }
    }

    /// Short name used in listings: `NONE`, `W`, `R`, `RW`.
    #[must_use]
    pub const fn short(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Write => "W",
            Self::Read => "R",
            Self::ReadWrite => "RW",
        }
    }

    /// The macro that declares a number with this direction: `_IO`, `_IOW`,
    /// `_IOR`, `_IOWR`.
    #[must_use]
    pub const fn macro_name(self) -> &'static str {
        match self {
            Self::None => "_IO",
            Self::Write => "_IOW",
            Self::Read => "_IOR",
            Self::ReadWrite => "_IOWR",
        }
    }
}

impl std::fmt::Display for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.short())
    }
}

/// `_IOC(dir, ty, nr, size)`.
///
/// # Panics
///
/// When `size` does not fit the 14-bit size field. In a `const` context
/// (as the ioctl table uses it) that is a compile error.
#[must_use]
pub const fn ioc(dir: Dir, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(
        size <= IOC_SIZE_MAX,
        "ioctl argument size does not fit 14 bits"
    );
    // Cast is lossless: size <= 0x3FFF.
    #[allow(clippy::cast_possible_truncation)]
    let size = size as u32;
    (dir.bits() << DIR_SHIFT)
        | (size << SIZE_SHIFT)
        | ((ty as u32) << TYPE_SHIFT)
        | ((nr as u32) << NR_SHIFT)
}

/// `_IO(ty, nr)`: no argument.
#[must_use]
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(Dir::None, ty, nr, 0)
}

/// `_IOR(ty, nr, T)` with `size = sizeof(T)`.
#[must_use]
pub const fn ior(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(Dir::Read, ty, nr, size)
}

/// `_IOW(ty, nr, T)` with `size = sizeof(T)`.
#[must_use]
pub const fn iow(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(Dir::Write, ty, nr, size)
}

/// `_IOWR(ty, nr, T)` with `size = sizeof(T)`.
#[must_use]
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(Dir::ReadWrite, ty, nr, size)
}

/// `_IOC_DIR(cmd)`.
#[must_use]
pub const fn dir_of(cmd: u32) -> Dir {
    Dir::from_bits(cmd >> DIR_SHIFT)
}

/// `_IOC_SIZE(cmd)`: the encoded argument size in bytes.
#[must_use]
pub const fn size_of(cmd: u32) -> usize {
    ((cmd >> SIZE_SHIFT) & ((1 << IOC_SIZE_BITS) - 1)) as usize
}

/// `_IOC_NR(cmd)`.
#[must_use]
pub const fn nr_of(cmd: u32) -> u8 {
    // Masked to 8 bits first.
    #[allow(clippy::cast_possible_truncation)]
    let nr = ((cmd >> NR_SHIFT) & 0xFF) as u8;
    nr
}

/// `_IOC_TYPE(cmd)`.
#[must_use]
pub const fn type_of(cmd: u32) -> u8 {
    // Masked to 8 bits first.
    #[allow(clippy::cast_possible_truncation)]
    let ty = ((cmd >> TYPE_SHIFT) & 0xFF) as u8;
    ty
}

/// The four fields of any 32-bit request number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub struct Decoded {
    /// Bits 31:30.
    pub dir: Dir,
    /// Bits 15:8.
    pub ty: u8,
    /// Bits 7:0.
    pub nr: u8,
    /// Bits 29:16.
    pub size: usize,
}

impl Decoded {
    /// Splits `cmd` into its fields.
    #[must_use]
    pub const fn new(cmd: u32) -> Self {
        Self {
            dir: dir_of(cmd),
            ty: type_of(cmd),
            nr: nr_of(cmd),
            size: size_of(cmd),
        }
    }

    /// The number these fields encode (the inverse of [`Decoded::new`]).
    #[must_use]
    pub const fn encode(self) -> u32 {
        ioc(self.dir, self.ty, self.nr, self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macros_match_the_kernel_layout() {
        assert_eq!(io(b'N', 1), 0x0000_4E01);
        assert_eq!(ior(b'N', 22, 8), 0x8008_4E16);
        assert_eq!(iow(b'N', 109, 24), 0x4018_4E6D);
        assert_eq!(iowr(b'N', 129, 32), 0xC020_4E81);
        assert_eq!(ioc(Dir::Read, b'N', 133, 12296), 0xB008_4E85);
        assert_eq!(ior(b'N', 255, IOC_SIZE_MAX), 0xBFFF_4EFF);
    }

    #[test]
    fn decoders_invert_the_encoding() {
        let cmd = 0xC038_4E6C;
        assert_eq!(dir_of(cmd), Dir::ReadWrite);
        assert_eq!(size_of(cmd), 56);
        assert_eq!(type_of(cmd), NEURON_IOCTL_TYPE);
        assert_eq!(nr_of(cmd), 108);
        for raw in [0u32, 1, 0x8008_4E16, 0xFFFF_FFFF, 0x4018_4E6D, 0x3FFF_0000] {
            assert_eq!(Decoded::new(raw).encode(), raw);
        }
    }

    #[test]
    fn dir_bits_round_trip() {
        for d in [Dir::None, Dir::Write, Dir::Read, Dir::ReadWrite] {
            assert_eq!(Dir::from_bits(d.bits()), d);
        }
        assert_eq!(Dir::ReadWrite.bits(), 3);
        assert_eq!(Dir::Read.short(), "R");
    }

    #[test]
    #[should_panic(expected = "14 bits")]
    fn oversized_argument_is_rejected() {
        let _ = ioc(Dir::Read, b'N', 1, IOC_SIZE_MAX + 1);
    }
}
