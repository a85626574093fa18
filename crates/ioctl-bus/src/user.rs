//! A simulated process address space: the user buffers a host program
//! hands to ioctls (seed 000's `buffer` arguments, out-pointers).

use std::collections::BTreeMap;

use ioctl_abi::Errno;

use crate::UserMemory;

/// Where the first user allocation lands (a typical x86-64 mmap area).
pub const USER_BASE: u64 = 0x7f00_0000_0000;
/// Allocations are page aligned and separated by one unmapped guard page,
/// so an access that runs off a buffer faults instead of reaching the next.
pub const USER_PAGE_BYTES: u64 = 4096;

/// The host process's memory: disjoint mapped buffers, everything else
/// unmapped (`EFAULT`).
#[derive(Debug, Default)]
pub struct UserSpace {
    regions: BTreeMap<u64, Vec<u8>>,
    next: u64,
}

impl UserSpace {
    /// An empty address space.
    #[must_use]
    pub fn new() -> Self {
        Self {
            regions: BTreeMap::new(),
            next: USER_BASE,
        }
    }

    /// Maps a zeroed buffer of `len_bytes` (at least one byte is mapped) and
    /// returns its address, page aligned.
    pub fn alloc(&mut self, len_bytes: usize) -> u64 {
        let addr = self.next.max(USER_BASE);
        let len = len_bytes.max(1) as u64;
        let pages = len.div_ceil(USER_PAGE_BYTES) + 1; // + guard page
        self.next = addr + pages * USER_PAGE_BYTES;
        self.regions.insert(addr, vec![0; len_bytes.max(1)]);
        addr
    }

    /// Maps a buffer holding `bytes` and returns its address.
    pub fn alloc_with(&mut self, bytes: &[u8]) -> u64 {
        let addr = self.alloc(bytes.len());
        if let Some(r) = self.regions.get_mut(&addr) {
            r[..bytes.len()].copy_from_slice(bytes);
        }
        addr
    }

    /// Unmaps the buffer that starts at `addr`; false if none does.
    pub fn free(&mut self, addr: u64) -> bool {
        self.regions.remove(&addr).is_some()
    }

    /// Bytes mapped in all buffers.
    #[must_use]
    pub fn mapped_bytes(&self) -> u64 {
        self.regions.values().map(|r| r.len() as u64).sum()
    }

    /// The mapped buffer holding `[addr, addr + len)` and the offset of
    /// `addr` in it.
    fn locate(&self, addr: u64, len: usize) -> Result<(u64, usize), Errno> {
        let (&base, region) = self
            .regions
            .range(..=addr)
            .next_back()
            .ok_or(Errno::EFAULT)?;
        let off = usize::try_from(addr - base).map_err(|_| Errno::EFAULT)?;
        if off.checked_add(len).is_none_or(|end| end > region.len()) {
            return Err(Errno::EFAULT);
        }
        Ok((base, off))
    }

    /// Reads `buf.len()` bytes at `addr`.
    ///
    /// # Errors
    ///
    /// `EFAULT` unless the whole range lies in one mapped buffer.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let (base, off) = self.locate(addr, buf.len())?;
        let region = &self.regions[&base];
        buf.copy_from_slice(&region[off..off + buf.len()]);
        Ok(())
    }

    /// Writes `bytes` at `addr`.
    ///
    /// # Errors
    ///
    /// `EFAULT` unless the whole range lies in one mapped buffer.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let (base, off) = self.locate(addr, bytes.len())?;
        if let Some(region) = self.regions.get_mut(&base) {
            region[off..off + bytes.len()].copy_from_slice(bytes);
        }
        Ok(())
    }

    /// The whole buffer starting at `addr`, if one does.
    #[must_use]
    pub fn buffer(&self, addr: u64) -> Option<&[u8]> {
        self.regions.get(&addr).map(Vec::as_slice)
    }

    /// The whole buffer starting at `addr`, mutable.
    pub fn buffer_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        self.regions.get_mut(&addr).map(Vec::as_mut_slice)
    }
}

impl UserMemory for UserSpace {
    fn copy_from_user(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.read(addr, buf)
    }

    fn copy_to_user(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.write(addr, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_disjoint_and_guarded() {
        let mut u = UserSpace::new();
        let a = u.alloc(10);
        let b = u.alloc(4096);
        assert_eq!(a % USER_PAGE_BYTES, 0);
        assert!(b >= a + 2 * USER_PAGE_BYTES, "guard page between buffers");
        u.write(a, &[1, 2, 3]).unwrap();
        let mut got = [0; 3];
        u.read(a, &mut got).unwrap();
        assert_eq!(got, [1, 2, 3]);
        // Running off the end of a buffer faults.
        assert_eq!(u.write(a + 8, &[0; 3]), Err(Errno::EFAULT));
        assert_eq!(u.read(a - 1, &mut got), Err(Errno::EFAULT));
        assert!(u.free(a));
        assert_eq!(u.read(a, &mut got), Err(Errno::EFAULT));
        assert!(!u.free(a));
    }
}
