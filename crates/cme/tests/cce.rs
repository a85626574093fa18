#![allow(clippy::unwrap_used)]

use cme::dtype::{load, store};
use cme::{
    Accumulator, CCE_MAX_ELEMENTS_V3, CceError, CceType, DgeComputeOp, Dtype, ReduceOp, reduce,
    reduce_codes,
};
use proptest::prelude::*;

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn as_f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn encode_all(d: Dtype, v: &[f32]) -> Vec<u8> {
    let mut buf = vec![0u8; (v.len() * d.size_bits() as usize).div_ceil(8)];
    for (i, x) in v.iter().enumerate() {
        assert!(store(d, &mut buf, i, *x));
    }
    buf
}

fn decode_all(d: Dtype, b: &[u8]) -> Vec<f32> {
    (0..d.elements_in(b.len()).unwrap())
        .map(|i| load(d, b, i).unwrap())
        .collect()
}

#[test]
fn enums() {
    assert_eq!(CCE_MAX_ELEMENTS_V3, 2048);
    for (t, c) in [
        (CceType::Add, 0),
        (CceType::Fma, 1),
        (CceType::Max, 2),
        (CceType::Min, 3),
        (CceType::Ext, 4),
        (CceType::Gce, 5),
    ] {
        assert_eq!(t.code(), c);
        assert_eq!(CceType::from_code(c), Some(t));
    }
    assert_eq!(CceType::from_code(6), None);
    for (op, c) in [
        (DgeComputeOp::None, 0),
        (DgeComputeOp::Add, 1),
        (DgeComputeOp::Multiply, 2),
        (DgeComputeOp::Max, 3),
        (DgeComputeOp::Min, 4),
    ] {
        assert_eq!(op.code(), c);
        assert_eq!(DgeComputeOp::from_code(c), Some(op));
    }
    assert_eq!(DgeComputeOp::from_code(5), None);
    assert_eq!(DgeComputeOp::Add.cce_type(), Some(CceType::Add));
    assert_eq!(DgeComputeOp::Max.cce_type(), Some(CceType::Max));
    assert_eq!(DgeComputeOp::Min.cce_type(), Some(CceType::Min));
    assert_eq!(DgeComputeOp::Multiply.cce_type(), None);
    assert_eq!(ReduceOp::from(DgeComputeOp::None), ReduceOp::Copy);
    assert_eq!(ReduceOp::from(DgeComputeOp::Multiply), ReduceOp::Multiply);
    assert_eq!(
        ReduceOp::from_cce(CceType::Fma, 2.0),
        ReduceOp::Fma { scale: 2.0 }
    );
}

#[test]
fn fp32_ops() {
    let src = f32s(&[1.0, -2.0, 3.5, f32::NAN]);
    let cases: [(ReduceOp, [f32; 3]); 6] = [
        (ReduceOp::Copy, [1.0, -2.0, 3.5]),
        (ReduceOp::Add, [11.0, 18.0, 33.5]),
        (ReduceOp::Multiply, [10.0, -40.0, 105.0]),
        (ReduceOp::Fma { scale: 0.5 }, [10.5, 19.0, 31.75]),
        (ReduceOp::Max, [10.0, 20.0, 30.0]),
        (ReduceOp::Min, [1.0, -2.0, 3.5]),
    ];
    for (op, want) in cases {
        let mut dst = f32s(&[10.0, 20.0, 30.0, 5.0]);
        assert_eq!(reduce(op, Dtype::Fp32, &src, Dtype::Fp32, &mut dst), Ok(4));
        let got = as_f32s(&dst);
        assert_eq!(&got[..3], &want, "{op:?}");
        // NaN source: maxNum/minNum keep the number, arithmetic propagates.
        match op {
            ReduceOp::Max | ReduceOp::Min => assert_eq!(got[3], 5.0),
            _ => assert!(got[3].is_nan(), "{op:?}"),
        }
    }
}

#[test]
fn fma_is_fused() {
    // a*s + c with a single rounding: (1 + 2^-12)^2 - 1 - 2^-11 = 2^-24 exactly.
    let a = 1.0 + 2f32.powi(-12);
    let src = f32s(&[a]);
    let mut dst = f32s(&[-(1.0 + 2f32.powi(-11))]);
    reduce(
        ReduceOp::Fma { scale: a },
        Dtype::Fp32,
        &src,
        Dtype::Fp32,
        &mut dst,
    )
    .unwrap();
    assert_eq!(as_f32s(&dst)[0], 2f32.powi(-24));
}

#[test]
fn mixed_precision_converts_on_load_and_store() {
    // bf16 source accumulated into an fp32 destination.
    let src = encode_all(Dtype::Bf16, &[1.0, 2.5, -3.0]);
    let mut dst = f32s(&[0.25, 0.25, 0.25]);
    reduce(ReduceOp::Add, Dtype::Bf16, &src, Dtype::Fp32, &mut dst).unwrap();
    assert_eq!(as_f32s(&dst), [1.25, 2.75, -2.75]);
    // fp32 into fp8 E4M3: result rounded and saturated on store.
    let src = f32s(&[1.0, 400.0, 0.0]);
    let mut dst = encode_all(Dtype::Fp8Exp4, &[2.0, 100.0, 0.0]);
    reduce(ReduceOp::Add, Dtype::Fp32, &src, Dtype::Fp8Exp4, &mut dst).unwrap();
    assert_eq!(decode_all(Dtype::Fp8Exp4, &dst), [3.0, 448.0, 0.0]);
    // int8 source, int32 accumulator.
    let src = encode_all(Dtype::Int8, &[-128.0, 127.0]);
    let mut dst = encode_all(Dtype::Int32, &[1000.0, -1000.0]);
    reduce(ReduceOp::Add, Dtype::Int8, &src, Dtype::Int32, &mut dst).unwrap();
    assert_eq!(decode_all(Dtype::Int32, &dst), [872.0, -873.0]);
    // uint8 saturates.
    let src = [200u8, 10];
    let mut dst = [100u8, 5];
    reduce(ReduceOp::Add, Dtype::Uint8, &src, Dtype::Uint8, &mut dst).unwrap();
    assert_eq!(dst, [255, 15]);
}

#[test]
fn packed_fp4() {
    let src = encode_all(Dtype::Fp4Exp2, &[1.0, 2.0, 0.5, -1.0]);
    assert_eq!(src.len(), 2);
    let mut dst = encode_all(Dtype::Fp4Exp2, &[0.5, 2.0, 6.0, 1.0]);
    assert_eq!(
        reduce(
            ReduceOp::Add,
            Dtype::Fp4Exp2,
            &src,
            Dtype::Fp4Exp2,
            &mut dst
        ),
        Ok(4)
    );
    assert_eq!(decode_all(Dtype::Fp4Exp2, &dst), [1.5, 4.0, 6.0, 0.0]);
    // Two FP4 elements per FP16 pair of bytes: 2 bytes FP4 = 4 elems = 8 bytes FP16.
    let mut wide = encode_all(Dtype::Fp16, &[0.0; 4]);
    assert_eq!(
        reduce(ReduceOp::Copy, Dtype::Fp4Exp2, &src, Dtype::Fp16, &mut wide),
        Ok(4)
    );
    assert_eq!(decode_all(Dtype::Fp16, &wide), [1.0, 2.0, 0.5, -1.0]);
}

#[test]
fn errors_leave_dst_unchanged() {
    let src = f32s(&[1.0, 2.0]);
    let orig = f32s(&[5.0, 6.0, 7.0]);
    let mut dst = orig.clone();
    assert_eq!(
        reduce(ReduceOp::Add, Dtype::Fp32, &src, Dtype::Fp32, &mut dst),
        Err(CceError::LengthMismatch {
            src_elements: 2,
            dst_elements: 3
        })
    );
    assert_eq!(
        reduce(ReduceOp::Add, Dtype::Fp32, &src[..7], Dtype::Fp32, &mut dst),
        Err(CceError::BadLength {
            dtype: Dtype::Fp32,
            len: 7
        })
    );
    assert_eq!(
        reduce(ReduceOp::Add, Dtype::Fp32, &src, Dtype::Fp16, &mut dst[..3]),
        Err(CceError::BadLength {
            dtype: Dtype::Fp16,
            len: 3
        })
    );
    for (op, ty) in [(ReduceOp::Ext, CceType::Ext), (ReduceOp::Gce, CceType::Gce)] {
        assert_eq!(
            reduce(op, Dtype::Fp32, &src, Dtype::Fp32, &mut dst[..8]),
            Err(CceError::Unsupported(ty))
        );
    }
    assert_eq!(
        reduce_codes(ReduceOp::Add, 0x1, &src, 0xA, &mut dst[..8]),
        Err(CceError::UnknownDtype(0x1))
    );
    assert_eq!(
        reduce_codes(ReduceOp::Add, 0xA, &src, 0xC, &mut dst[..8]),
        Err(CceError::UnknownDtype(0xC))
    );
    assert_eq!(dst, orig);
    assert_eq!(
        reduce_codes(ReduceOp::Add, 0xA, &src, 0xA, &mut dst[..8]),
        Ok(2)
    );
    assert_eq!(as_f32s(&dst), [6.0, 8.0, 7.0]);
    // Empty buffers are fine.
    assert_eq!(
        reduce(ReduceOp::Add, Dtype::Fp32, &[], Dtype::Fp32, &mut []),
        Ok(0)
    );
    // Error text names the problem.
    assert!(
        CceError::Unsupported(CceType::Gce)
            .to_string()
            .contains("not modelled")
    );
}

#[test]
fn accumulator_multi_source_fma() {
    // Three ranks: acc = Σ src_r × scale_r, accumulated in FP32, flushed to BF16.
    let mut acc = Accumulator::new(Dtype::Fp32);
    let ranks: [(&[f32], f32); 3] = [
        (&[1.0, 2.0, 3.0], 0.5),
        (&[4.0, 5.0, 6.0], 1.0),
        (&[1.0, 1.0, 1.0], -2.0),
    ];
    for (v, scale) in ranks {
        acc.combine(
            ReduceOp::Fma { scale },
            Dtype::Fp16,
            &encode_all(Dtype::Fp16, v),
        )
        .unwrap();
    }
    assert_eq!(acc.sources(), 3);
    assert_eq!(acc.values(), [2.5, 4.0, 5.5]);
    let mut out = vec![0u8; 6];
    assert_eq!(acc.flush(Dtype::Bf16, &mut out), Ok(3));
    assert_eq!(decode_all(Dtype::Bf16, &out), [2.5, 4.0, 5.5]);
    assert_eq!(acc.sources(), 0);
    assert!(acc.is_empty());
    // Reusable: the next reduce may have a different size.
    acc.combine(ReduceOp::Add, Dtype::Fp32, &f32s(&[7.0]))
        .unwrap();
    assert_eq!(acc.values(), [7.0]);
}

#[test]
fn accumulator_max_starts_from_first_source_and_rounds_to_acc_dtype() {
    let mut acc = Accumulator::new(Dtype::Bf16);
    acc.combine(ReduceOp::Max, Dtype::Fp32, &f32s(&[-5.0, -7.0]))
        .unwrap();
    assert_eq!(acc.values(), [-5.0, -7.0]); // not max(0, ..)
    acc.combine(
        ReduceOp::Max,
        Dtype::Fp32,
        &f32s(&[-6.0, 1.0 + 2f32.powi(-10)]),
    )
    .unwrap();
    // 1 + 2^-10 is rounded to BF16 (7 mantissa bits) → 1.0.
    assert_eq!(acc.values(), [-5.0, 1.0]);
    assert_eq!(
        acc.combine(ReduceOp::Max, Dtype::Fp32, &f32s(&[1.0])),
        Err(CceError::LengthMismatch {
            src_elements: 1,
            dst_elements: 2
        })
    );
    assert_eq!(
        acc.combine(ReduceOp::Gce, Dtype::Fp32, &f32s(&[1.0, 2.0])),
        Err(CceError::Unsupported(CceType::Gce))
    );
    assert_eq!(acc.sources(), 2);
    let mut short = [0u8; 2];
    assert!(acc.flush(Dtype::Bf16, &mut short).is_err());
    assert_eq!(acc.sources(), 2);
}

fn dtype_strategy() -> impl Strategy<Value = Dtype> {
    prop::sample::select(Dtype::ALL.to_vec())
}

fn op_strategy() -> impl Strategy<Value = ReduceOp> {
    prop_oneof![
        Just(ReduceOp::Copy),
        Just(ReduceOp::Add),
        Just(ReduceOp::Multiply),
        any::<f32>().prop_map(|scale| ReduceOp::Fma { scale }),
        Just(ReduceOp::Max),
        Just(ReduceOp::Min),
        Just(ReduceOp::Ext),
        Just(ReduceOp::Gce),
    ]
}

proptest! {
    #[test]
    fn reduce_never_panics(
        op in op_strategy(),
        sd in dtype_strategy(),
        dd in dtype_strategy(),
        src in prop::collection::vec(any::<u8>(), 0..64),
        dst in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut d = dst.clone();
        match reduce(op, sd, &src, dd, &mut d) {
            Ok(n) => prop_assert_eq!(Some(n), sd.elements_in(src.len())),
            Err(_) => prop_assert_eq!(d, dst),
        }
    }

    #[test]
    fn reduce_matches_elementwise_f32(
        op in op_strategy(),
        sd in dtype_strategy(),
        dd in dtype_strategy(),
        half in 0usize..20,
        seed in any::<u64>(),
    ) {
        // Even counts, so packed FP4 buffers hold exactly n elements.
        let n = 2 * half;
        prop_assume!(!matches!(op, ReduceOp::Ext | ReduceOp::Gce));
        let mut x = seed | 1;
        let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
        let src_vals: Vec<f32> = (0..n).map(|_| (next() % 64) as f32 * 0.25 - 8.0).collect();
        let dst_vals: Vec<f32> = (0..n).map(|_| (next() % 64) as f32 * 0.25 - 8.0).collect();
        let src = encode_all(sd, &src_vals);
        let mut dst = encode_all(dd, &dst_vals);
        let a = decode_all(sd, &src);
        let b = decode_all(dd, &dst);
        reduce(op, sd, &src, dd, &mut dst).unwrap();
        let got = decode_all(dd, &dst);
        for i in 0..n {
            let want = cme::dtype::quantize(dd, op.apply(b[i], a[i]));
            prop_assert!(got[i] == want || (got[i].is_nan() && want.is_nan()));
        }
    }
}

/// FMA operand selectors (docs/references/wiki.md §F.2–F.3): the meta descriptor picks
/// a, b, c among stored (acc), input (src) and scale. `stored × input + c`
/// multiplies element by element (the firmware's MULTIPLY uses c = −0.0,
/// [`ReduceOp::MULTIPLY_AS_FMA`]); the default selectors (input × scale +
/// stored) are the plain FMA.
#[test]
fn fma_operand_selectors() {
    use cme::{Accumulator, Dtype, FmaOperand, ReduceOp};
    let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let run = |second: ReduceOp| {
        let mut acc = Accumulator::new(Dtype::Fp32);
        acc.combine(ReduceOp::Add, Dtype::Fp32, &f(&[3.0, -2.0, 0.5]))
            .unwrap();
        acc.combine(second, Dtype::Fp32, &f(&[4.0, 5.0, 8.0]))
            .unwrap();
        acc.values().to_vec()
    };
    let mul = ReduceOp::FmaSelect {
        a: FmaOperand::Stored,
        b: FmaOperand::Input,
        c: FmaOperand::Scale,
        scale: 0.0,
    };
    assert_eq!(run(mul), [12.0, -10.0, 4.0]);
    assert_eq!(run(ReduceOp::MULTIPLY_AS_FMA), [12.0, -10.0, 4.0]);
    let fma = ReduceOp::FmaSelect {
        a: FmaOperand::Input,
        b: FmaOperand::Scale,
        c: FmaOperand::Stored,
        scale: 2.0,
    };
    assert_eq!(run(fma), run(ReduceOp::Fma { scale: 2.0 }));
    assert_eq!(run(fma), [11.0, 8.0, 16.5]);
    assert_eq!(FmaOperand::from_bits(3), None);
    assert_eq!(
        FmaOperand::from_bits(FmaOperand::Scale.bits()),
        Some(FmaOperand::Scale)
    );
}

/// DGE MULTIPLY through the CCE (B, then the FMA meta descriptor, then A):
/// the first source loads B (an FMA source with the default scale 1.0),
/// the second combines `acc × A + scale`. Returns the FP32 result bits.
fn multiply_through_accumulator(b: f32, a: f32) -> u32 {
    let mut acc = Accumulator::new(Dtype::Fp32);
    acc.combine(ReduceOp::Fma { scale: 1.0 }, Dtype::Fp32, &f32s(&[b]))
        .unwrap();
    acc.combine(ReduceOp::MULTIPLY_AS_FMA, Dtype::Fp32, &f32s(&[a]))
        .unwrap();
    let mut out = [0u8; 4];
    acc.flush(Dtype::Fp32, &mut out).unwrap();
    u32::from_le_bytes(out)
}

/// IEEE 754 binary32: the sign of a product is the XOR of the operand
/// signs, also when the product is exactly zero. The MULTIPLY mapping must
/// give the plain product (oracles/dtype_multiply_signed_zero): an FMA
/// addend of +0.0 turns every exact −0 product into +0, −0.0 does not.
#[test]
fn multiply_keeps_the_sign_of_an_exact_zero_product() {
    let cases: [(f32, f32); 9] = [
        (-1.0, 0.0),
        (0.0, -5.0),
        (-0.0, 7.0),
        (3.0, -0.0),
        (-2.0, 0.0),
        (-0.0, -0.0),
        (0.0, 0.0),
        (-0.0, 0.0),
        (1e-30, -1e-30), // underflows to -0
    ];
    for (b, a) in cases {
        let want = (b * a).to_bits();
        assert_eq!(
            ReduceOp::MULTIPLY_AS_FMA.apply(b, a).to_bits(),
            want,
            "{b:?} x {a:?}"
        );
        assert_eq!(
            ReduceOp::Multiply.apply(b, a).to_bits(),
            want,
            "{b:?} x {a:?}"
        );
        assert_eq!(multiply_through_accumulator(b, a), want, "{b:?} x {a:?}");
    }
    assert_eq!(multiply_through_accumulator(-1.0, 0.0), 0x8000_0000);
    assert_eq!(cme::MULTIPLY_FMA_SCALE.to_bits(), 0x8000_0000);
    // The FMA itself is IEEE: with a +0.0 addend the exact −0 product
    // becomes +0 (round to nearest: −0 + +0 = +0).
    let plus_zero = ReduceOp::FmaSelect {
        a: cme::FmaOperand::Stored,
        b: cme::FmaOperand::Input,
        c: cme::FmaOperand::Scale,
        scale: 0.0,
    };
    assert_eq!(plus_zero.apply(-1.0, 0.0).to_bits(), 0);
}

proptest! {
    /// MULTIPLY as an FMA equals plain f32 multiplication, bit for bit,
    /// for every pair of FP32 values (NaNs: both NaN).
    #[test]
    fn multiply_as_fma_is_plain_f32_multiplication(b in any::<u32>(), a in any::<u32>()) {
        let (b, a) = (f32::from_bits(b), f32::from_bits(a));
        let want = b * a;
        for got in [
            ReduceOp::MULTIPLY_AS_FMA.apply(b, a),
            f32::from_bits(multiply_through_accumulator(b, a)),
        ] {
            prop_assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{:?} x {:?}: got {:#010x}, want {:#010x}", b, a, got.to_bits(), want.to_bits()
            );
        }
    }

    /// The same over the signed zeros, infinities, the smallest and
    /// largest magnitudes, and the subnormals, where an addend could show.
    #[test]
    fn multiply_as_fma_on_edge_values(
        b in prop::sample::select(EDGES.to_vec()),
        a in prop::sample::select(EDGES.to_vec()),
    ) {
        let want = b * a;
        let got = ReduceOp::MULTIPLY_AS_FMA.apply(b, a);
        prop_assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()));
    }
}

const EDGES: [f32; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    f32::MAX,
    f32::MIN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e-30,
    -3e-20,
];
