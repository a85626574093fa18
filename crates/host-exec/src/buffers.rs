//! Host operations whose bytes live in the caller's memory rather than in
//! a trace's `byte=`/`pattern=`/`file=` source: the Python package's
//! runtime (docs/python.md §Host runtime). They run the same runtime calls
//! (`dmem_buf_copyin`, `dmem_buf_batch_copyin`, …) over the same ioctl bus
//! and driver as the trace's `copyin`/`copyout`/`batch_copy`; only the user
//! buffer differs: ordinary bytes, copied once into the simulated process's
//! address space (`ioctl_bus::UserSpace`), and handed back without another
//! copy on the way out.

use dmem::{BatchOp, NrtStatus, TensorBatch};
use serde::Serialize;

use crate::HostSession;

/// Device memory in use, as the runtime's memory logger and the driver
/// count it (the numbers the trace's `mem_stats` prints).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemStats {
    /// Bytes allocated per HBM channel (0..4).
    pub hbm_channel_bytes: Vec<u64>,
    /// Bytes allocated per NeuronCore, for the NCs that hold any.
    pub nc_bytes: std::collections::BTreeMap<u32, u64>,
    /// The driver's device-memory accounting.
    pub driver_device_mem_bytes: u64,
    /// The driver's host-memory accounting.
    pub driver_host_mem_bytes: u64,
}

/// One tensor of a host-memory batch copy in: (tensor name, byte offset
/// in the tensor, bytes).
pub type BatchIn<'a> = (&'a str, u64, &'a [u8]);

impl HostSession {
    /// The NRT status of the last failed runtime call of the last host
    /// operation (`None` when it succeeded or failed before the runtime).
    #[must_use]
    pub fn last_status(&self) -> Option<NrtStatus> {
        self.last_status
    }

    /// Starts a host operation: no status yet, the session is used.
    fn begin(&mut self) {
        self.last_status = None;
        self.used = true;
        self.op_start = crate::HostRuntime::device(self).now().0;
    }

    /// Ends a host operation: the runtime's and the driver's events go to
    /// the driver log (for a timeline); their text is dropped.
    fn end<T>(&mut self, r: Result<T, String>) -> Result<T, String> {
        self.drain_event_lines();
        r
    }

    /// Runs one host operation whose data needs no trace file (`alloc`,
    /// `free`, `allocator`, `acquire`, …) as the trace executor runs it;
    /// returns its text.
    ///
    /// # Errors
    ///
    /// The operation's error text; a runtime status is then in
    /// [`HostSession::last_status`]. An operation that reads or writes a
    /// file is refused (pass bytes with [`HostSession::copyin_bytes`]).
    pub fn host_call(&mut self, op: &trace_format::HostOp) -> Result<String, String> {
        match crate::HostRuntime::host_op(self, op, None, &mut NoFiles)? {
            soc::exec::HostOutcome::Done(t) | soc::exec::HostOutcome::Skipped(t) => Ok(t),
            soc::exec::HostOutcome::Checked { text, held } => {
                if held {
                    Ok(text)
                } else {
                    Err(text)
                }
            }
        }
    }

    /// Copies `data` into tensor `name` at byte `offset`
    /// (`dmem_buf_copyin`). The bytes are copied once, into a user buffer.
    ///
    /// # Errors
    ///
    /// No such live tensor; the runtime's status (then in
    /// [`HostSession::last_status`]).
    pub fn copyin_bytes(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), String> {
        self.begin();
        let r = self.copyin_inner(name, offset, data);
        self.end(r)
    }

    fn copyin_inner(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), String> {
        let t = self.tensor(name)?;
        let len = data.len() as u64;
        let buf = self.dmem.user_mut().alloc_with(data);
        let r = self.dmem.dmem_buf_copyin(t.id, buf, offset, len);
        self.dmem.user_mut().free(buf);
        r.map_err(|s| self.fail(s, format!("copyin {name}: {s}")))
    }

    /// Copies `len` bytes of tensor `name` from byte `offset` out to the
    /// host (`dmem_buf_copyout`) and returns them.
    ///
    /// # Errors
    ///
    /// No such live tensor; no host memory for `len` bytes; the runtime's
    /// status (then in [`HostSession::last_status`]).
    pub fn copyout_bytes(&mut self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        self.begin();
        let r = self.copyout_inner(name, offset, len);
        self.end(r)
    }

    /// In timing-only mode, why the bytes a copy-out of `len` bytes at
    /// `offset` of tensor `name` returns are not the device's (its copy
    /// moved no payload, or it reads bytes a skipped copy left stale);
    /// `None` when they are (docs/user-guide.md §11).
    ///
    /// # Errors
    ///
    /// `name` is not a live tensor.
    pub fn copyout_stale(
        &mut self,
        name: &str,
        offset: u64,
        len: u64,
    ) -> Result<Option<String>, String> {
        let t = self.tensor(name)?;
        Ok(self.copy_out_stale(t.id, offset, len))
    }

    fn copyout_inner(&mut self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        let t = self.tensor(name)?;
        let buf = self
            .dmem
            .user_mut()
            .try_alloc(len)
            .map_err(|e| format!("copyout {name}: no host memory for {len} bytes ({e:?})"))?;
        let r = self.dmem.dmem_buf_copyout(t.id, buf, offset, len);
        let bytes = self.dmem.user_mut().take_bytes(buf);
        r.map_err(|s| self.fail(s, format!("copyout {name}: {s}")))?;
        let mut bytes = bytes.ok_or("internal: the copy-out buffer is gone")?;
        bytes.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        Ok(bytes)
    }

    /// Copies several host buffers into tensors in one batch ioctl
    /// (`dmem_buf_batch_copyin`).
    ///
    /// # Errors
    ///
    /// A tensor that is not live (nothing is copied); the runtime's status.
    pub fn batch_copyin_bytes(&mut self, items: &[BatchIn<'_>]) -> Result<(), String> {
        self.begin();
        let r = self.batch_in_inner(items);
        self.end(r)
    }

    fn batch_in_inner(&mut self, items: &[BatchIn<'_>]) -> Result<(), String> {
        let ids = items
            .iter()
            .map(|(n, _, _)| self.tensor(n).map(|t| t.id))
            .collect::<Result<Vec<_>, _>>()?;
        let mut bufs = Vec::with_capacity(items.len());
        let mut batches = Vec::with_capacity(items.len());
        for ((_, offset, data), id) in items.iter().zip(ids) {
            let buf = self.dmem.user_mut().alloc_with(data);
            bufs.push(buf);
            batches.push(TensorBatch {
                mem: id,
                tensor_offset_bytes: 0,
                ops: vec![BatchOp {
                    offset_bytes: *offset,
                    size_bytes: data.len() as u64,
                    buffer: buf,
                }],
            });
        }
        let r = self.dmem.dmem_buf_batch_copyin(&batches);
        for buf in bufs {
            self.dmem.user_mut().free(buf);
        }
        r.map_err(|s| self.fail(s, format!("batch_copy in: {s}")))
    }

    /// Copies `(tensor, offset, len)` ranges out to the host in one batch
    /// ioctl (`dmem_buf_batch_copyout`); the bytes of each, in order.
    ///
    /// # Errors
    ///
    /// A tensor that is not live (nothing is copied); no host memory; the
    /// runtime's status.
    pub fn batch_copyout_bytes(
        &mut self,
        items: &[(&str, u64, u64)],
    ) -> Result<Vec<Vec<u8>>, String> {
        self.begin();
        let r = self.batch_out_inner(items);
        self.end(r)
    }

    fn batch_out_inner(&mut self, items: &[(&str, u64, u64)]) -> Result<Vec<Vec<u8>>, String> {
        let ids = items
            .iter()
            .map(|(n, _, _)| self.tensor(n).map(|t| t.id))
            .collect::<Result<Vec<_>, _>>()?;
        let mut bufs = Vec::with_capacity(items.len());
        let mut batches = Vec::with_capacity(items.len());
        for ((name, offset, len), id) in items.iter().zip(ids) {
            let buf = match self.dmem.user_mut().try_alloc(*len) {
                Ok(b) => b,
                Err(e) => {
                    for b in bufs {
                        self.dmem.user_mut().free(b);
                    }
                    return Err(format!(
                        "batch_copy out {name}: no host memory for {len} bytes ({e:?})"
                    ));
                }
            };
            bufs.push(buf);
            batches.push(TensorBatch {
                mem: id,
                tensor_offset_bytes: 0,
                ops: vec![BatchOp {
                    offset_bytes: *offset,
                    size_bytes: *len,
                    buffer: buf,
                }],
            });
        }
        let r = self.dmem.dmem_buf_batch_copyout(&batches);
        let mut out = Vec::with_capacity(items.len());
        for (buf, (_, _, len)) in bufs.into_iter().zip(items) {
            let mut b = self.dmem.user_mut().take_bytes(buf).unwrap_or_default();
            b.truncate(usize::try_from(*len).unwrap_or(usize::MAX));
            out.push(b);
        }
        r.map_err(|s| self.fail(s, format!("batch_copy out: {s}")))?;
        Ok(out)
    }

    /// Device memory in use now.
    pub fn mem_stats(&mut self) -> MemStats {
        let logger = self.dmem.logger();
        let hbm_channel_bytes = (0..4)
            .map(|c| logger.memory_usage(c).unwrap_or(0))
            .collect();
        let nc_bytes = (0..8)
            .filter_map(|nc| {
                let v = logger.memory_usage_nc(nc, dmem::USAGE_TYPES).unwrap_or(0);
                (v > 0).then_some((nc, v))
            })
            .collect();
        let (driver_device_mem_bytes, driver_host_mem_bytes) = self
            .driver()
            .map(|d| {
                let a = d.memory().accounting();
                (a.device_mem_bytes, a.host_mem_bytes)
            })
            .unwrap_or_default();
        MemStats {
            hbm_channel_bytes,
            nc_bytes,
            driver_device_mem_bytes,
            driver_host_mem_bytes,
        }
    }

    /// A live tensor's device address, requested size and the bytes the
    /// runtime allocated for it.
    #[must_use]
    pub fn tensor_info(&self, name: &str) -> Option<(u64, u64, u64)> {
        let t = self.tensors.get(name).filter(|t| !t.freed)?;
        let d = self.dmem.get(t.id)?;
        Some((d.pa + d.align_offset_bytes, t.size, d.allocated_size_bytes))
    }
}

/// Trace files for a caller without any: every access is refused.
struct NoFiles;

impl soc::exec::TraceFiles for NoFiles {
    fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other(format!(
            "{path}: no trace files here (pass the bytes instead)"
        )))
    }
    fn write(&mut self, path: &str, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other(format!(
            "{path}: no trace files here (the bytes are returned instead)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> HostSession {
        let mut dev = soc::Device::trn2().expect("device");
        dev.boot_firmware().expect("boot");
        HostSession::new(dev).expect("session")
    }

    fn alloc(s: &mut HostSession, name: &str, size: u64) {
        s.host_call(&trace_format::HostOp::Alloc {
            name: name.into(),
            size,
            host: false,
            channel: None,
            nc: Some(0),
            usage: "tensor".into(),
            align: 0,
            hint: None,
            allocator: None,
        })
        .expect("alloc");
    }

    #[test]
    fn bytes_round_trip_through_the_runtime() {
        let mut s = session();
        alloc(&mut s, "a", 4096);
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        s.copyin_bytes("a", 0, &data).expect("copyin");
        let (pa, size, _) = s.tensor_info("a").expect("live");
        assert_eq!(size, 4096);
        let mut dev_bytes = vec![0; 4096];
        s.device_mut().read_bytes(pa, &mut dev_bytes).expect("read");
        assert_eq!(dev_bytes, data, "the copy landed at the tensor");
        assert_eq!(s.copyout_bytes("a", 100, 3).expect("out"), &data[100..103]);
        assert!(s.used());
    }

    #[test]
    fn batches_and_statuses() {
        let mut s = session();
        alloc(&mut s, "a", 64);
        alloc(&mut s, "b", 64);
        s.batch_copyin_bytes(&[("a", 0, &[1; 64]), ("b", 8, &[2; 8])])
            .expect("batch in");
        let out = s
            .batch_copyout_bytes(&[("a", 0, 4), ("b", 6, 4)])
            .expect("batch out");
        assert_eq!(out, vec![vec![1; 4], vec![0, 0, 2, 2]]);
        // Past the tensor's end: the runtime's status, kept.
        let e = s
            .copyin_bytes("a", 0, &[0; 1 << 20])
            .expect_err("past the end");
        assert!(e.contains("NRT_"), "{e}");
        assert!(s.last_status().is_some());
        // Not a tensor: refused before the runtime, no status.
        assert!(s.copyout_bytes("zz", 0, 1).is_err());
        assert_eq!(s.last_status(), None);
    }

    #[test]
    fn mem_stats_count_allocations() {
        let mut s = session();
        assert_eq!(s.mem_stats().hbm_channel_bytes, vec![0; 4]);
        alloc(&mut s, "a", 4096);
        let m = s.mem_stats();
        assert_eq!(m.hbm_channel_bytes, vec![4096, 0, 0, 0]);
        assert_eq!(m.nc_bytes.get(&0), Some(&4096));
        assert!(
            s.mem_stats_text()
                .starts_with("mem_stats: hbm0=4096 hbm1=0")
        );
        s.host_call(&trace_format::HostOp::Free { name: "a".into() })
            .expect("free");
        assert_eq!(s.mem_stats().hbm_channel_bytes, vec![0; 4]);
    }
}
