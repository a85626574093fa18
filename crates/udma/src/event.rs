//! What an engine did, for run reports, the debugger and trace sinks.

use serde::Serialize;
use soc_map::Hex;

use crate::block::Dir;

/// One engine event, stamped with its cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EngineEvent {
    /// Simulated cycle.
    pub cycle: u64,
    /// Engine id (0..132).
    pub engine: u16,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The kinds of engine event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A tail-increment doorbell took effect.
    Doorbell {
        /// Direction.
        dir: Dir,
        /// Queue.
        queue: u8,
        /// Descriptors added.
        increment: u32,
        /// New tail offset.
        tail: u32,
        /// Ring id at the tail.
        tail_ring_id: u8,
    },
    /// Descriptors were prefetched from the ring.
    Prefetch {
        /// Direction.
        dir: Dir,
        /// Queue.
        queue: u8,
        /// Ring index of the first descriptor.
        first_index: u32,
        /// Descriptors fetched.
        count: u32,
        /// New head offset.
        head: u32,
        /// Ring id expected at the head.
        head_ring_id: u8,
    },
    /// A packet entered the data path.
    PacketStart {
        /// Queue.
        queue: u8,
        /// TX descriptors in the packet (JSON `tx_descriptors`, as in the
        /// run summary).
        #[serde(rename = "tx_descriptors")]
        tx_descs: u32,
        /// RX descriptors it fills (JSON `rx_descriptors`).
        #[serde(rename = "rx_descriptors")]
        rx_descs: u32,
        /// Payload bytes.
        bytes: u64,
        /// Cycle its last byte is written.
        done_at: u64,
        /// The first TX descriptor's buffer (where the packet reads from).
        src: Hex,
        /// The first RX descriptor's buffer (where the packet writes to).
        dst: Hex,
    },
    /// A packet's data landed and its descriptors completed.
    PacketDone {
        /// Queue.
        queue: u8,
        /// Payload bytes written.
        bytes: u64,
        /// CME result (CRC/checksum), if the packet computed one.
        #[serde(skip_serializing_if = "Option::is_none")]
        checksum: Option<soc_map::Hex32>,
    },
    /// A hardware error: cause bit set, and what it did.
    Fault {
        /// Direction (or the queue's direction) concerned.
        dir: Dir,
        /// Queue, when queue-specific.
        #[serde(skip_serializing_if = "Option::is_none")]
        queue: Option<u8>,
        /// Cause register and field, e.g. `SEC_A_INT_CAUSE.PREF_RING_ID`.
        cause: String,
        /// Details (address, expected/found).
        detail: String,
        /// `abort`, `queue_non_active`, `masked` or `logged`.
        action: String,
    },
    /// An engine direction changed state.
    State {
        /// Direction.
        dir: Dir,
        /// `disable`, `normal`, `abort`.
        state: String,
    },
    /// A queue was reset through Q_SW_CTRL.
    QueueReset {
        /// Direction.
        dir: Dir,
        /// Queue.
        queue: u8,
        /// The Q_SW_CTRL bits written.
        bits: u32,
    },
    /// A ring configuration that breaks the driver's limits
    /// (docs/references/driver.md §3.7); the hardware carries on.
    RingWarning {
        /// Direction.
        dir: Dir,
        /// Queue.
        queue: u8,
        /// What is off.
        detail: String,
    },
}
