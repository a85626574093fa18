//! Per-queue figures for run summaries.

use serde::Serialize;

/// What one queue of one engine did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct QueueStats {
    /// Packets moved.
    pub packets: u64,
    /// TX (M2S) descriptors completed.
    pub tx_descs: u64,
    /// RX (S2M) descriptors completed.
    pub rx_descs: u64,
    /// Payload bytes written.
    pub bytes: u64,
    /// Data-path cycles spent on this queue.
    pub busy_cycles: u64,
    /// Cycle the first packet started.
    pub first_start: Option<u64>,
    /// Cycle the last packet landed.
    pub last_done: Option<u64>,
}

/// A hardware check an engine could not make in timing-only mode, because
/// what it compares was computed from bytes no copy moved; the engine
/// carried on as if it passed (docs/user-guide.md §11, "Timing-only mode").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UncheckedTally {
    /// Queue whose packet held the check.
    pub queue: u8,
    /// The check, e.g. `validate_crc`.
    pub check: &'static str,
    /// Times not made.
    pub count: u64,
    /// Cycle of the first.
    pub first_cycle: u64,
    /// The first one's details.
    pub detail: String,
}

/// One kind of hardware fault an engine raised: the cause bit, where it
/// was raised, what the engine did, and how often (docs/user-guide.md
/// §Faults).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FaultTally {
    /// Direction concerned.
    pub dir: crate::block::Dir,
    /// Queue, when the cause is queue-specific.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u8>,
    /// Cause register and field, e.g. `SEC_B_INT_CAUSE.DATA_WR_AXI_RESPONSE`.
    pub cause: String,
    /// `abort` (the direction stopped), `logged` (interrupt raised, abort
    /// masked) or `masked` (interrupt masked too).
    pub action: &'static str,
    /// Times raised.
    pub count: u64,
    /// Cycle of the first.
    pub first_cycle: u64,
    /// The first one's details (address, expected/found).
    pub detail: String,
}

impl FaultTally {
    /// True when the fault stopped work or raised an interrupt: what
    /// `--fail-on-fault` counts (a masked cause is configured away).
    pub fn is_unmasked(&self) -> bool {
        self.action != "masked"
    }
}
