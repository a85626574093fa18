//! The access trait, typed by address kind.
//!
//! One trait, one implementation per (memory, address kind) pair: a
//! [`SparseMemory`](crate::SparseMemory) is reached with a `u64` byte offset,
//! SBUF with an [`SbufAddr`](soc_map::SbufAddr), PSUM with a
//! [`PsumAddr`](soc_map::PsumAddr), so the compiler checks that an address
//! of one kind is never used on the other memory.

use crate::MemFault;

/// Byte access to a memory through addresses of kind `A`.
///
/// Every method validates the *whole* access before touching any byte: an
/// `Err` means nothing was read or written. Bytes never written read as zero.
pub trait Bytes<A: Copy> {
    /// Checks that a read of `len` bytes at `addr` would succeed, without
    /// performing it.
    fn check_read(&self, addr: A, len: usize) -> Result<(), MemFault>;

    /// Checks that a write of `len` bytes at `addr` would succeed, without
    /// performing it. Defaults to [`Bytes::check_read`]; memories with
    /// write-only rules (PSUM, docs/references/wiki.md §A.2) override it.
    fn check_write(&self, addr: A, len: usize) -> Result<(), MemFault> {
        self.check_read(addr, len)
    }

    /// Reads `buf.len()` bytes starting at `addr` into `buf`.
    fn read(&self, addr: A, buf: &mut [u8]) -> Result<(), MemFault>;

    /// Writes `data` starting at `addr`.
    fn write(&mut self, addr: A, data: &[u8]) -> Result<(), MemFault>;

    /// Reads a little-endian `u32` at `addr`.
    fn read_u32_le(&self, addr: A) -> Result<u32, MemFault> {
        let mut raw = [0u8; 4];
        self.read(addr, &mut raw)?;
        Ok(u32::from_le_bytes(raw))
    }

    /// Writes `value` as a little-endian `u32` at `addr`.
    fn write_u32_le(&mut self, addr: A, value: u32) -> Result<(), MemFault> {
        self.write(addr, &value.to_le_bytes())
    }

    /// Sets `len` bytes starting at `addr` to `byte`.
    ///
    /// The default validates first, then writes one buffer; large memories
    /// override it with a page-wise fill.
    fn fill(&mut self, addr: A, len: usize, byte: u8) -> Result<(), MemFault> {
        self.check_write(addr, len)?;
        self.write(addr, &vec![byte; len])
    }

    /// Reads `len` bytes starting at `addr` into a new vector. The access is
    /// validated before anything is allocated, so a huge `len` faults
    /// instead of exhausting host memory.
    fn read_vec(&self, addr: A, len: usize) -> Result<Vec<u8>, MemFault> {
        self.check_read(addr, len)?;
        let mut buf = vec![0u8; len];
        self.read(addr, &mut buf)?;
        Ok(buf)
    }
}
