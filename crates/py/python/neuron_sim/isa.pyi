"""Type stubs of neuron_sim.isa: the signatures and docstrings of the
Python layer (docs/python.md)."""

from typing import Any, ClassVar, Iterable

__all__ = ['Word', 'Direct2d', 'Indirect1d', 'Direct2dXpose', 'GatherXpose', 'RdmaDescGen', 'RdmaDescStart', 'asm', 'disasm', 'decode']

class Word:
    '''One instruction word: `kind` and its fields as text-form values
    (`word["src_num_elem"] == "[4096,128]"`).'''
    KIND: ClassVar[str]
    kind: str
    def __init__(self, fields: dict[str, Any] | None = None, **kwargs: Any) -> None: ...
    @classmethod
    def defaults(cls, kind: str) -> dict[str, str]:
        """The fields of `kind` with the defaults `asm` uses."""
    @classmethod
    def from_fields(cls, kind: str, fields: Iterable[tuple[str, Any]]) -> Word:
        '''A word of `kind` (e.g. "DIRECT2D") from (path, value) pairs.'''
    def __getitem__(self, path: str) -> str:
        """The text-form value of the field at dotted `path`."""
    def __setitem__(self, path: str, value: Any) -> None: ...
    def __getattr__(self, name: str) -> str: ...
    @property
    def fields(self) -> dict[str, str]:
        """Every leaf field by dotted seed path, in byte order."""
    def to_bytes(self) -> bytes:
        """The 64 bytes in memory order."""
    @classmethod
    def decode(cls, data: bytes) -> Word:
        """The word 64 bytes hold (rejecting what the hardware would,
        naming the field)."""
    def asm(self) -> str:
        """The canonical text form (one line)."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Direct2d(Word):
    """DIRECT2D (0xb8): a 2-D strided copy, optionally with a dtype
    conversion or compute op."""
    KIND: ClassVar[str]

class Indirect1d(Word):
    """INDIRECT1D (0xbb): gather / scatter / scatter-add through an index
    array."""
    KIND: ClassVar[str]

class Direct2dXpose(Word):
    """DIRECT2D_XPOSE (0xbd): a 2-D transpose in 16-row tiles."""
    KIND: ClassVar[str]

class GatherXpose(Word):
    """GATHER_XPOSE (0xf1): gather rows and transpose them."""
    KIND: ClassVar[str]

class RdmaDescGen(Word):
    """RDMA_DESC_GEN (0xf0 / 8): generate a remote transfer's descriptors."""
    KIND: ClassVar[str]

class RdmaDescStart(Word):
    """RDMA_DESC_START (0xf0 / 9): start a generated remote transfer."""
    KIND: ClassVar[str]

def asm(text: str) -> bytes:
    """Assembles the text form (one word a line) into bytes."""
def disasm(data: bytes) -> str:
    """The text form of a stream of 64-byte words."""
def decode(data: bytes) -> list[Word]:
    """Every word of a stream of 64-byte words."""
