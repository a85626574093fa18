//! The built-in maps (`csr-maps/*.json`, embedded at build time) and the
//! process-wide catalog of them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::error::{CsrMapError, CsrMapErrorDetails, CsrMapErrorKind};
use crate::map::CsrMap;

/// One embedded map file.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinMap {
    /// Block type name; must equal the file's `block`.
    pub block: &'static str,
    /// Repository-relative path of the JSON file.
    pub path: &'static str,
    /// The file's text.
    pub json: &'static str,
}

/// Every map under `csr-maps/` that describes a register block, in
/// documentation order.
pub const BUILTIN_MAPS: &[BuiltinMap] = &[
    BuiltinMap {
        block: "udma_m2s",
        path: "csr-maps/udma_m2s.json",
        json: include_str!("../../../csr-maps/udma_m2s.json"),
    },
    BuiltinMap {
        block: "udma_m2s_q",
        path: "csr-maps/udma_m2s_q.json",
        json: include_str!("../../../csr-maps/udma_m2s_q.json"),
    },
    BuiltinMap {
        block: "udma_s2m",
        path: "csr-maps/udma_s2m.json",
        json: include_str!("../../../csr-maps/udma_s2m.json"),
    },
    BuiltinMap {
        block: "udma_s2m_q",
        path: "csr-maps/udma_s2m_q.json",
        json: include_str!("../../../csr-maps/udma_s2m_q.json"),
    },
    BuiltinMap {
        block: "udma_gen",
        path: "csr-maps/udma_gen.json",
        json: include_str!("../../../csr-maps/udma_gen.json"),
    },
    BuiltinMap {
        block: "udma_gen_ex",
        path: "csr-maps/udma_gen_ex.json",
        json: include_str!("../../../csr-maps/udma_gen_ex.json"),
    },
    BuiltinMap {
        block: "sdma_app",
        path: "csr-maps/sdma_app.json",
        json: include_str!("../../../csr-maps/sdma_app.json"),
    },
    BuiltinMap {
        block: "notific",
        path: "csr-maps/notific.json",
        json: include_str!("../../../csr-maps/notific.json"),
    },
    BuiltinMap {
        block: "evt_sem",
        path: "csr-maps/evt_sem.json",
        json: include_str!("../../../csr-maps/evt_sem.json"),
    },
    BuiltinMap {
        block: "q7_local_reg",
        path: "csr-maps/q7_local_reg.json",
        json: include_str!("../../../csr-maps/q7_local_reg.json"),
    },
];

/// A set of loaded maps, by block name.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    maps: BTreeMap<String, CsrMap>,
    order: Vec<String>,
}

impl Catalog {
    /// Loads and validates every built-in map.
    pub fn builtin() -> Result<Catalog, CsrMapError> {
        let mut catalog = Catalog::default();
        for b in BUILTIN_MAPS {
            // Parsed when the crate was built (build.rs); a file that did
            // not parse then is parsed, and its error reported, here.
            let map = match parsed::builtin_raw(b.path) {
                Some(raw) => CsrMap::from_static_raw(raw, b.path)?,
                None => CsrMap::from_static_json(b.json, b.path)?,
            };
            if map.block() != b.block {
                return Err(CsrMapError::new(CsrMapErrorDetails {
                    source_name: b.path.to_string(),
                    block: Some(map.block().to_string()),
                    register: None,
                    field: None,
                    path: "block".to_string(),
                    kind: CsrMapErrorKind::BlockNameMismatch {
                        expected: b.block.to_string(),
                    },
                }));
            }
            catalog.insert(map);
        }
        Ok(catalog)
    }

    /// Adds (or replaces) a map.
    pub fn insert(&mut self, map: CsrMap) {
        let name = map.block().to_string();
        if !self.maps.contains_key(&name) {
            self.order.push(name.clone());
        }
        self.maps.insert(name, map);
    }

    /// The map of block type `name` (case-insensitive).
    pub fn block(&self, name: &str) -> Option<&CsrMap> {
        // Keys are lower case: most callers pass a key as it is, so look it
        // up before paying for a lower-cased copy.
        match self.maps.get(name) {
            Some(m) => Some(m),
            None if name.bytes().any(|c| c.is_ascii_uppercase()) => {
                self.maps.get(&name.to_ascii_lowercase())
            }
            None => None,
        }
    }

    /// Block names in insertion (documentation) order.
    pub fn block_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.order.iter().map(String::as_str)
    }

    /// The maps in insertion (documentation) order.
    pub fn maps(&self) -> impl Iterator<Item = &CsrMap> + '_ {
        self.order.iter().filter_map(|n| self.maps.get(n))
    }
}

/// The built-in catalog, loaded once per process. A broken built-in map is a
/// build defect (the test suite loads every map), but it is still reported as
/// an error here rather than a panic.
pub fn catalog() -> Result<&'static Catalog, CsrMapError> {
    static CATALOG: OnceLock<Result<Catalog, CsrMapError>> = OnceLock::new();
    CATALOG
        .get_or_init(Catalog::builtin)
        .as_ref()
        .map_err(Clone::clone)
}

/// The built-in maps as `build.rs` parsed them: `builtin_raw(path)`.
mod parsed {
    use std::borrow::Cow;

    use soc_map::Hex;

    use crate::raw::{RawArray, RawField, RawMap, RawRegister};

    include!(concat!(env!("OUT_DIR"), "/builtin_raw.rs"));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;

    /// What build.rs wrote for every built-in map equals parsing its JSON
    /// now, and builds the same map.
    #[test]
    fn the_maps_parsed_at_build_time_are_the_json() {
        for b in BUILTIN_MAPS {
            let parsed = parsed::builtin_raw(b.path).expect("parsed at build time");
            let now: crate::raw::RawMap<'_> = serde_json::from_str(b.json).expect("parses");
            assert_eq!(*parsed, now, "{}", b.path);
            let built = CsrMap::from_static_raw(parsed, b.path).expect("valid");
            let from_json = CsrMap::from_json(b.json, b.path).expect("valid");
            assert_eq!(format!("{built:?}"), format!("{from_json:?}"), "{}", b.path);
        }
        assert!(parsed::builtin_raw("csr-maps/soc-map.json").is_none());
    }
}
