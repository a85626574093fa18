//! The bytes timing-only mode left stale: destinations of DMA copies that
//! were checked but not moved (docs/user-guide.md §Timing-only mode). A
//! check that reads any of them is *skipped (timing-only)*, never passed or
//! failed.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent half-open address ranges `[start, end)`.
#[derive(Clone, Debug, Default)]
pub struct StaleRanges {
    /// start → end.
    ranges: BTreeMap<u64, u64>,
    /// A bound on every range, `[lo, hi)`: an access outside it meets no
    /// stale byte without a lookup. Grows with marks; reset when empty.
    span: Option<(u64, u64)>,
}

/// Equal when the same bytes are stale (the bound is a cache).
impl PartialEq for StaleRanges {
    fn eq(&self, other: &Self) -> bool {
        self.ranges == other.ranges
    }
}

impl Eq for StaleRanges {}

impl StaleRanges {
    /// No stale byte.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Marks `[addr, addr + len)` stale.
    ///
    /// Every range that overlaps or touches the new one merges into it. No
    /// allocation; the common case — a copy that extends the last range
    /// before it — is one ordered-map lookup.
    pub fn mark(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut start = addr;
        let mut end = addr.saturating_add(len);
        self.span = Some(match self.span {
            Some((lo, hi)) => (lo.min(start), hi.max(end)),
            None => (start, end),
        });
        // The last range starting at or before `end`, when it also starts at
        // or before `start`, is the only one that can touch [start, end]:
        // extend it in place.
        if let Some((&s, e)) = self.ranges.range_mut(..=end).next_back()
            && s <= start
            && *e >= start
        {
            *e = (*e).max(end);
            return;
        }
        // Otherwise merge, from the right, every range that overlaps or
        // touches [start, end].
        while let Some((&s, &e)) = self.ranges.range(..=end).next_back() {
            if e < start {
                break;
            }
            self.ranges.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
    }

    /// Makes `[addr, addr + len)` meaningful again (it was written).
    ///
    /// No allocation; a write that meets no stale byte — every completion,
    /// semaphore and ring write of a timing-only run — is one lookup.
    pub fn clear(&mut self, addr: u64, len: u64) {
        let (start, end) = (addr, addr.saturating_add(len));
        if len == 0 || !self.may_meet(start, end) {
            return;
        }
        // Ranges are disjoint: walk down from the last one starting before
        // `end` until one ends at or before `start`.
        while let Some((&s, &e)) = self.ranges.range(..end).next_back() {
            if e <= start {
                return;
            }
            self.ranges.remove(&s);
            if e > end {
                self.ranges.insert(end, e);
            }
            if s < start {
                self.ranges.insert(s, start);
            }
            if s <= start {
                break;
            }
        }
        if self.ranges.is_empty() {
            self.span = None;
        }
    }

    /// Whether `[start, end)` meets the bound of every range.
    fn may_meet(&self, start: u64, end: u64) -> bool {
        self.span.is_some_and(|(lo, hi)| start < hi && end > lo)
    }

    /// The first stale byte of `[addr, addr + len)`, if any.
    pub fn first_in(&self, addr: u64, len: u64) -> Option<u64> {
        let end = addr.saturating_add(len);
        if len == 0 || !self.may_meet(addr, end) {
            return None;
        }
        if let Some((_, &e)) = self.ranges.range(..=addr).next_back()
            && e > addr
        {
            return Some(addr);
        }
        self.ranges.range(addr..end).next().map(|(&s, _)| s)
    }

    /// Stale bytes in all.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[derive(Clone, Debug)]
    enum Op {
        Mark(u64, u64),
        Clear(u64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..200, 0u64..40).prop_map(|(a, l)| Op::Mark(a, l)),
            (0u64..200, 0u64..40).prop_map(|(a, l)| Op::Clear(a, l)),
        ]
    }

    proptest! {
        /// The ranges agree with a byte set after any sequence of marks
        /// and clears, and stay disjoint and non-adjacent.
        #[test]
        fn matches_a_byte_set(ops in prop::collection::vec(op(), 0..40), probe in (0u64..240, 0u64..40)) {
            let mut r = StaleRanges::default();
            let mut model = BTreeSet::new();
            for o in &ops {
                match *o {
                    Op::Mark(a, l) => { r.mark(a, l); model.extend(a..a + l); }
                    Op::Clear(a, l) => { r.clear(a, l); for b in a..a + l { model.remove(&b); } }
                }
            }
            prop_assert_eq!(r.bytes(), model.len() as u64);
            let mut prev_end: Option<u64> = None;
            for (&s, &e) in &r.ranges {
                prop_assert!(s < e);
                if let Some(p) = prev_end { prop_assert!(s > p, "adjacent or overlapping"); }
                prev_end = Some(e);
            }
            let (a, l) = probe;
            let want = (a..a + l).find(|b| model.contains(b));
            prop_assert_eq!(r.first_in(a, l), want);
        }
    }

    #[test]
    fn marks_merge_and_clears_split() {
        let mut r = StaleRanges::default();
        r.mark(0x1000, 0x1000);
        r.mark(0x2000, 0x1000);
        assert_eq!(r.ranges.len(), 1);
        r.clear(0x1800, 0x10);
        assert_eq!(r.first_in(0x1800, 0x10), None);
        assert_eq!(r.first_in(0x1800, 0x11), Some(0x1810));
        assert_eq!(r.bytes(), 0x1ff0);
    }
}
