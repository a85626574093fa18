//! DIRECT2D_XPOSE (docs/instruction-words.md "DIRECT2D_XPOSE, 0xbd"): the
//! tiled cross-bar transpose (docs/firmware.md "DIRECT2D_XPOSE").

use dma_abi::inst::{Direct2dXpose, InstKind};

use super::operands::{Gate, bounds_line, resolve_addr8, shape_reg_operand};
use super::spread::Spread;
use super::{DescPair, Operands, Plan, PlanError};
use crate::layout::DgeConfig;

/// Rows of one cross-bar transpose tile (docs/references/wiki.md §A.7).
pub const XPOSE_TILE_ROWS: u8 = 16;

/// DIRECT2D_XPOSE (P9.1 §2.5; docs/references/wiki.md §A.7, §G.4): the source is R
/// rows (`src_num_elem[1]`) of C elements (`src_num_elem[0]`), element
/// (r, c) at `src + (t·tile_src_row_step + i·src_step[1] + c·src_step[0])
/// × size` for r = 16t + i; it lands transposed, element (r, c) at
/// `dst + (r·dst_step[0] + c·dst_step[1]) × size`, so `dst_num_elem` is
/// [R, C]. The axi2sram cross-bar does the transpose in hardware: when
/// source rows are contiguous, destination rows adjacent and destination
/// columns one partition apart, each 16 × N tile chunk (N ≤
/// `tile_src_cols`) whose columns are all in partitions of one memory and
/// within the bound checks is one cross-bar packet (16 row descriptors,
/// engines in round robin). Otherwise — and for chunks that are not — each
/// 16-row tile column is one packet: 16 source pieces gathered into one
/// destination write of 16 elements (or 16 single pairs when the
/// destination column is not contiguous), on the engine of the destination
/// partition. Both land the same bytes (a proptest checks it).
pub(super) fn expand_direct2d_xpose(
    w: &Direct2dXpose,
    cfg: &DgeConfig,
    ops: &dyn Operands,
    spare: Vec<super::EnginePlan>,
) -> Result<Plan, PlanError> {
    const W: &str = "DIRECT2D_XPOSE";
    shape_reg_operand(
        W,
        "src_start_addr",
        w.src_start_addr,
        ("src_num_elem", &w.src_num_elem),
        None,
    )?;
    shape_reg_operand(
        W,
        "dst_start_addr",
        w.dst_start_addr,
        ("dst_num_elem", &w.dst_num_elem),
        None,
    )?;
    if w.out_dtype != w.in_dtype {
        return Err(PlanError::Invalid(format!(
            "{W}.out_dtype = {:?}: must equal in_dtype {:?} (no cast through the cross-bar)",
            w.out_dtype, w.in_dtype
        )));
    }
    let size = cme::Dtype::from_code(w.in_dtype.code()).map_or(0, |d| d.size_bytes());
    let max_cols = match size {
        2 => 128,
        4 => 64,
        _ => {
            return Err(PlanError::Invalid(format!(
                "{W}.in_dtype = {:?}: the cross-bar transposes 2- and 4-byte elements only",
                w.in_dtype
            )));
        }
    };
    if w.tile_src_rows != XPOSE_TILE_ROWS {
        return Err(PlanError::Invalid(format!(
            "{W}.tile_src_rows = {}: must be {XPOSE_TILE_ROWS}",
            w.tile_src_rows
        )));
    }
    if w.tile_src_cols == 0 || u32::from(w.tile_src_cols) > max_cols {
        return Err(PlanError::Invalid(format!(
            "{W}.tile_src_cols = {}: must be 1..={max_cols} for {size}-byte elements",
            w.tile_src_cols
        )));
    }
    let (cols, rows) = (u64::from(w.src_num_elem[0]), u64::from(w.src_num_elem[1]));
    if !rows.is_multiple_of(u64::from(XPOSE_TILE_ROWS)) {
        return Err(PlanError::Invalid(format!(
            "{W}.src_num_elem[1] = {rows}: the rows must fill 16-row tiles"
        )));
    }
    if w.dst_num_elem != [w.src_num_elem[1], w.src_num_elem[0]] {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_num_elem {:?}: must be [src_num_elem[1], src_num_elem[0]] = [{rows}, {cols}] (the transpose)",
            w.dst_num_elem
        )));
    }
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops)?;
    if !dst_addr.addr.is_multiple_of(32) {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_start_addr = {:#x}: must be 32-byte aligned",
            dst_addr.addr
        )));
    }
    let esz = size as u64;
    let at = |base: u64, elems: i128| -> Result<u64, PlanError> {
        u64::try_from(i128::from(base) + elems * i128::from(esz)).map_err(|_| {
            PlanError::Invalid(format!(
                "{W}: an element address is outside the 64-bit address space"
            ))
        })
    };
    let [s0, s1] = w.src_step_elem.map(i128::from);
    let [d0, d1] = w.dst_step_elem.map(i128::from);
    let tile_step = i128::from(w.tile_src_row_step);
    let mut spread = Spread::new(W, cfg, 1, spare);
    let gates = [
        Gate::of(w.src_bound_reg, w.src_start_addr, W, "src_bound_reg")?,
        Gate::of(w.dst_bound_reg, w.dst_start_addr, W, "dst_bound_reg")?,
    ];
    let tiles = rows / u64::from(XPOSE_TILE_ROWS);
    // The cross-bar path: source rows contiguous (step 0 = 1), each
    // destination column 16 contiguous elements (dst step 0 = 1) one
    // partition apart (dst step 1 × size = the partition stride) — then a
    // whole 16 × N tile is one packet of 16 row descriptors.
    let xbar_word1 = dma_abi::CmeWord::DEFAULT_COPY
        .with_xbar(w.in_dtype.code())
        .map(dma_abi::CmeWord::raw);
    let stride_ok = d1 > 0
        && ops
            .partition_stride(dst_addr.addr)
            .is_some_and(|p| i128::from(p) == d1 * i128::from(esz));
    if let (true, true, true, Some(word1)) = (s0 == 1, d0 == 1, stride_ok, xbar_word1) {
        let chunk = u64::from(w.tile_src_cols);
        for t in 0..tiles {
            let r0 = t * u64::from(XPOSE_TILE_ROWS);
            let mut c0 = 0;
            while c0 < cols {
                let n = chunk.min(cols - c0);
                let dst = at(dst_addr.addr, i128::from(r0) + i128::from(c0) * d1)?;
                let last = at(dst, i128::from(n - 1) * d1)?;
                // Every column in a partition of the same memory (`last`
                // is checked, so these sums do not overflow).
                let fits = ops.partition_stride(dst) == Some(d1 as u64 * esz)
                    && (0..n).all(|c| ops.partition_of(dst + c * (d1 as u64) * esz).is_some());
                let mut row_addrs = Vec::with_capacity(usize::from(XPOSE_TILE_ROWS));
                for i in 0..u64::from(XPOSE_TILE_ROWS) {
                    let row = at(
                        src_addr.addr,
                        i128::from(t) * tile_step + i128::from(i) * s1 + i128::from(c0),
                    )?;
                    // The row's last element is addressable, as on the
                    // element path.
                    at(row, i128::from(n - 1))?;
                    row_addrs.push(row);
                }
                let col = u32::from(XPOSE_TILE_ROWS) * esz as u32;
                let taken = fits
                    && spread.push_xbar(
                        ops,
                        &row_addrs,
                        (n * esz) as u32,
                        dst,
                        last,
                        col,
                        word1,
                        gates,
                    )?;
                if !taken {
                    // Off the partitions, or partly out of bounds: element
                    // pieces, column by column (the same bytes and drops as
                    // the element path below).
                    for c in 0..n {
                        let d = at(dst, i128::from(c) * d1)?;
                        let pieces = row_addrs
                            .iter()
                            .map(|&r| at(r, i128::from(c)))
                            .collect::<Result<Vec<u64>, _>>()?;
                        spread.push_gather(ops, &pieces, d, esz as u32, gates)?;
                    }
                }
                c0 += n;
            }
        }
    } else {
        for t in 0..tiles {
            for c in 0..cols {
                let r0 = t * u64::from(XPOSE_TILE_ROWS);
                let dst = at(dst_addr.addr, i128::from(r0) * d0 + i128::from(c) * d1)?;
                let mut pieces = Vec::with_capacity(usize::from(XPOSE_TILE_ROWS));
                for i in 0..u64::from(XPOSE_TILE_ROWS) {
                    let src = at(
                        src_addr.addr,
                        i128::from(t) * tile_step + i128::from(i) * s1 + i128::from(c) * s0,
                    )?;
                    pieces.push(src);
                }
                if d0 == 1 {
                    spread.push_gather(ops, &pieces, dst, esz as u32, gates)?;
                } else {
                    for (i, &src) in pieces.iter().enumerate() {
                        let d = at(dst, i as i128 * d0)?;
                        spread.push(ops, DescPair::copy(src, d, esz as u32), gates)?;
                    }
                }
            }
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &[],
        &[("src_bound_reg", gates[0]), ("dst_bound_reg", gates[1])],
        (src_addr.addr, size as u16, w.semaphore),
        |_| {
            [
                ("src", [cols as u32, rows as u32], [s0 as i64, s1 as i64]),
                ("dst", [rows as u32, cols as u32], [d0 as i64, d1 as i64]),
            ]
        },
    );
    let log = bounds_line(ops, gates, [src_addr.addr, dst_addr.addr])
        .into_iter()
        .collect();
    Ok(Plan {
        kind: InstKind::Direct2dXpose,
        engines,
        out_of_bounds,
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        log,
        ring_now: true,
        elements: Some(w.in_dtype.code()),
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::test_support::*;
    use crate::plan::{Plan, expand};
    use dma_abi::inst::{BoundCheckReg, Direct2dXpose, Dtype, InstKind, InstWord};
    use soc_map::Addr8;
    use std::collections::BTreeMap;

    fn xpose() -> Direct2dXpose {
        let InstWord::Direct2dXpose(mut w) = InstWord::default_of(InstKind::Direct2dXpose) else {
            unreachable!()
        };
        w.semaphore = 7;
        w.in_dtype = Dtype::Bfloat16;
        w.out_dtype = Dtype::Bfloat16;
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = [1, (STRIDE / 2) as i32];
        w.src_num_elem = [4, 16];
        w.tile_src_row_step = 16 * (STRIDE / 2) as i32;
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 0x1000,
            shape_reg: false,
        };
        w.dst_step_elem = [1, (STRIDE / 2) as i32];
        w.dst_num_elem = [16, 4];
        w.tile_src_rows = 16;
        w.tile_src_cols = 4;
        w
    }

    #[test]
    fn xpose_gathers_each_tile_column_into_one_destination_write() {
        let p = expand(&InstWord::Direct2dXpose(xpose()), &cfg(0xffff), &mut ops()).unwrap();
        // 4 columns -> partitions 0..3 -> engine 0: four 16-piece packets.
        let e0 = &p.engines[0];
        assert_eq!(e0.gathers.len(), 4);
        let g = &e0.gathers[3];
        assert_eq!(g.dst, SBUF + 3 * STRIDE + 0x1000);
        assert_eq!(g.dst_len_bytes, 32);
        assert_eq!(g.tx.len(), 16);
        assert_eq!(g.tx[0], (SBUF + 3 * 2, 2)); // row 0, column 3
        assert_eq!(g.tx[15], (SBUF + 15 * STRIDE + 3 * 2, 2)); // row 15
        assert_eq!(e0.m2s_descs(), 4 * 16 + 1);
        assert_eq!(e0.s2m_descs(), 4 + 1);
        assert_eq!(p.bytes(), 16 * 4 * 2);
    }

    #[test]
    fn xpose_takes_the_cross_bar_when_columns_are_a_partition_apart() {
        // Two 16 x 4 tiles (rows 0..15 and 16..31), SBUF to SBUF.
        let mut w = xpose();
        w.src_num_elem = [4, 32];
        w.dst_num_elem = [32, 4];
        let mut o = ops();
        o.xbar = true;
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        let word1 = dma_abi::CmeWord::DEFAULT_COPY
            .with_xbar(Dtype::Bfloat16.code())
            .map(dma_abi::CmeWord::raw);
        // One packet per tile, dealt round robin: engine 0 then engine 1.
        for (e, tile) in [(0usize, 0u64), (1, 1)] {
            let g = &p.engines[e].gathers;
            assert_eq!(g.len(), 1, "engine {e}");
            assert_eq!(Some(g[0].word1), word1);
            // 16 source rows of 4 bf16, one partition apart.
            assert_eq!(g[0].tx.len(), 16);
            assert_eq!(g[0].tx[0], (SBUF + 16 * tile * STRIDE, 8));
            assert_eq!(g[0].tx[15], (SBUF + (16 * tile + 15) * STRIDE, 8));
            // The tile's first column: partition 0, rows 16t.. at +2 × 16t.
            assert_eq!(g[0].dst, SBUF + 0x1000 + 32 * tile);
            assert_eq!(g[0].dst_len_bytes, 128);
            assert_eq!(p.engines[e].m2s_descs(), 16 + 1);
            assert_eq!(p.engines[e].s2m_descs(), 1 + 1);
        }
        assert_eq!(p.bytes(), 32 * 4 * 2);
        // Destination rows not adjacent (step 0 = 2): element pieces again.
        let mut w = xpose();
        w.dst_step_elem = [2, (STRIDE / 2) as i32];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert!(p.engines.iter().all(|e| e.gathers.is_empty()));
        assert_eq!(p.data_pairs(), 16 * 4);
        // Columns two partitions apart are no cross-bar tile either.
        let mut w = xpose();
        w.dst_step_elem = [1, STRIDE as i32];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert!(
            p.engines
                .iter()
                .flat_map(|e| &e.gathers)
                .all(|g| g.word1 == dma_abi::DEFAULT_COPY_WORD1)
        );
    }

    /// Where each destination byte comes from: pairs byte for byte,
    /// element gathers in order, cross-bar tiles transposed across
    /// partitions (as the data path lands them).
    fn landing(p: &Plan) -> BTreeMap<u64, u64> {
        let mut m = BTreeMap::new();
        for e in &p.engines {
            for d in &e.pairs {
                for k in 0..u64::from(d.len_bytes) {
                    m.insert(d.dst + k, d.src + k);
                }
            }
            for g in &e.gathers {
                let xbar = dma_abi::CmeWord::from_raw(g.word1).xbar_dtype();
                match xbar.and_then(cme::Dtype::from_code) {
                    Some(dt) => {
                        let esz = dt.size_bytes() as u64;
                        for (i, &(row, len)) in g.tx.iter().enumerate() {
                            for c in 0..u64::from(len) / esz {
                                for b in 0..esz {
                                    let to = g.dst + c * STRIDE + i as u64 * esz + b;
                                    m.insert(to, row + c * esz + b);
                                }
                            }
                        }
                    }
                    None => {
                        let mut at = g.dst;
                        for &(src, len) in &g.tx {
                            for k in 0..u64::from(len) {
                                m.insert(at, src + k);
                                at += 1;
                            }
                        }
                    }
                }
            }
        }
        m
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
        /// The cross-bar path lands every byte where the element path
        /// does, for any shape: chunks narrower than the tile, 2- and
        /// 4-byte types, tiles running off the last partition, destination
        /// bound checks that drop some columns.
        #[test]
        fn xpose_cross_bar_lands_what_the_element_path_lands(
            four_bytes in proptest::bool::ANY,
            cols in 1u16..=40,
            chunk_div in 1u16..=4,
            tiles in 1u16..=2,
            src_row_gap in 0i32..3,
            dst_part in 0u64..128,
            dst_limit_cols in proptest::option::of(0u64..40),
        ) {
            let mut w = xpose();
            let (dt, esz) = if four_bytes { (Dtype::Fp32, 4u64) } else { (Dtype::Bfloat16, 2) };
            w.in_dtype = dt;
            w.out_dtype = dt;
            let cols = if four_bytes { cols.min(64) } else { cols };
            let pstride = (STRIDE / esz) as i32;
            // Source rows: contiguous columns, rows (cols + gap) apart in
            // partition 0, tiles one row block apart.
            w.src_step_elem = [1, i32::from(cols) + src_row_gap];
            w.src_num_elem = [cols, 16 * tiles];
            w.tile_src_row_step = 16 * (i32::from(cols) + src_row_gap);
            w.tile_src_cols = u8::try_from(cols.div_ceil(chunk_div).max(1)).unwrap_or(u8::MAX);
            w.dst_start_addr = Addr8::Immediate {
                addr: SBUF + dst_part * STRIDE + 0x1000,
                shape_reg: false,
            };
            w.dst_step_elem = [1, pstride];
            w.dst_num_elem = [16 * tiles, cols];
            // Optional destination bound: REG[9] = a limit inside the
            // partitions, so some columns are dropped.
            let mut o = ops();
            if let Some(lim) = dst_limit_cols {
                w.dst_bound_reg = BoundCheckReg::enabled(9);
                o.regs = vec![(9, ((dst_part + lim) * STRIDE + 0x1000) as u32)];
            }
            let element = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o);
            o.xbar = true;
            let xbar = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o);
            match (element, xbar) {
                (Ok(e), Ok(x)) => {
                    proptest::prop_assert_eq!(landing(&e), landing(&x));
                    proptest::prop_assert_eq!(e.out_of_bounds.len(), x.out_of_bounds.len());
                }
                (e, x) => proptest::prop_assert_eq!(e.map(|_| ()), x.map(|_| ())),
            }
        }
    }

    #[test]
    fn xpose_cross_bar_is_taken_for_whole_tiles_only() {
        // Tile at partition 120 with 16 columns: runs off partition 127.
        let mut w = xpose();
        w.src_num_elem = [16, 16];
        w.dst_num_elem = [16, 16];
        w.tile_src_cols = 16;
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 120 * STRIDE + 0x1000,
            shape_reg: false,
        };
        let mut o = ops();
        o.xbar = true;
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        let xbar_packets = p
            .engines
            .iter()
            .flat_map(|e| &e.gathers)
            .filter(|g| g.word1 != dma_abi::DEFAULT_COPY_WORD1)
            .count();
        assert_eq!(xbar_packets, 0);
        // Element pieces for all 16 columns, as without the cross-bar (the
        // ones past partition 127 fault when the engine writes them).
        assert_eq!(landing(&p).len(), 16 * 16 * 2);
        o.xbar = false;
        let element = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(landing(&p), landing(&element));
    }

    #[test]
    fn xpose_refusals_name_the_field() {
        type Change = fn(&mut Direct2dXpose);
        let cases: [(Change, &str); 6] = [
            (|w| w.tile_src_rows = 8, "tile_src_rows = 8"),
            (|w| w.tile_src_cols = 129, "tile_src_cols = 129"),
            (|w| w.out_dtype = Dtype::Fp32, "must equal in_dtype"),
            (|w| w.src_num_elem = [4, 8], "16-row tiles"),
            (
                |w| w.dst_num_elem = [4, 16],
                "must be [src_num_elem[1], src_num_elem[0]]",
            ),
            (
                |w| {
                    w.dst_start_addr = Addr8::Immediate {
                        addr: SBUF + 0x1010,
                        shape_reg: false,
                    }
                },
                "32-byte aligned",
            ),
        ];
        for (change, msg) in cases {
            let mut w = xpose();
            change(&mut w);
            let e = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut ops()).unwrap_err();
            assert!(e.to_string().contains(msg), "{msg}: {e}");
        }
        let mut w = xpose();
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        w.tile_src_cols = 65;
        let e = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("1..=64 for 4-byte"), "{e}");
    }

    #[test]
    fn xpose_bound_limits_ignore_the_neighbouring_register() {
        // 16 x 4 bf16 SBUF -> SBUF (the SBUF sits above 4 GiB). REG[20] =
        // 0xFFFF_FFFF is a 32-bit limit below every SBUF address; REG[21]
        // = 0x7F belongs to something else and is not its high half, so
        // every source piece fails.
        let mut w = xpose();
        w.src_bound_reg = BoundCheckReg::enabled(20);
        let mut o = ops();
        o.regs = vec![(20, 0xFFFF_FFFF), (21, 0x7F)];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.bytes(), 0);
        assert_eq!(p.out_of_bounds.len(), 4, "one per tile column");
        assert!(p.out_of_bounds.iter().all(|b| b.limit == 0xFFFF_FFFF));
        // The destination gate likewise.
        let mut w = xpose();
        w.dst_bound_reg = BoundCheckReg::enabled(22);
        o.regs = vec![(22, 0xFFFF_FFFF), (23, 0x7F)];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.bytes(), 0);
        assert!(p.out_of_bounds.iter().all(|b| b.side == "dst"));
        // With REG[21] as the high half (a wide table operand) the source
        // passes: 0x7F_FFFF_FFFF is above every SBUF address.
        let mut w = xpose();
        w.src_bound_reg = BoundCheckReg::enabled(20);
        w.src_start_addr = Addr8::Table {
            entry: 1,
            offset: soc_map::TableOffset::Immediate {
                value: 0,
                wide: true,
            },
            shape_reg: false,
        };
        o.regs = vec![(20, 0xFFFF_FFFF), (21, 0x7F)];
        o.table = vec![(1, SBUF)];
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert!(p.out_of_bounds.is_empty());
        assert_eq!(p.bytes(), 16 * 4 * 2);
    }

    #[test]
    fn xpose_refuses_shape_register_operands_with_the_reason() {
        let mut w = xpose();
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 0x1000,
            shape_reg: true,
        };
        w.dst_num_elem = [0, 0];
        let e = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("DIRECT2D_XPOSE.dst_start_addr: ADDR8 marker 0x40"),
            "{e}"
        );
    }

    #[test]
    fn negative_steps_walk_the_source_backwards() {
        // The documented placement (docs/firmware.md "DIRECT2D_XPOSE"),
        // element (r, c), r = 16t + i, from src + (t·tile + i·s1 + c·s0) ×
        // size to dst + (r·d0 + c·d1) × size, with every source step
        // negative: 32 rows of 4 bf16 read from the end of an HBM block.
        let mut w = xpose();
        let base = 0x1000_0000u64 + 0x1000;
        w.src_start_addr = Addr8::Immediate {
            addr: base,
            shape_reg: false,
        };
        let (s0, s1, tile) = (-1i64, -4i64, -64i64);
        w.src_step_elem = [s0 as i32, s1 as i32];
        w.tile_src_row_step = tile as i32;
        w.src_num_elem = [4, 32];
        w.dst_num_elem = [32, 4];
        let mut o = ops();
        o.xbar = true; // s0 != 1: the element path all the same
        let p = expand(&InstWord::Direct2dXpose(w), &cfg(0xffff), &mut o).unwrap();
        let mut want = BTreeMap::new();
        let (d0, d1) = (1i64, (STRIDE / 2) as i64);
        for r in 0..32i64 {
            let (t, i) = (r / 16, r % 16);
            for c in 0..4i64 {
                let from = base as i64 + (t * tile + i * s1 + c * s0) * 2;
                let to = (SBUF + 0x1000) as i64 + (r * d0 + c * d1) * 2;
                for b in 0..2 {
                    want.insert((to + b) as u64, (from + b) as u64);
                }
            }
        }
        assert_eq!(landing(&p), want);
        assert!(p.out_of_bounds.is_empty());
    }
}
