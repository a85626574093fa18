//! `_native.Runtime`: the host runtime of a device (docs/python.md §Host
//! runtime). Every call is the trace's host operation on the device's
//! `host_exec::HostSession` (the runtime over the ioctl bus over the
//! kernel-driver model); arrays reach it as bytes in memory, copied once.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use trace_format::HostOp;

use crate::device::Device;
use crate::errors::{bad, nrt};

/// The host runtime of one device (the native half of
/// `neuron_sim.Runtime`).
#[pyclass(unsendable, module = "neuron_sim._native")]
pub struct Runtime {
    dev: Py<Device>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    pub(crate) fn new(dev: Py<Device>) -> Self {
        Self { dev }
    }
}

/// A contiguous byte view of a uint8 array.
fn bytes_of<'a>(a: &'a PyReadonlyArray1<'_, u8>) -> PyResult<&'a [u8]> {
    a.as_slice()
        .map_err(|_| bad("data must be a contiguous uint8 array"))
}

/// The error of a failed session call, typed by whether the runtime
/// returned a status.
fn fail(py: Python<'_>, d: &Device, msg: String) -> PyErr {
    nrt(py, d.session.last_status().map(|s| s.name()), msg)
}

#[pymethods]
impl Runtime {
    /// `dmem_alloc` (or `dmem_alloc_aligned` when `align` > 0) of a tensor
    /// called `name`; returns (device address, allocated bytes).
    #[pyo3(signature = (name, size, usage, nc, align, host, channel))]
    #[allow(clippy::too_many_arguments)]
    fn alloc(
        &self,
        py: Python<'_>,
        name: String,
        size: u64,
        usage: String,
        nc: u32,
        align: u64,
        host: bool,
        channel: Option<u32>,
    ) -> PyResult<(u64, u64)> {
        // The argument rules of the trace's `alloc` (docs/trace-format.md
        // §5.4): bad input is a ValueError, not a runtime status.
        if size == 0 {
            return Err(bad("alloc: size must be greater than 0"));
        }
        if align != 0 && !align.is_power_of_two() {
            return Err(bad(format!(
                "alloc: align must be a power of two (or 0 for none), found {align}"
            )));
        }
        if nc > 7 {
            return Err(bad(format!("alloc: nc must be at most 7, found {nc}")));
        }
        if let Some(c) = channel.filter(|c| *c > 3) {
            return Err(bad(format!("alloc: channel must be at most 3, found {c}")));
        }
        let mut d = self.dev.borrow_mut(py);
        let op = HostOp::Alloc {
            name: name.clone(),
            size,
            host,
            channel,
            nc: Some(nc),
            usage,
            align,
            hint: None,
            allocator: None,
        };
        d.session.host_call(&op).map_err(|m| fail(py, &d, m))?;
        let (pa, _, allocated) = d
            .session
            .tensor_info(&name)
            .ok_or_else(|| bad(format!("internal: tensor `{name}` vanished")))?;
        Ok((pa, allocated))
    }

    /// `dmem_free` of tensor `name`; returns the runtime's text.
    fn free(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let mut d = self.dev.borrow_mut(py);
        d.session
            .host_call(&HostOp::Free { name })
            .map_err(|m| fail(py, &d, m))
    }

    /// `dmem_buf_copyin` of the bytes of `data` at `offset`.
    fn copyin(
        &self,
        py: Python<'_>,
        name: &str,
        offset: u64,
        data: PyReadonlyArray1<'_, u8>,
    ) -> PyResult<()> {
        let bytes = bytes_of(&data)?;
        let mut d = self.dev.borrow_mut(py);
        d.session
            .copyin_bytes(name, offset, bytes)
            .map_err(|m| fail(py, &d, m))?;
        d.keep_events();
        Ok(())
    }

    /// `dmem_buf_copyout` of `len` bytes at `offset`, as a uint8 array.
    fn copyout<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        offset: u64,
        len: u64,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let mut d = self.dev.borrow_mut(py);
        let bytes = d
            .session
            .copyout_bytes(name, offset, len)
            .map_err(|m| fail(py, &d, m))?;
        d.keep_events();
        // Timing-only: bytes no copy moved are not the device's; say so
        // (a RuntimeWarning), as `run` skips such a check.
        if let Ok(Some(why)) = d.session.copyout_stale(name, offset, len) {
            let msg = std::ffi::CString::new(format!(
                "copyout {name}: timing-only mode: {why}; the bytes are not the device's"
            ))
            .unwrap_or_default();
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                &msg,
                2,
            )?;
        }
        Ok(PyArray1::from_vec(py, bytes))
    }

    /// `dmem_buf_batch_copyin`: `items` are (name, offset, uint8 array).
    fn batch_copyin(
        &self,
        py: Python<'_>,
        items: Vec<(String, u64, PyReadonlyArray1<'_, u8>)>,
    ) -> PyResult<()> {
        let mut slices = Vec::with_capacity(items.len());
        for (n, off, a) in &items {
            slices.push((n.as_str(), *off, bytes_of(a)?));
        }
        let mut d = self.dev.borrow_mut(py);
        d.session
            .batch_copyin_bytes(&slices)
            .map_err(|m| fail(py, &d, m))?;
        d.keep_events();
        Ok(())
    }

    /// `dmem_buf_batch_copyout`: `items` are (name, offset, len); one uint8
    /// array each.
    fn batch_copyout<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(String, u64, u64)>,
    ) -> PyResult<Vec<Bound<'py, PyArray1<u8>>>> {
        let refs: Vec<(&str, u64, u64)> =
            items.iter().map(|(n, o, l)| (n.as_str(), *o, *l)).collect();
        let mut d = self.dev.borrow_mut(py);
        let out = d
            .session
            .batch_copyout_bytes(&refs)
            .map_err(|m| fail(py, &d, m))?;
        d.keep_events();
        Ok(out.into_iter().map(|b| PyArray1::from_vec(py, b)).collect())
    }

    /// Device memory in use: a dict as docs/python.md §Host runtime shows.
    fn mem_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.dev.borrow_mut(py).session.mem_stats();
        let out = PyDict::new(py);
        out.set_item("hbm_channel_bytes", m.hbm_channel_bytes)?;
        out.set_item("nc_bytes", m.nc_bytes)?;
        out.set_item("driver_device_mem_bytes", m.driver_device_mem_bytes)?;
        out.set_item("driver_host_mem_bytes", m.driver_host_mem_bytes)?;
        Ok(out)
    }

    /// A live tensor's (device address, requested bytes, allocated bytes),
    /// or None.
    fn tensor_info(&self, py: Python<'_>, name: &str) -> Option<(u64, u64, u64)> {
        self.dev.borrow(py).session.tensor_info(name)
    }
}
