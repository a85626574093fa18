"""Type stubs of neuron_sim._runtime: the signatures and docstrings of the
Python layer (docs/python.md)."""

import numpy as np
from ._dtypes import elem_type as elem_type
from typing import Any, Iterable, Union

from ._device import Device

class Tensor:
    """A device tensor of the host runtime (`rt.alloc`): `name`, `size`
    (bytes asked for), `allocated` (bytes the runtime took), `addr` (its
    device address, usable as a `dma_copy` view's address), `nc`, `usage`."""
    name: str
    size: int
    addr: int
    allocated: int
    nc: int
    usage: str
    freed: bool
    def __init__(self, rt: Runtime, name: str, size: int, addr: int, allocated: int, nc: int, usage: str) -> None: ...
    def copyin(self, data: Any, offset: int = 0) -> None:
        """Copies a numpy array's bytes (C order), or bytes, into the tensor
        at byte `offset` (`dmem_buf_copyin`)."""
    def copyout(self, dtype: Any = np.uint8, shape: Any = None, offset: int = 0, size: int | None = None) -> np.ndarray:
        """Copies the tensor's bytes from `offset` out (`dmem_buf_copyout`):
        `size` bytes (default: the rest of the tensor, or what `shape`
        needs), as an array of `dtype` and `shape` (default flat)."""
    def free(self) -> str:
        """`dmem_free`; returns the runtime's text (`free t0: released`).
        Freeing twice raises `NrtError` (the runtime's double free)."""

Item = Union[Tensor, tuple[Tensor, Any]]

class Runtime:
    '''The host runtime of a `Device` (`dev.runtime()`). Failures the
    runtime reports raise `NrtError` whose `status` is the NRT status name
    (`"NRT_RESOURCE"`); a tensor name that is not live or an unknown usage
    is a `ValueError`.'''
    def __init__(self, dev: Device) -> None: ...
    def alloc(self, size: int, usage: str = 'tensor', nc: int = 0, align: int = 0, host: bool = False, channel: int | None = None, name: str | None = None) -> Tensor:
        '''Allocates `size` bytes of device HBM (host memory with
        `host=True`) for NeuronCore `nc` from its GLOBAL allocator
        (`dmem_alloc`; `dmem_alloc_aligned` when `align` > 0). `usage` is a
        usage type name (`"tensor"`, `"weight"`, `"io"`, …); `channel`
        defaults to `nc // 2`; `name` (default `t0`, `t1`, …) is the hint
        the runtime\'s memory log shows.'''
    def batch_copy(self, items: Iterable[Item]) -> list[np.ndarray] | None:
        """One batch ioctl for several tensors. Items `(tensor, array)` copy
        the arrays in (`dmem_buf_batch_copyin`, returns None); bare tensors
        (or `(tensor, nbytes)`) copy whole tensors (or their first `nbytes`)
        out (`dmem_buf_batch_copyout`, returns one uint8 array each). A
        batch goes one way."""
    def mem_stats(self) -> dict[str, Any]:
        """Device memory in use, as the trace's `mem_stats` prints it:
        `hbm_channel_bytes` (4 channels), `nc_bytes` ({nc: bytes} for NCs
        holding any), `driver_device_mem_bytes`, `driver_host_mem_bytes`."""
