//! Checkpoints for reverse execution (docs/user-guide.md §12 "Going
//! back"): copies of the whole simulated state a session owns — the host
//! session with its runtime, kernel driver and device
//! ([`host_exec::HostSession::try_clone`]), the trace's execution and what
//! the session's views remember — taken every
//! [`CheckpointConfig::interval_events`] simulator events, so that going
//! back restores the nearest one at or before the target and replays at
//! most an interval of events, not the trace from its start.
//!
//! Device memory pages are shared between the live device and its copies
//! until one side writes a page (copy on write), so a checkpoint costs the
//! device's state plus the pages written since. What the checkpoints hold
//! together (pages no other checkpoint or the live device holds, counted
//! once) is kept under [`CheckpointConfig::budget_bytes`]: over it, every
//! second checkpoint after the first is dropped and the interval doubles.

use std::collections::{BTreeMap, HashSet, VecDeque};

use host_exec::HostSession;
use soc::DeviceEvent;
use soc::exec::Execution;

use crate::session::Mark;

/// How often checkpoints are taken and how much host memory they may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Simulator events ([`soc::Device::events_processed`]) between two
    /// checkpoints (at least 1).
    pub interval_events: u64,
    /// Host memory the checkpoints may hold, in bytes.
    pub budget_bytes: u64,
}

/// The default interval: a go-back replays at most about this many
/// events, a few hundredths of a second of host time in an optimised build
/// (measured on `traces/calib/chip-8-cores-hbm.trace`; docs/user-guide.md
/// §12 "Going back" says why and what smaller intervals cost).
pub const DEFAULT_INTERVAL_EVENTS: u64 = 10_000;

/// The default memory budget: 256 MiB.
pub const DEFAULT_BUDGET_BYTES: u64 = 256 << 20;

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            interval_events: DEFAULT_INTERVAL_EVENTS,
            budget_bytes: DEFAULT_BUDGET_BYTES,
        }
    }
}

/// The state of a session at one point of its history.
pub(crate) struct Checkpoint {
    /// Where: a restored session stands exactly here.
    pub(crate) mark: Mark,
    /// Journal entries made before it (pokes with a lower index ran).
    pub(crate) journal_len: usize,
    pub(crate) host: HostSession,
    pub(crate) exec: Execution,
    /// Events the session's sink held, not yet taken.
    pub(crate) sink: Vec<DeviceEvent>,
    pub(crate) recent: VecDeque<DeviceEvent>,
    /// The length of the session's timeline (a prefix of the live one).
    pub(crate) timeline_len: Option<usize>,
    pub(crate) micro_ops: BTreeMap<u8, Vec<String>>,
    pub(crate) words_done: BTreeMap<(u8, u64), u64>,
    pub(crate) words_seen: std::collections::BTreeSet<(u8, u64)>,
    /// The statement last started.
    pub(crate) index: usize,
    pub(crate) ended: bool,
    pub(crate) last_cycle: u64,
    /// Host bytes of its state other than memory pages (an estimate).
    pub(crate) state_bytes: u64,
}

/// The checkpoints of a session and what they cost.
pub(crate) struct Checkpoints {
    pub(crate) list: Vec<Checkpoint>,
    pub(crate) config: CheckpointConfig,
    /// The interval now (doubled each time the budget thinned the list).
    pub(crate) interval_events: u64,
    /// Why the state cannot be copied, once a copy failed: going back
    /// replays from the start of the trace on a fresh device.
    pub(crate) unavailable: Option<String>,
    /// Not taking checkpoints (reverse execution off, or a replay).
    pub(crate) off: bool,
    /// Times the budget thinned the list.
    pub(crate) thinned: u32,
    /// Bytes held, as last counted.
    pub(crate) bytes: u64,
}

impl Checkpoints {
    pub(crate) fn new() -> Checkpoints {
        let config = CheckpointConfig::default();
        Checkpoints {
            list: Vec::new(),
            config,
            interval_events: config.interval_events,
            unavailable: None,
            // On once reverse execution is (a device factory given).
            off: true,
            thinned: 0,
            bytes: 0,
        }
    }

    /// Whether a checkpoint is due at `events` processed.
    pub(crate) fn next_due(&self) -> Option<u64> {
        if self.off || self.unavailable.is_some() {
            return None;
        }
        Some(match self.list.last() {
            Some(c) => c.mark.events.saturating_add(self.interval_events.max(1)),
            None => 0,
        })
    }

    /// The latest checkpoint for which `ok` holds (they are in mark order).
    pub(crate) fn latest(&self, ok: impl Fn(&Checkpoint) -> bool) -> Option<usize> {
        self.list.iter().rposition(ok)
    }

    /// Adds `c` (after every checkpoint held) and keeps the list within
    /// the budget; `live` are the page identities of the live device.
    pub(crate) fn push(&mut self, c: Checkpoint, live: &HashSet<usize>) {
        self.list.push(c);
        self.bytes = self.count_bytes(live);
        while self.bytes > self.config.budget_bytes && self.list.len() > 2 {
            // Keep the first (the start of the trace) and every second one
            // after it; the interval doubles to match.
            let mut i = 0;
            self.list.retain(|_| {
                let keep = i % 2 == 0;
                i += 1;
                keep
            });
            self.interval_events = self.interval_events.saturating_mul(2);
            self.thinned += 1;
            self.bytes = self.count_bytes(live);
        }
    }

    /// Drops the checkpoints after `mark` (going back starts a new history
    /// there).
    pub(crate) fn forget_after(&mut self, mark: Mark, live: &HashSet<usize>) {
        self.list.retain(|c| c.mark <= mark);
        self.bytes = self.count_bytes(live);
    }

    /// Host memory the checkpoints hold: each distinct page none of them
    /// shares with the live device, once, and each one's other state.
    fn count_bytes(&mut self, live: &HashSet<usize>) -> u64 {
        let mut pages = HashSet::new();
        let mut state = 0u64;
        for c in &mut self.list {
            state = state.saturating_add(c.state_bytes);
            for id in c.host.device_mut().page_ids() {
                if !live.contains(&id) {
                    pages.insert(id);
                }
            }
        }
        state.saturating_add(pages.len() as u64 * mem::PAGE_BYTES as u64)
    }
}
