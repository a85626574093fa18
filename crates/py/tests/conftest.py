import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def dev():
    import neuron_sim as ns

    return ns.Device()


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """The neuron-sim binary the Rust tests built (NEURON_SIM_CLI, or
    target/debug/neuron-sim)."""
    env = os.environ.get("NEURON_SIM_CLI")
    candidates = [pathlib.Path(env)] if env else []
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        candidates.append(pathlib.Path(target) / "debug" / "neuron-sim")
    candidates.append(ROOT / "target" / "debug" / "neuron-sim")
    for c in candidates:
        if c.is_file():
            return c
    pytest.skip("no neuron-sim binary built (run `cargo xtask test`)")
