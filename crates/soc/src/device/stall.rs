//! Stall detection (docs/firmware.md §Stalls): a device whose DMA engines
//! have nothing to do and whose firmware only polls for completions that
//! cannot come would run for ever. The run loop sees it, stops (or lets the
//! time up to its limit pass without running the polls one by one) and
//! says who waits on what.

use serde::Serialize;
use sim_core::Cycle;
use udma::{Dir, DirState, UnitBlock};

use super::Device;

/// Why a stalled device cannot go on: every firmware poll that waits, with
/// the state of the engine it waits on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StallReport {
    /// The cycle from which nothing changes.
    pub cycle: u64,
    /// One entry per engine queue a word or call waits on.
    pub waits: Vec<StalledWait>,
}

/// One firmware wait of a [`StallReport`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct StalledWait {
    /// The core, `tpbN`.
    pub core: String,
    /// The word's place in the core's queue (`tpb0#3`).
    pub inst: String,
    /// Where the word came from (`line 12`).
    pub source: String,
    /// Its kind (`DIRECT2D`, `neuron_memcpy`, …).
    pub kind: String,
    /// The queue polled, `engN.qQ`.
    pub queue: String,
    /// What would end the wait.
    pub waiting_for: String,
    /// The engine's M2S and S2M states (`m2s abort, s2m normal`).
    pub engine_state: String,
    /// Error cause bits set on the engine (`SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE`).
    pub faults: Vec<String>,
}

impl StallReport {
    /// The report as text lines (no trailing newline on the last).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "the device stalled at cycle {}: no DMA engine has work and the firmware polls for completions that cannot come",
            self.cycle
        );
        for w in &self.waits {
            out.push_str(&format!("\n  {}", w.describe(true)));
        }
        out
    }
}

impl StalledWait {
    /// One line: the word, the queue it polls (with what would end the
    /// wait when `detail`), the engine's state and faults.
    pub fn describe(&self, detail: bool) -> String {
        let wait = if detail {
            format!(" for {}", self.waiting_for)
        } else {
            String::new()
        };
        let faults = if self.faults.is_empty() {
            "; no error cause bit set".to_string()
        } else {
            format!("; faults: {}", self.faults.join(", "))
        };
        format!(
            "{} {} ({}) waits on {}{wait}; engine {}{faults}",
            self.inst, self.kind, self.source, self.queue, self.engine_state
        )
    }
}

/// One engine queue of a parked core's need group: the completed-descriptor
/// counts (M2S, S2M) it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ParkNeed {
    engine: u16,
    queue: u8,
    m2s: Option<u64>,
    s2m: Option<u64>,
}

/// A set of engine ids below 256, a bit each (larger ids are not kept:
/// [`ParkGroup::has_engine`] looks for them in the needs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct EngineSet([u64; 4]);

impl EngineSet {
    fn insert(&mut self, id: u16) {
        if let Some(w) = self.0.get_mut(usize::from(id / 64)) {
            *w |= 1 << (id % 64);
        }
    }

    /// `Some(member)` for an id below 256, else `None`.
    fn contains(&self, id: u16) -> Option<bool> {
        self.0
            .get(usize::from(id / 64))
            .map(|w| w & (1 << (id % 64)) != 0)
    }
}

/// One need group of a parked core ([`ParkNeeds`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ParkGroup {
    needs: Vec<ParkNeed>,
    /// The engines of `needs`.
    engines: EngineSet,
    /// How many of `needs`, from the first, were seen met: completed
    /// counts only grow ([`udma::Engine::completed_descs`]), so a need
    /// once met stays met and is not looked at again.
    met_prefix: std::cell::Cell<usize>,
}

impl ParkGroup {
    /// A group of `needs`, none seen met yet.
    fn new(needs: Vec<ParkNeed>) -> Self {
        let mut engines = EngineSet::default();
        for n in &needs {
            engines.insert(n.engine);
        }
        ParkGroup {
            needs,
            engines,
            met_prefix: std::cell::Cell::new(0),
        }
    }

    /// Empties the group for reuse (its buffer kept): as [`ParkGroup::new`]
    /// of no needs.
    fn clear(&mut self) {
        self.needs.clear();
        self.engines = EngineSet::default();
        self.met_prefix.set(0);
    }

    /// Adds need `n`.
    fn push(&mut self, n: ParkNeed) {
        self.engines.insert(n.engine);
        self.needs.push(n);
    }

    /// Whether a need of the group is on engine `id`.
    fn has_engine(&self, id: u16) -> bool {
        self.engines
            .contains(id)
            .unwrap_or_else(|| self.needs.iter().any(|n| n.engine == id))
    }

    /// Whether every need is met, looking only past the known-met prefix.
    fn met(&self, device: &Device) -> bool {
        let mut k = self.met_prefix.get();
        while let Some(n) = self.needs.get(k) {
            if !device.park_need_met(n) {
                break;
            }
            k += 1;
        }
        self.met_prefix.set(k);
        k == self.needs.len()
    }
}

/// What a parked core waits for ([`q7::Q7Core::wake_needs`]), in absolute
/// completed-descriptor counts: groups, any one of which met could let a
/// poll change its state, and per engine queue the smallest count of
/// either direction any group needs (no completion short of both can meet
/// a group: a quick test before the groups), sorted by engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ParkNeeds {
    least: Vec<LeastNeed>,
    /// Engine `first_engine + k`'s entries of `least` are
    /// `least[least_starts[k]..least_starts[k + 1]]`.
    first_engine: u16,
    least_starts: Vec<u32>,
    groups: Vec<ParkGroup>,
    /// Empty: a buffer [`Device::park_needs_at`] gathers `least` in.
    scratch: Vec<ParkNeed>,
}

impl ParkNeeds {
    /// `least`, sorted by engine, with its per-engine index.
    #[cfg(test)]
    fn new(mut least: Vec<ParkNeed>, groups: Vec<ParkGroup>) -> Self {
        let mut needs = ParkNeeds {
            groups,
            ..ParkNeeds::default()
        };
        needs.set_least(&mut least);
        needs
    }

    /// Sets `least` to `from` sorted by engine (sorted in place), with its
    /// per-engine index, in the buffers already held.
    fn set_least(&mut self, from: &mut [ParkNeed]) {
        // By engine, keeping the order of each engine's queues.
        from.sort_by_key(|n| n.engine);
        let first_engine = from.first().map_or(0, |n| n.engine);
        let last = from.last().map_or(0, |n| n.engine);
        self.least_starts.clear();
        self.least_starts
            .reserve(usize::from(last - first_engine) + 2);
        let mut k = 0usize;
        for e in first_engine..=last {
            self.least_starts.push(k as u32);
            k += from
                .get(k..)
                .unwrap_or(&[])
                .iter()
                .take_while(|n| n.engine == e)
                .count();
        }
        self.least_starts.push(k as u32);
        let never = |c: Option<u64>| c.unwrap_or(u64::MAX);
        self.least.clear();
        self.least.extend(from.iter().map(|n| LeastNeed {
            queue: n.queue,
            m2s: never(n.m2s),
            s2m: never(n.s2m),
        }));
        self.first_engine = first_engine;
    }

    /// The `least` entries of engine `id`.
    fn least_of(&self, id: u16) -> &[LeastNeed] {
        let k = usize::from(id.wrapping_sub(self.first_engine));
        match (self.least_starts.get(k), self.least_starts.get(k + 1)) {
            (Some(&a), Some(&b)) => self.least.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// One engine queue's entry in the least counts of [`ParkNeeds`]: the
/// M2S and S2M completed-descriptor counts, `u64::MAX` for a direction no
/// group needs (a count no queue reaches: one per descriptor), so that
/// the test of a completion is two compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LeastNeed {
    queue: u8,
    m2s: u64,
    s2m: u64,
}

fn min_some(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The device through the firmware's eyes, without side effects (the
/// completion heads a stall report reads).
struct PeekBus<'a>(&'a Device);

impl q7::FwBus for PeekBus<'_> {
    fn read32(&mut self, addr: u64) -> Result<u32, String> {
        match self.0.reg_target(addr) {
            Ok(Some(t)) => self
                .0
                .peek_reg(t)
                .ok_or_else(|| format!("{addr:#x}: no register")),
            Ok(None) => {
                let mut b = [0u8; 4];
                self.0
                    .read_bytes(addr, &mut b)
                    .map(|()| u32::from_le_bytes(b))
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn write32(&mut self, _addr: u64, _value: u32) -> Result<(), String> {
        Err("a stall report does not write".into())
    }

    fn write_bytes(&mut self, _addr: u64, _data: &[u8]) -> Result<(), String> {
        Err("a stall report does not write".into())
    }

    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.0.read_bytes(addr, buf).map_err(|e| e.to_string())
    }

    fn partition_of(&self, addr: u64) -> Option<u16> {
        self.0
            .map()
            .decode(addr)
            .partition
            .and_then(|p| u16::try_from(p).ok())
    }
}

impl Device {
    /// Notes a change an agent could observe: counts it, and wakes every
    /// parked core at the first poll that, in the run order, comes after
    /// the event making the change ([`Device::cur_key`]).
    pub(super) fn touch(&mut self) {
        self.touch_cores(u32::MAX);
    }

    /// The cores (bit per TPB) whose firmware owns engine `id`.
    pub(super) fn engine_owners(&self, id: u16) -> u32 {
        self.engine_cores.get(usize::from(id)).copied().unwrap_or(0)
    }

    /// Notes a change only the cores in `cores` (bit per TPB) can see
    /// through their completion-head polls: counts it, and wakes those of
    /// them that are parked, and every parked core whose polls read memory,
    /// as [`Device::touch`] does. A core left parked would have read the
    /// same values.
    #[inline]
    pub(super) fn touch_cores(&mut self, cores: u32) {
        self.activity += 1;
        let wake = self.parked_mask & (cores | self.parked_on_memory);
        if wake != 0 {
            self.wake_parked(wake);
        }
    }

    /// Wakes the parked cores `wake` (bit per TPB) at the first poll that,
    /// in the run order, comes after the event making the change
    /// ([`Device::cur_key`]).
    fn wake_parked(&mut self, wake: u32) {
        let period = self.timing.q7_poll_cycles.max(1);
        let (t, class, id) = self.cur_key;
        let mut bits = wake;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let Some(p) = self.unpark(i) else {
                continue;
            };
            // Polls at cycle t run before the engines of cycle t and after
            // the cores with a lower index (Device::run_while).
            let after = |c: u64| c > t || (c == t && class == 0 && i > usize::from(id));
            let next = if after(p.0) {
                p.0
            } else {
                let k = (t - p.0) / period;
                let on = p.0.saturating_add(k.saturating_mul(period));
                if after(on) {
                    on
                } else {
                    on.saturating_add(period)
                }
            };
            if let Some(f) = self.fw_next.get_mut(i) {
                *f = Some(f.map_or(Cycle(next), |c| c.min(Cycle(next))));
            }
        }
        self.unparked = true;
    }

    /// Parks core `i` until its poll at `next` (`on_memory`: its polls read
    /// memory, [`q7::Q7Core::polls_memory`]).
    pub(super) fn park(&mut self, i: usize, next: Cycle, on_memory: bool) {
        let Some(slot) = self.parked.get_mut(i) else {
            return;
        };
        *slot = Some(next);
        let bit = 1u32 << (i % 32);
        self.parked_mask |= bit;
        if on_memory {
            self.parked_on_memory |= bit;
        } else {
            self.parked_on_memory &= !bit;
        }
    }

    /// Unparks core `i`: the cycle of the poll it was parked on, if it was.
    pub(super) fn unpark(&mut self, i: usize) -> Option<Cycle> {
        let p = self.parked.get_mut(i)?.take()?;
        let bit = 1u32 << (i % 32);
        self.parked_mask &= !bit;
        self.parked_on_memory &= !bit;
        Some(p)
    }

    /// A parked core's wake needs ([`q7::Q7Core::wake_needs`]) as absolute
    /// completed-descriptor counts of the engines now; `None` when an
    /// engine it waits on does not exist. Built in the buffers of `reuse`
    /// (needs no longer used), if any.
    pub(super) fn park_needs_at(
        &self,
        groups: &[Vec<q7::WakeNeed>],
        reuse: Option<ParkNeeds>,
    ) -> Option<ParkNeeds> {
        let mut out = reuse.unwrap_or_default();
        let mut least = std::mem::take(&mut out.scratch);
        least.clear();
        self.fill_park_needs(groups, &mut out, &mut least)?;
        least.clear();
        out.scratch = least;
        Some(out)
    }

    /// [`Device::park_needs_at`] into `out` (its buffers reused), with
    /// `least` (empty) to gather the least counts in.
    fn fill_park_needs(
        &self,
        groups: &[Vec<q7::WakeNeed>],
        out: &mut ParkNeeds,
        least: &mut Vec<ParkNeed>,
    ) -> Option<()> {
        out.groups.truncate(groups.len());
        for (k, needs) in groups.iter().enumerate() {
            if out.groups.len() == k {
                out.groups.push(ParkGroup::new(Vec::new()));
            }
            let g = out.groups.get_mut(k)?;
            g.clear();
            for w in needs {
                let e = self.engines.get(usize::from(w.engine))?.as_ref()?;
                let (m, s) = e.completed_descs(w.queue);
                g.push(ParkNeed {
                    engine: w.engine,
                    queue: w.queue,
                    m2s: w.m2s.map(|k| m.saturating_add(k)),
                    s2m: w.s2m.map(|k| s.saturating_add(k)),
                });
            }
        }
        for g in &out.groups {
            for (j, n) in g.needs.iter().enumerate() {
                // Groups list their queues in the same order: look at the
                // same place first.
                let at = match least.get(j) {
                    Some(l) if l.engine == n.engine && l.queue == n.queue => Some(j),
                    _ => least
                        .iter()
                        .position(|l| l.engine == n.engine && l.queue == n.queue),
                };
                match at.and_then(|i| least.get_mut(i)) {
                    Some(l) => {
                        l.m2s = min_some(l.m2s, n.m2s);
                        l.s2m = min_some(l.s2m, n.s2m);
                    }
                    None => least.push(*n),
                }
            }
        }
        out.set_least(least);
        Some(())
    }

    /// Whether engine queue `n` has made the completions it needs.
    pub(super) fn park_need_met(&self, n: &ParkNeed) -> bool {
        let Some(Some(engine)) = self.engines.get(usize::from(n.engine)) else {
            return true;
        };
        let (m, s) = engine.completed_descs(n.queue);
        n.m2s.is_none_or(|t| m >= t) && n.s2m.is_none_or(|t| s >= t)
    }

    /// Whether some group of `needs` is met.
    pub(super) fn park_needs_met(&self, needs: &ParkNeeds) -> bool {
        needs.groups.iter().any(|g| g.met(self))
    }

    /// Of `cores` (bit per TPB), the owners of engine `id` whose completion
    /// head just moved, those to wake: every core but a parked one none of
    /// whose need groups is now met with this engine's help (its polls until
    /// then would read heads that end no wait; cycles are unchanged,
    /// docs/firmware.md §Stalls).
    pub(super) fn completion_wakes(&self, id: u16, cores: u32) -> u32 {
        let parked = cores & self.parked_mask;
        if parked == 0 {
            return cores;
        }
        let Some(Some(engine)) = self.engines.get(usize::from(id)) else {
            return cores;
        };
        let mut out = cores;
        let mut bits = parked;
        while bits != 0 {
            let c = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let Some(Some(needs)) = self.park_needs.get(c) else {
                continue;
            };
            // Most completions fall short of every count this engine is
            // needed for; a group it is not in did not change.
            let could = needs.least_of(id).iter().any(|n| {
                let (m, s) = engine.completed_descs(n.queue);
                (m >= n.m2s) | (s >= n.s2m)
            });
            let met = could && needs.groups.iter().any(|g| g.has_engine(id) && g.met(self));
            if !met {
                out &= !(1 << c);
            }
        }
        out
    }

    /// Every event up to and including cycle `at` is behind: the clock
    /// moves there.
    pub(super) fn past(&mut self, at: Cycle) {
        self.now = self.now.max(at);
        self.fabric.now = self.now.0;
        self.cur_key = self.cur_key.max((at.0, 2, 0));
    }

    /// Core `tpb` has new work: it runs at the current cycle, parked or not.
    pub(super) fn wake_core_now(&mut self, tpb: u8) {
        let i = usize::from(tpb);
        self.unpark(i);
        if let Some(f) = self.fw_next.get_mut(i) {
            *f = Some(self.now);
        }
        if let Some(s) = self.fw_seen.get_mut(i) {
            *s = u64::MAX;
        }
    }

    /// True when nothing but polls for what cannot change is left to run:
    /// nothing is posted, no semaphore change waits to wake a core, and
    /// every core that will run again is parked, or (while recording, when
    /// cores poll one by one) only polls and has run since the last change.
    /// With no engine event pending either, the device is stalled.
    pub(super) fn fw_stalled(&self) -> bool {
        if !self.posted.is_empty() || self.fabric.sem_touched != 0 {
            return false;
        }
        let mut polling = self.parked_mask != 0;
        for (i, next) in self.fw_next.iter().enumerate() {
            if next.is_none() {
                continue;
            }
            let Some(Some(core)) = self.cores.get(i) else {
                continue;
            };
            if !core.polling_only() || self.fw_seen.get(i) != Some(&self.activity) {
                return false;
            }
            polling = true;
        }
        polling
    }

    /// Lets time pass to `at` on a stalled device: each polling core's next
    /// poll moves to the first one after `at` on its period, where running
    /// them one by one would have left it (cycles stay exact).
    pub(super) fn skip_polls_to(&mut self, at: Cycle) {
        let period = self.timing.q7_poll_cycles.max(1);
        for next in self
            .fw_next
            .iter_mut()
            .chain(self.parked.iter_mut())
            .flatten()
        {
            if next.0 <= at.0 {
                let polls = (at.0 - next.0) / period + 1;
                next.0 = next.0.saturating_add(polls.saturating_mul(period));
            }
        }
        self.past(at);
    }

    /// How a run that reached its limit ends: stalled when it is (the
    /// polls ran one by one because the register-access log records).
    pub(super) fn limit_stop(&self) -> super::RunStop {
        if self.is_stalled() {
            super::RunStop::Stalled
        } else {
            super::RunStop::Limit
        }
    }

    /// Whether the device is stalled now: no engine event pending and the
    /// firmware only polls for what cannot change ([`RunStop::Stalled`]).
    ///
    /// [`RunStop::Stalled`]: super::RunStop::Stalled
    pub fn is_stalled(&self) -> bool {
        self.wake.peek().is_none() && self.fw_stalled()
    }

    /// Who waits on what, when the device is stalled ([`Device::is_stalled`]).
    pub fn stall_report(&self) -> Option<StallReport> {
        if !self.is_stalled() {
            return None;
        }
        Some(StallReport {
            cycle: self.now.0,
            waits: self.fw_waits(),
        })
    }

    /// Every firmware word or call now polling for completions, with what
    /// would end its wait (stalled or not; a debugger's `inflight`).
    pub fn fw_waits(&self) -> Vec<StalledWait> {
        let mut waits = Vec::new();
        for core in self.cores.iter().flatten() {
            let tpb = core.tpb();
            for w in core.waits(&mut PeekBus(self)) {
                let (engine_state, faults) = self.engine_condition(w.engine);
                waits.push(StalledWait {
                    core: format!("tpb{tpb}"),
                    inst: format!("tpb{tpb}#{}", w.inst.seq),
                    source: w.inst.source.clone(),
                    kind: w.kind,
                    queue: format!("eng{}.q{}", w.engine, w.queue),
                    waiting_for: w.waiting_for,
                    engine_state,
                    faults,
                });
            }
        }
        waits
    }

    /// An engine's direction states and the error cause bits set on it.
    fn engine_condition(&self, id: u16) -> (String, Vec<String>) {
        let Some(e) = self.engine(id) else {
            return ("never touched".into(), Vec::new());
        };
        let name = |s: DirState| match s {
            DirState::Disabled => "disabled",
            DirState::Normal => "normal",
            DirState::Aborted => "aborted",
        };
        let state = format!(
            "eng{id} m2s {}, s2m {}",
            name(e.dir_state(Dir::M2s)),
            name(e.dir_state(Dir::S2m))
        );
        let mut faults = Vec::new();
        if let Some(gen_regs) = e.regs(UnitBlock::Gen) {
            for reg in gen_regs.map().registers() {
                if !reg.name().ends_with("_INT_CAUSE") {
                    continue;
                }
                let Some(v) = gen_regs.value_of(reg.name()).filter(|v| *v != 0) else {
                    continue;
                };
                let set: Vec<_> = reg
                    .decode(v)
                    .into_iter()
                    .filter(|(_, f)| *f != 0)
                    .map(|(f, _)| format!("{}.{f}", reg.name()))
                    .collect();
                if set.is_empty() {
                    faults.push(format!("{} = {v:#010x}", reg.name()));
                } else {
                    faults.extend(set);
                }
            }
        }
        (state, faults)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn need(engine: u16, queue: u8, m2s: Option<u64>, s2m: Option<u64>) -> ParkNeed {
        ParkNeed {
            engine,
            queue,
            m2s,
            s2m,
        }
    }

    /// Each engine's `least` entries are found by the index, in their
    /// order, and an engine with none (below, between, above the ones
    /// listed) gets none: a wrong slice would wake a core too late or
    /// early, which the stall tests would see as a cycle moved.
    #[test]
    fn least_entries_are_found_by_engine() {
        let least = vec![
            need(5, 0, Some(3), None),
            need(3, 1, None, Some(4)),
            need(5, 2, Some(7), Some(8)),
            need(9, 0, Some(1), None),
        ];
        let needs = ParkNeeds::new(least, Vec::new());
        let queues = |id: u16| {
            needs
                .least_of(id)
                .iter()
                .map(|n| n.queue)
                .collect::<Vec<_>>()
        };
        assert_eq!(queues(5), [0, 2]);
        assert_eq!(queues(3), [1]);
        assert_eq!(queues(9), [0]);
        for none in [0, 2, 4, 6, 8, 10, 300, u16::MAX] {
            assert!(queues(none).is_empty(), "engine {none}");
        }
        let empty = ParkNeeds::new(Vec::new(), Vec::new());
        assert!(empty.least_of(0).is_empty());
    }

    /// The firmware's head epoch of an engine stands still across
    /// tail-pointer doorbell writes (they move no completion head) and
    /// moves at any other register write, and at an engine step that
    /// moves a completion head: the stall tests compare cached polls with
    /// reading every time over whole traces; this pins the rule down.
    #[test]
    fn doorbells_leave_the_head_epoch_and_other_writes_move_it() {
        let mut d = Device::trn2().unwrap();
        let map = d.map();
        let q0 = |dir: &str| {
            let id = map.by_name(&format!("eng0.{dir}.q0")).unwrap();
            map.region(id).base
        };
        let (m2s_q0, s2m_q0) = (q0("m2s"), q0("s2m"));
        let o = d.unit_maps.offsets;
        d.write32(m2s_q0 + o.m2s_q.cfg, 0).unwrap();
        let epoch = d.engine_head_epoch(0).unwrap();
        d.write32(m2s_q0 + o.m2s_q.drtp_inc, 0).unwrap();
        d.write32(s2m_q0 + o.s2m_q.drtp_inc, 0).unwrap();
        assert_eq!(d.engine_head_epoch(0), Some(epoch));
        assert!(d.engine(0).unwrap().head_epoch() > epoch);
        d.write32(s2m_q0 + o.s2m_q.cfg, 0).unwrap();
        assert_eq!(d.engine_head_epoch(0), Some(epoch + 1));
    }

    /// Needs built in the buffers of earlier ones (more or fewer groups,
    /// longer or shorter, other engines) equal needs built afresh, and
    /// none are built when an engine waited on does not exist.
    #[test]
    fn needs_built_in_reused_buffers_equal_fresh_ones() {
        let mut d = Device::trn2().unwrap();
        for id in 0..20 {
            d.engine_mut(id);
        }
        let w = |engine: u16, queue: u8, m2s: Option<u64>, s2m: Option<u64>| q7::WakeNeed {
            engine,
            queue,
            m2s,
            s2m,
        };
        let shapes: Vec<Vec<Vec<q7::WakeNeed>>> = vec![
            vec![(0..16).map(|e| w(e, 0, Some(1), None)).collect()],
            vec![
                vec![
                    w(5, 1, Some(2), Some(3)),
                    w(3, 0, None, Some(1)),
                    w(5, 1, Some(1), None),
                ],
                vec![w(5, 1, Some(4), None), w(3, 0, Some(1), None)],
                vec![w(19, 2, None, None)],
            ],
            vec![],
            vec![vec![w(7, 0, Some(u64::MAX), Some(0))], vec![]],
            vec![
                (4..12)
                    .rev()
                    .map(|e| w(e, e as u8 % 3, None, Some(2)))
                    .collect(),
            ],
        ];
        let mut reuse = None;
        for round in 0..3 {
            for (k, groups) in shapes.iter().enumerate() {
                let fresh = d.park_needs_at(groups, None);
                let built = d.park_needs_at(groups, reuse.take());
                assert_eq!(built, fresh, "shape {k}, round {round}");
                assert!(built.is_some());
                reuse = built;
            }
        }
        // A missing engine: no needs.
        let missing = vec![vec![w(1, 0, Some(1), None), w(4000, 0, Some(1), None)]];
        assert_eq!(d.park_needs_at(&missing, reuse.take()), None);
        assert_eq!(d.park_needs_at(&missing, None), None);
    }

    /// A group's met test remembers the needs it found met (counts only
    /// grow) and says met only when every need is, as looking at all of
    /// them each time would.
    #[test]
    fn a_group_is_met_only_when_every_need_is() {
        let mut d = Device::trn2().unwrap();
        // Engines 0 and 1 exist, nothing completed: a need of 0 is met, a
        // need of 1 is not.
        d.engine_mut(0);
        d.engine_mut(1);
        let g = ParkGroup::new(vec![
            need(0, 0, Some(0), Some(0)),
            need(1, 0, Some(0), None),
            need(1, 0, None, Some(1)),
            need(0, 0, Some(0), None),
        ]);
        assert!(!g.met(&d));
        assert_eq!(g.met_prefix.get(), 2);
        assert!(!g.met(&d));
        assert_eq!(g.met_prefix.get(), 2);
        assert!(g.has_engine(0) && g.has_engine(1) && !g.has_engine(2));
        let all = ParkGroup::new(vec![need(0, 0, Some(0), Some(0)), need(1, 3, None, None)]);
        assert!(all.met(&d));
        assert_eq!(all.met_prefix.get(), 2);
        // An engine id past the set's bits is looked for in the needs.
        let far = ParkGroup::new(vec![need(300, 0, Some(0), None)]);
        assert!(far.has_engine(300) && !far.has_engine(301));
    }
}
