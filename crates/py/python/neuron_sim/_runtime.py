"""The host runtime: device tensors allocated, filled and read back through
the runtime's dmem calls over the ioctl bus and the kernel-driver model
(docs/python.md §Host runtime, docs/host-runtime.md). Each call is the
trace's host operation of the same name (`alloc`, `copyin`, `copyout`,
`batch_copy`, `free`, `mem_stats`) on the same library path."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence, Union

import numpy as np

from . import _native
from ._dtypes import elem_type
from ._ints import U32, integer, shape as _shape


def _flat_bytes(data: Any) -> np.ndarray:
    """`data` as a flat uint8 array over the same memory when it is
    contiguous (one copy in all: into the simulated process's buffer)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    arr = np.ascontiguousarray(data)
    return arr.reshape(-1).view(np.uint8)


class Tensor:
    """A device tensor of the host runtime (`rt.alloc`): `name`, `size`
    (bytes asked for), `allocated` (bytes the runtime took), `addr` (its
    device address, usable as a `dma_copy` view's address), `nc`, `usage`."""

    def __init__(self, rt: "Runtime", name: str, size: int, addr: int, allocated: int,
                 nc: int, usage: str) -> None:
        self._rt = rt
        self.name = name
        self.size = size
        self.addr = addr
        self.allocated = allocated
        self.nc = nc
        self.usage = usage
        self.freed = False

    def __repr__(self) -> str:
        state = " freed" if self.freed else ""
        return (f"<Tensor {self.name} {self.size} B at {self.addr:#x} nc{self.nc} "
                f"{self.usage}{state}>")

    def _own(self) -> None:
        """A freed handle never reaches a later tensor that took its name
        (docs/python.md §Host runtime: a tensor that is not live is a
        `ValueError`); with the name free, the runtime's own error stands."""
        if self.freed and self._rt._n.tensor_info(self.name) is not None:
            raise ValueError(f"tensor `{self.name}` of this handle was freed; the name now "
                             f"belongs to another allocation")

    def copyin(self, data: Any, offset: int = 0) -> None:
        """Copies a numpy array's bytes (C order), or bytes, into the tensor
        at byte `offset` (`dmem_buf_copyin`)."""
        self._own()
        self._rt._n.copyin(self.name, integer(offset, "offset"), _flat_bytes(data))

    def copyout(self, dtype: Any = np.uint8, shape: Any = None, offset: int = 0,
                size: int | None = None) -> np.ndarray:
        """Copies the tensor's bytes from `offset` out (`dmem_buf_copyout`):
        `size` bytes (default: the rest of the tensor, or what `shape`
        needs), as an array of `dtype` and `shape` (default flat)."""
        self._own()
        et = elem_type(dtype)
        offset = integer(offset, "offset")
        # A float size is a TypeError, as numpy's (docs/python.md §Device).
        shape = None if shape is None else _shape(shape)
        if size is None:
            if shape is not None:
                size = math.prod(shape) * et.itemsize
            else:
                size = self.size - offset
                if size < 0:
                    raise ValueError(f"copyout {self.name}: offset {offset} is past its {self.size} bytes")
        raw = self._rt._n.copyout(self.name, offset, integer(size, "size"))
        return _typed(raw, et, shape, self.name)

    def free(self) -> str:
        """`dmem_free`; returns the runtime's text (`free t0: released`).
        Freeing twice raises `NrtError` (the runtime's double free)."""
        self._own()
        text = self._rt._n.free(self.name)
        if self._rt._n.tensor_info(self.name) is None:
            self.freed = True
        return text


def _typed(raw: np.ndarray, et: Any, shape: Any, name: str) -> np.ndarray:
    if raw.size % et.itemsize:
        raise ValueError(f"{name}: {raw.size} bytes are not whole {et.name} elements")
    out = raw.view(et.np_dtype)
    if shape is not None:
        out = out.reshape(shape)
    return out


Item = Union[Tensor, "tuple[Tensor, Any]"]


class Runtime:
    """The host runtime of a `Device` (`dev.runtime()`). Failures the
    runtime reports raise `NrtError` whose `status` is the NRT status name
    (`"NRT_RESOURCE"`); a tensor name that is not live or an unknown usage
    is a `ValueError`."""

    def __init__(self, dev: Any) -> None:
        self._dev = dev
        self._n = dev._n.runtime()
        self._next = 0

    def alloc(self, size: int, usage: str = "tensor", nc: int = 0, align: int = 0,
              host: bool = False, channel: int | None = None,
              name: str | None = None) -> Tensor:
        """Allocates `size` bytes of device HBM (host memory with
        `host=True`) for NeuronCore `nc` from its GLOBAL allocator
        (`dmem_alloc`; `dmem_alloc_aligned` when `align` > 0). `usage` is a
        usage type name (`"tensor"`, `"weight"`, `"io"`, …); `channel`
        defaults to `nc // 2`; `name` (default `t0`, `t1`, …) is the hint
        the runtime's memory log shows. As `alloc` in a trace, `size` must
        be above 0, `align` 0 or a power of two, `nc` 0..7 and `channel`
        0..3 (`ValueError` otherwise)."""
        if name is None:
            while True:
                name = f"t{self._next}"
                self._next += 1
                if self._n.tensor_info(name) is None:
                    break
        if isinstance(size, (int, np.integer)) and size < 0:
            raise ValueError(f"alloc {name}: size {size} is negative")
        size = integer(size, "size")
        nc = integer(nc, "nc", 0, U32)
        addr, allocated = self._n.alloc(name, size, str(usage), nc, integer(align, "align"),
                                        bool(host), None if channel is None else integer(channel, "channel", 0, U32))
        return Tensor(self, name, size, addr, allocated, nc, str(usage))

    def batch_copy(self, items: Iterable[Item]) -> list[np.ndarray] | None:
        """One batch ioctl for several tensors. Items `(tensor, array)` copy
        the arrays in (`dmem_buf_batch_copyin`, returns None); bare tensors
        (or `(tensor, nbytes)`) copy whole tensors (or their first `nbytes`)
        out (`dmem_buf_batch_copyout`, returns one uint8 array each). A
        batch goes one way."""
        items = list(items)
        ins: list[tuple[str, int, np.ndarray]] = []
        outs: list[tuple[str, int, int]] = []
        for it in items:
            if isinstance(it, Tensor):
                outs.append((it.name, 0, it.size))
            elif isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], Tensor):
                t, v = it
                if isinstance(v, (int, np.integer)):
                    outs.append((t.name, 0, int(v)))
                else:
                    ins.append((t.name, 0, _flat_bytes(v)))
            else:
                raise TypeError("batch_copy items are tensors or (tensor, array) pairs, "
                                f"not {type(it).__name__}")
        if ins and outs:
            raise ValueError("batch_copy goes one way: all (tensor, array) pairs (in) "
                             "or all tensors (out)")
        if ins:
            self._n.batch_copyin(ins)
            return None
        return self._n.batch_copyout(outs)

    def mem_stats(self) -> dict:
        """Device memory in use, as the trace's `mem_stats` prints it:
        `hbm_channel_bytes` (4 channels), `nc_bytes` ({nc: bytes} for NCs
        holding any), `driver_device_mem_bytes`, `driver_host_mem_bytes`."""
        return self._n.mem_stats()
