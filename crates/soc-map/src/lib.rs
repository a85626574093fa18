//! The SoC address map of one Trainium2 device, and the typed addresses used
//! to name bytes in it.
//!
//! The map itself is data (`csr-maps/soc-map.json`, format in
//! `docs/address-map.md`); this crate loads and validates it and decodes any
//! fabric address into the region, partition and offset it falls in.

pub mod addr;
pub mod addr4;
pub mod addr8;
mod expand;
pub mod hex;
pub mod map;
mod name_index;
mod precheck;
pub mod spec;
pub mod table;

pub use addr::{PsumAddr, SbufAddr, SocAddr};
pub use addr4::{Addr4, Addr4Error, Addr4Mode, PartitionOffset, PartitionTarget};
pub use addr8::{Addr8, Addr8Error, TableOffset};
pub use hex::{HEX_PATTERN, HEX32_PATTERN, Hex, Hex32, ParseHexError, hex_string, parse_u64};
pub use map::{Decoded, Hole, MapData, MapError, Partitions, Region, RegionId, SocMap};
pub use precheck::{MAX_NAME_BYTES, MAX_REGIONS, MAX_TEXT_BYTES};
pub use spec::{MapSpec, NodeSpec, PartitionSpec, RegionKind};

/// The built-in Trn2 map, `csr-maps/soc-map.json`.
pub const TRN2_MAP_JSON: &str = include_str!("../../../csr-maps/soc-map.json");

/// Loads the built-in Trn2 map.
pub fn trn2() -> Result<SocMap, MapError> {
    // Parsed once per process; every caller shares it (a clone is a reference count).
    static MAP: std::sync::OnceLock<Result<SocMap, MapError>> = std::sync::OnceLock::new();
    MAP.get_or_init(|| SocMap::from_json(TRN2_MAP_JSON, "csr-maps/soc-map.json"))
        .clone()
}
