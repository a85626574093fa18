//! Expansion of the map's nodes into concrete regions
//! (`docs/address-map.md`): arrays, instance lists and templates become one
//! [`Region`] each, checked as they are placed.
//!
//! A node is checked and prepared (kind, geometry, placements, children,
//! shared text) the first time one of its parent's instances expands it;
//! every later instance reuses that. Errors are those of a node-by-node
//! expansion, in the same order: the first expansion of a node is where a
//! node-by-node expansion would check it.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;
use std::sync::Arc;

use crate::map::{MapError, NodeText, Partitions, Region, RegionId};
use crate::name_index::{NameHash, NameIndex, Probe};
use crate::spec::{MapSpec, NodeSpec, RegionKind};

/// What every instance of one map node shares, checked once.
struct Prepared<'s> {
    kind: RegionKind,
    partitions: Option<Partitions>,
    /// (index in names, base relative to the parent) per instance.
    placements: Vec<(Option<u32>, u64)>,
    /// The decimal index of each instance, as its name ends (empty for a
    /// single region).
    index_texts: Vec<Box<str>>,
    /// The node's children: its templates' first, then its own.
    children: Vec<&'s NodeSpec>,
    /// Child instances of one instance, at most (a capacity hint).
    child_instances: usize,
    block: Option<Arc<str>>,
    text: Arc<NodeText>,
}

/// Node address → its prepared form.
type PreparedNodes<'s> = HashMap<usize, Rc<Prepared<'s>>, BuildHasherDefault<AddrHasher>>;

/// Hashes a node's address (a multiply; addresses are distinct).
#[derive(Default)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(26);
    }
}

/// The expansion in progress.
pub(crate) struct Builder<'s> {
    spec: &'s MapSpec,
    /// Every region so far; parents before children.
    pub(crate) regions: Vec<Region>,
    /// Top-level regions in expansion order.
    pub(crate) roots: Vec<RegionId>,
    pub(crate) by_name: NameIndex,
    /// (alias region, name of the region it mirrors), resolved after expansion.
    /// Aliases to resolve once every region exists: (region, target name,
    /// the JSON path of its node, for errors).
    pub(crate) pending_aliases: Vec<(RegionId, String, String)>,
    include_depth: usize,
    prepared: PreparedNodes<'s>,
}

impl<'s> Builder<'s> {
    /// A builder for `spec`, sized for `capacity` regions.
    pub(crate) fn new(spec: &'s MapSpec, capacity: usize) -> Self {
        Builder {
            spec,
            regions: Vec::with_capacity(capacity),
            roots: Vec::new(),
            by_name: NameIndex::with_capacity(capacity),
            pending_aliases: Vec::new(),
            include_depth: 0,
            prepared: PreparedNodes::default(),
        }
    }

    /// Expands every top-level node.
    pub(crate) fn expand_all(&mut self) -> Result<(), MapError> {
        let spec = self.spec;
        for (i, node) in spec.regions.iter().enumerate() {
            let path = || format!("regions[{i}] \"{}\"", node.name);
            self.expand(node, None, 0, NameHash::EMPTY, None, &path)?;
        }
        Ok(())
    }

    /// Expands `node` under one instance of its parent (`parent`, at
    /// `parent_base`, named with hash `parent_hash`, at position
    /// `parent_local_index` of its array): the node's instances go to the
    /// parent's children (or the roots), each followed by its own children.
    fn expand(
        &mut self,
        node: &'s NodeSpec,
        parent: Option<RegionId>,
        parent_base: u64,
        parent_hash: NameHash,
        parent_local_index: Option<u32>,
        path: &dyn Fn() -> String,
    ) -> Result<(), MapError> {
        let err = |message: String| MapError {
            path: path(),
            message,
        };
        if let Some(only) = &node.only_parent_indices {
            match parent_local_index {
                Some(i) if only.contains(&i) => {}
                Some(_) => return Ok(()),
                None => {
                    return Err(err(
                        "only_parent_indices needs a parent that is an array".to_string()
                    ));
                }
            }
        }
        let key = std::ptr::from_ref(node) as usize;
        let prep = match self.prepared.get(&key) {
            Some(p) => Rc::clone(p),
            None => {
                let p = Rc::new(self.prepare(node, &err)?);
                self.prepared.insert(key, Rc::clone(&p));
                p
            }
        };
        // The hash of `parent.stem` (or `stem` at the top level); each
        // instance adds its index.
        let stem_hash = match parent {
            Some(_) => parent_hash.push(b"."),
            None => parent_hash,
        }
        .push(node.name.as_bytes());
        let reach = node.window.map_or(node.size.0, |w| w.0);
        for (local, &(index, rel_base)) in prep.placements.iter().enumerate() {
            let base = parent_base
                .checked_add(rel_base)
                .ok_or_else(|| err("base overflows 64 bits".into()))?;
            if base.checked_add(reach).is_none() {
                return Err(err("region end overflows 64 bits".into()));
            }
            let parent_name = parent.map_or("", |p| &*self.regions[p].name);
            let digits = prep.index_texts.get(local).map_or("", |d| &**d);
            let name = region_name(parent_name, &node.name, digits);
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
            let hash = stem_hash.push(digits.as_bytes());
            let slot = match self.by_name.probe_for_insert(&self.regions, &name, hash) {
                Probe::Found(_) => return Err(err(format!("duplicate region name `{name}`"))),
                Probe::Vacant(slot) => slot,
            };
            let id = self.regions.len();
            if let Some(stem) = &node.alias_of {
                let target = region_name(parent_name, stem, digits);
                self.pending_aliases.push((id, target, path()));
            }
            self.regions.push(Region {
                name: name.into(),
                index,
                base,
                size_bytes: node.size.0,
                kind: prep.kind,
                block: prep.block.clone(),
                partitions: prep.partitions,
                alias_of: None,
                window_bytes: node.window.map(|w| w.0),
                parent,
                children: Vec::with_capacity(prep.child_instances),
                node: Arc::clone(&prep.text),
            });
            if !self.by_name.fill(slot, id, hash) {
                return Err(err(format!(
                    "more than {} regions",
                    crate::precheck::MAX_REGIONS
                )));
            }
            match parent {
                Some(p) => self.regions[p].children.push(id),
                None => self.roots.push(id),
            }
            let local = u32::try_from(local).ok();
            if self.include_depth > 16 {
                return Err(err(format!(
                    "regions nest more than {} levels below the top (children and included templates alike)",
                    crate::precheck::MAX_DEPTH
                )));
            }
            self.include_depth += 1;
            for (ci, &child) in prep.children.iter().enumerate() {
                let cpath = || format!("{} / children[{ci}] \"{}\"", path(), child.name);
                self.expand(child, Some(id), base, hash, local, &cpath)?;
            }
            self.include_depth -= 1;
        }
        Ok(())
    }

    /// Checks `node` on its own (name, size, kind, geometry, window,
    /// placement, templates) and prepares what its instances share.
    fn prepare(
        &self,
        node: &'s NodeSpec,
        err: &dyn Fn(String) -> MapError,
    ) -> Result<Prepared<'s>, MapError> {
        if !is_identifier(&node.name) {
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
        let partitions = partitions(node, kind, err)?;
        if let Some(window) = node.window
            && window.0 < node.size.0
        {
            return Err(err(format!(
                "window {window} is smaller than size {}",
                node.size
            )));
        }
        let placements = placements(node, err)?;
        let index_texts = placements
            .iter()
            .map(|&(index, _)| index.map_or_else(Box::default, |i| i.to_string().into()))
            .collect();
        let mut children: Vec<&'s NodeSpec> = Vec::new();
        for t in &node.include {
            let kids = self
                .spec
                .templates
                .get(t)
                .ok_or_else(|| err(format!("include names unknown template `{t}`")))?;
            children.extend(kids);
        }
        children.extend(&node.children);
        let child_instances = children
            .iter()
            .map(|c| {
                c.instances
                    .as_ref()
                    .map_or(c.count.unwrap_or(1) as usize, Vec::len)
            })
            .fold(0usize, usize::saturating_add);
        Ok(Prepared {
            kind,
            partitions,
            placements,
            index_texts,
            children,
            // A hint only: never more than the map may have.
            child_instances: child_instances.min(1 << 16),
            block: node.block.as_deref().map(Into::into),
            text: Arc::new(NodeText {
                stem: node.name.as_str().into(),
                symbols: node.symbols.clone(),
                description: node.description.as_str().into(),
                source: node.source.as_str().into(),
            }),
        })
    }
}

/// The partition geometry of an SBUF/PSUM node, checked; none for others.
fn partitions(
    node: &NodeSpec,
    kind: RegionKind,
    err: &dyn Fn(String) -> MapError,
) -> Result<Option<Partitions>, MapError> {
    match (kind, node.partitions) {
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
            Ok(Some(Partitions {
                count: p.count,
                stride_bytes: p.stride.0,
                populated_bytes: p.populated.0,
                bank_bytes: p.bank.map(|b| b.0),
            }))
        }
        (RegionKind::Sbuf | RegionKind::Psum, None) => {
            Err(err("sbuf/psum regions need `partitions`".to_string()))
        }
        (_, Some(_)) => Err(err("`partitions` only applies to sbuf/psum regions".into())),
        (_, None) => Ok(None),
    }
}

/// Where the instances of `node` go: (index in names, base relative to
/// the parent) each.
fn placements(
    node: &NodeSpec,
    err: &dyn Fn(String) -> MapError,
) -> Result<Vec<(Option<u32>, u64)>, MapError> {
    let first = node.first_index.unwrap_or(0);
    if let Some(list) = &node.instances {
        if node.base.is_some() || node.count.is_some() || node.stride.is_some() {
            return Err(err(
                "use either `instances` or `base`/`count`/`stride`".into()
            ));
        }
        if list.is_empty() {
            return Err(err("`instances` is empty".to_string()));
        }
        let mut placements = Vec::with_capacity(list.len());
        for (i, b) in list.iter().enumerate() {
            let idx = u32::try_from(i)
                .ok()
                .and_then(|i| first.checked_add(i))
                .ok_or_else(|| err("too many instances".into()))?;
            placements.push((Some(idx), b.0));
        }
        return Ok(placements);
    }
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
    let mut placements = Vec::with_capacity(count as usize);
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
    Ok(placements)
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(name: &str) -> bool {
    match name.as_bytes() {
        [] => false,
        [first, ..] if first.is_ascii_digit() => false,
        bytes => bytes
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_'),
    }
}

/// `parent.stemN` (or `stemN` at the top level; `digits` is `N`, or empty
/// for a single region), built in one string.
pub(crate) fn region_name(parent_name: &str, stem: &str, digits: &str) -> String {
    let mut name = String::with_capacity(parent_name.len() + 1 + stem.len() + digits.len());
    if !parent_name.is_empty() {
        name.push_str(parent_name);
        name.push('.');
    }
    name.push_str(stem);
    name.push_str(digits);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_join_parent_stem_and_index() {
        assert_eq!(region_name("", "hbm", "0"), "hbm0");
        assert_eq!(region_name("", "soc", ""), "soc");
        assert_eq!(region_name("tpb3", "sbuf", ""), "tpb3.sbuf");
        assert_eq!(region_name("eng1", "q", "15"), "eng1.q15");
        assert_eq!(region_name("a.b", "eng", "131"), "a.b.eng131");
    }

    #[test]
    fn identifiers_are_checked_byte_by_byte() {
        for ok in ["a", "_", "eng0", "q7_dram", "A_b9"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "0a", "a-b", "a.b", "é", "a b"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }
}
