//! The host runtime's device-memory allocator (seed 000, DESIGN §3 L5).

pub mod dml;
pub mod types;

pub use types::{DmemAction, MemLocation, NrtStatus, USAGE_TYPES, UsageType, category_for};
