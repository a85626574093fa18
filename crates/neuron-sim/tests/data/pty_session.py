"""Runs `neuron-sim step` under a pseudo-terminal and types at it.

Usage: pty_session.py BINARY TRACE HISTORY_FILE KEYS...
Each KEYS argument is one burst of keystrokes (Python escapes allowed,
e.g. '\\t' for Tab, '\\r' for Enter, '\\x1b[A' for Up); the script waits
for the terminal to go quiet after each. Prints the terminal output
(escape sequences removed) and the exit status as JSON.
"""
import json
import os
import pty
import re
import select
import sys
import time

binary, trace, history = sys.argv[1:4]
bursts = [k.encode().decode("unicode_escape").encode() for k in sys.argv[4:]]

pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.environ["NEURON_SIM_HISTORY"] = history
    os.environ["NO_COLOR"] = "1"
    os.execv(binary, [binary, "step", trace])

out = bytearray()


def pump(quiet=0.4, limit=20.0):
    """Reads until nothing came for `quiet` seconds (answers cursor queries)."""
    end = time.time() + limit
    last = time.time()
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            if b"\x1b[6n" in data:
                os.write(fd, b"\x1b[1;1R")
            out.extend(data)
            last = time.time()
        elif time.time() - last > quiet:
            return


pump(quiet=1.0)
for b in bursts:
    os.write(fd, b)
    pump()
pump(quiet=1.0)
_, status = os.waitpid(pid, 0)
text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))
print(json.dumps({"output": text, "status": os.waitstatus_to_exitcode(status)}))
