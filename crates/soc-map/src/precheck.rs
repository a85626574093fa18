//! Checks made on the map's declarations before any instance is built
//! (`docs/address-map.md` "Validation"): what a node costs once expanded,
//! arrays that leave their parent or overlap themselves, and sibling names
//! that collide. Each check walks the spec tree once, never the instances,
//! so a bad `count` is refused in microseconds whatever its value.

use std::collections::BTreeMap;

use crate::map::MapError;
use crate::spec::{MapSpec, NodeSpec};

/// Regions a map may expand to (the built-in Trn2 map has about 5,800).
pub const MAX_REGIONS: u64 = 65_536;

/// Bytes of names and free text (description, source, symbols, block) that
/// the expansion may copy into its regions; each instance keeps its own copy.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Bytes a node name may have.
pub const MAX_NAME_BYTES: usize = 64;

/// Nesting a map may have (children and included templates alike).
pub(crate) const MAX_DEPTH: usize = 16;

/// Bytes a region costs besides its text (the `Region` value, its entry in
/// the name index and its parent's child list), for the text budget.
const REGION_OVERHEAD_BYTES: u64 = 256;

/// What a node adds to the map, per instance of its parent.
#[derive(Clone, Copy, Default)]
struct Cost {
    regions: u64,
    text_bytes: u64,
}

impl Cost {
    fn add(self, o: Cost) -> Cost {
        Cost {
            regions: self.regions.saturating_add(o.regions),
            text_bytes: self.text_bytes.saturating_add(o.text_bytes),
        }
    }

    fn times(self, n: u64) -> Cost {
        Cost {
            regions: self.regions.saturating_mul(n),
            text_bytes: self.text_bytes.saturating_mul(n),
        }
    }
}

/// Runs every declaration check on `spec`; returns an upper bound on the
/// regions it expands to (within the map budget), to size the builder.
pub(crate) fn check(spec: &MapSpec) -> Result<u64, MapError> {
    let mut walk = Walk { spec, visits: 0 };
    let roots: Vec<(&NodeSpec, String)> = spec
        .regions
        .iter()
        .enumerate()
        .map(|(i, n)| (n, format!("regions[{i}] \"{}\"", n.name)))
        .collect();
    let mut total = Cost::default();
    for (node, path) in &roots {
        total = total.add(walk.node(node, None, 0, 0, path)?);
        over_budget(total, path, "the map")?;
    }
    check_names(&roots)?;
    Ok(total.regions)
}

struct Walk<'s> {
    spec: &'s MapSpec,
    /// Nodes looked at (through templates a node is looked at once per
    /// place it is included).
    visits: u64,
}

/// The parent of a node as declared: its size and instance count.
#[derive(Clone, Copy)]
struct Parent<'a> {
    node: &'a NodeSpec,
    instances: u64,
}

impl Walk<'_> {
    /// The cost of `node` over all instances of its parent; checks the node
    /// and, recursively, its children.
    fn node(
        &mut self,
        node: &NodeSpec,
        parent: Option<Parent<'_>>,
        depth: usize,
        parent_name_bytes: u64,
        path: &str,
    ) -> Result<Cost, MapError> {
        let err = |message: String| MapError {
            path: path.to_string(),
            message,
        };
        self.visits += 1;
        if self.visits > MAX_REGIONS {
            return Err(err(format!(
                "the templates expand to more than {MAX_REGIONS} nodes \
                 (a map may have at most {MAX_REGIONS} regions)"
            )));
        }
        if depth > MAX_DEPTH {
            return Err(err(format!(
                "regions nest more than {MAX_DEPTH} levels below the top (children and included templates alike)"
            )));
        }
        if node.name.len() > MAX_NAME_BYTES {
            return Err(err(format!(
                "name `{}…` is longer than {MAX_NAME_BYTES} bytes",
                node.name.chars().take(16).collect::<String>()
            )));
        }
        // Parent instances this node is placed under.
        let under = match (&node.only_parent_indices, parent) {
            (None, p) => p.map_or(1, |p| p.instances),
            (Some(only), Some(p)) if p.node.is_array() => {
                let mut kept: Vec<u32> = only
                    .iter()
                    .copied()
                    .filter(|&i| u64::from(i) < p.instances)
                    .collect();
                kept.sort_unstable();
                kept.dedup();
                kept.len() as u64
            }
            // Refused with its message by the expansion.
            (Some(_), _) => return Ok(Cost::default()),
        };
        if under == 0 {
            return Ok(Cost::default());
        }
        let n = self.placement(node, parent, &err)?;

        let children: Vec<&NodeSpec> = match template_children(self.spec, node) {
            Some(kids) => kids.into_iter().chain(&node.children).collect(),
            // Refused with its message by the expansion.
            None => return Ok(Cost::default()),
        };
        let name_bytes = parent_name_bytes + 1 + node.name.len() as u64 + 10;
        let kids: Vec<(&NodeSpec, String)> = children
            .iter()
            .enumerate()
            .map(|(ci, c)| (*c, format!("{path} / children[{ci}] \"{}\"", c.name)))
            .collect();
        let own = Cost {
            regions: 1,
            text_bytes: REGION_OVERHEAD_BYTES + 2 * name_bytes + text_bytes(node),
        };
        // Over the `n` instances of this node (per instance of its parent).
        let mut all = own.times(n);
        let me = Parent { node, instances: n };
        for (child, cpath) in &kids {
            all = all.add(self.node(child, Some(me), depth + 1, name_bytes, cpath)?);
        }
        if all.regions > MAX_REGIONS && n > 1 {
            let what = if node.instances.is_some() {
                format!("instances ({n} of them) are too many")
            } else {
                format!("count {n} is too large")
            };
            return Err(err(format!(
                "{what}: {n} instances of {} region(s) each make {}{} regions; \
                 a map may have at most {MAX_REGIONS} regions",
                all.regions.div_ceil(n),
                if all.regions == u64::MAX {
                    "more than "
                } else {
                    ""
                },
                all.regions
            )));
        }
        check_names(&kids)?;
        over_budget(all, path, if n > 1 { "the array" } else { "the region" })?;
        Ok(all.times(under))
    }

    /// Checks where the instances of `node` go; returns how many there are.
    fn placement(
        &self,
        node: &NodeSpec,
        parent: Option<Parent<'_>>,
        err: &dyn Fn(String) -> MapError,
    ) -> Result<u64, MapError> {
        let size = node.size.0;
        let reach = node.window.map_or(size, |w| w.0.max(size));
        let parent_size = parent.map(|p| p.node.size.0);
        let first = u64::from(node.first_index.unwrap_or(0));
        let instance_name = |i: u64| format!("{}{}", node.name, first.saturating_add(i));
        if let Some(list) = &node.instances {
            if let Some(psize) = parent_size {
                for (i, b) in list.iter().enumerate() {
                    if b.0.checked_add(size).is_none_or(|end| end > psize) {
                        return Err(err(past_parent(
                            i as u64,
                            &instance_name(i as u64),
                            b.0,
                            size,
                            parent,
                        )));
                    }
                }
            }
            return Ok(list.len() as u64);
        }
        let n = u64::from(node.count.unwrap_or(1));
        if n <= 1 {
            return Ok(n);
        }
        let (Some(stride), base) = (node.stride, node.base.map_or(0, |b| b.0)) else {
            // Refused with its message by the expansion.
            return Ok(n);
        };
        let stride = stride.0;
        if stride < reach {
            return Err(err(format!(
                "stride {stride:#x} is smaller than the instance {} {reach:#x}: \
                 instances 0 and 1 (`{}`, `{}`) overlap",
                if reach > size { "window" } else { "size" },
                instance_name(0),
                instance_name(1)
            )));
        }
        if let Some(psize) = parent_size {
            // The first instance i with base + i·stride + size > psize.
            let first_past = match psize.checked_sub(size).and_then(|r| r.checked_sub(base)) {
                None => 0,
                Some(room) => room / stride + 1,
            };
            if first_past < n {
                let at = base.saturating_add(first_past.saturating_mul(stride));
                return Err(err(past_parent(
                    first_past,
                    &instance_name(first_past),
                    at,
                    size,
                    parent,
                )));
            }
        } else {
            let last = (n - 1)
                .checked_mul(stride)
                .and_then(|o| o.checked_add(base))
                .and_then(|b| b.checked_add(reach));
            if last.is_none() {
                return Err(err(format!(
                    "instance base overflows 64 bits: count {n} × stride {stride:#x} from {base:#x}"
                )));
            }
        }
        Ok(n)
    }
}

/// The children `node` pulls in from templates, or None when a template
/// does not exist.
fn template_children<'a>(spec: &'a MapSpec, node: &'a NodeSpec) -> Option<Vec<&'a NodeSpec>> {
    let mut out = Vec::new();
    for t in &node.include {
        out.extend(spec.templates.get(t)?);
    }
    Some(out)
}

fn past_parent(i: u64, name: &str, at: u64, size: u64, parent: Option<Parent<'_>>) -> String {
    let (pname, psize) = parent.map_or(("", 0), |p| (p.node.name.as_str(), p.node.size.0));
    format!(
        "instance {i} (`{name}`) at +{at:#x}..+{:#x} does not fit inside the parent `{pname}` (size {psize:#x})",
        at.saturating_add(size)
    )
}

/// Text a node copies into each of its instances.
fn text_bytes(node: &NodeSpec) -> u64 {
    let symbols: usize = node.symbols.iter().map(|(k, v)| k.len() + v.len()).sum();
    (node.description.len()
        + node.source.len()
        + node.block.as_ref().map_or(0, String::len)
        + node.name.len()
        + symbols) as u64
}

fn over_budget(cost: Cost, path: &str, what: &str) -> Result<(), MapError> {
    let err = |message: String| MapError {
        path: path.to_string(),
        message,
    };
    if cost.regions > MAX_REGIONS {
        return Err(err(format!(
            "{what} would expand to {} regions; a map may have at most {MAX_REGIONS} regions",
            cost.regions
        )));
    }
    if cost.text_bytes > MAX_TEXT_BYTES {
        return Err(err(format!(
            "{what} would copy {} MiB of names and text (description, source, symbols) into its \
             {} regions; a map may copy at most {} MiB",
            cost.text_bytes >> 20,
            cost.regions,
            MAX_TEXT_BYTES >> 20
        )));
    }
    Ok(())
}

/// Names one sibling list would give its instances, checked for collisions
/// without building them: arrays `stem{first}..stem{last}`, single nodes
/// their name (a trailing decimal number read as an index of the stem).
fn check_names(siblings: &[(&NodeSpec, String)]) -> Result<(), MapError> {
    // (stem, first index, last index, declaration order)
    let mut by_stem: BTreeMap<&str, Vec<(u64, u64, usize)>> = BTreeMap::new();
    for (order, (node, _)) in siblings.iter().enumerate() {
        if node.only_parent_indices.is_some() {
            continue; // not under every parent instance: the expansion checks it
        }
        let (stem, lo, hi) = if node.is_array() {
            let n = node
                .instances
                .as_ref()
                .map_or(u64::from(node.count.unwrap_or(1)), |l| l.len() as u64);
            if n == 0 {
                continue;
            }
            let first = u64::from(node.first_index.unwrap_or(0));
            (node.name.as_str(), first, first + n - 1)
        } else {
            split_index(&node.name)
        };
        by_stem.entry(stem).or_default().push((lo, hi, order));
    }
    let mut clash: Option<(usize, usize, String)> = None;
    for (stem, mut decls) in by_stem {
        decls.sort_unstable();
        let mut reach: Option<(u64, usize)> = None; // highest last index so far, and whose
        for &(lo, hi, order) in &decls {
            if let Some((top, other)) = reach
                && lo <= top
            {
                let name = if lo == u64::MAX {
                    stem.to_string()
                } else {
                    format!("{stem}{lo}")
                };
                // Report at the later declaration, naming the earlier one.
                let (later, earlier) = (order.max(other), order.min(other));
                if clash.as_ref().is_none_or(|c| later < c.0) {
                    clash = Some((later, earlier, name));
                }
            }
            if reach.is_none_or(|(top, _)| hi > top) {
                reach = Some((hi, order));
            }
        }
    }
    let Some((later, earlier, name)) = clash else {
        return Ok(());
    };
    let (enode, epath) = &siblings[earlier];
    Err(MapError {
        path: siblings[later].1.clone(),
        message: format!(
            "duplicate region name `{name}`: also a name of {epath}{}",
            describe_names(enode)
        ),
    })
}

/// ` (a0..a3)` for arrays, nothing for single nodes.
fn describe_names(node: &NodeSpec) -> String {
    if !node.is_array() {
        return String::new();
    }
    let n = node
        .instances
        .as_ref()
        .map_or(u64::from(node.count.unwrap_or(1)), |l| l.len() as u64);
    let first = u64::from(node.first_index.unwrap_or(0));
    format!(
        " ({}{first}..{}{})",
        node.name,
        node.name,
        first + n.saturating_sub(1)
    )
}

/// `eng5` → (`eng`, 5, 5): the index an array named `eng` gives that name.
/// Names without a plain trailing number are (name, MAX, MAX).
fn split_index(name: &str) -> (&str, u64, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = name.split_at(name.len() - digits);
    let plain = !num.is_empty() && (num == "0" || !num.starts_with('0')) && !stem.is_empty();
    match num.parse::<u32>() {
        Ok(i) if plain => (stem, u64::from(i), u64::from(i)),
        _ => (name, u64::MAX, u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_numbers_are_indices() {
        assert_eq!(split_index("eng64"), ("eng", 64, 64));
        assert_eq!(split_index("eng0"), ("eng", 0, 0));
        assert_eq!(split_index("eng064"), ("eng064", u64::MAX, u64::MAX));
        assert_eq!(split_index("host"), ("host", u64::MAX, u64::MAX));
        assert_eq!(
            split_index("q99999999999"),
            ("q99999999999", u64::MAX, u64::MAX)
        );
    }
}
