//! A trace run one statement at a time: [`run_linked_host`] is a loop over
//! [`Execution::advance`], and a debugger calls it with its own stops — a
//! hook can hold a statement before it starts or pause a `run`/`wait` after
//! any event, and `pause_at` pauses one at an exact cycle. Paused and
//! resumed, a run gives the same events at the same cycles as run through
//! (docs/user-guide.md §12).

use super::statement::{Progress, Timed, advance_timed, start};
use super::*;

/// What one [`Execution::advance`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advance {
    /// [`ExecHooks::before`] held statement `index`: it has not started.
    Held {
        /// The statement's index in the trace.
        index: usize,
    },
    /// Statement `index` (a `run` or `wait`) paused part-way: a hook asked
    /// for it or the pause cycle came.
    Paused {
        /// The statement's index in the trace.
        index: usize,
    },
    /// Statement `index` finished; its record went to
    /// [`ExecHooks::statement`].
    Finished {
        /// The statement's index in the trace.
        index: usize,
    },
    /// A hook quit: before statement `index`, or during it (its record says
    /// so with [`QUIT_MARK`]). Nothing more runs.
    Quit {
        /// The statement's index in the trace.
        index: usize,
    },
    /// Every statement has run.
    End,
}

/// A statement paused part-way.
#[derive(Clone, Debug)]
struct Current {
    index: usize,
    stmt: Statement,
    linked: Linked,
    timed: Timed,
}

/// A trace under way (see the module comment). `Clone` copies where it
/// stands (the debugger's checkpoints, docs/user-guide.md §12 "Going
/// back").
#[derive(Clone, Debug)]
pub struct Execution {
    file: String,
    exec: Executor,
    report: RunReport,
    /// The next statement to start.
    next: usize,
    /// The statement paused part-way, if any.
    current: Option<Current>,
    /// The statement [`ExecHooks::before`] held: not asked again.
    held: Option<usize>,
    /// A hook quit.
    quit: bool,
    prev_master: crate::record::Master,
    /// The span of the last statement that ran (where end-of-trace
    /// failures point).
    last_span: Span,
    /// Every statement has run (not quit): the end-of-trace check applies.
    ended: bool,
}

impl Execution {
    /// Starts a run of trace `file` on the host's device: boots the cores'
    /// firmware and makes the trace the bus master.
    pub fn start(host: &mut dyn HostRuntime, file: &str) -> Self {
        let mut report = RunReport {
            trace: file.to_string(),
            statements: 0,
            expectations_passed: 0,
            expectations_failed: 0,
            expectations_skipped: 0,
            summary: Summary::of(host.device()),
            steps: Vec::new(),
            failures: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        };
        if let Err(e) = host.device().boot_firmware() {
            report.errors.push(located(
                file,
                Span::new(1, 1, 0),
                format!("firmware boot: {}", e.0),
            ));
        }
        // Register accesses of trace statements are the trace's (the driver
        // and the firmware name themselves while they run).
        let prev_master = host.device().set_bus_master(crate::record::Master::Trace);
        Execution {
            file: file.to_string(),
            exec: Executor::default(),
            report,
            next: 0,
            current: None,
            held: None,
            quit: false,
            prev_master,
            last_span: Span::new(1, 1, 0),
            ended: false,
        }
    }

    /// The statement the next [`Execution::advance`] starts or resumes, and
    /// whether it is paused part-way; `None` at the end.
    pub fn position(&self, trace: &Trace) -> Option<(usize, bool)> {
        match &self.current {
            Some(c) => Some((c.index, true)),
            None if self.quit || self.next >= trace.statements.len() => None,
            None => Some((self.next, false)),
        }
    }

    /// The statement a `before` hook holds (paused before it, not to be
    /// asked again), if any.
    pub fn held(&self) -> Option<usize> {
        self.held
    }

    /// Holds the next statement as a `before` hook that paused would: the
    /// next [`Execution::advance`] starts it without asking (a debugger
    /// gone back to a stop before it). Nothing while one is under way.
    pub fn hold_next(&mut self) {
        if self.current.is_none() {
            self.held = Some(self.next);
        }
    }

    /// The software state (producer indices, claimed faults).
    pub fn executor(&self) -> &Executor {
        &self.exec
    }

    /// The report so far, its summary as of now; once every statement has
    /// run, with the end-of-trace check of [`Execution::finish`] (a
    /// debugger's report at the end agrees with `run`'s).
    pub fn report_now(&self, device: &Device) -> RunReport {
        let mut r = self.report.clone();
        r.summary = Summary::of(device);
        r.summary.claim_faults(&self.exec.claimed_faults);
        r.summary.claim_refusals(&self.exec.claimed_refusals);
        if self.ended && !self.quit {
            check_work_left(&self.file, self.last_span, &mut r, device);
        }
        r
    }

    /// Runs (or resumes) one statement. `pause_at`: a `run` or `wait` that
    /// would pass this cycle pauses there (every event up to it has run).
    pub fn advance(
        &mut self,
        host: &mut dyn HostRuntime,
        trace: &Trace,
        linked: &[Linked],
        files: &mut dyn TraceFiles,
        hooks: &mut dyn ExecHooks,
        pause_at: Option<Cycle>,
    ) -> Advance {
        if let Some(c) = self.current.take() {
            let progress = advance_timed(host.device(), c.timed, hooks, pause_at);
            return self.settle(host, hooks, c.index, c.stmt, c.linked, progress);
        }
        if self.quit {
            return Advance::End;
        }
        let i = self.next;
        let (Some(s0), Some(r0)) = (trace.statements.get(i), linked.get(i)) else {
            self.ended = true;
            return Advance::End;
        };
        // Deferred statements are bound and linked now (one copy of the
        // statement either way: a paused one is kept).
        let (s, r, unbound) = match r0 {
            Linked::Deferred => match bind_tensors(&*host, s0).and_then(|b| {
                let l = link_one(host.device(), &b.kind).map_err(|e| (Some(e.span), e.message))?;
                Ok((b, l))
            }) {
                Ok((b, l)) => (b, l, None),
                Err(e) => (s0.clone(), r0.clone(), Some(e)),
            },
            _ => (s0.clone(), r0.clone(), None),
        };
        if self.held != Some(i) {
            match hooks.before(i, &s, &r, host.device(), &self.exec) {
                Control::Continue => {}
                Control::Pause => {
                    self.held = Some(i);
                    return Advance::Held { index: i };
                }
                Control::Quit => {
                    self.quit = true;
                    return Advance::Quit { index: i };
                }
            }
        }
        self.held = None;
        self.next = i + 1;
        if host.device().detects_races() {
            let label = format!("trace line {} {}", s.span.line, s.kind.directive());
            host.device().race_statement(&label);
        }
        let progress = match (unbound, &s.kind) {
            (Some(e), _) => Progress::Done(Err(e)),
            (None, StatementKind::Host { op, status }) => {
                Progress::Done(match host.host_op(op, *status, files) {
                    Ok(HostOutcome::Done(t)) => Ok(Outcome::Done(t)),
                    Ok(HostOutcome::Checked { text, held }) => {
                        Ok(Outcome::Expectation { text, held })
                    }
                    Ok(HostOutcome::Skipped(text)) => Ok(Outcome::Skipped(text)),
                    Err(m) => Err((None, m)),
                })
            }
            (None, _) => start(
                host.device(),
                &mut self.exec,
                &s,
                &r,
                files,
                hooks,
                pause_at,
            ),
        };
        self.settle(host, hooks, i, s, r, progress)
    }

    /// Keeps a paused statement, or records a finished one.
    fn settle(
        &mut self,
        host: &mut dyn HostRuntime,
        hooks: &mut dyn ExecHooks,
        index: usize,
        stmt: Statement,
        linked: Linked,
        progress: Progress,
    ) -> Advance {
        let result = match progress {
            Progress::Paused(timed) => {
                self.current = Some(Current {
                    index,
                    stmt,
                    linked,
                    timed,
                });
                return Advance::Paused { index };
            }
            Progress::Done(result) => result,
        };
        // Timing-only: once the device acted on bytes no copy moved (an
        // index vector, a descriptor), no later check can be trusted to
        // match the payload run (docs/user-guide.md §11).
        let result = match (result, host.device().stale_control()) {
            (Ok(Outcome::Expectation { text, .. }), Some(c)) => Ok(Outcome::Skipped(format!(
                "{text}: skipped (timing-only): from cycle {} the run acted on bytes no copy moved ({} read {})",
                c.cycle, c.reader, c.addr
            ))),
            (result, _) => result,
        };
        let file = &self.file;
        let report = &mut self.report;
        let (status, text) = match result {
            Ok(Outcome::Done(text)) => (Status::Ok, text),
            Ok(Outcome::Expectation { text, held: true }) => {
                report.expectations_passed += 1;
                (Status::Ok, text)
            }
            Ok(Outcome::Skipped(text)) => {
                report.expectations_skipped += 1;
                (Status::Skipped, text)
            }
            Ok(Outcome::Expectation { text, held: false }) => {
                report.expectations_failed += 1;
                report.failures.push(located(file, stmt.span, text.clone()));
                (Status::Failed, text)
            }
            Err((span, message)) => {
                report
                    .errors
                    .push(located(file, span.unwrap_or(stmt.span), message.clone()));
                (Status::Error, message)
            }
        };
        report.statements += 1;
        self.last_span = stmt.span;
        let quit = text == QUIT_MARK;
        let mut text = text;
        for w in self.exec.warnings.drain(..) {
            text.push_str(&format!("\n  warning: {w}"));
            report.warnings.push(located(file, stmt.span, w));
        }
        let device = host.device();
        let mut record = StepRecord {
            line: stmt.span.line,
            directive: stmt.kind.directive(),
            address: Hex(linked.addr()),
            cycle: device.now().0,
            text,
            status,
            events: Vec::new(),
            events_omitted: 0,
            read_digest: self.exec.read_digest.take(),
        };
        if device.has_event_sink() {
            device.flush_events();
            hooks.statement(&record);
        } else {
            record.events = device.take_events();
            hooks.statement(&record);
            report.steps.push(record);
        }
        if quit {
            self.quit = true;
            return Advance::Quit { index };
        }
        Advance::Finished { index }
    }

    /// Runs a statement from outside the trace (a debugger's poke) at the
    /// current cycle, with the trace's software state (the producer
    /// indices `desc` uses). `run` and `wait` are refused: time passes only
    /// through the trace. The outcome is returned, not counted in the
    /// report; the statement's device events stay with the device (its
    /// event sink, or the next statement's record).
    pub fn run_extra(
        &mut self,
        host: &mut dyn HostRuntime,
        stmt: &Statement,
        linked: &Linked,
        files: &mut dyn TraceFiles,
    ) -> (Status, String) {
        if matches!(
            stmt.kind,
            StatementKind::Run { .. } | StatementKind::Wait { .. }
        ) {
            return (
                Status::Error,
                format!(
                    "`{}` cannot run out of turn: time passes only through the trace (use the stepping commands)",
                    stmt.kind.directive()
                ),
            );
        }
        let bound = match linked {
            Linked::Deferred => bind_tensors(&*host, stmt).and_then(|b| {
                let l = link_one(host.device(), &b.kind).map_err(|e| (Some(e.span), e.message))?;
                Ok((b, l))
            }),
            _ => Ok((stmt.clone(), linked.clone())),
        };
        let result = match &bound {
            Err(e) => Err(e.clone()),
            Ok((s, r)) => match &s.kind {
                StatementKind::Host { op, status } => match host.host_op(op, *status, files) {
                    Ok(HostOutcome::Done(t)) => Ok(Outcome::Done(t)),
                    Ok(HostOutcome::Checked { text, held }) => {
                        Ok(Outcome::Expectation { text, held })
                    }
                    Ok(HostOutcome::Skipped(text)) => Ok(Outcome::Skipped(text)),
                    Err(m) => Err((None, m)),
                },
                _ => step(host.device(), &mut self.exec, s, r, files),
            },
        };
        let (status, mut text) = match result {
            Ok(Outcome::Done(t))
            | Ok(Outcome::Expectation {
                text: t,
                held: true,
            }) => (Status::Ok, t),
            Ok(Outcome::Expectation { text, held: false }) => (Status::Failed, text),
            Ok(Outcome::Skipped(text)) => (Status::Skipped, text),
            Err((_, m)) => (Status::Error, m),
        };
        for w in self.exec.warnings.drain(..) {
            text.push_str(&format!("\n  warning: {w}"));
        }
        self.exec.read_digest = None;
        (status, text)
    }

    /// Ends the run: the bus master is restored and the report's summary
    /// taken. A trace that ran to its end with firmware work nothing can
    /// end, or descriptors RDMA_DESC_GEN wrote and no RDMA_DESC_START rang,
    /// fails (docs/firmware.md §Work left at the end).
    pub fn finish(mut self, host: &mut dyn HostRuntime) -> RunReport {
        host.device().set_bus_master(self.prev_master);
        self.report.summary = Summary::of(host.device());
        self.report.summary.claim_faults(&self.exec.claimed_faults);
        self.report
            .summary
            .claim_refusals(&self.exec.claimed_refusals);
        if self.ended && !self.quit {
            check_work_left(&self.file, self.last_span, &mut self.report, host.device());
        }
        self.report
    }
}

/// The end-of-trace check of [`Execution::finish`].
fn check_work_left(file: &str, span: Span, report: &mut RunReport, device: &Device) {
    // Timing-only: once the run acted on bytes no copy moved, work
    // left may be the stale data's doing; like every later check, the
    // failure is skipped, and the summary still shows the work left
    // (docs/user-guide.md §11).
    let stale = device.stale_control().is_some();
    let fail = |report: &mut RunReport, text: String| {
        if stale {
            report.expectations_skipped += 1;
        } else {
            report.expectations_failed += 1;
            report.failures.push(located(file, span, text));
        }
    };
    if let Some(g) = device
        .wait_graph("end of trace", None)
        .filter(|g| g.deadlock)
    {
        let dead: Vec<&crate::device::WaitNode> = g.waits.iter().filter(|w| w.deadlocked).collect();
        if let Some(first) = dead.first() {
            let value = first
                .value
                .map_or(String::new(), |v| format!(", now {v:#x}"));
            let more = match dead.len() {
                1 => String::new(),
                n => format!("; {} more wait(s) nothing can end", n - 1),
            };
            fail(
                report,
                format!(
                    "the trace ended with firmware work that can never run: {} waits on {} ({}{value}) and nothing can change it{more} (the wait-for graph is in the summary)",
                    first.waiter, first.on, first.needs
                ),
            );
        }
        report.summary.deadlock = Some(g);
    }
    for c in device.cores() {
        let (n, engines) = c.unrung();
        if n > 0 {
            fail(
                report,
                format!(
                    "the trace ended with {n} descriptors RDMA_DESC_GEN wrote on tpb{}'s {engines} engine(s) never rung: no RDMA_DESC_START followed, so nothing moved them",
                    c.tpb()
                ),
            );
        }
    }
}
