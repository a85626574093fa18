//! Pretty JSON with every object's keys in sorted order, written straight
//! from `Serialize` into a byte buffer: the bytes `serde_json::to_value`
//! followed by the pretty printer give (serde_json's `Value` keeps its keys
//! in a `BTreeMap`), without building the value. `run --json` writes every
//! device event this way (docs/user-guide.md §Output).
//!
//! A serializer of its own, in serde_json's pretty layout (two spaces a
//! level) and with its escaping and number forms; floats go through
//! serde_json itself. Each object is written in field order; when it
//! closes, its entries (`"key": value`, all at the same depth, so the same
//! bytes wherever they go) are put in key order in place. Whatever the
//! value path would treat differently — duplicate keys, keys with escapes,
//! keys that are not strings or integers, integers past 64 bits — makes
//! [`SortedJson::write`] fall back to that path.

use std::fmt::{self, Write as _};

use serde::Serialize;
use serde::ser::{self, Impossible};

/// One entry of an open object: byte offsets of its key (with quotes) and
/// the end of its value, and the key's first eight bytes as a big-endian
/// number (zero-padded: a key has no NUL byte unescaped), which orders
/// most keys without looking at them again.
#[derive(Clone, Copy)]
struct Entry {
    key_start: usize,
    key_end: usize,
    end: usize,
    prefix: u64,
}

/// Reusable state of the writer (its stacks and scratch space).
#[derive(Default)]
pub(crate) struct SortedJson {
    /// Entries of the open objects, innermost last.
    entries: Vec<Entry>,
    /// One object's entries in key order (indices).
    order: Vec<usize>,
    /// One object's bytes in key order.
    scratch: Vec<u8>,
    /// `collect_str` text.
    text: String,
    /// Values written through the value path.
    fallbacks: usize,
}

impl SortedJson {
    /// Appends `v` to `out` pretty-printed `level` levels deep (two spaces
    /// a level), keys sorted: the bytes of `serde_json::to_value(v)`
    /// pretty-printed at that depth (`Null` when that fails).
    pub(crate) fn write<T: Serialize + ?Sized>(&mut self, out: &mut Vec<u8>, v: &T, level: usize) {
        let start = out.len();
        self.entries.clear();
        let done = v
            .serialize(&mut Writer {
                out: &mut *out,
                st: self,
                level,
            })
            .is_ok();
        if !done {
            self.fallbacks += 1;
            out.truncate(start);
            let value = serde_json::to_value(v).unwrap_or_default();
            crate::run_output::pretty_at(out, &value, level);
        }
    }
}

/// Something the value path writes differently: [`SortedJson::write`]
/// takes that path.
#[derive(Debug)]
struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not the value path's bytes")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Unsupported
    }
}

/// What the serializer returns.
type Res<T = ()> = Result<T, Unsupported>;

/// The serializer: the buffer, the reusable state and the depth of what
/// is being written.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    st: &'a mut SortedJson,
    level: usize,
}

/// Whether serde_json writes `s` as it is: it escapes control bytes, `"`
/// and `\` only. (No early exit: the loop vectorizes.)
fn is_plain(s: &str) -> bool {
    !s.bytes().fold(false, |bad, b| {
        bad | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// `s`, which needs no escape, in quotes.
fn put_plain(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// `s` as a JSON string, escaped as serde_json escapes.
fn put_str(out: &mut Vec<u8>, s: &str) -> Res {
    if is_plain(s) {
        put_plain(out, s);
        return Ok(());
    }
    serde_json::to_writer(out, s).map_err(|_| Unsupported)
}

/// An object's key: an escaped key sorts by its text, not by the bytes
/// written, so it is left to the value path.
fn put_key(out: &mut Vec<u8>, s: &str) -> Res {
    if is_plain(s) {
        put_plain(out, s);
        return Ok(());
    }
    Err(Unsupported)
}

/// Decimal digits, as itoa writes them.
fn put_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn put_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    put_u64(out, n.unsigned_abs());
}

/// A newline and the indentation of `level`.
fn newline(out: &mut Vec<u8>, level: usize) {
    const LINE: &[u8; 65] = b"\n                                                                ";
    let n = 2 * level;
    if n < LINE.len() {
        out.extend_from_slice(&LINE[..=n]);
    } else {
        out.push(b'\n');
        out.resize(out.len() + n, b' ');
    }
}

impl Writer<'_> {
    /// Opens an object or array one level down.
    fn open(&mut self, bracket: u8) -> Compound<'_> {
        self.out.push(bracket);
        let frame = self.st.entries.len();
        Compound {
            level: self.level + 1,
            w: Writer {
                out: &mut *self.out,
                st: &mut *self.st,
                level: self.level + 1,
            },
            frame,
            first: true,
            close: if bracket == b'{' { b'}' } else { b']' },
            wrapped: false,
        }
    }

    /// `{"variant": ` of an externally tagged variant, then its value's
    /// container one level further down.
    fn open_variant(&mut self, variant: &str, bracket: u8) -> Res<Compound<'_>> {
        self.out.push(b'{');
        newline(self.out, self.level + 1);
        put_str(self.out, variant)?;
        self.out.extend_from_slice(b": ");
        self.level += 1;
        let mut c = self.open(bracket);
        c.wrapped = true;
        Ok(c)
    }
}

/// An open object or array.
struct Compound<'a> {
    w: Writer<'a>,
    /// Depth of the elements.
    level: usize,
    /// Where this object's entries start in the entries stack.
    frame: usize,
    first: bool,
    close: u8,
    /// Inside `{"variant": …}`: closes that too.
    wrapped: bool,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        if !self.first {
            self.w.out.push(b',');
        }
        self.first = false;
        newline(self.w.out, self.level);
        self.w.level = self.level;
        v.serialize(&mut self.w)
    }

    /// The start of an entry: separator, indentation, the key's place.
    fn begin_entry(&mut self) {
        if !self.first {
            self.w.out.push(b',');
        }
        self.first = false;
        newline(self.w.out, self.level);
        let at = self.w.out.len();
        self.w.st.entries.push(Entry {
            key_start: at,
            key_end: at,
            end: at,
            prefix: 0,
        });
    }

    /// The key just written ends here.
    fn end_key(&mut self) -> Res {
        let out = &*self.w.out;
        let e = self.w.st.entries.last_mut().ok_or(Unsupported)?;
        e.key_end = out.len();
        let key = out
            .get(e.key_start + 1..e.key_end.saturating_sub(1))
            .ok_or(Unsupported)?;
        e.prefix = key
            .iter()
            .take(8)
            .enumerate()
            .fold(0, |p, (i, &b)| p | u64::from(b) << (56 - 8 * i));
        self.w.out.extend_from_slice(b": ");
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.w.level = self.level;
        v.serialize(&mut self.w)?;
        let at = self.w.out.len();
        self.w.st.entries.last_mut().ok_or(Unsupported)?.end = at;
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Res {
        self.begin_entry();
        put_key(self.w.out, key)?;
        self.end_key()?;
        self.value(v)
    }

    fn close(self) -> Res {
        if self.close == b'}' {
            sort_entries(self.w.out, self.w.st, self.frame)?;
            self.w.st.entries.truncate(self.frame);
        }
        if !self.first {
            newline(self.w.out, self.level - 1);
        }
        self.w.out.push(self.close);
        if self.wrapped {
            newline(self.w.out, self.level - 2);
            self.w.out.push(b'}');
        }
        Ok(())
    }
}

/// Puts the entries of the object that starts at `entries[first]` in key
/// order, in place.
fn sort_entries(buf: &mut [u8], st: &mut SortedJson, first: usize) -> Res {
    let es = &st.entries[first..];
    if es.len() < 2 {
        return Ok(());
    }
    let cmp = |a: &Entry, b: &Entry| {
        a.prefix.cmp(&b.prefix).then_with(|| {
            buf[a.key_start + 1..a.key_end - 1].cmp(&buf[b.key_start + 1..b.key_end - 1])
        })
    };
    // Insertion sort of the indices, by swaps: objects have a few keys.
    st.order.clear();
    st.order.extend(0..es.len());
    let order = &mut st.order[..];
    let mut sorted = true;
    for i in 1..order.len() {
        let mut j = i;
        while j > 0 {
            match cmp(&es[order[j - 1]], &es[order[j]]) {
                std::cmp::Ordering::Less => break,
                std::cmp::Ordering::Equal => return Err(Unsupported),
                std::cmp::Ordering::Greater => {
                    order.swap(j - 1, j);
                    sorted = false;
                    j -= 1;
                }
            }
        }
    }
    if sorted {
        return Ok(());
    }
    let region = es[0].key_start..es[es.len() - 1].end;
    let sep = es[0].end..es[1].key_start;
    st.scratch.clear();
    for (i, &k) in st.order.iter().enumerate() {
        if i > 0 {
            st.scratch.extend_from_slice(&buf[sep.clone()]);
        }
        st.scratch
            .extend_from_slice(&buf[es[k].key_start..es[k].end]);
    }
    if st.scratch.len() != region.len() {
        return Err(Unsupported);
    }
    buf[region].copy_from_slice(&st.scratch);
    Ok(())
}

impl<'a, 'b> ser::Serializer for &'a mut Writer<'b> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Res {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Res {
        put_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Res {
        put_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Res {
        put_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Res {
        put_i64(self.out, v);
        Ok(())
    }
    // The value path holds only integers that fit 64 bits.
    fn serialize_i128(self, v: i128) -> Res {
        match (u64::try_from(v), i64::try_from(v)) {
            (Ok(u), _) => put_u64(self.out, u),
            (_, Ok(i)) => put_i64(self.out, i),
            _ => return Err(Unsupported),
        }
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Res {
        put_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Res {
        put_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Res {
        put_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Res {
        put_u64(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Res {
        put_u64(self.out, u64::try_from(v).map_err(|_| Unsupported)?);
        Ok(())
    }
    // The value path holds an `f32` as the `f64` it converts to.
    fn serialize_f32(self, v: f32) -> Res {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Res {
        serde_json::to_writer(&mut *self.out, &v).map_err(|_| Unsupported)
    }
    fn serialize_char(self, v: char) -> Res {
        put_str(self.out, v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Res {
        put_str(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Res {
        let mut c = self.open(b'[');
        for b in v {
            c.element(b)?;
        }
        c.close()
    }
    fn serialize_none(self) -> Res {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Res {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Res {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Res {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> Res {
        put_str(self.out, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, v: &T) -> Res {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        v: &T,
    ) -> Res {
        let level = self.level;
        self.out.push(b'{');
        newline(self.out, level + 1);
        put_str(self.out, variant)?;
        self.out.extend_from_slice(b": ");
        self.level = level + 1;
        v.serialize(&mut *self)?;
        newline(self.out, level);
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Res<Compound<'a>> {
        Ok(self.open(b'['))
    }
    fn serialize_tuple(self, _len: usize) -> Res<Compound<'a>> {
        Ok(self.open(b'['))
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Res<Compound<'a>> {
        Ok(self.open(b'['))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Res<Compound<'a>> {
        self.open_variant(variant, b'[')
    }
    fn serialize_map(self, _len: Option<usize>) -> Res<Compound<'a>> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Res<Compound<'a>> {
        Ok(self.open(b'{'))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Res<Compound<'a>> {
        self.open_variant(variant, b'{')
    }
    fn collect_str<T: fmt::Display + ?Sized>(self, v: &T) -> Res {
        let mut text = std::mem::take(&mut self.st.text);
        text.clear();
        let r = write!(text, "{v}").map_err(|_| Unsupported);
        let r = r.and_then(|()| put_str(self.out, &text));
        self.st.text = text;
        r
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.element(v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.element(v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.element(v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.element(v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Res {
        self.begin_entry();
        key.serialize(KeyWriter(&mut *self.w.out))?;
        self.end_key()
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.value(v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Res {
        self.field(key, v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Res {
        self.field(key, v)
    }
    fn end(self) -> Res {
        self.close()
    }
}

/// A map key: strings and integers (quoted), as the value path turns
/// them into its keys; anything else is left to that path.
struct KeyWriter<'a>(&'a mut Vec<u8>);

impl KeyWriter<'_> {
    fn quoted(self, f: impl FnOnce(&mut Vec<u8>)) -> Res {
        self.0.push(b'"');
        f(self.0);
        self.0.push(b'"');
        Ok(())
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Impossible<(), Unsupported>;
    type SerializeTuple = Impossible<(), Unsupported>;
    type SerializeTupleStruct = Impossible<(), Unsupported>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Impossible<(), Unsupported>;
    type SerializeStruct = Impossible<(), Unsupported>;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_str(self, v: &str) -> Res {
        put_key(self.0, v)
    }
    fn serialize_i8(self, v: i8) -> Res {
        self.quoted(|o| put_i64(o, v.into()))
    }
    fn serialize_i16(self, v: i16) -> Res {
        self.quoted(|o| put_i64(o, v.into()))
    }
    fn serialize_i32(self, v: i32) -> Res {
        self.quoted(|o| put_i64(o, v.into()))
    }
    fn serialize_i64(self, v: i64) -> Res {
        self.quoted(|o| put_i64(o, v))
    }
    fn serialize_u8(self, v: u8) -> Res {
        self.quoted(|o| put_u64(o, v.into()))
    }
    fn serialize_u16(self, v: u16) -> Res {
        self.quoted(|o| put_u64(o, v.into()))
    }
    fn serialize_u32(self, v: u32) -> Res {
        self.quoted(|o| put_u64(o, v.into()))
    }
    fn serialize_u64(self, v: u64) -> Res {
        self.quoted(|o| put_u64(o, v))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, v: &T) -> Res {
        v.serialize(self)
    }
    fn serialize_bool(self, _v: bool) -> Res {
        Err(Unsupported)
    }
    fn serialize_f32(self, _v: f32) -> Res {
        Err(Unsupported)
    }
    fn serialize_f64(self, _v: f64) -> Res {
        Err(Unsupported)
    }
    fn serialize_char(self, _v: char) -> Res {
        Err(Unsupported)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Res {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Res {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _v: &T) -> Res {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Res {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Res {
        Err(Unsupported)
    }
    fn serialize_unit_variant(self, _n: &'static str, _i: u32, _v: &'static str) -> Res {
        Err(Unsupported)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _n: &'static str,
        _i: u32,
        _variant: &'static str,
        _v: &T,
    ) -> Res {
        Err(Unsupported)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Res<Self::SerializeSeq> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _len: usize) -> Res<Self::SerializeTuple> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _n: &'static str,
        _len: usize,
    ) -> Res<Self::SerializeTupleStruct> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _n: &'static str,
        _i: u32,
        _v: &'static str,
        _len: usize,
    ) -> Res<Self::SerializeTupleVariant> {
        Err(Unsupported)
    }
    fn serialize_map(self, _len: Option<usize>) -> Res<Self::SerializeMap> {
        Err(Unsupported)
    }
    fn serialize_struct(self, _n: &'static str, _len: usize) -> Res<Self::SerializeStruct> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _n: &'static str,
        _i: u32,
        _v: &'static str,
        _len: usize,
    ) -> Res<Self::SerializeStructVariant> {
        Err(Unsupported)
    }
    fn collect_str<T: fmt::Display + ?Sized>(self, v: &T) -> Res {
        put_key(self.0, &v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::ser::{SerializeMap, Serializer};

    use super::*;

    /// What the event output wrote before: the value, then the pretty
    /// printer at that depth.
    fn value_path<T: Serialize + ?Sized>(v: &T, level: usize) -> String {
        let mut out = Vec::new();
        let value = serde_json::to_value(v).unwrap_or_default();
        crate::run_output::pretty_at(&mut out, &value, level);
        String::from_utf8(out).unwrap()
    }

    fn sorted<T: Serialize + ?Sized>(json: &mut SortedJson, v: &T, level: usize) -> String {
        // After something already in the buffer, as events are written.
        let mut out = b"prefix".to_vec();
        json.write(&mut out, v, level);
        assert!(out.starts_with(b"prefix"));
        String::from_utf8(out[6..].to_vec()).unwrap()
    }

    /// The same bytes as the value path, at any depth; whether it was
    /// taken.
    fn same<T: Serialize + ?Sized>(json: &mut SortedJson, v: &T) -> bool {
        let before = json.fallbacks;
        for level in 0..6 {
            assert_eq!(
                sorted(json, v, level),
                value_path(v, level),
                "level {level}"
            );
        }
        json.fallbacks != before
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: u8,
        alpha: Vec<Option<u32>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
    }

    #[derive(Serialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Kind {
        Big {
            z: i64,
            a: f64,
            m: f32,
        },
        Empty {},
        Nested {
            list: Vec<Inner>,
            map: BTreeMap<u32, &'static str>,
        },
    }

    #[derive(Serialize)]
    struct Outer {
        x: u64,
        #[serde(flatten)]
        kind: Kind,
        b: Inner,
        empty: Vec<u8>,
        unit: (),
        text: &'static str,
        wide: u128,
        neg: i128,
    }

    #[derive(Serialize)]
    enum External {
        Newtype(Inner),
        Tuple(u8, &'static str),
        Struct { y: u8, b: u8 },
        Unit,
        NoFields {},
        NoElements(),
    }

    /// Deep enough for indentation past the short newline.
    #[derive(Serialize)]
    struct Deep {
        z: char,
        next: Option<Box<Deep>>,
        a: [External; 2],
        unit: UnitStruct,
    }

    #[derive(Serialize)]
    struct UnitStruct;

    /// `serialize_bytes`.
    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    #[test]
    fn keys_come_out_as_the_value_path_sorts_them() {
        let mut json = SortedJson::default();
        let inner = || Inner {
            zeta: 1,
            alpha: vec![Some(2), None],
            skipped: None,
        };
        for kind in [
            Kind::Big {
                z: -3,
                a: 1.5,
                m: 0.1,
            },
            Kind::Empty {},
            Kind::Nested {
                list: vec![inner(), inner()],
                map: BTreeMap::from([(9, "nine"), (10, "ten\n\"q\""), (100, "")]),
            },
        ] {
            same(
                &mut json,
                &Outer {
                    x: u64::MAX,
                    kind,
                    b: inner(),
                    empty: Vec::new(),
                    unit: (),
                    text: "tab\there é \u{1}",
                    wide: 7,
                    neg: -7,
                },
            );
        }
        same(&mut json, &External::Newtype(inner()));
        same(&mut json, &External::Tuple(1, "x"));
        same(&mut json, &External::Struct { y: 1, b: 2 });
        same(&mut json, &External::Unit);
        same(&mut json, &External::NoFields {});
        same(&mut json, &External::NoElements());
        let mut deep = None;
        for i in 0..40u8 {
            deep = Some(Box::new(Deep {
                z: if i % 2 == 0 { '"' } else { 'é' },
                next: deep,
                a: [External::Newtype(inner()), External::Struct { y: i, b: 0 }],
                unit: UnitStruct,
            }));
        }
        same(&mut json, &deep);
        same(&mut json, &[Bytes(b"\x00\x01\xff"), Bytes(b"")]);
        same(&mut json, &[f64::NAN, f64::INFINITY, -0.0, 1e300]);
        same(&mut json, &BTreeMap::<String, u8>::new());
        // Keys of one another's prefix, and past eight bytes.
        let keys = [
            "a",
            "ab",
            "a b",
            "abcdefgh",
            "abcdefghi",
            "abcdefgha",
            "B",
            "",
        ];
        let m: BTreeMap<&str, u8> = keys.iter().map(|k| (*k, 1)).collect();
        same(&mut json, &m);
        same(&mut json, &Unordered(&keys));
        assert_eq!(json.fallbacks, 0, "all written directly");
    }

    /// A map in the order given, not sorted.
    struct Unordered<'a>(&'a [&'a str]);

    impl Serialize for Unordered<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (i, k) in self.0.iter().enumerate() {
                m.serialize_entry(k, &i)?;
            }
            m.end()
        }
    }

    #[test]
    fn what_the_value_path_does_differently_goes_through_it() {
        let mut json = SortedJson::default();
        // Duplicate keys (the value keeps the last), escaped keys (sorted
        // by their text), integers past 64 bits (an error: `null`), float
        // keys.
        assert!(same(&mut json, &Unordered(&["b", "a", "b"])));
        assert!(same(&mut json, &Unordered(&["a\"", "a", "a\t", "\u{1}"])));
        assert!(same(&mut json, &[u128::MAX]));
        assert!(same(&mut json, &[i128::MIN]));
        assert!(same(&mut json, &BTreeMap::from([(1u128 << 70, 1)])));
        let floats: Vec<(f32, u8)> = vec![(1.5, 1), (0.1, 2)];
        struct FloatKeys(Vec<(f32, u8)>);
        impl Serialize for FloatKeys {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                for (k, v) in &self.0 {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
        assert!(same(&mut json, &FloatKeys(floats)));
        assert!(same(&mut json, &BTreeMap::from([('b', 1), ('a', 2)])));
        assert!(same(&mut json, &BTreeMap::from([(true, 1), (false, 2)])));
    }

    /// No trace writes files here.
    struct ReadOnly(std::path::PathBuf);

    impl soc::exec::TraceFiles for ReadOnly {
        fn read(&mut self, path: &str) -> std::io::Result<Vec<u8>> {
            std::fs::read(self.0.join(path))
        }
        fn write(&mut self, _path: &str, _data: &[u8]) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_event_of_the_sample_traces_is_the_value_paths_bytes() {
        let traces = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
        let mut json = SortedJson::default();
        let mut kinds = std::collections::BTreeSet::new();
        for name in [
            "copy-hbm-hbm.trace",
            "cme-crc.trace",
            "deadlock-semaphore-chain.trace",
            "fault-desc-op.trace",
            "fault-unmapped.trace",
            "fw-faults.trace",
            "fw-custom-op-inline.trace",
            "fw-kv-cache-scatter.trace",
            "fw-rdma-ring-full.trace",
            "host-dmem-batch.trace",
            "queue-control.trace",
            "semaphores.trace",
        ] {
            let path = traces.join(name);
            let source = std::fs::read_to_string(&path).unwrap();
            let (report, _) = host_exec::run_source(
                soc::Device::trn2().unwrap(),
                &source,
                name,
                &mut ReadOnly(traces.clone()),
            )
            .unwrap();
            for e in report.steps.iter().flat_map(|s| &s.events) {
                let v = serde_json::to_value(e).unwrap();
                kinds.insert(format!("{} {}", v["event"], v["fw"]));
                assert_eq!(sorted(&mut json, e, 4), value_path(e, 4), "{name}: {e:?}");
            }
        }
        assert!(kinds.len() > 20, "{kinds:?}");
        assert_eq!(json.fallbacks, 0, "every event written directly");
    }
}
