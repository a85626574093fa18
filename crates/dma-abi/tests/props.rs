//! Encode/decode round trips over arbitrary descriptors and fields.
#![allow(clippy::unwrap_used)]

use dma_abi::{
    CmeDecode, CmeWord, Descriptor, DescriptorDecode, Flags, LenCtrl, SdmaOp, encode_len,
    parse_hex_descriptor,
};
use proptest::prelude::*;

/// Word 0 rebuilt from its decoded fields onto zero.
fn rebuild_word0(w: LenCtrl) -> LenCtrl {
    LenCtrl::default()
        .with_len_field(w.len_field())
        .with_reserved(w.reserved())
        .with_meta(w.meta())
        .with_ring_id(w.ring_id())
        .with_first(w.first())
        .with_last(w.last())
        .with_int_en(w.int_en())
        .with_sow(w.sow())
        .with_dmb(w.dmb())
        .with_concat(w.concat())
}

/// Word 1 rebuilt from the fields of its serializable decode alone — the
/// JSON form loses nothing.
fn rebuild_word1(c: &CmeDecode) -> CmeWord {
    CmeWord::default()
        .with_block_attr(c.block_attr)
        .with_cached_crc_iv_index(c.cached_crc_iv_index)
        .with_result_byte_swap(c.result_byte_swap)
        .with_result_bit_swap(c.result_bit_swap)
        .with_intr_val_byte_swap(c.intr_val_byte_swap)
        .with_intr_val_bit_swap(c.intr_val_bit_swap)
        .with_src_byte_swap(c.src_byte_swap)
        .with_src_bit_swap(c.src_bit_swap)
        .with_init_byte_swap(c.init_byte_swap)
        .with_init_bit_swap(c.init_bit_swap)
        .with_validate_crc(c.validate_crc)
        .with_use_stored_crc_iv(c.use_stored_crc_iv)
        .with_send_crc(c.send_crc)
        .with_store_crc_result(c.store_crc_result)
        .with_store_source_crc(c.store_source_crc)
        .with_copy_src_data(c.copy_src_data)
        .with_optype_value(c.optype_value)
        .with_op(SdmaOp::from_bits(c.op_value))
        .with_write_barrier(c.write_barrier)
        .with_reserved(c.reserved_27_31)
}

proptest! {
    #[test]
    fn bytes_decode_encode_identical(bytes in any::<[u8; 16]>()) {
        let d = Descriptor::from_bytes(&bytes);
        prop_assert_eq!(d.to_bytes(), bytes);

        // Every bit of both words is covered by some field.
        let w0 = rebuild_word0(d.len_ctrl());
        let dec = d.decode();
        let w1 = rebuild_word1(&dec.cme);
        let rebuilt = Descriptor::new(w0, w1.raw(), dec.buf_ptr.0);
        prop_assert_eq!(rebuilt.to_bytes(), bytes);

        // The text form round-trips, and the views agree with the words.
        prop_assert_eq!(parse_hex_descriptor(&dec.raw).unwrap(), d);
        prop_assert_eq!(dec.rx.buf2_ptr_lo.0, d.word1());
        prop_assert_eq!(dec.rx.buf1_ptr.0, d.buf_ptr());
        prop_assert_eq!(
            u64::from(dec.tx_meta.meta1.0) | (u64::from(dec.tx_meta.meta2.0) << 32),
            d.buf_ptr()
        );
        prop_assert_eq!(dec.len, d.len_ctrl().len_bytes(true));
        prop_assert!((1..=65536).contains(&dec.len));
    }

    #[test]
    fn endian_type_is_the_eight_swap_bits(raw in any::<u32>()) {
        let w = CmeWord::from_raw(raw);
        let swaps = [
            w.result_byte_swap(), w.result_bit_swap(), w.intr_val_byte_swap(),
            w.intr_val_bit_swap(), w.src_byte_swap(), w.src_bit_swap(),
            w.init_byte_swap(), w.init_bit_swap(),
        ];
        let packed = swaps.iter().enumerate().fold(0u8, |acc, (i, s)| acc | (u8::from(*s) << i));
        prop_assert_eq!(packed, w.endian_type());
        prop_assert_eq!(w.block_attr() & 1 == 1, w.is_last_block());
        prop_assert_eq!(w.block_attr() & 2 == 2, w.is_first_block());
        prop_assert_eq!(
            CmeWord::default()
                .with_endian_type(w.endian_type())
                .with_block_attr(w.block_attr())
                .raw(),
            raw & 0x3FC7
        );
    }

    #[test]
    fn fields_build_then_decode_the_same(
        len in 1u32..=65536,
        flags in (any::<[bool; 7]>(), 0u8..4).prop_map(|(b, ring_id)| Flags {
            first: b[0], last: b[1], int_en: b[2], dmb: b[3], sow: b[4], concat: b[5],
            meta: b[6], ring_id,
        }),
        reserved in 0u8..0x80,
        cme in (0u8..8, 0u8..8, any::<u8>(), any::<[bool; 7]>(), 0u8..8, 0u8..8, 0u8..32),
        addr in any::<u64>(),
    ) {
        let (block_attr, iv, endian, b, optype, op, rsvd) = cme;
        let w0 = LenCtrl::default()
            .with_len_bytes(len).unwrap()
            .with_flags(flags)
            .with_reserved(reserved);
        let w1 = CmeWord::default()
            .with_block_attr(block_attr)
            .with_cached_crc_iv_index(iv)
            .with_endian_type(endian)
            .with_validate_crc(b[0])
            .with_use_stored_crc_iv(b[1])
            .with_send_crc(b[2])
            .with_store_crc_result(b[3])
            .with_store_source_crc(b[4])
            .with_copy_src_data(b[5])
            .with_write_barrier(b[6])
            .with_optype_value(optype)
            .with_op(SdmaOp::from_bits(op))
            .with_reserved(rsvd);
        let d = Descriptor::from_bytes(&Descriptor::new(w0, w1.raw(), addr).to_bytes());

        let got0 = d.len_ctrl();
        prop_assert_eq!(got0.len_bytes(true), len);
        prop_assert_eq!(got0.flags(), flags);
        prop_assert_eq!(got0.reserved(), reserved);

        let got1 = d.tx().meta_ctrl();
        prop_assert_eq!(got1.block_attr(), block_attr);
        prop_assert_eq!(got1.cached_crc_iv_index(), iv);
        prop_assert_eq!(got1.endian_type(), endian);
        prop_assert_eq!(
            [got1.validate_crc(), got1.use_stored_crc_iv(), got1.send_crc(),
             got1.store_crc_result(), got1.store_source_crc(), got1.copy_src_data(),
             got1.write_barrier()],
            b
        );
        prop_assert_eq!(got1.optype_value(), optype);
        prop_assert_eq!(got1.op_value(), op);
        prop_assert_eq!(got1.reserved(), rsvd);
        prop_assert_eq!(d.tx().src(), addr);

        let dec: DescriptorDecode = d.decode();
        prop_assert_eq!(dec.len, len);
        prop_assert_eq!(dec.ring_id, flags.ring_id);
        prop_assert_eq!(dec.cme.op, SdmaOp::from_bits(op).name());
        prop_assert_eq!(dec.cme.optype, got1.optype().name());
    }

    #[test]
    fn len_round_trips(len in 1u32..=65536) {
        let field = encode_len(len).unwrap();
        prop_assert_eq!(LenCtrl::default().with_len_field(field).len_bytes(true), len);
        prop_assert_eq!(u32::from(field), len % 65536);
    }

    #[test]
    fn len_rejects_out_of_range(len in prop_oneof![Just(0u32), 65537u32..]) {
        prop_assert!(encode_len(len).is_err());
    }

    #[test]
    fn flags_round_trip_over_any_word(raw in any::<u32>()) {
        let w = LenCtrl::from_raw(raw);
        prop_assert_eq!(w.with_flags(w.flags()), w);
        prop_assert_eq!(rebuild_word0(w), w);
    }

    #[test]
    fn hex_parse_accepts_separators(bytes in any::<[u8; 16]>(), upper in any::<bool>()) {
        let d = Descriptor::from_bytes(&bytes);
        let hex = if upper { d.to_hex().to_uppercase() } else { d.to_hex() };
        let spaced: Vec<String> = hex.as_bytes().chunks(8)
            .map(|c| String::from_utf8_lossy(c).into_owned()).collect();
        prop_assert_eq!(parse_hex_descriptor(&spaced.join(" ")).unwrap(), d);
        prop_assert_eq!(parse_hex_descriptor(&spaced.join("_")).unwrap(), d);
        prop_assert_eq!(hex.parse::<Descriptor>().unwrap(), d);
    }
}
