//! One statement against the device: registers, memory, doorbells,
//! instruction words, `run` and `wait` (`docs/trace-format.md` §4).

use super::*;

/// How a stretch of [`run_device`] ended, besides the device's own stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RunEnd {
    /// The device stopped on its own (idle, limit, stall) or `cond` held.
    Device,
    /// A hook paused the run: the statement resumes later.
    Paused,
    /// A hook quit.
    Quit,
}

/// Runs the device until `limit`, asking the hooks after every event; a
/// hook's pause or quit ends the stretch (the event that prompted it has
/// run). Returns the device's stop, whether `cond` held and why it ended.
pub(super) fn run_device(
    device: &mut Device,
    limit: Option<Cycle>,
    on_stall: OnStall,
    hooks: &mut dyn ExecHooks,
    mut cond: impl FnMut(&mut Device) -> bool,
) -> (RunStop, bool, RunEnd) {
    let mut end = RunEnd::Device;
    let (stop, met) = device.run_while(limit, on_stall, |d| {
        match hooks.during_run(d) {
            Control::Continue => {}
            Control::Pause => {
                end = RunEnd::Paused;
                return true;
            }
            Control::Quit => {
                end = RunEnd::Quit;
                return true;
            }
        }
        cond(d)
    });
    (stop, met && end == RunEnd::Device, end)
}

/// A `run` or `wait` under way: what it needs to go on after a pause
/// (a debugger stopped inside it, [`Execution`]).
#[derive(Clone, Debug)]
pub(super) enum Timed {
    /// `run`: the cycle it started at and its limit.
    Run { start: u64, limit: Option<Cycle> },
    /// `wait`: the cycle it started at, its timeout limit and the check.
    Wait {
        start: u64,
        limit: Cycle,
        at: String,
        addr: u64,
        compare: Compare,
        value: u32,
        mask: u32,
        /// Resumed after a pause: the check is made before time moves
        /// again (the event that paused it may have made it hold).
        resumed: bool,
    },
}

/// What a statement did when it was started or resumed.
pub(super) enum Progress {
    /// It finished.
    Done(Result<Outcome, StepError>),
    /// It paused at the current cycle and resumes with [`advance_timed`].
    Paused(Timed),
}

/// The 32-bit value a `wait` checks, without read side effects.
fn wait_value(d: &Device, addr: u64) -> Option<u32> {
    WaitProbe::of(d, addr).value(d)
}

/// Where a `wait` reads its word, decoded once: the wait re-checks after
/// every device event, and the address decodes the same each time (the
/// SoC map does not change during a run).
#[derive(Clone, Copy)]
enum WaitProbe {
    /// A register: read by its block and offset. `follows_semaphores`: it
    /// changes only with a semaphore ([`Device::reg_follows_semaphores`]).
    Reg {
        target: crate::device::RegTarget,
        follows_semaphores: bool,
    },
    /// Four bytes of memory.
    Mem(u64),
    /// Neither: the value cannot be read.
    None,
}

impl WaitProbe {
    fn of(d: &Device, addr: u64) -> Self {
        match d.reg_target(addr) {
            Ok(Some(target)) => WaitProbe::Reg {
                target,
                follows_semaphores: d.reg_follows_semaphores(target),
            },
            Ok(None) => WaitProbe::Mem(addr),
            Err(_) => WaitProbe::None,
        }
    }

    fn value(self, d: &Device) -> Option<u32> {
        match self {
            WaitProbe::Reg { target, .. } => d.peek_reg(target),
            WaitProbe::Mem(addr) => {
                let mut b = [0u8; 4];
                d.read_bytes(addr, &mut b)
                    .ok()
                    .map(|()| u32::from_le_bytes(b))
            }
            WaitProbe::None => None,
        }
    }
}

/// A [`WaitProbe`] checked after every event of a run: a register that
/// changes only with a semaphore is read again only when the semaphores'
/// version moved ([`Device::sem_version`]); the answer is the one reading
/// it every time would give.
struct WaitCheck<F> {
    probe: WaitProbe,
    holds: F,
    /// The semaphore version of the last read and whether it held.
    last: Option<(u64, bool)>,
}

impl<F: Fn(u32) -> bool> WaitCheck<F> {
    fn new(probe: WaitProbe, holds: F) -> Self {
        WaitCheck {
            probe,
            holds,
            last: None,
        }
    }

    /// The test the check makes of the value.
    #[cfg(test)]
    fn holds_fn(&self) -> &F {
        &self.holds
    }

    fn holds(&mut self, d: &Device) -> bool {
        let version = match self.probe {
            WaitProbe::Reg {
                follows_semaphores: true,
                ..
            } => d.sem_version(),
            _ => None,
        };
        if let (Some(v), Some((seen, held))) = (version, self.last)
            && v == seen
        {
            return held;
        }
        let held = self.probe.value(d).is_some_and(&self.holds);
        self.last = version.map(|v| (v, held));
        held
    }
}

/// Lets a `run` or `wait` advance time, up to its own end or `pause_at`,
/// whichever comes first. A pause before its end leaves the device exactly
/// as the same run would at that cycle: every event up to `pause_at` has
/// run, none after, and resuming gives the same events at the same cycles
/// as running through.
pub(super) fn advance_timed(
    device: &mut Device,
    timed: Timed,
    hooks: &mut dyn ExecHooks,
    pause_at: Option<Cycle>,
) -> Progress {
    match timed {
        Timed::Run { start, limit } => {
            // A bare `run` ends idle, stalled, or still busy at its bound
            // (a device that keeps itself busy must not run for ever).
            let bound =
                limit.unwrap_or(Cycle(start.saturating_add(device.bare_run_limit_cycles())));
            // A pause only before the run's bound.
            let pause = pause_at.filter(|p| *p < bound);
            // Unbounded, a stall ends the run at once: neither the pause nor
            // the bare run's bound may skip polls.
            let on_stall = if limit.is_none() {
                OnStall::Stop
            } else {
                OnStall::SkipToLimit
            };
            let (stop, _, end) = run_device(
                device,
                Some(pause.unwrap_or(bound)),
                on_stall,
                hooks,
                |_| false,
            );
            match end {
                RunEnd::Quit => return Progress::Done(Ok(Outcome::Done(QUIT_MARK.to_string()))),
                RunEnd::Paused => return Progress::Paused(Timed::Run { start, limit }),
                RunEnd::Device => {}
            }
            if let Some(p) = pause {
                match (stop, limit) {
                    // Unbounded and finished before the pause cycle.
                    (RunStop::Idle | RunStop::Stalled, None) => {}
                    // Bounded and idle: the time up to the pause passes.
                    (RunStop::Idle, Some(_)) => {
                        device.advance_to(p);
                        return Progress::Paused(Timed::Run { start, limit });
                    }
                    // Events remain after the pause cycle (or a bounded
                    // stall let the time up to it pass).
                    _ => return Progress::Paused(Timed::Run { start, limit }),
                }
            }
            if stop == RunStop::Idle {
                device.race_quiesce();
            }
            Progress::Done(run_outcome(device, start, limit, stop))
        }
        Timed::Wait {
            start,
            limit,
            at,
            addr,
            compare,
            value,
            mask,
            resumed,
        } => {
            let holds = |v: u32| match compare {
                Compare::Eq => v & mask == value,
                Compare::Ne => v & mask != value,
                Compare::Ge => v & mask >= value,
            };
            let outcome = |device: &Device, stop: Option<RunStop>, met: bool| {
                let now = device.now().0;
                let last = wait_value(device, addr).unwrap_or(0);
                // A memory word a timing-only copy should have written
                // cannot change: held on its old bytes, the wait is
                // skipped, never passed (docs/user-guide.md §Timing-only
                // mode); failed, it says why.
                let stale = device.stale_byte_in(addr, 4);
                if met && let Some(b) = stale {
                    return Outcome::Skipped(format!(
                        "wait {at} {compare} {value:#x}: skipped (timing-only): held at cycle {now} on byte {b:#x}, the destination of a DMA copy that moved no payload"
                    ));
                }
                let why = match stale {
                    Some(b) => format!(
                        " (timing-only: {b:#x} is the destination of a DMA copy that moved no payload)"
                    ),
                    None => String::new(),
                };
                Outcome::Expectation {
                    text: if met {
                        format!(
                            "wait {at} {compare} {value:#x}: held at cycle {now} (waited {} cycles)",
                            now - start
                        )
                    } else if stop == Some(RunStop::Idle) {
                        format!(
                            "wait {at} {compare} {value:#x}: the device went idle at cycle {now} with the value at {last:#010x}{}",
                            work_left_text(device)
                        )
                    } else if stop == Some(RunStop::Stalled) {
                        format!(
                            "wait {at} {compare} {value:#x}: the value is at {last:#010x} and cannot change: {}",
                            stall_text(device)
                        )
                    } else {
                        format!(
                            "wait {at} {compare} {value:#x}: timed out at cycle {now} after {} cycles; value {last:#010x}",
                            now - start
                        )
                    } + &why,
                    held: met,
                }
            };
            if resumed && wait_value(device, addr).is_some_and(holds) {
                device.race_waited(addr);
                return Progress::Done(Ok(outcome(device, None, true)));
            }
            let pause = pause_at.filter(|p| *p < limit);
            let mut check = WaitCheck::new(WaitProbe::of(device, addr), holds);
            let (stop, met, end) = run_device(
                device,
                Some(pause.unwrap_or(limit)),
                OnStall::Stop,
                hooks,
                |d| check.holds(d),
            );
            let paused = Timed::Wait {
                start,
                limit,
                at: at.clone(),
                addr,
                compare,
                value,
                mask,
                resumed: true,
            };
            match end {
                RunEnd::Quit => return Progress::Done(Ok(Outcome::Done(QUIT_MARK.to_string()))),
                RunEnd::Paused => return Progress::Paused(paused),
                RunEnd::Device => {}
            }
            if pause.is_some() && !met && stop == RunStop::Limit {
                return Progress::Paused(paused);
            }
            if met {
                device.race_waited(addr);
            } else if device.detects_races() {
                device.race_failed_wait(&crate::HostWait {
                    label: format!("host wait {at}"),
                    addr,
                    needs: format!("{compare} {value:#x}"),
                });
            }
            Progress::Done(Ok(outcome(device, Some(stop), met)))
        }
    }
}

/// The most cycles a bare `run` (no `cycles=`/`until=`) advances before it
/// stops as still busy (docs/trace-format.md §4.4): about 1.2 s of
/// simulated time at the default 0.85 GHz clock, far beyond any trace's work, so only a device that
/// keeps itself busy meets it.
pub const BARE_RUN_LIMIT_CYCLES: u64 = 1_000_000_000;

/// The outcome of a `run` that ended with `stop`.
fn run_outcome(
    device: &mut Device,
    start: u64,
    limit: Option<Cycle>,
    stop: RunStop,
) -> Result<Outcome, StepError> {
    // `cycles=N` / `until=N` let the time pass even when nothing is
    // pending (docs/trace-format.md §4.4).
    if let (RunStop::Idle, Some(l)) = (stop, limit) {
        device.advance_to(l);
    }
    let now = device.now().0;
    let head = format!(
        "run: cycle {start} -> {now} ({:.1} ns)",
        device.timing().ns(now)
    );
    match stop {
        RunStop::Idle => Ok(Outcome::Done(format!("{head}, idle"))),
        RunStop::Limit if limit.is_none() => Ok(Outcome::Expectation {
            text: format!(
                "{head}: still busy after {} cycles, the bound of a bare `run` (the device keeps itself busy, e.g. a DMA that rings its own doorbell; `run cycles=N` or `until=N` runs longer)",
                now - start
            ),
            held: false,
        }),
        RunStop::Limit => Ok(Outcome::Done(head)),
        // A bounded run got its cycles; the summary says who waits.
        RunStop::Stalled if limit.is_some() => Ok(Outcome::Done(format!(
            "{head}, stalled (the firmware polls for completions that cannot come)"
        ))),
        RunStop::Stalled => Ok(Outcome::Expectation {
            text: format!("{head}: {}", stall_text(device)),
            held: false,
        }),
    }
}

/// Starts a statement: most finish at once; `run` and `wait` advance time
/// up to `pause_at` at most ([`advance_timed`]).
pub(super) fn start(
    device: &mut Device,
    exec: &mut Executor,
    s: &Statement,
    r: &Linked,
    files: &mut dyn TraceFiles,
    hooks: &mut dyn ExecHooks,
    pause_at: Option<Cycle>,
) -> Progress {
    let timed = match &s.kind {
        StatementKind::Run { mode } => {
            let start = device.now().0;
            let limit = match mode {
                RunMode::Idle => None,
                RunMode::Cycles(n) => Some(Cycle(start.saturating_add(*n))),
                RunMode::Until(c) => Some(Cycle(*c)),
            };
            Timed::Run { start, limit }
        }
        StatementKind::Wait {
            compare,
            value,
            mask,
            timeout,
            ..
        } => {
            let addr = r.addr();
            let at = name_of(s, r);
            let mask = mask.unwrap_or(u32::MAX);
            let start = device.now().0;
            let Some(first) = wait_value(device, addr) else {
                return Progress::Done(Err((
                    None,
                    format!("wait {at}: the address cannot be read"),
                )));
            };
            let holds = match compare {
                Compare::Eq => first & mask == *value,
                Compare::Ne => first & mask != *value,
                Compare::Ge => first & mask >= *value,
            };
            if holds {
                // Held at once on bytes a timing-only copy should have
                // written: skipped, never passed.
                if let Some(b) = device.stale_byte_in(addr, 4) {
                    return Progress::Done(Ok(Outcome::Skipped(format!(
                        "wait {at} {compare} {value:#x}: skipped (timing-only): held at cycle {start} on byte {b:#x}, the destination of a DMA copy that moved no payload"
                    ))));
                }
                return Progress::Done(Ok(Outcome::Expectation {
                    text: format!("wait {at} {compare} {value:#x}: held at cycle {start}"),
                    held: true,
                }));
            }
            Timed::Wait {
                start,
                limit: Cycle(start.saturating_add(timeout.unwrap_or(DEFAULT_WAIT_TIMEOUT_CYCLES))),
                at,
                addr,
                compare: *compare,
                value: *value,
                mask,
                resumed: false,
            }
        }
        _ => return Progress::Done(step(device, exec, s, r, files)),
    };
    advance_timed(device, timed, hooks, pause_at)
}

pub(super) fn step(
    device: &mut Device,
    exec: &mut Executor,
    s: &Statement,
    r: &Linked,
    files: &mut dyn TraceFiles,
) -> Result<Outcome, StepError> {
    let at = name_of(s, r);
    let addr = r.addr();
    #[allow(unreachable_patterns)]
    match &s.kind {
        StatementKind::Desc { queue, fields } => {
            let Linked::Desc {
                queue: q,
                addr,
                buf2,
            } = r
            else {
                return Err((None, "internal: desc not linked".into()));
            };
            place_desc(device, exec, q, queue, fields, *addr, *buf2).map(Outcome::Done)
        }
        StatementKind::Doorbell { queue, count } => {
            let Linked::Doorbell(q) = r else {
                return Err((None, "internal: doorbell not linked".into()));
            };
            // As for `desc`: a ring of length 0 is bad input, whoever was
            // to configure it (the trace, the firmware, the driver) —
            // checked now, when the statement runs.
            if let Some((_, 0, _, _)) = ring_of(device, q) {
                let p = if q.dir == Dir::M2s { "T" } else { "R" };
                return Err((
                    Some(queue.span),
                    format!(
                        "{}: ring not configured ({p}DRL = 0): program {p}DRBP_LOW/{p}DRBP_HIGH/{p}DRL before ringing its doorbell",
                        q.region
                    ),
                ));
            }
            let map = device
                .catalog()
                .block(if q.dir == Dir::M2s {
                    "udma_m2s_q"
                } else {
                    "udma_s2m_q"
                })
                .ok_or((None, "CSR map missing".to_string()))?;
            let name = if q.dir == Dir::M2s {
                "TDRTP_INC"
            } else {
                "RDRTP_INC"
            };
            let off = map
                .find(name, None)
                .ok_or((None, format!("{name} missing")))?;
            device.write32(q.base + off, *count).map_err(fault)?;
            let key = (q.engine, q.dir, q.queue);
            let left = exec
                .pending
                .get(&key)
                .copied()
                .unwrap_or(0)
                .saturating_sub(*count);
            exec.pending.insert(key, left);
            Ok(Outcome::Done(format!(
                "doorbell {}.{name} +{count}",
                q.region
            )))
        }
        StatementKind::ExpectFault { cause, count, .. } => {
            let Linked::ExpectFault(q) = r else {
                return Err((None, "internal: expect_fault not linked".into()));
            };
            Ok(expect_fault(device, exec, q, cause.as_deref(), *count))
        }
        StatementKind::ExpectRefusal { core, count } => {
            Ok(expect_refusal(device, exec, *core, *count))
        }
        StatementKind::Inst { core, .. } => {
            let Linked::Inst { word, .. } = r else {
                return Err((None, "internal: inst not linked".into()));
            };
            let tag = device
                .submit_inst(*core, **word, format!("line {}", s.span.line))
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "inst tpb{core}#{}: {} queued on the Q7 firmware",
                tag.seq,
                word.kind().name()
            )))
        }
        StatementKind::InstStream { core, path } => {
            stream::queue_stream(device, *core, path, s.span.line, files)
        }
        StatementKind::Memcpy {
            core,
            local,
            len,
            is_read,
            ..
        } => {
            let call = q7::FwCall::Memcpy {
                local: *local,
                other: addr,
                len: *len,
                is_read: *is_read,
            };
            let tag = device
                .submit_call(*core, call, format!("line {}", s.span.line))
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "memcpy tpb{core}#{}: neuron_memcpy {} {len} bytes queued on the Q7 firmware",
                tag.seq,
                if *is_read { "read" } else { "write" }
            )))
        }
        StatementKind::IcacheInit { core, block_size } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::IcacheInit {
                        block_size: *block_size,
                    },
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "icache_init tpb{core}#{}: IRAM cache init queued",
                tag.seq
            )))
        }
        StatementKind::IcacheFill { core, lines, .. } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::IcacheFill {
                        fetch: addr,
                        lines: *lines,
                    },
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "icache_fill tpb{core}#{}: start_fill_siram of {lines} lines queued",
                tag.seq
            )))
        }
        StatementKind::MemcpyMethod { core, method } => {
            let tag = device
                .submit_call(
                    *core,
                    q7::FwCall::SetMethod(*method),
                    format!("line {}", s.span.line),
                )
                .map_err(|e| (None, e.0))?;
            Ok(Outcome::Done(format!(
                "memcpy_method tpb{core}#{}: neuron_set_memcpy_method({method}) queued",
                tag.seq
            )))
        }
        StatementKind::Write32 { value, .. } => {
            if let Linked::Addr(res) = r
                && let Some(name) = res.register.as_deref()
                && ["DRBP_LOW", "DRBP_HIGH", "DRL", "Q_SW_CTRL"]
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
            {
                let d = device.map().decode(addr);
                if let Some(q) = d
                    .region
                    .and_then(|id| queue_target(device, device.map().name(id)))
                {
                    exec.forget(&q);
                }
            }
            let reg = device.write32(addr, *value).map_err(fault)?;
            match reg {
                Some(w) if w.read_only => Err((
                    s.kind.try_addr().map(|a| a.span),
                    format!(
                        "write32 {at}: register {}.{} is read-only; value unchanged ({:#010x})",
                        w.region, w.register, w.new
                    ),
                )),
                Some(w) => Ok(Outcome::Done(format!(
                    "write32 {at} = {value:#010x} ({}.{}: {:#010x} -> {:#010x})",
                    w.region, w.register, w.old, w.new
                ))),
                None => Ok(Outcome::Done(format!("write32 {at} = {value:#010x}"))),
            }
        }
        StatementKind::Read32 { expect, mask, .. } => {
            let value = device.read32(addr).map_err(fault)?;
            exec.read_digest = Some(read_digest(FNV_OFFSET, &value.to_le_bytes()));
            if expect.is_some()
                && let Some(skip) = skipped_check(device, r, "read32", &at, addr, 4)
            {
                return Ok(skip);
            }
            let m = mask.unwrap_or(u32::MAX);
            let shown = value & m;
            match expect {
                None => Ok(Outcome::Done(format!("read32 {at} = {shown:#010x}"))),
                Some(want) => {
                    let held = shown == *want;
                    let text = if held {
                        format!("read32 {at} == {want:#010x}")
                    } else if m == u32::MAX {
                        format!("read32 {at}: expected {want:#010x}, read {value:#010x}")
                    } else {
                        format!(
                            "read32 {at}: expected {want:#010x} under mask {m:#010x}, read {value:#010x} (masked {shown:#010x})"
                        )
                    };
                    Ok(Outcome::Expectation { text, held })
                }
            }
        }
        StatementKind::Fill { len, content, .. } => {
            match content {
                FillContent::Byte(b) => device.fill(addr, *len, *b).map_err(fault)?,
                FillContent::Pattern { kind, seed } => {
                    // Probe the whole range first so a fault changes nothing.
                    probe_write(device, addr, *len)?;
                    // Plain memory holds the pattern page by page until its
                    // bytes are needed; SBUF and PSUM get the bytes now.
                    let (k, s) = (*kind, *seed);
                    let pattern: mem::PatternFn =
                        std::sync::Arc::new(move |at: u64, buf: &mut [u8]| k.fill(s, at, buf));
                    let lazy = device.fill_pattern(addr, *len, &pattern).map_err(fault)?;
                    let eager = if lazy { 0 } else { *len };
                    let chunk = exec.chunk(usize::try_from(eager.min(CHUNK_BYTES)).unwrap_or(0));
                    let mut done = 0u64;
                    while done < eager {
                        let n = (eager - done).min(CHUNK_BYTES) as usize;
                        kind.fill(*seed, done, &mut chunk[..n]);
                        device
                            .write_bytes(addr + done, &chunk[..n])
                            .map_err(fault)?;
                        done += n as u64;
                    }
                }
            }
            let what = match content {
                FillContent::Byte(b) => format!("byte {b:#04x}"),
                FillContent::Pattern { kind, seed } => {
                    format!("pattern {} seed {seed}", kind.name())
                }
            };
            Ok(Outcome::Done(format!("fill {at} len {len:#x} with {what}")))
        }
        StatementKind::Write { bytes, .. } => {
            device.write_bytes(addr, bytes).map_err(fault)?;
            Ok(Outcome::Done(format!("write {at} {} bytes", bytes.len())))
        }
        StatementKind::Load {
            path, offset, len, ..
        } => {
            let file = files.open(&path.path).map_err(|e| {
                (
                    Some(path.span),
                    format!("load: cannot read `{}`: {e}", path.path),
                )
            })?;
            let size = file.len_bytes();
            let start = offset.unwrap_or(0);
            if start > size {
                return Err((
                    Some(path.span),
                    format!(
                        "load: offset {start:#x} is past the end of `{}` ({size} bytes)",
                        path.path
                    ),
                ));
            }
            let avail = size - start;
            let take = match len {
                Some(l) if *l > avail => {
                    return Err((
                        Some(path.span),
                        format!(
                            "load: `{}` has {avail} bytes after offset {start:#x}, fewer than len {l:#x}",
                            path.path
                        ),
                    ));
                }
                Some(l) => *l,
                None => avail,
            };
            // Check the whole destination first: a load that cannot land
            // moves nothing.
            probe_write(device, addr, take)?;
            let buf = exec.chunk(usize::try_from(take.min(CHUNK_BYTES)).unwrap_or(0));
            let mut done = 0u64;
            while done < take {
                let n = (take - done).min(CHUNK_BYTES) as usize;
                file.read_at(start + done, &mut buf[..n]).map_err(|e| {
                    (
                        Some(path.span),
                        format!("load: cannot read `{}`: {e}", path.path),
                    )
                })?;
                device.write_bytes(addr + done, &buf[..n]).map_err(fault)?;
                done += n as u64;
            }
            Ok(Outcome::Done(format!(
                "load {at} {take} bytes from {}",
                path.path
            )))
        }
        StatementKind::Expect { check, .. } => match check {
            ExpectCheck::Bytes(want) => {
                let mut got = vec![0u8; want.len()];
                device.read_bytes(addr, &mut got).map_err(fault)?;
                exec.read_digest = Some(read_digest(FNV_OFFSET, &got));
                if let Some(skip) = skipped_check(device, r, "expect", &at, addr, want.len() as u64)
                {
                    return Ok(skip);
                }
                if &got == want {
                    Ok(Outcome::Expectation {
                        text: format!("expect {at}: {} bytes match", want.len()),
                        held: true,
                    })
                } else {
                    let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
                    Ok(Outcome::Expectation {
                        text: format!(
                            "expect {at}: byte {first} (at {:#x}) is {:#04x}, expected {:#04x}; read {}",
                            addr + first as u64,
                            got[first],
                            want[first],
                            hex_bytes(&got[..got.len().min(32)])
                        ),
                        held: false,
                    })
                }
            }
            ExpectCheck::Sha256 { len, digest } => {
                let got = sha256_range(device, addr, *len)?;
                exec.read_digest = Some(read_digest(FNV_OFFSET, &got));
                if let Some(skip) = skipped_check(device, r, "expect", &at, addr, *len) {
                    return Ok(skip);
                }
                let held = &got == digest;
                let text = if held {
                    format!("expect {at}: sha256 of {len:#x} bytes matches")
                } else {
                    format!(
                        "expect {at}: sha256 of {len:#x} bytes is {}, expected {}",
                        hex_bytes(&got),
                        hex_bytes(digest)
                    )
                };
                Ok(Outcome::Expectation { text, held })
            }
        },
        StatementKind::Dump { len, file, .. } => {
            // Timing-only: bytes a copy should have written are the old
            // ones; the dump (and a file a later `load` reads) cannot show
            // the payload run's (docs/user-guide.md §11).
            let stale = device.stale_byte_in(addr, *len);
            let done = dump(device, exec, files, addr, &at, *len, file.as_ref())?;
            if let Some(b) = stale {
                exec.warnings.push(format!(
                    "dump {at}: byte {b:#x} (and maybe others) is the destination of a DMA copy that moved no payload (timing-only): the dump holds the old bytes there, not the payload run's"
                ));
            }
            Ok(done)
        }
        other => Err((
            None,
            format!("`{}` is not supported by this executor", other.directive()),
        )),
    }
}

/// `dump`: the bytes printed as a hexdump, or written to `file`.
fn dump(
    device: &mut Device,
    exec: &mut Executor,
    files: &mut dyn TraceFiles,
    addr: u64,
    at: &str,
    len: u64,
    file: Option<&trace_format::FileRef>,
) -> Result<Outcome, StepError> {
    match file {
        Some(f) => {
            probe_read(device, addr, len)?;
            let n =
                usize::try_from(len).map_err(|_| (None, "dump: length too large".to_string()))?;
            let mut data = vec![0u8; n];
            device.read_bytes(addr, &mut data).map_err(fault)?;
            exec.read_digest = Some(read_digest(FNV_OFFSET, &data));
            files.write(&f.path, &data).map_err(|e| {
                (
                    Some(f.span),
                    format!("dump: cannot write `{}`: {e}", f.path),
                )
            })?;
            Ok(Outcome::Done(format!(
                "dump {at} {len:#x} bytes to {}",
                f.path
            )))
        }
        None => {
            if len > MAX_PRINTED_DUMP_BYTES {
                return Err((
                    None,
                    format!(
                        "dump of {len:#x} bytes is too long to print (limit {MAX_PRINTED_DUMP_BYTES:#x}); add file=PATH"
                    ),
                ));
            }
            let mut data = vec![0u8; len as usize];
            device.read_bytes(addr, &mut data).map_err(fault)?;
            exec.read_digest = Some(read_digest(FNV_OFFSET, &data));
            Ok(Outcome::Done(format!(
                "dump {at} {len:#x} bytes\n{}",
                hexdump(addr, &data)
            )))
        }
    }
}

/// What firmware work a device that went idle still holds and nothing can
/// move (docs/firmware.md §Work left at the end), as a clause for a failed
/// `wait`: empty when there is none.
fn work_left_text(device: &Device) -> String {
    let mut parts = Vec::new();
    if let Some(g) = device.wait_graph("wait failed", None)
        && let Some(w) = g.waits.iter().find(|w| w.deadlocked)
    {
        let value = w.value.map_or(String::new(), |v| format!(", now {v:#x}"));
        parts.push(format!(
            "{} waits on {} ({}{value}) and nothing can change it",
            w.waiter, w.on, w.needs
        ));
    }
    for c in device.cores() {
        let (n, engines) = c.unrung();
        if n > 0 {
            parts.push(format!(
                "tpb{} holds {n} descriptors RDMA_DESC_GEN wrote on {engines} engine(s) that no RDMA_DESC_START rang",
                c.tpb()
            ));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; the firmware cannot go on: {}", parts.join("; "))
    }
}

/// `expect_refusal CORE [count=N]` (docs/trace-format.md §4.10): the
/// core's firmware refused a word or call by now (exactly `count` when
/// given); on success every refusal so far is claimed as expected.
fn expect_refusal(device: &Device, exec: &mut Executor, core: u8, count: Option<u64>) -> Outcome {
    let refused: &[q7::Refusal] = device.core(core).map_or(&[], |c| c.refusals());
    let n = refused.len() as u64;
    let held = match count {
        Some(want) => n == want,
        None => n > 0,
    };
    let describe = refused
        .iter()
        .map(|r| {
            format!(
                "tpb{core}#{} {} ({}) at cycle {}: {}",
                r.inst.seq, r.kind, r.inst.source, r.at, r.reason
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let text = if held {
        for i in 0..refused.len() {
            if !exec.claimed_refusals.contains(&(core, i)) {
                exec.claimed_refusals.push((core, i));
            }
        }
        format!("expect_refusal tpb{core}: {n} refused (expected): {describe}")
    } else {
        let wanted = match count {
            Some(k) => format!("{k} refusal(s)"),
            None => "a refusal".to_string(),
        };
        if refused.is_empty() {
            format!(
                "expect_refusal tpb{core}: expected {wanted}, but the firmware refused nothing by cycle {}",
                device.now().0
            )
        } else {
            format!("expect_refusal tpb{core}: expected {wanted}, found {n}: {describe}")
        }
    };
    Outcome::Expectation { text, held }
}

pub(super) fn probe_read(device: &Device, addr: u64, len: u64) -> Result<(), StepError> {
    // Reading the first and last byte checks region, holes and bounds.
    crate::memory::DeviceMemory::resolve(device.map(), addr, len).map_err(fault)?;
    let mut b = [0u8; 1];
    device.read_bytes(addr, &mut b).map_err(fault)?;
    if len > 0 && device.read_bytes(addr + len - 1, &mut b).is_err() {
        // The first byte reads and the last does not: the error names the
        // first byte that does not (where a range runs into a pad or a
        // hole), found by bisection.
        let (mut ok, mut bad) = (addr, addr + len - 1);
        while bad - ok > 1 {
            let mid = ok + (bad - ok) / 2;
            if device.read_bytes(mid, &mut b).is_ok() {
                ok = mid;
            } else {
                bad = mid;
            }
        }
        device.read_bytes(bad, &mut b).map_err(fault)?;
    }
    Ok(())
}

pub(super) fn probe_write(device: &Device, addr: u64, len: u64) -> Result<(), StepError> {
    probe_read(device, addr, len)
}

pub(super) fn sha256_range(device: &Device, addr: u64, len: u64) -> Result<[u8; 32], StepError> {
    probe_read(device, addr, len)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK_BYTES.min(len) as usize];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(CHUNK_BYTES) as usize;
        device
            .read_bytes(addr + done, &mut buf[..n])
            .map_err(fault)?;
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h.finalize().into())
}

pub(super) fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Classic 16-bytes-per-line hexdump with addresses and ASCII.
pub fn hexdump(base: u64, data: &[u8]) -> String {
    let mut out = String::new();
    for (i, chunk) in data.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|&b| {
                if (0x20..0x7f).contains(&b) {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!(
            "    {:#014x}: {:<47}  |{ascii}|\n",
            base + (i as u64) * 16,
            hex.join(" ")
        ));
    }
    out.trim_end_matches('\n').to_string()
}

/// The stall report of a stalled device, as text.
fn stall_text(device: &Device) -> String {
    device
        .stall_report()
        .map_or_else(|| "the device stalled".to_string(), |r| r.to_text())
}

/// Whether a tally's cause is `want`: the whole name
/// (`SEC_B_INT_CAUSE.PKT_LEN_MISMATCH`) or the bit name after the dot,
/// case-insensitive.
fn cause_matches(cause: &str, want: &str) -> bool {
    cause.eq_ignore_ascii_case(want)
        || cause
            .rsplit_once('.')
            .is_some_and(|(_, bit)| bit.eq_ignore_ascii_case(want))
}

/// `expect_fault`: checks the faults queue `q` has raised so far and
/// claims the ones it matches (docs/trace-format.md §4.9).
fn expect_fault(
    device: &Device,
    exec: &mut Executor,
    q: &QueueTarget,
    cause: Option<&str>,
    count: Option<u64>,
) -> Outcome {
    // An engine nothing has used yet has raised nothing.
    let on_queue: Vec<&udma::FaultTally> = device
        .engine(q.engine)
        .map(|e| e.faults())
        .unwrap_or_default()
        .iter()
        .filter(|f| f.dir == q.dir && f.queue == Some(q.queue))
        .collect();
    let matching: Vec<&udma::FaultTally> = on_queue
        .iter()
        .copied()
        .filter(|f| cause.is_none_or(|c| cause_matches(&f.cause, c)))
        .collect();
    let n: u64 = matching.iter().map(|f| f.count).sum();
    let held = match count {
        Some(want) => n == want,
        None => n > 0,
    };
    let describe = |fs: &[&udma::FaultTally]| {
        fs.iter()
            .map(|f| {
                format!(
                    "{} ({}) x{} first at cycle {}",
                    f.cause, f.action, f.count, f.first_cycle
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let wanted = match (cause, count) {
        (Some(c), Some(k)) => format!("{k} x {c}"),
        (Some(c), None) => c.to_string(),
        (None, Some(k)) => format!("{k} faults"),
        (None, None) => "a fault".to_string(),
    };
    let text = if held {
        // The raises so far are claimed; later ones of the kind are not
        // (docs/trace-format.md §4.9).
        for f in &matching {
            let key = (q.engine, f.dir, f.queue, f.cause.clone(), f.action);
            match exec.claimed_faults.iter_mut().find(|(k, _)| *k == key) {
                Some((_, raises)) => *raises = (*raises).max(f.count),
                None => exec.claimed_faults.push((key, f.count)),
            }
        }
        format!(
            "expect_fault {}: {} (expected)",
            q.region,
            describe(&matching)
        )
    } else if on_queue.is_empty() {
        format!(
            "expect_fault {}: expected {wanted}, but the queue raised none by cycle {}",
            q.region,
            device.now().0
        )
    } else {
        format!(
            "expect_fault {}: expected {wanted}, found {n} matching; the queue raised {}",
            q.region,
            describe(&on_queue)
        )
    };
    Outcome::Expectation { text, held }
}

/// In timing-only mode, the outcome of a check of `len` bytes at `addr`
/// that a DMA copy should have written and did not: skipped, never passed
/// or failed (docs/user-guide.md §Timing-only mode). `None`: the check is
/// made (registers, and memory no skipped copy wrote).
fn skipped_check(
    device: &Device,
    r: &Linked,
    what: &str,
    at: &str,
    addr: u64,
    len: u64,
) -> Option<Outcome> {
    if matches!(r, Linked::Addr(res) if res.register.is_some()) {
        return None;
    }
    let b = device.stale_byte_in(addr, len)?;
    Some(Outcome::Skipped(format!(
        "{what} {at}: skipped (timing-only): byte {b:#x} is the destination of a DMA copy that moved no payload"
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::exec::{TraceFiles, run_source};

    struct NoFiles;

    impl TraceFiles for NoFiles {
        fn read(&mut self, path: &str) -> io::Result<Vec<u8>> {
            Err(io::Error::other(format!("no file {path}")))
        }
        fn write(&mut self, path: &str, _: &[u8]) -> io::Result<()> {
            Err(io::Error::other(format!("no file {path}")))
        }
    }

    fn addr(d: &Device, text: &str) -> u64 {
        let expr = trace_format::parse_addr(text, "t.trace").unwrap();
        resolve(d, &expr).unwrap().addr
    }

    /// Fills stage their bytes in one buffer kept between statements: a
    /// shorter fill after a longer one, of another pattern, lands exactly
    /// its own bytes (nothing of the first one's left in the buffer).
    #[test]
    fn fills_after_fills_land_their_own_bytes() {
        use trace_format::FillPattern;
        let mut d = Device::trn2().unwrap();
        let report = run_source(
            &mut d,
            "fill hbm0+0x1000 len=0x3000 pattern=incr32 seed=0x100\n\
             fill hbm0+0x1000 len=0x802 pattern=incr8 seed=7\n\
             fill hbm0+0x5000 len=0x14 pattern=incr32 seed=0x55\n",
            "t.trace",
            &mut NoFiles,
        )
        .unwrap();
        assert_eq!(report.exit_code(), 0, "{}", report.to_text());
        let base = addr(&d, "hbm0");
        let mut got = vec![0u8; 0x3000];
        d.read_bytes(base + 0x1000, &mut got).unwrap();
        let mut want = vec![0u8; 0x3000];
        FillPattern::Incr32.fill(0x100, 0, &mut want);
        FillPattern::Incr8.fill(7, 0, &mut want[..0x802]);
        assert_eq!(got, want);
        let mut got = vec![0u8; 0x14];
        d.read_bytes(base + 0x5000, &mut got).unwrap();
        let mut want = vec![0u8; 0x14];
        FillPattern::Incr32.fill(0x55, 0, &mut want);
        assert_eq!(got, want);
    }

    /// A wait's check after every event of a run gives what reading its
    /// word every time gives, on semaphores the engines increment (with
    /// their last packets), the firmware increments itself (EVENTS
    /// updates, when reads are done and when words are done) and a host
    /// write sets under it: the check of a `SEM_READ` reads again only
    /// when the semaphores' version moved ([`Device::sem_version`]).
    #[test]
    fn a_wait_check_sees_every_semaphore_change() {
        // Parked cores, and cores polling one by one (the register log
        // records), whose updates come at polls after other events.
        wait_check_sees_every_semaphore_change(false);
        wait_check_sees_every_semaphore_change(true);
    }

    fn wait_check_sees_every_semaphore_change(polling: bool) {
        let mut d = Device::trn2().unwrap();
        if polling {
            d.record_reg_log(Some(Box::new(io::sink())));
        }
        // tpb1's engines move a long transfer meanwhile, so that events
        // without a semaphore change come between tpb0's.
        let mut setup = String::from(
            "write32 tpb0.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
             write32 tpb0.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
             write32 tpb1.q7_local_reg.memcopy_carveout_cfg 0x01000000\n\
             write32 tpb1.q7_local_reg.memcopy_dma_cfg 0x0001ffff\n\
             ",
        );
        for w in 0..8u64 {
            setup.push_str(&format!(
                "inst tpb1 DIRECT2D semaphore=1 sem_increment=1 \
                 src_start_addr=imm:{:#x} src_step_elem=[1,2048] src_num_elem=[2048,128] src_elem_size=2 \
                 dst_start_addr=imm:0x2000000000 dst_step_elem=[1,131072] dst_num_elem=[2048,128] dst_elem_size=2 \
                 in_dtype=BFLOAT16 out_dtype=BFLOAT16\n",
                0x3000_0000 + w * 0x8_0000
            ));
        }
        for w in 0..12u64 {
            let update = match w % 3 {
                0 => " events.update_mode=SEM_INC_READ events.update_idx=3",
                1 => " events.update_mode=SEM_INC_COMPLETE events.update_idx=4",
                _ => "",
            };
            setup.push_str(&format!(
                "inst tpb0 DIRECT2D{update} semaphore=1 sem_increment=1 \
                 src_start_addr=imm:{:#x} src_step_elem=[1,256] src_num_elem=[256,128] src_elem_size=2 \
                 dst_start_addr=imm:{:#x} dst_step_elem=[1,131072] dst_num_elem=[256,128] dst_elem_size=2 \
                 in_dtype=BFLOAT16 out_dtype=BFLOAT16\n",
                0x1000_0000 + w * 0x1_0000,
                0x20_0000_0000 + w * 512,
            ));
        }
        let report = run_source(&mut d, &setup, "t.trace", &mut NoFiles).unwrap();
        assert_eq!(report.exit_code(), 0, "{}", report.to_text());
        let sems: Vec<u64> = [1, 3, 4]
            .iter()
            .map(|i| addr(&d, &format!("tpb0.sem.read[{i}]")))
            .collect();
        let set = addr(&d, "tpb0.sem.set[4]");
        // Odd values and values past a half: each flips at changes a
        // missed read would not see.
        type Holds = fn(u32) -> bool;
        let tests: [Holds; 2] = [|v| v % 2 == 1, |v| v >= 7];
        let mut checks: Vec<(WaitProbe, WaitCheck<Holds>)> = Vec::new();
        for &a in &sems {
            let probe = WaitProbe::of(&d, a);
            assert!(matches!(
                probe,
                WaitProbe::Reg {
                    follows_semaphores: true,
                    ..
                }
            ));
            for t in tests {
                checks.push((probe, WaitCheck::new(probe, t)));
            }
        }
        let (mut events, mut flips, mut last) = (0u64, 0u64, Vec::new());
        let mut host_set = false;
        let (stop, _) = d.run_while(None, OnStall::Stop, |d| {
            events += 1;
            // Once, a host write under the run (as a debugger's hook may).
            if !host_set && d.now().0 > 2_000 {
                host_set = true;
                d.write32(set, 5).unwrap();
            }
            let now: Vec<bool> = checks
                .iter_mut()
                .map(|(probe, check)| {
                    let direct = probe.value(d).is_some_and(check.holds_fn());
                    assert_eq!(check.holds(d), direct, "event {events}");
                    direct
                })
                .collect();
            flips += u64::from(!last.is_empty() && now != last);
            last = now;
            false
        });
        assert_eq!(stop, RunStop::Idle);
        assert!(host_set);
        assert!(flips > 20, "{flips} changes seen in {events} events");
        assert_eq!(
            d.peek_reg(d.reg_target(sems[0]).unwrap().unwrap()),
            Some(12 * 16)
        );
    }
}
