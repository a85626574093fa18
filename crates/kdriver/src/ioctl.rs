//! The ioctl handlers (docs/references/driver.md §1.6), dispatched by exact number.

use ioctl_abi::args::{
    DMA_QUEUE_INIT_BATCH_ENTRIES, DmaAckCompleted, DmaCopyDescriptors, DmaCopyDescriptors64,
    DmaDescriptorCopyout, DmaEngGetState, DmaEngInit, DmaEngSetState, DmaEngState,
    DmaQueueCopyStart, DmaQueueGetState, DmaQueueInit, DmaQueueInitBatch, DmaQueueState, Event,
    MemAlloc, MemAllocV2, MemAllocV2MemType, MemAllocV2MemType64, MemAllocV2MemType64Pa,
    MemBufCopy, MemBufCopy64, MemBufCopy64Zc, MemBufCopy64ZcBatches, MemBufCopy64ZcDeprecated,
    MemCopy, MemCopy64, MemCopy64Deprecated, MemCopyAsync, MemCopyAsync64, MemCopyAsyncWait,
    MemFree, MemGetExtendedInfo, MemGetInfo, MemGetPa, MemcpyBatch, Memset, Memset64, Semaphore,
    TensorBatchOp,
};
use ioctl_abi::enums::{MemAllocCategory, UdmaState};
use ioctl_abi::{Errno, Ioctl, IoctlDef, parse_arg};
use ioctl_bus::UserMemory;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::h2t::{self, Barrier, Ctx, MAX_DMA_DESC_BYTES, Pair, SYNC_THRESHOLD_PAIRS};
use crate::mem::{AllocRequest, HOST_BIT, Lifespan};
use crate::{ENGINES, KernelDriver, QUEUES, UserQueue};

/// Zero-copy pin step: `NDMA_ZC_PAGES_PER_XFER` = 64 pages (§4.7).
pub const ZC_PAGES_PER_XFER: u64 = 64;
/// Host page size.
pub const HOST_PAGE_BYTES: u64 = 4096;
/// Bounce buffer of MEM_BUF_COPY and MEMSET (`MEMSET_HOST_BUF_SIZE` =
/// `MAX_DMA_DESC_SIZE`, §1.6).
pub const BOUNCE_BYTES: u64 = 65_536;
/// How much a CPU copy between user memory and a host chunk or BAR4 moves
/// at a time (a simulator choice: host memory stays bounded whatever the
/// size).
pub const CPU_COPY_PIECE_BYTES: u64 = 1 << 20;
/// Semaphores / events per NC (§1.6).
pub const SEMAPHORES: u32 = 256;
/// Ring base and end alignment (`UDMA_QUEUE_ADDR_BYTE_ALIGNMENT`, §2.9).
const QUEUE_ALIGN_BYTES: u64 = 256;
/// `UDMA_MIN_Q_SIZE` (§2.9).
const MIN_QUEUE_DESCS: u32 = 32;
/// `UDMA_MAX_Q_SIZE` (§2.9).
const MAX_QUEUE_DESCS: u32 = (1 << 24) - 16;
/// S2M queue Q_CFG EN_STREAM (= EN_SCHEDULING, bit 17, §2.5).
const S2M_Q_CFG_EN_STREAM: u32 = 1 << 17;

fn put<T: IntoBytes + zerocopy::Immutable>(arg: &mut [u8], v: &T) {
    let b = v.as_bytes();
    let n = b.len().min(arg.len());
    arg[..n].copy_from_slice(&b[..n]);
}

/// Which memory-chunk handle of a copy decides the NC (§4.1).
fn copy_nc(src: &crate::mem::MemChunk, dst: &crate::mem::MemChunk) -> u32 {
    match (src.host, dst.host) {
        (false, _) => src.nc_id,
        (true, false) => dst.nc_id,
        (true, true) => dst.nc_id,
    }
}

impl KernelDriver {
    pub(crate) fn dispatch(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        let def = ioctl_abi::lookup(request)?;
        if def.attach_gated && !self.cfg.attached {
            return Err(Errno::EACCES);
        }
        match def.ioctl {
            Ioctl::MemAlloc => {
                let a: MemAlloc = parse_arg(def, arg)?;
                let req = AllocRequest {
                    size: a.size.get(),
                    align: 0,
                    host: a.host_memory.get() != 0,
                    channel: a.dram_channel.get(),
                    nc_id: a.nc_id.get(),
                    category: unknown(a.host_memory.get() != 0),
                };
                self.alloc(req, a.mem_handle.get(), user).map(|_| 0)
            }
            Ioctl::MemAllocV2 => {
                let a: MemAllocV2 = parse_arg(def, arg)?;
                let host = a.host_memory.get() != 0;
                let req = AllocRequest {
                    size: a.size.get(),
                    align: a.align.get(),
                    host,
                    channel: a.dram_channel.get(),
                    nc_id: a.nc_id.get(),
                    category: unknown(host),
                };
                self.alloc(req, a.mem_handle.get(), user).map(|_| 0)
            }
            Ioctl::MemAllocV2Mt => {
                let a: MemAllocV2MemType = parse_arg(def, arg)?;
                let req = AllocRequest {
                    size: a.size.get(),
                    align: a.align.get(),
                    host: a.host_memory.get() != 0,
                    channel: a.dram_channel.get(),
                    nc_id: a.nc_id.get(),
                    category: a.mem_type.get(),
                };
                self.alloc(req, a.mem_handle.get(), user).map(|_| 0)
            }
            Ioctl::MemAllocV2Mt64 | Ioctl::MemAllocV2Mt64Pa if !self.cfg.mem_alloc64 => {
                Err(Errno::EINVAL)
            }
            Ioctl::MemAllocV2Mt64 => {
                let a: MemAllocV2MemType64 = parse_arg(def, arg)?;
                let req = AllocRequest {
                    size: a.size.get(),
                    align: a.align.get(),
                    host: a.host_memory.get() != 0,
                    channel: a.dram_channel.get(),
                    nc_id: a.nc_id.get(),
                    category: a.mem_type.get(),
                };
                self.alloc(req, a.mem_handle.get(), user).map(|_| 0)
            }
            Ioctl::MemAllocV2Mt64Pa => {
                let mut a: MemAllocV2MemType64Pa = parse_arg(def, arg)?;
                let req = AllocRequest {
                    size: a.size.get(),
                    align: a.align.get(),
                    host: a.host_memory.get() != 0,
                    channel: a.dram_channel.get(),
                    nc_id: a.nc_id.get(),
                    category: a.mem_type.get(),
                };
                let pa = self.alloc(req, a.mem_handle.get(), user)?;
                a.pa.set(pa);
                put(arg, &a);
                Ok(0)
            }
            Ioctl::MemGetPa => {
                let a: MemGetPa = parse_arg(def, arg)?;
                let pa = self.mem.chunk(a.mem_handle.get())?.pa;
                user.copy_to_user(a.pa.get(), &pa.to_le_bytes())?;
                Ok(0)
            }
            Ioctl::MemGetInfo => {
                // [2.24] `ncdev_mem_get_info_deprecated`: pa first; the mmap
                // offset (= pa, §1.7) only through a non-NULL pointer.
                let a: MemGetInfo = parse_arg(def, arg)?;
                let pa = self.mem.chunk(a.mem_handle.get())?.pa;
                user.copy_to_user(a.pa.get(), &pa.to_le_bytes())?;
                if a.mmap_offset.get() != 0 {
                    user.copy_to_user(a.mmap_offset.get(), &pa.to_le_bytes())?;
                }
                Ok(0)
            }
            Ioctl::MemGetExtendedInfo => {
                let mut a: MemGetExtendedInfo = parse_arg(def, arg)?;
                let h = a.mem_handle.get();
                // [2.24] quirk: a bad handle returns *positive* EINVAL.
                let Ok(c) = self.mem.chunk(h) else {
                    return Ok(i64::from(Errno::EINVAL.code()));
                };
                a.host_memory.set(u32::from(c.host));
                a.mmap_offset.set(c.pa);
                a.pa.set(c.pa);
                a.pid.set(self.cfg.pid);
                a.size.set(c.size_bytes);
                // [2.24] quirk: the kernel mem_chunk pointer is written back
                // into mem_handle (a synthetic kernel address here).
                a.mem_handle.set(KERNEL_CHUNK_BASE + h * 0x80);
                put(arg, &a);
                Ok(0)
            }
            Ioctl::MemFree => {
                let a: MemFree = parse_arg(def, arg)?;
                self.mem.free(a.mem_handle.get())?;
                Ok(0)
            }
            Ioctl::MemCopy => {
                let a: MemCopy = parse_arg(def, arg)?;
                self.mem_copy(
                    a.src_mem_handle.get(),
                    a.dst_mem_handle.get(),
                    u64::from(a.size.get()),
                    u64::from(a.src_offset.get()),
                    u64::from(a.dst_offset.get()),
                )
            }
            Ioctl::MemCopy64Deprecated => {
                // The [2.24] 40-byte MEM_COPY64.
                let a: MemCopy64Deprecated = parse_arg(def, arg)?;
                self.mem_copy(
                    a.src_mem_handle.get(),
                    a.dst_mem_handle.get(),
                    a.size.get(),
                    a.src_offset.get(),
                    a.dst_offset.get(),
                )
            }
            Ioctl::MemCopy64 => {
                let a: MemCopy64 = parse_arg(def, arg)?;
                self.mem_copy(
                    a.src_mem_handle.get(),
                    a.dst_mem_handle.get(),
                    a.size.get(),
                    a.src_offset.get(),
                    a.dst_offset.get(),
                )
            }
            Ioctl::MemCopyAsync => {
                let mut a: MemCopyAsync = parse_arg(def, arg)?;
                let h = self.mem_copy_async(
                    a.src_mem_handle.get(),
                    a.dst_mem_handle.get(),
                    u64::from(a.size.get()),
                    u64::from(a.src_offset.get()),
                    u64::from(a.dst_offset.get()),
                    a.pwait_handle.get() as i32,
                )?;
                a.wait_handle.set(h as u32);
                put(arg, &a);
                Ok(0)
            }
            Ioctl::MemCopyAsync64 => {
                let mut a: MemCopyAsync64 = parse_arg(def, arg)?;
                let h = self.mem_copy_async(
                    a.src_mem_handle.get(),
                    a.dst_mem_handle.get(),
                    a.size.get(),
                    a.src_offset.get(),
                    a.dst_offset.get(),
                    a.pwait_handle.get() as i32,
                )?;
                a.wait_handle.set(h as u32);
                put(arg, &a);
                Ok(0)
            }
            Ioctl::MemCopyAsyncWait => {
                let a: MemCopyAsyncWait = parse_arg(def, arg)?;
                let ctx = match Ctx::from_raw(a.pwait_handle.get() as i32) {
                    Some(c @ (Ctx::Async1 | Ctx::Async2)) => c,
                    _ => return Err(Errno::EINVAL),
                };
                let src = self.mem.chunk(a.src_mem_handle.get())?.clone();
                let dst = self.mem.chunk(a.dst_mem_handle.get())?.clone();
                let nc = copy_nc(&src, &dst);
                if self.rings.get(&nc).is_some_and(|r| r.busy(ctx)) {
                    self.wait(nc, ctx, true, 0)?;
                }
                Ok(0)
            }
            Ioctl::MemBufCopy => {
                let a: MemBufCopy = parse_arg(def, arg)?;
                self.buf_copy(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    u64::from(a.size.get()),
                    u64::from(a.offset.get()),
                    a.copy_to_mem_handle.get() != 0,
                    user,
                )
            }
            Ioctl::MemBufCopy64 => {
                let a: MemBufCopy64 = parse_arg(def, arg)?;
                self.buf_copy(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    a.size.get(),
                    a.offset.get(),
                    a.copy_to_mem_handle.get() != 0,
                    user,
                )
            }
            Ioctl::MemBufZerocopy64Legacy => {
                // [2.24] MEM_BUF_ZEROCOPY64 (the copy64 struct): no BAR4 path.
                let a: MemBufCopy64 = parse_arg(def, arg)?;
                self.zerocopy(
                    a.mem_handle.get(),
                    a.offset.get(),
                    &[(0, a.size.get(), a.buffer.get())],
                    a.copy_to_mem_handle.get() != 0,
                    0,
                    user,
                )
            }
            Ioctl::MemBufZerocopy64Deprecated => {
                let a: MemBufCopy64ZcDeprecated = parse_arg(def, arg)?;
                self.zerocopy(
                    a.mem_handle.get(),
                    a.offset.get(),
                    &[(0, a.size.get(), a.buffer.get())],
                    a.is_copy_to_device.get() != 0,
                    u64::from(a.bar4_wr_threshold.get()),
                    user,
                )
            }
            Ioctl::MemBufZerocopy64 => {
                let a: MemBufCopy64Zc = parse_arg(def, arg)?;
                if a.sequence_num.get() != 0 {
                    // Async completion queues (CQ) are not modelled.
                    return Err(Errno::EOPNOTSUPP);
                }
                self.zerocopy(
                    a.mem_handle.get(),
                    a.offset.get(),
                    &[(0, a.size.get(), a.buffer.get())],
                    a.is_copy_to_device.get() != 0,
                    u64::from(a.bar4_wr_threshold.get()),
                    user,
                )
            }
            Ioctl::MemBufZerocopy64Batches => {
                let a: MemBufCopy64ZcBatches = parse_arg(def, arg)?;
                if a.sequence_num.get() != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                let to_dev = a.is_copy_to_device.get() != 0;
                let n = a.num_batches.get();
                if n == 0 {
                    return Err(Errno::EINVAL);
                }
                for i in 0..u64::from(n) {
                    let mut b = [0u8; 40];
                    user.copy_from_user(a.batches_ptr.get() + 40 * i, &mut b)?;
                    let batch = MemcpyBatch::read_from_bytes(&b).map_err(|_| Errno::EINVAL)?;
                    let mut ops = Vec::new();
                    for k in 0..u64::from(batch.num_ops.get()) {
                        let mut o = [0u8; 24];
                        user.copy_from_user(batch.ops_ptr.get() + 24 * k, &mut o)?;
                        let op = TensorBatchOp::read_from_bytes(&o).map_err(|_| Errno::EINVAL)?;
                        ops.push((op.offset.get(), op.size.get(), op.buffer.get()));
                    }
                    self.zerocopy(
                        batch.mem_handle.get(),
                        batch.mem_handle_offset.get(),
                        &ops,
                        to_dev,
                        u64::from(batch.bar4_wr_threshold.get()),
                        user,
                    )?;
                }
                Ok(0)
            }
            Ioctl::Memset => {
                let a: Memset = parse_arg(def, arg)?;
                self.memset(
                    a.mem_handle.get(),
                    a.offset.get(),
                    a.value.get(),
                    u64::from(a.size.get()),
                )
            }
            Ioctl::Memset64 => {
                let a: Memset64 = parse_arg(def, arg)?;
                self.memset(
                    a.mem_handle.get(),
                    a.offset.get(),
                    a.value.get(),
                    a.size.get(),
                )
            }
            Ioctl::DmaEngInit => {
                // [2.24] returns 0 here: its engines were initialised at
                // driver load (`ndmar_init_nc`). The model initialises engines
                // lazily, so this call stands for that load-time
                // `ndmar_eng_init` (simulator decision).
                let a: DmaEngInit = parse_arg(def, arg)?;
                let e = self.engine(a.eng_id.get())?;
                h2t::init_engine(&mut self.dev, &self.regs, &e)?;
                self.engines_ready.insert(e.id);
                Ok(0)
            }
            Ioctl::DmaEngSetState => {
                let a: DmaEngSetState = parse_arg(def, arg)?;
                let e = self.engine(a.eng_id.get())?;
                // `udma_state_set` (§2.8): DISABLE → DIS, NORMAL → NORMAL,
                // ABORT → ABORT pulses on both directions; IDLE/RESET are
                // refused but `ndmar_eng_set_state` still reports success.
                let pulse = match UdmaState::from_raw(a.state.get()) {
                    Some(UdmaState::Disable) => 0x2,
                    Some(UdmaState::Normal) => 0x1,
                    Some(UdmaState::Abort) => 0x4,
                    _ => {
                        let st = a.state.get();
                        self.log(format!("udma_state_set: invalid state {st} ignored"));
                        return Ok(0);
                    }
                };
                let q = self.regs.q;
                for addr in [
                    e.m2s_unit + q.m2s_change_state,
                    e.s2m_unit + q.s2m_change_state,
                ] {
                    self.dev.write32(addr, pulse).map_err(|_| Errno::EIO)?;
                }
                Ok(0)
            }
            Ioctl::DmaEngGetState => {
                let a: DmaEngGetState = parse_arg(def, arg)?;
                let e = self.engine(a.eng_id.get())?;
                let mut s = DmaEngState::new_zeroed();
                s.revision_id.set(4);
                s.max_queues.set(QUEUES);
                s.num_queues.set(QUEUES);
                s.tx_state.set(self.udma_state_get(&e, false));
                s.rx_state.set(self.udma_state_get(&e, true));
                user.copy_to_user(a.state.get(), s.as_bytes())?;
                Ok(0)
            }
            Ioctl::DmaQueueInit => {
                let a: DmaQueueInit = parse_arg(def, arg)?;
                self.queue_init(&a)
            }
            Ioctl::DmaQueueInitBatch => {
                // [2.24] `ncdev_dma_queue_init_batch`: `count >= 256` is
                // -E2BIG; entries in order, stopping at the first failure.
                let a: DmaQueueInitBatch = parse_arg(def, arg)?;
                let n = a.count.get() as usize;
                if n >= DMA_QUEUE_INIT_BATCH_ENTRIES {
                    return Err(Errno::E2BIG);
                }
                for entry in &a.entries[..n] {
                    self.queue_init(entry)?;
                }
                Ok(0)
            }
            Ioctl::DmaQueueRelease => Ok(0),
            Ioctl::DmaQueueCopyStart => {
                let a: DmaQueueCopyStart = parse_arg(def, arg)?;
                self.queue_copy_start(
                    a.eng_id.get(),
                    a.qid.get(),
                    a.tx_desc_count.get(),
                    a.rx_desc_count.get(),
                )
            }
            Ioctl::DmaAckCompleted => {
                let a: DmaAckCompleted = parse_arg(def, arg)?;
                let q = self
                    .user_queues
                    .get_mut(&(a.eng_id.get(), a.qid.get()))
                    .ok_or(Errno::EINVAL)?;
                // Software only: the completion shadow of both rings.
                q.tx_acked = (q.tx_acked + a.count.get()) % q.tx_len.max(1);
                q.rx_acked = (q.rx_acked + a.count.get()) % q.rx_len.max(1);
                Ok(0)
            }
            Ioctl::DmaQueueGetState => {
                let a: DmaQueueGetState = parse_arg(def, arg)?;
                let (tx, rx) = self.queue_state(a.eng_id.get(), a.qid.get())?;
                user.copy_to_user(a.tx.get(), tx.as_bytes())?;
                user.copy_to_user(a.rx.get(), rx.as_bytes())?;
                Ok(0)
            }
            Ioctl::DmaCopyDescriptors => {
                let a: DmaCopyDescriptors = parse_arg(def, arg)?;
                self.copy_descriptors(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    a.num_descs.get(),
                    u64::from(a.offset.get()),
                    a.queue_type.get(),
                    user,
                )
            }
            Ioctl::DmaCopyDescriptors64 => {
                let a: DmaCopyDescriptors64 = parse_arg(def, arg)?;
                self.copy_descriptors(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    a.num_descs.get(),
                    a.offset.get(),
                    a.queue_type.get(),
                    user,
                )
            }
            Ioctl::DmaDescriptorCopyout => {
                let a: DmaDescriptorCopyout = parse_arg(def, arg)?;
                self.descriptor_copyout(&a, user)
            }
            Ioctl::SemaphoreRead
            | Ioctl::SemaphoreWrite
            | Ioctl::SemaphoreIncrement
            | Ioctl::SemaphoreDecrement => {
                let mut a: Semaphore = parse_arg(def, arg)?;
                self.semaphore(def, &mut a)?;
                put(arg, &a);
                Ok(0)
            }
            Ioctl::EventGet | Ioctl::EventSet => {
                let mut a: Event = parse_arg(def, arg)?;
                self.event_op(def.ioctl == Ioctl::EventSet, &mut a)?;
                put(arg, &a);
                Ok(0)
            }
            // docs/references/driver.md §1.2: DEVICE_RESET / DEVICE_RELEASE are no-ops
            // that return 0 for this model's single process.
            Ioctl::DeviceReset | Ioctl::DeviceRelease => Ok(0),
            // Known numbers whose handlers are not modelled: the driver
            // would act; the model says so instead of pretending.
            other => {
                self.log(format!("{} is not modelled", other.name()));
                Err(Errno::EOPNOTSUPP)
            }
        }
    }

    /// MEM_ALLOC*: allocate, write the handle to the user pointer (8
    /// bytes), return the pa.
    fn alloc(
        &mut self,
        req: AllocRequest,
        out: u64,
        user: &mut dyn UserMemory,
    ) -> Result<u64, Errno> {
        if req.align != 0 && !req.host && !self.cfg.aligned_alloc {
            return Err(Errno::EINVAL);
        }
        let h = self.mem.alloc(req, Lifespan::CurProcess)?;
        if let Err(e) = user.copy_to_user(out, &h.to_le_bytes()) {
            let _ = self.mem.free(h);
            return Err(e);
        }
        Ok(self.mem.chunk(h)?.pa)
    }

    fn engine(&self, eng_id: u32) -> Result<q7::EngineLayout, Errno> {
        if eng_id >= ENGINES {
            return Err(Errno::EINVAL);
        }
        soc::firmware::engine_layout(self.dev.map(), eng_id as u16).map_err(|_| Errno::EINVAL)
    }

    /// Resolves a copy's two handles and checks `offset + size` fits each.
    fn copy_ends(
        &self,
        src_h: u64,
        dst_h: u64,
        size: u64,
        src_off: u64,
        dst_off: u64,
    ) -> Result<(u32, u64, u64), Errno> {
        let src = self.mem.chunk(src_h)?;
        let dst = self.mem.chunk(dst_h)?;
        let fits = |c: &crate::mem::MemChunk, off: u64| {
            off.checked_add(size).is_some_and(|end| end <= c.size_bytes)
        };
        if !fits(src, src_off) || !fits(dst, dst_off) {
            return Err(Errno::EINVAL);
        }
        Ok((copy_nc(src, dst), src.pa + src_off, dst.pa + dst_off))
    }

    fn mem_copy(&mut self, s: u64, d: u64, size: u64, so: u64, dof: u64) -> Result<i64, Errno> {
        let (nc, src, dst) = self.copy_ends(s, d, size, so, dof)?;
        self.memcpy_sync(nc, src, dst, size, true, true)?;
        Ok(0)
    }

    /// `ndma_memcpy_mc_async` (§4.6): one batch on the next context, then
    /// wait for the previous one. Returns the new handle.
    fn mem_copy_async(
        &mut self,
        s: u64,
        d: u64,
        size: u64,
        so: u64,
        dof: u64,
        pwait: i32,
    ) -> Result<i32, Errno> {
        let (nc, src, dst) = self.copy_ends(s, d, size, so, dof)?;
        let prev = Ctx::from_raw(pwait);
        if pwait != -1 && prev.is_none() {
            return Err(Errno::EINVAL);
        }
        let next = Ctx::next(prev);
        let pairs = h2t::split_pairs(src, dst, size, true, true);
        if pairs.len() > SYNC_THRESHOLD_PAIRS {
            self.log(format!(
                "async copy of {size} bytes is too large for one batch"
            ));
            return Err(Errno::EINVAL);
        }
        // A slot still in flight (caller never waited) is drained first.
        if self.rings.get(&nc).is_some_and(|r| r.busy(next)) {
            self.wait(nc, next, true, 0)?;
        }
        self.start(nc, next, &pairs, Barrier::WriteBarrier)?;
        if next == Ctx::Sync {
            self.wait(nc, Ctx::Sync, false, size)?;
        } else if let Some(p) = prev
            && p != Ctx::Sync
            && self.rings.get(&nc).is_some_and(|r| r.busy(p))
        {
            self.wait(nc, p, true, 0)?;
        }
        Ok(next as i32)
    }

    /// A local-lifespan host bounce buffer for one ioctl.
    fn bounce(&mut self, nc: u32, size: u64) -> Result<u64, Errno> {
        let req = AllocRequest {
            size,
            align: 0,
            host: true,
            channel: 0,
            nc_id: nc,
            category: MemAllocCategory::MiscHost.raw(),
        };
        Ok(self.mem.alloc_chunk(req, Lifespan::Local)?)
    }

    /// MEM_BUF_COPY(64): `offset + size` must fit the chunk (64-bit check);
    /// host chunks by plain copy; device chunks through a 64 KiB bounce
    /// buffer, one synchronous H2T copy per ≤ 64 KiB (§1.6). [2.24] quirk:
    /// the device loop counts in `u32`, so a size ≥ 4 GiB copies only
    /// `size mod 2^32` bytes.
    fn buf_copy(
        &mut self,
        handle: u64,
        buffer: u64,
        size: u64,
        offset: u64,
        to_mem: bool,
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        let c = self.mem.chunk(handle)?.clone();
        if offset.checked_add(size).is_none_or(|e| e > c.size_bytes) {
            return Err(Errno::EINVAL);
        }
        if c.host {
            self.cpu_copy(c.pa + offset, buffer, size, to_mem, user)?;
            return Ok(0);
        }
        let size = size & u64::from(u32::MAX);
        if size == 0 {
            return Ok(0);
        }
        let bounce = self.bounce(c.nc_id, BOUNCE_BYTES)?;
        let r = self.buf_copy_device(&c, bounce, buffer, size, offset, to_mem, user);
        self.mem.release_chunk(bounce);
        r.map(|()| 0)
    }

    /// A CPU copy between a user buffer and device-visible memory at
    /// `addr` (a host chunk's kernel mapping, or BAR4), `to_dev` from the
    /// user. It moves [`CPU_COPY_PIECE_BYTES`] at a time, as
    /// `copy_from_user`/`copy_to_user` walk pages, so host memory does not
    /// grow with the size (`docs/host-runtime.md` §3.6).
    fn cpu_copy(
        &mut self,
        addr: u64,
        buffer: u64,
        size: u64,
        to_dev: bool,
        user: &mut dyn UserMemory,
    ) -> Result<(), Errno> {
        let piece = size.min(CPU_COPY_PIECE_BYTES);
        let mut buf = Vec::new();
        buf.try_reserve_exact(piece as usize)
            .map_err(|_| Errno::ENOMEM)?;
        buf.resize(piece as usize, 0);
        let mut done = 0u64;
        while done < size {
            let n = (size - done).min(CPU_COPY_PIECE_BYTES);
            let chunk = &mut buf[..n as usize];
            if to_dev {
                user.copy_from_user(buffer + done, chunk)?;
                self.dev
                    .write_bytes(addr + done, chunk)
                    .map_err(|_| Errno::EIO)?;
            } else {
                self.dev
                    .read_bytes(addr + done, chunk)
                    .map_err(|_| Errno::EIO)?;
                user.copy_to_user(buffer + done, chunk)?;
            }
            done += n;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn buf_copy_device(
        &mut self,
        c: &crate::mem::MemChunk,
        bounce: u64,
        buffer: u64,
        size: u64,
        offset: u64,
        to_mem: bool,
        user: &mut dyn UserMemory,
    ) -> Result<(), Errno> {
        let mut buf = vec![0u8; BOUNCE_BYTES as usize];
        let mut done = 0u64;
        while done < size {
            let n = (size - done).min(BOUNCE_BYTES);
            let chunk = &mut buf[..n as usize];
            if to_mem {
                user.copy_from_user(buffer + done, chunk)?;
                self.dev
                    .write_bytes(bounce, chunk)
                    .map_err(|_| Errno::EIO)?;
                self.memcpy_sync(c.nc_id, bounce, c.pa + offset + done, n, true, true)?;
            } else {
                self.memcpy_sync(c.nc_id, c.pa + offset + done, bounce, n, true, true)?;
                self.dev.read_bytes(bounce, chunk).map_err(|_| Errno::EIO)?;
                user.copy_to_user(buffer + done, chunk)?;
            }
            done += n;
        }
        Ok(())
    }

    /// MEMSET(64): a 64 KiB host buffer of `value`, the first ≤ 64 KiB
    /// DMA'd to the target, the rest replicated on-device with a fixed
    /// source and a moving destination (§1.6).
    fn memset(&mut self, handle: u64, offset: u64, value: u32, size: u64) -> Result<i64, Errno> {
        let c = self.mem.chunk(handle)?.clone();
        if offset.checked_add(size).is_none_or(|e| e > c.size_bytes) {
            return Err(Errno::EINVAL);
        }
        if size == 0 {
            return Ok(0);
        }
        let bounce = self.bounce(c.nc_id, BOUNCE_BYTES)?;
        let r = (|| {
            self.dev
                .fill(bounce, BOUNCE_BYTES, value as u8)
                .map_err(|_| Errno::EIO)?;
            let first = size.min(BOUNCE_BYTES);
            let target = c.pa + offset;
            self.memcpy_sync(c.nc_id, bounce, target, first, true, true)?;
            if size > first {
                self.memcpy_sync(c.nc_id, target, target + first, size - first, false, true)?;
            }
            Ok(0)
        })();
        self.mem.release_chunk(bounce);
        r
    }

    /// Zero-copy (§4.7, [2.24] `ndma_memcpy_zero_copy`): user pages pinned
    /// 64 at a time (the first step shortened by the page offset),
    /// descriptors ≤ 64 KiB over contiguous runs — with the [2.24]
    /// contiguity quirk at most 2 pages merge, so ≤ 8 KiB — the last data
    /// descriptor of a step with DMB, a completion pair per step, two
    /// contexts ping-ponged. Writes of at most `bar4_threshold` bytes to
    /// the device are direct BAR4 stores instead (limits [U]; simulator
    /// decision).
    fn zerocopy(
        &mut self,
        handle: u64,
        base_offset: u64,
        ops: &[(u64, u64, u64)],
        to_dev: bool,
        bar4_threshold: u64,
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        let c = self.mem.chunk(handle)?.clone();
        for &(op_off, size, buffer) in ops {
            let off = base_offset
                .checked_add(op_off)
                .filter(|o| o.checked_add(size).is_some_and(|e| e <= c.size_bytes))
                .ok_or(Errno::EINVAL)?;
            let dev_addr = c.pa + off;
            if c.host || (to_dev && size <= bar4_threshold) {
                // Host memory or a BAR4 direct write: CPU copies.
                self.cpu_copy(dev_addr, buffer, size, to_dev, user)?;
                continue;
            }
            self.zerocopy_op(c.nc_id, dev_addr, size, buffer, to_dev, user)?;
        }
        Ok(0)
    }

    fn zerocopy_op(
        &mut self,
        nc: u32,
        dev_addr: u64,
        size: u64,
        buffer: u64,
        to_dev: bool,
        user: &mut dyn UserMemory,
    ) -> Result<(), Errno> {
        let step_max = ZC_PAGES_PER_XFER * HOST_PAGE_BYTES;
        // Pinned pages: a host region standing for the user's pages.
        let pin = self.bounce(nc, step_max + HOST_PAGE_BYTES)?;
        let pin2 = self.bounce(nc, step_max + HOST_PAGE_BYTES)?;
        let r = (|| {
            let mut done = 0u64;
            let mut step_no = 0u64;
            let mut pending: Vec<(Ctx, u64, u64, u64, u64)> = Vec::new(); // ctx, pin, user, len, pg
            while done < size {
                let page_off = (buffer + done) % HOST_PAGE_BYTES;
                let n = (step_max - page_off).min(size - done);
                let ctx = if step_no.is_multiple_of(2) {
                    Ctx::Async1
                } else {
                    Ctx::Async2
                };
                let region = if step_no.is_multiple_of(2) { pin } else { pin2 };
                // Ping-pong: before reusing a context, finish it.
                if let Some(i) = pending.iter().position(|p| p.0 == ctx) {
                    let p = pending.remove(i);
                    self.zc_finish(nc, p, to_dev, user)?;
                }
                let pinned = region + page_off;
                if to_dev {
                    let mut buf = vec![0u8; n as usize];
                    user.copy_from_user(buffer + done, &mut buf)?;
                    self.dev.write_bytes(pinned, &buf).map_err(|_| Errno::EIO)?;
                }
                let pairs = zc_pairs(pinned, dev_addr + done, n, to_dev);
                self.start(nc, ctx, &pairs, Barrier::Dmb)?;
                pending.push((ctx, pinned, buffer + done, n, pairs.len() as u64));
                done += n;
                step_no += 1;
            }
            for p in pending {
                self.zc_finish(nc, p, to_dev, user)?;
            }
            Ok(())
        })();
        self.mem.release_chunk(pin);
        self.mem.release_chunk(pin2);
        r
    }

    /// Waits for a zero-copy step and unpins it (device→host: the pinned
    /// bytes land in the user buffer).
    fn zc_finish(
        &mut self,
        nc: u32,
        (ctx, pinned, ubuf, n, _): (Ctx, u64, u64, u64, u64),
        to_dev: bool,
        user: &mut dyn UserMemory,
    ) -> Result<(), Errno> {
        self.wait(nc, ctx, true, n)?;
        if !to_dev {
            let mut buf = vec![0u8; n as usize];
            self.dev
                .read_bytes(pinned, &mut buf)
                .map_err(|_| Errno::EIO)?;
            user.copy_to_user(ubuf, &buf)?;
        }
        Ok(())
    }

    /// DMA_QUEUE_INIT, one entry of DMA_QUEUE_INIT_BATCH (§1.6, §2.9;
    /// [2.24] `ndmar_queue_init` → `udma_m2m_init_queue` → `udma_q_init`):
    /// eng < 132 and qid < 16 (EINVAL), then the owner is recorded; a handle
    /// that does not resolve counts as "no ring" (ring base 0), as in the
    /// driver; a completion ring must hold `rx_desc_count` descriptors
    /// (EINVAL) and is then refused (-1, EPERM); ring bases 256-B aligned
    /// and sizes multiples of 16 (-1, EPERM); then per direction, M2S first,
    /// 32 ≤ size ≤ 2^24−16 (EINVAL) and the register sequence — an S2M
    /// failure leaves the M2S queue re-initialised.
    fn queue_init(&mut self, a: &DmaQueueInit) -> Result<i64, Errno> {
        let (eng, qid) = (a.eng_id.get(), a.qid.get());
        if eng >= ENGINES || qid >= QUEUES {
            return Err(Errno::EINVAL);
        }
        let pid = self.cfg.pid;
        self.user_queues
            .entry((eng, qid))
            .or_insert(UserQueue {
                tx_len: 0,
                rx_len: 0,
                tx_acked: 0,
                rx_acked: 0,
                owner: pid,
            })
            .owner = pid;
        let chunk = |s: &mut Self, h: u64| {
            if h == 0 {
                return None;
            }
            let c = s.mem.chunk(h).ok().map(|c| (c.pa, c.size_bytes));
            if c.is_none() {
                s.log(format!("invalid memory handle {h:#x}"));
            }
            c
        };
        let tx = chunk(self, a.tx_handle.get());
        let rx = chunk(self, a.rx_handle.get());
        let rxc = chunk(self, a.rxc_handle.get());
        let (tx_len, rx_len) = (a.tx_desc_count.get(), a.rx_desc_count.get());
        if let Some((_, size)) = rxc
            && u64::from(rx_len) * 16 > size
        {
            return Err(Errno::EINVAL);
        }
        let aligned =
            |r: Option<(u64, u64)>| r.is_none_or(|(pa, _)| pa.is_multiple_of(QUEUE_ALIGN_BYTES));
        let multiple = |n: u32| n.is_multiple_of((QUEUE_ALIGN_BYTES / 16) as u32);
        if !aligned(tx) || !multiple(tx_len) || !aligned(rx) || !multiple(rx_len) {
            self.log("invalid ring alignment or size");
            return Err(Errno::EPERM);
        }
        if rxc.is_some() {
            self.log("Completion ring not supported");
            return Err(Errno::EPERM);
        }
        let e = self.engine(eng)?;
        let regs = self.regs;
        for (s2m, ring, len) in [(false, tx, tx_len), (true, rx, rx_len)] {
            if !(MIN_QUEUE_DESCS..=MAX_QUEUE_DESCS).contains(&len) {
                return Err(Errno::EINVAL);
            }
            let base = ring.map_or(0, |(pa, _)| pa);
            h2t::init_ring(&mut self.dev, &regs, &e, qid as u8, s2m, base, len)?;
        }
        if let Some(q) = self.user_queues.get_mut(&(eng, qid)) {
            *q = UserQueue {
                tx_len,
                rx_len,
                tx_acked: 0,
                rx_acked: 0,
                owner: pid,
            };
        }
        Ok(0)
    }

    /// `udma_state_get` (§2.8) of one direction: any 2-bit sub-state of
    /// the STATE register in abort → ABORT, else any normal → NORMAL, else
    /// IDLE. For S2M the stream-interface field is ignored while the stream
    /// is fully disabled (STREAM_CFG disable|flush|stop-prefetch and no
    /// queue with EN_STREAM).
    fn udma_state_get(&mut self, e: &q7::EngineLayout, s2m: bool) -> u32 {
        let cat = self.dev.catalog();
        let off = |block: &str, reg: &str| cat.block(block).and_then(|m| m.find(reg, None));
        let (unit, block) = if s2m {
            (e.s2m_unit, "udma_s2m")
        } else {
            (e.m2s_unit, "udma_m2s")
        };
        let mut rd = |a: Option<u64>| a.and_then(|a| self.dev.read32(a).ok()).unwrap_or(0);
        let v = rd(off(block, "STATE").map(|o| unit + o));
        // comp_ctrl [1:0], stream_if [5:4], data ctrl [9:8], desc_pref [13:12].
        let mut subs = vec![v & 3, (v >> 8) & 3, (v >> 12) & 3];
        let stream_if = (v >> 4) & 3;
        let ignore_stream = s2m && {
            let cfg = rd(off(block, "STREAM_CFG").map(|o| unit + o));
            let q_cfg = off("udma_s2m_q", "Q_CFG");
            let any_stream = (0..QUEUES as u8)
                .any(|q| rd(q_cfg.map(|o| e.s2m_q(q) + o)) & S2M_Q_CFG_EN_STREAM != 0);
            cfg & 0x111 == 0x111 && !any_stream
        };
        if !ignore_stream {
            subs.push(stream_if);
        }
        if subs.contains(&2) {
            UdmaState::Abort.raw()
        } else if subs.contains(&1) {
            UdmaState::Normal.raw()
        } else {
            UdmaState::Idle.raw()
        }
    }

    /// DMA_QUEUE_COPY_START (§4.4): each count ≤ its ring, RX first, TX
    /// only when non-zero; an RX count of 0 is the [2.24] `BUG_ON`.
    fn queue_copy_start(&mut self, eng: u32, qid: u32, tx: u32, rx: u32) -> Result<i64, Errno> {
        if eng >= ENGINES || qid >= QUEUES {
            return Err(Errno::EINVAL);
        }
        let e = self.engine(eng)?;
        let q = self.regs.q;
        let (mq, sq) = (e.m2s_q(qid as u8), e.s2m_q(qid as u8));
        let tx_len = self.dev.read32(mq + q.drl).map_err(|_| Errno::EIO)?;
        let rx_len = self.dev.read32(sq + q.drl).map_err(|_| Errno::EIO)?;
        if tx > tx_len || rx > rx_len {
            return Err(Errno::EINVAL);
        }
        if rx == 0 {
            self.log("kernel BUG_ON(num == 0) in udma_desc_action_add (s2m count 0)");
            return Err(Errno::EINVAL);
        }
        self.dev
            .write32(sq + q.drtp_inc, rx)
            .map_err(|_| Errno::EIO)?;
        if tx > 0 {
            self.dev
                .write32(mq + q.drtp_inc, tx)
                .map_err(|_| Errno::EIO)?;
        }
        Ok(0)
    }

    fn queue_state(&mut self, eng: u32, qid: u32) -> Result<(DmaQueueState, DmaQueueState), Errno> {
        if eng >= ENGINES || qid >= QUEUES {
            return Err(Errno::EINVAL);
        }
        let e = self.engine(eng)?;
        let mut out = Vec::new();
        for (blk, base, names) in [
            (
                "udma_m2s_q",
                e.m2s_q(qid as u8),
                [
                    "TDRBP_LOW",
                    "TDRBP_HIGH",
                    "TDRL",
                    "TDRHP",
                    "TDRTP",
                    "TCRBP_LOW",
                    "TCRBP_HIGH",
                    "TCRHP",
                ],
            ),
            (
                "udma_s2m_q",
                e.s2m_q(qid as u8),
                [
                    "RDRBP_LOW",
                    "RDRBP_HIGH",
                    "RDRL",
                    "RDRHP",
                    "RDRTP",
                    "RCRBP_LOW",
                    "RCRBP_HIGH",
                    "RCRHP",
                ],
            ),
        ] {
            let cat = self.dev.catalog();
            let mut rd = |reg: &str| -> u32 {
                cat.block(blk)
                    .and_then(|m| m.find(reg, None))
                    .and_then(|off| self.dev.read32(base + off).ok())
                    .unwrap_or(0)
            };
            let status = rd("Q_STATUS");
            let cfg = rd("Q_CFG");
            let v: Vec<u32> = names.iter().map(|n| rd(n)).collect();
            let mut s = DmaQueueState::new_zeroed();
            s.hw_status.set(status);
            // sw_status: 1 disabled, 2 enabled, 3 aborted (§1.4).
            s.sw_status
                .set(if cfg & 0x3_0000 == 0x3_0000 { 2 } else { 1 });
            s.base_addr.set(u64::from(v[0]) | (u64::from(v[1]) << 32));
            s.length.set(v[2]);
            s.head_pointer.set(v[3]);
            s.tail_pointer.set(v[4]);
            s.completion_base_addr
                .set(u64::from(v[5]) | (u64::from(v[6]) << 32));
            s.completion_head.set(v[7]);
            out.push(s);
        }
        Ok((out[0], out[1]))
    }

    /// DMA_COPY_DESCRIPTORS(64) (§1.6, [2.24] `ncdev_dma_copy_descriptors`):
    /// `offset + 16·num` must fit the chunk; the descriptors are staged in
    /// 64 KiB pieces (4096 descriptors), each piece validated — TX
    /// `buf_ptr` / RX `buf1_ptr` with the host bit must lie in a host
    /// chunk (EINVAL); any other queue type fails with -1 (EPERM) — then
    /// written: host rings by memcpy, device rings by one H2T copy. Pieces
    /// before a failing one stay written, as in the driver.
    fn copy_descriptors(
        &mut self,
        handle: u64,
        buffer: u64,
        num: u32,
        offset: u64,
        qtype: u32,
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        let c = self.mem.chunk(handle)?.clone();
        let bytes = 16 * u64::from(num);
        if offset.checked_add(bytes).is_none_or(|e| e > c.size_bytes) {
            return Err(Errno::EINVAL);
        }
        let bounce = if c.host {
            None
        } else {
            Some(self.bounce(c.nc_id, BOUNCE_BYTES)?)
        };
        let r = (|| {
            let mut done = 0u64;
            while done < bytes {
                let n = (bytes - done).min(BOUNCE_BYTES);
                let mut piece = vec![0u8; n as usize];
                user.copy_from_user(buffer + done, &mut piece)?;
                self.validate_descriptors(&piece, qtype)?;
                let dst = c.pa + offset + done;
                match bounce {
                    None => self.dev.write_bytes(dst, &piece).map_err(|_| Errno::EIO)?,
                    Some(b) => {
                        self.dev.write_bytes(b, &piece).map_err(|_| Errno::EIO)?;
                        self.memcpy_sync(c.nc_id, b, dst, n, true, true)?;
                    }
                }
                done += n;
            }
            Ok(0)
        })();
        if let Some(b) = bounce {
            self.mem.release_chunk(b);
        }
        r
    }

    /// `ndma_memcpy_dma_copy_descriptors`' check (`ndma_validate_pa_v3`).
    fn validate_descriptors(&mut self, piece: &[u8], qtype: u32) -> Result<(), Errno> {
        for d in piece.chunks_exact(16) {
            if qtype > 1 {
                self.log("descriptor copy to a COMPLETION ring refused");
                return Err(Errno::EPERM);
            }
            // TX buf_ptr and RX buf1_ptr are both bytes 8..16.
            let mut a = [0u8; 8];
            a.copy_from_slice(&d[8..16]);
            let addr = u64::from_le_bytes(a);
            if addr & HOST_BIT == HOST_BIT && !self.mem.chunk_at(addr).is_some_and(|h| h.host) {
                self.log(format!("invalid host memory({addr:#x}) in DMA descriptor"));
                return Err(Errno::EINVAL);
            }
        }
        Ok(())
    }

    /// DMA_DESCRIPTOR_COPYOUT (§1.6, [2.24] `ncdev_dma_descriptor_copyout`):
    /// count 0 → EINVAL; ring base and length from DRBP/DRL; `start +
    /// count > DRL` is -EFBIG as in [2.24];
    /// the ring must lie in a chunk. Host rings are read directly; device
    /// rings by H2T DMA — [2.24] quirk: from the ring base, ignoring
    /// `start_index`.
    fn descriptor_copyout(
        &mut self,
        a: &DmaDescriptorCopyout,
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        let (eng, qid, qt) = (a.eng_id.get(), a.qid.get(), a.queue_type.get());
        let (start, count) = (a.start_index.get(), a.count.get());
        if count == 0 || eng >= ENGINES || qid >= QUEUES {
            return Err(Errno::EINVAL);
        }
        let e = self.engine(eng)?;
        let q = self.regs.q;
        let base_reg = match qt {
            0 => e.m2s_q(qid as u8),
            1 => e.s2m_q(qid as u8),
            _ => return Err(Errno::EINVAL),
        };
        let rd = |d: &mut soc::Device, off: u64| d.read32(base_reg + off).map_err(|_| Errno::EIO);
        let lo = rd(&mut self.dev, q.drbp_low)?;
        let hi = rd(&mut self.dev, q.drbp_high)?;
        let len = rd(&mut self.dev, q.drl)?;
        if u64::from(start) + u64::from(count) > u64::from(len) {
            return Err(Errno::EFBIG);
        }
        let ring = u64::from(lo) | (u64::from(hi) << 32);
        let Some(mc) = self.mem.chunk_at(ring).cloned() else {
            return Err(Errno::EINVAL);
        };
        let bytes = 16 * u64::from(count);
        let mut buf = Vec::new();
        buf.try_reserve_exact(bytes as usize)
            .map_err(|_| Errno::ENOMEM)?;
        buf.resize(bytes as usize, 0);
        if mc.host {
            let src = ring + 16 * u64::from(start);
            self.dev.read_bytes(src, &mut buf).map_err(|_| Errno::EIO)?;
        } else {
            let bounce = self.bounce(mc.nc_id, bytes)?;
            let r = self
                .memcpy_sync(mc.nc_id, ring, bounce, bytes, true, true)
                .and_then(|()| {
                    self.dev
                        .read_bytes(bounce, &mut buf)
                        .map_err(|_| Errno::EIO)
                });
            self.mem.release_chunk(bounce);
            r?;
        }
        user.copy_to_user(a.buffer.get(), &buf)?;
        Ok(0)
    }

    fn sem_block(&self, nc: u32) -> Option<u64> {
        self.sem.blocks.get(nc as usize).copied().flatten()
    }

    fn sem_reg(&self, reg: &str, i: u32) -> Option<u64> {
        let (base, stride) = match reg {
            "SEM_READ" => self.sem.read,
            "SEM_SET" => self.sem.set,
            "SEM_INC" => self.sem.inc,
            "SEM_DEC" => self.sem.dec,
            "EVENT" => self.sem.event,
            _ => None,
        }?;
        Some(base + stride * u64::from(i))
    }

    /// SEMAPHORE_*: nc < 8 (else E2BIG), index < 256 (else EINVAL); READ
    /// returns the value register, WRITE stores to SET, INC/DEC add/sub
    /// `value` through their aliases (§1.6).
    fn semaphore(&mut self, def: &IoctlDef, a: &mut Semaphore) -> Result<(), Errno> {
        let (nc, i) = (a.nc_id.get(), a.semaphore_index.get());
        if nc as usize >= crate::mem::NCS {
            return Err(Errno::E2BIG);
        }
        if i >= SEMAPHORES {
            return Err(Errno::EINVAL);
        }
        let block = self.sem_block(nc).ok_or(Errno::ENODEV)?;
        let reg = match def.ioctl {
            Ioctl::SemaphoreRead => "SEM_READ",
            Ioctl::SemaphoreWrite => "SEM_SET",
            Ioctl::SemaphoreIncrement => "SEM_INC",
            _ => "SEM_DEC",
        };
        let addr = block + self.sem_reg(reg, i).ok_or(Errno::ENODEV)?;
        if def.ioctl == Ioctl::SemaphoreRead {
            a.value.set(self.dev.read32(addr).map_err(|_| Errno::EIO)?);
        } else {
            self.dev
                .write32(addr, a.value.get())
                .map_err(|_| Errno::EIO)?;
        }
        Ok(())
    }

    /// EVENT_GET/SET: [2.24] checks `index > 256` (so 256 passes) and does
    /// not validate nc_id; an access the bus refuses is EIO here.
    fn event_op(&mut self, set: bool, a: &mut Event) -> Result<(), Errno> {
        let (nc, i) = (a.nc_id.get(), a.event_index.get());
        if i > SEMAPHORES {
            return Err(Errno::EINVAL);
        }
        let Some(block) = self.sem_block(nc) else {
            self.log(format!("EVENT on unvalidated nc_id {nc}: no such core"));
            return Err(Errno::EIO);
        };
        let e0 = self.sem_reg("EVENT", 0).ok_or(Errno::ENODEV)?;
        let addr = block + e0 + 4 * u64::from(i);
        let r = if set {
            self.dev.write32(addr, a.value.get()).map(|_| ())
        } else {
            self.dev.read32(addr).map(|v| a.value.set(v))
        };
        r.map_err(|_| {
            self.log(format!(
                "EVENT index {i} of nc {nc} is outside the event block"
            ));
            Errno::EIO
        })
    }
}

/// Where the synthetic kernel `mem_chunk` pointers live (extended-info
/// quirk).
pub const KERNEL_CHUNK_BASE: u64 = 0xffff_8880_0000_0000;

/// Legacy MEM_ALLOC and MEM_ALLOC_V2 always count as UNKNOWN_* (§1.5).
fn unknown(host: bool) -> u32 {
    if host {
        MemAllocCategory::UnknownHost.raw()
    } else {
        MemAllocCategory::UnknownDevice.raw()
    }
}

/// Zero-copy pairs over a pinned run: [2.24] merges at most 2 contiguous
/// pages per descriptor, each ≤ 64 KiB, page-boundary cut.
fn zc_pairs(pinned: u64, dev: u64, n: u64, to_dev: bool) -> Vec<Pair> {
    let mut out = Vec::new();
    let mut done = 0;
    while done < n {
        let here = pinned + done;
        let to_boundary = 2 * HOST_PAGE_BYTES - here % HOST_PAGE_BYTES;
        let len = (n - done).min(to_boundary).min(MAX_DMA_DESC_BYTES);
        let (src, dst) = if to_dev {
            (here, dev + done)
        } else {
            (dev + done, here)
        };
        out.push(Pair {
            src,
            dst,
            len: len as u32,
        });
        done += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zerocopy_merges_at_most_two_pages() {
        // Page-aligned 5 pages: 8 KiB, 8 KiB, 4 KiB.
        let p = zc_pairs(0x10_0000, 0x2000_0000, 5 * 4096, true);
        let lens: Vec<u32> = p.iter().map(|x| x.len).collect();
        assert_eq!(lens, [8192, 8192, 4096]);
        // Starting mid-page: the first run ends at the second page boundary.
        let p = zc_pairs(0x10_0800, 0x2000_0000, 10_000, false);
        assert_eq!(p[0].len, 8192 - 0x800);
        assert_eq!(
            p[0].dst, 0x10_0800,
            "device→host: the pinned page is the destination"
        );
    }
}
