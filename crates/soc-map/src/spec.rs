//! The JSON form of the SoC address map (`csr-maps/soc-map.json`), as
//! documented in `docs/address-map.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::hex::Hex;

/// The whole map file.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {
    /// Device name, e.g. `trn2`.
    pub device: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Reusable child lists, pulled in with `include`.
    #[serde(default)]
    pub templates: BTreeMap<String, Vec<NodeSpec>>,
    /// Top-level regions with absolute bases.
    pub regions: Vec<NodeSpec>,
}

/// What a region holds.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Deserialize,
    Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// Only groups children; bytes outside every child are holes.
    Container,
    /// Plain byte-addressed memory (HBM, scratch RAM, DGE memory, Q7 RAMs).
    Memory,
    /// SBUF: partitioned memory.
    Sbuf,
    /// PSUM: partitioned memory with banks.
    Psum,
    /// Host memory reached through the PCIe host bit.
    Host,
    /// A CSR block (see `block`).
    Csr,
    /// Decoded but reserved: every access faults.
    Reserved,
}

/// Partition geometry of an SBUF/PSUM region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    /// Number of partitions.
    #[serde(deserialize_with = "count_u32")]
    #[schemars(with = "Hex")]
    pub count: u32,
    /// Address stride between partitions.
    pub stride: Hex,
    /// Bytes backed in each partition; the rest of the stride faults.
    pub populated: Hex,
    /// Bank size (PSUM), if banked.
    #[serde(default)]
    pub bank: Option<Hex>,
}

/// One node of the map tree. Placement is either a single `base`, an array
/// (`base` + `count` + `stride`), or explicit `instances`.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Name stem; arrays append the instance index (`eng` → `eng12`).
    pub name: String,
    /// What the region holds; defaults to `container` when it has children.
    #[serde(default)]
    pub kind: Option<RegionKind>,
    /// Base (absolute at top level, else relative to the parent).
    #[serde(default)]
    pub base: Option<Hex>,
    /// Number of array instances (needs `stride`).
    #[serde(default, deserialize_with = "opt_count_u32")]
    #[schemars(with = "Option<Hex>")]
    pub count: Option<u32>,
    /// Distance between array instances.
    #[serde(default)]
    pub stride: Option<Hex>,
    /// Explicit instance bases (instead of `base`/`count`/`stride`).
    #[serde(default)]
    pub instances: Option<Vec<Hex>>,
    /// Index of the first instance in names (default 0).
    #[serde(default, deserialize_with = "opt_count_u32")]
    #[schemars(with = "Option<Hex>")]
    pub first_index: Option<u32>,
    /// Keep this child only under these array indices of its parent
    /// (local position in the parent's array, 0-based).
    #[serde(default)]
    pub only_parent_indices: Option<Vec<u32>>,
    /// Size of one instance in bytes.
    pub size: Hex,
    /// Address window the instance occupies, when larger than `size`
    /// (e.g. a 24 GiB HBM stack in a 64 GiB window). Informational.
    #[serde(default)]
    pub window: Option<Hex>,
    /// CSR block map name (`csr-maps/<block>.json`) for `csr` regions, or
    /// the registers a container has at its own offsets.
    #[serde(default)]
    pub block: Option<String>,
    /// SBUF/PSUM geometry.
    #[serde(default)]
    pub partitions: Option<PartitionSpec>,
    /// A sibling array this region mirrors: instance *i* aliases instance *i*
    /// of that sibling at offset 0.
    #[serde(default)]
    pub alias_of: Option<String>,
    /// Symbolic shortcuts accepted by traces below this node, e.g.
    /// `"sem.inc": "evt_sem.SEM_INC"`.
    #[serde(default)]
    pub symbols: BTreeMap<String, String>,
    /// Pull in the children of these templates (before `children`).
    #[serde(default)]
    pub include: Vec<String>,
    /// Children (relative bases).
    #[serde(default)]
    pub children: Vec<NodeSpec>,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from (spec section).
    #[serde(default)]
    pub source: String,
}

impl NodeSpec {
    /// True when the node describes an array (indexed names).
    pub fn is_array(&self) -> bool {
        self.count.is_some() || self.instances.is_some() || self.first_index.is_some()
    }
}

/// A count or index: a `"0x…"` string or an integer, as every number of
/// the map (docs/address-map.md), at most `u32::MAX`.
fn count_u32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let Hex(v) = Hex::deserialize(d)?;
    u32::try_from(v).map_err(|_| serde::de::Error::custom(format!("{v:#x} is past 32 bits")))
}

/// [`count_u32`] of an optional field.
fn opt_count_u32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    count_u32(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` and `first_index` take `"0x…"` strings as every number of
    /// the map does (docs/address-map.md); past 32 bits they are refused.
    /// Found by a review (a string was "expected u32").
    #[test]
    fn counts_and_indices_take_hex_strings() {
        let node: NodeSpec = serde_json::from_str(
            r#"{"name": "x", "kind": "memory", "base": "0x1000", "size": "0x10",
                "count": "0x4", "stride": "0x10", "first_index": "0x2"}"#,
        )
        .unwrap();
        assert_eq!((node.count, node.first_index), (Some(4), Some(2)));
        let node: NodeSpec = serde_json::from_str(
            r#"{"name": "x", "kind": "memory", "base": "0x1000", "size": "0x10", "count": 4, "stride": "0x10"}"#,
        )
        .unwrap();
        assert_eq!(node.count, Some(4));
        let e = serde_json::from_str::<NodeSpec>(
            r#"{"name": "x", "base": "0x0", "size": "0x10", "count": "0x100000000", "stride": "0x10"}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("past 32 bits"), "{e}");
        let p: PartitionSpec = serde_json::from_str(
            r#"{"count": "0x80", "stride": "0x40000", "populated": "0x38000"}"#,
        )
        .unwrap();
        assert_eq!(p.count, 128);
    }
}
