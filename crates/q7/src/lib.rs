//! The Q7 firmware of one NeuronCore (docs/references/design.md §2 "Q7 firmware"; P9.1 §2,
//! §6.3, §8): it takes the 64-byte DMA instruction words from its
//! instruction queue, gates each on its EVENTS wait, **expands** it into
//! 16-byte descriptors in the DGE carve-out spread over the core's 16 DMA
//! engines, rings the doorbells through the queue CSRs, and completes
//! through the semaphore increment every participating engine writes.
//!
//! * [`layout`]: where the firmware's registers, semaphores, carve-out and
//!   engine queues sit (built by the device from the SoC and CSR maps).
//! * [`plan`]: the pure expansion of one word into DGE micro-ops and
//!   per-engine descriptor pairs (testable without a device).
//! * [`core`]: the firmware state machine over a [`FwBus`].
//!
//! Simulator decisions (no published source) are documented in
//! `docs/firmware.md`.

pub mod core;
pub mod idma;
pub mod inline;
pub mod layout;
pub mod plan;

pub use crate::core::{
    FwBus, FwCall, FwEvent, FwEventKind, FwWait, InstTag, KindStats, PendingWork, Q7Core, Refusal,
    WakeNeed,
};
pub use layout::{CoreLayout, DgeConfig, EngineLayout, PeerLayout, QueueRegs};
pub use plan::{
    DescPair, EnginePlan, MicroOp, Operands, PairExtras, PartitionSpan, Plan, PlanError, TxSource,
    expand, expand_reusing,
};
