"""The type stubs (.pyi) of every module match the runtime (mypy's stubtest),
are clean under `mypy --strict`, and type user code: the worked example
checks, a wrong argument type does not."""

import subprocess
import sys

import pytest

pytest.importorskip("mypy")


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("mypy-cache"))


def mypy(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_stubs_match_the_runtime():
    out = mypy("mypy.stubtest", "neuron_sim")
    assert out.returncode == 0, out.stdout + out.stderr


def test_stubs_are_strict_clean(mypy_cache):
    out = mypy("mypy", "--strict", "--cache-dir", mypy_cache, "-p", "neuron_sim")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_worked_example_type_checks(root, mypy_cache):
    out = mypy("mypy", "--strict", "--cache-dir", mypy_cache,
               str(root / "examples" / "tile_load_transpose.py"))
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_wrong_argument_type_is_caught(tmp_path, mypy_cache):
    bad = tmp_path / "bad.py"
    bad.write_text("import neuron_sim as ns\n"
                   "dev = ns.Device()\n"
                   "rt = dev.runtime()\n"
                   "t = rt.alloc('big')\n"
                   "n: str = t.addr\n")
    out = mypy("mypy", "--cache-dir", mypy_cache, str(bad))
    assert out.returncode == 1
    assert 'bad.py:4: error: Argument 1 to "alloc" of "Runtime"' in out.stdout
    assert "bad.py:5: error: Incompatible types in assignment" in out.stdout
