"""Issue 16 item 6: the Python layer's share of a 1,000-tile `dma_copy` loop.

Runs the same workload three ways in one process (build the package with
the `py` profile first: `pip install ./crates/py`, docs/python.md §Speed):

1. the Python loop: `ns.dma_copy(dev, dst=tile, src=hbm[i])` per tile;
2. the same words as a trace (`inst tpb0 <word>` + `run` per tile, words
   from `ns.plan_word`, so identical), run in-process as `run_trace` runs
   it (the native run, which also builds the report's step records, then
   the JSON decode `ns.run_trace` adds);
3. the Python loop again with every native call timed, which splits the
   loop's time into native (simulation) and Python layer.

Each is run `--repeat` times; the best time counts. Prints the times and
the Python layer's share of the loop, (loop - time in native calls) / loop
(budget: 10 %), and the loop's time against the trace's.

    python crates/py/bench/dma_copy_loop.py [--tiles 1000] [--cols 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import json

import neuron_sim as ns
from neuron_sim import _native
from neuron_sim.isa import Word


class TimedNative:
    """Forwards to the native device, adding up the time spent in calls."""

    def __init__(self, inner):
        self._inner = inner
        self.seconds = 0.0
        self.calls = 0

    def __getattr__(self, name):
        f = getattr(self._inner, name)
        if not callable(f):
            return f

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


def setup(tiles: int, cols: int):
    dev = ns.Device()
    hbm = dev.hbm_tensor("hbm0+0x1000000", (tiles, 128, cols), "bfloat16")
    tile = dev.sbuf_tile(0, (128, cols), "bfloat16")
    return dev, hbm, tile


def python_loop(tiles: int, cols: int, timed: bool = False):
    dev, hbm, tile = setup(tiles, cols)
    probe = None
    if timed:
        probe = TimedNative(dev._n)
        dev._n = probe
    t0 = time.perf_counter()
    cycles = 0
    for i in range(tiles):
        cycles += ns.dma_copy(dev, dst=tile, src=hbm[i]).cycles
    return time.perf_counter() - t0, cycles, dev.now, probe


def trace_text(tiles: int, cols: int) -> str:
    dev, hbm, tile = setup(tiles, cols)
    lines = ["write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000",
             "write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff"]
    for i in range(tiles):
        kind, fields = ns.plan_word(tile, hbm[i])
        fields += [("semaphore", "1"), ("sem_increment", "1")]
        lines += [f"inst tpb0 {Word.from_fields(kind, fields).asm()}", "run"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=1000)
    ap.add_argument("--cols", type=int, default=256, help="bf16 columns per partition")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, cols = args.tiles, args.cols

    loop_s = min(python_loop(n, cols)[0] for _ in range(args.repeat))
    _, _, loop_now, _ = python_loop(n, cols)
    timed = min((python_loop(n, cols, timed=True) for _ in range(args.repeat)),
                key=lambda r: r[0])
    timed_s, probe = timed[0], timed[3]
    text = trace_text(n, cols)
    trace_s, decode_s = float("inf"), float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        doc, code, _, _ = _native.run_trace_json(text, "loop.trace", ".")
        t1 = time.perf_counter()
        rep = json.loads(doc)
        trace_s = min(trace_s, t1 - t0)
        decode_s = min(decode_s, time.perf_counter() - t1)

    assert code == 0, "the trace failed"
    assert rep["cycles"] == loop_now, "the trace simulated something else"
    share = (timed_s - probe.seconds) / timed_s * 100
    print(f"workload: {n} tiles of [128, {cols}] bf16 HBM -> SBUF, one DIRECT2D each, "
          f"{loop_now} cycles simulated either way")
    print(f"python loop          {loop_s * 1e3:8.1f} ms  ({loop_s / n * 1e6:6.1f} us/tile)")
    print(f"  timed: {timed_s * 1e3:.1f} ms, of which native {probe.seconds * 1e3:.1f} ms "
          f"({probe.calls / n:.1f} native calls/tile)")
    print(f"same as a trace      {trace_s * 1e3:8.1f} ms  ({trace_s / n * 1e6:6.1f} us/tile; "
          f"+ {decode_s * 1e3:.0f} ms to decode its {len(doc) >> 20} MiB report)")
    print(f"python-layer share of the loop: {share:5.1f} % (budget 10 %)")
    print(f"loop / trace: {loop_s / trace_s:5.2f}")


if __name__ == "__main__":
    main()
