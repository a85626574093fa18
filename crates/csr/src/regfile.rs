//! The register file of one block instance: values plus access semantics.
//!
//! Software accesses ([`RegFile::read`], [`RegFile::write`]) apply the map's
//! access kinds and report side effects to the owning hardware model, which
//! reacts (ring a doorbell, reset a queue, change engine state). Hardware-side
//! updates ([`RegFile::hw_set`], [`RegFile::hw_update`]) bypass the access
//! rules: status bits, ring pointers, semaphore values.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use soc_map::{Hex, Hex32};

use crate::error::CsrAccessError;
use crate::map::{CsrMap, RegRef, RegisterSpec};

/// Values of every register element of one block instance.
#[derive(Clone, Debug)]
pub struct RegFile<'m> {
    map: &'m CsrMap,
    /// The map's reset values until the first store that changes one, then
    /// the file's own copy (copy on write: a unit's 38 files, most never
    /// written, cost no allocation and touch no memory until then).
    values: Cow<'m, [u32]>,
}

/// What a software read returned.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct ReadOutcome<'m> {
    /// The register element read.
    pub reg: RegRef<'m>,
    /// The value returned (WO/INC/DEC bits read 0).
    pub value: u32,
    /// RC bits cleared by this read.
    pub cleared: u32,
}

/// A register element's storage slot and reserved bits, for
/// [`RegFile::hw_update_slot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwSlot {
    /// 32 bits keep a unit's hot slots small (host speed); a map has far
    /// fewer elements.
    slot: u32,
    reserved: u32,
}

impl Default for HwSlot {
    /// A slot that matches no register: updates through it do nothing.
    fn default() -> Self {
        Self {
            slot: u32::MAX,
            reserved: u32::MAX,
        }
    }
}

/// An increment or decrement requested by a write to an INC/DEC register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta {
    /// Add this many (doorbells, semaphore increment).
    Inc(u32),
    /// Subtract this many (semaphore decrement).
    Dec(u32),
}

/// The side effects of a software write, for the owner to act on.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct WriteOutcome<'m> {
    /// The register element written.
    pub reg: RegRef<'m>,
    /// The value on the bus.
    pub written: u32,
    /// Stored value before the write.
    pub old: u32,
    /// Stored value after the write.
    pub new: u32,
    /// Bits the write tried to change but could not: RO, RC or reserved bits
    /// whose written value differs from what the register reads back.
    pub ignored: u32,
    /// The whole register is read-only: the write had no effect at all.
    pub read_only: bool,
    /// WO bits written as 1 (command pulses).
    pub pulses: u32,
    /// INC/DEC registers: the written value masked by its field and shifted
    /// down to bit 0.
    pub delta: Option<Delta>,
}

impl WriteOutcome<'_> {
    /// Bits that went 0 → 1 in the stored value.
    pub fn rose_bits(&self) -> u32 {
        !self.old & self.new
    }

    /// Bits that went 1 → 0 in the stored value.
    pub fn fell_bits(&self) -> u32 {
        self.old & !self.new
    }

    /// Field `name` went from zero to non-zero (an enable bit was set).
    pub fn rose(&self, field: &str) -> bool {
        self.field_pair(field)
            .is_some_and(|(old, new)| old == 0 && new != 0)
    }

    /// Field `name` went from non-zero to zero.
    pub fn fell(&self, field: &str) -> bool {
        self.field_pair(field)
            .is_some_and(|(old, new)| old != 0 && new == 0)
    }

    /// Field `name` changed value.
    pub fn changed(&self, field: &str) -> bool {
        self.field_pair(field).is_some_and(|(old, new)| old != new)
    }

    /// A WO field `name` was written with a non-zero value (command pulse).
    pub fn pulsed(&self, field: &str) -> bool {
        self.reg
            .spec()
            .field(field)
            .is_some_and(|f| self.pulses & f.mask() != 0)
    }

    /// Value of field `name` after the write (`None`: no such field).
    pub fn field(&self, name: &str) -> Option<u32> {
        self.reg.spec().field(name).map(|f| f.extract(self.new))
    }

    /// The increment requested, if this was an INC write.
    pub fn increment(&self) -> Option<u32> {
        match self.delta {
            Some(Delta::Inc(n)) => Some(n),
            _ => None,
        }
    }

    /// The decrement requested, if this was a DEC write.
    pub fn decrement(&self) -> Option<u32> {
        match self.delta {
            Some(Delta::Dec(n)) => Some(n),
            _ => None,
        }
    }

    fn field_pair(&self, name: &str) -> Option<(u32, u32)> {
        let f = self.reg.spec().field(name);
        debug_assert!(
            f.is_some(),
            "register {} has no field {name}",
            self.reg.spec().name()
        );
        f.map(|f| (f.extract(self.old), f.extract(self.new)))
    }
}

/// Every register element of one block instance and its value: the
/// serializable whole-block snapshot (YAML/JSON), elements in offset order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsrDump {
    /// Block type name.
    pub block: String,
    /// Every element, in offset order.
    pub registers: Vec<CsrDumpEntry>,
}

/// One element of a [`CsrDump`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsrDumpEntry {
    /// Block-relative byte offset.
    pub offset: Hex,
    /// `NAME` or `NAME[i]`.
    pub name: String,
    /// Stored value (what hardware holds; WO/INC/DEC read as 0 regardless).
    pub value: Hex32,
}

impl<'m> RegFile<'m> {
    /// A register file at reset.
    pub fn new(map: &'m CsrMap) -> RegFile<'m> {
        RegFile {
            map,
            values: Cow::Borrowed(map.reset_values()),
        }
    }

    /// The map this file follows.
    pub fn map(&self) -> &'m CsrMap {
        self.map
    }

    /// Returns every register to its reset value.
    pub fn reset(&mut self) {
        self.values = Cow::Borrowed(self.map.reset_values());
    }

    /// A software read: returns the readable value (WO/INC/DEC bits read 0)
    /// and clears RC bits.
    pub fn read(&mut self, offset: u64) -> Result<ReadOutcome<'m>, CsrAccessError> {
        let reg = self.map.element_at(offset)?;
        let masks = reg.spec().masks();
        let slot = reg.slot();
        let stored = self.stored(slot);
        let value = stored & !masks.read_zero();
        let cleared = stored & masks.rc;
        // Only a read that clears bits changes what is stored.
        if cleared != 0 {
            self.store(slot, stored & !masks.rc);
        }
        Ok(ReadOutcome {
            reg,
            value,
            cleared,
        })
    }

    /// What a software read would return, without RC side effects
    /// (debuggers, expectations).
    pub fn peek(&self, offset: u64) -> Result<u32, CsrAccessError> {
        let reg = self.map.element_at(offset)?;
        Ok(self.stored(reg.slot()) & !reg.spec().masks().read_zero())
    }

    /// The stored value, ignoring read rules.
    pub fn value(&self, offset: u64) -> Result<u32, CsrAccessError> {
        // The slot alone: a value needs no spec (host speed; the same
        // result as `element_at`, tests/value_fast_path.rs).
        let slot = self.map.slot_at(offset)?;
        self.values
            .get(slot)
            .copied()
            .ok_or(CsrAccessError::Hole { offset })
    }

    /// Stored value of a register named as in [`CsrMap::lookup`]
    /// (`"q_cfg"`, `"SEM_INC[3]"`).
    pub fn value_of(&self, name: &str) -> Option<u32> {
        self.map.lookup(name).map(|r| self.stored(r.slot()))
    }

    /// A software write: applies each bit's access kind and reports what the
    /// owner must act on.
    pub fn write(&mut self, offset: u64, value: u32) -> Result<WriteOutcome<'m>, CsrAccessError> {
        let reg = self.map.element_at(offset)?;
        let spec: &RegisterSpec = reg.spec();
        let m = *spec.masks();
        let slot = reg.slot();
        let old = self.stored(slot);

        let mut new = (old & !m.rw) | (value & m.rw);
        new &= !(value & m.w1c);
        new &= !(!value & m.w0c);
        self.store(slot, new);

        let readback = old & !m.read_zero();
        let delta = if m.inc != 0 {
            Some(Delta::Inc(spec.delta_of(value)))
        } else if m.dec != 0 {
            Some(Delta::Dec(spec.delta_of(value)))
        } else {
            None
        };
        Ok(WriteOutcome {
            reg,
            written: value,
            old,
            new,
            ignored: (value ^ readback) & m.ignores_writes(),
            read_only: m.is_read_only(),
            pulses: value & m.wo,
            delta,
        })
    }

    /// Hardware sets the stored value, bypassing access rules (reserved bits
    /// stay 0). Returns the previous value.
    pub fn hw_set(&mut self, offset: u64, value: u32) -> Result<u32, CsrAccessError> {
        self.hw_update(offset, |_| value).map(|(old, _)| old)
    }

    /// Hardware read-modify-write of the stored value, bypassing access rules
    /// (reserved bits stay 0). Returns `(old, new)`.
    pub fn hw_update(
        &mut self,
        offset: u64,
        f: impl FnOnce(u32) -> u32,
    ) -> Result<(u32, u32), CsrAccessError> {
        let reg = self.map.element_at(offset)?;
        let reserved = reg.spec().masks().reserved;
        let slot = reg.slot();
        let old = self.stored(slot);
        let new = f(old) & !reserved;
        self.store(slot, new);
        Ok((old, new))
    }

    /// Every element with its stored value, in offset order.
    pub fn iter(&self) -> impl Iterator<Item = (RegRef<'m>, u32)> + '_ {
        self.map.elements().map(move |r| (r, self.stored(r.slot())))
    }

    /// `NAME` / `NAME[i]` → value for every element whose stored value differs
    /// from reset (the CSR snapshot of docs/references/design.md §1).
    pub fn diff_from_reset(&self) -> BTreeMap<String, Hex32> {
        let resets = self.map.reset_values();
        self.iter()
            .filter(|(r, v)| resets.get(r.slot()) != Some(v))
            .map(|(r, v)| (r.name(), Hex32(v)))
            .collect()
    }

    /// Every element and its stored value.
    pub fn dump(&self) -> CsrDump {
        CsrDump {
            block: self.map.block().to_string(),
            registers: self
                .iter()
                .map(|(r, v)| CsrDumpEntry {
                    offset: Hex(r.offset()),
                    name: r.name(),
                    value: Hex32(v),
                })
                .collect(),
        }
    }

    /// The storage slot of the register element at `offset`, for owners
    /// that update the same hardware-owned register on a hot path
    /// ([`RegFile::hw_update_slot`]).
    pub fn slot_of(&self, offset: u64) -> Option<HwSlot> {
        let reg = self.map.element_at(offset).ok()?;
        Some(HwSlot {
            slot: u32::try_from(reg.slot()).ok()?,
            reserved: reg.spec().masks().reserved,
        })
    }

    /// [`RegFile::hw_update`] through a slot from [`RegFile::slot_of`] (same
    /// map): no lookup. Returns the new value.
    pub fn hw_update_slot(&mut self, s: HwSlot, f: impl FnOnce(u32) -> u32) -> u32 {
        let slot = s.slot as usize;
        // The packet path's case: the file has its own values already.
        if let Cow::Owned(values) = &mut self.values {
            return match values.get_mut(slot) {
                Some(v) => {
                    *v = f(*v) & !s.reserved;
                    *v
                }
                None => 0,
            };
        }
        match self.values.get(slot) {
            Some(&v) => {
                let new = f(v) & !s.reserved;
                self.store(slot, new);
                new
            }
            None => 0,
        }
    }

    /// The stored value through a slot from [`RegFile::slot_of`] (same
    /// map): no lookup. `None` for the default slot, as
    /// [`RegFile::value`] is an error for an offset with no register.
    pub fn value_slot(&self, s: HwSlot) -> Option<u32> {
        self.values.get(s.slot as usize).copied()
    }

    fn stored(&self, slot: usize) -> u32 {
        self.values.get(slot).copied().unwrap_or(0)
    }

    /// Stores `value` in `slot`; the file takes its own copy of the values
    /// at the first store that changes one.
    #[inline]
    fn store(&mut self, slot: usize, value: u32) {
        match &mut self.values {
            Cow::Owned(values) => {
                if let Some(v) = values.get_mut(slot) {
                    *v = value;
                }
            }
            Cow::Borrowed(values) => {
                if values.get(slot).is_some_and(|&v| v != value)
                    && let Some(v) = self.values.to_mut().get_mut(slot)
                {
                    *v = value;
                }
            }
        }
    }

    /// True while the file still reads the map's reset values (nothing
    /// stored has changed a value since it was made or reset).
    pub fn is_shared_reset(&self) -> bool {
        matches!(self.values, Cow::Borrowed(_))
    }
}
