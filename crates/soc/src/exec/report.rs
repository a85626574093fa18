//! The run report: per-statement records, the run summary and the text
//! form of device events (`docs/user-guide.md`, run output).

use super::*;

/// The outcome of one statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Done; any expectation held.
    Ok,
    /// An expectation did not hold.
    Failed,
    /// Bad input or a fault: the statement did not complete.
    Error,
    /// A check timing-only mode cannot make: the bytes it reads were not
    /// moved (docs/user-guide.md §Timing-only mode).
    Skipped,
    /// A signal (SIGINT, SIGTERM) stopped the run inside this statement
    /// (docs/user-guide.md §3).
    Interrupted,
    /// A signal stopped the run before this statement started.
    NotRun,
}

impl Status {
    /// The word a statement's line starts with (`FAILED `, …; none for
    /// `ok`, and for the interrupted ones, whose text says so).
    pub fn mark(self) -> &'static str {
        match self {
            Status::Ok | Status::Interrupted | Status::NotRun => "",
            Status::Failed => "FAILED ",
            Status::Error => "ERROR ",
            Status::Skipped => "SKIPPED ",
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What one statement did.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepRecord {
    /// Trace line.
    pub line: u32,
    /// Directive keyword.
    pub directive: &'static str,
    /// Resolved address (the ring slot for `desc`, the doorbell register for
    /// `doorbell`; 0 for `run`).
    pub address: Hex,
    /// Simulated cycle after the statement.
    pub cycle: u64,
    /// What happened, one line (dumps: several).
    pub text: String,
    /// Outcome.
    pub status: Status,
    /// Device side effects of this statement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<DeviceEvent>,
    /// Events of the statement left out by `run --events-limit` (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events_omitted: u64,
    /// A digest ([`read_digest`]) of the bytes an `expect`, `read32` or
    /// `dump` read (for an `expect … sha256=`, of the SHA-256 it computed):
    /// what `neuron-sim race` compares between schedules
    /// (docs/races.md §Schedule perturbation). Not in the JSON.
    #[serde(skip)]
    pub read_digest: Option<u64>,
}

/// FNV-1a (64 bits) over `bytes`, from `seed` (start from
/// [`FNV_OFFSET`]): the digest of [`StepRecord::read_digest`], and what a
/// caller folds several of them with.
#[must_use]
pub fn read_digest(seed: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(seed, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// The FNV-1a offset basis: [`read_digest`]'s starting value.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Figures of one queue (one engine, one queue index, both directions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QueueSummary {
    /// Engine id.
    pub engine: u16,
    /// Queue index.
    pub queue: u8,
    /// Packets moved.
    pub packets: u64,
    /// TX (M2S) descriptors completed.
    pub tx_descriptors: u64,
    /// RX (S2M) descriptors completed.
    pub rx_descriptors: u64,
    /// Payload bytes written.
    pub bytes: u64,
    /// Data-path cycles.
    pub busy_cycles: u64,
    /// First packet start.
    pub first_cycle: Option<u64>,
    /// Last packet landed.
    pub last_cycle: Option<u64>,
    /// bytes / (last − first) in GB/s (bytes per ns).
    pub bandwidth_gbps: f64,
    /// Faults raised on this queue (both directions), all actions (JSON
    /// `fault_count`, as the run's total; `faults` is the run's list).
    #[serde(rename = "fault_count")]
    pub faults: u64,
    /// What stopped on the queue's engine: `m2s aborted` (the engine's
    /// whole M2S direction), `s2m queue non_active` (this queue after an
    /// AXI error); empty when nothing did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<String>,
}

/// A kind of fault one engine raised (docs/user-guide.md §Faults).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FaultSummary {
    /// Engine.
    pub engine: u16,
    /// Where, what and how often.
    #[serde(flatten)]
    pub tally: udma::FaultTally,
    /// True when a trace's `expect_fault` claimed every raise of it.
    pub expected: bool,
    /// Set when `expect_fault` claimed only the first raises (those it
    /// counted): the later ones are unexpected (docs/trace-format.md §4.9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed: Option<u64>,
}

impl FaultSummary {
    /// The raises no `expect_fault` claimed, if the fault stopped work or
    /// raised an interrupt: what `--fail-on-fault` fails on.
    pub fn unexpected_raises(&self) -> u64 {
        if !self.tally.is_unmasked() || self.expected {
            return 0;
        }
        self.tally.count - self.claimed.unwrap_or(0).min(self.tally.count)
    }
}

/// What identifies a kind of fault an `expect_fault` claims: engine,
/// direction, queue, cause, action.
pub type FaultKey = (u16, Dir, Option<u8>, String, &'static str);

/// A hardware check an engine passed over in timing-only mode.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UncheckedSummary {
    /// Engine.
    pub engine: u16,
    /// Where, what and how often.
    #[serde(flatten)]
    pub tally: udma::UncheckedTally,
}

/// The run's totals (docs/references/design.md §6).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Simulated cycles at the end.
    pub cycles: u64,
    /// Simulated time in ns.
    pub sim_ns: f64,
    /// DMA clock.
    pub clock_ghz: f64,
    /// Payload bytes moved by all engines.
    pub bytes: u64,
    /// Descriptors completed (TX + RX).
    pub descriptors: u64,
    /// TX descriptors completed.
    pub tx_descriptors: u64,
    /// RX descriptors completed.
    pub rx_descriptors: u64,
    /// Packets moved.
    pub packets: u64,
    /// Per queue, keyed `engN.qQ`.
    pub queues: BTreeMap<String, QueueSummary>,
    /// Faults raised, all engines and actions (the sum of the `faults`
    /// counts).
    pub fault_count: u64,
    /// Faults that stopped work or raised an interrupt and no
    /// `expect_fault` claimed: what `--fail-on-fault` fails on.
    pub unexpected_faults: u64,
    /// Each kind of fault, by engine, in the order first raised.
    pub faults: Vec<FaultSummary>,
    /// Timing-only mode: the hardware checks (`validate_crc`) that compared
    /// values computed from bytes no copy moved, so were not made; the
    /// engines carried on as if they passed (docs/user-guide.md §11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<UncheckedSummary>,
    /// Timing-only mode: the first read of bytes no copy moved as control
    /// data (an index vector, a descriptor); checks from then on are
    /// skipped (docs/user-guide.md §11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_control: Option<crate::memory::StaleControl>,
    /// Per core with Q7 firmware, keyed `tpbN`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub firmware: BTreeMap<String, CoreSummary>,
    /// Set when the device ended stalled: the firmware polls for
    /// completions no engine will make (docs/firmware.md §Stalls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall: Option<crate::device::StallReport>,
    /// Set when the trace ended with firmware work nothing can end: the
    /// wait-for graph of that moment (docs/firmware.md §Work left at the
    /// end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<crate::device::WaitGraph>,
}

/// A word or call the firmware refused.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RefusalSummary {
    /// When, which word, why.
    #[serde(flatten)]
    pub refusal: q7::Refusal,
    /// True when a trace's `expect_refusal` claimed it.
    pub expected: bool,
}

/// What one core's firmware did.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CoreSummary {
    /// Words still in the instruction queue (gated or waiting for room).
    pub queued: usize,
    /// Words issued whose data is still moving.
    pub in_flight: usize,
    /// Per instruction kind.
    pub kinds: BTreeMap<String, q7::KindStats>,
    /// Words and calls the firmware refused, in order (docs/firmware.md
    /// §Refusals): `--fail-on-fault` fails on them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusalSummary>,
    /// Descriptors RDMA_DESC_GEN wrote that no RDMA_DESC_START rang.
    #[serde(skip_serializing_if = "is_zero")]
    pub unrung_descriptors: u64,
}

impl Summary {
    /// The summary of a device's state.
    pub fn of(device: &Device) -> Self {
        let t = device.timing();
        let mut s = Summary {
            cycles: device.now().0,
            sim_ns: t.ns(device.now().0),
            clock_ghz: t.clock_ghz,
            bytes: 0,
            descriptors: 0,
            tx_descriptors: 0,
            rx_descriptors: 0,
            packets: 0,
            queues: BTreeMap::new(),
            fault_count: 0,
            unexpected_faults: 0,
            faults: Vec::new(),
            unchecked: Vec::new(),
            stale_control: device.stale_control().cloned(),
            firmware: BTreeMap::new(),
            stall: device.stall_report(),
            deadlock: None,
        };
        for e in device.engines() {
            for u in e.unchecked() {
                s.unchecked.push(UncheckedSummary {
                    engine: e.id(),
                    tally: u.clone(),
                });
            }
            for f in e.faults() {
                s.fault_count += f.count;
                s.faults.push(FaultSummary {
                    engine: e.id(),
                    tally: f.clone(),
                    expected: false,
                    claimed: None,
                });
            }
        }
        for c in device
            .cores()
            .filter(|c| !c.stats().is_empty() || !c.is_idle())
        {
            s.firmware.insert(
                format!("tpb{}", c.tpb()),
                CoreSummary {
                    queued: c.queued(),
                    in_flight: c.in_flight(),
                    kinds: c
                        .stats()
                        .iter()
                        .map(|(k, v)| ((*k).to_string(), *v))
                        .collect(),
                    refused: c
                        .refusals()
                        .iter()
                        .map(|r| RefusalSummary {
                            refusal: r.clone(),
                            expected: false,
                        })
                        .collect(),
                    unrung_descriptors: c.unrung().0,
                },
            );
        }
        for (engine, queue, st) in device.queue_stats() {
            s.bytes += st.bytes;
            s.tx_descriptors += st.tx_descs;
            s.rx_descriptors += st.rx_descs;
            s.packets += st.packets;
            let span_ns = match (st.first_start, st.last_done) {
                (Some(a), Some(b)) if b > a => t.ns(b - a),
                _ => 0.0,
            };
            s.queues.insert(
                format!("eng{engine}.q{queue}"),
                QueueSummary {
                    engine,
                    queue,
                    packets: st.packets,
                    tx_descriptors: st.tx_descs,
                    rx_descriptors: st.rx_descs,
                    bytes: st.bytes,
                    busy_cycles: st.busy_cycles,
                    first_cycle: st.first_start,
                    last_cycle: st.last_done,
                    bandwidth_gbps: if span_ns > 0.0 {
                        (st.bytes as f64 / span_ns * 1000.0).round() / 1000.0
                    } else {
                        0.0
                    },
                    ..QueueSummary::default()
                },
            );
        }
        // A queue that faulted stays in the list, with what stopped, even
        // when it moved nothing.
        for f in &s.faults {
            let Some(q) = f.tally.queue else { continue };
            let Some(e) = device.engine(f.engine) else {
                continue;
            };
            let entry = s
                .queues
                .entry(format!("eng{}.q{q}", f.engine))
                .or_insert_with(|| QueueSummary {
                    engine: f.engine,
                    queue: q,
                    ..QueueSummary::default()
                });
            entry.faults += f.tally.count;
            for dir in [Dir::M2s, Dir::S2m] {
                let mut what = Vec::new();
                if e.dir_state(dir) == udma::DirState::Aborted {
                    what.push(format!("{} aborted", dir.name()));
                }
                if e.queue_non_active(q, dir) {
                    what.push(format!("{} queue non_active", dir.name()));
                }
                for text in what {
                    if !entry.stopped.contains(&text) {
                        entry.stopped.push(text);
                    }
                }
            }
        }
        s.descriptors = s.tx_descriptors + s.rx_descriptors;
        s.count_unexpected();
        s
    }

    /// Marks the faults `expect_fault` statements matched as expected, as
    /// far as the raises they claimed go (key: engine, direction, queue,
    /// cause, action; and the raises claimed), and recounts
    /// [`Summary::unexpected_faults`].
    pub fn claim_faults(&mut self, claimed: &[(FaultKey, u64)]) {
        for f in &mut self.faults {
            let t = &f.tally;
            let raises = claimed
                .iter()
                .filter(|((e, d, q, c, a), _)| {
                    *e == f.engine
                        && *d == t.dir
                        && *q == t.queue
                        && *c == t.cause
                        && *a == t.action
                })
                .map(|(_, n)| *n)
                .max()
                .unwrap_or(0);
            f.expected = raises > 0 && raises >= t.count;
            f.claimed = (raises > 0 && !f.expected).then_some(raises);
        }
        self.count_unexpected();
    }

    /// Words and calls the firmware refused, all cores.
    pub fn refusals(&self) -> usize {
        self.firmware.values().map(|c| c.refused.len()).sum()
    }

    /// Refusals no `expect_refusal` claimed: what `--fail-on-fault` fails
    /// on, with their cycles.
    pub fn unexpected_refusals(&self) -> impl Iterator<Item = &q7::Refusal> {
        self.firmware
            .values()
            .flat_map(|c| &c.refused)
            .filter(|r| !r.expected)
            .map(|r| &r.refusal)
    }

    /// Marks the refusals `expect_refusal` statements matched as expected
    /// (core, index among the core's refusals).
    pub fn claim_refusals(&mut self, claimed: &[(u8, usize)]) {
        for &(core, i) in claimed {
            if let Some(r) = self
                .firmware
                .get_mut(&format!("tpb{core}"))
                .and_then(|c| c.refused.get_mut(i))
            {
                r.expected = true;
            }
        }
    }

    /// What `run --fail-on-fault` fails on (docs/user-guide.md §11 for the
    /// timing-only split), so the CLI and `neuron_sim.run_trace` agree.
    pub fn fail_on_fault(&self) -> FailOnFault {
        // Timing-only: faults first raised once the run acted on bytes no
        // copy moved may not happen with payload; they are listed, not
        // counted. So are refusals from then on (a refused word moved
        // nothing, docs/firmware.md §Refusals).
        let stale = self.stale_control.as_ref().map(|c| c.cycle);
        let (faults, faults_after_stale) = match stale {
            Some(at) => self.faults.iter().fold((0, 0), |(before, after), f| {
                if f.tally.first_cycle < at {
                    (before + f.unexpected_raises(), after)
                } else {
                    (before, after + f.unexpected_raises())
                }
            }),
            None => (self.unexpected_faults, 0),
        };
        let refusals = self
            .unexpected_refusals()
            .filter(|r| stale.is_none_or(|at| r.at < at))
            .count();
        FailOnFault {
            faults,
            faults_after_stale,
            refusals,
        }
    }

    fn count_unexpected(&mut self) {
        self.unexpected_faults = self
            .faults
            .iter()
            .map(FaultSummary::unexpected_raises)
            .sum();
    }
}

/// What `--fail-on-fault` counts ([`Summary::fail_on_fault`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailOnFault {
    /// Unexpected faults (unmasked, no `expect_fault` claimed them).
    pub faults: u64,
    /// Timing-only: unexpected faults first raised after the run acted on
    /// bytes no copy moved; not counted.
    pub faults_after_stale: u64,
    /// Firmware refusals no `expect_refusal` claimed.
    pub refusals: usize,
}

impl FailOnFault {
    /// The line `run --fail-on-fault` prints about the faults it does not
    /// count (timing-only), if any; a run that failed otherwise gets none.
    pub fn uncounted_note(&self, code: u8) -> Option<String> {
        (code == 0 && self.faults_after_stale > 0).then(|| {
            format!(
                "--fail-on-fault: {} unexpected fault(s) first raised after the run acted on bytes no copy moved (timing-only) are not counted: run with payload to check them",
                self.faults_after_stale
            )
        })
    }

    /// The exit code `run --fail-on-fault` turns `code` into, with the line
    /// saying why when it fails a run that passed.
    pub fn verdict(&self, code: u8) -> (u8, Option<String>) {
        if code != 0 {
            (code, None)
        } else if self.faults > 0 {
            (
                1,
                Some(format!(
                    "--fail-on-fault: {} unexpected fault(s) (listed under `faults:`; claim the intended ones with expect_fault)",
                    self.faults
                )),
            )
        } else if self.refusals > 0 {
            (
                1,
                Some(format!(
                    "--fail-on-fault: {} word(s) or call(s) refused by the firmware (the `REFUSED` lines of the summary; claim the intended ones with expect_refusal)",
                    self.refusals
                )),
            )
        } else {
            (0, None)
        }
    }
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RunReport {
    /// Trace file name as given.
    pub trace: String,
    /// Statements executed.
    pub statements: usize,
    /// Expectations that held.
    pub expectations_passed: usize,
    /// Expectations that failed.
    pub expectations_failed: usize,
    /// Expectations skipped: in timing-only mode, checks of bytes no DMA
    /// moved (neither passed nor failed).
    pub expectations_skipped: usize,
    /// Totals after the run (flattened into the report's JSON: `cycles`,
    /// `sim_ns`, `bytes`, `descriptors`, `queues`, …).
    #[serde(flatten)]
    pub summary: Summary,
    /// Per-statement records.
    pub steps: Vec<StepRecord>,
    /// Failed expectations, `file:line:column: message`.
    pub failures: Vec<ParseError>,
    /// Bad input and faults met while running.
    pub errors: Vec<ParseError>,
    /// Statements that will not do what they say (a 64 KiB descriptor the
    /// engine reads as 0 bytes), `file:line:column: message`.
    pub warnings: Vec<ParseError>,
}

impl RunReport {
    /// 0 all expectations held, 1 one failed, 2 bad input (docs/references/design.md §6).
    pub fn exit_code(&self) -> u8 {
        if !self.errors.is_empty() {
            2
        } else if !self.failures.is_empty() {
            1
        } else {
            0
        }
    }

    /// Human-readable run output.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            out.push_str(&step_line(&self.trace, s));
            for e in &s.events {
                out.push_str(&event_line(e));
            }
        }
        out.push_str(&self.tail_text());
        out
    }

    /// The text after the statement lines: failures, errors, the summary.
    pub fn tail_text(&self) -> String {
        self.tail_text_with(true)
    }

    /// [`RunReport::tail_text`], with or without a line per queue (`run
    /// -q` leaves them out: a chip's 128 queues are 13 KB).
    pub fn tail_text_with(&self, per_queue: bool) -> String {
        let mut out = String::new();
        // As for errors, the step line showed a multi-line message in full.
        for f in &self.failures {
            let text = f.to_string();
            let mut lines = text.lines();
            out.push_str(&format!(
                "expectation failed: {}{}\n",
                lines.next().unwrap_or(""),
                if lines.next().is_some() { " (…)" } else { "" }
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        // The step line already showed a multi-line message in full.
        for e in &self.errors {
            let text = e.to_string();
            out.push_str(&format!("error: {}\n", text.lines().next().unwrap_or("")));
        }
        let sm = &self.summary;
        if sm.packets > 0 || sm.cycles > 0 {
            out.push_str(&format!(
                "simulated {} cycles ({:.1} ns): {} bytes, {} packets, {} descriptors\n",
                sm.cycles, sm.sim_ns, sm.bytes, sm.packets, sm.descriptors
            ));
            for (name, q) in sm.queues.iter().filter(|_| per_queue) {
                out.push_str(&format!(
                    "  {name}: {} packets, {} bytes, {} TX + {} RX descriptors, cycles {}..{}, {} GB/s\n",
                    q.packets,
                    q.bytes,
                    q.tx_descriptors,
                    q.rx_descriptors,
                    q.first_cycle.unwrap_or(0),
                    q.last_cycle.unwrap_or(0),
                    q.bandwidth_gbps
                ));
                if q.faults > 0 {
                    // Appended to the line just written.
                    out.pop();
                    out.push_str(&format!(
                        ", {} fault{}{}{}\n",
                        q.faults,
                        if q.faults == 1 { "" } else { "s" },
                        if q.stopped.is_empty() { "" } else { ", " },
                        q.stopped.join(", ")
                    ));
                }
            }
        }
        if sm.fault_count > 0 {
            out.push_str(&format!(
                "faults: {} raised, {} unexpected (unmasked and not claimed by expect_fault)\n",
                sm.fault_count, sm.unexpected_faults
            ));
            for f in &sm.faults {
                let t = &f.tally;
                let at = match t.queue {
                    Some(q) => format!("eng{}.{}.q{q}", f.engine, t.dir.name()),
                    None => format!("eng{}.{}", f.engine, t.dir.name()),
                };
                out.push_str(&format!(
                    "  fault {at} {} ({}) x{}, first at cycle {}{}: {}\n",
                    t.cause,
                    t.action,
                    t.count,
                    t.first_cycle,
                    match (f.expected, f.claimed) {
                        (true, _) => ", expected".to_string(),
                        (false, Some(n)) => format!(", {n} expected"),
                        (false, None) => String::new(),
                    },
                    t.detail
                ));
            }
        }
        if let Some(c) = &sm.stale_control {
            out.push_str(&format!(
                "timing-only: from cycle {} the run acted on bytes no copy moved ({} read {}{}): it may differ from the run with payload, and later checks are skipped\n",
                c.cycle,
                c.reader,
                c.addr,
                if c.count > 1 {
                    format!("; {} such reads", c.count)
                } else {
                    String::new()
                }
            ));
        }
        if !sm.unchecked.is_empty() {
            let n: u64 = sm.unchecked.iter().map(|u| u.tally.count).sum();
            out.push_str(&format!(
                "unchecked: {n} hardware check{} not made (timing-only: bytes not moved); {} carried on as if {} passed\n",
                if n == 1 { "" } else { "s" },
                if sm.unchecked.len() == 1 { "the engine" } else { "the engines" },
                if n == 1 { "it" } else { "they" }
            ));
            for u in &sm.unchecked {
                let t = &u.tally;
                out.push_str(&format!(
                    "  unchecked eng{}.m2s.q{} {} x{}, first at cycle {}: {}\n",
                    u.engine, t.queue, t.check, t.count, t.first_cycle, t.detail
                ));
            }
        }
        for (core, c) in &sm.firmware {
            for (kind, k) in &c.kinds {
                out.push_str(&format!(
                    "  {core} firmware {kind}: {} issued, {} rejected, {} descriptors, {} bytes\n",
                    k.issued, k.rejected, k.descriptors, k.bytes
                ));
            }
            for RefusalSummary {
                refusal: r,
                expected,
            } in &c.refused
            {
                out.push_str(&format!(
                    "  {core} firmware REFUSED {core}#{} {} ({}) at cycle {}{}: {}\n",
                    r.inst.seq,
                    r.kind,
                    r.inst.source,
                    r.at,
                    if *expected { ", expected" } else { "" },
                    r.reason
                ));
            }
            if c.unrung_descriptors > 0 {
                out.push_str(&format!(
                    "  {core} firmware: {} descriptors RDMA_DESC_GEN wrote were never rung (no RDMA_DESC_START followed): they moved nothing\n",
                    c.unrung_descriptors
                ));
            }
            if c.queued > 0 || c.in_flight > 0 {
                out.push_str(&format!(
                    "  {core} firmware: {} words still queued, {} in flight\n",
                    c.queued, c.in_flight
                ));
            }
        }
        if let Some(g) = &sm.deadlock {
            out.push_str(&format!(
                "  deadlock at the end of the trace (cycle {}): firmware work nothing can end\n",
                g.cycle
            ));
            for line in g.to_text().lines().skip(1) {
                out.push_str(&format!("  {}\n", line.trim_start()));
            }
        }
        if let Some(st) = &sm.stall {
            out.push_str(&format!(
                "  stalled since cycle {}: the firmware polls for completions no engine will make\n",
                st.cycle
            ));
            for w in &st.waits {
                out.push_str(&format!("  stall: {}\n", w.describe(false)));
            }
        }
        out.push_str(&format!(
            "{} statements, {} expectations passed, {} failed, {}{} errors{}{}\n",
            self.statements,
            self.expectations_passed,
            self.expectations_failed,
            if self.expectations_skipped > 0 {
                format!(
                    "{} skipped (timing-only: bytes not moved), ",
                    self.expectations_skipped
                )
            } else {
                String::new()
            },
            self.errors.len(),
            if sm.fault_count > 0 {
                format!(
                    ", {} faults ({} unexpected)",
                    sm.fault_count, sm.unexpected_faults
                )
            } else {
                String::new()
            },
            match sm.refusals() {
                0 => String::new(),
                n => format!(
                    ", {n} refused by the firmware ({} unexpected)",
                    sm.unexpected_refusals().count()
                ),
            }
        ));
        out
    }
}

/// A statement's line of the run output (`t.trace:12: FAILED …`), with
/// its newline.
pub fn step_line(trace: &str, s: &StepRecord) -> String {
    let mark = s.status.mark();
    if s.line == 0 {
        // A statement no line holds (a bare instruction stream's).
        return format!("{trace}: {mark}{}\n", s.text);
    }
    format!("{trace}:{}: {mark}{}\n", s.line, s.text)
}

/// An event's line of the run output (indented by four), with its newline.
pub fn event_line(e: &DeviceEvent) -> String {
    format!("    {}\n", event_text(e))
}

/// One device event as a line of text.
pub fn event_text(e: &DeviceEvent) -> String {
    match e {
        DeviceEvent::Doorbell {
            region,
            register,
            increment,
            ..
        } => format!("doorbell {region}.{register} +{increment}"),
        DeviceEvent::Pulse {
            region,
            register,
            bits,
            ..
        } => format!("pulse {region}.{register} bits {bits}"),
        DeviceEvent::Semaphore {
            region,
            index,
            old,
            new,
            ..
        } => format!("semaphore {region}[{index}] {old} -> {new}"),
        DeviceEvent::Engine(e) => engine_event_text(e),
        DeviceEvent::Firmware(e) => fw_event_text(e),
        DeviceEvent::IgnoredWrite {
            region,
            register,
            written,
            ignored,
            read_only,
            ..
        } => {
            if *read_only {
                format!("ignored write of {written} to read-only {region}.{register}")
            } else {
                format!(
                    "write of {written} to {region}.{register}: bits {ignored} are read-only or reserved"
                )
            }
        }
    }
}

/// One firmware event as a line of text.
pub fn fw_event_text(e: &q7::FwEvent) -> String {
    use q7::FwEventKind as K;
    let head = format!(
        "{} tpb{} inst#{} ({})",
        e.at, e.tpb, e.inst.seq, e.inst.source
    );
    match &e.kind {
        K::Waiting {
            sem,
            mode,
            threshold,
            value,
        } => format!("{head} waits: {mode} sem[{sem}] = {value}, needs {threshold}"),
        K::Released {
            sem,
            mode,
            threshold,
            value,
            start_cycle,
        } => format!(
            "{head} released: {mode} sem[{sem}] = {value}, needs {threshold}; starts at cycle {start_cycle} (semaphore wake)"
        ),
        K::Generating {
            kind,
            engines,
            descriptors,
            bytes,
            cycles,
        } => format!(
            "{head} {kind}: {descriptors} descriptors on {engines} engines, {bytes} bytes, generation {cycles} cycles"
        ),
        K::MicroOp { text } | K::Log { text } => format!("{head} {text}"),
        K::Generated {
            engine,
            queue,
            count,
            bytes,
        } => format!(
            "{head} generated eng{engine}.q{queue} {count} descriptors per direction, {bytes} bytes (waiting for RDMA_DESC_START)"
        ),
        K::RingsInit {
            engine,
            queue,
            ring_descs,
            m2s_ring,
            s2m_ring,
        } => format!(
            "{head} DGE context init eng{engine}.q{queue}: {ring_descs} descriptors, tx.base {m2s_ring}, rx.base {s2m_ring}"
        ),
        K::Doorbell {
            engine,
            queue,
            m2s_first,
            s2m_first,
            count,
            m2s_count,
            bytes,
        } => {
            if count == m2s_count {
                format!(
                    "{head} doorbell eng{engine}.q{queue} +{count} (m2s[{m2s_first}..], s2m[{s2m_first}..]) {bytes} bytes"
                )
            } else {
                format!(
                    "{head} doorbell eng{engine}.q{queue} s2m +{count}, m2s +{m2s_count} (m2s[{m2s_first}..], s2m[{s2m_first}..]) {bytes} bytes"
                )
            }
        }
        K::OutOfBounds {
            side,
            addr,
            len_bytes,
            reg,
            limit,
            notify,
        } => format!(
            "{head} OOB {side} {addr} len {len_bytes} > REG[{reg}] = {limit}{}",
            if *notify {
                " (notified)"
            } else {
                " (notification disabled)"
            }
        ),
        K::IndexOutOfBounds {
            leg,
            position,
            index,
            bound,
            error,
        } => format!(
            "{head} index OOB {leg}[{position}] = {index} >= {bound}: element skipped{}",
            if *error { ", error notification" } else { "" }
        ),
        K::DuplicateScatter {
            first,
            later,
            index,
        } => format!(
            "{head} scatter race: dst_idx[{first}] and dst_idx[{later}] both = {index} without non_unique_dst_idx (the later write in simulated time wins)"
        ),
        K::MethodSet { method, outcome } => {
            format!("{head} neuron_set_memcpy_method({method}): {outcome}")
        }
        K::InlineInit {
            engine,
            queue,
            rings,
        } => format!("{head} init_dma_queue: eng{engine}.q{queue} armed; {rings}"),
        K::InlineChunk {
            engine,
            queue,
            slot,
            tag,
            chunk_bytes,
            word0,
            anomaly,
        } => format!(
            "{head} dma_data_transfer chunk {chunk_bytes} bytes in eng{engine}.q{queue} slot {slot}, tag {tag}, TX word0 {word0}; both doorbells rung; word0 anomaly: {anomaly}"
        ),
        K::MemcpyDone { method, bytes } => {
            format!("{head} neuron_memcpy done: {bytes} bytes by {method}")
        }
        K::Icache { text } => format!("{head} iDMA {text}"),
        K::MailboxGate {
            priority_class,
            mailboxes,
            engine_mask,
        } => format!(
            "{head} DGE mailbox gate: priority class {priority_class} above {mailboxes}: engines {engine_mask}"
        ),
        K::Rejected { reason } => format!("{head} REJECTED: {reason}"),
        K::Done { update } => match update {
            Some(u) => format!("{head} done; {u}"),
            None => format!("{head} done"),
        },
        K::ReadDone { update } => format!("{head} all data read; {update}"),
    }
}

/// One engine event as a line of text.
pub fn engine_event_text(e: &EngineEvent) -> String {
    let at = format!("@{} eng{}", e.cycle, e.engine);
    match &e.kind {
        EventKind::Doorbell {
            dir,
            queue,
            increment,
            tail,
            tail_ring_id,
        } => format!(
            "{at} {}.q{queue} doorbell +{increment}: tail {tail} ring_id {tail_ring_id}",
            dir.name()
        ),
        EventKind::Prefetch {
            dir,
            queue,
            first_index,
            count,
            head,
            head_ring_id,
        } => format!(
            "{at} {}.q{queue} prefetch [{first_index}..+{count}]: head {head} ring_id {head_ring_id}",
            dir.name()
        ),
        EventKind::PacketStart {
            queue,
            tx_descs,
            rx_descs,
            bytes,
            done_at,
            ..
        } => format!(
            "{at} q{queue} packet start: {bytes} bytes, {tx_descs} TX / {rx_descs} RX descriptors, lands @{done_at}"
        ),
        EventKind::PacketDone {
            queue,
            bytes,
            checksum,
        } => match checksum {
            Some(c) => format!("{at} q{queue} packet done: {bytes} bytes written, checksum {c}"),
            None => format!("{at} q{queue} packet done: {bytes} bytes written"),
        },
        EventKind::Fault {
            dir,
            queue,
            cause,
            detail,
            action,
        } => format!(
            "{at} {}{} FAULT {cause} ({action}): {detail}",
            dir.name(),
            queue.map(|q| format!(".q{q}")).unwrap_or_default()
        ),
        EventKind::State { dir, state } => format!("{at} {} state {state}", dir.name()),
        EventKind::QueueReset { dir, queue, bits } => {
            format!(
                "{at} {}.q{queue} Q_SW_CTRL reset bits {bits:#x}",
                dir.name()
            )
        }
        EventKind::RingWarning { dir, queue, detail } => {
            format!("{at} {}.q{queue} warning: {detail}", dir.name())
        }
    }
}
