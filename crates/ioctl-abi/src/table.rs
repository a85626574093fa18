//! The supported ioctls as data (docs/references/driver.md §1.2), and the lookup and
//! argument-parsing helpers a driver model dispatches with.
//!
//! Every number is computed by [`ioc`] from the entry's direction, `nr`
//! and encoded size — the size of the argument type, or 8 for the legacy
//! ioctls the driver declares with a pointer type. None is typed in; the
//! tests compare the computed values with the published ones.

use serde::Serialize;

use crate::args::{
    DmaAckCompleted, DmaCopyDescriptors, DmaCopyDescriptors64, DmaDescriptorCopyout,
    DmaEngGetState, DmaEngInit, DmaEngSetState, DmaQueueCopyStart, DmaQueueGetState, DmaQueueInit,
    DmaQueueInitBatch, DmaQueueRelease, Event, H2tDmaAllocQueues, H2tDmaFreeQueues, HostMemPin,
    HostMemUnpin, IoctlArg, MemAlloc, MemAllocV2, MemAllocV2MemType, MemAllocV2MemType64,
    MemAllocV2MemType64Pa, MemBufCopy, MemBufCopy64, MemBufCopy64Zc, MemBufCopy64ZcBatches,
    MemBufCopy64ZcDeprecated, MemCopy, MemCopy64, MemCopy64Deprecated, MemCopyAsync,
    MemCopyAsync64, MemCopyAsyncWait, MemFree, MemGetExtendedInfo, MemGetInfo, MemGetMcMmapInfo,
    MemGetMcMmapInfoV2, MemGetPa, Memset, Memset64, ResourceMmapInfo, Semaphore, StructInfo,
};
use crate::encoding::{Dir, NEURON_IOCTL_TYPE, ioc, nr_of, type_of};
use crate::errno::Errno;

/// Size of a user pointer on x86-64 LP64: the encoded size of the ioctls
/// declared with a pointer type.
pub const POINTER_SIZE: usize = 8;

/// What the encoded size field was computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeFrom {
    /// The driver declares the number with a pointer type: the size field
    /// is 8 whatever the struct's size; the handler copies the struct.
    Pointer,
    /// The size field is `sizeof` the argument (0 for `_IO`).
    Struct,
}

impl SizeFrom {
    /// The encoded `_IOC_SIZE` for an argument of `struct_size` bytes.
    #[must_use]
    pub const fn encoded_size(self, struct_size: usize) -> usize {
        match self {
            Self::Pointer => POINTER_SIZE,
            Self::Struct => struct_size,
        }
    }
}

/// Which driver snapshot first has the number (docs/references/driver.md §0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub enum Since {
    /// In aws-neuronx-dkms 2.24 (`[2.24]`), the primary source.
    #[serde(rename = "2.24")]
    Driver224,
    /// Only in the newer driver snapshot (`[N]`).
    #[serde(rename = "newer")]
    Newer,
}

impl Since {
    /// `"2.24"` or `"newer"`.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Driver224 => "2.24",
            Self::Newer => "newer",
        }
    }
}

/// Another name a number goes by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
pub struct Alias {
    /// The other name.
    pub name: &'static str,
    /// Who uses it.
    pub source: &'static str,
}

/// One supported ioctl.
#[derive(Clone, Copy, Debug)]
pub struct IoctlDef {
    /// The matchable identity.
    pub ioctl: Ioctl,
    /// The driver's name without the `NEURON_IOCTL_` prefix.
    pub name: &'static str,
    /// Direction bits as encoded.
    pub dir: Dir,
    /// `_IOC_NR`.
    pub nr: u8,
    /// Where [`IoctlDef::arg_size`] came from.
    pub size_from: SizeFrom,
    /// The encoded `_IOC_SIZE`: 8 for pointer-declared ioctls.
    pub arg_size: usize,
    /// Bytes the handler copies from / to the user argument.
    pub struct_size: usize,
    /// The 32-bit request number, computed by [`ioc`].
    pub value: u32,
    /// The argument's layout.
    pub arg: &'static StructInfo,
    /// First driver snapshot with the number.
    pub since: Since,
    /// Fails with EACCES unless the calling process is attached to the
    /// device (docs/references/driver.md §1.6; the gate compares the exact number, so
    /// the `*64`/`V2*` variants are not gated).
    pub attach_gated: bool,
    /// Other names of the same number (tdrv-dmem, the RE notes, older
    /// drivers).
    pub aliases: &'static [Alias],
    /// One-line summary.
    pub summary: &'static str,
}

macro_rules! ioctls {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident / $konst:ident = $dir:ident($nr:literal, $enc:ident $arg:ty), $since:ident,
            gated: $gated:literal, aliases: [$($alias:literal @ $asrc:literal),* $(,)?];
    )+) => {
        /// Every supported ioctl, in number order within families; the
        /// discriminant indexes [`TABLE`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
        pub enum Ioctl {
            $(
                $(#[doc = $doc])+
                $variant,
            )+
        }

        /// The supported request numbers as constants, named as the driver
        /// names them (without `NEURON_IOCTL_`), for `match`.
        pub mod cmd {
            use super::Ioctl;
            $(
                #[doc = concat!("`", stringify!($konst), "` (computed).")]
                pub const $konst: u32 = Ioctl::$variant.value();
            )+
        }

        /// The table of supported ioctls; `TABLE[ioctl as usize]` is `ioctl`.
        pub const TABLE: &[IoctlDef] = &[
            $(
                IoctlDef {
                    ioctl: Ioctl::$variant,
                    name: stringify!($konst),
                    dir: Dir::$dir,
                    nr: $nr,
                    size_from: SizeFrom::$enc,
                    arg_size: SizeFrom::$enc.encoded_size(::core::mem::size_of::<$arg>()),
                    struct_size: ::core::mem::size_of::<$arg>(),
                    value: ioc(
                        Dir::$dir,
                        NEURON_IOCTL_TYPE,
                        $nr,
                        SizeFrom::$enc.encoded_size(::core::mem::size_of::<$arg>()),
                    ),
                    arg: &<$arg as IoctlArg>::INFO,
                    since: Since::$since,
                    attach_gated: $gated,
                    aliases: &[$(Alias { name: $alias, source: $asrc }),*],
                    summary: concat!($($doc),+),
                },
            )+
        ];

        impl Ioctl {
            /// Every supported ioctl, in table order.
            pub const ALL: &'static [Ioctl] = &[$(Ioctl::$variant),+];

            /// The ioctl with this exact request number.
            #[must_use]
            pub const fn from_cmd(value: u32) -> Option<Self> {
                match value {
                    $(cmd::$konst => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

impl Ioctl {
    /// The table entry.
    #[must_use]
    pub const fn def(self) -> &'static IoctlDef {
        &TABLE[self as usize]
    }

    /// The 32-bit request number.
    #[must_use]
    pub const fn value(self) -> u32 {
        self.def().value
    }

    /// The driver's name (without `NEURON_IOCTL_`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.def().name
    }
}

ioctls! {
    // ---- device basics -------------------------------------------------
    /// Deprecated device reset; returns 0.
    DeviceReset / DEVICE_RESET = None(1, Struct ()), Driver224, gated: false, aliases: [];
    /// Deprecated readiness query (one byte).
    DeviceReady / DEVICE_READY = Read(2, Struct u8), Driver224, gated: false, aliases: [];
    /// No-op.
    DeviceRelease / DEVICE_RELEASE = None(5, Struct ()), Driver224, gated: false, aliases: [];
    /// PID of the process attached to the device.
    DeviceAppPid / DEVICE_APP_PID = Read(6, Struct zerocopy::little_endian::I32), Driver224,
        gated: false, aliases: [];

    // ---- memory ----------------------------------------------------------
    /// Allocate memory (legacy v1, 32-byte struct).
    MemAlloc / MEM_ALLOC = Read(21, Pointer MemAlloc), Driver224, gated: true, aliases: [];
    /// Drop a reference to a memory handle.
    MemFree / MEM_FREE = Read(22, Pointer MemFree), Driver224, gated: true, aliases: [];
    /// Synchronous copy between handles, 32-bit sizes.
    MemCopy / MEM_COPY = Read(23, Pointer MemCopy), Driver224, gated: true, aliases: [];
    /// Synchronous copy between handles, 64-bit sizes (40-byte form).
    MemCopy64Deprecated / MEM_COPY64_DEPRECATED = Read(23, Struct MemCopy64Deprecated), Driver224,
        gated: false, aliases: ["MEM_COPY64" @ "driver 2.24"];
    /// Copy between handles, 64-bit sizes, with sequence number and context (56-byte form).
    MemCopy64 / MEM_COPY64 = Read(23, Struct MemCopy64), Newer, gated: false, aliases: [];
    /// Copy between a user buffer and a handle, 32-bit sizes; direction flag.
    MemBufCopy / MEM_BUF_COPY = ReadWrite(24, Pointer MemBufCopy), Driver224, gated: false,
        aliases: [];
    /// Copy in / copy out between a user buffer and a handle, 64-bit sizes; direction flag.
    MemBufCopy64 / MEM_BUF_COPY64 = ReadWrite(24, Struct MemBufCopy64), Driver224, gated: false,
        aliases: [];
    /// Physical address of a handle.
    MemGetPa / MEM_GET_PA = Read(25, Pointer MemGetPa), Driver224, gated: true,
        aliases: ["get-PA" @ "tdrv-dmem"];
    /// mmap offset and physical address of a handle.
    MemGetInfo / MEM_GET_INFO = Read(26, Pointer MemGetInfo), Driver224, gated: true, aliases: [];
    /// Fill with a byte value, 32-bit size.
    Memset / MEMSET = Read(28, Pointer Memset), Driver224, gated: false, aliases: [];
    /// Fill with a byte value, 64-bit size.
    Memset64 / MEMSET64 = Read(28, Struct Memset64), Driver224, gated: false, aliases: [];
    /// Everything about a handle.
    MemGetExtendedInfo / MEM_GET_EXTENDED_INFO = Read(29, Pointer MemGetExtendedInfo), Driver224,
        gated: false, aliases: [];

    // ---- DMA engines and queues -----------------------------------------
    /// Deprecated engine init; returns 0.
    DmaEngInit / DMA_ENG_INIT = Read(30, Pointer DmaEngInit), Driver224, gated: true, aliases: [];
    /// Set an engine's state (change_state register).
    DmaEngSetState / DMA_ENG_SET_STATE = Read(31, Pointer DmaEngSetState), Driver224, gated: true,
        aliases: [];
    /// Snapshot of an engine's state.
    DmaEngGetState / DMA_ENG_GET_STATE = ReadWrite(32, Pointer DmaEngGetState), Driver224,
        gated: false, aliases: [];
    /// Point a queue's rings at allocations.
    DmaQueueInit / DMA_QUEUE_INIT = Read(33, Pointer DmaQueueInit), Driver224, gated: true,
        aliases: [];
    /// No-op.
    DmaQueueRelease / DMA_QUEUE_RELEASE = Read(34, Pointer DmaQueueRelease), Driver224,
        gated: true, aliases: [];
    /// Ring a queue's doorbells.
    DmaQueueCopyStart / DMA_QUEUE_COPY_START = Read(35, Pointer DmaQueueCopyStart), Driver224,
        gated: false, aliases: [];
    /// Advance the completion shadow index (software only).
    DmaAckCompleted / DMA_ACK_COMPLETED = Read(36, Pointer DmaAckCompleted), Driver224,
        gated: true, aliases: [];
    /// Register snapshot of a queue.
    DmaQueueGetState / DMA_QUEUE_GET_STATE = ReadWrite(37, Pointer DmaQueueGetState), Driver224,
        gated: false, aliases: [];
    /// Write user descriptors into a ring allocation, 32-bit offset.
    DmaCopyDescriptors / DMA_COPY_DESCRIPTORS = Read(38, Pointer DmaCopyDescriptors), Driver224,
        gated: true, aliases: [];
    /// Write user descriptors into a ring allocation, 64-bit offset.
    DmaCopyDescriptors64 / DMA_COPY_DESCRIPTORS64 = Read(38, Struct DmaCopyDescriptors64),
        Driver224, gated: false, aliases: [];
    /// Read descriptors back from a queue's ring.
    DmaDescriptorCopyout / DMA_DESCRIPTOR_COPYOUT = ReadWrite(39, Pointer DmaDescriptorCopyout),
        Driver224, gated: false, aliases: [];

    // ---- semaphores and events -----------------------------------------
    /// Atomically add to a semaphore.
    SemaphoreIncrement / SEMAPHORE_INCREMENT = Read(41, Pointer Semaphore), Driver224,
        gated: false, aliases: [];
    /// Atomically subtract from a semaphore.
    SemaphoreDecrement / SEMAPHORE_DECREMENT = Read(42, Pointer Semaphore), Driver224,
        gated: false, aliases: [];
    /// Read a semaphore.
    SemaphoreRead / SEMAPHORE_READ = ReadWrite(43, Pointer Semaphore), Driver224, gated: false,
        aliases: [];
    /// Set a semaphore.
    SemaphoreWrite / SEMAPHORE_WRITE = Read(44, Pointer Semaphore), Driver224, gated: false,
        aliases: [];
    /// Write an event word.
    EventSet / EVENT_SET = Read(45, Pointer Event), Driver224, gated: false, aliases: [];
    /// Read an event word.
    EventGet / EVENT_GET = ReadWrite(46, Pointer Event), Driver224, gated: false, aliases: [];

    // ---- allocation v2 family --------------------------------------------
    /// Allocate with alignment (40-byte struct).
    MemAllocV2 / MEM_ALLOC_V2 = Read(102, Pointer MemAllocV2), Driver224, gated: false,
        aliases: [];
    /// Allocate with alignment and category (48 bytes).
    MemAllocV2Mt / MEM_ALLOC_V2MT = Read(102, Struct MemAllocV2MemType), Driver224, gated: false,
        aliases: [];
    /// Allocate with alignment and category, sizes of 4 GiB and more (56 bytes).
    MemAllocV2Mt64 / MEM_ALLOC_V2MT64 = Read(102, Struct MemAllocV2MemType64), Driver224,
        gated: false, aliases: ["MEM_ALLOC" @ "tdrv-dmem"];
    /// As MEM_ALLOC_V2MT64, also returning the physical address (64 bytes).
    MemAllocV2Mt64Pa / MEM_ALLOC_V2MT64_PA = ReadWrite(102, Struct MemAllocV2MemType64Pa), Newer,
        gated: false, aliases: [];

    // ---- async copies ----------------------------------------------------
    /// Asynchronous copy between handles, 32-bit sizes.
    MemCopyAsync / MEM_COPY_ASYNC = ReadWrite(108, Struct MemCopyAsync), Driver224, gated: true,
        aliases: [];
    /// Asynchronous copy between handles, 64-bit sizes.
    MemCopyAsync64 / MEM_COPY_ASYNC64 = ReadWrite(108, Struct MemCopyAsync64), Driver224,
        gated: false, aliases: ["MEM_COPY_ASYNC" @ "tdrv-dmem"];
    /// Wait for an asynchronous copy.
    MemCopyAsyncWait / MEM_COPY_ASYNC_WAIT = Write(109, Struct MemCopyAsyncWait), Driver224,
        gated: true, aliases: [];

    // ---- mmap information ------------------------------------------------
    /// mmap information for a physical address.
    MemMcGetInfo / MEM_MC_GET_INFO = ReadWrite(111, Struct MemGetMcMmapInfo), Driver224,
        gated: false, aliases: [];
    /// mmap information for a physical address, with the handle.
    MemMcGetInfoV2 / MEM_MC_GET_INFO_V2 = ReadWrite(111, Struct MemGetMcMmapInfoV2), Driver224,
        gated: false, aliases: [];
    /// mmap offset of a special resource (semaphores, SBUF, …).
    ResourceMmapInfo / RESOURCE_MMAP_INFO = ReadWrite(112, Struct ResourceMmapInfo), Driver224,
        gated: false, aliases: [];

    // ---- zero-copy -------------------------------------------------------
    /// Zero-copy transfer, 40-byte form (driver 2.24; the copy64 struct).
    MemBufZerocopy64Legacy / MEM_BUF_ZEROCOPY64_LEGACY = ReadWrite(124, Struct MemBufCopy64),
        Driver224, gated: false, aliases: ["MEM_BUF_ZEROCOPY64" @ "driver 2.24"];
    /// Zero-copy transfer, 48-byte form.
    MemBufZerocopy64Deprecated / MEM_BUF_ZEROCOPY64_DEPRECATED =
        ReadWrite(124, Struct MemBufCopy64ZcDeprecated), Newer, gated: false, aliases: [];
    /// Zero-copy transfer, optionally asynchronous (64 bytes).
    MemBufZerocopy64 / MEM_BUF_ZEROCOPY64 = ReadWrite(124, Struct MemBufCopy64Zc), Newer,
        gated: false, aliases: [];
    /// Reserve H2T queues.
    H2tDmaAllocQueues / H2T_DMA_ALLOC_QUEUES = ReadWrite(125, Struct H2tDmaAllocQueues), Newer,
        gated: false, aliases: [];
    /// Release H2T queues.
    H2tDmaFreeQueues / H2T_DMA_FREE_QUEUES = ReadWrite(126, Struct H2tDmaFreeQueues), Newer,
        gated: false, aliases: [];
    /// Many tensors' zero-copy transfers in one call.
    MemBufZerocopy64Batches / MEM_BUF_ZEROCOPY64_BATCHES =
        ReadWrite(129, Struct MemBufCopy64ZcBatches), Newer, gated: false,
        aliases: ["MEM_BUF_BATCH_COPY" @ "RE notes (docs/references/driver.md §1.3)"];

    // ---- batched queue init, pinning -------------------------------------
    /// Up to 255 queue inits in one call.
    DmaQueueInitBatch / DMA_QUEUE_INIT_BATCH = Read(133, Struct DmaQueueInitBatch), Driver224,
        gated: false, aliases: [];
    /// Pin user memory.
    HostMemPin / HOST_MEM_PIN = ReadWrite(136, Struct HostMemPin), Newer, gated: false,
        aliases: [];
    /// Unpin user memory.
    HostMemUnpin / HOST_MEM_UNPIN = Write(137, Struct HostMemUnpin), Newer, gated: false,
        aliases: [];
}

/// The `nr`s the driver dispatches by number only, choosing the variant by
/// the full number or the size afterwards (docs/references/driver.md §1.1).
pub const NR_DISPATCHED_FAMILIES: &[u8] = &[23, 24, 28, 38, 102, 105, 108, 111, 124];

/// The table entry of an exact request number.
///
/// # Errors
///
/// * `EINVAL` — type `'N'` and an `nr` of a family the driver dispatches by
///   number ([`NR_DISPATCHED_FAMILIES`]) but a size/direction none of its
///   variants has: the driver recognises the family, not the size
///   (inference, see `docs/ioctl-abi.md`).
/// * `ENOTTY` — every other unknown number.
pub fn lookup(cmd: u32) -> Result<&'static IoctlDef, Errno> {
    match Ioctl::from_cmd(cmd) {
        Some(ioctl) => Ok(ioctl.def()),
        None if type_of(cmd) == NEURON_IOCTL_TYPE
            && NR_DISPATCHED_FAMILIES.contains(&nr_of(cmd)) =>
        {
            Err(Errno::EINVAL)
        }
        None => Err(Errno::ENOTTY),
    }
}

/// The table entry with this driver name (primary names only, e.g.
/// `MEM_COPY_ASYNC64`; an optional `NEURON_IOCTL_` prefix is accepted).
#[must_use]
pub fn by_name(name: &str) -> Option<&'static IoctlDef> {
    let name = name.strip_prefix("NEURON_IOCTL_").unwrap_or(name);
    TABLE.iter().find(|d| d.name == name)
}

/// Every table entry with this `nr` (a family), in table order.
pub fn family(nr: u8) -> impl Iterator<Item = &'static IoctlDef> {
    TABLE.iter().filter(move |d| d.nr == nr)
}

/// Reads the argument of `def` from the bytes the caller passed.
///
/// The handler copies `struct_size` bytes; bytes after them are not read.
///
/// # Errors
///
/// `EINVAL` when `bytes` is shorter than the struct (wrong size), or when
/// `T` is not the argument type of `def`.
pub fn parse_arg<T: IoctlArg>(def: &IoctlDef, bytes: &[u8]) -> Result<T, Errno> {
    if T::INFO.name != def.arg.name || T::INFO.size != def.struct_size {
        return Err(Errno::EINVAL);
    }
    T::read_from_prefix(bytes)
        .map(|(arg, _)| arg)
        .map_err(|_| Errno::EINVAL)
}

/// [`lookup`] then [`parse_arg`].
///
/// # Errors
///
/// As the two.
pub fn parse_cmd<T: IoctlArg>(cmd: u32, bytes: &[u8]) -> Result<(&'static IoctlDef, T), Errno> {
    let def = lookup(cmd)?;
    Ok((def, parse_arg(def, bytes)?))
}
