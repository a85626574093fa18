"""Instruction words and descriptors (item 2)."""

import numpy as np
import pytest

import neuron_sim as ns
from neuron_sim import isa


def test_defaults_match_asm():
    assert isa.Direct2d().to_bytes() == isa.asm("DIRECT2D")


def test_fields_by_seed_name_round_trip():
    w = isa.Direct2d(semaphore=1, sem_increment=1, src_num_elem=(4096, 128), in_dtype="BFLOAT16",
                     events__wait_mode="WAIT_FOR_SEM_GE_IMM")
    b = w.to_bytes()
    assert len(b) == 64
    d = isa.Word.decode(b)
    assert d == w and isinstance(d, isa.Direct2d)
    assert d["src_num_elem"] == "[4096,128]"
    assert d["events.wait_mode"] == "WAIT_FOR_SEM_GE_IMM"


def test_asm_disasm_round_trip():
    text = "DIRECT2D semaphore=5 sem_increment=1 src_elem_size=2"
    b = isa.asm(text)
    assert isa.asm(isa.disasm(b)) == b
    assert isa.decode(b)[0]["semaphore"] == "5"


def test_every_word_kind_has_a_class():
    for cls in (isa.Direct2d, isa.Indirect1d, isa.Direct2dXpose, isa.GatherXpose, isa.RdmaDescGen,
                isa.RdmaDescStart):
        w = cls()
        assert isa.Word.decode(w.to_bytes()).kind == cls.KIND


def test_bad_field_value_names_the_field():
    with pytest.raises(ValueError, match="priority_class"):
        isa.Direct2d(dma_configs__priority_class=5)


def test_unknown_field():
    with pytest.raises(ValueError, match="no field"):
        isa.Direct2d(nope=1)


def test_decode_rejects_bad_bytes():
    with pytest.raises(ValueError, match="opcode"):
        isa.Word.decode(bytes(64))


def test_inst_queues_a_word(dev):
    dev.write("hbm0", bytes(range(256)) * 16)
    dev.configure_dge(0, engines=16)
    w = isa.Direct2d(semaphore=3, sem_increment=1, src_start_addr=f"imm:{dev.addr('hbm0'):#x}",
                     src_step_elem=(1, 64), src_num_elem=(64, 16), src_elem_size=4,
                     dst_start_addr=f"imm:{dev.addr('tpb0.sbuf[p0]'):#x}",
                     dst_step_elem=(1, 65536), dst_num_elem=(64, 16), dst_elem_size=4,
                     in_dtype="FP32", out_dtype="FP32")
    dev.inst(0, w)
    dev.wait("tpb0.sem.read[3]", "==", 16, timeout=50_000)
    assert list(dev.read("tpb0.sbuf[p1]", 4)) == [0, 1, 2, 3]


def test_desc_decode():
    d = ns.desc.decode(bytes(16))
    assert isinstance(d, dict) and d


def test_desc_decode_wrong_size():
    with pytest.raises(ValueError, match="16 bytes"):
        ns.desc.decode(bytes(8))


def test_desc_tx_builds_the_driver_word0():
    # dma_abi's documented example: 4096 B, FIRST|LAST, ring id 1 = 0x0D001000.
    b = ns.desc.tx(4096, 0x20_0000_0000, first=True, last=True)
    assert len(b) == 16
    assert int.from_bytes(b[0:4], "little") == 0x0D00_1000
    d = ns.desc.decode(b)
    assert (d["len"], d["first"], d["last"], d["ring_id"]) == (4096, True, True, 1)
    assert int(d["buf_ptr"], 16) == 0x20_0000_0000


def test_desc_rx_and_word1_and_flags():
    r = ns.desc.rx(65536, 0x40_0000_1000)
    assert int.from_bytes(r[0:4], "little") == 0x0100_0000  # LEN 0 = 64 KiB, ring id 1
    t = ns.desc.tx(64, 0x1000, dmb=True, ring_id=2, word1=0x1234)
    d = ns.desc.decode(t)
    assert d["dmb"] and d["ring_id"] == 2 and d["word1"] == "0x1234"


@pytest.mark.parametrize("kwargs", [dict(len=0), dict(len=65537), dict(ring_id=4)])
def test_desc_bad_fields_are_value_errors(kwargs):
    args = dict(len=16, ring_id=1)
    args.update(kwargs)
    with pytest.raises(ValueError):
        ns.desc.tx(args["len"], 0x1000, ring_id=args["ring_id"])


def test_descriptors_posted_on_a_ring_move_the_data():
    # traces/copy-hbm-hbm.trace, its desc statements built in Python.
    dev = ns.Device()
    src = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    dev.write("hbm0+0x100000", src)
    for name, v in [("eng0.m2s.q0.tdrbp_low", 0x0100_0000), ("eng0.m2s.q0.tdrl", 256),
                    ("eng0.s2m.q0.rdrbp_low", 0x0100_1000), ("eng0.s2m.q0.rdrl", 256),
                    ("eng0.m2s.q0.q_cfg", 0x0303_0000), ("eng0.s2m.q0.q_cfg", 0x0303_0000),
                    ("eng0.m2s.change_state", 1), ("eng0.s2m.change_state", 1)]:
        dev.reg(name).write(v)
    dev.write(0x0100_1000, np.frombuffer(ns.desc.rx(4096, 0x20_0000), dtype=np.uint8))
    dev.write(0x0100_0000, np.frombuffer(ns.desc.tx(4096, 0x10_0000, first=True, last=True),
                                         dtype=np.uint8))
    dev.reg("eng0.s2m.q0.rdrtp_inc").write(1)
    dev.reg("eng0.m2s.q0.tdrtp_inc").write(1)
    dev.run()
    assert np.array_equal(dev.read("hbm0+0x200000", 4096), src)
    assert dev.reg("eng0.m2s.q0.tdrhp").read() == 0x4000_0001
