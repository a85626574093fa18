//! The CCE transfer of a word: plain copy, dtype conversion or
//! `B = op(A, B)` (docs/firmware.md "Compute ops and dtypes").

use dma_abi::inst::{ComputeOp, Dtype};

use super::{DescPair, PairExtras, PlanError};
use crate::layout::MAX_DESC_BYTES;

/// How the elements of a word move: a plain copy, or the CCE path
/// (`B = op(A, B)`, converting through f32; docs/cme.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Transfer {
    pub(super) src_elem: u64,
    pub(super) dst_elem: u64,
    /// The CCE word1 of the source A, when computing or converting.
    pub(super) cce: Option<u32>,
    /// The CCE word1 that reads B (in the output dtype) as the first
    /// source of `B op= A`; `None` for a pure conversion.
    pub(super) acc: Option<u32>,
    /// The FMA meta descriptor before A (MULTIPLY).
    pub(super) meta: Option<(u64, u32)>,
}

impl Transfer {
    /// Elements one descriptor pair may carry.
    pub(super) fn max_elems(&self) -> u64 {
        let by_len = (MAX_DESC_BYTES / self.src_elem).min(MAX_DESC_BYTES / self.dst_elem);
        if self.cce.is_some() {
            by_len.min(cme::CCE_MAX_ELEMENTS_V3 as u64)
        } else {
            by_len
        }
    }

    /// The pair of `n` elements from `src` to `dst`; its packet's other
    /// M2S descriptors are [`Transfer::extras`].
    #[inline(always)]
    pub(super) fn pair(&self, src: u64, dst: u64, n: u64) -> DescPair {
        DescPair {
            src,
            dst,
            len_bytes: (n * self.src_elem) as u32,
            dst_len_bytes: (n * self.dst_elem) as u32,
            word1: self.cce.unwrap_or(dma_abi::DEFAULT_COPY_WORD1),
        }
    }

    /// What every packet adds before its data: the accumulate source
    /// (`B op= A`) and the FMA meta descriptor.
    pub(super) fn extras(&self) -> PairExtras {
        PairExtras {
            acc: self.acc,
            meta: self.meta,
        }
    }
}

/// The transfer a word's `compute_op`, dtypes and element sizes ask for.
/// Same dtype and element size without a compute op: a plain copy. A
/// dtype conversion (compute_op NONE): a one-source CCE ADD packet, which
/// loads the accumulator and converts it on the way out. ADD, MAX and MIN:
/// a two-source CCE packet (B, then A) written back to B (docs/references/wiki.md §F.3).
/// CCE element sizes must be the dtype sizes. MULTIPLY has no CCE encoding
/// (no multiply in SDMA_CCETYPE; docs/references/wiki.md §F.3 "mapping NOT given") and
/// is refused.
pub(super) fn transfer(
    word: &str,
    compute_op: ComputeOp,
    (in_dtype, src_elem): (Dtype, u16),
    (out_dtype, dst_elem): (Dtype, u16),
) -> Result<Transfer, PlanError> {
    if src_elem == 0 || dst_elem == 0 {
        return Err(PlanError::Invalid(format!(
            "{word}: src_elem_size = {src_elem}, dst_elem_size = {dst_elem}: elements must have a size"
        )));
    }
    let cce_type = match compute_op {
        ComputeOp::None => None,
        ComputeOp::Add => Some(dma_abi::CceType::Add),
        ComputeOp::Max => Some(dma_abi::CceType::Max),
        ComputeOp::Min => Some(dma_abi::CceType::Min),
        // No CCE multiply: an FMA whose meta descriptor selects
        // a = stored, b = input, c = scale with scale 0 (docs/references/wiki.md §F.2,
        // §F.3 operand selectors; the ISA→CCE mapping itself is not
        // published — docs/firmware.md).
        ComputeOp::Multiply => Some(dma_abi::CceType::Fma),
    };
    let converts = src_elem != dst_elem || in_dtype != out_dtype;
    let (t, two_sources) = match cce_type {
        Some(t) => (t, true),
        None if converts => (dma_abi::CceType::Add, false),
        None => {
            return Ok(Transfer {
                src_elem: u64::from(src_elem),
                dst_elem: u64::from(dst_elem),
                cce: None,
                acc: None,
                meta: None,
            });
        }
    };
    let size = |field: &str, d: Dtype, elem: u16| -> Result<(), PlanError> {
        match cme::Dtype::from_code(d.code()) {
            Some(c) if c.size_bytes() == usize::from(elem) => Ok(()),
            Some(c) => Err(PlanError::Invalid(format!(
                "{word}.{field} = {d:?} is {} bytes but the element size is {elem}",
                c.size_bytes()
            ))),
            None => Err(PlanError::Invalid(format!(
                "{word}.{field} = {:#x}: not a dtype the CCE computes in",
                d.code()
            ))),
        }
    };
    size("in_dtype", in_dtype, src_elem)?;
    size("out_dtype", out_dtype, dst_elem)?;
    let encode = |a: Dtype, b: Dtype| {
        dma_abi::CmeWord::DEFAULT_COPY
            .with_cce(t, a.code(), b.code())
            .map(dma_abi::CmeWord::raw)
            .ok_or_else(|| {
                PlanError::Unsupported(format!(
                    "{word}: dtype codes {:#x}/{:#x} do not fit the CCE's 4-bit fields",
                    a.code(),
                    b.code()
                ))
            })
    };
    Ok(Transfer {
        src_elem: u64::from(src_elem),
        dst_elem: u64::from(dst_elem),
        cce: Some(encode(in_dtype, out_dtype)?),
        acc: if two_sources {
            Some(encode(out_dtype, out_dtype)?)
        } else {
            None
        },
        meta: (compute_op == ComputeOp::Multiply).then(|| multiply_meta(in_dtype)),
    })
}

/// The FMA meta descriptor of MULTIPLY: meta1 (W2) selects a = stored
/// buffer (0), b = input (1), c = scale (2) in bits 25:24 / 27:26 / 29:28;
/// meta2 (W3) is the scale −0.0 (`cme::MULTIPLY_FMA_SCALE`: an exact zero
/// product keeps its sign); meta_ctrl is the FMA packer of docs/references/wiki.md
/// §F.2 (`in_dt << 8 | scale_dt << 12 | accum_dt << 16 | 0x2100000`, FP32
/// scale and accumulator).
fn multiply_meta(in_dtype: Dtype) -> (u64, u32) {
    let w2 = (cme::FmaOperand::Stored.bits() << 24)
        | (cme::FmaOperand::Input.bits() << 26)
        | (cme::FmaOperand::Scale.bits() << 28);
    let w3 = cme::MULTIPLY_FMA_SCALE.to_bits();
    let fp32 = u32::from(Dtype::Fp32.code());
    let ctrl = (u32::from(in_dtype.code() & 0xF) << 8) | (fp32 << 12) | (fp32 << 16) | 0x210_0000;
    (u64::from(w2) | (u64::from(w3) << 32), ctrl)
}

/// The CCE element size of `d` when it is a known dtype, else the row size
/// itself (a plain copy moves rows as opaque bytes).
pub(super) fn dtype_elem(d: Dtype, row: u16) -> u16 {
    cme::Dtype::from_code(d.code())
        .map_or(row, |c| c.size_bytes() as u16)
        .min(row.max(1))
}

#[cfg(test)]
mod tests {
    use crate::layout::DgeConfig;
    use crate::plan::test_support::*;
    use crate::plan::{DescPair, PairExtras, expand};
    use dma_abi::inst::{ComputeOp, Dtype, InstWord};

    #[test]
    fn dtype_conversion_is_a_one_source_cce_packet() {
        let InstWord::Direct2d(mut w) = word(0x1000, [1, 16], [16, 1], 0x9000, [1, 16], [16, 1], 2)
        else {
            unreachable!()
        };
        w.in_dtype = Dtype::Bfloat16;
        w.out_dtype = Dtype::Fp32;
        w.dst_elem_size = 4;
        w.compute_op = ComputeOp::None;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let pairs: Vec<(&DescPair, PairExtras)> = plan
            .engines
            .iter()
            .flat_map(|e| e.pairs.iter().map(|p| (p, e.extras)))
            .collect();
        assert!(!pairs.is_empty());
        for (p, x) in &pairs {
            assert_eq!(x.acc, None, "a conversion reads only A");
            assert_eq!(p.dst_len_bytes, 2 * p.len_bytes, "bf16 in, fp32 out");
            let c = dma_abi::CmeWord::from_raw(p.word1);
            assert_eq!(c.cce_type(), Some(dma_abi::CceType::Add));
            assert_eq!(p.sources(x).len(), 1);
        }
        // ADD is B op= A: B (in the output dtype) first, then A.
        w.compute_op = ComputeOp::Add;
        w.in_dtype = Dtype::Fp32;
        w.src_elem_size = 4;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let e = plan.engines.iter().find(|e| !e.pairs.is_empty()).unwrap();
        let (p, x) = (e.pairs[0], e.extras);
        let b = p.sources(&x)[0];
        assert_eq!((b.addr, b.len_bytes), (p.dst, p.dst_len_bytes));
        assert_eq!(Some(b.word1), x.acc);
        let b = dma_abi::CmeWord::from_raw(b.word1);
        assert_eq!(b.cce_type(), Some(dma_abi::CceType::Add));
        assert_eq!(p.sources(&x)[0].addr, p.dst);
        assert_eq!(p.sources(&x)[1].addr, p.src);
        assert_eq!(x.meta, None);
        // MULTIPLY: B, then the FMA meta descriptor (a = stored, b = input,
        // c = scale, scale −0.0: acc × A + (−0)), then A.
        w.compute_op = ComputeOp::Multiply;
        let plan = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let e = plan.engines.iter().find(|e| !e.pairs.is_empty()).unwrap();
        let src = e.pairs[0].sources(&e.extras);
        let p = e.pairs[0];
        assert_eq!(src.len(), 3);
        assert_eq!((src[0].addr, src[0].meta), (p.dst, false));
        assert!(src[1].meta);
        assert_eq!(src[1].len_bytes, 0);
        assert_eq!(
            src[1].addr & 0xFFFF_FFFF,
            (1 << 26) | (2 << 28),
            "selectors"
        );
        assert_eq!(
            src[1].addr >> 32,
            u64::from((-0.0f32).to_bits()),
            "scale -0.0"
        );
        assert_eq!(src[1].word1 & 0x0FF0_0000, 0x0210_0000, "FMA meta_ctrl");
        assert_eq!((src[2].addr, src[2].meta), (p.src, false));
        let a = dma_abi::CmeWord::from_raw(src[2].word1);
        assert_eq!(a.cce_type(), Some(dma_abi::CceType::Fma));
    }

    #[test]
    fn compute_ops_go_through_the_cce_with_dtype_sizes() {
        // DIRECT2D ADD of 3000 fp32 into bf16: CCE word1, 2048-element cap,
        // 4-byte reads and 2-byte writes.
        let InstWord::Direct2d(mut w) = word(
            0x1000_0000,
            [1, 3000],
            [3000, 1],
            0x2000_0000,
            [1, 3000],
            [3000, 1],
            4,
        ) else {
            unreachable!()
        };
        w.compute_op = ComputeOp::Add;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Bfloat16;
        w.dst_elem_size = 2;
        let p = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap();
        let pairs = &p.engines[0].pairs;
        assert_eq!(pairs.len(), 2);
        assert_eq!((pairs[0].len_bytes, pairs[0].dst_len_bytes), (8192, 4096));
        assert_eq!(
            (pairs[1].len_bytes, pairs[1].dst_len_bytes),
            (952 * 4, 952 * 2)
        );
        assert_eq!(pairs[1].src, 0x1000_0000 + 8192);
        assert_eq!(pairs[1].dst, 0x2000_0000 + 4096);
        let cce = dma_abi::CmeWord::from_raw(pairs[0].word1);
        assert_eq!(cce.op(), dma_abi::SdmaOp::Cce);
        assert_eq!(cce.cce_type(), Some(dma_abi::CceType::Add));
        assert_eq!((pairs[0].word1 >> 8) & 0xFF, 0x6A); // in fp32 0xA, out bf16 0x6
        // Element size must be the dtype size.
        w.dst_elem_size = 4;
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(
            e.to_string()
                .contains("out_dtype = Bfloat16 is 2 bytes but the element size is 4"),
            "{e}"
        );
        // MULTIPLY goes through the CCE too (an FMA): the same size rule.
        w.compute_op = ComputeOp::Multiply;
        let e = expand(&InstWord::Direct2d(w), &cfg(1), &mut ops()).unwrap_err();
        assert!(e.to_string().contains("element size is 4"), "{e}");
    }

    /// `n` FP32 elements, source step 2 (one packet per element), on one
    /// engine with rings of `ring` descriptors.
    fn strided_fp32(n: u16, op: ComputeOp, ring: u16) -> (InstWord, DgeConfig) {
        let InstWord::Direct2d(mut w) = word(
            0x1000_0000,
            [2, 200],
            [n, 1],
            0x2000_0000,
            [1, n as i32],
            [n, 1],
            4,
        ) else {
            unreachable!()
        };
        w.compute_op = op;
        w.in_dtype = Dtype::Fp32;
        w.out_dtype = Dtype::Fp32;
        let cfg = DgeConfig {
            carveout_size_descs: ring,
            ..cfg(1)
        };
        (InstWord::Direct2d(w), cfg)
    }

    #[test]
    fn the_ring_cap_counts_every_m2s_descriptor_of_a_cce_packet() {
        // ADD/MAX/MIN: B then A, 2 M2S descriptors per packet; MULTIPLY:
        // B, the FMA meta descriptor, A: 3. Plus the semaphore write.
        for (op, per, fits) in [
            (ComputeOp::Add, 2u64, 31u16),
            (ComputeOp::Max, 2, 31),
            (ComputeOp::Min, 2, 31),
            (ComputeOp::Multiply, 3, 21),
        ] {
            let (w, c) = strided_fp32(fits, op, 64);
            let p = expand(&w, &c, &mut ops()).unwrap();
            let e = &p.engines[0];
            assert_eq!(e.m2s_descs(), per * u64::from(fits) + 1, "{op:?}");
            assert_eq!(e.s2m_descs(), u64::from(fits) + 1, "{op:?}");
            assert!(e.m2s_descs() <= 64);
            assert_eq!(p.descriptors() as u64, e.m2s_descs() + e.s2m_descs());
            // One more element overruns the 64-descriptor ring: refused,
            // naming the count and the cap.
            let (w, c) = strided_fp32(fits + 1, op, 64);
            let err = expand(&w, &c, &mut ops()).unwrap_err().to_string();
            let need = per * u64::from(fits + 1) + 1;
            assert!(
                err.contains(&format!("needs {need} M2S descriptors"))
                    && err.contains("CARVEOUT_SIZE_DESCS = 64"),
                "{op:?}: {err}"
            );
        }
    }
}
