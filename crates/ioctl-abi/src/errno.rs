//! Linux error numbers, as the driver returns them (negated) from its ioctl
//! handler. At the ABI boundary the ABI's own codes are the error type.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! errnos {
    ($($name:ident = $code:literal, $msg:literal;)*) => {
        /// A Linux errno value (x86-64 / asm-generic numbering).
        ///
        /// Serialized and displayed by its symbolic name.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        #[repr(i32)]
        pub enum Errno {
            $(
                #[doc = concat!($msg, " (", stringify!($code), ").")]
                $name = $code,
            )*
        }

        impl Errno {
            /// Every errno this crate knows, in numeric order.
            pub const ALL: &'static [Errno] = &[$(Errno::$name),*];

            /// The positive errno number.
            #[must_use]
            pub const fn code(self) -> i32 {
                self as i32
            }

            /// The errno with this positive number, if known.
            #[must_use]
            pub const fn from_code(code: i32) -> Option<Self> {
                match code {
                    $($code => Some(Self::$name),)*
                    _ => None,
                }
            }

            /// The symbolic name, e.g. `"EINVAL"`.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }

            /// The `strerror` text, e.g. `"Invalid argument"`.
            #[must_use]
            pub const fn message(self) -> &'static str {
                match self {
                    $(Self::$name => $msg,)*
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    EBADF = 9, "Bad file descriptor";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    ENODEV = 19, "No such device";
    EINVAL = 22, "Invalid argument";
    ENOTTY = 25, "Inappropriate ioctl for device";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ERANGE = 34, "Numerical result out of range";
    ENOSYS = 38, "Function not implemented";
    EOVERFLOW = 75, "Value too large for defined data type";
    EOPNOTSUPP = 95, "Operation not supported";
    ETIMEDOUT = 110, "Connection timed out";
    ECANCELED = 125, "Operation canceled";
}

impl Errno {
    /// The value a kernel handler returns for this error: `-code`.
    #[must_use]
    pub const fn neg(self) -> i32 {
        -self.code()
    }

    /// The errno of a kernel-style return value (`-code`); `None` for
    /// non-negative values and unknown codes.
    #[must_use]
    pub const fn from_ret(ret: i64) -> Option<Self> {
        if ret >= 0 || ret < -(i32::MAX as i64) {
            return None;
        }
        // In range: checked above.
        #[allow(clippy::cast_possible_truncation)]
        let code = (-ret) as i32;
        Self::from_code(code)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name(), self.code(), self.message())
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for i32 {
    fn from(e: Errno) -> Self {
        e.code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_values() {
        let expect = [
            (Errno::EPERM, 1),
            (Errno::ENOENT, 2),
            (Errno::E2BIG, 7),
            (Errno::ENOMEM, 12),
            (Errno::EACCES, 13),
            (Errno::EFAULT, 14),
            (Errno::EINVAL, 22),
            (Errno::ENOTTY, 25),
            (Errno::ETIMEDOUT, 110),
        ];
        for (e, code) in expect {
            assert_eq!(e.code(), code);
            assert_eq!(Errno::from_code(code), Some(e));
            assert_eq!(e.neg(), -code);
            assert_eq!(Errno::from_ret(i64::from(-code)), Some(e));
        }
        assert_eq!(Errno::from_code(0), None);
        assert_eq!(Errno::from_ret(0), None);
        assert_eq!(Errno::from_ret(22), None);
        assert_eq!(Errno::from_ret(i64::MIN), None);
    }

    #[test]
    fn all_is_sorted_and_round_trips() {
        assert!(Errno::ALL.windows(2).all(|w| w[0].code() < w[1].code()));
        for &e in Errno::ALL {
            assert_eq!(Errno::from_code(e.code()), Some(e));
        }
    }

    #[test]
    fn display_names_the_error() {
        assert_eq!(Errno::EINVAL.to_string(), "EINVAL (22): Invalid argument");
        assert_eq!(
            Errno::ENOTTY.to_string(),
            "ENOTTY (25): Inappropriate ioctl for device"
        );
    }
}
