//! Snapshot of every built-in map's reset state: each register (arrays as one
//! entry with count and stride), its access kind, reset value and fields.
//! Review the YAML under `tests/snapshots/` against the spec when it changes.
#![allow(clippy::unwrap_used)]

use serde::Serialize;

#[derive(Serialize)]
struct Register {
    offset: String,
    name: String,
    access: String,
    reset: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    array: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aliases: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fields: Vec<String>,
}

#[test]
fn reset_state_of_every_builtin_map() {
    let catalog = csr::catalog().unwrap();
    for map in catalog.maps() {
        let mut regs: Vec<&csr::RegisterSpec> = map.registers().iter().collect();
        regs.sort_by_key(|r| r.offset());
        let summary: Vec<Register> = regs
            .into_iter()
            .map(|r| Register {
                offset: format!("0x{:04x}", r.offset()),
                name: r.name().to_string(),
                access: r.access().to_string(),
                reset: format!("0x{:08x}", r.reset()),
                array: r.array().map(|a| {
                    let mut s = format!("{} x {:#x}", a.count(), a.stride());
                    if !a.skip().is_empty() {
                        s.push_str(&format!(" skip {:?}", a.skip()));
                    }
                    s
                }),
                aliases: (!r.aliases().is_empty()).then(|| r.aliases().to_vec()),
                fields: r
                    .fields()
                    .iter()
                    .map(|f| {
                        format!(
                            "{:>5} {} {} = {:#x}",
                            f.bits(),
                            f.name(),
                            f.access(),
                            f.reset()
                        )
                    })
                    .collect(),
            })
            .collect();
        insta::assert_yaml_snapshot!(map.block(), summary);
    }
}

#[test]
fn a_fresh_register_file_equals_reset_everywhere() {
    let catalog = csr::catalog().unwrap();
    for map in catalog.maps() {
        let rf = csr::RegFile::new(map);
        assert!(rf.diff_from_reset().is_empty(), "{}", map.block());
        for (r, v) in rf.iter() {
            assert_eq!(v, r.spec().reset(), "{} {}", map.block(), r);
        }
    }
}
