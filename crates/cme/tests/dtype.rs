#![allow(clippy::unwrap_used)]

use cme::dtype::{decode, encode, load, quantize, store};
use cme::{CceError, Dtype, from_f32, to_f32};
use proptest::prelude::*;

const FP8: [Dtype; 3] = [Dtype::Fp8Exp3, Dtype::Fp8Exp4, Dtype::Fp8Exp5];

#[test]
fn codes_and_sizes() {
    let table = [
        (Dtype::Int8, 0x2, 1),
        (Dtype::Uint8, 0x3, 1),
        (Dtype::Int16, 0x4, 2),
        (Dtype::Uint16, 0x5, 2),
        (Dtype::Bf16, 0x6, 2),
        (Dtype::Fp16, 0x7, 2),
        (Dtype::Int32, 0x8, 4),
        (Dtype::Uint32, 0x9, 4),
        (Dtype::Fp32, 0xA, 4),
        (Dtype::Fp32r, 0xB, 4),
        (Dtype::Fp8Exp3, 0xD, 1),
        (Dtype::Fp8Exp4, 0xE, 1),
        (Dtype::Fp8Exp5, 0xF, 1),
        (Dtype::Fp4Exp2, 0x10, 1),
    ];
    assert_eq!(table.len(), Dtype::ALL.len());
    for (d, code, size) in table {
        assert_eq!(d.code(), code);
        assert_eq!(Dtype::from_code(code), Some(d));
        assert_eq!(Dtype::try_from(code), Ok(d));
        assert_eq!(d.size_bytes(), size);
    }
    assert_eq!(Dtype::Fp4Exp2.size_bits(), 4);
    for code in (0..=u8::MAX).filter(|c| !table.iter().any(|t| t.1 == *c)) {
        assert_eq!(Dtype::from_code(code), None, "{code:#x}");
        assert_eq!(Dtype::try_from(code), Err(CceError::UnknownDtype(code)));
    }
    assert_eq!(Dtype::Fp4Exp2.elements_in(3), Some(6));
    assert_eq!(Dtype::Fp16.elements_in(3), None);
    assert_eq!(Dtype::Fp32.elements_in(8), Some(2));
    assert_eq!(Dtype::Fp32.elements_in(6), None);
}

fn is_nan_code(d: Dtype, bits: u32) -> bool {
    decode(d, bits).is_nan()
}

#[test]
fn all_fp8_codes_round_trip() {
    for d in FP8 {
        let mut nans = 0;
        for bits in 0..256u32 {
            let x = decode(d, bits);
            let back = encode(d, x);
            if x.is_nan() {
                nans += 1;
                assert!(is_nan_code(d, back), "{d} {bits:#x}");
                // Sign preserved.
                assert_eq!(back & 0x80, bits & 0x80);
            } else {
                assert_eq!(back, bits, "{d} code {bits:#04x} = {x}");
            }
        }
        // E4M3fn: only S.1111.111; E5M2: 2 × 3; E3M4: 2 × 15.
        let want = match d {
            Dtype::Fp8Exp4 => 2,
            Dtype::Fp8Exp5 => 6,
            _ => 30,
        };
        assert_eq!(nans, want, "{d}");
    }
}

#[test]
fn all_fp4_codes_round_trip() {
    let values = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for bits in 0..16u32 {
        let x = decode(Dtype::Fp4Exp2, bits);
        let mag = values[(bits & 7) as usize];
        assert_eq!(x.abs(), mag);
        assert_eq!(x.is_sign_negative(), bits & 8 != 0);
        assert_eq!(encode(Dtype::Fp4Exp2, x), bits);
    }
}

#[test]
fn all_16bit_float_codes_round_trip() {
    for d in [Dtype::Bf16, Dtype::Fp16] {
        for bits in 0..=0xFFFFu32 {
            let x = decode(d, bits);
            let back = encode(d, x);
            if x.is_nan() {
                assert!(is_nan_code(d, back));
                assert_eq!(back & 0x8000, bits & 0x8000);
            } else {
                assert_eq!(back, bits, "{d} {bits:#06x}");
            }
        }
    }
}

#[test]
fn bf16_decode_is_the_top_half_of_f32() {
    for bits in 0..=0xFFFFu32 {
        let x = decode(Dtype::Bf16, bits);
        let y = f32::from_bits(bits << 16);
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
    }
}

#[test]
fn spot_values() {
    use Dtype::*;
    // FP8 E4M3fn: max 448, saturating, NaN 0x7F.
    assert_eq!(encode(Fp8Exp4, 448.0), 0x7E);
    assert_eq!(encode(Fp8Exp4, 464.0), 0x7E); // ties to even at max
    assert_eq!(encode(Fp8Exp4, 1.0e6), 0x7E);
    assert_eq!(encode(Fp8Exp4, f32::INFINITY), 0x7E);
    assert_eq!(encode(Fp8Exp4, f32::NEG_INFINITY), 0xFE);
    assert_eq!(encode(Fp8Exp4, f32::NAN), 0x7F);
    assert_eq!(encode(Fp8Exp4, 1.0), 0x38);
    assert_eq!(decode(Fp8Exp4, 0x01), 2f32.powi(-9));
    assert_eq!(encode(Fp8Exp4, 2f32.powi(-10)), 0x00); // tie → even (0)
    assert_eq!(encode(Fp8Exp4, 1.5 * 2f32.powi(-10)), 0x01);
    assert_eq!(encode(Fp8Exp4, -0.0), 0x80);
    // FP8 E5M2: IEEE-like, max 57344, overflow → inf.
    assert_eq!(encode(Fp8Exp5, 57344.0), 0x7B);
    assert_eq!(encode(Fp8Exp5, 61439.0), 0x7B);
    assert_eq!(encode(Fp8Exp5, 61440.0), 0x7C); // halfway → even → inf
    assert_eq!(encode(Fp8Exp5, f32::INFINITY), 0x7C);
    assert_eq!(decode(Fp8Exp5, 0xFC), f32::NEG_INFINITY);
    assert_eq!(encode(Fp8Exp5, 1.0), 0x3C);
    assert_eq!(decode(Fp8Exp5, 0x01), 2f32.powi(-16));
    // FP8 E3M4: bias 3, max 15.5, IEEE-like.
    assert_eq!(decode(Fp8Exp3, 0x6F), 15.5);
    assert_eq!(encode(Fp8Exp3, 15.5), 0x6F);
    assert_eq!(encode(Fp8Exp3, 15.75), 0x70); // halfway to 16 → inf
    assert_eq!(decode(Fp8Exp3, 0x70), f32::INFINITY);
    assert_eq!(encode(Fp8Exp3, 1.0), 0x30);
    assert_eq!(decode(Fp8Exp3, 0x01), 2f32.powi(-6));
    // FP4 E2M1: saturating, NaN → +0.
    assert_eq!(encode(Fp4Exp2, 5.0), 0x6); // tie between 4 and 6 → 4 (even)
    assert_eq!(encode(Fp4Exp2, 5.1), 0x7);
    assert_eq!(encode(Fp4Exp2, 7.0), 0x7);
    assert_eq!(encode(Fp4Exp2, 100.0), 0x7);
    assert_eq!(encode(Fp4Exp2, f32::NEG_INFINITY), 0xF);
    assert_eq!(encode(Fp4Exp2, f32::NAN), 0x0);
    assert_eq!(encode(Fp4Exp2, 0.25), 0x0); // tie → 0
    assert_eq!(encode(Fp4Exp2, 0.26), 0x1);
    assert_eq!(encode(Fp4Exp2, 1.25), 0x2); // tie 1 / 1.5 → 1 (even)
    assert_eq!(encode(Fp4Exp2, 1.75), 0x4); // tie 1.5 / 2 → 2 (even)
    // FP16.
    assert_eq!(encode(Fp16, 1.0), 0x3C00);
    assert_eq!(encode(Fp16, 65504.0), 0x7BFF);
    assert_eq!(encode(Fp16, 65519.0), 0x7BFF);
    assert_eq!(encode(Fp16, 65520.0), 0x7C00);
    assert_eq!(encode(Fp16, 2f32.powi(-24)), 0x0001);
    assert_eq!(encode(Fp16, 2f32.powi(-25)), 0x0000);
    assert_eq!(encode(Fp16, 1.5 * 2f32.powi(-25)), 0x0001);
    assert_eq!(encode(Fp16, f32::NAN), 0x7E00);
    assert_eq!(encode(Fp16, -f32::NAN), 0xFE00);
    // BF16.
    assert_eq!(encode(Bf16, 1.0), 0x3F80);
    assert_eq!(encode(Bf16, f32::from_bits(0x3F80_8000)), 0x3F80);
    assert_eq!(encode(Bf16, f32::from_bits(0x3F81_8000)), 0x3F82);
    assert_eq!(encode(Bf16, f32::MAX), 0x7F80);
    assert_eq!(encode(Bf16, f32::from_bits(1)), 0x0000);
    assert_eq!(encode(Bf16, f32::NAN), 0x7FC0);
    // Integers: RNE, saturate, NaN → 0.
    assert_eq!(encode(Int8, 2.5), 2);
    assert_eq!(encode(Int8, 3.5), 4);
    assert_eq!(encode(Int8, -2.5), 0xFE);
    assert_eq!(encode(Int8, 300.0), 0x7F);
    assert_eq!(encode(Int8, -300.0), 0x80);
    assert_eq!(encode(Int8, f32::NAN), 0);
    assert_eq!(encode(Uint8, -1.0), 0);
    assert_eq!(encode(Uint8, 255.5), 255);
    assert_eq!(encode(Uint8, 254.5), 254);
    assert_eq!(encode(Int16, -40000.0), 0x8000);
    assert_eq!(encode(Uint16, f32::INFINITY), 0xFFFF);
    assert_eq!(encode(Int32, 3.0e9), 0x7FFF_FFFF);
    assert_eq!(encode(Int32, -0.5), 0);
    assert_eq!(encode(Uint32, 3.0e9), 3_000_000_000);
    assert_eq!(encode(Uint32, f32::NAN), 0);
    assert_eq!(decode(Int8, 0x80), -128.0);
    assert_eq!(decode(Int32, 0xFFFF_FFFF), -1.0);
    assert_eq!(decode(Uint32, 0xFFFF_FFFF), 4_294_967_296.0);
    // FP32 / FP32R keep bits, including NaN payloads.
    for d in [Fp32, Fp32r] {
        let x = f32::from_bits(0x7FC1_2345);
        assert_eq!(encode(d, x), 0x7FC1_2345);
        assert_eq!(decode(d, 0x7FC1_2345).to_bits(), 0x7FC1_2345);
    }
}

#[test]
fn byte_level_conversions() {
    assert_eq!(&*from_f32(Dtype::Fp32, 1.0), &1.0f32.to_le_bytes());
    assert_eq!(&*from_f32(Dtype::Bf16, 1.0), &[0x80, 0x3F]);
    assert_eq!(&*from_f32(Dtype::Fp4Exp2, -6.0), &[0x0F]);
    assert_eq!(
        from_f32(Dtype::Int32, -2.0).as_slice(),
        &[0xFE, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!(to_f32(Dtype::Fp16, &[0x00, 0x3C]), Ok(1.0));
    assert_eq!(to_f32(Dtype::Fp4Exp2, &[0xF3]), Ok(1.5)); // low nibble
    assert_eq!(
        to_f32(Dtype::Fp16, &[0x00]),
        Err(CceError::BadLength {
            dtype: Dtype::Fp16,
            len: 1
        })
    );
    assert!(to_f32(Dtype::Fp32, &[0; 5]).is_err());
    for d in Dtype::ALL {
        assert_eq!(from_f32(d, 1.0).len(), d.size_bytes());
        assert_eq!(to_f32(d, &from_f32(d, 1.0)), Ok(1.0));
    }
}

#[test]
fn packed_fp4_load_store() {
    let mut buf = [0u8; 2];
    assert!(store(Dtype::Fp4Exp2, &mut buf, 0, 1.0));
    assert!(store(Dtype::Fp4Exp2, &mut buf, 1, -3.0));
    assert!(store(Dtype::Fp4Exp2, &mut buf, 3, 6.0));
    assert!(!store(Dtype::Fp4Exp2, &mut buf, 4, 6.0));
    assert_eq!(buf, [0xD2, 0x70]);
    assert_eq!(load(Dtype::Fp4Exp2, &buf, 1), Some(-3.0));
    assert_eq!(load(Dtype::Fp4Exp2, &buf, 2), Some(0.0));
    assert_eq!(load(Dtype::Fp4Exp2, &buf, 4), None);
    assert_eq!(load(Dtype::Fp32, &buf, 0), None);
    assert_eq!(load(Dtype::Fp16, &buf, usize::MAX), None);
    assert!(!store(Dtype::Fp16, &mut buf, usize::MAX, 1.0));
}

/// Brute-force nearest representable value with ties to the even code,
/// for the 8- and 4-bit formats; saturating formats clamp first.
fn brute_nearest(d: Dtype, x: f32) -> u32 {
    let codes = if d == Dtype::Fp4Exp2 { 16 } else { 256 };
    let mut best: Option<(f64, u32)> = None;
    for c in 0..codes {
        let v = decode(d, c);
        if !v.is_finite() {
            continue;
        }
        // Prefer the code with the same sign as x for zero.
        if v == 0.0 && v.is_sign_negative() != x.is_sign_negative() {
            continue;
        }
        let err = (f64::from(v) - f64::from(x)).abs();
        let better = match best {
            None => true,
            Some((e, b)) => err < e || (err == e && c & 1 == 0 && b & 1 == 1),
        };
        if better {
            best = Some((err, c));
        }
    }
    best.map(|b| b.1).unwrap()
}

fn largest(d: Dtype) -> f32 {
    match d {
        Dtype::Fp8Exp3 => 15.5,
        Dtype::Fp8Exp4 => 448.0,
        Dtype::Fp8Exp5 => 57344.0,
        _ => 6.0,
    }
}

proptest! {
    #[test]
    fn narrow_floats_round_to_nearest_even(
        d in prop::sample::select(vec![Dtype::Fp8Exp3, Dtype::Fp8Exp4, Dtype::Fp8Exp5, Dtype::Fp4Exp2]),
        frac in -1.0f32..1.0,
    ) {
        // Values within the finite range (overflow is covered by spot tests).
        let x = frac * largest(d);
        prop_assert_eq!(encode(d, x), brute_nearest(d, x), "{} {}", d, x);
    }

    #[test]
    fn narrow_floats_tiny_values(
        d in prop::sample::select(vec![Dtype::Fp8Exp3, Dtype::Fp8Exp4, Dtype::Fp8Exp5]),
        frac in -1.0f32..1.0,
    ) {
        let x = frac * 0.1;
        prop_assert_eq!(encode(d, x), brute_nearest(d, x), "{} {}", d, x);
    }

    #[test]
    fn bf16_matches_bit_trick(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        prop_assume!(!x.is_nan());
        // Round-half-to-even on the bit pattern; correct for all non-NaN
        // inputs including overflow to inf and subnormals.
        let want = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16;
        prop_assert_eq!(encode(Dtype::Bf16, x), want);
    }

    #[test]
    fn fp16_is_nearest(x in -70000.0f32..70000.0) {
        let got = encode(Dtype::Fp16, x);
        let v = f64::from(decode(Dtype::Fp16, got));
        let err = (v - f64::from(x)).abs();
        if v.is_finite() {
            // The neighbours in code order are no closer.
            for n in [got.wrapping_sub(1) & 0xFFFF, (got + 1) & 0xFFFF] {
                let w = f64::from(decode(Dtype::Fp16, n));
                if w.is_finite() && w.signum() == v.signum() {
                    prop_assert!((w - f64::from(x)).abs() >= err);
                }
            }
        } else {
            prop_assert!(x.abs() >= 65520.0);
        }
    }

    #[test]
    fn conversions_never_panic(d in prop::sample::select(Dtype::ALL.to_vec()), bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        let e = encode(d, x);
        prop_assert!(d.size_bits() == 32 || e < (1 << d.size_bits()));
        let _ = decode(d, bits);
        let q = quantize(d, x);
        // Quantisation is idempotent.
        let q2 = quantize(d, q);
        prop_assert!(q.to_bits() == q2.to_bits() || (q.is_nan() && q2.is_nan()));
    }
}
