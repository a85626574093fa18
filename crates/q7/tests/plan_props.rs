//! Property: whatever the shapes, steps, element size and engine mask, the
//! descriptor pairs of a DIRECT2D expansion move exactly the elements the
//! word names, each from its source address to its destination address
//! (P9.1 §2.2), in pieces of at most 64 KiB.
#![allow(clippy::unwrap_used)]

use dma_abi::inst::{ComputeOp, Dtype, InstKind, InstWord};
use proptest::prelude::*;
use q7::{DgeConfig, EnginePlan, MicroOp, Operands, expand, expand_reusing};
use soc_map::Addr8;

struct NoOps;

impl Operands for NoOps {
    fn reg(&self, _: u8) -> u32 {
        0
    }
    fn table_entry(&self, _: u8) -> u64 {
        0
    }
    fn partition_of(&self, addr: u64) -> Option<u16> {
        // Pretend 4 KiB "partitions" so the engine choice varies.
        Some(((addr >> 12) & 127) as u16)
    }
    fn partition_addr(&self, _: soc_map::PartitionTarget) -> u64 {
        0
    }
    fn read_u32s(&mut self, _: u64, _: usize) -> Result<Vec<u32>, String> {
        Err("no memory".into())
    }
    fn sem_inc_addr(&self, idx: u8) -> u64 {
        0x1800 + 4 * u64::from(idx)
    }
    fn peer(&self, _: u32) -> Option<q7::PeerLayout> {
        None
    }
}

fn element_addr(base: u64, steps: [i32; 2], nums: [u16; 2], elem: u64, i: u64) -> u64 {
    let x = (i % u64::from(nums[0])) as i64;
    let y = (i / u64::from(nums[0])) as i64;
    (base as i64 + (x * i64::from(steps[0]) + y * i64::from(steps[1])) * elem as i64) as u64
}

proptest! {
    #[test]
    fn pairs_cover_exactly_the_named_elements(
        sn in (1u16..7, 1u16..7),
        dst_shape in 0usize..3,
        ss in (-3i32..4, -40i32..40),
        ds in (-3i32..4, -40i32..40),
        elem in prop::sample::select(vec![1u16, 2, 4, 8]),
        mask in 1u16..,
    ) {
        let sn = [sn.0, sn.1];
        let total = u64::from(sn[0]) * u64::from(sn[1]);
        let dn = match dst_shape {
            0 => sn,
            1 => [sn[1], sn[0]],
            _ => [total as u16, 1],
        };
        let (src_base, dst_base) = (1u64 << 32, 1u64 << 36);
        let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
            unreachable!()
        };
        w.src_start_addr = Addr8::Immediate { addr: src_base, shape_reg: false };
        w.dst_start_addr = Addr8::Immediate { addr: dst_base, shape_reg: false };
        w.src_step_elem = [ss.0, ss.1];
        w.dst_step_elem = [ds.0, ds.1];
        w.src_num_elem = sn;
        w.dst_num_elem = dn;
        w.src_elem_size = elem;
        w.dst_elem_size = elem;
        let cfg = DgeConfig {
            carveout_offset_descs: 0,
            carveout_size_descs: 4096,
            engine_mask: mask,
            queue_mask: 1,
        };
        let plan = expand(&InstWord::Direct2d(w), &cfg, &mut NoOps).unwrap();
        prop_assert_eq!(plan.engines.len(), mask.count_ones() as usize);
        let e = u64::from(elem);
        let mut got = Vec::new();
        for ep in &plan.engines {
            for p in &ep.pairs {
                prop_assert!(p.len_bytes >= 1 && p.len_bytes <= 65536);
                prop_assert_eq!(u64::from(p.len_bytes) % e, 0);
                for k in 0..u64::from(p.len_bytes) / e {
                    got.push((p.src + k * e, p.dst + k * e));
                }
            }
        }
        let mut want: Vec<(u64, u64)> = (0..total)
            .map(|i| {
                (
                    element_addr(src_base, w.src_step_elem, sn, e, i),
                    element_addr(dst_base, w.dst_step_elem, dn, e, i),
                )
            })
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(got, want);
        prop_assert_eq!(plan.bytes(), total * e);
    }
}

proptest! {
    /// The ring cap counts what the firmware writes (docs/firmware.md
    /// "Refusals"): a one-engine DIRECT2D of `n` FP32 elements with a
    /// compute op needs, per packet, 1 M2S descriptor for a plain copy, 2
    /// for ADD/MAX/MIN (B, then A) and 3 for MULTIPLY (B, the FMA meta
    /// descriptor, A), and 1 S2M descriptor; plus one semaphore write in
    /// each direction. The word is refused exactly when that exceeds the
    /// ring, and a plan never holds more than the ring.
    #[test]
    fn a_share_never_exceeds_its_ring(
        n in 1u16..200,
        op in prop::sample::select(vec![
            ComputeOp::None,
            ComputeOp::Add,
            ComputeOp::Multiply,
            ComputeOp::Max,
            ComputeOp::Min,
        ]),
        contiguous in any::<bool>(),
        ring in 2u16..160,
    ) {
        let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
            unreachable!()
        };
        w.src_start_addr = Addr8::Immediate { addr: 1 << 32, shape_reg: false };
        w.dst_start_addr = Addr8::Immediate { addr: 1 << 36, shape_reg: false };
        // Source step 2: one packet per element; step 1: one packet.
        w.src_step_elem = [if contiguous { 1 } else { 2 }, 0];
        w.dst_step_elem = [1, 0];
        w.src_num_elem = [n, 1];
        w.dst_num_elem = [n, 1];
        w.src_elem_size = 4;
        w.dst_elem_size = 4;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        w.compute_op = op;
        let cfg = DgeConfig {
            carveout_offset_descs: 0,
            carveout_size_descs: ring,
            engine_mask: 1,
            queue_mask: 1,
        };
        let packets = if contiguous { 1 } else { u64::from(n) };
        let per_packet = match op {
            ComputeOp::None => 1,
            ComputeOp::Multiply => 3,
            _ => 2,
        };
        let m2s = packets * per_packet + 1;
        let s2m = packets + 1;
        let fits = m2s.max(s2m) <= u64::from(ring);
        match expand(&InstWord::Direct2d(w), &cfg, &mut NoOps) {
            Ok(plan) => {
                prop_assert!(fits, "accepted {m2s} M2S descriptors on a {ring}-descriptor ring");
                let e = &plan.engines[0];
                prop_assert_eq!(e.m2s_descs(), m2s);
                prop_assert_eq!(e.s2m_descs(), s2m);
            }
            Err(e) => {
                prop_assert!(!fits, "refused a share of {m2s} on {ring}: {e}");
                let msg = e.to_string();
                prop_assert!(msg.contains(&format!("CARVEOUT_SIZE_DESCS = {ring}")), "{msg}");
            }
        }
    }
}

/// A DIRECT2D of `n` FP32 elements, source step `step`, under compute op
/// `op`.
fn direct2d(n: u16, step: i32, op: ComputeOp, base: u64) -> InstWord {
    let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
        unreachable!()
    };
    w.src_start_addr = Addr8::Immediate {
        addr: base,
        shape_reg: false,
    };
    w.dst_start_addr = Addr8::Immediate {
        addr: base << 4,
        shape_reg: false,
    };
    w.src_step_elem = [step, 0];
    w.dst_step_elem = [1, 0];
    w.src_num_elem = [n, 1];
    w.dst_num_elem = [n, 1];
    w.src_elem_size = 4;
    w.dst_elem_size = 4;
    w.in_dtype = Dtype::Fp32;
    w.out_dtype = Dtype::Fp32;
    w.compute_op = op;
    InstWord::Direct2d(w)
}

fn dge(mask: u16) -> DgeConfig {
    DgeConfig {
        carveout_offset_descs: 0,
        carveout_size_descs: 4096,
        engine_mask: mask,
        queue_mask: 1,
    }
}

proptest! {
    /// A word expanded in an earlier plan's engine shares (the firmware
    /// reuses their room word after word) gives the plan a fresh
    /// expansion gives, whatever the earlier plan held: other engines,
    /// more or fewer of them, compute packets, gathers, micro-ops.
    #[test]
    fn expanding_in_a_spare_plan_equals_a_fresh_expansion(
        earlier in (1u16..300, 1i32..3, 1u16.., 1u64..1 << 28),
        later in (1u16..300, 1i32..3, 1u16.., 1u64..1 << 28),
        ops in (0usize..5, 0usize..5),
        junk in prop::collection::vec((0u8..16, 1u32..64), 0..20),
    ) {
        let op = |k: usize| {
            [ComputeOp::None, ComputeOp::Add, ComputeOp::Multiply, ComputeOp::Max, ComputeOp::Min][k]
        };
        let first = expand(&direct2d(earlier.0, earlier.1, op(ops.0), earlier.3), &dge(earlier.2), &mut NoOps);
        let mut spare = first.map(|p| p.engines).unwrap_or_default();
        // Whatever else a share may hold.
        for (k, &(slot, len)) in junk.iter().enumerate() {
            let mut ep = EnginePlan::empty(slot);
            ep.bytes = u64::from(len);
            ep.sem_writes.push((u64::from(len), slot));
            ep.micro_ops.push(MicroOp::RegWrite { engine: 0, operand: "x", reg: slot, value: 1 });
            ep.gathers.push(q7::plan::GatherPacket { tx: vec![(1, len)], dst: 2, dst_len_bytes: len, word1: 0 });
            match spare.get_mut(k) {
                Some(s) => s.gathers.extend(ep.gathers),
                None => spare.push(ep),
            }
        }
        let word = direct2d(later.0, later.1, op(ops.1), later.3);
        let fresh = expand(&word, &dge(later.2), &mut NoOps);
        let reused = expand_reusing(&word, &dge(later.2), &mut NoOps, spare);
        prop_assert_eq!(reused, fresh);
    }
}

/// [`NoOps`]' partitions, with one in 32 Ki "memory" regions (bit 35 set)
/// outside every partition, and, where `spans`, the 512 KiB span around
/// each address ([`Operands::partition_span`]): its 4 KiB partitions, or
/// none.
struct SpanOps {
    spans: bool,
    micro_ops: bool,
}

impl SpanOps {
    const SPAN: u64 = 1 << 19;
}

impl Operands for SpanOps {
    fn reg(&self, _: u8) -> u32 {
        0
    }
    fn table_entry(&self, _: u8) -> u64 {
        0
    }
    fn partition_of(&self, addr: u64) -> Option<u16> {
        (addr & (1 << 35) == 0).then_some(((addr >> 12) & 127) as u16)
    }
    fn partition_span(&self, addr: u64) -> (Option<u16>, Option<q7::PartitionSpan>) {
        let span = self.spans.then_some(q7::PartitionSpan {
            base: addr & !(Self::SPAN - 1),
            len: Self::SPAN,
            stride: if addr & (1 << 35) == 0 { 4096 } else { 0 },
        });
        (self.partition_of(addr), span)
    }
    fn micro_ops(&self) -> bool {
        self.micro_ops
    }
    fn partition_addr(&self, _: soc_map::PartitionTarget) -> u64 {
        0
    }
    fn read_u32s(&mut self, _: u64, _: usize) -> Result<Vec<u32>, String> {
        Err("no memory".into())
    }
    fn sem_inc_addr(&self, idx: u8) -> u64 {
        0x1800 + 4 * u64::from(idx)
    }
    fn peer(&self, _: u32) -> Option<q7::PeerLayout> {
        None
    }
}

proptest! {
    /// Engines found from the partition spans the operands give (one
    /// question per span, not per pair) are the engines asking per pair
    /// finds: the same plan, whether the runs stay in one span or cross
    /// several, partitioned or not, on either side.
    #[test]
    fn partitions_from_spans_equal_partitions_asked_per_pair(
        sn in (1u16..40, 1u16..20),
        ss in (-3i32..4, prop_oneof![prop::sample::select(vec![4096, -4096, 65536]), -30000i32..30000]),
        ds in (-3i32..4, prop_oneof![prop::sample::select(vec![4096, -4096, 65536]), -30000i32..30000]),
        elem in prop::sample::select(vec![1u16, 2, 4, 8]),
        blocks in (0u64..1 << 18, 0u64..1 << 18),
        offs in (0u64..4, 0u64..4),
        mask in 1u16..,
    ) {
        // Starts on a span's first byte, or just before its end: rows land
        // on span edges.
        let at = |block: u64, k: u64| {
            block * SpanOps::SPAN + [0, SpanOps::SPAN - 4096, SpanOps::SPAN - 8, 12345][k as usize]
        };
        let bases = (at(blocks.0, offs.0), at(blocks.1, offs.1));
        let InstWord::Direct2d(mut w) = InstWord::default_of(InstKind::Direct2d) else {
            unreachable!()
        };
        w.src_start_addr = Addr8::Immediate { addr: bases.0, shape_reg: false };
        w.dst_start_addr = Addr8::Immediate { addr: bases.1, shape_reg: false };
        w.src_step_elem = [ss.0, ss.1];
        w.dst_step_elem = [ds.0, ds.1];
        w.src_num_elem = [sn.0, sn.1];
        w.dst_num_elem = [sn.0, sn.1];
        w.src_elem_size = elem;
        w.dst_elem_size = elem;
        let word = InstWord::Direct2d(w);
        let asked = expand(&word, &dge(mask), &mut SpanOps { spans: false, micro_ops: true });
        let spanned = expand(&word, &dge(mask), &mut SpanOps { spans: true, micro_ops: true });
        prop_assert_eq!(&spanned, &asked);
        // Without micro-ops: the same plan, its micro-op lists empty.
        let unlisted = expand(&word, &dge(mask), &mut SpanOps { spans: true, micro_ops: false });
        let listed = asked.map(|mut p| {
            for ep in &mut p.engines {
                ep.micro_ops.clear();
            }
            p
        });
        prop_assert_eq!(unlisted, listed);
    }
}
