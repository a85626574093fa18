"""Device: memory, partition views, registers, runs, reports (item 1)."""

import numpy as np
import pytest

import neuron_sim as ns


def test_write_read_by_symbolic_address(dev):
    data = np.arange(256, dtype=np.uint8)
    dev.write("hbm0+0x1000", data)
    assert np.array_equal(dev.read("hbm0+0x1000", 256), data)
    assert np.array_equal(dev.read(dev.addr("hbm0") + 0x1000, 4), data[:4])


def test_read_array_shape_and_dtype(dev):
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    dev.write("hbm1+0x40", a)
    got = dev.read_array("hbm1+0x40", (8, 8), "float32")
    assert got.dtype == np.float32 and np.array_equal(got, a)


def test_write_accepts_bytes(dev):
    dev.write("hbm0", b"\x01\x02\x03")
    assert list(dev.read("hbm0", 3)) == [1, 2, 3]


def test_partition_address_resolves(dev):
    p0 = dev.addr("tpb0.sbuf[p0]")
    p5 = dev.addr("tpb0.sbuf[p5]")
    assert p5 - p0 == 5 * (dev.addr("tpb0.sbuf[p1]") - p0)


def test_sbuf_view_reads_and_writes_blocks(dev):
    sb = dev.sbuf(0)
    block = (np.arange(4 * 16) % 251).astype(np.uint8).reshape(4, 16)
    sb[2:6, 0:16] = block
    assert np.array_equal(sb[2:6, 0:16], block)
    assert np.array_equal(dev.read("tpb0.sbuf[p3]", 16), block[1])


def test_typed_sbuf_view(dev):
    sb = dev.sbuf(1, dtype="float32")
    sb[0:128, 0:4] = np.float32(2.5)
    got = sb[0:128, 0:4]
    assert got.dtype == np.float32 and got.shape == (128, 4) and np.all(got == 2.5)


def test_psum_view(dev):
    ps = dev.psum(0, dtype="int32")
    ps[0:2, 0:2] = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert ps[0:2, 0:2].tolist() == [[1, 2], [3, 4]]


def test_register_fields_read_and_assign(dev):
    r = dev.reg("eng0.m2s.q0.q_cfg")
    assert "EN_PREF" in r.fields
    r["EN_PREF"] = 1
    assert r["EN_PREF"] == 1
    assert r.value & (1 << r.field_info("EN_PREF")[0])


def test_register_value_assignment(dev):
    r = dev.reg("eng0.m2s.q0.tdrbp_low")
    r.value = 0x1000
    assert r.value == 0x1000
    assert dev.read32("eng0.m2s.q0.tdrbp_low") == 0x1000


def test_register_bad_field_names_the_fields(dev):
    r = dev.reg("eng0.m2s.q0.q_cfg")
    with pytest.raises(ValueError, match="EN_PREF"):
        r["NOPE"] = 1


def test_field_too_wide(dev):
    r = dev.reg("eng0.m2s.q0.q_cfg")
    with pytest.raises(ValueError, match="does not fit"):
        r.set(EN_PREF=2)


def test_reg_of_memory_is_an_error(dev):
    with pytest.raises(ValueError, match="memory"):
        dev.reg("hbm0")


def test_unknown_name_is_value_error(dev):
    with pytest.raises(ValueError, match="hbm9"):
        dev.addr("hbm9+0x10")


def test_unmapped_address_is_bus_error(dev):
    with pytest.raises(ns.BusError):
        dev.read(0xFFFF_FFFF_FFFF_0000, 4)


def test_bus_error_is_a_neuron_sim_error():
    assert issubclass(ns.BusError, ns.NeuronSimError)
    assert issubclass(ns.DeviceError, ns.NeuronSimError)
    assert ns.BusError is not ns.DeviceError


def test_run_cycles_advances_time(dev):
    t0 = dev.now
    assert dev.run(cycles=100) in ("idle", "limit")
    assert dev.now == t0 + 100
    assert dev.run() == "idle"


def test_wait_times_out_with_the_value(dev):
    with pytest.raises(TimeoutError, match="0x00000000"):
        dev.wait("tpb0.sem.read[1]", "==", 5, timeout=50)


def test_wait_holds_immediately(dev):
    dev.write32("tpb0.sem.inc[2]", 3)
    assert dev.wait("tpb0.sem.read[2]", ">=", 3) == 0


def test_wait_bad_op(dev):
    with pytest.raises(ValueError, match="op"):
        dev.wait("tpb0.sem.read[1]", "<", 1)


def test_report_has_run_json_totals(dev):
    rep = dev.report()
    for k in ("cycles", "sim_ns", "bytes", "descriptors", "queues", "faults"):
        assert k in rep


def test_csr_snapshot_changes_with_a_write(dev):
    before = dev.csr_snapshot()
    dev.write32("eng3.m2s.q0.tdrbp_low", 0x2000)
    after = dev.csr_snapshot()
    regions = {b["region"]: b for b in after["blocks"]}
    assert "eng3.m2s.q0" in regions
    assert len(after["blocks"]) == len(before["blocks"]) + 1


def test_write_vcd_and_perfetto(tmp_path):
    dev = ns.Device(vcd=True, perfetto=True)
    src = dev.hbm_tensor("hbm0", (16, 64), "float32")
    dst = dev.sbuf_tile(0, (16, 64), "float32")
    ns.dma_copy(dev, dst=dst, src=src)
    dev.write_vcd(tmp_path / "w.vcd")
    assert (tmp_path / "w.vcd").read_text().startswith("$")
    packets = dev.write_perfetto(tmp_path / "t.json")
    assert packets > 0
    import json

    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())


def test_write_vcd_needs_the_option(dev, tmp_path):
    with pytest.raises(ValueError, match="vcd=True"):
        dev.write_vcd(tmp_path / "w.vcd")


def test_a_huge_read_is_a_bus_error_not_an_abort(dev):
    # A range past its memory is checked before any host memory is
    # allocated for it (it used to abort the interpreter).
    with pytest.raises(ns.BusError):
        dev.read("hbm0+0x1000", 1 << 40)
    with pytest.raises(ns.BusError):
        dev.read_array("hbm0+0x1000", (1 << 20, 1 << 20), "float64")
    with pytest.raises(ns.BusError):
        dev.sbuf(0)[0:128, 0:1 << 40]
    # Reads that fit still work.
    assert len(dev.read("hbm0+0x1000", 1 << 17)) == 1 << 17


def test_a_write_to_a_read_only_register_is_an_error(dev):
    # As `write32` in a trace (exit 2): never silently dropped.
    before = dev.read32("eng0.m2s.q0.tdrhp")
    with pytest.raises(ns.BusError, match="read-only"):
        dev.write32("eng0.m2s.q0.tdrhp", 0x5)
    assert dev.read32("eng0.m2s.q0.tdrhp") == before


def test_partition_view_indices_are_numpy_like_or_an_index_error(dev):
    sb = dev.sbuf(0)
    sb[-1, 0:4] = 9                      # -1 is the last partition
    assert sb[127, 0:4].tolist() == [[9, 9, 9, 9]]
    assert sb[np.int64(127), 0:4].tolist() == [[9, 9, 9, 9]]
    for bad in [(300, slice(0, 4)), (-129, slice(0, 4)), (0, slice(-4, -1)), (0, slice(10, 5))]:
        with pytest.raises(IndexError):
            sb[bad]


def test_an_int_out_of_range_is_a_value_error_naming_the_argument(dev):
    # Never a bare OverflowError from the native layer.
    rt = dev.runtime()
    t = rt.alloc(64)
    reg = dev.reg("eng0.m2s.q0.q_cfg")
    cases = [
        (lambda: dev.read(2**64, 4), "addr"),
        (lambda: dev.read(-1, 4), "addr"),
        (lambda: dev.write(2**64, b"x"), "addr"),
        (lambda: dev.read32(2**64), "addr"),
        (lambda: dev.read("hbm0", 2**64), "n"),
        (lambda: dev.read("hbm0", -1), "n"),
        (lambda: dev.fill("hbm0", 4, byte=256), "byte"),
        (lambda: dev.write32("hbm0", 2**32), "value"),
        (lambda: dev.write32("hbm0", -1), "value"),
        (lambda: setattr(reg, "value", 2**32), "value"),
        (lambda: dev.run(cycles=2**64), "cycles"),
        (lambda: dev.run(cycles=-5), "cycles"),
        (lambda: dev.wait("hbm0", "==", 2**32), "value"),
        (lambda: dev.wait("hbm0", "==", 0, timeout=-1), "timeout"),
        (lambda: dev.inst(256, bytes(64)), "core"),
        (lambda: dev.hbm_tensor(2**64, (4,), "uint8"), "addr"),
        (lambda: rt.alloc(2**64), "size"),
        (lambda: t.copyin(b"x", offset=2**64), "offset"),
        (lambda: t.copyout(offset=-1, size=4), "offset"),
        (lambda: ns.desc.tx(2**32, 0), "len"),
        (lambda: ns.desc.rx(64, 2**64), "dst"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=rf"\b{name}\b") as e:
            call()
        assert not isinstance(e.value, OverflowError), e.value


def test_a_non_integer_count_is_a_type_error(dev):
    dev.write("hbm0", np.arange(8, dtype=np.uint8))
    rt = dev.runtime()
    t = rt.alloc(64)
    cases = [
        (lambda: dev.read("hbm0", 2.9), "n"),
        (lambda: dev.read(4096.0, 2), "addr"),
        (lambda: dev.fill("hbm0", 2.5), "n"),
        (lambda: dev.write32("hbm0", 1.5), "value"),
        (lambda: dev.run(cycles=10.5), "cycles"),
        (lambda: dev.reg("eng0.m2s.q0.q_cfg").set(EN_PREF=0.5), "EN_PREF"),
        (lambda: rt.alloc(64.5), "size"),
        (lambda: t.copyout(size=2.5), "size"),
    ]
    for call, name in cases:
        with pytest.raises(TypeError, match=rf"\b{name}\b"):
            call()
    # Integers of numpy's and anything with __index__ are integers.
    assert dev.read("hbm0", np.int64(3)).tolist() == [0, 1, 2]
    assert dev.read(np.uint64(dev.addr("hbm0")), True).tolist() == [0]


def test_a_float_shape_or_bound_is_a_type_error_naming_it(dev):
    # numpy refuses float shapes and slice bounds (TypeError); so do the
    # shapes and bounds here, naming the argument, never cutting 2.5 to 2.
    dev.write("hbm0", np.arange(64, dtype=np.uint8))
    t = dev.runtime().alloc(4096)
    sb, sbf = dev.sbuf(0), dev.sbuf(0, dtype="float32")
    hbm = dev.hbm_tensor("hbm0", (8, 4), "float32")
    cases = [
        (lambda: dev.read_array("hbm0", (2.5, 4), "float32"), r"shape\[0\]"),
        (lambda: dev.read_array("hbm0", 2.5, "float32"), "shape"),
        (lambda: t.copyout(np.float32, shape=(2.9, 4)), r"shape\[0\]"),
        (lambda: t.copyout(np.float32, shape=2.9), "shape"),
        (lambda: sb[0:2.7, 0:16], "partition stop"),
        (lambda: sb[0.0:2, 0:16], "partition start"),
        (lambda: sb[0:2, 0:16.5], "column stop"),
        (lambda: sbf[0:2, 1.5:4], "column start"),
        (lambda: sb.__setitem__((slice(0, 2), slice(0, 3.5)), 7), "column stop"),
        (lambda: dev.hbm_tensor("hbm0", (2.5, 4), "float32"), r"shape\[0\]"),
        (lambda: dev.sbuf_tile(0, (8, 4.5), "float32"), r"shape\[1\]"),
        (lambda: hbm[0:2.5], "dim 0 stop"),
        (lambda: hbm[:, 1.0:], "dim 1 start"),
    ]
    for call, name in cases:
        with pytest.raises(TypeError, match=name):
            call()
    # Integers of numpy's are integers, as for numpy.
    assert dev.read_array("hbm0", (np.int64(2), 4), "uint8").tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert t.copyout(np.uint8, shape=np.int64(3)).shape == (3,)
    assert sb[np.int64(0):np.int64(2), 0:np.uint8(16)].shape == (2, 16)
    assert hbm[np.int64(1):np.int64(3)].shape == (2, 4)
