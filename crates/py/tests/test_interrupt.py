"""Ctrl-C (SIGINT) during a long native run raises KeyboardInterrupt soon,
and the device is left where the run stopped (docs/python.md §Interrupting
a run). Each run takes minutes uninterrupted; the test waits a bounded time
for the child to end, it does not time the simulator."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")

# Thousands of DIRECT2D words of 4000 64-byte rows queued on tpb0: about
# 5 ms of host time each, far more work than the wait below allows.
SETUP = textwrap.dedent("""
    import json, sys, neuron_sim as ns
    from neuron_sim import isa
    dev = ns.Device()
    src = dev.hbm_tensor("hbm0", (4000, 64), "uint8")
    dst = dev.hbm_tensor("hbm1", (4000, 64), "uint8")
    kind, fields = ns.plan_word(dst, src)
    word = isa.Word.from_fields(kind, fields + [("semaphore", "1"), ("sem_increment", "1")])
    dev.configure_dge(0, 16)
""")

RUN = SETUP + textwrap.dedent("""
    for _ in range(20_000):
        dev.inst(0, word)
    print("running", flush=True)
    try:
        dev.run()
    except KeyboardInterrupt:
        fw = dev.report()["firmware"]["tpb0"]
        stopped = dev.now
        # The device goes on from where the run stopped.
        how = dev.run(cycles=1000)
        print(json.dumps({"queued": fw["queued"], "stopped": stopped, "how": how,
                          "now": dev.now}), flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")

RUN_TRACE = SETUP + textwrap.dedent("""
    text = ("write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\\n"
            "write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\\n"
            + ("inst tpb0 " + word.asm() + "\\n") * 20_000 + "run\\n")
    print("running", flush=True)
    try:
        ns.run_trace(text)
    except KeyboardInterrupt:
        print(json.dumps({"interrupted": True}), flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")


def interrupt(script, after=1.0, wait=30.0):
    """Runs `script` in a child Python, sends SIGINT `after` seconds after it
    says "running", and returns its last output line (killed after `wait`
    seconds: a failure)."""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "running", child.stderr.read()
        try:
            child.wait(timeout=after)
        except subprocess.TimeoutExpired:
            pass
        assert child.poll() is None, "the run ended before the interrupt: make it longer"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"SIGINT did not end the run within {wait} s")
    assert child.returncode == 0, err
    return out.strip().splitlines()[-1]


def test_ctrl_c_interrupts_device_run():
    import json

    got = json.loads(interrupt(RUN))
    # Stopped mid-run: words still queued; the device then runs on.
    assert got["queued"] > 0
    assert got["how"] == "limit" and got["now"] == got["stopped"] + 1000


def test_ctrl_c_interrupts_run_trace():
    import json

    assert json.loads(interrupt(RUN_TRACE)) == {"interrupted": True}
