"""run_trace against the CLI's --json, and the device snapshot against the
CLI's CSR snapshot of the same work (items 1, 5)."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import neuron_sim as ns

TRACES = ["fw-tile-load-bf16.trace", "copy-hbm-hbm.trace", "fw-transpose.trace"]
# Every golden trace (traces/, with its subdirectories).
GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[3] / "traces"
GOLDEN = sorted(str(p.relative_to(GOLDEN_DIR)) for p in GOLDEN_DIR.rglob("*.trace"))


def cli_json(cli, trace, *extra):
    out = subprocess.run([str(cli), "run", str(trace), "--json", "--no-host-timing", *extra],
                         capture_output=True, text=True)
    doc = json.loads(out.stdout)
    doc.pop("schema_version", None)
    return doc, out.returncode


@pytest.mark.parametrize("name", TRACES)
def test_run_trace_equals_cli_json(root, cli, name):
    trace = root / "traces" / name
    want, code = cli_json(cli, trace)
    rep = ns.run_trace(str(trace))
    assert rep.to_dict() == want
    assert rep.exit_code == code == 0


@pytest.mark.parametrize("name", GOLDEN)
def test_every_golden_trace_equals_cli_json(root, cli, name):
    # The whole document, the steps' device events in their order
    # included: `run --json` is the reference (docs/user-guide.md §8
    # "Output as the run goes", §9).
    trace = root / "traces" / name
    out = subprocess.run([str(cli), "run", str(trace), "--json", "--no-host-timing"],
                         capture_output=True, text=True)
    if out.returncode == 2 and not out.stdout:
        # Bad input to the CLI (a sweep template): nothing runs in either.
        with pytest.raises(ns.TraceError, match="nothing was run"):
            ns.run_trace(str(trace))
        return
    want = json.loads(out.stdout)
    want.pop("schema_version", None)
    rep = ns.run_trace(str(trace))
    assert rep.exit_code == out.returncode
    for i, (got, exp) in enumerate(zip(rep["steps"], want["steps"])):
        assert got == exp, f"step {i} (line {exp['line']}) differs"
    assert rep.to_dict() == want


def test_report_is_subscriptable(root):
    rep = ns.run_trace(root / "traces" / "fw-tile-load-bf16.trace")
    assert rep["cycles"] > 0 and rep["expectations_failed"] == 0
    assert rep.ok and "steps" in rep and len(rep["steps"]) == rep["statements"]


def test_run_trace_from_text():
    rep = ns.run_trace("fill hbm0 len=64 byte=0x5a\nexpect hbm0+0x3c bytes=5a5a5a5a\n")
    assert rep["expectations_passed"] == 1 and rep.ok


def test_failed_expectation_exit_code():
    rep = ns.run_trace("fill hbm0 len=4 byte=0x1\nexpect hbm0 bytes=02020202\n")
    assert rep.exit_code == 1 and rep["expectations_failed"] == 1


def test_bad_trace_raises_trace_error():
    with pytest.raises(ns.TraceError, match="nothing was run"):
        ns.run_trace("frobnicate hbm0\n")


def test_a_trace_file_past_the_limit_is_refused_unread(tmp_path):
    # As `neuron-sim run` (user guide §3): a trace over 256 MiB is refused
    # from its size; the sparse file is never read into memory.
    big = tmp_path / "big.trace"
    with open(big, "wb") as f:
        f.truncate(257 * 2**20)
    with pytest.raises(ValueError, match="the limit for a trace"):
        ns.run_trace(str(big))


def test_host_trace_report(root, cli):
    traces = sorted((root / "traces").glob("host-*.trace"))
    assert traces
    want, _ = cli_json(cli, traces[0])
    rep = ns.run_trace(traces[0])
    assert rep.to_dict() == want


def test_csr_snapshot_equals_cli_snapshot(root, cli, tmp_path):
    # The same work as a trace and through the API.
    trace = tmp_path / "snap.trace"
    trace.write_text(
        "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n"
        "write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n"
        "fill hbm0 len=4096 byte=0x11\n"
        "inst tpb0 DIRECT2D semaphore=1 sem_increment=1 src_start_addr=imm:0x0 src_step_elem=[1,32] "
        "src_num_elem=[32,128] src_elem_size=1 dst_start_addr=imm:0x2000000000 "
        "dst_step_elem=[1,262144] dst_num_elem=[32,128] dst_elem_size=1 in_dtype=UINT8 out_dtype=UINT8\n"
        "run\n")
    snap = tmp_path / "snap.json"
    subprocess.run([str(cli), "run", str(trace), "-q", "--csr-snapshot", str(snap)], check=True,
                   capture_output=True)
    want = json.loads(snap.read_text())
    want.pop("schema_version", None)

    dev = ns.Device()
    assert dev.addr("hbm0") == 0
    dev.configure_dge(0, engines=16, ring_descriptors=256)
    dev.fill("hbm0", 4096, 0x11)
    src = dev.hbm_tensor("hbm0", (128, 32), "uint8")
    dst = dev.sbuf_tile(0, (128, 32), "uint8")
    ns.dma_copy(dev, dst=dst, src=src)
    assert dev.csr_snapshot() == want
    assert np.all(dst.numpy() == 0x11)


def test_csr_snapshot_yaml(dev):
    dev.write32("eng1.m2s.q0.tdrbp_low", 0x3000)
    y = dev.csr_snapshot_yaml()
    assert "eng1.m2s.q0" in y and "TDRBP_LOW" in y and "0x3000" in y


def test_example_script_runs(root):
    import sys

    out = subprocess.run([sys.executable, str(root / "examples" / "tile_load_transpose.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ok: load and transpose match numpy" in out.stdout
    assert "GB/s" in out.stdout


def test_a_missing_trace_path_is_named_and_bytes_are_refused():
    with pytest.raises(FileNotFoundError, match="copy-hbm-hbm.trce"):
        ns.run_trace("traces/copy-hbm-hbm.trce")
    with pytest.raises(FileNotFoundError, match="nonexist.trace"):
        ns.run_trace("nonexist.trace")
    with pytest.raises(TypeError, match="not bytes"):
        ns.run_trace(b"run\n")
    # One-line trace text still runs as text.
    assert ns.run_trace("fill hbm0 len=4 byte=0x1").exit_code == 0


# A 4 KiB copy into the pad past a partition's populated bytes: one
# unexpected fault (as crates/neuron-sim/tests/faults.rs `pad_copy`).
PAD_FAULT = """fill hbm0+0x100000 len=4096 pattern=incr8
write32 eng0.m2s.q0.tdrbp_low 0x01000000
write32 eng0.m2s.q0.tdrl 256
write32 eng0.s2m.q0.rdrbp_low 0x01001000
write32 eng0.s2m.q0.rdrl 256
write32 eng0.s2m.q0.comp_cfg 0
write32 eng0.m2s.q0.q_cfg 0x03030000
write32 eng0.s2m.q0.q_cfg 0x03030000
write32 eng0.m2s.change_state 1
write32 eng0.s2m.change_state 1
desc eng0.s2m.q0 len=4096 dst=tpb0.sbuf[p0]+0x38000
desc eng0.m2s.q0 len=4096 src=hbm0+0x100000 first last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 1
run
"""
# A word the firmware refuses (crates/neuron-sim/tests/work_left.rs).
REFUSED_WORD = """write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x00400000
write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff
inst tpb0 DIRECT2D events.update_mode=0x42 semaphore=1 sem_increment=1 src_start_addr=imm:0x10000000 src_step_elem=[1,256] src_num_elem=[256,1] src_elem_size=1 dst_start_addr=imm:0x10100000 dst_step_elem=[1,256] dst_num_elem=[256,1] dst_elem_size=1
run
"""


@pytest.mark.parametrize("text,why", [(PAD_FAULT, "1 unexpected fault(s)"),
                                      (REFUSED_WORD, "1 word(s) or call(s) refused by the firmware"),
                                      (PAD_FAULT + "expect_fault eng0.s2m.q0\n", None),
                                      (REFUSED_WORD + "expect_refusal tpb0 count=1\n", None)])
def test_fail_on_fault_fails_unexpected_faults_and_refusals(text, why):
    plain = ns.run_trace(text)
    assert plain.ok and plain.exit_code == 0 and plain.fail_reasons == []
    rep = ns.run_trace(text, fail_on_fault=True)
    assert rep.to_dict() == plain.to_dict()
    if why is None:
        assert rep.ok and rep.exit_code == 0 and rep.fail_reasons == []
    else:
        assert not rep.ok and rep.exit_code == 1
        assert len(rep.fail_reasons) == 1 and why in rep.fail_reasons[0]


def test_fail_on_fault_does_not_count_faults_after_stale_control_data(root):
    # Timing-only: such a fault is listed (a RuntimeWarning), not counted,
    # as `run --fail-on-fault --timing-only` (docs/user-guide.md §11).
    trace = root / "crates" / "neuron-sim" / "tests" / "data" / "stale-ring.trace"
    assert ns.run_trace(trace, fail_on_fault=True).ok
    with pytest.warns(RuntimeWarning, match="first raised after the run acted on bytes no copy moved"):
        rep = ns.run_trace(trace, fail_on_fault=True, timing_only=True)
    assert rep.ok


@pytest.mark.parametrize("text", [PAD_FAULT, REFUSED_WORD, PAD_FAULT + "expect_fault eng0.s2m.q0\n"])
def test_fail_on_fault_agrees_with_the_cli(cli, tmp_path, text):
    trace = tmp_path / "t.trace"
    trace.write_text(text)
    for flag in [[], ["--fail-on-fault"]]:
        want, code = cli_json(cli, trace, *flag)
        rep = ns.run_trace(trace, fail_on_fault=bool(flag))
        assert rep.exit_code == code and rep.to_dict()["unexpected_faults"] == want["unexpected_faults"]
