//! Shadow memory of the race detector: for each byte range, the last
//! write and the reads since, as disjoint segments (docs/races.md).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// One access as the detector remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Acc {
    /// Agent id.
    pub(crate) agent: u32,
    /// The agent's own clock component at the access.
    pub(crate) epoch: u32,
    /// Who, for reports: the label id (word, host statement).
    pub(crate) who: u32,
    /// Ring slot of the packet's first TX descriptor (`u32::MAX`: not a
    /// packet).
    pub(crate) slot: u32,
    /// Cycle of the access.
    pub(crate) cycle: u64,
}

/// The accesses to one byte range.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seg {
    /// End (exclusive).
    pub(crate) end: u64,
    /// The last write, if anything wrote the range.
    pub(crate) write: Option<Acc>,
    /// The reads since that write, the latest per agent.
    pub(crate) reads: Vec<Acc>,
}

/// Bytes per shadow page: segments never cross a page boundary, so an
/// access finds its segments in one page's ordered map instead of a search
/// through every segment held.
const PAGE_BITS: u32 = 16;

/// One page's segments by start address. An ordered map, not a sorted
/// vector: a page can hold thousands of small segments (the completion
/// entries of 16 engines' rings), and an entry written between others
/// would move every segment after it.
type Segs = BTreeMap<u64, Seg>;

/// Disjoint segments by start address, in 64 KiB pages. A range wider
/// than a page is held as one segment per page it spans; visits and peeks
/// report such pieces one after the other, in address order.
#[derive(Debug, Default)]
pub(crate) struct Shadow {
    pages: HashMap<u64, Segs, BuildHasherDefault<PageHasher>>,
}

/// Hashes a page number (a `u64` key) with one multiply.
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, key: u64) {
        const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
        let product = u128::from(self.0 ^ key) * u128::from(MULTIPLIER);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// The pages `[lo, hi)` spans, each with the part of the range in it.
fn page_parts(lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64, u64)> {
    let first = lo >> PAGE_BITS;
    let last = (hi - 1) >> PAGE_BITS;
    (first..=last).map(move |p| {
        let base = p << PAGE_BITS;
        let end = base.saturating_add(1 << PAGE_BITS);
        (p, lo.max(base), hi.min(end))
    })
}

/// Splits the segment of `segs` holding `at` so that one starts there.
fn split(segs: &mut Segs, at: u64) {
    if let Some((_, seg)) = segs.range_mut(..at).next_back()
        && seg.end > at
    {
        let tail = Seg {
            end: seg.end,
            write: seg.write,
            reads: seg.reads.clone(),
        };
        seg.end = at;
        segs.insert(at, tail);
    }
}

/// [`Shadow::visit`] inside one page.
fn visit_page(segs: &mut Segs, lo: u64, hi: u64, f: &mut impl FnMut(u64, &mut Seg)) {
    // Fast paths: bytes after everything the page holds (a streaming
    // workload's next buffer) need one new segment, found without a
    // search. Else one search, the segment starting last before `hi`:
    // none reaching `lo` (a gap: a new completion entry between others)
    // needs one new segment; exactly one segment's bytes again (a ring
    // entry rewritten lap after lap) need none.
    let after_all = segs.last_key_value().is_none_or(|(_, last)| last.end <= lo);
    let before_hi = if after_all {
        None
    } else {
        segs.range_mut(..hi).next_back()
    };
    match before_hi {
        None => {}
        Some((_, last)) if last.end <= lo => {}
        Some((&s, seg)) => {
            if s == lo && seg.end == hi {
                f(lo, seg);
                return;
            }
            // Only that segment can reach past `hi`.
            if seg.end > hi {
                split(segs, hi);
            }
            split(segs, lo);
            // Fill the gaps (most accesses have none or one).
            let mut cur = lo;
            let mut gaps: Vec<(u64, u64)> = Vec::new();
            for (&s, seg) in segs.range(lo..hi) {
                if s > cur {
                    gaps.push((cur, s));
                }
                cur = seg.end;
            }
            if cur < hi {
                gaps.push((cur, hi));
            }
            for (a, b) in gaps {
                segs.insert(
                    a,
                    Seg {
                        end: b,
                        ..Seg::default()
                    },
                );
            }
            for (&s, seg) in segs.range_mut(lo..hi) {
                f(s, seg);
            }
            return;
        }
    }
    let mut seg = Seg {
        end: hi,
        ..Seg::default()
    };
    f(lo, &mut seg);
    segs.insert(lo, seg);
}

impl Shadow {
    /// Calls `f` on every segment of `[lo, hi)` in address order, empty
    /// segments filling the gaps nothing accessed yet.
    pub(crate) fn visit(&mut self, lo: u64, hi: u64, mut f: impl FnMut(u64, &mut Seg)) {
        if hi <= lo {
            return;
        }
        for (page, a, b) in page_parts(lo, hi) {
            visit_page(self.pages.entry(page).or_default(), a, b, &mut f);
        }
    }

    /// Calls `f` on every segment overlapping `[lo, hi)`, changing nothing.
    pub(crate) fn peek(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, &Seg)) {
        if hi <= lo {
            return;
        }
        for (page, a, b) in page_parts(lo, hi) {
            let Some(segs) = self.pages.get(&page) else {
                continue;
            };
            // The segment that starts before `a` and reaches into it (at
            // most one: they are disjoint), then those starting inside.
            if let Some((&s, seg)) = segs.range(..a).next_back()
                && seg.end > a
            {
                f(s, seg);
            }
            for (&s, seg) in segs.range(a..b) {
                f(s, seg);
            }
        }
    }

    /// Makes `[lo, hi)` written by `acc` with no reads.
    #[cfg(test)]
    pub(crate) fn set_written(&mut self, lo: u64, hi: u64, acc: Acc) {
        self.visit(lo, hi, |_, seg| {
            seg.write = Some(acc);
            seg.reads.clear();
        });
        // One segment per page part, as a write of the whole range leaves.
        for (page, a, b) in page_parts(lo, hi) {
            if let Some(segs) = self.pages.get_mut(&page) {
                segs.retain(|&s, _| s < a || s >= b);
                segs.insert(
                    a,
                    Seg {
                        end: b,
                        write: Some(acc),
                        reads: Vec::new(),
                    },
                );
            }
        }
    }

    /// Segments held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pages.values().map(BTreeMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(agent: u32) -> Acc {
        Acc {
            agent,
            epoch: 1,
            who: 0,
            slot: 0,
            cycle: 0,
        }
    }

    /// The sorted-vector page this module held before the ordered map:
    /// the reference the map is checked against.
    mod vec_page {
        use super::super::Seg;

        fn split(segs: &mut Vec<(u64, Seg)>, at: u64) {
            let i = segs.partition_point(|(s, _)| *s < at);
            if i > 0 && segs[i - 1].1.end > at {
                let seg = &mut segs[i - 1].1;
                let tail = Seg {
                    end: seg.end,
                    write: seg.write,
                    reads: seg.reads.clone(),
                };
                seg.end = at;
                segs.insert(i, (at, tail));
            }
        }

        pub(super) fn visit(
            segs: &mut Vec<(u64, Seg)>,
            lo: u64,
            hi: u64,
            f: &mut impl FnMut(u64, &mut Seg),
        ) {
            if segs.last().is_some_and(|(_, last)| last.end > lo) {
                split(segs, lo);
                split(segs, hi);
                let mut i = segs.partition_point(|(s, _)| *s < lo);
                let first = i;
                let mut cur = lo;
                while cur < hi {
                    match segs.get(i) {
                        Some(&(s, ref seg)) if s == cur => cur = seg.end,
                        next => {
                            let end = next.map_or(hi, |&(s, _)| s.min(hi));
                            let seg = Seg {
                                end,
                                ..Seg::default()
                            };
                            segs.insert(i, (cur, seg));
                            cur = end;
                        }
                    }
                    i += 1;
                }
                for (s, seg) in &mut segs[first..i] {
                    f(*s, seg);
                }
                return;
            }
            let mut seg = Seg {
                end: hi,
                ..Seg::default()
            };
            f(lo, &mut seg);
            segs.push((lo, seg));
        }
    }

    proptest::proptest! {
        /// Visits of random ranges (writes and reads by random agents) in
        /// one page see the segments, in the order, that the sorted vector
        /// saw, and leave the same segments; peeks agree.
        #[test]
        fn the_ordered_map_page_visits_as_the_sorted_vector_did(
            ops in proptest::collection::vec((0u64..512, 1u64..96, 0u32..4, proptest::bool::ANY), 1..80),
        ) {
            let mut map = Shadow::default();
            let mut vec: Vec<(u64, Seg)> = Vec::new();
            for (k, &(lo, len, agent, write)) in ops.iter().enumerate() {
                let hi = lo + len;
                let a = Acc { cycle: k as u64, ..acc(agent) };
                let touch = |seg: &mut Seg| {
                    if write {
                        seg.write = Some(a);
                        seg.reads.clear();
                    } else {
                        seg.reads.push(a);
                    }
                };
                let (mut got, mut want) = (Vec::new(), Vec::new());
                map.visit(lo, hi, |start, seg| {
                    got.push((start, seg.end));
                    touch(seg);
                });
                vec_page::visit(&mut vec, lo, hi, &mut |start, seg| {
                    want.push((start, seg.end));
                    touch(seg);
                });
                proptest::prop_assert_eq!(got, want);
            }
            let mut held = Vec::new();
            map.peek(0, 1024, |start, seg| held.push((start, seg.end, seg.write, seg.reads.clone())));
            let want: Vec<_> = vec.iter().map(|(s, seg)| (*s, seg.end, seg.write, seg.reads.clone())).collect();
            proptest::prop_assert_eq!(held, want);
            for &(lo, len, _, _) in &ops {
                let mut a = Vec::new();
                map.peek(lo + len / 2, lo + len + 7, |s, seg| a.push((s, seg.end)));
                let b: Vec<_> = vec
                    .iter()
                    .filter(|(s, seg)| seg.end > lo + len / 2 && *s < lo + len + 7)
                    .map(|(s, seg)| (*s, seg.end))
                    .collect();
                proptest::prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn visits_cover_the_range_exactly_once_and_writes_collapse() {
        let mut s = Shadow::default();
        s.set_written(0x100, 0x200, acc(1));
        let mut seen = Vec::new();
        s.visit(0x80, 0x180, |start, seg| {
            seen.push((start, seg.end, seg.write.map(|a| a.agent)))
        });
        assert_eq!(
            seen,
            [(0x80, 0x100, None), (0x100, 0x180, Some(1))],
            "a gap, then the written part"
        );
        s.set_written(0x80, 0x200, acc(2));
        let mut seen = Vec::new();
        s.visit(0, 0x300, |start, seg| {
            seen.push((start, seg.end, seg.write.map(|a| a.agent)))
        });
        assert_eq!(
            seen,
            [
                (0, 0x80, None),
                (0x80, 0x200, Some(2)),
                (0x200, 0x300, None)
            ]
        );
    }

    #[test]
    fn a_range_over_pages_is_visited_in_order_piece_by_piece() {
        let page = 1u64 << PAGE_BITS;
        let mut s = Shadow::default();
        // Written out of order inside a page, then a range over two pages.
        s.visit(0x400, 0x600, |_, seg| seg.write = Some(acc(1)));
        s.visit(0x200, 0x400, |_, seg| seg.write = Some(acc(2)));
        s.visit(page - 0x100, page + 0x100, |_, seg| {
            seg.write = Some(acc(3))
        });
        let mut seen = Vec::new();
        s.visit(0x100, page + 0x200, |start, seg| {
            seen.push((start, seg.end, seg.write.map(|a| a.agent)))
        });
        assert_eq!(
            seen,
            [
                (0x100, 0x200, None),
                (0x200, 0x400, Some(2)),
                (0x400, 0x600, Some(1)),
                (0x600, page - 0x100, None),
                (page - 0x100, page, Some(3)),
                (page, page + 0x100, Some(3)),
                (page + 0x100, page + 0x200, None),
            ]
        );
        let mut peeked = Vec::new();
        s.peek(0x300, page + 0x80, |start, seg| {
            peeked.push((start, seg.end))
        });
        assert_eq!(
            peeked,
            [
                (0x200, 0x400),
                (0x400, 0x600),
                (0x600, page - 0x100),
                (page - 0x100, page),
                (page, page + 0x100)
            ]
        );
        // Visiting the same bytes again adds nothing.
        let n = s.len();
        s.visit(0x100, page + 0x200, |_, _| {});
        assert_eq!(s.len(), n);
    }
}
