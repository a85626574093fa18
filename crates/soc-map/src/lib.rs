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
mod image;
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
    MAP.get_or_init(|| {
        // The expansion build.rs made of this very file, when it made one;
        // otherwise (or if it does not read) the map is expanded here.
        if let Ok(spec) = serde_json::from_str::<MapSpec>(TRN2_MAP_JSON)
            && let Some(data) = image::decode(spec, TRN2_IMAGE, TRN2_IMAGE_TEXT)
        {
            return Ok(SocMap::from_data(data));
        }
        SocMap::from_json(TRN2_MAP_JSON, TRN2_MAP_PATH)
    })
    .clone()
}

/// Where [`TRN2_MAP_JSON`] comes from, as errors name it.
const TRN2_MAP_PATH: &str = "csr-maps/soc-map.json";

/// The built-in map as `build.rs` expanded it ([`image`]); empty when the
/// JSON did not expand then (the process expands it and reports why).
const TRN2_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/trn2-map.bin"));
const TRN2_IMAGE_TEXT: &str = include_str!(concat!(env!("OUT_DIR"), "/trn2-map.txt"));
