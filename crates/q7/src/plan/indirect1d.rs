//! INDIRECT1D (docs/instruction-words.md "INDIRECT1D, 0xbb"): gather,
//! scatter and scatter-reduce through UINT32 index vectors
//! (docs/firmware.md "INDIRECT1D expansion").

use dma_abi::inst::{BoundCheckReg, ComputeOp, Indirect1d, IndirectDim, IndirectMode, InstKind};
use soc_map::{Addr4, Addr4Mode};

use super::operands::{
    Gate, RegOperand, addr4_refusal, check_active_channels, reg64, resolve_addr8, shape_reg_operand,
};
use super::spread::Spread;
use super::transfer::{dtype_elem, transfer};
use super::{IndexOutOfBounds, MAX_INDICES, Operands, Plan, PlanError};
use crate::layout::DgeConfig;

/// The address of an index vector: ADDR4 immediate in SBUF partition 0, or
/// a register pair (docs/references/wiki.md §G.1: "register-sourced or in SBUF partition
/// 0").
fn index_vector_addr(
    field: &'static str,
    a: Addr4,
    ops: &dyn Operands,
) -> Result<(u64, Option<RegOperand>), PlanError> {
    const W: &str = "INDIRECT1D";
    match a {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } => {
            if offset.psum || offset.quadrant != 0 {
                return Err(PlanError::Invalid(format!(
                    "{W}.{field}: index vectors must be in SBUF partition 0 (found {} quadrant {})",
                    if offset.psum { "PSUM" } else { "SBUF" },
                    offset.quadrant
                )));
            }
            let target = offset
                .lane(0)
                .map_err(|e| PlanError::Invalid(format!("{W}.{field}: {e}")))?;
            Ok((ops.partition_addr(target), None))
        }
        Addr4::Register {
            reg,
            mode: Addr4Mode::AddrReg,
        } => {
            let v = reg64(ops, reg, W, field)?;
            Ok((v, Some((field, reg, v))))
        }
        other => Err(addr4_refusal(W, field, other).unwrap_or_else(|| {
            PlanError::Invalid(format!(
                "{W}.{field}: {other:?}: an offset in SBUF partition 0, or a register"
            ))
        })),
    }
}

pub(super) fn expand_indirect1d(
    w: &Indirect1d,
    cfg: &DgeConfig,
    ops: &mut dyn Operands,
    spare: Vec<super::EnginePlan>,
) -> Result<Plan, PlanError> {
    const W: &str = "INDIRECT1D";
    check_active_channels(W, w.idx_num_active_channels)?;
    shape_reg_operand(
        W,
        "src_start_addr",
        w.src_start_addr,
        ("src_num_elem", &[w.src_num_elem]),
        None,
    )?;
    shape_reg_operand(
        W,
        "dst_start_addr",
        w.dst_start_addr,
        ("dst_num_elem", &[w.dst_num_elem]),
        None,
    )?;
    // One element is one row of `elem_size` bytes: with a compute op the
    // CCE works on the dtype's elements inside it.
    let xfer = transfer(
        W,
        w.compute_op,
        (w.in_dtype, dtype_elem(w.in_dtype, w.src_elem_size)),
        (w.out_dtype, dtype_elem(w.out_dtype, w.dst_elem_size)),
    )?;
    if w.compute_op != ComputeOp::None
        && u64::from(w.src_elem_size) / xfer.src_elem != u64::from(w.dst_elem_size) / xfer.dst_elem
    {
        return Err(PlanError::Invalid(format!(
            "{W}: src_elem_size {} and dst_elem_size {} hold different numbers of {:?}/{:?} elements",
            w.src_elem_size, w.dst_elem_size, w.in_dtype, w.out_dtype
        )));
    }
    let mode = w.flags.indirect_mode;
    let (src_indexed, dst_indexed) = match mode {
        IndirectMode::SrcIndirection => (true, false),
        IndirectMode::DstIndirection => (false, true),
        IndirectMode::SrcDstIndirection => (true, true),
    };
    // docs/references/wiki.md §G.1: without a shape register the indirect dim must be X;
    // SRC mode needs scatter_dim 0, DST mode gather_dim 0.
    for (name, dim, used) in [
        ("gather_dim", w.flags.gather_dim, src_indexed),
        ("scatter_dim", w.flags.scatter_dim, dst_indexed),
    ] {
        if dim != IndirectDim::X {
            return Err(PlanError::Invalid(format!(
                "{W}.flags.{name} = {}: {}",
                dim.name(),
                if used {
                    "with an immediate address the indirect dim must be X"
                } else {
                    "must be X (0) for this indirect_mode"
                }
            )));
        }
    }
    // The element count: the leg without an index walks its elements; with
    // both indexed the two counts must agree.
    let count = match mode {
        IndirectMode::SrcIndirection => w.dst_num_elem,
        IndirectMode::DstIndirection => w.src_num_elem,
        IndirectMode::SrcDstIndirection => {
            if w.src_num_elem != w.dst_num_elem {
                return Err(PlanError::Invalid(format!(
                    "{W}: src_num_elem {} and dst_num_elem {} differ (SRC_DST_INDIRECTION)",
                    w.src_num_elem, w.dst_num_elem
                )));
            }
            w.src_num_elem
        }
    };
    if count > MAX_INDICES {
        return Err(PlanError::Invalid(format!(
            "{W}: {count} indices (num_elem); at most {MAX_INDICES} without a shape register"
        )));
    }
    let src_addr = resolve_addr8(W, "src_start_addr", w.src_start_addr, ops)?;
    let dst_addr = resolve_addr8(W, "dst_start_addr", w.dst_start_addr, ops)?;
    let mut regs: Vec<RegOperand> = Vec::new();
    let mut read_leg = |field: &'static str,
                        a: Addr4,
                        used: bool,
                        ops: &mut dyn Operands|
     -> Result<Option<Vec<u32>>, PlanError> {
        if !used {
            return Ok(None);
        }
        let (at, reg) = index_vector_addr(field, a, ops)?;
        regs.extend(reg);
        ops.read_u32s(at, usize::from(count))
            .map(Some)
            .map_err(|m| PlanError::Invalid(format!("{W}.{field}: reading the indices: {m}")))
    };
    let src_idx = read_leg("src_idx_start_addr", w.src_idx_start_addr, src_indexed, ops)?;
    let dst_idx = read_leg("dst_idx_start_addr", w.dst_idx_start_addr, dst_indexed, ops)?;
    let ops: &dyn Operands = ops;
    let bound = |gate: BoundCheckReg| gate.bc_enabled.then(|| ops.reg(gate.bc_reg));
    let (src_bound, dst_bound) = (bound(w.src_idx_bound_reg), bound(w.dst_idx_bound_reg));
    let addr_of = |base: u64, step: i32, k: u64, elem: u16| -> Option<u64> {
        let off = i128::from(k) * i128::from(step) * i128::from(elem);
        u64::try_from(i128::from(base) + off).ok()
    };
    let row_elems = u64::from(w.src_elem_size) / xfer.src_elem;
    let mut spread = Spread::new(W, cfg, w.sem_increment, spare);
    spread.set_extras(xfer.extras());
    let mut index_faults = Vec::new();
    let mut seen_dst: std::collections::BTreeMap<u32, u32> = Default::default();
    let mut duplicates = Vec::new();
    'element: for k in 0..u32::from(count) {
        let mut pos = [u64::from(k); 2];
        for (leg, idx, bound, p) in [
            ("src_idx", &src_idx, src_bound, 0),
            ("dst_idx", &dst_idx, dst_bound, 1),
        ] {
            let Some(v) = idx.as_ref().and_then(|v| v.get(k as usize).copied()) else {
                continue;
            };
            if let Some(b) = bound
                && v >= b
            {
                index_faults.push(IndexOutOfBounds {
                    leg,
                    position: k,
                    index: v,
                    bound: b,
                    is_error: w.flags.idx_bound_is_err,
                });
                continue 'element;
            }
            pos[p] = u64::from(v);
        }
        if let Some(v) = dst_idx.as_ref().and_then(|v| v.get(k as usize).copied())
            && let Some(first) = seen_dst.insert(v, k)
        {
            duplicates.push((first, k, v));
        }
        let overflow = |side: &str| {
            PlanError::Invalid(format!(
                "{W}: the {side} address of element {k} is outside the 64-bit address space"
            ))
        };
        let (s_row, d_row) = (
            addr_of(src_addr.addr, w.src_step_elem, pos[0], w.src_elem_size)
                .ok_or_else(|| overflow("source"))?,
            addr_of(dst_addr.addr, w.dst_step_elem, pos[1], w.dst_elem_size)
                .ok_or_else(|| overflow("destination"))?,
        );
        // Scatter-reduce: every update of one destination row goes to the
        // same engine, whose queue order serialises the read-modify-writes,
        // so duplicates accumulate (docs/references/wiki.md §G.1).
        let pin = (xfer.cce.is_some() && dst_indexed).then_some(pos[1]);
        let mut done = 0u64;
        while done < row_elems.max(1) {
            let n = (row_elems - done).min(xfer.max_elems()).max(1);
            let pair = xfer.pair(
                s_row + done * xfer.src_elem,
                d_row + done * xfer.dst_elem,
                n,
            );
            if let Some(e) = spread.push_pinned(ops, pair, pin)? {
                spread.rows[e] += 1;
            }
            done += n;
        }
    }
    let (engines, out_of_bounds) = spread.finish(
        ops,
        [&src_addr, &dst_addr],
        &regs,
        &[
            ("src_idx_bound_reg", Gate::narrow(w.src_idx_bound_reg)),
            ("dst_idx_bound_reg", Gate::narrow(w.dst_idx_bound_reg)),
        ],
        (src_addr.addr, w.src_elem_size, w.semaphore),
        |rows| {
            [
                ("src", [1, rows], [1, i64::from(w.src_step_elem)]),
                ("dst", [1, rows], [1, i64::from(w.dst_step_elem)]),
            ]
        },
    );
    Ok(Plan {
        kind: InstKind::Indirect1d,
        engines,
        out_of_bounds,
        index_faults,
        duplicate_dst: if w.flags.non_unique_dst_idx {
            Vec::new()
        } else {
            duplicates
        },
        log: Vec::new(),
        ring_now: true,
        elements: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::layout::DgeConfig;
    use crate::plan::test_support::*;
    use crate::plan::{IndexOutOfBounds, MicroOp, expand};
    use dma_abi::inst::{BoundCheckReg, ComputeOp, Dtype, IndirectDim, IndirectMode, InstWord};
    use soc_map::{Addr4, Addr8};

    #[test]
    fn gather_reads_the_indexed_rows_into_consecutive_partitions() {
        let w = indirect(IndirectMode::SrcIndirection, 3);
        let mut o = index_ops(vec![7, 0, 7], Vec::new());
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (0x1000_0000, SBUF + STRIDE),
                (0x1000_0000 + 7 * 64, SBUF),
                (0x1000_0000 + 7 * 64, SBUF + 2 * STRIDE),
            ]
        );
        // Partitions 0..2 are all engine 0's; a repeated source index is fine.
        assert_eq!(p.engines[0].pairs.len(), 3);
        assert!(p.duplicate_dst.is_empty());
    }

    #[test]
    fn scatter_writes_consecutive_sources_to_the_indexed_rows_and_reports_races() {
        let mut w = indirect(IndirectMode::DstIndirection, 3);
        // Scatter from SBUF partitions into an HBM table of 64-byte rows.
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = (STRIDE / 64) as i32;
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.dst_step_elem = 1;
        let mut o = index_ops(Vec::new(), vec![5, 2, 5]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (SBUF, 0x3000_0000 + 5 * 64),
                (SBUF + STRIDE, 0x3000_0000 + 2 * 64),
                (SBUF + 2 * STRIDE, 0x3000_0000 + 5 * 64),
            ]
        );
        assert_eq!(p.duplicate_dst, vec![(0, 2, 5)]);
        w.flags.non_unique_dst_idx = true;
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xffff), &mut o).unwrap();
        assert!(p.duplicate_dst.is_empty());
    }

    #[test]
    fn both_legs_indexed_and_index_bounds() {
        let mut w = indirect(IndirectMode::SrcDstIndirection, 3);
        w.dst_step_elem = 1;
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.src_idx_bound_reg = BoundCheckReg::enabled(9); // indices < REG[9] = 10
        w.flags.idx_bound_is_err = true;
        let mut o = index_ops(vec![1, 12, 3], vec![4, 5, 6]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                (0x1000_0000 + 64, 0x3000_0000 + 4 * 64),
                (0x1000_0000 + 3 * 64, 0x3000_0000 + 6 * 64),
            ]
        );
        assert_eq!(
            p.index_faults,
            vec![IndexOutOfBounds {
                leg: "src_idx",
                position: 1,
                index: 12,
                bound: 10,
                is_error: true,
            }]
        );
    }

    #[test]
    fn indirect_refusals_name_the_field() {
        let mut o = index_ops(vec![0; 8], vec![0; 8]);
        let mut w = indirect(IndirectMode::SrcIndirection, 2);
        w.idx_num_active_channels = 64;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string().contains("idx_num_active_channels = 64"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::SrcIndirection, 4097);
        w.src_num_elem = 2;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("4097 indices"), "{e}");

        let mut w = indirect(IndirectMode::SrcIndirection, 2);
        w.src_idx_start_addr = Addr4::Immediate {
            offset: soc_map::PartitionOffset {
                offset: 0x100,
                quadrant: 1,
                psum: false,
            },
            shape_reg: false,
        };
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string()
                .contains("src_idx_start_addr: index vectors must be in SBUF partition 0"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::DstIndirection, 2);
        w.flags.gather_dim = IndirectDim::Y;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("flags.gather_dim = Y"), "{e}");

        let mut w = indirect(IndirectMode::SrcDstIndirection, 2);
        w.dst_num_elem = 3;
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(
            e.to_string()
                .contains("src_num_elem 2 and dst_num_elem 3 differ"),
            "{e}"
        );

        let mut w = indirect(IndirectMode::DstIndirection, 2);
        w.compute_op = ComputeOp::Multiply; // a CCE FMA now; dtypes left at 0
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("in_dtype = 0x0"), "{e}");
        w.compute_op = ComputeOp::Add; // dtypes left at 0
        let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
        assert!(e.to_string().contains("in_dtype = 0x0"), "{e}");
    }

    #[test]
    fn scatter_add_keeps_every_update_of_a_row_on_one_engine() {
        let mut w = indirect(IndirectMode::DstIndirection, 4);
        w.compute_op = ComputeOp::Add;
        w.flags.non_unique_dst_idx = true;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        w.src_elem_size = 8; // two fp32 per row
        w.dst_elem_size = 8;
        w.src_start_addr = Addr8::Immediate {
            addr: SBUF,
            shape_reg: false,
        };
        w.src_step_elem = (STRIDE / 8) as i32; // row k in partition k
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.dst_step_elem = 1;
        // Rows 0 and 3 both add into bin 5; engines allowed: 0..3.
        let mut o = index_ops(Vec::new(), vec![5, 2, 9, 5]);
        let p = expand(&InstWord::Indirect1d(w), &cfg(0xf), &mut o).unwrap();
        let bin5: Vec<u8> = p
            .engines
            .iter()
            .filter(|e| e.pairs.iter().any(|x| x.dst == 0x3000_0000 + 5 * 8))
            .map(|e| e.slot)
            .collect();
        assert_eq!(bin5, vec![1]); // 5 mod 4: both updates on one engine
        assert_eq!(p.engines[1].pairs.len(), 3); // bins 5, 5 and 9
        assert!(p.duplicate_dst.is_empty());
    }

    #[test]
    fn scatter_add_counts_both_sources_of_every_update_against_the_ring() {
        // 32 FP32 updates into 5 bins on one engine with 64-descriptor
        // rings: each update is a (B, A) packet, 32 x 2 + 1 = 65 M2S
        // descriptors, one more than the ring holds.
        let scatter = |n: u16| {
            let mut w = indirect(IndirectMode::DstIndirection, n);
            w.compute_op = ComputeOp::Add;
            w.flags.non_unique_dst_idx = true;
            w.in_dtype = Dtype::Fp32;
            w.out_dtype = Dtype::Fp32;
            w.src_elem_size = 4;
            w.dst_elem_size = 4;
            w.dst_start_addr = Addr8::Immediate {
                addr: 0x3000_0000,
                shape_reg: false,
            };
            w.dst_step_elem = 1;
            InstWord::Indirect1d(w)
        };
        let ring = DgeConfig {
            carveout_size_descs: 64,
            ..cfg(1)
        };
        let mut o = index_ops(Vec::new(), (0..32).map(|k| k % 5).collect());
        let p = expand(&scatter(31), &ring, &mut o).unwrap();
        assert_eq!(p.engines[0].m2s_descs(), 63);
        let e = expand(&scatter(32), &ring, &mut o).unwrap_err().to_string();
        assert!(
            e.contains("needs 65 M2S descriptors") && e.contains("CARVEOUT_SIZE_DESCS = 64"),
            "{e}"
        );
    }

    #[test]
    fn index_bounds_read_one_register() {
        // indices < REG[9] = 10; REG[10] (non-zero) is not part of it.
        let mut w = indirect(IndirectMode::SrcDstIndirection, 3);
        w.dst_step_elem = 1;
        w.dst_start_addr = Addr8::Immediate {
            addr: 0x3000_0000,
            shape_reg: false,
        };
        w.src_idx_bound_reg = BoundCheckReg::enabled(9);
        w.dst_idx_bound_reg = BoundCheckReg::enabled(9);
        let mut o = index_ops(vec![1, 12, 3], vec![4, 5, 11]);
        o.regs = vec![(9, 10), (10, 1)];
        let p = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap();
        assert_eq!(p.index_faults.len(), 2);
        assert!(p.index_faults.iter().all(|f| f.bound == 10));
        assert_eq!(pairs(&p), vec![(0x1000_0000 + 64, 0x3000_0000 + 4 * 64)]);
        let regwrites: Vec<&MicroOp> = p.engines[0]
            .micro_ops
            .iter()
            .filter(|m| matches!(m, MicroOp::RegWrite { reg: 9, .. }))
            .collect();
        assert_eq!(regwrites.len(), 2);
        assert!(
            regwrites
                .iter()
                .all(|m| matches!(m, MicroOp::RegWrite { value: 10, .. })),
            "{regwrites:?}"
        );
    }

    #[test]
    fn addr4_shape_and_indirect_index_modes_are_refused_with_the_reason() {
        let mut o = index_ops(vec![0; 8], vec![0; 8]);
        let off = soc_map::PartitionOffset {
            offset: 0x100,
            quadrant: 0,
            psum: false,
        };
        let cases = [
            (
                Addr4::Immediate {
                    offset: off,
                    shape_reg: true,
                },
                "ADDR4 marker 0x40",
                "shape register",
            ),
            (
                Addr4::Register {
                    reg: 3,
                    mode: soc_map::Addr4Mode::AddrShapeReg,
                },
                "ADDR4 marker 0xc0",
                "shape register",
            ),
            (
                Addr4::IndirectImm { offset: off },
                "ADDR4 marker 0x20",
                "INDIRECT_IMM",
            ),
            (
                Addr4::Register {
                    reg: 3,
                    mode: soc_map::Addr4Mode::IndirectReg,
                },
                "ADDR4 marker 0xa0",
                "INDIRECT_REG",
            ),
        ];
        for (a, marker, why) in cases {
            let mut w = indirect(IndirectMode::SrcIndirection, 2);
            w.src_idx_start_addr = a;
            let e = expand(&InstWord::Indirect1d(w), &cfg(1), &mut o).unwrap_err();
            assert!(matches!(e, crate::plan::PlanError::Unsupported(_)), "{e}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("INDIRECT1D.src_idx_start_addr: {marker}")) && m.contains(why),
                "{m}"
            );
        }
    }
}
