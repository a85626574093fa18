"""Type stubs of neuron_sim._ints: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any

U8: int
U32: int
U64: int

def integer(value: Any, name: str, lo: int = 0, hi: int = ...) -> int:
    """`value` as an int in `lo..=hi`: `TypeError` for a non-integer,
    `ValueError` out of range, both naming the argument `name`."""

def shape(value: Any, name: str = "shape") -> tuple[int, ...]:
    """A shape as numpy takes one, an integer or a sequence of them, as a
    tuple of ints >= 0: a float is a `TypeError` (numpy's rule; never
    truncated), a negative size a `ValueError`, both naming the argument
    (`shape[0]`)."""

def bounds(key: slice, name: str) -> slice:
    """`key` with its start, stop and step ints or None, as numpy takes a
    slice: a float bound is a `TypeError` naming it (`{name} stop`), never
    truncated."""
