"""The host runtime (item 4): alloc / copyin / copyout / batch_copy / free /
mem_stats over the same runtime, ioctl bus and driver as a trace's host
operations; NRT statuses as NrtError."""

import re

import numpy as np
import pytest

import neuron_sim as ns


@pytest.fixture
def rt(dev):
    return dev.runtime()


def test_round_trip_float32(rt):
    t = rt.alloc(128 * 64 * 4, usage="weight", nc=0)
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    t.copyin(a)
    b = t.copyout(np.float32, shape=(128, 64))
    assert b.shape == (128, 64) and b.dtype == np.float32
    assert np.array_equal(a, b)


def test_copyin_lands_at_the_tensor_address(dev, rt):
    t = rt.alloc(4096)
    a = np.arange(1024, dtype=np.int32)
    t.copyin(a)
    assert np.array_equal(dev.read_array(t.addr, (1024,), "int32"), a)
    # And the other way: the device's bytes are what copyout returns.
    dev.write(t.addr + 16, np.array([7, 8], dtype=np.int32))
    assert list(t.copyout(np.int32, size=24)[4:6]) == [7, 8]


def test_copyin_and_copyout_at_an_offset(rt):
    t = rt.alloc(256)
    t.copyin(bytes(256))
    t.copyin(np.full(16, 0xAB, dtype=np.uint8), offset=100)
    out = t.copyout()
    assert out.dtype == np.uint8 and out.size == 256
    assert (out[100:116] == 0xAB).all() and out[:100].sum() == 0 and out[116:].sum() == 0
    assert list(t.copyout(offset=98, size=4)) == [0, 0, 0xAB, 0xAB]


def test_strided_array_is_copied_in_c_order(rt):
    a = np.arange(64, dtype=np.uint16).reshape(8, 8)
    t = rt.alloc(a.nbytes)
    t.copyin(a.T)  # not contiguous: copied once to C order
    assert np.array_equal(t.copyout(np.uint16, shape=(8, 8)), a.T)


def test_bfloat16_round_trip(rt):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.linspace(-4, 4, 2048, dtype=np.float32).astype(ml_dtypes.bfloat16)
    t = rt.alloc(a.nbytes)
    t.copyin(a)
    b = t.copyout("bfloat16")
    assert b.dtype == a.dtype and np.array_equal(b.view(np.uint16), a.view(np.uint16))


def test_alignment_and_names(rt):
    t = rt.alloc(100, align=0x10000)
    assert t.addr % 0x10000 == 0 and t.allocated >= 100
    u = rt.alloc(64, name="weights")
    assert u.name == "weights" and u.name != t.name
    assert "weights" in repr(u)


def test_host_memory_tensor(rt):
    t = rt.alloc(4096, host=True)
    a = np.arange(4096, dtype=np.uint8)
    t.copyin(a)
    assert np.array_equal(t.copyout(), a)


def test_copies_take_device_time(dev, rt):
    t = rt.alloc(1 << 20)
    before = dev.now
    t.copyin(np.zeros(1 << 20, dtype=np.uint8))
    assert dev.now > before


def test_batch_copy_in_and_out(rt):
    ts = [rt.alloc(1024) for _ in range(3)]
    arrs = [np.full(1024, k + 1, dtype=np.uint8) for k in range(3)]
    assert rt.batch_copy(list(zip(ts, arrs))) is None
    outs = rt.batch_copy(ts)
    assert len(outs) == 3
    for a, b in zip(arrs, outs):
        assert np.array_equal(a, b)
    part = rt.batch_copy([(ts[0], 8), (ts[2], 4)])
    assert list(part[0]) == [1] * 8 and list(part[1]) == [3] * 4


def test_batch_copy_goes_one_way(rt):
    t, u = rt.alloc(8), rt.alloc(8)
    with pytest.raises(ValueError, match="one way"):
        rt.batch_copy([(t, np.zeros(8, np.uint8)), u])
    with pytest.raises(TypeError):
        rt.batch_copy(["t0"])


def test_batch_copy_uses_one_ioctl(dev, rt):
    ts = [rt.alloc(256) for _ in range(4)]
    before = dev.report()["host_runtime"]["ioctl_calls"]
    rt.batch_copy([(t, np.ones(256, np.uint8)) for t in ts])
    assert dev.report()["host_runtime"]["ioctl_calls"] - before == 1


def test_mem_stats_follow_alloc_and_free(rt):
    s0 = rt.mem_stats()
    assert s0["hbm_channel_bytes"] == [0, 0, 0, 0] and s0["nc_bytes"] == {}
    t = rt.alloc(4096, usage="weight", nc=0)
    u = rt.alloc(0x2000, nc=2)  # channel nc // 2 = 1
    s1 = rt.mem_stats()
    assert s1["hbm_channel_bytes"] == [4096, 0x2000, 0, 0]
    assert s1["nc_bytes"] == {0: 4096, 2: 0x2000}
    assert s1["driver_device_mem_bytes"] > s0["driver_device_mem_bytes"]
    assert "released" in t.free()
    assert t.freed
    s2 = rt.mem_stats()
    assert s2["hbm_channel_bytes"] == [0, 0x2000, 0, 0] and s2["nc_bytes"] == {2: 0x2000}
    u.free()
    assert rt.mem_stats()["hbm_channel_bytes"] == [0, 0, 0, 0]


def test_mem_stats_equal_the_trace(rt):
    rt.alloc(4096, usage="weight", nc=0)
    rt.alloc(0x2000, nc=2)
    rep = ns.run_trace("alloc t0 size=4096 nc=0 usage=weight\nalloc t1 size=0x2000 nc=2\n"
                       "mem_stats\n")
    text = rep["steps"][-1]["text"]
    got = rt.mem_stats()
    want = {k: int(v) for k, v in re.findall(r"(hbm\d|nc\d)=(\d+)", text)}
    assert want == {**{f"hbm{c}": b for c, b in enumerate(got["hbm_channel_bytes"])},
                    **{f"nc{n}": b for n, b in got["nc_bytes"].items()}}
    dev_mem = int(re.search(r"device_mem=(\d+)", text).group(1))
    assert dev_mem == got["driver_device_mem_bytes"]


def test_report_counts_the_runtime(dev, rt):
    assert "host_runtime" not in dev.report()
    t = rt.alloc(64, name="x")
    rep = dev.report()["host_runtime"]
    assert rep["live_tensors"] == {"x": 64} and rep["ioctl_calls"] > 0
    t.free()
    assert dev.report()["host_runtime"]["live_tensors"] == {}


def test_double_free_is_nrt_invalid(rt):
    t = rt.alloc(64)
    t.free()
    with pytest.raises(ns.NrtError, match="NRT_INVALID") as e:
        t.free()
    assert e.value.status == "NRT_INVALID"


def test_out_of_memory_is_nrt_resource(rt):
    with pytest.raises(ns.NrtError) as e:
        rt.alloc(1 << 40)
    assert e.value.status == "NRT_RESOURCE" and "NRT_RESOURCE" in str(e.value)
    # The runtime is still usable afterwards.
    t = rt.alloc(64)
    t.copyin(np.arange(64, dtype=np.uint8))
    assert t.copyout()[63] == 63


def test_copy_past_the_tensor_is_an_nrt_failure(rt):
    t = rt.alloc(0x100000)
    with pytest.raises(ns.NrtError) as e:
        t.copyin(np.zeros(0x180000, dtype=np.uint8))
    assert e.value.status == "NRT_FAILURE"
    with pytest.raises(ns.NrtError):
        t.copyout(size=0x100001)


def test_error_types_are_distinct(dev, rt):
    assert issubclass(ns.NrtError, ns.NeuronSimError)
    assert not issubclass(ns.NrtError, (ns.BusError, ns.DeviceError, ValueError))
    with pytest.raises(ValueError, match="usage"):
        rt.alloc(64, usage="no-such-usage")
    t = rt.alloc(64)
    t.free()
    with pytest.raises(ValueError, match="freed"):
        t.copyout()
    with pytest.raises(ns.BusError):
        dev.read(0xFFFF_FFFF_FFFF_0000, 4)


def test_runtime_tensor_feeds_dma_copy(dev, rt):
    a = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)
    t = rt.alloc(a.nbytes, usage="io")
    t.copyin(a)
    src = dev.hbm_tensor(t.addr, a.shape, "float32")
    dst = dev.sbuf_tile(0, a.shape, "float32")
    ns.dma_copy(dev, dst=dst, src=src)
    assert np.array_equal(dst.numpy(), a)
    # ... and back into a second runtime tensor.
    u = rt.alloc(a.nbytes)
    ns.dma_copy(dev, dst=dev.hbm_tensor(u.addr, a.shape, "float32"), src=dst)
    assert np.array_equal(u.copyout(np.float32, shape=a.shape), a)


def test_alloc_arguments_follow_the_trace_rules(rt):
    # As `alloc` in a trace (trace-format §5.4): bad input is ValueError,
    # never an allocation or a runtime status that reads as out of memory.
    for kwargs, msg in [({"align": 3}, "power of two"), ({"align": 6000}, "power of two"),
                        ({"nc": 9}, "nc must be at most 7"), ({"channel": 9}, "channel must be at most 3")]:
        with pytest.raises(ValueError, match=msg):
            rt.alloc(64, **kwargs)
    with pytest.raises(ValueError, match="size must be greater than 0"):
        rt.alloc(0)
    assert rt.alloc(64, align=4096) is not None


def test_a_freed_handle_never_reaches_a_later_tensor_of_its_name(rt):
    a = rt.alloc(64, name="w")
    a.free()
    b = rt.alloc(4096, name="w", usage="weight")
    b.copyin(np.arange(64, dtype=np.uint8))
    with pytest.raises(ValueError, match="this handle was freed"):
        a.copyin(np.full(64, 0xEE, np.uint8))
    with pytest.raises(ValueError, match="this handle was freed"):
        a.copyout(size=8)
    with pytest.raises(ValueError, match="this handle was freed"):
        a.free()
    assert b.copyout(size=4).tolist() == [0, 1, 2, 3]


def test_a_timing_only_copyout_of_bytes_no_copy_moved_warns():
    # As `run --timing-only` skips such a check (user guide §11): the bytes
    # returned are not the device's, and the caller is told.
    dev = ns.Device(timing_only=True)
    rt = dev.runtime()
    t = rt.alloc(4096)
    t.copyin(np.full(4096, 7, np.uint8))
    with pytest.warns(RuntimeWarning, match="timing-only mode"):
        t.copyout()
