//! The expanded SoC map: every concrete region with its absolute base, and
//! address decoding.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::expand::Builder;
use crate::name_index::NameIndex;
use crate::spec::{MapSpec, RegionKind};

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
    pub name: std::borrow::Cow<'static, str>,
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
    /// The text of the region's map node, shared by all its instances (one
    /// reference count to raise per region built).
    pub(crate) node: Arc<NodeText>,
}

/// What every instance of one map node says besides its place.
#[derive(Debug)]
pub(crate) struct NodeText {
    pub(crate) stem: Box<str>,
    pub(crate) symbols: BTreeMap<String, String>,
    pub(crate) description: Box<str>,
    pub(crate) source: Box<str>,
}

impl Region {
    /// The spec name stem (`q`, `sbuf`, `eng`).
    pub fn stem(&self) -> &str {
        &self.node.stem
    }

    /// Symbolic shortcuts for traces (see [`crate::spec::NodeSpec::symbols`]).
    pub fn symbols(&self) -> &BTreeMap<String, String> {
        &self.node.symbols
    }

    /// Free text from the map.
    pub fn description(&self) -> &str {
        &self.node.description
    }

    /// Spec section the numbers come from.
    pub fn source(&self) -> &str {
        &self.node.source
    }

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
    pub(crate) by_name: NameIndex,
    /// The spec the map was expanded from (for the compact table).
    pub spec: MapSpec,
    /// The region tree flattened for [`MapData::deepest`], built on the
    /// first decode.
    pub(crate) flat: OnceLock<FlatDecode>,
}

impl SocMap {
    /// A map from its expanded data.
    pub(crate) fn from_data(data: MapData) -> Self {
        SocMap(Arc::new(data))
    }

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
        let mut b = Builder::new(&spec, capacity);
        b.expand_all()?;
        let Builder {
            mut regions,
            mut roots,
            by_name,
            pending_aliases,
            ..
        } = b;
        // Children come out in declaration order, mostly already by base.
        if !roots.is_sorted_by_key(|&id| regions[id].base) {
            roots.sort_by_key(|&id| regions[id].base);
        }
        check_siblings(&regions, &roots, "top level")?;
        for id in 0..regions.len() {
            if regions[id].children.len() < 2 {
                continue;
            }
            let mut kids = std::mem::take(&mut regions[id].children);
            if !kids.is_sorted_by_key(|&c| regions[c].base) {
                kids.sort_by_key(|&c| regions[c].base);
            }
            check_siblings(&regions, &kids, &regions[id].name)?;
            regions[id].children = kids;
        }
        let mut map = MapData {
            device: spec.device.clone(),
            regions,
            roots,
            by_name,
            spec,
            flat: OnceLock::new(),
        };
        map.resolve_aliases(pending_aliases)?;
        Ok(SocMap(Arc::new(map)))
    }
}

impl MapData {
    fn resolve_aliases(
        &mut self,
        pending: Vec<(RegionId, String, String)>,
    ) -> Result<(), MapError> {
        for (id, target_name, path) in pending {
            let r = &self.regions[id];
            // The node's JSON path, and the instance when it is one of many.
            let path = if path.contains(&*r.name) {
                path
            } else {
                format!("{path} ({})", r.name)
            };
            let Some(target) = self.by_name(&target_name) else {
                return Err(MapError {
                    path,
                    message: format!("alias_of names `{target_name}`, which does not exist"),
                });
            };
            if self.regions[target].size_bytes < r.size_bytes {
                return Err(MapError {
                    path,
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
        self.by_name.get(&self.regions, name)
    }

    /// The region with this id.
    pub fn region(&self, id: RegionId) -> &Region {
        &self.regions[id]
    }

    /// The deepest region containing `addr`, if any: one search of the
    /// flattened tree ([`FlatDecode`]).
    pub fn deepest(&self, addr: u64) -> Option<RegionId> {
        self.flat
            .get_or_init(|| FlatDecode::build(&self.regions, &self.roots))
            .deepest(addr)
    }

    /// [`MapData::deepest`] by walking the tree level by level (what the
    /// flattened search must agree with).
    pub fn deepest_by_levels(&self, addr: u64) -> Option<RegionId> {
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

/// The region tree as disjoint address intervals, each naming the deepest
/// region that holds its bytes (a parent's gaps between children name the
/// parent), sorted by start: decoding an address is one binary search over
/// a dense array instead of one per tree level through the region records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlatDecode {
    starts: Vec<u64>,
    /// Inclusive last address of each interval (a region may end at 2^64).
    lasts: Vec<u64>,
    ids: Vec<RegionId>,
}

impl FlatDecode {
    /// Flattens the tree under `roots` (siblings sorted by base and
    /// disjoint, as a validated map's are).
    pub(crate) fn build(regions: &[Region], roots: &[RegionId]) -> Self {
        // A region adds at most its own interval and one gap after each
        // child: under twice the region count.
        let n = 2 * regions.len() + 1;
        let mut flat = FlatDecode {
            starts: Vec::with_capacity(n),
            lasts: Vec::with_capacity(n),
            ids: Vec::with_capacity(n),
        };
        for &root in roots {
            if let Some((lo, last)) = span(&regions[root], 0, u64::MAX) {
                flat.emit(regions, root, lo, last);
            }
        }
        flat
    }

    /// Emits `[lo, last]` of region `id`: its children's parts, and its own
    /// bytes between them.
    fn emit(&mut self, regions: &[Region], id: RegionId, lo: u64, last: u64) {
        let mut at = lo;
        for &c in &regions[id].children {
            let Some((c_lo, c_last)) = span(&regions[c], at, last) else {
                continue;
            };
            if c_lo > at {
                self.push(at, c_lo - 1, id);
            }
            self.emit(regions, c, c_lo, c_last);
            match c_last.checked_add(1) {
                Some(next) if next <= last => at = next,
                _ => return,
            }
        }
        self.push(at, last, id);
    }

    /// The three arrays (the map image stores them, docs/address-map.md).
    pub(crate) fn parts(&self) -> (&[u64], &[u64], &[RegionId]) {
        (&self.starts, &self.lasts, &self.ids)
    }

    /// A flattened decode from its arrays, if they are one: equal lengths,
    /// intervals in order and disjoint, ids below `n_regions`.
    pub(crate) fn from_parts(
        starts: Vec<u64>,
        lasts: Vec<u64>,
        ids: Vec<RegionId>,
        n_regions: usize,
    ) -> Option<Self> {
        let ordered = starts.len() == lasts.len()
            && starts.len() == ids.len()
            && starts.iter().zip(&lasts).all(|(s, l)| s <= l)
            && lasts.iter().zip(starts.iter().skip(1)).all(|(l, s)| l < s)
            && ids.iter().all(|&id| id < n_regions);
        ordered.then_some(FlatDecode { starts, lasts, ids })
    }

    fn push(&mut self, start: u64, last: u64, id: RegionId) {
        self.starts.push(start);
        self.lasts.push(last);
        self.ids.push(id);
    }

    fn deepest(&self, addr: u64) -> Option<RegionId> {
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        (addr <= self.lasts[i]).then(|| self.ids[i])
    }
}

/// The bytes of `r` inside `[lo, last]`, as an inclusive range.
fn span(r: &Region, lo: u64, last: u64) -> Option<(u64, u64)> {
    let r_last = r.base.saturating_add(r.size_bytes.checked_sub(1)?);
    let (s, e) = (r.base.max(lo), r_last.min(last));
    (s <= e).then_some((s, e))
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
