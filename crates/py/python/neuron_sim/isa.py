"""The six 64-byte DMA instruction words (docs/instruction-words.md), one
class each, fields by their seed names; fields left out take the defaults
`asm` gives them. Group fields are dotted (`events.wait_mode`); as keyword
arguments write the dot as a double underscore (`events__wait_mode=...`)
or pass `fields={"events.wait_mode": ...}`.

    >>> w = Direct2d(semaphore=1, src_num_elem=(4096, 128))
    >>> Word.decode(w.to_bytes()) == w
    True
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable

from . import _native

__all__ = ["Word", "Direct2d", "Indirect1d", "Direct2dXpose", "GatherXpose", "RdmaDescGen",
           "RdmaDescStart", "asm", "disasm", "decode"]


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (tuple, list)):
        return "[" + ",".join(_text(x) for x in v) + "]"
    return str(v)


class Word:
    """One instruction word: `kind` and its fields as text-form values
    (`word["src_num_elem"] == "[4096,128]"`)."""

    KIND: ClassVar[str] = ""
    _DEFAULTS: ClassVar[dict[str, dict[str, str]]] = {}

    def __init__(self, fields: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not self.KIND:
            raise TypeError("make a word with a subclass (Direct2d, ...) or Word.from_fields")
        self.kind = self.KIND
        self._values: dict[str, str] = dict(self.defaults(self.KIND))
        given = dict(fields or {})
        given.update({k.replace("__", "."): v for k, v in kwargs.items()})
        for k, v in given.items():
            self[k] = v
        # Checked now: a bad value fails at construction, naming the field.
        self._bytes = _native.encode_word(self.kind, self._changed())

    @classmethod
    def defaults(cls, kind: str) -> dict[str, str]:
        """The fields of `kind` with the defaults `asm` uses."""
        if kind not in cls._DEFAULTS:
            cls._DEFAULTS[kind] = dict(_native.word_fields(kind))
        return cls._DEFAULTS[kind]

    @classmethod
    def from_fields(cls, kind: str, fields: Iterable[tuple[str, Any]]) -> "Word":
        """A word of `kind` (e.g. "DIRECT2D") from (path, value) pairs."""
        sub = _KINDS.get(kind.upper())
        if sub is None:
            raise ValueError(f"unknown instruction word {kind!r} (expected one of {', '.join(_KINDS)})")
        return sub(fields=dict(fields))

    def _changed(self) -> list[tuple[str, str]]:
        d = self.defaults(self.kind)
        return [(k, v) for k, v in self._values.items() if d.get(k) != v]

    def __getitem__(self, path: str) -> str:
        """The text-form value of the field at dotted `path`."""
        return self._values[self._path(path)]

    def __setitem__(self, path: str, value: Any) -> None:
        self._values[self._path(path)] = _text(value)
        self._bytes = None

    def __getattr__(self, name: str) -> str:
        values = self.__dict__.get("_values")
        if values is not None:
            path = name.replace("__", ".")
            if path in values:
                return values[path]
        raise AttributeError(name)

    def _path(self, path: str) -> str:
        if path in self._values:
            return path
        groups = sorted({k.split(".")[0] for k in self._values})
        raise ValueError(f"{self.kind} has no field {path!r} (fields: {', '.join(groups)})")

    @property
    def fields(self) -> dict[str, str]:
        """Every leaf field by dotted seed path, in byte order."""
        return dict(self._values)

    def to_bytes(self) -> bytes:
        """The 64 bytes in memory order."""
        if self._bytes is None:
            self._bytes = _native.encode_word(self.kind, self._changed())
        return self._bytes

    @classmethod
    def decode(cls, data: bytes) -> "Word":
        """The word 64 bytes hold (rejecting what the hardware would,
        naming the field)."""
        kind, leaves = _native.decode_word(bytes(data))
        w = _KINDS[kind].__new__(_KINDS[kind])
        w.kind = kind
        w._values = {p: t for p, t, _ in leaves}
        w._bytes = bytes(data)
        return w

    def asm(self) -> str:
        """The canonical text form (one line)."""
        return disasm(self.to_bytes()).strip()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Word) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        return f"<{self.asm()}>"


class Direct2d(Word):
    """DIRECT2D (0xb8): a 2-D strided copy, optionally with a dtype
    conversion or compute op."""

    KIND = "DIRECT2D"


class Indirect1d(Word):
    """INDIRECT1D (0xbb): gather / scatter / scatter-add through an index
    array."""

    KIND = "INDIRECT1D"


class Direct2dXpose(Word):
    """DIRECT2D_XPOSE (0xbd): a 2-D transpose in 16-row tiles."""

    KIND = "DIRECT2D_XPOSE"


class GatherXpose(Word):
    """GATHER_XPOSE (0xf1): gather rows and transpose them."""

    KIND = "GATHER_XPOSE"


class RdmaDescGen(Word):
    """RDMA_DESC_GEN (0xf0 / 8): generate a remote transfer's descriptors."""

    KIND = "RDMA_DESC_GEN"


class RdmaDescStart(Word):
    """RDMA_DESC_START (0xf0 / 9): start a generated remote transfer."""

    KIND = "RDMA_DESC_START"


_KINDS: dict[str, type[Word]] = {c.KIND: c for c in (Direct2d, Indirect1d, Direct2dXpose, GatherXpose,
                                                      RdmaDescGen, RdmaDescStart)}


def asm(text: str) -> bytes:
    """Assembles the text form (one word a line) into bytes."""
    return _native.asm(text)


def disasm(data: bytes) -> str:
    """The text form of a stream of 64-byte words."""
    return _native.disasm(bytes(data))


def decode(data: bytes) -> list[Word]:
    """Every word of a stream of 64-byte words."""
    data = bytes(data)
    if len(data) % 64:
        raise ValueError(f"{len(data)} bytes are not whole 64-byte words")
    return [Word.decode(data[i:i + 64]) for i in range(0, len(data), 64)]
