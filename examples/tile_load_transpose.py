"""Load a [128, 2048] bf16 tile from HBM into SBUF with one DMA word,
transpose it block by block (DIRECT2D_XPOSE), check both with numpy and
print the achieved bandwidth next to the published curve
(docs/python.md, docs/references/figures.md §0, §A.4)."""

import numpy as np

import neuron_sim as ns

try:
    from ml_dtypes import bfloat16
except ImportError:  # the bytes are what the DMA moves: uint16 carries them
    bfloat16 = np.uint16

dev = ns.Device()
rng = np.random.default_rng(0)
tile = rng.standard_normal((128, 2048)).astype(np.float32).astype(bfloat16)

hbm = dev.hbm_tensor("hbm0+0x100000", (128, 2048), "bfloat16")
hbm.write(tile)
sb = dev.sbuf_tile(0, (128, 2048), "bfloat16")
load = ns.dma_copy(dev, dst=sb, src=hbm, core=0, engines=16)
assert np.array_equal(sb.numpy().view(np.uint16), tile.view(np.uint16))

# The transpose of each 128 x 128 block lands in a second tile.
out = dev.sbuf_tile(0, (128, 2048), "bfloat16", byte_offset=0x10000)
xpose_cycles = 0
for j in range(0, 2048, 128):
    t = ns.dma_copy(dev, dst=out[:, j:j + 128], src=sb[:, j:j + 128].T)
    xpose_cycles += t.cycles
want = np.concatenate([tile[:, j:j + 128].T for j in range(0, 2048, 128)], axis=1)
assert np.array_equal(out.numpy().view(np.uint16), want.view(np.uint16))

# The published curve (docs/references/figures.md §0, §A.4): 16 engines x
# 23 B/ns = 368 GB/s per core, reached from 4 KiB per partition on; this
# tile has 2048 x 2 B = 4 KiB per partition.
PUBLISHED_GBPS = 16 * 23.0
per_partition = load.bytes // 128
print(f"load  {load.bytes} B in {load.cycles} cycles ({load.ns:.0f} ns), {load.descriptors} descriptors: "
      f"{load.gbps:.1f} GB/s; published: {PUBLISHED_GBPS:.0f} GB/s at >= 4 KiB/partition "
      f"(this tile: {per_partition} B/partition)")
print(f"transpose 16 blocks of 128x128 bf16: {xpose_cycles} cycles")
print("ok: load and transpose match numpy")
