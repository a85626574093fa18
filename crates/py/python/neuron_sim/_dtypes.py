"""Element types by the names numpy and ml_dtypes give them."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class ElemType(NamedTuple):
    """An element type: its name, size in bytes, the instruction word's DTYPE
    name (None where the words have none) and the numpy dtype to view bytes
    as (uint16 for bfloat16 without ml_dtypes)."""

    name: str
    itemsize: int
    word_dtype: str | None
    np_dtype: Any


def _ml(name: str, fallback: Any) -> Any:
    try:
        import ml_dtypes  # type: ignore[import-not-found]

        return np.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError):
        return np.dtype(fallback)


_TABLE = {
    "int8": (1, "INT8", "int8"),
    "uint8": (1, "UINT8", "uint8"),
    "bfloat16": (2, "BFLOAT16", None),
    "float16": (2, "FP16", "float16"),
    "int32": (4, "INT32", "int32"),
    "uint32": (4, None, "uint32"),
    "float32": (4, "FP32", "float32"),
    "float8_e4m3": (1, "FP8_EXP4", None),
    "float8_e5m2": (1, "FP8_EXP5", None),
    "int16": (2, None, "int16"),
    "uint16": (2, None, "uint16"),
    "int64": (8, None, "int64"),
    "uint64": (8, None, "uint64"),
    "float64": (8, None, "float64"),
}
_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp32": "float32",
    "f4": "float32",
    "f2": "float16",
    "i4": "int32",
    "u1": "uint8",
    "i1": "int8",
    "float8_e4m3fn": "float8_e4m3",
    "fp8_e4m3": "float8_e4m3",
    "fp8_e5m2": "float8_e5m2",
}


def elem_type(dtype: Any) -> ElemType:
    """The element type of `dtype`: a name ("bfloat16", "float32"), a numpy
    dtype or scalar type (np.float32), or an ml_dtypes type. The name
    "float" is refused as ambiguous (numpy's float64, C's float32)."""
    if isinstance(dtype, ElemType):
        return dtype
    if isinstance(dtype, str):
        name = dtype.strip().lower()
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError as e:
            raise ValueError(f"dtype {dtype!r} is not a numpy or ml_dtypes type") from e
    if name == "float":
        # numpy's "float" is float64, C's and torch's float32; the trace
        # language names widths only (FP32, docs/instruction-words.md DTYPE).
        raise ValueError(f"dtype {dtype!r} is ambiguous (numpy reads it as float64, C and torch as "
                         f"float32): name the width, float32 (fp32, f4) or float64")
    name = _ALIASES.get(name, name)
    if name not in _TABLE:
        known = ", ".join(sorted(_TABLE))
        raise ValueError(f"dtype {dtype!r} is not one of {known}")
    size, word, npname = _TABLE[name]
    if npname is None:
        if name == "bfloat16":
            npd = _ml("bfloat16", np.uint16)
        elif name == "float8_e4m3":
            npd = _ml("float8_e4m3fn", np.uint8)
        else:
            npd = _ml(name, np.uint8)
    else:
        npd = np.dtype(npname)
    return ElemType(name, size, word, npd)
