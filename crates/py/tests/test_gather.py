"""dma_gather: rows gathered by an index array with INDIRECT1D, numpy as the
oracle (`table[indices]`)."""

import numpy as np
import pytest

import neuron_sim as ns


def table(dev, shape, dtype=np.float32, addr="hbm0+0x40000000", seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    t = dev.hbm_tensor(addr, shape, np.dtype(dtype).name)
    t.write(a)
    return t, a


def test_gather_rows_into_an_sbuf_tile(dev):
    src, a = table(dev, (1000, 64))
    dst = dev.sbuf_tile(0, (128, 64), "float32")
    idx = np.random.default_rng(1).integers(0, 1000, 128)
    t = ns.dma_gather(dev, dst=dst, src=src, indices=idx)
    assert np.array_equal(dst.numpy(), a[idx])
    assert t.word == "INDIRECT1D" and t.words == 1 and t.bytes == 128 * 64 * 4
    assert t.cycles > 0 and t.descriptors > 0 and t.gbps > 0


def test_gather_bf16_with_repeated_indices(dev):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src, a = table(dev, (300, 128), dtype=ml_dtypes.bfloat16)
    dst = dev.sbuf_tile(0, (64, 128), "bfloat16", byte_offset=0x1000)
    idx = np.array([5, 5, 299, 0] * 16)
    ns.dma_gather(dev, dst=dst, src=src, indices=idx)
    assert np.array_equal(dst.numpy().view(np.uint16), a[idx].view(np.uint16))


def test_more_than_4096_indices_take_several_words(dev):
    src, a = table(dev, (6000, 4))
    dst = dev.hbm_tensor("hbm0+0x10000", (5000, 4), "float32")
    idx = np.random.default_rng(2).permutation(6000)[:5000]
    t = ns.dma_gather(dev, dst=dst, src=src, indices=idx)
    # 16 engines x 255 descriptors: 4080 rows a word.
    assert t.words == 2 and t.bytes == 5000 * 16
    assert np.array_equal(dst.numpy(), a[idx])
    dst4 = dev.hbm_tensor("hbm0+0x100000", (1000, 4), "float32")
    t4 = ns.dma_gather(dev, dst=dst4, src=src, indices=idx[:1000], engines=4)
    assert t4.words == 1 and np.array_equal(dst4.numpy(), a[idx[:1000]])
    t2 = ns.dma_gather(dev, dst=dst4, src=src, indices=idx[1000:2000], engines=2)
    assert t2.words == 2 and np.array_equal(dst4.numpy(), a[idx[1000:2000]])


def test_gather_from_a_strided_table(dev):
    src, a = table(dev, (200, 32))
    dst = dev.sbuf_tile(0, (16, 32), "float32")
    idx = np.arange(16)[::-1] * 3
    ns.dma_gather(dev, dst=dst, src=src[::2], indices=idx)
    assert np.array_equal(dst.numpy(), a[::2][idx])


def test_indices_land_at_the_index_offset(dev):
    src, a = table(dev, (100, 8))
    dst = dev.sbuf_tile(0, (4, 8), "float32")
    ns.dma_gather(dev, dst=dst, src=src, indices=[3, 1, 4, 1], index_offset=0x2000)
    assert list(dev.read_array("tpb0.sbuf[p0]+0x2000", (4,), "uint32")) == [3, 1, 4, 1]
    assert np.array_equal(dst.numpy(), a[[3, 1, 4, 1]])


def test_no_indices_no_words(dev):
    src, _ = table(dev, (10, 8))
    dst = dev.hbm_tensor("hbm0", (0, 8), "float32")
    t = ns.dma_gather(dev, dst=dst, src=src, indices=np.zeros(0, dtype=np.int64))
    assert t.words == 0 and t.bytes == 0


def test_gather_errors_name_what_is_wrong(dev):
    src, _ = table(dev, (100, 8))
    dst = dev.sbuf_tile(0, (4, 8), "float32")
    with pytest.raises(IndexError, match=r"indices\[2\] = 100"):
        ns.dma_gather(dev, dst=dst, src=src, indices=[0, 1, 100, 2])
    with pytest.raises(IndexError, match=r"indices\[0\] = -1"):
        ns.dma_gather(dev, dst=dst, src=src, indices=[-1, 1, 2, 3])
    with pytest.raises(ValueError, match="3 indices for 4 dst rows"):
        ns.dma_gather(dev, dst=dst, src=src, indices=[0, 1, 2])
    with pytest.raises(ValueError, match="not integers"):
        ns.dma_gather(dev, dst=dst, src=src, indices=[0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="src rows are 32 bytes, dst rows 16"):
        ns.dma_gather(dev, dst=dev.sbuf_tile(0, (4, 4), "float32"), src=src, indices=[0] * 4)
    with pytest.raises(ValueError, match="moves rows unchanged"):
        ns.dma_gather(dev, dst=dev.sbuf_tile(0, (4, 8), "int32"), src=src, indices=[0] * 4)
    with pytest.raises(ValueError, match="dim 1 has stride 2"):
        ns.dma_gather(dev, dst=dst[:, ::2], src=src[:, ::2], indices=[0] * 4)
    with pytest.raises(ValueError, match="src dim 0 stride 40 bytes"):
        odd = dev.hbm_tensor("hbm0", (100, 10), "float32")[:, 0:8]
        ns.dma_gather(dev, dst=dst, src=odd, indices=[0] * 4)
    with pytest.raises(ValueError, match="index_offset"):
        ns.dma_gather(dev, dst=dst, src=src, indices=[0] * 4, index_offset=0x10000000)
