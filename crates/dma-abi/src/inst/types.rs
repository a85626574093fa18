//! The shared building blocks of the six words, typed and validated (P9.1
//! §2.1; docs/references/wiki.md §C.3, §E.7): HEADER, EVENTS and their mode enums,
//! DMA_CONFIGS, BOUND_CHECK_REG, DGE_COMPUTE_OP, DTYPE and DTYPE_PAIR,
//! DMA_INDIRECT_FLAGS, the GATHER_TRANSPOSE flags, EXT_COMPLETION_INFO and
//! IMM_VAL_INST_FIELD.
//!
//! Enums whose published value list is complete (compute op, indirect mode,
//! dims) reject other codes; the WAIT_MODE / UPDATE_MODE / DTYPE lists are
//! published only in part, so unlisted codes decode to `Other(code)` and
//! re-encode unchanged.

use serde::{Serialize, Serializer};
use zerocopy::little_endian::U32;

use super::field::{Problem, Scalar, Wire, group_text, read_unsigned, scalar_text};
use super::raw::{RawEvents, RawHeader};

/// An enum whose codes are all published: other codes are invalid.
macro_rules! closed_enum {
    (
        $(#[$doc:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vdoc:meta])* $var:ident = $code:literal => $text:literal, )*
        }
        zero = $zero:ident;
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $var, )*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [Self] = &[$(Self::$var),*];

            /// The value with wire code `code`, if there is one.
            #[must_use]
            pub const fn from_code(code: u8) -> Option<Self> {
                match code {
                    $( $code => Some(Self::$var), )*
                    _ => None,
                }
            }

            /// The wire code.
            #[must_use]
            pub const fn code(self) -> u8 {
                match self {
                    $( Self::$var => $code, )*
                }
            }

            /// The published name.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$var => $text, )*
                }
            }

            /// The valid codes as `valid: 0 NAME, 1 NAME, …` (error messages).
            #[must_use]
            pub fn valid() -> String {
                let list: Vec<String> = Self::ALL
                    .iter()
                    .map(|v| format!("{} {}", v.code(), v.name()))
                    .collect();
                format!("valid: {}", list.join(", "))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$zero
            }
        }

        impl Scalar for $name {
            fn zero() -> Self {
                Self::$zero
            }
            fn show(&self) -> String {
                self.name().to_string()
            }
            fn read(text: &str) -> Result<Self, String> {
                if let Some(v) = Self::ALL.iter().find(|v| v.name().eq_ignore_ascii_case(text)) {
                    return Ok(*v);
                }
                let expected = || {
                    let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                    format!(concat!($what, ": {} or its code"), names.join(", "))
                };
                let code = read_unsigned(text, 0xFF, $what).map_err(|_| expected())?;
                Self::from_code(code as u8).ok_or_else(expected)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                schemars::json_schema!({ "type": "string", "enum": names })
            }
        }

        scalar_text!($name);
    };
}

/// An enum published only in part: unlisted codes are kept as `Other`.
macro_rules! open_enum {
    (
        $(#[$doc:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vdoc:meta])* $var:ident = $code:literal => $text:literal, )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $var, )*
            /// A code not in the published list, kept as is. Build values
            /// with [`Self::from_code`] so a published code is never held here.
            Other(u8),
        }

        impl $name {
            /// Every published value, in code order.
            pub const NAMED: &'static [Self] = &[$(Self::$var),*];

            /// The value with wire code `code` (any byte).
            #[must_use]
            pub const fn from_code(code: u8) -> Self {
                match code {
                    $( $code => Self::$var, )*
                    c => Self::Other(c),
                }
            }

            /// The wire code.
            #[must_use]
            pub const fn code(self) -> u8 {
                match self {
                    $( Self::$var => $code, )*
                    Self::Other(c) => c,
                }
            }

            /// The published name, if the code has one.
            #[must_use]
            pub const fn name(self) -> Option<&'static str> {
                match self {
                    $( Self::$var => Some($text), )*
                    Self::Other(_) => None,
                }
            }
        }

        impl Default for $name {
            /// Code 0.
            fn default() -> Self {
                Self::from_code(0)
            }
        }

        impl Scalar for $name {
            fn zero() -> Self {
                Self::from_code(0)
            }
            fn show(&self) -> String {
                match self.name() {
                    Some(n) => n.to_string(),
                    None => format!("{:#04x}", self.code()),
                }
            }
            fn read(text: &str) -> Result<Self, String> {
                if let Some(v) = Self::NAMED
                    .iter()
                    .find(|v| v.name().is_some_and(|n| n.eq_ignore_ascii_case(text)))
                {
                    return Ok(*v);
                }
                let code = read_unsigned(text, 0xFF, $what).map_err(|_| {
                    let names: Vec<&str> = Self::NAMED.iter().filter_map(|v| v.name()).collect();
                    format!(concat!($what, ": {} or a code 0..=255"), names.join(", "))
                })?;
                Ok(Self::from_code(code as u8))
            }
        }

        /// The published name, or the code as every JSON number is
        /// written (`0x5`, docs/user-guide.md §JSON outputs).
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self.name() {
                    Some(n) => s.serialize_str(n),
                    None => s.collect_str(&soc_map::Hex(u64::from(self.code()))),
                }
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let names: Vec<&str> = Self::NAMED.iter().filter_map(|v| v.name()).collect();
                schemars::json_schema!({
                    "type": "string",
                    "anyOf": [{ "enum": names }, { "pattern": soc_map::HEX_PATTERN }],
                })
            }
        }

        scalar_text!($name);
    };
}

// ---- HEADER -----------------------------------------------------------------

closed_enum! {
    /// `header.inst_word_len`: the word's length. P9.1 reads it in
    /// 16-byte records (4), docs/references/wiki.md §C.3 in dwords (0x10); both describe
    /// the same 64 bytes and both are accepted (docs/references/design.md §8). The assembler
    /// emits 4 unless told otherwise.
    pub enum InstWordLen ("an inst_word_len") {
        /// 4: four 16-byte records (P9.1).
        Records = 4 => "4",
        /// 0x10: sixteen 4-byte dwords (docs/references/wiki.md §C.3).
        Dwords = 0x10 => "16",
    }
    zero = Records;
}

/// `NEURON_ISA_TPB_HEADER` without the opcode (which the word's kind fixes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Header {
    /// +1.
    pub inst_word_len: InstWordLen,
    /// +2.
    pub debug_cmd: u8,
    /// +3.
    pub debug_hint: u8,
}

impl Default for Header {
    fn default() -> Self {
        super::field::Text::initial()
    }
}

group_text!(Header {
    inst_word_len,
    debug_cmd,
    debug_hint
});

impl Wire for Header {
    type Raw = RawHeader;
    /// Ignores the opcode: the word's decoder has checked it.
    fn from_raw(raw: RawHeader) -> Result<Self, Problem> {
        let inst_word_len = InstWordLen::from_code(raw.inst_word_len).ok_or_else(|| {
            Problem::new(
                raw.inst_word_len,
                "valid 4 (16-byte records) or 0x10 (dwords)",
            )
            .at("inst_word_len")
        })?;
        Ok(Self {
            inst_word_len,
            debug_cmd: raw.debug_cmd,
            debug_hint: raw.debug_hint,
        })
    }
    /// Opcode 0: the word's encoder sets it.
    fn to_raw(&self) -> Result<RawHeader, Problem> {
        Ok(RawHeader {
            opcode: 0,
            inst_word_len: self.inst_word_len.code(),
            debug_cmd: self.debug_cmd,
            debug_hint: self.debug_hint,
        })
    }
}

// ---- EVENTS -----------------------------------------------------------------

open_enum! {
    /// `NEURON_ISA_TPB_WAIT_MODE`, the published values (docs/references/wiki.md §C.3).
    /// 0x81/0x84/0x85 compare against a register threshold; their names are
    /// the simulator's (the wiki gives only "the same compares").
    pub enum WaitMode ("a wait_mode") {
        /// 0x00: no wait.
        None = 0x00 => "NONE",
        /// 0x01: semaphore == semaphore_value.
        SemEqImm = 0x01 => "WAIT_FOR_SEM_EQ_IMM",
        /// 0x04: semaphore > semaphore_value (strictly greater).
        SemGtImm = 0x04 => "WAIT_FOR_SEM_GT_IMM",
        /// 0x05: semaphore >= semaphore_value.
        SemGeImm = 0x05 => "WAIT_FOR_SEM_GE_IMM",
        /// 0x81: == against a register threshold.
        SemEqReg = 0x81 => "WAIT_FOR_SEM_EQ_REG",
        /// 0x84: > against a register threshold.
        SemGtReg = 0x84 => "WAIT_FOR_SEM_GT_REG",
        /// 0x85: >= against a register threshold.
        SemGeReg = 0x85 => "WAIT_FOR_SEM_GE_REG",
    }
}

open_enum! {
    /// `NEURON_ISA_TPB_UPDATE_MODE`, the published values (docs/references/wiki.md §C.3).
    pub enum UpdateMode ("an update_mode") {
        /// 0x00: no update.
        None = 0x00 => "NONE",
        /// 0x03: increment on read-complete.
        SemIncRead = 0x03 => "SEM_INC_READ",
        /// 0x13: increment on completion.
        SemIncComplete = 0x13 => "SEM_INC_COMPLETE",
        /// 0x15: add semaphore_value on completion.
        SemAddImmComplete = 0x15 => "SEM_ADD_IMM_COMPLETE",
        /// 0x99: write a register value on completion.
        SemWrRegComplete = 0x99 => "SEM_WR_REG_COMPLETE",
    }
}

/// `NEURON_ISA_TPB_EVENTS`: wait before issue, update after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct Events {
    /// +0.
    pub wait_mode: WaitMode,
    /// +1: the semaphore waited on.
    pub wait_idx: u8,
    /// +2.
    pub update_mode: UpdateMode,
    /// +3: the semaphore updated.
    pub update_idx: u8,
    /// +4: the wait threshold / update value.
    pub semaphore_value: u32,
}

group_text!(Events {
    wait_mode,
    wait_idx,
    update_mode,
    update_idx,
    semaphore_value
});

impl Wire for Events {
    type Raw = RawEvents;
    fn from_raw(raw: RawEvents) -> Result<Self, Problem> {
        Ok(Self {
            wait_mode: WaitMode::from_code(raw.wait_mode),
            wait_idx: raw.wait_idx,
            update_mode: UpdateMode::from_code(raw.update_mode),
            update_idx: raw.update_idx,
            semaphore_value: raw.semaphore_value.get(),
        })
    }
    fn to_raw(&self) -> Result<RawEvents, Problem> {
        Ok(RawEvents {
            wait_mode: self.wait_mode.code(),
            wait_idx: self.wait_idx,
            update_mode: self.update_mode.code(),
            update_idx: self.update_idx,
            semaphore_value: U32::new(self.semaphore_value),
        })
    }
}

// ---- DMA_CONFIGS --------------------------------------------------------------

/// Highest valid `priority_class` (docs/references/wiki.md §D.4: the host gate bounds the
/// class index by 4).
pub const MAX_PRIORITY_CLASS: u8 = 4;

/// `NEURON_ISA_TPB_DMA_CONFIGS`: priority_class bits 2:0 (0..=4), reserved
/// bits 7:3 = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct DmaConfigs {
    /// The QoS class 0..=4.
    pub priority_class: u8,
}

group_text!(DmaConfigs { priority_class });

impl Wire for DmaConfigs {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        let priority_class = raw & 0x7;
        if priority_class > MAX_PRIORITY_CLASS {
            return Err(Problem::new(priority_class, "valid 0..=4").at("priority_class"));
        }
        if raw >> 3 != 0 {
            return Err(
                Problem::new(format!("{:#04x}", raw >> 3), "bits 7:3 must be zero").at("reserved"),
            );
        }
        Ok(Self { priority_class })
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        fits(self.priority_class, 3, "priority_class")?;
        Ok(self.priority_class)
    }
}

/// Checks that `value` fits `bits` bits.
fn fits(value: u8, bits: u32, name: &str) -> Result<(), Problem> {
    if u32::from(value) >> bits != 0 {
        return Err(Problem::new(value, format!("does not fit {bits} bits")).at(name));
    }
    Ok(())
}

// ---- BOUND_CHECK_REG ------------------------------------------------------------

/// `NEURON_ISA_TPB_BOUND_CHECK_REG`: the per-descriptor bound gate.
///
/// Valid iff fully inert (all zero) or enabled — except enabled with
/// `bc_reg` 0 and the OOB notification on (docs/references/wiki.md §C.3; P9.1 §2.1,
/// `has_valid_bound_check_reg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct BoundCheckReg {
    /// bits 5:0: the register holding the upper bound (wide offsets: and
    /// `bc_reg + 1` the high 32 bits).
    pub bc_reg: u8,
    /// bit 6: suppress the out-of-bounds error notification.
    pub bc_disable_oob_error_notif: bool,
    /// bit 7: the gate is armed.
    pub bc_enabled: bool,
}

group_text!(BoundCheckReg {
    bc_reg,
    bc_disable_oob_error_notif,
    bc_enabled
});

impl BoundCheckReg {
    /// The inert gate (all zero).
    pub const INERT: Self = Self {
        bc_reg: 0,
        bc_disable_oob_error_notif: false,
        bc_enabled: false,
    };

    /// An armed gate on register `reg` with notification on.
    #[must_use]
    pub const fn enabled(reg: u8) -> Self {
        Self {
            bc_reg: reg,
            bc_disable_oob_error_notif: false,
            bc_enabled: true,
        }
    }
}

impl Wire for BoundCheckReg {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        let v = Self {
            bc_reg: raw & 0x3F,
            bc_disable_oob_error_notif: raw & 0x40 != 0,
            bc_enabled: raw & 0x80 != 0,
        };
        // Written out only for an error (every decode of a word checks
        // its gates).
        let shown = || format!("{raw:#04x}");
        if !v.bc_enabled && raw != 0 {
            return Err(Problem::new(
                shown(),
                format!(
                    "bc_enabled = 0 with bc_reg = {} and bc_disable_oob_error_notif = {}: \
                     a disabled gate must be all zero",
                    v.bc_reg,
                    u8::from(v.bc_disable_oob_error_notif)
                ),
            ));
        }
        if v.bc_enabled && v.bc_reg == 0 && !v.bc_disable_oob_error_notif {
            return Err(Problem::new(
                shown(),
                "bc_enabled = 1 with bc_reg = 0 and the OOB notification on is invalid",
            ));
        }
        Ok(v)
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        fits(self.bc_reg, 6, "bc_reg")?;
        Ok(self.bc_reg
            | (u8::from(self.bc_disable_oob_error_notif) << 6)
            | (u8::from(self.bc_enabled) << 7))
    }
}

// ---- DGE_COMPUTE_OP -------------------------------------------------------------

closed_enum! {
    /// `NEURON_ISA_TPB_DGE_COMPUTE_OP`: B = op(A, B); anything but NONE
    /// routes the transfer through the CCE path.
    pub enum ComputeOp ("a compute_op") {
        /// 0: B = A (plain copy).
        None = 0 => "NONE",
        /// 1: B += A.
        Add = 1 => "ADD",
        /// 2: B *= A.
        Multiply = 2 => "MULTIPLY",
        /// 3: B = max(A, B).
        Max = 3 => "MAX",
        /// 4: B = min(A, B).
        Min = 4 => "MIN",
    }
    zero = None;
}

impl Wire for ComputeOp {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        Self::from_code(raw).ok_or_else(|| Problem::new(raw, Self::valid()))
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        Ok(self.code())
    }
}

// ---- DTYPE ------------------------------------------------------------------------

/// `NEURON_ISA_TPB_DTYPE`, the codes of docs/references/wiki.md §C.3. Codes the page does
/// not list (0x0, 0x1, 0x4, 0x5, 0x9, 0xC, …) are kept as `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 0x2.
    Int8,
    /// 0x3.
    Uint8,
    /// 0x6.
    Bfloat16,
    /// 0x7.
    Fp16,
    /// 0x8.
    Int32,
    /// 0xA.
    Fp32,
    /// 0xB (the device size table gives it 0 bytes, docs/references/wiki.md §C.6).
    Fp32r,
    /// 0xD.
    Fp8Exp3,
    /// 0xE.
    Fp8Exp4,
    /// 0xF.
    Fp8Exp5,
    /// 0x10.
    Fp4Exp2,
    /// 0x19..=0x1F: the CPTC trellis types (individual names unpublished).
    CptcTrellis(u8),
    /// Any other code, kept as is (code 0 is the default of an omitted
    /// field). Build values with [`Self::from_code`] so a published code is
    /// never held here.
    Other(u8),
}

impl Default for Dtype {
    fn default() -> Self {
        Self::Other(0)
    }
}

const DTYPE_NAMES: &[(u8, &str)] = &[
    (0x2, "INT8"),
    (0x3, "UINT8"),
    (0x6, "BFLOAT16"),
    (0x7, "FP16"),
    (0x8, "INT32"),
    (0xA, "FP32"),
    (0xB, "FP32R"),
    (0xD, "FP8_EXP3"),
    (0xE, "FP8_EXP4"),
    (0xF, "FP8_EXP5"),
    (0x10, "FP4_EXP2"),
];

impl Dtype {
    /// The value with wire code `code` (any byte).
    #[must_use]
    pub const fn from_code(code: u8) -> Self {
        match code {
            0x2 => Self::Int8,
            0x3 => Self::Uint8,
            0x6 => Self::Bfloat16,
            0x7 => Self::Fp16,
            0x8 => Self::Int32,
            0xA => Self::Fp32,
            0xB => Self::Fp32r,
            0xD => Self::Fp8Exp3,
            0xE => Self::Fp8Exp4,
            0xF => Self::Fp8Exp5,
            0x10 => Self::Fp4Exp2,
            0x19..=0x1F => Self::CptcTrellis(code),
            c => Self::Other(c),
        }
    }

    /// The wire code.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Int8 => 0x2,
            Self::Uint8 => 0x3,
            Self::Bfloat16 => 0x6,
            Self::Fp16 => 0x7,
            Self::Int32 => 0x8,
            Self::Fp32 => 0xA,
            Self::Fp32r => 0xB,
            Self::Fp8Exp3 => 0xD,
            Self::Fp8Exp4 => 0xE,
            Self::Fp8Exp5 => 0xF,
            Self::Fp4Exp2 => 0x10,
            Self::CptcTrellis(c) | Self::Other(c) => c,
        }
    }

    /// The published name, if the code has one (CPTC types read
    /// `CPTC_TRELLIS_19` … `CPTC_TRELLIS_1F` in the text form).
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        DTYPE_NAMES
            .iter()
            .find(|(c, _)| *c == self.code())
            .map(|(_, n)| *n)
    }
}

impl Scalar for Dtype {
    fn zero() -> Self {
        Self::Other(0)
    }
    fn show(&self) -> String {
        match (self.name(), self) {
            (Some(n), _) => n.to_string(),
            (None, Self::CptcTrellis(c)) => format!("CPTC_TRELLIS_{c:02X}"),
            (None, _) => format!("{:#04x}", self.code()),
        }
    }
    fn read(text: &str) -> Result<Self, String> {
        if let Some((c, _)) = DTYPE_NAMES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(text))
        {
            return Ok(Self::from_code(*c));
        }
        let upper = text.to_ascii_uppercase();
        if let Some(hex) = upper.strip_prefix("CPTC_TRELLIS_")
            && let Ok(c @ 0x19..=0x1F) = u8::from_str_radix(hex, 16)
        {
            return Ok(Self::CptcTrellis(c));
        }
        let code = read_unsigned(text, 0xFF, "a dtype").map_err(|_| {
            let names: Vec<&str> = DTYPE_NAMES.iter().map(|(_, n)| *n).collect();
            format!(
                "a dtype: {}, CPTC_TRELLIS_19..CPTC_TRELLIS_1F, or a code 0..=255",
                names.join(", ")
            )
        })?;
        Ok(Self::from_code(code as u8))
    }
}

/// The text form's name, or the code as every JSON number is written.
impl Serialize for Dtype {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.name(), self) {
            (None, Self::Other(c)) => s.collect_str(&soc_map::Hex(u64::from(*c))),
            _ => s.serialize_str(&self.show()),
        }
    }
}

impl schemars::JsonSchema for Dtype {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Dtype".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = DTYPE_NAMES.iter().map(|(_, n)| *n).collect();
        schemars::json_schema!({
            "type": "string",
            "anyOf": [
                { "enum": names },
                { "pattern": "^CPTC_TRELLIS_1[9A-F]$" },
                { "pattern": soc_map::HEX_PATTERN },
            ],
        })
    }
}

scalar_text!(Dtype);

impl Wire for Dtype {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        Ok(Self::from_code(raw))
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        Ok(self.code())
    }
}

/// `NEURON_ISA_TPB_DTYPE_PAIR`: dtype_lo bits 3:0 (source), dtype_hi bits 7:4
/// (destination). Only codes 0..=15 fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct DtypePair {
    /// bits 3:0: the source dtype.
    pub dtype_lo: Dtype,
    /// bits 7:4: the destination dtype.
    pub dtype_hi: Dtype,
}

group_text!(DtypePair { dtype_lo, dtype_hi });

impl Wire for DtypePair {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        Ok(Self {
            dtype_lo: Dtype::from_code(raw & 0xF),
            dtype_hi: Dtype::from_code(raw >> 4),
        })
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        fits(self.dtype_lo.code(), 4, "dtype_lo")?;
        fits(self.dtype_hi.code(), 4, "dtype_hi")?;
        Ok(self.dtype_lo.code() | (self.dtype_hi.code() << 4))
    }
}

// ---- DMA_INDIRECT_FLAGS --------------------------------------------------------------

closed_enum! {
    /// `flags.indirect_mode` of INDIRECT1D (docs/references/wiki.md §C.3, §G.1).
    pub enum IndirectMode ("an indirect_mode") {
        /// 0: the index applies to the source (gather).
        SrcIndirection = 0 => "SRC_INDIRECTION",
        /// 1: the index applies to the destination (scatter).
        DstIndirection = 1 => "DST_INDIRECTION",
        /// 2: both, with two independent index vectors.
        SrcDstIndirection = 2 => "SRC_DST_INDIRECTION",
    }
    zero = SrcIndirection;
}

closed_enum! {
    /// `INDIRECT_DIM`: the permuted axis, minor to major (X fastest).
    pub enum IndirectDim ("a dim") {
        /// 0.
        X = 0 => "X",
        /// 1.
        Y = 1 => "Y",
        /// 2.
        Z = 2 => "Z",
        /// 3.
        W = 3 => "W",
    }
    zero = X;
}

impl IndirectDim {
    const fn from_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => Self::X,
            1 => Self::Y,
            2 => Self::Z,
            _ => Self::W,
        }
    }
}

/// `NEURON_ISA_TPB_DMA_INDIRECT_FLAGS` (INDIRECT1D byte 15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct IndirectFlags {
    /// bits 1:0: gather, scatter or both (3 is invalid).
    pub indirect_mode: IndirectMode,
    /// bit 2: an out-of-bounds index is an error (else it is skipped).
    pub idx_bound_is_err: bool,
    /// bit 3: duplicate destination indices allowed (scatter-add with a
    /// compute op).
    pub non_unique_dst_idx: bool,
    /// bits 5:4.
    pub gather_dim: IndirectDim,
    /// bits 7:6.
    pub scatter_dim: IndirectDim,
}

impl Default for IndirectFlags {
    fn default() -> Self {
        super::field::Text::initial()
    }
}

group_text!(IndirectFlags {
    indirect_mode,
    idx_bound_is_err,
    non_unique_dst_idx,
    gather_dim,
    scatter_dim
});

impl Wire for IndirectFlags {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        let mode = raw & 3;
        let indirect_mode = IndirectMode::from_code(mode)
            .ok_or_else(|| Problem::new(mode, IndirectMode::valid()).at("indirect_mode"))?;
        Ok(Self {
            indirect_mode,
            idx_bound_is_err: raw & 0x4 != 0,
            non_unique_dst_idx: raw & 0x8 != 0,
            gather_dim: IndirectDim::from_bits(raw >> 4),
            scatter_dim: IndirectDim::from_bits(raw >> 6),
        })
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        Ok(self.indirect_mode.code()
            | (u8::from(self.idx_bound_is_err) << 2)
            | (u8::from(self.non_unique_dst_idx) << 3)
            | (self.gather_dim.code() << 4)
            | (self.scatter_dim.code() << 6))
    }
}

/// `NEURON_ISA_TPB_DMA_GATHER_TRANSPOSE_FLAGS` (GATHER_XPOSE byte 63):
/// gather_dim bits 1:0, reserved bits 7:2 = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct GatherXposeFlags {
    /// bits 1:0 (the firmware requires Y, checked at execution).
    pub gather_dim: IndirectDim,
}

group_text!(GatherXposeFlags { gather_dim });

impl Wire for GatherXposeFlags {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        if raw >> 2 != 0 {
            return Err(
                Problem::new(format!("{:#04x}", raw >> 2), "bits 7:2 must be zero").at("reserved"),
            );
        }
        Ok(Self {
            gather_dim: IndirectDim::from_bits(raw),
        })
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        Ok(self.gather_dim.code())
    }
}

// ---- EXT_COMPLETION_INFO ------------------------------------------------------------

/// `NEURON_ISA_TPB_EXT_COMPLETION_INFO` (byte 13 of the EXTENDED words):
/// has_read bit 0, reserved bit 1 = 0, has_write bit 2, num_active_ports bits 5:3
/// (0 = 8 ports = 128 partitions; n = n ports of 16 partitions), reserved
/// bits 7:6 = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
pub struct CompletionInfo {
    /// bit 0.
    pub has_read: bool,
    /// bit 2.
    pub has_write: bool,
    /// bits 5:3, 0..=7.
    pub num_active_ports: u8,
}

group_text!(CompletionInfo {
    has_read,
    has_write,
    num_active_ports
});

impl Wire for CompletionInfo {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        let reserved = raw & 0b1100_0010;
        if reserved != 0 {
            return Err(
                Problem::new(format!("{reserved:#04x}"), "bits 1 and 7:6 must be zero")
                    .at("reserved"),
            );
        }
        Ok(Self {
            has_read: raw & 1 != 0,
            has_write: raw & 4 != 0,
            num_active_ports: (raw >> 3) & 7,
        })
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        fits(self.num_active_ports, 3, "num_active_ports")?;
        Ok(
            u8::from(self.has_read)
                | (u8::from(self.has_write) << 2)
                | (self.num_active_ports << 3),
        )
    }
}

// ---- IMM_VAL_INST_FIELD ---------------------------------------------------------------

/// `NEURON_ISA_TPB_IMM_VAL_INST_FIELD` (docs/references/wiki.md §E.7): a 4-byte union
/// (partition-offset pointer, `{regnum, reservedbit 3}`, fp32, int32/uint32,
/// uint16bit 2, uint8bit 4). The RDMA GEN word has no selector byte; its three
/// IMM fields are kept as the raw 32-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ImmVal(pub u32);

impl Scalar for ImmVal {
    fn zero() -> Self {
        Self(0)
    }
    fn show(&self) -> String {
        format!("{:#x}", self.0)
    }
    fn read(text: &str) -> Result<Self, String> {
        read_unsigned(text, u64::from(u32::MAX), "a 32-bit immediate").map(|v| Self(v as u32))
    }
}

scalar_text!(ImmVal);

impl Serialize for ImmVal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ImmVal", 2)?;
        st.serialize_field("raw", &soc_map::Hex32(self.0))?;
        st.serialize_field("uint32", &self.0)?;
        st.end()
    }
}

impl schemars::JsonSchema for ImmVal {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ImmVal".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let raw = generator.subschema_for::<soc_map::Hex32>();
        schemars::json_schema!({
            "type": "object",
            "properties": { "raw": raw, "uint32": { "type": "integer", "minimum": 0, "maximum": 4294967295u64 } },
            "required": ["raw", "uint32"],
        })
    }
}

impl Wire for ImmVal {
    type Raw = U32;
    fn from_raw(raw: U32) -> Result<Self, Problem> {
        Ok(Self(raw.get()))
    }
    fn to_raw(&self) -> Result<U32, Problem> {
        Ok(U32::new(self.0))
    }
}
