"""Type stubs of neuron_sim.desc: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any

def decode(data: bytes) -> dict[str, Any]:
    """The fields of a 16-byte descriptor (memory order)."""
