//! The session API over golden traces (issue 14 items 1, 2, 3, 7): every
//! granularity stops where it says, every breakpoint kind fires and says
//! why, and pausing anywhere leaves the run exactly as `run` would have it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::cell::RefCell;
use std::rc::Rc;

use debugger::{DoorbellFilter, FinishTarget, Granularity, Session, SessionConfig, Stop, StopKind};
use soc::Device;
use soc::exec::{RunReport, StepRecord};

type Records = Rc<RefCell<Vec<StepRecord>>>;

fn session_with(name: &str, config: SessionConfig) -> (Session, Records) {
    let records: Records = Rc::default();
    let r = Rc::clone(&records);
    let s = new_session(
        name,
        &trace_text(name),
        config,
        Box::new(move |rec| r.borrow_mut().push(rec.clone())),
    );
    (s, records)
}

fn session(name: &str) -> (Session, Records) {
    session_with(name, SessionConfig::default())
}

/// The report `run` gives (host runtime included).
fn run_report(name: &str) -> RunReport {
    let source = std::fs::read_to_string(traces().join(name)).unwrap();
    host_exec::run_source(Device::trn2().unwrap(), &source, name, &mut Dir(traces()))
        .unwrap()
        .0
}

/// The figures `run` and a session must agree on.
fn figures(r: &RunReport) -> String {
    let mut r = r.clone();
    r.steps.clear();
    format!(
        "{}\n{:?}\n{:?}\n{:?}",
        r.tail_text(),
        r.failures,
        r.errors,
        r.warnings
    )
}

fn step(s: &mut Session, g: Granularity) -> Stop {
    s.step(g).unwrap()
}

/// Runs to the end, then the report.
fn finish(mut s: Session) -> RunReport {
    while step(&mut s, Granularity::ToEnd).kind != StopKind::End {}
    s.finish().0
}

const TRACES: [&str; 5] = [
    "copy-hbm-hbm.trace",
    "fw-semaphore-chain.trace",
    "fault-doorbell-overrun.trace",
    "fw-tile-load-bf16.trace",
    "host-dmem-batch.trace",
];

#[test]
fn pausing_anywhere_gives_the_cycles_of_run() {
    for name in TRACES {
        let want = figures(&run_report(name));
        // Through: no stop at all.
        let (s, _) = session(name);
        assert_eq!(figures(&finish(s)), want, "{name}: straight through");
        // Every 13 cycles, then every device event, then every statement.
        let (mut s, _) = session(name);
        for _ in 0..200 {
            step(&mut s, Granularity::Cycles(13));
        }
        for _ in 0..200 {
            step(&mut s, Granularity::Event);
        }
        for _ in 0..20 {
            step(&mut s, Granularity::Statement);
        }
        assert_eq!(figures(&finish(s)), want, "{name}: paused");
        // Every doorbell, with a watch on a semaphore and a fault breakpoint.
        let (mut s, _) = session(name);
        s.add_watch("tpb0.sem.read[2]").unwrap();
        s.add_break("fault").unwrap();
        s.add_break("packet").unwrap();
        for _ in 0..100 {
            step(&mut s, Granularity::Doorbell);
        }
        assert_eq!(figures(&finish(s)), want, "{name}: with breakpoints");
    }
}

#[test]
fn statements_stream_and_the_end_stays() {
    let (mut s, records) = session("copy-hbm-hbm.trace");
    let first = step(&mut s, Granularity::Statement);
    assert_eq!(first.kind, StopKind::Statement { line: 3 });
    assert_eq!(records.borrow().len(), 1, "the record came as it ran");
    assert_eq!(first.position.as_ref().unwrap().line, 4);
    let mut n = 1;
    loop {
        let stop = step(&mut s, Granularity::Statement);
        if stop.kind == StopKind::End {
            break;
        }
        n += 1;
    }
    assert_eq!(n, 16);
    assert!(s.ended());
    // At the end the state stays, and stepping says it has ended.
    assert_eq!(s.device().now().0, 194);
    let again = step(&mut s, Granularity::Continue);
    assert_eq!(again.kind, StopKind::End);
    assert!(s.step(Granularity::UntilCycle(100)).is_err());
    assert_eq!(s.report().exit_code(), 0);
}

#[test]
fn doorbells_stop_before_they_write_and_filters_apply() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let a = step(&mut s, Granularity::Doorbell);
    let StopKind::Doorbell { queue, increment } = &a.kind else {
        panic!("{a:?}");
    };
    assert_eq!((queue.region.as_str(), *increment), ("eng0.s2m.q0", 1));
    assert_eq!(a.position.as_ref().unwrap().line, 14);
    assert!(!a.position.as_ref().unwrap().under_way);
    let b = step(&mut s, Granularity::Doorbell);
    assert!(matches!(&b.kind, StopKind::Doorbell { queue, .. } if queue.region == "eng0.m2s.q0"));
    assert_eq!(step(&mut s, Granularity::Doorbell).kind, StopKind::End);

    // The firmware's doorbells, filtered to engine 3: one stop.
    let (mut s, _) = session_with(
        "fw-tile-load-bf16.trace",
        SessionConfig {
            filter: DoorbellFilter {
                engines: vec![3],
                queues: vec![],
            },
            ..SessionConfig::default()
        },
    );
    let fw = step(&mut s, Granularity::Doorbell);
    let StopKind::FwDoorbell(db) = &fw.kind else {
        panic!("{fw:?}");
    };
    assert_eq!((db.engine, db.queue, db.count, db.at), (3, 0, 9, 510));
    assert!(
        db.micro_ops
            .iter()
            .any(|o| o.contains("GENERATE to DMA[3]"))
    );
    assert!(fw.position.as_ref().unwrap().under_way);
    assert_eq!(
        fw.finish_target(),
        Some(FinishTarget::Word { tpb: 0, seq: 0 })
    );
    assert_eq!(step(&mut s, Granularity::Doorbell).kind, StopKind::End);

    // Unfiltered, the 16 engines rung together come one stop each.
    let (mut s, _) = session("fw-tile-load-bf16.trace");
    let mut engines = Vec::new();
    loop {
        match step(&mut s, Granularity::Doorbell).kind {
            StopKind::FwDoorbell(db) => engines.push(db.engine),
            StopKind::End => break,
            k => panic!("{k:?}"),
        }
    }
    assert_eq!(engines, (0..16).collect::<Vec<u16>>());
}

#[test]
fn cycles_land_exactly() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let a = step(&mut s, Granularity::UntilCycle(100));
    assert_eq!(a.cycle, 100);
    assert_eq!(a.kind, StopKind::Cycle { goal: 100 });
    let p = a.position.unwrap();
    assert_eq!((p.line, p.under_way), (16, true));
    let b = step(&mut s, Granularity::Cycles(50));
    assert_eq!(b.cycle, 150);
    assert!(s.step(Granularity::UntilCycle(150)).is_err(), "not ahead");
    assert!(s.step(Granularity::Cycles(0)).is_err());
    // Past the last event: the trace ends first.
    assert_eq!(step(&mut s, Granularity::Cycles(1000)).kind, StopKind::End);
    assert_eq!(s.device().now().0, 194);
}

#[test]
fn stepi_stops_at_each_device_event() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let mut seen = Vec::new();
    loop {
        let stop = step(&mut s, Granularity::Event);
        let StopKind::Events(events) = stop.kind else {
            assert_eq!(stop.kind, StopKind::End);
            break;
        };
        let text: Vec<String> = events.iter().map(soc::exec::event_text).collect();
        seen.push((stop.cycle, text.join("; ")));
    }
    // One stop per engine step: the state changes of lines 10 and 11, the
    // doorbells landing one cycle after they were written, the prefetches
    // and the packet start, the packet's end.
    let want = [
        (0, "@0 eng0 m2s state normal"),
        (0, "@0 eng0 s2m state normal"),
        (
            1,
            "@1 eng0 s2m.q0 doorbell +1: tail 1 ring_id 1; @1 eng0 m2s.q0 doorbell +1: tail 1 ring_id 1",
        ),
        (
            22,
            "@22 eng0 s2m.q0 prefetch [0..+1]: head 1 ring_id 1; @22 eng0 m2s.q0 prefetch [0..+1]: head 1 ring_id 1; @22 eng0 q0 packet start: 4096 bytes, 1 TX / 1 RX descriptors, lands @194",
        ),
        (194, "@194 eng0 q0 packet done: 4096 bytes written"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|(c, t)| (*c, t.to_string())).collect();
    assert_eq!(seen, want);
}

#[test]
fn finish_waits_for_the_packet_or_the_word() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let db = step(&mut s, Granularity::Doorbell);
    let t = db.finish_target().unwrap();
    assert_eq!(
        t,
        FinishTarget::Packet {
            engine: 0,
            queue: 0
        }
    );
    let done = step(&mut s, Granularity::Finish(t));
    assert_eq!(done.cycle, 194);
    assert!(
        matches!(&done.kind, StopKind::Finished { what } if what.contains("packet done")),
        "{done:?}"
    );

    let (mut s, _) = session("fw-semaphore-chain.trace");
    let stop = step(
        &mut s,
        Granularity::Finish(FinishTarget::Word { tpb: 0, seq: 1 }),
    );
    assert!(
        matches!(&stop.kind, StopKind::Finished { what } if what.contains("tpb0 inst#1 (line 43) done")),
        "{stop:?}"
    );
    assert_eq!(stop.cycle, 1992);
    let e = s
        .step(Granularity::Finish(FinishTarget::Word { tpb: 0, seq: 1 }))
        .unwrap_err();
    assert!(e.contains("completed already, at cycle 1992"), "{e}");
}

/// Runs `continue` until the end; returns each stop's hits as
/// (breakpoint number, why) and the cycle.
fn hits(s: &mut Session) -> Vec<(u32, u64, String)> {
    let mut out = Vec::new();
    loop {
        let stop = step(s, Granularity::Continue);
        if stop.kind == StopKind::End {
            return out;
        }
        assert!(!stop.hits.is_empty(), "{stop:?}");
        for h in stop.hits {
            out.push((h.id, stop.cycle, h.why));
        }
    }
}

#[test]
fn every_breakpoint_kind_fires_and_says_why() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let line = s.add_break("line 16").unwrap().0;
    let db = s.add_break("doorbell eng0.m2s.q0").unwrap().0;
    let cycle = s.add_break("cycle 100").unwrap().0;
    let packet = s.add_break("packet eng0.s2m.q0").unwrap().0;
    let state = s.add_break("state eng0.m2s").unwrap().0;
    let watch = s.add_watch("eng0.m2s.q0.tdrhp").unwrap();
    let test = s.add_watch("eng0.s2m.q0.rdrtp.offset >= 1").unwrap();
    let got = hits(&mut s);
    let whys = |id: u32| -> Vec<(u64, String)> {
        got.iter()
            .filter(|h| h.0 == id)
            .map(|h| (h.1, h.2.clone()))
            .collect()
    };
    assert_eq!(whys(state), [(0, "@0 eng0 m2s state normal".to_string())]);
    assert_eq!(
        whys(db),
        [(0, "doorbell eng0.m2s.q0 += 1 at line 15".to_string())]
    );
    assert_eq!(whys(line), [(0, "line 16".to_string())]);
    assert_eq!(
        whys(test),
        [(
            1,
            "eng0.s2m.q0.rdrtp.offset changed 0x0 -> 0x1 at cycle 1".to_string()
        )]
    );
    assert_eq!(
        whys(watch),
        [(
            22,
            "eng0.m2s.q0.tdrhp changed 0x40000000 -> 0x40000001 at cycle 22".to_string()
        )]
    );
    assert_eq!(whys(cycle), [(100, "reached cycle 100".to_string())]);
    assert_eq!(
        whys(packet),
        [(
            194,
            "@194 eng0 q0 packet done: 4096 bytes written".to_string()
        )]
    );
    // The table counts them.
    assert!(s.breakpoints().iter().all(|b| b.hits == 1));
}

#[test]
fn faults_ring_ids_and_cores() {
    let (mut s, _) = session("fault-doorbell-overrun.trace");
    let any = s.add_break("fault").unwrap().0;
    let eng12 = s.add_break("fault eng12 S2M_DOORBELL_OVERRUN").unwrap().0;
    let got = hits(&mut s);
    let count = |id: u32| got.iter().filter(|h| h.0 == id).count();
    assert_eq!(count(any), 3);
    assert_eq!(count(eng12), 1);
    assert!(got.iter().any(|h| h.0 == eng12
        && h.1 == 279
        && h.2.contains("SEC_D_INT_CAUSE.S2M_DOORBELL_OVERRUN")));

    let (mut s, _) = session("fault-ring-id.trace");
    let ring = s.add_break("ring-id eng128").unwrap().0;
    let got = hits(&mut s);
    assert!(!got.is_empty());
    assert!(
        got.iter()
            .all(|h| h.0 == ring && h.2.contains("PREF_RING_ID"))
    );

    // A core's doorbells and words.
    let (mut s, _) = session("fw-semaphore-chain.trace");
    let core = s.add_break("doorbell tpb0").unwrap().0;
    let word = s.add_break("tpb0#2").unwrap().0;
    let sem = s.add_watch("tpb0.sem.read[7] >= 1").unwrap();
    let got = hits(&mut s);
    assert_eq!(got.iter().filter(|h| h.0 == core).count(), 12, "{got:?}");
    let w: Vec<_> = got.iter().filter(|h| h.0 == word).collect();
    assert_eq!(w.len(), 1, "a word fires once");
    assert!(w[0].2.starts_with("taken up: "), "{w:?}");
    assert_eq!(
        got.iter()
            .filter(|h| h.0 == sem)
            .map(|h| h.1)
            .collect::<Vec<_>>(),
        [1992]
    );
}

#[test]
fn conditions_ignore_counts_and_disabling() {
    let (mut s, _) = session("fw-semaphore-chain.trace");
    let id = s.add_break("doorbell tpb0").unwrap().0;
    // Only once semaphore 6 is set (word A done): B's and C's doorbells.
    s.breakpoints_mut().get_mut(id).unwrap().condition =
        debugger::breakpoint::parse_condition(s.device(), "tpb0.sem.read[6] == 1").unwrap();
    s.breakpoints_mut().get_mut(id).unwrap().ignore = 2;
    let got = hits(&mut s);
    let b = s.breakpoints().get(id).unwrap();
    assert_eq!(b.hits, 8, "4 engines x words B and C");
    assert_eq!(got.len(), 6, "two passed over");
    assert!(got.iter().all(|h| h.1 >= 1191));

    let (mut s, _) = session("fw-semaphore-chain.trace");
    let id = s.add_break("doorbell tpb0").unwrap().0;
    s.breakpoints_mut().set_enabled(&[id], false).unwrap();
    assert!(hits(&mut s).is_empty());
    assert_eq!(s.breakpoints().get(id).unwrap().hits, 0);
}

/// The doorbells one core step rings behind a stop are weighed when their
/// turn comes, as the breakpoints are then: one set at the first stop
/// fires at its doorbell; a hit counts when the session reaches it (not
/// the whole step's at once), and `ignore` passes over the next ones.
#[test]
fn doorbells_rung_together_meet_the_breakpoints_of_their_turn() {
    // A breakpoint set at the stop for engine 0's doorbell.
    let (mut s, _) = session("fw-tile-load-bf16.trace");
    let first = step(&mut s, Granularity::Doorbell);
    assert!(matches!(&first.kind, StopKind::FwDoorbell(db) if db.engine == 0));
    let id = s.add_break("doorbell eng5").unwrap().0;
    let stop = step(&mut s, Granularity::Continue);
    assert!(
        matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 5),
        "{:?}",
        stop.kind
    );
    assert_eq!(stop.hits.iter().map(|h| h.id).collect::<Vec<_>>(), [id]);
    assert_eq!(stop.cycle, first.cycle, "rung in the same step");

    // Hits count as they come; `ignore` passes over the next ones.
    let (mut s, _) = session("fw-tile-load-bf16.trace");
    let id = s.add_break("doorbell tpb0").unwrap().0;
    let stop = step(&mut s, Granularity::Continue);
    assert!(matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 0));
    assert_eq!(s.breakpoints().get(id).unwrap().hits, 1, "engine 0's only");
    s.breakpoints_mut().get_mut(id).unwrap().ignore = 2;
    let stop = step(&mut s, Granularity::Continue);
    assert!(
        matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 3),
        "engines 1 and 2 passed over: {:?}",
        stop.kind
    );
    let b = s.breakpoints().get(id).unwrap();
    assert_eq!((b.hits, b.ignore), (4, 0));

    // A statement step stops early at a doorbell breakpoint of the step.
    let (mut s, _) = session("fw-tile-load-bf16.trace");
    step(&mut s, Granularity::Doorbell);
    s.add_break("doorbell eng9").unwrap();
    let stop = step(&mut s, Granularity::Statement);
    assert!(
        matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 9),
        "{:?}",
        stop.kind
    );
}

#[test]
fn breakpoint_specs_are_checked_against_the_trace() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let (id, note) = s.add_break("line 1").unwrap();
    assert_eq!(
        note.as_deref(),
        Some("line 1 has no statement: the breakpoint is at line 3")
    );
    assert_eq!(s.breakpoints().get(id).unwrap().kind.describe(), "line 3");
    let e = s.add_break("line 99").unwrap_err();
    assert!(
        e.contains("past the trace's last statement (line 18)"),
        "{e}"
    );
    s.breakpoints_mut().delete(&[]).unwrap();
    step(&mut s, Granularity::UntilCycle(50));
    let e = s.add_break("cycle 10").unwrap_err();
    assert!(e.contains("not ahead"), "{e}");
    let e = s.add_watch("eng0.m2s.q0.tdrhpp").unwrap_err();
    assert!(e.contains("did you mean `tdrhp`?"), "{e}");
    // Never reached: said at the end.
    s.add_break("cycle 999999").unwrap();
    finish_to_end(&mut s);
    let notes = s.unreached();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("(break cycle 999999) was not reached: the trace ended at cycle 194"),
        "{notes:?}"
    );
}

fn finish_to_end(s: &mut Session) {
    while step(s, Granularity::ToEnd).kind != StopKind::End {}
}

#[test]
fn expectations_count_as_in_run() {
    let source = "write32 tpb0.sem.set[1] 5\nread32 tpb0.sem.read[1] == 6\nrun cycles=10\n";
    let s = Session::new(
        Device::trn2().unwrap(),
        source,
        "t.trace",
        Box::new(Dir(traces())),
        SessionConfig::default(),
        Box::new(|_| {}),
    )
    .unwrap();
    let mut s = s;
    let stop = step(&mut s, Granularity::Continue);
    assert_eq!(stop.kind, StopKind::End);
    let r = s.report();
    assert_eq!((r.expectations_failed, r.exit_code()), (1, 1));
    assert_eq!(s.device().now().0, 10);
}

/// The JSON protocol (docs/user-guide.md §12 "The JSON protocol"): a view
/// answers without a stop, a step with one, a bad command with an error,
/// and `end` counts the expectations as `run`.
#[test]
fn protocol_messages_carry_stops_views_errors_and_the_end() {
    use debugger::protocol::{self, Message};
    use debugger::{Console, Flow};
    let (s, _) = session("copy-hbm-hbm.trace");
    let mut c = Console::new(s);
    let Message::Reply {
        stop: Some(first), ..
    } = protocol::start(&mut c, true)
    else {
        panic!("the first stop is a reply with a stop");
    };
    assert_eq!((first.reason.as_str(), first.line), ("doorbell", Some(14)));
    let (view, flow) = protocol::handle(&mut c, r#"{"command": "time"}"#);
    assert_eq!(flow, Flow::Prompt);
    assert!(
        matches!(&view, Message::Reply { stop: None, lines, .. } if lines[0].starts_with("cycle 0")),
        "{view:?}"
    );
    let (step, _) = protocol::handle(&mut c, r#"{"command": "step", "granularity": "statement"}"#);
    let Message::Reply {
        command,
        stop: Some(stop),
        ..
    } = step
    else {
        panic!("{step:?}");
    };
    assert_eq!(
        (command.as_str(), stop.reason.as_str(), stop.line),
        ("step", "statement", Some(15))
    );
    for bad in [
        r#"{"command": "watch nowhere.reg"}"#,
        r#"{"cmd": "next"}"#,
        "[]",
    ] {
        let (m, _) = protocol::handle(&mut c, bad);
        assert!(matches!(m, Message::Error { .. }), "{bad}: {m:?}");
    }
    let end = protocol::run_to_end(&mut c).unwrap();
    assert!(
        matches!(&end, Message::Reply { stop: Some(s), .. } if s.reason == "end"),
        "{end:?}"
    );
    let (_, flow) = protocol::handle(&mut c, r#"{"command": "quit"}"#);
    assert_eq!(flow, Flow::Quit);
    let report = run_report("copy-hbm-hbm.trace");
    assert_eq!(
        protocol::end(&mut c),
        Message::End {
            exit_status: 0,
            quit_early: false,
            cycle: report.summary.cycles,
            expectations_passed: report.expectations_passed,
            expectations_failed: 0,
            expectations_skipped: 0,
        }
    );
}

/// The breakpoints a stop fired, by number.
fn hit_ids(stop: &Stop) -> Vec<u32> {
    stop.hits.iter().map(|h| h.id).collect()
}

/// A step that ends before a statement with a breakpoint (its line, the
/// doorbell it writes) reports the breakpoint there, as `next` and
/// `continue` do (docs/user-guide.md §12 "Stepping": every stepping
/// command stops early at a breakpoint); the next command runs on from
/// it, whatever its granularity, and the hit counts once.
#[test]
fn a_step_that_lands_on_a_breakpoint_reports_it() {
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let five = s.add_break("line 5").unwrap().0;
    let a = step(&mut s, Granularity::Statement);
    assert_eq!(
        (a.kind.clone(), hit_ids(&a)),
        (StopKind::Statement { line: 3 }, vec![])
    );
    let b = step(&mut s, Granularity::Statement);
    assert_eq!(b.kind, StopKind::Statement { line: 4 });
    assert_eq!(hit_ids(&b), [five], "landed before line 5: {b:?}");
    assert_eq!(b.hits[0].why, "line 5");
    assert_eq!(b.position.as_ref().unwrap().line, 5);
    let c = step(&mut s, Granularity::Statement);
    assert_eq!(
        (c.kind.clone(), hit_ids(&c)),
        (StopKind::Statement { line: 5 }, vec![])
    );
    assert_eq!(s.breakpoints().get(five).unwrap().hits, 1);

    // Every other command after the landing step makes progress too.
    for g in [
        Granularity::Continue,
        Granularity::Doorbell,
        Granularity::Event,
        Granularity::Cycles(10),
        Granularity::UntilCycle(10),
        Granularity::Finish(FinishTarget::Packet {
            engine: 0,
            queue: 0,
        }),
    ] {
        let (mut s, _) = session("copy-hbm-hbm.trace");
        let five = s.add_break("line 5").unwrap().0;
        step(&mut s, Granularity::Statement);
        assert_eq!(hit_ids(&step(&mut s, Granularity::Statement)), [five]);
        let next = step(&mut s, g.clone());
        assert!(next.hits.is_empty(), "{g:?}: {next:?}");
        assert!(
            next.position.as_ref().is_none_or(|p| p.line > 5),
            "{g:?} ran nothing: {next:?}"
        );
        assert_eq!(s.breakpoints().get(five).unwrap().hits, 1, "{g:?}");
    }

    // A doorbell breakpoint: the step lands before the doorbell, which the
    // stop shows as `next` would; `next` then rings it and runs on.
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let first = step(&mut s, Granularity::Doorbell);
    assert_eq!(first.position.as_ref().unwrap().line, 14);
    let db = s.add_break("doorbell eng0.m2s.q0").unwrap().0;
    let landed = step(&mut s, Granularity::Statement);
    assert_eq!(hit_ids(&landed), [db], "{landed:?}");
    assert!(
        matches!(&landed.kind, StopKind::Doorbell { queue, increment: 1 } if queue.region == "eng0.m2s.q0"),
        "{landed:?}"
    );
    assert_eq!(landed.position.as_ref().unwrap().line, 15);
    assert_eq!(step(&mut s, Granularity::Doorbell).kind, StopKind::End);
    assert_eq!(s.breakpoints().get(db).unwrap().hits, 1);

    // Passed over on arrival (an ignore count), a hit is not counted again
    // when the statement starts.
    let (mut s, _) = session("copy-hbm-hbm.trace");
    let five = s.add_break("line 5").unwrap().0;
    s.breakpoints_mut().get_mut(five).unwrap().ignore = 1;
    step(&mut s, Granularity::Statement);
    assert!(step(&mut s, Granularity::Statement).hits.is_empty());
    let c = step(&mut s, Granularity::Statement);
    assert_eq!(
        (c.kind.clone(), hit_ids(&c)),
        (StopKind::Statement { line: 5 }, vec![])
    );
    let b = s.breakpoints().get(five).unwrap();
    assert_eq!((b.hits, b.ignore), (1, 0));
}

/// Every device event of a trace, as the `events` view words them.
fn event_texts(s: &mut Session) -> Vec<String> {
    s.take_timeline()
        .iter()
        .map(soc::exec::event_text)
        .collect()
}

/// The events come in one order, by cycle and then as the device produced
/// them, however often the session paused (docs/user-guide.md §12
/// "Views"): a trace run to its end, stepped a statement at a time, a
/// device event at a time and every few cycles lists the same events in
/// the same order, their cycles never going back.
#[test]
fn events_come_in_one_order_whatever_the_pauses() {
    let timeline = || SessionConfig {
        keep_timeline: true,
        ..SessionConfig::default()
    };
    for name in [
        "calib-32k-hbm-sbuf.trace",
        "copy-hbm-hbm.trace",
        "arb-dwrr-ratelimit.trace",
        "fw-semaphore-chain.trace",
    ] {
        let (mut s, _) = session_with(name, timeline());
        while step(&mut s, Granularity::ToEnd).kind != StopKind::End {}
        let want = event_texts(&mut s);
        let cycles: Vec<u64> = {
            let (mut s, _) = session_with(name, timeline());
            while step(&mut s, Granularity::ToEnd).kind != StopKind::End {}
            s.take_timeline()
                .iter()
                .map(soc::DeviceEvent::cycle)
                .collect()
        };
        assert_eq!(
            cycles.len(),
            want.len(),
            "{name}: every event has its cycle"
        );
        assert!(cycles.is_sorted(), "{name}: {cycles:?}");
        for g in [
            Granularity::Statement,
            Granularity::Event,
            Granularity::Cycles(13),
        ] {
            let (mut s, _) = session_with(name, timeline());
            while step(&mut s, g.clone()).kind != StopKind::End {}
            assert_eq!(event_texts(&mut s), want, "{name}: paused at every {g:?}");
        }
    }
}
