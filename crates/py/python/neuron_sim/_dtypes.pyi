"""Type stubs of neuron_sim._dtypes: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any, NamedTuple

class ElemType(NamedTuple):
    """An element type: its name, size in bytes, the instruction word's DTYPE
    name (None where the words have none) and the numpy dtype to view bytes
    as (uint16 for bfloat16 without ml_dtypes)."""
    name: str
    itemsize: int
    word_dtype: str | None
    np_dtype: Any

def elem_type(dtype: Any) -> ElemType:
    '''The element type of `dtype`: a name ("bfloat16", "float32"), a numpy
    dtype or scalar type (np.float32), or an ml_dtypes type. The name
    "float" is refused as ambiguous (numpy's float64, C's float32).'''
