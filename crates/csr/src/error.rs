//! Errors: a bad map (infrastructure, reported when loading) and a bad access
//! offset (reported to the register file's owner, who decides what it means).

use std::fmt;

/// A CSR map that failed to load. Boxed (errors are rare, `Result`s stay
/// small); the details are reachable through `Deref`: `err.register`,
/// `err.kind`, ….
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrMapError(Box<CsrMapErrorDetails>);

impl CsrMapError {
    /// Wraps the details.
    pub fn new(details: CsrMapErrorDetails) -> CsrMapError {
        CsrMapError(Box::new(details))
    }

    /// The details, unboxed.
    pub fn into_details(self) -> CsrMapErrorDetails {
        *self.0
    }
}

impl From<CsrMapErrorDetails> for CsrMapError {
    fn from(details: CsrMapErrorDetails) -> CsrMapError {
        CsrMapError::new(details)
    }
}

impl std::ops::Deref for CsrMapError {
    type Target = CsrMapErrorDetails;
    fn deref(&self) -> &CsrMapErrorDetails {
        &self.0
    }
}

/// Where a map error is (file, block, register, field, JSON path) and what
/// is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrMapErrorDetails {
    /// The name the text was loaded under, e.g. `csr-maps/udma_m2s_q.json`.
    pub source_name: String,
    /// The block name, once the document parsed far enough to know it.
    pub block: Option<String>,
    /// The register (element name for array overlaps), if the error is in one.
    pub register: Option<String>,
    /// The field, if the error is in one.
    pub field: Option<String>,
    /// JSON path of the offending value, e.g. `registers[3].fields[1].bits`
    /// (empty for errors about the whole document).
    pub path: String,
    /// What is wrong.
    pub kind: CsrMapErrorKind,
}

/// What is wrong with a map.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CsrMapErrorKind {
    /// Malformed JSON, an unknown key, a missing key or a bad number (serde's
    /// message and position).
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde's description.
        message: String,
    },
    /// A block, register, field or alias name with the wrong spelling.
    BadName {
        /// The name as written.
        name: String,
        /// The expected form.
        expected: &'static str,
    },
    /// Two registers, two fields of one register, or two aliases share a name.
    DuplicateName {
        /// The repeated name.
        name: String,
        /// JSON path of the first use.
        first: String,
    },
    /// The built-in map's `block` differs from its file name.
    BlockNameMismatch {
        /// The name the catalog expected.
        expected: String,
    },
    /// Block size zero, not a multiple of 4, or above the 1 MiB limit.
    BadBlockSize {
        /// The declared size.
        size: u64,
    },
    /// A register offset or array stride that is not a multiple of 4.
    Misaligned {
        /// The offending value.
        value: u64,
    },
    /// An array with count 0, a stride below 4, or a bad `skip` list.
    BadArray {
        /// Why.
        reason: String,
    },
    /// A register element that does not fit inside the block.
    OutsideBlock {
        /// The element's byte offset.
        offset: u64,
        /// The block size.
        size: u64,
    },
    /// Two register elements at the same offset.
    Overlap {
        /// The element already at that offset.
        other: String,
        /// The shared byte offset.
        offset: u64,
    },
    /// An access kind that is not one of RW, RO, WO, W1C, W0C, RC, INC, DEC.
    UnknownAccess {
        /// The text as written.
        text: String,
    },
    /// A `bits` string that is not `N` or `H:L` with 31 >= H >= L.
    BadBits {
        /// The text as written.
        text: String,
        /// Why.
        reason: &'static str,
    },
    /// Two fields of one register share bits.
    FieldOverlap {
        /// The field declared first.
        other: String,
        /// The shared bits.
        bits: u32,
    },
    /// A register reset value wider than 32 bits.
    ResetTooWide {
        /// The declared value.
        value: u64,
    },
    /// A field reset value wider than the field.
    FieldResetTooWide {
        /// The declared value.
        value: u64,
        /// The field width in bits.
        width: u32,
    },
    /// A register reset value with 1-bits where no field is declared.
    ResetOutsideFields {
        /// The declared reset value.
        reset: u32,
        /// Its bits that fall outside every field.
        bits: u32,
    },
    /// A field reset that disagrees with the register reset.
    ResetMismatch {
        /// The field value implied by the register reset.
        from_register: u32,
        /// The field's own reset.
        from_field: u32,
    },
    /// A reset value with 1-bits in WO/INC/DEC positions (those always read 0).
    ResetOnWriteOnlyBits {
        /// The offending bits.
        bits: u32,
    },
    /// More than one INC/DEC field in one register.
    MultipleDeltaFields {
        /// The INC/DEC field declared first.
        other: String,
    },
    /// A malformed or clashing alias.
    BadAlias {
        /// The alias as written.
        alias: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for CsrMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Display for CsrMapErrorDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source_name)?;
        if let Some(block) = &self.block {
            write!(f, ": block `{block}`")?;
        }
        if let Some(register) = &self.register {
            write!(f, ", register `{register}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        if !self.path.is_empty() {
            write!(f, " (at `{}`)", self.path)?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl fmt::Display for CsrMapErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsrMapErrorKind::Json {
                line,
                column,
                message,
            } => write!(
                f,
                "invalid map JSON at line {line} column {column}: {message}"
            ),
            CsrMapErrorKind::BadName { name, expected } => {
                write!(f, "name `{name}` is not {expected}")
            }
            CsrMapErrorKind::DuplicateName { name, first } => {
                write!(f, "duplicate name `{name}` (first used at `{first}`)")
            }
            CsrMapErrorKind::BlockNameMismatch { expected } => {
                write!(f, "block name differs from the file name `{expected}`")
            }
            CsrMapErrorKind::BadBlockSize { size } => write!(
                f,
                "block size {size:#x} must be a non-zero multiple of 4 no larger than 0x100000"
            ),
            CsrMapErrorKind::Misaligned { value } => {
                write!(
                    f,
                    "{value:#x} is not a multiple of 4 (registers are 32-bit)"
                )
            }
            CsrMapErrorKind::BadArray { reason } => write!(f, "bad array: {reason}"),
            CsrMapErrorKind::OutsideBlock { offset, size } => write!(
                f,
                "register at {offset:#x} does not fit in the block (size {size:#x})"
            ),
            CsrMapErrorKind::Overlap { other, offset } => {
                write!(f, "overlaps register `{other}` at {offset:#x}")
            }
            CsrMapErrorKind::UnknownAccess { text } => write!(
                f,
                "unknown access kind `{text}` (expected one of RW, RO, WO, W1C, W0C, RC, INC, DEC)"
            ),
            CsrMapErrorKind::BadBits { text, reason } => {
                write!(f, "bad bit range `{text}`: {reason}")
            }
            CsrMapErrorKind::FieldOverlap { other, bits } => {
                write!(f, "shares bits {bits:#010x} with field `{other}`")
            }
            CsrMapErrorKind::ResetTooWide { value } => {
                write!(f, "reset value {value:#x} does not fit in 32 bits")
            }
            CsrMapErrorKind::FieldResetTooWide { value, width } => {
                write!(f, "reset value {value:#x} does not fit in {width} bit(s)")
            }
            CsrMapErrorKind::ResetOutsideFields { reset, bits } => write!(
                f,
                "reset value {reset:#010x} sets bits {bits:#010x} outside every field (reserved bits must reset to 0)"
            ),
            CsrMapErrorKind::ResetMismatch {
                from_register,
                from_field,
            } => write!(
                f,
                "field reset {from_field:#x} disagrees with the register reset (which gives {from_register:#x})"
            ),
            CsrMapErrorKind::ResetOnWriteOnlyBits { bits } => write!(
                f,
                "reset value sets bits {bits:#010x} of WO/INC/DEC fields, which always read 0"
            ),
            CsrMapErrorKind::MultipleDeltaFields { other } => write!(
                f,
                "a register may have one INC/DEC field; `{other}` is already one"
            ),
            CsrMapErrorKind::BadAlias { alias, reason } => {
                write!(f, "bad alias `{alias}`: {reason}")
            }
        }
    }
}

impl std::error::Error for CsrMapError {}

/// A register-file access that does not land on a register. Hardware models
/// decide what this means (ignore, read 0, raise an error CSR bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrAccessError {
    /// The offset is not a multiple of 4.
    Misaligned {
        /// Block-relative byte offset.
        offset: u64,
    },
    /// No register at this offset (a reserved hole of the block).
    Hole {
        /// Block-relative byte offset.
        offset: u64,
    },
    /// The offset is past the end of the block.
    OutsideBlock {
        /// Block-relative byte offset.
        offset: u64,
        /// The block size.
        size: u64,
    },
}

impl fmt::Display for CsrAccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsrAccessError::Misaligned { offset } => {
                write!(f, "register offset {offset:#x} is not 4-byte aligned")
            }
            CsrAccessError::Hole { offset } => write!(f, "no register at offset {offset:#x}"),
            CsrAccessError::OutsideBlock { offset, size } => {
                write!(
                    f,
                    "offset {offset:#x} is outside the block (size {size:#x})"
                )
            }
        }
    }
}

impl std::error::Error for CsrAccessError {}
