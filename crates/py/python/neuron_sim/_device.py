"""The device: memory, partition views, registers, runs, reports."""

from __future__ import annotations

import json
import math
from typing import Any, Iterator, Sequence

import numpy as np

from . import _native
from ._dtypes import ElemType, elem_type
from ._ints import U8, U32, U64, bounds, integer, shape as _shape


def _as_bytes(data: Any) -> np.ndarray:
    """`data` as a flat uint8 array, without a copy when it is contiguous."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    arr = np.ascontiguousarray(data)
    return arr.reshape(-1).view(np.uint8)


class Register:
    """One register, by name: `value` reads it (without read side effects),
    assigning `value` writes it; fields read and assign by name
    (`reg.fields["EN_PREF"]`, `reg.set(EN_PREF=1)`)."""

    def __init__(self, dev: "Device", name: str, addr: int, region: str, register: str,
                 fields: Sequence[tuple]) -> None:
        self._dev = dev
        self.name = name
        self.addr = addr
        self.region = region
        self.register = register
        self._fields = {f[0]: (f[1], f[2], f[3], f[4]) for f in fields}

    def __repr__(self) -> str:
        return f"<Register {self.region}.{self.register} @ {self.addr:#x} = {self.value:#010x}>"

    @property
    def value(self) -> int:
        """The register's value, without read side effects."""
        v = self._dev._n.peek32(self.addr)
        return 0 if v is None else v

    @value.setter
    def value(self, v: int) -> None:
        self._dev._n.write32(self.addr, integer(v, "value", 0, U32))

    def read(self) -> int:
        """A bus read (read-to-clear and counters act)."""
        return self._dev._n.read32(self.addr)

    def write(self, v: int) -> None:
        """A bus write (doorbells ring, W1C clears)."""
        self._dev._n.write32(self.addr, integer(v, "value", 0, U32))

    @property
    def field_names(self) -> list[str]:
        """The field names, in register order."""
        return list(self._fields)

    @property
    def fields(self) -> dict[str, int]:
        """Every field's value, by name."""
        v = self.value
        return {n: (v >> lsb) & ((1 << w) - 1) for n, (lsb, w, _, _) in self._fields.items()}

    def field_info(self, name: str) -> tuple[int, int, str, str]:
        """(lsb, width, access, description) of field `name`."""
        return self._fields[self._field_name(name)]

    def _field_name(self, name: str) -> str:
        for n in self._fields:
            if n.lower() == name.lower():
                return n
        known = ", ".join(self._fields) or "none"
        raise ValueError(f"{self.region}.{self.register} has no field {name!r} (fields: {known})")

    def __getitem__(self, name: str) -> int:
        """Field `name`'s value (case-insensitive)."""
        n = self._field_name(name)
        lsb, w, _, _ = self._fields[n]
        return (self.value >> lsb) & ((1 << w) - 1)

    def __setitem__(self, name: str, v: int) -> None:
        self.set(**{name: v})

    def set(self, **fields: int) -> None:
        """Read-modify-write of the named fields in one bus write."""
        v = self.value
        for name, fv in fields.items():
            n = self._field_name(name)
            lsb, w, _, _ = self._fields[n]
            fv = integer(fv, n, -U64, U64)  # an integer; the width check follows
            if fv < 0 or fv >= (1 << w):
                raise ValueError(f"{self.region}.{self.register}.{n} is {w} bits wide: {fv} does not fit")
            v = (v & ~(((1 << w) - 1) << lsb)) | (fv << lsb)
        self.write(v)


class PartitionView:
    """SBUF or PSUM of one core as (partitions, bytes), or (partitions,
    elements) with a dtype: `view[0:128, 0:4096]` reads a block,
    assignment writes one."""

    def __init__(self, dev: "Device", space: str, core: int, dtype: Any = None) -> None:
        self._dev = dev
        self.space = space
        self.core = core
        self.base = dev.addr(f"tpb{core}.{space}[p0]")
        self.partition_stride = dev.addr(f"tpb{core}.{space}[p1]") - self.base
        self.partitions = 128
        self.etype: ElemType | None = None if dtype is None else elem_type(dtype)

    def _block(self, key: Any) -> tuple[range, slice, int]:
        if not isinstance(key, tuple) or len(key) != 2:
            raise IndexError("index a partition view with [partitions, columns]")
        p, c = key
        # A partition index as numpy takes one (numpy integers too; -1 is
        # the last partition); out of range is an IndexError, never an
        # empty block that reads and writes nothing.
        if isinstance(p, (int, np.integer)):
            i = int(p)
            if not -self.partitions <= i < self.partitions:
                raise IndexError(f"partition {i} is out of range for {self.partitions} partitions")
            i %= self.partitions
            p = slice(i, i + 1)
        if isinstance(c, (int, np.integer)):
            c = slice(int(c), int(c) + 1)
        if not isinstance(p, slice) or not isinstance(c, slice):
            raise IndexError("index a partition view with [partitions, columns]: ints or slices")
        # Float bounds are a TypeError, as numpy's, never truncated
        # (docs/python.md §Device).
        p, c = bounds(p, "partition"), bounds(c, "column")
        prange = range(*p.indices(self.partitions))
        if prange.step != 1 or (c.step not in (None, 1)):
            raise IndexError("partition views take contiguous slices (step 1)")
        if c.start is None or c.stop is None:
            raise IndexError("give the column range explicitly, e.g. [0:128, 0:4096]")
        if c.start < 0 or c.stop < c.start:
            raise IndexError(f"column range {c.start}:{c.stop}: columns count from 0 within a "
                             f"partition, start <= stop")
        return prange, c, (1 if self.etype is None else self.etype.itemsize)

    def __getitem__(self, key: Any) -> np.ndarray:
        """The block `key` selects, as a new array."""
        prange, c, size = self._block(key)
        row_bytes = (c.stop - c.start) * size
        raw = self._dev._n.read_rows(self.base + prange.start * self.partition_stride + c.start * size,
                                     len(prange), row_bytes, self.partition_stride)
        out = raw.reshape(len(prange), row_bytes)
        if self.etype is not None:
            out = out.view(self.etype.np_dtype)
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        prange, c, size = self._block(key)
        cols = c.stop - c.start
        dt = np.uint8 if self.etype is None else self.etype.np_dtype
        arr = np.broadcast_to(np.asarray(value, dtype=dt), (len(prange), cols))
        self._dev._n.write_rows(self.base + prange.start * self.partition_stride + c.start * size,
                                _as_bytes(arr), cols * size, self.partition_stride)


class Device:
    """One simulated Trainium2 device (docs/python.md §Device).

    timing: a timing JSON file (only the parameters it changes);
    timing_only: move no payload (timing as with payload);
    soc_map / csr_maps: an address map file, a directory of CSR maps;
    vcd / perfetto: record waveforms / events for `write_vcd` /
    `write_perfetto`.
    """

    def __init__(self, timing: str | None = None, timing_only: bool = False,
                 soc_map: str | None = None, csr_maps: str | None = None,
                 vcd: bool = False, perfetto: bool = False) -> None:
        self._n = _native.Device(timing=None if timing is None else str(timing),
                                 timing_only=timing_only,
                                 soc_map=None if soc_map is None else str(soc_map),
                                 csr_maps=None if csr_maps is None else str(csr_maps),
                                 vcd=vcd, perfetto=perfetto)
        self._dge: dict[int, tuple[int, int]] = {}

    def runtime(self) -> "Runtime":
        """The host runtime over this device (docs/python.md §Host
        runtime): `rt.alloc`, `t.copyin`, `t.copyout`, `rt.batch_copy`,
        `t.free`, `rt.mem_stats`."""
        from ._runtime import Runtime
        return Runtime(self)

    # ------------------------------------------------------------ addresses
    def addr(self, a: Any) -> int:
        """A SoC address from an int or a trace address (`"hbm0+0x1000"`,
        `"tpb0.sbuf[p5]"`, `"eng0.m2s.q0.q_cfg"`)."""
        return self._addr(a, "addr")

    def _addr(self, a: Any, name: str) -> int:
        """`addr` for the argument `name` (named in its errors)."""
        if isinstance(a, str):
            return self._n.resolve(a)[0]
        if isinstance(a, (int, np.integer)):
            return integer(a, name, 0, U64)
        raise TypeError(f"{name}: an address is an int or a string, not {type(a).__name__}")

    # --------------------------------------------------------------- memory
    def write(self, addr: Any, data: Any) -> None:
        """Writes bytes, a bytes-like object or a numpy array (its bytes, C
        order) at `addr`."""
        self._n.write_bytes(self._addr(addr, "addr"), _as_bytes(data))

    def read(self, addr: Any, n: int) -> np.ndarray:
        """Reads `n` bytes at `addr` as a uint8 array."""
        return self._n.read_bytes(self._addr(addr, "addr"), integer(n, "n"))

    def read_array(self, addr: Any, shape: Any, dtype: Any) -> np.ndarray:
        """Reads a C-order array of `shape` and `dtype` at `addr`."""
        et = elem_type(dtype)
        # A float size is a TypeError, as numpy's (docs/python.md §Device).
        shape = _shape(shape)
        n = math.prod(shape) * et.itemsize
        return self.read(addr, n).view(et.np_dtype).reshape(shape)

    def fill(self, addr: Any, n: int, byte: int = 0) -> None:
        """Fills `n` bytes with `byte`."""
        self.write(addr, np.full(integer(n, "n"), integer(byte, "byte", 0, U8), dtype=np.uint8))

    def sbuf(self, core: int = 0, dtype: Any = None) -> PartitionView:
        """Core `core`'s SBUF as (partitions, bytes) — or elements of
        `dtype`."""
        return PartitionView(self, "sbuf", integer(core, "core", 0, U8), dtype)

    def psum(self, core: int = 0, dtype: Any = None) -> PartitionView:
        """Core `core`'s PSUM as (partitions, bytes) — or elements of
        `dtype`."""
        return PartitionView(self, "psum", integer(core, "core", 0, U8), dtype)

    # ------------------------------------------------------------ registers
    def reg(self, name: str) -> Register:
        """The register `name` (`"eng0.m2s.q0.q_cfg"`, `"tpb0.sem.inc[3]"`)."""
        addr, register = self._n.resolve(name)
        info = self._n.reg_info(addr)
        if info is None:
            raise ValueError(f"`{name}` is memory, not a register")
        region, regname, fields = info
        return Register(self, name, addr, region, regname, fields)

    def read32(self, addr: Any) -> int:
        """A 32-bit bus read (register read side effects apply)."""
        return self._n.read32(self._addr(addr, "addr"))

    def write32(self, addr: Any, value: int) -> None:
        """A 32-bit bus write (doorbells ring, semaphores count)."""
        self._n.write32(self._addr(addr, "addr"), integer(value, "value", 0, U32))

    # ----------------------------------------------------------------- time
    def run(self, cycles: int | None = None) -> str:
        """Runs until nothing is pending, or `cycles` more cycles; returns
        "idle", "limit", "stalled", or "deadlock" (idle, but the firmware
        holds work nothing can end: a word gated for ever, descriptors no
        RDMA_DESC_START rings; docs/firmware.md §Work left at the end)."""
        return self._n.run(None if cycles is None else integer(cycles, "cycles"))

    def wait(self, addr: Any, op: str, value: int, timeout: int = 100_000,
             mask: int = 0xFFFF_FFFF) -> int:
        """Runs until the 32-bit value at `addr` compares with `value` by
        `op` ("==", "!=", ">="); returns the cycles waited. Raises
        TimeoutError (naming the last value) when it does not hold within
        `timeout` cycles or cannot change any more."""
        a = self._addr(addr, "addr")
        held, last, waited, how = self._n.wait(a, op, integer(value, "value", 0, U32),
                                               integer(timeout, "timeout"), integer(mask, "mask", 0, U32))
        if not held:
            raise TimeoutError(f"wait {addr} {op} {value:#x}: {how} after {waited} cycles; value {last:#010x}")
        return waited

    @property
    def now(self) -> int:
        """Simulated cycles so far."""
        return self._n.now

    @property
    def clock_ghz(self) -> float:
        """The DMA clock in GHz (cycles per ns)."""
        return self._n.clock_ghz

    # -------------------------------------------------------------- reports
    def csr_snapshot(self) -> dict:
        """Every register away from reset, as `run --csr-snapshot FILE.json`
        holds it (less `schema_version`)."""
        return json.loads(self._n.csr_snapshot_json())

    def csr_snapshot_yaml(self) -> str:
        """The same snapshot as the YAML text `run --csr-snapshot FILE`
        writes."""
        return self._n.csr_snapshot_yaml()

    def report(self) -> dict:
        """The run summary as `run --json` gives it (`cycles`, `sim_ns`,
        `bytes`, `descriptors`, `queues`, `faults`, `firmware`, and
        `host_runtime` once the runtime was used)."""
        return json.loads(self._n.summary_json())

    def write_perfetto(self, path: Any) -> int:
        """Writes the timeline (Chrome trace-event JSON for
        ui.perfetto.dev); needs Device(perfetto=True). Returns the packet
        count."""
        return self._n.write_perfetto(str(path))

    def write_vcd(self, path: Any) -> None:
        """Writes the waveforms as VCD; needs Device(vcd=True)."""
        self._n.write_vcd(str(path))

    # ------------------------------------------------------------- firmware
    def inst(self, core: int, word: Any) -> None:
        """Queues an instruction word (a neuron_sim.isa word or 64 bytes)
        on core `core`'s firmware."""
        data = word.to_bytes() if hasattr(word, "to_bytes") and not isinstance(word, (bytes, bytearray)) else bytes(word)
        self._n.inst(integer(core, "core", 0, U8), data)

    def configure_dge(self, core: int = 0, engines: int = 16, queue: int = 0,
                      ring_descriptors: int = 256, carveout_offset: int = 0) -> None:
        """Programs core `core`'s DGE configuration (local registers 39/40,
        docs/firmware.md): the lowest `engines` engines on queue `queue`,
        rings of `ring_descriptors`."""
        core = integer(core, "core", 0, U8)
        # Integers here; their ranges are checked below, with the reason.
        engines, queue = integer(engines, "engines", -U64, U64), integer(queue, "queue", -U64, U64)
        ring_descriptors = integer(ring_descriptors, "ring_descriptors", 0, 0xFFFF)
        carveout_offset = integer(carveout_offset, "carveout_offset", 0, 0xFFFF)
        if not 1 <= engines <= 16:
            raise ValueError(f"engines = {engines}: a core has 16 engines (1..16)")
        if not 0 <= queue <= 15:
            raise ValueError(f"queue = {queue}: valid 0..15")
        cfg = ((1 << queue) << 16) | ((1 << engines) - 1)
        carve = (ring_descriptors << 16) | carveout_offset
        if self._dge.get(core) == (carve, cfg):
            return
        self.write32(f"tpb{core}.q7_local_reg.memcopy_carveout_cfg", carve)
        self.write32(f"tpb{core}.q7_local_reg.memcopy_dma_cfg", cfg)
        self._dge[core] = (carve, cfg)

    def queue_stats(self) -> list[tuple[int, int, int, int, int, int]]:
        """(engine, queue, packets, tx descriptors, rx descriptors, bytes)
        of every queue that moved something."""
        return self._n.queue_stats()

    # --------------------------------------------------------------- tensors
    def hbm_tensor(self, addr: Any, shape: Any, dtype: Any) -> "TensorView":
        """A C-order tensor in device memory at `addr` (HBM or any flat
        memory), sliceable with numpy indexing."""
        from ._views import TensorView

        return TensorView.contiguous(self, self._addr(addr, "addr"), shape, dtype)

    def sbuf_tile(self, core: int, shape: Any, dtype: Any, partition_offset: int = 0,
                  byte_offset: int = 0) -> "TensorView":
        """A tile in core `core`'s SBUF: dim 0 is the partition (from
        `partition_offset`), the other dims C order inside each partition
        from `byte_offset`."""
        from ._views import TensorView

        return TensorView.tile(self, "sbuf", integer(core, "core", 0, U8), shape, dtype,
                               integer(partition_offset, "partition_offset"),
                               integer(byte_offset, "byte_offset"))

    def psum_tile(self, core: int, shape: Any, dtype: Any, partition_offset: int = 0,
                  byte_offset: int = 0) -> "TensorView":
        """Like sbuf_tile, in PSUM."""
        from ._views import TensorView

        return TensorView.tile(self, "psum", integer(core, "core", 0, U8), shape, dtype,
                               integer(partition_offset, "partition_offset"),
                               integer(byte_offset, "byte_offset"))
