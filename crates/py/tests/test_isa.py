"""Instruction words and descriptors (item 2)."""

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
