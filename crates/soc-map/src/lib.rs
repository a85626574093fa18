//! The SoC address map of one Trainium2 device, and the typed addresses used
//! to name bytes in it.
//!
//! The map itself is data (`csr-maps/soc-map.json`); this crate loads and
//! validates it and decodes any fabric address into the region, partition and
//! offset it falls in.

pub mod addr;
pub mod hex;

pub use addr::{PsumAddr, SbufAddr, SocAddr};
pub use hex::{Hex, Hex32, ParseHexError, parse_u64};
