"""dma_copy over tensor views with numpy as the oracle (item 3)."""

import numpy as np
import pytest

import neuron_sim as ns

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


def fill_hbm(dev, addr, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    et = ns.elem_type(dtype)
    a = rng.integers(0, 1 << 15, size=shape).astype(np.uint16 if et.itemsize == 2 else np.uint32)
    if et.itemsize == 4:
        a = rng.standard_normal(size=shape).astype(np.float32)
    t = dev.hbm_tensor(addr, shape, dtype)
    t.write(a.view(et.np_dtype) if et.itemsize == 2 else a)
    return t, a


def test_contiguous_tile_load(dev):
    src, a = fill_hbm(dev, "hbm0+0x10000", (128, 512), "bfloat16")
    dst = dev.sbuf_tile(0, (128, 512), "bfloat16")
    t = ns.dma_copy(dev, dst=dst, src=src)
    assert np.array_equal(dst.numpy().view(np.uint16), a)
    assert t.word == "DIRECT2D" and t.bytes == 128 * 512 * 2
    assert t.cycles > 0 and t.descriptors > 0 and t.gbps > 0


def test_sliced_source(dev):
    src, a = fill_hbm(dev, "hbm0", (256, 1024), "float32", seed=1)
    dst = dev.sbuf_tile(0, (128, 256), "float32")
    ns.dma_copy(dev, dst=dst, src=src[0:128, 256:512])
    assert np.array_equal(dst.numpy(), a[0:128, 256:512])


def test_stepped_source(dev):
    src, a = fill_hbm(dev, "hbm0", (64, 256), "float32", seed=2)
    dst = dev.sbuf_tile(0, (32, 64), "float32")
    ns.dma_copy(dev, dst=dst, src=src[::2, 64:128])
    assert np.array_equal(dst.numpy(), a[::2, 64:128])


def test_rejected_word_raises_device_error(dev):
    # A DIRECT2D past the rings is split now (test_a_copy_past_the_rings_
    # is_split_into_words); a DIRECT2D_XPOSE of 32 tiles of 16 descriptors
    # on one engine is still one word, which the firmware refuses.
    src, a = fill_hbm(dev, "hbm0", (512, 64), "float32", seed=2)
    dst = dev.sbuf_tile(0, (64, 512), "float32")
    with pytest.raises(ns.DeviceError, match="rejected") as e:
        ns.dma_copy(dev, dst=dst, src=src.T, engines=1)
    # The firmware's reason is in the message (no perfetto needed).
    reason = dev.report()["firmware"]["tpb0"]["refused"][-1]["reason"]
    assert reason in str(e.value)


def test_negative_step(dev):
    src, a = fill_hbm(dev, "hbm0", (16, 64), "float32", seed=3)
    dst = dev.sbuf_tile(0, (16, 64), "float32")
    ns.dma_copy(dev, dst=dst, src=src[::-1, :])
    assert np.array_equal(dst.numpy(), a[::-1, :])


def test_store_back_to_hbm(dev):
    src, a = fill_hbm(dev, "hbm0", (128, 128), "float32", seed=4)
    tile = dev.sbuf_tile(0, (128, 128), "float32")
    ns.dma_copy(dev, dst=tile, src=src)
    out = dev.hbm_tensor("hbm1", (128, 128), "float32")
    ns.dma_copy(dev, dst=out, src=tile)
    assert np.array_equal(out.numpy(), a)


def test_sbuf_transpose_uses_xpose(dev):
    src, a = fill_hbm(dev, "hbm0", (128, 128), "bfloat16", seed=5)
    sb = dev.sbuf_tile(0, (128, 128), "bfloat16")
    ns.dma_copy(dev, dst=sb, src=src)
    out = dev.sbuf_tile(0, (128, 128), "bfloat16", byte_offset=0x8000)
    t = ns.dma_copy(dev, dst=out, src=sb.T)
    assert t.word == "DIRECT2D_XPOSE"
    assert np.array_equal(out.numpy().view(np.uint16), a.T)


def test_transpose_of_a_block(dev):
    src, a = fill_hbm(dev, "hbm0", (128, 256), "bfloat16", seed=6)
    sb = dev.sbuf_tile(0, (128, 256), "bfloat16")
    ns.dma_copy(dev, dst=sb, src=src)
    out = dev.sbuf_tile(0, (128, 128), "bfloat16", byte_offset=0x10000)
    ns.dma_copy(dev, dst=out, src=sb[:, 128:256].T)
    assert np.array_equal(out.numpy().view(np.uint16), a[:, 128:256].T)


def test_hbm_transpose_falls_back_to_strided_direct2d(dev):
    src, a = fill_hbm(dev, "hbm0", (8, 16), "float32", seed=7)
    dst = dev.sbuf_tile(0, (16, 8), "float32")
    t = ns.dma_copy(dev, dst=dst, src=src.T)
    assert t.word == "DIRECT2D"
    assert np.array_equal(dst.numpy(), a.T)


def test_gather_rows_with_step(dev):
    # every fourth row: a strided gather
    src, a = fill_hbm(dev, "hbm2", (512, 64), "float32", seed=8)
    dst = dev.sbuf_tile(2, (128, 64), "float32")
    ns.dma_copy(dev, dst=dst, src=src[3::4], core=2)
    assert np.array_equal(dst.numpy(), a[3::4])


@pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes not installed")
def test_dtype_cast_fp32_to_bf16(dev):
    a = np.linspace(-4, 4, 128 * 32, dtype=np.float32).reshape(128, 32)
    src = dev.hbm_tensor("hbm0", (128, 32), "float32")
    src.write(a)
    dst = dev.sbuf_tile(0, (128, 32), "bfloat16")
    ns.dma_copy(dev, dst=dst, src=src)
    want = a.astype(ml_dtypes.bfloat16)
    assert np.array_equal(dst.numpy().view(np.uint16), want.view(np.uint16))


def test_dtype_by_numpy_type(dev):
    src = dev.hbm_tensor("hbm0", (4, 4), np.float32)
    assert src.dtype.name == "float32" and src.dtype.itemsize == 4
    assert ns.elem_type("bf16").name == "bfloat16"
    if ml_dtypes is not None:
        assert ns.elem_type(ml_dtypes.bfloat16).name == "bfloat16"


def test_unknown_dtype():
    with pytest.raises(ValueError, match="not one of"):
        ns.elem_type("complex64")


def test_fewer_engines_take_longer():
    times = []
    for engines in (16, 4):
        dev = ns.Device()
        src = dev.hbm_tensor("hbm0", (128, 1024), "bfloat16")
        dst = dev.sbuf_tile(0, (128, 1024), "bfloat16")
        times.append(ns.dma_copy(dev, dst=dst, src=src, engines=engines).cycles)
    assert times[1] > times[0]


def test_shape_mismatch(dev):
    src = dev.hbm_tensor("hbm0", (128, 64), "float32")
    dst = dev.sbuf_tile(0, (64, 64), "float32")
    with pytest.raises(ValueError, match="shape"):
        ns.dma_copy(dev, dst=dst, src=src)


def test_three_dims_name_the_dimension(dev):
    src = dev.hbm_tensor("hbm0", (4, 8, 16), "float32")
    dst = dev.hbm_tensor("hbm1", (4, 3, 8), "float32")
    with pytest.raises(ValueError, match=r"src: shape \(4, 3, 8\).*dims \[0\]"):
        ns.dma_copy(dev, dst=dst, src=src[:, 0:3, 0:8])


def test_mergeable_dims_are_merged(dev):
    src = dev.hbm_tensor("hbm0", (4, 8, 16), "float32")
    kind, fields = ns.plan_word(dev.hbm_tensor("hbm1", (4, 4, 8), "float32"), src[:, ::2, ::2])
    assert kind == "DIRECT2D" and ("src_num_elem", "[8,16]") in fields


def test_too_many_elements_names_the_dimension(dev):
    # One word cannot count 70000 elements: plan_word (one word) says which
    # dimension; dma_copy splits instead (test_dimension_over_65535_is_split).
    src = dev.hbm_tensor("hbm0", (2, 70000), "uint8")
    dst = dev.hbm_tensor("hbm1", (2, 70000), "uint8")
    with pytest.raises(ValueError, match="dim 0 has 70000"):
        ns.plan_word(dst[:, ::1], src[:, ::1])


def test_dimension_over_65535_is_split(dev):
    a = np.random.default_rng(7).integers(0, 256, size=(2, 70000), dtype=np.uint8)
    src = dev.hbm_tensor("hbm0+0x100000", a.shape, "uint8")
    src.write(a)
    dst = dev.hbm_tensor("hbm0+0x200000", a.shape, "uint8")
    t = ns.dma_copy(dev, dst=dst, src=src)
    assert np.array_equal(dst.numpy(), a)
    assert t.words == 4 and t.bytes == a.size and t.word == "DIRECT2D"
    assert t.cycles > 0 and t.descriptors > 0


def test_long_vector_is_split(dev):
    a = np.arange(150000, dtype=np.float32)
    src = dev.hbm_tensor("hbm0+0x100000", a.shape, "float32")
    src.write(a)
    dst = dev.hbm_tensor("hbm0+0x400000", a.shape, "float32")
    t = ns.dma_copy(dev, dst=dst, src=src)
    assert np.array_equal(dst.numpy(), a)
    assert t.words == 4 and t.bytes == a.nbytes
    assert ns.dma_copy(dev, dst=dst[:1000], src=src[:1000]).words == 1


def test_view_slicing_shapes(dev):
    t = dev.hbm_tensor("hbm0", (128, 512), "bfloat16")
    v = t[0:128, 256:512]
    assert v.shape == (128, 256) and v.strides == (512, 1)
    assert v.addr == t.addr + 256 * 2
    assert t.T.shape == (512, 128) and t.T.strides == (1, 512)
    assert t[5].shape == (512,)


def test_index_out_of_range(dev):
    t = dev.hbm_tensor("hbm0", (4, 4), "float32")
    with pytest.raises(IndexError, match="dim 0"):
        t[7]


def test_tile_too_many_partitions(dev):
    with pytest.raises(ValueError, match="partition"):
        dev.sbuf_tile(0, (129, 16), "float32")


def test_timing_fields(dev):
    src = dev.hbm_tensor("hbm0", (128, 256), "float32")
    dst = dev.sbuf_tile(0, (128, 256), "float32")
    t = ns.dma_copy(dev, dst=dst, src=src)
    assert t["cycles"] == t.cycles
    assert abs(t.ns - t.cycles / dev.clock_ghz) < 1e-9
    assert t.packets > 0


def test_a_copy_behind_a_word_that_never_runs_raises():
    # A word gated on a semaphore nothing sets holds the core's queue: the
    # copy never runs, and dma_copy says so instead of returning a Timing
    # for bytes that did not move (docs/firmware.md §Work left at the end).
    from neuron_sim import isa

    dev = ns.Device()
    src = dev.hbm_tensor("hbm0+0x100000", (128, 256), "float32")
    src.write(np.ones((128, 256), np.float32))
    dst = dev.sbuf_tile(0, (128, 256), "float32")
    dev.configure_dge(0, 16, 0)
    dev.inst(0, isa.asm(
        "DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=6 events.semaphore_value=1 "
        "semaphore=2 sem_increment=1 src_start_addr=imm:0x20000000 src_step_elem=[1,256] "
        "src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x20100000 "
        "dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1"))
    assert dev.run() == "deadlock"
    with pytest.raises(ns.DeviceError, match="the word never ran"):
        ns.dma_copy(dev, dst=dst, src=src)
    assert dst.numpy().sum() == 0


def test_a_fully_indexed_view_reads_as_numpy_does(dev):
    # numpy: full integer indexing gives 0 dims; a partial one drops the
    # indexed dims.
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    sb = dev.sbuf_tile(0, (128, 32), "float32")
    sb.write(a)
    h = dev.hbm_tensor("hbm0", (4, 5), "int32")
    b = np.arange(20, dtype=np.int32).reshape(4, 5)
    h.write(b)
    for view, want in [(sb[3, 17], a[3, 17]), (sb[-1, -1], a[-1, -1]), (sb.T[17, 3], a.T[17, 3]),
                       (h[2, 4], b[2, 4]), (h[2][4], b[2][4]), (h[1:3, 4], b[1:3, 4]), (sb[3], a[3])]:
        got = view.numpy()
        assert isinstance(got, np.ndarray) and got.shape == np.shape(want), (view, got.shape)
        assert got.shape == view.shape and np.array_equal(got, want)
        assert np.asarray(view).shape == np.shape(want)
    # A 0-d view writes its one element.
    sb[3, 17].write(-1.5)
    h[2, 4].write(99)
    a[3, 17], b[2, 4] = -1.5, 99
    assert np.array_equal(sb.numpy(), a) and np.array_equal(h.numpy(), b)


def test_float_names_no_size_and_is_refused():
    # numpy reads "float" as float64, C and torch as float32, the trace
    # language names widths only (FP32, fp32): never a silent guess.
    for name in ["float", "FLOAT", " float "]:
        with pytest.raises(ValueError, match="ambiguous") as e:
            ns.elem_type(name)
        assert "float32" in str(e.value) and "float64" in str(e.value)
    # The explicit names, and numpy's dtypes (Python's float is float64).
    assert ns.elem_type("float32").name == ns.elem_type("fp32").name == "float32"
    assert ns.elem_type("float64").name == ns.elem_type(float).name == "float64"
    assert ns.elem_type(np.dtype("float")).name == "float64"


@pytest.mark.parametrize("engines", [1, 4])
def test_a_copy_past_the_rings_is_split_into_words(dev, engines):
    # 1024 rows of 65535 bytes: more descriptors than one engine's ring
    # holds (256 a ring) on 1 or 4 engines. dma_copy splits the copy into
    # words that fit, as a compiler would (docs/python.md §dma_copy), the
    # firmware refuses none, and the Timing covers them all.
    a = np.random.default_rng(11).integers(0, 256, size=(1024, 65535), dtype=np.uint8)
    src = dev.hbm_tensor("hbm0+0x10000000", a.shape, "uint8")
    src.write(a)
    dst = dev.hbm_tensor("hbm1", a.shape, "uint8")
    t = ns.dma_copy(dev, dst=dst, src=src, engines=engines)
    assert np.array_equal(dst.numpy(), a)
    assert dev.report()["firmware"]["tpb0"].get("refused", []) == []
    assert t.words > 1 and t.bytes == a.size and t.word == "DIRECT2D"
    assert t.descriptors == dev.report()["descriptors"]


def test_a_tile_whose_partitions_share_an_engine_is_split_into_words(dev):
    # Partitions 0..7 are one engine's (docs/firmware.md §DIRECT2D
    # expansion); a stepped source makes one descriptor pair an element:
    # 8 × 1024 pairs on one engine, far past its ring.
    a = np.random.default_rng(12).integers(0, 1 << 15, size=(8, 2048), dtype=np.uint16)
    src = dev.hbm_tensor("hbm0+0x100000", a.shape, "float16")
    src.write(a.view(np.float16))
    dst = dev.sbuf_tile(0, (8, 1024), "float16")
    t = ns.dma_copy(dev, dst=dst, src=src[:, ::2])
    assert np.array_equal(dst.numpy().view(np.uint16), a[:, ::2])
    assert dev.report()["firmware"]["tpb0"].get("refused", []) == []
    assert t.words > 1 and t.bytes == dst.nbytes


def test_copies_that_fit_stay_one_word(dev):
    # The split is no cost for a word the rings hold: a 16 MiB contiguous
    # copy is 256 runs of 64 KiB, 16 an engine.
    src = dev.hbm_tensor("hbm0+0x10000000", (4096, 4096), "uint8")
    dst = dev.hbm_tensor("hbm1", (4096, 4096), "uint8")
    assert ns.dma_copy(dev, dst=dst, src=src).words == 1
    tile = dev.sbuf_tile(0, (128, 2048), "bfloat16")
    assert ns.dma_copy(dev, dst=tile, src=dev.hbm_tensor("hbm0", (128, 2048), "bfloat16")).words == 1
