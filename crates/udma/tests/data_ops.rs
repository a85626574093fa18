//! What the data path does with each TX word 1 (docs/cme.md §4): the
//! encodings no source describes fault — a SEC_D cause bit, the M2S
//! direction aborted, a fault event, nothing written — and never move as a
//! plain copy; the CRC controls validate_crc and store_source_crc.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Rig, WHOLE, word0};
use dma_abi::{CceType, CmeType, CmeWord, SdmaOp};
use udma::{Dir, EventKind, UnitBlock};

const EN: u32 = 0x0303_0000;
const SRC: u64 = 0x1000_0000;
const DST: u64 = 0x2000_0000;
/// SEC_D cause bits (csr-maps/udma_gen.json).
const M2S_UNSUPPORTED_OP: u32 = 1 << 2;
const M2S_CRC_MISMATCH: u32 = 1 << 3;

fn rig() -> Rig {
    let mut rig = Rig::new(0);
    rig.setup(0, EN, EN);
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 1) as u8).collect();
    rig.mem.put(SRC, &data);
    rig
}

/// Posts one packet at ring index `idx`: one TX descriptor with `word1`,
/// one RX buffer of `rx_len`.
fn packet(rig: &mut Rig, idx: u32, len: u32, word1: u32, src: u64, rx_len: u32, dst: u64) {
    rig.put_desc(Dir::M2s, 0, idx, word0(len, WHOLE), word1, src);
    rig.put_desc(Dir::S2m, 0, idx, word0(rx_len, common::RX), 0, dst);
    rig.doorbells(0, 1);
}

/// The fault every refused word1 raises: the cause bit, the M2S
/// direction in abort, one fault event naming it, nothing written.
fn assert_refused(rig: &Rig, bit: u32, cause: &str, what: &str) {
    let sec_d = rig.r(UnitBlock::Gen, "SEC_D_INT_CAUSE");
    assert_eq!(sec_d & bit, bit, "{what}: SEC_D_INT_CAUSE {sec_d:#x}");
    assert_eq!(
        rig.r(UnitBlock::M2s, "STATE") & 0x3,
        2,
        "{what}: M2S aborted"
    );
    let faults: Vec<_> = rig
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault {
                cause,
                action,
                detail,
                queue,
                dir,
            } => Some((cause.clone(), action.clone(), detail.clone(), *queue, *dir)),
            _ => None,
        })
        .collect();
    assert_eq!(faults.len(), 1, "{what}: {faults:?}");
    let (c, action, detail, queue, dir) = &faults[0];
    assert_eq!(c, &format!("SEC_D_INT_CAUSE.{cause}"), "{what}");
    assert_eq!(action, "abort", "{what}");
    assert_eq!((*queue, *dir), (Some(0), Dir::M2s), "{what}");
    assert!(detail.starts_with("m2s.q0["), "{what}: {detail}");
    assert_eq!(rig.rq(Dir::M2s, 0, "Q_TX_PKT"), 0, "{what}: not completed");
}

fn untouched(rig: &Rig, len: usize) -> bool {
    rig.mem.get(DST, len).iter().all(|&b| b == 0)
}

fn op_word(op: u8) -> u32 {
    CmeWord::DEFAULT_COPY.with_op(SdmaOp::from_bits(op)).raw()
}

#[test]
fn undefined_op_codes_fault_instead_of_copying() {
    for op in [0u8, 3, 5, 6, 7] {
        let mut rig = rig();
        packet(&mut rig, 0, 256, op_word(op), SRC, 256, DST);
        rig.run();
        assert_refused(
            &rig,
            M2S_UNSUPPORTED_OP,
            "M2S_UNSUPPORTED_OP",
            &format!("op {op}"),
        );
        assert!(untouched(&rig, 256), "op {op}: nothing written");
    }
}

#[test]
fn word1_zero_is_not_a_copy() {
    let mut rig = rig();
    packet(&mut rig, 0, 64, 0, SRC, 64, DST);
    rig.run();
    assert_refused(&rig, M2S_UNSUPPORTED_OP, "M2S_UNSUPPORTED_OP", "word1 0");
}

#[test]
fn dre_words_other_than_the_cross_bar_fault() {
    let dre = CmeWord::DEFAULT_COPY.with_op(SdmaOp::Dre);
    let words = [
        (
            "cross-bar form, dtype code 0",
            dre.with_xbar(0).unwrap().raw(),
        ),
        (
            "cross-bar form, 1-byte uint8",
            dre.with_xbar(0x3).unwrap().raw(),
        ),
        ("cross-bar form, fp8", dre.with_xbar(0xE).unwrap().raw()),
        (
            "cross-bar form, unmodelled code 1",
            dre.with_xbar(0x1).unwrap().raw(),
        ),
        ("bare DRE op", 0x0080_0000),
        (
            "DRE with a CRC type",
            dre.with_cme_type(CmeType::Crc32).raw(),
        ),
        ("one bit off the inline fill", 0xB8B8_B8B9),
    ];
    for (what, w) in words {
        assert_eq!(CmeWord::from_raw(w).op(), SdmaOp::Dre, "{what}");
        let mut rig = rig();
        packet(&mut rig, 0, 64, w, SRC, 64, DST);
        rig.run();
        assert_refused(&rig, M2S_UNSUPPORTED_OP, "M2S_UNSUPPORTED_OP", what);
        assert!(untouched(&rig, 64), "{what}");
    }
}

/// The inline path's never-written word 1 (its rings are filled with 0xB8,
/// P9.1 §5) reads as op DRE; the seed describes that descriptor as a
/// CME copy, so it moves its bytes.
#[test]
fn the_inline_fill_word_is_a_copy() {
    let mut rig = rig();
    packet(&mut rig, 0, 256, 0xB8B8_B8B8, SRC, 256, DST);
    rig.run();
    assert!(rig.faults().is_empty(), "{:?}", rig.faults());
    assert_eq!(rig.rq(Dir::M2s, 0, "Q_TX_PKT"), 1);
    assert_eq!(rig.mem.get(DST, 256), rig.mem.get(SRC, 256));
}

#[test]
fn undefined_cce_types_fault() {
    for t in [6u8, 7] {
        let w = CmeWord::DEFAULT_COPY
            .with_cce(CceType::Add, 0xA, 0xA)
            .unwrap()
            .with_optype_value(t)
            .raw();
        let mut rig = rig();
        packet(&mut rig, 0, 64, w, SRC, 64, DST);
        rig.run();
        assert_refused(
            &rig,
            M2S_UNSUPPORTED_OP,
            "M2S_UNSUPPORTED_OP",
            &format!("CCE type {t}"),
        );
        assert!(untouched(&rig, 64));
    }
}

fn crc32_word() -> CmeWord {
    CmeWord::DEFAULT_COPY.with_cme_type(CmeType::Crc32)
}

/// store_source_crc keeps the packet's CRC in the source-CRC slot named by
/// cached_crc_iv_index; a later packet with validate_crc on the same slot
/// completes when its CRC equals it.
#[test]
fn validate_crc_passes_against_the_stored_source_crc() {
    let mut rig = rig();
    let store = crc32_word()
        .with_store_source_crc(true)
        .with_cached_crc_iv_index(2)
        .raw();
    packet(&mut rig, 0, 1024, store, SRC, 1024, DST);
    rig.run();
    assert_eq!(rig.mem.get(DST, 1024), rig.mem.get(SRC, 1024));
    // Read the copy back and check it against the stored CRC.
    let check = crc32_word()
        .with_validate_crc(true)
        .with_copy_src_data(false)
        .with_cached_crc_iv_index(2)
        .raw();
    packet(&mut rig, 1, 1024, check, DST, 64, DST + 0x8000);
    rig.run();
    assert!(rig.faults().is_empty(), "{:?}", rig.faults());
    assert_eq!(rig.rq(Dir::M2s, 0, "Q_TX_PKT"), 2);
    let want = cme::checksum_with_iv(
        cme::ChecksumKind::Crc32,
        0xFFFF_FFFF,
        &rig.mem.get(SRC, 1024),
    );
    let done: Vec<_> = rig
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PacketDone { checksum, .. } => *checksum,
            _ => None,
        })
        .collect();
    assert_eq!(done, [soc_map::Hex32(want), soc_map::Hex32(want)]);
}

/// A CRC that differs from the stored one faults: SEC_D M2S_CRC_MISMATCH,
/// abort, the packet does not complete.
#[test]
fn validate_crc_mismatch_faults() {
    let mut rig = rig();
    let store = crc32_word()
        .with_store_source_crc(true)
        .with_cached_crc_iv_index(5)
        .raw();
    packet(&mut rig, 0, 512, store, SRC, 512, DST);
    rig.run();
    let check = crc32_word()
        .with_validate_crc(true)
        .with_send_crc(true)
        .with_cached_crc_iv_index(5)
        .raw();
    // Other bytes: the source shifted by one.
    packet(&mut rig, 1, 512, check, SRC + 1, 516, DST + 0x1000);
    rig.run();
    assert_eq!(rig.rq(Dir::M2s, 0, "Q_TX_PKT"), 1);
    assert_eq!(
        rig.r(UnitBlock::Gen, "SEC_D_INT_CAUSE") & M2S_CRC_MISMATCH,
        M2S_CRC_MISMATCH
    );
    assert_eq!(rig.r(UnitBlock::M2s, "STATE") & 0x3, 2, "M2S aborted");
    let faults = rig.faults();
    assert_eq!(faults, ["SEC_D_INT_CAUSE.M2S_CRC_MISMATCH"]);
    let detail = rig
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Fault { detail, .. } => Some(detail.clone()),
            _ => None,
        })
        .unwrap();
    assert!(detail.contains("slot 5"), "{detail}");
    // The data streamed before the check landed; the CRC was not sent.
    assert_eq!(rig.mem.get(DST + 0x1000, 512), rig.mem.get(SRC + 1, 512));
    assert_eq!(rig.mem.get(DST + 0x1000 + 512, 4), [0; 4]);
}

/// validate_crc with nothing stored in the slot faults as a mismatch.
#[test]
fn validate_crc_without_a_stored_crc_faults() {
    let mut rig = rig();
    let check = crc32_word()
        .with_validate_crc(true)
        .with_copy_src_data(false)
        .raw();
    packet(&mut rig, 0, 64, check, SRC, 64, DST);
    rig.run();
    assert_refused(&rig, M2S_CRC_MISMATCH, "M2S_CRC_MISMATCH", "empty slot");
}

/// The source-CRC store is not the IV cache: a store_source_crc packet
/// leaves use_stored_crc_iv starting from the queue's CRC init.
#[test]
fn store_source_crc_does_not_seed_the_iv_cache() {
    let mut rig = rig();
    let store = crc32_word().with_store_source_crc(true).raw();
    packet(&mut rig, 0, 100, store, SRC, 100, DST);
    rig.run();
    let resume = crc32_word()
        .with_use_stored_crc_iv(true)
        .with_copy_src_data(false)
        .with_send_crc(true)
        .raw();
    packet(&mut rig, 1, 100, resume, SRC + 100, 4, DST + 0x1000);
    rig.run();
    let fresh = cme::checksum_with_iv(
        cme::ChecksumKind::Crc32,
        0xFFFF_FFFF,
        &rig.mem.get(SRC + 100, 100),
    );
    assert_eq!(rig.mem.get(DST + 0x1000, 4), fresh.to_le_bytes());
}
