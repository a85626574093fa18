//! The built-in map, expanded when the crate is built: `build.rs` expands
//! and validates `csr-maps/soc-map.json` with this crate's own code and
//! writes the regions, the node texts and the name index as an image
//! ([`encode`]); a process rebuilds the map from the image ([`decode`])
//! instead of expanding it again (docs/address-map.md). The JSON stays the
//! source of truth: the image is made from it at every build, and a map
//! given by a user is expanded at run time as always.
//!
//! Layout, little-endian: a header of counts, then the nodes, the roots,
//! the child lists, the regions and the name index slots. Strings live in a
//! separate text (offset and length here).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::map::{FlatDecode, MapData, NodeText, Partitions, Region, RegionId};
use crate::name_index::NameIndex;
use crate::spec::{MapSpec, RegionKind};

const KINDS: [RegionKind; 7] = [
    RegionKind::Container,
    RegionKind::Memory,
    RegionKind::Sbuf,
    RegionKind::Psum,
    RegionKind::Host,
    RegionKind::Csr,
    RegionKind::Reserved,
];

/// Bytes of one region record.
const REGION_BYTES: usize = 96;

const HAS_INDEX: u32 = 1;
const HAS_ALIAS: u32 = 1 << 1;
const HAS_WINDOW: u32 = 1 << 2;
const HAS_PARENT: u32 = 1 << 3;
const HAS_PARTITIONS: u32 = 1 << 4;
const HAS_BANK: u32 = 1 << 5;

/// Writes `map` as an image: (bytes, text).
#[allow(dead_code)] // used by build.rs, which includes this module
pub(crate) fn encode(map: &MapData) -> (Vec<u8>, String) {
    let mut w = Writer::default();
    // Nodes by their shared text (one per map node).
    let mut nodes: Vec<&Region> = Vec::new();
    let mut node_of: Vec<u32> = Vec::with_capacity(map.regions.len());
    for r in &map.regions {
        let i = match nodes.iter().position(|n| Arc::ptr_eq(&n.node, &r.node)) {
            Some(i) => i,
            None => {
                nodes.push(r);
                nodes.len() - 1
            }
        };
        node_of.push(i as u32);
    }
    let children: usize = map.regions.iter().map(|r| r.children.len()).sum();
    let (slots, names) = map.by_name.parts();
    for n in [
        nodes.len(),
        map.regions.len(),
        map.roots.len(),
        children,
        slots.len(),
        names,
    ] {
        w.u32(n as u32);
    }
    for n in &nodes {
        w.str(n.stem());
        w.str(n.description());
        w.str(n.source());
        match &n.block {
            Some(b) => {
                w.u32(1);
                w.str(b);
            }
            None => w.u32(0),
        }
        w.u32(n.symbols().len() as u32);
        for (k, v) in n.symbols() {
            w.str(k);
            w.str(v);
        }
    }
    for &id in &map.roots {
        w.u32(id as u32);
    }
    for r in &map.regions {
        for &c in &r.children {
            w.u32(c as u32);
        }
    }
    let mut child_at = 0u32;
    for (r, node) in map.regions.iter().zip(&node_of) {
        let mut flags = 0;
        for (bit, on) in [
            (HAS_INDEX, r.index.is_some()),
            (HAS_ALIAS, r.alias_of.is_some()),
            (HAS_WINDOW, r.window_bytes.is_some()),
            (HAS_PARENT, r.parent.is_some()),
            (HAS_PARTITIONS, r.partitions.is_some()),
            (
                HAS_BANK,
                r.partitions.is_some_and(|p| p.bank_bytes.is_some()),
            ),
        ] {
            if on {
                flags |= bit;
            }
        }
        let p = r.partitions.unwrap_or(Partitions {
            count: 0,
            stride_bytes: 0,
            populated_bytes: 0,
            bank_bytes: None,
        });
        // One REGION_BYTES record (offsets in `decode`).
        w.u32(flags);
        w.str(&r.name);
        w.u32(*node);
        w.u32(KINDS.iter().position(|k| *k == r.kind).unwrap_or(0) as u32);
        w.u32(r.index.unwrap_or(0));
        w.u32(r.alias_of.unwrap_or(0) as u32);
        w.u32(r.parent.unwrap_or(0) as u32);
        w.u32(child_at);
        w.u32(r.children.len() as u32);
        child_at += r.children.len() as u32;
        w.u32(p.count);
        w.u32(0);
        w.u64(r.base);
        w.u64(r.size_bytes);
        w.u64(r.window_bytes.unwrap_or(0));
        w.u64(p.stride_bytes);
        w.u64(p.populated_bytes);
        w.u64(p.bank_bytes.unwrap_or(0));
    }
    for &s in slots {
        w.u64(s);
    }
    // The flattened decode, so that no process builds it again.
    let flat = FlatDecode::build(&map.regions, &map.roots);
    let (starts, lasts, ids) = flat.parts();
    w.u32(starts.len() as u32);
    for &v in starts.iter().chain(lasts) {
        w.u64(v);
    }
    for &id in ids {
        w.u32(id as u32);
    }
    (w.bytes, w.text)
}

/// The map of `spec` from its image; `None` when the image does not read
/// (the caller then expands the spec).
pub(crate) fn decode(spec: MapSpec, bytes: &[u8], text: &'static str) -> Option<MapData> {
    let mut r = Reader { bytes, at: 0, text };
    let n_nodes = r.len()?;
    let n_regions = r.len()?;
    let n_roots = r.len()?;
    let n_children = r.len()?;
    let n_slots = r.len()?;
    let n_names = r.len()?;
    let mut nodes = Vec::with_capacity(n_nodes.min(bytes.len()));
    for _ in 0..n_nodes {
        let stem = r.str()?;
        let description = r.str()?;
        let source = r.str()?;
        let block: Option<Arc<str>> = match r.u32()? {
            0 => None,
            _ => Some(r.str()?.into()),
        };
        let mut symbols = BTreeMap::new();
        for _ in 0..r.u32()? {
            let k = r.str()?;
            symbols.insert(k.to_string(), r.str()?.to_string());
        }
        let text = Arc::new(NodeText {
            stem: stem.into(),
            symbols,
            description: description.into(),
            source: source.into(),
        });
        nodes.push((text, block));
    }
    let mut roots = Vec::with_capacity(n_roots.min(bytes.len()));
    for _ in 0..n_roots {
        roots.push(r.len()?);
    }
    let children_at = r.at;
    let children = bytes.get(children_at..children_at.checked_add(n_children.checked_mul(4)?)?)?;
    r.at += children.len();
    let mut regions = Vec::with_capacity(n_regions.min(bytes.len()));
    for _ in 0..n_regions {
        let rec: &[u8; REGION_BYTES] = r.take_ref()?;
        let u32_at = |at: usize| le::<4>(rec, at).map_or(0, u32::from_le_bytes);
        let u64_at = |at: usize| le::<8>(rec, at).map_or(0, u64::from_le_bytes);
        let usize_at = |at: usize| usize::try_from(u32_at(at)).ok();
        let flags = u32_at(0);
        let on = |bit: u32| flags & bit != 0;
        let name = r.text_at(usize_at(4)?, usize_at(8)?)?;
        let (text, block) = nodes.get(usize_at(12)?)?;
        let kind = *KINDS.get(usize_at(16)?)?;
        let (first, count) = (usize_at(32)?, usize_at(36)?);
        let ids = children.get(first.checked_mul(4)?..first.checked_add(count)?.checked_mul(4)?)?;
        let mut kids = Vec::with_capacity(count);
        for c in ids.chunks_exact(4) {
            kids.push(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as RegionId);
        }
        regions.push(Region {
            name: std::borrow::Cow::Borrowed(name),
            index: on(HAS_INDEX).then(|| u32_at(20)),
            base: u64_at(48),
            size_bytes: u64_at(56),
            kind,
            block: block.clone(),
            partitions: on(HAS_PARTITIONS).then(|| Partitions {
                count: u32_at(40),
                stride_bytes: u64_at(72),
                populated_bytes: u64_at(80),
                bank_bytes: on(HAS_BANK).then(|| u64_at(88)),
            }),
            alias_of: on(HAS_ALIAS).then(|| u32_at(24) as RegionId),
            window_bytes: on(HAS_WINDOW).then(|| u64_at(64)),
            parent: on(HAS_PARENT).then(|| u32_at(28) as RegionId),
            children: kids,
            node: Arc::clone(text),
        });
    }
    let mut slots = Vec::with_capacity(n_slots.min(bytes.len()));
    for _ in 0..n_slots {
        slots.push(r.u64()?);
    }
    let n_flat = r.len()?;
    let starts = r.array(n_flat, u64::from_le_bytes)?;
    let lasts = r.array(n_flat, u64::from_le_bytes)?;
    let ids = r.array(n_flat, |b: [u8; 4]| u32::from_le_bytes(b) as RegionId)?;
    let flat = FlatDecode::from_parts(starts, lasts, ids, regions.len())?;
    if r.at != bytes.len() {
        return None;
    }
    Some(MapData {
        device: spec.device.clone(),
        regions,
        roots,
        by_name: NameIndex::from_parts(slots, n_names)?,
        spec,
        flat: std::sync::OnceLock::from(flat),
    })
}

/// The `N` bytes of `rec` at `at` (constant offsets into a record).
fn le<const N: usize>(rec: &[u8], at: usize) -> Option<[u8; N]> {
    rec.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[allow(dead_code)] // used by build.rs, which includes this module
#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
    text: String,
}

#[allow(dead_code)] // used by build.rs, which includes this module
impl Writer {
    fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        self.u32(self.text.len() as u32);
        self.u32(s.len() as u32);
        self.text.push_str(s);
    }
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
    text: &'static str,
}

impl<'b> Reader<'b> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take_ref().copied()
    }

    fn take_ref<const N: usize>(&mut self) -> Option<&'b [u8; N]> {
        let b = self.bytes.get(self.at..self.at.checked_add(N)?)?;
        self.at += N;
        b.try_into().ok()
    }

    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    /// `n` values of `N` bytes each, read in one pass.
    fn array<const N: usize, T>(&mut self, n: usize, f: impl Fn([u8; N]) -> T) -> Option<Vec<T>> {
        let len = n.checked_mul(N)?;
        let b = self.bytes.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        Some(
            b.chunks_exact(N)
                .map(|c| f(c.try_into().unwrap_or([0; N])))
                .collect(),
        )
    }

    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    fn len(&mut self) -> Option<usize> {
        self.u32().and_then(|v| usize::try_from(v).ok())
    }

    fn str(&mut self) -> Option<&'static str> {
        let off = self.len()?;
        let len = self.len()?;
        self.text_at(off, len)
    }

    fn text_at(&self, off: usize, len: usize) -> Option<&'static str> {
        self.text.get(off..off.checked_add(len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SocMap;

    /// Every field of every region, the roots, the lookups and the spec of
    /// the built-in map read from the image equal those of the map
    /// expanded from the JSON.
    #[test]
    fn the_image_is_the_expanded_map() {
        let expanded = SocMap::from_json(crate::TRN2_MAP_JSON, "m.json").expect("built-in map");
        let spec = serde_json::from_str(crate::TRN2_MAP_JSON).expect("built-in map");
        let image = decode(spec, crate::TRN2_IMAGE, crate::TRN2_IMAGE_TEXT).expect("an image");
        let from_trn2 = crate::trn2().expect("built-in map");
        for read in [&image, &*from_trn2] {
            assert_eq!(read.device, expanded.device);
            assert_eq!(read.roots, expanded.roots);
            assert_eq!(format!("{:?}", read.spec), format!("{:?}", expanded.spec));
            assert_eq!(read.regions.len(), expanded.regions.len());
            for (id, (a, b)) in read.regions.iter().zip(&expanded.regions).enumerate() {
                let fields = |r: &Region| {
                    format!(
                        "{} {:?} {:?} {:#x} {:#x} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                        r.name,
                        r.stem(),
                        r.index,
                        r.base,
                        r.size_bytes,
                        r.kind,
                        r.block,
                        r.partitions,
                        r.alias_of,
                        r.window_bytes,
                        r.parent,
                        r.children,
                        r.symbols(),
                        r.description(),
                        r.source()
                    )
                };
                assert_eq!(fields(a), fields(b), "region {id}");
                assert_eq!(read.by_name(&b.name), Some(id), "{}", b.name);
                // Names are read in place from the image's text: a map load
                // allocates no string per region.
                assert!(
                    matches!(a.name, std::borrow::Cow::Borrowed(_)),
                    "{}",
                    a.name
                );
            }
            for absent in ["", "eng", "eng132", "tpb0.", "hbm0.x", "eng0.m2s.q16"] {
                assert_eq!(read.by_name(absent), expanded.by_name(absent), "{absent}");
            }
            assert_eq!(
                read.flat.get(),
                Some(&FlatDecode::build(&expanded.regions, &expanded.roots))
            );
        }
    }

    #[test]
    fn a_damaged_image_does_not_read() {
        let spec = || serde_json::from_str(crate::TRN2_MAP_JSON).expect("built-in map");
        let bytes = crate::TRN2_IMAGE;
        for cut in [0, 4, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(spec(), &bytes[..cut], crate::TRN2_IMAGE_TEXT).is_none());
        }
        assert!(decode(spec(), bytes, "").is_none());
    }
}
