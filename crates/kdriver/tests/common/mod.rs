//! Shared host-side helpers for the kdriver integration tests: a process
//! (user memory) talking to the driver through a transport, as in
//! `ioctls.rs`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ioctl_abi::Ioctl;
use ioctl_abi::args::{MemAllocV2MemType64, MemBufCopy64, MemFree, MemGetPa};
use ioctl_bus::{InProcess, IoctlError, Transport, UserSpace};
use kdriver::{KdriverConfig, KernelDriver};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

/// `TENSORS_DEVICE`.
pub const TENSORS_DEVICE: u32 = 9;
/// `TENSORS_HOST`.
pub const TENSORS_HOST: u32 = 2;
/// `DMA_RINGS_HOST`.
pub const DMA_RINGS_HOST: u32 = 17;
/// `DMA_RINGS_DEVICE`.
pub const DMA_RINGS_DEVICE: u32 = 18;
/// The V3 PCIe host bit (§5.3).
pub const HOST_BIT: u64 = 1 << 46;

/// A process with its user memory and an open device.
pub struct Host<T: Transport> {
    pub bus: T,
    pub user: UserSpace,
}

impl Host<InProcess<KernelDriver>> {
    /// A process over an in-process driver on a default Trn2 device.
    pub fn new(cfg: KdriverConfig) -> Self {
        Self::over(InProcess::new(KernelDriver::trn2(cfg).unwrap()))
    }

    /// The driver.
    pub fn driver(&self) -> &KernelDriver {
        self.bus.driver()
    }

    /// The driver, mutable.
    pub fn driver_mut(&mut self) -> &mut KernelDriver {
        self.bus.driver_mut()
    }

    /// H2T batches started so far.
    pub fn batches(&self) -> u64 {
        self.driver().stats().h2t_batches
    }

    /// H2T data descriptors built so far.
    pub fn data_descs(&self) -> u64 {
        self.driver().stats().h2t_data_descs
    }

    /// Device memory at `pa`.
    pub fn dev_read(&self, pa: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.driver().device().read_bytes(pa, &mut b).unwrap();
        b
    }
}

impl<T: Transport> Host<T> {
    /// A process over `bus`.
    pub fn over(bus: T) -> Self {
        Self {
            bus,
            user: UserSpace::new(),
        }
    }

    /// Issues `ioctl` with `arg`, writing the copied-out struct back.
    pub fn call<A: IntoBytes + FromBytes + Immutable>(
        &mut self,
        ioctl: Ioctl,
        arg: &mut A,
    ) -> Result<i64, IoctlError> {
        let mut bytes = arg.as_bytes().to_vec();
        let r = self.bus.ioctl(ioctl.value(), &mut bytes, &mut self.user);
        *arg = A::read_from_bytes(&bytes).unwrap();
        r
    }

    /// MEM_ALLOC_V2MT64 with an alignment; the handle.
    pub fn alloc_aligned(
        &mut self,
        size: u64,
        align: u64,
        host: bool,
        channel: u32,
        nc: u32,
        cat: u32,
    ) -> Result<u64, IoctlError> {
        let out = self.user.alloc(8);
        let mut a = MemAllocV2MemType64::new_zeroed();
        a.size.set(size);
        a.align.set(align);
        a.host_memory.set(u32::from(host));
        a.dram_channel.set(channel);
        a.nc_id.set(nc);
        a.mem_type.set(cat);
        a.mem_handle.set(out);
        let r = self.call(Ioctl::MemAllocV2Mt64, &mut a);
        let mut h = [0u8; 8];
        self.user.read(out, &mut h).unwrap();
        self.user.free(out);
        r.map(|_| u64::from_le_bytes(h))
    }

    /// MEM_ALLOC_V2MT64 without alignment.
    pub fn alloc(
        &mut self,
        size: u64,
        host: bool,
        channel: u32,
        nc: u32,
        cat: u32,
    ) -> Result<u64, IoctlError> {
        self.alloc_aligned(size, 0, host, channel, nc, cat)
    }

    /// MEM_FREE.
    pub fn free(&mut self, h: u64) -> Result<i64, IoctlError> {
        let mut f = MemFree::new_zeroed();
        f.mem_handle.set(h);
        self.call(Ioctl::MemFree, &mut f)
    }

    /// MEM_GET_PA.
    pub fn pa(&mut self, h: u64) -> u64 {
        let out = self.user.alloc(8);
        let mut a = MemGetPa::new_zeroed();
        a.mem_handle.set(h);
        a.pa.set(out);
        self.call(Ioctl::MemGetPa, &mut a).unwrap();
        let mut b = [0u8; 8];
        self.user.read(out, &mut b).unwrap();
        u64::from_le_bytes(b)
    }

    /// MEM_BUF_COPY64.
    pub fn buf_copy(
        &mut self,
        h: u64,
        buf: u64,
        size: u64,
        offset: u64,
        to_mem: bool,
    ) -> Result<i64, IoctlError> {
        let mut a = MemBufCopy64::new_zeroed();
        a.mem_handle.set(h);
        a.buffer.set(buf);
        a.size.set(size);
        a.offset.set(offset);
        a.copy_to_mem_handle.set(u32::from(to_mem));
        self.call(Ioctl::MemBufCopy64, &mut a)
    }
}

/// A recognisable byte pattern.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 8) as u8))
        .collect()
}

/// The errno of a failed call.
pub fn errno(e: ioctl_abi::Errno) -> Result<i64, IoctlError> {
    Err(IoctlError::Errno(e))
}
