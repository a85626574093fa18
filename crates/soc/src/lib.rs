//! One Trainium2 device assembled from the address map, the memories and the
//! CSR blocks, plus the trace executor that drives it.

pub mod describe;
pub mod device;
pub mod exec;
pub mod fault;
pub mod firmware;
pub mod input;
pub mod memory;
pub mod race;
pub mod record;
pub mod resolve;
pub mod setup;
pub mod workload;

pub use describe::{AddressInfo, describe};
pub use device::{
    BlockSnapshot, CsrSnapshot, Device, DeviceError, DeviceEvent, HostWait, NextPick, RegWrite,
    WaitGraph, WaitNode,
};
pub use fault::BusFault;
pub use race::{RaceReport, RaceSide, RaceSummary, StallWait, UninitFill, WordStall};
pub use record::{Master, Waves};
pub use resolve::{ResolveError, Resolved, resolve};
