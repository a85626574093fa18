"""16-byte DMA descriptors (docs/descriptors.md): decode as
`neuron-sim decode --desc --json` does."""

from __future__ import annotations

import json

from . import _native


def decode(data: bytes) -> dict:
    """The fields of a 16-byte descriptor (memory order)."""
    return json.loads(_native.decode_desc_json(bytes(data)))
