//! What the firmware still has to do, for a wait-for graph and the stall
//! summary (docs/races.md §Deadlocks): the words and calls not yet issued
//! with their EVENTS gates and the semaphores they would update, the word
//! waiting for ring room, and the words in flight.

use super::*;

/// A word or call of a core's queue, or one in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingWork {
    /// The word or call.
    pub inst: InstTag,
    /// Its kind (`DIRECT2D`, `neuron_memcpy`, …).
    pub kind: &'static str,
    /// Issued, waiting for its completions (else still queued).
    pub in_flight: bool,
    /// Its EVENTS gate when it has one that has not passed: (semaphore,
    /// wait mode, `semaphore_value`).
    pub gate: Option<(u8, &'static str, u32)>,
    /// Semaphores of this core it would still write: its EVENTS update
    /// and its completion semaphore (the engines write it).
    pub updates: Vec<u8>,
}

impl Q7Core {
    /// The front word while its EVENTS gate holds it (the gate was checked
    /// and failed, and no semaphore change has released it): its tag, the
    /// semaphore and the wait mode.
    pub fn gate_holding(&self) -> Option<(&InstTag, u8, &'static str)> {
        let q = self.queue.front()?;
        let Work::Inst(w) = &q.work else {
            return None;
        };
        let ev = w.events();
        (q.waiting_reported && !q.gate_passed && q.released_at.is_none())
            .then(|| (&q.tag, ev.wait_idx, ev.wait_mode.name().unwrap_or("?")))
    }

    /// The front word while it waits for ring room (its plan does not fit
    /// the free slots of one engine's rings, docs/firmware.md §Stalls): its
    /// tag, and the device engine id and queue whose completions would
    /// free the room.
    pub fn room_holding(&self) -> Option<(&InstTag, u16, u8)> {
        if !self.blocked_on_space {
            return None;
        }
        let q = self.queue.front()?;
        let (slot, ..) = self.space_wait?;
        let e = self.layout.engines.get(usize::from(slot))?;
        let r = self.rings.get(usize::from(slot))?.as_ref()?;
        Some((&q.tag, e.id, r.queue))
    }

    /// The words in flight whose EVENTS update still waits for their
    /// completions (the firmware polls the completion heads and applies
    /// the update once every engine's reads — `SEM_INC_READ` — or writes
    /// are done; docs/firmware.md §Stalls), oldest first.
    pub fn updates_waiting(&self) -> impl Iterator<Item = &InstTag> {
        self.inflight
            .iter()
            .filter(|f| match f.update {
                Some((UpdateMode::SemIncRead, ..)) => !f.read_done,
                Some(_) => true,
                None => false,
            })
            .map(|f| &f.tag)
    }

    /// The engine queues (device engine id, queue) word `seq` in flight
    /// polls for its completions; empty when it is not in flight.
    pub fn polled_queues(&self, seq: u64) -> Vec<(u16, u8)> {
        let Some(f) = self.inflight.iter().find(|f| f.tag.seq == seq) else {
            return Vec::new();
        };
        let mut out: Vec<(u16, u8)> = Vec::new();
        for &(slot, ..) in &f.targets {
            if let (Some(e), Some(Some(r))) = (
                self.layout.engines.get(usize::from(slot)),
                self.rings.get(usize::from(slot)),
            ) && !out.contains(&(e.id, r.queue))
            {
                out.push((e.id, r.queue));
            }
        }
        out
    }

    /// Everything the core has not finished, in order: the words in flight,
    /// then the queue (its front first).
    pub fn pending(&self) -> Vec<PendingWork> {
        let mut out: Vec<PendingWork> = self
            .inflight
            .iter()
            .map(|f| PendingWork {
                inst: f.tag.clone(),
                kind: f.kind,
                in_flight: true,
                gate: None,
                updates: f.update.map(|(_, idx, _)| idx).into_iter().collect(),
            })
            .collect();
        for q in &self.queue {
            let (gate, updates) = match &q.work {
                Work::Inst(w) => {
                    let ev = w.events();
                    let gate = (!matches!(ev.wait_mode, WaitMode::None)
                        && !q.gate_passed
                        && q.released_at.is_none())
                    .then(|| {
                        (
                            ev.wait_idx,
                            ev.wait_mode.name().unwrap_or("?"),
                            ev.semaphore_value,
                        )
                    });
                    let mut updates = Vec::new();
                    if !matches!(ev.update_mode, UpdateMode::None) {
                        updates.push(ev.update_idx);
                    }
                    if let Some(s) = w
                        .leaves()
                        .iter()
                        .find(|l| l.path == "semaphore")
                        .and_then(|l| l.text.parse::<u8>().ok())
                    {
                        updates.push(s);
                    }
                    (gate, updates)
                }
                Work::Call(_) => (None, Vec::new()),
            };
            out.push(PendingWork {
                inst: q.tag.clone(),
                kind: q.work.name(),
                in_flight: false,
                gate,
                updates,
            });
        }
        out
    }
}
