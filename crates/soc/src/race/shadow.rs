//! Shadow memory of the race detector: for each byte range, the last
//! write and the reads since, as disjoint segments (docs/races.md).

use std::collections::BTreeMap;

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

/// Disjoint segments by start address.
#[derive(Debug, Default)]
pub(crate) struct Shadow {
    segs: BTreeMap<u64, Seg>,
}

impl Shadow {
    /// Splits the segment holding `at` so that one starts there.
    fn split(&mut self, at: u64) {
        if let Some((_, seg)) = self.segs.range_mut(..at).next_back()
            && seg.end > at
        {
            let tail = Seg {
                end: seg.end,
                write: seg.write,
                reads: seg.reads.clone(),
            };
            seg.end = at;
            self.segs.insert(at, tail);
        }
    }

    /// Calls `f` on every segment of `[lo, hi)` in address order, empty
    /// segments filling the gaps nothing accessed yet.
    pub(crate) fn visit(&mut self, lo: u64, hi: u64, mut f: impl FnMut(u64, &mut Seg)) {
        if hi <= lo {
            return;
        }
        // Fast paths: bytes nothing touched yet (a streaming workload's
        // next buffer), or exactly one segment's bytes again.
        match self.segs.range_mut(..hi).next_back() {
            None => {
                let mut seg = Seg {
                    end: hi,
                    ..Seg::default()
                };
                f(lo, &mut seg);
                self.segs.insert(lo, seg);
                return;
            }
            Some((_, seg)) if seg.end <= lo => {
                let mut seg = Seg {
                    end: hi,
                    ..Seg::default()
                };
                f(lo, &mut seg);
                self.segs.insert(lo, seg);
                return;
            }
            Some((&start, seg)) if start == lo && seg.end == hi => {
                f(lo, seg);
                return;
            }
            Some(_) => {}
        }
        self.split(lo);
        self.split(hi);
        // Fill the gaps, one at a time (most accesses have none or one).
        let mut cur = lo;
        while cur < hi {
            let next = self
                .segs
                .range(cur..hi)
                .next()
                .map(|(&s, seg)| (s, seg.end));
            match next {
                Some((s, end)) if s == cur => cur = end,
                Some((s, _)) => {
                    self.segs.insert(
                        cur,
                        Seg {
                            end: s,
                            ..Seg::default()
                        },
                    );
                }
                None => {
                    self.segs.insert(
                        cur,
                        Seg {
                            end: hi,
                            ..Seg::default()
                        },
                    );
                    cur = hi;
                }
            }
        }
        for (&s, seg) in self.segs.range_mut(lo..hi) {
            f(s, seg);
        }
    }

    /// Calls `f` on every segment overlapping `[lo, hi)`, changing nothing.
    pub(crate) fn peek(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, &Seg)) {
        if let Some((&start, seg)) = self.segs.range(..lo).next_back()
            && seg.end > lo
        {
            f(start, seg);
        }
        for (&start, seg) in self.segs.range(lo..hi) {
            f(start, seg);
        }
    }

    /// Makes `[lo, hi)` one segment written by `acc` with no reads.
    #[cfg(test)]
    pub(crate) fn set_written(&mut self, lo: u64, hi: u64, acc: Acc) {
        if hi <= lo {
            return;
        }
        self.split(lo);
        self.split(hi);
        while let Some((&k, _)) = self.segs.range(lo..hi).next() {
            self.segs.remove(&k);
        }
        self.segs.insert(
            lo,
            Seg {
                end: hi,
                write: Some(acc),
                reads: Vec::new(),
            },
        );
    }

    /// Segments held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.segs.len()
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
}
