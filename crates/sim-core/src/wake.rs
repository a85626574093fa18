//! Which unit runs next: the device's scheduler over its engines (docs/references/design.md §4:
//! one global order, earliest cycle first, ties to the lowest unit id).
//!
//! A winner (tournament) tree over the units that have had work: each leaf
//! holds one unit's next wake-up, each inner node the earliest of its two
//! children, the root the earliest of all. Changing one unit's wake-up
//! rewrites its path to the root with one branch-free compare per level
//! against the sibling (which subtree wins is data; a branch on it would
//! mispredict), so 16 engines streaming side by side cost four compares per
//! event, where a binary heap pays a pop and a push and leaves stale
//! entries behind.

use crate::Cycle;

/// (cycle, unit id) packed as `cycle << 16 | id`, one `u64` compare.
/// Cycles from `FAR` (2^48 − 2) on (3.8 simulated days at 0.85 GHz: only a
/// far-off rate-limiter retry gets there) all pack as `FAR`; the exact
/// cycle stays in `exact` and [`WakeTree::peek`] orders such keys by it.
type Key = u64;

/// The packed cycle of every wake-up at or after it.
const FAR: u64 = (1 << 48) - 2;

/// Nothing pending: its cycle field (2^48 − 1) is above `FAR`, so it sorts
/// after every wake-up, of any unit id.
const EMPTY: Key = u64::MAX;

fn key(at: Cycle, id: u16) -> Key {
    (at.0.min(FAR) << 16) | u64::from(id)
}

/// No leaf yet.
const NO_SLOT: u32 = u32::MAX;

/// The next wake-up of every unit, earliest first (ties: lowest id).
#[derive(Clone, Debug, Default)]
pub struct WakeTree {
    /// Leaf slot of each unit id (`NO_SLOT`: never scheduled).
    slot_of: Vec<u32>,
    /// `nodes[1]` is the root; node k has children 2k and 2k + 1; leaf
    /// slot s is `nodes[cap + s]`. Unused leaves hold `EMPTY`.
    nodes: Vec<Key>,
    /// Per slot: the exact wake-up (for `FAR` keys).
    exact: Vec<Option<Cycle>>,
    /// Leaves in the tree (a power of two, or 0).
    cap: usize,
}

impl WakeTree {
    /// Sets unit `id`'s next wake-up (`None`: nothing pending).
    #[inline]
    pub fn set(&mut self, id: u16, at: Option<Cycle>) {
        let k = match at {
            Some(at) => key(at, id),
            None => EMPTY,
        };
        let slot = match self.slot_of.get(usize::from(id)) {
            Some(&s) if s != NO_SLOT => s as usize,
            _ if k == EMPTY => return, // never scheduled, still nothing
            _ => self.add_leaf(id),
        };
        if let Some(e) = self.exact.get_mut(slot) {
            *e = at;
        }
        // Up the path, carrying the subtree's winner in a register: each
        // level reads only the sibling (not the node just written), so the
        // loads do not wait on the stores before them.
        let nodes = &mut self.nodes[..];
        let mut n = self.cap + slot;
        let mut win = k;
        if let Some(leaf) = nodes.get_mut(n) {
            *leaf = k;
        }
        while n > 1 {
            let sibling = nodes.get(n ^ 1).copied().unwrap_or(EMPTY);
            win = win.min(sibling);
            n /= 2;
            if let Some(node) = nodes.get_mut(n) {
                *node = win;
            }
        }
    }

    /// Unit `id`'s next wake-up.
    pub fn get(&self, id: u16) -> Option<Cycle> {
        match self.slot_of.get(usize::from(id)) {
            Some(&s) if s != NO_SLOT => self.exact.get(s as usize).copied().flatten(),
            _ => None,
        }
    }

    /// The earliest wake-up of all: (cycle, unit id).
    #[inline]
    pub fn peek(&self) -> Option<(Cycle, u16)> {
        let root = *self.nodes.get(1)?;
        if root == EMPTY {
            return None;
        }
        if root >> 16 == FAR {
            return self.peek_far();
        }
        // The low 16 bits are the id.
        Some((Cycle(root >> 16), (root & 0xFFFF) as u16))
    }

    /// The earliest wake-up when every pending one is at `FAR` or later: the
    /// packed keys no longer order them, the exact cycles do.
    #[cold]
    fn peek_far(&self) -> Option<(Cycle, u16)> {
        self.slot_of
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s != NO_SLOT)
            .filter_map(|(id, &s)| {
                let at = self.exact.get(s as usize).copied().flatten()?;
                Some((at, u16::try_from(id).ok()?))
            })
            .min()
    }

    /// Gives unit `id` a leaf, doubling the tree when it is full.
    #[cold]
    fn add_leaf(&mut self, id: u16) -> usize {
        let i = usize::from(id);
        if self.slot_of.len() <= i {
            self.slot_of.resize(i + 1, NO_SLOT);
        }
        let slot = self.exact.len();
        if slot == self.cap {
            let cap = (self.cap * 2).max(1);
            let mut nodes = vec![EMPTY; 2 * cap];
            nodes[cap..cap + self.cap].copy_from_slice(&self.nodes[self.cap..]);
            for p in (1..cap).rev() {
                nodes[p] = nodes[2 * p].min(nodes[2 * p + 1]);
            }
            self.nodes = nodes;
            self.cap = cap;
        }
        self.exact.push(None);
        // At most one slot per u16 id.
        self.slot_of[i] = slot as u32;
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_earliest_unit_wins_and_ties_go_to_the_lowest_id() {
        let mut t = WakeTree::default();
        assert_eq!(t.peek(), None);
        t.set(7, Some(Cycle(10)));
        t.set(3, Some(Cycle(10)));
        t.set(12, Some(Cycle(4)));
        assert_eq!(t.peek(), Some((Cycle(4), 12)));
        t.set(12, None);
        assert_eq!(t.peek(), Some((Cycle(10), 3)));
        t.set(3, Some(Cycle(11)));
        assert_eq!(t.peek(), Some((Cycle(10), 7)));
        assert_eq!(t.get(3), Some(Cycle(11)));
        assert_eq!(t.get(12), None);
        assert_eq!(t.get(99), None);
        // A wake-up at the last cycle still counts.
        t.set(0, Some(Cycle(u64::MAX)));
        t.set(3, None);
        t.set(7, None);
        assert_eq!(t.peek(), Some((Cycle(u64::MAX), 0)));
        // The last unit id at the last cycle is still a wake-up (its key
        // is not the empty one), and loses the tie to unit 0.
        t.set(u16::MAX, Some(Cycle(u64::MAX)));
        assert_eq!(t.peek(), Some((Cycle(u64::MAX), 0)));
        t.set(0, None);
        assert_eq!(t.peek(), Some((Cycle(u64::MAX), u16::MAX)));
        assert_eq!(t.get(u16::MAX), Some(Cycle(u64::MAX)));
        t.set(u16::MAX, None);
        t.set(0, Some(Cycle(u64::MAX)));
        // Far-off wake-ups keep their exact order.
        t.set(5, Some(Cycle((1 << 48) + 1)));
        t.set(9, Some(Cycle(1 << 48)));
        assert_eq!(t.peek(), Some((Cycle(1 << 48), 9)));
        assert_eq!(t.get(5), Some(Cycle((1 << 48) + 1)));
        t.set(9, None);
        t.set(5, None);
        t.set(0, None);
        assert_eq!(t.peek(), None);
    }

    proptest::proptest! {
        /// After any sequence of updates, `peek` is the (cycle, id) minimum
        /// of the pending wake-ups and `get` each unit's own.
        #[test]
        fn agrees_with_a_sorted_map(
            ops in proptest::collection::vec((proptest::prop_oneof![0u16..140, u16::MAX - 2..=u16::MAX], proptest::option::of(proptest::prop_oneof![0u64..50, (1u64 << 48) - 2..(1u64 << 48) + 2, proptest::strategy::Just(u64::MAX)])), 1..300)
        ) {
            let mut t = WakeTree::default();
            let mut model: BTreeMap<u16, u64> = BTreeMap::new();
            for (id, at) in ops {
                t.set(id, at.map(Cycle));
                match at {
                    Some(c) => { model.insert(id, c); }
                    None => { model.remove(&id); }
                }
                let min = model.iter().map(|(&i, &c)| (Cycle(c), i)).min();
                proptest::prop_assert_eq!(t.peek(), min);
                proptest::prop_assert_eq!(t.get(id), at.map(Cycle));
            }
        }
    }
}
