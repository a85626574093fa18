//! The memories of one device, reached by SoC address (docs/references/design.md §2): every
//! memory region of the map gets a sparse backing store on first use;
//! aliases (the Q7 dataram aperture) share their target's store.

use mem::{Bytes, MemFault, PartitionGeometry, PatternFn, Psum, Sbuf, SparseMemory};
use soc_map::{Hole, RegionId, RegionKind, SocMap};

use crate::fault::BusFault;

mod stale;
pub use stale::StaleRanges;

/// The shape of every SBUF store ([`Sbuf::new`]).
const SBUF_GEOMETRY: PartitionGeometry = PartitionGeometry::SBUF;

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
    /// The storage region's base address: `storage_base + offset` names
    /// the bytes whichever window (an alias) reached them.
    pub storage_base: u64,
}

impl MemTarget {
    /// The address of the bytes in their storage region's own window:
    /// what timing-only mode keeps its stale ranges by, so that an alias
    /// of the same memory sees them ([`DeviceMemory::stale_byte_in`]).
    pub const fn storage_addr(self) -> u64 {
        self.storage_base + self.offset
    }
}

/// A memory region resolved recently, so runs of accesses to the same few
/// regions (a DMA's source, destination and completion ring) skip the map
/// search. For SBUF/PSUM the partition geometry is kept: an access that
/// starts in a partition pad is resolved in full (it faults). An empty
/// entry has `size_bytes` 0 and resolves nothing.
#[derive(Clone, Copy, Debug, Default)]
struct LastRegion {
    base: u64,
    size_bytes: u64,
    region: RegionId,
    storage: RegionId,
    storage_base: u64,
    /// A partitioned memory's geometry, its stride a power of two.
    partitions: Option<PartitionShape>,
}

/// Whether a timing-only copy's end passes the store checks of the full
/// path ([`DeviceMemory::store_offset`], read or write alike) without
/// creating or reading a store: for a plain memory or an SBUF (the shape
/// of [`Backing::new`]'s store), decided from the storage region when the
/// region is remembered, so that the copy makes no region table look-up
/// (docs/references/design.md §4).
#[derive(Clone, Copy, Debug, Default)]
enum SkipCheck {
    /// Not skippable (PSUM's write rules, anything not a memory): the full
    /// path.
    #[default]
    Never,
    /// A plain memory of this many bytes: the range check.
    Plain(u64),
    /// An SBUF: the shape of its store ([`SBUF_GEOMETRY`]).
    Sbuf,
}

impl SkipCheck {
    /// The check of a storage region (`kind`, `size_bytes`).
    fn of(kind: RegionKind, size_bytes: u64) -> Self {
        match kind {
            RegionKind::Memory | RegionKind::Host => SkipCheck::Plain(size_bytes),
            RegionKind::Sbuf => SkipCheck::Sbuf,
            _ => SkipCheck::Never,
        }
    }

    /// Whether `len` bytes at store offset `offset` pass.
    #[inline]
    fn passes(self, offset: u64, len: u64) -> bool {
        match self {
            SkipCheck::Plain(size) => offset.checked_add(len).is_some_and(|end| end <= size),
            SkipCheck::Sbuf => SBUF_GEOMETRY.resolve(offset, len).is_ok(),
            SkipCheck::Never => false,
        }
    }
}

/// The partition geometry [`LastRegion::hit`] checks.
#[derive(Clone, Copy, Debug)]
struct PartitionShape {
    /// log2 of the partition stride in bytes.
    stride_shift: u32,
    count: u32,
    populated_bytes: u64,
}

impl LastRegion {
    /// The target of `[addr, addr + len)`, if this region resolves it
    /// exactly as [`DeviceMemory::resolve`] would.
    #[inline]
    fn hit(&self, addr: u64, len: u64) -> Option<MemTarget> {
        let off = addr.wrapping_sub(self.base);
        if addr < self.base || off >= self.size_bytes || len > self.size_bytes - off {
            return None;
        }
        if let Some(p) = self.partitions {
            let stride_mask = (1u64 << p.stride_shift) - 1;
            if off >> p.stride_shift >= u64::from(p.count) || off & stride_mask >= p.populated_bytes
            {
                return None;
            }
        }
        Some(MemTarget {
            region: self.region,
            storage: self.storage,
            offset: off,
            storage_base: self.storage_base,
        })
    }
}

/// Regions [`DeviceMemory`] remembers (a power of two, at most 256): the
/// HBM stacks, SBUFs and DGE memories of a chip-wide run.
const RECENT_REGIONS: usize = 64;

/// Entries of the granule index of [`RegionCache`] (a power of two): room
/// for the granules a chip-wide run streams through at once (every SBUF
/// partition row of eight cores) with few collisions.
const GRANULE_SLOTS: usize = 4096;

/// Address bits below a granule: 2 MiB, so that an HBM stream moves to a
/// new granule every 2 MiB and a region's accesses share few slots.
const GRANULE_SHIFT: u32 = 21;

/// The leaf memory regions resolved recently ([`DeviceMemory::target`]):
/// a direct-mapped index by 2 MiB address granule names the region last
/// found there (one look, whatever the number of regions a run uses);
/// behind it, the last [`RECENT_REGIONS`] regions are searched before the
/// map. Every entry is checked against the access before it is used, so a
/// stale or colliding index entry only costs a search.
#[derive(Clone, Debug)]
struct RegionCache {
    /// Resolved regions, replaced round robin.
    regions: Box<[std::cell::Cell<LastRegion>; RECENT_REGIONS]>,
    /// By entry of `regions`: its storage's timing-only copy check (apart,
    /// so that every other access copies no more of an entry).
    skips: Box<[std::cell::Cell<SkipCheck>; RECENT_REGIONS]>,
    /// The entry of `regions` to replace next.
    next: std::cell::Cell<usize>,
    /// By granule hash: an entry of `regions`.
    by_granule: Box<[std::cell::Cell<u8>; GRANULE_SLOTS]>,
}

impl Default for RegionCache {
    fn default() -> Self {
        RegionCache {
            regions: Box::new(std::array::from_fn(|_| Default::default())),
            skips: Box::new(std::array::from_fn(|_| Default::default())),
            next: std::cell::Cell::new(0),
            by_granule: Box::new(std::array::from_fn(|_| std::cell::Cell::new(0))),
        }
    }
}

impl RegionCache {
    /// The granule index slot of `addr`.
    #[inline]
    fn granule_slot(&self, addr: u64) -> &std::cell::Cell<u8> {
        let h = (addr >> GRANULE_SHIFT).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
        &self.by_granule[h as usize % GRANULE_SLOTS]
    }

    /// The cached target of `[addr, addr + len)`, if a remembered region
    /// resolves it.
    #[inline]
    fn find(&self, addr: u64, len: u64) -> Option<MemTarget> {
        self.find_entry(addr, len).map(|(t, _)| t)
    }

    /// [`RegionCache::find`] with the region's timing-only copy check.
    #[inline]
    fn find_checked(&self, addr: u64, len: u64) -> Option<(MemTarget, SkipCheck)> {
        self.find_entry(addr, len)
            .map(|(t, i)| (t, self.skips[i % RECENT_REGIONS].get()))
    }

    /// [`RegionCache::find`] and the entry of `regions` that resolved it.
    #[inline]
    fn find_entry(&self, addr: u64, len: u64) -> Option<(MemTarget, usize)> {
        let slot = self.granule_slot(addr);
        let i = usize::from(slot.get()) % RECENT_REGIONS;
        if let Some(t) = self.regions[i].get().hit(addr, len) {
            return Some((t, i));
        }
        self.search(slot, addr, len)
    }

    /// [`RegionCache::find`] past the granule index: every remembered
    /// region, the most recently added first.
    #[cold]
    #[inline(never)]
    fn search(
        &self,
        slot: &std::cell::Cell<u8>,
        addr: u64,
        len: u64,
    ) -> Option<(MemTarget, usize)> {
        let next = self.next.get();
        for k in 1..=RECENT_REGIONS {
            let i = (next + RECENT_REGIONS - k) % RECENT_REGIONS;
            if let Some(t) = self.regions[i].get().hit(addr, len) {
                slot.set(i as u8);
                return Some((t, i));
            }
        }
        None
    }

    /// Remembers `region`, found for an access at `addr`, and its storage's
    /// timing-only copy check.
    fn insert(&self, addr: u64, region: LastRegion, skip: SkipCheck) {
        let i = self.next.get() % RECENT_REGIONS;
        self.regions[i].set(region);
        self.skips[i].set(skip);
        self.next.set((i + 1) % RECENT_REGIONS);
        self.granule_slot(addr).set(i as u8);
    }
}

/// Every memory of the device, created lazily.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    /// Stores by region id (O(1) lookup on the data path), boxed: the table
    /// has an entry per region of the map (about 6,000), nearly all empty,
    /// and an empty entry is a null pointer (8 bytes, not an inline
    /// `Backing`), so the table is one small zeroed allocation
    /// (docs/user-guide.md §14, process start-up).
    stores: Vec<Option<Box<Backing>>>,
    /// Recently resolved regions.
    recent: RegionCache,
    /// Timing-only mode: DMA copies longer than [`TIMING_ONLY_MIN_SKIP_BYTES`]
    /// are checked (faults stay identical) but move no bytes.
    skip_payload: bool,
    /// Timing-only mode: the bytes skipped copies should have written.
    stale: StaleRanges,
    /// By region id: whether a stale range was ever marked in the region.
    /// A write elsewhere (every ring, completion and semaphore write of a
    /// timing-only run) meets no stale byte and skips the range search.
    stale_in: Vec<bool>,
    /// Timing-only mode: the first read of stale bytes as control data (a
    /// descriptor, an index vector): from then on the run may differ from
    /// the payload run.
    stale_control: Option<StaleControl>,
}

/// Timing-only mode: a read of bytes no copy moved whose value steers the
/// device (a descriptor an engine prefetched, an index vector or mailbox the
/// firmware read), so what follows may differ from the run with payload
/// (docs/user-guide.md §11, "Timing-only mode").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct StaleControl {
    /// Cycle of the first such read.
    pub cycle: u64,
    /// Its first stale byte.
    pub addr: soc_map::Hex,
    /// Who read it and as what, e.g. `tpb0 firmware`.
    pub reader: String,
    /// Such reads in all.
    pub count: u64,
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
                .map(|s| s.as_mut().map(|b| Box::new(b.snapshot())))
                .collect(),
            recent: self.recent.clone(),
            skip_payload: self.skip_payload,
            stale: self.stale.clone(),
            stale_in: self.stale_in.clone(),
            stale_control: self.stale_control.clone(),
        }
    }

    /// Timing-only mode: notes a control read of `[addr, addr + len)` by
    /// `reader` at `cycle` (see [`StaleControl`]) if it meets a stale byte.
    pub fn note_control_read(
        &mut self,
        map: &SocMap,
        addr: u64,
        len: u64,
        cycle: u64,
        reader: impl FnOnce() -> String,
    ) {
        let Some(b) = self.stale_byte_in(map, addr, len) else {
            return;
        };
        match &mut self.stale_control {
            Some(c) => c.count += 1,
            None => {
                self.stale_control = Some(StaleControl {
                    cycle,
                    addr: soc_map::Hex(b),
                    reader: reader(),
                    count: 1,
                });
            }
        }
    }

    /// The first control read of stale bytes, if any ([`StaleControl`]).
    pub fn stale_control(&self) -> Option<&StaleControl> {
        self.stale_control.as_ref()
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
                region: r.name.to_string(),
                hole,
            });
        }
        match r.kind {
            RegionKind::Memory | RegionKind::Host | RegionKind::Sbuf | RegionKind::Psum => {}
            RegionKind::Csr | RegionKind::Container => {
                return Err(BusFault::NotMemory {
                    addr,
                    region: r.name.to_string(),
                });
            }
            RegionKind::Reserved => {
                return Err(BusFault::Hole {
                    addr,
                    region: r.name.to_string(),
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
                region: r.name.to_string(),
                boundary: r.end(),
            });
        }
        let storage = r.alias_of.unwrap_or(region);
        Ok(MemTarget {
            region,
            storage,
            offset,
            storage_base: map.region(storage).base,
        })
    }

    /// [`DeviceMemory::resolve`] with a cache of the regions used
    /// recently ([`RegionCache`]): a hit skips the map search.
    #[inline]
    fn target(&self, map: &SocMap, addr: u64, len: u64) -> Result<MemTarget, BusFault> {
        match self.recent.find(addr, len) {
            Some(t) => Ok(t),
            None => self.target_miss(map, addr, len),
        }
    }

    /// [`DeviceMemory::target`] when no remembered region resolves the
    /// access: the map search, whose leaf memory region is remembered.
    #[cold]
    #[inline(never)]
    fn target_miss(&self, map: &SocMap, addr: u64, len: u64) -> Result<MemTarget, BusFault> {
        let t = Self::resolve(map, addr, len)?;
        let r = map.region(t.region);
        if !r.children.is_empty() {
            return Ok(t);
        }
        let partitions = match r.kind {
            RegionKind::Memory | RegionKind::Host => None,
            RegionKind::Sbuf | RegionKind::Psum => match r.partitions {
                // (Another stride is resolved in full every time.)
                Some(p) if p.stride_bytes.is_power_of_two() => Some(PartitionShape {
                    stride_shift: p.stride_bytes.trailing_zeros(),
                    count: p.count,
                    populated_bytes: p.populated_bytes,
                }),
                _ => return Ok(t),
            },
            _ => return Ok(t),
        };
        self.recent.insert(
            addr,
            LastRegion {
                base: r.base,
                size_bytes: r.size_bytes,
                region: t.region,
                storage: t.storage,
                storage_base: t.storage_base,
                partitions,
            },
            {
                let st = map.region(t.storage);
                SkipCheck::of(st.kind, st.size_bytes)
            },
        );
        Ok(t)
    }

    #[inline]
    fn store_mut(&mut self, map: &SocMap, storage: RegionId) -> &mut Backing {
        if !matches!(self.stores.get(storage), Some(Some(_))) {
            self.create_store(map, storage);
        }
        self.stores[storage].get_or_insert_with(|| {
            let r = map.region(storage);
            Box::new(Backing::new(r.kind, r.size_bytes))
        })
    }

    /// The store of region `storage`, created empty.
    #[cold]
    #[inline(never)]
    fn create_store(&mut self, map: &SocMap, storage: RegionId) {
        if self.stores.len() <= storage {
            // Once, for every region of the map (growing it region by
            // region reallocated and copied the table).
            let len = map.regions.len().max(storage + 1);
            let mut stores = vec![None; len];
            for (slot, s) in stores.iter_mut().zip(std::mem::take(&mut self.stores)) {
                *slot = s;
            }
            self.stores = stores;
        }
        let r = map.region(storage);
        self.stores[storage] = Some(Box::new(Backing::new(r.kind, r.size_bytes)));
    }

    fn fault(map: &SocMap, t: MemTarget, addr: u64, fault: MemFault) -> BusFault {
        BusFault::Memory {
            addr,
            region: map.name(t.region).to_string(),
            fault,
        }
    }

    /// Reads `buf.len()` bytes at `addr`.
    #[inline(always)]
    pub fn read(&self, map: &SocMap, addr: u64, buf: &mut [u8]) -> Result<(), BusFault> {
        // A plain memory remembered and its store made (descriptor bursts):
        // no fault is built. A read that fails reads nothing, and the full
        // path below returns its fault.
        if let Some(t) = self.recent.find(addr, buf.len() as u64)
            && let Some(Some(store)) = self.stores.get(t.storage)
            && let Backing::Linear(m) = &**store
            && m.read(t.offset, buf).is_ok()
        {
            return Ok(());
        }
        self.read_full(map, addr, buf)
    }

    /// [`DeviceMemory::read`] through the map search and the store's own
    /// rules (SBUF pads), an absent store reading as zeros.
    #[inline(never)]
    fn read_full(&self, map: &SocMap, addr: u64, buf: &mut [u8]) -> Result<(), BusFault> {
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

    /// Marks the `len` bytes of `t` stale, by their storage's address
    /// (an alias window of the same bytes sees them stale too).
    fn mark_stale(&mut self, t: MemTarget, len: u64) {
        if self.stale_in.len() <= t.storage {
            self.stale_in.resize(t.storage + 1, false);
        }
        self.stale_in[t.storage] = true;
        self.stale.mark(t.storage_addr(), len);
    }

    /// The `len` bytes of `t` were written: no longer stale. A range lies
    /// in one storage region, so a region never marked has nothing to
    /// clear.
    fn clear_stale(&mut self, t: MemTarget, len: u64) {
        if self.stale_in.get(t.storage).copied().unwrap_or(false) {
            self.stale.clear(t.storage_addr(), len);
        }
    }

    /// The first byte of `[addr, addr + len)` a timing-only DMA copy should
    /// have written and did not, through whichever window (an alias) the
    /// address is in; `None` where none is, or `addr` is not memory.
    pub fn stale_byte_in(&self, map: &SocMap, addr: u64, len: u64) -> Option<u64> {
        if self.stale.is_empty() {
            return None;
        }
        let t = self.target(map, addr, len).ok()?;
        let b = self.stale.first_in(t.storage_addr(), len)?;
        Some(addr + (b - t.storage_addr()))
    }

    /// Marks `[addr, addr + len)` stale: bytes computed from stale ones
    /// (a checksum, a compute op's result) in timing-only mode. Not
    /// memory: nothing to mark.
    pub fn mark_stale_at(&mut self, map: &SocMap, addr: u64, len: u64) {
        if let Ok(t) = self.target(map, addr, len) {
            self.mark_stale(t, len);
        }
    }

    /// Writes `data` at `addr`.
    #[inline(always)]
    pub fn write(&mut self, map: &SocMap, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        // A plain memory remembered and its store made (every completion
        // entry, ring descriptor and small control write of a run): no
        // fault is built. A write that fails writes nothing, and the full
        // path below returns its fault.
        let len = data.len() as u64;
        if let Some(t) = self.recent.find(addr, len)
            && let Some(Some(store)) = self.stores.get_mut(t.storage)
            && let Backing::Linear(m) = &mut **store
            && m.write(t.offset, data).is_ok()
        {
            self.clear_stale(t, len);
            return Ok(());
        }
        self.write_full(map, addr, data)
    }

    /// A 16-byte completion entry ([`sim_core::entry16`]) at `addr`, when
    /// `addr` is in the plain memory last used and its page exists: the
    /// bytes are stored from the word, not copied from a buffer just
    /// filled (an x86 host stalls on that 16-byte load). False, having
    /// written nothing, otherwise: the caller takes [`DeviceMemory::write`].
    pub fn write_entry16(&mut self, addr: u64, word0: u32) -> bool {
        if let Some(t) = self.recent.find(addr, 16)
            && let Some(Some(store)) = self.stores.get_mut(t.storage)
            && let Backing::Linear(m) = &mut **store
            && m.write_entry16(t.offset, word0)
        {
            self.clear_stale(t, 16);
            return true;
        }
        false
    }

    /// [`DeviceMemory::write`] through the map search, the store's own
    /// rules (SBUF pads, PSUM alignment) and its creation.
    #[inline(never)]
    fn write_full(&mut self, map: &SocMap, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        let t = self.target(map, addr, data.len() as u64)?;
        self.store_mut(map, t.storage)
            .write(t.offset, data)
            .map_err(|f| Self::fault(map, t, addr, f))?;
        self.clear_stale(t, data.len() as u64);
        Ok(())
    }

    /// Sets `len` bytes at `addr` to `byte`.
    pub fn fill(&mut self, map: &SocMap, addr: u64, len: u64, byte: u8) -> Result<(), BusFault> {
        let t = self.target(map, addr, len)?;
        self.store_mut(map, t.storage)
            .fill(t.offset, len, byte)
            .map_err(|f| Self::fault(map, t, addr, f))?;
        self.clear_stale(t, len);
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
        self.clear_stale(t, len);
        Ok(true)
    }

    /// Copies `len` bytes from `src` to `dst` page to page, without a bounce
    /// buffer (the DMA data path). On failure returns the fault and the
    /// address it concerns (source or destination).
    #[inline(always)]
    pub fn copy(
        &mut self,
        map: &SocMap,
        src: u64,
        dst: u64,
        len: u64,
    ) -> Result<(), (BusFault, u64)> {
        if self.skip_payload
            && len > TIMING_ONLY_MIN_SKIP_BYTES
            && let Some((s, s_check)) = self.recent.find_checked(src, len)
            && let Some((d, d_check)) = self.recent.find_checked(dst, len)
            && s_check.passes(s.offset, len)
            && d_check.passes(d.offset, len)
        {
            // Timing-only, both ends remembered, and both pass every check
            // the full path below makes ([`SkipCheck`]): checked, not moved
            // (docs/references/design.md §4).
            self.mark_stale(d, len);
            return Ok(());
        }
        self.copy_full(map, src, dst, len)
    }

    /// [`DeviceMemory::copy`] without the timing-only fast path: every
    /// check through the stores, the payload moved or marked stale.
    #[inline(never)]
    fn copy_full(
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
                self.mark_stale(d, len);
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
            self.mark_stale(d, len);
            return Ok(());
        }
        if !self.stale.is_empty() {
            // A small copy moves its bytes: stale ones stay stale.
            if self.stale.first_in(s.storage_addr(), len).is_some() {
                self.mark_stale(d, len);
            } else {
                self.clear_stale(d, len);
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
            let sparse = match &**store {
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
            .map(|b| b.allocated_bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Addresses at the edges of memories of every kind (HBM, SBUF with
    /// its partition pads, PSUM, the DGE memory, an alias, a reserved
    /// range, host memory) and of a register block, with access lengths
    /// that end inside, exactly at and past each edge.
    fn edge_accesses(map: &SocMap) -> Vec<(u64, u64)> {
        let mut regions = Vec::new();
        for t in 0..8 {
            for name in ["sbuf", "psum", "dge_memory", "scratch", "reserved_sbuf"] {
                regions.push(format!("tpb{t}.{name}"));
            }
        }
        regions.extend(["tpb0.q7_dataram0", "tpb0.q7_dram0", "host", "eng0.gen"].map(String::from));
        regions.extend((0..4).map(|h| format!("hbm{h}")));
        let mut points = Vec::new();
        for name in &regions {
            let id = map.by_name(name).unwrap_or_else(|| panic!("{name}"));
            let r = map.region(id);
            let end = r.base + r.size_bytes;
            // (base + 0xfff8: accesses that cross a 64 KiB store page.)
            points.extend([r.base, r.base + 1, r.base + 0xfff8, r.base + 0x1_0000]);
            points.extend([end - 16, end - 1, end]);
            points.push(r.base.wrapping_sub(1));
            if let Some(p) = r.partitions {
                for k in [0, 1, 63, 127] {
                    let at = r.base + k * p.stride_bytes;
                    points.extend([
                        at + p.populated_bytes - 512,
                        at + p.populated_bytes - 16,
                        at + p.populated_bytes,
                        at + p.stride_bytes - 1,
                    ]);
                }
            }
        }
        let mut out = Vec::new();
        for a in points {
            for len in [0, 1, 4, 16, 65, 512, 0x8001] {
                out.push((a, len));
            }
        }
        out
    }

    /// A deterministic shuffle (a linear congruential generator), so
    /// that regions are met in an order that evicts and collides.
    fn shuffled<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
        let mut v = items.to_vec();
        let mut x = seed;
        for i in (1..v.len()).rev() {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            v.swap(i, (x >> 33) as usize % (i + 1));
        }
        v
    }

    /// The region cache answers every access as the map search does:
    /// hits, misses, evictions (more regions than it holds) and granule
    /// index collisions, at region and partition edges.
    #[test]
    fn region_cache_resolves_as_the_map_does() {
        let map = soc_map::trn2().unwrap();
        let mem = DeviceMemory::default();
        let accesses = edge_accesses(&map);
        for round in 0..3 {
            for (a, len) in shuffled(&accesses, round) {
                assert_eq!(
                    mem.target(&map, a, len),
                    DeviceMemory::resolve(&map, a, len),
                    "{a:#x}+{len:#x}"
                );
            }
        }
    }

    /// The timing-only fast path of `copy` leaves the memory as the full
    /// path does: the same result (fault and the address it names), the
    /// same stale ranges (merged and split alike) and the same stores,
    /// with SBUF stores absent and present, for copies at every edge.
    #[test]
    fn timing_only_copy_fast_path_matches_full_path() {
        let map = soc_map::trn2().unwrap();
        let edges = edge_accesses(&map);
        let starts: Vec<u64> = edges.iter().map(|&(a, _)| a).collect();
        let mut copies = Vec::new();
        for (i, &(src, len)) in edges.iter().enumerate() {
            let dst = starts[(i * 7919) % starts.len()];
            copies.push((src, dst, len));
            copies.push((dst, src, len));
        }
        // Streams into partition rows: copies that extend, meet and
        // overlap stale ranges.
        let sbuf = map.region(map.by_name("tpb0.sbuf").unwrap()).base;
        let hbm = map.region(map.by_name("hbm0").unwrap()).base;
        for t in 0..6u64 {
            for row in 0..4u64 {
                copies.push((hbm + t * 0x1000, sbuf + row * 0x4_0000 + t * 512, 512));
            }
            copies.push((hbm, sbuf + 0x4_0000 + 256, 1024));
        }
        // Copies that start in a partition row and run into its pad, to it
        // and from it, by a few bytes or most of the copy.
        let p = map
            .region(map.by_name("tpb0.sbuf").unwrap())
            .partitions
            .unwrap();
        for row in [0, 1, 127] {
            let row_end = sbuf + row * p.stride_bytes + p.populated_bytes;
            for back in [1, 64, 256, 300, 511, 512, 1024] {
                for len in [512, 1024] {
                    copies.push((hbm, row_end - back, len));
                    copies.push((row_end - back, hbm, len));
                }
            }
        }
        for store_first in [false, true] {
            let mut fast = DeviceMemory::default();
            let mut full = DeviceMemory::default();
            for m in [&mut fast, &mut full] {
                m.set_skip_payload(true);
                if store_first {
                    m.write(&map, sbuf + 8, &[7; 8]).unwrap();
                    m.write(&map, hbm + 8, &[9; 8]).unwrap();
                }
            }
            for (k, &(src, dst, len)) in shuffled(&copies, 7).iter().enumerate() {
                let a = fast.copy(&map, src, dst, len);
                let b = full.copy_full(&map, src, dst, len);
                assert_eq!(a, b, "copy {k}: {src:#x} -> {dst:#x} + {len:#x}");
                assert_eq!(fast.stale(), full.stale(), "copy {k}");
            }
            assert!(fast.stale().bytes() > 0);
            assert_eq!(fast.stale_in, full.stale_in);
            assert_eq!(fast.digest(), full.digest());
            assert_eq!(fast.allocated_bytes(), full.allocated_bytes());
        }
    }

    /// The plain-memory fast paths of `write` and `read` do what the full
    /// paths do at every edge: the same results (faults included), bytes,
    /// stores and stale ranges (writes over stale bytes clear them).
    #[test]
    fn plain_write_and_read_fast_paths_match_full_paths() {
        let map = soc_map::trn2().unwrap();
        let accesses = edge_accesses(&map);
        let sbuf = map.region(map.by_name("tpb0.sbuf").unwrap()).base;
        let hbm = map.region(map.by_name("hbm0").unwrap()).base;
        let mut fast = DeviceMemory::default();
        let mut full = DeviceMemory::default();
        for m in [&mut fast, &mut full] {
            m.set_skip_payload(true);
            for (k, &(a, _)) in accesses.iter().enumerate() {
                let _ = m.copy(&map, hbm + 0x100_0000, a, 128 + k as u64 % 3);
            }
            let _ = m.copy(&map, hbm, sbuf, 4096);
            m.set_skip_payload(false);
        }
        assert!(fast.stale().bytes() > 0);
        for (k, &(a, len)) in shuffled(&accesses, 3).iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ (k as u8) | 1).collect();
            assert_eq!(
                fast.write(&map, a, &data),
                full.write_full(&map, a, &data),
                "write {a:#x}+{len:#x}"
            );
            assert_eq!(fast.stale(), full.stale(), "write {a:#x}+{len:#x}");
            let (mut x, mut y) = (vec![0xee; len as usize], vec![0xee; len as usize]);
            let near = a.wrapping_sub(8);
            assert_eq!(
                fast.read(&map, near, &mut x),
                full.read_full(&map, near, &mut y),
                "read {near:#x}+{len:#x}"
            );
            assert_eq!(x, y, "read {near:#x}+{len:#x}");
        }
        assert_eq!(fast.digest(), full.digest());
        assert_eq!(fast.allocated_bytes(), full.allocated_bytes());
    }

    /// Every SBUF store has the shape the timing-only checks assume.
    #[test]
    fn sbuf_stores_have_the_assumed_shape() {
        let Backing::Sbuf(m) = Backing::new(RegionKind::Sbuf, 0) else {
            panic!("not an SBUF store");
        };
        assert_eq!(m.as_partitioned().geometry(), SBUF_GEOMETRY);
    }

    /// A completion entry stored from its word ([`DeviceMemory::write_entry16`])
    /// leaves the memory as [`DeviceMemory::write`] of its bytes does —
    /// stale marks of a timing-only copy cleared included — and declines,
    /// writing nothing, where the page or the region is not at hand.
    #[test]
    fn entry16_is_a_write_of_its_bytes() {
        let map = soc_map::trn2().unwrap();
        let run = |fast: bool| {
            let mut mem = DeviceMemory::default();
            mem.set_skip_payload(true);
            // A timing-only copy leaves 0x1000..0x1100 stale.
            mem.write(&map, 0x1000, &[7; 256]).unwrap();
            mem.copy(&map, 0x10_0000, 0x1000, 256).unwrap();
            let mut declined = Vec::new();
            for (k, at) in [0x1000u64, 0x1010, 0x1030, 0x5_0000]
                .into_iter()
                .enumerate()
            {
                let word0 = 0x4000_0000 | k as u32;
                if !(fast && mem.write_entry16(at, word0)) {
                    declined.push(at);
                    mem.write(&map, at, &sim_core::entry16(word0)).unwrap();
                }
            }
            let mut bytes = [0u8; 80];
            mem.read(&map, 0xff8, &mut bytes).unwrap();
            (
                bytes.to_vec(),
                mem.stale().first_in(0x1000, 0x100),
                declined,
            )
        };
        let (fast, slow) = (run(true), run(false));
        assert_eq!(fast.0, slow.0);
        assert_eq!(fast.1, slow.1);
        // The entries cleared their bytes: 0x1020 is the first still stale.
        assert_eq!(fast.1, Some(0x1020));
        // The entry into a page not yet made goes the full path.
        assert_eq!(fast.2, vec![0x5_0000]);
    }
}
