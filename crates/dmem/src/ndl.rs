//! NDL — the Neuron Driver Layer leaves the dmem runtime calls (tdrv-dmem §2
//! "How ndl_memory_alloc becomes a MEM_ALLOC ioctl", §3, §4).
//!
//! Every leaf issues at most one ioctl through the [`Transport`] (the open
//! `/dev/neuron` file) with its argument struct from `ioctl_abi::args`;
//! user buffers and out-pointers live in the process's [`UserSpace`], which
//! this layer owns. An ioctl error comes back as the [`IoctlError`] the
//! transport gave, so the errno (ENOMEM above all) survives to the caller.
//!
//! The NDL handle ([`NdlHandle`]) is the user address of a 64-byte NDL
//! record (`docs/host-runtime.md` §4.1): `ndl_memory_alloc` callocs the
//! record and hands the driver a pointer *into it* as `mem_handle`, so the
//! kernel handle is written into the record by the driver (8 bytes at
//! [`NDL_RECORD_HANDLE_OFFSET`]). Word 0 is the back-pointer to the
//! `ndl_device_t` block, which holds the fd at +632 and the per-NC bounce
//! buffers at +104; the layouts are data in [`crate::layout`].

use std::collections::BTreeMap;

use ioctl_abi::Errno;
use ioctl_abi::args::{
    MemAllocV2MemType, MemAllocV2MemType64, MemBufCopy64, MemBufCopy64Zc, MemBufCopy64ZcBatches,
    MemCopyAsync64, MemCopyAsyncWait, MemFree, MemGetPa, MemcpyBatch, TensorBatchOp,
};
use ioctl_abi::cmd;
use ioctl_abi::enums::{H2tCtxHandleType, MemAllocCategory};
use ioctl_abi::{IoctlArg, enums::NEURON_DMA_H2T_DEFAULT_QID};
use ioctl_bus::{IoctlError, Transport, UserSpace};
use serde::Serialize;
use zerocopy::IntoBytes;

pub use crate::layout::NDL_RECORD_BYTES;
use crate::layout::{
    NDL_COPY_BUF_T_BYTES, NDL_COPY_BUF_T_LAYOUT, NDL_DEVICE_FD_OFFSET, NDL_DEVICE_T_BYTES,
    NDL_DEVICE_T_LAYOUT, NDL_RECORD_LAYOUT,
};

/// The byte offset of `name` in a layout table that has it (the tables
/// and their tests are in [`crate::layout`]).
const fn field(layout: &[crate::layout::FieldLayout], name: &str) -> usize {
    let mut i = 0;
    while i < layout.len() {
        if str_eq(layout[i].name, name) {
            return layout[i].offset;
        }
        i += 1;
    }
    panic!("no such field");
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Record word 0: the device back-pointer (u64).
const REC_DEVICE: usize = field(&NDL_RECORD_LAYOUT, "device");
/// Record word: `nc_id` (u32).
const REC_NC: usize = field(&NDL_RECORD_LAYOUT, "nc_id");
/// Record word: `host_memory` (u32).
const REC_HOST: usize = field(&NDL_RECORD_LAYOUT, "host_memory");
/// Record word: `size` (u64).
const REC_SIZE: usize = field(&NDL_RECORD_LAYOUT, "size");
/// Record word: `align` (u64).
const REC_ALIGN: usize = field(&NDL_RECORD_LAYOUT, "align");
/// Where the driver writes the kernel handle inside the record (the
/// `mem_handle` out-pointer of MEM_ALLOC points here).
pub const NDL_RECORD_HANDLE_OFFSET: u64 = field(&NDL_RECORD_LAYOUT, "kernel_handle") as u64;
/// `ndl_device_t.cpy_bufs`.
const DEV_CPY_BUFS: usize = field(&NDL_DEVICE_T_LAYOUT, "cpy_bufs");
/// `ndl_copy_buf_t.mem_handle`.
const CPY_BUF_HANDLE: usize = field(&NDL_COPY_BUF_T_LAYOUT, "mem_handle");
/// `ndl_copy_buf_t.mmap_va`.
const CPY_BUF_MMAP_VA: usize = field(&NDL_COPY_BUF_T_LAYOUT, "mmap_va");

/// The descriptor number of the open `/dev/neuron` file, as the device
/// block stores it at +632 (a simulated number: the first after stdio).
pub const NDL_DEVICE_FD: i32 = 3;

/// Per-NC bounce buffer size (simulator decision, see [`Ndl::open`]).
pub const COPY_BUF_BYTES: u64 = 2 << 20;
/// One half of the bounce buffer: the double buffer's ping-pong unit, and
/// the largest chunk `dmem_device_copy` stages (tdrv-dmem §3: 1 MiB).
pub const COPY_BUF_HALF_BYTES: u64 = COPY_BUF_BYTES / 2;

/// An NDL handle: the user address of its 64-byte record (tdrv-dmem §2:
/// `dmem_t.mem_handle` is a pointer to the record, not the kernel cookie).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
pub struct NdlHandle(u64);

impl NdlHandle {
    /// The record's user address.
    #[must_use]
    pub const fn user_addr(self) -> u64 {
        self.0
    }
}

/// The NDL record behind an [`NdlHandle`] (tdrv-dmem §2: `{device, nc_id,
/// size, align, host_memory, handle word}`), as this layer tracks it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NdlRecord {
    /// The driver's handle (written by MEM_ALLOC through the record).
    pub kernel_handle: u64,
    /// NeuronCore the allocation belongs to.
    pub nc_id: u32,
    /// Requested size in bytes.
    pub size_bytes: u64,
    /// Requested alignment in bytes (0 = none).
    pub align_bytes: u64,
    /// Host memory (true) or device HBM (false).
    pub host_memory: bool,
    /// Mapped into the process (`ndl_memory_map` bookkeeping).
    pub mapped: bool,
}

/// A per-NC bounce buffer (`ndl_copy_buf_t`, tdrv-dmem §2 GOTCHA): one per
/// NeuronCore, allocated once at open and shared by every `dmem_t` of the
/// core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CopyBuf {
    /// The NeuronCore it serves.
    pub nc: u32,
    /// Its NDL handle (the copy ioctls name it).
    pub handle: NdlHandle,
    /// Its physical address, which is also its mmap offset (docs/references/driver.md
    /// §1.7): host loads/stores to it go through `Transport::mmap_*`.
    pub pa: u64,
    /// Its size ([`COPY_BUF_BYTES`]).
    pub size_bytes: u64,
}

/// One tensor of a batch copy, as NDL marshals it into a 40-byte
/// `neuron_memcpy_batch_t` (tdrv-dmem §3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NdlBatch {
    /// The tensor's allocation.
    pub mem: NdlHandle,
    /// Offset of the tensor inside the allocation (align offset included).
    pub mem_handle_offset: u64,
    /// The ops (24-byte `nrt_tensor_batch_op_t`), placed in user memory.
    pub ops: Vec<TensorBatchOp>,
    /// BAR4 direct-write threshold (a u16 field in the record).
    pub bar4_wr_threshold: u16,
    /// Flags (the runtime passes 0).
    pub flags: u16,
}

/// The NDL device: the open file, the process memory, the live records and
/// the per-NC bounce buffers.
pub struct Ndl {
    transport: Box<dyn Transport>,
    user: UserSpace,
    /// The user address of the `ndl_device_t` block every record points
    /// back to.
    device: u64,
    records: BTreeMap<u64, NdlRecord>,
    copy_bufs: Vec<CopyBuf>,
    /// An 8-byte user slot for scalar out-pointers (MEM_GET_PA).
    out_slot: u64,
}

impl Ndl {
    /// A copy of the open device (the transport and the driver behind it,
    /// the process memory, the records) that runs on independently; `None`
    /// when a part cannot be copied ([`Dmem::try_clone`]).
    ///
    /// [`Dmem::try_clone`]: crate::Dmem::try_clone
    pub fn try_clone(&mut self) -> Option<Ndl> {
        Some(Ndl {
            transport: self.transport.try_clone_box()?,
            user: self.user.try_clone()?,
            device: self.device,
            records: self.records.clone(),
            copy_bufs: self.copy_bufs.clone(),
            out_slot: self.out_slot,
        })
    }
}

impl std::fmt::Debug for Ndl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ndl")
            .field("records", &self.records.len())
            .field("copy_bufs", &self.copy_bufs)
            .finish_non_exhaustive()
    }
}

/// Whether a failed MEM_ALLOC_V2MT64 is retried as MEM_ALLOC_V2MT (the
/// compat path of `docs/host-runtime.md` §4.1): when the driver did not
/// take the request (EINVAL, ENOTTY: an older driver without the 64-bit
/// form) and the size fits the older request's 32-bit reach. ENOMEM, a
/// fault or a bus failure is final.
fn falls_back_to_v2mt(e: &IoctlError, size_bytes: u64) -> bool {
    matches!(errno_of(e), Some(Errno::EINVAL | Errno::ENOTTY)) && size_bytes <= u64::from(u32::MAX)
}

/// The errno of an NDL failure, if the driver gave one (bus failures have
/// none).
#[must_use]
pub fn errno_of(e: &IoctlError) -> Option<Errno> {
    match e {
        IoctlError::Errno(errno) => Some(*errno),
        IoctlError::Bus(_) => None,
    }
}

impl Ndl {
    /// Opens the device and allocates the per-NC bounce buffers (NDL open,
    /// tdrv-dmem §2 GOTCHA: "allocated once, at device open").
    ///
    /// Simulator decision: each bounce buffer is [`COPY_BUF_BYTES`] (2 MiB)
    /// of *host* memory, category NCDEV_HOST, used as two 1 MiB halves for
    /// the double buffer; the seed does not give the real size or
    /// placement.
    ///
    /// # Errors
    ///
    /// The first failing ioctl's error; buffers allocated before it are
    /// freed again.
    pub fn open(
        transport: Box<dyn Transport>,
        mut user: UserSpace,
        nc_count: u32,
    ) -> Result<Self, IoctlError> {
        let out_slot = user.alloc(8);
        let device = user.alloc(NDL_DEVICE_T_BYTES);
        user.write(
            device + NDL_DEVICE_FD_OFFSET as u64,
            &NDL_DEVICE_FD.to_le_bytes(),
        )?;
        let mut ndl = Self {
            transport,
            user,
            device,
            records: BTreeMap::new(),
            copy_bufs: Vec::new(),
            out_slot,
        };
        for nc in 0..nc_count {
            match ndl.alloc_copy_buf(nc) {
                Ok(buf) => {
                    ndl.publish_copy_buf(&buf)?;
                    ndl.copy_bufs.push(buf);
                }
                Err(e) => {
                    // Best effort: the open failed either way.
                    let _ = ndl.close();
                    return Err(e);
                }
            }
        }
        Ok(ndl)
    }

    fn alloc_copy_buf(&mut self, nc: u32) -> Result<CopyBuf, IoctlError> {
        let handle = self.ndl_memory_alloc(
            COPY_BUF_BYTES,
            0,
            true,
            0,
            0,
            nc,
            MemAllocCategory::NcdevHost,
        )?;
        match self.ndl_memory_get_pa(handle) {
            Ok(pa) => Ok(CopyBuf {
                nc,
                handle,
                pa,
                size_bytes: COPY_BUF_BYTES,
            }),
            Err(e) => {
                let _ = self.ndl_memory_free(handle);
                Err(e)
            }
        }
    }

    /// Writes a bounce buffer's entry into `device->cpy_bufs[nc]`.
    fn publish_copy_buf(&mut self, buf: &CopyBuf) -> Result<(), IoctlError> {
        let entry = self.device + (DEV_CPY_BUFS + buf.nc as usize * NDL_COPY_BUF_T_BYTES) as u64;
        self.user.write(
            entry + CPY_BUF_HANDLE as u64,
            &buf.handle.user_addr().to_le_bytes(),
        )?;
        self.user
            .write(entry + CPY_BUF_MMAP_VA as u64, &buf.pa.to_le_bytes())?;
        Ok(())
    }

    /// The user address of the `ndl_device_t` block: word 0 of every
    /// record.
    #[must_use]
    pub fn device_addr(&self) -> u64 {
        self.device
    }

    /// Frees the bounce buffers (NDL close). Records the caller still holds
    /// are left alone.
    ///
    /// # Errors
    ///
    /// The first failing free's error (all are attempted).
    pub fn close(&mut self) -> Result<(), IoctlError> {
        let mut first_err = None;
        for buf in std::mem::take(&mut self.copy_bufs) {
            if let Err(e) = self.ndl_memory_free(buf.handle) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// The process memory (user buffers live here).
    #[must_use]
    pub fn user(&self) -> &UserSpace {
        &self.user
    }

    /// The process memory, mutable.
    pub fn user_mut(&mut self) -> &mut UserSpace {
        &mut self.user
    }

    /// The transport.
    pub fn transport_mut(&mut self) -> &mut dyn Transport {
        self.transport.as_mut()
    }

    /// The record behind a handle.
    #[must_use]
    pub fn record(&self, h: NdlHandle) -> Option<&NdlRecord> {
        self.records.get(&h.0)
    }

    /// Live NDL records (bounce buffers included).
    #[must_use]
    pub fn live_records(&self) -> usize {
        self.records.len()
    }

    fn kernel_handle(&self, h: NdlHandle) -> Result<u64, IoctlError> {
        self.records
            .get(&h.0)
            .map(|r| r.kernel_handle)
            .ok_or(IoctlError::Errno(Errno::EINVAL))
    }

    fn ioctl<T: IoctlArg>(&mut self, request: u32, arg: &mut T) -> Result<i64, IoctlError> {
        self.transport
            .ioctl(request, arg.as_mut_bytes(), &mut self.user)
    }

    fn read_user_u64(&self, addr: u64) -> Result<u64, IoctlError> {
        let mut b = [0u8; 8];
        self.user.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// `ndl_memory_alloc` (@0xc2820): MEM_ALLOC_V2 mem_type64 (0x80384E66).
    /// `mem_alloc_type` is the category byte, never the usage type (seed
    /// 000 §1 GOTCHA). The record is allocated first and the driver writes
    /// the kernel handle into it; on failure the record is released. When
    /// the driver does not take the 64-bit request, the same fields go out
    /// once more as MEM_ALLOC_V2MT (0x80304E66), for sizes below 4 GiB
    /// (`docs/host-runtime.md` §4.1).
    ///
    /// # Errors
    ///
    /// The last ioctl's error (ENOMEM when the driver is out of memory).
    #[allow(clippy::too_many_arguments)]
    pub fn ndl_memory_alloc(
        &mut self,
        size_bytes: u64,
        align_bytes: u64,
        host_memory: bool,
        dram_channel: u32,
        dram_region: u32,
        nc_id: u32,
        mem_alloc_type: MemAllocCategory,
    ) -> Result<NdlHandle, IoctlError> {
        let rec = self.user.alloc(NDL_RECORD_BYTES);
        let mut bytes = [0u8; NDL_RECORD_BYTES];
        let put = |b: &mut [u8; NDL_RECORD_BYTES], at: usize, v: &[u8]| {
            b[at..at + v.len()].copy_from_slice(v);
        };
        put(&mut bytes, REC_DEVICE, &self.device.to_le_bytes());
        put(&mut bytes, REC_NC, &nc_id.to_le_bytes());
        put(&mut bytes, REC_HOST, &u32::from(host_memory).to_le_bytes());
        put(&mut bytes, REC_SIZE, &size_bytes.to_le_bytes());
        put(&mut bytes, REC_ALIGN, &align_bytes.to_le_bytes());
        self.user.write(rec, &bytes)?;

        let mut arg = MemAllocV2MemType64::default();
        arg.size.set(size_bytes);
        arg.align.set(align_bytes);
        arg.host_memory.set(u32::from(host_memory));
        arg.dram_channel.set(dram_channel);
        arg.dram_region.set(dram_region);
        arg.nc_id.set(nc_id);
        arg.mem_type.set(mem_alloc_type.raw());
        arg.mem_handle.set(rec + NDL_RECORD_HANDLE_OFFSET);
        let mut result = self.ioctl(cmd::MEM_ALLOC_V2MT64, &mut arg);
        if let Err(e) = &result
            && falls_back_to_v2mt(e, size_bytes)
        {
            let mut old = MemAllocV2MemType::default();
            old.size.set(size_bytes);
            old.align.set(align_bytes);
            old.host_memory.set(u32::from(host_memory));
            old.dram_channel.set(dram_channel);
            old.dram_region.set(dram_region);
            old.nc_id.set(nc_id);
            old.mem_type.set(mem_alloc_type.raw());
            old.mem_handle.set(rec + NDL_RECORD_HANDLE_OFFSET);
            result = self.ioctl(cmd::MEM_ALLOC_V2MT, &mut old);
        }
        let result = result.and_then(|_| self.read_user_u64(rec + NDL_RECORD_HANDLE_OFFSET));
        match result {
            Ok(kernel_handle) => {
                self.records.insert(
                    rec,
                    NdlRecord {
                        kernel_handle,
                        nc_id,
                        size_bytes,
                        align_bytes,
                        host_memory,
                        mapped: false,
                    },
                );
                Ok(NdlHandle(rec))
            }
            Err(e) => {
                self.user.free(rec);
                Err(e)
            }
        }
    }

    /// `ndl_memory_get_pa` (@0xc2a00): MEM_GET_PA (0x80084E19); the driver
    /// writes the PA through the `pa` out-pointer.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_get_pa(&mut self, h: NdlHandle) -> Result<u64, IoctlError> {
        let mut arg = MemGetPa::default();
        arg.mem_handle.set(self.kernel_handle(h)?);
        arg.pa.set(self.out_slot);
        self.ioctl(cmd::MEM_GET_PA, &mut arg)?;
        self.read_user_u64(self.out_slot)
    }

    /// `ndl_memory_free`: MEM_FREE (0x80084E16). The record is released
    /// whatever the driver answers (the caller cannot retry a free).
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_free(&mut self, h: NdlHandle) -> Result<(), IoctlError> {
        let kernel_handle = self.kernel_handle(h)?;
        let mut arg = MemFree::default();
        arg.mem_handle.set(kernel_handle);
        let rc = self.ioctl(cmd::MEM_FREE, &mut arg);
        self.records.remove(&h.0);
        self.user.free(h.0);
        rc.map(|_| ())
    }

    /// `ndl_memory_map`: maps the allocation into the process. There is no
    /// mmap ioctl (docs/references/driver.md §1.7): the mmap offset is the PA, and host
    /// loads/stores go through `Transport::mmap_*` at that offset, so this
    /// is bookkeeping plus a MEM_GET_PA. Returns the mapping's key (the PA).
    ///
    /// # Errors
    ///
    /// As [`Ndl::ndl_memory_get_pa`].
    pub fn ndl_memory_map(&mut self, h: NdlHandle) -> Result<u64, IoctlError> {
        let pa = self.ndl_memory_get_pa(h)?;
        if let Some(r) = self.records.get_mut(&h.0) {
            r.mapped = true;
        }
        Ok(pa)
    }

    /// `ndl_memory_unmap`: the inverse bookkeeping of [`Ndl::ndl_memory_map`].
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown or unmapped handle.
    pub fn ndl_memory_unmap(&mut self, h: NdlHandle) -> Result<(), IoctlError> {
        match self.records.get_mut(&h.0) {
            Some(r) if r.mapped => {
                r.mapped = false;
                Ok(())
            }
            _ => Err(IoctlError::Errno(Errno::EINVAL)),
        }
    }

    /// `ndl_memory_copy_as` (@0xc2ee0): MEM_COPY_ASYNC64 (0xC0384E6C).
    /// `*wait_handle` goes in as `pwait_handle` (the previous transfer's
    /// handle) and the driver's new `wait_handle` is stored back, so a
    /// caller starting at -1 (NONE) sees ASYNC1, ASYNC2, ASYNC1, … and one
    /// starting at 0 (SYNC) stays at 0 (docs/references/driver.md §4.6). The driver
    /// waits for the previous transfer before returning. On error the
    /// variable is left unchanged.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    #[allow(clippy::too_many_arguments)]
    pub fn ndl_memory_copy_as(
        &mut self,
        src: NdlHandle,
        dst: NdlHandle,
        src_offset: u64,
        dst_offset: u64,
        size_bytes: u64,
        host_prefetch_addr: u64,
        wait_handle: &mut i32,
    ) -> Result<(), IoctlError> {
        let mut arg = MemCopyAsync64::default();
        arg.src_mem_handle.set(self.kernel_handle(src)?);
        arg.dst_mem_handle.set(self.kernel_handle(dst)?);
        arg.size.set(size_bytes);
        arg.src_offset.set(src_offset);
        arg.dst_offset.set(dst_offset);
        arg.host_prefetch_addr.set(host_prefetch_addr);
        arg.pwait_handle.set(wait_handle.cast_unsigned());
        self.ioctl(cmd::MEM_COPY_ASYNC64, &mut arg)?;
        *wait_handle = arg.wait_handle.get().cast_signed();
        Ok(())
    }

    /// `ndl_memory_copy_as_wait`: MEM_COPY_ASYNC_WAIT for `wait_handle`.
    ///
    /// Inference (not in the seed): the driver accepts only ASYNC1/ASYNC2
    /// and fails anything else with EINVAL (docs/references/driver.md §1.6), yet the
    /// runtime calls this after single-pass SYNC copies (handle 0), which
    /// it treats as success. So NDL treats SYNC (0) and NONE (-1) as
    /// "nothing to wait for" and issues no ioctl. The handle names the
    /// allocation (`mem`) as both source and destination; the driver picks
    /// the H2T ring from it.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_copy_as_wait(
        &mut self,
        mem: NdlHandle,
        wait_handle: i32,
    ) -> Result<(), IoctlError> {
        let async_slot = matches!(
            H2tCtxHandleType::from_raw(wait_handle),
            Some(H2tCtxHandleType::Async1 | H2tCtxHandleType::Async2)
        );
        if !async_slot {
            return Ok(());
        }
        let kernel_handle = self.kernel_handle(mem)?;
        let mut arg = MemCopyAsyncWait::default();
        arg.src_mem_handle.set(kernel_handle);
        arg.dst_mem_handle.set(kernel_handle);
        arg.pwait_handle.set(wait_handle.cast_unsigned());
        self.ioctl(cmd::MEM_COPY_ASYNC_WAIT, &mut arg).map(|_| ())
    }

    fn buf_copy(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
        copy_to_mem_handle: bool,
    ) -> Result<(), IoctlError> {
        let mut arg = MemBufCopy64::default();
        arg.mem_handle.set(self.kernel_handle(mem)?);
        arg.buffer.set(buffer);
        arg.size.set(size_bytes);
        arg.offset.set(offset);
        arg.copy_to_mem_handle.set(u32::from(copy_to_mem_handle));
        self.ioctl(cmd::MEM_BUF_COPY64, &mut arg).map(|_| ())
    }

    /// `ndl_memory_buf_copyin` (@0xc2ce0): MEM_BUF_COPY64 with
    /// `copy_to_mem_handle` = 1 (user buffer → allocation).
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_buf_copyin(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
    ) -> Result<(), IoctlError> {
        self.buf_copy(mem, buffer, offset, size_bytes, true)
    }

    /// `ndl_memory_buf_copyout` (@0xc2cf0): MEM_BUF_COPY64 with
    /// `copy_to_mem_handle` = 0 (allocation → user buffer).
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_buf_copyout(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
    ) -> Result<(), IoctlError> {
        self.buf_copy(mem, buffer, offset, size_bytes, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn zerocopy(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
        is_copy_to_device: bool,
        h2t_qid: i32,
        bar4_wr_threshold: u32,
    ) -> Result<(), IoctlError> {
        let mut arg = MemBufCopy64Zc::default();
        arg.mem_handle.set(self.kernel_handle(mem)?);
        arg.buffer.set(buffer);
        arg.size.set(size_bytes);
        arg.offset.set(offset);
        arg.is_copy_to_device.set(u32::from(is_copy_to_device));
        arg.bar4_wr_threshold.set(bar4_wr_threshold);
        arg.h2t_qid.set(h2t_qid);
        // sequence_num 0: synchronous.
        self.ioctl(cmd::MEM_BUF_ZEROCOPY64, &mut arg).map(|_| ())
    }

    /// `ndl_memory_buf_zerocopyin` (@0xc48d0): MEM_BUF_ZEROCOPY64 host →
    /// device, synchronous, with the BAR4 direct-write threshold.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_buf_zerocopyin(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
        h2t_qid: i32,
        bar4_wr_threshold: u32,
    ) -> Result<(), IoctlError> {
        self.zerocopy(
            mem,
            buffer,
            offset,
            size_bytes,
            true,
            h2t_qid,
            bar4_wr_threshold,
        )
    }

    /// `ndl_memory_buf_zerocopyout` (@0xc48a0): MEM_BUF_ZEROCOPY64 device →
    /// host, synchronous.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_buf_zerocopyout(
        &mut self,
        mem: NdlHandle,
        buffer: u64,
        offset: u64,
        size_bytes: u64,
        h2t_qid: i32,
    ) -> Result<(), IoctlError> {
        self.zerocopy(mem, buffer, offset, size_bytes, false, h2t_qid, 0)
    }

    /// `ndl_memory_buf_batch_copy` (@0xc5a30): MEM_BUF_ZEROCOPY64_BATCHES
    /// (0xC0204E81). Each batch's ops go to user memory as an array of
    /// 24-byte `TensorBatchOp`, then the 40-byte `MemcpyBatch` records as
    /// one array, then one synchronous ioctl names them. The user buffers
    /// are released afterwards.
    ///
    /// # Errors
    ///
    /// EINVAL for an unknown handle, else the ioctl's error.
    pub fn ndl_memory_buf_batch_copy(
        &mut self,
        batches: &[NdlBatch],
        is_copy_to_device: bool,
        h2t_qid: i32,
    ) -> Result<(), IoctlError> {
        let mut placed = Vec::with_capacity(batches.len() + 1);
        let result = self.batch_copy_placed(batches, is_copy_to_device, h2t_qid, &mut placed);
        for addr in placed {
            self.user.free(addr);
        }
        result
    }

    fn batch_copy_placed(
        &mut self,
        batches: &[NdlBatch],
        is_copy_to_device: bool,
        h2t_qid: i32,
        placed: &mut Vec<u64>,
    ) -> Result<(), IoctlError> {
        let mut records = Vec::with_capacity(batches.len());
        for b in batches {
            let ops_ptr = self.user.alloc_with(b.ops.as_slice().as_bytes());
            placed.push(ops_ptr);
            let mut r = MemcpyBatch::default();
            r.mem_handle.set(self.kernel_handle(b.mem)?);
            r.mem_handle_offset.set(b.mem_handle_offset);
            r.ops_ptr.set(ops_ptr);
            r.num_ops
                .set(u32::try_from(b.ops.len()).map_err(|_| Errno::EINVAL)?);
            r.bar4_wr_threshold.set(b.bar4_wr_threshold);
            r.flags.set(b.flags);
            records.push(r);
        }
        let batches_ptr = self.user.alloc_with(records.as_slice().as_bytes());
        placed.push(batches_ptr);
        let mut arg = MemBufCopy64ZcBatches::default();
        arg.batches_ptr.set(batches_ptr);
        arg.num_batches
            .set(u32::try_from(records.len()).map_err(|_| Errno::EINVAL)?);
        arg.is_copy_to_device.set(u16::from(is_copy_to_device));
        arg.h2t_qid.set(h2t_qid);
        self.ioctl(cmd::MEM_BUF_ZEROCOPY64_BATCHES, &mut arg)
            .map(|_| ())
    }

    /// `ndl_alloc_contiguous_scratchpad` (@0xc53c0): a MEM_ALLOC_V2
    /// mem_type64 of category 19 CONTIGUOUS_SCRATCHPAD_DEVICE on HBM `hbm`
    /// for NC `nc_id`, unaligned.
    ///
    /// # Errors
    ///
    /// As [`Ndl::ndl_memory_alloc`].
    pub fn ndl_alloc_contiguous_scratchpad(
        &mut self,
        size_bytes: u64,
        hbm: u32,
        nc_id: u32,
    ) -> Result<NdlHandle, IoctlError> {
        self.ndl_memory_alloc(
            size_bytes,
            0,
            false,
            hbm,
            0,
            nc_id,
            MemAllocCategory::ContiguousScratchpadDevice,
        )
    }

    /// `ndl_get_copy_buf` (@0xc44d0): NC `nc`'s bounce buffer. Not an
    /// ioctl and allocates nothing (tdrv-dmem §2 GOTCHA).
    ///
    /// # Errors
    ///
    /// EINVAL for an NC without a bounce buffer.
    pub fn ndl_get_copy_buf(&self, nc: u32) -> Result<CopyBuf, IoctlError> {
        usize::try_from(nc)
            .ok()
            .and_then(|i| self.copy_bufs.get(i))
            .copied()
            .ok_or(IoctlError::Errno(Errno::EINVAL))
    }

    /// Host memcpy from a user buffer into mmapped driver memory at
    /// `mmap_offset` (a chunk's PA plus an offset).
    ///
    /// # Errors
    ///
    /// EFAULT when the user range is unmapped, else the mmap store's error.
    pub fn memcpy_user_to_mmap(
        &mut self,
        user_addr: u64,
        mmap_offset: u64,
        len_bytes: u64,
    ) -> Result<(), IoctlError> {
        let mut bytes = vec![0u8; usize::try_from(len_bytes).map_err(|_| Errno::EINVAL)?];
        self.user.read(user_addr, &mut bytes)?;
        self.transport.mmap_write(mmap_offset, &bytes)
    }

    /// Host memcpy from mmapped driver memory at `mmap_offset` into a user
    /// buffer.
    ///
    /// # Errors
    ///
    /// The mmap load's error, or EFAULT when the user range is unmapped.
    pub fn memcpy_mmap_to_user(
        &mut self,
        mmap_offset: u64,
        user_addr: u64,
        len_bytes: u64,
    ) -> Result<(), IoctlError> {
        let mut bytes = vec![0u8; usize::try_from(len_bytes).map_err(|_| Errno::EINVAL)?];
        self.transport.mmap_read(mmap_offset, &mut bytes)?;
        self.user.write(user_addr, &bytes)?;
        Ok(())
    }
}

/// The H2T queue NDL passes for "the default queue" (-1).
pub const DEFAULT_H2T_QID: i32 = NEURON_DMA_H2T_DEFAULT_QID;
