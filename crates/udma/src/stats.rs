//! Per-queue figures for run summaries.

use serde::Serialize;

/// What one queue of one engine did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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
