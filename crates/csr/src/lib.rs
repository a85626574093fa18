//! CSR register maps as data, and the register-file runtime.
//!
//! Registers are data (docs/references/design.md §3): every block type's map lives in
//! `csr-maps/<block>.json` (format: `docs/csr-map-format.md`). This crate
//! loads and validates those maps ([`CsrMap::from_json`]), embeds the
//! built-in ones ([`catalog()`]), runs one block instance's registers
//! ([`RegFile`]: access semantics, side effects for the owning hardware model,
//! snapshots) and renders the `docs/csr/` tables ([`docgen`]).
//!
//! ```
//! let catalog = csr::catalog().map_err(|e| e.to_string())?;
//! let map = catalog.block("udma_m2s_q").ok_or("no map")?;
//! let mut regs = csr::RegFile::new(map);
//! let doorbell = map.find("tdrtp_inc", None).ok_or("no doorbell")?;
//! let out = regs.write(doorbell, 3).map_err(|e| e.to_string())?;
//! assert_eq!(out.increment(), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod access;
pub mod catalog;
pub mod docgen;
pub mod error;
pub mod listing;
pub mod map;
mod raw;
pub mod regfile;

pub use access::Access;
pub use catalog::{BUILTIN_MAPS, BuiltinMap, Catalog, catalog};
pub use error::{CsrAccessError, CsrMapError, CsrMapErrorDetails, CsrMapErrorKind};
pub use map::{ArraySpec, CsrMap, FieldSpec, LookupError, RegMasks, RegRef, RegisterSpec};
pub use regfile::{CsrDump, CsrDumpEntry, Delta, HwSlot, ReadOutcome, RegFile, WriteOutcome};
