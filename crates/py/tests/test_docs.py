"""The Python examples of docs/python.md run as written (each ```python
block in a fresh namespace, in order within its own block)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_doc_example_runs(k, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[k], f"docs/python.md block {k}", "exec"), {})
