//! A `gen_pool`-like range allocator (docs/references/driver.md §5.1–5.2): a free list
//! of extents with first-fit, aligned first-fit and fixed-address
//! allocation at a fixed granularity.

use std::collections::BTreeMap;

/// A pool over `[base, base + size)`, allocating in multiples of
/// `granule_bytes`.
#[derive(Clone, Debug)]
pub struct GenPool {
    base: u64,
    size_bytes: u64,
    granule_bytes: u64,
    /// Free extents: start → length.
    free: BTreeMap<u64, u64>,
    avail_bytes: u64,
}

impl GenPool {
    /// An empty pool (everything free). `granule_bytes` must be a power of two.
    #[must_use]
    pub fn new(base: u64, size_bytes: u64, granule_bytes: u64) -> Self {
        let mut free = BTreeMap::new();
        if size_bytes > 0 {
            free.insert(base, size_bytes);
        }
        Self {
            base,
            size_bytes,
            granule_bytes,
            free,
            avail_bytes: size_bytes,
        }
    }

    /// First address.
    #[must_use]
    pub fn base(&self) -> u64 {
        self.base
    }

    /// One past the last address.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.base + self.size_bytes
    }

    /// Total bytes.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Free bytes.
    #[must_use]
    pub fn avail_bytes(&self) -> u64 {
        self.avail_bytes
    }

    /// `size` rounded up to the granule.
    #[must_use]
    pub fn round(&self, size: u64) -> Option<u64> {
        size.checked_add(self.granule_bytes - 1)
            .map(|s| s & !(self.granule_bytes - 1))
    }

    /// First fit: the lowest free address with `size` bytes after it
    /// (`gen_pool_alloc`), aligned to `align` when `align > granule`
    /// (`gen_pool_first_fit_align`).
    pub fn alloc(&mut self, size: u64, align: u64) -> Option<u64> {
        let size = self.round(size.max(1))?;
        let align = align.max(self.granule_bytes);
        if !align.is_power_of_two() {
            return None;
        }
        let found = self.free.iter().find_map(|(&start, &len)| {
            let at = start.checked_add(align - 1)? & !(align - 1);
            (at.checked_add(size)? <= start + len).then_some(at)
        })?;
        self.take(found, size).then_some(found)
    }

    /// Allocates exactly `[at, at + size)` (`gen_pool_fixed_alloc`);
    /// false if any of it is in use or outside the pool.
    pub fn alloc_fixed(&mut self, at: u64, size: u64) -> bool {
        match self.round(size.max(1)) {
            Some(size) if at.is_multiple_of(self.granule_bytes) => self.take(at, size),
            _ => false,
        }
    }

    /// Removes `[at, at + size)` from the free list if it is wholly free.
    fn take(&mut self, at: u64, size: u64) -> bool {
        let Some((&start, &len)) = self.free.range(..=at).next_back() else {
            return false;
        };
        let Some(end) = at.checked_add(size) else {
            return false;
        };
        if end > start + len {
            return false;
        }
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if start + len > end {
            self.free.insert(end, start + len - end);
        }
        self.avail_bytes -= size;
        true
    }

    /// Returns `[at, at + size)` to the pool, merging neighbours. False
    /// (and no change) if any of it is already free or outside the pool.
    pub fn free(&mut self, at: u64, size: u64) -> bool {
        let Some(size) = self.round(size.max(1)) else {
            return false;
        };
        let end = at.saturating_add(size);
        if at < self.base || end > self.end() {
            return false;
        }
        if let Some((&s, &l)) = self.free.range(..end).next_back()
            && s + l > at
        {
            return false; // overlaps a free extent: double free
        }
        let (mut start, mut stop) = (at, end);
        if let Some((&s, &l)) = self.free.range(..at).next_back()
            && s + l == at
        {
            self.free.remove(&s);
            start = s;
        }
        if let Some(&l) = self.free.get(&end) {
            self.free.remove(&end);
            stop = end + l;
        }
        self.free.insert(start, stop - start);
        self.avail_bytes += size;
        true
    }

    /// Whether `[at, at + size)` is wholly free.
    #[must_use]
    pub fn is_free(&self, at: u64, size: u64) -> bool {
        self.free
            .range(..=at)
            .next_back()
            .is_some_and(|(&s, &l)| at + size <= s + l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const K4: u64 = 4096;

    #[test]
    fn first_fit_rounds_to_pages_and_reuses_lowest_hole() {
        let mut p = GenPool::new(0x1000_0000, 16 * K4, K4);
        let a = p.alloc(1, 0).unwrap();
        let b = p.alloc(K4 + 1, 0).unwrap();
        assert_eq!((a, b), (0x1000_0000, 0x1000_1000));
        assert_eq!(p.avail_bytes(), 13 * K4);
        assert!(p.free(a, 1));
        assert!(!p.free(a, 1), "double free is refused");
        assert_eq!(p.alloc(K4, 0), Some(a), "first fit takes the lowest hole");
    }

    #[test]
    fn aligned_first_fit_skips_misaligned_holes() {
        let mut p = GenPool::new(0, 64 * K4, K4);
        p.alloc(K4, 0).unwrap();
        let a = p.alloc(K4, 16 * K4).unwrap();
        assert_eq!(a, 16 * K4);
        // The hole below the aligned block is still usable.
        assert_eq!(p.alloc(K4, 0), Some(K4));
    }

    #[test]
    fn fixed_allocation_needs_a_free_range() {
        let mut p = GenPool::new(0, 8 * K4, K4);
        assert!(p.alloc_fixed(6 * K4, 2 * K4));
        assert!(!p.alloc_fixed(7 * K4, K4));
        assert!(!p.alloc_fixed(7 * K4, 2 * K4), "beyond the end");
        assert_eq!(p.alloc(6 * K4, 0), Some(0));
        assert_eq!(p.alloc(K4, 0), None);
    }

    proptest! {
        /// Live allocations never overlap, are granule aligned, and free
        /// bytes always equal size minus live bytes.
        #[test]
        fn live_ranges_never_overlap(ops in proptest::collection::vec((0u8..3, 1u64..40_000, 0u32..4), 1..120)) {
            let mut p = GenPool::new(0x4000_0000, 64 * K4, K4);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (op, size, align_sel) in ops {
                if op < 2 {
                    let align = [0, K4, 4 * K4, 16 * K4][align_sel as usize];
                    if let Some(at) = p.alloc(size, align) {
                        let sz = p.round(size).unwrap();
                        prop_assert_eq!(at % align.max(K4), 0);
                        for &(s, l) in &live {
                            prop_assert!(at + sz <= s || s + l <= at, "overlap");
                        }
                        live.push((at, sz));
                    }
                } else if !live.is_empty() {
                    let (s, l) = live.remove(size as usize % live.len());
                    prop_assert!(p.free(s, l));
                }
                let used: u64 = live.iter().map(|&(_, l)| l).sum();
                prop_assert_eq!(p.avail_bytes(), 64 * K4 - used);
            }
        }
    }
}
