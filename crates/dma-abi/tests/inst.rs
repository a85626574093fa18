//! The six 64-byte instruction words: byte offsets against P9.1 §2, every
//! rejection with its message, the text form and the JSON decode.
#![allow(clippy::unwrap_used)]

use std::mem::{offset_of, size_of};

use dma_abi::inst::{
    BoundCheckReg, CompletionInfo, ComputeOp, Direct2d, Direct2dXpose, DmaConfigs, Dtype,
    DtypePair, Events, GatherXpose, GatherXposeFlags, Header, ImmVal, Indirect1d, IndirectDim,
    IndirectFlags, IndirectMode, InstKind, InstWord, InstWordLen, RawDirect2d, RawDirect2dXpose,
    RawEvents, RawGatherXpose, RawHeader, RawIndirect1d, RawRdmaDescGen, RawRdmaDescStart,
    RdmaDescGen, RdmaDescStart, StreamError, TextStyle, UpdateMode, WORD_BYTES, WaitMode, asm,
    disasm, parse_hex_word, parse_line, parse_text, text,
};
use soc_map::{Addr4, Addr4Mode, Addr8, PartitionOffset, TableOffset};

// ---- helpers ------------------------------------------------------------------

fn events() -> Events {
    Events {
        wait_mode: WaitMode::SemGeImm,
        wait_idx: 0x11,
        update_mode: UpdateMode::SemIncComplete,
        update_idx: 0x22,
        semaphore_value: 0x4433_2211,
    }
}

fn header() -> Header {
    Header {
        inst_word_len: InstWordLen::Records,
        debug_cmd: 0xd1,
        debug_hint: 0xd2,
    }
}

fn imm8(addr: u64) -> Addr8 {
    Addr8::Immediate {
        addr,
        shape_reg: false,
    }
}

fn sbuf4(offset: u32, quadrant: u8) -> Addr4 {
    Addr4::Immediate {
        offset: PartitionOffset {
            offset,
            quadrant,
            psum: false,
        },
        shape_reg: false,
    }
}

fn le16(b: &[u8; 64], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8; 64], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn le64(b: &[u8; 64], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Header and events at +0 / +4, common to every word.
fn assert_header_events(b: &[u8; 64], opcode: u8) {
    assert_eq!(b[0], opcode, "opcode @0");
    assert_eq!(b[1], 4, "inst_word_len @1");
    assert_eq!(b[2], 0xd1, "debug_cmd @2");
    assert_eq!(b[3], 0xd2, "debug_hint @3");
    assert_eq!(b[4], 0x05, "wait_mode @4");
    assert_eq!(b[5], 0x11, "wait_idx @5");
    assert_eq!(b[6], 0x13, "update_mode @6");
    assert_eq!(b[7], 0x22, "update_idx @7");
    assert_eq!(le32(b, 8), 0x4433_2211, "semaphore_value @8");
}

/// The decode error of `bytes`, as displayed.
fn reject(bytes: &[u8; 64]) -> String {
    InstWord::decode(bytes).unwrap_err().to_string()
}

fn valid(kind: InstKind) -> [u8; 64] {
    InstWord::default_of(kind).encode().unwrap()
}

// ---- sub-struct layouts ----------------------------------------------------------

#[test]
fn header_and_events_layout() {
    assert_eq!(size_of::<RawHeader>(), 4);
    assert_eq!(offset_of!(RawHeader, opcode), 0);
    assert_eq!(offset_of!(RawHeader, inst_word_len), 1);
    assert_eq!(offset_of!(RawHeader, debug_cmd), 2);
    assert_eq!(offset_of!(RawHeader, debug_hint), 3);
    assert_eq!(size_of::<RawEvents>(), 8);
    assert_eq!(offset_of!(RawEvents, wait_mode), 0);
    assert_eq!(offset_of!(RawEvents, wait_idx), 1);
    assert_eq!(offset_of!(RawEvents, update_mode), 2);
    assert_eq!(offset_of!(RawEvents, update_idx), 3);
    assert_eq!(offset_of!(RawEvents, semaphore_value), 4);
}

#[test]
#[allow(clippy::unusual_byte_groupings)] // binary literals grouped by field
fn bitfields_sit_where_the_seed_puts_them() {
    use dma_abi::inst::raw::RawDirect2d as R;
    let d = |w: Direct2d| R::from_bytes(&w.encode().unwrap());
    // DMA_CONFIGS priority_class [2:0].
    let w = Direct2d {
        dma_configs: DmaConfigs { priority_class: 4 },
        ..Default::default()
    };
    assert_eq!(d(w).dma_configs, 0x04);
    // BOUND_CHECK_REG bc_reg [5:0], notif b6, enabled b7.
    let w = Direct2d {
        src_bound_reg: BoundCheckReg {
            bc_reg: 0x2a,
            bc_disable_oob_error_notif: true,
            bc_enabled: true,
        },
        dst_bound_reg: BoundCheckReg::enabled(1),
        ..Default::default()
    };
    assert_eq!((d(w).src_bound_reg, d(w).dst_bound_reg), (0xea, 0x81));

    // DMA_INDIRECT_FLAGS: mode [1:0], idx_bound_is_err b2, non_unique b3,
    // gather_dim [5:4], scatter_dim [7:6].
    let flags = IndirectFlags {
        indirect_mode: IndirectMode::SrcDstIndirection,
        idx_bound_is_err: true,
        non_unique_dst_idx: false,
        gather_dim: IndirectDim::Z,
        scatter_dim: IndirectDim::Y,
    };
    let b = Indirect1d {
        flags,
        ..Default::default()
    }
    .encode()
    .unwrap();
    assert_eq!(b[15], 0b01_10_0_1_10);
    let b = Indirect1d {
        flags: IndirectFlags {
            non_unique_dst_idx: true,
            scatter_dim: IndirectDim::W,
            ..Default::default()
        },
        ..Default::default()
    }
    .encode()
    .unwrap();
    assert_eq!(b[15], 0b11_00_1_0_00);

    // EXT_COMPLETION_INFO: has_read b0, has_write b2, num_active_ports [5:3].
    let b = RdmaDescStart {
        completion_info: CompletionInfo {
            has_read: true,
            has_write: true,
            num_active_ports: 5,
        },
        ..Default::default()
    }
    .encode()
    .unwrap();
    assert_eq!(b[13], 0b00_101_1_0_1);

    // DTYPE_PAIR lo nibble src, hi nibble dst; GATHER_TRANSPOSE gather_dim [1:0].
    let b = GatherXpose {
        dtype: DtypePair {
            dtype_lo: Dtype::Bfloat16,
            dtype_hi: Dtype::Fp16,
        },
        flags: GatherXposeFlags {
            gather_dim: IndirectDim::Y,
        },
        ..Default::default()
    }
    .encode()
    .unwrap();
    assert_eq!((b[62], b[63]), (0x76, 0x01));
}

// ---- one test per word: offsets against P9.1 §2 -------------------------------------

#[test]
fn direct2d_offsets_seed_004_2_2() {
    assert_eq!(size_of::<RawDirect2d>(), 64);
    for (off, want) in [
        (offset_of!(RawDirect2d, header), 0),
        (offset_of!(RawDirect2d, events), 4),
        (offset_of!(RawDirect2d, dma_configs), 12),
        (offset_of!(RawDirect2d, semaphore), 13),
        (offset_of!(RawDirect2d, sem_increment), 14),
        (offset_of!(RawDirect2d, compute_op), 15),
        (offset_of!(RawDirect2d, src_start_addr), 16),
        (offset_of!(RawDirect2d, src_step_elem), 24),
        (offset_of!(RawDirect2d, src_num_elem), 32),
        (offset_of!(RawDirect2d, src_elem_size), 36),
        (offset_of!(RawDirect2d, src_bound_reg), 38),
        (offset_of!(RawDirect2d, dst_bound_reg), 39),
        (offset_of!(RawDirect2d, dst_start_addr), 40),
        (offset_of!(RawDirect2d, dst_step_elem), 48),
        (offset_of!(RawDirect2d, dst_num_elem), 56),
        (offset_of!(RawDirect2d, dst_elem_size), 60),
        (offset_of!(RawDirect2d, in_dtype), 62),
        (offset_of!(RawDirect2d, out_dtype), 63),
    ] {
        assert_eq!(off, want);
    }
    let w = Direct2d {
        header: header(),
        events: events(),
        dma_configs: DmaConfigs { priority_class: 3 },
        semaphore: 0x0d,
        sem_increment: 0x0e,
        compute_op: ComputeOp::Max,
        src_start_addr: imm8(0x20_1234_5678),
        src_step_elem: [-4, 0x0102_0304],
        src_num_elem: [0x1718, 0x191a],
        src_elem_size: 0x2526,
        src_bound_reg: BoundCheckReg::enabled(0x26),
        dst_bound_reg: BoundCheckReg::enabled(0x27),
        dst_start_addr: imm8(0x40_0000_0028),
        dst_step_elem: [0x3031, -0x3233],
        dst_num_elem: [0x3839, 0x3a3b],
        dst_elem_size: 0x3d3c,
        in_dtype: Dtype::Bfloat16,
        out_dtype: Dtype::Fp32,
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xb8);
    assert_eq!(&b[12..16], &[3, 0x0d, 0x0e, 3]);
    assert_eq!(le64(&b, 16), 0x20_1234_5678);
    assert_eq!(le32(&b, 24) as i32, -4);
    assert_eq!(le32(&b, 28), 0x0102_0304);
    assert_eq!((le16(&b, 32), le16(&b, 34)), (0x1718, 0x191a));
    assert_eq!(le16(&b, 36), 0x2526);
    assert_eq!((b[38], b[39]), (0xa6, 0xa7));
    assert_eq!(le64(&b, 40), 0x40_0000_0028);
    assert_eq!((le32(&b, 48), le32(&b, 52) as i32), (0x3031, -0x3233));
    assert_eq!((le16(&b, 56), le16(&b, 58)), (0x3839, 0x3a3b));
    assert_eq!(le16(&b, 60), 0x3d3c);
    assert_eq!((b[62], b[63]), (0x06, 0x0a));
    assert_eq!(InstWord::decode(&b).unwrap(), InstWord::Direct2d(w));
}

#[test]
fn indirect1d_offsets_seed_004_2_3() {
    assert_eq!(size_of::<RawIndirect1d>(), 64);
    for (off, want) in [
        (offset_of!(RawIndirect1d, header), 0),
        (offset_of!(RawIndirect1d, events), 4),
        (offset_of!(RawIndirect1d, semaphore), 12),
        (offset_of!(RawIndirect1d, sem_increment), 13),
        (offset_of!(RawIndirect1d, idx_num_active_channels), 14),
        (offset_of!(RawIndirect1d, flags), 15),
        (offset_of!(RawIndirect1d, src_start_addr), 16),
        (offset_of!(RawIndirect1d, src_step_elem), 24),
        (offset_of!(RawIndirect1d, src_num_elem), 28),
        (offset_of!(RawIndirect1d, src_elem_size), 30),
        (offset_of!(RawIndirect1d, dst_start_addr), 32),
        (offset_of!(RawIndirect1d, dst_step_elem), 40),
        (offset_of!(RawIndirect1d, dst_num_elem), 44),
        (offset_of!(RawIndirect1d, dst_elem_size), 46),
        (offset_of!(RawIndirect1d, src_idx_start_addr), 48),
        (offset_of!(RawIndirect1d, dst_idx_start_addr), 52),
        (offset_of!(RawIndirect1d, in_dtype), 56),
        (offset_of!(RawIndirect1d, out_dtype), 57),
        (offset_of!(RawIndirect1d, src_idx_bound_reg), 58),
        (offset_of!(RawIndirect1d, dst_idx_bound_reg), 59),
        (offset_of!(RawIndirect1d, compute_op), 60),
        (offset_of!(RawIndirect1d, dma_configs), 61),
        (offset_of!(RawIndirect1d, reserved), 62),
    ] {
        assert_eq!(off, want);
    }
    let w = Indirect1d {
        header: header(),
        events: events(),
        semaphore: 0x0c,
        sem_increment: 0x0d,
        idx_num_active_channels: 128,
        flags: IndirectFlags {
            indirect_mode: IndirectMode::DstIndirection,
            idx_bound_is_err: true,
            ..Default::default()
        },
        src_start_addr: imm8(0x1_0000_0010),
        src_step_elem: -1,
        src_num_elem: 0x1c1d,
        src_elem_size: 0x1e1f,
        dst_start_addr: imm8(0x2_0000_0020),
        dst_step_elem: 0x2829,
        dst_num_elem: 0x2c2d,
        dst_elem_size: 0x2e2f,
        src_idx_start_addr: sbuf4(0x30, 1),
        dst_idx_start_addr: Addr4::Register {
            reg: 0x34,
            mode: Addr4Mode::IndirectReg,
        },
        in_dtype: Dtype::Int8,
        out_dtype: Dtype::Uint8,
        src_idx_bound_reg: BoundCheckReg::enabled(0x3a),
        dst_idx_bound_reg: BoundCheckReg::INERT,
        compute_op: ComputeOp::Add,
        dma_configs: DmaConfigs { priority_class: 1 },
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xbb);
    assert_eq!(&b[12..16], &[0x0c, 0x0d, 128, 0x05]);
    assert_eq!(le64(&b, 16), 0x1_0000_0010);
    assert_eq!(le32(&b, 24) as i32, -1);
    assert_eq!((le16(&b, 28), le16(&b, 30)), (0x1c1d, 0x1e1f));
    assert_eq!(le64(&b, 32), 0x2_0000_0020);
    assert_eq!(le32(&b, 40), 0x2829);
    assert_eq!((le16(&b, 44), le16(&b, 46)), (0x2c2d, 0x2e2f));
    assert_eq!(le32(&b, 48), 0x0080_0030);
    assert_eq!(le32(&b, 52), 0xA000_0034);
    assert_eq!(&b[56..64], &[0x02, 0x03, 0xba, 0x00, 0x01, 0x01, 0, 0]);
    assert_eq!(Indirect1d::decode(&b).unwrap(), w);
}

#[test]
fn direct2d_xpose_offsets_seed_004_2_5() {
    assert_eq!(size_of::<RawDirect2dXpose>(), 64);
    for (off, want) in [
        (offset_of!(RawDirect2dXpose, header), 0),
        (offset_of!(RawDirect2dXpose, events), 4),
        (offset_of!(RawDirect2dXpose, src_bound_reg), 12),
        (offset_of!(RawDirect2dXpose, dst_bound_reg), 13),
        (offset_of!(RawDirect2dXpose, in_dtype), 14),
        (offset_of!(RawDirect2dXpose, out_dtype), 15),
        (offset_of!(RawDirect2dXpose, src_start_addr), 16),
        (offset_of!(RawDirect2dXpose, src_step_elem), 24),
        (offset_of!(RawDirect2dXpose, src_num_elem), 32),
        (offset_of!(RawDirect2dXpose, tile_src_row_step), 36),
        (offset_of!(RawDirect2dXpose, dst_start_addr), 40),
        (offset_of!(RawDirect2dXpose, dst_step_elem), 48),
        (offset_of!(RawDirect2dXpose, dst_num_elem), 56),
        (offset_of!(RawDirect2dXpose, tile_src_rows), 60),
        (offset_of!(RawDirect2dXpose, tile_src_cols), 61),
        (offset_of!(RawDirect2dXpose, semaphore), 62),
        (offset_of!(RawDirect2dXpose, dma_configs), 63),
    ] {
        assert_eq!(off, want);
    }
    let w = Direct2dXpose {
        header: header(),
        events: events(),
        src_bound_reg: BoundCheckReg::enabled(0x0c),
        dst_bound_reg: BoundCheckReg::enabled(0x0d),
        in_dtype: Dtype::Fp16,
        out_dtype: Dtype::Fp16,
        src_start_addr: imm8(0x20_0000_0000),
        src_step_elem: [1, 0x40000],
        src_num_elem: [64, 16],
        tile_src_row_step: -0x2425,
        dst_start_addr: imm8(0x20_0000_1000),
        dst_step_elem: [0x40000, 32],
        dst_num_elem: [16, 64],
        tile_src_rows: 16,
        tile_src_cols: 64,
        semaphore: 0x3e,
        dma_configs: DmaConfigs { priority_class: 2 },
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xbd);
    assert_eq!(&b[12..16], &[0x8c, 0x8d, 0x07, 0x07]);
    assert_eq!(le64(&b, 16), 0x20_0000_0000);
    assert_eq!((le32(&b, 24), le32(&b, 28)), (1, 0x40000));
    assert_eq!((le16(&b, 32), le16(&b, 34)), (64, 16));
    assert_eq!(le32(&b, 36) as i32, -0x2425);
    assert_eq!(le64(&b, 40), 0x20_0000_1000);
    assert_eq!((le32(&b, 48), le32(&b, 52)), (0x40000, 32));
    assert_eq!((le16(&b, 56), le16(&b, 58)), (16, 64));
    assert_eq!(&b[60..64], &[16, 64, 0x3e, 2]);
    assert_eq!(Direct2dXpose::decode(&b).unwrap(), w);
}

#[test]
fn gather_xpose_offsets_seed_004_2_4() {
    assert_eq!(size_of::<RawGatherXpose>(), 64);
    for (off, want) in [
        (offset_of!(RawGatherXpose, header), 0),
        (offset_of!(RawGatherXpose, events), 4),
        (offset_of!(RawGatherXpose, semaphore), 12),
        (offset_of!(RawGatherXpose, dma_configs), 13),
        (offset_of!(RawGatherXpose, idx_num_active_channels), 14),
        (offset_of!(RawGatherXpose, src_idx_bound_reg), 15),
        (offset_of!(RawGatherXpose, src_start_addr), 16),
        (offset_of!(RawGatherXpose, src_step_elem), 24),
        (offset_of!(RawGatherXpose, src_num_elem), 32),
        (offset_of!(RawGatherXpose, src_idx_start_addr), 36),
        (offset_of!(RawGatherXpose, dst_start_addr), 40),
        (offset_of!(RawGatherXpose, reserved), 48),
        (offset_of!(RawGatherXpose, dst_bound_reg), 51),
        (offset_of!(RawGatherXpose, dst_step_elem_1), 52),
        (offset_of!(RawGatherXpose, dst_num_elem), 56),
        (offset_of!(RawGatherXpose, elem_size), 60),
        (offset_of!(RawGatherXpose, dtype), 62),
        (offset_of!(RawGatherXpose, flags), 63),
    ] {
        assert_eq!(off, want);
    }
    let w = GatherXpose {
        header: header(),
        events: events(),
        semaphore: 0x0c,
        dma_configs: DmaConfigs { priority_class: 4 },
        idx_num_active_channels: 128,
        src_idx_bound_reg: BoundCheckReg::enabled(0x0f),
        src_start_addr: imm8(0x4000_0000),
        src_step_elem: [-2, 0x1c1d],
        src_num_elem: [0x2021, 64],
        src_idx_start_addr: sbuf4(0x24, 0),
        dst_start_addr: imm8(0x20_0000_0040),
        dst_bound_reg: BoundCheckReg::enabled(0x33),
        dst_step_elem_1: 0x40000,
        dst_num_elem: [64, 0x3a3b],
        elem_size: 0x3c,
        dtype: DtypePair {
            dtype_lo: Dtype::Bfloat16,
            dtype_hi: Dtype::Bfloat16,
        },
        flags: GatherXposeFlags {
            gather_dim: IndirectDim::Y,
        },
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xf1);
    assert_eq!(&b[12..16], &[0x0c, 4, 128, 0x8f]);
    assert_eq!(le64(&b, 16), 0x4000_0000);
    assert_eq!((le32(&b, 24) as i32, le32(&b, 28)), (-2, 0x1c1d));
    assert_eq!((le16(&b, 32), le16(&b, 34)), (0x2021, 64));
    assert_eq!(le32(&b, 36), 0x24);
    assert_eq!(le64(&b, 40), 0x20_0000_0040);
    assert_eq!(&b[48..52], &[0, 0, 0, 0xb3]);
    assert_eq!(le32(&b, 52), 0x40000);
    assert_eq!((le16(&b, 56), le16(&b, 58)), (64, 0x3a3b));
    assert_eq!(le16(&b, 60), 0x3c);
    assert_eq!((b[62], b[63]), (0x66, 0x01));
    assert_eq!(GatherXpose::decode(&b).unwrap(), w);
}

#[test]
fn rdma_desc_gen_offsets_seed_004_2_6() {
    assert_eq!(size_of::<RawRdmaDescGen>(), 64);
    for (off, want) in [
        (offset_of!(RawRdmaDescGen, header), 0),
        (offset_of!(RawRdmaDescGen, events), 4),
        (offset_of!(RawRdmaDescGen, extended_opcode), 12),
        (offset_of!(RawRdmaDescGen, completion_info), 13),
        (offset_of!(RawRdmaDescGen, local_sem), 14),
        (offset_of!(RawRdmaDescGen, remote_sem), 15),
        (offset_of!(RawRdmaDescGen, remote_core_id), 16),
        (offset_of!(RawRdmaDescGen, remote_routing_id), 20),
        (offset_of!(RawRdmaDescGen, dma_engine_mask), 24),
        (offset_of!(RawRdmaDescGen, src_addr), 28),
        (offset_of!(RawRdmaDescGen, dst_addr), 32),
        (offset_of!(RawRdmaDescGen, free_dim_bytes), 36),
        (offset_of!(RawRdmaDescGen, is_bidirectional), 40),
        (offset_of!(RawRdmaDescGen, remote_sem_prev), 41),
        (offset_of!(RawRdmaDescGen, reserved0), 42),
        (offset_of!(RawRdmaDescGen, reserved1), 44),
    ] {
        assert_eq!(off, want);
    }
    let w = RdmaDescGen {
        header: header(),
        events: events(),
        completion_info: CompletionInfo::default(),
        local_sem: 0x0e,
        remote_sem: 0x0f,
        remote_core_id: ImmVal(0x1011_1213),
        remote_routing_id: ImmVal(0x1415_1617),
        dma_engine_mask: ImmVal(0xffff),
        src_addr: sbuf4(0x1c, 0),
        dst_addr: sbuf4(0x20, 3),
        free_dim_bytes: 0x2425_2627,
        is_bidirectional: 0,
        remote_sem_prev: 0x29,
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xf0);
    assert_eq!(&b[12..16], &[8, 0, 0x0e, 0x0f]);
    assert_eq!(le32(&b, 16), 0x1011_1213);
    assert_eq!(le32(&b, 20), 0x1415_1617);
    assert_eq!(le32(&b, 24), 0xffff);
    assert_eq!(le32(&b, 28), 0x1c);
    assert_eq!(le32(&b, 32), 0x0180_0020);
    assert_eq!(le32(&b, 36), 0x2425_2627);
    assert_eq!((b[40], b[41]), (0, 0x29));
    assert!(b[42..].iter().all(|&x| x == 0));
    assert_eq!(RdmaDescGen::decode(&b).unwrap(), w);
}

#[test]
fn rdma_desc_start_offsets_seed_004_2_6() {
    assert_eq!(size_of::<RawRdmaDescStart>(), 64);
    assert_eq!(offset_of!(RawRdmaDescStart, header), 0);
    assert_eq!(offset_of!(RawRdmaDescStart, events), 4);
    assert_eq!(offset_of!(RawRdmaDescStart, extended_opcode), 12);
    assert_eq!(offset_of!(RawRdmaDescStart, completion_info), 13);
    assert_eq!(offset_of!(RawRdmaDescStart, reserved0), 14);
    assert_eq!(offset_of!(RawRdmaDescStart, reserved1), 16);
    let w = RdmaDescStart {
        header: header(),
        events: events(),
        completion_info: CompletionInfo {
            has_read: true,
            has_write: false,
            num_active_ports: 0,
        },
    };
    let b = w.encode().unwrap();
    assert_header_events(&b, 0xf0);
    assert_eq!(&b[12..14], &[9, 1]);
    assert!(b[14..].iter().all(|&x| x == 0));
    assert_eq!(RdmaDescStart::decode(&b).unwrap(), w);
}

// ---- rejections ------------------------------------------------------------------

#[test]
fn unknown_opcodes_are_rejected_by_name() {
    let mut b = valid(InstKind::Direct2d);
    b[0] = 0x12;
    assert_eq!(
        reject(&b),
        "header.opcode = 0x12 (unknown opcode; expected 0xb8 DIRECT2D, 0xbb INDIRECT1D, \
         0xbd DIRECT2D_XPOSE, 0xf1 GATHER_XPOSE or 0xf0 EXTENDED)"
    );
    b[0] = 0xbf;
    assert!(
        reject(&b).starts_with(
            "header.opcode = 0xbf (SB2SB_COLLECTIVE (not modelled) is not one of the six DMA words;"
        ),
        "{}",
        reject(&b)
    );
    assert!(InstWord::decode(&[0; 64]).is_err());
}

#[test]
fn unknown_extended_opcodes_are_rejected() {
    let mut b = valid(InstKind::RdmaDescGen);
    b[12] = 6;
    assert_eq!(
        reject(&b),
        "EXTENDED.extended_opcode = 6 (SBUF_TO_SBUF is not a DMA word; expected 8 RDMA_DESC_GEN \
         or 9 RDMA_DESC_START)"
    );
    b[12] = 0x55;
    assert_eq!(
        reject(&b),
        "EXTENDED.extended_opcode = 85 (unknown extended opcode; expected 8 RDMA_DESC_GEN or 9 \
         RDMA_DESC_START)"
    );
}

#[test]
fn inst_word_len_accepts_4_and_0x10_only() {
    for kind in InstKind::ALL {
        let mut b = valid(kind);
        assert_eq!(b[1], 4, "{kind} emits 4");
        b[1] = 0x10;
        let w = InstWord::decode(&b).unwrap();
        assert_eq!(w.header().inst_word_len, InstWordLen::Dwords);
        assert_eq!(w.encode().unwrap(), b, "{kind} keeps 0x10");
        for bad in [0u8, 1, 8, 0x40, 0xff] {
            b[1] = bad;
            assert_eq!(
                reject(&b),
                format!(
                    "{}.header.inst_word_len = {bad} (valid 4 (16-byte records) or 0x10 (dwords))",
                    kind.name()
                )
            );
        }
    }
}

#[test]
fn dma_configs_priority_class_and_reserved() {
    let mut b = valid(InstKind::Direct2d);
    b[12] = 5;
    assert_eq!(
        reject(&b),
        "DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)"
    );
    b[12] = 0x7;
    assert_eq!(
        reject(&b),
        "DIRECT2D.dma_configs.priority_class = 7 (valid 0..=4)"
    );
    b[12] = 0x08 | 2;
    assert_eq!(
        reject(&b),
        "DIRECT2D.dma_configs.reserved = 0x01 (bits 7:3 must be zero)"
    );
    for (kind, at) in [
        (InstKind::Indirect1d, 61),
        (InstKind::Direct2dXpose, 63),
        (InstKind::GatherXpose, 13),
    ] {
        let mut b = valid(kind);
        b[at] = 0x80;
        assert_eq!(
            reject(&b),
            format!(
                "{}.dma_configs.reserved = 0x10 (bits 7:3 must be zero)",
                kind.name()
            )
        );
        b[at] = 4;
        assert!(InstWord::decode(&b).is_ok());
    }
}

#[test]
fn reserved_bytes_must_be_zero() {
    for (kind, at, field, shown) in [
        (InstKind::Indirect1d, 63, "reserved", "[0001]"),
        (InstKind::GatherXpose, 49, "reserved", "[000100]"),
        (InstKind::RdmaDescGen, 42, "reserved0", "[0100]"),
        (
            InstKind::RdmaDescGen,
            63,
            "reserved1",
            "[0000000000000000000000000000000000000001]",
        ),
        (InstKind::RdmaDescStart, 15, "reserved0", "[0001]"),
    ] {
        let mut b = valid(kind);
        b[at] = 1;
        assert_eq!(
            reject(&b),
            format!("{}.{field} = {shown} (reserved, must be zero)", kind.name())
        );
    }
    let mut b = valid(InstKind::RdmaDescStart);
    b[16] = 0xff;
    assert!(
        reject(&b).starts_with("RDMA_DESC_START.reserved1 = [ff00"),
        "{}",
        reject(&b)
    );
}

#[test]
fn completion_info_reserved_bits() {
    for kind in [InstKind::RdmaDescGen, InstKind::RdmaDescStart] {
        for (bits, shown) in [(0x02u8, "0x02"), (0x40, "0x40"), (0x80, "0x80")] {
            let mut b = valid(kind);
            b[13] = bits | 0x3d;
            assert_eq!(
                reject(&b),
                format!(
                    "{}.completion_info.reserved = {shown} (bits 1 and 7:6 must be zero)",
                    kind.name()
                )
            );
        }
    }
}

#[test]
fn flags_are_checked() {
    let mut b = valid(InstKind::Indirect1d);
    b[15] = 0x03;
    assert_eq!(
        reject(&b),
        "INDIRECT1D.flags.indirect_mode = 3 (valid: 0 SRC_INDIRECTION, 1 DST_INDIRECTION, \
         2 SRC_DST_INDIRECTION)"
    );
    b[15] = 0xfe;
    assert!(
        InstWord::decode(&b).is_ok(),
        "every other flag bit is defined"
    );

    let mut b = valid(InstKind::GatherXpose);
    b[63] = 0x05;
    assert_eq!(
        reject(&b),
        "GATHER_XPOSE.flags.reserved = 0x01 (bits 7:2 must be zero)"
    );
}

#[test]
fn compute_op_outside_0_to_4_is_rejected() {
    let mut b = valid(InstKind::Direct2d);
    b[15] = 5;
    assert_eq!(
        reject(&b),
        "DIRECT2D.compute_op = 5 (valid: 0 NONE, 1 ADD, 2 MULTIPLY, 3 MAX, 4 MIN)"
    );
    let mut b = valid(InstKind::Indirect1d);
    b[60] = 0x80;
    assert!(reject(&b).starts_with("INDIRECT1D.compute_op = 128 (valid:"));
}

#[test]
fn bound_check_gate() {
    // DIRECT2D src_bound_reg @38.
    let check = |byte: u8| {
        let mut b = valid(InstKind::Direct2d);
        b[38] = byte;
        InstWord::decode(&b).map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(check(0x00), Ok(()), "inert");
    assert_eq!(check(0x85), Ok(()), "enabled on reg 5");
    assert_eq!(check(0xc5), Ok(()), "enabled, notification off");
    assert_eq!(check(0xc0), Ok(()), "enabled, reg 0, notification off");
    assert_eq!(
        check(0x80),
        Err(
            "DIRECT2D.src_bound_reg = 0x80 (bc_enabled = 1 with bc_reg = 0 and the OOB \
             notification on is invalid)"
                .to_string()
        )
    );
    assert_eq!(
        check(0x05),
        Err(
            "DIRECT2D.src_bound_reg = 0x05 (bc_enabled = 0 with bc_reg = 5 and \
             bc_disable_oob_error_notif = 0: a disabled gate must be all zero)"
                .to_string()
        )
    );
    assert_eq!(
        check(0x40),
        Err(
            "DIRECT2D.src_bound_reg = 0x40 (bc_enabled = 0 with bc_reg = 0 and \
             bc_disable_oob_error_notif = 1: a disabled gate must be all zero)"
                .to_string()
        )
    );
    // Every word's bound registers are gated.
    for (kind, at, field) in [
        (InstKind::Direct2d, 39, "dst_bound_reg"),
        (InstKind::Indirect1d, 58, "src_idx_bound_reg"),
        (InstKind::Indirect1d, 59, "dst_idx_bound_reg"),
        (InstKind::Direct2dXpose, 12, "src_bound_reg"),
        (InstKind::Direct2dXpose, 13, "dst_bound_reg"),
        (InstKind::GatherXpose, 15, "src_idx_bound_reg"),
        (InstKind::GatherXpose, 51, "dst_bound_reg"),
    ] {
        let mut b = valid(kind);
        b[at] = 0x80;
        assert!(
            reject(&b).starts_with(&format!("{}.{field} = 0x80 (", kind.name())),
            "{}",
            reject(&b)
        );
    }
}

#[test]
fn indirect1d_silent_index_bound_needs_idx_bound_is_err() {
    let mut b = valid(InstKind::Indirect1d);
    b[58] = 0xc3; // enabled, reg 3, notification off
    assert_eq!(
        reject(&b),
        "INDIRECT1D.src_idx_bound_reg = 0xc3 (bc_disable_oob_error_notif = 1 needs \
         flags.idx_bound_is_err = 1: a silent index bound check that is not an error is invalid)"
    );
    b[15] = 0x04; // idx_bound_is_err
    assert!(InstWord::decode(&b).is_ok());
}

#[test]
fn bad_addresses_are_rejected() {
    let mut b = valid(InstKind::Direct2d);
    b[23] = 0x10; // src ADDR8 marker bit 4
    assert_eq!(
        reject(&b),
        "DIRECT2D.src_start_addr = 0x1000000000000000 (ADDR8 marker 0x10: bit 4 is reserved)"
    );
    let mut b = valid(InstKind::Direct2d);
    b[47] = 0x80; // dst ADDR8 register mode
    b[40] = 0x47; // register bits above 5:0
    assert_eq!(
        reject(&b),
        "DIRECT2D.dst_start_addr = 0x8000000000000047 (ADDR8 0x8000000000000047: bits outside \
         the operand fields of marker 0x80 must be zero)"
    );
    let mut b = valid(InstKind::Indirect1d);
    b[50] = 0x04; // src_idx ADDR4 bit 18
    assert_eq!(
        reject(&b),
        "INDIRECT1D.src_idx_start_addr = 0x00040000 (ADDR4 0x00040000: partOffset[22:18] must be \
         zero (found 0x1))"
    );
    let mut b = valid(InstKind::RdmaDescGen);
    b[35] = 0x10; // dst ADDR4 marker 0x10
    assert_eq!(
        reject(&b),
        "RDMA_DESC_GEN.dst_addr = 0x10000000 (ADDR4 marker 0x10 is not a known mode (0x00, 0x40, \
         0x80, 0xc0, 0x20, 0xa0))"
    );
    let mut b = valid(InstKind::GatherXpose);
    b[39] = 0x80;
    b[36] = 0x40; // ADDR4 register mode with bits above 5:0
    assert!(reject(&b).starts_with("GATHER_XPOSE.src_idx_start_addr = 0x80000040 ("));
}

#[test]
fn every_addr8_marker_mode_round_trips_in_a_word() {
    for raw in [
        0x0000_0020_0000_0010u64,
        0x4000_0020_0000_0010,
        0x8000_0000_0000_0007,
        0xC000_0000_0000_003F,
        0x2000_0012_3456_7803,
        0x6000_0012_3456_7803,
        0x2400_1234_5678_9A03,
        0x2800_0000_0000_0905,
        0x2C00_0000_0000_0905,
        0x6C00_0000_0000_3FFF,
    ] {
        let mut b = valid(InstKind::Direct2d);
        b[16..24].copy_from_slice(&raw.to_le_bytes());
        let w = InstWord::decode(&b).unwrap();
        assert_eq!(w.encode().unwrap(), b, "{raw:#x}");
        let line = w.to_text();
        assert_eq!(parse_line(&line).unwrap().unwrap(), w, "{line}");
    }
}

#[test]
fn encode_rejects_values_that_do_not_fit() {
    let w = Direct2d {
        src_bound_reg: BoundCheckReg {
            bc_reg: 64,
            bc_disable_oob_error_notif: false,
            bc_enabled: true,
        },
        ..Default::default()
    };
    assert_eq!(
        w.encode().unwrap_err().to_string(),
        "DIRECT2D.src_bound_reg.bc_reg = 64 (does not fit 6 bits)"
    );
    let w = Direct2d {
        dma_configs: DmaConfigs { priority_class: 6 },
        ..Default::default()
    };
    assert_eq!(
        w.encode().unwrap_err().to_string(),
        "DIRECT2D.dma_configs.priority_class = 6 (valid 0..=4)"
    );
    let w = GatherXpose {
        dtype: DtypePair {
            dtype_lo: Dtype::Fp4Exp2,
            dtype_hi: Dtype::Bfloat16,
        },
        ..Default::default()
    };
    assert_eq!(
        w.encode().unwrap_err().to_string(),
        "GATHER_XPOSE.dtype.dtype_lo = 16 (does not fit 4 bits)"
    );
    let w = Direct2d {
        src_start_addr: Addr8::Table {
            entry: 1,
            offset: TableOffset::Immediate {
                value: 1 << 32,
                wide: false,
            },
            shape_reg: false,
        },
        ..Default::default()
    };
    assert!(
        w.encode()
            .unwrap_err()
            .to_string()
            .starts_with("DIRECT2D.src_start_addr = tbl:1+0x100000000 (ADDR8 field offset")
    );
}

#[test]
fn typed_decode_checks_the_kind() {
    let b = valid(InstKind::Indirect1d);
    assert_eq!(
        Direct2d::decode(&b).unwrap_err().to_string(),
        "INDIRECT1D.header.opcode = 0xbb (expected a DIRECT2D word)"
    );
}

#[test]
fn unpublished_enum_codes_are_kept() {
    let mut b = valid(InstKind::Direct2d);
    b[4] = 0x02; // wait_mode not in the published list
    b[6] = 0x42; // update_mode likewise
    b[62] = 0x04; // dtype not listed
    b[63] = 0x1b; // a CPTC trellis type
    let w = InstWord::decode(&b).unwrap();
    assert_eq!(w.events().wait_mode, WaitMode::Other(2));
    assert_eq!(w.events().update_mode, UpdateMode::Other(0x42));
    let InstWord::Direct2d(d) = w else {
        panic!("kind")
    };
    assert_eq!(
        (d.in_dtype, d.out_dtype),
        (Dtype::Other(4), Dtype::CptcTrellis(0x1b))
    );
    assert_eq!(w.encode().unwrap(), b);
    assert_eq!(
        w.to_text(),
        "DIRECT2D events.wait_mode=0x02 events.update_mode=0x42 in_dtype=0x04 \
         out_dtype=CPTC_TRELLIS_1B"
    );
    assert_eq!(parse_line(&w.to_text()).unwrap().unwrap(), w);
}

// ---- hex form ------------------------------------------------------------------

#[test]
fn hex_words() {
    let b = valid(InstKind::RdmaDescStart);
    let hex = dma_abi::inst::word_hex(&b);
    assert_eq!(hex.len(), 128);
    assert!(hex.starts_with("f004000000000000000000000900"));
    assert_eq!(parse_hex_word(&hex).unwrap(), b);
    let spaced: String = hex
        .as_bytes()
        .chunks(8)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(parse_hex_word(&spaced).unwrap(), b);
    assert!(
        parse_hex_word(&format!("0x{hex}"))
            .unwrap_err()
            .to_string()
            .contains("`0x` prefix")
    );
    assert_eq!(
        parse_hex_word("00ff").unwrap_err().to_string(),
        "expected 128 hex digits (64 bytes in memory order), found 4"
    );
    assert!(
        parse_hex_word("zz")
            .unwrap_err()
            .to_string()
            .contains("'z'")
    );
}

// ---- text form -------------------------------------------------------------------

#[test]
fn text_form_of_each_kind_round_trips() {
    let lines = [
        "DIRECT2D events.wait_mode=WAIT_FOR_SEM_GE_IMM events.wait_idx=3 events.semaphore_value=16 \
         dma_configs.priority_class=2 semaphore=5 sem_increment=1 src_start_addr=imm:0x4000000000 \
         src_step_elem=[1,4096] src_num_elem=[4096,128] src_elem_size=2 src_bound_reg.bc_reg=7 \
         src_bound_reg.bc_enabled=1 dst_start_addr=imm:0x2000000000 dst_step_elem=[1,262144] \
         dst_num_elem=[4096,128] dst_elem_size=2 in_dtype=BFLOAT16 out_dtype=BFLOAT16",
        "INDIRECT1D semaphore=1 sem_increment=1 idx_num_active_channels=128 \
         flags.indirect_mode=DST_INDIRECTION flags.non_unique_dst_idx=1 \
         src_start_addr=imm:0x2000000000 src_step_elem=1 src_num_elem=64 src_elem_size=4 \
         dst_start_addr=tbl:2+0x100 dst_step_elem=64 dst_num_elem=4096 dst_elem_size=4 \
         dst_idx_start_addr=imm:sbuf:q0:0x1000 in_dtype=FP32 out_dtype=FP32 compute_op=ADD",
        "DIRECT2D_XPOSE in_dtype=BFLOAT16 out_dtype=BFLOAT16 src_start_addr=imm:0x2000000000 \
         src_step_elem=[1,262144] src_num_elem=[128,16] tile_src_row_step=262144 \
         dst_start_addr=reg-shape:9 tile_src_rows=16 tile_src_cols=128 semaphore=2",
        "GATHER_XPOSE semaphore=4 idx_num_active_channels=128 src_start_addr=imm:0x4000000000 \
         src_step_elem=[1,-512] src_num_elem=[128,64] src_idx_start_addr=imm-shape:psum:q2:0x40 \
         dst_start_addr=imm:0x2000000000 dst_step_elem_1=262144 dst_num_elem=[64,1] elem_size=256 \
         dtype.dtype_lo=BFLOAT16 dtype.dtype_hi=BFLOAT16 flags.gather_dim=Y",
        "RDMA_DESC_GEN header.inst_word_len=16 completion_info.num_active_ports=4 local_sem=1 \
         remote_sem=2 remote_core_id=0x3 remote_routing_id=0x1 dma_engine_mask=0xffff \
         src_addr=imm:sbuf:q0:0x100 dst_addr=ind-reg:7 free_dim_bytes=4096 remote_sem_prev=9",
        "RDMA_DESC_START events.wait_mode=WAIT_FOR_SEM_EQ_IMM events.wait_idx=2 \
         events.semaphore_value=16 completion_info.has_read=1",
    ];
    for line in lines {
        let w = parse_line(line).unwrap().unwrap();
        // Compact printing is canonical: the lines above are written in it.
        assert_eq!(w.to_text(), line);
        let full = text::print_word(&w, TextStyle::Full);
        assert_eq!(parse_line(&full).unwrap().unwrap(), w);
        let b = w.encode().unwrap();
        assert_eq!(disasm(&b).unwrap(), format!("{line}\n"));
    }
}

#[test]
fn omitted_fields_are_zero_and_inert() {
    let w = parse_line("RDMA_DESC_START").unwrap().unwrap();
    assert_eq!(w, InstWord::RdmaDescStart(RdmaDescStart::default()));
    let b = w.encode().unwrap();
    let mut want = [0u8; WORD_BYTES];
    want[0] = 0xf0;
    want[1] = 4;
    want[12] = 9;
    assert_eq!(b, want);
    assert_eq!(
        parse_line("direct2d").unwrap().unwrap().encode().unwrap()[..2],
        [0xb8, 4]
    );
}

#[test]
fn text_values_accept_alternative_spellings() {
    let a = parse_line(
        "DIRECT2D src_step_elem=[ -4 , 0x10 ] compute_op=max src_bound_reg.bc_enabled=true \
         src_bound_reg.bc_reg=0x3 src_start_addr=0x20_0000_0000 in_dtype=6 events.wait_mode=5",
    )
    .unwrap()
    .unwrap();
    let b = parse_line(
        "DIRECT2D src_step_elem=[-4,16] compute_op=MAX src_bound_reg.bc_enabled=1 \
         src_bound_reg.bc_reg=3 src_start_addr=imm:0x2000000000 in_dtype=BFLOAT16 \
         events.wait_mode=WAIT_FOR_SEM_GE_IMM",
    )
    .unwrap()
    .unwrap();
    assert_eq!(a, b);
    // A bare number is the raw ADDR8/ADDR4 encoding.
    let w =
        parse_line("INDIRECT1D src_start_addr=0x8000000000000005 src_idx_start_addr=0xa0000003")
            .unwrap()
            .unwrap();
    assert_eq!(
        w.to_text(),
        "INDIRECT1D src_start_addr=reg:5 src_idx_start_addr=ind-reg:3"
    );
}

#[test]
fn text_errors_name_line_column_and_field() {
    let err = |line: &str| parse_line(line).unwrap_err().to_string();
    assert_eq!(
        err("DIRECT2D dma_configs.priority_class=5"),
        "1:10: DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)"
    );
    assert_eq!(
        err("  BOGUS x=1"),
        "1:3: unknown instruction word `BOGUS` (expected DIRECT2D, INDIRECT1D, DIRECT2D_XPOSE, \
         GATHER_XPOSE, RDMA_DESC_GEN, RDMA_DESC_START)"
    );
    assert_eq!(
        err("DIRECT2D semaphore=300"),
        "1:20: DIRECT2D.semaphore: expected an 8-bit number (0..=255); 300 does not fit, found `300`"
    );
    assert_eq!(
        err("DIRECT2D src_num_elem=[1,2,3]"),
        "1:23: DIRECT2D.src_num_elem: expected two 16-bit counts written as [x,y] (exactly two \
         elements), found `[1,2,3]`"
    );
    assert!(err("DIRECT2D nope=1").starts_with("1:10: DIRECT2D has no field `nope`"));
    assert!(err("DIRECT2D events.nope=1").starts_with(
        "1:10: DIRECT2D has no field `events.nope`: `nope` is not one of wait_mode, wait_idx"
    ));
    assert_eq!(
        err("DIRECT2D header=1"),
        "1:10: DIRECT2D.header is a group: set header.inst_word_len, header.debug_cmd, \
         header.debug_hint"
    );
    assert_eq!(
        err("DIRECT2D semaphore.x=1"),
        "1:10: DIRECT2D.semaphore.x: `semaphore` has no sub-fields"
    );
    assert_eq!(
        err("DIRECT2D semaphore=1 semaphore=2"),
        "1:22: DIRECT2D.semaphore: given twice (first at column 10)"
    );
    // Text embedded at column 11 of a line (a trace's `inst tpb0 …`): every
    // column, those in the message too, counts from the start of that line.
    for (text, want) in [
        (
            "DIRECT2D semaphore=1 semaphore=2",
            "3:32: DIRECT2D.semaphore: given twice (first at column 20)",
        ),
        (
            "DIRECT2D nope=1",
            "3:20: DIRECT2D has no field `nope`: `nope` is not one of",
        ),
        (
            "DIRECT2D src_step_elem=[1,2",
            "3:20: `src_step_elem=[1,2`: unclosed `[`",
        ),
        ("DIRECT2Q", "3:11: unknown instruction word `DIRECT2Q`"),
    ] {
        let got = dma_abi::inst::parse_line_at(text, 3, 11)
            .unwrap_err()
            .to_string();
        assert!(got.starts_with(want), "{text}: {got}");
    }
    assert_eq!(
        err("DIRECT2D semaphore"),
        "1:10: DIRECT2D: expected key=value, found `semaphore`"
    );
    assert_eq!(
        err("DIRECT2D src_step_elem=[1,2"),
        "1:10: `src_step_elem=[1,2`: unclosed `[`"
    );
    assert_eq!(
        err("DIRECT2D semaphore=1 src_bound_reg.bc_reg=4"),
        "1:22: DIRECT2D.src_bound_reg = 0x04 (bc_enabled = 0 with bc_reg = 4 and \
         bc_disable_oob_error_notif = 0: a disabled gate must be all zero)"
    );
    assert_eq!(
        err("RDMA_DESC_GEN header.inst_word_len=8"),
        "1:36: RDMA_DESC_GEN.header.inst_word_len: expected an inst_word_len: 4, 16 or its code, \
         found `8`"
    );
    assert!(
        err("DIRECT2D dst_start_addr=imm:0x1000000000000000")
            .starts_with("1:25: DIRECT2D.dst_start_addr: expected an ADDR8: imm:ADDR")
    );
    assert!(
        err("INDIRECT1D src_idx_start_addr=imm:sbuf:q4:0")
            .starts_with("1:31: INDIRECT1D.src_idx_start_addr: expected an ADDR4")
    );
}

#[test]
fn asm_reports_every_bad_line_and_skips_comments() {
    let text = "# a stream\n\
                RDMA_DESC_GEN local_sem=1   # trailing comment\n\
                \n\
                DIRECT2D semaphore=999\n\
                RDMA_DESC_START\n\
                GATHER_XPOSE flags.gather_dim=Q\n";
    let errs = asm(text).unwrap_err();
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2);
    assert!(
        shown[0].starts_with("4:20: DIRECT2D.semaphore:"),
        "{}",
        shown[0]
    );
    assert!(
        shown[1].starts_with("6:31: GATHER_XPOSE.flags.gather_dim: expected a dim: X, Y, Z, W"),
        "{}",
        shown[1]
    );
    let good = "# two words\nRDMA_DESC_GEN local_sem=1 # gen\n\nRDMA_DESC_START\n";
    let bytes = asm(good).unwrap();
    assert_eq!(bytes.len(), 128);
    assert_eq!(
        disasm(&bytes).unwrap(),
        "RDMA_DESC_GEN local_sem=1\nRDMA_DESC_START\n"
    );
    assert_eq!(parse_text(good).unwrap().len(), 2);
}

#[test]
fn disasm_names_the_offset() {
    let mut stream = valid(InstKind::Direct2d).to_vec();
    stream.extend_from_slice(&valid(InstKind::Indirect1d));
    stream.truncate(100);
    assert_eq!(
        disasm(&stream).unwrap_err(),
        StreamError::Length { len: 100 }
    );
    assert_eq!(
        disasm(&stream).unwrap_err().to_string(),
        "a stream of 100 bytes is not a whole number of 64-byte words: 36 trailing bytes at \
         offset 0x40"
    );
    let mut stream = valid(InstKind::Direct2d).to_vec();
    let mut bad = valid(InstKind::Indirect1d);
    bad[61] = 6;
    stream.extend_from_slice(&bad);
    assert_eq!(
        disasm(&stream).unwrap_err().to_string(),
        "word 1 at offset 0x40: INDIRECT1D.dma_configs.priority_class = 6 (valid 0..=4)"
    );
    assert_eq!(disasm(&[]).unwrap(), "");
}

// ---- JSON -------------------------------------------------------------------------

fn json_of(line: &str) -> serde_json::Value {
    let w = parse_line(line).unwrap().unwrap();
    serde_json::to_value(w.decode_json().unwrap()).unwrap()
}

/// The top-level keys of the decode in serialization order.
fn keys(line: &str) -> Vec<String> {
    let w = parse_line(line).unwrap().unwrap();
    let text = serde_json::to_string_pretty(&w.decode_json().unwrap()).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("  \""))
        .filter_map(|l| l.split_once('"').map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn json_has_kind_opcode_and_every_field_in_order() {
    let line = "DIRECT2D src_start_addr=imm:0x4000000000 src_bound_reg.bc_reg=2 \
                src_bound_reg.bc_enabled=1";
    let v = json_of(line);
    assert_eq!(v["kind"], "DIRECT2D");
    assert_eq!(v["opcode"], "0xb8");
    assert!(v.get("extended_opcode").is_none());
    assert_eq!(v["header"]["opcode"], "0xb8");
    assert_eq!(v["header"]["inst_word_len"], 4);
    assert_eq!(v["src_start_addr"]["mode"], "IMM");
    assert_eq!(v["src_start_addr"]["addr"], "0x4000000000");
    assert_eq!(v["src_bound_reg"]["bc_reg"], 2);
    assert_eq!(v["src_bound_reg"]["bc_enabled"], true);
    assert_eq!(v["compute_op"], "NONE");
    let mut want = vec!["kind", "opcode", "raw", "header"];
    want.extend(Direct2d::FIELDS.iter().skip(1));
    assert_eq!(keys(line), want);

    for (line, kind, opcode, fields) in [
        ("INDIRECT1D", "INDIRECT1D", "0xbb", Indirect1d::FIELDS),
        (
            "DIRECT2D_XPOSE",
            "DIRECT2D_XPOSE",
            "0xbd",
            Direct2dXpose::FIELDS,
        ),
        ("GATHER_XPOSE", "GATHER_XPOSE", "0xf1", GatherXpose::FIELDS),
    ] {
        let v = json_of(line);
        assert_eq!(
            (v["kind"].as_str(), v["opcode"].as_str()),
            (Some(kind), Some(opcode))
        );
        let mut want = vec!["kind", "opcode", "raw", "header"];
        want.extend(fields.iter().skip(1));
        assert_eq!(keys(line), want);
    }
    for (line, ext, fields) in [
        ("RDMA_DESC_GEN", 8, RdmaDescGen::FIELDS),
        ("RDMA_DESC_START", 9, RdmaDescStart::FIELDS),
    ] {
        let v = json_of(line);
        assert_eq!(v["opcode"], "0xf0");
        assert_eq!(v["extended_opcode"], ext);
        let mut want = vec!["kind", "opcode", "extended_opcode", "raw", "header"];
        want.extend(fields.iter().skip(1));
        assert_eq!(keys(line), want);
    }
}

#[test]
fn json_addresses_show_mode_and_operands() {
    let v = json_of(
        "INDIRECT1D src_start_addr=tbl-shape:3+wreg:9 dst_start_addr=reg:4 \
         src_idx_start_addr=imm:psum:q1:0x40 dst_idx_start_addr=ind-reg:5 \
         flags.indirect_mode=SRC_DST_INDIRECTION flags.gather_dim=W",
    );
    let s = &v["src_start_addr"];
    assert_eq!(s["mode"], "ADDR_TBL_SHAPE_REG");
    assert_eq!(s["marker"], "0x6c");
    assert_eq!(s["entry"], 3);
    assert_eq!(s["offset_reg"], 9);
    assert_eq!(s["offset_wide"], true);
    assert_eq!(s["shape_reg"], true);
    assert_eq!(v["dst_start_addr"]["mode"], "ADDR_REG");
    assert_eq!(v["dst_start_addr"]["reg"], 4);
    let i = &v["src_idx_start_addr"];
    assert_eq!(i["mode"], "IMM");
    assert_eq!(i["space"], "PSUM");
    assert_eq!(i["quadrant"], 1);
    assert_eq!(i["offset"], "0x40");
    assert_eq!(i["raw"], "0x2800040");
    assert_eq!(v["dst_idx_start_addr"]["mode"], "INDIRECT_REG");
    assert_eq!(v["dst_idx_start_addr"]["marker"], "0xa0");
    assert_eq!(v["flags"]["indirect_mode"], "SRC_DST_INDIRECTION");
    assert_eq!(v["flags"]["gather_dim"], "W");
    assert_eq!(v["events"]["wait_mode"], "NONE");

    let v = json_of("RDMA_DESC_GEN dma_engine_mask=0xff completion_info.has_write=1");
    assert_eq!(v["dma_engine_mask"]["raw"], "0xff");
    assert_eq!(v["dma_engine_mask"]["uint32"], 255);
    assert_eq!(v["completion_info"]["has_write"], true);
    assert_eq!(v["raw"].as_str().unwrap().len(), 128);
}

/// A leading UTF-8 byte-order mark is skipped, as in traces
/// (docs/trace-format.md §1); columns count from after it.
#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let plain = asm("DIRECT2D semaphore=1\n").unwrap();
    assert_eq!(asm("\u{feff}DIRECT2D semaphore=1\n").unwrap(), plain);
    assert_eq!(
        parse_text("\u{feff}DIRECT2D semaphore=1\n").unwrap().len(),
        1
    );
    let e = asm("\u{feff}DIRECT2D nope=1\n").unwrap_err();
    assert!(
        e[0].to_string()
            .starts_with("1:10: DIRECT2D has no field `nope`"),
        "{}",
        e[0]
    );
}
