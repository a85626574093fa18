//! Sparse linear memory: an HBM stack, the host-memory window.
//!
//! Storage comes in 64 KiB pages allocated on the first write that puts a
//! non-zero byte in them, so four 24 GiB HBM stacks (docs/references/driver.md §6,
//! docs/references/design.md §2) cost nothing until used. Data moves page to page with
//! `copy_from_slice`, looking each page up once per contiguous run
//! (docs/references/design.md §7).
//!
//! [`SparseMemory::snapshot`] copies a memory without copying its bytes:
//! both copies share every page until one of them writes it (copy on
//! write), which is what the debugger's checkpoints hold
//! (docs/user-guide.md §12 "Going back"). A page this memory owns alone is
//! written in place: the only cost on the write path is telling the two
//! kinds of page apart.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::{Bytes, MemFault};

/// Size of one backing page: 64 KiB (docs/references/design.md §7).
pub const PAGE_BYTES: usize = 64 * 1024;
const PAGE_SHIFT: u32 = PAGE_BYTES.trailing_zeros();
const PAGE_MASK: u64 = PAGE_BYTES as u64 - 1;

/// One backing page: owned by this memory alone, or shared with
/// snapshots ([`SparseMemory::snapshot`]) until the first write here copies
/// it.
#[derive(Clone)]
enum Page {
    Own(Box<[u8; PAGE_BYTES]>),
    Shared(SharedBytes),
}

/// The bytes of a shared page: the page's own box behind an `Arc`, so that
/// sharing a page moves a pointer instead of copying 64 KiB (the `Arc`'s
/// small allocation is the price).
#[allow(clippy::redundant_allocation)]
type SharedBytes = Arc<Box<[u8; PAGE_BYTES]>>;

impl Page {
    /// A page to hold a place for a moment: one shared zero page, so that
    /// taking a page's bytes out allocates nothing.
    fn stand_in() -> Page {
        static ZERO: std::sync::OnceLock<SharedBytes> = std::sync::OnceLock::new();
        Page::Shared(Arc::clone(ZERO.get_or_init(|| Arc::new(zeroed()))))
    }

    /// Makes the page shareable: moves the bytes behind an `Arc` (no copy).
    fn share(&mut self) {
        if let Page::Own(_) = self
            && let Page::Own(bytes) = std::mem::replace(self, Page::stand_in())
        {
            *self = Page::Shared(Arc::new(bytes));
        }
    }

    /// Takes the page back for writing: the bytes when no snapshot holds
    /// them any more, a copy otherwise.
    #[cold]
    #[inline(never)]
    fn unshare(&mut self) -> &mut [u8] {
        if let Page::Shared(_) = self {
            let old = std::mem::replace(self, Page::stand_in());
            if let Page::Shared(bytes) = old {
                *self = Page::Own(Arc::unwrap_or_clone(bytes));
            }
        }
        match self {
            Page::Own(bytes) => bytes.as_mut_slice(),
            // Not reached: the page is its own now.
            Page::Shared(bytes) => Arc::make_mut(bytes).as_mut_slice(),
        }
    }
}

impl Deref for Page {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Page::Own(bytes) => bytes.as_slice(),
            Page::Shared(bytes) => bytes.as_slice(),
        }
    }
}

impl DerefMut for Page {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Page::Own(bytes) => bytes.as_mut_slice(),
            Page::Shared(_) => self.unshare(),
        }
    }
}

type PageMap = HashMap<u64, Page, BuildHasherDefault<PageIndexHasher>>;

/// A fixed-size, zero-initialised byte memory with lazily allocated pages.
///
/// Implements [`Bytes<u64>`] with the `u64` being the byte offset inside the
/// memory. Reads never allocate; writes allocate only pages that receive a
/// non-zero byte; filling or copying zeros over a whole page releases it.
#[derive(Clone)]
pub struct SparseMemory {
    size_bytes: u64,
    pages: PageMap,
}

impl SparseMemory {
    /// A memory of `size_bytes` bytes, all zero, with no page allocated.
    pub fn new(size_bytes: u64) -> Self {
        SparseMemory {
            size_bytes,
            pages: PageMap::default(),
        }
    }

    /// Loads a byte of every 64-byte host cache line that `len` bytes at
    /// `offset` overlap into the host's caches and drops it: a host-side
    /// hint with no effect on the memory (safe Rust has no prefetch
    /// instruction; the loads run ahead while the simulator goes on). One
    /// byte every 64 from `offset`, and the last byte, meet every such
    /// line whatever the host alignment. Pages not allocated are skipped.
    pub fn touch(&self, offset: u64, len: u64) {
        let Some(last) = len.checked_sub(1).map(|l| offset.saturating_add(l)) else {
            return;
        };
        // Each page looked up once for the lines it holds.
        let mut current: Option<(u64, Option<&Page>)> = None;
        let mut load = |at: u64| {
            let index = at >> PAGE_SHIFT;
            let page = match current {
                Some((i, page)) if i == index => page,
                _ => {
                    let page = self.pages.get(&index);
                    current = Some((index, page));
                    page
                }
            };
            if let Some(&b) = page.and_then(|page| page.get((at & PAGE_MASK) as usize)) {
                std::hint::black_box(b);
            }
        };
        let mut at = offset;
        while at < last {
            load(at);
            let Some(next) = at.checked_add(64) else {
                break;
            };
            at = next;
        }
        load(last);
    }

    /// Size of the memory in bytes.
    pub const fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// A copy of this memory that shares every page with it: no byte is
    /// copied now; the first write to a shared page, on either side, copies
    /// that page (copy on write). `clone` copies every page instead.
    pub fn snapshot(&mut self) -> SparseMemory {
        self.share_pages();
        self.clone()
    }

    /// Makes every page shareable, so that `clone` shares them instead of
    /// copying them ([`SparseMemory::snapshot`]).
    pub fn share_pages(&mut self) {
        for page in self.pages.values_mut() {
            page.share();
        }
    }

    /// The identity of every allocated page (the address of its bytes):
    /// two memories that hold the same identity share that page
    /// ([`SparseMemory::snapshot`]), so the host memory several snapshots
    /// hold together is one page per distinct identity.
    pub fn page_ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.pages.values().map(|page| page.as_ptr() as usize)
    }

    /// Number of backing pages currently allocated.
    pub fn allocated_pages(&self) -> usize {
        self.pages.len()
    }

    /// Host bytes held by allocated pages.
    pub fn allocated_bytes(&self) -> u64 {
        self.pages.len() as u64 * PAGE_BYTES as u64
    }

    /// The allocated pages in address order, as `(offset, bytes)`; the last
    /// page is cut at [`size_bytes`](Self::size_bytes). Pages not listed
    /// read as zero.
    pub fn pages(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        let mut indices: Vec<u64> = self.pages.keys().copied().collect();
        indices.sort_unstable();
        indices.into_iter().filter_map(move |index| {
            let page = self.pages.get(&index)?;
            let offset = index << PAGE_SHIFT;
            let visible = self
                .size_bytes
                .saturating_sub(offset)
                .min(PAGE_BYTES as u64);
            Some((offset, page.get(..visible as usize)?))
        })
    }

    /// Checks that `[offset, offset + len)` lies inside the memory.
    pub fn check_range(&self, offset: u64, len: u64) -> Result<(), MemFault> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size_bytes => Ok(()),
            _ => Err(MemFault::OutOfRange {
                offset,
                len,
                size: self.size_bytes,
            }),
        }
    }

    /// Sets `len` bytes at `offset` to `byte`. Zero-filling allocates
    /// nothing and releases pages it covers completely.
    pub fn fill_range(&mut self, offset: u64, len: u64, byte: u8) -> Result<(), MemFault> {
        self.check_range(offset, len)?;
        for run in PageRuns::new(offset, len) {
            match self.pages.entry(run.page) {
                Entry::Occupied(entry) if byte == 0 && run.len == PAGE_BYTES => {
                    entry.remove();
                }
                Entry::Occupied(mut entry) => entry.get_mut()[run.span()].fill(byte),
                Entry::Vacant(_) if byte == 0 => {}
                Entry::Vacant(entry) if run.len == PAGE_BYTES => {
                    entry.insert(page_of(vec![byte; PAGE_BYTES].into_boxed_slice()));
                }
                Entry::Vacant(entry) => entry.insert(new_page())[run.span()].fill(byte),
            }
        }
        Ok(())
    }

    /// Copies `len` bytes from `src_off` to `dst_off` inside this memory,
    /// with `memmove` semantics for overlapping ranges. Both ranges are
    /// checked before anything is written.
    pub fn copy(&mut self, src_off: u64, dst_off: u64, len: u64) -> Result<(), MemFault> {
        self.check_range(src_off, len)?;
        self.check_range(dst_off, len)?;
        if len == 0 || src_off == dst_off {
            return Ok(());
        }
        // Ranges are in bounds, so none of these sums overflow.
        let overlaps_ahead = dst_off > src_off && dst_off < src_off + len;
        if overlaps_ahead {
            // Walk from the end so no source byte is overwritten before it
            // is read.
            let mut remaining = len;
            while remaining > 0 {
                let src_end = src_off + remaining;
                let dst_end = dst_off + remaining;
                let n = remaining
                    .min(((src_end - 1) & PAGE_MASK) + 1)
                    .min(((dst_end - 1) & PAGE_MASK) + 1);
                self.copy_chunk(src_end - n, dst_end - n, n as usize);
                remaining -= n;
            }
        } else {
            for (src, dst, n) in PairRuns::new(src_off, dst_off, len) {
                self.copy_chunk(src, dst, n);
            }
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`,
    /// page to page with no intermediate buffer. Absent (zero) source pages
    /// allocate nothing in `dst` where its page is absent too. Both ranges
    /// are checked before anything is written.
    pub fn copy_between(
        src: &SparseMemory,
        src_off: u64,
        dst: &mut SparseMemory,
        dst_off: u64,
        len: u64,
    ) -> Result<(), MemFault> {
        src.check_range(src_off, len)?;
        dst.check_range(dst_off, len)?;
        for (src_pos, dst_pos, n) in PairRuns::new(src_off, dst_off, len) {
            let (src_page, src_in) = split(src_pos);
            let (dst_page, dst_in) = split(dst_pos);
            let source = src
                .pages
                .get(&src_page)
                .map(|page| &page[src_in..src_in + n]);
            match (source, dst.pages.entry(dst_page)) {
                (Some(bytes), Entry::Occupied(mut entry)) => {
                    entry.get_mut()[dst_in..dst_in + n].copy_from_slice(bytes);
                }
                (Some(bytes), Entry::Vacant(entry)) => {
                    if !is_zero(bytes) {
                        entry.insert(new_page())[dst_in..dst_in + n].copy_from_slice(bytes);
                    }
                }
                (None, Entry::Occupied(entry)) if n == PAGE_BYTES => {
                    entry.remove();
                }
                (None, Entry::Occupied(mut entry)) => {
                    entry.get_mut()[dst_in..dst_in + n].fill(0);
                }
                (None, Entry::Vacant(_)) => {}
            }
        }
        Ok(())
    }

    /// [`Bytes::read`] past its one-page fast path: page by page, absent
    /// pages reading as zeros. The caller has range-checked the read.
    #[inline(never)]
    fn read_runs(&self, offset: u64, buf: &mut [u8]) {
        let mut done = 0;
        for run in PageRuns::new(offset, buf.len() as u64) {
            let out = &mut buf[done..done + run.len];
            match self.pages.get(&run.page) {
                Some(page) => out.copy_from_slice(&page[run.span()]),
                None => out.fill(0),
            }
            done += run.len;
        }
    }

    /// [`Bytes::write`] past its one-page fast path: page by page,
    /// allocating pages that receive a non-zero byte. The caller has
    /// range-checked the write.
    #[inline(never)]
    fn write_runs(&mut self, offset: u64, data: &[u8]) {
        let mut done = 0;
        for run in PageRuns::new(offset, data.len() as u64) {
            let bytes = &data[done..done + run.len];
            match self.pages.entry(run.page) {
                Entry::Occupied(mut entry) => entry.get_mut()[run.span()].copy_from_slice(bytes),
                Entry::Vacant(entry) => {
                    if run.len == PAGE_BYTES {
                        // A whole page: built from the bytes, not zeroed
                        // first (a large `fill` or `load` writes whole pages).
                        if !is_zero(bytes) {
                            entry.insert(page_of(bytes.into()));
                        }
                    } else if !is_zero(bytes) {
                        entry.insert(new_page())[run.span()].copy_from_slice(bytes);
                    }
                }
            }
            done += run.len;
        }
    }

    /// Copies one chunk that lies inside one source page and one
    /// destination page. The caller has range-checked it.
    fn copy_chunk(&mut self, src_pos: u64, dst_pos: u64, n: usize) {
        let (src_page, src_in) = split(src_pos);
        let (dst_page, dst_in) = split(dst_pos);
        if src_page == dst_page {
            if let Some(page) = self.pages.get_mut(&src_page) {
                page.copy_within(src_in..src_in + n, dst_in);
            }
            return;
        }
        match self.pages.get_disjoint_mut([&src_page, &dst_page]) {
            [Some(src), Some(dst)] => {
                dst[dst_in..dst_in + n].copy_from_slice(&src[src_in..src_in + n]);
            }
            [Some(src), None] => {
                let bytes = &src[src_in..src_in + n];
                if !is_zero(bytes) {
                    let mut page = new_page();
                    page[dst_in..dst_in + n].copy_from_slice(bytes);
                    self.pages.insert(dst_page, page);
                }
            }
            [None, Some(dst)] => {
                if n == PAGE_BYTES {
                    self.pages.remove(&dst_page);
                } else {
                    dst[dst_in..dst_in + n].fill(0);
                }
            }
            [None, None] => {}
        }
    }
}

impl Bytes<u64> for SparseMemory {
    fn check_read(&self, offset: u64, len: usize) -> Result<(), MemFault> {
        self.check_range(offset, len as u64)
    }

    #[inline]
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        self.check_range(offset, buf.len() as u64)?;
        // A read inside one page (a descriptor burst): one lookup, inlined
        // into the caller.
        let (page, start) = split(offset);
        if let Some(end) = start.checked_add(buf.len())
            && end <= PAGE_BYTES
        {
            match self.pages.get(&page).and_then(|p| p.get(start..end)) {
                Some(bytes) => buf.copy_from_slice(bytes),
                None => buf.fill(0),
            }
            return Ok(());
        }
        self.read_runs(offset, buf);
        Ok(())
    }

    #[inline]
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemFault> {
        self.check_range(offset, data.len() as u64)?;
        // A small write into an allocated page (ring descriptors,
        // completion entries): one lookup, no entry bookkeeping, inlined
        // into the caller.
        let (page, start) = split(offset);
        if let Some(dst) = self
            .pages
            .get_mut(&page)
            .and_then(|p| p.get_mut(start..start.checked_add(data.len())?))
        {
            // Completion entries and descriptors (16 bytes) are moved
            // without a call to memcpy.
            match (
                <&mut [u8; 16]>::try_from(&mut *dst),
                <&[u8; 16]>::try_from(data),
            ) {
                (Ok(d), Ok(s)) => *d = *s,
                _ => dst.copy_from_slice(data),
            }
            return Ok(());
        }
        self.write_runs(offset, data);
        Ok(())
    }

    fn fill(&mut self, offset: u64, len: usize, byte: u8) -> Result<(), MemFault> {
        self.fill_range(offset, len as u64, byte)
    }
}

impl fmt::Debug for SparseMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseMemory")
            .field("size_bytes", &format_args!("{:#x}", self.size_bytes))
            .field("allocated_pages", &self.pages.len())
            .finish_non_exhaustive()
    }
}

/// A zeroed page (`calloc`-backed, so the OS maps it lazily).
fn new_page() -> Page {
    Page::Own(zeroed())
}

/// A zeroed page's bytes (`calloc`-backed).
fn zeroed() -> Box<[u8; PAGE_BYTES]> {
    match page_of(vec![0u8; PAGE_BYTES].into_boxed_slice()) {
        Page::Own(bytes) => bytes,
        Page::Shared(bytes) => Arc::unwrap_or_clone(bytes),
    }
}

/// A page from `PAGE_BYTES` bytes (the length is the type's, so a slice
/// of it needs no length load or bounds check beyond the page's).
fn page_of(bytes: Box<[u8]>) -> Page {
    match Box::<[u8; PAGE_BYTES]>::try_from(bytes) {
        Ok(page) => Page::Own(page),
        // Not reached: every caller passes a whole page.
        Err(short) => {
            let mut page = Box::new([0u8; PAGE_BYTES]);
            let n = short.len().min(PAGE_BYTES);
            page[..n].copy_from_slice(&short[..n]);
            Page::Own(page)
        }
    }
}

/// Page index and offset inside the page.
const fn split(pos: u64) -> (u64, usize) {
    (pos >> PAGE_SHIFT, (pos & PAGE_MASK) as usize)
}

/// True if every byte is zero; vectorises in 64-byte blocks.
fn is_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(64)
        .all(|block| block.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// One contiguous run inside one page.
#[derive(Clone, Copy, Debug)]
struct PageRun {
    page: u64,
    start: usize,
    len: usize,
}

impl PageRun {
    fn span(self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

/// Splits a range at page boundaries. The range must be in bounds of a
/// `u64` (checked by the caller), so `pos` never overflows.
#[derive(Clone, Copy, Debug)]
struct PageRuns {
    pos: u64,
    remaining: u64,
}

impl PageRuns {
    fn new(offset: u64, len: u64) -> Self {
        PageRuns {
            pos: offset,
            remaining: len,
        }
    }
}

impl Iterator for PageRuns {
    type Item = PageRun;

    fn next(&mut self) -> Option<PageRun> {
        if self.remaining == 0 {
            return None;
        }
        let (page, start) = split(self.pos);
        let len = (PAGE_BYTES - start).min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        self.pos += len as u64;
        self.remaining -= len as u64;
        Some(PageRun { page, start, len })
    }
}

/// Splits a pair of equal-length ranges at the page boundaries of both,
/// yielding `(src_pos, dst_pos, len)`.
#[derive(Clone, Copy, Debug)]
struct PairRuns {
    src: u64,
    dst: u64,
    remaining: u64,
}

impl PairRuns {
    fn new(src: u64, dst: u64, len: u64) -> Self {
        PairRuns {
            src,
            dst,
            remaining: len,
        }
    }
}

impl Iterator for PairRuns {
    type Item = (u64, u64, usize);

    fn next(&mut self) -> Option<(u64, u64, usize)> {
        if self.remaining == 0 {
            return None;
        }
        let src_room = PAGE_BYTES as u64 - (self.src & PAGE_MASK);
        let dst_room = PAGE_BYTES as u64 - (self.dst & PAGE_MASK);
        let len = self.remaining.min(src_room).min(dst_room);
        let item = (self.src, self.dst, len as usize);
        self.src += len;
        self.dst += len;
        self.remaining -= len;
        Some(item)
    }
}

/// Hasher for page indices: one folded 64×64→128-bit multiply, far cheaper
/// than SipHash and deterministic. Page indices are not attacker-chosen.
#[derive(Clone, Copy, Debug, Default)]
struct PageIndexHasher(u64);

impl Hasher for PageIndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed; this keeps the trait contract for
        // anything else.
        for chunk in bytes.chunks(8) {
            let mut raw = [0u8; 8];
            raw[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(raw));
        }
    }

    fn write_u64(&mut self, key: u64) {
        const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
        let product = u128::from(self.0 ^ key) * u128::from(MULTIPLIER);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn unwritten_bytes_read_zero_and_reads_do_not_allocate() {
        let mem = SparseMemory::new(24 * GIB);
        let buf = mem.read_vec(12 * GIB - 7, 200_000).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(mem.allocated_pages(), 0);
    }

    #[test]
    fn snapshot_shares_pages_until_either_side_writes() {
        let mut mem = SparseMemory::new(1 << 20);
        mem.write(0x10, &[1, 2, 3, 4]).unwrap();
        mem.write(PAGE_BYTES as u64 + 8, &[9]).unwrap();
        let mut snap = mem.snapshot();
        // Shared: the same pages, no copy.
        let mut ids: Vec<usize> = mem.page_ids().collect();
        let mut snap_ids: Vec<usize> = snap.page_ids().collect();
        ids.sort_unstable();
        snap_ids.sort_unstable();
        assert_eq!(ids, snap_ids);
        // A write to the original does not reach the snapshot, and the
        // page it wrote is no longer shared.
        mem.write(0x10, &[0xaa]).unwrap();
        assert_eq!(snap.read_vec(0x10, 4).unwrap(), [1, 2, 3, 4]);
        assert_eq!(mem.read_vec(0x10, 4).unwrap(), [0xaa, 2, 3, 4]);
        let shared = mem
            .page_ids()
            .filter(|id| snap.page_ids().any(|s| s == *id))
            .count();
        assert_eq!(shared, 1);
        // Nor one to the snapshot the original.
        snap.write(PAGE_BYTES as u64 + 8, &[7]).unwrap();
        assert_eq!(mem.read_vec(PAGE_BYTES as u64 + 8, 1).unwrap(), [9]);
        assert_eq!(snap.read_vec(PAGE_BYTES as u64 + 8, 1).unwrap(), [7]);
        // Zero pages still come only with a non-zero write, on both sides;
        // a zero fill over a shared page releases it on one side only.
        snap.write(3 * PAGE_BYTES as u64, &[0; 16]).unwrap();
        assert_eq!(snap.allocated_pages(), 2);
        mem.fill_range(PAGE_BYTES as u64, PAGE_BYTES as u64, 0)
            .unwrap();
        assert_eq!(mem.allocated_pages(), 1);
        assert_eq!(snap.read_vec(PAGE_BYTES as u64 + 8, 1).unwrap(), [7]);
        // Copies between and inside memories unshare what they write.
        let mut again = snap.snapshot();
        again.copy(0x10, 0x20, 4).unwrap();
        SparseMemory::copy_between(&mem, 0x10, &mut again, 0x30, 1).unwrap();
        assert_eq!(snap.read_vec(0x20, 4).unwrap(), [0; 4]);
        assert_eq!(again.read_vec(0x20, 4).unwrap(), [1, 2, 3, 4]);
        assert_eq!(again.read_vec(0x30, 1).unwrap(), [0xaa]);
        assert_eq!(snap.read_vec(0x30, 1).unwrap(), [0]);
    }

    #[test]
    fn write_read_across_page_boundary() {
        let mut mem = SparseMemory::new(1 << 20);
        let data: Vec<u8> = (0..100u8).collect();
        let at = PAGE_BYTES as u64 - 40;
        mem.write(at, &data).unwrap();
        assert_eq!(mem.allocated_pages(), 2);
        assert_eq!(mem.allocated_bytes(), 2 * PAGE_BYTES as u64);
        assert_eq!(mem.read_vec(at, 100).unwrap(), data);
        assert_eq!(mem.read_vec(at - 1, 1).unwrap(), [0]);
        assert_eq!(mem.read_vec(at + 100, 1).unwrap(), [0]);
    }

    /// Reads and writes inside one page (the inlined paths) and across
    /// pages (the page runs) against a plain byte model: present and
    /// absent pages, page edges, buffers that held other bytes before.
    #[test]
    fn one_page_and_page_run_accesses_match_a_byte_model() {
        let size = 4 * PAGE_BYTES;
        let mut mem = SparseMemory::new(size as u64);
        let mut model = vec![0u8; size];
        let page = PAGE_BYTES;
        let spots = [0, 1, page - 16, page - 1, page, 2 * page + 5, 3 * page - 8];
        let lens = [1, 4, 16, 17, 256, page - 1, page + 3];
        let mut k = 0u8;
        for &at in &spots {
            for &len in &lens {
                if at + len > size {
                    continue;
                }
                k = k.wrapping_add(1);
                let data: Vec<u8> = (0..len)
                    .map(|i| (i as u8).wrapping_add(k).wrapping_mul(3) | 1)
                    .collect();
                // Write every other access: the rest read absent pages or
                // earlier writes.
                if k.is_multiple_of(2) {
                    mem.write(at as u64, &data).unwrap();
                    model[at..at + len].copy_from_slice(&data);
                }
                for &from in &spots {
                    let n = len.min(size - from);
                    let mut buf = vec![0xee; n];
                    mem.read(from as u64, &mut buf).unwrap();
                    assert_eq!(buf, model[from..from + n], "read {from:#x}+{n:#x}");
                }
            }
        }
    }

    #[test]
    fn zero_writes_to_absent_pages_allocate_nothing() {
        let mut mem = SparseMemory::new(1 << 20);
        mem.write(5, &[0; 70_000]).unwrap();
        assert_eq!(mem.allocated_pages(), 0);
        mem.write_u32_le(0x1_0004, 0xdead_beef).unwrap();
        assert_eq!(mem.allocated_pages(), 1);
        // A zero write into a present page still clears the bytes.
        mem.write(0x1_0004, &[0; 4]).unwrap();
        assert_eq!(mem.read_u32_le(0x1_0004).unwrap(), 0);
    }

    #[test]
    fn out_of_range_and_overflow_fault_without_writing() {
        let mut mem = SparseMemory::new(0x1000);
        assert_eq!(
            mem.write(0xffe, &[1, 2, 3]),
            Err(MemFault::OutOfRange {
                offset: 0xffe,
                len: 3,
                size: 0x1000
            })
        );
        assert_eq!(mem.allocated_pages(), 0);
        assert!(matches!(
            mem.fill_range(u64::MAX, 2, 1),
            Err(MemFault::OutOfRange { .. })
        ));
        assert!(matches!(
            mem.copy(0, u64::MAX - 1, 4),
            Err(MemFault::OutOfRange { .. })
        ));
        // Huge lengths fault before allocating a buffer.
        assert!(matches!(
            mem.read_vec(0, usize::MAX),
            Err(MemFault::OutOfRange { .. })
        ));
        // Zero-length access at the end is fine, one past it is not.
        assert_eq!(mem.write(0x1000, &[]), Ok(()));
        assert!(mem.write(0x1001, &[]).is_err());
    }

    #[test]
    fn fill_zero_releases_whole_pages() {
        let mut mem = SparseMemory::new(4 * PAGE_BYTES as u64);
        mem.fill_range(0, 3 * PAGE_BYTES as u64, 0xab).unwrap();
        assert_eq!(mem.allocated_pages(), 3);
        mem.fill_range(10, 2 * PAGE_BYTES as u64, 0).unwrap();
        // Page 1 was covered completely; pages 0 and 2 only partly.
        assert_eq!(mem.allocated_pages(), 2);
        assert_eq!(mem.read_vec(8, 3).unwrap(), [0xab, 0xab, 0]);
        let end = 10 + 2 * PAGE_BYTES as u64;
        assert_eq!(mem.read_vec(end - 1, 2).unwrap(), [0, 0xab]);
    }

    #[test]
    fn copy_handles_overlap_both_ways() {
        let len = 3 * PAGE_BYTES + 123;
        let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8 + 1).collect();
        for (src, dst) in [(100u64, 5000u64), (5000, 100), (7, PAGE_BYTES as u64 + 9)] {
            let mut mem = SparseMemory::new(8 * PAGE_BYTES as u64);
            mem.write(src, &pattern).unwrap();
            mem.copy(src, dst, len as u64).unwrap();
            assert_eq!(mem.read_vec(dst, len).unwrap(), pattern, "{src}->{dst}");
        }
    }

    #[test]
    fn copy_between_skips_zero_pages() {
        let mut src = SparseMemory::new(1 << 24);
        let mut dst = SparseMemory::new(1 << 24);
        src.write(3 * PAGE_BYTES as u64 + 1, b"hello").unwrap();
        SparseMemory::copy_between(&src, 0, &mut dst, 17, 8 * PAGE_BYTES as u64).unwrap();
        // Only the page(s) receiving "hello" are allocated.
        assert_eq!(dst.allocated_pages(), 1);
        assert_eq!(
            dst.read_vec(3 * PAGE_BYTES as u64 + 18, 5).unwrap(),
            b"hello"
        );
    }

    #[test]
    fn copy_between_zero_source_clears_destination() {
        let src = SparseMemory::new(1 << 20);
        let mut dst = SparseMemory::new(1 << 20);
        dst.fill_range(0, 1 << 20, 0x55).unwrap();
        SparseMemory::copy_between(&src, 0, &mut dst, 3, 2 * PAGE_BYTES as u64).unwrap();
        assert_eq!(dst.read_vec(0, 4).unwrap(), [0x55, 0x55, 0x55, 0]);
        let end = 3 + 2 * PAGE_BYTES as u64;
        assert_eq!(dst.read_vec(end - 1, 2).unwrap(), [0, 0x55]);
        // A page-aligned zero copy over whole pages releases them.
        assert_eq!(dst.allocated_pages(), 16);
        let p = PAGE_BYTES as u64;
        SparseMemory::copy_between(&src, 0, &mut dst, 4 * p, 2 * p).unwrap();
        assert_eq!(dst.allocated_pages(), 14);
        assert_eq!(dst.read_vec(4 * p - 1, 1).unwrap(), [0x55]);
        assert_eq!(dst.read_vec(6 * p, 1).unwrap(), [0x55]);
    }

    #[test]
    fn pages_iterate_in_address_order_and_clip_to_size() {
        let mut mem = SparseMemory::new(5 * PAGE_BYTES as u64 + 10);
        for page in [4u64, 0, 5, 2] {
            mem.write(page * PAGE_BYTES as u64, &[page as u8 + 1])
                .unwrap();
        }
        let listed: Vec<(u64, usize, u8)> =
            mem.pages().map(|(off, b)| (off, b.len(), b[0])).collect();
        let p = PAGE_BYTES as u64;
        assert_eq!(
            listed,
            [
                (0, PAGE_BYTES, 1),
                (2 * p, PAGE_BYTES, 3),
                (4 * p, PAGE_BYTES, 5),
                (5 * p, 10, 6)
            ]
        );
    }

    #[test]
    fn touch_changes_nothing_and_allocates_nothing() {
        let p = PAGE_BYTES as u64;
        let mut mem = SparseMemory::new(4 * p);
        mem.write(p - 3, &[1, 2, 3, 4, 5, 6]).unwrap();
        let before: Vec<(u64, Vec<u8>)> = mem.pages().map(|(o, b)| (o, b.to_vec())).collect();
        // Across a page boundary, into unallocated pages, past the end.
        mem.touch(p - 64, 256);
        mem.touch(2 * p, 3 * p);
        mem.touch(u64::MAX - 10, 100);
        let after: Vec<(u64, Vec<u8>)> = mem.pages().map(|(o, b)| (o, b.to_vec())).collect();
        assert_eq!(mem.allocated_pages(), 2);
        assert!(before == after);
    }

    #[test]
    fn page_hasher_spreads_aligned_keys() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<PageIndexHasher>::default();
        // Keys 32 pages apart (2 MiB-aligned buffers) must not share low bits.
        let low: std::collections::BTreeSet<u64> =
            (0..64u64).map(|k| build.hash_one(k * 32) & 0x3f).collect();
        assert!(low.len() > 32, "{} distinct buckets", low.len());
    }
}
