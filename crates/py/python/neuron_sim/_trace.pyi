"""Type stubs of neuron_sim._trace: the signatures and docstrings of the
Python layer (docs/python.md)."""

from collections.abc import Mapping
from typing import Any, Iterator

class Report(Mapping[str, Any]):
    '''The report of a run: the same data as `neuron-sim run --json` (less
    `schema_version` and the host wall-clock `host_timing`), subscriptable
    like that dict (`rep["cycles"]`, `rep["steps"][0]`).'''
    exit_code: int
    def __init__(self, data: dict[str, Any], exit_code: int) -> None: ...
    def __getitem__(self, k: str) -> Any:
        """The report field `k` (`rep["cycles"]`)."""
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]:
        """The report as a plain dict (a copy)."""
    @property
    def ok(self) -> bool:
        """Every expectation held and nothing was bad input."""

def run_trace(path_or_text: Any, timing: str | None = None, timing_only: bool = False, soc_map: str | None = None, csr_maps: str | None = None, name: str | None = None) -> Report:
    """Runs a trace file (a path) or trace text and returns its report.
    The options are `neuron-sim run`'s. Raises TraceError when the trace
    does not parse or resolve (nothing ran)."""
