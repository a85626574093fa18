//! The stall summary of the race section (docs/races.md §Stalls in a run
//! that completes): every wait of a firmware word of at least
//! [`LONG_STALL_CYCLES`] — at its EVENTS gate, for ring room, or for the
//! completions its EVENTS update needs (docs/firmware.md §Stalls) — how
//! long, and on whom.

use std::collections::BTreeMap;

use serde::Serialize;
use soc_map::RegionId;

use super::{Agent, Detector};

/// Waits shorter than this are not listed as stalls.
pub const LONG_STALL_CYCLES: u64 = 100;

/// A firmware word that waited at least [`LONG_STALL_CYCLES`]
/// (docs/races.md §Stalls in a run that completes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WordStall {
    /// The word (`tpb0 word #1 (line 23)`: its core, number in the core's
    /// queue and trace line).
    pub word: String,
    /// Its core (TPB index).
    pub tpb: u8,
    /// The kind of wait.
    #[serde(flatten)]
    pub wait: StallWait,
    /// What it waited on: the semaphore and wait mode
    /// (`tpb0.sem[2] WAIT_FOR_SEM_GE_IMM`), `ring room on eng3.q0`, or
    /// `completion of eng0.q1, eng1.q1` (every queue it polled).
    pub on: String,
    /// Cycles waited: from the gate's first failed check until the word
    /// issued (events gate), from the first check that found its ring
    /// full until a check found room (ring room), from its doorbells until
    /// its EVENTS update applied (completion).
    pub waited_cycles: u64,
    /// The cycle the wait ended: the word issued (events gate; its
    /// descriptor generation included), the firmware found room and
    /// started generating its descriptors (ring room), or its EVENTS
    /// update applied (completion).
    pub cycle: u64,
    /// What ended the wait: the last writer of the semaphore before the
    /// word issued (a packet and what rang it, or a core's EVENTS update,
    /// or a host statement), or the last packet of the awaited queues to
    /// complete before the wait ended (ring room, completion).
    pub released_by: String,
    /// The agents whose progress it awaited (`eng3.q0`, `tpb1 firmware`,
    /// `host`): the semaphore's last writer, or the engine queues.
    pub awaited: Vec<String>,
}

/// The kinds of [`WordStall`] (JSON `kind`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StallWait {
    /// Its EVENTS gate held it (P9.1 §2.1, docs/references/wiki.md §C.3).
    EventsGate,
    /// Its descriptors did not fit the free slots of one engine queue's
    /// rings: the firmware waited for the engine to consume descriptors
    /// (docs/firmware.md §Stalls).
    RingRoom {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
    },
    /// Its EVENTS update waited for its completions (the firmware polls
    /// the completion heads, docs/firmware.md §Stalls); the queue named is
    /// the last of those it polled to complete.
    Completion {
        /// Device engine id.
        engine: u16,
        /// Queue id.
        queue: u8,
    },
}

impl StallWait {
    /// How the summary's heading says where words waited, with its rank
    /// in the heading.
    fn phrase(&self) -> (u8, &'static str) {
        match self {
            StallWait::EventsGate => (0, "at their EVENTS gate"),
            StallWait::RingRoom { .. } => (1, "for ring room"),
            StallWait::Completion { .. } => (2, "for completions"),
        }
    }
}

/// The text of the stall summary (empty without stalls).
pub(super) fn stalls_text(stalls: &[WordStall]) -> String {
    if stalls.is_empty() {
        return String::new();
    }
    let mut words: Vec<&str> = stalls.iter().map(|s| s.word.as_str()).collect();
    words.sort_unstable();
    words.dedup();
    // In a fixed order: the gate, then ring room, then completions.
    let mut kinds: Vec<(u8, &'static str)> = stalls.iter().map(|s| s.wait.phrase()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let kinds: Vec<&str> = kinds.into_iter().map(|(_, p)| p).collect();
    let kinds = match kinds.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    let mut out = format!(
        "stalls: {} word(s) waited at least {LONG_STALL_CYCLES} cycles {kinds}\n",
        words.len()
    );
    for st in stalls {
        let line = match st.wait {
            StallWait::EventsGate => format!(
                "  {} waited {} cycles on {} (issued at cycle {}; last written by {})\n",
                st.word, st.waited_cycles, st.on, st.cycle, st.released_by
            ),
            StallWait::RingRoom { .. } => format!(
                "  {} waited {} cycles for {} (room found at cycle {}; last completed {})\n",
                st.word, st.waited_cycles, st.on, st.cycle, st.released_by
            ),
            StallWait::Completion { .. } => format!(
                "  {} waited {} cycles for {} (EVENTS update at cycle {}; last completed {})\n",
                st.word, st.waited_cycles, st.on, st.cycle, st.released_by
            ),
        };
        out.push_str(&line);
    }
    out
}

/// A queue's last completed packet: (label of what rang it, ring slot,
/// order among all completed packets).
pub(super) type LastDone = (u32, u32, u64);

/// A wait begun and not yet over.
#[derive(Clone, Debug)]
pub(super) struct OpenWait {
    /// The cycle it began.
    start: u64,
    /// The word's label.
    word: String,
    /// The queues it waits on (ring room: one; completion: every queue
    /// the word polls).
    queues: Vec<(u16, u8)>,
}

/// The stall bookkeeping of the detector.
#[derive(Debug, Default)]
pub(super) struct Stalls {
    /// Per (core, word seq): the cycle its gate first held it, and what
    /// it waits on.
    gate: BTreeMap<(u8, u64), (u64, String)>,
    /// Per (core, word seq): the front word waiting for ring room.
    room: BTreeMap<(u8, u64), OpenWait>,
    /// Per (core, word seq): a word in flight whose EVENTS update waits
    /// for its completions.
    completion: BTreeMap<(u8, u64), OpenWait>,
    /// The last writer of each semaphore: (agent, label, ring slot).
    pub(super) sem_writers: std::collections::HashMap<(RegionId, u32), (u32, u32, u32)>,
    /// Completed packets so far (orders the queues' last completions).
    pub(super) completed: u64,
    /// The stalls found, in the order they ended.
    pub(super) list: Vec<WordStall>,
}

/// The label of word `seq` of core `tpb` (`tpb0 word #1 (line 23)`).
pub(crate) fn word_label(tpb: u8, seq: u64, source: &str) -> String {
    format!("tpb{tpb} word #{seq} ({source})")
}

impl Detector {
    /// The gate wait noted for word `seq` of core `tpb`.
    pub(crate) fn gate_wait_of(&self, tpb: u8, seq: u64) -> Option<&(u64, String)> {
        self.stall.gate.get(&(tpb, seq))
    }

    /// Core `tpb`'s front word `seq` is held by its gate (`on`).
    pub(crate) fn gate_waiting(&mut self, tpb: u8, seq: u64, on: String, cycle: u64) {
        self.stall.gate.entry((tpb, seq)).or_insert((cycle, on));
    }

    /// After core `tpb` ran: its front word waits for ring room on
    /// `holding` = (word seq, label, engine, queue), or no word does; a
    /// ring-room wait of another word is over at `cycle` (the core found
    /// room and generates the word's descriptors).
    pub(crate) fn room_waiting(
        &mut self,
        tpb: u8,
        holding: Option<(u64, String, u16, u8)>,
        cycle: u64,
    ) {
        let over: Vec<(u8, u64)> = self
            .stall
            .room
            .range((tpb, 0)..=(tpb, u64::MAX))
            .filter(|&(&(_, seq), _)| holding.as_ref().is_none_or(|h| h.0 != seq))
            .map(|(&k, _)| k)
            .collect();
        for k in over {
            if let Some(w) = self.stall.room.remove(&k) {
                self.queue_stall(k.0, w, cycle, true);
            }
        }
        let Some((seq, word, engine, queue)) = holding else {
            return;
        };
        let w = self.stall.room.entry((tpb, seq)).or_insert(OpenWait {
            start: cycle,
            word,
            queues: Vec::new(),
        });
        // The queue that blocks it last is the one whose room it got.
        w.queues = vec![(engine, queue)];
    }

    /// Whether word `seq` of core `tpb` is known to wait for its
    /// completions before its EVENTS update.
    pub(crate) fn is_update_waiting(&self, tpb: u8, seq: u64) -> bool {
        self.stall.completion.contains_key(&(tpb, seq))
    }

    /// Word `seq` of core `tpb` (labelled `word`) begins to wait for the
    /// completions of `queues` at `cycle` (its doorbells rung).
    pub(crate) fn update_waiting(
        &mut self,
        tpb: u8,
        seq: u64,
        word: String,
        queues: Vec<(u16, u8)>,
        cycle: u64,
    ) {
        self.stall.completion.insert(
            (tpb, seq),
            OpenWait {
                start: cycle,
                word,
                queues,
            },
        );
    }

    /// The completion waits of core `tpb` whose words `still` no longer
    /// lists are over at `cycle` (their EVENTS update applied).
    pub(crate) fn updates_done(&mut self, tpb: u8, still: &dyn Fn(u64) -> bool, cycle: u64) {
        let over: Vec<(u8, u64)> = self
            .stall
            .completion
            .range((tpb, 0)..=(tpb, u64::MAX))
            .filter(|&(&(_, seq), _)| !still(seq))
            .map(|(&k, _)| k)
            .collect();
        for k in over {
            if let Some(w) = self.stall.completion.remove(&k) {
                self.queue_stall(k.0, w, cycle, false);
            }
        }
    }

    /// Core `tpb`'s word `seq` (labelled `word`) issues at `cycle`; its
    /// gate's semaphore is `sem` (region, index) when it had one. Ends its
    /// gate wait.
    pub(crate) fn word_issued(
        &mut self,
        tpb: u8,
        seq: u64,
        word: &str,
        sem: Option<(RegionId, u32)>,
        cycle: u64,
    ) {
        if let Some((start, on)) = self.stall.gate.remove(&(tpb, seq)) {
            let waited = cycle.saturating_sub(start);
            if waited >= LONG_STALL_CYCLES {
                let writer = sem.and_then(|k| self.stall.sem_writers.get(&k).copied());
                let released_by = writer.map_or_else(
                    || "nothing seen".to_string(),
                    |(agent, who, slot)| self.packet_text(agent, who, slot),
                );
                let awaited = writer
                    .and_then(|(agent, ..)| self.agents.get(agent as usize))
                    .map(ToString::to_string)
                    .into_iter()
                    .collect();
                self.stall.list.push(WordStall {
                    word: word.to_string(),
                    tpb,
                    wait: StallWait::EventsGate,
                    on,
                    waited_cycles: waited,
                    cycle,
                    released_by,
                    awaited,
                });
            }
        }
    }

    /// Ends a ring-room (`room`) or completion wait at `cycle`; lists it
    /// when long.
    fn queue_stall(&mut self, tpb: u8, w: OpenWait, cycle: u64, room: bool) {
        let waited = cycle.saturating_sub(w.start);
        if waited < LONG_STALL_CYCLES {
            return;
        }
        // The awaited queue whose last packet completed last.
        let mut last: Option<((u16, u8), LastDone)> = None;
        for &(e, q) in &w.queues {
            let done = self
                .queue_ids
                .get(usize::from(e) * 16 + usize::from(q))
                .and_then(|&a| self.qsync.get(a as usize))
                .and_then(|s| s.last_done);
            if let Some(d) = done
                && last.is_none_or(|(_, l)| d.2 > l.2)
            {
                last = Some(((e, q), d));
            }
        }
        let (engine, queue) = last
            .map(|(k, _)| k)
            .or_else(|| w.queues.first().copied())
            .unwrap_or((0, 0));
        let released_by = last.map_or_else(
            || "nothing seen".to_string(),
            |((e, q), (who, slot, _))| {
                let agent = self
                    .queue_ids
                    .get(usize::from(e) * 16 + usize::from(q))
                    .copied()
                    .unwrap_or(u32::MAX);
                self.packet_text(agent, who, slot)
            },
        );
        let names: Vec<String> = w
            .queues
            .iter()
            .map(|&(e, q)| Agent::Queue(e, q).to_string())
            .collect();
        let (wait, on) = if room {
            (
                StallWait::RingRoom { engine, queue },
                format!("ring room on {}", names.join(", ")),
            )
        } else {
            (
                StallWait::Completion { engine, queue },
                format!("completion of {}", names.join(", ")),
            )
        };
        self.stall.list.push(WordStall {
            word: w.word,
            tpb,
            wait,
            on,
            waited_cycles: waited,
            cycle,
            released_by,
            awaited: names,
        });
    }

    /// `eng0.q0[1] rung by tpb0 word #0 (line 22)`, or `tpb0 firmware (an
    /// EVENTS update)` for a write that was not a packet's.
    fn packet_text(&self, agent: u32, who: u32, slot: u32) -> String {
        let agent_name = self
            .agents
            .get(agent as usize)
            .map_or_else(String::new, ToString::to_string);
        let who = self.labels.get(who as usize).cloned().unwrap_or_default();
        if slot == u32::MAX {
            format!("{agent_name} ({who})")
        } else {
            format!("{agent_name}[{slot}] rung by {who}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stall(word: &str, wait: StallWait, on: &str) -> WordStall {
        WordStall {
            word: word.into(),
            tpb: 0,
            wait,
            on: on.into(),
            waited_cycles: 500,
            cycle: 900,
            released_by: "eng0.q0[3] rung by tpb0 word #0 (line 4)".into(),
            awaited: vec!["eng0.q0".into()],
        }
    }

    #[test]
    fn the_heading_counts_words_and_names_the_kinds_in_a_fixed_order() {
        let gate = stall(
            "tpb0 word #1 (line 5)",
            StallWait::EventsGate,
            "tpb0.sem[2] WAIT_FOR_SEM_GE_IMM",
        );
        // Only gate stalls: the heading of the gate-only summary.
        assert_eq!(
            stalls_text(std::slice::from_ref(&gate)),
            "stalls: 1 word(s) waited at least 100 cycles at their EVENTS gate\n  \
             tpb0 word #1 (line 5) waited 500 cycles on tpb0.sem[2] WAIT_FOR_SEM_GE_IMM \
             (issued at cycle 900; last written by eng0.q0[3] rung by tpb0 word #0 (line 4))\n"
        );
        let done = stall(
            "tpb0 word #1 (line 5)",
            StallWait::Completion {
                engine: 0,
                queue: 0,
            },
            "completion of eng0.q0",
        );
        let room = stall(
            "tpb0 word #2 (line 6)",
            StallWait::RingRoom {
                engine: 0,
                queue: 0,
            },
            "ring room on eng0.q0",
        );
        let text = stalls_text(&[done, gate, room]);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "stalls: 2 word(s) waited at least 100 cycles at their EVENTS gate, \
                 for ring room or for completions"
            )
        );
        assert_eq!(
            lines.next(),
            Some(
                "  tpb0 word #1 (line 5) waited 500 cycles for completion of eng0.q0 \
                 (EVENTS update at cycle 900; last completed eng0.q0[3] rung by tpb0 word #0 (line 4))"
            )
        );
        assert_eq!(lines.clone().count(), 2);
        assert!(
            lines
                .nth(1)
                .unwrap()
                .contains("for ring room on eng0.q0 (room found at cycle 900")
        );
        assert_eq!(stalls_text(&[]), "");
    }
}
