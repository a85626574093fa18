"""`dma_gather`: rows of a table gathered by an index array with INDIRECT1D
words (docs/python.md §dma_gather, docs/firmware.md §INDIRECT1D expansion)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._views import Timing, TensorView

#: Indices one INDIRECT1D word takes at most (docs/firmware.md).
MAX_INDICES = 4096
_INDEX_BYTES = 4 * MAX_INDICES
#: Descriptors of one engine's ring (`Device.configure_dge`'s default).
_RING_DESCRIPTORS = 256


def _rows(v: TensorView, name: str) -> tuple[int, int, int]:
    """(rows, row bytes, row stride bytes) of a view of rows: 2-D with
    contiguous rows, or 1-D (one element a row)."""
    it = v.etype.itemsize
    if v.ndim == 1:
        return v.shape[0], it, v.strides[0] * it
    if v.ndim != 2:
        raise ValueError(f"dma_gather: {name} has {v.ndim} dims; it is rows (2 dims: rows, columns)")
    if v.shape[1] > 1 and v.strides[1] != 1:
        raise ValueError(f"dma_gather: {name} dim 1 has stride {v.strides[1]} elements; "
                         "a row is contiguous (stride 1)")
    return v.shape[0], v.shape[1] * it, v.strides[0] * it


def _step(name: str, stride_bytes: int, row_bytes: int) -> int:
    if row_bytes > 0xFFFF:
        raise ValueError(f"dma_gather: {name} rows are {row_bytes} bytes; a word's elem_size "
                         "holds at most 65535")
    if stride_bytes % row_bytes:
        raise ValueError(f"dma_gather: {name} dim 0 stride {stride_bytes} bytes is not a multiple "
                         f"of its {row_bytes}-byte rows (INDIRECT1D steps whole rows)")
    return stride_bytes // row_bytes


def dma_gather(dev: Any, dst: TensorView, src: TensorView, indices: Any, core: int = 0,
               engines: int = 16, index_offset: int | None = None, semaphore: int = 1,
               queue: int = 0) -> Timing:
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
    from .isa import Word

    idx = np.asarray(indices)
    if idx.ndim != 1:
        raise ValueError(f"dma_gather: indices have {idx.ndim} dims; they are a vector")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"dma_gather: indices are {idx.dtype}, not integers")
    n_src, row_bytes, src_stride = _rows(src, "src")
    n_dst, dst_row_bytes, dst_stride = _rows(dst, "dst")
    if src.etype != dst.etype:
        raise ValueError(f"dma_gather: src is {src.etype.name} and dst {dst.etype.name}; a gather "
                         "moves rows unchanged")
    if src.etype.word_dtype is None:
        raise ValueError(f"dma_gather: dtype {src.etype.name} has no DMA DTYPE code")
    if row_bytes != dst_row_bytes:
        raise ValueError(f"dma_gather: src rows are {row_bytes} bytes, dst rows {dst_row_bytes}")
    if n_dst != idx.size:
        raise ValueError(f"dma_gather: {idx.size} indices for {n_dst} dst rows")
    bad = np.flatnonzero((idx < 0) | (idx >= n_src))
    if bad.size:
        k = int(bad[0])
        raise IndexError(f"dma_gather: indices[{k}] = {int(idx[k])} is outside the table's "
                         f"{n_src} rows")
    src_step = _step("src", src_stride, row_bytes)
    dst_step = _step("dst", dst_stride, row_bytes)
    geom = dev._n.partitions(f"tpb{core}.sbuf")
    if geom is None:
        raise ValueError(f"dma_gather: tpb{core}.sbuf has no partitions")
    populated = geom[2]
    off = populated - _INDEX_BYTES if index_offset is None else int(index_offset)
    if off < 0 or off % 4 or off + 4 * min(idx.size, MAX_INDICES) > populated:
        raise ValueError(f"dma_gather: index_offset {off:#x} does not hold the indices inside "
                         f"partition 0's {populated:#x} bytes (4-byte aligned)")
    idx_addr = dev.addr(f"tpb{core}.sbuf[p0]") + off
    dev.configure_dge(core, engines, queue)
    per_word = min(MAX_INDICES, engines * (_RING_DESCRIPTORS - 1))
    total: Timing | None = None
    for start in range(0, max(idx.size, 1), per_word):
        chunk = idx[start:start + per_word]
        if chunk.size == 0:
            break
        dev._n.write_bytes(idx_addr, np.ascontiguousarray(chunk, dtype="<u4").view(np.uint8))
        word = Word.from_fields("INDIRECT1D", [
            ("semaphore", str(semaphore)), ("sem_increment", "1"),
            ("idx_num_active_channels", "128"),
            ("flags.indirect_mode", "SRC_INDIRECTION"),
            ("src_start_addr", f"imm:{src.addr:#x}"), ("src_step_elem", str(src_step)),
            ("src_num_elem", str(min(n_src, 0xFFFF))), ("src_elem_size", str(row_bytes)),
            ("dst_start_addr", "imm:0x0"), ("dst_step_elem", str(dst_step)),
            ("dst_num_elem", str(chunk.size)), ("dst_elem_size", str(row_bytes)),
            ("src_idx_start_addr", f"imm:sbuf:q0:{off:#x}"),
            ("in_dtype", src.etype.word_dtype), ("out_dtype", dst.etype.word_dtype),
        ])
        dst_addr = dst.addr + start * dst_stride
        cycles, descs, packets, stop, rejected = dev._n.copy_word(
            core, word.to_bytes(), src.addr, dst_addr)
        if rejected or stop == "stalled" or descs == 0:
            from ._views import _word_ran

            _word_ran(dev, "dma_gather", core, f"{word.asm()}, dst imm:{dst_addr:#x}", rejected, stop)
        t = Timing(cycles=cycles, ns=cycles / dev.clock_ghz, bytes=chunk.size * row_bytes,
                   descriptors=descs, packets=packets, word="INDIRECT1D")
        total = t if total is None else Timing(
            cycles=total.cycles + t.cycles, ns=total.ns + t.ns, bytes=total.bytes + t.bytes,
            descriptors=total.descriptors + t.descriptors, packets=total.packets + t.packets,
            word="INDIRECT1D", words=total.words + 1)
    if total is None:
        return Timing(cycles=0, ns=0.0, bytes=0, descriptors=0, packets=0, word="INDIRECT1D",
                      words=0)
    return total
