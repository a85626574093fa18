//! The fabric: address decode to memories and register blocks, the CSR
//! access path with its side effects (semaphores, the register-access
//! log), and the bus the DMA engines move bytes through.

use super::*;

/// Engine register regions of the map: `engN.<block>` and the broadcast
/// mirrors `engN.bcast.<block>`.
pub(super) fn engine_blocks(map: &SocMap) -> Vec<Option<EngineBlockRef>> {
    let mut out = vec![None; map.regions.len()];
    // A name begins with its top-level region's name (which has no dot):
    // `engN` is parsed once per engine, and each region below it is named
    // `engN.<path>`.
    let mut below: Vec<RegionId> = Vec::new();
    for &root in &map.roots {
        let root_name = &map.regions[root].name;
        let Some(Ok(engine)) = root_name.strip_prefix("eng").map(str::parse::<u16>) else {
            continue;
        };
        below.clear();
        below.extend(&map.regions[root].children);
        while let Some(id) = below.pop() {
            let r = &map.regions[id];
            below.extend(&r.children);
            let Some(path) = r.name.get(root_name.len() + 1..) else {
                continue;
            };
            let (broadcast, path) = match path.strip_prefix("bcast.") {
                Some(p) => (true, p),
                None => (false, path),
            };
            if let Some(block) = UnitBlock::from_suffix(path) {
                out[id] = Some(EngineBlockRef {
                    engine,
                    block,
                    broadcast,
                });
            }
        }
    }
    out
}

/// Entries of the register-target cache (direct-mapped by address).
const REG_CACHE_ENTRIES: usize = 1024;

/// Register targets already decoded, by address: the map and the CSR maps
/// never change for a device, so a decoded register stays valid. The table
/// is a zeroed allocation (an all-zero entry is empty: its key, the
/// complement of an address, is the unaligned `u64::MAX`), not a table
/// written entry by entry (docs/user-guide.md §14, process start-up).
#[derive(Clone)]
pub(super) struct RegCache(Box<[std::cell::Cell<RegCacheEntry>]>);

/// One [`RegCache`] entry.
#[derive(Clone, Copy, zerocopy::FromZeros)]
#[repr(C)]
pub(super) struct RegCacheEntry {
    /// `!addr`: zero (the empty entry) never matches an aligned address.
    not_addr: u64,
    region: RegionId,
    offset: u64,
}

impl Default for RegCache {
    fn default() -> Self {
        use zerocopy::FromZeros;
        match <[std::cell::Cell<RegCacheEntry>]>::new_box_zeroed_with_elems(REG_CACHE_ENTRIES) {
            Ok(entries) => RegCache(entries),
            Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::new::<
                [RegCacheEntry; REG_CACHE_ENTRIES],
            >()),
        }
    }
}

impl std::fmt::Debug for RegCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegCache")
    }
}

impl RegCache {
    fn slot(&self, addr: u64) -> Option<&std::cell::Cell<RegCacheEntry>> {
        // Engine register blocks repeat every 1 MiB: hash every bit in.
        let h = (addr >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
        self.0.get(h as usize % REG_CACHE_ENTRIES)
    }
}

/// Address ranges of leaf memories (HBM, SBUF, RAMs) seen by
/// [`Fabric::reg_target`]: an address inside one holds no register, so
/// the descriptor and completion writes of a run skip the map search.
#[derive(Clone, Debug, Default)]
pub(super) struct MemRanges {
    /// `[base, end)` per entry; empty entries are `(0, 0)`.
    ranges: [std::cell::Cell<(u64, u64)>; MEM_RANGE_ENTRIES],
    /// The entry the next new range replaces.
    next: std::cell::Cell<usize>,
}

/// Memories a run touches at once (a few HBM stacks, SBUFs, DGE memory).
const MEM_RANGE_ENTRIES: usize = 8;

impl MemRanges {
    fn contains(&self, addr: u64) -> bool {
        self.ranges.iter().any(|r| {
            let (base, end) = r.get();
            addr >= base && addr < end
        })
    }

    fn insert(&self, base: u64, end: u64) {
        let i = self.next.get() % MEM_RANGE_ENTRIES;
        self.ranges[i].set((base, end));
        self.next.set(i + 1);
    }
}

impl Fabric {
    /// The engine block region `region` is, if any.
    pub(super) fn engine_block(&self, region: RegionId) -> Option<EngineBlockRef> {
        self.engine_blocks.get(region).copied().flatten()
    }

    pub(super) fn block_of(&self, region: RegionId) -> Option<&'static CsrMap> {
        let catalog = self.catalog;
        self.map
            .region(region)
            .block
            .as_deref()
            .and_then(|b| catalog.block(b))
    }

    pub(super) fn no_register(&self, addr: u64, t: RegTarget) -> BusFault {
        BusFault::NoRegister {
            addr,
            region: self.map.name(t.region).to_string(),
            offset: t.offset,
        }
    }

    pub(super) fn reg_target(&self, addr: u64) -> Result<Option<RegTarget>, BusFault> {
        // Only aligned addresses are cached (the empty entry's, !0, is not).
        if addr & 3 == 0
            && let Some(c) = self.reg_cache.slot(addr)
        {
            let e = c.get();
            if e.not_addr == !addr {
                return Ok(Some(RegTarget {
                    region: e.region,
                    offset: e.offset,
                }));
            }
        }
        if self.mem_ranges.contains(addr) {
            return Ok(None);
        }
        let t = self.decode_reg_target(addr)?;
        if let (Some(t), Some(c)) = (t, self.reg_cache.slot(addr)) {
            c.set(RegCacheEntry {
                not_addr: !addr,
                region: t.region,
                offset: t.offset,
            });
        }
        Ok(t)
    }

    fn decode_reg_target(&self, addr: u64) -> Result<Option<RegTarget>, BusFault> {
        let d = self.map.decode(addr);
        let Some(region) = d.region else {
            return Ok(None);
        };
        let r = self.map.region(region);
        // A leaf memory holds no register anywhere in it (its pads and
        // holes are the memory path's faults, not a register's).
        if r.children.is_empty()
            && matches!(
                r.kind,
                RegionKind::Memory | RegionKind::Host | RegionKind::Sbuf | RegionKind::Psum
            )
        {
            self.mem_ranges.insert(r.base, r.end());
            return Ok(None);
        }
        let has_regs = matches!(r.kind, RegionKind::Csr)
            || (matches!(r.kind, RegionKind::Container) && r.block.is_some());
        if !has_regs {
            return Ok(None);
        }
        let Some(block) = self.block_of(region) else {
            return Ok(None);
        };
        let offset = addr - r.base;
        match block.element_at(offset) {
            Ok(_) => Ok(Some(RegTarget { region, offset })),
            Err(CsrAccessError::Misaligned { .. }) => Err(BusFault::Unaligned {
                addr,
                region: r.name.to_string(),
            }),
            Err(CsrAccessError::Hole { .. } | CsrAccessError::OutsideBlock { .. }) => {
                Err(BusFault::NoRegister {
                    addr,
                    region: r.name.to_string(),
                    offset,
                })
            }
        }
    }

    /// Register-access log: one line for an access by the current master
    /// (reads: `old` is the value returned, `new` what a read returns now).
    pub(super) fn log_access(
        &mut self,
        write: bool,
        addr: u64,
        t: RegTarget,
        value: u32,
        old: u32,
        new: u32,
    ) {
        if self.rec.as_deref().is_none_or(|r| r.log.is_none()) {
            return;
        }
        let Some(block) = self.block_of(t.region) else {
            return;
        };
        let Ok(reg) = block.element_at(t.offset) else {
            return;
        };
        let Some(rec) = self.rec.as_deref_mut() else {
            return;
        };
        let line = access_line(&Access {
            cycle: rec.cycle,
            master: self.master,
            write,
            addr,
            region: self.map.name(t.region),
            reg,
            value,
            old,
            new,
        });
        if let Some(log) = rec.log.as_mut() {
            log.push(&line);
        }
    }

    pub(super) fn regfile(&mut self, region: RegionId) -> Option<&mut RegFile<'static>> {
        regfile_in(&mut self.regs, &self.map, self.catalog, region)
    }

    pub(super) fn csr_read(&mut self, addr: u64, t: RegTarget) -> Result<u32, BusFault> {
        let read = self.regfile(t.region).map(|rf| rf.read(t.offset));
        match read {
            Some(Ok(o)) => Ok(o.value),
            _ => Err(self.no_register(addr, t)),
        }
    }

    /// A register write to a block without an engine model: access
    /// semantics and side effects (semaphores, doorbell and pulse events);
    /// the register's name is built only when `named` or an event shows it.
    pub(super) fn csr_write_unnamed(
        &mut self,
        addr: u64,
        t: RegTarget,
        value: u32,
        named: bool,
    ) -> Result<WriteDone, BusFault> {
        let trace = self.trace;
        // One look-up of the register file: the write and, in an EVT_SEM
        // block, the semaphore's new value.
        let Some(rf) = regfile_in(&mut self.regs, &self.map, self.catalog, t.region) else {
            return Err(self.no_register(addr, t));
        };
        let is_sem = rf.map().block() == "evt_sem";
        let Ok(out) = rf.write(t.offset, value) else {
            return Err(self.no_register(addr, t));
        };
        let sem = if is_sem {
            semaphore_update(rf, &mut self.sem_read_offsets, &out, value)
        } else {
            None
        };
        let shown = trace
            && (out.read_only
                || out.ignored != 0
                || (!is_sem && (matches!(out.delta, Some(Delta::Inc(_))) || out.pulses != 0)));
        let register = (named || shown).then(|| out.reg.name());
        if trace && (out.read_only || out.ignored != 0) {
            self.events.push(DeviceEvent::IgnoredWrite {
                region: self.map.name(t.region).to_string(),
                register: register.clone().unwrap_or_default(),
                written: Hex32(value),
                ignored: Hex32(out.ignored),
                read_only: out.read_only,
                cycle: self.now,
            });
        }
        if is_sem {
            if let Some((index, old, new)) = sem {
                self.semaphore_done(t.region, index, old, new);
            }
        } else if trace {
            if let Some(Delta::Inc(n)) = out.delta {
                self.events.push(DeviceEvent::Doorbell {
                    region: self.map.name(t.region).to_string(),
                    register: register.clone().unwrap_or_default(),
                    increment: n,
                    cycle: self.now,
                });
            }
            if out.pulses != 0 {
                self.events.push(DeviceEvent::Pulse {
                    region: self.map.name(t.region).to_string(),
                    register: register.clone().unwrap_or_default(),
                    bits: Hex32(out.pulses),
                    cycle: self.now,
                });
            }
        }
        Ok(WriteDone {
            register,
            old: out.old,
            new: out.new,
            ignored: out.ignored,
            read_only: out.read_only,
        })
    }

    /// After semaphore `index` of EVT_SEM region `region` went from `old`
    /// to `new` ([`semaphore_update`]): the race detector, the firmware's
    /// wake-up, the waveforms and the trace event.
    fn semaphore_done(&mut self, region: RegionId, index: u32, old: u32, new: u32) {
        if self.race.is_some() {
            self.race_sem_write(region, index);
        }
        if let Some(&core) = self.sem_cores.get(&region) {
            self.sem_touched |= 1 << core;
            if let Some(rec) = self.rec.as_deref_mut()
                && let Some(w) = rec.waves.as_mut()
            {
                w.semaphore(rec.cycle, core, index, old, new);
            }
        }
        if self.trace {
            let name = self.map.name(region).to_string();
            self.events.push(DeviceEvent::Semaphore {
                region: name,
                index,
                old,
                cycle: self.now,
                new,
            });
        }
    }
}

/// The register file of `region`, created on first use (the block is
/// looked up by name only then: the firmware reaches the same few blocks
/// on every word); one map search.
fn regfile_in<'a>(
    regs: &'a mut BTreeMap<RegionId, RegFile<'static>>,
    map: &SocMap,
    catalog: &'static Catalog,
    region: RegionId,
) -> Option<&'a mut RegFile<'static>> {
    match regs.entry(region) {
        std::collections::btree_map::Entry::Occupied(e) => Some(e.into_mut()),
        std::collections::btree_map::Entry::Vacant(v) => {
            let block = map
                .region(region)
                .block
                .as_deref()
                .and_then(|b| catalog.block(b))?;
            Some(v.insert(RegFile::new(block)))
        }
    }
}

/// EVT_SEM semantics (P9.1 §6, docs/references/driver.md §6.4) of the write
/// `out` of `written` to the EVT_SEM file `rf`: SET stores, INC adds, DEC
/// subtracts (32-bit wrapping), all visible in SEM_READ. The semaphore's
/// index, old and new value when SEM_READ changed; `offsets` memoizes
/// SEM_READ's offset by index (every EVT_SEM region shares one map).
fn semaphore_update(
    rf: &mut RegFile<'static>,
    offsets: &mut Vec<Option<u32>>,
    out: &csr::WriteOutcome<'static>,
    written: u32,
) -> Option<(u32, u32, u32)> {
    let index = out.reg.index()?;
    let i = usize::try_from(index).ok()?;
    let read_off = match offsets.get(i) {
        Some(Some(off)) => u64::from(*off),
        _ => {
            let off = rf.map().find("SEM_READ", Some(index))?;
            if let Ok(off32) = u32::try_from(off) {
                if offsets.len() <= i {
                    offsets.resize(i + 1, None);
                }
                offsets[i] = Some(off32);
            }
            off
        }
    };
    let old = rf.value(read_off).ok()?;
    let new = match (out.reg.spec().name(), out.delta) {
        ("SEM_SET", _) => written,
        (_, Some(Delta::Inc(n))) => old.wrapping_add(n),
        (_, Some(Delta::Dec(n))) => old.wrapping_sub(n),
        _ => return None,
    };
    rf.hw_set(read_off, new).ok()?;
    Some((index, old, new))
}

/// What a register write did ([`Fabric::csr_write_unnamed`]); the
/// register's name only when asked for.
pub(super) struct WriteDone {
    pub(super) register: Option<String>,
    pub(super) old: u32,
    pub(super) new: u32,
    pub(super) ignored: u32,
    pub(super) read_only: bool,
}

/// The fabric as a DMA engine sees it (`sim_core::Bus`): memory bytes, and
/// 4-byte writes into register blocks (semaphore increments; writes to
/// engine blocks are posted until the writing engine's step ends).
pub(super) struct DmaBus<'a> {
    pub(super) fabric: &'a mut Fabric,
    pub(super) posted: &'a mut Vec<(u64, u32, u16)>,
    /// The engine stepping (the bus master of register accesses).
    pub(super) engine: u16,
    /// Its current cycle.
    pub(super) now: Cycle,
}

impl DmaBus<'_> {
    /// A DMA write of one register: into an engine block it is posted
    /// (applied after the writing engine's step); elsewhere it applies now.
    fn write_reg(&mut self, addr: u64, t: RegTarget, value: u32) -> Result<(), AccessError> {
        if self.fabric.engine_block(t.region).is_some() {
            self.posted.push((addr, value, self.engine));
            return Ok(());
        }
        let prev = self.enter();
        let w = self.fabric.csr_write_unnamed(addr, t, value, false);
        if let Some(prev) = prev {
            if let Ok(w) = &w {
                self.fabric.log_access(true, addr, t, value, w.old, w.new);
            }
            self.fabric.master = prev;
        }
        w.map(|_| ()).map_err(|e| access_error(e, addr))
    }

    /// A DMA copy into a register read `[src, src + len)`: in timing-only
    /// mode, bytes no copy moved there steer the device (a semaphore, a
    /// doorbell) as control data does, so the run may differ from the run
    /// with payload from here (docs/user-guide.md §11, "Timing-only mode").
    fn note_register_source(&mut self, src: u64, len: u64) {
        self.note_engine_control_read(src, len, "DMA copy into a register");
    }

    /// This engine read `[addr, addr + len)` as control data (`what`): in
    /// timing-only mode, bytes no copy moved there raise stale control.
    fn note_engine_control_read(&mut self, addr: u64, len: u64, what: &str) {
        let engine = self.engine;
        self.fabric
            .memory
            .note_control_read(&self.fabric.map, addr, len, self.now.0, || {
                format!("eng{engine} {what}")
            });
    }

    /// Before a register access while recording: the engine is the master.
    pub(super) fn enter(&mut self) -> Option<Master> {
        let rec = self.fabric.rec.as_deref_mut()?;
        rec.cycle = self.now.0;
        Some(std::mem::replace(
            &mut self.fabric.master,
            Master::Engine(self.engine),
        ))
    }
}

pub(super) fn access_error(e: BusFault, addr: u64) -> AccessError {
    AccessError {
        addr,
        message: e.to_string(),
    }
}

impl DmaBus<'_> {
    /// [`Bus::write_entry16`] past the plain-memory path: through `write`
    /// (a store to create, a register aperture, a fault). Out of line, so
    /// that the completion write of every packet stays small.
    #[cold]
    #[inline(never)]
    fn write_entry16_full(&mut self, addr: u64, word0: u32) -> Result<(), AccessError> {
        self.write(addr, &sim_core::entry16(word0))
    }
}

impl Bus for DmaBus<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), AccessError> {
        match self.fabric.memory.read(&self.fabric.map, addr, buf) {
            Ok(()) => {
                if self.fabric.race.is_some() {
                    if let Some((fill, parts)) = self.uninit_parts(addr, buf.len() as u64) {
                        // Elements count from the read's first byte.
                        let element = fill.as_slice();
                        let size = element.len().max(1);
                        for (a, b) in parts {
                            let (i, j) = ((a - addr) as usize, (b - addr) as usize);
                            for (k, byte) in buf.iter_mut().enumerate().take(j).skip(i) {
                                *byte = element.get(k % size).copied().unwrap_or(0xFF);
                            }
                        }
                    }
                    self.race_access(addr, buf.len() as u64, false);
                }
                Ok(())
            }
            Err(BusFault::NotMemory { .. }) if buf.len() == 4 => {
                let t = self
                    .fabric
                    .reg_target(addr)
                    .map_err(|e| access_error(e, addr))?
                    .ok_or_else(|| AccessError {
                        addr,
                        message: "not a register".into(),
                    })?;
                let prev = self.enter();
                let v = self.fabric.csr_read(addr, t);
                if let (Some(prev), Ok(v)) = (prev, &v) {
                    let after = self
                        .fabric
                        .regs
                        .get(&t.region)
                        .and_then(|f| f.peek(t.offset).ok())
                        .unwrap_or(*v);
                    self.fabric.log_access(false, addr, t, *v, *v, after);
                    self.fabric.master = prev;
                }
                let v = v.map_err(|e| access_error(e, addr))?;
                buf.copy_from_slice(&v.to_le_bytes());
                Ok(())
            }
            Err(e) => Err(access_error(e, addr)),
        }
    }

    fn write_entry16(&mut self, addr: u64, word0: u32) -> Result<(), AccessError> {
        // Plain memory at hand: stored straight from the word, then seen by
        // the race detector as `write` shows it a write.
        if self.fabric.memory.write_entry16(addr, word0) {
            if self.fabric.race.is_some() {
                self.race_access(addr, 16, true);
            }
            return Ok(());
        }
        self.write_entry16_full(addr, word0)
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError> {
        // A register (a semaphore increment, a doorbell) is found by the
        // cached register decode first; memory goes the memory path.
        // (Only a 4-byte write can be one: the decode is not made for the
        // 16-byte completion entries.)
        if let [b0, b1, b2, b3] = data
            && let Ok(Some(t)) = self.fabric.reg_target(addr)
        {
            let value = u32::from_le_bytes([*b0, *b1, *b2, *b3]);
            return self.write_reg(addr, t, value);
        }
        match self.fabric.memory.write(&self.fabric.map, addr, data) {
            Ok(()) => {
                if self.fabric.race.is_some() {
                    self.race_access(addr, data.len() as u64, true);
                }
                Ok(())
            }
            Err(BusFault::NotMemory { .. }) if data.len() == 4 => {
                let value = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                let t = self
                    .fabric
                    .reg_target(addr)
                    .map_err(|e| access_error(e, addr))?
                    .ok_or_else(|| AccessError {
                        addr,
                        message: "not a register".into(),
                    })?;
                self.write_reg(addr, t, value)
            }
            Err(e) => Err(access_error(e, addr)),
        }
    }

    fn copy(&mut self, src: u64, dst: u64, len: u64) -> Result<(), AccessError> {
        // Memory to a register (a 4-byte semaphore increment as the last
        // packet of a transfer), found by the cached register decode.
        if len <= 8
            && let Ok(Some(t)) = self.fabric.reg_target(dst)
            && matches!(self.fabric.reg_target(src), Ok(None))
        {
            let mut buf = [0u8; 8];
            let n = len as usize;
            self.read(src, &mut buf[..n])?;
            self.note_register_source(src, len);
            // A 4-byte write is the register's, decoded above; any other
            // size goes the way `write` takes it.
            return match buf[..n] {
                [b0, b1, b2, b3] => self.write_reg(dst, t, u32::from_le_bytes([b0, b1, b2, b3])),
                _ => self.write(dst, &buf[..n]),
            };
        }
        match self.fabric.memory.copy(&self.fabric.map, src, dst, len) {
            Ok(()) => {
                if self.fabric.race.is_some() {
                    // A copy of bytes: one byte, or the NaN of the element
                    // type the ringing word moves (a transpose's element
                    // pieces), elements counted from the copy's first byte
                    // as a typed read counts them.
                    if let Some((fill, parts)) = self.uninit_parts(src, len) {
                        let element = fill.as_slice();
                        for (a, b) in parts {
                            let at = dst + (a - src);
                            let _ = match element {
                                [byte] => {
                                    self.fabric.memory.fill(&self.fabric.map, at, b - a, *byte)
                                }
                                _ => {
                                    let size = element.len().max(1) as u64;
                                    let bytes: Vec<u8> = (a - src..b - src)
                                        .map(|k| {
                                            element
                                                .get((k % size) as usize)
                                                .copied()
                                                .unwrap_or(0xFF)
                                        })
                                        .collect();
                                    self.fabric.memory.write(&self.fabric.map, at, &bytes)
                                }
                            };
                        }
                    }
                    self.race_access(src, len, false);
                    self.race_access(dst, len, true);
                }
                Ok(())
            }
            // A copy into a register aperture (a 4-byte semaphore increment
            // as the last packet of a transfer): through `write`.
            Err((BusFault::NotMemory { .. }, at)) if at == dst && len <= 8 => {
                let mut buf = [0u8; 8];
                let n = len as usize;
                self.read(src, &mut buf[..n])?;
                self.note_register_source(src, len);
                self.write(dst, &buf[..n])
            }
            Err((e, at)) => Err(access_error(e, at)),
        }
    }

    fn reserve_bandwidth(&mut self, addr: u64, len: u64, start: Cycle) -> Cycle {
        self.fabric.hbm.reserve(addr, len, start)
    }

    fn stale(&self, addr: u64, len: u64) -> bool {
        self.fabric
            .memory
            .stale_byte_in(&self.fabric.map, addr, len)
            .is_some()
    }

    fn mark_stale(&mut self, addr: u64, len: u64) {
        self.fabric
            .memory
            .mark_stale_at(&self.fabric.map, addr, len);
    }

    fn note_control_read(&mut self, addr: u64, len: u64) {
        self.note_engine_control_read(addr, len, "descriptor prefetch");
    }

    fn read_as(&mut self, nan: Option<sim_core::ElementNan>) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().read_as = nan;
        }
    }

    fn packet_scope(&mut self, scope: Option<sim_core::PacketScope>) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().packet_scope(self.engine, scope);
        }
    }

    /// Only the race detector takes packet scopes.
    fn observes_packets(&self) -> bool {
        self.fabric.race.is_some()
    }

    fn partition_stride(&self, addr: u64) -> Option<u64> {
        let map = &self.fabric.map;
        let id = map.decode(addr).region?;
        map.region(id).partitions.as_ref().map(|p| p.stride_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `engN.<path>` read from the name alone, the definition
    /// [`engine_blocks`] follows through the region tree.
    fn by_name(name: &str) -> Option<EngineBlockRef> {
        let (num, path) = name.strip_prefix("eng")?.split_once('.')?;
        let engine = num.parse::<u16>().ok()?;
        let (broadcast, path) = match path.strip_prefix("bcast.") {
            Some(p) => (true, p),
            None => (false, path),
        };
        Some(EngineBlockRef {
            engine,
            block: UnitBlock::from_suffix(path)?,
            broadcast,
        })
    }

    #[test]
    fn engine_blocks_are_those_the_names_say() {
        let mut text = soc_map::TRN2_MAP_JSON.to_string();
        // An engine that is a single region, and names that look like
        // engines but are not.
        text = text.replacen(
            "\"regions\": [",
            "\"regions\": [{\"name\": \"eng200\", \"base\": \"0x7f000000000\", \"size\": \"0x100000\", \"include\": [\"udma_unit\"]}, \
             {\"name\": \"engx\", \"base\": \"0x7f100000000\", \"size\": \"0x100000\", \"include\": [\"udma_unit\"]}, \
             {\"name\": \"eng\", \"base\": \"0x7f200000000\", \"size\": \"0x100000\", \"include\": [\"udma_unit\"]},",
            1,
        );
        for map in [
            soc_map::trn2().expect("built-in map"),
            SocMap::from_json(&text, "t.json").expect("map with extra engines"),
        ] {
            let found = engine_blocks(&map);
            assert_eq!(found.len(), map.regions.len());
            for (id, r) in map.regions.iter().enumerate() {
                assert_eq!(found[id], by_name(&r.name), "{}", r.name);
            }
            assert!(found.iter().flatten().count() > 4000);
        }
    }

    /// A fresh cache is zeroed memory: no entry of it may be taken for a
    /// cached register, address 0 (the start of HBM) included.
    #[test]
    fn an_empty_register_cache_entry_matches_no_address() {
        let dev = Device::trn2().expect("built-in device");
        let fabric = &dev.fabric;
        for addr in [0u64, 4, 0x100, !3] {
            let c = fabric.reg_cache.slot(addr).expect("slot");
            assert_eq!(c.get().not_addr, 0, "{addr:#x}: fresh entry is zero");
            assert!(
                matches!(fabric.reg_target(addr), Ok(None) | Err(_)),
                "{addr:#x}"
            );
        }
        // A register is cached under its address and found again.
        let q = fabric.map.by_name("eng0.m2s.q0").expect("queue region");
        let addr = fabric.map.region(q).base;
        let first = fabric
            .reg_target(addr)
            .expect("decodes")
            .expect("a register");
        let e = fabric.reg_cache.slot(addr).expect("slot").get();
        assert_eq!(
            (e.not_addr, e.region, e.offset),
            (!addr, first.region, first.offset)
        );
        let again = fabric
            .reg_target(addr)
            .expect("decodes")
            .expect("a register");
        assert_eq!((again.region, again.offset), (first.region, first.offset));
    }

    /// The engine table is sized once for the map's engines (128 SENG and
    /// 4 H2T units), not for its regions: the first engine built reserves
    /// room for all of them and no more.
    #[test]
    fn the_engine_table_holds_the_engines_not_the_regions() {
        let mut dev = Device::trn2().expect("built-in device");
        assert_eq!(dev.engine_count(), 132);
        dev.engine_mut(3);
        assert_eq!(dev.engines.len(), 4);
        assert_eq!(dev.engines.capacity(), 132);
        dev.engine_mut(131);
        assert_eq!(dev.engines.capacity(), 132, "no reallocation");
    }
}
