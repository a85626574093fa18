//! Device and host memory management (docs/references/driver.md §5): per-HBM-channel
//! pools with a 1 GiB small pool on top, the 16 MiB firmware carve-out, the
//! downward-growing contiguous scratchpad, host memory with the PCIe host
//! bit, the handle table and the per-category accounting.

use std::collections::BTreeMap;

use ioctl_abi::Errno;
use ioctl_abi::enums::MemAllocCategory;
use serde::Serialize;

use crate::pool::GenPool;

/// Allocation granularity (`mp_min_alloc_size` = PAGE_SIZE, §5.1).
pub const PAGE_BYTES: u64 = 4096;
/// The firmware carve-out at the start of every channel (§5.1).
pub const CARVEOUT_BYTES: u64 = 16 << 20;
/// `mempool_small_pool_size`: the top of every channel (§5.1).
pub const SMALL_POOL_BYTES: u64 = 1 << 30;
/// `mempool_small_alloc_max`: requests up to this try the small pool first.
pub const SMALL_ALLOC_MAX_BYTES: u64 = 512 << 10;
/// HBM channels (V3: `dram_channel` < 4, §1.6).
pub const CHANNELS: usize = 4;
/// NeuronCores per device (`nc_id` < 8, §1.6).
pub const NCS: usize = 8;
/// The PCIe host bit OR'ed into host chunk addresses (V3 bit 46, §5.3).
pub const HOST_BIT: u64 = 1 << 46;
/// Host physical memory the driver hands out: `dma_alloc_coherent` with
/// GFP_DMA32 keeps it below 4 GiB (§5.3). Simulator decision: the range
/// [256 MiB, 4 GiB).
pub const HOST_POOL_BASE: u64 = 0x1000_0000;
/// One past the host pool.
pub const HOST_POOL_END: u64 = 0x1_0000_0000;
/// The chunk bookkeeping magic (§5.2).
pub const CHUNK_MAGIC: u32 = 0xE1C2_D3F4;

/// Which pool a chunk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// The low part of a channel.
    Main,
    /// The top 1 GiB of a channel.
    Small,
    /// Host memory.
    Host,
}

/// How long a chunk lives (§5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Lifespan {
    /// Freed at the end of the ioctl (bounce buffers).
    Local,
    /// Freed when the owning process exits.
    CurProcess,
    /// Lives as long as the device (carve-out, H2T rings).
    Device,
}

/// One allocation (`struct mem_chunk`, §5.2).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct MemChunk {
    /// Physical address; host chunks carry [`HOST_BIT`].
    pub pa: u64,
    /// Bytes, rounded up to 4 KiB.
    pub size_bytes: u64,
    /// HBM channel (device chunks).
    pub channel: u32,
    /// Owning NeuronCore.
    pub nc_id: u32,
    /// `mem_alloc_category_t` (after coercion).
    pub category: MemAllocCategory,
    /// Host (true) or device memory.
    pub host: bool,
    /// Pool the bytes came from.
    pub pool: PoolKind,
    /// References (MEM_FREE drops one).
    pub refcount: u32,
    /// Lifespan.
    pub lifespan: Lifespan,
    /// The handle, once exported.
    pub handle: Option<u64>,
    /// Contiguous-scratchpad chunk (category 19).
    pub contiguous_scratchpad: bool,
}

/// One HBM channel's region.
#[derive(Clone, Debug)]
struct Channel {
    main: GenPool,
    small: GenPool,
    /// Bytes the contiguous scratchpad has grown down from the end of the
    /// main pool.
    scratchpad_bytes: u64,
}

/// Why an allocation request was refused (mapped to errno by the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Bad argument (`EINVAL`).
    Invalid,
    /// No space (`ENOMEM`).
    NoMemory,
}

impl From<AllocError> for Errno {
    fn from(e: AllocError) -> Self {
        match e {
            AllocError::Invalid => Errno::EINVAL,
            AllocError::NoMemory => Errno::ENOMEM,
        }
    }
}

/// What an allocation asks for (the MEM_ALLOC* fields).
#[derive(Clone, Copy, Debug)]
pub struct AllocRequest {
    /// Bytes requested.
    pub size: u64,
    /// Alignment (0 = page).
    pub align: u64,
    /// Host memory.
    pub host: bool,
    /// HBM channel.
    pub channel: u32,
    /// NeuronCore.
    pub nc_id: u32,
    /// Raw category (coerced if out of range).
    pub category: u32,
}

/// Counters per category (sysfs): host categories per device, device
/// categories per NC (§1.5, §5.5).
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct MemAccounting {
    /// Host bytes per category name.
    pub host: BTreeMap<String, u64>,
    /// Device bytes per NC, per category name.
    pub device: BTreeMap<u32, BTreeMap<String, u64>>,
    /// `host_mem_size`.
    pub host_mem_bytes: u64,
    /// `device_mem_size`.
    pub device_mem_bytes: u64,
}

/// All pools, chunks and handles of one device.
#[derive(Clone, Debug)]
pub struct MemManager {
    channels: Vec<Channel>,
    host: GenPool,
    /// Chunks by physical address (the driver's rbtree).
    chunks: BTreeMap<u64, MemChunk>,
    /// Handle table: index → chunk pa; index 0 is never used.
    handles: Vec<Option<u64>>,
    /// Freed handle indices, reused LIFO (§5.4).
    free_handles: Vec<u64>,
    accounting: MemAccounting,
    /// One-time warnings already given (category coercion).
    warned_category: bool,
    /// Log lines (OOM reports, warnings) for the driver's event stream.
    pub log: Vec<String>,
}

/// Maximum handle index (L1 512 × L2 8192, §5.4).
pub const HANDLE_TABLE_ENTRIES: u64 = 512 * 8192;

impl MemManager {
    /// Pools over the given HBM channel ranges `(base, active_bytes)`, with
    /// the carve-out of every channel allocated (§5.1).
    #[must_use]
    pub fn new(hbm: &[(u64, u64)]) -> Self {
        let mut m = Self {
            channels: Vec::new(),
            host: GenPool::new(HOST_POOL_BASE, HOST_POOL_END - HOST_POOL_BASE, PAGE_BYTES),
            chunks: BTreeMap::new(),
            handles: vec![None],
            free_handles: Vec::new(),
            accounting: MemAccounting::default(),
            warned_category: false,
            log: Vec::new(),
        };
        for (i, &(base, bytes)) in hbm.iter().enumerate() {
            let small = SMALL_POOL_BYTES.min(bytes);
            let main_bytes = bytes - small;
            let mut ch = Channel {
                main: GenPool::new(base, main_bytes, PAGE_BYTES),
                small: GenPool::new(base + main_bytes, small, PAGE_BYTES),
                scratchpad_bytes: 0,
            };
            // The carve-out: offset 0 of the channel, NCDEV_DEVICE (§5.1).
            if ch.main.alloc_fixed(base, CARVEOUT_BYTES) {
                let nc = u32::try_from(2 * i).unwrap_or(0);
                m.insert_chunk(MemChunk {
                    pa: base,
                    size_bytes: CARVEOUT_BYTES,
                    channel: u32::try_from(i).unwrap_or(0),
                    nc_id: nc,
                    category: MemAllocCategory::NcdevDevice,
                    host: false,
                    pool: PoolKind::Main,
                    refcount: 1,
                    lifespan: Lifespan::Device,
                    handle: None,
                    contiguous_scratchpad: false,
                });
            }
            m.channels.push(ch);
        }
        m
    }

    /// The accounting counters.
    #[must_use]
    pub fn accounting(&self) -> &MemAccounting {
        &self.accounting
    }

    /// Every chunk, by address.
    pub fn chunks(&self) -> impl Iterator<Item = &MemChunk> {
        self.chunks.values()
    }

    /// Free bytes of channel `ch` (main + small).
    #[must_use]
    pub fn channel_free_bytes(&self, ch: usize) -> Option<u64> {
        self.channels
            .get(ch)
            .map(|c| c.main.avail_bytes() + c.small.avail_bytes())
    }

    /// Allocates per `mc_alloc_internal` (§1.6, §5.2) and exports a handle.
    ///
    /// # Errors
    ///
    /// `Invalid` for a bad channel/NC/alignment, `NoMemory` when no pool
    /// has room.
    pub fn alloc(&mut self, req: AllocRequest, lifespan: Lifespan) -> Result<u64, AllocError> {
        let pa = self.alloc_chunk(req, lifespan)?;
        Ok(self.export_handle(pa))
    }

    /// Allocates a chunk without a handle (driver-internal users); returns
    /// its address.
    ///
    /// # Errors
    ///
    /// As [`MemManager::alloc`].
    pub fn alloc_chunk(
        &mut self,
        req: AllocRequest,
        lifespan: Lifespan,
    ) -> Result<u64, AllocError> {
        // `mc_alloc_internal` order: size, channel (host requests too),
        // NC, host alignment; `align > INT_MAX` only on the aligned device
        // path (below).
        if req.size > i64::MAX as u64 {
            return Err(AllocError::Invalid);
        }
        if req.channel as usize >= self.channels.len() {
            return Err(AllocError::Invalid);
        }
        if req.nc_id as usize >= NCS {
            return Err(AllocError::Invalid);
        }
        if req.host && req.align != 0 {
            return Err(AllocError::Invalid);
        }
        let size = req
            .size
            .max(1)
            .checked_add(PAGE_BYTES - 1)
            .ok_or(AllocError::Invalid)?
            & !(PAGE_BYTES - 1);
        let category = self.coerce_category(req.category, req.host);
        // The contiguous scratchpad ignores `align` (fixed offset, §5.1).
        let scratch = !req.host && category == MemAllocCategory::ContiguousScratchpadDevice;
        if !req.host && !scratch && req.align > PAGE_BYTES && req.align > i32::MAX as u64 {
            return Err(AllocError::Invalid);
        }
        let (pa, pool) = if req.host {
            let at = self
                .host
                .alloc(size, 0)
                .ok_or_else(|| self.oom(req, size))?;
            (at | HOST_BIT, PoolKind::Host)
        } else if scratch {
            let ch = &mut self.channels[req.channel as usize];
            let at = ch
                .main
                .end()
                .checked_sub(ch.scratchpad_bytes + size)
                .filter(|&at| ch.main.alloc_fixed(at, size));
            match at {
                Some(at) => {
                    ch.scratchpad_bytes += size;
                    (at, PoolKind::Main)
                }
                None => return Err(self.oom(req, size)),
            }
        } else {
            let align = if req.align > PAGE_BYTES { req.align } else { 0 };
            let ch = &mut self.channels[req.channel as usize];
            let (first, second) = if size <= SMALL_ALLOC_MAX_BYTES {
                (&mut ch.small, PoolKind::Small)
            } else {
                (&mut ch.main, PoolKind::Main)
            };
            let got = first.alloc(size, align).map(|a| (a, second));
            let got = got.or_else(|| {
                let (other, kind) = if second == PoolKind::Small {
                    (&mut ch.main, PoolKind::Main)
                } else {
                    (&mut ch.small, PoolKind::Small)
                };
                other.alloc(size, align).map(|a| (a, kind))
            });
            match got {
                Some(g) => g,
                None => return Err(self.oom(req, size)),
            }
        };
        self.insert_chunk(MemChunk {
            pa,
            size_bytes: size,
            channel: if req.host { 0 } else { req.channel },
            nc_id: req.nc_id,
            category,
            host: req.host,
            pool,
            refcount: 1,
            lifespan,
            handle: None,
            contiguous_scratchpad: scratch,
        });
        Ok(pa)
    }

    /// The OOM log line with pool totals (§5.2) and the error.
    fn oom(&mut self, req: AllocRequest, size: u64) -> AllocError {
        let line = if req.host {
            format!(
                "host memory allocation of {size} bytes failed: host pool {} of {} bytes free",
                self.host.avail_bytes(),
                self.host.size_bytes()
            )
        } else {
            let ch = &self.channels[req.channel as usize];
            format!(
                "device memory allocation of {size} bytes on HBM {} (nc {}) failed: \
                 main pool {} of {} bytes free, small pool {} of {} bytes free",
                req.channel,
                req.nc_id,
                ch.main.avail_bytes(),
                ch.main.size_bytes(),
                ch.small.avail_bytes(),
                ch.small.size_bytes()
            )
        };
        self.log.push(line);
        AllocError::NoMemory
    }

    /// Out-of-range categories become UNKNOWN_HOST/UNKNOWN_DEVICE with a
    /// one-time warning (§1.5).
    fn coerce_category(&mut self, raw: u32, host: bool) -> MemAllocCategory {
        match MemAllocCategory::from_raw(raw) {
            Some(c) if c != MemAllocCategory::Max => c,
            _ => {
                if !self.warned_category {
                    self.warned_category = true;
                    self.log
                        .push(format!("invalid memory category {raw}, counted as UNKNOWN"));
                }
                if host {
                    MemAllocCategory::UnknownHost
                } else {
                    MemAllocCategory::UnknownDevice
                }
            }
        }
    }

    fn insert_chunk(&mut self, c: MemChunk) {
        self.account(&c, true);
        self.chunks.insert(c.pa, c);
    }

    /// Category counter name: category 19 shares the SCRATCHPAD counter
    /// (§1.5).
    fn counter_name(c: MemAllocCategory) -> &'static str {
        if c == MemAllocCategory::ContiguousScratchpadDevice {
            MemAllocCategory::ScratchpadDevice.name()
        } else {
            c.name()
        }
    }

    fn account(&mut self, c: &MemChunk, add: bool) {
        let name = Self::counter_name(c.category).to_string();
        let a = &mut self.accounting;
        let (total, counter) = if c.host {
            (&mut a.host_mem_bytes, a.host.entry(name).or_default())
        } else {
            (
                &mut a.device_mem_bytes,
                a.device
                    .entry(c.nc_id)
                    .or_default()
                    .entry(name)
                    .or_default(),
            )
        };
        if add {
            *total += c.size_bytes;
            *counter += c.size_bytes;
        } else {
            *total = total.saturating_sub(c.size_bytes);
            *counter = counter.saturating_sub(c.size_bytes);
        }
    }

    /// Gives chunk `pa` a handle (lowest freed index first, LIFO; else the
    /// next index from 1, §5.4).
    fn export_handle(&mut self, pa: u64) -> u64 {
        let h = self.free_handles.pop().unwrap_or(self.handles.len() as u64);
        let i = h as usize;
        if i == self.handles.len() {
            self.handles.push(Some(pa));
        } else {
            self.handles[i] = Some(pa);
        }
        if let Some(c) = self.chunks.get_mut(&pa) {
            c.handle = Some(h);
        }
        h
    }

    /// The chunk of a handle (§5.4: index range, presence, magic).
    ///
    /// # Errors
    ///
    /// `EINVAL` for 0, out-of-range or freed handles.
    pub fn chunk(&self, handle: u64) -> Result<&MemChunk, Errno> {
        if handle == 0 || handle >= HANDLE_TABLE_ENTRIES {
            return Err(Errno::EINVAL);
        }
        let pa = self
            .handles
            .get(usize::try_from(handle).map_err(|_| Errno::EINVAL)?)
            .copied()
            .flatten()
            .ok_or(Errno::EINVAL)?;
        self.chunks.get(&pa).ok_or(Errno::EINVAL)
    }

    /// The chunk containing physical address `pa` (with or without the
    /// host bit as stored), if any.
    #[must_use]
    pub fn chunk_at(&self, pa: u64) -> Option<&MemChunk> {
        self.chunks
            .range(..=pa)
            .next_back()
            .map(|(_, c)| c)
            .filter(|c| pa < c.pa + c.size_bytes)
    }

    /// Drops one reference of `handle`; frees the chunk at zero. Returns
    /// whether it was freed.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an unknown handle.
    pub fn free(&mut self, handle: u64) -> Result<bool, Errno> {
        let pa = self.chunk(handle)?.pa;
        let Some(c) = self.chunks.get_mut(&pa) else {
            return Err(Errno::EINVAL);
        };
        c.refcount = c.refcount.saturating_sub(1);
        if c.refcount > 0 {
            return Ok(false);
        }
        self.release_chunk(pa);
        Ok(true)
    }

    /// Frees chunk `pa` whatever its references (driver-internal chunks).
    pub fn release_chunk(&mut self, pa: u64) {
        let Some(c) = self.chunks.remove(&pa) else {
            return;
        };
        self.account(&c, false);
        if let Some(h) = c.handle
            && let Some(slot) = self.handles.get_mut(h as usize)
        {
            *slot = None;
            self.free_handles.push(h);
        }
        if c.host {
            self.host.free(c.pa & !HOST_BIT, c.size_bytes);
            return;
        }
        let Some(ch) = self.channels.get_mut(c.channel as usize) else {
            return;
        };
        if c.contiguous_scratchpad {
            // `mc_free`: the scratchpad shrinks by the freed size even when
            // the page is not the lowest one (the driver only logs that).
            if c.pa != ch.main.end() - ch.scratchpad_bytes {
                self.log.push(format!(
                    "contiguous scratchpad: freeing page with pa {:#x}, expected page with pa {:#x} to be freed first",
                    c.pa,
                    ch.main.end() - ch.scratchpad_bytes
                ));
            }
            ch.scratchpad_bytes = ch.scratchpad_bytes.saturating_sub(c.size_bytes);
        }
        match c.pool {
            PoolKind::Small => ch.small.free(c.pa, c.size_bytes),
            _ => ch.main.free(c.pa, c.size_bytes),
        };
    }

    /// Frees every chunk of `lifespan` whatever its references (process
    /// exit frees the CUR_PROCESS chunks, §5.2); returns them, by address.
    pub fn release_lifespan(&mut self, lifespan: Lifespan) -> Vec<MemChunk> {
        let gone: Vec<MemChunk> = self
            .chunks
            .values()
            .filter(|c| c.lifespan == lifespan)
            .cloned()
            .collect();
        for c in &gone {
            self.release_chunk(c.pa);
        }
        gone
    }

    /// Live handles (for leak reports).
    pub fn live_handles(&self) -> impl Iterator<Item = (u64, &MemChunk)> {
        self.chunks
            .values()
            .filter_map(|c| c.handle.map(|h| (h, c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn mm() -> MemManager {
        MemManager::new(&[
            (0, 24 * GIB),
            (0x40_0000_0000, 24 * GIB),
            (0x8000_0000_0000, 24 * GIB),
            (0x8040_0000_0000, 24 * GIB),
        ])
    }

    fn dev(size: u64, channel: u32, category: u32) -> AllocRequest {
        AllocRequest {
            size,
            align: 0,
            host: false,
            channel,
            nc_id: 2 * channel,
            category,
        }
    }

    #[test]
    fn carveout_then_first_fit_and_small_pool() {
        let mut m = mm();
        // A large request goes to the main pool, just above the carve-out.
        let h = m.alloc(dev(1 << 20, 0, 9), Lifespan::CurProcess).unwrap();
        assert_eq!(h, 1, "handles start at 1");
        assert_eq!(m.chunk(h).unwrap().pa, CARVEOUT_BYTES);
        // <= 512 KiB goes to the top 1 GiB first.
        let s = m.alloc(dev(512 << 10, 1, 9), Lifespan::CurProcess).unwrap();
        let c = m.chunk(s).unwrap();
        assert_eq!(c.pa, 0x40_0000_0000 + 23 * GIB);
        assert_eq!(c.pool, PoolKind::Small);
        // Rounded to 4 KiB.
        let t = m.alloc(dev(1, 0, 9), Lifespan::CurProcess).unwrap();
        assert_eq!(m.chunk(t).unwrap().size_bytes, 4096);
        assert_eq!(
            m.accounting().device[&0]["TENSORS_DEVICE"],
            (1 << 20) + 4096
        );
        assert_eq!(m.accounting().device[&0]["NCDEV_DEVICE"], CARVEOUT_BYTES);
    }

    #[test]
    fn handles_are_reused_lifo_and_refcounted() {
        let mut m = mm();
        let a = m.alloc(dev(4096, 0, 9), Lifespan::CurProcess).unwrap();
        let b = m.alloc(dev(4096, 0, 9), Lifespan::CurProcess).unwrap();
        assert_eq!((a, b), (1, 2));
        assert!(m.free(a).unwrap());
        assert!(m.free(b).unwrap());
        assert_eq!(m.free(a), Err(Errno::EINVAL), "double free");
        assert_eq!(m.alloc(dev(4096, 0, 9), Lifespan::CurProcess).unwrap(), b);
        assert_eq!(m.alloc(dev(4096, 0, 9), Lifespan::CurProcess).unwrap(), a);
        assert_eq!(m.chunk(0).err(), Some(Errno::EINVAL));
    }

    #[test]
    fn argument_rules() {
        let mut m = mm();
        let mut r = dev(4096, 4, 9);
        assert_eq!(m.alloc(r, Lifespan::CurProcess), Err(AllocError::Invalid));
        r.channel = 0;
        r.nc_id = 8;
        assert_eq!(m.alloc(r, Lifespan::CurProcess), Err(AllocError::Invalid));
        let host_aligned = AllocRequest {
            host: true,
            align: 4096,
            ..dev(4096, 0, 2)
        };
        assert_eq!(
            m.alloc(host_aligned, Lifespan::CurProcess),
            Err(AllocError::Invalid)
        );
        let huge_align = AllocRequest {
            align: 1 << 31,
            ..dev(4096, 0, 9)
        };
        assert_eq!(
            m.alloc(huge_align, Lifespan::CurProcess),
            Err(AllocError::Invalid)
        );
    }

    #[test]
    fn host_memory_has_the_host_bit_and_counts_per_device() {
        let mut m = mm();
        let r = AllocRequest {
            host: true,
            ..dev(10_000, 0, 2)
        };
        let h = m.alloc(r, Lifespan::CurProcess).unwrap();
        let c = m.chunk(h).unwrap();
        assert_eq!(c.pa, HOST_POOL_BASE | HOST_BIT);
        assert_eq!(c.size_bytes, 12_288);
        assert_eq!(m.accounting().host["TENSORS_HOST"], 12_288);
        assert_eq!(m.accounting().host_mem_bytes, 12_288);
    }

    #[test]
    fn aligned_device_allocation_and_out_of_range_category() {
        let mut m = mm();
        let r = AllocRequest {
            align: 1 << 30,
            ..dev(1 << 20, 0, 99)
        };
        let h = m.alloc(r, Lifespan::CurProcess).unwrap();
        let c = m.chunk(h).unwrap();
        assert_eq!(c.pa % (1 << 30), 0);
        assert_eq!(c.pa, 1 << 30, "carve-out pushes the first aligned block up");
        assert_eq!(c.category, MemAllocCategory::UnknownDevice);
        assert_eq!(m.log.len(), 1, "one-time warning");
    }

    #[test]
    fn contiguous_scratchpad_grows_down_from_the_main_pool_end() {
        let mut m = mm();
        let a = m.alloc(dev(1 << 20, 0, 19), Lifespan::CurProcess).unwrap();
        let b = m.alloc(dev(1 << 20, 0, 19), Lifespan::CurProcess).unwrap();
        let main_end = 23 * GIB;
        assert_eq!(m.chunk(a).unwrap().pa, main_end - (1 << 20));
        assert_eq!(m.chunk(b).unwrap().pa, main_end - (2 << 20));
        // Shares the SCRATCHPAD counter.
        assert_eq!(m.accounting().device[&0]["SCRATCHPAD_DEVICE"], 2 << 20);
    }

    #[test]
    fn host_requests_check_the_channel_too() {
        let mut m = mm();
        let r = AllocRequest {
            host: true,
            ..dev(4096, 4, 2)
        };
        assert_eq!(
            m.alloc(AllocRequest { nc_id: 0, ..r }, Lifespan::CurProcess),
            Err(AllocError::Invalid)
        );
    }

    #[test]
    fn scratchpad_ignores_align_and_shrinks_on_any_free() {
        let mut m = mm();
        // `align` is not checked for the fixed-offset scratchpad.
        let r = AllocRequest {
            align: 1 << 40,
            ..dev(1 << 20, 0, 19)
        };
        let a = m.alloc(r, Lifespan::CurProcess).unwrap();
        let b = m.alloc(dev(1 << 20, 0, 19), Lifespan::CurProcess).unwrap();
        // Freeing the upper page first is logged and still shrinks the
        // scratchpad, so the next page's fixed offset is b's: taken.
        assert!(m.free(a).unwrap());
        assert!(
            m.log.last().unwrap().contains("expected page"),
            "{:?}",
            m.log
        );
        assert_eq!(
            m.alloc(dev(1 << 20, 0, 19), Lifespan::CurProcess),
            Err(AllocError::NoMemory)
        );
        assert!(m.free(b).unwrap());
        let c = m.alloc(dev(1 << 20, 0, 19), Lifespan::CurProcess).unwrap();
        assert_eq!(m.chunk(c).unwrap().pa, 23 * GIB - (1 << 20));
    }

    #[test]
    fn out_of_memory_logs_pool_totals() {
        // Main pool 32 MiB (16 MiB carve-out), small pool 1 GiB.
        let mut m = MemManager::new(&[(0, (32 << 20) + GIB)]);
        // Large requests try the main pool first, then fall back to small.
        let a = m.alloc(dev(16 << 20, 0, 9), Lifespan::CurProcess).unwrap();
        assert_eq!(m.chunk(a).unwrap().pool, PoolKind::Main);
        let b = m.alloc(dev(GIB, 0, 9), Lifespan::CurProcess).unwrap();
        assert_eq!(m.chunk(b).unwrap().pool, PoolKind::Small);
        assert_eq!(
            m.alloc(dev(4096, 0, 9), Lifespan::CurProcess),
            Err(AllocError::NoMemory)
        );
        assert!(m.log.last().unwrap().contains("failed"), "{:?}", m.log);
    }
}
