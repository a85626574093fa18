"""Type stubs of the neuron_sim package (docs/python.md)."""

from . import desc as desc, isa as isa
from ._device import Device as Device, PartitionView as PartitionView, Register as Register
from ._dtypes import ElemType as ElemType, elem_type as elem_type
from ._gather import dma_gather as dma_gather
from ._native import BusError as BusError, DeviceError as DeviceError, NeuronSimError as NeuronSimError, NrtError as NrtError, TraceError as TraceError, __version__ as __version__
from ._runtime import Runtime as Runtime, Tensor as Tensor
from ._trace import Report as Report, run_trace as run_trace
from ._views import TensorView as TensorView, Timing as Timing, dma_copy as dma_copy, plan_word as plan_word

__all__ = ['Device', 'PartitionView', 'Register', 'TensorView', 'Timing', 'dma_copy', 'dma_gather', 'plan_word', 'run_trace', 'Report', 'isa', 'desc', 'elem_type', 'ElemType', 'Runtime', 'Tensor', 'NeuronSimError', 'BusError', 'DeviceError', 'NrtError', 'TraceError', '__version__']
