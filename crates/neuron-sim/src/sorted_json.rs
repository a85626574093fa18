//! Pretty JSON with every object's keys in sorted order, written straight
//! from `Serialize` into a byte buffer: the bytes `serde_json::to_value`
//! followed by the pretty printer give (serde_json's `Value` keeps its keys
//! in a `BTreeMap`), without building the value. `run --json` writes every
//! device event this way (docs/user-guide.md §Output).
//!
//! Each object is written in field order; when it closes, its entries
//! (`"key": value`, all at the same depth, so the same bytes wherever they
//! go) are put in key order in place. Whatever the value path would treat
//! differently — duplicate keys, keys with escapes, integers past 64 bits
//! — makes [`SortedJson::write`] fall back to that path.

use std::cell::RefCell;
use std::io::{self, Write};

use serde::Serialize;

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
    entries: Vec<Entry>,
    /// Per open object, where its entries start in `entries`.
    frames: Vec<usize>,
    order: Vec<usize>,
    scratch: Vec<u8>,
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
        self.frames.clear();
        let buf = RefCell::new(std::mem::take(out));
        let done = {
            let fmt = Sorted {
                state: self,
                buf: &buf,
                level,
                has_value: false,
                in_key: false,
            };
            let mut ser = serde_json::Serializer::with_formatter(Shared(&buf), fmt);
            v.serialize(&mut ser).is_ok()
        };
        *out = buf.into_inner();
        if !done {
            self.fallbacks += 1;
            out.truncate(start);
            let value = serde_json::to_value(v).unwrap_or_default();
            crate::run_output::pretty_at(out, &value, level);
        }
    }
}

/// The output buffer, shared by the serializer (which writes) and the
/// formatter (which reorders).
struct Shared<'a>(&'a RefCell<Vec<u8>>);

impl Write for Shared<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        let mut v = self.0.borrow_mut();
        // Most writes are a few bytes (`"`, `: `, `,`): no `memcpy` call.
        if b.len() <= 2 {
            for &x in b {
                v.push(x);
            }
        } else {
            v.extend_from_slice(b);
        }
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// serde_json's pretty layout from a base depth, sorting each object's
/// entries when it closes.
struct Sorted<'a> {
    state: &'a mut SortedJson,
    buf: &'a RefCell<Vec<u8>>,
    level: usize,
    has_value: bool,
    /// Between `begin_object_key` and `end_object_key`.
    in_key: bool,
}

/// What the value path cannot express the same way: the write stops and
/// [`SortedJson::write`] takes that path.
fn unsupported() -> io::Error {
    io::Error::other("not the value path's bytes")
}

impl Sorted<'_> {
    fn len(&self) -> usize {
        self.buf.borrow().len()
    }

    /// A newline and the indentation of the current level, in one write
    /// when it is short.
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        const LINE: &[u8; 65] =
            b"\n                                                                ";
        let n = 2 * self.level;
        if n < LINE.len() {
            return w.write_all(&LINE[..=n]);
        }
        w.write_all(b"\n")?;
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Puts the entries of the object that starts at `entries[first]` in
    /// key order, in place.
    fn sort_entries(&mut self, first: usize) -> io::Result<()> {
        let st = &mut *self.state;
        let es = &st.entries[first..];
        if es.len() < 2 {
            return Ok(());
        }
        let mut buf = self.buf.borrow_mut();
        let cmp = |a: &Entry, b: &Entry| {
            a.prefix.cmp(&b.prefix).then_with(|| {
                buf[a.key_start + 1..a.key_end - 1].cmp(&buf[b.key_start + 1..b.key_end - 1])
            })
        };
        // Insertion sort of the indices: objects have a few keys.
        st.order.clear();
        let mut sorted = true;
        for i in 0..es.len() {
            let mut j = st.order.len();
            while j > 0 {
                match cmp(&es[st.order[j - 1]], &es[i]) {
                    std::cmp::Ordering::Less => break,
                    std::cmp::Ordering::Equal => return Err(unsupported()),
                    std::cmp::Ordering::Greater => j -= 1,
                }
            }
            sorted &= j == i;
            st.order.insert(j, i);
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
            return Err(unsupported());
        }
        buf[region].copy_from_slice(&st.scratch);
        Ok(())
    }
}

impl serde_json::ser::Formatter for Sorted<'_> {
    // The value path holds an `f32` as the `f64` it converts to.
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        if self.in_key {
            return Err(unsupported());
        }
        self.write_f64(w, f64::from(value))
    }

    // The value path holds only integers that fit 64 bits (keys of 128
    // bits, or of floats, are left to it).
    fn write_i128<W: ?Sized + Write>(&mut self, w: &mut W, value: i128) -> io::Result<()> {
        if self.in_key {
            return Err(unsupported());
        }
        match (i64::try_from(value), u64::try_from(value)) {
            (_, Ok(u)) => self.write_u64(w, u),
            (Ok(i), _) => self.write_i64(w, i),
            _ => Err(unsupported()),
        }
    }

    fn write_u128<W: ?Sized + Write>(&mut self, w: &mut W, value: u128) -> io::Result<()> {
        if self.in_key {
            return Err(unsupported());
        }
        match u64::try_from(value) {
            Ok(u) => self.write_u64(w, u),
            Err(_) => Err(unsupported()),
        }
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.state.frames.push(self.state.entries.len());
        self.level += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let first = self.state.frames.pop().ok_or_else(unsupported)?;
        self.sort_entries(first)?;
        self.state.entries.truncate(first);
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)?;
        let at = self.len();
        self.state.entries.push(Entry {
            key_start: at,
            key_end: at,
            end: at,
            prefix: 0,
        });
        self.in_key = true;
        Ok(())
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.in_key = false;
        let buf = self.buf.borrow();
        let e = self.state.entries.last_mut().ok_or_else(unsupported)?;
        e.key_end = buf.len();
        let key = buf
            .get(e.key_start + 1..e.key_end.saturating_sub(1))
            .ok_or_else(unsupported)?;
        // An escaped key sorts by its text, not its bytes here.
        if key.iter().any(|&b| b == b'\\') {
            return Err(unsupported());
        }
        e.prefix = key
            .iter()
            .take(8)
            .enumerate()
            .fold(0, |p, (i, &b)| p | u64::from(b) << (56 - 8 * i));
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        let at = self.len();
        let e = self.state.entries.last_mut().ok_or_else(unsupported)?;
        e.end = at;
        Ok(())
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
