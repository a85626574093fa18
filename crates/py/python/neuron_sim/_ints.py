"""Integer arguments (docs/python.md §Device): an int, a numpy integer or
anything with `__index__` — never a float, which would be truncated — within
the range the simulator takes, or an error naming the argument."""

from __future__ import annotations

import operator
from typing import Any

U8 = (1 << 8) - 1
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1


def integer(value: Any, name: str, lo: int = 0, hi: int = U64) -> int:
    """`value` as an int in `lo..=hi`: `TypeError` for a non-integer,
    `ValueError` out of range, both naming the argument `name`."""
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__} ({value!r})") from None
    if not lo <= i <= hi:
        raise ValueError(f"{name} = {i} is out of range: {lo} ..= {hi:#x}")
    return i


def shape(value: Any, name: str = "shape") -> tuple[int, ...]:
    """A shape as numpy takes one, an integer or a sequence of them, as a
    tuple of ints >= 0: a float is a `TypeError` (numpy's rule; never
    truncated), a negative size a `ValueError`, both naming the argument
    (`shape[0]`)."""
    try:
        return (integer(operator.index(value), name),)
    except TypeError:
        pass
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an integer or a sequence of integers, not {type(value).__name__}")
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer or a sequence of integers, not "
                        f"{type(value).__name__} ({value!r})") from None
    return tuple(integer(v, f"{name}[{d}]") for d, v in enumerate(items))


def bounds(key: slice, name: str) -> slice:
    """`key` with its start, stop and step ints or None, as numpy takes a
    slice: a float bound is a `TypeError` naming it (`{name} stop`), never
    truncated."""
    out = []
    for part in ("start", "stop", "step"):
        v = getattr(key, part)
        if v is not None:
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"{name} {part} must be an integer or None, not "
                                f"{type(v).__name__} ({v!r})") from None
        out.append(v)
    return slice(*out)
