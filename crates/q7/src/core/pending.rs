//! What the firmware still has to do, for a wait-for graph (docs/races.md
//! §Deadlocks): the words and calls not yet issued with their EVENTS gates
//! and the semaphores they would update, and the words in flight.

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
