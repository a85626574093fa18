//! GATHER_XPOSE (docs/instruction-words.md "GATHER_XPOSE, 0xf1"): the
//! index-driven gather with transpose (docs/firmware.md "GATHER_XPOSE").

use dma_abi::inst::{Dtype, GatherXpose, IndirectDim, InstKind};
use soc_map::{Addr4, Addr4Mode};

use super::operands::{
    Gate, addr4_refusal, bounds_line, check_active_channels, reg64, resolve_addr8,
    shape_reg_operand,
};
use super::spread::Spread;
use super::{DescPair, IndexOutOfBounds, MAX_INDICES, Operands, Plan, PlanError};
use crate::layout::DgeConfig;

/// GATHER_XPOSE (P9.1 §2.4; docs/references/wiki.md §G.2): K = `src_num_elem[1]`
/// UINT32 indices (a multiple of 16) pick K source rows of `elem_size` bytes
/// (J = elem_size / 2 elements of a 2-byte dtype): row k at
/// `src + idx[k] × src_step[1] × 2`, element j of it at `+ j × src_step[0]
/// × 2`. They land transposed: element (k, j) at `dst + k × 2 +
/// j × dst_step_elem_1 × 2` (dst step 0 = sizeof(dtype_hi)), so
/// `dst_num_elem` = [K, J]. Like DIRECT2D_XPOSE, a 16-index tile with all
/// indices valid, contiguous rows (`src_step[0]` = 1) and destination
/// columns one partition apart is one cross-bar packet when it fits the
/// partitions and the bound checks; otherwise each tile column is one
/// gather packet (16 pieces → one 32-byte write). Indices at or past
/// `REG[src_idx_bound_reg]` are dropped (that tile column falls back to
/// single pairs for the rows that remain).
pub(super) fn expand_gather_xpose(
    w: &GatherXpose,
    cfg: &DgeConfig,
    ops: &mut dyn Operands,
    spare: Vec<super::EnginePlan>,
) -> Result<Plan, PlanError> {
    const W: &str = "GATHER_XPOSE";
    check_active_channels(W, w.idx_num_active_channels)?;
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
    if w.flags.gather_dim != IndirectDim::Y {
        return Err(PlanError::Invalid(format!(
            "{W}.flags.gather_dim = {}: must be Y (the gathered rows are the slow axis)",
            w.flags.gather_dim.name()
        )));
    }
    let (lo, hi) = (w.dtype.dtype_lo, w.dtype.dtype_hi);
    if lo != hi || !matches!(lo, Dtype::Bfloat16 | Dtype::Fp16) {
        return Err(PlanError::Invalid(format!(
            "{W}.dtype = {lo:?}/{hi:?}: BF16 or FP16 on both sides (no cast)"
        )));
    }
    if w.elem_size < 2 || w.elem_size > 256 || !w.elem_size.is_multiple_of(2) {
        return Err(PlanError::Invalid(format!(
            "{W}.elem_size = {}: an even number of bytes in 2..=256",
            w.elem_size
        )));
    }
    let k_count = w.src_num_elem[1];
    let j_count = w.elem_size / 2;
    if !k_count.is_multiple_of(16) || k_count > MAX_INDICES {
        return Err(PlanError::Invalid(format!(
            "{W}.src_num_elem[1] = {k_count}: a multiple of 16 indices, at most {MAX_INDICES}"
        )));
    }
    if w.dst_num_elem != [k_count, j_count] {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_num_elem {:?}: must be [src_num_elem[1], elem_size / 2] = [{k_count}, {j_count}]",
            w.dst_num_elem
        )));
    }
    let ops_ro: &dyn Operands = ops;
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops_ro)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops_ro)?;
    if !src_addr.addr.is_multiple_of(2) {
        return Err(PlanError::Invalid(format!(
            "{W}.src_start_addr = {:#x}: must be 2-byte aligned",
            src_addr.addr
        )));
    }
    if !dst_addr.addr.is_multiple_of(32) {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_start_addr = {:#x}: must be 32-byte aligned",
            dst_addr.addr
        )));
    }
    if j_count > 1 && (i64::from(w.dst_step_elem_1) * 2).rem_euclid(32) != 0 {
        return Err(PlanError::Invalid(format!(
            "{W}.dst_step_elem_1 = {}: a multiple of 32 bytes unless dst_num_elem[1] = 1",
            w.dst_step_elem_1
        )));
    }
    let (idx_at, reg) = match w.src_idx_start_addr {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } if !offset.psum && offset.quadrant == 0 && offset.offset.is_multiple_of(4) => {
            let t = offset
                .lane(0)
                .map_err(|e| PlanError::Invalid(format!("{W}.src_idx_start_addr: {e}")))?;
            (ops_ro.partition_addr(t), None)
        }
        Addr4::Register {
            reg,
            mode: Addr4Mode::AddrReg,
        } => {
            let v = reg64(ops_ro, reg, W, "src_idx_start_addr")?;
            (v, Some(("src_idx_start_addr", reg, v)))
        }
        other => {
            return Err(
                addr4_refusal(W, "src_idx_start_addr", other).unwrap_or_else(|| {
                    PlanError::Invalid(format!(
                        "{W}.src_idx_start_addr: {other:?}: a 4-byte aligned offset in SBUF partition 0, or a register"
                    ))
                }),
            );
        }
    };
    let idx = ops.read_u32s(idx_at, usize::from(k_count)).map_err(|m| {
        PlanError::Invalid(format!("{W}.src_idx_start_addr: reading the indices: {m}"))
    })?;
    let ops: &dyn Operands = ops;
    let bound = w
        .src_idx_bound_reg
        .bc_enabled
        .then(|| ops.reg(w.src_idx_bound_reg.bc_reg));
    let at = |base: u64, elems: i128| -> Result<u64, PlanError> {
        u64::try_from(i128::from(base) + elems * 2).map_err(|_| {
            PlanError::Invalid(format!(
                "{W}: an element address is outside the 64-bit address space"
            ))
        })
    };
    let [s0, s1] = w.src_step_elem.map(i128::from);
    let d1 = i128::from(w.dst_step_elem_1);
    let mut index_faults = Vec::new();
    let valid: Vec<bool> = idx
        .iter()
        .enumerate()
        .map(|(k, &v)| match bound {
            Some(b) if v >= b => {
                index_faults.push(IndexOutOfBounds {
                    leg: "src_idx",
                    position: k as u32,
                    index: v,
                    bound: b,
                    is_error: !w.src_idx_bound_reg.bc_disable_oob_error_notif,
                });
                false
            }
            _ => true,
        })
        .collect();
    let mut spread = Spread::new(W, cfg, 1, spare);
    let gates = [
        Gate::INERT,
        Gate::of(w.dst_bound_reg, w.dst_start_addr, W, "dst_bound_reg")?,
    ];
    // The cross-bar path (as DIRECT2D_XPOSE): gathered rows contiguous
    // (step 0 = 1) and destination columns one partition apart — each
    // whole 16-index tile is one packet of 16 row descriptors.
    let xbar_word1 = dma_abi::CmeWord::DEFAULT_COPY
        .with_xbar(w.dtype.dtype_hi.code())
        .map(dma_abi::CmeWord::raw);
    let stride_ok = d1 > 0
        && ops
            .partition_stride(dst_addr.addr)
            .is_some_and(|p| i128::from(p) == d1 * 2);
    let xbar = (s0 == 1 && stride_ok).then_some(xbar_word1).flatten();
    for t in 0..usize::from(k_count / 16) {
        let rows = t * 16..t * 16 + 16;
        let whole = valid[rows.clone()].iter().all(|&v| v);
        if let (true, Some(word1)) = (whole, xbar) {
            let dst = at(dst_addr.addr, (t as i128) * 16)?;
            let last = at(dst, i128::from(j_count - 1) * d1)?;
            let fits = ops.partition_stride(dst) == Some(d1 as u64 * 2)
                && (0..u64::from(j_count))
                    .all(|j| ops.partition_of(dst + j * (d1 as u64) * 2).is_some());
            if fits {
                let mut row_addrs = Vec::with_capacity(16);
                for k in rows.clone() {
                    let row = at(src_addr.addr, i128::from(idx[k]) * s1)?;
                    at(row, i128::from(j_count) - 1)?;
                    row_addrs.push(row);
                }
                // Partly out of bounds: element pieces below.
                if spread.push_xbar(
                    ops,
                    &row_addrs,
                    u32::from(j_count) * 2,
                    dst,
                    last,
                    32,
                    word1,
                    gates,
                )? {
                    continue;
                }
            }
        }
        for j in 0..i128::from(j_count) {
            let dst = at(dst_addr.addr, (t as i128) * 16 + j * d1)?;
            let mut pieces = Vec::with_capacity(16);
            for k in rows.clone() {
                pieces.push(at(src_addr.addr, i128::from(idx[k]) * s1 + j * s0)?);
            }
            if whole {
                spread.push_gather(ops, &pieces, dst, 2, gates)?;
            } else {
                for (n, (k, src)) in rows.clone().zip(pieces).enumerate() {
                    if valid[k] {
                        spread.push(ops, DescPair::copy(src, dst + 2 * n as u64, 2), gates)?;
                    }
                }
            }
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        reg.as_slice(),
        &[
            ("src_idx_bound_reg", Gate::narrow(w.src_idx_bound_reg)),
            ("dst_bound_reg", gates[1]),
        ],
        (src_addr.addr, 2, w.semaphore),
        |_| {
            [
                (
                    "src",
                    [u32::from(j_count), u32::from(k_count)],
                    [s0 as i64, s1 as i64],
                ),
                (
                    "dst",
                    [u32::from(k_count), u32::from(j_count)],
                    [1, d1 as i64],
                ),
            ]
        },
    );
    let log = bounds_line(ops, gates, [src_addr.addr, dst_addr.addr])
        .into_iter()
        .collect();
    Ok(Plan {
        kind: InstKind::GatherXpose,
        engines,
        out_of_bounds,
        index_faults,
        duplicate_dst: Vec::new(),
        log,
        ring_now: true,
        elements: Some(w.dtype.dtype_hi.code()),
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::expand;
    use crate::plan::test_support::*;
    use dma_abi::inst::{BoundCheckReg, Dtype, GatherXpose, IndirectDim, InstKind, InstWord};
    use soc_map::{Addr4, Addr8};

    fn gxpose(k: u16) -> GatherXpose {
        let InstWord::GatherXpose(mut w) = InstWord::default_of(InstKind::GatherXpose) else {
            unreachable!()
        };
        w.semaphore = 8;
        w.idx_num_active_channels = 128;
        w.flags.gather_dim = IndirectDim::Y;
        w.dtype.dtype_lo = Dtype::Bfloat16;
        w.dtype.dtype_hi = Dtype::Bfloat16;
        w.src_start_addr = Addr8::Immediate {
            addr: 0x1000_0000,
            shape_reg: false,
        };
        w.src_step_elem = [1, 4];
        w.src_num_elem = [4, k];
        w.src_idx_start_addr = sbuf_q0(0x100);
        w.dst_start_addr = Addr8::Immediate {
            addr: SBUF + 0x2000,
            shape_reg: false,
        };
        w.dst_step_elem_1 = (STRIDE / 2) as i32;
        w.dst_num_elem = [k, 4];
        w.elem_size = 8;
        w
    }

    #[test]
    fn gather_xpose_transposes_the_indexed_rows() {
        let idx: Vec<u32> = (0..16).map(|k| 15 - k).collect();
        let mut o = index_ops(idx, Vec::new());
        let p = expand(&InstWord::GatherXpose(gxpose(16)), &cfg(0xffff), &mut o).unwrap();
        // 4 columns -> partitions 0..3 -> engine 0.
        let g = &p.engines[0].gathers;
        assert_eq!(g.len(), 4);
        assert_eq!(g[2].dst, SBUF + 2 * STRIDE + 0x2000);
        // Piece k = row idx[k] = 15 - k, element 2: 0x1000_0000 + (15-k)*8 + 4.
        assert_eq!(g[2].tx[0], (0x1000_0000 + 15 * 8 + 4, 2));
        assert_eq!(g[2].tx[15], (0x1000_0000 + 4, 2));
        assert_eq!(g[2].dst_len_bytes, 32);
        // An out-of-bounds index: that tile falls back to single pairs.
        let mut w = gxpose(16);
        w.src_idx_bound_reg = BoundCheckReg::enabled(9); // REG[9] = 10
        let idx: Vec<u32> = (0..16).collect();
        let mut o = index_ops(idx, Vec::new());
        let p = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.index_faults.len(), 6);
        assert!(p.engines[0].gathers.is_empty());
        assert_eq!(p.engines[0].pairs.len(), 4 * 10);
    }

    #[test]
    fn gather_xpose_takes_the_cross_bar_for_whole_tiles() {
        let idx: Vec<u32> = (0..16).map(|k| 15 - k).collect();
        let mut o = index_ops(idx, Vec::new());
        o.xbar = true;
        let p = expand(&InstWord::GatherXpose(gxpose(16)), &cfg(0xffff), &mut o).unwrap();
        let g = &p.engines[0].gathers;
        assert_eq!(g.len(), 1);
        assert_eq!(
            Some(g[0].word1),
            dma_abi::CmeWord::DEFAULT_COPY
                .with_xbar(Dtype::Bfloat16.code())
                .map(dma_abi::CmeWord::raw)
        );
        // Row k = table row idx[k] = 15 - k, whole (8 bytes = 4 bf16).
        assert_eq!(g[0].tx[0], (0x1000_0000 + 15 * 8, 8));
        assert_eq!(g[0].tx[15], (0x1000_0000, 8));
        assert_eq!(g[0].dst, SBUF + 0x2000);
        assert_eq!(g[0].dst_len_bytes, 16 * 8);
        assert_eq!(p.data_pairs(), 0);
    }

    #[test]
    fn gather_xpose_refusals_name_the_field() {
        type Change = fn(&mut GatherXpose);
        let cases: [(Change, &str); 6] = [
            (
                |w| w.idx_num_active_channels = 16,
                "idx_num_active_channels = 16",
            ),
            (|w| w.flags.gather_dim = IndirectDim::X, "gather_dim = X"),
            (|w| w.dtype.dtype_hi = Dtype::Fp32, "BF16 or FP16"),
            (|w| w.elem_size = 7, "elem_size = 7"),
            (|w| w.src_num_elem = [4, 8], "src_num_elem[1] = 8"),
            (|w| w.dst_num_elem = [4, 16], "dst_num_elem [4, 16]"),
        ];
        for (change, msg) in cases {
            let mut w = gxpose(16);
            change(&mut w);
            let mut o = index_ops(vec![0; 16], Vec::new());
            let e = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap_err();
            assert!(e.to_string().contains(msg), "{msg}: {e}");
        }
    }

    #[test]
    fn gather_xpose_bound_limits_ignore_the_neighbouring_register() {
        // The index bound is REG[9] alone (indices are 32-bit); REG[10]
        // non-zero changes nothing.
        let mut w = gxpose(16);
        w.src_idx_bound_reg = BoundCheckReg::enabled(9);
        let mut o = index_ops((0..16).collect(), Vec::new());
        o.regs = vec![(9, 10), (10, 1)];
        let p = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.index_faults.len(), 6);
        assert!(p.index_faults.iter().all(|f| f.bound == 10));
        // The destination bound: REG[11] (32 bits) is below the SBUF, and
        // REG[12] = 0x7F is not its high half: every column is dropped.
        let mut w = gxpose(16);
        w.dst_bound_reg = BoundCheckReg::enabled(11);
        let mut o = index_ops((0..16).collect(), Vec::new());
        o.regs = vec![(11, 0xFFFF_FFFF), (12, 0x7F)];
        let p = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(p.bytes(), 0);
        assert_eq!(p.out_of_bounds.len(), 4);
        assert!(p.out_of_bounds.iter().all(|b| b.limit == 0xFFFF_FFFF));
    }

    #[test]
    fn gather_xpose_refuses_shape_and_indirect_index_modes_with_the_reason() {
        let mut w = gxpose(16);
        w.src_idx_start_addr = Addr4::IndirectImm {
            offset: soc_map::PartitionOffset {
                offset: 0x100,
                quadrant: 0,
                psum: false,
            },
        };
        let mut o = index_ops(vec![0; 16], Vec::new());
        let e = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap_err();
        assert!(matches!(e, crate::plan::PlanError::Unsupported(_)), "{e}");
        assert!(
            e.to_string()
                .contains("GATHER_XPOSE.src_idx_start_addr: ADDR4 marker 0x20"),
            "{e}"
        );
        let mut w = gxpose(16);
        w.src_start_addr = Addr8::Immediate {
            addr: 0x1000_0000,
            shape_reg: true,
        };
        w.src_num_elem = [0, 0];
        let e = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap_err();
        assert!(
            e.to_string()
                .contains("GATHER_XPOSE.src_start_addr: ADDR8 marker 0x40"),
            "{e}"
        );
    }

    #[test]
    fn negative_steps_walk_the_table_backwards() {
        // Element (k, j) from src + idx[k]·s1·2 + j·s0·2 to dst + k·2 +
        // j·d1·2 (docs/firmware.md "GATHER_XPOSE"), with s0 = -1 and
        // s1 = -4: rows counted down from the end of the table, each read
        // backwards.
        let mut w = gxpose(16);
        let base = 0x1000_0000u64 + 0x1000;
        w.src_start_addr = Addr8::Immediate {
            addr: base,
            shape_reg: false,
        };
        w.src_step_elem = [-1, -4];
        let idx: Vec<u32> = (0..16).map(|k| (k * 7) % 16).collect();
        let mut o = index_ops(idx.clone(), Vec::new());
        o.xbar = true; // s0 != 1: gather packets, not the cross-bar
        let p = expand(&InstWord::GatherXpose(w), &cfg(0xffff), &mut o).unwrap();
        let mut got = std::collections::BTreeMap::new();
        for e in &p.engines {
            assert!(e.pairs.is_empty());
            for g in &e.gathers {
                for (n, &(src, len)) in g.tx.iter().enumerate() {
                    assert_eq!(len, 2);
                    got.insert(g.dst + 2 * n as u64, src);
                }
            }
        }
        let mut want = std::collections::BTreeMap::new();
        let d1 = (STRIDE / 2) as i64;
        for (k, &ix) in idx.iter().enumerate() {
            for j in 0..4i64 {
                let from = base as i64 + i64::from(ix) * -4 * 2 + j * -2;
                let to = (SBUF + 0x2000) as i64 + k as i64 * 2 + j * d1 * 2;
                want.insert(to as u64, from as u64);
            }
        }
        assert_eq!(got, want);
    }
}
