//! A trace run one statement at a time (`soc::exec::Execution`, the
//! debugger's engine): a `run` or `wait` paused at any cycle, or after any
//! event, and resumed gives the same statements, events, cycles and
//! registers as the same trace run through — stalls, bounded runs, waits
//! and the register-access log's one-by-one polls included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MemFiles, PHASE, device};
use sim_core::Cycle;
use soc::Device;
use soc::exec::{
    Advance, Control, ExecHooks, Execution, HostOutcome, HostRuntime, RunReport, TraceFiles,
    run_source,
};

/// A bare device as the host runtime.
struct Bare(Device);

impl HostRuntime for Bare {
    fn device(&mut self) -> &mut Device {
        &mut self.0
    }
    fn tensor_addr(&self, _name: &str) -> Option<u64> {
        None
    }
    fn host_op(
        &mut self,
        _op: &trace_format::HostOp,
        _status: Option<&str>,
        _files: &mut dyn TraceFiles,
    ) -> Result<HostOutcome, String> {
        Err("no host".into())
    }
}

/// Pauses after every `every`-th event.
struct PauseEvery {
    every: u64,
    seen: u64,
    pauses: u64,
}

impl ExecHooks for PauseEvery {
    fn during_run(&mut self, _device: &mut Device) -> Control {
        self.seen += 1;
        if self.every > 0 && self.seen.is_multiple_of(self.every) {
            self.pauses += 1;
            Control::Pause
        } else {
            Control::Continue
        }
    }
}

fn fresh(polling: bool) -> Device {
    let mut d = device();
    if polling {
        d.record_reg_log(Some(Box::new(std::io::sink())));
    }
    d
}

/// The trace run through.
fn through(source: &str, polling: bool) -> (RunReport, Device) {
    let mut d = fresh(polling);
    let r = run_source(&mut d, source, "t.trace", &mut MemFiles::default()).unwrap();
    (r, d)
}

/// The trace with a pause every `cycles` cycles and every `events` events.
fn paused(source: &str, polling: bool, cycles: u64, events: u64) -> (RunReport, Device, u64) {
    let d = fresh(polling);
    let trace = trace_format::parse(source, "t.trace").unwrap();
    let linked = soc::exec::link(&d, &trace, "t.trace").unwrap();
    let mut host = Bare(d);
    let mut files = MemFiles::default();
    let mut hooks = PauseEvery {
        every: events,
        seen: 0,
        pauses: 0,
    };
    let mut ex = Execution::start(&mut host, "t.trace");
    let mut stops = 0;
    loop {
        let at = (cycles > 0).then(|| Cycle(host.0.now().0 + cycles));
        match ex.advance(&mut host, &trace, &linked, &mut files, &mut hooks, at) {
            Advance::End | Advance::Quit { .. } => break,
            Advance::Paused { .. } => stops += 1,
            Advance::Held { .. } | Advance::Finished { .. } => {}
        }
    }
    let r = ex.finish(&mut host);
    (r, host.0, stops + hooks.pauses)
}

fn same(source: &str, polling: bool, cycles: u64, events: u64) -> u64 {
    let (want, d_want) = through(source, polling);
    let (got, d_got, stops) = paused(source, polling, cycles, events);
    assert_eq!(
        got.to_text(),
        want.to_text(),
        "every {cycles} cycles / {events} events"
    );
    assert_eq!(got.steps, want.steps);
    assert_eq!(d_got.now(), d_want.now());
    assert_eq!(d_got.csr_snapshot(), d_want.csr_snapshot());
    stops
}

const COPY: &str = "\
fill hbm0+0x100000 len=0x3000 pattern=incr8
write32 eng0.m2s.q0.tdrbp_low 0x01000000
write32 eng0.m2s.q0.tdrl 256
write32 eng0.s2m.q0.rdrbp_low 0x01001000
write32 eng0.s2m.q0.rdrl 256
write32 eng0.s2m.q0.comp_cfg 0
write32 eng0.m2s.q0.q_cfg 0x03030000
write32 eng0.s2m.q0.q_cfg 0x03030000
write32 eng0.m2s.change_state 1
write32 eng0.s2m.change_state 1
desc eng0.s2m.q0 len=0x3000 dst=hbm0+0x200000
desc eng0.m2s.q0 len=0x1000 src=hbm0+0x100000 first
desc eng0.m2s.q0 len=0x1000 src=hbm0+0x101000
desc eng0.m2s.q0 len=0x1000 src=hbm0+0x102000 last
doorbell eng0.s2m.q0 1
doorbell eng0.m2s.q0 3
run cycles=50
wait eng0.m2s.q0.tdrhp == 0x40000003 timeout=100000
run until=5000
read32 eng0.m2s.q0.tdrhp == 0x40000003
";

/// A `neuron_memcpy` whose write faults: the firmware polls for ever.
const STALL_RUN: &str = "\
memcpy tpb3 local=0x85f88 hbm=0x1000000000000 len=4 write
run cycles=100000
run until=300000
run
";

const STALL_WAIT: &str = "\
memcpy tpb3 local=0x85f88 hbm=0x1000000000000 len=4 write
wait tpb3.sem.read[0] == 1
";

#[test]
fn pausing_at_cycles_or_events_changes_nothing() {
    for (name, source) in [
        ("copy", COPY),
        ("stall run", STALL_RUN),
        ("stall wait", STALL_WAIT),
        ("phase", PHASE),
    ] {
        for polling in [false, true] {
            for (cycles, events) in [(0, 0), (7, 0), (1000, 0), (0, 1), (0, 3), (13, 2)] {
                let stops = same(source, polling, cycles, events);
                if cycles + events > 0 && name != "stall wait" {
                    assert!(stops > 0, "{name}: never paused");
                }
            }
        }
    }
}

#[test]
fn a_held_statement_is_not_asked_again() {
    struct HoldOnce(usize);
    impl ExecHooks for HoldOnce {
        fn before(
            &mut self,
            _i: usize,
            _s: &trace_format::Statement,
            _l: &soc::exec::Linked,
            _d: &mut Device,
            _e: &soc::exec::Executor,
        ) -> Control {
            self.0 += 1;
            Control::Pause
        }
    }
    let trace = trace_format::parse(COPY, "t.trace").unwrap();
    let mut host = Bare(device());
    let linked = soc::exec::link(&host.0, &trace, "t.trace").unwrap();
    let mut files = MemFiles::default();
    let mut hooks = HoldOnce(0);
    let mut ex = Execution::start(&mut host, "t.trace");
    assert_eq!(ex.position(&trace), Some((0, false)));
    let mut held = 0;
    loop {
        match ex.advance(&mut host, &trace, &linked, &mut files, &mut hooks, None) {
            Advance::Held { index } => {
                held += 1;
                assert_eq!(ex.position(&trace), Some((index, false)));
            }
            Advance::End => break,
            _ => {}
        }
    }
    assert_eq!(
        (held, hooks.0),
        (trace.statements.len(), trace.statements.len())
    );
    assert_eq!(ex.position(&trace), None);
    // A run paused part-way says so.
    let mut host = Bare(device());
    let mut ex = Execution::start(&mut host, "t.trace");
    let mut hooks = soc::exec::NoHooks;
    let mut paused_at = None;
    loop {
        match ex.advance(
            &mut host,
            &trace,
            &linked,
            &mut files,
            &mut hooks,
            Some(Cycle(30)),
        ) {
            Advance::Paused { index } => {
                paused_at = Some(index);
                break;
            }
            Advance::End => break,
            _ => {}
        }
    }
    assert_eq!(paused_at, Some(16));
    assert_eq!(ex.position(&trace), Some((16, true)));
    assert_eq!(host.0.now().0, 30);
}
