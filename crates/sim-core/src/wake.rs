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
//!
//! Ties between units waking at the same cycle are what the hardware leaves
//! open (engines run in parallel; two that reach a shared HBM port at one
//! cycle are served in an order nothing publishes). With a tie seed
//! ([`WakeTree::set_tie_seed`], docs/races.md §Schedule perturbation) each
//! cycle's ties go in an order drawn from the seed and the cycle: the
//! unit ids are XORed with a mask of that cycle in the keys, a bijection, so
//! the tree still orders them by one compare. Without one the mask is 0:
//! the lowest id wins.

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

fn key(at: Cycle, id: u16, mask: u16) -> Key {
    (at.0.min(FAR) << 16) | u64::from(id ^ mask)
}

/// SplitMix64's finaliser: the tie mask of a cycle under a seed.
fn mix(seed: u64, cycle: u64) -> u16 {
    let mut z = seed ^ cycle.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u16
}

/// No leaf yet.
const NO_SLOT: u32 = u32::MAX;

/// The next wake-up of every unit, earliest first (ties: lowest id).
#[derive(Clone, Debug, Default)]
pub struct WakeTree {
    /// Leaf slot of each unit id (`NO_SLOT`: never scheduled).
    slot_of: Vec<u32>,
    /// `nodes[1]` is the root; node k has children 2k and 2k + 1; leaf
    /// slot s is `nodes[cap + s]`. Unused leaves hold `EMPTY`. Its length
    /// is `2 · cap`, a power of two (or 0), so that an index masked with
    /// `len − 1` needs no bounds check.
    nodes: Vec<Key>,
    /// Per slot: the exact wake-up of a `FAR` key (other keys hold their
    /// cycle; this entry is stale for them).
    exact: Vec<Option<Cycle>>,
    /// Leaves in the tree (a power of two, or 0).
    cap: usize,
    /// log2 of `cap`: the levels above the leaves.
    depth: u32,
    /// The tie seed, when ties are perturbed.
    tie_seed: Option<u64>,
}

impl WakeTree {
    /// The XOR mask of the ids in the keys at `at` (0 without a tie seed).
    #[inline]
    fn mask(&self, at: u64) -> u16 {
        match self.tie_seed {
            None => 0,
            Some(seed) => mix(seed, at.min(FAR)),
        }
    }

    /// Perturbs ties (`Some(seed)`): units waking at one cycle go in an
    /// order drawn from the seed and the cycle, the same for the same seed;
    /// `None`: the lowest id first. The pending wake-ups are kept.
    pub fn set_tie_seed(&mut self, seed: Option<u64>) {
        self.tie_seed = seed;
        let pending: Vec<(u16, Option<Cycle>)> = self
            .slot_of
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s != NO_SLOT)
            .filter_map(|(id, &s)| Some((u16::try_from(id).ok()?, self.slot_wake(s as usize))))
            .collect();
        for (id, at) in pending {
            self.set(id, at);
        }
    }

    /// Sets unit `id`'s next wake-up (`None`: nothing pending).
    #[inline]
    pub fn set(&mut self, id: u16, at: Option<Cycle>) {
        let k = match at {
            Some(at) => key(at, id, self.mask(at.0)),
            None => EMPTY,
        };
        let slot = match self.slot_of.get(usize::from(id)) {
            Some(&s) if s != NO_SLOT => s as usize,
            _ if k == EMPTY => return, // never scheduled, still nothing
            _ => self.add_leaf(id),
        };
        if k >> 16 == FAR
            && let Some(e) = self.exact.get_mut(slot)
        {
            *e = at;
        }
        // Up the path, carrying the subtree's winner in a register: each
        // level reads only the sibling (not the node just written), so the
        // loads do not wait on the stores before them. Every index is below
        // `2 · cap`, the length: masked with `len − 1` it is unchanged and
        // needs no bounds check.
        let nodes = &mut self.nodes[..];
        let Some(m) = nodes.len().checked_sub(1) else {
            return;
        };
        let mut n = self.cap + slot;
        let mut win = k;
        nodes[n & m] = k;
        for _ in 0..self.depth {
            win = win.min(nodes[(n ^ 1) & m]);
            n /= 2;
            nodes[n & m] = win;
        }
    }

    /// The wake-up of leaf `slot`: its key's cycle, or the exact one of a
    /// `FAR` key.
    fn slot_wake(&self, slot: usize) -> Option<Cycle> {
        let k = *self.nodes.get(self.cap + slot)?;
        match k >> 16 {
            _ if k == EMPTY => None,
            FAR => self.exact.get(slot).copied().flatten(),
            at => Some(Cycle(at)),
        }
    }

    /// Unit `id`'s next wake-up.
    pub fn get(&self, id: u16) -> Option<Cycle> {
        match self.slot_of.get(usize::from(id)) {
            Some(&s) if s != NO_SLOT => self.slot_wake(s as usize),
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
        // The low 16 bits are the id, masked.
        let at = root >> 16;
        Some((Cycle(at), (root & 0xFFFF) as u16 ^ self.mask(at)))
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
                let at = self.slot_wake(s as usize)?;
                let id = u16::try_from(id).ok()?;
                Some((at, id ^ self.mask(at.0), id))
            })
            .min()
            .map(|(at, _, id)| (at, id))
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
            self.depth = cap.trailing_zeros();
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

    #[test]
    fn a_tie_seed_reorders_ties_only_and_reproducibly() {
        let order = |seed: Option<u64>, cycle: u64| {
            let mut t = WakeTree::default();
            t.set_tie_seed(seed);
            for id in 0..8 {
                t.set(id, Some(Cycle(cycle)));
            }
            t.set(9, Some(Cycle(cycle + 1)));
            let mut out = Vec::new();
            while let Some((at, id)) = t.peek() {
                if at.0 == cycle {
                    out.push(id);
                } else {
                    // The later wake-up comes after every tie.
                    assert_eq!((at, id), (Cycle(cycle + 1), 9));
                }
                t.set(id, None);
            }
            out
        };
        assert_eq!(order(None, 5), (0..8).collect::<Vec<u16>>());
        let mut seen = std::collections::BTreeSet::new();
        for seed in 1..=8 {
            let o = order(Some(seed), 5);
            assert_eq!(o, order(Some(seed), 5), "the same seed, the same order");
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..8).collect::<Vec<u16>>());
            seen.insert(o);
        }
        assert!(seen.len() > 1, "seeds 1..=8 give one order: {seen:?}");
        // The order changes from cycle to cycle under one seed.
        let per_cycle: std::collections::BTreeSet<Vec<u16>> =
            (0..8).map(|c| order(Some(1), c)).collect();
        assert!(per_cycle.len() > 1);
        // A seed set with wake-ups pending keeps them.
        let mut t = WakeTree::default();
        t.set(3, Some(Cycle(7)));
        t.set(4, Some(Cycle(2)));
        t.set_tie_seed(Some(11));
        assert_eq!(t.peek(), Some((Cycle(2), 4)));
        assert_eq!(t.get(3), Some(Cycle(7)));
    }

    proptest::proptest! {
        /// With a tie seed, `peek` is still a pending unit at the earliest
        /// cycle, and the same updates give the same answers.
        #[test]
        fn perturbed_ties_keep_the_earliest_cycle(
            seed in 0u64..1000,
            ops in proptest::collection::vec((0u16..140, proptest::option::of(proptest::prop_oneof![0u64..20, (1u64 << 48) - 2..(1u64 << 48) + 2])), 1..200)
        ) {
            let mut t = WakeTree::default();
            t.set_tie_seed(Some(seed));
            let mut model: BTreeMap<u16, u64> = BTreeMap::new();
            for (id, at) in ops {
                t.set(id, at.map(Cycle));
                match at {
                    Some(c) => { model.insert(id, c); }
                    None => { model.remove(&id); }
                }
                let min = model.values().min().copied();
                match t.peek() {
                    None => proptest::prop_assert!(min.is_none()),
                    Some((at, who)) => {
                        proptest::prop_assert_eq!(Some(at.0), min);
                        proptest::prop_assert_eq!(model.get(&who).copied(), Some(at.0));
                    }
                }
            }
        }
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
