//! A small test driver: eight semaphores (the real SEMAPHORE_* numbers and
//! argument struct), a 4 KiB memory chunk reached by MEM_BUF_COPY64 and by
//! mmap, and a test-only XOR_COPY that reads one user buffer and writes
//! another through pointer fields. Magic semaphore values panic or hang.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ioctl_abi::args::{MemBufCopy64, Semaphore};
use ioctl_abi::{Errno, cmd, parse_cmd};
use ioctl_bus::{Driver, UserMemory};
use zerocopy::IntoBytes;

/// Test-only `_IOWR('T', 1, 24)`: `{ src: u64, dst: u64, len: u64 }`; reads
/// `len` bytes at `src`, writes them XOR a key at `dst`, returns `len` and
/// writes `!len` into the third field (a copy-out).
pub const XOR_COPY: u32 = ioctl_abi::encoding::iowr(b'T', 1, 24);
/// SEMAPHORE_WRITE of this value panics the driver.
pub const PANIC_VALUE: u32 = 0xDEAD_BEEF;
/// SEMAPHORE_WRITE of this value never returns.
pub const HANG_VALUE: u32 = 0xFFFF_FFFF;
/// The mmap offset of the memory chunk.
pub const MMAP_BASE: u64 = 0x1_0000_0000;
/// Its size.
pub const CHUNK_BYTES: usize = 4096;
/// The handle MEM_BUF_COPY64 accepts.
pub const CHUNK_HANDLE: u64 = 1;
/// Semaphores.
pub const SEMS: usize = 8;

/// How a driver deviates from the reference behaviour (replay tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quirk {
    #[default]
    None,
    /// SEMAPHORE_READ returns value + 1.
    ReadPlusOne,
    /// MEM_BUF_COPY64 copy-in reads one byte less.
    ShortCopyIn,
    /// XOR_COPY uses another key.
    OtherXorKey,
}

#[derive(Debug)]
pub struct SemDriver {
    pub sems: [u32; SEMS],
    pub chunk: Vec<u8>,
    pub calls: u64,
    pub quirk: Quirk,
    /// Set when the driver is dropped.
    pub dropped: Option<Arc<AtomicBool>>,
}

impl Default for SemDriver {
    fn default() -> Self {
        Self::new(Quirk::None)
    }
}

impl Drop for SemDriver {
    fn drop(&mut self) {
        if let Some(flag) = &self.dropped {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

impl SemDriver {
    pub fn new(quirk: Quirk) -> Self {
        Self {
            sems: [0; SEMS],
            chunk: (0..CHUNK_BYTES).map(|i| (i * 7) as u8).collect(),
            calls: 0,
            quirk,
            dropped: None,
        }
    }

    fn semaphore(&mut self, request: u32, arg: &mut [u8]) -> Result<i64, Errno> {
        let (_, s) = parse_cmd::<Semaphore>(request, arg)?;
        if s.nc_id.get() != 0 {
            return Err(Errno::E2BIG);
        }
        let idx = s.semaphore_index.get() as usize;
        let sem = self.sems.get_mut(idx).ok_or(Errno::EINVAL)?;
        let value = s.value.get();
        match request {
            cmd::SEMAPHORE_WRITE => {
                if value == PANIC_VALUE {
                    panic!("magic value {value:#x} written to semaphore {idx}");
                }
                if value == HANG_VALUE {
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                *sem = value;
            }
            cmd::SEMAPHORE_INCREMENT => *sem = sem.wrapping_add(value),
            cmd::SEMAPHORE_DECREMENT => *sem = sem.checked_sub(value).ok_or(Errno::ERANGE)?,
            cmd::SEMAPHORE_READ => {
                let bump = u32::from(self.quirk == Quirk::ReadPlusOne);
                arg[8..12].copy_from_slice(&sem.wrapping_add(bump).to_le_bytes());
            }
            _ => return Err(Errno::ENOTTY),
        }
        Ok(0)
    }

    fn buf_copy(&mut self, arg: &mut [u8], user: &mut dyn UserMemory) -> Result<i64, Errno> {
        let (_, a) = parse_cmd::<MemBufCopy64>(cmd::MEM_BUF_COPY64, arg)?;
        if a.mem_handle.get() != CHUNK_HANDLE {
            return Err(Errno::EINVAL);
        }
        let off = usize::try_from(a.offset.get()).map_err(|_| Errno::EINVAL)?;
        let size = usize::try_from(a.size.get()).map_err(|_| Errno::EINVAL)?;
        let end = off.checked_add(size).ok_or(Errno::EINVAL)?;
        if end > CHUNK_BYTES {
            return Err(Errno::EINVAL);
        }
        if a.copy_to_mem_handle.get() == 1 {
            let short = usize::from(self.quirk == Quirk::ShortCopyIn && size > 0);
            user.copy_from_user(a.buffer.get(), &mut self.chunk[off..end - short])?;
        } else {
            user.copy_to_user(a.buffer.get(), &self.chunk[off..end])?;
        }
        Ok(0)
    }

    fn xor_copy(&mut self, arg: &mut [u8], user: &mut dyn UserMemory) -> Result<i64, Errno> {
        if arg.len() < 24 {
            return Err(Errno::EINVAL);
        }
        let field = |i: usize| u64::from_le_bytes(arg[i * 8..i * 8 + 8].try_into().unwrap());
        let (src, dst, len) = (field(0), field(1), field(2));
        if len > CHUNK_BYTES as u64 {
            return Err(Errno::EINVAL);
        }
        let mut data = vec![0; len as usize];
        user.copy_from_user(src, &mut data)?;
        let key = if self.quirk == Quirk::OtherXorKey {
            0x5b
        } else {
            0x5a
        };
        data.iter_mut().for_each(|b| *b ^= key);
        user.copy_to_user(dst, &data)?;
        arg[16..24].copy_from_slice(&(!len).to_le_bytes());
        Ok(len as i64)
    }

    fn chunk_range(&self, offset: u64, len: usize) -> Result<std::ops::Range<usize>, Errno> {
        let off = offset
            .checked_sub(MMAP_BASE)
            .and_then(|o| usize::try_from(o).ok())
            .ok_or(Errno::EFAULT)?;
        let end = off.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > CHUNK_BYTES {
            return Err(Errno::EFAULT);
        }
        Ok(off..end)
    }
}

impl Driver for SemDriver {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        self.calls += 1;
        match request {
            cmd::SEMAPHORE_READ
            | cmd::SEMAPHORE_WRITE
            | cmd::SEMAPHORE_INCREMENT
            | cmd::SEMAPHORE_DECREMENT => self.semaphore(request, arg),
            cmd::MEM_BUF_COPY64 => self.buf_copy(arg, user),
            XOR_COPY => self.xor_copy(arg, user),
            _ => Err(Errno::ENOTTY),
        }
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.calls += 1;
        let r = self.chunk_range(offset, buf.len())?;
        buf.copy_from_slice(&self.chunk[r]);
        Ok(())
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.calls += 1;
        let r = self.chunk_range(offset, bytes.len())?;
        self.chunk[r].copy_from_slice(bytes);
        Ok(())
    }
}

/// A SEMAPHORE_* argument.
pub fn sem_arg(index: u32, value: u32) -> Vec<u8> {
    let mut s = Semaphore::default();
    s.semaphore_index.set(index);
    s.value.set(value);
    s.as_bytes().to_vec()
}

/// The value field of a SEMAPHORE_* argument.
pub fn sem_value(arg: &[u8]) -> u32 {
    u32::from_le_bytes(arg[8..12].try_into().unwrap())
}

/// A MEM_BUF_COPY64 argument on the chunk.
pub fn buf_copy_arg(buffer: u64, offset: u64, size: u64, copy_in: bool) -> Vec<u8> {
    let mut a = MemBufCopy64::default();
    a.mem_handle.set(CHUNK_HANDLE);
    a.buffer.set(buffer);
    a.offset.set(offset);
    a.size.set(size);
    a.copy_to_mem_handle.set(u32::from(copy_in));
    a.as_bytes().to_vec()
}

/// An XOR_COPY argument.
pub fn xor_arg(src: u64, dst: u64, len: u64) -> Vec<u8> {
    [src, dst, len]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}
