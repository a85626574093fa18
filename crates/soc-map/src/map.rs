//! The expanded SoC map: every concrete region with its absolute base, and
//! address decoding.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use crate::spec::{MapSpec, NodeSpec, RegionKind};

/// Index of a region in [`SocMap::regions`].
pub type RegionId = usize;

/// Partition geometry of an SBUF/PSUM region (docs/references/wiki.md §A.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitions {
    /// Number of partitions.
    pub count: u32,
    /// Address stride between partitions.
    pub stride_bytes: u64,
    /// Bytes backed in each partition.
    pub populated_bytes: u64,
    /// Bank size, for banked memories (PSUM).
    pub bank_bytes: Option<u64>,
}

/// One concrete region of the map.
#[derive(Clone, Debug)]
pub struct Region {
    /// Dotted full name, e.g. `eng0.m2s.q0`, `tpb0.sbuf`, `hbm1`.
    pub name: String,
    /// The spec name stem (`q`, `sbuf`, `eng`).
    pub stem: Arc<str>,
    /// Array index in names, if the region is an array instance.
    pub index: Option<u32>,
    /// Absolute base address.
    pub base: u64,
    /// Size in bytes.
    pub size_bytes: u64,
    /// What the region holds.
    pub kind: RegionKind,
    /// CSR block map name, if the region (or container) has registers.
    pub block: Option<Arc<str>>,
    /// SBUF/PSUM geometry.
    pub partitions: Option<Partitions>,
    /// The region this one mirrors (same bytes).
    pub alias_of: Option<RegionId>,
    /// The address window the region sits in, if larger than its size.
    pub window_bytes: Option<u64>,
    /// Parent region.
    pub parent: Option<RegionId>,
    /// Children sorted by base.
    pub children: Vec<RegionId>,
    /// Symbolic shortcuts for traces (see [`crate::spec::NodeSpec::symbols`]).
    pub symbols: Arc<BTreeMap<String, String>>,
    /// Free text from the map.
    pub description: Arc<str>,
    /// Spec section the numbers come from.
    pub source: Arc<str>,
}

impl Region {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size_bytes)
    }

    /// One past the last byte of the region's window (its size when it has
    /// no larger window).
    pub fn window_end(&self) -> u64 {
        self.base
            .saturating_add(self.window_bytes.unwrap_or(0).max(self.size_bytes))
    }

    /// True when `addr` is inside the region.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size_bytes
    }
}

/// A bad map: names the node (JSON path and name) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapError {
    /// Where: a JSON path such as `regions[3] "tpb" / children[1] "psum"`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "soc map: {}", self.message)
        } else {
            write!(f, "soc map: {}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for MapError {}

/// Why an address holds nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hole {
    /// No top-level region contains the address.
    Unmapped,
    /// Inside a container but in none of its children (nor its registers).
    ContainerGap,
    /// Inside a region's address window but past its populated size.
    WindowGap,
    /// In the unpopulated pad of a partition.
    PartitionPad {
        /// The partition.
        partition: u32,
        /// Offset inside the partition.
        offset: u64,
    },
    /// In a reserved region.
    Reserved,
}

impl fmt::Display for Hole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unmapped => f.write_str("no region at this address"),
            Self::ContainerGap => f.write_str("hole between the regions of this block"),
            Self::WindowGap => f.write_str("past the populated part of the region's window"),
            Self::PartitionPad { partition, offset } => write!(
                f,
                "partition {partition} offset {offset:#x} is in the unpopulated pad"
            ),
            Self::Reserved => f.write_str("reserved region"),
        }
    }
}

/// The result of decoding one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The address decoded.
    pub addr: u64,
    /// The deepest region containing the address (None when unmapped).
    pub region: Option<RegionId>,
    /// Offset from the region base (or from the partition base for
    /// partitioned memories).
    pub offset: u64,
    /// Partition index, for SBUF/PSUM.
    pub partition: Option<u32>,
    /// Bank index, for banked memories.
    pub bank: Option<u32>,
    /// Why nothing is there, if so. For CSR regions the register lookup is
    /// the caller's (the map does not know register layouts).
    pub hole: Option<Hole>,
}

/// The expanded, validated map of one device. Cheap to clone: every
/// clone shares one [`MapData`] (a device, a host session and a sweep
/// point each hold the map; none changes it).
#[derive(Clone, Debug)]
pub struct SocMap(Arc<MapData>);

impl std::ops::Deref for SocMap {
    type Target = MapData;
    fn deref(&self) -> &MapData {
        &self.0
    }
}

/// The contents of a [`SocMap`].
#[derive(Debug)]
pub struct MapData {
    /// Device name.
    pub device: String,
    /// Every region; parents before children.
    pub regions: Vec<Region>,
    /// Top-level regions sorted by base.
    pub roots: Vec<RegionId>,
    by_name: NameIndex,
    /// The spec the map was expanded from (for the compact table).
    pub spec: MapSpec,
}

impl SocMap {
    /// Parses and validates a map from JSON text. `source_name` names the
    /// file in errors.
    pub fn from_json(text: &str, source_name: &str) -> Result<Self, MapError> {
        let spec: MapSpec = serde_json::from_str(text).map_err(|e| MapError {
            path: source_name.to_string(),
            message: format!("invalid map JSON: {e}"),
        })?;
        Self::from_spec(spec)
    }

    /// Expands and validates a parsed spec.
    pub fn from_spec(spec: MapSpec) -> Result<Self, MapError> {
        // Counts, names and placements first: a bad count must not build
        // its instances (docs/address-map.md "Validation").
        let regions_max = crate::precheck::check(&spec)?;
        // Sized once: growing a vector of 5,700 regions copied it 17 times.
        let capacity = usize::try_from(regions_max).unwrap_or(0).min(1 << 20);
        let mut b = Builder {
            spec: &spec,
            regions: Vec::with_capacity(capacity),
            by_name: NameIndex::with_capacity_and_hasher(capacity, Default::default()),
            include_depth: 0,
            pending_aliases: Vec::new(),
        };
        let mut roots = Vec::new();
        for (i, node) in spec.regions.iter().enumerate() {
            let path = || format!("regions[{i}] \"{}\"", node.name);
            roots.extend(b.expand(node, None, 0, "", None, &path)?);
        }
        let Builder {
            mut regions,
            by_name,
            pending_aliases,
            ..
        } = b;
        roots.sort_by_key(|&id| regions[id].base);
        check_siblings(&regions, &roots, "top level")?;
        for id in 0..regions.len() {
            let mut kids = std::mem::take(&mut regions[id].children);
            kids.sort_by_key(|&c| regions[c].base);
            check_siblings(&regions, &kids, &regions[id].name)?;
            regions[id].children = kids;
        }
        let mut map = MapData {
            device: spec.device.clone(),
            regions,
            roots,
            by_name,
            spec,
        };
        map.resolve_aliases(pending_aliases)?;
        Ok(SocMap(Arc::new(map)))
    }
}

impl MapData {
    fn resolve_aliases(&mut self, pending: Vec<(RegionId, String)>) -> Result<(), MapError> {
        for (id, target_name) in pending {
            let r = &self.regions[id];
            let Some(&target) = self.by_name.get(&target_name) else {
                return Err(MapError {
                    path: r.name.clone(),
                    message: format!("alias_of names `{target_name}`, which does not exist"),
                });
            };
            if self.regions[target].size_bytes < r.size_bytes {
                return Err(MapError {
                    path: r.name.clone(),
                    message: format!(
                        "alias of `{target_name}` is larger ({:#x}) than its target ({:#x})",
                        r.size_bytes, self.regions[target].size_bytes
                    ),
                });
            }
            self.regions[id].alias_of = Some(target);
        }
        Ok(())
    }

    /// The region with this dotted name.
    pub fn by_name(&self, name: &str) -> Option<RegionId> {
        self.by_name.get(name).copied()
    }

    /// The region with this id.
    pub fn region(&self, id: RegionId) -> &Region {
        &self.regions[id]
    }

    /// The deepest region containing `addr`, if any.
    pub fn deepest(&self, addr: u64) -> Option<RegionId> {
        let mut found = find_in(&self.regions, &self.roots, addr)?;
        while let Some(child) = find_in(&self.regions, &self.regions[found].children, addr) {
            found = child;
        }
        Some(found)
    }

    /// Decodes one address: region, offset, partition and bank, or why
    /// nothing is there.
    pub fn decode(&self, addr: u64) -> Decoded {
        let mut d = Decoded {
            addr,
            region: None,
            offset: 0,
            partition: None,
            bank: None,
            hole: None,
        };
        let Some(id) = self.deepest(addr) else {
            d.hole = Some(Hole::Unmapped);
            let idx = self
                .roots
                .partition_point(|&id| self.regions[id].base <= addr);
            if let Some(&root) = idx.checked_sub(1).and_then(|i| self.roots.get(i)) {
                let r = &self.regions[root];
                if r.window_bytes.is_some_and(|w| addr - r.base < w) {
                    d.region = Some(root);
                    d.offset = addr - r.base;
                    d.hole = Some(Hole::WindowGap);
                }
            }
            return d;
        };
        let r = &self.regions[id];
        d.region = Some(id);
        d.offset = addr - r.base;
        match r.kind {
            RegionKind::Container if r.block.is_none() => d.hole = Some(Hole::ContainerGap),
            RegionKind::Reserved => d.hole = Some(Hole::Reserved),
            RegionKind::Sbuf | RegionKind::Psum => {
                if let Some(p) = r.partitions {
                    let partition = d.offset / p.stride_bytes.max(1);
                    let offset = d.offset % p.stride_bytes.max(1);
                    let partition = u32::try_from(partition).unwrap_or(u32::MAX);
                    d.partition = Some(partition);
                    d.offset = offset;
                    if partition >= p.count || offset >= p.populated_bytes {
                        d.hole = Some(Hole::PartitionPad { partition, offset });
                    } else if let Some(bank) = p.bank_bytes {
                        d.bank = u32::try_from(offset / bank.max(1)).ok();
                    }
                }
            }
            _ => {}
        }
        d
    }

    /// The name of a region id.
    pub fn name(&self, id: RegionId) -> &str {
        &self.regions[id].name
    }

    /// Every region in address order (depth-first).
    pub fn walk(&self) -> Vec<RegionId> {
        let mut out = Vec::with_capacity(self.regions.len());
        let mut stack: Vec<RegionId> = self.roots.iter().rev().copied().collect();
        while let Some(id) = stack.pop() {
            out.push(id);
            stack.extend(self.regions[id].children.iter().rev().copied());
        }
        out
    }

    /// Depth of a region (0 for top level).
    pub fn depth(&self, id: RegionId) -> usize {
        let mut depth = 0;
        let mut cur = self.regions[id].parent;
        while let Some(p) = cur {
            depth += 1;
            cur = self.regions[p].parent;
        }
        depth
    }
}

fn find_in(regions: &[Region], sorted: &[RegionId], addr: u64) -> Option<RegionId> {
    let idx = sorted.partition_point(|&id| regions[id].base <= addr);
    let candidate = *sorted.get(idx.checked_sub(1)?)?;
    regions[candidate].contains(addr).then_some(candidate)
}

fn check_siblings(regions: &[Region], sorted: &[RegionId], parent: &str) -> Result<(), MapError> {
    for pair in sorted.windows(2) {
        let (a, b) = (&regions[pair[0]], &regions[pair[1]]);
        if a.window_end() > b.base {
            return Err(MapError {
                path: parent.to_string(),
                message: format!(
                    "regions `{}` [{:#x}, {:#x}) and `{}` [{:#x}, {:#x}) overlap",
                    a.name,
                    a.base,
                    a.window_end(),
                    b.name,
                    b.base,
                    b.end()
                ),
            });
        }
    }
    Ok(())
}

/// Region names → ids. FNV-1a instead of SipHash: names come from the
/// map file, and a map is expanded at every start (5,700 names built in).
type NameIndex = HashMap<String, RegionId, std::hash::BuildHasherDefault<NameHasher>>;

/// FNV-1a over the bytes hashed (deterministic, a few instructions a byte).
#[derive(Clone, Copy, Debug)]
struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// `parent.stemN` (or `stemN` at the top level), built in one string.
fn region_name(parent_name: &str, stem: &str, index: Option<u32>) -> String {
    let mut name = String::with_capacity(parent_name.len() + stem.len() + 11);
    if !parent_name.is_empty() {
        name.push_str(parent_name);
        name.push('.');
    }
    name.push_str(stem);
    if let Some(i) = index {
        // Decimal digits without the formatting machinery.
        let mut digits = [0u8; 10];
        let mut n = i;
        let mut k = digits.len();
        loop {
            k -= 1;
            digits[k] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &d in &digits[k..] {
            name.push(char::from(d));
        }
    }
    name
}

struct Builder<'s> {
    spec: &'s MapSpec,
    regions: Vec<Region>,
    by_name: NameIndex,
    include_depth: usize,
    /// (alias region, name of the region it mirrors), resolved after expansion.
    pending_aliases: Vec<(RegionId, String)>,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn expand(
        &mut self,
        node: &NodeSpec,
        parent: Option<RegionId>,
        parent_base: u64,
        parent_name: &str,
        parent_local_index: Option<u32>,
        path: &dyn Fn() -> String,
    ) -> Result<Vec<RegionId>, MapError> {
        let err = |message: String| MapError {
            path: path(),
            message,
        };
        if let Some(only) = &node.only_parent_indices {
            match parent_local_index {
                Some(i) if only.contains(&i) => {}
                Some(_) => return Ok(Vec::new()),
                None => {
                    return Err(err(
                        "only_parent_indices needs a parent that is an array".to_string()
                    ));
                }
            }
        }
        if node.name.is_empty()
            || !node
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            || node.name.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(err(format!(
                "name `{}` must be an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                node.name
            )));
        }
        if node.size.0 == 0 {
            return Err(err("size must be non-zero".to_string()));
        }
        let has_children = !node.children.is_empty() || !node.include.is_empty();
        let kind = match (node.kind, has_children) {
            (Some(k), _) => k,
            (None, true) => RegionKind::Container,
            (None, false) => return Err(err("kind is missing (a leaf needs a kind)".to_string())),
        };
        if kind == RegionKind::Csr && node.block.is_none() {
            return Err(err("a csr region needs `block`".to_string()));
        }
        let partitions = match (kind, node.partitions) {
            (RegionKind::Sbuf | RegionKind::Psum, Some(p)) => {
                let total = u64::from(p.count).checked_mul(p.stride.0);
                if p.count == 0 || p.stride.0 == 0 {
                    return Err(err("partitions.count and stride must be non-zero".into()));
                }
                if total.is_none_or(|t| t > node.size.0) {
                    return Err(err(format!(
                        "partitions: {} × {} does not fit in size {}",
                        p.count, p.stride, node.size
                    )));
                }
                if p.populated.0 > p.stride.0 {
                    return Err(err(format!(
                        "partitions.populated {} exceeds the stride {}",
                        p.populated, p.stride
                    )));
                }
                if let Some(bank) = p.bank
                    && (bank.0 == 0 || p.populated.0 % bank.0 != 0)
                {
                    return Err(err(format!(
                        "partitions.bank {bank} must divide populated {}",
                        p.populated
                    )));
                }
                Some(Partitions {
                    count: p.count,
                    stride_bytes: p.stride.0,
                    populated_bytes: p.populated.0,
                    bank_bytes: p.bank.map(|b| b.0),
                })
            }
            (RegionKind::Sbuf | RegionKind::Psum, None) => {
                return Err(err("sbuf/psum regions need `partitions`".to_string()));
            }
            (_, Some(_)) => {
                return Err(err("`partitions` only applies to sbuf/psum regions".into()));
            }
            (_, None) => None,
        };
        if let Some(window) = node.window
            && window.0 < node.size.0
        {
            return Err(err(format!(
                "window {window} is smaller than size {}",
                node.size
            )));
        }

        // Instance placement.
        let first = node.first_index.unwrap_or(0);
        let mut placements: Vec<(Option<u32>, u64)> = Vec::new();
        if let Some(list) = &node.instances {
            if node.base.is_some() || node.count.is_some() || node.stride.is_some() {
                return Err(err(
                    "use either `instances` or `base`/`count`/`stride`".into()
                ));
            }
            if list.is_empty() {
                return Err(err("`instances` is empty".to_string()));
            }
            for (i, b) in list.iter().enumerate() {
                let idx = u32::try_from(i)
                    .ok()
                    .and_then(|i| first.checked_add(i))
                    .ok_or_else(|| err("too many instances".into()))?;
                placements.push((Some(idx), b.0));
            }
        } else {
            let count = node.count.unwrap_or(1);
            if count == 0 {
                return Err(err("count must be at least 1".to_string()));
            }
            let stride = match (count, node.stride) {
                (1, s) => s.map_or(0, |s| s.0),
                (_, Some(s)) => s.0,
                (_, None) => return Err(err("an array needs `stride`".to_string())),
            };
            let base = node.base.map_or(0, |b| b.0);
            for i in 0..count {
                let off = u64::from(i)
                    .checked_mul(stride)
                    .and_then(|o| o.checked_add(base))
                    .ok_or_else(|| err("instance base overflows 64 bits".into()))?;
                let idx = if node.is_array() {
                    Some(
                        first
                            .checked_add(i)
                            .ok_or_else(|| err("index overflows".into()))?,
                    )
                } else {
                    None
                };
                placements.push((idx, off));
            }
        }

        let mut template_children: Vec<&NodeSpec> = Vec::new();
        for t in &node.include {
            let kids = self
                .spec
                .templates
                .get(t)
                .ok_or_else(|| err(format!("include names unknown template `{t}`")))?;
            template_children.extend(kids);
        }

        // Shared by every instance of this node.
        let stem: Arc<str> = node.name.as_str().into();
        let block: Option<Arc<str>> = node.block.as_deref().map(Into::into);
        let symbols = Arc::new(node.symbols.clone());
        let description: Arc<str> = node.description.as_str().into();
        let source: Arc<str> = node.source.as_str().into();
        let mut ids = Vec::with_capacity(placements.len());
        for (local, (index, rel_base)) in placements.into_iter().enumerate() {
            let base = parent_base
                .checked_add(rel_base)
                .ok_or_else(|| err("base overflows 64 bits".into()))?;
            if base
                .checked_add(node.window.map_or(node.size.0, |w| w.0))
                .is_none()
            {
                return Err(err("region end overflows 64 bits".into()));
            }
            let name = region_name(parent_name, &node.name, index);
            if let Some(p) = parent {
                let pr = &self.regions[p];
                if base < pr.base || base.saturating_add(node.size.0) > pr.end() {
                    return Err(err(format!(
                        "`{name}` [{base:#x}, {:#x}) does not fit inside `{}` [{:#x}, {:#x})",
                        base.saturating_add(node.size.0),
                        pr.name,
                        pr.base,
                        pr.end()
                    )));
                }
            }
            if self.by_name.contains_key(&name) {
                return Err(err(format!("duplicate region name `{name}`")));
            }
            let id = self.regions.len();
            if let Some(stem) = &node.alias_of {
                let target = region_name(parent_name, stem, index);
                self.pending_aliases.push((id, target));
            }
            self.regions.push(Region {
                name: name.clone(),
                stem: stem.clone(),
                index,
                base,
                size_bytes: node.size.0,
                kind,
                block: block.clone(),
                partitions,
                alias_of: None,
                window_bytes: node.window.map(|w| w.0),
                parent,
                children: Vec::new(),
                symbols: symbols.clone(),
                description: description.clone(),
                source: source.clone(),
            });
            self.by_name.insert(name.clone(), id);
            let local = u32::try_from(local).ok();
            if self.include_depth > 16 {
                return Err(err("templates include each other too deeply".into()));
            }
            self.include_depth += 1;
            for (ci, child) in template_children
                .iter()
                .copied()
                .chain(&node.children)
                .enumerate()
            {
                let cpath = || format!("{} / children[{ci}] \"{}\"", path(), child.name);
                let kids = self.expand(child, Some(id), base, &name, local, &cpath)?;
                self.regions[id].children.extend(kids);
            }
            self.include_depth -= 1;
            ids.push(id);
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_join_parent_stem_and_index() {
        assert_eq!(region_name("", "hbm", Some(0)), "hbm0");
        assert_eq!(region_name("", "soc", None), "soc");
        assert_eq!(region_name("tpb3", "sbuf", None), "tpb3.sbuf");
        assert_eq!(region_name("eng1", "q", Some(15)), "eng1.q15");
        assert_eq!(region_name("a.b", "eng", Some(131)), "a.b.eng131");
        assert_eq!(
            region_name("x", "r", Some(u32::MAX)),
            format!("x.r{}", u32::MAX)
        );
    }
}
