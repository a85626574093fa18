"""Type stubs of neuron_sim.desc: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any, Optional

def tx(
    len: int,
    src: int,
    *,
    first: bool = ...,
    last: bool = ...,
    dmb: bool = ...,
    int_en: bool = ...,
    concat: bool = ...,
    ring_id: int = ...,
    word1: Optional[int] = ...,
) -> bytes:
    """An M2S (TX) descriptor reading `len` bytes (1..=65536) at `src`."""

def rx(
    len: int,
    dst: int,
    *,
    first: bool = ...,
    last: bool = ...,
    sow: bool = ...,
    int_en: bool = ...,
    concat: bool = ...,
    ring_id: int = ...,
) -> bytes:
    """An S2M (RX) descriptor writing `len` bytes (1..=65536) at `dst`."""

def decode(data: bytes) -> dict[str, Any]:
    """The fields of a 16-byte descriptor (memory order)."""
