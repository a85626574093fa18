//! Element data types of the DMA compute path and their conversion to and
//! from `f32`.
//!
//! Codes are the ISA `DTYPE` / SDMA dtype values (docs/references/wiki.md §C.3, §F.1).
//! Multi-byte elements are little-endian. FP4 elements are packed two per
//! byte, element `2k` in bits 3:0 and element `2k + 1` in bits 7:4
//! (simulator-defined; the packing is not published).
//!
//! # Conversion rules (`f32` → element)
//!
//! * All float formats round to nearest, ties to even, with gradual
//!   underflow (subnormals) and signed zeros preserved.
//! * IEEE-like formats (FP16, BF16, FP8_EXP5 = E5M2, FP8_EXP3 = E3M4)
//!   overflow to ±infinity exactly as IEEE 754 does (a value rounds to
//!   infinity iff it is at least `max + ulp/2`); ±inf stays ±inf; NaN
//!   becomes the format's canonical quiet NaN with the input's sign.
//! * FP8_EXP4 (E4M3 "fn": no infinities, `S.1111.111` is NaN) and FP4_EXP2
//!   (E2M1: no infinities, no NaN) *saturate*: any finite value or infinity
//!   beyond the largest finite value becomes ±max (448 and 6). NaN becomes
//!   the E4M3 NaN with the input's sign; FP4 has no NaN, so NaN becomes +0.
//! * FP32 / FP32R: the bits are kept unchanged.
//! * Integers: round to nearest, ties to even, then saturate to the type's
//!   range; NaN becomes 0; ±inf saturate.
//!
//! Element → `f32` is exact for every format except INT32/UINT32 of
//! magnitude above 2²⁴, which round to nearest even.

use serde::{Deserialize, Serialize};

use crate::CceError;

/// An element data type (ISA `DTYPE` / SDMA dtype code).
///
/// Only codes with a documented value are modelled. INT16 (4), UINT16 (5)
/// and UINT32 (9) come from the host kbin → SDMA dtype remap table
/// (docs/references/wiki.md §F.1, observed); the rest from the ISA `DTYPE` list
/// (§C.3). The 64-bit integers (1, 0xC) and the CPTC trellis types
/// (0x19..=0x1F) are not modelled and decode as unknown.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[repr(u8)]
pub enum Dtype {
    /// 0x2: signed 8-bit integer.
    Int8 = 0x2,
    /// 0x3: unsigned 8-bit integer.
    Uint8 = 0x3,
    /// 0x4: signed 16-bit integer (value from the §F.1 remap table).
    Int16 = 0x4,
    /// 0x5: unsigned 16-bit integer (value from the §F.1 remap table).
    Uint16 = 0x5,
    /// 0x6: bfloat16 (1 sign, 8 exponent bits bias 127, 7 mantissa bits).
    Bf16 = 0x6,
    /// 0x7: IEEE binary16 (1 sign, 5 exponent bits bias 15, 10 mantissa
    /// bits).
    Fp16 = 0x7,
    /// 0x8: signed 32-bit integer.
    Int32 = 0x8,
    /// 0x9: unsigned 32-bit integer (value from the §F.1 remap table).
    Uint32 = 0x9,
    /// 0xA: IEEE binary32.
    Fp32 = 0xA,
    /// 0xB: FP32R, the FP32 "round" accumulator variant. The device size
    /// table lists it as 0 bytes (§C.6); it is modelled as a 4-byte FP32.
    Fp32r = 0xB,
    /// 0xD: FP8 E3M4 (1 sign, 3 exponent bits bias 3, 4 mantissa bits),
    /// IEEE-like: exponent field 7 is ±inf (mantissa 0) or NaN; max 15.5.
    Fp8Exp3 = 0xD,
    /// 0xE: FP8 E4M3 "fn" (bias 7): no infinities, only `S.1111.111` is
    /// NaN; max 448.
    Fp8Exp4 = 0xE,
    /// 0xF: FP8 E5M2 (bias 15), IEEE-like with ±inf and NaN; max 57344.
    Fp8Exp5 = 0xF,
    /// 0x10: FP4 E2M1 (bias 1): values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no
    /// infinities or NaN. Two elements per byte.
    Fp4Exp2 = 0x10,
}

impl Dtype {
    /// Every modelled dtype, in code order.
    pub const ALL: [Dtype; 14] = [
        Dtype::Int8,
        Dtype::Uint8,
        Dtype::Int16,
        Dtype::Uint16,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Int32,
        Dtype::Uint32,
        Dtype::Fp32,
        Dtype::Fp32r,
        Dtype::Fp8Exp3,
        Dtype::Fp8Exp4,
        Dtype::Fp8Exp5,
        Dtype::Fp4Exp2,
    ];

    /// Decodes a dtype code; `None` for codes that are not modelled.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<Dtype> {
        Some(match code {
            0x2 => Dtype::Int8,
            0x3 => Dtype::Uint8,
            0x4 => Dtype::Int16,
            0x5 => Dtype::Uint16,
            0x6 => Dtype::Bf16,
            0x7 => Dtype::Fp16,
            0x8 => Dtype::Int32,
            0x9 => Dtype::Uint32,
            0xA => Dtype::Fp32,
            0xB => Dtype::Fp32r,
            0xD => Dtype::Fp8Exp3,
            0xE => Dtype::Fp8Exp4,
            0xF => Dtype::Fp8Exp5,
            0x10 => Dtype::Fp4Exp2,
            _ => return None,
        })
    }

    /// The dtype code.
    #[must_use]
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The enumerator name, e.g. `"FP8_EXP4"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Int8 => "INT8",
            Dtype::Uint8 => "UINT8",
            Dtype::Int16 => "INT16",
            Dtype::Uint16 => "UINT16",
            Dtype::Bf16 => "BFLOAT16",
            Dtype::Fp16 => "FP16",
            Dtype::Int32 => "INT32",
            Dtype::Uint32 => "UINT32",
            Dtype::Fp32 => "FP32",
            Dtype::Fp32r => "FP32R",
            Dtype::Fp8Exp3 => "FP8_EXP3",
            Dtype::Fp8Exp4 => "FP8_EXP4",
            Dtype::Fp8Exp5 => "FP8_EXP5",
            Dtype::Fp4Exp2 => "FP4_EXP2",
        }
    }

    /// Element size in bits (4 for FP4).
    #[must_use]
    pub const fn size_bits(self) -> u32 {
        match self {
            Dtype::Fp4Exp2 => 4,
            Dtype::Int8 | Dtype::Uint8 | Dtype::Fp8Exp3 | Dtype::Fp8Exp4 | Dtype::Fp8Exp5 => 8,
            Dtype::Int16 | Dtype::Uint16 | Dtype::Bf16 | Dtype::Fp16 => 16,
            Dtype::Int32 | Dtype::Uint32 | Dtype::Fp32 | Dtype::Fp32r => 32,
        }
    }

    /// Bytes holding one element on its own: the size in bits rounded up
    /// to whole bytes (FP4 → 1, FP32R → 4 although the device table says
    /// 0). For arrays use [`Dtype::elements_in`], which packs FP4 two per
    /// byte.
    #[must_use]
    pub const fn size_bytes(self) -> usize {
        self.size_bits().div_ceil(8) as usize
    }

    /// True for the floating-point formats.
    #[must_use]
    pub const fn is_float(self) -> bool {
        !matches!(
            self,
            Dtype::Int8
                | Dtype::Uint8
                | Dtype::Int16
                | Dtype::Uint16
                | Dtype::Int32
                | Dtype::Uint32
        )
    }

    /// Number of elements in `byte_len` bytes, or `None` if `byte_len` is
    /// not a whole number of elements (never for FP4 or 1-byte types).
    #[must_use]
    pub const fn elements_in(self, byte_len: usize) -> Option<usize> {
        match self.size_bits() {
            4 => byte_len.checked_mul(2),
            bits => {
                let size = (bits / 8) as usize;
                if byte_len.is_multiple_of(size) {
                    Some(byte_len / size)
                } else {
                    None
                }
            }
        }
    }

    /// Bit mask of an element's raw encoding.
    const fn mask(self) -> u32 {
        match self.size_bits() {
            32 => u32::MAX,
            bits => (1u32 << bits) - 1,
        }
    }

    /// The minifloat layout of a narrow float format.
    const fn minifloat(self) -> Option<MiniFloat> {
        Some(match self {
            Dtype::Bf16 => MiniFloat::new(8, 7, 127, Special::Ieee),
            Dtype::Fp16 => MiniFloat::new(5, 10, 15, Special::Ieee),
            Dtype::Fp8Exp3 => MiniFloat::new(3, 4, 3, Special::Ieee),
            Dtype::Fp8Exp4 => MiniFloat::new(4, 3, 7, Special::FiniteNanOnly),
            Dtype::Fp8Exp5 => MiniFloat::new(5, 2, 15, Special::Ieee),
            Dtype::Fp4Exp2 => MiniFloat::new(2, 1, 1, Special::None),
            _ => return None,
        })
    }
}

impl TryFrom<u8> for Dtype {
    type Error = CceError;

    /// Like [`Dtype::from_code`], failing with [`CceError::UnknownDtype`].
    fn try_from(code: u8) -> Result<Self, Self::Error> {
        Dtype::from_code(code).ok_or(CceError::UnknownDtype(code))
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which codes of a minifloat's top exponent are special.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    /// IEEE 754: top exponent = inf (mantissa 0) or NaN.
    Ieee,
    /// E4M3 "fn": only top exponent with all-ones mantissa is NaN.
    FiniteNanOnly,
    /// No special values at all (E2M1).
    None,
}

/// A binary floating-point format with `ebits` exponent and `mbits`
/// mantissa bits and a sign bit on top.
#[derive(Clone, Copy, Debug)]
struct MiniFloat {
    mbits: u32,
    bias: i32,
    special: Special,
    /// All-ones exponent field.
    emask: u32,
    /// Largest unbiased exponent of a finite value.
    emax: i32,
    /// Largest significand (hidden bit included, i.e. `2^m ..`) at `emax`.
    max_sig: u32,
}

impl MiniFloat {
    const fn new(ebits: u32, mbits: u32, bias: i32, special: Special) -> MiniFloat {
        let emask = (1 << ebits) - 1;
        let full = (1 << (mbits + 1)) - 1;
        let (emax, max_sig) = match special {
            Special::Ieee => (emask as i32 - 1 - bias, full),
            Special::FiniteNanOnly => (emask as i32 - bias, full - 1),
            Special::None => (emask as i32 - bias, full),
        };
        MiniFloat {
            mbits,
            bias,
            special,
            emask,
            emax,
            max_sig,
        }
    }

    const fn sign_bit(&self) -> u32 {
        1 << (self.mbits + self.emask.count_ones())
    }

    fn nan(&self, sign: u32) -> u32 {
        match self.special {
            // Quiet NaN: top mantissa bit set.
            Special::Ieee => sign | (self.emask << self.mbits) | (1 << (self.mbits - 1)),
            Special::FiniteNanOnly => sign | (self.emask << self.mbits) | ((1 << self.mbits) - 1),
            Special::None => 0,
        }
    }

    fn largest(&self, sign: u32) -> u32 {
        let exp = (self.emax + self.bias) as u32;
        sign | (exp << self.mbits) | (self.max_sig - (1 << self.mbits))
    }

    fn overflow(&self, sign: u32) -> u32 {
        match self.special {
            Special::Ieee => sign | (self.emask << self.mbits),
            Special::FiniteNanOnly | Special::None => self.largest(sign),
        }
    }

    fn decode(&self, bits: u32) -> f32 {
        let mmask = (1u32 << self.mbits) - 1;
        let negative = bits & self.sign_bit() != 0;
        let exp = (bits >> self.mbits) & self.emask;
        let man = bits & mmask;
        let magnitude = match self.special {
            Special::Ieee if exp == self.emask => {
                if man == 0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                }
            }
            Special::FiniteNanOnly if exp == self.emask && man == mmask => f64::NAN,
            _ if exp == 0 => f64::from(man) * pow2(1 - self.bias - self.mbits as i32),
            _ => {
                f64::from((1 << self.mbits) | man)
                    * pow2(exp as i32 - self.bias - self.mbits as i32)
            }
        };
        // Exact: every value of these formats is representable in f32.
        let v = magnitude as f32;
        if negative { -v } else { v }
    }

    fn encode(&self, x: f32) -> u32 {
        let sign = if x.is_sign_negative() {
            self.sign_bit()
        } else {
            0
        };
        if x.is_nan() {
            return self.nan(sign);
        }
        if x.is_infinite() {
            return self.overflow(sign);
        }
        let a = f64::from(x.abs());
        if a == 0.0 {
            return sign;
        }
        let m = self.mbits as i32;
        let emin = 1 - self.bias;
        // `a` is a normal f64 (every nonzero f32 is), so this is floor(log2 a).
        let e_a = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        let mut e = e_a.max(emin);
        // Scaling by a power of two is exact; the significand in units of
        // the target's ulp at exponent `e` is then rounded half-to-even.
        let mut sig = (a * pow2(m - e)).round_ties_even();
        if sig >= pow2(m + 1) {
            // Rounded up to the next binade.
            sig *= 0.5;
            e += 1;
        }
        // `sig` is an integer in 0 ..= 2^(m+1) - 1 here.
        let sig = sig as u32;
        if e > self.emax || (e == self.emax && sig > self.max_sig) {
            return self.overflow(sign);
        }
        if sig < (1 << self.mbits) {
            // Subnormal (only possible at e == emin) or zero.
            sign | sig
        } else {
            sign | (((e + self.bias) as u32) << self.mbits) | (sig - (1 << self.mbits))
        }
    }
}

/// 2^k as an f64, for |k| well inside the normal range.
fn pow2(k: i32) -> f64 {
    let biased = (k + 1023).clamp(1, 2046) as u64;
    f64::from_bits(biased << 52)
}

/// Decodes the raw encoding `bits` (low [`Dtype::size_bits`] bits used) of
/// one element to `f32`.
#[must_use]
pub fn decode(dtype: Dtype, bits: u32) -> f32 {
    let bits = bits & dtype.mask();
    match dtype {
        Dtype::Fp32 | Dtype::Fp32r => f32::from_bits(bits),
        Dtype::Int8 => f32::from(bits as u8 as i8),
        Dtype::Uint8 => f32::from(bits as u8),
        Dtype::Int16 => f32::from(bits as u16 as i16),
        Dtype::Uint16 => f32::from(bits as u16),
        // Rounds to nearest even above 2^24.
        Dtype::Int32 => bits as i32 as f32,
        Dtype::Uint32 => bits as f32,
        Dtype::Bf16
        | Dtype::Fp16
        | Dtype::Fp8Exp3
        | Dtype::Fp8Exp4
        | Dtype::Fp8Exp5
        | Dtype::Fp4Exp2 => match dtype.minifloat() {
            Some(f) => f.decode(bits),
            None => f32::NAN,
        },
    }
}

/// Encodes `x` as one element of `dtype` (rules in the module docs); the
/// result occupies the low [`Dtype::size_bits`] bits.
#[must_use]
pub fn encode(dtype: Dtype, x: f32) -> u32 {
    // Rust's float → int `as` saturates and maps NaN to 0.
    match dtype {
        Dtype::Fp32 | Dtype::Fp32r => x.to_bits(),
        Dtype::Int8 => u32::from(x.round_ties_even() as i8 as u8),
        Dtype::Uint8 => u32::from(x.round_ties_even() as u8),
        Dtype::Int16 => u32::from(x.round_ties_even() as i16 as u16),
        Dtype::Uint16 => u32::from(x.round_ties_even() as u16),
        Dtype::Int32 => x.round_ties_even() as i32 as u32,
        Dtype::Uint32 => x.round_ties_even() as u32,
        Dtype::Bf16
        | Dtype::Fp16
        | Dtype::Fp8Exp3
        | Dtype::Fp8Exp4
        | Dtype::Fp8Exp5
        | Dtype::Fp4Exp2 => match dtype.minifloat() {
            Some(f) => f.encode(x),
            None => 0,
        },
    }
}

/// Rounds `x` to the nearest value representable in `dtype` (an
/// encode/decode round trip).
#[must_use]
pub fn quantize(dtype: Dtype, x: f32) -> f32 {
    match dtype {
        Dtype::Fp32 | Dtype::Fp32r => x,
        _ => decode(dtype, encode(dtype, x)),
    }
}

/// One encoded element: up to 4 little-endian bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementBytes {
    buf: [u8; 4],
    len: u8,
}

impl ElementBytes {
    /// The encoded bytes ([`Dtype::size_bytes`] of them).
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&self.buf)
    }
}

impl std::ops::Deref for ElementBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for ElementBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// Converts one element stored in `bytes` (exactly [`Dtype::size_bytes`]
/// bytes, little-endian; for FP4 the low nibble of the single byte) to
/// `f32`.
///
/// # Errors
/// [`CceError::BadLength`] if `bytes` has the wrong length.
pub fn to_f32(dtype: Dtype, bytes: &[u8]) -> Result<f32, CceError> {
    if bytes.len() != dtype.size_bytes() {
        return Err(CceError::BadLength {
            dtype,
            len: bytes.len(),
        });
    }
    let mut word = [0u8; 4];
    for (w, b) in word.iter_mut().zip(bytes) {
        *w = *b;
    }
    Ok(decode(dtype, u32::from_le_bytes(word)))
}

/// Converts `x` to one element of `dtype`: [`Dtype::size_bytes`]
/// little-endian bytes (FP4: one byte, value in the low nibble, high nibble
/// zero).
#[must_use]
pub fn from_f32(dtype: Dtype, x: f32) -> ElementBytes {
    ElementBytes {
        buf: encode(dtype, x).to_le_bytes(),
        len: dtype.size_bytes() as u8,
    }
}

/// Reads element `index` of an array of `dtype` elements (FP4 packed two
/// per byte, low nibble first). `None` if it lies outside `buf`.
#[must_use]
pub fn load(dtype: Dtype, buf: &[u8], index: usize) -> Option<f32> {
    if dtype.size_bits() == 4 {
        let byte = *buf.get(index / 2)?;
        let nibble = if index.is_multiple_of(2) {
            byte
        } else {
            byte >> 4
        };
        return Some(decode(dtype, u32::from(nibble & 0xF)));
    }
    let size = dtype.size_bytes();
    let start = index.checked_mul(size)?;
    let bytes = buf.get(start..start.checked_add(size)?)?;
    let mut word = [0u8; 4];
    for (w, b) in word.iter_mut().zip(bytes) {
        *w = *b;
    }
    Some(decode(dtype, u32::from_le_bytes(word)))
}

/// Writes `x` as element `index` of an array of `dtype` elements (FP4
/// packed two per byte, low nibble first; the other nibble is kept).
/// Returns `false`, changing nothing, if the element lies outside `buf`.
pub fn store(dtype: Dtype, buf: &mut [u8], index: usize, x: f32) -> bool {
    let bits = encode(dtype, x);
    if dtype.size_bits() == 4 {
        let Some(byte) = buf.get_mut(index / 2) else {
            return false;
        };
        let nibble = (bits & 0xF) as u8;
        *byte = if index.is_multiple_of(2) {
            (*byte & 0xF0) | nibble
        } else {
            (*byte & 0x0F) | (nibble << 4)
        };
        return true;
    }
    let size = dtype.size_bytes();
    let Some(start) = index.checked_mul(size) else {
        return false;
    };
    let Some(end) = start.checked_add(size) else {
        return false;
    };
    let Some(dst) = buf.get_mut(start..end) else {
        return false;
    };
    for (d, s) in dst.iter_mut().zip(bits.to_le_bytes()) {
        *d = s;
    }
    true
}
