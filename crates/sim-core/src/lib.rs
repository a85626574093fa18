//! Simulated time, the timing configuration, the event queue and the bus
//! interface the hardware models use (docs/references/design.md §3 layer L2, §4 time).

mod bandwidth;
mod json_keys;
mod timing;
mod wake;

pub use bandwidth::HbmBandwidth;
pub use json_keys::no_duplicate_keys;
pub use timing::{CLOCK_GHZ_RANGE, TimingConfig, TimingError, TimingParam};
pub use wake::WakeTree;

use std::fmt;

/// A point in simulated time, in DMA clock cycles since reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycle(pub u64);

impl Cycle {
    /// `self + n` cycles (saturating: time never wraps).
    pub const fn after(self, n: u64) -> Cycle {
        Cycle(self.0.saturating_add(n))
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cycle {}", self.0)
    }
}

/// Events ordered by (cycle, insertion order): same-cycle events run in the
/// order they were scheduled, so runs are deterministic.
///
/// A binary min-heap on the unique key (cycle, sequence number). Payloads are
/// small `Copy` values: sifting keeps the moving entry in registers and
/// writes it once, at its final place (the hot path of every engine).
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    seq: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    at: Cycle,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    fn key(&self) -> (Cycle, u64) {
        (self.at, self.seq)
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self {
            heap: Vec::new(),
            seq: 0,
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Cycle, event: E) {
        self.seq += 1;
        let e = Entry {
            at,
            seq: self.seq,
            event,
        };
        let key = e.key();
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if p.key() <= key {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = e;
    }

    /// Takes the next insertion number without queueing anything: for an
    /// event kept outside the queue (a side lane) that must still run in
    /// (cycle, insertion) order with the queued ones.
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The (cycle, insertion number) of the earliest event.
    pub fn peek_key(&self) -> Option<(Cycle, u64)> {
        self.heap.first().map(Entry::key)
    }

    /// The cycle of the earliest event.
    pub fn peek_cycle(&self) -> Option<Cycle> {
        self.heap.first().map(|e| e.at)
    }

    /// Removes the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Cycle) -> Option<(Cycle, E)> {
        let top = *self.heap.first()?;
        if top.at > now {
            return None;
        }
        let last = self.heap.pop()?;
        let n = self.heap.len();
        if n > 0 {
            // Sift `last` down from the root.
            let key = last.key();
            let mut i = 0;
            loop {
                let mut c = 2 * i + 1;
                if c >= n {
                    break;
                }
                if c + 1 < n && self.heap[c + 1].key() < self.heap[c].key() {
                    c += 1;
                }
                let child = self.heap[c];
                if key <= child.key() {
                    break;
                }
                self.heap[i] = child;
                i = c;
            }
            self.heap[i] = last;
        }
        Some((top.at, top.event))
    }
}

impl<E> EventQueue<E> {
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Drops every pending event.
    pub fn clear(&mut self) {
        self.heap.clear();
    }
}

/// Why a bus access by a DMA master failed: the AXI slave or decode error the
/// engine would see (an unmapped address, a hole, a read-only target).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessError {
    /// The first byte of the failed access.
    pub addr: u64,
    /// What went wrong, for trace events.
    pub message: String,
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}: {}", self.addr, self.message)
    }
}

impl std::error::Error for AccessError {}

/// The fabric as a DMA master sees it: byte reads and writes by SoC address.
/// Writes into register apertures (semaphore increments) are register writes.
/// The 16 bytes of a completion entry with word 0 `word0` ([`Bus::write_entry16`]).
pub fn entry16(word0: u32) -> [u8; 16] {
    let mut entry = [0u8; 16];
    entry[..4].copy_from_slice(&word0.to_le_bytes());
    entry
}

pub trait Bus {
    /// Reads `buf.len()` bytes at `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), AccessError>;
    /// Writes `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError>;
    /// Writes a 16-byte completion entry at `addr`: `word0` little endian,
    /// then 12 zero bytes (the entry format of docs/timing.md). The same
    /// bytes as [`Bus::write`] of them; a bus may store them straight from
    /// the word.
    fn write_entry16(&mut self, addr: u64, word0: u32) -> Result<(), AccessError> {
        self.write(addr, &entry16(word0))
    }
    /// Copies `len` bytes from `src` to `dst` (the data mover's fast path;
    /// the default goes through a bounce buffer).
    fn copy(&mut self, src: u64, dst: u64, len: u64) -> Result<(), AccessError> {
        let n = usize::try_from(len).map_err(|_| AccessError {
            addr: src,
            message: format!("copy of {len} bytes is too large"),
        })?;
        let mut buf = vec![0u8; n];
        self.read(src, &mut buf)?;
        self.write(dst, &buf)
    }
    /// Timing-only mode: whether `[addr, addr + len)` holds a byte a DMA
    /// copy should have written and did not (moved no payload). The
    /// default: never.
    fn stale(&self, addr: u64, len: u64) -> bool {
        let _ = (addr, len);
        false
    }

    /// Timing-only mode: the engine read `[addr, addr + len)` as control
    /// data (descriptors it prefetched), not payload; a bus that keeps
    /// stale bytes notes it when one is among them. The default does
    /// nothing.
    fn note_control_read(&mut self, addr: u64, len: u64) {
        let _ = (addr, len);
    }

    /// Timing-only mode: `[addr, addr + len)` holds bytes computed from
    /// stale ones (a checksum, a compute op's result, a transposed tile):
    /// stale too, a check of them is skipped. The default does nothing.
    fn mark_stale(&mut self, addr: u64, len: u64) {
        let _ = (addr, len);
    }

    /// Books `len` bytes of the shared memory bandwidth at `addr` (an HBM
    /// stack, [`HbmBandwidth`]) for a transfer that starts at `start`;
    /// returns the cycle by which the memory has delivered them. The
    /// default has no shared limit.
    fn reserve_bandwidth(&mut self, addr: u64, len: u64, start: Cycle) -> Cycle {
        let _ = (addr, len);
        start
    }

    /// The partition stride of the partitioned memory (SBUF, PSUM) at
    /// `addr`, for the axi2sram cross-bar that lands transposed tiles
    /// across partitions; `None` elsewhere (the default).
    fn partition_stride(&self, addr: u64) -> Option<u64> {
        let _ = addr;
        None
    }

    /// An observer's hint with no simulated effect: the data accesses that
    /// follow are packet `scope`'s, until a `None` (the race detector
    /// attributes them, docs/races.md). The default ignores it.
    fn packet_scope(&mut self, scope: Option<PacketScope>) {
        let _ = scope;
    }

    /// Whether [`Bus::packet_scope`] hints reach an observer now: when
    /// false, an engine may leave them out (and not build them). The
    /// default says true.
    fn observes_packets(&self) -> bool {
        true
    }

    /// An observer's hint with no simulated effect: the data reads that
    /// follow read elements whose NaN is `nan` (a CCE source in its input
    /// dtype, a cross-bar transpose's elements), until a `None` (a raw
    /// copy: bytes of no known type). `--uninit nan` fills never-written
    /// bytes with it (docs/races.md §Uninitialised memory). The default
    /// ignores it.
    fn read_as(&mut self, nan: Option<ElementNan>) {
        let _ = nan;
    }
}

/// A NaN of an element type, as the bytes of one element in memory
/// (little-endian; [`Bus::read_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementNan {
    /// The element's bytes (the first `len`).
    pub bytes: [u8; 4],
    /// Bytes per element (1, 2 or 4).
    pub len: u8,
}

impl ElementNan {
    /// The element's bytes.
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        self.bytes
            .get(..usize::from(self.len))
            .unwrap_or(&self.bytes)
    }
}

/// The packet whose data moves next ([`Bus::packet_scope`]): its queue,
/// ring slot and the ordering bits it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketScope {
    /// Queue id.
    pub queue: u8,
    /// Ring index of its first TX descriptor.
    pub slot: u32,
    /// TX descriptors it takes off the ring.
    pub tx_descs: u32,
    /// The first TX descriptor's DMB bit: it waits for the queue's earlier
    /// transfers (docs/references/driver.md §2.4).
    pub dmb: bool,
    /// Write barrier or strong-order write: it waits for every earlier
    /// write of the engine.
    pub barrier: bool,
    /// The data has moved; the writes that follow are its completion
    /// (ring entries): synchronisation, not data.
    pub completion: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_cycle_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Cycle(5), "b");
        q.push(Cycle(3), "a");
        q.push(Cycle(5), "c");
        assert_eq!(q.peek_cycle(), Some(Cycle(3)));
        assert_eq!(q.pop_due(Cycle(2)), None);
        assert_eq!(q.pop_due(Cycle(10)), Some((Cycle(3), "a")));
        assert_eq!(q.pop_due(Cycle(10)), Some((Cycle(5), "b")));
        assert_eq!(q.pop_due(Cycle(10)), Some((Cycle(5), "c")));
        assert!(q.is_empty());
    }

    #[test]
    fn a_side_lane_key_orders_with_the_queued_events() {
        let mut q = EventQueue::default();
        q.push(Cycle(5), "queued first");
        let side = (Cycle(5), q.next_seq());
        q.push(Cycle(5), "queued after the side event");
        // Same cycle: insertion order decides, the side key sits between.
        assert!(q.peek_key().is_some_and(|k| k < side));
        assert_eq!(q.pop_due(Cycle(5)), Some((Cycle(5), "queued first")));
        assert!(q.peek_key().is_some_and(|k| side < k));
    }

    proptest::proptest! {
        /// Any interleaving of pushes and pops yields events in (cycle,
        /// insertion) order: the same sequence a stable sort gives.
        #[test]
        fn events_pop_like_a_stable_sort(
            ops in proptest::collection::vec((0u64..40, proptest::bool::ANY, 0u64..60), 1..300)
        ) {
            let mut q = EventQueue::default();
            let mut reference: Vec<(u64, u64)> = Vec::new(); // (cycle, order)
            let mut order = 0u64;
            for (at, pop, now) in ops {
                if pop {
                    let got = q.pop_due(Cycle(now));
                    reference.sort();
                    let want = reference.first().copied().filter(|&(c, _)| c <= now);
                    if want.is_some() {
                        reference.remove(0);
                    }
                    proptest::prop_assert_eq!(got.map(|(c, o)| (c.0, o)), want);
                } else {
                    order += 1;
                    q.push(Cycle(at), order);
                    reference.push((at, order));
                }
                reference.sort();
                proptest::prop_assert_eq!(q.peek_cycle().map(|c| c.0), reference.first().map(|r| r.0));
                proptest::prop_assert_eq!(q.len(), reference.len());
            }
        }
    }
}
