//! The device's own register path (docs/references/design.md §2–3): where
//! [`Device::read32`] and [`Device::write32`] land (the firmware's polls,
//! doorbells and ring set-up, the host's register accesses), decoded once
//! per address, an engine block's register without a catalog search.

use super::*;

/// Entries of the [`TargetCache`] (direct-mapped by address).
const TARGET_CACHE_ENTRIES: usize = 1024;

/// Register targets already decoded for [`Device::read32`] and
/// [`Device::write32`] (the firmware's polls, doorbells and ring set-up,
/// the host's register writes), by address: the map and the CSR maps never
/// change for a device, so a decoded register stays valid.
///
/// Beside it, the engine block region the last decode found: a ring's
/// set-up writes several registers of one block in a row, each address
/// new to the cache, and the next one is usually in the same region.
#[derive(Clone)]
pub(super) struct TargetCache(Box<[(u64, Decoded)]>, Option<RegionId>);

/// A decoded register of the [`TargetCache`]: where it is and, in an
/// engine block, which block of which engine (the region's
/// `Fabric::engine_block`) and whether it is a tail-pointer doorbell
/// (TDRTP_INC, RDRTP_INC: [`Device::engine_head_epoch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Decoded {
    pub(super) target: RegTarget,
    pub(super) engine: Option<EngineBlockRef>,
    pub(super) tail_doorbell: bool,
}

impl Default for TargetCache {
    fn default() -> Self {
        let empty = (
            u64::MAX,
            Decoded {
                target: RegTarget {
                    region: 0,
                    offset: 0,
                },
                engine: None,
                tail_doorbell: false,
            },
        );
        TargetCache(vec![empty; TARGET_CACHE_ENTRIES].into_boxed_slice(), None)
    }
}

/// `id` when it is the deepest region containing `addr` (as
/// [`SocMap::deepest`] would say): it contains `addr` and none of its
/// children does (siblings are disjoint and sorted by base, so any region
/// containing `addr` is `id`, one of its ancestors or inside a child).
fn deepest_if(map: &SocMap, id: RegionId, addr: u64) -> Option<RegionId> {
    let r = map.regions.get(id)?;
    if !r.contains(addr) {
        return None;
    }
    let i = r
        .children
        .partition_point(|&c| map.regions.get(c).is_some_and(|c| c.base <= addr));
    let inside = i
        .checked_sub(1)
        .and_then(|i| r.children.get(i))
        .and_then(|&c| map.regions.get(c))
        .is_some_and(|c| c.contains(addr));
    (!inside).then_some(id)
}

impl std::fmt::Debug for TargetCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TargetCache")
    }
}

/// The [`TargetCache`] entry of an (aligned) address: engine register
/// blocks repeat every 1 MiB, so every address bit is hashed in.
fn target_slot(addr: u64) -> usize {
    ((addr >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % TARGET_CACHE_ENTRIES
}

/// The CSR map of an engine block kind.
fn unit_map(maps: &UnitMaps, block: UnitBlock) -> &'static CsrMap {
    match block {
        UnitBlock::M2s => maps.m2s,
        UnitBlock::M2sQ(_) => maps.m2s_q,
        UnitBlock::S2m => maps.s2m,
        UnitBlock::S2mQ(_) => maps.s2m_q,
        UnitBlock::Gen => maps.udma_gen,
        UnitBlock::GenEx => maps.gen_ex,
        UnitBlock::SdmaApp => maps.sdma_app,
        UnitBlock::Notific => maps.notific,
    }
}

impl Device {
    /// Where a register access at `addr` lands, as
    /// [`Device::reg_target`] says, through the device's [`TargetCache`].
    pub(super) fn reg_target_of(&mut self, addr: u64) -> Result<Option<RegTarget>, BusFault> {
        self.reg_decoded(addr).map(|d| d.map(|d| d.target))
    }

    /// [`Device::reg_target_of`] with the engine block the target is in,
    /// if any: what the register path asks of every access, found once
    /// per address.
    #[inline]
    pub(super) fn reg_decoded(&mut self, addr: u64) -> Result<Option<Decoded>, BusFault> {
        let slot = target_slot(addr);
        if addr & 3 == 0
            && let Some(&(a, d)) = self.targets.0.get(slot)
            && a == addr
        {
            return Ok(Some(d));
        }
        self.reg_decode(addr, slot)
    }

    /// A [`TargetCache`] miss: the decode, kept when `addr` is an aligned
    /// register.
    #[inline(never)]
    fn reg_decode(&mut self, addr: u64, slot: usize) -> Result<Option<Decoded>, BusFault> {
        let t = match self.engine_reg_target(addr) {
            Some(t) => {
                self.targets.1 = Some(t.region);
                t
            }
            None => match self.fabric.reg_target(addr)? {
                Some(t) => t,
                None => return Ok(None),
            },
        };
        let engine = self.fabric.engine_block(t.region);
        let d = Decoded {
            target: t,
            engine,
            tail_doorbell: engine.is_some_and(|r| self.is_tail_doorbell(r.block, t.offset)),
        };
        if addr & 3 == 0
            && let Some(e) = self.targets.0.get_mut(slot)
        {
            *e = (addr, d);
        }
        Ok(Some(d))
    }

    /// [`Device::write32_unreported`] of a register of engine block `r`
    /// (not a broadcast mirror) while nothing records and no race
    /// detector watches: what the general path does then — the owners
    /// told, the engine's write, its doorbell steps, an ignored write's
    /// event, its next event — without the report nobody reads
    /// (docs/firmware.md §Stalls for the epochs).
    pub(super) fn engine_write_quiet(
        &mut self,
        addr: u64,
        d: Decoded,
        r: EngineBlockRef,
        value: u32,
    ) -> Result<(), BusFault> {
        self.touch_cores(self.engine_owners(r.engine));
        let (now, t) = (self.now, d.target);
        let e = self.engine_mut(r.engine);
        let sw_before = e.head_epoch().wrapping_sub(e.crhp_moves());
        let out = e.mmio_write(r.block, t.offset, value, now);
        let steps = e
            .head_epoch()
            .wrapping_sub(e.crhp_moves())
            .wrapping_sub(sw_before);
        let next = e.next_event();
        if d.tail_doorbell {
            let i = usize::from(r.engine);
            if self.doorbell_epochs.len() <= i {
                self.doorbell_epochs.resize(i + 1, 0);
            }
            self.doorbell_epochs[i] = self.doorbell_epochs[i].wrapping_add(steps);
        }
        self.collect_engine_log(r.engine);
        let Some(out) = out else {
            return Err(self.fabric.no_register(addr, t));
        };
        if self.fabric.trace && (out.read_only || out.ignored != 0) {
            self.fabric.events.push(DeviceEvent::IgnoredWrite {
                region: self.fabric.map.name(t.region).to_string(),
                register: out.reg.name(),
                written: Hex32(value),
                ignored: Hex32(out.ignored),
                read_only: out.read_only,
                cycle: now.0,
            });
        }
        if self.wake.get(r.engine) != next {
            self.wake.set(r.engine, next);
        }
        Ok(())
    }

    /// The register of an engine block at `addr`, decoded as the fabric
    /// does but with the block's CSR map taken from the unit maps (the
    /// same map: the region names the unit's block) instead of a catalog
    /// search by name. `None` when `addr` is not a register of an engine
    /// block (a hole, misaligned, elsewhere): the full decode says what.
    fn engine_reg_target(&self, addr: u64) -> Option<RegTarget> {
        let map = &self.fabric.map;
        let id = match self.targets.1.and_then(|last| deepest_if(map, last, addr)) {
            Some(id) => id,
            None => map.deepest(addr)?,
        };
        let r = self.fabric.engine_block(id)?;
        let region = map.region(id);
        let has_regs = matches!(region.kind, RegionKind::Csr)
            || matches!(region.kind, RegionKind::Container) && region.block.is_some();
        if !has_regs || region.block.as_deref() != Some(r.block.map_name()) {
            return None;
        }
        let offset = addr - region.base;
        unit_map(self.unit_maps, r.block).element_at(offset).ok()?;
        Some(RegTarget { region: id, offset })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every address of the engine blocks of a few engines (their
    /// broadcast mirrors too) decodes through the device's register path
    /// as through the fabric's full decode: the same target, or the same
    /// fault (holes, misaligned addresses, gaps between blocks), also when
    /// asked again (from the cache).
    #[test]
    fn the_register_path_decodes_as_the_fabric_does() {
        let mut d = Device::trn2().unwrap();
        let map = d.map().clone();
        let mut addrs = Vec::new();
        for engine in [0u16, 17, 131] {
            let root = map.by_name(&format!("eng{engine}")).unwrap();
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let r = map.region(id);
                stack.extend(&r.children);
                let window = 0x400.min(r.size_bytes);
                for off in (0..window).chain(r.size_bytes - window.min(0x40)..r.size_bytes + 8) {
                    if off % 2 == 0 {
                        addrs.push(r.base + off);
                    }
                }
            }
        }
        let (mut regs, mut engine_regs) = (0, 0);
        for pass in 0..2 {
            for &a in &addrs {
                let full = d.fabric.reg_target(a);
                let ours = d.reg_target_of(a);
                assert_eq!(ours, full, "{a:#x} (pass {pass})");
                if pass == 0 {
                    regs += usize::from(matches!(full, Ok(Some(_))));
                    engine_regs += usize::from(d.engine_reg_target(a).is_some());
                }
            }
        }
        // Every register found is an engine block's, which the engine
        // decode answered without the full one.
        assert!(regs > 1000);
        assert_eq!(engine_regs, regs);
        // The last region found, tried first: in other orders (into and
        // out of children, across blocks and engines), on a device whose
        // cache has seen none of the addresses.
        let mut fresh = Device::trn2().unwrap();
        let n = addrs.len();
        let orders = (0..n)
            .rev()
            .chain((0..n).map(|i| (i * 7919) % n))
            .chain((0..n).map(|i| (i / 2) + (i % 2) * (n / 2)));
        for (k, i) in orders.enumerate() {
            let a = addrs[i];
            if k.is_multiple_of(3) {
                fresh.targets = TargetCache::default();
            }
            let full = fresh.fabric.reg_target(a);
            assert_eq!(fresh.reg_target_of(a), full, "{a:#x} (order pass)");
        }
    }

    /// Register writes keep the wake-up tree as a tree rebuilt from every
    /// engine's next event would be (a write that leaves an engine's next
    /// event where it was does not rewrite its path): every leaf and the
    /// winner, with and without a tie seed.
    #[test]
    fn register_writes_keep_the_wake_tree_exact() {
        for seed in [None, Some(7)] {
            let mut d = Device::trn2().unwrap();
            d.set_schedule_seed(seed);
            let map = d.map().clone();
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            let mut writes = 0;
            for engine in [0u16, 5, 17, 130] {
                let root = map.by_name(&format!("eng{engine}")).unwrap();
                let mut stack = vec![root];
                while let Some(id) = stack.pop() {
                    let r = map.region(id);
                    stack.extend(&r.children);
                    let Some(b) = d.fabric.engine_block(id) else {
                        continue;
                    };
                    if b.broadcast {
                        continue;
                    }
                    let block_map = unit_map(d.unit_maps, b.block);
                    for reg in block_map.elements() {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Mostly zero: enables and rings vary.
                        let v = if x.is_multiple_of(3) {
                            (x >> 20) as u32
                        } else {
                            0
                        };
                        let _ = d.write32(r.base + reg.offset(), v);
                        writes += 1;
                        let mut fresh = WakeTree::default();
                        fresh.set_tie_seed(seed);
                        for e in d.engines() {
                            let next = e.next_event();
                            assert_eq!(d.wake.get(e.id()), next, "engine {}", e.id());
                            fresh.set(e.id(), next);
                        }
                        assert_eq!(d.wake.peek(), fresh.peek());
                    }
                }
            }
            assert!(writes > 400);
        }
    }

    /// The firmware's quiet engine-register write
    /// ([`Device::write32_unreported`] while nothing records) does what
    /// the general path does: for every register of a few engines'
    /// blocks (random values: enables, rings, doorbells, read-only and
    /// ignored bits), holes, misaligned addresses and broadcast mirrors,
    /// the same result, events, registers, head epochs, wake-ups and
    /// change count — and the same run afterwards.
    #[test]
    fn quiet_engine_writes_do_what_the_general_path_does() {
        let mut quiet = Device::trn2().unwrap();
        let mut plain = Device::trn2().unwrap();
        let map = quiet.map().clone();
        let mut addrs = Vec::new();
        for engine in [0u16, 3, 16, 17, 130] {
            let root = map.by_name(&format!("eng{engine}")).unwrap();
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let r = map.region(id);
                stack.extend(&r.children);
                if let Some(b) = quiet.fabric.engine_block(id) {
                    for reg in unit_map(quiet.unit_maps, b.block).elements() {
                        addrs.push(r.base + reg.offset());
                    }
                }
                // A hole past the block's registers and a misaligned one.
                addrs.extend([r.base + r.size_bytes - 4, r.base + 2]);
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut quiet_writes = 0;
        for pass in 0..3 {
            for &a in &addrs {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = match x % 5 {
                    0 => 0,
                    1 => 1,
                    2 => (x >> 40) as u32,
                    3 => (x >> 16) as u32,
                    _ => 0x00FF_FFFF,
                };
                let direct = matches!(quiet.reg_decoded(a), Ok(Some(d)) if d.engine.is_some_and(|r| !r.broadcast));
                quiet_writes += usize::from(direct);
                let q = quiet.write32_unreported(a, v);
                let p = plain.write32_done(a, v, false).map(|_| ());
                assert_eq!(q, p, "{a:#x} = {v:#x} (pass {pass})");
            }
            assert_eq!(quiet.activity, plain.activity);
            assert_eq!(quiet.doorbell_epochs, plain.doorbell_epochs);
            assert_eq!(quiet.events(), plain.events());
            assert_eq!(quiet.csr_snapshot(), plain.csr_snapshot());
            for e in plain.engines() {
                let id = e.id();
                assert_eq!(quiet.engine_head_epoch(id), plain.engine_head_epoch(id));
                assert_eq!(quiet.wake.get(id), plain.wake.get(id), "engine {id}");
            }
            assert_eq!(quiet.wake.peek(), plain.wake.peek());
            let limit = Some(Cycle(quiet.now().0 + 5_000));
            assert_eq!(quiet.run(limit), plain.run(limit));
            assert_eq!(quiet.now(), plain.now());
            assert_eq!(quiet.take_events(), plain.take_events());
        }
        assert!(quiet_writes > 1000, "{quiet_writes}");
    }
}
