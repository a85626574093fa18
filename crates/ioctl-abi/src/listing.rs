//! The serializable listing of the table (`neuron-sim ioctl list --json`)
//! and the generated sections of `docs/ioctl-abi.md`.

use std::fmt::Write as _;

use serde::Serialize;
use soc_map::Hex32;

use crate::args::{STRUCTS, StructInfo};
use crate::encoding::{Decoded, Dir};
use crate::table::{Alias, IoctlDef, Since, SizeFrom, TABLE, lookup};

/// One row of the listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct IoctlListing {
    /// Driver name without `NEURON_IOCTL_`.
    pub name: &'static str,
    /// Direction bits: `NONE`, `W`, `R` or `RW`.
    pub dir: Dir,
    /// `_IOC_NR`.
    pub nr: u8,
    /// Encoded `_IOC_SIZE` (8 for pointer-declared ioctls).
    pub size: usize,
    /// The 32-bit number (`0x80384e66`; the text listing and the docs
    /// write it as the driver's headers do, [`hex32`]).
    pub value: Hex32,
    /// Bytes the handler copies.
    pub struct_size: usize,
    /// What `size` was computed from: `pointer` or `struct`.
    pub size_from: SizeFrom,
    /// The argument type (Rust name in `ioctl_abi::args`).
    pub arg: &'static str,
    /// First driver snapshot with the number: `2.24` or `newer`.
    pub since: Since,
    /// EACCES unless the caller is attached (docs/references/driver.md §1.6).
    pub attach_gated: bool,
    /// Other names of the number.
    pub aliases: Vec<Alias>,
    /// One-line summary.
    pub summary: &'static str,
}

/// `0x80384E66`: a number as the driver's headers and the text listing
/// write it (JSON has the one form of every number, `0x80384e66`).
#[must_use]
pub fn hex32(value: u32) -> String {
    format!("0x{value:08X}")
}

impl From<&IoctlDef> for IoctlListing {
    fn from(d: &IoctlDef) -> Self {
        Self {
            name: d.name,
            dir: d.dir,
            nr: d.nr,
            size: d.arg_size,
            value: Hex32(d.value),
            struct_size: d.struct_size,
            size_from: d.size_from,
            arg: d.arg.name,
            since: d.since,
            attach_gated: d.attach_gated,
            aliases: d.aliases.to_vec(),
            summary: d.summary.trim(),
        }
    }
}

/// Every supported ioctl, in table order.
#[must_use]
pub fn list() -> Vec<IoctlListing> {
    TABLE.iter().map(IoctlListing::from).collect()
}

/// What a 32-bit number is: its fields, and the ioctl or the errno the
/// lookup gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NumberInfo {
    /// The number.
    pub value: Hex32,
    /// Its `_IOC` fields.
    pub decoded: Decoded,
    /// The type byte as a character when printable.
    pub type_char: Option<char>,
    /// The supported ioctl with this exact number.
    pub ioctl: Option<IoctlListing>,
    /// The errno [`lookup`] returns otherwise.
    pub error: Option<&'static str>,
}

/// Decodes any number and looks it up.
#[must_use]
pub fn describe(value: u32) -> NumberInfo {
    let decoded = Decoded::new(value);
    let (ioctl, error) = match lookup(value) {
        Ok(d) => (Some(IoctlListing::from(d)), None),
        Err(e) => (None, Some(e.name())),
    };
    NumberInfo {
        value: Hex32(value),
        decoded,
        type_char: decoded
            .ty
            .is_ascii_graphic()
            .then_some(char::from(decoded.ty)),
        ioctl,
        error,
    }
}

/// Plain-text table for `neuron-sim ioctl list`.
#[must_use]
pub fn render_text(rows: &[IoctlListing]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:<4} {:>3} {:>5} {:>6}  {:<30} {:<6} aliases",
        "value", "dir", "nr", "size", "struct", "name", "since"
    );
    for r in rows {
        let aliases = r
            .aliases
            .iter()
            .map(|a| format!("{} ({})", a.name, a.source))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "{:<10} {:<4} {:>3} {:>5} {:>6}  {:<30} {:<6} {}",
            hex32(r.value.0),
            r.dir.short(),
            r.nr,
            r.size,
            r.struct_size,
            r.name,
            r.since.label(),
            aliases
        );
    }
    // Trailing spaces of rows without aliases.
    out.lines()
        .map(str::trim_end)
        .fold(String::new(), |mut acc, l| {
            acc.push_str(l);
            acc.push('\n');
            acc
        })
}

/// Renders one generated section.
pub type Renderer = fn() -> String;

/// Generated section names in `docs/ioctl-abi.md`, with their renderers.
pub const DOC_SECTIONS: &[(&str, Renderer)] = &[
    ("ioctl-table", markdown_table),
    ("struct-layouts", markdown_layouts),
];

/// The ioctl table as Markdown.
#[must_use]
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| value | name | dir | nr | size | struct | argument | since | gated | aliases |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in list() {
        let aliases = r
            .aliases
            .iter()
            .map(|a| format!("{} ({})", a.name, a.source))
            .collect::<Vec<_>>()
            .join("; ");
        let size = match r.size_from {
            SizeFrom::Pointer => format!("{} (ptr)", r.size),
            SizeFrom::Struct => r.size.to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | `{}` | {} | {} | {} |",
            hex32(r.value.0),
            r.name,
            r.dir.short(),
            r.nr,
            size,
            r.struct_size,
            r.arg,
            r.since.label(),
            if r.attach_gated { "yes" } else { "" },
            aliases
        );
    }
    out
}

fn users(s: &StructInfo) -> String {
    let names: Vec<_> = TABLE
        .iter()
        .filter(|d| d.arg.name == s.name)
        .map(|d| d.name)
        .collect();
    if names.is_empty() {
        "pointed to by another argument".to_string()
    } else {
        format!("argument of {}", names.join(", "))
    }
}

/// The argument-struct layouts as Markdown.
#[must_use]
pub fn markdown_layouts() -> String {
    let mut out = String::new();
    for s in STRUCTS {
        let _ = writeln!(out, "#### `{}` — {} bytes\n", s.name, s.size);
        let _ = writeln!(
            out,
            "{} ({}).\n",
            collapse(s.doc).trim_end_matches('.'),
            users(s)
        );
        out.push_str("| offset | field | type | meaning |\n|---|---|---|---|\n");
        for f in s.fields {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                f.offset,
                if f.is_padding() {
                    format!("_{}_", f.name.trim_start_matches('_'))
                } else {
                    format!("`{}`", f.name)
                },
                f.c_type(),
                collapse(f.doc)
            );
        }
        out.push('\n');
    }
    out
}

fn collapse(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Replaces every generated section of `doc` (between
/// `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`)
/// with its current rendering. Sections missing from `doc` are ignored.
#[must_use]
pub fn refresh_doc(doc: &str) -> String {
    let mut text = doc.to_string();
    for (name, render) in DOC_SECTIONS {
        let begin = format!("<!-- BEGIN GENERATED: {name} -->\n");
        let end = format!("<!-- END GENERATED: {name} -->");
        let (Some(b), Some(e)) = (text.find(&begin), text.find(&end)) else {
            continue;
        };
        let start = b + begin.len();
        if e < start {
            continue;
        }
        text.replace_range(start..e, &render());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_has_hex_values() {
        let rows = list();
        assert_eq!(rows.len(), TABLE.len());
        let r = rows.iter().find(|r| r.name == "MEM_ALLOC_V2MT64").unwrap();
        assert_eq!(hex32(r.value.0), "0x80384E66");
        // JSON has the one form of every number: lower case, no padding.
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["value"], "0x80384e66");
        assert_eq!(r.dir, Dir::Read);
        assert_eq!((r.nr, r.size, r.struct_size), (102, 56, 56));
    }

    #[test]
    fn describe_names_known_and_unknown_numbers() {
        let d = describe(0xC038_4E6C);
        assert_eq!(d.ioctl.unwrap().name, "MEM_COPY_ASYNC64");
        assert_eq!(d.type_char, Some('N'));
        let d = describe(0x8008_4EFF);
        assert_eq!(d.error, Some("ENOTTY"));
    }

    #[test]
    fn refresh_replaces_only_the_sections() {
        let doc = "a\n<!-- BEGIN GENERATED: ioctl-table -->\nold\n<!-- END GENERATED: ioctl-table -->\nb\n";
        let new = refresh_doc(doc);
        assert!(new.starts_with("a\n<!-- BEGIN GENERATED: ioctl-table -->\n| value |"));
        assert!(new.ends_with("<!-- END GENERATED: ioctl-table -->\nb\n"));
        assert!(!new.contains("old"));
        assert_eq!(refresh_doc(&new), new);
    }

    #[test]
    fn text_rendering_has_every_row() {
        let text = render_text(&list());
        assert_eq!(text.lines().count(), TABLE.len() + 1);
        assert!(text.contains("0xC0204E81 RW   129    32     32  MEM_BUF_ZEROCOPY64_BATCHES"));
    }
}
