"""`run_trace`: a trace run as `neuron-sim run --json` runs it."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from typing import Any, Iterator

from . import _native


class Report(Mapping):
    """The report of a run: the same data as `neuron-sim run --json` (less
    `schema_version` and the host wall-clock `host_timing`), subscriptable
    like that dict (`rep["cycles"]`, `rep["steps"][0]`). `fail_reasons`
    says why `fail_on_fault` failed the run (the CLI's `--fail-on-fault:`
    line), else it is empty."""

    def __init__(self, data: dict, exit_code: int, fail_reasons: list[str] | None = None) -> None:
        self._data = data
        self.exit_code = exit_code
        self.fail_reasons: list[str] = list(fail_reasons or [])

    def __getitem__(self, k: str) -> Any:
        """The report field `k` (`rep["cycles"]`)."""
        return self._data[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def to_dict(self) -> dict:
        """The report as a plain dict (a copy)."""
        return self._data

    @property
    def ok(self) -> bool:
        """Every expectation held and nothing was bad input; with
        `run_trace(..., fail_on_fault=True)` also no unexpected fault or
        firmware refusal (`run --fail-on-fault`)."""
        return self.exit_code == 0

    def __repr__(self) -> str:
        d = self._data
        return (f"<Report {d.get('trace')}: {d.get('statements')} statements, {d.get('cycles')} cycles, "
                f"{d.get('bytes')} bytes, exit {self.exit_code}>")


def run_trace(path_or_text: Any, timing: str | None = None, timing_only: bool = False,
              soc_map: str | None = None, csr_maps: str | None = None, name: str | None = None,
              fail_on_fault: bool = False) -> Report:
    """Runs a trace file (a path) or trace text and returns its report.
    The options are `neuron-sim run`'s: `fail_on_fault` fails the run
    (`ok` False, `exit_code` 1, `fail_reasons` says why) on an unexpected
    fault or firmware refusal as `--fail-on-fault` does; faults it does
    not count (timing-only) are a RuntimeWarning. Raises TraceError when
    the trace does not parse or resolve (nothing ran)."""
    text: str
    if isinstance(path_or_text, (bytes, bytearray)):
        raise TypeError("run_trace takes a path or trace text (str), not bytes: decode them first")
    if (isinstance(path_or_text, str) and "\n" not in path_or_text
            and not os.path.exists(path_or_text)
            and (path_or_text.endswith(".trace") or os.sep in path_or_text)
            and " " not in path_or_text.strip()):
        # One word that looks like a path (a `.trace` name, or with a
        # directory) and names no file: the CLI's error, not a parse error
        # of the path as a directive.
        raise FileNotFoundError(f"cannot read trace {path_or_text}: No such file or directory")
    if isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\n" not in path_or_text and os.path.exists(path_or_text)):
        path = os.fspath(path_or_text)
        # Bounded as `neuron-sim run` reads a trace (user guide §3).
        text = _native.read_trace(path)
        trace_name = name or path
        base = os.path.dirname(path) or "."
    else:
        text = str(path_or_text)
        trace_name = name or "<python>"
        base = "."
    doc, code, why, uncounted = _native.run_trace_json(
        text, trace_name, base, timing=timing, timing_only=timing_only, soc_map=soc_map,
        csr_maps=csr_maps, fail_on_fault=bool(fail_on_fault))
    if uncounted is not None:
        warnings.warn(uncounted, RuntimeWarning, stacklevel=2)
    return Report(json.loads(doc), code, [] if why is None else [why])
