//! `Hex`: a `u64` that reads and writes as a `0x…` string.
//!
//! Used for every address, size and register value in JSON maps, dumps and CLI
//! arguments: engineers read addresses in hex, and JSON viewers lose precision
//! above 2^53. Parsing accepts `0x…` hex, decimal, and `_` digit separators.

use std::fmt;
use std::str::FromStr;

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
    let cleaned: String = text.trim().chars().filter(|c| *c != '_').collect();
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

/// A 32-bit register value shown as `0x` plus exactly eight hex digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hex32(pub u32);

impl fmt::Display for Hex32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08x}", self.0)
    }
}

impl serde::Serialize for Hex32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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
}
