"""Type stubs of neuron_sim._ints: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any

U8: int
U32: int
U64: int

def integer(value: Any, name: str, lo: int = 0, hi: int = ...) -> int:
    """`value` as an int in `lo..=hi`: `TypeError` for a non-integer,
    `ValueError` out of range, both naming the argument `name`."""
