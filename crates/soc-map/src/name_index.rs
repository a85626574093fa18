//! Region names → region ids, without a second copy of any name: the table
//! holds ids, and a probe compares the key with the region's own name.
//! A map is expanded at every process start (about 5,800 names built in,
//! docs/address-map.md), so building this index is on every run's path.

use crate::map::{Region, RegionId};

/// FNV-1a state over the bytes of a name (deterministic, a few
/// instructions a byte). A name is its parent's name, a dot, the node's
/// stem and an index: the expansion continues the parent's state instead
/// of hashing the whole name again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NameHash(u64);

impl NameHash {
    /// The state before any byte.
    pub(crate) const EMPTY: NameHash = NameHash(0xcbf2_9ce4_8422_2325);

    /// The state after `bytes` more.
    pub(crate) fn push(self, bytes: &[u8]) -> NameHash {
        let mut h = self.0;
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        NameHash(h)
    }

    /// The state of a whole name.
    pub(crate) fn of(name: &str) -> NameHash {
        NameHash::EMPTY.push(name.as_bytes())
    }
}

/// Open addressing with linear probing, at most half full. A slot holds
/// the low 32 bits of the name's hash and the region id + 1 (0: empty), so
/// most probes that miss compare no bytes.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    slots: Vec<u64>,
    len: usize,
}

/// Where a name is, or where it would go.
pub(crate) enum Probe {
    /// The region with this name.
    Found(RegionId),
    /// The free slot it would take ([`NameIndex::fill`]).
    Vacant(usize),
}

impl NameIndex {
    /// An index sized for about `names` names.
    pub(crate) fn with_capacity(names: usize) -> NameIndex {
        NameIndex {
            slots: vec![0; slots_for(names)],
            len: 0,
        }
    }

    /// The slots and the number of names, for the map image
    /// (`crate::image`).
    #[allow(dead_code)] // used by build.rs, which includes this module
    pub(crate) fn parts(&self) -> (&[u64], usize) {
        (&self.slots, self.len)
    }

    /// The index of an image's slots; `None` when they cannot be one (not
    /// a power of two, or more than half full).
    pub(crate) fn from_parts(slots: Vec<u64>, len: usize) -> Option<NameIndex> {
        (slots.len().is_power_of_two() && len.checked_mul(2)? <= slots.len())
            .then_some(NameIndex { slots, len })
    }

    /// The region named `name`.
    pub(crate) fn get(&self, regions: &[Region], name: &str) -> Option<RegionId> {
        match self.probe(regions, name, NameHash::of(name)) {
            Probe::Found(id) => Some(id),
            Probe::Vacant(_) => None,
        }
    }

    /// Looks `name` (whose hash is `hash`) up. Room for one more name is
    /// made first, so that a vacant slot can be filled.
    pub(crate) fn probe_for_insert(
        &mut self,
        regions: &[Region],
        name: &str,
        hash: NameHash,
    ) -> Probe {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow(regions);
        }
        self.probe(regions, name, hash)
    }

    /// Puts region `id` (named with `hash`) in the vacant slot `slot` that
    /// [`NameIndex::probe_for_insert`] found. False when the id does not fit
    /// a slot (more than `u32::MAX` regions).
    pub(crate) fn fill(&mut self, slot: usize, id: RegionId, hash: NameHash) -> bool {
        let Some(tagged) = u32::try_from(id + 1).ok().map(|i| entry(hash, i)) else {
            return false;
        };
        if let Some(s) = self.slots.get_mut(slot) {
            *s = tagged;
            self.len += 1;
        }
        true
    }

    fn probe(&self, regions: &[Region], name: &str, hash: NameHash) -> Probe {
        if self.slots.is_empty() {
            return Probe::Vacant(0);
        }
        let mask = self.slots.len() - 1;
        let tag = hash.0 as u32;
        let mut i = home(hash, mask);
        loop {
            let s = self.slots[i];
            if s == 0 {
                return Probe::Vacant(i);
            }
            let id = (s as u32 - 1) as usize;
            if (s >> 32) as u32 == tag && regions.get(id).is_some_and(|r| r.name == name) {
                return Probe::Found(id);
            }
            i = (i + 1) & mask;
        }
    }

    /// Doubles the table (the names' hashes are computed again).
    fn grow(&mut self, regions: &[Region]) {
        let old = std::mem::replace(&mut self.slots, vec![0; slots_for(self.len + 1)]);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|&s| s != 0) {
            let id = (s as u32 - 1) as usize;
            let Some(r) = regions.get(id) else { continue };
            let mut i = home(NameHash::of(&r.name), mask);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

/// A power of two at least twice `names` (and at least 16).
fn slots_for(names: usize) -> usize {
    names.saturating_mul(2).max(16).next_power_of_two()
}

fn entry(hash: NameHash, id_plus_one: u32) -> u64 {
    ((hash.0 as u32 as u64) << 32) | u64::from(id_plus_one)
}

/// The first slot a name probes: the hash's high bits, mixed.
fn home(hash: NameHash, mask: usize) -> usize {
    (hash.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_hashes_equal_whole_ones() {
        let h = NameHash::of("eng3").push(b".").push(b"m2s");
        assert_eq!(h, NameHash::of("eng3.m2s"));
    }
}
