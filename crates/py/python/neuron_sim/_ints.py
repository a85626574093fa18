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
