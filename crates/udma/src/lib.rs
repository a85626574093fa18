//! The udma engines (M2S/S2M queues, rings, doorbells, errors) and the SDMA
//! data path that consumes 16-byte descriptors (docs/references/design.md §2–3, P9.1 §3–4,
//! docs/references/driver.md §2–3).
//!
//! Every behaviour starts from a register write: the owner (the `soc`
//! device) routes CSR accesses of a unit's blocks to [`Engine::mmio_write`]
//! and advances time with [`Engine::step`].

pub mod block;
pub mod datapath;
pub mod desc;
pub mod engine;
pub mod event;
pub mod regs;
pub mod stats;

pub use block::{Dir, QUEUES, UnitBlock};
pub use engine::{DirState, Engine, EngineFactory, FAULT_CAUSES, JITTER_MAX_CYCLES, PrefetchOff};
pub use event::{EngineEvent, EventKind};
pub use regs::{MapMismatch, UnitMaps};
pub use stats::{FaultTally, QueueStats, UncheckedTally};
