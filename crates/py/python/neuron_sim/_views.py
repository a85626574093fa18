"""Tensor views (HBM tensors, SBUF/PSUM tiles) and `dma_copy`, which turns
two views into one DIRECT2D or DIRECT2D_XPOSE word (docs/python.md §dma_copy,
docs/instruction-words.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._dtypes import ElemType, elem_type
from ._ints import U8, bounds, integer, shape as _shape


class TensorView:
    """A strided view of device memory: a base address, a shape, strides in
    elements and an element type. Slicing (`t[0:128, 256:512]`, steps,
    ints) and `.T` give new views, no data moves. For a tile, `pdim` is the
    dimension that walks partitions."""

    def __init__(self, dev: Any, addr: int, shape: tuple, strides: tuple, etype: ElemType,
                 space: str, core: int | None = None, pdim: int | None = None) -> None:
        self.dev = dev
        self.addr = addr
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.etype = etype
        self.space = space
        self.core = core
        self.pdim = pdim

    @classmethod
    def contiguous(cls, dev: Any, addr: int, shape: Any, dtype: Any) -> "TensorView":
        """A C-order view of `shape` at `addr`."""
        et = elem_type(dtype)
        shape = _shape(shape)
        strides = []
        acc = 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        return cls(dev, addr, shape, tuple(reversed(strides)), et, "flat")

    @classmethod
    def tile(cls, dev: Any, space: str, core: int, shape: Any, dtype: Any,
             partition_offset: int, byte_offset: int) -> "TensorView":
        """A tile of `space` ("sbuf", "psum") whose dim 0 is the partition."""
        et = elem_type(dtype)
        shape = _shape(shape)
        if len(shape) < 1 or shape[0] + partition_offset > 128 or partition_offset < 0:
            raise ValueError(f"a tile's dim 0 is partitions: {shape[0] if shape else 0} from "
                             f"partition {partition_offset} does not fit 128")
        if byte_offset % et.itemsize:
            raise ValueError(f"byte_offset {byte_offset} is not a multiple of the {et.name} size")
        base = dev.addr(f"tpb{core}.{space}[p{partition_offset}]") + byte_offset
        pstride_bytes = dev.addr(f"tpb{core}.{space}[p1]") - dev.addr(f"tpb{core}.{space}[p0]")
        inner = []
        acc = 1
        for s in reversed(shape[1:]):
            inner.append(acc)
            acc *= s
        strides = (pstride_bytes // et.itemsize,) + tuple(reversed(inner))
        return cls(dev, base, shape, strides, et, space, core, 0)

    def __repr__(self) -> str:
        return (f"<TensorView {self.space} @ {self.addr:#x} shape={self.shape} "
                f"strides={self.strides} dtype={self.etype.name}>")

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def dtype(self) -> ElemType:
        """The element type."""
        return self.etype

    @property
    def nbytes(self) -> int:
        """Bytes of the elements the view covers."""
        return math.prod(self.shape) * self.etype.itemsize

    @property
    def T(self) -> "TensorView":
        """The transposed view (dims reversed)."""
        p = None if self.pdim is None else self.ndim - 1 - self.pdim
        return TensorView(self.dev, self.addr, self.shape[::-1], self.strides[::-1], self.etype,
                          self.space, self.core, p)

    def transpose(self, *axes: int) -> "TensorView":
        """The view with its dims permuted (reversed without `axes`)."""
        axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        if not axes:
            return self.T
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of {self.ndim} dims")
        p = None if self.pdim is None else axes.index(self.pdim)
        return TensorView(self.dev, self.addr, tuple(self.shape[a] for a in axes),
                          tuple(self.strides[a] for a in axes), self.etype, self.space, self.core, p)

    def __getitem__(self, key: Any) -> "TensorView":
        """A sub-view by numpy basic indexing (ints, slices with steps); no
        data moves."""
        if type(key) is int and self.shape:
            # The common loop `t[i]`: one index on dim 0.
            n = self.shape[0]
            i = key + n if key < 0 else key
            if not 0 <= i < n:
                raise IndexError(f"index {key} is out of range for dim 0 of size {n}")
            p = self.pdim
            v = TensorView.__new__(TensorView)
            v.dev, v.etype, v.space, v.core = self.dev, self.etype, self.space, self.core
            v.addr = self.addr + i * self.strides[0] * self.etype.itemsize
            v.shape, v.strides = self.shape[1:], self.strides[1:]
            v.pdim = None if p is None or p == 0 else p - 1
            return v
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > self.ndim:
            raise IndexError(f"{len(key)} indices for a {self.ndim}-dim view")
        key = key + (slice(None),) * (self.ndim - len(key))
        addr = self.addr
        shape, strides = [], []
        pdim = None
        for d, (k, n, st) in enumerate(zip(key, self.shape, self.strides)):
            if isinstance(k, (int, np.integer)):
                i = int(k) + (n if k < 0 else 0)
                if not 0 <= i < n:
                    raise IndexError(f"index {k} is out of range for dim {d} of size {n}")
                addr += i * st * self.etype.itemsize
                continue
            if not isinstance(k, slice):
                raise TypeError(f"dim {d}: index with ints and slices, not {type(k).__name__}")
            # A float bound is a TypeError, as numpy's (docs/python.md §Device).
            r = range(*bounds(k, f"dim {d}").indices(n))
            if d == self.pdim:
                pdim = len(shape)
            if len(r):
                addr += r.start * st * self.etype.itemsize
            shape.append(len(r))
            strides.append(st * r.step)
        return TensorView(self.dev, addr, tuple(shape), tuple(strides), self.etype, self.space,
                          self.core, pdim)

    # ----------------------------------------------------------- contents
    def _rows(self) -> tuple[list[int], tuple, tuple]:
        """The view as partition rows: (row base addresses, inner shape,
        inner strides) — one row for a flat view."""
        if self.pdim is None:
            return [self.addr], self.shape, self.strides
        p = self.pdim
        rest_shape = self.shape[:p] + self.shape[p + 1:]
        rest_strides = self.strides[:p] + self.strides[p + 1:]
        rows = [self.addr + i * self.strides[p] * self.etype.itemsize for i in range(self.shape[p])]
        return rows, rest_shape, rest_strides

    def _span(self, shape: tuple, strides: tuple) -> tuple[int, int]:
        lo = sum(st * (n - 1) for n, st in zip(shape, strides) if st < 0 and n > 0)
        hi = sum(st * (n - 1) for n, st in zip(shape, strides) if st > 0 and n > 0)
        return lo, hi

    def _row_step(self, rows: list[int]) -> int:
        """Bytes between consecutive partition rows (0 for one row)."""
        return rows[1] - rows[0] if len(rows) > 1 else 0

    def numpy(self) -> np.ndarray:
        """The view's elements as a new numpy array (C order) of the view's
        shape: 0-d for a fully indexed view (`t[3, 17]`), as numpy. One
        native read for the whole view (all partitions), no Python per
        element."""
        it = self.etype.itemsize
        if 0 in self.shape:
            return np.zeros(self.shape, dtype=self.etype.np_dtype)
        rows, shape, strides = self._rows()
        lo, hi = self._span(shape, strides)
        span_bytes = (hi - lo + 1) * it
        step = self._row_step(rows)
        n = self.dev._n
        if len(rows) == 1:
            raw = n.read_bytes(rows[0] + lo * it, span_bytes)
        elif step > 0:
            raw = n.read_rows(rows[0] + lo * it, len(rows), span_bytes, step)
        else:  # partitions walked downwards: a row at a time
            raw = np.concatenate([n.read_bytes(b + lo * it, span_bytes) for b in rows])
        arr = raw.view(self.etype.np_dtype).reshape(len(rows), -1)
        if lo:
            arr = arr[:, -lo:]
        v = np.lib.stride_tricks.as_strided(arr, shape=(len(rows),) + tuple(shape),
                                            strides=(span_bytes,) + tuple(s * it for s in strides))
        out = v[0] if self.pdim is None else np.moveaxis(v, 0, self.pdim)
        # ascontiguousarray makes a 0-d view 1-d: a fully indexed view
        # reads as numpy's full integer indexing does, 0-d (docs/python.md
        # §dma_copy).
        return np.ascontiguousarray(out).reshape(self.shape)

    def write(self, value: Any) -> None:
        """Writes `value` (broadcast to the view's shape) into the view: one
        native write for a view whose partition rows are contiguous."""
        it = self.etype.itemsize
        src = np.broadcast_to(np.asarray(value).astype(self.etype.np_dtype, copy=False), self.shape)
        rows, shape, strides = self._rows()
        if 0 in self.shape:
            return
        lo, hi = self._span(shape, strides)
        contiguous = all(st == math.prod(shape[d + 1:]) for d, st in enumerate(strides) if shape[d] > 1)
        step = self._row_step(rows)
        if contiguous and lo == 0 and (len(rows) == 1 or step > 0):
            whole = src if self.pdim is None else np.moveaxis(src, self.pdim, 0)
            data = np.ascontiguousarray(whole).reshape(-1).view(np.uint8)
            if len(rows) == 1:
                self.dev._n.write_bytes(rows[0], data)
            else:
                self.dev._n.write_rows(rows[0], data, (hi + 1) * it, step)
            return
        parts = [src] if self.pdim is None else [np.take(src, i, axis=self.pdim) for i in range(len(rows))]
        for base, part in zip(rows, parts):
            raw = np.array(self.dev._n.read_bytes(base + lo * it, (hi - lo + 1) * it)).view(self.etype.np_dtype)
            v = np.lib.stride_tricks.as_strided(raw[-lo:] if lo else raw, shape=shape,
                                                strides=tuple(s * it for s in strides))
            v[...] = part
            self.dev._n.write_bytes(base + lo * it, raw.view(np.uint8))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)


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
        return self.bytes / self.ns if self.ns else 0.0

    def __getitem__(self, k: str) -> Any:
        """The field `k` (`t["cycles"]`)."""
        return getattr(self, k)


def _squeeze2(v: TensorView, name: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The view as 2 dims (rows, columns): size-1 dims dropped, adjacent
    dims merged where their strides allow."""
    merged = [(n, s) for n, s in zip(v.shape, v.strides) if n != 1]
    # Merge adjacent dims (outer stride = inner stride x inner size) only
    # while more than two remain, innermost first.
    i = len(merged) - 2
    while len(merged) > 2 and i >= 0:
        (on, os_), (n, s) = merged[i], merged[i + 1]
        if os_ == s * n:
            merged[i:i + 2] = [(on * n, s)]
        i = min(i, len(merged) - 2) - 1 if os_ != s * n else min(i, len(merged) - 2)
    while len(merged) < 2:
        merged.insert(0, (1, 0))
    if len(merged) > 2:
        orig = [d for d, n in enumerate(v.shape) if n != 1]
        raise ValueError(
            f"{name}: shape {v.shape} strides {v.strides} needs {len(merged)} dimensions; a DMA word "
            f"has 2 (dims {orig[:-2]} cannot merge into one stride: their strides are not "
            f"size-multiples of the next)")
    (r, rs), (c, cs) = merged
    return (r, c), (rs, cs)


_U16 = 0xFFFF
_I32 = (-(1 << 31), (1 << 31) - 1)


class _TooManyElements(ValueError):
    """A dimension over a word's 16-bit element count: `dma_copy` splits
    the copy, `plan_word` (one word) reports it."""


def _check_pair(name: str, shape: tuple[int, int], strides: tuple[int, int]) -> None:
    for d, n in enumerate(shape):
        if n > _U16:
            raise _TooManyElements(f"{name}: dim {d} has {n} elements; a DMA word counts at most {_U16} per dim")
    for d, s in enumerate(strides):
        if not _I32[0] <= s <= _I32[1]:
            raise ValueError(f"{name}: dim {d} stride {s} elements does not fit the word's signed 32 bits")


def _pair(a: int, b: int) -> str:
    return f"[{a},{b}]"


def plan_word(dst: TensorView, src: TensorView, dtype: Any = None) -> tuple[str, list[tuple[str, str]]]:
    """The instruction word (kind, fields) that copies `src` into `dst`:
    DIRECT2D for any 2-D pattern, DIRECT2D_XPOSE when `src` is a transposed
    view whose rows are contiguous and `dst`'s rows are too."""
    if src.shape != dst.shape:
        raise ValueError(f"dma_copy: src shape {src.shape} != dst shape {dst.shape}")
    se = src.etype if dtype is None else elem_type(dtype)
    de = dst.etype if dtype is None else elem_type(dtype)
    for et, which in ((se, "src"), (de, "dst")):
        if et.word_dtype is None:
            raise ValueError(f"dma_copy: {which} dtype {et.name} has no DMA DTYPE code")
    (sr, sc), (srs, scs) = _squeeze2(src, "src")
    (dr, dc), (drs, dcs) = _squeeze2(dst, "dst")
    xpose = (se == de and se.itemsize in (2, 4) and len([n for n in src.shape if n != 1]) == 2
             and scs != 1 and srs == 1 and dcs == 1 and sr % 16 == 0 and dst.space != "flat")
    if xpose:
        # src = U.T with U (rows=sc, cols=sr) row-major: U's rows become
        # dst's columns. Tiles of 16 U-rows (docs/instruction-words.md).
        u_rows, u_cols, u_row_step = sc, sr, scs
        max_cols = 128 if se.itemsize == 2 else 64
        if u_rows % 16 == 0 and u_cols <= max_cols and (dst.addr % 32) == 0:
            fields = [
                ("in_dtype", se.word_dtype), ("out_dtype", de.word_dtype),
                ("src_start_addr", f"imm:{src.addr:#x}"),
                ("src_step_elem", _pair(1, u_row_step)),
                ("src_num_elem", _pair(u_cols, u_rows)),
                ("tile_src_row_step", str(16 * u_row_step)),
                ("dst_start_addr", f"imm:{dst.addr:#x}"),
                ("dst_step_elem", _pair(1, drs)),
                ("dst_num_elem", _pair(dc, dr)),
                ("tile_src_rows", "16"), ("tile_src_cols", str(u_cols)),
            ]
            _check_pair("src", (u_cols, u_rows), (1, u_row_step))
            _check_pair("dst", (dc, dr), (1, drs))
            return "DIRECT2D_XPOSE", fields
    _check_pair("src", (sc, sr), (scs, srs))
    _check_pair("dst", (dc, dr), (dcs, drs))
    fields = [
        ("src_start_addr", f"imm:{src.addr:#x}"),
        ("src_step_elem", _pair(scs, srs)),
        ("src_num_elem", _pair(sc, sr)),
        ("src_elem_size", str(se.itemsize)),
        ("dst_start_addr", f"imm:{dst.addr:#x}"),
        ("dst_step_elem", _pair(dcs, drs)),
        ("dst_num_elem", _pair(dc, dr)),
        ("dst_elem_size", str(de.itemsize)),
        ("in_dtype", se.word_dtype), ("out_dtype", de.word_dtype),
    ]
    return "DIRECT2D", fields


_RUN_MAX = 64 * 1024
_PARTITIONED = ("sbuf", "psum")


def _runs(dst: TensorView, src: TensorView, itemsize: int) -> int:
    """At most the descriptor pairs the firmware makes of a DIRECT2D copy
    of `src` into `dst` (docs/firmware.md §DIRECT2D expansion): one a
    maximal run contiguous on both sides and at most 64 KiB, one an
    element when a side's element step is not 1."""
    n = math.prod(dst.shape)
    if n == 0:
        return 0
    (sr, sc), (srs, scs) = _squeeze2(src, "src")
    (dr, dc), (drs, dcs) = _squeeze2(dst, "dst")
    if scs != 1 or dcs != 1:
        return n
    # A side breaks the stream at each row start unless its rows follow
    # one another (whole rows are one run); both sides' breaks count once.
    cuts = [c for r, c, rs in ((sr, sc, srs), (dr, dc, drs)) if r > 1 and rs != c]
    breaks = sum(n // c - 1 for c in cuts)
    if len(cuts) == 2:
        breaks -= n // math.lcm(*cuts) - 1
    # Each 64 KiB cut adds at most one run.
    return 1 + breaks + n * itemsize // _RUN_MAX


def _engine_share(dev: Any, dst: TensorView, src: TensorView, itemsize: int, runs: int,
                  engines: int) -> int:
    """At most the pairs of the copy one engine gets: a run goes to the
    engine of its destination's (else its source's) SBUF/PSUM partition,
    partitions 8e..8e+7 to engine e folded over the `engines` allowed,
    other runs round robin (docs/firmware.md §DIRECT2D expansion)."""
    side = dst if dst.space in _PARTITIONED else src if src.space in _PARTITIONED else None
    if side is None:
        return -(-runs // engines)
    if side.pdim is None or side.shape[side.pdim] <= 1:
        return runs  # one partition: one engine
    d = side.pdim
    key = (slice(None),) * d + (0,)
    try:  # every partition's share of the copy has the same geometry
        per_partition = _runs(dst[key], src[key], itemsize)
    except ValueError:
        per_partition = runs
    p0 = dev.addr(f"tpb{side.core}.{side.space}[p0]")
    stride = dev.addr(f"tpb{side.core}.{side.space}[p1]") - p0
    first = (side.addr - p0) // stride
    step = side.strides[d] * side.etype.itemsize // stride
    groups: dict[int, int] = {}
    for i in range(side.shape[d]):
        g = ((first + i * step) // 8) % engines
        groups[g] = groups.get(g, 0) + 1
    return min(runs, per_partition * max(groups.values()))


# Planned words by the views' geometry (everything but the two addresses,
# which `_native.Device.copy_word` puts into the word): a loop over tiles
# plans and encodes its word once.
_PLANS: dict[tuple, tuple[str, bytes, int]] = {}
_PLANS_MAX = 4096


def _geometry(v: TensorView) -> tuple:
    return (v.shape, v.strides, v.etype, v.space, v.pdim)


def dma_copy(dev: Any, dst: TensorView, src: TensorView, core: int = 0, engines: int = 16,
             dtype: Any = None, semaphore: int = 1, queue: int = 0) -> Timing:
    """Copies `src` into `dst` with one DMA instruction word on core
    `core`'s firmware, spread over `engines` engines, and runs the device
    until it is idle. Returns the timing. With `dtype`, both sides are
    read as that type; views of different dtypes convert (DIRECT2D
    in_dtype/out_dtype). A word the firmware refuses raises `DeviceError`.

    The word is planned once per geometry (shapes, strides, dtypes) and
    reused with new addresses: one native call per copy (docs/python.md
    §Speed). A dimension over 65535 elements splits the copy into several
    words (`Timing.words`), and so does a copy with more descriptors than
    the engines' rings hold: the firmware refuses such a word
    (docs/firmware.md §Refusals), so it is split as a compiler would."""
    key = (_geometry(dst), _geometry(src), dtype, semaphore, dst.addr % 32 == 0)
    plan = _PLANS.get(key)
    if plan is None:
        from .isa import Word

        try:
            kind, fields = plan_word(dst, src, dtype)
        except _TooManyElements:
            return _split_copy(dev, dst, src, core, engines, dtype, semaphore, queue)
        if kind == "DIRECT2D_XPOSE":
            fields.append(("semaphore", str(semaphore)))
        else:
            fields += [("semaphore", str(semaphore)), ("sem_increment", "1")]
        # The descriptor pairs a DIRECT2D word makes at most (the ring check
        # below); an XPOSE word's size is bounded by its tiles.
        runs = 0
        if kind == "DIRECT2D":
            se = src.etype if dtype is None else elem_type(dtype)
            de = dst.etype if dtype is None else elem_type(dtype)
            runs = _runs(dst, src, max(se.itemsize, de.itemsize))
        plan = (kind, Word.from_fields(kind, fields).to_bytes(), runs)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    kind, template, runs = plan
    dev.configure_dge(core, engines, queue)
    # An engine's share and its semaphore write must fit its ring
    # (CARVEOUT_SIZE_DESCS, docs/firmware.md §Refusals): more is split.
    cap = dev._dge[integer(core, "core", 0, U8)][0] >> 16
    if runs + 1 > cap and runs > 1:
        se = src.etype if dtype is None else elem_type(dtype)
        de = dst.etype if dtype is None else elem_type(dtype)
        share = _engine_share(dev, dst, src, max(se.itemsize, de.itemsize), runs,
                              integer(engines, "engines", 1, 16))
        if share + 1 > cap:
            return _split_copy(dev, dst, src, core, engines, dtype, semaphore, queue)
    n = dev._n
    cycles, descs, packets, stop, rejected = n.copy_word(core, template, src.addr, dst.addr)
    if rejected or stop == "stalled" or descs == 0:
        from .isa import Word

        word = Word.decode(template)
        word["src_start_addr"] = f"imm:{src.addr:#x}"
        word["dst_start_addr"] = f"imm:{dst.addr:#x}"
        _word_ran(dev, "dma_copy", core, word.asm(), rejected, stop)
    return Timing(cycles=cycles, ns=cycles / n.clock_ghz, bytes=dst.nbytes,
                  descriptors=descs, packets=packets, word=kind)


def _word_ran(dev: Any, what: str, core: int, asm: str, rejected: bool, stop: str) -> None:
    """Raises `DeviceError` unless the word `what` queued on `core` ran:
    refused (with the firmware's reason), the device stalled, or the word
    still held behind work that never ends (docs/firmware.md §Work left at
    the end) — never a `Timing` for bytes that did not move."""
    from ._native import DeviceError

    fw = dev.report().get("firmware", {}).get(f"tpb{core}", {})
    if rejected:
        refused = fw.get("refused") or [{}]
        reason = refused[-1].get("reason", "no reason recorded")
        raise DeviceError(f"{what}: core {core}'s firmware rejected the word ({asm}): {reason}")
    if stop == "stalled":
        raise DeviceError(f"{what}: the device stalled at cycle {dev._n.now} "
                          f"(see dev.report()['stall']); the word: {asm}")
    if fw.get("queued", 0) or fw.get("in_flight", 0):
        raise DeviceError(f"{what}: the word never ran: core {core}'s firmware still holds "
                          f"{fw.get('queued', 0)} queued and {fw.get('in_flight', 0)} in-flight "
                          f"word(s) with the device idle (a wait nothing can end; dev.report()['firmware']); "
                          f"the word: {asm}")


def _split_copy(dev: Any, dst: TensorView, src: TensorView, core: int, engines: int,
                dtype: Any, semaphore: int, queue: int) -> Timing:
    """A copy with a dimension over 65535 elements, or more descriptors
    than the rings hold, as several words: the
    outermost dimension of more than one element is halved until every
    piece fits one word (a piece of one element per dimension always
    does). The pieces run one after another; the timing adds them up."""
    d = next(k for k, n in enumerate(dst.shape) if n > 1)
    half = (dst.shape[d] + 1) // 2
    parts = []
    for sl in (slice(0, half), slice(half, dst.shape[d])):
        key = (slice(None),) * d + (sl,)
        parts.append(dma_copy(dev, dst=dst[key], src=src[key], core=core, engines=engines,
                              dtype=dtype, semaphore=semaphore, queue=queue))
    return Timing(cycles=sum(p.cycles for p in parts), ns=sum(p.ns for p in parts),
                  bytes=sum(p.bytes for p in parts),
                  descriptors=sum(p.descriptors for p in parts),
                  packets=sum(p.packets for p in parts), word=parts[0].word,
                  words=sum(p.words for p in parts))
