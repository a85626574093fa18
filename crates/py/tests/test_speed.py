"""Item 6: the loop path of dma_copy (a word planned once per geometry, one
native call per copy, no per-element Python) gives the same results as a
fresh plan."""

import numpy as np
import pytest

import neuron_sim as ns
from neuron_sim import _views


def test_tile_loop_plans_once_and_copies_each_tile(dev):
    a = np.arange(8 * 128 * 64, dtype=np.float32).reshape(8, 128, 64)
    hbm = dev.hbm_tensor("hbm0+0x200000", a.shape, "float32")
    hbm.write(a)
    _views._PLANS.clear()
    for i in range(8):
        tile = dev.sbuf_tile(0, (128, 64), "float32", byte_offset=i * 256)
        t = ns.dma_copy(dev, dst=tile, src=hbm[i])
        assert t.word == "DIRECT2D" and t.bytes == 128 * 64 * 4 and t.descriptors > 0
        assert np.array_equal(tile.numpy(), a[i])
    assert len(_views._PLANS) == 1


def test_cached_plan_follows_the_destination_alignment(dev):
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    src = dev.sbuf_tile(0, (16, 32), "float32", byte_offset=0x8000)
    src.write(a)
    _views._PLANS.clear()
    aligned = dev.sbuf_tile(0, (32, 16), "float32", byte_offset=0x10000)
    t1 = ns.dma_copy(dev, dst=aligned, src=src.T)
    odd = dev.sbuf_tile(0, (32, 16), "float32", byte_offset=0x10104)
    t2 = ns.dma_copy(dev, dst=odd, src=src.T)
    assert (t1.word, t2.word) == ("DIRECT2D_XPOSE", "DIRECT2D")
    assert np.array_equal(aligned.numpy(), a.T) and np.array_equal(odd.numpy(), a.T)


@pytest.mark.parametrize("i", [0, 3, -1, -4])
def test_int_index_equals_the_general_path(dev, i):
    for v in (dev.hbm_tensor("hbm0", (4, 8, 16), "bfloat16"),
              dev.sbuf_tile(0, (4, 8), "float32"),
              dev.sbuf_tile(0, (4, 8), "float32").T[:, 0:4].T):
        fast, slow = v[i], v[(i,)]
        assert (fast.addr, fast.shape, fast.strides, fast.pdim) == \
            (slow.addr, slow.shape, slow.strides, slow.pdim)
    tile_t = dev.sbuf_tile(0, (4, 8), "float32").T  # pdim 1
    assert tile_t[2].pdim == 0 and tile_t[2].shape == (4,)
    with pytest.raises(IndexError, match="dim 0"):
        dev.hbm_tensor("hbm0", (4, 4), "float32")[4]


def test_rejected_word_names_its_addresses(dev):
    # A word the firmware refuses (an XPOSE past one engine's ring; a
    # DIRECT2D past the rings is split instead).
    src = dev.hbm_tensor("hbm0+0x40", (512, 64), "float32")
    dst = dev.sbuf_tile(0, (64, 512), "float32")
    with pytest.raises(ns.DeviceError, match="src_start_addr=imm:0x"):
        ns.dma_copy(dev, dst=dst, src=src.T, engines=1)


def test_copy_word_checks_its_template(dev):
    from neuron_sim import isa

    with pytest.raises(ValueError, match="64-byte"):
        dev._n.copy_word(0, b"\0" * 10, 0, 0)
    rdma = isa.asm("RDMA_DESC_START")
    with pytest.raises(ValueError, match="not DIRECT2D"):
        dev._n.copy_word(0, rdma, 0, 0)
    word = isa.Direct2d(semaphore=1).to_bytes()
    with pytest.raises(ValueError):
        dev._n.copy_word(0, word, 1 << 62, 0)


def test_copies_move_no_python_per_element(dev):
    """A 4 MiB copy in and out takes well under the time per-element
    Python would (4 M elements at ~50 ns each would be 200 ms)."""
    import time

    a = np.arange(1 << 20, dtype=np.float32)
    rt = dev.runtime()
    t = rt.alloc(a.nbytes)
    t0 = time.perf_counter()
    t.copyin(a)
    b = t.copyout(np.float32)
    hbm = dev.hbm_tensor(t.addr, a.shape, "float32")
    c = hbm.numpy()
    elapsed = time.perf_counter() - t0
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert elapsed < 5.0


def test_the_benchmark_runs(root):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(root / "crates/py/bench/dma_copy_loop.py"),
                          "--tiles", "4", "--cols", "64", "--repeat", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "python-layer share of the loop" in out.stdout
    assert "native calls/tile" in out.stdout


class Counting:
    """Counts the calls made to the native device."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def __getattr__(self, name):
        f = getattr(self._inner, name)
        if not callable(f):
            return f

        def counted(*a, **k):
            self.calls.append(name)
            return f(*a, **k)

        return counted


def test_a_tile_reads_and_writes_in_one_native_call(dev):
    a = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    tile = dev.sbuf_tile(0, (128, 512), "float32", byte_offset=0x400)
    probe = Counting(dev._n)
    dev._n = probe
    tile.write(a)
    assert probe.calls == ["write_rows"]
    probe.calls.clear()
    assert np.array_equal(tile.numpy(), a)
    assert probe.calls == ["read_rows"]
    dev._n = probe._inner
    # The same bytes, read a partition at a time.
    for p in (0, 77, 127):
        row = dev.read_array(f"tpb0.sbuf[p{p}]+0x400", (512,), "float32")
        assert np.array_equal(row, a[p])


def test_strided_tile_views_read_and_write_like_numpy(dev):
    a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    tile = dev.sbuf_tile(0, (128, 64), "float32")
    tile.write(a)
    for key in [(slice(None, None, -1), slice(None)), (slice(0, 128, 3), slice(60, 0, -7)),
                (slice(5, 9), 7), (3, slice(None))]:
        assert np.array_equal(tile[key].numpy(), a[key]), key
    assert np.array_equal(tile.T.numpy(), a.T)
    assert np.array_equal(tile.T[10:20, ::-1].numpy(), a.T[10:20, ::-1])
    # Writes through the same views.
    b = a.copy()
    tile[::-1, 0:8].write(np.full((128, 8), -1, np.float32))
    b[::-1, 0:8] = -1
    tile[0:128:2, 63:40:-3].write(np.zeros((64, 8), np.float32))
    b[0:128:2, 63:40:-3] = 0
    assert np.array_equal(tile.numpy(), b)
