"""Type stubs of neuron_sim._views: the signatures and docstrings of the
Python layer (docs/python.md)."""

import numpy as np
from ._dtypes import ElemType as ElemType, elem_type as elem_type
from dataclasses import dataclass
from typing import Any

from ._device import Device

class TensorView:
    """A strided view of device memory: a base address, a shape, strides in
    elements and an element type. Slicing (`t[0:128, 256:512]`, steps,
    ints) and `.T` give new views, no data moves. For a tile, `pdim` is the
    dimension that walks partitions."""
    dev: Device
    addr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    etype: ElemType
    space: str
    core: int | None
    pdim: int | None
    def __init__(self, dev: Device, addr: int, shape: tuple[int, ...], strides: tuple[int, ...], etype: ElemType, space: str, core: int | None = None, pdim: int | None = None) -> None: ...
    @classmethod
    def contiguous(cls, dev: Device, addr: int, shape: Any, dtype: Any) -> TensorView:
        """A C-order view of `shape` at `addr`."""
    @classmethod
    def tile(cls, dev: Device, space: str, core: int, shape: Any, dtype: Any, partition_offset: int, byte_offset: int) -> TensorView:
        """A tile of `space` ("sbuf", "psum") whose dim 0 is the partition."""
    @property
    def ndim(self) -> int:
        """The number of dimensions."""
    @property
    def dtype(self) -> ElemType:
        """The element type."""
    @property
    def nbytes(self) -> int:
        """Bytes of the elements the view covers."""
    @property
    def T(self) -> TensorView:
        """The transposed view (dims reversed)."""
    def transpose(self, *axes: int) -> TensorView:
        """The view with its dims permuted (reversed without `axes`)."""
    def __getitem__(self, key: Any) -> TensorView:
        """A sub-view by numpy basic indexing (ints, slices with steps); no
        data moves."""
    def numpy(self) -> np.ndarray:
        """The view's elements as a new numpy array (C order) of the view's
        shape: 0-d for a fully indexed view (`t[3, 17]`), as numpy. One
        native read for the whole view (all partitions), no Python per
        element."""
    def write(self, value: Any) -> None:
        """Writes `value` (broadcast to the view's shape) into the view: one
        native write for a view whose partition rows are contiguous."""
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray: ...

@dataclass
class Timing:
    """What one `dma_copy` took: simulated cycles and ns from the word's
    issue to the device going idle, payload bytes of the tensor, the
    descriptors and packets the engines completed, the word's kind, how many
    words it took (more than one when a dimension was split) and its
    achieved bandwidth."""
    cycles: int
    ns: float
    bytes: int
    descriptors: int
    packets: int
    word: str
    words: int = 1
    @property
    def gbps(self) -> float:
        """Achieved GB/s (bytes per ns)."""
    def __getitem__(self, k: str) -> Any:
        """The field `k` (`t["cycles"]`)."""

def plan_word(dst: TensorView, src: TensorView, dtype: Any = None) -> tuple[str, list[tuple[str, str]]]:
    """The instruction word (kind, fields) that copies `src` into `dst`:
    DIRECT2D for any 2-D pattern, DIRECT2D_XPOSE when `src` is a transposed
    view whose rows are contiguous and `dst`'s rows are too."""
def dma_copy(dev: Device, dst: TensorView, src: TensorView, core: int = 0, engines: int = 16, dtype: Any = None, semaphore: int = 1, queue: int = 0) -> Timing:
    """Copies `src` into `dst` with one DMA instruction word on core
    `core`'s firmware, spread over `engines` engines, and runs the device
    until it is idle. Returns the timing. With `dtype`, both sides are
    read as that type; views of different dtypes convert (DIRECT2D
    in_dtype/out_dtype). A word the firmware refuses raises `DeviceError`.

    The word is planned once per geometry (shapes, strides, dtypes) and
    reused with new addresses: one native call per copy (docs/python.md
    §Speed). A dimension over 65535 elements splits the copy into several
    words (`Timing.words`)."""
