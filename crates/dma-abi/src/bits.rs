//! Bit-field helpers shared by the control-word types.

/// The low `width` bits set.
pub(crate) const fn mask(width: u32) -> u32 {
    if width >= 32 {
        u32::MAX
    } else {
        (1 << width) - 1
    }
}

/// Bits `shift + width - 1 : shift` of `word`, shifted down.
pub(crate) const fn get(word: u32, shift: u32, width: u32) -> u32 {
    (word >> shift) & mask(width)
}

/// `word` with bits `shift + width - 1 : shift` replaced by the low `width`
/// bits of `value` (higher bits of `value` are dropped).
pub(crate) const fn set(word: u32, shift: u32, width: u32, value: u32) -> u32 {
    let m = mask(width) << shift;
    (word & !m) | ((value << shift) & m)
}

/// Generates a `bool` getter and a `with_` setter for one bit of a `u32`
/// newtype.
macro_rules! flag {
    ($(#[$doc:meta])* $get:ident, $set:ident, $bit:expr) => {
        $(#[$doc])*
        #[must_use]
        pub const fn $get(self) -> bool {
            crate::bits::get(self.0, $bit, 1) != 0
        }

        #[doc = concat!("Returns a copy with `", stringify!($get), "` (bit ", stringify!($bit), ") set to `value`.")]
        #[must_use]
        pub const fn $set(self, value: bool) -> Self {
            Self(crate::bits::set(self.0, $bit, 1, value as u32))
        }
    };
}

/// Generates a `u8` getter and a `with_` setter for the multi-bit field
/// `hi:lo` (at most 8 bits wide) of a `u32` newtype. The setter keeps only the
/// field's width of low bits of its argument.
macro_rules! field {
    ($(#[$doc:meta])* $get:ident, $set:ident, $hi:literal : $lo:literal) => {
        $(#[$doc])*
        #[must_use]
        pub const fn $get(self) -> u8 {
            crate::bits::get(self.0, $lo, $hi - $lo + 1) as u8
        }

        #[doc = concat!(
            "Returns a copy with `", stringify!($get), "` (bits ", stringify!($hi), ":",
            stringify!($lo), ") set to the low bits of `value` (higher bits are dropped)."
        )]
        #[must_use]
        pub const fn $set(self, value: u8) -> Self {
            Self(crate::bits::set(self.0, $lo, $hi - $lo + 1, value as u32))
        }
    };
}

pub(crate) use {field, flag};
