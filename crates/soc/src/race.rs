//! The race detector (docs/races.md): an observer of the deterministic
//! device that orders every data access by happens-before over the agents
//! in use — each core's firmware, each engine queue, and the host (the
//! trace and the host runtime, one thread in statement order) — with vector
//! clocks, and reports pairs of accesses to overlapping bytes, at least
//! one a write, that nothing orders. Off by default
//! ([`crate::Device::detect_races`]); when off, every hook is one branch.

mod clock;
mod shadow;
mod stall;

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;
use sim_core::PacketScope;
use soc_map::{Hex, RegionId};

use clock::VClock;
use shadow::{Acc, Shadow};
pub(crate) use stall::word_label;
pub use stall::{LONG_STALL_CYCLES, StallWait, WordStall};

/// Who acts, for happens-before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Agent {
    /// The trace and the host runtime (driver calls included).
    Host,
    /// Core `tpbN`'s Q7 firmware.
    Core(u8),
    /// Queue `q` of engine `e`.
    Queue(u16, u8),
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Agent::Host => f.write_str("host"),
            Agent::Core(t) => write!(f, "tpb{t} firmware"),
            Agent::Queue(e, q) => write!(f, "eng{e}.q{q}"),
        }
    }
}

/// The race section of a run report (`run --detect-races`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RaceSummary {
    /// Data accesses checked (packet reads and writes, host accesses).
    pub accesses_checked: u64,
    /// Agents that took part (cores, engine queues, the host).
    pub agents: u32,
    /// Races found, one per distinct pair of sources.
    pub races: Vec<RaceReport>,
    /// Wait-for graphs: one per `wait` that failed, and one at the end
    /// when work was left (docs/races.md §Deadlocks).
    pub wait_graphs: Vec<crate::WaitGraph>,
    /// Firmware words that waited long in this run (at least
    /// [`LONG_STALL_CYCLES`]) at their EVENTS gate, for ring room or for
    /// the completions their EVENTS update needs: how long and on whom
    /// (docs/races.md §Stalls in a run that completes).
    pub stalls: Vec<WordStall>,
    /// Reads of bytes nothing wrote (`--check-uninit`, docs/races.md
    /// §Uninitialised memory), one per reading source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uninit: Option<UninitSummary>,
}

/// What never-written memory reads as for the DMA engines (`--uninit`,
/// docs/races.md §Uninitialised memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UninitFill {
    /// Every byte this value (`pattern=0xAB`).
    Byte(u8),
    /// The NaN of the element type the reader uses where it is a float
    /// type (a CCE source, a cross-bar transpose); 0xFF bytes where the
    /// type is unknown (a raw copy) or has no NaN (integers, FP4).
    Nan,
}

impl UninitFill {
    /// The byte a read of unknown element type sees.
    pub const fn byte(self) -> u8 {
        match self {
            UninitFill::Byte(b) => b,
            UninitFill::Nan => 0xFF,
        }
    }
}

/// What `--check-uninit` found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UninitSummary {
    /// Packet reads of bytes the trace or the host runtime set up (wrote
    /// before): not uninitialised, counted for comparison.
    pub reads_of_setup_bytes: u64,
    /// Reads of bytes nothing wrote, one per reading source.
    pub reads: Vec<UninitRead>,
}

/// A read of never-written bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UninitRead {
    /// The first such read's bytes, symbolically.
    pub range: String,
    /// Their first address.
    pub addr: Hex,
    /// Bytes of the first read.
    pub len_bytes: u64,
    /// Who read them (the packet and what rang it).
    pub reader: RaceSide,
    /// Reads by this source of never-written bytes.
    pub count: u64,
}

/// Two unordered accesses to overlapping bytes, at least one a write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RaceReport {
    /// `write/write` or `read/write`.
    pub kind: String,
    /// The bytes both touch, symbolically
    /// (`tpb0.sbuf[p3]+0x100..+0x200`); for a scatter inside one word,
    /// the index positions.
    pub range: String,
    /// First byte (SoC address), when the race is on memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<Hex>,
    /// Bytes of the first occurrence's overlap.
    pub len_bytes: u64,
    /// The earlier access in simulated order.
    pub first: RaceSide,
    /// The later one.
    pub second: RaceSide,
    /// Times this pair of sources raced (overlapping accesses found).
    pub count: u64,
}

/// One side of a race.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RaceSide {
    /// The agent (`eng3.q0`, `tpb1 firmware`, `host`).
    pub agent: String,
    /// What issued the access: the packet's ring slot and the word or
    /// trace statement that rang its doorbell, or the host statement.
    pub source: String,
    /// `read` or `write`.
    pub access: String,
    /// Cycle of the access.
    pub cycle: u64,
}

impl RaceSummary {
    /// The text of the run report's `race` section.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "race: {} race(s) among {} agents, {} accesses checked\n",
            self.races.len(),
            self.agents,
            self.accesses_checked
        );
        for r in &self.races {
            out.push_str(&format!(
                "  {} race on {}{}{}\n",
                r.kind,
                r.range,
                if r.addr.is_some() {
                    format!(" ({} bytes)", r.len_bytes)
                } else {
                    String::new()
                },
                if r.count > 1 {
                    format!(", {} times", r.count)
                } else {
                    String::new()
                }
            ));
            for (which, s) in [("first", &r.first), ("second", &r.second)] {
                out.push_str(&format!(
                    "    {which}: {} by {} at cycle {}\n",
                    s.access, s.source, s.cycle
                ));
            }
        }
        for g in &self.wait_graphs {
            out.push_str(&g.to_text());
        }
        out.push_str(&stall::stalls_text(&self.stalls));
        if let Some(u) = &self.uninit {
            out.push_str(&format!(
                "uninit: {} source(s) read never-written bytes ({} reads of bytes the trace or host set up)\n",
                u.reads.len(),
                u.reads_of_setup_bytes
            ));
            for r in &u.reads {
                out.push_str(&format!(
                    "  read of never-written {} ({} bytes) by {} at cycle {}{}\n",
                    r.range,
                    r.len_bytes,
                    r.reader.source,
                    r.reader.cycle,
                    if r.count > 1 {
                        format!(", {} times", r.count)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        out
    }

    /// Whether a wait-for graph found a deadlock.
    pub fn deadlock(&self) -> bool {
        self.wait_graphs.iter().any(|g| g.deadlock)
    }
}

/// One doorbell's descriptors not yet taken by a packet.
#[derive(Debug)]
struct Posted {
    left: u32,
    clock: VClock,
    who: u32,
    /// The element type the ringer's word moves (a transpose's), for
    /// `--uninit nan`.
    elements: Option<sim_core::ElementNan>,
}

/// A queue's synchronisation state.
#[derive(Debug, Default)]
struct QueueSync {
    /// Doorbells in order, with the ringer's clock.
    posted: VecDeque<Posted>,
    /// The clock of its last completed packet (what a completion poll sees).
    done: VClock,
    /// The largest own component that came back through another agent (a
    /// doorbell rung after a poll saw the queue's completions).
    synced: u32,
    /// Epoch of its latest packet with DMB.
    last_dmb: u32,
    /// Its last completed packet: what a stall for its room or
    /// completions waited on last.
    last_done: Option<stall::LastDone>,
}

/// The packet whose accesses are being checked.
#[derive(Clone, Copy, Debug)]
struct Cur {
    agent: u32,
    epoch: u32,
    who: u32,
    slot: u32,
    last_dmb: u32,
    synced: u32,
    engine: u16,
    /// Writing its completion (ring entries): recorded for the polls that
    /// read them, not checked.
    completion: bool,
    /// The element type of the word that rang it (a transpose's).
    elements: Option<sim_core::ElementNan>,
}

/// A race seen so far (its first occurrence and a count).
#[derive(Clone, Debug)]
struct Found {
    first: (Acc, bool),
    second: (Acc, bool),
    lo: u64,
    hi: u64,
    count: u64,
    scatter: Option<String>,
}

/// A race's identity: (first agent, first source, second agent, second
/// source, both writes).
type RaceKey = (u32, u32, u32, u32, bool);

/// A source's first read of never-written bytes: (first byte, end, ring
/// slot, cycle, reads so far).
type FirstUninit = (u64, u64, u32, u64, u64);

/// The detector's state.
#[derive(Debug, Default)]
pub(crate) struct Detector {
    /// Agent id of each CPU (cores 0..8, the host last); `u32::MAX`: none.
    cpu_ids: [u32; 9],
    /// Agent id of each queue, by `engine × 16 + queue`.
    queue_ids: Vec<u32>,
    agents: Vec<Agent>,
    clocks: Vec<VClock>,
    /// Per agent (queues only use theirs).
    qsync: Vec<QueueSync>,
    /// Per core: the completions its firmware's register polls saw. The
    /// DGE path polls asynchronously: what a poll sees orders the word's
    /// EVENTS update (a semaphore write), not the words it fires next.
    core_seen: Vec<VClock>,
    sems: HashMap<(RegionId, u32), VClock>,
    /// Per engine: the clocks of its packets so far (what a write barrier
    /// or strong-order write waits for).
    engine_writes: Vec<VClock>,
    shadow: Shadow,
    labels: Vec<String>,
    label_ids: HashMap<String, u32>,
    /// Label of the host statement running.
    host_who: u32,
    /// Label of the word each core is firing.
    core_who: Vec<Option<u32>>,
    /// The element type of the word each core is firing (a transpose's).
    core_elements: Vec<Option<sim_core::ElementNan>>,
    found: BTreeMap<RaceKey, Found>,
    /// The keys of `found` in the order the races were first found (what
    /// a debugger's `break race` stops on, one by one).
    found_order: Vec<RaceKey>,
    cur: Option<Cur>,
    accesses: u64,
    /// Wait-for graphs taken at failed waits.
    pub(crate) graphs: Vec<crate::WaitGraph>,
    /// `--check-uninit`: reads of never-written bytes are reported.
    pub(crate) check_uninit: bool,
    /// `--uninit nan|pattern=B`: what never-written bytes read as.
    pub(crate) uninit_fill: Option<UninitFill>,
    /// The NaN of the element type the packet's reads use now
    /// (`Bus::read_as`; `None`: raw bytes).
    pub(crate) read_as: Option<sim_core::ElementNan>,
    /// Per reading source (agent, label): its first read of never-written
    /// bytes and a count.
    uninit_reads: BTreeMap<(u32, u32), FirstUninit>,
    setup_reads: u64,
    /// The stall summary's waits and stalls.
    stall: stall::Stalls,
}

impl Detector {
    pub(crate) fn new() -> Self {
        let mut d = Detector {
            cpu_ids: [u32::MAX; 9],
            ..Detector::default()
        };
        d.host_who = d.label("host");
        d
    }

    fn label(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.label_ids.get(text) {
            return id;
        }
        let id = self.labels.len() as u32;
        self.labels.push(text.to_string());
        self.label_ids.insert(text.to_string(), id);
        id
    }

    /// The agent's id, created with clock `{self: 1}` on first use.
    fn agent(&mut self, a: Agent) -> u32 {
        let slot = match a {
            Agent::Host => self.cpu_ids.get(8).copied(),
            Agent::Core(t) => self.cpu_ids.get(usize::from(t)).copied(),
            Agent::Queue(e, q) => self
                .queue_ids
                .get(usize::from(e) * 16 + usize::from(q))
                .copied(),
        };
        if let Some(id) = slot.filter(|&id| id != u32::MAX) {
            return id;
        }
        let id = self.agents.len() as u32;
        self.agents.push(a);
        match a {
            Agent::Host => self.cpu_ids[8] = id,
            Agent::Core(t) => {
                if let Some(c) = self.cpu_ids.get_mut(usize::from(t).min(7)) {
                    *c = id;
                }
            }
            Agent::Queue(e, q) => {
                let i = usize::from(e) * 16 + usize::from(q);
                if self.queue_ids.len() <= i {
                    self.queue_ids.resize(i + 1, u32::MAX);
                }
                self.queue_ids[i] = id;
            }
        }
        let mut c = VClock::default();
        c.set(id as usize, 1);
        self.clocks.push(c);
        self.qsync.push(QueueSync::default());
        id
    }

    /// The host agent, or core `tpb`'s.
    pub(crate) fn cpu_agent(&mut self, core: Option<u8>) -> u32 {
        self.agent(core.map_or(Agent::Host, |t| Agent::Core(t.min(7))))
    }

    fn engine_writes_mut(&mut self, engine: u16) -> &mut VClock {
        let i = usize::from(engine);
        if self.engine_writes.len() <= i {
            self.engine_writes.resize(i + 1, VClock::default());
        }
        &mut self.engine_writes[i]
    }

    fn clock(&self, agent: u32) -> &VClock {
        &self.clocks[agent as usize]
    }

    /// The host statement running (its label).
    pub(crate) fn host_label(&self) -> String {
        self.labels
            .get(self.host_who as usize)
            .cloned()
            .unwrap_or_default()
    }

    /// The host statement that runs now (its accesses and doorbells).
    pub(crate) fn set_host_label(&mut self, text: &str) {
        self.host_who = self.label(text);
    }

    /// Core `tpb` fires word `text` next.
    pub(crate) fn set_core_label(&mut self, tpb: u8, text: &str) {
        let id = self.label(text);
        let i = usize::from(tpb);
        if self.core_who.len() <= i {
            self.core_who.resize(i + 1, None);
        }
        self.core_who[i] = Some(id);
    }

    /// Core `tpb`'s word fired next moves elements of this type (its NaN),
    /// or bytes.
    pub(crate) fn set_core_elements(&mut self, tpb: u8, nan: Option<sim_core::ElementNan>) {
        let i = usize::from(tpb);
        if self.core_elements.len() <= i {
            self.core_elements.resize(i + 1, None);
        }
        self.core_elements[i] = nan;
    }

    /// The element type of the word that rang the packet in scope (a
    /// transpose's NaN), if any.
    pub(crate) fn packet_elements(&self) -> Option<sim_core::ElementNan> {
        self.cur.and_then(|c| c.elements)
    }

    fn who_of(&mut self, core: Option<u8>) -> u32 {
        match core {
            None => self.host_who,
            Some(t) => match self.core_who.get(usize::from(t)).copied().flatten() {
                Some(id) => id,
                None => self.label(&format!("tpb{t} firmware")),
            },
        }
    }

    /// The agent acting now: the packet in scope, else the CPU master.
    fn actor(&mut self, core: Option<u8>) -> u32 {
        match self.cur {
            Some(c) => c.agent,
            None => self.cpu_agent(core),
        }
    }

    /// A release: `agent`'s clock goes into `into`; a CPU agent then
    /// starts a new epoch.
    fn release(&mut self, agent: u32) -> VClock {
        let c = self.clocks[agent as usize].clone();
        if self.cur.is_none_or(|p| p.agent != agent) {
            self.clocks[agent as usize].tick(agent as usize);
        }
        c
    }

    /// A semaphore write (set, increment, decrement) by the actor.
    pub(crate) fn sem_write(&mut self, core: Option<u8>, region: RegionId, index: u32) {
        let a = self.actor(core);
        let (who, slot) = match (self.cur, core) {
            (Some(c), _) => (c.who, c.slot),
            (None, Some(_)) => (self.label("an EVENTS update"), u32::MAX),
            (None, None) => (self.who_of(None), u32::MAX),
        };
        self.stall
            .sem_writers
            .insert((region, index), (a, who, slot));
        let mut c = self.release(a);
        if self.cur.is_none()
            && let Some(seen) = core.and_then(|t| self.core_seen.get(usize::from(t)))
        {
            c.join(seen);
        }
        self.sems.entry((region, index)).or_default().join(&c);
    }

    /// A semaphore read (a wait's poll) by a CPU agent: it sees every
    /// write so far.
    pub(crate) fn sem_read(&mut self, core: Option<u8>, region: RegionId, index: u32) {
        let a = self.cpu_agent(core);
        if let Some(s) = self.sems.get(&(region, index)) {
            let s = s.clone();
            self.clocks[a as usize].join(&s);
        }
    }

    /// A tail-increment doorbell of `n` descriptors on a queue's M2S ring.
    pub(crate) fn doorbell(&mut self, core: Option<u8>, engine: u16, queue: u8, n: u32) {
        let a = self.cpu_agent(core);
        let who = self.who_of(core);
        let elements = core.and_then(|t| self.core_elements.get(usize::from(t)).copied().flatten());
        let clock = self.release(a);
        let qa = self.agent(Agent::Queue(engine, queue));
        self.qsync[qa as usize].posted.push_back(Posted {
            left: n,
            clock,
            who,
            elements,
        });
    }

    /// A doorbell rung by a DMA write of engine `from` (posted after its
    /// step): it carries what that engine's packets saw.
    pub(crate) fn engine_doorbell(&mut self, from: u16, engine: u16, queue: u8, n: u32) {
        let clock = self.engine_writes_mut(from).clone();
        let who = self.label(&format!("eng{from} (a DMA-written doorbell)"));
        let qa = self.agent(Agent::Queue(engine, queue));
        self.qsync[qa as usize].posted.push_back(Posted {
            left: n,
            clock,
            who,
            elements: None,
        });
    }

    /// A CPU agent read a queue's completion registers: it sees the
    /// queue's completed packets (the host waits on them; a core's
    /// firmware polls them for its words' EVENTS updates).
    pub(crate) fn completion_poll(&mut self, core: Option<u8>, engine: u16, queue: u8) {
        let qa = self.agent(Agent::Queue(engine, queue)) as usize;
        match core {
            Some(t) => {
                let t = usize::from(t);
                if self.core_seen.len() <= t {
                    self.core_seen.resize(t + 1, VClock::default());
                }
                self.core_seen[t].join(&self.qsync[qa].done);
            }
            None => {
                let a = self.cpu_agent(None) as usize;
                let (clocks, qsync) = (&mut self.clocks, &self.qsync);
                clocks[a].join(&qsync[qa].done);
            }
        }
    }

    /// The host saw the device idle (a `run` that ended with nothing
    /// pending): everything done happens before what it does next.
    pub(crate) fn quiesce(&mut self) {
        let h = self.cpu_agent(None) as usize;
        let mut all = VClock::default();
        for c in &self.clocks {
            all.join(c);
        }
        self.clocks[h].join(&all);
    }

    /// The host handed work to core `tpb` (a word or call): the core sees
    /// what the host did before.
    pub(crate) fn submit(&mut self, tpb: u8) {
        let h = self.cpu_agent(None);
        let c = self.release(h);
        let a = self.cpu_agent(Some(tpb));
        self.clocks[a as usize].join(&c);
    }

    /// A packet's data is about to move (`Some`) or has moved (`None`).
    pub(crate) fn packet_scope(&mut self, engine: u16, scope: Option<PacketScope>) {
        let Some(s) = scope else {
            if let Some(c) = self.cur.take() {
                let ai = c.agent as usize;
                self.engine_writes_mut(c.engine);
                self.stall.completed += 1;
                self.qsync[ai].last_done = Some((c.who, c.slot, self.stall.completed));
                let clock = &self.clocks[ai];
                self.qsync[ai].done.join(clock);
                self.engine_writes[usize::from(c.engine)].join(clock);
            }
            return;
        };
        if s.completion {
            if let Some(c) = self.cur.as_mut() {
                c.completion = true;
            }
            return;
        }
        let a = self.agent(Agent::Queue(engine, s.queue));
        let ai = a as usize;
        let mut who = None;
        let mut elements = None;
        let mut synced = 0;
        let own = &mut self.clocks[ai];
        let q = &mut self.qsync[ai];
        let mut n = s.tx_descs.max(1);
        while n > 0 {
            let Some(front) = q.posted.front_mut() else {
                break;
            };
            own.join(&front.clock);
            synced = synced.max(front.clock.get(ai));
            if who.is_none() {
                who = Some(front.who);
                elements = front.elements;
            }
            let take = n.min(front.left);
            front.left -= take;
            n -= take;
            if front.left == 0 {
                q.posted.pop_front();
            }
        }
        q.synced = q.synced.max(synced);
        let epoch = own.tick(ai);
        if s.dmb {
            q.last_dmb = epoch;
        }
        let (last_dmb, synced) = (q.last_dmb, q.synced);
        if s.barrier {
            self.engine_writes_mut(engine);
            let w = &self.engine_writes[usize::from(engine)];
            self.clocks[ai].join(w);
            self.clocks[ai].set(ai, epoch);
        }
        let who = match who {
            Some(w) => w,
            None => self.label("a doorbell the detector did not see"),
        };
        self.cur = Some(Cur {
            agent: a,
            epoch,
            who,
            slot: s.slot,
            last_dmb,
            synced,
            engine,
            completion: false,
            elements,
        });
    }

    /// Whether the packet is in scope (its accesses are checked).
    pub(crate) fn in_packet(&self) -> bool {
        self.cur.is_some()
    }

    fn current(&mut self, core: Option<u8>, cycle: u64) -> Acc {
        match self.cur {
            Some(c) => Acc {
                agent: c.agent,
                epoch: c.epoch,
                who: c.who,
                slot: c.slot,
                cycle,
            },
            None => {
                let agent = self.cpu_agent(core);
                let who = self.who_of(core);
                Acc {
                    agent,
                    epoch: self.clock(agent).get(agent as usize),
                    who,
                    slot: u32::MAX,
                    cycle,
                }
            }
        }
    }

    /// A data access of `[addr, addr + len)` by the packet in scope or
    /// the CPU master.
    pub(crate) fn access(
        &mut self,
        core: Option<u8>,
        addr: u64,
        len: u64,
        write: bool,
        cycle: u64,
    ) {
        if len == 0 {
            return;
        }
        let cur = self.current(core, cycle);
        let hi = addr.saturating_add(len);
        if self.cur.is_some_and(|c| c.completion) {
            if write {
                self.shadow.visit(addr, hi, |_, seg| {
                    seg.write = Some(cur);
                    seg.reads.clear();
                });
            }
            return;
        }
        self.accesses += 1;
        let mut races: Vec<(Acc, bool, u64, u64)> = Vec::new();
        let check_uninit = self.check_uninit && !write && self.cur.is_some();
        let host = self.cpu_ids[8];
        let mut unwritten: Option<(u64, u64)> = None;
        let mut setup = false;
        let (clocks, packet) = (&self.clocks, self.cur);
        self.shadow.visit(addr, hi, |start, seg| {
            if check_uninit {
                match seg.write {
                    None => {
                        let u = unwritten.get_or_insert((start, seg.end));
                        u.0 = u.0.min(start);
                        u.1 = u.1.max(seg.end);
                    }
                    Some(w) if w.agent == host => setup = true,
                    Some(_) => {}
                }
            }
            if let Some(w) = seg.write
                && !ordered_in(clocks, packet, &w, true, &cur, write)
            {
                races.push((w, true, start, seg.end));
            }
            if write {
                for r in &seg.reads {
                    if !ordered_in(clocks, packet, r, false, &cur, true) {
                        races.push((*r, false, start, seg.end));
                    }
                }
                seg.write = Some(cur);
                seg.reads.clear();
            } else if let Some(r) = seg.reads.iter_mut().find(|r| r.agent == cur.agent) {
                *r = cur;
            } else {
                seg.reads.push(cur);
            }
        });
        if setup {
            self.setup_reads += 1;
        }
        if let Some((lo, hi)) = unwritten {
            let e = self
                .uninit_reads
                .entry((cur.agent, cur.who))
                .or_insert((lo, hi, cur.slot, cur.cycle, 0));
            e.4 += 1;
        }
        // One occurrence per earlier access, over the bytes both touch.
        let mut merged: Vec<(Acc, bool, u64, u64)> = Vec::new();
        for (prior, prior_write, lo, hi) in races {
            match merged
                .iter_mut()
                .find(|m| m.0 == prior && m.1 == prior_write)
            {
                Some(m) => {
                    m.2 = m.2.min(lo);
                    m.3 = m.3.max(hi);
                }
                None => merged.push((prior, prior_write, lo, hi)),
            }
        }
        for (prior, prior_write, lo, hi) in merged {
            self.record(prior, prior_write, cur, write, lo, hi, None);
        }
    }

    /// A write that sets bytes up without being checked (the firmware's
    /// own stores, for `--check-uninit`).
    pub(crate) fn setup_write(&mut self, core: Option<u8>, addr: u64, len: u64, cycle: u64) {
        let cur = self.current(core, cycle);
        self.shadow.visit(addr, addr.saturating_add(len), |_, seg| {
            seg.write = Some(cur);
            seg.reads.clear();
        });
    }

    /// The parts of `[addr, addr + len)` nothing wrote.
    pub(crate) fn unwritten(&self, addr: u64, len: u64) -> Vec<(u64, u64)> {
        let hi = addr.saturating_add(len);
        let mut out: Vec<(u64, u64)> = Vec::new();
        let mut cur = addr;
        self.shadow.peek(addr, hi, |start, seg| {
            let s = start.max(addr);
            if s > cur {
                out.push((cur, s));
            }
            if seg.write.is_none() {
                out.push((s, seg.end.min(hi)));
            }
            cur = cur.max(seg.end.min(hi));
        });
        if cur < hi {
            out.push((cur, hi));
        }
        out.retain(|(a, b)| b > a);
        out
    }

    /// A CPU agent polled `[addr, addr + len)`: reads-from, it sees what
    /// the completed packets that wrote there did (their queues' completed
    /// clocks). Not a data read: it races with nothing.
    pub(crate) fn poll(&mut self, core: Option<u8>, addr: u64, len: u64) {
        let a = self.cpu_agent(core);
        let mut writers: Vec<u32> = Vec::new();
        self.shadow.peek(addr, addr.saturating_add(len), |_, seg| {
            if let Some(w) = seg.write
                && w.agent != a
                && !writers.contains(&w.agent)
            {
                writers.push(w.agent);
            }
        });
        for w in writers {
            if matches!(self.agents.get(w as usize), Some(Agent::Queue(..))) {
                let (clocks, qsync) = (&mut self.clocks, &self.qsync);
                clocks[a as usize].join(&qsync[w as usize].done);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        prior: Acc,
        prior_write: bool,
        cur: Acc,
        cur_write: bool,
        lo: u64,
        hi: u64,
        scatter: Option<String>,
    ) {
        let both_write = prior_write && cur_write;
        let key = (prior.agent, prior.who, cur.agent, cur.who, both_write);
        let f = self.found.entry(key).or_insert_with(|| {
            self.found_order.push(key);
            Found {
                first: (prior, prior_write),
                second: (cur, cur_write),
                lo,
                hi,
                count: 0,
                scatter,
            }
        });
        f.count += 1;
    }

    /// Word `tag_text` of core `tpb` scatters two index positions to one
    /// destination (INDIRECT1D without `non_unique_dst_idx`).
    pub(crate) fn scatter_race(
        &mut self,
        tpb: u8,
        word: &str,
        first: u32,
        later: u32,
        index: u32,
        cycle: u64,
    ) {
        let agent = self.cpu_agent(Some(tpb));
        let who = self.label(word);
        let acc = |slot| Acc {
            agent,
            epoch: 0,
            who,
            slot,
            cycle,
        };
        self.record(
            acc(first),
            true,
            acc(later),
            true,
            0,
            0,
            Some(format!(
                "dst_idx[{first}] and dst_idx[{later}] both = {index} (no non_unique_dst_idx)"
            )),
        );
    }

    /// One side of a race or an uninitialised read, as reported.
    fn side(&self, a: &Acc, write: bool, scatter: bool) -> RaceSide {
        let agent = self
            .agents
            .get(a.agent as usize)
            .map_or_else(String::new, ToString::to_string);
        let who = self.labels.get(a.who as usize).cloned().unwrap_or_default();
        let source = if scatter {
            format!("{who} element dst_idx[{}]", a.slot)
        } else if a.slot == u32::MAX {
            format!("{agent} ({who})")
        } else {
            format!("{agent}[{}] rung by {who}", a.slot)
        };
        RaceSide {
            agent,
            source,
            access: if write { "write" } else { "read" }.into(),
            cycle: a.cycle,
        }
    }

    /// The report of one race, ranges named by `name`.
    fn report_of(&self, f: &Found, name: &dyn Fn(u64) -> String) -> RaceReport {
        let scatter = f.scatter.is_some();
        let range = match &f.scatter {
            Some(s) => s.clone(),
            None => range_text(name, f.lo, f.hi),
        };
        RaceReport {
            kind: if f.first.1 && f.second.1 {
                "write/write"
            } else {
                "read/write"
            }
            .into(),
            range,
            addr: (!scatter).then_some(Hex(f.lo)),
            len_bytes: f.hi - f.lo,
            first: self.side(&f.first.0, f.first.1, scatter),
            second: self.side(&f.second.0, f.second.1, scatter),
            count: f.count,
        }
    }

    /// Distinct races found so far.
    pub(crate) fn races_found(&self) -> usize {
        self.found_order.len()
    }

    /// The race found `n`-th (from 0), as the report shows it (its count so
    /// far).
    pub(crate) fn race(&self, n: usize, name: &dyn Fn(u64) -> String) -> Option<RaceReport> {
        let f = self.found.get(self.found_order.get(n)?)?;
        Some(self.report_of(f, name))
    }

    /// The report, ranges named by `name`.
    pub(crate) fn summary(&self, name: &dyn Fn(u64) -> String) -> RaceSummary {
        let side = |a: &Acc, write: bool, scatter: bool| self.side(a, write, scatter);
        let mut races: Vec<RaceReport> = self
            .found
            .values()
            .map(|f| self.report_of(f, name))
            .collect();
        races.sort_by(|a, b| {
            (a.first.cycle, a.second.cycle, &a.range).cmp(&(
                b.first.cycle,
                b.second.cycle,
                &b.range,
            ))
        });
        RaceSummary {
            accesses_checked: self.accesses,
            agents: self.agents.len() as u32,
            races,
            wait_graphs: self.graphs.clone(),
            stalls: self.stall.list.clone(),
            uninit: self.check_uninit.then(|| UninitSummary {
                reads_of_setup_bytes: self.setup_reads,
                reads: self
                    .uninit_reads
                    .iter()
                    .map(|(&(agent, who), &(lo, hi, slot, cycle, count))| {
                        let a = Acc {
                            agent,
                            epoch: 0,
                            who,
                            slot,
                            cycle,
                        };
                        UninitRead {
                            range: range_text(name, lo, hi),
                            addr: Hex(lo),
                            len_bytes: hi - lo,
                            reader: side(&a, false, false),
                            count,
                        }
                    })
                    .collect(),
            }),
        }
    }

    /// Shadow segments held (a size measure for tests).
    #[cfg(test)]
    pub(crate) fn segments(&self) -> usize {
        self.shadow.len()
    }
}

/// Does `prior` happen before the current access `cur` (docs/races.md
/// §Happens-before)? Over the clocks and the packet in scope alone, so a
/// shadow visit checks while it holds the shadow mutably.
fn ordered_in(
    clocks: &[VClock],
    cur_packet: Option<Cur>,
    prior: &Acc,
    prior_write: bool,
    cur: &Acc,
    cur_write: bool,
) -> bool {
    if prior.agent == cur.agent {
        // Within one queue the reads leave in ring order and the writes
        // land in order, but a later packet's read of what an earlier
        // one writes needs a DMB, or a completion that came back
        // through another agent — unless one word or one doorbell
        // statement issued both (its own order; docs/races.md).
        if let Some(c) = cur_packet
            && c.agent == cur.agent
            && prior_write
            && !cur_write
            && prior.epoch < cur.epoch
            && prior.who != cur.who
        {
            return c.last_dmb > prior.epoch || c.synced >= prior.epoch;
        }
        return true;
    }
    clocks[cur.agent as usize].get(prior.agent as usize) >= prior.epoch
}

/// `tpb0.sbuf[p3]+0x100..+0x200`: the start named, the end as an offset in
/// the same region (or named in full when it falls elsewhere).
fn range_text(name: &dyn Fn(u64) -> String, lo: u64, hi: u64) -> String {
    let a = name(lo);
    let b = name(hi.saturating_sub(1));
    let base = |s: &str| s.split('+').next().unwrap_or("").to_string();
    let off = |s: &str| {
        s.split_once('+')
            .and_then(|(_, o)| u64::from_str_radix(o.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0)
    };
    if base(&a) == base(&b) {
        format!("{a}..+{:#x}", off(&b) + 1)
    } else {
        format!("{a}..{b}")
    }
}

#[cfg(test)]
mod tests;
