//! Numbers, decimal floats and hex byte strings.

use std::fmt;

use serde::{Serialize, Serializer};

/// Why a number did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumError {
    /// Not a number at all (bad digit, missing digits, sign…).
    Invalid,
    /// Well-formed but larger than `u64::MAX`.
    Overflow,
}

/// Parses an unsigned number: `0x…`/`0X…` hex, `0b…`/`0B…` binary, or
/// decimal. `_` may separate digits (but a number must start with a digit).
pub(crate) fn parse_u64(text: &str) -> Result<u64, NumError> {
    let (radix, digits) = if let Some(rest) = strip_prefix2(text, "0x") {
        (16, rest)
    } else if let Some(rest) = strip_prefix2(text, "0b") {
        (2, rest)
    } else {
        if !text.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(NumError::Invalid);
        }
        (10, text)
    };
    let mut value: u64 = 0;
    let mut seen_digit = false;
    let mut overflow = false;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c.to_digit(radix).ok_or(NumError::Invalid)?;
        seen_digit = true;
        match value
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if !seen_digit {
        Err(NumError::Invalid)
    } else if overflow {
        Err(NumError::Overflow)
    } else {
        Ok(value)
    }
}

fn strip_prefix2<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        text.get(prefix.len()..)
    } else {
        None
    }
}

/// A finite floating-point value written as a decimal literal (`0.5`, `2`,
/// `-1.25e-3`).
///
/// Equality is bitwise (so `-0.0 != 0.0`), which makes the AST `Eq` and is
/// what a printed-then-parsed value preserves. `Display` prints the shortest
/// decimal text that parses back to the same bits (`2.0`, `1e-7`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Float(pub f64);

impl Float {
    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl PartialEq for Float {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

impl fmt::Display for Float {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `Debug` is the shortest round-trip form and always has a '.' or an
        // exponent (`2.0`, `1e-7`, `1.5e300`); it fits the float grammar.
        write!(f, "{:?}", self.0)
    }
}

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// Why a float did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FloatError {
    /// Not a decimal float literal.
    Invalid,
    /// Well-formed but beyond the `f64` range.
    Overflow,
}

/// Parses a decimal float: `[+-]digits[.digits][(e|E)[+-]digits]`. No `_`,
/// no hex, no `inf`/`nan`; a leading `.` or a trailing `.` is not allowed.
pub(crate) fn parse_float(text: &str) -> Result<f64, FloatError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    if !digits(&mut i) {
        return Err(FloatError::Invalid);
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return Err(FloatError::Invalid);
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return Err(FloatError::Invalid);
        }
    }
    if i != bytes.len() {
        return Err(FloatError::Invalid);
    }
    let v: f64 = text.parse().map_err(|_| FloatError::Invalid)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FloatError::Overflow)
    }
}

/// Why a hex byte string did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HexError {
    /// A character that is neither a hex digit nor `_`, at this char index.
    BadChar { index: usize, ch: char },
    /// An odd number of hex digits.
    OddDigits(usize),
    /// No digits at all.
    Empty,
}

/// Hex digits, `_` allowed anywhere as a separator, two digits per byte in
/// memory order.
pub(crate) fn parse_hex_bytes(text: &str) -> Result<Vec<u8>, HexError> {
    let mut nibbles = Vec::with_capacity(text.len());
    for (index, ch) in text.chars().enumerate() {
        if ch == '_' {
            continue;
        }
        let d = ch.to_digit(16).ok_or(HexError::BadChar { index, ch })?;
        // to_digit(16) < 16, so this always fits.
        nibbles.push(u8::try_from(d).unwrap_or(0));
    }
    if nibbles.is_empty() {
        return Err(HexError::Empty);
    }
    if nibbles.len() % 2 != 0 {
        return Err(HexError::OddDigits(nibbles.len()));
    }
    Ok(nibbles
        .chunks_exact(2)
        .map(|p| (p[0] << 4) | p[1])
        .collect())
}

/// Lower-case hex of `bytes`, no separators.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0"), Ok(0));
        assert_eq!(parse_u64("4096"), Ok(4096));
        assert_eq!(parse_u64("4_096"), Ok(4096));
        assert_eq!(parse_u64("0x20_0000_0000"), Ok(0x20_0000_0000));
        assert_eq!(parse_u64("0XfF"), Ok(0xff));
        assert_eq!(parse_u64("0x_ff"), Ok(0xff));
        assert_eq!(parse_u64("0b1010"), Ok(10));
        assert_eq!(parse_u64("0xffff_ffff_ffff_ffff"), Ok(u64::MAX));
        assert_eq!(
            parse_u64("0x1_0000_0000_0000_0000"),
            Err(NumError::Overflow)
        );
        assert_eq!(parse_u64("18446744073709551616"), Err(NumError::Overflow));
        for bad in [
            "", "0x", "0x_", "+5", "-5", "_5", "5a", "0xg", "0b2", "abc", "1.5",
        ] {
            assert_eq!(parse_u64(bad), Err(NumError::Invalid), "{bad}");
        }
    }

    #[test]
    fn hex_bytes() {
        assert_eq!(
            parse_hex_bytes("deadBEEF"),
            Ok(vec![0xde, 0xad, 0xbe, 0xef])
        );
        assert_eq!(
            parse_hex_bytes("de_ad_be_ef"),
            Ok(vec![0xde, 0xad, 0xbe, 0xef])
        );
        assert_eq!(parse_hex_bytes("abc"), Err(HexError::OddDigits(3)));
        assert_eq!(parse_hex_bytes("__"), Err(HexError::Empty));
        assert_eq!(
            parse_hex_bytes("0x12"),
            Err(HexError::BadChar { index: 1, ch: 'x' })
        );
        assert_eq!(to_hex(&[0, 0xab, 0x10]), "00ab10");
    }

    #[test]
    fn floats() {
        assert_eq!(parse_float("0.5"), Ok(0.5));
        assert_eq!(parse_float("2"), Ok(2.0));
        assert_eq!(parse_float("-1.25e-3"), Ok(-1.25e-3));
        assert_eq!(parse_float("+1E3"), Ok(1000.0));
        assert_eq!(parse_float("1e400"), Err(FloatError::Overflow));
        for bad in [
            "", "-", ".5", "5.", "1e", "1e+", "0x1p3", "inf", "NaN", "1_0", "1.2.3", "--1", "1 ",
        ] {
            assert_eq!(parse_float(bad), Err(FloatError::Invalid), "{bad}");
        }
        for v in [
            0.0,
            -0.0,
            2.0,
            0.1,
            1e-7,
            1.5e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            let text = Float(v).to_string();
            assert_eq!(
                parse_float(&text).map(f64::to_bits),
                Ok(v.to_bits()),
                "{text}"
            );
        }
        assert_ne!(Float(0.0), Float(-0.0));
    }
}
