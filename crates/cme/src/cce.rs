//! CCE in-transfer compute: elementwise `dst = op(dst, src)` with dtype
//! conversion on load and store (docs/references/wiki.md §C.6, §F).
//!
//! Arithmetic is done in `f32`: each operand is converted from its dtype
//! to `f32` (exactly, except 32-bit integers above 2²⁴), combined, and the
//! result converted to the destination dtype with the rules of
//! [`crate::dtype`]. The real datapath's internal rounding, NaN handling
//! and stochastic rounding are unpublished (§J.2) and not modelled.

use serde::{Deserialize, Serialize};

use crate::dtype::{self, Dtype};

/// Maximum elements per CCE descriptor on NC-v3 (and v4)
/// (`aws_hal_get_sdma_max_cce_elements`, docs/references/wiki.md §C.6). Not enforced by
/// [`reduce`]; the engine model checks it.
pub const CCE_MAX_ELEMENTS_V3: usize = 2048;

/// Maximum elements per CCE descriptor on NC-v2 (docs/references/wiki.md §C.6).
pub const CCE_MAX_ELEMENTS_V2: usize = 1024;

/// Maximum number of source descriptors of one CCE reduce (§C.6).
pub const CCE_MAX_SOURCES: usize = 32;

/// `SDMA_CCETYPE`, the CCE operation selector (docs/references/wiki.md §C.6, §F.1).
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
pub enum CceType {
    /// 0: `acc += src`.
    Add = 0,
    /// 1: `acc = src × scale + acc` (FP32 scale, one per source).
    Fma = 1,
    /// 2: `acc = max(acc, src)`.
    Max = 2,
    /// 3: `acc = min(acc, src)`.
    Min = 3,
    /// 4: combined multi-descriptor packet (device-only). Not modelled.
    Ext = 4,
    /// 5: gradient compress/decompress. Not modelled.
    Gce = 5,
}

impl CceType {
    /// Decodes an `SDMA_CCETYPE` value.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<CceType> {
        Some(match code {
            0 => CceType::Add,
            1 => CceType::Fma,
            2 => CceType::Max,
            3 => CceType::Min,
            4 => CceType::Ext,
            5 => CceType::Gce,
            _ => return None,
        })
    }

    /// The `SDMA_CCETYPE` value.
    #[must_use]
    pub const fn code(self) -> u8 {
        self as u8
    }
}

/// `NEURON_ISA_TPB_DGE_COMPUTE_OP`, the ISA-level `B = op(A, B)` of a
/// DMA instruction (P9.1 §2.1; docs/references/wiki.md §C.3).
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
pub enum DgeComputeOp {
    /// 0: `B = A` (plain copy).
    None = 0,
    /// 1: `B += A`.
    Add = 1,
    /// 2: `B *= A` (elementwise).
    Multiply = 2,
    /// 3: `B = max(B, A)`.
    Max = 3,
    /// 4: `B = min(B, A)`.
    Min = 4,
}

impl DgeComputeOp {
    /// Decodes the 1-byte enum.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<DgeComputeOp> {
        Some(match code {
            0 => DgeComputeOp::None,
            1 => DgeComputeOp::Add,
            2 => DgeComputeOp::Multiply,
            3 => DgeComputeOp::Max,
            4 => DgeComputeOp::Min,
            _ => return None,
        })
    }

    /// The enum value.
    #[must_use]
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The `SDMA_CCETYPE` this op runs as. `None` for NONE (a plain copy,
    /// no CCE) and for MULTIPLY, whose mapping onto the CCE is not published
    /// (FMA's scale is one scalar per source, not per element); the
    /// simulator's firmware runs MULTIPLY as an FMA with operand selectors,
    /// [`ReduceOp::MULTIPLY_AS_FMA`] (docs/cme.md §3.1).
    #[must_use]
    pub const fn cce_type(self) -> Option<CceType> {
        match self {
            DgeComputeOp::Add => Some(CceType::Add),
            DgeComputeOp::Max => Some(CceType::Max),
            DgeComputeOp::Min => Some(CceType::Min),
            DgeComputeOp::None | DgeComputeOp::Multiply => None,
        }
    }
}

/// The FP32 scale (the addend `c`) of DGE MULTIPLY computed as a CCE FMA
/// (docs/cme.md §3.1): −0.0, the additive identity of IEEE 754 (`x + −0 =
/// x` for every `x`, ±0 included), so `stored × input + c` is exactly the
/// f32 product. With +0.0 an exact −0 product would become +0.
pub const MULTIPLY_FMA_SCALE: f32 = -0.0;

/// One elementwise operation `dst' = op(dst, src)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ReduceOp {
    /// `dst' = src` (DGE NONE): conversion only.
    Copy,
    /// `dst' = dst + src` (CCE ADD, DGE ADD).
    Add,
    /// `dst' = dst × src` (DGE MULTIPLY).
    Multiply,
    /// `dst' = src × scale + dst`, fused (one rounding in `f32`) (CCE FMA
    /// with the default operand selectors a = input, b = scale,
    /// c = stored buffer).
    Fma {
        /// The descriptor's FP32 scale (W3).
        scale: f32,
    },
    /// CCE FMA with explicit operand selectors (docs/references/wiki.md §F.2–F.3: the
    /// FMA meta descriptor's W2 selects a, b, c among the stored buffer,
    /// the input and the W3 scale): `acc' = a × b + c`, fused.
    FmaSelect {
        /// First factor.
        a: FmaOperand,
        /// Second factor.
        b: FmaOperand,
        /// Addend.
        c: FmaOperand,
        /// The FP32 scale (W3).
        scale: f32,
    },
    /// `dst' = max(dst, src)` (IEEE 754-2008 maxNum: a NaN operand loses
    /// to a number).
    Max,
    /// `dst' = min(dst, src)` (minNum: a NaN operand loses to a number).
    Min,
    /// CCE EXT: not modelled, always [`CceError::Unsupported`].
    Ext,
    /// CCE GCE: not modelled, always [`CceError::Unsupported`].
    Gce,
}

impl ReduceOp {
    /// DGE MULTIPLY (`B = B × A`) as the CCE computes it, there being no
    /// CCE multiply (docs/cme.md §3.1): an FMA source whose meta descriptor
    /// selects a = the stored buffer (B), b = the input (A) and c = the scale
    /// [`MULTIPLY_FMA_SCALE`].
    pub const MULTIPLY_AS_FMA: ReduceOp = ReduceOp::FmaSelect {
        a: FmaOperand::Stored,
        b: FmaOperand::Input,
        c: FmaOperand::Scale,
        scale: MULTIPLY_FMA_SCALE,
    };

    /// The operation of a CCE descriptor of type `ty`; `scale` is used by
    /// FMA only.
    #[must_use]
    pub const fn from_cce(ty: CceType, scale: f32) -> ReduceOp {
        match ty {
            CceType::Add => ReduceOp::Add,
            CceType::Fma => ReduceOp::Fma { scale },
            CceType::Max => ReduceOp::Max,
            CceType::Min => ReduceOp::Min,
            CceType::Ext => ReduceOp::Ext,
            CceType::Gce => ReduceOp::Gce,
        }
    }

    /// Applies the operation to one element pair in `f32`. EXT and GCE
    /// (which [`reduce`] rejects before any element is touched) leave `dst`
    /// unchanged.
    #[must_use]
    pub fn apply(self, dst: f32, src: f32) -> f32 {
        match self {
            ReduceOp::Copy => src,
            ReduceOp::Add => dst + src,
            ReduceOp::Multiply => dst * src,
            ReduceOp::Fma { scale } => src.mul_add(scale, dst),
            ReduceOp::FmaSelect { a, b, c, scale } => {
                let v = |o: FmaOperand| match o {
                    FmaOperand::Stored => dst,
                    FmaOperand::Input => src,
                    FmaOperand::Scale => scale,
                };
                v(a).mul_add(v(b), v(c))
            }
            ReduceOp::Max => dst.max(src),
            ReduceOp::Min => dst.min(src),
            ReduceOp::Ext | ReduceOp::Gce => dst,
        }
    }

    /// `Err(Unsupported)` for EXT and GCE.
    fn check_supported(self) -> Result<(), CceError> {
        match self {
            ReduceOp::Ext => Err(CceError::Unsupported(CceType::Ext)),
            ReduceOp::Gce => Err(CceError::Unsupported(CceType::Gce)),
            _ => Ok(()),
        }
    }
}

/// An FMA operand selector (docs/references/wiki.md §F.3: 0 stored buffer, 1 input
/// buffer, 2 scale).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub enum FmaOperand {
    /// 0: the accumulator ("stored buffer").
    Stored,
    /// 1: the source element ("input buffer").
    Input,
    /// 2: the descriptor's FP32 scale (W3).
    Scale,
}

impl FmaOperand {
    /// The selector of a 2-bit field; `None` for the unassigned 3.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Option<FmaOperand> {
        match bits & 3 {
            0 => Some(FmaOperand::Stored),
            1 => Some(FmaOperand::Input),
            2 => Some(FmaOperand::Scale),
            _ => None,
        }
    }

    /// The 2-bit field value.
    #[must_use]
    pub const fn bits(self) -> u32 {
        match self {
            FmaOperand::Stored => 0,
            FmaOperand::Input => 1,
            FmaOperand::Scale => 2,
        }
    }
}

impl From<DgeComputeOp> for ReduceOp {
    fn from(op: DgeComputeOp) -> ReduceOp {
        match op {
            DgeComputeOp::None => ReduceOp::Copy,
            DgeComputeOp::Add => ReduceOp::Add,
            DgeComputeOp::Multiply => ReduceOp::Multiply,
            DgeComputeOp::Max => ReduceOp::Max,
            DgeComputeOp::Min => ReduceOp::Min,
        }
    }
}

/// Why a compute request was refused. Nothing is written when an error is
/// returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CceError {
    /// A dtype code that is not modelled.
    UnknownDtype(u8),
    /// A buffer whose byte length is not a whole number of `dtype`
    /// elements (or, for a single element, not [`Dtype::size_bytes`]).
    BadLength {
        /// The buffer's dtype.
        dtype: Dtype,
        /// The offending length in bytes.
        len: usize,
    },
    /// Source and destination hold different numbers of elements.
    LengthMismatch {
        /// Elements in the source.
        src_elements: usize,
        /// Elements in the destination.
        dst_elements: usize,
    },
    /// An operation the simulator does not model (EXT, GCE).
    Unsupported(CceType),
}

impl std::fmt::Display for CceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CceError::UnknownDtype(code) => write!(f, "unknown dtype code {code:#x}"),
            CceError::BadLength { dtype, len } => {
                write!(f, "{len} bytes is not a whole number of {dtype} elements")
            }
            CceError::LengthMismatch {
                src_elements,
                dst_elements,
            } => write!(
                f,
                "source has {src_elements} elements but destination has {dst_elements}"
            ),
            CceError::Unsupported(ty) => {
                write!(f, "CCE operation {ty:?} is not modelled by the simulator")
            }
        }
    }
}

impl std::error::Error for CceError {}

/// Element count of a `dtype` buffer of `len` bytes.
fn elements(dtype: Dtype, len: usize) -> Result<usize, CceError> {
    dtype
        .elements_in(len)
        .ok_or(CceError::BadLength { dtype, len })
}

/// Computes `dst[i] = op(dst[i], src[i])` for every element, reading `src`
/// as `src_dtype` and reading/writing `dst` as `dst_dtype` (the
/// accumulate/output dtype), arithmetic in `f32`. Element counts come from
/// the byte lengths. Returns the number of elements processed.
///
/// The per-descriptor element limit ([`CCE_MAX_ELEMENTS_V3`]) is the
/// caller's to enforce.
///
/// # Errors
/// [`CceError::Unsupported`] for EXT/GCE, [`CceError::BadLength`] if a
/// buffer is not a whole number of elements, [`CceError::LengthMismatch`]
/// if the element counts differ. `dst` is unchanged on error.
pub fn reduce(
    op: ReduceOp,
    src_dtype: Dtype,
    src: &[u8],
    dst_dtype: Dtype,
    dst: &mut [u8],
) -> Result<usize, CceError> {
    op.check_supported()?;
    let n = elements(src_dtype, src.len())?;
    let dst_elements = elements(dst_dtype, dst.len())?;
    if n != dst_elements {
        return Err(CceError::LengthMismatch {
            src_elements: n,
            dst_elements,
        });
    }
    for i in 0..n {
        // Both indices are in range by the counts checked above.
        let (Some(a), Some(b)) = (
            dtype::load(src_dtype, src, i),
            dtype::load(dst_dtype, dst, i),
        ) else {
            break;
        };
        dtype::store(dst_dtype, dst, i, op.apply(b, a));
    }
    Ok(n)
}

/// Like [`reduce`], with dtypes given as raw codes.
///
/// # Errors
/// [`CceError::UnknownDtype`] for an unmodelled code, then as [`reduce`].
pub fn reduce_codes(
    op: ReduceOp,
    src_dtype: u8,
    src: &[u8],
    dst_dtype: u8,
    dst: &mut [u8],
) -> Result<usize, CceError> {
    let src_dtype = Dtype::try_from(src_dtype)?;
    let dst_dtype = Dtype::try_from(dst_dtype)?;
    reduce(op, src_dtype, src, dst_dtype, dst)
}

/// The CCE's running accumulator ("stored buffer") for a multi-source
/// reduce: one source per M2S descriptor is combined into it, and the
/// source flagged `last` flushes it to the destination (docs/references/wiki.md §F.3).
///
/// The accumulator takes its element count from the first source combined
/// into it; later sources must have the same count. Values are held in
/// `f32` and rounded to the accumulate dtype after every combine (a no-op
/// for FP32/FP32R). The first source is loaded, not combined: it becomes
/// `src × scale` for FMA and `src` for every other op.
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulator {
    acc_dtype: Dtype,
    values: Vec<f32>,
    sources: usize,
}

impl Accumulator {
    /// An empty accumulator (no sources, no elements) accumulating in
    /// `acc_dtype`.
    #[must_use]
    pub const fn new(acc_dtype: Dtype) -> Accumulator {
        Accumulator {
            acc_dtype,
            values: Vec::new(),
            sources: 0,
        }
    }

    /// The accumulate dtype.
    #[must_use]
    pub const fn acc_dtype(&self) -> Dtype {
        self.acc_dtype
    }

    /// Number of elements (0 until the first source).
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when the accumulator holds no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Sources combined since creation or the last flush.
    #[must_use]
    pub const fn sources(&self) -> usize {
        self.sources
    }

    /// The current values.
    #[must_use]
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Combines one source buffer of `src_dtype` elements.
    ///
    /// # Errors
    /// [`CceError::Unsupported`] for EXT/GCE, [`CceError::BadLength`],
    /// or [`CceError::LengthMismatch`] if this is not the first source and
    /// its element count differs from [`Accumulator::len`]. Nothing changes
    /// on error.
    pub fn combine(&mut self, op: ReduceOp, src_dtype: Dtype, src: &[u8]) -> Result<(), CceError> {
        op.check_supported()?;
        let n = elements(src_dtype, src.len())?;
        let acc_dtype = self.acc_dtype;
        if self.sources == 0 {
            self.values.clear();
            for i in 0..n {
                let Some(a) = dtype::load(src_dtype, src, i) else {
                    break;
                };
                // The first source loads the accumulator: FMA forms see an
                // empty (zero) stored buffer.
                let v = match op {
                    ReduceOp::Fma { scale } => a * scale,
                    ReduceOp::FmaSelect { .. } => op.apply(0.0, a),
                    _ => a,
                };
                self.values.push(dtype::quantize(acc_dtype, v));
            }
        } else {
            if n != self.values.len() {
                return Err(CceError::LengthMismatch {
                    src_elements: n,
                    dst_elements: self.values.len(),
                });
            }
            for (i, acc) in self.values.iter_mut().enumerate() {
                let Some(a) = dtype::load(src_dtype, src, i) else {
                    break;
                };
                *acc = dtype::quantize(acc_dtype, op.apply(*acc, a));
            }
        }
        self.sources = self.sources.saturating_add(1);
        Ok(())
    }

    /// Writes the accumulator to `dst` as `out_dtype` elements and empties
    /// it (no elements, source count 0). Returns the element count.
    ///
    /// # Errors
    /// [`CceError::BadLength`] or [`CceError::LengthMismatch`] if `dst`
    /// does not hold exactly [`Accumulator::len`] elements; nothing changes.
    pub fn flush(&mut self, out_dtype: Dtype, dst: &mut [u8]) -> Result<usize, CceError> {
        let n = elements(out_dtype, dst.len())?;
        if n != self.values.len() {
            return Err(CceError::LengthMismatch {
                src_elements: self.values.len(),
                dst_elements: n,
            });
        }
        for (i, v) in self.values.iter().enumerate() {
            dtype::store(out_dtype, dst, i, *v);
        }
        self.values.clear();
        self.sources = 0;
        Ok(n)
    }
}
