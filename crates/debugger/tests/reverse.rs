//! Reverse execution (issue 14 item 3): going back and forth lands on
//! byte-identical state (cycle, simulator events, CSR snapshot, memory
//! digest, trace position, run report), and `goto C` from any later point
//! equals running forward to C (a property over random traces) — with the
//! start of the trace as the only checkpoint and with checkpoints every few
//! events, restored mid-trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use debugger::{CheckpointConfig, Granularity, Session, SessionConfig, StopKind};
use proptest::prelude::*;
use soc::Device;

fn session_of(source: &str, name: &str) -> Session {
    let mut s = new_session(name, source, SessionConfig::default(), Box::new(|_| {}));
    s.set_device_factory(Box::new(|| Device::trn2().map_err(|e| e.to_string())));
    s
}

fn session(name: &str) -> Session {
    session_of(&trace_text(name), name)
}

/// A session with a checkpoint every `interval` simulator events.
fn session_every(name: &str, interval: u64) -> Session {
    let mut s = session(name);
    s.set_checkpoints(CheckpointConfig {
        interval_events: interval,
        ..CheckpointConfig::default()
    });
    s
}

/// Everything that must be equal: the point, the registers, the memories,
/// the report so far.
#[derive(Debug, PartialEq, Eq)]
struct State {
    mark: debugger::Mark,
    position: Option<debugger::Position>,
    csrs: soc::CsrSnapshot,
    memory: u64,
    report: String,
}

fn state(s: &mut Session) -> State {
    let mark = s.mark();
    let position = s.position();
    let report = s.report();
    let device = s.device();
    State {
        mark,
        position,
        csrs: device.csr_snapshot(),
        memory: device.memory_digest(),
        report: format!(
            "{} {:?} {:?}",
            report.tail_text(),
            report.failures,
            report.errors
        ),
    }
}

/// Checks that the last go-back, which landed on `at` (by `goto C`: at
/// cycle C), restored the latest checkpoint before it and replayed only
/// the events since; 1 when that checkpoint was taken mid-trace (not at
/// the start), else 0.
fn replayed_from_checkpoint(s: &Session, at: debugger::Mark, goto: Option<u64>) -> u32 {
    let (from, replayed) = s.last_replay_start().unwrap();
    let marks = s.checkpoint_marks();
    // `goto C` restores one before cycle C: every event of cycle C runs.
    // A point among the firmware doorbells one step rang: that point, or
    // one before the step (whose doorbells the replay must see).
    let last = *marks
        .iter()
        .filter(|m| at.doorbells == 0 || **m == at || m.device_point() < at.device_point())
        .rfind(|m| goto.is_none_or(|c| m.cycle < c || m.events == 0))
        .expect("the start is a checkpoint");
    assert!(last <= at, "{last:?} after {at:?}");
    assert_eq!(from, Some(last.cycle), "restored the latest checkpoint");
    assert_eq!(replayed, at.events - last.events, "replayed from it");
    u32::from(last.events > 0)
}

const TRACES: [&str; 5] = [
    "copy-hbm-hbm.trace",
    "fw-semaphore-chain.trace",
    "fault-doorbell-overrun.trace",
    "fw-tile-load-bf16.trace",
    "host-dmem-batch.trace",
];

#[test]
fn back_and_forth_lands_on_identical_state() {
    back_and_forth(None);
}

/// The same with a checkpoint every 7 simulator events: going back
/// restores one taken mid-trace (inside `run`s and `wait`s too) and
/// replays from it.
#[test]
fn back_and_forth_from_checkpoints_lands_on_identical_state() {
    back_and_forth(Some(7));
}

fn back_and_forth(interval: Option<u64>) {
    let mut from_checkpoints = 0;
    for name in TRACES {
        let mut s = match interval {
            Some(k) => session_every(name, k),
            None => session(name),
        };
        // Every doorbell stop (statement, for the host runtime's trace),
        // its state kept.
        let host = name.starts_with("host-");
        let g = if host {
            Granularity::Statement
        } else {
            Granularity::Doorbell
        };
        let mut seen = Vec::new();
        loop {
            let stop = s.step(g.clone()).unwrap();
            if stop.kind == StopKind::End {
                break;
            }
            seen.push((state(&mut s), stop.kind));
        }
        let end = state(&mut s);
        assert!(!seen.is_empty(), "{name}: no stop");
        // Backwards, one doorbell at a time: each is the one seen going
        // forward, the firmware doorbells one core step rang together too
        // (each its own point, in the order `next` showed them). (The last
        // statement's stop stands where the end does.)
        let back: Vec<_> = seen.iter().filter(|(st, _)| st.mark < end.mark).collect();
        for pair in back.windows(2) {
            assert!(
                pair[0].0.mark < pair[1].0.mark,
                "{name}: stops share a point"
            );
        }
        for (want, want_kind) in back.iter().rev() {
            let stop = if host {
                s.reverse_step().unwrap()
            } else {
                s.reverse_next().unwrap()
            };
            assert_eq!(&state(&mut s), want, "{name}: reverse-next");
            if !host {
                assert_eq!(
                    &stop.kind, want_kind,
                    "{name}: reverse-next stops at the same doorbell"
                );
            }
            if interval.is_some() {
                from_checkpoints += replayed_from_checkpoint(&s, want.mark, None);
            }
        }

        // Forward again to the end: the same end.
        while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
        assert_eq!(state(&mut s), end, "{name}: forward after going back");
        // goto a cycle in the middle and back to the end.
        let mid = end.mark.cycle / 2;
        if mid > 0 {
            s.goto(mid).unwrap();
            if interval.is_some() {
                // (A host statement's time cannot be cut: the host trace
                // may hold no checkpoint before its middle.)
                let at = s.mark();
                from_checkpoints += replayed_from_checkpoint(&s, at, Some(mid));
            }
            let mut fresh = session(name);
            fresh.step(Granularity::UntilCycle(mid)).unwrap();
            assert_eq!(state(&mut s), state(&mut fresh), "{name}: goto {mid}");
            while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
            assert_eq!(state(&mut s), end, "{name}: the end again after goto");
        }
    }
    if interval.is_some() {
        assert!(
            from_checkpoints > 3,
            "only {from_checkpoints} reverse-next/-step restored a checkpoint taken mid-trace"
        );
    }
}

/// The 16 doorbells one firmware step rings together are 16 stops going
/// back as going forward: `reverse-next` from the fourth lands on the
/// third (not on the start of the trace), and `next` from there shows the
/// fourth again, the same state.
#[test]
fn reverse_next_steps_through_doorbells_rung_together() {
    for interval in [None, Some(3)] {
        let mut s = match interval {
            Some(k) => session_every("fw-tile-load-bf16.trace", k),
            None => session("fw-tile-load-bf16.trace"),
        };
        let mut forward = Vec::new();
        for _ in 0..4 {
            let stop = s.step(Granularity::Doorbell).unwrap();
            let StopKind::FwDoorbell(db) = &stop.kind else {
                panic!("not a firmware doorbell: {:?}", stop.kind);
            };
            forward.push((db.engine, state(&mut s)));
        }
        assert_eq!(
            forward.iter().map(|(e, _)| *e).collect::<Vec<_>>(),
            [0, 1, 2, 3],
            "one core step rings engines 0..3 first"
        );
        assert!(
            forward
                .windows(2)
                .all(|w| w[0].1.mark.cycle == w[1].1.mark.cycle),
            "rung at one cycle"
        );
        let stop = s.reverse_next().unwrap();
        assert!(
            matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 2),
            "{interval:?}: back to engine 2's doorbell, not {:?} at cycle {}",
            stop.kind,
            s.mark().cycle
        );
        assert_eq!(state(&mut s), forward[2].1, "{interval:?}");
        let stop = s.step(Granularity::Doorbell).unwrap();
        assert!(matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 3));
        assert_eq!(
            state(&mut s),
            forward[3].1,
            "{interval:?}: next after going back"
        );
        // And back to the first one, one at a time.
        for want in (0..3).rev() {
            let stop = s.reverse_next().unwrap();
            assert!(
                matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == want),
                "{interval:?}: {:?}",
                stop.kind
            );
            assert_eq!(state(&mut s), forward[want as usize].1);
        }
    }
}

/// A word breakpoint (`tpbN#K`: where the core takes the word up) is
/// one-shot: going back before that point arms it again, going back to
/// after it (or setting it after) leaves it fired — as going forward.
#[test]
fn word_breakpoints_follow_the_point_gone_back_to() {
    for interval in [None, Some(5)] {
        let mut s = match interval {
            Some(k) => session_every("fw-semaphore-chain.trace", k),
            None => session("fw-semaphore-chain.trace"),
        };
        s.add_break("tpb0#2").unwrap();
        let first = s.step(Granularity::Continue).unwrap();
        assert_eq!(first.hits.len(), 1, "{interval:?}");
        let at = state(&mut s);
        // Back before the word was taken up: it fires again, at the same point.
        s.goto(100).unwrap();
        let again = s.step(Granularity::Continue).unwrap();
        assert_eq!(
            again.hits.len(),
            1,
            "{interval:?}: fires again after goto 100"
        );
        assert_eq!(state(&mut s), at, "{interval:?}");
        // A word is taken up once.
        assert_eq!(s.step(Granularity::Continue).unwrap().kind, StopKind::End);

        // Set at the end, found going back, then nothing after it.
        let mut s = match interval {
            Some(k) => session_every("fw-semaphore-chain.trace", k),
            None => session("fw-semaphore-chain.trace"),
        };
        assert_eq!(s.step(Granularity::ToEnd).unwrap().kind, StopKind::End);
        let (_, note) = s.add_break("tpb0#1").unwrap();
        assert!(
            note.is_some_and(|n| n.contains("taken up already")),
            "{interval:?}"
        );
        s.add_break("tpb0#2").unwrap();
        let back = s.reverse_continue().unwrap();
        assert_eq!(back.hits.len(), 1, "{interval:?}: the last take-up");
        assert_eq!(state(&mut s), at, "{interval:?}: word 2 taken up");
        assert_eq!(
            s.step(Granularity::Continue).unwrap().kind,
            StopKind::End,
            "{interval:?}: both words were taken up by then"
        );
    }
}

/// Back at a stop, the `events` view ends with the events it ended with
/// going forward (at a fault stop: the fault).
#[test]
fn the_last_events_are_those_of_the_stop_gone_back_to() {
    let last = |s: &Session| {
        let v: Vec<String> = s.recent_events().map(|e| format!("{e:?}")).collect();
        v[v.len().saturating_sub(2)..].to_vec()
    };
    let mut s = session("fault-doorbell-overrun.trace");
    s.add_break("fault").unwrap();
    let mut forward = None;
    while s.step(Granularity::Continue).unwrap().kind != StopKind::End {
        forward = Some(last(&s));
    }
    let forward = forward.expect("a fault stop");
    assert!(forward.iter().any(|e| e.contains("Fault")), "{forward:?}");
    s.reverse_continue().unwrap();
    assert_eq!(last(&s), forward);
}

/// Back at a breakpoint before the first statement, the next step goes on
/// from it, as it did the first time (it does not stop there again).
#[test]
fn back_at_a_breakpoint_before_the_first_statement_the_next_step_moves_on() {
    let mut s = session("copy-hbm-hbm.trace");
    s.add_break("line 3").unwrap();
    s.add_break("line 5").unwrap();
    let first = s.step(Granularity::Continue).unwrap();
    assert_eq!(first.hits.len(), 1);
    let at_first = state(&mut s);
    let second = s.step(Granularity::Continue).unwrap();
    assert_eq!(second.hits.len(), 1);
    let at_second = state(&mut s);
    let back = s.reverse_continue().unwrap();
    assert_eq!(back.hits, first.hits);
    assert_eq!(state(&mut s), at_first);
    let again = s.step(Granularity::Continue).unwrap();
    assert_eq!(again.hits, second.hits, "on to line 5, not line 3 again");
    assert_eq!(state(&mut s), at_second);
}

#[test]
fn reverse_step_goes_back_one_statement() {
    reverse_step_with(session("copy-hbm-hbm.trace"));
    reverse_step_with(session_every("copy-hbm-hbm.trace", 3));
}

fn reverse_step_with(mut s: Session) {
    let mut points = vec![state(&mut s)];
    for _ in 0..8 {
        s.step(Granularity::Statement).unwrap();
        points.push(state(&mut s));
    }
    for want in points.iter().rev().skip(1) {
        s.reverse_step().unwrap();
        assert_eq!(&state(&mut s), want);
    }
    assert!(s.reverse_step().unwrap_err().contains("start of the trace"));
}

#[test]
fn reverse_continue_finds_the_last_breakpoint_hit() {
    reverse_continue_with(session("fault-doorbell-overrun.trace"), "fault");
    reverse_continue_with(session_every("fault-doorbell-overrun.trace", 3), "fault");
    // Many hits, between and at checkpoints taken every few events.
    reverse_continue_with(session_every("fw-tile-load-bf16.trace", 3), "packet");
    // A core's doorbells, rung 16 at a time: each hit its own stop, back
    // as forward.
    reverse_continue_with(session("fw-tile-load-bf16.trace"), "doorbell tpb0");
    reverse_continue_with(session_every("fw-tile-load-bf16.trace", 3), "doorbell tpb0");
}

/// Back among the doorbells one core step rang, the ones after it are
/// stops again, as the breakpoints are now: `continue` to a breakpoint set
/// after going back stops at its doorbell, the same state as forward.
#[test]
fn after_going_back_among_doorbells_the_rest_follow_the_breakpoints_now() {
    let mut s = session_every("fw-tile-load-bf16.trace", 3);
    let mut forward = Vec::new();
    for _ in 0..8 {
        s.step(Granularity::Doorbell).unwrap();
        forward.push(state(&mut s));
    }
    for _ in 0..6 {
        s.reverse_next().unwrap();
    }
    assert_eq!(state(&mut s), forward[1]);
    s.add_break("doorbell eng6").unwrap();
    let stop = s.step(Granularity::Continue).unwrap();
    assert!(
        matches!(&stop.kind, StopKind::FwDoorbell(db) if db.engine == 6),
        "{:?}",
        stop.kind
    );
    assert_eq!(stop.hits.len(), 1);
    assert_eq!(state(&mut s), forward[6]);
}

fn reverse_continue_with(mut s: Session, spec: &str) {
    s.add_break(spec).unwrap();
    let mut hits = Vec::new();
    loop {
        let stop = s.step(Granularity::Continue).unwrap();
        if stop.kind == StopKind::End {
            break;
        }
        hits.push((state(&mut s), stop.hits.clone()));
    }
    assert!(hits.len() >= 2, "the breakpoint fires at least twice");
    for (want, want_hits) in hits.iter().rev() {
        let stop = s.reverse_continue().unwrap();
        assert_eq!(&state(&mut s), want);
        assert_eq!(
            stop.hits.iter().map(|h| &h.why).collect::<Vec<_>>(),
            want_hits.iter().map(|h| &h.why).collect::<Vec<_>>()
        );
    }
    // None before the first: back to the start.
    let stop = s.reverse_continue().unwrap();
    assert!(stop.hits.is_empty());
    assert_eq!(s.mark().cycle, 0);
}

#[test]
fn pokes_replay_where_they_ran_and_a_new_branch_drops_the_rest() {
    pokes_with(session("copy-hbm-hbm.trace"));
    pokes_with(session_every("copy-hbm-hbm.trace", 3));
}

fn pokes_with(mut s: Session) {
    // At the first doorbell, a poke; then to the end.
    s.step(Granularity::Doorbell).unwrap();
    s.poke("write32 hbm0+0x300000 0xdeadbeef").unwrap();
    s.set("hbm0+0x300004", 0x1234).unwrap();
    while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
    let end = state(&mut s);
    // Going back past the poke and forward again keeps it.
    s.reverse_next().unwrap();
    s.reverse_next().unwrap();
    let mut word = [0u8; 8];
    s.device().read_bytes(0x300000, &mut word).unwrap();
    assert_eq!(word, [0xef, 0xbe, 0xad, 0xde, 0x34, 0x12, 0, 0]);
    while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
    assert_eq!(state(&mut s), end);
    // goto 0: before the poke, nothing written.
    s.goto(0).unwrap();
    s.device().read_bytes(0x300000, &mut word).unwrap();
    assert_eq!(word, [0; 8]);
    // A new branch from the start: the old poke is gone.
    while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
    s.device().read_bytes(0x300000, &mut word).unwrap();
    assert_eq!(word, [0; 8]);
}

#[test]
fn without_a_factory_going_back_says_why() {
    let source = std::fs::read_to_string(traces().join("copy-hbm-hbm.trace")).unwrap();
    let mut s = Session::new(
        Device::trn2().unwrap(),
        &source,
        "copy-hbm-hbm.trace",
        Box::new(Dir(traces())),
        SessionConfig::default(),
        Box::new(|_| {}),
    )
    .unwrap();
    s.step(Granularity::Doorbell).unwrap();
    s.disable_reverse("--vcd records one pass");
    let e = s.reverse_next().unwrap_err();
    assert!(e.contains("--vcd records one pass"), "{e}");
    assert!(
        s.checkpoints_text()
            .contains("off (--vcd records one pass)")
    );
}

/// A random copy trace: 1 to 3 engines, batches of descriptors rung and
/// run for a random while.
fn copy_trace(engines: &[u16], batches: &[(u8, u16, Option<u16>)]) -> String {
    let mut t = String::from("fill hbm0+0x100000 len=65536 pattern=incr8\n");
    for &e in engines {
        let base = 0x0100_0000 + u64::from(e) * 0x1_0000;
        t.push_str(&format!(
            "write32 eng{e}.m2s.q0.tdrbp_low {base:#x}\nwrite32 eng{e}.m2s.q0.tdrl 64\n\
             write32 eng{e}.s2m.q0.rdrbp_low {:#x}\nwrite32 eng{e}.s2m.q0.rdrl 64\n\
             write32 eng{e}.m2s.q0.q_cfg 0x03030000\nwrite32 eng{e}.s2m.q0.q_cfg 0x03030000\n\
             write32 eng{e}.m2s.change_state 0x1\nwrite32 eng{e}.s2m.change_state 0x1\n",
            base + 0x8000
        ));
    }
    let mut offset = 0u64;
    for (i, &(count, len, run)) in batches.iter().enumerate() {
        let e = engines[i % engines.len()];
        let len = u64::from(len) * 64;
        for _ in 0..count {
            let src = 0x10_0000 + offset % 0x1_0000;
            let dst = 0x20_0000 + offset;
            t.push_str(&format!(
                "desc eng{e}.s2m.q0 len={len} dst=hbm1+{dst:#x}\n\
                 desc eng{e}.m2s.q0 len={len} src=hbm0+{src:#x} first last\n"
            ));
            offset += len;
        }
        t.push_str(&format!(
            "doorbell eng{e}.s2m.q0 {count}\ndoorbell eng{e}.m2s.q0 {count}\n"
        ));
        match run {
            Some(c) => t.push_str(&format!("run cycles={c}\n")),
            None => t.push_str("run\n"),
        }
    }
    t.push_str("run\n");
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// `goto C` from a later point (after random steps and one going back)
    /// yields the state running forward to C gives.
    #[test]
    fn goto_equals_running_forward(
        engines in prop::collection::btree_set(0u16..16, 1..=3),
        batches in prop::collection::vec((1u8..=4, 1u16..=32, prop::option::of(1u16..400)), 1..6),
        steps in prop::collection::vec(0u8..4, 0..12),
        frac in 0.0f64..1.0,
        interval in prop::option::of(1u64..64),
    ) {
        let engines: Vec<u16> = engines.into_iter().collect();
        let text = copy_trace(&engines, &batches);
        let mut s = session_of(&text, "random.trace");
        if let Some(k) = interval {
            s.set_checkpoints(CheckpointConfig { interval_events: k, ..CheckpointConfig::default() });
        }
        for k in steps {
            let g = match k {
                0 => Granularity::Doorbell,
                1 => Granularity::Statement,
                2 => Granularity::Event,
                _ => Granularity::Cycles(37),
            };
            if s.step(g).unwrap().kind == StopKind::End {
                break;
            }
        }
        while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
        let end = s.mark().cycle;
        prop_assume!(end > 1);
        let c = 1 + ((end - 1) as f64 * frac) as u64;
        s.goto(c).unwrap();
        let mut fresh = session_of(&text, "random.trace");
        fresh.step(Granularity::UntilCycle(c)).unwrap();
        prop_assert_eq!(state(&mut s), state(&mut fresh));
        // And from there to the end: as a straight run.
        while s.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
        while fresh.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
        prop_assert_eq!(state(&mut s), state(&mut fresh));
    }
}

#[test]
fn info_checkpoints_reports_them_and_the_budget_thins_them() {
    let name = "fw-tile-load-bf16.trace";
    let mut s = session_every(name, 5);
    while s.step(Granularity::Doorbell).unwrap().kind != StopKind::End {}
    let cycles: Vec<u64> = s.checkpoint_marks().iter().map(|m| m.cycle).collect();
    assert!(cycles.len() > 2, "{cycles:?}");
    assert_eq!(cycles[0], 0, "the first is the start of the trace");
    assert!(cycles.windows(2).all(|w| w[0] <= w[1]), "{cycles:?}");
    let text = s.checkpoints_text();
    assert!(
        text.contains(&format!("checkpoints: {} (at cycles 0, ", cycles.len())),
        "{text}"
    );
    assert!(text.contains("every 5 simulator events"), "{text}");
    assert!(text.contains("MiB held of a 256.0 MiB budget"), "{text}");
    s.goto(cycles[cycles.len() / 2] + 1).unwrap();
    let text = s.checkpoints_text();
    assert!(text.contains("from the checkpoint at cycle"), "{text}");
    assert!(!text.contains("thinned"), "{text}");

    // A budget below what they hold: every second one goes, the interval
    // doubles, and what stays fits (or only the first and last are left).
    let mut t = session_every(name, 5);
    let held = {
        let mut u = session_every(name, 5);
        while u.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
        u.checkpoint_bytes()
    };
    assert!(held > 0);
    t.set_checkpoints(CheckpointConfig {
        interval_events: 5,
        budget_bytes: held / 3,
    });
    while t.step(Granularity::ToEnd).unwrap().kind != StopKind::End {}
    let thin = t.checkpoint_marks();
    assert!(thin.len() < cycles.len(), "{thin:?} vs {cycles:?}");
    assert!(t.checkpoint_bytes() <= held / 3 || thin.len() <= 2);
    let text = t.checkpoints_text();
    assert!(text.contains("thinned"), "{text}");
    assert!(!text.contains("every 5 simulator events"), "{text}");
    // Thinned, going back still lands where running forward does.
    let mid = t.mark().cycle / 2;
    t.goto(mid).unwrap();
    let mut fresh = session(name);
    fresh.step(Granularity::UntilCycle(mid)).unwrap();
    assert_eq!(state(&mut t), state(&mut fresh));
}

/// When the session's state cannot be copied (here: the host session
/// streams an ioctl recording), there are no checkpoints: going back replays from the start
/// on a fresh device, and `info checkpoints` says so.
#[test]
fn without_copies_going_back_replays_from_the_start() {
    let source = std::fs::read_to_string(traces().join("fw-semaphore-chain.trace")).unwrap();
    let config = SessionConfig {
        host: host_exec::SessionOptions {
            record: Some(Box::new(std::io::sink())),
            ..host_exec::SessionOptions::default()
        },
        ..SessionConfig::default()
    };
    let mut s = Session::new(
        Device::trn2().unwrap(),
        &source,
        "fw-semaphore-chain.trace",
        Box::new(Dir(traces())),
        config,
        Box::new(|_| {}),
    )
    .unwrap();
    s.set_device_factory(Box::new(|| Device::trn2().map_err(|e| e.to_string())));
    s.set_checkpoints(CheckpointConfig {
        interval_events: 3,
        ..CheckpointConfig::default()
    });
    for _ in 0..20 {
        s.step(Granularity::Statement).unwrap();
    }
    let want = state(&mut s);
    assert!(want.mark.events > 3, "{want:?}");
    s.step(Granularity::Statement).unwrap();
    s.reverse_step().unwrap();
    assert_eq!(state(&mut s), want);
    assert!(s.checkpoint_marks().is_empty());
    assert_eq!(s.last_replay_start().unwrap().0, None, "a fresh device");
    let text = s.checkpoints_text();
    assert!(
        text.contains("checkpoints: none (the session's state cannot be copied"),
        "{text}"
    );
    assert!(text.contains("from the start of the trace"), "{text}");
}
