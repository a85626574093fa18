//! Field plumbing shared by the six words: how a typed field reads from and
//! writes to its wire bytes ([`Wire`]), and how it prints and parses in the
//! text form ([`Text`]). Scalars (numbers, enums, addresses) implement
//! [`Scalar`]; groups (header, events, bound registers, flags) list their
//! sub-fields and nest with dots (`events.wait_mode`).

use std::fmt::Display;

use soc_map::{Addr4, Addr4Mode, Addr8, Hex, PartitionOffset, TableOffset, parse_u64};
use zerocopy::little_endian::{I32, U16, U32, U64};

/// One leaf of a word's field tree, as the text form prints it: `path=text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Dotted field path by seed name, e.g. `events.wait_mode`.
    pub path: String,
    /// The value in text-form syntax.
    pub text: String,
    /// True when the value equals the field's default (zero / inert).
    pub is_default: bool,
}

/// Why a field failed to decode or encode, relative to that field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Sub-field path below the field ("" for the field itself).
    pub path: String,
    /// The offending value as shown to the user.
    pub value: String,
    /// Why it is rejected (the valid range or the rule).
    pub reason: String,
}

impl Problem {
    pub(crate) fn new(value: impl Display, reason: impl Into<String>) -> Self {
        Self {
            path: String::new(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The same problem one level up, inside field `name`.
    pub(crate) fn at(mut self, name: &str) -> Self {
        self.path = if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{name}.{}", self.path)
        };
        self
    }
}

/// Why a text-form assignment failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetError {
    /// `name` is not a field of the group; `known` are.
    Unknown {
        name: String,
        known: &'static [&'static str],
    },
    /// The path stops at a group; one of `known` must follow.
    Group { known: &'static [&'static str] },
    /// The path continues below a scalar.
    NotGroup,
    /// The value does not parse; the string says what was expected.
    Value(String),
}

/// A field in the text form: its default, its leaves, and assignment by path.
pub(crate) trait Text: Sized + PartialEq {
    /// The value of an omitted field (zero / inert).
    fn initial() -> Self;
    /// Appends this field's leaves under `path`.
    fn leaves(&self, path: &str, out: &mut Vec<Leaf>);
    /// Assigns `value` to the sub-field `path` ("" for this field).
    fn set(&mut self, path: &str, value: &str) -> Result<(), SetError>;
}

/// A field on the wire: its raw representation inside the zerocopy word.
pub(crate) trait Wire: Sized {
    type Raw;
    /// Decodes and validates the raw value.
    fn from_raw(raw: Self::Raw) -> Result<Self, Problem>;
    /// Encodes; fails only when a value does not fit its bits.
    fn to_raw(&self) -> Result<Self::Raw, Problem>;
}

/// A leaf value of the text form.
pub(crate) trait Scalar: Sized + PartialEq {
    fn zero() -> Self;
    fn show(&self) -> String;
    /// Parses the text form; the error says what was expected.
    fn read(text: &str) -> Result<Self, String>;
}

/// Implements [`Text`] for [`Scalar`] types.
macro_rules! scalar_text {
    ($($t:ty),* $(,)?) => {$(
        impl crate::inst::field::Text for $t {
            fn initial() -> Self {
                <$t as crate::inst::field::Scalar>::zero()
            }
            fn leaves(&self, path: &str, out: &mut Vec<crate::inst::field::Leaf>) {
                out.push(crate::inst::field::Leaf {
                    path: path.to_string(),
                    text: crate::inst::field::Scalar::show(self),
                    is_default: *self == <$t as crate::inst::field::Scalar>::zero(),
                });
            }
            fn set(&mut self, path: &str, value: &str) -> Result<(), crate::inst::field::SetError> {
                if !path.is_empty() {
                    return Err(crate::inst::field::SetError::NotGroup);
                }
                *self = <$t as crate::inst::field::Scalar>::read(value)
                    .map_err(crate::inst::field::SetError::Value)?;
                Ok(())
            }
        }
    )*};
}
pub(crate) use scalar_text;

/// Implements [`Text`] for a group from its sub-fields (each a [`Text`]).
macro_rules! group_text {
    ($t:ty { $($f:ident),* $(,)? }) => {
        impl crate::inst::field::Text for $t {
            fn initial() -> Self {
                Self { $( $f: crate::inst::field::Text::initial(), )* }
            }
            fn leaves(&self, path: &str, out: &mut Vec<crate::inst::field::Leaf>) {
                $( crate::inst::field::Text::leaves(
                    &self.$f,
                    &crate::inst::field::join(path, stringify!($f)),
                    out,
                ); )*
            }
            fn set(&mut self, path: &str, value: &str) -> Result<(), crate::inst::field::SetError> {
                const KNOWN: &[&str] = &[$(stringify!($f)),*];
                if path.is_empty() {
                    return Err(crate::inst::field::SetError::Group { known: KNOWN });
                }
                let (head, rest) = crate::inst::field::split_path(path);
                match head {
                    $( stringify!($f) => crate::inst::field::Text::set(&mut self.$f, rest, value), )*
                    _ => Err(crate::inst::field::SetError::Unknown {
                        name: head.to_string(),
                        known: KNOWN,
                    }),
                }
            }
        }
    };
}
pub(crate) use group_text;

/// `prefix.name`, or `name` at the top.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Splits `a.b.c` into `a` and `b.c`.
pub(crate) fn split_path(path: &str) -> (&str, &str) {
    path.split_once('.').unwrap_or((path, ""))
}

// ---- numbers --------------------------------------------------------------

/// Parses an unsigned number (decimal or 0x hex, `_` separators) up to `max`.
pub(crate) fn read_unsigned(text: &str, max: u64, what: &str) -> Result<u64, String> {
    match parse_u64(text) {
        Ok(v) if v <= max => Ok(v),
        Ok(v) => Err(format!("{what} (0..={max}); {v} does not fit")),
        Err(_) => Err(format!("{what} (decimal or 0x hex)")),
    }
}

fn read_i32(text: &str) -> Result<i32, String> {
    const WHAT: &str = "a signed 32-bit number (decimal or 0x hex, optional -)";
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let v = parse_u64(digits).map_err(|_| WHAT.to_string())?;
    let v = i64::try_from(v).map_err(|_| WHAT.to_string())?;
    let v = if neg { -v } else { v };
    i32::try_from(v).map_err(|_| format!("{WHAT}; {text} does not fit"))
}

macro_rules! unsigned_scalar {
    ($($t:ty => $what:literal),* $(,)?) => {$(
        impl Scalar for $t {
            fn zero() -> Self {
                0
            }
            fn show(&self) -> String {
                self.to_string()
            }
            fn read(text: &str) -> Result<Self, String> {
                read_unsigned(text, u64::from(<$t>::MAX), $what)
                    .map(|v| v as $t)
            }
        }
    )*};
}
unsigned_scalar!(u8 => "an 8-bit number", u16 => "a 16-bit number", u32 => "a 32-bit number");

impl Scalar for i32 {
    fn zero() -> Self {
        0
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn read(text: &str) -> Result<Self, String> {
        read_i32(text)
    }
}

impl Scalar for bool {
    fn zero() -> Self {
        false
    }
    fn show(&self) -> String {
        u8::from(*self).to_string()
    }
    fn read(text: &str) -> Result<Self, String> {
        match text {
            "0" | "false" => Ok(false),
            "1" | "true" => Ok(true),
            _ => Err("a bit: 0 or 1 (or false / true)".to_string()),
        }
    }
}

/// The elements of `[a,b]` (spaces allowed).
fn read_pair<'t>(text: &'t str, what: &str) -> Result<(&'t str, &'t str), String> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("{what} written as [x,y]"))?;
    let mut parts = inner.split(',').map(str::trim);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), None) => Ok((a, b)),
        _ => Err(format!("{what} written as [x,y] (exactly two elements)")),
    }
}

impl Scalar for [i32; 2] {
    fn zero() -> Self {
        [0; 2]
    }
    fn show(&self) -> String {
        format!("[{},{}]", self[0], self[1])
    }
    fn read(text: &str) -> Result<Self, String> {
        const WHAT: &str = "two signed 32-bit steps";
        let (a, b) = read_pair(text, WHAT)?;
        let e = |m: String| format!("{WHAT} written as [x,y]: {m}");
        Ok([read_i32(a).map_err(e)?, read_i32(b).map_err(e)?])
    }
}

impl Scalar for [u16; 2] {
    fn zero() -> Self {
        [0; 2]
    }
    fn show(&self) -> String {
        format!("[{},{}]", self[0], self[1])
    }
    fn read(text: &str) -> Result<Self, String> {
        const WHAT: &str = "two 16-bit counts";
        let (a, b) = read_pair(text, WHAT)?;
        let e = |m: String| format!("{WHAT} written as [x,y]: {m}");
        let one = |t: &str| u16::read(t).map_err(e);
        Ok([one(a)?, one(b)?])
    }
}

scalar_text!(u8, u16, u32, i32, bool, [i32; 2], [u16; 2]);

// ---- wire forms of plain numbers -------------------------------------------

impl Wire for u8 {
    type Raw = u8;
    fn from_raw(raw: u8) -> Result<Self, Problem> {
        Ok(raw)
    }
    fn to_raw(&self) -> Result<u8, Problem> {
        Ok(*self)
    }
}

impl Wire for u16 {
    type Raw = U16;
    fn from_raw(raw: U16) -> Result<Self, Problem> {
        Ok(raw.get())
    }
    fn to_raw(&self) -> Result<U16, Problem> {
        Ok(U16::new(*self))
    }
}

impl Wire for u32 {
    type Raw = U32;
    fn from_raw(raw: U32) -> Result<Self, Problem> {
        Ok(raw.get())
    }
    fn to_raw(&self) -> Result<U32, Problem> {
        Ok(U32::new(*self))
    }
}

impl Wire for i32 {
    type Raw = I32;
    fn from_raw(raw: I32) -> Result<Self, Problem> {
        Ok(raw.get())
    }
    fn to_raw(&self) -> Result<I32, Problem> {
        Ok(I32::new(*self))
    }
}

impl Wire for [i32; 2] {
    type Raw = [I32; 2];
    fn from_raw(raw: [I32; 2]) -> Result<Self, Problem> {
        Ok([raw[0].get(), raw[1].get()])
    }
    fn to_raw(&self) -> Result<[I32; 2], Problem> {
        Ok([I32::new(self[0]), I32::new(self[1])])
    }
}

impl Wire for [u16; 2] {
    type Raw = [U16; 2];
    fn from_raw(raw: [U16; 2]) -> Result<Self, Problem> {
        Ok([raw[0].get(), raw[1].get()])
    }
    fn to_raw(&self) -> Result<[U16; 2], Problem> {
        Ok([U16::new(self[0]), U16::new(self[1])])
    }
}

// ---- ADDR8 ------------------------------------------------------------------

impl Wire for Addr8 {
    type Raw = U64;
    fn from_raw(raw: U64) -> Result<Self, Problem> {
        Addr8::decode(raw.get()).map_err(|e| Problem::new(Hex(raw.get()), e.to_string()))
    }
    fn to_raw(&self) -> Result<U64, Problem> {
        self.encode()
            .map(U64::new)
            .map_err(|e| Problem::new(self.show(), e.to_string()))
    }
}

impl Scalar for Addr8 {
    fn zero() -> Self {
        Addr8::Immediate {
            addr: 0,
            shape_reg: false,
        }
    }

    fn show(&self) -> String {
        match *self {
            Addr8::Immediate { addr, shape_reg } => {
                format!("{}:{addr:#x}", if shape_reg { "imm-shape" } else { "imm" })
            }
            Addr8::Register { reg, shape_reg } => {
                format!("{}:{reg}", if shape_reg { "reg-shape" } else { "reg" })
            }
            Addr8::Table {
                entry,
                offset,
                shape_reg,
            } => {
                let off = match offset {
                    TableOffset::Immediate { value, wide: false } => format!("{value:#x}"),
                    TableOffset::Immediate { value, wide: true } => format!("wide:{value:#x}"),
                    TableOffset::Register { reg, wide: false } => format!("reg:{reg}"),
                    TableOffset::Register { reg, wide: true } => format!("wreg:{reg}"),
                };
                let mode = if shape_reg { "tbl-shape" } else { "tbl" };
                format!("{mode}:{entry}+{off}")
            }
        }
    }

    fn read(text: &str) -> Result<Self, String> {
        const FORMS: &str = "an ADDR8: imm:ADDR, imm-shape:ADDR, reg:N, reg-shape:N, \
             tbl:ENTRY+OFF, tbl:ENTRY+wide:OFF, tbl:ENTRY+reg:N, tbl:ENTRY+wreg:N \
             (tbl-shape: likewise), or the raw 64-bit value";
        let num = |t: &str| parse_u64(t).map_err(|_| FORMS.to_string());
        let small = |t: &str, max: u64| match num(t)? {
            v if v <= max => Ok(v as u8),
            v => Err(format!("{FORMS}; {v} exceeds {max}")),
        };
        let addr = match text.split_once(':') {
            None => {
                return Addr8::decode(num(text)?).map_err(|e| format!("{FORMS}; {e}"));
            }
            Some(("imm", a)) => Addr8::Immediate {
                addr: num(a)?,
                shape_reg: false,
            },
            Some(("imm-shape", a)) => Addr8::Immediate {
                addr: num(a)?,
                shape_reg: true,
            },
            Some(("reg", r)) => Addr8::Register {
                reg: small(r, 63)?,
                shape_reg: false,
            },
            Some(("reg-shape", r)) => Addr8::Register {
                reg: small(r, 63)?,
                shape_reg: true,
            },
            Some((mode @ ("tbl" | "tbl-shape"), rest)) => {
                let (entry, off) = rest.split_once('+').ok_or_else(|| FORMS.to_string())?;
                let offset = if let Some(v) = off.strip_prefix("wide:") {
                    TableOffset::Immediate {
                        value: num(v)?,
                        wide: true,
                    }
                } else if let Some(r) = off.strip_prefix("reg:") {
                    TableOffset::Register {
                        reg: small(r, 63)?,
                        wide: false,
                    }
                } else if let Some(r) = off.strip_prefix("wreg:") {
                    TableOffset::Register {
                        reg: small(r, 63)?,
                        wide: true,
                    }
                } else {
                    TableOffset::Immediate {
                        value: num(off)?,
                        wide: false,
                    }
                };
                Addr8::Table {
                    entry: small(entry, 255)?,
                    offset,
                    shape_reg: mode == "tbl-shape",
                }
            }
            Some(_) => return Err(FORMS.to_string()),
        };
        addr.encode().map_err(|e| format!("{FORMS}; {e}"))?;
        Ok(addr)
    }
}

// ---- ADDR4 ------------------------------------------------------------------

impl Wire for Addr4 {
    type Raw = U32;
    fn from_raw(raw: U32) -> Result<Self, Problem> {
        Addr4::decode(raw.get())
            .map_err(|e| Problem::new(format!("{:#010x}", raw.get()), e.to_string()))
    }
    fn to_raw(&self) -> Result<U32, Problem> {
        self.encode()
            .map(U32::new)
            .map_err(|e| Problem::new(self.show(), e.to_string()))
    }
}

fn show_partition_offset(p: PartitionOffset) -> String {
    let space = if p.psum { "psum" } else { "sbuf" };
    format!("{space}:q{}:{:#x}", p.quadrant, p.offset)
}

impl Scalar for Addr4 {
    fn zero() -> Self {
        Addr4::Immediate {
            offset: PartitionOffset {
                offset: 0,
                quadrant: 0,
                psum: false,
            },
            shape_reg: false,
        }
    }

    fn show(&self) -> String {
        match *self {
            Addr4::Immediate { offset, shape_reg } => format!(
                "{}:{}",
                if shape_reg { "imm-shape" } else { "imm" },
                show_partition_offset(offset)
            ),
            Addr4::IndirectImm { offset } => format!("ind:{}", show_partition_offset(offset)),
            Addr4::Register { reg, mode } => {
                let m = match mode {
                    Addr4Mode::AddrShapeReg => "reg-shape",
                    Addr4Mode::IndirectReg => "ind-reg",
                    _ => "reg",
                };
                format!("{m}:{reg}")
            }
        }
    }

    fn read(text: &str) -> Result<Self, String> {
        const FORMS: &str = "an ADDR4: imm:SPACE:qQ:OFFSET (SPACE sbuf or psum, Q 0..=3), \
             imm-shape:..., ind:..., reg:N, reg-shape:N, ind-reg:N, or the raw 32-bit value";
        let num = |t: &str| parse_u64(t).map_err(|_| FORMS.to_string());
        let po = |t: &str| -> Result<PartitionOffset, String> {
            let mut parts = t.splitn(3, ':');
            let (Some(space), Some(q), Some(off)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(FORMS.to_string());
            };
            let psum = match space {
                "sbuf" => false,
                "psum" => true,
                _ => return Err(FORMS.to_string()),
            };
            let quadrant = match q.strip_prefix('q').map(num) {
                Some(Ok(v)) if v <= 3 => v as u8,
                _ => return Err(FORMS.to_string()),
            };
            let offset =
                u32::try_from(num(off)?).map_err(|_| format!("{FORMS}; offset does not fit"))?;
            Ok(PartitionOffset {
                offset,
                quadrant,
                psum,
            })
        };
        let reg = |t: &str| match num(t)? {
            v if v <= 63 => Ok(v as u8),
            v => Err(format!("{FORMS}; register {v} exceeds 63")),
        };
        let addr = match text.split_once(':') {
            None => {
                let raw = u32::try_from(num(text)?)
                    .map_err(|_| format!("{FORMS}; the value does not fit 32 bits"))?;
                return Addr4::decode(raw).map_err(|e| format!("{FORMS}; {e}"));
            }
            Some(("imm", t)) => Addr4::Immediate {
                offset: po(t)?,
                shape_reg: false,
            },
            Some(("imm-shape", t)) => Addr4::Immediate {
                offset: po(t)?,
                shape_reg: true,
            },
            Some(("ind", t)) => Addr4::IndirectImm { offset: po(t)? },
            Some(("reg", t)) => Addr4::Register {
                reg: reg(t)?,
                mode: Addr4Mode::AddrReg,
            },
            Some(("reg-shape", t)) => Addr4::Register {
                reg: reg(t)?,
                mode: Addr4Mode::AddrShapeReg,
            },
            Some(("ind-reg", t)) => Addr4::Register {
                reg: reg(t)?,
                mode: Addr4Mode::IndirectReg,
            },
            Some(_) => return Err(FORMS.to_string()),
        };
        addr.encode().map_err(|e| format!("{FORMS}; {e}"))?;
        Ok(addr)
    }
}

scalar_text!(Addr8, Addr4);
