//! Round trips of the instruction words: decode(encode(w)) == w for words
//! generated from valid fields; encode(decode(b)) == b for every accepted
//! byte string; the text form parses back to the same word; and
//! asm(disasm(stream)) == stream byte for byte.
#![allow(clippy::unwrap_used)]

use dma_abi::inst::{
    BoundCheckReg, CompletionInfo, ComputeOp, Direct2d, Direct2dXpose, DmaConfigs, Dtype,
    DtypePair, Events, GatherXpose, GatherXposeFlags, Header, ImmVal, Indirect1d, IndirectDim,
    IndirectFlags, IndirectMode, InstKind, InstWord, InstWordLen, RdmaDescGen, RdmaDescStart,
    TextStyle, UpdateMode, WORD_BYTES, WaitMode, asm, disasm, parse_line, text,
};
use proptest::prelude::*;
use soc_map::addr8::IMMEDIATE_ADDR_MASK;
use soc_map::{Addr4, Addr4Mode, Addr8, PartitionOffset, TableOffset};

// ---- field strategies ------------------------------------------------------------

fn header() -> impl Strategy<Value = Header> {
    (
        prop_oneof![Just(InstWordLen::Records), Just(InstWordLen::Dwords)],
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(inst_word_len, debug_cmd, debug_hint)| Header {
            inst_word_len,
            debug_cmd,
            debug_hint,
        })
}

fn events() -> impl Strategy<Value = Events> {
    (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u32>(),
    )
        .prop_map(|(wm, wait_idx, um, update_idx, semaphore_value)| Events {
            wait_mode: WaitMode::from_code(wm),
            wait_idx,
            update_mode: UpdateMode::from_code(um),
            update_idx,
            semaphore_value,
        })
}

fn dma_configs() -> impl Strategy<Value = DmaConfigs> {
    (0u8..=4).prop_map(|priority_class| DmaConfigs { priority_class })
}

fn bound_reg() -> impl Strategy<Value = BoundCheckReg> {
    prop_oneof![
        Just(BoundCheckReg::INERT),
        (1u8..64, any::<bool>()).prop_map(|(bc_reg, notif_off)| BoundCheckReg {
            bc_reg,
            bc_disable_oob_error_notif: notif_off,
            bc_enabled: true,
        }),
        Just(BoundCheckReg {
            bc_reg: 0,
            bc_disable_oob_error_notif: true,
            bc_enabled: true,
        }),
    ]
}

fn compute_op() -> impl Strategy<Value = ComputeOp> {
    (0u8..=4).prop_map(|c| ComputeOp::from_code(c).unwrap())
}

fn dtype() -> impl Strategy<Value = Dtype> {
    any::<u8>().prop_map(Dtype::from_code)
}

fn dim() -> impl Strategy<Value = IndirectDim> {
    (0u8..4).prop_map(|c| IndirectDim::from_code(c).unwrap())
}

fn partition_offset() -> impl Strategy<Value = PartitionOffset> {
    (0u32..(1 << 18), 0u8..4, any::<bool>()).prop_map(|(offset, quadrant, psum)| PartitionOffset {
        offset,
        quadrant,
        psum,
    })
}

fn addr4() -> impl Strategy<Value = Addr4> {
    prop_oneof![
        (partition_offset(), any::<bool>())
            .prop_map(|(offset, shape_reg)| Addr4::Immediate { offset, shape_reg }),
        partition_offset().prop_map(|offset| Addr4::IndirectImm { offset }),
        (
            0u8..64,
            prop_oneof![
                Just(Addr4Mode::AddrReg),
                Just(Addr4Mode::AddrShapeReg),
                Just(Addr4Mode::IndirectReg)
            ]
        )
            .prop_map(|(reg, mode)| Addr4::Register { reg, mode }),
    ]
}

fn addr8() -> impl Strategy<Value = Addr8> {
    let offset = prop_oneof![
        (0u64..=u64::from(u32::MAX))
            .prop_map(|value| TableOffset::Immediate { value, wide: false }),
        (0u64..(1 << 48)).prop_map(|value| TableOffset::Immediate { value, wide: true }),
        (0u8..64, any::<bool>()).prop_map(|(reg, wide)| TableOffset::Register { reg, wide }),
    ];
    prop_oneof![
        (0..=IMMEDIATE_ADDR_MASK, any::<bool>())
            .prop_map(|(addr, shape_reg)| Addr8::Immediate { addr, shape_reg }),
        (0u8..64, any::<bool>()).prop_map(|(reg, shape_reg)| Addr8::Register { reg, shape_reg }),
        (any::<u8>(), offset, any::<bool>()).prop_map(|(entry, offset, shape_reg)| Addr8::Table {
            entry,
            offset,
            shape_reg
        }),
    ]
}

// ---- word strategies -------------------------------------------------------------

fn direct2d() -> impl Strategy<Value = InstWord> {
    (
        (
            header(),
            events(),
            dma_configs(),
            any::<u8>(),
            any::<u8>(),
            compute_op(),
        ),
        (
            addr8(),
            any::<[i32; 2]>(),
            any::<[u16; 2]>(),
            any::<u16>(),
            bound_reg(),
            bound_reg(),
        ),
        (
            addr8(),
            any::<[i32; 2]>(),
            any::<[u16; 2]>(),
            any::<u16>(),
            dtype(),
            dtype(),
        ),
    )
        .prop_map(|(a, b, c)| {
            Direct2d {
                header: a.0,
                events: a.1,
                dma_configs: a.2,
                semaphore: a.3,
                sem_increment: a.4,
                compute_op: a.5,
                src_start_addr: b.0,
                src_step_elem: b.1,
                src_num_elem: b.2,
                src_elem_size: b.3,
                src_bound_reg: b.4,
                dst_bound_reg: b.5,
                dst_start_addr: c.0,
                dst_step_elem: c.1,
                dst_num_elem: c.2,
                dst_elem_size: c.3,
                in_dtype: c.4,
                out_dtype: c.5,
            }
            .into()
        })
}

fn indirect1d() -> impl Strategy<Value = InstWord> {
    let flags = (0u8..3, any::<bool>(), any::<bool>(), dim(), dim()).prop_map(
        |(mode, idx_bound_is_err, non_unique_dst_idx, gather_dim, scatter_dim)| IndirectFlags {
            indirect_mode: IndirectMode::from_code(mode).unwrap(),
            idx_bound_is_err,
            non_unique_dst_idx,
            gather_dim,
            scatter_dim,
        },
    );
    (
        (
            header(),
            events(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            flags,
        ),
        (
            addr8(),
            any::<i32>(),
            any::<u16>(),
            any::<u16>(),
            addr8(),
            any::<i32>(),
            any::<u16>(),
            any::<u16>(),
        ),
        (
            addr4(),
            addr4(),
            dtype(),
            dtype(),
            bound_reg(),
            bound_reg(),
            compute_op(),
            dma_configs(),
        ),
    )
        .prop_map(|(a, b, c)| {
            let mut w = Indirect1d {
                header: a.0,
                events: a.1,
                semaphore: a.2,
                sem_increment: a.3,
                idx_num_active_channels: a.4,
                flags: a.5,
                src_start_addr: b.0,
                src_step_elem: b.1,
                src_num_elem: b.2,
                src_elem_size: b.3,
                dst_start_addr: b.4,
                dst_step_elem: b.5,
                dst_num_elem: b.6,
                dst_elem_size: b.7,
                src_idx_start_addr: c.0,
                dst_idx_start_addr: c.1,
                in_dtype: c.2,
                out_dtype: c.3,
                src_idx_bound_reg: c.4,
                dst_idx_bound_reg: c.5,
                compute_op: c.6,
                dma_configs: c.7,
            };
            // docs/references/wiki.md §G.1: a silent index gate needs idx_bound_is_err.
            if w.src_idx_bound_reg.bc_disable_oob_error_notif
                || w.dst_idx_bound_reg.bc_disable_oob_error_notif
            {
                w.flags.idx_bound_is_err = true;
            }
            w.into()
        })
}

fn direct2d_xpose() -> impl Strategy<Value = InstWord> {
    (
        (
            header(),
            events(),
            bound_reg(),
            bound_reg(),
            dtype(),
            dtype(),
        ),
        (addr8(), any::<[i32; 2]>(), any::<[u16; 2]>(), any::<i32>()),
        (
            addr8(),
            any::<[i32; 2]>(),
            any::<[u16; 2]>(),
            any::<u8>(),
            any::<u8>(),
            any::<u8>(),
            dma_configs(),
        ),
    )
        .prop_map(|(a, b, c)| {
            Direct2dXpose {
                header: a.0,
                events: a.1,
                src_bound_reg: a.2,
                dst_bound_reg: a.3,
                in_dtype: a.4,
                out_dtype: a.5,
                src_start_addr: b.0,
                src_step_elem: b.1,
                src_num_elem: b.2,
                tile_src_row_step: b.3,
                dst_start_addr: c.0,
                dst_step_elem: c.1,
                dst_num_elem: c.2,
                tile_src_rows: c.3,
                tile_src_cols: c.4,
                semaphore: c.5,
                dma_configs: c.6,
            }
            .into()
        })
}

fn gather_xpose() -> impl Strategy<Value = InstWord> {
    (
        (
            header(),
            events(),
            any::<u8>(),
            dma_configs(),
            any::<u8>(),
            bound_reg(),
        ),
        (addr8(), any::<[i32; 2]>(), any::<[u16; 2]>(), addr4()),
        (
            addr8(),
            bound_reg(),
            any::<i32>(),
            any::<[u16; 2]>(),
            any::<u16>(),
            (0u8..16, 0u8..16),
            dim(),
        ),
    )
        .prop_map(|(a, b, c)| {
            GatherXpose {
                header: a.0,
                events: a.1,
                semaphore: a.2,
                dma_configs: a.3,
                idx_num_active_channels: a.4,
                src_idx_bound_reg: a.5,
                src_start_addr: b.0,
                src_step_elem: b.1,
                src_num_elem: b.2,
                src_idx_start_addr: b.3,
                dst_start_addr: c.0,
                dst_bound_reg: c.1,
                dst_step_elem_1: c.2,
                dst_num_elem: c.3,
                elem_size: c.4,
                dtype: DtypePair {
                    dtype_lo: Dtype::from_code(c.5.0),
                    dtype_hi: Dtype::from_code(c.5.1),
                },
                flags: GatherXposeFlags { gather_dim: c.6 },
            }
            .into()
        })
}

fn completion_info() -> impl Strategy<Value = CompletionInfo> {
    (any::<bool>(), any::<bool>(), 0u8..8).prop_map(|(has_read, has_write, num_active_ports)| {
        CompletionInfo {
            has_read,
            has_write,
            num_active_ports,
        }
    })
}

fn rdma_desc_gen() -> impl Strategy<Value = InstWord> {
    (
        (
            header(),
            events(),
            completion_info(),
            any::<u8>(),
            any::<u8>(),
        ),
        (any::<u32>(), any::<u32>(), any::<u32>(), addr4(), addr4()),
        (any::<u32>(), any::<u8>(), any::<u8>()),
    )
        .prop_map(|(a, b, c)| {
            RdmaDescGen {
                header: a.0,
                events: a.1,
                completion_info: a.2,
                local_sem: a.3,
                remote_sem: a.4,
                remote_core_id: ImmVal(b.0),
                remote_routing_id: ImmVal(b.1),
                dma_engine_mask: ImmVal(b.2),
                src_addr: b.3,
                dst_addr: b.4,
                free_dim_bytes: c.0,
                is_bidirectional: c.1,
                remote_sem_prev: c.2,
            }
            .into()
        })
}

fn rdma_desc_start() -> impl Strategy<Value = InstWord> {
    (header(), events(), completion_info()).prop_map(|(header, events, completion_info)| {
        RdmaDescStart {
            header,
            events,
            completion_info,
        }
        .into()
    })
}

fn word() -> impl Strategy<Value = InstWord> {
    prop_oneof![
        direct2d(),
        indirect1d(),
        direct2d_xpose(),
        gather_xpose(),
        rdma_desc_gen(),
        rdma_desc_start(),
    ]
}

/// 64 random bytes with a valid opcode (and extended opcode) and
/// inst_word_len, so that a fair share of them decode.
fn plausible_bytes() -> impl Strategy<Value = [u8; WORD_BYTES]> {
    (
        prop::collection::vec(any::<u8>(), WORD_BYTES),
        0usize..6,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(v, k, dwords, clear)| {
            let mut b = [0u8; WORD_BYTES];
            b.copy_from_slice(&v);
            // Zero a random subset of bytes so that gates and reserved
            // fields are often valid.
            for (i, byte) in b.iter_mut().enumerate() {
                if clear >> i & 1 == 1 {
                    *byte = 0;
                }
            }
            let kind = InstKind::ALL[k];
            b[0] = kind.opcode();
            b[1] = if dwords { 0x10 } else { 4 };
            if let Some(ext) = kind.extended_opcode() {
                b[12] = ext;
            }
            b
        })
}

/// A valid word with a few bytes overwritten at random: near the boundary
/// between accepted and rejected.
fn mutated_bytes() -> impl Strategy<Value = [u8; WORD_BYTES]> {
    (
        word(),
        prop::collection::vec((0usize..WORD_BYTES, any::<u8>()), 1..6),
    )
        .prop_map(|(w, edits)| {
            let mut b = w.encode().unwrap();
            for (at, v) in edits {
                b[at] = v;
            }
            b
        })
}

proptest! {
    #[test]
    fn decode_encode_round_trip(w in word()) {
        let bytes = w.encode().unwrap();
        prop_assert_eq!(InstWord::decode(&bytes).unwrap(), w);
        prop_assert_eq!(bytes[0], w.kind().opcode());
    }

    #[test]
    fn accepted_bytes_re_encode_identically(b in plausible_bytes()) {
        if let Ok(w) = InstWord::decode(&b) {
            prop_assert_eq!(w.encode().unwrap(), b);
        }
    }

    #[test]
    fn mutated_words_are_rejected_or_round_trip(b in mutated_bytes()) {
        match InstWord::decode(&b) {
            Ok(w) => prop_assert_eq!(w.encode().unwrap(), b),
            Err(e) => prop_assert!(!e.field.is_empty() && !e.reason.is_empty()),
        }
    }

    #[test]
    fn single_bit_flips_are_rejected_or_round_trip(w in word(), bit in 0usize..512) {
        let mut b = w.encode().unwrap();
        b[bit / 8] ^= 1 << (bit % 8);
        match InstWord::decode(&b) {
            Ok(d) => prop_assert_eq!(d.encode().unwrap(), b),
            Err(e) => prop_assert!(!e.field.is_empty()),
        }
    }

    #[test]
    fn text_round_trip(w in word()) {
        let compact = w.to_text();
        prop_assert_eq!(parse_line(&compact).unwrap().unwrap(), w);
        let full = text::print_word(&w, TextStyle::Full);
        prop_assert_eq!(parse_line(&full).unwrap().unwrap(), w);
        prop_assert!(serde_json::to_string(&w.decode_json().unwrap()).is_ok());
    }

    #[test]
    fn asm_disasm_round_trip(words in prop::collection::vec(word(), 0..8)) {
        let stream: Vec<u8> = words.iter().flat_map(|w| w.encode().unwrap()).collect();
        let listing = disasm(&stream).unwrap();
        prop_assert_eq!(listing.lines().count(), words.len());
        prop_assert_eq!(asm(&listing).unwrap(), stream);
    }
}
