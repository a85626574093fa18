//! SBUF and PSUM: 128 partitions laid out in a strided window.
//!
//! Geometry (docs/references/wiki.md §A.1): SBUF partitions sit 256 KiB apart with
//! 224 KiB of SRAM behind each; PSUM partitions sit 32 KiB apart with
//! 16 KiB (8 banks × 2 KiB) behind each. The rest of every stride is a pad
//! that faults, and a partition is never contiguous with the next one in the
//! window. Storage is a [`SparseMemory`] (partition `p` at
//! `p × store_pitch_bytes`: whole pages per SBUF partition, PSUM partitions
//! packed), so the SBUF of eight NeuronCores costs nothing until written.

use soc_map::addr::{
    PARTITIONS, PSUM_BANK_BYTES, PSUM_PARTITION_BYTES, PSUM_PARTITION_STRIDE_BYTES,
    SBUF_PARTITION_BYTES, SBUF_PARTITION_STRIDE_BYTES,
};
use soc_map::{PsumAddr, SbufAddr};

use crate::{Bytes, MemFault, PAGE_BYTES, SparseMemory};

/// Alignment in bytes of address and length of every PSUM write: PSUM is
/// written in 4-byte types only (docs/references/wiki.md §A.2, docs/references/design.md §2).
pub const PSUM_WRITE_ALIGN_BYTES: u64 = 4;

/// Shape of a partitioned memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartitionGeometry {
    /// Number of partitions.
    pub partitions: u32,
    /// Distance between partition starts in the linear window, in bytes.
    pub stride_bytes: u32,
    /// Bytes backed by storage at the start of each partition.
    pub populated_bytes: u32,
    /// Bank size in bytes, for memories that are banked by address (PSUM).
    pub bank_bytes: Option<u32>,
}

impl PartitionGeometry {
    /// NC-v3 SBUF: 128 × 224 KiB in a 256 KiB stride (docs/references/wiki.md §A.1).
    pub const SBUF: PartitionGeometry = PartitionGeometry {
        partitions: PARTITIONS,
        stride_bytes: SBUF_PARTITION_STRIDE_BYTES,
        populated_bytes: SBUF_PARTITION_BYTES,
        bank_bytes: None,
    };

    /// NC-v3 PSUM: 128 × 16 KiB in a 32 KiB stride, 8 banks of 2 KiB
    /// (docs/references/wiki.md §A.1).
    pub const PSUM: PartitionGeometry = PartitionGeometry {
        partitions: PARTITIONS,
        stride_bytes: PSUM_PARTITION_STRIDE_BYTES,
        populated_bytes: PSUM_PARTITION_BYTES,
        bank_bytes: Some(PSUM_BANK_BYTES),
    };

    /// Size of the linear window, `partitions × stride_bytes`.
    pub const fn window_bytes(&self) -> u64 {
        self.partitions as u64 * self.stride_bytes as u64
    }

    /// Bytes of SRAM behind the window, `partitions × populated_bytes` (the
    /// store spans [`PartitionGeometry::store_bytes`]).
    pub const fn populated_total_bytes(&self) -> u64 {
        self.partitions as u64 * self.populated_bytes as u64
    }

    /// Distance between partition starts in the backing store: the
    /// populated bytes, rounded up to whole pages of the store when a
    /// partition holds a page or more (SBUF: 224 KiB → 256 KiB). Packed at
    /// 224 KiB, every other partition started in the middle of a 64 KiB
    /// page, so a partition's first 64 KiB took two pages; the store is
    /// sparse, so the gap costs nothing. A partition smaller than a page
    /// (PSUM: 16 KiB) stays packed, several to a page.
    pub const fn store_pitch_bytes(&self) -> u64 {
        let populated = self.populated_bytes as u64;
        let page = PAGE_BYTES as u64;
        if populated >= page {
            populated.div_ceil(page) * page
        } else {
            populated
        }
    }

    /// Bytes of the backing store, `partitions × store_pitch_bytes`.
    pub const fn store_bytes(&self) -> u64 {
        self.partitions as u64 * self.store_pitch_bytes()
    }

    /// The geometry is usable: at least one partition, a non-empty populated
    /// part no larger than the stride, and banks that tile it.
    pub const fn is_valid(&self) -> bool {
        let banks_tile = match self.bank_bytes {
            Some(0) => false,
            Some(bank) => self.populated_bytes.is_multiple_of(bank),
            None => true,
        };
        self.partitions > 0
            && self.populated_bytes > 0
            && self.populated_bytes <= self.stride_bytes
            && banks_tile
    }
}

/// A partitioned memory reached through its linear window offset
/// (`partition × stride + offset`, the form SoC decode produces) via
/// [`Bytes<u64>`]. No address-kind rules beyond geometry: [`Sbuf`] and
/// [`Psum`] wrap it for typed access.
#[derive(Clone, Debug)]
pub struct PartitionedMemory {
    geometry: PartitionGeometry,
    backing: SparseMemory,
}

impl PartitionedMemory {
    /// An all-zero memory of the given shape, or `None` if the geometry is
    /// not [valid](PartitionGeometry::is_valid).
    pub fn new(geometry: PartitionGeometry) -> Option<Self> {
        if !geometry.is_valid() {
            return None;
        }
        Some(PartitionedMemory {
            geometry,
            backing: SparseMemory::new(geometry.store_bytes()),
        })
    }

    /// An all-zero SBUF of one NeuronCore ([`PartitionGeometry::SBUF`]).
    pub fn sbuf() -> Self {
        PartitionedMemory {
            geometry: PartitionGeometry::SBUF,
            backing: SparseMemory::new(PartitionGeometry::SBUF.store_bytes()),
        }
    }

    /// An all-zero PSUM of one NeuronCore ([`PartitionGeometry::PSUM`]).
    pub fn psum() -> Self {
        PartitionedMemory {
            geometry: PartitionGeometry::PSUM,
            backing: SparseMemory::new(PartitionGeometry::PSUM.store_bytes()),
        }
    }

    /// The shape of this memory.
    pub const fn geometry(&self) -> PartitionGeometry {
        self.geometry
    }

    /// Number of partitions.
    pub const fn partitions(&self) -> u32 {
        self.geometry.partitions
    }

    /// Partition stride in the linear window, in bytes.
    pub const fn stride_bytes(&self) -> u32 {
        self.geometry.stride_bytes
    }

    /// Populated bytes per partition.
    pub const fn populated_bytes(&self) -> u32 {
        self.geometry.populated_bytes
    }

    /// Bank size in bytes, if banked (PSUM).
    pub const fn bank_bytes(&self) -> Option<u32> {
        self.geometry.bank_bytes
    }

    /// Size of the linear window in bytes.
    pub const fn window_bytes(&self) -> u64 {
        self.geometry.window_bytes()
    }

    /// The backing store (partition `p` at `p × store_pitch_bytes`).
    pub fn backing(&self) -> &SparseMemory {
        &self.backing
    }

    /// The backing store, for page-to-page copies with
    /// [`SparseMemory::copy_between`] after [`resolve`](Self::resolve).
    /// Writes through it bypass every rule of this type and its wrappers.
    pub fn backing_mut(&mut self) -> &mut SparseMemory {
        &mut self.backing
    }

    /// Maps an access of `len` bytes at linear window offset
    /// `window_offset` to its offset in the [backing](Self::backing) store
    /// ([`PartitionGeometry::resolve`]).
    #[inline]
    pub fn resolve(&self, window_offset: u64, len: u64) -> Result<u64, MemFault> {
        self.geometry.resolve(window_offset, len)
    }

    /// Maps an access of `len` bytes at byte `offset` of `partition` to its
    /// offset in the backing store.
    ///
    /// Faults (offsets reported as linear window offsets): `OutOfRange` if
    /// the partition does not exist; `Hole` if any byte lies at or past
    /// `populated_bytes` of the partition.
    pub fn resolve_partition(
        &self,
        partition: u32,
        offset: u32,
        len: u64,
    ) -> Result<u64, MemFault> {
        let g = &self.geometry;
        let partition = u64::from(partition);
        let offset = u64::from(offset);
        if partition >= u64::from(g.partitions) {
            return Err(MemFault::OutOfRange {
                offset: g.linear(partition, offset),
                len,
                size: g.window_bytes(),
            });
        }
        g.resolve_in_partition(partition, offset, len)
    }
}

impl PartitionGeometry {
    /// Maps an access of `len` bytes at linear window offset
    /// `window_offset` to its offset in a store of this shape (partition
    /// `p` at `p × store_pitch_bytes`).
    ///
    /// Faults: `OutOfRange` past the window (or on overflow); `Hole` if any
    /// byte lies in a partition's pad, which includes every access running
    /// from one partition into the next.
    #[inline]
    pub fn resolve(&self, window_offset: u64, len: u64) -> Result<u64, MemFault> {
        let window = self.window_bytes();
        let stride = u64::from(self.stride_bytes);
        // (A stride of 0, an invalid shape, has an empty window.)
        match (
            window_offset.checked_add(len),
            window_offset.checked_div(stride),
        ) {
            (Some(end), Some(partition)) if end <= window => {
                self.resolve_in_partition(partition, window_offset % stride, len)
            }
            _ => Err(MemFault::OutOfRange {
                offset: window_offset,
                len,
                size: window,
            }),
        }
    }

    /// `partition` exists; checks the populated bound.
    #[inline]
    fn resolve_in_partition(&self, partition: u64, offset: u64, len: u64) -> Result<u64, MemFault> {
        let populated = u64::from(self.populated_bytes);
        match offset.checked_add(len) {
            Some(end) if end <= populated => Ok(partition * self.store_pitch_bytes() + offset),
            _ => Err(MemFault::Hole {
                offset: self.linear(partition, offset),
                len,
            }),
        }
    }

    /// Linear window offset; cannot overflow for 32-bit partition/offset.
    fn linear(&self, partition: u64, offset: u64) -> u64 {
        partition * u64::from(self.stride_bytes) + offset
    }
}

impl Bytes<u64> for PartitionedMemory {
    fn check_read(&self, window_offset: u64, len: usize) -> Result<(), MemFault> {
        self.resolve(window_offset, len as u64).map(drop)
    }

    fn read(&self, window_offset: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let at = self.resolve(window_offset, buf.len() as u64)?;
        self.backing.read(at, buf)
    }

    fn write(&mut self, window_offset: u64, data: &[u8]) -> Result<(), MemFault> {
        let at = self.resolve(window_offset, data.len() as u64)?;
        self.backing.write(at, data)
    }

    fn fill(&mut self, window_offset: u64, len: usize, byte: u8) -> Result<(), MemFault> {
        let at = self.resolve(window_offset, len as u64)?;
        self.backing.fill_range(at, len as u64, byte)
    }
}

/// One NeuronCore's SBUF, addressed by [`SbufAddr`] or by linear window
/// offset (docs/references/wiki.md §A.1–A.2). Reads and writes have no alignment rule.
#[derive(Clone, Debug)]
pub struct Sbuf(PartitionedMemory);

impl Sbuf {
    /// An all-zero SBUF.
    pub fn new() -> Self {
        Sbuf(PartitionedMemory::sbuf())
    }

    /// The underlying partitioned store.
    pub fn as_partitioned(&self) -> &PartitionedMemory {
        &self.0
    }

    /// The underlying partitioned store, mutable.
    pub fn as_partitioned_mut(&mut self) -> &mut PartitionedMemory {
        &mut self.0
    }
}

impl Default for Sbuf {
    fn default() -> Self {
        Sbuf::new()
    }
}

impl Bytes<SbufAddr> for Sbuf {
    fn check_read(&self, addr: SbufAddr, len: usize) -> Result<(), MemFault> {
        self.0
            .resolve_partition(addr.partition, addr.offset, len as u64)
            .map(drop)
    }

    fn read(&self, addr: SbufAddr, buf: &mut [u8]) -> Result<(), MemFault> {
        let at = self
            .0
            .resolve_partition(addr.partition, addr.offset, buf.len() as u64)?;
        self.0.backing.read(at, buf)
    }

    fn write(&mut self, addr: SbufAddr, data: &[u8]) -> Result<(), MemFault> {
        let at = self
            .0
            .resolve_partition(addr.partition, addr.offset, data.len() as u64)?;
        self.0.backing.write(at, data)
    }

    fn fill(&mut self, addr: SbufAddr, len: usize, byte: u8) -> Result<(), MemFault> {
        let at = self
            .0
            .resolve_partition(addr.partition, addr.offset, len as u64)?;
        self.0.backing.fill_range(at, len as u64, byte)
    }
}

impl Bytes<u64> for Sbuf {
    fn check_read(&self, window_offset: u64, len: usize) -> Result<(), MemFault> {
        self.0.check_read(window_offset, len)
    }

    fn read(&self, window_offset: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        self.0.read(window_offset, buf)
    }

    fn write(&mut self, window_offset: u64, data: &[u8]) -> Result<(), MemFault> {
        self.0.write(window_offset, data)
    }

    fn fill(&mut self, window_offset: u64, len: usize, byte: u8) -> Result<(), MemFault> {
        self.0.fill(window_offset, len, byte)
    }
}

/// One NeuronCore's PSUM, addressed by [`PsumAddr`] or by linear window
/// offset (docs/references/wiki.md §A.1–A.2).
///
/// On hardware every write to PSUM is a 4-byte type (the fp32/uint32
/// accumulator domain, docs/references/wiki.md §A.2): both `Bytes` implementations refuse
/// a write whose address or length is not a multiple of
/// [`PSUM_WRITE_ALIGN_BYTES`] with [`MemFault::Misaligned`]. Reads have no
/// alignment rule. The bank of a byte is `offset / 2 KiB`
/// ([`PsumAddr::bank`]).
#[derive(Clone, Debug)]
pub struct Psum(PartitionedMemory);

impl Psum {
    /// An all-zero PSUM.
    pub fn new() -> Self {
        Psum(PartitionedMemory::psum())
    }

    /// The underlying partitioned store.
    pub fn as_partitioned(&self) -> &PartitionedMemory {
        &self.0
    }

    /// The underlying partitioned store, mutable. Writes through it skip
    /// the 4-byte write rule.
    pub fn as_partitioned_mut(&mut self) -> &mut PartitionedMemory {
        &mut self.0
    }

    /// Checks a PSUM write of `len` bytes at `addr` and returns its backing
    /// offset: placement first (`OutOfRange`, `Hole`), then the 4-byte rule
    /// (`Misaligned`, docs/references/wiki.md §A.2).
    pub fn check_psum_write(&self, addr: PsumAddr, len: usize) -> Result<u64, MemFault> {
        let at = self
            .0
            .resolve_partition(addr.partition, addr.offset, len as u64)?;
        let window_offset = self
            .0
            .geometry
            .linear(u64::from(addr.partition), u64::from(addr.offset));
        check_write_alignment(window_offset, len as u64)?;
        Ok(at)
    }

    /// [`check_psum_write`](Self::check_psum_write) for a linear window
    /// offset.
    pub fn check_psum_write_linear(&self, window_offset: u64, len: usize) -> Result<u64, MemFault> {
        let at = self.0.resolve(window_offset, len as u64)?;
        check_write_alignment(window_offset, len as u64)?;
        Ok(at)
    }
}

/// The PSUM 4-byte write rule. The stride is a multiple of 4, so an aligned
/// window offset is an aligned in-partition offset.
fn check_write_alignment(window_offset: u64, len: u64) -> Result<(), MemFault> {
    if !window_offset.is_multiple_of(PSUM_WRITE_ALIGN_BYTES)
        || !len.is_multiple_of(PSUM_WRITE_ALIGN_BYTES)
    {
        return Err(MemFault::Misaligned {
            offset: window_offset,
            len,
            align_bytes: PSUM_WRITE_ALIGN_BYTES,
        });
    }
    Ok(())
}

impl Default for Psum {
    fn default() -> Self {
        Psum::new()
    }
}

impl Bytes<PsumAddr> for Psum {
    fn check_read(&self, addr: PsumAddr, len: usize) -> Result<(), MemFault> {
        self.0
            .resolve_partition(addr.partition, addr.offset, len as u64)
            .map(drop)
    }

    fn check_write(&self, addr: PsumAddr, len: usize) -> Result<(), MemFault> {
        self.check_psum_write(addr, len).map(drop)
    }

    fn read(&self, addr: PsumAddr, buf: &mut [u8]) -> Result<(), MemFault> {
        let at = self
            .0
            .resolve_partition(addr.partition, addr.offset, buf.len() as u64)?;
        self.0.backing.read(at, buf)
    }

    fn write(&mut self, addr: PsumAddr, data: &[u8]) -> Result<(), MemFault> {
        let at = self.check_psum_write(addr, data.len())?;
        self.0.backing.write(at, data)
    }

    fn fill(&mut self, addr: PsumAddr, len: usize, byte: u8) -> Result<(), MemFault> {
        let at = self.check_psum_write(addr, len)?;
        self.0.backing.fill_range(at, len as u64, byte)
    }
}

impl Bytes<u64> for Psum {
    fn check_read(&self, window_offset: u64, len: usize) -> Result<(), MemFault> {
        self.0.check_read(window_offset, len)
    }

    fn check_write(&self, window_offset: u64, len: usize) -> Result<(), MemFault> {
        self.check_psum_write_linear(window_offset, len).map(drop)
    }

    fn read(&self, window_offset: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        self.0.read(window_offset, buf)
    }

    fn write(&mut self, window_offset: u64, data: &[u8]) -> Result<(), MemFault> {
        let at = self.check_psum_write_linear(window_offset, data.len())?;
        self.0.backing.write(at, data)
    }

    fn fill(&mut self, window_offset: u64, len: usize, byte: u8) -> Result<(), MemFault> {
        let at = self.check_psum_write_linear(window_offset, len)?;
        self.0.backing.fill_range(at, len as u64, byte)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const KIB: u32 = 1024;

    fn sbuf(partition: u32, offset: u32) -> SbufAddr {
        SbufAddr { partition, offset }
    }

    fn psum(partition: u32, offset: u32) -> PsumAddr {
        PsumAddr { partition, offset }
    }

    #[test]
    fn geometry_constants_match_wiki_facts() {
        let s = PartitionedMemory::sbuf();
        assert_eq!(
            (
                s.partitions(),
                s.stride_bytes(),
                s.populated_bytes(),
                s.bank_bytes()
            ),
            (128, 256 * KIB, 224 * KIB, None)
        );
        assert_eq!(s.window_bytes(), 32 << 20);
        // 224 KiB of SRAM per partition; the store gives each partition
        // whole pages (store_pitch_bytes).
        assert_eq!(s.geometry().populated_total_bytes(), 28 << 20);
        assert_eq!(s.backing().size_bytes(), 32 << 20);
        let p = PartitionedMemory::psum();
        assert_eq!(
            (
                p.partitions(),
                p.stride_bytes(),
                p.populated_bytes(),
                p.bank_bytes()
            ),
            (128, 32 * KIB, 16 * KIB, Some(2 * KIB))
        );
        assert_eq!(p.window_bytes(), 4 << 20);
        assert_eq!(p.backing().allocated_pages(), 0);
    }

    /// An SBUF partition starts on a page of its store and a PSUM
    /// partition is packed: the first 64 KiB of every SBUF partition is one
    /// page (two for every other partition when packed at 224 KiB), all 128
    /// PSUM partitions fill 32 pages.
    #[test]
    fn sbuf_partitions_start_on_a_store_page_and_psum_ones_are_packed() {
        let mut s = PartitionedMemory::sbuf();
        let stride = u64::from(s.stride_bytes());
        for p in 0..128u64 {
            assert_eq!(s.resolve(p * stride, 1), Ok(p * 256 * KIB as u64));
            Bytes::<u64>::write(&mut s, p * stride, &vec![0xA5; 64 * KIB as usize]).unwrap();
        }
        assert_eq!(s.backing().allocated_pages(), 128);
        let end = 127 * stride + u64::from(s.populated_bytes()) - 4;
        Bytes::<u64>::write(&mut s, end, &[1, 2, 3, 4]).unwrap();
        assert_eq!(
            Bytes::<u64>::read_vec(&s, end, 4).unwrap(),
            vec![1, 2, 3, 4]
        );
        let mut p = PartitionedMemory::psum();
        let stride = u64::from(p.stride_bytes());
        for q in 0..128u64 {
            assert_eq!(p.resolve(q * stride, 4), Ok(q * 16 * KIB as u64));
            Bytes::<u64>::write(&mut p, q * stride, &[7; 16]).unwrap();
        }
        assert_eq!(p.backing().allocated_pages(), 32);
    }

    #[test]
    fn invalid_geometries_are_refused() {
        let mut g = PartitionGeometry::SBUF;
        g.populated_bytes = g.stride_bytes + 1;
        assert!(PartitionedMemory::new(g).is_none());
        let mut g = PartitionGeometry::PSUM;
        g.bank_bytes = Some(3000);
        assert!(PartitionedMemory::new(g).is_none());
        let mut g = PartitionGeometry::PSUM;
        g.partitions = 0;
        assert!(PartitionedMemory::new(g).is_none());
        assert!(PartitionedMemory::new(PartitionGeometry::PSUM).is_some());
    }

    #[test]
    fn typed_and_linear_addresses_name_the_same_bytes() {
        let mut s = Sbuf::new();
        s.write(sbuf(3, 0x100), b"abcd").unwrap();
        let linear = 3 * u64::from(SBUF_PARTITION_STRIDE_BYTES) + 0x100;
        assert_eq!(Bytes::<u64>::read_vec(&s, linear, 4).unwrap(), b"abcd");
        Bytes::<u64>::write(&mut s, linear + 4, b"ef").unwrap();
        assert_eq!(s.read_vec(sbuf(3, 0x100), 6).unwrap(), b"abcdef");
    }

    #[test]
    fn sbuf_pad_and_partition_crossing_are_holes() {
        let mut s = Sbuf::new();
        let pad = 224 * KIB;
        assert_eq!(
            s.write(sbuf(1, pad), &[1]),
            Err(MemFault::Hole {
                offset: u64::from(256 * KIB + pad),
                len: 1
            })
        );
        // Last populated byte is fine, one more runs into the pad.
        assert!(s.write(sbuf(1, pad - 1), &[1]).is_ok());
        assert!(matches!(
            s.write(sbuf(1, pad - 1), &[1, 2]),
            Err(MemFault::Hole { .. })
        ));
        // Linear: an access from partition 0 into partition 1 crosses the pad.
        let stride = u64::from(256 * KIB);
        assert!(matches!(
            Bytes::<u64>::read_vec(&s, stride - 2, 4),
            Err(MemFault::Hole { .. })
        ));
        // An in-partition offset past the stride is not the next partition.
        assert!(matches!(
            s.read_vec(sbuf(0, 256 * KIB), 1),
            Err(MemFault::Hole { .. })
        ));
    }

    #[test]
    fn missing_partition_is_out_of_range() {
        let mut s = Sbuf::new();
        assert_eq!(
            s.write(sbuf(128, 0), &[1]),
            Err(MemFault::OutOfRange {
                offset: 32 << 20,
                len: 1,
                size: 32 << 20
            })
        );
        assert!(matches!(
            s.read_vec(sbuf(u32::MAX, u32::MAX), 1),
            Err(MemFault::OutOfRange { .. })
        ));
        assert!(matches!(
            Bytes::<u64>::write(&mut s, u64::MAX, &[1, 2]),
            Err(MemFault::OutOfRange { .. })
        ));
        assert_eq!(s.as_partitioned().backing().allocated_pages(), 0);
    }

    #[test]
    fn psum_writes_must_be_four_byte_typed() {
        let mut p = Psum::new();
        assert_eq!(
            p.write(psum(2, 2), &[0; 4]),
            Err(MemFault::Misaligned {
                offset: 2 * 32 * 1024 + 2,
                len: 4,
                align_bytes: 4
            })
        );
        assert!(matches!(
            p.write(psum(2, 4), &[0; 6]),
            Err(MemFault::Misaligned { .. })
        ));
        assert!(matches!(
            Bytes::<u64>::write(&mut p, 1, &[0; 4]),
            Err(MemFault::Misaligned { .. })
        ));
        // Placement faults come before alignment.
        assert!(matches!(
            p.write(psum(0, 16 * KIB + 1), &[0; 3]),
            Err(MemFault::Hole { .. })
        ));
        p.write_u32_le(psum(127, 16 * KIB - 4), 0x3f80_0000)
            .unwrap();
        assert_eq!(p.read_u32_le(psum(127, 16 * KIB - 4)).unwrap(), 0x3f80_0000);
        // Reads may be unaligned.
        assert_eq!(
            p.read_vec(psum(127, 16 * KIB - 3), 3).unwrap(),
            [0, 0x80, 0x3f]
        );
        assert_eq!(p.check_psum_write(psum(0, 8), 8), Ok(8));
        assert!(p.fill(psum(0, 0), 3, 1).is_err());
    }

    #[test]
    fn fill_stays_inside_one_partition() {
        let mut s = Sbuf::new();
        s.fill(sbuf(5, 0), 224 * KIB as usize, 0x7e).unwrap();
        assert_eq!(s.read_vec(sbuf(4, 224 * KIB - 1), 1).unwrap(), [0]);
        assert_eq!(s.read_vec(sbuf(5, 0), 2).unwrap(), [0x7e, 0x7e]);
        assert_eq!(s.read_vec(sbuf(5, 224 * KIB - 1), 1).unwrap(), [0x7e]);
        assert_eq!(s.read_vec(sbuf(6, 0), 1).unwrap(), [0]);
    }
}
