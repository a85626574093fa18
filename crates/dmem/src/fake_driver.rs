//! TEST ONLY: a small deterministic stand-in for the kernel driver, enough
//! to exercise the dmem/NDL paths. It is not the driver model (that is the
//! `kdriver` crate); it has no DMA engines, no time and no pools beyond a
//! first-fit allocator per HBM channel plus one for host memory.
//!
//! * Memory: each chunk owns its bytes; device PAs are `channel << 36 |
//!   offset`, host PAs carry bit 46; sizes round up to 4 KiB.
//! * Async copies: a copy with `pwait_handle` 0 runs at once (SYNC);
//!   otherwise it is *queued* in the next slot (NONE→1, 1→2, 2→1) and the
//!   previous slot's copy is run before the ioctl returns, as the driver
//!   waits for the previous transfer (docs/references/driver.md §4.6). A queued copy
//!   reads its source only when it runs, so a runtime that reuses a
//!   bounce half too early reads the wrong bytes. A slot still queued when
//!   it is reused (nobody waited for it) runs first, as the driver drains
//!   a context before reuse.
//! * Faults: ENOMEM above the capacity, EINVAL for `align != 0` when
//!   `reject_align` (an old driver), and the Nth MEM_COPY_ASYNC64 failing
//!   with a chosen errno.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ioctl_abi::args::{
    MemAllocV2MemType, MemAllocV2MemType64, MemBufCopy64, MemBufCopy64Zc, MemBufCopy64ZcBatches,
    MemCopyAsync64, MemCopyAsyncWait, MemFree, MemGetPa, MemcpyBatch, TensorBatchOp,
};
use ioctl_abi::{Errno, IoctlArg, cmd, parse_cmd};
use ioctl_bus::{Driver, UserMemory};
use zerocopy::FromBytes;

pub const PAGE: u64 = 4096;
pub const HOST_BIT: u64 = 1 << 46;
const CHANNEL_SHIFT: u32 = 36;

#[derive(Clone, Debug)]
pub struct FakeConfig {
    /// Bytes per HBM channel.
    pub device_capacity_bytes: u64,
    /// Bytes of host memory.
    pub host_capacity_bytes: u64,
    /// Reject `align != 0` with EINVAL (a driver without aligned alloc).
    pub reject_align: bool,
    /// Fail the Nth (1-based) MEM_COPY_ASYNC64 with this errno.
    pub fail_copy_async: Option<(usize, Errno)>,
    /// Fail every MEM_ALLOC with this errno.
    pub fail_alloc: Option<Errno>,
    /// Fail MEM_ALLOC_V2MT64 with this errno before anything else (a
    /// driver without the 64-bit request); MEM_ALLOC_V2MT still works.
    pub reject_alloc64: Option<Errno>,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            device_capacity_bytes: 64 << 20,
            host_capacity_bytes: 64 << 20,
            reject_align: false,
            fail_copy_async: None,
            fail_alloc: None,
            reject_alloc64: None,
        }
    }
}

/// A live allocation (some fields are only for debugging output).
#[allow(dead_code)]
#[derive(Clone, Debug)]
pub struct Chunk {
    pub handle: u64,
    pub size: u64,
    pub host: bool,
    pub category: u32,
    pub nc: u32,
    pub channel: u32,
    pub data: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocCall {
    pub size: u64,
    pub align: u64,
    pub host: bool,
    pub channel: u32,
    pub nc: u32,
    pub category: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyAsyncCall {
    pub src: u64,
    pub dst: u64,
    pub src_offset: u64,
    pub dst_offset: u64,
    pub size: u64,
    pub prefetch: u64,
    pub pwait: i32,
    /// The returned handle (None when the call failed).
    pub wait: Option<i32>,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    src: u64,
    dst: u64,
    src_offset: u64,
    dst_offset: u64,
    size: u64,
}

/// One MEM_BUF_ZEROCOPY64_BATCHES call: the argument, and each batch
/// record with its ops.
pub type BatchCall = (
    MemBufCopy64ZcBatches,
    Vec<(MemcpyBatch, Vec<TensorBatchOp>)>,
);

#[derive(Debug, Default)]
pub struct FakeState {
    pub cfg: FakeConfig,
    /// Live chunks by PA.
    pub chunks: BTreeMap<u64, Chunk>,
    handles: BTreeMap<u64, u64>,
    next_handle: u64,
    /// Every handle ever issued → how many times it was freed.
    pub free_counts: BTreeMap<u64, u32>,
    /// MEM_FREE of handles that were not live.
    pub bad_frees: Vec<u64>,
    /// Every request number, in order.
    pub requests: Vec<u32>,
    pub allocs: Vec<AllocCall>,
    pub copies: Vec<CopyAsyncCall>,
    /// Every MEM_BUF_ZEROCOPY64 argument, in order.
    pub zerocopy_args: Vec<MemBufCopy64Zc>,
    /// Every MEM_BUF_ZEROCOPY64_BATCHES argument with the batch records
    /// and their ops read from user memory, in order.
    pub batch_args: Vec<BatchCall>,
    /// MEM_COPY_ASYNC_WAIT handles, in order.
    pub waits: Vec<i32>,
    pending: [Option<Pending>; 3],
}

impl FakeState {
    pub fn count(&self, request: u32) -> usize {
        self.requests.iter().filter(|&&r| r == request).count()
    }

    pub fn chunk_of_handle(&self, handle: u64) -> Option<&Chunk> {
        self.chunks.get(self.handles.get(&handle)?)
    }

    fn region(&self, host: bool, channel: u32) -> (u64, u64) {
        if host {
            (HOST_BIT, self.cfg.host_capacity_bytes)
        } else {
            (
                u64::from(channel) << CHANNEL_SHIFT,
                self.cfg.device_capacity_bytes,
            )
        }
    }

    /// First fit in `[base, base + cap)` with `align` (≥ PAGE).
    fn first_fit(&self, base: u64, cap: u64, size: u64, align: u64) -> Option<u64> {
        let end = base + cap;
        let mut cursor = base;
        for (&pa, c) in self.chunks.range(base..end) {
            let at = cursor.next_multiple_of(align);
            if at + size <= pa {
                return Some(at);
            }
            cursor = cursor.max(pa + c.size);
        }
        let at = cursor.next_multiple_of(align);
        (at + size <= end).then_some(at)
    }

    fn chunk_mut_by_handle(&mut self, handle: u64) -> Result<&mut Chunk, Errno> {
        let pa = *self.handles.get(&handle).ok_or(Errno::EINVAL)?;
        self.chunks.get_mut(&pa).ok_or(Errno::EINVAL)
    }

    fn range(&self, handle: u64, offset: u64, size: u64) -> Result<(u64, usize, usize), Errno> {
        let pa = *self.handles.get(&handle).ok_or(Errno::EINVAL)?;
        let c = self.chunks.get(&pa).ok_or(Errno::EINVAL)?;
        let end = offset.checked_add(size).ok_or(Errno::EINVAL)?;
        if end > c.size {
            return Err(Errno::EINVAL);
        }
        Ok((pa, offset as usize, end as usize))
    }

    fn read(&self, handle: u64, offset: u64, size: u64) -> Result<Vec<u8>, Errno> {
        let (pa, a, b) = self.range(handle, offset, size)?;
        Ok(self.chunks[&pa].data[a..b].to_vec())
    }

    fn write(&mut self, handle: u64, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let (_, a, b) = self.range(handle, offset, bytes.len() as u64)?;
        self.chunk_mut_by_handle(handle)?.data[a..b].copy_from_slice(bytes);
        Ok(())
    }

    fn run(&mut self, p: Pending) -> Result<(), Errno> {
        let bytes = self.read(p.src, p.src_offset, p.size)?;
        self.write(p.dst, p.dst_offset, &bytes)
    }

    fn alloc(&mut self, a: &MemAllocV2MemType64, user: &mut dyn UserMemory) -> Result<i64, Errno> {
        let call = AllocCall {
            size: a.size.get(),
            align: a.align.get(),
            host: a.host_memory.get() != 0,
            channel: a.dram_channel.get(),
            nc: a.nc_id.get(),
            category: a.mem_type.get(),
        };
        self.allocs.push(call);
        if let Some(e) = self.cfg.fail_alloc {
            return Err(e);
        }
        if call.size == 0 || call.channel >= 4 || call.nc >= 8 {
            return Err(Errno::EINVAL);
        }
        if call.align != 0 && (self.cfg.reject_align || call.host) {
            return Err(Errno::EINVAL);
        }
        let size = call.size.next_multiple_of(PAGE);
        let align = call.align.max(PAGE);
        let (base, cap) = self.region(call.host, call.channel);
        let pa = self
            .first_fit(base, cap, size, align)
            .ok_or(Errno::ENOMEM)?;
        self.next_handle += 1;
        let handle = self.next_handle;
        user.copy_to_user(a.mem_handle.get(), &handle.to_le_bytes())?;
        self.handles.insert(handle, pa);
        self.free_counts.insert(handle, 0);
        self.chunks.insert(
            pa,
            Chunk {
                handle,
                size,
                host: call.host,
                category: call.category,
                nc: call.nc,
                channel: call.channel,
                data: vec![0; size as usize],
            },
        );
        Ok(0)
    }

    fn copy_async(&mut self, a: &mut MemCopyAsync64) -> Result<i64, Errno> {
        let mut call = CopyAsyncCall {
            src: a.src_mem_handle.get(),
            dst: a.dst_mem_handle.get(),
            src_offset: a.src_offset.get(),
            dst_offset: a.dst_offset.get(),
            size: a.size.get(),
            prefetch: a.host_prefetch_addr.get(),
            pwait: a.pwait_handle.get().cast_signed(),
            wait: None,
        };
        let nth = self.copies.len() + 1;
        self.copies.push(call);
        if let Some((n, e)) = self.cfg.fail_copy_async
            && n == nth
        {
            return Err(e);
        }
        let p = Pending {
            src: call.src,
            dst: call.dst,
            src_offset: call.src_offset,
            dst_offset: call.dst_offset,
            size: call.size,
        };
        // Validate both ranges up front.
        self.range(p.src, p.src_offset, p.size)?;
        self.range(p.dst, p.dst_offset, p.size)?;
        let new: i32 = match call.pwait {
            0 => {
                self.run(p)?;
                0
            }
            -1 | 2 => 1,
            1 => 2,
            _ => return Err(Errno::EINVAL),
        };
        if new != 0 {
            // A slot still in flight (its owner never waited) is drained
            // before reuse, as the driver does: it reads its source now.
            if let Some(stale) = self.pending[new as usize].take() {
                self.run(stale)?;
            }
            self.pending[new as usize] = Some(p);
            if call.pwait > 0
                && let Some(prev) = self.pending[call.pwait as usize].take()
            {
                self.run(prev)?;
            }
        }
        a.wait_handle.set(new.cast_unsigned());
        call.wait = Some(new);
        if let Some(last) = self.copies.last_mut() {
            *last = call;
        }
        Ok(0)
    }

    fn ioctl_inner(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        self.requests.push(request);
        match request {
            cmd::MEM_ALLOC_V2MT64 => {
                if let Some(e) = self.cfg.reject_alloc64 {
                    return Err(e);
                }
                let (_, a) = parse_cmd::<MemAllocV2MemType64>(request, arg)?;
                self.alloc(&a, user)
            }
            cmd::MEM_ALLOC_V2MT => {
                let (_, a) = parse_cmd::<MemAllocV2MemType>(request, arg)?;
                let mut wide = MemAllocV2MemType64::default();
                wide.size.set(a.size.get());
                wide.align.set(a.align.get());
                wide.host_memory.set(a.host_memory.get());
                wide.dram_channel.set(a.dram_channel.get());
                wide.dram_region.set(a.dram_region.get());
                wide.nc_id.set(a.nc_id.get());
                wide.mem_type.set(a.mem_type.get());
                wide.mem_handle.set(a.mem_handle.get());
                self.alloc(&wide, user)
            }
            cmd::MEM_GET_PA => {
                let (_, a) = parse_cmd::<MemGetPa>(request, arg)?;
                let pa = *self.handles.get(&a.mem_handle.get()).ok_or(Errno::EINVAL)?;
                user.copy_to_user(a.pa.get(), &pa.to_le_bytes())?;
                Ok(0)
            }
            cmd::MEM_FREE => {
                let (_, a) = parse_cmd::<MemFree>(request, arg)?;
                let h = a.mem_handle.get();
                match self.handles.remove(&h) {
                    Some(pa) => {
                        self.chunks.remove(&pa);
                        *self.free_counts.entry(h).or_insert(0) += 1;
                        Ok(0)
                    }
                    None => {
                        self.bad_frees.push(h);
                        Err(Errno::EINVAL)
                    }
                }
            }
            cmd::MEM_COPY_ASYNC64 => {
                let (_, mut a) = parse_cmd::<MemCopyAsync64>(request, arg)?;
                let rc = self.copy_async(&mut a)?;
                write_back(arg, &a);
                Ok(rc)
            }
            cmd::MEM_COPY_ASYNC_WAIT => {
                let (_, a) = parse_cmd::<MemCopyAsyncWait>(request, arg)?;
                let h = a.pwait_handle.get().cast_signed();
                self.waits.push(h);
                if !(1..=2).contains(&h) {
                    return Err(Errno::EINVAL);
                }
                if let Some(p) = self.pending[h as usize].take() {
                    self.run(p)?;
                }
                Ok(0)
            }
            cmd::MEM_BUF_COPY64 => {
                let (_, a) = parse_cmd::<MemBufCopy64>(request, arg)?;
                self.buf_copy(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    a.offset.get(),
                    a.size.get(),
                    a.copy_to_mem_handle.get() != 0,
                    user,
                )
            }
            cmd::MEM_BUF_ZEROCOPY64 => {
                let (_, a) = parse_cmd::<MemBufCopy64Zc>(request, arg)?;
                self.zerocopy_args.push(a);
                self.buf_copy(
                    a.mem_handle.get(),
                    a.buffer.get(),
                    a.offset.get(),
                    a.size.get(),
                    a.is_copy_to_device.get() != 0,
                    user,
                )
            }
            cmd::MEM_BUF_ZEROCOPY64_BATCHES => {
                let (_, a) = parse_cmd::<MemBufCopy64ZcBatches>(request, arg)?;
                let n = a.num_batches.get() as usize;
                let mut raw = vec![0u8; n * MemcpyBatch::SIZE];
                user.copy_from_user(a.batches_ptr.get(), &mut raw)?;
                let to_dev = a.is_copy_to_device.get() != 0;
                self.batch_args.push((a, Vec::new()));
                for rec in raw.chunks_exact(MemcpyBatch::SIZE) {
                    let b = MemcpyBatch::read_from_bytes(rec).map_err(|_| Errno::EINVAL)?;
                    let m = b.num_ops.get() as usize;
                    let mut ops = vec![0u8; m * TensorBatchOp::SIZE];
                    user.copy_from_user(b.ops_ptr.get(), &mut ops)?;
                    let parsed: Vec<TensorBatchOp> = ops
                        .chunks_exact(TensorBatchOp::SIZE)
                        .filter_map(|op| TensorBatchOp::read_from_bytes(op).ok())
                        .collect();
                    if let Some(last) = self.batch_args.last_mut() {
                        last.1.push((b, parsed));
                    }
                    for op in ops.chunks_exact(TensorBatchOp::SIZE) {
                        let op = TensorBatchOp::read_from_bytes(op).map_err(|_| Errno::EINVAL)?;
                        self.buf_copy(
                            b.mem_handle.get(),
                            op.buffer.get(),
                            b.mem_handle_offset.get() + op.offset.get(),
                            op.size.get(),
                            to_dev,
                            user,
                        )?;
                    }
                }
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn buf_copy(
        &mut self,
        handle: u64,
        buffer: u64,
        offset: u64,
        size: u64,
        to_mem: bool,
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        if to_mem {
            let mut bytes = vec![0u8; size as usize];
            user.copy_from_user(buffer, &mut bytes)?;
            self.write(handle, offset, &bytes)?;
        } else {
            let bytes = self.read(handle, offset, size)?;
            user.copy_to_user(buffer, &bytes)?;
        }
        Ok(0)
    }

    fn locate(&mut self, offset: u64, len: usize) -> Result<(&mut Chunk, usize), Errno> {
        let (&pa, c) = self
            .chunks
            .range_mut(..=offset)
            .next_back()
            .ok_or(Errno::EFAULT)?;
        let at = (offset - pa) as usize;
        if at + len > c.data.len() {
            return Err(Errno::EFAULT);
        }
        Ok((c, at))
    }
}

fn write_back<T: IoctlArg>(arg: &mut [u8], v: &T) {
    let b = v.as_bytes();
    arg[..b.len()].copy_from_slice(b);
}

/// The driver handed to the transport; the state is shared with the test.
#[derive(Debug)]
pub struct FakeDriver {
    pub state: Rc<RefCell<FakeState>>,
}

impl FakeDriver {
    pub fn new(cfg: FakeConfig) -> (Self, Rc<RefCell<FakeState>>) {
        let state = Rc::new(RefCell::new(FakeState {
            cfg,
            ..FakeState::default()
        }));
        (
            Self {
                state: Rc::clone(&state),
            },
            state,
        )
    }
}

impl Driver for FakeDriver {
    fn ioctl(
        &mut self,
        request: u32,
        arg: &mut [u8],
        user: &mut dyn UserMemory,
    ) -> Result<i64, Errno> {
        self.state.borrow_mut().ioctl_inner(request, arg, user)
    }

    fn mmap_read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let mut s = self.state.borrow_mut();
        let (c, at) = s.locate(offset, buf.len())?;
        buf.copy_from_slice(&c.data[at..at + buf.len()]);
        Ok(())
    }

    fn mmap_write(&mut self, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let mut s = self.state.borrow_mut();
        let (c, at) = s.locate(offset, bytes.len())?;
        c.data[at..at + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
}
