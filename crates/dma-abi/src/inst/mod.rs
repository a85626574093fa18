//! The six 64-byte DMA instruction words of NeuronCore-v3 (P9.1 §2;
//! docs/references/wiki.md §C.2–§C.5): byte-exact layouts, typed decoding that rejects
//! what the hardware rejects, encoding, a serializable decode, and the
//! assembler text form.
//!
//! | kind | opcode (byte 0) | byte 12 |
//! |------|-----------------|---------|
//! | [`Direct2d`] `DIRECT2D` | 0xb8 | |
//! | [`Indirect1d`] `INDIRECT1D` | 0xbb | |
//! | [`Direct2dXpose`] `DIRECT2D_XPOSE` | 0xbd | |
//! | [`GatherXpose`] `GATHER_XPOSE` | 0xf1 | |
//! | [`RdmaDescGen`] `RDMA_DESC_GEN` | 0xf0 EXTENDED | 8 |
//! | [`RdmaDescStart`] `RDMA_DESC_START` | 0xf0 EXTENDED | 9 |
//!
//! * [`raw`]: the zerocopy wire structs (`RawDirect2d`, …) with size and
//!   per-field offset asserts.
//! * [`InstWord::decode`] / [`InstWord::encode`]: `[u8; 64]` ⇄ typed word.
//!   Decoding fails with an [`InstError`] naming the word and the field
//!   (`DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)`); any accepted
//!   64 bytes re-encode to the same bytes.
//! * [`InstWord::decode_json`]: the serializable decode ([`InstDecode`]).
//! * [`text`]: `KIND key=value …` lines, [`asm`] / [`disasm`] for streams.
//!
//! Layouts, enums, validity rules and the text grammar are documented in
//! `docs/instruction-words.md`.

pub(crate) mod field;
pub mod json;
pub mod raw;
pub mod text;
pub mod types;
pub mod words;

use std::fmt;

pub use field::Leaf;
pub use json::{Addr4Decode, Addr8Decode, HeaderDecode, InstDecode};
pub use raw::{
    RawDirect2d, RawDirect2dXpose, RawEvents, RawGatherXpose, RawHeader, RawIndirect1d,
    RawRdmaDescGen, RawRdmaDescStart, WORD_BYTES,
};
pub use text::{
    StreamError, TextError, TextStyle, asm, disasm, parse_line, parse_line_at, parse_text,
};
pub use types::{
    BoundCheckReg, CompletionInfo, ComputeOp, DmaConfigs, Dtype, DtypePair, Events,
    GatherXposeFlags, Header, ImmVal, IndirectDim, IndirectFlags, IndirectMode, InstWordLen,
    MAX_PRIORITY_CLASS, UpdateMode, WaitMode,
};
pub use words::{
    Direct2d, Direct2dXpose, EXT_RDMA_DESC_GEN, EXT_RDMA_DESC_START, GatherXpose, Indirect1d,
    RdmaDescGen, RdmaDescStart,
};

use field::Problem;

/// Header opcode of DIRECT2D (`DMAMemcpy`).
pub const OPCODE_DIRECT2D: u8 = 0xb8;
/// Header opcode of INDIRECT1D (`DMA_INDIRECT`).
pub const OPCODE_INDIRECT1D: u8 = 0xbb;
/// Header opcode of DIRECT2D_XPOSE (`DMA_TRANSPOSE`).
pub const OPCODE_DIRECT2D_XPOSE: u8 = 0xbd;
/// Header opcode of GATHER_XPOSE (`DMA_GATHER_TRANSPOSE`).
pub const OPCODE_GATHER_XPOSE: u8 = 0xf1;
/// Header opcode of the EXTENDED words (`EXTENDED_INST`); the extended
/// opcode is byte 12.
pub const OPCODE_EXTENDED: u8 = 0xf0;
/// Byte offset of the extended opcode in an EXTENDED word.
pub const EXTENDED_OPCODE_OFFSET: usize = 12;
/// Hex digits of a word in its hex form.
pub const WORD_HEX_DIGITS: usize = 2 * WORD_BYTES;

/// Which of the six words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InstKind {
    /// DIRECT2D, 0xb8.
    Direct2d,
    /// INDIRECT1D, 0xbb.
    Indirect1d,
    /// DIRECT2D_XPOSE, 0xbd.
    Direct2dXpose,
    /// GATHER_XPOSE, 0xf1.
    GatherXpose,
    /// RDMA_DESC_GEN, 0xf0 / 8.
    RdmaDescGen,
    /// RDMA_DESC_START, 0xf0 / 9.
    RdmaDescStart,
}

/// Opcodes that are published but are not one of the six words (docs/references/wiki.md
/// §C.2), for clearer rejections.
const OTHER_OPCODES: &[(u8, &str)] = &[
    (0x68, "GATHER (a vector instruction)"),
    (0xb9, "DMA_MEMCPY2 (NC-v5 only)"),
    (0xba, "DMA_IMMEDIATE (NC-v5 only)"),
    (0xbf, "SB2SB_COLLECTIVE (not modelled)"),
    (0xd4, "PSEUDO_DMA_DIRECT2D (a compiler pseudo-op)"),
    (0xe7, "INDIRECT_COPY (a POOL instruction)"),
];

/// The EXTENDED sub-opcodes that are not DMA words (docs/references/wiki.md §E.6).
const OTHER_EXTENDED: &[(u8, &str)] = &[
    (0, "ENGINE_NOP"),
    (1, "COPY"),
    (2, "TENSOR_TENSOR_ARITH"),
    (3, "RAND_SET_STATE"),
    (4, "RAND_GET_STATE"),
    (6, "SBUF_TO_SBUF"),
    (7, "CPTC_DECODE"),
];

impl InstKind {
    /// All six, in opcode order of the seed's catalog.
    pub const ALL: [Self; 6] = [
        Self::Direct2d,
        Self::Indirect1d,
        Self::Direct2dXpose,
        Self::GatherXpose,
        Self::RdmaDescGen,
        Self::RdmaDescStart,
    ];

    /// The seed's name: `DIRECT2D`, `INDIRECT1D`, `DIRECT2D_XPOSE`,
    /// `GATHER_XPOSE`, `RDMA_DESC_GEN`, `RDMA_DESC_START`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Direct2d => "DIRECT2D",
            Self::Indirect1d => "INDIRECT1D",
            Self::Direct2dXpose => "DIRECT2D_XPOSE",
            Self::GatherXpose => "GATHER_XPOSE",
            Self::RdmaDescGen => "RDMA_DESC_GEN",
            Self::RdmaDescStart => "RDMA_DESC_START",
        }
    }

    /// The header opcode (byte 0).
    #[must_use]
    pub const fn opcode(self) -> u8 {
        match self {
            Self::Direct2d => OPCODE_DIRECT2D,
            Self::Indirect1d => OPCODE_INDIRECT1D,
            Self::Direct2dXpose => OPCODE_DIRECT2D_XPOSE,
            Self::GatherXpose => OPCODE_GATHER_XPOSE,
            Self::RdmaDescGen | Self::RdmaDescStart => OPCODE_EXTENDED,
        }
    }

    /// The extended opcode (byte 12) of the EXTENDED words.
    #[must_use]
    pub const fn extended_opcode(self) -> Option<u8> {
        match self {
            Self::RdmaDescGen => Some(EXT_RDMA_DESC_GEN),
            Self::RdmaDescStart => Some(EXT_RDMA_DESC_START),
            _ => None,
        }
    }

    /// The kind named `name` (case-insensitive).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The kind of word 64 bytes hold, from the opcode and, for EXTENDED,
    /// byte 12.
    pub fn identify(bytes: &[u8; WORD_BYTES]) -> Result<Self, InstError> {
        let opcode = bytes[0];
        let kind = match opcode {
            OPCODE_DIRECT2D => Self::Direct2d,
            OPCODE_INDIRECT1D => Self::Indirect1d,
            OPCODE_DIRECT2D_XPOSE => Self::Direct2dXpose,
            OPCODE_GATHER_XPOSE => Self::GatherXpose,
            OPCODE_EXTENDED => match bytes[EXTENDED_OPCODE_OFFSET] {
                EXT_RDMA_DESC_GEN => Self::RdmaDescGen,
                EXT_RDMA_DESC_START => Self::RdmaDescStart,
                ext => {
                    let what = OTHER_EXTENDED
                        .iter()
                        .find(|(c, _)| *c == ext)
                        .map_or("unknown extended opcode".to_string(), |(_, n)| {
                            format!("{n} is not a DMA word")
                        });
                    return Err(InstError {
                        word: "EXTENDED",
                        field: "extended_opcode".to_string(),
                        value: ext.to_string(),
                        reason: format!("{what}; expected 8 RDMA_DESC_GEN or 9 RDMA_DESC_START"),
                    });
                }
            },
            _ => {
                let what = OTHER_OPCODES
                    .iter()
                    .find(|(c, _)| *c == opcode)
                    .map_or("unknown opcode".to_string(), |(_, n)| {
                        format!("{n} is not one of the six DMA words")
                    });
                return Err(InstError {
                    word: "",
                    field: "header.opcode".to_string(),
                    value: format!("{opcode:#04x}"),
                    reason: format!(
                        "{what}; expected 0xb8 DIRECT2D, 0xbb INDIRECT1D, 0xbd DIRECT2D_XPOSE, \
                         0xf1 GATHER_XPOSE or 0xf0 EXTENDED"
                    ),
                });
            }
        };
        Ok(kind)
    }
}

impl fmt::Display for InstKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for InstKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for InstKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "InstKind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = [
            Self::Direct2d,
            Self::Indirect1d,
            Self::Direct2dXpose,
            Self::GatherXpose,
            Self::RdmaDescGen,
            Self::RdmaDescStart,
        ]
        .iter()
        .map(|k| k.name())
        .collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// Why 64 bytes (or a typed word being encoded) are not a valid word.
///
/// Displays as `WORD.field = value (reason)`, e.g.
/// `DIRECT2D.dma_configs.priority_class = 5 (valid 0..=4)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstError {
    /// The word kind's name; `EXTENDED` for an unknown extended opcode;
    /// empty when the opcode itself is unknown.
    pub word: &'static str,
    /// Dotted field path by seed name (`header.inst_word_len`,
    /// `src_bound_reg`, `flags.indirect_mode`, `reserved1`).
    pub field: String,
    /// The offending value.
    pub value: String,
    /// The rule it breaks.
    pub reason: String,
}

impl InstError {
    fn from_problem(kind: InstKind, p: Problem) -> Self {
        Self {
            word: kind.name(),
            field: p.path,
            value: p.value,
            reason: p.reason,
        }
    }

    fn wrong_kind(expected: InstKind, found: InstKind) -> Self {
        Self {
            word: found.name(),
            field: "header.opcode".to_string(),
            value: format!("{:#04x}", found.opcode()),
            reason: format!("expected a {expected} word"),
        }
    }
}

impl fmt::Display for InstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.word.is_empty() {
            write!(f, "{}.", self.word)?;
        }
        write!(f, "{} = {} ({})", self.field, self.value, self.reason)
    }
}

impl std::error::Error for InstError {}

/// One decoded instruction word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum InstWord {
    /// 0xb8.
    Direct2d(Direct2d),
    /// 0xbb.
    Indirect1d(Indirect1d),
    /// 0xbd.
    Direct2dXpose(Direct2dXpose),
    /// 0xf1.
    GatherXpose(GatherXpose),
    /// 0xf0 / 8.
    RdmaDescGen(RdmaDescGen),
    /// 0xf0 / 9.
    RdmaDescStart(RdmaDescStart),
}

/// Runs `$body` with `$w` bound to the typed word inside an [`InstWord`].
macro_rules! each_word {
    ($word:expr, $w:ident => $body:expr) => {
        match $word {
            InstWord::Direct2d($w) => $body,
            InstWord::Indirect1d($w) => $body,
            InstWord::Direct2dXpose($w) => $body,
            InstWord::GatherXpose($w) => $body,
            InstWord::RdmaDescGen($w) => $body,
            InstWord::RdmaDescStart($w) => $body,
        }
    };
}

impl InstWord {
    /// Decodes and validates 64 bytes in memory order.
    pub fn decode(bytes: &[u8; WORD_BYTES]) -> Result<Self, InstError> {
        let kind = InstKind::identify(bytes)?;
        let word = match kind {
            InstKind::Direct2d => {
                Direct2d::from_raw(&RawDirect2d::from_bytes(bytes)).map(Self::from)
            }
            InstKind::Indirect1d => {
                Indirect1d::from_raw(&RawIndirect1d::from_bytes(bytes)).map(Self::from)
            }
            InstKind::Direct2dXpose => {
                Direct2dXpose::from_raw(&RawDirect2dXpose::from_bytes(bytes)).map(Self::from)
            }
            InstKind::GatherXpose => {
                GatherXpose::from_raw(&RawGatherXpose::from_bytes(bytes)).map(Self::from)
            }
            InstKind::RdmaDescGen => {
                RdmaDescGen::from_raw(&RawRdmaDescGen::from_bytes(bytes)).map(Self::from)
            }
            InstKind::RdmaDescStart => {
                RdmaDescStart::from_raw(&RawRdmaDescStart::from_bytes(bytes)).map(Self::from)
            }
        };
        word.map_err(|p| InstError::from_problem(kind, p))
    }

    /// Encodes to 64 bytes, validating every field as [`Self::decode`] does
    /// (so `decode(encode(w)) == w` for every word that encodes).
    pub fn encode(&self) -> Result<[u8; WORD_BYTES], InstError> {
        let kind = self.kind();
        let bytes = each_word!(self, w => w.to_raw().map(|r| r.to_bytes()))
            .map_err(|p| InstError::from_problem(kind, p))?;
        Self::decode(&bytes)?;
        Ok(bytes)
    }

    /// Which word this is.
    #[must_use]
    pub const fn kind(&self) -> InstKind {
        match self {
            Self::Direct2d(_) => InstKind::Direct2d,
            Self::Indirect1d(_) => InstKind::Indirect1d,
            Self::Direct2dXpose(_) => InstKind::Direct2dXpose,
            Self::GatherXpose(_) => InstKind::GatherXpose,
            Self::RdmaDescGen(_) => InstKind::RdmaDescGen,
            Self::RdmaDescStart(_) => InstKind::RdmaDescStart,
        }
    }

    /// A word of `kind` with every field zero / inert.
    #[must_use]
    pub fn default_of(kind: InstKind) -> Self {
        match kind {
            InstKind::Direct2d => Direct2d::default().into(),
            InstKind::Indirect1d => Indirect1d::default().into(),
            InstKind::Direct2dXpose => Direct2dXpose::default().into(),
            InstKind::GatherXpose => GatherXpose::default().into(),
            InstKind::RdmaDescGen => RdmaDescGen::default().into(),
            InstKind::RdmaDescStart => RdmaDescStart::default().into(),
        }
    }

    /// The header (without the opcode, which [`Self::kind`] gives).
    #[must_use]
    pub fn header(&self) -> &Header {
        each_word!(self, w => &w.header)
    }

    /// The EVENTS gate.
    #[must_use]
    pub fn events(&self) -> &Events {
        each_word!(self, w => &w.events)
    }

    /// Every leaf field in byte order: dotted seed-name path, text-form
    /// value, whether it is the default.
    #[must_use]
    pub fn leaves(&self) -> Vec<Leaf> {
        each_word!(self, w => w.leaves())
    }

    /// Assigns a field by dotted path from its text form.
    pub(crate) fn set(&mut self, path: &str, value: &str) -> Result<(), field::SetError> {
        each_word!(self, w => w.set(path, value))
    }

    /// The serializable decode ([`InstDecode`]).
    pub fn decode_json(&self) -> Result<InstDecode, InstError> {
        let bytes = self.encode()?;
        Ok(InstDecode::new(*self, &bytes))
    }

    /// The word as one text-form line (canonical, [`TextStyle::Compact`]).
    #[must_use]
    pub fn to_text(&self) -> String {
        text::print_word(self, TextStyle::Compact)
    }
}

/// Why text is not a hex word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordHexError {
    /// A `0x`-prefixed token (a word is bytes in memory order, not a number).
    HexPrefix,
    /// A character that is neither a hex digit, `_` nor white space.
    InvalidChar {
        /// The character.
        ch: char,
        /// Its 1-based position, in characters.
        position: usize,
    },
    /// Not exactly 128 hex digits.
    WrongLength {
        /// Hex digits found.
        found: usize,
    },
}

impl fmt::Display for WordHexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HexPrefix => write!(
                f,
                "`0x` prefix not accepted: a word is {WORD_HEX_DIGITS} hex digits giving its \
                 {WORD_BYTES} bytes in memory order (byte 0 first), not a number"
            ),
            Self::InvalidChar { ch, position } => write!(
                f,
                "invalid character {ch:?} at position {position}: expected hex digits, `_` or spaces"
            ),
            Self::WrongLength { found } => write!(
                f,
                "expected {WORD_HEX_DIGITS} hex digits ({WORD_BYTES} bytes in memory order), \
                 found {found}"
            ),
        }
    }
}

impl std::error::Error for WordHexError {}

/// Parses 128 hex digits (the 64 bytes in memory order, byte 0 first; `_`
/// and white space may separate digits; no `0x`).
pub fn parse_hex_word(text: &str) -> Result<[u8; WORD_BYTES], WordHexError> {
    if text
        .split(|c: char| c.is_whitespace() || c == '_')
        .any(|t| t.starts_with("0x") || t.starts_with("0X"))
    {
        return Err(WordHexError::HexPrefix);
    }
    let mut digits = Vec::with_capacity(WORD_HEX_DIGITS);
    for (i, ch) in text.chars().enumerate() {
        if ch == '_' || ch.is_whitespace() {
            continue;
        }
        match ch.to_digit(16) {
            Some(d) => digits.push(d as u8),
            None => {
                return Err(WordHexError::InvalidChar {
                    ch,
                    position: i + 1,
                });
            }
        }
    }
    if digits.len() != WORD_HEX_DIGITS {
        return Err(WordHexError::WrongLength {
            found: digits.len(),
        });
    }
    let mut bytes = [0u8; WORD_BYTES];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (pair[0] << 4) | pair[1];
    }
    Ok(bytes)
}

/// The 64 bytes as 128 lowercase hex digits, memory order.
#[must_use]
pub fn word_hex(bytes: &[u8; WORD_BYTES]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The multi-line human form of a word: the text-form line, the raw bytes
/// (16 groups of 4, memory order), then every field, one per line.
#[must_use]
pub fn render_text(word: &InstWord, bytes: &[u8; WORD_BYTES]) -> String {
    let kind = word.kind();
    let mut out = format!("{kind}  opcode {:#04x}", kind.opcode());
    if let Some(ext) = kind.extended_opcode() {
        out.push_str(&format!("  extended_opcode {ext}"));
    }
    out.push('\n');
    let hex = word_hex(bytes);
    let groups: Vec<&str> = (0..hex.len())
        .step_by(8)
        .filter_map(|i| hex.get(i..i + 8))
        .collect();
    for (row, chunk) in groups.chunks(8).enumerate() {
        let label = if row == 0 { "raw" } else { "" };
        out.push_str(&format!("{label:<5}+{:<3}{}\n", row * 32, chunk.join(" ")));
    }
    let leaves = word.leaves();
    let width = leaves.iter().map(|l| l.path.len()).max().unwrap_or(0);
    for l in &leaves {
        out.push_str(&format!("  {:<width$}  {}\n", l.path, l.text));
    }
    out.push_str(&format!("text {}\n", word.to_text()));
    out
}
