"""neuron-sim from Python: a cycle-level simulator of the AWS Trainium2 DMA
subsystem with numpy in and out (docs/python.md).

    >>> import numpy as np, neuron_sim as ns
    >>> dev = ns.Device()
    >>> src = dev.hbm_tensor("hbm0+0x1000", (128, 2048), "bfloat16")
    >>> dst = dev.sbuf_tile(0, (128, 2048), "bfloat16")
    >>> t = ns.dma_copy(dev, dst=dst, src=src)
"""

from . import desc, isa
from ._device import Device, PartitionView, Register
from ._dtypes import ElemType, elem_type
from ._gather import dma_gather
from ._native import BusError, DeviceError, NeuronSimError, NrtError, TraceError, __version__
from ._runtime import Runtime, Tensor
from ._trace import Report, run_trace
from ._views import TensorView, Timing, dma_copy, plan_word

__all__ = [
    "Device", "PartitionView", "Register", "TensorView", "Timing", "dma_copy", "dma_gather",
    "plan_word",
    "run_trace", "Report", "isa", "desc", "elem_type", "ElemType",
    "Runtime", "Tensor",
    "NeuronSimError", "BusError", "DeviceError", "NrtError", "TraceError", "__version__",
]
