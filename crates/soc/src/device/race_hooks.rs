//! The race detector's hooks in the device (docs/races.md): each is
//! called only when detection is on (`fabric.race` is `Some`).

use super::waitgraph::HostWait;
use super::*;
use crate::race::{Detector, RaceReport, RaceSummary, UninitFill, word_label};

/// The detector as the fabric holds it: `None` when detection is off.
pub(super) type RaceSlot = Option<Box<std::cell::RefCell<Detector>>>;

/// The CPU agent of a bus master: `Some(None)` the host (trace, host
/// runtime, driver), `Some(Some(t))` core `tpbN`; `None` an engine's
/// posted register write.
fn cpu_of(m: Master) -> Option<Option<u8>> {
    match m {
        Master::Host | Master::Trace | Master::Driver => Some(None),
        Master::Firmware(t) => Some(Some(t)),
        Master::Engine(_) => None,
    }
}

impl Device {
    /// Turns the race detector on (docs/races.md): from now on every data
    /// access of the engines and the host is checked against
    /// happens-before. Off by default; turn it on before the run.
    pub fn detect_races(&mut self) {
        if self.fabric.race.is_none() {
            self.fabric.race = Some(Box::new(std::cell::RefCell::new(Detector::new())));
        }
    }

    /// Uninitialised memory (docs/races.md §Uninitialised memory): with
    /// `check`, packet reads of bytes nothing wrote are reported; with
    /// `fill`, those bytes read as `fill` (a byte, or the NaN of the
    /// element type the reader uses). Turns the detector on (it knows which
    /// bytes were written).
    pub fn set_uninit(&mut self, fill: Option<UninitFill>, check: bool) {
        self.detect_races();
        if let Some(d) = self.fabric.race.as_deref() {
            let mut d = d.borrow_mut();
            d.uninit_fill = fill;
            d.check_uninit = check;
        }
    }

    /// Schedule perturbation (docs/races.md §Schedule perturbation): with
    /// a seed, every packet's latency grows by a reproducible pseudo-random
    /// 0 ..= [`udma::JITTER_MAX_CYCLES`] cycles, and the arbitration ties
    /// are drawn (which of several ready queues of an engine starts, which
    /// of several engines waking at one cycle goes first), which reorders
    /// what the hardware leaves unordered (packets of different queues and
    /// engines); a race-free trace gives the same memory under every seed.
    /// `None`: the model's schedule, cycle for cycle.
    pub fn set_schedule_seed(&mut self, seed: Option<u64>) {
        self.schedule_seed = seed;
        // Engines waking at one cycle (two reaching one HBM stack's port
        // together) go in an order drawn from the seed and the cycle.
        self.wake.set_tie_seed(seed);
        for e in self.engines.iter_mut().flatten() {
            e.set_schedule_seed(seed);
        }
    }

    /// Whether the race detector is on.
    pub fn detects_races(&self) -> bool {
        self.fabric.race.is_some()
    }

    /// The races found so far (`None` when detection is off).
    pub fn race_summary(&self) -> Option<RaceSummary> {
        let d = self.fabric.race.as_deref()?;
        let name = |addr: u64| crate::describe::symbolic(self, addr);
        let mut s = d.borrow().summary(&name);
        if let Some(g) = self.wait_graph("end of run, work left", None) {
            s.wait_graphs.push(g);
        }
        Some(s)
    }

    /// Distinct races the detector has found so far (0 when detection is
    /// off): a debugger's `break race` stops when it grows.
    pub fn races_found(&self) -> usize {
        self.fabric
            .race
            .as_deref()
            .map_or(0, |d| d.borrow().races_found())
    }

    /// The race found `n`-th (from 0, in the order found), as the race
    /// section reports it (docs/races.md §The report).
    pub fn race_found(&self, n: usize) -> Option<RaceReport> {
        let d = self.fabric.race.as_deref()?;
        let name = |addr: u64| crate::describe::symbolic(self, addr);
        d.borrow().race(n, &name)
    }

    /// A `wait` failed: keeps the wait-for graph of that moment.
    pub fn race_failed_wait(&mut self, wait: &HostWait) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        // The host statement's own label names its line.
        let wait = HostWait {
            label: d.borrow().host_label(),
            ..wait.clone()
        };
        let when = format!("{} failed", wait.label);
        if let (Some(g), Some(d)) = (
            self.wait_graph(&when, Some(&wait)),
            self.fabric.race.as_deref(),
        ) {
            d.borrow_mut().graphs.push(g);
        }
    }

    /// The host statement that runs next (names the host's accesses and
    /// doorbells in race reports).
    pub fn race_statement(&mut self, label: &str) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().set_host_label(label);
        }
    }

    /// The host saw the device idle with nothing pending (a `run` that
    /// ended): everything done so far happens before the host's next step.
    pub fn race_quiesce(&mut self) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().quiesce();
        }
    }

    /// A host `wait` on `addr` succeeded: the host saw the value there (a
    /// semaphore, a completion register, a memory flag).
    pub fn race_waited(&mut self, addr: u64) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        match self.fabric.reg_target(addr) {
            Ok(Some(t)) => self.race_reg_read(None, t),
            Ok(None) => d.borrow_mut().poll(None, addr, 4),
            Err(_) => {}
        }
    }

    /// A register read by a CPU agent: a semaphore's value or a queue's
    /// completion registers are what it synchronises on.
    pub(super) fn race_reg_read(&self, core: Option<u8>, t: RegTarget) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        if let Some(r) = self.fabric.engine_block(t.region) {
            if let UnitBlock::M2sQ(q) | UnitBlock::S2mQ(q) = r.block {
                d.borrow_mut().completion_poll(core, r.engine, q);
            }
            return;
        }
        if self.fabric.sem_cores.contains_key(&t.region)
            && let Some(index) = self.sem_index(t)
        {
            d.borrow_mut().sem_read(core, t.region, index);
        }
    }

    fn sem_index(&self, t: RegTarget) -> Option<u32> {
        let block = self.fabric.block_of(t.region)?;
        block.element_at(t.offset).ok().and_then(|e| e.index())
    }

    /// `read32` hook: the master's register read or memory read.
    pub(super) fn race_read32(&mut self, addr: u64, t: Option<RegTarget>) {
        let Some(core) = cpu_of(self.fabric.master) else {
            return;
        };
        match t {
            Some(t) => self.race_reg_read(core, t),
            None => self.race_cpu_access(addr, 4, false),
        }
    }

    /// A doorbell or semaphore write by the master (before it applies).
    pub(super) fn race_write32(&mut self, t: RegTarget, value: u32) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        let Some(r) = self.fabric.engine_block(t.region) else {
            return;
        };
        if let UnitBlock::M2sQ(q) = r.block
            && !r.broadcast
            && t.offset == self.unit_maps.offsets.m2s_q.drtp_inc
        {
            let n = value & 0x00ff_ffff;
            match cpu_of(self.fabric.master) {
                Some(core) => d.borrow_mut().doorbell(core, r.engine, q, n),
                None => {
                    if let Master::Engine(from) = self.fabric.master {
                        d.borrow_mut().engine_doorbell(from, r.engine, q, n);
                    }
                }
            }
        }
    }

    /// A CPU read or write of memory bytes. The host's writes (trace
    /// set-up, the runtime) are data; the firmware's stores are its own
    /// descriptors and rings. A CPU read is a poll (a completion marker, a
    /// ring entry): it sees what completed packets wrote there, nothing
    /// more; the trace's reads (`expect`, `read32 ==`, dumps) are the test
    /// harness looking, not the program (docs/races.md).
    pub(super) fn race_cpu_access(&self, addr: u64, len: u64, write: bool) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        match (write, self.fabric.master) {
            (_, Master::Engine(_)) | (false, Master::Trace) => {}
            (true, Master::Firmware(t)) => {
                let mut d = d.borrow_mut();
                if d.check_uninit || d.uninit_fill.is_some() {
                    d.setup_write(Some(t), addr, len, self.now.0);
                }
            }
            (true, _) => d.borrow_mut().access(None, addr, len, true, self.now.0),
            (false, m) => d.borrow_mut().poll(cpu_of(m).flatten(), addr, len),
        }
    }

    /// The host handed core `tpb` a word or call.
    pub(super) fn race_submit(&mut self, tpb: u8) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().submit(tpb);
        }
    }

    /// Core `tpb` fires word `tag` next.
    pub(crate) fn race_word(&mut self, tpb: u8, tag: &InstTag) {
        let sem = self.pending_gate_sem(tpb, tag.seq);
        if let Some(d) = self.fabric.race.as_deref() {
            let label = word_label(tpb, tag.seq, &tag.source);
            let mut d = d.borrow_mut();
            d.set_core_label(tpb, &label);
            d.word_issued(tpb, tag.seq, &label, sem, self.now.0);
        }
    }

    /// The semaphore (EVT_SEM region, index) word `seq` of core `tpb`
    /// waited on, if its gate held it.
    fn pending_gate_sem(&self, tpb: u8, seq: u64) -> Option<(RegionId, u32)> {
        let d = self.fabric.race.as_deref()?.borrow();
        let (_, on) = d.gate_wait_of(tpb, seq)?;
        let idx = on
            .split_once(".sem[")?
            .1
            .split_once(']')?
            .0
            .parse::<u32>()
            .ok()?;
        let region = self
            .fabric
            .sem_cores
            .iter()
            .find(|&(_, &c)| c == tpb)
            .map(|(&r, _)| r)?;
        Some((region, idx))
    }

    /// After core `tpb`'s firmware ran: note what its words wait for (the
    /// stall summary, docs/races.md §Stalls in a run that completes) — the
    /// front word's EVENTS gate or ring room, and the words in flight whose
    /// EVENTS update waits for their completions (begun when first seen,
    /// over when the core no longer lists them).
    pub(super) fn race_core_waits(&self, tpb: u8, core: &Q7Core) {
        let Some(d) = self.fabric.race.as_deref() else {
            return;
        };
        let mut d = d.borrow_mut();
        let now = self.now.0;
        if let Some((tag, sem, mode)) = core.gate_holding() {
            let label = format!("tpb{tpb}.sem[{sem}] {mode}");
            d.gate_waiting(tpb, tag.seq, label, now);
        }
        let room = core
            .room_holding()
            .map(|(tag, e, q)| (tag.seq, word_label(tpb, tag.seq, &tag.source), e, q));
        d.room_waiting(tpb, room, now);
        for tag in core.updates_waiting() {
            if !d.is_update_waiting(tpb, tag.seq) {
                let label = word_label(tpb, tag.seq, &tag.source);
                d.update_waiting(tpb, tag.seq, label, core.polled_queues(tag.seq), now);
            }
        }
        let still = |seq: u64| core.updates_waiting().any(|t| t.seq == seq);
        d.updates_done(tpb, &still, now);
    }

    /// Core `tpb`'s next doorbells move whole elements of dtype `code` (a
    /// transpose) or bytes (`None`): what `--uninit nan` fills their
    /// packets' never-written reads with when the engine reads untyped
    /// bytes (docs/races.md §Uninitialised memory).
    pub(crate) fn race_elements(&mut self, tpb: u8, code: Option<u8>) {
        if let Some(d) = self.fabric.race.as_deref() {
            let nan = code.and_then(udma::datapath::nan_of_code);
            d.borrow_mut().set_core_elements(tpb, nan);
        }
    }

    /// Core `tpb`'s word `tag` scatters two positions to one destination.
    pub(crate) fn race_scatter(
        &mut self,
        tpb: u8,
        tag: &InstTag,
        first: u32,
        later: u32,
        index: u32,
    ) {
        if let Some(d) = self.fabric.race.as_deref() {
            d.borrow_mut().scatter_race(
                tpb,
                &word_label(tpb, tag.seq, &tag.source),
                first,
                later,
                index,
                self.now.0,
            );
        }
    }
}

impl Fabric {
    /// A semaphore write by `master` (or the packet in scope).
    pub(super) fn race_sem_write(&self, region: RegionId, index: u32) {
        if let Some(d) = self.race.as_deref() {
            let core = cpu_of(self.master).flatten();
            d.borrow_mut().sem_write(core, region, index);
        }
    }
}

impl DmaBus<'_> {
    /// `--uninit`: what never-written memory reads as — one element's
    /// bytes, repeated from `addr` on (the NaN of the element type the
    /// packet reads, [`sim_core::Bus::read_as`], or one byte) — and the
    /// parts of `[addr, addr + len)` nothing wrote.
    pub(super) fn uninit_parts(
        &self,
        addr: u64,
        len: u64,
    ) -> Option<(sim_core::ElementNan, Vec<(u64, u64)>)> {
        let d = self.fabric.race.as_deref()?.borrow();
        let fill = d.uninit_fill?;
        if !d.in_packet() {
            return None;
        }
        let parts = d.unwritten(addr, len);
        if parts.is_empty() {
            return None;
        }
        let element = match (fill, d.read_as.or(d.packet_elements())) {
            (UninitFill::Nan, Some(nan)) => nan,
            (f, _) => sim_core::ElementNan {
                bytes: [f.byte(); 4],
                len: 1,
            },
        };
        Some((element, parts))
    }

    /// A data access by the packet in scope.
    pub(super) fn race_access(&self, addr: u64, len: u64, write: bool) {
        if let Some(d) = self.fabric.race.as_deref() {
            let mut d = d.borrow_mut();
            if d.in_packet() {
                d.access(None, addr, len, write, self.now.0);
            }
        }
    }
}
