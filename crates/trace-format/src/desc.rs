//! The fields of a `desc` statement (trace language v2).
//!
//! This module describes a descriptor the way the trace *writes* it: which
//! keys and flags were given. It does not encode the 16 bytes; the executor
//! builds them (with the descriptor crate) and fills in the defaults it
//! documents (ring id, CME command word, …).

use std::fmt;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use crate::addr::AddrExpr;
use crate::number::{Float, to_hex};
use crate::span::Span;

/// Defines a `Copy` enum whose variants are spelled by keywords in traces,
/// with `NAMES` (in declaration order), `name()` and `from_name()`.
macro_rules! keyword_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $kw:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $kw)] $variant, )+
        }

        impl $name {
            /// Every variant, in the order the documentation lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The keywords, in the same order as [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($kw),+];

            /// The keyword as written in a trace.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $kw,)+
                }
            }

            /// The variant spelled `name` (case-sensitive).
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($kw => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

keyword_enum! {
    /// `op=NAME`: the CME operation type of an M2S descriptor (word 1
    /// `optype`). The default is `copy`.
    pub enum CmeOp {
        /// Plain copy.
        Copy = "copy",
        /// CRC-32.
        Crc32 = "crc32",
        /// CRC-32C (Castagnoli).
        Crc32c = "crc32c",
        /// 16-bit checksum.
        Cksum16 = "cksum16",
        /// 32-bit checksum.
        Cksum32 = "cksum32",
        /// CRC-16.
        Crc16 = "crc16",
        /// Adler-32 (the hardware's CKSUM32_ADLER).
        Adler32 = "adler32",
        /// CRC-8.
        Crc8 = "crc8",
    }
}

keyword_enum! {
    /// `cce=NAME`: an operation of the CDMA compute engine (CCE), which
    /// combines the source with the data already at the destination.
    pub enum CceOp {
        /// Element-wise add.
        Add = "add",
        /// Fused multiply-add with `scale=`.
        Fma = "fma",
        /// Element-wise maximum.
        Max = "max",
        /// Element-wise minimum.
        Min = "min",
    }
}

keyword_enum! {
    /// `in_dtype=` / `out_dtype=`: element types of a CCE operation (the
    /// types the `cme` crate models, in the order of their codes).
    pub enum Dtype {
        /// Signed 8-bit integer.
        Int8 = "int8",
        /// Unsigned 8-bit integer.
        Uint8 = "uint8",
        /// Signed 16-bit integer.
        Int16 = "int16",
        /// Unsigned 16-bit integer.
        Uint16 = "uint16",
        /// bfloat16.
        Bf16 = "bf16",
        /// IEEE half precision.
        Fp16 = "fp16",
        /// Signed 32-bit integer.
        Int32 = "int32",
        /// Unsigned 32-bit integer.
        Uint32 = "uint32",
        /// IEEE single precision.
        Fp32 = "fp32",
        /// fp32 with round-to-nearest on output ("fp32r").
        Fp32r = "fp32r",
        /// 8-bit float with a 3-bit exponent.
        Fp8e3 = "fp8e3",
        /// 8-bit float with a 4-bit exponent.
        Fp8e4 = "fp8e4",
        /// 8-bit float with a 5-bit exponent.
        Fp8e5 = "fp8e5",
        /// 4-bit float.
        Fp4 = "fp4",
    }
}

keyword_enum! {
    /// A bare flag word of `desc`: one descriptor bit set to 1 (or, for
    /// `no_copy`, the `copy_src_data` bit cleared).
    pub enum DescFlag {
        /// Word 0: first descriptor of a packet.
        First = "first",
        /// Word 0: last descriptor of a packet.
        Last = "last",
        /// Word 0: interrupt on completion (INT_EN).
        Int = "int",
        /// Word 0: data memory barrier (M2S).
        Dmb = "dmb",
        /// Word 0: strong-order write (S2M).
        Sow = "sow",
        /// Word 0: concatenate.
        Concat = "concat",
        /// Word 0: meta-data descriptor.
        Meta = "meta",
        /// Word 1: write barrier.
        WriteBarrier = "write_barrier",
        /// Word 1: send the CRC result.
        SendCrc = "send_crc",
        /// Word 1: store the CRC result.
        StoreCrc = "store_crc",
        /// Word 1: store the source CRC.
        StoreSourceCrc = "store_source_crc",
        /// Word 1: validate the CRC.
        ValidateCrc = "validate_crc",
        /// Word 1: start from the stored CRC IV (`crc_iv=`).
        UseStoredIv = "use_stored_iv",
        /// Word 1: clear `copy_src_data` (compute a CRC without copying).
        NoCopy = "no_copy",
    }
}

impl DescFlag {
    /// `true` for flags that live in word 1 (the M2S CME command word);
    /// they cannot be combined with `word1=` or `buf2=`.
    pub fn in_word1(self) -> bool {
        matches!(
            self,
            DescFlag::WriteBarrier
                | DescFlag::SendCrc
                | DescFlag::StoreCrc
                | DescFlag::StoreSourceCrc
                | DescFlag::ValidateCrc
                | DescFlag::UseStoredIv
                | DescFlag::NoCopy
        )
    }
}

/// The flags given on a `desc` line. Serialized as the list of set flag
/// names, in canonical order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[allow(clippy::struct_excessive_bools)] // one bool per hardware bit, by design
pub struct DescFlags {
    /// `first`
    pub first: bool,
    /// `last`
    pub last: bool,
    /// `int`
    pub int: bool,
    /// `dmb`
    pub dmb: bool,
    /// `sow`
    pub sow: bool,
    /// `concat`
    pub concat: bool,
    /// `meta`
    pub meta: bool,
    /// `write_barrier`
    pub write_barrier: bool,
    /// `send_crc`
    pub send_crc: bool,
    /// `store_crc`
    pub store_crc: bool,
    /// `store_source_crc`
    pub store_source_crc: bool,
    /// `validate_crc`
    pub validate_crc: bool,
    /// `use_stored_iv`
    pub use_stored_iv: bool,
    /// `no_copy`
    pub no_copy: bool,
}

impl DescFlags {
    fn slot(&mut self, flag: DescFlag) -> &mut bool {
        match flag {
            DescFlag::First => &mut self.first,
            DescFlag::Last => &mut self.last,
            DescFlag::Int => &mut self.int,
            DescFlag::Dmb => &mut self.dmb,
            DescFlag::Sow => &mut self.sow,
            DescFlag::Concat => &mut self.concat,
            DescFlag::Meta => &mut self.meta,
            DescFlag::WriteBarrier => &mut self.write_barrier,
            DescFlag::SendCrc => &mut self.send_crc,
            DescFlag::StoreCrc => &mut self.store_crc,
            DescFlag::StoreSourceCrc => &mut self.store_source_crc,
            DescFlag::ValidateCrc => &mut self.validate_crc,
            DescFlag::UseStoredIv => &mut self.use_stored_iv,
            DescFlag::NoCopy => &mut self.no_copy,
        }
    }

    /// Whether `flag` is set.
    pub fn contains(self, flag: DescFlag) -> bool {
        let mut copy = self;
        *copy.slot(flag)
    }

    /// Sets or clears `flag`.
    pub fn set(&mut self, flag: DescFlag, on: bool) {
        *self.slot(flag) = on;
    }

    /// The set flags, in canonical ([`DescFlag::ALL`]) order.
    pub fn iter(self) -> impl Iterator<Item = DescFlag> {
        DescFlag::ALL
            .iter()
            .copied()
            .filter(move |&f| self.contains(f))
    }

    /// `true` when no flag is set.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

impl FromIterator<DescFlag> for DescFlags {
    fn from_iter<I: IntoIterator<Item = DescFlag>>(iter: I) -> Self {
        let mut flags = DescFlags::default();
        for f in iter {
            flags.set(f, true);
        }
        flags
    }
}

impl Serialize for DescFlags {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for f in self.iter() {
            seq.serialize_element(f.name())?;
        }
        seq.end()
    }
}

/// Which key gave a descriptor's buffer address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddrRole {
    /// `src=`: the address an M2S descriptor reads.
    Src,
    /// `dst=`: the address an S2M descriptor writes.
    Dst,
    /// `addr=`: either, by the queue's direction.
    Any,
}

impl AddrRole {
    /// The key (`src`, `dst`, `addr`).
    pub fn key(self) -> &'static str {
        match self {
            AddrRole::Src => "src",
            AddrRole::Dst => "dst",
            AddrRole::Any => "addr",
        }
    }
}

/// A descriptor's buffer address (bytes 8–15) and the key that gave it. The
/// parser does not check the role against the queue's direction; the
/// executor does (`src=` on an S2M queue is an executor error).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DescAddr {
    /// `src`, `dst` or `addr`.
    pub role: AddrRole,
    /// The address (its span is the value's).
    pub addr: AddrExpr,
}

/// The keys and flags of a `desc` line, as written. `None` means "not
/// given": the executor applies its default. Either `raw` is `Some` and
/// every other field is empty, or `len` and `addr` are `Some`.
///
/// Serialized without the fields that were not given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DescFields {
    /// `len=N`: bytes, 1 ..= [`MAX_DESC_LEN`](crate::MAX_DESC_LEN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u32>,
    /// `src=` / `dst=` / `addr=`: the buffer address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<DescAddr>,
    /// `buf2=ADDR`: S2M second buffer (header split), in word 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buf2: Option<AddrExpr>,
    /// `ring_id=N` (0..=3); default: the id the hardware expects at the slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring_id: Option<u8>,
    /// `op=NAME`; default `copy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<CmeOp>,
    /// `cce=NAME`: a CCE operation (only with no `op=` or `op=copy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cce: Option<CceOp>,
    /// `in_dtype=NAME` (only with `cce=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_dtype: Option<Dtype>,
    /// `out_dtype=NAME` (only with `cce=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_dtype: Option<Dtype>,
    /// `scale=FLOAT` (only with `cce=fma`); within the FP32 range (the
    /// descriptor holds an FP32 scale; the executor rounds to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<Float>,
    /// `crc_iv=N`: cached CRC IV index, 0..=7.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crc_iv: Option<u8>,
    /// `word1=V`: the whole of word 1, overriding the CME command the
    /// executor would build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub word1: Option<u32>,
    /// `raw=HEX`: all 16 bytes in memory order.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_raw")]
    pub raw: Option<[u8; 16]>,
    /// The flags given.
    #[serde(skip_serializing_if = "DescFlags::is_empty")]
    pub flags: DescFlags,
    /// Where each key and flag was given: its name (`op`, `send_crc`, …)
    /// and the span of the argument, in source order. The executor uses it
    /// to point at an argument that does not fit the queue's direction.
    /// Empty for fields built in code; not serialized or printed;
    /// `clear_spans` empties it.
    #[serde(skip)]
    pub given: Vec<(&'static str, Span)>,
}

#[allow(clippy::ref_option)] // the signature serde's `serialize_with` needs
fn ser_raw<S: Serializer>(raw: &Option<[u8; 16]>, s: S) -> Result<S::Ok, S::Error> {
    match raw {
        Some(b) => s.serialize_str(&to_hex(b)),
        None => s.serialize_none(),
    }
}

impl DescFields {
    /// The span of key or flag `name` (`op`, `send_crc`, …) where it was
    /// given, from [`given`](Self::given).
    pub fn span_of(&self, name: &str) -> Option<Span> {
        self.given
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, span)| *span)
    }

    /// The keys and flags given that set word 1 of an **M2S** descriptor
    /// (the CME command): `op=`, `cce=` with `in_dtype=`, `out_dtype=` and
    /// `scale=`, `crc_iv=` and the word-1 flags, as `(name, span)` in
    /// source order. On an S2M queue word 1 is `buf2_ptr_lo` and each of
    /// them is an error.
    pub fn m2s_word1_args(&self) -> impl Iterator<Item = (&'static str, Span)> + '_ {
        self.given.iter().copied().filter(|(n, _)| {
            matches!(
                *n,
                "op" | "cce" | "in_dtype" | "out_dtype" | "scale" | "crc_iv"
            ) || DescFlag::from_name(n).is_some_and(DescFlag::in_word1)
        })
    }

    /// The address expressions of the descriptor: the buffer address, then
    /// `buf2`.
    pub fn addrs(&self) -> impl Iterator<Item = &AddrExpr> {
        self.addr.iter().map(|a| &a.addr).chain(self.buf2.as_ref())
    }

    pub(crate) fn addrs_mut(&mut self) -> impl Iterator<Item = &mut AddrExpr> {
        self.addr
            .iter_mut()
            .map(|a| &mut a.addr)
            .chain(self.buf2.as_mut())
    }
}

impl fmt::Display for DescFields {
    /// The arguments in canonical order, separated by spaces: `raw=`, or
    /// `len=`, the address, the other keys, then the flags.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut arg = |f: &mut fmt::Formatter<'_>, a: fmt::Arguments<'_>| {
            let r = write!(f, "{sep}{a}");
            sep = " ";
            r
        };
        if let Some(raw) = &self.raw {
            arg(f, format_args!("raw={}", to_hex(raw)))?;
        }
        if let Some(len) = self.len {
            arg(f, format_args!("len={len}"))?;
        }
        if let Some(a) = &self.addr {
            arg(f, format_args!("{}={}", a.role.key(), a.addr))?;
        }
        if let Some(b) = &self.buf2 {
            arg(f, format_args!("buf2={b}"))?;
        }
        if let Some(r) = self.ring_id {
            arg(f, format_args!("ring_id={r}"))?;
        }
        if let Some(op) = self.op {
            arg(f, format_args!("op={op}"))?;
        }
        if let Some(c) = self.cce {
            arg(f, format_args!("cce={c}"))?;
        }
        if let Some(t) = self.in_dtype {
            arg(f, format_args!("in_dtype={t}"))?;
        }
        if let Some(t) = self.out_dtype {
            arg(f, format_args!("out_dtype={t}"))?;
        }
        if let Some(s) = self.scale {
            arg(f, format_args!("scale={s}"))?;
        }
        if let Some(i) = self.crc_iv {
            arg(f, format_args!("crc_iv={i}"))?;
        }
        if let Some(w) = self.word1 {
            arg(f, format_args!("word1={w:#010x}"))?;
        }
        for flag in self.flags.iter() {
            arg(f, format_args!("{flag}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords() {
        assert_eq!(CmeOp::NAMES.len(), CmeOp::ALL.len());
        for (v, n) in DescFlag::ALL.iter().zip(DescFlag::NAMES) {
            assert_eq!(v.name(), *n);
            assert_eq!(DescFlag::from_name(n), Some(*v));
        }
        assert_eq!(Dtype::from_name("FP32"), None);
        assert_eq!(CceOp::Fma.to_string(), "fma");
    }

    #[test]
    fn flags() {
        let mut f: DescFlags = [DescFlag::Last, DescFlag::First].into_iter().collect();
        assert!(f.first && f.last && !f.int);
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            [DescFlag::First, DescFlag::Last]
        );
        f.set(DescFlag::First, false);
        assert!(!f.contains(DescFlag::First));
        assert!(DescFlags::default().is_empty());
        assert!(DescFlag::NoCopy.in_word1() && !DescFlag::Sow.in_word1());
    }
}
