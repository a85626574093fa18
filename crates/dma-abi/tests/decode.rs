//! The serializable decode, its text form, and the hex input form.
#![allow(clippy::unwrap_used)]

use dma_abi::{
    CceType, CmeType, CmeWord, DescParseError, Descriptor, Flags, LenCtrl, SdmaOp,
    parse_hex_descriptor, render_text, rx, tx,
};

/// The driver's H2T-style copy: 4 KiB, FIRST|LAST, ring 1, CME COPY.
fn copy_tx() -> Descriptor {
    tx(4096, 0x20_0000_0000, Flags::single(1)).unwrap()
}

#[test]
fn json_decode_names_every_field() {
    let json = serde_json::to_value(copy_tx().decode()).unwrap();
    assert_eq!(json["raw"], "0010000d030008010000000020000000");
    // Every number in the one JSON form: `0x`, lower case, no padding.
    assert_eq!(json["word0"], "0xd001000");
    assert_eq!(json["word1"], "0x1080003");
    assert_eq!(json["buf_ptr"], "0x2000000000");
    assert_eq!(json["len"], 4096);
    // One name per concept: the byte count is `len` only.
    assert!(json.get("length").is_none());
    assert_eq!(json["ring_id"], 1);
    assert_eq!(json["first"], true);
    assert_eq!(json["last"], true);
    assert_eq!(json["dmb"], false);
    assert_eq!(json["reserved_16_22"], 0);
    let cme = &json["cme"];
    assert_eq!(cme["block_attr"], 3);
    assert_eq!(cme["is_first_block"], true);
    assert_eq!(cme["is_last_block"], true);
    assert_eq!(cme["copy_src_data"], true);
    assert_eq!(cme["op"], "CME");
    assert_eq!(cme["op_value"], 2);
    assert_eq!(cme["optype"], "COPY");
    assert_eq!(cme["optype_value"], 0);
    assert_eq!(cme["write_barrier"], false);
    assert_eq!(json["rx"]["buf1_ptr"], "0x2000000000");
    assert_eq!(json["rx"]["buf2_ptr_lo"], "0x1080003");
    assert_eq!(json["tx_meta"]["meta1"], "0x0");
    assert_eq!(json["tx_meta"]["meta2"], "0x20");
}

#[test]
fn json_key_order_is_stable() {
    let text = serde_json::to_string(&copy_tx().decode()).unwrap();
    let keys = [
        "\"raw\"",
        "\"word0\"",
        "\"word1\"",
        "\"buf_ptr\"",
        "\"len\"",
        "\"meta\"",
        "\"ring_id\"",
        "\"first\"",
        "\"last\"",
        "\"int_en\"",
        "\"sow\"",
        "\"dmb\"",
        "\"concat\"",
        "\"reserved_16_22\"",
        "\"cme\"",
        "\"rx\"",
        "\"tx_meta\"",
    ];
    let positions: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn len_zero_prints_65536() {
    let d = parse_hex_descriptor("00000000 00000000 00000000 00000000").unwrap();
    let dec = d.decode();
    assert_eq!(dec.len, 65536);
    assert_eq!(dec.cme.op, "UNKNOWN");
}

#[test]
fn cce_optype_is_named_by_the_cce_table() {
    let w1 = CmeWord::default()
        .with_op(SdmaOp::Cce)
        .with_cce_type(CceType::Max);
    let d = tx(256, 0, Flags::default()).unwrap().with_word1(w1);
    let dec = d.decode();
    assert_eq!((dec.cme.op, dec.cme.optype), ("CCE", "MAX"));
    assert_eq!(dec.cme.optype_value, 2);
    // The same optype value under CME is CRC32C.
    let dec = d.with_word1(w1.with_op(SdmaOp::Cme)).decode();
    assert_eq!(dec.cme.optype, CmeType::Crc32c.name());
}

#[test]
fn snapshot_copy_tx() {
    let d = copy_tx();
    insta::assert_snapshot!(
        "copy_tx_json",
        serde_json::to_string_pretty(&d.decode()).unwrap()
    );
    insta::assert_snapshot!("copy_tx_text", render_text(&d.decode()));
}

#[test]
fn snapshot_odd_descriptor_warns() {
    // Undefined word0 bits, reserved word1 bits, an unknown op, CRC flags.
    let w0 = LenCtrl::from_raw(0x0055_0000)
        .with_len_bytes(65536)
        .unwrap()
        .with_flags(Flags {
            concat: true,
            dmb: true,
            ring_id: 2,
            ..Flags::default()
        });
    let w1 = CmeWord::default()
        .with_op_value(6)
        .with_cme_type(CmeType::Crc32)
        .with_validate_crc(true)
        .with_src_byte_swap(true)
        .with_cached_crc_iv_index(5)
        .with_reserved(0x11);
    let d = Descriptor::new(w0, w1.raw(), 0x4000_1234_5678_9ABC);
    insta::assert_snapshot!("odd_text", render_text(&d.decode()));
}

#[test]
fn snapshot_rx_text() {
    let d = rx(1024, 0x28_0200_0000).unwrap().with_flags(Flags {
        sow: true,
        ring_id: 1,
        ..Flags::default()
    });
    insta::assert_snapshot!("rx_text", render_text(&d.decode()));
}

#[test]
fn text_has_no_warnings_for_a_clean_copy() {
    assert!(!render_text(&copy_tx().decode()).contains("warning"));
}

#[test]
fn parse_errors_name_the_problem() {
    let short = "0010000d03000801000000002000";
    let e = parse_hex_descriptor(short).unwrap_err();
    assert_eq!(e, DescParseError::WrongLength { found: 28 });
    assert_eq!(
        e.to_string(),
        "expected 32 hex digits (16 bytes in memory order), found 28"
    );

    let e = parse_hex_descriptor(&format!("{short}000000")).unwrap_err();
    assert_eq!(e, DescParseError::WrongLength { found: 34 });
    assert_eq!(
        parse_hex_descriptor("").unwrap_err(),
        DescParseError::WrongLength { found: 0 }
    );

    let e = parse_hex_descriptor("0x0010000d030008010000000020000000").unwrap_err();
    assert_eq!(e, DescParseError::HexPrefix);
    assert!(e.to_string().contains("memory order"), "{e}");
    assert_eq!(
        parse_hex_descriptor("0010000d 0X030008010000000020000000").unwrap_err(),
        DescParseError::HexPrefix
    );

    let e = parse_hex_descriptor("0010010g030008010000000020000000").unwrap_err();
    assert_eq!(
        e,
        DescParseError::InvalidChar {
            ch: 'g',
            position: 8
        }
    );
    assert_eq!(
        e.to_string(),
        "invalid character 'g' at position 8: expected hex digits, `_` or spaces"
    );
}

#[test]
fn parse_reads_memory_order() {
    let d = parse_hex_descriptor("00100 00d_03000801 0000000020000000\n").unwrap();
    assert_eq!(d, copy_tx());
    assert_eq!(d.len_ctrl().raw(), 0x0D00_1000);
}

#[test]
fn unnamed_cce_optype_warns() {
    let w1 = CmeWord::default().with_op(SdmaOp::Cce).with_optype_value(7);
    let d = tx(64, 0, Flags::default()).unwrap().with_word1(w1);
    let dec = d.decode();
    assert_eq!(
        (dec.cme.op, dec.cme.optype, dec.cme.optype_value),
        ("CCE", "UNKNOWN", 7)
    );
    let text = render_text(&dec);
    assert!(
        text.contains("warning: word1 optype = 7 names no CCE operation"),
        "{text}"
    );
    assert!(!text.contains("names no engine"), "{text}");
}
