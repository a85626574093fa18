//! The register listing of one block, for `neuron-sim csr list BLOCK`
//! (text and `--json`).

use serde::Serialize;
use soc_map::{Hex, Hex32};

use crate::map::CsrMap;

/// One register (or register array) of a block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RegisterListing {
    /// Register name.
    pub name: String,
    /// Offset of the register (of element 0 for arrays).
    pub offset: Hex,
    /// Access kind (`RW`, `RO`, `WO`, `W1C`, `W0C`, `RC`, `INC`, `DEC`).
    pub access: String,
    /// Reset value.
    pub reset: Hex32,
    /// Array element count, for arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Array stride, for arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stride: Option<Hex>,
    /// Description.
    pub description: String,
    /// Fields, low bit first.
    pub fields: Vec<FieldListing>,
}

/// One field of a register.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldListing {
    /// Field name.
    pub name: String,
    /// Bit range, `"17"` or `"30:28"`.
    pub bits: String,
    /// Access kind.
    pub access: String,
    /// Reset value of the field.
    pub reset: Hex,
    /// Description.
    pub description: String,
}

/// Lists every register of a block in offset order.
pub fn list(map: &CsrMap) -> Vec<RegisterListing> {
    map.registers()
        .iter()
        .map(|r| RegisterListing {
            name: r.name().to_string(),
            offset: Hex(r.offset()),
            access: r.access().as_str().to_string(),
            reset: Hex32(r.reset()),
            count: r.array().map(|a| a.count()),
            stride: r.array().map(|a| Hex(a.stride())),
            description: r.description().to_string(),
            fields: r
                .fields()
                .iter()
                .map(|f| FieldListing {
                    name: f.name().to_string(),
                    bits: f.bits(),
                    access: f.access().as_str().to_string(),
                    reset: Hex(u64::from(f.reset())),
                    description: f.description().to_string(),
                })
                .collect(),
        })
        .collect()
}

/// Aligned text: one line per register, fields indented below it.
pub fn render_text(map: &CsrMap, rows: &[RegisterListing]) -> String {
    let mut out = format!(
        "{} (size {:#x}): {}\n",
        map.block(),
        map.size(),
        map.description()
    );
    out.push_str(&format!(
        "{:<8} {:<26} {:<6} {:<10}\n",
        "OFFSET", "REGISTER", "ACCESS", "RESET"
    ));
    for r in rows {
        let name = match (r.count, r.stride) {
            (Some(c), Some(s)) => format!("{}[{c}] /{s}", r.name),
            _ => r.name.clone(),
        };
        out.push_str(
            format!(
                "{:<8} {:<26} {:<6} {:<10} {}",
                format!("{:#06x}", r.offset.0),
                name,
                r.access,
                r.reset.to_string(),
                first_sentence(&r.description)
            )
            .trim_end(),
        );
        out.push('\n');
        for f in &r.fields {
            out.push_str(
                format!(
                    "{:<8}   {:<24} {:<6} {:<10} {}",
                    "",
                    format!("[{}] {}", f.bits, f.name),
                    f.access,
                    f.reset.to_string(),
                    first_sentence(&f.description)
                )
                .trim_end(),
            );
            out.push('\n');
        }
    }
    out
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_queue_registers_with_fields() {
        let catalog = crate::catalog().unwrap();
        let map = catalog.block("udma_m2s_q").unwrap();
        let rows = list(map);
        let cfg = rows.iter().find(|r| r.name == "Q_CFG").unwrap();
        assert_eq!(cfg.offset, Hex(0x20));
        assert_eq!(cfg.reset, Hex32(0x0300_0000));
        assert!(
            cfg.fields
                .iter()
                .any(|f| f.name == "EN_PREF" && f.bits == "16")
        );
        let comp = rows.iter().find(|r| r.name == "COMP_CFG").unwrap();
        assert_eq!(comp.offset, Hex(0xA0));
        let text = render_text(map, &rows);
        assert!(text.contains("0x0038   TDRTP_INC"), "{text}");
        let sem = list(crate::catalog().unwrap().block("evt_sem").unwrap());
        let inc = sem.iter().find(|r| r.name == "SEM_INC").unwrap();
        assert_eq!((inc.count, inc.stride), (Some(256), Some(Hex(4))));
    }
}
