"""16-byte DMA descriptors (docs/descriptors.md): build them as the trace's
`desc` statement does (`tx`, `rx`) and decode them as
`neuron-sim decode --desc --json` does.

A descriptor is placed by writing its bytes into a ring slot
(`dev.write(ring_base + 16 * slot, tx(...))`) and posted by the queue's
doorbell register (`dev.reg("eng0.m2s.q0.TDRTP_INC").set(n)`), as
docs/python.md §Descriptors shows."""

from __future__ import annotations

import json
from typing import Optional

from . import _native
from ._ints import U8, U32, U64, integer


def tx(
    len: int,
    src: int,
    *,
    first: bool = False,
    last: bool = False,
    dmb: bool = False,
    int_en: bool = False,
    concat: bool = False,
    ring_id: int = 1,
    word1: Optional[int] = None,
) -> bytes:
    """An M2S (TX) descriptor reading `len` bytes (1..=65536) at `src`.
    Word 1 is the default copy command unless `word1` is given; `ring_id`
    defaults to 1, the ring id of a ring's first pass after reset."""
    return _native.encode_desc(
        "tx", integer(len, "len", 0, U32), integer(src, "src", 0, U64), first, last, int_en,
        dmb, False, concat, integer(ring_id, "ring_id", 0, U8),
        None if word1 is None else integer(word1, "word1", 0, U32),
    )


def rx(
    len: int,
    dst: int,
    *,
    first: bool = False,
    last: bool = False,
    sow: bool = False,
    int_en: bool = False,
    concat: bool = False,
    ring_id: int = 1,
) -> bytes:
    """An S2M (RX) descriptor writing `len` bytes (1..=65536) at `dst`."""
    return _native.encode_desc(
        "rx", integer(len, "len", 0, U32), integer(dst, "dst", 0, U64), first, last, int_en,
        False, sow, concat, integer(ring_id, "ring_id", 0, U8), None,
    )


def decode(data: bytes) -> dict:
    """The fields of a 16-byte descriptor (memory order)."""
    return json.loads(_native.decode_desc_json(bytes(data)))
