//! A simulated process address space: the user buffers a host program
//! hands to ioctls (tdrv-dmem's `buffer` arguments, out-pointers).

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use ioctl_abi::Errno;

use crate::UserMemory;

/// Where the first user allocation lands (a typical x86-64 mmap area).
pub const USER_BASE: u64 = 0x7f00_0000_0000;
/// Allocations are page aligned and separated by one unmapped guard page,
/// so an access that runs off a buffer faults instead of reaching the next.
pub const USER_PAGE_BYTES: u64 = 4096;

/// The bytes of a read-only user buffer, computed when they are read
/// (`docs/host-runtime.md` §2): a copy source as large as a tensor need not
/// be held in host memory.
pub trait UserSource: Send {
    /// Fills `buf` with the bytes at `offset` (the range lies inside the
    /// buffer).
    ///
    /// # Errors
    ///
    /// An errno the access fails with (e.g. `EIO` when a backing file
    /// cannot be read).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno>;
}

/// A write-only user buffer that consumes bytes as they are written
/// (checks, hashes, forwards them), so a copy destination as large as a
/// tensor need not be held in host memory (`docs/host-runtime.md` §2).
pub trait UserSink: Send {
    /// Takes `bytes` written at `offset` (the range lies inside the buffer).
    ///
    /// # Errors
    ///
    /// An errno the access fails with.
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno>;

    /// The sink as `Any`, for its owner to take its result back with a
    /// downcast ([`UserSpace::take_sink`]).
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// What backs a mapped buffer.
enum Backing {
    /// Ordinary memory, shared with copies of the address space until
    /// either side writes it ([`UserSpace::try_clone`]).
    Bytes(Arc<Vec<u8>>),
    /// Read-only, computed on read; writes fault.
    Source(Box<dyn UserSource>),
    /// Write-only, consumed on write; reads fault.
    Sink(Box<dyn UserSink>),
}

struct Region {
    len: u64,
    backing: Backing,
}

/// The host process's memory: disjoint mapped buffers, everything else
/// unmapped (`EFAULT`). A buffer is ordinary bytes, a read-only
/// [`UserSource`] or a write-only [`UserSink`]; the driver and the runtime
/// reach all three through the same [`UserSpace::read`] / [`UserSpace::write`].
#[derive(Default)]
pub struct UserSpace {
    regions: BTreeMap<u64, Region>,
    next: u64,
}

impl std::fmt::Debug for UserSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSpace")
            .field("buffers", &self.regions.len())
            .field("mapped_bytes", &self.mapped_bytes())
            .finish_non_exhaustive()
    }
}

impl UserSpace {
    /// A copy of the address space whose buffers share their bytes with
    /// this one until either side writes them (the debugger's checkpoints,
    /// docs/user-guide.md §12 "Going back");
    /// `None` while a [`UserSource`] or [`UserSink`] is mapped (they are
    /// computed or consumed, not held).
    #[must_use]
    pub fn try_clone(&self) -> Option<UserSpace> {
        let mut regions = BTreeMap::new();
        for (at, r) in &self.regions {
            let Backing::Bytes(bytes) = &r.backing else {
                return None;
            };
            regions.insert(
                *at,
                Region {
                    len: r.len,
                    backing: Backing::Bytes(Arc::clone(bytes)),
                },
            );
        }
        Some(UserSpace {
            regions,
            next: self.next,
        })
    }

    /// An empty address space.
    #[must_use]
    pub fn new() -> Self {
        Self {
            regions: BTreeMap::new(),
            next: USER_BASE,
        }
    }

    /// Reserves the address range of a buffer of `len` bytes (at least one
    /// byte is mapped) and maps `backing` there.
    fn map(&mut self, len: u64, backing: Backing) -> u64 {
        let addr = self.next.max(USER_BASE);
        let len = len.max(1);
        let pages = len.div_ceil(USER_PAGE_BYTES) + 1; // + guard page
        self.next = addr.saturating_add(pages.saturating_mul(USER_PAGE_BYTES));
        self.regions.insert(addr, Region { len, backing });
        addr
    }

    /// Maps a zeroed buffer of `len_bytes` (at least one byte is mapped) and
    /// returns its address, page aligned.
    ///
    /// # Panics
    ///
    /// When host memory for the buffer cannot be allocated (as `vec!`);
    /// [`UserSpace::try_alloc`] reports that as `ENOMEM` instead.
    pub fn alloc(&mut self, len_bytes: usize) -> u64 {
        let len = len_bytes.max(1);
        self.map(len as u64, Backing::Bytes(Arc::new(vec![0; len])))
    }

    /// As [`UserSpace::alloc`], but a buffer that cannot be allocated is
    /// `ENOMEM`, not an abort.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the host has no memory for it.
    pub fn try_alloc(&mut self, len_bytes: u64) -> Result<u64, Errno> {
        let len = usize::try_from(len_bytes.max(1)).map_err(|_| Errno::ENOMEM)?;
        let mut v = Vec::new();
        v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        v.resize(len, 0);
        Ok(self.map(len as u64, Backing::Bytes(Arc::new(v))))
    }

    /// Maps a buffer holding `bytes` and returns its address.
    pub fn alloc_with(&mut self, bytes: &[u8]) -> u64 {
        let len = bytes.len().max(1);
        let mut v = vec![0; len];
        v[..bytes.len()].copy_from_slice(bytes);
        self.map(len as u64, Backing::Bytes(Arc::new(v)))
    }

    /// Maps a read-only buffer of `len_bytes` whose bytes `source` computes
    /// when they are read; a write to it faults (`EFAULT`). Holds no host
    /// memory for its contents.
    pub fn alloc_source(&mut self, len_bytes: u64, source: Box<dyn UserSource>) -> u64 {
        self.map(len_bytes, Backing::Source(source))
    }

    /// Maps a write-only buffer of `len_bytes` that hands every write to
    /// `sink`; a read of it faults (`EFAULT`). Holds no host memory for its
    /// contents. Take the sink back with [`UserSpace::take_sink`].
    pub fn alloc_sink(&mut self, len_bytes: u64, sink: Box<dyn UserSink>) -> u64 {
        self.map(len_bytes, Backing::Sink(sink))
    }

    /// Unmaps the buffer that starts at `addr`; false if none does.
    pub fn free(&mut self, addr: u64) -> bool {
        self.regions.remove(&addr).is_some()
    }

    /// Unmaps the sink buffer that starts at `addr` and returns its sink;
    /// `None` (and nothing unmapped) when no sink starts there.
    pub fn take_sink(&mut self, addr: u64) -> Option<Box<dyn UserSink>> {
        if !matches!(
            self.regions.get(&addr).map(|r| &r.backing),
            Some(Backing::Sink(_))
        ) {
            return None;
        }
        match self.regions.remove(&addr)?.backing {
            Backing::Sink(s) => Some(s),
            _ => None,
        }
    }

    /// Unmaps the ordinary buffer that starts at `addr` and returns its
    /// bytes (a copy-out destination handed back without another copy);
    /// `None` (and nothing unmapped) when no such buffer starts there.
    pub fn take_bytes(&mut self, addr: u64) -> Option<Vec<u8>> {
        if !matches!(
            self.regions.get(&addr).map(|r| &r.backing),
            Some(Backing::Bytes(_))
        ) {
            return None;
        }
        match self.regions.remove(&addr)?.backing {
            Backing::Bytes(v) => Some(Arc::unwrap_or_clone(v)),
            _ => None,
        }
    }

    /// Bytes mapped in all buffers (sources and sinks count their length,
    /// though they hold none of it).
    #[must_use]
    pub fn mapped_bytes(&self) -> u64 {
        self.regions.values().map(|r| r.len).sum()
    }

    /// The mapped buffer holding `[addr, addr + len)` and the offset of
    /// `addr` in it.
    fn locate(&self, addr: u64, len: usize) -> Result<(u64, u64), Errno> {
        let (&base, region) = self
            .regions
            .range(..=addr)
            .next_back()
            .ok_or(Errno::EFAULT)?;
        let off = addr - base;
        let len = u64::try_from(len).map_err(|_| Errno::EFAULT)?;
        if off.checked_add(len).is_none_or(|end| end > region.len) {
            return Err(Errno::EFAULT);
        }
        Ok((base, off))
    }

    /// Reads `buf.len()` bytes at `addr`.
    ///
    /// # Errors
    ///
    /// `EFAULT` unless the whole range lies in one mapped buffer that can
    /// be read (not a sink); a source's own error.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let (base, off) = self.locate(addr, buf.len())?;
        let region = self.regions.get(&base).ok_or(Errno::EFAULT)?;
        match &region.backing {
            Backing::Bytes(v) => {
                let at = usize::try_from(off).map_err(|_| Errno::EFAULT)?;
                buf.copy_from_slice(&v[at..at + buf.len()]);
                Ok(())
            }
            Backing::Source(s) => s.read_at(off, buf),
            Backing::Sink(_) => Err(Errno::EFAULT),
        }
    }

    /// Writes `bytes` at `addr`.
    ///
    /// # Errors
    ///
    /// `EFAULT` unless the whole range lies in one mapped buffer that can
    /// be written (not a source); a sink's own error.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let (base, off) = self.locate(addr, bytes.len())?;
        let region = self.regions.get_mut(&base).ok_or(Errno::EFAULT)?;
        match &mut region.backing {
            Backing::Bytes(v) => {
                let at = usize::try_from(off).map_err(|_| Errno::EFAULT)?;
                Arc::make_mut(v)[at..at + bytes.len()].copy_from_slice(bytes);
                Ok(())
            }
            Backing::Sink(s) => s.write_at(off, bytes),
            Backing::Source(_) => Err(Errno::EFAULT),
        }
    }

    /// The whole buffer starting at `addr`, if an ordinary one does.
    #[must_use]
    pub fn buffer(&self, addr: u64) -> Option<&[u8]> {
        match &self.regions.get(&addr)?.backing {
            Backing::Bytes(v) => Some(v.as_slice()),
            _ => None,
        }
    }

    /// The whole buffer starting at `addr`, mutable.
    pub fn buffer_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        match &mut self.regions.get_mut(&addr)?.backing {
            Backing::Bytes(v) => Some(Arc::make_mut(v).as_mut_slice()),
            _ => None,
        }
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
    fn take_bytes_returns_an_ordinary_buffer_only() {
        let mut u = UserSpace::new();
        let a = u.alloc_with(&[1, 2, 3]);
        u.write(a + 1, &[9]).unwrap();
        let s = u.alloc_sink(4, Box::new(Nothing));
        assert!(u.take_bytes(s).is_none(), "a sink is not bytes");
        assert!(u.take_bytes(a + 1).is_none(), "not the buffer's start");
        assert_eq!(u.take_bytes(a), Some(vec![1, 9, 3]));
        assert!(u.take_bytes(a).is_none(), "unmapped by the first take");
        assert_eq!(u.read(a, &mut [0]), Err(Errno::EFAULT));
    }

    struct Nothing;
    impl UserSink for Nothing {
        fn write_at(&mut self, _: u64, _: &[u8]) -> Result<(), Errno> {
            Ok(())
        }
        fn into_any(self: Box<Self>) -> Box<dyn Any> {
            self
        }
    }

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

    /// Bytes `i` of the stream are `i mod 251`.
    struct Ramp;
    impl UserSource for Ramp {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = ((offset + i as u64) % 251) as u8;
            }
            Ok(())
        }
    }

    /// Records every write.
    #[derive(Default)]
    struct Log(Vec<(u64, Vec<u8>)>);
    impl UserSink for Log {
        fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
            self.0.push((offset, bytes.to_vec()));
            Ok(())
        }
        fn into_any(self: Box<Self>) -> Box<dyn Any> {
            self
        }
    }

    #[test]
    fn sources_compute_on_read_and_refuse_writes() {
        let mut u = UserSpace::new();
        let len = 1u64 << 40; // a terabyte: nothing is held
        let a = u.alloc_source(len, Box::new(Ramp));
        let b = u.alloc(10);
        assert!(b > a + len, "the next buffer is placed after it");
        let mut got = [0u8; 4];
        u.read(a + 500, &mut got).unwrap();
        assert_eq!(got, [249, 250, 0, 1]);
        u.read(a + len - 4, &mut got).unwrap();
        assert_eq!(u.read(a + len - 3, &mut got), Err(Errno::EFAULT));
        assert_eq!(u.write(a, &[1]), Err(Errno::EFAULT), "read-only");
        assert_eq!(u.buffer(a), None);
        assert_eq!(u.mapped_bytes(), len + 10);
        assert!(u.take_sink(a).is_none(), "not a sink: stays mapped");
        u.read(a, &mut got).unwrap();
    }

    #[test]
    fn sinks_consume_writes_and_refuse_reads() {
        let mut u = UserSpace::new();
        let a = u.alloc_sink(8, Box::new(Log::default()));
        u.write(a + 2, &[7, 8]).unwrap();
        u.write(a, &[5]).unwrap();
        assert_eq!(u.write(a + 7, &[0, 0]), Err(Errno::EFAULT));
        let mut got = [0u8; 1];
        assert_eq!(u.read(a, &mut got), Err(Errno::EFAULT), "write-only");
        let log = u
            .take_sink(a)
            .unwrap()
            .into_any()
            .downcast::<Log>()
            .unwrap();
        assert_eq!(log.0, [(2, vec![7, 8]), (0, vec![5])]);
        assert_eq!(u.write(a, &[1]), Err(Errno::EFAULT), "unmapped");
    }

    #[test]
    fn try_alloc_reports_what_cannot_be_allocated() {
        let mut u = UserSpace::new();
        assert_eq!(u.try_alloc(u64::MAX), Err(Errno::ENOMEM));
        let a = u.try_alloc(3).unwrap();
        assert_eq!(u.buffer(a), Some(&[0u8, 0, 0][..]));
    }
}
