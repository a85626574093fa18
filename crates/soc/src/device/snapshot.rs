//! Copies of a whole device, for the debugger's checkpoints
//! (docs/user-guide.md §12 "Going back"): every register file, engine,
//! firmware core and memory, with the memories' pages shared until either
//! copy writes one ([`mem::SparseMemory::snapshot`]). The copy runs on
//! exactly as the original would: the device is deterministic.

use super::{Device, Fabric, SinkSlot};

impl Fabric {
    fn try_clone(&mut self) -> Option<Fabric> {
        // The register-access log and waveforms write one pass of the run
        // to a file; the race detector's history is not copied either.
        if self.rec.is_some() || self.race.is_some() {
            return None;
        }
        Some(Fabric {
            map: self.map.clone(),
            catalog: self.catalog,
            memory: self.memory.snapshot(),
            regs: self.regs.clone(),
            events: self.events.clone(),
            engine_blocks: self.engine_blocks.clone(),
            reg_cache: self.reg_cache.clone(),
            mem_ranges: self.mem_ranges.clone(),
            sem_cores: self.sem_cores.clone(),
            sem_touched: self.sem_touched,
            master: self.master,
            rec: None,
            hbm: self.hbm.clone(),
            trace: self.trace,
            now: self.now,
            step_order: self.step_order,
            sem_read_offsets: self.sem_read_offsets.clone(),
            race: None,
        })
    }
}

impl Device {
    /// A copy of the whole device that runs on independently: registers,
    /// engines (queues, packets in flight, pending events), firmware cores,
    /// memories and time. The memories' pages are shared, not copied, until
    /// either device writes one (copy on write), so a copy costs the
    /// device's state but not its bytes; it takes `&mut self` to mark the
    /// pages shared. The copy has no event sink ([`Device::set_event_sink`]).
    ///
    /// `None` when a part cannot be copied: the register-access log or the
    /// waveforms are on (they record one pass of the run:
    /// [`Device::record_reg_log`], [`Device::record_waves`]), or
    /// the race detector is ([`Device::detect_races`]).
    pub fn try_clone(&mut self) -> Option<Device> {
        Some(Device {
            fabric: self.fabric.try_clone()?,
            unit_maps: self.unit_maps,
            timing: std::sync::Arc::clone(&self.timing),
            engines: self.engines.clone(),
            engine_factory: self.engine_factory.clone(),
            fw_runs: self.fw_runs,
            wake: self.wake.clone(),
            now: self.now,
            trace: self.trace,
            posted: self.posted.clone(),
            cores: self.cores.clone(),
            fw_next: self.fw_next.clone(),
            activity: self.activity,
            fw_seen: self.fw_seen.clone(),
            parked: self.parked.clone(),
            parked_mask: self.parked_mask,
            parked_on_memory: self.parked_on_memory,
            park_needs: self.park_needs.clone(),
            engine_cores: self.engine_cores.clone(),
            unparked: self.unparked,
            targets: self.targets.clone(),
            doorbell_epochs: self.doorbell_epochs.clone(),
            bare_run_limit_cycles: self.bare_run_limit_cycles,
            sem_epoch: self.sem_epoch,
            cur_key: self.cur_key,
            sink: SinkSlot(None),
            last_partitioned: self.last_partitioned.clone(),
            schedule_seed: self.schedule_seed,
        })
    }

    /// About how many host bytes a copy ([`Device::try_clone`]) holds
    /// besides the memory pages: the engines, firmware cores and register
    /// files instantiated (their inline size and register values), the
    /// events held. An estimate for the debugger's checkpoint budget, not
    /// an allocator count.
    pub fn state_bytes(&self) -> u64 {
        let engines = self.engines.iter().flatten().count() * size_of::<udma::Engine>();
        let cores = self.cores.iter().flatten().count() * size_of::<q7::Q7Core>();
        let regs: usize = self
            .fabric
            .regs
            .values()
            .map(|r| size_of::<csr::RegFile<'static>>() + r.iter().count() * size_of::<u32>())
            .sum();
        let events = self.fabric.events.len() * size_of::<super::DeviceEvent>();
        (size_of::<Device>() + engines + cores + regs + events) as u64
    }

    /// The identity of every allocated memory page (the address of its
    /// bytes): pages a device shares with its copies ([`Device::try_clone`])
    /// have the same identity, so the host memory a set of copies holds is
    /// one page ([`mem::PAGE_BYTES`]) per distinct identity.
    pub fn page_ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.fabric.memory.page_ids()
    }
}
