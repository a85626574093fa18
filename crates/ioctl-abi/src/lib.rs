//! The Neuron kernel driver's ioctl ABI as data (docs/references/design.md §3, L0):
//! request numbers, byte-exact argument structs and errno values.
//!
//! * [`encoding`] — the Linux `_IOC` encoding as `const fn`s
//!   ([`encoding::ioc`], `io`/`ior`/`iow`/`iowr`, and the decoders).
//! * [`table`] — every supported ioctl ([`Ioctl`], [`IoctlDef`],
//!   [`TABLE`], the [`cmd`] constants), each number computed from its
//!   direction, `nr` and argument size; [`lookup`] (ENOTTY for unknown
//!   numbers) and [`parse_arg`] (EINVAL for short arguments).
//! * [`args`] — the argument structs of docs/references/driver.md §1.4 as `#[repr(C)]`
//!   zerocopy types with compile-time size and offset asserts.
//! * [`enums`] — the enums carried in argument fields (memory categories,
//!   queue types, H2T handles, UDMA and queue states).
//! * [`Errno`] — Linux error numbers.
//! * [`listing`] — the serializable listing (`neuron-sim ioctl list`) and
//!   the generated parts of `docs/ioctl-abi.md`.
//!
//! Names follow the driver (docs/references/design.md §8): 0xC0384E6C is `MEM_COPY_ASYNC64`,
//! 0xC0204E81 is `MEM_BUF_ZEROCOPY64_BATCHES`; tdrv-dmem's names are
//! recorded as aliases. See `docs/ioctl-abi.md`.
//!
//! ```
//! use ioctl_abi::{Errno, Ioctl, args::MemFree, lookup, parse_arg};
//! use zerocopy::IntoBytes;
//!
//! let def = lookup(0x8008_4E16).unwrap();
//! assert_eq!(def.ioctl, Ioctl::MemFree);
//! assert_eq!((def.arg_size, def.struct_size), (8, 8));
//!
//! let mut arg = MemFree::default();
//! arg.mem_handle.set(7);
//! let back: MemFree = parse_arg(def, arg.as_bytes()).unwrap();
//! assert_eq!(back.mem_handle.get(), 7);
//!
//! assert_eq!(parse_arg::<MemFree>(def, &[0; 4]), Err(Errno::EINVAL));
//! assert_eq!(lookup(0x8008_4EFF).unwrap_err(), Errno::ENOTTY);
//! ```

pub mod args;
pub mod encoding;
pub mod enums;
pub mod errno;
pub mod listing;
pub mod table;

pub use args::{IoctlArg, STRUCTS, StructInfo};
pub use encoding::{Dir, NEURON_IOCTL_TYPE};
pub use errno::Errno;
pub use listing::{IoctlListing, list};
pub use table::{
    Alias, Ioctl, IoctlDef, SizeFrom, TABLE, by_name, cmd, family, lookup, parse_arg, parse_cmd,
};
