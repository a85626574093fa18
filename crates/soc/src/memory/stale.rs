//! The bytes timing-only mode left stale: destinations of DMA copies that
//! were checked but not moved (docs/user-guide.md §Timing-only mode). A
//! check that reads any of them is *skipped (timing-only)*, never passed or
//! failed.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent half-open address ranges `[start, end)`.
#[derive(Debug, Default)]
pub struct StaleRanges {
    /// start → index of the range in `slots`.
    ranges: BTreeMap<u64, u32>,
    /// The ranges, by index; a free entry never passes the check of
    /// [`StaleRanges::extend_hinted`] (its `next_lo` is 0).
    slots: Vec<Slot>,
    /// Free entries of `slots`.
    free: Vec<u32>,
    /// By hash of an end address: the index of a range that ended there
    /// when it was last marked. A hint, checked against the range before
    /// use; empty until the first mark.
    by_end: Vec<u32>,
    /// A bound on every range, `[lo, hi)`: an access outside it meets no
    /// stale byte without a lookup. Grows with marks; reset when empty.
    span: Option<(u64, u64)>,
}

/// A copy without the end hints (64 KiB, rebuilt as ranges grow): a
/// debugger checkpoint or a cloned device does not carry them.
impl Clone for StaleRanges {
    fn clone(&self) -> Self {
        StaleRanges {
            ranges: self.ranges.clone(),
            slots: self.slots.clone(),
            free: self.free.clone(),
            by_end: Vec::new(),
            span: self.span,
        }
    }
}

/// One range of [`StaleRanges`].
#[derive(Clone, Copy, Debug)]
struct Slot {
    end: u64,
    /// At most the start of the next range (`u64::MAX` if none): a mark
    /// ending below it meets no other range.
    next_lo: u64,
}

/// Entries of [`StaleRanges::by_end`] (a power of two, 64 KiB): room for
/// the ranges a run grows at once (one per SBUF partition row of eight
/// cores, 1,024) with few of them displacing another's hint before it is
/// used.
const END_HINTS: usize = 16384;

/// The [`StaleRanges::by_end`] entry of end address `end`: the low bits of
/// a folded 128-bit product. (The ends of the rows of several SBUFs differ
/// in a few structured bits; the high bits of a plain multiply put many
/// of them in the same entry.)
fn end_hint(end: u64) -> usize {
    let p = u128::from(end) * 0x9E37_79B9_7F4A_7C15;
    (p as u64 ^ (p >> 64) as u64) as usize % END_HINTS
}

/// Equal when the same bytes are stale (slots, hints and the bound are
/// bookkeeping).
impl PartialEq for StaleRanges {
    fn eq(&self, other: &Self) -> bool {
        self.ranges.len() == other.ranges.len() && self.iter().eq(other.iter())
    }
}

impl Eq for StaleRanges {}

impl StaleRanges {
    /// No stale byte.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges in address order, as `(start, end)`.
    fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&s, &i)| (s, self.end_of(i)))
    }

    /// The end of the range at index `i`.
    fn end_of(&self, i: u32) -> u64 {
        self.slots.get(i as usize).map_or(0, |r| r.end)
    }

    /// Marks `[addr, addr + len)` stale.
    ///
    /// Every range that overlaps or touches the new one merges into it. No
    /// allocation once the ranges are made; the common case — a copy that
    /// starts where a range ends (a DMA streaming into a partition row) —
    /// is one hint look-up, no ordered-map search.
    #[inline]
    pub fn mark(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let (start, end) = (addr, addr.saturating_add(len));
        self.span = Some(match self.span {
            Some((lo, hi)) => (lo.min(start), hi.max(end)),
            None => (start, end),
        });
        if !self.extend_hinted(start, end) {
            self.mark_searched(start, end);
        }
    }

    /// [`StaleRanges::mark`] of `[start, end)` past the hint: through the
    /// ordered map.
    #[inline(never)]
    fn mark_searched(&mut self, mut start: u64, mut end: u64) {
        // The last range starting at or before `end`, when it also starts at
        // or before `start`, is the only one that can touch [start, end]:
        // extend it in place.
        let mut last = self.ranges.range(..=end).next_back().map(|(&s, &i)| (s, i));
        if let Some((s, i)) = last
            && s <= start
            && let Some(r) = self.slots.get_mut(i as usize)
            && r.end >= start
        {
            r.end = r.end.max(end);
            let e = r.end;
            self.hint(e, i);
            return;
        }
        // Otherwise merge, from the right, every range that overlaps or
        // touches [start, end]; the first one that does not is the new
        // range's predecessor.
        let mut prev = None;
        while let Some((s, i)) = last {
            let e = self.end_of(i);
            if e < start {
                prev = Some(i);
                break;
            }
            self.remove(s);
            start = start.min(s);
            end = end.max(e);
            last = self.ranges.range(..=end).next_back().map(|(&s, &i)| (s, i));
        }
        self.insert_after(prev, start, end);
    }

    /// The fast path of [`StaleRanges::mark`]: when a range ends exactly at
    /// `start` and the next one starts past `end`, that range grows to
    /// `end` (the one change the full merge would make). False when the
    /// hint does not apply.
    #[inline]
    fn extend_hinted(&mut self, start: u64, end: u64) -> bool {
        let Some(&i) = self.by_end.get(end_hint(start)) else {
            return false;
        };
        match self.slots.get_mut(i as usize) {
            Some(r) if r.end == start && end < r.next_lo => {
                r.end = end;
                self.hint(end, i);
                true
            }
            _ => false,
        }
    }

    /// Notes that the range at index `i` ends at `end`.
    #[inline]
    fn hint(&mut self, end: u64, i: u32) {
        if self.by_end.is_empty() {
            self.by_end = vec![u32::MAX; END_HINTS];
        }
        if let Some(h) = self.by_end.get_mut(end_hint(end)) {
            *h = i;
        }
    }

    /// Adds the range `[start, end)`, disjoint from and not adjacent to
    /// every other, keeping each range's `next_lo` at most the next start.
    fn insert(&mut self, start: u64, end: u64) {
        let prev = self.ranges.range(..start).next_back().map(|(_, &p)| p);
        self.insert_after(prev, start, end);
    }

    /// [`StaleRanges::insert`] when the range before the new one is known:
    /// `prev`, the index of the last range starting before `start`.
    fn insert_after(&mut self, prev: Option<u32>, start: u64, end: u64) {
        // No range starts in [start, end): the next one starts past it.
        let next_lo = self
            .ranges
            .range(end..)
            .next()
            .map_or(u64::MAX, |(&s, _)| s);
        if let Some(p) = prev
            && let Some(prev) = self.slots.get_mut(p as usize)
        {
            prev.next_lo = prev.next_lo.min(start);
        }
        let r = Slot { end, next_lo };
        let i = match self.free.pop() {
            Some(i) if (i as usize) < self.slots.len() => {
                self.slots[i as usize] = r;
                i
            }
            _ => {
                self.slots.push(r);
                (self.slots.len() - 1) as u32
            }
        };
        self.ranges.insert(start, i);
        self.hint(end, i);
    }

    /// Removes the range starting at `start`, if any; returns its end.
    fn remove(&mut self, start: u64) -> Option<u64> {
        let i = self.ranges.remove(&start)?;
        let r = self.slots.get_mut(i as usize)?;
        let end = r.end;
        // A free entry: no hint check passes it.
        r.next_lo = 0;
        self.free.push(i);
        Some(end)
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
        while let Some((&s, &i)) = self.ranges.range(..end).next_back() {
            let e = self.end_of(i);
            if e <= start {
                return;
            }
            self.remove(s);
            if e > end {
                self.insert(end, e);
            }
            if s < start {
                self.insert(s, start);
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
        if let Some((_, &i)) = self.ranges.range(..=addr).next_back()
            && self.end_of(i) > addr
        {
            return Some(addr);
        }
        self.ranges.range(addr..end).next().map(|(&s, _)| s)
    }

    /// Stale bytes in all.
    pub fn bytes(&self) -> u64 {
        self.iter().map(|(s, e)| e - s).sum()
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
            for (s, e) in r.iter() {
                prop_assert!(s < e);
                if let Some(p) = prev_end { prop_assert!(s > p, "adjacent or overlapping"); }
                prev_end = Some(e);
            }
            let (a, l) = probe;
            let want = (a..a + l).find(|b| model.contains(b));
            prop_assert_eq!(r.first_in(a, l), want);
        }
    }

    /// The ranges as the maximal runs of a byte set.
    fn runs(model: &BTreeSet<u64>) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &b in model {
            match out.last_mut() {
                Some((_, e)) if *e == b => *e = b + 1,
                _ => out.push((b, b + 1)),
            }
        }
        out
    }

    #[derive(Clone, Debug)]
    enum StreamOp {
        /// A mark at a short distance past the end of mark `k` (modulo the
        /// marks made): 0 continues it exactly, as a DMA stream does.
        Continue(usize, u64, u64),
        Mark(u64, u64),
        Clear(u64, u64),
        /// Points every end hint at an arbitrary range index.
        Scramble(u32),
    }

    fn stream_op() -> impl Strategy<Value = StreamOp> {
        prop_oneof![
            4 => (0usize..16, prop_oneof![3 => Just(0u64), 1 => 0u64..8], 1u64..24)
                .prop_map(|(k, gap, l)| StreamOp::Continue(k, gap, l)),
            2 => (0u64..400, 1u64..40).prop_map(|(a, l)| StreamOp::Mark(a, l)),
            1 => (0u64..400, 1u64..40).prop_map(|(a, l)| StreamOp::Clear(a, l)),
            1 => any::<u32>().prop_map(StreamOp::Scramble),
        ]
    }

    proptest! {
        /// Streams of marks that continue earlier ones (the hinted fast
        /// path), meet the next range (it must merge instead) or land
        /// inside one, among clears that split ranges and free their
        /// entries, with the hints scrambled at times: the ranges are
        /// exactly the runs of a byte set, and each range's `next_lo`
        /// stays at most the next start.
        #[test]
        fn hinted_marks_match_a_byte_set(ops in prop::collection::vec(stream_op(), 0..80)) {
            let mut r = StaleRanges::default();
            let mut model = BTreeSet::new();
            let mut ends: Vec<u64> = Vec::new();
            for o in &ops {
                match *o {
                    StreamOp::Continue(k, gap, l) => {
                        let a = ends.get(k % ends.len().max(1)).copied().unwrap_or(0) + gap;
                        r.mark(a, l);
                        model.extend(a..a + l);
                        ends.push(a + l);
                    }
                    StreamOp::Mark(a, l) => {
                        r.mark(a, l);
                        model.extend(a..a + l);
                        ends.push(a + l);
                    }
                    StreamOp::Clear(a, l) => {
                        r.clear(a, l);
                        for b in a..a + l { model.remove(&b); }
                    }
                    StreamOp::Scramble(seed) => {
                        let n = r.slots.len() as u32 + 2;
                        for (j, h) in r.by_end.iter_mut().enumerate() {
                            *h = (seed ^ j as u32).wrapping_mul(2_654_435_761) % n;
                        }
                    }
                }
                prop_assert_eq!(r.iter().collect::<Vec<_>>(), runs(&model));
                let starts: Vec<u64> = r.ranges.keys().copied().collect();
                for (j, &i) in r.ranges.values().enumerate() {
                    let next = starts.get(j + 1).copied().unwrap_or(u64::MAX);
                    prop_assert!(r.slots[i as usize].next_lo <= next);
                }
            }
            prop_assert_eq!(r.bytes(), model.len() as u64);
        }
    }

    /// A clone (no end hints) marks and clears as the original does.
    #[test]
    fn a_clone_without_hints_goes_on_as_the_original() {
        let mut r = StaleRanges::default();
        for row in 0..8u64 {
            r.mark(row * 0x1000, 0x200);
        }
        let mut c = r.clone();
        assert!(c.by_end.is_empty());
        for m in [&mut r, &mut c] {
            for row in 0..8u64 {
                m.mark(row * 0x1000 + 0x200, 0x200);
            }
            m.clear(0x3100, 0x10);
            m.mark(0x3400, 0xc00);
        }
        assert_eq!(r, c);
        assert_eq!(r.iter().collect::<Vec<_>>(), c.iter().collect::<Vec<_>>());
        assert_eq!(r.bytes(), 7 * 0x400 + 0x3f0 + 0xc00);
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
