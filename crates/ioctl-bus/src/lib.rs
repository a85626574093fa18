//! The simulated `/dev/neuron` boundary (docs/references/design.md §3, L2).
//!
//! The host runtime (L5) and the kernel-driver model (L4) meet here and only
//! here. The host calls [`Transport::ioctl`] with a request number, the
//! argument bytes and its [`UserMemory`]; the driver implements [`Driver`]
//! and reaches user buffers named by pointers inside the argument through
//! that same [`UserMemory`] (`copy_from_user` / `copy_to_user`). Loads and
//! stores to mmapped driver memory go through [`Transport::mmap_read`] /
//! [`Transport::mmap_write`].
//!
//! Simulated time advances only inside the driver's device; nothing here
//! reads a clock except the threaded transport's host-side watchdog, which
//! turns a device that never answers into [`BusError::Hung`].
//!
//! * [`InProcess`] — the host calls the driver on its own thread.
//! * [`Threaded`] — the driver runs on a device thread; calls, user-memory
//!   accesses and mmap loads/stores cross crossbeam channels (the only
//!   threads the simulator spawns).
//! * [`Recorder`] — wraps any transport and logs every call with the user
//!   memory it touched ([`Recording`], JSON lines); [`replay`] re-issues a
//!   recording against a fresh driver and checks every byte.
//! * [`Counting`] / [`IoctlStats`] — ioctl counts by name.
//! * [`UserSpace`] — a simulated process address space.
//!
//! ```
//! use ioctl_bus::{Driver, InProcess, Threaded, Transport, UserMemory, UserSpace};
//! use ioctl_abi::Errno;
//!
//! /// Echoes the request number; reads one user byte named by the argument.
//! #[derive(Default)]
//! struct Echo;
//! impl Driver for Echo {
//!     fn ioctl(&mut self, req: u32, arg: &mut [u8], user: &mut dyn UserMemory) -> Result<i64, Errno> {
//!         let addr = u64::from_le_bytes(arg[..8].try_into().map_err(|_| Errno::EINVAL)?);
//!         let mut b = [0u8; 1];
//!         user.copy_from_user(addr, &mut b)?;
//!         arg[0] = b[0];
//!         Ok(i64::from(req))
//!     }
//!     fn mmap_read(&mut self, _: u64, _: &mut [u8]) -> Result<(), Errno> { Err(Errno::EFAULT) }
//!     fn mmap_write(&mut self, _: u64, _: &[u8]) -> Result<(), Errno> { Err(Errno::EFAULT) }
//! }
//!
//! let mut user = UserSpace::new();
//! let buf = user.alloc_with(&[42]);
//! for mut t in [Box::new(InProcess::new(Echo)) as Box<dyn Transport>, Box::new(Threaded::spawn(|| Echo))] {
//!     let mut arg = buf.to_le_bytes();
//!     assert_eq!(t.ioctl(7, &mut arg, &mut user), Ok(7));
//!     assert_eq!(arg[0], 42);
//! }
//! ```

use ioctl_abi::Errno;
use serde::{Deserialize, Serialize};

/// The calling process's memory as the driver sees it.
pub trait UserMemory {
    /// Reads `buf.len()` bytes at user address `addr` (`copy_from_user`).
    ///
    /// # Errors
    ///
    /// `EFAULT` when any byte is not mapped in the process.
    fn copy_from_user(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno>;

    /// Writes `bytes` at user address `addr` (`copy_to_user`).
    ///
    /// # Errors
    ///
    /// `EFAULT` when any byte is not mapped in the process.
    fn copy_to_user(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno>;
}

/// The device side of the boundary: a kernel driver's file operations.
pub trait Driver {
    /// Handles one ioctl. `arg` holds the argument struct's bytes as the
    /// caller passed them; the driver writes results back into it (the
    /// `_IOR`/`_IOWR` copy-out). Returns the handler's non-negative return
    /// value, or the errno the syscall would set.
    ///
    /// # Errors
    ///
    /// The errno of the failed call (`ENOTTY` unknown number, `EINVAL` bad
    /// size or field, `ENOMEM`, `EFAULT`, …).
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno>;

    /// A host load from mmapped driver memory; `offset` is the mmap offset
    /// (for a memory chunk, its physical address, docs/references/driver.md §1.7).
    ///
    /// # Errors
    ///
    /// `EFAULT` (or `EINVAL`) when the range is not inside one mapping.
    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno>;

    /// A host store to mmapped driver memory.
    ///
    /// # Errors
    ///
    /// As [`Driver::mmap_read`].
    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno>;

    /// A copy of the driver and the device it owns that runs on
    /// independently (the debugger's checkpoints, docs/user-guide.md §12
    /// "Going back"); `None` (the default) when it cannot be copied.
    fn try_clone_driver(&mut self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
}

/// A failure of the boundary itself, not of the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BusError {
    /// The device side panicked while handling a call; the message.
    DevicePanic(String),
    /// The device side did not answer within the watchdog (host seconds).
    Hung { waited_ms: u64 },
    /// The device side is gone (thread ended, channel closed).
    Disconnected,
    /// A replayed call did not give the recorded result (what differs).
    ReplayMismatch(String),
}

impl std::fmt::Display for BusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DevicePanic(m) => write!(f, "device side panicked: {m}"),
            Self::Hung { waited_ms } => {
                write!(f, "device side did not answer within {waited_ms} ms")
            }
            Self::Disconnected => write!(f, "device side disconnected"),
            Self::ReplayMismatch(m) => write!(f, "replay mismatch: {m}"),
        }
    }
}

impl std::error::Error for BusError {}

/// Why an ioctl did not succeed: the call failed, or the bus did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoctlError {
    /// The driver returned this errno.
    Errno(Errno),
    /// The boundary failed.
    Bus(BusError),
}

impl From<Errno> for IoctlError {
    fn from(e: Errno) -> Self {
        Self::Errno(e)
    }
}

impl From<BusError> for IoctlError {
    fn from(e: BusError) -> Self {
        Self::Bus(e)
    }
}

impl std::fmt::Display for IoctlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Errno(e) => write!(f, "{e}"),
            Self::Bus(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for IoctlError {}

/// The host side of the boundary: an open `/dev/neuron` file.
pub trait Transport {
    /// Issues one ioctl (see [`Driver::ioctl`]); `user` serves the driver's
    /// user-memory accesses for the duration of the call.
    ///
    /// # Errors
    ///
    /// The call's errno, or a [`BusError`].
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError>;

    /// A load from mmapped driver memory.
    ///
    /// # Errors
    ///
    /// The errno, or a [`BusError`].
    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError>;

    /// A store to mmapped driver memory.
    ///
    /// # Errors
    ///
    /// The errno, or a [`BusError`].
    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError>;

    /// The driver itself when it lives in this process and thread (the
    /// in-process transport), for inspection and for trace directives
    /// that act on the device directly; `None` across a thread boundary.
    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }

    /// A copy of the transport with a copy of the driver behind it, which
    /// runs on independently (the debugger's checkpoints,
    /// docs/user-guide.md §12 "Going back"). `None` (the default) when a
    /// part cannot be copied: a driver on another thread, a recording
    /// streamed to a writer.
    fn try_clone_box(&mut self) -> Option<Box<dyn Transport>> {
        None
    }

    /// Flushes what the transport writes on the side (a recording streamed
    /// to a file, [`Recorder::streaming`]) and returns the first error
    /// writing it, if any: records after it were lost. The default writes
    /// nothing.
    fn finish_writes(&mut self) -> Option<String> {
        None
    }
}

impl<T: Transport + ?Sized> Transport for &mut T {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        (**self).ioctl(request, arg, user)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        (**self).mmap_read(offset, buf)
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        (**self).mmap_write(offset, bytes)
    }

    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        (**self).local_driver()
    }

    fn finish_writes(&mut self) -> Option<String> {
        (**self).finish_writes()
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, IoctlError> {
        (**self).ioctl(request, arg, user)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoctlError> {
        (**self).mmap_read(offset, buf)
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), IoctlError> {
        (**self).mmap_write(offset, bytes)
    }

    fn local_driver(&mut self) -> Option<&mut dyn std::any::Any> {
        (**self).local_driver()
    }

    fn try_clone_box(&mut self) -> Option<Box<dyn Transport>> {
        (**self).try_clone_box()
    }

    fn finish_writes(&mut self) -> Option<String> {
        (**self).finish_writes()
    }
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

mod inproc;
mod record;
mod stats;
mod thread;
mod user;

pub use inproc::InProcess;
pub use record::{
    Call, JsonlError, Outcome, Record, Recorder, Recording, ReplayReport, UserAccess, replay,
};
pub use stats::{Counting, IoctlStats, ioctl_name};
pub use thread::{DEFAULT_WATCHDOG, DevicePort, Threaded};
pub use user::{USER_BASE, USER_PAGE_BYTES, UserSink, UserSource, UserSpace};
