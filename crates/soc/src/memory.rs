//! The memories of one device, reached by SoC address (docs/references/design.md §2): every
//! memory region of the map gets a sparse backing store on first use;
//! aliases (the Q7 dataram aperture) share their target's store.

use mem::{Bytes, MemFault, PatternFn, Psum, Sbuf, SparseMemory};
use soc_map::{Hole, RegionId, RegionKind, SocMap};

use crate::fault::BusFault;

mod stale;
pub use stale::StaleRanges;

/// The storage behind one memory region.
#[derive(Clone, Debug)]
enum Backing {
    Linear(SparseMemory),
    Sbuf(Sbuf),
    Psum(Psum),
}

impl Backing {
    fn new(kind: RegionKind, size_bytes: u64) -> Self {
        match kind {
            RegionKind::Sbuf => Backing::Sbuf(Sbuf::new()),
            RegionKind::Psum => Backing::Psum(Psum::new()),
            _ => Backing::Linear(SparseMemory::new(size_bytes)),
        }
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        match self {
            Backing::Linear(m) => m.read(offset, buf),
            Backing::Sbuf(m) => m.read(offset, buf),
            Backing::Psum(m) => m.read(offset, buf),
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemFault> {
        match self {
            Backing::Linear(m) => m.write(offset, data),
            Backing::Sbuf(m) => m.write(offset, data),
            Backing::Psum(m) => m.write(offset, data),
        }
    }

    fn fill(&mut self, offset: u64, len: u64, byte: u8) -> Result<(), MemFault> {
        match self {
            Backing::Linear(m) => m.fill_range(offset, len, byte),
            Backing::Sbuf(m) => {
                let len = usize::try_from(len).map_err(|_| MemFault::OutOfRange {
                    offset,
                    len,
                    size: u64::MAX,
                })?;
                m.fill(offset, len, byte)
            }
            Backing::Psum(m) => {
                let len = usize::try_from(len).map_err(|_| MemFault::OutOfRange {
                    offset,
                    len,
                    size: u64::MAX,
                })?;
                m.fill(offset, len, byte)
            }
        }
    }

    /// The sparse store and the store offset of `[offset, offset + len)`.
    fn linear(&self, offset: u64, len: u64, write: bool) -> Result<(&SparseMemory, u64), MemFault> {
        match self {
            Backing::Linear(m) => {
                m.check_range(offset, len)?;
                Ok((m, offset))
            }
            Backing::Sbuf(m) => {
                let at = m.as_partitioned().resolve(offset, len)?;
                Ok((m.as_partitioned().backing(), at))
            }
            Backing::Psum(m) => {
                let at = if write {
                    let n = usize::try_from(len).map_err(|_| MemFault::OutOfRange {
                        offset,
                        len,
                        size: u64::MAX,
                    })?;
                    m.check_psum_write_linear(offset, n)?
                } else {
                    m.as_partitioned().resolve(offset, len)?
                };
                Ok((m.as_partitioned().backing(), at))
            }
        }
    }

    /// A copy sharing every page with this store (copy on write,
    /// [`SparseMemory::snapshot`]).
    fn snapshot(&mut self) -> Backing {
        self.sparse_mut().share_pages();
        self.clone()
    }

    fn sparse(&self) -> &SparseMemory {
        match self {
            Backing::Linear(m) => m,
            Backing::Sbuf(m) => m.as_partitioned().backing(),
            Backing::Psum(m) => m.as_partitioned().backing(),
        }
    }

    fn sparse_mut(&mut self) -> &mut SparseMemory {
        match self {
            Backing::Linear(m) => m,
            Backing::Sbuf(m) => m.as_partitioned_mut().backing_mut(),
            Backing::Psum(m) => m.as_partitioned_mut().backing_mut(),
        }
    }

    fn allocated_bytes(&self) -> u64 {
        match self {
            Backing::Linear(m) => m.allocated_bytes(),
            Backing::Sbuf(m) => m.as_partitioned().backing().allocated_bytes(),
            Backing::Psum(m) => m.as_partitioned().backing().allocated_bytes(),
        }
    }
}

/// A resolved memory access: which store, at which offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemTarget {
    /// The region the address decoded to.
    pub region: RegionId,
    /// The region whose store holds the bytes (differs for aliases).
    pub storage: RegionId,
    /// Offset from the region base (linear window offset for SBUF/PSUM).
    pub offset: u64,
}

/// A memory region resolved recently, so runs of accesses to the same few
/// regions (a DMA's source, destination and completion ring) skip the map
/// search. For SBUF/PSUM the partition geometry is kept: an access that
/// starts in a partition pad is resolved in full (it faults).
#[derive(Clone, Copy, Debug)]
struct LastRegion {
    base: u64,
    size_bytes: u64,
    region: RegionId,
    storage: RegionId,
    /// (stride, count, populated bytes) of a partitioned memory.
    partitions: Option<(u64, u32, u64)>,
}

impl LastRegion {
    /// The target of `[addr, addr + len)`, if this region resolves it
    /// exactly as [`DeviceMemory::resolve`] would.
    fn hit(&self, addr: u64, len: u64) -> Option<MemTarget> {
        let off = addr.wrapping_sub(self.base);
        if addr < self.base || off >= self.size_bytes || len > self.size_bytes - off {
            return None;
        }
        if let Some((stride, count, populated)) = self.partitions {
            let p = off / stride;
            if p >= u64::from(count) || off % stride >= populated {
                return None;
            }
        }
        Some(MemTarget {
            region: self.region,
            storage: self.storage,
            offset: off,
        })
    }
}

/// Regions [`DeviceMemory`] remembers.
const RECENT_REGIONS: usize = 16;

/// Every memory of the device, created lazily.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    /// Stores by region id (O(1) lookup on the data path).
    stores: Vec<Option<Backing>>,
    /// Recently resolved regions; `last` indexes the latest.
    recent: [std::cell::Cell<Option<LastRegion>>; RECENT_REGIONS],
    last: std::cell::Cell<usize>,
    /// Timing-only mode: DMA copies longer than [`TIMING_ONLY_MIN_SKIP_BYTES`]
    /// are checked (faults stay identical) but move no bytes.
    skip_payload: bool,
    /// Timing-only mode: the bytes skipped copies should have written.
    stale: StaleRanges,
    /// By region id: whether a stale range was ever marked in the region.
    /// A write elsewhere (every ring, completion and semaphore write of a
    /// timing-only run) meets no stale byte and skips the range search.
    stale_in: Vec<bool>,
}

/// In timing-only mode, DMA copies of at most this many bytes still move
/// their bytes: completion markers (the driver's 4-byte 0xABCDEF01),
/// semaphore payloads and other small control writes that software polls.
pub const TIMING_ONLY_MIN_SKIP_BYTES: u64 = 64;

impl DeviceMemory {
    /// A copy of every memory that shares their pages with this one until
    /// either side writes a page (copy on write): no byte is copied now
    /// (the debugger's checkpoints, docs/user-guide.md §12 "Going back").
    pub fn snapshot(&mut self) -> DeviceMemory {
        DeviceMemory {
            stores: self
                .stores
                .iter_mut()
                .map(|s| s.as_mut().map(Backing::snapshot))
                .collect(),
            recent: self.recent.clone(),
            last: self.last.clone(),
            skip_payload: self.skip_payload,
            stale: self.stale.clone(),
            stale_in: self.stale_in.clone(),
        }
    }

    /// The identity of every allocated page of every store
    /// ([`SparseMemory::page_ids`]): pages two memories share have the same.
    pub fn page_ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.stores
            .iter()
            .flatten()
            .flat_map(|s| s.sparse().page_ids())
    }

    /// Resolves `[addr, addr + len)` to one memory region, or the fault a
    /// bus master would see.
    pub fn resolve(map: &SocMap, addr: u64, len: u64) -> Result<MemTarget, BusFault> {
        let d = map.decode(addr);
        let Some(region) = d.region else {
            return Err(BusFault::Unmapped { addr });
        };
        let r = map.region(region);
        if let Some(hole) = d.hole {
            // Partition pads are the memory's own faults; report them as
            // holes of that region.
            return Err(BusFault::Hole {
                addr,
                region: r.name.clone(),
                hole,
            });
        }
        match r.kind {
            RegionKind::Memory | RegionKind::Host | RegionKind::Sbuf | RegionKind::Psum => {}
            RegionKind::Csr | RegionKind::Container => {
                return Err(BusFault::NotMemory {
                    addr,
                    region: r.name.clone(),
                });
            }
            RegionKind::Reserved => {
                return Err(BusFault::Hole {
                    addr,
                    region: r.name.clone(),
                    hole: Hole::Reserved,
                });
            }
        }
        let offset = addr - r.base;
        let end = offset.checked_add(len);
        if end.is_none_or(|e| e > r.size_bytes) {
            return Err(BusFault::CrossesBoundary {
                addr,
                len,
                region: r.name.clone(),
                boundary: r.end(),
            });
        }
        Ok(MemTarget {
            region,
            storage: r.alias_of.unwrap_or(region),
            offset,
        })
    }

    /// [`DeviceMemory::resolve`] with a cache of the last few regions: a
    /// hit skips the map search.
    fn target(&self, map: &SocMap, addr: u64, len: u64) -> Result<MemTarget, BusFault> {
        let last = self.last.get();
        for k in 0..RECENT_REGIONS {
            let i = (last + k) % RECENT_REGIONS;
            if let Some(t) = self.recent[i].get().and_then(|l| l.hit(addr, len)) {
                self.last.set(i);
                return Ok(t);
            }
        }
        let t = Self::resolve(map, addr, len)?;
        let r = map.region(t.region);
        if !r.children.is_empty() {
            return Ok(t);
        }
        let partitions = match r.kind {
            RegionKind::Memory | RegionKind::Host => None,
            RegionKind::Sbuf | RegionKind::Psum => match r.partitions {
                Some(p) if p.stride_bytes > 0 => Some((p.stride_bytes, p.count, p.populated_bytes)),
                _ => return Ok(t),
            },
            _ => return Ok(t),
        };
        let i = (last + 1) % RECENT_REGIONS;
        self.recent[i].set(Some(LastRegion {
            base: r.base,
            size_bytes: r.size_bytes,
            region: t.region,
            storage: t.storage,
            partitions,
        }));
        self.last.set(i);
        Ok(t)
    }

    fn store_mut(&mut self, map: &SocMap, storage: RegionId) -> &mut Backing {
        if self.stores.len() <= storage {
            // Once, for every region of the map (growing it region by
            // region reallocated and copied the table).
            let len = map.regions.len().max(storage + 1);
            self.stores.resize_with(len, || None);
        }
        self.stores[storage].get_or_insert_with(|| {
            let r = map.region(storage);
            Backing::new(r.kind, r.size_bytes)
        })
    }

    fn fault(map: &SocMap, t: MemTarget, addr: u64, fault: MemFault) -> BusFault {
        BusFault::Memory {
            addr,
            region: map.name(t.region).to_string(),
            fault,
        }
    }

    /// Brings `len` bytes at `addr` of a plain memory into the host's
    /// caches ([`SparseMemory::touch`]). Only within the region of the last
    /// plain-memory access (the ring just read): no map search, no fault
    /// built, nothing allocated; anything else is left alone.
    pub fn touch(&self, addr: u64, len: u64) {
        let Some(l) = self.recent[self.last.get() % RECENT_REGIONS].get() else {
            return;
        };
        if l.partitions.is_some() {
            return;
        }
        let off = addr.wrapping_sub(l.base);
        if addr >= l.base
            && off < l.size_bytes
            && len <= l.size_bytes - off
            && let Some(Some(Backing::Linear(m))) = self.stores.get(l.storage)
        {
            m.touch(off, len);
        }
    }

    /// Reads `buf.len()` bytes at `addr`.
    pub fn read(&self, map: &SocMap, addr: u64, buf: &mut [u8]) -> Result<(), BusFault> {
        let t = self.target(map, addr, buf.len() as u64)?;
        match self.stores.get(t.storage).and_then(Option::as_ref) {
            Some(store) => store
                .read(t.offset, buf)
                .map_err(|f| Self::fault(map, t, addr, f)),
            None => {
                // Never written: zeros, but the geometry rules still apply.
                let probe =
                    Backing::new(map.region(t.storage).kind, map.region(t.storage).size_bytes);
                probe
                    .read(t.offset, buf)
                    .map_err(|f| Self::fault(map, t, addr, f))
            }
        }
    }

    /// Whether `[addr, addr + len)` lies in one plain (unpartitioned)
    /// memory region, where a write cannot fault.
    pub fn is_plain(&self, map: &SocMap, addr: u64, len: u64) -> bool {
        self.target(map, addr, len).is_ok_and(|t| {
            matches!(
                map.region(t.storage).kind,
                RegionKind::Memory | RegionKind::Host
            )
        })
    }

    /// Marks `[addr, addr + len)` of region `t.region` stale.
    fn mark_stale(&mut self, t: MemTarget, addr: u64, len: u64) {
        if self.stale_in.len() <= t.region {
            self.stale_in.resize(t.region + 1, false);
        }
        self.stale_in[t.region] = true;
        self.stale.mark(addr, len);
    }

    /// `[addr, addr + len)` of region `t.region` was written: no longer
    /// stale. A range lies in one region, so a region never marked has
    /// nothing to clear.
    fn clear_stale(&mut self, t: MemTarget, addr: u64, len: u64) {
        if self.stale_in.get(t.region).copied().unwrap_or(false) {
            self.stale.clear(addr, len);
        }
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, map: &SocMap, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        let t = self.target(map, addr, data.len() as u64)?;
        self.store_mut(map, t.storage)
            .write(t.offset, data)
            .map_err(|f| Self::fault(map, t, addr, f))?;
        self.clear_stale(t, addr, data.len() as u64);
        Ok(())
    }

    /// Sets `len` bytes at `addr` to `byte`.
    pub fn fill(&mut self, map: &SocMap, addr: u64, len: u64, byte: u8) -> Result<(), BusFault> {
        let t = self.target(map, addr, len)?;
        self.store_mut(map, t.storage)
            .fill(t.offset, len, byte)
            .map_err(|f| Self::fault(map, t, addr, f))?;
        self.clear_stale(t, addr, len);
        Ok(())
    }

    /// Writes `len` bytes of a pattern at `addr`, where `pattern(k, buf)`
    /// gives the bytes from `k` bytes past `addr`: in a plain (linear)
    /// memory each whole page holds the pattern until something needs its
    /// bytes ([`SparseMemory::fill_pattern`]). Returns `Ok(false)`, having
    /// changed nothing, where the memory is partitioned (SBUF, PSUM): the
    /// caller writes the bytes itself.
    pub fn fill_pattern(
        &mut self,
        map: &SocMap,
        addr: u64,
        len: u64,
        pattern: &PatternFn,
    ) -> Result<bool, BusFault> {
        let t = self.target(map, addr, len)?;
        let Backing::Linear(store) = self.store_mut(map, t.storage) else {
            return Ok(false);
        };
        let base = t.offset;
        let inner = std::sync::Arc::clone(pattern);
        let at_offset: PatternFn =
            std::sync::Arc::new(move |offset: u64, buf: &mut [u8]| inner(offset - base, buf));
        store
            .fill_pattern(t.offset, len, &at_offset)
            .map_err(|f| Self::fault(map, t, addr, f))?;
        self.clear_stale(t, addr, len);
        Ok(true)
    }

    /// Copies `len` bytes from `src` to `dst` page to page, without a bounce
    /// buffer (the DMA data path). On failure returns the fault and the
    /// address it concerns (source or destination).
    pub fn copy(
        &mut self,
        map: &SocMap,
        src: u64,
        dst: u64,
        len: u64,
    ) -> Result<(), (BusFault, u64)> {
        let s = self.target(map, src, len).map_err(|e| (e, src))?;
        let d = self.target(map, dst, len).map_err(|e| (e, dst))?;
        if self.skip_payload && len > TIMING_ONLY_MIN_SKIP_BYTES {
            // Timing-only: checked, not moved (docs/references/design.md §4). Plain stores
            // (not SBUF/PSUM) have no pads or write rules: the range check
            // of `target` is the whole check.
            let flat = |t: MemTarget| {
                matches!(
                    map.region(t.storage).kind,
                    RegionKind::Memory | RegionKind::Host
                )
            };
            if flat(s) && flat(d) {
                self.mark_stale(d, dst, len);
                return Ok(());
            }
        }
        let d_off = self
            .store_offset(map, d, len, true)
            .map_err(|f| (Self::fault(map, d, dst, f), dst))?;
        let s_off = self
            .store_offset(map, s, len, false)
            .map_err(|f| (Self::fault(map, s, src, f), src))?;
        if self.skip_payload && len > TIMING_ONLY_MIN_SKIP_BYTES {
            // Timing-only: checked, not moved (docs/references/design.md §4).
            self.mark_stale(d, dst, len);
            return Ok(());
        }
        if !self.stale.is_empty() {
            // A small copy moves its bytes: stale ones stay stale.
            if self.stale.first_in(src, len).is_some() {
                self.mark_stale(d, dst, len);
            } else {
                self.clear_stale(d, dst, len);
            }
        }
        if s.storage == d.storage {
            let store = self.store_mut(map, s.storage);
            return store
                .sparse_mut()
                .copy(s_off, d_off, len)
                .map_err(|f| (Self::fault(map, d, dst, f), dst));
        }
        let Some(src_store) = self.stores.get_mut(s.storage).and_then(Option::take) else {
            // Never written: the source reads as zeros.
            return self
                .store_mut(map, d.storage)
                .sparse_mut()
                .fill_range(d_off, len, 0)
                .map_err(|f| (Self::fault(map, d, dst, f), dst));
        };
        let result = {
            let (src_mem, _) = match src_store.linear(s.offset, len, false) {
                Ok(x) => x,
                Err(f) => {
                    self.stores[s.storage] = Some(src_store);
                    return Err((Self::fault(map, s, src, f), src));
                }
            };
            let dst_store = self.store_mut(map, d.storage).sparse_mut();
            SparseMemory::copy_between(src_mem, s_off, dst_store, d_off, len)
        };
        self.stores[s.storage] = Some(src_store);
        result.map_err(|f| (Self::fault(map, d, dst, f), dst))
    }

    /// The offset inside the target's sparse store (checks partition pads
    /// and PSUM write rules without creating a store).
    fn store_offset(
        &self,
        map: &SocMap,
        t: MemTarget,
        len: u64,
        write: bool,
    ) -> Result<u64, MemFault> {
        match self.stores.get(t.storage).and_then(Option::as_ref) {
            Some(store) => store.linear(t.offset, len, write).map(|(_, at)| at),
            None => {
                let r = map.region(t.storage);
                Backing::new(r.kind, r.size_bytes)
                    .linear(t.offset, len, write)
                    .map(|(_, at)| at)
            }
        }
    }

    /// Timing-only mode on or off (docs/references/design.md §4): bulk DMA copies skip their
    /// payload; every check, cycle and register stays as in data mode.
    pub fn set_skip_payload(&mut self, on: bool) {
        self.skip_payload = on;
    }

    /// Whether timing-only mode is on.
    pub fn skip_payload(&self) -> bool {
        self.skip_payload
    }

    /// The bytes timing-only copies left unwritten (empty in data mode).
    pub fn stale(&self) -> &StaleRanges {
        &self.stale
    }

    /// A digest (FNV-1a, 64 bits) of every byte of every store: equal
    /// digests mean equal memories, all-zero pages counting as untouched
    /// (a debugger's replays are checked with it).
    pub fn digest(&self) -> u64 {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
            }
        };
        for (i, store) in self.stores.iter().enumerate() {
            let Some(store) = store else { continue };
            let sparse = match store {
                Backing::Linear(m) => m,
                Backing::Sbuf(m) => m.as_partitioned().backing(),
                Backing::Psum(m) => m.as_partitioned().backing(),
            };
            for (offset, page) in sparse.pages() {
                if page.iter().all(|b| *b == 0) {
                    continue;
                }
                eat(&(i as u64).to_le_bytes());
                eat(&offset.to_le_bytes());
                eat(page);
            }
        }
        h
    }

    /// Host bytes allocated by all stores (sparse pages).
    pub fn allocated_bytes(&self) -> u64 {
        self.stores
            .iter()
            .flatten()
            .map(Backing::allocated_bytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// `touch` is a host-side hint: whatever the address (in the last
    /// region, beyond it, unmapped, at the top of the address space), it
    /// changes no byte, allocates no page and reports nothing.
    #[test]
    fn touch_has_no_simulated_effect() {
        let map = soc_map::trn2().unwrap();
        let mut mem = DeviceMemory::default();
        mem.touch(0x1000, 64); // before any access: no region cached
        mem.write(&map, 0x1000, &[1, 2, 3]).unwrap();
        let mut buf = [0u8; 3];
        mem.read(&map, 0x1000, &mut buf).unwrap();
        let pages = mem.allocated_bytes();
        for (addr, len) in [
            (0x1000, 256),
            (0x3_0000, 1 << 20),
            (0, u64::MAX),
            (u64::MAX - 10, 100),
            (0x7fff_ffff_0000, 4096),
        ] {
            mem.touch(addr, len);
        }
        assert_eq!(mem.allocated_bytes(), pages);
        let mut after = [0u8; 5];
        mem.read(&map, 0xfff, &mut after).unwrap();
        assert_eq!(after, [0, 1, 2, 3, 0]);
    }
}
