//! Every bad-map case is rejected with an error naming the block, the
//! register/field and the JSON path.
#![allow(clippy::unwrap_used)]

use csr::{CsrMap, CsrMapError, CsrMapErrorKind};

/// A map with one block-level envelope around the given register JSON.
fn with_registers(registers: &str) -> String {
    format!(
        r#"{{ "block": "bad_block", "description": "d", "size": "0x100", "source": "s",
             "registers": [ {registers} ] }}"#
    )
}

fn reg(name: &str, offset: &str, extra: &str) -> String {
    format!(
        r#"{{ "name": "{name}", "offset": "{offset}", "access": "RW", "description": "d", "source": "s"{extra} }}"#
    )
}

fn load_err(text: &str) -> CsrMapError {
    CsrMap::from_json(text, "bad_block.json").unwrap_err()
}

fn assert_names(e: &CsrMapError, register: Option<&str>, field: Option<&str>, path: &str) {
    assert_eq!(e.source_name, "bad_block.json");
    assert_eq!(e.block.as_deref(), Some("bad_block"), "{e}");
    assert_eq!(e.register.as_deref(), register, "{e}");
    assert_eq!(e.field.as_deref(), field, "{e}");
    assert_eq!(e.path, path, "{e}");
    let text = e.to_string();
    assert!(text.contains("bad_block"), "{text}");
    if let Some(r) = register {
        assert!(text.contains(r), "{text}");
    }
    if let Some(f) = field {
        assert!(text.contains(f), "{text}");
    }
}

#[test]
fn malformed_json_reports_line_and_column() {
    let e = load_err("{\n  \"block\": \"x\",\n  oops\n}");
    match &e.kind {
        CsrMapErrorKind::Json { line, column, .. } => {
            assert_eq!(*line, 3);
            assert!(*column > 0);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains("line 3"), "{e}");
}

#[test]
fn unknown_keys_are_rejected() {
    let e = load_err(&with_registers(&reg("A", "0x0", r#", "colour": "red""#)));
    match &e.kind {
        CsrMapErrorKind::Json { message, .. } => assert!(message.contains("colour"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "F", "bits": "0", "description": "d", "width": 1 } ]"#,
    )));
    assert!(matches!(e.kind, CsrMapErrorKind::Json { .. }), "{e}");
}

#[test]
fn bad_number_is_a_json_error() {
    let e = load_err(&with_registers(&reg("A", "0xZZ", "")));
    match &e.kind {
        CsrMapErrorKind::Json { message, .. } => assert!(message.contains("0xZZ"), "{message}"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn overlapping_registers() {
    let regs = [reg("A", "0x10", ""), reg("B", "0x10", "")].join(",");
    let e = load_err(&with_registers(&regs));
    assert_names(&e, Some("B"), None, "registers[1].offset");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::Overlap {
            other: "A".into(),
            offset: 0x10
        }
    );
}

#[test]
fn overlapping_array_elements() {
    let regs = [
        reg(
            "ARR",
            "0x0",
            r#", "array": { "count": 4, "stride": "0x10" }"#,
        ),
        reg("B", "0x20", ""),
    ]
    .join(",");
    let e = load_err(&with_registers(&regs));
    assert_names(&e, Some("B"), None, "registers[1].offset");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::Overlap {
            other: "ARR[2]".into(),
            offset: 0x20
        }
    );
    // Interleaved arrays are fine; skipping the element resolves the clash.
    let ok = [
        reg(
            "ARR",
            "0x0",
            r#", "array": { "count": 4, "stride": "0x10", "skip": [2] }"#,
        ),
        reg("B", "0x20", ""),
        reg(
            "ODD",
            "0x8",
            r#", "array": { "count": 4, "stride": "0x10" }"#,
        ),
    ]
    .join(",");
    CsrMap::from_json(&with_registers(&ok), "ok.json").unwrap();
}

#[test]
fn register_beyond_block_size() {
    let e = load_err(&with_registers(&reg("A", "0x100", "")));
    assert_names(&e, Some("A"), None, "registers[0].offset");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::OutsideBlock {
            offset: 0x100,
            size: 0x100
        }
    );
    let e = load_err(&with_registers(&reg(
        "ARR",
        "0xF0",
        r#", "array": { "count": 8, "stride": "0x4" }"#,
    )));
    assert_names(&e, Some("ARR[4]"), None, "registers[0].offset");
}

#[test]
fn misaligned_offset_and_stride() {
    let e = load_err(&with_registers(&reg("A", "0x6", "")));
    assert_names(&e, Some("A"), None, "registers[0].offset");
    assert_eq!(e.kind, CsrMapErrorKind::Misaligned { value: 6 });
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "array": { "count": 2, "stride": "0x6" }"#,
    )));
    assert_names(&e, Some("A"), None, "registers[0].array.stride");
}

#[test]
fn bad_arrays() {
    for (array, path) in [
        (
            r#"{ "count": 0, "stride": "0x4" }"#,
            "registers[0].array.count",
        ),
        (
            r#"{ "count": 2, "stride": "0x0" }"#,
            "registers[0].array.stride",
        ),
        (
            r#"{ "count": 2, "stride": "0x4", "skip": [2] }"#,
            "registers[0].array.skip[0]",
        ),
        (
            r#"{ "count": 2, "stride": "0x4", "skip": [1, 1] }"#,
            "registers[0].array.skip[1]",
        ),
        (
            r#"{ "count": 2, "stride": "0x4", "skip": [0, 1] }"#,
            "registers[0].array.skip",
        ),
    ] {
        let e = load_err(&with_registers(&reg(
            "A",
            "0x0",
            &format!(r#", "array": {array}"#),
        )));
        assert_names(&e, Some("A"), None, path);
        assert!(matches!(e.kind, CsrMapErrorKind::BadArray { .. }), "{e}");
    }
}

#[test]
fn field_bits_outside_31_0_or_malformed() {
    for (bits, reason) in [
        ("32", "31:0"),
        ("35:28", "31:0"),
        ("3:7", "below"),
        ("x", "decimal"),
        ("", "decimal"),
    ] {
        let e = load_err(&with_registers(&reg(
            "A",
            "0x0",
            &format!(r#", "fields": [ {{ "name": "F", "bits": "{bits}", "description": "d" }} ]"#),
        )));
        assert_names(&e, Some("A"), Some("F"), "registers[0].fields[0].bits");
        match &e.kind {
            CsrMapErrorKind::BadBits { text, reason: r } => {
                assert_eq!(text, bits);
                assert!(r.contains(reason), "{r}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn overlapping_fields() {
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "LO", "bits": "7:0", "description": "d" },
                         { "name": "MID", "bits": "11:4", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("MID"), "registers[0].fields[1].bits");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::FieldOverlap {
            other: "LO".into(),
            bits: 0xf0
        }
    );
}

#[test]
fn reset_with_bits_outside_fields() {
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "reset": "0x101", "fields": [ { "name": "F", "bits": "0", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), None, "registers[0].reset");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::ResetOutsideFields {
            reset: 0x101,
            bits: 0x100
        }
    );
}

#[test]
fn reset_values_that_do_not_fit_or_disagree() {
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "reset": "0x100000000""#,
    )));
    assert_names(&e, Some("A"), None, "registers[0].reset");
    assert!(matches!(e.kind, CsrMapErrorKind::ResetTooWide { .. }));

    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "F", "bits": "1:0", "reset": "0x4", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("F"), "registers[0].fields[0].reset");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::FieldResetTooWide { value: 4, width: 2 }
    );

    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "reset": "0x1", "fields": [ { "name": "F", "bits": "1:0", "reset": "0x2", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("F"), "registers[0].fields[0].reset");
    assert!(matches!(e.kind, CsrMapErrorKind::ResetMismatch { .. }));

    let wo = r#"{ "name": "A", "offset": "0x0", "access": "WO", "reset": "0x1", "description": "d", "source": "s" }"#;
    let e = load_err(&with_registers(wo));
    assert_names(&e, Some("A"), None, "registers[0].reset");
    assert_eq!(e.kind, CsrMapErrorKind::ResetOnWriteOnlyBits { bits: 1 });
}

#[test]
fn unknown_access_kind_in_register_and_field() {
    let r =
        r#"{ "name": "A", "offset": "0x0", "access": "RX", "description": "d", "source": "s" }"#;
    let e = load_err(&with_registers(r));
    assert_names(&e, Some("A"), None, "registers[0].access");
    assert_eq!(e.kind, CsrMapErrorKind::UnknownAccess { text: "RX".into() });
    assert!(e.to_string().contains("RW, RO"), "{e}");

    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "F", "bits": "0", "access": "rw", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("F"), "registers[0].fields[0].access");
}

#[test]
fn duplicate_names() {
    let regs = [reg("A", "0x0", ""), reg("a", "0x4", "")].join(",");
    let e = load_err(&with_registers(&regs));
    // Lower-case names fail the spelling check first; use two upper-case ones.
    assert!(matches!(e.kind, CsrMapErrorKind::BadName { .. }), "{e}");
    let regs = [reg("A", "0x0", ""), reg("A", "0x4", "")].join(",");
    let e = load_err(&with_registers(&regs));
    assert_names(&e, Some("A"), None, "registers[1].name");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::DuplicateName {
            name: "A".into(),
            first: "registers[0].name".into()
        }
    );

    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "F", "bits": "0", "description": "d" },
                         { "name": "F", "bits": "1", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("F"), "registers[0].fields[1].name");
    assert!(matches!(e.kind, CsrMapErrorKind::DuplicateName { .. }));
}

#[test]
fn bad_names() {
    let e = load_err(&with_registers(&reg("Q-CFG", "0x0", "")));
    assert_names(&e, Some("Q-CFG"), None, "registers[0].name");
    let e = load_err(
        r#"{ "block": "Bad", "description": "d", "size": "0x10", "source": "s", "registers": [] }"#,
    );
    assert!(matches!(e.kind, CsrMapErrorKind::BadName { .. }), "{e}");
    assert_eq!(e.path, "block");
}

#[test]
fn bad_block_size() {
    for size in ["0x0", "0x6", "0x200000"] {
        let e = load_err(&format!(
            r#"{{ "block": "bad_block", "description": "d", "size": "{size}", "source": "s", "registers": [] }}"#
        ));
        assert!(
            matches!(e.kind, CsrMapErrorKind::BadBlockSize { .. }),
            "{e}"
        );
        assert_eq!(e.path, "size");
    }
}

#[test]
fn multiple_inc_fields() {
    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "fields": [ { "name": "X", "bits": "7:0", "access": "INC", "description": "d" },
                         { "name": "Y", "bits": "15:8", "access": "DEC", "description": "d" } ]"#,
    )));
    assert_names(&e, Some("A"), Some("Y"), "registers[0].fields[1].access");
    assert_eq!(
        e.kind,
        CsrMapErrorKind::MultipleDeltaFields { other: "X".into() }
    );
}

#[test]
fn bad_aliases() {
    let regs = [
        reg(
            "ARR",
            "0x0",
            r#", "array": { "count": 4, "stride": "0x4" }"#,
        ),
        reg("B", "0x20", r#", "aliases": ["ARR[1]"]"#),
    ]
    .join(",");
    let e = load_err(&with_registers(&regs));
    assert_names(&e, Some("B"), None, "registers[1].aliases[0]");
    assert!(matches!(e.kind, CsrMapErrorKind::BadAlias { .. }), "{e}");

    let regs = [
        reg("A", "0x0", ""),
        reg("B", "0x4", r#", "aliases": ["A"]"#),
    ]
    .join(",");
    assert!(matches!(
        load_err(&with_registers(&regs)).kind,
        CsrMapErrorKind::BadAlias { .. }
    ));

    let regs = [
        reg("A", "0x0", r#", "aliases": ["X"]"#),
        reg("B", "0x4", r#", "aliases": ["X"]"#),
    ]
    .join(",");
    let e = load_err(&with_registers(&regs));
    assert_names(&e, Some("B"), None, "registers[1].aliases[0]");
    assert!(matches!(e.kind, CsrMapErrorKind::DuplicateName { .. }));

    let e = load_err(&with_registers(&reg(
        "ARR",
        "0x0",
        r#", "array": { "count": 2, "stride": "0x4" }, "aliases": ["Z"]"#,
    )));
    assert!(matches!(e.kind, CsrMapErrorKind::BadAlias { .. }), "{e}");

    let e = load_err(&with_registers(&reg(
        "A",
        "0x0",
        r#", "aliases": ["lower"]"#,
    )));
    assert!(matches!(e.kind, CsrMapErrorKind::BadAlias { .. }), "{e}");
}
