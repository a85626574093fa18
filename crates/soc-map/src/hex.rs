//! `Hex`: a `u64` that reads and writes as a `0x…` string.
//!
//! Used for every address, size and register value in JSON maps, dumps and CLI
//! arguments: engineers read addresses in hex, and JSON viewers lose precision
//! above 2^53. Parsing accepts `0x…` hex, decimal, and `_` digit separators.
//!
//! Serialized, every number has one form ([`HEX_PATTERN`], docs/user-guide.md
//! §JSON outputs): `0x` and lower-case digits without leading zeros, as Rust's
//! `{:#x}` prints it (`0x0`, `0x80`, `0x80384e66`) — whatever the width of
//! the field, so that a program can compare the strings.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// The form of every serialized number: `0x`, then lower-case hex digits
/// without leading zeros.
pub const HEX_PATTERN: &str = "^0x(0|[1-9a-f][0-9a-f]*)$";

/// [`HEX_PATTERN`] for values of at most 32 bits.
pub const HEX32_PATTERN: &str = "^0x(0|[1-9a-f][0-9a-f]{0,7})$";

/// `value` in the serialized form ([`HEX_PATTERN`]).
#[must_use]
pub fn hex_string(value: u64) -> String {
    format!("{value:#x}")
}

/// A 64-bit value shown as `0x…` and parsed from hex (`0x` prefix) or decimal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hex(pub u64);

/// Why a string is not a number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseHexError {
    /// The text that failed to parse.
    pub text: String,
}

impl fmt::Display for ParseHexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a number (expected 0x-prefixed hex or decimal)",
            self.text
        )
    }
}

impl std::error::Error for ParseHexError {}

/// Parses `0x…`/`0X…` hex or plain decimal; `_` separators are ignored.
pub fn parse_u64(text: &str) -> Result<u64, ParseHexError> {
    let err = || ParseHexError {
        text: text.to_string(),
    };
    let trimmed = text.trim();
    // Without separators the text is parsed in place (every number of the
    // built-in maps is read at start-up; a copy each cost an allocation).
    let cleaned: Cow<'_, str> = if trimmed.contains('_') {
        trimmed
            .chars()
            .filter(|c| *c != '_')
            .collect::<String>()
            .into()
    } else {
        trimmed.into()
    };
    if cleaned.is_empty() {
        return Err(err());
    }
    let parsed = if let Some(digits) = cleaned
        .strip_prefix("0x")
        .or_else(|| cleaned.strip_prefix("0X"))
    {
        if digits.is_empty() {
            return Err(err());
        }
        u64::from_str_radix(digits, 16)
    } else {
        cleaned.parse::<u64>()
    };
    parsed.map_err(|_| err())
}

impl FromStr for Hex {
    type Err = ParseHexError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_u64(s).map(Hex)
    }
}

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl serde::Serialize for Hex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Hex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Hex;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 0x-prefixed hex string or a non-negative integer")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Hex, E> {
                Ok(Hex(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Hex, E> {
                u64::try_from(v)
                    .map(Hex)
                    .map_err(|_| E::custom(format!("negative value {v}")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Hex, E> {
                parse_u64(v).map(Hex).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Hex {
    fn schema_name() -> Cow<'static, str> {
        "Hex".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A number: `0x` and lower-case hex digits without leading zeros.",
            "type": "string",
            "pattern": HEX_PATTERN,
        })
    }
}

/// A 32-bit register value. Text for people shows it as `0x` plus exactly
/// eight hex digits (registers line up); serialized, it has the one form of
/// every number ([`HEX_PATTERN`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hex32(pub u32);

impl fmt::Display for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0)
    }
}

impl serde::Serialize for Hex32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Hex(u64::from(self.0)))
    }
}

impl schemars::JsonSchema for Hex32 {
    fn schema_name() -> Cow<'static, str> {
        "Hex32".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A 32-bit value: `0x` and one to eight lower-case hex digits without leading zeros.",
            "type": "string",
            "pattern": HEX32_PATTERN,
        })
    }
}

impl<'de> serde::Deserialize<'de> for Hex32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wide = Hex::deserialize(d)?;
        u32::try_from(wide.0)
            .map(Hex32)
            .map_err(|_| serde::de::Error::custom(format!("{wide} does not fit in 32 bits")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hex_decimal_and_separators() {
        assert_eq!(parse_u64("0x10"), Ok(16));
        assert_eq!(parse_u64("0X1f"), Ok(31));
        assert_eq!(parse_u64("4096"), Ok(4096));
        assert_eq!(parse_u64("0x20_0000_0000"), Ok(0x20_0000_0000));
        assert!(parse_u64("0x").is_err());
        assert!(parse_u64("").is_err());
        assert!(parse_u64("0xg").is_err());
        assert!(parse_u64("-1").is_err());
        assert!(parse_u64("0x1_0000_0000_0000_0000").is_err());
    }

    #[test]
    fn json_round_trip() {
        let v: Hex = serde_json::from_str("\"0x2000000000\"").unwrap();
        assert_eq!(v, Hex(0x20_0000_0000));
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"0x2000000000\"");
        let n: Hex = serde_json::from_str("12").unwrap();
        assert_eq!(n, Hex(12));
        assert!(serde_json::from_str::<Hex32>("\"0x100000000\"").is_err());
        assert_eq!(Hex32(0x40).to_string(), "0x00000040");
    }

    #[test]
    fn serialized_numbers_have_one_form() {
        // Text pads a register to eight digits; serialized, nothing is padded.
        assert_eq!(Hex32(0x80).to_string(), "0x00000080");
        assert_eq!(serde_json::to_string(&Hex32(0x80)).unwrap(), "\"0x80\"");
        assert_eq!(serde_json::to_string(&Hex32(0)).unwrap(), "\"0x0\"");
        assert_eq!(serde_json::to_string(&Hex(0)).unwrap(), "\"0x0\"");
        assert_eq!(
            serde_json::to_string(&Hex(u64::MAX)).unwrap(),
            "\"0xffffffffffffffff\""
        );
        assert_eq!(hex_string(0x8038_4E66), "0x80384e66");
        // The serialized form reads back, and so does the padded one.
        for v in [0u32, 0x80, 0xffff_ffff] {
            let s = serde_json::to_value(Hex32(v)).unwrap();
            assert_eq!(serde_json::from_value::<Hex32>(s).unwrap(), Hex32(v));
        }
        assert_eq!(
            serde_json::from_str::<Hex32>("\"0x00000080\"").unwrap(),
            Hex32(0x80)
        );
    }
}
