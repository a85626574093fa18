"""Type stubs of neuron_sim._trace: the signatures and docstrings of the
Python layer (docs/python.md)."""

from collections.abc import Mapping
from typing import Any, Iterator

class Report(Mapping[str, Any]):
    '''The report of a run: the same data as `neuron-sim run --json` (less
    `schema_version` and the host wall-clock `host_timing`), subscriptable
    like that dict (`rep["cycles"]`, `rep["steps"][0]`). `fail_reasons`
    says why `fail_on_fault` failed the run (the CLI's `--fail-on-fault:`
    line), else it is empty.'''
    exit_code: int
    fail_reasons: list[str]
    def __init__(self, data: dict[str, Any], exit_code: int, fail_reasons: list[str] | None = None) -> None: ...
    def __getitem__(self, k: str) -> Any:
        """The report field `k` (`rep["cycles"]`)."""
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]:
        """The report as a plain dict (a copy)."""
    @property
    def ok(self) -> bool:
        """Every expectation held and nothing was bad input; with
        `run_trace(..., fail_on_fault=True)` also no unexpected fault or
        firmware refusal (`run --fail-on-fault`)."""

def run_trace(path_or_text: Any, timing: str | None = None, timing_only: bool = False, soc_map: str | None = None, csr_maps: str | None = None, name: str | None = None, fail_on_fault: bool = False) -> Report:
    """Runs a trace file (a path) or trace text and returns its report.
    The options are `neuron-sim run`'s: `fail_on_fault` fails the run
    (`ok` False, `exit_code` 1, `fail_reasons` says why) on an unexpected
    fault or firmware refusal as `--fail-on-fault` does; faults it does
    not count (timing-only) are a RuntimeWarning. Raises TraceError when
    the trace does not parse or resolve (nothing ran)."""
