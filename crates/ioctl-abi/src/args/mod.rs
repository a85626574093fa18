//! The ioctl argument structs (docs/references/driver.md §1.4) as byte-exact zerocopy
//! types.
//!
//! Layouts are the x86-64 LP64 ones: user pointers are 8-byte `u64` user
//! addresses, C enums are 4 bytes, and every byte of C padding is an
//! explicit `_pad*` field, so each type is exactly `sizeof` the C struct and
//! has no implicit padding. Fields are zerocopy's little-endian types
//! (alignment 1): a struct can be read from any byte slice, at any
//! alignment, on any host.
//!
//! Every struct is declared through one macro that takes the expected size
//! and the expected offset of every field (the numbers of docs/references/driver.md
//! §1.4) and turns them into compile-time asserts against the real layout
//! (`size_of`, `offset_of!`). The same numbers feed [`IoctlArg::INFO`], from
//! which `docs/ioctl-abi.md` renders its layout tables.

use serde::Serialize;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// zerocopy's derives emit hidden helper types without `Debug`; through
// `abi_struct!` their spans count as local code. Every argument struct
// itself derives `Debug` (the macro does it).
#[allow(missing_debug_implementations)]
pub mod dma;
#[allow(missing_debug_implementations)]
pub mod mem;
#[allow(missing_debug_implementations)]
pub mod misc;

/// One field of an argument struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldInfo {
    /// Field name (`_pad*` for explicit padding).
    pub name: &'static str,
    /// Byte offset (asserted against `offset_of!`).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// The Rust field type as written, e.g. `U64`, `[u8; 4]`.
    pub ty: &'static str,
    /// One-line meaning.
    pub doc: &'static str,
}

impl FieldInfo {
    /// True for explicit padding fields.
    #[must_use]
    pub fn is_padding(&self) -> bool {
        self.name.starts_with("_pad")
    }

    /// The C-style type of the field: `u64`, `u32`, `s32`, `u16`, `u8[4]`, …
    #[must_use]
    pub fn c_type(&self) -> String {
        c_type(self.ty)
    }
}

fn c_type(ty: &str) -> String {
    match ty {
        "U64" => "u64".into(),
        "U32" => "u32".into(),
        "U16" => "u16".into(),
        "I64" => "s64".into(),
        "I32" => "s32".into(),
        "I16" => "s16".into(),
        "u8" => "u8".into(),
        _ => {
            // `[T; N]` → `T[N]`
            if let Some(inner) = ty.strip_prefix('[').and_then(|s| s.strip_suffix(']'))
                && let Some((t, n)) = inner.split_once(';')
            {
                return format!("{}[{}]", c_type(t.trim()), n.trim());
            }
            ty.to_string()
        }
    }
}

/// Layout of one argument struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StructInfo {
    /// Rust type name, e.g. `MemAllocV2MemType64`.
    pub name: &'static str,
    /// `sizeof` in bytes (asserted).
    pub size: usize,
    /// What the struct is.
    pub doc: &'static str,
    /// Fields in memory order.
    pub fields: &'static [FieldInfo],
}

/// A type that can be an ioctl argument: byte-exact, any bit pattern valid.
pub trait IoctlArg: FromBytes + IntoBytes + KnownLayout + Immutable + Copy + 'static {
    /// The layout description.
    const INFO: StructInfo;
}

/// Declares one argument struct with size and offset asserts.
macro_rules! abi_struct {
    (
        $(#[doc = $doc:literal])+
        pub struct $name:ident : $size:literal {
            $(
                $(#[doc = $fdoc:literal])+
                $off:literal $field:ident : $fty:ty,
            )+
        }
    ) => {
        $(#[doc = $doc])+
        #[doc = ""]
        #[doc = concat!("Size ", stringify!($size), " bytes; little endian; explicit padding.")]
        #[derive(
            Clone,
            Copy,
            Debug,
            PartialEq,
            Eq,
            Hash,
            zerocopy::FromBytes,
            zerocopy::IntoBytes,
            zerocopy::KnownLayout,
            zerocopy::Immutable,
            zerocopy::Unaligned,
        )]
        #[repr(C)]
        pub struct $name {
            $(
                $(#[doc = $fdoc])+
                #[doc = concat!("\n\nOffset ", stringify!($off), ".")]
                pub $field: $fty,
            )+
        }

        const _: () = assert!(::core::mem::size_of::<$name>() == $size);
        $(
            const _: () = assert!(::core::mem::offset_of!($name, $field) == $off);
        )+

        impl $name {
            /// `sizeof` the C struct.
            pub const SIZE: usize = $size;
        }

        impl Default for $name {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }

        impl $crate::args::IoctlArg for $name {
            const INFO: $crate::args::StructInfo = $crate::args::StructInfo {
                name: stringify!($name),
                size: $size,
                doc: concat!($($doc),+),
                fields: &[
                    $(
                        $crate::args::FieldInfo {
                            name: stringify!($field),
                            offset: $off,
                            size: ::core::mem::size_of::<$fty>(),
                            ty: stringify!($fty),
                            doc: concat!($($fdoc),+),
                        },
                    )+
                ],
            };
        }
    };
}
pub(crate) use abi_struct;

/// A scalar or empty argument (the few ioctls whose argument is a bare
/// integer, or none).
macro_rules! scalar_arg {
    ($ty:ty, $name:literal, $doc:literal) => {
        impl IoctlArg for $ty {
            const INFO: StructInfo = StructInfo {
                name: $name,
                size: ::core::mem::size_of::<$ty>(),
                doc: $doc,
                fields: &[],
            };
        }
    };
}

scalar_arg!((), "()", "no argument");
scalar_arg!(u8, "u8", "one byte");
scalar_arg!(
    zerocopy::little_endian::I32,
    "I32",
    "a 32-bit signed integer"
);

pub use dma::*;
pub use mem::*;
pub use misc::*;

/// Every argument struct of the table, in the order `docs/ioctl-abi.md`
/// shows them (scalar arguments are not listed).
pub const STRUCTS: &[StructInfo] = &[
    // memory
    MemAlloc::INFO,
    MemAllocV2::INFO,
    MemAllocV2MemType::INFO,
    MemAllocV2MemType64::INFO,
    MemAllocV2MemType64Pa::INFO,
    MemGetPa::INFO,
    MemGetInfo::INFO,
    MemGetExtendedInfo::INFO,
    MemFree::INFO,
    MemCopy::INFO,
    MemCopy64Deprecated::INFO,
    MemCopy64::INFO,
    MemCopyAsync::INFO,
    MemCopyAsync64::INFO,
    MemCopyAsyncWait::INFO,
    Memset::INFO,
    Memset64::INFO,
    MemBufCopy::INFO,
    MemBufCopy64::INFO,
    MemBufCopy64ZcDeprecated::INFO,
    MemBufCopy64Zc::INFO,
    MemBufCopy64ZcBatches::INFO,
    MemcpyBatch::INFO,
    TensorBatchOp::INFO,
    MemGetMcMmapInfo::INFO,
    MemGetMcMmapInfoV2::INFO,
    // DMA
    DmaEngInit::INFO,
    DmaEngSetState::INFO,
    DmaEngGetState::INFO,
    DmaEngState::INFO,
    DmaQueueInit::INFO,
    DmaQueueInitBatch::INFO,
    DmaQueueRelease::INFO,
    DmaQueueCopyStart::INFO,
    DmaAckCompleted::INFO,
    DmaQueueGetState::INFO,
    DmaQueueState::INFO,
    DmaCopyDescriptors::INFO,
    DmaCopyDescriptors64::INFO,
    DmaDescriptorCopyout::INFO,
    // other
    Semaphore::INFO,
    Event::INFO,
    ResourceMmapInfo::INFO,
    H2tDmaAllocQueues::INFO,
    H2tDmaFreeQueues::INFO,
    HostMemPin::INFO,
    HostMemUnpin::INFO,
];

/// The layout of the struct named `name` (a Rust type name such as
/// `MemCopyAsync64`).
#[must_use]
pub fn struct_info(name: &str) -> Option<&'static StructInfo> {
    STRUCTS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_types() {
        assert_eq!(c_type("U64"), "u64");
        assert_eq!(c_type("I32"), "s32");
        assert_eq!(c_type("[u8; 4]"), "u8[4]");
        assert_eq!(c_type("[DmaQueueInit; 256]"), "DmaQueueInit[256]");
    }

    #[test]
    fn fields_tile_each_struct_exactly() {
        for s in STRUCTS {
            let mut at = 0;
            for f in s.fields {
                assert_eq!(f.offset, at, "{}.{} leaves a gap", s.name, f.name);
                at += f.size;
            }
            assert_eq!(at, s.size, "{} has tail bytes not covered", s.name);
        }
    }

    #[test]
    fn struct_names_are_unique() {
        let mut names: Vec<_> = STRUCTS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
