//! Bit positions and byte layout against the spec values (docs/references/driver.md
//! §3.1–3.4, P9.1 §3 and §5.1, docs/references/wiki.md §C.1, §C.6, §F.2, §J.1).
#![allow(clippy::unwrap_used)]

use dma_abi::{
    CceType, CmeType, CmeWord, DEFAULT_COPY_WORD1, DEFAULT_COPY_WORD1_WRITE_BARRIER, Descriptor,
    Flags, GEN_TAG_BUILD_MASK, LenCtrl, LenError, OpType, SdmaOp, encode_len, gen_tag, rx, tx,
    with_gen_tag,
};

// ---- word 0 -------------------------------------------------------------

#[test]
fn first_last_4096_ring1_is_0x0d001000() {
    let w = LenCtrl::default()
        .with_len_bytes(4096)
        .unwrap()
        .with_first(true)
        .with_last(true)
        .with_ring_id(1);
    assert_eq!(w.raw(), 0x0D00_1000);

    let d = LenCtrl::from_raw(0x0D00_1000);
    assert_eq!(d.len_bytes(true), 4096);
    assert_eq!(d.ring_id(), 1);
    assert!(d.first() && d.last());
    assert!(!d.meta() && !d.int_en() && !d.sow() && !d.dmb() && !d.concat());
    assert_eq!(d.reserved(), 0);
}

#[test]
fn word0_0x0d011000_carries_undefined_bit16() {
    // FIRST|LAST|ring 1|4096 is 0x0D00_1000; the often-quoted 0x0D01_1000
    // differs by bit 16, which the driver layout leaves undefined.
    let d = LenCtrl::from_raw(0x0D01_1000);
    assert_eq!(d.reserved(), 0x01);
    assert_eq!(d.len_bytes(true), 4096);
    assert_eq!(d.flags(), Flags::single(1));
    assert_eq!(d.with_reserved(0).raw(), 0x0D00_1000);
}

#[test]
fn word0_single_bits_sit_where_the_driver_puts_them() {
    let bit = |n: u32| LenCtrl::from_raw(1 << n);
    assert_eq!(bit(0).len_field(), 1);
    assert_eq!(bit(15).len_field(), 0x8000);
    for n in 16..=22 {
        assert_eq!(bit(n).reserved(), 1 << (n - 16), "bit {n}");
        assert_eq!(bit(n).len_field(), 0);
    }
    assert!(bit(23).meta());
    assert_eq!(bit(24).ring_id(), 1);
    assert_eq!(bit(25).ring_id(), 2);
    assert!(bit(26).first());
    assert!(bit(27).last());
    assert!(bit(28).int_en());
    assert!(bit(29).sow());
    assert!(bit(30).dmb());
    assert!(bit(31).concat());
    // Each flag reads only its own bit.
    assert!(!bit(26).last() && !bit(27).first() && !bit(30).concat());
}

#[test]
fn len_encoding_follows_encode_64k() {
    assert_eq!(encode_len(1), Ok(1));
    assert_eq!(encode_len(65535), Ok(0xFFFF));
    assert_eq!(encode_len(65536), Ok(0));
    assert_eq!(encode_len(0), Err(LenError::Zero));
    assert_eq!(encode_len(65537), Err(LenError::TooLong(65537)));
    assert_eq!(encode_len(u32::MAX), Err(LenError::TooLong(u32::MAX)));

    let w = LenCtrl::default().with_len_bytes(65536).unwrap();
    assert_eq!(w.raw(), 0);
    assert_eq!(w.len_field(), 0);
    assert_eq!(w.len_bytes(true), 65536);
    assert_eq!(w.len_bytes(false), 0);
    assert_eq!(LenCtrl::from_raw(0x1234).len_bytes(true), 0x1234);
    assert_eq!(LenCtrl::from_raw(0x1234).len_bytes(false), 0x1234);

    // Setting the length leaves the flags alone.
    let flagged = LenCtrl::from_raw(0xFFFF_0000).with_len_bytes(8).unwrap();
    assert_eq!(flagged.raw(), 0xFFFF_0008);
    assert!(LenError::Zero.to_string().contains("65536"));
    assert!(LenError::TooLong(70000).to_string().contains("70000"));
}

// ---- the firmware generation-tag quirk (P9.1 §3, §5.1) -------------

#[test]
fn gen_tag_quirk_is_exactly_the_firmware_expression() {
    assert_eq!(GEN_TAG_BUILD_MASK, 0xFCFF_0000);
    for (word0, len, tag) in [
        (0u32, 4096u32, 1u32),
        (0xFFFF_FFFF, 16, 0),
        (0xB8B8_B8B8, 65536, 1),
        (0x1234_5678, 0x10, 3),
    ] {
        assert_eq!(
            with_gen_tag(word0, len, tag),
            (word0 & 0xFCFF_0000) | len | (tag << 24)
        );
    }
}

#[test]
fn gen_tag_lands_in_ring_id_not_the_dwarf_fields() {
    // The DWARF reading would call bits 25:24 dmb + concatenate; in the
    // driver layout they are RING_ID, and nothing else changes.
    let w = LenCtrl::from_raw(with_gen_tag(0, 16, 3));
    assert_eq!(w.raw(), 0x0300_0010);
    assert_eq!(w.ring_id(), 3);
    assert_eq!(
        w.flags(),
        Flags {
            ring_id: 3,
            ..Flags::default()
        }
    );
    assert_eq!(w.len_bytes(true), 16);
    // The completion poll reads the same bits.
    assert_eq!(gen_tag(w.raw()), 3);
    assert_eq!(gen_tag(0x0D00_1000), 1);
}

#[test]
fn gen_tag_quirk_keeps_stale_bits_and_64k_sets_bit16() {
    // init_dma_queue fills the rings with 0xB8; the build mask keeps the old
    // byte 3 flags and byte 2 bits.
    let w = LenCtrl::from_raw(with_gen_tag(0xB8B8_B8B8, 4096, 1));
    assert_eq!(w.raw(), 0xB9B8_1000);
    assert_eq!(w.ring_id(), 1);
    assert!(w.concat() && w.sow() && w.int_en() && w.last() && w.meta());
    assert!(!w.first() && !w.dmb());
    assert_eq!(w.reserved(), 0x38);

    // A 64 KiB chunk: LEN = 0 (65536 under ENCODE_64K) and undefined bit 16.
    let w = LenCtrl::from_raw(with_gen_tag(0, 65536, 1));
    assert_eq!(w.raw(), 0x0101_0000);
    assert_eq!(w.len_bytes(true), 65536);
    assert_eq!(w.reserved(), 0x01);
    assert_eq!(w.ring_id(), 1);
}

#[test]
fn inline_path_tags_flip_per_wrap_of_four() {
    // P9.1 §5.1: dma_ring_id starts at 1, ring depth 4, `^= 1` on wrap.
    let mut tag = 1u32;
    let mut idx = 0;
    let mut word0 = 0u32;
    let mut seen = Vec::new();
    for _ in 0..10 {
        word0 = with_gen_tag(word0, 512, tag);
        seen.push(gen_tag(word0));
        idx += 1;
        if idx == 4 {
            idx = 0;
            tag ^= 1;
        }
    }
    assert_eq!(seen, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1]);
    assert_eq!(LenCtrl::from_raw(word0).len_bytes(true), 512);
}

// ---- word 1 -------------------------------------------------------------

#[test]
fn default_copy_word_is_built_from_its_fields() {
    let w = CmeWord::default()
        .with_last_block(true)
        .with_first_block(true)
        .with_copy_src_data(true)
        .with_op(SdmaOp::Cme)
        .with_cme_type(CmeType::Copy);
    assert_eq!(w.raw(), 0x0108_0003);
    assert_eq!(w.raw(), DEFAULT_COPY_WORD1);
    assert_eq!(w.with_write_barrier(true).raw(), 0x0508_0003);
    assert_eq!(
        w.with_write_barrier(true).raw(),
        DEFAULT_COPY_WORD1_WRITE_BARRIER
    );
    assert_eq!(CmeWord::DEFAULT_COPY, w);
}

#[test]
fn default_copy_word_decodes_to_a_single_block_cme_copy() {
    let w = CmeWord::from_raw(0x0108_0003);
    assert_eq!(w.block_attr(), 0b011);
    assert!(w.is_first_block() && w.is_last_block());
    assert!(w.copy_src_data());
    assert_eq!(w.op(), SdmaOp::Cme);
    assert_eq!(w.op_value(), 2);
    assert_eq!(w.cme_type(), CmeType::Copy);
    assert_eq!(w.optype(), OpType::Cme(CmeType::Copy));
    assert_eq!(w.optype().name(), "COPY");
    assert_eq!(w.cached_crc_iv_index(), 0);
    assert_eq!(w.endian_type(), 0);
    assert!(!w.validate_crc() && !w.use_stored_crc_iv() && !w.send_crc());
    assert!(!w.store_crc_result() && !w.store_source_crc() && !w.write_barrier());
    assert_eq!(w.reserved(), 0);
    assert!(CmeWord::from_raw(0x0508_0003).write_barrier());
}

#[test]
fn word1_single_bits_sit_lsb_first() {
    let bit = |n: u32| CmeWord::from_raw(1 << n);
    assert!(bit(0).is_last_block());
    assert!(bit(1).is_first_block());
    assert_eq!(bit(2).block_attr(), 0b100);
    assert_eq!(bit(3).cached_crc_iv_index(), 1);
    assert_eq!(bit(5).cached_crc_iv_index(), 4);
    let swaps: [fn(CmeWord) -> bool; 8] = [
        CmeWord::result_byte_swap,
        CmeWord::result_bit_swap,
        CmeWord::intr_val_byte_swap,
        CmeWord::intr_val_bit_swap,
        CmeWord::src_byte_swap,
        CmeWord::src_bit_swap,
        CmeWord::init_byte_swap,
        CmeWord::init_bit_swap,
    ];
    for (i, get) in swaps.iter().enumerate() {
        let n = 6 + i as u32;
        assert!(get(bit(n)), "swap bit {n}");
        assert_eq!(bit(n).endian_type(), 1 << i);
        assert_eq!(swaps.iter().filter(|g| g(bit(n))).count(), 1);
    }
    assert!(bit(14).validate_crc());
    assert!(bit(15).use_stored_crc_iv());
    assert!(bit(16).send_crc());
    assert!(bit(17).store_crc_result());
    assert!(bit(18).store_source_crc());
    assert!(bit(19).copy_src_data());
    assert_eq!(bit(20).optype_value(), 1);
    assert_eq!(bit(22).optype_value(), 4);
    assert_eq!(bit(23).op_value(), 1);
    assert_eq!(bit(23).op(), SdmaOp::Dre);
    assert_eq!(bit(24).op(), SdmaOp::Cme);
    assert_eq!(bit(25).op(), SdmaOp::Cce);
    assert!(bit(26).write_barrier());
    assert_eq!(bit(27).reserved(), 1);
    assert_eq!(bit(31).reserved(), 0x10);
}

#[test]
fn cme_types_and_ops_have_their_spec_values() {
    let names: Vec<(u8, &str)> = CmeType::ALL.iter().map(|t| (*t as u8, t.name())).collect();
    assert_eq!(
        names,
        [
            (0, "COPY"),
            (1, "CRC32"),
            (2, "CRC32C"),
            (3, "CKSUM16"),
            (4, "CKSUM32"),
            (5, "CRC16"),
            (6, "CKSUM32_ADLER"),
            (7, "CRC8"),
        ]
    );
    assert_eq!(
        [SdmaOp::Dre.bits(), SdmaOp::Cme.bits(), SdmaOp::Cce.bits()],
        [1, 2, 4]
    );
    for v in [0u8, 3, 5, 6, 7] {
        assert_eq!(SdmaOp::from_bits(v), SdmaOp::Unknown(v));
        assert_eq!(SdmaOp::from_bits(v).name(), "UNKNOWN");
    }
    let cce: Vec<(u8, &str)> = CceType::ALL.iter().map(|t| (*t as u8, t.name())).collect();
    assert_eq!(
        cce,
        [
            (0, "ADD"),
            (1, "FMA"),
            (2, "MAX"),
            (3, "MIN"),
            (4, "EXT"),
            (5, "GCE")
        ]
    );
}

#[test]
fn crc32c_word_encodes_optype_at_22_20() {
    let w = CmeWord::DEFAULT_COPY
        .with_cme_type(CmeType::Crc32c)
        .with_send_crc(true);
    assert_eq!(w.raw(), 0x0108_0003 | (2 << 20) | (1 << 16));
    assert_eq!(w.optype().name(), "CRC32C");
}

#[test]
fn cce_meta_ctrl_bases_of_the_runtime_encoders_decode_as_op_cce() {
    // docs/references/wiki.md §F.2: ADD/MIN/MAX base 0x2000000, FMA 0x2100000, EXT
    // 0x2400000, GCE 0x2500000 — "valid bit 25" is op = CCE (§J.1).
    for (raw, ty) in [
        (0x0200_0000, CceType::Add),
        (0x0210_0000, CceType::Fma),
        (0x0240_0000, CceType::Ext),
        (0x0250_0000, CceType::Gce),
    ] {
        let w = CmeWord::from_raw(raw);
        assert_eq!(w.op(), SdmaOp::Cce, "{raw:#x}");
        assert_eq!(w.optype(), OpType::Cce(ty), "{raw:#x}");
        assert_eq!(
            CmeWord::default()
                .with_op(SdmaOp::Cce)
                .with_cce_type(ty)
                .raw(),
            raw
        );
    }
    let odd = CmeWord::default().with_op(SdmaOp::Cce).with_optype_value(6);
    assert_eq!(odd.optype(), OpType::CceUnknown(6));
    assert_eq!(odd.optype().name(), "UNKNOWN");
    // Outside CCE the same bits name a CME type.
    assert_eq!(
        CmeWord::from_raw(0x0110_0000).optype(),
        OpType::Cme(CmeType::Crc32)
    );
}

#[test]
fn cce_word0_meta_index_is_ring_id_with_meta_bit() {
    // docs/references/wiki.md §F.2: W0 = wrbar | 0x800000 | meta_idx << 24.
    let w = LenCtrl::from_raw(0x0080_0000 | (2 << 24));
    assert!(w.meta());
    assert_eq!(w.ring_id(), 2);
    assert_eq!(w.len_field(), 0);
}

// ---- the 16 bytes -----------------------------------------------------

#[test]
fn descriptor_bytes_are_three_little_endian_words() {
    let d = Descriptor::new(
        LenCtrl::from_raw(0x0D00_1000),
        0x0108_0003,
        0x0000_0020_1234_5678,
    );
    assert_eq!(
        d.to_bytes(),
        [
            0x00, 0x10, 0x00, 0x0D, // word0
            0x03, 0x00, 0x08, 0x01, // word1
            0x78, 0x56, 0x34, 0x12, 0x20, 0x00, 0x00, 0x00, // buf_ptr
        ]
    );
    assert_eq!(Descriptor::from_bytes(&d.to_bytes()), d);
    assert_eq!(d.len_ctrl().raw(), 0x0D00_1000);
    assert_eq!(d.word1(), 0x0108_0003);
    assert_eq!(d.buf_ptr(), 0x20_1234_5678);
    assert_eq!(size_of::<Descriptor>(), 16);
    assert_eq!(align_of::<Descriptor>(), 1);
}

#[test]
fn views_read_the_same_bytes_three_ways() {
    let mut d = Descriptor::new(
        LenCtrl::from_raw(0x0080_0000),
        0x0210_0000,
        0x3F80_0000_0100_0040,
    );
    assert_eq!(d.tx().src(), 0x3F80_0000_0100_0040);
    assert_eq!(d.tx().meta_ctrl().optype(), OpType::Cce(CceType::Fma));
    assert_eq!(d.rx().dst(), 0x3F80_0000_0100_0040);
    assert_eq!(d.rx().buf2_ptr_lo(), 0x0210_0000);
    assert_eq!(d.tx_meta().meta1(), 0x0100_0040);
    assert_eq!(d.tx_meta().meta2(), 0x3F80_0000); // FP32 1.0
    assert_eq!(f32::from_bits(d.tx_meta().meta2()), 1.0);
    assert!(d.tx_meta().len_ctrl().meta());

    d.tx_meta_mut().meta2.set(0x4000_0000);
    assert_eq!(d.buf_ptr(), 0x4000_0000_0100_0040);
    d.rx_mut().buf2_ptr_lo.set(0xDEAD_BEEF);
    assert_eq!(d.tx().meta_ctrl().raw(), 0xDEAD_BEEF);
    d.tx_mut().buf_ptr.set(7);
    assert_eq!(d.rx().dst(), 7);
}

// ---- builders -----------------------------------------------------------

#[test]
fn tx_builder_matches_the_driver_copy_descriptor() {
    let d = tx(4096, 0x20_0000_0000, Flags::single(1)).unwrap();
    assert_eq!(d.len_ctrl().raw(), 0x0D00_1000);
    assert_eq!(d.word1(), DEFAULT_COPY_WORD1);
    assert_eq!(d.tx().src(), 0x20_0000_0000);

    let dmb = tx(
        65536,
        0x40,
        Flags {
            dmb: true,
            ..Flags::single(2)
        },
    )
    .unwrap()
    .with_word1(CmeWord::from_raw(DEFAULT_COPY_WORD1_WRITE_BARRIER));
    assert_eq!(dmb.len_ctrl().raw(), 0x4E00_0000);
    assert_eq!(dmb.word1(), 0x0508_0003);

    assert_eq!(tx(0, 0, Flags::default()), Err(LenError::Zero));
    assert_eq!(
        tx(65537, 0, Flags::default()),
        Err(LenError::TooLong(65537))
    );
}

#[test]
fn rx_builder_has_no_packet_flags() {
    let d = rx(1024, 0x28_0200_0000).unwrap();
    assert_eq!(d.len_ctrl().raw(), 0x0000_0400);
    assert_eq!(d.rx().dst(), 0x28_0200_0000);
    assert_eq!(d.rx().buf2_ptr_lo(), 0);

    let sow = d.with_flags(Flags {
        sow: true,
        int_en: true,
        ring_id: 1,
        ..Flags::default()
    });
    assert_eq!(sow.len_ctrl().raw(), 0x3100_0400);
    assert!(rx(0, 0).is_err());
}

#[test]
fn with_flags_replaces_flags_and_keeps_len_and_reserved() {
    let w = LenCtrl::from_raw(0xFFFF_FFFF).with_flags(Flags::default());
    assert_eq!(w.raw(), 0x007F_FFFF);
    let all = Flags {
        first: true,
        last: true,
        int_en: true,
        dmb: true,
        sow: true,
        concat: true,
        meta: true,
        ring_id: 3,
    };
    assert_eq!(LenCtrl::default().with_flags(all).raw(), 0xFF80_0000);
    assert_eq!(LenCtrl::from_raw(0xFF80_0000).flags(), all);
    // Ring ids wrap mod 4 (docs/references/driver.md §3.6: `(id + 1) & 3`).
    assert_eq!(LenCtrl::default().with_ring_id(5).ring_id(), 1);
}
