"""Type stubs of neuron_sim._device: the signatures and docstrings of the
Python layer (docs/python.md)."""

import numpy as np
from ._dtypes import ElemType as ElemType, elem_type as elem_type
from typing import Any, Sequence

from . import _native
from ._runtime import Runtime
from ._views import TensorView

class Register:
    '''One register, by name: `value` reads it (without read side effects),
    assigning `value` writes it; fields read and assign by name
    (`reg.fields["EN_PREF"]`, `reg.set(EN_PREF=1)`).'''
    name: str
    addr: int
    region: str
    register: str
    def __init__(self, dev: Device, name: str, addr: int, region: str, register: str, fields: Sequence[tuple[Any, ...]]) -> None: ...
    @property
    def value(self) -> int:
        """The register's value, without read side effects."""
    @value.setter
    def value(self, v: int) -> None: ...
    def read(self) -> int:
        """A bus read (read-to-clear and counters act)."""
    def write(self, v: int) -> None:
        """A bus write (doorbells ring, W1C clears)."""
    @property
    def field_names(self) -> list[str]:
        """The field names, in register order."""
    @property
    def fields(self) -> dict[str, int]:
        """Every field's value, by name."""
    def field_info(self, name: str) -> tuple[int, int, str, str]:
        """(lsb, width, access, description) of field `name`."""
    def __getitem__(self, name: str) -> int:
        """Field `name`'s value (case-insensitive)."""
    def __setitem__(self, name: str, v: int) -> None: ...
    def set(self, **fields: int) -> None:
        """Read-modify-write of the named fields in one bus write."""

class PartitionView:
    """SBUF or PSUM of one core as (partitions, bytes), or (partitions,
    elements) with a dtype: `view[0:128, 0:4096]` reads a block,
    assignment writes one."""
    space: str
    core: int
    base: int
    partition_stride: int
    partitions: int
    etype: ElemType | None
    def __init__(self, dev: Device, space: str, core: int, dtype: Any = None) -> None: ...
    def __getitem__(self, key: Any) -> np.ndarray:
        """The block `key` selects, as a new array."""
    def __setitem__(self, key: Any, value: Any) -> None: ...

class Device:
    """One simulated Trainium2 device (docs/python.md §Device).

    timing: a timing JSON file (only the parameters it changes);
    timing_only: move no payload (timing as with payload);
    soc_map / csr_maps: an address map file, a directory of CSR maps;
    vcd / perfetto: record waveforms / events for `write_vcd` /
    `write_perfetto`.
    """
    _n: _native.Device
    def __init__(self, timing: str | None = None, timing_only: bool = False, soc_map: str | None = None, csr_maps: str | None = None, vcd: bool = False, perfetto: bool = False) -> None: ...
    def runtime(self) -> Runtime:
        """The host runtime over this device (docs/python.md §Host
        runtime): `rt.alloc`, `t.copyin`, `t.copyout`, `rt.batch_copy`,
        `t.free`, `rt.mem_stats`."""
    def addr(self, a: Any) -> int:
        '''A SoC address from an int or a trace address (`"hbm0+0x1000"`,
        `"tpb0.sbuf[p5]"`, `"eng0.m2s.q0.q_cfg"`).'''
    def write(self, addr: Any, data: Any) -> None:
        """Writes bytes, a bytes-like object or a numpy array (its bytes, C
        order) at `addr`."""
    def read(self, addr: Any, n: int) -> np.ndarray:
        """Reads `n` bytes at `addr` as a uint8 array."""
    def read_array(self, addr: Any, shape: Any, dtype: Any) -> np.ndarray:
        """Reads a C-order array of `shape` and `dtype` at `addr`."""
    def fill(self, addr: Any, n: int, byte: int = 0) -> None:
        """Fills `n` bytes with `byte`."""
    def sbuf(self, core: int = 0, dtype: Any = None) -> PartitionView:
        """Core `core`'s SBUF as (partitions, bytes) — or elements of
        `dtype`."""
    def psum(self, core: int = 0, dtype: Any = None) -> PartitionView:
        """Core `core`'s PSUM as (partitions, bytes) — or elements of
        `dtype`."""
    def reg(self, name: str) -> Register:
        '''The register `name` (`"eng0.m2s.q0.q_cfg"`, `"tpb0.sem.inc[3]"`).'''
    def read32(self, addr: Any) -> int:
        """A 32-bit bus read (register read side effects apply)."""
    def write32(self, addr: Any, value: int) -> None:
        """A 32-bit bus write (doorbells ring, semaphores count)."""
    def run(self, cycles: int | None = None) -> str:
        '''Runs until nothing is pending, or `cycles` more cycles; returns
        "idle", "limit", "stalled", or "deadlock" (idle, but the firmware
        holds work nothing can end: a word gated for ever, descriptors no
        RDMA_DESC_START rings; docs/firmware.md §Work left at the end).'''
    def wait(self, addr: Any, op: str, value: int, timeout: int = 100000, mask: int = 0xFFFFFFFF) -> int:
        '''Runs until the 32-bit value at `addr` compares with `value` by
        `op` ("==", "!=", ">="); returns the cycles waited. Raises
        TimeoutError (naming the last value) when it does not hold within
        `timeout` cycles or cannot change any more.'''
    @property
    def now(self) -> int:
        """Simulated cycles so far."""
    @property
    def clock_ghz(self) -> float:
        """The DMA clock in GHz (cycles per ns)."""
    def csr_snapshot(self) -> dict[str, Any]:
        """Every register away from reset, as `run --csr-snapshot FILE.json`
        holds it (less `schema_version`)."""
    def csr_snapshot_yaml(self) -> str:
        """The same snapshot as the YAML text `run --csr-snapshot FILE`
        writes."""
    def report(self) -> dict[str, Any]:
        """The run summary as `run --json` gives it (`cycles`, `sim_ns`,
        `bytes`, `descriptors`, `queues`, `faults`, `firmware`, and
        `host_runtime` once the runtime was used)."""
    def write_perfetto(self, path: Any) -> int:
        """Writes the timeline (Chrome trace-event JSON for
        ui.perfetto.dev); needs Device(perfetto=True). Returns the packet
        count."""
    def write_vcd(self, path: Any) -> None:
        """Writes the waveforms as VCD; needs Device(vcd=True)."""
    def inst(self, core: int, word: Any) -> None:
        """Queues an instruction word (a neuron_sim.isa word or 64 bytes)
        on core `core`'s firmware."""
    def configure_dge(self, core: int = 0, engines: int = 16, queue: int = 0, ring_descriptors: int = 256, carveout_offset: int = 0) -> None:
        """Programs core `core`'s DGE configuration (local registers 39/40,
        docs/firmware.md): the lowest `engines` engines on queue `queue`,
        rings of `ring_descriptors`."""
    def queue_stats(self) -> list[tuple[int, int, int, int, int, int]]:
        """(engine, queue, packets, tx descriptors, rx descriptors, bytes)
        of every queue that moved something."""
    def hbm_tensor(self, addr: Any, shape: Any, dtype: Any) -> TensorView:
        """A C-order tensor in device memory at `addr` (HBM or any flat
        memory), sliceable with numpy indexing."""
    def sbuf_tile(self, core: int, shape: Any, dtype: Any, partition_offset: int = 0, byte_offset: int = 0) -> TensorView:
        """A tile in core `core`'s SBUF: dim 0 is the partition (from
        `partition_offset`), the other dims C order inside each partition
        from `byte_offset`."""
    def psum_tile(self, core: int, shape: Any, dtype: Any, partition_offset: int = 0, byte_offset: int = 0) -> TensorView:
        """Like sbuf_tile, in PSUM."""
