//! Typed addresses: SoC fabric addresses, SBUF/PSUM partition addresses, and
//! the two instruction-word address encodings (ADDR4 partition offsets and
//! ADDR8 marker modes).

use std::fmt;

/// A device-fabric (SoC) byte address, as DMA engines and the driver see it
/// (docs/references/driver.md §6.3). Host memory is `PA | HOST_BIT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SocAddr(pub u64);

impl SocAddr {
    /// The PCIe host bit: host physical memory is reached at `PA | HOST_BIT`
    /// (docs/references/driver.md §6.1, `pci_host_base` = bit 46 on V3).
    pub const HOST_BIT: u64 = 1 << 46;
    /// The die bit: die 1 resources are die 0's addresses with bit 47 set
    /// (docs/references/driver.md §6.3, docs/references/wiki.md §E.1).
    pub const DIE_BIT: u64 = 1 << 47;

    /// Host physical address → SoC address.
    pub const fn from_host_pa(pa: u64) -> Self {
        SocAddr(pa | Self::HOST_BIT)
    }

    /// `self + delta`, or `None` on overflow.
    pub fn checked_add(self, delta: u64) -> Option<SocAddr> {
        self.0.checked_add(delta).map(SocAddr)
    }
}

impl fmt::Display for SocAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Number of SBUF and PSUM partitions per NeuronCore (docs/references/wiki.md §A.1).
pub const PARTITIONS: u32 = 128;
/// SBUF partition address stride: 256 KiB (docs/references/wiki.md §A.1).
pub const SBUF_PARTITION_STRIDE_BYTES: u32 = 256 * 1024;
/// SBUF bytes backed by SRAM in each partition on NC-v3: 224 KiB (docs/references/wiki.md §A.1).
pub const SBUF_PARTITION_BYTES: u32 = 224 * 1024;
/// PSUM partition address stride: 32 KiB (docs/references/wiki.md §A.1).
pub const PSUM_PARTITION_STRIDE_BYTES: u32 = 32 * 1024;
/// PSUM bytes backed in each partition: 8 banks × 2 KiB = 16 KiB (docs/references/wiki.md §A.1).
pub const PSUM_PARTITION_BYTES: u32 = 16 * 1024;
/// PSUM bank size: 2 KiB (docs/references/wiki.md §A.1).
pub const PSUM_BANK_BYTES: u32 = 2048;
/// Start of PSUM in the TPB-local (ADDR4) window (docs/references/wiki.md §A.2).
pub const TPB_LOCAL_PSUM_BASE: u32 = 0x200_0000;
/// End (exclusive) of PSUM in the TPB-local window.
pub const TPB_LOCAL_PSUM_END: u32 = 0x240_0000;

/// A byte inside one SBUF partition: `partition` < 128, `offset` < 224 KiB
/// when populated (the 224..256 KiB pad faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SbufAddr {
    /// Partition index, 0..128.
    pub partition: u32,
    /// Byte offset inside the partition.
    pub offset: u32,
}

/// A byte inside one PSUM partition: `partition` < 128, `offset` < 16 KiB
/// when populated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PsumAddr {
    /// Partition index, 0..128.
    pub partition: u32,
    /// Byte offset inside the partition.
    pub offset: u32,
}

impl PsumAddr {
    /// The PSUM bank (0..8) this byte falls in: in-partition offset / 2 KiB
    /// (docs/references/wiki.md §A.2: the bank is chosen purely by address).
    pub const fn bank(self) -> u32 {
        self.offset / PSUM_BANK_BYTES
    }
}

impl fmt::Display for SbufAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sbuf[p{}]+{:#x}", self.partition, self.offset)
    }
}

impl fmt::Display for PsumAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "psum[p{}]+{:#x}", self.partition, self.offset)
    }
}
