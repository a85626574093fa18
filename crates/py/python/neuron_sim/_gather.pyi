"""Type stubs of neuron_sim._gather: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any

from ._device import Device
from ._views import TensorView as TensorView, Timing as Timing

MAX_INDICES: int

def dma_gather(dev: Device, dst: TensorView, src: TensorView, indices: Any, core: int = 0, engines: int = 16, index_offset: int | None = None, semaphore: int = 1, queue: int = 0) -> Timing:
    """Gathers rows: `dst[k] = src[indices[k]]` for every k, with INDIRECT1D
    words (SRC_INDIRECTION) on core `core`'s firmware; returns the timing.

    `src` is a table of rows (a 2-D view with contiguous rows, or 1-D), `dst`
    as many rows as `indices` has (an SBUF tile's partitions, HBM rows) of
    the same row length and dtype. The indices are written as UINT32 into
    SBUF partition 0 of the core at byte `index_offset` (default: the last
    16 KiB of the partition), where the firmware reads them; keep that
    range free. One word takes at most 4096 indices and as many as the
    engines' rings hold (one descriptor a row, and the semaphore write:
    255 a engine); more take several words (`Timing.words`). An index
    outside the table raises `IndexError` naming its position."""
