//! Loaded and validated CSR maps (`csr-maps/<block>.json`; the format is
//! described in `docs/csr-map-format.md`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use soc_map::{Hex, parse_u64};

use crate::access::Access;
use crate::error::{CsrAccessError, CsrMapError, CsrMapErrorDetails, CsrMapErrorKind};
use crate::raw::{RawArray, RawMap, RawRegister};

/// Largest block a map may describe (one 1 MiB engine slot, docs/references/wiki.md §I.3).
/// The offset → register index is dense, one `u32` per word.
pub const MAX_BLOCK_SIZE: u64 = 0x10_0000;

/// Largest array element count.
pub const MAX_ARRAY_COUNT: u64 = 0x1_0000;

// ---------------------------------------------------------------------------
// Public, validated types.

/// One block type's register map: a validated `csr-maps/<block>.json`.
///
/// Offsets are block-relative byte offsets. Lookup by offset is O(1) (a dense
/// word index); lookup by name is O(log n).
#[derive(Clone, Debug)]
pub struct CsrMap {
    block: Cow<'static, str>,
    description: Cow<'static, str>,
    size: u64,
    source: Cow<'static, str>,
    registers: Vec<RegisterSpec>,
    /// One per register element, sorted by offset.
    slots: Vec<Slot>,
    /// `offset / 4` → slot index + 1, or 0 where no register sits (a
    /// zeroed table: only the words of registers are ever written).
    by_word: Vec<u32>,
    /// Reset value per slot.
    reset_values: Vec<u32>,
    /// Upper-case register name → register index.
    names: BTreeMap<String, usize>,
    /// (upper-case alias name, index) → register index.
    aliases: BTreeMap<(String, Option<u32>), usize>,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    reg: u32,
    index: u32,
    offset: u32,
}

/// A register (or a register array) of a map.
#[derive(Clone, Debug)]
pub struct RegisterSpec {
    name: Cow<'static, str>,
    offset: u64,
    access: Access,
    reset: u32,
    reset_declared: bool,
    description: Cow<'static, str>,
    source: Cow<'static, str>,
    array: Option<ArraySpec>,
    aliases: Vec<String>,
    fields: Vec<FieldSpec>,
    masks: RegMasks,
    delta_lsb: u32,
}

/// Element layout of a register array: element `i` sits at
/// `offset + i * stride` unless `i` is in `skip`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    count: u32,
    stride: u64,
    skip: Vec<u32>,
}

/// A bit field of a register.
#[derive(Clone, Debug)]
pub struct FieldSpec {
    name: Cow<'static, str>,
    lsb: u32,
    width: u32,
    access: Access,
    access_overridden: bool,
    reset: u32,
    description: Cow<'static, str>,
    source: Option<Cow<'static, str>>,
}

/// Per-register bit masks computed from the access kinds; every bit of the
/// register is in exactly one mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegMasks {
    /// RW bits: a write stores them.
    pub rw: u32,
    /// RO bits: writes ignored.
    pub ro: u32,
    /// RC bits: writes ignored, a read clears them.
    pub rc: u32,
    /// WO bits: a written 1 is a command pulse; reads 0.
    pub wo: u32,
    /// W1C bits: a written 1 clears.
    pub w1c: u32,
    /// W0C bits: a written 0 clears.
    pub w0c: u32,
    /// INC bits: the written value is an increment; reads 0.
    pub inc: u32,
    /// DEC bits: the written value is a decrement; reads 0.
    pub dec: u32,
    /// Bits outside every field (only when the register has fields): writes
    /// ignored, read as their reset value (always 0).
    pub reserved: u32,
}

impl RegMasks {
    /// Bits that a write stores directly (`RW`).
    pub const fn writable(&self) -> u32 {
        self.rw
    }

    /// Bits that always read 0 (`WO`, `INC`, `DEC`).
    pub const fn read_zero(&self) -> u32 {
        self.wo | self.inc | self.dec
    }

    /// Bits a write can never affect (`RO`, `RC`, reserved).
    pub const fn ignores_writes(&self) -> u32 {
        self.ro | self.rc | self.reserved
    }

    /// True when no write can have any effect (the whole register is read-only).
    pub const fn is_read_only(&self) -> bool {
        (self.rw | self.w1c | self.w0c | self.wo | self.inc | self.dec) == 0
    }

    fn add(&mut self, access: Access, mask: u32) {
        match access {
            Access::Rw => self.rw |= mask,
            Access::Ro => self.ro |= mask,
            Access::Rc => self.rc |= mask,
            Access::Wo => self.wo |= mask,
            Access::W1c => self.w1c |= mask,
            Access::W0c => self.w0c |= mask,
            Access::Inc => self.inc |= mask,
            Access::Dec => self.dec |= mask,
        }
    }
}

/// One register element found by offset or name: the spec, the array index
/// (for arrays) and the element's offset.
#[derive(Clone, Copy, Debug)]
pub struct RegRef<'m> {
    spec: &'m RegisterSpec,
    index: Option<u32>,
    offset: u64,
    slot: u32,
}

impl<'m> RegRef<'m> {
    /// The register's spec.
    pub fn spec(&self) -> &'m RegisterSpec {
        self.spec
    }

    /// The array index, for elements of register arrays.
    pub fn index(&self) -> Option<u32> {
        self.index
    }

    /// The element's block-relative byte offset.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The element's name: `Q_CFG`, or `SEM_INC[3]` for array elements.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// Position of this element in the map's offset-sorted element list.
    pub fn slot(&self) -> usize {
        self.slot as usize
    }
}

impl fmt::Display for RegRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]", self.spec.name),
            None => f.write_str(&self.spec.name),
        }
    }
}

impl CsrMap {
    /// Parses and validates one map. `source_name` (usually the file path) is
    /// only used in error messages.
    pub fn from_json(text: &str, source_name: &str) -> Result<CsrMap, CsrMapError> {
        // A map read from a file: owned copies.
        Self::parse(text, source_name, |t| Cow::Owned(t.to_string()))
    }

    /// [`CsrMap::from_json`] of a `'static` text (a built-in map): the
    /// map's names and descriptions stay in the text.
    pub(crate) fn from_static_json(
        text: &'static str,
        source_name: &str,
    ) -> Result<CsrMap, CsrMapError> {
        Self::parse(text, source_name, Cow::clone)
    }

    /// Validates and builds a built-in map that `build.rs` parsed.
    pub(crate) fn from_static_raw(
        raw: &RawMap<'static>,
        source_name: &str,
    ) -> Result<CsrMap, CsrMapError> {
        Builder {
            source_name,
            block: &raw.block,
            keep: Cow::clone,
        }
        .build(raw)
    }

    /// Parses and validates `text`; `keep` makes the map's copy of a text
    /// field.
    fn parse<'a>(
        text: &'a str,
        source_name: &str,
        keep: fn(&Cow<'a, str>) -> Cow<'static, str>,
    ) -> Result<CsrMap, CsrMapError> {
        let raw: RawMap<'a> = serde_json::from_str(text)
            .map_err(|e| CsrMapErrorDetails {
                source_name: source_name.to_string(),
                block: None,
                register: None,
                field: None,
                path: String::new(),
                kind: CsrMapErrorKind::Json {
                    line: e.line(),
                    column: e.column(),
                    message: serde_message(&e),
                },
            })
            .map_err(CsrMapError::new)?;
        Builder {
            source_name,
            block: &raw.block,
            keep,
        }
        .build(&raw)
    }

    /// Block type name (`udma_m2s_q`).
    pub fn block(&self) -> &str {
        &self.block
    }

    /// What the block is.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where the map's facts come from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Block size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The registers in declaration order.
    pub fn registers(&self) -> &[RegisterSpec] {
        &self.registers
    }

    /// Number of register elements (array elements counted one by one).
    pub fn element_count(&self) -> usize {
        self.slots.len()
    }

    /// Register by name (case-insensitive), not counting aliases.
    pub fn register(&self, name: &str) -> Option<&RegisterSpec> {
        self.names
            .get(&name.to_ascii_uppercase())
            .and_then(|&r| self.registers.get(r))
    }

    /// The register element at a block-relative byte offset.
    pub fn register_at(&self, offset: u64) -> Option<RegRef<'_>> {
        self.slot_at(offset).ok().and_then(|s| self.element(s))
    }

    /// Like [`CsrMap::register_at`], but says why there is no register.
    pub fn element_at(&self, offset: u64) -> Result<RegRef<'_>, CsrAccessError> {
        let slot = self.slot_at(offset)?;
        self.element(slot).ok_or(CsrAccessError::Hole { offset })
    }

    /// All register elements in offset order.
    pub fn elements(&self) -> impl Iterator<Item = RegRef<'_>> + '_ {
        (0..self.slots.len()).filter_map(|s| self.element(s))
    }

    /// Offset of register `name` (case-insensitive), element `index` for
    /// arrays (`None` for single registers). Aliases are tried after
    /// register names.
    pub fn find(&self, name: &str, index: Option<u32>) -> Option<u64> {
        let key = name.trim().to_ascii_uppercase();
        if let Some(spec) = self.names.get(&key).and_then(|&r| self.registers.get(r)) {
            match (&spec.array, index) {
                (None, None) => return Some(spec.offset),
                (Some(array), Some(i)) => {
                    if let Some(offset) = array.element_offset(spec.offset, i) {
                        return Some(offset);
                    }
                }
                _ => {}
            }
        }
        self.aliases
            .get(&(key, index))
            .and_then(|&r| self.registers.get(r))
            .map(|spec| spec.offset)
    }

    /// Resolves a register reference as written in traces and CLIs:
    /// `tdrtp_inc`, `SEM_INC[3]`, `lr[0x27]` (case-insensitive; index decimal
    /// or `0x` hex).
    pub fn lookup(&self, text: &str) -> Option<RegRef<'_>> {
        let (name, index) = split_index(text)?;
        self.find(name, index).and_then(|o| self.register_at(o))
    }

    /// [`CsrMap::lookup`] with the reason when nothing is found: an unknown
    /// name, an index out of range (with the valid range), a skipped
    /// position, a missing or unwanted index, or bad syntax.
    pub fn try_lookup(&self, text: &str) -> Result<RegRef<'_>, LookupError> {
        if let Some(r) = self.lookup(text) {
            return Ok(r);
        }
        let trimmed = text.trim();
        let (name, index) = match trimmed.split_once('[') {
            None => (trimmed, None),
            Some((name, rest)) => {
                let Some(inner) = rest.strip_suffix(']') else {
                    return Err(LookupError::Syntax {
                        text: trimmed.to_string(),
                    });
                };
                match parse_u64(inner).ok().and_then(|i| u32::try_from(i).ok()) {
                    Some(i) => (name.trim(), Some(i)),
                    None => {
                        return Err(LookupError::BadIndex {
                            text: trimmed.to_string(),
                            index: inner.to_string(),
                        });
                    }
                }
            }
        };
        let key = name.to_ascii_uppercase();
        let Some(spec) = self.names.get(&key).and_then(|&r| self.registers.get(r)) else {
            return Err(LookupError::NoRegister {
                name: name.to_string(),
            });
        };
        let name = spec.name.to_string();
        Err(match (&spec.array, index) {
            (None, _) => LookupError::NotAnArray { name },
            (Some(a), None) => LookupError::NeedsIndex {
                name,
                count: a.count,
            },
            (Some(a), Some(index)) if index >= a.count => LookupError::IndexOutOfRange {
                name,
                index,
                count: a.count,
            },
            (Some(a), Some(index)) => LookupError::Skipped {
                name,
                index,
                count: a.count,
            },
        })
    }

    /// Field values of `value` read from register `reg` (named as in
    /// [`CsrMap::lookup`]; see [`RegisterSpec::decode`]). `None` if there is
    /// no such register.
    pub fn decode(&self, reg: &str, value: u32) -> Option<Vec<(&str, u32)>> {
        self.lookup(reg).map(|r| r.spec().decode(value))
    }

    /// Reset value of every element, indexed by [`RegRef::slot`].
    pub fn reset_values(&self) -> &[u32] {
        &self.reset_values
    }

    /// The slot for an offset (alignment and range checked).
    pub(crate) fn slot_at(&self, offset: u64) -> Result<usize, CsrAccessError> {
        if !offset.is_multiple_of(4) {
            return Err(CsrAccessError::Misaligned { offset });
        }
        if offset >= self.size {
            return Err(CsrAccessError::OutsideBlock {
                offset,
                size: self.size,
            });
        }
        let word = usize::try_from(offset / 4).map_err(|_| CsrAccessError::Hole { offset })?;
        match self.by_word.get(word) {
            Some(&s) if s != 0 => Ok(s as usize - 1),
            _ => Err(CsrAccessError::Hole { offset }),
        }
    }

    /// The element in slot `slot`.
    pub(crate) fn element(&self, slot: usize) -> Option<RegRef<'_>> {
        let s = self.slots.get(slot)?;
        let spec = self.registers.get(s.reg as usize)?;
        Some(RegRef {
            spec,
            index: spec.array.as_ref().map(|_| s.index),
            offset: u64::from(s.offset),
            slot: u32::try_from(slot).ok()?,
        })
    }
}

impl RegisterSpec {
    /// Register name (UPPER_SNAKE); array elements are `NAME[i]`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Offset of the register (of element 0 for arrays).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The register's declared access kind (fields may override it).
    pub fn access(&self) -> Access {
        self.access
    }

    /// Reset value (declared, or composed from the field resets).
    pub fn reset(&self) -> u32 {
        self.reset
    }

    /// True when the map gives the reset value of the register explicitly.
    pub fn reset_declared(&self) -> bool {
        self.reset_declared
    }

    /// What the register does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where the register's facts come from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Array layout, for register arrays.
    pub fn array(&self) -> Option<&ArraySpec> {
        self.array.as_ref()
    }

    /// Alternative names accepted by [`CsrMap::find`] (`LR[39]`).
    pub fn aliases(&self) -> &[String] {
        &self.aliases
    }

    /// The fields, in declaration order (empty: the register is one 32-bit value).
    pub fn fields(&self) -> &[FieldSpec] {
        &self.fields
    }

    /// Field by name (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&FieldSpec> {
        self.fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// Bit masks per access kind.
    pub fn masks(&self) -> &RegMasks {
        &self.masks
    }

    /// Offsets of all elements (one for single registers).
    pub fn element_offsets(&self) -> Vec<u64> {
        match &self.array {
            None => vec![self.offset],
            Some(a) => (0..a.count)
                .filter_map(|i| a.element_offset(self.offset, i))
                .collect(),
        }
    }

    /// `(field name, field value)` for every field of `value`.
    pub fn decode(&self, value: u32) -> Vec<(&str, u32)> {
        self.fields
            .iter()
            .map(|f| (&*f.name, f.extract(value)))
            .collect()
    }

    /// The increment/decrement carried by a written value (INC/DEC registers).
    pub(crate) fn delta_of(&self, written: u32) -> u32 {
        (written & (self.masks.inc | self.masks.dec)) >> self.delta_lsb
    }
}

impl ArraySpec {
    /// Number of index positions (skipped ones included).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Byte distance between consecutive elements.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// Indices that are not part of the array (another register sits there).
    pub fn skip(&self) -> &[u32] {
        &self.skip
    }

    /// True when element `index` exists.
    pub fn contains(&self, index: u32) -> bool {
        index < self.count && !self.skip.contains(&index)
    }

    fn element_offset(&self, base: u64, index: u32) -> Option<u64> {
        if self.contains(index) {
            Some(base + u64::from(index) * self.stride)
        } else {
            None
        }
    }
}

impl FieldSpec {
    /// Field name (UPPER_SNAKE).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lowest bit.
    pub fn lsb(&self) -> u32 {
        self.lsb
    }

    /// Highest bit.
    pub fn msb(&self) -> u32 {
        self.lsb + self.width - 1
    }

    /// Width in bits (1..=32).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Effective access kind (the override, or the register's).
    pub fn access(&self) -> Access {
        self.access
    }

    /// True when the field overrides the register's access kind.
    pub fn access_overridden(&self) -> bool {
        self.access_overridden
    }

    /// Reset value of the field (field-aligned, not shifted).
    pub fn reset(&self) -> u32 {
        self.reset
    }

    /// What the field does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Field-specific source, if it differs from the register's.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// The field's bits within the register.
    pub fn mask(&self) -> u32 {
        field_mask(self.lsb, self.width)
    }

    /// `bits` as written in maps: `"16"` or `"30:28"`.
    pub fn bits(&self) -> String {
        if self.width == 1 {
            self.lsb.to_string()
        } else {
            format!("{}:{}", self.msb(), self.lsb)
        }
    }

    /// The field's value inside a register value.
    pub fn extract(&self, register_value: u32) -> u32 {
        (register_value & self.mask()) >> self.lsb
    }

    /// `register_value` with this field replaced by `field_value` (truncated
    /// to the field width).
    pub fn insert(&self, register_value: u32, field_value: u32) -> u32 {
        let mask = self.mask();
        (register_value & !mask) | ((field_value << self.lsb) & mask)
    }
}

fn field_mask(lsb: u32, width: u32) -> u32 {
    let ones = if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    ones.checked_shl(lsb).unwrap_or(0)
}

/// serde_json's message without its trailing " at line L column C".
fn serde_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

/// Splits `NAME` / `NAME[idx]`.
/// Why [`CsrMap::try_lookup`] found no register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupError {
    /// Not `NAME` or `NAME[INDEX]`.
    Syntax {
        /// The text as given.
        text: String,
    },
    /// The index is not a number.
    BadIndex {
        /// The text as given.
        text: String,
        /// The index part.
        index: String,
    },
    /// No register has this name.
    NoRegister {
        /// The name as given.
        name: String,
    },
    /// An index was given for a single register.
    NotAnArray {
        /// The register.
        name: String,
    },
    /// An array was named without an index.
    NeedsIndex {
        /// The register array.
        name: String,
        /// Its index positions.
        count: u32,
    },
    /// The index is past the array's end.
    IndexOutOfRange {
        /// The register array.
        name: String,
        /// The index given.
        index: u32,
        /// Its index positions.
        count: u32,
    },
    /// The index is a skipped position of the array.
    Skipped {
        /// The register array.
        name: String,
        /// The index given.
        index: u32,
        /// Its index positions.
        count: u32,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let range = |count: u32| match count {
            0 => "no indices".to_string(),
            n => format!("indices 0..={}", n - 1),
        };
        match self {
            Self::Syntax { text } => write!(f, "`{text}`: expected NAME or NAME[INDEX]"),
            Self::BadIndex { text, index } => write!(
                f,
                "`{text}`: `{index}` is not an index (a decimal or 0x number)"
            ),
            Self::NoRegister { name } => write!(f, "no register `{name}`"),
            Self::NotAnArray { name } => write!(f, "{name} is not an array: no index"),
            Self::NeedsIndex { name, count } => write!(
                f,
                "{name} is an array: give an index, e.g. {name}[0] ({})",
                range(*count)
            ),
            Self::IndexOutOfRange { name, index, count } => write!(
                f,
                "index {index} of {name} is out of range: {name} has {}",
                range(*count)
            ),
            Self::Skipped { name, index, count } => write!(
                f,
                "index {index} of {name} is not part of the array (another register sits \
                 there); {name} has {} except the skipped ones",
                range(*count)
            ),
        }
    }
}

impl std::error::Error for LookupError {}

fn split_index(text: &str) -> Option<(&str, Option<u32>)> {
    let text = text.trim();
    match text.split_once('[') {
        None => Some((text, None)),
        Some((name, rest)) => {
            let inner = rest.strip_suffix(']')?;
            let index = u32::try_from(parse_u64(inner).ok()?).ok()?;
            Some((name.trim(), Some(index)))
        }
    }
}

// By bytes: a non-ASCII character's bytes are all >= 0x80 and fail every
// test, as the character would.
fn is_upper_snake(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(c) if c.is_ascii_uppercase())
        && bytes.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
}

fn is_lower_snake(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(c) if c.is_ascii_lowercase())
        && bytes.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// Parses `"N"` or `"H:L"` into (lsb, width).
fn parse_bits(text: &str) -> Result<(u32, u32), &'static str> {
    let num = |s: &str| -> Result<u32, &'static str> {
        let s = s.trim();
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
            return Err("expected decimal bit numbers, `N` or `H:L`");
        }
        s.parse::<u32>().map_err(|_| "bit number too large")
    };
    let (msb, lsb) = match text.split_once(':') {
        None => {
            let b = num(text)?;
            (b, b)
        }
        Some((h, l)) => (num(h)?, num(l)?),
    };
    if msb > 31 {
        return Err("bits must lie within 31:0");
    }
    if msb < lsb {
        return Err("high bit is below low bit (write `H:L`)");
    }
    Ok((lsb, msb - lsb + 1))
}

// ---------------------------------------------------------------------------
// Validation.

/// `registers[i]`, the JSON path of a register in errors; written out only
/// when an error names it (a map has hundreds of registers).
#[derive(Clone, Copy)]
struct RegPath(usize);

impl fmt::Display for RegPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "registers[{}]", self.0)
    }
}

/// `registers[i].fields[j]`, written out only when an error names it.
#[derive(Clone, Copy)]
struct FieldPath(RegPath, usize);

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.fields[{}]", self.0, self.1)
    }
}

struct Builder<'a, 't> {
    source_name: &'a str,
    block: &'a str,
    /// The map's copy of a text field of the JSON.
    keep: fn(&Cow<'t, str>) -> Cow<'static, str>,
}

impl<'t> Builder<'_, 't> {
    fn err(
        &self,
        register: Option<&str>,
        field: Option<&str>,
        path: String,
        kind: CsrMapErrorKind,
    ) -> CsrMapError {
        CsrMapError::new(CsrMapErrorDetails {
            source_name: self.source_name.to_string(),
            block: Some(self.block.to_string()),
            register: register.map(str::to_string),
            field: field.map(str::to_string),
            path,
            kind,
        })
    }

    fn build(&self, raw: &RawMap<'t>) -> Result<CsrMap, CsrMapError> {
        if !is_lower_snake(&raw.block) {
            return Err(self.err(
                None,
                None,
                "block".into(),
                CsrMapErrorKind::BadName {
                    name: raw.block.to_string(),
                    expected: "lower_snake_case",
                },
            ));
        }
        let size = raw.size.0;
        if size == 0 || !size.is_multiple_of(4) || size > MAX_BLOCK_SIZE {
            return Err(self.err(
                None,
                None,
                "size".into(),
                CsrMapErrorKind::BadBlockSize { size },
            ));
        }

        let mut registers = Vec::with_capacity(raw.registers.len());
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for (i, r) in raw.registers.iter().enumerate() {
            // Paths name the JSON element in errors only: built on error.
            let path = RegPath(i);
            let spec = self.build_register(r, path)?;
            let key = spec.name.to_ascii_uppercase();
            if let Some(&first) = names.get(&key) {
                return Err(self.err(
                    Some(&r.name),
                    None,
                    format!("{path}.name"),
                    CsrMapErrorKind::DuplicateName {
                        name: r.name.to_string(),
                        first: format!("registers[{first}].name"),
                    },
                ));
            }
            names.insert(key, i);
            registers.push(spec);
        }

        let (slots, by_word) = self.layout(&registers, size)?;
        let aliases = self.aliases(&registers, &names)?;
        let reset_values = slots
            .iter()
            .map(|s| registers.get(s.reg as usize).map_or(0, |r| r.reset))
            .collect();

        Ok(CsrMap {
            block: (self.keep)(&raw.block),
            description: (self.keep)(&raw.description),
            size,
            source: (self.keep)(&raw.source),
            registers,
            slots,
            by_word,
            reset_values,
            names,
            aliases,
        })
    }

    fn build_register(
        &self,
        r: &RawRegister<'t>,
        path: RegPath,
    ) -> Result<RegisterSpec, CsrMapError> {
        let reg = Some(&*r.name);
        if !is_upper_snake(&r.name) {
            return Err(self.err(
                reg,
                None,
                format!("{path}.name"),
                CsrMapErrorKind::BadName {
                    name: r.name.to_string(),
                    expected: "UPPER_SNAKE_CASE",
                },
            ));
        }
        let access = Access::parse(&r.access).ok_or_else(|| {
            self.err(
                reg,
                None,
                format!("{path}.access"),
                CsrMapErrorKind::UnknownAccess {
                    text: r.access.to_string(),
                },
            )
        })?;
        let offset = r.offset.0;
        if !offset.is_multiple_of(4) {
            return Err(self.err(
                reg,
                None,
                format!("{path}.offset"),
                CsrMapErrorKind::Misaligned { value: offset },
            ));
        }
        let array = match &r.array {
            None => None,
            Some(a) => Some(self.build_array(a, reg, path)?),
        };

        // Fields and masks.
        let mut fields: Vec<FieldSpec> = Vec::with_capacity(r.fields.len());
        let mut masks = RegMasks::default();
        let mut used = 0u32;
        let mut delta_field: Option<(String, u32)> = None;
        for (j, f) in r.fields.iter().enumerate() {
            let fpath = FieldPath(path, j);
            let field = Some(&*f.name);
            if !is_upper_snake(&f.name) {
                return Err(self.err(
                    reg,
                    field,
                    format!("{fpath}.name"),
                    CsrMapErrorKind::BadName {
                        name: f.name.to_string(),
                        expected: "UPPER_SNAKE_CASE",
                    },
                ));
            }
            if let Some(first) = fields
                .iter()
                .position(|g| g.name.eq_ignore_ascii_case(&f.name))
            {
                return Err(self.err(
                    reg,
                    field,
                    format!("{fpath}.name"),
                    CsrMapErrorKind::DuplicateName {
                        name: f.name.to_string(),
                        first: format!("{path}.fields[{first}].name"),
                    },
                ));
            }
            let (lsb, width) = parse_bits(&f.bits).map_err(|reason| {
                self.err(
                    reg,
                    field,
                    format!("{fpath}.bits"),
                    CsrMapErrorKind::BadBits {
                        text: f.bits.to_string(),
                        reason,
                    },
                )
            })?;
            let mask = field_mask(lsb, width);
            if used & mask != 0 {
                let other = fields
                    .iter()
                    .find(|g| g.mask() & mask != 0)
                    .map(|g| g.name.to_string())
                    .unwrap_or_default();
                return Err(self.err(
                    reg,
                    field,
                    format!("{fpath}.bits"),
                    CsrMapErrorKind::FieldOverlap {
                        other,
                        bits: used & mask,
                    },
                ));
            }
            used |= mask;
            let (faccess, overridden) = match &f.access {
                None => (access, false),
                Some(text) => {
                    let a = Access::parse(text).ok_or_else(|| {
                        self.err(
                            reg,
                            field,
                            format!("{fpath}.access"),
                            CsrMapErrorKind::UnknownAccess {
                                text: text.to_string(),
                            },
                        )
                    })?;
                    (a, a != access)
                }
            };
            if matches!(faccess, Access::Inc | Access::Dec) {
                if let Some((other, _)) = &delta_field {
                    return Err(self.err(
                        reg,
                        field,
                        format!("{fpath}.access"),
                        CsrMapErrorKind::MultipleDeltaFields {
                            other: other.clone(),
                        },
                    ));
                }
                delta_field = Some((f.name.to_string(), lsb));
            }
            let reset = match f.reset {
                None => 0,
                Some(Hex(v)) => {
                    if v > u64::from(field_mask(0, width)) {
                        return Err(self.err(
                            reg,
                            field,
                            format!("{fpath}.reset"),
                            CsrMapErrorKind::FieldResetTooWide { value: v, width },
                        ));
                    }
                    // Width <= 32 was checked just above.
                    v as u32
                }
            };
            masks.add(faccess, mask);
            fields.push(FieldSpec {
                name: (self.keep)(&f.name),
                lsb,
                width,
                access: faccess,
                access_overridden: overridden,
                reset,
                description: (self.keep)(&f.description),
                source: f.source.as_ref().map(self.keep),
            });
        }
        if fields.is_empty() {
            masks.add(access, u32::MAX);
        } else {
            masks.reserved = !used;
        }

        // Reset value: declared, or composed from the fields.
        let reset = match r.reset {
            Some(Hex(v)) => {
                let v = u32::try_from(v).map_err(|_| {
                    self.err(
                        reg,
                        None,
                        format!("{path}.reset"),
                        CsrMapErrorKind::ResetTooWide { value: v },
                    )
                })?;
                if v & masks.reserved != 0 {
                    return Err(self.err(
                        reg,
                        None,
                        format!("{path}.reset"),
                        CsrMapErrorKind::ResetOutsideFields {
                            reset: v,
                            bits: v & masks.reserved,
                        },
                    ));
                }
                for (j, (f, raw_f)) in fields.iter().zip(r.fields.iter()).enumerate() {
                    if raw_f.reset.is_some() && f.extract(v) != f.reset {
                        return Err(self.err(
                            reg,
                            Some(&f.name),
                            format!("{path}.fields[{j}].reset"),
                            CsrMapErrorKind::ResetMismatch {
                                from_register: f.extract(v),
                                from_field: f.reset,
                            },
                        ));
                    }
                }
                v
            }
            None => fields.iter().fold(0, |acc, f| f.insert(acc, f.reset)),
        };
        if reset & masks.read_zero() != 0 {
            return Err(self.err(
                reg,
                None,
                format!("{path}.reset"),
                CsrMapErrorKind::ResetOnWriteOnlyBits {
                    bits: reset & masks.read_zero(),
                },
            ));
        }
        for f in &mut fields {
            f.reset = f.extract(reset);
        }
        let delta_lsb = delta_field.as_ref().map_or(0, |(_, lsb)| *lsb);

        Ok(RegisterSpec {
            name: (self.keep)(&r.name),
            offset,
            access,
            reset,
            reset_declared: r.reset.is_some(),
            description: (self.keep)(&r.description),
            source: (self.keep)(&r.source),
            array,
            aliases: r.aliases.iter().map(|a| a.to_string()).collect(),
            fields,
            masks,
            delta_lsb,
        })
    }

    fn build_array(
        &self,
        a: &RawArray<'t>,
        reg: Option<&str>,
        path: RegPath,
    ) -> Result<ArraySpec, CsrMapError> {
        let bad = |what: &str, reason: String| {
            self.err(
                reg,
                None,
                format!("{path}.array.{what}"),
                CsrMapErrorKind::BadArray { reason },
            )
        };
        let count = a.count.0;
        if count == 0 || count > MAX_ARRAY_COUNT {
            return Err(bad(
                "count",
                format!("count {count} must be between 1 and {MAX_ARRAY_COUNT}"),
            ));
        }
        let stride = a.stride.0;
        if !stride.is_multiple_of(4) {
            return Err(self.err(
                reg,
                None,
                format!("{path}.array.stride"),
                CsrMapErrorKind::Misaligned { value: stride },
            ));
        }
        if !(4..=MAX_BLOCK_SIZE).contains(&stride) {
            return Err(bad(
                "stride",
                format!("stride {stride:#x} must be at least 4 and at most the block limit"),
            ));
        }
        let mut skip: Vec<u32> = Vec::with_capacity(a.skip.len());
        for (k, s) in a.skip.iter().enumerate() {
            if s.0 >= count {
                return Err(bad(
                    &format!("skip[{k}]"),
                    format!("skipped index {} is not below count {count}", s.0),
                ));
            }
            // count <= MAX_ARRAY_COUNT, so the index fits.
            let s = s.0 as u32;
            if skip.contains(&s) {
                return Err(bad(
                    &format!("skip[{k}]"),
                    format!("index {s} is skipped twice"),
                ));
            }
            skip.push(s);
        }
        skip.sort_unstable();
        if skip.len() as u64 == count {
            return Err(bad("skip", "every element is skipped".into()));
        }
        Ok(ArraySpec {
            count: count as u32,
            stride,
            skip,
        })
    }

    /// Places every element, rejecting overlaps and elements past the block end.
    fn layout(
        &self,
        registers: &[RegisterSpec],
        size: u64,
    ) -> Result<(Vec<Slot>, Vec<u32>), CsrMapError> {
        let words = (size / 4) as usize;
        // First pass: (register, index, word) of each element in
        // declaration order, and word → that element's position + 1 (so
        // overlaps can be named); the second pass turns positions into
        // slots. The table starts zeroed and only the elements' words are
        // written: a 64 KiB block with a few hundred registers touches a
        // few of its pages.
        let mut elements: Vec<(u32, u32, u32)> = Vec::new();
        let mut by_word = vec![0u32; words];
        let render = |reg: u32, index: u32| -> String {
            match registers.get(reg as usize) {
                Some(r) if r.array.is_some() => format!("{}[{index}]", r.name),
                Some(r) => r.name.to_string(),
                None => String::new(),
            }
        };
        for (ri, r) in registers.iter().enumerate() {
            let path = RegPath(ri);
            let ri = ri as u32;
            let (count, stride) = r.array.as_ref().map_or((1, 0), |a| (a.count, a.stride));
            for i in 0..count {
                if r.array.as_ref().is_some_and(|a| !a.contains(i)) {
                    continue;
                }
                let offset = u64::from(i)
                    .checked_mul(stride)
                    .and_then(|d| d.checked_add(r.offset))
                    .unwrap_or(u64::MAX);
                // The element's name, for errors only.
                let name = || render(ri, i);
                if offset.saturating_add(4) > size {
                    return Err(self.err(
                        Some(&name()),
                        None,
                        format!("{path}.offset"),
                        CsrMapErrorKind::OutsideBlock { offset, size },
                    ));
                }
                let word = (offset / 4) as usize;
                match by_word.get_mut(word) {
                    Some(e) if *e != 0 => {
                        let (or, oi, _) =
                            elements.get(*e as usize - 1).copied().unwrap_or_default();
                        return Err(self.err(
                            Some(&name()),
                            None,
                            format!("{path}.offset"),
                            CsrMapErrorKind::Overlap {
                                other: render(or, oi),
                                offset,
                            },
                        ));
                    }
                    Some(e) => {
                        // At most one element per word: the position fits.
                        elements.push((ri, i, word as u32));
                        *e = elements.len() as u32;
                    }
                    None => {
                        return Err(self.err(
                            Some(&name()),
                            None,
                            format!("{path}.offset"),
                            CsrMapErrorKind::OutsideBlock { offset, size },
                        ));
                    }
                }
            }
        }
        // Second pass: slots in offset order (the words are distinct).
        // Most maps declare their registers in offset order; interleaved
        // arrays in a small block are ordered by a scan of its words, the
        // rest by a sort.
        let mut slots = Vec::with_capacity(elements.len());
        let place =
            |slots: &mut Vec<Slot>, by_word: &mut [u32], (reg, index, word): (u32, u32, u32)| {
                slots.push(Slot {
                    reg,
                    index,
                    offset: word * 4,
                });
                if let Some(e) = by_word.get_mut(word as usize) {
                    *e = slots.len() as u32;
                }
            };
        if elements.is_sorted_by_key(|&(_, _, word)| word) {
            for &e in &elements {
                place(&mut slots, &mut by_word, e);
            }
        } else if words <= 16 * elements.len() {
            let positions: Vec<u32> = by_word.iter().copied().filter(|&p| p != 0).collect();
            for p in positions {
                if let Some(&e) = elements.get(p as usize - 1) {
                    place(&mut slots, &mut by_word, e);
                }
            }
        } else {
            // Plain integers sort fastest: word above, position below.
            let mut keys: Vec<u64> = elements
                .iter()
                .enumerate()
                .map(|(i, &(_, _, word))| (u64::from(word) << 32) | i as u64)
                .collect();
            keys.sort_unstable();
            for k in keys {
                if let Some(&e) = elements.get(k as u32 as usize) {
                    place(&mut slots, &mut by_word, e);
                }
            }
        }
        Ok((slots, by_word))
    }

    fn aliases(
        &self,
        registers: &[RegisterSpec],
        names: &BTreeMap<String, usize>,
    ) -> Result<BTreeMap<(String, Option<u32>), usize>, CsrMapError> {
        let mut out: BTreeMap<(String, Option<u32>), usize> = BTreeMap::new();
        let mut first_use: BTreeMap<(String, Option<u32>), String> = BTreeMap::new();
        for (ri, r) in registers.iter().enumerate() {
            for (k, alias) in r.aliases.iter().enumerate() {
                let path = || format!("registers[{ri}].aliases[{k}]");
                let bad = |reason: &str| {
                    self.err(
                        Some(&r.name),
                        None,
                        path(),
                        CsrMapErrorKind::BadAlias {
                            alias: alias.clone(),
                            reason: reason.to_string(),
                        },
                    )
                };
                if r.array.is_some() {
                    return Err(bad("aliases are only allowed on single registers"));
                }
                let (name, index) =
                    split_index(alias).ok_or_else(|| bad("expected NAME or NAME[i]"))?;
                if !is_upper_snake(name) {
                    return Err(bad("alias names are UPPER_SNAKE_CASE"));
                }
                let key = name.to_string();
                if let Some(target) = names.get(&key).and_then(|&t| registers.get(t)) {
                    let clashes = match (&target.array, index) {
                        (None, _) => true,
                        (Some(a), Some(i)) => a.contains(i),
                        (Some(_), None) => true,
                    };
                    if clashes {
                        return Err(bad("it names an existing register element"));
                    }
                }
                let map_key = (key, index);
                if let Some(first) = first_use.get(&map_key) {
                    return Err(self.err(
                        Some(&r.name),
                        None,
                        path(),
                        CsrMapErrorKind::DuplicateName {
                            name: alias.clone(),
                            first: first.clone(),
                        },
                    ));
                }
                first_use.insert(map_key.clone(), path());
                out.insert(map_key, ri);
            }
        }
        Ok(out)
    }
}
