//! One Trainium2 device: the address map, its memories and its register
//! blocks, reached by SoC address as a bus master would (DESIGN §2–3).
//!
//! Register blocks are instantiated on first access (a device has ~9,000 of
//! them); an untouched block reads as its reset values. Side effects of
//! register writes are routed to the block's owner: the EVT_SEM block applies
//! semaphore set/increment/decrement here; doorbells and command pulses are
//! recorded as [`DeviceEvent`]s for the engine models to consume.

use std::collections::BTreeMap;

use csr::{Catalog, CsrAccessError, CsrMap, Delta, RegFile};
use serde::Serialize;
use soc_map::{Hex, Hex32, RegionId, RegionKind, SocMap};

use crate::fault::BusFault;
use crate::memory::DeviceMemory;

/// A side effect a register access had, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DeviceEvent {
    /// A write-to-increment doorbell (e.g. `TDRTP_INC`).
    Doorbell {
        /// Register block region, e.g. `eng0.m2s.q0`.
        region: String,
        /// Register name.
        register: String,
        /// The increment.
        increment: u32,
    },
    /// WO command bits written as 1 (e.g. `CHANGE_STATE`, `Q_SW_CTRL`).
    Pulse {
        /// Register block region.
        region: String,
        /// Register name.
        register: String,
        /// The bits pulsed.
        bits: Hex32,
    },
    /// A semaphore changed through its SET/INC/DEC window.
    Semaphore {
        /// The EVT_SEM region, e.g. `tpb0.evt_sem`.
        region: String,
        /// Semaphore index.
        index: u32,
        /// Value before.
        old: u32,
        /// Value after.
        new: u32,
    },
    /// A write that could not change what it tried to (read-only register,
    /// or read-only/reserved bits).
    IgnoredWrite {
        /// Register block region.
        region: String,
        /// Register name.
        register: String,
        /// Value written.
        written: Hex32,
        /// Bits that did not take.
        ignored: Hex32,
        /// The whole register is read-only.
        read_only: bool,
    },
}

/// Where a 32-bit register access lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegTarget {
    /// The register block's region.
    pub region: RegionId,
    /// Byte offset inside the block.
    pub offset: u64,
}

/// The result of a register write, for callers that report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegWrite {
    /// Region name.
    pub region: String,
    /// Register name (`SEM_INC[3]`).
    pub register: String,
    /// Value before.
    pub old: u32,
    /// Value after.
    pub new: u32,
    /// Bits the write could not change.
    pub ignored: u32,
    /// The register is read-only: nothing changed.
    pub read_only: bool,
}

/// A CSR snapshot: every register that differs from reset, grouped by block
/// in address order (DESIGN §1: snapshot-test CSR state).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CsrSnapshot {
    /// Blocks with at least one register away from reset, by address.
    pub blocks: Vec<BlockSnapshot>,
}

/// The changed registers of one block instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockSnapshot {
    /// Region name, e.g. `eng0.m2s.q0`.
    pub region: String,
    /// CSR map name.
    pub block: String,
    /// Region base address.
    pub base: Hex,
    /// Register name → value, for registers that differ from reset.
    pub registers: BTreeMap<String, Hex32>,
}

impl CsrSnapshot {
    /// YAML text, stable and ordered (for `--csr-snapshot FILE.yaml`).
    pub fn to_yaml(&self) -> String {
        let mut out = String::from("# neuron-sim CSR snapshot: registers that differ from reset\n");
        if self.blocks.is_empty() {
            out.push_str("blocks: []\n");
            return out;
        }
        out.push_str("blocks:\n");
        for b in &self.blocks {
            out.push_str(&format!(
                "  - region: {}\n    block: {}\n    base: \"{}\"\n    registers:\n",
                b.region, b.block, b.base
            ));
            for (name, value) in &b.registers {
                out.push_str(&format!("      \"{name}\": \"{value}\"\n"));
            }
        }
        out
    }
}

/// One simulated device.
#[derive(Debug)]
pub struct Device {
    map: SocMap,
    catalog: &'static Catalog,
    memory: DeviceMemory,
    regs: BTreeMap<RegionId, RegFile<'static>>,
    events: Vec<DeviceEvent>,
}

/// Why a device could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

impl Device {
    /// The Trn2 device with the built-in maps.
    pub fn trn2() -> Result<Self, DeviceError> {
        let map = soc_map::trn2().map_err(|e| DeviceError(e.to_string()))?;
        let catalog = csr::catalog().map_err(|e| DeviceError(e.to_string()))?;
        Self::new(map, catalog)
    }

    /// A device from a map and a CSR catalog; every `block` the map names
    /// must exist in the catalog.
    pub fn new(map: SocMap, catalog: &'static Catalog) -> Result<Self, DeviceError> {
        for r in &map.regions {
            if let Some(b) = &r.block
                && catalog.block(b).is_none()
            {
                return Err(DeviceError(format!(
                    "soc map: region `{}` names CSR block `{b}`, which is not in csr-maps/",
                    r.name
                )));
            }
        }
        Ok(Self {
            map,
            catalog,
            memory: DeviceMemory::default(),
            regs: BTreeMap::new(),
            events: Vec::new(),
        })
    }

    /// The address map.
    pub fn map(&self) -> &SocMap {
        &self.map
    }

    /// The CSR catalog.
    pub fn catalog(&self) -> &'static Catalog {
        self.catalog
    }

    /// The CSR map of a region's register block, if it has one.
    pub fn block_of(&self, region: RegionId) -> Option<&'static CsrMap> {
        let catalog = self.catalog;
        self.map
            .region(region)
            .block
            .as_deref()
            .and_then(|b| catalog.block(b))
    }

    /// Side effects recorded so far.
    pub fn events(&self) -> &[DeviceEvent] {
        &self.events
    }

    /// Takes the recorded side effects.
    pub fn take_events(&mut self) -> Vec<DeviceEvent> {
        std::mem::take(&mut self.events)
    }

    /// Where a 32-bit register access at `addr` lands, if `addr` is in a
    /// register block. `Ok(None)`: `addr` is memory (or nothing).
    pub fn reg_target(&self, addr: u64) -> Result<Option<RegTarget>, BusFault> {
        let d = self.map.decode(addr);
        let Some(region) = d.region else {
            return Ok(None);
        };
        let r = self.map.region(region);
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
                region: r.name.clone(),
            }),
            Err(CsrAccessError::Hole { .. } | CsrAccessError::OutsideBlock { .. }) => {
                Err(BusFault::NoRegister {
                    addr,
                    region: r.name.clone(),
                    offset,
                })
            }
        }
    }

    fn regfile(&mut self, region: RegionId) -> Option<&mut RegFile<'static>> {
        let block = self.block_of(region)?;
        Some(
            self.regs
                .entry(region)
                .or_insert_with(|| RegFile::new(block)),
        )
    }

    /// Register value without side effects (for debuggers and decoders).
    pub fn peek_reg(&self, t: RegTarget) -> Option<u32> {
        match self.regs.get(&t.region) {
            Some(rf) => rf.value(t.offset).ok(),
            None => self.block_of(t.region).and_then(|b| {
                b.register_at(t.offset)
                    .and_then(|r| b.reset_values().get(r.slot()).copied())
            }),
        }
    }

    /// A 32-bit read as a bus master: register read with its side effects
    /// (read-to-clear), or four little-endian bytes of memory.
    pub fn read32(&mut self, addr: u64) -> Result<u32, BusFault> {
        if let Some(t) = self.reg_target(addr)? {
            let name = self.map.name(t.region).to_string();
            let rf = self.regfile(t.region).ok_or(BusFault::NoRegister {
                addr,
                region: name.clone(),
                offset: t.offset,
            })?;
            return rf
                .read(t.offset)
                .map(|o| o.value)
                .map_err(|_| BusFault::NoRegister {
                    addr,
                    region: name,
                    offset: t.offset,
                });
        }
        let mut raw = [0u8; 4];
        self.memory.read(&self.map, addr, &mut raw)?;
        Ok(u32::from_le_bytes(raw))
    }

    /// A 32-bit write as a bus master. Register writes apply the access
    /// semantics and route side effects; `Ok(Some(..))` reports what the
    /// register did (including a read-only register left unchanged).
    pub fn write32(&mut self, addr: u64, value: u32) -> Result<Option<RegWrite>, BusFault> {
        let Some(t) = self.reg_target(addr)? else {
            self.memory.write(&self.map, addr, &value.to_le_bytes())?;
            return Ok(None);
        };
        let region_name = self.map.name(t.region).to_string();
        let no_reg = || BusFault::NoRegister {
            addr,
            region: region_name.clone(),
            offset: t.offset,
        };
        let rf = self.regfile(t.region).ok_or_else(no_reg)?;
        let out = rf.write(t.offset, value).map_err(|_| no_reg())?;
        let block_name: &'static str = rf.map().block();
        let reg_name = out.reg.name();
        let spec_name = out.reg.spec().name().to_string();
        let index = out.reg.index();
        let report = RegWrite {
            region: region_name.clone(),
            register: reg_name.clone(),
            old: out.old,
            new: out.new,
            ignored: out.ignored,
            read_only: out.read_only,
        };
        if out.read_only || out.ignored != 0 {
            self.events.push(DeviceEvent::IgnoredWrite {
                region: region_name.clone(),
                register: reg_name.clone(),
                written: Hex32(value),
                ignored: Hex32(out.ignored),
                read_only: out.read_only,
            });
        }
        let pulses = out.pulses;
        let delta = out.delta;
        if block_name == "evt_sem" {
            self.semaphore_op(t.region, &spec_name, index, value, delta);
        } else {
            if let Some(Delta::Inc(n)) = delta {
                self.events.push(DeviceEvent::Doorbell {
                    region: region_name.clone(),
                    register: reg_name.clone(),
                    increment: n,
                });
            }
            if pulses != 0 {
                self.events.push(DeviceEvent::Pulse {
                    region: region_name,
                    register: reg_name,
                    bits: Hex32(pulses),
                });
            }
        }
        Ok(Some(report))
    }

    /// EVT_SEM semantics (seed 004 §6, driver-facts §6.4): SET stores, INC
    /// adds, DEC subtracts (32-bit wrapping), all visible in SEM_READ.
    fn semaphore_op(
        &mut self,
        region: RegionId,
        register: &str,
        index: Option<u32>,
        written: u32,
        delta: Option<Delta>,
    ) {
        let Some(index) = index else { return };
        let Some(rf) = self.regfile(region) else {
            return;
        };
        let Some(read_off) = rf.map().find("SEM_READ", Some(index)) else {
            return;
        };
        let Ok(old) = rf.value(read_off) else { return };
        let new = match (register, delta) {
            ("SEM_SET", _) => written,
            (_, Some(Delta::Inc(n))) => old.wrapping_add(n),
            (_, Some(Delta::Dec(n))) => old.wrapping_sub(n),
            _ => return,
        };
        if rf.hw_set(read_off, new).is_ok() {
            let name = self.map.name(region).to_string();
            self.events.push(DeviceEvent::Semaphore {
                region: name,
                index,
                old,
                new,
            });
        }
    }

    /// Reads `buf.len()` bytes of memory at `addr`.
    pub fn read_bytes(&self, addr: u64, buf: &mut [u8]) -> Result<(), BusFault> {
        self.memory.read(&self.map, addr, buf)
    }

    /// Writes bytes to memory at `addr`.
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), BusFault> {
        self.memory.write(&self.map, addr, data)
    }

    /// Fills `len` bytes of memory at `addr` with `byte`.
    pub fn fill(&mut self, addr: u64, len: u64, byte: u8) -> Result<(), BusFault> {
        self.memory.fill(&self.map, addr, len, byte)
    }

    /// Host bytes the device's memories hold.
    pub fn allocated_bytes(&self) -> u64 {
        self.memory.allocated_bytes()
    }

    /// Every register that differs from reset, by block address.
    pub fn csr_snapshot(&self) -> CsrSnapshot {
        let mut blocks: Vec<BlockSnapshot> = self
            .regs
            .iter()
            .filter_map(|(&id, rf)| {
                let registers = rf.diff_from_reset();
                if registers.is_empty() {
                    return None;
                }
                let r = self.map.region(id);
                Some(BlockSnapshot {
                    region: r.name.clone(),
                    block: rf.map().block().to_string(),
                    base: Hex(r.base),
                    registers,
                })
            })
            .collect();
        blocks.sort_by_key(|b| b.base);
        CsrSnapshot { blocks }
    }
}
