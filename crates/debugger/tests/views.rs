//! The views a firmware engineer reads, and pokes (issue 14 items 4, 5):
//! addresses named, rings flagged slot by slot, doorbells that will fault
//! called out, registers one by one or filtered, memory folded; trace
//! statements and `set` typed at a stop run at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use debugger::view::{
    doorbell_warnings, show_mem, show_regs, show_ring, show_ring_range, symbolic,
};
use debugger::{Granularity, Session, SessionConfig, StopKind};
use soc::Device;
use soc::exec::{Status, queue_target};

fn session(name: &str) -> Session {
    session_of(name, &trace_text(name))
}

#[test]
fn addresses_have_names() {
    let d = Device::trn2().unwrap();
    for (addr, name) in [
        (0x10_0000, "hbm0+0x100000"),
        (0x40_00b0_0000, "hbm1+0xb00000"),
        (0x20_0060_0040, "tpb0.sbuf[p24]+0x40"),
        (0x20_0000_0000, "tpb0.sbuf[p0]"),
        (0x28_0270_181c, "tpb0.evt_sem.SEM_INC[7]"),
        (0x10_0200_1034, "eng0.m2s.q0.TDRHP"),
    ] {
        assert_eq!(symbolic(&d, addr), name, "{addr:#x}");
    }
    assert!(symbolic(&d, 0xffff_ffff_ffff_0000).starts_with("unmapped "));
}

#[test]
fn rings_flag_every_slot() {
    let mut s = session("copy-hbm-hbm.trace");
    // At cycle 22 both descriptors are prefetched, the packet not done.
    s.step(Granularity::UntilCycle(22)).unwrap();
    let d = s.device();
    let tx = queue_target(d, "eng0.m2s.q0").unwrap();
    let ring = show_ring(d, &tx, 0);
    assert!(
        ring.starts_with("ring eng0.m2s.q0: base 0x1000000, 256 descriptors; head 1 (ring id 1), tail 1 (ring id 1), 1 outstanding\n"),
        "{ring}"
    );
    assert!(
        ring.contains("  fetched[   0] 0x000001000000: len   4096 ring_id 1 FIRST LAST src 0x100000 (hbm0+0x100000)  op CME COPY\n"),
        "{ring}"
    );
    let range = show_ring_range(d, &tx, 0, 2);
    let tags: Vec<&str> = range.lines().skip(1).map(|l| &l[2..9]).collect();
    assert_eq!(tags, ["fetched", "beyond ", "beyond "], "{range}");
    assert!(show_ring_range(d, &tx, 3, 300).contains("slots 3..300 are not in the ring (0..255)"));
    // Done: nothing in flight.
    s.step(Granularity::Continue).unwrap();
    let d = s.device();
    assert!(show_ring(d, &tx, 0).contains("(no descriptors in flight or between head and tail)"));
    assert!(show_ring_range(d, &tx, 0, 0).contains("  beyond [   0]"));
}

#[test]
fn doorbells_that_will_fault_are_called_out() {
    // A descriptor written with ring id 2 where the queue expects 1.
    let mut s = session("fault-ring-id.trace");
    s.add_break("doorbell eng128.m2s.q0").unwrap();
    let stop = s.step(Granularity::Continue).unwrap();
    let StopKind::Doorbell { queue, increment } = stop.kind else {
        panic!("{stop:?}");
    };
    let d = s.device();
    assert_eq!(
        doorbell_warnings(d, &queue, increment),
        [
            "warning: 1 of the 1 descriptors this doorbell posts carry a stale ring id ([0] has 2, expects 1): the prefetch will raise PREF_RING_ID"
        ]
    );
    assert!(
        show_ring(d, &queue, increment)
            .contains("ring_id 2 FIRST LAST src 0xb00000 (hbm0+0xb00000)  op CME COPY  <- stale ring id: the queue expects 1 here (PREF_RING_ID when prefetched)"),
    );
    // A doorbell of 33 on a ring of 32.
    let mut s = session("fault-doorbell-overrun.trace");
    s.add_break("line 75").unwrap();
    let stop = s.step(Granularity::Continue).unwrap();
    let StopKind::Doorbell { queue, increment } = stop.kind else {
        panic!("{stop:?}");
    };
    let w = doorbell_warnings(s.device(), &queue, increment);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("warning: this doorbell overruns the ring: 0 outstanding + 33 > 32 descriptors; the engine drops it and raises SEC_D_INT_CAUSE.M2S_DOORBELL_OVERRUN"),
        "{w:?}"
    );
    // A clean doorbell has nothing to say.
    let mut s = session("copy-hbm-hbm.trace");
    let stop = s.step(Granularity::Doorbell).unwrap();
    let StopKind::Doorbell { queue, increment } = stop.kind else {
        panic!("{stop:?}");
    };
    assert!(doorbell_warnings(s.device(), &queue, increment).is_empty());
}

#[test]
fn registers_one_by_one_or_filtered() {
    let mut s = session("fault-doorbell-overrun.trace");
    s.step(Granularity::ToEnd).unwrap();
    let d = s.device();
    let changed = show_regs(d, "eng11.gen", true, None);
    assert!(
        changed
            .contains("  0x20c0 SEC_D_INT_CAUSE          0x00000001  M2S_DOORBELL_OVERRUN=0x1\n"),
        "{changed}"
    );
    assert!(!changed.contains("PRI_A_INT_CAUSE"), "{changed}");
    let causes = show_regs(d, "eng11.gen", true, Some("*cause*"));
    assert_eq!(causes.lines().count(), 2, "{causes}");
    let none = show_regs(d, "eng11.gen", true, Some("RLIMIT*"));
    assert!(
        none.contains("(none away from reset matching `RLIMIT*`)"),
        "{none}"
    );
    let one = show_regs(d, "eng11.m2s.q0.q_cfg", false, None);
    assert!(
        one.starts_with("eng11.m2s.q0.Q_CFG at 0x1002b01020 (RW, reset 0x03000000) = 0x03030000\n"),
        "{one}"
    );
    assert!(
        one.contains("  16      EN_PREF                  0x1\n"),
        "{one}"
    );
    let field = show_regs(d, "eng11.m2s.q0.q_cfg.en_pref", false, None);
    assert_eq!(
        field,
        "eng11.m2s.q0.Q_CFG.EN_PREF = 0x1 (mask 0x00010000, reset 0x0; register 0x03030000)\n"
    );
    assert!(show_regs(d, "eng11.m2s.q0.q_cfgg", false, None).contains("did you mean `q_cfg`?"));
    assert!(show_regs(d, "hbm0+0x10", false, None).contains("is memory, not a register"));
}

#[test]
fn memory_folds_and_says_when_it_cuts() {
    let d = Device::trn2().unwrap();
    let text = show_mem(&d, "hbm0+0x1000", "0x400");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "hbm0+0x1000 (0x1000), 1024 bytes:");
    assert_eq!(lines[2], "    *");
    assert_eq!(lines.len(), 4, "{text}");
    let big = show_mem(&d, "hbm0", "99999999");
    assert!(
        big.ends_with("(the first 1048576 of 99999999 bytes: mem shows at most 1048576 at once)\n"),
        "{big}"
    );
    assert!(show_mem(&d, "hbm9", "16").contains("no such instance"));
}

#[test]
fn pokes_run_at_the_current_cycle() {
    let mut s = session("fault-ring-id.trace");
    s.add_break("doorbell eng128.m2s.q0").unwrap();
    s.step(Granularity::Continue).unwrap();
    // Fix the descriptor before its doorbell is written.
    let (status, text) = s
        .poke("desc eng128.m2s.q0[0] len=4096 src=hbm0+0xb00000 first last ring_id=1")
        .unwrap();
    assert_eq!(status, Status::Ok, "{text}");
    let q = queue_target(s.device(), "eng128.m2s.q0").unwrap();
    assert!(doorbell_warnings(s.device(), &q, 1).is_empty());
    // Checks, refusals and errors.
    let (status, text) = s.poke("read32 eng128.m2s.q0.tdrl == 33").unwrap();
    assert_eq!(status, Status::Failed);
    assert!(
        text.contains("expected 0x00000021, read 0x00000020"),
        "{text}"
    );
    let (status, text) = s.poke("run").unwrap();
    assert_eq!(status, Status::Error);
    assert!(text.contains("cannot run out of turn"), "{text}");
    assert!(
        s.poke("write32 eng128.m2s.q0.tdrll 1")
            .unwrap_err()
            .contains("did you mean `tdrl`?")
    );
    assert!(s.poke("fill hbm0 len=").is_err());
    // `set`: a field (read-modify-write), a memory word, a read-only register.
    assert_eq!(
        s.set("eng128.m2s.q0.q_cfg.en_pref", 0).unwrap(),
        "eng128.m2s.q0.Q_CFG: 0x03030000 -> 0x03020000"
    );
    assert!(
        s.set("eng128.m2s.q0.q_cfg.en_pref", 2)
            .unwrap_err()
            .contains("does not fit")
    );
    s.set("eng128.m2s.q0.q_cfg.en_pref", 1).unwrap();
    assert_eq!(
        s.set("hbm0+0x10", 0x1234_5678).unwrap(),
        "hbm0+0x10 (0x10) = 0x12345678"
    );
    assert!(
        s.set("eng128.m2s.q0.tdrhp", 5)
            .unwrap()
            .contains("is read-only")
    );
    // The fixed descriptor moves its packet: no ring-id fault, and the
    // trace's checks of that fault fail.
    s.add_break("fault eng128").unwrap();
    let stop = s.step(Granularity::Continue).unwrap();
    assert_eq!(stop.kind, StopKind::End, "{stop:?}");
    let r = s.report();
    assert!(r.expectations_failed > 0);
    assert!(
        r.failures
            .iter()
            .any(|f| f.message.contains("sec_a_int_cause")),
        "{:?}",
        r.failures
    );
}

/// `step --json` views answer in fields too (issue 14 item 6): registers
/// with their fields, one value, ring slots flagged, memory bytes, where,
/// time, events and the breakpoint table.
#[test]
fn json_views_carry_their_data_in_fields() {
    use debugger::Console;
    use debugger::protocol::{self, Message};
    use serde_json::Value as J;
    let mut c = Console::new(session("copy-hbm-hbm.trace"));
    protocol::start(&mut c, true);
    let mut view = |cmd: &str| -> J {
        let (m, _) = protocol::handle(&mut c, &serde_json::json!({ "command": cmd }).to_string());
        assert!(matches!(m, Message::Reply { .. }), "{cmd}: {m:?}");
        serde_json::to_value(&m).unwrap()["view"].clone()
    };
    let regs = view("regs eng0.s2m.q0 --changed");
    assert_eq!(regs["kind"], "registers");
    assert_eq!(regs["region"], "eng0.s2m.q0");
    let q_cfg = regs["registers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "Q_CFG")
        .unwrap();
    assert_eq!(q_cfg["value"], "0x3030000");
    assert!(
        q_cfg["fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "EN_PREF" && f["value"] == "0x1" && f["bits"] == "16")
    );
    let globbed = view("regs eng0.s2m.q0 *RDR?P*");
    let names: Vec<&str> = globbed["registers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["RDRBP_LOW", "RDRBP_HIGH", "RDRHP", "RDRTP_INC", "RDRTP"]
    );
    assert_eq!(
        view("regs eng0.s2m.q0.q_cfg.en_pref"),
        serde_json::json!({"kind": "value", "name": "eng0.s2m.q0.q_cfg.en_pref", "value": "0x1"})
    );
    let ring = view("ring");
    assert_eq!(ring["queue"], "eng0.s2m.q0");
    assert_eq!(ring["slots"][0]["index"], 0);
    assert_eq!(ring["slots"][0]["flag"], "new");
    assert_eq!(view("ring eng0.m2s.q0 0..1")["slots"][1]["flag"], "beyond");
    assert_eq!(
        view("mem hbm0+0x100000 4"),
        serde_json::json!({"kind": "memory", "address": "0x100000", "bytes": "00010203"})
    );
    let w = view("where");
    assert_eq!(
        (&w["line"], &w["under_way"]),
        (&J::from(14), &J::from(false))
    );
    assert_eq!(view("time")["cycle"], 0);
    assert_eq!(view("events")["kind"], "events");
    view_break(&mut c);
    // A command that is not a view has no view data.
    let (m, _) = protocol::handle(&mut c, r#"{"command": "help"}"#);
    assert!(serde_json::to_value(&m).unwrap().get("view").is_none());
}

fn view_break(c: &mut debugger::Console) {
    use debugger::protocol;
    protocol::handle(c, r#"{"command": "break line 16"}"#);
    protocol::handle(c, r#"{"command": "ignore 1 2"}"#);
    let (m, _) = protocol::handle(c, r#"{"command": "info break"}"#);
    let v = serde_json::to_value(&m).unwrap()["view"].clone();
    assert_eq!(
        v,
        serde_json::json!({"kind": "breakpoints", "breakpoints": [
            {"id": 1, "spec": "break line 16", "enabled": true, "hits": 0, "ignore": 2}
        ]})
    );
}

/// `inflight` (issue 14 item 5): descriptors in flight per queue, the
/// scheduler's next pick, the firmware's words and what they wait on.
#[test]
fn inflight_shows_what_is_under_way() {
    let mut s = session("fw-semaphore-chain.trace");
    s.step(Granularity::UntilCycle(300)).unwrap();
    let text = debugger::view::show_inflight(s.device());
    for want in [
        "next pick: eng0 (its next event) at cycle 312\n",
        "  eng0: m2s normal, s2m normal; next event at cycle 312\n",
        "    eng0.m2s.q1: 8 descriptors in flight (fetched, packet not done), 1 posted behind them\n",
        "  tpb0 firmware: 2 words queued, 1 in flight\n",
        "    tpb0#0 DIRECT2D (line 42) waits on eng2.q1 for completions: M2S at 0 of 1, S2M at 0 of 1",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
    while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
    assert_eq!(
        debugger::view::show_inflight(s.device()),
        "next pick: nothing pending (engines idle, no firmware run due)\n  no engine has work under way\n  firmware: no core has words queued or in flight\n"
    );
}

/// Addresses in event lines and ring base registers carry their names
/// (issue 14 item 5).
#[test]
fn event_lines_and_base_registers_name_their_addresses() {
    let d = Device::trn2().unwrap();
    assert_eq!(
        debugger::view::name_addresses(&d, "RD : addr=0x2000200200, elem_size=2"),
        "RD : addr=0x2000200200 (tpb0.sbuf[p8]+0x200), elem_size=2"
    );
    // Short numbers, unmapped addresses and names already given stay.
    for plain in [
        "bits 0x1f",
        "data write at 0x1000000000000: 0x1000000000000 is not mapped",
        "at 0x200000 (hbm0+0x200000)",
    ] {
        assert_eq!(debugger::view::name_addresses(&d, plain), plain);
    }
    // A helper's finding: values that happen to fall in a mapped region
    // were named as addresses — a REGWRITE micro-op's value, a packet's
    // checksum, a register's bits. They are values: left as numbers.
    for value in [
        "push REGWRITE to DMA[0]: src = REG[3] = 0x200000",
        "@40 eng0 q0 packet done: 64 bytes written, checksum 0x5c0000aa",
        "@3 eng0 m2s.q0 Q_SW_CTRL reset bits 0x100000",
    ] {
        assert_eq!(debugger::view::name_addresses(&d, value), value);
    }
    let mut s = session("copy-hbm-hbm.trace");
    s.step(Granularity::Doorbell).unwrap();
    let regs = show_regs(s.device(), "eng0.m2s.q0", true, None);
    assert!(
        regs.contains(
            "  0x0028 TDRBP_LOW                0x01000000  ADDR=0x40000  -> hbm0+0x1000000\n"
        ),
        "{regs}"
    );
}

/// A session over trace text `source` (named `name`).
fn session_of(name: &str, source: &str) -> Session {
    new_session(name, source, SessionConfig::default(), Box::new(|_| {}))
}

/// A doorbell stop's prediction (docs/user-guide.md §12 "What a stop
/// shows") is what stepping the doorbell then does: the slots flagged
/// `new` are the slots it posts, and the PREF_RING_ID warning says the
/// prefetch will raise it only when it does — on an engine never enabled
/// (the doorbell posts, nothing is prefetched), an enabled one, and a ring
/// the doorbell overruns (dropped: nothing posts).
#[test]
fn a_doorbell_stop_predicts_what_stepping_it_does() {
    const ENABLE: &str =
        "write32 eng128.m2s.q0.q_cfg 0x03030000\nwrite32 eng128.m2s.change_state 0x1\n";
    for (what, enable, increment) in [
        ("disabled", "", 1),
        ("enabled", ENABLE, 1),
        ("overrun", ENABLE, 33),
    ] {
        let source = format!(
            "fill hbm0+0xb00000 len=4096 pattern=incr8
write32 eng128.m2s.q0.tdrbp_low 0x09000000
write32 eng128.m2s.q0.tdrl 32
{enable}desc eng128.m2s.q0[0] len=4096 src=hbm0+0xb00000 first last ring_id=2
doorbell eng128.m2s.q0 {increment}
run
"
        );
        let mut s = session_of(&format!("{what}.trace"), &source);
        let stop = s.step(Granularity::Doorbell).unwrap();
        let StopKind::Doorbell { queue, increment } = stop.kind else {
            panic!("{what}: {stop:?}");
        };
        let d = s.device();
        let predicted_slots: Vec<String> = show_ring(d, &queue, increment)
            .lines()
            .filter(|l| l.starts_with("  new "))
            .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.trim().to_string()))
            .collect();
        let warnings = doorbell_warnings(d, &queue, increment);
        let predicted_fault = warnings
            .iter()
            .any(|w| w.contains("will raise PREF_RING_ID"));
        let tail_before = soc::exec::ring_of(d, &queue).unwrap().2;
        // The doorbell, then the `run` that lets it take effect.
        s.step(Granularity::Statement).unwrap();
        s.step(Granularity::Statement).unwrap();
        let d = s.device();
        let tail_after = soc::exec::ring_of(d, &queue).unwrap().2;
        let posted: Vec<String> = (tail_before..tail_after).map(|i| i.to_string()).collect();
        let faulted = s
            .recent_events()
            .any(|e| soc::exec::event_text(e).contains("FAULT SEC_A_INT_CAUSE.PREF_RING_ID"));
        assert_eq!(predicted_slots, posted, "{what}: the slots flagged new");
        assert_eq!(predicted_fault, faulted, "{what}: {warnings:?}");
    }
}

/// A write the register file ignores shows in `events` (docs/user-guide.md
/// §12 "Views") at the step that made it — a trace statement or a poke at
/// the prompt — with its cycle, naming the register and not taking the
/// value written for an address.
#[test]
fn an_ignored_write_shows_at_its_step_with_its_cycle() {
    let source = "write32 eng0.m2s.q0.tdrl 0xffffffff
run cycles=10
write32 eng0.m2s.q0.tdrbp_low 0x09000000
";
    let mut s = session_of("ignored.trace", source);
    s.step(Granularity::Statement).unwrap();
    let lines = |s: &mut Session| -> Vec<String> {
        let events: Vec<soc::DeviceEvent> = s.recent_events().cloned().collect();
        let d = s.device();
        events
            .iter()
            .map(|e| debugger::view::event_line(d, e))
            .collect()
    };
    assert_eq!(
        lines(&mut s),
        [
            "    @0 write of 0xffffffff to eng0.m2s.q0.TDRL: bits 0xff000000 are read-only or reserved\n"
        ]
    );
    s.step(Granularity::Statement).unwrap();
    let (status, text) = s.poke("write32 eng0.m2s.q0.tdrl 0xffffffff").unwrap();
    assert_eq!(status, Status::Ok, "{text}");
    assert_eq!(
        lines(&mut s).last().map(String::as_str),
        Some(
            "    @10 write of 0xffffffff to eng0.m2s.q0.TDRL: bits 0xff000000 are read-only or reserved\n"
        ),
    );
    // `set` of a read-only register, and the console's view of it.
    assert!(
        s.set("eng0.m2s.q0.q_status", 5)
            .unwrap()
            .contains("is read-only")
    );
    let mut c = debugger::Console::new(s);
    let text = c.execute("events 1").text;
    assert_eq!(
        text,
        "    @10 ignored write of 0x00000005 to read-only eng0.m2s.q0.Q_STATUS\n"
    );
}
