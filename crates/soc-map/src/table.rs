//! Human-facing listings of the map: the compact region table (arrays
//! collapsed, as the JSON writes them) and the fully expanded list.

use serde::Serialize;

use crate::hex::Hex;
use crate::map::SocMap;
use crate::spec::{NodeSpec, RegionKind};

/// One row of the compact region table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TableRow {
    /// Nesting depth (0 = top level).
    pub depth: usize,
    /// Name pattern, e.g. `eng[0..31]`, `tpb[0..7].psum`.
    pub name: String,
    /// Base: absolute for top-level rows, relative to the parent otherwise.
    pub base: Vec<Hex>,
    /// True when `base` is relative to the parent.
    pub relative: bool,
    /// Instance count.
    pub count: u32,
    /// Stride between instances, for regular arrays.
    pub stride: Option<Hex>,
    /// Size of one instance.
    pub size: Hex,
    /// Region kind.
    pub kind: RegionKind,
    /// CSR block, if any.
    pub block: Option<String>,
    /// Partition geometry / alias / window notes.
    pub notes: String,
    /// Spec section.
    pub source: String,
}

/// One expanded region, for `map --expand`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ExpandedRow {
    /// Dotted name.
    pub name: String,
    /// Absolute base.
    pub base: Hex,
    /// Size in bytes.
    pub size: Hex,
    /// Region kind.
    pub kind: RegionKind,
    /// CSR block, if any.
    pub block: Option<String>,
}

/// The compact table: one row per map node, arrays collapsed.
pub fn region_table(map: &SocMap) -> Vec<TableRow> {
    let mut rows = Vec::new();
    for node in &map.spec.regions {
        push_rows(map, node, 0, "", &mut rows);
    }
    rows
}

fn pattern(node: &NodeSpec) -> String {
    let first = node.first_index.unwrap_or(0);
    let count = node
        .instances
        .as_ref()
        .map_or(node.count.unwrap_or(1), |v| {
            u32::try_from(v.len()).unwrap_or(u32::MAX)
        });
    if node.is_array() {
        format!(
            "{}[{}..{}]",
            node.name,
            first,
            first.saturating_add(count.saturating_sub(1))
        )
    } else {
        node.name.clone()
    }
}

fn push_rows(map: &SocMap, node: &NodeSpec, depth: usize, prefix: &str, rows: &mut Vec<TableRow>) {
    let name = if prefix.is_empty() {
        pattern(node)
    } else {
        format!("{prefix}.{}", pattern(node))
    };
    let (base, count) = match &node.instances {
        Some(list) => (list.clone(), u32::try_from(list.len()).unwrap_or(u32::MAX)),
        None => (vec![node.base.unwrap_or_default()], node.count.unwrap_or(1)),
    };
    let kind = node.kind.unwrap_or(RegionKind::Container);
    let mut notes = Vec::new();
    if let Some(p) = node.partitions {
        let mut s = format!(
            "{} partitions × {} stride, {} populated",
            p.count, p.stride, p.populated
        );
        if let Some(b) = p.bank {
            s.push_str(&format!(", banks of {b}"));
        }
        notes.push(s);
    }
    if let Some(w) = node.window {
        notes.push(format!("in a {w} window"));
    }
    if let Some(a) = &node.alias_of {
        notes.push(format!("mirrors {a}[i]"));
    }
    if let Some(only) = &node.only_parent_indices {
        notes.push(format!("only under parent instances {only:?}"));
    }
    rows.push(TableRow {
        depth,
        name: name.clone(),
        base,
        relative: depth > 0,
        count,
        stride: if node.instances.is_none() && count > 1 {
            node.stride
        } else {
            None
        },
        size: node.size,
        kind,
        block: node.block.clone(),
        notes: notes.join("; "),
        source: node.source.clone(),
    });
    for t in &node.include {
        if let Some(kids) = map.spec.templates.get(t) {
            for k in kids {
                push_rows(map, k, depth + 1, &name, rows);
            }
        }
    }
    for k in &node.children {
        push_rows(map, k, depth + 1, &name, rows);
    }
}

/// Every concrete region in address order.
pub fn expanded(map: &SocMap) -> Vec<ExpandedRow> {
    map.walk()
        .into_iter()
        .map(|id| {
            let r = map.region(id);
            ExpandedRow {
                name: r.name.to_string(),
                base: Hex(r.base),
                size: Hex(r.size_bytes),
                kind: r.kind,
                block: r.block.as_deref().map(str::to_string),
            }
        })
        .collect()
}

/// Renders the compact table as aligned text.
pub fn render_table(rows: &[TableRow]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<38} {:<18} {:>13} {:>5} {:>10}  {:<9} {:<13} {}",
        "REGION", "BASE", "SIZE", "COUNT", "STRIDE", "KIND", "BLOCK", "NOTES"
    ));
    out.push('\n');
    for r in rows {
        let name = format!("{}{}", "  ".repeat(r.depth), r.name);
        let base = if r.base.len() == 1 {
            format!("{}{}", if r.relative { "+" } else { "" }, r.base[0])
        } else {
            format!("{} (+{} listed)", r.base[0], r.base.len() - 1)
        };
        let kind = serde_json::to_value(r.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push_str(
            format!(
                "{:<38} {:<18} {:>13} {:>5} {:>10}  {:<9} {:<13} {}",
                name,
                base,
                r.size.to_string(),
                r.count,
                r.stride.map(|s| s.to_string()).unwrap_or_default(),
                kind,
                r.block.as_deref().unwrap_or_default().to_string(),
                r.notes
            )
            .trim_end(),
        );
        out.push('\n');
        if r.base.len() > 1 {
            let all: Vec<String> = r.base.iter().map(Hex::to_string).collect();
            out.push_str(&format!("{:<38} instances at {}\n", "", all.join(", ")));
        }
    }
    out
}
