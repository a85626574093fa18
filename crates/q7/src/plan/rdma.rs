//! RDMA_DESC_GEN (docs/instruction-words.md "RDMA_DESC_GEN, 0xf0 / 8"):
//! the SBUF→SBUF copy to another core, generated now and rung by
//! RDMA_DESC_START (docs/firmware.md "RDMA_DESC_GEN / RDMA_DESC_START").

use dma_abi::inst::{InstKind, RdmaDescGen};
use soc_map::Addr4;

use super::operands::addr4_refusal;
use super::{DescPair, EnginePlan, MicroOp, Operands, Plan, PlanError};
use crate::layout::{DgeConfig, ENGINES_PER_CORE, MAX_DESC_BYTES};

/// RDMA_DESC_GEN (P9.1 §2.6; docs/references/wiki.md §E.2, §E.5): an SBUF→SBUF copy
/// from this core to core `remote_core_id`, the same partition offsets
/// fanned over the active partitions, spread over the `dma_engine_mask`
/// engines in contiguous partition blocks. Each masked engine then adds 1
/// to the peer's `remote_sem` (destination ready: +n engines in all), and
/// every one of the core's 16 engines adds 1 to the local `local_sem`
/// (triggering done: +16). The descriptors wait for RDMA_DESC_START.
pub(super) fn expand_rdma_gen(
    w: &RdmaDescGen,
    cfg: &DgeConfig,
    ops: &dyn Operands,
) -> Result<Plan, PlanError> {
    const W: &str = "RDMA_DESC_GEN";
    if w.is_bidirectional != 0 {
        return Err(PlanError::Invalid(format!(
            "{W}.is_bidirectional = {}: not supported by the firmware",
            w.is_bidirectional
        )));
    }
    if w.remote_routing_id.0 != 0 {
        return Err(PlanError::Unsupported(format!(
            "{W}.remote_routing_id = {:#x}: routing to another die or chip (peers on this device use 0)",
            w.remote_routing_id.0
        )));
    }
    let mask = w.dma_engine_mask.0;
    if mask > 0xffff || !matches!(mask.count_ones(), 1 | 2 | 4 | 8 | 16) {
        return Err(PlanError::Invalid(format!(
            "{W}.dma_engine_mask = {mask:#x}: a 16-bit mask of 1, 2, 4, 8 or 16 engines"
        )));
    }
    let peer = ops.peer(w.remote_core_id.0).ok_or_else(|| {
        PlanError::Invalid(format!(
            "{W}.remote_core_id = {}: no such core on this device",
            w.remote_core_id.0
        ))
    })?;
    let offset = |field: &'static str, a: Addr4| match a {
        Addr4::Immediate {
            offset,
            shape_reg: false,
        } => Ok(offset),
        other => Err(addr4_refusal(W, field, other).unwrap_or_else(|| {
            PlanError::Unsupported(format!(
                "{W}.{field}: {other:?} (only a partition-offset immediate)"
            ))
        })),
    };
    let src = offset("src_addr", w.src_addr)?;
    let dst = offset("dst_addr", w.dst_addr)?;
    let parts = match w.completion_info.num_active_ports {
        0 => 128u32,
        n => 16 * u32::from(n),
    };
    let slots: Vec<u8> = (0..16u8).filter(|i| mask & (1 << i) != 0).collect();
    let n = slots.len() as u32;
    let mut engines: Vec<EnginePlan> = (0..ENGINES_PER_CORE as u8).map(EnginePlan::empty).collect();
    let cap = usize::from(cfg.carveout_size_descs);
    let free = u64::from(w.free_dim_bytes);
    for lane in 0..parts {
        let lane_err = |field: &str, e: soc_map::Addr4Error| {
            PlanError::Invalid(format!("{W}.{field}: partition lane {lane}: {e}"))
        };
        let s_t = src.lane(lane).map_err(|e| lane_err("src_addr", e))?;
        let d_t = dst.lane(lane).map_err(|e| lane_err("dst_addr", e))?;
        let (s_addr, d_addr) = (ops.partition_addr(s_t), peer.partition_addr(d_t));
        let slot = slots[(lane * n / parts) as usize];
        let ep = &mut engines[usize::from(slot)];
        let mut off = 0u64;
        while off < free {
            let len = (free - off).min(MAX_DESC_BYTES);
            ep.pairs
                .push(DescPair::copy(s_addr + off, d_addr + off, len as u32));
            ep.bytes += len;
            off += len;
        }
    }
    for ep in &mut engines {
        let engine = u16::from(ep.slot);
        if slots.contains(&ep.slot) {
            ep.sem_writes.push((peer.sem_inc(w.remote_sem), 1));
            ep.micro_ops.push(MicroOp::Generate {
                engine,
                what: "RD",
                addr: ep.pairs.first().map_or(0, |p| p.src),
                elem_size: 1,
                sem_num: w.remote_sem,
            });
            ep.micro_ops.push(MicroOp::DimPush {
                engine,
                side: "src",
                sizes: [w.free_dim_bytes, parts / n],
                steps: [1, 0],
            });
        }
        ep.sem_writes.push((ops.sem_inc_addr(w.local_sem), 1));
        if ep.pairs.len() + ep.sem_writes.len() > cap {
            return Err(PlanError::Invalid(format!(
                "{W}: engine slot {} needs {} descriptors per ring (MEMCOPY_CARVEOUT_CFG.CARVEOUT_SIZE_DESCS = {cap})",
                ep.slot,
                ep.pairs.len() + ep.sem_writes.len()
            )));
        }
    }
    Ok(Plan {
        kind: InstKind::RdmaDescGen,
        engines,
        out_of_bounds: Vec::new(),
        index_faults: Vec::new(),
        duplicate_dst: Vec::new(),
        log: Vec::new(),
        ring_now: false,
        elements: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::test_support::*;
    use crate::plan::{PlanError, expand};
    use dma_abi::inst::{InstKind, InstWord, RdmaDescGen};

    fn rdma(mask: u32, free: u32) -> RdmaDescGen {
        let InstWord::RdmaDescGen(mut w) = InstWord::default_of(InstKind::RdmaDescGen) else {
            unreachable!()
        };
        w.local_sem = 2;
        w.remote_sem = 1;
        w.remote_core_id = dma_abi::inst::ImmVal(3);
        w.dma_engine_mask = dma_abi::inst::ImmVal(mask);
        let at = sbuf_q0;
        w.src_addr = at(0x100);
        w.dst_addr = at(0x200);
        w.free_dim_bytes = free;
        w
    }

    #[test]
    fn rdma_gen_fans_all_partitions_over_the_masked_engines() {
        let w = rdma(0x000f, 100);
        let p = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap();
        assert!(!p.ring_now);
        // 4 engines, 32 partitions each; every one of the 16 engines
        // writes the local semaphore, the 4 masked ones the remote one too.
        assert_eq!(p.engines.len(), 16);
        let peer_sbuf = 0x100_0000_0000 + 3 * 0x10_0000_0000u64;
        for ep in &p.engines {
            let k = u64::from(ep.slot);
            if ep.slot < 4 {
                assert_eq!(ep.pairs.len(), 32);
                assert_eq!(ep.pairs[0].src, SBUF + 32 * k * STRIDE + 0x100);
                assert_eq!(ep.pairs[0].dst, peer_sbuf + 32 * k * STRIDE + 0x200);
                assert_eq!(ep.pairs[0].len_bytes, 100);
                assert_eq!(
                    ep.sem_writes,
                    vec![
                        (0x200_0000_0000 + 3 * 0x1000 + 4, 1),
                        (0x28_0270_1800 + 8, 1)
                    ]
                );
            } else {
                assert!(ep.pairs.is_empty());
                assert_eq!(ep.sem_writes, vec![(0x28_0270_1800 + 8, 1)]);
            }
        }
        assert_eq!(p.bytes(), 128 * 100);
        assert_eq!(p.descriptors(), 2 * (128 + 4 + 16));
    }

    #[test]
    fn rdma_gen_refusals_name_the_field() {
        for (mask, ok) in [
            (0x0003, true),
            (0x0007, false),
            (0x1_0000, false),
            (0, false),
        ] {
            let r = expand(
                &InstWord::RdmaDescGen(rdma(mask, 64)),
                &cfg(0xffff),
                &mut ops(),
            );
            assert_eq!(r.is_ok(), ok, "mask {mask:#x}: {r:?}");
            if let Err(e) = r {
                assert!(e.to_string().contains("dma_engine_mask"), "{e}");
            }
        }
        let mut w = rdma(0xffff, 64);
        w.remote_core_id = dma_abi::inst::ImmVal(8);
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("remote_core_id = 8"), "{e}");
        let mut w = rdma(0xffff, 64);
        w.is_bidirectional = 1;
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("is_bidirectional = 1"), "{e}");
        let mut w = rdma(0xffff, 64);
        w.remote_routing_id = dma_abi::inst::ImmVal(0x12);
        let e = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap_err();
        assert!(matches!(e, PlanError::Unsupported(_)), "{e}");
        // Two ports = 32 partitions only.
        let mut w = rdma(0x0001, 64);
        w.completion_info.num_active_ports = 2;
        let p = expand(&InstWord::RdmaDescGen(w), &cfg(0xffff), &mut ops()).unwrap();
        assert_eq!(p.data_pairs(), 32);
    }

    #[test]
    fn free_dim_bytes_zero_is_a_semaphore_only_transfer() {
        // docs/references/wiki.md §E.6: no data descriptors; the masked engines still
        // add 1 to the peer's remote_sem and all 16 to local_sem.
        let p = expand(
            &InstWord::RdmaDescGen(rdma(0x0003, 0)),
            &cfg(0xffff),
            &mut ops(),
        )
        .unwrap();
        assert_eq!(p.data_pairs(), 0);
        assert_eq!(p.bytes(), 0);
        let remote: usize = p.engines.iter().filter(|e| e.sem_writes.len() == 2).count();
        assert_eq!(remote, 2);
        assert_eq!(p.descriptors(), 2 * (2 + 16));
    }
}
