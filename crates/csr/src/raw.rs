//! The JSON form of a CSR map (`docs/csr-map-format.md`), deserialized as
//! written and validated into [`crate::CsrMap`] by `map.rs`.
//!
//! Text is borrowed from the JSON where it has no escapes, and lists are
//! `Cow` slices: a map read from a file owns its lists, while the built-in
//! maps are parsed when the crate is built (`build.rs` includes this file
//! and writes each built-in map as a `'static` value of these types), so a
//! process neither parses nor copies them.

use std::borrow::Cow;

use serde::Deserialize;
use soc_map::Hex;

/// A whole map file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMap<'a> {
    #[serde(borrow)]
    pub(crate) block: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) description: Cow<'a, str>,
    pub(crate) size: Hex,
    #[serde(borrow)]
    pub(crate) source: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) registers: Cow<'a, [RawRegister<'a>]>,
}

/// One register (or register array).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegister<'a> {
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    pub(crate) offset: Hex,
    #[serde(borrow)]
    pub(crate) access: Cow<'a, str>,
    pub(crate) reset: Option<Hex>,
    #[serde(borrow)]
    pub(crate) description: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) source: Cow<'a, str>,
    pub(crate) array: Option<RawArray<'a>>,
    #[serde(default, borrow)]
    pub(crate) aliases: Cow<'a, [Cow<'a, str>]>,
    #[serde(default, borrow)]
    pub(crate) fields: Cow<'a, [RawField<'a>]>,
}

/// Element layout of a register array.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArray<'a> {
    pub(crate) count: Hex,
    pub(crate) stride: Hex,
    #[serde(default)]
    pub(crate) skip: Cow<'a, [Hex]>,
}

/// A bit field.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawField<'a> {
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) bits: Cow<'a, str>,
    pub(crate) access: Option<Cow<'a, str>>,
    pub(crate) reset: Option<Hex>,
    #[serde(borrow)]
    pub(crate) description: Cow<'a, str>,
    pub(crate) source: Option<Cow<'a, str>>,
}
